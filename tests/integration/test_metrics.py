"""acctd's /metrics endpoint: the page a real Prometheus scrapes.

promtool check metrics on the page of a daemon on a fake tree and on this
host; a real Prometheus server (the Debian package) scraping acctd, with the
default negotiation (OpenMetrics) and forced to text 0.0.4 (params format=text),
checked against the ledger; hostile cgroup names; HTTP misuse; tombstones;
gzip; scrapes that span sampling passes while cgroups come and go.
"""
import gzip
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import pytest

import acctd

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
INPLACE = {"mode": "v2", "write_mode": "inplace"}
INPLACE_HYBRID = {"mode": "hybrid", "write_mode": "inplace"}

PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                     "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")

# Names that a label must carry exactly: quotes, backslashes (systemd's \x2d
# escapes are literal backslashes), UTF-8, and a newline (made by hand below:
# fakecg refuses newlines in paths).
HOSTILE = ['/hostile.slice/q"uote.service', '/hostile.slice/back\\slash.service',
           '/hostile.slice/machine-qemu\\x2d1\\x2dvm.scope', '/hostile.slice/ütf-8 ✓ 🐧.service',
           '/hostile.slice/all "\\ of it\\"']
NEWLINE = "/hostile.slice/new\nline.service"
# ... whose label, as acctd's log and acctctl show names (name-escape.h's
# text mode: a control never reaches a scrape raw; issue 27 item 6)
NEWLINE_LABEL = "/hostile.slice/new\\x0aline.service"


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def need(path):
    if not os.path.exists(path):
        pytest.skip("%s is not installed" % path)


class Metrics:
    """An HTTP client of the daemon's /metrics."""

    def __init__(self, port, host="127.0.0.1"):
        self.port = port
        self.host = host

    def request(self, method="GET", path="/metrics", headers=None, body=None, timeout=10):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            c.close()

    def page(self, path="/metrics", headers=None, timeout=60):
        status, h, data = self.request(path=path, headers=headers, timeout=timeout)
        assert status == 200, (status, data[:500])
        if h.get("content-encoding") == "gzip":
            data = gzip.decompress(data)
        return data.decode("utf-8"), h

    def wait(self, timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                page, _ = self.page()
                if "\nacctd_ready 1\n" in page:
                    return page
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.1)
        raise AssertionError("/metrics on port %d never became ready" % self.port)


def start(tmp_path, fs=None, config=None, port=None, listen=None, extra=()):
    port = port or free_port()
    args = ["--metrics-listen", listen or "127.0.0.1:%d" % port, "--socket", str(tmp_path / "api.sock")]
    d = acctd.Daemon(tmp_path, fs.root if fs else None, config or acctd.fast_config(tmp_path), extra=args + list(extra))
    return d, Metrics(port)


def promtool(page):
    """promtool check metrics: exit 0 and nothing printed (no lint findings)."""
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=page.encode(), capture_output=True, timeout=60)
    assert p.returncode == 0 and not p.stdout and not p.stderr, \
        "promtool check metrics: exit %d\n%s%s" % (p.returncode, p.stdout.decode(), p.stderr.decode())


def samples(page):
    """{(name, frozenset(labels)): value} of a page, with a strict parser of
    the label syntax; asserts that no series appears twice."""
    out = {}
    for line in page.split("\n"):
        if not line or line.startswith("#"):
            continue
        i = 0
        while i < len(line) and line[i] not in "{ ":
            i += 1
        name, labels = line[:i], []
        if line[i] == "{":
            i += 1
            while line[i] != "}":
                j = line.index("=", i)
                key = line[i:j]
                assert line[j + 1] == '"', line
                k, val = j + 2, []
                while line[k] != '"':
                    if line[k] == "\\":
                        val.append({"\\": "\\", '"': '"', "n": "\n"}[line[k + 1]])
                        k += 2
                    else:
                        val.append(line[k])
                        k += 1
                labels.append((key, "".join(val)))
                i = k + 1
                if line[i] == ",":
                    i += 1
            i += 1
        assert line[i] == " ", line
        key = (name, frozenset(labels))
        assert key not in out, "series twice: %s" % line
        out[key] = float(line[i + 1:])
    return out


def series(page, name, **labels):
    want = set(labels.items())
    return {dict(k[1]).get("cgroup"): v for k, v in samples(page).items() if k[0] == name and want <= k[1]}


def build_tree(fs):
    fs.mkdir("/system.slice/a.service", memory=64 << 20, cpu_usec=2_500_000, procs=[10], memory_max=256 << 20)
    fs.mkdir("/system.slice/b.service", memory=16 << 20, cpu_usec=100_000, procs=[11])
    fs.mkdir("/user.slice/user-1000.slice", memory=8 << 20, procs=[12])
    fs.set_pressure("/system.slice/a.service", "memory", some_avg10=1.25, some_total_us=123456, full_total_us=42)
    fs.add_throttling("/system.slice/a.service", periods=100, throttled=3, throttled_usec=4500)
    for i, p in enumerate(HOSTILE):
        fs.mkdir(p, memory=(i + 1) << 20, procs=[100 + i])


