#!/usr/bin/env python3
"""The HTTP server base over TLS, driven by real clients: curl, Python's ssl
and http.client, requests and websocket-client (the last two from Debian's
python3-requests and python3-websocket; a missing one prints SKIP).

Runs http_echo_server (tests/protocols/http/echo_server.cpp), which makes
its self-signed certificate with tls::ensure_self_signed, and checks that
each client verifies it (--cacert, cafile, verify=) for 127.0.0.1 and
localhost.

  tls_clients_test.py --server PATH/http_echo_server [unittest args]
"""
import argparse
import hashlib
import http.client
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

SERVER = None


class EchoServer:
    """http_echo_server on 127.0.0.1, stopped on exit."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([SERVER, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.proc.kill()
            raise RuntimeError("http_echo_server did not start: " + line + self.proc.stderr.read())
        self.port = int(line.split()[1])

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def curl(*args, data=None):
    return subprocess.run(["curl", "--silent", "--show-error", "--max-time", "30", *args],
                          input=data, capture_output=True, timeout=60)


class TlsClientsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="weft-tls-test-")
        cls.tls_dir = os.path.join(cls.tmp, "tls")
        cls.server = EchoServer("--tls-dir", cls.tls_dir, "--body-limit", "100000",
                                "--read-timeout-ms", "1000")
        cls.cert = os.path.join(cls.tls_dir, "cert.pem")
        cls.base = "https://127.0.0.1:%d" % cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def context(self):
        return ssl.create_default_context(cafile=self.cert)

    def tearDown(self):
        self.assertTrue(self.server.alive(), "the server died")

    def test_certificate_files(self):
        self.assertTrue(os.path.isfile(self.cert))
        key = os.path.join(self.tls_dir, "key.pem")
        self.assertEqual(os.stat(key).st_mode & 0o777, 0o600)
        self.assertEqual(sorted(os.listdir(self.tls_dir)), ["cert.pem", "key.pem"])

    def test_curl_verifies_the_certificate(self):
        r = curl("--cacert", self.cert, self.base + "/hello")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"GET /hello ")
        # The name localhost is in the certificate too.
        r = curl("--cacert", self.cert, "https://localhost:%d/by-name" % self.server.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"GET /by-name ")
        # Without the certificate, curl refuses the server (60: unverified).
        r = curl(self.base + "/untrusted")
        self.assertEqual(r.returncode, 60, r.stderr)

    def test_curl_keeps_the_connection_alive(self):
        r = curl("--cacert", self.cert, "--verbose", self.base + "/one", self.base + "/two",
                 self.base + "/three")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"GET /one GET /two GET /three ")
        self.assertEqual(r.stderr.count(b"Re-using existing connection"), 2, r.stderr)

    def test_curl_chunked_upload(self):
        body = os.urandom(50000).hex().encode()[:70000]
        r = curl("--cacert", self.cert, "-T", "-", self.base + "/upload", data=body)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"PUT /upload " + body)

    def test_http_client_keep_alive_and_chunked(self):
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=self.context(),
                                           timeout=30)
        remotes = set()
        for i in range(5):
            conn.request("GET", "/k%d" % i)
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            self.assertEqual(resp.read(), b"GET /k%d " % i)
            remotes.add(resp.getheader("X-Remote"))
        pieces = [b"alpha-", b"beta-" * 1000, b"gamma"]
        conn.request("PUT", "/chunks", body=iter(pieces), encode_chunked=True)
        resp = conn.getresponse()
        self.assertEqual(resp.read(), b"PUT /chunks " + b"".join(pieces))
        remotes.add(resp.getheader("X-Remote"))
        conn.close()
        self.assertEqual(len(remotes), 1, "all requests on one TLS connection: %s" % remotes)

    def test_refused_body_is_read_by_a_client_that_sent_it_all(self):
        body = b"x" * (2 << 20)  # over the 100000-byte limit
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as raw:
            with self.context().wrap_socket(raw, server_hostname="127.0.0.1") as s:
                s.sendall(b"PUT /big HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
                s.sendall(body)
                answer = b""
                while True:
                    try:
                        chunk = s.recv(65536)
                    except ssl.SSLEOFError:
                        break
                    if not chunk:
                        break
                    answer += chunk
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer[:200])

    def test_plain_http_to_the_tls_port_is_refused(self):
        r = curl("--write-out", "\n%{http_code}", "http://127.0.0.1:%d/plain" % self.server.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(b"GET /plain", r.stdout)  # never reached the handler
        self.assertIn(b"plain HTTP request", r.stdout)
        self.assertTrue(r.stdout.endswith(b"\n400"), r.stdout)
        # The server keeps serving TLS.
        r = curl("--cacert", self.cert, self.base + "/after")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"GET /after ")

    def test_a_client_that_never_handshakes_is_timed_out(self):
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=20) as s:
            try:
                data = s.recv(1024)
            except ConnectionResetError:
                data = b""
        took = time.monotonic() - started
        self.assertEqual(data, b"")
        self.assertGreater(took, 0.8)  # the server's read timeout is 1 s
        self.assertLess(took, 10)

    def test_tls_versions(self):
        ctx = self.context()
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                self.assertEqual(s.version(), "TLSv1.2")
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as raw:
            with self.context().wrap_socket(raw, server_hostname="127.0.0.1") as s:
                self.assertEqual(s.version(), "TLSv1.3")
        # A TLS 1.2 suite without AEAD (CBC with SHA-1, which OpenSSL's
        # defaults would accept for this certificate) is refused.
        ctx = self.context()
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers("ECDHE-ECDSA-AES128-SHA")
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as raw:
            with self.assertRaises(ssl.SSLError):
                ctx.wrap_socket(raw, server_hostname="127.0.0.1")

    def test_requests(self):
        try:
            import requests
        except ImportError:
            print("SKIP test_requests: python3-requests is not installed", file=sys.stderr)
            return
        with requests.Session() as session:
            for i in range(3):
                r = session.put(self.base + "/r%d" % i, data=b"payload", verify=self.cert, timeout=30)
                self.assertEqual(r.status_code, 200)
                self.assertEqual(r.content, b"PUT /r%d payload" % i)
            big = session.put(self.base + "/big", data=b"y" * 200000, verify=self.cert, timeout=30)
            self.assertEqual(big.status_code, 413)
        with self.assertRaises(requests.exceptions.SSLError):
            requests.get(self.base + "/", timeout=30)  # the system's CAs do not know it

    def test_websocket_over_tls(self):
        try:
            import websocket
        except ImportError:
            print("SKIP test_websocket_over_tls: python3-websocket is not installed", file=sys.stderr)
            return
        ws = websocket.create_connection("wss://127.0.0.1:%d/ws" % self.server.port, timeout=30,
                                         sslopt={"ca_certs": self.cert})
        ws.send("over tls")
        self.assertEqual(ws.recv(), "echo over tls")
        ws.close()


class CertificateReuseTest(unittest.TestCase):
    def test_a_second_start_reuses_the_pair(self):
        with tempfile.TemporaryDirectory(prefix="weft-tls-test-") as tmp:
            tls_dir = os.path.join(tmp, "tls")
            first = EchoServer("--tls-dir", tls_dir)
            first.close()
            digest = {n: file_digest(os.path.join(tls_dir, n)) for n in ("cert.pem", "key.pem")}
            second = EchoServer("--tls-dir", tls_dir)
            try:
                r = curl("--cacert", os.path.join(tls_dir, "cert.pem"),
                         "https://127.0.0.1:%d/again" % second.port)
                self.assertEqual(r.stdout, b"GET /again ", r.stderr)
            finally:
                second.close()
            for n, d in digest.items():
                self.assertEqual(file_digest(os.path.join(tls_dir, n)), d, n)

    def test_a_missing_certificate_is_named(self):
        with tempfile.TemporaryDirectory(prefix="weft-tls-test-") as tmp:
            missing = os.path.join(tmp, "absent.pem")
            r = subprocess.run([SERVER, "--cert", missing, "--key", missing], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 1)
            self.assertIn(missing, r.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    args, rest = parser.parse_known_args()
    SERVER = args.server
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
