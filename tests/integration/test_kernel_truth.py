"""acctd against the kernel, on this host's real cgroups, for a few minutes of
mixed workload (issue 11, acceptance 2). Root only; slow (DURATION below).
The file is long because the checks need a workload, a kernel poller, an API
poller and a matcher that ties each served value to the kernel's readings
around its sample time; split, none of them would be used on its own.

Workload, in a tree of its own (real cgroups in the v1 memory, cpu and cpuacct
hierarchies and the unified one, created by the test and removed after it):

  TOP/mem          a process that maps memory in steps, holds each step, then
                   unmaps it in steps (grows and shrinks); a memory limit
  TOP/cpu          a CPU burner under a CFS quota (throttling)
  TOP/nest/a       a sleeping process; children x (memory steps) and y (a
                   burner under a quota): a parent with children and grandchildren
  TOP/nest/b       reads a file into the page cache and drops it, in steps
  TOP/churn/cN     short-lived cgroups: each runs a short CPU-bound shell, is
                   emptied, and is removed (rmdir) after a varying delay
  TOP/hog/z        allocates and frees 128 MiB in turn (children_memory)
  TOP-memonly      a cgroup in the v1 memory hierarchy only: no CPU
                   accounting, so acctd must serve no CPU value for it

Every step a workload process takes is logged by the process itself with its
CLOCK_MONOTONIC time (Python's time.monotonic() is that clock, as is acctd's
acct_now_us()), as is each churn cgroup's life.

How a value is tied to the kernel, exactly. acctd serves each value with
age_us = (its clock when rendering the reply) - (the time it stamped on the
sample); it stamps the pass's start and then reads the files, so the file was
read at some instant r >= T. The test sends each request at S and receives the
reply at R (S <= render <= R), so T >= S - age_us, and r <= R of the first
reply that showed the value. Meanwhile a poller thread reads the same kernel
files over and over, recording for each read the instants t0 < t1 around it.
For the instant r in [T_lo, R_first], the reads that bracket it are the last
one that ended before T_lo and the first one that began after R_first, and
the kernel's value at r lies within the range of the values read from the
first of these to the last:
  - always for cumulative counters (CPU time, PSI totals, pgfault...), which
    only grow: an exact bracket with no assumption;
  - for gauges (memory, memory.stat sizes, per-node memory, tasks) when at
    most one workload step of the cgroup's subtree overlaps that span: one step
    moves the value one way only, so no value outside the range occurred. A
    comparison with more steps in the span is ambiguous and skipped (counted;
    the run must still give enough exact comparisons of each quantity). With
    one step in the span, the kernel's own batching may move the value the
    other way meanwhile, by at most what kernel_fuzz() derives from memcg's
    batch sizes, and the comparison allows that much.
A value passes when it lies within its stated bound of that range. There is
no other tolerance: a mismatch means acctd served a value the kernel did not
have at any instant the value can have been read at.

The root is checked on its cumulative counters; its gauges change in both
directions between two polls (the whole host's memory), so no exact bracket
exists for them, except for tasks: the number of threads at any instant
between two polls of /proc/loadavg (nr_threads) and /proc/stat (processes:
forks since boot) is within [nr - exits, nr + forks] of the first poll, exits
being forks minus the change of nr_threads.

The root's load average is compared with /proc/loadavg: both are exponential
averages of the number of running and uninterruptible threads, the kernel's
sampled every 5 s (LOAD_FREQ), acctd's at its load interval (also 5 s); see
check_root_load() for the tolerance and its derivation.

Invariants: acctd's reconciliation (Status: violations_total, and the state
file's "reconciliation" section) must report no violation over the run while
the kernel itself was right (the test checks the kernel's own children-vs-
parent sums in its polls).

Tombstones: every churned cgroup's record must hold, once it is dead, the
kernel's cpuacct.usage as the test read it after the cgroup was emptied and
just before rmdir (nothing can add CPU time to an empty cgroup), unless the
record says it could not read final values (a "final": false member). A
churned cgroup acctd never saw has no record: acctd learns of a cgroup from
inotify and its rescans, and one made and removed while its event loop was
busy (a rescan of 10,000 other cgroups beside two CPU hogs: 3 of 184) leaves
nothing it could honestly record. Such cgroups are counted, and may be at
most MAX_UNSEEN_CHURN of them.

Set ACCTD_TRUTH_SECONDS for a shorter run (below 70 s the load comparison,
which needs a minute of warm-up, is left out).
"""
import bisect
import collections
import math
import os
import subprocess
import sys
import threading
import time

import pytest

import acctd
from test_api_client import Varlink

IFACE = "io.acctd.Accounting"

DURATION = float(os.environ.get("ACCTD_TRUTH_SECONDS", "180"))
POLL_PAUSE = 0.005   # between rounds of the kernel poller
QUERY_PAUSE = 0.08   # between rounds of Get requests
PAGE = os.sysconf("SC_PAGESIZE")
USER_HZ = os.sysconf("SC_CLK_TCK")
LOAD_FREQ = 5.0          # kernel/sched/loadavg.c: avenrun is updated every 5 s
EXP_1 = 1884 / 2048.0    # its 1-minute decay per update, e^(-5/60) in fixed point

CG = "/sys/fs/cgroup"
HIER = {"memory": CG + "/memory", "cpu": CG + "/cpu", "cpuacct": CG + "/cpuacct", "unified": CG + "/unified"}

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups")

# ---- the workload --------------------------------------------------------------

