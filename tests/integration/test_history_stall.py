"""History stalls (issue 27, item 3): a recorder that stops recording is seen
(Status, acctctl status, the log) and the time it did not record is a gap in
the history, never the last values held over it.

Two real stalls of the real daemon, on a fake tree, recording every second:

- one thread: the recorder thread ("acctd-history") alone is stopped with
  ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT), as a thread blocked in a write to
  a slow reader or a hung disk is, while the event loop goes on answering.
  Status must say "stalled" with a warning past three intervals (and
  /metrics acctd_history_stalled 1), the log one warning; once the thread
  goes on, the stretch is a gap.
- the whole process: SIGSTOP for several intervals, then SIGCONT (a stopped
  or suspended machine stalls every thread).

On main, Status said "recording" throughout, and History showed the stall's
steps covered with the values from before it.

Every wait is a polled condition with a generous deadline; the stall's length
is a lower bound (we wait at least that long), never asserted exactly."""
import contextlib
import ctypes
import os
import signal
import subprocess
import time

import pytest

import acctd
from test_acctctl import acctctl_binary
from test_api_client import IFACE, Varlink, api_daemon, ok
from test_history import history_status, now_us, poll, recording, usage

INTERVAL_US = 1000000
STALL_S = 6  # six intervals: past the three after which a stall is a gap

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000


def recorder_tid(pid):
    for tid in os.listdir("/proc/%d/task" % pid):
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() == "acctd-history":
                    return int(tid)
    raise AssertionError("no acctd-history thread in %d" % pid)


@contextlib.contextmanager
def thread_stopped(tid):
    """The thread `tid` alone stopped (a ptrace stop) until the block ends.
    The thread is stopped wherever it is: almost always waiting for work or
    inside SQLite, without the recorder's lock (held for microseconds)."""
    if not acctd.is_root():
        pytest.skip("needs root to ptrace acctd's thread")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
        pytest.skip("ptrace refused: %s" % os.strerror(ctypes.get_errno()))
    try:
        assert libc.ptrace(PTRACE_INTERRUPT, tid, None, None) == 0, os.strerror(ctypes.get_errno())
        os.waitpid(tid, WALL)
        yield
    finally:
        libc.ptrace(PTRACE_DETACH, tid, None, None)


def stalled(sock):
    h = history_status(sock)
    return h if h["state"] == "stalled" else None


