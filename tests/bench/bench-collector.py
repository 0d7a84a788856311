#!/usr/bin/env python3
"""bench-collector.py - the BPF collector against the file sampler (issue 12, "Benchmark").

On real cgroups of this host (as root), at each size N (default 1,000 and
10,000) it creates PREFIX/cg-NNNNN in the v1 memory, cpu and cpuacct
hierarchies (or the v2 tree), each holding a `sleep` started inside it (as the
issue's figures were measured), and then, for collector = files and
collector = bpf in turn, at acctd's default settings:

  * steady CPU: the whole acctd process's CPU (its process CPU clock, user +
    system) over a window of W seconds with nothing else asking it anything,
    as % of one core;
  * fast-pass CPU: cpu_seconds, wall_us and the "bpf" object of each distinct
    last_fast_pass in Status, polled during a second window (4 polls per
    fast interval), beside the reference reader (bench-reader, cached
    descriptors, no parsing) over the same cgroups;
  * value age: Get of a random cgroup at random moments (exponential gaps,
    mean 200 ms) during the same second window; p50/p99 of the `memory` age
    (the collector's quantity) and the `cpu.usage` age (always from files);
  * error at query time: a cgroup PREFIX/mover whose process maps and touches
    200 MiB in 1 MiB steps over one second, then unmaps it, in a loop (its
    memory moves by 200 MiB/s up, then drops). For each Get of that cgroup
    memory.usage_in_bytes (v2: memory.current) is read right before and
    right after; the error is the distance from the served value to the
    nearest of the two (0 between them): p50/p99, and how often it exceeds
    the served bound (the bound is the uncertainty of the reading, not of
    its age: a stale value exceeds it by design);
  * bound violations against the kernel at the instant acctd read: the page
    counter is exact, so the served value must equal a kernel reading of the
    same moment up to the served bound. A thread reads the counter every
    ~2 ms; a served value of age A, answered between t0 and t1, was read in
    [t0 - A, t1 - A] (widened by 5 ms and, for a pass, by the pass's wall
    time, since a pass reads cgroups one after another); a sample is
    comparable when the kernel readings over that window (with one sample
    either side) never decrease, i.e. no unmap fell in it, so that the
    counter went only up between readings and every value it took lies
    between their min and max. A violation is a comparable served value
    outside [min - bound, max + bound]. The same for Get(precise = true),
    which reads the kernel during the call (value.fresh; age ~0): its
    window has no pass wall time. Where acctd gives motion_per_s, how often
    the error is within bound + motion_per_s x age (an estimate) is counted.

CPU is measured as CPU time, never wall time: the machine is shared. Each
figure says its window and how many samples it rests on. --quick: N = 200,
15 s windows. Everything created is removed at the end, also on failure,
Ctrl-C or SIGTERM; a run killed with SIGKILL leaves PREFIX, which the next
run removes (killing only its own sleeps and mover).

Output: a Markdown table on stdout (paste into docs/performance.md), --json
FILE for every figure. See tests/bench/README.md.
"""

import argparse
import bisect
import contextlib
import importlib.util
import json
import mmap
import os
import random
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
CGROOT = "/sys/fs/cgroup"
MIB = 1 << 20


def load_sampling():
    """bench-sampling.py's real trees, daemon driver and helpers (one copy)."""
    spec = importlib.util.spec_from_file_location("bench_sampling", os.path.join(HERE, "bench-sampling.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bs = load_sampling()
log = bs.log
median = bs.median


def seconds(text):
    """A duration as acctd's configuration writes it: 250ms, 1s, 2 (seconds)."""
    for suffix, scale in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0)):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * scale
    return float(text)


