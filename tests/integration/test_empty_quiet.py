"""Empty cgroups that stay empty cost nothing (root only, the BPF collector):
a cgroup read empty from its cgroup.events, its final values read and its
memory.stat showing no page still to be written back, is not read again,
not even its cgroup.events, while its watch (inotify IN_MODIFY of the
unified tree's cgroup.events) and its memcg record say nothing
(lib/core/sampler-prune.c, sampler_empty_quiet(); docs/counters.md, "Empty
cgroups"). These tests make real empty cgroups and check that they are not
read, and that every value acctd serves for them stays the kernel's when
something does happen:
- a task moved into a long-empty cgroup (every tree) is seen populated, and
  its CPU time served exactly;
- a task placed in the v1 cpuacct tree alone (no watch hears it) is served
  its exact CPU time: CPU time is pruned, never skipped;
- a cgroup emptied with dirty pages is read until they are written back,
  when memory.stat's dirty pages fall without any task (the write-back's I/O
  may be charged to the cgroup then: on v2 with the io controller it is).
The load average is off in each daemon and the census rare (rescan_interval
1h), so that the load pass's threads and the census's walks (other wakes) do
not hide a missed one. Each test but the last fails with the
mistake it names planted (see the docstrings)."""
import os
import subprocess
import sys

import pytest

import acctd
from test_pruning import BURNER, settled_cpu
from test_real_sampling import cgs, layout  # noqa: F401 (the fixture)

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups")

EMPTY = ["e%d" % i for i in range(12)]


def record(doc, path):
    for c in doc["cgroups"]:
        if c["path"] == path and c["state"] == "live":
            return c
    return None


def cpu_of(doc, path):
    c = record(doc, path)
    v = c and c["values"].get("cpu.usage")
    return None if v is None else v["value"]


def full_pass(doc, n):
    """The last pass read the whole tree (not a pass of queued cgroups)."""
    p = doc.get("pass", {})
    return p.get("cgroups", 0) >= n


def conf(tmp_path, cgs):
    return acctd.fast_config(tmp_path, sampling__fast_interval="200ms", sampling__slow_interval="1s",
                             sampling__rescan_interval="1h",
                             sampling__load_average="no", cgroups__include=cgs.path() + "*")


@pytest.fixture
def tree(cgs):  # noqa: F811 (pytest's fixture by name)
    """P with EMPTY children that stay empty and `busy` with a sleep."""
    cgs.mkdir()
    for rel in EMPTY + ["busy"]:
        cgs.mkdir(rel)
    procs = []
    try:
        p = subprocess.Popen(["sleep", "3600"])
        procs.append(p)
        cgs.attach("busy", p.pid)
        yield cgs, procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def quiet_daemon(d, n):
    """Wait for a full pass that left the empty cgroups unread; skip where
    the memcg hierarchy is not read by the BPF collector (then each empty
    cgroup's cgroup.events is read, as before)."""
    doc = d.wait(lambda doc: full_pass(doc, n), timeout=60, what="a full pass")
    if doc["pass"].get("bpf") is None:
        pytest.skip("the BPF collector does not run here (collector = auto chose files)")
    return d.wait(lambda doc: full_pass(doc, n) and doc["pass"].get("empty_unread", 0) >= len(EMPTY), timeout=60,
                  what="a full pass that read none of the %d empty cgroups" % len(EMPTY))


def test_empty_cgroups_are_not_read(tree, tmp_path):
    """Planted: sampler_empty_quiet() always false -> empty_unread stays 0."""
    cgs, _ = tree
    n = len(EMPTY) + 2
    with acctd.Daemon(tmp_path, None, conf(tmp_path, cgs)) as d:
        doc = quiet_daemon(d, n)
        # Their values are the kernel's all the same, and as young as the pass.
        for rel in EMPTY:
            c = record(doc, cgs.path(rel))
            assert c["populated"] is False, c
            assert cpu_of(doc, cgs.path(rel)) == cgs.cpu_usec(rel), rel


def test_task_moved_into_long_empty_cgroup(tree, tmp_path):
    """The change is announced by the unified tree's watch (and, within
    10 s, the unified walk of the pressure witness would show it too).
    Planted: a quiet cgroup woken neither by an announced change nor by a
    record (populated_changes and the records not looked at) -> it stays
    unread, served empty while a task is in its unified cgroup."""
    cgs, procs = tree
    n = len(EMPTY) + 2
    target = cgs.path("e3")
    with acctd.Daemon(tmp_path, None, conf(tmp_path, cgs)) as d:
        quiet_daemon(d, n)
        d.next_state(passes=5, timeout=60)  # long empty: several unread passes
        burner = subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        procs.append(burner)
        # The unified tree alone first: only its watch can tell (the memcg
        # record says empty, no CPU time moves in the cpuacct tree).
        with open(cgs.L["unified"] + target + "/cgroup.procs", "w") as f:
            f.write(str(burner.pid))
        d.wait(lambda doc: record(doc, target)["populated"] is True, timeout=30,
               what="the task moved into %s (unified tree) seen" % target)
        cgs.attach("e3", burner.pid)  # every tree
        burner.stdin.write("0.2\n")
        burner.stdin.flush()
        assert burner.stdout.readline().strip() == "done"
        kernel = settled_cpu(cgs, "e3", burner.pid)
        d.wait(lambda doc: cpu_of(doc, target) == kernel, timeout=30,
               what="its CPU time after it ran (%d us, the kernel's)" % kernel)


