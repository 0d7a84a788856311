"""Self-tests of tests/fakecg.py, the fake cgroupfs generator.
The file is long because it embeds real kernel files as references (see below).

The generated files are checked against real files from a Linux 6.18 hybrid host
(shared/kernel-samples/hybrid-6.18, embedded below for clones without ../shared)
with one small parser used on both, and the generator's expected() against what
a reader of the generated files computes.

Run: python3 -m pytest -q tests/integration/test_fakecg.py
"""
import errno
import json
import os
import random
import re
import stat
import subprocess
import sys
import threading
import time

import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

import fakecg as fcg  # noqa: E402

FAKECG = os.path.join(TESTS_DIR, "fakecg.py")
MODES = ("v2", "hybrid", "legacy")
PAGE = 4096

# ---------------------------------------------------------------------------
# real samples

# Copies of shared/kernel-samples/hybrid-6.18 (Linux 6.18, hybrid host, 2 CPUs, 1 node).
EMBEDDED_SAMPLES = {
    'proc--meminfo': (
        'MemTotal:       24683656 kB\n'
        'MemFree:        23937976 kB\n'
        'MemAvailable:   24070372 kB\n'
        'Buffers:           12432 kB\n'
        'Cached:           276116 kB\n'
        'SwapCached:            0 kB\n'
        'Active:           203024 kB\n'
        'Inactive:         188916 kB\n'
        'Active(anon):       5504 kB\n'
        'Inactive(anon):   106940 kB\n'
        'Active(file):     197520 kB\n'
        'Inactive(file):    81976 kB\n'
        'Unevictable:        8964 kB\n'
        'Mlocked:            7460 kB\n'
        'SwapTotal:             0 kB\n'
        'SwapFree:              0 kB\n'
        'Zswap:                 0 kB\n'
        'Zswapped:              0 kB\n'
        'Dirty:               296 kB\n'
        'Writeback:             0 kB\n'
        'AnonPages:        112468 kB\n'
        'Mapped:            10352 kB\n'
        'Shmem:              8952 kB\n'
        'KReclaimable:     127320 kB\n'
        'Slab:             214724 kB\n'
        'SReclaimable:     127320 kB\n'
        'SUnreclaim:        87404 kB\n'
        'KernelStack:       17236 kB\n'
        'PageTables:        50568 kB\n'
        'SecPageTables:         0 kB\n'
    ),
    'proc--pressure-memory': (
        'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
        'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
    ),
    'v1-cpuacct-root--cpuacct.stat': (
        'user 15824\n'
        'system 8752\n'
    ),
    'v1-cpuacct-root--cpuacct.usage': '245768883733\n',
    'v1-cpuacct-root--cpuacct.usage_all': (
        'cpu user system\n'
        '0 65847466108 35849282976\n'
        '1 89400440084 50015056741\n'
    ),
    'v1-cpuacct-root--cpuacct.usage_percpu': '104117828903 141651775472 \n',
    'v1-memory--memory.limit_in_bytes': '9223372036854771712\n',
    'v1-memory--memory.max_usage_in_bytes': '2261729280\n',
    'v1-memory--memory.memsw.usage_in_bytes': '438595584\n',
    'v1-memory--memory.numa_stat': (
        'total=0 N0=0\n'
        'file=0 N0=0\n'
        'anon=0 N0=0\n'
        'unevictable=0 N0=0\n'
        'hierarchical_total=70733 N0=70733\n'
        'hierarchical_file=69492 N0=69492\n'
        'hierarchical_anon=1241 N0=1241\n'
        'hierarchical_unevictable=0 N0=0\n'
    ),
    'v1-memory--memory.stat': (
        'cache 0\n'
        'rss 0\n'
        'rss_huge 0\n'
        'shmem 0\n'
        'mapped_file 0\n'
        'dirty 0\n'
        'writeback 0\n'
        'workingset_refault_anon 0\n'
        'workingset_refault_file 0\n'
        'swap 0\n'
        'swapcached 0\n'
        'pgpgin 0\n'
        'pgpgout 0\n'
        'pgfault 0\n'
        'pgmajfault 0\n'
        'inactive_anon 0\n'
        'active_anon 0\n'
        'inactive_file 0\n'
        'active_file 0\n'
        'unevictable 0\n'
        'hierarchical_memory_limit 9223372036854771712\n'
        'hierarchical_memsw_limit 9223372036854771712\n'
        'total_cache 284635136\n'
        'total_rss 5275648\n'
        'total_rss_huge 0\n'
        'total_shmem 0\n'
        'total_mapped_file 3457024\n'
        'total_dirty 221184\n'
        'total_writeback 0\n'
        'total_workingset_refault_anon 0\n'
        'total_workingset_refault_file 199397\n'
        'total_swap 0\n'
        'total_swapcached 0\n'
        'total_pgpgin 3425724\n'
        'total_pgpgout 3360587\n'
        'total_pgfault 4962173\n'
        'total_pgmajfault 1801\n'
        'total_inactive_anon 4960256\n'
        'total_active_anon 163840\n'
        'total_inactive_file 83599360\n'
        'total_active_file 201035776\n'
        'total_unevictable 0\n'
    ),
    'v1-memory--memory.usage_in_bytes': '438349824\n',
    'v2-unified--cgroup.controllers': '',
    'v2-unified--cgroup.events': (
        'populated 1\n'
        'frozen 0\n'
    ),
    'v2-unified--cgroup.procs': '18311\n',
    'v2-unified--cgroup.stat': (
        'nr_descendants 0\n'
        'nr_subsys_perf_event 1\n'
        'nr_subsys_hugetlb 0\n'
        'nr_dying_descendants 0\n'
        'nr_dying_subsys_perf_event 0\n'
        'nr_dying_subsys_hugetlb 0\n'
    ),
    'v2-unified--cpu.pressure': (
        'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
        'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
    ),
    'v2-unified--cpu.stat': (
        'usage_usec 0\n'
        'user_usec 0\n'
        'system_usec 0\n'
        'nice_usec 0\n'
    ),
    'v2-unified--io.pressure': (
        'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
        'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
    ),
    'v2-unified--memory.pressure': (
        'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
        'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
    ),
    'v2-unified-root--cpu.stat': (
        'usage_usec 241132229\n'
        'user_usec 155251906\n'
        'system_usec 85880323\n'
        'nice_usec 0\n'
    ),
}


def _find_sample_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.path.join(TESTS_DIR, "data", "kernel", "hybrid-6.18"),
              os.path.join(TESTS_DIR, "data", "kernel"),
              os.path.join(here, "..", "..", "..", "shared", "kernel-samples", "hybrid-6.18")):
        if os.path.isfile(os.path.join(d, "v1-memory--memory.stat")):
            return os.path.abspath(d)
    return None


SAMPLE_DIR = _find_sample_dir()


def sample(name):
    """A real sample file: from the sample directory when present, else embedded."""
    if SAMPLE_DIR:
        with open(os.path.join(SAMPLE_DIR, name)) as f:
            return f.read()
    return EMBEDDED_SAMPLES[name]


# ---------------------------------------------------------------------------
# the little parser, used on the samples and on the generated files alike

FLAT_RE = re.compile(r"^([a-z_][a-z0-9_.]*) (\d+)$")
PSI_RE = re.compile(r"^(some|full) avg10=(\d+\.\d\d) avg60=(\d+\.\d\d) avg300=(\d+\.\d\d) total=(\d+)$")
V1_NUMA_RE = re.compile(r"^([a-z_]+)=(\d+)((?: N\d+=\d+)+)$")
V2_NUMA_RE = re.compile(r"^([a-z_]+)((?: N\d+=\d+)+)$")
MEMINFO_RE = re.compile(r"^([A-Za-z0-9_()]+):( +)(\d+)( kB)?$")
PERCPU_RE = re.compile(r"^(?:\d+ )+$")
NUM_RE = re.compile(r"^\d+$")


def lines_of(text):
    """Complete lines; a non-empty file must end with a newline."""
    if text == "":
        return []
    assert text.endswith("\n"), "unterminated last line: %r" % text[-40:]
    return text[:-1].split("\n")


def parse_flat(text):
    out = []
    for line in lines_of(text):
        m = FLAT_RE.match(line)
        assert m, "not 'key value': %r" % line
        out.append((m.group(1), int(m.group(2))))
    return out


def flat(text):
    return dict(parse_flat(text))


