"""A deliberately small SMB 2.1 client for tests that real clients cannot
drive: it builds requests byte by byte (so it can also build wrong ones),
logs in with raw NTLMSSP NTLMv2 (MD4 written out here: OpenSSL 3 keeps it
in its legacy provider, which Python's hashlib may not load) and signs
with HMAC-SHA256. Independent of the server's code; follows [MS-SMB2] and
[MS-NLMP] directly.
"""

import hashlib
import hmac
import os
import socket
import struct
import time

STATUS_SUCCESS = 0
STATUS_MORE_PROCESSING_REQUIRED = 0xC0000016
STATUS_INVALID_PARAMETER = 0xC000000D
STATUS_ACCESS_DENIED = 0xC0000022
STATUS_LOGON_FAILURE = 0xC000006D
STATUS_USER_SESSION_DELETED = 0xC0000203
STATUS_NETWORK_NAME_DELETED = 0xC00000C9
STATUS_FILE_CLOSED = 0xC0000128
STATUS_BAD_NETWORK_NAME = 0xC00000CC
STATUS_OBJECT_NAME_NOT_FOUND = 0xC0000034
STATUS_END_OF_FILE = 0xC0000011
STATUS_PENDING = 0x103
STATUS_CANCELLED = 0xC0000120
STATUS_FILE_LOCK_CONFLICT = 0xC0000054
STATUS_LOCK_NOT_GRANTED = 0xC0000055
STATUS_RANGE_NOT_LOCKED = 0xC000007E
STATUS_INVALID_LOCK_RANGE = 0xC00001A1
STATUS_NOTIFY_CLEANUP = 0x10B
STATUS_NOTIFY_ENUM_DIR = 0x10C
STATUS_DELETE_PENDING = 0xC0000056

NEGOTIATE, SESSION_SETUP, LOGOFF, TREE_CONNECT, TREE_DISCONNECT, CREATE, CLOSE, FLUSH, READ, WRITE = range(10)
LOCK = 10
CANCEL = 12
ECHO = 13
CHANGE_NOTIFY = 15
QUERY_INFO = 16
SET_INFO = 17


def md4(data):
    """RFC 1320."""
    def f(x, y, z): return (x & y) | (~x & z)
    def g(x, y, z): return (x & y) | (x & z) | (y & z)
    def h(x, y, z): return x ^ y ^ z
    def rol(v, s): return ((v << s) | (v >> (32 - s))) & 0xFFFFFFFF
    msg = bytearray(data)
    bit_len = len(data) * 8
    msg.append(0x80)
    while len(msg) % 64 != 56:
        msg.append(0)
    msg += struct.pack("<Q", bit_len)
    a, b, c, d = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476
    for off in range(0, len(msg), 64):
        x = struct.unpack("<16I", msg[off:off + 64])
        aa, bb, cc, dd = a, b, c, d
        for i in range(16):
            k, s = i, (3, 7, 11, 19)[i % 4]
            if i % 4 == 0: a = rol((a + f(b, c, d) + x[k]) & 0xFFFFFFFF, s)
            elif i % 4 == 1: d = rol((d + f(a, b, c) + x[k]) & 0xFFFFFFFF, s)
            elif i % 4 == 2: c = rol((c + f(d, a, b) + x[k]) & 0xFFFFFFFF, s)
            else: b = rol((b + f(c, d, a) + x[k]) & 0xFFFFFFFF, s)
        for i in range(16):
            k, s = (i % 4) * 4 + i // 4, (3, 5, 9, 13)[i % 4]
            t = 0x5A827999
            if i % 4 == 0: a = rol((a + g(b, c, d) + x[k] + t) & 0xFFFFFFFF, s)
            elif i % 4 == 1: d = rol((d + g(a, b, c) + x[k] + t) & 0xFFFFFFFF, s)
            elif i % 4 == 2: c = rol((c + g(d, a, b) + x[k] + t) & 0xFFFFFFFF, s)
            else: b = rol((b + g(c, d, a) + x[k] + t) & 0xFFFFFFFF, s)
        order = (0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15)
        for i in range(16):
            k, s = order[i], (3, 9, 11, 15)[i % 4]
            t = 0x6ED9EBA1
            if i % 4 == 0: a = rol((a + h(b, c, d) + x[k] + t) & 0xFFFFFFFF, s)
            elif i % 4 == 1: d = rol((d + h(a, b, c) + x[k] + t) & 0xFFFFFFFF, s)
            elif i % 4 == 2: c = rol((c + h(d, a, b) + x[k] + t) & 0xFFFFFFFF, s)
            else: b = rol((b + h(c, d, a) + x[k] + t) & 0xFFFFFFFF, s)
        a, b, c, d = (a + aa) & 0xFFFFFFFF, (b + bb) & 0xFFFFFFFF, (c + cc) & 0xFFFFFFFF, (d + dd) & 0xFFFFFFFF
    return struct.pack("<4I", a, b, c, d)


