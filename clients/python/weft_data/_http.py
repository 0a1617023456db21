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
import selectors
import socket
import threading
import urllib.parse
import xml.etree.ElementTree as ET

PRESIGN_EXPIRES = 900  # seconds; each URL is made just before it is used
TIMEOUT = 300  # seconds without a byte from the service before a request fails
MAX_HEAD = 64 << 10  # bytes of an answer's status line and headers
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


def _error(status, reason, data, bucket, key):
    """The S3Error of an answer: its XML's Code and Message, where it has them."""
    code, message = str(status), reason
    if data:
        try:
            error = ET.fromstring(data)
            code, message = _find(error, "Code") or code, _find(error, "Message") or message
        except ET.ParseError:
            pass
    return S3Error(status, code, message, "s3://%s/%s" % (bucket, key))


class ThreadedGets:
    """get_many on threads: each GET a call of the store's own get,
    `parallel` at a time, on a pool per process (a pool's threads do not
    survive a fork)."""

    _pool = _pool_key = None

    def get_many(self, bucket, requests, parallel):
        """The bodies of GETs of `requests` ((key, headers or None) each), in
        their order; the first error in that order is raised."""
        if len(requests) < 2 or parallel == 1:
            return [self.get(bucket, key, headers=headers) for key, headers in requests]
        if self._pool_key != (os.getpid(), parallel):
            self._pool = concurrent.futures.ThreadPoolExecutor(parallel, "weft-fetch")
            self._pool_key = (os.getpid(), parallel)
        return list(self._pool.map(lambda r: self.get(bucket, r[0], headers=r[1]), requests))


class _Get:
    """One GET of HttpStore.get_many, its answer as it arrives."""

    __slots__ = ("index", "sock", "reused", "head", "status", "reason", "closes", "body", "have")

    def __init__(self, index, sock, reused):
        self.index, self.sock, self.reused = index, sock, reused
        self.head, self.body, self.have = bytearray(), None, 0

    def receive(self):
        """Takes what the socket has (it is readable); True once the answer
        is whole, None where it has no Content-Length (left to http.client)."""
        if self.body is not None:
            got = self.sock.recv_into(memoryview(self.body)[self.have:])
            if not got:
                raise ConnectionError("the service closed the connection in the middle of an answer")
            self.have += got
            return self.have == len(self.body)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionResetError("the service closed the connection before answering")
        self.head += chunk
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            if len(self.head) > MAX_HEAD:
                raise http.client.LineTooLong("an answer's headers (over %d bytes)" % MAX_HEAD)
            return False
        lines = bytes(self.head[:end]).decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        status, _, self.reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not status.isdigit():
            raise http.client.BadStatusLine(lines[0])
        self.status = int(status)
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        connection = fields.get("connection", "").lower()
        self.closes = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        length = fields.get("content-length", "")
        if "transfer-encoding" in fields or not length.isdigit():
            return None
        self.body = bytearray(int(length))
        rest = self.head[end + 4:]
        if len(rest) > len(self.body):
            raise http.client.HTTPException("%d bytes more than the answer's Content-Length" % (len(rest) - len(self.body)))
        self.body[:len(rest)] = rest
        self.have = len(rest)
        return self.have == len(self.body)


