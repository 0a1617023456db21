"""Checkpoints over S3: saved in one PUT up to 5 GiB, else as multipart
uploads of 8 MiB parts, 8 at a time (_s3.SINGLE_PUT_MAX says why; boto3's
managed transfer, or the same made by the http transport), and loaded
whole. CheckpointSaver saves them in the background, so that a training
loop stops only while the state is captured."""

import concurrent.futures
import io
import os
import threading

from ._s3 import make_store
from ._torch import torch


def _bytes_of(obj, snapshot):
    """The bytes to write for `obj`, as a flat memoryview: its own if it is
    bytes-like, else what torch.save makes of it. `snapshot`: a buffer the
    caller may still change (not read-only) is copied."""
    try:
        view = memoryview(obj)
    except TypeError:
        if torch is None:
            raise TypeError("save_checkpoint: a %s is not bytes-like, and without torch nothing else can be saved"
                            % type(obj).__name__) from None
        body = io.BytesIO()
        torch.save(obj, body)
        return body.getbuffer()
    if not view.c_contiguous or (snapshot and not view.readonly):
        return memoryview(view.tobytes())
    return view.cast("B")


def _upload(view, bucket, key, endpoint_url, client_kwargs, transport):
    store = make_store(endpoint_url, client_kwargs, transport)
    try:
        store.upload(bucket, key, view)
    finally:
        store.close()
    return view.nbytes


def save_checkpoint(obj, bucket, key, endpoint_url=None, client_kwargs=None, transport=None):
    """Writes `obj` at s3://bucket/key: its bytes if it is bytes-like, else
    what torch.save makes of it. Returns the number of bytes written once
    the gateway has them (at a write-back spoke: durable there).
    `transport` as S3Dataset takes it."""
    return _upload(_bytes_of(obj, snapshot=False), bucket, key, endpoint_url, client_kwargs, transport)


def _lower_priority():
    """Lowers the CPU priority of the calling thread and of the threads it
    starts (boto3's transfer threads), on Linux where a priority is a
    thread's: the loop's data loading comes before a checkpoint's upload."""
    try:
        me = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, me, min(19, os.getpriority(os.PRIO_PROCESS, me) + 10))
    except (AttributeError, OSError):
        pass  # elsewhere the priority is the whole process's: left as it is


class CheckpointSaver:
    """Saves checkpoints in the background, as save_checkpoint does, one at
    a time and in order. save() captures the bytes at once (torch.save into
    memory, or a copy of a buffer the caller may change; a bytes object as
    it is) and returns a concurrent.futures.Future of the number of bytes
    written. It first waits for the save before it, so that at most one
    checkpoint is held in memory besides the one being captured, and raises
    that save's failure if it failed; close() (or the end of a `with` block)
    waits for the last one and raises its failure. On Linux the upload runs
    at a lower CPU priority than the loop and its data loading."""

    def __init__(self, endpoint_url=None, client_kwargs=None, transport=None):
        self._store = (endpoint_url, client_kwargs, transport)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="weft-checkpoint",
                                                           initializer=_lower_priority)
        self._last = None

    def save(self, obj, bucket, key):
        self.wait()
        view = _bytes_of(obj, snapshot=True)
        self._last = self._pool.submit(_upload, view, bucket, key, *self._store)
        return self._last

    def wait(self):
        """Waits for the last save; raises its failure."""
        last, self._last = self._last, None
        if last is not None:
            last.result()

    def close(self):
        try:
            self.wait()
        finally:
            self._pool.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load_checkpoint(bucket, key, endpoint_url=None, client_kwargs=None, map_location=None, raw=False,
                    transport=None):
    """The object at s3://bucket/key: its bytes if `raw` or without torch,
    else torch.load of them (with `map_location`)."""
    store = make_store(endpoint_url, client_kwargs, transport)
    try:
        data = store.download(bucket, key)
    finally:
        store.close()
    if raw or torch is None:
        return data
    return torch.load(io.BytesIO(data), map_location=map_location)
