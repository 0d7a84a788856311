"""A fleet's accounting on engines that already exist (issue 33): three acctd
"hosts", each scraped by its own Prometheus that evaluates the shipped
recording rules (prometheus/acctd-rules.yml) and sends everything by
remote_write to one central Prometheus (--web.enable-remote-write-receiver),
as docs/fleet.md lays it out.

The hosts are three acctd instances on this machine, each accounting a
subtree of its own of the real v1 cgroups (`[cgroups] include`), told apart
at the central server by the host labels each per-host Prometheus adds
(external_labels hostname and machine_id: the policy of docs/fleet.md; the
three share this machine's identity, so the test gives each a name and a
random machine id of its own). On host 1 a CPU burner runs in burn.service
and a memory holder of 64 MiB in hold.service; hosts 2 and 3 hold smaller
amounts in a hold.service of their own.

Over a window of WINDOW seconds, the central server's answer for host 1's
burn.service (CPU seconds) and hold.service (memory byte-seconds), selected
by the service label from acctd_cgroup_info, not by path, must equal
`acctctl usage` on that host over the same window within the bounds acctd
serves plus one scrape interval of the service's use. The recorded
per-service lifetime counter (service:acctd_cpu_usage_seconds:total, made
on the per-host tier) must have reached the central server and agree with
the raw series. A removed service's CPU time stays counted there through its
tombstone (acctd_removed_cgroup_cpu_usage_seconds_total).

Root only (real cgroups), skips without prometheus or the v1 cpuacct and
memory hierarchies. Every wait is a polled condition with a generous
deadline; the one fixed wait is the window itself."""
import contextlib
import json
import math
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid

import pytest

import acctd
from test_acctctl import acctctl_binary
from test_api_client import IFACE, Varlink, ok
from test_metrics import PROMETHEUS, free_port, need

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
RULES = [os.path.join(SRC, "prometheus", f) for f in ("acctd-rules.yml", "acctd-alerts.yml")]
CPUACCT = "/sys/fs/cgroup/cpuacct"
MEMORY = "/sys/fs/cgroup/memory"
SCRAPE_S = 1.0  # every per-host Prometheus scrapes and evaluates every second
WINDOW = 20     # seconds of accounting compared
MiB = 1 << 20
HOLD = {1: 64 * MiB, 2: 16 * MiB, 3: 8 * MiB}
# Half a CPU while it runs: its CPU time moves at every scrape without
# loading the shared machine.
DUTY_BURNER = """import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.01:
        pass
    time.sleep(0.01)
"""
HOLDER = """import time
b = bytearray(%d)
for i in range(0, len(b), 4096):
    b[i] = 1
time.sleep(3600)
"""


def poll(pred, timeout=180, what="condition", interval=0.2):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


class Service:
    """A real v1 cgroup /fleet-PID-hN/NAME in cpuacct and memory, with one
    python process in it; removed at the end."""

    def __init__(self, base, name, code):
        self.path = base + "/" + name
        self.dirs = [MEMORY + self.path, CPUACCT + self.path]
        for d in self.dirs:
            os.makedirs(d)
        self.proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()\n" + code],
                                     stdin=subprocess.PIPE, text=True)
        for d in self.dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(self.proc.pid))
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for d in self.dirs:  # one hierarchy after the other, as systemd does
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


class Prom:
    """A real Prometheus on loopback: a per-host one (scraping one acctd,
    evaluating the shipped rules, writing to `central`) or the central one
    (remote-write receiver, scraping nothing)."""

    def __init__(self, workdir, name, acctd_port=None, labels=None, central=None):
        self.port = free_port()
        self.dir = os.path.join(str(workdir), name)
        os.makedirs(self.dir)
        cfg = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"}}
        args = []
        if acctd_port:
            cfg["global"]["external_labels"] = labels
            cfg["rule_files"] = RULES
            cfg["scrape_configs"] = [{"job_name": "acctd",
                                      "static_configs": [{"targets": ["127.0.0.1:%d" % acctd_port]}]}]
            cfg["remote_write"] = [{"url": "http://127.0.0.1:%d/api/v1/write" % central.port,
                                    "queue_config": {"batch_send_deadline": "1s", "min_backoff": "100ms",
                                                     "max_backoff": "1s"}}]
        else:
            args.append("--web.enable-remote-write-receiver")
        path = os.path.join(self.dir, "prometheus.yml")
        with open(path, "w") as f:
            json.dump(cfg, f)  # JSON is YAML
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + path, "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"] + args,
            stdout=self.log, stderr=subprocess.STDOUT)

    def query(self, q, t=None):
        params = {"query": q}
        if t is not None:
            params["time"] = "%.3f" % t
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                doc = json.load(r)
        except OSError:
            assert self.proc.poll() is None, "prometheus %s exited:\n%s" % (self.dir, self.logtext())
            return None
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    def values(self, q, t=None, label=None):
        """{label value (or None): float} of an instant query."""
        return {(r["metric"].get(label) if label else None): float(r["value"][1]) for r in self.query(q, t) or []}

    def logtext(self):
        self.log.flush()
        with open(os.path.join(self.dir, "prometheus.log")) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def last_recording_us(sock):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + ".Status"))["status"]["history"].get("last_recording_us", 0)


