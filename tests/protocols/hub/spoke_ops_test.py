#!/usr/bin/env python3
"""Spoke mounts, operations and governance (backend/hub/SPOKES.md,
"Configuration, REST, metrics"), end to end with a hub `weft serve`, spokes
and the WAN emulator between them:

- REST /api/v1/spokes: a mount added at run time serves S3 reads, its
  figures move as they should (bytes fetched, wire <= logical for
  compressible data, a second read and a duplicate file are cache hits and
  cross no wire), the weft_spoke_* metrics say the same, and a removed
  mount's names fail cleanly; bad requests get protocol-correct errors; the
  `weft spokes` commands drive the same API.
- The link down for 30 s while the hub changes files: once it is back, the
  spoke sees every change.
- Connections cut mid-chunk during large reads: with the hub still there a
  read completes with the right bytes (the cut batches' missing parts asked
  for again); a link that stays down fails the read cleanly; never wrong
  bytes. Lookups and listings through a link cut again and again succeed.
- A warm job at a spoke fetches a directory into the cache: the figures
  count the bytes, and reading the files afterwards is all cache hits.
- Residency: a spoke in another region is refused a restricted path over S3
  and REST, its listings leave it out, and the hub audits the refusals.

    spoke_ops_test.py --weft PATH [unittest arguments]
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import unittest

import botocore.exceptions
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubsite import Site, Spoke, hub_put, rest, run_tests  # noqa: E402

WEFT = None
FEED_WAIT = 15  # seconds a change may take to reach a spoke
OUTAGE = 30     # seconds the link is down in OutageTest
SPOKE = ("rest", "s3")  # what a spoke serves here


def s3_body(s3, bucket, key):
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def s3_error(test, s3, bucket, key):
    with test.assertRaises(botocore.exceptions.ClientError) as e:
        s3_body(s3, bucket, key)
    return e.exception.response["Error"]["Code"]


def hub_last_change(hub):
    with rest(hub) as s:
        r = s.get(hub.url + "/hub/v1/info", headers={"Weft-Region": "us-east-1"})
        assert r.status_code == 200, r.text
        return r.json()["last_change"]


def spokes(site):
    with rest(site) as s:
        r = s.get(site.url + "/api/v1/spokes")
        assert r.status_code == 200, r.text
        return r.json()


def mount(site, local):
    [m] = [m for m in spokes(site)["spokes"] if m["local"] == local]
    return m


def caught_up(test, site, hub, local):
    """Waits until the mount's feed is connected and has seen the hub's
    whole change log; returns its figures."""
    last = hub_last_change(hub)
    deadline = time.monotonic() + FEED_WAIT
    while True:
        m = mount(site, local)
        if m["state"] == "connected" and m["feed"]["cursor"] >= last:
            return m
        if time.monotonic() > deadline:
            test.fail("the mount did not catch up with the hub's change log %d: %s" % (last, m))
        time.sleep(0.1)


def metric(text, series):
    """The value of one sample of a Prometheus exposition, or None."""
    m = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def sha(b):
    return hashlib.sha256(b).hexdigest()


def csv_rows(n):
    """Compressible text whose chunks are all different."""
    return b"".join(b"%09d,sample-%04d,label-%d,0.%06d\n" % (i, i % 1000, i % 7, (i * 7919) % 1000000)
                    for i in range(n))


class RuntimeMountTest(unittest.TestCase):
    """A spoke with no configured mounts; mounts come and go over REST."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        cls.files = {"compressible.csv": csv_rows(120000),  # about 4.5 MB
                     "random.bin": os.urandom(3 << 20),
                     "small.txt": b"small\n"}
        for name, body in cls.files.items():
            hub_put(cls.hub, "data/ops/" + name, body)
        cls.link = cls.hub.emulator("--rtt-ms", "10")
        cls.hub_url = "http://" + cls.link.address
        cls.spoke = Spoke(WEFT, cls.hub, cls.hub_url, local=None, protocols=SPOKE,
                          spoke_cache={"ram_bytes": 64 << 20, "ssd_bytes": 1 << 30})
        cls.s3 = cls.spoke.s3()
        cls.creds = json.loads((cls.hub.data / "credentials.json").read_text())

    @classmethod
    def tearDownClass(cls):
        cls.s3.close()
        spoke_code = cls.spoke.stop()
        hub_code = cls.hub.stop()
        assert spoke_code == 0 and hub_code == 0, (spoke_code, hub_code)

    def add(self, status=201, **body):
        with rest(self.spoke) as s:
            r = s.post(self.spoke.url + "/api/v1/spokes", json=body)
        self.assertEqual(r.status_code, status, r.text)
        return r.json()

    def refused(self, status, code, **body):
        self.assertEqual(self.add(status, **body)["error"]["code"], code)

    def test_add_read_figures_metrics_remove(self):
        self.assertEqual(spokes(self.spoke)["spokes"], [])
        added = self.add(local="/mirror", hub=self.hub_url, remote="data/ops", credentials=self.creds)
        self.assertEqual((added["local"], added["remote"], added["mode"], added["state"]),
                         ("/mirror", "data/ops", "strict", "connected"))
        self.assertEqual(added["user"], self.creds["user"])
        self.assertNotIn(self.creds["password"], json.dumps(added))
        self.assertEqual(added["transfer"]["chunk_wire_bytes"], 0)

        # A cold read: fetched, compressed on the wire, every chunk a miss.
        text = self.files["compressible.csv"]
        self.assertEqual(s3_body(self.s3, "mirror", "compressible.csv"), text)
        cold = mount(self.spoke, "/mirror")
        self.assertEqual(cold["transfer"]["chunk_logical_bytes"], len(text))
        self.assertLess(cold["transfer"]["chunk_wire_bytes"], 0.7 * len(text))
        self.assertEqual(cold["transfer"]["compression_saved_bytes"],
                         len(text) - cold["transfer"]["chunk_wire_bytes"])
        self.assertEqual(cold["cache"]["miss_bytes"], len(text))
        self.assertEqual(cold["cache"]["hits"], 0)
        with rest(self.hub) as s:
            chunks = s.get(self.hub.url + "/api/v1/chunks/data/ops/compressible.csv").json()["chunks"]
        self.assertEqual(cold["cache"]["misses"], len(chunks))

        # The same bytes again: from the cache, nothing on the wire.
        self.assertEqual(s3_body(self.s3, "mirror", "compressible.csv"), text)
        warm = mount(self.spoke, "/mirror")
        self.assertEqual(warm["transfer"]["chunk_wire_bytes"], cold["transfer"]["chunk_wire_bytes"])
        self.assertEqual(warm["cache"]["misses"], cold["cache"]["misses"])
        self.assertEqual(warm["cache"]["hits"] - cold["cache"]["hits"], len(chunks))
        self.assertEqual(warm["cache"]["hit_bytes"], len(text))

        # Another file of the same content at the hub: its chunks are never fetched.
        hub_put(self.hub, "data/ops/copy.csv", text)
        deadline = time.monotonic() + FEED_WAIT
        while True:
            try:
                self.assertEqual(s3_body(self.s3, "mirror", "copy.csv"), text)
                break
            except botocore.exceptions.ClientError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        dedup = mount(self.spoke, "/mirror")
        self.assertEqual(dedup["transfer"]["chunk_wire_bytes"], cold["transfer"]["chunk_wire_bytes"])
        self.assertEqual(dedup["cache"]["hit_bytes"] - warm["cache"]["hit_bytes"], len(text))

        # Incompressible data crosses as it is (plus frame headers).
        noise = self.files["random.bin"]
        self.assertEqual(sha(s3_body(self.s3, "mirror", "random.bin")), sha(noise))
        raw = mount(self.spoke, "/mirror")
        wire = raw["transfer"]["chunk_wire_bytes"] - dedup["transfer"]["chunk_wire_bytes"]
        logical = raw["transfer"]["chunk_logical_bytes"] - dedup["transfer"]["chunk_logical_bytes"]
        self.assertEqual(logical, len(noise))
        self.assertGreaterEqual(wire, logical)
        self.assertLess(wire, logical * 1.01)

        # The shared cache holds it all; the feed is caught up with the hub.
        listed = spokes(self.spoke)
        self.assertGreaterEqual(listed["cache"]["ram"]["bytes"], len(text) + len(noise))
        self.assertEqual(listed["cache"]["ram"]["budget"], 64 << 20)  # as configured
        self.assertEqual(listed["cache"]["ssd"]["budget"], 1 << 30)
        live = caught_up(self, self.spoke, self.hub, "/mirror")
        self.assertEqual(live["feed"]["lag"], 0)
        self.assertGreater(live["feed"]["hub_last_change"], 0)
        self.assertIsNotNone(live["state_since"])

        # The same figures as Prometheus metrics.
        text_metrics = requests.get(self.spoke.url + "/metrics").text
        label = '{mount="/mirror"}'
        self.assertEqual(metric(text_metrics, "weft_spoke_connected" + label), 1)
        self.assertEqual(metric(text_metrics, "weft_spoke_lag_changes" + label), 0)
        self.assertEqual(metric(text_metrics, "weft_spoke_fetched_wire_bytes_total" + label),
                         raw["transfer"]["chunk_wire_bytes"])
        self.assertEqual(metric(text_metrics, "weft_spoke_fetched_logical_bytes_total" + label),
                         raw["transfer"]["chunk_logical_bytes"])
        self.assertEqual(metric(text_metrics, "weft_spoke_cache_hits_total" + label), raw["cache"]["hits"])
        self.assertEqual(metric(text_metrics, "weft_spoke_cache_misses_total" + label), raw["cache"]["misses"])
        self.assertGreater(metric(text_metrics, 'weft_spoke_cached_bytes{tier="ram"}'), len(noise))
        self.assertIn("# TYPE weft_spoke_fetched_wire_bytes_total counter", text_metrics)

        # Its inode numbers, to compare after mounting it again.
        with rest(self.spoke) as s:
            ino = s.get(self.spoke.url + "/api/v1/stat/data/mirror/small.txt").json()["ino"]

        # A read under way when the mount goes: it ends with the right bytes
        # or fails, never with other bytes.
        hub_put(self.hub, "data/ops/large.bin", os.urandom(24 << 20))
        with rest(self.hub) as s:
            large = s.get(self.hub.url + "/api/v1/files/data/ops/large.bin").content
        caught_up(self, self.spoke, self.hub, "/mirror")
        body = self.s3.get_object(Bucket="mirror", Key="large.bin")["Body"]
        head = body.read(1 << 20)
        with rest(self.spoke) as s:
            r = s.delete(self.spoke.url + "/api/v1/spokes/mirror")
            self.assertEqual(r.status_code, 204, r.text)
        try:
            got = head + body.read()
        except Exception as e:  # the body ends short: botocore's or urllib3's error
            got = None
            print("a read under way at the removal failed:", type(e).__name__, file=sys.stderr)
        if got is not None:
            self.assertEqual(sha(got), sha(large))

        # Gone: no figures, no metrics; its names are an empty directory's.
        self.assertEqual(spokes(self.spoke)["spokes"], [])
        self.assertNotIn(label, requests.get(self.spoke.url + "/metrics").text)
        self.assertEqual(s3_error(self, self.s3, "mirror", "compressible.csv"), "NoSuchKey")
        self.assertEqual(self.s3.list_objects_v2(Bucket="mirror").get("KeyCount"), 0)
        with rest(self.spoke) as s:
            r = s.delete(self.spoke.url + "/api/v1/spokes/mirror")
            self.assertEqual((r.status_code, r.json()["error"]["code"]), (404, "not_found"))

        # Mounted again: the same inode numbers, served from the cache.
        again = self.add(local="mirror", hub=self.hub_url, remote="data/ops",
                         user=self.creds["user"], password=self.creds["password"], mode="available")
        self.assertEqual((again["local"], again["mode"]), ("/mirror", "available"))
        with rest(self.spoke) as s:
            self.assertEqual(s.get(self.spoke.url + "/api/v1/stat/data/mirror/small.txt").json()["ino"], ino)
        self.assertEqual(s3_body(self.s3, "mirror", "compressible.csv"), text)
        self.assertEqual(mount(self.spoke, "/mirror")["cache"]["hit_bytes"], len(text))
        with rest(self.spoke) as s:
            self.assertEqual(s.delete(self.spoke.url + "/api/v1/spokes/mirror").status_code, 204)

    def test_bad_requests(self):
        good = {"local": "/bad", "hub": self.hub_url, "remote": "data/ops", "credentials": self.creds}
        self.refused(400, "invalid_json", **{k: v for k, v in good.items() if k != "local"})
        self.refused(400, "invalid_json", **good, mode="sometimes")
        self.refused(400, "invalid_json", **{k: v for k, v in good.items() if k != "credentials"})
        self.refused(400, "invalid_json", **good, user="x", password="y")  # both forms
        self.refused(400, "invalid_json", **dict(good, credentials={"user": "admin"}))
        self.refused(400, "invalid_json", **dict(good, hub="ftp://hub:21"))
        self.refused(400, "invalid_json", **dict(good, remote="data"))
        self.refused(400, "invalid_json", **dict(good, local="/"))
        self.refused(400, "bad_path", **dict(good, local="/a/../b"))
        self.refused(400, "invalid_json", **good, extra=1)
        # Taken, nested, or a directory that holds files.
        self.add(**dict(good, local="/taken"))
        self.refused(409, "already_exists", **dict(good, local="/taken"))
        self.refused(409, "already_exists", **dict(good, local="/taken/below"))
        with rest(self.spoke) as s:
            r = s.put(self.spoke.url + "/api/v1/files/data/busy/file.txt", data=b"x", params={"mkdirs": "true"})
            self.assertEqual(r.status_code, 201, r.text)
        self.refused(409, "not_empty", **dict(good, local="/busy"))
        self.refused(409, "not_a_directory", **dict(good, local="/busy/file.txt"))
        # Administrators only.
        with rest(self.spoke) as s:
            r = s.post(self.spoke.url + "/api/v1/users", json={"name": "ann", "password": "ann-pass"})
            self.assertEqual(r.status_code, 201, r.text)
        for method, path in (("GET", "/api/v1/spokes"), ("POST", "/api/v1/spokes"),
                             ("DELETE", "/api/v1/spokes/taken")):
            r = requests.request(method, self.spoke.url + path, auth=("ann", "ann-pass"), json=good)
            self.assertEqual((r.status_code, r.json()["error"]["code"]), (403, "forbidden"), path)
        with rest(self.spoke) as s:
            self.assertEqual(s.delete(self.spoke.url + "/api/v1/spokes/taken").status_code, 204)

    def test_cli(self):
        creds = self.hub.data / "credentials.json"

        def weft(*args, code=0):
            r = subprocess.run([WEFT, "spokes", *args, "--data", str(self.spoke.data)],
                               capture_output=True, timeout=60)
            self.assertEqual(r.returncode, code, r.stderr.decode(errors="replace"))
            return r.stdout.decode()

        out = weft("add", "/cli", self.hub_url + "/data/ops", "--hub-credentials", str(creds), "--mode", "available")
        self.assertIn("mounted /cli: data/ops of %s (available, connected)" % self.hub_url, out)
        self.assertEqual(s3_body(self.s3, "cli", "small.txt"), b"small\n")
        listing = weft()
        self.assertRegex(listing, r"/cli +connected +available +0 ")
        self.assertIn("cache: RAM", listing)
        self.assertEqual(weft("list"), listing)
        [m] = [m for m in json.loads(weft("list", "--json"))["spokes"] if m["local"] == "/cli"]
        self.assertEqual((m["mode"], m["remote"]), ("available", "data/ops"))
        weft("add", "/cli", self.hub_url + "/data/ops", "--hub-credentials", str(creds), code=1)
        weft("add", "/x", "hub:9080/data/ops", "--hub-credentials", str(creds), code=2)
        weft("remove", "/cli")
        weft("remove", "/cli", code=1)


