"""Checkpoints over S3: saved and loaded with boto3's managed transfers
(multipart uploads and parallel ranged reads for large ones)."""

import io

import boto3.s3.transfer

from ._s3 import make_client
from ._torch import torch

_MiB = 1 << 20
TRANSFER = boto3.s3.transfer.TransferConfig(multipart_threshold=8 * _MiB, multipart_chunksize=8 * _MiB,
                                            max_concurrency=8)


def save_checkpoint(obj, bucket, key, endpoint_url=None, client_kwargs=None):
    """Writes `obj` at s3://bucket/key: its bytes if it is bytes-like, else
    what torch.save makes of it. Returns the number of bytes written."""
    try:
        view = memoryview(obj)
    except TypeError:
        if torch is None:
            raise TypeError("save_checkpoint: a %s is not bytes-like, and without torch nothing else can be saved"
                            % type(obj).__name__) from None
        body = io.BytesIO()
        torch.save(obj, body)
    else:
        body = io.BytesIO(view.cast("B") if view.c_contiguous else view.tobytes())
    size = body.getbuffer().nbytes
    body.seek(0)
    client = make_client(endpoint_url, client_kwargs)
    try:
        client.upload_fileobj(body, bucket, key, Config=TRANSFER)
    finally:
        client.close()
    return size


def load_checkpoint(bucket, key, endpoint_url=None, client_kwargs=None, map_location=None, raw=False):
    """The object at s3://bucket/key: its bytes if `raw` or without torch,
    else torch.load of them (with `map_location`)."""
    body = io.BytesIO()
    client = make_client(endpoint_url, client_kwargs)
    try:
        client.download_fileobj(bucket, key, body, Config=TRANSFER)
    finally:
        client.close()
    if raw or torch is None:
        return body.getvalue()
    body.seek(0)
    return torch.load(body, map_location=map_location)
