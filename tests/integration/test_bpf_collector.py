"""acctd's BPF collector (issue 12) on this host's real cgroups, as a whole
daemon. Long because every case below needs the same real trees, workloads
and daemons set up around it (Tree, HOLD/CHURN/TRICKLE, daemon()); split, that
set-up would be repeated in each file (root only; the BPF cases skip where the kernel has no BTF or the
process lacks CAP_BPF/CAP_SYS_ADMIN):

- Status and `acctctl status` say which collector reads each hierarchy and why;
- a daemon with collector = bpf serves what one with collector = files serves,
  and what the kernel's files say, for paused workloads (memory, peak, limit,
  swap, failcnt exactly; memory.stat within memory_stat_bound);
- 1,000 cgroups created and removed while it runs: no errors but vanished
  ones, no cross-check mismatch, the same cgroup set as the directories;
- the kernel's batching bounded: a workload charging and freeing on both CPUs
  gets a bound of at least the charge batch on each CPU, and once paused its
  values lie within their bounds of the files;
- every fallback (collector = files, no BTF, the verifier's refusal, no
  privilege) keeps acctd serving memory from files with the reason visible,
  and collector = bpf without BPF refuses to start;
- threads and load come from one BPF task walk per load pass, a cgroup's
  tasks equal to its threads file, and a walk that disagrees with the files
  three load passes in a row puts threads back on files, saying why.

Every cgroup is named after the branch ("bpf-itest") and the test's pid, and
removed at the end. Values are compared once the workloads are paused and a
Reconcile() pass of each daemon has read them; a file that still moves between
two readings (a charge stock drained by another cgroup's charge) is read again
until a window where it stands still."""
import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import pytest

import acctd
from test_acctctl import acctctl_binary, base_env
from test_api_client import IFACE, Varlink

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups and load BPF")

CG = "/sys/fs/cgroup"
BTF = "/sys/kernel/btf/vmlinux"
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20
NR_CPUS = os.cpu_count() or 1
CHARGE_BATCH = 64  # MEMCG_CHARGE_BATCH since Linux 6.1 (pages)


# ---- the host ------------------------------------------------------------------------------------


def bpf_missing():
    """Why this process cannot use BPF cgroup iterators, or None."""
    if not os.path.exists(BTF):
        return "no kernel BTF at %s" % BTF
    caps = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                caps = int(line.split()[1], 16)
    CAP_SYS_ADMIN, CAP_BPF = 21, 39
    if not caps & ((1 << CAP_SYS_ADMIN) | (1 << CAP_BPF)):
        return "no CAP_BPF or CAP_SYS_ADMIN"
    return None


def memory_layout():
    """The memory hierarchy and its files: v1 memory, or v2 with +memory."""
    if os.path.exists(CG + "/memory/memory.usage_in_bytes"):
        return {"v1": True, "dir": CG + "/memory", "usage": "memory.usage_in_bytes",
                "peak": "memory.max_usage_in_bytes", "max": "memory.limit_in_bytes",
                "memsw": "memory.memsw.usage_in_bytes", "failcnt": "memory.failcnt"}
    try:
        with open(CG + "/cgroup.subtree_control") as f:
            if "memory" in f.read().split():
                return {"v1": False, "dir": CG, "usage": "memory.current", "peak": "memory.peak",
                        "max": "memory.max", "swap": "memory.swap.current", "events": "memory.events"}
    except OSError:
        pass
    return None


def mounted_hierarchies():
    """acctd's names of the hierarchies mounted here (cgroup-layout.c)."""
    out = []
    if os.path.exists(CG + "/cgroup.controllers"):
        return ["unified"]
    if os.path.exists(CG + "/unified/cgroup.procs"):
        out.append("unified")
    for name in ("memory", "cpuacct", "cpu", "blkio"):
        if os.path.exists("%s/%s/cgroup.procs" % (CG, name)):
            out.append(name)
    return out


def cgroup_dirs(h):
    """Every cgroup of hierarchy h now, as (path, inode): a directory
    removed and made again under the same name is another cgroup, with
    another inode (kernfs never gives one twice)."""
    root = CG if h == "unified" and os.path.exists(CG + "/cgroup.controllers") else CG + "/" + h
    out = {("/", os.stat(root).st_ino)}
    todo = [root]
    while todo:
        d = todo.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        out.add((e.path[len(root):], e.inode()))
                        todo.append(e.path)
        except FileNotFoundError:
            pass  # removed while listed: in neither listing's intersection
    return out


@pytest.fixture
def bpf_host():
    why = bpf_missing()
    if why:
        pytest.skip("BPF unavailable: " + why)
    lay = memory_layout()
    if lay is None:
        pytest.skip("no memory controller (v1 memory or v2 with +memory)")
    return lay


# ---- cgroups and workloads -------------------------------------------------------------------------

# Touch N MiB of anonymous memory (and optionally read a file through the page
# cache), say "ready", and wait for stdin to close.
HOLD = r"""
import sys
sys.stdin.readline()
b = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
if len(sys.argv) > 2:
    with open(sys.argv[2], "rb") as f:
        while f.read(1 << 20):
            pass
print("ready", flush=True)
sys.stdin.read()
"""

# Hold a task; burn about `1` s of CPU at each line "burn", then answer "done".
BURN = r"""
import sys, time
sys.stdin.readline()
print("ready", flush=True)
for line in sys.stdin:
    end = time.process_time() + float(sys.argv[1])
    while time.process_time() < end:
        pass
    print("done", flush=True)
"""

# Grow by 8 MiB of anonymous memory every 50 ms up to N MiB ("ready" at the
# start), then hold it until stdin closes.
GROW = r"""
import sys, time
sys.stdin.readline()
print("ready", flush=True)
held = []
for _ in range(int(sys.argv[1]) // 8):
    b = bytearray(8 << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    held.append(b)
    time.sleep(0.05)
sys.stdin.read()
"""

# Touch 64 KiB more every second ("ready" at the start) until stdin closes:
# memory that moves slowly and never stops.
TRICKLE = r"""
import select, sys
sys.stdin.readline()
print("ready", flush=True)
held = []
while not select.select([sys.stdin], [], [], 1.0)[0]:
    b = bytearray(64 << 10)
    for i in range(0, len(b), 4096):
        b[i] = 1
    held.append(b)
"""

# A process of 1 + N threads that sleep until stdin closes.
THREADS = r"""
import sys, threading
sys.stdin.readline()
ev = threading.Event()
for _ in range(int(sys.argv[1])):
    threading.Thread(target=ev.wait, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""

# Charge and free 64 MiB in a loop on one CPU until stdin says "stop"; then
# touch the region once more and hold it ("held").
CHURN = r"""
import mmap, os, select, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
sys.stdin.readline()
print("running", flush=True)
size = 64 << 20
while True:
    m = mmap.mmap(-1, size)
    for i in range(0, size, 4096):
        m[i] = 1
    if select.select([sys.stdin], [], [], 0)[0]:
        break
    m.close()
sys.stdin.readline()
print("held", flush=True)
sys.stdin.read()
"""


# Map, touch and unmap 1 MiB in a loop on one CPU, at nice 19 (the daemon
# keeps its CPU), until stdin closes: memory that falls and rises again many
# times a millisecond.
FLICKER = r"""
import mmap, os, select, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
os.nice(19)
sys.stdin.readline()
print("running", flush=True)
size = 1 << 20
n = 0
while True:
    m = mmap.mmap(-1, size)
    for i in range(0, size, 4096):
        m[i] = 1
    m.close()
    n += 1
    if n % 64 == 0 and select.select([sys.stdin], [], [], 0)[0]:
        break
