#!/usr/bin/env python3
"""fakecg - a fake cgroupfs for acctd's integration tests and benchmarks.
The file is long because it models every file acctd reads, in three layouts
(v2, hybrid, legacy), with the kernel's formats; the model is described below.

Builds realistic cgroup trees in an ordinary directory and scripts changes to
them: values, creation, removal, and broken files. Python 3 standard library
only. The formats follow the real files in shared/kernel-samples/hybrid-6.18
(Linux 6.18) and the kernel's cgroup-v2.rst / cgroup-v1 memory.rst for the v2
memory files the samples lack.

Layouts (`mode`), with ROOT the directory given:

  v2      ROOT is the unified root: ROOT/cgroup.controllers, ROOT/a/b, ...
  hybrid  ROOT/unified (v2, no controllers), ROOT/memory, ROOT/cpu,cpuacct,
          symlinks ROOT/cpu and ROOT/cpuacct -> cpu,cpuacct
  legacy  ROOT/memory and ROOT/cpu,cpuacct (+ the two symlinks), no unified

They follow the detection rules of lib/cgroup/cgroup-layout.h: cgroup.controllers
at the top only in v2; in hybrid a "unified" directory holding
cgroup.controllers beside the controller directories; in legacy the
controller directories alone. The fake's own files at ROOT (.fakecg-state.json,
.fakecg-meminfo) are regular files, never directories.

A cgroup is a path ("/" is the root, "/system.slice/foo.service") that exists
in some of the mode's trees ("unified", "memory", "cpu,cpuacct"; default all,
as systemd does). Directory names are the path components, unescaped: systemd
names such as "machine-qemu\\x2d1\\x2dvm.scope" hold a literal backslash.

Model of the values (what expected() reports and the files show):

  Memory. Each cgroup has an *own* charge (pages charged to it directly, set
  with set_memory) split into anon, file (incl. shmem), kernel (kernel_stack,
  pagetables, percpu, vmalloc, slab) and, in v2 only, sock. Every reported
  value is hierarchical: own + the own charges of all live descendants, as the
  kernel's hierarchical accounting does, so a parent's memory is always >= the
  sum of its children's (equal to it plus its own charge).
      v2:  memory.current = anon + file + kernel + sock        (hierarchical)
      v1:  memory.usage_in_bytes = cache + rss + kernel           (hierarchical)
           (cache = file, rss = anon; sock is not charged in v1)
  v2 memory.stat / memory.numa_stat are hierarchical; v1 memory.stat has the
  cgroup's own pages in the plain keys and the hierarchical ones in total_*;
  v1 memory.numa_stat has own (total/file/anon/unevictable) and hierarchical_*
  lines, in pages (LRU based: anon = active_anon + inactive_anon, which
  includes shmem). memory.peak / max_usage_in_bytes are the highest
  hierarchical usage seen. A removed cgroup's charge leaves its ancestors
  (rmdir(reparent=True) moves it into the parent's own charge instead).
  Per-node values split each cgroup's charge by its node weights (default
  even; exact integer split, whole pages).
  All byte values are whole 4096-byte pages.

  CPU. Cumulative and hierarchical: add_cpu(path, usec) adds to the cgroup
  and to every ancestor up to the root, and never goes back (a removed
  child's time stays in its ancestors, as the kernel's does). Stored in ns per
  CPU, user and system. v2 usage_usec = total_ns // 1000, user_usec =
  user_ns // 1000, system_usec = system_ns // 1000. v1 cpuacct.usage is ns;
  cpuacct.stat is in USER_HZ (100) ticks, so a reader of cpuacct.stat sees
  user/system with 10 ms resolution (expected() gives both figures).

  Block I/O (v2 io.stat only): add_io(path, "MAJ:MIN", rbytes=..., ...)
  adds to the cgroup and every ancestor (cumulative, hierarchical, as CPU).
  io.stat lists the devices with I/O, sorted, all six keys per line.

  PSI: per cgroup and resource (cpu, memory, io), as set (not hierarchical);
  avgs are kept to 2 decimals, as the kernel prints them.

  populated: set_populated() override, else "has processes, or a descendant is
  populated".

Files are written atomically (temporary file in the same directory, then
os.replace) so a concurrent reader never sees half a file. A reader that keeps a
file open and preads it again (as acctd's sampler caches descriptors) keeps
seeing the old inode, i.e. stale values: for that, write_mode="inplace" (CLI
build --write-mode inplace) rewrites the same inode with one pwrite and an
ftruncate, so held descriptors see updates, at the price of a short window in
which a concurrent reader may see the new content plus an old tail. Small
contents that repeat (zeros, "max", PSI lines at 0, ...) are hard links to one
pooled copy kept beside ROOT: creating inodes is what costs on ext4, and it is
safe because files are only ever replaced, never changed in place (truncate
cuts its own copy). A new cgroup directory is filled in a staging directory
beside ROOT (".ROOTNAME.fakecg-staging", removed by close()) and renamed into
place (atomic_mkdir=True, the default), so its files exist as soon as it does;
that makes inotify report IN_MOVED_TO for it instead of IN_CREATE
(atomic_mkdir=False gives IN_CREATE and a short window where its files are
missing). rmdir removes in place (IN_DELETE; the files go just before the
directory, as reads of a dying cgroup fail on a real host). A cgroup
directory never gets an inode number that its path had before (ext4 reuses
freed numbers; cgroupfs does not), so every recreate is visible by inode.
Inside `with fs.batch():` updates are kept and written once at the end; new
cgroups appear then.
Faults (garbage, vanish, unreadable, truncate) stick: later updates skip the
faulted file until heal() (or rmdir/recreate of the cgroup).

State (the model) is kept in ROOT/.fakecg-state.json after every change so the
CLI (and FakeCgroupFS.open) can continue from it. ROOT/.fakecg-meminfo is a
/proc/meminfo consistent with the tree; acctd checks the root's memory against
it when run with `--meminfo ROOT/.fakecg-meminfo` (acctd_root_args() below).

CLI:
  fakecg.py build --root DIR --mode v2|hybrid|legacy --count N --depth D
                  [--cpus C] [--nodes M] [--seed S] [--force]
  fakecg.py churn --root DIR --seconds T --rate R [--seed S]
  fakecg.py expected --root DIR [--path P]
  fakecg.py paths --root DIR
"""

import argparse
import contextlib
import errno
import hashlib
import json
import math
import os
import random
import shutil
import signal
import stat
import sys
import time

PAGE_SIZE = 4096
V1_UNLIMITED = 9223372036854771712  # PAGE_COUNTER_MAX * PAGE_SIZE on 64-bit
USER_HZ = 100
STATE_FILE = ".fakecg-state.json"
MEMINFO_FILE = ".fakecg-meminfo"
STATE_VERSION = 1

MODES = ("v2", "hybrid", "legacy")
MODE_TREES = {
    "v2": ("unified",),
    "hybrid": ("unified", "memory", "cpu,cpuacct"),
    "legacy": ("memory", "cpu,cpuacct"),
}
TREE_ALIASES = {
    "unified": "unified", "v2": "unified",
    "memory": "memory",
    "cpu,cpuacct": "cpu,cpuacct", "cpu": "cpu,cpuacct", "cpuacct": "cpu,cpuacct",
}

V2_ROOT_CONTROLLERS = "cpuset cpu io memory hugetlb pids rdma misc"
V2_SUBTREE_CONTROL = "cpu io memory pids"
# Subsystems bound to the v2 hierarchy, in kernel subsystem id order, for cgroup.stat.
V2_CGSTAT_SUBSYS = ("cpuset", "cpu", "io", "memory", "perf_event", "hugetlb", "pids", "rdma", "misc")
V2_CGSTAT_ENABLED = ("cpu", "io", "memory", "perf_event", "pids")  # css in every cgroup
HYBRID_CGSTAT_SUBSYS = ("perf_event", "hugetlb")  # as in the sample

PSI_RESOURCES = ("cpu", "memory", "io")
ALL_CATS = frozenset(("procs", "pids", "events", "stat", "static", "cpu", "cpulim", "mem", "memlim", "psi", "io"))
IO_STAT_KEYS = ("rbytes", "wbytes", "rios", "wios", "dbytes", "dios")

# Memory model keys: every one is stored as a per-node list of ints.
# Bytes that the v2 memory.numa_stat reports per node:
NODE_BYTE_KEYS = (
    "anon", "file", "kernel_stack", "pagetables", "sec_pagetables", "shmem", "file_mapped", "file_dirty",
    "file_writeback", "swapcached", "anon_thp", "file_thp", "shmem_thp", "inactive_anon", "active_anon",
    "inactive_file", "active_file", "unevictable", "slab_reclaimable", "slab_unreclaimable",
)
# Per-node event counters (also in v2 memory.numa_stat):
NODE_EVENT_KEYS = (
    "workingset_refault_anon", "workingset_refault_file", "workingset_activate_anon",
    "workingset_activate_file", "workingset_restore_anon", "workingset_restore_file",
    "workingset_nodereclaim", "pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged",
    "pgdemote_proactive", "pgpromote_success",
)
# Not per node in the files (kept at node 0):
OTHER_BYTE_KEYS = ("percpu", "sock", "vmalloc", "zswap", "zswapped", "swap")
EVENT_KEYS = (
    "pgpgin", "pgpgout", "pswpin", "pswpout", "pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged",
    "pgscan_proactive", "pgsteal_kswapd", "pgsteal_direct", "pgsteal_khugepaged", "pgsteal_proactive",
    "pgfault", "pgmajfault", "pgrefill", "pgactivate", "pgdeactivate", "pglazyfree", "pglazyfreed",
    "swpin_zero", "swpout_zero", "zswpin", "zswpout", "zswpwb", "thp_fault_alloc", "thp_collapse_alloc",
    "thp_swpout", "thp_swpout_fallback", "numa_pages_migrated", "numa_pte_updates", "numa_hint_faults",
)
MEM_KEYS = NODE_BYTE_KEYS + NODE_EVENT_KEYS + OTHER_BYTE_KEYS + EVENT_KEYS
KERNEL_KEYS = ("kernel_stack", "pagetables", "sec_pagetables", "percpu", "vmalloc", "slab_reclaimable",
               "slab_unreclaimable")

# v2 memory.stat, in the order of a 6.18 kernel (mm/memcontrol.c memory_stats[] then
# pgscan/pgsteal then memcg_vm_event_stat[]; CONFIG_ZSWAP, CONFIG_TRANSPARENT_HUGEPAGE,
# CONFIG_NUMA_BALANCING on, hugetlb accounting off as by default).
V2_MEMORY_STAT_KEYS = (
    "anon", "file", "kernel", "kernel_stack", "pagetables", "sec_pagetables", "percpu", "sock", "vmalloc",
    "shmem", "zswap", "zswapped", "file_mapped", "file_dirty", "file_writeback", "swapcached", "anon_thp",
    "file_thp", "shmem_thp", "inactive_anon", "active_anon", "inactive_file", "active_file", "unevictable",
    "slab_reclaimable", "slab_unreclaimable", "slab",
) + NODE_EVENT_KEYS + ("pgscan", "pgsteal") + EVENT_KEYS[2:]  # pgpgin/pgpgout are v1 only
V2_NUMA_STAT_KEYS = NODE_BYTE_KEYS + NODE_EVENT_KEYS
V2_MEMORY_EVENTS_KEYS = ("low", "high", "max", "oom", "oom_kill", "oom_group_kill")

# v1 memory.stat: local key -> model key (the sample's key set and order).
V1_MEMORY_STAT_LOCAL = (
    ("cache", "file"), ("rss", "anon"), ("rss_huge", "anon_thp"), ("shmem", "shmem"),
    ("mapped_file", "file_mapped"), ("dirty", "file_dirty"), ("writeback", "file_writeback"),
    ("workingset_refault_anon", "workingset_refault_anon"), ("workingset_refault_file", "workingset_refault_file"),
    ("swap", "swap"), ("swapcached", "swapcached"), ("pgpgin", "pgpgin"), ("pgpgout", "pgpgout"),
    ("pgfault", "pgfault"), ("pgmajfault", "pgmajfault"), ("inactive_anon", "inactive_anon"),
    ("active_anon", "active_anon"), ("inactive_file", "inactive_file"), ("active_file", "active_file"),
    ("unevictable", "unevictable"),
)

# Default split of a charge when set_memory gets only a total.
DEFAULT_RATIOS = {"anon": 55, "file": 35, "kernel": 8, "sock": 2}


