#!/usr/bin/env python3
"""Write-back spoke mounts (`"write": "back"`), end to end with a hub
`weft serve` and a spoke (mode available, S3 and REST) reaching it through
the WAN emulator:

- A PUT at the spoke reads back at once (GET, listing with its size) and is
  at the hub soon after; the mount's backlog (REST `writeback`, the
  weft_spoke_writeback_* metrics) empties and its committed figures grow.
  So for an overwrite of a hub file and for a multipart upload.
- The link down: a new object and an overwrite are accepted at once and
  read back at the spoke; the backlog counts both (files, bytes) while the
  hub keeps what it had; it outlives a restart of the spoke; the link up,
  it drains and the hub has both (an outbox file without a record is
  removed at the restart).
- A file uploaded over SFTP (written, then closed: the last writer's
  release parks it) reads back over S3 at once and reaches the hub.
- A PUT answered, then the spoke killed (SIGKILL) with the link down: after
  a restart the backlog holds it and the hub gets the same bytes.
- An overwrite while the link is down of a file whose directory changed
  since the spoke read it replaces it at the hub (no conflict copy).
- A conflict: an object overwritten at the spoke while the link is down and
  at the hub meanwhile; drained, the hub keeps its own version and the
  spoke's beside it under a conflict name.
- A mount without "write" writes through (the hub has a PUT when it
  returns) and says so; mounts added over REST take "write"; a bad value is
  refused by `weft serve` and by REST, naming the field.

    writeback_test.py --weft PATH [unittest arguments]
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import requests
from boto3.s3.transfer import TransferConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubsite import Site, Spoke, hub_put, rest, run_tests, spoke_mount  # noqa: E402
from spoke_ops_test import csv_rows, metric, s3_body, sha  # noqa: E402
from two_spokes_test import MOUNT, hub_get, hub_names  # noqa: E402

WEFT = None
DATASETS = "data/datasets/"  # the hub directory the spoke mounts at /datasets
SPOKE = ("rest", "s3", "sftp")
DRAIN = 20         # seconds a write-back may take to reach the hub over a link that is up
DRAIN_AFTER = 30   # the same once the link is back up after an outage
ACCEPT = 5         # seconds a PUT may take at the spoke while the link is down


def mixed(size):
    """`size` bytes, half random, half compressible text."""
    text = csv_rows((size - size // 2) // 39 + 1)
    return os.urandom(size // 2) + text[:size - size // 2]


def stop(site):
    """Stops a site (cleanups: they run also when setUpClass fails, so no
    process outlives the test holding ctest's output); it exits 0."""
    if site.proc.poll():  # it died: say how before its directory goes
        print(site.log()[-5000:], file=sys.stderr)
    code = site.stop()
    assert code == 0, (site.log_path, code)


def until(test, check, what, seconds):
    """Polls `check` until it returns a true value; fails with `what()`
    after `seconds`."""
    deadline = time.monotonic() + seconds
    while not (value := check()):
        if time.monotonic() > deadline:
            test.fail("not within %d s: %s" % (seconds, what()))
        time.sleep(0.1)
    return value


class WriteBackTest(unittest.TestCase):
    """A hub and a write-back spoke through a link that goes down; the tests
    run in order (their names), each starting with the link up."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        cls.addClassCleanup(stop, cls.hub)
        # Files of the hub that the tests overwrite at the spoke.
        cls.seeds = {"overwrite.csv": csv_rows(20000), "outage.csv": csv_rows(30000),
                     "conflict.txt": b"version one, at the hub\n", "late.csv": csv_rows(5000)}
        for name, body in cls.seeds.items():
            hub_put(cls.hub, DATASETS + name, body)
        cls.link = cls.hub.emulator("--rtt-ms", "10")
        cls.spoke = Spoke(WEFT, cls.hub, "http://" + cls.link.address, mode="available", protocols=SPOKE,
                          write="back")
        cls.addClassCleanup(stop, cls.spoke)
        cls.s3 = cls.spoke.s3()
        cls.addClassCleanup(lambda: cls.s3.close())  # the one in use (a restart replaces it)

    def mount(self):
        with rest(self.spoke) as s:
            return spoke_mount(s, self.spoke)

    def backlog(self):
        """The mount's `writeback` figures."""
        return self.mount()["writeback"]

    def metrics(self):
        """The mount's weft_spoke_writeback_* series, by name."""
        text = requests.get(self.spoke.url + "/metrics").text
        return {name: metric(text, 'weft_spoke_writeback_%s{mount="/datasets"}' % name)
                for name in ("backlog_files", "backlog_bytes", "committed_total")}

    def put(self, key, body):
        r = self.s3.put_object(Bucket="datasets", Key=key, Body=body)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 200, r)

    def assert_reads(self, files):
        """Each object reads at the spoke as `files` says."""
        for key, body in files.items():
            self.assertEqual(sha(s3_body(self.s3, "datasets", key)), sha(body), key)

    def drain(self, files, seconds):
        """Waits until the backlog is empty and the hub holds `files`
        (name: bytes); returns the mount's `writeback` figures."""
        def missing():
            """The names the hub does not hold as `files` says."""
            return [key for key, body in files.items() if hub_get(self.hub, key) != (200, body)]

        def done():
            figures = self.backlog()
            return figures if figures["files"] == 0 and not missing() else None

        def why():
            return "the backlog drained to the hub: backlog %s; not at the hub: %s\n%s" % (
                self.backlog(), missing(), self.spoke.log()[-3000:])
        return until(self, done, why, seconds)

    def assert_metrics_match(self, figures):
        self.assertEqual(self.metrics(), {"backlog_files": figures["files"], "backlog_bytes": figures["bytes"],
                                          "committed_total": figures["committed_files"]})

    def link_down(self):
        self.link.command("down")
        self.addCleanup(self.link.command, "up")

    def test_1_a_put_reads_back_at_once_and_reaches_the_hub(self):
        m = self.mount()
        self.assertEqual((m["mode"], m["write"]), ("available", "back"))
        before = m["writeback"]
        self.assertEqual((before["files"], before["bytes"]), (0, 0))
        self.assertIsInstance(before["last_error"], str)

        body = mixed(3 << 20)
        self.put("first.bin", body)
        self.assert_reads({"first.bin": body})
        listed = {o["Key"]: o["Size"] for o in self.s3.list_objects_v2(Bucket="datasets")["Contents"]}
        self.assertEqual(listed.get("first.bin"), len(body), listed)

        after = self.drain({"first.bin": body}, DRAIN)
        self.assertEqual(after["committed_files"] - before["committed_files"], 1, after)
        self.assertEqual(after["committed_bytes"] - before["committed_bytes"], len(body), after)
        self.assertEqual((after["bytes"], after["oldest_age_s"]), (0, 0), after)
        self.assert_metrics_match(after)

    def test_2_an_overwrite_of_a_hub_file(self):
        self.assert_reads({"overwrite.csv": self.seeds["overwrite.csv"]})
        before = self.backlog()
        body = mixed(2 << 20)
        self.put("overwrite.csv", body)
        self.assert_reads({"overwrite.csv": body})
        after = self.drain({"overwrite.csv": body}, DRAIN)
        self.assertEqual(after["committed_files"] - before["committed_files"], 1, after)
        self.assertEqual([n for n in hub_names(self.hub) if n.startswith("overwrite.csv.")], [])
        self.assert_metrics_match(after)

    def test_3_a_multipart_upload(self):
        body = mixed(20 << 20)
        config = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20)
        self.s3.upload_fileobj(io.BytesIO(body), "datasets", "multipart.bin", Config=config)
        self.assert_reads({"multipart.bin": body})
        after = self.drain({"multipart.bin": body}, DRAIN)
        self.assert_metrics_match(after)

    def test_4_the_backlog_waits_out_an_outage_and_a_restart(self):
        old = self.seeds["outage.csv"]
        # The spoke knows the file and the directory before the link goes.
        self.assert_reads({"outage.csv": old})
        self.s3.list_objects_v2(Bucket="datasets")
        before = self.backlog()
        self.assertEqual(before["files"], 0, before)

        self.link_down()
        files = {"made-offline.bin": mixed(2 << 20), "outage.csv": mixed(3 << 20)}
        started = time.monotonic()
        for key, body in files.items():
            put_at = time.monotonic()
            self.put(key, body)
            self.assertLess(time.monotonic() - put_at, ACCEPT, key)
        self.assert_reads(files)
        size = sum(len(b) for b in files.values())
        queued = self.backlog()
        self.assertEqual((queued["files"], queued["bytes"]), (2, size), queued)
        self.assertGreater(queued["oldest_age_s"], 0, queued)
        self.assertLessEqual(queued["oldest_age_s"], time.monotonic() - started + 1, queued)
        self.assertEqual(queued["committed_files"], before["committed_files"], queued)
        self.assert_metrics_match(queued)
        self.assertEqual(hub_get(self.hub, "made-offline.bin")[0], 404)
        self.assertEqual(hub_get(self.hub, "outage.csv"), (200, old))

        # Restarted with the link still down: the backlog is kept; an outbox
        # file without a record (a crash between parking and recording it:
        # its writer was never answered) is removed.
        outbox = self.spoke.data / "spoke-outbox"
        self.assertEqual(len(list(outbox.iterdir())), 2)
        stray = outbox / "00000000deadbeef"
        stray.write_bytes(b"parked, never recorded")
        self.spoke.restart()
        self.assertFalse(stray.exists())
        self.assertEqual(len(list(outbox.iterdir())), 2)
        self.s3.close()
        type(self).s3 = self.spoke.s3()
        kept = until(self, lambda: (f := self.backlog())["files"] == 2 and f,
                     lambda: "the backlog after a restart: %s" % self.backlog(), ACCEPT)
        self.assertEqual(kept["bytes"], size, kept)
        self.assertGreater(kept["oldest_age_s"], 0, kept)
        self.assertEqual(self.metrics()["backlog_files"], 2)
        self.assertEqual(self.metrics()["backlog_bytes"], size)
        self.assertEqual(hub_get(self.hub, "made-offline.bin")[0], 404)

        self.link.command("up")
        drained = self.drain(files, DRAIN_AFTER)
        self.assertEqual(drained["bytes"], 0, drained)
        self.assertEqual(list(outbox.iterdir()), [])
        self.assertEqual(self.metrics()["backlog_files"], 0)
        self.assert_reads(files)

    def test_5_a_conflict_keeps_both_versions(self):
        self.assert_reads({"conflict.txt": self.seeds["conflict.txt"]})
        self.link_down()
        at_spoke = b"A: written at the spoke while the link was down\n" * 2000
        self.put("conflict.txt", at_spoke)
        self.assert_reads({"conflict.txt": at_spoke})
        self.assertEqual(self.backlog()["files"], 1)
        at_hub = b"B: written at the hub meanwhile\n" * 3000
        hub_put(self.hub, DATASETS + "conflict.txt", at_hub)
        self.link.command("up")

        def kept():
            names = [n for n in hub_names(self.hub) if n.startswith("conflict.txt.conflict-")]
            return names if self.backlog()["files"] == 0 and names else None
        names = until(self, kept, lambda: "the spoke's version beside the hub's: backlog %s, hub %s" % (
            self.backlog(), sorted(hub_names(self.hub))), DRAIN_AFTER)
        self.assertEqual(len(names), 1, names)
        name = names[0]
        self.assertEqual(hub_get(self.hub, "conflict.txt"), (200, at_hub))
        self.assertEqual(hub_get(self.hub, name), (200, at_spoke))
        self.assertEqual(self.backlog()["bytes"], 0)


    def test_7_an_answered_put_outlives_a_crash(self):
        self.s3.list_objects_v2(Bucket="datasets")
        self.link_down()
        body = mixed(3 << 20)
        self.put("crash.bin", body)
        # Killed the moment after the answer: what was answered is durable.
        self.spoke.restart(crash=True)
        self.s3.close()
        type(self).s3 = self.spoke.s3()
        kept = until(self, lambda: (f := self.backlog())["files"] == 1 and f,
                     lambda: "the backlog after a crash: %s" % self.backlog(), ACCEPT)
        self.assertEqual(kept["bytes"], len(body), kept)
        self.link.command("up")
        self.drain({"crash.bin": body}, DRAIN_AFTER)
        self.assert_reads({"crash.bin": body})

    def test_8_an_overwrite_while_the_hub_is_away_after_the_directory_changed(self):
        # The spoke read the file, then its directory changed (a commit of
        # its own): the hub is asked again for names there; while it is
        # away, the overwrite replaces what the hub last said of the name.
        self.assert_reads({"late.csv": self.seeds["late.csv"]})
        other = mixed(1 << 20)
        self.put("late-other.bin", other)
        self.drain({"late-other.bin": other}, DRAIN)
        self.link_down()
        body = mixed(2 << 20)
        self.put("late.csv", body)
        self.link.command("up")
        self.drain({"late.csv": body}, DRAIN_AFTER)
        self.assertEqual([n for n in hub_names(self.hub) if n.startswith("late.csv.")], [])
        self.assert_reads({"late.csv": body})

    def test_6_an_sftp_upload_parks_on_close(self):
        body = mixed(4 << 20)
        transport, sftp = self.spoke.sftp()
        try:
            sftp.putfo(io.BytesIO(body), MOUNT + "sftp-upload.bin")
        finally:
            sftp.close()
            transport.close()
        self.assert_reads({"sftp-upload.bin": body})
        after = self.drain({"sftp-upload.bin": body}, DRAIN)
        self.assert_metrics_match(after)


