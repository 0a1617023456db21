"""S3Dataset: the samples of a dataset directory in a bucket, read over S3
(from a Weft spoke, or any S3 service), numbered as the gateway numbers
them so that a WeftSampler's order is the one the spoke fetches ahead."""

import multiprocessing
import multiprocessing.context
import os
import urllib.parse

from ._s3 import make_store
from ._torch import torch

SAMPLER_HEADER = "x-weft-sampler"
_MAX_NAME = 255  # bytes, as the gateway allows


def _directory(key):
    """The directory (a prefix ending in '/', or '' for the bucket) that
    holds `key`: what a GET with the sampler header declares the order for."""
    return key[:key.rfind("/") + 1]


def parse_index(data, index_key):
    """The paths an index file lists, one a line, in its order (blank lines
    skipped, CRLF line ends too), checked as the gateway checks them."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError("index file %s is not UTF-8: %s" % (index_key, e)) from None
    entries = []
    for number, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line:
            continue
        if line.startswith("/"):
            raise ValueError("index file %s line %d: an absolute path (expected one below the dataset directory)"
                             % (index_key, number))
        for name in line.split("/"):
            why = ("an empty path segment" if not name else
                   "'.' and '..' are not allowed in paths" if name in (".", "..") else
                   "a NUL in a path" if "\0" in name else
                   "a name longer than 255 bytes" if len(name.encode("utf-8")) > _MAX_NAME else None)
            if why:
                raise ValueError("index file %s line %d: %s" % (index_key, number, why))
        entries.append(line)
    if not entries:
        raise ValueError("index file %s lists no files" % index_key)
    return entries


def _shared_sampler(values):
    """[declared, seed, epoch, world, rank, drop_last] in shared memory, with
    a lock from the spawn context: a fork context's lock is unlinked at once
    and crashes a spawned process (DataLoader's multiprocessing_context="spawn")
    that uses it; a spawn context's works in forked processes too."""
    return multiprocessing.get_context("spawn").Array("Q", values)


class S3Dataset(torch.utils.data.Dataset if torch else object):
    """Map-style dataset of the objects directly below `prefix` in `bucket`
    (a directory: '/' is appended if missing; '' is the bucket's top), in
    the order of their keys as unsigned bytes, listed once here; or, with
    `index_key`, the paths (relative to `prefix`) that index file in the
    bucket lists, in its order. ds[i] is transform(the object's bytes), or
    the bytes. ds.keys holds the objects' keys. `transport` is "boto3"
    (client_kwargs go to boto3's client), "http" (the standard library
    alone: presigned URLs from client_kwargs' credentials, or anonymous for
    a public-read export) or None: http, with boto3's credential chain
    where boto3 imports and client_kwargs give none; boto3 where
    client_kwargs hold what only boto3 takes (`config`) or there is no
    endpoint_url (_s3.py).

    A WeftSampler declares its order through the dataset: to the spoke at
    once (a LIST with the x-weft-sampler header), and on its GETs, so a
    Weft spoke fetches ahead in that order. The declaration is held in
    shared memory, so DataLoader workers forked earlier
    (persistent_workers) see each new epoch's."""

    def __init__(self, bucket, prefix, endpoint_url=None, client_kwargs=None, transform=None, index_key=None,
                 transport=None, parallel_gets=8):
        if not isinstance(prefix, str):
            raise ValueError("prefix must be a str, not %r" % (prefix,))
        self.bucket = bucket
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self.endpoint_url = endpoint_url
        self.client_kwargs = dict(client_kwargs or {})
        self.transform = transform
        self.index_key = index_key
        self.transport = transport
        if not isinstance(parallel_gets, int) or parallel_gets < 1:
            raise ValueError("parallel_gets must be a positive int, not %r" % (parallel_gets,))
        self.parallel_gets = parallel_gets
        self._store = self._store_pid = self._listed_with = None
        self._sampler = _shared_sampler([0] * 6)
        store = self._s3()
        if index_key is None:
            self.keys = self._list(store)
        else:
            self.keys = [self.prefix + p for p in parse_index(store.get(bucket, index_key), index_key)]

    def _list(self, store):
        keys = [k for k in store.list_dir(self.bucket, self.prefix) if not k.endswith("/")]
        if not keys:
            raise ValueError("no objects directly below s3://%s/%s" % (self.bucket, self.prefix))
        return sorted(keys, key=lambda k: k.encode("utf-8"))

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        key = self.keys[i]
        data = self._s3().get(self.bucket, key, headers=self._headers(key, self.sampler_header()))
        return data if self.transform is None else self.transform(data)

    def __getitems__(self, indices):
        """[ds[i] for i in indices], read `parallel_gets` at a time: what a
        DataLoader worker asks for a batch. One GET after another, a batch's
        latency is the sum of its samples' (each a round trip, and a cold
        one waits for the spoke's WAN fetch). The http transport makes them
        from this thread, on as many connections; boto3 on a pool of as
        many threads (_s3.py)."""
        keys = [self.keys[i] for i in indices]
        store = self._s3()
        header = self.sampler_header()  # once a batch: it reads shared memory under a lock
        data = store.get_many(self.bucket, [(key, self._headers(key, header)) for key in keys], self.parallel_gets)
        return data if self.transform is None else [self.transform(d) for d in data]

    def _headers(self, key, header):
        """The headers of a GET of `key`: the sampler's `header` where the
        key is the dataset's directory's own, else none."""
        if header and _directory(key) == self.prefix:
            return {SAMPLER_HEADER: header}
        # The header on this GET would name the file's own directory; a
        # LIST of the dataset's prefix declares it for the dataset.
        self._declare(header)
        return None

    def _declare(self, header):
        """Declares the order `header` states to the spoke now, once per
        process and order: a LIST of the dataset's prefix with it."""
        if header and self._listed_with != header:
            self._s3().list_dir(self.bucket, self.prefix, headers={SAMPLER_HEADER: header}, max_keys=1)
            self._listed_with = header

    def set_sampler_hint(self, seed, epoch, num_replicas, rank, drop_last):
        """Declares the order a seeded sampler reads in (WeftSampler calls
        it): to the spoke at once, so that it fetches ahead while the
        DataLoader's workers start (set_epoch comes before the epoch's
        first batch is asked for), and on the GETs that follow."""
        with self._sampler.get_lock():
            self._sampler[:] = [1, seed, epoch, num_replicas, rank, int(bool(drop_last))]
        self._declare(self.sampler_header())

    def clear_sampler_hint(self):
        with self._sampler.get_lock():
            self._sampler[0] = 0

    def sampler_header(self):
        """The x-weft-sampler header's value now, or None."""
        with self._sampler.get_lock():
            declared, seed, epoch, world, rank, drop_last = self._sampler[:]
        if not declared:
            return None
        value = "seed=%d;epoch=%d;world=%d;rank=%d;drop_last=%d" % (seed, epoch, world, rank, drop_last)
        if self.index_key is not None:
            value += ";index=" + urllib.parse.quote(self.index_key, safe="/")
        return value

    def _s3(self):
        """This process's store: made on first use in each process."""
        if self._store_pid != os.getpid():
            self._store = make_store(self.endpoint_url, self.client_kwargs, self.transport)
            self._store_pid, self._listed_with = os.getpid(), None
        return self._store

    def __getstate__(self):
        # The store stays behind (each process makes its own); the shared
        # declaration travels to processes being started (spawn), a copy of
        # it elsewhere (pickle, copy).
        state = dict(self.__dict__, _store=None, _store_pid=None, _listed_with=None)
        if multiprocessing.context.get_spawning_popen() is None:
            state["_sampler"] = list(self._sampler[:])
        return state

    def __setstate__(self, state):
        if isinstance(state["_sampler"], list):
            state["_sampler"] = _shared_sampler(state["_sampler"])
        self.__dict__.update(state)
