"""Fresh reads and motion, against the kernel on this host's real cgroups
(root only; docs/counters.md, "Staleness and fresh reads").

A child process in a real v1 memory cgroup (and cpuacct) allocates on
command. Get with precise must return the memory the kernel has now (between
the file read just before and just after, within the kernel's bound, age
below 100 ms) even when the fast interval is 10 s, while Get without precise
serves the last pass's value with its age; memory and cpu.usage carry
motion_per_s while they move; acctctl show --fresh prints the fresh read.
Each test runs with the BPF collector (default, attached as root) and with
collector = files. Cgroups are named bpf-fresh-PID-N and removed afterwards.
A wait has a deadline only so that a broken acctd fails instead of hanging."""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import acctd
from test_acctctl import base_env, run_ctl
from test_api_client import IFACE, Varlink, api_daemon, ok

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups")

CG = "/sys/fs/cgroup"
MEM = CG + "/memory"
CPU = CG + "/cpuacct"
MiB = 1 << 20

CHILD = r"""
import sys, time
held = []
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "alloc":
        held.append(bytearray(b"\x01") * (int(cmd[1]) << 20))  # written: every page charged
    elif cmd[0] == "wave":  # move memory and burn CPU for N seconds
        end = time.monotonic() + float(cmd[1])
        while time.monotonic() < end:
            held.append(bytearray(b"\x02") * (8 << 20))
            t = time.monotonic() + 0.05
            while time.monotonic() < t:
                pass
            if len(held) > 8:
                del held[:4]
    print("done", flush=True)
"""

_seq = [0]


def v1_layout():
    if not os.path.exists(MEM + "/memory.usage_in_bytes") or not os.path.exists(CPU + "/cpuacct.usage"):
        return False
    # v1 memory only: with memory in the v2 tree the v1 hierarchy is not read
    try:
        ctl = open(CG + "/unified/cgroup.controllers").read().split()
    except OSError:
        ctl = []
    return "memory" not in ctl


