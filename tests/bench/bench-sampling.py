#!/usr/bin/env python3
"""bench-sampling.py - the sampling benchmark of acctd (issue 3, "Benchmark").
The file is long because it builds real cgroup trees, drives three readers
(acctd, a reference reader, systemd-cgtop) and reports their figures in one run.

At each size (default 1,000 and 10,000 cgroups) it measures, in one run:

  * acctd's CPU per fast pass and per slow pass: the CPU of its sampling
    threads between two passes (se.sum_exec_runtime of each thread), beside
    its own pass report (--state-file "pass": cpu_seconds, wall_us,
    files_read, ...), and the whole daemon's CPU per fast interval (its
    process CPU clock over M passes, no state file: event loop,
    reconciliation and timers included);
  * start-up time to READY=1 (a datagram on NOTIFY_SOCKET);
  * VmRSS after READY (per cgroup: between consecutive sizes, and a
    least-squares fit over the sizes where acctd read every cgroup; idle: a
    near-empty tree), and, with real v1 memory cgroups, the memory charged to
    acctd's own cgroup (user + kernel: the cached descriptors' kernel objects
    are charged there);
  * side by side: the reference reader (bench-reader: the same files through
    cached descriptors, no parsing, one thread; the kernel's own cost), alone
    over K passes and paired pass by pass with acctd's passes, and
    `systemd-cgtop -b -n 1` over the same cgroups (real cgroups only);
  * that empty cgroups (cgroup.events populated 0) are not re-read at the fast
    interval: 90% of the cgroups are emptied while acctd runs, and files read
    per fast pass must drop to one file (cgroup.events) per empty cgroup.

As root (default) the cgroups are real: PREFIX (/acctd-bench) with N children
in every hierarchy systemd would put a unit in on this host (memory, cpu,
cpuacct, pids, name=systemd, unified; whichever exist), each holding a
`sleep` started inside it, and acctd runs on the host with
`[cgroups] include = PREFIX*`. Everything is removed at the end, also on
failure or SIGINT/SIGTERM. Not root (or --fake): fake trees from
tests/fakecg.py, and systemd-cgtop is skipped with the reason.

Output: a Markdown table on stdout (--json FILE for all figures; - for
stdout). See tests/bench/README.md.
"""

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
CGROOT = "/sys/fs/cgroup"
SLEEP_ARG = "31536017"  # marks our sleeps: `sleep 31536017`
SYSTEMD_NOFILE = 524288  # systemd's default hard RLIMIT_NOFILE for services


class Interrupted(BaseException):
    """SIGINT/SIGTERM/SIGHUP: unwind (cleaning up) past every except Exception."""


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(v, nd=1, unit=""):
    if v is None:
        return "-"
    if isinstance(v, int) and nd == 0:
        return "{:,}{}".format(v, unit)
    return "{:,.{}f}{}".format(v, nd, unit)


# ---------------------------------------------------------------------------
# real cgroups

def hierarchy_dirs():
    """Where to create a unit's cgroups on this host: what systemd would use."""
    out = []
    if os.path.exists(os.path.join(CGROOT, "cgroup.controllers")):
        return [CGROOT]  # pure v2
    for name in ("memory", "cpu", "cpuacct", "cpu,cpuacct", "pids", "systemd", "unified"):
        p = os.path.join(CGROOT, name)
        if os.path.isdir(p) and not os.path.islink(p) and os.path.ismount(p):
            out.append(p)
    return out


def host_mode():
    if os.path.exists(os.path.join(CGROOT, "cgroup.controllers")):
        return "v2"
    if os.path.exists(os.path.join(CGROOT, "unified", "cgroup.controllers")):
        return "hybrid"
    return "legacy"


class RealTree:
    """N cgroups PREFIX/cg-NNNNN in every hierarchy, each with a sleep."""

    def __init__(self, prefix, n, hiers):
        self.prefix = prefix
        self.n = n
        self.hiers = hiers
        self.names = ["cg-%05d" % i for i in range(n)]
        self.pids = []  # sleeps, by index (None once killed)
        self.created = []  # directories, in creation order

    def dirs(self, h):
        return [os.path.join(h + self.prefix, name) for name in self.names]

    def create(self):
        t0 = time.monotonic()
        for h in self.hiers:
            top = h + self.prefix
            os.mkdir(top)
            self.created.append(top)
            for d in self.dirs(h):
                os.mkdir(d)
                self.created.append(d)
        t1 = time.monotonic()
        for name in self.names:
            procs = [os.path.join(h + self.prefix, name, "cgroup.procs") for h in self.hiers]
            pid = os.fork()
            if pid == 0:  # child: join its cgroups, then become the sleep
                try:
                    for p in procs:
                        fd = os.open(p, os.O_WRONLY)
                        os.write(fd, b"0")
                        os.close(fd)
                    os.execv("/bin/sleep", ["sleep", SLEEP_ARG])
                finally:
                    os._exit(127)
            self.pids.append(pid)
        # every sleep is in place once its exec is done
        deadline = time.monotonic() + 120
        for pid in self.pids:
            while True:
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        if f.read().split(b"\0")[:2] == [b"sleep", SLEEP_ARG.encode()]:
                            break
                except FileNotFoundError:
                    raise RuntimeError("sleep %d failed to start in its cgroups" % pid)
                if time.monotonic() > deadline:
                    raise RuntimeError("sleep %d did not start" % pid)
                time.sleep(0.001)
        log("created %d cgroups in %d hierarchies in %.1fs, %d sleeps in %.1fs" % (
            self.n, len(self.hiers), t1 - t0, len(self.pids), time.monotonic() - t1))

    def empty(self, keep_every):
        """Kill the sleeps of all cgroups but every keep_every-th: they become empty."""
        killed = 0
        for i, pid in enumerate(self.pids):
            if pid is not None and i % keep_every != 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                self.pids[i] = None
                killed += 1
        return killed

    def destroy(self):
        for i, pid in enumerate(self.pids):
            if pid is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            self.pids[i] = None
        rmdir_all(reversed(self.created))
        self.created = []


def rmdir_all(dirs):
    left = []
    for d in dirs:
        for attempt in range(50):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if attempt == 49:
                    left.append("%s (%s)" % (d, e.strerror))
                time.sleep(0.02)
    if left:
        log("could not remove %d cgroups: %s" % (len(left), ", ".join(left[:5])))


def is_our_sleep(cmd):
    """cmd: /proc/PID/cmdline's bytes."""
    return cmd.split(b"\0")[:2] == [b"sleep", SLEEP_ARG.encode()]


def remove_leftovers(prefix, hiers, ours=is_our_sleep):
    """A previous run that was killed hard may have left PREFIX behind: remove it
    (only processes ours(cmdline) accepts are killed, by default our own
    sleeps; anything else there stops us)."""
    tops = [h + prefix for h in hiers if os.path.isdir(h + prefix)]
    if not tops:
        return
    log("removing a leftover %s" % prefix)
    pids = set()
    for top in tops:
        for dirpath, _, _ in os.walk(top):
            with contextlib.suppress(OSError), open(os.path.join(dirpath, "cgroup.procs")) as f:
                pids.update(int(x) for x in f.read().split())
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if not ours(cmd):
            raise RuntimeError("%s holds process %d (%r), not one of ours; remove it by hand" % (prefix, pid, cmd))
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    dirs = []
    for top in tops:
        for dirpath, _, _ in os.walk(top, topdown=False):
            dirs.append(dirpath)
    rmdir_all(dirs)


