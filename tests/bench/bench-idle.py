#!/usr/bin/env python3
"""Cost that follows change: acctd's steady cost on many idle (or a few busy) real cgroups.

acctd's CPU should follow what changes in the cgroups, not how many there
are. This builds real cgroups (nested A x B or flat N, one `sleep` per leaf,
optionally a share of busy leaves running ~10 ms of CPU a second), runs acctd
at its defaults (only `[cgroups] include = PREFIX*`, its own socket and
/metrics port, no history) in its own memory cgroup, and over a window
measures its CPU (% of one core), VmRSS, the memory charged to its memory
cgroup, the age p50/p95 of `memory` and `cpu.usage` of random leaves, and the
per-part pass figures of /metrics (`acctd_sampling_pass_cgroups`, "n/a" when
acctd has none). --cgtop runs `systemd-cgtop -d 1 -b` on the same tree for
comparison; --netdata runs Debian netdata's cgroups plugin when installed.

Root only (exit 77 otherwise). Everything it creates is removed at the end,
also on failure and on SIGINT/SIGTERM. See README.md, "Cost that follows
change: how to run".
"""

import argparse
import contextlib
import importlib.util
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
CGROOT = "/sys/fs/cgroup"
BUSY_MARK = "acctd-idle-bench-busy"  # in a busy leaf's `sh -c` script: ours


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# bench-sampling.py: hierarchy_dirs, rmdir_all, Daemon, CPU clocks, log;
# bench-collector.py: the Varlink client, sample_window (ages at random moments)
bc = load("bench_collector", "bench-collector.py")
bs = bc.bs
log = bs.log


# ---------------------------------------------------------------------------
# the tree

def parse_workload(text):
    """"nested:AxB" or "flat:N" -> (kind, parents, children)."""
    kind, _, size = text.partition(":")
    if kind == "nested":
        a, _, b = size.partition("x")
        return kind, int(a), int(b)
    if kind == "flat":
        return kind, 1, int(size)
    raise ValueError("workload %r: nested:AxB or flat:N" % text)


def busy_script(loops):
    # dash: a counted loop of ~10 ms, then a second's sleep; no python per leaf
    return ("while :; do i=0; while [ $i -lt %d ]; do i=$((i+1)); done; sleep 1; done # %s"
            % (loops, BUSY_MARK))


def calibrate_busy(target_s=0.010):
    """Loop count for about target_s of CPU in one round of busy_script():
    two counts, so that the shell's start-up cancels out."""
    def spent(n):
        c0 = os.times()
        subprocess.run(["sh", "-c", "i=0; while [ $i -lt %d ]; do i=$((i+1)); done" % n], check=True)
        c1 = os.times()
        return (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system)
    small, big = 20000, 220000
    per_loop = max(spent(big) - spent(small), 1e-3) / (big - small)
    return max(100, int(target_s / per_loop))


