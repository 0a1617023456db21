"""The order a sampler hands out dataset indices in, exactly as the gateway
computes it (cache/learn/sampler.hpp in the Weft sources specifies it):
SplitMix64 seeded by seed and epoch drives a Fisher-Yates shuffle from the
top, then the indices are cut (drop_last) or padded to a multiple of the
world size and dealt to ranks like torch's DistributedSampler."""

_M64 = (1 << 64) - 1
_MAX_WORLD = 1 << 20  # the gateway's limit on the world size of a hint


def check_sampler(num_replicas, rank, seed, epoch):
    """ValueError unless these make a sampler the gateway accepts."""
    for name, value in (("num_replicas", num_replicas), ("rank", rank), ("seed", seed), ("epoch", epoch)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError("%s must be an int, not %r" % (name, value))
    if not 1 <= num_replicas <= _MAX_WORLD:
        raise ValueError("num_replicas must be 1 to %d, not %d" % (_MAX_WORLD, num_replicas))
    if not 0 <= rank < num_replicas:
        raise ValueError("rank must be 0 to num_replicas - 1 (%d), not %d" % (num_replicas - 1, rank))
    for name, value in (("seed", seed), ("epoch", epoch)):
        if not 0 <= value <= _M64:
            raise ValueError("%s must be 0 to 2**64 - 1, not %d" % (name, value))


def samples_per_rank(n, num_replicas, drop_last):
    return n // num_replicas if drop_last else -(-n // num_replicas)


def sampler_order(n, seed=0, epoch=0, num_replicas=1, rank=0, drop_last=False, shuffle=True):
    """The indices of n samples that `rank` reads in `epoch`, in order."""
    check_sampler(num_replicas, rank, seed, epoch)
    p = list(range(n))
    if shuffle:
        s = (seed ^ (epoch * 0xD1B54A32D192ED03)) & _M64
        for i in range(n - 1, 0, -1):
            s = (s + 0x9E3779B97F4A7C15) & _M64
            z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & _M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
            j = ((z ^ (z >> 31)) * (i + 1)) >> 64
            p[i], p[j] = p[j], p[i]
    total = samples_per_rank(n, num_replicas, drop_last) * num_replicas
    p = p[:total] + [p[k % n] for k in range(max(0, total - n))]
    return p[rank::num_replicas]