class WarmTest(unittest.TestCase):
    """A warm job at a spoke fetches a hub directory into the chunk cache:
    the figures count the bytes it fetched, and reading the files afterwards
    is all cache hits with nothing more on the wire."""

    def test_warm_then_read_from_the_cache(self):
        hub = Site(WEFT)
        self.addCleanup(hub.stop)
        files = {"w/a.bin": os.urandom(3 << 20), "w/sub/b.bin": os.urandom(1 << 20), "w/c.csv": csv_rows(30000)}
        for name, body in files.items():
            hub_put(hub, "data/datasets/" + name, body)
        link = hub.emulator("--rtt-ms", "10")
        spoke = Spoke(WEFT, hub, "http://" + link.address, protocols=SPOKE)
        self.addCleanup(spoke.stop)
        total = sum(len(b) for b in files.values())
        cold = caught_up(self, spoke, hub, "/datasets")
        with rest(spoke) as s:
            r = s.post(spoke.url + "/api/v1/jobs", json={"type": "warm", "path": "data/datasets/w"})
            self.assertEqual(r.status_code, 201, r.text)
            deadline = time.monotonic() + 60
            while (job := s.get(spoke.url + "/api/v1/jobs/" + r.json()["id"]).json())["state"] == "running":
                self.assertLess(time.monotonic(), deadline, job)
                time.sleep(0.05)
        self.assertEqual(job["state"], "succeeded", job)
        self.assertEqual((job["result"]["files_read"], job["result"]["bytes_read"]), (3, total))
        warmed = mount(spoke, "/datasets")
        fetched = warmed["transfer"]["chunk_logical_bytes"] - cold["transfer"]["chunk_logical_bytes"]
        self.assertEqual(fetched, total)
        self.assertEqual(warmed["cache"]["miss_bytes"] - cold["cache"]["miss_bytes"], total)
        self.assertGreater(warmed["transfer"]["chunk_wire_bytes"], cold["transfer"]["chunk_wire_bytes"])
        # Reading it now: every byte a cache hit, nothing more on the wire.
        with rest(spoke) as s:
            for name, body in files.items():
                self.assertEqual(s.get(spoke.url + "/api/v1/files/data/datasets/" + name).content, body)
        read = mount(spoke, "/datasets")
        self.assertEqual(read["transfer"]["chunk_wire_bytes"], warmed["transfer"]["chunk_wire_bytes"])
        self.assertEqual(read["cache"]["misses"], warmed["cache"]["misses"])
        self.assertEqual(read["cache"]["hit_bytes"] - warmed["cache"]["hit_bytes"], total)