def keys(text):
    return [k for k, _ in parse_flat(text)]


def parse_u64(text):
    ls = lines_of(text)
    assert len(ls) == 1 and NUM_RE.match(ls[0]), repr(text)
    return int(ls[0])


def parse_psi(text):
    out = {}
    for line in lines_of(text):
        m = PSI_RE.match(line)
        assert m, "bad PSI line %r" % line
        out[m.group(1)] = (float(m.group(2)), float(m.group(3)), float(m.group(4)), int(m.group(5)))
    return out


def parse_numa(text, v1):
    """key -> (total, [per node])"""
    out = {}
    for line in lines_of(text):
        m = (V1_NUMA_RE if v1 else V2_NUMA_RE).match(line)
        assert m, "bad numa_stat line %r" % line
        nodes_part = m.group(3) if v1 else m.group(2)
        per = [int(x.split("=")[1]) for x in nodes_part.split()]
        idx = [int(x.split("=")[0][1:]) for x in nodes_part.split()]
        assert idx == list(range(len(idx)))
        total = int(m.group(2)) if v1 else sum(per)
        if v1:
            assert total == sum(per), line
        out[m.group(1)] = (total, per)
    return out


def parse_meminfo(text):
    out = []
    for line in lines_of(text):
        m = MEMINFO_RE.match(line)
        assert m, "bad meminfo line %r" % line
        v = int(m.group(3))
        out.append((m.group(1), v * 1024 if m.group(4) else v))
    return out


def shape(line):
    """A line with every number replaced by N."""
    return re.sub(r"\d+", "N", line)


def shapes(text):
    return [shape(x) for x in lines_of(text)]


def detect_layout(root):
    """The layout rules of lib/cgroup/cgroup-layout.h (acct_cgroup_layout_detect)."""
    if os.path.isfile(os.path.join(root, "cgroup.controllers")):
        return "v2"
    ctl = any(os.path.isdir(os.path.join(root, d)) for d in ("memory", "cpuacct", "cpu,cpuacct"))
    if os.path.isfile(os.path.join(root, "unified", "cgroup.controllers")) and ctl:
        return "hybrid"
    if ctl:
        return "legacy"
    return None


def walk_cgroups(tree_root):
    """Every directory under a hierarchy root, as cgroup paths (what discovery sees)."""
    out = {"/"}
    for dirpath, dirnames, _ in os.walk(tree_root):
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if os.path.islink(full):
                continue
            out.add("/" + os.path.relpath(full, tree_root))
    return out


def read_like_a_daemon(fs, path):
    """Values computed from the files only, the way acctd reads them."""
    trees = fs.trees_of(path)
    out = {}
    if fs.mem_tree in trees:
        if fs.mode == "v2":
            st = flat(fs.read(path, "memory.stat"))
            total = st["anon"] + st["file"] + st["kernel"] + st["sock"]
            if path != "/":
                assert parse_u64(fs.read(path, "memory.current")) == total
            out["memory_bytes"] = total
            numa = parse_numa(fs.read(path, "memory.numa_stat"), v1=False)
            out["memory_numa_bytes"] = [a + f for a, f in zip(numa["anon"][1], numa["file"][1])]
            out["memory_anon_bytes"] = st["anon"]
            out["memory_file_bytes"] = st["file"]
        else:
            out["memory_bytes"] = parse_u64(fs.read(path, "memory.usage_in_bytes", tree="memory"))
            st = flat(fs.read(path, "memory.stat", tree="memory"))
            numa = parse_numa(fs.read(path, "memory.numa_stat", tree="memory"), v1=True)
            out["memory_numa_bytes"] = [x * PAGE for x in numa["hierarchical_total"][1]]
            out["memory_anon_bytes"] = st["total_rss"]
            out["memory_file_bytes"] = st["total_cache"]
        out["memory_peak_bytes"] = parse_u64(fs.read(path, "memory.peak" if fs.mode == "v2" else
                                                     "memory.max_usage_in_bytes", tree=fs.mem_tree)) \
            if (path != "/" or fs.mode != "v2") else None
    if "unified" in trees:
        cs = flat(fs.read(path, "cpu.stat", tree="unified"))
        out["cpu_usage_usec"] = cs["usage_usec"]
        out["cpu_user_usec"] = cs["user_usec"]
        out["cpu_system_usec"] = cs["system_usec"]
        out["psi"] = {}
        for r in ("cpu", "memory", "io"):
            p = parse_psi(fs.read(path, r + ".pressure", tree="unified"))
            out["psi"][r] = {k: {"avg10": v[0], "avg60": v[1], "avg300": v[2], "total_us": v[3]}
                             for k, v in p.items()}
        if path != "/":
            ev = flat(fs.read(path, "cgroup.events", tree="unified"))
            out["populated"] = bool(ev["populated"])
    if "cpu,cpuacct" in trees:
        usage_ns = parse_u64(fs.read(path, "cpuacct.usage", tree="cpu"))
        percpu = [int(x) for x in lines_of(fs.read(path, "cpuacct.usage_percpu", tree="cpu"))[0].split()]
        assert sum(percpu) == usage_ns
        all_lines = lines_of(fs.read(path, "cpuacct.usage_all", tree="cpu"))
        assert all_lines[0] == "cpu user system"
        rows = [[int(x) for x in ln.split()] for ln in all_lines[1:]]
        user_ns = sum(r[1] for r in rows)
        sys_ns = sum(r[2] for r in rows)
        assert user_ns + sys_ns == usage_ns
        st = flat(fs.read(path, "cpuacct.stat", tree="cpu"))
        v1 = {"cpu_usage_usec": usage_ns // 1000, "cpu_user_usec": user_ns // 1000,
              "cpu_system_usec": sys_ns // 1000, "cpuacct_stat_user_usec": st["user"] * 10000,
              "cpuacct_stat_system_usec": st["system"] * 10000, "cpu_percpu_ns": percpu}
        for k, v in v1.items():
            if k in out:
                assert out[k] == v, (k, out[k], v)  # unified and cpuacct agree
            out[k] = v
    return out


def check_against_expected(fs, path):
    got = read_like_a_daemon(fs, path)
    exp = fs.expected(path)
    for k, v in got.items():
        if v is None:
            continue
        assert exp[k] == v, "%s %s: files say %r, expected() says %r" % (path, k, v, exp[k])
    return got, exp


def all_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        out += [os.path.join(dirpath, f) for f in filenames]
    return out


def new_fs(tmp_path, mode, **kw):
    return fcg.FakeCgroupFS(tmp_path / ("cg-" + mode), mode=mode, **kw)


# ---------------------------------------------------------------------------
# samples

def test_embedded_samples_match_the_real_ones():
    if not SAMPLE_DIR:
        pytest.skip("no kernel sample directory here; the embedded copies are used")
    names = sorted(n for n in os.listdir(SAMPLE_DIR) if "--" in n)
    assert names == sorted(EMBEDDED_SAMPLES)
    for n in names:
        with open(os.path.join(SAMPLE_DIR, n)) as f:
            assert f.read() == EMBEDDED_SAMPLES[n], n


def test_the_parser_accepts_every_sample():
    for name in ("v1-memory--memory.stat", "v1-cpuacct-root--cpuacct.stat", "v2-unified--cgroup.events",
                 "v2-unified--cgroup.stat", "v2-unified--cpu.stat", "v2-unified-root--cpu.stat"):
        parse_flat(sample(name))
    for name in ("v2-unified--cpu.pressure", "v2-unified--io.pressure", "v2-unified--memory.pressure",
                 "proc--pressure-memory"):
        assert set(parse_psi(sample(name))) == {"some", "full"}
    parse_numa(sample("v1-memory--memory.numa_stat"), v1=True)
    parse_meminfo(sample("proc--meminfo"))
    assert PERCPU_RE.match(lines_of(sample("v1-cpuacct-root--cpuacct.usage_percpu"))[0])
    for name in ("v1-memory--memory.limit_in_bytes", "v1-memory--memory.max_usage_in_bytes",
                 "v1-memory--memory.memsw.usage_in_bytes", "v1-memory--memory.usage_in_bytes",
                 "v1-cpuacct-root--cpuacct.usage", "v2-unified--cgroup.procs"):
        parse_u64(sample(name))


# ---------------------------------------------------------------------------
# layouts