"""


class Tree:
    """Cgroups under /acctd-bpf-itest-PID in the memory hierarchy (and, for
    the churn, every mounted v1 hierarchy acctd reads); all removed at close."""

    def __init__(self, lay):
        self.lay = lay
        self.base = "/acctd-bpf-itest-%d" % os.getpid()
        self.procs = []
        self.made = []  # (dir)

    def path(self, rel=""):
        return self.base + ("/" + rel if rel else "")

    def dir(self, rel="", root=None):
        return (root or self.lay["dir"]) + self.path(rel)

    def mkdir(self, rel="", roots=None):
        for r in roots or [self.lay["dir"]]:
            d = self.dir(rel, r)
            os.makedirs(d, exist_ok=True)
            self.made.append(d)

    def rmdir(self, d):
        for _ in range(500):
            try:
                os.rmdir(d)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)  # the last task is still leaving
        raise AssertionError("cannot remove %s" % d)

    def read(self, rel, name):
        with open(os.path.join(self.dir(rel), name)) as f:
            return f.read()

    def read_int(self, rel, name):
        return int(self.read(rel, name))

    def write(self, rel, name, text):
        with open(os.path.join(self.dir(rel), name), "w") as f:
            f.write(text)

    def spawn(self, rel, script, *args, ready="ready"):
        p = subprocess.Popen([sys.executable, "-c", script] + [str(a) for a in args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        self.write(rel, "cgroup.procs", str(p.pid))
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == ready
        return p

    def close(self):
        for p in self.procs:
            with contextlib.suppress(Exception):
                p.kill()
            p.wait()
        for d in sorted(set(self.made), key=lambda d: -d.count("/")):
            self.rmdir(d)
        for d in set(self.made):
            assert not os.path.exists(d), d

    def files(self, rel):
        """The memory values the kernel's files give, in acctd's names."""
        L = self.lay
        out = {"memory": self.read_int(rel, L["usage"]), "memory.peak": self.read_int(rel, L["peak"])}
        if L["v1"]:
            lim = self.read_int(rel, L["max"])
            out["memory.max"] = -1 if lim >= (1 << 63) - PAGE * 2 else lim
            out["swap"] = max(0, self.read_int(rel, L["memsw"]) - out["memory"]) if os.path.exists(
                os.path.join(self.dir(rel), L["memsw"])) else None
            out["memory.events.max"] = self.read_int(rel, L["failcnt"])
        else:
            m = self.read(rel, L["max"]).strip()
            out["memory.max"] = -1 if m == "max" else int(m)
            out["swap"] = self.read_int(rel, L["swap"]) if os.path.exists(
                os.path.join(self.dir(rel), L["swap"])) else None
            ev = dict(l.split() for l in self.read(rel, L["events"]).splitlines())
            out["memory.events.max"] = int(ev["max"])
        return out

    def stat(self, rel):
        return {k: int(v) for k, v in (l.split() for l in self.read(rel, "memory.stat").splitlines())}


@pytest.fixture
def tree(bpf_host):
    t = Tree(bpf_host)
    try:
        yield t
    finally:
        t.close()


# ---- daemons and the API ---------------------------------------------------------------------------


def conf(tmp_path, tree_or_prefix, collector="auto", name="acctd.conf", **extra):
    prefix = tree_or_prefix.base if isinstance(tree_or_prefix, Tree) else tree_or_prefix
    sections = {
        "sampling": {"fast_interval": "200ms", "slow_interval": "1s", "rescan_interval": "1s",
                     "collector": collector,
                     # no pins of another run or of the service: attach (or fail) here
                     "bpf_pin_dir": os.path.join(str(tmp_path), "no-pins")},
        "cgroups": {"include": prefix + "*", "tombstone_retention": "1min"},
        "log": {"level": "debug"},
    }
    for key, val in extra.items():
        sec, k = key.split("__")
        sections.setdefault(sec, {})[k] = val
    return acctd.write_config(os.path.join(str(tmp_path), name), sections)


def call(d, method, params=None):
    with Varlink(d.socket, timeout=60) as v:
        r = v.call(IFACE + "." + method, params or {})
    assert "error" not in r, (method, params, r)
    return r["parameters"]


def status(d):
    return call(d, "Status")["status"]


def collectors(d):
    return {c["hierarchy"]: c for c in status(d)["collectors"]}


def get(d, path):
    return call(d, "Get", {"cgroup": path})["cgroup"]


def listed(d, prefix):
    return {c["path"] for c in call(d, "List", {"prefix": prefix})["cgroups"]}


def served(c, name):
    v = c["values"].get(name)
    return None if v is None else v["value"]


def bound(c, name):
    v = c["values"].get(name)
    return 0 if v is None else v.get("bound", 0)


@contextlib.contextmanager
def daemon(tmp_path, config, env=None, sub="d", wrapper=(), extra=()):
    path = os.path.join(str(tmp_path), sub)
    os.makedirs(path, exist_ok=True)
    if wrapper:
        # the unprivileged daemon's state file and socket, in a directory of
        # its own (acctd refuses one that others can write: issue 27 item 4)
        os.chown(path, 65534, 65534)
        os.chmod(path, 0o755)
    d = acctd.Daemon(path, None, config, env=env, wrapper=wrapper, extra=extra)
    try:
        d.wait_notify("READY=1", timeout=30)
        yield d
    finally:
        rc = d.stop()
        with open(d.log_path) as f:
            log = f.read()
        assert rc == 0, "acctd exited %s; log:\n%s" % (rc, log)
        # ASan/UBSan/TSan reports end the daemon with an error; any left in the log fail too
        assert "Sanitizer" not in log and "runtime error:" not in log, log


MEMORY_NAMES = ("memory", "memory.peak", "memory.max", "swap", "memory.events.max")


def stable_compare(tree, rels, daemons, check):
    """Reconcile every daemon, Get each cgroup from each, with the kernel's
    files read before and after: check(rel, files, [records]) on a window in
    which the files stood still. Up to 20 windows."""
    last = None
    for _ in range(20):
        before = {r: (tree.files(r), tree.stat(r)) for r in rels}
        for d in daemons:
            call(d, "Reconcile")
        recs = {r: [get(d, tree.path(r)) for d in daemons] for r in rels}
        after = {r: (tree.files(r), tree.stat(r)) for r in rels}
        if all(before[r][0] == after[r][0] for r in rels):
            for r in rels:
                check(r, before[r], after[r], recs[r])
            return
        last = (before, after)
    raise AssertionError("the kernel's files never stood still for a window: %r" % (last,))


# ---- 1. which collector, and why -------------------------------------------------------------------


def test_status_names_bpf_collector_per_hierarchy(tree, tmp_path):
    """With collector = auto as root every mounted hierarchy is read through
    BPF ("attached"), in Status and in `acctctl status`'s Collectors lines,
    and the passes report their BPF records and cross-checks. The walks
    cover the include glob's subtree, the tree, and not the 200 cgroups
    beside it that the glob leaves out, nor the rest of the host
    (acct_discovery_walk_roots(): a walk costs what acctd reads)."""
    tree.mkdir()
    want = mounted_hierarchies()
    assert "memory" in want or "unified" in want, want
    mem = "unified" if "memory" not in want else "memory"
    mem_root = CG if mem == "unified" and os.path.exists(CG + "/cgroup.controllers") else CG + "/" + mem
    beside = os.path.join(mem_root, "acctd-bpf-beside-%d" % os.getpid())
    made = [beside] + [os.path.join(beside, "c%d" % i) for i in range(199)]
    try:
        for p in made:
            os.mkdir(p)
        names_bpf_collector(tree, tmp_path, want, mem)
    finally:
        for p in reversed(made):
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(p)


def names_bpf_collector(tree, tmp_path, want, mem):
    with daemon(tmp_path, conf(tmp_path, tree)) as d:
        cs = collectors(d)
        assert set(cs) == set(want), cs
        for h in want:
            assert cs[h]["collector"] == "bpf" and cs[h]["reason"].startswith("attached"), cs[h]
        # The memcg hierarchy's cgroups listed before the Reconcile pass
        # (which starts after the call) and after its reply, which reports
        # that pass (Status's last_fast_pass may be a later one, a walk
        # alone that read no cgroup): those in both lived through its walk.
        dirs_before = cgroup_dirs(mem)
        fast = call(d, "Reconcile")["pass"]
        dirs_after = cgroup_dirs(mem)
        assert fast.get("bpf"), fast
        assert fast["bpf"]["mismatches"] == 0, fast
        # records past the kernel's stat flush threshold, whose stats came from files
        assert isinstance(fast["bpf"]["unbounded"], int) and fast["bpf"]["unbounded"] >= 0, fast
        # the memcg hierarchy's walk has a record for every cgroup of the
        # tree (the include glob's subtree) and for no other: the other
        # hierarchies are walked only where a cgroup is not populated in it
        # (sampler-bpf.c, walk_needed()), also below the tree alone
        mine = {p for p, _ in dirs_before & dirs_after if p == tree.base or p.startswith(tree.base + "/")}
        print("records %d; memcg cgroups: %d before, %d after, %d of the tree in both"
              % (fast["bpf"]["records"], len(dirs_before), len(dirs_after), len(mine)))
        assert len(mine) >= 1, mine
        assert len(mine) <= fast["bpf"]["records"] <= len(want) * len(mine), (fast["bpf"], mine)
        assert len(dirs_before) > 200 + len(mine), len(dirs_before)  # the 200 beside, which it left out
        # Status says so: the memcg hierarchy's walks cover one subtree
        assert collectors(d)[mem].get("walk_roots") == 1, collectors(d)[mem]
        # and the test's cgroup took its memory from its record
        assert fast["bpf"]["cgroups"] >= 1, fast["bpf"]


def test_acctctl_status_prints_collectors(tree, tmp_path):
    """`acctctl status` prints a Collectors line per hierarchy, as Status
    says (collector, reason, and the subtrees its walks cover where the
    include globs prune), and the fast pass's BPF figures; /metrics's
    acctd_collector_walk_roots says the same subtrees."""
    from test_metrics import Metrics, free_port
    tree.mkdir()
    port = free_port()
    with daemon(tmp_path, conf(tmp_path, tree), extra=["--metrics-listen", "127.0.0.1:%d" % port]) as d:
        call(d, "Reconcile")
        cs = status(d)["collectors"]
        page = Metrics(port).wait(timeout=60)
        roots = {m.group(1): int(m.group(2))
                 for m in re.finditer(r'^acctd_collector_walk_roots\{hierarchy="([^"]+)"\} (\d+)$', page, re.M)}
        assert roots == {c["hierarchy"]: c["walk_roots"] for c in cs if "walk_roots" in c}, (roots, cs)
        p = subprocess.run([acctctl_binary(), "--address", "unix:" + d.socket, "status"], capture_output=True,
                           text=True, timeout=30, env=base_env())
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        coll = [i for i, l in enumerate(lines) if l.strip().startswith("Collectors:")]
        assert len(coll) == 1, p.stdout
        block = [l.strip() for l in lines[coll[0]:coll[0] + len(cs)]]
        block[0] = block[0][len("Collectors:"):].strip()
        def walks(c):
            n = c.get("walk_roots")
            return "" if n is None else "; walks %d subtree%s" % (n, "" if n == 1 else "s")
        assert block == ["%s: %s (%s%s)" % (c["hierarchy"], c["collector"], c["reason"], walks(c)) for c in cs], p.stdout
        # the include glob names the tree: the memcg hierarchy's walks cover it alone
        assert any(c.get("walk_roots") == 1 for c in cs), cs
        assert len(lines) == coll[0] + len(cs) or not lines[coll[0] + len(cs)].startswith(" " * 17), p.stdout
        assert re.search(r"Fast pass: .*; BPF \d+ records in \S+, \d+ unchanged, \d+ pressure still, \d+ checks, 0 mismatches", p.stdout), p.stdout
        # the checks since start, without /metrics
        assert re.search(r"\n *BPF checks: [1-9]\d* since start, 0 outside the files' readings\n", p.stdout), p.stdout


# ---- 2. the same values as the files ---------------------------------------------------------------


def test_bpf_equals_files_on_paused_workloads(tree, tmp_path):
    """Two daemons on the same cgroups, collector = bpf and = files: for
    paused workloads of 8 to 48 MiB (one with a 32 MiB limit that a file read
    through the page cache hit, so failcnt > 0), memory, peak, limit, swap and
    failcnt equal each other and the files; memory.stat keys agree within the
    BPF daemon's memory_stat_bound."""
    L = tree.lay
    big = os.path.join("/var/tmp", "acctd-bpf-itest-%d.data" % os.getpid())
    with open(big, "wb") as f:
        for _ in range(64):
            f.write(os.urandom(MiB))
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # the limited cgroup's read charges it
    try:
        tree.mkdir()
        rels = []
        for i, mib in enumerate((8, 16, 48)):
            rel = "w%d" % i
            tree.mkdir(rel)
            tree.spawn(rel, HOLD, mib)
            rels.append(rel)
        tree.mkdir("limited")
        tree.write("limited", L["max"], str(32 * MiB))
        tree.spawn("limited", HOLD, 8, big)
        rels.append("limited")
        assert tree.files("limited")["memory.events.max"] > 0, tree.files("limited")
        rels.append("")  # the parent: the sum of its children
        cb = conf(tmp_path, tree, "bpf", "bpf.conf")
        cf = conf(tmp_path, tree, "files", "files.conf")
        with daemon(tmp_path, cb, sub="bpf") as db, daemon(tmp_path, cf, sub="files") as df:
            assert collectors(db)["memory" if L["v1"] else "unified"]["collector"] == "bpf"
            assert all(c["collector"] == "files" for c in collectors(df).values())

            def check(rel, before, after, recs):
                files, stat0 = before
                _, stat1 = after
                b, f = recs
                for name in MEMORY_NAMES:
                    if files[name] is None:
                        continue
                    assert served(b, name) == served(f, name) == files[name], (rel, name, served(b, name),
                                                                                served(f, name), files)
                msb = b.get("memory_stat_bound")
                assert msb and msb > 0, b
                bs, fs = b["memory_stat"], f["memory_stat"]
                assert set(bs) == set(fs) == set(stat0), (rel, set(bs) ^ set(fs))
                for k in bs:
                    lo, hi = min(stat0[k], stat1[k]), max(stat0[k], stat1[k])
                    assert lo - msb <= bs[k] <= hi + msb, (rel, k, bs[k], stat0[k], stat1[k], msb)
                    assert abs(bs[k] - fs[k]) <= msb, (rel, k, bs[k], fs[k], msb)

            stable_compare(tree, rels, [db, df], check)
            lim = get(db, tree.path("limited"))
            assert served(lim, "memory.max") == 32 * MiB and served(lim, "memory.events.max") > 0, lim["values"]
            for d in (db, df):
                assert listed(d, tree.base) >= {tree.path(r) for r in rels}
            b = status(db)["last_fast_pass"]["bpf"]
            assert b["mismatches"] == 0 and b["cgroups"] >= len(rels), b
    finally:
        os.unlink(big)


