#!/usr/bin/env python3
"""The Python client (clients/python, package weft_data) against a real
spoke: a hub and a spoke through the WAN emulator, read and written with
real boto3 through the package, and again with its http transport (the
standard library alone: presigned URLs, or anonymous on a public-read
export; also in a process where boto3 does not import). The dataset lists a directory in the
gateway's order and reads the right bytes (also from an index file); the
sampler's order is the gateway's (hubsite.sampler_order, for several
seeds, epochs, world sizes, ranks and drop_last), and what the spoke
fetches ahead once the first sample is read with the declared order: the
rest are all cache hits, with a seeded order, an index file and an index
file naming files in a subdirectory; workers (forked and spawned, as
DataLoader starts them, before the epoch is set) read with the header; checkpoints round-trip
(one PUT, multipart past the single-PUT limit, small); bad input raises. Tests that need torch are skipped,
saying so, when it does not import.

    python_client_test.py --weft PATH [unittest arguments]
"""

import multiprocessing
import os
import pathlib
import socket
import sys
import threading
import time
import unittest
from unittest import mock

import botocore.config
import botocore.exceptions
import requests

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "protocols" / "hub"))
sys.path.insert(0, str(HERE.parent.parent / "clients" / "python"))
from hubsite import (Site, Spoke, fetched_ahead, hub_put, rest, run_tests, sampler_fetched_bytes,  # noqa: E402
                     sampler_order, spoke_mount)
from weft_data import (CheckpointSaver, S3Dataset, S3Error, WeftSampler, load_checkpoint,  # noqa: E402
                       save_checkpoint)
import weft_data._s3  # noqa: E402
import weft_data.checkpoint  # noqa: E402
from weft_data._torch import torch  # noqa: E402

WEFT = None
DATASETS = "data/datasets/"
BUCKET = "datasets"  # the spoke's mount of DATASETS
NEEDS_TORCH = unittest.skipUnless(torch, "torch is not installed (python3-torch)")


def serve_samples(datasets, conn):
    """A worker process: reads the samples it is asked for, (dataset number,
    indices), and sends them back."""
    while (asked := conn.recv()) is not None:
        d, indices = asked
        conn.send([datasets[d][i] for i in indices])


class HoldingRelay:
    """A TCP relay to `target` (HOST:PORT) that, once armed, holds each
    request it passes on until `together` are held at once: a client that
    waits for each answer before it asks again gets none, and fails."""

    def __init__(self, target, together):
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.together = threading.Barrier(together, timeout=20)
        self.armed = False
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self.target)
            self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source, sink, holds):
        try:
            while data := source.recv(1 << 16):
                if holds and self.armed:
                    self.together.wait()
                sink.sendall(data)
        except (OSError, threading.BrokenBarrierError):
            pass
        for s in (source, sink):
            s.close()

    def cut(self):
        """Closes the connections made so far, as a service closes idle ones."""
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed
        self.sockets = []

    def close(self):
        self.cut()
        self.listener.close()


def s3_requests(site):
    """The site's S3 requests so far, by operation (its metrics)."""
    counts = {}
    for line in requests.get(site.url + "/metrics").text.splitlines():
        if line.startswith('weft_s3_requests_total{op="'):
            counts[line.split('"')[1]] = float(line.rpartition(" ")[2])
    return counts


def s3_requests_reach(site, op, count):
    """s3_requests(site)[op] once it is `count` (a request is counted as its
    answer goes out, after the client may have it), or after 5 s."""
    deadline = time.monotonic() + 5
    while s3_requests(site).get(op, 0) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return s3_requests(site).get(op, 0)


