"""The history in the daemon (issue 14): the real acctd recording real cgroups
into a real SQLite store, answering Usage and History.

- CPU: the usage of a burner in a real cgroup (v1 cpuacct) over a window is
  the kernel's cumulative CPU delta, within the bound acctd states.
- A removed cgroup keeps its usage after its removal and after a restart, and
  its accounting record goes to the log (and the journal where there is one).
- SIGKILL while recording: the restarted daemon opens the same store (not set
  aside), and everything recorded before the kill is still there.
- A full disk (a small tmpfs) and a read-only directory: the live ledger
  serves, Status says failing, recording resumes by itself when fixed.
- A corrupt file is set aside and reported.
- The API: errors and History steps on a fake tree.

Every wait is a polled condition with a generous deadline; no timings are
asserted. Real cgroups are named hist-daemon-* and removed afterwards."""
import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

import acctd
from test_acctctl import acctctl_binary
from test_api_client import IFACE, Varlink, api_daemon, error, ok

CPUACCT = "/sys/fs/cgroup/cpuacct"
MEMORY = "/sys/fs/cgroup/memory"
# A quarter of a CPU, as long as it runs: its CPU time moves at every
# recording, without loading the machine.
DUTY_BURNER = """import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.01:
        pass
    time.sleep(0.03)
"""
INTERVAL_US = 1000000  # [history] interval = 1s in these tests


def now_us():
    return time.time_ns() // 1000


def poll(pred, timeout=60, what="condition", interval=0.1):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def status(sock):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + ".Status"))["status"]


def history_status(sock):
    return status(sock)["history"]


def usage(sock, since_us, until_us=None, prefix=None, **extra):
    """Usage with more: (first reply's parameters, every cgroup by path)."""
    p = {"since_us": since_us}
    if until_us is not None:
        p["until_us"] = until_us
    if prefix is not None:
        p["prefix"] = prefix
    p.update(extra)
    with Varlink(sock) as v:
        replies = v.call_more(IFACE + ".Usage", p)
    for r in replies:
        if "error" in r:
            return r, None
    first = replies[0]["parameters"]
    cgroups = {}
    for r in replies:
        for c in r["parameters"]["cgroups"]:
            cgroups[c["path"]] = c
    return first, cgroups


def recording(sock, after_us=0):
    """Status' history once it has recorded after after_us."""
    h = history_status(sock)
    return h if h["state"] == "recording" and (h.get("last_recording_us") or 0) > after_us else None


# ---- real cgroups ----------------------------------------------------------------

def need_cpuacct():
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    if not os.path.exists(os.path.join(CPUACCT, "cpuacct.usage")):
        pytest.skip("no v1 cpuacct hierarchy at %s" % CPUACCT)