def pct(xs, p):
    """Nearest-rank percentile, None for no data."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, int(-(-p * len(xs) // 100)) - 1))
    return xs[k]


# ---------------------------------------------------------------------------
# the mover: run as `bench-collector.py --mover MIB`, inside its cgroups

def mover(mib, period):
    """Map and touch MIB MiB in 1 MiB steps over PERIOD seconds, unmap, again."""
    chunk = b"\1" * MIB
    while True:
        maps = []
        t0 = time.monotonic()
        for i in range(mib):
            m = mmap.mmap(-1, MIB)
            m.write(chunk)  # touches every page: charged now
            maps.append(m)
            left = t0 + (i + 1) * period / mib - time.monotonic()
            if left > 0:
                time.sleep(left)
        for m in maps:
            m.close()


# ---------------------------------------------------------------------------
# varlink

class Varlink:
    def __init__(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.s.connect(path)
                break
            except OSError:
                self.s.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.buf = b""

    def call(self, method, **params):
        self.s.sendall(json.dumps({"method": "io.acctd.Accounting." + method, "parameters": params}).encode() + b"\0")
        while b"\0" not in self.buf:
            data = self.s.recv(1 << 16)
            if not data:
                raise RuntimeError("acctd closed the connection")
            self.buf += data
        msg, self.buf = self.buf.split(b"\0", 1)
        reply = json.loads(msg)
        if "error" in reply:
            raise RuntimeError("%s: %s %s" % (method, reply["error"], reply.get("parameters")))
        return reply.get("parameters", {})

    def close(self):
        self.s.close()


def value(rec, key):
    """(value, bound, age_us) of quantity key in a Get record."""
    v = rec["values"].get(key)
    if isinstance(v, dict):
        return v.get("value"), v.get("bound", 0), v.get("age_us")
    return v, None, None


def value_extra(rec, key):
    """(fresh, motion_per_s) of quantity key in a Get record (False, None
    where acctd does not give them)."""
    v = rec["values"].get(key)
    if isinstance(v, dict):
        return bool(v.get("fresh")), v.get("motion_per_s")
    return False, None


# ---------------------------------------------------------------------------
# cgroups

def hierarchies():
    if bs.host_mode() == "v2":
        return [CGROOT]
    out = []
    for name in ("memory", "cpu", "cpuacct"):
        p = os.path.join(CGROOT, name)
        if os.path.isdir(p) and os.path.ismount(p) and not os.path.islink(p):
            out.append(p)
    return out


def memory_file(hiers, cg):
    for h in hiers:
        if h == CGROOT:
            return os.path.join(h + cg, "memory.current")
        if os.path.basename(h) == "memory":
            return os.path.join(h + cg, "memory.usage_in_bytes")
    raise RuntimeError("no memory hierarchy")


def read_int(fd):
    return int(os.pread(fd, 64, 0))


def kill_movers(prefix, hiers):
    """Our mover left behind by a run killed with SIGKILL: kill it (by its
    command line, only inside PREFIX/mover) so that remove_leftovers() may go on."""
    for h in hiers:
        procs = os.path.join(h + prefix, "mover", "cgroup.procs")
        with contextlib.suppress(OSError), open(procs) as f:
            for pid in (int(x) for x in f.read().split()):
                with contextlib.suppress(OSError):
                    with open("/proc/%d/cmdline" % pid, "rb") as c:
                        cmd = c.read().split(b"\0")
                    if b"--mover" in cmd and any(a.endswith(b"bench-collector.py") for a in cmd):
                        os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)


def cleanup(prefix, hiers):
    kill_movers(prefix, hiers)
    bs.remove_leftovers(prefix, hiers)


class Mover:
    def __init__(self, prefix, hiers, mib, period):
        self.dirs = [h + prefix + "/mover" for h in hiers]
        for d in self.dirs:
            os.mkdir(d)
        procs = [d + "/cgroup.procs" for d in self.dirs]

        def pre():
            for p in procs:
                with open(p, "w") as f:
                    f.write("0")

        self.proc = bs.subprocess.Popen([sys.executable, os.path.abspath(__file__), "--mover", str(mib),
                                         str(period)], preexec_fn=pre, stdin=bs.subprocess.DEVNULL)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        bs.rmdir_all(self.dirs)


class Drain(threading.Thread):
    """Reads acctd's notifications while it runs: sd_notify() blocks the
    daemon once the socket's queue is full (net.unix.max_dgram_qlen, 10 on
    some hosts), and acctd sends STATUS= every few seconds."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock = sock
        self.stop_ev = threading.Event()

    def run(self):
        self.sock.settimeout(0.2)
        while not self.stop_ev.is_set():
            with contextlib.suppress(OSError):
                self.sock.recv(65536)

    def stop(self):
        self.stop_ev.set()
        self.join()


