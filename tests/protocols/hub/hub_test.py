#!/usr/bin/env python3
"""The hub protocol server (backend/hub/PROTOCOL.md) against a real
`weft serve`: metadata, chunks (zstd unless incompressible, SHA-256 named),
commits with compare-and-swap, namespace changes, the WebSocket change feed
with resume, residency refusals and their audit records, authentication.
Drives it with python3-requests and python3-websocket (Debian) and an
independent reading of the frame format (frames.py).

    hub_test.py --weft PATH [unittest arguments]
"""

import hashlib
import json
import os
import random
import sys
import time
import unittest

import requests
import websocket

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames  # noqa: E402
from hubsite import Site, run_tests  # noqa: E402

WEFT = None


class HubCase(unittest.TestCase):
    region = "us-east-1"

    @classmethod
    def setUpClass(cls):
        cls.hub = Site(WEFT, residency=[("data/eu", ["eu-west-1"])])
        cls.base = "http://%s/hub/v1/" % cls.hub.rest
        cls.api = "http://%s/api/v1" % cls.hub.rest

    @classmethod
    def tearDownClass(cls):
        code = cls.hub.stop()
        assert code == 0, "weft exited with %r" % code

    def session(self, region=None):
        s = requests.Session()
        s.auth = self.hub.admin
        s.headers["Weft-Region"] = region or self.region
        self.addCleanup(s.close)
        return s

    def setUp(self):
        self.s = self.session()
        self.rest = requests.Session()
        self.rest.auth = self.hub.admin
        self.addCleanup(self.rest.close)

    def put(self, path, body):
        r = self.rest.put(self.api + "/files/" + path, data=body, params={"mkdirs": "true"})
        self.assertIn(r.status_code, (200, 201), r.text)

    def get(self, path):
        r = self.rest.get(self.api + "/files/" + path)
        self.assertEqual(r.status_code, 200, r.text)
        return r.content

    def call(self, method, name, status=200, **kw):
        r = self.s.request(method, self.base + name, **kw)
        self.assertEqual(r.status_code, status, r.text)
        return r

    def error(self, r, status, code):
        self.assertEqual(r.status_code, status, r.text)
        self.assertEqual(r.json()["error"]["code"], code, r.text)

    def fetch(self, path, manifest, batch=16):
        """The file's content, fetched chunk by chunk through `chunks`."""
        out = bytearray()
        wire = 0
        chunks = manifest["chunks"]
        for i in range(0, len(chunks), batch):
            part = chunks[i:i + batch]
            body = b"".join(bytes.fromhex(c["sha256"]) for c in part)
            r = self.call("POST", "chunks", params={"path": path, "version": manifest["version"]}, data=body)
            self.assertEqual(r.headers["Content-Type"], "application/octet-stream")
            got = frames.parse(r.content)
            self.assertEqual([g[0].hex() for g in got], [c["sha256"] for c in part])
            for _, _, codec, chunk, payload in got:
                self.assertEqual(codec, 2)  # the body's one zstd stream
                out += chunk
                wire += payload
        return bytes(out), wire