class WriteThroughTest(unittest.TestCase):
    """A spoke whose configured mount says nothing of "write"; mounts added
    over REST; `weft serve` with a bad "write"."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        cls.addClassCleanup(stop, cls.hub)
        with rest(cls.hub) as s:
            for path in ("data/datasets", "data/other"):
                r = s.post(cls.hub.url + "/api/v1/dirs/" + path)
                assert r.status_code == 201, r.text
        cls.creds = json.loads((cls.hub.data / "credentials.json").read_text())
        cls.spoke = Spoke(WEFT, cls.hub, cls.hub.url, mode="available", protocols=SPOKE)
        cls.addClassCleanup(stop, cls.spoke)
        cls.s3 = cls.spoke.s3()
        cls.addClassCleanup(cls.s3.close)

    def mounts(self):
        with rest(self.spoke) as s:
            r = s.get(self.spoke.url + "/api/v1/spokes")
        self.assertEqual(r.status_code, 200, r.text)
        return {m["local"]: m for m in r.json()["spokes"]}

    def add(self, **fields):
        body = {"local": "/added", "hub": self.hub.url, "remote": "data/other", "credentials": self.creds,
                "mode": "available", **fields}
        with rest(self.spoke) as s:
            return s.post(self.spoke.url + "/api/v1/spokes", json=body)

    def remove(self, local):
        with rest(self.spoke) as s:
            r = s.delete(self.spoke.url + "/api/v1/spokes" + local)
        self.assertEqual(r.status_code, 204, r.text)

    def test_the_default_writes_through(self):
        m = self.mounts()["/datasets"]
        self.assertEqual(m["write"], "through")
        self.assertEqual((m["writeback"]["files"], m["writeback"]["bytes"]), (0, 0), m)
        body = mixed(1 << 20)
        r = self.s3.put_object(Bucket="datasets", Key="through.bin", Body=body)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 200, r)
        self.assertEqual(hub_get(self.hub, "through.bin"), (200, body))  # when the PUT returns

    def test_rest_mounts_take_write(self):
        for write in ("back", "through"):
            r = self.add(write=write)
            self.assertEqual(r.status_code, 201, r.text)
            added = r.json()
            self.assertEqual((added["local"], added["write"]), ("/added", write))
            self.assertEqual(added["writeback"]["files"], 0, added)
            self.assertEqual(self.mounts()["/added"]["write"], write)
            self.remove("/added")
        for bad in ("sideways", 7, ""):
            r = self.add(write=bad)
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn("write", r.json()["error"]["message"], r.text)
        self.assertNotIn("/added", self.mounts())

    def test_weft_serve_refuses_a_bad_write(self):
        with tempfile.TemporaryDirectory(prefix="weft-writeback-") as tmp:
            config = os.path.join(tmp, "weft.json")
            with open(config, "w") as f:
                json.dump({"spokes": [{"local": "/datasets", "hub": self.hub.url, "remote": "data/datasets",
                                       "credentials": str(self.hub.data / "credentials.json"),
                                       "write": "sideways"}]}, f)
            command = [WEFT, "serve", "--data", os.path.join(tmp, "data"), "--config", config,
                       "--rest", "127.0.0.1:0", "--s3", "off", "--nfs", "off", "--smb", "off", "--sftp", "off"]
            r = subprocess.run(command, capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("spokes[0].write", r.stderr)
        self.assertIn("sideways", r.stderr)


def configure(args):
    global WEFT
    WEFT = args.weft


if __name__ == "__main__":
    run_tests(170, configure)
