"""acctd --dump on fake v2, hybrid and legacy trees: every cgroup, every value
as the fake's model says, bad files failing only their own values."""
import pytest

import acctd

MODES = ["v2", "hybrid", "legacy"]


def build(fs):
    fs.mkdir("/system.slice", memory=8 << 20, cpu_usec=1_000_000, procs=[101])
    fs.mkdir("/system.slice/db.service", memory={"anon": 48 << 20, "file": 16 << 20, "swap": 4 << 20}, cpu_usec=7_654_321,
             procs=[200, 201], memory_max=512 << 20)
    fs.mkdir("/system.slice/web.service", memory=32 << 20, cpu_usec=2_500_000, procs=[300])
    fs.mkdir("/user.slice/user-1000.slice/session-1.scope", memory=4 << 20, cpu_usec=100, procs=[400])
    fs.mkdir("/empty.slice")
    if "unified" in fs.trees:
        fs.set_pressure("/system.slice/db.service", "memory", some_avg10=12.34, some_avg60=5.5, some_avg300=1.25,
                        some_total_us=987654, full_avg10=3.21, full_total_us=12345)
        fs.set_pressure("/system.slice/db.service", "cpu", some_avg10=0.5, some_total_us=4242)


@pytest.mark.parametrize("fakecg", MODES, indirect=True)
def test_dump_matches_model(fakecg):
    fs = fakecg
    build(fs)
    doc = acctd.dump(fs.root)
    assert doc["cgroup_mode"] == {"v2": "unified", "hybrid": "hybrid", "legacy": "legacy"}[fs.mode]
    cgs = acctd.by_path(doc)
    assert set(cgs) == set(fs.paths())
    assert doc["pass"]["cgroups_failed"] == 0, doc["pass"]
    for path in fs.paths():
        e, c = fs.expected(path), cgs[path]
        assert c["state"] == "live"
        assert c["depth"] == e["depth"]
        if e["memory_bytes"] is not None and not (fs.mode == "v2" and path == "/"):
            assert acctd.value(c, "memory") == e["memory_bytes"], path
            assert c["values"]["memory"].get("bound", 0) == 0
            assert c["values"]["memory"]["age_us"] >= 0
            assert acctd.value(c, "memory.peak") == e["memory_peak_bytes"], path
            ms = c["memory_stat"]
            if fs.mode == "v2":
                assert ms["anon"] == e["memory_anon_bytes"], path
                assert ms["file"] == e["memory_file_bytes"], path
                ws = e["memory_bytes"] - ms["inactive_file"]
            else:
                assert ms["total_rss"] + ms["total_cache"] <= e["memory_bytes"], path
                ws = e["memory_bytes"] - ms["total_inactive_file"]
            assert acctd.value(c, "memory.working_set") == max(ws, 0), path
            assert c["numa"] is not None and len(c["numa"]) >= 1
        if e["cpu_usage_usec"] is not None:
            usage = acctd.value(c, "cpu.usage")
            if fs.mode == "v2":
                assert usage == e["cpu_usage_usec"], path
                assert acctd.value(c, "cpu.user") == e["cpu_user_usec"], path
                assert acctd.value(c, "cpu.system") == e["cpu_system_usec"], path
            else:
                assert usage == e["cpu_usage_usec"], path
                assert acctd.value(c, "cpu.user") == e["cpuacct_stat_user_usec"], path
            if e["memory_swap_bytes"] is not None and not (fs.mode == "v2" and path == "/"):
                assert acctd.value(c, "swap") == e["memory_swap_bytes"], path
        if e["psi"] is not None:
            for res in ("cpu", "memory", "io"):
                got = c["pressure"][res]
                for kind in ("some", "full"):
                    want = e["psi"][res].get(kind)
                    if want is None:
                        continue
                    assert got[kind]["avg10"] == pytest.approx(want["avg10"]), (path, res, kind)
                    assert got[kind]["avg60"] == pytest.approx(want["avg60"]), (path, res, kind)
                    assert got[kind]["total_us"]["value"] == want["total_us"], (path, res, kind)
    db = cgs["/system.slice/db.service"]
    assert acctd.value(db, "memory.max") == 512 << 20
    assert acctd.value(cgs["/system.slice/web.service"], "memory.max") == -1
    # tasks and load come from the threads files: hierarchical
    assert acctd.value(cgs["/system.slice"], "tasks") >= 3
    assert db["load"] is not None
    rec = doc["reconciliation"]
    assert all(v == 0 for v in rec["violations"].values()), rec
    if fs.mode != "legacy":
        assert rec["checked_parents"] >= 2


