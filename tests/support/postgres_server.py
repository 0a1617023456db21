"""A throwaway PostgreSQL server for the Python tests and benchmarks (what
postgres_server.cpp is to the C++ ones): Debian's newest installed server,
initdb'd in a temporary directory, listening on a free loopback port, run as
the `postgres` user when we are root; stopped and removed by stop().

    pg = PostgresServer()   # raises Unavailable (with why) where it cannot run
    pg.fresh_database()     # -> "postgresql://postgres@127.0.0.1:PORT/NAME"
"""

import glob
import os
import pathlib
import pwd
import shutil
import socket
import subprocess
import tempfile


class Unavailable(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self):
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
        if not found:
            raise Unavailable("PostgreSQL is not installed (Debian package postgresql)")
        self.bin = pathlib.Path(found[-1]).parent
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="weft-pg-"))
        self.prefix = []
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable("running as root and there is no `postgres` user to run the server as")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.prefix = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self._run("initdb", "-D", str(self.dir / "db"), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        self.started = False
        self.start()
        self.databases = 0

    def _run(self, tool, *args):
        r = subprocess.run([*self.prefix, str(self.bin / tool), *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise Unavailable("%s failed: %s" % (tool, (r.stdout + r.stderr)[-2000:]))

    def start(self):
        self._run("pg_ctl", "-D", str(self.dir / "db"), "-l", str(self.dir / "db" / "log"), "-w", "-t", "60", "-o",
                  "-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200" % (self.port, self.dir), "start")
        self.started = True

    def stop_server(self, mode="fast"):
        self._run("pg_ctl", "-D", str(self.dir / "db"), "-m", mode, "-w", "stop")
        self.started = False

    def fresh_database(self):
        self.databases += 1
        name = "weft%d" % self.databases
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return "postgresql://postgres@127.0.0.1:%d/%s" % (self.port, name)

    def sql(self, url, statement):
        """Runs one SQL statement on the database `url` names (psql)."""
        r = subprocess.run([str(self.bin / "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-c", statement, url],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("psql: " + r.stderr)
        return r.stdout

    def stop(self):
        if self.started:
            try:
                self.stop_server("immediate")
            except Unavailable:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
