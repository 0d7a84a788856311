"""cAdvisor's container_* families on acctd's /metrics (issue 15, "Dashboards
that already exist"), scraped by a real Prometheus and queried with the PromQL
of dashboards written for cAdvisor.

The queries are the panels of Grafana dashboard 315, "Kubernetes cluster
monitoring (via Prometheus)" by the Instrumentisto Team, the best-known
dashboard built on cAdvisor's id label (its $Node variable at its "All"
value, .*):
  Cluster memory usage:  sum (container_memory_working_set_bytes{id="/",kubernetes_io_hostname=~"^$Node$"})
  Cluster CPU usage (1m avg):  sum (rate (container_cpu_usage_seconds_total{id="/",kubernetes_io_hostname=~"^$Node$"}[1m]))
  All processes CPU usage (1m avg):
      sum (rate (container_cpu_usage_seconds_total{id!="/",kubernetes_io_hostname=~"^$Node$"}[1m])) by (id)
  All processes memory usage:
      sum (container_memory_working_set_bytes{id!="/",kubernetes_io_hostname=~"^$Node$"}) by (id)
and, by id instead of pod and container, kubernetes-mixin's CPU throttling
ratio (alert CPUThrottlingHigh: increase(throttled periods) / increase(periods)),
the memory limit panel (container_spec_memory_limit_bytes), and the disk read
and write rates (rate of container_fs_reads_bytes_total / _writes_bytes_total).

Each result is checked against the same query over acctd's own families
(evaluated by the same Prometheus at the same instant, so from the same
scrapes: equal, not close), and against the fake tree's model or the kernel's
files of a real cgroup.
"""
import os
import subprocess
import sys
import time

import pytest

import acctd
from test_metrics import PROMETHEUS, Prometheus, need, samples, start
from test_hostile_names import remove

NODE = ',kubernetes_io_hostname=~"^.*$"'  # dashboard 315's $Node at "All"
A = "/system.slice/a.service"
B = "/system.slice/b.service"
C = "/system.slice/c.service"
MiB = 1 << 20


def device_label(dev):
    """cAdvisor's device label of MAJ:MIN as acctd writes it: /dev/NAME from
    sysfs's uevent, else /dev/block/MAJ:MIN."""
    try:
        with open("/sys/dev/block/%s/uevent" % dev) as f:
            for line in f:
                if line.startswith("DEVNAME="):
                    return "/dev/" + line.strip().split("=", 1)[1]
    except OSError:
        pass
    return "/dev/block/" + dev


def a_real_device():
    """A block device of this host (MAJ:MIN) with a name in sysfs, or None."""
    try:
        for dev in sorted(os.listdir("/sys/dev/block")):
            if device_label(dev) != "/dev/block/" + dev:
                return dev
    except OSError:
        pass
    return None


def by(result, label):
    return {r["metric"].get(label): float(r["value"][1]) for r in result}


class Twin:
    """A query over cAdvisor's names and the same over acctd's, at one instant."""

    def __init__(self, prom):
        self.prom = prom
        self.t = time.time()

    def q(self, query):
        return self.prom.api("query", query=query, time="%.3f" % self.t)["result"]

    def same(self, cadvisor, own, label="id", own_label="cgroup"):
        got, want = by(self.q(cadvisor), label), by(self.q(own), own_label)
        assert got == want, "%s\n  %s\n!= %s\n  %s" % (cadvisor, got, own, want)
        return got


@pytest.mark.parametrize("fakecg", [{"mode": "v2", "write_mode": "inplace"},
                                    {"mode": "hybrid", "write_mode": "inplace"}], indirect=True, ids=["v2", "hybrid"])
