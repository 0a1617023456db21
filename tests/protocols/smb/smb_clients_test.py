#!/usr/bin/env python3
"""The SMB front end driven by real clients: `weft serve` on port 0, then
Samba's smbclient over SMB 2.1, 3.0 and 3.1.1 with signing required (and
with encryption), boto3 over S3 for the cross-protocol round trips, and a
small byte-level client (smb2_raw.py) for the bad input that real clients
never send.

A client that is not installed makes its tests print a SKIP line and pass.

Usage: smb_clients_test.py --weft PATH [--large-mib N] [unittest arguments]
"""

import argparse
import filecmp
import json
import os
import pathlib
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smb2_raw  # noqa: E402

WEFT = None
LIBSMBCLIENT_TEST = None
LARGE_MIB = 256
START_TIMEOUT = 30
DIALECTS = ("SMB2", "SMB3", "SMB3_11")


def skip(reason):
    print("SKIP: " + reason, flush=True)
    raise unittest.SkipTest(reason)


class Gateway:
    """One `weft serve` with the SMB and S3 listeners, in its own data dir."""

    def __init__(self, data):
        self.data = pathlib.Path(data)
        self.proc = None

    def start(self):
        self.err = open(str(self.data) + ".stderr", "ab")
        self.proc = subprocess.Popen(
            [WEFT, "serve", "--data", str(self.data), "--smb", "127.0.0.1:0", "--s3", "127.0.0.1:0",
             "--rest", "127.0.0.1:0", "--nfs", "off", "--sftp", "off"],
            stdout=subprocess.DEVNULL, stderr=self.err)
        path = self.data / "endpoints.json"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if path.exists():
                doc = json.loads(path.read_text())
                if doc.get("pid") == self.proc.pid:
                    self.host, port = doc["smb"].rsplit(":", 1)
                    self.port = int(port)
                    self.s3_url = "http://" + doc["s3"]
                    self.rest_url = "http://" + doc["rest"]
                    creds = json.loads((self.data / "credentials.json").read_text())
                    self.user, self.password = creds["user"], creds["password"]
                    self.s3_keys = (creds["access_key_id"], creds["secret_access_key"])
                    return self
            if self.proc.poll() is not None:
                raise AssertionError("weft exited with %d" % self.proc.returncode)
            time.sleep(0.05)
        raise AssertionError("no endpoints.json after %d s" % START_TIMEOUT)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


GW = None
TMP = None


def setUpModule():
    global GW, TMP
    TMP = tempfile.mkdtemp(prefix="weft-smb-clients-")
    GW = Gateway(os.path.join(TMP, "data")).start()


def tearDownModule():
    if GW:
        GW.stop()
    shutil.rmtree(TMP, ignore_errors=True)


def smbclient_command(commands, dialect="SMB3_11", protection="sign", password=None, share="data", options=()):
    """The smbclient command line that runs `commands` with signing (or
    encryption) required, and smb.conf `options` ("name=value")."""
    if not shutil.which("smbclient"):
        skip("smbclient is not installed")
    return ["smbclient", "//%s/%s" % (GW.host, share), "-p", str(GW.port), "-m", dialect,
            "--client-protection=" + protection, "-U", "%s%%%s" % (GW.user, password or GW.password),
            *["--option=" + o for o in options], "-c", commands]


def smbclient(commands, dialect="SMB3_11", protection="sign", password=None, share="data", timeout=300,
              cwd=None, check=True, options=()):
    """Runs smbclient_command(...); returns its output."""
    cmd = smbclient_command(commands, dialect, protection, password, share, options)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    text = out.stdout + out.stderr
    if check and (out.returncode != 0 or "NT_STATUS_" in text):
        raise AssertionError("smbclient %s failed (%d):\n%s" % (commands, out.returncode, text))
    return text


def random_file(path, size, seed):
    rng = random.Random(seed)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 1 << 20)
            f.write(rng.randbytes(n))
            left -= n


class SmbclientTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(dir=TMP))

    def test_operations_per_dialect(self):
        """put/get, ls, mkdir, rename, allinfo, rm and rmdir on every dialect."""
        src = self.dir / "src.bin"
        random_file(src, 5 * 1024 * 1024 + 123, 1)
        for dialect in DIALECTS:
            with self.subTest(dialect=dialect):
                top = "ops-" + dialect
                back = self.dir / ("back-" + dialect)
                smbclient("mkdir %s; cd %s; put %s f.bin; mkdir sub; rename f.bin sub\\g.bin; get sub\\g.bin %s"
                          % (top, top, src, back), dialect=dialect)
                self.assertTrue(filecmp.cmp(src, back, shallow=False))
                listing = smbclient("cd %s\\sub; ls" % top, dialect=dialect)
                self.assertIn("g.bin", listing)
                self.assertIn(str(src.stat().st_size), listing)
                info = smbclient("allinfo %s\\sub\\g.bin" % top, dialect=dialect, check=False)
                self.assertIn("write_time:", info)
                self.assertIn("stream: [::$DATA], %d bytes" % src.stat().st_size, info)
                smbclient("cd %s; rm sub\\g.bin; rmdir sub" % top, dialect=dialect)
                listing = smbclient("ls %s\\*" % top, dialect=dialect)
                self.assertNotIn("sub", listing)
                smbclient("rmdir %s" % top, dialect=dialect)
                missing = smbclient("ls %s" % top, dialect=dialect, check=False)
                self.assertIn("NT_STATUS_NO_SUCH_FILE", missing)

    def test_large_file(self):
        """put and get of a large file, compared byte for byte."""
        src = self.dir / "large.bin"
        random_file(src, LARGE_MIB << 20, 2)
        back = self.dir / "large.back"
        started = time.monotonic()
        smbclient("put %s large.bin" % src)
        smbclient("get large.bin %s" % back)
        print("large file %d MiB put+get in %.1f s" % (LARGE_MIB, time.monotonic() - started), flush=True)
        self.assertTrue(filecmp.cmp(src, back, shallow=False))
        smbclient("rm large.bin")

    def test_many_files(self):
        """mput and mget of 1,000 files."""
        up = self.dir / "up"
        down = self.dir / "down"
        up.mkdir()
        down.mkdir()
        rng = random.Random(3)
        for i in range(1000):
            (up / ("f%04d.dat" % i)).write_bytes(rng.randbytes(rng.randrange(0, 8192)))
        smbclient("mkdir many; cd many; prompt off; mput *", cwd=str(up), dialect="SMB3")
        smbclient("cd many; prompt off; mget *", cwd=str(down), dialect="SMB3")
        names = sorted(p.name for p in down.iterdir())
        self.assertEqual(len(names), 1000)
        match, mismatch, errors = filecmp.cmpfiles(up, down, names, shallow=False)
        self.assertEqual((mismatch, errors), ([], []))
        smbclient("cd many; prompt off; mask *; del *; cd ..; rmdir many")

    def test_encryption(self):
        """SMB 3.0 (AES-128-CCM) and 3.1.1 sessions with encryption required;
        on 3.1.1 each cipher alone, which the server must then choose."""
        src = self.dir / "enc.bin"
        random_file(src, 3 * 1024 * 1024, 4)
        for dialect, cipher in (("SMB3_00", None), ("SMB3_11", None), ("SMB3_11", "aes-128-ccm"),
                                ("SMB3_11", "aes-128-gcm"), ("SMB3_11", "aes-256-ccm"), ("SMB3_11", "aes-256-gcm")):
            with self.subTest(dialect=dialect, cipher=cipher):
                back = self.dir / ("enc-%s-%s" % (dialect, cipher))
                smbclient("put %s enc.bin; get enc.bin %s; rm enc.bin" % (src, back), dialect=dialect,
                          protection="encrypt",
                          options=["client smb3 encryption algorithms=" + cipher] if cipher else ())
                self.assertTrue(filecmp.cmp(src, back, shallow=False))

    def test_short_names_and_times(self):
        """8.3 short names (allinfo's altname) open the file they name, in
        any case and as a directory in a path, and a rename onto one replaces
        that file; all four times can be set."""
        src = self.dir / "src.bin"
        random_file(src, 70000, 3)
        smbclient('mkdir "Short Names Dir"; put %s "Short Names Dir\\Quarterly Report.xlsx"; put %s notes.txt'
                  % (src, src))

        def altname(path):
            return re.search(r"^altname: (\S+)$", smbclient('allinfo "%s"' % path), re.M).group(1)

        directory, report = altname("Short Names Dir"), altname("Short Names Dir\\Quarterly Report.xlsx")
        self.assertRegex(directory, r"^S[0-9A-Z]{4}~[0-9A-Z]{2}$")
        self.assertRegex(report, r"^Q[0-9A-Z]{4}~[0-9A-Z]{2}\.XLS$")
        self.assertEqual(altname("notes.txt"), "notes.txt")  # a valid 8.3 name is its own
        # A listing's pattern may match the short name (as "dir Q*~*" does on Windows).
        listing = smbclient('ls "Short Names Dir\\%s*"' % report[:6])
        self.assertIn("Quarterly Report.xlsx", listing)
        for i, path in enumerate(("%s\\%s" % (directory, report), "%s\\%s" % (directory.lower(), report.lower()),
                                  "%s\\Quarterly Report.xlsx" % directory)):
            back = self.dir / ("back%d" % i)
            smbclient('get "%s" %s' % (path, back))
            self.assertTrue(filecmp.cmp(src, back, shallow=False), path)
        missing = smbclient("get ZZ999~ZZ.TXT %s" % (self.dir / "none"), check=False)
        self.assertIn("NT_STATUS_OBJECT_NAME_NOT_FOUND", missing)
        # A rename onto a short name replaces the file that has it.
        draft = self.dir / "draft.bin"
        random_file(draft, 1000, 4)
        smbclient('cd "Short Names Dir"; put %s draft.bin; rename draft.bin %s -f' % (draft, report))
        listing = smbclient('ls "Short Names Dir\\*"')
        self.assertIn("Quarterly Report.xlsx", listing)
        self.assertNotIn("draft.bin", listing)
        self.assertNotIn(report, listing)
        smbclient('get "Short Names Dir\\Quarterly Report.xlsx" %s' % (self.dir / "replaced"))
        self.assertTrue(filecmp.cmp(draft, self.dir / "replaced", shallow=False))
        smbclient("utimes notes.txt 2020:01:02-03:04:05 2021:01:02-03:04:05 2022:01:02-03:04:05 "
                  "2023:01:02-03:04:05")
        info = smbclient("allinfo notes.txt")
        for field, year in (("create_time", 2020), ("access_time", 2021), ("write_time", 2022),
                            ("change_time", 2023)):
            self.assertRegex(info, r"%s:\s+\w+ Jan  2 03:04:05 %d UTC" % (field, year))
        smbclient('rm notes.txt; rm "Short Names Dir\\Quarterly Report.xlsx"; rmdir "Short Names Dir"')

    def test_dos_attributes(self):
        """setmode's attributes show in ls and allinfo; a read-only file is
        neither overwritten nor deleted until the attribute is cleared."""
        src = self.dir / "attr.bin"
        random_file(src, 1000, 5)
        smbclient("put %s attr.bin; setmode attr.bin +rh" % src)
        self.assertRegex(smbclient("ls attr.bin"), r"attr\.bin\s+AHR\s+1000 ")
        self.assertRegex(smbclient("allinfo attr.bin"), r"attributes: \w+ \(23\)")  # READONLY HIDDEN ARCHIVE
        self.assertIn("NT_STATUS_ACCESS_DENIED", smbclient("put %s attr.bin" % src, check=False))
        self.assertIn("NT_STATUS_CANNOT_DELETE", smbclient("rm attr.bin", check=False))
        smbclient("setmode attr.bin -r; get attr.bin %s" % (self.dir / "attr.back"))
        self.assertTrue(filecmp.cmp(src, self.dir / "attr.back", shallow=False))
        self.assertRegex(smbclient("ls attr.bin"), r"attr\.bin\s+AH\s+1000 ")
        smbclient("rm attr.bin")
        self.assertNotIn("attr.bin", smbclient("ls"))

    def test_wrong_password_and_share(self):
        out = smbclient("ls", password="not-the-password", check=False)
        self.assertIn("NT_STATUS_LOGON_FAILURE", out)
        out = smbclient("ls", share="no-such-share", check=False)
        self.assertIn("NT_STATUS_BAD_NETWORK_NAME", out)
        smbclient("ls")  # and the server goes on serving
        self.assertTrue(GW.alive())


