#!/usr/bin/python3
"""The namespace crash test (ctest: ns.crash).

Runs ns_crash_child on one data directory, kills it with SIGKILL at a random
moment 20..300 ms after it is ready, then has it verify the store: it must
open cleanly, every acknowledged commit must read back bit-exact, and the one
operation in flight at the kill may show only the states its kind allows:

  new file (create + write + commit)   absent, or any prefix of the new bytes
  overwrite (open truncate + write)    the old bytes, or any prefix of the new
  staged upload (stage + commit)       the old bytes (or absent), or all new
                                       bytes: never a partial object

Then the next cycle continues on the same directory. Usage:
  crash_test.py PATH/TO/ns_crash_child [CYCLES]
WEFT_CRASH_SEED=N repeats a run's kill timing.
"""

import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

READY_TIMEOUT = 30.0
VERIFY_TIMEOUT = 60.0


class Failure(Exception):
    pass


class Lines:
    """Reads whole lines from a pipe, with deadlines."""

    def __init__(self, fd):
        self.fd = fd
        self.buffer = b""
        self.eof = False

    def read_some(self, deadline):
        """The lines of the next piece of output; [] when `deadline` (None: no
        deadline) passes first or at the end of the output."""
        if self.eof:
            return []
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        chunk = os.read(self.fd, 65536)
        if not chunk:
            self.eof = True
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        return [line.decode() for line in complete]

    def read_until(self, deadline):
        """Every line that arrives before `deadline` (None: until the end)."""
        lines = []
        while not self.eof and (deadline is None or time.monotonic() < deadline):
            lines += self.read_some(deadline)
        return lines


class Model:
    """What each name must hold: (state, seed, size), state "acked" or "seen"."""

    def __init__(self):
        self.files = {}
        self.in_flight = None  # (kind, name, size, seed) between BEGIN and ACK
        self.next_seed = 1
        self.acks = 0

    def apply(self, line):
        words = line.split()
        if words[0] == "BEGIN":
            kind, name, size, seed = words[1], words[2], int(words[3]), int(words[4])
            self.in_flight = (kind, name, size, seed)
            self.next_seed = seed + 1
        elif words[0] == "ACK":
            name, size, seed = words[1], int(words[2]), int(words[3])
            if self.in_flight is None or self.in_flight[1:] != (name, size, seed):
                raise Failure(f"ACK without its BEGIN: {line}")
            self.files[name] = ("acked", seed, size)
            self.in_flight = None
            self.acks += 1
        elif words[0] != "READY":
            raise Failure(f"unexpected line from the child: {line}")

    def expectations(self):
        lines = []
        for name, (state, seed, size) in self.files.items():
            lines.append(f"{name} {state} {seed} {size}")
        if self.in_flight:
            kind, name, size, seed = self.in_flight
            if name not in self.files:
                lines.append(f"{name} absent")
            lines.append(f"{name} {'acked' if kind == 'stage' else 'prefix'} {seed} {size}")
        return "".join(line + "\n" for line in lines)

    def observe(self, line):
        words = line.split()
        if words[0] == "HAVE":
            self.files[words[1]] = (words[2], int(words[3]), int(words[4]))
        elif words[0] == "GONE":
            self.files.pop(words[1], None)
        self.in_flight = None


def cycle(child, data, model, rng, work, number):
    """One run, kill and verification; how the operation cut by the kill
    ended up (see outcome()), or None when the kill fell between operations."""
    proc = subprocess.Popen([child, data, "run", str(model.next_seed)], stdout=subprocess.PIPE)
    lines = Lines(proc.stdout.fileno())
    try:
        ready_by = time.monotonic() + READY_TIMEOUT
        while True:
            got = lines.read_some(ready_by)
            for line in got:
                model.apply(line)
            if "READY" in got:
                break
            if lines.eof or time.monotonic() > ready_by:
                raise Failure(f"cycle {number}: the child did not get ready (exit {proc.poll()})")
        for line in lines.read_until(time.monotonic() + rng.uniform(0.020, 0.300)):
            model.apply(line)
        if proc.poll() is not None:
            raise Failure(f"cycle {number}: the child exited by itself with {proc.returncode}")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for line in lines.read_until(None):
            model.apply(line)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    in_flight = model.in_flight

    expect_path = os.path.join(work, "expect.txt")
    with open(expect_path, "w") as out:
        out.write(model.expectations())
    verify = subprocess.run([child, data, "verify", expect_path], stdout=subprocess.PIPE,
                            text=True, timeout=VERIFY_TIMEOUT)
    bad = [line for line in verify.stdout.splitlines() if line.startswith("BAD")]
    if verify.returncode != 0 or bad:
        raise Failure(f"cycle {number}: verification failed (exit {verify.returncode}):\n  " +
                      "\n  ".join(bad) + f"\nexpected:\n{model.expectations()}")
    before = dict(model.files)
    for line in verify.stdout.splitlines():
        model.observe(line)
    if in_flight is None:
        return None
    return outcome(in_flight, before.get(in_flight[1]), model.files.get(in_flight[1]))


def outcome(in_flight, old, now):
    """How the operation cut by the kill ended up, for the summary."""
    kind, _, size, seed = in_flight
    if now is None:
        return f"{kind}: absent"
    if now[1:] == (seed, size):
        return f"{kind}: new"
    if now[1] == seed:
        return f"{kind}: partial"
    return f"{kind}: old" if old and now[1:] == old[1:] else f"{kind}: ?"


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    child = sys.argv[1]
    cycles = int(sys.argv[2]) if len(sys.argv) == 3 else 25
    seed = int(os.environ.get("WEFT_CRASH_SEED", time.time_ns() % 1_000_000_007))
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="weft-ns-crash-")
    data = os.path.join(work, "data")
    model = Model()
    outcomes = {}
    start = time.monotonic()
    try:
        for number in range(1, cycles + 1):
            cut = cycle(child, data, model, rng, work, number)
            if cut:
                outcomes[cut] = outcomes.get(cut, 0) + 1
        if model.acks < 20:
            raise Failure(f"only {model.acks} commits were acknowledged in {cycles} cycles")
    except (Failure, subprocess.TimeoutExpired) as e:
        print(f"FAILED (WEFT_CRASH_SEED={seed}, store kept in {work}): {e}", file=sys.stderr)
        return 1
    cut = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    print(f"{cycles} kill cycles, {model.acks} acknowledged commits, "
          f"{sum(outcomes.values())} kills during an operation ({cut}), "
          f"{len(model.files)} files verified, {time.monotonic() - start:.1f} s "
          f"(WEFT_CRASH_SEED={seed})")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