# ---- 3. churn ----------------------------------------------------------------------------------------


def test_churn_of_1000_cgroups(tree, tmp_path):
    """1,000 cgroups created and removed in batches of 100 in every mounted
    v1 hierarchy (or the v2 one) while a BPF daemon samples every 100 ms: no
    sample error but vanished, no cross-check mismatch in any pass seen, the
    daemon running, and afterwards its live set equal to the directories."""
    roots = [CG + "/" + h for h in mounted_hierarchies() if h != "unified"] or [CG]
    tree.mkdir(roots=roots)
    c = conf(tmp_path, tree, "bpf", sampling__fast_interval="100ms", sampling__rescan_interval="500ms")
    seen_passes, errors, mismatches, records = 0, {}, [], 0
    with daemon(tmp_path, c) as d:

        def look():
            """After the next pass (so that every phase is sampled), the
            figures of the last fast and slow passes."""
            nonlocal seen_passes, records
            d.next_state(1, timeout=30)
            st = status(d)
            for kind in ("last_fast_pass", "last_slow_pass"):
                p = st[kind]
                for e, n in p["errors"].items():
                    if n and e != "vanished":
                        errors[e] = errors.get(e, 0) + n
                b = p.get("bpf")
                if b:
                    records = max(records, b["records"])
                    if b["mismatches"]:
                        mismatches.append(b["last_mismatch"])
            seen_passes += 1

        n = 0
        for batch in range(10):
            rels = ["c%04d" % (batch * 100 + i) for i in range(100)]
            for r in rels:
                tree.mkdir(r, roots=roots)
                n += 1
            look()
            # half of each batch stays for the next one, half goes at once
            for r in rels[::2]:
                for root in roots:
                    tree.rmdir(tree.dir(r, root))
            look()
            if batch:
                for r in ["c%04d" % ((batch - 1) * 100 + i) for i in range(1, 100, 2)]:
                    for root in roots:
                        tree.rmdir(tree.dir(r, root))
            look()
        assert n == 1000
        # what is left: the last batch's odd half
        left = {tree.path("c%04d" % (900 + i)) for i in range(1, 100, 2)} | {tree.path()}
        for _ in range(2):
            call(d, "Reconcile")
        look()
        assert listed(d, tree.base) == left, sorted(listed(d, tree.base) ^ left)[:10]
        for p in left:
            c_ = get(d, p)
            assert c_["sample_errors"] == 0, c_
            assert served(c_, "memory") is not None, c_
        assert d.proc.poll() is None
        # the walks saw the batches (100 cgroups in each hierarchy at least)
        assert records >= 100 * len(roots), records
    print("churn: %d status looks, max %d BPF records, errors %s, mismatches %s" % (seen_passes, records, errors,
                                                                                    mismatches))
    assert errors == {}, errors
    assert mismatches == [], mismatches


