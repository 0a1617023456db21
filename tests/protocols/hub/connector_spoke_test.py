#!/usr/bin/env python3
"""Spoke mounts over connectors (backend/connectors/README.md), end to end:
a remote that is not a weft hub — moto_server or a second `weft serve` over
S3, a `weft serve` over NFS, Debian's smbd over SMB (the servers and their
clients of tests/backend/connectors/connectors_test.py) — seeded with its own
client, and a spoke `weft serve` whose config mounts it twice: /lake strict
and /cached available, polled every second.

Files are read at the spoke over S3 (boto3), SFTP (paramiko) and NFS
(nfs-cat) and checked by SHA-256; a change made at the remote with its own
client is seen after the poll interval; files written, replaced and removed
through the spoke (S3 and SFTP) are what the remote's client reads; the
mount's figures say it is polled; with the remote stopped the strict mount
fails at once and the available one serves what it cached (and refuses
changes).

    connector_spoke_test.py --server moto|weft-s3|weft-nfs|samba --weft PATH

Exit status 77 (ctest's SKIP_RETURN_CODE) when the server cannot run here.
"""

import argparse
import faulthandler
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import botocore.exceptions
import requests

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "backend" / "connectors"))
import connectors_test as remotes  # noqa: E402  (the connector tests' servers and clients)
from hubsite import Spoke  # noqa: E402
from gateway import close_checked  # noqa: E402  (raises the server's CLOSE failure)

WEFT = None
SERVER = None
INTERVAL_S = 1
SEEN_WAIT = 15      # seconds a change at the remote may take to be seen
OUTAGE_WAIT = 20    # seconds until a stopped remote shows as disconnected
FEED_GRACE_S = 2    # kFeedGrace of gateway/ns/spoke.cpp


def sha(b):
    return hashlib.sha256(b).hexdigest()


def start_remote(tmp):
    """The server, set up and seeded; (server, the spoke entry's source keys)."""
    if SERVER == "moto":
        server = remotes.Moto(tmp)
    elif SERVER == "samba":
        server = remotes.Samba(tmp)
    else:
        server = remotes.WeftSite(WEFT, "nfs" if SERVER == "weft-nfs" else "s3")
    try:
        server.setup()
    except BaseException:
        server.stop()
        raise
    e = server.env
    creds = tmp / "source-credentials.json"
    if e["WEFT_CONN_KIND"] == "s3":
        creds.write_text(json.dumps({"access_key_id": e["WEFT_CONN_S3_KEY"],
                                     "secret_access_key": e["WEFT_CONN_S3_SECRET"]}))
        source = {"connector": "s3", "endpoint": e["WEFT_CONN_S3_URL"], "bucket": e["WEFT_CONN_S3_BUCKET"],
                  "credentials": str(creds)}
        if e.get("WEFT_CONN_S3_PREFIX"):
            source["prefix"] = e["WEFT_CONN_S3_PREFIX"]
    elif e["WEFT_CONN_KIND"] == "nfs":
        source = {"connector": "nfs", "url": e["WEFT_CONN_NFS_URL"]}
    else:
        creds.write_text(json.dumps({"user": e["WEFT_CONN_SMB_USER"], "password": e["WEFT_CONN_SMB_PASSWORD"]}))
        source = {"connector": "smb", "server": e["WEFT_CONN_SMB_SERVER"], "share": e["WEFT_CONN_SMB_SHARE"],
                  "credentials": str(creds)}
    return server, source


class ConnectorSpoke(Spoke):
    """A spoke `weft serve` mounting the source at /lake (strict) and
    /cached (available)."""

    def __init__(self, source):
        self.protocols = ("rest", "s3", "sftp", "nfs")
        mounts = [dict(source, local="/lake", mode="strict", interval_s=INTERVAL_S),
                  dict(source, local="/cached", mode="available", interval_s=INTERVAL_S)]
        super(Spoke, self).__init__(WEFT, protocols=self.protocols, prefix="weft-cspoke-",
                                    config={"spokes": mounts})


class ConnectorSpokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="weft-cspoke-remote-"))
        cls.server, source = start_remote(cls.tmp)
        cls.remote = cls.server.client
        cls.spoke = None
        try:
            cls.files = {
                "tree/small.txt": b"hello from the remote\n",
                "tree/big.bin": os.urandom((6 << 20) + 12345),  # several 1 MiB ranges, the last short
                "tree/sub/inner.csv": b"a,b\n1,2\n" * 4000,
                "top.txt": b"at the root\n",
            }
            for path, body in cls.files.items():
                cls.remote.put(path, body)
            cls.spoke = ConnectorSpoke(source)
            cls.s3 = cls.spoke.s3()
            cls.transport, cls.sftp = cls.spoke.sftp()
            cls.http = requests.Session()
            cls.http.auth = cls.spoke.admin
        except BaseException:
            cls.stop_sites()
            raise

    @classmethod
    def stop_sites(cls):
        codes = []
        if cls.spoke:
            codes.append(("spoke", cls.spoke.stop()))
        if cls.server:
            codes.append(("remote", cls.server.stop()))
            cls.server = None
        shutil.rmtree(cls.tmp, ignore_errors=True)
        return codes

    @classmethod
    def tearDownClass(cls):
        cls.sftp.close()
        cls.transport.close()
        cls.s3.close()
        cls.http.close()
        codes = cls.stop_sites()
        assert all(code == 0 for _, code in codes), (codes, cls.spoke.log()[-3000:])

    def get(self, key, bucket="lake", **kw):
        return self.s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()

    def mount(self, local):
        r = self.http.get(self.spoke.url + "/api/v1/spokes")
        self.assertEqual(r.status_code, 200, r.text)
        return next(m for m in r.json()["spokes"] if m["local"] == local)

    def eventually(self, what, check, wait=SEEN_WAIT):
        deadline = time.monotonic() + wait
        while True:
            try:
                check()
                return
            except (AssertionError, botocore.exceptions.ClientError, OSError):
                if time.monotonic() > deadline:
                    print(self.spoke.log()[-4000:])
                    raise AssertionError("not within %d s: %s" % (wait, what))
            time.sleep(0.2)

    def test_1_reads_over_s3_sftp_and_nfs_are_the_remote_bytes(self):
        for path, body in self.files.items():
            with self.subTest(path=path):
                self.assertEqual(sha(self.get(path)), sha(body))
                self.assertEqual(sha(self.get(path, bucket="cached")), sha(body))
                with self.sftp.open("/data/lake/" + path, "rb") as f:
                    self.assertEqual(sha(f.read()), sha(body))
        big = self.files["tree/big.bin"]
        self.assertEqual(self.get("tree/big.bin", Range="bytes=1048000-3100000"), big[1048000:3100001])
        with self.sftp.open("/data/lake/tree/big.bin", "rb") as f:
            f.seek(len(big) - 1000)
            self.assertEqual(f.read(), big[-1000:])
        if shutil.which("nfs-cat"):
            port = int(self.spoke.endpoints["nfs"].rsplit(":", 1)[1])
            for path in ("tree/big.bin", "tree/sub/inner.csv"):
                url = "nfs://127.0.0.1/data/lake/%s?nfsport=%d&mountport=%d&version=3" % (path, port, port)
                r = subprocess.run(["nfs-cat", url], capture_output=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
                self.assertEqual(sha(r.stdout), sha(self.files[path]))
        else:
            print("nfs-cat (libnfs-utils) is not installed: NFS reads not checked")
        # Listings: keys and sizes as at the remote.
        listed = self.s3.list_objects_v2(Bucket="lake", Prefix="tree/")["Contents"]
        self.assertEqual({o["Key"]: o["Size"] for o in listed},
                         {p: len(b) for p, b in self.files.items() if p.startswith("tree/")})
        top = self.s3.list_objects_v2(Bucket="lake", Delimiter="/")
        self.assertEqual([p["Prefix"] for p in top["CommonPrefixes"]], ["tree/"])
        self.assertEqual(sorted(self.sftp.listdir("/data/lake/tree")), ["big.bin", "small.txt", "sub"])
        # A second read is the cache's: no more bytes from the source.
        before = self.mount("/lake")["transfer"]["chunk_logical_bytes"]
        self.assertEqual(sha(self.get("tree/big.bin")), sha(big))
        self.assertEqual(self.mount("/lake")["transfer"]["chunk_logical_bytes"], before)

    def test_2_a_change_at_the_remote_is_seen_after_the_poll_interval(self):
        self.assertEqual(self.get("tree/small.txt"), self.files["tree/small.txt"])  # cached
        self.remote.put("tree/small.txt", b"changed at the remote, longer than before\n")
        self.remote.put("tree/same-size.txt", b"AAAA")
        self.assertEqual(self.get("tree/same-size.txt"), b"AAAA")
        self.remote.put("tree/same-size.txt", b"BBBB")  # same size: the version token tells
        self.remote.put("tree/created.txt", b"new at the remote\n")
        started = time.monotonic()

        def seen():
            self.assertEqual(self.get("tree/small.txt"), b"changed at the remote, longer than before\n")
            self.assertEqual(self.get("tree/same-size.txt"), b"BBBB")
            self.assertEqual(self.get("tree/created.txt"), b"new at the remote\n")
            keys = [o["Key"] for o in self.s3.list_objects_v2(Bucket="lake", Prefix="tree/")["Contents"]]
            self.assertIn("tree/created.txt", keys)
        self.eventually("the remote's changes", seen)
        print("changes at the remote seen after %.1f s (poll interval %d s)" % (time.monotonic() - started, INTERVAL_S))
        # An open stats the file: an SFTP open sees a change before any poll.
        self.remote.put("tree/small.txt", b"opened afresh\n")
        with self.sftp.open("/data/lake/tree/small.txt", "rb") as f:
            self.assertEqual(f.read(), b"opened afresh\n")
        self.remote.delete("tree/created.txt")
        self.eventually("a removal at the remote", lambda: self.assertNotIn(
            "tree/created.txt", [o["Key"] for o in self.s3.list_objects_v2(Bucket="lake", Prefix="tree/")["Contents"]]))

    def test_3_writes_through_the_spoke_reach_the_remote(self):
        written = os.urandom((3 << 20) + 77)
        self.s3.put_object(Bucket="lake", Key="tree/written.bin", Body=written)
        self.assertEqual(sha(self.remote.get("tree/written.bin")), sha(written))
        self.assertEqual(sha(self.get("tree/written.bin")), sha(written))
        with self.sftp.open("/data/lake/tree/sftp.txt", "wb") as f:
            f.write(b"written over SFTP\n")
        self.assertEqual(self.remote.get("tree/sftp.txt"), b"written over SFTP\n")
        # Replaced through the spoke: the remote has the new bytes.
        self.s3.put_object(Bucket="lake", Key="tree/written.bin", Body=b"replaced")
        self.assertEqual(self.remote.get("tree/written.bin"), b"replaced")
        self.assertEqual(self.get("tree/written.bin"), b"replaced")
        # Removed through the spoke.
        self.s3.delete_object(Bucket="lake", Key="tree/sftp.txt")
        self.assertIsNone(self.remote.get("tree/sftp.txt"))
        with self.assertRaises(botocore.exceptions.ClientError) as e:
            self.get("tree/sftp.txt")
        self.assertEqual(e.exception.response["Error"]["Code"], "NoSuchKey")
        # A write that lost to one at the remote is kept under a conflict name.
        self.remote.put("tree/raced.txt", b"first")
        f = self.sftp.open("/data/lake/tree/raced.txt", "r+b")
        f.write(b"spoke")
        f.flush()  # written at the spoke, from the version it opened
        self.remote.put("tree/raced.txt", b"changed at the remote meanwhile")
        with self.assertRaises(OSError):
            close_checked(f)
        self.assertEqual(self.remote.get("tree/raced.txt"), b"changed at the remote meanwhile")

        def kept():
            names = self.sftp.listdir("/data/lake/tree")
            conflicts = [n for n in names if n.startswith("raced.txt.conflict-")]
            self.assertEqual(len(conflicts), 1, names)
            self.assertEqual(self.remote.get("tree/" + conflicts[0]), b"spoke")
        self.eventually("the conflict's copy", kept)

    def test_4_figures_say_the_mount_is_polled(self):
        m = self.mount("/lake")
        self.assertEqual(m["connector"], SERVER_KIND[SERVER])
        self.assertEqual(m["state"], "connected")
        self.assertEqual(m["mode"], "strict")
        self.assertEqual(m["feed"]["poll_interval_ms"], INTERVAL_S * 1000)
        self.assertIn("polled", m["feed"]["consistency"])
        self.assertGreater(m["feed"]["cursor"], 0)  # polls made
        self.assertGreater(m["transfer"]["requests"], 0)
        self.assertGreater(m["transfer"]["chunk_logical_bytes"], 6 << 20)
        self.assertEqual(self.mount("/cached")["mode"], "available")
        metrics = self.http.get(self.spoke.url + "/metrics").text
        self.assertIn('weft_spoke_poll_interval_seconds{mount="/lake"} %d' % INTERVAL_S, metrics)

    def test_5_remote_stopped_strict_fails_available_serves_its_cache(self):
        # Cached at both mounts first.
        for bucket in ("lake", "cached"):
            self.assertEqual(self.get("top.txt", bucket=bucket), self.files["top.txt"])
        codes = self.stop_remote()
        self.assertEqual(codes, 0)
        self.eventually("the mounts disconnected", lambda: self.assertEqual(
            [self.mount(m)["state"] for m in ("/lake", "/cached")], ["disconnected", "disconnected"]),
            wait=OUTAGE_WAIT)
        # A strict mount lets a call wait out FEED_GRACE_S after the loss (a
        # cut connection comes back at once); past it, calls fail at once.
        time.sleep(FEED_GRACE_S)
        started = time.monotonic()
        with self.assertRaises(botocore.exceptions.ClientError) as e:
            self.get("top.txt")
        self.assertEqual(e.exception.response["Error"]["Code"], "ServiceUnavailable")
        self.assertLess(time.monotonic() - started, 1)
        r = self.http.get(self.spoke.url + "/api/v1/files/data/lake/top.txt")
        self.assertEqual((r.status_code, r.json()["error"]["code"]), (503, "unavailable"))
        # Available: what was cached reads, what was not fails, changes are refused.
        self.assertEqual(self.get("top.txt", bucket="cached"), self.files["top.txt"])
        with self.assertRaises(botocore.exceptions.ClientError) as e:
            self.get("tree/same-size.txt", bucket="cached")  # never read there
        self.assertEqual(e.exception.response["Error"]["Code"], "ServiceUnavailable")
        with self.assertRaises(botocore.exceptions.ClientError) as e:
            self.s3.put_object(Bucket="cached", Key="new.txt", Body=b"x")
        self.assertEqual(e.exception.response["Error"]["Code"], "AccessDenied")
        with self.assertRaises(botocore.exceptions.ClientError) as e:
            self.s3.put_object(Bucket="lake", Key="new.txt", Body=b"x")
        self.assertEqual(e.exception.response["Error"]["Code"], "ServiceUnavailable")
        self.assertIn("lost the hub's change feed", self.spoke.log())

    @classmethod
    def stop_remote(cls):
        code = cls.server.stop()
        cls.server = None
        return code


SERVER_KIND = {"moto": "s3", "weft-s3": "s3", "weft-nfs": "nfs", "samba": "smb"}


def main():
    global WEFT, SERVER
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--server", required=True, choices=sorted(SERVER_KIND))
    args, rest_args = parser.parse_known_args()
    WEFT, SERVER = args.weft, args.server
    # A hang shows where it is before ctest's timeout kills the run.
    faulthandler.dump_traceback_later(280, exit=True)
    unittest.main(argv=[sys.argv[0]] + rest_args)


if __name__ == "__main__":
    main()