class Tree:
    """PREFIX/p-AAA/c-BBBBB (nested) or PREFIX/c-BBBBB (flat) in every
    hierarchy; every leaf holds a sleep, or a busy loop, that joined its
    cgroups before exec."""

    def __init__(self, prefix, kind, parents, children, hiers):
        self.prefix, self.hiers = prefix, hiers
        if kind == "nested":
            self.mids = ["p-%03d" % i for i in range(parents)]
            self.leaves = ["%s/c-%05d" % (p, j) for p in self.mids for j in range(children)]
        else:
            self.mids = []
            self.leaves = ["c-%05d" % j for j in range(children)]
        self.created, self.pids, self.busy = [], [], set()

    def create(self, busy_pct, loops, rng):
        t0 = time.monotonic()
        for h in self.hiers:
            for rel in [""] + self.mids + self.leaves:
                d = h + self.prefix + ("/" + rel if rel else "")
                os.mkdir(d)
                self.created.append(d)
        nbusy = round(len(self.leaves) * busy_pct / 100.0)
        self.busy = set(rng.sample(range(len(self.leaves)), nbusy))
        for i, leaf in enumerate(self.leaves):
            procs = [h + self.prefix + "/" + leaf + "/cgroup.procs" for h in self.hiers]
            argv = ["sh", "-c", busy_script(loops)] if i in self.busy else ["sleep", bs.SLEEP_ARG]
            pid = os.fork()
            if pid == 0:
                try:
                    for p in procs:
                        fd = os.open(p, os.O_WRONLY)
                        os.write(fd, b"0")
                        os.close(fd)
                    os.execvp(argv[0], argv)
                finally:
                    os._exit(127)
            self.pids.append(pid)
        # a leaf is in place once its exec is done (its cgroups joined before)
        deadline = time.monotonic() + 600
        for pid in self.pids:
            while True:
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        cmd = f.read()
                    if cmd.startswith(b"sleep\0") or BUSY_MARK.encode() in cmd:
                        break
                except FileNotFoundError:
                    raise RuntimeError("leaf process %d died before its exec" % pid)
                if time.monotonic() > deadline:
                    raise RuntimeError("leaf process %d did not start" % pid)
                time.sleep(0.001)
        log("created %d leaves (%d busy) in %d hierarchies in %.1fs" % (
            len(self.leaves), nbusy, len(self.hiers), time.monotonic() - t0))

    def busy_cpu_pct(self, window=5.0):
        """Mean CPU (% of a core) of one busy leaf, measured over window."""
        pids = [self.pids[i] for i in sorted(self.busy)][:50]
        if not pids:
            return None
        c0 = {p: bs.process_cpu_ns(p) for p in pids}
        t0 = time.monotonic()
        time.sleep(window)
        c1 = {p: bs.process_cpu_ns(p) for p in pids}
        dt = time.monotonic() - t0
        return 100.0 * sum(c1[p] - c0[p] for p in pids) / 1e9 / dt / len(pids)

    def destroy(self):
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in self.pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self.pids = []
        bs.rmdir_all(reversed(self.created))
        self.created = []


def remove_leftovers(prefix, hiers):
    """What a run killed hard left: our sleeps and busy loops, then the
    directories; anything else under PREFIX stops us."""
    bs.remove_leftovers(prefix, hiers, ours=lambda cmd: bs.is_our_sleep(cmd) or BUSY_MARK.encode() in cmd)


# ---------------------------------------------------------------------------
# acctd's own memory cgroup

class SelfCgroup:
    """A memory cgroup outside PREFIX for the process measured: what the
    kernel charges it (user and kernel memory) is read from there. A fresh
    one per process: page cache and slab objects stay charged to a cgroup
    after the process that caused them left."""

    def __init__(self, name):
        if os.path.exists(os.path.join(CGROOT, "cgroup.controllers")):
            self.dir, self.v2 = CGROOT + name, True
        else:
            self.dir, self.v2 = os.path.join(CGROOT, "memory") + name, False
        os.mkdir(self.dir)
        self.procs = os.path.join(self.dir, "cgroup.procs")

    def charge(self):
        """(total bytes, kernel bytes or None)."""
        def rd(f):
            with open(os.path.join(self.dir, f)) as fh:
                return int(fh.read())
        if self.v2:
            kernel = None
            with contextlib.suppress(OSError), open(os.path.join(self.dir, "memory.stat")) as fh:
                for line in fh:
                    if line.startswith("kernel "):
                        kernel = int(line.split()[1])
            return rd("memory.current"), kernel
        kmem = None
        with contextlib.suppress(OSError):
            kmem = rd("memory.kmem.usage_in_bytes")
        return rd("memory.usage_in_bytes"), kmem

    def remove(self):
        # its charge is reparented when it goes
        bs.rmdir_all([self.dir])