@pytest.mark.parametrize("mode", MODES)
def test_layout_is_detected_like_cgroup_discovery_h(tmp_path, mode):
    fs = new_fs(tmp_path, mode)
    fs.mkdir("/system.slice/foo.service", memory=8 << 20, procs=[10])
    fs.mkdir("/user.slice/user-1000.slice/session-1.scope", memory=1 << 20)
    fs.close()
    assert detect_layout(fs.root) == mode
    top = set(os.listdir(fs.root))
    if mode == "v2":
        assert "cgroup.controllers" in top and "unified" not in top and "memory" not in top
    else:
        assert "cgroup.controllers" not in top
        assert os.path.islink(os.path.join(fs.root, "cpu"))
        assert os.readlink(os.path.join(fs.root, "cpu")) == "cpu,cpuacct"
        assert os.readlink(os.path.join(fs.root, "cpuacct")) == "cpu,cpuacct"
        assert os.path.isdir(os.path.join(fs.root, "memory"))
        assert os.path.isdir(os.path.join(fs.root, "cpu,cpuacct"))
        assert os.path.isdir(os.path.join(fs.root, "unified")) == (mode == "hybrid")
    # the fake's own files are dot-files, never directories
    for name in (fcg.STATE_FILE, fcg.MEMINFO_FILE):
        assert os.path.isfile(os.path.join(fs.root, name))
    # what a discovery walk sees is exactly the cgroups, in every tree
    for t in fs.trees:
        assert walk_cgroups(fs.tree_root(t)) == set(fs.paths(t)), t
    # nothing left beside ROOT after close
    assert not [n for n in os.listdir(tmp_path) if "staging" in n]


def test_v2_root_and_cgroup_files(tmp_path):
    fs = new_fs(tmp_path, "v2")
    fs.mkdir("/system.slice/foo.service", memory=64 << 20, cpu_usec=10 ** 6, procs=[42])
    root_files = set(fs.files("/"))
    assert root_files >= {"cgroup.controllers", "cgroup.subtree_control", "cgroup.procs", "cgroup.threads",
                          "cgroup.stat", "cpu.stat", "memory.stat", "memory.numa_stat", "cpu.pressure",
                          "memory.pressure", "io.pressure"}
    assert not root_files & {"memory.current", "memory.max", "memory.peak", "cgroup.events", "cgroup.type"}
    assert set(os.listdir(fs.root)) - {fcg.STATE_FILE, fcg.MEMINFO_FILE, "system.slice"} == root_files
    assert fs.read("/", "cgroup.controllers") == "cpuset cpu io memory hugetlb pids rdma misc\n"
    need = {"cgroup.controllers", "cgroup.subtree_control", "cgroup.events", "cgroup.procs", "cgroup.threads",
            "cgroup.type", "cgroup.stat", "cpu.stat", "cpu.max", "cpu.weight", "memory.current", "memory.peak",
            "memory.min", "memory.low", "memory.high", "memory.max", "memory.swap.current", "memory.swap.max",
            "memory.stat", "memory.numa_stat", "memory.events", "memory.pressure", "cpu.pressure",
            "io.pressure", "pids.current"}
    for p in ("/system.slice", "/system.slice/foo.service"):
        present = set(os.listdir(fs.dir(p))) - {"foo.service"}
        assert need <= present, need - present
        assert present == set(fs.files(p))
    leaf = "/system.slice/foo.service"
    assert fs.read(leaf, "cgroup.events") == "populated 1\nfrozen 0\n"
    assert fs.read(leaf, "cgroup.type") == "domain\n"
    assert fs.read(leaf, "cpu.max") == "max 100000\n"
    assert fs.read(leaf, "memory.max") == "max\n"
    assert fs.read(leaf, "memory.swap.max") == "max\n"
    assert fs.read(leaf, "cgroup.procs") == "42\n"
    assert fs.read(leaf, "pids.current") == "1\n"
    assert fs.read("/system.slice", "pids.current") == "1\n"
    assert keys(fs.read(leaf, "cpu.stat")) == ["usage_usec", "user_usec", "system_usec", "nice_usec",
                                              "nr_periods", "nr_throttled", "throttled_usec", "nr_bursts",
                                              "burst_usec"]
    assert keys(fs.read(leaf, "memory.events")) == ["low", "high", "max", "oom", "oom_kill", "oom_group_kill"]
    # controllers flow down: enabled in the parent's subtree_control
    assert fs.read("/system.slice", "cgroup.subtree_control").split() == fs.read(leaf, "cgroup.controllers").split()
    assert fs.read(leaf, "cgroup.subtree_control") == ""
    assert set(fs.read(leaf, "cgroup.controllers").split()) >= {"cpu", "memory", "pids", "io"}
    fs.set_memory_limits(leaf, max=128 << 20)
    assert fs.read(leaf, "memory.max") == "%d\n" % (128 << 20)
    fs.set_cpu_max(leaf, 50000)
    assert fs.read(leaf, "cpu.max") == "50000 100000\n"


def test_hybrid_trees_and_files(tmp_path):
    fs = new_fs(tmp_path, "hybrid")
    p = "/system.slice/foo.service"
    fs.mkdir(p, memory=32 << 20, cpu_usec=5 * 10 ** 6, procs=[7, 8])
    for q in ("/", "/system.slice", p):
        assert fs.trees_of(q) == ["unified", "memory", "cpu,cpuacct"]
        for t in fs.trees:
            assert os.path.isdir(fs.dir(q, t))
    uni = set(os.listdir(fs.dir(p, "unified")))
    assert uni >= {"cgroup.controllers", "cgroup.events", "cgroup.procs", "cgroup.threads", "cpu.stat",
                   "cpu.pressure", "memory.pressure", "io.pressure"}
    assert not [f for f in uni if f.startswith("memory.") and f != "memory.pressure"]
    assert not {"cpu.max", "cpu.weight", "pids.current"} & uni
    assert fs.read(p, "cgroup.controllers", tree="unified") == ""
    assert fs.read("/", "cgroup.controllers", tree="unified") == ""
    mem = set(os.listdir(fs.dir(p, "memory")))
    assert mem >= {"memory.usage_in_bytes", "memory.limit_in_bytes", "memory.max_usage_in_bytes",
                   "memory.memsw.usage_in_bytes", "memory.stat", "memory.numa_stat", "cgroup.procs", "tasks"}
    cpu = set(os.listdir(fs.dir(p, "cpu")))
    assert cpu >= {"cpuacct.usage", "cpuacct.usage_percpu", "cpuacct.usage_all", "cpuacct.stat", "cpu.stat",
                   "cpu.shares", "cgroup.procs", "tasks"}
    assert fs.read(p, "tasks", tree="memory") == "7\n8\n"
    assert fs.read(p, "cgroup.procs", tree="cpu") == "7\n8\n"
    assert keys(fs.read(p, "cpu.stat", tree="cpu")) == ["nr_periods", "nr_throttled", "throttled_time",
                                                       "nr_bursts", "burst_time"]
    assert fs.read(p, "memory.limit_in_bytes", tree="memory") == "9223372036854771712\n"
    # the cpu and cpuacct symlinks lead to the same files
    assert os.path.samefile(os.path.join(fs.root, "cpuacct", "system.slice", "foo.service", "cpuacct.usage"),
                            os.path.join(fs.root, "cpu,cpuacct", "system.slice", "foo.service", "cpuacct.usage"))


def test_trees_restriction_like_mkdir_in_one_hierarchy(tmp_path):
    fs = new_fs(tmp_path, "hybrid")
    fs.mkdir("/foo", trees=["memory"], memory=4 << 20)
    fs.mkdir("/foo/bar", trees=["memory"], memory=1 << 20)
    assert fs.trees_of("/foo") == ["memory"]
    assert os.path.isdir(os.path.join(fs.root, "memory", "foo", "bar"))
    assert not os.path.exists(os.path.join(fs.root, "unified", "foo"))
    assert not os.path.exists(os.path.join(fs.root, "cpu,cpuacct", "foo"))
    assert fs.paths("memory") == ["/", "/foo", "/foo/bar"]
    assert fs.paths("unified") == ["/"]
    e = fs.expected("/foo")
    assert e["memory_bytes"] == 5 << 20 and e["psi"] is None and e["cpu_usage_usec"] is None
    with pytest.raises(ValueError):
        fs.add_cpu("/foo", 100)
    with pytest.raises(ValueError):
        fs.set_pressure("/foo", "cpu", some_avg10=1)
    # extend to another hierarchy (same path, now in more trees), then drop one
    fs.mkdir("/foo", trees=["unified"], exist_ok=True)
    assert fs.trees_of("/foo") == ["unified", "memory"]
    assert os.path.isfile(os.path.join(fs.root, "unified", "foo", "cgroup.events"))
    fs.rmdir("/foo", trees=["memory"])
    assert fs.trees_of("/foo") == ["unified"]
    assert not os.path.exists(os.path.join(fs.root, "memory", "foo"))
    assert not fs.exists("/foo/bar")
    assert fs.expected("/")["memory_bytes"] == 0
    with pytest.raises(ValueError):
        fs.set_memory("/foo", 1 << 20)


