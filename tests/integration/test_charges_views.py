"""Programs' charges beside the kernel's values (docs/charges.md), on a fake
cgroup tree whose memory the test sets exactly, with a real acctd:
reconciliation of a resource declared ram against memory (Status, the log,
/metrics, Get's unexplained memory); the charges in List, Compare, Watch and
acctctl show --json; the averages of a resource declared averages, checked
against their documented formula."""
import contextlib
import math
import os
import re
import shutil
import socket
import tempfile
import time
import urllib.request

import pytest

import acctd
from test_api_client import IFACE, Varlink, error, ok, socket_dir

MiB = 1 << 20
RESOURCES = {
    # RAM an application charges from its own memory, exact reads (budget 0)
    "resource.arena__unit": "bytes", "resource.arena__budget": "0", "resource.arena__ram": "yes",
    # not RAM: never compared with memory
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "0",
    # load-like, averaged
    "resource.inflight__unit": "count", "resource.inflight__budget": "0", "resource.inflight__averages": "yes",
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def views_daemon(fakecg, tmp_path, resources):
    """acctd on the fake tree with `resources` declared, its socket and
    /metrics on a free port: {"fs", "d", "sock", "port"}. Shared by the
    charges' view files (test_charges_avg_views.py, test_charges_ram_slots.py)."""
    port = free_port()
    sdir = socket_dir()
    sock = os.path.join(sdir, "io.acctd")
    work = tempfile.mkdtemp(prefix="daemon-", dir=str(tmp_path))
    d = acctd.Daemon(work, fakecg.root, acctd.fast_config(work, **resources),
                     extra=["--socket", sock, "--metrics-listen", "127.0.0.1:%d" % port])
    try:
        d.wait_notify("READY=1", timeout=120)
        yield {"fs": fakecg, "d": d, "sock": sock, "port": port}
    finally:
        d.stop()
        shutil.rmtree(sdir, ignore_errors=True)


@pytest.fixture
def env(fakecg, tmp_path):
    """acctd on a fake v2 tree with /svc (4 MiB, its child /svc/job 1 MiB)
    and /other (2 MiB), its socket and /metrics on a free port."""
    fakecg.mkdir("/svc", memory=3 * MiB)
    fakecg.mkdir("/svc/job", memory=1 * MiB)
    fakecg.mkdir("/other", memory=2 * MiB)
    with views_daemon(fakecg, tmp_path, RESOURCES) as e:
        yield e


def call(sock, method, params=None):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + "." + method, params or {}))


def charge(sock, resource, delta, cgroup):
    call(sock, "Charge", {"resource": resource, "delta": delta, "cgroup": cgroup})