class History(threading.Thread):
    """The kernel's page counter of one cgroup every ~period seconds."""

    def __init__(self, path, period=0.002):
        super().__init__(daemon=True)
        self.fd = os.open(path, os.O_RDONLY)
        self.period = period
        self.t, self.v = [], []
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            t = time.monotonic()
            v = read_int(self.fd)
            self.t.append((t + time.monotonic()) / 2)
            self.v.append(v)
            time.sleep(self.period)

    def stop(self):
        self.stop_ev.set()
        self.join()
        os.close(self.fd)

    def first_match(self, a, b, v, bound):
        """Time of the first reading in [a, b] within bound of v, or None."""
        i = bisect.bisect_left(self.t, a)
        while i < len(self.t) and self.t[i] <= b:
            if abs(self.v[i] - v) <= bound:
                return self.t[i]
            i += 1
        return None

    def window(self, a, b):
        """Readings over [a, b] with one sample either side, or None when the
        history does not cover it."""
        i = bisect.bisect_left(self.t, a) - 1
        j = bisect.bisect_right(self.t, b)
        if i < 0 or j >= len(self.t):
            return None
        return self.v[i:j + 1]


# ---------------------------------------------------------------------------
# one acctd run

def config_text(tmp, name, collector, include, extra):
    lines = ["[sampling]", "collector = %s" % collector, "bpf_pin_dir = %s" % os.path.join(tmp, "no-pins")]
    lines += extra
    lines += ["[api]", "socket = %s" % os.path.join(tmp, name + ".sock"),
              "[metrics]", "listen = none",
              "[cgroups]", "include = %s" % include]
    return "\n".join(lines) + "\n"


def steady_cpu(pid, window):
    """The process's CPU over window seconds, and the main thread's part."""
    c0, t0, th0 = bs.process_cpu_ns(pid), time.monotonic(), bs.thread_cpu_ns(pid)
    time.sleep(window)
    c1, t1, th1 = bs.process_cpu_ns(pid), time.monotonic(), bs.thread_cpu_ns(pid)
    main = (th1.get(pid, 0) - th0.get(pid, 0)) / 1e9
    return {"window_s": t1 - t0, "cpu_s": (c1 - c0) / 1e9, "core_pct": 100.0 * (c1 - c0) / 1e9 / (t1 - t0),
            "main_thread_pct": 100.0 * main / (t1 - t0),
            "utime_stime_s": utime_stime(pid)}


def utime_stime(pid):
    with open("/proc/%d/stat" % pid) as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pass_key(p):
    return json.dumps(p, sort_keys=True)


def sample_window(vl, cgroups, window, fast_s, rng):
    """Status polls (distinct fast/slow passes) and Gets of random cgroups at
    random moments (exponential gaps, mean 200 ms) over `window` seconds."""
    fast, slow, ages_mem, ages_cpu, seen = [], [], [], [], set()
    status = None
    end = time.monotonic() + window
    next_poll = next_get = time.monotonic()
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if now >= next_poll:
            status = vl.call("Status")["status"]
            # a slow pass is reported as both last_slow_pass and
            # last_fast_pass: look at last_slow_pass first so that it counts
            # as slow only
            for key, out in (("last_slow_pass", slow), ("last_fast_pass", fast)):
                p = status.get(key)
                if p and p.get("cgroups") and pass_key(p) not in seen:
                    seen.add(pass_key(p))
                    out.append(p)
            next_poll = now + fast_s / 4
        if now >= next_get:
            rec = vl.call("Get", cgroup=rng.choice(cgroups))["cgroup"]
            ages_mem.append(value(rec, "memory")[2])
            ages_cpu.append(value(rec, "cpu.usage")[2])
            next_get = now + rng.expovariate(1 / 0.2)
        time.sleep(max(0.0, min(next_poll, next_get, end) - time.monotonic()))
    # the first pass seen may have been reported before the window
    return {"fast": fast[1:], "slow": slow[1:], "ages_mem_us": ages_mem, "ages_cpu_us": ages_cpu,
            "status": status}


