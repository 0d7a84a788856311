#!/usr/bin/env python3
"""The soak (issue 13): the real acctd on this host's real cgroups for a long
period while cgroups are created and removed at a steady rate and clients
query, watch and scrape. Fails on any client error, any invariant violation
the daemon reports, any served cumulative value that went backwards, or
growth of acctd's memory or descriptors after warm-up.

Usage: soak.py [--seconds N] [--rate R] [--lifetime S]
(defaults: $SOAK_SECONDS or 60, $SOAK_RATE or 200, $SOAK_LIFETIME or 0.5).
`make check` runs 60 s (meson suite "soak"), `make soak` an hour.
Root only, on a host with cgroupfs writable: exit 77 (skipped) otherwise.

The rate. Issue 13 asks for 1,000 cgroups created and removed a second. On
the 2-CPU development machine, shared (load average 5-12), that was not
reached: asked for 1,000, the churn made 244-629 a second, acctd (given a
third of a CPU by the scheduler) fell seconds behind (Get answered after up
to 12 s, a scrape cut off after 15 s without progress by /metrics' I/O
timeout, RSS climbing with the backlog of unprocessed changes), and the run
fails on those. acctd's CPU: 94 s for 60,006 cgroups in 300 s at 200 a
second with the clients served (4,796 calls, 104 scrapes of ~5 MB, 3,440
Watch updates); 20 s for 38,670 in 60 s at 629 a second, when it served few
calls and left a backlog. Most of it is in the kernel (inotify watches
added and removed, directories re-read, cgroup files opened). On this
machine the limit was the CPU share the scheduler gave it, not its own cost.
200 a second is the default: held for 300 s with no client
error there. --rate / $SOAK_RATE / make soak SOAK_RATE=1000 on a larger
machine.

The tree (in every hierarchy acctd reads on a hybrid host: v1 memory, cpu,
cpuacct and the unified one; on a pure v2 host the unified one alone):

  TOP = /acctd-soak-PID
  TOP/steady     a process that runs ~5 ms of CPU every 50 ms, the whole time:
                 its cpu.usage and TOP's are followed by Get and Watch
  TOP/cN         the churn: a separate process creates cgroups at RATE per
                 second and removes each LIFETIME seconds later (so about
                 RATE x LIFETIME are alive at once), all of them empty

The daemon keeps tombstones 10 s (tombstone_retention), so that its ledger
reaches a steady size within the warm-up: with the default 5 min it would
grow for five minutes by design.

Clients, all the time (threads of this process but the scraper):
  - Get of TOP and TOP/steady, List under TOP, Status, over one varlink
    connection (a call every 20 ms);
  - acctctl status and acctctl list TOP, once a second (a new connection each);
  - Watch of TOP and TOP/steady every 100 ms, and Watch of the prefix TOP
    (with the churn) every 250 ms;
  - a /metrics scrape once a second (a new TCP connection each), from a
    process of its own (Scraper).
A client error is any failed call, error reply, closed connection, non-zero
acctctl exit or non-200 scrape.

Stability: acctd's own memory and descriptor count (/proc/PID/fd) are
sampled every second. Its own memory is RssAnon less what SQLite holds on
the heap (Status's history.heap_bytes): the history's two page caches fill
to their bound (16 MiB each, docs/history.md "Memory") over minutes of
recording a churn of 200 cgroups a second, which is a cache filling, not a
leak, and its mapped file pages are RssFile. VmRSS, RssFile and heap_bytes
are reported, and heap_bytes must stay within the caches' bound
(HEAP_BOUND). Warm-up is the first quarter of the run (at least 10 s). The
reference window is the first third of the rest; the end window its last
third. Own memory passes when the end window's maximum is within RSS_TOL
(10%) + RSS_SLACK (4 MiB) of the reference window's maximum, and the
post-warm-up run is not a monotonic climb (each of its four segments'
maxima above the previous one's by more than 1 MiB). Descriptors: the sampler keeps those
of the cgroups it knows alive open, so the count follows the churn's live
population as acctd sees it, which swings with how far behind the daemon
is (from ~300 to ~4,000 here); a leak raises the floor: the end window's
minimum must stay within FD_SLACK (16) of the reference window's maximum.
And the exact check: once the churn and the clients stop, the count comes
back within FD_SLACK of the count before they started.

Cleanup: the tree is removed whatever happens (also on SIGTERM from meson's
timeout); trees left by a killed earlier run (their PID gone) are removed at
start.

The last line printed is the summary of the figures (for docs/reliability.md).
"""
import argparse
import collections
import http.client
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
ROOT = os.path.dirname(TESTS)
sys.path.insert(0, os.path.join(TESTS, "integration"))
sys.path.insert(0, TESTS)

