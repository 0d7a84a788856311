"""acctd on this host's real cgroups (root only): a cgroup holding a process
that touches 64 MiB shows that memory within the bound of the kernel's own
reading, and its removal leaves a tombstone."""
import os
import signal
import subprocess
import sys
import time

import pytest

import acctd

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups")

TOUCH = r"""
import sys, time
sys.stdin.readline()                 # wait until moved into the cgroup
b = bytearray(64 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1                         # touch every page: charged to the cgroup
print("ready", flush=True)
time.sleep(600)
"""


def memory_hierarchy():
    """(directory to create cgroups in, usage file name) or None."""
    if os.path.exists("/sys/fs/cgroup/memory/memory.usage_in_bytes"):
        return "/sys/fs/cgroup/memory", "memory.usage_in_bytes"
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            if "memory" in f.read().split():
                with open("/sys/fs/cgroup/cgroup.subtree_control") as g:
                    if "memory" in g.read().split():
                        return "/sys/fs/cgroup", "memory.current"
    except OSError:
        pass
    return None


@pytest.fixture
def real_cgroup():
    h = memory_hierarchy()
    if h is None:
        pytest.skip("no cgroup memory controller available here (v1 memory or v2 with +memory)")
    base, usage = h
    name = "acctd-it-%d" % os.getpid()
    path = os.path.join(base, name)
    os.mkdir(path)
    child = subprocess.Popen([sys.executable, "-c", TOUCH], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(child.pid))
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "ready"
        yield {"name": "/" + name, "dir": path, "usage": os.path.join(path, usage), "child": child}
    finally:
        child.kill()
        child.wait()
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


def kernel_usage(cg):
    with open(cg["usage"]) as f:
        return int(f.read())


def find(doc, path, state="live"):
    for c in doc["cgroups"]:
        if c["path"] == path and c["state"] == state:
            return c
    return None


def test_memory_matches_kernel_within_bound(real_cgroup, tmp_path):
    cg = real_cgroup
    conf = acctd.write_config(str(tmp_path / "a.conf"), {"cgroups": {"include": cg["name"] + "*"}})
    before = kernel_usage(cg)
    doc = acctd.dump(config=conf)
    after = kernel_usage(cg)
    c = find(doc, cg["name"])
    assert c is not None, [x["path"] for x in doc["cgroups"]]
    mem = c["values"]["memory"]
    bound = mem.get("bound", 0)
    assert before >= 64 << 20
    assert min(before, after) - bound <= mem["value"] <= max(before, after) + bound, (before, after, mem)
    assert c["values"]["memory.peak"]["value"] >= 64 << 20
    assert c["memory_stat"] is not None
    # the child is the cgroup's task
    assert c["values"]["tasks"]["value"] >= 1


def test_removal_leaves_tombstone(real_cgroup, tmp_path):
    cg = real_cgroup
    conf = acctd.fast_config(tmp_path, cgroups__include=cg["name"] + "*")
    with acctd.Daemon(tmp_path, None, conf) as d:
        doc = d.wait(lambda doc: find(doc, cg["name"]) and find(doc, cg["name"])["values"]["memory"],
                     what="the real cgroup with its memory")
        assert find(doc, cg["name"])["values"]["memory"]["value"] >= 64 << 20
        cg["child"].kill()
        cg["child"].wait()
        for _ in range(50):
            try:
                os.rmdir(cg["dir"])
                break
            except OSError:
                time.sleep(0.1)
        doc = d.wait(lambda doc: find(doc, cg["name"], "dead"), what="tombstone of the removed cgroup")
        t = find(doc, cg["name"], "dead")
        assert t["values"]["memory"] is not None
        assert find(doc, cg["name"]) is None