WORKLOAD = r"""
import mmap, os, sys, time
def log(tag):
    t = time.monotonic()      # before the step (B) / after it (E)
    sys.stdout.write("%s %.9f\n" % (tag, t)); sys.stdout.flush()
mode = sys.argv[1]
sys.stdin.readline()          # moved into its cgroups
if mode == "mem":
    step, n, hold = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    maps = []
    log("ready")
    while True:
        for grow in (True, False):
            for _ in range(n):
                log("B")
                if grow:
                    m = mmap.mmap(-1, step)
                    for i in range(0, step, 4096):
                        m[i] = 1
                    maps.append(m)
                else:
                    maps.pop().close()
                log("E")
                time.sleep(hold)
elif mode == "file":
    path, size, hold = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    buf = bytearray(1 << 20)
    log("B")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    for i in range(size >> 20):
        os.write(fd, buf)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    log("E")
    log("ready")
    while True:
        log("B")
        os.lseek(fd, 0, 0)
        while os.readv(fd, [buf]) > 0:
            pass
        log("E")
        time.sleep(hold)
        log("B")
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        log("E")
        time.sleep(hold)
elif mode == "burn":
    log("ready")
    while True:
        pass
else:
    log("ready")
    while True:
        time.sleep(3600)
"""

# (relative path, workload args, cfs quota in us per 100 ms or None, memory limit or None)
TREE = [
    ("", None, None, None),
    ("mem", ["mem", str(16 << 20), "4", "1.0"], None, 1 << 30),
    ("cpu", ["burn"], 25000, None),
    ("nest", None, None, None),
    ("nest/a", ["sleep"], None, None),
    ("nest/a/x", ["mem", str(8 << 20), "3", "0.7"], None, None),
    ("nest/a/y", ["burn"], 15000, None),
    ("nest/b", ["file", "@FILE@", str(32 << 20), "1.2"], None, None),
    ("churn", None, None, None),
    # a child that allocates and frees 128 MiB in turn (children_memory)
    ("hog", None, None, None),
    ("hog/z", ["mem", str(128 << 20), "1", "0.1"], None, None),
]
# A cgroup in the v1 memory hierarchy only (beside TOP, so that the tree's
# task counts have one meaning): it has no CPU accounting, so acctd must serve
# no CPU value for it.
MEMONLY = "-memonly"
CHURN_CPU_LOOPS = 20000          # a dash loop: some tens of ms of CPU
CHURN_GAPS = (0.0, 0.05, 0.5)    # emptied -> rmdir, in turn
CHURN_PERIOD = 1.0
MAX_UNSEEN_CHURN = 0.1           # of the churned cgroups, at most this many never seen (no record)


def mkcg(rel, top):
    for h in HIER.values():
        os.mkdir(os.path.join(h, top, rel) if rel else os.path.join(h, top))


def rmcg(path):
    """rmdir a cgroup (absolute acctd path) in every hierarchy, deepest first by the caller."""
    for h in HIER.values():
        d = h + path
        for _ in range(100):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


