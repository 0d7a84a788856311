"""What acctd presents for values it never read and for the root, on this
host's real cgroups (as root; the cgroup without CPU accounting needs a v1
memory hierarchy) and on fake trees of each layout.

A cgroup that exists only in the v1 memory hierarchy has no CPU accounting:
its CPU time, CPU rate and their averages are absent everywhere (null in the
state file and the API, `-` in acctctl's tables, no series in /metrics),
never 0. The root's memory is one figure everywhere (list, show, status,
/metrics, the state file), never below the sum of its top-level children."""
import json
import os
import re
import subprocess
import time

import pytest

import acctd
from test_acctctl import base_env, run_ctl
from test_metrics import Metrics, free_port, series

needs_root = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create real cgroups")

V1_MEMORY = "/sys/fs/cgroup/memory"


def v1_only_dir(name):
    """Create NAME in the v1 memory hierarchy only; its path, or skip."""
    if not os.path.exists(os.path.join(V1_MEMORY, "memory.usage_in_bytes")):
        pytest.skip("no v1 memory hierarchy here (a cgroup without CPU accounting needs one)")
    for other in ("/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(other, name)):
            pytest.skip("%s exists in %s too" % (name, other))
    path = os.path.join(V1_MEMORY, name)
    os.mkdir(path)
    return path


@pytest.fixture
def memory_only():
    name = "i11-present-memonly-%d" % os.getpid()
    path = v1_only_dir(name)
    try:
        yield "/" + name
    finally:
        os.rmdir(path)


def start(tmp_path, **config):
    port = free_port()
    sock = str(tmp_path / "api.sock")
    d = acctd.Daemon(tmp_path, None, acctd.fast_config(tmp_path, metrics__families="all", **config),
                     extra=["--metrics-listen", "127.0.0.1:%d" % port, "--socket", sock])
    return d, Metrics(port), "unix:" + sock


def live(doc, path):
    for c in doc["cgroups"]:
        if c["path"] == path and c["state"] == "live":
            return c
    return None


def list_row(text, path):
    """The cells of `path`'s row in `acctctl list --no-legend` (flat)."""
    for line in text.splitlines():
        cells = line.split()
        if cells and cells[0] == path:
            return cells
    raise AssertionError("%s not in list output:\n%s" % (path, text))


@needs_root
def test_no_cpu_accounting_is_absent(memory_only, tmp_path):
    d, metrics, address = start(tmp_path)
    with d:
        metrics.wait()
        # the cgroup read (memory), and the root's CPU rate computed (two readings)
        doc = d.wait(lambda doc: live(doc, memory_only)["values"]["memory"] is not None
                     and live(doc, "/")["cpu_rate_cores"] is not None, what="memory and the root's rate")
        doc = d.next_state(3)
        cg = live(doc, memory_only)
        assert cg["hierarchies"] == ["memory"], cg["hierarchies"]
        assert cg["values"]["memory"] is not None
        assert cg["values"]["cpu.usage"] is None
        assert cg["cpu_rate_cores"] is None, cg["cpu_rate_cores"]
        # the control: a cgroup with CPU accounting has its rate
        assert live(doc, "/")["cpu_rate_cores"]["rate"]["value"] >= 0

        # API: Get and List
        got = run_ctl(["--json=short", "show", memory_only], address)
        assert got.returncode == 0, got.stderr
        rec = json.loads(got.stdout)
        assert rec["cpu_rate_cores"] is None
        lst = run_ctl(["--json=short", "list", memory_only], address)
        assert lst.returncode == 0, lst.stderr
        entry = [c for c in json.loads(lst.stdout) if c["path"] == memory_only][0]
        assert entry["cpu_rate"] is None, entry
        assert entry["memory"] is not None

        # acctctl tables: "-", not 0.00
        env = base_env(COLUMNS="250")
        text = run_ctl(["--no-legend", "list", "--depth=0", "-o", "cgroup,cpu", memory_only], address, env=env).stdout
        cells = list_row(text, memory_only)
        # CGROUP CPU (-o: counting cells from the end of the default columns
        # broke whenever a column was added)
        cpu = cells[1]
        assert cpu == "-", "CPU column %r in %r" % (cpu, cells)
        show = run_ctl(["show", memory_only], address, env=env).stdout
        m = re.search(r"^\s*CPU rate:\s*(.*)$", show, re.M)
        assert m and m.group(1).strip() == "-", show
        assert re.search(r"^cpu\.usage\s+-\s+never read", show, re.M), show

        # /metrics: no series for it, while the root has one
        page, _ = metrics.page()
        assert memory_only in series(page, "acctd_memory_bytes")
        assert memory_only not in series(page, "acctd_cpu_rate_cores"), \
            "invented CPU rate %r" % series(page, "acctd_cpu_rate_cores").get(memory_only)
        assert memory_only not in series(page, "acctd_cpu_rate_average_cores")
        assert "/" in series(page, "acctd_cpu_rate_cores")


# ---- the root's memory ---------------------------------------------------------------

def top_level_sum(cgroups, memory):
    """Sum of memory(c) over the live top-level cgroups that have it."""
    return sum(memory(c) for c in cgroups
               if c["path"] != "/" and c["path"].count("/") == 1 and c["state"] == "live" and memory(c) is not None)


@needs_root
def test_root_memory_real_host(tmp_path):
    """On this host's layout the root's memory is never below the sum of its
    top-level children, and the state file, List, Get, Status and /metrics
    give the same figure for it (each compared within one pass).

    Passes every 2 s, not the suite's 100 ms, and no walks alone between
    them (bpf_interval 0; the root follows those too, see
    test_bpf_collector.test_root_memory_follows_walks): three acctctl runs
    must fit between two moves of the root, and under TSan on a busy machine
    they take longer than 100 ms (in one run all 20 tries straddled a pass)."""
    d, metrics, address = start(tmp_path, sampling__fast_interval="2s", sampling__slow_interval="2s",
                                sampling__bpf_interval="0")
    with d:
        metrics.wait()
        doc = d.next_state(2)
        root = acctd.value(live(doc, "/"), "memory")
        assert root is not None, live(doc, "/")
        top = top_level_sum(doc["cgroups"], lambda c: acctd.value(c, "memory"))
        assert root >= top, "root %d < its top level %d" % (root, top)
        # the state file's Status document is written with the same pass
        assert doc["reconciliation"]["root_memory"] == root

        # List: one reply holds the root and its children. The sampler
        # writes while the reply is read: a reply in which a child is younger
        # than the root's figure (aged as its oldest part) may hold a child's
        # new value beside the root's old one, and is asked again.
        mem = lambda r: r["memory"]["value"] if r["memory"] else None
        for _ in range(20):
            lst = run_ctl(["--json=short", "list", "--depth=1"], address)
            assert lst.returncode == 0, lst.stderr
            rows = json.loads(lst.stdout)
            root_row = [r for r in rows if r["path"] == "/"][0]
            if mem(root_row) >= top_level_sum(rows, mem):
                break
            assert any(r["memory"]["age_us"] < root_row["memory"]["age_us"] for r in rows
                       if r["path"] != "/" and r["memory"]), rows
        else:
            pytest.fail("the root stayed below its top level in 20 Lists: %r" % rows)

        # Status and Get between two Status calls of the same pass agree
        for _ in range(20):
            s1 = json.loads(run_ctl(["--json=short", "status"], address).stdout)
            got = json.loads(run_ctl(["--json=short", "show", "/"], address).stdout)
            s2 = json.loads(run_ctl(["--json=short", "status"], address).stdout)
            r1, r2 = s1["reconciliation"], s2["reconciliation"]
            if r1["passes"] == r2["passes"] and r1["root_memory"] == r2["root_memory"]:
                assert got["values"]["memory"]["value"] == s1["reconciliation"]["root_memory"], (got, s1)
                break
        else:
            pytest.fail("no two Status calls within one pass")

        # /metrics: the root's series and the reconciliation's root figure
        for _ in range(20):
            page, _ = metrics.page()
            a = series(page, "acctd_memory_bytes").get("/")
            b = [v for k, v in series(page, "acctd_reconcile_root_memory_bytes").items()]
            if a is not None and b and a == b[0]:
                break
        else:
            pytest.fail("/metrics: root %r, reconciliation %r" % (a, b))


@pytest.mark.parametrize("fakecg", ["v2", "hybrid", "legacy"], indirect=True)
def test_root_memory_layouts(fakecg, tmp_path):
    """v2: the root has no memory.current, so its memory is the sum of the
    top level; v1: its own usage_in_bytes when that is the larger (a fake
    tree's root charges pages of its own)."""
    fs = fakecg
    fs.mkdir("/a.slice/x.service", memory=8 << 20, procs=[10])
    fs.mkdir("/b.slice", memory=4 << 20, procs=[11])
    if fs.mode != "v2":
        fs.set_memory("/", 2 << 20)
    doc = acctd.dump(fs.root)
    cgs = acctd.by_path(doc)
    top = fs.expected("/a.slice")["memory_bytes"] + fs.expected("/b.slice")["memory_bytes"]
    want = top if fs.mode == "v2" else fs.expected("/")["memory_bytes"]
    assert want >= top
    assert acctd.value(cgs["/"], "memory") == want
    assert doc["reconciliation"]["root_memory"] == want
    if fs.mode == "v2":
        # a --cgroup-root tree whose root is a cgroup with its own counter
        # (the kernel cannot be made to give a hybrid host a v2 memory
        # controller): its memory.current, which holds the top level and more
        with open(os.path.join(fs.root, "memory.current"), "w") as f:
            f.write("%d\n" % (top + (3 << 20)))
        cgs = acctd.by_path(acctd.dump(fs.root))
        assert acctd.value(cgs["/"], "memory") == top + (3 << 20)


@pytest.mark.parametrize("fakecg", ["v2", "hybrid"], indirect=True)
def test_working_set_needs_inactive_file(fakecg, tmp_path):
    """The working set is memory minus inactive_file: without a memory.stat to
    give inactive_file it is absent, not the memory itself."""
    fs = fakecg
    fs.mkdir("/a.service", memory=8 << 20, procs=[10])
    fs.mkdir("/b.service", memory=8 << 20, procs=[11])
    fs.vanish("/a.service", "memory.stat")
    cgs = acctd.by_path(acctd.dump(fs.root))
    assert acctd.value(cgs["/a.service"], "memory") == fs.expected("/a.service")["memory_bytes"]
    assert cgs["/a.service"]["values"]["memory.working_set"] is None, cgs["/a.service"]["values"]
    assert cgs["/a.service"]["memory_stat"] is None
    # the control: with memory.stat it is there
    assert acctd.value(cgs["/b.service"], "memory.working_set") is not None