# ---------------------------------------------------------------------------
# formats against the real samples

def test_v1_memory_stat_has_exactly_the_sample_keys(tmp_path):
    fs = new_fs(tmp_path, "hybrid")
    fs.mkdir("/system.slice/a.service", memory=100 << 20, procs=[5])
    ref = keys(sample("v1-memory--memory.stat"))
    for p in ("/", "/system.slice", "/system.slice/a.service"):
        text = fs.read(p, "memory.stat", tree="memory")
        assert keys(text) == ref, p
        assert shapes(text) == shapes(sample("v1-memory--memory.stat"))
    st = flat(fs.read("/system.slice", "memory.stat", tree="memory"))
    assert st["hierarchical_memory_limit"] == 9223372036854771712
    assert st["cache"] == 0 and st["rss"] == 0  # a slice: nothing of its own, like the sample
    assert st["total_rss"] + st["total_cache"] > 0


@pytest.mark.parametrize("nodes", [1, 2])
def test_v1_numa_stat_format(tmp_path, nodes):
    fs = new_fs(tmp_path, "legacy", nr_nodes=nodes)
    fs.mkdir("/a", memory=10 << 20)
    ref = sample("v1-memory--memory.numa_stat")
    text = fs.read("/a", "memory.numa_stat")
    assert list(parse_numa(text, v1=True)) == list(parse_numa(ref, v1=True))
    if nodes == 1:
        assert shapes(text) == shapes(ref)
    else:
        assert all(re.search(r"=\d+ N0=\d+ N1=\d+$", x) for x in lines_of(text))


@pytest.mark.parametrize("cpus", [2, 4])
def test_cpuacct_formats(tmp_path, cpus):
    fs = new_fs(tmp_path, "hybrid", nr_cpus=cpus)
    fs.mkdir("/a", cpu_usec=123456789)
    for p in ("/", "/a"):
        percpu = fs.read(p, "cpuacct.usage_percpu", tree="cpu")
        assert PERCPU_RE.match(lines_of(percpu)[0])
        assert len(percpu.split()) == cpus
        if cpus == 2:
            assert shapes(percpu) == shapes(sample("v1-cpuacct-root--cpuacct.usage_percpu"))
            assert shapes(fs.read(p, "cpuacct.usage_all", tree="cpu")) == \
                shapes(sample("v1-cpuacct-root--cpuacct.usage_all"))
        assert keys(fs.read(p, "cpuacct.stat", tree="cpu")) == keys(sample("v1-cpuacct-root--cpuacct.stat"))
        parse_u64(fs.read(p, "cpuacct.usage", tree="cpu"))
    assert parse_u64(fs.read("/a", "cpuacct.usage", tree="cpu")) == 123456789000
    assert flat(fs.read("/a", "cpuacct.stat", tree="cpu")) == {"user": 8641, "system": 3703}


def test_unified_files_match_the_samples(tmp_path):
    fs = new_fs(tmp_path, "hybrid")
    fs.mkdir("/system.slice/a.service", procs=[18311], cpu_usec=1000)
    p = "/system.slice/a.service"
    assert keys(fs.read(p, "cgroup.events", tree="unified")) == keys(sample("v2-unified--cgroup.events"))
    assert fs.read(p, "cgroup.events", tree="unified") == sample("v2-unified--cgroup.events")
    assert fs.read(p, "cgroup.procs", tree="unified") == sample("v2-unified--cgroup.procs")
    assert fs.read(p, "cgroup.controllers", tree="unified") == sample("v2-unified--cgroup.controllers")
    assert fs.read(p, "cgroup.stat", tree="unified") == sample("v2-unified--cgroup.stat")
    assert keys(fs.read("/", "cgroup.stat", tree="unified")) == keys(sample("v2-unified--cgroup.stat"))
    assert keys(fs.read(p, "cpu.stat", tree="unified")) == keys(sample("v2-unified--cpu.stat"))
    assert keys(fs.read("/", "cpu.stat", tree="unified")) == keys(sample("v2-unified-root--cpu.stat"))
    for r in ("cpu", "memory", "io"):
        assert fs.read(p, r + ".pressure") == sample("v2-unified--%s.pressure" % r)
        assert shapes(fs.read("/", r + ".pressure")) == shapes(sample("v2-unified--%s.pressure" % r))


@pytest.mark.parametrize("mode", ["v2", "hybrid"])
def test_psi_lines_match_the_sample_regex(tmp_path, mode):
    fs = new_fs(tmp_path, mode)
    fs.mkdir("/a")
    fs.set_pressure("/a", "memory", some_avg10=12.25, some_avg60=0.5, some_avg300=100, total_us=987654321,
                    full_avg10=3.1, full_total_us=55)
    fs.set_pressure("/a", "io", some_avg10=0.01)
    ref_shapes = {shape(x) for x in lines_of(sample("v2-unified--memory.pressure"))}
    for p in ("/", "/a"):
        for r in ("cpu", "memory", "io"):
            text = fs.read(p, r + ".pressure")
            assert all(PSI_RE.match(x) for x in lines_of(text))
            assert {shape(x) for x in lines_of(text)} == ref_shapes
    assert fs.read("/a", "memory.pressure") == ("some avg10=12.25 avg60=0.50 avg300=100.00 total=987654321\n"
                                                "full avg10=3.10 avg60=0.00 avg300=0.00 total=55\n")
    psi = fs.expected("/a")["psi"]
    assert psi["memory"]["some"]["total_us"] == 987654321
    assert psi["memory"]["full"]["avg10"] == 3.1
    assert psi["io"]["some"]["avg10"] == 0.01
    assert parse_psi(fs.read("/a", "memory.pressure"))["some"][0] == psi["memory"]["some"]["avg10"]


@pytest.mark.parametrize("nodes", [1, 3])
def test_v2_memory_files(tmp_path, nodes):
    fs = new_fs(tmp_path, "v2", nr_nodes=nodes)
    p = "/system.slice/db.service"
    fs.mkdir(p, memory=300 << 20, procs=[1234])
    fs.set_memory(p, 200 << 20, anon=50 << 20, sock=1 << 20, swap=3 << 20)
    st = flat(fs.read(p, "memory.stat"))
    documented = {"anon", "file", "kernel", "kernel_stack", "pagetables", "sec_pagetables", "percpu", "sock",
                  "vmalloc", "shmem", "zswap", "zswapped", "file_mapped", "file_dirty", "file_writeback",
                  "swapcached", "anon_thp", "file_thp", "shmem_thp", "inactive_anon", "active_anon",
                  "inactive_file", "active_file", "unevictable", "slab_reclaimable", "slab_unreclaimable", "slab",
                  "workingset_refault_anon", "workingset_refault_file", "workingset_activate_anon",
                  "workingset_activate_file", "workingset_restore_anon", "workingset_restore_file",
                  "workingset_nodereclaim", "pswpin", "pswpout", "pgscan", "pgsteal", "pgscan_kswapd",
                  "pgscan_direct", "pgscan_khugepaged", "pgsteal_kswapd", "pgsteal_direct", "pgsteal_khugepaged",
                  "pgfault", "pgmajfault", "pgrefill", "pgactivate", "pgdeactivate", "pglazyfree", "pglazyfreed",
                  "zswpin", "zswpout", "zswpwb", "thp_fault_alloc", "thp_collapse_alloc", "thp_swpout",
                  "thp_swpout_fallback", "numa_pages_migrated", "numa_pte_updates", "numa_hint_faults",
                  "pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged", "pgpromote_success"}
    assert documented <= set(st), documented - set(st)
    assert "pgpgin" not in st  # v1 only
    cur = parse_u64(fs.read(p, "memory.current"))
    assert cur == 200 << 20 == st["anon"] + st["file"] + st["kernel"] + st["sock"]
    assert st["anon"] == 50 << 20 and st["sock"] == 1 << 20
    assert st["kernel"] == sum(st[k] for k in ("kernel_stack", "pagetables", "sec_pagetables", "percpu",
                                               "vmalloc", "slab_reclaimable", "slab_unreclaimable"))
    assert st["slab"] == st["slab_reclaimable"] + st["slab_unreclaimable"]
    assert st["active_anon"] + st["inactive_anon"] == st["anon"] + st["shmem"]
    assert st["active_file"] + st["inactive_file"] == st["file"] - st["shmem"]
    assert st["pgscan"] == st["pgscan_kswapd"] + st["pgscan_direct"] + st["pgscan_khugepaged"] + \
        st.get("pgscan_proactive", 0)
    assert parse_u64(fs.read(p, "memory.swap.current")) == 3 << 20
    assert parse_u64(fs.read(p, "memory.peak")) == 300 << 20
    assert all(v % PAGE == 0 for k, v in st.items() if k in documented and not k.startswith(("pg", "work", "ps",
                                                                                              "zsw", "thp",
                                                                                              "numa", "sw")))
    numa = parse_numa(fs.read(p, "memory.numa_stat"), v1=False)
    assert all(len(per) == nodes for _, per in numa.values())
    assert set(numa) <= set(st)
    for k, (total, _) in numa.items():
        assert total == st[k], k
    assert {"anon", "file", "kernel_stack", "pagetables", "shmem", "file_mapped", "file_dirty", "file_writeback",
            "anon_thp", "inactive_anon", "active_anon", "inactive_file", "active_file", "unevictable",
            "slab_reclaimable", "slab_unreclaimable"} <= set(numa)
    e = fs.expected(p)
    assert e["memory_numa_bytes"] == [a + f for a, f in zip(numa["anon"][1], numa["file"][1])]
    assert e["memory_bytes"] == cur and e["memory_swap_bytes"] == 3 << 20


