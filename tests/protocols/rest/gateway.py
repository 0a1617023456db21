"""A `weft serve` process for the REST tests: started on port 0 in a scratch
data directory, with its endpoints and first-start admin credentials read
back, and stopped with SIGTERM. Standard library only."""

import json
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

START_TIMEOUT = 30
STOP_TIMEOUT = 10


class Gateway:
    def __init__(self, weft, protocols=("rest", "s3"), config=None, region=None, prefix="weft-rest-", args=(),
                 credentials=None):
        """`config`: a dict written as the --config file; `region`: --region;
        `args`: more `weft serve` flags; `credentials`: the admin's, for a
        node of a namespace that exists already (which writes none)."""
        self.weft = weft
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
        self.data = self.tmp / "data"
        if credentials is not None:
            self.data.mkdir()
            (self.data / "credentials.json").write_text(json.dumps(credentials))
        args = list(args)
        for p in ("s3", "rest", "nfs", "smb", "sftp"):
            args += ["--" + p, "127.0.0.1:0" if p in protocols else "off"]
        if config is not None:
            config_path = self.tmp / "weft.json"
            config_path.write_text(json.dumps(config))
            args += ["--config", str(config_path)]
        if region is not None:
            args += ["--region", region]
        self.log_path = self.tmp / "weft.log"
        self.command = [weft, "serve", "--data", str(self.data), *args]
        self._start("wb")
        self.credentials = json.loads((self.data / "credentials.json").read_text())
        self.url = "http://" + self.endpoints["rest"]
        self.admin = (self.credentials["user"], self.credentials["password"])

    def _start(self, log_mode):
        with open(self.log_path, log_mode) as log:
            # In its scratch dir, where relative paths of a config land.
            self.proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp)
        self.endpoints = self._wait_for_endpoints()

    def restart(self, crash=False, between=None):
        """SIGTERM (exit 0), or SIGKILL if `crash`, then `weft serve` again
        with the same data directory and flags (new ports); `between` is
        called while it is stopped."""
        started = time.monotonic()
        self.proc.send_signal(signal.SIGKILL if crash else signal.SIGTERM)
        code = self.proc.wait(timeout=STOP_TIMEOUT)
        assert code == (-signal.SIGKILL if crash else 0), self.log()
        self.stop_seconds = time.monotonic() - started
        if between is not None:
            between()
        self._start("ab")
        self.url = "http://" + self.endpoints["rest"]

    def _wait_for_endpoints(self):
        path = self.data / "endpoints.json"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if path.exists():
                doc = json.loads(path.read_text())
                if doc.get("pid") == self.proc.pid:
                    return doc
            if self.proc.poll() is not None:
                raise AssertionError("weft exited with %d:\n%s" % (self.proc.returncode, self.log()))
            time.sleep(0.05)
        raise AssertionError("no endpoints.json after %d s:\n%s" % (START_TIMEOUT, self.log()))

    def log(self):
        return self.log_path.read_text(errors="replace")

    def s3(self):
        """A boto3 client of the S3 endpoint as the admin (path style, no retries)."""
        import boto3
        import botocore.config
        return boto3.client(
            "s3", endpoint_url="http://" + self.endpoints["s3"], region_name="us-east-1",
            aws_access_key_id=self.credentials["access_key_id"],
            aws_secret_access_key=self.credentials["secret_access_key"],
            config=botocore.config.Config(s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1, "mode": "standard"}))

    def sftp(self):
        """(transport, SFTPClient) of the SFTP endpoint as the admin (paramiko)."""
        import paramiko
        host, _, port = self.endpoints["sftp"].rpartition(":")
        transport = paramiko.Transport((host, int(port)))
        transport.connect(username=self.admin[0], password=self.admin[1])
        return transport, paramiko.SFTPClient.from_transport(transport)

    def stop(self):
        """SIGTERM; returns the exit code. The data directory is removed."""
        code = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            code = self.proc.returncode
        shutil.rmtree(self.tmp, ignore_errors=True)
        return code


def close_checked(f):
    """Closes a paramiko SFTP file, raising the server's CLOSE failure
    (paramiko's own close() swallows it)."""
    import paramiko
    f.flush()
    f._closed = True  # paramiko sends no second CLOSE
    f.sftp._request(paramiko.sftp.CMD_CLOSE, f.handle)