@pytest.mark.parametrize("fakecg", [{"mode": "v2", "nr_nodes": 2}, {"mode": "hybrid", "nr_nodes": 2}],
                         indirect=True)
def test_numa_breakdown(fakecg):
    fs = fakecg
    fs.mkdir("/a.service", memory={"anon": 40 << 20, "file": 24 << 20}, nodes=[3, 1], procs=[10])
    doc = acctd.dump(fs.root)
    c = acctd.by_path(doc)["/a.service"]
    e = fs.expected("/a.service")
    got = [n["value"] for n in c["numa"]]
    if fs.mode == "v2":
        # anon + file (+ kernel per node) per node
        assert got[0] >= e["memory_numa_bytes"][0] and got[1] >= e["memory_numa_bytes"][1]
        assert got[0] > got[1]
    else:
        assert sum(got) > 0 and got[0] > got[1]


@pytest.mark.parametrize("fakecg", MODES, indirect=True)
@pytest.mark.parametrize("fault", ["garbage", "vanish", "unreadable", "truncate"])
def test_bad_file_fails_only_that_value(fakecg, fault):
    fs = fakecg
    build(fs)
    victim = "/system.slice/db.service"
    memfile = "memory.current" if fs.mode == "v2" else "memory.usage_in_bytes"
    tree = "unified" if fs.mode == "v2" else "memory"
    if fault == "unreadable":
        fs.unreadable(victim, memfile, tree=tree, how="socket")  # a directory would be a cgroup
    else:
        getattr(fs, fault)(victim, memfile, tree=tree)
    doc = acctd.dump(fs.root)
    cgs = acctd.by_path(doc)
    assert set(cgs) == set(fs.paths())
    bad = cgs[victim]
    errors = doc["pass"]["errors"]
    if fault == "vanish":
        # a file that is not there for a live cgroup is "absent", not an error
        assert bad["values"]["memory"] is None
    elif fault == "truncate":
        # a value cut short still parses as a (smaller) number; the point is
        # that nothing else breaks
        pass
    else:
        assert bad["values"]["memory"] is None
        assert bad["sample_errors"] >= 1
        assert errors["garbage" if fault == "garbage" else "unreadable"] >= 1, errors
    # everything else about the victim and every other cgroup is intact
    e = fs.expected(victim)
    if e["cpu_usage_usec"] is not None:
        assert acctd.value(bad, "cpu.usage") is not None
    for path in fs.paths():
        if path in (victim, "/") or fs.expected(path)["memory_bytes"] is None:
            continue
        assert acctd.value(cgs[path], "memory") == fs.expected(path)["memory_bytes"], path


@pytest.mark.parametrize("fakecg", ["v2"], indirect=True)
def test_garbage_in_every_kind_of_file(fakecg):
    fs = fakecg
    build(fs)
    victim = "/system.slice/web.service"
    for name in ("memory.stat", "cpu.stat", "cpu.pressure", "memory.numa_stat", "cgroup.events", "memory.max"):
        fs.garbage(victim, name)
    doc = acctd.dump(fs.root)
    cgs = acctd.by_path(doc)
    assert doc["pass"]["errors"]["garbage"] >= 6
    assert doc["pass"]["cgroups_failed"] == 1
    assert acctd.value(cgs[victim], "memory") == fs.expected(victim)["memory_bytes"]
    assert acctd.value(cgs["/system.slice/db.service"], "cpu.usage") == \
        fs.expected("/system.slice/db.service")["cpu_usage_usec"]


@pytest.mark.parametrize("fakecg", ["v2"], indirect=True)
def test_filters(fakecg, tmp_path):
    fs = fakecg
    build(fs)
    conf = acctd.write_config(str(tmp_path / "f.conf"), {
        "cgroups": {"exclude": "/user.slice", "max_depth": "2"}})
    doc = acctd.dump(fs.root, config=conf)
    paths = set(acctd.by_path(doc))
    assert "/system.slice/db.service" in paths
    assert not any(p.startswith("/user.slice") for p in paths)
    conf = acctd.write_config(str(tmp_path / "g.conf"), {"cgroups": {"max_depth": "1"}})
    paths = set(acctd.by_path(acctd.dump(fs.root, config=conf)))
    assert paths == {"/", "/system.slice", "/user.slice", "/empty.slice"}
