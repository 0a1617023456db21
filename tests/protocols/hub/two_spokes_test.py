#!/usr/bin/env python3
"""Writes at spokes (backend/hub/SPOKES.md), end to end: a hub `weft serve`
and two spoke `weft serve`s mounting its data/datasets at /datasets, each
reaching the hub through its own WAN emulator (10 ms RTT). Files written at
the hub read the same at spoke 1 over S3 and at spoke 2 over SFTP, NFS and
SMB; two spokes writing one file from the same version: one wins, the other's
client hears an error and its bytes are at the hub under a conflict name;
changes at spoke 1 (S3, SFTP) and spoke 2 (NFS, SMB) are at the hub when they
return and seen by the other spoke; a small change to a large file sends
only the chunks that changed.

    two_spokes_test.py --weft PATH --nfs-client PATH [unittest arguments]
"""

import hashlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import botocore.exceptions
import paramiko

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubsite import Site, Spoke, hub_put, rest, run_tests, spoke_mount  # noqa: E402
from gateway import close_checked  # noqa: E402  (on the path hubsite sets)

WEFT = None
DATASETS = "data/datasets/"  # the hub directory the spokes mount
NFS_CLIENT = None  # tests/protocols/nfs/nfs_client.cpp
FEED_WAIT = 15  # seconds a change may take to reach a spoke's listings
MOUNT = "/data/datasets/"


def hub_get(hub, path):
    """(status, body) of a file at the hub."""
    with rest(hub) as s:
        r = s.get(hub.url + "/api/v1/files/data/datasets/" + path)
        return r.status_code, r.content


def hub_names(hub, path=""):
    with rest(hub) as s:
        r = s.get(hub.url + "/api/v1/dirs/data/datasets/" + path, params={"limit": "1000"})
        assert r.status_code == 200, r.text
        return {e["name"]: e["type"] for e in r.json()["entries"]}


def sftp_read(sftp, path):
    with sftp.open(MOUNT + path, "rb") as f:
        return f.read()


def nfs_url(site, path):
    port = int(site.endpoints["nfs"].rsplit(":", 1)[1])
    return "nfs://127.0.0.1%s%s?nfsport=%d&mountport=%d&version=3" % (MOUNT, path, port, port)


def need(tool, test):
    if not shutil.which(tool):
        test.skipTest(tool + " is not installed")


def run(command, test, site):
    r = subprocess.run(command, capture_output=True, timeout=60)
    test.assertEqual(r.returncode, 0, (r.stdout + r.stderr).decode(errors="replace")[-3000:] + site.log()[-3000:])
    return r.stdout


def smbclient(site, commands, test, cwd):
    need("smbclient", test)
    host, port = site.endpoints["smb"].rsplit(":", 1)
    r = subprocess.run(["smbclient", "//%s/data" % host, "-p", port, "-m", "SMB3_11", "--client-protection=sign",
                        "-U", "%s%%%s" % site.admin, "-c", commands],
                       capture_output=True, text=True, timeout=60, cwd=cwd)
    text = r.stdout + r.stderr
    test.assertTrue(r.returncode == 0 and "NT_STATUS_" not in text, text + site.log()[-3000:])


def wait_for(predicate, what):
    deadline = time.monotonic() + FEED_WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("not within %d s: %s" % (FEED_WAIT, what))
        time.sleep(0.05)


