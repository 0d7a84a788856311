"""The averages of a resource declared averages (docs/charges.md, "Averages")
beyond Get: in List's entries and Watch's records (each charged resource's
`averages`, the shape of Get's), where a step that moves them is a change of
the record, and in /metrics as acctd_charge_average{cgroup, resource, unit,
window} in base units; on a fake cgroup tree with a real acctd. Values are
checked against the documented formula for a value held from its first
charge, v (1 - exp(-covered / window)), so no timing is asserted."""
import math
import re
import time

import pytest

from test_api_client import IFACE, Varlink, ok
from test_charges_views import acctctl, call, charge, metrics, views_daemon, wait_for

RESOURCES = {
    # load-like, averaged, exact reads
    "resource.inflight__unit": "count", "resource.inflight__budget": "0", "resource.inflight__averages": "yes",
    # averaged, charged in microseconds, served in seconds on /metrics
    "resource.lease__unit": "seconds", "resource.lease__budget": "0", "resource.lease__averages": "yes",
    # not averaged: never has averages
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "0",
}
WINDOWS = (("avg1", "1m", 60), ("avg5", "5m", 300), ("avg15", "15m", 900))


@pytest.fixture
def env(fakecg, tmp_path):
    fakecg.mkdir("/svc", memory=1 << 20)
    fakecg.mkdir("/other", memory=1 << 20)
    with views_daemon(fakecg, tmp_path, RESOURCES) as e:
        yield e


def check_formula(a, v):
    """Averages of v held from the first charge, whole life."""
    assert a["covered_us"] >= 5_000_000 and a["covered_us"] % 5_000_000 == 0, a
    for name, _, window in WINDOWS:
        want = v * (1 - math.exp(-a["covered_us"] / 1e6 / window))
        assert math.isclose(a[name], want, rel_tol=1e-9), (name, a)
    assert a["whole_life"] is True and a["warming"] == [] and a["bound"] == 0, a
    assert a["age_us"] >= 0


def get_averages(sock, path, res="inflight"):
    a = call(sock, "Get", {"cgroup": path})["charges"][res].get("averages")
    return a if a and a["covered_us"] >= 5_000_000 else None


def test_list(env):
    """List's entries carry each averaged resource's averages, as Get's;
    a resource without averages has none; an entry without charges has no
    charges."""
    sock = env["sock"]
    charge(sock, "inflight", 1000, "/other")
    charge(sock, "gpu", 1000, "/other")
    wait_for(lambda: get_averages(sock, "/other"), "a period of averages", timeout=120)
    while True:
        before = get_averages(sock, "/other")
        entries = {e["path"]: e for e in call(sock, "List")["cgroups"]}
        after = get_averages(sock, "/other")
        if before["covered_us"] == after["covered_us"]:
            break  # no step between: List's are the same step's
    a = entries["/other"]["charges"]["inflight"]["averages"]
    check_formula(a, 1000)
    assert a["covered_us"] == before["covered_us"]
    for name, _, _ in WINDOWS:
        assert a[name] == before[name], (a, before)
    check_formula(entries["/"]["charges"]["inflight"]["averages"], 1000)  # the root's subtree
    assert "averages" not in entries["/other"]["charges"]["gpu"]
    assert "charges" not in entries["/svc"]
    # the charged values as before, beside them
    assert entries["/other"]["charges"]["inflight"]["self"] == {"value": 1000, "bound": 0, "age_us": 0}
    # acctctl list --json passes them on
    import json
    listed = {e["path"]: e for e in json.loads(acctctl(sock, "--json", "list"))}
    check_formula(listed["/other"]["charges"]["inflight"]["averages"], 1000)


def test_watch(env):
    """Watch's records carry the averages; a step that moves them is a
    change of the record: a new record comes with nothing charged since."""
    sock = env["sock"]
    charge(sock, "inflight", 500, "/other")
    with Varlink(sock, timeout=60) as v:
        v.send(IFACE + ".Watch", {"cgroups": ["/other"], "interval_ms": 50}, more=True)
        end = time.monotonic() + 120
        seen = []
        while len(seen) < 2:
            assert time.monotonic() < end, "no Watch records with two steps of averages: %r" % seen
            for rec in ok(v.recv())["cgroups"]:
                if rec["path"] != "/other":
                    continue
                c = rec["charges"]["inflight"]
                assert c["subtree"]["value"] == 500
                a = c.get("averages")
                if a and a["covered_us"] >= 5_000_000 and (not seen or a["covered_us"] > seen[-1]["covered_us"]):
                    check_formula(a, 500)
                    seen.append(a)
    assert seen[1]["avg1"] > seen[0]["avg1"]


def series(page, cgroup, res, unit, window):
    m = re.search(r'^acctd_charge_average\{cgroup="%s",resource="%s",unit="%s",window="%s"\} (\S+)$'
                  % (re.escape(cgroup), res, unit, window), page, re.M)
    return None if m is None else float(m.group(1))


def test_metrics(env):
    """/metrics: acctd_charge_average per averaged cgroup and window, in
    base units (a seconds resource charged in microseconds), with its HELP
    and TYPE; none for a resource without averages."""
    sock, port = env["sock"], env["port"]
    charge(sock, "inflight", 1000, "/other")
    charge(sock, "lease", 2_000_000, "/other")  # 2 s
    charge(sock, "gpu", 1000, "/other")
    wait_for(lambda: get_averages(sock, "/other", "lease"), "a period of averages", timeout=120)
    while True:
        before = get_averages(sock, "/other", "lease")
        page = metrics(port)
        after = get_averages(sock, "/other", "lease")
        if before["covered_us"] == after["covered_us"]:
            break
    assert "# TYPE acctd_charge_average gauge" in page
    assert re.search(r"^# HELP acctd_charge_average \S", page, re.M)
    for name, window, secs in WINDOWS:
        want = 1 - math.exp(-before["covered_us"] / 1e6 / secs)
        assert math.isclose(series(page, "/other", "lease", "seconds", window), 2 * want, rel_tol=1e-6), window
        assert math.isclose(series(page, "/other", "inflight", "count", window), 1000 * want, rel_tol=1e-6)
        assert math.isclose(series(page, "/", "inflight", "count", window), 1000 * want, rel_tol=1e-6)
    assert 'acctd_charge_average{cgroup="/other",resource="gpu"' not in page
    assert 'acctd_charge_average{cgroup="/svc"' not in page