def mover_window(vl, cg, memfile, window, hist, rng, pass_wall_s):
    """Gets of the mover's cgroup (alternately plain and precise) with the
    kernel's counter right before and after each."""
    fd = os.open(memfile, os.O_RDONLY)
    out = {"plain": [], "precise": []}
    try:
        end = time.monotonic() + window
        i = 0
        while time.monotonic() < end:
            precise = i % 2 == 1
            i += 1
            t0 = time.monotonic()
            k0 = read_int(fd)
            reply = vl.call("Get", cgroup=cg, precise=precise)
            k1 = read_int(fd)
            t1 = time.monotonic()
            rec = reply["cgroup"]
            v, bound, age = value(rec, "memory")
            fresh, motion = value_extra(rec, "memory")
            if v is None:
                continue
            out["precise" if precise else "plain"].append(
                {"t0": t0, "t1": t1, "k0": k0, "k1": k1, "v": v, "bound": bound or 0, "age_us": age or 0,
                 "fresh": fresh, "motion_per_s": motion, "not_fresh": reply.get("not_fresh")})
            time.sleep(rng.uniform(0.02, 0.08))
    finally:
        os.close(fd)
    time.sleep(0.05)  # the history covers the last query
    res = {}
    for kind, qs in out.items():
        errs, over, comparable, violations, worst = [], 0, 0, 0, None
        motion_known = motion_covers = 0
        late = []
        for q in qs:
            lo, hi = min(q["k0"], q["k1"]), max(q["k0"], q["k1"])
            e = lo - q["v"] if q["v"] < lo else q["v"] - hi if q["v"] > hi else 0
            errs.append(e)
            if e > q["bound"]:
                over += 1
            if q["motion_per_s"] is not None:
                # acctd's own estimate of how far the value may have moved
                # (motion_per_s x age, an estimate, not a bound)
                motion_known += 1
                if e <= q["bound"] + q["motion_per_s"] * q["age_us"] / 1e6:
                    motion_covers += 1
            # the window in which acctd read the kernel: a fresh read
            # happened during the call; a pass's value up to the pass's
            # wall time after its start (age counts from the start)
            age = q["age_us"] / 1e6
            a, b = q["t0"] - age - 0.005, q["t1"] - age + 0.005
            if not q["fresh"]:
                b += pass_wall_s
            w = hist.window(a, b)
            if not w or any(y < x for x, y in zip(w, w[1:])):
                continue
            comparable += 1
            d = max(min(w) - q["v"], q["v"] - max(w), 0) - q["bound"]
            if d > 0:
                violations += 1
                worst = max(worst or 0, d)
                q["violation_bytes"] = d
                # read later than its age says? the first kernel reading
                # after the window that matches the value within the bound
                lag = hist.first_match(b, q["t1"], q["v"], q["bound"])
                if lag is not None:
                    late.append(lag - b)
        res[kind] = {
            "queries": len(qs),
            "error_p50_bytes": pct(errs, 50), "error_p99_bytes": pct(errs, 99), "error_max_bytes": max(errs, default=None),
            "error_over_bound": over,
            "bound_p50_bytes": pct([q["bound"] for q in qs], 50),
            "age_p50_us": pct([q["age_us"] for q in qs], 50),
            "comparable": comparable, "violations": violations, "worst_violation_bytes": worst,
            "fresh": sum(1 for q in qs if q["fresh"]),
            "not_fresh": sorted(set(q["not_fresh"] for q in qs if q["not_fresh"])),
            "motion_known": motion_known, "motion_covers": motion_covers,
            "samples": qs,  # every query, for a closer look (--json)
            # violations whose value the counter took later, before the
            # query: acctd read it that long after its age's start + wall
            "late": len(late), "late_p50_ms": (pct(late, 50) or 0) * 1e3, "late_max_ms": max(late, default=0) * 1e3,
        }
    return res


