#!/usr/bin/env python3
"""Runs connector_tests (source_test.cpp) against a real server that this
script starts on loopback, seeds with a client of its own, and stops:

    connectors_test.py --server moto|weft-s3|weft-s3-tls|weft-nfs|samba --tests BIN [--weft WEFT]

  moto         moto_server (S3); skipped, visibly, when moto is not installed
  weft-s3      a second `weft serve`, its S3 front end over HTTP, payloads signed
  weft-s3-tls  the same over HTTPS (its self-signed certificate trusted),
               UNSIGNED-PAYLOAD, the source rooted at a prefix of the bucket
  weft-nfs     `weft serve`'s NFSv3 front end
  samba        Debian's smbd on a free port (needs root, as smbd does)

Seeded: tree/{small.txt, big.bin, odd name+%.txt, sub/inner.txt} and many/
(1100 files for S3, so that listings take several pages; 300 otherwise).
After the binary passes, what its write-back test left in wb/ is checked
with this script's client. The binary changes the remote through
`connectors_test.py mutate put PATH TEXT | delete PATH`, which reaches the
same server through the same client, found from the environment.

Exit status: the binary's; 77 (ctest's SKIP_RETURN_CODE) when the server
cannot run here. Standard library, plus requests (weft) and boto3 (moto)."""

import argparse
import concurrent.futures
import ctypes
import os
import pathlib
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "protocols" / "rest"))

SKIP = 77
PR_SET_CHILD_SUBREAPER = 36
BUCKET = "conn"
START_TIMEOUT = 30


def skip(why):
    print("SKIPPED: " + why, flush=True)
    sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    raise AssertionError("%s does not listen on %d after %d s" % (what, port, START_TIMEOUT))


def stop_process(proc, log):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


def pattern(n, seed):
    """The write-back test's content (source_test.cpp computes the same)."""
    return bytes((i * 131 + seed) % 251 for i in range(n))


# --- Clients: how this script reads and changes each kind of remote -------

class S3Client:
    def __init__(self, url, bucket, prefix, key, secret, verify=None):
        import boto3
        from botocore.config import Config
        self.bucket, self.prefix = bucket, prefix
        self.s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
                               region_name="us-east-1", verify=verify,
                               config=Config(s3={"addressing_style": "path"}, max_pool_connections=16))

    @classmethod
    def from_env(cls):
        e = os.environ
        return cls(e["WEFT_CONN_S3_URL"], e["WEFT_CONN_S3_BUCKET"], e.get("WEFT_CONN_S3_PREFIX", ""),
                   e["WEFT_CONN_S3_KEY"], e["WEFT_CONN_S3_SECRET"], e.get("WEFT_CONN_S3_CA") or None)

    def key(self, path):
        return self.prefix + "/" + path if self.prefix else path

    def put(self, path, body):
        self.s3.put_object(Bucket=self.bucket, Key=self.key(path), Body=body)

    def delete(self, path):
        # A file, or a directory's marker: S3 deletes of absent keys succeed.
        self.s3.delete_object(Bucket=self.bucket, Key=self.key(path))
        self.s3.delete_object(Bucket=self.bucket, Key=self.key(path) + "/")

    def get(self, path):
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=self.key(path))["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            return None


class RestClient:
    """weft's REST API, under `base` ("data/conn")."""

    def __init__(self, url, user, password, base):
        import requests
        self.url, self.auth, self.base = url, (user, password), base
        self.session = requests.Session()

    @classmethod
    def from_env(cls):
        e = os.environ
        return cls(e["WEFT_CONN_REST_URL"], e["WEFT_CONN_REST_USER"], e["WEFT_CONN_REST_PASSWORD"],
                   e["WEFT_CONN_REST_BASE"])

    def call(self, method, route, **kw):
        return self.session.request(method, self.url + "/api/v1/" + route, auth=self.auth, timeout=60, **kw)

    def put(self, path, body):
        r = self.call("PUT", "files/%s/%s" % (self.base, path), data=body, params={"mkdirs": "true"},
                      headers={"Content-Type": "application/octet-stream"})
        assert r.status_code in (200, 201), r.text

    def delete(self, path):
        r = self.call("DELETE", "files/%s/%s" % (self.base, path))
        assert r.status_code in (200, 204), r.text

    def get(self, path):
        r = self.call("GET", "files/%s/%s" % (self.base, path))
        return r.content if r.status_code == 200 else None


class LocalClient:
    """The directory an smbd shares, changed as a local program would."""

    def __init__(self, root):
        self.root = pathlib.Path(root)

    @classmethod
    def from_env(cls):
        return cls(os.environ["WEFT_CONN_SMB_DIR"])

    def put(self, path, body):
        p = self.root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)

    def delete(self, path):
        p = self.root / path
        p.rmdir() if p.is_dir() else p.unlink()

    def get(self, path):
        p = self.root / path
        return p.read_bytes() if p.is_file() else None


