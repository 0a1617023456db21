"""The S3 calls the package makes, from the standard library alone, for a
machine without boto3 (a GPU node that has only PyTorch): path-style
requests over keep-alive http.client connections, each one either a SigV4
presigned URL (query-string authentication, so an extra header such as the
sampler hint rides along unsigned) or, without credentials, anonymous, as a
public-read export serves it. Nothing in the standard library signs S3
requests (botocore does, and it is what this transport goes without), hence
the small signer here; it follows the SigV4 query-string specification.
It is also the package's default where boto3 imports (see _s3.py): boto3
then only finds the credentials."""

import concurrent.futures
import contextlib
import datetime
import hashlib
import hmac
import http.client
import os
import threading
import urllib.parse
import xml.etree.ElementTree as ET

PRESIGN_EXPIRES = 900  # seconds; each URL is made just before it is used
HTTP_KWARGS = {"region_name", "aws_access_key_id", "aws_secret_access_key", "aws_session_token"}
_DROPPED = (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)


class S3Error(Exception):
    """An S3 error answer: `status` (HTTP), `code` (S3's, e.g. NoSuchKey;
    the status as text where the answer had no body) and `message`."""

    def __init__(self, status, code, message, resource):
        super().__init__("%s (%d) on %s: %s" % (code, status, resource, message))
        self.status, self.code, self.message, self.resource = status, code, message, resource

    def __reduce__(self):
        # Pickled whole (a checkpoint's upload process hands it to its saver).
        return S3Error, (self.status, self.code, self.message, self.resource)


def quote(text, safe=""):
    """RFC 3986 percent-encoding as SigV4 wants it (all but A-Z a-z 0-9 - _ . ~)."""
    return urllib.parse.quote(text, safe=safe)


def _hmac(key, text):
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _find(element, name):
    found = element.find("{*}" + name)
    return None if found is None else (found.text or "")


