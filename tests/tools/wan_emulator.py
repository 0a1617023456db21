#!/usr/bin/env python3
"""A WAN emulator for tests and benchmarks: a TCP proxy that adds latency,
caps bandwidth, and cuts or refuses connections on command. This machine's
kernel has no netem, so the link is emulated in user space.

    wan_emulator.py --target HOST:PORT [--listen HOST:PORT] [--control HOST:PORT]
                    [--rtt-ms MS] [--rate BYTES_PER_S] [--buffer BYTES]

It prints one JSON line on stdout once listening:
    {"listen": "127.0.0.1:PORT", "control": "127.0.0.1:PORT"}

The link: each direction is one shared pipe of `rate` bytes per second (0:
unlimited) that all connections share, as on a real link, followed by a
one-way delay of rtt/2. Bytes read from one side are released to the other
when the pipe has transmitted them and the delay has passed; reading stops
while a connection has `buffer` bytes in flight in one direction (the
emulated window), so a sender feels back-pressure as over a real path.

Control socket: one command per line, one JSON answer per line.
    rtt MS            set the round-trip time (applies to bytes read from now)
    rate BPS          set the bandwidth of each direction (0: unlimited)
    cut               reset every open connection now
    cut_after BYTES   reset every open connection once BYTES more bytes have
                      been delivered towards the client (a cut mid-transfer)
    down              cut everything and refuse new connections (accepted,
                      then reset at once) until `up`
    up                accept again
    stats             {"connections", "accepted", "up_bytes", "down_bytes", ...}
SIGUSR1 does `cut`, for scripts without a control connection. Standard
library only.
"""

import argparse
import asyncio
import json
import signal
import socket
import struct
import sys
import time

READ_SIZE = 64 * 1024


def parse_addr(text):
    host, _, port = text.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def fmt_addr(sockname):
    return "%s:%d" % (sockname[0], sockname[1])


class Pipe:
    """One direction of the link: a serialising transmitter of `rate` bytes
    per second shared by every connection, then a propagation delay."""

    def __init__(self, link):
        self.link = link
        self.free_at = 0.0  # when the transmitter is idle again
        self.bytes = 0

    def schedule(self, n):
        """The monotonic time at which n bytes read now arrive at the far end."""
        now = time.monotonic()
        start = max(now, self.free_at)
        done = start + (n / self.link.rate if self.link.rate > 0 else 0.0)
        self.free_at = done
        return done + self.link.rtt / 2.0


class Link:
    def __init__(self, rtt_ms, rate, buffer):
        self.rtt = rtt_ms / 1000.0
        self.rate = rate
        self.buffer = buffer
        self.up = Pipe(self)    # client -> server
        self.down = Pipe(self)  # server -> client
        self.connections = set()
        self.accepted = 0
        self.refused = 0
        self.cuts = 0
        self.is_down = False
        self.cut_after = None  # down bytes still to deliver before a cut

    def stats(self):
        return {
            "connections": len(self.connections),
            "accepted": self.accepted,
            "refused": self.refused,
            "cuts": self.cuts,
            "up_bytes": self.up.bytes,
            "down_bytes": self.down.bytes,
            "rtt_ms": self.rtt * 1000.0,
            "rate": self.rate,
            "down": self.is_down,
        }

    def cut_all(self):
        for conn in list(self.connections):
            conn.reset()
        self.cuts += 1

    def delivered_down(self, n):
        if self.cut_after is None:
            return
        self.cut_after -= n
        if self.cut_after <= 0:
            self.cut_after = None
            self.cut_all()


