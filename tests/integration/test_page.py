"""acctd's page (issue 34, docs/page.md) in a real headless browser: Debian's
Chromium driven through chromedriver (tests/integration/webdriver.py), against
the real daemon on this host's real cgroups, its history in a real SQLite
store.

- The tree lists a real cgroup with a CPU burner in it; filtered by name and
  sorted by CPU, the burner comes first; it updates without a reload.
- A cgroup named <img src=x onerror=alert(1)> shows as text: its row's name is
  exactly that, no <img> element exists and no alert opened.
- The burner's history plot (10 minutes, ending at a fixed second) has a
  point for every step that `acctctl history --json` gives for the same
  window, at the same time with the same value, and none where it has none.
- A gap in recording (acctd stopped and started again on the same store) is
  drawn as a gap: a shaded band over the steps without data, and no line of
  the plot crosses it.
- The usage table's top 2 by CPU starts with the burner; a cgroup removed
  while the page is open is listed with its final record; acctd's health
  shows its history recording.
- Served with a Content-Security-Policy that allows nothing external; the
  JSON endpoints pass the API's documents on; the page is read-only.

With ACCTD_PAGE_SCREENSHOTS=DIR in the environment, the test writes DIR/page-tree.png and
DIR/page-history.png, the screenshots in docs/; otherwise it writes them to
its temporary directory only, so that the suite never rewrites docs/.

Every wait is a polled condition with a generous deadline. The only sleep
makes the gap in recording itself. Real cgroups are named page-*-PID and
removed afterwards."""
import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import pytest

import acctd
import webdriver
from test_acctctl import acctctl_binary, base_env
from test_api_client import socket_dir
from test_history import DUTY_BURNER, now_us, poll, recording
from test_metrics import free_port

HOSTILE = "<img src=x onerror=alert(1)>"
# A name whose U+202E would show it as "evilexe.doc": the page writes it
# as text people read (docs/api.md), the bidi control as \xe2\x80\xae.
SPOOF = "evil\u202ecod.exe"
ROOT = "/sys/fs/cgroup"


def hierarchies():
    """The directories a test cgroup is made in: the v2 root where it has
    the cpu controller (a v2-only host), else v1 cpuacct and memory."""
    try:
        with open(ROOT + "/cgroup.controllers") as f:
            if "cpu" in f.read().split():
                return [ROOT]
    except OSError:
        pass
    return [ROOT + "/" + h for h in ("cpuacct", "memory") if os.path.exists(ROOT + "/" + h + "/tasks")]


class Cgroups:
    """Real cgroups (paths relative to the hierarchies' roots), removed at
    the end with the processes put in them."""

    def __init__(self):
        self.dirs = hierarchies()
        self.made = []
        self.procs = []

    def make(self, path):
        for h in self.dirs:
            os.mkdir(h + path)
            self.made.append(h + path)
        return path

    def run(self, path, code):
        p = subprocess.Popen([sys.executable, "-c", code])
        self.procs.append(p)
        for h in self.dirs:
            with open(h + path + "/cgroup.procs", "w") as f:
                f.write(str(p.pid))
        return p

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait()
        for d in reversed(self.made):
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def http_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def api_doc(port, path):
    status, _, body = http_get(port, path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)["parameters"]


def page_conf(tmp_path):
    return {"history__path": str(tmp_path / "hist" / "history.db"), "history__interval": "1s",
            "cgroups__include": "/page-*-%d /page-*-%d/*" % (os.getpid(), os.getpid()),
            "sampling__collector": "files"}


@contextlib.contextmanager
def page_daemon(tmp_path, port, **conf):
    """acctd on this host serving the page on 127.0.0.1:port; yields (daemon,
    API socket path) once /ui/ answers."""
    sdir = socket_dir()
    path = os.path.join(sdir, "io.acctd")
    work = tempfile.mkdtemp(prefix="daemon-", dir=str(tmp_path))
    d = acctd.Daemon(work, None, acctd.fast_config(work, **conf),
                     extra=["--socket", path, "--metrics-listen", "127.0.0.1:%d" % port])
    try:
        d.wait_notify("READY=1", timeout=30)

        def serving():
            assert d.proc.poll() is None, "acctd exited:\n" + d.logtext()
            try:
                return http_get(port, "/ui/")[0] == 200 and os.path.exists(path)
            except OSError:
                return False

        poll(serving, what="the page on port %d" % port)
        yield d, path
    finally:
        d.stop()
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(sdir)
    log = d.logtext()
    assert "Sanitizer" not in log and "runtime error" not in log, log[-3000:]