class TwoSpokes(unittest.TestCase):
    """A hub and two spokes, each through its own emulated WAN link."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        with rest(cls.hub) as s:  # the directory the spokes mount
            r = s.post(cls.hub.url + "/api/v1/dirs/data/datasets")
            assert r.status_code == 201, r.text
        cls.links = [cls.hub.emulator("--rtt-ms", "10") for _ in range(2)]
        cls.spokes = []
        cls.scratch = pathlib.Path(tempfile.mkdtemp(prefix="weft-two-spokes-"))
        for link, region, protocols in ((cls.links[0], "eu-west-1", ("rest", "s3", "sftp")),
                                        (cls.links[1], "ap-south-1", ("rest", "sftp", "nfs", "smb"))):
            cls.spokes.append(Spoke(WEFT, cls.hub, "http://" + link.address, protocols=protocols, region=region))
        cls.s3 = cls.spokes[0].s3()
        cls.sessions = [spoke.sftp() for spoke in cls.spokes]
        cls.sftp1, cls.sftp2 = (sftp for _, sftp in cls.sessions)

    @classmethod
    def tearDownClass(cls):
        for transport, sftp in cls.sessions:
            sftp.close()
            transport.close()
        cls.s3.close()
        for site in (*cls.spokes, cls.hub):
            if site.proc.poll():  # it died: say how before its directory goes
                print(site.log()[-5000:], file=sys.stderr)
        codes = [site.stop() for site in (*cls.spokes, cls.hub)]
        shutil.rmtree(cls.scratch, ignore_errors=True)
        assert codes == [0, 0, 0], codes

    def up_bytes(self, link):
        return link.command("stats")["up_bytes"]


class ReadEverywhereTest(TwoSpokes):
    def test_hub_files_read_the_same_at_both_spokes(self):
        files = {
            "hello.txt": b"hello from the hub\n",
            "dir/mixed.bin": os.urandom(3 << 20) + b"z" * (1 << 20),
        }
        for path, body in files.items():
            hub_put(self.hub, DATASETS + path, body)
        for path, body in files.items():
            with self.subTest(path=path):
                got = self.s3.get_object(Bucket="datasets", Key=path)["Body"].read()
                self.assertEqual(hashlib.sha256(got).digest(), hashlib.sha256(body).digest())
                self.assertEqual(sftp_read(self.sftp2, path), body)
        need("nfs-cat", self)
        for path, body in files.items():
            self.assertEqual(run(["nfs-cat", nfs_url(self.spokes[1], path)], self, self.spokes[1]), body)
        smbclient(self.spokes[1], "cd datasets/dir; get mixed.bin", self, self.scratch)
        self.assertEqual((self.scratch / "mixed.bin").read_bytes(), files["dir/mixed.bin"])


class ConflictTest(TwoSpokes):
    def test_two_spokes_write_one_version_one_wins_the_other_is_kept(self):
        hub_put(self.hub, DATASETS + "shared.txt", b"version one\n")
        bodies = [b"from spoke one\n", b"from spoke two, longer\n"]
        # Both open the version the hub has, and write.
        handles = [sftp.open(MOUNT + "shared.txt", "r+") for sftp in (self.sftp1, self.sftp2)]
        for f, body in zip(handles, bodies):
            f.write(body)
            f.flush()
        # Both close at once: the hub decides.
        outcomes = [None, None]
        start = threading.Barrier(2)

        def close(i):
            start.wait()
            try:
                close_checked(handles[i])
                outcomes[i] = "ok"
            except IOError as e:
                outcomes[i] = e

        threads = [threading.Thread(target=close, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(sorted(o == "ok" for o in outcomes), [False, True], outcomes)
        winner = outcomes.index("ok")
        loser = 1 - winner
        self.assertEqual(hub_get(self.hub, "shared.txt"), (200, bodies[winner]))
        region = ("eu-west-1", "ap-south-1")[loser]
        kept = [n for n in hub_names(self.hub) if n.startswith("shared.txt.conflict-%s-" % region)]
        self.assertEqual(len(kept), 1, hub_names(self.hub))
        self.assertEqual(hub_get(self.hub, kept[0]), (200, bodies[loser]))
        self.assertIn("kept as", self.spokes[loser].log())
        # Every site reads what won (the loser too: close-to-open).
        for sftp in (self.sftp1, self.sftp2):
            self.assertEqual(sftp_read(sftp, "shared.txt"), bodies[winner])

    def test_a_write_over_s3_conflicting_with_a_newer_version_is_refused(self):
        """An S3 PUT replaces the version its key held when it began; one
        committed meanwhile elsewhere makes it fail 409, its body kept."""
        hub_put(self.hub, DATASETS + "object.txt", b"first\n")
        f = self.sftp2.open(MOUNT + "object.txt", "r+")  # spoke 2 starts from version 1
        f.write(b"spoke two wrote this\n")
        self.s3.put_object(Bucket="datasets", Key="object.txt", Body=b"spoke one's PUT\n")
        with self.assertRaises(IOError):
            close_checked(f)
        self.assertEqual(hub_get(self.hub, "object.txt"), (200, b"spoke one's PUT\n"))
        kept = [n for n in hub_names(self.hub) if n.startswith("object.txt.conflict-ap-south-1-")]
        self.assertEqual(len(kept), 1)
        self.assertEqual(hub_get(self.hub, kept[0]), (200, b"spoke two wrote this\n"))


class NamespaceChangesTest(TwoSpokes):
    def test_changes_at_spoke_one_are_at_the_hub_and_at_spoke_two(self):
        self.s3.put_object(Bucket="datasets", Key="made/at/spoke1.txt", Body=b"put over s3\n")
        self.sftp1.mkdir(MOUNT + "newdir")
        with self.sftp1.open(MOUNT + "newdir/f.txt", "wb") as f:
            f.write(b"written over sftp at spoke one\n")
        self.sftp1.rename(MOUNT + "newdir/f.txt", MOUNT + "newdir/g.txt")
        self.sftp1.symlink("g.txt", MOUNT + "newdir/link")
        self.sftp1.chmod(MOUNT + "newdir/g.txt", 0o600)
        self.sftp1.truncate(MOUNT + "newdir/g.txt", 7)
        self.sftp1.remove(MOUNT + "made/at/spoke1.txt")
        self.sftp1.rmdir(MOUNT + "made/at")
        # The writer sees its changes at once.
        self.assertEqual(sftp_read(self.sftp1, "newdir/g.txt"), b"written")
        self.assertEqual(sorted(self.sftp1.listdir(MOUNT + "newdir")), ["g.txt", "link"])
        # The hub has them when the calls return.
        self.assertEqual(hub_names(self.hub, "newdir"), {"g.txt": "file", "link": "symlink"})
        self.assertEqual(hub_names(self.hub, "made"), {})
        self.assertEqual(hub_get(self.hub, "newdir/g.txt"), (200, b"written"))
        with rest(self.hub) as s:
            r = s.get(self.hub.url + "/api/v1/stat/data/datasets/newdir/g.txt")
            self.assertEqual(r.json()["mode"], "0600")
        # Spoke 2 opens what spoke 1 closed (close-to-open: no waiting)...
        self.assertEqual(sftp_read(self.sftp2, "newdir/g.txt"), b"written")
        self.assertEqual(self.sftp2.readlink(MOUNT + "newdir/link"), "g.txt")
        # ... and its listings follow through the feed.
        wait_for(lambda: sorted(self.sftp2.listdir(MOUNT + "newdir")) == ["g.txt", "link"], "spoke 2's listing")
        wait_for(lambda: self.sftp2.listdir(MOUNT + "made") == [], "spoke 2's listing of made")

    def test_an_open_sees_what_another_spoke_closed_before_it(self):
        """Close-to-open: spoke 2 has the file's attributes cached; each
        version spoke 1 commits is what spoke 2's next open reads, at once
        (the feed alone would take tens of milliseconds to say)."""
        self.s3.put_object(Bucket="datasets", Key="c2o.txt", Body=b"version 0\n")
        self.assertEqual(sftp_read(self.sftp2, "c2o.txt"), b"version 0\n")
        for i in range(1, 11):
            body = b"version %d\n" % i
            self.s3.put_object(Bucket="datasets", Key="c2o.txt", Body=body)
            self.assertEqual(sftp_read(self.sftp2, "c2o.txt"), body)

    def test_nfs_and_smb_writes_at_spoke_two_reach_the_hub_and_spoke_one(self):
        need("nfs-cp", self)
        body = os.urandom(300000) + b"over nfs\n"
        local = self.scratch / "by-nfs.bin"
        local.write_bytes(body)
        run(["nfs-cp", str(local), nfs_url(self.spokes[1], "by-nfs.bin")], self, self.spokes[1])
        self.assertEqual(hub_get(self.hub, "by-nfs.bin"), (200, body))
        # Spoke 1 replaces it; spoke 2's NFS write handle (kept open a few
        # seconds between NFS calls) starts from that version, no conflict.
        # (nfs_client: an UNCHECKED CREATE, WRITEs over the old bytes, COMMIT.)
        self.s3.put_object(Bucket="datasets", Key="by-nfs.bin", Body=b"replaced at spoke one\n")
        body = os.urandom(400000) + b"over nfs again\n"
        local.write_bytes(body)
        port = self.spokes[1].endpoints["nfs"].rsplit(":", 1)[1]
        run([NFS_CLIENT, "put", port, MOUNT.rstrip("/"), "by-nfs.bin", str(local)], self, self.spokes[1])
        self.assertEqual(hub_get(self.hub, "by-nfs.bin"), (200, body))
        self.assertNotIn("by-nfs.bin.conflict", " ".join(hub_names(self.hub)))
        smb_body = b"over smb\n" * 10000
        (self.scratch / "by-smb.txt").write_bytes(smb_body)
        smbclient(self.spokes[1], "cd datasets; put by-smb.txt; rename by-smb.txt smb.txt", self, self.scratch)
        self.assertEqual(hub_get(self.hub, "smb.txt"), (200, smb_body))
        self.assertEqual(hub_get(self.hub, "by-smb.txt")[0], 404)
        self.assertEqual(self.s3.get_object(Bucket="datasets", Key="by-nfs.bin")["Body"].read(), body)
        self.assertEqual(self.s3.get_object(Bucket="datasets", Key="smb.txt")["Body"].read(), smb_body)
        # A name taken at the hub is taken at every spoke.
        with self.assertRaises(IOError):
            self.sftp1.mkdir(MOUNT + "smb.txt")
        self.s3.delete_object(Bucket="datasets", Key="smb.txt")
        with self.assertRaises(botocore.exceptions.ClientError) as e:
            self.s3.head_object(Bucket="datasets", Key="smb.txt")
        self.assertEqual(e.exception.response["Error"]["Code"], "404")
        self.assertEqual(hub_get(self.hub, "smb.txt")[0], 404)


class DeltaCommitTest(TwoSpokes):
    def test_a_small_change_to_a_large_file_sends_only_what_changed(self):
        size = 20 << 20
        body = bytearray(os.urandom(size))
        link = self.links[0]
        before = self.up_bytes(link)
        with self.sftp1.open(MOUNT + "large.bin", "wb") as f:
            f.set_pipelined(True)
            for at in range(0, size, 1 << 20):
                f.write(bytes(body[at:at + (1 << 20)]))
        first = self.up_bytes(link) - before
        self.assertGreater(first, size)
        # A hundred bytes in the middle: a chunk or two change.
        patch = b"p" * 100
        body[10 << 20:(10 << 20) + 100] = patch
        before = self.up_bytes(link)
        down_before = link.command("stats")["down_bytes"]
        f = self.sftp1.open(MOUNT + "large.bin", "r+")
        f.seek(10 << 20)
        f.write(patch)
        close_checked(f)
        second = self.up_bytes(link) - before
        print("\nBENCH spoke_commit_20MiB_up_bytes value=%d unit=bytes" % first, flush=True)
        print("BENCH spoke_commit_100B_change_up_bytes value=%d unit=bytes" % second, flush=True)
        self.assertLess(second, 1 << 20)  # at most a few 256 KiB chunks, and references
        # The writer's starting content came from its own cache, not the WAN.
        self.assertLess(link.command("stats")["down_bytes"] - down_before, 256 << 10)
        status, at_hub = hub_get(self.hub, "large.bin")
        self.assertEqual(status, 200)
        self.assertEqual(hashlib.sha256(at_hub).digest(), hashlib.sha256(body).digest())
        self.assertEqual(hashlib.sha256(sftp_read(self.sftp2, "large.bin")).digest(), hashlib.sha256(body).digest())


def hub_metric(hub, name):
    import requests
    for line in requests.get("http://%s/metrics" % hub.rest).text.splitlines():
        if line.startswith(name + " "):
            return float(line.rpartition(" ")[2])
    return 0.0


class LeaseTest(TwoSpokes):
    """Close-to-open without a round trip per open (backend/hub/PROTOCOL.md,
    "Leases"): a change at the hub returns once every spoke holding a lease
    has applied it, so a spoke serves opens from what its feed applied."""

    def feed(self, spoke):
        with rest(spoke) as s:
            return spoke_mount(s, spoke)["feed"]

    def s3_get(self, key):
        return self.s3.get_object(Bucket="datasets", Key=key)["Body"].read()

    def test_s3_gets_see_each_version_closed_before_them(self):
        """Spoke 1 has the objects' metadata cached; each version the hub or
        spoke 2 (SFTP) closes is what spoke 1's next GET returns, for a small
        object (read whole) and a large one (streamed), under spoke 1's
        lease: it asks the hub nothing (the feed alone takes tens of
        milliseconds to bring a change)."""
        wait_for(lambda: self.feed(self.spokes[0])["lease"], "spoke 1's lease")
        sizes = {"lease/small.txt": 100, "lease/large.bin": 300 << 10}
        for key, size in sizes.items():
            hub_put(self.hub, DATASETS + key, b"0" * size)
            self.assertEqual(self.s3_get(key), b"0" * size)
        before = self.feed(self.spokes[0])
        gets = 0
        for i in range(1, 16):
            for key, size in sizes.items():
                body = os.urandom(size)
                if i % 2:
                    hub_put(self.hub, DATASETS + key, body)
                else:
                    with self.sftp2.open(MOUNT + key, "wb") as f:
                        f.write(body)
                self.assertEqual(self.s3_get(key), body, "%s, version %d" % (key, i))
                gets += 1
        after = self.feed(self.spokes[0])
        self.assertTrue(after["lease"], after)
        self.assertGreaterEqual(after["leased_calls"] - before["leased_calls"], gets)
        # A lease lapses only on a stall of seconds (a loaded machine).
        self.assertLess(after["log_round_trips"] - before["log_round_trips"], gets // 4, after)

    def test_a_stopped_spoke_holds_changes_back_only_until_its_lease_ends(self):
        """Spoke 1 stops (SIGSTOP) without giving its lease up: a change at
        the hub waits for it until the lease ends (a few seconds, not for
        ever), and once spoke 1 runs again its next GET, holding no lease,
        asks the hub and reads the new version."""
        key = "lease/stopped.txt"
        wait_for(lambda: self.feed(self.spokes[0])["lease"], "spoke 1's lease")
        hub_put(self.hub, DATASETS + key, b"before the stop\n")
        self.assertEqual(self.s3_get(key), b"before the stop\n")
        expiries = hub_metric(self.hub, "weft_hub_lease_expiries_total")
        pid = self.spokes[0].proc.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            hub_put(self.hub, DATASETS + key, b"while it was stopped\n")
            waited = time.monotonic() - began
        finally:
            os.kill(pid, signal.SIGCONT)
        # The lease had 2 to 3 s left (renewed every second, for 3 s).
        self.assertGreater(waited, 1.5)
        self.assertLess(waited, 6)
        self.assertGreater(hub_metric(self.hub, "weft_hub_lease_expiries_total"), expiries)
        self.assertEqual(self.s3_get(key), b"while it was stopped\n")
        wait_for(lambda: self.feed(self.spokes[0])["lease"], "spoke 1's lease again")


def configure(args):
    global WEFT, NFS_CLIENT
    WEFT = args.weft
    NFS_CLIENT = args.nfs_client


if __name__ == "__main__":
    run_tests(160, configure, "--nfs-client")