import acctd  # noqa: E402  (tests/integration/acctd.py)
from test_api_client import Varlink  # noqa: E402

IFACE = "io.acctd.Accounting"
CG = "/sys/fs/cgroup"
V1 = ["memory", "cpu", "cpuacct"]
PREFIX = "acctd-soak-"

RSS_TOL, RSS_SLACK = 0.10, 4 << 10      # KiB
HEAP_BOUND = 40 << 10                   # KiB: two 16 MiB page caches, statements, schemas
FD_SLACK = 16
CLIMB_STEP = 1 << 10                    # KiB: a segment's max above the previous one's ...
CLIMB_FRACTION = 0.01                   # ... or this much of the reference, if more: on a host with
                                        # 10,000 other cgroups acctd holds ~130 MiB, and its tables'
                                        # growth steps are larger (1.1-4.2 MiB, then a plateau)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def hierarchies():
    """The directories to create each cgroup in, or None where this host
    cannot be soaked."""
    if os.path.exists(CG + "/cgroup.controllers"):
        return [CG]  # pure v2
    hs = [CG + "/" + c for c in V1] + [CG + "/unified"]
    missing = [h for h in hs if not os.path.isdir(h)]
    return None if missing else hs


def rmtree_cg(path):
    """rmdir a cgroup directory tree, deepest first (files in cgroupfs are not removable)."""
    if not os.path.isdir(path):
        return
    for dirpath, dirnames, _ in os.walk(path, topdown=False):
        for _ in range(50):
            try:
                os.rmdir(dirpath)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


def remove_stale(hs):
    """Trees of earlier runs whose process is gone."""
    for h in hs:
        for name in os.listdir(h):
            m = re.fullmatch(PREFIX + r"(\d+)", name)
            if m and not os.path.exists("/proc/" + m.group(1)):
                rmtree_cg(os.path.join(h, name))


# ---- the churn (a process of its own: its pace must not wait for the clients' GIL) ----

def churn_main(hs, top, rate, lifetime, stop, counts):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the parent stops it through `stop`
    live = collections.deque()
    created = removed = errors = 0
    keep = max(1, int(rate * lifetime))
    t0 = time.monotonic()
    i = 0

    def rm(name):
        nonlocal removed, errors
        ok = True
        for h in reversed(hs):
            try:
                os.rmdir("%s/%s/%s" % (h, top, name))
            except FileNotFoundError:
                pass
            except OSError:
                ok = False
        if ok:
            removed += 1
        return ok

    try:
        while not stop.is_set():
            due = int((time.monotonic() - t0) * rate)
            if i >= due:
                time.sleep(min(0.01, (i + 1 - due) / rate))
                continue
            name = "c%d" % i
            i += 1
            try:
                for h in hs:
                    os.mkdir("%s/%s/%s" % (h, top, name))
                created += 1
            except OSError:
                errors += 1
            live.append(name)
            while len(live) > keep:
                n = live.popleft()
                if not rm(n):
                    errors += 1
                    live.append(n)  # tried again later; counted as an error
                    break
            if i % 256 == 0:
                counts[0], counts[1], counts[2] = created, removed, errors
    finally:
        while live:
            n = live.popleft()
            if not rm(n):
                errors += 1
        counts[0], counts[1], counts[2] = created, removed, errors
        counts[3] = time.monotonic() - t0


