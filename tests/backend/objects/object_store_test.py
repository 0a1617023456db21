#!/usr/bin/env python3
"""The object-store data engine against a real S3 endpoint that this
script starts on loopback:

    object_store_test.py --server weft-s3|moto --tests BIN --weft WEFT [--only ARG...]

  weft-s3  a second `weft serve`, its S3 front end
  moto     moto_server; skipped, visibly, when moto is not installed

First BIN (pack_store_test.cpp) runs against it; with --only, BIN runs
with those arguments and nothing else follows (the namespace conformance
suite's postgres+objects combination runs so). Then a gateway node is
started with "object_store" in its config, pointing at it:
  - files written over S3 to the node are in the bucket as packs (the
    small ones, kept in the metadata, are not);
  - with its local data files deleted while it is stopped, the node serves
    every file again, fetched from the packs; a pack damaged in the bucket
    is refused (500), not served, until it is right again;
  - while the object store does not answer (stopped with SIGSTOP for 20 s),
    the node serves what it holds and keeps small files, refuses a file that
    needs a pack with 503 ServiceUnavailable, and takes it once it is back;
  - with the object store gone, the node refuses to start and says why.

Exit status: BIN's or this script's; 77 (ctest's SKIP_RETURN_CODE) when the
server cannot run here. Needs boto3 (Debian's python3-boto3)."""

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "connectors"))
sys.path.insert(0, str(HERE.parents[1] / "protocols" / "rest"))

from connectors_test import SKIP, Moto, WeftSite, skip  # noqa: E402

PACK_PREFIX = "node-a"


