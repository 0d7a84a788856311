#!/usr/bin/env python3
"""bench-fleet.py - what one host costs a fleet's central Prometheus (issue 33,
docs/fleet.md "Cost"), measured.

At each size (default 1,000 and 10,000 cgroups: the fake v2 trees of
tests/bench/bench-metrics.py, built with tests/fakecg.py and cached in the
same place), acctd runs with its default configuration on the tree; a
per-host Prometheus scrapes it every --interval seconds (the same
evaluation interval), evaluates the shipped rules (prometheus/*.yml) and
sends everything by remote_write to a central Prometheus
(--web.enable-remote-write-receiver), as docs/fleet.md lays out. Each page
is scraped as a job of its own: the default page (bounded by [metrics]
max_series) and, with --select, a page that selects (default ?max_depth=2,
the services in their slices). Per size and page it reports:

  * the page's series (sample lines), of them acctd_cgroup_info and acctd's
    own (no cgroup label);
  * the per-host Prometheus's series: the scraped ones, up and the scrape's
    own, and those the shipped recording rules make;
  * at the central server: the series of that host (all of them arrive),
    and the samples it appends per second (measured over --measure seconds
    from prometheus_tsdb_head_samples_appended_total), which is what every
    host adds at this interval;
  * computed: series and samples per second of 1,000 such hosts at a 15 s
    scrape and evaluation interval (the one-minute rules once a minute).

Output: a Markdown table on stdout; --json FILE for every figure.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
RULES = [os.path.join(SRC, "prometheus", f) for f in ("acctd-rules.yml", "acctd-alerts.yml")]
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"

_spec = importlib.util.spec_from_file_location("bench_metrics", os.path.join(HERE, "bench-metrics.py"))
bm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bm)
log = bm.log


class Prom:
    def __init__(self, workdir, name, cfg, args=()):
        self.port = bm.free_port()
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir)
        path = os.path.join(self.dir, "prometheus.yml")
        with open(path, "w") as f:
            json.dump(cfg, f)
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen([PROMETHEUS, "--config.file=" + path,
                                      "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
                                      "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"]
                                     + list(args), stdout=self.log, stderr=subprocess.STDOUT)

    def query(self, q):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode({"query": q}))
        with urllib.request.urlopen(url, timeout=60) as r:
            doc = json.load(r)
        return doc["data"]["result"]

    def scalar(self, q):
        r = self.query(q)
        return float(r[0]["value"][1]) if r else 0.0

    def own(self, name):
        """A figure of the server's own /metrics, summed over its labels
        (2.42 counts samples appended by type)."""
        total = None
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=30) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " ") or line.startswith(name + "{"):
                    total = (total or 0) + float(line.rsplit(" ", 1)[1])
        return total

    def wait(self, q, pred, timeout, what):
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            assert self.proc.poll() is None, "prometheus exited:\n" + open(os.path.join(self.dir, "prometheus.log")).read()
            try:
                last = self.scalar(q)
                if pred(last):
                    return last
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError("timed out waiting for %s (last %r)" % (what, last))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def page_counts(port, query):
    buf = bytearray(256 << 20)
    _, _, raw = bm.scrape(port, None, False, buf, query)
    _, page = bm.dechunk(raw)
    lines = [ln for ln in page.split(b"\n") if ln and not ln.startswith(b"#")]
    return {"page_series": len(lines),
            "page_info": sum(1 for ln in lines if ln.startswith(b"acctd_cgroup_info{")),
            "page_self": sum(1 for ln in lines if b"cgroup=\"" not in ln),
            "page_cgroups_left_out": bm.left_out(page)}


def measure(acctd, root, workdir, page, query, interval, seconds):
    proc, port = bm.start_acctd(acctd, root, workdir)
    central = host = None
    try:
        bm.wait_ready(port)
        time.sleep(11)  # past the first slow pass: every value read once
        row = {"page": page, "query": query, "interval_s": interval}
        row.update(page_counts(port, query))
        central = Prom(workdir, "central-%s" % page, {"global": {}}, ["--web.enable-remote-write-receiver"])
        job = {"job_name": "acctd", "static_configs": [{"targets": ["127.0.0.1:%d" % port]}],
               "scrape_timeout": "%ds" % interval}
        if query:
            job["params"] = {k: v for k, v in urllib.parse.parse_qs(query.lstrip("?")).items()}
        host = Prom(workdir, "host-%s" % page, {
            "global": {"scrape_interval": "%ds" % interval, "evaluation_interval": "%ds" % interval,
                       "external_labels": {"hostname": "bench"}},
            "rule_files": RULES, "scrape_configs": [job],
            "remote_write": [{"url": "http://127.0.0.1:%d/api/v1/write" % central.port}]})
        host.wait('count_over_time(up{job="acctd"}[10m])', lambda v: v >= 3, 300, "three scrapes")
        # the minute rules run once a minute: every rule's series made once
        host.wait('count({__name__=~".+:.+:(sum|increase)1m"})', lambda v: v > 0, 150, "the minute rules")
        time.sleep(2 * interval)
        row["host_series"] = host.scalar("count({__name__=~\".+\"})")
        row["host_rule_series"] = host.scalar("count({__name__=~\"(cgroup|service|pod|container):.+\"})")
        row["host_service_series"] = host.scalar("count({__name__=~\"(service|pod|container):.+\"})")
        row["host_scraped_series"] = host.scalar('scrape_samples_scraped{job="acctd"}')
        central.wait('count({hostname="bench"})', lambda v: v >= row["host_series"] * 0.98, 600,
                     "the host's series at the central server")
        a0, t0 = central.own("prometheus_tsdb_head_samples_appended_total"), time.monotonic()
        time.sleep(seconds)
        a1, t1 = central.own("prometheus_tsdb_head_samples_appended_total"), time.monotonic()
        row["central_series"] = central.scalar('count({hostname="bench"})')
        row["central_samples_per_s"] = (a1 - a0) / (t1 - t0)
        row["central_head_series"] = central.own("prometheus_tsdb_head_series")
        # 1,000 hosts at 15 s: every scraped series and the lifetime rules'
        # once per 15 s, the minute rules' once a minute.
        minute = host.scalar("count({__name__=~\".+:.+:(sum|increase)1m\"})")
        row["host_minute_rule_series"] = minute
        per_15s = row["host_series"] - minute
        row["fleet_series"] = 1000 * row["host_series"]
        row["fleet_samples_per_s"] = 1000 * (per_15s / 15 + minute / 60)
        row["fleet_services_only_series"] = 1000 * (row["host_service_series"] + row["page_self"] + 1)
        return row
    finally:
        for p in (host, central):
            if p:
                p.stop()
        bm.stop_acctd(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--acctd", default=os.environ.get("ACCTD") or os.path.join(SRC, "build", "daemon", "acctd", "acctd"))
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--tree-dir", default=os.path.join(tempfile.gettempdir(), "acctd-bench-metrics-trees"))
    ap.add_argument("--select", default="?max_depth=2", help="the selecting page's query ('' for none)")
    ap.add_argument("--interval", type=int, default=10, help="scrape and evaluation interval, s")
    ap.add_argument("--measure", type=int, default=40, help="seconds over which the central's rate is taken")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as work:
        for size in (int(s) for s in a.sizes.split(",")):
            root = bm.build_tree(a.tree_dir, size)
            pages = [("default", "")] + ([("select", a.select)] if a.select else [])
            for page, query in pages:
                d = os.path.join(work, "%d-%s" % (size, page))
                os.makedirs(d)
                row = measure(a.acctd, root, d, page, query, a.interval, a.measure)
                row["cgroups"] = size
                rows.append(row)
                log(json.dumps(row))
    print("machine: %s" % bm.machine())
    print()
    print("| cgroups | page | page series (info, acctd's own) | per-host Prometheus series (rules') | central: series of the host | central: samples/s at %d s | 1,000 hosts at 15 s: series | samples/s | services only: series |" % a.interval)
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %d | %s | %d (%d, %d) | %d (%d) | %d | %.0f | %.3g | %.3g | %.3g |" % (
            r["cgroups"], r["page"] + (" " + r["query"] if r["query"] else ""), r["page_series"], r["page_info"],
            r["page_self"], r["host_series"], r["host_rule_series"], r["central_series"], r["central_samples_per_s"],
            r["fleet_series"], r["fleet_samples_per_s"], r["fleet_services_only_series"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": bm.machine(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
