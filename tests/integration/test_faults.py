"""Faults around the real acctd (issue 13, the hostile-client and fault
suite): connection churn, half messages, clients that never read while Watch
updates flow, a full disk under the state file, SIGKILL and restart.

For each: another client keeps being served meanwhile, the daemon keeps
running, and its descriptors (/proc/PID/fd) come back to what they were
before the fault once the fault's clients have left. (test_hostile.py has
the planted names, descriptor exhaustion, the state file off the loop and
scrape slots; test_api_protocol.py a single client that stops reading,
limits, a thousand connections and a stale socket after SIGTERM.)"""
import json
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

import acctd
from test_api_client import IFACE, SERVICE, Varlink, acctd_sanitizer, api_daemon, ok, rss_kib, still_serves

needs_root = pytest.mark.skipif(not acctd.is_root(), reason="needs root to mount a small tmpfs")


def tree(fs, n=20):
    with fs.batch():
        for i in range(n):
            fs.mkdir("/f.slice/u%03d.service" % i, memory=(1 + i % 16) << 20, cpu_usec=1000 * i, procs=[100 + i])


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


# [sampling] workers at its default (each may hold one descriptor opened for
# one read: test_sigkill_and_restart's count)
WORKERS = 2

def settle_fds(pid, timeout=3.0):
    """The descriptor count once it has stood still for a while (connections
    the daemon is closing, files of a pass)."""
    last, since = nfds(pid), time.monotonic()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        time.sleep(0.05)
        n = nfds(pid)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since > 0.5:
            break
    return last


def assert_fds_back(pid, base, timeout=10.0):
    """The daemon's descriptors return to `base` once the clients have gone
    (it notices a hang-up on its next turn of the loop)."""
    end = time.monotonic() + timeout
    n = nfds(pid)
    while n > base and time.monotonic() < end:
        time.sleep(0.05)
        n = nfds(pid)
    assert n <= base, "acctd holds %d descriptors, %d before the clients came: %s" % (
        n, base, sorted(os.readlink("/proc/%d/fd/%s" % (pid, f)) for f in os.listdir("/proc/%d/fd" % pid))[-20:])


class Served(threading.Thread):
    """Another client, making calls all along on one connection: every call
    must be answered (within the socket timeout), without an error."""

    def __init__(self, path, cgroup="/f.slice"):
        super().__init__(daemon=True)
        self.path, self.cgroup = path, cgroup
        self.stop = threading.Event()
        self.calls = 0
        self.error = None

    def run(self):
        try:
            with Varlink(self.path, timeout=20) as v:
                while not self.stop.is_set():
                    r = v.call(IFACE + ".Get", {"cgroup": self.cgroup})
                    assert r is not None and "error" not in r, r
                    self.calls += 1
                    time.sleep(0.005)
        except Exception as e:  # noqa: BLE001: reported by finish()
            self.error = e

    def served(self, timeout=10.0):
        """Assert that it gets another reply now (while the fault goes on)."""
        n = self.calls
        end = time.monotonic() + timeout
        while self.calls <= n:
            assert self.error is None, "the other client failed: %r" % (self.error,)
            assert time.monotonic() < end, "the other client got no reply in %.0f s" % timeout
            time.sleep(0.01)

    def finish(self):
        self.served(timeout=60)
        self.stop.set()
        self.join(30)
        assert self.error is None, "the other client failed: %r" % (self.error,)


GET = json.dumps({"method": IFACE + ".Get", "parameters": {"cgroup": "/f.slice"}}).encode() + b"\0"


def test_connection_churn(fakecg, tmp_path):
    """3,000 connections opened and closed one after another: a third close
    at once, a third in the middle of a message (part of a call sent, no
    NUL), a third right after sending a whole call (its reply in flight).
    Another client is served throughout; afterwards the daemon holds the
    descriptors it held before."""
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        still_serves(path)
        d.next_state(2)
        base = settle_fds(d.proc.pid)
        other = Served(path)
        other.start()
        rng = random.Random(13)
        for i in range(3000):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            if i % 3 == 1:
                s.sendall(GET[:rng.randrange(1, len(GET) - 1)])
            elif i % 3 == 2:
                s.sendall(GET)
            if i % 2:  # half of them reset rather than close in order
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
            s.close()
            if i % 300 == 299:
                other.served()
        other.finish()
        assert d.proc.poll() is None
        still_serves(path)
        assert_fds_back(d.proc.pid, base)


