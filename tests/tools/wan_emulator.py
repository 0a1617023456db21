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
    down_after BYTES  `down` once BYTES more bytes have been delivered
                      towards the client (an outage mid-transfer)
    up                accept again
    stats             {"connections", "accepted", "up_bytes", "down_bytes", ...}
SIGUSR1 does `cut`, for scripts without a control connection. Standard
library only.
"""

import argparse
import asyncio
import collections
import json
import signal
import socket
import struct
import sys
import time


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
    def __init__(self, rtt_ms, rate, buffer, target):
        self.target = target
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
        self.down_at_cut = False  # that cut takes the link down (down_after)

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
            self.is_down = self.is_down or self.down_at_cut
            self.cut_all()


def reset_transport(transport):
    """Close with RST (SO_LINGER 0): the peer sees a reset, not a clean end."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


class Half:
    """One direction of one connection: bytes read from `src` wait in order
    until the pipe has carried them, then are written to `dst`. Callbacks on
    the event loop, one timer per direction: no task wakes per read."""

    def __init__(self, conn, pipe, towards_client):
        self.conn = conn
        self.pipe = pipe
        self.towards_client = towards_client
        self.src = None  # the transport read from, set when its side connects
        self.dst = None  # the transport written to, set once both sides are connected
        self.queue = collections.deque()  # (arrival time, bytes, or None for end of stream)
        self.in_flight = 0
        self.reading_paused = False
        self.dst_full = False  # the destination's send buffer is full: wait for it
        self.timer = None
        self.end_queued = False
        self.ended = False  # end of stream delivered

    def received(self, data):
        if self.end_queued:
            return  # the destination is gone
        self.queue.append((self.pipe.schedule(len(data)), data))
        self.in_flight += len(data)
        if self.in_flight >= self.conn.link.buffer and not self.reading_paused:
            self.reading_paused = True
            self.src.pause_reading()
        self.arm()

    def end(self):
        """End of stream from src, delivered after the data (a half close travels on)."""
        if self.end_queued:
            return
        self.end_queued = True
        self.queue.append((self.pipe.schedule(0), None))
        self.arm()

    def drop(self):
        """The destination is gone: what waits for it is dropped."""
        self.stop()
        self.queue.clear()
        self.end_queued = True
        if not self.ended:
            self.ended = True
            self.conn.ended()

    def arm(self):
        if self.timer is None and self.queue and self.dst and not self.dst_full and not self.conn.closed:
            self.timer = asyncio.get_running_loop().call_at(self.queue[0][0], self.deliver)

    def deliver(self):
        self.timer = None
        now = asyncio.get_running_loop().time()
        while self.queue and self.queue[0][0] <= now and not self.dst_full and not self.conn.closed:
            _, data = self.queue.popleft()
            if data is None:
                try:
                    if self.dst.can_write_eof():
                        self.dst.write_eof()
                except OSError:
                    pass  # the destination is gone already
                self.ended = True
                self.conn.ended()
                return
            self.dst.write(data)
            self.pipe.bytes += len(data)
            self.in_flight -= len(data)
            if self.towards_client:
                self.conn.link.delivered_down(len(data))
        if self.reading_paused and self.in_flight < self.conn.link.buffer and not self.conn.closed:
            self.reading_paused = False
            self.src.resume_reading()
        self.arm()

    def stop(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class Side(asyncio.Protocol):
    """One socket of a connection (the client's or the server's)."""

    def __init__(self, conn, inbound, outbound, on_made=None):
        self.conn = conn
        self.inbound = inbound    # the half that carries what this side sends
        self.outbound = outbound  # the half that writes to this side
        self.on_made = on_made
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.inbound.src = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.on_made:
            self.on_made()

    def data_received(self, data):
        self.inbound.received(data)

    def eof_received(self):
        self.inbound.end()
        return True  # keep writing the other direction

    def connection_lost(self, exc):
        if not self.conn.started:  # the client left before the target answered
            self.conn.closed = True
            return
        # A reset or a close travels on as an end of stream after the data;
        # nothing more reaches this side.
        self.inbound.end()
        self.outbound.drop()

    def pause_writing(self):
        self.outbound.dst_full = True

    def resume_writing(self):
        self.outbound.dst_full = False
        self.outbound.arm()


class Connection:
    def __init__(self, link):
        self.link = link
        self.up = Half(self, link.up, False)
        self.down = Half(self, link.down, True)
        self.client = Side(self, self.up, self.down, self.client_made)
        self.server = Side(self, self.down, self.up)
        self.started = False  # both sides connected
        self.closed = False

    def client_made(self):
        """Accepted: connect to the target (what the client sends meanwhile
        waits), or refuse."""
        if self.link.is_down:
            self.refuse()
        else:
            asyncio.ensure_future(self.connect())

    def refuse(self):
        self.link.refused += 1
        self.closed = True
        reset_transport(self.client.transport)

    async def connect(self):
        try:
            await asyncio.get_running_loop().create_connection(lambda: self.server, *self.link.target)
        except OSError:
            self.refuse()
            return
        if self.closed:  # the client left meanwhile
            self.server.transport.close()
            return
        self.link.accepted += 1
        self.link.connections.add(self)
        self.start()

    def start(self):
        """Both sides are connected: bytes may flow."""
        self.up.dst, self.down.dst = self.server.transport, self.client.transport
        self.started = True
        self.up.arm()
        self.down.arm()

    def ended(self):
        if self.up.ended and self.down.ended:
            self.close()

    def close(self):
        """Both directions ended (or a side failed): close both sockets, sending what they hold."""
        self._end(lambda transport: transport.close())

    def reset(self):
        self._end(reset_transport)

    def _end(self, end_transport):
        if self.closed:
            return
        self.closed = True
        self.finish()
        for side in (self.client, self.server):
            if side.transport is not None:
                end_transport(side.transport)

    def finish(self):
        self.up.stop()
        self.down.stop()
        self.link.connections.discard(self)


class Emulator:
    def __init__(self, args):
        self.link = Link(args.rtt_ms, args.rate, args.buffer, parse_addr(args.target))

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
                elif cmd in ("cut_after", "down_after"):
                    link.cut_after = int(words[1])
                    link.down_at_cut = cmd == "down_after"
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
        loop = asyncio.get_running_loop()
        listen = parse_addr(args.listen)
        control = parse_addr(args.control)
        server = await loop.create_server(lambda: Connection(self.link).client, *listen)
        ctl = await asyncio.start_server(self.on_control, *control)
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