class SamplerOrderTest(unittest.TestCase):
    """The order alone, over any sized dataset."""

    def test_order_is_the_gateways(self):
        for n, seed, epoch, world, rank, drop_last in ((24, 3, 1, 1, 0, False), (10, 0, 0, 3, 2, False),
                                                        (10, 7, 5, 3, 1, True), (1, 9, 2, 4, 3, False),
                                                        (1000, 2**64 - 1, 2**40, 7, 6, True), (5, 1, 0, 8, 7, True)):
            with self.subTest(n=n, seed=seed, epoch=epoch, world=world, rank=rank, drop_last=drop_last):
                s = WeftSampler(range(n), num_replicas=world, rank=rank, seed=seed, drop_last=drop_last)
                s.set_epoch(epoch)
                order = list(s)
                self.assertEqual(order, sampler_order(n, seed, epoch, world, rank, drop_last))
                self.assertEqual(len(s), len(order))
        # Each epoch is a new permutation; all ranks together cover it.
        a, b = (WeftSampler(range(50), seed=4) for _ in range(2))
        b.set_epoch(1)
        self.assertNotEqual(list(a), list(b))
        self.assertEqual(sorted(list(a)), list(range(50)))
        ranks = [list(WeftSampler(range(11), num_replicas=3, rank=r, seed=1)) for r in range(3)]
        self.assertEqual(sorted(sum(ranks, [])), sorted(list(range(11)) + sampler_order(11, 1, 0)[:1]))

    def test_without_shuffle_indices_are_in_order(self):
        self.assertEqual(list(WeftSampler(range(7), num_replicas=3, rank=1, shuffle=False)), [1, 4, 0])
        self.assertEqual(list(WeftSampler(range(7), num_replicas=3, rank=2, shuffle=False, drop_last=True)), [2, 5])

    def test_bad_samplers_raise(self):
        for kwargs, says in (({"num_replicas": 0}, "num_replicas must be 1"), ({"rank": 2, "num_replicas": 2}, "rank"),
                             ({"rank": -1}, "rank"), ({"seed": -1}, "seed"), ({"seed": 2**64}, "seed"),
                             ({"num_replicas": "2"}, "num_replicas must be an int")):
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(ValueError, says):
                    WeftSampler(range(4), **kwargs)
        with self.assertRaisesRegex(ValueError, "epoch"):
            WeftSampler(range(4)).set_epoch(-1)