CLIENTS = {"s3": S3Client, "rest": RestClient, "local": LocalClient}


# --- Servers ---------------------------------------------------------------

class Moto:
    def __init__(self, tmp):
        exe = shutil.which("moto_server")
        if exe is None:
            skip("moto_server is not installed (pip package moto[server])")
        self.port = free_port()
        self.log = open(tmp / "moto.log", "wb")
        self.tmp = tmp
        self.proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(self.port)], stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def setup(self):
        if not wait_port(self.port, self.proc, "moto_server"):
            skip("moto_server exited at once:\n" + (self.tmp / "moto.log").read_text(errors="replace")[-2000:])
        url = "http://127.0.0.1:%d" % self.port
        self.env = {"WEFT_CONN_KIND": "s3", "WEFT_CONN_MUTATOR": "s3", "WEFT_CONN_S3_URL": url,
                    "WEFT_CONN_S3_BUCKET": BUCKET, "WEFT_CONN_S3_KEY": "AKIDCONNECTORS",
                    "WEFT_CONN_S3_SECRET": "connectors-secret", "WEFT_CONN_S3_AUTH": "0"}
        self.many = 1100
        os.environ.update(self.env)
        self.client = S3Client.from_env()
        self.client.s3.create_bucket(Bucket=BUCKET)

    def stop(self):
        stop_process(self.proc, self.log)
        return 0