class LibsmbclientTest(unittest.TestCase):
    """libsmbclient_test.cpp: the same operations through libsmbclient, on
    SMB 2.1, 3.0 and 3.1.1 (also encrypted)."""

    def test_libsmbclient(self):
        if not LIBSMBCLIENT_TEST:
            skip("no --libsmbclient-test program given")
        home = tempfile.mkdtemp(dir=TMP)  # libsmbclient reads ~/.smb/smb.conf: keep it empty
        env = dict(os.environ, HOME=home)
        out = subprocess.run([LIBSMBCLIENT_TEST, GW.host, str(GW.port), GW.user, GW.password, "64", "1000"],
                             capture_output=True, text=True, timeout=500, env=env)
        print(out.stdout, out.stderr[-3000:], flush=True)
        self.assertEqual(out.returncode, 0)
        self.assertEqual(out.stdout.count("ok:"), 4)


def s3_client():
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        skip("boto3 is not installed")
    return boto3.client("s3", endpoint_url=GW.s3_url, aws_access_key_id=GW.s3_keys[0],
                        aws_secret_access_key=GW.s3_keys[1], region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


class CrossProtocolTest(unittest.TestCase):
    """SMB share "data" and S3 see the same namespace: a top-level directory
    is a bucket."""

    def test_smb_to_s3_and_back(self):
        s3 = s3_client()
        d = pathlib.Path(tempfile.mkdtemp(dir=TMP))
        src = d / "x.bin"
        random_file(src, 2 * 1024 * 1024 + 7, 5)
        smbclient("mkdir crossbucket; put %s crossbucket\\from-smb.bin" % src)
        body = s3.get_object(Bucket="crossbucket", Key="from-smb.bin")["Body"].read()
        self.assertEqual(body, src.read_bytes())

        data = random.Random(6).randbytes(3 * 1024 * 1024 + 11)
        s3.put_object(Bucket="crossbucket", Key="dir/from-s3.bin", Body=data)
        back = d / "from-s3.bin"
        smbclient("get crossbucket\\dir\\from-s3.bin %s" % back)
        self.assertEqual(back.read_bytes(), data)

        # An SMB rename is seen by S3 at once.
        smbclient("rename crossbucket\\from-smb.bin crossbucket\\renamed.bin")
        keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="crossbucket")["Contents"])
        self.assertEqual(keys, ["dir/from-s3.bin", "renamed.bin"])


class ObservabilityTest(unittest.TestCase):
    """SMB requests are counted in /metrics and accesses are audited."""

    def test_metrics_and_audit(self):
        d = pathlib.Path(tempfile.mkdtemp(dir=TMP))
        (d / "audited.txt").write_bytes(b"x" * 12345)
        smbclient("put %s audited.txt; get audited.txt %s" % (d / "audited.txt", d / "back.txt"))
        import urllib.request
        text = urllib.request.urlopen(GW.rest_url + "/metrics", timeout=10).read().decode()
        creates = [l for l in text.splitlines() if l.startswith('weft_smb_requests_total{command="create"}')]
        self.assertTrue(creates and float(creates[0].split()[-1]) >= 2, creates)
        self.assertIn("weft_smb_written_bytes_total", text)
        log = GW.data / "audit" / "audit.log"
        deadline = time.monotonic() + 10
        records = []
        while time.monotonic() < deadline:
            if log.exists():
                records = [json.loads(l) for l in log.read_text().splitlines() if '"smb"' in l]
                closes = [r for r in records if r.get("op") == "close" and r.get("path") == "data/audited.txt"]
                if len(closes) >= 2:
                    break
            time.sleep(0.2)
        closes = [r for r in records if r.get("op") == "close" and r.get("path") == "data/audited.txt"]
        self.assertGreaterEqual(len(closes), 2, records[-10:])
        self.assertEqual(closes[0]["user"], GW.user)
        self.assertEqual(closes[0]["bytes"], 12345)
        self.assertTrue(any(r.get("op") == "session_setup" and r.get("result") == "ok" for r in records))