def acctd_root_args(root):
    """acctd's options for a tree at ROOT: --cgroup-root, and --meminfo with
    the tree's own meminfo where there is one (acctd reads the host's
    /proc/meminfo only when it discovers the host's cgroups)."""
    root = str(root)
    args = ["--cgroup-root", root]
    meminfo = os.path.join(root, MEMINFO_FILE)
    if os.path.isfile(meminfo):
        args += ["--meminfo", meminfo]
    return args


class _Keep:
    def __repr__(self):
        return "KEEP"


KEEP = _Keep()  # "leave unchanged" marker for set_memory_limits


# ---------------------------------------------------------------------------
# small helpers

def _norm_path(path):
    if not isinstance(path, str):
        raise TypeError("cgroup path must be a str")
    parts = [p for p in path.split("/") if p]
    for p in parts:
        if p in (".", "..") or "\n" in p or "\0" in p:
            raise ValueError("bad cgroup path %r" % path)
    return "/" + "/".join(parts)


def _parent(path):
    if path == "/":
        return None
    i = path.rfind("/")
    return "/" if i == 0 else path[:i]


def _depth(path):
    return 0 if path == "/" else path.count("/")


def _weights(w, n):
    """Normalise weights to a list of n non-negative ints with a positive sum."""
    if w is None:
        return [1] * n
    if isinstance(w, int) and not isinstance(w, bool):  # a single index
        if not 0 <= w < n:
            raise ValueError("index %d out of range (0..%d)" % (w, n - 1))
        return [1 if i == w else 0 for i in range(n)]
    w = list(w)
    if len(w) != n:
        raise ValueError("need %d weights, got %d" % (n, len(w)))
    if any(x < 0 for x in w) or sum(w) <= 0:
        raise ValueError("weights must be >= 0 with a positive sum")
    return [int(round(x * 1000000)) for x in w]