class Cgroup:
    """A real v1 cpuacct cgroup named hist-daemon-*, removed at the end."""

    def __init__(self, tag, memory=False):
        """memory: in the v1 memory hierarchy too (first in acctd's order of
        hierarchies, and removed first)."""
        self.name = "/hist-daemon-%s-%d" % (tag, os.getpid())
        self.dir = CPUACCT + self.name
        self.others = [MEMORY + self.name] if memory else []
        for d in self.others + [self.dir]:
            os.mkdir(d)
        self.procs = []

    def usage_us(self):
        with open(os.path.join(self.dir, "cpuacct.usage")) as f:
            return int(f.read()) // 1000

    def run(self, code):
        """A python process in the cgroup running `code` (after "go")."""
        p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()\n" + code],
                             stdin=subprocess.PIPE, text=True)
        for d in self.others + [self.dir]:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(p.pid))
        p.stdin.write("go\n")
        p.stdin.flush()
        self.procs.append(p)
        return p

    def burn(self, cpu_seconds):
        """Burn cpu_seconds of CPU in the cgroup, then exit; waits for it."""
        p = self.run("import time\nt = time.process_time()\nwhile time.process_time() - t < %f: pass\n" % cpu_seconds)
        assert p.wait(120) == 0

    def remove(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for d in self.others + [self.dir]:  # one hierarchy after the other, as systemd does
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                raise AssertionError("cannot remove %s" % d)


@contextlib.contextmanager
def cgroups(*tags, memory=False):
    made = []
    try:
        for t in tags:
            made.append(Cgroup(t, memory))
        yield made
    finally:
        for c in made:
            with contextlib.suppress(AssertionError):
                c.remove()


def hist_conf(db, **conf):
    c = {"history__path": str(db), "history__interval": "1s", "cgroups__include": "/hist-daemon-*",
         "sampling__collector": "files", "log__removals": "each"}
    c.update(conf)
    return c


def test_cgroup_found_at_start_counts_from_its_first_recording(tmp_path):
    """A cgroup that used CPU before acctd started: what it used then is not
    in any window acctd recorded (it happened at a time nobody recorded), so
    its usage counts from acctd's first recording of it, exactly, with no
    kernel peak (that is since creation). Before, a window that began
    before the first recording counted the whole cumulative counter (the
    root showed a day of CPU over ten minutes)."""
    need_cpuacct()
    db = tmp_path / "h" / "history.db"
    with cgroups("found", memory=True) as (cg,):
        cg.burn(0.3)
        k0 = cg.usage_us()
        assert k0 >= 250000, k0
        with api_daemon(tmp_path, None, **hist_conf(db)) as (d, sock):
            since = now_us() - 3600 * 1000000
            started = now_us()
            poll(lambda: recording(sock, started) and usage(sock, since)[1].get(cg.name),
                 what="the cgroup in the history")
            u = usage(sock, since)[1][cg.name]
            assert u["cpu_usec"]["value"] == 0 and not u["cpu_usec"].get("bound"), u
            assert "memory_peak_bytes" not in u, u
            cg.burn(0.2)
            k1 = cg.usage_us()
            done = now_us()
            poll(lambda: recording(sock, done + INTERVAL_US), what="a recording after the burn")
            u = usage(sock, since)[1][cg.name]
            assert abs(u["cpu_usec"]["value"] - (k1 - k0)) <= 1 + (u["cpu_usec"].get("bound") or 0), (u, k0, k1)
            assert u["cpu_usec"]["value"] < k1 - 200000, (u, k1)  # not the cumulative counter


def test_cgroup_created_while_down_counts_from_zero(tmp_path):
    """A cgroup created and busy while acctd was down (the new-user trial:
    2.736 s of CPU served as 5.1 ms): the next acctd of the same boot finds
    it, knows it was not there at the last run's last recording, and a
    window that holds that recording counts all it used, exactly."""
    need_cpuacct()
    db = tmp_path / "h" / "history.db"
    since = now_us()
    with api_daemon(tmp_path, None, **hist_conf(db)) as (d, sock):
        poll(lambda: recording(sock, since), what="a recording of the first run")
    with cgroups("down") as (cg,):
        cg.burn(0.3)
        k = cg.usage_us()
        assert k >= 250000, k
        with api_daemon(tmp_path, None, **hist_conf(db)) as (d, sock):
            started = now_us()
            poll(lambda: recording(sock, started) and usage(sock, since)[1].get(cg.name),
                 what="the cgroup in the history")
            first, cgs = usage(sock, since)
            u = cgs[cg.name]
            assert first["gaps"], first  # acctd was down
            assert u["cpu_usec"]["value"] == k and not u["cpu_usec"].get("bound"), (u, k)


def test_cpu_usage_equals_kernel_delta(tmp_path):
    """The CPU time of a burner over a window: Usage's cpu_usec against the
    kernel's cpuacct.usage delta over the same window, |value - delta| <=
    bound (+1 us for the ns-to-us truncation of each kernel reading). The
    burner runs through both ends of the window, so the bound is that of
    the points around each end: CPU time of about one interval."""
    need_cpuacct()
    db = tmp_path / "h" / "history.db"
    with cgroups("cpu") as (cg,), api_daemon(tmp_path, None, **hist_conf(db)) as (d, sock):
        created = now_us()
        cg.run(DUTY_BURNER)
        poll(lambda: recording(sock, created) and usage(sock, created - 60000000)[1].get(cg.name),
             what="the cgroup in the history")
        t0 = now_us()
        k0 = cg.usage_us()
        time.sleep(3)  # the window's length, not a synchronisation
        t1 = now_us()
        k1 = cg.usage_us()
        delta = k1 - k0
        assert delta > 0, delta  # the burner ran in the cgroup
        # Polled until the store has recorded past t1.
        poll(lambda: recording(sock, t1 + INTERVAL_US), what="a recording after the window")
        _, cgs = usage(sock, t0, until_us=t1)
        u = cgs[cg.name]
        cpu = u["cpu_usec"]
        bound = cpu.get("bound", 0)
        print("window %d us: Usage cpu_usec %s, kernel delta %d us" % (t1 - t0, cpu, delta))
        assert abs(cpu["value"] - delta) <= bound + 2, (u, delta)
        # Each end's uncertainty is the CPU time between the points around
        # it: at most the burner's one core over a few intervals.
        assert bound <= 4 * INTERVAL_US, (u, delta)
        assert u["resolution"] == "raw"
        assert u["recorded_us"] > 0
        assert "removed_us" not in u


def test_removed_cgroup_survives_removal_and_restart(tmp_path):
    """A cgroup in two hierarchies (v1 memory and cpuacct), removed one
    hierarchy after the other as systemd does: one life, ended with its
    whole CPU time, still accounted after a restart."""
    need_cpuacct()
    if not os.path.isdir(MEMORY):
        pytest.skip("no v1 memory hierarchy at %s" % MEMORY)
    db = tmp_path / "h" / "history.db"
    conf = hist_conf(db)
    since = now_us()
    with cgroups("gone", memory=True) as (cg,):
        with api_daemon(tmp_path, None, **conf) as (d, sock):
            poll(lambda: recording(sock, since) and usage(sock, since)[1].get(cg.name),
                 what="the cgroup in the history")
            cg.burn(0.5)
            total = cg.usage_us()

            def ledger_cpu():
                with Varlink(sock) as v:
                    r = v.call(IFACE + ".Get", {"cgroup": cg.name})
                return "error" not in r and (r["parameters"]["cgroup"]["values"].get("cpu.usage") or {}).get("value")

            # The ledger has read the emptied cgroup (its tombstone's values
            # are then final), before it goes.
            poll(lambda: ledger_cpu() == total, what="the ledger's final CPU time %d" % total)
            cg.remove()

            def removed():
                _, cgs = usage(sock, since)
                u = cgs.get(cg.name) if cgs else None
                return u if u and "removed_us" in u else None

            u = poll(removed, what="the removal in the history")
            assert u["lives"] == 1, u  # the life recorded is the one ended
            assert u["cpu_usec"]["value"] == total, (u, total)  # its whole life
            # v1 cgroups have no cgroup.events: acctd cannot know that its
            # last read (of the emptied cgroup) was final, and bounds what it
            # may have used between that read and the removal
            assert 0 < u["cpu_usec"]["bound"] < 60 * 1000000 * (os.cpu_count() or 1), u
            # The accounting record, as systemd words a stopped unit's.
            line = poll(lambda: next((ln for ln in d.logtext().splitlines()
                                      if cg.name + ": Consumed" in ln), None), what="the accounting record")
            assert "CPU time" in line and " over " in line, line
            assert "recorded)" not in line, line  # recorded all its life
            if os.path.exists("/run/systemd/journal/socket"):
                out = poll(lambda: subprocess.run(
                    ["journalctl", "-o", "export", "MESSAGE_ID=d85349364a43483586dd4e8dd439700e",
                     "ACCTD_CGROUP=" + cg.name], capture_output=True, text=True).stdout,
                    what="the record in the journal")
                assert "ACCTD_CPU_USEC=%d" % total in out, out
        # A new acctd on the same store: the removed cgroup is still accounted.
        with api_daemon(tmp_path, None, **conf) as (d, sock):
            _, cgs = usage(sock, since)
            u = cgs[cg.name]
            assert u["lives"] == 1, u
            assert u["removed_us"] > since
            assert u["cpu_usec"]["value"] == total
            first, _ = usage(sock, since)
            assert first["gaps"], first  # the time between the two daemons is a gap


def test_record_says_when_average_is_over_less_than_lifetime(tmp_path):
    """A cgroup that lived while acctd was down: its record's memory average
    is over the time recorded, and the message says so beside the lifetime."""
    need_cpuacct()
    if not os.path.isdir(MEMORY):
        pytest.skip("no v1 memory hierarchy at %s" % MEMORY)
    conf = hist_conf(tmp_path / "h" / "history.db")
    since = now_us()
    with cgroups("down", memory=True) as (cg,):
        cg.run("import time\nb = bytearray(8 << 20)\ntime.sleep(600)\n")
        with api_daemon(tmp_path, None, **conf) as (d, sock):
            poll(lambda: recording(sock, since) and usage(sock, since)[1].get(cg.name),
                 what="the cgroup in the history")
        time.sleep(4)  # acctd down: no recording
        with api_daemon(tmp_path, None, **conf) as (d, sock):
            restarted = now_us()
            poll(lambda: recording(sock, restarted + INTERVAL_US), what="a recording after the restart")
            cg.remove()
            line = poll(lambda: next((ln for ln in d.logtext().splitlines()
                                      if cg.name + ": Consumed" in ln), None), what="the accounting record")
            u = poll(lambda: (lambda x: x if x and "removed_us" in x else None)(usage(sock, since)[1].get(cg.name)),
                     what="the removal in the history")
    assert "memory average (over " in line and " recorded), " in line or " recorded) over " in line, line
    # a v1 cgroup has no cgroup.events: whether its last values are final is
    # not known, and the record says so, with how much more CPU time it may
    # have used since (the time since that read on every CPU); so does its
    # usage, as its CPU time's bound
    m = re.search(r" Not final: last read ([0-9.a-z ]+) before its removal \(no_populated_events\); "
                  r"up to ([0-9.a-z ]+) more CPU time\.$", line)
    assert m, line
    assert u["cpu_usec"]["bound"] > 0, u


def test_sigkill_while_recording(tmp_path):
    """SIGKILL while recording 40 busy cgroups: the restarted daemon opens the
    same store (nothing set aside), and what Status said was recorded before
    the kill is still there (the gap starts at or after it)."""
    need_cpuacct()
    db = tmp_path / "h" / "history.db"
    conf = hist_conf(db)
    since = now_us()
    tags = ["k%d" % i for i in range(40)]
    with cgroups(*tags) as cgs:
        cgs[0].run(DUTY_BURNER)  # values change at every recording
        for attempt in range(3):
            with api_daemon(tmp_path, None, **conf) as (d, sock):
                started = now_us()
                poll(lambda: recording(sock, started), what="a recording")
                last = history_status(sock)["last_recording_us"]
                d.proc.send_signal(signal.SIGKILL)
                d.proc.wait()
                killed = now_us()
            assert d.proc.returncode == -signal.SIGKILL
            with api_daemon(tmp_path, None, **conf) as (d, sock):
                h = poll(lambda: recording(sock, killed), what="recording after the restart")
                assert not h.get("set_aside"), h
                assert h["path"] == str(db)
                first, got = usage(sock, since, until_us=killed)
                assert set(c.name for c in cgs) <= set(got), sorted(got)
                # Nothing recorded before the kill is lost: the gap of the
                # kill begins at or after the last recording Status reported.
                gap = [g for g in first["gaps"] if g["from_us"] < killed <= g["to_us"] or
                       g["from_us"] <= killed < g["to_us"]]
                assert gap and gap[0]["from_us"] >= last, (first["gaps"], last, killed)
            assert not [f for f in os.listdir(db.parent) if ".corrupt-" in f]


# ---- faults -----------------------------------------------------------------------

@contextlib.contextmanager
def tmpfs(size="512k"):
    if not acctd.is_root():
        pytest.skip("needs root to mount a tmpfs")
    d = tempfile.mkdtemp(prefix="hist-daemon-fs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "hist-daemon", d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(d)
        pytest.skip("cannot mount a tmpfs: %s" % r.stderr.strip())
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", d])
        os.rmdir(d)


def fill(directory):
    """Fill the file system of `directory`; returns the filler's path."""
    path = os.path.join(directory, "filler")
    with open(path, "wb") as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
    return path


def ledger_serves(sock):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + ".List"))["cgroups"] is not None