def run_acctd(args, tmp, n, collector, names, hiers, res):
    """Fills res as it goes: a failure keeps what was measured before it."""
    name = "%s-%d" % (collector, n)
    conf = config_text(tmp, name, collector, args.prefix + "*", args.extra_config)
    d = bs.Daemon(args, tmp, name, conf, nofile=args.nofile)
    res["collector"] = collector
    vl = drain = None
    rng = random.Random(n)
    try:
        d.start()
        res["ready_s"] = d.wait_ready(120)
        if res["ready_s"] is None:
            raise RuntimeError("acctd (%s) sent no READY=1 in 120 s; %s" % (name, d.top_warning()))
        pid = d.proc.pid
        drain = Drain(d.sock)
        drain.start()
        vl = Varlink(os.path.join(tmp, name + ".sock"))
        st = vl.call("Status")["status"]
        res["collectors"] = st.get("collectors")
        res["intervals"] = {k: st.get(k) for k in st if "interval" in k}
        fast_s = float(args.fast_s)
        time.sleep(max(2.0, 2 * fast_s))  # past start-up and the first passes
        log("%d %s: steady CPU over %ds" % (n, collector, args.window))
        k0 = bs.g(vl.call("Status")["status"], "bpf", "kernel_passes")
        res["steady"] = steady_cpu(pid, args.window)
        k1 = bs.g(vl.call("Status")["status"], "bpf", "kernel_passes")
        if k0 is not None and k1 is not None:
            # BPF-only memory passes between file passes ([sampling] bpf_interval)
            res["steady"]["kernel_passes_per_s"] = (k1 - k0) / res["steady"]["window_s"]
        log("%d %s: passes and ages over %ds" % (n, collector, args.window))
        cgs = [args.prefix + "/" + x for x in names]
        c0, t0 = bs.process_cpu_ns(pid), time.monotonic()
        w = sample_window(vl, cgs, args.window, fast_s, rng)
        res["sampled_cpu"] = {"window_s": time.monotonic() - t0, "cpu_s": (bs.process_cpu_ns(pid) - c0) / 1e9}
        res["collectors"] = w["status"].get("collectors", res["collectors"])
        fast = w["fast"]
        res["fast"] = {
            "passes": len(fast),
            "cpu_s_p50": median([p["cpu_seconds"] for p in fast]),
            "cpu_s_min": min((p["cpu_seconds"] for p in fast), default=None),
            "cpu_s_max": max((p["cpu_seconds"] for p in fast), default=None),
            "wall_us_p50": median([p["wall_us"] for p in fast]),
            "files_read_p50": median([p["files_read"] for p in fast]),
            "cgroups": fast[-1]["cgroups"] if fast else None,
            "bpf": fast[-1].get("bpf") if fast else None,
            "bpf_walk_us_p50": median([p["bpf"]["walk_us"] for p in fast if p.get("bpf")]),
            "bpf_records_p50": median([p["bpf"]["records"] for p in fast if p.get("bpf")]),
            "bpf_cgroups_p50": median([p["bpf"]["cgroups"] for p in fast if p.get("bpf")]),
            "bpf_mismatches": sum(p["bpf"].get("mismatches", 0) for p in fast if p.get("bpf")),
            "bpf_checks": sum(p["bpf"].get("checks", 0) for p in fast if p.get("bpf")),
        }
        res["fast_reports"] = fast
        slow = w["slow"]
        res["slow_reports"] = slow
        res["slow"] = {"passes": len(slow), "cpu_s_p50": median([p["cpu_seconds"] for p in slow]),
                       "wall_us_p50": median([p["wall_us"] for p in slow])}
        res["age"] = {
            "gets": len(w["ages_mem_us"]),
            "memory_p50_ms": (pct(w["ages_mem_us"], 50) or 0) / 1e3, "memory_p99_ms": (pct(w["ages_mem_us"], 99) or 0) / 1e3,
            "cpu_p50_ms": (pct(w["ages_cpu_us"], 50) or 0) / 1e3, "cpu_p99_ms": (pct(w["ages_cpu_us"], 99) or 0) / 1e3,
        }
        log("%d %s: error at query time over %ds (mover, %d MiB/s)" % (n, collector, args.mover_window, args.mover_mib))
        mover = Mover(args.prefix, hiers, args.mover_mib, 1.0)
        hist = None
        try:
            time.sleep(max(3.0, 2 * fast_s))  # acctd discovers it and reads it twice
            memfile = memory_file(hiers, args.prefix + "/mover")
            hist = History(memfile)
            hist.start()
            wall = max([p["wall_us"] for p in fast] or [0]) / 1e6
            res["mover"] = mover_window(vl, args.prefix + "/mover", memfile, args.mover_window, hist, rng, wall)
            res["mover"]["history_samples"] = len(hist.t)
        finally:
            if hist:
                hist.stop()
            mover.stop()
    finally:
        if vl:
            vl.close()
        if drain:
            drain.stop()
        d.stop()
        res["log_top_warning"] = d.top_warning()