class OutageTest(unittest.TestCase):
    """The link down for 30 s while the hub changes files (the hub stays
    up): once the link is back the spoke misses no change."""

    def test_no_change_is_missed_across_an_outage(self):
        hub = Site(WEFT)
        spoke = None
        try:
            before = {"one.txt": b"one, first\n", "two.txt": b"two, first\n", "gone.txt": b"to be removed\n",
                      "moved.txt": b"to be renamed\n", "sub/deep.txt": b"deep, first\n"}
            for name, body in before.items():
                hub_put(hub, "data/live/" + name, body)
            link = hub.emulator("--rtt-ms", "10")
            spoke = Spoke(WEFT, hub, "http://" + link.address, local="/live", remote="data/live", protocols=SPOKE, mode="available")
            s3 = spoke.s3()
            for name, body in before.items():
                self.assertEqual(s3_body(s3, "live", name), body)  # cached at the spoke
            keys = [o["Key"] for o in s3.list_objects_v2(Bucket="live")["Contents"]]
            self.assertEqual(sorted(keys), sorted(before))

            connected_since = mount(spoke, "/live")["state_since"]
            link.command("down")
            down_at = time.monotonic()
            deadline = down_at + FEED_WAIT
            while mount(spoke, "/live")["state"] != "disconnected":
                self.assertLess(time.monotonic(), deadline, "the spoke did not notice the link going down")
                time.sleep(0.1)
            disconnected_since = mount(spoke, "/live")["state_since"]
            self.assertGreater(disconnected_since, connected_since)  # RFC 3339 UTC times sort as text
            after = {"one.txt": b"one, changed at the hub\n", "two.txt": b"two, changed, and longer than before\n",
                     "new.txt": b"created during the outage\n", "renamed.txt": b"to be renamed\n",
                     "sub/deep.txt": b"deep, changed\n"}
            hub_put(hub, "data/live/one.txt", after["one.txt"])
            hub_put(hub, "data/live/two.txt", after["two.txt"])
            hub_put(hub, "data/live/new.txt", after["new.txt"])
            hub_put(hub, "data/live/sub/deep.txt", after["sub/deep.txt"])
            with rest(hub) as s:
                self.assertEqual(s.delete(hub.url + "/api/v1/files/data/live/gone.txt").status_code, 204)
                r = s.post(hub.url + "/api/v1/rename", json={"from": "data/live/moved.txt", "to": "data/live/renamed.txt"})
                self.assertEqual(r.status_code, 200, r.text)
            # Available: the cache still answers, each file whole as it was.
            self.assertEqual(s3_body(s3, "live", "one.txt"), before["one.txt"])
            self.assertEqual(s3_error(self, s3, "live", "new.txt"), "ServiceUnavailable")
            time.sleep(max(0, down_at + OUTAGE - time.monotonic()))
            outage = mount(spoke, "/live")
            self.assertEqual((outage["state"], outage["state_since"]), ("disconnected", disconnected_since))
            link.command("up")

            m = caught_up(self, spoke, hub, "/live")
            self.assertEqual(m["feed"]["lag"], 0)
            self.assertGreater(m["state_since"], disconnected_since)
            for name, body in after.items():
                self.assertEqual(s3_body(s3, "live", name), body, name)
            for name in ("gone.txt", "moved.txt"):
                self.assertEqual(s3_error(self, s3, "live", name), "NoSuchKey", name)
            keys = [o["Key"] for o in s3.list_objects_v2(Bucket="live")["Contents"]]
            self.assertEqual(sorted(keys), sorted(after))
            s3.close()
        finally:
            for site in (spoke, hub):
                if site:
                    self.assertEqual(site.stop(), 0)