def test_half_messages_then_close(fakecg, tmp_path):
    """200 clients each send part of a message (up to 64 KiB, some ending
    inside a UTF-8 character, none terminated) and hold it: another client
    is served meanwhile; when they all hang up at once the daemon frees what
    it buffered for them (RSS back within 16 MiB of before) and its
    descriptors."""
    tree(fakecg)
    asan = {"ASAN_OPTIONS": (os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8").lstrip(":")}
    with api_daemon(tmp_path, fakecg.root, env=asan) as (d, path):
        still_serves(path)
        d.next_state(2)
        base = settle_fds(d.proc.pid)
        rss0 = rss_kib(d.proc.pid)
        other = Served(path)
        other.start()
        rng = random.Random(7)
        held = []
        for i in range(200):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            body = '{"method":"%s.Get","parameters":{"cgroup":"/%s' % (IFACE, "\u00e9" * rng.randrange(1, 32 << 10))
            data = body.encode()
            if i % 2:
                data = data[:-1]  # ends inside a two-byte character
            s.sendall(data)
            held.append(s)
            if i % 50 == 49:
                other.served()
        still_serves(path)
        for s in held:
            s.close()
        other.finish()
        assert d.proc.poll() is None
        assert_fds_back(d.proc.pid, base)
        grown = rss_kib(d.proc.pid) - rss0
        # RSS in the plain build only: the sanitizers' allocators keep what was
        # freed (TSan's, and ASan's quarantine and size-class caches: 16.4 MiB
        # once, in a clean run). Under ASan, LeakSanitizer at exit checks that
        # the buffers were freed.
        if not acctd_sanitizer():
            assert grown < 16 << 10, "RSS %d KiB above before the half messages, after they left" % grown


@pytest.mark.parametrize("fakecg", [{"mode": "v2", "write_mode": "inplace"}], indirect=True)
def test_watchers_that_never_read(fakecg, tmp_path):
    """20 clients Watch 50 cgroups that change every 20 ms, at 20 ms, and
    never read: the daemon writes them an update only when the previous one
    has left, so what it holds for each stays one update (its RSS grows by
    less than two updates' worth per watcher, + 16 MiB). Another client is
    served meanwhile; when they leave, the daemon's descriptors are back
    where they were and it serves on. (The RSS bound is not asserted under
    TSan, whose shadow memory follows every byte touched.) (More watchers at 10 ms, which the
    daemon answers each with a whole update, keep an ASan build on this
    loaded 2-CPU machine busy for tens of seconds: issue 13 item 2, another
    helper's.)"""
    n, watchers = 50, 20
    tree(fakecg, n)
    asan = {"ASAN_OPTIONS": (os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8").lstrip(":")}
    with api_daemon(tmp_path, fakecg.root, env=asan) as (d, path):
        still_serves(path)
        d.next_state(2)
        base = settle_fds(d.proc.pid)
        rss0 = rss_kib(d.proc.pid)
        with Varlink(path) as v:
            v.send(IFACE + ".Watch", {"prefix": "/f.slice", "interval_ms": 20}, more=True)
            update_kib = len(json.dumps(ok(v.recv()))) >> 10  # the first update: every cgroup
        other = Served(path)
        other.start()
        mute = []
        for _ in range(watchers):
            v = Varlink(path, timeout=60)
            v.send(IFACE + ".Watch", {"prefix": "/f.slice", "interval_ms": 20}, more=True)
            mute.append(v)
        end = time.monotonic() + 3
        k = 0
        while time.monotonic() < end:
            k += 1
            with fakecg.batch():
                for i in range(n):
                    fakecg.set_memory("/f.slice/u%03d.service" % i, ((1 + i % 16) << 20) + (k << 12))
            time.sleep(0.02)
            if k % 10 == 0:
                other.served(timeout=60)
        grown = rss_kib(d.proc.pid) - rss0
        # Not under TSan: its shadow memory grows with every byte the daemon
        # touches (several times the application's), and its allocator keeps
        # what was freed, so a TSan RSS says nothing about what is held for a
        # watcher (24.8 MB once in CI against this 24.5 MB bound). The plain
        # build and ASan (quarantine capped above) assert it.
        if acctd_sanitizer() != "thread":
            assert grown < watchers * 2 * update_kib + (16 << 10), \
                "RSS grew by %d KiB with %d watchers that never read (updates of %d KiB)" % (grown, watchers, update_kib)
        other.served(timeout=60)
        for v in mute:
            v.close()
        other.finish()
        assert d.proc.poll() is None
        still_serves(path)
        assert_fds_back(d.proc.pid, base, timeout=30)


# ---- the state file on a full disk ------------------------------------------------

def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size, "acctd-test-full", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs: %s" % r.stderr.strip())


def fill(path):
    """Fill the file system at `path` up to the last byte, adding to the
    filler of an earlier call (a top-up: what was freed since is taken
    too); returns the filler."""
    filler = os.path.join(path, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 16, 4096, 1):  # down to the last byte
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    return filler


@needs_root
def test_state_file_on_a_full_disk(fakecg, tmp_path):
    """The state file's directory on a 1 MiB tmpfs that fills up: acctd keeps
    serving and passing, logs the failure once (not at every pass), leaves the
    last complete state file as it was and no temporary file behind; once
    space returns it writes again, says so, and its descriptors are what they
    were before."""
    tree(fakecg, 40)
    full = tmp_path / "full"
    mount_tmpfs(full, "1m")
    try:
        state = full / "state.json"
        conf = acctd.fast_config(tmp_path)
        with acctd.Daemon(tmp_path, fakecg.root, conf, extra=["--state-file", str(state)]) as d:
            d.state = str(state)
            d.wait_notify("READY=1", timeout=30)
            before = d.next_state(2)
            base = settle_fds(d.proc.pid)
            other = Served(d.socket)
            other.start()
            # Topped up until a write fails: a fill that comes while a
            # write's temporary file is whole but not yet renamed leaves the
            # old file's space free after the rename, room for every later
            # write of the same size (seen under ASan, three tests at a time).
            filler = fill(str(full))
            end = time.monotonic() + 30
            while "Failed to write " + str(state) not in d.logtext():
                assert time.monotonic() < end, "no failure logged with the disk full:\n" + d.logtext()[-2000:]
                time.sleep(0.05)
                fill(str(full))
            other.served()
            stuck = json.loads(state.read_text())["daemon"]["passes"]
            # passes go on (Status), the file stays whole and as it was
            with Varlink(d.socket) as v:
                p0 = ok(v.call(IFACE + ".Status"))["status"]["reconciliation"]["passes"]
                time.sleep(1.0)
                p1 = ok(v.call(IFACE + ".Status"))["status"]["reconciliation"]["passes"]
            assert p1 >= p0 + 3, "passes %d -> %d in 1 s with the disk full" % (p0, p1)
            doc = json.loads(state.read_text())
            assert doc["daemon"]["passes"] == stuck
            assert doc["daemon"]["passes"] >= before["daemon"]["passes"]
            assert sorted(os.listdir(full)) == ["filler", "state.json"]
            log = d.logtext()
            assert log.count("Failed to write " + str(state)) == 1, log[-3000:]
            os.unlink(filler)
            d.wait(lambda doc: doc["daemon"]["passes"] > stuck + 1, timeout=10, what="writes after space returned")
            d.wait_log("again, after")
            other.finish()
            assert_fds_back(d.proc.pid, base)
            assert sorted(os.listdir(full)) == ["state.json"]
    finally:
        subprocess.run(["umount", "-l", str(full)], check=False)


# ---- SIGKILL and restart ---------------------------------------------------------------

def test_sigkill_and_restart(fakecg, tmp_path):
    """acctd killed with SIGKILL at random moments of its passes and state
    file writes (ACCTD_TEST_STATE_WRITE_DELAY_MS stretches the writes), and
    started again on the same state file and socket each time: the state
    file is always a whole document; at most the one temporary file of a
    write killed between naming it and the rename is left beside it, and the
    restarted daemon removes it (once seen under TSan); the stale socket is
    replaced, and the restarted daemon serves. Its descriptors settle where
    the first daemon's did."""
    tree(fakecg, 300)
    work = tmp_path / "w"
    work.mkdir()
    conf = acctd.fast_config(tmp_path)
    sock = str(tmp_path / "io.acctd")
    rng = random.Random(11)
    base = None
    temp = re.compile(r"^\.state\.json\.[0-9a-f]{16}$")
    # as a kill between naming the finished file and the rename leaves it
    left = [".state.json.0123456789abcdef"]
    (work / left[0]).write_text('{"daemon": {"passes"')
    for i in range(8):
        env = {"ACCTD_TEST_STATE_WRITE_DELAY_MS": "50"} if i % 2 else {}
        d = acctd.Daemon(work, fakecg.root, conf, extra=["--socket", sock], env=env)
        try:
            d.wait_notify("READY=1", timeout=30)
            # what the last kill left is gone, and nothing else was removed
            assert not [n for n in left if os.path.exists(work / n)], (left, os.listdir(work))
            if left:
                d.wait_log("Removed 1 temporary file a killed acctd left beside")
            still_serves(sock)
            if base is None:
                d.next_state(3)
                base = settle_fds(d.proc.pid)
            time.sleep(rng.uniform(0.0, 0.6))
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait(10)
        finally:
            d.stop()
        assert d.proc.returncode == -signal.SIGKILL
        doc = json.loads((work / "state.json").read_text())
        assert doc["daemon"]["passes"] >= 1 and len(doc["cgroups"]) >= 300
        left = [n for n in os.listdir(work) if n.startswith(".state.json")]
        assert len(left) <= 1 and all(temp.match(n) for n in left), left
        assert os.path.exists(sock), "a killed daemon cannot remove its socket"
        os.unlink(work / "notify.sock")
    with acctd.Daemon(work, fakecg.root, conf, extra=["--socket", sock]) as d:
        d.wait_notify("READY=1", timeout=30)
        assert not [n for n in left if os.path.exists(work / n)], (left, os.listdir(work))
        still_serves(sock)
        with Varlink(sock) as v:
            assert ok(v.call(IFACE + ".Get", {"cgroup": "/f.slice/u299.service"}))["cgroup"]["state"] == "live"
        d.next_state(3)
        n = settle_fds(d.proc.pid)
        # A file read now and then (pressure, the slow group) is opened for
        # that read alone (sampler-files.c, "Descriptors that pay"): each
        # sampling worker may hold one such descriptor whenever it is
        # counted, here or at the first daemon's count.
        assert n <= base + WORKERS, "the restarted daemon holds %d descriptors, the first %d" % (n, base)
    assert not os.path.exists(sock)
