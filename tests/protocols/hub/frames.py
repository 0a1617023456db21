"""An independent reading of the chunk frames of backend/hub/PROTOCOL.md,
for the tests: raw frames are built here, zstd payloads go through Debian's
zstd command. Standard library only."""

import hashlib
import struct
import subprocess
import tempfile

HEAD = struct.Struct(">c32sI")
DATA = struct.Struct(">BI")


def data_frame(chunk, digest=None, codec=0):
    digest = digest or hashlib.sha256(chunk).digest()
    payload = chunk if codec == 0 else subprocess.run(["zstd", "-q", "-c"], input=chunk, stdout=subprocess.PIPE,
                                                      check=True).stdout
    return HEAD.pack(b"D", digest, len(chunk)) + DATA.pack(codec, len(payload)) + payload


def reference_frame(digest, length):
    return HEAD.pack(b"R", digest, length)


# An empty raw block marked last (RFC 8878, 3.1.1.2): ends a zstd frame.
LAST_BLOCK = b"\x01\x00\x00"


def unzstd(payload, prefix=b""):
    """`prefix`: content the stream starts after (a Weft-Prefix), which the
    zstd command takes as a raw-content dictionary."""
    if not prefix:
        return subprocess.run(["zstd", "-q", "-d", "-c"], input=payload, stdout=subprocess.PIPE, check=True).stdout
    with tempfile.NamedTemporaryFile() as d:
        d.write(prefix)
        d.flush()
        return subprocess.run(["zstd", "-q", "-d", "-c", "-D", d.name], input=payload, stdout=subprocess.PIPE,
                              check=True).stdout


def parse(body, prefix=b""):
    """[(digest, length, codec, bytes, payload_len)] of data frames; checks
    each digest. `prefix`: the body's Weft-Prefix content, if the hub
    applied one."""
    out = []
    at = 0
    stream = b""  # the body's codec 2 payloads so far
    streamed = 0  # the bytes they decompressed to
    while at < len(body):
        kind, digest, length = HEAD.unpack_from(body, at)
        at += HEAD.size
        assert kind == b"D", kind
        codec, n = DATA.unpack_from(body, at)
        at += DATA.size
        payload = body[at:at + n]
        at += n
        if codec == 2:
            # The body's codec 2 payloads are one zstd frame the sender never
            # ends: ended here, it decompresses to the chunks so far.
            stream += payload
            chunk = unzstd(stream + LAST_BLOCK, prefix)[streamed:]
            streamed += len(chunk)
        elif codec == 1:
            chunk = unzstd(payload)
        else:
            assert codec == 0 and n == length, (codec, n, length)
            chunk = payload
        assert len(chunk) == length, (len(chunk), length)
        assert hashlib.sha256(chunk).digest() == digest, "a chunk does not match its digest"
        out.append((digest, length, codec, chunk, n))
    return out
