#!/usr/bin/python3
"""The checks that run inside the VM (tests/vm/test-vm.sh boots it): acctd on a
real pure cgroup v2 host, under systemd as PID 1, against the kernel's files.

    in-vm-checks.py [--results DEVICE] [--scratch DEVICE] [--only NAME,...] [--poweroff]

Each check has a name and runs in order; a check that fails records why (its
log) and the next one runs. The results go, as one JSON object per line
({"check", "ok", "seconds", "log"}, then {"done": true}), to --results (a raw
disk the host reads back after power-off) and, one line per check, to stdout
(the console). Exit status 0 when every check passed, 1 otherwise.

How a served value is tied to the kernel. acctd stamps each pass with its
CLOCK_MONOTONIC time (Python's time.monotonic() is the same clock) before it
reads the files, and serves each value with age_us = (its clock when rendering
the reply) - (that stamp). The check reads the kernel file (K0, ending at t0),
then asks acctd until a reply carries a value sampled after t0 (sent at S:
S - age >= t0), then reads the file again (K1). The kernel's value when acctd
read it lies between K0 and K1: always for cumulative counters (CPU time, I/O,
PSI totals), and for gauges (memory, tasks) of workloads that hold steady. A
value passes when it lies within its stated bound of [min(K0, K1), max(K0, K1)].

The workloads are systemd units started with systemd-run, in nested slices:

  vmtest.slice/vmtest-cpu.service               a CPU burner under CPUQuota=30%
  vmtest.slice/vmtest-tomb.slice                a slice started (and later stopped) by the check
  vmtest.slice/vmtest-tomb.slice/vmtest-tomb.service   burns 0.3 s of CPU, sleeps 3 s, exits
  vmtest.slice/vmtest-inner.slice/vmtest-mem.service   holds 48 MiB of anonymous memory
  vmtest.slice/vmtest-inner.slice/vmtest-io.service    O_DIRECT writes and reads on
                                                        the scratch disk (io.stat)
  vmtest.slice/vmtest-inner.slice/vmtest-hold.scope    a scope holding 16 MiB
"""
import argparse
import json
import math
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

CG = "/sys/fs/cgroup"
SOCKET = "/run/acctd/io.acctd"
IFACE = "io.acctd.Accounting"
METRICS = "http://127.0.0.1:9847/metrics"
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
PROM_PORT = 9091         # not the packaged service's 9090 (disabled in the image)
LOAD_FREQ = 5.0          # kernel/sched/loadavg.c: avenrun is updated every 5 s
EXP_1 = 1884 / 2048.0    # its 1-minute decay per update, e^(-5/60) in fixed point

SLICE = "/vmtest.slice"
INNER = SLICE + "/vmtest-inner.slice"
MEM = INNER + "/vmtest-mem.service"
IO = INNER + "/vmtest-io.service"
SCOPE = INNER + "/vmtest-hold.scope"
CPU = SLICE + "/vmtest-cpu.service"
TOMB_SLICE = SLICE + "/vmtest-tomb.slice"
TOMB = TOMB_SLICE + "/vmtest-tomb.service"
MEM_BYTES = 48 << 20
SCOPE_BYTES = 16 << 20
TOMB_CPU_US = 300000
# A service deep under slices where nothing else runs (docs/counters.md,
# "Pruning"): it blocks in open() of a FIFO, without a wakeup, until the
# check writes to it, then burns PRUNE_CPU_S of CPU and blocks again.
PRUNE_FIFO = "/run/vmtest-prune.fifo"
PRUNE_DEEP = SLICE + "/vmtest-prune.slice/vmtest-prune-a.slice/vmtest-prune-a-b.slice/vmtest-prune-deep.service"
PRUNE_CPU_S = 0.5


class CheckFailed(Exception):
    pass


def require(cond, msg):
    if not cond:
        raise CheckFailed(msg)


# ---- talking to acctd and the kernel ----------------------------------------------

class Varlink:
    """A blocking varlink client: one JSON object and a NUL per message."""

    def __init__(self, path=SOCKET):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.buf = b""

    def call(self, method, **params):
        msg = {"method": method if "." in method else IFACE + "." + method, "parameters": params}
        self.sock.sendall(json.dumps(msg).encode() + b"\0")
        while b"\0" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise CheckFailed("acctd closed the connection during %s" % method)
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        reply = json.loads(raw)
        if "error" in reply:
            raise CheckFailed("%s: %s %s" % (method, reply["error"], reply.get("parameters")))
        return reply.get("parameters", {})

    def close(self):
        self.sock.close()


PEER_ADDR = "192.0.2.1"  # TEST-NET-1 on lo: a peer whose packets are not from 127.0.0.0/8
DROPIN = "/run/systemd/generator/acctd.service.d/50-metrics-listen.conf"