# ---- the steady workload -------------------------------------------------------

STEADY = r"""
import sys, time
for path in sys.argv[1:]:
    with open(path, "w") as f:
        f.write("0")   # this process
sys.stdout.write("in\n"); sys.stdout.flush()
while True:
    end = time.monotonic() + 0.005
    while time.monotonic() < end:
        pass
    time.sleep(0.045)
"""


# ---- clients ---------------------------------------------------------------------

class Figures:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.errors = []
        # (path, quantity, source) -> [(value, bound)] in the order one
        # connection received them (replies on different connections may be
        # rendered in another order than they arrive in)
        self.series = collections.defaultdict(list)

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] += n

    def latest(self, what, ms):
        with self.lock:
            self.counts[what] = max(self.counts[what], int(ms))

    def error(self, what):
        with self.lock:
            self.counts["errors"] += 1
            if len(self.errors) < 20:
                self.errors.append("%.1f s: %s" % (time.monotonic() - T0, what))

    def cumulative(self, rec, source):
        """The cumulative CPU values of a Cgroup record, in order."""
        for q in ("cpu.usage", "cpu.user", "cpu.system"):
            v = (rec.get("values") or {}).get(q)
            if v is not None and rec.get("state") == "live":
                with self.lock:
                    self.series[(rec["path"], q, source)].append((v["value"], v.get("bound") or 0))


T0 = time.monotonic()


def client(fig, stop, name, fn):
    def run():
        try:
            fn()
        except Exception as e:  # noqa: BLE001: every failure of a client is a finding
            if not stop.is_set():
                fig.error("%s: %r" % (name, e))
    t = threading.Thread(target=run, name=name, daemon=True)
    t.start()
    return t


def querier(fig, stop, sock, top):
    with Varlink(sock, timeout=30) as v:
        k = 0
        while not stop.is_set():
            k += 1
            for path in (top, top + "/steady"):
                t0 = time.monotonic()
                r = v.call(IFACE + ".Get", {"cgroup": path})
                fig.latest("get_ms_max", (time.monotonic() - t0) * 1000)
                fig.count("calls")
                if r is None or "error" in r:
                    fig.error("Get %s: %r" % (path, r))
                else:
                    fig.cumulative(r["parameters"]["cgroup"], "Get")
            if k % 5 == 0:
                r = v.call(IFACE + ".List", {"prefix": top, "include_dead": True})
                fig.count("calls")
                if r is None or "error" in r:
                    fig.error("List %s: %r" % (top, r and {k2: r[k2] for k2 in r if k2 != "parameters"}))
            if k % 25 == 0:
                r = v.call(IFACE + ".Status")
                fig.count("calls")
                if r is None or "error" in r:
                    fig.error("Status: %r" % (r,))
                else:
                    rec = r["parameters"]["status"]["reconciliation"]
                    bad = {q: n for q, n in rec["violations_total"].items() if n}
                    if bad:
                        fig.error("Status reports invariant violations %s, last: %s"
                                  % (bad, rec.get("last_violation")))
            stop.wait(0.02)


