"""A `weft serve` site for the hub tests: started on port 0 in a scratch
directory with a region and residency rules, its endpoints and admin
credentials read back, stopped with SIGTERM; and a WAN emulator in front of
it on request. Standard library only."""

import json
import pathlib
import socket
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
EMULATOR = HERE.parent.parent / "tools" / "wan_emulator.py"
sys.path.insert(0, str(HERE.parent / "rest"))
from gateway import Gateway  # noqa: E402  (the REST tests' `weft serve` harness)


class Site(Gateway):
    def __init__(self, weft, region="us-east-1", residency=()):
        super().__init__(weft, protocols=("rest",), region=region, prefix="weft-hub-",
                         config={"residency": [{"prefix": p, "regions": list(r)} for p, r in residency]})
        self.rest = self.endpoints["rest"]
        self.emulators = []

    def emulator(self, *args):
        """A WAN emulator in front of the REST listener: (address, Emulator)."""
        e = Emulator(self.rest, *args)
        self.emulators.append(e)
        return e

    def stop(self):
        for e in self.emulators:
            e.stop()
        return super().stop()


class Emulator:
    def __init__(self, target, *args):
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