class MetadataAndDataTest(HubCase):
    def test_attr_list_manifest_and_chunks(self):
        text = b"".join(b"line %08d of a very compressible text file\n" % i for i in range(40000))
        noise = os.urandom(600 * 1024)
        self.put("data/ds/text.txt", text)
        self.put("data/ds/noise.bin", noise)

        a = self.call("GET", "attr", params={"path": "data/ds/text.txt"}).json()
        self.assertEqual(a["attr"]["type"], "file")
        self.assertEqual(a["attr"]["size"], len(text))
        self.assertGreaterEqual(a["attr"]["version"], 1)
        self.assertGreater(a["last_change"], 0)
        # The inode validates: another inode is stale.
        self.call("GET", "attr", params={"path": "data/ds/text.txt", "ino": a["attr"]["ino"]})
        self.error(self.s.get(self.base + "attr", params={"path": "data/ds/text.txt", "ino": 999999}), 409, "stale")
        self.error(self.s.get(self.base + "attr", params={"path": "data/ds/none"}), 404, "not_found")

        listing = self.call("GET", "list", params={"path": "data/ds"}).json()
        self.assertTrue(listing["eof"])
        self.assertEqual(sorted(e["name"] for e in listing["entries"]), ["noise.bin", "text.txt"])
        # Paging with the cookie.
        first = self.call("GET", "list", params={"path": "data/ds", "limit": 1}).json()
        self.assertEqual(len(first["entries"]), 1)
        rest = self.call("GET", "list", params={"path": "data/ds", "cookie": first["cookie"]}).json()
        self.assertEqual(len(rest["entries"]), 1)
        self.assertNotEqual(first["entries"][0]["name"], rest["entries"][0]["name"])

        for path, content in (("data/ds/text.txt", text), ("data/ds/noise.bin", noise)):
            m = self.call("GET", "manifest", params={"path": path}).json()
            self.assertEqual(m["size"], len(content))
            self.assertEqual(sum(c["length"] for c in m["chunks"]), len(content))
            got, wire = self.fetch(path, m)
            self.assertEqual(got, content)
            if content is text:  # compressed
                self.assertLess(wire, len(text) / 10)
            else:  # as it is, in zstd's raw blocks (3 bytes of header in 128 KiB) after the stream's header
                self.assertLessEqual(wire, len(noise) + 8 * len(m["chunks"]) + 32)
        # A digest of another version or file is refused.
        bogus = hashlib.sha256(b"not in it").digest()
        r = self.s.post(self.base + "chunks", params={"path": "data/ds/text.txt", "version": 1}, data=bogus)
        self.error(r, 404, "not_found")
        r = self.s.post(self.base + "chunks", params={"path": "data/ds/text.txt", "version": 1}, data=b"short")
        self.error(r, 400, "bad_request")

    def test_have(self):
        content = os.urandom(300 * 1024)
        self.put("data/have/f", content)
        m = self.call("GET", "manifest", params={"path": "data/have/f"}).json()
        unknown = hashlib.sha256(b"nobody has this").digest()
        body = b"".join(bytes.fromhex(c["sha256"]) for c in m["chunks"]) + unknown
        r = self.call("POST", "have", data=body).json()
        self.assertEqual(r["missing"], [unknown.hex()])

    def test_namespace_changes_are_decided_at_the_hub(self):
        self.call("POST", "mkdir", params={"path": "data/tree"})
        self.error(self.s.post(self.base + "mkdir", params={"path": "data/tree"}), 409, "already_exists")
        made = self.call("POST", "create", params={"path": "data/tree/a", "mode": 0o600}).json()
        self.assertEqual(made["attr"]["mode"], 0o600)
        self.error(self.s.post(self.base + "create", params={"path": "data/tree/a"}), 409, "already_exists")
        moved = self.call("POST", "rename", params={"from": "data/tree/a", "to": "data/tree/b"}).json()
        self.assertEqual(moved["attr"]["ino"], made["attr"]["ino"])
        st = self.rest.get(self.api + "/stat/data/tree/b")
        self.assertEqual(st.status_code, 200, st.text)
        self.assertEqual(self.rest.get(self.api + "/stat/data/tree/a").status_code, 404)
        changed = self.call("POST", "setattr", params={"path": "data/tree/b", "mode": 0o640, "size": 10}).json()
        self.assertEqual(changed["attr"]["mode"], 0o640)
        self.assertEqual(changed["attr"]["size"], 10)
        link = self.call("POST", "symlink", params={"path": "data/tree/l", "target": "b"}).json()
        self.assertEqual(link["attr"]["type"], "symlink")
        self.assertEqual(self.call("GET", "readlink", params={"path": "data/tree/l"}).json()["target"], "b")
        self.error(self.s.get(self.base + "readlink", params={"path": "data/tree/b"}), 400, "invalid_argument")
        self.call("POST", "remove", params={"path": "data/tree/l"})
        self.call("POST", "remove", params={"path": "data/tree/b"})
        self.error(self.s.post(self.base + "remove", params={"path": "data/tree/b"}), 404, "not_found")
        self.call("POST", "rmdir", params={"path": "data/tree"})
        self.error(self.s.post(self.base + "rmdir", params={"path": "data"}), 409, "export_root")