class HttpStore(ThreadedGets):
    """What the dataset and the checkpoint helpers need of an S3 service,
    over http.client; one connection per thread, remade after a fork.
    Uploads are made as boto3 makes them: one PUT up to `single_put_max`
    bytes, else multipart in parts of `part_size`, `parallel` at a time (a
    failed one is aborted); downloads in one GET. A batch of GETs
    (get_many) goes over connections of its own from one thread."""

    def __init__(self, endpoint_url, client_kwargs, single_put_max, part_size, parallel, credentials=None):
        self._opened = []  # (pid, connection or socket): close() ends them all, the upload threads' too
        self._opened_lock = threading.Lock()
        self._local = threading.local()
        self._idle = []  # (pid, socket): get_many's connections between batches
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
        conn = cls(*self._address, timeout=TIMEOUT)
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
            raise _error(response.status, response.reason, data, bucket, key)
        return response.headers, data

    # -- a batch of GETs from one thread

    def get_many(self, bucket, requests, parallel):
        """ThreadedGets.get_many, over plain http from this one thread: up to
        `parallel` GETs under way at once, each on a keep-alive connection
        of its own, a selector reading whichever answers. Threads making
        the GETs with http.client took four times the CPU here (128 GETs of
        125 KiB from a local gateway: 25 ms against 6; the interpreter lock
        passed between them, and http.client parses headers with the email
        package), and a DataLoader worker's CPU is what feeds the GPU. No
        library of Python's does this: asyncio's streams took 18 ms. An
        answer without a Content-Length, and https, go to http.client."""
        if self._https:
            return super().get_many(bucket, requests, parallel)
        answers, later = [None] * len(requests), []
        waiting = list(range(len(requests)))[::-1]  # pop() takes the next in order
        selector = selectors.DefaultSelector()

        def send(index, retry=False):
            sock, reused = self._idle_socket(fresh=retry)
            key, headers = requests[index]
            try:
                sock.sendall(self._request_bytes(bucket, key, headers))
            except _DROPPED:
                self._forget(sock)
                if reused:
                    return send(index, retry=True)
                raise
            except BaseException:
                self._forget(sock)
                raise
            selector.register(sock, selectors.EVENT_READ, _Get(index, sock, reused and not retry))

        try:
            for _ in range(min(parallel, len(waiting))):
                send(waiting.pop())
            while selector.get_map():
                ready = selector.select(TIMEOUT)
                if not ready:
                    raise TimeoutError("no answer from %s:%s in %d s" % (self._address + (TIMEOUT,)))
                for entry, _ in ready:
                    get = entry.data
                    try:
                        whole = get.receive()
                    except _DROPPED:
                        if not get.reused or get.head:
                            raise
                        # A kept-alive connection the service had closed: once more on a new one.
                        selector.unregister(get.sock)
                        self._forget(get.sock)
                        send(get.index, retry=True)
                        continue
                    if whole is False:
                        continue
                    selector.unregister(get.sock)
                    if whole is None or get.closes:
                        self._forget(get.sock)
                    else:
                        self._idle.append((os.getpid(), get.sock))
                    if whole is None:
                        later.append(get.index)
                    elif get.status == 200:
                        answers[get.index] = bytes(get.body)
                    else:
                        answers[get.index] = _error(get.status, get.reason, get.body, bucket, requests[get.index][0])
                    if waiting:
                        send(waiting.pop())
        finally:
            for entry in list(selector.get_map().values()):
                self._forget(entry.fileobj)  # its answer is unread: the connection is of no more use
            selector.close()
        for index in later:
            key, headers = requests[index]
            try:
                answers[index] = self.get(bucket, key, headers=headers)
            except S3Error as e:
                answers[index] = e
        for answer in answers:
            if isinstance(answer, S3Error):
                raise answer
        return answers

    def _request_bytes(self, bucket, key, headers):
        lines = ["GET %s HTTP/1.1" % self._target("GET", bucket, key, {}), "Host: " + self._host,
                 "Accept-Encoding: identity"]
        for name, value in (headers or {}).items():
            if any(c in "\r\n" for c in name + value):
                raise ValueError("header %r: a line break in a header" % name)
            lines.append("%s: %s" % (name, value))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _idle_socket(self, fresh=False):
        """(socket, reused): one of this process's idle connections, or a new one."""
        pid = os.getpid()
        while not fresh and self._idle:
            owner, sock = self._idle.pop()
            if owner == pid:
                return sock, True
        sock = socket.create_connection(self._address, timeout=TIMEOUT)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._opened_lock:
            self._opened.append((pid, sock))
        return sock, False

    def _forget(self, sock):
        with self._opened_lock:
            self._opened = [c for c in self._opened if c[1] is not sock]
        sock.close()

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
        self._idle = []

    __del__ = close
