#!/usr/bin/env python3
"""Two gateway nodes of one namespace, end to end with real clients: node A
and node B are two `weft serve` processes on the same PostgreSQL metadata
(a throwaway server on a free loopback port) and the same object-store
bucket (a third `weft serve`'s S3 endpoint), each with its own local data
directory, as two nodes behind a load balancer would be.

  - files written over S3 at A read the same at B at once, over S3 (boto3),
    SFTP (paramiko) and NFS (libnfs-utils' nfs-cat); so do overwrites and
    removals, and B lists what A lists;
  - one file written over SFTP at A and at B from the same version: the
    first close wins, the second client's close fails with an error, and
    both nodes serve the winner's bytes;
  - a spoke mounting the bucket from node A reads at once what B closes:
    A grants no lease on its change log (changes at B would not wait for
    A's spokes), so the spoke asks A where its log stands before it answers;
  - node A killed with SIGKILL in the middle of an upload: B serves every
    object A acknowledged, byte for byte, and not the cut-off upload; A,
    started again, joins with the same view;
  - PostgreSQL down for 10 s: B goes on serving what it has read, refuses
    writes with 503 ServiceUnavailable, and takes them once it is back;
  - a node with a small object_store.cache_bytes keeps its local copies
    of packs within it, reading on by fetching again what it evicted, and
    after a restart with a smaller one evicts down to it;
  - a node does not start, and says why, when PostgreSQL cannot be reached
    or holds a schema of another version.

    two_nodes_test.py --weft PATH

Exit status 77 (ctest's SKIP_RETURN_CODE), saying why, where PostgreSQL,
boto3, paramiko or nfs-cat is missing."""

import argparse
import hashlib
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE.parent / "protocols" / "rest"))
sys.path.insert(0, str(HERE.parent / "backend" / "connectors"))
sys.path.insert(0, str(HERE.parent / "protocols" / "hub"))

from connectors_test import WeftSite, skip  # noqa: E402
from gateway import Gateway, close_checked  # noqa: E402
from hubsite import Spoke, rest, spoke_mount  # noqa: E402
from postgres_server import PostgresServer, Unavailable, free_port  # noqa: E402

BUCKET = "train"


def sftp_get(node, path):
    transport, sftp = node.sftp()
    try:
        with sftp.open("/data/" + path, "rb") as f:
            return f.read()
    finally:
        sftp.close()
        transport.close()


def nfs_get(node, path):
    port = int(node.endpoints["nfs"].rsplit(":", 1)[1])
    url = "nfs://127.0.0.1/data/%s?nfsport=%d&mountport=%d&version=3" % (path, port, port)
    r = subprocess.run(["nfs-cat", url], capture_output=True, timeout=60)
    assert r.returncode == 0, (r.stderr.decode(errors="replace"), node.log()[-3000:])
    return r.stdout


def s3_get(s3, key):
    return s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()


def listing(s3):
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return sorted((o["Key"], o["Size"], o["ETag"]) for page in pages for o in page.get("Contents", []))


def body(name, size):
    return hashlib.shake_256(name.encode()).digest(size)


def check_read_at_once(a, b):
    s3a, s3b = a.s3(), b.s3()
    s3a.create_bucket(Bucket=BUCKET)
    # Small files live in the metadata; the others are packs in the bucket.
    files = {"small.txt": b"kept in the metadata\n", "medium.bin": body("medium", 70_000),
             "large.bin": body("large", 5 << 20)}
    for generation in range(2):
        for name, data in files.items():
            s3a.put_object(Bucket=BUCKET, Key=name, Body=data)
            got = {"S3": s3_get(s3b, name), "SFTP": sftp_get(b, BUCKET + "/" + name),
                   "NFS": nfs_get(b, BUCKET + "/" + name)}
            for how, bytes_read in got.items():
                assert bytes_read == data, "%s at B, generation %d, over %s: %d bytes, not the %d written at A" % (
                    name, generation, how, len(bytes_read), len(data))
        files = {name: data[::-1] + b"!" for name, data in files.items()}  # overwrites next round
    assert listing(s3b) == listing(s3a)
    s3a.delete_object(Bucket=BUCKET, Key="small.txt")
    try:
        s3b.head_object(Bucket=BUCKET, Key="small.txt")
        raise AssertionError("B still serves an object A removed")
    except s3b.exceptions.ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
    assert listing(s3b) == listing(s3a)
    print("ok: written and overwritten over S3 at A, read the same at B at once over S3, SFTP and NFS; "
          "a removal and the listing too", flush=True)