# ---------------------------------------------------------------------------
# acctd

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_text(tmp, name, collector, include, port):
    """acctd's defaults but for what must differ to run beside the host's."""
    return "\n".join([
        "[sampling]", "collector = %s" % collector, "bpf_pin_dir = %s" % os.path.join(tmp, "no-pins"),
        "[api]", "socket = %s" % os.path.join(tmp, name + ".sock"),
        "[metrics]", "listen = 127.0.0.1:%d" % port,
        "[history]", "enabled = no",
        "[cgroups]", "include = %s" % include]) + "\n"


def metric_samples(port, family, keys):
    """{(label values of keys...): value} of one family on /metrics, None
    when /metrics cannot be read or has none of it."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        if not line.startswith(family + "{"):
            continue
        labels, _, val = line.rpartition(" ")
        lab = dict(kv.split("=", 1) for kv in labels[labels.index("{") + 1:labels.rindex("}")].split(","))
        out[tuple(lab.get(k, "").strip('"') for k in keys)] = float(val)
    return out or None


def pass_counters(port):
    """{(part, outcome): cgroups} of the last full pass (the gauge
    acctd_sampling_pass_cgroups), None when absent."""
    return metric_samples(port, "acctd_sampling_pass_cgroups", ("part", "outcome"))


def kind_cpu(port):
    """{kind: CPU seconds} of the sampler's passes by kind
    (acctd_sampling_cpu_seconds_total: fast, slow, load, event, walk), None
    when absent."""
    s = metric_samples(port, "acctd_sampling_cpu_seconds_total", ("kind",))
    return {k[0]: v for k, v in s.items()} if s else None


def wait_values(vl, cgroups, timeout):
    """Seconds until every cgroup has a memory and a cpu.usage value."""
    t0 = time.monotonic()
    left = list(cgroups)
    while left:
        if time.monotonic() - t0 > timeout:
            raise RuntimeError("%d cgroups without memory or cpu.usage after %ds" % (len(left), timeout))
        still = []
        for cg in left:
            rec = vl.call("Get", cgroup=cg)["cgroup"]
            if bc.value(rec, "memory")[0] is None or bc.value(rec, "cpu.usage")[0] is None:
                still.append(cg)
        left = still
        if left:
            time.sleep(1)
    return time.monotonic() - t0


DISCOVERY_COUNTS = ("scans", "rescans", "census_checks", "census_differed")


def run_acctd(args, tmp, label, collector, tree, selfcg, res):
    name = "%s-%s" % (label.replace(":", "-"), collector)
    port = free_port()
    conf = config_text(tmp, name, collector, args.prefix + "*", port)
    d = bs.Daemon(args, tmp, name, conf, self_cgroups=[selfcg.procs])
    vl = drain = None
    try:
        d.start()
        res["ready_s"] = d.wait_ready(300)
        if res["ready_s"] is None:
            raise RuntimeError("acctd sent no READY=1 in 300 s; %s" % d.top_warning())
        pid = d.proc.pid
        drain = bc.Drain(d.sock)
        drain.start()
        vl = bc.Varlink(os.path.join(tmp, name + ".sock"))
        cgs = [args.prefix + "/" + leaf for leaf in tree.leaves]
        res["values_s"] = wait_values(vl, cgs, 600)
        time.sleep(args.warmup)  # past the first passes after the values came
        # acctd closes a connection idle for long (its API's idle timeout):
        # a new one after a long warm-up
        vl.close()
        vl = bc.Varlink(os.path.join(tmp, name + ".sock"))
        res["collectors"] = vl.call("Status")["status"].get("collectors")
        log("%s %s: measuring over %ds" % (label, collector, args.window))
        disc0 = vl.call("Status")["status"].get("discovery") or {}
        k0 = kind_cpu(port)
        c0, t0 = bs.process_cpu_ns(pid), time.monotonic()
        w = bc.sample_window(vl, cgs, args.window, 1.0, random.Random(1))
        c1, t1 = bs.process_cpu_ns(pid), time.monotonic()
        k1 = kind_cpu(port)
        p1 = pass_counters(port)
        # where the CPU went: the sampler's passes by kind, the rest (the
        # event loop, the API's replies to this benchmark's Gets) as "other"
        if k0 and k1:
            kinds = {k: 100.0 * (k1[k] - k0.get(k, 0.0)) / (t1 - t0) for k in k1}
            kinds["other"] = 100.0 * (c1 - c0) / 1e9 / (t1 - t0) - sum(kinds.values())
            res["cpu_pct_by_kind"] = kinds
        # the periodic rescan over the window: scans made, censuses that stood in for one
        disc1 = vl.call("Status")["status"].get("discovery") or {}
        res["discovery"] = {k: disc1[k] - disc0.get(k, 0) for k in DISCOVERY_COUNTS if k in disc1}
        res["cpu_pct"] = 100.0 * (c1 - c0) / 1e9 / (t1 - t0)
        res["window_s"] = t1 - t0
        res["rss_kib"] = bs.vm_rss_kib(pid)
        res["memcg_bytes"], res["memcg_kernel_bytes"] = selfcg.charge()
        res["gets"] = len(w["ages_mem_us"])
        for key, ages in (("memory", w["ages_mem_us"]), ("cpu", w["ages_cpu_us"])):
            res["age_%s_p50_ms" % key] = (bc.pct(ages, 50) or 0) / 1e3
            res["age_%s_p95_ms" % key] = (bc.pct(ages, 95) or 0) / 1e3
        fast = w["fast"]
        res["fast_passes"] = len(fast)
        res["fast_wall_us_p50"] = bs.median([p.get("wall_us") for p in fast])
        # the last full pass's cgroups per part and outcome (a gauge)
        res["pass_cgroups"] = {"%s/%s" % k: v for k, v in sorted(p1.items())} if p1 is not None else None
    finally:
        if vl:
            vl.close()
        if drain:
            drain.stop()
        d.stop()
        res["log_top_warning"] = d.top_warning()


def run_tool(argv, window, selfcg=None):
    """CPU (% of a core) and final RSS of a command run for window seconds
    (systemd-cgtop -b stops after one iteration when its output is not a
    terminal unless given -n)."""
    procs = selfcg.procs if selfcg else None

    def pre():
        if procs:
            with open(procs, "w") as f:
                f.write("0")

    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                         preexec_fn=pre)
    try:
        time.sleep(2)
        c0, t0 = bs.process_cpu_ns(p.pid), time.monotonic()
        time.sleep(window)
        c1, t1 = bs.process_cpu_ns(p.pid), time.monotonic()
        rss = bs.vm_rss_kib(p.pid)
        if p.poll() is not None:
            raise RuntimeError("%s exited early (%s)" % (argv[0], p.returncode))
        return {"cpu_pct": 100.0 * (c1 - c0) / 1e9 / (t1 - t0), "rss_kib": rss}
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


NETDATA = "/usr/sbin/netdata"


def netdata_conf(tmp, port, n, prefix):
    """netdata with its cgroups plugin only (cgroups.plugin runs inside the
    netdata process): v1 cgroups (`auto` picks v2 on a hybrid host and sees
    almost nothing), room for every cgroup, only ours charted."""
    d = os.path.join(tmp, "netdata")
    for sub in ("cache", "lib", "log", "run"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    plugins = ["proc", "diskspace", "tc", "idlejitter", "apps", "python.d", "charts.d", "go.d", "node.d",
               "ebpf", "statsd", "timex", "checks", "perf", "slabinfo", "nfacct", "fping", "ioping",
               "freeipmi", "cups", "debugfs", "xenstat", "systemd-journal", "netdata monitoring"]
    tag = prefix.strip("/").replace("/", "_")
    text = "\n".join(
        ["[global]", "run as user = root", "memory mode = ram", "update every = 1",
         "[directories]"] + ["%s = %s" % (k, os.path.join(d, v)) for k, v in (
             ("cache", "cache"), ("lib", "lib"), ("log", "log"), ("run", "run"))] +
        ["[logs]", "debug log = none", "error log = %s/log/error.log" % d, "access log = none",
         "[web]", "bind to = 127.0.0.1:%d" % port,
         "[ml]", "enabled = no", "[health]", "enabled = no",
         "[plugins]", "cgroups = yes", "enable running new plugins = no"] + ["%s = no" % p for p in plugins] +
        ["[plugin:cgroups]", "use unified cgroups = no", "max cgroups to allow = %d" % (n + 1000),
         "max cgroups depth to monitor = 10", "check for new cgroups every = 10",
         "enable by default cgroups matching = %s/* " % prefix,
         # both the path and the name must match (netdata renames each
         # cgroup with its cgroup-name.sh, a process per cgroup)
         "enable by default cgroups names matching = %s_* " % tag,
         "search for cgroups in subpaths matching = *"]) + "\n"
    path = os.path.join(d, "netdata.conf")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def netdata_seen(port, prefix):
    """(cgroups charted under prefix, seconds since the newest data of theirs)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/charts" % port, timeout=30) as r:
        charts = json.load(r).get("charts", {})
    tag = "cgroup_" + prefix.strip("/").replace("/", "_")
    names, last = set(), []
    for cid, c in charts.items():
        if cid.replace("-", "_").startswith(tag.replace("-", "_")):
            names.add(cid.split(".", 1)[0])
            if c.get("last_entry"):
                last.append(c["last_entry"])
    age = time.time() - max(last) if last else None
    return len(names), age