def reset_socket(writer):
    """Close with RST (SO_LINGER 0): the peer sees a reset, not a clean end."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


class Connection:
    def __init__(self, link, client_reader, client_writer, server_reader, server_writer):
        self.link = link
        self.cr, self.cw = client_reader, client_writer
        self.sr, self.sw = server_reader, server_writer
        self.tasks = []
        self.closed = False

    def reset(self):
        if self.closed:
            return
        self.closed = True
        reset_socket(self.cw)
        reset_socket(self.sw)
        for t in self.tasks:
            t.cancel()

    async def run(self):
        up = asyncio.Queue()
        down = asyncio.Queue()
        self.in_flight = {id(up): 0, id(down): 0}
        self.room = {id(up): asyncio.Event(), id(down): asyncio.Event()}
        for ev in self.room.values():
            ev.set()
        self.tasks = [
            asyncio.ensure_future(self.read(self.cr, up, self.link.up)),
            asyncio.ensure_future(self.deliver(up, self.sw, self.link.up, False)),
            asyncio.ensure_future(self.read(self.sr, down, self.link.down)),
            asyncio.ensure_future(self.deliver(down, self.cw, self.link.down, True)),
        ]
        try:
            await asyncio.gather(*self.tasks)
        except (asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            self.link.connections.discard(self)
            if not self.closed:
                self.closed = True
                for w in (self.cw, self.sw):
                    w.close()

    async def read(self, reader, queue, pipe):
        key = id(queue)
        while True:
            await self.room[key].wait()
            try:
                data = await reader.read(READ_SIZE)
            except (ConnectionError, OSError):
                data = b""
            if not data:
                await queue.put((pipe.schedule(0), None))  # end of stream, after the data
                return
            self.in_flight[key] += len(data)
            if self.in_flight[key] >= self.link.buffer:
                self.room[key].clear()
            await queue.put((pipe.schedule(len(data)), data))

    async def deliver(self, queue, writer, pipe, towards_client):
        key = id(queue)
        while True:
            at, data = await queue.get()
            wait = at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                # A half close travels on: the other side may still answer.
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()
            pipe.bytes += len(data)
            self.in_flight[key] -= len(data)
            if self.in_flight[key] < self.link.buffer:
                self.room[key].set()
            if towards_client:
                self.link.delivered_down(len(data))


class Emulator:
    def __init__(self, args):
        self.target = parse_addr(args.target)
        self.link = Link(args.rtt_ms, args.rate, args.buffer)

    async def on_client(self, cr, cw):
        link = self.link
        cw.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if link.is_down:
            link.refused += 1
            reset_socket(cw)
            return
        try:
            sr, sw = await asyncio.open_connection(*self.target)
        except OSError:
            link.refused += 1
            reset_socket(cw)
            return
        sw.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link.accepted += 1
        conn = Connection(link, cr, cw, sr, sw)
        link.connections.add(conn)
        await conn.run()

    async def on_control(self, reader, writer):
        link = self.link
        while True:
            line = await reader.readline()
            if not line:
                break
            words = line.decode(errors="replace").split()
            answer = {"ok": True}
            try:
                cmd = words[0] if words else ""
                if cmd == "rtt":
                    link.rtt = float(words[1]) / 1000.0
                elif cmd == "rate":
                    link.rate = float(words[1])
                elif cmd == "cut":
                    link.cut_all()
                elif cmd == "cut_after":
                    link.cut_after = int(words[1])
                elif cmd == "down":
                    link.is_down = True
                    link.cut_all()
                elif cmd == "up":
                    link.is_down = False
                elif cmd == "stats":
                    answer.update(link.stats())
                else:
                    answer = {"ok": False, "error": "unknown command %r" % cmd}
            except (IndexError, ValueError):
                answer = {"ok": False, "error": "bad arguments: %r" % line.decode(errors="replace")}
            writer.write((json.dumps(answer) + "\n").encode())
            await writer.drain()
        writer.close()

    async def main(self, args):
        listen = parse_addr(args.listen)
        control = parse_addr(args.control)
        server = await asyncio.start_server(self.on_client, *listen)
        ctl = await asyncio.start_server(self.on_control, *control)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, self.link.cut_all)
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        print(json.dumps({"listen": fmt_addr(server.sockets[0].getsockname()),
                          "control": fmt_addr(ctl.sockets[0].getsockname())}), flush=True)
        await stop.wait()
        server.close()
        ctl.close()
        self.link.cut_all()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", required=True, help="HOST:PORT to forward to")
    p.add_argument("--listen", default="127.0.0.1:0")
    p.add_argument("--control", default="127.0.0.1:0")
    p.add_argument("--rtt-ms", type=float, default=0.0)
    p.add_argument("--rate", type=float, default=0.0, help="bytes per second per direction; 0: unlimited")
    p.add_argument("--buffer", type=int, default=16 << 20, help="bytes in flight per connection and direction")
    args = p.parse_args()
    asyncio.run(Emulator(args).main(args))


if __name__ == "__main__":
    sys.exit(main())