def test_v1_only_task_cpu_served(tree, tmp_path):
    """A task in the v1 cpuacct tree alone: no watch hears it, its memcg
    record says empty. Planted: the quiet pass skips CPU time instead of
    pruning it (and so never sees it move) -> the old CPU time is served."""
    cgs, procs = tree
    cpu_dir = cgs.L["cpu"][0]
    if cpu_dir == cgs.L["unified"]:
        pytest.skip("no v1 cpuacct tree here (CPU time from the unified cpu.stat)")
    n = len(EMPTY) + 2
    target = cgs.path("e5")
    with acctd.Daemon(tmp_path, None, conf(tmp_path, cgs)) as d:
        quiet_daemon(d, n)
        d.next_state(passes=5, timeout=60)
        burner = subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        procs.append(burner)
        with open(cpu_dir + target + "/cgroup.procs", "w") as f:
            f.write(str(burner.pid))
        for round_ in range(2):
            burner.stdin.write("0.2\n")
            burner.stdin.flush()
            assert burner.stdout.readline().strip() == "done"
            kernel = settled_cpu(cgs, "e5", burner.pid)
            d.wait(lambda doc: cpu_of(doc, target) == kernel, timeout=30,
                   what="round %d: its CPU time (%d us, the kernel's cpuacct)" % (round_, kernel))
        # Every other empty cgroup still serves the kernel's value.
        doc = d.next_state(passes=2, timeout=60)
        for rel in EMPTY:
            assert cpu_of(doc, cgs.path(rel)) == cgs.cpu_usec(rel), rel


def dirty_of(memstat):
    return sum(memstat.get(k, 0) for k in ("total_dirty", "total_writeback", "file_dirty", "file_writeback"))


def kernel_memstat(cgs, rel):
    d = cgs.L["memory"][0]
    return {k: int(v) for k, v in (l.split() for l in open(d + cgs.path(rel) + "/memory.stat"))}


def test_emptied_with_dirty_pages_read_until_written_back(tree, tmp_path):
    """Its memory.stat is read at least at the minute's refresh (the memory
    in use does not move when pages are written back) until it shows none
    dirty. Planted (quiet without looking at memory.stat's dirty pages),
    it still passed here: within its 150 s something else woke the cgroup
    (not found; reclaim moving its page cache by bytes_budget would), so it
    holds the served values to the kernel's, not the rule itself."""
    cgs, procs = tree
    n = len(EMPTY) + 2
    target = cgs.path("e7")
    data = os.path.join("/var/tmp", "acctd-i29-dirty-%d" % os.getpid())
    with acctd.Daemon(tmp_path, None, conf(tmp_path, cgs)) as d:
        quiet_daemon(d, n)
        writer = subprocess.Popen(["sh", "-c", "read x; dd if=/dev/zero of=%s bs=1M count=32 status=none" % data],
                                  stdin=subprocess.PIPE, text=True)
        procs.append(writer)
        try:
            cgs.attach("e7", writer.pid)
            writer.stdin.write("go\n")
            writer.stdin.close()
            assert writer.wait(60) == 0
            before = dirty_of(kernel_memstat(cgs, "e7"))
            if before == 0:
                pytest.skip("the kernel wrote the pages back already (nothing dirty to follow)")
            # Emptied with dirty pages: served as the kernel has them...
            d.wait(lambda doc: record(doc, target)["populated"] is False and
                   dirty_of(record(doc, target)["memory_stat"] or {}) > 0, timeout=30,
                   what="its dirty pages served while it is empty")
            d.next_state(passes=10, timeout=60)  # slow passes go by (slow_interval 1s)
            # ...then written back from outside it, with no task in it.
            fd = os.open(data, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            d.wait(lambda doc: dirty_of(record(doc, target)["memory_stat"] or {}) ==
                   dirty_of(kernel_memstat(cgs, "e7")), timeout=150,
                   what="its dirty pages after the write-back (the kernel's %d)" % dirty_of(kernel_memstat(cgs, "e7")))
        finally:
            if os.path.exists(data):
                os.unlink(data)