def test_full_disk_then_space_again(fakecg, tmp_path):
    fakecg.mkdir("/a")
    with tmpfs() as fs:
        filler = fill(fs)
        db = os.path.join(fs, "history.db")
        with api_daemon(tmp_path, fakecg.root, history__path=db, history__interval="1s") as (d, sock):
            h = poll(lambda: (lambda h: h if h["state"] == "failing" else None)(history_status(sock)),
                     what="history failing on a full disk")
            assert h["last_error"], h
            assert ledger_serves(sock)
            with Varlink(sock) as v:
                error(v.call(IFACE + ".Usage", {"since_us": 0}), IFACE + ".HistoryUnavailable")
            os.unlink(filler)
            h = poll(lambda: recording(sock), what="recording to resume")
            assert h["last_error"] is None and h["file_bytes"] > 0
            # two page caches of at most 16 MiB, statements and schemas
            assert 0 < h["heap_bytes"] < 40 << 20, h
            _, cgs = poll(lambda: (lambda r: r if r[1] and "/a" in r[1] else None)(usage(sock, 0)),
                          what="/a in the history")
            # Logged once when it started failing, once when it resumed.
            log = d.wait_log("recording to %s again" % db)
            assert log.count("History: cannot") == 1, log


def test_read_only_directory_then_writable(fakecg, tmp_path):
    fakecg.mkdir("/a")
    with tmpfs() as fs:
        assert subprocess.run(["mount", "-o", "remount,ro", fs]).returncode == 0
        db = os.path.join(fs, "history.db")
        with api_daemon(tmp_path, fakecg.root, history__path=db, history__interval="1s") as (d, sock):
            h = poll(lambda: (lambda h: h if h["state"] == "failing" else None)(history_status(sock)),
                     what="history failing on a read-only directory")
            assert "read-only" in h["last_error"].lower() or "permission" in h["last_error"].lower(), h
            assert ledger_serves(sock)
            assert subprocess.run(["mount", "-o", "remount,rw", fs]).returncode == 0
            poll(lambda: recording(sock), what="recording to resume")
            assert os.path.exists(db)