class SpokeTest(unittest.TestCase):
    """One hub with the datasets; each test a fresh spoke (a hint one test
    leaves unread stays out of the next); the package on boto3."""

    transport = "boto3"
    missing_checkpoint = "404"  # boto3's download asks with a HEAD first

    def client_kwargs(self):
        return {"region_name": "us-east-1",
                "aws_access_key_id": self.spoke.credentials["access_key_id"],
                "aws_secret_access_key": self.spoke.credentials["secret_access_key"],
                "config": botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})}

    def assert_s3_error(self, make, code):
        with self.assertRaises(botocore.exceptions.ClientError) as e:
            make()
        self.assertEqual(e.exception.response["Error"]["Code"], code)

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        cls.data = {}

        def put(key, body):
            cls.data[key] = body
            hub_put(cls.hub, DATASETS + key, body)

        for name in ("b.bin", "B.bin", "a.bin", "\u00e9t\u00e9.bin", "z-1.bin", "Z_2.bin", "sub/deep.bin"):
            put("plain/" + name, os.urandom(1000))
        for d, files in (("header", 24), ("indexed", 16), ("indexed/sub", 8), ("workers", 16), ("spawned", 16),
                         ("early", 12)):
            for i in range(files):
                put("%s/%03d.bin" % (d, i), os.urandom(48 << 10))
        put("onlysub/x/y.bin", b"y")
        cls.flat_index = ["%03d.bin" % i for i in (11, 2, 15, 7, 0, 9, 4, 13, 6, 1)]
        cls.nested_index = ["sub/%03d.bin" % i for i in (5, 0, 7, 3, 6, 1)]
        for name, body in (("flat.txt", "\n".join(cls.flat_index[:4]) + "\r\n\n" + "\n".join(cls.flat_index[4:]) + "\n"),
                           ("nested.txt", "\n".join(cls.nested_index)),
                           ("missing.txt", "000.bin\nmissing.bin\n"),
                           ("absolute.txt", "000.bin\n/data/datasets/indexed/001.bin\n"),
                           ("dot.txt", "./000.bin\n"),
                           ("dotdot.txt", "000.bin\n\n../plain/a.bin\n"),
                           ("blank.txt", "\r\n\n")):
            hub_put(cls.hub, DATASETS + "indexes/" + name, body.encode())
        cls.link = cls.hub.emulator("--rtt-ms", "40")

    @classmethod
    def tearDownClass(cls):
        assert cls.hub.stop() == 0

    def setUp(self):
        self.spoke = Spoke(WEFT, self.hub, "http://" + self.link.address)
        self.session = rest(self.spoke)
        self.s3 = {"endpoint_url": "http://" + self.spoke.endpoints["s3"], "client_kwargs": self.client_kwargs(),
                   "transport": self.transport}

    def tearDown(self):
        self.session.close()
        self.assertEqual(self.spoke.stop(), 0)

    def misses(self):
        return spoke_mount(self.session, self.spoke)["cache"]["misses"]

    def assert_fetched_ahead(self, keys, since):
        want = since + sum(len(self.data[k]) for k in keys)
        if not fetched_ahead(self.session, self.spoke, self.hub, want):
            self.fail("not fetched ahead: %s" % spoke_mount(self.session, self.spoke))

    def assert_declared_and_fetched(self, ds, order, since):
        """Reads the first sample of `order` (indices of `ds`), declared when
        the sampler's fetched bytes were `since`: the rest are fetched
        ahead, then read as cache hits, with the right bytes."""
        keys = [ds.keys[i] for i in order]
        self.assertEqual(ds[order[0]], self.data[keys[0]])
        self.assert_fetched_ahead(keys[1:], since)
        misses = self.misses()
        self.assertEqual([ds[i] for i in order[1:]], [self.data[k] for k in keys[1:]])
        self.assertEqual(self.misses(), misses)

    def test_dataset_lists_and_reads(self):
        ds = S3Dataset(BUCKET, "plain", **self.s3)
        # The directory's own objects, by their UTF-8 bytes (not its subdirectory's).
        names = ["B.bin", "Z_2.bin", "a.bin", "b.bin", "z-1.bin", "\u00e9t\u00e9.bin"]
        self.assertEqual(ds.keys, ["plain/" + n for n in names])
        self.assertEqual(len(ds), 6)
        self.assertEqual([ds[i] for i in range(len(ds))], [self.data[k] for k in ds.keys])
        self.assertEqual(ds[-1], self.data["plain/\u00e9t\u00e9.bin"])
        with self.assertRaises(IndexError):
            ds[6]
        # A batch, as a DataLoader worker asks for it: four GETs under way
        # at once (the relay holds each until four are), in the batch's order.
        relay = HoldingRelay(self.spoke.endpoints["s3"], 4)
        try:
            relayed = S3Dataset(BUCKET, "plain", **dict(self.s3, endpoint_url="http://" + relay.address))
            relay.armed = True
            batch = [5, 0, 3, -1]
            self.assertEqual(relayed.__getitems__(batch), [self.data[ds.keys[i]] for i in batch])
            # Kept-alive connections the service closed meanwhile are made again.
            relay.armed = False
            relay.cut()
            self.assertEqual(relayed.__getitems__(batch), [self.data[ds.keys[i]] for i in batch])
        finally:
            relay.close()
        with self.assertRaises(IndexError):
            ds.__getitems__([0, 6])
        sized = S3Dataset(BUCKET, "plain/", transform=len, **self.s3)
        self.assertEqual(sized[0], 1000)
        indexed = S3Dataset(BUCKET, "indexed/", index_key="indexes/flat.txt", **self.s3)
        self.assertEqual(indexed.keys, ["indexed/" + n for n in self.flat_index])
        self.assertEqual(indexed[3], self.data["indexed/" + self.flat_index[3]])
        nested = S3Dataset(BUCKET, "indexed/", index_key="indexes/nested.txt", **self.s3)
        self.assertEqual(nested[0], self.data["indexed/sub/005.bin"])
        # Without a sampler no header is sent: reading prefetches nothing on its word.
        self.assertEqual(sampler_fetched_bytes(self.session, self.spoke), 0)

    def test_seeded_sampler_is_fetched_ahead(self):
        ds = S3Dataset(BUCKET, "header/", **self.s3)
        sampler = WeftSampler(ds, num_replicas=2, rank=1, seed=3, drop_last=True)
        since = sampler_fetched_bytes(self.session, self.spoke)
        sampler.set_epoch(1)
        order = list(sampler)
        self.assertEqual(order, sampler_order(24, 3, 1, 2, 1, True))
        self.assertEqual(ds.sampler_header(), "seed=3;epoch=1;world=2;rank=1;drop_last=1")
        self.assert_declared_and_fetched(ds, order, since)

    def test_index_file_samplers_are_fetched_ahead(self):
        ds = S3Dataset(BUCKET, "indexed/", index_key="indexes/flat.txt", **self.s3)
        since = sampler_fetched_bytes(self.session, self.spoke)
        order = list(WeftSampler(ds, num_replicas=2, rank=0, seed=5))
        self.assertEqual(order, sampler_order(len(self.flat_index), 5, 0, 2, 0))
        self.assertEqual(ds.sampler_header(), "seed=5;epoch=0;world=2;rank=0;drop_last=0;index=indexes/flat.txt")
        self.assert_declared_and_fetched(ds, order, since)
        # Files in a subdirectory: the order is declared by a LIST of the
        # dataset's prefix (a GET's header would name the subdirectory).
        nested = S3Dataset(BUCKET, "indexed/", index_key="indexes/nested.txt", **self.s3)
        lists = s3_requests(self.spoke).get("ListObjectsV2", 0)
        since = sampler_fetched_bytes(self.session, self.spoke)
        order = list(WeftSampler(nested, seed=8))
        self.assertEqual(order, sampler_order(len(self.nested_index), 8, 0))
        self.assert_declared_and_fetched(nested, order, since)
        self.assertEqual(s3_requests_reach(self.spoke, "ListObjectsV2", lists + 1), lists + 1)  # once, not per GET

    def test_set_epoch_declares_before_any_read(self):
        ds = S3Dataset(BUCKET, "early/", **self.s3)
        sampler = WeftSampler(ds, seed=21)
        since = sampler_fetched_bytes(self.session, self.spoke)
        lists = s3_requests(self.spoke).get("ListObjectsV2", 0)
        sampler.set_epoch(4)
        self.assertEqual(s3_requests_reach(self.spoke, "ListObjectsV2", lists + 1), lists + 1)
        order = list(sampler)  # the same order again: nothing more is sent
        keys = [ds.keys[i] for i in order]
        self.assert_fetched_ahead(keys, since)  # no GET yet
        misses = self.misses()
        self.assertEqual([ds[i] for i in order], [self.data[k] for k in keys])
        self.assertEqual(self.misses(), misses)
        self.assertEqual(s3_requests(self.spoke)["ListObjectsV2"], lists + 1)

    def answer(self, worker):
        """What a worker sends back; a failure, not a hang, if it died."""
        p, conn = worker
        if not conn.poll(20):
            self.fail("worker %s sent nothing (exit code %s)" % (p.name, p.exitcode))
        return conn.recv()

    def test_workers_read_with_the_header(self):
        datasets = [S3Dataset(BUCKET, d, **self.s3) for d in ("workers/", "spawned/")]
        workers = []
        try:
            # Started before any sampler exists, as persistent DataLoader
            # workers are before an epoch is set, one forked and one spawned;
            # the parent sends no GET.
            for method in ("fork", "spawn"):
                context = multiprocessing.get_context(method)
                mine, theirs = context.Pipe()
                p = context.Process(target=serve_samples, args=(datasets, theirs))
                p.start()
                workers.append((p, mine))
            # Each dataset's first sample read by another worker. (Two
            # datasets: the spoke fetches the next epoch's order ahead too,
            # so a second epoch of one would find its files partly cached.)
            for d, (seed, epoch) in enumerate(((11, 2), (12, 3))):
                ds = datasets[d]
                sampler = WeftSampler(ds, num_replicas=2, rank=0, seed=seed)
                since = sampler_fetched_bytes(self.session, self.spoke)
                sampler.set_epoch(epoch)
                order = list(sampler)
                self.assertEqual(order, sampler_order(16, seed, epoch, 2, 0))
                keys = [ds.keys[i] for i in order]
                workers[d][1].send((d, order[:1]))
                self.assertEqual(self.answer(workers[d]), [self.data[keys[0]]])
                self.assert_fetched_ahead(keys[1:], since)
                misses = self.misses()
                halves = (order[1::2], order[2::2])
                for (_, conn), half in zip(workers, halves):
                    conn.send((d, half))
                for worker, half in zip(workers, halves):
                    self.assertEqual(self.answer(worker), [self.data[ds.keys[i]] for i in half])
                self.assertEqual(self.misses(), misses)
        finally:
            for p, conn in workers:
                if p.is_alive():
                    conn.send(None)
                p.join(10)
                self.assertEqual(p.exitcode, 0)

    def test_checkpoints_round_trip(self):
        big, huge = os.urandom(12 << 20), os.urandom(20 << 20)
        before = s3_requests(self.spoke)
        self.assertEqual(save_checkpoint(big, BUCKET, "checkpoints/run/step-100", **self.s3), len(big))
        self.assertEqual(save_checkpoint(bytearray(b"small"), BUCKET, "checkpoints/run/small", **self.s3), 5)
        # Past the largest single PUT (lowered here from S3's 5 GiB): in parts.
        with mock.patch.object(weft_data._s3, "SINGLE_PUT_MAX", 16 << 20):
            self.assertEqual(save_checkpoint(huge, BUCKET, "checkpoints/run/step-200", **self.s3), len(huge))
        # Two in one PUT each, the third in three 8 MiB parts (the last one 4 MiB).
        expected = {"CreateMultipartUpload": 1, "UploadPart": 3, "CompleteMultipartUpload": 1, "PutObject": 2}
        for op, count in expected.items():
            s3_requests_reach(self.spoke, op, before.get(op, 0) + count)
        after = s3_requests(self.spoke)
        self.assertEqual({op: after[op] - before.get(op, 0) for op in expected}, expected)
        for key, body in (("step-100", big), ("small", b"small"), ("step-200", huge)):
            self.assertEqual(load_checkpoint(BUCKET, "checkpoints/run/" + key, raw=True, **self.s3), body)
        # Committed to the hub.
        with rest(self.hub) as s:
            for key, body in (("step-100", big), ("step-200", huge)):
                r = s.get(self.hub.url + "/api/v1/files/" + DATASETS + "checkpoints/run/" + key)
                self.assertEqual((r.status_code, r.content == body), (200, True))

    def test_checkpoints_saved_in_the_background(self):
        first, second = os.urandom(6 << 20), bytearray(os.urandom(1 << 20))
        with CheckpointSaver(**self.s3) as saver:
            done = saver.save(first, BUCKET, "checkpoints/bg/first")
            # A buffer the caller changes once save() returns: what was there then is saved.
            later = saver.save(second, BUCKET, "checkpoints/bg/second")
            self.assertTrue(done.done())  # the second save waited for the first
            expected = bytes(second)
            second[:4] = b"XXXX"
            # The upload runs in a process of its own (forked: the loop's
            # interpreter lock stays the loop's), yielding the CPU to the loop.
            niceness = lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())  # noqa: E731
            with mock.patch.object(weft_data.checkpoint, "_upload", lambda *args: (os.getpid(), niceness())):
                pid, nice = saver.save(b"x", BUCKET, "checkpoints/bg/unused").result()
            self.assertNotEqual(pid, os.getpid())
            self.assertEqual(nice, min(19, niceness() + 10))
        self.assertEqual((done.result(), later.result()), (len(first), len(expected)))
        self.assertEqual(load_checkpoint(BUCKET, "checkpoints/bg/first", raw=True, **self.s3), first)
        self.assertEqual(load_checkpoint(BUCKET, "checkpoints/bg/second", raw=True, **self.s3), expected)
        # A failed save is raised by the next save(), and by close() when it is the last.
        saver = CheckpointSaver(**self.s3)
        saver.save(b"lost", "no-such-bucket", "checkpoints/bg/lost")
        self.assert_s3_error(lambda: saver.save(b"x", BUCKET, "checkpoints/bg/next"), "NoSuchBucket")
        saver.save(b"lost", "no-such-bucket", "checkpoints/bg/lost")
        self.assert_s3_error(saver.close, "NoSuchBucket")

    @NEEDS_TORCH
    def test_torch_checkpoints_and_data_loader(self):
        state = {"step": 3, "weights": torch.arange(12, dtype=torch.float32).reshape(3, 4)}
        self.assertGreater(save_checkpoint(state, BUCKET, "checkpoints/run/model.pt", **self.s3), 0)
        loaded = load_checkpoint(BUCKET, "checkpoints/run/model.pt", map_location="cpu", **self.s3)
        self.assertEqual(loaded["step"], 3)
        self.assertTrue(torch.equal(loaded["weights"], state["weights"]))
        ds = S3Dataset(BUCKET, "workers/", transform=lambda b: torch.tensor(len(b)), **self.s3)
        sampler = WeftSampler(ds, seed=2)
        loader = torch.utils.data.DataLoader(ds, batch_size=4, sampler=sampler, num_workers=2,
                                             persistent_workers=True)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            self.assertEqual(torch.cat(list(loader)).tolist(), [48 << 10] * 16)

    def test_bad_input_raises(self):
        for prefix in ("nothing/", "onlysub/"):
            with self.subTest(prefix=prefix):
                with self.assertRaisesRegex(ValueError, "no objects directly below s3://datasets/" + prefix):
                    S3Dataset(BUCKET, prefix, **self.s3)
        with self.assertRaisesRegex(ValueError, "parallel_gets must be a positive int, not 0"):
            S3Dataset(BUCKET, "plain/", parallel_gets=0, **self.s3)
        for index, says in (("absolute.txt", "line 2: an absolute path"), ("dot.txt", "line 1: '.' and '..'"),
                            ("dotdot.txt", "line 3: '.' and '..'"), ("blank.txt", "lists no files")):
            with self.subTest(index=index):
                with self.assertRaisesRegex(ValueError, "index file indexes/%s %s" % (index, says)):
                    S3Dataset(BUCKET, "indexed/", index_key="indexes/" + index, **self.s3)
        for make, code in ((lambda: S3Dataset("no-such-bucket", "plain/", **self.s3), "NoSuchBucket"),
                           (lambda: S3Dataset(BUCKET, "indexed/", index_key="indexes/none.txt", **self.s3),
                            "NoSuchKey"),
                           (lambda: S3Dataset(BUCKET, "indexed/", index_key="indexes/missing.txt", **self.s3)[1],
                            "NoSuchKey"),
                           # In a batch, the error of the first sample that has one:
                           (lambda: S3Dataset(BUCKET, "indexed/", index_key="indexes/missing.txt",
                                              **self.s3).__getitems__([0, 1, 0]), "NoSuchKey"),
                           (lambda: load_checkpoint(BUCKET, "checkpoints/none", **self.s3), self.missing_checkpoint)):
            self.assert_s3_error(make, code)
        if torch is None:
            with self.assertRaisesRegex(TypeError, "not bytes-like"):
                save_checkpoint({"step": 1}, BUCKET, "checkpoints/run/dict", **self.s3)


