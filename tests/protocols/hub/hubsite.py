"""A `weft serve` site for the hub tests: started on port 0 in a scratch
directory with a region and residency rules, its endpoints and admin
credentials read back, stopped with SIGTERM; and a WAN emulator in front of
it on request. Standard library only."""

import json
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

START_TIMEOUT = 30
STOP_TIMEOUT = 10
HERE = pathlib.Path(__file__).resolve().parent
EMULATOR = HERE.parent.parent / "tools" / "wan_emulator.py"


class Site:
    def __init__(self, weft, region="us-east-1", residency=()):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="weft-hub-"))
        self.data = self.tmp / "data"
        config = self.tmp / "weft.json"
        config.write_text(json.dumps({"residency": [{"prefix": p, "regions": list(r)} for p, r in residency]}))
        args = ["--config", str(config), "--data", str(self.data), "--region", region,
                "--rest", "127.0.0.1:0", "--s3", "off", "--nfs", "off", "--smb", "off", "--sftp", "off"]
        self.log_path = self.tmp / "weft.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([weft, "serve", *args], stdout=log, stderr=subprocess.STDOUT)
        self.endpoints = self._wait_for_endpoints()
        self.credentials = json.loads((self.data / "credentials.json").read_text())
        self.rest = self.endpoints["rest"]
        self.admin = (self.credentials["user"], self.credentials["password"])
        self.emulators = []

    def _wait_for_endpoints(self):
        path = self.data / "endpoints.json"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if path.exists():
                doc = json.loads(path.read_text())
                if doc.get("pid") == self.proc.pid:
                    return doc
            if self.proc.poll() is not None:
                raise AssertionError("weft exited with %d:\n%s" % (self.proc.returncode, self.log()))
            time.sleep(0.05)
        raise AssertionError("no endpoints.json after %d s:\n%s" % (START_TIMEOUT, self.log()))

    def log(self):
        return self.log_path.read_text(errors="replace")

    def emulator(self, *args):
        """A WAN emulator in front of the REST listener: (address, Emulator)."""
        e = Emulator(self.rest, *args)
        self.emulators.append(e)
        return e

    def stop(self):
        for e in self.emulators:
            e.stop()
        code = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            code = self.proc.returncode
        shutil.rmtree(self.tmp, ignore_errors=True)
        return code


class Emulator:
    def __init__(self, target, *args):
        import socket
        self.proc = subprocess.Popen([sys.executable, str(EMULATOR), "--target", target, *args],
                                     stdout=subprocess.PIPE, text=True)
        info = json.loads(self.proc.stdout.readline())
        self.address = info["listen"]
        host, _, port = info["control"].rpartition(":")
        self.control = socket.create_connection((host, int(port)))
        self.control_file = self.control.makefile("rw")

    def command(self, line):
        self.control_file.write(line + "\n")
        self.control_file.flush()
        answer = json.loads(self.control_file.readline())
        assert answer["ok"], answer
        return answer

    def stop(self):
        self.control_file.close()
        self.control.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