def wait_for(fn, what, timeout=60):
    """fn()'s first true result, polled until the deadline (a loaded machine
    stretches passes)."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = fn()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def status_ram(sock):
    return call(sock, "Status")["status"]["charges_reconciliation"]


def metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60) as r:
        return r.read().decode()


def series(page, family, cgroup):
    m = re.search(r'^%s\{cgroup="%s"\} (\S+)$' % (re.escape(family), re.escape(cgroup)), page, re.M)
    return None if m is None else float(m.group(1))


def test_ram_reconciliation(env):
    """Charged RAM below memory: not flagged, unexplained memory = memory -
    charged (the subtree's charges, ram resources only). Above it beyond the
    bounds: flagged in Status, in the log once, in /metrics; given back: the
    flag clears."""
    sock, d, port = env["sock"], env["d"], env["port"]
    charge(sock, "arena", 1 * MiB, "/svc")
    charge(sock, "arena", 512 << 10, "/svc/job")
    charge(sock, "gpu", 64 * MiB, "/svc")  # not RAM: no part of it

    def get(path):
        return call(sock, "Get", {"cgroup": path})

    # the memory is the fake's; unexplained is read at the call
    g = wait_for(lambda: (lambda r: r if r["cgroup"]["values"].get("memory") else None)(get("/svc")), "memory of /svc")
    mem = g["cgroup"]["values"]["memory"]
    assert mem["value"] == 4 * MiB
    u = g["unexplained_memory"]
    assert u["value"] == mem["value"] - (1 * MiB + (512 << 10))
    assert u["bound"] == mem.get("bound", 0)  # the charges' bound is 0 (budget 0)
    assert u["age_us"] >= 0
    # precise: against the memory read from the kernel at the call, as the record beside it
    gp = call(sock, "Get", {"cgroup": "/svc", "precise": True})
    assert gp["unexplained_memory"]["value"] == gp["cgroup"]["values"]["memory"]["value"] - (1 * MiB + (512 << 10))
    assert gp["cgroup"]["values"]["memory"]["value"] == 4 * MiB
    job = get("/svc/job")
    assert job["unexplained_memory"]["value"] == 1 * MiB - (512 << 10)
    # a cgroup nothing was charged to: all its memory is unexplained
    assert get("/other")["unexplained_memory"]["value"] == 2 * MiB

    st = wait_for(lambda: (lambda s: s if s["compared"] >= 3 else None)(status_ram(sock)), "a check of the charges")
    assert st["over_memory"] == 0 and st["first_over_memory"] == []
    page = wait_for(lambda: (lambda p: p if series(p, "acctd_charges_over_memory", "/svc/job") is not None else None)(
        metrics(port)), "acctd_charges_over_memory of /svc/job")
    assert series(page, "acctd_charges_over_memory", "/svc") == 0
    assert series(page, "acctd_unexplained_memory_bytes", "/svc") == 4 * MiB - (1 * MiB + (512 << 10))
    assert series(page, "acctd_unexplained_memory_bound_bytes", "/svc") == mem.get("bound", 0)
    assert series(page, "acctd_charges_over_memory", "/other") is None  # not charged: not listed

    # /svc/job charged 2 MiB above its 1 MiB, beyond both bounds
    over = 2 * MiB + 2 * (job["cgroup"]["values"]["memory"].get("bound", 0))
    charge(sock, "arena", over, "/svc/job")
    st = wait_for(lambda: (lambda s: s if s["over_memory"] >= 1 else None)(status_ram(sock)), "/svc/job flagged")
    assert "/svc/job" in st["first_over_memory"]
    d.wait_log("Charged RAM of /svc/job", timeout=60)
    page = wait_for(lambda: (lambda p: p if series(p, "acctd_charges_over_memory", "/svc/job") == 1 else None)(
        metrics(port)), "acctd_charges_over_memory 1")
    exp = 1 * MiB - (512 << 10) - over
    assert series(page, "acctd_unexplained_memory_bytes", "/svc/job") == exp
    assert get("/svc/job")["unexplained_memory"]["value"] == exp
    # flagged once in the log however many passes see it
    checks = status_ram(sock)["checks"]
    wait_for(lambda: status_ram(sock)["checks"] >= checks + 3, "three more checks")
    assert d.logtext().count("Charged RAM of /svc/job") == 1

    # given back: no longer flagged
    charge(sock, "arena", -over, "/svc/job")
    wait_for(lambda: status_ram(sock)["over_memory"] == 0, "the flag to clear")


def test_ram_over_release(env):
    """Charged RAM given back beyond what was charged (below zero beyond its
    bound: budget 0, so bound 0): flagged over-released in Status, in the
    log once, in /metrics, never as over memory; charged back: cleared."""
    sock, d, port = env["sock"], env["d"], env["port"]
    charge(sock, "arena", 4096, "/svc/job")
    charge(sock, "arena", -4096 - 1, "/svc/job")  # one byte more than charged
    st = wait_for(lambda: (lambda s: s if s["below_zero"] >= 1 else None)(status_ram(sock)), "/svc/job over-released")
    assert "/svc/job" in st["first_below_zero"] and st["over_memory"] == 0, st
    d.wait_log("Charged RAM of /svc/job (-1 bytes", timeout=60)
    page = wait_for(lambda: (lambda p: p if series(p, "acctd_charges_below_zero", "/svc/job") == 1 else None)(
        metrics(port)), "acctd_charges_below_zero 1")
    assert series(page, "acctd_charges_over_memory", "/svc/job") == 0
    checks = status_ram(sock)["checks"]
    wait_for(lambda: status_ram(sock)["checks"] >= checks + 3, "three more checks")
    assert d.logtext().count("is below zero beyond its bound") == st["below_zero"]  # once each
    charge(sock, "arena", 1, "/svc/job")
    wait_for(lambda: status_ram(sock)["below_zero"] == 0, "the flag to clear")


def acctctl(sock, *args):
    import subprocess
    from test_acctctl import acctctl_binary
    r = subprocess.run([acctctl_binary(), "--address", "unix:" + sock, "--no-pager"] + list(args),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_show(env):
    """acctctl show prints the unexplained memory; show --json carries the
    charges and the unexplained memory beside the cgroup's own members."""
    import json
    sock = env["sock"]
    charge(sock, "arena", 1 * MiB, "/svc")
    wait_for(lambda: call(sock, "Get", {"cgroup": "/svc"})["cgroup"]["values"].get("memory"), "memory of /svc")
    out = acctctl(sock, "show", "/svc")
    assert "Unexplained memory: 3.0M" in out, out
    doc = json.loads(acctctl(sock, "--json", "show", "/svc"))
    assert doc["path"] == "/svc" and "values" in doc
    assert doc["charges"]["arena"]["subtree"]["value"] == 1 * MiB
    assert doc["charges"]["gpu"]["self"] == {"value": 0, "bound": 0, "age_us": 0}
    assert doc["unexplained_memory"]["value"] == 3 * MiB


def test_list_compare_watch(env):
    """List's entries (and acctctl list --json) carry the charges of a
    charged cgroup only; Compare answers charges.NAME[.self]; Watch reports a
    change of a charged value, with the charges in its records."""
    import json
    sock = env["sock"]
    charge(sock, "arena", 5000, "/svc/job")
    charge(sock, "gpu", 7000, "/svc")

    entries = {e["path"]: e for e in call(sock, "List")["cgroups"]}
    assert "charges" not in entries["/other"]
    assert entries["/svc"]["charges"]["gpu"]["self"] == {"value": 7000, "bound": 0, "age_us": 0}
    assert entries["/svc"]["charges"]["arena"]["subtree"]["value"] == 5000
    assert entries["/svc"]["charges"]["arena"]["self"]["value"] == 0
    assert entries["/svc/job"]["charges"]["arena"]["self"]["value"] == 5000
    assert "gpu" not in entries["/svc/job"]["charges"]  # nothing at or below it
    assert entries["/svc"]["memory"]["value"] > 0  # the kernel's values as before
    listed = {e["path"]: e for e in json.loads(acctctl(sock, "--json", "list"))}
    assert listed["/svc"]["charges"]["gpu"]["subtree"]["value"] == 7000
    assert "charges" not in listed["/other"]

    def compare(q, threshold, path="/svc"):
        with Varlink(sock) as v:
            return v.call(IFACE + ".Compare", {"cgroup": path, "quantity": q, "threshold": threshold})

    r = ok(compare("charges.arena", 4999))
    assert r["result"] == "above" and r["value"]["value"] == 5000
    assert ok(compare("charges.arena.self", 1))["result"] == "below"  # 0 to /svc itself
    assert ok(compare("charges.gpu", 7000))["result"] == "equal"
    assert ok(compare("charges.gpu", 1, "/other"))["result"] == "below"  # never charged: 0
    error(compare("charges.nope", 1), IFACE + ".NoSuchQuantity")
    error(compare("charges.gpu.subtree", 1), IFACE + ".NoSuchQuantity")
    error(compare("charges.gpu", 1, "/absent"), IFACE + ".NoSuchCgroup")
    out = acctctl(sock, "compare", "/svc", "charges.gpu", "6000")
    assert "above" in out, out

    with Varlink(sock, timeout=60) as v:
        v.send(IFACE + ".Watch", {"cgroups": ["/svc"], "interval_ms": 50}, more=True)
        first = ok(v.recv())["cgroups"]
        assert first[0]["charges"]["gpu"]["self"]["value"] == 7000
        charge(sock, "gpu", 1, "/svc")
        end = time.monotonic() + 60
        while True:
            got = ok(v.recv())["cgroups"]
            rec = [c for c in got if c["path"] == "/svc"]
            if rec and rec[0].get("charges", {}).get("gpu", {}).get("self", {}).get("value") == 7001:
                break
            assert time.monotonic() < end, "no Watch update with the new charge"


def test_averages(env):
    """A value held from its first charge: after n periods of 5 s each
    average is v (1 - exp(-n 5 s / window)) (docs/charges.md, "Averages"),
    whole life, not warming; the ancestors' subtree values are averaged too;
    acctctl show prints them. A resource without averages has none."""
    sock = env["sock"]
    charge(sock, "inflight", 1000, "/other")
    charge(sock, "gpu", 1000, "/other")

    def averages():
        a = call(sock, "Get", {"cgroup": "/other"})["charges"]["inflight"].get("averages")
        return a if a and a["covered_us"] >= 10_000_000 else None

    a = wait_for(averages, "two periods of averages", timeout=120)
    for name, window in (("avg1", 60), ("avg5", 300), ("avg15", 900)):
        want = 1000 * (1 - math.exp(-a["covered_us"] / 1e6 / window))
        assert math.isclose(a[name], want, rel_tol=1e-9), (name, a)
    assert a["avg1"] > a["avg5"] > a["avg15"] > 0
    assert a["whole_life"] is True and a["warming"] == [] and a["bound"] == 0
    assert a["covered_us"] % 5_000_000 == 0 and 0 <= a["age_us"]
    root = call(sock, "Get", {"cgroup": "/"})["charges"]["inflight"]["averages"]
    # the root's subtree value: the same 1000, held since the same charge
    assert math.isclose(root["avg1"], 1000 * (1 - math.exp(-root["covered_us"] / 1e6 / 60)), rel_tol=1e-9), root
    assert "averages" not in call(sock, "Get", {"cgroup": "/other"})["charges"]["gpu"]
    out = acctctl(sock, "show", "/other")
    assert re.search(r"Averages of inflight: \d+\.\d\d, \d+\.\d\d, \d+\.\d\d over 1, 5, 15 min", out), out