def check_one_wins(a, b):
    import paramiko
    s3a, s3b = a.s3(), b.s3()
    base, mine = b"the version both start from\n", b"written at node A\n"
    s3a.put_object(Bucket=BUCKET, Key="shared.txt", Body=base)
    ta, sftp_a = a.sftp()
    tb, sftp_b = b.sftp()
    try:
        fa = sftp_a.open("/data/%s/shared.txt" % BUCKET, "r+")
        fb = sftp_b.open("/data/%s/shared.txt" % BUCKET, "r+")
        fa.write(mine)
        fb.write(b"written at node B, which closes second\n")
        close_checked(fa)
        try:
            close_checked(fb)
            raise AssertionError("both closes succeeded: one node's write was lost")
        except (IOError, paramiko.SFTPError) as e:
            message = str(e)
        expected = mine + base[len(mine):]
        for how, got in (("S3 at A", s3_get(s3a, "shared.txt")), ("S3 at B", s3_get(s3b, "shared.txt")),
                         ("SFTP at B", sftp_get(b, BUCKET + "/shared.txt"))):
            assert got == expected, "%s: %r" % (how, got)
    finally:
        for s, t in ((sftp_a, ta), (sftp_b, tb)):
            s.close()
            t.close()
    print("ok: one file written over SFTP at A and at B from the same version: A's close won, "
          "B's client was told (%s); both nodes serve A's bytes" % message, flush=True)


def check_spoke(a, b, weft):
    spoke = Spoke(weft, a, a.url, protocols=("rest", "s3"), local="/mirror", remote="data/" + BUCKET)
    try:
        s3, s3_b = spoke.s3(), b.s3()
        key = "spoke/versions.txt"
        for i in range(5):
            data = b"version %d\n" % i
            s3_b.put_object(Bucket=BUCKET, Key=key, Body=data)
            got = s3.get_object(Bucket="mirror", Key=key)["Body"].read()
            assert got == data, (i, got)
        with rest(spoke) as session:
            feed = spoke_mount(session, spoke)["feed"]
        assert not feed["lease"] and feed["leased_calls"] == 0, feed
        assert feed["log_round_trips"] >= 5, feed
        s3.close()
        s3_b.close()
    except BaseException:
        print(spoke.log()[-4000:], file=sys.stderr)
        raise
    finally:
        assert spoke.stop() == 0
    print("ok: a spoke of node A reads each version B closed, asking A where its log stands (no lease)", flush=True)


