"""Resource budgets of the varlink API against a hostile local user (issue 13,
items 1 and 2): queued input and output bytes, Watch calls and watched cgroup
entries per uid and in total (docs/api.md, "Resource budgets").

The hostile clients run as `nobody` and the bystander as uid 1 (`daemon`),
both through setpriv, each an agent process that takes one JSON command per
line on stdin and answers one JSON line. acctd's memory is its VmRSS.
Under AddressSanitizer (its shadow memory and quarantine keep what is freed
resident) the RSS bounds are not asserted; everything else is."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import acctd
from test_api_client import IFACE, SERVICE, Varlink, acctd_sanitizer, api_daemon, error, ok, socket_dir
from test_metrics import Metrics, free_port, samples

LIMIT = IFACE + ".ResourceLimitExceeded"
MiB = 1 << 20

pytestmark = [
    pytest.mark.skipif(not acctd.is_root(), reason="needs root to run clients as other users"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)"),
]

NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]
OTHER = ["--reuid=1", "--regid=1", "--clear-groups"]

# One command per stdin line, one JSON answer per stdout line.
AGENT = r"""
import json, socket, sys
path = sys.argv[1]
conns = {}
bufs = {}

def recv(i, timeout):
    s = conns[i]
    s.settimeout(timeout)
    while b"\0" not in bufs[i]:
        try:
            chunk = s.recv(1 << 20)
        except socket.timeout:
            return {"timeout": True}
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return {"eof": True}
        bufs[i] += chunk
    msg, bufs[i] = bufs[i].split(b"\0", 1)
    return {"msg": json.loads(msg)}

for line in sys.stdin:
    c = json.loads(line)
    op, i = c["op"], c.get("id")
    out = {}
    try:
        if op == "connect":
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            conns[i], bufs[i] = s, b""
        elif op == "send":
            m = {"method": c["method"], "parameters": c.get("params", {})}
            if c.get("more"):
                m["more"] = True
            conns[i].settimeout(c.get("timeout", 10))
            conns[i].sendall((json.dumps(m).encode() + b"\0") * c.get("times", 1))
        elif op == "recv":
            out = recv(i, c.get("timeout", 10))
        elif op == "partial":
            # An unterminated call of `size` bytes: a string that never ends.
            head = b'{"method": "io.acctd.Accounting.List", "parameters": {"x": "'
            body = head + b"a" * (c["size"] - len(head))
            conns[i].settimeout(20)
            try:
                conns[i].sendall(body)
                out = {"sent": True}
            except (BrokenPipeError, ConnectionResetError) as e:
                out = {"sent": False, "why": type(e).__name__}
        elif op == "drain":
            # Read until EOF, keeping the first error reply seen.
            first = None
            while True:
                r = recv(i, c.get("timeout", 5))
                if "msg" in r:
                    if first is None and "error" in r["msg"]:
                        first = r["msg"]
                    continue
                out = {"eof": "eof" in r, "error": first}
                break
        elif op == "close":
            conns.pop(i).close()
        elif op == "closeall":
            for s in conns.values():
                s.close()
            conns.clear()
    except Exception as e:
        out = {"exception": "%s: %s" % (type(e).__name__, e)}
    print(json.dumps(out), flush=True)
"""


class Agent:
    """A varlink client process running as another user."""

    def __init__(self, path, who):
        args = ["setpriv"] + who + [sys.executable, "-c", AGENT, path]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")

    def do(self, op, **kw):
        kw["op"] = op
        self.p.stdin.write(json.dumps(kw) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        assert line, "agent died (rc %s)" % self.p.poll()
        out = json.loads(line)
        assert "exception" not in out, out
        return out

    def call(self, i, method, params=None, timeout=10, **kw):
        self.do("send", id=i, method=method, params=params or {}, timeout=timeout, **kw)
        return self.do("recv", id=i, timeout=timeout)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def rss(d):
    with open("/proc/%d/status" % d.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def served(path, who=OTHER):
    """Another user's GetInfo and List answer; returns the seconds they took."""
    with Agent(path, who) as a:
        a.do("connect", id=0)
        t = time.monotonic()
        r = a.call(0, SERVICE + ".GetInfo")
        ok(r.get("msg"))
        r = a.call(0, IFACE + ".List")
        ok(r.get("msg"))
        return time.monotonic() - t


