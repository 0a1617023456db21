#!/usr/bin/env python3
"""The WAN emulator does what it says: measured round trips, measured
throughput, cuts and refusals are real. A plain TCP echo/sink/source server
on loopback stands behind it. Standard library only."""

import json
import socket
import socketserver
import subprocess
import sys
import threading
import time
import unittest
import pathlib

EMULATOR = pathlib.Path(__file__).with_name("wan_emulator.py")


class Backend(socketserver.ThreadingTCPServer):
    """Line protocol: 'echo' then echoes bytes; 'send N' sends N bytes and
    closes; 'sink' counts bytes until the client closes, then answers the count."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), BackendHandler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()


class BackendHandler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline().decode().split()
        try:
            if line[0] == "echo":
                while True:
                    data = self.rfile.read1(65536)  # also what came with the line
                    if not data:
                        return
                    self.request.sendall(data)
            elif line[0] == "send":
                n = int(line[1])
                block = b"x" * 65536
                while n > 0:
                    self.request.sendall(block[:min(n, len(block))])
                    n -= min(n, len(block))
            elif line[0] == "sink":
                total = 0
                while True:
                    data = self.rfile.read1(65536)
                    if not data:
                        break
                    total += len(data)
                self.request.sendall(b"%d\n" % total)
        except (ConnectionError, OSError):
            pass


class Emulator:
    def __init__(self, target, *args):
        self.proc = subprocess.Popen([sys.executable, str(EMULATOR), "--target", target, *args],
                                     stdout=subprocess.PIPE, text=True)
        info = json.loads(self.proc.stdout.readline())
        self.addr = self._split(info["listen"])
        self.control_addr = self._split(info["control"])
        self.control = socket.create_connection(self.control_addr)
        self.control_file = self.control.makefile("rw")

    @staticmethod
    def _split(text):
        host, _, port = text.rpartition(":")
        return host, int(port)

    def command(self, line):
        self.control_file.write(line + "\n")
        self.control_file.flush()
        answer = json.loads(self.control_file.readline())
        assert answer["ok"], answer
        return answer

    def connect(self, first_line):
        s = socket.create_connection(self.addr, timeout=20)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(first_line.encode() + b"\n")
        return s

    def stop(self):
        self.control_file.close()
        self.control.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


def recv_exactly(s, n):
    got = bytearray()
    while len(got) < n:
        data = s.recv(n - len(got))
        if not data:
            raise ConnectionError("closed after %d of %d bytes" % (len(got), n))
        got += data
    return bytes(got)


def recv_all(s):
    total = 0
    while True:
        data = s.recv(1 << 20)
        if not data:
            return total
        total += len(data)


def median_rtt(s, rounds=5):
    times = []
    for _ in range(rounds):
        t = time.monotonic()
        s.sendall(b"p")
        recv_exactly(s, 1)
        times.append(time.monotonic() - t)
    return sorted(times)[len(times) // 2]


class WanEmulatorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = Backend()
        cls.target = "127.0.0.1:%d" % cls.backend.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.backend.shutdown()
        cls.backend.server_close()

    def emulator(self, *args):
        e = Emulator(self.target, *args)
        self.addCleanup(e.stop)
        return e

    def test_latency_is_added_and_changes_on_command(self):
        e = self.emulator("--rtt-ms", "80")
        with e.connect("echo") as s:
            rtt = median_rtt(s)
            self.assertGreaterEqual(rtt, 0.078)
            self.assertLess(rtt, 0.2)
            e.command("rtt 20")
            median_rtt(s, 1)  # bytes read before the change may still carry the old delay
            rtt = median_rtt(s)
            self.assertGreaterEqual(rtt, 0.019)
            self.assertLess(rtt, 0.07)

    def test_bandwidth_is_capped_in_each_direction_and_shared(self):
        rate = 4 << 20
        e = self.emulator("--rate", str(rate), "--rtt-ms", "10")
        size = 6 << 20
        t = time.monotonic()
        with e.connect("send %d" % size) as s:
            self.assertEqual(recv_all(s), size)
        down = size / (time.monotonic() - t)
        self.assertGreater(down, rate * 0.8)
        self.assertLess(down, rate * 1.1)
        # Upstream: the sink counts what arrived.
        t = time.monotonic()
        with e.connect("sink") as s:
            s.sendall(b"y" * size)
            s.shutdown(socket.SHUT_WR)
            self.assertEqual(int(s.makefile().readline()), size)
        up = size / (time.monotonic() - t)
        self.assertGreater(up, rate * 0.8)
        self.assertLess(up, rate * 1.1)
        # Two connections share one link: together they get the rate, not twice it.
        t = time.monotonic()
        socks = [e.connect("send %d" % (size // 2)) for _ in range(2)]
        results = []
        threads = [threading.Thread(target=lambda s=s: results.append(recv_all(s))) for s in socks]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        shared = size / (time.monotonic() - t)
        for s in socks:
            s.close()
        self.assertEqual(sorted(results), [size // 2, size // 2])
        self.assertLess(shared, rate * 1.1)
        stats = e.command("stats")
        self.assertGreaterEqual(stats["down_bytes"], 2 * size)
        self.assertGreaterEqual(stats["up_bytes"], size)

    def test_cut_resets_open_connections(self):
        e = self.emulator()
        with e.connect("echo") as s:
            s.sendall(b"a")
            self.assertEqual(recv_exactly(s, 1), b"a")
            e.command("cut")
            with self.assertRaises((ConnectionError, OSError)):
                s.sendall(b"b")
                recv_exactly(s, 1)
        # A new connection works again.
        with e.connect("echo") as s:
            s.sendall(b"c")
            self.assertEqual(recv_exactly(s, 1), b"c")

    def test_cut_after_bytes_interrupts_a_transfer_midway(self):
        e = self.emulator("--rate", str(8 << 20))
        e.command("cut_after %d" % (1 << 20))
        got = 0
        with e.connect("send %d" % (8 << 20)) as s:
            try:
                got = recv_all(s)
                self.fail("the transfer ended cleanly after %d bytes" % got)
            except (ConnectionError, OSError):
                pass
        self.assertEqual(e.command("stats")["cuts"], 1)

    def test_down_after_bytes_cuts_midway_and_refuses_until_up(self):
        e = self.emulator("--rate", str(8 << 20))
        e.command("down_after %d" % (1 << 20))
        with e.connect("send %d" % (8 << 20)) as s:
            with self.assertRaises((ConnectionError, OSError)):
                recv_all(s)
        self.assertTrue(e.command("stats")["down"])
        with self.assertRaises((ConnectionError, OSError)):
            with e.connect("echo") as s:
                s.sendall(b"a")
                recv_exactly(s, 1)
        e.command("up")
        with e.connect("echo") as s:
            s.sendall(b"a")
            self.assertEqual(recv_exactly(s, 1), b"a")

    def test_down_refuses_until_up(self):
        e = self.emulator()
        e.command("down")
        with self.assertRaises((ConnectionError, OSError)):
            with e.connect("echo") as s:
                s.sendall(b"a")
                recv_exactly(s, 1)
        e.command("up")
        with e.connect("echo") as s:
            s.sendall(b"a")
            self.assertEqual(recv_exactly(s, 1), b"a")
        self.assertGreaterEqual(e.command("stats")["refused"], 1)

    def test_signal_cuts(self):
        e = self.emulator()
        with e.connect("echo") as s:
            s.sendall(b"a")
            self.assertEqual(recv_exactly(s, 1), b"a")
            e.proc.send_signal(__import__("signal").SIGUSR1)
            with self.assertRaises((ConnectionError, OSError)):
                for _ in range(50):
                    s.sendall(b"b")
                    recv_exactly(s, 1)
                    time.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