assert md4(b"abc").hex() == "a448017aaf21d8525fc10ae87aa6729d"


class Closed(Exception):
    """The server closed the connection."""


class Response:
    def __init__(self, raw):
        self.raw = raw
        (self.status, self.command, self.credits, self.flags, self.next, self.mid) = struct.unpack_from(
            "<IHHIIQ", raw, 8)
        self.tree_id, self.session_id = struct.unpack_from("<IQ", raw, 36)
        self.async_id = struct.unpack_from("<Q", raw, 32)[0]  # with flag 0x2
        self.body = raw[64:]


def notify_changes(r):
    """The (action, name) pairs of a CHANGE_NOTIFY answer's
    FILE_NOTIFY_INFORMATION entries."""
    offset, length = struct.unpack_from("<HI", r.body, 2)
    data = r.raw[offset:offset + length] if length else b""
    out = []
    while data:
        following, action, n = struct.unpack_from("<III", data)
        out.append((action, data[12:12 + n].decode("utf-16le")))
        if not following:
            break
        data = data[following:]
    return out


class Client:
    def __init__(self, host, port, timeout=10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.mid = 0
        self.session_id = 0
        self.tree_id = 0
        self.key = None
        self.signing = False

    def close(self):
        self.sock.close()

    # --- framing ---------------------------------------------------------
    def send_frame(self, payload):
        self.sock.sendall(struct.pack(">I", len(payload)) + payload)

    def recv_frame(self):
        head = self._recv(4)
        n = struct.unpack(">I", head)[0] & 0xFFFFFF
        return self._recv(n)

    def _recv(self, n):
        out = b""
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except (ConnectionResetError, socket.timeout) as e:
                raise Closed(str(e))
            if not chunk:
                raise Closed("eof")
            out += chunk
        return out

    def header(self, command, mid=None, credit_charge=1, credits=64, flags=0, next_command=0,
               session_id=None, tree_id=None):
        if mid is None:
            mid = self.mid
            self.mid += max(credit_charge, 1)
        return struct.pack("<4sHHIHHIIQIIQ16s", b"\xfeSMB", 64, credit_charge, 0, command, credits, flags,
                           next_command, mid, 0xFEFF,
                           self.tree_id if tree_id is None else tree_id,
                           self.session_id if session_id is None else session_id, b"\0" * 16)

    def sign(self, msg):
        msg = bytearray(msg)
        struct.pack_into("<I", msg, 16, struct.unpack_from("<I", msg, 16)[0] | 0x8)
        msg[48:64] = b"\0" * 16
        msg[48:64] = hmac.new(self.key, bytes(msg), hashlib.sha256).digest()[:16]
        return bytes(msg)

    def send(self, command, body, sign=None, **kw):
        msg = self.header(command, **kw) + body
        if sign if sign is not None else self.signing:
            msg = self.sign(msg)
        self.send_frame(msg)

    def request(self, command, body, sign=None, **kw):
        self.send(command, body, sign, **kw)
        return self.reply()

    def reply(self):
        r = Response(self.recv_frame())
        while r.status == 0x103:  # STATUS_PENDING: the real answer follows
            r = Response(self.recv_frame())
        return r

    def compound(self, requests):
        """Sends (command, body, related[, session id]) requests as one chain,
        each padded to 8 bytes and signed on its own; returns the answers of
        the chain."""
        msgs = []
        for i, (command, body, related, *session_id) in enumerate(requests):
            msg = self.header(command, flags=0x4 if related else 0, session_id=(session_id or [None])[0]) + body
            if i + 1 < len(requests):
                msg += b"\0" * (-len(msg) % 8)
                msg = msg[:20] + struct.pack("<I", len(msg)) + msg[24:]
            msgs.append(self.sign(msg) if self.signing else msg)
        self.send_frame(b"".join(msgs))
        raw = self.recv_frame()
        answers = []
        while True:
            r = Response(raw)
            answers.append(Response(raw[:r.next]) if r.next else r)
            if not r.next:
                return answers
            raw = raw[r.next:]

    # --- protocol steps ----------------------------------------------------
    def negotiate(self, dialects=(0x0210,)):
        body = struct.pack("<HHHHI16sQ", 36, len(dialects), 1, 0, 0, os.urandom(16), 0)
        body += b"".join(struct.pack("<H", d) for d in dialects)
        return self.request(NEGOTIATE, body)

    def session_setup_raw(self, blob):
        body = struct.pack("<HBBIIHHQ", 25, 0, 1, 0, 0, 64 + 24, len(blob), 0) + blob
        return self.request(SESSION_SETUP, body, sign=False)

    def login(self, user, password, domain=""):
        self.session_id = 0
        flags = 0x00000001 | 0x00000200 | 0x00080000 | 0x00000010 | 0x20000000  # unicode ntlm ess sign 128
        r = self.session_setup_raw(b"NTLMSSP\0" + struct.pack("<II", 1, flags) + b"\0" * 16)
        if r.status != STATUS_MORE_PROCESSING_REQUIRED:
            return r.status
        self.session_id = r.session_id
        blob = r.body[struct.unpack_from("<H", r.body, 4)[0] - 64:]
        challenge = blob[24:32]
        ti_len, _, ti_off = struct.unpack_from("<HHI", blob, 40)
        target_info = blob[ti_off:ti_off + ti_len]
        nt_hash = md4(password.encode("utf-16le"))
        response_key = hmac.new(nt_hash, (user.upper() + domain).encode("utf-16le"), hashlib.md5).digest()
        stamp = struct.pack("<Q", int(time.time() * 10_000_000) + 116444736000000000)
        temp = b"\x01\x01" + b"\0" * 6 + stamp + os.urandom(8) + b"\0" * 4 + target_info + b"\0" * 4
        proof = hmac.new(response_key, challenge + temp, hashlib.md5).digest()
        nt_response = proof + temp
        self.key = hmac.new(response_key, proof, hashlib.md5).digest()
        fields = [b"\0" * 24, nt_response, domain.encode("utf-16le"), user.encode("utf-16le"),
                  b"W\0S\0", b""]
        offset = 64 + 8
        head = b"NTLMSSP\0" + struct.pack("<I", 3)
        payload = b""
        for f in fields:
            head += struct.pack("<HHI", len(f), len(f), offset + len(payload))
            payload += f
        head += struct.pack("<I", flags) + b"\0" * 8
        r = self.session_setup_raw(head + payload)
        if r.status == STATUS_SUCCESS:
            self.signing = True
        return r.status

    def tree_connect(self, share, host="127.0.0.1"):
        path = ("\\\\%s\\%s" % (host, share)).encode("utf-16le")
        r = self.request(TREE_CONNECT, struct.pack("<HHHH", 9, 0, 64 + 8, len(path)) + path)
        if r.status == STATUS_SUCCESS:
            self.tree_id = r.tree_id
        return r

    @staticmethod
    def create_body(name, disposition=3, options=0x40, access=0x0012019F, attributes=0x80):
        n = name.encode("utf-16le")
        return struct.pack("<HBBIQQIIIIIHHII", 57, 0, 0, 2, 0, 0, access, attributes, 7, disposition, options,
                           64 + 56, len(n), 0, 0) + (n or b"\0")

    def create(self, name, disposition=3, options=0x40, access=0x0012019F, attributes=0x80, **kw):
        r = self.request(CREATE, self.create_body(name, disposition, options, access, attributes), **kw)
        file_id = r.body[64:80] if r.status == STATUS_SUCCESS else None
        return r, file_id

    def close_file(self, file_id, **kw):
        return self.request(CLOSE, struct.pack("<HHI", 24, 0, 0) + file_id, **kw)

    def read(self, file_id, length, offset=0, **kw):
        body = struct.pack("<HBBIQ16sIIIHH", 49, 0, 0, length, offset, file_id, 0, 0, 0, 0, 0) + b"\0"
        return self.request(READ, body, **kw)

    def write(self, file_id, data, offset=0, **kw):
        body = struct.pack("<HHIQ16sIIHHI", 49, 64 + 48, len(data), offset, file_id, 0, 0, 0, 0, 0) + data
        return self.request(WRITE, body, **kw)

    def query_info(self, file_id, info_class, info_type=1, length=4096, **kw):
        """QUERY_INFO of a file class (info_type 1); returns the answer and
        its output buffer."""
        body = struct.pack("<HBBIHHIII16s", 41, info_type, info_class, length, 0, 0, 0, 0, 0, file_id) + b"\0"
        r = self.request(QUERY_INFO, body, **kw)
        offset, size = struct.unpack_from("<HI", r.body, 2) if len(r.body) >= 8 else (0, 0)
        return r, r.raw[offset:offset + size] if r.status in (STATUS_SUCCESS, 0x80000005) else b""

    def set_info(self, file_id, info_class, data, info_type=1, **kw):
        """SET_INFO of a file class (info_type 1) to `data`."""
        body = struct.pack("<HBBIHHI16s", 33, info_type, info_class, len(data), 64 + 32, 0, 0, file_id) + data
        return self.request(SET_INFO, body, **kw)

    def lock(self, file_id, elements, wait=True, **kw):
        """LOCK of (offset, length, flags) elements. wait=False: returns the
        first answer, the STATUS_PENDING one of a lock that waits."""
        body = struct.pack("<HHI16s", 48, len(elements), 0, file_id)
        body += b"".join(struct.pack("<QQII", o, n, f, 0) for o, n, f in elements)
        if wait:
            return self.request(LOCK, body, **kw)
        self.send(LOCK, body, **kw)
        return Response(self.recv_frame())

    def notify(self, file_id, length=4096, completion_filter=0x17F, tree=False, **kw):
        """CHANGE_NOTIFY; returns the first answer (STATUS_PENDING for one
        that waits: recv_frame() then brings the final one)."""
        body = struct.pack("<HHI16sII", 32, 1 if tree else 0, length, file_id, completion_filter, 0)
        self.send(CHANGE_NOTIFY, body, **kw)
        return Response(self.recv_frame())

    def cancel(self, pending):
        """CANCEL of a request that went async (its STATUS_PENDING answer);
        not answered itself."""
        msg = bytearray(self.header(CANCEL, mid=pending.mid) + struct.pack("<HH", 4, 0))
        struct.pack_into("<I", msg, 16, 0x2)  # async: the id follows the message id
        struct.pack_into("<Q", msg, 32, pending.async_id)
        self.send_frame(self.sign(msg) if self.signing else bytes(msg))

    def echo(self, **kw):
        return self.request(ECHO, struct.pack("<HH", 4, 0), **kw)
