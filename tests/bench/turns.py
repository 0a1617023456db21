"""Fair turns for the benchmarks that time a transfer against a peer.

Each timed transfer starts with nothing dirty in the page cache (settle()),
so a server does not pay for the writeback of the setup's files or of what
the other server wrote before it; the servers take turns over several
rounds, the first one alternating, and each figure keeps its best round, so
a burst of load from elsewhere on a shared machine does not decide a ratio.
Every round's time goes to stderr, for judging how noisy the machine was."""

import os
import sys


def settle():
    """Call right before starting a timed transfer."""
    os.sync()


def best_times(rounds, contenders):
    """contenders: (name, run) pairs, run(round) -> {figure: seconds}.
    Returns {name: {figure: the fewest seconds of its rounds}}."""
    best = {name: {} for name, _ in contenders}
    for r in range(rounds):
        for name, run in (contenders if r % 2 == 0 else contenders[::-1]):
            for figure, took in run(r).items():
                print("round %d: %s %s %.3f s" % (r + 1, name, figure, took), file=sys.stderr, flush=True)
                best[name][figure] = min(best[name].get(figure, took), took)
    return best