def test_meminfo_format_and_consistency(tmp_path):
    fs = fcg.build(tmp_path / "cg", mode="hybrid", count=60, depth=3, seed=5)
    with open(fs.meminfo_path) as f:
        text = f.read()
    ref = parse_meminfo(sample("proc--meminfo"))
    got = parse_meminfo(text)
    gk = [k for k, _ in got]
    assert gk[:len(ref)] == [k for k, _ in ref]  # the sample's keys, in its order, first
    assert {"HugePages_Total", "Hugepagesize", "DirectMap4k", "Percpu"} <= set(gk)
    # the kernel's column layout: values right-aligned at column 24 (for up to 8 digits)
    for line in lines_of(text):
        if line.endswith(" kB") and len(line.split()[1]) <= 8 and not line.startswith("HardwareCorrupted"):
            assert len(line) == 27, line
    assert [len(x) for x in lines_of(sample("proc--meminfo"))] == [27] * len(ref)
    mi = dict(got)
    root = fs.expected("/")
    assert mi["MemTotal"] > root["memory_bytes"]
    assert mi["MemTotal"] - mi["MemFree"] >= root["memory_bytes"]
    assert mi["MemAvailable"] >= mi["MemFree"]
    assert mi["AnonPages"] == root["memory_anon_bytes"]
    assert mi["Shmem"] == root["memory_shmem_bytes"]
    assert mi["Slab"] == mi["SReclaimable"] + mi["SUnreclaim"] == root["memory_slab_bytes"]
    assert mi["Cached"] + mi["Buffers"] == root["memory_file_bytes"]
    assert fs.meminfo()["MemTotal"] == mi["MemTotal"]
    # it follows the tree
    before = mi["MemFree"]
    fs.mkdir("/big.slice", memory=1 << 30)
    with open(fs.meminfo_path) as f:
        after = dict(parse_meminfo(f.read()))["MemFree"]
    assert before - after == 1 << 30
    with pytest.raises(ValueError):
        fs.set_memory("/big.slice", fs.mem_total)  # a host cannot hold more than its RAM


# ---------------------------------------------------------------------------
# values: expected() against the files, hierarchical consistency

def _scripted(fs, rng, steps=60):
    paths = [p for p in fs.paths() if p != "/"]
    for _ in range(steps):
        p = rng.choice(paths)
        op = rng.random()
        if op < 0.35 and fs.mem_tree in fs.trees_of(p):
            fs.set_memory(p, rng.randint(0, 64 << 20))
        elif op < 0.7:
            fs.add_cpu(p, rng.randint(1, 10 ** 7), user_frac=rng.random(), cpus=rng.choice([None, 0]))
        elif op < 0.85 and "unified" in fs.trees_of(p):
            fs.set_pressure(p, rng.choice(["cpu", "memory", "io"]), some_avg10=rng.randint(0, 10000) / 100,
                            total_us=rng.randint(0, 10 ** 9), full_avg300=rng.randint(0, 500) / 100)
        else:
            fs.set_procs(p, fs.alloc_pids(rng.randint(0, 3)))


@pytest.mark.parametrize("mode", MODES)
def test_expected_matches_what_the_files_say(tmp_path, mode):
    fs = fcg.build(tmp_path / "cg", mode=mode, count=120, depth=4, nr_cpus=3, nr_nodes=2, seed=11)
    _scripted(fs, random.Random(3))
    for p in fs.paths():
        got, exp = check_against_expected(fs, p)
        assert exp["path"] == p and exp["mode"] == mode
        if mode == "legacy":
            assert exp["psi"] is None
        assert exp["cpu_usage_usec"] is not None
    json.dumps(fs.expected("/"))  # JSON-able


@pytest.mark.parametrize("mode", MODES)
def test_hierarchy_is_consistent(tmp_path, mode):
    fs = fcg.build(tmp_path / "cg", mode=mode, count=150, depth=5, nr_cpus=2, nr_nodes=2, seed=21)
    _scripted(fs, random.Random(4), steps=40)
    fs.rmdir(fs.paths()[-1])
    exp = {p: fs.expected(p) for p in fs.paths()}
    for p, e in exp.items():
        kids = [exp[c] for c in e["children"]]
        if not kids:
            continue
        # memory: parent = its own charge + children's, so >= their sum, per node too
        child_mem = sum(k["memory_bytes"] for k in kids)
        assert e["memory_bytes"] == e["memory_own_bytes"] + child_mem
        assert e["memory_bytes"] >= child_mem
        for i in range(2):
            assert e["memory_numa_bytes"][i] >= sum(k["memory_numa_bytes"][i] for k in kids)
        assert e["memory_peak_bytes"] >= e["memory_bytes"]
        # cpu: cumulative, hierarchical
        assert e["cpu_usage_ns"] >= sum(k["cpu_usage_ns"] for k in kids)
        for i in range(2):
            assert e["cpu_percpu_ns"][i] >= sum(k["cpu_percpu_ns"][i] for k in kids)
        assert e["nr_tasks"] == len(e["procs"]) + sum(k["nr_tasks"] for k in kids)
        assert e["populated"] == (bool(e["procs"]) or any(k["populated"] for k in kids))
        # the same in the files: v1 total_* = own + children's total_*, v2 every stat >= children's sum
        if mode == "v2":
            st = flat(fs.read(p, "memory.stat"))
            kst = [flat(fs.read(c, "memory.stat")) for c in e["children"]]
            for key in ("anon", "file", "kernel", "sock", "shmem", "slab", "pgfault", "active_file"):
                assert st[key] >= sum(k[key] for k in kst), key
        else:
            st = flat(fs.read(p, "memory.stat", tree="memory"))
            kst = [flat(fs.read(c, "memory.stat", tree="memory")) for c in e["children"]]
            for key in ("cache", "rss", "shmem", "mapped_file", "pgfault", "inactive_file", "active_anon"):
                assert st["total_" + key] == st[key] + sum(k["total_" + key] for k in kst), key
        nd = flat(fs.read(p, "cgroup.stat"))["nr_descendants"] if mode != "legacy" else None
        if nd is not None:
            assert nd == e["nr_descendants"] == sum(1 + k["nr_descendants"] for k in kids)


