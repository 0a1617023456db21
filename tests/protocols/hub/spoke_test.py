#!/usr/bin/env python3
"""Spoke mounts, the read path (backend/hub/SPOKES.md), end to end: a hub
`weft serve` and a spoke `weft serve` whose directory /datasets is the hub's
data/datasets, reached through the WAN emulator with latency. Files written
at the hub over REST are read at the spoke over S3 (boto3), SFTP (paramiko),
NFS (libnfs-utils' nfs-cat, which mounts the file's directory) and REST;
listings match; an overwrite at the hub reaches the spoke through
the change feed; writes under the mount reach the hub; with the hub stopped
a strict mount fails at once and an available one serves its cache (and
refuses writes read-only).

    spoke_test.py --weft PATH [unittest arguments]
"""

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import time
import unittest

import botocore.exceptions
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubsite import Site, Spoke, hub_put, rest, run_tests  # noqa: E402

WEFT = None
DATASETS = "data/datasets/"  # the hub directory the spokes mount
FEED_WAIT = 15  # seconds an overwrite may take to reach the spoke


def s3_body(s3, key, **kw):
    return s3.get_object(Bucket="datasets", Key=key, **kw)["Body"].read()


class ReadPathTest(unittest.TestCase):
    """Hub and spoke through the WAN emulator (20 ms RTT)."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        cls.files = {
            "small.txt": b"hello from the hub\n",
            "empty": b"",
            "big.bin": os.urandom(5 << 20) + b"x" * (2 << 20),  # many chunks, some compressible
            "nested/deeper/leaf.csv": b"a,b\n1,2\n" * 5000,
        }
        for path, body in cls.files.items():
            hub_put(cls.hub, DATASETS + path, body)
        cls.link = cls.hub.emulator("--rtt-ms", "20")
        cls.spoke = Spoke(WEFT, cls.hub, "http://" + cls.link.address)
        cls.s3 = cls.spoke.s3()
        cls.transport, cls.sftp = cls.spoke.sftp()

    @classmethod
    def tearDownClass(cls):
        cls.sftp.close()
        cls.transport.close()
        cls.s3.close()
        spoke_code = cls.spoke.stop()
        hub_code = cls.hub.stop()
        assert spoke_code == 0 and hub_code == 0, (spoke_code, hub_code)

    def test_s3_sftp_and_rest_read_the_hub_bytes(self):
        with rest(self.spoke) as s:
            for path, body in self.files.items():
                with self.subTest(path=path):
                    self.assertEqual(s3_body(self.s3, path), body)
                    with self.sftp.open("/data/datasets/" + path, "rb") as f:
                        self.assertEqual(f.read(), body)
                    r = s.get(self.spoke.url + "/api/v1/files/data/datasets/" + path)
                    if r.status_code != 200:  # (r.text of a large binary body takes minutes to decode)
                        self.fail(r.text)
                    self.assertEqual(hashlib.sha256(r.content).digest(), hashlib.sha256(body).digest())
        big = self.files["big.bin"]
        self.assertEqual(s3_body(self.s3, "big.bin", Range="bytes=3000000-3999999"), big[3000000:4000000])
        with self.sftp.open("/data/datasets/big.bin", "rb") as f:
            f.seek(len(big) - 100)
            self.assertEqual(f.read(), big[-100:])

    def test_nfs_reads_the_hub_bytes(self):
        if not shutil.which("nfs-cat"):
            self.skipTest("nfs-cat (libnfs-utils) is not installed")
        port = int(self.spoke.endpoints["nfs"].rsplit(":", 1)[1])
        for path, body in self.files.items():
            with self.subTest(path=path):
                url = "nfs://127.0.0.1/data/datasets/%s?nfsport=%d&mountport=%d&version=3" % (path, port, port)
                r = subprocess.run(["nfs-cat", url], capture_output=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace") + self.spoke.log()[-3000:])
                self.assertEqual(r.stdout, body)

    def tree(self, site):
        """{path: (type, size)} below data/datasets, walked over REST."""
        out = {}
        with rest(site) as s:
            def walk(prefix):
                r = s.get(site.url + "/api/v1/dirs/data/datasets/" + prefix, params={"limit": "1000"})
                self.assertEqual(r.status_code, 200, r.text)
                for e in r.json()["entries"]:
                    path = prefix + e["name"]
                    out[path] = (e["type"], e["size"] if e["type"] != "directory" else None)
                    if e["type"] == "directory":
                        walk(path + "/")
            walk("")
        return out

    def test_listings_match_the_hub(self):
        hub_tree = self.tree(self.hub)
        self.assertEqual(self.tree(self.spoke), hub_tree)
        hub_files = {path: size for path, (kind, size) in hub_tree.items() if kind != "directory"}
        for path, body in self.files.items():
            self.assertEqual(hub_files[path], len(body))
        listed = self.s3.list_objects_v2(Bucket="datasets")["Contents"]
        self.assertEqual({o["Key"]: o["Size"] for o in listed}, hub_files)
        top = self.s3.list_objects_v2(Bucket="datasets", Delimiter="/")
        self.assertEqual([p["Prefix"] for p in top["CommonPrefixes"]], ["nested/"])
        self.assertEqual(sorted(self.sftp.listdir("/data/datasets/nested/deeper")), ["leaf.csv"])
        attrs = {a.filename: a for a in self.sftp.listdir_attr("/data/datasets")}
        self.assertEqual(attrs["big.bin"].st_size, len(self.files["big.bin"]))

    def test_an_overwrite_at_the_hub_reaches_the_spoke(self):
        hub_put(self.hub, DATASETS + "changing.txt", b"version one\n")
        self.assertEqual(s3_body(self.s3, "changing.txt"), b"version one\n")  # now cached
        hub_put(self.hub, DATASETS + "changing.txt", b"version two, longer\n")
        deadline = time.monotonic() + FEED_WAIT
        seen = s3_body(self.s3, "changing.txt")
        while seen != b"version two, longer\n" and time.monotonic() < deadline:
            self.assertEqual(seen, b"version one\n")  # the old version whole, never a mix
            time.sleep(0.05)
            seen = s3_body(self.s3, "changing.txt")
        self.assertEqual(seen, b"version two, longer\n")
        with self.sftp.open("/data/datasets/changing.txt", "rb") as f:
            self.assertEqual(f.read(), b"version two, longer\n")
        # A new file appears in the cached listing too.
        self.s3.list_objects_v2(Bucket="datasets")
        hub_put(self.hub, DATASETS + "appeared.txt", b"new\n")
        deadline = time.monotonic() + FEED_WAIT
        while time.monotonic() < deadline:
            keys = [o["Key"] for o in self.s3.list_objects_v2(Bucket="datasets")["Contents"]]
            if "appeared.txt" in keys:
                break
            time.sleep(0.05)
        self.assertIn("appeared.txt", keys)

    def test_writes_under_the_mount_reach_the_hub(self):
        """Writes are decided by the hub (two_spokes_test.py covers them in
        depth): what S3, SFTP and REST write at the spoke is at the hub when
        they return; the mount point itself stays."""
        self.s3.put_object(Bucket="datasets", Key="new/by-s3.txt", Body=b"written at the spoke\n")
        with self.sftp.open("/data/datasets/new/by-sftp.txt", "wb") as f:
            f.write(b"over sftp\n")
        with rest(self.spoke) as s:
            r = s.put(self.spoke.url + "/api/v1/files/data/datasets/new/by-rest.txt", data=b"over rest\n")
            self.assertIn(r.status_code, (200, 201), r.text)
        with rest(self.hub) as s:
            for name, body in (("by-s3.txt", b"written at the spoke\n"), ("by-sftp.txt", b"over sftp\n"),
                               ("by-rest.txt", b"over rest\n")):
                r = s.get(self.hub.url + "/api/v1/files/data/datasets/new/" + name)
                self.assertEqual((r.status_code, r.content), (200, body))
        for name in ("by-s3.txt", "by-sftp.txt", "by-rest.txt"):
            self.s3.delete_object(Bucket="datasets", Key="new/" + name)  # the emptied directory goes too
        with self.assertRaises(botocore.exceptions.ClientError):
            self.s3.delete_bucket(Bucket="datasets")
        with rest(self.hub) as s:
            r = s.get(self.hub.url + "/api/v1/stat/data/datasets/new")
            self.assertEqual(r.status_code, 404)
        self.assertEqual(s3_body(self.s3, "small.txt"), self.files["small.txt"])


def hub_calls(hub):
    """{call: requests} of the hub protocol so far, from the hub's metrics."""
    text = requests.get("http://%s/metrics" % hub.rest).text
    out = {}
    for line in text.splitlines():
        if line.startswith('weft_hub_requests_total{call="'):
            name, _, value = line[len('weft_hub_requests_total{call="'):].partition('"} ')
            out[name] = float(value)
    return out


