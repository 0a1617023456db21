#!/usr/bin/python3
"""The `weft` command as users and tests rely on it: serve on port 0,
endpoints.json, first-start credentials, --version and --help, config errors
(exit 2 and one message naming the key), SIGTERM/SIGINT (exit 0 quickly).

Usage: runtime_test.py --weft PATH --version X.Y.Z [unittest arguments]
Standard library only.
"""

import argparse
import json
import os
import pathlib
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

WEFT = None
VERSION = None
SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]
PROTOCOLS = ("s3", "rest", "nfs", "smb", "sftp")
ALL_PORT_ZERO = [arg for p in PROTOCOLS for arg in ("--" + p, "127.0.0.1:0")]
START_TIMEOUT = 30
STOP_TIMEOUT = 5


class Gateway:
    """One `weft serve` process with its output captured in files."""

    def __init__(self, data, *args):
        self.data = pathlib.Path(data)
        self.out_path = self.data.parent / (self.data.name + ".stdout")
        self.err_path = self.data.parent / (self.data.name + ".stderr")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [WEFT, "serve", "--data", str(self.data), *args], stdout=out, stderr=err)

    def stdout(self):
        return self.out_path.read_text(errors="replace")

    def stderr(self):
        return self.err_path.read_text(errors="replace")

    def wait_for_endpoints(self):
        path = self.data / "endpoints.json"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if path.exists():
                doc = json.loads(path.read_text())
                if doc.get("pid") == self.proc.pid:
                    return doc
            if self.proc.poll() is not None:
                raise AssertionError("weft exited with %d before serving:\n%s"
                                     % (self.proc.returncode, self.stderr()))
            time.sleep(0.05)
        raise AssertionError("no endpoints.json after %d s:\n%s" % (START_TIMEOUT, self.stderr()))

    def stop(self, signo=signal.SIGTERM):
        """Sends `signo`; returns (exit code, seconds until exit)."""
        began = time.monotonic()
        self.proc.send_signal(signo)
        try:
            code = self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("weft did not exit within %d s of signal %d:\n%s"
                                 % (STOP_TIMEOUT, signo, self.stderr()))
        return code, time.monotonic() - began

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_weft(*args, timeout=30):
    return subprocess.run([WEFT, *args], capture_output=True, text=True, timeout=timeout)


class RuntimeTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="weft-it-")
        self.tmp = pathlib.Path(self._tmp.name)
        self.gateways = []

    def tearDown(self):
        for g in self.gateways:
            g.kill()
        self._tmp.cleanup()

    def serve(self, data, *args):
        g = Gateway(data, *args)
        self.gateways.append(g)
        return g

    def check_endpoints(self, g, doc, region="us-east-1"):
        self.assertEqual(doc["region"], region)
        self.assertEqual(doc["pid"], g.proc.pid)
        for protocol in PROTOCOLS:
            if protocol in doc:
                # A front end of this build: bound on the port the OS picked.
                host, port = doc[protocol].rsplit(":", 1)
                self.assertEqual(host, "127.0.0.1")
                self.assertNotEqual(int(port), 0)
                socket.create_connection((host, int(port)), timeout=5).close()
            else:
                self.assertIn("listeners.%s: %s is not available in this build" % (protocol, protocol),
                              g.stderr())
        self.assertEqual(set(doc) - set(PROTOCOLS), {"region", "pid"})

    def test_first_start_writes_credentials_and_sigterm_exits_0(self):
        data = self.tmp / "data"
        g = self.serve(data, *ALL_PORT_ZERO)
        self.check_endpoints(g, g.wait_for_endpoints())

        creds_path = data / "credentials.json"
        self.assertEqual(stat.S_IMODE(creds_path.stat().st_mode), 0o600)
        creds = json.loads(creds_path.read_text())
        self.assertEqual(set(creds), {"user", "password", "access_key_id", "secret_access_key"})
        self.assertEqual(creds["user"], "admin")
        self.assertGreaterEqual(len(creds["password"]), 16)
        self.assertTrue(creds["access_key_id"])
        self.assertTrue(creds["secret_access_key"])
        self.assertIn(str(creds_path.resolve()), g.stdout())

        code, took = g.stop(signal.SIGTERM)
        self.assertEqual(code, 0, g.stderr())
        self.assertLess(took, STOP_TIMEOUT)
        self.assertFalse((data / "endpoints.json").exists())

    def test_second_start_reuses_credentials_and_sigint_exits_0(self):
        data = self.tmp / "data"
        g = self.serve(data, *ALL_PORT_ZERO)
        g.wait_for_endpoints()
        self.assertEqual(g.stop()[0], 0, g.stderr())
        creds_path = data / "credentials.json"
        before = creds_path.read_bytes()
        before_stat = creds_path.stat()

        g2 = self.serve(data, *ALL_PORT_ZERO, "--region", "eu-west-1")
        self.check_endpoints(g2, g2.wait_for_endpoints(), region="eu-west-1")
        self.assertEqual(creds_path.read_bytes(), before)
        self.assertEqual(creds_path.stat().st_ino, before_stat.st_ino)
        self.assertNotIn("credentials", g2.stdout())
        code, took = g2.stop(signal.SIGINT)
        self.assertEqual(code, 0, g2.stderr())
        self.assertLess(took, STOP_TIMEOUT)

    def test_example_config_serves_and_json_logs(self):
        g = self.serve(self.tmp / "data", "--config", str(SOURCE_DIR / "conf/weft.example.json"),
                       *ALL_PORT_ZERO)
        self.check_endpoints(g, g.wait_for_endpoints())
        self.assertEqual(g.stop()[0], 0, g.stderr())

        config = self.tmp / "json-log.json"
        config.write_text('{"log": {"format": "json", "level": "debug"}}')
        g = self.serve(self.tmp / "data2", "--config", str(config), *ALL_PORT_ZERO)
        g.wait_for_endpoints()
        self.assertEqual(g.stop()[0], 0, g.stderr())
        lines = g.stderr().splitlines()
        self.assertTrue(lines)
        for line in lines:
            doc = json.loads(line)
            self.assertEqual(list(doc), ["time", "level", "logger", "msg"])
            self.assertRegex(doc["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        messages = [json.loads(l)["msg"] for l in lines]
        for protocol in PROTOCOLS:
            self.assertTrue(any(m.startswith(protocol + ": listening on 127.0.0.1:") or
                                "listeners.%s: %s is not available in this build" % (protocol, protocol) in m
                                for m in messages), protocol)

    def test_version_and_help(self):
        r = run_weft("--version")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip(), "weft " + VERSION)
        r = run_weft("serve", "--help")
        self.assertEqual(r.returncode, 0)
        for flag in ["--config", "--data", "--region"] + ["--" + p for p in PROTOCOLS]:
            self.assertIn(flag, r.stdout)
        self.assertEqual(run_weft().returncode, 2)  # a subcommand is required
        self.assertEqual(run_weft("serve", "--bogus").returncode, 2)

    def check_config_error(self, args, message):
        r = run_weft("serve", *args)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(message, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_config_errors_exit_2_naming_the_key(self):
        data = ["--data", str(self.tmp / "data")]
        unknown = self.tmp / "unknown.json"
        unknown.write_text('{\n  // comment\n  "listeners": {"s3": "127.0.0.1:0"},\n  "bogus": 1\n}')
        self.check_config_error(["--config", str(unknown), *data], "config: bogus: unknown key")
        nested = self.tmp / "nested.json"
        nested.write_text('{"log": {"colour": "red"}}')
        self.check_config_error(["--config", str(nested), *data], "config: log.colour: unknown key")
        bad_address = self.tmp / "address.json"
        bad_address.write_text('{"listeners": {"nfs": "x:y"}}')
        self.check_config_error(["--config", str(bad_address), *data],
                                'config: listeners.nfs: bad address "x:y" (expected host:port or off)')
        self.check_config_error([*data, "--s3", "nowhere"],
                                'config: listeners.s3 (--s3): bad address "nowhere"')
        wrong_type = self.tmp / "type.json"
        wrong_type.write_text('{"threads": "many"}')
        self.check_config_error(["--config", str(wrong_type), *data],
                                "config: threads: expected a non-negative integer")

        a_file = self.tmp / "a-file"
        a_file.write_text("x")
        self.check_config_error(["--data", str(a_file / "data"), *ALL_PORT_ZERO],
                                'config: data_dir: "%s" cannot be created' % (a_file / "data"))
        if os.geteuid() != 0:  # root writes through mode bits
            read_only = self.tmp / "read-only"
            read_only.mkdir(mode=0o500)
            self.check_config_error(["--data", str(read_only), *ALL_PORT_ZERO],
                                    'config: data_dir: "%s" is not writable' % read_only)
        self.check_config_error(["--config", str(self.tmp / "missing.json"), *data],
                                "config: %s: cannot read" % (self.tmp / "missing.json"))
        self.assertFalse((self.tmp / "data" / "credentials.json").exists())


def main():
    global WEFT, VERSION
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--version", required=True)
    args, rest = parser.parse_known_args()
    WEFT, VERSION = args.weft, args.version
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