def run_size(args, tmp, n, hiers, results):
    r = {"cgroups_requested": n}
    tree = bs.RealTree(args.prefix, n, hiers)
    try:
        tree.create()
        log("%d: reference reader" % n)
        r["reference_fast"] = bs.run_reader(args, CGROOT, args.prefix, args.reader_passes, "fast", ["--open", "slow"],
                                            args.nofile)
        for collector in args.collectors:
            r[collector] = {}
            try:
                run_acctd(args, tmp, n, collector, tree.names, hiers, r[collector])
            except bs.Interrupted:
                raise
            except Exception as e:
                r[collector]["error"] = str(e)
                log("%d %s failed: %s" % (n, collector, e))
        return r
    finally:
        tree.destroy()
        results.append(r)


# ---------------------------------------------------------------------------
# report

def f(v, nd=1, scale=1.0):
    return "-" if v is None else "{:,.{}f}".format(v * scale, nd)


def report(res):
    out = []
    m = res["machine"]
    out.append("%s, %d CPUs, kernel %s, %s; load average %s at the start, %s at the end. acctd defaults "
               "(fast_interval %s, slow_interval %s), windows of %d s (mover %d s); CPU is CPU time." % (
                   m["cpu"], m["cores"], m["kernel"], res["layout"], " ".join(m["loadavg_start"]),
                   " ".join(m.get("loadavg_end", ["?"])), res["fast"], res["slow"], res["window"],
                   res["mover_window"]))
    out.append("")
    cols = res["collectors"]
    out.append("| N | figure | " + " | ".join(cols) + " | reference reader |")
    out.append("|---|---|" + "---|" * len(cols) + "---|")
    for s in res["sizes"]:
        n = s["cgroups_requested"]
        ref = s.get("reference_fast", {})

        def row(label, fn, refv="-"):
            out.append("| %s | %s | %s | %s |" % ("{:,}".format(n), label, " | ".join(fn(s.get(c, {})) for c in cols),
                                                 refv))

        def g(c, *keys):
            return bs.g(c, *keys)

        row("served by", lambda c: ", ".join("%s: %s" % (x["hierarchy"], x["collector"]) for x in (c.get("collectors") or []))
            or c.get("error", "-"))
        row("steady CPU, % of a core (main thread)",
            lambda c: "%s (%s)" % (f(g(c, "steady", "core_pct"), 2), f(g(c, "steady", "main_thread_pct"), 2)))
        row("BPF-only memory passes per second (bpf_interval)",
            lambda c: f(g(c, "steady", "kernel_passes_per_s"), 1))
        row("fast pass CPU, ms (p50 [min-max], passes)",
            lambda c: "%s [%s-%s], %s" % (f(g(c, "fast", "cpu_s_p50"), 1, 1e3), f(g(c, "fast", "cpu_s_min"), 1, 1e3),
                                          f(g(c, "fast", "cpu_s_max"), 1, 1e3), g(c, "fast", "passes")),
            "%s, %s passes" % (f(ref.get("cpu_s_per_pass"), 1, 1e3), ref.get("passes", "-")))
        row("fast pass wall, ms (p50)", lambda c: f(g(c, "fast", "wall_us_p50"), 1, 1e-3))
        row("fast pass files read (p50)", lambda c: f(g(c, "fast", "files_read_p50"), 0),
            f(ref.get("files_per_pass"), 0))
        row("BPF walk, ms (p50); records, cgroups served (p50); checks, mismatches",
            lambda c: "%s; %s, %s; %s, %s" % (f(g(c, "fast", "bpf_walk_us_p50"), 2, 1e-3),
                                              f(g(c, "fast", "bpf_records_p50"), 0),
                                              f(g(c, "fast", "bpf_cgroups_p50"), 0),
                                          g(c, "fast", "bpf_checks"),
                                      g(c, "fast", "bpf_mismatches")) if g(c, "fast", "bpf_walk_us_p50") else "-")
        row("slow pass CPU, ms (p50, passes)",
            lambda c: "%s, %s" % (f(g(c, "slow", "cpu_s_p50"), 1, 1e3), g(c, "slow", "passes")))
        row("age of memory, ms p50 / p99 (Gets)",
            lambda c: "%s / %s (%s)" % (f(g(c, "age", "memory_p50_ms"), 0), f(g(c, "age", "memory_p99_ms"), 0),
                                        g(c, "age", "gets")))
        row("age of cpu.usage, ms p50 / p99",
            lambda c: "%s / %s" % (f(g(c, "age", "cpu_p50_ms"), 0), f(g(c, "age", "cpu_p99_ms"), 0)))
        for kind in ("plain", "precise"):
            label = "Get" if kind == "plain" else "Get precise"
            row("mover, %s: error at query time MiB p50 / p99 / max (queries)" % label,
                lambda c: "%s / %s / %s (%s)" % (f(g(c, "mover", kind, "error_p50_bytes"), 2, 1 / MIB),
                                                 f(g(c, "mover", kind, "error_p99_bytes"), 2, 1 / MIB),
                                                 f(g(c, "mover", kind, "error_max_bytes"), 2, 1 / MIB),
                                                 g(c, "mover", kind, "queries")))
            row("mover, %s: error > served bound; bound p50 KiB; age p50 ms" % label,
                lambda c: "%s; %s; %s" % (g(c, "mover", kind, "error_over_bound"),
                                          f(g(c, "mover", kind, "bound_p50_bytes"), 0, 1 / 1024),
                                          f(g(c, "mover", kind, "age_p50_us"), 1, 1e-3)))
            row("mover, %s: fresh reads; error <= bound + motion_per_s x age (of those with motion)" % label,
                lambda c: "%s; %s (%s)" % (g(c, "mover", kind, "fresh"), g(c, "mover", kind, "motion_covers"),
                                           g(c, "mover", kind, "motion_known")))
            row("mover, %s: bound violations / comparable (of them read later than age + pass wall: n, lag p50/max ms)" % label,
                lambda c: "%s / %s (%s, %s/%s)" % (g(c, "mover", kind, "violations"), g(c, "mover", kind, "comparable"),
                                                 g(c, "mover", kind, "late"), f(g(c, "mover", kind, "late_p50_ms"), 0),
                                                 f(g(c, "mover", kind, "late_max_ms"), 0)))
        ratio = None
        fb, ff = bs.g(s, "bpf", "fast", "cpu_s_p50"), bs.g(s, "files", "fast", "cpu_s_p50")
        if fb is not None and ff:
            ratio = fb / ff
        out.append("| %s | fast pass CPU, bpf / files | %s |" % ("{:,}".format(n), f(ratio, 3)) + " |" * len(cols))
    return "\n".join(out)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--mover":
        mover(int(sys.argv[2]), float(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"), help="meson build directory (default: build)")
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated cgroup counts (default 1000,10000)")
    ap.add_argument("--window", type=int, default=60, help="seconds per CPU and age window (default 60)")
    ap.add_argument("--mover-window", type=int, default=30, help="seconds of queries on the mover (default 30)")
    ap.add_argument("--mover-mib", type=int, default=200, help="MiB the mover maps per second (default 200)")
    ap.add_argument("--collectors", default="files,bpf", help="collectors, in order (default files,bpf)")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="extra [sampling] setting for acctd (repeatable; default: none, acctd's defaults)")
    ap.add_argument("--reader-passes", type=int, default=20, help="reference reader passes (default 20)")
    ap.add_argument("--prefix", default="/acctd-bpf-bench", help="parent of the cgroups (default /acctd-bpf-bench)")
    ap.add_argument("--quick", action="store_true", help="N = 200, 15 s windows (10 s mover)")
    ap.add_argument("--json", metavar="FILE", help="every figure as JSON to FILE (- for stdout)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temporary directory (logs, configs)")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.window, args.mover_window = "200", 15, 10
    if os.geteuid() != 0:
        log("skipped: needs root (real cgroups, and the BPF collector attaches its iterator)")
        return 77
    if not args.prefix.startswith("/") or args.prefix == "/":
        ap.error("--prefix must be an absolute cgroup path below the root")
    args.acctd = os.path.join(args.build, "daemon", "acctd", "acctd")
    args.reader = os.path.join(args.build, "tests", "bench", "bench-reader")
    for p in (args.acctd, args.reader):
        if not os.access(p, os.X_OK):
            ap.error("%s is not built (ninja -C BUILD daemon/acctd/acctd tests/bench/bench-reader)" % p)
    args.collectors = [c for c in args.collectors.split(",") if c]
    args.extra_config = [c.replace("=", " = ", 1) for c in args.config]
    args.fast_s, slow_s = 1.0, 10.0  # acctd's defaults (docs/acctd.md)
    for c in args.config:
        k, v = (x.strip() for x in c.split("=", 1))
        if k == "fast_interval":
            args.fast_s = seconds(v)
    # acctd raises its soft RLIMIT_NOFILE to the hard one: give it a service's
    args.nofile = None
    soft, hard = bs.resource.getrlimit(bs.resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        bs.resource.setrlimit(bs.resource.RLIMIT_NOFILE, (soft, max(hard, bs.SYSTEMD_NOFILE)))
        args.nofile = bs.SYSTEMD_NOFILE
    hiers = hierarchies()

    def on_signal(signum, frame):
        raise bs.Interrupted("signal %d" % signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    res = {"machine": bs.machine(), "layout": "%s host, cgroups in %s" % (
        bs.host_mode(), ", ".join(os.path.basename(h) or h for h in hiers)), "window": args.window,
        "mover_window": args.mover_window, "mover_mib": args.mover_mib, "collectors": args.collectors,
        "config": args.config, "fast": "%gs" % args.fast_s, "slow": "%gs" % slow_s, "sizes": []}
    for c in args.config:
        if c.split("=")[0].strip() == "slow_interval":
            res["slow"] = c.split("=", 1)[1].strip()
    tmp = tempfile.mkdtemp(prefix="acctd-bpf-bench-")
    os.mkdir(os.path.join(tmp, "no-dropins"))
    rc = 0
    try:
        cleanup(args.prefix, hiers)
        for n in (int(x) for x in args.sizes.split(",") if x.strip()):
            log("size %d" % n)
            run_size(args, tmp, n, hiers, res["sizes"])
    except bs.Interrupted as e:
        log("interrupted (%s); cleaned up" % e)
        rc = 130
    except Exception as e:
        log("failed: %s; cleaned up (logs in %s)" % (e, tmp))
        args.keep_tmp = True
        rc = 1
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        try:
            cleanup(args.prefix, hiers)
        except Exception as e:
            log("cleanup: %s" % e)
            rc = rc or 1
        if args.keep_tmp:
            log("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
    res["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    if rc == 0:
        print(report(res))
    if args.json:
        data = json.dumps(res, indent=1, sort_keys=True)
        if args.json == "-":
            print(data)
        else:
            with open(args.json, "w") as fh:
                fh.write(data + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
