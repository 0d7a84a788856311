"""Cgroup path confinement: hostile paths are refused with InvalidCgroupPath
and a reason, harmless spellings are normalised, and symlinks in the tree
that point outside it never lead to a read: the API only looks paths up in
the ledger, which holds what discovery found under the cgroup root."""
import os

import pytest

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