def test_set_memory_semantics(tmp_path):
    fs = new_fs(tmp_path, "v2", nr_nodes=2)
    fs.mkdir("/s.slice/a.service", memory=10 << 20)
    fs.mkdir("/s.slice/b.service", memory=20 << 20)
    assert fs.expected("/s.slice")["memory_bytes"] == 30 << 20
    fs.set_memory("/s.slice", 5 << 20)  # the slice's own charge
    assert fs.expected("/s.slice")["memory_bytes"] == 35 << 20
    fs.set_memory_total("/s.slice", 40 << 20)
    assert fs.expected("/s.slice")["memory_own_bytes"] == 10 << 20
    with pytest.raises(ValueError):
        fs.set_memory_total("/s.slice", 29 << 20)
    fs.set_memory("/s.slice/a.service", anon=1 << 20, file=2 << 20, kernel=PAGE, sock=0)
    e = fs.expected("/s.slice/a.service")
    assert (e["memory_bytes"], e["memory_anon_bytes"], e["memory_file_bytes"], e["memory_kernel_bytes"]) == \
        ((3 << 20) + PAGE, 1 << 20, 2 << 20, PAGE)
    fs.set_memory("/s.slice/a.service", 1000)  # rounded up to a page
    assert fs.expected("/s.slice/a.service")["memory_bytes"] == PAGE
    with pytest.raises(ValueError):
        fs.set_memory("/s.slice/a.service", 1 << 20, anon=2 << 20)
    fs.set_memory("/s.slice/b.service", 8 << 20, nodes=[0, 1])
    assert fs.expected("/s.slice/b.service")["memory_numa_bytes"][0] == 0
    fs.set_memory("/s.slice/b.service", 8 << 20, nodes=[1, 1])
    e = fs.expected("/s.slice/b.service")
    n0, n1 = e["memory_numa_bytes"]
    assert n0 + n1 == e["memory_anon_bytes"] + e["memory_file_bytes"] and abs(n0 - n1) <= 2 * PAGE
    # peak keeps the highest hierarchical value; reset_peak brings it down
    assert fs.expected("/s.slice/b.service")["memory_peak_bytes"] == 20 << 20
    assert parse_u64(fs.read("/s.slice", "memory.peak")) >= 40 << 20
    fs.reset_peak("/s.slice/b.service")
    assert fs.read("/s.slice/b.service", "memory.peak") == "%d\n" % (8 << 20)
    fs.add_memory_events("/s.slice/b.service", oom_kill=2)
    assert flat(fs.read("/s.slice/b.service", "memory.events"))["oom_kill"] == 2


def test_v1_limits_and_sock(tmp_path):
    fs = new_fs(tmp_path, "legacy")
    fs.mkdir("/lim.slice/a.service", memory=4 << 20)
    fs.set_memory_limits("/lim.slice", max=512 << 20)
    fs.set_memory_limits("/lim.slice/a.service", max=1 << 30, swap_max=0)
    st = flat(fs.read("/lim.slice/a.service", "memory.stat"))
    assert st["hierarchical_memory_limit"] == 512 << 20
    assert st["hierarchical_memsw_limit"] == 1 << 30
    assert fs.read("/lim.slice/a.service", "memory.limit_in_bytes") == "%d\n" % (1 << 30)
    assert fs.expected("/lim.slice/a.service")["memory_limit_bytes"] == 512 << 20
    fs.set_memory_limits("/lim.slice", max=None)
    assert flat(fs.read("/lim.slice/a.service", "memory.stat"))["hierarchical_memory_limit"] == 1 << 30
    with pytest.raises(ValueError):
        fs.set_memory("/lim.slice/a.service", 1 << 20, sock=PAGE)  # not charged in v1
    fs.set_memory("/lim.slice/a.service", 1 << 20, swap=1 << 20)
    assert parse_u64(fs.read("/lim.slice/a.service", "memory.memsw.usage_in_bytes")) == 2 << 20


@pytest.mark.parametrize("mode", MODES)
def test_add_cpu_is_cumulative_and_hierarchical(tmp_path, mode):
    fs = new_fs(tmp_path, mode, nr_cpus=4)
    leaf = "/system.slice/x.service"
    fs.mkdir(leaf)
    fs.mkdir("/system.slice/y.service", cpu_usec=10 ** 6)
    before = {p: fs.expected(p)["cpu_usage_ns"] for p in ("/", "/system.slice", leaf)}
    fs.add_cpu(leaf, 2500000, user_frac=0.8)
    fs.add_cpu(leaf, 1000, cpus=3)
    for p in ("/", "/system.slice", leaf):
        assert fs.expected(p)["cpu_usage_ns"] - before[p] == 2501000 * 1000
    e = fs.expected(leaf)
    assert e["cpu_usage_usec"] == 2501000
    assert e["cpu_user_usec"] == 2000700 and e["cpu_system_usec"] == 500300
    assert e["cpu_percpu_ns"] == [625000000, 625000000, 625000000, 626000000]
    got, _ = check_against_expected(fs, leaf)
    if mode != "v2":
        assert got["cpuacct_stat_user_usec"] == 2000000  # 200 ticks of 10 ms
    fs.rmdir("/system.slice/y.service")  # the removed child's time stays in its ancestors
    assert fs.expected("/system.slice")["cpu_usage_ns"] == 3501000 * 1000
    fs.add_throttling(leaf, periods=10, throttled=3, throttled_usec=4500)
    e = fs.expected(leaf)
    assert (e["cpu_nr_periods"], e["cpu_nr_throttled"], e["cpu_throttled_usec"]) == (10, 3, 4500)
    if mode == "v2":
        assert flat(fs.read(leaf, "cpu.stat"))["throttled_usec"] == 4500
    else:
        assert flat(fs.read(leaf, "cpu.stat", tree="cpu"))["throttled_time"] == 4500000


@pytest.mark.parametrize("mode", ["v2", "hybrid"])
def test_populated_and_procs(tmp_path, mode):
    fs = new_fs(tmp_path, mode)
    fs.mkdir("/a.slice/b.service")
    ev = lambda p: flat(fs.read(p, "cgroup.events", tree="unified"))["populated"]  # noqa: E731
    assert ev("/a.slice") == 0 and ev("/a.slice/b.service") == 0
    fs.set_procs("/a.slice/b.service", [300, 301])
    assert ev("/a.slice") == 1 and ev("/a.slice/b.service") == 1
    assert fs.read("/a.slice/b.service", "cgroup.threads", tree="unified") == "300\n301\n"
    fs.set_populated("/a.slice/b.service", False)
    assert ev("/a.slice") == 0 and fs.expected("/a.slice")["populated"] is False
    fs.set_populated("/a.slice/b.service", None)
    assert ev("/a.slice") == 1
    fs.set_procs("/a.slice/b.service", [])
    assert ev("/a.slice/b.service") == 0
    fs.set_frozen("/a.slice/b.service", True)
    assert flat(fs.read("/a.slice/b.service", "cgroup.events", tree="unified"))["frozen"] == 1


# ---------------------------------------------------------------------------
# structure changes

@pytest.mark.parametrize("mode", MODES)
def test_rmdir_removes_everywhere(tmp_path, mode):
    fs = new_fs(tmp_path, mode)
    fs.mkdir("/s.slice/a.service/sub", memory=3 << 20)
    fs.mkdir("/s.slice/b.service", memory=5 << 20)
    fs.rmdir("/s.slice/a.service")
    assert not fs.exists("/s.slice/a.service") and not fs.exists("/s.slice/a.service/sub")
    for t in fs.trees:
        assert not os.path.exists(os.path.join(fs.dir("/s.slice", t), "a.service"))
        assert walk_cgroups(fs.tree_root(t)) == set(fs.paths(t))
    assert fs.expected("/s.slice")["memory_bytes"] == 5 << 20
    fs.rmdir("/s.slice/b.service", reparent=True)  # the charge moves to the parent
    assert fs.expected("/s.slice")["memory_bytes"] == 5 << 20
    assert fs.expected("/s.slice")["memory_own_bytes"] == 5 << 20
    with pytest.raises(FileNotFoundError):
        fs.set_memory("/s.slice/b.service", 1)
    with pytest.raises(PermissionError):
        fs.rmdir("/")


@pytest.mark.parametrize("mode,atomic", [("v2", True), ("hybrid", True), ("legacy", True), ("v2", False),
                                         ("hybrid", False)])