def test_dashboard_queries_fake_tree(fakecg, tmp_path):
    need(PROMETHEUS)
    fs = fakecg
    real_dev = a_real_device()
    fake_dev = next("259:%d" % m for m in range(900, 1000) if not os.path.exists("/sys/dev/block/259:%d" % m))
    fs.mkdir(A, memory=64 * MiB, cpu_usec=2_500_000, procs=[10], memory_max=256 * MiB)
    fs.mkdir(B, memory=16 * MiB, cpu_usec=100_000, procs=[11])
    fs.mkdir(C, memory=8 * MiB, procs=[12])
    fs.mkdir("/user.slice/user-1000.slice", memory=8 * MiB, procs=[13])
    fs.add_throttling(A, periods=100, throttled=30, throttled_usec=4500)
    for dev in filter(None, (real_dev, fake_dev)):
        fs.add_io(A, dev, rbytes=1 << 20, wbytes=2 << 20, rios=10, wios=20)
    if fs.mode == "v2":
        fs.add_memory_events(A, max=4, oom_kill=1)

    # the switch: [metrics] families = default cadvisor
    conf = acctd.fast_config(tmp_path, metrics__families="default cadvisor")
    d, m = start(tmp_path, fs, config=conf)
    with d:
        d.wait(lambda doc: any(c["path"] == C for c in doc["cgroups"]), what="the tree")
        page = m.wait()
        s = samples(page)
        assert ("container_memory_usage_bytes", frozenset({("id", A)})) in s, "no cAdvisor families on the page"
        prom = Prometheus(tmp_path, m.port, text=True)  # text: the families the configuration chose
        try:
            prom.wait_up()
            # Counters move while Prometheus scrapes every second: CPU, CFS
            # periods (half of them throttled), disk I/O.
            for _ in range(6):
                fs.add_cpu(A, 300_000)
                fs.add_cpu(B, 50_000)
                fs.add_throttling(A, periods=10, throttled=5, throttled_usec=2000)
                fs.add_io(A, real_dev or fake_dev, rbytes=4096 * 25, wbytes=4096 * 50, rios=25, wios=50)
                time.sleep(1.0)
            fs.rmdir(C)  # a removed cgroup leaves the live families (cAdvisor's too)
            d.wait(lambda doc: any(c["path"] == C and c["state"] == "dead" for c in doc["cgroups"]),
                   what="C removed")
            time.sleep(2.5)  # two scrapes after: C's series are stale
            t = Twin(prom)

            # Dashboard 315: All processes CPU usage (1m avg)
            cpu = t.same('sum (rate (container_cpu_usage_seconds_total{id!="/"%s}[1m])) by (id)' % NODE,
                         'sum (rate (acctd_cpu_usage_seconds_total{cgroup!="/"}[1m])) by (cgroup)')
            assert cpu[A] > 0 and cpu[B] > 0, cpu
            # the same by the brief's query (services only)
            svc = t.same('sum(rate(container_cpu_usage_seconds_total{id=~"/system.slice/.*"}[1m])) by (id)',
                         'sum(rate(acctd_cpu_usage_seconds_total{cgroup=~"/system.slice/.*"}[1m])) by (cgroup)')
            assert svc[A] > 0 and svc[B] > 0, svc  # (C's samples of the last minute still count in rate())
            # Dashboard 315: Cluster CPU usage (1m avg): the root
            root_cpu = t.same('sum (rate (container_cpu_usage_seconds_total{id="/"%s}[1m]))' % NODE,
                   'sum (rate (acctd_cpu_usage_seconds_total{cgroup="/"}[1m]))', label=None, own_label=None)
            # Dashboard 315: All processes memory usage
            ws = t.same('sum (container_memory_working_set_bytes{id!="/"%s}) by (id)' % NODE,
                        'sum (acctd_memory_working_set_bytes{cgroup!="/"}) by (cgroup)')
            assert A in ws and B in ws and C not in ws, ws
            # Dashboard 315: Cluster memory usage (the root's working set, where acctd has one)
            root_ws = t.same('sum (container_memory_working_set_bytes{id="/"%s})' % NODE,
                   'sum (acctd_memory_working_set_bytes{cgroup="/"})', label=None, own_label=None)

            # Memory in use and limits, against the model
            e = fs.expected(A)
            usage = by(t.q('container_memory_usage_bytes{id=~"/system.slice/.*"}'), "id")
            assert usage == {A: e["memory_bytes"], B: fs.expected(B)["memory_bytes"]}, usage
            lim = by(t.q('container_spec_memory_limit_bytes{id=~"/system.slice/.*"}'), "id")
            assert lim == {A: 256 * MiB, B: 0}, lim  # 0: unlimited, as cAdvisor writes it
            assert by(t.q('container_memory_rss{id="%s"}' % A), "id") == {A: e["memory_anon_bytes"]}
            assert by(t.q('container_memory_cache{id="%s"}' % A), "id") == {A: e["memory_file_bytes"]}
            assert by(t.q('container_memory_swap{id="%s"}' % A), "id") == {A: e["memory_swap_bytes"]}
            t.same('container_memory_failcnt', 'acctd_memory_events_total{event="max"}')
            t.same('container_oom_events_total', 'acctd_memory_events_total{event="oom_kill"}')
            if fs.mode == "v2":
                assert by(t.q('container_memory_failcnt{id="%s"}' % A), "id") == {A: 4}
                assert by(t.q('container_oom_events_total{id="%s"}' % A), "id") == {A: 1}

            # kubernetes-mixin's CPU throttling ratio, by id: only A has CFS periods
            thr = t.same('sum(increase(container_cpu_cfs_throttled_periods_total[1m])) by (id)'
                         ' / sum(increase(container_cpu_cfs_periods_total[1m])) by (id)',
                         'sum(increase(acctd_cpu_throttled_periods_total[1m])) by (cgroup)'
                         ' / sum(increase(acctd_cpu_periods_total{cgroup="%s"}[1m])) by (cgroup)' % A)
            assert list(thr) == [A] and abs(thr[A] - 0.5) < 1e-9, thr
            cfs = by(t.q('container_cpu_cfs_throttled_seconds_total'), "id")
            assert cfs.keys() == {A} and abs(cfs[A] - (0.0045 + 6 * 0.002)) < 1e-9, cfs

            # Disk read and write rates, per device and summed
            for op, fam in (("read", "container_fs_reads_bytes_total"), ("write", "container_fs_writes_bytes_total")):
                t.same('sum(rate(%s{id=~"/system.slice/.*"}[1m])) by (id)' % fam,
                       'sum(rate(acctd_io_device_bytes_total{operation="%s",cgroup=~"/system.slice/.*"}[1m]))'
                       ' by (cgroup)' % op)
            # fakecg writes io.stat in v2 only: on hybrid there is no I/O
            # file, and the series are absent (not 0)
            devs = [dev for dev in (real_dev, fake_dev) if dev] if fs.mode == "v2" else []
            moved = real_dev or fake_dev
            reads = t.q('container_fs_reads_bytes_total{id="%s"}' % A)
            got = {r["metric"]["device"]: float(r["value"][1]) for r in reads}
            want = {device_label(dev): (1 << 20) + (6 * 4096 * 25 if dev == moved else 0) for dev in devs}
            assert got == want, (got, want)
            wios = {r["metric"]["device"]: float(r["value"][1])
                    for r in t.q('container_fs_writes_total{id="%s"}' % A)}
            assert wios == {device_label(dev): 20 + (6 * 50 if dev == moved else 0) for dev in devs}, wios

            # the removed cgroup: in acctd's removed_ families, in no container_ one
            assert not t.q('{__name__=~"container_.+",id="%s"}' % C)
            assert t.q('acctd_removed_cgroup_age_seconds{cgroup="%s"}' % C)
            print("fake %s: cluster cpu %s, cluster working set %s, cpu %s, working set %s, limits %s, "
                  "throttled ratio %s, reads %s" % (fs.mode, root_cpu, root_ws, cpu, ws, lim, thr, got))
        finally:
            prom.stop()

    # Off by default: a daemon with the default families has none of them.
    os.makedirs(str(tmp_path / "default"))
    d, m = start(tmp_path / "default", fs)
    with d:
        d.wait(lambda doc: any(c["path"] == A for c in doc["cgroups"]), what="the tree")
        assert "\ncontainer_" not in m.wait()
        assert "\ncontainer_memory_usage_bytes{id=" in m.page("/metrics?family=default,cadvisor")[0]


