"""Integration tests of the NFS front end: a real `weft serve --nfs
127.0.0.1:0` driven by libnfs-utils (nfs-ls, nfs-cp, nfs-cat), by nfs_client
(a libnfs C API client that calls every procedure) and, for bad input, by
raw RPC records over a socket. Cross-protocol checks use the REST API.
Standard library only (Debian's python3).

usage: nfs_test.py --weft WEFT --client NFS_CLIENT [unittest args]
WEFT_NFS_COPY_MB sets the size of the large copy (default 1024)."""

import argparse
import base64
import hashlib
import json
import os
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "rest"))
from gateway import Gateway  # noqa: E402  (the REST tests' `weft serve` harness)

WEFT = CLIENT = None
NFS_PROG, MOUNT_PROG, PMAP_PROG = 100003, 100005, 100000


def require_tool(test, name):
    if shutil.which(name) is None:
        test.skipTest("SKIPPED: %s is not installed (Debian package libnfs-utils)" % name)


class NfsCase(unittest.TestCase):
    """One gateway per test class, with NFS and REST listeners."""

    config = None  # the --config of the class's gateway, as a dict

    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(WEFT, protocols=("nfs", "rest"), config=cls.config)
        cls.port = int(cls.gw.endpoints["nfs"].rsplit(":", 1)[1])
        cls.scratch = cls.gw.tmp / "scratch"
        cls.scratch.mkdir()

    @classmethod
    def tearDownClass(cls):
        code = cls.gw.stop()
        assert code == 0, "weft exited with %r" % code

    def url(self, path=""):
        return "nfs://127.0.0.1/data%s?nfsport=%d&mountport=%d&version=3" % (path, self.port, self.port)

    def run_tool(self, *args, timeout=120, check=True):
        r = subprocess.run(args, capture_output=True, timeout=timeout)
        if check and r.returncode != 0:
            self.fail("%s exited with %d:\n%s%s\n--- weft log ---\n%s" % (
                " ".join(map(str, args)), r.returncode, r.stdout.decode(errors="replace"),
                r.stderr.decode(errors="replace"), self.gw.log()[-4000:]))
        return r

    def client(self, *args, timeout=180, check=True):
        return self.run_tool(CLIENT, args[0], str(self.port), *map(str, args[1:]), timeout=timeout, check=check)

    # --- REST, the namespace API over HTTP --------------------------------
    def rest(self, method, path, body=None, auth=None):
        user, password = auth or self.gw.admin
        req = urllib.request.Request(self.gw.url + "/api/v1" + path, data=body, method=method)
        req.add_header("Authorization", "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode())
        if isinstance(body, (bytes, bytearray)) and method == "PUT" and path.startswith("/files/"):
            req.add_header("Content-Type", "application/octet-stream")
        elif body is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def rest_json(self, method, path, doc):
        status, body = self.rest(method, path, json.dumps(doc).encode())
        self.assertLess(status, 300, body)
        return json.loads(body) if body else None


class ProceduresTest(NfsCase):
    def test_every_procedure_through_libnfs(self):
        out = self.client("procedures", "/data").stdout.decode()
        self.assertIn("procedures: all checks passed", out)

    def test_metrics_and_audit_record_nfs_calls(self):
        self.client("procedures", "/data")
        status, body = self.rest("GET", "/audit?protocol=nfs&limit=1000")
        self.assertEqual(status, 200, body)
        records = json.loads(body)["records"]
        ops = {r["op"] for r in records}
        self.assertLessEqual({"MNT", "GETATTR", "WRITE", "COMMIT", "READDIRPLUS", "REMOVE"}, ops)
        self.assertTrue(any(r["result"] == "NFS3ERR_STALE" for r in records))
        req = urllib.request.Request(self.gw.url + "/metrics")
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read().decode()
        self.assertIn('weft_nfs_requests_total{op="WRITE"}', text)
        self.assertIn('weft_nfs_errors_total{op="GETATTR"}', text)
        # File data moved, per direction, as the other protocols count it.
        moved = {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
                 if line.startswith(("weft_nfs_received_bytes_total ", "weft_nfs_sent_bytes_total "))}
        self.assertGreater(moved.get("weft_nfs_received_bytes_total", 0), 0, moved)
        self.assertGreater(moved.get("weft_nfs_sent_bytes_total", 0), 0, moved)

    def test_unmapped_uid_is_refused(self):
        self.client("denied", "/data", 4242, "unmapped")

    def test_read_only_export_refuses_writes(self):
        status, _ = self.rest("POST", "/dirs/data/shared")
        self.assertEqual(status, 201)
        status, _ = self.rest("PUT", "/files/data/shared/readme", b"read me")
        self.assertEqual(status, 201)
        self.rest_json("POST", "/users", {"name": "reader", "password": "reader-pw"})
        self.rest_json("PUT", "/users/reader/ids", {"uid": 4100, "gid": 4100})
        self.rest_json("PUT", "/exports/team", {"path": "/shared", "default_access": "none",
                                                 "users": {"reader": "read_only"}})
        self.client("denied", "/team", 4100, "readonly")
        status, body = self.rest("GET", "/files/data/shared/readme")
        self.assertEqual((status, body), (200, b"read me"))


class RootSquashTest(NfsCase):
    config = {"nfs": {"root_squash": True}}

    def test_uid_0_is_squashed_to_anonymous(self):
        # The administrator has uid 0; squashed, AUTH_SYS uid 0 is nobody,
        # who may not mount a private export (MNT3ERR_ACCES).
        c = Conn(self.port)
        path = b"/data"
        c.send(record(call(1, MOUNT_PROG, 3, 1, struct.pack(">I", len(path)) + path + b"\0" * (-len(path) % 4))))
        xid, acc, rest = accepted(c.reply())
        self.assertEqual((xid, acc, struct.unpack(">I", rest[:4])[0]), (1, 0, 13))
        c.close()


class LibnfsUtilsTest(NfsCase):
    def test_cp_ls_cat(self):
        for tool in ("nfs-cp", "nfs-ls", "nfs-cat"):
            require_tool(self, tool)
        local = self.scratch / "hello.txt"
        local.write_bytes(b"hello over nfs\n" * 1000)
        self.run_tool("nfs-cp", local, self.url("/hello.txt"))
        listing = self.run_tool("nfs-ls", self.url()).stdout.decode()
        self.assertRegex(listing, r"\s15000 hello\.txt")
        cat = self.run_tool("nfs-cat", self.url("/hello.txt")).stdout
        self.assertEqual(cat, local.read_bytes())
        back = self.scratch / "back.txt"
        self.run_tool("nfs-cp", self.url("/hello.txt"), back)
        self.assertEqual(back.read_bytes(), local.read_bytes())

    def test_sub_directory_and_nfs_stat(self):
        require_tool(self, "nfs-cp")
        status, _ = self.rest("POST", "/dirs/data/a/b?parents=true")
        self.assertEqual(status, 201)
        local = self.scratch / "deep.bin"
        local.write_bytes(os.urandom(70000))
        # nfs-cp mounts the parent directory of the file: /data/a/b.
        self.run_tool("nfs-cp", local, self.url("/a/b/deep.bin"))
        status, body = self.rest("GET", "/files/data/a/b/deep.bin")
        self.assertEqual((status, body), (200, local.read_bytes()))
        if shutil.which("nfs-stat"):
            out = self.run_tool("nfs-stat", self.url("/a/b/deep.bin")).stdout.decode()
            self.assertIn("70000", out)
        else:
            print("SKIPPED: nfs-stat is not in this libnfs-utils", file=sys.stderr)

    def test_missing_file_fails_cleanly(self):
        require_tool(self, "nfs-cat")
        r = self.run_tool("nfs-cat", self.url("/no-such-file"), check=False)
        self.assertNotEqual(r.returncode, 0)


class LargeCopyTest(NfsCase):
    def test_large_copy_both_ways(self):
        require_tool(self, "nfs-cp")
        mib = int(os.environ.get("WEFT_NFS_COPY_MB", "1024"))
        local = self.scratch / "large.bin"
        digest = hashlib.sha256()
        block = os.urandom(1 << 20)
        with open(local, "wb") as f:
            for i in range(mib):
                chunk = block[i % 251:] + block[:i % 251]  # every MiB differs
                digest.update(chunk)
                f.write(chunk)
        start = time.monotonic()
        self.run_tool("nfs-cp", local, self.url("/large.bin"), timeout=600)
        put_s = time.monotonic() - start
        back = self.scratch / "large.back"
        start = time.monotonic()
        self.run_tool("nfs-cp", self.url("/large.bin"), back, timeout=600)
        get_s = time.monotonic() - start
        got = hashlib.sha256()
        with open(back, "rb") as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                got.update(b)
        self.assertEqual(got.hexdigest(), digest.hexdigest())
        print("large copy: %d MiB to NFS in %.1f s, back in %.1f s" % (mib, put_s, get_s), file=sys.stderr)
        local.unlink()
        back.unlink()


class BigDirectoryTest(NfsCase):
    def test_ten_thousand_entries(self):
        out = self.client("bigdir", "/data", 10000, timeout=600).stdout.decode()
        self.assertIn("bigdir: all checks passed", out)


class CrossProtocolTest(NfsCase):
    def test_nfs_write_commit_reads_back_over_rest(self):
        local = self.scratch / "model.bin"
        local.write_bytes(os.urandom(5 * (1 << 20) + 12345))
        self.client("put", "/data", "model.bin", local)
        # COMMIT returned: the version is sealed and visible to every protocol.
        status, body = self.rest("GET", "/versions/data/model.bin")
        self.assertEqual(status, 200, body)
        self.assertGreaterEqual(len(json.loads(body)["versions"]), 1)
        status, body = self.rest("GET", "/files/data/model.bin")
        self.assertEqual(status, 200)
        self.assertEqual(hashlib.sha256(body).hexdigest(), hashlib.sha256(local.read_bytes()).hexdigest())

    def test_rest_write_reads_back_over_nfs(self):
        require_tool(self, "nfs-cat")
        data = os.urandom(3 * (1 << 20) + 7)
        status, _ = self.rest("PUT", "/files/data/from-rest.bin", data)
        self.assertEqual(status, 201)
        got = self.run_tool("nfs-cat", self.url("/from-rest.bin")).stdout
        self.assertEqual(got, data)


def record(payload, last=True):
    return struct.pack(">I", len(payload) | (0x80000000 if last else 0)) + payload


def call(xid, prog, vers, proc, args=b"", rpcvers=2, cred=None):
    if cred is None:  # AUTH_SYS as uid 0 (the administrator of a new gateway)
        machine = b"test"
        body = struct.pack(">II", 0, len(machine)) + machine + struct.pack(">III", 0, 0, 0)
        cred = struct.pack(">II", 1, len(body)) + body
    return struct.pack(">IIIIII", xid, 0, rpcvers, prog, vers, proc) + cred + struct.pack(">II", 0, 0) + args


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)

    def send(self, data):
        self.sock.sendall(data)

    def reply(self):
        """One reply record's payload, or None when the server closed."""
        head = self._exactly(4)
        if head is None:
            return None
        (mark,) = struct.unpack(">I", head)
        return self._exactly(mark & 0x7FFFFFFF)

    def _exactly(self, n):
        buf = b""
        while len(buf) < n:
            try:
                b = self.sock.recv(n - len(buf))
            except ConnectionResetError:
                return None
            if not b:
                return None
            buf += b
        return buf

    def close(self):
        self.sock.close()


