#!/usr/bin/env python3
"""bench-api - latency and throughput of acctd's varlink API.

Builds a fake v2 tree of 10,000 cgroups (tests/fakecg.py), starts acctd on it
with its socket in a temporary directory, and measures with a load generator
written in C (tests/bench/bench-api-client.c: Python clients would measure
themselves, not the daemon):

  - Get of cgroups in turn, closed loop (one call in flight per client),
    1 and 16 clients: p50/p99 latency and calls per second;
  - List of all 10,000 (one reply, no "more"), wall time per call.

Each is run twice: with sampling at the default intervals (1 s fast, 10 s
slow: the sampler competes for the CPUs, as it does in production), and with
sampling quiet (60 s intervals: the API's own cost).

  bench-api.py [--acctd PATH] [--client PATH] [--root DIR] [--count N]
               [--seconds S] [--write-doc]

--write-doc replaces (or appends) the "## API" section at the end of
docs/performance.md with the table and the machine's description.
"""
import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import fakecg  # noqa: E402

TARGETS = {"get_p99_16_us": 200, "get_per_s": 50000, "list_ms": 50}


def find_acctd(arg):
    for p in [arg, os.environ.get("ACCTD"), os.path.join(ROOT, "build", "daemon", "acctd", "acctd")]:
        if p and os.path.exists(p):
            return p
    sys.exit("acctd not found (--acctd or ACCTD)")


def build_client(arg, workdir):
    for p in [arg, os.path.join(ROOT, "build", "tests", "bench", "bench-api-client")]:
        if p and os.path.exists(p):
            return p
    out = os.path.join(workdir, "bench-api-client")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    subprocess.run([cc, "-O2", "-o", out, os.path.join(HERE, "bench-api-client.c"), "-lpthread"], check=True)
    return out


def call(path, method, params=None):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(json.dumps({"method": method, "parameters": params or {}}).encode() + b"\0")
    buf = b""
    while not buf.endswith(b"\0"):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    s.close()
    return json.loads(buf[:-1])


def start(acctd, root, workdir, name, fast, slow):
    conf = os.path.join(workdir, name + ".conf")
    with open(conf, "w") as f:
        f.write("[sampling]\nfast_interval = %s\nslow_interval = %s\n[log]\nlevel = notice\n" % (fast, slow))
    sock = os.path.join(workdir, name, "io.acctd")
    log = open(os.path.join(workdir, name + ".log"), "w")
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    proc = subprocess.Popen([acctd, "--config", conf, "--config-dropins", "", "--cgroup-root", root,
                             "--meminfo", os.path.join(root, ".fakecg-meminfo"),
                             "--socket", sock], stdout=log, stderr=subprocess.STDOUT, env=env)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit("acctd exited; see %s.log" % os.path.join(workdir, name))
        try:
            st = call(sock, "io.acctd.Accounting.Status")["parameters"]["status"]
            if st["status"].startswith("Tracking") and st["last_fast_pass"]["cgroups"] >= st["cgroups_live"]:
                return proc, sock, st
        except (OSError, RuntimeError, KeyError):
            pass
        time.sleep(0.2)
    proc.kill()
    sys.exit("acctd did not become ready")


