"""WeftSampler: a DistributedSampler whose order is the one a Weft spoke
computes, declared to the gateway through the dataset it samples."""

from .dataset import S3Dataset
from .order import check_sampler, sampler_order, samples_per_rank
from ._torch import torch


class WeftSampler(torch.utils.data.Sampler if torch else object):
    """Yields the indices of `dataset` (any sized dataset) that `rank` of
    `num_replicas` reads, like torch's DistributedSampler (padding to a
    multiple of num_replicas by repeating the first indices, or dropping
    the tail with drop_last), shuffled per epoch as the gateway's sampler
    shuffles (SplitMix64 and Fisher-Yates of seed and epoch). Call
    set_epoch(epoch) before each epoch. On an S3Dataset, iterating (and
    set_epoch) declares the order to the gateway: the dataset's GETs carry
    it in the x-weft-sampler header. shuffle=False: indices in order, and
    no declaration."""

    # torch's Sampler.__init__ does nothing and its signature changed
    # across versions, so it is not called.
    def __init__(self, dataset, num_replicas=1, rank=0, shuffle=True, seed=0, drop_last=False):
        check_sampler(num_replicas, rank, seed, 0)
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.drop_last = bool(drop_last)
        self.epoch = 0

    def set_epoch(self, epoch):
        check_sampler(self.num_replicas, self.rank, self.seed, epoch)
        self.epoch = epoch
        self._declare()

    def __len__(self):
        return samples_per_rank(len(self.dataset), self.num_replicas, self.drop_last)

    def __iter__(self):
        self._declare()
        return iter(sampler_order(len(self.dataset), self.seed, self.epoch, self.num_replicas, self.rank,
                                  self.drop_last, self.shuffle))

    def _declare(self):
        if not isinstance(self.dataset, S3Dataset):
            return
        if self.shuffle:
            self.dataset.set_sampler_hint(self.seed, self.epoch, self.num_replicas, self.rank, self.drop_last)
        else:
            self.dataset.clear_sampler_hint()