class BadInputTest(unittest.TestCase):
    """Malformed and hostile requests get the right NTSTATUS or a clean
    disconnect; the server goes on serving and nothing stored changes."""

    KEEP = b"stored before the bad input\n" * 100

    @classmethod
    def setUpClass(cls):
        c = cls.login()
        r, fid = c.create("keep.txt", disposition=5)
        assert r.status == 0, hex(r.status)
        c.write(fid, cls.KEEP)
        c.close_file(fid)
        c.close()

    @classmethod
    def login(cls, tree=True):
        c = smb2_raw.Client(GW.host, GW.port)
        assert c.negotiate().status == 0
        status = c.login(GW.user, GW.password)
        assert status == 0, hex(status)
        if tree:
            assert c.tree_connect("data").status == 0
        return c

    def tearDown(self):
        self.assertTrue(GW.alive())
        c = self.login()
        r, fid = c.create("keep.txt", disposition=1)
        self.assertEqual(r.status, 0)
        r = c.read(fid, 65536)
        self.assertEqual(r.body[16:], self.KEEP)
        c.close()

    def assert_closed(self, c):
        with self.assertRaises((smb2_raw.Closed, OSError)):
            c.echo()
            c.echo()

    def test_smb1_multi_protocol_negotiate(self):
        c = smb2_raw.Client(GW.host, GW.port)
        dialects = b"\x02NT LM 0.12\0\x02SMB 2.002\0\x02SMB 2.???\0"
        smb1 = b"\xffSMB" + bytes([0x72]) + b"\0" * 27 + b"\0" + struct.pack("<H", len(dialects)) + dialects
        c.send_frame(smb1)
        r = c.reply()
        self.assertEqual(r.command, 0)
        self.assertEqual(struct.unpack_from("<H", r.body, 4)[0], 0x02FF)
        c.mid = 1
        self.assertEqual(c.negotiate().status, 0)
        self.assertEqual(c.login(GW.user, GW.password), 0)
        c.close()

    def test_garbage_and_malformed_frames(self):
        for frame in (b"\x01\x00\x00\x04abcd",                       # not a session message
                      struct.pack(">I", 0xFFFFFF) + b"x" * 10,        # length past the limit
                      struct.pack(">I", 20) + b"\xfeSMB" + b"\0" * 16,  # header cut short
                      struct.pack(">I", 68) + b"\xfeSMB" + struct.pack("<H", 99) + b"\0" * 62):  # bad size
            c = smb2_raw.Client(GW.host, GW.port)
            c.sock.sendall(frame)
            self.assert_closed(c)
            c.close()

    def test_wrong_password(self):
        c = smb2_raw.Client(GW.host, GW.port)
        c.negotiate()
        self.assertEqual(c.login(GW.user, "wrong"), smb2_raw.STATUS_LOGON_FAILURE)
        self.assertEqual(c.login("nobody-here", "x"), smb2_raw.STATUS_LOGON_FAILURE)
        c.close()

    def test_signatures(self):
        c = self.login()
        r, fid = c.create("keep.txt", disposition=1, sign=False)  # unsigned on a signing session
        self.assertEqual(r.status, smb2_raw.STATUS_ACCESS_DENIED)
        msg = c.sign(c.header(smb2_raw.CREATE) + b"\0" * 57)
        bad = msg[:50] + bytes([msg[50] ^ 1]) + msg[51:]  # one bit of the signature flipped
        c.send_frame(bad)
        self.assertEqual(c.reply().status, smb2_raw.STATUS_ACCESS_DENIED)
        r = c.write(b"\0" * 16, b"x", sign=False)
        self.assertEqual(r.status, smb2_raw.STATUS_ACCESS_DENIED)
        c.close()

    def test_unknown_ids(self):
        c = self.login()
        self.assertEqual(c.echo().status, 0)
        r, _ = c.create("keep.txt", disposition=1, session_id=0x1234567, sign=False)
        self.assertEqual(r.status, smb2_raw.STATUS_USER_SESSION_DELETED)
        self.assertFalse(r.flags & 0x8)
        # Signed, the answer keeps the signed flag (it cannot be signed): a
        # client that requires signing would drop the connection otherwise.
        r, _ = c.create("keep.txt", disposition=1, session_id=0x1234567)
        self.assertEqual(r.status, smb2_raw.STATUS_USER_SESSION_DELETED)
        self.assertTrue(r.flags & 0x8)
        r, _ = c.create("keep.txt", disposition=1, tree_id=777)
        self.assertEqual(r.status, smb2_raw.STATUS_NETWORK_NAME_DELETED)
        r = c.read(b"\x05" * 16, 10)
        self.assertEqual(r.status, smb2_raw.STATUS_FILE_CLOSED)
        r = c.close_file(b"\x06" * 16)
        self.assertEqual(r.status, smb2_raw.STATUS_FILE_CLOSED)
        c.close()

    def test_oversized_and_undercharged_io(self):
        c = self.login()
        r, fid = c.create("keep.txt", disposition=1)
        self.assertEqual(r.status, 0)
        self.assertEqual(c.echo(credits=2048).status, 0)  # enough credits for the charges below
        r = c.read(fid, 16 << 20, credit_charge=256)  # past MaxReadSize
        self.assertEqual(r.status, smb2_raw.STATUS_INVALID_PARAMETER)
        r = c.read(fid, 1 << 20, credit_charge=1)  # 1 MiB needs 16 credits
        self.assertEqual(r.status, smb2_raw.STATUS_INVALID_PARAMETER)
        r = c.write(fid, b"y" * 200000, credit_charge=1)
        self.assertEqual(r.status, smb2_raw.STATUS_INVALID_PARAMETER)
        body = struct.pack("<HHIQ16sIIHHI", 49, 64 + 48, 5000, 0, fid, 0, 0, 0, 0, 0) + b"short"
        r = c.request(smb2_raw.WRITE, body)  # claims more data than it carries
        self.assertEqual(r.status, smb2_raw.STATUS_INVALID_PARAMETER)
        c.close_file(fid)
        c.close()

    def test_credit_abuse(self):
        c = self.login()
        used = c.mid - 1
        c.send_frame(c.sign(c.header(smb2_raw.ECHO, mid=used) + struct.pack("<HH", 4, 0)))  # reused id
        self.assert_closed(c)
        c = self.login()
        c.send_frame(c.sign(c.header(smb2_raw.ECHO, mid=c.mid + 100000) + struct.pack("<HH", 4, 0)))
        self.assert_closed(c)

    def test_cancel_only_frame(self):
        c = self.login()
        c.send_frame(c.header(12, mid=0) + struct.pack("<HH", 4, 0))  # CANCEL: never answered
        self.assertEqual(c.echo().status, 0)
        c.close()

    def test_disconnect_and_logoff_inside_a_compound(self):
        # The requests after a TREE_DISCONNECT or LOGOFF in a chain still
        # refer to the tree and session it takes away (once read after being
        # freed: an ASan build of weft stops on that): they are refused, and
        # the connection and the server go on.
        c = self.login()
        no_body = struct.pack("<HH", 4, 0)
        open_keep = c.create_body("keep.txt", disposition=1)
        answers = c.compound([(smb2_raw.TREE_DISCONNECT, no_body, False), (smb2_raw.CREATE, open_keep, True)])
        self.assertEqual([a.status for a in answers], [0, smb2_raw.STATUS_NETWORK_NAME_DELETED])
        self.assertEqual(c.tree_connect("data").status, 0)
        r, fid = c.create("keep.txt", disposition=1)
        self.assertEqual(r.status, 0)
        answers = c.compound([(smb2_raw.LOGOFF, no_body, False), (smb2_raw.CREATE, open_keep, True)])
        self.assertEqual([a.status for a in answers], [0, smb2_raw.STATUS_NETWORK_NAME_DELETED])
        self.assertEqual(c.echo(sign=False).status, 0)
        r, _ = c.create("keep.txt", disposition=1, sign=False)
        self.assertEqual(r.status, smb2_raw.STATUS_USER_SESSION_DELETED)
        c.close()

    def test_names_of_an_open_file(self):
        # FileAllInformation shows the path with backslashes; the normalized
        # name is SMB 3.1.1's only (NOT_SUPPORTED on 2.1, this client's).
        c = self.login()
        r, _ = c.create("names-dir", disposition=3, options=0x1)
        self.assertEqual(r.status, 0)
        r, fid = c.create("names-dir\\f.txt", disposition=3)
        self.assertEqual(r.status, 0)
        r, info = c.query_info(fid, 18)  # FileAllInformation
        self.assertEqual(r.status, 0)
        name_length = struct.unpack_from("<I", info, 96)[0]
        self.assertEqual(info[100:100 + name_length].decode("utf-16le"), "\\names-dir\\f.txt")
        r, _ = c.query_info(fid, 48)  # FileNormalizedNameInformation
        self.assertEqual(r.status, 0xC00000BB)  # STATUS_NOT_SUPPORTED
        c.close_file(fid)
        c.close()

    def test_dot_and_dot_dot_in_names(self):
        # Resolved by name, as Samba does: "dd\\.\\..\\x" is "x" at the share
        # root; a ".." above the root is OBJECT_PATH_SYNTAX_BAD and creates
        # nothing, wherever it points.
        c = self.login()
        r, _ = c.create("dd", disposition=3, options=0x1)
        self.assertEqual(r.status, 0)
        r, fid = c.create("dd\\.\\..\\dotdot.txt", disposition=2)
        self.assertEqual(r.status, 0)
        c.write(fid, b"at the root")
        c.close_file(fid)
        r, fid = c.create("dotdot.txt", disposition=1)
        self.assertEqual(r.status, 0)
        self.assertEqual(c.read(fid, 100).body[16:], b"at the root")
        c.close_file(fid)
        for name in ("..", "..\\escaped.txt", "dd\\..\\..\\escaped.txt", "..\\..\\.."):
            with self.subTest(name=name):
                r, _ = c.create(name, disposition=2)
                self.assertEqual(r.status, 0xC000003B, hex(r.status))  # OBJECT_PATH_SYNTAX_BAD
        r, _ = c.create("escaped.txt", disposition=1)
        self.assertEqual(r.status, smb2_raw.STATUS_OBJECT_NAME_NOT_FOUND)
        c.close()

    def test_bad_create_options_attributes_and_access(self):
        # As Windows: reserved access bits are ACCESS_DENIED, the audit right
        # a privilege nobody holds here; then reserved options, VOLUME,
        # DEVICE and undefined attributes, and TEMPORARY on a directory, are
        # INVALID_PARAMETER; options for what is not supported NOT_SUPPORTED;
        # an encrypted file ACCESS_DENIED. Nothing is created.
        c = self.login()
        for kw, status in (({"access": 0x08000000}, smb2_raw.STATUS_ACCESS_DENIED),
                           ({"access": 0x00000200}, smb2_raw.STATUS_ACCESS_DENIED),
                           ({"access": 0x01000000}, 0xC0000061),  # PRIVILEGE_NOT_HELD
                           ({"options": 0x10000040}, smb2_raw.STATUS_INVALID_PARAMETER),
                           ({"attributes": 0x8}, smb2_raw.STATUS_INVALID_PARAMETER),
                           ({"attributes": 0x40}, smb2_raw.STATUS_INVALID_PARAMETER),
                           ({"attributes": 0x10000}, smb2_raw.STATUS_INVALID_PARAMETER),
                           ({"options": 0x1, "attributes": 0x100}, smb2_raw.STATUS_INVALID_PARAMETER),
                           ({"options": 0x2040}, 0xC00000BB),  # open by file id: NOT_SUPPORTED
                           ({"attributes": 0x4000}, smb2_raw.STATUS_ACCESS_DENIED)):
            with self.subTest(**kw):
                r, _ = c.create("refused.bin", disposition=2, **kw)
                self.assertEqual(r.status, status, hex(r.status))
        r, _ = c.create("refused.bin", disposition=1)
        self.assertEqual(r.status, smb2_raw.STATUS_OBJECT_NAME_NOT_FOUND)
        c.close()

    def test_dos_attributes(self):
        # A file made HIDDEN keeps it; DIRECTORY on a file is refused and
        # changes nothing; READ_ONLY keeps the file from being written or
        # deleted until it is cleared (MS-FSA).
        c = self.login()
        r, fid = c.create("attributes.txt", disposition=2, attributes=0x2)
        self.assertEqual(r.status, 0)
        self.assertEqual(struct.unpack_from("<I", r.body, 56)[0], 0x22)  # HIDDEN | ARCHIVE
        basic = lambda attributes: struct.pack("<QQQQII", 0, 0, 0, 0, attributes, 0)  # noqa: E731
        self.assertEqual(c.set_info(fid, 4, basic(0x10)).status, smb2_raw.STATUS_INVALID_PARAMETER)
        self.assertEqual(c.set_info(fid, 4, basic(0x1)).status, 0)  # READ_ONLY
        r, info = c.query_info(fid, 4)  # FileBasicInformation
        self.assertEqual(struct.unpack_from("<I", info, 32)[0], 0x1)
        c.close_file(fid)
        r, _ = c.create("attributes.txt", disposition=1, access=0x2)  # FILE_WRITE_DATA
        self.assertEqual(r.status, smb2_raw.STATUS_ACCESS_DENIED)
        r, _ = c.create("attributes.txt", disposition=1, access=0x10000, options=0x1040)  # delete on close
        self.assertEqual(r.status, 0xC0000121)  # CANNOT_DELETE
        r, fid = c.create("attributes.txt", disposition=1, access=0x180)  # FILE_{READ,WRITE}_ATTRIBUTES
        self.assertEqual(r.status, 0)
        self.assertEqual(c.set_info(fid, 4, basic(0x80)).status, 0)  # NORMAL: none
        r, info = c.query_info(fid, 4)
        self.assertEqual(struct.unpack_from("<I", info, 32)[0], 0x80)
        c.close_file(fid)
        r, fid = c.create("attributes.txt", disposition=1, access=0x10000, options=0x1040)
        self.assertEqual(r.status, 0)
        c.close_file(fid)
        r, _ = c.create("attributes.txt", disposition=1)
        self.assertEqual(r.status, smb2_raw.STATUS_OBJECT_NAME_NOT_FOUND)
        c.close()

    def test_chain_without_a_session(self):
        # A chain's first request marked related has no request to relate to:
        # INVALID_PARAMETER (signed with its own session). After a request
        # whose session is gone, a related one is INVALID_PARAMETER too, and
        # both answers keep the signed flag for the client that requires it.
        c = self.login()
        open_keep = c.create_body("keep.txt", disposition=3)
        answers = c.compound([(smb2_raw.CREATE, open_keep, True)])
        self.assertEqual(answers[0].status, smb2_raw.STATUS_INVALID_PARAMETER)
        self.assertTrue(answers[0].flags & 0x8)
        answers = c.compound([(smb2_raw.CREATE, open_keep, False, 0x1234567), (smb2_raw.CREATE, open_keep, True)])
        self.assertEqual([a.status for a in answers],
                         [smb2_raw.STATUS_USER_SESSION_DELETED, smb2_raw.STATUS_INVALID_PARAMETER])
        self.assertTrue(all(a.flags & 0x8 for a in answers))
        self.assertEqual(c.echo().status, 0)
        c.close()

    def test_truncated_compound(self):
        c = self.login()
        first = c.header(smb2_raw.ECHO, next_command=4096) + struct.pack("<HH", 4, 0) + b"\0" * 4
        c.send_frame(first)  # the chain points past the end of the frame
        self.assert_closed(c)
        c = self.login()
        first = c.header(smb2_raw.ECHO, next_command=70) + struct.pack("<HH", 4, 0) + b"\0" * 10
        c.send_frame(first)  # misaligned
        self.assert_closed(c)


