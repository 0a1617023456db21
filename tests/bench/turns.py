"""Fair turns for the benchmarks that time a transfer against a peer.

Each timed transfer starts with nothing dirty in the page cache (settle()),
so a server does not pay for the writeback of the setup's files or of what
the other server wrote before it, nor gains from memory the one before
freed (below); the servers take turns over several
rounds, the first one alternating, and each figure keeps its best round, so
a burst of load from elsewhere on a shared machine does not decide a ratio.
Every round's time goes to stderr, for judging how noisy the machine was."""

import os
import sys
import time

# A virtual machine whose kernel reports free pages to its host (free page
# reporting) gives the host back memory a couple of seconds after it is
# freed; the next touch of such a page is a fault in the host. Memory freed
# just before a transfer is still backed, and a server that writes into the
# page cache right then is much faster: an SMB put of 1 GiB took 1.6 s
# after the other server's get had freed a 1 GiB file, 3.7-4.6 s otherwise
# (both servers, on the 2-core test VM). settle() waits for the report
# wherever the kernel can make one, so every transfer starts on the same
# footing; the kernel's delay is 2 s.
FREED_MEMORY_REPORTED = os.path.exists("/sys/module/page_reporting")
REPORT_WAIT_S = 4.0


def settle():
    """Call right before starting a timed transfer."""
    os.sync()
    if FREED_MEMORY_REPORTED:
        time.sleep(REPORT_WAIT_S)


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