def acctctl_client(fig, stop, sock, top, exe):
    addr = "--address=unix:" + sock
    while not stop.is_set():
        for args in (["status"], ["list", top]):
            p = subprocess.run([exe, addr, "--json", "--no-pager"] + args, capture_output=True, text=True,
                               timeout=30)
            fig.count("calls")
            fig.count("acctctl")
            if p.returncode != 0:
                fig.error("acctctl %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()[:300]))
        stop.wait(1.0)


def watcher(fig, stop, sock, params, label):
    with Varlink(sock, timeout=30) as v:
        v.send(IFACE + ".Watch", params, more=True)
        while not stop.is_set():
            r = v.recv()
            if r is None:
                fig.error("%s: connection closed" % label)
                return
            if "error" in r or not r.get("continues"):
                fig.error("%s: %r" % (label, {k: r[k] for k in r if k != "parameters"}))
                return
            fig.count("watch_updates")
            for rec in r["parameters"]["cgroups"]:
                if params.get("cgroups") is not None:
                    fig.cumulative(rec, label)


def scraper_main(port, stop, out):
    """The scraper, in a process of its own: a thread of the clients' process
    can be kept from reading for seconds (the GIL, held by JSON parsing of
    multi-megabyte Watch updates, on a loaded host), and /metrics closes a
    connection that takes nothing for 15 s. Reports through `out`."""
    fig = Figures()
    try:
        while not stop.is_set():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            t0 = time.monotonic()
            try:
                c.request("GET", "/metrics")
                r = c.getresponse()
                page = r.read().decode()
            except (OSError, http.client.HTTPException) as e:
                raise RuntimeError("%r after %.1f s of the scrape" % (e, time.monotonic() - t0)) from e
            finally:
                c.close()
            fig.count("scrapes")
            fig.latest("scrape_ms_max", (time.monotonic() - t0) * 1000)
            if r.status != 200:
                fig.error("scrape: HTTP %d" % r.status)
            else:
                for m in re.finditer(r'^acctd_invariant_violations_total\{invariant="(\w+)"\} (\S+)$', page, re.M):
                    if float(m.group(2)) != 0:
                        fig.error("/metrics: acctd_invariant_violations_total{invariant=%s} = %s"
                                  % (m.group(1), m.group(2)))
                if "acctd_invariant_violations_total" not in page:
                    fig.error("/metrics has no acctd_invariant_violations_total")
            stop.wait(1.0)
    except Exception as e:  # noqa: BLE001: every failure of a client is a finding
        if not stop.is_set():
            fig.error("scraper: %r" % (e,))
    out.put((dict(fig.counts), fig.errors))


class Scraper:
    """scraper_main() in its process, started before any client thread
    (fork copies only the thread that calls it)."""

    def __init__(self, port):
        self.stop = multiprocessing.Event()
        self.out = multiprocessing.Queue()
        self.proc = multiprocessing.Process(target=scraper_main, args=(port, self.stop, self.out), daemon=True)
        self.proc.start()

    def finish(self, fig):
        self.stop.set()
        try:
            counts, errors = self.out.get(timeout=60)
        except Exception:  # noqa: BLE001
            fig.error("the scraper process did not report")
            return
        finally:
            self.proc.join(10)
            if self.proc.is_alive():
                self.proc.kill()
        with fig.lock:
            for k, v in counts.items():
                if k.endswith("_max"):
                    fig.counts[k] = max(fig.counts[k], v)
                else:
                    fig.counts[k] += v
            fig.errors.extend(errors)


# ---- the daemon's resources ----------------------------------------------------------

def memory_kib(pid):
    """{"VmRSS": KiB, "RssAnon": KiB, "RssFile": KiB} of pid."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1])
    if len(out) != 3:
        raise RuntimeError("no VmRSS, RssAnon or RssFile in /proc/%d/status" % pid)
    return out


def heap_kib(v):
    """What SQLite holds on acctd's heap (Status's history.heap_bytes), KiB."""
    st = v.call(IFACE + ".Status")["parameters"]["status"]
    return st["history"]["heap_bytes"] >> 10


def resources(pid, v):
    """(own KiB, fds, VmRSS KiB, RssFile KiB, SQLite heap KiB): own is
    RssAnon less SQLite's heap (the docstring's "Stability")."""
    heap = heap_kib(v)
    m = memory_kib(pid)
    return (m["RssAnon"] - heap, nfds(pid), m["VmRSS"], m["RssFile"], heap)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def backwards(series):
    """Served cumulative values that went backwards by more than the two
    readings' bounds allow: [(key, old, new, source)]."""
    out = []
    for key, vals in series.items():
        for (v0, b0), (v1, b1) in zip(vals, vals[1:]):
            if v1 + b1 < v0 - b0:
                out.append((key, (v0, b0), (v1, b1)))
    return out