class WeftSite:
    """A second weft, reached over S3 (plain or TLS) or NFS; seeded over REST."""

    def __init__(self, weft, kind, tls=False):
        from gateway import Gateway
        protocols = ("rest", "nfs") if kind == "nfs" else ("rest", "s3")
        args = ["--s3-tls", "127.0.0.1:0"] if tls else []
        self.gw = Gateway(weft, protocols=protocols, prefix="weft-conn-", args=args)
        self.kind, self.tls = kind, tls

    def setup(self):
        kind, tls = self.kind, self.tls
        user, password = self.gw.admin
        prefix = "nested/base" if tls else ""
        base = "data/" + BUCKET + ("/" + prefix if prefix else "")
        self.env = {"WEFT_CONN_MUTATOR": "rest", "WEFT_CONN_REST_URL": self.gw.url, "WEFT_CONN_REST_USER": user,
                    "WEFT_CONN_REST_PASSWORD": password, "WEFT_CONN_REST_BASE": base}
        os.environ.update(self.env)
        self.client = RestClient.from_env()
        r = self.client.call("POST", "dirs/" + base, params={"parents": "true"})
        assert r.status_code == 201, r.text
        if kind == "nfs":
            port = int(self.gw.endpoints["nfs"].rsplit(":", 1)[1])
            query = "?version=3&nfsport=%d&mountport=%d" % (port, port)
            self.env.update({"WEFT_CONN_KIND": "nfs",
                             "WEFT_CONN_NFS_URL": "nfs://127.0.0.1/" + base + query,
                             "WEFT_CONN_NFS_DENIED_UID": "4242",
                             "WEFT_CONN_NFS_RO_URL": "nfs://127.0.0.1/team" + query,
                             "WEFT_CONN_NFS_RO_UID": "4100"})
            self.read_only_export(base)
            self.many = 300
        else:
            creds = self.gw.credentials
            self.env.update({"WEFT_CONN_KIND": "s3", "WEFT_CONN_S3_BUCKET": BUCKET, "WEFT_CONN_S3_PREFIX": prefix,
                             "WEFT_CONN_S3_KEY": creds["access_key_id"],
                             "WEFT_CONN_S3_SECRET": creds["secret_access_key"], "WEFT_CONN_S3_AUTH": "1"})
            if tls:
                self.env.update({"WEFT_CONN_S3_URL": "https://" + self.gw.endpoints["s3_tls"],
                                 "WEFT_CONN_S3_CA": str(self.gw.data / "tls" / "cert.pem"),
                                 "WEFT_CONN_S3_UNSIGNED": "1"})
            else:
                self.env["WEFT_CONN_S3_URL"] = "http://" + self.gw.endpoints["s3"]
            self.many = 1100

    def read_only_export(self, base):
        """Export `team`: the seeded tree, which uid 4100 (user reader) may only read."""
        r = self.client.call("POST", "dirs/%s/tree" % base)
        assert r.status_code == 201, r.text
        for method, route, body in (("POST", "users", {"name": "reader", "password": "reader-pw"}),
                                    ("PUT", "users/reader/ids", {"uid": 4100, "gid": 4100}),
                                    ("PUT", "exports/team", {"path": "/" + base[len("data/"):] + "/tree",
                                                             "default_access": "none",
                                                             "users": {"reader": "read_only"}})):
            r = self.client.call(method, route, json=body)
            assert r.status_code in (200, 201), "%s %s: %s" % (method, route, r.text)

    def stop(self):
        return self.gw.stop()