def test_corrupt_file_set_aside(fakecg, tmp_path):
    fakecg.mkdir("/a")
    db = tmp_path / "h" / "history.db"
    db.parent.mkdir()
    db.write_bytes(b"this is not a database " * 1000)
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        h = poll(lambda: recording(sock), what="recording into a new store")
        assert h["set_aside"] and ".corrupt-" in h["set_aside"], h
        with open(h["set_aside"], "rb") as f:
            assert f.read().startswith(b"this is not a database")
        d.wait_log("set aside as " + h["set_aside"])
        d.wait_log("file is not a database")


def test_tables_unlike_their_version_set_aside(fakecg, tmp_path):
    """A store whose version number says 4 but whose lives table lacks one of
    version 4's columns (a development build wrote it) failed every recording
    on that column; it is set aside with the reason, and recording goes on."""
    fakecg.mkdir("/a")
    db = tmp_path / "h" / "history.db"
    db.parent.mkdir()
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        poll(lambda: recording(sock), what="recording")
    with sqlite3.connect(db) as c:
        c.execute("ALTER TABLE lives DROP COLUMN born_after_us")
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        h = poll(lambda: recording(sock), what="recording into a new store")
        assert h["set_aside"] and ".corrupt-" in h["set_aside"], h
        d.wait_log(re.compile(r"\(schema version \d+, but table lives has no column born_after_us\); set aside as " +
                              re.escape(h["set_aside"])))


