#!/usr/bin/python3
"""The REST API of a real `weft serve`, driven with Python requests, curl and
raw HTTP (http.client, for request targets no client library would send):
every endpoint, paging through 10,000 entries, Range reads, jobs, audit
completeness (one record per operation, through REST and S3), bad input of
every kind (and that it changes nothing), /metrics through promtool, and the
OpenAPI document (validated with openapi-spec-validator where importable).

Usage: rest_test.py --weft PATH --source DIR [unittest arguments]
Needs python3-requests; curl; promtool (Debian prometheus) is optional and
its test prints SKIP when it is absent.
"""

import argparse
import base64
import hashlib
import http.client
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gateway import Gateway  # noqa: E402

try:
    import requests
except ImportError:  # only OpenApiDocumentTest runs without it
    requests = None

WEFT = None
SOURCE = None
API = "/api/v1"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def ssh_key(comment):
    blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + os.urandom(32)
    return "ssh-ed25519 " + base64.b64encode(blob).decode() + " " + comment


class RestCase(unittest.TestCase):
    """One gateway per test class; `self.s` is an admin session."""

    config = None  # the --config of the class's gateway, as a dict

    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(WEFT, config=cls.config)
        cls.url = cls.gw.url
        cls.s = requests.Session()
        cls.s.auth = cls.gw.admin

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        code = cls.gw.stop()
        assert code == 0, "weft exited with %s" % code

    def api(self, path):
        return self.url + API + path

    def error(self, r, status, code):
        """Asserts a JSON error with this status and code; returns its message."""
        self.assertEqual(r.status_code, status, r.text)
        self.assertEqual(r.headers["Content-Type"], "application/json")
        body = r.json()
        self.assertEqual(set(body), {"error"})
        self.assertEqual(set(body["error"]), {"code", "message", "request_id"})
        self.assertEqual(body["error"]["code"], code, body)
        self.assertEqual(body["error"]["request_id"], r.headers["X-Request-Id"])
        self.assertTrue(body["error"]["message"])
        return body["error"]["message"]

    def put(self, path, data, session=None, **kw):
        return (session or self.s).put(self.api("/files/" + path), data=data, **kw)

    def make_user(self, name, password="pw-" + "x" * 8, admin=False):
        r = self.s.post(self.api("/users"), json={"name": name, "password": password, "admin": admin})
        self.assertEqual(r.status_code, 201, r.text)
        s = requests.Session()
        s.auth = (name, password)
        self.addCleanup(s.close)
        return s

    def raw(self, method, target, body=None, headers=None, auth=True):
        """Sends exactly this request target (no normalisation or re-encoding)."""
        host, port = self.gw.endpoints["rest"].rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        h = dict(headers or {})
        if auth:
            h["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % self.gw.admin).encode()).decode()
        conn.request(method, target, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, dict(r.getheaders()), data


class FilesTest(RestCase):
    def test_write_read_stat_delete(self):
        data = os.urandom(300_000)
        r = self.put("data/files/a.bin", data, params={"mkdirs": "true"})
        self.assertEqual(r.status_code, 201, r.text)
        body = r.json()
        self.assertEqual(body["path"], "data/files/a.bin")
        self.assertEqual(body["size"], len(data))
        self.assertEqual(body["sha256"], sha256(data))
        self.assertEqual(body["version"], 1)
        r = self.s.get(self.api("/files/data/files/a.bin"))
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.content, data)
        self.assertEqual(r.headers["Accept-Ranges"], "bytes")
        self.assertEqual(r.headers["X-Weft-Version"], "1")
        self.assertTrue(r.headers["X-Request-Id"])
        head = self.s.head(self.api("/files/data/files/a.bin"))
        self.assertEqual(head.status_code, 200)
        self.assertEqual(head.headers["Content-Length"], str(len(data)))
        self.assertEqual(head.headers["ETag"], r.headers["ETag"])
        st = self.s.get(self.api("/stat/data/files/a.bin")).json()
        self.assertEqual((st["type"], st["size"], st["mode"], st["version"]), ("file", len(data), "0644", 1))
        # Replacing: 200, a new version, a new ETag.
        r = self.put("data/files/a.bin", b"second")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json()["version"], 2)
        self.assertNotEqual(self.s.head(self.api("/files/data/files/a.bin")).headers["ETag"], head.headers["ETag"])
        self.assertEqual(self.s.get(self.api("/files/data/files/a.bin")).content, b"second")
        # Streamed (chunked) upload with a checksum.
        pieces = [os.urandom(70_000) for _ in range(5)]
        whole = b"".join(pieces)
        r = self.put("data/files/chunked.bin", iter(pieces), headers={"X-Weft-Sha256": sha256(whole).upper()})
        self.assertEqual(r.status_code, 201, r.text)
        self.assertEqual(self.s.get(self.api("/files/data/files/chunked.bin")).content, whole)
        # Delete.
        self.assertEqual(self.s.delete(self.api("/files/data/files/a.bin")).status_code, 204)
        self.error(self.s.get(self.api("/stat/data/files/a.bin")), 404, "not_found")
        self.error(self.s.delete(self.api("/files/data/files/a.bin")), 404, "not_found")
        self.error(self.s.delete(self.api("/files/data")), 400, "bad_request")

    def test_range_reads(self):
        data = bytes(range(256)) * 4000
        self.assertEqual(self.put("data/range.bin", data).status_code, 201)
        url = self.api("/files/data/range.bin")
        r = self.s.get(url, headers={"Range": "bytes=1000-1999"})
        self.assertEqual(r.status_code, 206)
        self.assertEqual(r.content, data[1000:2000])
        self.assertEqual(r.headers["Content-Range"], "bytes 1000-1999/%d" % len(data))
        self.assertEqual(self.s.get(url, headers={"Range": "bytes=-10"}).content, data[-10:])
        self.assertEqual(self.s.get(url, headers={"Range": "bytes=%d-" % (len(data) - 5)}).content, data[-5:])
        self.assertEqual(self.s.get(url, headers={"Range": "bytes=0-99999999"}).content, data)
        r = self.s.get(url, headers={"Range": "bytes=%d-" % len(data)})
        self.error(r, 416, "range_not_satisfiable")
        self.assertEqual(r.headers["Content-Range"], "bytes */%d" % len(data))
        # Several ranges are not served as multipart: the whole content is.
        r = self.s.get(url, headers={"Range": "bytes=0-1,5-6"})
        self.assertEqual((r.status_code, r.content), (200, data))
        # And with curl.
        out = subprocess.run(["curl", "-sf", "-u", "%s:%s" % self.gw.admin, "-r", "500000-500099", url],
                             capture_output=True, check=True).stdout
        self.assertEqual(out, data[500000:500100])

    def test_checksum_mismatch_and_interrupted_upload_leave_nothing(self):
        self.assertEqual(self.put("data/keep.txt", b"original").status_code, 201)
        r = self.put("data/keep.txt", b"replacement", headers={"X-Weft-Sha256": sha256(b"something else")})
        self.assertIn(sha256(b"replacement"), self.error(r, 400, "checksum_mismatch"))
        self.assertEqual(self.s.get(self.api("/files/data/keep.txt")).content, b"original")
        r = self.put("data/never.txt", b"x", headers={"X-Weft-Sha256": "00" * 32})
        self.error(r, 400, "checksum_mismatch")
        self.error(self.s.get(self.api("/stat/data/never.txt")), 404, "not_found")
        self.error(self.put("data/keep.txt", b"x", headers={"X-Weft-Sha256": "zz"}), 400, "bad_request")
        # A client that promises 1 MB, sends 100 kB and hangs up.
        for name in ("keep.txt", "partial.txt"):
            host, port = self.gw.endpoints["rest"].rsplit(":", 1)
            with socket.create_connection((host, int(port))) as sock:
                auth = base64.b64encode(("%s:%s" % self.gw.admin).encode()).decode()
                sock.sendall(("PUT %s/files/data/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"
                              "Content-Length: 1000000\r\n\r\n" % (API, name, auth)).encode())
                sock.sendall(b"y" * 100_000)
            time.sleep(0.3)
        self.assertEqual(self.s.get(self.api("/files/data/keep.txt")).content, b"original")
        self.error(self.s.get(self.api("/stat/data/partial.txt")), 404, "not_found")
        listing = self.s.get(self.api("/dirs/data")).json()
        self.assertNotIn("partial.txt", [e["name"] for e in listing["entries"]])

    def test_directories_rename_and_type_errors(self):
        r = self.s.post(self.api("/dirs/data/d1"))
        self.assertEqual(r.status_code, 201, r.text)
        self.assertEqual(r.json()["type"], "directory")
        self.error(self.s.post(self.api("/dirs/data/d1")), 409, "already_exists")
        self.assertEqual(self.s.post(self.api("/dirs/data/d1"), params={"parents": "true"}).status_code, 200)
        self.error(self.s.post(self.api("/dirs/data/x1/x2")), 404, "not_found")
        self.assertEqual(self.s.post(self.api("/dirs/data/x1/x2/x3"), params={"parents": "1"}).status_code, 201)
        self.assertEqual(self.put("data/d1/f", b"f").status_code, 201)
        self.error(self.s.get(self.api("/files/data/d1")), 409, "is_a_directory")
        self.error(self.s.get(self.api("/dirs/data/d1/f")), 409, "not_a_directory")
        self.error(self.put("data/d1", b"x"), 409, "is_a_directory")
        self.error(self.put("data/d1/f/g", b"x"), 409, "not_a_directory")
        self.error(self.s.delete(self.api("/files/data/d1")), 409, "not_empty")
        # Rename: refuses to replace unless asked.
        self.assertEqual(self.put("data/d1/g", b"g").status_code, 201)
        r = self.s.post(self.api("/rename"), json={"from": "data/d1/f", "to": "data/d1/g"})
        self.error(r, 409, "already_exists")
        r = self.s.post(self.api("/rename"), json={"from": "data/d1/f", "to": "data/d1/g", "replace": True})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json()["path"], "data/d1/g")
        self.assertEqual(self.s.get(self.api("/files/data/d1/g")).content, b"f")
        r = self.s.post(self.api("/rename"), json={"from": "data/d1", "to": "data/d2"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.get(self.api("/files/data/d2/g")).content, b"f")
        self.error(self.s.post(self.api("/rename"), json={"from": "data/d2", "to": "other/d2"}), 400, "cross_export")
        self.error(self.s.post(self.api("/rename"), json={"from": "data/nope", "to": "data/n2"}), 404, "not_found")
        self.assertEqual(self.s.delete(self.api("/files/data/d2/g")).status_code, 204)
        self.assertEqual(self.s.delete(self.api("/files/data/d2")).status_code, 204)
        self.error(self.s.get(self.api("/stat/nosuchexport/x")), 404, "not_found")

    def test_versions_and_chunk_manifest(self):
        first = os.urandom(1_000_000)
        second = first[:500_000] + os.urandom(500_000)
        self.assertEqual(self.put("data/v.bin", first).status_code, 201)
        self.assertEqual(self.put("data/v.bin", second).status_code, 200)
        v = self.s.get(self.api("/versions/data/v.bin")).json()
        self.assertEqual(v["current"], 2)
        self.assertEqual([x["version"] for x in v["versions"]], [1, 2])
        self.assertEqual([x["size"] for x in v["versions"]], [1_000_000, 1_000_000])
        self.assertNotEqual(v["versions"][0]["id"], v["versions"][1]["id"])
        for version, content in ((1, first), (2, second), (None, second)):
            params = {"version": version} if version else {}
            m = self.s.get(self.api("/chunks/data/v.bin"), params=params).json()
            self.assertEqual(m["version"], version or 2)
            self.assertEqual(m["size"], len(content))
            offset = 0
            for c in m["chunks"]:
                self.assertEqual(c["offset"], offset)
                self.assertEqual(c["sha256"], sha256(content[offset:offset + c["length"]]))
                offset += c["length"]
            self.assertEqual(offset, len(content))
            self.assertGreater(len(m["chunks"]), 1)
        # Content-defined chunks: the unchanged first half shares chunks.
        one = {c["sha256"] for c in self.s.get(self.api("/chunks/data/v.bin"), params={"version": 1}).json()["chunks"]}
        two = {c["sha256"] for c in self.s.get(self.api("/chunks/data/v.bin")).json()["chunks"]}
        self.assertTrue(one & two)
        self.error(self.s.get(self.api("/chunks/data/v.bin"), params={"version": 9}), 404, "not_found")
        self.error(self.s.get(self.api("/chunks/data/v.bin"), params={"version": "x"}), 400, "bad_parameter")
        self.error(self.s.get(self.api("/versions/data")), 409, "is_a_directory")


class PagingTest(RestCase):
    COUNT = 10_000

    def test_paging_through_10000_entries(self):
        self.assertEqual(self.s.post(self.api("/dirs/data/many")).status_code, 201)
        names = ["f%05d" % i for i in range(self.COUNT)]
        failures = []

        def create(part):
            with requests.Session() as s:
                s.auth = self.gw.admin
                for name in part:
                    r = s.put(self.api("/files/data/many/" + name), data=name.encode())
                    if r.status_code != 201:
                        failures.append((name, r.status_code, r.text))

        threads = [threading.Thread(target=create, args=(names[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])

        for limit in (1000, 777, 10000):
            seen, cursor, pages = [], None, 0
            while True:
                params = {"limit": limit}
                if cursor:
                    params["cursor"] = cursor
                page = self.s.get(self.api("/dirs/data/many"), params=params).json()
                pages += 1
                self.assertLessEqual(len(page["entries"]), limit)
                seen += [e["name"] for e in page["entries"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            self.assertEqual(seen, names, "limit %d" % limit)  # all, once, in name order
            self.assertGreaterEqual(pages, self.COUNT // limit)
        entry = self.s.get(self.api("/dirs/data/many"), params={"limit": 1}).json()["entries"][0]
        self.assertEqual((entry["name"], entry["type"], entry["size"]), ("f00000", "file", 6))
        # curl reads a page too.
        out = subprocess.run(["curl", "-sf", "-u", "%s:%s" % self.gw.admin,
                              self.api("/dirs/data/many?limit=3")], capture_output=True, check=True).stdout
        self.assertEqual([e["name"] for e in json.loads(out)["entries"]], names[:3])
        for bad in ({"limit": 0}, {"limit": 10001}, {"limit": "x"}, {"cursor": "zz"}, {"cursor": "abc"}):
            self.error(self.s.get(self.api("/dirs/data/many"), params=bad), 400, "bad_parameter")


class AdminTest(RestCase):
    def test_users_passwords_ids_and_keys(self):
        bob = self.make_user("bob", "bob-password")
        self.error(self.s.post(self.api("/users"), json={"name": "bob", "password": "x"}), 409, "already_exists")
        self.assertEqual(bob.get(self.api("/info")).json()["user"], {"name": "bob", "admin": False})
        users = self.s.get(self.api("/users")).json()["users"]
        self.assertLessEqual({"admin", "bob"}, {u["name"] for u in users})
        me = bob.get(self.api("/users/bob")).json()
        self.assertEqual((me["name"], me["admin"]), ("bob", False))
        self.error(bob.get(self.api("/users/admin")), 403, "forbidden")
        self.error(bob.get(self.api("/users")), 403, "forbidden")
        # uid/gid (administrators).
        r = self.s.put(self.api("/users/bob/ids"), json={"uid": 4242, "gid": 4343})
        self.assertEqual((r.status_code, r.json()["uid"], r.json()["gid"]), (200, 4242, 4343))
        self.error(bob.put(self.api("/users/bob/ids"), json={"uid": 1, "gid": 1}), 403, "forbidden")
        # Passwords: a user may reset their own; the old one stops working.
        self.assertEqual(bob.put(self.api("/users/bob/password"), json={"password": "new-pw"}).status_code, 204)
        self.error(bob.get(self.api("/info")), 401, "unauthenticated")
        bob.auth = ("bob", "new-pw")
        self.assertEqual(bob.get(self.api("/info")).status_code, 200)
        self.error(bob.put(self.api("/users/admin/password"), json={"password": "mine"}), 403, "forbidden")
        self.assertEqual(self.s.get(self.api("/info")).status_code, 200)  # admin's password unchanged
        # S3 keys.
        r = bob.post(self.api("/users/bob/s3-keys"))
        self.assertEqual(r.status_code, 201, r.text)
        key = r.json()
        self.assertEqual(key["user"], "bob")
        self.assertTrue(key["secret_key"])
        self.assertIn(key["access_key"], self.s.get(self.api("/users/bob")).json()["s3_access_keys"])
        self.error(self.s.delete(self.api("/users/admin/s3-keys/" + key["access_key"])), 404, "not_found")
        self.assertEqual(self.s.delete(self.api("/users/bob/s3-keys/" + key["access_key"])).status_code, 204)
        self.assertEqual(self.s.get(self.api("/users/bob")).json()["s3_access_keys"], [])
        # SSH keys.
        line = ssh_key("bob@laptop")
        r = bob.post(self.api("/users/bob/ssh-keys"), json={"key": line})
        self.assertEqual(r.status_code, 201, r.text)
        key_id = r.json()["id"]
        self.assertEqual(bob.get(self.api("/users/bob")).json()["ssh_keys"], [{"id": key_id, "key": line}])
        self.error(bob.post(self.api("/users/bob/ssh-keys"), json={"key": line}), 409, "already_exists")
        self.error(bob.post(self.api("/users/bob/ssh-keys"), json={"key": "not a key"}), 400, "invalid_argument")
        self.error(bob.delete(self.api("/users/bob/ssh-keys/" + "0" * 64)), 404, "not_found")
        self.assertEqual(bob.delete(self.api("/users/bob/ssh-keys/" + key_id)).status_code, 204)
        self.assertEqual(bob.get(self.api("/users/bob")).json()["ssh_keys"], [])
        # Delete: the remembered password check does not outlive the user.
        self.error(bob.delete(self.api("/users/bob")), 403, "forbidden")
        self.assertEqual(self.s.delete(self.api("/users/bob")).status_code, 204)
        self.error(bob.get(self.api("/info")), 401, "unauthenticated")
        self.error(self.s.delete(self.api("/users/bob")), 404, "not_found")
        self.error(self.s.delete(self.api("/users/admin")), 403, "forbidden")  # the last administrator

    def test_tokens_create_use_list_revoke(self):
        self.make_user("tess", "tess-password")
        r = self.s.post(self.api("/tokens"), json={"user": "tess", "name": "ci"})
        self.assertEqual(r.status_code, 201, r.text)
        token = r.json()
        self.assertTrue(token["secret"].startswith("weft_"))
        bearer = {"Authorization": "Bearer " + token["secret"]}
        info = requests.get(self.api("/info"), headers=bearer).json()
        self.assertEqual(info["user"]["name"], "tess")
        listed = self.s.get(self.api("/tokens")).json()["tokens"]
        self.assertEqual([(t["id"], t["user"], t["name"]) for t in listed], [(token["id"], "tess", "ci")])
        self.assertNotIn("secret", listed[0])
        # A user manages tokens of their own (sees only those), an
        # administrator everyone's.
        r = requests.post(self.api("/tokens"), auth=("tess", "tess-password"), json={"user": "tess", "name": "own"})
        self.assertEqual(r.status_code, 201, r.text)
        own = r.json()
        self.make_user("tom", "tom-password")
        toms = self.s.post(self.api("/tokens"), json={"user": "tom", "name": "t"}).json()
        mine = requests.get(self.api("/tokens"), headers=bearer).json()["tokens"]
        self.assertEqual(sorted(t["name"] for t in mine), ["ci", "own"])
        self.error(requests.post(self.api("/tokens"), headers=bearer, json={"user": "tom", "name": "x"}),
                   403, "forbidden")
        self.error(requests.delete(self.api("/tokens/" + toms["id"]), headers=bearer), 403, "forbidden")
        self.assertEqual(requests.delete(self.api("/tokens/" + own["id"]), headers=bearer).status_code, 204)
        self.assertEqual(self.s.delete(self.api("/tokens/" + toms["id"])).status_code, 204)
        self.error(self.s.post(self.api("/tokens"), json={"user": "nobody", "name": "x"}), 404, "not_found")
        self.assertEqual(self.s.delete(self.api("/tokens/" + token["id"])).status_code, 204)
        self.error(requests.get(self.api("/info"), headers=bearer), 401, "unauthenticated")
        self.error(self.s.delete(self.api("/tokens/" + token["id"])), 404, "not_found")
        self.assertEqual(self.s.get(self.api("/tokens")).json()["tokens"], [])

    def test_exports_and_their_permissions(self):
        exports = self.s.get(self.api("/exports")).json()["exports"]
        self.assertEqual(exports, [{"name": "data", "path": "/", "public_read": False,
                                    "default_access": "read_write", "users": {}}])
        self.assertEqual(self.s.post(self.api("/dirs/data/shared")).status_code, 201)
        self.assertEqual(self.put("data/shared/readme", b"hello").status_code, 201)
        reader = self.make_user("reader", "reader-pw")
        spec = {"path": "/shared", "default_access": "none", "users": {"reader": "read_only"}}
        r = self.s.put(self.api("/exports/team"), json=spec)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json(), {"name": "team", "path": "/shared", "public_read": False,
                                    "default_access": "none", "users": {"reader": "read_only"}})
        self.assertEqual(reader.get(self.api("/files/team/readme")).content, b"hello")
        self.error(reader.put(self.api("/files/team/new"), data=b"x"), 403, "read_only")
        outsider = self.make_user("outsider", "outsider-pw")
        self.error(outsider.get(self.api("/files/team/readme")), 403, "access_denied")
        self.error(reader.get(self.api("/exports")), 403, "forbidden")
        self.error(self.s.put(self.api("/exports/bad"), json={"path": "/nope"}), 404, "not_found")
        self.error(self.s.put(self.api("/exports/bad"), json={"path": "/shared", "default_access": "all"}),
                   400, "invalid_json")
        self.error(self.s.put(self.api("/exports/bad"), json={"path": "/../etc"}), 400, "bad_path")
        self.assertEqual(self.s.delete(self.api("/exports/team")).status_code, 204)
        self.error(reader.get(self.api("/files/team/readme")), 404, "not_found")
        self.error(self.s.delete(self.api("/exports/team")), 404, "not_found")
        self.assertEqual(self.s.get(self.api("/files/data/shared/readme")).content, b"hello")

    def test_server_info(self):
        info = self.s.get(self.api("/info")).json()
        self.assertRegex(info["version"], r"^\d+\.\d+\.\d+$")
        self.assertEqual(info["region"], "us-east-1")
        self.assertGreater(info["uptime_seconds"], 0)
        self.assertEqual(info["endpoints"]["rest"], self.gw.endpoints["rest"])
        self.assertEqual(info["endpoints"]["s3"], self.gw.endpoints["s3"])
        self.assertEqual(info["user"], {"name": "admin", "admin": True})


class JobsTest(RestCase):
    def wait(self, job_id, session=None, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = (session or self.s).get(self.api("/jobs/" + job_id)).json()
            if job["state"] != "running":
                return job
            time.sleep(0.05)
        self.fail("job %s still running after %d s" % (job_id, timeout))

    def test_verify_clean_tree(self):
        sizes = [0, 10, 70_000, 1_000_000, 3_000_000]
        for i, n in enumerate(sizes):
            self.assertEqual(self.put("data/tree/d%d/f%d" % (i % 2, i), os.urandom(n),
                                      params={"mkdirs": "true"}).status_code, 201)
        r = self.s.post(self.api("/jobs"), json={"type": "verify", "path": "data/tree"})
        self.assertEqual(r.status_code, 201, r.text)
        started = r.json()
        self.assertEqual((started["type"], started["path"], started["user"]), ("verify", "data/tree", "admin"))
        job = self.wait(started["id"])
        self.assertEqual(job["state"], "succeeded", job)
        self.assertEqual(job["progress"], {"bytes_done": sum(sizes), "bytes_total": sum(sizes),
                                           "items_done": len(sizes), "items_total": len(sizes)})
        self.assertEqual(job["eta_seconds"], 0)
        res = job["result"]
        self.assertTrue(res["ok"])
        self.assertEqual((res["files"], res["bytes"], res["mismatch_count"], res["error_count"]),
                         (len(sizes), sum(sizes), 0, 0))
        self.assertGreater(res["chunks"], 10)
        self.assertIn(started["id"], [j["id"] for j in self.s.get(self.api("/jobs")).json()["jobs"]])
        # A single file works too.
        r = self.s.post(self.api("/jobs"), json={"type": "verify", "path": "data/tree/d1/f3"})
        self.assertEqual(self.wait(r.json()["id"])["result"]["files"], 1)

    def test_verify_finds_a_corrupted_chunk(self):
        content = os.urandom(1 << 20)
        self.assertEqual(self.put("data/bad/victim.bin", content, params={"mkdirs": "true"}).status_code, 201)
        # Find the version's data file on disk and flip one byte in it.
        target = None
        for root, _, files in os.walk(self.gw.data):
            for f in files:
                p = pathlib.Path(root) / f
                if p.stat().st_size == len(content) and p.read_bytes() == content:
                    target = p
        self.assertIsNotNone(target, "no data file holds the content")
        offset = 700_000
        with open(target, "r+b") as f:
            f.seek(offset)
            f.write(bytes([content[offset] ^ 0xFF]))
        r = self.s.post(self.api("/jobs"), json={"type": "verify", "path": "data/bad"})
        job = self.wait(r.json()["id"])
        self.assertEqual(job["state"], "succeeded")
        res = job["result"]
        self.assertFalse(res["ok"])
        self.assertEqual(res["mismatch_count"], 1)
        m = res["mismatches"][0]
        self.assertEqual(m["path"], "data/bad/victim.bin")
        self.assertLessEqual(m["offset"], offset)
        self.assertLess(offset, m["offset"] + m["length"])
        self.assertEqual(m["expected"], sha256(content[m["offset"]:m["offset"] + m["length"]]))
        self.assertNotEqual(m["actual"], m["expected"])

    def test_cancel_visibility_and_bad_requests(self):
        for i in range(40):
            self.assertEqual(self.put("data/big/f%02d" % i, os.urandom(8 << 20),
                                      params={"mkdirs": "true"}).status_code, 201)
        r = self.s.post(self.api("/jobs"), json={"type": "verify", "path": "data/big"})
        job_id = r.json()["id"]
        r = self.s.post(self.api("/jobs/%s/cancel" % job_id))
        self.assertEqual(r.status_code, 200)
        self.assertTrue(r.json()["cancel_requested"])
        job = self.wait(job_id)
        self.assertEqual(job["state"], "cancelled")
        self.assertLess(job["progress"]["bytes_done"], 40 * (8 << 20))
        # Users see their own jobs only.
        carl = self.make_user("carl", "carl-pw")
        self.error(carl.get(self.api("/jobs/" + job_id)), 404, "not_found")
        self.error(carl.post(self.api("/jobs/%s/cancel" % job_id)), 404, "not_found")
        self.assertEqual(carl.get(self.api("/jobs")).json()["jobs"], [])
        self.error(self.s.get(self.api("/jobs/job-0000")), 404, "not_found")
        self.error(self.s.post(self.api("/jobs"), json={"type": "replicate", "path": "data"}), 400, "bad_request")
        self.error(self.s.post(self.api("/jobs"), json={"type": "verify", "path": "nowhere/x"}), 404, "not_found")
        self.error(self.s.post(self.api("/jobs"), json={"type": "verify"}), 400, "invalid_json")


    def warm(self, body, session=None):
        r = (session or self.s).post(self.api("/jobs"), json=dict(body, type="warm"))
        self.assertEqual(r.status_code, 201, r.text)
        self.assertEqual(r.json()["type"], "warm")
        return self.wait(r.json()["id"], session)

    def test_warm_a_tree_and_a_file(self):
        sizes = [0, 10, 70_000, 1_000_000, 3_000_000, 5_000_000]
        for i, n in enumerate(sizes):
            self.assertEqual(self.put("data/warm/d%d/f%d" % (i % 2, i), os.urandom(n),
                                      params={"mkdirs": "true"}).status_code, 201)
        job = self.warm({"path": "data/warm"})
        self.assertEqual((job["state"], job["path"], job["error"]), ("succeeded", "data/warm", None), job)
        self.assertEqual(job["progress"], {"bytes_done": sum(sizes), "bytes_total": sum(sizes),
                                           "items_done": len(sizes), "items_total": len(sizes)})
        self.assertEqual(job["result"], {"ok": True, "files": len(sizes), "files_read": len(sizes),
                                         "bytes_read": sum(sizes), "error_count": 0, "errors": []})
        job = self.warm({"path": "data/warm/d0/f4"})
        self.assertEqual((job["state"], job["result"]["files_read"], job["result"]["bytes_read"]),
                         ("succeeded", 1, 3_000_000))
        # An empty directory: nothing to read is not a failure.
        self.assertEqual(self.s.post(self.api("/dirs/data/warm/empty")).status_code, 201)
        job = self.warm({"path": "data/warm/empty"})
        self.assertEqual((job["state"], job["result"]["files"]), ("succeeded", 0))

    def test_warm_an_index_in_its_order(self):
        sizes = {"a/one": 1000, "a/two": 2_000_000, "b/three": 30}
        for name, n in sizes.items():
            self.assertEqual(self.put("data/ix/" + name, os.urandom(n), params={"mkdirs": "true"}).status_code, 201)
        index = ["b/three", "missing/file", "a/two", "a", "a/one"]
        job = self.warm({"path": "data/ix", "index": index})
        # Unreadable entries are reported and the job goes on.
        self.assertEqual(job["state"], "succeeded", job)
        self.assertEqual(job["progress"], {"bytes_done": sum(sizes.values()), "bytes_total": sum(sizes.values()),
                                           "items_done": 5, "items_total": 5})
        res = job["result"]
        self.assertEqual((res["ok"], res["files"], res["files_read"], res["bytes_read"], res["error_count"]),
                         (False, 5, 3, sum(sizes.values()), 2))
        self.assertEqual([(e["path"], e["code"]) for e in res["errors"]],
                         [("data/ix/missing/file", "not_found"), ("data/ix/a", "bad_request")])
        self.assertIn("not a regular file", res["errors"][1]["message"])
        # Nothing readable: the job fails, saying why.
        job = self.warm({"path": "data/ix", "index": ["nope", "a"]})
        self.assertEqual(job["state"], "failed", job)
        self.assertEqual(job["error"]["code"], "not_found")
        self.assertIn("none of the 2 files could be read", job["error"]["message"])
        self.assertEqual(job["result"]["error_count"], 2)

    def test_warm_refuses_missing_paths_and_bad_bodies(self):
        self.assertEqual(self.put("data/wb/f", b"x", params={"mkdirs": "true"}).status_code, 201)
        jobs = self.api("/jobs")
        msg = self.error(self.s.post(jobs, json={"type": "warm", "path": "data/wb/nothing"}), 404, "not_found")
        self.assertIn("data/wb/nothing", msg)
        self.error(self.s.post(jobs, json={"type": "warm", "path": "nowhere/x"}), 404, "not_found")
        self.error(self.s.post(jobs, json={"type": "warm"}), 400, "invalid_json")
        self.error(self.s.post(jobs, json={"type": "warm", "path": "data/wb", "index": "f"}), 400, "invalid_json")
        self.error(self.s.post(jobs, json={"type": "warm", "path": "data/wb", "index": ["f", 1]}), 400,
                   "invalid_json")
        self.error(self.s.post(jobs, json={"type": "warm", "path": "data/wb", "extra": 1}), 400, "invalid_json")
        self.error(self.s.post(jobs, json={"type": "warm", "path": "data/wb", "index": []}), 400, "bad_request")
        self.error(self.s.post(jobs, json={"type": "warm", "path": "data/wb", "index": ["../etc/passwd"]}), 400,
                   "bad_path")
        self.error(self.s.post(jobs, json={"type": "warm", "path": "data/wb/f", "index": ["f"]}), 400,
                   "bad_request")
        self.error(self.s.post(jobs, json={"type": "verify", "path": "data/wb", "index": ["f"]}), 400,
                   "bad_request")
        # Jobs read as their caller: without access to the export, no job.
        spec = {"path": "/wb", "default_access": "none", "users": {"dora": "read_only"}}
        self.assertEqual(self.s.put(self.api("/exports/wteam"), json=spec).status_code, 200)
        dora = self.make_user("dora", "dora-pw-xxxx")
        eve = self.make_user("eve", "eve-pw-xxxx")
        self.error(eve.post(jobs, json={"type": "warm", "path": "wteam"}), 403, "access_denied")
        job = self.warm({"path": "wteam"}, dora)
        self.assertEqual((job["state"], job["user"], job["result"]["files_read"]), ("succeeded", "dora", 1))
        self.error(eve.get(self.api("/jobs/" + job["id"])), 404, "not_found")
        self.assertEqual(self.s.delete(self.api("/exports/wteam")).status_code, 204)

    def test_warm_cancel(self):
        for i in range(40):
            self.assertEqual(self.put("data/wbig/f%02d" % i, os.urandom(8 << 20),
                                      params={"mkdirs": "true"}).status_code, 201)
        r = self.s.post(self.api("/jobs"), json={"type": "warm", "path": "data/wbig"})
        job_id = r.json()["id"]
        r = self.s.post(self.api("/jobs/%s/cancel" % job_id))
        self.assertEqual(r.status_code, 200)
        self.assertTrue(r.json()["cancel_requested"])
        job = self.wait(job_id)
        self.assertEqual(job["state"], "cancelled", job)
        self.assertLess(job["progress"]["bytes_done"], 40 * (8 << 20))
        # Cancelled before its first listing, a job has no result; after it,
        # the reads the cancel cut short are not counted as errors.
        if job["result"] is not None:
            self.assertEqual(job["result"]["error_count"], 0, job)


class AuditTest(RestCase):
    def records(self, **params):
        r = self.s.get(self.api("/audit"), params={"limit": 1000, **params})
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()["records"]

    def exactly(self, n, **params):
        """Waits until n records match; then checks that no more come."""
        deadline = time.monotonic() + 10
        found = []
        while time.monotonic() < deadline and len(found) < n:
            found = self.records(**params)
            time.sleep(0.05)
        time.sleep(0.3)
        found = self.records(**params)
        self.assertEqual(len(found), n, found)
        return found

    def test_one_rest_operation_is_one_record(self):
        dana = self.make_user("dana", "dana-pw")
        self.assertEqual(self.s.post(self.api("/dirs/data/audited")).status_code, 201)
        body = os.urandom(12345)
        self.assertEqual(self.s.put(self.api("/files/data/audited/dana.bin"), data=body).status_code, 201)
        self.assertEqual(dana.get(self.api("/files/data/audited/dana.bin")).content, body)
        [rec] = self.exactly(1, path="data/audited/dana.bin", user="dana")
        self.assertEqual((rec["user"], rec["protocol"], rec["op"], rec["result"], rec["bytes"]),
                         ("dana", "rest", "files.read", "ok", len(body)))
        self.assertRegex(rec["client"], r"^127\.0\.0\.1:\d+$")
        self.assertTrue(rec["request_id"])
        self.assertRegex(rec["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        [write] = self.exactly(1, path="data/audited/dana.bin", user="admin")
        self.assertEqual((write["op"], write["bytes"]), ("files.write", len(body)))
        # A refused request is a record too, with its error code.
        self.error(dana.delete(self.api("/files/data/audited/dana.bin")), 403, "access_denied")
        newest, _ = self.exactly(2, path="data/audited/dana.bin", user="dana")
        self.assertEqual((newest["op"], newest["result"]), ("files.delete", "access_denied"))
        self.assertEqual(self.exactly(1, path="data/audited/dana.bin", user="dana",
                                      since=newest["time"])[0]["request_id"], newest["request_id"])
        # So is one that failed authentication, with no user.
        self.error(requests.get(self.api("/files/data/audited/dana.bin"), auth=("dana", "wrong")),
                   401, "unauthenticated")
        [anon] = self.exactly(1, path="data/audited/dana.bin", user="-")
        self.assertEqual((anon["op"], anon["result"], anon["bytes"]), ("files.read", "unauthenticated", 0))
        # Filters, and the file on disk is JSON lines.
        self.assertEqual(self.records(protocol="nfs"), [])
        self.assertEqual(len(self.records(limit=3)), 3)
        self.error(self.s.get(self.api("/audit"), params={"since": "yesterday"}), 400, "bad_parameter")
        lines = (self.gw.data / "audit" / "audit.log").read_text().splitlines()
        self.assertTrue(all(json.loads(line)["protocol"] in ("rest", "s3") for line in lines))
        self.error(dana.get(self.api("/audit")), 403, "forbidden")

    def test_one_s3_operation_is_one_record(self):
        if "s3" not in self.gw.endpoints:
            self.skipTest("this build has no S3 front end")
        creds = self.gw.credentials
        self.assertEqual(self.s.post(self.api("/dirs/data/s3bucket")).status_code, 201)
        url = "http://%s/s3bucket/object.txt" % self.gw.endpoints["s3"]
        subprocess.run(["curl", "-sf", "--aws-sigv4", "aws:amz:us-east-1:s3",
                        "-u", "%s:%s" % (creds["access_key_id"], creds["secret_access_key"]),
                        "-H", "x-amz-content-sha256: " + sha256(b"via s3"),
                        "-X", "PUT", "--data-binary", "via s3", url], check=True, capture_output=True)
        self.assertEqual(self.s.get(self.api("/files/data/s3bucket/object.txt")).content, b"via s3")
        [rec] = self.exactly(1, path="data/s3bucket/object.txt", protocol="s3")
        self.assertEqual((rec["user"], rec["protocol"], rec["result"], rec["bytes"]), ("admin", "s3", "ok", 6))
        [read] = self.exactly(1, path="data/s3bucket/object.txt", protocol="rest")
        self.assertEqual(read["op"], "files.read")


class AuditRotationTest(RestCase):
    config = {"audit": {"dir": "elsewhere-audit", "max_file_bytes": 4096, "max_files": 2}}

    def test_rotated_by_size_in_the_configured_dir(self):
        # A relative dir is relative to the working directory, like data_dir.
        audit_dir = pathlib.Path(self.gw.tmp) / "elsewhere-audit"
        for i in range(60):
            self.assertEqual(self.s.put(self.api("/files/data/r%02d.txt" % i), data=b"x").status_code, 201)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (audit_dir / "audit.log.2").exists():
            time.sleep(0.05)
        names = sorted(p.name for p in audit_dir.iterdir())
        self.assertEqual(names, ["audit.log", "audit.log.1", "audit.log.2"])
        self.assertFalse((self.gw.data / "audit").exists())
        for name in names:
            self.assertLessEqual((audit_dir / name).stat().st_size, 4096)
        # The newest records are still queried through REST.
        r = self.s.get(self.api("/audit"), params={"path": "data/r59.txt"})
        self.assertEqual([rec["op"] for rec in r.json()["records"]], ["files.write"])


class TlsTest(RestCase):
    config = {"listeners": {"rest_tls": "127.0.0.1:0"}}

    def test_the_api_over_https(self):
        url = "https://" + self.gw.endpoints["rest_tls"]
        cert = str(self.gw.data / "tls" / "cert.pem")
        body = os.urandom(1 << 20)
        r = requests.put(url + API + "/files/data/over-tls.bin", data=body, auth=self.gw.admin, verify=cert)
        self.assertEqual(r.status_code, 201, r.text)
        with requests.Session() as s:  # keep-alive: several requests on one TLS connection
            s.auth = self.gw.admin  # verify per request: REQUESTS_CA_BUNDLE would override s.verify
            for _ in range(3):
                self.assertEqual(s.get(url + API + "/files/data/over-tls.bin", verify=cert).content, body)
            self.assertEqual(s.get(url + API + "/stat/data/over-tls.bin", verify=cert).json()["size"], len(body))
        # The plain listener serves the same namespace.
        self.assertEqual(self.s.get(self.api("/files/data/over-tls.bin")).content, body)
        out = subprocess.run(["curl", "-sf", "--cacert", cert, url + "/healthz"], capture_output=True, check=True)
        self.assertEqual(json.loads(out.stdout), {"status": "ok"})
        # Errors are the same JSON over TLS; an unknown CA is refused by the client.
        self.error(requests.get(url + API + "/info", verify=cert), 401, "unauthenticated")
        with self.assertRaises(requests.exceptions.SSLError):
            requests.get(url + "/healthz", verify=True)


class BadInputTest(RestCase):
    def test_paths_with_traversal_nul_or_double_encoding(self):
        self.assertEqual(self.put("data/safe.txt", b"safe").status_code, 201)
        for target in ["/files/data/%2e%2e/etc/passwd", "/files/data/%2E%2E", "/files/data/../data/safe.txt",
                       "/files/data/./safe.txt", "/files/data/%252e%252e/x", "/files/data/%25252e%25252e",
                       "/files/data/a%2fb", "/files/data/a%252fb", "/files/data/a%00b", "/files/data/a%2500b",
                       "/files/data//safe.txt", "/files/data/%zz"]:
            for method in ("GET", "PUT", "DELETE"):
                status, headers, body = self.raw(method, API + target, body=b"evil" if method == "PUT" else None)
                self.assertEqual(status, 400, (method, target, body))
                self.assertEqual(json.loads(body)["error"]["code"], "bad_path", (method, target))
        # Nothing changed.
        self.assertEqual(self.s.get(self.api("/files/data/safe.txt")).content, b"safe")
        self.assertEqual(sorted(e["name"] for e in self.s.get(self.api("/dirs/data")).json()["entries"]),
                         ["safe.txt"])
        status, _, body = self.raw("GET", "/nowhere")
        self.assertEqual((status, json.loads(body)["error"]["code"]), (404, "no_route"))
        status, headers, body = self.raw("PATCH", API + "/users")
        self.assertEqual((status, json.loads(body)["error"]["code"]), (405, "method_not_allowed"))
        self.assertEqual(headers["Allow"], "GET, POST")

    def test_json_bodies_are_strict(self):
        before = self.s.get(self.api("/users")).json()
        url = self.api("/users")
        cases = [
            (b'{"name": "eve", "password": ', 400, "invalid_json"),       # malformed
            (b'["eve"]', 400, "invalid_json"),                            # not an object
            (b'{"name": 7, "password": "x"}', 400, "invalid_json"),       # wrong type
            (b'{"name": "eve", "password": "x", "admin": "yes"}', 400, "invalid_json"),
            (b'{"name": "eve", "password": "x", "uid": -5}', 400, "invalid_json"),
            (b'{"name": "eve", "password": "x", "role": "root"}', 400, "invalid_json"),  # unknown field
            (b'{"name": "eve", "name": "mallory", "password": "x"}', 400, "invalid_json"),  # duplicate
            (b'{"password": "x"}', 400, "invalid_json"),                  # missing field
            (b'', 400, "invalid_json"),
            (b'{"name": "eve", "password": "' + b"x" * 70_000 + b'"}', 413, "too_large"),
        ]
        for body, status, code in cases:
            r = self.s.post(url, data=body, headers={"Content-Type": "application/json"})
            msg = self.error(r, status, code)
            if b"role" in body:
                self.assertIn('"role"', msg)
        # Oversized without a Content-Length (chunked), and not JSON at all.
        r = self.s.post(url, data=iter([b'{"name": "eve", "password": "', b"y" * 70_000, b'"}']),
                        headers={"Content-Type": "application/json"})
        self.error(r, 413, "too_large")
        r = self.s.post(url, data=b'{"name": "eve", "password": "x"}', headers={"Content-Type": "text/plain"})
        self.error(r, 415, "unsupported_media_type")
        self.assertEqual(self.s.get(self.api("/users")).json(), before)  # nothing changed

    def test_credentials_missing_wrong_revoked_and_not_admin(self):
        self.error(requests.get(self.api("/info")), 401, "unauthenticated")
        self.assertIn("WWW-Authenticate", requests.get(self.api("/info")).headers)
        self.error(requests.get(self.api("/info"), auth=("admin", "wrong")), 401, "unauthenticated")
        self.error(requests.get(self.api("/info"), headers={"Authorization": "Bearer weft_nope_nope"}),
                   401, "unauthenticated")
        self.error(requests.get(self.api("/info"), headers={"Authorization": "Basic !!!"}), 401, "unauthenticated")
        self.error(requests.get(self.api("/info"), headers={"Authorization": "Digest x"}), 401, "unauthenticated")
        fred = self.make_user("fred", "fred-pw")
        token = self.s.post(self.api("/tokens"), json={"user": "fred", "name": "t"}).json()
        self.assertEqual(self.s.delete(self.api("/tokens/" + token["id"])).status_code, 204)
        revoked = {"Authorization": "Bearer " + token["secret"]}
        self.error(requests.put(self.api("/files/data/by-revoked"), data=b"x", headers=revoked), 401, "unauthenticated")
        users_before = self.s.get(self.api("/users")).json()
        for method, path, body in [("POST", "/users", {"name": "x", "password": "y"}), ("GET", "/users", None),
                                   ("DELETE", "/users/admin", None), ("POST", "/tokens", {"user": "admin", "name": "n"}),
                                   ("PUT", "/exports/x", {"path": "/"}), ("DELETE", "/exports/data", None),
                                   ("GET", "/audit", None), ("PUT", "/users/fred/ids", {"uid": 0, "gid": 0})]:
            self.error(fred.request(method, self.api(path), json=body), 403, "forbidden")
        self.assertEqual(self.s.get(self.api("/users")).json(), users_before)
        self.assertEqual(len(self.s.get(self.api("/exports")).json()["exports"]), 1)
        self.assertEqual(self.s.get(self.api("/tokens")).json()["tokens"], [])
        self.error(self.s.get(self.api("/stat/data/by-revoked")), 404, "not_found")

    def test_query_parameters_are_checked(self):
        self.error(self.s.get(self.api("/dirs/data"), params={"bogus": "1"}), 400, "bad_parameter")
        self.error(self.s.get(self.api("/info"), params={"x": "1"}), 400, "bad_parameter")
        status, _, body = self.raw("GET", API + "/dirs/data?limit=1&limit=2")
        self.assertEqual((status, json.loads(body)["error"]["code"]), (400, "bad_parameter"))
        self.error(self.s.put(self.api("/files/data/x"), data=b"x", params={"mkdirs": "perhaps"}), 400, "bad_parameter")
        self.error(self.s.get(self.api("/stat/data/x")), 404, "not_found")

    def test_oversized_head_gets_a_json_error(self):
        status, _, body = self.raw("GET", API + "/info", headers={"X-Big": "a" * 40_000})
        self.assertEqual(status, 431)
        self.assertEqual(json.loads(body)["error"]["code"], "header_too_large")


class ObservabilityTest(RestCase):
    def test_probes(self):
        for path in ("/healthz", "/readyz"):
            r = requests.get(self.url + path)
            self.assertEqual(r.status_code, 200)
            self.assertIn(r.json()["status"], ("ok", "ready"))
        out = subprocess.run(["curl", "-sf", self.url + "/healthz"], capture_output=True, check=True).stdout
        self.assertEqual(json.loads(out), {"status": "ok"})

    def test_metrics_count_per_route(self):
        def sample(text, series):
            for line in text.splitlines():
                if line.startswith(series + " "):
                    return float(line.split()[-1])
            return 0.0

        self.assertEqual(self.put("data/m.bin", b"z" * 1000).status_code, 201)
        before = requests.get(self.url + "/metrics").text
        for _ in range(3):
            self.assertEqual(len(self.s.get(self.api("/files/data/m.bin")).content), 1000)
        self.error(self.s.get(self.api("/files/data/none")), 404, "not_found")
        r = requests.get(self.url + "/metrics")
        self.assertEqual(r.status_code, 200)
        self.assertTrue(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        after = r.text
        read = 'weft_rest_requests_total{route="files.read"}'
        self.assertEqual(sample(after, read) - sample(before, read), 4)
        self.assertEqual(sample(after, 'weft_rest_errors_total{route="files.read"}')
                         - sample(before, 'weft_rest_errors_total{route="files.read"}'), 1)
        self.assertEqual(sample(after, 'weft_rest_sent_bytes_total{route="files.read"}')
                         - sample(before, 'weft_rest_sent_bytes_total{route="files.read"}') >= 3000, True)
        self.assertGreaterEqual(sample(after, 'weft_rest_request_seconds_count{route="files.read"}'), 4)
        for family in ("weft_audit_records_total", "process_resident_memory_bytes", "weft_s3_requests_total"):
            self.assertIn("# TYPE " + family, after)

    def test_openapi_document_is_the_one_in_the_repository(self):
        r = requests.get(self.api("/openapi.json"))
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.headers["Content-Type"], "application/json")
        self.assertEqual(r.content, (SOURCE / "protocols/rest/openapi.json").read_bytes())


class MetricsHistoryTest(RestCase):
    """/api/v1/metrics/history, sampled every second: S3 and REST traffic
    shows in the byte counters' series as they grow."""

    config = {"metrics_history": {"interval_s": 1, "samples": 60}}

    def history(self, *names):
        r = requests.get(self.api("/metrics/history"), params=[("name", n) for n in names])  # open, like /metrics
        self.assertEqual(r.status_code, 200, r.text)
        body = r.json()
        self.assertEqual(body["interval_s"], 1)
        return body["series"]

    def last(self, series, name, **labels):
        for x in series:
            if x["name"] == name and all(x["labels"].get(k) == v for k, v in labels.items()):
                return x
        return None

    def wait_for_value(self, name, at_least, **labels):
        deadline = time.monotonic() + 10
        while True:
            x = self.last(self.history(name), name, **labels)
            if x and x["points"][-1][1] >= at_least or time.monotonic() > deadline:
                self.assertIsNotNone(x, name)
                self.assertGreaterEqual(x["points"][-1][1], at_least, x)
                return x
            time.sleep(0.3)

    def test_series_grow_with_traffic(self):
        import boto3
        import botocore.config
        s3 = boto3.client("s3", endpoint_url="http://" + self.gw.endpoints["s3"], region_name="us-east-1",
                          aws_access_key_id=self.gw.credentials["access_key_id"],
                          aws_secret_access_key=self.gw.credentials["secret_access_key"],
                          config=botocore.config.Config(s3={"addressing_style": "path"}))
        self.addCleanup(s3.close)
        s3.create_bucket(Bucket="hist")
        s3.put_object(Bucket="hist", Key="a.bin", Body=b"a" * 50000)
        self.assertEqual(len(s3.get_object(Bucket="hist", Key="a.bin")["Body"].read()), 50000)
        first = self.wait_for_value("weft_s3_sent_bytes_total", 50000, op="GetObject")
        self.assertEqual(first["kind"], "counter")
        received = self.wait_for_value("weft_s3_received_bytes_total", 50000, op="PutObject")
        self.assertEqual(received["kind"], "counter")
        # More traffic: the same series grows, sample by sample.
        self.assertEqual(self.put("data/hist.bin", b"r" * 30000).status_code, 201)
        for _ in range(2):
            self.assertEqual(len(s3.get_object(Bucket="hist", Key="a.bin")["Body"].read()), 50000)
            self.assertEqual(len(self.s.get(self.api("/files/data/hist.bin")).content), 30000)
        later = self.wait_for_value("weft_s3_sent_bytes_total", 150000, op="GetObject")
        points = later["points"]
        self.assertGreater(len(points), len(first["points"]))
        times = [t for t, _ in points]
        self.assertEqual(times, sorted(times))
        self.assertTrue(all(isinstance(t, int) for t in times))
        values = [v for _, v in points]
        self.assertEqual(values, sorted(values))  # a counter, cumulative
        self.wait_for_value("weft_rest_sent_bytes_total", 60000, route="files.read")
        # Several names at once; a gauge; a name without series is left out.
        series = self.history("weft_rest_sent_bytes_total", "process_open_fds", "weft_no_such_metric")
        self.assertEqual({x["name"] for x in series}, {"weft_rest_sent_bytes_total", "process_open_fds"})
        self.assertEqual(self.last(series, "process_open_fds")["kind"], "gauge")
        self.assertEqual({x["name"] for x in self.history()} >= {"weft_s3_requests_total", "weft_rest_requests_total"},
                         True)
        self.error(requests.get(self.api("/metrics/history"), params={"metric": "x"}), 400, "bad_parameter")


class PromtoolTest(RestCase):
    """/metrics passes `promtool check metrics` (parse and lint)."""

    def test_promtool_accepts_metrics(self):
        self.assertEqual(self.s.get(self.api("/info")).status_code, 200)
        text = requests.get(self.url + "/metrics").text
        promtool = shutil.which("promtool")
        if not promtool:
            print("SKIP: promtool is not installed (Debian package prometheus); /metrics not checked by it",
                  file=sys.stderr)
            self.skipTest("promtool is not installed")
        check = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True)
        # Exit 0: parsed, and no lint problems (names, units, help, types).
        self.assertEqual(check.returncode, 0, check.stdout.decode() + check.stderr.decode())


class ConsoleTest(RestCase):
    """The web console's files under /ui/, without credentials: index.html
    for /ui/, the hashed assets it names cached for good, the right content
    types, and clear errors for anything else."""

    def test_index_and_assets(self):
        r = requests.get(self.url + "/ui", allow_redirects=False)
        self.assertEqual((r.status_code, r.headers["Location"]), (301, "/ui/"))
        r = requests.get(self.url + "/ui/")
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.headers["Content-Type"], "text/html; charset=utf-8")
        self.assertEqual(r.headers["Cache-Control"], "no-cache")
        self.assertIn("default-src 'self'", r.headers["Content-Security-Policy"])
        self.assertEqual(requests.get(self.url + "/ui/index.html").content, r.content)
        assets = re.findall(r'(?:src|href)="(/ui/assets/[^"]+)"', r.text)
        self.assertEqual(sorted(a.rsplit(".", 1)[1] for a in assets), ["css", "js"], r.text)
        types = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}
        for asset in assets:
            r = requests.get(self.url + asset)
            self.assertEqual(r.status_code, 200, asset)
            self.assertEqual(r.headers["Content-Type"], types[asset.rsplit(".", 1)[1]])
            self.assertEqual(r.headers["Cache-Control"], "public, max-age=31536000, immutable")
            self.assertGreater(len(r.content), 100)
            head = requests.head(self.url + asset)
            self.assertEqual((head.status_code, head.headers["Content-Length"], head.content),
                             (200, str(len(r.content)), b""))
        # The console's script calls the API and nothing else: no other host.
        script = requests.get(self.url + [a for a in assets if a.endswith(".js")][0]).text
        self.assertNotRegex(script, r"https?://(?!www\.w3\.org/2000/svg)")

    def test_errors(self):
        self.error(requests.get(self.url + "/ui/assets/none.js"), 404, "not_found")
        self.error(requests.get(self.url + "/ui/settings"), 404, "not_found")
        r = requests.post(self.url + "/ui/", data=b"x")
        self.error(r, 405, "method_not_allowed")
        self.assertEqual(r.headers["Allow"], "GET, HEAD")
        # Next to /ui/ the API's routing is unchanged.
        self.error(requests.get(self.url + "/uix"), 404, "no_route")

    def test_counted_not_audited(self):
        def console_requests():
            for line in requests.get(self.url + "/metrics").text.splitlines():
                if line.startswith('weft_rest_requests_total{route="console"} '):
                    return float(line.split()[-1])
            return 0.0

        before = console_requests()
        for _ in range(3):
            self.assertEqual(requests.get(self.url + "/ui/").status_code, 200)
        self.assertEqual(console_requests() - before, 3)
        r = self.s.get(self.api("/audit"), params={"limit": 1000})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertFalse([x for x in r.json()["records"] if x["path"].startswith("/ui") or x["op"] == "console"])


class OpenApiDocumentTest(unittest.TestCase):
    """The document validates, and every documented operation is served."""

    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(WEFT)
        with urllib.request.urlopen(cls.gw.url + API + "/openapi.json") as r:
            cls.doc = json.loads(r.read())

    @classmethod
    def tearDownClass(cls):
        cls.gw.stop()

    def test_validates(self):
        try:
            from openapi_spec_validator import validate
        except ImportError:
            print("SKIP: openapi_spec_validator is not importable by %s" % sys.executable, file=sys.stderr)
            self.skipTest("openapi_spec_validator is not importable")
        validate(self.doc)

    def test_every_documented_operation_is_served(self):
        host, port = self.gw.endpoints["rest"].rsplit(":", 1)
        auth = "Basic " + base64.b64encode(("%s:%s" % self.gw.admin).encode()).decode()
        values = {"{path}": "data/probe", "{name}": "nobody", "{id}": "none", "{access_key}": "NONE",
                  "{key_id}": "0" * 64}
        count = 0
        for path, item in self.doc["paths"].items():
            for method in item:
                target = path
                for k, v in values.items():
                    target = target.replace(k, v)
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                conn.request(method.upper(), target, headers={"Authorization": auth})
                r = conn.getresponse()
                body = r.read()
                conn.close()
                code = json.loads(body)["error"]["code"] if r.status >= 400 and body else None
                self.assertNotIn(code, ("no_route", "method_not_allowed"), (method, path))
                count += 1
        self.assertGreater(count, 30)

    def test_undocumented_operations_are_not_served(self):
        host, port = self.gw.endpoints["rest"].rsplit(":", 1)
        for method, target in [("PATCH", "/api/v1/users"), ("GET", "/api/v2/info"), ("POST", "/api/v1/info"),
                               ("GET", "/api/v1/files"), ("PUT", "/api/v1/stat/data/x"), ("GET", "/")]:
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            conn.request(method, target)
            r = conn.getresponse()
            code = json.loads(r.read())["error"]["code"]
            conn.close()
            self.assertIn(code, ("no_route", "method_not_allowed"), (method, target))
            documented = self.doc["paths"].get(target, {})
            self.assertNotIn(method.lower(), documented)


def main():
    global WEFT, SOURCE
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--source", required=True)
    args, rest = parser.parse_known_args()
    WEFT = args.weft
    SOURCE = pathlib.Path(args.source)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
