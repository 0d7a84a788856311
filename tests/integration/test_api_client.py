"""Helpers of the API tests (no tests here): a raw varlink client on an
AF_UNIX socket, and acctd started on a fake tree with its socket in a
directory of the test's own.

The client speaks the wire format directly (JSON + NUL), so that the tests
see exactly what the daemon sends, malformed input included.
"""
import contextlib
import json
import os
import socket
import tempfile
import time

import acctd

IFACE = "io.acctd.Accounting"
SERVICE = "org.varlink.service"


class Varlink:
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, method, parameters=None, raw_params=False, **flags):
        msg = {"method": method}
        if parameters is not None or raw_params:
            msg["parameters"] = parameters
        msg.update(flags)
        self.send_raw(json.dumps(msg).encode() + b"\0")

    def recv(self):
        """The next message (a dict); None at EOF. Raises socket.timeout."""
        while b"\0" not in self.buf:
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return None
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def at_eof(self, timeout=5.0):
        """True when the daemon closes the connection within timeout (any
        queued messages are read and dropped)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def call(self, method, parameters=None, **flags):
        self.send(method, parameters, **flags)
        return self.recv()

    def call_more(self, method, parameters=None, limit=100000):
        """All replies of a call with more, up to the one without continues."""
        self.send(method, parameters, more=True)
        out = []
        while len(out) < limit:
            r = self.recv()
            assert r is not None, "connection closed in the middle of a reply stream"
            out.append(r)
            if not r.get("continues"):
                break
        return out


def ok(reply):
    """The parameters of a successful reply."""
    assert reply is not None, "no reply (connection closed)"
    assert "error" not in reply, reply
    return reply["parameters"]


def error(reply, name):
    assert reply is not None, "no reply (connection closed)"
    assert reply.get("error") == name, reply
    return reply.get("parameters", {})


def socket_dir():
    """A directory that any user may traverse (the access tests connect as
    nobody; pytest's tmp_path is 0700)."""
    d = tempfile.mkdtemp(prefix="acctd-api-")
    os.chmod(d, 0o755)
    return d


@contextlib.contextmanager
def api_daemon(tmp_path, root, wait_ready=True, env=None, nofile=None, **conf):
    """acctd on `root` with its socket in a fresh directory; yields (daemon,
    socket path). conf: config overrides as in acctd.fast_config
    (api__max_message_size="64K")."""
    sdir = socket_dir()
    path = os.path.join(sdir, "io.acctd")
    work = tempfile.mkdtemp(prefix="daemon-", dir=str(tmp_path))  # a test may start several
    config = acctd.fast_config(work, **conf)
    d = acctd.Daemon(work, root, config, extra=["--socket", path], env=env, nofile=nofile)
    try:
        if wait_ready:
            d.wait_notify("READY=1", timeout=30)
        end = time.monotonic() + 10
        while not os.path.exists(path):
            assert d.proc.poll() is None, "acctd exited:\n" + d.logtext()
            assert time.monotonic() < end, "no socket at %s:\n%s" % (path, d.logtext())
            time.sleep(0.02)
        yield d, path
    finally:
        d.stop()
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(sdir)


def still_serves(path):
    """The daemon answers a fresh client."""
    with Varlink(path) as v:
        p = ok(v.call(SERVICE + ".GetInfo"))
        assert p["vendor"] == "acctd"


def acctd_sanitizer():
    """"thread" or "address" when acctd is a TSan or ASan build, else None. Their
    allocators keep freed memory (TSan's caches, ASan's quarantine), so an RSS
    that must come back down after a burst is checked in the plain build only."""
    with open(acctd.binary(), "rb") as f:
        data = f.read()
    return "thread" if b"__tsan_init" in data else "address" if b"__asan_init" in data else None


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