class ListingOrderTest(unittest.TestCase):
    """A data loader lists a directory, then reads its files one at a time in
    listing order, through a link with a long round trip: the spoke fetches
    the next files' manifests and chunks ahead, several files per request,
    so most reads wait for no round trip at all."""

    RTT = 0.1
    FILES = 40

    def test_files_read_in_listing_order_are_fetched_ahead(self):
        hub = Site(WEFT)
        spoke = None
        try:
            # Small ones read without a handle (S3 GET of a small sealed
            # object), larger ones through an open handle.
            files = {"seq/%03d.bin" % i: os.urandom((40 if i % 2 else 100) << 10) for i in range(self.FILES)}
            for path, body in files.items():
                hub_put(hub, DATASETS + path, body)
            link = hub.emulator("--rtt-ms", str(self.RTT * 1000))
            spoke = Spoke(WEFT, hub, "http://" + link.address)
            s3 = spoke.s3()
            before = hub_calls(hub)
            started = time.monotonic()
            keys = [o["Key"] for o in s3.list_objects_v2(Bucket="datasets", Prefix="seq/")["Contents"]]
            self.assertEqual(keys, sorted(files))
            for key in keys:
                self.assertEqual(s3_body(s3, key), files[key])
            elapsed = time.monotonic() - started
            calls = {k: v - before.get(k, 0) for k, v in hub_calls(hub).items()}
            # One at a time, each file would cost two round trips (its
            # manifest, then its chunks): 8 s here.
            self.assertLess(elapsed, self.FILES * 2 * self.RTT / 2, (elapsed, calls))
            self.assertGreaterEqual(calls.get("manifests", 0), 1, calls)
            self.assertGreaterEqual(calls.get("dir_chunks", 0), 1, calls)
            # The files read before the order showed: three opens in a row
            # confirm it (a shuffled reader's chance hit starts nothing).
            self.assertLessEqual(calls.get("manifest", 0), 3, calls)
            self.assertLessEqual(calls.get("chunks", 0), 3, calls)
            s3.close()
        finally:
            for site in (spoke, hub):
                if site:
                    self.assertEqual(site.stop(), 0)


