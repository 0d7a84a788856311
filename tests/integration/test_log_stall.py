"""A log nobody reads, and cgroup churn (issue 27, items 3 and 7).

- acctd's stderr is a pipe whose read end the test holds and never reads (as
  a stalled `| while read` pipeline): the pipe fills, and acctd must go on
  answering Status, recording history, and stop promptly on SIGTERM; the lines
  that did not fit are counted in Status (log.lines_dropped > 0), and a line
  "N log lines dropped" comes once the test reads again. Before, a thread
  blocked in write(2): the recorder stopped and SIGINT waited 30 s.
- Churn on a fake tree: hundreds of cgroups made and removed; the per-removal
  accounting records are rate limited ([log] rate_limit_burst) with a
  "Suppressed N removal records" summary whose N plus the records logged is
  the number removed; the tombstones stay within [cgroups] max_tombstones
  (Status tombstones_folded counts the rest) while the parent's totals are
  the tree's.

Every wait is a polled condition with a generous deadline."""
import contextlib
import fcntl
import os
import re
import signal
import struct
import subprocess
import tempfile
import termios
import threading
import time

import pytest

import acctd
from test_api_client import IFACE, Varlink, ok, socket_dir
from test_history import poll


def status(sock, timeout=None):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + ".Status"))["status"]


@contextlib.contextmanager
def daemon_with_stderr(tmp_path, root, stderr, **conf):
    """acctd on `root`, its stderr (and stdout) the file descriptor given."""
    sdir = socket_dir()
    sock = os.path.join(sdir, "io.acctd")
    work = tempfile.mkdtemp(prefix="daemon-", dir=str(tmp_path))
    config = acctd.fast_config(work, **conf)
    args = [acctd.binary(), "--config", config, "--config-dropins", "", "--socket", sock,
            "--metrics-listen", "none"] + acctd.root_args(root)
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    env.pop("JOURNAL_STREAM", None)
    env["STATE_DIRECTORY"] = work
    proc = subprocess.Popen(args, stdout=stderr, stderr=stderr, env=env)
    try:
        poll(lambda: os.path.exists(sock) or proc.poll() is not None, what="the socket")
        assert proc.poll() is None, "acctd exited (%s)" % proc.returncode
        yield proc, sock
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(sock)
        with contextlib.suppress(OSError):
            os.rmdir(sdir)