# ---------------------------------------------------------------------------
# fake trees

def fakecg():
    sys.path.insert(0, os.path.join(SRC, "tests"))
    import fakecg as mod
    return mod


def build_fake(root, mode, n, depth, seed=1):
    mod = fakecg()
    t0 = time.monotonic()
    # in-place writes: acctd keeps descriptors open, so a file replaced by
    # rename would never show it a change (see fakecg's docstring)
    fs = mod.build(root, mode=mode, count=n, depth=depth, seed=seed, write_mode="inplace")
    fs.close()
    log("built a fake %s tree of %d cgroups in %.1fs" % (mode, n, time.monotonic() - t0))
    return fs


def empty_fake(fs, keep_every):
    """Mark all cgroups but every keep_every-th not populated (set_populated)."""
    paths = [p for p in fs.paths() if p != "/"]
    n = 0
    with fs.batch():
        for i, p in enumerate(paths):
            if i % keep_every != 0:
                fs.set_populated(p, False)
                n += 1
    fs.close()
    return n


# ---------------------------------------------------------------------------
# acctd

def config_text(tmp, fast, slow, workers, include):
    lines = ["[sampling]", "fast_interval = %s" % fast, "slow_interval = %s" % slow,
             "workers = %d" % workers, "load_average = no",
             "[api]", "socket = %s" % os.path.join(tmp, "io.acctd"),
             "[metrics]", "listen = none"]
    if include:
        lines += ["[cgroups]", "include = %s" % include]
    return "\n".join(lines) + "\n"


def process_cpu_ns(pid):
    # the process-wide CPU clock of another process: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def thread_cpu_ns(pid):
    """{tid: CPU ns} of every thread (main thread: tid == pid), from
    se.sum_exec_runtime in /proc/PID/task/TID/sched (exact for a thread that is
    not running; acctd's workers wait between passes), else from utime+stime
    in .../stat (10 ms ticks)."""
    out = {}
    hz = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/%d/task" % pid):
        base = "/proc/%d/task/%s/" % (pid, tid)
        try:
            with open(base + "sched") as f:
                for line in f:
                    if line.startswith("se.sum_exec_runtime"):
                        out[int(tid)] = int(float(line.split(":")[1]) * 1e6)
                        break
        except OSError:
            pass
        if int(tid) not in out:
            with contextlib.suppress(OSError), open(base + "stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
                out[int(tid)] = (int(fields[11]) + int(fields[12])) * 1000000000 // hz
    return out


def worker_ns(pid, before, after):
    """CPU ns of every thread but the main one between two thread_cpu_ns()."""
    return sum(v - before.get(t, 0) for t, v in after.items() if t != pid)


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def read_pass(state_file):
    """The "pass" object of acctd's state file, read from its tail."""
    with open(state_file, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - (1 << 20)))
        tail = f.read().decode("utf-8", "replace")
    i = tail.rfind('"pass":{"cgroups"')
    if i < 0:
        raise RuntimeError("no pass report in %s" % state_file)
    obj, _ = json.JSONDecoder().raw_decode(tail, i + len('"pass":'))
    return obj


