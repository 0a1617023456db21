#!/usr/bin/env python3
"""The S3 front end driven by real clients: `weft serve` on port 0, then
awscli (pip's `python3 -m awscli` and Debian's /usr/bin/aws), boto3 (in the
interpreter running this file: ctest runs it with pip's python3 and with
Debian's /usr/bin/python3), s3cmd, rclone and curl. Every round trip
compares bytes and metadata. Raw requests signed by a small SigV4
implementation of this file (independent of the server's) check the error
answers byte-level clients cannot provoke.

A client that is not installed makes its tests print a SKIP line and pass.

Usage: s3_clients_test.py --weft PATH --add-user PATH [unittest arguments]
"""

import argparse
import base64
import datetime
import filecmp
import hashlib
import hmac
import http.client
import json
import os
import pathlib
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import xml.etree.ElementTree as ET

WEFT = None
ADD_USER = None
START_TIMEOUT = 30
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def skip(reason):
    print("SKIP: " + reason, flush=True)
    raise unittest.SkipTest(reason)


def boto3_version():
    import boto3
    return boto3.__version__


def have_boto3():
    try:
        import boto3  # noqa: F401
        return True
    except ImportError:
        return False


class Gateway:
    """One `weft serve` with only the S3 listener, in its own data dir."""

    def __init__(self, data, extra_args=()):
        self.data = pathlib.Path(data)
        self.extra_args = list(extra_args)
        self.proc = None

    def start(self):
        self.err = open(str(self.data) + ".stderr", "ab")
        self.proc = subprocess.Popen(
            [WEFT, "serve", "--data", str(self.data), "--s3", "127.0.0.1:0", "--rest", "off",
             "--nfs", "off", "--smb", "off", "--sftp", "off", *self.extra_args],
            stdout=subprocess.DEVNULL, stderr=self.err)
        path = self.data / "endpoints.json"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if path.exists():
                doc = json.loads(path.read_text())
                if doc.get("pid") == self.proc.pid:
                    host, port = doc["s3"].rsplit(":", 1)
                    self.host, self.port = host, int(port)
                    self.url = "http://%s:%d" % (self.host, self.port)
                    self.tls_url = "https://" + doc["s3_tls"] if "s3_tls" in doc else None
                    creds = json.loads((self.data / "credentials.json").read_text())
                    self.admin = (creds["access_key_id"], creds["secret_access_key"])
                    return self
            if self.proc.poll() is not None:
                raise AssertionError("weft exited with %d:\n%s" % (self.proc.returncode, self.stderr()))
            time.sleep(0.05)
        raise AssertionError("no endpoints.json after %d s" % START_TIMEOUT)

    def stderr(self):
        return pathlib.Path(str(self.data) + ".stderr").read_text(errors="replace")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()

    def add_user(self, name):
        """Adds a user while the gateway is stopped; returns (key, secret)."""
        out = subprocess.run([ADD_USER, str(self.data), name], check=True, capture_output=True, text=True)
        doc = json.loads(out.stdout)
        return doc["access_key_id"], doc["secret_access_key"]


GW = None
TMP = None


def setUpModule():
    global GW, TMP
    TMP = tempfile.mkdtemp(prefix="weft-s3-clients-")
    GW = Gateway(os.path.join(TMP, "data")).start()


def tearDownModule():
    if GW:
        GW.stop()
    shutil.rmtree(TMP, ignore_errors=True)


def client_env(key=None):
    """The environment of an AWS client: these credentials, no user config."""
    env = dict(os.environ)
    access, secret = key or GW.admin
    env.update({
        "AWS_ACCESS_KEY_ID": access,
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.path.join(TMP, "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": os.path.join(TMP, "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_PAGER": "",
    })
    return env


def random_file(path, size, seed):
    rng = random.Random(seed)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 1 << 20)
            f.write(rng.randbytes(n))
            left -= n


def md5_of(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --- A SigV4 signer of our own, for requests no SDK would send ----------

def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def hmac256(key, text):
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


class Raw:
    """Signed HTTP requests built by hand."""

    def __init__(self, gw, key=None):
        self.gw = gw
        self.access, self.secret = key or gw.admin

    def signing_key(self, date):
        k = hmac256(("AWS4" + self.secret).encode(), date)
        for part in ("us-east-1", "s3", "aws4_request"):
            k = hmac256(k, part)
        return k

    def sign(self, method, path, query=(), headers=None, payload_hash=None, body=b"", when=None,
             secret=None):
        when = when or datetime.datetime.now(datetime.timezone.utc)
        amz_date = when.strftime("%Y%m%dT%H%M%SZ")
        h = {k.lower(): v for k, v in (headers or {}).items()}
        h["host"] = "%s:%d" % (self.gw.host, self.gw.port)
        h["x-amz-date"] = amz_date
        h["x-amz-content-sha256"] = payload_hash or sha256_hex(body)
        names = sorted(h)
        q = "&".join("%s=%s" % (urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
                     for k, v in sorted(query))
        canonical = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), q,
                               "".join("%s:%s\n" % (n, " ".join(h[n].split())) for n in names),
                               ";".join(names), h["x-amz-content-sha256"]])
        scope = "%s/us-east-1/s3/aws4_request" % amz_date[:8]
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, sha256_hex(canonical.encode())])
        saved, self.secret = self.secret, secret or self.secret
        key = self.signing_key(amz_date[:8])
        self.secret = saved
        sig = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        h["authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
            self.access, scope, ";".join(names), sig)
        return h, key, sig, amz_date, scope

    def send(self, method, path, query=(), headers=None, body=b"", wire_path=None):
        conn = http.client.HTTPConnection(self.gw.host, self.gw.port, timeout=60)
        url = wire_path or urllib.parse.quote(path, safe="/-_.~")
        if query:
            url += "?" + urllib.parse.urlencode(list(query), quote_via=urllib.parse.quote)
        conn.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
        headers = dict(headers or {})
        if body and "content-length" not in headers:
            headers["content-length"] = str(len(body))
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def request(self, method, path, query=(), headers=None, body=b"", **sign_args):
        h, *_ = self.sign(method, path, query, headers, body=body, **sign_args)
        return self.send(method, path, query, h, body)


def error_code(body):
    try:
        return ET.fromstring(body).findtext("Code")
    except ET.ParseError:
        return None


# --- awscli --------------------------------------------------------------

def aws_variants():
    out = []
    # find_spec, not import: importing awscli sets AWS_DATA_PATH in this
    # process, which would leak into Debian's aws (another major version).
    import importlib.util
    if importlib.util.find_spec("awscli"):
        out.append(("pip awscli", [sys.executable, "-m", "awscli"]))
    else:
        print("SKIP: awscli is not importable by %s" % sys.executable, flush=True)
    if os.path.exists("/usr/bin/aws"):
        out.append(("debian aws", ["/usr/bin/aws"]))
    else:
        print("SKIP: /usr/bin/aws is not installed", flush=True)
    return out


