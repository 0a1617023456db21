#!/usr/bin/env python3
"""Runs the smbtorture suites of smbtorture_tests.txt against `weft serve`
and compares every subtest's result with smbtorture_knownfail.txt: an
unexpected failure fails the run, and so does a known failure that passes.
Prints SKIP and passes when smbtorture (samba-testsuite) is missing.

Usage: smbtorture_test.py --weft PATH [SUITE...]
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smb_clients_test  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
SUITE_TIMEOUT = 240


def read_list(path):
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, reason = line.partition(" ")
            out[name] = reason.strip()
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("suites", nargs="*")
    args = parser.parse_args()
    if not shutil.which("smbtorture"):
        print("SKIP: smbtorture is not installed (Debian package samba-testsuite)")
        return 0
    suites = args.suites or list(read_list(HERE / "smbtorture_tests.txt"))
    knownfail = read_list(HERE / "smbtorture_knownfail.txt")
    for name, reason in knownfail.items():
        if not reason:
            print("knownfail entry without a reason: " + name)
            return 1
    smb_clients_test.WEFT = args.weft
    tmp = tempfile.mkdtemp(prefix="weft-smbtorture-")
    gw = smb_clients_test.Gateway(os.path.join(tmp, "data")).start()
    problems = []
    counts = {"success": 0, "knownfail": 0, "skip": 0}
    try:
        for suite in suites:
            work = os.path.join(tmp, suite)
            os.mkdir(work)  # smbtorture leaves temporary folders in its cwd
            try:
                out = subprocess.run(
                    ["smbtorture", "//%s/data" % gw.host, "-p", str(gw.port), "-U",
                     "%s%%%s" % (gw.user, gw.password), "--option=torture:progress=no", suite],
                    capture_output=True, text=True, timeout=SUITE_TIMEOUT, cwd=work)
                text = out.stdout + out.stderr
            except subprocess.TimeoutExpired as e:
                text = (e.stdout or b"").decode(errors="replace")
                problems.append("%s: timed out after %d s" % (suite, SUITE_TIMEOUT))
            seen = 0
            for m in re.finditer(r"^(success|failure|error|skip): (.+?)(?: \[)?$", text, re.M):
                # Some subtests have spaces in their names ("Testing wide-a"):
                # listed with '-' for each.
                result, sub = m.group(1), m.group(2).strip().replace(" ", "-")
                full = suite + "." + sub  # a one-test suite reads smb2.x.x
                seen += 1
                if result == "skip":
                    counts["skip"] += 1
                elif result == "success":
                    if full in knownfail:
                        problems.append("%s: passes now; remove it from smbtorture_knownfail.txt" % full)
                    counts["success"] += 1
                elif full in knownfail:
                    counts["knownfail"] += 1
                else:
                    detail = text[m.end():m.end() + 400].split("]", 1)[0].strip()
                    problems.append("%s: %s %s" % (full, result, detail))
            print("%s: %d results" % (suite, seen), flush=True)
            if seen == 0:
                problems.append("%s: no results:\n%s" % (suite, text[-2000:]))
            if not gw.alive():
                problems.append("weft died during " + suite)
                break
    finally:
        gw.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("smbtorture: %(success)d passed, %(knownfail)d known failures, %(skip)d skipped" % counts)
    for p in problems:
        print("PROBLEM " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