class LockTest(unittest.TestCase):
    """Byte-range locks between two clients (two connections): reads and
    writes of a locked range refused, a blocking lock answered PENDING and
    granted when the range is freed, by an unlock or by the holder's
    connection going away, or ended by CANCEL; malformed LOCKs refused."""

    SHARED, EXCLUSIVE, UNLOCK, FAIL = 0x1, 0x2, 0x4, 0x10

    def open_pair(self, name):
        a, b = BadInputTest.login(), BadInputTest.login()
        r, fa = a.create(name, disposition=5)
        self.assertEqual(r.status, 0)
        self.assertEqual(a.write(fa, bytes(range(100))).status, 0)
        r, fb = b.create(name, disposition=1)
        self.assertEqual(r.status, 0)
        return a, fa, b, fb

    def test_locked_ranges_and_waiting_locks(self):
        a, fa, b, fb = self.open_pair("locked.bin")
        self.assertEqual(a.lock(fa, [(0, 10, self.EXCLUSIVE | self.FAIL)]).status, 0)
        self.assertEqual(b.read(fb, 10).status, smb2_raw.STATUS_FILE_LOCK_CONFLICT)
        self.assertEqual(b.write(fb, b"x", offset=9).status, smb2_raw.STATUS_FILE_LOCK_CONFLICT)
        r = b.read(fb, 10, offset=20)
        self.assertEqual((r.status, r.body[16:]), (0, bytes(range(20, 30))))
        self.assertEqual(a.read(fa, 10).status, 0)  # the holder reads and writes its range
        self.assertEqual(a.write(fa, b"\x03", offset=3).status, 0)
        self.assertEqual(b.lock(fb, [(5, 10, self.EXCLUSIVE | self.FAIL)]).status,
                         smb2_raw.STATUS_LOCK_NOT_GRANTED)

        # A lock that waits: PENDING at once (async), granted by the unlock.
        pending = b.lock(fb, [(5, 10, self.EXCLUSIVE)], wait=False)
        self.assertEqual(pending.status, smb2_raw.STATUS_PENDING)
        self.assertTrue(pending.flags & 0x2)
        self.assertEqual(a.lock(fa, [(0, 10, self.UNLOCK)]).status, 0)
        final = smb2_raw.Response(b.recv_frame())
        self.assertEqual((final.status, final.mid, final.async_id), (0, pending.mid, pending.async_id))
        self.assertEqual(a.read(fa, 10, offset=5).status, smb2_raw.STATUS_FILE_LOCK_CONFLICT)

        # Granted when the holder's connection goes away.
        pending = a.lock(fa, [(14, 1, self.SHARED)], wait=False)
        self.assertEqual(pending.status, smb2_raw.STATUS_PENDING)
        b.close()
        final = smb2_raw.Response(a.recv_frame())
        self.assertEqual((final.status, final.mid), (0, pending.mid))
        self.assertEqual(a.write(fa, b"y", offset=14).status, smb2_raw.STATUS_FILE_LOCK_CONFLICT)  # its own shared lock

        # Ended by CANCEL.
        c = BadInputTest.login()
        r, fc = c.create("locked.bin", disposition=1)
        pending = c.lock(fc, [(14, 1, self.EXCLUSIVE)], wait=False)
        self.assertEqual(pending.status, smb2_raw.STATUS_PENDING)
        c.cancel(pending)
        final = smb2_raw.Response(c.recv_frame())
        self.assertEqual((final.status, final.mid), (smb2_raw.STATUS_CANCELLED, pending.mid))
        self.assertEqual(c.echo().status, 0)
        # Closing the file frees its locks.
        self.assertEqual(a.close_file(fa).status, 0)
        r = c.write(fc, b"z", offset=14)
        self.assertEqual(r.status, 0)
        a.close()
        c.close()

    def test_bad_locks(self):
        a, fa, b, fb = self.open_pair("badlock.bin")
        self.assertEqual(a.lock(fa, []).status, smb2_raw.STATUS_INVALID_PARAMETER)  # no element
        self.assertEqual(a.lock(fa, [(0, 1, 0)]).status, smb2_raw.STATUS_INVALID_PARAMETER)  # no kind
        self.assertEqual(a.lock(fa, [(0, 1, self.UNLOCK | self.EXCLUSIVE)]).status,
                         smb2_raw.STATUS_INVALID_PARAMETER)
        # More than one element: all must fail at once, none waits.
        self.assertEqual(a.lock(fa, [(0, 1, self.SHARED | self.FAIL), (5, 1, self.SHARED)]).status,
                         smb2_raw.STATUS_INVALID_PARAMETER)
        self.assertEqual(a.lock(fa, [(2 ** 64 - 1, 2, self.EXCLUSIVE | self.FAIL)]).status,
                         smb2_raw.STATUS_INVALID_LOCK_RANGE)
        self.assertEqual(a.lock(fa, [(0, 1, self.UNLOCK)]).status, smb2_raw.STATUS_RANGE_NOT_LOCKED)
        self.assertEqual(a.lock(b"\1" * 16, [(0, 1, self.SHARED)]).status, smb2_raw.STATUS_FILE_CLOSED)
        # A request that fails part way takes none of its locks.
        self.assertEqual(b.lock(fb, [(50, 1, self.EXCLUSIVE | self.FAIL)]).status, 0)
        self.assertEqual(a.lock(fa, [(0, 10, self.EXCLUSIVE | self.FAIL), (50, 1, self.SHARED | self.FAIL)]).status,
                         smb2_raw.STATUS_LOCK_NOT_GRANTED)
        self.assertEqual(b.lock(fb, [(0, 10, self.EXCLUSIVE | self.FAIL)]).status, 0)
        self.assertEqual(a.read(fa, 100).status, smb2_raw.STATUS_FILE_LOCK_CONFLICT)
        r = b.read(fb, 200)  # nothing stored changed
        self.assertEqual((r.status, r.body[16:]), (0, bytes(range(100))))
        a.close()
        b.close()


