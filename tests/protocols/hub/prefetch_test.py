#!/usr/bin/env python3
"""The spoke's learning prefetcher (backend/hub/SPOKES.md, "Prefetching"),
end to end: a hub and a spoke through the WAN emulator. A job declares the
order it will read a dataset in — a seeded sampler over REST, an explicit
list over REST, an index file (on the mount itself, so read from the hub)
in its order or shuffled by a seeded sampler, or the x-weft-sampler header
of an S3 GET (a seeded sampler, an index file or both; sent with every GET
as loaders do) — and the spoke fetches those files before they are read: the
reads afterwards find every chunk in the spoke's cache and send the hub no
chunk request, while files outside a list are not fetched. Bad hints and
bad index files get clear errors. A mount with the prefetcher off refuses
hints; the experts' figures are on the REST view and in /metrics.

    prefetch_test.py --weft PATH [unittest arguments]
"""

import os
import sys
import unittest

import botocore.exceptions
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubsite import (Site, Spoke, fetched_ahead, hub_put, rest, run_tests, sampler_fetched_bytes,  # noqa: E402
                     sampler_order, spoke_mount)

WEFT = None
DATASETS = "data/datasets/"
FILES = 24


class PrefetchTest(unittest.TestCase):
    """One hub; each test a fresh spoke (what one job's abandoned hint did
    to the sampler expert's record stays out of the next) reading its own
    dataset directory."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT)
        cls.data = {}
        for d in ("seeded", "listed", "header", "indexed"):
            for i in range(FILES):
                body = os.urandom(48 << 10)
                cls.data["%s/%03d.bin" % (d, i)] = body
                hub_put(cls.hub, DATASETS + "%s/%03d.bin" % (d, i), body)
        # Index files as data loaders keep them (a blank line and a CRLF
        # line end included), and bad ones.
        cls.index_order = ["%03d.bin" % i for i in (19, 4, 13, 0, 22, 7)]
        cls.index_subset = ["%03d.bin" % i for i in (3, 21, 9, 16, 1, 12, 18, 6, 10, 15)]
        for name, body in (("order.txt", "\n".join(cls.index_order[:3]) + "\r\n\n" + "\n".join(cls.index_order[3:]) + "\n"),
                           ("subset.txt", "\n".join(cls.index_subset)),
                           ("blank.txt", "\n\n"),
                           ("dotdot.txt", "001.bin\n../seeded/000.bin\n"),
                           ("absolute.txt", "/data/datasets/indexed/001.bin\n"),
                           ("missing.txt", "001.bin\nmissing.bin\n")):
            hub_put(cls.hub, DATASETS + "indexes/" + name, body.encode())
        hub_put(cls.hub, DATASETS + "indexes/huge.txt", b"001.bin\n" * ((16 << 20) // 8 + 1))
        cls.link = cls.hub.emulator("--rtt-ms", "40")

    @classmethod
    def tearDownClass(cls):
        assert cls.hub.stop() == 0

    def setUp(self):
        self.spoke = Spoke(WEFT, self.hub, "http://" + self.link.address)
        self.s3 = self.spoke.s3()
        self.session = rest(self.spoke)

    def tearDown(self):
        self.session.close()
        self.s3.close()
        self.assertEqual(self.spoke.stop(), 0)

    def mount(self):
        return spoke_mount(self.session, self.spoke)

    def hint(self, body):
        return self.session.post(self.spoke.url + "/api/v1/hints", json=body)

    def sampler_bytes(self):
        return sampler_fetched_bytes(self.session, self.spoke)

    def wait_cached(self, keys, since):
        """Until the sampler expert has had `keys` fetched (`since`: its
        figure before the hint) and the hub has answered them."""
        if not fetched_ahead(self.session, self.spoke, self.hub, since + sum(len(self.data[k]) for k in keys)):
            self.fail("not fetched ahead: %s" % self.mount())

    def read_all_hit(self, keys):
        """Reads `keys` over S3: right bytes, every chunk found in the
        spoke's cache (the hub may be sent requests meanwhile: what the
        prefetcher fetches further ahead)."""
        misses = self.mount()["cache"]["misses"]
        for k in keys:
            self.assertEqual(self.s3.get_object(Bucket="datasets", Key=k)["Body"].read(), self.data[k])
        self.assertEqual(self.mount()["cache"]["misses"], misses)

    def assert_only_hinted_fetched(self, hint, keys, unlisted):
        """Registers `hint`: `keys` are fetched ahead and read as hits, the
        file `unlisted` (which the hint leaves out) was not fetched."""
        since = self.sampler_bytes()
        r = self.hint(hint)
        self.assertEqual(r.status_code, 204, r.text)
        self.wait_cached(keys, since)
        self.read_all_hit(keys)
        misses = self.mount()["cache"]["misses"]
        self.assertEqual(self.s3.get_object(Bucket="datasets", Key=unlisted)["Body"].read(), self.data[unlisted])
        self.assertGreater(self.mount()["cache"]["misses"], misses)

    def test_seeded_sampler_over_rest_is_fetched_ahead_in_order(self):
        since = self.sampler_bytes()
        r = self.hint({"path": DATASETS + "seeded", "seed": 7, "epoch": 0, "world_size": 2, "rank": 1})
        self.assertEqual(r.status_code, 204, r.text)
        keys = ["seeded/%03d.bin" % i for i in sampler_order(FILES, 7, 0, 2, 1)]
        self.wait_cached(keys, since)
        self.read_all_hit(keys)
        # The same hint again changes nothing; the sampler expert is trusted.
        self.assertEqual(self.hint({"path": DATASETS + "seeded", "seed": 7, "world_size": 2, "rank": 1}).status_code, 204)
        experts = {e["name"]: e for e in self.mount()["prefetch"]["experts"]}
        self.assertGreater(experts["sampler"]["used"], 0, experts)
        metrics = requests.get(self.spoke.url + "/metrics").text
        self.assertIn('weft_spoke_prefetch_weight{expert="sampler",mount="/datasets"}', metrics)
        self.assertIn('weft_spoke_prefetch_fetched_bytes_total{expert="sampler",mount="/datasets"}', metrics)

    def test_listed_order_over_rest_fetches_only_those_files(self):
        names = ["%03d.bin" % i for i in (5, 17, 2, 11, 8)]
        self.assert_only_hinted_fetched({"path": DATASETS + "listed", "order": names},
                                        ["listed/" + n for n in names], "listed/000.bin")

    def test_index_file_order_is_fetched_ahead(self):
        self.assert_only_hinted_fetched({"path": DATASETS + "indexed", "index": DATASETS + "indexes/order.txt"},
                                        ["indexed/" + n for n in self.index_order], "indexed/001.bin")

    def test_seeded_sampler_over_an_index_file_shuffles_its_list(self):
        # The sampler numbers the index file's lines, not the directory's files.
        keys = ["indexed/" + self.index_subset[i] for i in sampler_order(len(self.index_subset), 5, 0, 2, 0)]
        self.assert_only_hinted_fetched({"path": DATASETS + "indexed", "index": DATASETS + "indexes/subset.txt",
                                         "seed": 5, "world_size": 2, "rank": 0}, keys, "indexed/002.bin")

    def get_declaring(self, key, sampler):
        """GETs `key` over S3 with the x-weft-sampler header `sampler`."""
        def add_header(request, **kwargs):
            request.headers["x-weft-sampler"] = sampler

        self.s3.meta.events.register("before-sign.s3.GetObject", add_header)
        try:
            return self.s3.get_object(Bucket="datasets", Key=key)["Body"].read()
        finally:
            self.s3.meta.events.unregister("before-sign.s3.GetObject", add_header)

    def test_s3_header_declares_the_sampler(self):
        order = ["header/%03d.bin" % i for i in sampler_order(FILES, 3, 1)]
        since = self.sampler_bytes()
        self.assertEqual(self.get_declaring(order[0], "seed=3;epoch=1"), self.data[order[0]])
        self.wait_cached(order[1:], since)
        self.read_all_hit(order[1:])

    def test_s3_header_names_an_index_file(self):
        keys = ["indexed/" + n for n in self.index_order]
        since = self.sampler_bytes()
        self.assertEqual(self.get_declaring(keys[0], "index=indexes/order.txt"), self.data[keys[0]])
        self.wait_cached(keys[1:], since)
        # The same header with every GET, as a loader sends it: all hits.
        misses = self.mount()["cache"]["misses"]
        for k in keys[1:]:
            self.assertEqual(self.get_declaring(k, "index=indexes/order.txt"), self.data[k])
        self.assertEqual(self.mount()["cache"]["misses"], misses)
        # With a seed, the sampler shuffles the index file's list.
        subset = ["indexed/" + self.index_subset[i] for i in sampler_order(len(self.index_subset), 5, 0, 2, 1)]
        since = self.sampler_bytes()
        self.assertEqual(self.get_declaring(subset[0], "seed=5;world=2;rank=1;index=indexes%2Fsubset.txt"),
                         self.data[subset[0]])
        self.wait_cached(subset[1:], since)
        self.read_all_hit(subset[1:])

    def test_bad_hints_are_refused(self):
        for body, status in (({"path": DATASETS + "seeded"}, 400),
                             ({"path": DATASETS + "seeded", "seed": 1, "order": ["000.bin"]}, 400),
                             ({"path": DATASETS + "seeded", "seed": 1, "world_size": 2, "rank": 2}, 400),
                             ({"path": DATASETS + "listed", "order": ["missing.bin"]}, 404),
                             ({"path": "data/not-a-spoke", "seed": 1}, 404)):
            with self.subTest(body=body):
                r = self.hint(body)
                self.assertEqual(r.status_code, status, r.text)
        indexes = DATASETS + "indexes/"
        for body, status, code, says in (
                ({"index": indexes + "none.txt"}, 404, "not_found", "none.txt"),
                ({"index": indexes + "blank.txt"}, 400, "invalid_json", "lists no files"),
                ({"index": indexes + "dotdot.txt"}, 400, "invalid_json", "line 2: '.' and '..'"),
                ({"index": indexes + "absolute.txt"}, 400, "invalid_json", "line 1: an absolute path"),
                ({"index": indexes + "huge.txt"}, 400, "invalid_json", "more than the 16 MiB"),
                ({"index": indexes + "missing.txt"}, 404, "not_found", "missing.txt names a file"),
                ({"index": DATASETS + "indexed"}, 400, "invalid_json", "not a file"),
                ({"index": indexes + "order.txt", "order": ["000.bin"]}, 400, "invalid_json", "expected one of")):
            with self.subTest(body=body):
                r = self.hint({"path": DATASETS + "indexed", **body})
                self.assertEqual((r.status_code, r.json()["error"]["code"]), (status, code), r.text)
                self.assertIn(says, r.json()["error"]["message"])

        for sampler, code, says in (("seed=x", "InvalidArgument", "seed is not"),
                                    ("index=indexes/dotdot.txt", "InvalidArgument", "line 2: '.' and '..'"),
                                    ("index=indexes/missing.txt", "InvalidArgument", "names a file that"),
                                    ("index=indexes/none.txt", "NoSuchKey", "no index file indexes/none.txt")):
            with self.subTest(sampler=sampler):
                with self.assertRaises(botocore.exceptions.ClientError) as e:
                    self.get_declaring("indexed/000.bin", sampler)
                self.assertEqual(e.exception.response["Error"]["Code"], code)
                self.assertIn(says, e.exception.response["Error"]["Message"])


class PrefetchOffTest(unittest.TestCase):
    def test_a_mount_without_the_prefetcher_refuses_hints(self):
        hub = Site(WEFT)
        spoke = None
        try:
            hub_put(hub, DATASETS + "d/a.bin", b"a")
            spoke = Spoke(WEFT, hub, "http://" + hub.rest, prefetch=False)
            with rest(spoke) as s:
                r = s.post(spoke.url + "/api/v1/hints", json={"path": DATASETS + "d", "seed": 1})
                self.assertEqual(r.status_code, 409, r.text)
                self.assertEqual(r.json()["error"]["code"], "prefetch_off")
                m = s.get(spoke.url + "/api/v1/spokes").json()["spokes"][0]
                self.assertEqual(m["prefetch"], {"enabled": False, "experts": []})
        finally:
            for site in (spoke, hub):
                if site:
                    self.assertEqual(site.stop(), 0)


def configure(args):
    global WEFT
    WEFT = args.weft


if __name__ == "__main__":
    run_tests(150, configure)
