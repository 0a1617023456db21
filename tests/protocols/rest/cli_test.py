#!/usr/bin/python3
"""The operator commands of the `weft` binary against a real gateway: through
a pseudo-terminal (progress bars redrawn in place) and through pipes (plain
progress lines), with --json output for scripts, credentials from --data,
from WEFT_URL/WEFT_TOKEN and from --token, and their exit codes.

Usage: cli_test.py --weft PATH --source DIR [unittest arguments]
Standard library only.
"""

import argparse
import base64
import errno
import hashlib
import http.client
import json
import os
import pathlib
import pty
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gateway import Gateway  # noqa: E402

WEFT = None


def in_pty(args, env=None, timeout=120):
    """Runs weft with stdin, stdout and stderr on a pseudo-terminal; returns
    (exit code, everything it wrote)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(WEFT, [WEFT, *args], env or os.environ)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError as e:  # EIO: the child closed the terminal
            if e.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(WEFT)
        cls.work = cls.gw.tmp / "work"
        cls.work.mkdir()
        cls.big = cls.work / "big.bin"
        cls.big.write_bytes(os.urandom(24 << 20))

    @classmethod
    def tearDownClass(cls):
        assert cls.gw.stop() == 0

    def weft(self, *args, data=True, env=None, input=None, check=True):
        """Runs weft with pipes; returns the CompletedProcess."""
        argv = [WEFT, *args]
        if data:
            argv += ["--data", str(self.gw.data)]
        r = subprocess.run(argv, capture_output=True, env=env, input=input, timeout=300)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        return r

    def test_status(self):
        out = self.weft("status").stdout.decode()
        self.assertIn("at " + self.gw.url, out)
        self.assertIn("signed in as admin (administrator)", out)
        self.assertIn(self.gw.endpoints["s3"], out)
        info = json.loads(self.weft("status", "--json").stdout)
        self.assertEqual(info["endpoints"]["rest"], self.gw.endpoints["rest"])

    def test_put_through_a_terminal_draws_a_bar(self):
        code, out = in_pty(["put", "--data", str(self.gw.data), "--mkdirs", str(self.big), "data/tty/big.bin"])
        self.assertEqual(code, 0, out)
        self.assertIn("\r", out)                 # redrawn in place
        self.assertRegex(out, r"\[#+-*\] +\d+%")  # a bar with a percentage
        self.assertIn("[" + "#" * 30 + "] 100%", out)
        self.assertIn("24.0 MiB/24.0 MiB", out)
        self.assertIn("data/tty/big.bin: %d bytes, version 1, sha256 %s"
                      % (self.big.stat().st_size, hashlib.sha256(self.big.read_bytes()).hexdigest()), out)
        # The verify job follows with a bar as well.
        code, out = in_pty(["jobs", "verify", "--data", str(self.gw.data), "data/tty"])
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"verify data/tty \[#+-*\] +100%")
        self.assertIn("verify data/tty: 1 files", out)
        self.assertIn("0 mismatches, 0 errors", out)

    def test_put_through_a_pipe_prints_plain_lines(self):
        r = self.weft("put", "--mkdirs", str(self.big), "data/pipe/big.bin")
        err = r.stderr.decode()
        self.assertNotIn("\r", err)
        self.assertNotIn("\x1b", err)
        self.assertNotIn("[#", err)
        lines = err.splitlines()
        self.assertGreaterEqual(len(lines), 1)
        for line in lines:
            self.assertTrue(line.startswith("data/pipe/big.bin: "), line)
        self.assertRegex(lines[-1], r"^data/pipe/big\.bin: 24\.0 MiB/24\.0 MiB, .* in \d+:\d\d \(stored\)$")
        # cat through pipes: the content on stdout, plain progress on stderr.
        r = self.weft("cat", "data/pipe/big.bin")
        self.assertEqual(r.stdout, self.big.read_bytes())
        self.assertNotIn(b"\r", r.stderr)
        self.assertRegex(r.stderr.decode().splitlines()[-1], r"\(done\)$")
        self.assertEqual(self.weft("cat", "--quiet", "data/pipe/big.bin").stderr, b"")
        r = self.weft("jobs", "verify", "data/pipe")
        self.assertNotIn(b"\r", r.stderr)
        self.assertRegex(r.stderr.decode().splitlines()[-1], r"^verify data/pipe: .*\(succeeded\)$")
        self.assertIn(b"0 mismatches, 0 errors", r.stdout)

    def test_files_commands_and_json(self):
        small = self.work / "small.txt"
        small.write_bytes(b"hello weft\n")
        self.weft("mkdir", "-p", "data/cli/a/b")
        self.weft("put", "-q", str(small), "data/cli/a/b/hello.txt")
        self.assertEqual(self.weft("cat", "data/cli/a/b/hello.txt").stdout, b"hello weft\n")
        self.assertEqual(self.weft("ls", "data/cli/a/b").stdout.decode(), "hello.txt\n")
        self.assertEqual(self.weft("ls", "data/cli/a").stdout.decode(), "b/\n")
        long = self.weft("ls", "-l", "data/cli/a/b").stdout.decode()
        self.assertRegex(long, r"^- 0644 +\d+ +\d+ +11 \S+ hello\.txt\n$")
        st = json.loads(self.weft("stat", "--json", "data/cli/a/b/hello.txt").stdout)
        self.assertEqual((st["type"], st["size"], st["version"]), ("file", 11, 1))
        self.assertIn("size     11", self.weft("stat", "data/cli/a/b/hello.txt").stdout.decode())
        self.weft("mv", "data/cli/a/b/hello.txt", "data/cli/a/hello.txt")
        self.weft("rm", "data/cli/a/hello.txt")
        r = self.weft("rm", "data/cli/a/hello.txt", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("(not_found, HTTP 404, request ", r.stderr.decode())
        # ls pages: more entries than one page holds.
        self.weft("mkdir", "data/cli/many")
        names = ["e%04d" % i for i in range(1100)]
        host, port = self.gw.endpoints["rest"].rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        auth = "Basic " + base64.b64encode(("%s:%s" % self.gw.admin).encode()).decode()
        for name in names:
            conn.request("POST", "/api/v1/dirs/data/cli/many/" + name, headers={"Authorization": auth})
            r = conn.getresponse()
            r.read()
            self.assertEqual(r.status, 201)
        conn.close()
        listed = self.weft("ls", "data/cli/many").stdout.decode().splitlines()
        self.assertEqual(listed, [n + "/" for n in names])
        doc = json.loads(self.weft("ls", "--json", "data/cli/many").stdout)
        self.assertEqual([e["name"] for e in doc["entries"]], names)

    def test_users_tokens_jobs_and_audit(self):
        out = self.weft("user", "add", "--uid", "5001", "zoe").stdout.decode()
        self.assertIn("created user zoe (uid 5001, gid 5001)", out)
        password = out.split("password: ")[1].split()[0]
        self.assertEqual(len(password), 32)
        self.assertIn("zoe", self.weft("user", "list").stdout.decode())
        users = json.loads(self.weft("user", "list", "--json").stdout)["users"]
        self.assertIn("zoe", [u["name"] for u in users])
        key = self.weft("user", "key", "zoe").stdout.decode()
        self.assertRegex(key, r"access_key_id: \S+\nsecret_access_key: \S+\n")
        access = key.split()[1]
        self.weft("user", "key", "zoe", "--delete", access)
        token_out = self.weft("token", "create", "zoe", "--name", "script").stdout.decode()
        secret = token_out.strip().splitlines()[-1]
        self.assertTrue(secret.startswith("weft_"))
        tokens = json.loads(self.weft("token", "list", "--json").stdout)["tokens"]
        [tok] = [t for t in tokens if t["name"] == "script"]
        # The token from the environment, the address from WEFT_URL.
        env = dict(os.environ, WEFT_URL=self.gw.url, WEFT_TOKEN=secret)
        r = self.weft("status", data=False, env=env)
        self.assertIn("signed in as zoe\n", r.stdout.decode())
        self.assertEqual(self.weft("user", "list", data=False, env=env, check=False).returncode, 1)
        r = self.weft("status", "--url", self.gw.url, "--token", secret, data=False)
        self.assertIn("signed in as zoe", r.stdout.decode())
        self.weft("token", "revoke", tok["id"])
        r = self.weft("status", data=False, env=env, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("unauthenticated", r.stderr.decode())
        self.weft("user", "passwd", "zoe", "--password", "zoe-new")
        self.weft("user", "del", "zoe")
        self.assertNotIn("zoe", self.weft("user", "list").stdout.decode())
        # Jobs: start without waiting, then list, get and cancel.
        small = self.work / "j.txt"
        small.write_bytes(b"job")
        self.weft("put", "-q", "--mkdirs", str(small), "data/jobs/j.txt")
        started = json.loads(self.weft("jobs", "verify", "--no-wait", "--json", "data/jobs").stdout)
        listed = self.weft("jobs").stdout.decode()
        self.assertIn(started["id"], listed)
        self.assertIn(started["id"], self.weft("jobs", "list").stdout.decode())
        got = json.loads(self.weft("jobs", "get", "--json", started["id"]).stdout)
        self.assertEqual(got["path"], "data/jobs")
        self.weft("jobs", "cancel", started["id"])
        self.assertEqual(self.weft("jobs", "get", "nope", check=False).returncode, 1)
        # Audit: what was just done, oldest first.
        tail = self.weft("audit", "tail", "-n", "200").stdout.decode().splitlines()
        ops = [line.split()[4] for line in tail]
        self.assertIn("users.delete", ops)
        self.assertLess(ops.index("users.create"), ops.index("users.delete"))
        zoe_lines = self.weft("audit", "tail", "--user", "zoe").stdout.decode().splitlines()
        self.assertTrue(zoe_lines)
        self.assertTrue(all(line.split()[1] == "zoe" for line in zoe_lines))
        records = json.loads(self.weft("audit", "tail", "--json", "--path", "data/jobs").stdout)["records"]
        self.assertTrue(records)
        self.assertTrue(all(r["path"].startswith("data/jobs") for r in records))

    def test_warm_with_a_bar_an_index_and_ctrl_c(self):
        small = self.work / "w.txt"
        small.write_bytes(b"warm me\n")
        self.weft("put", "-q", "--mkdirs", str(self.big), "data/warm/big.bin")
        self.weft("put", "-q", "--mkdirs", str(small), "data/warm/sub/w.txt")
        code, out = in_pty(["warm", "--data", str(self.gw.data), "data/warm"])
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"warm data/warm \[#+-*\] +100%")
        self.assertIn("warm data/warm: 2 of 2 files read, 24.0 MiB; 0 errors", out)
        # An index: only its files, in its order; one missing is an error
        # the job reports, and the exit code says not everything was read.
        index = self.work / "index.txt"
        index.write_text("sub/w.txt\n\nmissing.bin\n")
        r = self.weft("warm", "data/warm", "--index", str(index), check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("warm data/warm: 1 of 2 files read, 8 B; 1 errors", r.stdout.decode())
        self.assertIn("ERROR data/warm/missing.bin: ", r.stdout.decode())
        self.assertRegex(r.stderr.decode().splitlines()[-1], r"^warm data/warm: .*\(succeeded\)$")
        job = json.loads(self.weft("warm", "--json", "data/warm/big.bin").stdout)
        self.assertEqual((job["state"], job["result"]["bytes_read"]), ("succeeded", 24 << 20))
        # A missing path is refused at once; a missing index is a usage error.
        r = self.weft("warm", "data/warm/nothing", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not_found", r.stderr.decode())
        self.assertEqual(self.weft("warm", "data/warm", "--index", str(self.work / "none"), check=False).returncode, 2)
        # Ctrl-C cancels the job: an index naming a 64 MiB file 4,000 times
        # (250 GiB to read) is still running when the bar first shows. The
        # file is larger than a CPU cache (24 MiB named 400 times was read
        # over in 0.2 s on a 2-core VM); the request body holds at most
        # 64 KiB of index.
        slow = self.work / "slow.bin"
        slow.write_bytes(os.urandom(64 << 20))
        self.weft("put", "-q", str(slow), "data/warm/slow.bin")
        index.write_text("slow.bin\n" * 4000)
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(WEFT, [WEFT, "warm", "--data", str(self.gw.data), "data/warm", "--index", str(index)])
        out = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            if b"warm data/warm [" not in out and b"warm data/warm [" in out + chunk:
                os.kill(pid, signal.SIGINT)
            out += chunk
        os.close(fd)
        _, status = os.waitpid(pid, 0)
        text = out.decode(errors="replace")
        self.assertEqual(os.waitstatus_to_exitcode(status), 1, text)
        self.assertIn("(cancelled)", text)
        jobs = json.loads(self.weft("jobs", "--json").stdout)["jobs"]
        self.assertEqual(jobs[0]["state"], "cancelled")
        self.assertLess(jobs[0]["progress"]["bytes_done"], 4000 * (64 << 20))

    def test_setup_errors_exit_2(self):
        empty = self.work / "empty"
        empty.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("WEFT_")}
        r = self.weft("status", "--data", str(empty), data=False, env=env, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no gateway address", r.stderr.decode())
        r = self.weft("status", "--url", self.gw.url, "--data", str(empty), data=False, env=env, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no credentials", r.stderr.decode())
        r = self.weft("put", "/nonexistent/file", "data/x", check=False)
        self.assertEqual(r.returncode, 2)
        r = self.weft("status", "--url", "http://127.0.0.1:1", "--token", "x", data=False, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("request failed", r.stderr.decode())
        self.assertEqual(self.weft("ls", data=False, check=False).returncode, 2)  # a path is required


def main():
    global WEFT
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--source", required=True)
    args, rest = parser.parse_known_args()
    WEFT = args.weft
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