class BatchedCallsTest(HubCase):
    """manifests and dir_chunks: many files of one directory per request."""

    def test_manifests_answer_each_name(self):
        noise = os.urandom(300 * 1024)
        text = b"".join(b"row %06d of a compressible file\n" % i for i in range(3000))
        self.put("data/bd/a.bin", noise)
        self.put("data/bd/b.txt", text)
        self.put("data/bd/sub/c", b"below")
        self.put("data/eu/secret.bin", b"stays in eu")
        r = self.call("POST", "manifests", params={"path": "data/bd"},
                      json={"names": ["a.bin", "b.txt", "sub", "missing"]}).json()
        self.assertGreater(r["last_change"], 0)
        self.assertEqual([e["name"] for e in r["entries"]], ["a.bin", "b.txt", "sub", "missing"])
        for e, content, path in ((r["entries"][0], noise, "data/bd/a.bin"), (r["entries"][1], text, "data/bd/b.txt")):
            one = self.call("GET", "manifest", params={"path": path}).json()
            self.assertEqual(e["manifest"]["chunks"], one["chunks"])
            self.assertEqual((e["manifest"]["size"], e["manifest"]["version"]), (len(content), one["version"]))
            self.assertEqual(e["attr"]["ino"], one["attr"]["ino"])
            self.assertNotIn("error", e)
        self.assertEqual(r["entries"][2]["error"]["code"], "not_a_file")
        self.assertEqual(r["entries"][3]["error"]["code"], "not_found")
        # A name the region may not have is refused on its own; the
        # directory itself refused as a whole.
        r = self.call("POST", "manifests", params={"path": "data"}, json={"names": ["eu", "bd"]}).json()
        self.assertEqual(r["entries"][0]["error"]["code"], "residency_denied")
        self.assertEqual(r["entries"][1]["error"]["code"], "not_a_file")
        self.error(self.s.post(self.base + "manifests", params={"path": "data/eu"}, json={"names": ["secret.bin"]}),
                   403, "residency_denied")
        # Malformed requests.
        for body in ({"names": []}, {"names": ["x"] * 1001}, {"names": [1]}, {"other": []}, ["a.bin"]):
            self.error(self.s.post(self.base + "manifests", params={"path": "data/bd"}, json=body), 400, "bad_request")
        self.error(self.s.post(self.base + "manifests", params={"path": "data/bd"}, data=b"not json"), 400, "bad_request")
        for name in ("..", "a/b", ""):
            self.error(self.s.post(self.base + "manifests", params={"path": "data/bd"}, json={"names": [name]}),
                       400, "bad_path")
        self.error(self.s.post(self.base + "manifests", params={"path": "data/bd/a.bin"}, json={"names": ["x"]}),
                   409, "not_a_directory")

    def test_dir_chunks_spans_files(self):
        noise = os.urandom(200 * 1024)
        text = b"".join(b"line %06d, compressible\n" % i for i in range(4000))
        self.put("data/dc/n.bin", noise)
        self.put("data/dc/t.txt", text)
        self.put("data/eu/e.bin", b"stays in eu")
        ms = self.call("POST", "manifests", params={"path": "data/dc"}, json={"names": ["n.bin", "t.txt"]}).json()
        files = [{"name": e["name"], "version": e["manifest"]["version"],
                  "chunks": [c["sha256"] for c in e["manifest"]["chunks"]]} for e in ms["entries"]]
        r = self.call("POST", "dir_chunks", params={"path": "data/dc"}, json={"files": files})
        self.assertEqual(r.headers["Content-Type"], "application/octet-stream")
        got = frames.parse(r.content)
        self.assertEqual([g[0].hex() for g in got], files[0]["chunks"] + files[1]["chunks"])
        self.assertEqual(b"".join(g[3] for g in got), noise + text)
        self.assertEqual({g[2] for g in got}, {2})  # one zstd stream for the body
        text_frames = got[len(files[0]["chunks"]):]
        self.assertLess(sum(g[4] for g in text_frames), len(text) / 10)  # compressed, after the noise
        # Part of a file, and the same file twice.
        part = [dict(files[1], chunks=files[1]["chunks"][-1:]), dict(files[0], chunks=files[0]["chunks"][:1])]
        got = frames.parse(self.call("POST", "dir_chunks", params={"path": "data/dc"}, json={"files": part}).content)
        self.assertEqual([g[0].hex() for g in got], part[0]["chunks"] + part[1]["chunks"])
        # Refusals: a digest of another file, version 0, a file of another
        # region, too many chunks, malformed bodies.
        wrong = [dict(files[0], chunks=files[1]["chunks"][:1])]
        self.error(self.s.post(self.base + "dir_chunks", params={"path": "data/dc"}, json={"files": wrong}),
                   404, "not_found")
        self.error(self.s.post(self.base + "dir_chunks", params={"path": "data/dc"},
                               json={"files": [dict(files[0], version=0)]}), 400, "bad_request")
        em = self.session("eu-west-1").get(self.base + "manifest", params={"path": "data/eu/e.bin"}).json()
        eu = [{"name": "e.bin", "version": em["version"], "chunks": [c["sha256"] for c in em["chunks"]]}]
        r = self.s.post(self.base + "dir_chunks", params={"path": "data/eu"}, json={"files": eu})
        self.error(r, 403, "residency_denied")
        r = self.s.post(self.base + "dir_chunks", params={"path": "data"},
                        json={"files": [dict(eu[0], name="eu")]})
        self.error(r, 403, "residency_denied")
        self.assertNotIn(b"stays in eu", r.content)
        many = [dict(files[0], chunks=files[0]["chunks"][:1] * 1025)]
        self.error(self.s.post(self.base + "dir_chunks", params={"path": "data/dc"}, json={"files": many}),
                   413, "too_large")
        for body in ({"files": [{"name": "n.bin"}]}, {"files": [dict(files[0], chunks=["zz"])]}, {"x": 1}):
            self.error(self.s.post(self.base + "dir_chunks", params={"path": "data/dc"}, json=body), 400, "bad_request")
        self.error(self.s.post(self.base + "dir_chunks", params={"path": "data/dc"},
                               json={"files": [dict(files[0], name="../x")]}), 400, "bad_path")

    def test_json_answers_go_zstd_compressed_to_clients_that_accept_it(self):
        for i in range(30):
            self.put("data/js/f%02d.bin" % i, os.urandom(100 * 1024))
        names = ["f%02d.bin" % i for i in range(30)]

        def ask(accept):
            r = self.s.post(self.base + "manifests", params={"path": "data/js"}, json={"names": names},
                            headers={"Accept-Encoding": accept}, stream=True)
            self.assertEqual(r.status_code, 200)
            return r, r.raw.read(decode_content=False)
        r, plain = ask("identity")
        self.assertNotIn("Content-Encoding", r.headers)
        r, packed = ask("gzip, zstd")
        self.assertEqual(r.headers["Content-Encoding"], "zstd")
        self.assertEqual(r.headers["Vary"], "Accept-Encoding")
        self.assertEqual(r.headers["Content-Type"], "application/json")
        self.assertEqual(json.loads(frames.unzstd(packed)), json.loads(plain))
        self.assertLess(len(packed), len(plain) / 2)  # hex digests and repeated keys
        for refused in ("zstd;q=0", "gzip", "ZSTD;q=0.000"):
            r, body = ask(refused)
            self.assertNotIn("Content-Encoding", r.headers, refused)
            self.assertEqual(json.loads(body)["entries"], json.loads(plain)["entries"])
        r, _ = ask("gzip;q=1, Zstd;q=0.5")
        self.assertEqual(r.headers["Content-Encoding"], "zstd")
        # A small answer goes as it is.
        r = self.s.get(self.base + "attr", params={"path": "data/js/f00.bin"}, headers={"Accept-Encoding": "zstd"})
        self.assertNotIn("Content-Encoding", r.headers)

    def test_a_prefix_the_spoke_holds_starts_the_stream(self):
        rng = random.Random(4)
        vocabulary = [rng.randbytes(rng.randint(2, 9)).hex().encode() for _ in range(2000)]

        def sample():
            return b" ".join(rng.choices(vocabulary, k=6000))
        self.put("data/px/a.txt", sample())
        self.put("data/px/b.txt", sample())
        ms = self.call("POST", "manifests", params={"path": "data/px"}, json={"names": ["a.txt", "b.txt"]}).json()
        a, b = (e["manifest"] for e in ms["entries"])
        held = self.get("data/px/a.txt")  # what the spoke fetched before: a's chunks
        prefix = ",".join(c["sha256"] for c in a["chunks"])
        files = [{"name": "b.txt", "version": b["version"], "chunks": [c["sha256"] for c in b["chunks"]]}]
        plain = self.call("POST", "dir_chunks", params={"path": "data/px"}, json={"files": files})
        self.assertNotIn("Weft-Prefix", plain.headers)
        r = self.call("POST", "dir_chunks", params={"path": "data/px"}, json={"files": files},
                      headers={"Weft-Prefix": prefix})
        self.assertEqual(r.headers["Weft-Prefix"], "applied")
        got = frames.parse(r.content, held)
        self.assertEqual(b"".join(g[3] for g in got), self.get("data/px/b.txt"))
        self.assertLess(len(r.content), len(plain.content) * 3 / 4)  # b's words were in a
        # The same for one file's chunks.
        body = b"".join(bytes.fromhex(c["sha256"]) for c in b["chunks"])
        r = self.call("POST", "chunks", params={"path": "data/px/b.txt", "version": b["version"]}, data=body,
                      headers={"Weft-Prefix": prefix})
        self.assertEqual(r.headers["Weft-Prefix"], "applied")
        self.assertEqual(b"".join(g[3] for g in frames.parse(r.content, held)), self.get("data/px/b.txt"))
        # A chunk the hub holds nowhere: the answer goes without a prefix.
        unknown = prefix + "," + hashlib.sha256(b"never stored").hexdigest()
        r = self.call("POST", "dir_chunks", params={"path": "data/px"}, json={"files": files},
                      headers={"Weft-Prefix": unknown})
        self.assertNotIn("Weft-Prefix", r.headers)
        self.assertEqual(b"".join(g[3] for g in frames.parse(r.content)), self.get("data/px/b.txt"))
        # Malformed, or more than 16 chunks.
        for bad, status, code in (("zz", 400, "bad_request"), (prefix + ",", 400, "bad_request"),
                                  (",".join([a["chunks"][0]["sha256"]] * 17), 413, "too_large")):
            self.error(self.s.post(self.base + "dir_chunks", params={"path": "data/px"}, json={"files": files},
                                   headers={"Weft-Prefix": bad}), status, code)