class NotifyTest(unittest.TestCase):
    """CHANGE_NOTIFY: smbclient's `notify` hears what SMB and S3 change in
    the directory it watches (files made before the watch included). Byte-level: a watch keeps changes between its
    requests, reports beneath its directory when asked (a tree watch),
    answers NOTIFY_ENUM_DIR when more came than fit, and ends CANCELLED,
    NOTIFY_CLEANUP (its handle closed) or DELETE_PENDING (its directory
    deleted); bad requests are refused."""

    ADDED, REMOVED, MODIFIED, OLD_NAME, NEW_NAME = 1, 2, 3, 4, 5

    def watch(self, directory):
        """smbclient `notify` on `directory`, once it hears a probe made
        there; returns a function that waits for lines of its output."""
        out_path = pathlib.Path(tempfile.mkdtemp(dir=TMP)) / "notify.out"
        out = open(out_path, "w")
        # Line-buffered: smbclient prints each change ("%04x name") as it comes.
        proc = subprocess.Popen(["stdbuf", "-oL"] + smbclient_command("notify " + directory),
                                stdout=out, stderr=subprocess.STDOUT)
        self.addCleanup(out.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)

        def heard(lines, timeout=10):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                got = out_path.read_text().splitlines()
                if all(line in got for line in lines):
                    return got
                time.sleep(0.05)
            return None

        # The watch starts some time after smbclient does: probe until heard.
        for i in range(20):
            smbclient("mkdir %s\\probe%d" % (directory, i))
            if heard(["0001 probe%d" % i], timeout=1):
                return heard
        raise AssertionError("smbclient's notify never heard a change:\n" + out_path.read_text())

    def test_smbclient_hears_smb_changes(self):
        smbclient("mkdir watched")
        heard = self.watch("watched")
        src = pathlib.Path(tempfile.mkdtemp(dir=TMP)) / "a.txt"
        src.write_bytes(b"notified")
        smbclient("put %s watched\\a.txt; rename watched\\a.txt watched\\b.txt; mkdir watched\\sub; "
                  "rm watched\\b.txt" % src)
        got = heard(["0001 a.txt", "0004 a.txt", "0005 b.txt", "0001 sub", "0002 b.txt"])
        self.assertIsNotNone(got)
        # In the order they were made.
        order = [got.index(x) for x in ("0001 a.txt", "0004 a.txt", "0005 b.txt", "0001 sub", "0002 b.txt")]
        self.assertEqual(order, sorted(order), got)

    def test_smbclient_hears_s3_changes(self):
        s3 = s3_client()
        smbclient("mkdir watchedbucket")
        s3.put_object(Bucket="watchedbucket", Key="older.bin", Body=b"made before the watch")
        heard = self.watch("watchedbucket")
        s3.put_object(Bucket="watchedbucket", Key="from-s3.bin", Body=b"x" * 1000)
        self.assertIsNotNone(heard(["0001 from-s3.bin"]))
        s3.delete_object(Bucket="watchedbucket", Key="from-s3.bin")
        self.assertIsNotNone(heard(["0002 from-s3.bin"]))
        # A file the watch never saw named, replaced over S3: modified.
        s3.put_object(Bucket="watchedbucket", Key="older.bin", Body=b"replaced while watched")
        self.assertIsNotNone(heard(["0003 older.bin"]))

    def open_dir(self, c, name, access=0x1, disposition=3):
        r, fid = c.create(name, disposition=disposition, options=0x1, access=access)
        self.assertEqual(r.status, 0, hex(r.status))
        return fid

    def delete(self, c, name):
        r, f = c.create(name, disposition=1, options=0, access=0x10000)  # DELETE
        self.assertEqual(r.status, 0, hex(r.status))
        self.assertEqual(c.set_info(f, 13, b"\1").status, 0)  # delete on close
        self.assertEqual(c.close_file(f).status, 0)

    def final(self, c, pending):
        self.assertEqual(pending.status, smb2_raw.STATUS_PENDING)
        self.assertTrue(pending.flags & 0x2)  # async
        r = smb2_raw.Response(c.recv_frame())
        self.assertEqual((r.command, r.mid, r.async_id), (smb2_raw.CHANGE_NOTIFY, pending.mid, pending.async_id))
        return r

    def test_watch_keeps_changes_and_sees_a_tree(self):
        a, b = BadInputTest.login(), BadInputTest.login()
        d = self.open_dir(a, "rawwatch")
        # Answered by the first change another connection makes.
        pending = a.notify(d, completion_filter=0x3)  # file and directory names
        r, f = b.create("rawwatch\\one.txt", disposition=2)
        final = self.final(a, pending)
        self.assertEqual((final.status, smb2_raw.notify_changes(final)), (0, [(self.ADDED, "one.txt")]))
        # Changes while no request waits are kept for the next one.
        self.assertEqual(b.close_file(f).status, 0)
        self.open_dir(b, "rawwatch\\sub")
        r = a.notify(d, completion_filter=0x3)
        self.assertEqual((r.status, smb2_raw.notify_changes(r)), (0, [(self.ADDED, "sub")]))
        # The filter of the first request holds: names only, not beneath.
        sub = self.open_dir(b, "rawwatch\\sub", access=0x10000)  # DELETE
        r, f = b.create("rawwatch\\sub\\deep.txt", disposition=2)
        self.assertEqual(b.close_file(f).status, 0)
        pending = a.notify(d, completion_filter=0x3, tree=True)
        self.assertEqual(b.close_file(sub).status, 0)
        r, f = b.create("rawwatch\\two.txt", disposition=2)
        final = self.final(a, pending)
        self.assertEqual(smb2_raw.notify_changes(final), [(self.ADDED, "two.txt")])
        self.assertEqual(b.close_file(f).status, 0)

        # A tree watch names what changes beneath by its path.
        t = self.open_dir(a, "rawwatch")
        pending = a.notify(t, completion_filter=0x3, tree=True)
        r, f = b.create("rawwatch\\sub\\deeper.txt", disposition=2)
        final = self.final(a, pending)
        self.assertEqual(smb2_raw.notify_changes(final), [(self.ADDED, "sub\\deeper.txt")])
        self.assertEqual(b.close_file(f).status, 0)

        # Closing the handle ends a waiting request NOTIFY_CLEANUP; CANCEL ends one CANCELLED.
        pending = a.notify(t, completion_filter=0x3, tree=True)
        a.cancel(pending)
        self.assertEqual(self.final(a, pending).status, smb2_raw.STATUS_CANCELLED)
        pending = a.notify(t, completion_filter=0x3, tree=True)
        a.send(smb2_raw.CLOSE, struct.pack("<HHI", 24, 0, 0) + t)
        answers = {r.command: r for r in (smb2_raw.Response(a.recv_frame()) for _ in range(2))}
        self.assertEqual(answers[smb2_raw.CLOSE].status, 0)
        final = answers[smb2_raw.CHANGE_NOTIFY]
        self.assertEqual((final.mid, final.status, smb2_raw.notify_changes(final)),
                         (pending.mid, smb2_raw.STATUS_NOTIFY_CLEANUP, []))
        a.close()
        b.close()

    def test_overflow_deletion_and_bad_requests(self):
        a, b = BadInputTest.login(), BadInputTest.login()
        d = self.open_dir(a, "rawoverflow")
        # The first request's buffer bounds what is kept: past it, list again.
        pending = a.notify(d, length=40, completion_filter=0x3)
        r, f = b.create("rawoverflow\\a-rather-long-name-that-does-not-fit.txt", disposition=2)
        final = self.final(a, pending)
        self.assertEqual(final.status, smb2_raw.STATUS_NOTIFY_ENUM_DIR)
        self.assertEqual(b.close_file(f).status, 0)
        for i in range(3):
            self.assertEqual(b.close_file(self.open_dir(b, "rawoverflow\\d%d" % i)).status, 0)
        self.assertEqual(a.notify(d, length=4096).status, smb2_raw.STATUS_NOTIFY_ENUM_DIR)
        # Deleting the watched directory ends its requests DELETE_PENDING.
        for name in ["d0", "d1", "d2", "a-rather-long-name-that-does-not-fit.txt"]:
            self.delete(b, "rawoverflow\\" + name)
        self.assertEqual(a.notify(d, length=4096).status, smb2_raw.STATUS_NOTIFY_ENUM_DIR)  # these overflowed too
        pending = a.notify(d, length=4096)
        self.delete(b, "rawoverflow")
        self.assertEqual(self.final(a, pending).status, smb2_raw.STATUS_DELETE_PENDING)
        self.assertEqual(a.notify(d).status, smb2_raw.STATUS_DELETE_PENDING)
        self.assertEqual(a.close_file(d).status, 0)

        # Bad requests: a file handle, no list access, an unknown handle, a
        # buffer past the maximum, a malformed body.
        r, f = a.create("notafolder.txt", disposition=5)
        self.assertEqual(a.notify(f).status, smb2_raw.STATUS_INVALID_PARAMETER)
        self.assertEqual(a.close_file(f).status, 0)
        blind = self.open_dir(a, "", access=0x80)  # READ_ATTRIBUTES only
        self.assertEqual(a.notify(blind).status, smb2_raw.STATUS_ACCESS_DENIED)
        self.assertEqual(a.notify(b"\7" * 16).status, smb2_raw.STATUS_FILE_CLOSED)
        root = self.open_dir(a, "")
        self.assertEqual(a.notify(root, length=1 << 30).status, smb2_raw.STATUS_INVALID_PARAMETER)
        a.send(smb2_raw.CHANGE_NOTIFY, struct.pack("<HHI", 31, 0, 0))
        self.assertEqual(smb2_raw.Response(a.recv_frame()).status, smb2_raw.STATUS_INVALID_PARAMETER)
        self.assertEqual(a.echo().status, 0)
        a.close()
        b.close()


def main():
    global WEFT, LARGE_MIB, LIBSMBCLIENT_TEST
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--large-mib", type=int, default=LARGE_MIB)
    parser.add_argument("--libsmbclient-test")
    args, rest = parser.parse_known_args()
    WEFT = args.weft
    LIBSMBCLIENT_TEST = args.libsmbclient_test
    LARGE_MIB = args.large_mib
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