def check_gap(sock, before_us, until_us):
    """The stall after the last recording before it (before_us) is a gap of
    at least STALL_S - 1 intervals (the first recording after it may have
    been taken while the thread was still stopped, up to an interval before
    it went on): in Usage's gaps, not in /a's recorded time, and History's
    steps inside it have no data. Returns the gap."""
    since = before_us - 5 * INTERVAL_US
    p, cgs = usage(sock, since, until_us)
    gaps = [(g["from_us"], g["to_us"]) for g in p["gaps"]]
    gap = next((g for g in gaps if g[0] == before_us), None)
    assert gap and gap[1] - gap[0] >= (STALL_S - 1) * INTERVAL_US, (gaps, before_us)
    assert cgs["/a"]["recorded_us"] <= until_us - since - (gap[1] - gap[0]), (cgs["/a"], gap)
    with Varlink(sock) as v:
        h = ok(v.call(IFACE + ".History", {"cgroup": "/a", "since_us": since, "until_us": until_us,
                                           "step_us": 500000}))
    inside = [s for s in h["steps"] if s["t_us"] >= gap[0] and s["t_us"] + 500000 <= gap[1]]
    assert len(inside) >= 2 * (STALL_S - 2), h["steps"]
    assert all(s["covered_us"] == 0 for s in inside), inside
    # and there is data on both sides
    assert any(s["covered_us"] > 0 for s in h["steps"] if s["t_us"] + 500000 <= gap[0]), h["steps"]
    assert any(s["covered_us"] > 0 for s in h["steps"] if s["t_us"] >= gap[1]), h["steps"]
    # acctctl history: its table says "no data" for the stall's steps
    out = subprocess.run(ctl(sock) + ["history", "--plot=none", "--step=1s",
                                      "--since=@%d" % (since // 1000000), "--until=@%d" % (until_us // 1000000), "/a"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    no_data = sum(1 for l in out.stdout.splitlines() if "no data" in l)
    assert no_data >= STALL_S - 3, out.stdout
    return gap


def ctl(sock):
    return [acctctl_binary(), "--address", "unix:" + sock, "--no-pager"]


def test_stopped_recorder_thread_is_stalled_then_a_gap(fakecg, tmp_path):
    fakecg.mkdir("/a", memory=8 << 20)
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        started = now_us()
        poll(lambda: recording(sock, started + 2 * INTERVAL_US), what="two recordings")
        tid = recorder_tid(d.proc.pid)
        with thread_stopped(tid):
            stopped_at = now_us()
            before = history_status(sock)["last_recording_us"]
            # the event loop goes on: Status answers, and past three
            # intervals says the recorder is stalled
            h = poll(lambda: stalled(sock), timeout=60, what="Status saying stalled")
            assert h["warning"] and "stalled" in h["warning"], h
            assert h["interval_us"] == INTERVAL_US, h
            assert h["last_recording_age_us"] > 3 * INTERVAL_US, h
            assert h["last_recording_us"] == before, h
            st = subprocess.run(ctl(sock) + ["status"], capture_output=True, text=True, timeout=60)
            assert st.returncode == 0, st.stderr
            assert "stalled recording to %s (" % db in st.stdout, st.stdout
            assert "warning: no recording for" in st.stdout, st.stdout
            poll(lambda: "the recorder is stalled" in d.logtext(), what="the stall's warning in the log")
            while now_us() < stopped_at + STALL_S * INTERVAL_US:
                time.sleep(0.1)
        resumed = now_us()
        h = poll(lambda: recording(sock, resumed), what="recording again")
        assert h["warning"] is None, h
        poll(lambda: recording(sock, h["last_recording_us"] + INTERVAL_US), what="a second recording after")
        log = d.wait_log("that time is a gap in the history")
        assert log.count("the recorder is stalled") == 1, log
        check_gap(sock, before, now_us())


def test_sigstop_is_a_gap(fakecg, tmp_path):
    fakecg.mkdir("/a", memory=8 << 20)
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        started = now_us()
        poll(lambda: recording(sock, started + 2 * INTERVAL_US), what="two recordings")
        d.signal(signal.SIGSTOP)
        try:
            stopped_at = now_us()
            time.sleep(STALL_S)  # the stall itself: a stopped process does nothing
        finally:
            d.signal(signal.SIGCONT)
        resumed = now_us()
        h = poll(lambda: recording(sock, resumed), what="recording again")
        poll(lambda: recording(sock, h["last_recording_us"] + INTERVAL_US), what="a second recording after")
        # the last recording before the stop is at most an interval before it
        p, _ = usage(sock, stopped_at - 5 * INTERVAL_US, resumed)
        before = max(g["from_us"] for g in p["gaps"] if g["from_us"] <= stopped_at + INTERVAL_US)
        assert before >= stopped_at - 2 * INTERVAL_US, (p["gaps"], stopped_at)
        check_gap(sock, before, now_us())
        d.wait_log("that time is a gap in the history")


def test_metrics_say_stalled(fakecg, tmp_path):
    """/metrics while the recorder thread is stopped: acctd_history_stalled 1,
    acctd_history_up 0, the last recording's age past three intervals of
    acctd_history_interval_seconds; back to 0 and 1 once it goes on."""
    import test_metrics
    fakecg.mkdir("/a", memory=1 << 20)
    conf = acctd.fast_config(tmp_path, history__path=str(tmp_path / "history.db"), history__interval="1s")
    d, m = test_metrics.start(tmp_path, fakecg, config=conf)
    sock = str(tmp_path / "api.sock")
    with d:
        started = now_us()
        poll(lambda: os.path.exists(sock) and recording(sock, started + INTERVAL_US), what="recording")
        m.wait()

        def sample(name):
            return test_metrics.samples(m.page()[0]).get((name, frozenset()))

        assert sample("acctd_history_stalled") == 0 and sample("acctd_history_up") == 1
        assert sample("acctd_history_interval_seconds") == 1
        with thread_stopped(recorder_tid(d.proc.pid)):
            poll(lambda: sample("acctd_history_stalled") == 1, what="acctd_history_stalled 1")
            assert sample("acctd_history_up") == 0
            assert sample("acctd_history_last_recording_age_seconds") > 3
        poll(lambda: sample("acctd_history_stalled") == 0, what="acctd_history_stalled 0 again")
        assert sample("acctd_history_up") == 1