# ---- the API on a fake tree ----------------------------------------------------------

def test_api_errors_and_history_steps(fakecg, tmp_path):
    fakecg.mkdir("/a", memory=64 << 20)
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        since = now_us() - 1000000
        poll(lambda: recording(sock, since + 2 * INTERVAL_US), what="two recordings")
        with Varlink(sock) as v:
            error(v.call(IFACE + ".Usage", {"since_us": 10, "until_us": 10}), "org.varlink.service.InvalidParameter")
            error(v.call(IFACE + ".Usage", {}), "org.varlink.service.InvalidParameter")
            error(v.call(IFACE + ".History", {"cgroup": "/a", "since_us": 0, "step_us": 1}),
                  "org.varlink.service.InvalidParameter")
            error(v.call(IFACE + ".History", {"cgroup": "/a", "since_us": since, "quantities": ["bogus"]}),
                  "org.varlink.service.InvalidParameter")
            error(v.call(IFACE + ".Usage", {"since_us": since, "prefix": "/nope"}), IFACE + ".NoSuchCgroup")
            # a path the store has never seen: an error, not steps without data
            error(v.call(IFACE + ".History", {"cgroup": "/nope", "since_us": since}), IFACE + ".NoSuchCgroup")
            until = now_us()
            p = ok(v.call(IFACE + ".History", {"cgroup": "/a", "since_us": since, "until_us": until,
                                               "step_us": 500000, "quantities": ["memory"]}))
        assert p["cgroup"] == "/a" and p["step_us"] == 500000
        steps = p["steps"]
        assert len(steps) == (until - since + 499999) // 500000
        covered = [s for s in steps if s["covered_us"] > 0]
        assert covered, steps
        for s in covered:
            assert s["memory_max_bytes"] == 64 << 20, s
            assert "cpu_cores" not in s  # not asked for
        _, cgs = usage(sock, since)
        assert cgs["/a"]["memory_max_bytes"] == 64 << 20
        assert "memory_byte_seconds" in cgs["/a"]
    # History off: Usage says so.
    with api_daemon(tmp_path, fakecg.root, history__enabled="no") as (d, sock):
        assert history_status(sock)["state"] == "off"
        with Varlink(sock) as v:
            error(v.call(IFACE + ".Usage", {"since_us": 0}), IFACE + ".HistoryUnavailable")


