"""Cgroup path confinement: hostile paths are refused with InvalidCgroupPath
and a reason, harmless spellings are normalised, and symlinks in the tree
that point outside it never lead to a read: the API only looks paths up in
the ledger, which holds what discovery found under the cgroup root."""
import os
import time

import pytest

import acctd
from test_api_client import IFACE, SERVICE, Varlink, api_daemon, error, ok, still_serves

BAD_PATH = IFACE + ".InvalidCgroupPath"

HOSTILE = [
    ("/../etc", "."),
    ("/a/../../x", "."),
    ("/..", "."),
    ("/.", "."),
    ("/user.slice/./x", "."),
    ("/user.slice/..", "."),
    ("..", "absolute"),
    ("etc/passwd", "absolute"),
    ("user.slice", "absolute"),
    ("", "empty"),
    ("\u0000", "NUL"),
    ("/user.slice\u0000/../../etc", "NUL"),
    ("/" + "a" * 256, "255"),
    ("/x" * 2049, "4096"),
    ("/" + "a/" * 3000, "4096"),
]


@pytest.fixture
def api(fakecg, tmp_path):
    fs = fakecg
    fs.mkdir("/user.slice", memory=4 << 20, procs=[12])
    fs.mkdir("/system.slice/a.service", memory=8 << 20, procs=[10])
    # symlinks planted in the tree, pointing outside it and across it
    os.symlink("/etc", os.path.join(fs.root, "evil"))
    os.symlink("/", os.path.join(fs.root, "system.slice", "rootfs"))
    os.symlink(os.path.join(fs.root, "user.slice"), os.path.join(fs.root, "system.slice", "alias.slice"))
    with api_daemon(tmp_path, fs.root) as (d, path):
        yield d, path


@pytest.mark.parametrize("bad,why", HOSTILE)
def test_hostile_paths(api, bad, why):
    d, path = api
    with Varlink(path) as v:
        calls = [
            (IFACE + ".Get", {"cgroup": bad}, False),
            (IFACE + ".List", {"prefix": bad}, False),
            (IFACE + ".Compare", {"cgroup": bad, "quantity": "memory", "threshold": 0}, False),
            (IFACE + ".Watch", {"cgroups": ["/user.slice", bad]}, True),
            (IFACE + ".Watch", {"prefix": bad}, True),
        ]
        for method, params, more in calls:
            v.send(method, params, more=more) if more else v.send(method, params)
            p = error(v.recv(), BAD_PATH)
            assert why in p["reason"], (method, p)
            assert len(p["cgroup"]) <= 256
        assert ok(v.call(SERVICE + ".GetInfo"))
    still_serves(path)


@pytest.mark.parametrize("spelling", ["/user.slice", "//user.slice", "/user.slice/", "///user.slice//"])
def test_normalised(api, spelling):
    d, path = api
    with Varlink(path) as v:
        assert ok(v.call(IFACE + ".Get", {"cgroup": spelling}))["cgroup"]["path"] == "/user.slice"
    with Varlink(path) as v:
        assert ok(v.call(IFACE + ".Get", {"cgroup": "/" * 4096}))["cgroup"]["path"] == "/"


def test_longest_allowed(api):
    d, path = api
    with Varlink(path) as v:
        name = "/" + "a" * 255
        assert error(v.call(IFACE + ".Get", {"cgroup": name}), IFACE + ".NoSuchCgroup")["cgroup"] == name
        deep = ("/" + "b" * 255) * 16  # 4096 bytes exactly
        assert len(deep) == 4096
        error(v.call(IFACE + ".Get", {"cgroup": deep}), IFACE + ".NoSuchCgroup")


def test_symlinks_lead_nowhere(api):
    d, path = api
    with Varlink(path) as v:
        for p in ("/evil", "/evil/passwd", "/evil/shadow", "/system.slice/rootfs", "/system.slice/rootfs/etc",
                  "/system.slice/alias.slice"):
            assert error(v.call(IFACE + ".Get", {"cgroup": p}), IFACE + ".NoSuchCgroup")["cgroup"] == p
            assert error(v.call(IFACE + ".List", {"prefix": p}), IFACE + ".NoSuchCgroup")
            assert error(v.call(IFACE + ".Compare", {"cgroup": p, "quantity": "memory", "threshold": 1}),
                         IFACE + ".NoSuchCgroup")
        listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"include_dead": True}))["cgroups"]}
        assert "/user.slice" in listed
        assert not any("evil" in p or "rootfs" in p or "alias" in p for p in listed), listed


def real_v2_base():
    """Where this host's cgroup v2 tree is mounted (pure or hybrid), or None."""
    for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.exists(os.path.join(base, "cgroup.procs")) and \
                os.path.exists(os.path.join(base, "cgroup.subtree_control")):
            return base
    return None


@pytest.fixture
def siblings():
    """Real cgroups <top>/a, <top>/a/x, <top>/ab, <top>/ab/y (root only):
    "/a" and its sibling "/ab" both exist, each with a child."""
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    base = real_v2_base()
    if base is None:
        pytest.skip("no cgroup v2 hierarchy mounted here")
    name = "acctd-mutate-core-prefix-%d" % os.getpid()
    rel = ["", "/a", "/a/x", "/ab", "/ab/y"]
    made = []
    try:
        for r in rel:
            os.mkdir(base + "/" + name + r)
            made.append(base + "/" + name + r)
        yield "/" + name
    finally:
        for d in reversed(made):
            os.rmdir(d)


def test_prefix_whole_components(siblings, tmp_path):
    """A prefix matches whole components: List and Watch with prefix /a give
    /a and /a/x, never the sibling /ab or its child (issue 17: the boundary
    check of the prefix rule could be removed and no test failed)."""
    top = siblings
    a, ab = top + "/a", top + "/ab"
    with api_daemon(tmp_path, None, cgroups__include=top + "*") as (d, path):
        with Varlink(path) as v:
            deadline = time.monotonic() + 20
            while True:
                r = v.call(IFACE + ".List", {"prefix": top})
                got = {c["path"] for c in ok(r)["cgroups"]} if "error" not in r else set()
                if got == {top, a, a + "/x", ab, ab + "/y"}:
                    break
                assert time.monotonic() < deadline, got
                time.sleep(0.1)
            listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": a}))["cgroups"]}
            assert listed == {a, a + "/x"}
            listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": a + "/"}))["cgroups"]}
            assert listed == {a, a + "/x"}
            listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": a, "depth": 0}))["cgroups"]}
            assert listed == {a}
            listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": ab}))["cgroups"]}
            assert listed == {ab, ab + "/y"}
            # the start of a name is no prefix of it
            error(v.call(IFACE + ".List", {"prefix": top[:-1]}), IFACE + ".NoSuchCgroup")
        with Varlink(path) as v:
            v.send(IFACE + ".Watch", {"prefix": a, "interval_ms": 20}, more=True)
            first = v.recv()
            assert first["continues"] is True
            assert {c["path"] for c in ok(first)["cgroups"]} == {a, a + "/x"}
        with Varlink(path) as v:
            v.send(IFACE + ".Watch", {"prefix": ab, "interval_ms": 20}, more=True)
            assert {c["path"] for c in ok(v.recv())["cgroups"]} == {ab, ab + "/y"}