class Samba:
    def __init__(self, tmp):
        smbd = shutil.which("smbd") or "/usr/sbin/smbd"
        if not os.path.exists(smbd) or shutil.which("smbpasswd") is None:
            skip("smbd is not installed (Debian package samba)")
        if os.geteuid() != 0:
            skip("smbd needs root")
        user = pwd.getpwuid(os.geteuid()).pw_name
        password = "ConnPass123"
        self.port = free_port()
        d = tmp / "samba"
        share = tmp / "share"
        for sub in ("private", "lock", "state", "cache", "pid", "log"):
            (d / sub).mkdir(parents=True)
        share.mkdir()
        conf = d / "smb.conf"
        conf.write_text(f"""[global]
  server role = standalone server
  interfaces = 127.0.0.1
  bind interfaces only = yes
  smb ports = {self.port}
  disable netbios = yes
  private dir = {d}/private
  lock directory = {d}/lock
  state directory = {d}/state
  cache directory = {d}/cache
  pid directory = {d}/pid
  log file = {d}/log/log.%m
  log level = 0
  passdb backend = tdbsam:{d}/private/passdb.tdb
  map to guest = never
  server min protocol = SMB2_02
  load printers = no
  printcap name = /dev/null
  disable spoolss = yes
[conn]
  path = {share}
  read only = no
  valid users = {user}
[conn-ro]
  path = {share}
  read only = yes
  valid users = {user}
""")
        subprocess.run(["smbpasswd", "-c", str(conf), "-s", "-a", user], input="%s\n%s\n" % (password, password),
                       text=True, check=True, stdout=subprocess.DEVNULL)
        self.log = open(d / "log" / "smbd.out", "wb")
        # smbd's children outlive its main process by a moment when it stops;
        # as their subreaper this script reaps them (init here does not).
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        # Its own session: smbd signals its whole process group when it stops.
        self.proc = subprocess.Popen([smbd, "--foreground", "--no-process-group", "-s", str(conf), "--debug-stdout"],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.user, self.password, self.share = user, password, share

    def stop(self):
        stop_process(self.proc, self.log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break  # none left
            if pid == 0:
                time.sleep(0.05)
        return 0

    def setup(self):
        user, password, share = self.user, self.password, self.share
        if not wait_port(self.port, self.proc, "smbd"):
            raise AssertionError("smbd exited with %d" % self.proc.returncode)
        self.env = {"WEFT_CONN_KIND": "smb", "WEFT_CONN_MUTATOR": "local", "WEFT_CONN_SMB_DIR": str(share),
                    "WEFT_CONN_SMB_SERVER": "127.0.0.1:%d" % self.port, "WEFT_CONN_SMB_SHARE": "conn",
                    "WEFT_CONN_SMB_RO_SHARE": "conn-ro", "WEFT_CONN_SMB_USER": user,
                    "WEFT_CONN_SMB_PASSWORD": password}
        os.environ.update(self.env)
        self.client = LocalClient.from_env()
        self.many = 300



def seed(client, many, expect):
    big = os.urandom(6 << 20)
    expect.write_bytes(big)
    files = [("tree/small.txt", b"hello connectors\n"), ("tree/big.bin", big), ("tree/odd name+%.txt", b"odd"),
             ("tree/sub/inner.txt", b"inner\n")]
    files += [("many/f%05d" % i, str(i).encode()) for i in range(many)]
    client.put(*files[0])  # the directories first, then the rest at once
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for f in pool.map(lambda f: client.put(*f), files[1:]):
            pass


def check_write_back(client):
    """What source_test.cpp's write-back test leaves, read with another client."""
    problems = []
    for path, expected in (("wb/renamed.bin", pattern(1000, 2)), ("wb/keep.txt", b"kept"),
                           ("wb/new.bin", None), ("wb/other.bin", None)):
        got = client.get(path)
        if got != expected:
            problems.append("%s: %s" % (path, "absent" if got is None else "%d bytes, not as written" % len(got)))
    return problems


def mutate(args):
    client = CLIENTS[os.environ["WEFT_CONN_MUTATOR"]].from_env()
    if args[0] == "put" and len(args) == 3:
        client.put(args[1], args[2].encode())
    elif args[0] == "delete" and len(args) == 2:
        client.delete(args[1])
    else:
        raise SystemExit("usage: connectors_test.py mutate put PATH TEXT | delete PATH")
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "mutate":
        return mutate(sys.argv[2:])
    # ctest's timeout: stop the servers on the way out (the finally below).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True, choices=("moto", "weft-s3", "weft-s3-tls", "weft-nfs", "samba"))
    p.add_argument("--tests", required=True)
    p.add_argument("--weft")
    args, rest = p.parse_known_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="weft-connectors-"))
    server = None
    try:
        if args.server == "moto":
            server = Moto(tmp)
        elif args.server == "samba":
            server = Samba(tmp)
        else:
            if not args.weft:
                raise SystemExit("--weft is needed for " + args.server)
            kind = "nfs" if args.server == "weft-nfs" else "s3"
            server = WeftSite(args.weft, kind, tls=args.server == "weft-s3-tls")
        server.setup()  # once `server` is set, so that a failure here still stops it
        expect = tmp / "big.bin"
        started = time.monotonic()
        seed(server.client, server.many, expect)
        print("seeded %d files in %.1f s" % (server.many + 4, time.monotonic() - started), flush=True)
        env = dict(os.environ, **server.env, WEFT_CONN_EXPECT=str(expect), WEFT_CONN_MANY=str(server.many),
                   WEFT_CONN_PYTHON=sys.executable, WEFT_CONN_DRIVER=str(pathlib.Path(__file__).resolve()))
        suites = "common," + server.env["WEFT_CONN_KIND"]
        code = subprocess.run([args.tests, "--test-suite=" + suites, *rest], env=env).returncode
        if code == 0:
            problems = check_write_back(server.client)
            for line in problems:
                print("write-back, seen by another client: " + line)
            code = 1 if problems else 0
    finally:
        stopped = server.stop() if server else 0
        shutil.rmtree(tmp, ignore_errors=True)
    if code == 0 and stopped != 0:
        print("the server exited with %r" % stopped)
        code = 1
    return code


if __name__ == "__main__":
    sys.exit(main())