def test_recreate_changes_the_inode(tmp_path, mode, atomic):
    fs = new_fs(tmp_path, mode, atomic_mkdir=atomic)
    p = "/system.slice/foo.service"
    fs.mkdir(p, memory=16 << 20, cpu_usec=10 ** 6, procs=[50])
    fs.mkdir(p + "/child")
    old = fs.expected(p)["inodes"]
    slice_mem = fs.expected("/system.slice")["memory_bytes"]
    fs.recreate(p, memory=1 << 20)
    e = fs.expected(p)
    assert set(e["inodes"]) == set(old)
    for t in old:
        assert e["inodes"][t] != old[t], t
        assert os.stat(fs.dir(p, t)).st_ino == e["inodes"][t]
    assert e["memory_bytes"] == 1 << 20 and e["cpu_usage_usec"] == 0 and e["procs"] == []
    assert not fs.exists(p + "/child")
    assert fs.expected("/system.slice")["memory_bytes"] == slice_mem - (15 << 20)
    for p2 in fs.paths():
        check_against_expected(fs, p2)
    for t in fs.trees:
        assert walk_cgroups(fs.tree_root(t)) == set(fs.paths(t))
    # many times in a row: always a new inode
    seen = {fs.expected(p)["inodes"][fs.trees[0]]}
    for _ in range(5):
        fs.recreate(p)
        ino = fs.expected(p)["inodes"][fs.trees[0]]
        assert ino not in seen
        seen.add(ino)


def test_batch_defers_and_creates_complete_directories(tmp_path):
    fs = new_fs(tmp_path, "v2")
    with fs.batch():
        fs.mkdir("/a.slice/x.service", memory=2 << 20)
        fs.mkdir("/a.slice/y.service", memory=2 << 20)
        assert not os.path.exists(os.path.join(fs.root, "a.slice"))  # appears at the end
    assert fs.read("/a.slice", "memory.current") == "%d\n" % (4 << 20)
    assert set(os.listdir(fs.dir("/a.slice/x.service"))) == set(fs.files("/a.slice/x.service"))


def test_invalid_arguments(tmp_path):
    fs = new_fs(tmp_path, "v2")
    fs.mkdir("/a")
    with pytest.raises(FileExistsError):
        fs.mkdir("/a")
    fs.mkdir("/a", exist_ok=True)
    with pytest.raises(FileExistsError):
        fs.mkdir("/memory.stat")  # a file of the root has that name
    with pytest.raises(ValueError):
        fs.mkdir("/a/../b")
    with pytest.raises(ValueError):
        fs.set_pressure("/a", "disk", some_avg10=1)
    with pytest.raises(ValueError):
        fcg.FakeCgroupFS(tmp_path / "x", mode="v3")
    with pytest.raises(FileExistsError):
        fcg.FakeCgroupFS(fs.root, mode="v2")  # already a tree: use open()
    with pytest.raises(ValueError):
        fs.add_cpu("/a", 10, user_frac=1.5)
    assert fs.paths() == ["/", "/a"]


# ---------------------------------------------------------------------------
# faults

@pytest.mark.parametrize("mode", ["v2", "hybrid"])
def test_faults(tmp_path, mode):
    fs = new_fs(tmp_path, mode)
    p = "/system.slice/foo.service"
    fs.mkdir(p, memory=64 << 20, cpu_usec=10 ** 6)
    fs.mkdir("/system.slice/bar.service", memory=1 << 20)
    mtree = fs.mem_tree
    stat_path = os.path.join(fs.dir(p, mtree), "memory.stat")

    # garbage: the content given, kept through later updates, until heal()
    fs.garbage(p, "memory.stat", content=b"anon 12\nfile twelve\n")
    assert fs.read(p, "memory.stat", tree=mtree) == "anon 12\nfile twelve\n"
    fs.set_memory(p, 32 << 20)
    assert fs.read(p, "memory.stat", tree=mtree) == "anon 12\nfile twelve\n"
    assert fs.faults(p) == [(p, mtree, "memory.stat", "garbage")]
    assert fs.expected(p)["faults"] == [[mtree, "memory.stat", "garbage"]]
    fs.heal(p)
    assert keys(fs.read(p, "memory.stat", tree=mtree))  # parses again
    assert fs.faults() == []

    # vanish
    cur = "memory.current" if mode == "v2" else "memory.usage_in_bytes"
    fs.vanish(p, cur)
    assert not os.path.lexists(os.path.join(fs.dir(p, mtree), cur))
    fs.set_memory(p, 40 << 20)
    assert not os.path.lexists(os.path.join(fs.dir(p, mtree), cur))
    with pytest.raises(FileNotFoundError):
        fs.read(p, cur)
    fs.heal(p, cur)
    assert parse_u64(fs.read(p, cur, tree=mtree)) == fs.expected(p)["memory_bytes"]

    # unreadable: a directory (EISDIR even as root) or a socket (ENXIO)
    fs.unreadable(p, "memory.stat")
    with pytest.raises(IsADirectoryError):
        with open(stat_path) as f:
            f.read()
    fs.set_memory(p, 41 << 20)
    assert os.path.isdir(stat_path)
    fs.heal(p, "memory.stat")
    assert os.path.isfile(stat_path)
    fs.unreadable(p, "memory.stat", how="socket")
    assert stat.S_ISSOCK(os.lstat(stat_path).st_mode)
    with pytest.raises(OSError) as ei:
        os.open(stat_path, os.O_RDONLY)
    assert ei.value.errno == errno.ENXIO
    fs.heal(p)

    # truncate: a non-empty prefix, cut mid-line, in place
    full = fs.read(p, "memory.stat", tree=mtree)
    ino = os.stat(stat_path).st_ino
    fs.truncate(p, "memory.stat", tree=mtree)
    cut = fs.read(p, "memory.stat", tree=mtree)
    assert cut and full.startswith(cut) and len(cut) < len(full) and not cut.endswith("\n")
    last = cut.split("\n")[-1]
    assert last and last not in full.split("\n")  # a partial line
    assert os.stat(stat_path).st_ino == ino
    fs.heal(p)
    fs.truncate(p, cur, tree=mtree)
    v = fs.read(p, cur, tree=mtree)
    assert v and not v.endswith("\n") and str(fs.expected(p)["memory_bytes"]).startswith(v)
    fs.heal(p)
    # a file whose content other cgroups share (cgroup.procs "" / pooled): only ours is cut
    other = fs.read("/system.slice/bar.service", "cpu.stat")
    fs.set_procs(p, [77])
    fs.set_procs("/system.slice/bar.service", [77])
    fs.truncate(p, "cgroup.procs")
    assert fs.read("/system.slice/bar.service", "cgroup.procs") == "77\n"
    assert fs.read("/system.slice/bar.service", "cpu.stat") == other
    fs.heal(p)

    # tree= picks one hierarchy; default: every tree holding the file
    if mode == "hybrid":
        fs.garbage(p, "cpu.stat", tree="unified", content="x")
        assert fs.read(p, "cpu.stat", tree="unified") == "x"
        assert keys(fs.read(p, "cpu.stat", tree="cpu"))
        fs.vanish(p, "cgroup.procs")
        for t in fs.trees:
            assert not os.path.exists(os.path.join(fs.dir(p, t), "cgroup.procs"))
        fs.heal(p)
    with pytest.raises(FileNotFoundError):
        fs.garbage(p, "no.such.file")
    for q in fs.paths():
        check_against_expected(fs, q)


def test_faults_survive_reopen_and_go_with_rmdir(tmp_path):
    fs = new_fs(tmp_path, "v2")
    fs.mkdir("/a", memory=1 << 20)
    fs.garbage("/a", "memory.current", content="junk\n")
    fs2 = fcg.FakeCgroupFS.open(fs.root)
    fs2.set_memory("/a", 2 << 20)
    assert fs2.read("/a", "memory.current") == "junk\n"
    fs2.recreate("/a")
    assert fs2.faults() == []
    assert fs2.read("/a", "memory.current") == "0\n"


# ---------------------------------------------------------------------------
# atomicity