class CutTest(unittest.TestCase):
    """Connections cut mid-chunk while a spoke reads large files: with the
    hub still there, a cut costs the cut batches' missing parts, not the
    read; a link that stays down fails the read cleanly. Never wrong bytes."""

    def test_a_cut_read_completes_and_an_outage_fails_cleanly(self):
        hub = Site(WEFT)
        spoke = None
        try:
            bodies = [os.urandom(8 << 20) for _ in range(4)]
            for i, body in enumerate(bodies):
                hub_put(hub, "data/cut/file%d.bin" % i, body)
            link = hub.emulator("--rtt-ms", "20")
            spoke = Spoke(WEFT, hub, "http://" + link.address, local="/cut", remote="data/cut", protocols=SPOKE)
            s3 = spoke.s3()
            for i, cut in enumerate((300001, 2500003, 6000007)):
                caught_up(self, spoke, hub, "/cut")
                link.command("cut_after %d" % cut)
                self.assertEqual(sha(s3_body(s3, "cut", "file%d.bin" % i)), sha(bodies[i]),
                                 "a read through cut %d" % i)
            self.assertEqual(link.command("stats")["cuts"], 3)
            transfer = caught_up(self, spoke, hub, "/cut")["transfer"]
            self.assertGreaterEqual(transfer["batch_retries"], 3)
            # Every chunk arrived whole once: what the cuts broke off was
            # asked for again, what had arrived was not.
            self.assertEqual(transfer["chunk_logical_bytes"], 3 * (8 << 20))

            # The link goes down in the middle of a read and stays down.
            link.command("down_after %d" % (2 << 20))
            started = time.monotonic()
            try:
                got = s3_body(s3, "cut", "file3.bin")
                self.fail("a read through an outage returned %d bytes" % len(got))
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
                print("the read through the outage failed:", type(e).__name__, file=sys.stderr)
            self.assertLess(time.monotonic() - started, 15)
            self.assertTrue(link.command("stats")["down"])
            link.command("up")
            for i, body in enumerate(bodies):
                caught_up(self, spoke, hub, "/cut")
                self.assertEqual(sha(s3_body(s3, "cut", "file%d.bin" % i)), sha(body))
            s3.close()
        finally:
            for site in (spoke, hub):
                if site:
                    self.assertEqual(site.stop(), 0)