class Daemon:
    def __init__(self, args, tmp, name, conf, cgroup_root=None, state_file=False, self_cgroups=(), nofile=None):
        self.args = args
        self.tmp = tmp
        self.name = name
        self.conf_path = os.path.join(tmp, name + ".conf")
        with open(self.conf_path, "w") as f:
            f.write(conf)
        self.state_file = os.path.join(tmp, name + ".state.json") if state_file else None
        self.cgroup_root = cgroup_root
        self.self_cgroups = list(self_cgroups)
        self.nofile = nofile
        self.proc = None
        self.sock = None

    def start(self):
        sock_path = os.path.join(self.tmp, self.name + ".notify")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(sock_path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(sock_path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        env = dict(os.environ, NOTIFY_SOCKET=sock_path)
        env.pop("WATCHDOG_USEC", None)
        cmd = [self.args.acctd, "--config", self.conf_path, "--config-dropins", os.path.join(self.tmp, "no-dropins"),
               "--log-level", "info"]
        if self.cgroup_root:
            cmd += ["--cgroup-root", self.cgroup_root]
        if self.state_file:
            cmd += ["--state-file", self.state_file]
        self_cgroups, nofile = self.self_cgroups, self.nofile

        def pre():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            for p in self_cgroups:
                with open(p, "w") as f:
                    f.write("0")

        self.log = open(os.path.join(self.tmp, self.name + ".log"), "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     preexec_fn=pre)

    def recv(self, deadline):
        """Next notification (list of lines), or None at the deadline."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s (see %s)" % (self.name, self.proc.returncode, self.log.name))
            self.sock.settimeout(min(left, 0.5))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            return data.decode("utf-8", "replace").split("\n")

    def drain(self):
        """Consume pending notifications: sd_notify() blocks the daemon once
        the socket's queue (net.unix.max_dgram_qlen) is full."""
        self.sock.setblocking(False)
        try:
            while True:
                self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            pass
        finally:
            self.sock.setblocking(True)

    def wait_ready(self, timeout=60):
        """Seconds from the start to READY=1, or None if none came."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.recv(deadline)
            if lines is None:
                return None
            if "READY=1" in lines:
                return time.monotonic() - self.t0

    def wait_state(self, timeout):
        """The pass report of the next state file acctd writes, or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s (see %s)" % (self.name, self.proc.returncode, self.log.name))
            self.drain()
            try:
                st = os.stat(self.state_file)
                key = (st.st_ino, st.st_mtime_ns)
            except FileNotFoundError:
                key = None
            if key and key != getattr(self, "last_state", None):
                self.last_state = key
                with contextlib.suppress(OSError, ValueError, RuntimeError):
                    return read_pass(self.state_file)
            time.sleep(0.005)
        return None

    def top_warning(self):
        """acctd's most frequent warning so far, with its count."""
        counts = {}
        with contextlib.suppress(OSError), open(self.log.name) as f:
            for line in f:
                if line.startswith(("warning:", "error:", "err:")):
                    key = re.sub(r"/\S+", "PATH", line.strip())
                    counts[key] = counts.get(key, 0) + 1
        if not counts:
            return "no warnings"
        k = max(counts, key=counts.get)
        return "%d x \"%s\"" % (counts[k], k)

    def memcg_bytes(self):
        """Memory charged to acctd's own v1 memory cgroup: (total, kernel)."""
        for p in self.self_cgroups:
            d = os.path.dirname(p)
            if os.path.exists(os.path.join(d, "memory.kmem.usage_in_bytes")):
                with open(os.path.join(d, "memory.usage_in_bytes")) as f:
                    total = int(f.read())
                with open(os.path.join(d, "memory.kmem.usage_in_bytes")) as f:
                    kmem = int(f.read())
                return total, kmem
        return None, None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 30
            while self.proc.poll() is None and time.monotonic() < deadline:
                if self.sock:
                    self.drain()
                time.sleep(0.02)
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        if self.sock:
            self.sock.close()
            self.sock = None
        if getattr(self, "log", None):
            self.log.close()


# ---------------------------------------------------------------------------
# the measurements

def run_reader(args, root, prefix, passes, which, extra=(), nofile=None):
    cmd = [args.reader, "--root", root, "--passes", str(passes), "--set", which] + list(extra)
    if prefix:
        cmd += ["--prefix", prefix]

    def pre():
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, preexec_fn=pre).stdout
    return json.loads(out)


class ReaderServer:
    """bench-reader --serve: one reference pass on request, so that it can be
    paired with each acctd pass (same moment, same load)."""

    def __init__(self, args, root, prefix, nofile=None):
        cmd = [args.reader, "--root", root, "--open", "slow", "--serve"]
        if prefix:
            cmd += ["--prefix", prefix]

        def pre():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     preexec_fn=pre)
        self.info = json.loads(self.proc.stdout.readline() or "{}")
        if not self.info.get("ready"):
            raise RuntimeError("bench-reader --serve did not start")

    def one(self, kind):
        self.proc.stdin.write(kind + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_cgtop(prefix, runs=3):
    """systemd-cgtop -b -n 1 over PREFIX and its children: wall and CPU (median of runs)."""
    cgtop = shutil.which("systemd-cgtop")
    if not cgtop:
        return {"skipped": "systemd-cgtop is not installed"}
    cmd = [cgtop, "-b", "-n", "1", "--depth=1", prefix]
    walls, cpus, rows = [], [], 0
    for _ in range(runs):
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.monotonic()
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            _, status, ru = os.wait4(p.pid, 0)  # this child's own rusage
            walls.append(time.monotonic() - t0)
            p.returncode = os.waitstatus_to_exitcode(status)
            cpus.append(ru.ru_utime + ru.ru_stime)
            out.seek(0)
            err.seek(0)
            if p.returncode != 0:
                return {"skipped": "systemd-cgtop failed: %s" % err.read().decode(errors="replace").strip()}
            rows = len([line for line in out.read().decode(errors="replace").splitlines() if line.strip()])
    return {"command": " ".join(cmd), "wall_s": median(walls), "cpu_s": median(cpus), "rows": rows, "runs": runs}


def wait_burst(d, pid, timeout, quiet=0.04, poll=0.004):
    """Wait for the end of the next burst of CPU in acctd's threads other than
    the main one, i.e. of a sampling pass (the workers wait between passes).
    Returns the burst's approximate wall time in seconds, or None on timeout.
    This needs no notification: acctd limits STATUS= to one per 5 s, and
    sd_notify() fails without a free descriptor."""
    deadline = time.monotonic() + timeout
    last = worker_ns(pid, {}, thread_cpu_ns(pid))
    first_change = last_change = None
    while time.monotonic() < deadline:
        d.drain()
        time.sleep(poll)
        cur = worker_ns(pid, {}, thread_cpu_ns(pid))
        now = time.monotonic()
        if cur != last:
            last = cur
            first_change = first_change or now
            last_change = now
        elif last_change is not None and now - last_change >= quiet:
            return last_change - first_change + poll
    return None


def interval_ms(args, n):
    """fast_interval for n cgroups: --fast-ms, raised to 0.3 ms per cgroup so
    that a pass and the paired reference pass both fit in one interval
    (3 s at 10,000 cgroups). The cost of a pass does not depend on it."""
    return max(args.fast_ms, -(-int(n * 0.3) // 100) * 100)


def measure_daemon_cpu(args, tmp, name, include, cgroup_root, self_cgroups, nofile, passes, n=0):
    """Run A: fast passes only (slow_interval 1h), no state file: start-up,
    RSS, and the process's CPU per fast interval, over `passes` passes told
    apart by the bursts of CPU of the sampling threads."""
    ims = interval_ms(args, n)
    conf = config_text(tmp, "%dms" % ims, "1h", args.workers, include)
    d = Daemon(args, tmp, name, conf, cgroup_root=cgroup_root, self_cgroups=self_cgroups, nofile=nofile)
    interval = ims / 1000.0
    wait = 2 * interval + 3
    res = {}
    try:
        d.start()
        res["ready_s"] = d.wait_ready()
        pid = d.proc.pid
        if res["ready_s"] is None:
            res["ready_lost"] = True
        res["rss_ready_kib"] = vm_rss_kib(pid)
        res["memcg_ready_bytes"], res["kmem_ready_bytes"] = d.memcg_bytes()
        if passes:
            # start the window at the end of the second pass (the first after
            # READY may still pay for late opens and log_top)
            wait_burst(d, pid, wait)
            c0, t0, th0 = process_cpu_ns(pid), time.monotonic(), thread_cpu_ns(pid)
            walls = []
            for _ in range(passes):
                w = wait_burst(d, pid, wait)
                if w is None:
                    break
                walls.append(w)
            c1, t1, th1 = process_cpu_ns(pid), time.monotonic(), thread_cpu_ns(pid)
            n = len(walls)
            if n < passes:
                res["bursts_missing"] = passes - n
                n = max(1, round((t1 - t0) / interval))
            main = (th1.get(pid, 0) - th0.get(pid, 0)) / 1e9
            others = worker_ns(pid, th0, th1) / 1e9
            res.update({
                "passes": n,
                "passes_seen": len(walls),
                "process_cpu_s_per_pass": (c1 - c0) / 1e9 / n,
                "interval_s": (t1 - t0) / n,
                "burst_wall_s_median": median(walls),
                "main_thread_cpu_s_per_pass": main / n,
                "other_threads_cpu_s_per_pass": others / n,
            })
            res["rss_after_kib"] = vm_rss_kib(pid)
            res["memcg_after_bytes"], res["kmem_after_bytes"] = d.memcg_bytes()
            res["threads"] = len(th1)
            res["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    finally:
        d.stop()
        res["log_top_warning"] = d.top_warning()
    return res


def classify(reports, fast_files, slow_files):
    """Split pass reports into fast and slow passes (the report does not say
    which): a slow pass reads more files than a fast one over the same tree.
    Split at the largest jump (> 15%) in files_read, else at the middle of
    the reference reader's fast and slow file counts."""
    vals = sorted(r["files_read"] for r in reports)
    cut, best = None, 1.15
    for a, b in zip(vals, vals[1:]):
        if a > 0 and b / a > best:
            best, cut = b / a, (a + b) / 2.0
    if cut is None:
        cut = (fast_files + slow_files) / 2.0
    fast = [r for r in reports if r["files_read"] < cut]
    slow = [r for r in reports if r["files_read"] >= cut]
    return fast, slow


def summarize(reports):
    if not reports:
        return None
    return {
        "passes": len(reports),
        "cpu_s": median([r["measured_cpu_seconds"] for r in reports]),
        "reported_cpu_s": median([r["cpu_seconds"] for r in reports]),
        "wall_s": median([r["wall_us"] / 1e6 for r in reports]),
        "files_read": median([r["files_read"] for r in reports]),
        "skipped_empty": median([r["skipped_empty"] for r in reports]),
        "open_per_read": median([r["open_per_read"] for r in reports]),
        "cgroups": reports[0]["cgroups"],
        "cgroups_failed": max(r["cgroups_failed"] for r in reports),
        "errors": {k: max(r["errors"][k] for r in reports) for k in reports[0]["errors"]},
        "paired_ref_cpu_s": median([r.get("ref_cpu_s") for r in reports]),
        "paired_ref_files": median([r.get("ref_files") for r in reports]),
        "paired_ratio": median([r["measured_cpu_seconds"] / r["ref_cpu_s"] for r in reports if r.get("ref_cpu_s")]),
        "paired_ratio_min": min([r["measured_cpu_seconds"] / r["ref_cpu_s"] for r in reports if r.get("ref_cpu_s")],
                                default=None),
        "paired_ratio_max": max([r["measured_cpu_seconds"] / r["ref_cpu_s"] for r in reports if r.get("ref_cpu_s")],
                                default=None),
    }


def measure_daemon_passes(args, tmp, name, include, cgroup_root, self_cgroups, nofile, ref_fast, ref_slow,
                          empty_fn=None, reader_at=None, n=0):
    """Run B: fast and slow passes with the pass reports of --state-file
    (a new state file marks the end of each pass); then (empty_fn) most
    cgroups are emptied and the fast passes measured again. The CPU of the
    sampling threads is measured between two state files (they wait between
    passes); a gap of more than 1.5 intervals means a state file was not
    written (e.g. no free descriptor) and that report is left out."""
    ims = interval_ms(args, n)
    conf = config_text(tmp, "%dms" % ims, "%dms" % (2 * ims), args.workers, include)
    d = Daemon(args, tmp, name, conf, cgroup_root=cgroup_root, state_file=True, self_cgroups=self_cgroups,
               nofile=nofile)
    interval = ims / 1000.0
    res = {"missed": 0, "merged": 0}
    server = None
    mid = (ref_fast["files_per_pass"] + ref_slow["files_per_pass"]) / 2.0
    try:
        if reader_at:
            server = ReaderServer(args, *reader_at, nofile=nofile)
        d.start()
        first = d.wait_state(120)
        if first is None:
            raise RuntimeError("acctd wrote no state file in 120 s; its log: %s" % d.top_warning())
        pid = d.proc.pid
        res["first_pass"] = first
        last = [time.monotonic(), thread_cpu_ns(pid)]

        def one_pass():
            rep = d.wait_state(2 * interval + 3)
            if rep is None:
                res["missed"] += 1
                return None
            now, th = time.monotonic(), thread_cpu_ns(pid)
            rep["measured_cpu_seconds"] = worker_ns(pid, last[1], th) / 1e9
            rep["gap_s"] = now - last[0]
            last[:] = [now, th]
            if rep["gap_s"] > 1.5 * interval:
                res["merged"] += 1
                return None
            if server:
                # the same kind of pass by the reference reader while acctd
                # waits for its next tick, half an interval after acctd's pass
                # so that both start about as long after the last read of
                # these files (caches as warm, or as cold, for both)
                time.sleep(max(0.0, now + interval * 0.45 - time.monotonic()))
                ref = server.one("slow" if rep["files_read"] >= mid else "fast")
                rep["ref_cpu_s"], rep["ref_files"] = ref["cpu_s"], ref["files"]
                rep["ref_wall_s"] = ref["wall_s"]
            return rep

        reports = [r for r in (one_pass() for _ in range(args.passes)) if r]
        res["reports"] = reports
        fast, slow = classify(reports, ref_fast["files_per_pass"], ref_slow["files_per_pass"])
        res["fast"] = summarize(fast)
        res["slow"] = summarize(slow)
        if empty_fn:
            emptied = empty_fn()
            res["emptied"] = emptied
            d.wait_state(2 * interval + 3)  # straddles the change
            last[:] = [time.monotonic(), thread_cpu_ns(pid)]
            later = [r for r in (one_pass() for _ in range(args.empty_passes)) if r]
            res["empty_reports"] = later
            efast, eslow = classify(later, ref_fast["files_per_pass"], ref_slow["files_per_pass"])
            res["empty_fast"] = summarize(efast)
            res["empty_slow"] = summarize(eslow)
    finally:
        d.stop()
        if server:
            server.close()
    return res


# ---------------------------------------------------------------------------

def machine():
    cpu = "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    virt = None
    with contextlib.suppress(Exception):
        virt = subprocess.run(["systemd-detect-virt"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True).stdout.strip() or None
    mem = None
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(), "memory_mib": mem, "virt": virt,
            "date": datetime.date.today().isoformat(), "loadavg_start": open("/proc/loadavg").read().split()[:3]}


def run_size(args, tmp, n, real, hiers, results):
    r = {"cgroups_requested": n}
    prefix = args.prefix
    tree = None
    fs = None
    nofile = args.nofile_value
    try:
        if real:
            tree = RealTree(prefix, n, hiers)
            tree.create()
            include, cgroup_root, reader_root, reader_prefix = prefix + "*", None, CGROOT, prefix
            self_dir = None
            mem = [h for h in hiers if os.path.basename(h) == "memory"]
            self_cgroups = []
            if mem:
                self_dir = mem[0] + "/acctd-self-bench"  # outside the include glob
                os.mkdir(self_dir)
                tree.created.insert(0, self_dir)  # removed last
                self_cgroups = [self_dir + "/cgroup.procs"]
        else:
            root = os.path.join(tmp, "fake-%d" % n)
            fs = build_fake(root, args.fake_mode, n, args.depth)
            include, cgroup_root, reader_root, reader_prefix = None, root, root, None
            self_cgroups = []

        if n == 0:
            a = measure_daemon_cpu(args, tmp, "idle", include, cgroup_root, self_cgroups, nofile, 0)
            r["acctd"] = a
            return r

        errors = r["errors"] = {}
        r["fast_ms"] = interval_ms(args, n)

        def step(key, fn, *a):
            # one failed measurement is reported; the others still run
            try:
                r[key] = fn(*a)
            except Exception as e:
                errors[key] = str(e)
                log("%d: %s failed: %s" % (n, key, e))

        log("%d: reference reader" % n)
        # --open slow: hold the slow files open too, as acctd does, so that the
        # same files get cached descriptors where the descriptor limit runs out
        ref_fast = run_reader(args, reader_root, reader_prefix, args.reader_passes, "fast",
                              ["--open", "slow", "--breakdown", "--orc"], nofile)
        ref_slow = run_reader(args, reader_root, reader_prefix, max(3, args.reader_passes // 4), "slow",
                              ["--breakdown"], nofile)
        r["reference_fast"], r["reference_slow"] = ref_fast, ref_slow
        r["cgroups"] = ref_fast["cgroups"]
        if real:
            log("%d: systemd-cgtop" % n)
            step("cgtop", run_cgtop, prefix)
        else:
            r["cgtop"] = {"skipped": "not root: systemd-cgtop reads only the real /sys/fs/cgroup" if os.geteuid()
                          else "fake tree (--fake): systemd-cgtop reads only the real /sys/fs/cgroup"}
        log("%d: acctd, fast passes (process CPU, start-up, RSS)" % n)
        step("acctd", measure_daemon_cpu, args, tmp, "a-%d" % n, include, cgroup_root, self_cgroups, nofile,
             args.passes, n)
        log("%d: acctd, pass reports (fast, slow, then 90%% empty)" % n)
        if real:
            def empty_fn():
                k = tree.empty(10)
                # wait until the kernel shows them empty
                probe = [h for h in hiers if os.path.basename(h) in ("unified",) or h == CGROOT]
                if probe:
                    ev = os.path.join(probe[0] + prefix, tree.names[1], "cgroup.events")
                    for _ in range(200):
                        with open(ev) as f:
                            if "populated 0" in f.read():
                                break
                        time.sleep(0.01)
                return k
        else:
            def empty_fn():
                return empty_fake(fs, 10)
        step("acctd_passes", measure_daemon_passes, args, tmp, "b-%d" % n, include, cgroup_root, self_cgroups,
             nofile, ref_fast, ref_slow, empty_fn, (reader_root, reader_prefix), n)
        if g(r, "acctd_passes", "emptied"):
            log("%d: reference reader on the emptied tree" % n)
            r["reference_empty"] = run_reader(args, reader_root, reader_prefix, args.reader_passes, "fast",
                                              ["--open", "slow"], nofile)
        return r
    finally:
        if tree:
            tree.destroy()
        if fs is not None:
            shutil.rmtree(fs.root, ignore_errors=True)
        results.append(r)


def ratio(a, b):
    return a / b if a is not None and b else None


def g(s, *keys):
    for k in keys:
        if not isinstance(s, dict):
            return None
        s = s.get(k)
    return s


def ms(v, nd=1):
    return fmt(v * 1e3 if v is not None else None, nd)


def mib(v, div=1024):
    return fmt(v / div if v else None, 1)


def report(res):
    sizes = [s for s in res["sizes"] if s["cgroups_requested"] > 0]
    idle = next((s for s in res["sizes"] if s["cgroups_requested"] == 0), None)
    hdr = [s.get("cgroups", s["cgroups_requested"]) for s in sizes]
    out = []
    m = res["machine"]
    out.append("Machine: %s, %d cores%s, %s MiB, Linux %s; %s; %s cgroups (%s); acctd workers=%d, "
               "fast_interval>=%d ms, load_average=no; RLIMIT_NOFILE %s; load average at start %s, at the end %s." % (
                   m["cpu"], m["cores"], " (" + m["virt"] + ")" if m.get("virt") else "", fmt(m["memory_mib"], 0),
                   m["kernel"], m["date"], "real" if res["real"] else "fake", res["layout"], res["workers"],
                   res["fast_ms"], res["nofile"], " ".join(m["loadavg_start"]), " ".join(m.get("loadavg_end", []))))
    out.append("")
    cols = ["{:,} cgroups".format(h) for h in hdr]
    out.append("| | " + " | ".join(cols) + " | target |")
    out.append("|---|" + "---|" * len(cols) + "---|")

    def row(label, vals, target=""):
        out.append("| %s | %s | %s |" % (label, " | ".join(vals), target))

    def failed(s, kind="fast"):
        return g(s, "acctd_passes", kind, "cgroups_failed") or 0

    def trouble(s, kind="fast"):
        """Why acctd's figures at this size are not comparable, or ''."""
        why = []
        if failed(s, kind):
            why.append("acctd failed to read %s cgroups per pass" % fmt(failed(s, kind), 0))
        fds, lim = g(s, "acctd", "fds"), res.get("nofile_limit")
        if "Too many open files" in (g(s, "acctd", "log_top_warning") or "") or (fds and lim and fds >= lim - 16):
            why.append("acctd ran out of descriptors (%s held, limit %s)" % (fmt(fds, 0), fmt(lim, 0)))
        if g(s, "errors", "acctd_passes"):
            why.append("no pass reports")
        return ", ".join(why)

    def flag(s, text, kind="fast"):
        return text + (" (!)" if trouble(s, kind) else "")

    row("cgroups that failed in a fast pass / slow pass / the first pass (unreadable reads per fast pass)",
        ["%s / %s / %s (%s)" % (fmt(g(s, "acctd_passes", "fast", "cgroups_failed"), 0),
                                fmt(g(s, "acctd_passes", "slow", "cgroups_failed"), 0),
                                fmt(g(s, "acctd_passes", "first_pass", "cgroups_failed"), 0),
                                fmt(g(s, "acctd_passes", "fast", "errors", "unreadable"), 0)) for s in sizes], "0")
    row("acctd's fast_interval (slow_interval: 2x in run B, 1 h in run A), ms",
        [fmt(g(s, "fast_ms"), 0) for s in sizes])
    row("READY=1 that did not come (run A); state files missing (run B)",
        ["%s; %s" % ("lost" if g(s, "acctd", "ready_lost") else "0",
                     fmt((g(s, "acctd_passes", "missed") or 0) + (g(s, "acctd_passes", "merged") or 0), 0))
         for s in sizes], "0")
    row("files per fast pass: acctd / reference",
        [flag(s, "%s / %s" % (fmt(g(s, "acctd_passes", "fast", "files_read"), 0),
                              fmt(g(s, "reference_fast", "files_per_pass"), 0))) for s in sizes])
    def fast_cpu(s):
        """The sampling threads' CPU per fast pass: from the pass reports (run
        B), else from run A's threads other than the main one."""
        v = g(s, "acctd_passes", "fast", "cpu_s")
        if v is not None:
            return v, g(s, "acctd_passes", "fast", "wall_s"), ""
        v = g(s, "acctd", "other_threads_cpu_s_per_pass")
        w = g(s, "acctd", "burst_wall_s_median")
        return v, w, " [run A]" if v is not None else ""

    row("**fast pass, acctd sampling threads**: CPU ms (wall ms)",
        [flag(s, "%s (%s)%s" % (ms(fast_cpu(s)[0]), ms(fast_cpu(s)[1]), fast_cpu(s)[2])) for s in sizes])
    row("fast pass, acctd's own report (pass.cpu_seconds): CPU ms",
        [ms(g(s, "acctd_passes", "fast", "reported_cpu_s")) for s in sizes])
    row("fast pass, acctd whole process: CPU ms per interval (of it main thread)",
        [flag(s, "%s (%s)" % (ms(g(s, "acctd", "process_cpu_s_per_pass")),
                              ms(g(s, "acctd", "main_thread_cpu_s_per_pass")))) for s in sizes])
    row("fast pass, reference reader: CPU ms paired with acctd's passes; alone, %d passes (wall ms)" % (
        g(sizes[0], "reference_fast", "passes") or 0) if sizes else "",
        ["%s; %s (%s)" % (ms(g(s, "acctd_passes", "fast", "paired_ref_cpu_s")),
                          ms(g(s, "reference_fast", "cpu_s_per_pass")), ms(g(s, "reference_fast", "wall_s_per_pass")))
         for s in sizes])
    degraded = any(g(s, "reference_fast", "uncached") for s in sizes)
    if degraded:
        row("reference reader: files without a cached descriptor (read with open+read+close)",
            [fmt(g(s, "reference_fast", "uncached"), 0) for s in sizes])
        row("fast pass, reference reader with every descriptor cached (estimate): CPU ms",
            [ms(g(s, "reference_fast", "cached_floor_cpu_s_per_pass")) for s in sizes])
    def paired(s, kind):
        v = g(s, "acctd_passes", kind, "paired_ratio")
        if v is None:
            return None, "-"
        return v, "%s [%s-%s]" % (fmt(v, 2, "x"), fmt(g(s, "acctd_passes", kind, "paired_ratio_min"), 2),
                                   fmt(g(s, "acctd_passes", kind, "paired_ratio_max"), 2))

    alone = [ratio(fast_cpu(s)[0], g(s, "reference_fast", "cpu_s_per_pass")) for s in sizes]
    rf = [paired(s, "fast")[0] if paired(s, "fast")[0] is not None else a for s, a in zip(sizes, alone)]
    rp = [ratio(g(s, "acctd", "process_cpu_s_per_pass"), g(s, "reference_fast", "cpu_s_per_pass")) for s in sizes]
    row("**fast pass CPU / reference**: sampling threads, paired median [range]; vs the reader alone; "
        "whole process vs the reader alone",
        [flag(s, "%s; %s; %s" % (paired(s, "fast")[1], fmt(a, 2, "x"), fmt(b, 2, "x")))
         for s, a, b in zip(sizes, alone, rp)], "<= 1.2x")
    row("files per slow pass: acctd / reference",
        [flag(s, "%s / %s" % (fmt(g(s, "acctd_passes", "slow", "files_read"), 0),
                              fmt(g(s, "reference_slow", "files_per_pass"), 0)), "slow") for s in sizes])
    row("**slow pass, acctd sampling threads**: CPU ms (wall ms)",
        [flag(s, "%s (%s)" % (ms(g(s, "acctd_passes", "slow", "cpu_s")), ms(g(s, "acctd_passes", "slow", "wall_s"))),
              "slow") for s in sizes])
    row("slow pass, acctd's own report (pass.cpu_seconds): CPU ms",
        [ms(g(s, "acctd_passes", "slow", "reported_cpu_s")) for s in sizes])
    row("slow pass, reference reader: CPU ms paired with acctd's passes; alone, %d passes (wall ms)" % (
        g(sizes[0], "reference_slow", "passes") or 0) if sizes else "",
        ["%s; %s (%s)" % (ms(g(s, "acctd_passes", "slow", "paired_ref_cpu_s")),
                          ms(g(s, "reference_slow", "cpu_s_per_pass")), ms(g(s, "reference_slow", "wall_s_per_pass")))
         for s in sizes])
    salone = [ratio(g(s, "acctd_passes", "slow", "cpu_s"), g(s, "reference_slow", "cpu_s_per_pass")) for s in sizes]
    rs = [paired(s, "slow")[0] if paired(s, "slow")[0] is not None else a for s, a in zip(sizes, salone)]
    row("**slow pass CPU / reference**: paired median [range]; vs the reader alone",
        [flag(s, "%s; %s" % (paired(s, "slow")[1], fmt(a, 2, "x")), "slow") for s, a in zip(sizes, salone)],
        "<= 1.2x")
    row("first pass at start-up (opens every file): CPU ms (wall ms)",
        ["%s (%s)" % (ms(g(s, "acctd_passes", "first_pass", "cpu_seconds")),
                      ms((g(s, "acctd_passes", "first_pass", "wall_us") or 0) / 1e6 or None)) for s in sizes])
    row("reference: CPU us per file, open+read+close (cached pread in a pass)",
        ["%s (%s)" % (fmt(g(s, "reference_fast", "orc_us_per_file"), 2), fmt(g(s, "reference_fast", "us_per_file"), 2))
         for s in sizes])
    row("systemd-cgtop -b -n 1: wall ms (CPU ms)",
        ["%s (%s)" % (ms(g(s, "cgtop", "wall_s")), ms(g(s, "cgtop", "cpu_s"))) if g(s, "cgtop", "wall_s") is not None
         else "skipped" for s in sizes])
    row("**start-up to READY=1**, s", [fmt(g(s, "acctd", "ready_s"), 3) for s in sizes], "<= 2 s at 10,000")
    row("VmRSS after READY (after the passes), MiB",
        ["%s (%s)" % (mib(g(s, "acctd", "rss_ready_kib")), mib(g(s, "acctd", "rss_after_kib"))) for s in sizes])
    if any(g(s, "acctd", "memcg_after_bytes") for s in sizes):
        row("memory charged to acctd's own memory cgroup after READY: total (kernel), MiB",
            ["%s (%s)" % (mib(g(s, "acctd", "memcg_ready_bytes"), 2**20), mib(g(s, "acctd", "kmem_ready_bytes"), 2**20))
             for s in sizes])
    row("descriptors acctd holds (its open+read+close reads per fast pass)",
        ["%s (%s)" % (fmt(g(s, "acctd", "fds"), 0), fmt(g(s, "acctd_passes", "fast", "open_per_read"), 0))
         for s in sizes])
    row("90% emptied: files per fast pass, acctd / reference (cgroups skipped as empty)",
        [flag(s, "%s / %s (%s)" % (fmt(g(s, "acctd_passes", "empty_fast", "files_read"), 0),
                                   fmt(g(s, "reference_empty", "files_per_pass"), 0),
                                   fmt(g(s, "acctd_passes", "empty_fast", "skipped_empty"), 0)), "empty_fast")
         for s in sizes])
    row("90% emptied: fast pass CPU ms, acctd sampling threads / reference",
        [flag(s, "%s / %s" % (ms(g(s, "acctd_passes", "empty_fast", "cpu_s")),
                              ms(g(s, "reference_empty", "cpu_s_per_pass"))), "empty_fast") for s in sizes])
    out.append("")
    for h, s in zip(hdr, sizes):
        for k, e in (s.get("errors") or {}).items():
            out.append("At {:,} cgroups the measurement '{}' failed: {}.".format(h, k, e))
            out.append("")
        if g(s, "acctd", "log_top_warning") not in (None, "no warnings"):
            out.append("At {:,} cgroups acctd logged (run A): {}.".format(h, g(s, "acctd", "log_top_warning")))
            out.append("")
    if any(fast_cpu(s)[2] for s in sizes):
        out.append("[run A]: no pass reports at this size; the CPU of acctd's threads other than the main one per "
                   "fast interval, and the duration of their bursts of CPU, instead.")
        out.append("")
    if any(failed(s) or failed(s, "slow") for s in sizes):
        out.append("(!) acctd failed to read some cgroups in these passes (see the first row); its figures there "
                   "are not comparable with the reference reader's, which read every file.")
        out.append("")

    # memory per cgroup
    d = res.setdefault("derived", {})
    notes = []

    def per_cgroup(a, b, key, scale):
        va, vb = g(a, "acctd", key), g(b, "acctd", key)
        na = a.get("cgroups", 1) if a is not idle else 1
        nb = b.get("cgroups")
        if va is None or vb is None or not nb or nb == na:
            return None
        return (vb - va) * scale / (nb - na)

    pairs = []
    if idle and sizes:
        pairs.append(("idle", idle, sizes[0]))
    for a, b in zip(sizes, sizes[1:]):
        pairs.append(("%d_%d" % (a.get("cgroups", 0), b.get("cgroups", 0)), a, b))
    if len(sizes) > 2:
        pairs.append(("sizes", sizes[0], sizes[-1]))
    for tag, a, b in pairs:
        na = "1" if a is idle else "{:,}".format(a.get("cgroups"))
        nb = "{:,}".format(b.get("cgroups"))
        rss = per_cgroup(a, b, "rss_ready_kib", 1024.0)
        chg = per_cgroup(a, b, "memcg_ready_bytes", 1.0)
        krn = per_cgroup(a, b, "kmem_ready_bytes", 1.0)
        d["%s_rss_bytes_per_cgroup" % tag] = rss
        d["%s_charged_bytes_per_cgroup" % tag] = chg
        d["%s_kernel_bytes_per_cgroup" % tag] = krn
        warn = " (!)" if trouble(b) else ""
        d["%s_troubled" % tag] = bool(warn)
        line = "- Per cgroup, %s -> %s cgroups, after READY%s: VmRSS **%s KiB**" % (na, nb, warn, fmt(
            rss / 1024 if rss is not None else None, 2))
        if chg is not None:
            line += "; charged to acctd's memory cgroup %s KiB, of it kernel %s KiB" % (
                fmt(chg / 1024, 2), fmt(krn / 1024 if krn is not None else None, 2))
        notes.append(line + ".")
    # least squares over every size where acctd read everything (idle = 1 cgroup)
    pts = [(1 if x is idle else x.get("cgroups"), g(x, "acctd", "rss_ready_kib"))
           for x in ([idle] if idle else []) + sizes if x is idle or not trouble(x)]
    pts = [(n, v * 1024.0) for n, v in pts if n and v]
    slope = None
    if len(pts) >= 2:
        mx = sum(n for n, _ in pts) / len(pts)
        my = sum(v for _, v in pts) / len(pts)
        den = sum((n - mx) ** 2 for n, _ in pts)
        slope = sum((n - mx) * (v - my) for n, v in pts) / den if den else None
    d["rss_bytes_per_cgroup_fit"] = slope
    d["rss_fit_points"] = [n for n, _ in pts]
    if slope is not None:
        notes.append("- VmRSS per cgroup, least-squares fit over the sizes where acctd read every cgroup "
                     "(%s cgroups): **%s KiB**." % (", ".join("{:,}".format(n) for n, _ in pts),
                                                    fmt(slope / 1024, 2)))
    idle_rss = g(idle, "acctd", "rss_ready_kib")
    notes.append("- Idle VmRSS with a near-empty tree (1 cgroup): %s MiB%s." % (
        mib(idle_rss), "; charged to its memory cgroup %s MiB (kernel %s MiB)" % (
            mib(g(idle, "acctd", "memcg_ready_bytes"), 2**20), mib(g(idle, "acctd", "kmem_ready_bytes"), 2**20))
        if g(idle, "acctd", "memcg_ready_bytes") else ""))
    out.extend(notes)
    for s in sizes:
        bd = dict(g(s, "reference_fast", "breakdown") or {})
        for k, v in (g(s, "reference_slow", "breakdown") or {}).items():
            bd.setdefault(k, v)
        if bd:
            out.append("- Reference reader, CPU per pread at {:,} cgroups: ".format(s.get("cgroups")) + ", ".join(
                "%s %s us%s" % (k, fmt(v["us_per_read"], 2), "" if v.get("timed") == "cached" else " (uncached)")
                for k, v in bd.items()) + ".")

    # targets
    targets = []
    if sizes:
        ok = all(x is not None and x <= 1.2 and not trouble(s) for s, x in zip(sizes, rf))
        targets.append(("a sampling pass costs <= 1.2x the reference reader's CPU (fast pass, paired median)", ok,
                        "; ".join(
            "{:,}: {} (whole process {}){}".format(h, fmt(a, 2, "x"), fmt(b, 2, "x"),
                                                  ", not comparable: " + trouble(s) if trouble(s) else "")
            for h, s, a, b in zip(hdr, sizes, rf, rp))))
        ok = all(x is not None and x <= 1.2 and not trouble(s, "slow") for s, x in zip(sizes, rs))
        targets.append(("the same for a slow pass", ok, "; ".join(
            "{:,}: {}{}".format(h, fmt(a, 2, "x"), ", not comparable: " + trouble(s, "slow")
                                if trouble(s, "slow") else "") for h, s, a in zip(hdr, sizes, rs))))
        ok_empty, detail = True, []
        for h, s in zip(hdr, sizes):
            ef, rfe = g(s, "acctd_passes", "empty_fast", "files_read"), g(s, "reference_empty", "files_per_pass")
            full = g(s, "acctd_passes", "fast", "files_read")
            skipped = g(s, "acctd_passes", "empty_fast", "skipped_empty")
            good = None not in (ef, rfe, full) and ef <= rfe * 1.01 and ef < full and skipped
            if trouble(s, "empty_fast"):
                detail.append("{:,}: not measurable ({})".format(h, trouble(s, "empty_fast")))
                continue
            ok_empty = ok_empty and bool(good)
            detail.append("{:,}: {} -> {} files per fast pass, {} cgroups skipped".format(
                h, fmt(full, 0), fmt(ef, 0), fmt(skipped, 0)))
        targets.append(("empty cgroups are not re-read at the fast interval", ok_empty, "; ".join(detail)))
        vals, detail = [], []
        for tag, a, b in pairs:
            v = d.get("%s_rss_bytes_per_cgroup" % tag)
            bad = d.get("%s_troubled" % tag)
            if v is not None and not bad:
                vals.append(v)
            detail.append("%s KiB (%s -> {:,}%s)".format(b.get("cgroups")) % (
                fmt(v / 1024 if v is not None else None, 2), "1" if a is idle else "{:,}".format(a.get("cgroups")),
                ", not comparable" if bad else ""))
        fit = d.get("rss_bytes_per_cgroup_fit")
        targets.append(("<= 4 KiB resident per idle cgroup", fit is not None and fit <= 4096,
                        "VmRSS per cgroup %s KiB fitted over the sizes where acctd worked; pairwise " % fmt(
                            fit / 1024 if fit is not None else None, 2) + ", ".join(detail)))
        big = [s for s in sizes if s.get("cgroups", 0) >= 10000]
        if big:
            s = big[0]
            r10 = g(s, "acctd", "ready_s")
            first_failed = g(s, "acctd_passes", "first_pass", "cgroups_failed") or 0
            why = ""
            if r10 is None:
                why = "READY=1 never arrived"
                if g(s, "acctd", "ready_lost") and trouble(s):
                    why += " (sd_notify() opens a socket per message: no free descriptor)"
                if first_failed:
                    why += "; the first pass failed to read %s of %s cgroups" % (
                        fmt(first_failed, 0), fmt(s.get("cgroups"), 0))
            elif first_failed:
                why = ", but the first pass that READY=1 announces failed to read %s of %s cgroups" % (
                    fmt(first_failed, 0), fmt(s.get("cgroups"), 0))
            elif trouble(s):
                why = ", but " + trouble(s)
            targets.append(("READY=1 within 2 s at 10,000 cgroups", r10 is not None and r10 <= 2.0 and not why,
                            "%s s%s" % (fmt(r10, 3), why) if r10 is not None else why))
        else:
            targets.append(("READY=1 within 2 s at 10,000 cgroups", False, "no run at 10,000 cgroups"))
    out.append("")
    out.append("Targets:")
    out.append("")
    for name, ok, detail in targets:
        out.append("- %s: **%s** (%s)" % (name, "met" if ok else "NOT met", detail))
    res["targets"] = [{"target": t, "met": ok, "detail": dd} for t, ok, dd in targets]
    for s in sizes:
        sk = g(s, "cgtop", "skipped")
        if sk:
            out.append("")
            out.append("systemd-cgtop skipped: %s." % sk)
            break
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"), help="meson build directory (default: build)")
    ap.add_argument("--acctd", help="acctd binary (default: BUILD/daemon/acctd)")
    ap.add_argument("--reader", help="bench-reader binary (default: BUILD/tests/bench/bench-reader)")
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated cgroup counts (default 1000,10000)")
    ap.add_argument("--no-idle", action="store_true", help="skip the idle (near-empty tree) run")
    ap.add_argument("--fake", action="store_true", help="fake trees even as root")
    ap.add_argument("--fake-mode", choices=("v2", "hybrid"), default=None,
                    help="layout of the fake trees (default: the host's, hybrid or v2)")
    ap.add_argument("--depth", type=int, default=4, help="depth of the fake trees (default 4)")
    ap.add_argument("--prefix", default="/acctd-bench", help="parent of the real cgroups (default /acctd-bench)")
    ap.add_argument("--workers", type=int, default=2, help="acctd sampling workers (default 2)")
    ap.add_argument("--fast-ms", type=int, default=1000,
                    help="fast_interval in ms (default 1000; raised to 0.3 ms per cgroup, 3 s at 10,000)")
    ap.add_argument("--passes", type=int, default=10, help="passes measured per acctd run (default 10)")
    ap.add_argument("--empty-passes", type=int, default=6, help="passes after emptying (default 6)")
    ap.add_argument("--reader-passes", type=int, default=20, help="reference reader passes (default 20)")
    ap.add_argument("--nofile", default=str(SYSTEMD_NOFILE),
                    help="RLIMIT_NOFILE for acctd and the reader when root (default %d, systemd's default "
                         "hard limit for services); 'inherit' keeps this shell's" % SYSTEMD_NOFILE)
    ap.add_argument("--json", metavar="FILE", help="write every figure as JSON to FILE (- for stdout)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temporary directory (logs, configs)")
    args = ap.parse_args()

    args.acctd = args.acctd or os.path.join(args.build, "daemon", "acctd", "acctd")
    args.reader = args.reader or os.path.join(args.build, "tests", "bench", "bench-reader")
    for p in (args.acctd, args.reader):
        if not os.access(p, os.X_OK):
            ap.error("%s is not built (ninja -C BUILD daemon/acctd tests/bench/bench-reader)" % p)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    if not args.no_idle:
        sizes = [0] + sizes
    root = os.geteuid() == 0
    real = root and not args.fake
    if real and not args.prefix.startswith("/") or args.prefix in ("/", ""):
        ap.error("--prefix must be an absolute cgroup path below the root")
    # acctd raises its soft RLIMIT_NOFILE to the hard limit; give it (and the
    # reader) the hard limit a service gets from systemd where we may
    args.nofile_value = None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    nofile_desc = "%d (this shell's hard limit)" % hard
    if args.nofile != "inherit":
        want = int(args.nofile)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, max(hard, want)))
            args.nofile_value = want
            nofile_desc = "%d" % want
        except (ValueError, OSError) as e:
            log("cannot raise RLIMIT_NOFILE to %d (%s): acctd and the reader keep the hard limit %d and "
                "read the files past it with open+read+close" % (want, e, hard))
            nofile_desc = "%d (hard limit; raising it was refused: no CAP_SYS_RESOURCE)" % hard
    if args.fake_mode is None:
        args.fake_mode = "v2" if host_mode() == "v2" else "hybrid"
    if not real:
        why = "--fake" if root else "not root"
        log("%s: fake %s trees from tests/fakecg.py; systemd-cgtop skipped (it reads only the real "
            "/sys/fs/cgroup)" % (why, args.fake_mode))

    def on_signal(signum, frame):
        raise Interrupted("signal %d" % signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)

    res = {"machine": machine(), "real": real, "workers": args.workers, "fast_ms": args.fast_ms,
           "nofile": nofile_desc, "nofile_limit": args.nofile_value or resource.getrlimit(resource.RLIMIT_NOFILE)[1],
           "sizes": []}
    hiers = hierarchy_dirs() if real else []
    res["layout"] = ("%s host, cgroups in %s" % (host_mode(), ", ".join(os.path.basename(h) or h for h in hiers))
                     if real else "fakecg %s, depth %d" % (args.fake_mode, args.depth))
    tmp = tempfile.mkdtemp(prefix="acctd-bench-")
    os.mkdir(os.path.join(tmp, "no-dropins"))
    rc = 0
    try:
        if real:
            remove_leftovers(args.prefix, hiers)
            self_dirs = [h + "/acctd-self-bench" for h in hiers if os.path.basename(h) == "memory"]
            rmdir_all(d for d in self_dirs if os.path.isdir(d))
        for n in sizes:
            log("size %d" % n)
            run_size(args, tmp, n, real, hiers, res["sizes"])
    except Interrupted as e:
        log("interrupted (%s); cleaned up" % e)
        rc = 130
    except Exception as e:
        log("failed: %s; cleaned up (logs in %s)" % (e, tmp))
        args.keep_tmp = True
        rc = 1
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        if real:
            try:
                remove_leftovers(args.prefix, hiers)
            except Exception as e:
                log("cleanup: %s" % e)
                rc = rc or 1
        if not args.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log("kept %s" % tmp)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
    res["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    if rc == 0:
        print(report(res))
        log("load average at the end: %s" % " ".join(res["machine"]["loadavg_end"]))
    if args.json:
        data = json.dumps(res, indent=1, sort_keys=True)
        if args.json == "-":
            print(data)
        else:
            with open(args.json, "w") as f:
                f.write(data + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