class CommitTest(HubCase):
    def commit(self, path, body, base_ino, base_version, status=200):
        r = self.s.post(self.base + "commit", data=body,
                        params={"path": path, "base_ino": base_ino, "base_version": base_version})
        self.assertEqual(r.status_code, status, r.text)
        return r.json()

    def test_new_file_then_compare_and_swap(self):
        self.call("POST", "mkdir", params={"path": "data/c"})
        one = os.urandom(100 * 1024)
        c1 = self.commit("data/c/f", frames.data_frame(one), 0, 0)
        self.assertEqual(c1["attr"]["version"], 1)
        self.assertEqual(self.get("data/c/f"), one)
        # Two spokes start from version 1: the first wins, the second is told
        # what won and the hub keeps the winner's content.
        ino = c1["attr"]["ino"]
        win = b"w" * 70000
        c2 = self.commit("data/c/f", frames.data_frame(win, codec=1), ino, 1)
        self.assertEqual(c2["attr"]["version"], 2)
        lose = self.commit("data/c/f", frames.data_frame(b"late"), ino, 1, status=409)
        self.assertEqual(lose["error"]["code"], "conflict")
        self.assertEqual(lose["current"]["version"], 2)
        self.assertEqual(self.get("data/c/f"), win)
        # A new name expected, but it exists.
        self.assertEqual(self.commit("data/c/f", frames.data_frame(b"x"), 0, 0, status=409)["error"]["code"],
                         "conflict")

    def test_references_send_only_what_the_hub_lacks(self):
        base = os.urandom(400 * 1024)
        self.put("data/r/base", base)
        m = self.call("GET", "manifest", params={"path": "data/r/base"}).json()
        extra = os.urandom(50 * 1024)
        # The copy: every chunk of base by reference, one new chunk as data.
        body = b"".join(frames.reference_frame(bytes.fromhex(c["sha256"]), c["length"]) for c in m["chunks"])
        body += frames.data_frame(extra)
        c = self.commit("data/r/copy", body, 0, 0)
        self.assertEqual(c["attr"]["size"], len(base) + len(extra))
        self.assertEqual(self.get("data/r/copy"), base + extra)
        self.assertLess(len(body), 60 * 1024)
        # A reference the hub cannot resolve: 422 names it, nothing is created.
        unknown = hashlib.sha256(b"unknown chunk").digest()
        r = self.commit("data/r/broken", frames.reference_frame(unknown, 13), 0, 0, status=422)
        self.assertEqual(r["missing"], [unknown.hex()])
        self.assertEqual(self.rest.get(self.api + "/stat/data/r/broken").status_code, 404)

    def test_a_version_keeps_the_chunks_as_the_frames_cut_them(self):
        # The hub neither cuts nor hashes a commit's content again: frames up
        # to the chunker's largest size are its chunks; a larger one is cut
        # as the hub cuts (the same chunks as the same bytes put).
        self.call("POST", "mkdir", params={"path": "data/k"})
        one = os.urandom(1 << 20)
        body = b"".join(frames.data_frame(one[at:at + 200 * 1024]) for at in range(0, len(one), 200 * 1024))
        self.commit("data/k/framed", body, 0, 0)
        self.assertEqual(self.get("data/k/framed"), one)
        m = self.call("GET", "manifest", params={"path": "data/k/framed"}).json()
        self.assertEqual([c["length"] for c in m["chunks"]], [200 * 1024] * 5 + [len(one) - 5 * 200 * 1024])
        self.assertEqual([c["sha256"] for c in m["chunks"]],
                         [hashlib.sha256(one[c["offset"]:c["offset"] + c["length"]]).hexdigest() for c in m["chunks"]])
        big = os.urandom(600 * 1024)
        self.put("data/k/put", big)
        self.commit("data/k/whole", frames.data_frame(big), 0, 0)
        cut = [self.call("GET", "manifest", params={"path": "data/k/" + n}).json()["chunks"] for n in ("put", "whole")]
        self.assertGreater(len(cut[0]), 2)
        self.assertEqual(cut[1], cut[0])

    def test_a_corrupted_frame_changes_nothing(self):
        good = os.urandom(20000)
        frame = bytearray(frames.data_frame(good))
        frame[-1] ^= 1
        r = self.s.post(self.base + "commit", data=bytes(frame),
                        params={"path": "data/corrupt", "base_ino": 0, "base_version": 0})
        self.error(r, 400, "bad_frame")
        truncated = frames.data_frame(good)[:-5]
        r = self.s.post(self.base + "commit", data=truncated,
                        params={"path": "data/corrupt", "base_ino": 0, "base_version": 0})
        self.error(r, 400, "bad_frame")
        self.assertEqual(self.rest.get(self.api + "/stat/data/corrupt").status_code, 404)