def add_newline_cgroup(fs, tmp_path):
    """A cgroup named with a newline, copied from a template made by fakecg and
    renamed into place (so its files exist when it appears)."""
    fs.mkdir("/hostile.slice/template.service", memory=3 << 20, procs=[200])
    staging = tmp_path / "staging-newline"
    shutil.copytree(fs.dir("/hostile.slice/template.service"), staging)
    os.rename(staging, os.path.join(fs.dir("/hostile.slice"), NEWLINE.rsplit("/", 1)[1]))


def live(doc, path):
    for c in doc["cgroups"]:
        if c["path"] == path and c["state"] == "live":
            return c
    return None


# ---- promtool ----------------------------------------------------------------------

@pytest.mark.parametrize("fakecg", [INPLACE, INPLACE_HYBRID], indirect=True)
def test_promtool_fake_tree(fakecg, tmp_path):
    need(PROMTOOL)
    build_tree(fakecg)
    if fakecg.mode == "v2":
        add_newline_cgroup(fakecg, tmp_path)
    d, m = start(tmp_path, fakecg)
    with d:
        d.wait(lambda doc: doc["daemon"]["passes"] >= 3 and live(doc, "/system.slice/a.service"), what="passes")
        m.wait()
        page, h = m.page()
        assert h["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        promtool(page)
        promtool(m.page("/metrics?family=all")[0])
        s = samples(page)
        assert any(k[0] == "acctd_memory_bytes" for k in s)
        a = '/system.slice/a.service'
        e = fakecg.expected(a)
        assert series(page, "acctd_memory_bytes")[a] == e["memory_bytes"]
        assert series(page, "acctd_memory_limit_bytes", limit="max")[a] == 256 << 20
        assert abs(series(page, "acctd_cpu_usage_seconds_total")[a] - 2.5) <= 1e-6 * fakecg.nr_cpus
        assert series(page, "acctd_cpu_throttled_periods_total")[a] == 3
        assert series(page, "acctd_cpu_throttled_seconds_total")[a] == 0.0045
        if fakecg.mode == "v2":
            assert series(page, "acctd_pressure_stalled_seconds_total", resource="memory", kind="some")[a] == 0.123456
            ratio = series(m.page("/metrics?family=pressure_averages")[0], "acctd_pressure_stalled_ratio",
                           resource="memory", kind="some", window="10s")[a]
            assert ratio == 0.0125
            assert NEWLINE_LABEL in series(page, "acctd_memory_bytes")
        for p in HOSTILE:
            assert p in series(page, "acctd_memory_bytes"), p
        # everything the page says about itself
        assert s[("acctd_build_info", frozenset({("version", d.doc()["version"])}))] == 1
        assert s[("acctd_cgroups", frozenset({("state", "live")}))] == d.doc()["daemon"]["cgroups_live"]


def test_promtool_host(tmp_path):
    """The page on this host's real cgroups (root only: the tree must be readable)."""
    need(PROMTOOL)
    if not acctd.is_root() or not os.path.isdir("/sys/fs/cgroup"):
        pytest.skip("needs root and /sys/fs/cgroup")
    # default intervals: the host may hold many cgroups (benchmarks make
    # thousands), and generous timeouts
    d, m = start(tmp_path, config=os.devnull)
    with d:
        d.wait(lambda doc: doc["daemon"]["passes"] >= 2, timeout=120, what="two passes")
        page = m.wait(120)
        promtool(page)
        promtool(m.page("/metrics?family=all")[0])
        assert series(page, "acctd_cpu_usage_seconds_total")
        # the sampler's CPU by kind of pass; the first pass reads every file
        cpu = {dict(k[1])["kind"]: v for k, v in samples(page).items() if k[0] == "acctd_sampling_cpu_seconds_total"}
        assert sorted(cpu) == ["event", "fast", "load", "slow", "walk"], cpu
        assert cpu["slow"] > 0 and all(v >= 0 for v in cpu.values()), cpu
        om, h = m.page(headers={"Accept": PROMETHEUS_ACCEPT})
        assert h["content-type"].startswith("application/openmetrics-text; version=1.0.0")
        assert om.endswith("\n# EOF\n")
        assert d.stop(timeout=120) == 0


# ---- a real Prometheus ---------------------------------------------------------------

class Prometheus:
    # interval: scrape interval and timeout (longer where acctd reads a
    # loaded host's real tree, test_cadvisor.py)
    # jobs: more scrape configurations ({"job_name": ..., "params": ...}),
    # each scraping acctd as well
    def __init__(self, tmp_path, target_port, text=False, interval="1s", jobs=()):
        self.port = free_port()
        self.dir = tmp_path / ("prometheus-text" if text else "prometheus")
        self.dir.mkdir()
        job = {"job_name": "acctd", "scrape_interval": interval, "scrape_timeout": interval,
               "static_configs": [{"targets": ["127.0.0.1:%d" % target_port]}]}
        if text:
            # Prometheus 2.42 always asks for OpenMetrics first; the endpoint's
            # query parameter forces text 0.0.4.
            job["params"] = {"format": ["text"]}
        else:
            # every family, so that Prometheus's own OpenMetrics parser sees
            # them all (promtool reads text only)
            job["params"] = {"family": ["all"]}
        cfg = self.dir / "prometheus.yml"
        more = [dict(j, scrape_interval=interval, scrape_timeout=interval,
                     static_configs=[{"targets": ["127.0.0.1:%d" % target_port]}]) for j in jobs]
        cfg.write_text(json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": [job] + more}))  # JSON is YAML
        self.log = open(self.dir / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=%s" % cfg, "--storage.tsdb.path=%s" % (self.dir / "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, q):
        return self.api("query", query=q)["result"]

    def wait_up(self, timeout=60, job="acctd"):
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            assert self.proc.poll() is None, "prometheus exited:\n" + self.logtext()
            try:
                r = self.query('up{job="%s"}' % job)
                if r and r[0]["value"][1] == "1":
                    return
                last = self.api("targets")
            except OSError:
                pass
            time.sleep(0.3)
        raise AssertionError("up never became 1; targets: %s\nlog:\n%s" % (last, self.logtext()))

    def logtext(self):
        self.log.flush()
        return (self.dir / "prometheus.log").read_text()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
@pytest.mark.parametrize("text", [False, True], ids=["openmetrics", "text"])
def test_prometheus_scrapes(fakecg, tmp_path, text):
    need(PROMETHEUS)
    build_tree(fakecg)
    add_newline_cgroup(fakecg, tmp_path)
    d, m = start(tmp_path, fakecg)
    with d:
        d.wait(lambda doc: live(doc, "/system.slice/a.service") and live(doc, NEWLINE), what="the tree")
        m.wait()
        prom = Prometheus(tmp_path, m.port, text=text)
        try:
            prom.wait_up()
            targets = prom.api("targets")["activeTargets"]
            assert targets and targets[0]["health"] == "up" and not targets[0]["lastError"], targets

            # A known cgroup's memory through PromQL, against the ledger within its bound.
            a = "/system.slice/a.service"
            r = prom.query('acctd_memory_bytes{cgroup="%s"}' % a)
            assert len(r) == 1, r
            got = float(r[0]["value"][1])
            bound = prom.query('acctd_value_bound_bytes{cgroup="%s",quantity="memory"}' % a)
            bound = float(bound[0]["value"][1]) if bound else 0.0
            doc = d.next_state(1)
            ledger = live(doc, a)["values"]["memory"]
            assert abs(got - ledger["value"]) <= bound + ledger.get("bound", 0), (got, ledger)
            assert abs(got - fakecg.expected(a)["memory_bytes"]) <= bound
            r = prom.query('acctd_cpu_usage_seconds_total{cgroup="%s"}' % a)
            assert abs(float(r[0]["value"][1]) - 2.5) <= 1e-6 * fakecg.nr_cpus

            # Hostile names arrive as they are (a control as \xHH).
            r = prom.query('acctd_memory_bytes{cgroup=~"(?s)/hostile.slice/.+"}')
            got = {x["metric"]["cgroup"]: float(x["value"][1]) for x in r}
            for p, label in [(p, p) for p in HOSTILE] + [(NEWLINE, NEWLINE_LABEL)]:
                assert label in got, (label, sorted(got))
                assert got[label] == live(doc, p)["values"]["memory"]["value"]

            # Which format was scraped: OpenMetrics counters carry _created
            # samples (Prometheus 2.42 keeps them as series of their own).
            created = prom.query('count({__name__=~"acctd_.+_created"})')
            if text:
                assert not created, created
            else:
                assert created and float(created[0]["value"][1]) > 0, created
            # histogram and info made it through
            r = prom.query('acctd_sampling_pass_duration_seconds_count{kind="fast"}')
            assert r and float(r[0]["value"][1]) >= 1
            assert prom.query("acctd_build_info")
            if not text:
                r = prom.query('acctd_pressure_stalled_ratio{cgroup="%s",resource="memory",kind="some",window="10s"}' % a)
                assert r and float(r[0]["value"][1]) == 0.0125, r
                assert prom.query('acctd_memory_stat_events_total{cgroup="%s"}' % a)
                assert prom.query('acctd_engine_folds')
        finally:
            prom.stop()


# ---- selection and the max_series cut ------------------------------------------------------

def cgroups_on(page):
    """The cgroups a page shows series of (any family)."""
    return {dict(k[1])["cgroup"] for k in samples(page) if "cgroup" in dict(k[1])}


def depth(path):
    return 0 if path == "/" else path.count("/")


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_selection_and_cut(fakecg, tmp_path):
    """?cgroup= and ?max_depth= choose exactly the cgroups they name, within
    the configuration (its excludes stay out); the default page of a tree
    larger than [metrics] max_series shows whole levels and says how many
    cgroups it left out and how to get them; a real Prometheus stores what a
    scrape configuration's params select."""
    build_tree(fakecg)
    fakecg.mkdir("/system.slice/a.service/worker", memory=1 << 20, procs=[30])
    excluded = "/system.slice/b.service"
    # The levels' series, measured on this tree: depth <= 1 ~130, <= 2 ~400.
    # 250 cuts between them; the assertions below hold for any cut there.
    conf = acctd.fast_config(tmp_path, metrics__max_series="250", metrics__exclude=excluded)
    d, m = start(tmp_path, fakecg, config=conf)
    with d:
        d.wait(lambda doc: live(doc, "/system.slice/a.service/worker") and all(live(doc, p) for p in HOSTILE),
               what="the tree")
        m.wait()
        doc = d.next_state(1)
        every = {c["path"] for c in doc["cgroups"] if c["state"] == "live"} - {excluded}
        assert every == {"/", "/system.slice", "/system.slice/a.service", "/system.slice/a.service/worker",
                         "/user.slice", "/user.slice/user-1000.slice", "/hostile.slice"} | set(HOSTILE), every

        def page(query):
            text, _ = m.page("/metrics" + query)
            return text

        # Selected pages: exactly what was asked for, no cut, nothing said left out.
        cases = {
            "?cgroup=/system.slice/*": {"/system.slice/a.service", "/system.slice/a.service/worker"},
            "?cgroup=system.slice/*&max_depth=2": {"/system.slice/a.service"},
            "?cgroup=/system.slice&cgroup=/hostile.slice/*+/user.slice/*":
                {"/system.slice", "/user.slice/user-1000.slice"} | set(HOSTILE),
            "?max_depth=2": {p for p in every if depth(p) <= 2},
            "?max_depth=0": {"/"},
            "?cgroup=*": every,
            "?cgroup=/nothing/*": set(),
            "?max_depth=3&family=memory": every,
        }
        for query, want in cases.items():
            text = page(query)
            assert cgroups_on(text) == want, (query, sorted(cgroups_on(text) ^ want))
            assert "\nacctd_metrics_cgroups_left_out 0\n" in text, query
            assert "# acctd:" not in text, query
            assert excluded not in text, query
            if os.path.exists(PROMTOOL):
                promtool(text)

        # Refused: a 400 naming what and why.
        for query, body in [("?cgroup=/a//b", "Bad query: bad cgroup glob '/a//b' (an empty path component)"),
                            ("?cgroup=/a/[x", "Bad query: bad cgroup glob '/a/[x' (a '[' without its ']')"),
                            ("?cgroup=", "Bad query: bad cgroup glob '' (no glob)"),
                            ("?max_depth=x", "Bad query: bad max_depth 'x' (expected 0..255)")]:
            status, _, data = m.request(path="/metrics" + query)
            assert status == 400 and data.decode().startswith(body), (query, status, data)

        # The default page: whole levels from the root, the deeper ones left
        # out and counted, in a gauge and a comment naming the parameters.
        text = page("")
        shown = cgroups_on(text)
        deepest = max(depth(p) for p in shown)
        assert shown == {p for p in every if depth(p) <= deepest}, sorted(shown)
        assert deepest == 1, sorted(shown)
        left = every - shown
        s = samples(text)
        assert s[("acctd_metrics_cgroups_left_out", frozenset())] == len(left)
        assert s[("acctd_metrics_series_left_out", frozenset())] > 0
        assert s[("acctd_metrics_cgroups", frozenset())] == len(shown)
        comment = [line for line in text.split("\n") if line.startswith("# acctd: ")]
        assert comment == ["# acctd: %d cgroups below depth 1 (%d series) left out of this page by [metrics] "
                           "max_series = 250; ask for them with ?max_depth=N or ?cgroup=GLOB"
                           % (len(left), s[("acctd_metrics_series_left_out", frozenset())])], comment
        if os.path.exists(PROMTOOL):
            promtool(text)  # the comment is a comment to Prometheus's text parser
        # ... the same cut in OpenMetrics, without the comment (not allowed there)
        om, _ = m.page(headers={"Accept": PROMETHEUS_ACCEPT})
        assert cgroups_on(om) == shown and "# acctd:" not in om
        assert "\nacctd_metrics_cgroups_left_out %d\n" % len(left) in om
        # ... and stable: the next scrape shows the same cgroups
        assert cgroups_on(page("")) == shown

        # Hysteresis: the cut deepens past the depth it showed last only when
        # the deeper level fits in 90% of max_series; it shrinks at once.
        # S2: the per-cgroup series down to depth 2 (samples with a cgroup label).
        s2 = sum(1 for k in samples(page("?max_depth=2")) if "cgroup" in dict(k[1]))
        reloads = 0

        def default_depth(max_series):
            nonlocal reloads
            assert acctd.fast_config(tmp_path, metrics__max_series=str(max_series), metrics__exclude=excluded) == conf
            d.signal(signal.SIGHUP)
            reloads += 1
            d.wait(lambda doc: doc["daemon"]["reloads"] == reloads and doc["daemon"]["reload_result"] == "ok",
                   what="reload %d" % reloads)
            return max(map(depth, cgroups_on(page(""))))

        assert default_depth(s2) == 1                   # fits, but not in 90%: stays at depth 1
        assert default_depth(s2 * 10 // 9 + 1) == 2     # fits in 90%: deepens
        assert default_depth(s2) == 2                   # shown before and still fits: stays
        assert default_depth(s2 - 1) == 1               # no longer fits: at once
        assert default_depth(250) == 1

        # A real Prometheus: one job with the default page, one whose params select.
        if not os.path.exists(PROMETHEUS):
            return
        prom = Prometheus(tmp_path, m.port, jobs=[
            {"job_name": "acctd-selected", "params": {"cgroup": ["/system.slice/*", "/hostile.slice/*"],
                                                       "max_depth": ["2"]}}])
        try:
            prom.wait_up()
            prom.wait_up(job="acctd-selected")
            stored = {r["metric"]["cgroup"] for r in prom.query('acctd_value_age_seconds{job="acctd-selected"}')}
            assert stored == {"/system.slice/a.service"} | set(HOSTILE), sorted(stored)
            # The job "acctd" asks for family=all: not a selection, so cut,
            # and with more series per cgroup, fewer levels fit.
            text = page("?family=all")
            shown_all = cgroups_on(text)
            assert shown_all and shown_all == {p for p in every if depth(p) <= max(map(depth, shown_all))}
            stored = {r["metric"]["cgroup"] for r in prom.query('acctd_value_age_seconds{job="acctd"}')}
            assert stored == shown_all, sorted(stored)
            r = prom.query('acctd_metrics_cgroups_left_out{job="acctd"}')
            assert r and float(r[0]["value"][1]) == len(every - shown_all), r
            r = prom.query('acctd_metrics_cgroups_left_out{job="acctd-selected"}')
            assert r and float(r[0]["value"][1]) == 0, r
        finally:
            prom.stop()


# ---- HTTP ---------------------------------------------------------------------------------

def raw(port, data, timeout=5, read=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if not read:
            return b""
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def varlink_get_info(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(path)
        s.sendall(json.dumps({"method": "org.varlink.service.GetInfo"}).encode() + b"\0")
        buf = b""
        while not buf.endswith(b"\0"):
            chunk = s.recv(65536)
            assert chunk, "the API closed the connection"
            buf += chunk
        return json.loads(buf[:-1])


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_http_misuse(fakecg, tmp_path):
    """Wrong methods and paths, huge headers and bodies, garbage, clients that
    never finish a request, many connections, clients that vanish mid-page: the
    daemon stays up and keeps serving /metrics, the API and its ledger."""
    build_tree(fakecg)
    for i in range(300):  # a page large enough that vanishing readers hit a broken pipe
        fakecg.mkdir("/bulk.slice/unit-%03d.service" % i, memory=1 << 20, procs=[1000 + i])
    d, m = start(tmp_path, fakecg)
    with d:
        d.wait(lambda doc: doc["daemon"]["passes"] >= 2, what="two passes")
        m.wait()

        # many idle connections: past the limit the oldest idle ones go, scrapes go on
        idle = [socket.create_connection(("127.0.0.1", m.port)) for _ in range(200)]
        time.sleep(0.5)
        t1 = time.monotonic()
        page, _ = m.page()
        assert time.monotonic() - t1 < 5
        s = samples(page)
        assert s[("acctd_metrics_connections", frozenset())] <= 64
        assert s[("acctd_metrics_connections_dropped_total", frozenset({("reason", "evicted")}))] > 0
        closed = 0
        for sock in idle:
            sock.settimeout(0.05)
            try:
                if sock.recv(1) == b"":
                    closed += 1
            except socket.timeout:
                pass
            except OSError:
                closed += 1
            sock.close()
        assert closed >= 200 - 64


        # slow clients: one never finishes its request, one trickles a byte a second
        stalled = socket.create_connection(("127.0.0.1", m.port))
        stalled.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        trickle_closed = threading.Event()

        def trickle():
            with socket.create_connection(("127.0.0.1", m.port)) as s:
                try:
                    for b in b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 100:
                        s.sendall(bytes([b]))
                        time.sleep(1)
                except OSError:
                    trickle_closed.set()
                    return
                s.settimeout(5)
                try:
                    if s.recv(1) == b"":
                        trickle_closed.set()
                except OSError:
                    trickle_closed.set()

        t = threading.Thread(target=trickle, daemon=True)
        t.start()
        t0 = time.monotonic()

        for method in ("POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE"):
            status, h, _ = m.request(method)
            assert status == 405, method
            assert h["allow"] == "GET, HEAD"
        for path in ("/favicon.ico", "/metric", "/metrics/", "/api/v1/query", "/../etc/passwd"):
            assert m.request(path=path)[0] == 404, path
        # / is the page's (docs/page.md, issue 34)
        status, h, _ = m.request(path="/")
        assert status == 302 and h["location"] == "/ui/", (status, h)
        assert m.request(path="/metrics?format=xml")[0] == 400
        status, _, body = m.request(path="/metrics?family=default,nosuch%1b%5d0%3bx")
        assert status == 400
        assert body.startswith(b"Bad query: unknown family 'nosuch\\x1b]0;x' (family= takes these groups: memory, "
                               b"memory_stat, "), body  # the groups, since a Prometheus family's name is not one
        assert b"default, none); accepted: format=" in body, body
        status, h, body = m.request("HEAD")
        assert status == 200 and body == b"" and h["content-type"].startswith("text/plain; version=0.0.4")
        # huge headers: refused (413), or the connection dropped
        resp = raw(m.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n")
        assert resp == b"" or resp.startswith(b"HTTP/1.1 413") or resp.startswith(b"HTTP/1.1 400"), resp[:100]
        # a body far past the limit
        resp = raw(m.port, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n" + b"a" * 10000)
        assert resp == b"" or resp.startswith(b"HTTP/1.1 413"), resp[:100]
        # garbage (an unknown method is 501 Not Implemented, as RFC 9110 says)
        for junk in (b"\x00\xff\xfe garbage\r\n\r\n", b"GET\r\n\r\n", b"FOO /metrics HTTP/1.1\r\n\r\n",
                     b"GET /metrics HTTP/9.9\r\n\r\n", b"GET /metrics HTTP/1.1\r\nHost x\r\n\r\n"):
            resp = raw(m.port, junk)
            assert resp == b"" or resp.startswith(b"HTTP/1.1 4") or resp.startswith(b"HTTP/1.0 4") or \
                resp.startswith(b"HTTP/1.1 200") or \
                (junk.startswith(b"FOO") and resp.startswith(b"HTTP/1.1 501")), (junk, resp[:100])
        # HTTP/1.0: the page ends with the connection
        resp = raw(m.port, b"GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", timeout=10)
        head, _, body = resp.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200"), head
        assert b"\nacctd_ready 1\n" in body and body.endswith(b"\n")
        # keep-alive: two pages on one connection
        c = http.client.HTTPConnection("127.0.0.1", m.port, timeout=10)
        for _ in range(2):
            c.request("GET", "/metrics")
            r = c.getresponse()
            assert r.status == 200 and b"acctd_ready 1" in r.read()
        c.close()

        # readers that vanish mid-page, with RST
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", m.port))
            s.sendall(b"GET /metrics?family=all HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(1000)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        # readers that never read hold their pages; past 8 pages in progress: 503
        lazy = []
        for _ in range(8):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", m.port))
            sock.sendall(b"GET /metrics?family=all HTTP/1.1\r\nHost: x\r\n\r\n")
            lazy.append(sock)
        time.sleep(0.5)
        status, h, _ = m.request()
        assert status == 503 and h["retry-after"] == "1", status
        assert m.request("HEAD")[0] == 200  # HEAD holds no page
        for sock in lazy:
            sock.close()
        end = time.monotonic() + 10
        while m.request()[0] != 200:
            assert time.monotonic() < end, "pages of vanished readers not released"
            time.sleep(0.1)

        # the stalled request is cut off at the request deadline (10 s)
        stalled.settimeout(max(1.0, 15 - (time.monotonic() - t0)))
        try:
            assert stalled.recv(1) == b""
        except ConnectionResetError:
            pass
        assert time.monotonic() - t0 < 15
        stalled.close()
        assert trickle_closed.wait(max(1.0, 15 - (time.monotonic() - t0))), "trickling client not cut off"

        # still serving, still sampling
        assert d.proc.poll() is None
        before = d.passes()
        d.next_state(2)
        assert d.passes() >= before + 2
        page, _ = m.page()
        promtool(page)
        s = samples(page)
        assert s[("acctd_metrics_connections_dropped_total", frozenset({("reason", "timeout")}))] >= 2
        assert s[("acctd_metrics_responses_total", frozenset({("code", "405")}))] >= 6
        assert s[("acctd_metrics_responses_total", frozenset({("code", "404")}))] >= 5
        assert s[("acctd_metrics_responses_total", frozenset({("code", "503")}))] >= 1
        if os.path.exists(tmp_path / "api.sock"):  # the API, when built
            info = varlink_get_info(str(tmp_path / "api.sock"))
            assert "parameters" in info and not info.get("error"), info
            s = samples(m.page()[0])
            assert s[("acctd_api_requests_total", frozenset({("method", "org.varlink.service.GetInfo"),
                                                              ("result", "ok")}))] >= 1
            assert s[("acctd_api_connections_accepted_total", frozenset())] >= 1


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_negotiation_and_gzip(fakecg, tmp_path):
    build_tree(fakecg)
    d, m = start(tmp_path, fakecg)
    with d:
        m.wait()
        om, h = m.page(headers={"Accept": PROMETHEUS_ACCEPT})
        assert h["content-type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
        assert om.endswith("\n# EOF\n")
        assert "# TYPE acctd_cpu_usage_seconds counter\n" in om
        assert "# UNIT acctd_cpu_usage_seconds seconds\n" in om
        assert "acctd_sampling_errors_created{" in om
        assert "acctd_cpu_usage_seconds_created" not in om
        forced, h = m.page("/metrics?format=text", headers={"Accept": PROMETHEUS_ACCEPT})
        assert h["content-type"].startswith("text/plain; version=0.0.4")
        promtool(forced)
        assert m.page("/metrics?format=openmetrics")[1]["content-type"].startswith("application/openmetrics-text")
        for accept in ("text/plain", "*/*", "application/json", "text/plain;version=0.0.4"):
            assert m.page(headers={"Accept": accept})[1]["content-type"].startswith("text/plain; version=0.0.4")

        status, h, body = m.request(headers={"Accept-Encoding": "gzip"})
        assert status == 200 and h["content-encoding"] == "gzip" and "Accept-Encoding" in h["vary"]
        plain = gzip.decompress(body).decode()
        promtool(plain)
        assert "\nacctd_ready 1\n" in plain
        status, h, body = m.request(headers={"Accept-Encoding": "gzip;q=0, identity"})
        assert "content-encoding" not in h and b"\nacctd_ready 1\n" in body
        status, h, body = m.request(path="/metrics?family=all", headers={"Accept-Encoding": "gzip",
                                                                         "Accept": PROMETHEUS_ACCEPT})
        assert gzip.decompress(body).decode().endswith("\n# EOF\n")

        # family=: only what is asked for (acctd's own families always)
        page, _ = m.page("/metrics?family=memory")
        names = {k[0] for k in samples(page)}
        assert "acctd_memory_bytes" in names and "acctd_build_info" in names
        assert not any(n.startswith("acctd_cpu_") or n.startswith("acctd_engine_") for n in names)
        page, _ = m.page("/metrics?family=default,-numa&family=memory_events")
        names = {k[0] for k in samples(page)}
        assert "acctd_memory_stat_events_total" in names and "acctd_memory_numa_bytes" not in names


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_tombstone_series(fakecg, tmp_path):
    fakecg.mkdir("/system.slice/gone.service", memory=5 << 20, cpu_usec=1000, procs=[10])
    conf = acctd.fast_config(tmp_path, cgroups__tombstone_retention="2s")
    d, m = start(tmp_path, fakecg, config=conf)
    with d:
        d.wait(lambda doc: live(doc, "/system.slice/gone.service"), what="gone.service")
        m.wait()
        fakecg.rmdir("/system.slice/gone.service")
        d.wait(lambda doc: any(c["path"] == "/system.slice/gone.service" and c["state"] == "dead"
                               for c in doc["cgroups"]), what="tombstone")
        page, _ = m.page()
        # live families carry live cgroups only; the final values have their own
        assert "/system.slice/gone.service" not in series(page, "acctd_memory_bytes")
        assert series(page, "acctd_removed_cgroup_age_seconds")["/system.slice/gone.service"] >= 0
        assert series(page, "acctd_removed_cgroup_cpu_usage_seconds_total")["/system.slice/gone.service"] == 0.001
        page, _ = m.page("/metrics?family=default,-removed")
        assert "gone.service" not in page
        end = time.monotonic() + 10
        while "/system.slice/gone.service" in m.page()[0]:
            assert time.monotonic() < end, "the tombstone's series did not go"
            time.sleep(0.2)


@pytest.mark.parametrize("fakecg", [{"mode": "v2", "write_mode": "inplace", "autosave": False}], indirect=True)
def test_scrapes_across_passes_and_churn(fakecg, tmp_path):
    """Pages that take many passes to read while cgroups come and go: every
    page is well formed, no series twice. (Tombstones swept during a page: the
    unit test test_sweep_during_page, deterministic; here the retention stays
    long, since TSan cannot see liburcu's grace periods and reports the frees
    of swept records as races.)"""
    n = 800
    with fakecg.batch():
        for i in range(n):
            fakecg.mkdir("/churn.slice/u%03d.service" % i, memory=1 << 20, procs=[1000 + i])
    conf = acctd.fast_config(tmp_path, sampling__fast_interval="20ms", sampling__slow_interval="50ms")
    d, m = start(tmp_path, fakecg, config=conf)
    with d:
        m.wait()
        stop = threading.Event()

        def churn():
            i = 0
            while not stop.is_set():
                with fakecg.batch():
                    for _ in range(10):
                        p = "/churn.slice/u%03d.service" % (i % n)
                        if fakecg.exists(p):
                            fakecg.rmdir(p)
                        else:
                            fakecg.mkdir(p, memory=2 << 20, procs=[3000 + i % n])
                        i += 7
                time.sleep(0.02)

        t = threading.Thread(target=churn, daemon=True)
        t.start()
        try:
            for fmt in ("text", "openmetrics", "text"):
                s = socket.create_connection(("127.0.0.1", m.port))
                s.sendall(b"GET /metrics?family=all&format=%s HTTP/1.0\r\n\r\n" % fmt.encode())
                data = bytearray()
                t0 = time.monotonic()
                while True:  # read slowly: the page spans many passes and sweeps
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                    if time.monotonic() - t0 < 1.5:
                        time.sleep(0.005)
                s.close()
                # HTTP/1.0: the page ends with the connection, so a page the
                # daemon cut short (its deadlines, a failed render, a crash)
                # reads as a short page; say which, should it happen.
                log = d.logtext()
                why = "%s page of %d bytes in %.1f s; acctd %s; deadlines passed: %d; render failures: %d\n%s" % (
                    fmt, len(data), time.monotonic() - t0,
                    "running" if d.proc.poll() is None else "exited (%s)" % d.proc.returncode,
                    log.count("passed its deadline"), log.count("Failed to render the metrics page"), log[-3000:])
                assert d.proc.poll() is None, why
                head, _, body = bytes(data).partition(b"\r\n\r\n")
                assert b" 200 " in head.split(b"\r\n")[0], why
                page = body.decode()
                try:
                    samples(page)  # no series twice
                    if fmt == "text":
                        promtool(page)
                    else:
                        assert page.endswith("\n# EOF\n"), page[-200:]
                except AssertionError as e:
                    raise AssertionError("%s\n%s" % (e, why)) from None
        finally:
            stop.set()
            t.join()
        assert d.proc.poll() is None
        d.next_state(2)  # still sampling


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_disabled(fakecg, tmp_path):
    port = free_port()
    d, _ = start(tmp_path, fakecg, listen="none", port=port)
    with d:
        d.wait(lambda doc: doc["daemon"]["passes"] >= 1, what="a pass")
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_ipv6(fakecg, tmp_path):
    try:
        port = free_port(socket.AF_INET6, "::1")
    except OSError:
        pytest.skip("no IPv6 loopback")
    fakecg.mkdir("/a.service", memory=1 << 20, procs=[10])
    d, _ = start(tmp_path, fakecg, listen="[::1]:%d" % port)
    with d:
        page = Metrics(port, "::1").wait()
        assert series(page, "acctd_memory_bytes")["/a.service"] == 1 << 20


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_invalid_utf8_name(fakecg, tmp_path):
    """A name that is not UTF-8 (a cgroup name may hold any byte but / and NUL):
    its bytes become \\xNN in the label, and the page stays valid UTF-8."""
    need(PROMTOOL)
    fakecg.mkdir("/odd.slice/template.service", memory=1 << 20, procs=[10])
    staging = tmp_path / "staging-bytes"
    shutil.copytree(fakecg.dir("/odd.slice/template.service"), staging)
    os.rename(staging, os.path.join(os.fsencode(fakecg.dir("/odd.slice")), b"bad-\xff\xfe.service"))
    port = free_port()
    args = ["--metrics-listen", "127.0.0.1:%d" % port, "--socket", str(tmp_path / "api.sock")]
    # no state file here (test_hostile_names.py checks one with such names)
    # STATE_DIRECTORY: its history in tmp_path, never the host's /var/lib/acctd
    p = subprocess.Popen([acctd.binary(), "--config", acctd.fast_config(tmp_path), "--config-dropins", ""] +
                         acctd.root_args(fakecg.root) + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=dict(os.environ, STATE_DIRECTORY=str(tmp_path)))
    try:
        m = Metrics(port)
        end = time.monotonic() + 15
        while True:
            try:
                page = m.wait(5)
                if "bad-" in page:
                    break
            except AssertionError:
                pass
            assert time.monotonic() < end, "the odd cgroup never showed up"
            time.sleep(0.2)
        assert '/odd.slice/bad-\\\\xff\\\\xfe.service' in page
        assert "/odd.slice/bad-\\xff\\xfe.service" in series(page, "acctd_memory_bytes")
        promtool(page)
    finally:
        p.terminate()
        p.wait(10)
