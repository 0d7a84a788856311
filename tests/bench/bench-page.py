#!/usr/bin/env python3
"""What acctd's page costs acctd when it is left open (issue 34, docs/page.md).

acctd runs at its defaults (sampling 1 s / 10 s, history recorded every 10 s)
on a fake v2 tree of N cgroups (tests/fakecg.py, default 1,000), serving the
page on a free loopback port. A real headless Chromium (Debian's chromium and
chromium-driver, through tests/integration/webdriver.py) opens the page with
one cgroup's history shown (10 minutes), as a person leaves it; the page then
asks /api/list and /api/status at its interval and the history every 10 s.
In windows of --window seconds, in turn, this measures acctd's CPU (its
process CPU clock: every thread) with no page open, with the page at its
default interval (2 s) and at its fastest (1 s), --rounds times, and prints
the median of each and the page's share (the difference), in % of one core,
with the API calls the page made per window (from /metrics) and the size of
one List. Before that, acctd's CPU per call for --calls calls back to back:
GET /api/list, the same List on the varlink socket (what the page's way
through the API adds), GET /api/status. Chromium's own CPU is not acctd's and is not counted.

Root is not needed. Exit 77 when chromium or chromium-driver is missing.

    python3 tests/bench/bench-page.py [--cgroups 1000] [--window 30] [--rounds 2]
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests"))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import fakecg  # noqa: E402
import webdriver  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_cpu_ns(pid):
    # another process's CPU clock, all threads: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=60) as r:
        return r.read()


def api_calls(port):
    """{method: calls answered ok} from /metrics."""
    out = {}
    for m in re.finditer(r'^acctd_api_requests_total\{method="io\.acctd\.Accounting\.(\w+)",result="ok"\} (\d+)',
                         get(port, "/metrics").decode(), re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def varlink_call(path, method):
    """One call on the varlink socket, its reply read to the NUL byte."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(json.dumps({"method": "io.acctd.Accounting." + method}).encode() + b"\0")
        data = b""
        while not data.endswith(b"\0"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        return data


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--acctd", default=os.path.join(SRC, "build", "daemon", "acctd", "acctd"))
    ap.add_argument("--cgroups", type=int, default=1000)
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--calls", type=int, default=100, help="calls back to back for the CPU per call")
    args = ap.parse_args()
    missing = webdriver.missing()
    if missing:
        print("skip: " + missing)
        return 77

    tmp = tempfile.mkdtemp(prefix="bench-page-")
    root = os.path.join(tmp, "cgroup")
    subprocess.run([sys.executable, os.path.join(SRC, "tests", "fakecg.py"), "build", "--root", root,
                    "--count", str(args.cgroups)], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    conf = os.path.join(tmp, "acctd.conf")
    with open(conf, "w") as f:
        f.write("[history]\npath = %s\n" % os.path.join(tmp, "history.db"))
    env = dict(os.environ, STATE_DIRECTORY=tmp)
    env.pop("NOTIFY_SOCKET", None)
    log = open(os.path.join(tmp, "acctd.log"), "w")
    d = subprocess.Popen([args.acctd, "--config", conf, "--config-dropins", "", "--socket",
                          os.path.join(tmp, "io.acctd"), "--metrics-listen", "127.0.0.1:%d" % port]
                         + fakecg.acctd_root_args(root), stdout=log, stderr=subprocess.STDOUT, env=env)
    b = None
    try:
        end = time.monotonic() + 60
        while True:
            try:
                cgroups = json.loads(get(port, "/api/list"))["parameters"]["cgroups"]
                if len(cgroups) >= args.cgroups:
                    break
            except OSError:
                pass
            assert d.poll() is None and time.monotonic() < end, "acctd did not start (%s)" % log.name
            time.sleep(0.2)
        list_bytes = len(get(port, "/api/list"))
        # in turns of calls/10, so that what else the machine does falls on
        # all three alike; the median turn of each
        per_call = {}
        kinds = (("GET /api/list", lambda: get(port, "/api/list")),
                 ("varlink List", lambda: varlink_call(os.path.join(tmp, "io.acctd"), "List")),
                 ("GET /api/status", lambda: get(port, "/api/status")))
        turn = max(1, args.calls // 10)
        for _ in range(10):
            for name, fn in kinds:
                c0 = process_cpu_ns(d.pid)
                for _ in range(turn):
                    fn()
                per_call.setdefault(name, []).append((process_cpu_ns(d.pid) - c0) / 1e6 / turn)
        per_call = {k: statistics.median(v) for k, v in per_call.items()}
        shown = sorted(c["path"] for c in cgroups)[len(cgroups) // 2]
        b = webdriver.Browser(tmp)
        time.sleep(5)  # past acctd's start (its first slow passes)

        def page(interval_ms):
            if interval_ms is None:
                b.get("about:blank")
                return
            b.get("http://127.0.0.1:%d/ui/#cgroup=%s&window=600" % (port, shown))
            b.wait(lambda: b.js("return Number(document.body.dataset.ticks || 0)") >= 1, what="the page")
            b.js("const s = document.querySelector('#interval'); s.value = arguments[0];"
                 "s.dispatchEvent(new Event('change'))", str(interval_ms))

        conditions = [("no page", None), ("page, every 2 s (default)", 2000), ("page, every 1 s", 1000)]
        results = {name: [] for name, _ in conditions}
        calls = {name: [] for name, _ in conditions}
        for _ in range(args.rounds):
            for name, interval in conditions:
                page(interval)
                time.sleep(2)
                c0, n0, t0 = process_cpu_ns(d.pid), api_calls(port), time.monotonic()
                time.sleep(args.window)
                c1, t1 = process_cpu_ns(d.pid), time.monotonic()
                n1 = api_calls(port)
                results[name].append(100.0 * (c1 - c0) / 1e9 / (t1 - t0))
                calls[name].append({k: n1.get(k, 0) - n0.get(k, 0) for k in ("List", "Status", "History")
                                    if n1.get(k, 0) - n0.get(k, 0)})
        base = statistics.median(results["no page"])
        print("acctd on a fake v2 tree of %d cgroups at its default intervals, history on; %d windows of %.0f s "
              "per condition; one List is %d bytes" % (len(cgroups), args.rounds, args.window, list_bytes))
        print("%-28s %10s %10s  %s" % ("condition", "acctd CPU", "page's", "API calls per window"))
        for name, _ in conditions:
            med = statistics.median(results[name])
            print("%-28s %9.3f%% %9.3f%%  %s   (windows: %s)" % (
                name, med, med - base if name != "no page" else 0.0, calls[name][-1],
                ", ".join("%.3f%%" % v for v in results[name])))
        print("acctd's CPU per call (median of 10 turns of %d calls back to back): %s" % (
            turn, ", ".join("%s %.2f ms" % kv for kv in per_call.items())))
        return 0
    finally:
        if b:
            b.close()
        d.terminate()
        d.wait(30)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