def _split(total, weights):
    """Split the int `total` by int `weights`, exactly (remainder to the heaviest)."""
    s = sum(weights)
    if s <= 0:
        raise ValueError("weights sum to 0")
    out = [total * w // s for w in weights]
    rem = total - sum(out)
    if rem:
        out[weights.index(max(weights))] += rem
    return out


def _pages(nbytes):
    nbytes = int(nbytes)
    if nbytes < 0:
        raise ValueError("negative memory value")
    return -(-nbytes // PAGE_SIZE)


def _zero_mem(n):
    return {k: [0] * n for k in MEM_KEYS}


def _psi_zero():
    # hundredths of percent for avgs, microseconds for totals
    return {"some": [0, 0, 0, 0], "full": [0, 0, 0, 0]}


def _fmt_psi_line(kind, v):
    return "%s avg10=%d.%02d avg60=%d.%02d avg300=%d.%02d total=%d\n" % (
        kind, v[0] // 100, v[0] % 100, v[1] // 100, v[1] % 100, v[2] // 100, v[2] % 100, v[3])


def _fmt_kv(pairs):
    return "".join("%s %d\n" % kv for kv in pairs)


def _fmt_limit_v2(v):
    return "max\n" if v is None else "%d\n" % v


class _Cgroup:
    __slots__ = ("path", "trees", "own", "agg", "peak", "memsw_peak", "nodes", "cpu_user", "cpu_sys",
                 "nr_periods", "nr_throttled", "throttled_ns", "nr_bursts", "burst_ns", "cpu_quota",
                 "cpu_period", "cpu_weight", "cpu_shares", "mem_max", "mem_high", "mem_low", "mem_min",
                 "swap_max", "psi", "procs", "populated_override", "frozen", "mem_events", "io")

    def __init__(self, path, trees, nr_nodes, nr_cpus):
        self.path = path
        self.trees = list(trees)
        self.own = _zero_mem(nr_nodes)
        self.agg = _zero_mem(nr_nodes)
        self.peak = 0
        self.memsw_peak = 0
        self.nodes = [1] * nr_nodes
        self.cpu_user = [0] * nr_cpus  # ns, cumulative, hierarchical
        self.cpu_sys = [0] * nr_cpus
        self.nr_periods = self.nr_throttled = self.throttled_ns = self.nr_bursts = self.burst_ns = 0
        self.cpu_quota = None  # usec, None = max
        self.cpu_period = 100000
        self.cpu_weight = 100
        self.cpu_shares = 1024
        self.mem_max = self.mem_high = self.swap_max = None  # None = no limit
        self.mem_low = self.mem_min = 0
        self.psi = {r: _psi_zero() for r in PSI_RESOURCES}
        self.procs = []
        self.populated_override = None
        self.frozen = False
        self.mem_events = {k: 0 for k in V2_MEMORY_EVENTS_KEYS}
        self.io = {}  # "MAJ:MIN" -> {key: value} (IO_STAT_KEYS), hierarchical

    def to_json(self):
        d = {"path": self.path, "trees": self.trees}
        own = {k: v for k, v in self.own.items() if any(v)}
        if own:
            d["own"] = own
        for k in ("peak", "memsw_peak", "nodes", "cpu_user", "cpu_sys", "nr_periods", "nr_throttled",
                  "throttled_ns", "nr_bursts", "burst_ns", "cpu_quota", "cpu_period", "cpu_weight", "cpu_shares",
                  "mem_max", "mem_high", "mem_low", "mem_min", "swap_max", "procs", "populated_override",
                  "frozen"):
            d[k] = getattr(self, k)
        psi = {r: v for r, v in self.psi.items() if any(v["some"]) or any(v["full"])}
        if psi:
            d["psi"] = psi
        if any(self.mem_events.values()):
            d["mem_events"] = self.mem_events
        if self.io:
            d["io"] = self.io
        return d

    @classmethod
    def from_json(cls, d, nr_nodes, nr_cpus):
        cg = cls(d["path"], d["trees"], nr_nodes, nr_cpus)
        for k, v in d.get("own", {}).items():
            cg.own[k] = list(v)
        for k in ("peak", "memsw_peak", "nodes", "cpu_user", "cpu_sys", "nr_periods", "nr_throttled",
                  "throttled_ns", "nr_bursts", "burst_ns", "cpu_quota", "cpu_period", "cpu_weight", "cpu_shares",
                  "mem_max", "mem_high", "mem_low", "mem_min", "swap_max", "procs", "populated_override",
                  "frozen"):
            if k in d:
                setattr(cg, k, d[k])
        for r, v in d.get("psi", {}).items():
            cg.psi[r] = {"some": list(v["some"]), "full": list(v["full"])}
        cg.mem_events.update(d.get("mem_events", {}))
        cg.io = {dev: dict(v) for dev, v in d.get("io", {}).items()}
        return cg


# ---------------------------------------------------------------------------

class FakeCgroupFS:
    """A fake cgroupfs under `root`. See the module docstring for the model.

    FakeCgroupFS(root, mode="v2", nr_cpus=2, nr_nodes=1, mem_total=16 GiB) creates a
    new tree (root must be missing or empty); FakeCgroupFS.open(root) continues one.
    """

    def __init__(self, root, mode="v2", nr_cpus=2, nr_nodes=1, mem_total=16 << 30, swap_total=0,
                 write_mode="replace", atomic_mkdir=True, autosave=True, _state=None):
        self.root = os.path.abspath(os.fspath(root))
        if _state is None:
            if mode not in MODES:
                raise ValueError("mode must be one of %s" % (MODES,))
            if nr_cpus < 1 or nr_nodes < 1:
                raise ValueError("nr_cpus and nr_nodes must be >= 1")
            if os.path.exists(os.path.join(self.root, STATE_FILE)):
                raise FileExistsError("%s already holds a fake cgroupfs; use FakeCgroupFS.open()" % self.root)
            if os.path.isdir(self.root) and os.listdir(self.root):
                raise FileExistsError("%s is not empty" % self.root)
        else:
            mode = _state["mode"]
            nr_cpus = _state["nr_cpus"]
            nr_nodes = _state["nr_nodes"]
            mem_total = _state["mem_total"]
            swap_total = _state.get("swap_total", 0)
            write_mode = _state.get("write_mode", write_mode)
            atomic_mkdir = _state.get("atomic_mkdir", atomic_mkdir)
        if write_mode not in ("replace", "inplace"):
            raise ValueError("write_mode must be 'replace' or 'inplace'")
        self.mode = mode
        self.nr_cpus = nr_cpus
        self.nr_nodes = nr_nodes
        self.mem_total = int(mem_total)
        self.swap_total = int(swap_total)
        self.write_mode = write_mode
        self.atomic_mkdir = atomic_mkdir
        self.autosave = autosave
        self.trees = MODE_TREES[mode]
        self.mem_tree = "unified" if mode == "v2" else "memory"
        if mode == "v2":
            self._tree_roots = {"unified": self.root}
        else:
            self._tree_roots = {t: os.path.join(self.root, t) for t in self.trees}
        parent = os.path.dirname(self.root)
        self._staging = os.path.join(parent, "." + os.path.basename(self.root) + ".fakecg-staging")
        self.state_path = os.path.join(self.root, STATE_FILE)
        self.meminfo_path = os.path.join(self.root, MEMINFO_FILE)
        self._cgs = {}
        self._children = {}
        self._faults = {}  # (path, tree, filename) -> kind
        self._dirty = {}  # path -> set of categories
        self._pending = {}  # (path, tree) -> (old_dir, avoid_ino): directories to create at flush
        self._written_usage = {}  # path -> memory in use as last written (for _flush's order)
        self._unsaved = True
        self._json_cache = {}  # path -> the cgroup's JSON in the state file, while unchanged
        self._meminfo_dirty = True
        self._pool_dir = os.path.join(self._staging, "pool")
        self._staging_ok = False
        self._staging_seq = 0
        self._ino_history = {}  # (path, tree) -> inode numbers its directory has had
        self._pool_ok = write_mode == "replace"
        self._seen = {}  # small contents written once already -> pooled from the 2nd time
        self._batch = 0
        self._next_pid = 1000
        self._tmp_suffix = ".%d.fakecg-tmp" % os.getpid()

        if _state is None:
            self._create_layout()
        else:
            self._load_state(_state)

    # -- construction -------------------------------------------------------

    @classmethod
    def open(cls, root, autosave=True, write_mode=None):
        """Continue a tree created earlier (by this API or the CLI) from its state
        file. write_mode: override the one it was built with."""
        root = os.path.abspath(os.fspath(root))
        with open(os.path.join(root, STATE_FILE)) as f:
            state = json.load(f)
        if state.get("version") != STATE_VERSION:
            raise ValueError("unsupported state version %r" % state.get("version"))
        if write_mode is not None:
            state["write_mode"] = write_mode
        return cls(root, autosave=autosave, _state=state)

    def _create_layout(self):
        os.makedirs(self.root, exist_ok=True)
        cg = _Cgroup("/", self.trees, self.nr_nodes, self.nr_cpus)
        self._cgs["/"] = cg
        self._children["/"] = set()
        for t in self.trees:
            if t != "unified" or self.mode != "v2":
                os.mkdir(self._tree_roots[t])
            self._write_files(self._tree_roots[t], self._render(cg, t, ALL_CATS), None, fresh=True)
        if self.mode != "v2":
            os.symlink("cpu,cpuacct", os.path.join(self.root, "cpu"))
            os.symlink("cpu,cpuacct", os.path.join(self.root, "cpuacct"))
        self._write_meminfo()
        self.save()

    def _load_state(self, st):
        self._next_pid = st.get("next_pid", 1000)
        for d in st["cgroups"]:
            cg = _Cgroup.from_json(d, self.nr_nodes, self.nr_cpus)
            self._cgs[cg.path] = cg
            self._children[cg.path] = set()
            p = _parent(cg.path)
            if p is not None:
                self._children[p].add(cg.path)
        # hierarchical memory from the own charges, deepest first
        for path in sorted(self._cgs, key=_depth, reverse=True):
            cg = self._cgs[path]
            for k in MEM_KEYS:
                acc = list(cg.own[k])
                for c in self._children[path]:
                    if self.mem_tree in self._cgs[c].trees:
                        ca = self._cgs[c].agg[k]
                        for i in range(self.nr_nodes):
                            acc[i] += ca[i]
                cg.agg[k] = acc
        for f in st.get("faults", []):
            self._faults[(f[0], f[1], f[2])] = f[3]

    def save(self):
        """Write the state file (done automatically after every change when autosave)."""
        head = {
            "version": STATE_VERSION, "mode": self.mode, "nr_cpus": self.nr_cpus, "nr_nodes": self.nr_nodes,
            "mem_total": self.mem_total, "swap_total": self.swap_total, "page_size": PAGE_SIZE,
            "write_mode": self.write_mode, "atomic_mkdir": self.atomic_mkdir, "next_pid": self._next_pid,
            "faults": [[k[0], k[1], k[2], v] for k, v in sorted(self._faults.items())],
        }
        parts = []
        cache = self._json_cache
        for p in sorted(self._cgs):
            js = cache.get(p)
            if js is None:
                js = cache[p] = json.dumps(self._cgs[p].to_json(), separators=(",", ":"))
            parts.append(js)
        data = json.dumps(head, separators=(",", ":"))[:-1] + ',"cgroups":[' + ",".join(parts) + "]}"
        tmp = self.state_path + self._tmp_suffix
        with open(tmp, "w") as f:
            f.write(data)
        os.replace(tmp, self.state_path)
        self._unsaved = False

    def close(self):
        """Flush, save, and remove the staging directory beside ROOT (the object
        stays usable)."""
        self._flush(force=True)
        shutil.rmtree(self._pool_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(self._staging)
        self._staging_ok = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @contextlib.contextmanager
    def batch(self):
        """Defer file updates (and the state save) to the end of the block.

        Every changed file is written once, when the outermost batch ends; new
        cgroups appear then, complete. Calls that need the directories
        (expected, read, faults, recreate) create pending ones first."""
        self._batch += 1
        try:
            yield self
        finally:
            self._batch -= 1
            if self._batch == 0:
                self._flush()

    # -- queries ------------------------------------------------------------

    def paths(self, tree=None):
        """All cgroup paths ("/" included), parents before children."""
        if tree is None:
            return sorted(self._cgs)
        tree = self._norm_tree(tree)
        return sorted(p for p, cg in self._cgs.items() if tree in cg.trees)

    def exists(self, path):
        return _norm_path(path) in self._cgs

    def trees_of(self, path):
        return list(self._get(path).trees)

    def children(self, path):
        return sorted(self._children[self._get(path).path])

    def tree_root(self, tree):
        return self._tree_roots[self._norm_tree(tree)]

    def dir(self, path, tree=None):
        """The directory of cgroup `path` in `tree` (default: its first tree)."""
        cg = self._get(path)
        tree = cg.trees[0] if tree is None else self._norm_tree(tree)
        return self._dir(tree, cg.path)

    def files(self, path, tree=None):
        """The file names the fake maintains for this cgroup in `tree`."""
        cg = self._get(path)
        tree = cg.trees[0] if tree is None else self._norm_tree(tree)
        return sorted(name for name, _ in self._render(cg, tree, ALL_CATS))

    def read(self, path, filename, tree=None):
        """Read one file of a cgroup as text. tree=None: the first of the cgroup's
        trees (unified, memory, cpu,cpuacct order) that has the file."""
        cg = self._get(path)
        self._materialize_pending()
        if tree is None:
            for t in cg.trees:
                p = os.path.join(self._dir(t, cg.path), filename)
                if os.path.lexists(p):
                    tree = t
                    break
            else:
                raise FileNotFoundError(errno.ENOENT, "no %s in any tree" % filename, cg.path)
        with open(os.path.join(self._dir(self._norm_tree(tree), cg.path), filename)) as f:
            return f.read()

    def meminfo(self):
        """The fake /proc/meminfo as a dict key -> int (bytes for kB lines)."""
        out = {}
        for k, v in self._meminfo_items():
            out[k] = v
        return out

    # -- structure ----------------------------------------------------------

    def mkdir(self, path, memory=None, cpu_usec=0, user_frac=0.7, procs=None, trees=None, memory_max=None,
              cpu_max=None, nodes=None, exist_ok=False):
        """Create a cgroup (and any missing parents, empty) in `trees` (default: all).

        memory: own charge in bytes (int) or a dict of set_memory() keywords;
        cpu_usec: initial CPU time (add_cpu); procs: PIDs; memory_max: bytes or None;
        cpu_max: quota usec or (quota, period) or None; nodes: NUMA weights.
        With exist_ok, an existing cgroup is extended to the trees it lacks."""
        path = _norm_path(path)
        trees = self._norm_trees(trees)
        if path == "/":
            raise FileExistsError("the root cgroup always exists")
        if path in self._cgs:
            if not exist_ok:
                raise FileExistsError(errno.EEXIST, "cgroup exists", path)
            self._extend(self._cgs[path], trees)
            self._flush()
            return
        self._create(path, trees, memory=memory, cpu_usec=cpu_usec, user_frac=user_frac, procs=procs,
                     memory_max=memory_max, cpu_max=cpu_max, nodes=nodes)
        self._flush()

    def rmdir(self, path, trees=None, reparent=False):
        """Remove a cgroup and its descendants from every tree (or only from `trees`).

        The memory they had leaves their ancestors, unless reparent=True (then it
        is added to the parent's own charge, as the kernel does for page cache)."""
        cg = self._get(path)
        if cg.path == "/":
            raise PermissionError("cannot remove the root cgroup")
        trees = list(cg.trees) if trees is None else [t for t in self._norm_trees(trees) if t in cg.trees]
        self._remove(cg.path, trees, reparent)
        self._flush()

    def recreate(self, path, **mkdir_args):
        """rmdir + mkdir of the same path: new directories (new inodes) with fresh
        counters. Descendants are removed. mkdir_args as for mkdir (trees default to
        the old ones)."""
        cg = self._get(path)
        if cg.path == "/":
            raise PermissionError("cannot recreate the root cgroup")
        self._materialize_pending()
        path = cg.path
        trees = self._norm_trees(mkdir_args.pop("trees", None) or cg.trees)
        old_dirs = {t: self._dir(t, path) for t in cg.trees}
        old_inodes = {t: os.stat(d).st_ino for t, d in old_dirs.items()}
        # The old directories stay until the new ones are ready (atomic_mkdir: the
        # new inodes are allocated while the old ones exist, so they differ); each
        # old directory is removed in place right before its successor appears.
        self._remove(path, list(cg.trees), False, keep_dirs=True)
        try:
            self._create(path, trees, _swap_out=old_dirs, _avoid_ino=old_inodes, **mkdir_args)
        finally:
            for t, d in old_dirs.items():
                if t not in trees or path not in self._cgs:
                    shutil.rmtree(d, ignore_errors=True)
        self._flush()

    # -- values -------------------------------------------------------------

    def set_memory(self, path, bytes=None, *, anon=None, file=None, kernel=None, sock=None, shmem=None,
                   swap=None, nodes=None):
        """Set the cgroup's OWN charge (bytes, rounded up to pages) and its split.

        Components not given share the rest of `bytes` by default ratios (anon 55%,
        file 35%, kernel 8%, sock 2%; no sock in v1 modes); with bytes=None the own
        charge is the sum of the components given. shmem is part of file
        (default 5% of it). swap (own, default unchanged) is outside `bytes`.
        nodes: NUMA weights for this cgroup (kept for later calls).
        Ancestors' hierarchical values, peaks and meminfo follow."""
        cg = self._get(path)
        self._set_memory(cg, bytes, anon=anon, file=file, kernel=kernel, sock=sock, shmem=shmem, swap=swap,
                         nodes=nodes)
        self._flush()

    def set_memory_total(self, path, bytes, **components):
        """Set the cgroup's HIERARCHICAL usage (memory.current / usage_in_bytes) to
        `bytes` by setting its own charge to bytes - sum(children); ValueError if
        the children already use more. Components apply to the own part."""
        cg = self._get(path)
        children = sum(self._usage(self._cgs[c].agg) for c in self._children[cg.path]
                       if self.mem_tree in self._cgs[c].trees)
        own = _pages(bytes) * PAGE_SIZE - children
        if own < 0:
            raise ValueError("children of %s already use %d bytes > %d" % (cg.path, children, bytes))
        self._set_memory(cg, own, **components)
        self._flush()

    def set_memory_limits(self, path, max=KEEP, high=KEEP, low=KEEP, min=KEEP, swap_max=KEEP):
        """memory.max/high/low/min/swap.max (v2) and memory.limit_in_bytes /
        memsw.limit_in_bytes (v1). None = no limit; limits are not enforced."""
        cg = self._get(path)
        for name, v in (("mem_max", max), ("mem_high", high), ("mem_low", low), ("mem_min", min),
                        ("swap_max", swap_max)):
            if v is KEEP:
                continue
            if v is None and name in ("mem_low", "mem_min"):
                v = 0
            setattr(cg, name, None if v is None else _pages(v) * PAGE_SIZE)
        for p in self._subtree(cg.path):
            self._mark(p, "memlim", "mem")
        self._flush()

    def set_memory_max(self, path, bytes):
        """Shorthand for set_memory_limits(path, max=bytes)."""
        self.set_memory_limits(path, max=bytes)

    def reset_peak(self, path):
        """Reset memory.peak / max_usage_in_bytes to the current usage."""
        cg = self._get(path)
        cg.peak = self._usage(cg.agg)
        cg.memsw_peak = cg.peak + sum(cg.agg["swap"])
        self._mark(cg.path, "mem")
        self._flush()

    def add_memory_events(self, path, **counts):
        """Increase v2 memory.events counters (low, high, max, oom, oom_kill, oom_group_kill)."""
        cg = self._get(path)
        for k, v in counts.items():
            if k not in cg.mem_events:
                raise ValueError("unknown memory event %r" % k)
            cg.mem_events[k] += int(v)
        self._mark(cg.path, "mem")
        self._flush()

    def add_io(self, path, device, **counts):
        """Add block I/O on `device` ("MAJ:MIN") to the cgroup and all its
        ancestors (cumulative, hierarchical): counts are io.stat's keys rbytes,
        wbytes, rios, wios, dbytes, dios."""
        cg = self._get(path)
        for k, v in counts.items():
            if k not in IO_STAT_KEYS or int(v) < 0:
                raise ValueError("unknown io.stat key or negative count %r=%r" % (k, v))
        for p in self._ancestors(cg.path, include_self=True):
            a = self._cgs[p]
            dev = a.io.setdefault(device, {k: 0 for k in IO_STAT_KEYS})
            for k, v in counts.items():
                dev[k] += int(v)
            self._mark(p, "io")
        self._flush()

    def add_cpu(self, path, usec, user_frac=0.7, cpus=None):
        """Add `usec` of CPU time to the cgroup and all its ancestors (cumulative,
        hierarchical). user_frac of it is user time. cpus: a CPU index, or weights
        per CPU (default: even spread)."""
        cg = self._get(path)
        self._add_cpu(cg, usec, user_frac, cpus)
        self._flush()

    def add_throttling(self, path, periods=0, throttled=0, throttled_usec=0, bursts=0, burst_usec=0):
        """Increase the CFS bandwidth counters (per cgroup, not hierarchical)."""
        cg = self._get(path)
        cg.nr_periods += int(periods)
        cg.nr_throttled += int(throttled)
        cg.throttled_ns += int(throttled_usec) * 1000
        cg.nr_bursts += int(bursts)
        cg.burst_ns += int(burst_usec) * 1000
        self._mark(cg.path, "cpu")
        self._flush()

    def set_cpu_max(self, path, quota_usec=None, period_usec=100000):
        """cpu.max (v2) / cpu.cfs_quota_us + cpu.cfs_period_us (v1). None = max."""
        cg = self._get(path)
        cg.cpu_quota = None if quota_usec is None else int(quota_usec)
        cg.cpu_period = int(period_usec)
        self._mark(cg.path, "cpulim")
        self._flush()

    def set_cpu_weight(self, path, weight=100, shares=None):
        """cpu.weight (v2) and cpu.shares (v1; default derived from weight)."""
        cg = self._get(path)
        cg.cpu_weight = int(weight)
        cg.cpu_shares = int(shares) if shares is not None else max(2, int(weight) * 1024 // 100)
        self._mark(cg.path, "cpulim")
        self._flush()

    def set_pressure(self, path, resource, some_avg10=None, some_avg60=None, some_avg300=None,
                     some_total_us=None, full_avg10=None, full_avg60=None, full_avg300=None, full_total_us=None,
                     total_us=None):
        """Set PSI of `resource` (cpu, memory, io). Arguments left None keep their
        value; total_us is an alias of some_total_us. Avgs in percent (2 decimals)."""
        cg = self._get(path)
        if resource not in PSI_RESOURCES:
            raise ValueError("resource must be one of %s" % (PSI_RESOURCES,))
        if "unified" not in cg.trees:
            raise ValueError("%s has no v2 tree, so no pressure files" % cg.path)
        if total_us is not None:
            if some_total_us is not None:
                raise ValueError("give total_us or some_total_us, not both")
            some_total_us = total_us
        v = cg.psi[resource]
        for kind, vals in (("some", (some_avg10, some_avg60, some_avg300, some_total_us)),
                           ("full", (full_avg10, full_avg60, full_avg300, full_total_us))):
            for i, x in enumerate(vals):
                if x is None:
                    continue
                if x < 0:
                    raise ValueError("pressure values must be >= 0")
                v[kind][i] = int(round(x * 100)) if i < 3 else int(x)
        self._mark(cg.path, "psi")
        self._flush()

    def set_procs(self, path, pids):
        """Set the processes of the cgroup (cgroup.procs, tasks, cgroup.threads);
        ancestors' pids.current and populated follow."""
        cg = self._get(path)
        self._set_procs(cg, pids)
        self._flush()

    def set_populated(self, path, populated):
        """Force cgroup.events "populated" (True/False); None: derive it again from
        the processes. Ancestors follow."""
        cg = self._get(path)
        cg.populated_override = None if populated is None else bool(populated)
        for p in self._ancestors(cg.path, True):
            self._mark(p, "events")
        self._flush()

    def set_frozen(self, path, frozen):
        cg = self._get(path)
        cg.frozen = bool(frozen)
        self._mark(cg.path, "events")
        self._flush()

    def alloc_pids(self, n):
        """n fresh, unused-looking PIDs."""
        out = list(range(self._next_pid, self._next_pid + n))
        self._next_pid += n
        return out

    # -- faults -------------------------------------------------------------

    def garbage(self, path, filename, content=b"\x00\xffgarbage 12x\nnot-a-number -1\n", tree=None):
        """Write junk into the file (in place, deliberately not atomic). Sticky until heal()."""
        if isinstance(content, str):
            content = content.encode()
        for t, p in self._fault_targets(path, filename, tree):
            self._clear_path(p)
            with open(p, "wb") as f:
                f.write(content)
            self._unsaved = True
            self._faults[(self._get(path).path, t, filename)] = "garbage"
        self._flush()

    def vanish(self, path, filename, tree=None):
        """Delete the file. Sticky until heal()."""
        for t, p in self._fault_targets(path, filename, tree):
            self._clear_path(p)
            self._unsaved = True
            self._faults[(self._get(path).path, t, filename)] = "vanish"
        self._flush()

    def unreadable(self, path, filename, tree=None, how="dir"):
        """Make reading the file fail even as root. how="dir": replace it by a
        directory (open/read give EISDIR; note that discovery may then see an extra
        directory); how="socket": replace it by a socket inode (open gives ENXIO,
        and it is not a directory). Sticky until heal()."""
        if how not in ("dir", "socket"):
            raise ValueError("how must be 'dir' or 'socket'")
        for t, p in self._fault_targets(path, filename, tree):
            self._clear_path(p)
            if how == "dir":
                os.mkdir(p)
            else:
                os.mknod(p, stat.S_IFSOCK | 0o644)
            self._unsaved = True
            self._faults[(self._get(path).path, t, filename)] = "unreadable"
        self._flush()

    def truncate(self, path, filename, tree=None, at=None):
        """Cut the file mid-line (in place, same inode): the result is a non-empty
        prefix that does not end with a newline. at: cut at this byte offset."""
        for t, p in self._fault_targets(path, filename, tree):
            with open(p, "rb") as f:
                data = f.read()
            if os.stat(p).st_nlink > 1:  # a pooled copy: cut our own copy only
                tmp = p + self._tmp_suffix
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, p)
            if at is not None:
                pos = int(at)
            else:
                pos = self._mid_line_cut(data)
            if not 0 <= pos < len(data):
                raise ValueError("cannot truncate %s (%d bytes) at %d" % (p, len(data), pos))
            os.truncate(p, pos)
            self._unsaved = True
            self._faults[(self._get(path).path, t, filename)] = "truncate"
        self._flush()

    def faults(self, path=None):
        """Active faults as a list of (path, tree, filename, kind)."""
        return [(k[0], k[1], k[2], v) for k, v in sorted(self._faults.items())
                if path is None or k[0] == _norm_path(path)]

    def heal(self, path, filename=None, tree=None):
        """Undo faults of the cgroup (one file, or all) and rewrite its files."""
        cg = self._get(path)
        tree = None if tree is None else self._norm_tree(tree)
        for key in list(self._faults):
            if key[0] == cg.path and (filename is None or key[2] == filename) and (tree is None or key[1] == tree):
                del self._faults[key]
                self._clear_path(os.path.join(self._dir(key[1], cg.path), key[2]))
        self._mark(cg.path, *ALL_CATS)
        self._flush()

    # -- the truth ----------------------------------------------------------

    def expected(self, path):
        """What a correct reader should report for the cgroup (JSON-able dict).

        Memory keys are None when the cgroup is not in the memory tree, cpu keys
        when it is in no tree with CPU files, psi when it has no v2 tree."""
        cg = self._get(path)
        self._materialize_pending()
        has_mem = self.mem_tree in cg.trees
        has_cpu = "unified" in cg.trees or "cpu,cpuacct" in cg.trees
        a = cg.agg
        e = {
            "path": cg.path, "mode": self.mode, "depth": _depth(cg.path), "trees": list(cg.trees),
            "inodes": {t: os.stat(self._dir(t, cg.path)).st_ino for t in cg.trees},
            "populated": self._populated(cg), "frozen": cg.frozen, "procs": list(cg.procs),
            "nr_tasks": self._nr_tasks(cg),
            "nr_descendants": self._nr_desc(cg, cg.trees[0]),
            "children": sorted(self._children[cg.path]),
            "faults": [[t, f, k] for (p, t, f), k in sorted(self._faults.items()) if p == cg.path],
        }
        if has_mem:
            usage = self._usage(a)
            numa_anon = list(a["anon"])
            numa_file = list(a["file"])
            e.update({
                "memory_bytes": usage,
                "memory_peak_bytes": cg.peak,
                "memory_anon_bytes": sum(a["anon"]),
                "memory_file_bytes": sum(a["file"]),
                "memory_kernel_bytes": sum(sum(a[k]) for k in KERNEL_KEYS),
                "memory_sock_bytes": sum(a["sock"]),
                "memory_shmem_bytes": sum(a["shmem"]),
                "memory_slab_bytes": sum(a["slab_reclaimable"]) + sum(a["slab_unreclaimable"]),
                "memory_swap_bytes": sum(a["swap"]),
                "memory_memsw_bytes": usage + sum(a["swap"]),
                "memory_own_bytes": self._usage(cg.own),
                "memory_numa_bytes": [x + y for x, y in zip(numa_anon, numa_file)],
                "memory_numa_anon_bytes": numa_anon,
                "memory_numa_file_bytes": numa_file,
                "memory_max_bytes": cg.mem_max,
                "memory_high_bytes": cg.mem_high,
                "memory_low_bytes": cg.mem_low,
                "memory_min_bytes": cg.mem_min,
                "memory_swap_max_bytes": cg.swap_max,
                "memory_limit_bytes": self._hier_limit(cg),  # effective: min over ancestors, None = none
                "memory_events": dict(cg.mem_events),
            })
        else:
            for k in ("memory_bytes", "memory_peak_bytes", "memory_anon_bytes", "memory_file_bytes",
                      "memory_kernel_bytes", "memory_sock_bytes", "memory_shmem_bytes", "memory_slab_bytes",
                      "memory_swap_bytes", "memory_memsw_bytes", "memory_own_bytes", "memory_numa_bytes",
                      "memory_numa_anon_bytes", "memory_numa_file_bytes", "memory_max_bytes",
                      "memory_high_bytes", "memory_low_bytes", "memory_min_bytes", "memory_swap_max_bytes",
                      "memory_limit_bytes", "memory_events"):
                e[k] = None
        if has_cpu:
            user, sys_ = sum(cg.cpu_user), sum(cg.cpu_sys)
            v1 = "cpu,cpuacct" in cg.trees
            e.update({
                "cpu_usage_ns": user + sys_,
                "cpu_usage_usec": (user + sys_) // 1000,
                "cpu_user_usec": user // 1000,
                "cpu_system_usec": sys_ // 1000,
                "cpu_percpu_ns": [u + s for u, s in zip(cg.cpu_user, cg.cpu_sys)],
                # what cpuacct.stat (USER_HZ ticks) gives, converted to usec
                "cpuacct_stat_user_usec": (user * USER_HZ // 1000000000) * (1000000 // USER_HZ) if v1 else None,
                "cpuacct_stat_system_usec": (sys_ * USER_HZ // 1000000000) * (1000000 // USER_HZ) if v1 else None,
                "cpu_nr_periods": cg.nr_periods,
                "cpu_nr_throttled": cg.nr_throttled,
                "cpu_throttled_usec": cg.throttled_ns // 1000,
                "cpu_quota_usec": cg.cpu_quota,
                "cpu_period_usec": cg.cpu_period,
                "cpu_weight": cg.cpu_weight,
                "cpu_shares": cg.cpu_shares,
            })
        else:
            for k in ("cpu_usage_ns", "cpu_usage_usec", "cpu_user_usec", "cpu_system_usec", "cpu_percpu_ns",
                      "cpuacct_stat_user_usec", "cpuacct_stat_system_usec", "cpu_nr_periods", "cpu_nr_throttled",
                      "cpu_throttled_usec", "cpu_quota_usec", "cpu_period_usec", "cpu_weight", "cpu_shares"):
                e[k] = None
        if "unified" in cg.trees:
            e["psi"] = {r: {kind: {"avg10": v[0] / 100, "avg60": v[1] / 100, "avg300": v[2] / 100,
                                   "total_us": v[3]}
                            for kind, v in cg.psi[r].items()}
                        for r in PSI_RESOURCES}
        else:
            e["psi"] = None
        e["io"] = {dev: dict(v) for dev, v in cg.io.items()} if self.mode == "v2" else None
        return e

    # =======================================================================
    # internals: model

    def _get(self, path):
        p = _norm_path(path)
        try:
            return self._cgs[p]
        except KeyError:
            raise FileNotFoundError(errno.ENOENT, "no such cgroup", p) from None

    def _norm_tree(self, t):
        try:
            t = TREE_ALIASES[t]
        except KeyError:
            raise ValueError("unknown tree %r" % (t,)) from None
        if t not in self.trees:
            raise ValueError("tree %r is not part of mode %s" % (t, self.mode))
        return t

    def _norm_trees(self, trees):
        if trees is None:
            return list(self.trees)
        if isinstance(trees, str):
            trees = [trees]
        s = {self._norm_tree(t) for t in trees}
        if not s:
            raise ValueError("empty tree list")
        return [t for t in self.trees if t in s]

    def _dir(self, tree, path):
        r = self._tree_roots[tree]
        return r if path == "/" else r + path

    def _ancestors(self, path, include_self=False):
        out = [path] if include_self else []
        p = _parent(path)
        while p is not None:
            out.append(p)
            p = _parent(p)
        return out

    def _subtree(self, path):
        out = [path]
        i = 0
        while i < len(out):
            out.extend(sorted(self._children[out[i]]))
            i += 1
        return out

    def _mark(self, path, *cats):
        """Note that the cgroup changed: its files in `cats` are rewritten at the
        next flush, and its state is serialised again."""
        self._unsaved = True
        self._json_cache.pop(path, None)
        s = self._dirty.get(path)
        if s is None:
            self._dirty[path] = set(cats)
        else:
            s.update(cats)

    def _usage(self, vec):
        u = sum(vec["anon"]) + sum(vec["file"])
        for k in KERNEL_KEYS:
            u += sum(vec[k])
        if self.mode == "v2":
            u += sum(vec["sock"]) + sum(vec["zswap"])
        return u

    def _populated(self, cg):
        if cg.populated_override is not None:
            return cg.populated_override
        if cg.procs:
            return True
        return any(self._populated(self._cgs[c]) for c in self._children[cg.path])

    def _nr_tasks(self, cg):
        return len(cg.procs) + sum(self._nr_tasks(self._cgs[c]) for c in self._children[cg.path])

    def _nr_desc(self, cg, tree):
        n = 0
        for c in self._children[cg.path]:
            ccg = self._cgs[c]
            if tree in ccg.trees:
                n += 1 + self._nr_desc(ccg, tree)
        return n

    def _hier_limit(self, cg):
        lim = None
        for p in self._ancestors(cg.path, True):
            m = self._cgs[p].mem_max
            if m is not None and (lim is None or m < lim):
                lim = m
        return lim

    def _hier_memsw_limit(self, cg):
        lim = None
        for p in self._ancestors(cg.path, True):
            c = self._cgs[p]
            if c.mem_max is not None and c.swap_max is not None:
                m = c.mem_max + c.swap_max
                if lim is None or m < lim:
                    lim = m
        return lim

    def _create(self, path, trees, memory=None, cpu_usec=0, user_frac=0.7, procs=None, memory_max=None,
                cpu_max=None, nodes=None, _swap_out=None, _avoid_ino=None):
        name = path.rsplit("/", 1)[1]
        if cpu_usec and (cpu_usec < 0 or not 0.0 <= user_frac <= 1.0):
            raise ValueError("cpu_usec must be >= 0 and 0 <= user_frac <= 1")
        if procs and any(int(x) <= 0 for x in procs):
            raise ValueError("PIDs must be positive")
        if nodes is not None:
            nodes = _weights(nodes, self.nr_nodes)
        parent = _parent(path)
        # parents, like mkdir -p (and extend an existing parent to the trees asked for)
        if parent not in self._cgs:
            self._create(parent, trees)
        else:
            self._extend(self._cgs[parent], trees)
        for t in trees:
            d = os.path.join(self._dir(t, parent), name)
            if os.path.lexists(d) and not (_swap_out and _swap_out.get(t) == d):
                raise FileExistsError(errno.EEXIST, "name taken in %s" % t, path)
        cg = _Cgroup(path, trees, self.nr_nodes, self.nr_cpus)
        if nodes is not None:
            cg.nodes = nodes
        self._cgs[path] = cg
        self._children[path] = set()
        self._children[parent].add(path)
        try:
            if memory_max is not None:
                cg.mem_max = _pages(memory_max) * PAGE_SIZE
            if cpu_max is not None:
                if isinstance(cpu_max, (tuple, list)):
                    cg.cpu_quota, cg.cpu_period = int(cpu_max[0]), int(cpu_max[1])
                else:
                    cg.cpu_quota = int(cpu_max)
            if memory is not None:
                if isinstance(memory, dict):
                    self._set_memory(cg, **memory)
                else:
                    self._set_memory(cg, memory)
            if cpu_usec:
                self._add_cpu(cg, cpu_usec, user_frac, None)
            if procs:
                self._set_procs(cg, procs)
        except Exception:
            self._forget(path)
            raise
        for p in self._ancestors(path):
            self._mark(p, "stat", "events", "pids")
        for t in trees:
            self._pending[(path, t)] = ((_swap_out or {}).get(t), (_avoid_ino or {}).get(t))
        return cg

    def _extend(self, cg, trees):
        new = [t for t in trees if t not in cg.trees]
        if not new:
            return
        parent = _parent(cg.path)
        if parent is not None:
            self._extend(self._cgs[parent], new)
        cg.trees = [t for t in self.trees if t in cg.trees or t in new]
        self._mark(cg.path, "stat")
        for t in new:
            self._pending[(cg.path, t)] = (None, None)
        for p in self._ancestors(cg.path):
            self._mark(p, "stat")

    def _forget(self, path):
        self._json_cache.pop(path, None)
        cg = self._cgs.pop(path)
        self._children.pop(path, None)
        parent = _parent(path)
        if parent in self._children:
            self._children[parent].discard(path)
        return cg

    def _remove(self, path, trees, reparent, keep_dirs=False):
        """Remove `path` and its descendants from `trees` (model and directories)."""
        cg = self._cgs[path]
        parent = _parent(path)
        sub = self._subtree(path)
        dirs = [self._dir(t, path) for t in trees]
        mem_gone = self.mem_tree in trees
        if mem_gone and parent is not None:
            # The subtree leaves the memory tree. Its bytes leave the ancestors
            # (or, with reparent, become the parent's own charge); its cumulative
            # event counters stay with the ancestors (moved into the parent's own).
            pcg = self._cgs[parent]
            moving = EVENT_KEYS + NODE_EVENT_KEYS + ((NODE_BYTE_KEYS + OTHER_BYTE_KEYS) if reparent else ())
            for k in moving:
                pcg.own[k] = [x + y for x, y in zip(pcg.own[k], cg.agg[k])]
            if not reparent:
                neg = {k: [-x for x in cg.agg[k]] for k in NODE_BYTE_KEYS + OTHER_BYTE_KEYS}
                for p in self._ancestors(path):
                    self._apply_delta(self._cgs[p], neg)
        for p in reversed(sub):
            c = self._cgs[p]
            for t in trees:
                if t in c.trees:
                    with contextlib.suppress(OSError):
                        self._ino_history.setdefault((p, t), set()).add(os.stat(self._dir(t, p)).st_ino)
            left = [t for t in c.trees if t not in trees]
            for key in [k for k in self._faults if k[0] == p and k[1] in trees]:
                del self._faults[key]
            for t in trees:
                pend = self._pending.pop((p, t), None)
                if pend and pend[0]:
                    shutil.rmtree(pend[0], ignore_errors=True)
            if not left:
                self._forget(p)
                self._dirty.pop(p, None)
            else:
                c.trees = left
                self._mark(p, "stat")
                if mem_gone:
                    c.own = _zero_mem(self.nr_nodes)
                    c.agg = _zero_mem(self.nr_nodes)
                    c.peak = c.memsw_peak = 0
        for p in self._ancestors(path):
            self._mark(p, "stat", "events", "pids", "mem" if mem_gone else "stat")
        if mem_gone:
            self._meminfo_dirty = True
        if not keep_dirs:
            for d in dirs:
                shutil.rmtree(d, ignore_errors=True)

    def _set_memory(self, cg, bytes=None, anon=None, file=None, kernel=None, sock=None, shmem=None, swap=None,
                    nodes=None):
        if self.mem_tree not in cg.trees:
            raise ValueError("%s is not in the memory tree (%s)" % (cg.path, self.mem_tree))
        if nodes is not None:
            cg.nodes = _weights(nodes, self.nr_nodes)
        self._mark(cg.path, "mem")
        n = self.nr_nodes
        usage_keys = ["anon", "file", "kernel"] + (["sock"] if self.mode == "v2" else [])
        if self.mode != "v2" and sock:
            raise ValueError("sock memory is not charged in cgroup v1")
        comps = {"anon": anon, "file": file, "kernel": kernel, "sock": sock}
        given = {k: _pages(v) for k, v in comps.items() if v is not None and k in usage_keys}
        pages = {k: 0 for k in ("anon", "file", "kernel", "sock")}
        if bytes is None:
            pages.update(given)
        else:
            rest = _pages(bytes) - sum(given.values())
            if rest < 0:
                raise ValueError("components exceed bytes")
            free = [k for k in usage_keys if k not in given]
            pages.update(given)
            if free:
                for k, v in zip(free, _split(rest, [DEFAULT_RATIOS[k] for k in free])):
                    pages[k] = v
            elif rest:
                raise ValueError("components do not add up to bytes")
        new = _zero_mem(n)
        per = {k: _split(v, cg.nodes) for k, v in pages.items()}
        file_total = pages["file"]
        if shmem is None:
            shm = [f * 5 // 100 for f in per["file"]]
        else:
            s = _pages(shmem)
            if s > file_total:
                raise ValueError("shmem is part of file and cannot exceed it")
            shm = _split(s, per["file"]) if s else [0] * n
        for i in range(n):
            a, f, k, so, sh = per["anon"][i], per["file"][i], per["kernel"][i], per["sock"][i], shm[i]
            lru_anon = a + sh
            lru_file = f - sh
            vals = {
                "anon": a, "file": f, "shmem": sh, "file_mapped": f * 3 // 10, "file_dirty": f // 100,
                "active_anon": lru_anon // 10, "inactive_anon": lru_anon - lru_anon // 10,
                "active_file": lru_file * 6 // 10, "inactive_file": lru_file - lru_file * 6 // 10,
                "kernel_stack": k // 10, "pagetables": k // 5, "percpu": k // 20, "vmalloc": k // 20,
                "slab_unreclaimable": k // 4, "sock": so,
            }
            vals["slab_reclaimable"] = k - (vals["kernel_stack"] + vals["pagetables"] + vals["percpu"]
                                            + vals["vmalloc"] + vals["slab_unreclaimable"])
            for key, v in vals.items():
                new[key][i] = v * PAGE_SIZE
        new["swap"][0] = cg.own["swap"][0] if swap is None else _pages(swap) * PAGE_SIZE
        # event counters carry over and grow with the change
        for key in NODE_EVENT_KEYS + EVENT_KEYS:
            new[key] = list(cg.own[key])
        old_pages = self._usage(cg.own) // PAGE_SIZE
        new_pages = self._usage(new) // PAGE_SIZE
        # the host must hold it
        root_after = self._usage(self._cgs["/"].agg) + (new_pages - old_pages) * PAGE_SIZE
        if root_after + self._reserved() > self.mem_total:
            raise ValueError("the host's MemTotal (%d) cannot hold %d bytes in cgroups" % (self.mem_total, root_after))
        d = new_pages - old_pages
        inc = {}
        if d > 0:
            inc["pgpgin"] = d
            inc["pgfault"] = d + d // 4
        elif d < 0:
            inc["pgpgout"] = -d
        dfile = pages["file"] - sum(cg.own["file"]) // PAGE_SIZE
        if dfile > 0:
            inc["pgmajfault"] = dfile // 64
        elif dfile < 0:
            inc["workingset_refault_file"] = -dfile // 8
            inc["pgsteal_kswapd"] = -dfile
            inc["pgscan_kswapd"] = -dfile + -dfile // 4
        for key, v in inc.items():
            if v:
                new[key] = [x + y for x, y in zip(new[key], _split(v, cg.nodes))]
        diff = {k: [x - y for x, y in zip(new[k], cg.own[k])] for k in MEM_KEYS if new[k] != cg.own[k]}
        cg.own = new
        if diff:
            for p in self._ancestors(cg.path, True):
                self._apply_delta(self._cgs[p], diff)
            self._meminfo_dirty = True

    def _apply_delta(self, cg, diff):
        agg = cg.agg
        for k, v in diff.items():
            a = agg[k]
            for i, x in enumerate(v):
                a[i] += x
        u = self._usage(agg)
        if u > cg.peak:
            cg.peak = u
        u += sum(agg["swap"])
        if u > cg.memsw_peak:
            cg.memsw_peak = u
        self._mark(cg.path, "mem")

    def _add_cpu(self, cg, usec, user_frac, cpus):
        if "unified" not in cg.trees and "cpu,cpuacct" not in cg.trees:
            raise ValueError("%s is in no tree with CPU accounting" % cg.path)
        if usec < 0 or not 0.0 <= user_frac <= 1.0:
            raise ValueError("usec must be >= 0 and 0 <= user_frac <= 1")
        ns = int(round(usec * 1000))
        u = int(round(ns * user_frac))
        w = _weights(cpus, self.nr_cpus)
        du = _split(u, w)
        ds = _split(ns - u, w)
        for p in self._ancestors(cg.path, True):
            c = self._cgs[p]
            for i in range(self.nr_cpus):
                c.cpu_user[i] += du[i]
                c.cpu_sys[i] += ds[i]
            self._mark(p, "cpu")

    def _set_procs(self, cg, pids):
        pids = [int(x) for x in pids]
        if any(x <= 0 for x in pids):
            raise ValueError("PIDs must be positive")
        cg.procs = pids
        if pids and max(pids) >= self._next_pid:
            self._next_pid = max(pids) + 1
        self._mark(cg.path, "procs")
        for p in self._ancestors(cg.path, True):
            self._mark(p, "pids", "events")

    # =======================================================================
    # internals: files

    def _reserved(self):
        # memory the kernel uses outside any cgroup (memmap, ...): 1.5% of RAM
        return (self.mem_total * 15 // 1000) // PAGE_SIZE * PAGE_SIZE

    def _flush(self, force=False):
        if self._batch and not force:
            return
        changed = bool(self._dirty or self._pending or self._meminfo_dirty or self._unsaved)
        # The kernel charges a parent's counter with its child's, so no reader
        # sees children above their parent. Written one file at a time, the
        # tree keeps that: cgroups whose memory shrinks (or stays) are written
        # children first, then those whose memory grows parents first, then
        # new cgroups appear (their parents already hold their charge).
        pending = set(self._pending)
        dirty, self._dirty = self._dirty, {}
        grow, rest = [], []
        for path in dirty:
            cg = self._cgs.get(path)
            if cg is None:
                continue
            usage = self._usage(cg.agg)
            (grow if usage > self._written_usage.get(path, 0) else rest).append(path)
            self._written_usage[path] = usage
        for path in self._pending_paths():
            cg = self._cgs.get(path)
            if cg is not None:
                self._written_usage[path] = self._usage(cg.agg)

        def write(path):
            cg = self._cgs[path]
            for t in cg.trees:
                if (path, t) not in pending:
                    self._write_files(self._dir(t, path), self._render(cg, t, dirty[path]), (path, t))

        for path in sorted(rest, key=_depth, reverse=True):
            write(path)
        for path in sorted(grow, key=_depth):
            write(path)
        self._materialize_pending()
        if self._meminfo_dirty:
            self._write_meminfo()
        if self.autosave and changed:
            self.save()

    def _pending_paths(self):
        return {p for (p, _) in self._pending}

    def _materialize_pending(self):
        """Create the directories of new cgroups (parents first), complete."""
        done = set()
        if not self._pending:
            return done
        pending, self._pending = self._pending, {}
        for (path, t) in sorted(pending, key=lambda k: _depth(k[0])):
            cg = self._cgs.get(path)
            if cg is None or t not in cg.trees:
                continue
            old_dir, avoid = pending[(path, t)]
            self._materialize(cg, t, old_dir, avoid)
            done.add((path, t))
        return done

    def _write_files(self, d, items, fault_key, fresh=False):
        """Write files into directory d: atomically (temp file + rename) unless
        write_mode is "inplace" or d is a fresh directory nobody sees yet. Small
        contents seen before are hard links to one pooled copy (creating inodes
        is what costs on ext4), which is safe because files are only ever
        replaced, never modified in place (faults break the link first)."""
        atomic = self.write_mode == "replace" and not fresh
        faults = self._faults
        for name, content in items:
            if fault_key is not None and faults and (fault_key[0], fault_key[1], name) in faults:
                continue
            p = os.path.join(d, name)
            data = content.encode()
            target = os.path.join(d, "." + name + self._tmp_suffix) if atomic else p
            if self._pool_ok and len(data) <= 256:
                if data in self._seen:
                    if self._link_pooled(data, target):
                        if atomic:
                            os.replace(target, p)
                            # rename() between two links of one inode (content
                            # unchanged) does nothing: drop the temporary name
                            with contextlib.suppress(FileNotFoundError):
                                os.unlink(target)
                        continue
                else:
                    if len(self._seen) > 100000:
                        self._seen.clear()
                    self._seen[data] = True
            if atomic or fresh:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)
                if atomic:
                    os.replace(target, p)
                continue
            # in place: the same inode, so a reader holding the file open sees the
            # new content; one pwrite then ftruncate keeps the torn window short
            # (a reader in between may see the new content plus an old tail)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                if os.fstat(fd).st_nlink > 1:  # a pooled copy from a "replace" run: ours only
                    os.close(fd)
                    fd = -1
                    tmp = os.path.join(d, "." + name + self._tmp_suffix)
                    with open(tmp, "wb") as f:
                        f.write(data)
                    os.replace(tmp, p)
                    continue
                os.pwrite(fd, data, 0)
                os.ftruncate(fd, len(data))
            finally:
                if fd >= 0:
                    os.close(fd)

    def _link_pooled(self, data, target):
        src = os.path.join(self._pool_dir, hashlib.sha1(data).hexdigest())
        for _ in range(3):
            try:
                os.link(src, target)
                return True
            except FileNotFoundError:
                if not os.path.isdir(self._pool_dir):
                    os.makedirs(self._pool_dir, exist_ok=True)
                tmp = src + self._tmp_suffix
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, src)
            except FileExistsError:
                os.unlink(target)
            except OSError as e:
                if e.errno == errno.EMLINK:  # too many links: start a new copy
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(src)
                    continue
                self._pool_ok = False  # e.g. EXDEV, EPERM: plain files from now on
                return False
        return False

    def _materialize(self, cg, tree, old_dir=None, avoid_ino=None):
        """Create the directory of cg in tree with all its files. old_dir: the
        previous directory at that path (recreate), removed right before."""
        target = self._dir(tree, cg.path)
        items = self._render(cg, tree, ALL_CATS)
        used = self._ino_history.setdefault((cg.path, tree), set())
        if avoid_ino is not None:
            used.add(avoid_ino)
        if self.atomic_mkdir:
            tmp = None
            try:
                if not self._staging_ok:
                    os.makedirs(self._staging, exist_ok=True)
                    self._staging_ok = True
                tmp = self._fresh_dir(lambda: os.path.join(self._staging, "new-%d-%d" % (
                    os.getpid(), self._next_seq())), used)
                self._write_files(tmp, items, None, fresh=True)
                if old_dir:
                    shutil.rmtree(old_dir, ignore_errors=True)
                os.rename(tmp, target)
                used.add(os.stat(target).st_ino)
                return
            except OSError as e:
                if e.errno not in (errno.EXDEV, errno.EACCES, errno.EPERM, errno.EROFS):
                    raise
                self.atomic_mkdir = False  # no staging beside ROOT here
                if tmp:
                    shutil.rmtree(tmp, ignore_errors=True)
        if old_dir:
            shutil.rmtree(old_dir, ignore_errors=True)
        self._fresh_dir(lambda: target, used, aside=os.path.join(os.path.dirname(target), ".fakecg-aside-%d-%%d"
                                                                 % os.getpid()))
        used.add(os.stat(target).st_ino)
        self._write_files(target, items, None, fresh=True)

    def _next_seq(self):
        self._staging_seq += 1
        return self._staging_seq

    def _fresh_dir(self, name, used, aside=None):
        """mkdir a directory whose inode number was never used at this cgroup path
        before (as cgroupfs, whose inode numbers are never reused): a reader that
        tells cgroups apart by inode must see every recreation. File systems such
        as ext4 hand freed inode numbers out again; such a directory is kept aside
        (holding that number) while another is made."""
        held = []
        try:
            for _ in range(64):
                d = name()
                os.mkdir(d, 0o755)
                if os.stat(d).st_ino not in used:
                    return d
                if aside is None:
                    held.append(d)
                else:
                    h = aside % self._next_seq()
                    os.rename(d, h)
                    held.append(h)
            raise OSError(errno.EAGAIN, "no fresh inode number after 64 tries", d)
        finally:
            for h in held:
                with contextlib.suppress(OSError):
                    os.rmdir(h)

    def _fault_targets(self, path, filename, tree):
        cg = self._get(path)
        self._materialize_pending()
        if "/" in filename or filename in ("", ".", ".."):
            raise ValueError("bad file name %r" % filename)
        trees = [self._norm_tree(tree)] if tree is not None else cg.trees
        out = []
        for t in trees:
            if t not in cg.trees:
                raise ValueError("%s is not in tree %s" % (cg.path, t))
            p = os.path.join(self._dir(t, cg.path), filename)
            if os.path.lexists(p) or (cg.path, t, filename) in self._faults:
                out.append((t, p))
        if not out:
            raise FileNotFoundError(errno.ENOENT, "no such file in the cgroup", filename)
        return out

    @staticmethod
    def _clear_path(p):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(p)
        else:
            os.unlink(p)

    @staticmethod
    def _mid_line_cut(data):
        if not data:
            raise ValueError("the file is empty: nothing to cut")
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        m = (len(lines) - 1) // 2
        start = sum(len(x) + 1 for x in lines[:m])
        ln = len(lines[m])
        return start + (ln // 2 if ln >= 2 else ln)

    # -- rendering ----------------------------------------------------------

    def _render(self, cg, tree, cats):
        out = []
        root = cg.path == "/"
        if tree == "unified":
            full = self.mode == "v2"
            if "procs" in cats:
                pids = "".join("%d\n" % p for p in cg.procs)
                out.append(("cgroup.procs", pids))
                out.append(("cgroup.threads", pids))
            if "pids" in cats and full and not root:
                out.append(("pids.current", "%d\n" % self._nr_tasks(cg)))
            if "events" in cats and not root:
                out.append(("cgroup.events", "populated %d\nfrozen %d\n" % (self._populated(cg), cg.frozen)))
            if "stat" in cats:
                out.append(("cgroup.stat", self._render_cgroup_stat(cg)))
                has_children = any("unified" in self._cgs[c].trees for c in self._children[cg.path])
                if full:
                    ctl = V2_ROOT_CONTROLLERS if root else V2_SUBTREE_CONTROL
                    sub = V2_SUBTREE_CONTROL if (root or has_children) else ""
                else:
                    ctl = sub = ""
                out.append(("cgroup.controllers", ctl + "\n" if ctl else ""))
                out.append(("cgroup.subtree_control", sub + "\n" if sub else ""))
            if "static" in cats and not root:
                out.append(("cgroup.type", "domain\n"))
                out.append(("cgroup.freeze", "0\n"))
                if full:
                    out.append(("pids.max", "max\n"))
            if "io" in cats and full:
                out.append(("io.stat", "".join("%s %s\n" % (dev, " ".join("%s=%d" % (k, cg.io[dev][k])
                                                                          for k in IO_STAT_KEYS))
                                               for dev in sorted(cg.io))))
            if "cpu" in cats:
                user, sys_ = sum(cg.cpu_user), sum(cg.cpu_sys)
                pairs = [("usage_usec", (user + sys_) // 1000), ("user_usec", user // 1000),
                         ("system_usec", sys_ // 1000), ("nice_usec", 0)]
                if full:
                    pairs += [("nr_periods", cg.nr_periods), ("nr_throttled", cg.nr_throttled),
                              ("throttled_usec", cg.throttled_ns // 1000), ("nr_bursts", cg.nr_bursts),
                              ("burst_usec", cg.burst_ns // 1000)]
                out.append(("cpu.stat", _fmt_kv(pairs)))
            if "cpulim" in cats and full and not root:
                q = "max" if cg.cpu_quota is None else "%d" % cg.cpu_quota
                out.append(("cpu.max", "%s %d\n" % (q, cg.cpu_period)))
                out.append(("cpu.weight", "%d\n" % cg.cpu_weight))
            if "mem" in cats and full:
                out.append(("memory.stat", self._render_v2_memory_stat(cg.agg)))
                out.append(("memory.numa_stat", self._render_v2_numa_stat(cg.agg)))
                if not root:
                    out.append(("memory.current", "%d\n" % self._usage(cg.agg)))
                    out.append(("memory.peak", "%d\n" % cg.peak))
                    out.append(("memory.swap.current", "%d\n" % sum(cg.agg["swap"])))
                    out.append(("memory.events", _fmt_kv((k, cg.mem_events[k]) for k in V2_MEMORY_EVENTS_KEYS)))
            if "memlim" in cats and full and not root:
                out.append(("memory.max", _fmt_limit_v2(cg.mem_max)))
                out.append(("memory.high", _fmt_limit_v2(cg.mem_high)))
                out.append(("memory.low", "%d\n" % cg.mem_low))
                out.append(("memory.min", "%d\n" % cg.mem_min))
                out.append(("memory.swap.max", _fmt_limit_v2(cg.swap_max)))
            if "psi" in cats:
                for r in PSI_RESOURCES:
                    v = cg.psi[r]
                    out.append((r + ".pressure", _fmt_psi_line("some", v["some"]) + _fmt_psi_line("full", v["full"])))
        elif tree == "memory":
            if "procs" in cats:
                pids = "".join("%d\n" % p for p in cg.procs)
                out.append(("cgroup.procs", pids))
                out.append(("tasks", pids))
            if "static" in cats:
                out.append(("memory.use_hierarchy", "1\n"))
                out.append(("notify_on_release", "0\n"))
                out.append(("memory.failcnt", "0\n"))
            if "mem" in cats:
                a = cg.agg
                u = self._usage(a)
                out.append(("memory.usage_in_bytes", "%d\n" % u))
                out.append(("memory.max_usage_in_bytes", "%d\n" % cg.peak))
                out.append(("memory.memsw.usage_in_bytes", "%d\n" % (u + sum(a["swap"]))))
                out.append(("memory.stat", self._render_v1_memory_stat(cg)))
                out.append(("memory.numa_stat", self._render_v1_numa_stat(cg)))
            if "memlim" in cats:
                lim = V1_UNLIMITED if cg.mem_max is None else cg.mem_max
                out.append(("memory.limit_in_bytes", "%d\n" % lim))
                msw = V1_UNLIMITED
                if cg.mem_max is not None and cg.swap_max is not None:
                    msw = cg.mem_max + cg.swap_max
                out.append(("memory.memsw.limit_in_bytes", "%d\n" % msw))
                out.append(("memory.soft_limit_in_bytes", "%d\n" % V1_UNLIMITED))
        elif tree == "cpu,cpuacct":
            if "procs" in cats:
                pids = "".join("%d\n" % p for p in cg.procs)
                out.append(("cgroup.procs", pids))
                out.append(("tasks", pids))
            if "static" in cats:
                out.append(("notify_on_release", "0\n"))
            if "cpu" in cats:
                per = [u + s for u, s in zip(cg.cpu_user, cg.cpu_sys)]
                user, sys_ = sum(cg.cpu_user), sum(cg.cpu_sys)
                out.append(("cpuacct.usage", "%d\n" % (user + sys_)))
                out.append(("cpuacct.usage_percpu", "".join("%d " % x for x in per) + "\n"))
                out.append(("cpuacct.usage_all", "cpu user system\n" + "".join(
                    "%d %d %d\n" % (i, cg.cpu_user[i], cg.cpu_sys[i]) for i in range(self.nr_cpus))))
                out.append(("cpuacct.stat", "user %d\nsystem %d\n" % (user * USER_HZ // 1000000000,
                                                                       sys_ * USER_HZ // 1000000000)))
                out.append(("cpu.stat", _fmt_kv((
                    ("nr_periods", cg.nr_periods), ("nr_throttled", cg.nr_throttled),
                    ("throttled_time", cg.throttled_ns), ("nr_bursts", cg.nr_bursts),
                    ("burst_time", cg.burst_ns)))))
            if "cpulim" in cats:
                out.append(("cpu.shares", "%d\n" % cg.cpu_shares))
                out.append(("cpu.cfs_quota_us", "%d\n" % (-1 if cg.cpu_quota is None else cg.cpu_quota)))
                out.append(("cpu.cfs_period_us", "%d\n" % cg.cpu_period))
        return out

    def _render_cgroup_stat(self, cg):
        nd = self._nr_desc(cg, "unified")
        root = cg.path == "/"
        if self.mode == "v2":
            subsys = V2_CGSTAT_SUBSYS
            live = {s: (nd + 1 if s in V2_CGSTAT_ENABLED else (1 if root else 0)) for s in subsys}
        else:
            subsys = HYBRID_CGSTAT_SUBSYS
            live = {"perf_event": nd + 1, "hugetlb": 1 if root else 0}
        lines = ["nr_descendants %d\n" % nd]
        lines += ["nr_subsys_%s %d\n" % (s, live[s]) for s in subsys]
        lines.append("nr_dying_descendants 0\n")
        lines += ["nr_dying_subsys_%s 0\n" % s for s in subsys]
        return "".join(lines)

    def _render_v2_memory_stat(self, a):
        s = {k: sum(v) for k, v in a.items()}
        s["kernel"] = sum(s[k] for k in KERNEL_KEYS)
        s["slab"] = s["slab_reclaimable"] + s["slab_unreclaimable"]
        s["pgscan"] = s["pgscan_kswapd"] + s["pgscan_direct"] + s["pgscan_khugepaged"] + s["pgscan_proactive"]
        s["pgsteal"] = (s["pgsteal_kswapd"] + s["pgsteal_direct"] + s["pgsteal_khugepaged"]
                        + s["pgsteal_proactive"])
        return "".join("%s %d\n" % (k, s[k]) for k in V2_MEMORY_STAT_KEYS)

    def _render_v2_numa_stat(self, a):
        return "".join(k + "".join(" N%d=%d" % (i, x) for i, x in enumerate(a[k])) + "\n"
                       for k in V2_NUMA_STAT_KEYS)

    def _render_v1_memory_stat(self, cg):
        own, agg = cg.own, cg.agg
        lines = ["%s %d\n" % (k, sum(own[m])) for k, m in V1_MEMORY_STAT_LOCAL]
        lim = self._hier_limit(cg)
        msw = self._hier_memsw_limit(cg)
        lines.append("hierarchical_memory_limit %d\n" % (V1_UNLIMITED if lim is None else lim))
        lines.append("hierarchical_memsw_limit %d\n" % (V1_UNLIMITED if msw is None else msw))
        lines += ["total_%s %d\n" % (k, sum(agg[m])) for k, m in V1_MEMORY_STAT_LOCAL]
        return "".join(lines)

    def _render_v1_numa_stat(self, cg):
        out = []
        for prefix, vec in (("", cg.own), ("hierarchical_", cg.agg)):
            n = self.nr_nodes
            f = [(vec["active_file"][i] + vec["inactive_file"][i]) // PAGE_SIZE for i in range(n)]
            an = [(vec["active_anon"][i] + vec["inactive_anon"][i]) // PAGE_SIZE for i in range(n)]
            un = [vec["unevictable"][i] // PAGE_SIZE for i in range(n)]
            tot = [f[i] + an[i] + un[i] for i in range(n)]
            for key, v in (("total", tot), ("file", f), ("anon", an), ("unevictable", un)):
                out.append("%s%s=%d%s\n" % (prefix, key, sum(v), "".join(" N%d=%d" % (i, x) for i, x in enumerate(v))))
        return "".join(out)

    def _meminfo_items(self):
        a = self._cgs["/"].agg
        s = {k: sum(v) for k, v in a.items()}
        usage = self._usage(a)
        total = self.mem_total
        buffers = min(s["file"] // 20, 64 << 20) // PAGE_SIZE * PAGE_SIZE
        free = max(0, total - usage - self._reserved())
        slab = s["slab_reclaimable"] + s["slab_unreclaimable"]
        avail = min(total, free + (s["file"] - s["shmem"]) + s["slab_reclaimable"] // 2)
        swap_used = s["swap"]
        swap_total = max(self.swap_total, swap_used)
        direct_4k = min(total, 256 << 20)
        direct_1g = ((total - direct_4k - (1 << 30)) >> 30) << 30 if total > (2 << 30) else 0
        direct_2m = total - direct_4k - direct_1g
        kb = 1024
        items = [
            ("MemTotal", total), ("MemFree", free), ("MemAvailable", avail), ("Buffers", buffers),
            ("Cached", s["file"] - buffers - s["swapcached"]), ("SwapCached", s["swapcached"]),
            ("Active", s["active_anon"] + s["active_file"]), ("Inactive", s["inactive_anon"] + s["inactive_file"]),
            ("Active(anon)", s["active_anon"]), ("Inactive(anon)", s["inactive_anon"]),
            ("Active(file)", s["active_file"]), ("Inactive(file)", s["inactive_file"]),
            ("Unevictable", s["unevictable"]), ("Mlocked", 0), ("SwapTotal", swap_total),
            ("SwapFree", swap_total - swap_used), ("Zswap", s["zswap"]), ("Zswapped", s["zswapped"]),
            ("Dirty", s["file_dirty"]), ("Writeback", s["file_writeback"]), ("AnonPages", s["anon"]),
            ("Mapped", s["file_mapped"]), ("Shmem", s["shmem"]), ("KReclaimable", s["slab_reclaimable"]),
            ("Slab", slab), ("SReclaimable", s["slab_reclaimable"]), ("SUnreclaim", s["slab_unreclaimable"]),
            ("KernelStack", s["kernel_stack"]), ("PageTables", s["pagetables"]),
            ("SecPageTables", s["sec_pagetables"]), ("NFS_Unstable", 0), ("Bounce", 0), ("WritebackTmp", 0),
            ("CommitLimit", total // 2 + swap_total), ("Committed_AS", s["anon"] * 2 + s["shmem"]),
            ("VmallocTotal", 34359738367 * kb), ("VmallocUsed", s["vmalloc"]), ("VmallocChunk", 0),
            ("Percpu", s["percpu"]), ("HardwareCorrupted", 0), ("AnonHugePages", s["anon_thp"]),
            ("ShmemHugePages", s["shmem_thp"]), ("ShmemPmdMapped", 0), ("FileHugePages", s["file_thp"]),
            ("FilePmdMapped", 0), ("HugePages_Total", None), ("HugePages_Free", None), ("HugePages_Rsvd", None),
            ("HugePages_Surp", None), ("Hugepagesize", 2048 * kb), ("Hugetlb", 0),
            ("DirectMap4k", direct_4k), ("DirectMap2M", direct_2m), ("DirectMap1G", direct_1g),
        ]
        return [(k, 0 if v is None else v) for k, v in items]

    def _write_meminfo(self):
        lines = []
        for k, v in self._meminfo_items():
            if k.startswith("HugePages_"):
                lines.append("%-16s%8d\n" % (k + ":", v))
            elif k == "HardwareCorrupted":
                lines.append("HardwareCorrupted: %5d kB\n" % (v // 1024))
            else:
                lines.append("%-16s%8d kB\n" % (k + ":", v // 1024))
        data = "".join(lines).encode()
        tmp = self.meminfo_path + self._tmp_suffix
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, self.meminfo_path)
        self._meminfo_dirty = False


# ---------------------------------------------------------------------------
# realistic trees (CLI build / churn)

_SERVICES = (
    "sshd", "cron", "dbus", "systemd-journald", "systemd-logind", "systemd-udevd", "systemd-networkd",
    "systemd-resolved", "systemd-timesyncd", "rsyslog", "nginx", "postgresql@15-main", "redis-server",
    "docker", "containerd", "chrony", "polkit", "acctd", "unattended-upgrades", "prometheus-node-exporter",
    "haproxy", "memcached", "mariadb", "php8.2-fpm", "exim4", "atd", "smartmontools", "irqbalance",
    "qemu-guest-agent", "libvirtd", "virtlogd", "ModemManager", "NetworkManager", "avahi-daemon", "cups",
    "bluetooth", "accounts-daemon", "udisks2", "upower", "rtkit-daemon",
)
_WORDS = ("web", "api", "batch", "worker", "cache", "db", "ingest", "search", "mail", "build", "backup",
          "metrics", "queue", "auth", "proxy", "media", "report", "sync", "index", "gateway")
_USER_APPS = ("dbus.service", "pipewire.service", "pipewire-pulse.service", "wireplumber.service",
              "gnome-terminal-server.service", "xdg-desktop-portal.service", "gpg-agent.service")


def _kind(name):
    if name.endswith(".slice"):
        return "slice"
    if name.endswith(".service"):
        return "service"
    if name.endswith(".scope"):
        return "scope"
    return "dir"


def _child_name(rng, parent, taken):
    """A systemd-style child name under `parent` (a path), not in `taken`."""
    pname = parent.rsplit("/", 1)[1] if parent != "/" else ""
    cands = []
    if parent == "/":
        cands = ["system.slice", "user.slice", "machine.slice", "init.scope"]
        extra = "%s.slice" % rng.choice(_WORDS)
    elif pname == "system.slice":
        cands = [s + ".service" for s in _SERVICES]
        r = rng.random()
        if r < 0.1:
            extra = rng.choice(("system-getty.slice", "system-modprobe.slice", "system-serial\\x2dgetty.slice",
                                "system-systemd\\x2dfsck.slice", "system-postgresql.slice"))
        else:
            extra = "%s-%s.service" % (rng.choice(_WORDS), rng.choice(_WORDS))
    elif pname.startswith("system-") and pname.endswith(".slice"):
        base = pname[len("system-"):-len(".slice")]
        extra = "%s@%s.service" % (base, rng.choice(("tty1", "tty2", "ttyS0", "loop", "drm", "fuse", "main",
                                                    "dev-vda1", "14-main", "15-main")))
    elif pname == "user.slice":
        extra = "user-%d.slice" % (0 if rng.random() < 0.05 else rng.randint(1000, 65000))
    elif pname.startswith("user-") and pname.endswith(".slice"):
        uid = pname[len("user-"):-len(".slice")]
        cands = ["user@%s.service" % uid]
        extra = "session-%d.scope" % rng.randint(1, 400)
    elif pname.startswith("user@") and pname.endswith(".service"):
        cands = ["init.scope", "app.slice", "session.slice", "background.slice"]
        extra = "%s.slice" % rng.choice(_WORDS)
    elif pname in ("app.slice", "session.slice", "background.slice"):
        cands = list(_USER_APPS)
        extra = "app-%s-%d.scope" % (rng.choice(("gnome-firefox", "gnome-code", "tmux", "kitty", "chromium")),
                                     rng.randint(1000, 99999))
    elif pname == "machine.slice":
        r = rng.random()
        if r < 0.4:
            extra = "machine-qemu\\x2d%d\\x2d%s.scope" % (rng.randint(1, 99), rng.choice(_WORDS))
        elif r < 0.8:
            extra = "docker-%064x.scope" % rng.getrandbits(256)
        else:
            extra = "libpod-%064x.scope" % rng.getrandbits(256)
    elif pname.startswith("machine-qemu"):
        cands = ["libvirt", "emulator"] + ["vcpu%d" % i for i in range(8)]
        extra = "vcpu%d" % rng.randint(8, 63)
    elif _kind(pname) == "slice":
        extra = rng.choice(("%s-%d.service", "%s-%d.scope", "%s-%d.slice")) % (rng.choice(_WORDS),
                                                                             rng.randint(1, 999))
    elif _kind(pname) in ("service", "scope"):
        cands = ["payload", "supervisor"]
        extra = "%s-%d" % (rng.choice(("worker", "payload", "task")), rng.randint(0, 999))
    else:
        extra = "sub-%d" % rng.randint(0, 9999)
    for c in cands:
        if c not in taken:
            return c
    name = extra
    i = 1
    while name in taken:
        i += 1
        base, dot, ext = extra.rpartition(".")
        name = "%s-%d.%s" % (base, i, ext) if dot and ext in ("slice", "service", "scope") else "%s-%d" % (extra, i)
    return name


def _is_container(path):
    """Whether a generated cgroup usually gets children."""
    name = path.rsplit("/", 1)[1] if path != "/" else ""
    k = _kind(name)
    if path == "/" or k == "slice":
        return 4.0
    if name.startswith("user@") or name.startswith("machine-qemu") or name.startswith("docker-") \
            or name.startswith("libpod-"):
        return 2.0
    if k == "service":
        return 0.15
    if k == "scope":
        return 0.05
    return 0.02


def _lognormal_bytes(rng, median, sigma, lo, hi):
    v = int(median * math.exp(rng.gauss(0.0, sigma)))
    return max(lo, min(hi, v)) // PAGE_SIZE * PAGE_SIZE


def _random_values(rng, fs, path, leaf):
    """mkdir keyword arguments with realistic values for a generated cgroup."""
    args = {}
    if leaf or rng.random() < 0.15:
        mem = _lognormal_bytes(rng, (24 << 20) if leaf else (2 << 20), 1.3, 64 << 10, 2 << 30)
        args["memory"] = mem
        args["cpu_usec"] = int(_lognormal_bytes(rng, 30 * 4096, 1.5, 4096, 40000 * 4096) // 4096 * 1000
                               + rng.randint(0, 999))
        args["user_frac"] = round(rng.uniform(0.4, 0.95), 3)
    if fs.nr_nodes > 1:
        w = [rng.random() for _ in range(fs.nr_nodes)]
        w[rng.randrange(fs.nr_nodes)] += 2.0  # a preferred node
        args["nodes"] = w
    if leaf and rng.random() < 0.9:
        args["procs"] = fs.alloc_pids(rng.randint(1, 6))
    if rng.random() < 0.1 and "memory" in args:
        args["memory_max"] = (args["memory"] * rng.choice((2, 4, 8)) + (1 << 20)) // PAGE_SIZE * PAGE_SIZE
    return args


def _random_pressure(rng, fs, path):
    if rng.random() < 0.6:
        return
    for r in PSI_RESOURCES:
        hi = {"cpu": 20.0, "memory": 5.0, "io": 10.0}[r]
        a10 = round(rng.uniform(0, hi) * rng.random(), 2)
        fs.set_pressure(path, r, some_avg10=a10, some_avg60=round(a10 * 0.7, 2), some_avg300=round(a10 * 0.4, 2),
                        some_total_us=rng.randint(0, 10 ** 9),
                        full_avg10=round(a10 * 0.3, 2), full_avg60=round(a10 * 0.2, 2),
                        full_avg300=round(a10 * 0.1, 2), full_total_us=rng.randint(0, 10 ** 8))


def _plan_tree(rng, count, depth):
    """A list of count cgroup paths (parents first) spread over depths 1..depth."""
    depth = max(1, depth)
    paths = ["/"]
    children = {"/": set()}
    by_depth = {0: ["/"]}
    weight = {"/": 1.0}
    top_bias = {"system.slice": 12.0, "user.slice": 3.0, "machine.slice": 4.0, "init.scope": 0.0}
    while len(paths) - 1 < count:
        avail = [d for d in range(1, depth + 1) if by_depth.get(d - 1) and any(weight[p] for p in by_depth[d - 1])]
        if len(avail) > 1 and len(children["/"]) >= 4 and rng.random() < 0.995:
            avail = avail[1:]  # a handful of top-level slices, like real hosts
        d = rng.choice(avail)
        parents = by_depth[d - 1]
        parent = rng.choices(parents, [weight[p] for p in parents])[0]
        name = _child_name(rng, parent, children[parent])
        path = (parent if parent != "/" else "") + "/" + name
        children[parent].add(name)
        children[path] = set()
        weight[path] = top_bias.get(name, _is_container(path)) if parent == "/" else _is_container(path)
        paths.append(path)
        by_depth.setdefault(d, []).append(path)
    return paths[1:], children


def build(root, mode="v2", count=100, depth=4, nr_cpus=2, nr_nodes=1, seed=1, **fs_args):
    """Build a realistic tree of `count` cgroups under root; returns the FakeCgroupFS."""
    rng = random.Random(seed)
    plan, children = _plan_tree(rng, count, depth)
    # size the host first: MemTotal must hold everything
    vals_rng = random.Random(seed * 7919 + 1)
    est = (512 << 20) + sum(64 << 20 for p in plan if not children[p])  # leaves average ~56 MiB
    mem_total = max(16 << 30, -(-(est * 8 // 5) // (1 << 30)) << 30)
    fs = FakeCgroupFS(root, mode=mode, nr_cpus=nr_cpus, nr_nodes=nr_nodes, mem_total=mem_total, **fs_args)
    with fs.batch():
        fs.set_memory("/", 192 << 20)
        fs.add_cpu("/", 3600 * 1000000 // 7, user_frac=0.3)
        fs.set_procs("/", [2, 3, 4, 5, 6, 7, 9, 10])
        for p in plan:
            leaf = not children[p]
            args = _random_values(vals_rng, fs, p, leaf)
            if p == "/init.scope":
                args["procs"] = [1]
            try:
                fs.mkdir(p, **args)
            except ValueError:  # host full: create it empty
                args.pop("memory", None)
                fs.mkdir(p, **args)
            if "unified" in fs.trees:
                _random_pressure(vals_rng, fs, p)
    return fs


def _fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return "%.1f%s" % (n, unit) if unit != "B" else "%dB" % n
        n /= 1024.0


def churn(fs, seconds, rate, seed=None, stop=None):
    """Keep changing the tree for `seconds` at about `rate` operations per second.
    Returns a dict of operation counts."""
    rng = random.Random(seed if seed is not None else time.time_ns())
    start = time.monotonic()
    deadline = start + seconds
    counts = {}
    initial = len(fs.paths())
    tick = 0.1
    done = 0
    while time.monotonic() < deadline and not (stop and stop()):
        now = time.monotonic()
        target = int((now - start) * rate) + 1
        with fs.batch():
            while done < target:
                op = _churn_op(rng, fs, initial)
                counts[op] = counts.get(op, 0) + 1
                done += 1
        sleep = min(tick, deadline - time.monotonic(), max(0.0, (done + 1) / rate - (time.monotonic() - start)))
        if sleep > 0:
            time.sleep(sleep)
    fs.save()
    return counts


def _churn_op(rng, fs, initial):
    paths = fs.paths()
    nonroot = paths[1:]
    r = rng.random()
    if not nonroot:
        r = 0.9
    try:
        if r < 0.40:
            p = rng.choice(paths)
            if "unified" in fs.trees_of(p) or "cpu,cpuacct" in fs.trees_of(p):
                fs.add_cpu(p, rng.randint(100, 2000000), user_frac=rng.uniform(0.3, 0.95))
            return "add_cpu"
        if r < 0.65:
            p = rng.choice(paths)
            if fs.mem_tree in fs.trees_of(p):
                cur = fs._usage(fs._get(p).own)
                new = max(0, int(cur * rng.uniform(0.7, 1.4)) + rng.randint(-(1 << 20), 4 << 20))
                fs.set_memory(p, new)
            return "set_memory"
        if r < 0.75:
            p = rng.choice(paths)
            if "unified" in fs.trees_of(p):
                _random_pressure(rng, fs, p)
            return "set_pressure"
        if r < 0.80:
            p = rng.choice(nonroot)
            fs.set_procs(p, fs.alloc_pids(rng.randint(0, 4)))
            return "set_procs"
        grow = len(paths) < initial * 1.1
        if r < 0.90 and (grow or rng.random() < 0.5):
            parents = [p for p in paths if _is_container(p) >= 1.0] or ["/"]
            parent = rng.choice(parents)
            name = _child_name(rng, parent, {c.rsplit("/", 1)[1] for c in fs.children(parent)})
            path = (parent if parent != "/" else "") + "/" + name
            fs.mkdir(path, **_random_values(rng, fs, path, True))
            return "mkdir"
        victims = [p for p in nonroot if _depth(p) >= 2]
        if not victims:
            return "noop"
        p = rng.choice(victims)
        if r < 0.97:
            fs.rmdir(p)
            return "rmdir"
        fs.recreate(p)
        return "recreate"
    except ValueError:
        return "refused"


# ---------------------------------------------------------------------------
# CLI

def _cmd_build(a):
    if a.force and os.path.lexists(a.root):
        shutil.rmtree(a.root)
    t0 = time.monotonic()
    fs = build(a.root, mode=a.mode, count=a.count, depth=a.depth, nr_cpus=a.cpus, nr_nodes=a.nodes, seed=a.seed,
               write_mode=a.write_mode)
    fs.close()
    dt = time.monotonic() - t0
    paths = fs.paths()
    maxd = max(_depth(p) for p in paths)
    root_e = fs.expected("/")
    print("fakecg: built mode=%s root=%s cgroups=%d (+root) max_depth=%d cpus=%d nodes=%d memory=%s/%s seed=%d "
          "in %.2fs" % (fs.mode, fs.root, len(paths) - 1, maxd, fs.nr_cpus, fs.nr_nodes,
                        _fmt_bytes(root_e["memory_bytes"]), _fmt_bytes(fs.mem_total), a.seed, dt))
    return 0


def _cmd_churn(a):
    fs = FakeCgroupFS.open(a.root)
    stopping = []

    def _stop(signum, frame):
        stopping.append(signum)

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        t0 = time.monotonic()
        counts = churn(fs, a.seconds, a.rate, seed=a.seed, stop=lambda: bool(stopping))
        dt = time.monotonic() - t0
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        fs.close()
    total = sum(counts.values())
    print("fakecg: churn root=%s ops=%d in %.1fs (%s) cgroups=%d" % (
        fs.root, total, dt, " ".join("%s=%d" % kv for kv in sorted(counts.items())), len(fs.paths()) - 1))
    return 0


def _cmd_expected(a):
    fs = FakeCgroupFS.open(a.root, autosave=False)
    if a.path is None:
        out = {p: fs.expected(p) for p in fs.paths()}
    else:
        out = fs.expected(a.path)
    json.dump(out, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def _cmd_paths(a):
    fs = FakeCgroupFS.open(a.root, autosave=False)
    for p in fs.paths():
        print(p)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="fakecg.py", description="fake cgroupfs generator for acctd tests")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build a tree of N cgroups")
    b.add_argument("--root", required=True)
    b.add_argument("--mode", choices=MODES, default="v2")
    b.add_argument("--count", type=int, default=100)
    b.add_argument("--depth", type=int, default=4)
    b.add_argument("--cpus", type=int, default=2)
    b.add_argument("--nodes", type=int, default=1)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--force", action="store_true", help="remove ROOT first")
    b.add_argument("--write-mode", choices=("replace", "inplace"), default="replace",
                   help="replace: atomic (temp file + rename, new inode); inplace: same inode, so "
                        "readers holding descriptors see updates (kept by churn)")
    b.set_defaults(fn=_cmd_build)
    c = sub.add_parser("churn", help="keep changing a built tree")
    c.add_argument("--root", required=True)
    c.add_argument("--seconds", type=float, default=10.0)
    c.add_argument("--rate", type=float, default=100.0, help="operations per second")
    c.add_argument("--seed", type=int, default=None)
    c.set_defaults(fn=_cmd_churn)
    e = sub.add_parser("expected", help="print the expected values (JSON)")
    e.add_argument("--root", required=True)
    e.add_argument("--path", default=None, help="one cgroup (default: all)")
    e.set_defaults(fn=_cmd_expected)
    p = sub.add_parser("paths", help="list the cgroups")
    p.add_argument("--root", required=True)
    p.set_defaults(fn=_cmd_paths)
    a = ap.parse_args(argv)
    if a.cmd == "churn" and a.rate <= 0:
        ap.error("--rate must be > 0")
    if a.cmd == "build" and (a.count < 0 or a.depth < 1 or a.cpus < 1 or a.nodes < 1):
        ap.error("--count >= 0, --depth/--cpus/--nodes >= 1")
    try:
        return a.fn(a)
    except BrokenPipeError:  # e.g. piped into head
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (OSError, ValueError) as ex:
        print("fakecg: %s" % ex, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