class AwsCliTest(unittest.TestCase):
    def setUp(self):
        self.variants = aws_variants()
        if not self.variants:
            skip("no awscli")
        self.work = tempfile.mkdtemp(dir=TMP)

    def aws(self, argv, *args, check=True):
        r = subprocess.run(argv + ["--endpoint-url", GW.url, *args], env=client_env(),
                           capture_output=True, text=True, timeout=600)
        if check and r.returncode != 0:
            self.fail("aws %s failed (%d):\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
        return r

    def api(self, argv, *args):
        out = self.aws(argv, "s3api", *args).stdout
        return json.loads(out) if out.strip() else {}

    def test_cp_roundtrip_and_100mib_multipart(self):
        big = os.path.join(self.work, "big.bin")
        random_file(big, 100 << 20, 1)
        small = os.path.join(self.work, "small.txt")
        pathlib.Path(small).write_bytes(b"hello weft\n")
        for n, (name, argv) in enumerate(self.variants):
            with self.subTest(client=name):
                bucket = "cp-%d" % n
                self.aws(argv, "s3", "mb", "s3://" + bucket)
                self.aws(argv, "s3", "cp", small, "s3://%s/dir/small.txt" % bucket)
                self.aws(argv, "s3", "cp", big, "s3://%s/dir/big.bin" % bucket)
                head = self.api(argv, "head-object", "--bucket", bucket, "--key", "dir/big.bin")
                self.assertEqual(head["ContentLength"], 100 << 20)
                self.assertRegex(head["ETag"], r'^"[0-9a-f]{32}-\d+"$')  # multipart
                got = os.path.join(self.work, "got-%d.bin" % n)
                self.aws(argv, "s3", "cp", "s3://%s/dir/big.bin" % bucket, got)
                self.assertTrue(filecmp.cmp(big, got, shallow=False))
                self.aws(argv, "s3", "cp", "s3://%s/dir/small.txt" % bucket, got)
                self.assertEqual(pathlib.Path(got).read_bytes(), b"hello weft\n")
                small_head = self.api(argv, "head-object", "--bucket", bucket, "--key", "dir/small.txt")
                self.assertEqual(small_head["ETag"], '"%s"' % hashlib.md5(b"hello weft\n").hexdigest())

    def test_sync_ls_rm_recursive_1000_files(self):
        src = pathlib.Path(self.work) / "tree"
        rng = random.Random(5)
        for i in range(1000):
            p = src / ("d%d" % (i % 7)) / ("e%d" % (i % 3)) / ("file-%04d.txt" % i)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(rng.randbytes(rng.randrange(0, 3000)))
        for n, (name, argv) in enumerate(self.variants):
            with self.subTest(client=name):
                bucket = "sync-%d" % n
                self.aws(argv, "s3", "mb", "s3://" + bucket)
                self.aws(argv, "s3", "sync", str(src), "s3://%s/tree" % bucket, "--only-show-errors")
                listing = self.aws(argv, "s3", "ls", "--recursive", "s3://%s/tree/" % bucket).stdout
                self.assertEqual(len(listing.strip().splitlines()), 1000)
                top = self.aws(argv, "s3", "ls", "s3://%s/tree/" % bucket).stdout
                self.assertEqual(sorted(l.split()[-1] for l in top.splitlines()),
                                 ["d%d/" % i for i in range(7)])
                back = pathlib.Path(self.work) / ("back-%d" % n)
                self.aws(argv, "s3", "sync", "s3://%s/tree" % bucket, str(back), "--only-show-errors")
                cmp = filecmp.dircmp(src, back)
                self.assertEqual(self.differences(cmp), [])
                # Nothing changed: a second sync transfers nothing.
                again = self.aws(argv, "s3", "sync", str(src), "s3://%s/tree" % bucket).stdout
                self.assertEqual(again.strip(), "")
                self.aws(argv, "s3", "rm", "--recursive", "s3://%s/tree" % bucket, "--only-show-errors")
                self.assertEqual(self.aws(argv, "s3", "ls", "--recursive", "s3://%s/" % bucket, check=False).stdout, "")
                self.aws(argv, "s3", "rb", "s3://" + bucket)

    def differences(self, cmp):
        out = cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files
        for sub in cmp.subdirs.values():
            out += self.differences(sub)
        # dircmp compares shallowly; compare contents too.
        for f in cmp.common_files:
            if not filecmp.cmp(os.path.join(cmp.left, f), os.path.join(cmp.right, f), shallow=False):
                out.append(f)
        return out

    def test_s3api_operations(self):
        body = os.path.join(self.work, "body.bin")
        random_file(body, 300000, 9)
        for n, (name, argv) in enumerate(self.variants):
            with self.subTest(client=name):
                b = "api-%d" % n
                self.api(argv, "create-bucket", "--bucket", b)
                self.api(argv, "head-bucket", "--bucket", b)
                loc = self.api(argv, "get-bucket-location", "--bucket", b)
                self.assertIn(loc.get("LocationConstraint"), (None, ""))
                self.assertNotIn("Status", self.api(argv, "get-bucket-versioning", "--bucket", b))
                put = self.api(argv, "put-object", "--bucket", b, "--key", "docs/a b.bin", "--body", body,
                               "--content-type", "application/x-test", "--metadata", "color=blue,size=big",
                               "--cache-control", "no-cache", "--tagging", "project=weft&tier=hot")
                self.assertEqual(put["ETag"], '"%s"' % md5_of(body))
                head = self.api(argv, "head-object", "--bucket", b, "--key", "docs/a b.bin")
                self.assertEqual(head["ContentType"], "application/x-test")
                self.assertEqual(head["Metadata"], {"color": "blue", "size": "big"})
                self.assertEqual(head["CacheControl"], "no-cache")
                part = os.path.join(self.work, "range.bin")
                got = self.api(argv, "get-object", "--bucket", b, "--key", "docs/a b.bin",
                               "--range", "bytes=1000-1999", part)
                self.assertEqual(got["ContentLength"], 1000)
                self.assertEqual(pathlib.Path(part).read_bytes(), pathlib.Path(body).read_bytes()[1000:2000])
                self.api(argv, "get-object", "--bucket", b, "--key", "docs/a b.bin", "--range", "bytes=-100", part)
                self.assertEqual(pathlib.Path(part).read_bytes(), pathlib.Path(body).read_bytes()[-100:])
                tags = self.api(argv, "get-object-tagging", "--bucket", b, "--key", "docs/a b.bin")
                self.assertEqual(sorted((t["Key"], t["Value"]) for t in tags["TagSet"]),
                                 [("project", "weft"), ("tier", "hot")])
                self.api(argv, "put-object-tagging", "--bucket", b, "--key", "docs/a b.bin", "--tagging",
                         "TagSet=[{Key=k,Value=v}]")
                self.assertEqual(self.api(argv, "get-object-tagging", "--bucket", b, "--key", "docs/a b.bin")["TagSet"],
                                 [{"Key": "k", "Value": "v"}])
                self.api(argv, "delete-object-tagging", "--bucket", b, "--key", "docs/a b.bin")
                self.assertEqual(self.api(argv, "get-object-tagging", "--bucket", b, "--key", "docs/a b.bin")["TagSet"], [])
                self.api(argv, "copy-object", "--bucket", b, "--key", "copy/same.bin", "--copy-source", b + "/docs/a b.bin")
                same = self.api(argv, "head-object", "--bucket", b, "--key", "copy/same.bin")
                self.assertEqual(same["Metadata"], {"color": "blue", "size": "big"})
                self.assertEqual(same["ETag"], '"%s"' % md5_of(body))
                self.api(argv, "copy-object", "--bucket", b, "--key", "copy/replaced.bin", "--copy-source",
                         b + "/docs/a b.bin", "--metadata-directive", "REPLACE", "--metadata", "fresh=yes",
                         "--content-type", "text/plain")
                replaced = self.api(argv, "head-object", "--bucket", b, "--key", "copy/replaced.bin")
                self.assertEqual(replaced["Metadata"], {"fresh": "yes"})
                self.assertEqual(replaced["ContentType"], "text/plain")
                for k in ("x/1", "x/2", "x/y/3", "z"):
                    self.api(argv, "put-object", "--bucket", b, "--key", k, "--body", body)
                v2 = self.api(argv, "list-objects-v2", "--bucket", b, "--delimiter", "/")
                self.assertEqual([c["Prefix"] for c in v2["CommonPrefixes"]], ["copy/", "docs/", "x/"])
                self.assertEqual([c["Key"] for c in v2["Contents"]], ["z"])
                v1 = self.api(argv, "list-objects", "--bucket", b, "--prefix", "x/", "--delimiter", "/")
                self.assertEqual([c["Key"] for c in v1["Contents"]], ["x/1", "x/2"])
                self.assertEqual([c["Prefix"] for c in v1["CommonPrefixes"]], ["x/y/"])
                versions = self.api(argv, "list-object-versions", "--bucket", b, "--prefix", "x/")
                self.assertEqual([(v["Key"], v["VersionId"], v["IsLatest"]) for v in versions["Versions"]],
                                 [("x/1", "null", True), ("x/2", "null", True), ("x/y/3", "null", True)])
                deleted = self.api(argv, "delete-objects", "--bucket", b, "--delete",
                                   "Objects=[{Key=x/1},{Key=x/2,VersionId=null},{Key=never}]")
                self.assertEqual(sorted(d["Key"] for d in deleted["Deleted"]), ["never", "x/1", "x/2"])
                self.api(argv, "delete-objects", "--bucket", b, "--delete", "Objects=[{Key=x/y/3}],Quiet=true")
                self.assertNotIn("Contents", self.api(argv, "list-objects-v2", "--bucket", b, "--prefix", "x/"))
                self.multipart(argv, b, body)
                for k in ("docs/a b.bin", "copy/same.bin", "copy/replaced.bin", "z", "mp/object"):
                    self.api(argv, "delete-object", "--bucket", b, "--key", k)
                self.api(argv, "delete-bucket", "--bucket", b)

    def multipart(self, argv, b, body):
        part1 = os.path.join(self.work, "part1.bin")
        random_file(part1, 5 << 20, 11)
        up = self.api(argv, "create-multipart-upload", "--bucket", b, "--key", "mp/object",
                      "--content-type", "application/x-parts")
        uid = up["UploadId"]
        listed = self.api(argv, "list-multipart-uploads", "--bucket", b)
        self.assertEqual([(u["Key"], u["UploadId"]) for u in listed["Uploads"]], [("mp/object", uid)])
        e1 = self.api(argv, "upload-part", "--bucket", b, "--key", "mp/object", "--upload-id", uid,
                      "--part-number", "1", "--body", part1)["ETag"]
        e2 = self.api(argv, "upload-part", "--bucket", b, "--key", "mp/object", "--upload-id", uid,
                      "--part-number", "2", "--body", body)["ETag"]
        parts = self.api(argv, "list-parts", "--bucket", b, "--key", "mp/object", "--upload-id", uid)
        self.assertEqual([(p["PartNumber"], p["ETag"], p["Size"]) for p in parts["Parts"]],
                         [(1, e1, 5 << 20), (2, e2, 300000)])
        # Parts are not objects until completed.
        self.assertNotIn("Contents", self.api(argv, "list-objects-v2", "--bucket", b, "--prefix", "mp/"))
        done = self.api(argv, "complete-multipart-upload", "--bucket", b, "--key", "mp/object", "--upload-id", uid,
                        "--multipart-upload",
                        json.dumps({"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}))
        digests = bytes.fromhex(e1.strip('"')) + bytes.fromhex(e2.strip('"'))
        self.assertEqual(done["ETag"], '"%s-2"' % hashlib.md5(digests).hexdigest())
        got = os.path.join(self.work, "mp.bin")
        self.api(argv, "get-object", "--bucket", b, "--key", "mp/object", got)
        self.assertEqual(pathlib.Path(got).read_bytes(),
                         pathlib.Path(part1).read_bytes() + pathlib.Path(body).read_bytes())
        self.assertEqual(self.api(argv, "head-object", "--bucket", b, "--key", "mp/object")["ContentType"],
                         "application/x-parts")
        second = self.api(argv, "get-object", "--bucket", b, "--key", "mp/object", "--part-number", "2", got)
        self.assertEqual(pathlib.Path(got).read_bytes(), pathlib.Path(body).read_bytes())
        self.assertEqual(second["PartsCount"], 2)
        # Parts copied from byte ranges of objects.
        cid = self.api(argv, "create-multipart-upload", "--bucket", b, "--key", "mp/copied")["UploadId"]
        c1 = self.api(argv, "upload-part-copy", "--bucket", b, "--key", "mp/copied", "--upload-id", cid,
                      "--part-number", "1", "--copy-source", b + "/mp/object",
                      "--copy-source-range", "bytes=0-%d" % ((5 << 20) - 1))["CopyPartResult"]["ETag"]
        c2 = self.api(argv, "upload-part-copy", "--bucket", b, "--key", "mp/copied", "--upload-id", cid,
                      "--part-number", "2", "--copy-source", b + "/docs/a b.bin",
                      "--copy-source-range", "bytes=10-109")["CopyPartResult"]["ETag"]
        self.api(argv, "complete-multipart-upload", "--bucket", b, "--key", "mp/copied", "--upload-id", cid,
                 "--multipart-upload",
                 json.dumps({"Parts": [{"PartNumber": 1, "ETag": c1}, {"PartNumber": 2, "ETag": c2}]}))
        self.api(argv, "get-object", "--bucket", b, "--key", "mp/copied", got)
        self.assertEqual(pathlib.Path(got).read_bytes(),
                         pathlib.Path(part1).read_bytes() + pathlib.Path(body).read_bytes()[10:110])
        self.api(argv, "delete-object", "--bucket", b, "--key", "mp/copied")
        aborted = self.api(argv, "create-multipart-upload", "--bucket", b, "--key", "mp/aborted")["UploadId"]
        self.api(argv, "upload-part", "--bucket", b, "--key", "mp/aborted", "--upload-id", aborted,
                 "--part-number", "1", "--body", body)
        self.api(argv, "abort-multipart-upload", "--bucket", b, "--key", "mp/aborted", "--upload-id", aborted)
        self.assertNotIn("Uploads", self.api(argv, "list-multipart-uploads", "--bucket", b))
        r = self.aws(argv, "s3api", "list-parts", "--bucket", b, "--key", "mp/aborted", "--upload-id", aborted,
                     check=False)
        self.assertIn("NoSuchUpload", r.stderr)


# --- boto3 ---------------------------------------------------------------

class Boto3Test(unittest.TestCase):
    def setUp(self):
        if not have_boto3():
            skip("boto3 is not importable by %s" % sys.executable)
        import boto3
        from botocore.config import Config
        print("boto3 %s in %s" % (boto3.__version__, sys.executable), flush=True)
        self.s3 = boto3.client("s3", endpoint_url=GW.url, aws_access_key_id=GW.admin[0],
                               aws_secret_access_key=GW.admin[1], region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}))
        self.bucket = "boto-" + hashlib.md5(sys.executable.encode()).hexdigest()[:8]
        self.s3.create_bucket(Bucket=self.bucket)
        self.work = tempfile.mkdtemp(dir=TMP)

    def tearDown(self):
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
        for page in pages:
            for o in page.get("Contents", []):
                self.s3.delete_object(Bucket=self.bucket, Key=o["Key"])
        self.s3.delete_bucket(Bucket=self.bucket)

    def code(self, call, **kw):
        from botocore.exceptions import ClientError
        try:
            call(**kw)
        except ClientError as e:
            return e.response["Error"]["Code"]
        self.fail("no error")

    def test_put_get_with_metadata_and_checksums(self):
        data = random.Random(2).randbytes(1 << 20)
        put = self.s3.put_object(Bucket=self.bucket, Key="k/obj", Body=data, Metadata={"a": "1"},
                                 ContentType="application/x-weft")
        self.assertEqual(put["ETag"], '"%s"' % hashlib.md5(data).hexdigest())
        got = self.s3.get_object(Bucket=self.bucket, Key="k/obj")
        self.assertEqual(got["Body"].read(), data)
        self.assertEqual(got["Metadata"], {"a": "1"})
        self.assertEqual(got["ContentType"], "application/x-weft")
        for algo in ("CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"):
            key = "sum/" + algo
            try:
                r = self.s3.put_object(Bucket=self.bucket, Key=key, Body=data, ChecksumAlgorithm=algo)
            except Exception as e:
                # Algorithms that need botocore[crt], or that this boto3 does not know.
                if type(e).__name__ not in ("MissingDependencyException", "FlexibleChecksumError",
                                            "ParamValidationError"):
                    raise
                print("SKIP: boto3 %s cannot send %s: %s" % (boto3_version(), algo, e), flush=True)
                continue
            value = r.get("Checksum" + algo)
            self.assertTrue(value, algo)
            # Asked for, the stored checksum comes back, and botocore checks the body against it.
            got = self.s3.get_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED")
            self.assertEqual(got["Body"].read(), data)
            self.assertEqual(got.get("Checksum" + algo), value)

    def test_list_paginates_in_order(self):
        keys = sorted("p/%s/%03d" % (d, i) for d in ("a", "a.b", "a-c", "b") for i in range(60))
        for k in keys:
            self.s3.put_object(Bucket=self.bucket, Key=k, Body=b"x")
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix="p/",
                                                                  PaginationConfig={"PageSize": 37})
        self.assertEqual([o["Key"] for page in pages for o in page.get("Contents", [])], keys)
        top = self.s3.list_objects_v2(Bucket=self.bucket, Prefix="p/", Delimiter="/")
        self.assertEqual([c["Prefix"] for c in top["CommonPrefixes"]], ["p/a-c/", "p/a.b/", "p/a/", "p/b/"])
        v1 = self.s3.get_paginator("list_objects").paginate(Bucket=self.bucket, Prefix="p/",
                                                            PaginationConfig={"PageSize": 50})
        self.assertEqual([o["Key"] for page in v1 for o in page.get("Contents", [])], keys)

    def test_multipart_upload_file_and_download(self):
        from boto3.s3.transfer import TransferConfig
        src = os.path.join(self.work, "src.bin")
        random_file(src, 40 << 20, 3)
        cfg = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20)
        self.s3.upload_file(src, self.bucket, "mp/file.bin", Config=cfg)
        head = self.s3.head_object(Bucket=self.bucket, Key="mp/file.bin")
        self.assertTrue(head["ETag"].endswith('-5"'))
        dst = os.path.join(self.work, "dst.bin")
        self.s3.download_file(self.bucket, "mp/file.bin", dst, Config=cfg)
        self.assertTrue(filecmp.cmp(src, dst, shallow=False))
        attrs = self.s3.get_object_attributes(Bucket=self.bucket, Key="mp/file.bin", MaxParts=2,
                                              ObjectAttributes=["ETag", "ObjectParts", "ObjectSize"])
        self.assertEqual('"%s"' % attrs["ETag"], head["ETag"])
        self.assertEqual(attrs["ObjectSize"], 40 << 20)
        parts = attrs["ObjectParts"]
        self.assertEqual(parts["TotalPartsCount"], 5)
        self.assertTrue(parts["IsTruncated"])
        self.assertEqual(parts["NextPartNumberMarker"], 2)
        self.assertEqual([(p["PartNumber"], p["Size"]) for p in parts["Parts"]], [(1, 8 << 20), (2, 8 << 20)])
        rest = self.s3.get_object_attributes(Bucket=self.bucket, Key="mp/file.bin", PartNumberMarker=4,
                                             ObjectAttributes=["ObjectParts"])["ObjectParts"]
        self.assertFalse(rest["IsTruncated"])
        self.assertEqual([p["PartNumber"] for p in rest["Parts"]], [5])

    def test_virtual_hosted_style_with_curl(self):
        """BUCKET.localhost (the default base domain) addresses the bucket; curl
        signs with SigV4 and connects to the gateway whatever the name resolves to."""
        host = "%s.localhost:%d" % (self.bucket, GW.port)
        curl = ["curl", "-sS", "--fail-with-body", "--aws-sigv4", "aws:amz:us-east-1:s3",
                "--user", "%s:%s" % GW.admin, "--connect-to", "%s:%s:%d" % (host, GW.host, GW.port),
                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
        put = subprocess.run(curl + ["-T", "-", "http://%s/hosted/a%%20b" % host], input=b"virtual host",
                             capture_output=True)
        self.assertEqual(put.returncode, 0, put.stdout + put.stderr)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="hosted/a b")["Body"].read(), b"virtual host")
        got = subprocess.run(curl + ["http://%s/hosted/a%%20b" % host], capture_output=True)
        self.assertEqual(got.stdout, b"virtual host")
        listing = subprocess.run(curl + ["http://%s/?list-type=2&prefix=hosted" % host], capture_output=True)
        self.assertIn(b"<Key>hosted/a b</Key>", listing.stdout)

    def test_get_object_attributes(self):
        body = b"attributes " * 1000
        self.s3.put_object(Bucket=self.bucket, Key="attrs", Body=body, ChecksumAlgorithm="SHA256")
        attrs = self.s3.get_object_attributes(Bucket=self.bucket, Key="attrs",
                                              ObjectAttributes=["ETag", "Checksum", "ObjectSize", "StorageClass"])
        self.assertEqual(attrs["ETag"], hashlib.md5(body).hexdigest())
        self.assertEqual(attrs["ObjectSize"], len(body))
        self.assertEqual(attrs["StorageClass"], "STANDARD")
        self.assertEqual(attrs["Checksum"]["ChecksumSHA256"],
                         base64.b64encode(hashlib.sha256(body).digest()).decode())
        self.assertNotIn("ObjectParts", attrs)
        self.assertEqual(self.code(self.s3.get_object_attributes, Bucket=self.bucket, Key="missing",
                                   ObjectAttributes=["ETag"]), "NoSuchKey")

    def test_presigned_urls_with_urllib_and_curl(self):
        """Presigned with SigV2 (boto3's default here) and with SigV4."""
        import boto3
        import urllib.request
        from botocore.config import Config
        v4 = boto3.client("s3", endpoint_url=GW.url, aws_access_key_id=GW.admin[0],
                          aws_secret_access_key=GW.admin[1], region_name="us-east-1",
                          config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        for name, client in (("default", self.s3), ("s3v4", v4)):
            with self.subTest(signer=name):
                data = ("presigned by %s\n" % name).encode() * 100
                key = "pre/" + name
                params = {"Bucket": self.bucket, "Key": key}
                put_url = client.generate_presigned_url("put_object", Params=params, ExpiresIn=300)
                # An empty Content-Type: urllib would add one that is not signed.
                req = urllib.request.Request(put_url, data=data, method="PUT", headers={"Content-Type": ""})
                with urllib.request.urlopen(req) as r:
                    self.assertEqual(r.status, 200)
                get_url = client.generate_presigned_url("get_object", Params=params, ExpiresIn=300)
                with urllib.request.urlopen(get_url) as r:
                    self.assertEqual(r.read(), data)
                if shutil.which("curl"):
                    out = subprocess.run(["curl", "-sf", get_url], capture_output=True, check=True).stdout
                    self.assertEqual(out, data)
                    head_url = client.generate_presigned_url("head_object", Params=params, ExpiresIn=300)
                    out = subprocess.run(["curl", "-sfI", head_url], capture_output=True, check=True, text=True).stdout
                    self.assertIn("content-length: %d" % len(data), out.lower())
                else:
                    print("SKIP: curl is not installed", flush=True)
                expired = client.generate_presigned_url("get_object", Params=params, ExpiresIn=1)
                time.sleep(2.1)
                with self.assertRaises(urllib.error.HTTPError) as e:
                    urllib.request.urlopen(expired)
                self.assertEqual(e.exception.code, 403)
                body = e.exception.read()
                self.assertEqual(error_code(body), "AccessDenied")
                self.assertIn(b"Request has expired", body)

    def test_errors(self):
        self.assertEqual(self.code(self.s3.get_object, Bucket=self.bucket, Key="nope"), "NoSuchKey")
        self.assertEqual(self.code(self.s3.get_object, Bucket="no-such-bucket", Key="k"), "NoSuchBucket")
        self.s3.put_object(Bucket=self.bucket, Key="keep", Body=b"x")
        self.assertEqual(self.code(self.s3.delete_bucket, Bucket=self.bucket), "BucketNotEmpty")
        self.assertEqual(self.code(self.s3.get_object, Bucket=self.bucket, Key="keep", Range="bytes=5-"),
                         "InvalidRange")
        self.assertEqual(self.code(self.s3.put_object, Bucket=self.bucket, Key="k" * 1025, Body=b"x"),
                         "KeyTooLongError")
        etag = self.s3.head_object(Bucket=self.bucket, Key="keep")["ETag"]
        self.assertEqual(self.code(self.s3.get_object, Bucket=self.bucket, Key="keep", IfMatch='"0000"'),
                         "PreconditionFailed")
        self.assertEqual(self.code(self.s3.get_object, Bucket=self.bucket, Key="keep", IfNoneMatch=etag),
                         "304")
        self.assertEqual(self.code(self.s3.complete_multipart_upload, Bucket=self.bucket, Key="keep",
                                   UploadId="0" * 32, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": "x"}]}),
                         "NoSuchUpload")


# --- s3cmd and rclone ------------------------------------------------------

class S3cmdTest(unittest.TestCase):
    def setUp(self):
        if not shutil.which("s3cmd"):
            skip("s3cmd is not installed")
        self.work = tempfile.mkdtemp(dir=TMP)
        self.cfg = os.path.join(self.work, "s3cfg")
        pathlib.Path(self.cfg).write_text(
            "[default]\naccess_key = %s\nsecret_key = %s\nhost_base = 127.0.0.1:%d\n"
            "host_bucket = 127.0.0.1:%d\nuse_https = False\nsignature_v2 = False\n"
            "bucket_location = us-east-1\n" % (GW.admin[0], GW.admin[1], GW.port, GW.port))

    def s3cmd(self, *args):
        r = subprocess.run(["s3cmd", "-c", self.cfg, *args], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            self.fail("s3cmd %s failed:\n%s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout

    def test_put_get_ls(self):
        small = os.path.join(self.work, "small.bin")
        big = os.path.join(self.work, "big.bin")
        random_file(small, 12345, 4)
        random_file(big, 40 << 20, 5)  # multipart (15 MiB chunks)
        self.s3cmd("mb", "s3://s3cmd-bucket")
        self.s3cmd("put", small, "s3://s3cmd-bucket/dir/small.bin")
        self.s3cmd("put", big, "s3://s3cmd-bucket/dir/big.bin")
        listing = self.s3cmd("ls", "s3://s3cmd-bucket/dir/")
        self.assertIn("s3://s3cmd-bucket/dir/small.bin", listing)
        self.assertIn("s3://s3cmd-bucket/dir/big.bin", listing)
        for name, path in (("small.bin", small), ("big.bin", big)):
            got = os.path.join(self.work, "got-" + name)
            self.s3cmd("get", "s3://s3cmd-bucket/dir/" + name, got)
            self.assertTrue(filecmp.cmp(path, got, shallow=False))
        self.s3cmd("del", "--recursive", "--force", "s3://s3cmd-bucket/dir/")
        self.s3cmd("rb", "s3://s3cmd-bucket")


class RcloneTest(unittest.TestCase):
    def setUp(self):
        if not shutil.which("rclone"):
            skip("rclone is not installed")
        self.work = pathlib.Path(tempfile.mkdtemp(dir=TMP))

    def rclone(self, *args):
        env = dict(os.environ)
        env.pop("AWS_CA_BUNDLE", None)  # rclone 1.60 rejects it
        env.update({"RCLONE_CONFIG": str(self.work / "rclone.conf"),
                    "RCLONE_CONFIG_W_TYPE": "s3", "RCLONE_CONFIG_W_PROVIDER": "Other",
                    "RCLONE_CONFIG_W_ACCESS_KEY_ID": GW.admin[0],
                    "RCLONE_CONFIG_W_SECRET_ACCESS_KEY": GW.admin[1],
                    "RCLONE_CONFIG_W_ENDPOINT": GW.url, "RCLONE_CONFIG_W_REGION": "us-east-1"})
        r = subprocess.run(["rclone", *args], env=env, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            self.fail("rclone %s failed:\n%s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout

    def test_copy_check_roundtrip(self):
        src = self.work / "src"
        rng = random.Random(8)
        for i in range(50):
            p = src / ("sub%d" % (i % 4)) / ("f%02d.bin" % i)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(rng.randbytes(rng.randrange(0, 200000)))
        random_file(src / "large.bin", 30 << 20, 9)
        self.rclone("mkdir", "w:rclone-bucket")
        self.rclone("copy", str(src), "w:rclone-bucket/data")
        self.rclone("check", str(src), "w:rclone-bucket/data")  # sizes and MD5s
        back = self.work / "back"
        self.rclone("copy", "w:rclone-bucket/data", str(back))
        self.assertEqual(filecmp.dircmp(src, back).diff_files, [])
        for p in src.rglob("*"):
            if p.is_file():
                self.assertTrue(filecmp.cmp(p, back / p.relative_to(src), shallow=False), str(p))
        self.rclone("purge", "w:rclone-bucket")


# --- What a hostile or broken client gets ----------------------------------

class ErrorsTest(unittest.TestCase):
    def setUp(self):
        self.raw = Raw(GW)
        status, _, _ = self.raw.request("PUT", "/errors")
        self.assertIn(status, (200, 409))

    def expect(self, code, status, method, path, **kw):
        st, _, body = self.raw.request(method, path, **kw)
        self.assertEqual((st, error_code(body)), (status, code), body)
        return body

    def test_authentication(self):
        self.expect("SignatureDoesNotMatch", 403, "GET", "/errors", secret="wrong-secret")
        h, *_ = self.raw.sign("GET", "/errors")
        h["authorization"] = h["authorization"][:-4] + ("0000" if not h["authorization"].endswith("0000") else "1111")
        st, _, body = self.raw.send("GET", "/errors", headers=h)
        self.assertEqual((st, error_code(body)), (403, "SignatureDoesNotMatch"))
        st, _, body = Raw(GW, ("AKIDNOSUCHKEY", "x")).request("GET", "/")
        self.assertEqual((st, error_code(body)), (403, "InvalidAccessKeyId"))
        skewed = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
        self.expect("RequestTimeTooSkewed", 403, "GET", "/errors", when=skewed)
        st, _, body = self.raw.send("GET", "/errors")  # anonymous, export not public
        self.assertEqual((st, error_code(body)), (403, "AccessDenied"))

    def test_expired_presigned_url(self):
        when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=120)
        amz_date = when.strftime("%Y%m%dT%H%M%SZ")
        scope = "%s/us-east-1/s3/aws4_request" % amz_date[:8]
        query = [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", "%s/%s" % (GW.admin[0], scope)),
                 ("X-Amz-Date", amz_date), ("X-Amz-Expires", "60"), ("X-Amz-SignedHeaders", "host")]
        canonical = "\n".join(["GET", "/errors", "&".join("%s=%s" % (k, urllib.parse.quote(v, safe="-_.~"))
                                                            for k, v in sorted(query)),
                               "host:%s:%d\n" % (GW.host, GW.port), "host", "UNSIGNED-PAYLOAD"])
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, sha256_hex(canonical.encode())])
        sig = hmac.new(self.raw.signing_key(amz_date[:8]), to_sign.encode(), hashlib.sha256).hexdigest()
        query.append(("X-Amz-Signature", sig))
        st, _, body = self.raw.send("GET", "/errors", query=query, headers={"host": "%s:%d" % (GW.host, GW.port)})
        self.assertEqual((st, error_code(body)), (403, "AccessDenied"))
        self.assertIn(b"Request has expired", body)
        query[3] = ("X-Amz-Expires", "604801")
        st, _, body = self.raw.send("GET", "/errors", query=query, headers={"host": "%s:%d" % (GW.host, GW.port)})
        self.assertEqual((st, error_code(body)), (400, "AuthorizationQueryParametersError"))

    def test_names_and_keys(self):
        self.expect("InvalidBucketName", 400, "PUT", "/Bad_Bucket")
        self.expect("InvalidBucketName", 400, "PUT", "/ab")
        self.expect("NoSuchBucket", 404, "GET", "/no-such-bucket/key")
        self.expect("NoSuchKey", 404, "GET", "/errors/no-such-key")
        self.expect("KeyTooLongError", 400, "PUT", "/errors/" + "k" * 1025, body=b"x")
        self.expect("InvalidArgument", 400, "PUT", "/errors/a/../b", body=b"x")
        self.expect("InvalidArgument", 400, "PUT", "/errors/nul\x00byte", body=b"x")
        self.raw.request("PUT", "/errors/full/object", body=b"x")
        self.expect("BucketNotEmpty", 409, "DELETE", "/errors")
        self.expect("InvalidArgument", 400, "PUT", "/errors/full/object/child", body=b"x")
        self.expect("InvalidArgument", 400, "PUT", "/errors/full", body=b"x")
        st, _, _ = self.raw.request("GET", "/errors/full/object")
        self.assertEqual(st, 200)

    def chunked_put(self, key, chunks, break_at=None, trailer=None, signed=True):
        """An aws-chunked PUT; chunk `break_at` is sent altered after being signed."""
        payload = b"".join(chunks)
        headers = {"content-encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(payload))}
        if trailer:
            headers["x-amz-trailer"] = trailer[0]
        mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" if signed else "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        h, key_bytes, seed, amz_date, scope = self.raw.sign("PUT", key, headers=headers, payload_hash=mode)
        body, previous = b"", seed
        for i, data in enumerate(list(chunks) + [b""]):
            ext = b""
            if signed:
                to_sign = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, previous,
                                     sha256_hex(b""), sha256_hex(data)])
                previous = hmac.new(key_bytes, to_sign.encode(), hashlib.sha256).hexdigest()
                ext = b";chunk-signature=" + previous.encode()
            sent = bytes([data[0] ^ 1]) + data[1:] if i == break_at else data
            body += b"%x" % len(data) + ext + b"\r\n" + sent + (b"\r\n" if data else b"")
        if trailer:
            body += ("%s:%s\r\n" % trailer).encode()
        body += b"\r\n"
        h["content-length"] = str(len(body))
        return self.raw.send("PUT", key, headers=h, body=body)

    def test_streaming_uploads(self):
        chunks = [random.Random(i).randbytes(65536) for i in range(4)] + [b"tail"]
        st, _, body = self.chunked_put("/errors/stream", chunks)
        self.assertEqual(st, 200, body)
        st, _, got = self.raw.request("GET", "/errors/stream")
        self.assertEqual(got, b"".join(chunks))
        # A chunk signature that breaks mid-stream: refused, the old version stays.
        st, _, body = self.chunked_put("/errors/stream", [b"new" * 30000] * 3, break_at=2)
        self.assertEqual((st, error_code(body)), (403, "SignatureDoesNotMatch"))
        st, _, got = self.raw.request("GET", "/errors/stream")
        self.assertEqual(got, b"".join(chunks))
        # Unsigned chunks with a CRC32 trailer: good, then wrong.
        import zlib
        payload = [b"trailer data " * 1000, b"more"]
        crc = base64.b64encode(zlib.crc32(b"".join(payload)).to_bytes(4, "big")).decode()
        st, h, body = self.chunked_put("/errors/trailer", payload, trailer=("x-amz-checksum-crc32", crc), signed=False)
        self.assertEqual(st, 200, body)
        self.assertEqual(h.get("x-amz-checksum-crc32"), crc)
        st, _, body = self.chunked_put("/errors/bad-trailer", payload, trailer=("x-amz-checksum-crc32", "AAAAAA=="),
                                       signed=False)
        self.assertEqual((st, error_code(body)), (400, "BadDigest"))
        self.expect("NoSuchKey", 404, "GET", "/errors/bad-trailer")

    def test_digests_and_xml(self):
        self.expect("BadDigest", 400, "PUT", "/errors/md5", body=b"data",
                    headers={"content-md5": base64.b64encode(hashlib.md5(b"other").digest()).decode()})
        h, *_ = self.raw.sign("PUT", "/errors/sha", body=b"other")
        st, _, body = self.raw.send("PUT", "/errors/sha", headers=h, body=b"data")
        self.assertEqual((st, error_code(body)), (400, "XAmzContentSHA256Mismatch"))
        self.expect("NoSuchKey", 404, "GET", "/errors/md5")
        self.expect("NoSuchKey", 404, "GET", "/errors/sha")
        self.expect("MalformedXML", 400, "POST", "/errors", query=[("delete", "")], body=b"<Delete><Object>")
        self.expect("EntityTooLarge", 400, "POST", "/errors", query=[("delete", "")],
                    body=b"<Delete>" + b" " * (3 << 20) + b"</Delete>")
        self.expect("MalformedXML", 400, "POST", "/errors", query=[("delete", "")],
                    body=b"<Delete>" + b"<Object><Key>k</Key></Object>" * 1001 + b"</Delete>")

    def test_oversized_headers(self):
        self.expect("RequestHeaderSectionTooLarge", 400, "GET", "/errors", headers={"x-amz-meta-pad": "p" * 70000})

    def test_client_closing_mid_body_keeps_old_version(self):
        self.raw.request("PUT", "/errors/partial", body=b"version one")
        h, *_ = self.raw.sign("PUT", "/errors/partial", payload_hash="UNSIGNED-PAYLOAD")
        h["content-length"] = "100000"
        s = socket.create_connection((GW.host, GW.port))
        head = "PUT /errors/partial HTTP/1.1\r\n" + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
        s.sendall(head.encode() + b"y" * 5000)
        s.close()
        time.sleep(0.3)
        st, _, got = self.raw.request("GET", "/errors/partial")
        self.assertEqual(got, b"version one")

    def test_a_thousand_idle_connections(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < 1200:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
        idle = [socket.create_connection((GW.host, GW.port)) for _ in range(1000)]
        try:
            for i in range(20):
                st, _, _ = self.raw.request("PUT", "/errors/busy-%d" % i, body=b"x")
                self.assertEqual(st, 200)
        finally:
            for s in idle:
                s.close()


# --- Users -----------------------------------------------------------------

class TlsTest(unittest.TestCase):
    """--s3-tls: the same S3 API over HTTPS, with the self-signed certificate
    the gateway makes in DATA/tls, then with a certificate from the config."""

    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(os.path.join(TMP, "tls"), ["--s3-tls", "127.0.0.1:0"]).start()
        cls.cert = str(cls.gw.data / "tls" / "cert.pem")
        cls.work = tempfile.mkdtemp(dir=TMP)

    @classmethod
    def tearDownClass(cls):
        cls.gw.stop()

    def tls_env(self):
        env = client_env(self.gw.admin)
        env["AWS_CA_BUNDLE"] = self.cert
        return env

    def test_awscli_over_https_with_multipart(self):
        variants = aws_variants()
        if not variants:
            skip("no awscli")
        self.assertTrue(self.gw.tls_url)
        big = os.path.join(self.work, "big.bin")
        random_file(big, 20 << 20, 9)
        for n, (name, argv) in enumerate(variants):
            with self.subTest(client=name):
                def aws(*args):
                    r = subprocess.run(argv + ["--endpoint-url", self.gw.tls_url, "--ca-bundle", self.cert, *args],
                                       env=self.tls_env(), capture_output=True, text=True, timeout=600)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    return r.stdout
                bucket = "tls-%d" % n
                aws("s3", "mb", "s3://" + bucket)
                aws("s3", "cp", big, "s3://%s/big.bin" % bucket)
                got = os.path.join(self.work, "got-%d.bin" % n)
                aws("s3", "cp", "s3://%s/big.bin" % bucket, got)
                self.assertTrue(filecmp.cmp(big, got, shallow=False))
                # The same object over the plain listener: one namespace.
                r = subprocess.run(argv + ["--endpoint-url", self.gw.url, "s3api", "head-object", "--bucket", bucket,
                                           "--key", "big.bin"], env=client_env(self.gw.admin),
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(json.loads(r.stdout)["ContentLength"], 20 << 20)

    def test_boto3_presign_and_certificate_checks(self):
        if not have_boto3():
            skip("boto3 is not importable by %s" % sys.executable)
        import boto3
        from botocore.config import Config
        s3 = boto3.client("s3", endpoint_url=self.gw.tls_url, aws_access_key_id=self.gw.admin[0],
                          aws_secret_access_key=self.gw.admin[1], region_name="us-east-1", verify=self.cert,
                          config=Config(s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="tls-boto")
        s3.put_object(Bucket="tls-boto", Key="k.txt", Body=b"over tls")
        self.assertEqual(s3.get_object(Bucket="tls-boto", Key="k.txt")["Body"].read(), b"over tls")
        url = s3.generate_presigned_url("get_object", Params={"Bucket": "tls-boto", "Key": "k.txt"}, ExpiresIn=300)
        self.assertTrue(url.startswith("https://"))
        out = subprocess.run(["curl", "-sf", "--cacert", self.cert, url], capture_output=True, timeout=60)
        self.assertEqual((out.returncode, out.stdout), (0, b"over tls"))
        # Without the certificate the client refuses the server; plain HTTP
        # to the TLS port gets no S3 answer.
        out = subprocess.run(["curl", "-s", url], capture_output=True, timeout=60, env=dict(os.environ, CURL_CA_BUNDLE=""))
        self.assertEqual(out.returncode, 60)  # peer certificate cannot be authenticated
        plain = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                self.gw.tls_url.replace("https://", "http://") + "/tls-boto/k.txt"],
                               capture_output=True, text=True, timeout=60)
        self.assertNotEqual(plain.stdout, "200")

    def test_certificate_from_the_config(self):
        import ssl
        # The generated pair, copied elsewhere and named in the config.
        mine = pathlib.Path(self.work) / "mine"
        mine.mkdir()
        shutil.copy(self.cert, mine / "c.pem")
        shutil.copy(str(self.gw.data / "tls" / "key.pem"), mine / "k.pem")
        config = mine / "weft.json"
        config.write_text(json.dumps({"tls": {"cert": str(mine / "c.pem"), "key": str(mine / "k.pem")}}))
        gw = Gateway(os.path.join(TMP, "tls-config"), ["--s3-tls", "127.0.0.1:0", "--config", str(config)]).start()
        try:
            host, port = gw.tls_url[len("https://"):].rsplit(":", 1)
            served = ssl.get_server_certificate((host, int(port)))
            self.assertEqual(ssl.PEM_cert_to_DER_cert(served),
                             ssl.PEM_cert_to_DER_cert((mine / "c.pem").read_text()))
            self.assertFalse((gw.data / "tls").exists())  # nothing self-signed made
        finally:
            gw.stop()
        # A key that does not exist stops the start with a message naming it.
        config.write_text(json.dumps({"tls": {"cert": str(mine / "c.pem"), "key": str(mine / "none.pem")}}))
        r = subprocess.run([WEFT, "serve", "--data", os.path.join(TMP, "tls-bad"), "--s3", "127.0.0.1:0",
                            "--s3-tls", "127.0.0.1:0", "--rest", "off", "--nfs", "off", "--smb", "off",
                            "--sftp", "off", "--config", str(config)], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("none.pem", r.stderr)


class UsersTest(unittest.TestCase):
    """Two users with their own keys and buckets, denied across."""

    @classmethod
    def setUpClass(cls):
        if not have_boto3():
            skip("boto3 is not importable by %s" % sys.executable)
        cls.gw = Gateway(os.path.join(TMP, "users")).start()
        cls.gw.stop()
        cls.keys = {name: cls.gw.add_user(name) for name in ("alice", "bob")}
        cls.gw.start()

    @classmethod
    def tearDownClass(cls):
        cls.gw.stop()

    def client(self, name):
        import boto3
        from botocore.config import Config
        access, secret = self.keys[name] if name != "admin" else self.gw.admin
        return boto3.client("s3", endpoint_url=self.gw.url, aws_access_key_id=access, aws_secret_access_key=secret,
                            region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))

    def test_denied_across(self):
        from botocore.exceptions import ClientError
        alice, bob, admin = self.client("alice"), self.client("bob"), self.client("admin")
        alice.create_bucket(Bucket="alice-bucket")
        bob.create_bucket(Bucket="bob-bucket")
        alice.put_object(Bucket="alice-bucket", Key="private.txt", Body=b"alice's")
        bob.put_object(Bucket="bob-bucket", Key="private.txt", Body=b"bob's")
        for call, kw in ((bob.get_object, {"Bucket": "alice-bucket", "Key": "private.txt"}),
                         (bob.put_object, {"Bucket": "alice-bucket", "Key": "x", "Body": b"x"}),
                         (bob.list_objects_v2, {"Bucket": "alice-bucket"}),
                         (bob.delete_object, {"Bucket": "alice-bucket", "Key": "private.txt"}),
                         (bob.delete_bucket, {"Bucket": "alice-bucket"}),
                         (alice.get_object, {"Bucket": "bob-bucket", "Key": "private.txt"})):
            with self.assertRaises(ClientError) as e:
                call(**kw)
            self.assertEqual(e.exception.response["Error"]["Code"], "AccessDenied", (call, kw))
        self.assertEqual([b["Name"] for b in alice.list_buckets()["Buckets"]], ["alice-bucket"])
        self.assertEqual([b["Name"] for b in bob.list_buckets()["Buckets"]], ["bob-bucket"])
        self.assertEqual(sorted(b["Name"] for b in admin.list_buckets()["Buckets"]), ["alice-bucket", "bob-bucket"])
        self.assertEqual(alice.get_object(Bucket="alice-bucket", Key="private.txt")["Body"].read(), b"alice's")
        self.assertEqual(admin.get_object(Bucket="bob-bucket", Key="private.txt")["Body"].read(), b"bob's")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--add-user", required=True)
    args, rest = parser.parse_known_args()
    WEFT, ADD_USER = args.weft, args.add_user
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
