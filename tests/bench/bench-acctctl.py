#!/usr/bin/env python3
"""bench-acctctl.py - `acctctl list` against reading cgroupfs directly (issue 4,
"Benchmark").

On a fake tree of N cgroups (default 10,000, v2, depth 4, built with
tests/fakecg.py), with acctd running on it, it times in one run, interleaved
round by round so that every contender sees the same machine:

  * `acctctl list` (the table, to /dev/null), `acctctl list --json`, and
    `acctctl list --sort=memory --tree`: wall time and the process's CPU
    (user + system, from wait4);
  * the List call alone on a raw socket (one call with "more", until the
    last reply's bytes are in; no parsing): the daemon's share;
  * reading the same values directly: a small C program (compiled here with
    cc -O2) that walks the tree and for every cgroup opens, reads and closes
    memory.current, cpu.stat and cpu.pressure, parses them and prints one
    formatted line per cgroup; and the same as a Python loop.

The fake tree's files are ordinary files, so the direct readers pay the
system calls but not the kernel's formatting of real cgroup files; on a real
cgroupfs they cost more (see bench-sampling.py for real cgroups).

Output: a Markdown table on stdout (--json FILE for all figures).

  bench-acctctl.py [--build DIR] [--count N] [--depth D] [--runs R] [--root DIR] [--json FILE]

acctd and acctctl come from DIR/daemon/acctd and DIR/daemon/acctctl (default:
build/ in the source tree; ACCTD and ACCTCTL override).
"""

import argparse
import datetime
import json
import os
import platform
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
FAKECG = os.path.join(SRC, "tests", "fakecg.py")

DIRECT_C = r"""
/* The direct reader: walk the tree, read three files per cgroup, print a line. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[8192];
static long n;

static ssize_t readat(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t k;
	if (fd < 0)
		return -1;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (k >= 0)
		buf[k] = 0;
	return k;
}

static void visit(int dfd, const char *path)
{
	long long mem = -1, usage = -1;
	double avg10 = -1;
	DIR *d;
	struct dirent *e;

	if (readat(dfd, "memory.current") > 0)
		mem = atoll(buf);
	if (readat(dfd, "cpu.stat") > 0 && strncmp(buf, "usage_usec ", 11) == 0)
		usage = atoll(buf + 11);
	if (readat(dfd, "cpu.pressure") > 0) {
		char *p = strstr(buf, "avg10=");
		if (p)
			avg10 = atof(p + 6);
	}
	printf("%-60s %12lld %14lld %6.2f%%\n", path, mem, usage, avg10);
	n++;

	d = fdopendir(dup(dfd));
	if (!d)
		return;
	while ((e = readdir(d))) {
		char sub[4096];
		int cfd;
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		cfd = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cfd < 0)
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", path, strcmp(path, "/") ? "/" : "", e->d_name);
		visit(cfd, sub);
		close(cfd);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	int fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	visit(fd, "/");
	fprintf(stderr, "%ld\n", n);
	return 0;
}
"""

DIRECT_PY = r"""
import os, sys

def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None

def visit(d, path, out):
    m = read(d + "/memory.current")
    mem = int(m) if m else -1
    s = read(d + "/cpu.stat")
    usage = int(s.split(b"\n", 1)[0].split()[1]) if s else -1
    p = read(d + "/cpu.pressure")
    avg10 = float(p.split(b"avg10=", 1)[1].split()[0]) if p else -1.0
    out.append("%-60s %12d %14d %6.2f%%" % (path, mem, usage, avg10))
    with os.scandir(d) as it:
        for e in it:
            if e.is_dir(follow_symlinks=False) and not e.name.startswith("."):
                visit(e.path, (path if path != "/" else "") + "/" + e.name, out)

out = []
visit(sys.argv[1], "/", out)
sys.stdout.write("\n".join(out) + "\n")
sys.stderr.write("%d\n" % len(out))
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def binaries(build):
    acctd = os.environ.get("ACCTD") or os.path.join(build, "daemon", "acctd", "acctd")
    acctctl = os.environ.get("ACCTCTL") or os.path.join(build, "daemon", "acctctl", "acctctl")
    for b in (acctd, acctctl):
        if not os.access(b, os.X_OK):
            sys.exit("bench-acctctl: %s not found (build first, or set ACCTD)" % b)
    return acctd, acctctl


def timed(cmd, env=None):
    """Run cmd with stdout to /dev/null; wall seconds and CPU seconds (user+sys)."""
    with open(os.devnull, "w") as null:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read().decode()
        p.stderr.close()
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (cmd, p.returncode, err))
    return wall, ru.ru_utime + ru.ru_stime, err


def raw_list(sock_path):
    """The List call with "more" on a raw socket: seconds until the last reply
    is in, replies and bytes."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    t0 = time.perf_counter()
    s.sendall(b'{"method":"io.acctd.Accounting.List","more":true}\0')
    buf, nbytes, replies = b"", 0, 0
    while True:
        d = s.recv(1 << 20)
        if not d:
            raise RuntimeError("acctd closed the connection")
        nbytes += len(d)
        buf += d
        done = False
        while b"\0" in buf:
            msg, buf = buf.split(b"\0", 1)
            replies += 1
            # only the envelope's flag matters; the last reply has no "continues"
            if b'"continues":true' not in msg[-40:] and b'"continues":true' not in msg[:40]:
                done = True
        if done:
            break
    wall = time.perf_counter() - t0
    s.close()
    return wall, replies, nbytes