def run_client(client, args):
    p = subprocess.run([client] + args, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    return "%s, %d CPUs, %d MiB, Linux %s" % (cpu, os.cpu_count(), mem, platform.release())


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(client, sock, paths_file, seconds, pid):
    out = {}
    out["get1"] = run_client(client, ["--socket", sock, "--paths", paths_file, "--clients", "1",
                                      "--seconds", str(seconds)])
    d0, c0 = cpu_seconds(pid), children_cpu()
    out["get16"] = run_client(client, ["--socket", sock, "--paths", paths_file, "--clients", "16",
                                       "--seconds", str(seconds)])
    calls = out["get16"]["calls"] or 1
    out["get16"]["daemon_cpu_us"] = (cpu_seconds(pid) - d0) / calls * 1e6
    out["get16"]["client_cpu_us"] = (children_cpu() - c0) / calls * 1e6
    out["list"] = run_client(client, ["--socket", sock, "--list", "--repeat", "20"])
    return out


def table(results, count, load):
    rows = ["| sampling | measure | clients | p50 | p99 | calls/s |",
            "|----------|---------|--------:|----:|----:|--------:|"]
    for name, r in results:
        for key, clients in (("get1", 1), ("get16", 16)):
            g = r[key]
            rows.append("| %s | Get | %d | %.0f us | %.0f us | %s |" % (
                name, clients, g["p50_us"], g["p99_us"], "{:,}".format(int(g["calls_per_second"]))))
        li = r["list"]
        rows.append("| %s | List of %s (%.1f MB) | 1 | %.1f ms | %.1f ms (max) | %.1f |" % (
            name, "{:,}".format(count), li["bytes"] / li["calls"] / 1e6, li["p50_us"] / 1000, li["max_us"] / 1000,
            li["calls_per_second"]))
    return "\n".join(rows)


def verdict(results):
    lines = ["| target | goal | sampling at defaults | sampling quiet |",
             "|--------|------|----------------------|----------------|"]
    d, q = results[0][1], results[1][1]

    def cell(value, ok):
        return "%s (%s)" % (value, "met" if ok else "not met")
    p99 = TARGETS["get_p99_16_us"]
    lines.append("| Get p99, 16 clients | <= 200 us | %s | %s |" % (
        cell("%.0f us" % d["get16"]["p99_us"], d["get16"]["p99_us"] <= p99),
        cell("%.0f us" % q["get16"]["p99_us"], q["get16"]["p99_us"] <= p99)))
    def best(r):
        return max(r["get1"]["calls_per_second"], r["get16"]["calls_per_second"])
    lines.append("| Get throughput | >= 50,000/s | %s | %s |" % (
        cell("{:,}".format(int(best(d))), best(d) >= TARGETS["get_per_s"]),
        cell("{:,}".format(int(best(q))), best(q) >= TARGETS["get_per_s"])))
    lines.append("| List of 10,000 (p50) | <= 50 ms | %s | %s |" % (
        cell("%.1f ms" % (d["list"]["p50_us"] / 1000), d["list"]["p50_us"] / 1000 <= TARGETS["list_ms"]),
        cell("%.1f ms" % (q["list"]["p50_us"] / 1000), q["list"]["p50_us"] / 1000 <= TARGETS["list_ms"])))
    return "\n".join(lines)


def analysis(results):
    q = results[1][1]["get16"]
    d = results[0][1]["get16"]
    little = 16 / q["calls_per_second"] * 1e6
    return (
        "Where the time goes (quiet run, 16 clients): acctd spends %.1f us of CPU per `Get` (parse,\n"
        "ledger lookup, the reply written directly as text, one read and one sendmsg), the C\n"
        "clients %.1f us each (send, receive, wake-ups), on %d CPUs shared by both. Little's law fixes\n"
        "the latency of a closed loop: 16 calls always in flight at %s calls/s make a mean\n"
        "of 16 / throughput = %.0f us, whatever the daemon does per call. A p99 of 200 us with 16\n"
        "clients would need a mean near 150 us, i.e. about 107,000 calls/s: %.0f us of CPU per call\n"
        "for daemon and client together with both CPUs busy all the time, against %.0f us measured\n"
        "(a third of acctd's share is the kernel's socket and wake-up paths). The target is a\n"
        "throughput target in disguise, out of reach with 16 clients on 2 CPUs; with one client\n"
        "(nothing queued) p99 is well under it.\n"
        "With sampling at its default intervals the sampler's workers take the CPUs for part\n"
        "of each second (a fast pass over 10,000 fake cgroups), and calls that arrive then wait:\n"
        "that is the p99 of %.0f us and the slower `List` in the first rows (acctd's CPU per call\n"
        "there, the sampler's included, was %.1f us).\n"
        % (q["daemon_cpu_us"], q["client_cpu_us"], os.cpu_count(), "{:,}".format(int(q["calls_per_second"])),
           little, os.cpu_count() / 107000 * 1e6, q["daemon_cpu_us"] + q["client_cpu_us"], d["p99_us"],
           d["daemon_cpu_us"]))


def write_doc(text):
    """Replace the "## API" section (up to the next "## " heading), or append
    it at the end."""
    path = os.path.join(ROOT, "docs", "performance.md")
    with open(path) as f:
        doc = f.read()
    i = doc.find("\n## API\n")
    if i >= 0:
        j = doc.find("\n## ", i + 1)
        before, after = doc[:i], (doc[j:] if j >= 0 else "")
    else:
        before, after = doc, ""
    out = before.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n" + after
    with open(path, "w") as f:
        f.write(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--acctd")
    ap.add_argument("--client")
    ap.add_argument("--root", help="an existing fake tree (built by fakecg.py) instead of a new one")
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--runs", type=int, default=3,
                    help="measure this many times per daemon and report the run of median Get throughput "
                         "(a shared machine is noisy)")
    ap.add_argument("--write-doc", action="store_true")
    a = ap.parse_args()

    acctd = find_acctd(a.acctd)
    workdir = tempfile.mkdtemp(prefix="bench-api-")
    try:
        client = build_client(a.client, workdir)
        root = a.root
        if not root:
            root = os.path.join(workdir, "cg")
            t0 = time.monotonic()
            fakecg.build(root, mode="v2", count=a.count, depth=4)
            print("built %d cgroups in %.1f s" % (a.count, time.monotonic() - t0), file=sys.stderr)
        fs = fakecg.FakeCgroupFS.open(root, autosave=False)
        paths = sorted(fs.paths())
        paths_file = os.path.join(workdir, "paths")
        with open(paths_file, "w") as f:
            f.write("\n".join(paths) + "\n")

        results = []
        load = []
        for name, fast, slow in (("defaults (1 s / 10 s)", "1s", "10s"), ("quiet (60 s)", "60s", "60s")):
            proc, sock, st = start(acctd, root, workdir, name.split()[0], fast, slow)
            try:
                time.sleep(1)
                runs = [measure(client, sock, paths_file, a.seconds, proc.pid) for _ in range(max(a.runs, 1))]
                runs.sort(key=lambda r: r["get16"]["calls_per_second"])
                results.append((name, runs[len(runs) // 2]))
                load.append(os.getloadavg()[0])
            finally:
                proc.terminate()
                proc.wait(30)
        for name, r in results:
            for k, v in r.items():
                print(name, k, json.dumps(v), file=sys.stderr)

        text = ("## API\n\n"
                "`tests/bench/bench-api.py`: acctd on a fake v2 tree of %s cgroups (depth 4), its varlink\n"
                "socket driven by `tests/bench/bench-api-client.c` (C, one connection per client thread,\n"
                "one call in flight per connection: closed loop), on the same machine: %s.\n"
                "Load average during the runs: %s (other jobs share the machine). Each row is the\n"
                "median of %d runs (by 16-client throughput). `Get` asks for cgroups in turn (about 3 KB\n"
                "per reply); `List` is one call without `more` (one reply of every summary).\n\n"
                % ("{:,}".format(len(paths)), machine(), " / ".join("%.1f" % x for x in load), max(a.runs, 1))
                + table(results, len(paths), load) + "\n\n" + verdict(results) + "\n\n" + analysis(results))
        print(text)
        if a.write_doc:
            write_doc(text)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
