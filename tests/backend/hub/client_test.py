#!/usr/bin/env python3
"""Runs hub_client_tests against a real `weft serve` hub and a WAN emulator
in front of it: starts both, seeds data/seed/{big.bin,text.txt} and data/words/ over REST,
and passes where everything is through the environment.

    client_test.py --weft PATH --tests PATH [--rate BYTES_PER_S] [--rtt-ms MS] [--outage-s S]
"""

import argparse
import os
import random
import pathlib
import subprocess
import sys

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "protocols" / "hub"))
from hubsite import Site  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weft", required=True)
    p.add_argument("--tests", required=True)
    p.add_argument("--rate", type=int, default=16 << 20)
    p.add_argument("--rtt-ms", type=int, default=40)
    p.add_argument("--outage-s", type=float, default=30, help="how long the feed test keeps the link down")
    args, rest = p.parse_known_args()
    hub = Site(args.weft)
    try:
        e = hub.emulator("--rtt-ms", str(args.rtt_ms), "--rate", str(args.rate))
        big = os.urandom(6 << 20)
        expect = hub.tmp / "big.bin"
        expect.write_bytes(big)
        api = "http://%s/api/v1/files/" % hub.rest
        # Two samples of one dataset: words of one vocabulary.
        rng = random.Random(8)
        vocabulary = [rng.randbytes(rng.randint(2, 9)).hex().encode() for _ in range(2000)]
        words = [b" ".join(rng.choices(vocabulary, k=8000)) for _ in range(2)]
        for name, body in (("seed/big.bin", big), ("seed/text.txt", b"hello hub\n" * 1000),
                           ("words/words1.txt", words[0]), ("words/words2.txt", words[1])):
            r = requests.put(api + "data/" + name, data=body, params={"mkdirs": "true"}, auth=hub.admin)
            assert r.status_code in (200, 201), r.text
        env = dict(os.environ,
                   WEFT_HUB_URL="http://" + hub.rest,
                   WEFT_HUB_WAN_URL="http://" + e.address,
                   WEFT_HUB_WAN_CONTROL=e.control.getpeername()[0] + ":" + str(e.control.getpeername()[1]),
                   WEFT_HUB_USER=hub.admin[0], WEFT_HUB_PASSWORD=hub.admin[1],
                   WEFT_HUB_EXPECT=str(expect), WEFT_HUB_WAN_RATE=str(args.rate),
                   WEFT_HUB_OUTAGE_MS=str(int(args.outage_s * 1000)))
        code = subprocess.run([args.tests, *rest], env=env).returncode
    finally:
        stop = hub.stop()
    if code == 0 and stop != 0:
        print("weft exited with %r" % stop)
        code = 1
    return code


if __name__ == "__main__":
    sys.exit(main())