def test_usage_group_by_level(fakecg, tmp_path):
    """group_by_level: one row per cgroup at the level, its own totals (the
    same as its row without grouping), subtree_cgroups counting the cgroups
    below it; acctctl shows them in BELOW. A prefix known but empty at the
    level answers no cgroups; level 0 is InvalidParameter."""
    fakecg.mkdir("/g/s1", cpu_usec=1000)
    fakecg.mkdir("/g/s2/x", cpu_usec=2000)
    fakecg.mkdir("/h", cpu_usec=500)
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        since = now_us() - 1000000
        poll(lambda: recording(sock, since + 2 * INTERVAL_US), what="two recordings")
        until = now_us()
        _, flat = usage(sock, since, until)
        _, top = usage(sock, since, until, group_by_level=1)
        assert sorted(top) == ["/g", "/h"], top
        assert top["/g"]["subtree_cgroups"] == 3  # /g/s1, /g/s2, /g/s2/x
        assert top["/h"]["subtree_cgroups"] == 0
        for path in top:
            assert top[path]["cpu_usec"] == flat[path]["cpu_usec"]
            assert "subtree_cgroups" not in flat[path]
        _, second = usage(sock, since, until, prefix="/g", group_by_level=2)
        assert sorted(second) == ["/g/s1", "/g/s2"], second
        assert second["/g/s2"]["subtree_cgroups"] == 1
        first, none = usage(sock, since, until, prefix="/h", group_by_level=2)
        assert none == {} and first["cgroups"] == [], first
        with Varlink(sock) as v:
            for bad in (0, -1):
                error(v.call(IFACE + ".Usage", {"since_us": since, "group_by_level": bad}),
                      "org.varlink.service.InvalidParameter")
            # known, but not in this window: no cgroups, not NoSuchCgroup
            p = ok(v.call(IFACE + ".Usage", {"since_us": since - 3600000000, "until_us": since - 1800000000,
                                            "prefix": "/g"}))
            assert p["cgroups"] == [], p
        ctl = [acctctl_binary(), "--address", "unix:" + sock, "--no-pager"]
        out = subprocess.run(ctl + ["usage", "--since", "@%d" % (since // 1000000), "--group-by-level=1"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0].split()[:2] == ["CGROUP", "BELOW"], out.stdout
        row = next(l for l in lines if l.startswith("/g "))
        assert row.split()[1] == "3", out.stdout
        # an empty answer says so
        out = subprocess.run(ctl + ["usage", "--since", "@%d" % (since // 1000000), "--prefix=/h",
                                    "--group-by-level=2"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "No cgroup at or under /h has data in this window 2 levels below the root." in out.stdout, out.stdout
        bad = subprocess.run(ctl + ["usage", "--group-by-level=0"], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "level" in bad.stderr, bad
        # "now" is read once: a window of exactly ten minutes, in steps of a minute
        for verb in (["usage"], ["history", "/g", "--step", "1min"]):
            doc = json.loads(subprocess.run(ctl + verb + ["--since", "-10min", "--json"], capture_output=True,
                                            text=True, timeout=60).stdout)
            assert doc["until_us"] - doc["since_us"] == 600000000, (verb, doc["since_us"], doc["until_us"])
            if "steps" in doc:
                assert len(doc["steps"]) == 10, doc["steps"]
        # acctctl status names the store and its state
        st = subprocess.run(ctl + ["status"], capture_output=True, text=True, timeout=60)
        assert st.returncode == 0, st.stderr
        line = next(l for l in st.stdout.splitlines() if l.strip().startswith("History:"))
        assert "recording to %s (" % db in line and "in memory)" in line and "last recording" in line, line


def test_points_stamped_with_their_pass_start(fakecg, tmp_path):
    """A recording's points are stamped with the start of the pass that read
    their values, as the values' ages are, not with its end (the new-user
    trial: a first pass of 2-7 s stamped at its end made the next interval
    hold 2.76 cores of CPU on a 2-CPU host). A pass held up after reading
    /a's threads (its second task) records /a's 2 tasks from before the
    hold; stamped at the end, the store would say 1 task all through the
    hold. The hold: /b's cgroup.threads is a FIFO, whose open() blocks until
    a writer opens it (test_load.py's test_fake_tree_tasks_aged_from_their_read)."""
    HOLD = 2.0
    fs = fakecg
    db = tmp_path / "history.db"
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(3)]
    try:
        fs.mkdir("/a", procs=[sleepers[0].pid])
        fs.mkdir("/b", procs=[sleepers[2].pid])

        def points_of_a():
            with contextlib.closing(sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)) as c:
                return c.execute("SELECT p.t_us, p.tasks FROM points p JOIN lives l ON p.life = l.id "
                                 "WHERE l.path = '/a' ORDER BY p.t_us").fetchall()

        # One worker: a pass reads its cgroups in path order, /a before /b.
        with api_daemon(tmp_path, fs.root, history__path=str(db), history__interval="1s",
                        sampling__workers="1") as (d, sock):
            poll(lambda: recording(sock) and any(k == 1 for _, k in points_of_a()), what="a recording of /a's task")

            fs.set_procs("/a", [sleepers[0].pid, sleepers[1].pid])
            threads = os.path.join(fs.dir("/b"), "cgroup.threads")
            text = open(threads).read()
            os.mkfifo(threads + ".fifo")
            os.rename(threads + ".fifo", threads)  # never missing: a missing file reads as a removed cgroup
            try:
                in_open = lambda: acctd.threads_in_open(d.proc.pid)  # noqa: E731
                poll(lambda: in_open() & (time.sleep(0.1) or in_open()),
                     what="the next load pass to open /b's cgroup.threads", interval=0.05)
                held = now_us()
                time.sleep(HOLD)  # the pass stays held meanwhile: no assertion rests on this sleep
                os.close(os.open(threads, os.O_WRONLY | os.O_NONBLOCK))
                released = now_us()
                poll(lambda: recording(sock, released), what="a recording after the hold")
            finally:
                os.unlink(threads)
                with open(threads, "w") as f:
                    f.write(text)
        points = points_of_a()
        first_two = next((t for t, k in points if k == 2), None)
        assert first_two is not None, points
        assert first_two < held, ("2 tasks recorded as of %d us after the hold began" % (first_two - held), points)
    finally:
        for p in sleepers:
            p.kill()
            p.wait()


def test_clean_stop_records_last_pass(fakecg, tmp_path):
    """A clean stop records the last pass's values when no recording took
    them yet: the gap after the run begins at its last pass, not up to a
    recording interval (here 1 min) before the stop."""
    fakecg.mkdir("/a", memory=8 << 20)
    db = tmp_path / "history.db"
    since = now_us() - 1000000
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1min") as (d, sock):
        first = poll(lambda: recording(sock, since), what="the first recording")["last_recording_us"]
        time.sleep(3)  # passes every 100 ms; no recording due for a minute
    stopped = now_us()
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1min") as (d, sock):
        p, cgs = usage(sock, since)
    gap = next(g for g in p["gaps"] if g["from_us"] >= first)  # the one after the first run
    assert gap["from_us"] >= first + 2500000, (gap, first, stopped)  # the last pass, not the first recording
    assert gap["from_us"] <= stopped, (gap, stopped)
    assert cgs["/a"]["recorded_us"] >= 2500000, cgs["/a"]


def test_reload_reopens_and_metrics(fakecg, tmp_path):
    """A reload with a new path closes the store and records into the new
    one; enabled = no turns history off; /metrics says up or not."""
    import test_metrics
    fakecg.mkdir("/a", memory=1 << 20)
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    work = tmp_path / "w"
    work.mkdir()
    conf = acctd.fast_config(work, history__path=str(a), history__interval="1s")
    d, m = test_metrics.start(work, fakecg, config=conf)
    sock = str(work / "api.sock")
    with d:
        started = now_us()
        poll(lambda: os.path.exists(sock) and recording(sock, started), what="recording into a.db")
        m.wait()
        page, _ = m.page()
        s = test_metrics.samples(page)
        assert s[("acctd_history_up", frozenset())] == 1
        assert s[("acctd_history_bytes", frozenset())] > 0
        assert 0 < s[("acctd_history_heap_bytes", frozenset())] < 40 << 20
        assert s[("acctd_history_errors_total", frozenset())] == 0
        acctd.fast_config(work, history__path=str(b), history__interval="1s")
        d.signal(signal.SIGHUP)
        reloaded = now_us()
        h = poll(lambda: (lambda h: h if h["path"] == str(b) and (h.get("last_recording_us") or 0) > reloaded
                          else None)(history_status(sock)), what="recording into b.db after the reload")
        assert h["state"] == "recording" and b.exists()
        acctd.fast_config(work, history__path=str(b), history__enabled="no")
        d.signal(signal.SIGHUP)
        poll(lambda: history_status(sock)["state"] == "off", what="history off after the reload")
        page, _ = m.page()
        s = test_metrics.samples(page)
        assert s[("acctd_history_up", frozenset())] == 0
        assert s[("acctd_history_enabled", frozenset())] == 0
        with Varlink(sock) as v:
            error(v.call(IFACE + ".Usage", {"since_us": 0}), IFACE + ".HistoryUnavailable")


def test_usage_and_history_in_chunks_with_more(fakecg, tmp_path):
    """With more: Usage in replies of at most 256 cgroups (gaps, since_us and
    until_us in the first only, continues on all but the last); History in
    replies of at most 1000 steps. Without more: one reply with all."""
    with fakecg.batch():
        for i in range(300):
            fakecg.mkdir("/c%03d" % i, memory=1 << 20)
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        since = now_us()
        poll(lambda: recording(sock, since) and len(usage(sock, since - 1000000)[1] or {}) >= 301,
             what="300 cgroups in the history")
        until = now_us()
        with Varlink(sock) as v:
            replies = v.call_more(IFACE + ".Usage", {"since_us": since - 1000000, "until_us": until})
            one = ok(v.call(IFACE + ".Usage", {"since_us": since - 1000000, "until_us": until}))
            steps = v.call_more(IFACE + ".History", {"cgroup": "/c000", "since_us": until - 2500 * 1000,
                                                     "until_us": until, "step_us": 1000})
        assert [len(r["parameters"]["cgroups"]) for r in replies] == [256, 45]
        assert [bool(r.get("continues")) for r in replies] == [True, False]
        assert "gaps" in replies[0]["parameters"] and "gaps" not in replies[1]["parameters"]
        assert replies[0]["parameters"]["until_us"] == until
        assert len(one["cgroups"]) == 301
        assert [c["path"] for r in replies for c in r["parameters"]["cgroups"]] == [c["path"] for c in one["cgroups"]]
        assert [len(r["parameters"]["steps"]) for r in steps] == [1000, 1000, 500]
        assert "step_us" in steps[0]["parameters"] and "step_us" not in steps[2]["parameters"]