def clean_exit(d):
    """acctd stopped with 0 and no sanitizer report (ASan, UBSan, leaks)."""
    with open(d.log_path) as f:
        log = f.read()
    assert d.proc.returncode == 0 and "Sanitizer" not in log and "runtime error" not in log, log[-3000:]


def tree(fs, n=20):
    fs.mkdir("/a", memory=4 << 20, procs=[10])
    for i in range(n):
        fs.mkdir("/s/c%04d" % i, memory=(i % 20 + 1) << 20, cpu_usec=1000 * i, procs=[1000 + i])


def test_input_flood_bounded_by_the_users_budget(fakecg, tmp_path, capsys):
    """Acceptance 3: 64 connections of nobody, each sending a 16 MiB message
    without its NUL, raise acctd's RSS by no more than nobody's input budget
    (the default, 32 MiB) plus 8 MiB of slack; the connections past the
    budget get ResourceLimitExceeded and are closed; another user is served
    during the flood; once the flood's connections are gone, RSS is back
    within 8 MiB of where it started."""
    tree(fakecg)
    budget = 32 * MiB
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        served(path)  # warm: the first List's buffers are part of the start
        time.sleep(0.3)
        before = rss(d)
        with Agent(path, NOBODY) as a:
            outcomes = []
            for i in range(64):
                a.do("connect", id=i)
                outcomes.append(a.do("partial", id=i, size=16 * MiB))
            during = rss(d)
            latency = served(path)
            refused = [a.do("drain", id=i, timeout=2) for i in range(64)]
            peak = max(during, rss(d))
            a.do("closeall")
        end = time.monotonic() + 10
        after = rss(d)
        while after > before + 8 * MiB and time.monotonic() < end:
            time.sleep(0.1)
            after = rss(d)
        with capsys.disabled():
            print("\n64 x 16 MiB partial messages from nobody: RSS %.1f MiB before, %.1f MiB during, "
                  "%.1f MiB after; another user's GetInfo+List took %.1f ms"
                  % (before / MiB, peak / MiB, after / MiB, latency * 1000))
        closed = [r for r in refused if r["eof"]]
        assert len(closed) >= 64 - budget // (16 * MiB), refused
        for r in closed:
            assert r["error"] is not None and r["error"]["error"] == LIMIT, r
            assert r["error"]["parameters"] == {"limit": "max_input_bytes_per_user", "value": budget}
        d.wait_log("max_input_bytes_per_user reached")
        if not acctd_sanitizer():
            assert peak - before <= budget + 8 * MiB, (before, peak)
            assert after <= before + 8 * MiB, (before, after)
        served(path)
    clean_exit(d)


def test_root_is_not_limited_by_the_input_budget(fakecg, tmp_path):
    """Root's input is not budgeted (docs/api.md says why): a message larger
    than nobody's budget is read whole and answered."""
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, api__max_input_bytes_per_user="1M", api__max_input_bytes="1M") as (d, path):
        with Varlink(path) as v:
            big = {"method": IFACE + ".Get", "parameters": {"cgroup": "/a", "pad": "x" * (2 * MiB)}}
            v.send_raw(json.dumps(big).encode() + b"\0")
            error(v.recv(), SERVICE + ".InvalidParameter")  # read whole: "pad" is unknown
        with Agent(path, NOBODY) as a:
            a.do("connect", id=0)
            assert a.do("partial", id=0, size=2 * MiB)["sent"] is False
            r = a.do("drain", id=0)
            assert r["eof"] and r["error"]["error"] == LIMIT, r
            assert r["error"]["parameters"] == {"limit": "max_input_bytes_per_user", "value": MiB}
    clean_exit(d)