class HubDownTest(unittest.TestCase):
    """The hub stops: a strict mount (set up by flags) fails at once with a
    clear error, an available one (by config) serves what it has cached."""

    def test_strict_fails_promptly_and_available_serves_its_cache(self):
        hub = Site(WEFT)
        strict = available = None
        try:
            hub_put(hub, DATASETS + "a.txt", b"cached at the spokes\n")
            hub_put(hub, DATASETS + "b.txt", b"never read before the hub stops\n")
            big = os.urandom(48 << 20)  # past the first readahead window (32 MiB)
            hub_put(hub, DATASETS + "big.bin", big)
            url = "http://" + hub.rest
            strict = Spoke(WEFT, hub, url, mode="strict", flags=True)
            available = Spoke(WEFT, hub, url, mode="available")
            s3_strict, s3_available = strict.s3(), available.s3()
            for s3 in (s3_strict, s3_available):
                self.assertEqual(s3_body(s3, "a.txt"), b"cached at the spokes\n")
            # A file open while the hub stops: what was fetched (the first
            # block and the readahead after it) reads right, the rest fails.
            transport, sftp = strict.sftp()
            f = sftp.open("/data/datasets/big.bin", "rb")
            self.assertEqual(f.read(32768), big[:32768])
            time.sleep(1)  # the readahead lands
            self.assertEqual(hub.stop(), 0)
            hub = None
            f.seek(1 << 20)
            self.assertEqual(f.read(32768), big[1 << 20:(1 << 20) + 32768])
            f.seek(44 << 20)
            with self.assertRaises(OSError):
                f.read(32768)
            f.close()
            sftp.close()
            transport.close()
            for key in ("a.txt", "b.txt"):
                started = time.monotonic()
                with self.assertRaises(botocore.exceptions.ClientError) as e:
                    s3_body(s3_strict, key)
                self.assertEqual(e.exception.response["Error"]["Code"], "ServiceUnavailable")
                self.assertLess(time.monotonic() - started, 3)
            with rest(strict) as s:
                r = s.get(strict.url + "/api/v1/files/data/datasets/a.txt")
                self.assertEqual((r.status_code, r.json()["error"]["code"]), (503, "unavailable"))
            self.assertEqual(s3_body(s3_available, "a.txt"), b"cached at the spokes\n")
            with self.assertRaises(botocore.exceptions.ClientError) as e:
                s3_body(s3_available, "b.txt")
            self.assertEqual(e.exception.response["Error"]["Code"], "ServiceUnavailable")
            # Changes need the hub: strict says it is unavailable, available
            # that the mount is read-only while the hub is away.
            with self.assertRaises(botocore.exceptions.ClientError) as e:
                s3_strict.put_object(Bucket="datasets", Key="new.txt", Body=b"x")
            self.assertEqual(e.exception.response["Error"]["Code"], "ServiceUnavailable")
            with self.assertRaises(botocore.exceptions.ClientError) as e:
                s3_available.put_object(Bucket="datasets", Key="new.txt", Body=b"x")
            self.assertEqual(e.exception.response["Error"]["Code"], "AccessDenied")
            with rest(available) as s:
                r = s.put(available.url + "/api/v1/files/data/datasets/new.txt", data=b"x")
                self.assertEqual((r.status_code, r.json()["error"]["code"]), (403, "read_only"))
            self.assertIn("lost the hub's change feed", strict.log())
            s3_strict.close()
            s3_available.close()
        finally:
            for site in (strict, available, hub):
                if site:
                    self.assertEqual(site.stop(), 0)