def window_max(samples, lo, hi, idx, pick=max):
    vals = [s[idx] for s in samples if lo <= s[0] < hi]
    return pick(vals) if vals else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", "60")))
    ap.add_argument("--rate", type=float, default=float(os.environ.get("SOAK_RATE", "200")),
                    help="cgroups created (and as many removed) per second")
    ap.add_argument("--lifetime", type=float, default=float(os.environ.get("SOAK_LIFETIME", "0.5")),
                    help="seconds each churned cgroup lives")
    args = ap.parse_args()

    if os.geteuid() != 0:
        skip("needs root to create cgroups")
    hs = hierarchies()
    if hs is None:
        skip("no cgroup v2 at %s and not the hybrid layout (v1 %s and unified)" % (CG, ", ".join(V1)))
    top = PREFIX + str(os.getpid())
    try:
        os.mkdir(os.path.join(hs[0], top))
        os.rmdir(os.path.join(hs[0], top))
    except OSError as e:
        skip("cgroupfs not writable: %s" % e)
    remove_stale(hs)

    import tempfile
    work = tempfile.mkdtemp(prefix="acctd-soak-")
    stop = threading.Event()
    churn_stop = multiprocessing.Event()
    counts = multiprocessing.Array("d", 4)
    churn = steady = d = scraper = None
    log = ""
    fig = Figures()
    samples = []  # (t, own KiB, fds, VmRSS KiB, RssFile KiB, SQLite heap KiB): resources()
    failures = []

    def cleanup(*_):
        stop.set()
        churn_stop.set()
        if scraper is not None and scraper.proc.is_alive():
            scraper.proc.kill()
        if churn is not None:
            churn.join(60)
            if churn.is_alive():
                churn.kill()
        if steady is not None and steady.poll() is None:
            steady.kill()
            steady.wait()
        for h in hs:
            rmtree_cg(os.path.join(h, top))
        if d is not None and d.proc.poll() is None:
            d.stop()
        if not os.environ.get("SOAK_KEEP"):
            shutil.rmtree(work, ignore_errors=True)

    signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(1)))
    try:
        for h in hs:
            os.mkdir(os.path.join(h, top))
            os.mkdir(os.path.join(h, top, "steady"))
        procs = [os.path.join(h, top, "steady", "cgroup.procs") for h in hs]
        steady = subprocess.Popen([sys.executable, "-c", STEADY] + procs, stdout=subprocess.PIPE, text=True)
        assert steady.stdout.readline() == "in\n", "the steady workload did not enter its cgroups"

        port = free_port()
        sock = os.path.join(work, "io.acctd")
        conf = acctd.write_config(os.path.join(work, "acctd.conf"), {
            "sampling": {"fast_interval": "250ms", "slow_interval": "2s", "rescan_interval": "10s"},
            "cgroups": {"tombstone_retention": "10s"},
            "log": {"level": os.environ.get("SOAK_LOG_LEVEL", "info")},
        })
        d = acctd.Daemon(work, None, conf, extra=["--socket", sock, "--metrics-listen", "127.0.0.1:%d" % port])
        d.wait_notify("READY=1", timeout=60)
        pid = d.proc.pid
        d.next_state(2, timeout=60)
        probe = Varlink(sock)
        base_rss, base_fds = resources(pid, probe)[:2]
        cpu0 = cpu_seconds(pid)

        cg = "/" + top  # the tree's path as acctd names it
        churn = multiprocessing.Process(target=churn_main, args=(hs, top, args.rate, args.lifetime, churn_stop, counts),
                                        daemon=True)
        exe = os.environ.get("ACCTCTL") or os.path.join(ROOT, "build", "daemon", "acctctl", "acctctl")
        t_start = time.monotonic()
        churn.start()
        scraper = Scraper(port)
        threads = [
            client(fig, stop, "querier", lambda: querier(fig, stop, sock, cg)),
            client(fig, stop, "acctctl", lambda: acctctl_client(fig, stop, sock, cg, exe)),
            client(fig, stop, "watch-cgroups", lambda: watcher(
                fig, stop, sock, {"cgroups": [cg, cg + "/steady"], "interval_ms": 100}, "Watch cgroups")),
            client(fig, stop, "watch-prefix", lambda: watcher(
                fig, stop, sock, {"prefix": cg, "interval_ms": 250}, "Watch prefix")),
        ]
        end = t_start + args.seconds
        while time.monotonic() < end:
            if d.proc.poll() is not None:
                failures.append("acctd exited (%s):\n%s" % (d.proc.returncode, d.logtext()[-3000:]))
                break
            samples.append((time.monotonic() - t_start,) + resources(pid, probe))
            time.sleep(1.0)
        duration = time.monotonic() - t_start
        cpu = cpu_seconds(pid) - cpu0 if d.proc.poll() is None else 0.0
        churn_stop.set()
        churn.join(120)
        stop.set()
        scraper.finish(fig)
        for t in threads:
            t.join(40)
            if t.is_alive():
                failures.append("client %s did not finish" % t.name)
        created, removed, churn_errors, churn_secs = counts[:]
        # Clients gone, churned cgroups removed: let the daemon sweep what it
        # keeps of them (descriptors of live cgroups close with their
        # removal), then the count must be back where it started.
        after_fds = None
        if d.proc.poll() is None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                after_fds = nfds(pid)
                if after_fds <= base_fds + FD_SLACK:
                    break
                time.sleep(0.5)
            st = Varlink(sock).call(IFACE + ".Status")
            status = st["parameters"]["status"]
            end_rss = resources(pid, probe)[0]
        log = d.logtext()
        rc = d.stop(timeout=30)
        if rc != 0:
            failures.append("acctd exited %s on SIGTERM" % rc)
    finally:
        cleanup()

    # ---- the verdict ----
    if churn_errors:
        failures.append("the churn failed %d mkdir/rmdir" % churn_errors)
    if fig.counts["errors"]:
        failures.append("%d client errors, the first: %s" % (fig.counts["errors"], "\n  ".join(fig.errors)))
    for what in ("calls", "acctctl", "watch_updates", "scrapes"):
        if fig.counts[what] == 0:
            failures.append("no %s during the run" % what)
    rec = status["reconciliation"]
    bad = {q: n for q, n in rec["violations_total"].items() if n}
    if bad:
        failures.append("invariant violations %s in %d passes, last: %s" % (bad, rec["passes"], rec.get("last_violation")))
    back = backwards(fig.series)
    if back:
        failures.append("%d served cumulative values went backwards, e.g. %s" % (len(back), back[:3]))
    if not any(len(v) > 10 for v in fig.series.values()):
        failures.append("too few readings of cumulative values to check they never go backwards")
    for line in log.splitlines():
        # the level where the log writes it ("DATE TIME crit: ..."), not a word
        # anywhere: a cgroup's name is free text (a hostile one left by another
        # run, "<img src=x onerror=alert(1)>", in the start's table of the
        # largest cgroups failed a clean clone's check)
        if re.search(r"^(\S+ \S+ )?(crit|alert|emerg):|\bBUG\b|AddressSanitizer|runtime error:", line):
            failures.append("log: " + line)

    warm = max(10.0, duration / 4)
    ref_lo, ref_hi = warm, warm + (duration - warm) / 3
    end_lo = duration - (duration - warm) / 3
    ref_rss, end_rss_max = window_max(samples, ref_lo, ref_hi, 1), window_max(samples, end_lo, duration + 1, 1)
    ref_fds, end_fds_min = (window_max(samples, ref_lo, ref_hi, 2),
                           window_max(samples, end_lo, duration + 1, 2, min))
    if ref_rss is None or end_rss_max is None:
        failures.append("too few resource samples (%d) for the windows" % len(samples))
    else:
        if end_rss_max > ref_rss * (1 + RSS_TOL) + RSS_SLACK:
            failures.append("own memory grew: %d KiB max in [%.0f, %.0f) s, %d KiB in the last window"
                            % (ref_rss, ref_lo, ref_hi, end_rss_max))
        seg = (duration - warm) / 4
        maxima = [window_max(samples, warm + k * seg, warm + (k + 1) * seg, 1) for k in range(4)]
        step = max(CLIMB_STEP, ref_rss * CLIMB_FRACTION)
        if None not in maxima and all(b > a + step for a, b in zip(maxima, maxima[1:])):
            failures.append("own memory climbs after warm-up: segment maxima %s KiB" % maxima)
        if end_fds_min > ref_fds + FD_SLACK:
            failures.append("descriptors grew: at most %d in [%.0f, %.0f) s, at least %d in the last window"
                            % (ref_fds, ref_lo, ref_hi, end_fds_min))
    if after_fds is not None and after_fds > base_fds + FD_SLACK:
        failures.append("descriptors not back: %d before the churn and the clients, %d 30 s after they stopped"
                        % (base_fds, after_fds))

    max_rss = max([s[1] for s in samples] or [0])
    max_fds = max([s[2] for s in samples] or [0])
    max_vmrss, max_file, max_heap = (max([s[k] for s in samples] or [0]) for k in (3, 4, 5))
    if max_heap > HEAP_BOUND:
        failures.append("SQLite's heap reached %d KiB, above its caches' bound %d KiB" % (max_heap, HEAP_BOUND))
    summary = ("soak: %.0f s, cgroups at the end %d live %d dead, churn %.0f/s reached (target %.0f/s, lifetime %.2f s), cgroups created %d removed %d, "
               "acctd CPU %.1f s (%.0f%% of a CPU, load average %.1f), "
               "calls %d (acctctl runs %d), scrapes %d, watch updates %d, "
               "own memory (RssAnon - SQLite heap) KiB start %d ref-max %s end-max %s max %d after %d, "
               "max VmRSS %d RssFile %d SQLite heap %d KiB, "
               "fds start %d ref-max %s end-min %s max %d after %s, Get max %d ms, scrape max %d ms, errors %d, violations %s"
               % (duration, status["cgroups_live"], status["cgroups_dead"], created / churn_secs if churn_secs else 0, args.rate, args.lifetime, created, removed,
                  cpu, 100 * cpu / duration, os.getloadavg()[0],
                  fig.counts["calls"], fig.counts["acctctl"], fig.counts["scrapes"], fig.counts["watch_updates"],
                  base_rss, ref_rss, end_rss_max, max_rss, end_rss, max_vmrss, max_file, max_heap, base_fds, ref_fds, end_fds_min, max_fds, after_fds,
                  fig.counts["get_ms_max"], fig.counts["scrape_ms_max"], fig.counts["errors"],
                  rec["violations_total"]))
    print("resource samples (t s, own KiB, fds, VmRSS KiB, RssFile KiB, SQLite heap KiB): "
          + " ".join("%.0f:%d:%d:%d:%d:%d" % s for s in samples))
    if failures:
        print("acctd's log, the end:\n" + "\n".join(log.splitlines()[-40:]))
        print("FAIL:\n- " + "\n- ".join(failures))
    print(summary)
    return 1 if failures else 0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