def test_client_that_never_reads_hits_the_output_budget(fakecg, tmp_path):
    """Connections of nobody that pipeline List calls and never read are
    closed once their queued replies pass nobody's output budget (1 MiB here;
    each connection may queue 4 MiB, max_output_queue), long before
    idle_timeout (5 min); another user is served meanwhile."""
    tree(fakecg, 300)
    with api_daemon(tmp_path, fakecg.root, api__max_output_bytes_per_user="1M") as (d, path):
        with Agent(path, NOBODY) as a:
            for i in range(4):
                a.do("connect", id=i)
                a.do("send", id=i, method=IFACE + ".List", times=40)
            time.sleep(1)
            served(path)
            for i in range(4):
                assert a.do("drain", id=i, timeout=5)["eof"], "connection %d still open" % i
        d.wait_log("past max_output_bytes_per_user")
        served(path)
    clean_exit(d)


def test_watch_bounds(fakecg, tmp_path):
    """Watch: a cgroups array longer than max_watch_cgroups is refused for
    everybody; Watch calls past max_watches_per_user and entries past
    max_watched_cgroups_per_user are refused for nobody while another user
    and root still watch; a closed Watch gives its budget back."""
    tree(fakecg)
    conf = dict(api__max_watch_cgroups="100", api__max_watches_per_user="3", api__max_watched_cgroups_per_user="150")
    with api_daemon(tmp_path, fakecg.root, **conf) as (d, path):
        with Agent(path, NOBODY) as a, Agent(path, OTHER) as b:
            a.do("connect", id=0)
            r = a.call(0, IFACE + ".Watch", {"cgroups": ["/a"] * 101}, more=True)["msg"]
            assert error(r, LIMIT) == {"limit": "max_watch_cgroups", "value": 100}
            with Varlink(path) as v:
                v.send(IFACE + ".Watch", {"cgroups": ["/a"] * 101}, more=True)
                assert error(v.recv(), LIMIT) == {"limit": "max_watch_cgroups", "value": 100}
            # three watches (the first with 100 entries), then the fourth is refused
            for i, cgroups in [(1, ["/a"] * 100), (2, ["/a"]), (3, ["/a"])]:
                a.do("connect", id=i)
                ok(a.call(i, IFACE + ".Watch", {"cgroups": cgroups}, more=True)["msg"])
            a.do("connect", id=4)
            r = a.call(4, IFACE + ".Watch", {"prefix": "/"}, more=True)["msg"]
            assert error(r, LIMIT) == {"limit": "max_watches_per_user", "value": 3}
            # the others are not affected: another user, and root past nobody's count
            b.do("connect", id=0)
            ok(b.call(0, IFACE + ".Watch", {"cgroups": ["/a"] * 100}, more=True)["msg"])
            roots = [Varlink(path) for _ in range(4)]
            for v in roots:
                v.send(IFACE + ".Watch", {"cgroups": ["/a"] * 100}, more=True)
                ok(v.recv())
            # a closed Watch gives its count back, not more: 102 + 50 > 150 entries
            a.do("close", id=3)
            time.sleep(0.3)
            a.do("connect", id=5)
            r = a.call(5, IFACE + ".Watch", {"cgroups": ["/a"] * 50}, more=True)["msg"]
            assert error(r, LIMIT) == {"limit": "max_watched_cgroups_per_user", "value": 150}
            a.do("connect", id=6)
            ok(a.call(6, IFACE + ".Watch", {"cgroups": ["/a"] * 48}, more=True)["msg"])
            for v in roots:
                v.close()
    clean_exit(d)