class Steps:
    """Intervals [begin, end] of monotonic time in which a cgroup's memory or
    tasks may move (one direction each), by cgroup path."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_path = collections.defaultdict(list)  # path -> [[begin, end]]

    def begin(self, path, t):
        with self.lock:
            self.by_path[path].append([t, math.inf])
            return self.by_path[path][-1]

    def end(self, iv, t):
        with self.lock:
            iv[1] = t

    def freeze(self):
        """After the run: sorted begins and ends per path, for count()."""
        self.sorted = {p: (sorted(iv[0] for iv in ivs), sorted(iv[1] for iv in ivs))
                       for p, ivs in self.by_path.items()}

    def count(self, paths, a, b):
        """Steps of any of `paths` overlapping [a, b]: those that began by b
        less those that ended before a (each begins before it ends)."""
        n = 0
        for p in paths:
            begins, ends = self.sorted.get(p, ((), ()))
            n += bisect.bisect_right(begins, b) - bisect.bisect_left(ends, a)
        return n


class Workload:
    def __init__(self, top, tmpdir, steps):
        self.top = top
        self.steps = steps
        self.procs = []
        self.threads = []
        self.stop = threading.Event()
        self.file = os.path.join(str(tmpdir), "pagecache.bin")
        self.churned = []   # dicts: path, final_us, emptied, removed, gap
        self.migrations = Steps()  # under "": when the test moved a task between cgroups
        self.churn_live = None

    def path(self, rel):
        return "/" + self.top + ("/" + rel if rel else "")

    def start(self):
        os.mkdir(HIER["memory"] + "/" + self.top + MEMONLY)
        for rel, args, quota, limit in TREE:
            mkcg(rel, self.top)
            p = self.path(rel)
            if quota:
                write(HIER["cpu"] + p + "/cpu.cfs_quota_us", str(quota))
            if limit:
                write(HIER["memory"] + p + "/memory.limit_in_bytes", str(limit))
        for rel, args, quota, limit in TREE:
            if args:
                self.spawn(self.path(rel), [a.replace("@FILE@", self.file) for a in args])
        self.spawn("/" + self.top + MEMONLY, ["sleep"], ("memory",))
        t = threading.Thread(target=self.churn, daemon=True)
        t.start()
        self.threads.append(t)

    def spawn(self, path, args, hierarchies=tuple(HIER)):
        iv = self.steps.begin(path, time.monotonic())   # start-up: the process enters and settles
        child = subprocess.Popen([sys.executable, "-c", WORKLOAD] + args, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        self.procs.append(child)
        mv = self.migrations.begin("", time.monotonic())
        for h in hierarchies:
            write(HIER[h] + path + "/cgroup.procs", str(child.pid))
        self.migrations.end(mv, time.monotonic())
        child.stdin.write("go\n")
        child.stdin.flush()
        line = child.stdout.readline().split()
        while line and line[0] != "ready":
            line = child.stdout.readline().split()
        assert line, "workload %s in %s exited" % (args, path)
        self.steps.end(iv, time.monotonic())
        t = threading.Thread(target=self.follow, args=(path, child), daemon=True)
        t.start()
        self.threads.append(t)

    def follow(self, path, child):
        """Record the child's steps: from its B time to the moment its E line
        has been read (a pipe page charged for the line is freed by then)."""
        iv = None
        for line in child.stdout:
            tag, t = line.split()
            if tag == "B":
                iv = self.steps.begin(path, float(t))
            elif tag == "E" and iv is not None:
                self.steps.end(iv, time.monotonic())
                iv = None

    def churn(self):
        i = 0
        while not self.stop.is_set():
            rel = "churn/c%d" % i
            path = self.path(rel)
            gap = CHURN_GAPS[i % len(CHURN_GAPS)]
            i += 1
            t0 = time.monotonic()
            # Its life moves memory and tasks (of its ancestors too: count() is
            # asked about a subtree).
            iv = self.steps.begin(path, t0)
            mkcg(rel, self.top)
            self.churn_live = path
            script = "".join("echo $$ > %s/cgroup.procs; " % (h + path) for h in HIER.values())
            script += "i=0; while [ $i -lt %d ]; do i=$((i+1)); done" % CHURN_CPU_LOOPS
            mv = self.migrations.begin("", time.monotonic())  # the shell moves itself
            # The shell's life moves tasks (and memory) both ways, in and out:
            # a second step over it, so that a reading between two polls that
            # both missed a short shell is not taken for a one-way move.
            shell = self.steps.begin(path, time.monotonic())
            p = subprocess.Popen(["sh", "-c", script])
            p.wait()
            emptied = time.monotonic()
            self.steps.end(shell, emptied)
            self.migrations.end(mv, emptied)
            time.sleep(gap)
            final_ns = int(read(HIER["cpuacct"] + path + "/cpuacct.usage"))
            self.churn_live = None
            rmcg(path)
            removed = time.monotonic()
            self.steps.end(iv, removed)
            self.churned.append({"path": path, "final_us": final_ns // 1000, "emptied": emptied, "made": t0,
                                 "removed": removed, "gap": gap, "exit": p.returncode})
            self.stop.wait(max(0.0, CHURN_PERIOD - (removed - t0)))

    def close(self):
        self.stop.set()
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        for t in self.threads:
            t.join(10)
        for rel, *_ in reversed(TREE):
            rmcg(self.path(rel))
        rmcg("/" + self.top + MEMONLY)
        try:
            os.unlink(self.file)
        except OSError:
            pass


# ---- the kernel poller ---------------------------------------------------------

CUMULATIVE_MEMSTAT = ("pgpgin", "pgpgout", "pgfault", "pgmajfault", "workingset_refault_anon",
                      "workingset_refault_file", "workingset_activate_anon", "workingset_activate_file",
                      "workingset_restore_anon", "workingset_restore_file", "workingset_nodereclaim")


def memstat_cumulative(key):
    return key[6:] in CUMULATIVE_MEMSTAT if key.startswith("total_") else key in CUMULATIVE_MEMSTAT


def parse_kv(text):
    out = {}
    for line in text.splitlines():
        k, v = line.split()
        out[k] = int(v)
    return out


def parse_psi(text):
    out = {}
    for line in text.splitlines():
        kind, *fields = line.split()
        out[kind] = int(dict(f.split("=") for f in fields)["total"])
    return out


def parse_numa_hier(text):
    """v1 memory.numa_stat hierarchical_total=, in bytes per node."""
    for line in text.splitlines():
        name, *fields = line.split()
        if name.startswith("hierarchical_total="):
            return {int(f.split("=")[0][1:]): int(f.split("=")[1]) * PAGE for f in fields}
    return None


class Series:
    """Reads of one source of one cgroup: t0[i] < (the read) < t1[i], value[i]
    (a dict of quantity -> number; consecutive equal dicts are one object)."""

    def __init__(self):
        self.t0, self.t1, self.v = [], [], []

    def add(self, t0, t1, v):
        if self.v and self.v[-1] == v:
            v = self.v[-1]
        self.t0.append(t0)
        self.t1.append(t1)
        self.v.append(v)

    def bracket(self, lo, hi):
        """(i, j): the last read that ended before lo and the first that began
        after hi, or None when the run has no such reads."""
        i = bisect.bisect_right(self.t1, lo) - 1
        j = bisect.bisect_left(self.t0, hi)
        if i < 0 or j >= len(self.t0):
            return None
        return i, j


def kernel_sources(path):
    """The kernel files of cgroup `path` (acctd path) by source; each source is
    read back to back, so derived quantities (working set, swap) use one moment."""
    m, a, c, u = (HIER[h] + (path if path != "/" else "") for h in ("memory", "cpuacct", "cpu", "unified"))
    root = path == "/"

    def mem():
        usage = int(read(m + "/memory.usage_in_bytes"))
        st = parse_kv(read(m + "/memory.stat"))
        memsw = int(read(m + "/memory.memsw.usage_in_bytes")) if os.path.exists(m + "/memory.memsw.usage_in_bytes") else None
        peak = int(read(m + "/memory.max_usage_in_bytes"))
        numa = parse_numa_hier(read(m + "/memory.numa_stat"))
        v = {"memory": usage, "memory.peak": peak, "memory.working_set": max(usage - st["total_inactive_file"], 0)}
        if not root:
            lim = int(read(m + "/memory.limit_in_bytes"))
            v["memory.max"] = -1 if lim >= (1 << 62) else lim
        if memsw is not None:
            v["swap"] = max(memsw - usage, 0)
        # memory events, v1 style (failcnt as "max", as runc and cAdvisor map it)
        v["memory.events.max"] = int(read(m + "/memory.failcnt"))
        oc = parse_kv(read(m + "/memory.oom_control"))
        v["memory.under_oom"] = oc["under_oom"]
        if "oom_kill" in oc:
            v["memory.events.oom_kill"] = oc["oom_kill"]
        for k, x in st.items():
            v["memory_stat." + k] = x
        for n, x in (numa or {}).items():
            v["numa.%d" % n] = x
        return v

    def cpu():
        v = {"cpu.usage": int(read(a + "/cpuacct.usage")) // 1000}
        st = parse_kv(read(a + "/cpuacct.stat"))
        v["cpu.user"] = st["user"] * 1000000 // USER_HZ
        v["cpu.system"] = st["system"] * 1000000 // USER_HZ
        cs = parse_kv(read(c + "/cpu.stat"))
        v["cpu.periods"] = cs["nr_periods"]
        v["cpu.throttled_periods"] = cs["nr_throttled"]
        v["cpu.throttled"] = cs["throttled_time"] // 1000
        return v

    def psi():
        v = {}
        for r in ("cpu", "memory", "io"):
            t = parse_psi(read(u + "/%s.pressure" % r))
            for kind, total in t.items():
                v["psi.%s.%s" % (r, kind)] = total
        return v

    out = {"mem": mem}
    if os.path.isdir(a):
        out["cpu"] = cpu
    if os.path.exists(u + "/cpu.pressure"):
        out["psi"] = psi
    return out


# Which source, and whether cumulative, for each quantity acctd serves.
# memory_stat.* and numa.* are found by prefix.
QUANTITIES = {
    "memory": ("mem", False), "memory.working_set": ("mem", False), "memory.peak": ("mem", True),
    "memory.max": ("mem", False), "swap": ("mem", False),
    "cpu.usage": ("cpu", True), "cpu.user": ("cpu", True), "cpu.system": ("cpu", True),
    "cpu.periods": ("cpu", True), "cpu.throttled_periods": ("cpu", True), "cpu.throttled": ("cpu", True),
    "tasks": ("tasks", False),
    "memory.events.max": ("mem", True), "memory.events.oom_kill": ("mem", True), "memory.under_oom": ("mem", False),
}


def source_of(key):
    if key in QUANTITIES:
        return QUANTITIES[key]
    if key.startswith("memory_stat."):
        return "mem", memstat_cumulative(key[len("memory_stat."):])
    if key.startswith("numa."):
        return "mem", False
    if key.startswith("psi."):
        return "psi", True
    return None, None


class Poller:
    def __init__(self, top, paths, workload):
        self.top = top
        self.paths = paths                  # our tree's cgroups, parents first
        self.workload = workload
        self.series = collections.defaultdict(Series)  # (path, source) -> Series
        self.sys = Series()                 # /proc/loadavg + /proc/stat
        self.stop = threading.Event()
        self.rounds = 0
        self.sources = {p: kernel_sources(p) for p in paths + ["/"]}
        self.errors = collections.Counter()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def read_sys(self):
        t0 = time.monotonic()
        la = read("/proc/loadavg").split()
        st = read("/proc/stat")
        t1 = time.monotonic()
        v = {"avg1": float(la[0]), "nr_threads": int(la[3].split("/")[1])}
        for line in st.splitlines():
            if line.startswith(("processes ", "procs_running ", "procs_blocked ")):
                k, x = line.split()
                v[k] = int(x)
        self.sys.add(t0, t1, v)

    def read_source(self, path, name, fn):
        t0 = time.monotonic()
        try:
            v = fn()
        except (FileNotFoundError, OSError, ValueError, KeyError) as e:
            churn = "/churn/c" in path
            self.errors["%s %s: %s" % ("a churned cgroup (removed mid-poll)" if churn else path, name,
                                       type(e).__name__)] += 1
            return
        self.series[(path, name)].add(t0, time.monotonic(), v)

    def read_tasks(self, paths):
        """Own thread counts of `paths` (unified cgroup.threads), back to back;
        hierarchical sums per cgroup of the tree. The churned cgroups are
        listed in the same span (a cgroup the list missed would be missing
        from its parent's sum)."""
        t0 = time.monotonic()
        own = {}
        churn = "/" + self.top + "/churn"
        try:
            kids = [churn + "/" + e.name for e in os.scandir(HIER["unified"] + churn) if e.is_dir()]
        except OSError:
            return
        paths = [p for p in paths if not p.startswith(churn + "/")] + kids
        for p in paths:
            try:
                if os.path.isdir(HIER["unified"] + p):
                    own[p] = len(read(HIER["unified"] + p + "/cgroup.threads").split())
                else:  # as acctd: the v1 tasks file where the unified hierarchy lacks the cgroup
                    own[p] = len(read(HIER["memory"] + p + "/tasks").split())
            except OSError:
                own[p] = None
        t1 = time.monotonic()
        for p in paths:
            sub = [q for q in own if q == p or q.startswith(p + "/")]
            if any(own[q] is None for q in sub):
                continue
            self.series[(p, "tasks")].add(t0, t1, {"tasks": sum(own[q] for q in sub)})

    def run(self):
        while not self.stop.is_set():
            churn = self.workload.churn_live
            paths = self.paths + ([churn] if churn else [])
            self.read_sys()
            for p in paths + ["/"]:
                src = self.sources.get(p) or self.sources.setdefault(p, kernel_sources(p))
                for name, fn in src.items():
                    self.read_source(p, name, fn)
            self.read_tasks(paths)
            self.read_sys()
            self.rounds += 1
            time.sleep(POLL_PAUSE)


# ---- the API poller ------------------------------------------------------------

def age_of(d):
    """The age of a served value (age_us; ageUs should the API's names change)."""
    if not isinstance(d, dict):
        return None
    return d.get("age_us", d.get("ageUs"))


def flatten(rec):
    """(key, value, bound, age_us) for every value a Get record serves."""
    out = []
    for k, v in (rec.get("values") or {}).items():
        if isinstance(v, dict) and "value" in v:
            out.append((k, v["value"], v.get("bound", 0) or 0, age_of(v)))
    ms = rec.get("memory_stat")
    if isinstance(ms, dict):
        ms = dict(ms)
        age = ms.pop("age_us", None)
        if age is None:
            age = ms.pop("ageUs", None)
        if age is None:
            age = age_of(rec.get("memory_stat_age")) or rec.get("memory_stat_age_us")
        for k, v in ms.items():
            if isinstance(v, int):
                out.append(("memory_stat." + k, v, 0, age))
    for n in rec.get("numa") or ():
        out.append(("numa.%d" % n["node"], n["value"], n.get("bound", 0) or 0, age_of(n)))
    for r, res in (rec.get("pressure") or {}).items():
        for kind, line in (res or {}).items():
            if line and "total_us" in line:
                t = line["total_us"]
                out.append(("psi.%s.%s" % (r, kind), t["value"], t.get("bound", 0) or 0, age_of(t)))
    return out


class ApiPoller:
    def __init__(self, sock, paths, workload):
        self.sock = sock
        self.paths = paths
        self.workload = workload
        self.replies = []     # (path, S, R, record)
        self.status = []      # (S, R, status)
        self.stop = threading.Event()
        self.errors = collections.Counter()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        with Varlink(self.sock, timeout=30) as v:
            while not self.stop.is_set():
                churn = self.workload.churn_live
                for p in ["/"] + self.paths + ([churn] if churn else []):
                    s = time.monotonic()
                    v.send(IFACE + ".Get", {"cgroup": p})
                    r = v.recv()
                    t = time.monotonic()
                    if r is None:
                        return
                    if "error" in r:
                        self.errors["%s: %s" % (p, r["error"])] += 1
                        continue
                    self.replies.append((p, s, t, r["parameters"]["cgroup"]))
                s = time.monotonic()
                v.send(IFACE + ".Status", {})
                r = v.recv()
                self.status.append((s, time.monotonic(), r["parameters"]["status"]))
                time.sleep(QUERY_PAUSE)


# ---- matching ------------------------------------------------------------------

class Samples:
    """Readings acctd served, merged across replies: for each (path, key),
    consecutive replies that show the same value (and bound) with overlapping
    sample-time intervals [S - age, R - age] are one reading, whose read
    instant r lies in [T_lo, R_first]: T_lo the latest lower end (each is a
    lower bound of the sample time, and r is not before it), R_first the first
    reply's R. A reply with another value starts a new reading with its own
    bounds, even under the same sample time (acctd may store a value before
    the time of its sample: the new value then shows with the old, earlier
    time, which is still a lower bound of its read). Should two replies of one
    value come from two reads (the value did not change between them, and the
    replies were slow enough for their intervals to overlap both sample
    times), the window [T_lo, R_first] still overlaps the span between the two
    reads, over which a cumulative counter held that value; a window that
    comes out empty is left unchecked (counted)."""

    def __init__(self):
        self.cur = {}     # (path, key) -> [lo, hi, value, bound, R_first]
        self.done = []    # (path, key, value, bound, T_lo, R_first)
        self.empty = 0

    def add(self, path, key, value, bound, age, s, r):
        if age is None:
            return
        a, b = s - age / 1e6, r - age / 1e6
        k = (path, key)
        c = self.cur.get(k)
        if c is not None and c[2] == value and c[3] == bound and a <= c[1] and b >= c[0]:
            c[0], c[1] = max(c[0], a), min(c[1], b)
            return
        if c is not None:
            self.close(k, c)
        self.cur[k] = [a, b, value, bound, r]

    def close(self, k, c):
        if c[0] > c[4]:
            self.empty += 1
            return
        self.done.append((k[0], k[1], c[2], c[3], c[0], c[4]))

    def finish(self):
        for k, c in self.cur.items():
            self.close(k, c)
        self.cur = {}
        return self.done


def subtree(path, paths):
    return [p for p in paths if p == path or p.startswith(path + "/")]


class Report:
    def __init__(self):
        self.fail = collections.defaultdict(list)     # check -> messages
        self.stats = collections.Counter()

    def add(self, check, msg):
        self.fail[check].append(msg)

    def text(self):
        out = []
        for check, msgs in sorted(self.fail.items()):
            out.append("%s: %d failure(s)" % (check, len(msgs)))
            out += ["    " + m for m in msgs[:12]]
            if len(msgs) > 12:
                out.append("    ... %d more" % (len(msgs) - 12))
        return "\n".join(out)


# The kernel's own fuzz, which moves a gauge with no workload step (from its
# batching; see ../shared/BRIEF.md): memory.usage_in_bytes counts the pages
# pre-charged to a memcg's per-CPU stock, up to MEMCG_CHARGE_BATCH (64) pages
# per CPU for each of up to NR_MEMCG_STOCK (7) memcgs a CPU caches, and a drain
# (another memcg charging on that CPU) takes them off the memcg and its
# ancestors at any time; memory.stat and memory.numa_stat show flushed stats,
# which lag the truth by the updates each CPU holds back (below
# MEMCG_CHARGE_BATCH pages per CPU) plus those passed on but below the flush
# threshold (MEMCG_CHARGE_BATCH pages times the CPUs), and catch up at a
# flush at any time. Without a step in
# the span these moves are one-way too (drains only lower usage; one flush is
# one jump), so the bracket is exact; with one step in it a move the other
# way can fall between two reads, and the comparison allows it.
MEMCG_CHARGE_BATCH = 64
NR_MEMCG_STOCK = 7
NR_CPUS = os.cpu_count() or 1
STAT_FUZZ = 2 * MEMCG_CHARGE_BATCH * NR_CPUS * PAGE


# Values acctd derives from two files (working set = usage_in_bytes -
# total_inactive_file, swap = memsw - usage): read an instant apart during a
# step, both by acctd and by the poller, the two files can catch the step at
# different points, so that the difference need not lie between the polled
# ones; they are compared in spans without a step only.
DERIVED = ("memory.working_set", "swap")


def kernel_fuzz(key, memcgs):
    """Bytes by which the kernel's reading of `key` may move outside a step,
    for a cgroup whose subtree has `memcgs` memory cgroups."""
    stock = min(memcgs, NR_MEMCG_STOCK) * MEMCG_CHARGE_BATCH * NR_CPUS * PAGE
    if key == "memory":
        return stock
    if key.startswith(("memory_stat.", "numa.")):
        return STAT_FUZZ
    return 0


def check_values(samples, poller, steps, tree_paths, t_start, rep):
    all_paths = set(tree_paths) | set(steps.by_path)
    for path, key, value, bound, t_lo, r_first in samples:
        if path == "/" and key == "tasks":
            continue  # check_root_tasks()
        src, cumulative = source_of(key)
        if src is None:
            rep.stats["unchecked " + key] += 1
            continue
        if path == "/" and not cumulative:
            rep.stats["root gauge (no exact bracket)"] += 1
            continue
        if t_lo < t_start:
            continue  # sampled before the workload was in place
        ser = poller.series.get((path, src))
        br = ser.bracket(t_lo, r_first) if ser else None
        if br is None:
            rep.stats["unbracketed"] += 1
            continue
        i, j = br
        fuzz, how = 0, "cumulative"
        if not cumulative:
            sub = subtree(path, all_paths)
            n = steps.count(sub, ser.t0[i], ser.t1[j])
            if n > 1 or (n == 1 and key in DERIVED):
                rep.stats["ambiguous (%d steps) %s" % (n, key.split(".")[0] if key.startswith(
                    ("memory_stat", "numa", "psi")) else key)] += 1
                continue
            if n == 1:
                fuzz = kernel_fuzz(key, len(sub))
            how = "gauge, %d step(s), kernel fuzz %d" % (n, fuzz)
        vals = [ser.v[x].get(key) for x in range(i, j + 1)]
        if any(x is None for x in vals):
            rep.add("served quantities the kernel does not have",
                    "%s %s: acctd %r, the kernel has no such value" % (path, key, value))
            continue
        lo, hi = min(vals), max(vals)
        group = key.split(".")[0] if key.startswith(("memory_stat", "numa", "psi")) else key
        if lo - bound - fuzz <= value <= hi + bound + fuzz:
            rep.stats["exact %s %s" % ("root" if path == "/" else "tree", group)] += 1
            continue
        off = value - hi if value > hi else value - lo
        rep.add("value = kernel at sample time (%s)" % group,
                "%s %s: acctd %d (bound %d), kernel [%d, %d] (off by %+d) read between t=%.3f and %.3f "
                "(sample time >= %.3f, first served %.3f; %s)"
                % (path, key, value, bound, lo, hi, off, ser.t0[i] - t_start, ser.t1[j] - t_start,
                   t_lo - t_start, r_first - t_start, how))


def check_root_tasks(samples, poller, migrations, t_start, rep):
    """A thread that moves between cgroups while acctd reads them one after
    the other may be counted twice or not at all: each move by the test in
    the span widens the bracket by one (moves by others on this host are
    not known to the test; every new command's move comes with its fork)."""
    s = poller.sys
    for path, key, value, bound, t_lo, r_first in samples:
        if path != "/" or key != "tasks" or t_lo < t_start:
            continue
        br = s.bracket(t_lo, r_first)
        if br is None:
            continue
        a, b = s.v[br[0]], s.v[br[1]]
        forks = b["processes"] - a["processes"]
        exits = forks - (b["nr_threads"] - a["nr_threads"])
        moves = migrations.count([""], s.t0[br[0]], s.t1[br[1]])
        lo, hi = a["nr_threads"] - exits - moves, a["nr_threads"] + forks + moves
        if lo - bound <= value <= hi + bound:
            rep.stats["exact root tasks"] += 1
        else:
            rep.add("root tasks = threads of the host",
                    "/ tasks: acctd %d (bound %d), kernel threads in [%d, %d] (nr_threads %d..%d, %d forks, "
                    "%d moves) between t=%.3f and %.3f" % (value, bound, lo, hi, a["nr_threads"], b["nr_threads"],
                                                           forks, moves, s.t0[br[0]] - t_start,
                                                           s.t1[br[1]] - t_start))


def check_root_load(api, poller, t_start, rep):
    """acctd's root avg1 against /proc/loadavg's.

    Both are a(n) = a(n-1) e + N(t_n) (1 - e), e = EXP_1/2048 = e^(-5/60), of
    the count N of running and uninterruptible threads, sampled every 5 s at
    different instants. acctd's starts from 0 at its first load pass t0, the
    kernel's from k0 = its avg1 then; k0's share of the kernel's value at t is
    k0 e^((t - t0)/5) (within a factor e^(+-1) of one update, as the two are not
    in phase), so k0 e^m is taken off the kernel's value and both then average
    the same samples from zero. What sampling leaves is the difference of two
    such averages of N taken at different instants: for samples with standard
    deviation sigma, each average has variance sigma^2 (1 - e) / (1 + e), their
    difference (independent instants) 2 sigma^2 (1 - e) / (1 + e). The test
    takes sigma from its own high-rate samples of procs_running +
    procs_blocked (/proc/stat) and allows 4 standard deviations, plus the phase
    uncertainty of k0's share (k0 e^m (1/e - 1)), the same for the averages
    themselves (acctd's pass count and the kernel's update count since t0
    are each known to one: (1 - e^m) mean differs from (1 - e^(m+1)) mean by
    mean e^m (1/e - 1)), and the /proc/loadavg rounding (0.005). Compared as the mean over the readings after one minute (the time
    constant), each reading against the kernel's value at its sample time."""
    reads = []   # (sample time, avg1), one per load pass (5 s apart)
    for path, s, r, rec in api.replies:
        ld = rec.get("load")
        if path == "/" and ld and age_of(ld) is not None:
            t = r - age_of(ld) / 1e6
            if not reads or t - reads[-1][0] > LOAD_FREQ / 2:
                reads.append((t, ld["avg1"]))
    sysv = poller.sys
    if not reads or not sysv.v:
        rep.add("root load = /proc/loadavg", "no root load readings (%d) or kernel polls" % len(reads))
        return
    t0 = reads[0][0]
    i0 = max(bisect.bisect_right(sysv.t1, t0) - 1, 0)
    k0 = sysv.v[i0]["avg1"]
    diffs, kern, ours = [], [], []
    for t, a in reads:
        if t < t0 + 60:
            continue
        i = bisect.bisect_right(sysv.t1, t) - 1
        if i < 0:
            continue
        m = (t - t0) / LOAD_FREQ
        k = sysv.v[i]["avg1"] - k0 * EXP_1 ** m
        diffs.append(a - k)
        kern.append(k)
        ours.append(a)
    n_active = [v["procs_running"] + v["procs_blocked"] for v in sysv.v if "procs_running" in v]
    if DURATION < 70:
        rep.stats["root load not compared: a run of %.0f s is shorter than the 60 s warm-up" % DURATION] += 1
        return
    if len(diffs) < 3 or len(n_active) < 10:
        rep.add("root load = /proc/loadavg", "too few readings after the warm-up: %d" % len(diffs))
        return
    mean = sum(n_active) / len(n_active)
    sigma = math.sqrt(sum((x - mean) ** 2 for x in n_active) / (len(n_active) - 1))
    e = EXP_1
    tol = 4 * sigma * math.sqrt(2 * (1 - e) / (1 + e)) + (k0 + mean) * e ** 12 * (1 / e - 1) + 0.005
    d = sum(diffs) / len(diffs)
    rep.stats["root load: mean acctd %.2f, kernel %.2f (corrected), tolerance %.2f (sigma %.2f)"
              % (sum(ours) / len(ours), sum(kern) / len(kern), tol, sigma)] += 1
    if abs(d) > tol:
        rep.add("root load = /proc/loadavg",
                "root avg1: acctd mean %.2f, /proc/loadavg mean %.2f (less its start value's share), "
                "difference %+.2f over %d readings; sampling explains +-%.2f (sigma of the active count %.2f, "
                "k0 %.2f)" % (sum(ours) / len(ours), sum(kern) / len(kern), d, len(diffs), tol, sigma, k0))


def check_invariants(api, state_doc, poller, steps, tree_paths, t_start, rep):
    """The daemon started with the workload running: its counters (from 0
    at its start) cover the run."""
    st = api.status
    if not st:
        rep.add("no invariant violation (Status)", "no Status replies during the run")
        return
    last = st[-1][2]["reconciliation"]
    messages = []

    def where(text):
        words = text.split()
        p = words[1] if len(words) > 1 and words[1].startswith("/") else None
        if p is None:
            return ""
        mine = any(p == q or p.startswith(q + "/") for q in tree_paths)
        return " [in the test's tree]" if mine else " [outside the test's tree: another workload of this host]"

    for _, r, s in st:
        lv = s["reconciliation"].get("last_violation")
        if lv and (not messages or messages[-1][1] != lv):
            messages.append((r - t_start, lv))
    # The kernel's own children-vs-parent check, in the polls where no step of
    # the parent's subtree overlapped the reads: the poller reads a parent
    # before its children, and outside steps memory only falls (stock drains),
    # so parent(then) >= parent(later) >= the children's sum (later) holds
    # for hierarchical page counters.
    kernel_wrong = []
    everything = set(tree_paths) | set(steps.by_path)
    for p in tree_paths:
        kids = [q for q in tree_paths if q.rsplit("/", 1)[0] == p]
        ps = poller.series.get((p, "mem"))
        if not kids or not ps:
            continue
        for idx in range(len(ps.t0)):
            sums, t_end = 0, ps.t1[idx]
            for q in kids:
                qs = poller.series.get((q, "mem"))
                k = bisect.bisect_left(qs.t0, ps.t1[idx]) if qs else -1
                if k < 0 or k >= len(qs.t0):
                    break
                sums += qs.v[k]["memory"]
                t_end = max(t_end, qs.t1[k])
            else:
                if steps.count(subtree(p, everything), ps.t0[idx], t_end) == 0 and sums > ps.v[idx]["memory"]:
                    kernel_wrong.append("%s: children %d > parent %d at t=%.3f"
                                        % (p, sums, ps.v[idx]["memory"], ps.t0[idx] - t_start))
    rep.stats["kernel's own children_memory violations seen by the test: %d %s"
              % (len(kernel_wrong), "; ".join(kernel_wrong[:3]))] += 1
    for kind, total in last["violations_total"].items():
        n = total
        if n == 0:
            continue
        if kind == "children_memory" and kernel_wrong:
            rep.stats["children_memory violations while the kernel was wrong: %d" % n] += 1
            continue
        rep.add("no invariant violation (Status)",
                "%s: %d violation(s) in %d passes; messages seen (t, text): %s"
                % (kind, n, last["passes"],
                   "; ".join("%.1f %s%s" % (m[0], m[1], where(m[1])) for m in messages
                             if m[1].startswith(kind))[:1500]))
    sr = (state_doc or {}).get("daemon", {}).get("reconciliation") or (state_doc or {}).get("reconciliation")
    if sr is None:
        rep.add("no invariant violation (state file)", "the state file has no reconciliation section")
    else:
        bad = {k: v for k, v in sr["violations_total"].items() if v}
        if bad:
            lv = sr.get("last_violation") or ""
            rep.add("no invariant violation (state file)", "violations_total %s, last: %s%s"
                    % (bad, lv, where(lv)))


def check_no_cpu(api, path, rep):
    """A cgroup with no CPU accounting (no cpuacct, cpu or unified
    directory): acctd must serve no CPU value for it (null, not 0)."""
    seen = collections.Counter()
    for p, s, r, rec in api.replies:
        if p != path:
            continue
        for k, v in (rec.get("values") or {}).items():
            if k.startswith("cpu.") and v is not None:
                seen["values.%s = %r" % (k, v.get("value"))] += 1
        rate = (rec.get("cpu_rate_cores") or {}).get("rate")
        if rate is not None:
            seen["cpu_rate_cores.rate = %r" % (rate.get("value") if isinstance(rate, dict) else rate)] += 1
    for what, n in sorted(seen.items()):
        rep.add("no CPU value where there is no CPU accounting",
                "%s (memory hierarchy only): %s in %d replies" % (path, what, n))
    if not any(p == path for p, *_ in api.replies):
        rep.add("no CPU value where there is no CPU accounting", "%s: no Get reply" % path)


def check_tombstones(sock, churned, rep):
    unseen = []
    with Varlink(sock, timeout=30) as v:
        for c in churned:
            r = v.call(IFACE + ".Get", {"cgroup": c["path"]})
            what = "%s (emptied -> rmdir %.2f s)" % (c["path"], c["gap"])
            if r.get("error") == IFACE + ".NoSuchCgroup":
                unseen.append("%s, lived %.2f s" % (what, c["removed"] - c["made"]))
                continue
            if "error" in r:
                rep.add("tombstone holds final values", "%s: %s" % (what, r["error"]))
                continue
            rec = r["parameters"]["cgroup"]
            if rec.get("state") != "dead":
                rep.add("tombstone holds final values", "%s: state %s" % (what, rec.get("state")))
                continue
            if rec.get("final") is False:
                rep.stats["tombstones that say they could not read final values (gap %.2f)" % c["gap"]] += 1
                continue
            u = (rec.get("values") or {}).get("cpu.usage")
            if u is None:
                rep.add("tombstone holds final values", "%s: cpu.usage null, kernel's final %d us" % (what, c["final_us"]))
            elif abs(u["value"] - c["final_us"]) > (u.get("bound") or 0):
                rep.add("tombstone holds final values", "%s: cpu.usage %d us (bound %d), kernel's final %d us (%+d)"
                        % (what, u["value"], u.get("bound") or 0, c["final_us"], u["value"] - c["final_us"]))
            else:
                rep.stats["tombstones with final cpu.usage (gap %.2f)" % c["gap"]] += 1
    rep.stats["churned cgroups acctd never saw (no record): %d of %d %s"
              % (len(unseen), len(churned), "; ".join(unseen[:3]))] += 1
    if len(unseen) > MAX_UNSEEN_CHURN * len(churned):
        rep.add("churned cgroups seen", "%d of %d never seen (at most %d%%): %s"
                % (len(unseen), len(churned), MAX_UNSEEN_CHURN * 100, "; ".join(unseen[:5])))


# Quantities that must have had exact comparisons in the tree, so that the
# test cannot pass by skipping everything.
MUST_COMPARE = ["memory", "memory.working_set", "memory.peak", "memory.max", "cpu.usage", "cpu.user",
                "cpu.system", "cpu.periods", "tasks", "memory_stat"]


def hierarchies_ok():
    for name, h in HIER.items():
        if not os.path.isdir(h):
            return "no %s hierarchy at %s" % (name, h)
    if not os.path.exists(HIER["cpuacct"] + "/cpuacct.usage") or not os.path.exists(HIER["memory"] + "/memory.stat"):
        return "the v1 memory and cpuacct controllers are not mounted where expected"
    return None


def test_acctd_matches_kernel(tmp_path):
    why = hierarchies_ok()
    if why:
        pytest.skip("written for hybrid hosts (v1 memory, cpu, cpuacct and the unified hierarchy): " + why)
    top = "acctd-i11-truth-%d" % os.getpid()
    try:
        os.mkdir(HIER["memory"] + "/" + top)
        os.rmdir(HIER["memory"] + "/" + top)
    except OSError as e:
        pytest.skip("cannot create cgroups: %s" % e)

    steps = Steps()
    wl = Workload(top, tmp_path, steps)
    tree_paths = [wl.path(rel) for rel, *_ in TREE] + ["/" + top + MEMONLY]
    conf = acctd.write_config(str(tmp_path / "acctd.conf"), {
        "sampling": {"fast_interval": "250ms", "slow_interval": "2s", "rescan_interval": "5s"},
        # Its churned cgroups' records must outlive any other churn on the
        # host: at the default cap (4,096) another test's tree of 10,000
        # cgroups removed meanwhile left 35 of them without a record.
        "cgroups": {"tombstone_retention": "1h", "max_tombstones": "1000000"},
    })
    sock = str(tmp_path / "io.acctd")
    d = None
    poller = api = None
    try:
        wl.start()
        d = acctd.Daemon(tmp_path, None, conf, extra=["--socket", sock])
        d.wait_notify("READY=1", timeout=60)
        ready_at = time.monotonic()
        poller = Poller(top, tree_paths, wl)
        api = ApiPoller(sock, tree_paths, wl)
        poller.thread.start()
        api.thread.start()
        t_start = time.monotonic()
        end = t_start + DURATION
        while time.monotonic() < end:
            assert d.proc.poll() is None, "acctd exited:\n" + d.logtext()[-3000:]
            time.sleep(1)
        wl.stop.set()
        api.stop.set()
        poller.stop.set()
        api.thread.join(30)
        poller.thread.join(30)
        # the last churn cgroup is removed; let acctd notice it
        time.sleep(3)
        rep = Report()
        # A churned cgroup removed while acctd was starting may have come
        # and gone before its discovery scanned (the churn starts first): no
        # record is then right, and nothing to check.
        check_tombstones(sock, [c for c in wl.churned if c["removed"] >= ready_at], rep)
        state_doc = d.next_state(2, timeout=30)
    finally:
        if poller:
            poller.stop.set()
        if api:
            api.stop.set()
        wl.close()
        if d:
            d.stop()

    steps.freeze()
    samples = Samples()
    for path, s, r, rec in api.replies:
        for key, value, bound, age in flatten(rec):
            samples.add(path, key, value, bound, age, s, r)
    done = samples.finish()
    rep.stats["readings whose replies left no window (unchecked)"] += samples.empty
    check_values(done, poller, steps, tree_paths, t_start, rep)
    wl.migrations.freeze()
    check_root_tasks(done, poller, wl.migrations, t_start, rep)
    check_root_load(api, poller, t_start, rep)
    check_invariants(api, state_doc, poller, steps, tree_paths, t_start, rep)
    check_no_cpu(api, "/" + top + MEMONLY, rep)
    must = MUST_COMPARE + ["numa"] + (["psi"] if os.path.exists(HIER["unified"] + "/cpu.pressure") else [])
    for q in must:
        if rep.stats["exact tree " + q] < 5:
            rep.add("enough exact comparisons", "%s: %d in the tree (need 5)" % (q, rep.stats["exact tree " + q]))
    if not wl.churned:
        rep.add("enough exact comparisons", "no churned cgroup")
    summary = "run %.0f s, %d kernel poll rounds, %d Get replies, %d churned cgroups\n%s" % (
        DURATION, poller.rounds, len(api.replies), len(wl.churned),
        "\n".join("  %s: %d" % kv for kv in sorted(rep.stats.items())))
    if poller.errors or api.errors:
        summary += "\n  poll errors: %s\n  API errors: %s" % (dict(poller.errors), dict(api.errors))
    print(summary)
    assert not rep.fail, "acctd disagrees with the kernel:\n" + rep.text() + "\n" + summary
