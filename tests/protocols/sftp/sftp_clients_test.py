#!/usr/bin/env python3
"""The SFTP front end driven by real clients: `weft serve` on port 0 (SFTP,
REST and S3 listeners), then OpenSSH `sftp -b` and `scp` (password through
sshpass, and key auth), paramiko, and rclone's sftp remote. Files are compared
byte for byte, and read back over REST (the namespace) and S3 (boto3, when
installed). Raw SFTP packets sent over a paramiko channel check the answers
to malformed input.

A client that is not installed makes its tests print a SKIP line and pass.

Usage: sftp_clients_test.py --weft PATH [--big-mib N] [unittest arguments]
"""

import argparse
import base64
import concurrent.futures
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
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

WEFT = None
BIG_MIB = 256
START_TIMEOUT = 60


def skip(reason):
    print("SKIP: " + reason, flush=True)
    raise unittest.SkipTest(reason)


def have(tool):
    return shutil.which(tool) is not None


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_random(path, size, seed=0):
    """A file of `size` pseudo-random bytes (fast, reproducible)."""
    block = hashlib.sha256(str(seed).encode()).digest() * 32768  # 1 MiB
    block = bytes(b ^ (i * 31 & 0xFF) for i, b in enumerate(block[:4096])) + block[4096:]
    with open(path, "wb") as f:
        left = size
        n = 0
        while left > 0:
            chunk = block[: min(left, len(block))]
            # Each MiB differs, so chunks do not deduplicate into one.
            f.write(struct.pack(">Q", n) + chunk[8:] if len(chunk) >= 8 else chunk)
            left -= len(chunk)
            n += 1