def test_changes_under_steady_siblings(tree, tmp_path):
    """Each cgroup's record is found by its position in the last walk, and a
    walk in the same order as the last is indexed by the order that walk's
    sort found (acct_bpf_snapshot_find_hint(), acct_bpf_snapshot_sort()):
    under idle siblings with a sleeping task each, a cgroup whose memory
    grows, a task that arrives in an empty one, a cgroup made and one
    removed between two passes (the walk's count unchanged, every position
    after them moved) are each served as the files say, and the steady
    siblings keep their own values, with ages of a few passes."""
    tree.mkdir()
    rels = ["s%02d" % i for i in range(8)]
    for r in rels:
        tree.mkdir(r)
        tree.spawn(r, HOLD, 1)
    tree.mkdir("empty")
    c = conf(tmp_path, tree, "bpf", sampling__fast_interval="200ms")

    def check(rel, before, after, recs):
        files = before[0]
        (d_,) = recs
        assert served(d_, "memory") == files["memory"], (rel, served(d_, "memory"), files)
        assert served(d_, "memory.peak") == files["memory.peak"], (rel, d_["values"], files)

    def young(d, rel):
        v = get(d, tree.path(rel))["values"]["memory"]
        assert v["age_us"] < 10 * 1000000, (rel, v)  # a few 200 ms passes on a loaded machine

    with daemon(tmp_path, c) as d:
        d.next_state(2, timeout=60)
        stable_compare(tree, rels + ["empty"], [d], check)
        # memory grows in one, under steady siblings
        tree.spawn("s03", HOLD, 24)
        d.next_state(2, timeout=60)
        stable_compare(tree, rels + ["empty"], [d], check)
        assert served(get(d, tree.path("s03")), "memory") >= 24 * MiB
        # a task arrives in the empty one
        tree.spawn("empty", HOLD, 8)
        d.next_state(2, timeout=60)
        stable_compare(tree, rels + ["empty"], [d], check)
        assert served(get(d, tree.path("empty")), "memory") >= 8 * MiB
        # one made, one removed, between two passes
        tree.mkdir("new")
        tree.spawn("new", HOLD, 4)
        gone = tree.procs[1]  # s01's task
        gone.kill()
        gone.wait()
        tree.rmdir(tree.dir("s01"))
        left = [r for r in rels if r != "s01"] + ["empty", "new"]
        deadline = time.monotonic() + 60
        while tree.path("s01") in listed(d, tree.base) and time.monotonic() < deadline:
            d.next_state(1, timeout=30)
        assert tree.path("s01") not in listed(d, tree.base)
        d.next_state(2, timeout=60)
        stable_compare(tree, left, [d], check)
        assert served(get(d, tree.path("new")), "memory") >= 4 * MiB
        for r in left:
            young(d, r)
        b = status(d)["last_fast_pass"]["bpf"]
        assert b["mismatches"] == 0, b


def test_steady_leaves_and_one_that_runs(tree, tmp_path):
    """Leaves with a sleeping task each under an idle parent become steady:
    fast passes visit them light (docs/counters.md, "Steady cgroups"),
    serving their values with the pass's age. One that then runs (its CPU
    time, and so its parent's, moves) is read at once: its cpu.usage grows
    by what it ran within a few passes, with a young age, while its
    siblings stay steady."""
    # in every hierarchy acctd reads: the leaves' CPU time is read where
    # their tasks are (cpuacct or cpu.stat)
    unified = CG if os.path.exists(CG + "/cgroup.controllers") else CG + "/unified"
    roots = [CG + "/" + h for h in mounted_hierarchies() if h != "unified"]
    roots = [tree.lay["dir"]] + [r for r in roots + [unified] if r != tree.lay["dir"] and os.path.isdir(r)]
    tree.mkdir(roots=roots)
    tree.mkdir("p", roots=roots)
    rels = ["p/l%d" % i for i in range(6)]

    def place(rel, proc):
        for r in roots[1:]:
            with open(tree.dir(rel, r) + "/cgroup.procs", "w") as f:
                f.write(str(proc.pid))
    for r in rels[:-1]:
        tree.mkdir(r, roots=roots)
        place(r, tree.spawn(r, HOLD, 1))
    tree.mkdir(rels[-1], roots=roots)
    burner = tree.spawn(rels[-1], BURN, 0.3)
    place(rels[-1], burner)
    c = conf(tmp_path, tree, "bpf", sampling__fast_interval="200ms", sampling__slow_interval="60s")
    with daemon(tmp_path, c) as d:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            d.next_state(1, timeout=60)
            p = status(d)["last_fast_pass"]
            if p.get("steady", 0) >= len(rels):
                break
        # (two workers: a leaf read before its parent's outcome is published
        # in the pass gets a full visit, so all of them at once can take a
        # few passes)
        assert p.get("steady", 0) >= len(rels), p
        runner = tree.path(rels[-1])
        before = served(get(d, runner), "cpu.usage")
        burner.stdin.write("burn\n")
        burner.stdin.flush()
        assert burner.stdout.readline().strip() == "done"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            d.next_state(1, timeout=60)
            v = get(d, runner)["values"]["cpu.usage"]
            if v["value"] >= before + 250000:
                break
        assert v["value"] >= before + 250000, (before, v)
        assert v["age_us"] < 10 * 1000000, v
        # the siblings steady again, and served with young ages
        deadline = time.monotonic() + 60
        while status(d)["last_fast_pass"].get("steady", 0) < len(rels) - 1:
            assert time.monotonic() < deadline, status(d)["last_fast_pass"]
            d.next_state(1, timeout=60)
        for r in rels[:-1]:
            m = get(d, tree.path(r))["values"]["memory"]
            assert m["age_us"] < 10 * 1000000, (r, m)


