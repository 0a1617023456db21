"""A `weft serve` site for the hub tests: started on port 0 in a scratch
directory with a region and residency rules, its endpoints and admin
credentials read back, stopped with SIGTERM; a WAN emulator in front of it
on request; and a spoke site that mounts a hub directory (its clients need
boto3 and paramiko, imported when asked for)."""

import argparse
import faulthandler
import json
import pathlib
import socket
import subprocess
import sys
import time
import unittest

HERE = pathlib.Path(__file__).resolve().parent
EMULATOR = HERE.parent.parent / "tools" / "wan_emulator.py"
sys.path.insert(0, str(HERE.parent / "rest"))
from gateway import Gateway  # noqa: E402  (the REST tests' `weft serve` harness)


class Site(Gateway):
    """`tls`: the REST listener over TLS too (its self-signed certificate in
    `ca`, its address in `rest_tls`); `config`: more of the config file
    (e.g. "metrics_history")."""

    def __init__(self, weft, region="us-east-1", residency=(), tls=False, config=None):
        config = dict(config or {}, residency=[{"prefix": p, "regions": list(r)} for p, r in residency])
        if tls:
            config["listeners"] = {"rest_tls": "127.0.0.1:0"}
        super().__init__(weft, protocols=("rest",), region=region, prefix="weft-hub-", config=config)
        self.rest = self.endpoints["rest"]
        self.rest_tls = self.endpoints.get("rest_tls")
        self.ca = str(self.data / "tls" / "cert.pem")
        self.emulators = []

    def restart(self, crash=False):
        super().restart(crash)
        self.rest = self.endpoints["rest"]
        self.rest_tls = self.endpoints.get("rest_tls")

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


SPOKE_PROTOCOLS = ("rest", "s3", "sftp", "nfs")


class Spoke(Gateway):
    """A spoke `weft serve` mounting `remote` of `hub_url` at `local` (by
    config, or by flags; `local` None: no mount, one is added at run time),
    serving `protocols`; `spoke_cache`: the config's chunk cache budgets;
    `ca`: the certificates an https hub is verified with; `prefetch`: the
    mount's learning prefetcher on or off; `write`: how the mount's writes
    reach the hub, "through" or "back" (None, for both: the default);
    `config`: more of the config file (e.g. "metrics_history")."""

    def __init__(self, weft, hub, hub_url, mode="strict", flags=False, protocols=SPOKE_PROTOCOLS, region=None,
                 local="/datasets", remote="data/datasets", spoke_cache=None, ca=None, prefetch=None, write=None,
                 config=None):
        credentials = str(hub.data / "credentials.json")
        self.protocols = protocols
        args, config = [], dict(config or {})
        if flags:
            args = ["--spoke", "%s=%s/%s" % (local, hub_url, remote),
                    "--spoke-credentials", credentials, "--spoke-mode", mode]
            if ca:
                args += ["--spoke-ca", ca]
        elif local:
            config["spokes"] = [{"local": local, "hub": hub_url, "remote": remote,
                                 "credentials": credentials, "mode": mode}]
            if ca:
                config["spokes"][0]["ca_file"] = ca
            if prefetch is not None:
                config["spokes"][0]["prefetch"] = prefetch
            if write is not None:
                config["spokes"][0]["write"] = write
        if spoke_cache:
            config["spoke_cache"] = spoke_cache
        super().__init__(weft, protocols=protocols, prefix="weft-spoke-", region=region, args=args,
                         config=config or None)


def rest(site):
    """A requests session signed in as the site's administrator."""
    import requests
    s = requests.Session()
    s.auth = site.admin
    return s


def hub_put(hub, path, body):
    """Writes `body` at `path` of the hub through its REST API."""
    with rest(hub) as s:
        r = s.put(hub.url + "/api/v1/files/" + path, data=body, params={"mkdirs": "true"})
        assert r.status_code in (200, 201), r.text


def hub_chunk_calls(hub):
    """Chunk requests the hub has answered (of one file or of several)."""
    import requests
    text = requests.get("http://%s/metrics" % hub.rest).text
    total = 0.0
    for line in text.splitlines():
        for call in ("chunks", "dir_chunks"):
            if line.startswith('weft_hub_requests_total{call="%s"}' % call):
                total += float(line.rpartition(" ")[2])
    return total


def spoke_mount(session, spoke):
    """The spoke's (first) mount as GET /api/v1/spokes shows it."""
    r = session.get(spoke.url + "/api/v1/spokes")
    assert r.status_code == 200, r.text
    return r.json()["spokes"][0]


def sampler_fetched_bytes(session, spoke):
    """The bytes the spoke's prefetcher fetched on its sampler expert's word."""
    experts = {e["name"]: e for e in spoke_mount(session, spoke)["prefetch"]["experts"]}
    return experts["sampler"]["fetched_bytes"]


def fetched_ahead(session, spoke, hub, want, seconds=20):
    """Whether, within `seconds`, the sampler expert's fetched bytes reach
    `want` and the hub then answers no chunk request for half a second
    (what was fetched ahead has arrived)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if sampler_fetched_bytes(session, spoke) >= want:
            before = hub_chunk_calls(hub)
            time.sleep(0.5)
            if hub_chunk_calls(hub) == before:
                return True
        else:
            time.sleep(0.1)
    return False


M64 = 2**64 - 1


def sampler_order(n, seed, epoch, world=1, rank=0, drop_last=False):
    """The listing indices rank `rank` reads in `epoch`: cache/learn/sampler.hpp's
    order, as a data loader computes it."""
    s, p = (seed ^ (epoch * 0xD1B54A32D192ED03)) & M64, list(range(n))
    for i in range(n - 1, 0, -1):
        s = (s + 0x9E3779B97F4A7C15) & M64
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        j = ((z ^ (z >> 31)) * (i + 1)) >> 64
        p[i], p[j] = p[j], p[i]
    total = n // world * world if drop_last else -(-n // world) * world
    p = p[:total] + [p[k % n] for k in range(max(0, total - n))]
    return p[rank::world]


def run_tests(seconds, configure, *options):
    """Parses --weft and `options` (each required), hands them to
    `configure`, then runs the test classes named on the command line; a
    hang shows where it is after `seconds`, before ctest's timeout kills
    the run."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    for option in options:
        parser.add_argument(option, required=True)
    args, rest_args = parser.parse_known_args()
    configure(args)
    faulthandler.dump_traceback_later(seconds, exit=True)
    unittest.main(module="__main__", argv=[sys.argv[0]] + rest_args, verbosity=2)