def unread(fd):
    """Bytes in the pipe that nobody read."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]


class Churn:
    """Make and remove fake cgroups in a thread until stopped."""

    def __init__(self, fs, prefix="/churn", per_batch=20, pause=0.05, limit=None):
        self.fs, self.prefix, self.per_batch, self.pause, self.limit = fs, prefix, per_batch, pause, limit
        self.removed = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        i = 0
        while not self._stop.is_set() and (self.limit is None or self.removed < self.limit):
            names = ["%s/c%d" % (self.prefix, i + k) for k in range(self.per_batch)]
            i += self.per_batch
            for n in names:
                self.fs.mkdir(n, cpu_usec=1000)
            time.sleep(self.pause)  # acctd sees them live, then removed
            for n in names:
                self.fs.rmdir(n)
            self.removed += len(names)
            time.sleep(self.pause)

    def stop(self):
        self._stop.set()
        self._t.join()

    def done(self):
        return not self._t.is_alive()


def test_stderr_nobody_reads(fakecg, tmp_path):
    """The reproduction of item 3: a stderr that nobody reads."""
    fakecg.mkdir("/churn")
    fakecg.mkdir("/steady", cpu_usec=5000)
    rfd, wfd = os.pipe()
    db = tmp_path / "h" / "history.db"
    try:
        with daemon_with_stderr(tmp_path, fakecg.root, wfd, history__path=str(db), history__interval="200ms",
                                log__level="debug") as (proc, sock):
            os.close(wfd)
            wfd = -1
            # Lines for the pipe: every made and removed cgroup logs at debug.
            churn = Churn(fakecg)
            try:
                # The pipe is full (64 KiB in 16 pages, each filled up to a line short).
                try:
                    poll(lambda: unread(rfd) > 48 * 1024, what="a full pipe")
                except AssertionError:
                    raise AssertionError("not full: %d bytes, %r" % (unread(rfd), status(sock)))
                time.sleep(1)  # whatever logged meanwhile is blocked, or dropped
                # The pipe stays full: Status answers, history keeps recording.
                last = status(sock)["history"]["last_recording_us"] or 0
                for _ in range(5):
                    h = poll(lambda: (lambda s: s["history"] if s["history"]["state"] == "recording" and
                                      (s["history"]["last_recording_us"] or 0) > last else None)(status(sock)),
                             timeout=30, what="a new recording while stderr is stalled")
                    last = h["last_recording_us"]
                # What did not fit is counted.
                dropped = poll(lambda: status(sock)["log"]["lines_dropped"], what="lines dropped, counted")
            finally:
                churn.stop()
            # The reader catches up: the gap is announced.
            buf = bytearray()
            os.set_blocking(rfd, False)

            def drained():
                with contextlib.suppress(BlockingIOError):
                    while True:
                        b = os.read(rfd, 65536)
                        if not b:
                            break
                        buf.extend(b)
                return re.search(rb"warning: (\d+) log lines? dropped", bytes(buf))
            m = poll(drained, what="the 'log lines dropped' line")
            assert int(m.group(1)) > 0
            # Stall again, then SIGTERM: the stop is prompt whatever the pipe.
            churn = Churn(fakecg, prefix="/churn")
            poll(lambda: status(sock)["log"]["lines_dropped"] > dropped, what="the pipe full again")
            churn.stop()
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
            took = time.monotonic() - t0
            assert took < 10, "acctd took %.1fs to stop on SIGTERM with a stalled stderr" % took
            assert proc.returncode == 0
    finally:
        os.close(rfd)
        if wfd >= 0:
            os.close(wfd)


def test_stderr_reader_gone(fakecg, tmp_path):
    """A reader of the log that goes away (acctd 2>&1 | less, then q): acctd
    goes on (before, the first line after it killed acctd with SIGPIPE, the
    socket left behind); what it could not write is counted; SIGTERM stops it
    cleanly and it removes its socket."""
    fakecg.mkdir("/churn")
    rfd, wfd = os.pipe()
    try:
        with daemon_with_stderr(tmp_path, fakecg.root, wfd, log__level="debug") as (proc, sock):
            os.close(wfd)
            wfd = -1
            os.close(rfd)  # the reader is gone
            rfd = -1
            churn = Churn(fakecg)  # lines to write: every made and removed cgroup logs at debug
            try:
                poll(lambda: proc.poll() is not None or status(sock)["log"]["lines_dropped"] > 0,
                     what="a line written to the gone reader")
                assert proc.poll() is None, "acctd ended (%s) when the reader of its log went away" % proc.returncode
                assert status(sock)["log"]["lines_dropped"] > 0
            finally:
                churn.stop()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
            assert not os.path.exists(sock), "the socket was left behind"
    finally:
        for fd in (rfd, wfd):
            if fd >= 0:
                os.close(fd)


def test_removals_summary_by_default(fakecg, tmp_path):
    """Issue 31 item 7: by default ([log] removals = summary) no line per
    removed cgroup, but one per rate-limit window saying how many were
    removed and where their records are; their counts add up to every
    removal."""
    fakecg.mkdir("/churn", cpu_usec=1000000)
    log_path = tmp_path / "acctd.log"
    removed_total = 60
    with open(log_path, "w") as log:
        with daemon_with_stderr(tmp_path, fakecg.root, log.fileno(), history__path=str(tmp_path / "h" / "history.db"),
                                history__interval="1s", log__level="info", log__rate_limit_interval="1s") as (proc, sock):
            churn = Churn(fakecg, per_batch=20, pause=0.3, limit=removed_total)
            poll(churn.done, timeout=300, what="the churn")
            poll(lambda: status(sock)["cgroups_dead"] >= removed_total, timeout=120, what="every removal seen")

            def summed():
                lines = re.findall(r"info: (\d+) cgroups? removed in the last \S+; (?:its accounting record|their "
                                   r"accounting records): acctctl usage --since=@\d+ ", open(log_path).read())
                n = sum(int(x) for x in lines)
                return n if n >= removed_total else None
            assert poll(summed, timeout=120, what="summaries of every removal") == removed_total
            text = open(log_path).read()
            assert not re.search(r"/churn/c\d+: Consumed", text), "a record per cgroup in summary mode"
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)


# in place: acctd's cached descriptors of /churn see its CPU time grow
@pytest.mark.parametrize("fakecg", [{"mode": "v2", "write_mode": "inplace"}], indirect=True)
def test_churn_rate_limited_and_tombstones_within_budget(fakecg, tmp_path):
    """Item 7 on a fake tree: 600 cgroups made and removed."""
    fakecg.mkdir("/churn", cpu_usec=1000000)
    log_path = tmp_path / "acctd.log"
    removed_total = 600
    with open(log_path, "w") as log:
        with daemon_with_stderr(tmp_path, fakecg.root, log.fileno(), history__path=str(tmp_path / "h" / "history.db"),
                                log__level="info", log__rate_limit_interval="2s", log__rate_limit_burst="10",
                                log__removals="each", cgroups__max_tombstones="50",
                                cgroups__tombstone_retention="10min") as (proc, sock):
            churn = Churn(fakecg, per_batch=30, pause=0.3, limit=removed_total)
            poll(churn.done, timeout=300, what="the churn")
            # every removal seen: live counts back to the start's
            st = poll(lambda: (lambda s: s if s["cgroups_live"] == 2 and
                               s["cgroups_dead"] + s.get("tombstones_folded", 0) >= removed_total else None)(status(sock)),
                      what="every removal seen")
            assert st["cgroups_dead"] <= 50, st
            assert st["tombstones_folded"] >= removed_total - 50, st
            # The parent's totals are the tree's, folded children or not.
            def same_as_tree():
                with Varlink(sock) as v:
                    got = ok(v.call(IFACE + ".Get", {"cgroup": "/churn"}))
                kernel = int(fakecg.read("/churn", "cpu.stat").split()[1])
                v = got["cgroup"]["values"]["cpu.usage"]["value"]
                return True if v == kernel else (v, kernel)
            try:
                poll(lambda: same_as_tree() is True, timeout=30, what="/churn's CPU time as the tree has it")
            except AssertionError:
                raise AssertionError("CPU time (acctd, tree): %r" % (same_as_tree(),))
            # Records: burst per window, the rest summed up once the window ends.
            def summed():
                text = open(log_path).read()
                records = len(re.findall(r"info: /churn/c\d+: Consumed", text))
                suppressed = sum(int(n) for n in re.findall(r"Suppressed (\d+) removal records", text))
                return (records, suppressed) if records + suppressed >= removed_total else None
            records, suppressed = poll(summed, timeout=60, what="records plus suppressed = removals")
            assert records + suppressed == removed_total, (records, suppressed)
            assert suppressed > 0 and records < removed_total / 2, (records, suppressed)
            st = status(sock)
            assert st["log"]["lines_suppressed"] >= suppressed, st["log"]
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