def metric(node, name):
    """A value of the node's Prometheus metrics (a series without labels)."""
    import urllib.request
    with urllib.request.urlopen("http://%s/metrics" % node.endpoints["rest"], timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError("no %s in the metrics" % name)


def written_bytes(node):
    """What the node's namespace has taken in so far."""
    return metric(node, "weft_namespace_written_bytes_total")


def check_kill_mid_write(a, b):
    s3a, s3b = a.s3(), b.s3()
    acknowledged = {}
    for i in range(12):
        name = "ack-%02d.bin" % i
        acknowledged[name] = body(name, (i % 3) * 200_000 + 100)
        s3a.put_object(Bucket=BUCKET, Key=name, Body=acknowledged[name])
    # An overwrite and a new object that are under way when A dies.
    in_flight = {"ack-00.bin": body("replacement", 96 << 20), "cut-off.bin": body("cut-off", 96 << 20)}
    outcomes = {}

    def upload(name, data):
        try:
            a.s3().put_object(Bucket=BUCKET, Key=name, Body=data)
            outcomes[name] = "acknowledged"
        except Exception as e:  # the connection dies with the node
            outcomes[name] = "failed: %s" % type(e).__name__

    threads = [threading.Thread(target=upload, args=item) for item in in_flight.items()]
    before = written_bytes(a)
    for t in threads:
        t.start()
    # Killed once the uploads are well under way: 16 MiB of their 192 in.
    deadline = time.monotonic() + 30
    while written_bytes(a) < before + (16 << 20) and time.monotonic() < deadline:
        time.sleep(0.01)
    a.restart(crash=True)  # SIGKILL, then started again on the same engines
    for t in threads:
        t.join()
    for name, outcome in outcomes.items():
        if outcome == "acknowledged":
            acknowledged[name] = in_flight[name]
    for node, s3 in (("B", s3b), ("A after its restart", a.s3())):
        for name, data in acknowledged.items():
            got = s3_get(s3, name)
            assert got == data, "%s at %s: %d bytes, not the %d acknowledged" % (name, node, len(got), len(data))
        if outcomes["cut-off.bin"] != "acknowledged":
            try:
                s3.head_object(Bucket=BUCKET, Key="cut-off.bin")
                raise AssertionError("%s serves an upload that was never acknowledged" % node)
            except s3.exceptions.ClientError as e:
                assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
    print("ok: node A killed with SIGKILL during two 96 MiB uploads (%s): B served all %d acknowledged objects "
          "byte for byte, and A did after its restart" % (", ".join("%s %s" % kv for kv in sorted(outcomes.items())),
                                                          len(acknowledged)), flush=True)
    return acknowledged


def check_metadata_outage(a, b, pg, acknowledged):
    """PostgreSQL down for 10 s: B serves what it has read from its caches,
    refuses writes with 503, and takes them again once the server is back."""
    s3b = b.s3()
    for name, data in acknowledged.items():  # read once: now in B's caches
        assert s3_get(s3b, name) == data
    outage = 10
    pg.stop_server("immediate")
    started = time.monotonic()
    reads = refused = 0
    try:
        while time.monotonic() - started < outage:
            for name, data in acknowledged.items():
                assert s3_get(s3b, name) == data, name
                reads += 1
            try:
                s3b.put_object(Bucket=BUCKET, Key="during-outage.txt", Body=b"no metadata store")
                raise AssertionError("a write was acknowledged while the metadata store was down")
            except s3b.exceptions.ClientError as e:
                code = (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
                assert code == (503, "ServiceUnavailable"), code
                refused += 1
            time.sleep(0.2)
    finally:
        pg.start()
    # The first call after the outage may find its pooled connection stale.
    deadline = time.monotonic() + 30
    while True:
        try:
            s3b.put_object(Bucket=BUCKET, Key="after-outage.txt", Body=b"back")
            break
        except s3b.exceptions.ClientError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert s3_get(a.s3(), "after-outage.txt") == b"back"
    print("ok: PostgreSQL down for %d s: B served %d cached reads, refused %d writes with 503 "
          "ServiceUnavailable, and took writes again once it was back" % (outage, reads, refused), flush=True)


def local_bytes(node, budget):
    """The bytes of the node's local data files, once its eviction (in the
    background) has brought them within `budget`, or after 10 s."""
    deadline = time.monotonic() + 10
    while True:
        n = 0
        for f in (node.data / "data").rglob("*"):
            try:
                n += f.stat().st_size if f.is_file() else 0
            except FileNotFoundError:  # evicted while we looked
                pass
        if n <= budget or time.monotonic() > deadline:
            return n


def check_local_copies(a, weft, config):
    """A node's local copies of packs stay within object_store.cache_bytes:
    node C, with 8 MiB, reads 16 objects of 1 MiB that A wrote, over S3 and
    NFS, twice over (what it evicted is fetched again, intact); restarted
    with 3 MiB, it finds its copies, checks the bucket holds their packs and
    evicts down to the new budget."""
    budget, size, count = 8 << 20, 1 << 20, 16
    s3a = a.s3()
    names = ["cache/obj-%02d.bin" % i for i in range(count)]
    for name in names:
        s3a.put_object(Bucket=BUCKET, Key=name, Body=body(name, size))
    conf = dict(config, object_store=dict(config["object_store"], cache_bytes=budget))
    c = Gateway(weft, protocols=("rest", "s3", "nfs"), config=conf, prefix="weft-node-c-",
                credentials=a.credentials)
    try:
        s3c = c.s3()
        for rounds in range(2):
            for i, name in enumerate(names):
                got = s3_get(s3c, name) if i % 2 == 0 else nfs_get(c, BUCKET + "/" + name)
                assert got == body(name, size), name
        held = local_bytes(c, budget)
        assert held <= budget, (held, c.log()[-3000:])
        evicted, fetched = metric(c, "weft_object_store_evictions_total"), metric(c, "weft_object_store_fetches_total")
        # Reading 16 MiB in order through 8 MiB misses nearly every time
        # (eviction runs behind the reads, so a copy may still be there).
        assert fetched >= count + count // 2, fetched
        assert evicted >= fetched - budget // size, (evicted, fetched)
        assert metric(c, "weft_object_store_local_bytes") <= budget
        assert metric(c, "weft_object_store_local_budget_bytes") == budget

        smaller = 3 << 20
        stopped = {}

        def shrink():
            # What C holds once stopped (and finds at its start): an
            # eviction may still have been running when `held` was measured.
            stopped["bytes"] = local_bytes(c, budget)
            conf["object_store"]["cache_bytes"] = smaller
            (c.tmp / "weft.json").write_text(json.dumps(conf))
        c.restart(between=shrink)
        after = local_bytes(c, smaller)
        assert after <= smaller, (after, c.log()[-3000:])
        assert "local copies of packs, %d bytes" % stopped["bytes"] in c.log(), (stopped, c.log()[-3000:])
        s3c = c.s3()
        for name in names:
            assert s3_get(s3c, name) == body(name, size), name
        print("ok: node C kept its copies of packs within %d MiB: %d objects of 1 MiB read twice over S3 and NFS, "
              "%d fetches, %d evictions, %d bytes held; restarted with %d MiB it found them and kept %d bytes"
              % (budget >> 20, count, fetched, evicted, held, smaller >> 20, after), flush=True)
    except BaseException:
        print(c.log()[-4000:], file=sys.stderr)
        raise
    finally:
        code = c.stop()
    assert code == 0, code


def check_refusals(weft, pg, config, tmp):
    """A node refuses to start, saying why, when PostgreSQL cannot be reached
    or holds a schema of another version."""
    def start(metadata, name):
        conf = dict(config, metadata=metadata)
        path = tmp / (name + ".json")
        path.write_text(json.dumps(conf))
        r = subprocess.run([weft, "serve", "--data", str(tmp / name), "--config", str(path), "--s3", "127.0.0.1:0",
                            "--rest", "off", "--nfs", "off", "--smb", "off", "--sftp", "off"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0, "weft started: " + r.stdout + r.stderr
        return r.stdout + r.stderr

    out = start("postgresql://postgres@127.0.0.1:%d/none?connect_timeout=3" % free_port(), "unreachable")
    assert "cannot connect to PostgreSQL" in out, out
    unreachable = [line for line in out.splitlines() if "PostgreSQL" in line][0]
    pg.sql(config["metadata"], "UPDATE weft_schema SET version = 99")
    try:
        out = start(config["metadata"], "newer")
        assert "schema is at version 99" in out, out
    finally:
        pg.sql(config["metadata"], "UPDATE weft_schema SET version = 2")
    newer = [line for line in out.splitlines() if "version 99" in line][0]
    print("ok: refused to start, saying why: %s | %s" % (unreachable.split("] ", 1)[-1],
                                                          newer.split("] ", 1)[-1]), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weft", required=True)
    args = p.parse_args()
    for module in ("boto3", "paramiko"):
        try:
            __import__(module)
        except ImportError:
            skip("%s is not installed (Debian's python3-%s)" % (module, module))
    if not shutil.which("nfs-cat"):
        skip("nfs-cat is not installed (Debian's libnfs-utils)")
    try:
        pg = PostgresServer()
    except Unavailable as e:
        skip(str(e))
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="weft-two-nodes-"))
    store = WeftSite(args.weft, "s3")
    nodes = []
    try:
        store.setup()
        e = store.env
        creds = tmp / "store-credentials.json"
        creds.write_text(json.dumps({"access_key_id": e["WEFT_CONN_S3_KEY"],
                                     "secret_access_key": e["WEFT_CONN_S3_SECRET"]}))
        config = {"metadata": pg.fresh_database(),
                  "object_store": {"endpoint": e["WEFT_CONN_S3_URL"], "bucket": e["WEFT_CONN_S3_BUCKET"],
                                   "prefix": "two-nodes", "credentials": str(creds), "timeout_s": 10}}
        a = Gateway(args.weft, protocols=("rest", "s3", "sftp"), config=config, prefix="weft-node-a-")
        nodes.append(a)
        b = Gateway(args.weft, protocols=("rest", "s3", "nfs", "sftp"), config=config, prefix="weft-node-b-",
                    credentials=a.credentials)
        nodes.append(b)
        check_read_at_once(a, b)
        check_one_wins(a, b)
        check_spoke(a, b, args.weft)
        acknowledged = check_kill_mid_write(a, b)
        check_metadata_outage(a, b, pg, acknowledged)
        check_local_copies(a, args.weft, config)
        check_refusals(args.weft, pg, config, tmp)
    except BaseException:
        for node in nodes:
            print(node.log()[-4000:], file=sys.stderr)
        raise
    finally:
        codes = [node.stop() for node in nodes]
        store.stop()
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    assert codes == [0, 0], codes
    return 0


if __name__ == "__main__":
    sys.exit(main())