class RestartTest(unittest.TestCase):
    """Shadow inode numbers are recorded: a restarted spoke gives every hub
    file the number it had (NFS handles stay valid), and new files new ones."""

    def test_inode_numbers_survive_a_restart(self):
        hub = Site(WEFT)
        spoke = None
        try:
            for path in ("one.txt", "two.txt", "dir/three.txt"):
                hub_put(hub, DATASETS + path, path.encode())
            spoke = Spoke(WEFT, hub, "http://" + hub.rest)

            def inos():
                out = {}
                with rest(spoke) as s:
                    for path in ("", "one.txt", "two.txt", "dir", "dir/three.txt"):
                        r = s.get(spoke.url + "/api/v1/stat/data/datasets/" + path)
                        self.assertEqual(r.status_code, 200, r.text)
                        out[path] = r.json()["ino"]
                return out

            before = inos()
            self.assertEqual(len(set(before.values())), len(before))
            spoke.restart()
            self.assertLess(spoke.stop_seconds, 5)
            self.assertEqual(inos(), before)
            self.assertIn("connected to hub", spoke.log())
        finally:
            for site in (spoke, hub):
                if site:
                    self.assertEqual(site.stop(), 0)


class TlsTest(unittest.TestCase):
    """The hub protocol over HTTPS: the hub's REST listener serves TLS too
    (--rest-tls, its self-signed certificate); a spoke given that
    certificate as its CA reads, lists, writes and follows the change feed
    (wss) through it; spokes trusting another certificate, or the system's,
    are refused with the reason in their log, and no byte is served."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT, tls=True)
        cls.files = {"small.txt": b"over https\n", "big.bin": os.urandom(3 << 20) + b"z" * (1 << 20)}
        for path, body in cls.files.items():
            hub_put(cls.hub, DATASETS + path, body)
        cls.url = "https://" + cls.hub.rest_tls
        cls.spoke = Spoke(WEFT, cls.hub, cls.url, flags=True, ca=cls.hub.ca)
        cls.s3 = cls.spoke.s3()

    @classmethod
    def tearDownClass(cls):
        cls.s3.close()
        spoke_code = cls.spoke.stop()
        hub_code = cls.hub.stop()
        assert spoke_code == 0 and hub_code == 0, (spoke_code, hub_code)

    def hub_metrics_over_tls(self):
        """The hub's metrics over its TLS listener, with curl."""
        r = subprocess.run(["curl", "-sf", "--cacert", self.hub.ca, self.url + "/metrics"], capture_output=True,
                           check=True)
        return r.stdout.decode()

    def test_reads_writes_and_the_feed_over_https(self):
        for path, body in self.files.items():
            self.assertEqual(s3_body(self.s3, path), body)
        listed = self.s3.list_objects_v2(Bucket="datasets")["Contents"]
        self.assertEqual({o["Key"]: o["Size"] for o in listed}, {k: len(v) for k, v in self.files.items()})
        # A write at the spoke is committed at the hub; read back there over
        # its TLS listener with curl.
        written = os.urandom(300 << 10)
        self.s3.put_object(Bucket="datasets", Key="from-spoke.bin", Body=written)
        r = subprocess.run(["curl", "-sf", "--cacert", self.hub.ca, "-u", "%s:%s" % self.hub.admin,
                            self.url + "/api/v1/files/data/datasets/from-spoke.bin"], capture_output=True)
        self.assertEqual((r.returncode, r.stdout), (0, written), r.stderr)
        # An overwrite at the hub reaches the spoke through the wss feed.
        hub_put(self.hub, DATASETS + "small.txt", b"changed at the hub\n")
        deadline = time.monotonic() + FEED_WAIT
        while s3_body(self.s3, "small.txt") != b"changed at the hub\n" and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(s3_body(self.s3, "small.txt"), b"changed at the hub\n")
        with rest(self.spoke) as s:
            mount = s.get(self.spoke.url + "/api/v1/spokes").json()["spokes"][0]
        self.assertEqual((mount["hub"], mount["state"]), (self.url, "connected"), mount)
        # The hub's metrics over its TLS listener: the spoke's one commit.
        commits = [line for line in self.hub_metrics_over_tls().splitlines()
                   if line.startswith('weft_hub_requests_total{call="commit"} ')]
        self.assertEqual([float(line.rpartition(" ")[2]) for line in commits], [1.0])

    def test_a_mount_added_over_rest_or_the_cli_trusts_its_ca_file(self):
        spec = {"local": "/mirror", "hub": self.url, "remote": "data/datasets",
                "credentials": self.hub.credentials, "ca_file": self.hub.ca}
        api = self.spoke.url + "/api/v1/spokes"
        with rest(self.spoke) as s:
            r = s.post(api, json=spec)
            self.assertEqual(r.status_code, 201, r.text)
            r = s.get(self.spoke.url + "/api/v1/files/data/mirror/big.bin")
            self.assertEqual((r.status_code, r.content == self.files["big.bin"]), (200, True))
            self.assertEqual(s.delete(api + "/mirror").status_code, 204)
            # A CA file the spoke cannot read, or one without a certificate.
            r = s.post(api, json=dict(spec, ca_file="/nonexistent/ca.pem"))
            self.assertEqual((r.status_code, r.json()["error"]["code"]), (400, "invalid_json"))
            self.assertIn('field "ca_file": cannot read "/nonexistent/ca.pem"', r.json()["error"]["message"])
            empty = pathlib.Path(self.spoke.tmp) / "empty-ca.pem"
            empty.write_text("")
            r = s.post(api, json=dict(spec, ca_file=str(empty)))
            self.assertEqual((r.status_code, r.json()["error"]["code"]), (400, "invalid_json"))
            self.assertIn('field "hub" or "ca_file"', r.json()["error"]["message"])
        self.assertIn("TLS CA file %s: no usable PEM certificate" % empty, self.spoke.log())
        # The same with the CLI.
        r = subprocess.run([WEFT, "spokes", "add", "/cli", self.url + "/data/datasets", "--hub-credentials",
                            str(self.hub.data / "credentials.json"), "--hub-ca", self.hub.ca,
                            "--data", str(self.spoke.data)], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"mounted /cli: data/datasets of " + self.url.encode(), r.stdout)
        with rest(self.spoke) as s:
            r = s.get(self.spoke.url + "/api/v1/files/data/cli/big.bin")
            self.assertEqual((r.status_code, r.content == self.files["big.bin"]), (200, True))
            self.assertEqual(s.delete(api + "/cli").status_code, 204)

    def refused(self, **kw):
        """A spoke of the hub's https address that must not trust it: what
        its S3 client and its log say."""
        spoke = Spoke(WEFT, self.hub, self.url, **kw)
        try:
            s3 = spoke.s3()
            with self.assertRaises(botocore.exceptions.ClientError) as e:
                s3_body(s3, "small.txt")
            s3.close()
            self.assertEqual(e.exception.response["Error"]["Code"], "ServiceUnavailable")
            deadline = time.monotonic() + 10
            while "not trusted" not in spoke.log() and time.monotonic() < deadline:
                time.sleep(0.05)
            return spoke.log()
        finally:
            self.assertEqual(spoke.stop(), 0)

    def test_a_hub_certificate_that_does_not_verify_is_refused_clearly(self):
        other = pathlib.Path(self.spoke.tmp) / "other-ca.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1",
                        "-keyout", str(other.with_suffix(".key")), "-out", str(other)],
                       check=True, capture_output=True)
        log = self.refused(ca=str(other))
        self.assertIn("the server's certificate is not trusted (self-signed certificate; trusted: %s)" % other, log)
        log = self.refused()  # the system's certificates
        self.assertIn("the server's certificate is not trusted (self-signed certificate; "
                      "trusted: the system's certificates)", log)
        # A CA file that holds no certificate fails the start, named.
        empty = pathlib.Path(self.spoke.tmp) / "empty.pem"
        empty.write_text("")
        with self.assertRaises(AssertionError) as e:
            Spoke(WEFT, self.hub, self.url, ca=str(empty))
        self.assertIn("TLS CA file %s: no usable PEM certificate" % empty, str(e.exception))


def configure(args):
    global WEFT
    WEFT = args.weft


if __name__ == "__main__":
    run_tests(160, configure)