# ---- a real cgroup of this host ----------------------------------------------------

BUSY = r"""
import sys, time
sys.stdin.readline()                  # wait until moved into the cgroups
b = bytearray(32 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1                          # charged to the memory cgroup
print("ready", flush=True)
sys.stdin.readline()                  # wait until Prometheus scrapes
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:         # runs into the CPU quota
    pass
print("done", flush=True)
sys.stdin.readline()
"""


def v1_dir(controller):
    d = "/sys/fs/cgroup/" + controller
    return d if os.path.exists(os.path.join(d, "cgroup.procs")) and not os.path.exists(
        "/sys/fs/cgroup/cgroup.controllers") else None


def read(path):
    with open(path) as f:
        return f.read()


@pytest.fixture
def busy_cgroup():
    """A v1 cgroup (cpu with a 20% quota, cpuacct, memory with a 256 MiB
    limit) named after this branch and process, holding a process that burns
    CPU for 6 s when told to."""
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    ctrls = {c: v1_dir(c) for c in ("cpu", "cpuacct", "memory")}
    if not all(ctrls.values()):
        pytest.skip("needs the v1 cpu, cpuacct and memory hierarchies (this test reads a hybrid host's)")
    name = "cadvisor-it-%d" % os.getpid()
    dirs = {c: os.path.join(d, name) for c, d in ctrls.items()}
    child = None
    try:
        for d in dirs.values():
            os.mkdir(d)
        with open(os.path.join(dirs["cpu"], "cpu.cfs_quota_us"), "w") as f:
            f.write("20000")
        with open(os.path.join(dirs["memory"], "memory.limit_in_bytes"), "w") as f:
            f.write(str(256 * MiB))
        child = subprocess.Popen([sys.executable, "-c", BUSY, "6"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        for d in dirs.values():
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(child.pid))
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "ready"
        yield {"path": "/" + name, "dirs": dirs, "child": child}
    finally:
        if child:
            child.kill()
            child.wait()
        remove(list(dirs.values()))


def test_dashboard_queries_real_cgroup(busy_cgroup, tmp_path):
    """The throttling ratio, CPU rate and memory limit of a real, throttled
    cgroup; once its process stops, the values equal the kernel's files."""
    need(PROMETHEUS)
    cg = busy_cgroup
    p = cg["path"]
    conf = acctd.fast_config(tmp_path, metrics__families="default cadvisor", cgroups__include=p + "*",
                             sampling__fast_interval="250ms", sampling__slow_interval="500ms",
                             sampling__rescan_interval="30s")  # the host may hold 10,000 cgroups of benchmarks
    d, m = start(tmp_path, config=conf)
    with d:
        d.wait(lambda doc: any(c["path"] == p for c in doc["cgroups"]), timeout=60, what="the cgroup")
        m.wait(60)
        prom = Prometheus(tmp_path, m.port, text=True, interval="2s")
        try:
            prom.wait_up(120)
            cg["child"].stdin.write("burn\n")
            cg["child"].stdin.flush()
            assert cg["child"].stdout.readline().strip() == "done"  # 6 s of throttled CPU, scraped
            time.sleep(2.5)  # the counters stand still; acctd and Prometheus see their final values
            # On a loaded machine scrapes may be late: wait until Prometheus
            # holds the periods' growth (what the ratio divides by).
            grew = 'changes(container_cpu_cfs_periods_total{id="%s"}[1m])' % p
            end = time.monotonic() + 60
            while not (prom.query(grew) and float(prom.query(grew)[0]["value"][1]) >= 1):
                assert time.monotonic() < end, (prom.query('container_cpu_cfs_periods_total{id="%s"}[1m]' % p),
                                                prom.api("targets"))
                time.sleep(0.5)
            t = Twin(prom)
            thr = t.same('sum(increase(container_cpu_cfs_throttled_periods_total{id="%s"}[1m])) by (id)'
                         ' / sum(increase(container_cpu_cfs_periods_total{id="%s"}[1m])) by (id)' % (p, p),
                         'sum(increase(acctd_cpu_throttled_periods_total{cgroup="%s"}[1m])) by (cgroup)'
                         ' / sum(increase(acctd_cpu_periods_total{cgroup="%s"}[1m])) by (cgroup)' % (p, p))
            assert thr[p] > 0.5, thr  # a busy loop under a 20% quota is throttled in most periods
            cpu = t.same('sum (rate (container_cpu_usage_seconds_total{id!="/"%s}[1m])) by (id)' % NODE,
                         'sum (rate (acctd_cpu_usage_seconds_total{cgroup!="/"}[1m])) by (cgroup)')
            assert 0 < cpu[p] < 0.25, cpu  # at most the quota's 20% of a CPU, averaged
            t.same('sum (container_memory_working_set_bytes{id!="/"%s}) by (id)' % NODE,
                   'sum (acctd_memory_working_set_bytes{cgroup!="/"}) by (cgroup)')

            # against the kernel's files
            stat = dict(line.split() for line in read(os.path.join(cg["dirs"]["cpu"], "cpu.stat")).splitlines())
            one = lambda q: float(t.q(q)[0]["value"][1])  # noqa: E731
            assert one('container_cpu_cfs_periods_total{id="%s"}' % p) == int(stat["nr_periods"])
            assert one('container_cpu_cfs_throttled_periods_total{id="%s"}' % p) == int(stat["nr_throttled"])
            assert one('container_cpu_cfs_throttled_seconds_total{id="%s"}' % p) == \
                int(stat["throttled_time"]) // 1000 / 1e6  # ns, kept in microseconds
            usage_ns = int(read(os.path.join(cg["dirs"]["cpuacct"], "cpuacct.usage")))
            assert abs(one('container_cpu_usage_seconds_total{id="%s",cpu="total"}' % p) - usage_ns / 1e9) <= 1e-6
            assert one('container_spec_memory_limit_bytes{id="%s"}' % p) == \
                int(read(os.path.join(cg["dirs"]["memory"], "memory.limit_in_bytes"))) == 256 * MiB
            usage = one('container_memory_usage_bytes{id="%s"}' % p)
            assert usage == one('acctd_memory_bytes{cgroup="%s"}' % p)
            kernel = int(read(os.path.join(cg["dirs"]["memory"], "memory.usage_in_bytes")))
            assert abs(usage - kernel) <= 4 * MiB, (usage, kernel)  # the process holds its 32 MiB
            print("real cgroup %s: throttled ratio %.4f, cpu %.4f cores, periods %s, throttled %s, "
                  "usage %d (kernel %d)" % (p, thr[p], cpu[p], stat["nr_periods"], stat["nr_throttled"], usage, kernel))
        finally:
            prom.stop()
