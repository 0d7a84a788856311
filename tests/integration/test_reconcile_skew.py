"""children_memory accuses the kernel only of what the timing of the reads
cannot explain (issue 11, item 9).

On this host's real cgroups (root only): a parent holds many idle children
(their files are read between the parent's and the last child's, as on a busy
host) and one child that allocates and frees 512 MiB in a loop. A pass reads
the parent and that child milliseconds apart, enough for hundreds of MiB to
come or go in between, so judging on the pass's values gave false violations
(5 in 61 passes in the issue). The kernel is right here: no violation may be
reported over many passes.

On a fake tree where the kernel really is wrong (a parent that steadily holds
less than its children), the violation is still reported, every pass."""
import os
import subprocess
import sys
import time

import pytest

import acctd

ALLOC = r"""
import sys
sys.stdin.readline()                 # wait until moved into the cgroup
print("ready", flush=True)
while True:
    b = b"\x01" * (512 << 20)        # writes every page: charged, then uncharged
    del b
"""
IDLE_CHILDREN = 150
PASSES = 80


def memory_base():
    if os.path.exists("/sys/fs/cgroup/memory/memory.usage_in_bytes"):
        return "/sys/fs/cgroup/memory"
    try:
        with open("/sys/fs/cgroup/cgroup.subtree_control") as f:
            if "memory" in f.read().split():
                return "/sys/fs/cgroup"
    except OSError:
        pass
    return None


def rmdir_tree(path):
    for dirpath, dirnames, _ in os.walk(path, topdown=False):
        for _ in range(50):
            try:
                os.rmdir(dirpath)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


@pytest.fixture
def churning_family():
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    base = memory_base()
    if base is None:
        pytest.skip("no cgroup memory controller available here (v1 memory or v2 with +memory)")
    name = "acctd-i11-check-skew-%d" % os.getpid()
    parent = os.path.join(base, name)
    os.mkdir(parent)
    child = None
    try:
        if base == "/sys/fs/cgroup":
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                f.write("+memory")
        for i in range(IDLE_CHILDREN):
            os.mkdir(os.path.join(parent, "a%03d" % i))
        os.mkdir(os.path.join(parent, "zz-alloc"))
        child = subprocess.Popen([sys.executable, "-c", ALLOC], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        with open(os.path.join(parent, "zz-alloc", "cgroup.procs"), "w") as f:
            f.write(str(child.pid))
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "ready"
        yield "/" + name
    finally:
        if child:
            child.kill()
            child.wait()
        rmdir_tree(parent)


def test_no_false_alarm_on_real_churn(churning_family, tmp_path):
    conf = acctd.fast_config(tmp_path, cgroups__include=churning_family + "*", sampling__fast_interval="50ms",
                             sampling__slow_interval="150ms", sampling__load_average="no")
    with acctd.Daemon(tmp_path, None, conf) as d:
        d.wait(lambda doc: doc["daemon"]["passes"] >= 2, timeout=30, what="first passes")
        doc = d.next_state(passes=PASSES, timeout=120)
    rec = doc["reconciliation"]
    assert rec["checked_parents"] >= 1, rec
    assert rec["violations_total"]["children_memory"] == 0, (rec["passes"], rec["last_violation"])


@pytest.mark.parametrize("fakecg", [{"mode": "v2", "write_mode": "inplace"}], indirect=True)
def test_real_violation_still_reported(fakecg, tmp_path):
    fs = fakecg
    fs.mkdir("/p.slice", memory=1 << 20, procs=[10])
    fs.mkdir("/p.slice/a.service", memory=64 << 20, procs=[11])
    fs.mkdir("/p.slice/b.service", memory=32 << 20, procs=[12])
    # the kernel is wrong: the parent holds 16 MiB, its children 96 MiB
    fs.garbage("/p.slice", "memory.current", content="%d\n" % (16 << 20))
    with acctd.Daemon(tmp_path, fs.root, acctd.fast_config(tmp_path)) as d:
        d.wait(lambda doc: doc["daemon"]["passes"] >= 2, what="first passes")
        start = d.doc()["reconciliation"]
        doc = d.next_state(passes=5)
    rec = doc["reconciliation"]
    # every pass in between found it
    assert (rec["violations_total"]["children_memory"] - start["violations_total"]["children_memory"]
            >= rec["passes"] - start["passes"] - 1), (start, rec)
    assert rec["last_violation"].startswith("children_memory: /p.slice holds %d bytes" % (16 << 20)), rec