class FeedTest(HubCase):
    def connect(self, after):
        ws = websocket.create_connection(
            "ws://%s/hub/v1/feed?after=%d" % (self.hub.rest, after), timeout=15,
            header=["Weft-Region: " + self.region,
                    "Authorization: " + requests.auth._basic_auth_str(*self.hub.admin)])
        self.addCleanup(ws.close)
        return ws

    def until(self, ws, predicate, seconds=10):
        """Messages until one satisfies predicate; all changes seen meanwhile."""
        seen = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            msg = json.loads(ws.recv())
            seen += msg.get("changes", [])
            if predicate(msg, seen):
                return msg, seen
        self.fail("no such message within %d s; seen %r" % (seconds, seen))

    def test_changes_stream_and_resume_without_loss(self):
        start = self.call("GET", "info").json()["last_change"]
        ws = self.connect(start)
        made = self.call("POST", "mkdir", params={"path": "data/feed"}).json()
        msg, seen = self.until(ws, lambda m, s: any(c["op"] == "mkdir" and c["ino"] == made["attr"]["ino"] for c in s))
        self.assertTrue(all("name" not in c for c in seen))  # invalidations carry no names
        seqs = [c["seq"] for c in seen]
        self.assertEqual(seqs, sorted(seqs))
        self.assertEqual(seqs[0], start + 1)
        last = msg["last"]
        ws.close()
        # Changes while disconnected arrive after resuming from the cursor.
        for i in range(5):
            self.call("POST", "create", params={"path": "data/feed/f%d" % i})
        self.call("POST", "rename", params={"from": "data/feed/f0", "to": "data/feed/g0"})
        target = self.call("GET", "info").json()["last_change"]
        ws = self.connect(last)
        msg, seen = self.until(ws, lambda m, s: m["last"] >= target)
        self.assertEqual(msg["head"], msg["last"])  # caught up: the hub's log is no further
        self.assertEqual([c["seq"] for c in seen], list(range(last + 1, target + 1)))
        self.assertEqual([c["op"] for c in seen].count("create"), 5)
        self.assertIn("rename", [c["op"] for c in seen])

    def test_heartbeat_and_bad_cursors(self):
        last = self.call("GET", "info").json()["last_change"]
        ws = self.connect(last)
        msg = json.loads(ws.recv())  # nothing changes: a heartbeat within 5 s
        self.assertNotIn("changes", msg)
        self.assertGreaterEqual(msg["last"], last)
        self.assertGreaterEqual(msg["head"], msg["last"])
        self.error(self.s.get(self.base + "feed", params={"after": last + 1000}), 409, "cursor_ahead")
        self.error(self.s.get(self.base + "feed", params={"after": last}), 400, "websocket_required")


