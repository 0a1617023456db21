"""What the WAN benchmarks (fabric, stall, training) share: the BENCH line,
a hub and spokes as `weft serve` processes on loopback, the WAN emulator
between them (tests/tools/wan_emulator.py) and its byte counts, boto3
clients, and an rsync daemon behind a link of its own (the DIY peer).

Each benchmark reads its link from BENCH_RTT_MS (default 50) and BENCH_RATE
(bytes/s, default 100e6) through link_args().
"""

import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
WEFT = BUILD / "gateway" / "weft"
sys.path.insert(0, str(ROOT / "tests" / "protocols" / "hub"))
from hubsite import Emulator  # noqa: E402,F401  (the hub tests' WAN emulator process)
from gateway import Gateway  # noqa: E402  (a `weft serve` on port 0, on the path through hubsite)

RTT_MS = float(os.environ.get("BENCH_RTT_MS", "50"))
RATE = float(os.environ.get("BENCH_RATE", "100e6"))


def scale(quick):
    """BENCH_SCALE (0 < F <= 1), or `quick` under BENCH_QUICK=1."""
    f = quick if os.environ.get("BENCH_QUICK") == "1" else float(os.environ.get("BENCH_SCALE", "1"))
    if not 0 < f <= 1:
        raise SystemExit("BENCH_SCALE must be in (0, 1]")
    return f


def logger(name):
    def log(msg):
        print("[bench %s] %s" % (name, msg), file=sys.stderr, flush=True)
    return log


def bench(figure, value, unit, peer=None, peer_value=None, goal=None, higher_is_better=True):
    """One BENCH line. The ratio is ours/peer's for rates (higher is better)
    and peer's/ours for costs (a cost near zero counts as 1e-4)."""
    line = "BENCH %s value=%.6g unit=%s" % (figure, value, unit)
    if peer is not None:
        ratio = value / peer_value if higher_is_better else peer_value / max(value, 1e-4)
        line += " peer=%s peer_value=%.6g ratio=%.3f" % (peer, peer_value, ratio)
        if goal is not None:
            line += " goal=%g" % goal
    print(line, flush=True)


def build(*targets):
    """Builds `targets` (.ci/setup installs what is missing) unless SKIP_BUILD=1."""
    if os.environ.get("SKIP_BUILD") != "1":
        subprocess.run([str(ROOT / ".ci" / "setup"), *targets], check=True, stdout=sys.stderr)


def link_args():
    return ["--rtt-ms", str(RTT_MS), "--rate", str(RATE)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("%s exited with %d" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("%s did not listen on %d" % (what, port))


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wire_bytes(emulator):
    """Bytes the emulator has carried, both ways."""
    s = emulator.command("stats")
    return s["up_bytes"] + s["down_bytes"]


def start_site(name, config=None):
    """A `weft serve` with REST and S3 in a temporary directory."""
    return Gateway(str(WEFT), protocols=("rest", "s3"), config=config, prefix="weft-bench-%s-" % name)


def start_spoke(name, hub, link, bucket, **mount):
    """A site whose /BUCKET is the hub's data/BUCKET through `link`; `mount`
    adds to the mount's configuration ("prefetch", "write", ...)."""
    spoke = {"local": "/" + bucket, "hub": "http://" + link.address, "remote": "data/" + bucket,
             "credentials": str(hub.data / "credentials.json"), "mode": "strict", **mount}
    return start_site(name, {"spokes": [spoke]})


def s3_args(site, pool=16):
    """boto3.client("s3", **s3_args(site)) for a site's S3 endpoint."""
    from botocore.config import Config
    return dict(endpoint_url="http://" + site.endpoints["s3"], region_name="us-east-1",
                aws_access_key_id=site.credentials["access_key_id"],
                aws_secret_access_key=site.credentials["secret_access_key"],
                config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                              max_pool_connections=pool, retries={"max_attempts": 1}))


def s3_client(site, pool=16):
    import boto3
    return boto3.client("s3", **s3_args(site, pool))


class RsyncDaemon:
    """An rsync daemon serving `modules` (name: directory) on loopback,
    behind its own WAN emulator with the same link."""

    def __init__(self, work, modules):
        d = pathlib.Path(tempfile.mkdtemp(prefix="rsyncd-", dir=work))
        lines = ["use chroot = no", "pid file = %s" % (d / "pid"), "log file = %s" % (d / "log")]
        if os.geteuid() == 0:
            lines += ["uid = root", "gid = root"]
        for name, path in modules.items():
            lines += ["[%s]" % name, "path = %s" % path, "read only = yes"]
        (d / "rsyncd.conf").write_text("\n".join(lines) + "\n")
        port = free_port()
        self.proc = subprocess.Popen(["rsync", "--daemon", "--no-detach", "--config", str(d / "rsyncd.conf"),
                                      "--address", "127.0.0.1", "--port", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=open(d / "stderr", "wb"))
        wait_port(port, self.proc, "rsync daemon")
        self.link = Emulator("127.0.0.1:%d" % port, *link_args())

    def sync(self, module, dest, *flags):
        """(seconds, bytes on the link) of one rsync of a module into dest."""
        before = wire_bytes(self.link)
        t0 = time.monotonic()
        subprocess.run(["rsync", *flags, "rsync://%s/%s/" % (self.link.address, module), str(dest) + "/"],
                       check=True, stdout=subprocess.DEVNULL)
        return time.monotonic() - t0, wire_bytes(self.link) - before

    def stop(self):
        self.link.stop()
        stop(self.proc)