def test_flickering_memory_is_no_mismatch(tree, tmp_path):
    """Memory that falls and rises again between the two file readings of a
    cross-check (a task that maps, touches and unmaps 1 MiB in a loop) is
    read truly by the walk at its dip: outside [before, after], even where
    both readings are equal, but no evidence against the collector until
    re-reads of the cgroup alone confirm it (sampler-bpf.c, CONFIRM_TRIES).
    Four such cgroups checked in every pass (CHECKS), 100 passes at 100 ms:
    no mismatch counted, memory still served by the collector. (Once such
    readings counted as mismatches: a tree of ten thousand cgroups whose
    tasks were starting moved memory to files for good within a minute.)"""
    tree.mkdir()
    rels = ["flicker%d" % i for i in range(4)]
    for r in rels:
        tree.mkdir(r)
    # 2,000 untracked cgroups that every walk of the hierarchy visits: a walk
    # of milliseconds, as on a host of thousands, in which memory can dip
    tree.mkdir("pad")
    for i in range(2000):
        tree.mkdir("pad/%d" % i)
    c = conf(tmp_path, tree.path("flicker"), "bpf", sampling__fast_interval="100ms")
    with daemon(tmp_path, c) as d:
        for i, r in enumerate(rels):
            tree.spawn(r, FLICKER, i % NR_CPUS, ready="running")
        def who():  # which collector and why (the walks' roots come as hierarchies are walked)
            return {h: (c["collector"], c["reason"]) for h, c in collectors(d).items()}
        start, served_by = status(d)["bpf"], who()
        d.next_state(100, timeout=300)
        st = status(d)
        b = st["bpf"]
        assert "read from files from now on" not in d.logtext(), d.logtext()[-2000:]
        assert who() == served_by, (served_by, who())
        assert b["mismatches"] == start["mismatches"] == 0, b
        assert b["checks"] > start["checks"], (start, b)
        # served by the walk still: the last fast pass took memory from records
        fast = st["last_fast_pass"]["bpf"]
        assert fast["cgroups"] >= len(rels), fast
    print("flicker: %d checks, %d mismatches over 100 passes" % (b["checks"] - start["checks"], b["mismatches"]))


# ---- 4. the kernel's batching, bounded -----------------------------------------------------------------


def test_batching_bounded(tree, tmp_path):
    """Two processes of one cgroup charge and free 64 MiB in a loop, one on
    each CPU: the memory bound served covers the charge batch on each CPU
    (at least CPUs x 64 pages), the stat bound is non-zero, passes see its
    record past the kernel's stat flush threshold (unbounded: its stats then
    come from files), and every value served while it runs lies within what
    the cgroup can hold. Then both hold
    their 64 MiB and stop: memory equals the files within its bound (exactly,
    in a window where the files stand still), and memory.stat's keys lie
    within memory_stat_bound of the file read around the Get."""
    tree.mkdir()
    tree.mkdir("churn")
    # Idle siblings: a pass's cross-check reads one cgroup's memory.stat
    # before the walk, in turn, which flushes that subtree; with them most
    # passes walk the churning cgroup unflushed.
    for i in range(10):
        tree.mkdir("idle%d" % i)
    idle = tree.files("churn")["memory"]
    c = conf(tmp_path, tree, "bpf", sampling__fast_interval="100ms")
    with daemon(tmp_path, c) as d:
        ws = [tree.spawn("churn", CHURN, cpu % NR_CPUS, ready="running") for cpu in range(2)]
        P = tree.path("churn")
        min_bound = NR_CPUS * CHARGE_BATCH * PAGE
        seen = unbounded = 0
        for _ in range(50):
            k0 = tree.files("churn")["memory"]
            rec = get(d, P)
            k1 = tree.files("churn")["memory"]
            v, b = served(rec, "memory"), bound(rec, "memory")
            unbounded += (status(d)["last_fast_pass"].get("bpf") or {}).get("unbounded", 0)
            if v is None:
                time.sleep(0.05)
                continue
            seen += 1
            assert b >= min_bound, (b, min_bound)
            assert rec.get("memory_stat_bound", 0) > 0, rec
            # whatever moment it was read at: no less than nothing charged,
            # no more than both regions plus what may sit in the stocks
            assert idle - b <= v <= idle + 2 * 64 * MiB + 8 * MiB + b, (v, b, k0, k1, idle)
            time.sleep(0.03)
        assert seen >= 40, seen
        # Under this churn the kernel stops counting the cgroup's unflushed
        # stat updates (it is past its flush threshold within microseconds of
        # a flush): passes see its record so, and take its stats, working set
        # and NUMA from files instead (docs/counters.md).
        print("unbounded records seen in %d status reads: %d" % (50, unbounded))
        assert unbounded > 0, "no pass saw a record past the kernel's flush threshold"

        for w in ws:
            w.stdin.write("stop\n")
            w.stdin.flush()
        for w in ws:
            w.stdin.write("hold\n")
            w.stdin.flush()
            assert w.stdout.readline().strip() == "held"

        def check(rel, before, after, recs):
            files, stat0 = before
            _, stat1 = after
            (r,) = recs
            v, b = served(r, "memory"), bound(r, "memory")
            assert b >= min_bound, (b, min_bound)
            assert files["memory"] >= 2 * 64 * MiB, files
            assert v == files["memory"], (v, b, files)
            assert abs(v - files["memory"]) <= b
            msb = r.get("memory_stat_bound", 0)
            assert msb > 0, r
            for k, sv in r["memory_stat"].items():
                lo, hi = min(stat0[k], stat1[k]), max(stat0[k], stat1[k])
                assert lo - msb <= sv <= hi + msb, (k, sv, stat0[k], stat1[k], msb)

        stable_compare(tree, ["churn"], [d], check)
        # the values came from the collector's records, not the files
        b = status(d)["last_fast_pass"]["bpf"]
        assert b["cgroups"] >= 2 and b["mismatches"] == 0, b
    print("batching: memory bound >= %d, %d Gets while moving" % (min_bound, seen))