def shots_dir(tmp_path):
    d = os.environ.get("ACCTD_PAGE_SCREENSHOTS")
    return d if d else str(tmp_path)


def ctl_history(sock, cgroup, since_us, until_us, step_us):
    p = subprocess.run([acctctl_binary(), "--address", "unix:" + sock, "--no-pager", "history", "--json",
                        "--since", "@%d.%06d" % divmod(since_us, 1000000),
                        "--until", "@%d.%06d" % divmod(until_us, 1000000),
                        "--step", "%dms" % (step_us // 1000), cgroup],
                       capture_output=True, text=True, timeout=60, env=base_env())
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture
def host():
    missing = webdriver.missing()
    if missing:
        pytest.skip(missing)
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    cg = Cgroups()
    if not cg.dirs:
        pytest.skip("neither a v2 root with cpu nor v1 cpuacct and memory hierarchies under %s" % ROOT)
    try:
        yield cg
    finally:
        cg.close()


def test_page_in_a_browser(host, tmp_path):
    pid = os.getpid()
    burner = host.make("/page-burn-%d" % pid)
    idle = host.make("/page-idle-%d" % pid)
    host.make("/page-hostile-%d" % pid)
    hostile = host.make("/page-hostile-%d/%s" % (pid, HOSTILE))
    spoof = host.make("/page-hostile-%d/%s" % (pid, SPOOF))
    host.run(burner, DUTY_BURNER)
    port = free_port()
    conf = page_conf(tmp_path)

    # First run: the burner recorded, then acctd stops: a gap in recording.
    def burner_recorded(since_us):
        """The burner's CPU in the history since since_us (a busy machine
        may take passes to read it). Right after the start the store may
        not be readable yet (503, HistoryUnavailable): not yet."""
        status, _, body = http_get(port, "/api/usage?since_us=%d" % since_us)
        if status == 503:
            return False
        assert status == 200, (status, body[:300])
        rows = json.loads(body)["parameters"]["cgroups"]
        return any(u["path"] == burner and (u.get("cpu_usec") or {}).get("value", 0) > 0 for u in rows)

    with page_daemon(tmp_path, port, **conf) as (d, sock):
        t = now_us()
        poll(lambda: burner_recorded(t), what="the burner in the history")
        t = now_us()
        poll(lambda: recording(sock, t + 5000000), what="five recordings more")
        first_end = recording(sock)["last_recording_us"]
    gap_from = now_us()
    time.sleep(12)  # the gap itself: acctd is not running (two history steps of 5 s at least)

    gap_to = now_us()
    with page_daemon(tmp_path, port, **conf) as (d, sock), webdriver.Browser(tmp_path, height=1400) as b:
        started = now_us()
        poll(lambda: burner_recorded(started), what="the burner in the history after the restart")
        t = now_us()
        poll(lambda: recording(sock, t + 4000000), what="recordings after the restart")

        # The page and its headers: nothing external, read-only.
        status, h, body = http_get(port, "/ui/")
        assert status == 200 and h["content-type"].startswith("text/html"), (status, h)
        csp = h["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp, csp
        assert b"http" not in body.replace(b"http-equiv", b""), "the page names something external"
        for path in ("/ui/", "/api/status"):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("POST", path, body=b"{}")
            r = c.getresponse()
            r.read()
            c.close()
            assert r.status == 405 and r.getheader("Allow") == "GET, HEAD", (path, r.status)
        # the JSON is the API's own document: the hostile name in it as it is
        listed = api_doc(port, "/api/list")["cgroups"]
        assert hostile in [c["path"] for c in listed], [c["path"] for c in listed]

        # ---- the tree --------------------------------------------------------------
        b.get("http://127.0.0.1:%d/ui/#filter=page-" % port)
        b.wait(lambda: b.js("return Number(document.body.dataset.ticks || 0)") >= 1, what="the first update")

        def rows():
            return b.js("return [...document.querySelectorAll('#tree tbody tr')].map(tr => "
                        "[tr.dataset.path, tr.querySelector('td.name').textContent, "
                        "tr.querySelector('td.cpu').dataset.v || null])")

        def burning():
            r = {p: (name, cpu) for p, name, cpu in rows()}
            return r if burner in r and r[burner][1] is not None and float(r[burner][1]) > 0 else None

        seen = b.wait(burning, what="the burner's CPU in the tree")
        # filtered by name: only this test's cgroups (the root does not match)
        assert set(seen) == {burner, idle, "/page-hostile-%d" % pid, hostile, spoof}, seen
        # live: the page updates without a reload
        ticks = b.js("return Number(document.body.dataset.ticks)")
        b.wait(lambda: b.js("return Number(document.body.dataset.ticks)") > ticks, what="a live update")

        b.click("#tree th[data-sort=cpu]")
        ordered = b.wait(lambda: [r for r in rows() if r[2] is not None] and rows(), what="rows sorted")
        assert ordered[0][0] == burner, ordered
        cpus = [float(r[2]) for r in ordered if r[2] is not None]
        assert cpus == sorted(cpus, reverse=True), ordered

        # the hostile name is text: exactly it, no element made of it, no alert
        name_cell = [name for p, name, _ in ordered if p == hostile]
        assert name_cell == [hostile], ordered  # sorted: full paths
        b.click("#tree th[data-sort=path]")
        tree_name = b.js("return [...document.querySelectorAll('#tree tbody tr')]"
                         ".find(tr => tr.dataset.path === arguments[0]).querySelector('td.name').textContent", hostile)
        assert tree_name.strip() == HOSTILE, tree_name
        spoof_name = b.js("return [...document.querySelectorAll('#tree tbody tr')]"
                          ".find(tr => tr.dataset.path === arguments[0]).querySelector('td.name').textContent", spoof)
        assert spoof_name.strip() == "evil\\xe2\\x80\\xaecod.exe", spoof_name
        assert b.js("return document.querySelectorAll('img').length") == 0
        assert b.alert_text() is None
        # its history and record: the title is the name as text too
        b.js("[...document.querySelectorAll('#tree tbody tr')].find(tr => tr.dataset.path === arguments[0]).click()",
             hostile)
        b.wait(lambda: b.js("return document.querySelectorAll('#now tbody tr').length") > 0,
               what="the hostile cgroup's record")
        assert b.js("return document.querySelector('#history-cgroup').textContent") == hostile
        assert b.js("return document.querySelectorAll('img').length") == 0
        assert b.alert_text() is None
        b.click("#tree th[data-sort=cpu]")
        with open(os.path.join(shots_dir(tmp_path), "page-tree.png"), "wb") as f:
            f.write(b.screenshot())

        # acctd's health: Status as the page shows it
        health = b.js("return [...document.querySelectorAll('#health dt')].map(dt => "
                      "[dt.textContent, dt.nextElementSibling.textContent])")
        health = dict(health)
        assert health["history"].startswith("recording"), health
        assert "passes" in health["reconciliation"] and "fast pass" in health, health

        # usage, top 2 by CPU at level 1: the burner first; a removed cgroup
        # with its final record (the idle one, removed now)
        for h in host.dirs:
            os.rmdir(h + idle)
            host.made.remove(h + idle)
        poll(lambda: any(u.get("removed_us") for u in api_doc(
            port, "/api/usage?since_us=-600000000&include_removed=true")["cgroups"] if u["path"] == idle),
            what="the idle cgroup's removal in the history")
        b.js("const t = document.querySelector('#usage-top'); t.value = '2';"
             "document.querySelector('#usage-window').value = '600';"
             "document.querySelector('#usage-refresh').click()")

        def usage_rows():
            rows = b.js("return [[...document.querySelectorAll('#usage tbody tr')].map(tr => tr.dataset.path),"
                        "[...document.querySelectorAll('#removed tbody tr')].map(tr => tr.dataset.path || null)]")
            return rows if idle in rows[1] and len(rows[0]) == 2 else None

        top, removed = b.wait(usage_rows, what="the usage table of 2 and the removed cgroup")
        assert top[0] == burner, top
        assert removed == [idle], removed

        # ---- the history, over a window that no longer changes ------------------------
        until = now_us() // 1000000 + 1
        poll(lambda: recording(sock, until * 1000000 + 1000000), what="a recording after the window")
        b.get("http://127.0.0.1:%d/ui/#filter=page-&cgroup=%s&window=600&until=%d" % (port, burner, until))
        # the plots of this window: a plot drawn before the new address took
        # effect (the same document, its hash changed) may still be there for
        # a moment (seen once under ASan)
        b.wait(lambda: b.js("const s = document.querySelector('svg[data-quantity=cpu]');"
                            "return s !== null && Number(s.dataset.until_us) === %d" % (until * 1000000)),
               what="the history plots of the window")
        svg = b.js("const s = document.querySelector('svg[data-quantity=cpu]'); return {"
                   "since: Number(s.dataset.since_us), until: Number(s.dataset.until_us), step: Number(s.dataset.step_us),"
                   "points: [...s.querySelectorAll('circle.pt')].map(c => [Number(c.dataset.t_us), Number(c.dataset.v)]),"
                   "lines: [...s.querySelectorAll('path.line')].map(p => [Number(p.dataset.from_us), Number(p.dataset.to_us)]),"
                   "gaps: [...s.querySelectorAll('rect.gap')].map(r => [Number(r.dataset.from_us), Number(r.dataset.to_us)])}")
        assert svg["until"] == until * 1000000 and svg["since"] == (until - 600) * 1000000, svg
        doc = ctl_history(sock, burner, svg["since"], svg["until"], svg["step"])
        assert doc["step_us"] == svg["step"], (doc["step_us"], svg["step"])
        want = [(s["t_us"], s["cpu_cores"]) for s in doc["steps"] if s["covered_us"] > 0 and "cpu_cores" in s]
        assert len(want) >= 2, doc
        got = svg["points"]
        assert [t for t, _ in got] == [t for t, _ in want], (got, want)
        for (t, v), (_, w) in zip(got, want):
            assert abs(v - w) <= 1e-9 * max(1.0, abs(w)), (t, v, w)

        # the gap: steps without data between the two runs' steps with data
        steps = doc["steps"]
        covered = [i for i, s in enumerate(steps) if s["covered_us"] > 0]
        inner = [i for i in range(covered[0], covered[-1]) if steps[i]["covered_us"] == 0]
        assert inner, ("no step without data between the runs", first_end, gap_from, gap_to,
                       [(s["t_us"], s["covered_us"]) for s in steps if s["covered_us"]])
        for i in inner:
            t = steps[i]["t_us"]
            assert any(f <= t < to for f, to in svg["gaps"]), ("step %d not shaded" % t, svg["gaps"])
            for f, to in svg["lines"]:
                assert not (f < t < to), ("a line crosses the gap at %d" % t, svg["lines"])
        # points on both sides of it: the plot stops and starts again
        ts = [t for t, _ in got]
        assert min(ts) < steps[inner[0]]["t_us"] and max(ts) > steps[inner[-1]]["t_us"], (ts, inner)
        assert b.js("return document.querySelectorAll('svg[data-quantity=memory] circle.pt').length") > 0
        # its record now (Get): the CPU time, with its age
        b.wait(lambda: b.js("return document.querySelector('#now tbody tr[data-name=\"cpu.usage\"]') !== null"),
               what="the burner's record")
        assert b.alert_text() is None
        # the screenshot: the last minute of the same window, where the two
        # runs and the gap between them fill the plot
        loads = b.js("return Number(document.body.dataset.historyLoads)")
        b.get("http://127.0.0.1:%d/ui/#filter=page-&cgroup=%s&window=60&until=%d" % (port, burner, until))
        b.wait(lambda: b.js("return Number(document.body.dataset.historyLoads || 0)") > loads
               and b.js("return document.querySelector('svg[data-quantity=cpu]').dataset.since_us") ==
               str((until - 60) * 1000000), what="the last minute's plots")
        # below the page's sticky header (the element's screenshot scrolls only
        # when the element is not in view)
        b.js("const s = document.querySelector('#history-section'); s.scrollIntoView();"
             "window.scrollBy(0, -document.querySelector('header').offsetHeight - 8)")
        with open(os.path.join(shots_dir(tmp_path), "page-history.png"), "wb") as f:
            f.write(b.screenshot("#history-section"))
        # nothing the Content-Security-Policy had to stop
        assert b.js("return document.body.dataset.cspViolations || '0'") == "0"
        # ... and the policy does stop what is external: an image from
        # elsewhere and an inline handler, put in by hand, are refused
        b.js("const i = document.createElement('img'); i.src = 'http://192.0.2.1/x.png';"
             "document.body.appendChild(i);"
             "const d = document.createElement('div'); d.setAttribute('onclick', 'window.pwned = 1');"
             "document.body.appendChild(d); d.click();")
        b.wait(lambda: int(b.js("return document.body.dataset.cspViolations || '0'")) >= 2,
               what="the Content-Security-Policy's refusals")
        assert b.js("return window.pwned === undefined")


def test_page_requests_without_a_browser(tmp_path):
    """The routes and refusals over plain HTTP (no root, no browser)."""
    port = free_port()
    with page_daemon(tmp_path, port, history__path=str(tmp_path / "h.db")) as (d, sock):
        status, h, _ = http_get(port, "/")
        assert status == 302 and h["location"] == "/ui/"
        for path in ("/ui/page.js", "/ui/page.css"):
            status, h, body = http_get(port, path)
            assert status == 200 and body and h["etag"], (path, status)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", path, headers={"If-None-Match": h["etag"]})
            r = c.getresponse()
            r.read()
            c.close()
            assert r.status == 304, (path, r.status)
        # HEAD: the headers only (a body would be read as the next response
        # on the same connection), for a file, a call and a refusal
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            for path, code in (("/ui/page.js", 200), ("/api/status", 200), ("/api/list?x=1", 400), ("/ui/", 200)):
                c.request("HEAD", path)
                r = c.getresponse()
                assert r.status == code and r.read() == b"", (path, r.status)
            c.request("GET", "/api/status")
            r = c.getresponse()
            assert r.status == 200 and json.loads(r.read())["parameters"]["status"], "after HEAD"
        finally:
            c.close()
        assert http_get(port, "/ui/nothing.js")[0] == 404
        assert http_get(port, "/api/reload")[0] == 404  # no method that changes anything is reachable
        status, _, body = http_get(port, "/api/list?bogus=1")
        assert status == 400 and b"bogus" in body, body
        status, h, body = http_get(port, "/api/get?cgroup=/no-such-cgroup-here")
        assert status == 404 and json.loads(body)["error"] == "io.acctd.Accounting.NoSuchCgroup", body
        # clients that go away while their call is answered: the call is
        # called off (the API sees its connection close), acctd goes on
        for k in range(20):
            with socket.create_connection(("127.0.0.1", port)) as c:
                c.sendall(b"GET /api/%s HTTP/1.1\r\nHost: x\r\n\r\n" %
                          (b"list", b"history?cgroup=/&since_us=-604800000000", b"usage?since_us=-60000000")[k % 3])
        # their calls end (their slots free again) ...
        poll(lambda: http_get(port, "/api/status")[0] == 200, what="the slots free again")
        # ... and within the two slots of a client, a third call in progress
        # is refused with 503 (whether they overlap is the machine's timing)
        # (the root's history must exist first: its first recording can come
        # late on a busy host, and before it the call is a 404, as ASan
        # beside two CPU hogs and 10,000 other cgroups saw)
        hist = "/api/history?cgroup=/&since_us=-604800000000&step_us=10000000"
        poll(lambda: http_get(port, hist)[0] == 200, what="the root's history")
        conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        for c in conns:
            c.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % hist.encode())
        answers = []
        for c in conns:
            c.settimeout(30)
            answers.append(c.recv(64).split(b" ")[1])
            c.close()
        assert b"200" in answers and set(answers) <= {b"200", b"503"}, answers
        st = api_doc(port, "/api/status")["status"]
        assert st["cgroups_live"] >= 1 and "history" in st
        # /metrics is still there, and counts the page's answers
        status, _, body = http_get(port, "/metrics")
        assert status == 200 and b'acctd_metrics_responses_total{code="302"} 1' in body, body[-2000:]
