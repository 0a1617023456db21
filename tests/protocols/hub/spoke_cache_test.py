#!/usr/bin/env python3
"""The spoke chunk cache's operator controls end to end, with a hub
`weft serve` and a spoke whose cache is much smaller than what it reads:

- Pins over REST: a pin of a directory starts a warm job that fetches it;
  reading three times the cache's size of other files evicts none of the
  pinned chunks (reading the pinned files again is all cache hits); evict
  keeps pinned chunks and drops the others (read again, they are fetched);
  unpin, then evict drops them too. Bad requests get clear errors. The
  `weft cache pin|pins|unpin|evict` commands drive the same API.
- Pins outlive a restart: the spoke restarted while its link to the hub is
  down lists the pin as pending, holding the chunks it recorded (an evict
  of everything keeps what the SSD tier held); once the link is up it holds
  again, and an evict of everything keeps its chunks (reads are all hits). Unpinned, a restart forgets it.
- Figures: GET /api/v1/cache per tier (within budgets, hits, misses,
  refused admissions and evictions moving as reads go through a small
  cache) and the same figures in /metrics.
- Traces: a mount's reads recorded at run time to a trace file that
  `weft cache replay` replays; bad names, a second recording and unknown
  mounts get clear errors.
- Which spokes cache a path: the hub's view from the summaries its spoke
  sends, as the spoke warms and evicts; the spoke's own count.

    spoke_cache_test.py --weft PATH [unittest arguments]
"""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubsite import Site, Spoke, hub_put, rest, run_tests  # noqa: E402

WEFT = None
SPOKE = ("rest",)
KIB = 1 << 10


def wait_job(test, session, url, job_id):
    deadline = time.monotonic() + 60
    while (job := session.get(url + "/api/v1/jobs/" + job_id).json())["state"] == "running":
        test.assertLess(time.monotonic(), deadline, job)
        time.sleep(0.05)
    test.assertEqual(job["state"], "succeeded", job)
    return job


class PinTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        cls.pinned = {"pinned/a.bin": os.urandom(512 * KIB), "pinned/sub/b.bin": os.urandom(256 * KIB)}
        cls.other = {"other/f%02d.bin" % i: os.urandom(256 * KIB) for i in range(12)}
        for name, body in {**cls.pinned, **cls.other}.items():
            hub_put(cls.hub, "data/datasets/" + name, body)
        # RAM 256 KiB, SSD 1 MiB: the other files are twice the whole cache.
        # No learning prefetcher: the figures count the reads' own misses.
        # Through a link that can go down (a restart without the hub).
        cls.link = cls.hub.emulator()
        cls.spoke = Spoke(WEFT, cls.hub, "http://" + cls.link.address, protocols=SPOKE,
                          spoke_cache={"ram_bytes": 256 * KIB, "ssd_bytes": 1 << 20}, prefetch=False)
        cls.s = rest(cls.spoke)

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        spoke_code = cls.spoke.stop()
        hub_code = cls.hub.stop()
        assert spoke_code == 0 and hub_code == 0, (spoke_code, hub_code)

    def api(self, path):
        return self.spoke.url + "/api/v1" + path

    def mount(self):
        r = self.s.get(self.api("/spokes"))
        self.assertEqual(r.status_code, 200, r.text)
        [m] = r.json()["spokes"]
        return m

    def read(self, files):
        for name, body in files.items():
            r = self.s.get(self.api("/files/data/datasets/" + name))
            # (r.text of a binary body would run a slow charset detection)
            self.assertEqual(r.status_code, 200, r.content[:200])
            self.assertEqual(r.content, body)

    def pins(self):
        r = self.s.get(self.api("/cache/pins"))
        self.assertEqual(r.status_code, 200, r.text)
        return {p["path"]: p for p in r.json()["pins"]}

    def evict(self, status=200, **body):
        r = self.s.post(self.api("/cache/evict"), json=body)
        self.assertEqual(r.status_code, status, r.text)
        return r.json()

    def test_1_pin_survives_pressure_evict_and_unpin(self):
        pinned_bytes = sum(len(b) for b in self.pinned.values())
        r = self.s.post(self.api("/cache/pins"), json={"path": "data/datasets/pinned"})
        self.assertEqual(r.status_code, 201, r.text)
        pin = r.json()
        self.assertEqual((pin["path"], pin["files"]), ("data/datasets/pinned", 2))
        self.assertGreater(pin["chunks"], 2)
        job = wait_job(self, self.s, self.spoke.url, pin["job"]["id"])
        self.assertEqual(job["result"]["bytes_read"], pinned_bytes)
        listed = self.pins()["data/datasets/pinned"]
        self.assertEqual((listed["cached_chunks"], listed["cached_bytes"]), (pin["chunks"], pinned_bytes))

        # Pressure: twice the cache's size of other files, read twice.
        self.read(self.other)
        self.read(self.other)
        self.assertEqual(self.pins()["data/datasets/pinned"]["cached_bytes"], pinned_bytes)
        before = self.mount()["cache"]
        self.read(self.pinned)
        after = self.mount()["cache"]
        self.assertEqual(after["misses"], before["misses"])
        self.assertEqual(after["hit_bytes"] - before["hit_bytes"], pinned_bytes)

        # Evict keeps what a pin holds and drops the rest.
        kept = self.evict(path="data/datasets/pinned")
        self.assertEqual((kept["files"], kept["chunks"], kept["pinned"]), (2, 0, pin["chunks"]))
        last = {"other/f11.bin": self.other["other/f11.bin"]}
        self.read(last)  # cached now (the newest)
        dropped = self.evict(path="data/datasets/other/f11.bin")
        self.assertEqual((dropped["files"], dropped["pinned"]), (1, 0))
        # Much of the SSD tier is pinned: what RAM refused of it may be gone already.
        self.assertGreater(dropped["bytes"], 0)
        self.assertLessEqual(dropped["bytes"], 256 * KIB)
        before = self.mount()["cache"]
        self.read(last)
        self.assertEqual(self.mount()["cache"]["miss_bytes"] - before["miss_bytes"], 256 * KIB)

        # Unpinned, its chunks go with the next evict of everything.
        r = self.s.delete(self.api("/cache/pins/data/datasets/pinned"))
        self.assertEqual(r.status_code, 204, r.text)
        r = self.s.delete(self.api("/cache/pins/data/datasets/pinned"))
        self.assertEqual(r.status_code, 404, r.text)
        self.assertEqual(r.json()["error"]["code"], "not_found")
        self.assertEqual(self.pins(), {})
        everything = self.evict()
        self.assertEqual((everything["files"], everything["pinned"]), (0, 0))
        self.assertGreaterEqual(everything["bytes"], pinned_bytes)
        before = self.mount()["cache"]
        self.read(self.pinned)
        self.assertEqual(self.mount()["cache"]["miss_bytes"] - before["miss_bytes"], pinned_bytes)

    def test_2_bad_requests(self):
        def refused(method, path, status, code, **kw):
            r = self.s.request(method, self.api(path), **kw)
            self.assertEqual(r.status_code, status, r.text)
            self.assertEqual(r.json()["error"]["code"], code, r.text)
            return r.json()["error"]["message"]
        # Not below a spoke mount: nothing of it is cached here.
        self.assertIn("spoke", refused("POST", "/cache/pins", 400, "bad_request", json={"path": "data"}))
        self.assertIn("spoke", refused("POST", "/cache/evict", 400, "bad_request", json={"path": "data"}))
        refused("POST", "/cache/pins", 404, "not_found", json={"path": "data/datasets/nothing"})
        refused("POST", "/cache/pins", 400, "invalid_json", json={"path": 7})
        refused("POST", "/cache/pins", 400, "invalid_json", json={})
        refused("POST", "/cache/evict", 400, "invalid_json", json={"path": "data/datasets", "all": True})
        refused("POST", "/cache/pins", 404, "not_found", json={"path": "nosuchexport/x"})
        # Administrators only.
        r = requests_anonymous().get(self.api("/cache/pins"))
        self.assertEqual(r.status_code, 401, r.text)

    def test_3_cli(self):
        def weft(*args):
            r = subprocess.run([WEFT, "cache", *args, "--data", str(self.spoke.data)],
                               capture_output=True, text=True, timeout=60)
            return r.returncode, r.stdout, r.stderr
        code, out, err = weft("pin", "data/datasets/pinned/sub", "--no-warm")
        self.assertEqual(code, 0, err)
        self.assertIn("pinned data/datasets/pinned/sub: 1 files", out)
        code, out, err = weft("pins", "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual([p["path"] for p in json.loads(out)["pins"]], ["data/datasets/pinned/sub"])
        code, out, err = weft("evict", "data/datasets/pinned/sub")
        self.assertEqual(code, 0, err)
        self.assertIn("pinned chunks kept", out)
        self.assertEqual(weft("evict")[0], 2)  # a path or --all
        code, out, err = weft("unpin", "data/datasets/pinned/sub")
        self.assertEqual(code, 0, err)
        code, out, err = weft("unpin", "data/datasets/pinned/sub")
        self.assertEqual(code, 1)
        self.assertIn("no cache pin", err)
        code, out, err = weft("evict", "--all", "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["pinned"], 0)

    def test_4_pins_outlive_a_restart(self):
        pinned_bytes = sum(len(b) for b in self.pinned.values())
        r = self.s.post(self.api("/cache/pins"), json={"path": "data/datasets/pinned"})
        self.assertEqual(r.status_code, 201, r.text)
        pin = r.json()
        self.assertFalse(pin["pending"])
        wait_job(self, self.s, self.spoke.url, pin["job"]["id"])

        # Restarted without its hub: the pin is pending (the versions current
        # now are not known) and holds the chunks it recorded: what the SSD
        # tier kept survives an evict of everything meanwhile.
        self.link.command("down")
        self.spoke.restart()
        listed = self.pins()["data/datasets/pinned"]
        self.assertEqual((listed["pending"], listed["files"], listed["chunks"]), (True, 2, pin["chunks"]))
        self.assertGreater(listed["cached_bytes"], 0)
        kept = self.evict()
        self.assertEqual(kept["pinned"], listed["cached_chunks"])
        self.assertEqual(self.pins()["data/datasets/pinned"]["cached_bytes"], listed["cached_bytes"])
        r = subprocess.run([WEFT, "cache", "pins", "--data", str(self.spoke.data)], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("data/datasets/pinned: pending", r.stdout)
        self.link.command("up")
        deadline = time.monotonic() + 30
        while (listed := self.pins()["data/datasets/pinned"])["pending"]:
            self.assertLess(time.monotonic(), deadline, "the pin did not hold again once the hub was back")
            time.sleep(0.1)
        self.assertEqual((listed["files"], listed["chunks"]), (2, pin["chunks"]))
        # What RAM held is gone with the process; what the SSD tier held is
        # cached and pinned again.
        self.assertGreater(listed["cached_bytes"], 0)
        kept = self.evict()
        self.assertEqual(kept["pinned"], listed["cached_chunks"])
        before = self.mount()["cache"]
        self.read(self.pinned)  # what RAM lost lands again, and is kept
        after = self.mount()["cache"]
        self.assertEqual(after["miss_bytes"] - before["miss_bytes"], pinned_bytes - listed["cached_bytes"])
        self.assertEqual(self.pins()["data/datasets/pinned"]["cached_bytes"], pinned_bytes)
        kept = self.evict()
        self.assertEqual(kept["pinned"], pin["chunks"])
        before = self.mount()["cache"]
        self.read(self.pinned)
        after = self.mount()["cache"]
        self.assertEqual((after["misses"], after["hit_bytes"] - before["hit_bytes"]),
                         (before["misses"], pinned_bytes))

        # Unpinned: the record goes too.
        r = self.s.delete(self.api("/cache/pins/data/datasets/pinned"))
        self.assertEqual(r.status_code, 204, r.text)
        self.spoke.restart()
        self.assertEqual(self.pins(), {})
        self.assertEqual(self.evict()["pinned"], 0)


def metric(text, name, **labels):
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        head, _, value = line.rpartition(" ")
        if head == (name + "{" + want + "}" if labels else name):
            return float(value)
    raise AssertionError("no %s{%s} in /metrics" % (name, want))


class StatsTraceTest(unittest.TestCase):
    def test_figures_metrics_and_a_replayable_trace(self):
        hub = Site(WEFT)
        self.addCleanup(hub.stop)
        files = {"t/f%d.bin" % i: os.urandom(256 * KIB) for i in range(8)}
        for name, body in files.items():
            hub_put(hub, "data/datasets/" + name, body)
        # No learning prefetcher: the figures count the reads' own misses.
        spoke = Spoke(WEFT, hub, hub.url, protocols=SPOKE, spoke_cache={"ram_bytes": 256 * KIB, "ssd_bytes": 1 << 20},
                      prefetch=False)
        self.addCleanup(spoke.stop)
        s = rest(spoke)
        self.addCleanup(s.close)
        api = spoke.url + "/api/v1"

        r = s.post(api + "/cache/traces", json={"spoke": "datasets", "name": "run-1"})
        self.assertEqual(r.status_code, 201, r.text)
        trace = r.json()
        self.assertEqual(trace["spoke"], "/datasets")
        self.assertTrue(trace["file"].endswith("/traces/run-1.trc"), trace)
        for name, status, code in (("run-2", 409, "busy"), ("../x", 400, "invalid_json"), (".hidden", 400, "invalid_json")):
            r = s.post(api + "/cache/traces", json={"spoke": "/datasets", "name": name})
            self.assertEqual((r.status_code, r.json()["error"]["code"]), (status, code), r.text)
        r = s.post(api + "/cache/traces", json={"spoke": "nothing", "name": "x"})
        self.assertEqual(r.status_code, 404, r.text)

        for _ in range(2):
            for name, body in files.items():
                self.assertEqual(s.get(api + "/files/data/datasets/" + name).content, body)
        c = s.get(api + "/cache").json()
        self.assertEqual((c["ram"]["budget"], c["ssd"]["budget"]), (256 * KIB, 1 << 20))
        self.assertLessEqual(c["ram"]["bytes"], 256 * KIB)
        self.assertLessEqual(c["ssd"]["bytes"], 1 << 20)
        self.assertGreater(c["misses"], 0)
        self.assertGreater(c["ram"]["misses"], c["ssd"]["misses"])
        self.assertGreater(c["ram"]["refused"] + c["ram"]["evictions"], 0)
        self.assertGreater(c["ssd"]["hits"] + c["ram"]["hits"], 0)
        self.assertEqual((c["pins"], c["pinned_chunks"], c["ram"]["pinned_bytes"]), (0, 0, 0))
        mount = s.get(api + "/spokes").json()["spokes"][0]
        self.assertEqual(mount["trace"]["file"], trace["file"])
        chunk_reads = mount["trace"]["accesses"]
        self.assertGreaterEqual(chunk_reads, 2 * len(files))

        text = s.get(spoke.url + "/metrics").text
        for tier in ("ram", "ssd"):
            self.assertEqual(metric(text, "weft_spoke_cache_tier_hits_total", tier=tier), c[tier]["hits"])
            self.assertEqual(metric(text, "weft_spoke_cache_tier_misses_total", tier=tier), c[tier]["misses"])
            self.assertEqual(metric(text, "weft_spoke_cache_budget_bytes", tier=tier), c[tier]["budget"])
            self.assertEqual(metric(text, "weft_spoke_cache_refused_total", tier=tier), c[tier]["refused"])
            self.assertEqual(metric(text, "weft_spoke_cache_tier_evictions_total", tier=tier), c[tier]["evictions"])
            self.assertEqual(metric(text, "weft_spoke_cached_bytes", tier=tier), c[tier]["bytes"])
            self.assertEqual(metric(text, "weft_spoke_cache_pinned_bytes", tier=tier), 0)

        r = s.delete(api + "/cache/traces/datasets")
        self.assertEqual(r.status_code, 200, r.text)
        done = r.json()
        self.assertEqual(done["accesses"], chunk_reads)
        self.assertEqual(done["bytes"], os.path.getsize(done["file"]))
        self.assertIsNone(s.get(api + "/spokes").json()["spokes"][0]["trace"])
        r = s.delete(api + "/cache/traces/datasets")
        self.assertEqual(r.status_code, 404, r.text)
        r = s.post(api + "/cache/traces", json={"spoke": "datasets", "name": "run-1"})
        self.assertEqual((r.status_code, r.json()["error"]["code"]), (409, "exists"), r.text)

        replay = subprocess.run([WEFT, "cache", "replay", "--trace", done["file"], "--size", "50%",
                                 "--policy", "lru"], capture_output=True, text=True, timeout=60)
        self.assertEqual(replay.returncode, 0, replay.stderr)
        lines = {l.split()[1]: l for l in replay.stdout.splitlines() if l.startswith("BENCH ")}
        self.assertIn("cache.replay.min.hit_ratio", lines, replay.stdout)
        self.assertIn("cache.replay.lru.hit_ratio", lines, replay.stdout)
        # Each file read twice, and the cache holds half of them: MIN hits on
        # the second pass.
        min_ratio = float(lines["cache.replay.min.hit_ratio"].split("value=")[1].split()[0])
        self.assertGreater(min_ratio, 0.2)


class CachedByTest(unittest.TestCase):
    """Which spokes cache a path, at the hub: the spoke tells its hub what
    its cache holds (PUT /hub/v1/cached, every second here once it changed);
    the hub's GET /api/v1/hub/spokes?path= counts that path's chunks in each
    spoke's summary. At the spoke, GET /api/v1/cache/held/PATH says the same
    of its own cache exactly."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        cls.files = {"a/x.bin": os.urandom(300 * KIB), "a/y.bin": os.urandom(200 * KIB),
                     "b/z.bin": os.urandom(250 * KIB)}
        for name, body in cls.files.items():
            hub_put(cls.hub, "data/datasets/" + name, body)
        cls.spoke = Spoke(WEFT, cls.hub, cls.hub.url, protocols=SPOKE, spoke_cache={"report_interval_s": 1},
                          prefetch=False)
        cls.s = rest(cls.spoke)
        cls.admin = rest(cls.hub)

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        cls.admin.close()
        spoke_code = cls.spoke.stop()
        hub_code = cls.hub.stop()
        assert spoke_code == 0 and hub_code == 0, (spoke_code, hub_code)

    def at_hub(self, path):
        r = self.admin.get(self.hub.url + "/api/v1/hub/spokes", params={"path": path})
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()

    def held(self, path):
        r = self.s.get(self.spoke.url + "/api/v1/cache/held/" + path)
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()

    def wait_at_hub(self, path, cached_chunks):
        """The spoke's entry for `path` once its cached chunks are as given."""
        deadline = time.monotonic() + 20
        while True:
            answer = self.at_hub(path)
            spokes = answer["spokes"]
            if len(spokes) == 1 and spokes[0]["path_cached"] is not None and \
                    spokes[0]["path_cached"]["chunks"] == cached_chunks(answer["path"]):
                return answer
            self.assertLess(time.monotonic(), deadline, answer)
            time.sleep(0.2)

    def test_hub_sees_what_the_spoke_caches(self):
        a_bytes = len(self.files["a/x.bin"]) + len(self.files["a/y.bin"])
        # Nothing cached yet: the spoke reports its empty cache once it connects.
        empty = self.wait_at_hub("data/datasets", lambda p: 0)
        self.assertEqual(empty["path"]["files"], 3)
        self.assertTrue(empty["path"]["complete"])
        self.assertEqual(empty["spokes"][0]["path_cached"], {"chunks": 0, "bytes": 0})
        self.assertEqual(self.held("data/datasets/a")["cached_chunks"], 0)

        # Warm a/ at the spoke: the spoke holds all of it, and so says the hub.
        r = self.s.post(self.spoke.url + "/api/v1/jobs", json={"type": "warm", "path": "data/datasets/a"})
        self.assertEqual(r.status_code, 201, r.text)
        wait_job(self, self.s, self.spoke.url, r.json()["id"])
        held = self.held("data/datasets/a")
        self.assertEqual((held["path"], held["files"], held["bytes"], held["cached_bytes"]),
                         ("data/datasets/a", 2, a_bytes, a_bytes))
        self.assertEqual(held["cached_chunks"], held["chunks"])
        answer = self.wait_at_hub("data/datasets/a", lambda p: p["chunks"])
        self.assertEqual((answer["path"]["files"], answer["path"]["bytes"], answer["spokes"][0]["path_cached"]),
                         (2, a_bytes, {"chunks": held["chunks"], "bytes": a_bytes}))
        self.assertEqual(answer["path"]["chunks"], held["chunks"])
        # One file of it, and what it has not read.
        x = self.at_hub("data/datasets/a/x.bin")
        self.assertEqual(x["spokes"][0]["path_cached"]["bytes"], len(self.files["a/x.bin"]))
        self.assertEqual(self.at_hub("data/datasets/b")["spokes"][0]["path_cached"], {"chunks": 0, "bytes": 0})
        self.assertEqual(self.held("data/datasets/b/z.bin")["cached_chunks"], 0)
        whole = self.at_hub("data/datasets")
        self.assertEqual(whole["spokes"][0]["path_cached"]["bytes"], a_bytes)
        self.assertGreaterEqual(whole["spokes"][0]["cache_chunks"], held["chunks"])
        self.assertIsNotNone(whole["spokes"][0]["cache_reported"])

        # Evicted at the spoke: the hub learns that too.
        r = self.s.post(self.spoke.url + "/api/v1/cache/evict", json={"path": "data/datasets/a/y.bin"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.held("data/datasets/a")["cached_bytes"], len(self.files["a/x.bin"]))
        answer = self.wait_at_hub("data/datasets/a", lambda p: self.held("data/datasets/a/x.bin")["chunks"])
        self.assertEqual(answer["spokes"][0]["path_cached"]["bytes"], len(self.files["a/x.bin"]))

    def test_bad_requests(self):
        # A path that names nothing (in an export or not) holds no chunks,
        # as a residency rule's dry run covers no files there.
        for path in ("data/datasets/none", "nosuchexport/a"):
            self.assertEqual(self.at_hub(path)["path"],
                             {"path": path, "files": 0, "chunks": 0, "bytes": 0, "complete": True})
        r = self.admin.get(self.hub.url + "/api/v1/hub/spokes", params={"path": "data/../a"})
        self.assertEqual(r.status_code, 400, r.text)
        # A summary that is not one is refused, and the one the spoke sent stays.
        self.wait_at_hub("data/datasets", lambda p: 0)
        r = self.admin.put(self.hub.url + "/hub/v1/cached", data=b"WCS1 not a filter",
                           headers={"Weft-Region": "us-east-1"})
        self.assertEqual((r.status_code, r.json()["error"]["code"]), (400, "bad_request"), r.text)
        r = self.admin.put(self.hub.url + "/hub/v1/cached", headers={"Weft-Region": "us-east-1"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIsNotNone(self.at_hub("data/datasets")["spokes"][0]["path_cached"])
        # Held is for spoke mounts, and for paths that exist.
        r = self.s.get(self.spoke.url + "/api/v1/cache/held/data")
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("not a spoke mount", r.json()["error"]["message"])
        r = self.s.get(self.spoke.url + "/api/v1/cache/held/data/datasets/none")
        self.assertEqual(r.status_code, 404, r.text)


def requests_anonymous():
    import requests
    return requests.Session()


def configure(args):
    global WEFT
    WEFT = args.weft


if __name__ == "__main__":
    run_tests(110, configure)