class ResidencyAndAuthTest(HubCase):
    def audit(self, **params):
        r = self.rest.get(self.api + "/audit", params={"limit": 1000, "protocol": "hub", **params})
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()["records"]

    def test_a_restricted_path_stays_at_the_hub(self):
        secret = os.urandom(100 * 1024)
        self.put("data/eu/secret.bin", secret)
        self.put("data/open/public.txt", b"for everyone")
        m_eu = self.session("eu-west-1").get(self.base + "manifest", params={"path": "data/eu/secret.bin"})
        self.assertEqual(m_eu.status_code, 200, m_eu.text)
        for name, params in (("attr", {"path": "data/eu/secret.bin"}),
                             ("manifest", {"path": "data/eu/secret.bin"}),
                             ("list", {"path": "data/eu"})):
            self.error(self.s.get(self.base + name, params=params), 403, "residency_denied")
        body = b"".join(bytes.fromhex(c["sha256"]) for c in m_eu.json()["chunks"])
        r = self.s.post(self.base + "chunks", params={"path": "data/eu/secret.bin", "version": 1}, data=body)
        self.error(r, 403, "residency_denied")
        self.assertNotIn(secret[:64], r.content)
        self.error(self.s.post(self.base + "rename", params={"from": "data/open/public.txt", "to": "data/eu/x"}),
                   403, "residency_denied")
        # The listing of the parent leaves the restricted name out.
        names = [e["name"] for e in self.call("GET", "list", params={"path": "data"}).json()["entries"]]
        self.assertIn("open", names)
        self.assertNotIn("eu", names)
        eu_names = [e["name"] for e in self.session("eu-west-1").get(self.base + "list", params={"path": "data"}).json()["entries"]]
        self.assertIn("eu", eu_names)
        # Audited: the refusals with the spoke's region, the transfer with its bytes.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            denied = [r for r in self.audit(path="data/eu/secret.bin") if r["result"] == "residency_denied"]
            if len(denied) >= 3:
                break
            time.sleep(0.1)
        self.assertGreaterEqual(len(denied), 3)
        self.assertTrue(all(r["region"] == "us-east-1" for r in denied))
        self.assertIn("hub.chunks", [r["op"] for r in denied])
        got, _ = self.fetch_as("eu-west-1", "data/eu/secret.bin", m_eu.json())
        self.assertEqual(got, secret)
        time.sleep(0.5)
        sent = [r for r in self.audit(path="data/eu/secret.bin") if r["op"] == "hub.chunks" and r["result"] == "ok"]
        self.assertEqual(sum(r["bytes"] for r in sent), len(secret))
        self.assertGreaterEqual(sum(r["wire_bytes"] for r in sent), len(secret))
        self.assertTrue(all(r["region"] == "eu-west-1" for r in sent))

    def fetch_as(self, region, path, manifest):
        s = self.session(region)
        body = b"".join(bytes.fromhex(c["sha256"]) for c in manifest["chunks"])
        r = s.post(self.base + "chunks", params={"path": path, "version": manifest["version"]}, data=body)
        self.assertEqual(r.status_code, 200, r.text)
        return b"".join(g[3] for g in frames.parse(r.content)), None

    def test_authentication_and_region_are_required(self):
        r = requests.get(self.base + "info", headers={"Weft-Region": "x"})
        self.error(r, 401, "unauthenticated")
        r = requests.get(self.base + "info", auth=("admin", "wrong"), headers={"Weft-Region": "x"})
        self.assertEqual(r.status_code, 401)
        r = requests.get(self.base + "info", auth=self.hub.admin)
        self.error(r, 400, "bad_request")
        self.error(self.s.get(self.base + "nothing"), 404, "no_route")
        self.error(self.s.post(self.base + "info"), 405, "method_not_allowed")
        # A token works as well as the password.
        t = self.rest.post(self.api + "/tokens", json={"user": self.hub.admin[0], "name": "spoke"})
        self.assertEqual(t.status_code, 201, t.text)
        r = requests.get(self.base + "info", headers={"Weft-Region": "x",
                                                     "Authorization": "Bearer " + t.json()["secret"]})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json()["region"], "us-east-1")
        metrics = requests.get("http://%s/metrics" % self.hub.rest).text
        self.assertIn('weft_hub_requests_total{call="info"}', metrics)
        self.assertIn('weft_hub_errors_total{call="unmatched"}', metrics)