class Gateway:
    """One `weft serve` with SFTP, REST and S3 on port 0 in a scratch dir."""

    def __init__(self, root, config=None):
        """`config`: a dict written as the --config file."""
        self.root = pathlib.Path(root)
        self.config = config
        self.root.mkdir(parents=True, exist_ok=True)
        self.data = self.root / "data"
        self.log_path = self.root / "weft.log"
        self.proc = None

    def start(self):
        args = [WEFT, "serve", "--data", str(self.data), "--sftp", "127.0.0.1:0", "--rest", "127.0.0.1:0",
                "--s3", "127.0.0.1:0", "--nfs", "off", "--smb", "off"]
        if self.config is not None:
            config_path = self.root / "weft.json"
            config_path.write_text(json.dumps(self.config))
            args += ["--config", str(config_path)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        path = self.data / "endpoints.json"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if path.exists():
                doc = json.loads(path.read_text())
                if doc.get("pid") == self.proc.pid and "sftp" in doc:
                    self.endpoints = doc
                    host, port = doc["sftp"].rsplit(":", 1)
                    self.host, self.port = host, int(port)
                    self.creds = json.loads((self.data / "credentials.json").read_text())
                    self.user, self.password = self.creds["user"], self.creds["password"]
                    return self
            if self.proc.poll() is not None:
                raise AssertionError("weft exited with %d:\n%s" % (self.proc.returncode, self.log()))
            time.sleep(0.05)
        raise AssertionError("no endpoints.json with sftp after %d s:\n%s" % (START_TIMEOUT, self.log()))

    def log(self):
        return self.log_path.read_text(errors="replace")

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    # --- REST: users, keys, exports, reads through the namespace ---------
    def rest(self, method, path, body=None, auth=None, raw=False):
        url = "http://%s%s" % (self.endpoints["rest"], path)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        user, password = auth or (self.user, self.password)
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        req.add_header("Authorization", "Basic " + token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=60) as resp:
            out = resp.read()
        return out if raw else (json.loads(out) if out else None)

    def sha256_of(self, path):
        """The SHA-256 of export path `path`, streamed through REST."""
        url = "http://%s/api/v1/files/%s" % (self.endpoints["rest"], path)
        req = urllib.request.Request(url)
        token = base64.b64encode(("%s:%s" % (self.user, self.password)).encode()).decode()
        req.add_header("Authorization", "Basic " + token)
        h = hashlib.sha256()
        with urllib.request.urlopen(req, timeout=120) as resp:
            for block in iter(lambda: resp.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()

    def read_file(self, path):
        """The bytes of export path `path` ("data/a/b") through REST."""
        return self.rest("GET", "/api/v1/files/" + path, raw=True)


GW = None
TMP = None
KEY = None  # (private key path, public key line) authorized for the admin


def setUpModule():
    global GW, TMP, KEY
    TMP = pathlib.Path(tempfile.mkdtemp(prefix="weft-sftp-clients-"))
    GW = Gateway(TMP).start()
    if have("ssh-keygen"):
        key = TMP / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        line = (TMP / "id_ed25519.pub").read_text().strip()
        GW.rest("POST", "/api/v1/users/%s/ssh-keys" % GW.user, {"key": line})
        KEY = (str(key), line)


def tearDownModule():
    if GW:
        code = GW.stop()
        if code not in (0, None):
            print(GW.log()[-4000:])
    shutil.rmtree(TMP, ignore_errors=True)


SSH_OPTS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "ConnectTimeout=20"]


def password_opts():
    return ["-o", "BatchMode=no", "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password",
            "-o", "NumberOfPasswordPrompts=1"]


def key_opts():
    return ["-o", "BatchMode=yes", "-o", "PasswordAuthentication=no", "-o", "IdentitiesOnly=yes", "-i", KEY[0]]


def run(cmd, timeout=170, check=True, cwd=None, env=None, input=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env, input=input)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(cmd), p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def sftp_batch(commands, key=False, user=None, password=None, check=True, cwd=None, timeout=170):
    """Runs `sftp -b` with these commands (one per line); returns the result."""
    if not have("sftp"):
        skip("OpenSSH sftp is not installed")
    batch = pathlib.Path(tempfile.mkstemp(dir=TMP, suffix=".batch")[1])
    batch.write_text("\n".join(commands) + "\n")
    target = "%s@%s" % (user or GW.user, GW.host)
    if key:
        cmd = ["sftp"] + SSH_OPTS + key_opts() + ["-P", str(GW.port), "-b", str(batch), target]
    else:
        if not have("sshpass"):
            skip("sshpass is not installed")
        cmd = ["sshpass", "-p", password or GW.password, "sftp"] + SSH_OPTS + password_opts() + [
            "-P", str(GW.port), "-b", str(batch), target]
    return run(cmd, check=check, cwd=cwd, timeout=timeout)


def paramiko_client(user=None, password=None, key=None):
    try:
        import paramiko
    except ImportError:
        skip("paramiko is not installed")
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    kw = dict(hostname=GW.host, port=GW.port, username=user or GW.user, allow_agent=False, look_for_keys=False,
              timeout=30, banner_timeout=30, auth_timeout=30)
    if key:
        kw["key_filename"] = key
    else:
        kw["password"] = password or GW.password
    c.connect(**kw)
    return c


class OpenSshTest(unittest.TestCase):
    def test_password_put_get_large(self):
        src = TMP / "big.bin"
        write_random(src, BIG_MIB << 20, seed=1)
        back = TMP / "big.back"
        t0 = time.monotonic()
        sftp_batch(["mkdir /data/big", "put %s /data/big/big.bin" % src, "get /data/big/big.bin %s" % back])
        elapsed = time.monotonic() - t0
        print("sftp put+get of %d MiB: %.1f s" % (BIG_MIB, elapsed), flush=True)
        self.assertEqual(sha256(src), sha256(back))
        # Cross-protocol: the namespace (REST) serves the same bytes.
        st = GW.rest("GET", "/api/v1/stat/data/big/big.bin")
        self.assertEqual(st["size"], BIG_MIB << 20)
        self.assertGreaterEqual(st["version"], 1)  # sealed on CLOSE
        self.assertFalse(st["dirty"])
        self.assertEqual(GW.sha256_of("data/big/big.bin"), sha256(src))
        back.unlink()

    def test_key_auth_small_files_and_listing(self):
        if KEY is None:
            skip("ssh-keygen is not installed")
        local = TMP / "many"
        local.mkdir()
        for i in range(1000):
            (local / ("f%04d.txt" % i)).write_bytes(("file %d\n" % i).encode() * (i % 50 + 1))
        sftp_batch(["mkdir /data/many", "lcd %s" % local, "cd /data/many", "mput *"], key=True)
        out = sftp_batch(["ls -l /data/many"], key=True).stdout
        self.assertEqual(sum(1 for line in out.splitlines() if line.startswith("-rw")), 1000)
        down = TMP / "many.back"
        down.mkdir()
        sftp_batch(["lcd %s" % down, "get -r /data/many"], key=True)
        for i in (0, 1, 499, 999):
            name = "f%04d.txt" % i
            self.assertEqual((local / name).read_bytes(), (down / "many" / name).read_bytes())
        self.assertEqual(len(list((down / "many").iterdir())), 1000)
        self.assertEqual(GW.read_file("data/many/f0999.txt"), (local / "f0999.txt").read_bytes())

    def test_resume_reget_reput(self):
        src = TMP / "resume.bin"
        write_random(src, 6 << 20, seed=2)
        data = src.read_bytes()
        sftp_batch(["put %s /data/resume.bin" % src])
        part = TMP / "resume.part"
        part.write_bytes(data[: 2 << 20])
        sftp_batch(["reget /data/resume.bin %s" % part])
        self.assertEqual(part.read_bytes(), data)
        # reput: the server holds a prefix, the client sends the rest.
        prefix = TMP / "prefix.bin"
        prefix.write_bytes(data[: 3 << 20])
        sftp_batch(["put %s /data/reput.bin" % prefix, "reput %s /data/reput.bin" % src])
        self.assertEqual(GW.read_file("data/reput.bin"), data)

    def test_mkdir_rename_rm_chmod_ls_symlink_df(self):
        src = TMP / "small.txt"
        src.write_text("hello sftp\n")
        out = sftp_batch([
            "mkdir /data/ops", "cd /data/ops", "put -f %s a.txt" % src, "rename a.txt b.txt",
            "chmod 600 b.txt", "ln -s b.txt link", "ln b.txt hard", "mkdir sub", "rename sub sub2", "ls -l",
            "df", "-rm missing.txt", "rm b.txt", "rmdir sub2", "ls -l"]).stdout
        lines = out.splitlines()
        self.assertTrue(any(l.startswith("-rw-------") and l.endswith("b.txt") for l in lines), out)
        self.assertTrue(any(l.startswith("l") and "link" in l for l in lines), out)
        self.assertTrue(any(l.startswith("d") and l.endswith("sub2") for l in lines), out)
        self.assertIn("Size", out)  # df's header
        # After rm the symlink dangles and the hard link keeps the content.
        listing = GW.rest("GET", "/api/v1/dirs/data/ops")
        names = sorted(e["name"] for e in listing["entries"])
        self.assertEqual(names, ["hard", "link"])
        self.assertEqual(GW.read_file("data/ops/hard"), src.read_bytes())

    def test_scp_password_and_key(self):
        if not have("scp"):
            skip("OpenSSH scp is not installed")
        if not have("sshpass"):
            skip("sshpass is not installed")
        src = TMP / "scp.bin"
        write_random(src, 3 << 20, seed=3)
        run(["sshpass", "-p", GW.password, "scp"] + SSH_OPTS + password_opts() + [
            "-P", str(GW.port), str(src), "%s@%s:/data/scp.bin" % (GW.user, GW.host)])
        self.assertEqual(GW.read_file("data/scp.bin"), src.read_bytes())
        if KEY is None:
            skip("ssh-keygen is not installed")
        back = TMP / "scp.back"
        run(["scp"] + SSH_OPTS + key_opts() + ["-P", str(GW.port), "%s@%s:/data/scp.bin" % (GW.user, GW.host),
                                                str(back)])
        self.assertEqual(back.read_bytes(), src.read_bytes())

    def test_host_keys(self):
        """The server offers the Ed25519 and RSA keys it generated in DATA/sftp."""
        if not have("ssh-keyscan"):
            skip("ssh-keyscan is not installed")
        for kind, name in (("ed25519", "ssh_host_ed25519_key.pub"), ("rsa", "ssh_host_rsa_key.pub")):
            out = run(["ssh-keyscan", "-p", str(GW.port), "-t", kind, GW.host]).stdout
            offered = [l.split()[1:3] for l in out.splitlines() if l and not l.startswith("#")]
            stored = (GW.data / "sftp" / name).read_text().split()[:2]
            self.assertEqual(offered, [stored])
        self.assertEqual((GW.data / "sftp" / "ssh_host_rsa_key").stat().st_mode & 0o777, 0o600)

    def test_wrong_password_and_unknown_key(self):
        if not have("sshpass"):
            skip("sshpass is not installed")
        p = sftp_batch(["ls"], password="not-the-password", check=False)
        self.assertNotEqual(p.returncode, 0)
        if have("ssh-keygen"):
            other = TMP / "id_other"
            if not other.exists():
                run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)])
            p = run(["sftp"] + SSH_OPTS + ["-o", "BatchMode=yes", "-o", "PasswordAuthentication=no",
                                           "-o", "IdentitiesOnly=yes", "-i", str(other), "-P", str(GW.port),
                                           "-b", "/dev/null", "%s@%s" % (GW.user, GW.host)], check=False)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("Permission denied", p.stderr)
        self.assertIn("authentication of", GW.log())
        self.assertTrue(GW.alive())


