"""Every method of io.acctd.Accounting on a fake tree, the values checked
against the fake's model (expected()), the shapes against the interface."""
import os
import time

import pytest

import acctd
from test_api_client import IFACE, SERVICE, Varlink, api_daemon, error, ok

INPLACE = {"mode": "v2", "write_mode": "inplace"}


def build(fs):
    fs.mkdir("/system.slice", memory=8 << 20, cpu_usec=1_000_000, procs=[101])
    fs.mkdir("/system.slice/db.service", memory={"anon": 48 << 20, "file": 16 << 20}, cpu_usec=7_654_321,
             procs=[200, 201], memory_max=512 << 20)
    fs.mkdir("/system.slice/web.service", memory=32 << 20, cpu_usec=2_500_000, procs=[300])
    fs.mkdir("/user.slice/user-1000.slice/session-1.scope", memory=4 << 20, cpu_usec=100, procs=[400])
    if "unified" in fs.trees:
        fs.set_pressure("/system.slice/db.service", "memory", some_avg10=12.34, some_total_us=987654)
        fs.set_pressure("/system.slice/db.service", "cpu", some_avg10=0.5, some_total_us=4242)


@pytest.fixture
def api(fakecg, tmp_path):
    build(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        yield fakecg, d, path


def check_value(v):
    assert isinstance(v["value"], int)
    assert set(v) <= {"value", "bound", "age_us", "motion_per_s", "fresh"}
    assert v.get("fresh", True) is True and v.get("motion_per_s", 0) >= 0
    assert v.get("bound", 0) >= 0 and v.get("age_us", 0) >= 0


@pytest.mark.parametrize("fakecg", ["v2", "hybrid"], indirect=True)
def test_get_matches_model(api):
    fs, d, path = api
    with Varlink(path) as v:
        for p in fs.paths():
            e = fs.expected(p)
            for precise in (False, True):
                c = ok(v.call(IFACE + ".Get", {"cgroup": p, "precise": precise}))["cgroup"]
                assert c["path"] == p and c["depth"] == e["depth"] and c["state"] == "live"
                assert "dead_for_us" not in c
                assert isinstance(c["populated"], bool)
                assert set(c) >= {"path", "depth", "state", "populated", "hierarchies", "values", "cpu_rate_cores",
                                  "load", "pressure", "memory_stat", "memory_stat_age_us", "numa",
                                  "sample_errors"}
                for val in c["values"].values():
                    if val is not None:
                        check_value(val)
                if e["memory_bytes"] is not None and not (fs.mode == "v2" and p == "/"):
                    assert c["values"]["memory"]["value"] == e["memory_bytes"], p
                    assert c["values"]["memory.peak"]["value"] == e["memory_peak_bytes"], p
                if e["cpu_usage_usec"] is not None and fs.mode == "v2":
                    assert c["values"]["cpu.usage"]["value"] == e["cpu_usage_usec"], p
                if precise:
                    # exact, but for v1's CPU ticks read fresh (rounded down by the kernel)
                    assert all(v is None or "bound" not in v or (v.get("fresh") and v["bound"] <= 10000)
                               for v in c["values"].values()), c["values"]
        db = ok(v.call(IFACE + ".Get", {"cgroup": "/system.slice/db.service"}))["cgroup"]
        assert db["values"]["memory.max"]["value"] == 512 << 20
        if fs.mode == "v2":
            assert db["pressure"]["memory"]["some"]["avg10"] == pytest.approx(12.34)
            assert db["pressure"]["cpu"]["some"]["total_us"]["value"] == 4242


@pytest.mark.parametrize("fakecg", ["v2", "legacy"], indirect=True)
def test_list(api):
    fs, d, path = api
    with Varlink(path) as v:
        cgs = ok(v.call(IFACE + ".List"))["cgroups"]
        assert [c["path"] for c in cgs] == sorted(fs.paths())
        for c in cgs:
            assert set(c) == {"path", "state", "memory", "cpu_rate", "load1", "load1_warming", "psi_some_avg10",
                              "io_read_bytes_rate", "io_write_bytes_rate", "tasks", "io_read_bytes", "io_write_bytes"}
            assert (c["load1_warming"] is None) == (c["load1"] is None), c
            assert c["state"] == "live"
            e = fs.expected(c["path"])
            if e["memory_bytes"] is not None and not (fs.mode == "v2" and c["path"] == "/"):
                check_value(c["memory"])
                assert c["memory"]["value"] == e["memory_bytes"], c
            if c["psi_some_avg10"] is not None:
                assert set(c["psi_some_avg10"]) == {"cpu", "memory", "io"}
        if fs.mode == "v2":
            db = [c for c in cgs if c["path"] == "/system.slice/db.service"][0]
            assert db["psi_some_avg10"]["memory"] == pytest.approx(12.34)
        sub = ok(v.call(IFACE + ".List", {"prefix": "/system.slice"}))["cgroups"]
        assert [c["path"] for c in sub] == ["/system.slice", "/system.slice/db.service", "/system.slice/web.service"]
        top = ok(v.call(IFACE + ".List", {"depth": 1}))["cgroups"]
        assert [c["path"] for c in top] == ["/", "/system.slice", "/user.slice"]
        only = ok(v.call(IFACE + ".List", {"prefix": "/user.slice", "depth": 0}))["cgroups"]
        assert [c["path"] for c in only] == ["/user.slice"]
        # "/system" is not a prefix of "/system.slice": whole components only
        error(v.call(IFACE + ".List", {"prefix": "/system"}), IFACE + ".NoSuchCgroup")


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_list_include_dead_and_get_tombstone(api):
    fs, d, path = api
    fs.rmdir("/system.slice/web.service")
    with Varlink(path) as v:
        deadline = time.monotonic() + 10
        while True:
            c = ok(v.call(IFACE + ".Get", {"cgroup": "/system.slice/web.service"}))["cgroup"]
            if c["state"] == "dead":
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert c["dead_for_us"] >= 0
        live = [c["path"] for c in ok(v.call(IFACE + ".List"))["cgroups"]]
        assert "/system.slice/web.service" not in live
        every = ok(v.call(IFACE + ".List", {"include_dead": True}))["cgroups"]
        dead = [c for c in every if c["path"] == "/system.slice/web.service"]
        assert len(dead) == 1 and dead[0]["state"] == "dead"


def test_snake_case_names(api):
    """Parameters are snake_case; the camelCase names of 0.1 are still read
    (as the new names, logged once), refused when both are given; memory_stat
    holds only the kernel's keys, its age beside it."""
    fs, d, path = api
    with Varlink(path) as v:
        new = ok(v.call(IFACE + ".List", {"include_dead": True}))["cgroups"]
        old = ok(v.call(IFACE + ".List", {"includeDead": True}))["cgroups"]
        assert [c["path"] for c in old] == [c["path"] for c in new]
        for _ in range(2):
            ok(v.call(IFACE + ".List", {"includeDead": False}))
        assert error(v.call(IFACE + ".List", {"includeDead": True, "include_dead": True}),
                     "org.varlink.service.InvalidParameter")["parameter"] == "includeDead"
        before = ok(v.call(IFACE + ".Status"))["status"]["budgets"]
        p = ok(v.call(IFACE + ".Tune", {"bytes_budget": 8192, "cpu_budget_us": 777, "tasks_budget": 5,
                                        "auto_tune": False}))
        assert p["budgets"] == {"bytes": 8192, "cpu_us": 777, "tasks": 5} and p["auto_tune"] is False
        p = ok(v.call(IFACE + ".Tune", {"bytesBudget": 4096, "cpuBudgetUs": 555, "tasksBudget": 4, "autoTune": True}))
        assert p["budgets"] == {"bytes": 4096, "cpu_us": 555, "tasks": 4} and p["auto_tune"] is True
        assert before != p["budgets"]
        desc = ok(v.call(SERVICE + ".GetInterfaceDescription", {"interface": IFACE}))["description"]
        assert "include_dead: ?bool" in desc and "bytes_budget: ?int" in desc and "auto_tune: ?bool" in desc
        c = ok(v.call(IFACE + ".Get", {"cgroup": "/system.slice/db.service"}))["cgroup"]
        assert c["memory_stat"] and "age_us" not in c["memory_stat"], sorted(c["memory_stat"])
        assert isinstance(c["memory_stat_age_us"], int) and c["memory_stat_age_us"] >= 0
    for name in ("includeDead", "bytesBudget", "cpuBudgetUs", "tasksBudget", "autoTune"):
        log = d.wait_log("parameter %s is deprecated" % name)
        assert log.count("parameter %s is deprecated" % name) == 1, log


def test_compare(api):
    fs, d, path = api
    mem = fs.expected("/system.slice/db.service")["memory_bytes"]
    with Varlink(path) as v:
        def cmp(q, t, p="/system.slice/db.service"):
            return ok(v.call(IFACE + ".Compare", {"cgroup": p, "quantity": q, "threshold": t}))
        r = cmp("memory", mem - (1 << 20))
        assert r["result"] == "above" and r["value"]["value"] == mem and isinstance(r["precise"], bool)
        assert cmp("memory", mem + (1 << 20))["result"] == "below"
        r = cmp("memory", mem)
        assert r["result"] == "equal"
        assert cmp("memory.max", 1 << 40)["result"] == "below"
        assert cmp("tasks", 0)["result"] == "above"
        assert error(v.call(IFACE + ".Compare", {"cgroup": "/", "quantity": "bogus", "threshold": 1}),
                     IFACE + ".NoSuchQuantity")["quantity"] == "bogus"
        assert error(v.call(IFACE + ".Compare", {"cgroup": "/nope", "quantity": "memory", "threshold": 1}),
                     IFACE + ".NoSuchCgroup")["cgroup"] == "/nope"


def test_status(api):
    fs, d, path = api
    with Varlink(path) as v:
        st = ok(v.call(IFACE + ".Status"))["status"]
    want = {"version", "status", "uptime_us", "cgroup_mode", "cgroup_root", "cgroups_live", "cgroups_dead",
            "fast_interval_us", "slow_interval_us", "last_fast_pass", "last_slow_pass", "budgets", "tuner",
            "reconciliation", "config_sources", "reloads", "reload_failures", "reload_result", "collectors", "bpf",
            "history", "log", "tombstones_folded", "charges_reconciliation", "charges_state", "charge_slots",
            "discovery", "resources"}
    # charges_reconciliation only where a resource is declared ram, charge_slots where one is declared
    # (docs/charges.md)
    assert set(st) <= want and set(st) >= want - {"reload_result", "charges_reconciliation", "charge_slots"}
    # a tree in a directory is not the kernel's: files, and the reason says so
    assert st["collectors"] and all(c["collector"] == "files" and c["reason"] for c in st["collectors"])
    assert st["cgroup_mode"] == "unified" and st["cgroup_root"] == fs.root
    assert st["cgroups_live"] == len(fs.paths()) and st["cgroups_dead"] == 0
    assert st["fast_interval_us"] == 100000
    assert st["last_fast_pass"]["cgroups"] == len(fs.paths())
    assert set(st["budgets"]) == {"bytes", "cpu_us", "tasks"}
    assert set(st["tuner"]) == {"auto_tune", "tuned", "mode", "counters", "sharded", "upgrades", "tune_passes"}
    assert set(st["reconciliation"]["violations"]) == {"children_memory", "root_meminfo", "cpu_backwards"}
    assert "Tracking" in st["status"]


def test_tune_reload(api, tmp_path):
    fs, d, path = api
    with Varlink(path) as v:
        before = ok(v.call(IFACE + ".Status"))["status"]["budgets"]
        p = ok(v.call(IFACE + ".Tune", {"bytes_budget": 4096, "tasks_budget": 3}))
        assert p["budgets"] == {"bytes": 4096, "cpu_us": before["cpu_us"], "tasks": 3}
        st = ok(v.call(IFACE + ".Status"))["status"]
        assert st["budgets"]["bytes"] == 4096 and st["tuner"]["tuned"] is True
        p = ok(v.call(IFACE + ".Tune", {"auto_tune": False}))
        assert p["auto_tune"] is False and p["budgets"]["bytes"] == 4096
        # a reload returns to the configuration
        assert ok(v.call(IFACE + ".Reload")) == {
            "warnings": [], "changes": [],
            "dropped_tuning": {"was": {"bytes": 4096, "cpu_us": before["cpu_us"], "tasks": 3}, "was_auto_tune": False,
                               "now": before, "auto_tune": True}}
        st = ok(v.call(IFACE + ".Status"))["status"]
        assert st["budgets"] == before and st["tuner"]["tuned"] is False and st["reload_result"] == "ok"
        # a broken configuration is refused with the reason, and the old one stays
        conf = st["config_sources"][0]
        with open(conf, "a") as f:
            f.write("\n[sampling]\nfast_interval = banana\n")
        p = error(v.call(IFACE + ".Reload"), IFACE + ".ReloadFailed")
        assert "banana" in p["reason"] or "fast_interval" in p["reason"], p
        st = ok(v.call(IFACE + ".Status"))["status"]
        assert st["reload_failures"] == 1 and st["reload_result"] == p["reason"]
        assert ok(v.call(SERVICE + ".GetInfo"))


def test_reconcile(api):
    fs, d, path = api
    with Varlink(path) as v:
        before = ok(v.call(IFACE + ".Status"))["status"]["reconciliation"]["passes"]
        r = ok(v.call(IFACE + ".Reconcile"))
        assert r["pass"]["cgroups"] == len(fs.paths())
        assert r["pass"]["files_read"] > 0
        assert r["reconciliation"]["passes"] > before
        assert set(r["reconciliation"]["drift_memory_bytes"]) == {"count", "p50", "p90", "p99", "max"}


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_watch(api):
    fs, d, path = api
    with Varlink(path) as v:
        # the CPU rates exist from the second reading on (null before): a
        # change that the first reply must not race with
        deadline = time.monotonic() + 10
        while any(ok(v.call(IFACE + ".Get", {"cgroup": p}))["cgroup"]["cpu_rate_cores"] is None
                  for p in ("/system.slice/web.service", "/user.slice")):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        v.send(IFACE + ".Watch", {"cgroups": ["/system.slice/web.service", "/user.slice"], "interval_ms": 20},
               more=True)
        first = v.recv()
        assert first["continues"] is True
        assert sorted(c["path"] for c in ok(first)["cgroups"]) == ["/system.slice/web.service", "/user.slice"]
        fs.set_memory("/system.slice/web.service", 40 << 20)
        want = fs.expected("/system.slice/web.service")["memory_bytes"]
        deadline = time.monotonic() + 10
        while True:
            r = v.recv()
            assert r["continues"] is True
            cgs = ok(r)["cgroups"]
            assert cgs, "an update without changes"
            # only what changed: user.slice did not
            assert [c["path"] for c in cgs] == ["/system.slice/web.service"]
            if cgs[0]["values"]["memory"]["value"] == want:
                break
            assert time.monotonic() < deadline
    # prefix watch: new cgroups under the prefix appear in an update
    with Varlink(path) as v:
        v.send(IFACE + ".Watch", {"prefix": "/user.slice", "interval_ms": 20}, more=True)
        first = ok(v.recv())["cgroups"]
        assert {c["path"] for c in first} == {p for p in fs.paths() if p.startswith("/user.slice")}
        fs.mkdir("/user.slice/user-1001.slice", memory=1 << 20, procs=[900])
        deadline = time.monotonic() + 10
        while True:
            cgs = ok(v.recv())["cgroups"]
            if any(c["path"] == "/user.slice/user-1001.slice" for c in cgs):
                break
            assert time.monotonic() < deadline
        # calls pipelined behind a Watch wait for it (it only ends with the connection)
        v.send(SERVICE + ".GetInfo")
        v.sock.settimeout(0.5)
        try:
            while True:
                r = v.recv()
                assert r.get("continues") is True, "a reply overtook the Watch stream"
        except TimeoutError:
            pass