def s3_client(url, key, secret, attempts=None):
    """A boto3 client (path style); `attempts`: at most that many tries of a call."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        skip("boto3 is not installed (Debian's python3-boto3)")
    retries = {"max_attempts": attempts, "mode": "standard"} if attempts else None
    return boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries=retries))


def node_files():
    """name -> bytes: small ones (inline in the metadata), a few over 64 KiB, one multipart."""
    files = {"small-%d.txt" % i: ("small %d\n" % i).encode() for i in range(3)}
    for i, size in enumerate((70_000, 1 << 20, 3 << 20)):
        files["big-%d.bin" % i] = hashlib.shake_256(b"pack %d" % i).digest(size)
    files["huge.bin"] = hashlib.shake_256(b"huge").digest(40 << 20)  # past part_bytes (32 MiB)
    return files


def check_outage(s3, files, store_pid):
    """The object store stops answering for 20 s, then comes back."""
    import botocore.exceptions
    outage = 20
    big = hashlib.shake_256(b"during the outage").digest(1 << 20)
    os.kill(store_pid, signal.SIGSTOP)
    started = time.monotonic()
    try:
        for name, body in files.items():
            assert s3.get_object(Bucket="train", Key=name)["Body"].read() == body, name
        s3.put_object(Bucket="train", Key="small-during.txt", Body=b"kept in the metadata")
        try:
            s3.put_object(Bucket="train", Key="big-during.bin", Body=big)
            raise AssertionError("a file that needs a pack was taken while the object store was gone")
        except botocore.exceptions.ClientError as e:
            code = (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
            assert code == (503, "ServiceUnavailable"), code
        try:
            s3.head_object(Bucket="train", Key="big-during.bin")
            raise AssertionError("the refused file is there")
        except botocore.exceptions.ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
        time.sleep(max(0.0, outage - (time.monotonic() - started)))
    finally:
        os.kill(store_pid, signal.SIGCONT)
    s3.put_object(Bucket="train", Key="big-during.bin", Body=big)
    assert s3.get_object(Bucket="train", Key="big-during.bin")["Body"].read() == big
    assert s3.get_object(Bucket="train", Key="small-during.txt")["Body"].read() == b"kept in the metadata"
    print("ok: object store gone %d s: reads and small files went on, a big file got 503, "
          "and was taken once it was back" % outage, flush=True)


def check_node(weft, store, tmp, store_pid):
    import botocore.exceptions
    from gateway import Gateway
    creds = tmp / "store-credentials.json"
    creds.write_text(json.dumps({"access_key_id": store["key"], "secret_access_key": store["secret"]}))
    config = {"object_store": {"endpoint": store["url"], "bucket": store["bucket"], "prefix": PACK_PREFIX,
                               "credentials": str(creds), "timeout_s": 3}}
    node = Gateway(weft, protocols=("rest", "s3"), config=config, prefix="weft-obj-node-")
    try:
        c = node.credentials
        s3 = s3_client("http://" + node.endpoints["s3"], c["access_key_id"], c["secret_access_key"])
        s3.create_bucket(Bucket="train")
        files = node_files()
        for name, body in files.items():
            s3.put_object(Bucket="train", Key=name, Body=body)

        bucket = s3_client(store["url"], store["key"], store["secret"])
        pages = bucket.get_paginator("list_objects_v2").paginate(Bucket=store["bucket"], Prefix=PACK_PREFIX + "/packs/")
        packs = {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}
        big = sorted(len(b) for n, b in files.items() if not n.startswith("small"))
        assert sorted(packs.values()) == big, "packs %s, expected sizes %s" % (packs, big)
        print("ok: %d files over S3, %d packs in the object store" % (len(files), len(packs)), flush=True)

        local = node.data / "data"

        # The pack of big-1.bin (its only version: the pack is the file) with one byte changed.
        damaged_key = next(k for k, size in packs.items() if size == len(files["big-1.bin"]))
        damaged = bytearray(files["big-1.bin"])
        damaged[12345] ^= 0xFF

        def wipe_local_data():
            removed = 0
            for f in local.rglob("*"):
                if f.is_file():
                    f.unlink()
                    removed += 1
            assert removed == len(packs), "%d local data files, %d packs" % (removed, len(packs))
            bucket.put_object(Bucket=store["bucket"], Key=damaged_key, Body=bytes(damaged))

        node.restart(between=wipe_local_data)
        s3 = s3_client("http://" + node.endpoints["s3"], c["access_key_id"], c["secret_access_key"])
        try:
            s3_client("http://" + node.endpoints["s3"], c["access_key_id"], c["secret_access_key"], 1).get_object(
                Bucket="train", Key="big-1.bin")["Body"].read()
            raise AssertionError("a damaged pack was served")
        except botocore.exceptions.ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 500, e.response
        assert "does not match its manifest" in node.log()
        bucket.put_object(Bucket=store["bucket"], Key=damaged_key, Body=files["big-1.bin"])
        for name, body in files.items():
            got = s3.get_object(Bucket="train", Key=name)["Body"].read()
            assert got == body, "%s: %d bytes back, %d written" % (name, len(got), len(body))
        refetched = sum(1 for f in local.rglob("*") if f.is_file())
        assert refetched == len(packs), "%d local data files after the reads" % refetched
        print("ok: local data files deleted, every file read back from the packs; a damaged pack refused", flush=True)

        # Overwrites beyond the versions kept remove the old packs.
        for i in range(6):
            s3.put_object(Bucket="train", Key="big-0.bin", Body=hashlib.shake_256(b"again %d" % i).digest(70_000))
        pages = bucket.get_paginator("list_objects_v2").paginate(Bucket=store["bucket"], Prefix=PACK_PREFIX + "/packs/")
        after = [o["Key"] for page in pages for o in page.get("Contents", [])]
        assert len(after) == len(packs) - 1 + 4, "%d packs after overwrites (4 versions kept)" % len(after)
        print("ok: trimmed versions' packs removed (%d packs)" % len(after), flush=True)

        files["big-0.bin"] = hashlib.shake_256(b"again 5").digest(70_000)
        check_outage(s3_client("http://" + node.endpoints["s3"], c["access_key_id"], c["secret_access_key"], 1),
                     files, store_pid)
    finally:
        node.stop()
    return config


def check_refusal(weft, config, tmp):
    data = tmp / "refused"
    config_path = tmp / "refused.json"
    config_path.write_text(json.dumps(config))
    r = subprocess.run([weft, "serve", "--data", str(data), "--config", str(config_path), "--s3", "127.0.0.1:0",
                        "--rest", "127.0.0.1:0", "--nfs", "off", "--smb", "off", "--sftp", "off"],
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0, "weft started without its object store:\n" + out
    assert "object store" in out and config["object_store"]["endpoint"].split("//")[1] in out, out
    print("ok: without its object store, weft refuses to start:",
          [line for line in out.splitlines() if "object store" in line][0], flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True, choices=("weft-s3", "moto"))
    p.add_argument("--tests", required=True)
    p.add_argument("--weft", required=True)
    p.add_argument("--only", nargs=argparse.REMAINDER, help="run BIN with these arguments, and only that")
    args = p.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="weft-obj-"))
    server = Moto(tmp) if args.server == "moto" else WeftSite(args.weft, "s3")
    try:
        server.setup()
        e = server.env
        store = {"url": e["WEFT_CONN_S3_URL"], "bucket": e["WEFT_CONN_S3_BUCKET"], "key": e["WEFT_CONN_S3_KEY"],
                 "secret": e["WEFT_CONN_S3_SECRET"]}
        env = dict(os.environ, WEFT_OBJ_URL=store["url"], WEFT_OBJ_BUCKET=store["bucket"], WEFT_OBJ_KEY=store["key"],
                   WEFT_OBJ_SECRET=store["secret"])
        if e.get("WEFT_CONN_S3_AUTH") == "0":
            env["WEFT_OBJ_NO_AUTH"] = "1"
        code = subprocess.run([args.tests, *(args.only or [])], env=env).returncode
        if code != 0 or args.only is not None:
            return code
        store_pid = (server.proc if args.server == "moto" else server.gw.proc).pid
        config = check_node(args.weft, store, tmp, store_pid)
    finally:
        server.stop()
    check_refusal(args.weft, config, tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