class Acctd:
    def __init__(self, acctd, root, tmp):
        self.sock = os.path.join(tmp, "io.acctd")
        self.notify_path = os.path.join(tmp, "notify")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        env = dict(os.environ, NOTIFY_SOCKET=self.notify_path)
        self.log = open(os.path.join(tmp, "acctd.log"), "w")
        self.proc = subprocess.Popen([acctd, "--config", os.devnull, "--config-dropins", "", "--cgroup-root", root,
                                      "--meminfo", os.path.join(root, ".fakecg-meminfo"),
                                      "--socket", self.sock, "--metrics-listen", "none", "--log-level", "warning"],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        t0 = time.monotonic()
        self.notify.settimeout(1)
        while time.monotonic() - t0 < 300:
            try:
                if b"READY=1" in self.notify.recv(4096):
                    self.ready_s = time.monotonic() - t0
                    return
            except socket.timeout:
                if self.proc.poll() is not None:
                    break
        self.stop()
        sys.exit("bench-acctctl: acctd did not become ready; see %s" % self.log.name)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.notify.close()
        self.log.close()


def summary(xs):
    xs = sorted(xs)
    return {"median": statistics.median(xs), "p90": xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))],
            "min": xs[0], "runs": len(xs)}


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    distro = "?"
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    distro = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(), "os": distro,
            "python": platform.python_version()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--root", help="an existing fake tree (fakecg.py build) instead of a new one")
    ap.add_argument("--json", help="write every figure as JSON to FILE (- for stdout)")
    args = ap.parse_args()

    acctd_bin, acctctl = binaries(args.build)
    tmp = tempfile.mkdtemp(prefix="bench-acctctl-")
    daemon = None
    try:
        root = args.root
        if not root:
            root = os.path.join(tmp, "cg")
            log("building a fake tree of %d cgroups..." % args.count)
            subprocess.run([sys.executable, FAKECG, "build", "--root", root, "--mode", "v2", "--count",
                            str(args.count), "--depth", str(args.depth)], check=True, stdout=subprocess.DEVNULL)
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        direct_c = None
        if cc:
            src = os.path.join(tmp, "direct.c")
            direct_c = os.path.join(tmp, "direct")
            with open(src, "w") as f:
                f.write(DIRECT_C)
            subprocess.run([cc, "-O2", "-o", direct_c, src], check=True)
        direct_py = os.path.join(tmp, "direct.py")
        with open(direct_py, "w") as f:
            f.write(DIRECT_PY)

        log("starting acctd...")
        daemon = Acctd(acctd_bin, root, tmp)
        env = dict(os.environ, ACCTD_ADDRESS="unix:" + daemon.sock, LC_ALL="C.UTF-8")
        env.pop("PAGER", None)

        contenders = [
            ("acctctl list", [acctctl, "list"]),
            ("acctctl list --json", [acctctl, "list", "--json"]),
            ("acctctl list --tree --sort=memory", [acctctl, "list", "--tree", "--sort=memory"]),
            ("List call on a raw socket (no parsing)", None),
        ]
        if direct_c:
            contenders.append(("direct: C, open+read+close 3 files per cgroup", [direct_c, root]))
        contenders.append(("direct: Python, the same", [sys.executable, direct_py, root]))

        # how many cgroups each sees (a sanity check: all must agree)
        counts = {}
        out = subprocess.run([acctctl, "list", "--no-legend"], env=env, capture_output=True, text=True, check=True)
        counts["acctctl"] = len(out.stdout.splitlines())
        for name, cmd in contenders:
            if cmd and cmd[0] != acctctl:
                counts[name] = int(timed(cmd, env)[2].strip().splitlines()[-1])

        res = {name: {"wall": [], "cpu": []} for name, _ in contenders}
        extra = {}
        load_before = os.getloadavg()[0]
        for r in range(args.runs + 1):  # round 0 warms up
            for name, cmd in contenders:
                if cmd is None:
                    wall, replies, nbytes = raw_list(daemon.sock)
                    cpu = None
                    extra = {"replies": replies, "bytes": nbytes}
                else:
                    wall, cpu, _ = timed(cmd, env)
                if r > 0:
                    res[name]["wall"].append(wall)
                    if cpu is not None:
                        res[name]["cpu"].append(cpu)
            log("round %d/%d done" % (r, args.runs))

        load_after = os.getloadavg()[0]
        figures = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
                   "loadavg_1min": [load_before, load_after],
                   "cgroups": counts, "acctd_ready_s": daemon.ready_s, "list_reply": extra, "results": {}}
        head = "what (%d cgroups)" % counts["acctctl"]
        print("| %-48s | wall median | wall p90 | wall min | CPU median |" % head)
        print("|%s|------------:|---------:|---------:|-----------:|" % ("-" * 50))
        for name, _ in contenders:
            w = summary(res[name]["wall"])
            c = summary(res[name]["cpu"]) if res[name]["cpu"] else None
            figures["results"][name] = {"wall_s": w, "cpu_s": c}
            print("| %-48s | %8.1f ms | %5.0f ms | %5.1f ms | %s |"
                  % (name, w["median"] * 1e3, w["p90"] * 1e3, w["min"] * 1e3,
                     "%7.1f ms" % (c["median"] * 1e3) if c else "%10s" % "-"))
        m = figures["machine"]
        print("\nMachine: %s, %d CPUs, Linux %s, %s; load average %.1f before, %.1f after. "
              "List reply: %d messages, %.1f MB. acctd ready after %.1f s. %d runs."
              % (m["cpu"], m["cpus"], m["kernel"], m["os"], load_before, load_after, extra.get("replies", 0),
                 extra.get("bytes", 0) / 1e6, daemon.ready_s, args.runs))
        if len(set(counts.values())) != 1:
            print("\nWARNING: the readers saw different numbers of cgroups: %s" % counts)
        if args.json:
            text = json.dumps(figures, indent=2)
            if args.json == "-":
                print(text)
            else:
                with open(args.json, "w") as f:
                    f.write(text + "\n")
    finally:
        if daemon:
            daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
