#!/usr/bin/env python3
"""bench-metrics.py - the /metrics benchmark of acctd (issue 5, "Benchmark").

At each size (default 1,000 and 10,000 cgroups, fake v2 trees built with
tests/fakecg.py), acctd runs with its default configuration (fast interval
1 s, slow 10 s, [metrics] max_series 50,000) and is scraped REPS times in each
of these ways: text 0.0.4 or OpenMetrics, gzip off or on, each of the default
page (bounded by max_series) and of a page that selects cgroups itself
(--select, default ?max_depth=2: one more level than the default page shows
at 10,000, no max_series cut), and the whole tree (?cgroup=*, what the
default page was before max_series). Per way it reports:

  * scrape time: from sending the request to the last byte, by a client that
    reads as fast as it can (median and 90th percentile, ms);
  * the page: bytes on the wire and, for gzip, before compression;
  * acctd's CPU per scrape (its process CPU clock over the REPS scrapes,
    minus what it spends idle over the same wall time: sampling passes);
  * peak memory: acctd's VmHWM during the scrapes minus its VmRSS before them
    (a fresh daemon per way, its peak reset with /proc/PID/clear_refs once it
    has sampled everything).

The targets: <= 100 ms per scrape at 10,000 cgroups without gzip (issue 5);
the default page at 10,000 cgroups in the low tens of thousands of series and
under 250 ms (median; issue 31).
Trees are cached in --tree-dir (building 10,000 cgroups takes a minute).

Output: a Markdown table on stdout; --json FILE for every figure.
"""

import argparse
import datetime
import gzip
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FAKECG = os.path.join(SRC, "tests", "fakecg.py")
OM_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
             "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return None


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def reset_peak(pid):
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def scrape(port, accept, gz, buf, query=""):
    """One GET /metrics?query: (seconds to the last byte, wire bytes, body)."""
    headers = "GET /metrics%s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n" % query
    if accept:
        headers += "Accept: %s\r\n" % accept
    if gz:
        headers += "Accept-Encoding: gzip\r\n"
    req = (headers + "\r\n").encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n = 0
    t0 = time.perf_counter()
    s.sendall(req)
    with memoryview(buf) as view:
        while n < len(buf):
            k = s.recv_into(view[n:])
            if k == 0:
                break
            n += k
        t = time.perf_counter() - t0
        out = bytes(view[:n])
    s.close()
    if n == len(buf):
        raise RuntimeError("page larger than the client's buffer (%d bytes)" % len(buf))
    return t, n, out