def run_netdata(tmp, n, prefix, window, selfcg, wait):
    """netdata's CPU, RSS, cgroups seen and data age over window seconds,
    measured once it charts the n leaves (and their parents) or after wait
    seconds: its discovery names every cgroup with cgroup-name.sh and looks
    for its network interfaces with cgroup-network, a few processes per
    cgroup, about 3.5 cgroups a second here, and charts none until it has
    named them all."""
    port = free_port()
    conf = netdata_conf(tmp, port, n, prefix)
    procs = selfcg.procs

    def pre():
        with open(procs, "w") as fh:
            fh.write("0")

    p = subprocess.Popen([NETDATA, "-D", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, preexec_fn=pre, start_new_session=True)
    out = {}
    try:
        started = time.monotonic()
        while True:
            time.sleep(5)
            if p.poll() is not None:
                raise RuntimeError("netdata exited (%s); see %s" % (p.returncode, conf))
            with contextlib.suppress(OSError, ValueError):
                if netdata_seen(port, prefix)[0] >= n:
                    break
            if time.monotonic() - started >= wait:
                break
        out["discovery_s"] = time.monotonic() - started
        c0, t0 = bs.process_cpu_ns(p.pid), time.monotonic()
        time.sleep(window)
        c1, t1 = bs.process_cpu_ns(p.pid), time.monotonic()
        out["cpu_pct"] = 100.0 * (c1 - c0) / 1e9 / (t1 - t0)
        out["rss_kib"] = bs.vm_rss_kib(p.pid)
        out["memcg_bytes"] = selfcg.charge()[0]
        try:
            seen, age = netdata_seen(port, prefix)
            out["cgroups_seen"], out["data_age_s"] = seen, age
            out["note"] = "cgroups seen %d (leaves %d, and their parents) after %d s, data age %s s" % (
                seen, n, out["discovery_s"], f(age))
        except (OSError, ValueError) as e:
            out["note"] = "API: %s" % e
    finally:
        # netdata's plugins are its children: end the session we started
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return out


# ---------------------------------------------------------------------------
# the report

def f(v, nd=1):
    return "-" if v is None else "{:,.{}f}".format(v, nd)


def counters_text(c):
    if c is None:
        return "n/a"
    return ", ".join("%s %.0f" % (k, v) for k, v in c.items())


def report(results):
    print("load average at start: %s; at end: %s" % (results["loadavg_start"], results["loadavg_end"]))
    print()
    print("| workload | collector | CPU % of a core | RSS MiB | memcg MiB (kernel) | age p50/p95 memory ms | "
          "age p50/p95 cpu.usage ms | last pass cgroups (part/outcome) |")
    print("|---|---|---|---|---|---|---|---|")
    for w in results["workloads"]:
        busy = " (%g%% busy, %s%% each)" % (w["busy_pct"], f(w.get("busy_leaf_cpu_pct"), 2)) if w["busy_pct"] else ""
        for c, r in w["runs"].items():
            if "error" in r and "cpu_pct" not in r:
                print("| %s%s | %s | error: %s |||||| " % (w["workload"], busy, c, r["error"]))
                continue
            mem = r.get("memcg_bytes")
            kern = r.get("memcg_kernel_bytes")
            print("| %s%s | %s | %s | %s | %s (%s) | %s / %s | %s / %s | %s |" % (
                w["workload"], busy, c, f(r.get("cpu_pct"), 2), f((r.get("rss_kib") or 0) / 1024),
                f(mem / 2**20 if mem is not None else None), f(kern / 2**20 if kern is not None else None),
                f(r.get("age_memory_p50_ms"), 0), f(r.get("age_memory_p95_ms"), 0),
                f(r.get("age_cpu_p50_ms"), 0), f(r.get("age_cpu_p95_ms"), 0),
                counters_text(r.get("pass_cgroups"))))
            kinds = r.get("cpu_pct_by_kind")
            if kinds:
                print("|  | %s, CPU %% by kind of pass: %s |||||| " % (
                    c, ", ".join("%s %.2f" % (k, v) for k, v in kinds.items())))
            disc = r.get("discovery")
            if disc:
                print("|  | %s, over the window: %s |||||| " % (
                    c, ", ".join("%s %d" % (k, disc[k]) for k in DISCOVERY_COUNTS if k in disc)))
        for tool in ("cgtop", "netdata"):
            t = w.get(tool)
            if t:
                print("| %s%s | %s | %s | %s | %s | | | %s |" % (
                    w["workload"], busy, tool, f(t.get("cpu_pct"), 2), f((t.get("rss_kib") or 0) / 1024),
                    f((t.get("memcg_bytes") or 0) / 2**20) if t.get("memcg_bytes") else "-", t.get("note", "")))


# ---------------------------------------------------------------------------

class Interrupted(BaseException):
    pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"), help="meson build directory (default: build)")
    ap.add_argument("--acctd", help="acctd binary (default: BUILD/daemon/acctd/acctd)")
    ap.add_argument("--workloads", default="nested:10x100,flat:1000",
                    help="comma-separated nested:AxB or flat:N (default nested:10x100,flat:1000)")
    ap.add_argument("--busy", type=float, default=0.0, help="percent of leaves busy (~10 ms of CPU a second each)")
    ap.add_argument("--collector", choices=("files", "bpf", "both"), default="both")
    ap.add_argument("--window", type=int, default=60, help="seconds measured per run (default 60)")
    ap.add_argument("--warmup", type=int, default=3,
                    help="seconds between every cgroup having values and the window (default 3; the pressure "
                         "averages the tree's creation raised decay for minutes, and are read until they do)")
    ap.add_argument("--prefix", default="/acctd-idle-bench", help="parent of the cgroups (default /acctd-idle-bench)")
    ap.add_argument("--cgtop", action="store_true", help="also measure systemd-cgtop -d 1 -b on the same tree")
    ap.add_argument("--netdata", action="store_true", help="also measure netdata's cgroups plugin, if installed")
    ap.add_argument("--netdata-wait", type=int, default=900, metavar="S",
                    help="seconds to wait for netdata to chart every leaf before its window (default 900)")
    ap.add_argument("--quick", action="store_true", help="nested:5x40,flat:200, 15 s windows (meson --benchmark)")
    ap.add_argument("--json", metavar="FILE", help="write every figure as JSON to FILE")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temporary directory (configs, logs)")
    args = ap.parse_args()
    if args.quick:
        args.workloads, args.window = "nested:5x40,flat:200", 15
    args.acctd = args.acctd or os.path.join(args.build, "daemon", "acctd", "acctd")
    if os.geteuid() != 0:
        print("bench-idle: needs root (real cgroups); skipped", file=sys.stderr)
        return 77
    if not os.access(args.acctd, os.X_OK):
        print("bench-idle: no acctd at %s; skipped" % args.acctd, file=sys.stderr)
        return 77
    workloads = [(w, parse_workload(w)) for w in args.workloads.split(",") if w]
    collectors = ["files", "bpf"] if args.collector == "both" else [args.collector]
    hiers = bs.hierarchy_dirs()
    # acctd's own memory cgroup: not matched by `include = PREFIX*`
    self_name = "/acctd-bench-self-%d" % os.getpid()

    def on_signal(signum, frame):
        raise Interrupted("signal %d" % signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    results = {"loadavg_start": "%.2f %.2f %.2f" % os.getloadavg(), "hierarchies": hiers, "acctd": args.acctd,
               "window_s": args.window, "warmup_s": args.warmup, "busy_pct": args.busy, "workloads": []}
    tmp = tempfile.mkdtemp(prefix="bench-idle-")
    rc = 0
    tree = None
    selfcgs = []

    def new_self():
        selfcgs.append(SelfCgroup("%s-%d" % (self_name, len(selfcgs))))
        return selfcgs[-1]

    try:
        remove_leftovers(args.prefix, hiers)
        loops = calibrate_busy() if args.busy else 0
        for label, (kind, a, b) in workloads:
            w = {"workload": label, "busy_pct": args.busy, "busy_loops": loops, "runs": {}}
            results["workloads"].append(w)
            tree = Tree(args.prefix, kind, a, b, hiers)
            try:
                tree.create(args.busy, loops, random.Random(2))
                w["leaves"] = len(tree.leaves)
                if args.busy:
                    w["busy_leaf_cpu_pct"] = tree.busy_cpu_pct()
                    log("%s: a busy leaf uses %.2f%% of a core" % (label, w["busy_leaf_cpu_pct"]))
                for c in collectors:
                    r = w["runs"][c] = {}
                    try:
                        selfcg = new_self()
                        run_acctd(args, tmp, label, c, tree, selfcg, r)
                    except Exception as e:
                        r["error"] = str(e)
                        rc = 1
                        log("%s %s failed: %s" % (label, c, e))
                if args.cgtop:
                    if shutil.which("systemd-cgtop"):
                        log("%s: systemd-cgtop over %ds" % (label, args.window))
                        w["cgtop"] = run_tool(["systemd-cgtop", "-d", "1", "-b", "-n", str(args.window + 10)],
                                              args.window)
                    else:
                        w["cgtop"] = {"note": "no systemd-cgtop"}
                if args.netdata:
                    if os.access(NETDATA, os.X_OK):
                        log("%s: netdata over %ds" % (label, args.window))
                        try:
                            selfcg = new_self()
                            w["netdata"] = run_netdata(tmp, len(tree.leaves), args.prefix, args.window, selfcg,
                                                       args.netdata_wait)
                        except Exception as e:
                            w["netdata"] = {"note": "failed: %s" % e}
                    else:
                        w["netdata"] = {"note": "netdata not installed (apt-get install netdata): skipped"}
            finally:
                tree.destroy()
                tree = None
    except Interrupted as e:
        log("interrupted (%s): cleaning up" % e)
        rc = 130
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        if tree:
            tree.destroy()
        with contextlib.suppress(Exception):
            remove_leftovers(args.prefix, hiers)
        for c in selfcgs:
            c.remove()
        if not args.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log("kept %s" % tmp)
    results["loadavg_end"] = "%.2f %.2f %.2f" % os.getloadavg()
    report(results)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, sort_keys=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