def test_root_memory_follows_walks(tree, tmp_path):
    """Between file passes, walks alone move the memory of cgroups whose
    memory moves (docs/counters.md, "Freshness from the budget"); the
    root's (the larger of its own reading and its top level's sum) follows
    them. A top-level cgroup grows by 8 MiB every 50 ms to 400 MiB; file
    passes are 5 s apart: a walk alone serves it between two of them (its
    memory younger than its events, which only file passes set), and a List of the root and the top
    level, read in one moment, shows the root at least their sum. Before
    the root followed walks it kept its file pass's figure while a walk
    raised its children (CI saw it 15 MB below their sum)."""
    c = acctd.write_config(os.path.join(str(tmp_path), "acctd.conf"), {
        "sampling": {"fast_interval": "5s", "slow_interval": "60s", "rescan_interval": "1s",
                     "collector": "bpf", "bpf_pin_dir": os.path.join(str(tmp_path), "no-pins")},
        "log": {"level": "debug"}})
    with daemon(tmp_path, c) as d:
        tree.mkdir()
        P = tree.path()
        deadline = time.monotonic() + 30
        while not (P in listed(d, P) and served(get(d, P), "memory") is not None):
            assert time.monotonic() < deadline, "the new cgroup was never read"
            time.sleep(0.05)
        tree.spawn("", GROW, 400)
        deadline = time.monotonic() + 60
        while True:
            g = get(d, P)
            # memory.events.max comes with the fast group's record only
            fast = g["values"].get("memory.events.max")
            walked = fast is not None and g["values"]["memory"]["age_us"] + 1000000 < fast["age_us"]
            if walked and served(g, "memory") >= 64 * MiB:
                break
            assert time.monotonic() < deadline, "no walk alone served the growing cgroup: %r" % g
            time.sleep(0.05)
        torn = 0
        for _ in range(100):
            rows = call(d, "List", {"depth": 1})["cgroups"]
            root = [r for r in rows if r["path"] == "/"][0]["memory"]
            tops = [r["memory"] for r in rows if r["path"] != "/" and r["state"] == "live" and r["memory"]]
            top = sum(t["value"] for t in tops)
            if root["value"] >= top:
                assert top >= 64 * MiB, tops
                print("root %d >= top level %d (%d torn replies)" % (root["value"], top, torn))
                return
            # a walk wrote the top level while the reply was being read: one
            # of them is younger than the root's figure (which is aged as
            # its oldest part)
            assert any(t["age_us"] < root["age_us"] for t in tops), (root, tops)
            torn += 1
            time.sleep(0.02)
        raise AssertionError("the root stayed below its top level in 100 Lists: %r, %r" % (root, tops))


def test_walks_alone_follow_the_budget(tree, tmp_path):
    """Walks alone read the cgroups whose memory moves fast enough to be
    due by the bytes budget, and no other (docs/counters.md, "Freshness from
    the budget"). Ten idle leaves hold 4 MiB each, one leaf grows by 64 KiB
    a second (128 KiB between file passes: never due with a budget of
    1 MiB), one charges and frees 64 MiB in a loop; file passes 2 s apart.
    Walks alone read the churning leaf (its memory younger than its events,
    which only file passes set) and neither an idle leaf nor the slow one
    (their memory exactly as old as their events); once the churn holds
    still, bpf_interval ticks pass with nothing due and no walk. Made wrong,
    every cgroup read by every walk alone (as before), the budget ignored,
    or nothing due, it fails."""
    tree.mkdir()
    idle = ["idle%d" % i for i in range(10)]
    for rel in idle + ["churn", "slow"]:
        tree.mkdir(rel)
    for rel in idle:
        tree.spawn(rel, HOLD, 4)
    tree.spawn("slow", TRICKLE)
    c = conf(tmp_path, tree, "bpf", sampling__fast_interval="2s", sampling__slow_interval="60s")
    with daemon(tmp_path, c) as d:
        w = tree.spawn("churn", CHURN, 0, ready="running")
        P = tree.path("churn")

        def ages(rel):
            v = get(d, tree.path(rel))["values"]
            ev = v.get("memory.events.max")
            return v["memory"]["age_us"], ev["age_us"] if ev else None

        b0 = status(d)["bpf"]
        deadline = time.monotonic() + 60
        while True:
            b = status(d)["bpf"]
            mem, ev = ages("churn")
            if b["kernel_due"] - b0["kernel_due"] >= 20 and ev is not None and mem + 500000 < ev:
                break
            assert time.monotonic() < deadline, ("walks alone did not read the churning leaf", b0, b, mem, ev)
            time.sleep(0.1)
        # The idle leaves moved while their holders started; once their
        # motion is far below what would make them due before the next file
        # pass (100 KB/s x 2 s against a budget of 1 MiB, with room for late
        # passes), walks alone leave them: their memory is exactly as old as
        # their events.
        while not all(get(d, tree.path(rel))["values"]["memory"].get("motion_per_s", 1e9) < 100000 for rel in idle):
            assert time.monotonic() < deadline + 60, "the idle leaves' memory motion did not decay"
            time.sleep(0.2)
        d.next_state(passes=2, timeout=60)
        # some bpf_interval ticks (each a walk alone or none) since that pass
        b2 = status(d)["bpf"]
        while sum(status(d)["bpf"][k] - b2[k] for k in ("kernel_passes", "kernel_idle")) < 5:
            assert time.monotonic() < deadline + 120, "no bpf_interval tick"
            time.sleep(0.05)
        for rel in idle + ["slow"]:
            mem, ev = ages(rel)
            assert ev is not None and abs(mem - ev) < 100000, (rel, "an idle leaf read by a walk alone", mem, ev)
        w.stdin.write("stop\n")
        w.stdin.flush()
        w.stdin.write("hold\n")
        w.stdin.flush()
        assert w.stdout.readline().strip() == "held"
        b1 = status(d)["bpf"]
        deadline = time.monotonic() + 90
        while True:
            b = status(d)["bpf"]
            if b["kernel_idle"] - b1["kernel_idle"] >= 10:
                break
            assert time.monotonic() < deadline, ("ticks never found nothing due after the churn stopped", b1, b)
            time.sleep(0.2)
        print("walks alone: %d due reads while churning; %d idle ticks after" %
              (b1["kernel_due"] - b0["kernel_due"], b["kernel_idle"] - b1["kernel_idle"]))


def wakeups(pid):
    """The voluntary context switches of acctd's main thread (its event
    loop): one per wake from epoll_wait."""
    with open("/proc/%d/task/%d/status" % (pid, pid)) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches for %d" % pid)


def test_idle_host_no_tick(tree, tmp_path):
    """While no cgroup's memory moves, the bpf_interval tick does not wake
    acctd: it is armed for when a walk alone can next be due (a pass that
    sees motion arms it), and the periods with nothing due are counted all
    the same (Status bpf.kernel_idle). Ten idle leaves, bpf_interval 20 ms,
    fast passes 2 s apart, the census rare: over 6 s the event loop wakes for
    the passes (a few times each), not for 300 ticks. Made wrong (the tick
    armed every bpf_interval, as before), it fails; with the idle periods
    not counted, too."""
    tree.mkdir()
    idle = ["idle%d" % i for i in range(10)]
    for rel in idle:
        tree.mkdir(rel)
        tree.spawn(rel, HOLD, 1)
    c = conf(tmp_path, tree, "bpf", sampling__fast_interval="2s", sampling__slow_interval="60s",
             sampling__rescan_interval="1h", sampling__bpf_interval="20ms", log__level="info")
    with daemon(tmp_path, c) as d:
        # until the leaves' memory holds still: ticks with nothing due
        deadline = time.monotonic() + 120
        b0 = status(d)["bpf"]
        while status(d)["bpf"]["kernel_idle"] - b0["kernel_idle"] < 50:
            assert time.monotonic() < deadline, ("no bpf_interval period with nothing due", b0, status(d)["bpf"])
            time.sleep(0.5)
        b1 = status(d)["bpf"]
        w0, t0 = wakeups(d.proc.pid), time.monotonic()
        time.sleep(6)
        w1, t1 = wakeups(d.proc.pid), time.monotonic()
        b2 = status(d)["bpf"]
        periods = (t1 - t0) / 0.02
        print("idle: %d wakes of the event loop in %.1f s (%.0f bpf_interval periods); %d periods counted idle, "
              "%d walks alone" % (w1 - w0, t1 - t0, periods, b2["kernel_idle"] - b1["kernel_idle"],
                                  b2["kernel_passes"] - b1["kernel_passes"]))
        assert w1 - w0 < periods / 3, ("the event loop woke for bpf_interval ticks", w1 - w0, periods)
        assert b2["kernel_idle"] - b1["kernel_idle"] >= periods / 2, ("idle periods not counted", b1, b2)