def accepted(reply):
    """(xid, accept_stat, rest) of an accepted reply."""
    xid, mtype, stat, vflavor, vlen = struct.unpack(">IIIII", reply[:20])
    assert mtype == 1 and stat == 0, reply
    (accept,) = struct.unpack(">I", reply[20:24])
    return xid, accept, reply[24:]


class BadInputTest(NfsCase):
    def setUp(self):
        # Something stored, to show that bad input changes nothing.
        status, _ = self.rest("PUT", "/files/data/keep.txt", b"keep me")
        self.assertIn(status, (200, 201))

    def tearDown(self):
        self.assertEqual(self.rest("GET", "/files/data/keep.txt"), (200, b"keep me"))
        self.still_serving()

    def still_serving(self):
        c = Conn(self.port)
        c.send(record(call(77, NFS_PROG, 3, 0)))
        xid, acc, _ = accepted(c.reply())
        self.assertEqual((xid, acc), (77, 0))
        c.close()

    def test_wrong_program_version_procedure(self):
        c = Conn(self.port)
        c.send(record(call(1, 123456, 1, 0)))
        self.assertEqual(accepted(c.reply())[:2], (1, 1))  # PROG_UNAVAIL
        c.send(record(call(2, NFS_PROG, 4, 0)))
        xid, acc, rest = accepted(c.reply())
        self.assertEqual((xid, acc, struct.unpack(">II", rest)), (2, 2, (3, 3)))  # PROG_MISMATCH 3..3
        c.send(record(call(3, NFS_PROG, 3, 99)))
        self.assertEqual(accepted(c.reply())[:2], (3, 3))  # PROC_UNAVAIL
        c.send(record(call(4, MOUNT_PROG, 3, 42)))
        self.assertEqual(accepted(c.reply())[:2], (4, 3))
        c.send(record(call(5, MOUNT_PROG, 1, 0)))
        self.assertEqual(accepted(c.reply())[:2], (5, 2))
        c.send(record(call(6, NFS_PROG, 3, 0, rpcvers=3)))
        r = c.reply()
        self.assertEqual(struct.unpack(">IIIIII", r), (6, 1, 1, 0, 2, 2))  # MSG_DENIED RPC_MISMATCH 2..2
        c.send(record(call(7, NFS_PROG, 3, 1, cred=struct.pack(">II", 6, 0))))  # RPCSEC_GSS
        r = c.reply()
        self.assertEqual(struct.unpack(">IIIII", r), (7, 1, 1, 1, 5))  # AUTH_ERROR AUTH_TOOWEAK
        c.send(record(call(8, PMAP_PROG, 2, 3, struct.pack(">IIII", NFS_PROG, 3, 6, 0))))
        xid, acc, rest = accepted(c.reply())
        self.assertEqual((xid, acc, struct.unpack(">I", rest)[0]), (8, 0, self.port))
        c.send(record(call(9, PMAP_PROG, 2, 4)))  # DUMP: portmapper, MOUNT and NFS on this port
        xid, acc, rest = accepted(c.reply())
        maps = set()
        while struct.unpack(">I", rest[:4])[0] == 1:
            maps.add(struct.unpack(">IIII", rest[4:20]))
            rest = rest[20:]
        self.assertEqual(maps, {(PMAP_PROG, 2, 6, self.port), (MOUNT_PROG, 3, 6, self.port),
                                (NFS_PROG, 3, 6, self.port)})
        c.close()

    def test_garbage_arguments(self):
        c = Conn(self.port)
        # GETATTR with a handle length past the end; with trailing bytes; a
        # WRITE with a bad stable_how; an AUTH_SYS body cut short.
        c.send(record(call(10, NFS_PROG, 3, 1, struct.pack(">I", 64) + b"x" * 10)))
        self.assertEqual(accepted(c.reply())[:2], (10, 4))  # GARBAGE_ARGS
        c.send(record(call(11, NFS_PROG, 3, 1, struct.pack(">I", 4) + b"abcd" + b"tail")))
        self.assertEqual(accepted(c.reply())[:2], (11, 4))
        write = struct.pack(">I", 4) + b"abcd" + struct.pack(">QII", 0, 1, 9) + struct.pack(">I", 1) + b"x\0\0\0"
        c.send(record(call(12, NFS_PROG, 3, 7, write)))
        self.assertEqual(accepted(c.reply())[:2], (12, 4))
        c.send(record(call(13, NFS_PROG, 3, 1, cred=struct.pack(">II", 1, 8) + b"\0\0\0\0\0\0\0\x09")))
        self.assertEqual(struct.unpack(">IIIII", c.reply()), (13, 1, 1, 1, 1))  # AUTH_BADCRED
        c.send(record(call(14, MOUNT_PROG, 3, 1, struct.pack(">I", 5000) + b"/data")))
        self.assertEqual(accepted(c.reply())[:2], (14, 4))
        # A forged handle of the right shape: NFS3ERR_BADHANDLE.
        c.send(record(call(15, NFS_PROG, 3, 1, struct.pack(">I", 32) + os.urandom(32))))
        xid, acc, rest = accepted(c.reply())
        self.assertEqual((xid, acc, struct.unpack(">I", rest[:4])[0]), (15, 0, 10001))
        c.close()

    def test_garbage_and_truncated_records(self):
        c = Conn(self.port)
        c.send(record(os.urandom(3)))          # too short for an xid: no reply
        c.send(record(struct.pack(">II", 20, 1) + os.urandom(40)))  # a REPLY, not a call: no reply
        c.send(record(call(21, NFS_PROG, 3, 0)[:14]))  # header cut short
        self.assertEqual(struct.unpack(">IIIII", c.reply()), (21, 1, 1, 1, 1))
        # A call split over several fragments is fine.
        msg = call(22, NFS_PROG, 3, 0)
        c.send(record(msg[:5], last=False) + record(msg[5:9], last=False) + record(msg[9:]))
        self.assertEqual(accepted(c.reply())[:2], (22, 0))
        c.close()
        for _ in range(20):  # random bytes, then a hang-up mid-record
            c = Conn(self.port)
            c.send(os.urandom(200))
            c.close()
        c = Conn(self.port)
        c.send(struct.pack(">I", 0x80000000 | 1000) + b"only part of it")
        c.close()

    def test_oversized_record_answered_garbage_args(self):
        other = Conn(self.port)
        c = Conn(self.port)
        # A 64 MiB WRITE call: over the limit, read and dropped; the call is
        # told GARBAGE_ARGS and the connection serves the next call.
        header = call(29, NFS_PROG, 3, 7)
        c.send(struct.pack(">I", 0x80000000 | (64 << 20)) + header)
        left = (64 << 20) - len(header)
        while left:
            c.send(b"x" * min(left, 1 << 20))
            left -= min(left, 1 << 20)
        self.assertEqual(accepted(c.reply())[:2], (29, 4))
        c.send(record(call(31, NFS_PROG, 3, 0)))
        self.assertEqual(accepted(c.reply())[:2], (31, 0))
        c.close()
        other.send(record(call(30, NFS_PROG, 3, 0)))
        self.assertEqual(accepted(other.reply())[:2], (30, 0))
        other.close()

    def test_many_calls_in_flight_on_one_connection(self):
        c = Conn(self.port)
        c.send(b"".join(record(call(1000 + i, NFS_PROG, 3, 0)) for i in range(500)))
        xids = set()
        for _ in range(500):
            xid, acc, _ = accepted(c.reply())
            self.assertEqual(acc, 0)
            xids.add(xid)
        self.assertEqual(xids, set(range(1000, 1500)))
        c.close()


