#!/usr/bin/python3
"""The offline cache tools of the `weft` command: `weft cache gen-trace`
writes a synthetic training trace, deterministic by seed; `weft cache
replay` replays a trace (binary or CSV) and prints BENCH lines per policy
with MIN as the peer; bad input exits 1 (an unreadable trace, naming the
line) or 2 (a usage error).

Usage: cache_tools_test.py --weft PATH [unittest arguments]
Standard library only.
"""

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

WEFT = None


def weft(*args):
    return subprocess.run([WEFT, "cache", *args], capture_output=True, text=True, timeout=120)


def bench(stdout):
    """figure -> {field: value} of the BENCH lines."""
    out = {}
    for line in stdout.splitlines():
        if not line.startswith("BENCH "):
            continue
        parts = line.split()
        out[parts[1]] = dict(p.split("=", 1) for p in parts[2:])
    return out


class CacheToolsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.tmp = pathlib.Path(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def test_gen_trace_is_deterministic_and_replays(self):
        a, b, c = self.tmp / "a1", self.tmp / "a2", self.tmp / "a3"
        for path, seed in ((a, "3"), (b, "3"), (c, "4")):
            r = weft("gen-trace", "--workload", "a", "--scale", "0.02", "--seed", seed, "--out", str(path))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("3 hints", r.stdout)
        self.assertEqual(a.read_bytes(), b.read_bytes())
        self.assertNotEqual(a.read_bytes(), c.read_bytes())

        r = weft("replay", "--trace", str(a), "--size", "30%")
        self.assertEqual(r.returncode, 0, r.stderr)
        figures = bench(r.stdout)
        self.assertEqual(figures["cache.replay.min.hit_ratio"]["unit"], "ratio")
        for policy in ("lru", "wtinylfu", "ours", "ours-prefetch", "ours-hint"):
            line = figures["cache.replay.%s.hit_ratio" % policy]
            self.assertEqual(line["peer"], "min")
            self.assertAlmostEqual(float(line["ratio"]), float(line["value"]) / float(line["peer_value"]), places=2)
            self.assertIn("cache.replay.%s.byte_hit_ratio" % policy, figures)
        # With the sampler hint most reads are hits (the start, a round trip
        # of reads, is late in so short a trace); without prefetch, few.
        value = {p: float(figures["cache.replay.%s.hit_ratio" % p]["value"]) for p in ("ours", "ours-hint")}
        self.assertGreater(value["ours-hint"], 0.6)
        self.assertGreater(value["ours-hint"], 2 * value["ours"])
        self.assertRegex(r.stdout, r"expert sampler +weight")

    def test_csv_traces_replay_and_bad_lines_name_the_line(self):
        good = self.tmp / "t.csv"
        good.write_text("time_ns,client,path,offset,length\n"
                        + "".join("%d,job,ds/f%d,0,100000\n" % (i, i % 7) for i in range(100)))
        r = weft("replay", "--trace", str(good), "--size", "300K", "--policy", "lru", "--policy", "min")
        self.assertEqual(r.returncode, 0, r.stderr)
        figures = bench(r.stdout)
        self.assertEqual(set(figures), {"cache.replay.min.hit_ratio", "cache.replay.min.byte_hit_ratio",
                                        "cache.replay.lru.hit_ratio", "cache.replay.lru.byte_hit_ratio"})

        bad = self.tmp / "bad.csv"
        bad.write_text("1,job,ds/a,0,10\n2,job,ds/a,zero,10\n")
        r = weft("replay", "--trace", str(bad), "--size", "1M")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(),
                         "weft: %s:2: offset: expected a non-negative integer, got \"zero\"" % bad)
        r = weft("replay", "--trace", str(self.tmp / "missing"), "--size", "1M")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot open", r.stderr)

    def test_usage_errors_exit_2(self):
        trace = self.tmp / "t.csv"
        trace.write_text("1,job,ds/a,0,10\n")
        for args, message in (
                (("replay", "--trace", str(trace), "--size", "12Q"), "bad --size 12Q"),
                (("replay", "--trace", str(trace), "--size", "0"), "bad --size 0"),
                (("replay", "--trace", str(trace), "--size", "1M", "--policy", "fifo"), "unknown --policy fifo"),
                (("replay", "--trace", str(trace), "--size", "1M", "--bandwidth", "0"), "must be positive"),
                (("gen-trace", "--workload", "z", "--out", str(self.tmp / "x")), "unknown workload \"z\""),
                (("gen-trace", "--workload", "a", "--scale", "3", "--out", str(self.tmp / "x")), "scale"),
                (("gen-trace", "--workload", "a", "--format", "xml", "--out", str(self.tmp / "x")), "bad --format"),
                (("replay", "--size", "1M"), "--trace is required")):
            with self.subTest(args=args):
                r = weft(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    args, rest = parser.parse_known_args()
    WEFT = args.weft
    unittest.main(argv=[sys.argv[0]] + rest)