def test_pressure_witness(tree, tmp_path):
    """Pressure files are read where the kernel's own totals moved, not at a
    minute's refresh (docs/counters.md, "The witness"): on an idle cgroup
    passes count it in pressure_still; a stall of tasks placed in its unified
    cgroup only (no CPU time of its CPU witness, the v1 cpuacct tree on a
    hybrid host, moves) reaches its served totals well within the minute.
    Made wrong (the witness not read, not compared, or the files not read
    when it moves), pressure_still stays 0 or the stall is not served."""
    unified = CG if os.path.exists(CG + "/cgroup.controllers") else CG + "/unified"
    if not os.path.exists(unified + "/cpu.pressure"):
        pytest.skip("no pressure files (psi off)")
    roots = [tree.lay["dir"]] + ([unified] if unified != tree.lay["dir"] else [])
    tree.mkdir(roots=roots)
    tree.mkdir("psi", roots=roots)
    p = tree.spawn("psi", HOLD, 1)
    with open(tree.dir("psi", unified) + "/cgroup.procs", "w") as f:
        f.write(str(p.pid))
    with daemon(tmp_path, conf(tmp_path, tree, "bpf")) as d:
        P = tree.path("psi")
        deadline = time.monotonic() + 120
        while not status(d)["last_slow_pass"].get("bpf", {}).get("pressure_still") and \
                not status(d)["last_fast_pass"].get("bpf", {}).get("pressure_still"):
            assert time.monotonic() < deadline, ("no pass found pressure still", status(d)["last_fast_pass"])
            time.sleep(0.2)

        def cpu_some():
            psi = get(d, P)["pressure"]
            return psi["cpu"]["some"]["total_us"]["value"] if psi and psi.get("cpu") else -1
        before = cpu_some()
        # more busy tasks than CPUs, in the unified cgroup only, for half a second
        procs = tree.dir("psi", unified) + "/cgroup.procs"
        busy = [subprocess.Popen(["sh", "-c", "echo $$ > %s && exec timeout 0.5 sh -c 'while :; do :; done'" % procs])
                for _ in range((os.cpu_count() or 1) + 1)]
        for b in busy:
            b.wait()
        t0 = time.monotonic()
        while cpu_some() <= before:
            assert time.monotonic() < t0 + 40, ("the stall was not read", before)
            time.sleep(0.2)
        print("stall served %.1f s after it ended" % (time.monotonic() - t0))


def discovery(d):
    return status(d)["discovery"]


def wait_census(d, agreed, timeout=90):
    """Until `agreed` more censuses than now agreed with discovery's; the
    figures then. Other processes on a shared host make and remove cgroups,
    so a census may differ now and then: agreements are counted."""
    def ok_count(x):
        return x["census_checks"] - x["census_differed"]
    start = ok_count(discovery(d))
    deadline = time.monotonic() + timeout
    while True:
        x = discovery(d)
        if ok_count(x) >= start + agreed:
            return x
        assert time.monotonic() < deadline, ("censuses did not agree", x)
        time.sleep(0.1)


@pytest.mark.parametrize("scope", [False, True], ids=["whole", "scope"])
def test_census_stands_in_for_rescans(tree, tmp_path, scope):
    """The periodic rescan reads no directory where the BPF walks' census of
    every hierarchy equals discovery's (docs/acctd.md, "Discovery"): with
    rescan_interval 300 ms, censuses agree pass after pass and every
    periodic scan made is one a census asked for; a memory cgroup removed
    while its pages are still charged (dying, yet walked by nothing) keeps
    them agreeing; a cgroup the scan cannot see (a tmpfs mounted over its
    directory, then a reload's scan: the walk counts it, discovery no
    longer does) makes each census
    differ, and each is followed by a scan. Made wrong (no census, a census
    of other ids or levels, a scan skipped where one differs), the counts
    below do not add up. "whole": the include glob has its wildcard right
    after the "/", and the census is of every cgroup. "scope": the glob
    (TREE/*) prunes every other directory from the scans, and the census is
    of the subtrees below TREE (tops TREE/c00...), with / and TREE read one
    level each (test-cgroup-discovery's test_census_scope); the hidden
    cgroup then lies below a top (the kernel counts it among the top's
    descendants)."""
    roots = [CG + "/" + h for h in mounted_hierarchies()] if not os.path.exists(CG + "/cgroup.controllers") else [CG]
    tree.mkdir(roots=roots)
    for i in range(20):
        tree.mkdir("c%02d" % i, roots=roots)
    include = tree.base + "/*" if scope else "/*" + tree.base.lstrip("/") + "*"
    c = conf(tmp_path, tree, "bpf", sampling__fast_interval="100ms", sampling__rescan_interval="300ms",
             cgroups__include=include)
    with daemon(tmp_path, c) as d:
        x = wait_census(d, 5)
        assert x["rescans"] == x["census_differed"], x
        assert x["unwatched"] == 0, x
        # A dying memcg: pages charged to it (a file in /dev/shm written from
        # inside) outlive its directory; the kernel's iterator skips it as the
        # scan does.
        tree.mkdir("dying", roots=roots)
        shm = "/dev/shm/acctd-census-%d" % os.getpid()
        w = subprocess.Popen(["sh", "-c", "echo $$ > %s/cgroup.procs && head -c 4194304 /dev/zero > %s"
                              % (tree.dir("dying"), shm)])
        try:
            assert w.wait() == 0
            for root in roots:
                tree.rmdir(tree.dir("dying", root))
            x = wait_census(d, 5)
            assert x["rescans"] == x["census_differed"], x
            # A cgroup hidden from the scan: each census differs and is followed by a scan.
            hidden_rel = "c00/hidden" if scope else "hidden"
            tree.mkdir(hidden_rel, roots=[tree.lay["dir"]])
            hidden = tree.dir(hidden_rel)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "acctd-census", hidden],
                               capture_output=True, text=True)
            if r.returncode != 0:
                pytest.skip("cannot mount a tmpfs: %s" % r.stderr.strip())
            try:
                # discovery knew the directory before the mount: a reload's
                # scan finds it gone (another device); the walk still counts it
                reloads = status(d)["reloads"]
                d.signal(signal.SIGHUP)
                deadline = time.monotonic() + 60
                while status(d)["reloads"] == reloads:
                    assert time.monotonic() < deadline, "no reload"
                    time.sleep(0.1)
                before = discovery(d)
                deadline = time.monotonic() + 90
                while discovery(d)["census_differed"] < before["census_differed"] + 3:
                    assert time.monotonic() < deadline, ("no census differed", discovery(d))
                    time.sleep(0.1)
                after = discovery(d)
                assert after["rescans"] - before["rescans"] >= 3, (before, after)
                assert after["scans"] - before["scans"] >= 3, (before, after)
            finally:
                subprocess.run(["umount", "-l", hidden], check=False)
            x = wait_census(d, 3)
            assert x["unwatched"] == 0, x
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(shm)


# ---- 5. fallbacks ---------------------------------------------------------------------------------------


def served_from_files(d, tree, rels):
    """The fallback serves memory equal to the files, and List lists it."""
    def check(rel, before, after, recs):
        (r,) = recs
        for name in MEMORY_NAMES:
            if before[0][name] is not None:
                assert served(r, name) == before[0][name], (rel, name, served(r, name), before[0])
    stable_compare(tree, rels, [d], check)
    assert listed(d, tree.base) >= {tree.path(r) for r in rels}
    st = status(d)
    assert not st["last_fast_pass"].get("bpf"), st["last_fast_pass"]


def fallback_tree(tree):
    tree.mkdir()
    tree.mkdir("w")
    tree.spawn("w", HOLD, 16)
    return ["w", ""]