class HttpStore:
    """What the dataset and the checkpoint helpers need of an S3 service,
    over http.client; one connection per thread, remade after a fork.
    Uploads are made as boto3 makes them: one PUT up to `single_put_max`
    bytes, else multipart in parts of `part_size`, `parallel` at a time (a
    failed one is aborted); downloads in one GET."""

    def __init__(self, endpoint_url, client_kwargs, single_put_max, part_size, parallel, credentials=None):
        self._opened = []  # (pid, connection): close() ends them all, the upload threads' too
        self._opened_lock = threading.Lock()
        self._local = threading.local()
        unknown = set(client_kwargs) - HTTP_KWARGS
        if unknown:
            raise TypeError("the http transport takes client_kwargs %s, not %s"
                            % (", ".join(sorted(HTTP_KWARGS)), ", ".join(sorted(unknown))))
        if not endpoint_url:
            raise ValueError("the http transport needs endpoint_url (the gateway's S3 address)")
        url = urllib.parse.urlsplit(endpoint_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError("endpoint_url must be http://HOST[:PORT] or https://..., not %r" % endpoint_url)
        self._https = url.scheme == "https"
        self._address = (url.hostname, url.port)
        self._host = url.netloc  # the Host header, signed as sent
        self._base = url.path.rstrip("/")
        env = os.environ
        self._key = client_kwargs.get("aws_access_key_id") or env.get("AWS_ACCESS_KEY_ID")
        self._secret = client_kwargs.get("aws_secret_access_key") or env.get("AWS_SECRET_ACCESS_KEY")
        self._token = client_kwargs.get("aws_session_token") or env.get("AWS_SESSION_TOKEN")
        self._region = (client_kwargs.get("region_name") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
                        or "us-east-1")
        # Credentials found elsewhere (boto3's chain, make_store), asked
        # for at each request: temporary ones are renewed as they expire.
        self._chain = credentials
        if bool(self._key) != bool(self._secret):
            raise ValueError("the http transport needs both aws_access_key_id and aws_secret_access_key, or neither "
                             "(anonymous, for a public-read export)")
        self._single_put_max, self._part_size, self._parallel = single_put_max, part_size, parallel

    # -- requests

    def _target(self, method, bucket, key, query):
        """The request target: the path, and the query signed when there are credentials."""
        path = self._base + "/" + quote(bucket) + ("/" + quote(key, safe="/") if key else "")
        pairs = [(quote(k), quote(v)) for k, v in query.items()]
        key_id, secret, token = self._key, self._secret, self._token
        if self._chain is not None:
            frozen = self._chain.get_frozen_credentials()
            key_id, secret, token = frozen.access_key, frozen.secret_key, frozen.token
        if key_id:
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            scope = "%s/%s/s3/aws4_request" % (now[:8], self._region)
            signing = [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", key_id + "/" + scope),
                       ("X-Amz-Date", now), ("X-Amz-Expires", str(PRESIGN_EXPIRES)), ("X-Amz-SignedHeaders", "host")]
            if token:
                signing.append(("X-Amz-Security-Token", token))
            pairs += [(quote(k), quote(v)) for k, v in signing]
            pairs.sort()
            canonical_query = "&".join("%s=%s" % p for p in pairs)
            canonical = "\n".join((method, path, canonical_query, "host:" + self._host, "", "host",
                                   "UNSIGNED-PAYLOAD"))
            to_sign = "\n".join(("AWS4-HMAC-SHA256", now, scope, hashlib.sha256(canonical.encode()).hexdigest()))
            key = _hmac(("AWS4" + secret).encode(), now[:8])
            for part in (self._region, "s3", "aws4_request"):
                key = _hmac(key, part)
            pairs.append(("X-Amz-Signature", _hmac(key, to_sign).hex()))
        return path + ("?" + "&".join("%s=%s" % p for p in pairs) if pairs else "")

    def _connection(self):
        held = getattr(self._local, "conn", None)
        if held is not None and held[0] == os.getpid():
            return held[1], True
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(*self._address, timeout=300)
        self._local.conn = (os.getpid(), conn)
        with self._opened_lock:
            self._opened.append(self._local.conn)
        return conn, False

    def _drop(self):
        """Closes and forgets this thread's connection."""
        held = self._local.conn
        self._local.conn = None
        with self._opened_lock:
            self._opened = [c for c in self._opened if c is not held]
        held[1].close()

    def request(self, method, bucket, key="", query=None, body=None, headers=None, expect=(200,)):
        """(response headers, body bytes) of one request; S3Error for an
        answer not in `expect`. A kept-alive connection the server closed
        meanwhile is remade once (every call here may be repeated)."""
        all_headers = {"Host": self._host}
        all_headers.update(headers or {})
        for attempt in (0, 1):
            conn, reused = self._connection()
            try:
                conn.request(method, self._target(method, bucket, key, query or {}), body=body, headers=all_headers)
                response = conn.getresponse()
                data = response.read()
                break
            except _DROPPED:
                self._drop()
                if not reused or attempt:
                    raise
            except BaseException:
                self._drop()
                raise
        if response.will_close:
            self._drop()
        if response.status not in expect:
            code, message = str(response.status), response.reason
            if data:
                try:
                    error = ET.fromstring(data)
                    code, message = _find(error, "Code") or code, _find(error, "Message") or message
                except ET.ParseError:
                    pass
            raise S3Error(response.status, code, message, "s3://%s/%s" % (bucket, key))
        return response.headers, data

    # -- what the package uses

    def get(self, bucket, key, headers=None):
        return self.request("GET", bucket, key, headers=headers)[1]

    def list_dir(self, bucket, prefix, headers=None, max_keys=None):
        """The keys directly below `prefix` (delimiter '/'), every page;
        only the first page of `max_keys` when that is given."""
        keys, token = [], None
        while True:
            query = {"list-type": "2", "prefix": prefix, "delimiter": "/"}
            if token:
                query["continuation-token"] = token
            if max_keys:
                query["max-keys"] = str(max_keys)
            page = ET.fromstring(self.request("GET", bucket, query=query, headers=headers)[1])
            keys += [_find(c, "Key") for c in page.findall("{*}Contents")]
            token = _find(page, "NextContinuationToken")
            if max_keys or _find(page, "IsTruncated") != "true" or not token:
                return keys

    def upload(self, bucket, key, view):
        if len(view) <= self._single_put_max:
            self.request("PUT", bucket, key, body=view)
            return
        upload_id = self._create_multipart(bucket, key)
        try:
            parts = [view[at:at + self._part_size] for at in range(0, len(view), self._part_size)]
            with concurrent.futures.ThreadPoolExecutor(self._parallel) as pool:
                etags = list(pool.map(lambda n: self._upload_part(bucket, key, upload_id, n + 1, parts[n]),
                                      range(len(parts))))
            self._complete_multipart(bucket, key, upload_id, etags)
        except BaseException:
            # What failed is what the caller needs to hear, not a failed abort.
            with contextlib.suppress(S3Error, OSError, http.client.HTTPException):
                self.request("DELETE", bucket, key, query={"uploadId": upload_id}, expect=(204, 200, 404))
            raise

    def download(self, bucket, key):
        return self.get(bucket, key)

    def _create_multipart(self, bucket, key):
        return _find(ET.fromstring(self.request("POST", bucket, key, query={"uploads": ""})[1]), "UploadId")

    def _upload_part(self, bucket, key, upload_id, number, body):
        headers, _ = self.request("PUT", bucket, key, query={"partNumber": str(number), "uploadId": upload_id},
                                  body=body)
        return headers["ETag"]

    def _complete_multipart(self, bucket, key, upload_id, etags):
        parts = "".join("<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (n, etag.replace("&", "&amp;"))
                        for n, etag in enumerate(etags, 1))
        body = ("<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % parts).encode()
        _, data = self.request("POST", bucket, key, query={"uploadId": upload_id}, body=body)
        answer = ET.fromstring(data)
        if answer.tag.endswith("Error"):  # S3 may fail a Complete in a 200 answer
            raise S3Error(200, _find(answer, "Code"), _find(answer, "Message"), "s3://%s/%s" % (bucket, key))

    def close(self):
        """Closes the connections (in a forked child, its copies of the
        parent's: closing a copy of a socket leaves the parent's open)."""
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for _, conn in opened:
            conn.close()
        self._local = threading.local()

    __del__ = close