def test_memory_returns_after_a_huge_watch(fakecg, tmp_path, capsys):
    """Item 2 and (d): one Watch of nobody naming /a 2,500,000 times (a 15 MB
    message) is refused (max_watch_cgroups), and once its connection is gone
    acctd's RSS is back within 16 MiB of where it started: parsing the message
    takes a few hundred MB for a moment, which the daemon gives back (big
    buffers mmapped, malloc_trim after the burst)."""
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        served(path)
        time.sleep(0.3)
        before = rss(d)
        with Agent(path, NOBODY) as a:
            a.do("connect", id=0)
            r = a.call(0, IFACE + ".Watch", {"cgroups": ["/a"] * 2500000}, more=True, timeout=300)["msg"]
            during = rss(d)
            served(path)
            a.do("close", id=0)
        end = time.monotonic() + 10
        after = rss(d)
        while after > before + 16 * MiB and time.monotonic() < end:
            time.sleep(0.1)
            after = rss(d)
        with capsys.disabled():
            print("\nWatch of 2,500,000 entries from nobody: RSS %.1f MiB before, %.1f MiB after its reply, "
                  "%.1f MiB after it left" % (before / MiB, during / MiB, after / MiB))
        assert error(r, LIMIT) == {"limit": "max_watch_cgroups", "value": 16384}
        if not acctd_sanitizer():
            assert after <= before + 16 * MiB, memory_report(d, before, after)
    clean_exit(d)


def memory_report(d, before, after):
    """What a failed RSS check needs to be understood: the daemon's trims (its
    debug log), its memory map summary, and anything in the environment that
    changes the allocator."""
    pid = d.proc.pid
    with open("/proc/%d/smaps_rollup" % pid) as f:
        rollup = f.read()
    with open("/proc/%d/maps" % pid) as f:
        libs = sorted({line.split()[-1] for line in f if ".so" in line})
    env = {k: v for k, v in os.environ.items() if k.startswith(("MALLOC", "GLIBC_TUNABLES", "LD_PRELOAD"))}
    trims = [line for line in d.logtext().splitlines() if "malloc_trim" in line]
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        thp = f.read().strip()
    return "RSS %d -> %d bytes\ntrims: %s\nenv: %s\nTHP: %s\nlibraries: %s\n%s" % (
        before, after, trims, env, thp, libs, rollup)


def test_refusals_counted_in_metrics(fakecg, tmp_path):
    """/metrics counts the refusals per resource: nobody's second Watch past
    max_watches_per_user=1 and a connection past its input budget."""
    tree(fakecg)
    port = free_port()
    path = os.path.join(socket_dir(), "io.acctd")
    config = acctd.fast_config(tmp_path, api__max_watches_per_user="1", api__max_input_bytes_per_user="1M")
    with acctd.Daemon(tmp_path, fakecg.root, config,
                      extra=["--socket", path, "--metrics-listen", "127.0.0.1:%d" % port]) as d:
        page = Metrics(port).wait()
        zero = {r: samples(page)[("acctd_api_budget_refusals_total", frozenset({("resource", r)}))]
                for r in ("input", "output", "connections", "watches", "watch_cgroups")}
        assert set(zero.values()) == {0.0}
        with Agent(path, NOBODY) as a:
            a.do("connect", id=0)
            ok(a.call(0, IFACE + ".Watch", {"cgroups": ["/a"]}, more=True)["msg"])
            a.do("connect", id=1)
            error(a.call(1, IFACE + ".Watch", {"cgroups": ["/a"]}, more=True)["msg"], LIMIT)
            a.do("connect", id=2)
            a.do("partial", id=2, size=2 * MiB)
            assert a.do("drain", id=2)["eof"]
        got = samples(Metrics(port).page()[0])
        assert got[("acctd_api_budget_refusals_total", frozenset({("resource", "watches")}))] == 1
        assert got[("acctd_api_budget_refusals_total", frozenset({("resource", "input")}))] == 1
        assert got[("acctd_api_budget_refusals_total", frozenset({("resource", "output")}))] == 0
    clean_exit(d)
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
