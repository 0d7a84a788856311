#!/usr/bin/env python3
"""bench-cgtop.py - `acctctl list` against `systemd-cgtop -b -n 1` on the same
real cgroups (issue 15, "Speed a person feels").

At each size (default 1,000 and 10,000 cgroups) it creates PREFIX
(/acctd-speed-bench) with N children cg-NNNNN in every hierarchy systemd would
put a unit in on this host (hybrid: memory, cpu, cpuacct, pids, name=systemd
and the unified v2 tree; pure v2: the one tree), each holding a `sleep`
started inside it (bench-sampling.py's RealTree), starts acctd on the host
with `[cgroups] include = PREFIX*`, waits until `acctctl list PREFIX` shows
every cgroup with a memory figure, then runs R rounds, each timing

  * `acctctl list PREFIX`: asks acctd over its varlink socket (List with
    "more") and prints the table; it reads no cgroup file itself;
  * `systemd-cgtop -b -n 1 PREFIX`: walks the cgroup hierarchies itself and
    reads each cgroup's files (on v1: cgroup.procs, cpuacct.usage,
    memory.usage_in_bytes, blkio and pids files), then prints its table;

both with stdout to /dev/null, the same environment (LC_ALL=C.UTF-8, no
pager: stdout is not a terminal), alternating which one goes first from round
to round so that both see the same machine. Wall time is measured from
fork to wait4(); CPU is the child's user + system time from wait4(). Round 0
warms caches and is not counted. Both must show the same N + 1 cgroups (the
prefix and its children; checked before timing).

Output: a Markdown table on stdout (--json FILE for every figure, - for
stdout). Root only (real cgroups), and systemd-cgtop must be installed:
otherwise it exits 77 (a skip) saying why. Everything it creates is removed
at the end, also on failure, Ctrl-C or SIGTERM; after a SIGKILL the next run
removes what is left (only its own sleeps are killed).

  bench-cgtop.py [--build DIR] [--sizes 1000,10000] [--rounds R] [--quick]
                 [--reference OLD-ACCTCTL] [--json FILE]

--reference times a second acctctl binary (say, one built from an older
commit) in the same rounds, so that before and after are measured under the
same load.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def load_sampling():
    """bench-sampling.py's real-cgroup tree, cleanup and daemon driver: one copy."""
    spec = importlib.util.spec_from_file_location("bench_sampling", os.path.join(HERE, "bench-sampling.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bs = load_sampling()
log = bs.log


def timed(cmd, env):
    """Run cmd, stdout to /dev/null: (wall s, CPU s). Fails loudly on a non-zero exit."""
    with open(os.devnull, "w") as null, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=null, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError("%s exited with %d: %s" % (" ".join(cmd), p.returncode,
                                                        err.read().decode(errors="replace").strip()))
    return wall, ru.ru_utime + ru.ru_stime


def rows_of(cmd, env, prefix):
    """The cgroup paths a command prints (lines that start with PREFIX;
    systemd-cgtop shows the one it was given as "//PREFIX")."""
    out = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True).stdout
    paths = ["/" + line.split()[0].lstrip("/") for line in out.splitlines() if line.strip()]
    return [p for p in paths if p == prefix or p.startswith(prefix + "/")]


def wait_listed(acctctl, env, prefix, n, timeout):
    """Wait until acctctl lists PREFIX and its N children, each with a memory figure."""
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run([acctctl, "list", "--no-legend", prefix], env=env, capture_output=True, text=True).stdout
        lines = [line.split() for line in out.splitlines() if line.startswith(prefix)]
        if len(lines) == n + 1 and all(len(x) > 1 and x[1] != "-" for x in lines):
            return
        if time.monotonic() > deadline:
            raise RuntimeError("acctd lists %d of %d cgroups after %d s" % (len(lines), n + 1, timeout))
        time.sleep(0.2)


def summary(xs):
    xs = sorted(xs)
    return {"median": statistics.median(xs), "min": xs[0], "max": xs[-1], "runs": len(xs)}


def run_size(args, tmp, n, hiers, cgtop):
    prefix = args.prefix
    tree = bs.RealTree(prefix, n, hiers)
    # PREFIX-bg matches the include glob too: tracked, never listed
    background = bs.RealTree(prefix + "-bg", args.background, hiers) if args.background else None
    daemon = None
    try:
        tree.create()
        if background:
            background.create()
        # as bench-sampling.py: one pass fits in an interval
        fast = args.fast_interval or max(1000, int((n + args.background) * 0.3))
        conf = bs.config_text(tmp, "%dms" % fast, "%dms" % (10 * fast), 2, prefix + "*")
        daemon = bs.Daemon(args, tmp, "acctd-%d" % n, conf, nofile=args.nofile)
        daemon.start()
        if daemon.wait_ready(timeout=300) is None:
            raise RuntimeError("acctd did not become ready (see %s)" % daemon.log.name)
        env = dict(os.environ, ACCTD_ADDRESS="unix:" + os.path.join(tmp, "io.acctd"), LC_ALL="C.UTF-8")
        for k in ("PAGER", "ACCTD_PAGER", "SYSTEMD_PAGER", "COLUMNS"):
            env.pop(k, None)
        wait_listed(args.acctctl, env, prefix, n, timeout=120)
        daemon.drain()

        cmds = {"acctctl": [args.acctctl, "list", prefix], "cgtop": [cgtop, "-b", "-n", "1", prefix]}
        if args.reference:
            cmds["reference"] = [args.reference, "list", prefix]
        seen = {k: rows_of(c, env, prefix) for k, c in cmds.items()}
        for k, rows in seen.items():
            if len(rows) != n + 1:
                raise RuntimeError("%s shows %d cgroups, not %d: %s" % (k, len(rows), n + 1, " ".join(cmds[k])))
        if any(sorted(rows) != sorted(seen["cgtop"]) for rows in seen.values()):
            raise RuntimeError("acctctl and systemd-cgtop show different cgroups")

        res = {k: {"wall": [], "cpu": []} for k in cmds}
        load = [os.getloadavg()[0]]
        for r in range(args.rounds + 1):
            order = list(cmds) if r % 2 else list(reversed(cmds))
            for k in order:
                wall, cpu = timed(cmds[k], env)
                if r > 0:
                    res[k]["wall"].append(wall)
                    res[k]["cpu"].append(cpu)
            daemon.drain()
        load.append(os.getloadavg()[0])
        out = {"cgroups": n + 1, "background": args.background, "loadavg_1min": load, "fast_interval_ms": fast,
               "commands": {k: " ".join(os.path.basename(c) if i == 0 else c
                                        for i, c in enumerate(v)) for k, v in cmds.items()}}
        if args.reference:
            out["commands"]["reference"] = "%s (%s)" % (out["commands"]["reference"], args.reference)
        for k in cmds:
            out[k] = {"wall_s": summary(res[k]["wall"]), "cpu_s": summary(res[k]["cpu"])}
        return out
    finally:
        if daemon:
            daemon.stop()
        tree.destroy()
        if background:
            background.destroy()


def report(res):
    lines = ["| cgroups | what | wall median | wall min | CPU median | CPU min |",
             "|--------:|------|------------:|---------:|-----------:|--------:|"]
    def size(s):  # "1,001", or "1,001 of 11,001 tracked" with --background
        text = "{:,}".format(s["cgroups"])
        if s.get("background"):
            text += " of {:,} tracked".format(s["cgroups"] + s["background"])
        return text

    for s in res["sizes"]:
        for k in ("cgtop", "reference", "acctctl"):
            if k not in s:
                continue
            w, c = s[k]["wall_s"], s[k]["cpu_s"]
            lines.append("| {} | `{}` | {:.1f} ms | {:.1f} ms | {:.1f} ms | {:.1f} ms |".format(
                size(s), s["commands"][k], w["median"] * 1e3, w["min"] * 1e3, c["median"] * 1e3,
                c["min"] * 1e3))
        g = s["cgtop"]
        for k in ("reference", "acctctl"):
            if k not in s:
                continue
            a = s[k]
            lines.append("| {} | **ratio** cgtop / {} | **{:.1f}x** | {:.1f}x | {:.1f}x | {:.1f}x |".format(
                size(s), "reference" if k == "reference" else "acctctl", g["wall_s"]["median"] / a["wall_s"]["median"],
                g["wall_s"]["min"] / a["wall_s"]["min"], g["cpu_s"]["median"] / max(a["cpu_s"]["median"], 1e-9),
                g["cpu_s"]["min"] / max(a["cpu_s"]["min"], 1e-9)))
    m = res["machine"]
    lines.append("")
    lines.append("Machine: %s, %d CPUs, Linux %s; %s; %d rounds per size; load average (1 min) %s." % (
        m["cpu"], m["cores"], m["kernel"], res["layout"], res["rounds"],
        ", ".join("%.1f-%.1f at %s" % (s["loadavg_1min"][0], s["loadavg_1min"][1], "{:,}".format(s["cgroups"]))
                  for s in res["sizes"])))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"), help="meson build directory (default: build)")
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated cgroup counts (default 1000,10000)")
    ap.add_argument("--rounds", type=int, default=20, help="timed rounds per size (default 20)")
    ap.add_argument("--quick", action="store_true", help="200 cgroups, 5 rounds (for meson test --benchmark)")
    ap.add_argument("--prefix", default="/acctd-speed-bench", help="parent of the cgroups (default /acctd-speed-bench)")
    ap.add_argument("--reference", metavar="ACCTCTL",
                    help="another acctctl binary (an older build) timed in the same rounds, for before/after")
    ap.add_argument("--json", metavar="FILE", help="write every figure as JSON to FILE (- for stdout)")
    ap.add_argument("--background", type=int, default=0, metavar="N",
                    help="N more cgroups (a sleep each) under PREFIX-bg that acctd tracks but the rounds do not "
                         "list: a host tracking many more cgroups than those asked about (default 0)")
    ap.add_argument("--fast-interval", type=int, default=0, metavar="MS",
                    help="acctd's fast interval (default: 1 s, or 0.3 ms per cgroup tracked where that is longer)")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.rounds = "200", 5
    if "speed-bench" not in args.prefix or not args.prefix.startswith("/") or args.prefix.count("/") != 1:
        ap.error("--prefix must be a top-level cgroup path with 'speed-bench' in its name")
    if os.geteuid() != 0:
        print("bench-cgtop: skipped: needs root (it creates real cgroups)", file=sys.stderr)
        return 77
    cgtop = shutil.which("systemd-cgtop")
    if not cgtop:
        print("bench-cgtop: skipped: systemd-cgtop is not installed", file=sys.stderr)
        return 77
    args.acctd = os.path.join(args.build, "daemon", "acctd", "acctd")
    args.acctctl = os.environ.get("ACCTCTL") or os.path.join(args.build, "daemon", "acctctl", "acctctl")
    for p in (args.acctd, args.acctctl):
        if not os.access(p, os.X_OK):
            ap.error("%s is not built (ninja -C BUILD daemon/acctd/acctd daemon/acctctl/acctctl)" % p)
    # acctd caches a descriptor per file: give it a service's limit where we may
    soft, hard = bs.resource.getrlimit(bs.resource.RLIMIT_NOFILE)
    args.nofile = None
    with contextlib.suppress(ValueError, OSError):
        bs.resource.setrlimit(bs.resource.RLIMIT_NOFILE, (soft, max(hard, bs.SYSTEMD_NOFILE)))
        args.nofile = bs.SYSTEMD_NOFILE

    hiers = bs.hierarchy_dirs()
    res = {"machine": bs.machine(), "rounds": args.rounds, "sizes": [],
           "layout": "%s host, cgroups in %s" % (bs.host_mode(), ", ".join(os.path.basename(h) or h for h in hiers))}

    def on_signal(signum, frame):
        raise bs.Interrupted("signal %d" % signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    tmp = tempfile.mkdtemp(prefix="acctd-speed-bench-")
    os.mkdir(os.path.join(tmp, "no-dropins"))
    rc = 0
    try:
        for p in (args.prefix, args.prefix + "-bg"):
            bs.remove_leftovers(p, hiers)
        for n in (int(x) for x in args.sizes.split(",") if x.strip()):
            log("%d cgroups" % n)
            res["sizes"].append(run_size(args, tmp, n, hiers, cgtop))
    except bs.Interrupted as e:
        log("interrupted (%s); cleaned up" % e)
        rc = 130
    except Exception as e:
        log("failed: %s; cleaned up (logs in %s)" % (e, tmp))
        tmp, rc = None, 1
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        try:
            for p in (args.prefix, args.prefix + "-bg"):
                bs.remove_leftovers(p, hiers)
        except Exception as e:
            log("cleanup: %s" % e)
            rc = rc or 1
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if rc == 0:
        print(report(res))
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