class RestartTest(NfsCase):
    def restart(self, sig):
        self.gw.proc.send_signal(sig)
        code = self.gw.proc.wait(timeout=20)
        if sig == signal.SIGTERM:
            self.assertEqual(code, 0)
        args = [WEFT, "serve", "--data", str(self.gw.data), "--nfs", "127.0.0.1:0", "--rest", "127.0.0.1:0",
                "--s3", "off", "--smb", "off", "--sftp", "off"]
        with open(self.gw.log_path, "ab") as log:
            self.gw.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.gw.endpoints = self.gw._wait_for_endpoints()
        type(self).port = int(self.gw.endpoints["nfs"].rsplit(":", 1)[1])
        self.gw.url = "http://" + self.gw.endpoints["rest"]

    def probe(self, name):
        out = self.client("probe", "/data", name).stdout.decode()
        return dict(kv.split("=") for kv in out.split() if "=" in kv)

    def test_handles_survive_a_restart_and_the_write_verifier_changes(self):
        status, _ = self.rest("PUT", "/files/data/stable.txt", b"stable")
        self.assertEqual(status, 201)
        first = self.probe("stable.txt")
        self.assertLessEqual(len(first["handle"]) // 2, 64)
        self.restart(signal.SIGTERM)
        self.client("getattr", first["handle"])
        second = self.probe("stable.txt")
        self.assertEqual(first["handle"], second["handle"])
        self.assertNotEqual(first["verifier"], second["verifier"])
        # Removed: the old handle is stale, not another file's.
        self.assertEqual(self.rest("DELETE", "/files/data/stable.txt")[0], 204)
        r = self.client("getattr", first["handle"], check=False)
        self.assertIn("status=70", r.stdout.decode())

    def test_committed_data_survives_kill_9(self):
        local = self.scratch / "durable.bin"
        local.write_bytes(os.urandom(9 * (1 << 20) + 3))
        self.client("put", "/data", "durable.bin", local)  # returns after COMMIT
        self.restart(signal.SIGKILL)
        status, body = self.rest("GET", "/files/data/durable.bin")
        self.assertEqual(status, 200)
        self.assertEqual(hashlib.sha256(body).hexdigest(), hashlib.sha256(local.read_bytes()).hexdigest())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--client", required=True)
    opts, rest = parser.parse_known_args()
    WEFT, CLIENT = opts.weft, opts.client
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
