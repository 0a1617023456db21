"""The S3 transport every part of the package uses: the standard library's
http.client with presigned URLs or anonymous requests (transport="http",
_http.py), or boto3's client (transport="boto3"). Both offer the same
calls: get, get_many, list_dir, upload, download, close; headers given to
get, get_many and list_dir go on that request only.

By default (transport=None) requests go over http.client wherever it can
make them (an endpoint_url, and client_kwargs of credentials and region
alone): a GET of a sample through boto3 costs some 0.55 ms of the
loader's CPU, through http.client 0.1 ms (128 KiB from a local gateway),
and a DataLoader's CPU is what feeds the GPU. Where boto3 imports it
still finds the credentials that client_kwargs leave out: its chain
(environment, shared files and profiles, instance roles) signs the
requests. boto3 makes the requests where client_kwargs hold more (its
`config`) or no endpoint_url is given."""

import io
import os
import threading

from ._http import HTTP_KWARGS, HttpStore, ThreadedGets

try:
    import boto3
    import boto3.s3.transfer
except ImportError:
    boto3 = None

TRANSPORTS = ("boto3", "http")
_MiB = 1 << 20
# Uploads up to S3's limit for one PUT go in one streamed PUT: the gateway
# writes such a body once, where it joins a multipart upload's parts by
# writing them all again (protocols/s3/multipart.cpp). Larger ones go in
# parts:
SINGLE_PUT_MAX = 5 << 30
PART_SIZE = 8 * _MiB  # of this size,
PARALLEL = 8  # this many at a time


def make_store(endpoint_url, client_kwargs, transport=None):
    """A new store (each process makes its own: neither boto3's clients nor
    http.client's connections survive a fork)."""
    if transport not in (None,) + TRANSPORTS:
        raise ValueError("transport must be one of %s (or None: http where it can, else boto3), not %r"
                         % (", ".join(TRANSPORTS), transport))
    if transport == "boto3" and boto3 is None:
        raise ImportError("transport='boto3' but boto3 does not import; transport='http' needs only the "
                          "standard library")
    client_kwargs = dict(client_kwargs or {})
    chain = None
    if transport is None and boto3 is not None:
        if not endpoint_url or not set(client_kwargs) <= HTTP_KWARGS:
            return Boto3Store(endpoint_url, client_kwargs)
        if not client_kwargs.get("aws_access_key_id"):
            chain = _session_credentials()
    if transport == "boto3":
        return Boto3Store(endpoint_url, client_kwargs)
    return HttpStore(endpoint_url, client_kwargs, SINGLE_PUT_MAX, PART_SIZE, PARALLEL, credentials=chain)


# One boto3 session per process for the clients it makes: a client of a
# new session loads S3's service model again (some 30 ms of CPU, which each
# DataLoader worker paid as it started, in the first batch's wait), while a
# forked worker keeps its parent's session with the model loaded. Sessions
# are not thread-safe, so clients are made under a lock (a fresh one in a
# forked child: a thread of the parent may have held it).
_session = None
_session_lock = threading.Lock()


def _new_lock_in_child():
    global _session_lock
    _session_lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_in_child)


def _session_call(call):
    global _session
    with _session_lock:
        if _session is None:
            _session = boto3.session.Session()
        return call(_session)


def _boto3_client(endpoint_url, client_kwargs):
    return _session_call(lambda s: s.client("s3", endpoint_url=endpoint_url, **(client_kwargs or {})))


def _session_credentials():
    """boto3's credentials (refreshed as they expire), or None: anonymous."""
    return _session_call(lambda s: s.get_credentials())


class Boto3Store(ThreadedGets):
    """boto3's client; its managed transfers for checkpoints."""

    def __init__(self, endpoint_url, client_kwargs):
        self.client = _boto3_client(endpoint_url, client_kwargs)
        self._extra = threading.local()
        self.client.meta.events.register("before-sign.s3", self._add_headers)
        self._transfer = boto3.s3.transfer.TransferConfig(multipart_threshold=SINGLE_PUT_MAX + 1,
                                                          multipart_chunksize=PART_SIZE, max_concurrency=PARALLEL)

    def _add_headers(self, request, **kwargs):
        for name, value in (getattr(self._extra, "headers", None) or {}).items():
            request.headers[name] = value

    def _with_headers(self, headers, call, **params):
        self._extra.headers = headers
        try:
            return call(**params)
        finally:
            self._extra.headers = None

    def get(self, bucket, key, headers=None):
        return self._with_headers(headers, self.client.get_object, Bucket=bucket, Key=key)["Body"].read()

    def list_dir(self, bucket, prefix, headers=None, max_keys=None):
        if max_keys:
            page = self._with_headers(headers, self.client.list_objects_v2, Bucket=bucket, Prefix=prefix,
                                      Delimiter="/", MaxKeys=max_keys)
            return [o["Key"] for o in page.get("Contents", ())]
        keys = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix,
                                                                          Delimiter="/"):
            keys += [o["Key"] for o in page.get("Contents", ())]
        return keys

    def upload(self, bucket, key, view):
        self.client.upload_fileobj(io.BytesIO(view), bucket, key, Config=self._transfer)

    def download(self, bucket, key):
        body = io.BytesIO()
        self.client.download_fileobj(bucket, key, body, Config=self._transfer)
        return body.getvalue()

    def close(self):
        self.client.close()