def dechunk(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    out = bytearray()
    i = 0
    while True:
        j = body.index(b"\r\n", i)
        size = int(body[i:j], 16)
        if size == 0:
            break
        out += body[j + 2:j + 2 + size]
        i = j + 2 + size + 2
    return head.decode("latin-1"), bytes(out)


def build_tree(tree_dir, count):
    root = os.path.join(tree_dir, "v2-%d" % count)
    if os.path.exists(os.path.join(root, ".fakecg-state.json")):
        return root
    shutil.rmtree(root, ignore_errors=True)
    log("building a fake tree of %d cgroups in %s" % (count, root))
    subprocess.run([sys.executable, FAKECG, "build", "--root", root, "--mode", "v2", "--count", str(count),
                    "--depth", "4"], check=True, stdout=subprocess.DEVNULL)
    return root


def wait_ready(port, timeout=120):
    end = time.monotonic() + timeout
    buf = bytearray(256 << 20)
    while time.monotonic() < end:
        try:
            _, _, raw = scrape(port, None, False, buf)
            if b"\nacctd_ready 1\n" in raw:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("acctd did not become ready")


def start_acctd(acctd, root, workdir):
    port = free_port()
    proc = subprocess.Popen([acctd, "--config", os.devnull, "--config-dropins", "", "--cgroup-root", root,
                             "--meminfo", os.path.join(root, ".fakecg-meminfo"),
                             "--metrics-listen", "127.0.0.1:%d" % port, "--socket",
                             os.path.join(workdir, "api.sock"), "--log-level", "notice"],
                            stdout=open(os.path.join(workdir, "acctd.log"), "a"), stderr=subprocess.STDOUT)
    return proc, port


def stop_acctd(proc):
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def measure_way(acctd, root, reps, workdir, fmt, accept, gz, page="default", query=""):
    """A fresh daemon per way, so that its peak memory is this way's."""
    proc, port = start_acctd(acctd, root, workdir)
    try:
        wait_ready(port)
        time.sleep(11)  # past the first slow pass: every value read once
        # idle CPU (sampling passes) per second, to subtract from the scrapes'
        c0, t0 = proc_cpu(proc.pid), time.monotonic()
        time.sleep(3)
        idle_cpu_per_s = (proc_cpu(proc.pid) - c0) / (time.monotonic() - t0)
        rss = proc_status(proc.pid, "VmRSS")
        reset_peak(proc.pid)
        buf = bytearray(256 << 20)
        times, wire = [], []
        c0, w0 = proc_cpu(proc.pid), time.monotonic()
        body = None
        for _ in range(reps):
            t, n, raw = scrape(port, accept, gz, buf, query)
            times.append(t)
            wire.append(n)
            body = raw
        cpu = proc_cpu(proc.pid) - c0 - idle_cpu_per_s * (time.monotonic() - w0)
        hwm = proc_status(proc.pid, "VmHWM")
        rss_after = proc_status(proc.pid, "VmRSS")
    finally:
        stop_acctd(proc)
    head, payload = dechunk(body)
    assert " 200 " in head.split("\r\n")[0], head
    page_text = gzip.decompress(payload) if gz else payload
    assert page_text.endswith(b"# EOF\n") == (fmt == "openmetrics")
    times.sort()
    return {
        "page": page, "query": query, "format": fmt, "gzip": gz, "reps": reps,
        "series": sum(1 for line in page_lines(page_text) if line and not line.startswith(b"#")),
        "cgroups_left_out": left_out(page_text),
        "median_ms": statistics.median(times) * 1e3,
        "p90_ms": times[min(len(times) - 1, int(len(times) * 0.9))] * 1e3,
        "min_ms": times[0] * 1e3,
        "wire_bytes": int(statistics.median(wire)),
        "page_bytes": len(page_text),
        "lines": page_text.count(b"\n"),
        "cpu_ms_per_scrape": max(cpu, 0) / reps * 1e3,
        "idle_cpu_per_s": idle_cpu_per_s,
        "rss_before": rss, "rss_after": rss_after, "hwm": hwm,
        "peak_delta": (hwm - rss) if hwm and rss else None,
    }


def page_lines(page):
    return page.split(b"\n")


def left_out(page):
    """acctd_metrics_cgroups_left_out of a page (None: absent)."""
    for line in page_lines(page):
        if line.startswith(b"acctd_metrics_cgroups_left_out "):
            return int(float(line.split()[1]))
    return None


def measure(acctd, root, reps, workdir, pages, ways):
    rows = []
    for page, query in pages:
        for fmt, accept, gz in ways:
            row = measure_way(acctd, root, reps, workdir, fmt, accept, gz, page, query)
            rows.append(row)
            log("%s %s gzip=%s: median %.1f ms, %d series, %d bytes, peak +%.1f MB" % (
                page, fmt, gz, row["median_ms"], row["series"], row["wire_bytes"], (row["peak_delta"] or 0) / 1e6))
    return rows


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024 // 1024
    return "%s, %d CPUs, %d GiB, Linux %s, load average %.1f at start" % (
        model, os.cpu_count(), mem, platform.release(), os.getloadavg()[0])


def mb(v):
    return "-" if v is None else "%.1f MB" % (v / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--acctd", default=os.environ.get("ACCTD") or os.path.join(SRC, "build", "daemon", "acctd", "acctd"))
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tree-dir", default=os.path.join(tempfile.gettempdir(), "acctd-bench-metrics-trees"))
    ap.add_argument("--json", help="write every figure as JSON to FILE (- for stdout)")
    ap.add_argument("--select", default="?max_depth=2",
                    help="the query of the selected page (default ?max_depth=2); empty: none")
    ap.add_argument("--whole", action="store_true", help="also the whole tree (?cgroup=*)")
    ap.add_argument("--ways", default="text,openmetrics,text+gzip,openmetrics+gzip",
                    help="formats, +gzip for gzip (default all four)")
    args = ap.parse_args()
    if not os.path.exists(args.acctd):
        sys.exit("no acctd at %s (--acctd or ACCTD)" % args.acctd)
    os.makedirs(args.tree_dir, exist_ok=True)
    results = {"machine": machine(), "date": datetime.date.today().isoformat(), "sizes": {}}
    for size in [int(x) for x in args.sizes.split(",")]:
        root = build_tree(args.tree_dir, size)
        pages = [("default", "")] + ([("selected", args.select)] if args.select else []) + \
            ([("whole", "?cgroup=*")] if args.whole else [])
        ways = []
        for w in args.ways.split(","):
            fmt = w.split("+")[0]
            ways.append((fmt, OM_ACCEPT if fmt == "openmetrics" else None, w.endswith("+gzip")))
        with tempfile.TemporaryDirectory() as work:
            rows = measure(args.acctd, root, args.reps, work, pages, ways)
        results["sizes"][size] = {"rows": rows}

    print("Machine: %s.\n" % results["machine"])
    print("| cgroups | page | format | gzip | scrape median | p90 | on the wire | page | series | left out "
          "| acctd CPU/scrape | peak memory |")
    print("|--------:|------|--------|------|--------------:|----:|------------:|-----:|-------:|---------:"
          "|-----------------:|------------:|")
    for size, r in results["sizes"].items():
        for row in r["rows"]:
            print("| {:,} | {} | {} | {} | {:.1f} ms | {:.1f} ms | {} | {} | {:,} | {} | {:.1f} ms | {} |".format(
                size, row["page"] + (" `%s`" % row["query"] if row["query"] else ""), row["format"],
                "on" if row["gzip"] else "off", row["median_ms"], row["p90_ms"],
                mb(row["wire_bytes"]), mb(row["page_bytes"]), row["series"],
                "-" if row["cgroups_left_out"] is None else "{:,}".format(row["cgroups_left_out"]),
                row["cpu_ms_per_scrape"], "+" + mb(row["peak_delta"]) if row["peak_delta"] is not None else "-"))
    if args.json:
        text = json.dumps(results, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