class CutLookupTest(unittest.TestCase):
    """Every cut drops the spoke's change feed with the connections, and a
    strict mount refuses to ask the hub until the feed is back. Names looked
    up and directories listed while the link is cut again and again wait for
    the feed (as reads do, CutTest) instead of failing."""

    def test_lookups_and_listings_ride_out_cuts(self):
        hub = Site(WEFT)
        spoke = None
        try:
            names = ["f%03d.txt" % i for i in range(40)]
            for name in names:
                hub_put(hub, "data/cuts/d/" + name, name.encode())
            link = hub.emulator("--rtt-ms", "20")
            spoke = Spoke(WEFT, hub, "http://" + link.address, local="/cuts", remote="data/cuts", protocols=SPOKE)
            s3 = spoke.s3()
            caught_up(self, spoke, hub, "/cuts")
            stop = threading.Event()
            cuts = []

            def cut_now_and_then():
                while not stop.wait(0.3):
                    link.command("cut")
                    cuts.append(time.monotonic())

            cutter = threading.Thread(target=cut_now_and_then)
            cutter.start()
            try:
                # While the feed is lost, the strict mount trusts nothing it
                # cached: a call waits for the feed, or asks the hub.
                deadline = time.monotonic() + 60
                while len(cuts) < 10 and time.monotonic() < deadline:
                    for name in names:
                        self.assertEqual(s3.head_object(Bucket="cuts", Key="d/" + name)["ContentLength"], len(name))
                    listed = s3.list_objects_v2(Bucket="cuts", Prefix="d/")
                    self.assertEqual([o["Key"] for o in listed["Contents"]], ["d/" + n for n in names])
            finally:
                stop.set()
                cutter.join()
            self.assertGreaterEqual(link.command("stats")["cuts"], 10)
            s3.close()
        finally:
            for site in (spoke, hub):
                if site:
                    self.assertEqual(site.stop(), 0)