@pytest.mark.parametrize("mode", ["v2", "hybrid"])
def test_writes_are_atomic_for_a_concurrent_reader(tmp_path, mode):
    fs = new_fs(tmp_path, mode, nr_nodes=2)
    p = "/system.slice/busy.service"
    fs.mkdir(p, memory=1 << 20)
    stat_file = os.path.join(fs.dir(p, fs.mem_tree), "memory.stat")
    numa_file = os.path.join(fs.dir(p, fs.mem_tree), "memory.numa_stat")
    pct_file = os.path.join(fs.dir(p, "unified"), "cpu.pressure")
    ref_keys = keys(fs.read(p, "memory.stat", tree=fs.mem_tree))
    ref_numa = list(parse_numa(fs.read(p, "memory.numa_stat", tree=fs.mem_tree), v1=mode != "v2"))
    stop = threading.Event()
    problems = []
    reads = [0]

    def reader():
        while not stop.is_set():
            try:
                for path in (stat_file, numa_file, pct_file):
                    with open(path) as f:
                        text = f.read()
                    if path == stat_file:
                        ok = keys(text) == ref_keys
                    elif path == numa_file:
                        ok = list(parse_numa(text, v1=mode != "v2")) == ref_numa
                    else:
                        ok = set(parse_psi(text)) == {"some", "full"}
                    if not ok:
                        problems.append(text)
                    reads[0] += 1
            except (AssertionError, OSError) as e:  # a missing file or a torn one
                problems.append(repr(e))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        rng = random.Random(1)
        deadline = time.monotonic() + 2.0
        n = 0
        while time.monotonic() < deadline or n < 50:
            fs.set_memory(p, rng.randint(0, 512 << 20), shmem=None)
            fs.set_pressure(p, "cpu", some_avg10=rng.randint(0, 9999) / 100, total_us=n)
            n += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not problems, problems[:3]
    assert reads[0] > 50
    leftovers = [f for f in all_files(fs.root) if "fakecg-tmp" in f]
    assert not leftovers


def test_replace_mode_gives_new_inodes_to_held_descriptors(tmp_path):
    # The default (atomic) mode: a descriptor kept open sees the old content.
    fs = new_fs(tmp_path, "v2")
    fs.mkdir("/a", memory=1 << 20)
    path = os.path.join(fs.dir("/a"), "memory.current")
    fd = os.open(path, os.O_RDONLY)
    try:
        fs.set_memory("/a", 2 << 20)
        assert os.pread(fd, 100, 0) == b"%d\n" % (1 << 20)
        assert fs.read("/a", "memory.current") == "%d\n" % (2 << 20)
    finally:
        os.close(fd)


def test_inplace_write_mode_keeps_inodes(tmp_path):
    fs = new_fs(tmp_path, "v2", write_mode="inplace")
    fs.mkdir("/a", memory=1 << 20)
    fs.mkdir("/b", memory=1 << 20)
    path = os.path.join(fs.dir("/a"), "memory.current")
    ino = os.stat(path).st_ino
    fd = os.open(path, os.O_RDONLY)
    try:
        for size in (2 << 30, 5 << 20, 1 << 20):  # longer, then shorter content
            fs.set_memory("/a", size)
            assert os.pread(fd, 100, 0) == b"%d\n" % size  # a held descriptor sees the update
    finally:
        os.close(fd)
    assert os.stat(path).st_ino == ino
    assert fs.read("/b", "memory.current") == "%d\n" % (1 << 20)
    # a tree built in the (pooled, hard-linked) replace mode, continued in place:
    # writing one cgroup's file never changes another's
    fs2 = fcg.build(tmp_path / "pooled", mode="hybrid", count=30, depth=3, seed=2)
    fs2.close()
    fs3 = fcg.FakeCgroupFS.open(fs2.root, write_mode="inplace")
    leaves = [p for p in fs3.paths() if not fs3.children(p) and p != "/"]
    a, b = leaves[0], leaves[1]
    before = fs3.read(b, "memory.limit_in_bytes", tree="memory")
    fs3.set_memory_limits(a, max=64 << 20)
    assert fs3.read(a, "memory.limit_in_bytes", tree="memory") == "%d\n" % (64 << 20)
    assert fs3.read(b, "memory.limit_in_bytes", tree="memory") == before
    for p in fs3.paths():
        check_against_expected(fs3, p)


def test_state_roundtrip(tmp_path):
    fs = fcg.build(tmp_path / "cg", mode="hybrid", count=80, depth=4, nr_nodes=2, seed=9)
    _scripted(fs, random.Random(8), steps=30)
    fs.rmdir(fs.paths()[5], reparent=True)
    before = {p: fs.expected(p) for p in fs.paths()}
    fs.close()
    fs2 = fcg.FakeCgroupFS.open(fs.root)
    assert fs2.mode == "hybrid" and fs2.nr_nodes == 2
    after = {p: fs2.expected(p) for p in fs2.paths()}
    assert after == before
    fs2.mkdir("/new.slice", memory=1 << 20)
    assert fs2.expected("/")["memory_bytes"] == before["/"]["memory_bytes"] + (1 << 20)


def test_fixture_default_is_v2(fakecg):
    assert fakecg.mode == "v2"
    fakecg.mkdir("/a")
    assert fakecg.paths() == ["/", "/a"]


@pytest.mark.parametrize("fakecg", ["hybrid", {"mode": "legacy", "nr_cpus": 4}], indirect=True)
def test_fixture_parametrised(fakecg):
    assert fakecg.mode in ("hybrid", "legacy")
    fakecg.mkdir("/a", cpu_usec=5)
    assert fakecg.expected("/a")["cpu_usage_usec"] == 5


# ---------------------------------------------------------------------------
# CLI

def run_cli(*args, timeout=60):
    return subprocess.run([sys.executable, FAKECG] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("mode", MODES)
def test_cli_build_1000_continues(tmp_path, mode):
    # How fast it builds is a benchmark's business (tests/bench), not a test's.
    root = tmp_path / "cg"
    r = run_cli("build", "--root", root, "--mode", mode, "--count", 1000, "--depth", 5, "--cpus", 2,
                "--nodes", 1, "--seed", 7)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) == 1 and "cgroups=1000" in r.stdout
    assert os.path.isfile(root / fcg.STATE_FILE) and os.path.isfile(root / fcg.MEMINFO_FILE)
    assert sorted(os.listdir(tmp_path)) == ["cg"]  # no staging left beside ROOT
    assert detect_layout(str(root)) == mode

    fs = fcg.FakeCgroupFS.open(root)
    paths = fs.paths()
    assert len(paths) == 1001
    depths = {p.count("/") for p in paths if p != "/"}
    assert depths == {1, 2, 3, 4, 5}
    assert sum(1 for p in paths if p.count("/") == 1) <= 10  # a few top-level slices, like real hosts
    assert any(p.startswith("/system.slice/") and p.endswith(".service") for p in paths)
    assert any(p.endswith(".scope") for p in paths)
    for t in fs.trees:
        assert walk_cgroups(fs.tree_root(t)) == set(fs.paths(t))
    for p in random.Random(1).sample(paths, 40) + ["/"]:
        check_against_expected(fs, p)

    # same seed, same tree
    r2 = run_cli("build", "--root", tmp_path / "again", "--mode", mode, "--count", 1000, "--depth", 5,
                 "--seed", 7)
    assert r2.returncode == 0, r2.stderr
    assert fcg.FakeCgroupFS.open(tmp_path / "again").paths() == paths

    # expected: JSON, the same as the API's
    leaf = max(paths, key=lambda p: p.count("/"))
    r = run_cli("expected", "--root", root, "--path", leaf)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(json.dumps(fs.expected(leaf)))

    # churn continues from the state and leaves a consistent tree
    cpu_before = fs.expected("/")["cpu_usage_ns"]
    r = run_cli("churn", "--root", root, "--seconds", 1.5, "--rate", 200, "--seed", 3)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("fakecg: churn") and "ops=" in r.stdout
    fs = fcg.FakeCgroupFS.open(root)
    assert fs.expected("/")["cpu_usage_ns"] > cpu_before
    for t in fs.trees:
        assert walk_cgroups(fs.tree_root(t)) == set(fs.paths(t))
    for p in fs.paths():
        check_against_expected(fs, p)
    assert not [f for f in all_files(str(root)) if "fakecg-tmp" in f]


def test_cli_errors(tmp_path):
    r = run_cli("expected", "--root", tmp_path / "missing")
    assert r.returncode != 0
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    r = run_cli("build", "--root", tmp_path / "full", "--count", 3)
    assert r.returncode == 1 and "not empty" in r.stderr
    r = run_cli("build", "--root", tmp_path / "full", "--count", 3, "--force")
    assert r.returncode == 0, r.stderr
    r = run_cli("paths", "--root", tmp_path / "full")
    assert r.stdout.splitlines()[0] == "/" and len(r.stdout.splitlines()) == 4