class ParamikoTest(unittest.TestCase):
    def test_operations(self):
        c = paramiko_client()
        s = c.open_sftp()
        self.assertEqual(s.normalize("."), "/data")
        self.assertIn("data", s.listdir("/"))
        s.mkdir("/data/pm")
        payload = os.urandom(3 << 20)
        with s.open("/data/pm/x.bin", "wb") as f:
            f.set_pipelined(True)
            f.write(payload)
        st = s.stat("/data/pm/x.bin")
        self.assertEqual(st.st_size, len(payload))
        with s.open("/data/pm/x.bin", "rb") as f:
            f.prefetch()  # many READs in flight, answered in any order
            self.assertEqual(f.read(), payload)
        s.chmod("/data/pm/x.bin", 0o640)
        self.assertEqual(s.stat("/data/pm/x.bin").st_mode & 0o7777, 0o640)
        s.utime("/data/pm/x.bin", (1000000000, 1200000000))
        self.assertEqual(s.stat("/data/pm/x.bin").st_mtime, 1200000000)
        s.truncate("/data/pm/x.bin", 1000)
        self.assertEqual(s.stat("/data/pm/x.bin").st_size, 1000)
        s.symlink("x.bin", "/data/pm/ln")
        self.assertEqual(s.readlink("/data/pm/ln"), "x.bin")
        self.assertEqual(s.stat("/data/pm/ln").st_size, 1000)  # followed
        self.assertTrue(s.lstat("/data/pm/ln").st_mode & 0o120000 == 0o120000)
        s.posix_rename("/data/pm/x.bin", "/data/pm/y.bin")
        with self.assertRaises(IOError):
            s.stat("/data/pm/x.bin")
        # Plain RENAME over an existing file is refused (SFTP v3, OpenSSH).
        with s.open("/data/pm/z.bin", "wb") as f:
            f.write(b"z")
        with self.assertRaises(IOError):
            s.rename("/data/pm/z.bin", "/data/pm/y.bin")
        attrs = {a.filename: a for a in s.listdir_attr("/data/pm")}
        self.assertEqual(sorted(attrs), ["ln", "y.bin", "z.bin"])
        self.assertIn("y.bin", attrs["y.bin"].longname)
        self.assertEqual(GW.read_file("data/pm/y.bin"), payload[:1000])
        s.close()
        c.close()

    def test_s3_reads_what_sftp_wrote(self):
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            skip("boto3 is not installed")
        c = paramiko_client()
        s = c.open_sftp()
        payload = os.urandom(1 << 20)
        s.mkdir("/data/s3bucket")
        with s.open("/data/s3bucket/obj.bin", "wb") as f:
            f.write(payload)
        s.close()
        c.close()
        cl = boto3.client("s3", endpoint_url="http://" + GW.endpoints["s3"],
                          aws_access_key_id=GW.creds["access_key_id"],
                          aws_secret_access_key=GW.creds["secret_access_key"], region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        self.assertEqual(cl.get_object(Bucket="s3bucket", Key="obj.bin")["Body"].read(), payload)


class RcloneTest(unittest.TestCase):
    def env(self, key=False):
        env = dict(os.environ)
        env.pop("AWS_CA_BUNDLE", None)
        env.update({"RCLONE_CONFIG": str(TMP / "no-rclone.conf"), "RCLONE_CONFIG_W_TYPE": "sftp",
                    "RCLONE_CONFIG_W_HOST": GW.host, "RCLONE_CONFIG_W_PORT": str(GW.port),
                    "RCLONE_CONFIG_W_USER": GW.user, "RCLONE_CONFIG_W_SHELL_TYPE": "none",
                    "RCLONE_CONFIG_W_MD5SUM_COMMAND": "none", "RCLONE_CONFIG_W_SHA1SUM_COMMAND": "none"})
        if key:
            env["RCLONE_CONFIG_W_KEY_FILE"] = KEY[0]
        else:
            obscured = run(["rclone", "obscure", GW.password]).stdout.strip()
            env["RCLONE_CONFIG_W_PASS"] = obscured
        return env

    def test_copy_tree_and_large(self):
        if not have("rclone"):
            skip("rclone is not installed")
        src = TMP / "rc"
        src.mkdir()
        for i in range(1000):
            (src / ("r%04d" % i)).write_bytes(os.urandom(100 + i))
        write_random(src / "large.bin", 64 << 20, seed=4)
        env = self.env()
        run(["rclone", "copy", "--transfers", "8", str(src), "w:/data/rc"], env=env, timeout=170)
        run(["rclone", "check", str(src), "w:/data/rc", "--size-only"], env=env)
        dst = TMP / "rc.back"
        run(["rclone", "copy", "--transfers", "8", "w:/data/rc", str(dst)], env=self.env(key=KEY is not None))
        self.assertEqual(sha256(src / "large.bin"), sha256(dst / "large.bin"))
        self.assertEqual(len(list(dst.iterdir())), 1001)
        self.assertEqual((src / "r0500").read_bytes(), (dst / "r0500").read_bytes())
        run(["rclone", "moveto", "w:/data/rc/r0001", "w:/data/rc/moved"], env=env)
        run(["rclone", "deletefile", "w:/data/rc/r0002"], env=env)
        names = run(["rclone", "lsf", "w:/data/rc"], env=env).stdout.split()
        self.assertIn("moved", names)
        self.assertNotIn("r0001", names)
        self.assertNotIn("r0002", names)


def raw_channel():
    """A paramiko channel on the sftp subsystem, for hand-made packets."""
    c = paramiko_client()
    ch = c.get_transport().open_session()
    ch.invoke_subsystem("sftp")
    ch.settimeout(20)
    return c, ch


def packet(ptype, body):
    return struct.pack(">IB", len(body) + 1, ptype) + body


def sstr(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack(">I", len(b)) + b


def recv_packet(ch):
    def exactly(n):
        out = b""
        while len(out) < n:
            got = ch.recv(n - len(out))
            if not got:
                raise EOFError("channel closed")
            out += got
        return out
    n = struct.unpack(">I", exactly(4))[0]
    body = exactly(n)
    return body[0], body[1:]


def init(ch):
    ch.sendall(packet(1, struct.pack(">I", 3)))
    t, body = recv_packet(ch)
    assert t == 2, t
    return body


def status_of(body):
    rid, code = struct.unpack(">II", body[:8])
    return rid, code


def channel_closed(ch):
    try:
        while True:
            if not ch.recv(65536):
                return True
    except EOFError:
        return True
    except socket.timeout:
        return False


class BadInputTest(unittest.TestCase):
    def test_malformed_packets(self):
        # What is stored before stays as it is.
        kept = os.urandom(100000)
        cl = paramiko_client()
        with cl.open_sftp().open("/data/kept.bin", "wb") as f:
            f.write(kept)
        cl.close()
        c, ch = raw_channel()
        ext = init(ch)
        self.assertIn(b"posix-rename@openssh.com", ext)
        self.assertIn(b"limits@openssh.com", ext)
        # Unknown type: SSH_FX_OP_UNSUPPORTED with the request's id.
        ch.sendall(packet(77, struct.pack(">I", 5)))
        t, body = recv_packet(ch)
        self.assertEqual((t, status_of(body)), (101, (5, 8)))
        # A string length past the packet: SSH_FX_BAD_MESSAGE.
        ch.sendall(packet(17, struct.pack(">I", 6) + struct.pack(">I", 1000) + b"abc"))
        t, body = recv_packet(ch)
        self.assertEqual((t, status_of(body)), (101, (6, 5)))
        # A truncated OPEN: SSH_FX_BAD_MESSAGE.
        ch.sendall(packet(3, struct.pack(">I", 7) + sstr("/data/x")))
        t, body = recv_packet(ch)
        self.assertEqual((t, status_of(body)), (101, (7, 5)))
        # Handles after close, and handles never given out.
        ch.sendall(packet(11, struct.pack(">I", 8) + sstr("/data")))
        t, body = recv_packet(ch)
        self.assertEqual(t, 102)
        handle = body[4:]
        ch.sendall(packet(4, struct.pack(">I", 9) + handle))
        t, body = recv_packet(ch)
        self.assertEqual((t, status_of(body)), (101, (9, 0)))
        ch.sendall(packet(12, struct.pack(">I", 10) + handle))
        t, body = recv_packet(ch)
        self.assertEqual((t, status_of(body)), (101, (10, 4)))
        ch.sendall(packet(5, struct.pack(">I", 11) + sstr("no-such-handle") + struct.pack(">QI", 0, 10)))
        t, body = recv_packet(ch)
        self.assertEqual((t, status_of(body)), (101, (11, 4)))
        # A huge length: the channel is dropped, the server keeps serving.
        ch.sendall(struct.pack(">I", 0xFFFFFFF0) + b"\x11")
        self.assertTrue(channel_closed(ch))
        c.close()
        c, ch = raw_channel()
        init(ch)
        ch.sendall(struct.pack(">I", 0))  # a zero length
        self.assertTrue(channel_closed(ch))
        c.close()
        c, ch = raw_channel()
        ch.sendall(packet(17, struct.pack(">I", 1) + sstr("/")))  # no INIT first
        self.assertTrue(channel_closed(ch))
        c.close()
        # A WRITE cut short by a hang-up leaves the stored file whole.
        c, ch = raw_channel()
        init(ch)
        ch.sendall(packet(3, struct.pack(">I", 20) + sstr("/data/kept.bin") + struct.pack(">II", 1, 0)))
        t, body = recv_packet(ch)
        self.assertEqual(t, 102)
        ch.sendall(struct.pack(">I", 1000) + b"\x06")  # a WRITE whose bytes never come
        c.close()
        self.assertTrue(GW.alive())
        self.assertEqual(GW.read_file("data/kept.bin"), kept)

    def test_jail(self):
        c = paramiko_client()
        s = c.open_sftp()
        for p in ("/../../../../etc/passwd", "../../../etc/passwd", "/data/../../etc/passwd"):
            with self.assertRaises(IOError):
                s.stat(p)
        self.assertEqual(s.normalize("/../../.."), "/")
        self.assertEqual(s.normalize("../../data/../data/x/.."), "/data")
        # A link that points outside resolves inside the user's tree.
        s.mkdir("/data/jail")
        s.symlink("../../../../../../etc/passwd", "/data/jail/escape")
        with self.assertRaises(IOError):
            s.open("/data/jail/escape", "rb")
        # The virtual root and export roots cannot be changed.
        for op in (lambda: s.mkdir("/newexport"), lambda: s.rmdir("/data"), lambda: s.remove("/data"),
                   lambda: s.rename("/data", "/data2"), lambda: s.open("/top.txt", "wb")):
            with self.assertRaises(IOError):
                op()
        self.assertEqual(s.listdir("/"), ["data"])
        s.close()
        c.close()

    def test_unprivileged_user_and_private_export(self):
        GW.rest("POST", "/api/v1/users", {"name": "mallory", "password": "mallory-pass-1"})
        GW.rest("PUT", "/api/v1/exports/private", {"path": "/", "default_access": "none",
                                                    "users": {GW.user: "read_write"}})
        admin = paramiko_client()
        admin.open_sftp().mkdir("/data/adminonly", 0o755)
        admin.close()
        c = paramiko_client(user="mallory", password="mallory-pass-1")
        s = c.open_sftp()
        self.assertEqual(s.listdir("/"), ["data"])
        with self.assertRaises(IOError):
            s.listdir("/private")
        # Writes where mode bits deny them fail with permission denied.
        with self.assertRaises(PermissionError):
            s.open("/data/adminonly/mallory.txt", "wb")
        s.close()
        c.close()
        c = paramiko_client()
        self.assertIn("private", c.open_sftp().listdir("/"))
        c.close()

    def test_too_many_attempts(self):
        try:
            import paramiko
        except ImportError:
            skip("paramiko is not installed")
        GW.rest("POST", "/api/v1/users", {"name": "victim", "password": "victim-pass-1"})
        t = paramiko.Transport((GW.host, GW.port))
        t.start_client(timeout=30)
        # Five failures leave the connection open; the sixth ends it.
        for i in range(6):
            with self.assertRaises(paramiko.AuthenticationException):
                t.auth_password("victim", "wrong-%d" % i)
            if i < 5:
                self.assertTrue(t.is_active(), "disconnected after %d failures" % (i + 1))
        deadline = time.monotonic() + 10
        while t.is_active() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(t.is_active(), "still connected after 6 failures")
        t.close()
        # Failures go on over new connections until the throttle locks the
        # user out from this address: then even the right password fails.
        for i in range(6):
            try:
                paramiko_client(user="victim", password="wrong-again-%d" % i).close()
            except paramiko.AuthenticationException:
                pass
        with self.assertRaises(paramiko.AuthenticationException):
            paramiko_client(user="victim", password="victim-pass-1")
        # Others are not affected.
        paramiko_client().close()
        self.assertIn("locked out", GW.log())

    def test_many_concurrent_sessions(self):
        if KEY is None:
            skip("ssh-keygen is not installed")
        payload = os.urandom(4096)
        c = paramiko_client()
        c.open_sftp().mkdir("/data/conc")
        c.close()

        def one(i):
            cl = paramiko_client(key=KEY[0])
            s = cl.open_sftp()
            with s.open("/data/conc/f%03d" % i, "wb") as f:
                f.write(payload + str(i).encode())
            with s.open("/data/conc/f%03d" % i, "rb") as f:
                ok = f.read() == payload + str(i).encode()
            return cl, s, ok

        with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
            results = list(pool.map(one, range(200)))
        # All 200 sessions are open at once here.
        self.assertTrue(all(ok for _, _, ok in results))
        for cl, s, _ in results:
            s.close()
            cl.close()
        listing = GW.rest("GET", "/api/v1/dirs/data/conc?limit=1000")
        self.assertEqual(len(listing["entries"]), 200)
        self.assertTrue(GW.alive())


class ShutdownTest(unittest.TestCase):
    def test_sigterm_with_open_sessions(self):
        """SIGTERM while a client writes: exit 0 within seconds; what was
        written is sealed and reads back after a restart."""
        gw = Gateway(TMP / "shutdown").start()
        global GW
        saved, GW = GW, gw
        try:
            c = paramiko_client()
            s = c.open_sftp()
            f = s.open("/data/open.bin", "wb")
            f.write(b"a" * 100000)
            f.flush()
            idle = paramiko_client()
            t0 = time.monotonic()
            self.assertEqual(gw.stop(), 0)
            self.assertLess(time.monotonic() - t0, 10)
            c.close()
            idle.close()
            gw.start()
            self.assertEqual(gw.read_file("data/open.bin"), b"a" * 100000)
            st = gw.rest("GET", "/api/v1/stat/data/open.bin")
            self.assertFalse(st["dirty"])
        finally:
            GW = saved
            gw.stop()


class HostKeyConfigTest(unittest.TestCase):
    @unittest.skipUnless(have("ssh-keyscan") and have("ssh-keygen"), "needs ssh-keyscan and ssh-keygen")
    def test_host_keys_from_the_configured_dir(self):
        """config sftp.host_key_dir and sftp.rsa_bits: the keys are made
        there on first start, at that size, served, and kept across
        restarts."""
        keys = TMP / "configured-host-keys"
        gw = Gateway(TMP / "hostkeys", config={"sftp": {"host_key_dir": str(keys), "rsa_bits": 2048}}).start()
        try:
            self.assertFalse((gw.data / "sftp").exists())

            def served(kind):
                out = subprocess.run(["ssh-keyscan", "-p", str(gw.port), "-t", kind, gw.host],
                                     capture_output=True, text=True, timeout=30).stdout
                return [line.split()[1:3] for line in out.splitlines() if line and not line.startswith("#")]

            def public(name):
                out = subprocess.run(["ssh-keygen", "-y", "-f", str(keys / name)],
                                     capture_output=True, text=True, check=True).stdout
                return out.split()[:2]

            self.assertEqual(oct((keys / "ssh_host_rsa_key").stat().st_mode & 0o777), "0o600")
            bits = subprocess.run(["ssh-keygen", "-l", "-f", str(keys / "ssh_host_rsa_key")],
                                  capture_output=True, text=True, check=True).stdout.split()[0]
            self.assertEqual(bits, "2048")
            rsa, ed = served("rsa"), served("ed25519")
            self.assertEqual(rsa, [public("ssh_host_rsa_key")])
            self.assertEqual(ed, [public("ssh_host_ed25519_key")])
            gw.stop()
            gw.start()
            self.assertEqual(served("rsa"), rsa)
            self.assertEqual(served("ed25519"), ed)
        finally:
            gw.stop()


class AuditAndMetricsTest(unittest.TestCase):
    def test_audit_and_metrics(self):
        c = paramiko_client()
        s = c.open_sftp()
        with s.open("/data/audited.txt", "wb") as f:
            f.write(b"x" * 1000)
        s.close()
        c.close()
        deadline = time.monotonic() + 10
        while True:
            recs = GW.rest("GET", "/api/v1/audit?protocol=sftp&limit=1000")
            recs = recs.get("records", recs) if isinstance(recs, dict) else recs
            closes = [r for r in recs if r.get("op") == "close" and r.get("path") == "data/audited.txt"]
            if closes or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertTrue(closes, recs[:5])
        self.assertEqual(closes[0]["bytes"], 1000)
        self.assertTrue(any(r.get("op") == "login" for r in recs))
        url = "http://%s/metrics" % GW.endpoints["rest"]
        text = urllib.request.urlopen(url, timeout=30).read().decode()
        self.assertIn('weft_sftp_requests_total{op="write"}', text)
        self.assertIn("weft_sftp_logins_total", text)


def main():
    global WEFT, BIG_MIB
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--big-mib", type=int, default=BIG_MIB)
    args, rest = ap.parse_known_args()
    WEFT = os.path.abspath(args.weft)
    BIG_MIB = args.big_mib
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