class ResidencyTest(unittest.TestCase):
    """The hub keeps data/region/eu to eu-west-1: a us-east-1 spoke is
    refused it and does not list it; an eu-west-1 spoke reads it."""

    def test_a_restricted_path_stays_at_the_hub(self):
        hub = Site(WEFT, residency=[("data/region/eu", ["eu-west-1"])])
        us = eu = None
        try:
            secret = os.urandom(200 << 10)
            hub_put(hub, "data/region/eu/secret.bin", secret)
            hub_put(hub, "data/region/open/public.txt", b"for everyone\n")
            url = "http://" + hub.rest
            us = Spoke(WEFT, hub, url, local="/region", remote="data/region", protocols=SPOKE)
            eu = Spoke(WEFT, hub, url, local="/region", remote="data/region", protocols=SPOKE, region="eu-west-1")
            s3_us, s3_eu = us.s3(), eu.s3()
            self.assertEqual(s3_body(s3_us, "region", "open/public.txt"), b"for everyone\n")
            self.assertEqual(s3_error(self, s3_us, "region", "eu/secret.bin"), "AccessDenied")
            with rest(us) as s:
                r = s.get(us.url + "/api/v1/files/data/region/eu/secret.bin")
                self.assertEqual((r.status_code, r.json()["error"]["code"]), (403, "access_denied"))
                self.assertNotIn(secret[:32], r.content)
                r = s.get(us.url + "/api/v1/dirs/data/region")
                self.assertEqual([e["name"] for e in r.json()["entries"]], ["open"])
                r = s.get(us.url + "/api/v1/dirs/data/region/eu")
                self.assertEqual(r.status_code, 403, r.text)
            keys = [o["Key"] for o in s3_us.list_objects_v2(Bucket="region")["Contents"]]
            self.assertEqual(keys, ["open/public.txt"])
            # The spoke in the region reads it.
            self.assertEqual(sha(s3_body(s3_eu, "region", "eu/secret.bin")), sha(secret))
            self.assertEqual(sorted(o["Key"] for o in s3_eu.list_objects_v2(Bucket="region")["Contents"]),
                             ["eu/secret.bin", "open/public.txt"])
            # The hub's audit log has the refusals, with the spoke's region.
            deadline = time.monotonic() + 10
            while True:
                with rest(hub) as s:
                    r = s.get(hub.url + "/api/v1/audit", params={"protocol": "hub", "limit": 1000})
                    self.assertEqual(r.status_code, 200, r.text)
                denied = [x for x in r.json()["records"] if x["result"] == "residency_denied"]
                if denied or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            self.assertTrue(denied)
            self.assertTrue(all(x["region"] == "us-east-1" for x in denied), denied)
            self.assertTrue(all(x["path"].startswith("data/region/eu") for x in denied), denied)
            s3_us.close()
            s3_eu.close()
        finally:
            for site in (us, eu, hub):
                if site:
                    self.assertEqual(site.stop(), 0)


def configure(args):
    global WEFT
    WEFT = args.weft


if __name__ == "__main__":
    run_tests(170, configure)