@pytest.mark.parametrize("case", ["files", "no-btf", "verifier"])
def test_fallback_to_files(tree, tmp_path, case):
    """collector = files, a kernel without BTF (simulated) and a program the
    verifier rejects (simulated): every hierarchy is read from files, Status
    says why in words naming the cause, memory is served equal to the files."""
    rels = fallback_tree(tree)
    env, collector, why = {}, "auto", None
    if case == "files":
        collector, why = "files", "collector = files"
    elif case == "no-btf":
        env, why = {"ACCTD_TEST_BTF": "/nonexistent"}, "BTF"
    else:
        env, why = {"ACCTD_TEST_BPF_REJECT": "1"}, "verifier"
    with daemon(tmp_path, conf(tmp_path, tree, collector), env=env) as d:
        cs = collectors(d)
        assert set(cs) == set(mounted_hierarchies()), cs
        for h, c_ in cs.items():
            assert c_["collector"] == "files", c_
            assert why in c_["reason"], (case, c_)
        served_from_files(d, tree, rels)
        if case != "files":
            d.wait_log(why)


def test_fallback_unprivileged(tree, tmp_path):
    """acctd as nobody without capabilities (collector = auto): bpf() is
    refused, every hierarchy says "not permitted", memory comes from files."""
    rels = fallback_tree(tree)
    home = tempfile.mkdtemp(prefix="acctd-bpf-itest-")
    try:
        os.chmod(home, 0o777)
        c = conf(home, tree)
        os.chmod(c, 0o644)
        with daemon(home, c, sub="d", wrapper=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                                 "--inh-caps=-all")) as d:
            cs = collectors(d)
            assert set(cs) == set(mounted_hierarchies()), cs
            for c_ in cs.values():
                assert c_["collector"] == "files" and "not permitted" in c_["reason"], c_
            served_from_files(d, tree, rels)
            d.wait_log("not permitted")
    finally:
        shutil.rmtree(home)


def test_collector_bpf_without_bpf_refuses_to_start(tree, tmp_path):
    """collector = bpf where no hierarchy can be read through BPF: acctd
    exits non-zero at start, saying why (the collector and the missing BTF)."""
    tree.mkdir()
    c = conf(tmp_path, tree, "bpf")
    p = acctd.run(["--config", c, "--config-dropins", "", "--socket", str(tmp_path / "io.acctd"),
                   "--metrics-listen", "none", "--state-file", str(tmp_path / "state.json")],
                  env={"ACCTD_TEST_BTF": "/nonexistent"}, timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "collector = bpf" in out and "no kernel BTF at /nonexistent" in out, out


# ---- 4. threads through the task walk ---------------------------------------------------------------


def threads_file(tree, rel):
    return len(tree.read(rel, "tasks" if tree.lay["v1"] else "cgroup.threads").split())


def wait_tasks(d, tree, rel, timeout=60):
    """Until the served tasks of rel equal its threads file (both read
    again each time: a thread may still be starting)."""
    deadline = time.monotonic() + timeout
    while True:
        want, got = threads_file(tree, rel), served(get(d, tree.path(rel)), "tasks")
        if got == want:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("tasks %r, the threads file lists %d" % (got, want))
        time.sleep(0.5)


def test_task_walk_counts_threads(tree, tmp_path):
    """As root with collector = auto, threads and their states come from the
    BPF task walk (Status bpf.threads, `acctctl status`); a cgroup holding a
    process of 1 + 7 threads is served tasks 8, what its threads file lists;
    the walk's cross-checks against the threads files agree."""
    tree.mkdir()
    tree.mkdir("t")
    tree.spawn("t", THREADS, 7)
    assert threads_file(tree, "t") == 8
    with daemon(tmp_path, conf(tmp_path, tree)) as d:
        assert status(d)["bpf"]["threads"] == {"collector": "bpf", "reason": "task iterator, attached"}
        assert wait_tasks(d, tree, "t") == 8
        # the walk's cross-checks (and the memory ones) agree, and after
        # them the walk still serves
        d.wait_log(re.compile(r"Threads and load: bpf"))
        st = status(d)
        assert st["bpf"]["checks"] > 0 and st["bpf"]["mismatches"] == 0, st["bpf"]
        assert st["bpf"]["threads"]["collector"] == "bpf", st["bpf"]
        p = subprocess.run([acctctl_binary(), "--address", "unix:" + d.socket, "status"], capture_output=True,
                           text=True, timeout=30, env=base_env())
        assert re.search(r"\n *Threads, load: bpf \(task iterator, attached\)\n", p.stdout), p.stdout


def test_task_walk_pinned_serves_an_unprivileged_daemon(tree, tmp_path):
    """acctd.service's split: acctd --bpf-pin (root) pins the task iterator
    beside the cgroup iterators, 0644, with every mounted hierarchy's slot;
    the daemon run as nobody without capabilities (which cannot load it)
    reads the pin, serves a cgroup of 1 + 7 threads as tasks 8, and says
    where its threads come from."""
    tree.mkdir()
    tree.mkdir("t")
    tree.spawn("t", THREADS, 7)
    home = tempfile.mkdtemp(prefix="acctd-bpf-itest-")
    pin_dir = "/sys/fs/bpf/acctd-test-task-pin-%d" % os.getpid()
    try:
        os.chmod(home, 0o755)
        env = {"ACCTD_BPF_PIN_REPORT": os.path.join(home, "report")}
        c = conf(home, tree, sampling__bpf_pin_dir=pin_dir)
        os.chmod(c, 0o644)
        p = acctd.run(["--bpf-pin", "--config", c, "--config-dropins", ""], env=env, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        pin = os.path.join(pin_dir, "tasks")
        assert "threads: pinned at %s" % pin in p.stdout, p.stdout
        assert stat.S_IMODE(os.stat(pin).st_mode) == 0o644
        with daemon(home, c, sub="d", env=env, wrapper=("setpriv", "--reuid=65534", "--regid=65534",
                                                           "--clear-groups", "--inh-caps=-all")) as d:
            th = status(d)["bpf"]["threads"]
            assert th == {"collector": "bpf", "reason": "task iterator pinned at " + pin}, th
            assert wait_tasks(d, tree, "t") == 8
            # a load pass's walk read records through the pin
            deadline = time.monotonic() + 60
            while not (status(d)["last_fast_pass"].get("tasks") or {}).get("records"):
                assert time.monotonic() < deadline, status(d)["last_fast_pass"]
                time.sleep(0.5)
            st = status(d)
            assert st["bpf"]["threads"]["collector"] == "bpf" and st["bpf"]["mismatches"] == 0, st["bpf"]
    finally:
        for name in os.listdir(pin_dir) if os.path.isdir(pin_dir) else ():
            os.unlink(os.path.join(pin_dir, name))
        if os.path.isdir(pin_dir):
            os.rmdir(pin_dir)
        shutil.rmtree(home)


def test_task_walk_falls_back_on_mismatch(tree, tmp_path):
    """A walk that misses threads (ACCTD_TEST_TASK_WALK_DROP=1: the records of
    odd tids dropped) disagrees with the threads files read around it: after
    three load passes in a row threads come from files for good, the log and
    Status say why, and tasks are served as the files list them."""
    tree.mkdir()
    tree.mkdir("t")
    tree.spawn("t", THREADS, 7)
    with daemon(tmp_path, conf(tmp_path, tree), env={"ACCTD_TEST_TASK_WALK_DROP": "1"}) as d:
        d.wait_log("threads and load are read from files from now on", timeout=120)
        th = status(d)["bpf"]["threads"]
        assert th["collector"] == "files" and "disagreed" in th["reason"], th
        assert status(d)["bpf"]["mismatches"] >= 3
        assert wait_tasks(d, tree, "t") == 8