def add_address(ifname, addr):
    """ip addr add ADDR/32 dev IFNAME, through rtnetlink (the image has no ip(8))."""
    RTM_NEWADDR, IFA_ADDRESS, IFA_LOCAL = 20, 1, 2
    NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 1, 4, 0x200, 0x400
    raw = socket.inet_aton(addr)
    body = struct.pack("=BBBBI", socket.AF_INET, 32, 0, 0, socket.if_nametoindex(ifname))
    body += struct.pack("=HH", 8, IFA_LOCAL) + raw + struct.pack("=HH", 8, IFA_ADDRESS) + raw
    msg = struct.pack("=IHHII", 16 + len(body), RTM_NEWADDR,
                      NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as s:  # NETLINK_ROUTE
        s.send(msg)
        reply = s.recv(4096)
    err = struct.unpack_from("=i", reply, 16)[0]  # the NLMSG_ERROR's code (0: the ack)
    require(err in (0, -17), "adding %s to %s: errno %d" % (addr, ifname, -err))  # -EEXIST: there already


def scrape(addr):
    """GET /metrics at ADDR:9847: "answered", "timed out" (a firewall's drop) or the error."""
    try:
        page = urllib.request.urlopen("http://%s:9847/metrics" % addr, timeout=3).read().decode()
        return "answered" if "acctd_" in page else "answered without acctd_ families"
    except (socket.timeout, TimeoutError):
        return "timed out"
    except urllib.error.URLError as e:
        return "timed out" if isinstance(e.reason, (socket.timeout, TimeoutError)) else str(e.reason)


def kernel_before(version):
    """Whether the running kernel's release is older than version, a tuple
    such as (6, 2)."""
    release = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
    return release < version


def run(*cmd, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if check and p.returncode != 0:
        raise CheckFailed("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stdout.strip()))
    return p.stdout.strip()


def read(path):
    with open(path) as f:
        return f.read()


def kv(text):
    """'key value' lines (cpu.stat, memory.stat) to a dict of ints."""
    return {k: int(v) for k, v in (line.split() for line in text.splitlines() if line.strip())}


def io_stat(text):
    """io.stat to {"MAJ:MIN": {"rbytes": n, ...}}."""
    out = {}
    for line in text.splitlines():
        dev, *pairs = line.split()
        out[dev] = {k: int(v) for k, v in (p.split("=", 1) for p in pairs)}
    return out


def psi_totals(text):
    """cpu.pressure et al. to {"some": total_us, "full": total_us}."""
    out = {}
    for line in text.splitlines():
        kind, *pairs = line.split()
        out[kind] = int(dict(p.split("=", 1) for p in pairs)["total"])
    return out


def threads(path):
    """Threads of a cgroup and its descendants (acctd's "tasks")."""
    n = 0
    for d, _, _ in os.walk(CG + path):
        n += sum(1 for line in read(d + "/cgroup.threads").splitlines() if line.strip())
    return n


IO_KEYS = {"read_bytes": "rbytes", "write_bytes": "wbytes", "read_ios": "rios", "write_ios": "wios",
           "discard_bytes": "dbytes", "discard_ios": "dios"}


def kernel_values(path):
    """The kernel's figures for one cgroup, under acctd's quantity names."""
    cg = CG + path
    out = {"memory": int(read(cg + "/memory.current")), "tasks": threads(path)}
    cpu = kv(read(cg + "/cpu.stat"))
    for name, key in (("cpu.usage", "usage_usec"), ("cpu.user", "user_usec"), ("cpu.system", "system_usec"),
                      ("cpu.periods", "nr_periods"), ("cpu.throttled_periods", "nr_throttled"),
                      ("cpu.throttled", "throttled_usec")):
        if key in cpu:
            out[name] = cpu[key]
    if os.path.exists(cg + "/io.stat"):
        devs = io_stat(read(cg + "/io.stat"))
        for name, key in IO_KEYS.items():
            out["io." + name] = sum(d.get(key, 0) for d in devs.values())
        for dev, d in devs.items():
            for name, key in IO_KEYS.items():
                out["io@%s.%s" % (dev, name)] = d.get(key, 0)
    for res in ("cpu", "memory", "io"):
        for kind, total in psi_totals(read("%s/%s.pressure" % (cg, res))).items():
            out["psi.%s.%s" % (res, kind)] = total
    return out


def served_values(rec):
    """acctd's figures for one cgroup from Get, as {name: (value, bound, age_us)}."""
    out = {}
    for name, v in rec["values"].items():
        if v is not None:
            out[name] = (v["value"], v.get("bound", 0), v.get("age_us"))
    io = rec.get("io") or {}
    for dev in io.get("devices", []):
        for name in IO_KEYS:
            if dev.get(name) is not None:
                # Per-device values carry no age of their own: they are read
                # with io.stat, in the same pass as the summed values.
                out["io@%s.%s" % (dev["device"], name)] = (dev[name], 0, None)
    for res, r in (rec.get("pressure") or {}).items():
        for kind, line in (r or {}).items():
            if line:
                t = line["total_us"]
                out["psi.%s.%s" % (res, kind)] = (t["value"], t.get("bound", 0), t.get("age_us"))
    return out


def bracket(api, path, names, log, timeout=30.0):
    """Compare acctd's values NAMES of PATH with the kernel's readings that
    bracket its sample (module docstring); returns {name: (K0, served, K1)}."""
    k0 = kernel_values(path)
    t0 = time.monotonic()
    deadline = t0 + timeout
    while True:
        s = time.monotonic()
        rec = api.call("Get", cgroup=path)["cgroup"]
        served = served_values(rec)
        ages = [served[n][2] for n in names if n in served and served[n][2] is not None]
        missing = [n for n in names if n not in served]
        require(not missing, "%s: acctd serves no %s (it serves %s)" % (path, ", ".join(missing), sorted(served)))
        require(ages, "%s: acctd serves none of %s with an age" % (path, ", ".join(names)))
        # The io@ values have no age: they ride on io.* (read in the same pass).
        if s - max(ages) / 1e6 >= t0:
            break
        require(time.monotonic() < deadline, "%s: no sample of acctd after %.0f s" % (path, timeout))
        time.sleep(0.1)
    k1 = kernel_values(path)
    bad = []
    out = {}
    for n in names:
        v, bound, age = served[n]
        require(n in k0 and n in k1, "%s: the kernel has no %s" % (path, n))
        lo, hi = min(k0[n], k1[n]), max(k0[n], k1[n])
        out[n] = (k0[n], v, k1[n])
        ok = lo - bound <= v <= hi + bound
        log.append("%-40s %-22s kernel [%d, %d] acctd %d +- %d (age %s us)%s"
                   % (path, n, lo, hi, v, bound, age, "" if ok else "  MISMATCH"))
        if not ok:
            bad.append(n)
    require(not bad, "%s: acctd's %s outside the kernel's range" % (path, ", ".join(bad)))
    return out


# ---- the workloads ----------------------------------------------------------------------

HOLD = "import sys,time; b=bytearray(%d); b[::4096]=b'\\x01'*(len(b)//4096); print('ready', flush=True); time.sleep(100000)"
BURN = "while True: pass"
TOMB_PY = ("import time; t=time.process_time()\n"
           "while time.process_time() - t < %g: pass\n"
           "time.sleep(3)" % (TOMB_CPU_US / 1e6))
IO_PY = r"""
import mmap, os, sys, time
dev = sys.argv[1]
fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)     # page-aligned, as O_DIRECT needs
buf.write(b"\xa5" * (1 << 20))
i = 0
while True:
    off = (i % 32) << 20
    os.pwritev(fd, [buf], off)
    os.preadv(fd, [buf], off)
    i += 1
    time.sleep(0.2)
"""

UNIT_PROPS = ["-p", "MemoryAccounting=yes", "-p", "CPUAccounting=yes", "-p", "IOAccounting=yes",
              "-p", "TasksAccounting=yes"]


def start_service(unit, slice_, props, *cmd):
    run("systemd-run", "--quiet", "--unit=" + unit, "--slice=" + slice_, *UNIT_PROPS, *props, *cmd)


# ---- the checks -------------------------------------------------------------------

class Suite:
    def __init__(self, args):
        self.args = args
        self.results = []
        self.api = None
        self.acctd_started = None    # monotonic time of the last start of acctd
        self.load_reads = []         # (sample time, acctd's root avg1)
        self.kernel_load = []        # (time, avg1 of /proc/loadavg, running + blocked)
        self.stop = threading.Event()
        self.scope_proc = None
        self.journal = None          # acctd's journal, when a check failed

    def connect(self):
        if self.api:
            self.api.close()
        self.api = Varlink()

    # Checks, in the order they run. Each takes a log (a list of lines).

    def check_cgroup2_only(self, log):
        mounts = [line.split() for line in read("/proc/mounts").splitlines()]
        cg = [(m[1], m[2]) for m in mounts if m[2] in ("cgroup", "cgroup2")]
        log.append("cgroup mounts: %s" % cg)
        require(cg == [(CG, "cgroup2")], "not a pure cgroup v2 host: %s" % cg)
        ctrls = read(CG + "/cgroup.controllers").split()
        log.append("controllers: %s" % " ".join(ctrls))
        for c in ("cpu", "io", "memory", "pids"):
            require(c in ctrls, "the %s controller is not available at the root" % c)
        require(read("/proc/1/comm").strip() == "systemd", "PID 1 is not systemd")

    def check_socket_activation(self, log):
        require(run("systemctl", "is-active", "acctd.socket", check=False) == "active",
                "acctd.socket is not listening after boot")
        state = run("systemctl", "is-active", "acctd.service", check=False)
        log.append("acctd.service before the first connection: %s" % state)
        if state != "inactive":
            # Who started it: the socket's and the service's own lines (seen
            # once, under a load of 15-20 on the machine that runs the VM).
            log.extend(run("journalctl", "--no-pager", "-b", "-o", "short-monotonic", "-u", "acctd.socket",
                           "-u", "acctd.service", check=False).splitlines()[-20:])
            log.append("acctd.socket: %s" % run("systemctl", "show", "-p", "NAccepted", "-p", "NConnections",
                                                "acctd.socket", check=False).replace("\n", " "))
        require(state == "inactive", "acctd.service runs before anyone asked for it (%s)" % state)
        out = run("acctctl", "--json=short", "status")
        st = json.loads(out)
        log.append("acctctl status: mode %s, %d cgroups live" % (st["cgroup_mode"], st["cgroups_live"]))
        # acctd answers on the socket it was passed while its first pass runs;
        # systemd calls it active once READY=1 arrives, a moment later.
        deadline = time.monotonic() + 30
        while True:
            state = run("systemctl", "is-active", "acctd.service", check=False)
            if state != "activating" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        log.append("acctd.service after acctctl status: %s" % state)
        require(state == "active", "acctctl status did not start acctd.service (%s)" % state)
        require(st["cgroup_mode"] == "unified", "acctd sees cgroup mode %s, not unified" % st["cgroup_mode"])
        require(st["cgroup_root"] == CG, "acctd's cgroup root is %s" % st["cgroup_root"])

    def check_systemctl_start(self, log):
        old = run("systemctl", "show", "-P", "MainPID", "acctd.service")
        run("systemctl", "stop", "acctd.service")
        require(run("systemctl", "is-active", "acctd.socket", check=False) == "active",
                "acctd.socket stopped with the service")
        run("systemctl", "start", "acctd")
        self.acctd_started = time.monotonic()
        require(run("systemctl", "is-active", "acctd.service", check=False) == "active",
                "systemctl start acctd: not active")
        pid = run("systemctl", "show", "-P", "MainPID", "acctd.service")
        status = read("/proc/%s/status" % pid)
        uid = re.search(r"^Uid:\s+\d+\s+(\d+)", status, re.M).group(1)
        caps = re.search(r"^CapEff:\s+(\S+)", status, re.M).group(1)
        log.append("MainPID %s -> %s, uid %s, CapEff %s" % (old, pid, uid, caps))
        require(pid != old and pid != "0", "acctd did not restart (MainPID %s)" % pid)
        require(uid != "0", "acctd runs as root")
        require(int(caps, 16) == 0, "acctd has capabilities %s" % caps)
        self.connect()

    def check_status_clean(self, log):
        st = self.api.call("Status")["status"]
        for which in ("last_fast_pass", "last_slow_pass"):
            p = st[which]
            log.append("%s: %d cgroups, %d files, errors %s" % (which, p["cgroups"], p["files_read"], p["errors"]))
            require(p["files_read"] > 0, "%s read no files" % which)
            if any(p["errors"].values()):
                self.dump_failing(log)
                raise CheckFailed("%s had errors: %s" % (which, p["errors"]))
        require(st["cgroups_live"] > 5, "only %d cgroups live" % st["cgroups_live"])

    def check_bpf_collector(self, log):
        """The BPF collector on a second kernel (Debian's 6.1, pure v2): it
        serves the v2 tree through the iterator acctd --bpf-pin pinned, or
        says why not; where it serves, memory matches memory.current."""
        st = self.api.call("Status")["status"]
        col = {c["hierarchy"]: c for c in st["collectors"]}
        log.append("collectors: %s" % "; ".join("%s %s (%s)" % (h, c["collector"], c["reason"])
                                                  for h, c in col.items()))
        require("unified" in col, "Status lists no collector for the v2 tree")
        uni = col["unified"]
        require(uni["reason"], "no reason given for the v2 tree's collector")
        pin = [l for l in run("journalctl", "-u", "acctd", "-o", "cat", "--no-pager", check=False).splitlines()
               if l.startswith("unified:")]
        log[0] += "; acctd --bpf-pin said: %s" % (pin[-1] if pin else "nothing")
        # Debian 12's 6.1 lacks bpf_rdonly_cast() (6.2): acctd --bpf-pin must
        # have pinned the program built for such kernels (cgroup-iter.bpf.c,
        # "Two programs"), and the daemon must read the v2 tree through it.
        require(uni["collector"] == "bpf", "the v2 tree is read from files: %s" % uni["reason"])
        require(uni["reason"].startswith("pinned at "), "unexpected reason %r" % uni["reason"])
        pinned = [l for l in pin if ": pinned at " in l]
        if kernel_before((6, 2)):
            require(pinned and "kernels before 6.2" in pinned[-1],
                    "acctd --bpf-pin did not say it pinned the program for kernels before 6.2: %s" % pin)
        # The task iterator, pinned beside it, counts threads for the
        # unprivileged service (the kernel-truth checks compare its tasks).
        th = st["bpf"]["threads"]
        log.append("threads: %s (%s)" % (th["collector"], th["reason"]))
        require(th["collector"] == "bpf" and th["reason"].startswith("task iterator pinned at "),
                "threads not counted by the pinned task iterator: %s (%s)" % (th["collector"], th["reason"]))
        # A cross-check reads a cgroup's memory.current before and after the
        # walk, and the walk's value must lie between: memory that dips and
        # rises again within those microseconds (systemd in /init.scope at
        # boot: one page under both readings, once) is a mismatch the daemon
        # tolerates (only ACCT_BPF_MISMATCH_PASSES passes in a row move it to
        # files). So: a fast pass of the next ones without a mismatch, while
        # the collector stays bpf; a collector that disagrees at every pass
        # still fails.
        seen = []
        for _ in range(15):
            st = self.api.call("Status")["status"]
            p = st["last_fast_pass"]
            require(p.get("bpf") and p["bpf"]["records"] > 5 and p["bpf"]["cgroups"] > 0,
                    "the last fast pass used no records: %s" % p.get("bpf"))
            uni = {c["hierarchy"]: c for c in st["collectors"]}["unified"]
            require(uni["collector"] == "bpf", "the v2 tree went back to files: %s" % uni["reason"])
            if p["bpf"]["mismatches"] == 0:
                break
            seen.append(p["bpf"]["last_mismatch"])
            time.sleep(1)
        else:
            raise CheckFailed("cross-checks disagreed at 15 fast passes: %s" % seen[-3:])
        log.append("last fast pass: %s%s" % (p["bpf"], "; mismatches before it: %s" % seen if seen else ""))

    FILES = ("cgroup.events", "memory.current", "memory.events", "cpu.stat", "cpu.pressure", "memory.pressure",
             "io.pressure", "io.stat", "memory.stat", "memory.numa_stat")

    def dump_failing(self, log):
        """The cgroups acctd counts sample errors for, with their files."""
        for c in self.api.call("List")["cgroups"]:
            rec = self.api.call("Get", cgroup=c["path"])["cgroup"]
            if not rec["sample_errors"]:
                continue
            log.append("%s: %d sample errors; its files:" % (c["path"], rec["sample_errors"]))
            for f in self.FILES:
                try:
                    text = read(CG + c["path"].rstrip("/") + "/" + f)
                except OSError as e:
                    text = "(%s)" % e.strerror
                log.append("  %s: %r" % (f, text[:600]))

    def check_workloads(self, log):
        scratch = self.args.scratch
        start_service("vmtest-mem", "vmtest-inner.slice", [], "python3", "-c", HOLD % MEM_BYTES)
        start_service("vmtest-io", "vmtest-inner.slice", [], "python3", "-c", IO_PY, scratch)
        start_service("vmtest-cpu", "vmtest.slice", ["-p", "CPUQuota=30%"], "python3", "-c", BURN)
        # A slice stays, empty, until it is stopped: acctd can read it after
        # its last task has gone, so its tombstone can be final. (A service's
        # cgroup is removed by systemd as soon as it empties, racing acctd.)
        os.makedirs("/run/systemd/system", exist_ok=True)
        with open("/run/systemd/system/vmtest-tomb.slice", "w") as f:
            f.write("[Unit]\nDescription=tests/vm: a slice that outlives its service\n")
        run("systemctl", "daemon-reload")
        run("systemctl", "start", "vmtest-tomb.slice")
        start_service("vmtest-tomb", "vmtest-tomb.slice", [], "python3", "-c", TOMB_PY)
        self.scope_proc = subprocess.Popen(
            ["systemd-run", "--quiet", "--scope", "--unit=vmtest-hold", "--slice=vmtest-inner.slice",
             *UNIT_PROPS, "python3", "-c", HOLD % SCOPE_BYTES],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        require(self.scope_proc.stdout.readline().strip() == "ready", "the scope's workload did not start")
        # Steady: memory held, the tomb's service gone.
        deadline = time.monotonic() + 60
        while True:
            mem = int(read(CG + MEM + "/memory.current"))
            if mem >= MEM_BYTES and not os.path.exists(CG + TOMB):
                break
            require(time.monotonic() < deadline, "workloads not steady after 60 s: mem %d, %s %s"
                    % (mem, TOMB, "still there" if os.path.exists(CG + TOMB) else "gone"))
            time.sleep(0.5)
        lst = self.api.call("List", prefix=SLICE)["cgroups"]
        paths = sorted(c["path"] for c in lst)
        log.append("acctd lists under %s: %s" % (SLICE, " ".join(paths)))
        for p in (SLICE, INNER, MEM, IO, SCOPE, CPU, TOMB_SLICE):
            require(p in paths, "acctd does not list %s" % p)

    def check_memory_service(self, log):
        got = bracket(self.api, MEM, ["memory", "tasks"], log)
        require(got["memory"][1] >= MEM_BYTES, "the service's memory is below what it holds")

    def check_memory_scope(self, log):
        got = bracket(self.api, SCOPE, ["memory", "tasks"], log)
        require(got["memory"][1] >= SCOPE_BYTES, "the scope's memory is below what it holds")

    def check_memory_stat(self, log):
        rec = self.api.call("Get", cgroup=MEM)["cgroup"]
        kernel = kv(read(CG + MEM + "/memory.stat"))
        served = rec["memory_stat"] or {}
        log.append("memory.stat: kernel %d keys, acctd %d" % (len(kernel), len(served)))
        require(set(served) == set(kernel), "memory.stat keys differ: only kernel %s, only acctd %s"
                % (sorted(set(kernel) - set(served)), sorted(set(served) - set(kernel))))
        # A process holding its memory changes no size: anon is exact.
        log.append("anon: kernel %d, acctd %d" % (kernel["anon"], served["anon"]))
        require(served["anon"] == kernel["anon"], "anon differs")

    def check_cpu_service(self, log):
        names = ["cpu.usage", "cpu.user", "cpu.system", "cpu.periods", "cpu.throttled_periods", "cpu.throttled"]
        got = bracket(self.api, CPU, names, log)
        require(got["cpu.throttled_periods"][1] > 0, "a service under CPUQuota=30% was never throttled")

    def check_io_service(self, log):
        k = io_stat(read(CG + IO + "/io.stat"))
        scratch = os.stat(self.args.scratch).st_rdev
        dev = "%d:%d" % (os.major(scratch), os.minor(scratch))
        log.append("io.stat devices: %s (scratch disk %s)" % (" ".join(k), dev))
        require(dev in k, "the scratch disk %s is not in io.stat" % dev)
        names = ["io.read_bytes", "io.write_bytes", "io.read_ios", "io.write_ios",
                 "io@%s.read_bytes" % dev, "io@%s.write_bytes" % dev]
        got = bracket(self.api, IO, names, log)
        require(got["io.read_bytes"][1] >= 1 << 20 and got["io.write_bytes"][1] >= 1 << 20,
                "the I/O workload's megabytes do not show")
        rec = self.api.call("Get", cgroup=IO)["cgroup"]
        names = {d["device"]: d.get("name") for d in rec["io"]["devices"]}
        log.append("devices served: %s" % names)
        want = os.path.basename(os.path.realpath(self.args.scratch))
        require(names.get(dev) == want, "device %s is named %s, not %s" % (dev, names.get(dev), want))

    def check_nested_slices(self, log):
        bracket(self.api, INNER, ["memory", "tasks", "cpu.usage", "io.read_bytes", "io.write_bytes"], log)
        bracket(self.api, SLICE, ["memory", "tasks", "cpu.usage", "io.read_bytes", "io.write_bytes"], log)
        depth = self.api.call("Get", cgroup=MEM)["cgroup"]["depth"]
        require(depth == 3, "%s has depth %s" % (MEM, depth))

    def check_psi(self, log):
        names = ["psi.%s.%s" % (r, k) for r in ("cpu", "memory", "io") for k in ("some", "full")]
        for path in (CPU, IO):
            bracket(self.api, path, names, log)

    def check_pruning(self, log):
        """A leaf deep under idle slices is pruned while it waits, then runs:
        acctd serves the kernel's CPU time and pressure for it, bracketed as
        everywhere else, and its idle parents' too."""
        if not os.path.exists(PRUNE_FIFO):
            os.mkfifo(PRUNE_FIFO)
        py = ("import os, time\n"
              "while True:\n"
              "    with open(%r) as f: f.read()\n"
              "    t = time.process_time()\n"
              "    while time.process_time() - t < %g: pass\n" % (PRUNE_FIFO, PRUNE_CPU_S))
        start_service("vmtest-prune-deep", "vmtest-prune-a-b.slice", [], "python3", "-c", py)
        deadline = time.monotonic() + 60
        while True:  # a pass that pruned it (its CPU time stands still while it waits)
            parts = self.api.call("Status")["status"]["last_fast_pass"].get("parts", {}).get("cpu", {})
            rec = self.api.call("Get", cgroup=PRUNE_DEEP)["cgroup"]
            if parts.get("pruned", 0) > 0 and (rec["values"].get("cpu.usage") or {}).get("value") is not None:
                break
            require(time.monotonic() < deadline, "no pass pruned CPU reads after 60 s: %s" % parts)
            time.sleep(0.5)
        log.append("last fast pass, cpu: %s" % parts)
        for round_ in range(2):
            time.sleep(3)  # passes in which it was pruned
            before = int(kv(read(CG + PRUNE_DEEP + "/cpu.stat"))["usage_usec"])
            with open(PRUNE_FIFO, "w") as f:
                f.write("go")
            deadline = time.monotonic() + 30
            while True:  # burned, and blocked again
                now = int(kv(read(CG + PRUNE_DEEP + "/cpu.stat"))["usage_usec"])
                if now - before >= PRUNE_CPU_S * 0.9e6 and "S" in read("/proc/%s/stat" % read(
                        CG + PRUNE_DEEP + "/cgroup.procs").split()[0]).split(")")[1].split()[0]:
                    break
                require(time.monotonic() < deadline, "the deep service did not burn its CPU")
                time.sleep(0.2)
            got = bracket(self.api, PRUNE_DEEP, ["cpu.usage", "psi.cpu.some"], log)
            require(got["cpu.usage"][1] - before >= PRUNE_CPU_S * 0.9e6,
                    "round %d: acctd did not see the deep service's CPU time" % round_)
        bracket(self.api, SLICE + "/vmtest-prune.slice", ["cpu.usage", "psi.cpu.some"], log)
        run("systemctl", "stop", "vmtest-prune-deep.service", check=False)

    def check_root(self, log):
        rec = self.api.call("Get", cgroup="/")["cgroup"]
        v = rec["values"]
        log.append("root: memory %s, cpu.usage %s, tasks %s"
                   % (v.get("memory"), v.get("cpu.usage"), v.get("tasks")))
        for n in ("memory", "cpu.usage", "tasks"):
            require(v.get(n) is not None, "the root has no %s" % n)
        # The root's cpu.stat is the whole machine's: cumulative, exactly bracketed.
        k0 = kv(read(CG + "/cpu.stat"))["usage_usec"]
        t0 = time.monotonic()
        while True:
            s = time.monotonic()
            c = self.api.call("Get", cgroup="/")["cgroup"]["values"]["cpu.usage"]
            require("age_us" in c, "the root's cpu.usage is served without an age: its fast files were never "
                    "all read (see status-clean)")
            if s - c["age_us"] / 1e6 >= t0:
                break
            time.sleep(0.1)
        k1 = kv(read(CG + "/cpu.stat"))["usage_usec"]
        b = c.get("bound", 0)
        log.append("root cpu.usage: kernel [%d, %d], acctd %d +- %d" % (k0, k1, c["value"], b))
        require(k0 - b <= c["value"] <= k1 + b, "the root's cpu.usage is outside the kernel's range")

    def check_tombstone(self, log):
        # The slice has been empty since its service exited: its files hold
        # what it finally used, until systemd removes it.
        require(read(CG + TOMB_SLICE + "/cgroup.events").startswith("populated 0"), "%s is not empty" % TOMB_SLICE)
        k = kernel_values(TOMB_SLICE)
        run("systemctl", "stop", "vmtest-tomb.slice")
        require(not os.path.exists(CG + TOMB_SLICE), "systemd left %s behind" % TOMB_SLICE)
        deadline = time.monotonic() + 20
        while True:
            rec = self.api.call("Get", cgroup=TOMB_SLICE)["cgroup"]
            if rec["state"] == "dead":
                break
            require(time.monotonic() < deadline, "%s is still live in acctd 20 s after its removal" % TOMB_SLICE)
            time.sleep(0.2)
        log.append("%s: final %s (%s)" % (TOMB_SLICE, rec.get("final"), rec.get("final_reason")))
        require(rec.get("final") is True, "the empty slice's tombstone is not final: %s" % rec.get("final_reason"))
        bad = []
        # Cumulative values stop when the last task leaves. Memory does not:
        # an empty cgroup's memory.current still drops when a CPU's charge
        # stock drains or its page cache is reclaimed, so it is only shown.
        m = rec["values"].get("memory") or {}
        log.append("  %-16s kernel %d, tombstone %s (not compared)" % ("memory", k["memory"], m.get("value")))
        names = ["cpu.usage", "cpu.user", "cpu.system"] + [n for n in ("io.read_bytes", "io.write_bytes") if k.get(n)]
        for n in names:
            v = rec["values"].get(n)
            require(v is not None, "the tombstone has no %s" % n)
            ok = abs(v["value"] - k[n]) <= v.get("bound", 0)
            log.append("  %-16s kernel %d, tombstone %d +- %d%s" % (n, k[n], v["value"], v.get("bound", 0),
                                                                  "" if ok else "  MISMATCH"))
            if not ok:
                bad.append(n)
        require(not bad, "the tombstone's %s differ from the empty cgroup's files" % ", ".join(bad))
        # The service's cgroup went when it emptied: acctd may or may not have
        # read it empty first (docs/acctd.md, "Tombstones"); either way its
        # values are at most the slice's, and hold its burst.
        svc = self.api.call("Get", cgroup=TOMB)["cgroup"]
        v = svc["values"]["cpu.usage"]
        log.append("%s: %s, final %s (%s), cpu.usage %d" % (TOMB, svc["state"], svc.get("final"),
                                                             svc.get("final_reason"), v["value"]))
        require(svc["state"] == "dead", "the service's record is %s" % svc["state"])
        require(svc.get("final") is True or svc.get("final_reason") == "removed_before_final_read",
                "the service's tombstone: final %s, reason %s" % (svc.get("final"), svc.get("final_reason")))
        require(TOMB_CPU_US - v.get("bound", 0) <= v["value"] <= k["cpu.usage"] + v.get("bound", 0),
                "the service's cpu.usage %d is not between its burst (%d) and its slice's %d"
                % (v["value"], TOMB_CPU_US, k["cpu.usage"]))
        lst = self.api.call("List", prefix=SLICE, include_dead=True)["cgroups"]
        require(any(c["path"] == TOMB_SLICE and c["state"] == "dead" for c in lst), "List does not show the tombstone")

    def check_metrics(self, log):
        page = urllib.request.urlopen(METRICS, timeout=20).read().decode()
        sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})?'
                            r' (-?[0-9.eE+-]+|NaN|[+-]Inf)$')
        types = {}
        series = {}
        for n, line in enumerate(page.splitlines(), 1):
            if line.startswith("# TYPE "):
                _, _, name, typ = line.split(" ", 3)
                types[name] = typ
            elif line.startswith("#"):
                continue
            else:
                m = sample.match(line)
                require(m, "line %d does not parse: %r" % (n, line))
                series[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        log.append("/metrics: %d families, %d series" % (len(types), len(series)))
        for fam in ("acctd_memory_bytes", "acctd_cpu_usage_seconds_total", "acctd_io_bytes_total",
                    "acctd_pressure_stalled_seconds_total", "acctd_load_average", "acctd_removed_cgroup_age_seconds"):
            require(any(s.startswith(fam + "{") for s in series), "no %s series" % fam)
        mem = series.get('acctd_memory_bytes{cgroup="%s"}' % MEM)
        require(mem is not None and mem >= MEM_BYTES, "acctd_memory_bytes of %s: %s" % (MEM, mem))
        # a removed cgroup: in the removed_ families only, never in the live ones
        require(series.get('acctd_removed_cgroup_age_seconds{cgroup="%s"}' % TOMB_SLICE) is not None,
                "the tombstone is not in acctd_removed_cgroup_age_seconds")
        require('acctd_memory_bytes{cgroup="%s"}' % TOMB_SLICE not in series,
                "the tombstone is in the live family acctd_memory_bytes")
        rd = [v for s, v in series.items() if s.startswith('acctd_io_bytes_total{cgroup="%s"' % IO) and 'operation="read"' in s]
        require(rd and rd[0] >= 1 << 20, "acctd_io_bytes_total of %s: %s" % (IO, rd))
        # promtool's linter on the text page: 0 clean, 3 lint findings, 1 unparseable.
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=page, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        log.append("promtool check metrics: exit %d %s" % (p.returncode, p.stdout.strip()[:2000]))
        require(p.returncode == 0, "promtool check metrics is not clean")

    def check_prometheus(self, log):
        """A real Prometheus in the VM scrapes acctd; what PromQL returns for a
        cumulative counter lies between the kernel's readings before the
        server started and after the query."""
        k0 = kernel_values(CPU)
        d = "/var/tmp/vmtest-prometheus"
        os.makedirs(d, exist_ok=True)
        with open(d + "/prometheus.yml", "w") as f:   # JSON is YAML
            json.dump({"global": {"scrape_interval": "2s", "scrape_timeout": "2s"},
                       "scrape_configs": [{"job_name": "acctd",
                                           "static_configs": [{"targets": ["127.0.0.1:9847"]}]}]}, f)
        logf = open(d + "/prometheus.log", "w")
        proc = subprocess.Popen([PROMETHEUS, "--config.file=%s/prometheus.yml" % d, "--storage.tsdb.path=%s/data" % d,
                                 "--web.listen-address=127.0.0.1:%d" % PROM_PORT, "--log.level=warn"],
                                stdout=logf, stderr=subprocess.STDOUT)

        def query(q):
            url = "http://127.0.0.1:%d/api/v1/query?%s" % (PROM_PORT, urllib.parse.urlencode({"query": q}))
            with urllib.request.urlopen(url, timeout=20) as r:
                doc = json.load(r)
            require(doc["status"] == "success", "%s: %s" % (q, doc))
            return doc["data"]["result"]

        try:
            deadline = time.monotonic() + 90
            while True:
                require(proc.poll() is None, "prometheus exited: %s" % read(d + "/prometheus.log")[-2000:])
                try:
                    up = query('up{job="acctd"}')
                    # Two scrapes, so that the counters below have a sample
                    # from after the first readings of the kernel.
                    if up and up[0]["value"][1] == "1" and query('count_over_time(up{job="acctd"}[1m]) >= 2'):
                        break
                except OSError:
                    pass
                require(time.monotonic() < deadline, "up{job=\"acctd\"} is not 1 after 90 s: %s"
                        % read(d + "/prometheus.log")[-2000:])
                time.sleep(1)
            r = query('acctd_cpu_usage_seconds_total{cgroup="%s"}' % CPU)
            k1 = kernel_values(CPU)
            require(len(r) == 1, "acctd_cpu_usage_seconds_total of %s: %s" % (CPU, r))
            got = float(r[0]["value"][1]) * 1e6
            log.append("PromQL cpu.usage of %s: %.0f us, kernel [%d, %d]" % (CPU, got, k0["cpu.usage"], k1["cpu.usage"]))
            # The exposition has microsecond precision in seconds (float).
            require(k0["cpu.usage"] - 1 <= got <= k1["cpu.usage"] + 1, "outside the kernel's range")
            r = query('acctd_memory_bytes{cgroup="%s"}' % MEM)
            require(len(r) == 1 and float(r[0]["value"][1]) >= MEM_BYTES, "acctd_memory_bytes of %s: %s" % (MEM, r))
            r = query('acctd_removed_cgroup_age_seconds{cgroup="%s"}' % TOMB_SLICE)
            require(len(r) == 1 and float(r[0]["value"][1]) >= 0, "acctd_removed_cgroup_age_seconds of %s: %s"
                    % (TOMB_SLICE, r))
            n = query('count({__name__=~"acctd_.+", cgroup=~"/vmtest.slice.*"})')
            log.append("series under /vmtest.slice in Prometheus: %s" % (n[0]["value"][1] if n else 0))
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            logf.close()

    def check_reconciliation(self, log):
        rec = self.api.call("Status")["status"]["reconciliation"]
        log.append("passes %d, checked parents %d, violations_total %s, last %s"
                   % (rec["passes"], rec["checked_parents"], rec["violations_total"], rec.get("last_violation")))
        require(rec["passes"] > 0 and rec["checked_parents"] > 0, "no reconciliation ran")
        require(not any(rec["violations_total"].values()), "invariant violations on a real v2 host")

    def check_root_load(self, log):
        """acctd's root avg1 against /proc/loadavg (the derivation is in
        tests/integration/test_kernel_truth.py, check_root_load)."""
        # Four of acctd's load passes after a minute of history.
        waited = time.monotonic()
        while True:
            reads = [r for r in self.load_reads if r[0] >= self.acctd_started]
            if (len([r for r in reads if r[0] >= reads[0][0] + 60]) >= 4
                    or time.monotonic() > self.acctd_started + 150):
                break
            time.sleep(1)
        log.append("waited %.0f s for a minute of load history" % (time.monotonic() - waited))
        kern = list(self.kernel_load)
        require(reads and kern, "no root load readings (%d) or kernel polls (%d)" % (len(reads), len(kern)))
        t0 = reads[0][0]
        k0 = next((k for t, k, _ in reversed(kern) if t <= t0), kern[0][1])
        diffs, ks, ours = [], [], []
        for t, a in reads:
            if t < t0 + 60:
                continue
            before = [k for tk, k, _ in kern if tk <= t]
            if not before:
                continue
            k = before[-1] - k0 * EXP_1 ** ((t - t0) / LOAD_FREQ)
            diffs.append(a - k)
            ks.append(k)
            ours.append(a)
        n_active = [n for _, _, n in kern]
        require(len(diffs) >= 3 and len(n_active) >= 10, "too few readings after the warm-up: %d" % len(diffs))
        mean = sum(n_active) / len(n_active)
        sigma = math.sqrt(sum((x - mean) ** 2 for x in n_active) / (len(n_active) - 1))
        e = EXP_1
        tol = 4 * sigma * math.sqrt(2 * (1 - e) / (1 + e)) + k0 * e ** 12 * (1 / e - 1) + 0.005
        d = sum(diffs) / len(diffs)
        log.append("root avg1 over %d readings: acctd mean %.2f, kernel %.2f (less its start value's share), "
                   "difference %.2f, tolerance %.2f (sigma %.2f)"
                   % (len(diffs), sum(ours) / len(ours), sum(ks) / len(ks), d, tol, sigma))
        require(abs(d) <= tol, "the root's load is off /proc/loadavg by more than sampling explains")

    def check_ip_confinement(self, log):
        """acctd.service's IP firewall on a pure v2 host (docs/systemd.md,
        "Network confinement"): a peer from a non-loopback address is dropped
        while /metrics listens on 0.0.0.0 before a daemon-reload, and let
        through after it (acctd-generator's drop-in). Last: it restarts acctd twice
        and leaves it listening on 0.0.0.0."""
        allow = sorted(run("systemctl", "show", "-P", "IPAddressAllow", "acctd.service").split())
        deny = sorted(run("systemctl", "show", "-P", "IPAddressDeny", "acctd.service").split())
        log.append("IPAddressAllow=%s IPAddressDeny=%s" % (" ".join(allow), " ".join(deny)))
        require(deny == ["0.0.0.0/0", "::/0"] and allow == ["127.0.0.0/8", "::1/128"],
                "acctd.service is not confined to localhost")
        add_address("lo", PEER_ADDR)
        os.makedirs("/etc/acctd", exist_ok=True)
        try:
            with open("/etc/acctd/acctd.conf", "w") as f:
                f.write("[metrics]\nlisten = 0.0.0.0:9847\n")
            run("systemctl", "restart", "acctd")
            local, peer = scrape("127.0.0.1"), scrape(PEER_ADDR)
            log.append("listen = 0.0.0.0:9847, no daemon-reload: 127.0.0.1 %s, %s %s" % (local, PEER_ADDR, peer))
            require(local == "answered" and peer == "timed out", "the unit's firewall did not drop the peer")
            run("systemctl", "daemon-reload")
            require(os.path.exists(DROPIN), "acctd-generator wrote no %s" % DROPIN)
            run("systemctl", "restart", "acctd")
            peer = scrape(PEER_ADDR)
            log.append("after daemon-reload and restart: %s %s; IPAddressAllow=%s" % (
                PEER_ADDR, peer, run("systemctl", "show", "-P", "IPAddressAllow", "acctd.service")))
            require(peer == "answered", "the generator's drop-in did not let the peer through")
        finally:
            # Nothing runs after this check: the file goes and the drop-in with
            # it, but acctd is not restarted again (a start under emulation
            # costs tens of seconds, --bpf-pin's verifier most of it).
            os.unlink("/etc/acctd/acctd.conf")
            run("systemctl", "daemon-reload", check=False)

    # The pollers behind check_root_load, from the start of acctd on.

    def poll_load(self):
        api = None
        while not self.stop.wait(LOAD_FREQ / 2):
            try:
                api = api or Varlink()
                s = time.monotonic()
                ld = api.call("Get", cgroup="/")["cgroup"].get("load")
                if ld and ld.get("age_us") is not None:
                    t = s - ld["age_us"] / 1e6
                    if not self.load_reads or t - self.load_reads[-1][0] > LOAD_FREQ / 2:
                        self.load_reads.append((t, ld["avg1"]))
            except (OSError, CheckFailed, ValueError):
                api = None     # acctd restarting: ask again next time

    def poll_kernel_load(self):
        while not self.stop.wait(0.2):
            avg1 = float(read("/proc/loadavg").split()[0])
            st = kv("\n".join(line for line in read("/proc/stat").splitlines()
                              if line.startswith(("procs_running", "procs_blocked"))))
            self.kernel_load.append((time.monotonic(), avg1, st["procs_running"] + st["procs_blocked"]))

    # The checks that run before acctd is first asked for (by socket-activation's acctctl).
    BEFORE_ACCTD = ("cgroup2-only", "socket-activation")

    def run(self):
        checks = [(name[len("check_"):].replace("_", "-"), getattr(self, name))
                  for name in Suite.__dict__ if name.startswith("check_")]
        only = set(self.args.only.split(",")) if self.args.only else None
        pollers = [threading.Thread(target=f, daemon=True) for f in (self.poll_load, self.poll_kernel_load)]
        for name, fn in checks:
            if only and name not in only:
                continue
            if name not in self.BEFORE_ACCTD and pollers:
                # The pollers connect to acctd's socket, which starts it:
                # not before socket-activation has seen that nothing else
                # did (the first poll came 2.5 s after the runner's start,
                # before that check's first look on a loaded machine).
                for p in pollers:
                    p.start()
                pollers = []
            log = []
            t = time.monotonic()
            try:
                fn(log)
                ok = True
            except CheckFailed as e:
                ok = False
                log.append("FAILED: %s" % e)
            except Exception:
                ok = False
                log.append(traceback.format_exc())
            res = {"check": name, "ok": ok, "seconds": round(time.monotonic() - t, 1), "log": "\n".join(log)}
            self.results.append(res)
            print("%s %s (%.1f s)" % ("PASS" if ok else "FAIL", name, res["seconds"]), flush=True)
            if not ok:
                print(res["log"], flush=True)
            self.write_results(done=False)
        self.stop.set()
        if not all(r["ok"] for r in self.results):
            self.journal = run("journalctl", "--no-pager", "-o", "short-monotonic", "-n", "60",
                               "-u", "acctd.service", "-u", "acctd.socket", check=False)
        self.write_results(done=True)
        return all(r["ok"] for r in self.results)

    def write_results(self, done):
        if not self.args.results:
            return
        text = "".join(json.dumps(r) + "\n" for r in self.results)
        if self.journal:
            text += json.dumps({"journal": self.journal}) + "\n"
        if done:
            text += json.dumps({"done": True}) + "\n"
        with open(self.args.results, "r+b") as f:
            f.write(text.encode())
            f.flush()
            os.fsync(f.fileno())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", help="raw disk (or file) for the JSON results")
    ap.add_argument("--scratch", default="/dev/vdc", help="block device for the I/O workload (overwritten)")
    ap.add_argument("--only", help="comma-separated names of the checks to run")
    ap.add_argument("--poweroff", action="store_true",
                    help="power the machine off at once when done (the results are on their disk)")
    args = ap.parse_args()
    # udev makes the by-id links of the disks at boot; the unit may be quicker.
    for dev in (args.results, args.scratch):
        for _ in range(300):
            if not dev or os.path.exists(dev):
                break
            time.sleep(0.1)
    suite = Suite(args)
    # The scope (systemd-run --scope) holds our process group's child; it goes
    # with us, as do the services, when the VM powers off.
    ok = suite.run()
    if args.poweroff:
        # At once: the unit's SuccessAction= waited once for minutes after
        # the results were written (cause not found; the workloads still
        # ran). The unit's actions remain for a crash of this script.
        sys.stdout.flush()
        os.sync()
        subprocess.run(["systemctl", "poweroff", "--force", "--force"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