def acctctl_usage(sock, path, t0, t1):
    p = subprocess.run([acctctl_binary(), "--address", "unix:" + sock, "--json", "usage", path,
                        "--since", "@%d" % t0, "--until", "@%d" % t1],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    rows = {c["path"]: c for c in doc["cgroups"]}
    assert path in rows, doc
    return rows[path]


def bound(v):
    return v.get("bound", 0) if isinstance(v, dict) else 0


def val(v):
    return v["value"] if isinstance(v, dict) else v


def test_three_hosts_central_tier(tmp_path):
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    need(PROMETHEUS)
    for d, f in ((CPUACCT, "cpuacct.usage"), (MEMORY, "memory.usage_in_bytes")):
        if not os.path.exists(os.path.join(d, f)):
            pytest.skip("no v1 hierarchy with %s at %s" % (f, d))

    pid = os.getpid()
    hosts = {}
    with contextlib.ExitStack() as s:
        central = Prom(tmp_path, "central")
        s.callback(central.stop)
        for h in (1, 2, 3):
            base = "/fleet-%d-h%d" % (pid, h)
            for root in (MEMORY, CPUACCT):
                os.makedirs(root + base)
                s.callback(lambda d=root + base: os.path.isdir(d) and os.rmdir(d))
            work = tmp_path / ("host%d" % h)
            work.mkdir()
            port = free_port()
            sock = str(work / "io.acctd")
            conf = acctd.fast_config(work, cgroups__include=base + "*", sampling__collector="files",
                                     history__interval="1s", history__path=str(work / "history.db"),
                                     log__level="info")
            d = acctd.Daemon(work, None, conf, extra=["--metrics-listen", "127.0.0.1:%d" % port, "--socket", sock])
            s.callback(d.stop)
            labels = {"hostname": "fleet-h%d" % h, "machine_id": uuid.uuid4().hex}
            hosts[h] = {"base": base, "daemon": d, "sock": sock, "labels": labels, "port": port}
        for h, x in hosts.items():
            x["daemon"].wait_notify("READY=1", timeout=60)
            x["prom"] = Prom(tmp_path, "prom-h%d" % h, x["port"], x["labels"], central)
            s.callback(x["prom"].stop)
        # the workloads
        services = {}
        for h, x in hosts.items():
            services[(h, "hold.service")] = Service(x["base"], "hold.service", HOLDER % HOLD[h])
        services[(1, "burn.service")] = Service(hosts[1]["base"], "burn.service", DUTY_BURNER)
        services[(2, "short.service")] = Service(hosts[2]["base"], "short.service", DUTY_BURNER)
        for v in services.values():
            s.callback(v.stop)

        # Every host's series reach the central server, with its host labels,
        # and the services are named there by acctd_cgroup_info.
        poll(lambda: len(central.values('max by (hostname) (up{job="acctd"})', label="hostname")) == 3,
             what="up of the three hosts at the central server")
        named = {}

        def hold_named():
            named.update(central.values('count by (hostname) (acctd_cgroup_info{service="hold.service"})',
                                        label="hostname"))
            return named == {"fleet-h1": 1, "fleet-h2": 1, "fleet-h3": 1}
        try:
            poll(hold_named, what="hold.service named on the three hosts")
        except AssertionError as e:
            raise AssertionError("%s; the central server's count by host: %s" % (e, named)) from None
        for h, x in hosts.items():
            got = central.values('count by (machine_id) (up{hostname="fleet-h%d"})' % h, label="machine_id")
            assert list(got) == [x["labels"]["machine_id"]], got
        hold1 = '{hostname="fleet-h1",cgroup="%s/hold.service"}' % hosts[1]["base"]
        poll(lambda: central.values("acctd_memory_bytes" + hold1).get(None, 0) >= HOLD[1],
             what="host 1's memory holder at the central server")
        poll(lambda: central.values('service:acctd_cpu_usage_seconds:total{hostname="fleet-h1",'
                                    'service="burn.service"}').get(None, 0) > 0,
             what="the recorded service counter of burn.service at the central server")

        # A removed service: its last CPU time, from the tombstone, goes on
        # in the lifetime counter at the central server.
        short = '{hostname="fleet-h2",service="short.service"}'
        poll(lambda: central.values("service:acctd_cpu_usage_seconds:total" + short).get(None, 0) > 0.2,
             what="short.service's CPU time")
        services.pop((2, "short.service")).stop()
        cg_short = hosts[2]["base"] + "/short.service"
        poll(lambda: central.values('acctd_removed_cgroup_cpu_usage_seconds_total{hostname="fleet-h2",cgroup="%s"}'
                                    % cg_short), what="short.service's tombstone at the central server")
        final = central.values('acctd_removed_cgroup_cpu_usage_seconds_total{hostname="fleet-h2",cgroup="%s"}'
                               % cg_short)[None]
        poll(lambda: central.values("service:acctd_cpu_usage_seconds:total" + short).get(None) == final,
             what="the service counter on the tombstone's final value %s" % final)

        # The window.
        t0 = math.ceil(time.time()) + 1
        t1 = t0 + WINDOW
        while time.time() < t1:
            time.sleep(min(1.0, max(0.01, t1 - time.time())))
        # Both sides past its end: the host's history and the central server.
        poll(lambda: last_recording_us(hosts[1]["sock"]) > (t1 + 1) * 1e6, what="host 1's history past the window")
        poll(lambda: central.values('timestamp(up{hostname="fleet-h1"})').get(None, 0) > t1 + 2,
             what="the central server's samples past the window", interval=0.5)
        poll(lambda: central.values('timestamp(service:acctd_cpu_usage_seconds:total{hostname="fleet-h1",'
                                    'service="burn.service"})', t1 + 3).get(None, 0) > t1 + 1,
             what="the recorded rule's samples past the window", interval=0.5)

        sock1 = hosts[1]["sock"]
        burn = acctctl_usage(sock1, hosts[1]["base"] + "/burn.service", t0, t1)
        hold = acctctl_usage(sock1, hosts[1]["base"] + "/hold.service", t0, t1)

        # CPU seconds of the service over the window at the central server,
        # from the raw series joined with acctd_cgroup_info by the rule's
        # expression, grouped by host and service.
        def lifetime(offset=""):
            o = " offset %ds" % WINDOW if offset else ""
            return ("(acctd_cpu_usage_seconds_total{o} or acctd_removed_cgroup_cpu_usage_seconds_total{o})"
                    " * ignoring(service, pod, container) group_left(service) acctd_cgroup_info{{service!=\"\"}}{o}"
                    .format(o=o))
        cpu_by = "sum by (hostname, service) (%s - %s)" % (lifetime(), lifetime(offset=True))
        rows = {(r["metric"]["hostname"], r["metric"]["service"]): float(r["value"][1])
                for r in central.query(cpu_by, t1)}
        central_cpu = rows[("fleet-h1", "burn.service")]
        # the same from the recorded per-service counter, made on the host tier
        rec = central.values('sum(service:acctd_cpu_usage_seconds:total{hostname="fleet-h1",service="burn.service"})'
                             ' - sum(service:acctd_cpu_usage_seconds:total{hostname="fleet-h1",service="burn.service"}'
                             ' offset %ds)' % WINDOW, t1)[None]
        # Memory byte-seconds: each sample stands for the window shared among
        # the host's scrapes in it (the rules' formula, over the window).
        mem_q = ('sum by (hostname, service) (sum_over_time(acctd_memory_bytes[{w}s]) * {w}'
                 ' / ignoring(cgroup) group_left count_over_time(up{{job="acctd"}}[{w}s])'
                 ' * ignoring(service, pod, container) group_left(service) acctd_cgroup_info{{service!=""}})'
                 ).format(w=WINDOW)
        mem = {(r["metric"]["hostname"], r["metric"]["service"]): float(r["value"][1])
               for r in central.query(mem_q, t1)}
        central_mem = mem[("fleet-h1", "hold.service")]

        cpu_s = val(burn["cpu_usec"]) / 1e6
        cpu_bound = bound(burn["cpu_usec"]) / 1e6
        rate = cpu_s / WINDOW
        mem_bs = val(hold["memory_byte_seconds"])
        mem_bound = bound(hold["memory_byte_seconds"])
        mem_max = hold.get("memory_max_bytes") or HOLD[1]
        report = ("window %d s: burn.service CPU central %.3f s (recorded rule %.3f s), acctctl usage %.3f s "
                  "+-%.3f; hold.service memory central %.6g byte-s, acctctl usage %.6g +-%.3g byte-s; "
                  "per host and service at the central server: cpu %s, memory %s"
                  % (WINDOW, central_cpu, rec, cpu_s, cpu_bound, central_mem, mem_bs, mem_bound,
                     json.dumps({"%s %s" % k: round(v, 3) for k, v in rows.items()}),
                     json.dumps({"%s %s" % k: round(v) for k, v in mem.items()})))
        print(report)
        assert cpu_s > 0.1 * WINDOW, report  # the burner ran
        assert abs(central_cpu - cpu_s) <= cpu_bound + rate * SCRAPE_S, report
        # the recorded rule lags the raw series by up to an evaluation
        assert abs(rec - central_cpu) <= rate * SCRAPE_S + 1e-9, report
        assert mem_bs >= HOLD[1] * WINDOW * 0.9, report  # the holder held
        assert abs(central_mem - mem_bs) <= mem_bound + mem_max * SCRAPE_S, report
        # the three hosts' holders, apart by host at the central server
        for h in (2, 3):
            assert mem[("fleet-h%d" % h, "hold.service")] >= HOLD[h] * WINDOW * 0.9, report
        # the removed service is still counted at the central server
        assert rows.get(("fleet-h2", "short.service"), 0) == 0  # nothing in the window: it ended before

        # The shipped alerts were evaluated on every host and none fired.
        assert not central.query('ALERTS{alertstate="firing",alertname=~"Acctd.*"}'), \
            central.query('ALERTS{alertname=~"Acctd.*"}')
