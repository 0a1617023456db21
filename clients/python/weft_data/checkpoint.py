"""Checkpoints over S3: saved in one PUT up to 5 GiB, else as multipart
uploads of 8 MiB parts, 8 at a time (_s3.SINGLE_PUT_MAX says why; boto3's
managed transfer, or the same made by the http transport), and loaded
whole."""

import io

from ._s3 import make_store
from ._torch import torch


def save_checkpoint(obj, bucket, key, endpoint_url=None, client_kwargs=None, transport=None):
    """Writes `obj` at s3://bucket/key: its bytes if it is bytes-like, else
    what torch.save makes of it. Returns the number of bytes written.
    `transport` as S3Dataset takes it."""
    try:
        view = memoryview(obj)
    except TypeError:
        if torch is None:
            raise TypeError("save_checkpoint: a %s is not bytes-like, and without torch nothing else can be saved"
                            % type(obj).__name__) from None
        body = io.BytesIO()
        torch.save(obj, body)
        view = body.getbuffer()
    else:
        view = view.cast("B") if view.c_contiguous else memoryview(view.tobytes())
    store = make_store(endpoint_url, client_kwargs, transport)
    try:
        store.upload(bucket, key, view)
    finally:
        store.close()
    return view.nbytes


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