class WanTest(HubCase):
    def test_through_the_emulator_a_cut_never_yields_wrong_bytes(self):
        content = os.urandom(2 << 20)
        self.put("data/wan/big", content)
        e = self.hub.emulator("--rtt-ms", "40", "--rate", str(8 << 20))
        base = "http://%s/hub/v1/" % e.address
        m = self.s.get(base + "manifest", params={"path": "data/wan/big"})
        self.assertEqual(m.status_code, 200, m.text)
        m = m.json()
        body = b"".join(bytes.fromhex(c["sha256"]) for c in m["chunks"])
        t = time.monotonic()
        r = self.s.post(base + "chunks", params={"path": "data/wan/big", "version": m["version"]}, data=body)
        took = time.monotonic() - t
        self.assertEqual(b"".join(g[3] for g in frames.parse(r.content)), content)
        self.assertGreater(took, (2 << 20) / (8 << 20) * 0.8)  # the cap was real
        # Cut after 1 MiB: the response fails as a whole or is complete and right.
        e.command("cut_after %d" % (1 << 20))
        try:
            r = self.s.post(base + "chunks", params={"path": "data/wan/big", "version": m["version"]}, data=body)
            self.assertEqual(b"".join(g[3] for g in frames.parse(r.content)), content)
            self.fail("the cut did not happen")
        except requests.exceptions.RequestException:
            pass
        self.assertEqual(e.command("stats")["cuts"], 1)


class ShutdownTest(unittest.TestCase):
    def test_sigterm_with_a_feed_open_closes_it_and_exits_0(self):
        hub = Site(WEFT)
        try:
            ws = websocket.create_connection(
                "ws://%s/hub/v1/feed?after=0" % hub.rest, timeout=15,
                header=["Weft-Region: x", "Authorization: " + requests.auth._basic_auth_str(*hub.admin)])
            json.loads(ws.recv())  # the changes of the first start, or a heartbeat
            t = time.monotonic()
            hub.proc.send_signal(__import__("signal").SIGTERM)
            with self.assertRaises((websocket.WebSocketConnectionClosedException, ConnectionError, OSError)):
                while True:  # changes still pending, then the close
                    if not ws.recv():
                        raise websocket.WebSocketConnectionClosedException()
            self.assertEqual(hub.proc.wait(timeout=10), 0)
            self.assertLess(time.monotonic() - t, 5)
        finally:
            hub.stop()


def configure(args):
    global WEFT
    WEFT = args.weft


if __name__ == "__main__":
    run_tests(170, configure)