class Child:
    """A python process in cgroup bpf-fresh-PID-N of the v1 memory and cpuacct hierarchies."""

    def __init__(self):
        _seq[0] += 1
        self.path = "/bpf-fresh-%d-%d" % (os.getpid(), _seq[0])
        self.dirs = [MEM + self.path, CPU + self.path]
        for d in self.dirs:
            os.makedirs(d)
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        for d in self.dirs:
            with open(d + "/cgroup.procs", "w") as f:
                f.write(str(self.proc.pid))

    def do(self, *cmd):
        self.proc.stdin.write(" ".join(str(c) for c in cmd) + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "done"

    def memory(self):
        with open(self.dirs[0] + "/memory.usage_in_bytes") as f:
            return int(f.read())

    def close(self):
        self.proc.stdin.close()
        self.proc.kill()
        self.proc.wait()
        for d in reversed(self.dirs):
            for _ in range(200):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


@pytest.fixture
def child():
    if not v1_layout():
        pytest.skip("needs the v1 memory and cpuacct hierarchies (a hybrid host without v2 memory)")
    c = Child()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(params=["auto", "files"])
def collector(request):
    return request.param


def start(tmp_path, collector, fast):
    # bpf_interval 0: memory only at the passes, so that a served value can
    # be old (the default walk refreshes memory every 100 ms with BPF)
    conf = {"sampling__fast_interval": fast, "sampling__slow_interval": "30s", "sampling__collector": collector,
            "sampling__bpf_interval": "0"}
    return api_daemon(tmp_path, None, **conf)


def check_collector(d, collector):
    """With the default collector the memory hierarchy must be read through BPF here (root)."""
    if collector == "files":
        d.wait_log("collector = files")
        return
    d.wait_log("Collector for ")
    try:  # each hierarchy's line is logged at once, with the first
        d.wait_log("Collector for memory: bpf", timeout=5)
    except AssertionError:
        log = d.logtext()
        pytest.skip("the BPF collector does not serve the memory hierarchy here: %s"
                    % [l for l in log.splitlines() if "Collector for memory" in l])


def get(v, path, precise=False):
    return ok(v.call(IFACE + ".Get", {"cgroup": path, "precise": precise}))


def wait_get(v, path, pred, timeout, what):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        r = v.call(IFACE + ".Get", {"cgroup": path})
        if "error" not in r:
            last = r["parameters"]["cgroup"]
            if pred(last):
                return last
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s; last: %s" % (what, json.dumps(last)[:1500] if last else None))


def settled(c):
    """The first 100 MiB were read by a pass 1 to 6 s ago: the start-up passes
    are over and, at a 10 s interval, the next pass is seconds away."""
    m = c["values"]["memory"]
    return m is not None and m["value"] >= 100 * MiB and 1_000_000 <= m["age_us"] <= 6_000_000


def test_get_precise_reads_now(tmp_path, child, collector):
    """fast_interval 10 s: without precise the value is the last pass's, old;
    with precise it is the kernel's now."""
    child.do("alloc", 100)
    with start(tmp_path, collector, "10s") as (d, sock):
        check_collector(d, collector)
        with Varlink(sock) as v:
            wait_get(v, child.path, settled, 25, "a pass that read the first 100 MiB, 1 to 6 s ago")
            t0 = time.monotonic()
            child.do("alloc", 100)
            before = child.memory()
            fresh = get(v, child.path, precise=True)
            after = child.memory()
            served = get(v, child.path)
            since = time.monotonic() - t0

        m = fresh["cgroup"]["values"]["memory"]
        assert m.get("fresh") is True, m
        assert "not_fresh" not in fresh, fresh
        bound = m.get("bound", 0)
        assert bound > 0  # the charge stocks: the kernel's own uncertainty
        assert before - bound <= m["value"] <= after + bound, (before, m, after)
        assert m["value"] >= 200 * MiB - bound
        assert m["age_us"] < 100_000, m
        for q in ("cpu.usage", "cpu.user", "cpu.system"):
            assert fresh["cgroup"]["values"][q].get("fresh") is True, q
            assert fresh["cgroup"]["values"][q]["age_us"] < 100_000
        # other quantities are the ledger's, not marked fresh
        assert "fresh" not in (fresh["cgroup"]["values"]["memory.peak"] or {})

        s = served["cgroup"]["values"]["memory"]
        assert "fresh" not in s
        # read before the second allocation (no pass since: 10 s interval)
        assert s["age_us"] > since * 1e6, (s, since)
        assert s["value"] < before - 90 * MiB, (s, before)


def test_compare_precise(tmp_path, child, collector):
    child.do("alloc", 100)
    with start(tmp_path, collector, "10s") as (d, sock):
        check_collector(d, collector)
        with Varlink(sock) as v:
            wait_get(v, child.path, settled, 25, "a pass that read the first 100 MiB, 1 to 6 s ago")
            child.do("alloc", 100)
            threshold = 150 * MiB
            stale = ok(v.call(IFACE + ".Compare", {"cgroup": child.path, "quantity": "memory",
                                                    "threshold": threshold}))
            fresh = ok(v.call(IFACE + ".Compare", {"cgroup": child.path, "quantity": "memory",
                                                    "threshold": threshold, "precise": True}))
            tasks = ok(v.call(IFACE + ".Compare", {"cgroup": child.path, "quantity": "tasks",
                                                    "threshold": 0, "precise": True}))
    assert stale["result"] == "below" and "fresh" not in stale["value"], stale
    assert fresh["result"] == "above" and fresh["value"]["fresh"] is True, fresh
    assert fresh["value"]["age_us"] < 100_000 and fresh["precise"] is True
    # a quantity a fresh read does not give: the ledger's, as before
    assert "fresh" not in tasks["value"] and "not_fresh" not in tasks


def test_root_not_fresh(tmp_path, collector):
    if not v1_layout():
        pytest.skip("needs the v1 memory and cpuacct hierarchies")
    with start(tmp_path, collector, "1s") as (d, sock):
        with Varlink(sock) as v:
            r = get(v, "/", precise=True)
    assert "root" in r["not_fresh"]
    assert "fresh" not in (r["cgroup"]["values"]["memory"] or {})


def test_motion_and_show(tmp_path, child, collector):
    with start(tmp_path, collector, "200ms") as (d, sock):
        check_collector(d, collector)
        # Measured while the wave runs (the CPU rate is the last interval's),
        # long enough for a few passes on a loaded machine.
        wave = threading.Thread(target=child.do, args=("wave", 15))
        wave.start()
        try:
            with Varlink(sock) as v:
                c = wait_get(v, child.path, lambda c: c["values"]["memory"].get("motion_per_s", 0) > MiB
                             and c["values"]["cpu.usage"].get("motion_per_s", 0) > 100_000, 15, "motion measured")
        finally:
            wave.join()
        with Varlink(sock) as v:
            lst = ok(v.call(IFACE + ".List", {"prefix": child.path, "depth": 0}))["cgroups"]
        # memory moved by 8 MiB steps at ~20 per second; the CPU was busy
        assert c["values"]["memory"]["motion_per_s"] > MiB, c["values"]["memory"]
        assert c["values"]["cpu.usage"]["motion_per_s"] > 100_000, c["values"]["cpu.usage"]
        assert "motion_per_s" in lst[0]["memory"], lst
        # a limit does not move with usage: no motion there
        assert "motion_per_s" not in (c["values"]["memory.max"] or {})

        addr = "unix:" + sock
        p = run_ctl(["show", child.path], address=addr, env=base_env())
        assert p.returncode == 0, p.stderr
        assert "memory: may have moved by about" in p.stdout, p.stdout
        assert "cpu.usage: may have moved by about" in p.stdout, p.stdout
        p = run_ctl(["show", child.path, "--fresh"], address=addr, env=base_env())
        assert p.returncode == 0, p.stderr
        assert "memory: read fresh for this call" in p.stdout, p.stdout
        assert "cpu.usage: read fresh for this call" in p.stdout, p.stdout
        p = run_ctl(["show", "/", "--fresh"], address=addr, env=base_env())
        assert p.returncode == 0, p.stderr
        assert "Not read fresh: the root's memory is defined from its children's" in p.stdout, p.stdout


def test_fresh_reads_during_walks(tmp_path, child, collector):
    """Fresh reads on the API thread while the sampler walks every 10 ms
    (bpf_interval) and passes every 100 ms: each is the cgroup's own record,
    between the file readings around it, and the passes keep their values."""
    child.do("alloc", 50)
    conf = {"sampling__fast_interval": "100ms", "sampling__collector": collector, "sampling__bpf_interval": "10ms"}
    with api_daemon(tmp_path, None, **conf) as (d, sock):
        check_collector(d, collector)
        with Varlink(sock) as v:
            wait_get(v, child.path, lambda c: c["values"]["memory"] is not None, 10, "the child's cgroup")
            for i in range(300):
                before = child.memory()
                m = get(v, child.path, precise=True)["cgroup"]["values"]["memory"]
                after = child.memory()
                assert m.get("fresh") is True, (i, m)
                assert before - m.get("bound", 0) <= m["value"] <= after + m.get("bound", 0), (i, before, m, after)
            served = get(v, child.path)["cgroup"]["values"]["memory"]
            assert abs(served["value"] - child.memory()) <= 2 * served.get("bound", 0) + MiB, served
        assert d.proc.poll() is None
