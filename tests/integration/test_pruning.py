"""Pruning against the kernel (root only): a cgroup's CPU and I/O
totals are not read while its nearest tracked ancestor's stood still since
before its last read (lib/core/sampler-prune.c, docs/counters.md,
"Pruning"). These tests make real cgroups, nested, with a sleeping task in
each leaf, so that a pass proves most of them unchanged, and check that every
value acctd serves is still the kernel's: a leaf deep under idle parents that
starts to run after many pruned passes is read at once, and the idle ones
hold exactly what the kernel says. Pruning made unconditional (every child
of an unchanged parent skipped whatever it read before) or wrong (a parent's
change not seen) fails them: the running leaf keeps its old value."""
import os
import subprocess
import sys
import time

import pytest

import acctd
from test_real_sampling import cgs, layout  # noqa: F401 (the fixture)

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups")

# Waits on stdin for a number of CPU seconds to burn, burns them, says
# "done" and waits again; exits when stdin closes.
BURNER = r"""
import sys, time
for line in sys.stdin:
    t = time.process_time()
    while time.process_time() - t < float(line):
        pass
    print("done", flush=True)
"""

LEAVES = ["a%d/b%d/leaf" % (i, j) for i in range(3) for j in range(3)]


def cpu_of(doc, path):
    for c in doc["cgroups"]:
        if c["path"] == path and c["state"] == "live":
            v = c["values"].get("cpu.usage")
            return None if v is None else v["value"]
    return None


def parts(doc, part):
    return doc.get("pass", {}).get("parts", {}).get(part, {})


def settled_cpu(cgs, rel, pid, timeout=30):
    """The cgroup's CPU time once the burner sleeps again and the value
    stands still: after printing "done" it still runs until it blocks on
    stdin, and that last stretch is charged when it blocks (later still on
    a busy machine), so the value read right after "done" can be short."""
    end = time.monotonic() + timeout
    last = None
    while True:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        now = cgs.cpu_usec(rel)
        if state == "S" and now == last:
            return now
        assert time.monotonic() < end, "the burner did not settle (state %s, %s then %s)" % (state, last, now)
        last = now
        time.sleep(0.2)


@pytest.fixture
def tree(cgs, tmp_path):  # noqa: F811 (pytest's fixture by name)
    """The nested tree with a sleep in every leaf and a waiting burner in
    a1/b1/late; the burner is returned with the tree."""
    cgs.mkdir()
    sleeps = []
    for rel in LEAVES + ["a1/b1/late"]:
        parts_ = rel.split("/")
        for k in range(1, len(parts_) + 1):
            cgs.mkdir("/".join(parts_[:k]))
    try:
        for rel in LEAVES:
            p = subprocess.Popen(["sleep", "3600"])
            sleeps.append(p)
            cgs.attach(rel, p.pid)
        burner = subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        sleeps.append(burner)
        cgs.attach("a1/b1/late", burner.pid)
        yield cgs, burner
    finally:
        for p in sleeps:
            p.kill()
            p.wait()


def test_deep_leaf_read_when_it_runs_after_pruned_passes(tree, tmp_path):
    cgs, burner = tree
    P = cgs.path()
    late = P + "/a1/b1/late"
    conf = acctd.fast_config(tmp_path, sampling__fast_interval="200ms", sampling__slow_interval="1h",
                             cgroups__include=P + "*")
    with acctd.Daemon(tmp_path, None, conf) as d:
        # Pruning at work: the idle leaves (and their parents) are proven
        # unchanged by their ancestors.
        d.wait(lambda doc: parts(doc, "cpu").get("pruned", 0) >= len(LEAVES), timeout=60,
               what="a pass that pruned the idle leaves' CPU")
        for round_ in range(3):
            # Several passes in which the late leaf was pruned too...
            d.wait(lambda doc: cpu_of(doc, late) == cgs.cpu_usec("a1/b1/late") and
                   parts(doc, "cpu").get("pruned", 0) >= len(LEAVES) + 1, timeout=60,
                   what="the waiting leaf's CPU time equal to the kernel's, pruned")
            d.next_state(passes=3, timeout=60)
            # ...then it runs, deep under parents that were idle.
            burner.stdin.write("0.2\n")
            burner.stdin.flush()
            assert burner.stdout.readline().strip() == "done"
            kernel = settled_cpu(cgs, "a1/b1/late", burner.pid)
            d.wait(lambda doc: cpu_of(doc, late) == kernel, timeout=30,
                   what="round %d: the leaf's CPU time after it ran (%d us, the kernel's)" % (round_, kernel))
        # Every idle leaf serves exactly the kernel's CPU time (they stand still).
        doc = d.next_state(passes=2, timeout=60)
        for rel in LEAVES:
            assert cpu_of(doc, P + "/" + rel) == cgs.cpu_usec(rel), rel


def test_status_and_metrics_say_what_was_pruned(tree, tmp_path):
    cgs, _ = tree
    P = cgs.path()
    conf = acctd.fast_config(tmp_path, sampling__fast_interval="200ms", sampling__slow_interval="1h",
                             cgroups__include=P + "*")
    with acctd.Daemon(tmp_path, None, conf) as d:
        doc = d.wait(lambda doc: parts(doc, "cpu").get("pruned", 0) >= len(LEAVES), timeout=60,
                     what="a pass that pruned the idle leaves' CPU")
        live = sum(1 for c in doc["cgroups"] if c["state"] == "live")
        cpu = parts(doc, "cpu")
        assert cpu["read"] + cpu["pruned"] + cpu["skipped"] == live, doc["pass"]
        ctl = os.environ.get("ACCTCTL") or os.path.join(acctd.ROOT, "build", "daemon", "acctctl", "acctctl")
        out = subprocess.run([ctl, "--address=unix:" + d.socket, "status"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        assert "Last reads:" in out.stdout and "pruned" in out.stdout, out.stdout
