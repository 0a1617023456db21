"""Checkpoints over S3: saved in one PUT up to 5 GiB, else as multipart
uploads of 8 MiB parts, 8 at a time (_s3.SINGLE_PUT_MAX says why; boto3's
managed transfer, or the same made by the http transport), and loaded
whole. CheckpointSaver saves them in the background, so that a training
loop stops only while the state is captured."""

import concurrent.futures
import io
import multiprocessing
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


def _upload_and_report(conn, view, bucket, key, store):
    """A save's process: uploads at a lower priority and sends (True, bytes
    written) or (False, the exception) through `conn`."""
    try:
        _lower_priority()
        result = (True, _upload(view, bucket, key, *store))
    except Exception as e:
        result = (False, e)
    try:
        conn.send(result)
    except Exception:  # an exception that does not pickle
        conn.send((False, RuntimeError("the checkpoint's upload failed: %r" % (result[1],))))
    conn.close()


def _upload_in_process(view, bucket, key, store):
    """Uploads `view` from a forked process: a Future of the bytes written.
    The process has its own interpreter lock: an upload in a thread held
    the loop's, and at a lower priority on a busy machine it held it long
    (a priority inversion: the loop stalled up to 0.6 s behind the saver).
    The fork's copy-on-write memory is the snapshot of the state."""
    fork = multiprocessing.get_context("fork")
    receive, send = fork.Pipe(duplex=False)
    child = fork.Process(target=_upload_and_report, args=(send, view, bucket, key, store), name="weft-checkpoint")
    child.start()
    send.close()
    future = concurrent.futures.Future()

    def report():
        try:
            ok, value = receive.recv()
        except EOFError:
            ok, value = False, None
        receive.close()
        child.join()
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value or RuntimeError(
                "the checkpoint's upload process ended without an answer (exit code %s)" % child.exitcode))

    threading.Thread(target=report, name="weft-checkpoint", daemon=True).start()
    return future


class CheckpointSaver:
    """Saves checkpoints in the background, as save_checkpoint does, one at
    a time and in order. save() captures the bytes at once (torch.save into
    memory; a buffer as it is where the upload runs in a forked process,
    whose memory is a snapshot, else a copy of a buffer the caller may
    change) and returns a concurrent.futures.Future of the number of bytes
    written. It first waits for the save before it, so that at most one
    checkpoint is held in memory besides the one being captured, and raises
    that save's failure if it failed; close() (or the end of a `with` block)
    waits for the last one and raises its failure. The upload runs in a
    process of its own where processes fork (Linux), else in a thread, at a
    lower CPU priority than the loop and its data loading (on Linux)."""

    def __init__(self, endpoint_url=None, client_kwargs=None, transport=None):
        self._store = (endpoint_url, client_kwargs, transport)
        self._pool = None
        if "fork" not in multiprocessing.get_all_start_methods():
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="weft-checkpoint",
                                                               initializer=_lower_priority)
        self._last = None

    def save(self, obj, bucket, key):
        self.wait()
        if self._pool is None:
            self._last = _upload_in_process(_bytes_of(obj, snapshot=False), bucket, key, self._store)
        else:
            self._last = self._pool.submit(_upload, _bytes_of(obj, snapshot=True), bucket, key, *self._store)
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
            if self._pool is not None:
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
