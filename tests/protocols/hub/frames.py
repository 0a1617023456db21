"""An independent reading of the chunk frames of backend/hub/PROTOCOL.md,
for the tests: raw frames are built here, zstd payloads go through Debian's
zstd command. Standard library only."""

import hashlib
import struct
import subprocess

HEAD = struct.Struct(">c32sI")
DATA = struct.Struct(">BI")


def data_frame(chunk, digest=None, codec=0):
    digest = digest or hashlib.sha256(chunk).digest()
    payload = chunk if codec == 0 else subprocess.run(["zstd", "-q", "-c"], input=chunk, stdout=subprocess.PIPE,
                                                      check=True).stdout
    return HEAD.pack(b"D", digest, len(chunk)) + DATA.pack(codec, len(payload)) + payload


def reference_frame(digest, length):
    return HEAD.pack(b"R", digest, length)


def parse(body):
    """[(digest, length, codec, bytes)] of data frames; checks each digest."""
    out = []
    at = 0
    while at < len(body):
        kind, digest, length = HEAD.unpack_from(body, at)
        at += HEAD.size
        assert kind == b"D", kind
        codec, n = DATA.unpack_from(body, at)
        at += DATA.size
        payload = body[at:at + n]
        at += n
        if codec == 1:
            chunk = subprocess.run(["zstd", "-q", "-d", "-c"], input=payload, stdout=subprocess.PIPE,
                                   check=True).stdout
        else:
            assert codec == 0 and n == length, (codec, n, length)
            chunk = payload
        assert len(chunk) == length
        assert hashlib.sha256(chunk).digest() == digest, "a chunk does not match its digest"
        out.append((digest, length, codec, chunk))
    return out