class HttpSpokeTest(SpokeTest):
    """The same with the package's http transport (what a machine without
    boto3 uses), plus anonymous reads and a process where boto3 is absent."""

    transport = "http"
    missing_checkpoint = "NoSuchKey"

    def client_kwargs(self):
        return {"region_name": "us-east-1", "aws_access_key_id": self.spoke.credentials["access_key_id"],
                "aws_secret_access_key": self.spoke.credentials["secret_access_key"]}

    def assert_s3_error(self, make, code):
        with self.assertRaises(S3Error) as e:
            make()
        self.assertEqual(e.exception.code, code)

    def test_public_read_export_is_read_anonymously(self):
        anonymous = dict(self.s3, client_kwargs={})
        self.assert_s3_error(lambda: S3Dataset(BUCKET, "plain/", **anonymous), "AccessDenied")
        exports = self.session.get(self.spoke.url + "/api/v1/exports").json()["exports"]
        export = next(e for e in exports if e.pop("name") == "data")
        r = self.session.put(self.spoke.url + "/api/v1/exports/data", json=dict(export, public_read=True))
        self.assertEqual(r.status_code, 200, r.text)
        ds = S3Dataset(BUCKET, "header/", **anonymous)
        since = sampler_fetched_bytes(self.session, self.spoke)
        order = list(WeftSampler(ds, seed=4))
        self.assert_declared_and_fetched(ds, order, since)
        # Reading is all a public-read export allows.
        self.assert_s3_error(lambda: save_checkpoint(b"x", BUCKET, "checkpoints/anonymous", **anonymous),
                             "AccessDenied")

    def test_default_transport(self):
        """transport=None: http.client where the arguments allow it, signed
        with boto3's credential chain where they give no credentials (here
        a shared credentials file, which only boto3 reads); boto3 where they
        hold its config."""
        default = dict(self.s3, transport=None)
        ds = S3Dataset(BUCKET, "plain/", **default)
        self.assertIsInstance(ds._s3(), weft_data._s3.HttpStore)
        self.assertEqual(ds[0], self.data[ds.keys[0]])
        with_config = dict(default["client_kwargs"], config=botocore.config.Config(s3={"addressing_style": "path"}))
        self.assertIsInstance(S3Dataset(BUCKET, "plain/", **dict(default, client_kwargs=with_config))._s3(),
                              weft_data._s3.Boto3Store)
        shared = self.spoke.tmp / "aws-credentials"
        environment = {name: value for name, value in os.environ.items()
                       if name not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")}
        environment.update(AWS_SHARED_CREDENTIALS_FILE=str(shared), AWS_CONFIG_FILE=os.devnull,
                           AWS_EC2_METADATA_DISABLED="true")
        no_credentials = dict(default, client_kwargs={"region_name": "us-east-1"})
        for secret, error in ((self.spoke.credentials["secret_access_key"], None), ("wrong", "SignatureDoesNotMatch")):
            shared.write_text("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (
                self.spoke.credentials["access_key_id"], secret))
            # A new session: one per process otherwise, holding what it found.
            with mock.patch.dict(os.environ, environment, clear=True), mock.patch.object(weft_data._s3, "_session", None):
                if error:
                    self.assert_s3_error(lambda: S3Dataset(BUCKET, "plain/", **no_credentials), error)
                else:
                    ds = S3Dataset(BUCKET, "plain/", **no_credentials)
                    self.assertEqual(ds[1], self.data[ds.keys[1]])

    def test_works_where_boto3_does_not_import(self):
        script = """
import sys
class NoBoto3:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("boto3", "botocore"):
            raise ImportError("no " + name)
sys.meta_path.insert(0, NoBoto3())
sys.path.insert(0, sys.argv[1])
import weft_data
kwargs = dict(endpoint_url=sys.argv[2], client_kwargs=dict(region_name="us-east-1", aws_access_key_id=sys.argv[3],
              aws_secret_access_key=sys.argv[4]))
ds = weft_data.S3Dataset("datasets", "plain/", **kwargs)
body = bytes(range(256)) * 40000
weft_data.save_checkpoint(body, "datasets", "checkpoints/noboto3", **kwargs)
assert weft_data.load_checkpoint("datasets", "checkpoints/noboto3", raw=True, **kwargs) == body
sys.stdout.buffer.write(ds[0])
"""
        import subprocess
        done = subprocess.run([sys.executable, "-c", script, str(HERE.parent.parent / "clients" / "python"),
                               self.s3["endpoint_url"], self.spoke.credentials["access_key_id"],
                               self.spoke.credentials["secret_access_key"]], capture_output=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.assertEqual(done.stdout, self.data["plain/B.bin"])

    def test_bad_transport_arguments_raise(self):
        with self.assertRaisesRegex(ValueError, "transport must be one of boto3, http"):
            S3Dataset(BUCKET, "plain/", **dict(self.s3, transport="curl"))
        with self.assertRaisesRegex(TypeError, "the http transport takes client_kwargs .*, not config"):
            S3Dataset(BUCKET, "plain/", **dict(self.s3, client_kwargs=dict(self.s3["client_kwargs"], config=None)))
        with self.assertRaisesRegex(ValueError, "both aws_access_key_id and aws_secret_access_key, or neither"):
            S3Dataset(BUCKET, "plain/", **dict(self.s3, client_kwargs={"aws_access_key_id": "x"}))
        with self.assertRaisesRegex(ValueError, "endpoint_url must be"):
            S3Dataset(BUCKET, "plain/", **dict(self.s3, endpoint_url="ftp://x"))
        wrong = dict(self.s3["client_kwargs"], aws_secret_access_key="wrong")
        self.assert_s3_error(lambda: S3Dataset(BUCKET, "plain/", **dict(self.s3, client_kwargs=wrong)),
                             "SignatureDoesNotMatch")


def configure(args):
    global WEFT
    WEFT = args.weft


if __name__ == "__main__":
    run_tests(160, configure)
