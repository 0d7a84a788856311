"""The dispatcher's rules (daemon/acctd/api-dispatch.c), all against one
daemon on real cgroups (root only): interface and method resolution, the
flags a method needs, unknown and doubled parameters, cgroup path
parameters, and who may administer. After every refusal the connection
answers the next call with that call's reply: a refusal is one reply,
never one followed by the method running anyway.

One daemon for the module, so that the mutation check (tools/mutate) can
run this file for every mutant of the dispatcher in seconds."""
import os
import shutil
import time

import pytest

import acctd
from test_api_client import IFACE, SERVICE, Varlink, api_daemon, error, ok
from test_api_access import DENIED, run_as
from test_api_paths import real_v2_base

INVALID = SERVICE + ".InvalidParameter"
BAD_PATH = IFACE + ".InvalidCgroupPath"

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups and switch users")


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    base = real_v2_base()
    if base is None:
        pytest.skip("no cgroup v2 hierarchy mounted here")
    top = "/acctd-mutate-core-dispatch-%d" % os.getpid()
    made = []
    try:
        for rel in ("", "/a", "/ab"):
            os.mkdir(base + top + rel)
            made.append(base + top + rel)
        tmp = tmp_path_factory.mktemp("dispatch")
        with api_daemon(tmp, None, cgroups__include=top + "*", api__admin_group="adm") as (d, path):
            with Varlink(path) as v:
                deadline = time.monotonic() + 20
                while True:
                    r = v.call(IFACE + ".List", {"prefix": top})
                    if "error" not in r and len(ok(r)["cgroups"]) == 3:
                        break
                    assert time.monotonic() < deadline, r
                    time.sleep(0.1)
            yield path, top, d
    finally:
        for d in reversed(made):
            os.rmdir(d)


def answers_next(v):
    """The connection's next reply is the reply to the next call."""
    assert ok(v.call(SERVICE + ".GetInfo"))["vendor"] == "acctd"


def test_unknown_interface(api):
    path, top, d = api
    with Varlink(path) as v:
        for method, iface in (("org.example.Nope.Get", "org.example.Nope"),
                              (IFACE + "X.Get", IFACE + "X"),
                              (IFACE[:-1] + ".Get", IFACE[:-1]),
                              ("org.varlink.servic.GetInfo", "org.varlink.servic"),
                              ("org.varlink.serviceX.GetInfo", "org.varlink.serviceX")):
            p = error(v.call(method), SERVICE + ".InterfaceNotFound")
            assert p["interface"] == iface, (method, p)
            answers_next(v)


def test_unknown_method(api):
    path, top, d = api
    with Varlink(path) as v:
        for method in (IFACE + ".Nope", SERVICE + ".Nope", IFACE + ".GetInfo", SERVICE + ".Status"):
            assert error(v.call(method), SERVICE + ".MethodNotFound")["method"] == method
            answers_next(v)
        # both interfaces' methods are found
        assert ok(v.call(IFACE + ".Status"))["status"]
        assert ok(v.call(SERVICE + ".GetInfo"))["vendor"] == "acctd"


def test_flags(api):
    path, top, d = api
    with Varlink(path) as v:
        assert error(v.call(IFACE + ".Status", upgrade=True), INVALID)["parameter"] == "upgrade"
        answers_next(v)
        # Watch streams: it needs more, and a oneway call cannot have replies
        error(v.call(IFACE + ".Watch", {"prefix": top}), SERVICE + ".ExpectedMore")
        answers_next(v)
        v.send(IFACE + ".Watch", {"prefix": top, "interval_ms": 10}, more=True, oneway=True)
        answers_next(v)  # refused, and oneway: no reply and no stream
        time.sleep(0.1)
        answers_next(v)
        # a oneway call gets no reply, an error included
        v.send(IFACE + ".Get", {"cgroup": top}, oneway=True)
        v.send(IFACE + ".Get", {"cgroup": "/nope"}, oneway=True)
        answers_next(v)
        # a List with more: replies that continue, then the last one
        replies = v.call_more(IFACE + ".List", {"prefix": top})
        assert all(r.get("continues") for r in replies[:-1]) and not replies[-1].get("continues")
        assert sorted(c["path"] for r in replies for c in ok(r)["cgroups"]) == [top, top + "/a", top + "/ab"]
        answers_next(v)
        # more on a method that does not stream: one reply
        assert ok(v.call(IFACE + ".Get", {"cgroup": top}, more=True))["cgroup"]["path"] == top
        answers_next(v)


def test_parameters(api):
    path, top, d = api
    with Varlink(path) as v:
        assert error(v.call(IFACE + ".Get", {"cgroup": top, "bogus": 1}), INVALID)["parameter"] == "bogus"
        answers_next(v)
        # a deprecated name is taken; given with its new name it is refused
        listed = ok(v.call(IFACE + ".List", {"prefix": top, "includeDead": True}))["cgroups"]
        assert len(listed) == 3
        p = error(v.call(IFACE + ".List", {"prefix": top, "includeDead": True, "include_dead": True}), INVALID)
        assert p["parameter"] == "includeDead"
        answers_next(v)
        assert len(ok(v.call(IFACE + ".List", {"prefix": top, "includeDead": False}))["cgroups"]) == 3
    # the deprecation is logged once, not at every use
    assert d.logtext().count("parameter includeDead is deprecated") == 1


def test_cgroup_parameters(api):
    path, top, d = api
    with Varlink(path) as v:
        # required, of type string
        for params in ({}, {"cgroup": None}, {"cgroup": 5}, {"cgroup": ["/"]}, {"cgroup": {}}):
            assert error(v.call(IFACE + ".Get", params), INVALID)["parameter"] == "cgroup", params
            answers_next(v)
        # optional: absent and null mean the default, "/"
        for params in ({}, {"prefix": None}):
            assert len(ok(v.call(IFACE + ".List", params))["cgroups"]) >= 3
        for params in ({"prefix": 5}, {"prefix": True}):
            assert error(v.call(IFACE + ".List", params), INVALID)["parameter"] == "prefix", params
            answers_next(v)
        # refused paths say why, with at most 256 bytes of the path
        for bad, why in (("a", "not absolute"), ("/a/../b", ". or .."), ("/" + "x" * 300, "255")):
            p = error(v.call(IFACE + ".Get", {"cgroup": bad}), BAD_PATH)
            assert why in p["reason"], p
            assert p["cgroup"] == bad[:256]
            answers_next(v)
            p = error(v.call(IFACE + ".List", {"prefix": bad}), BAD_PATH)
            assert why in p["reason"], p
            answers_next(v)
        # a good one is normalised
        assert ok(v.call(IFACE + ".Get", {"cgroup": "//" + top[1:] + "/a/"}))["cgroup"]["path"] == top + "/a"


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_admin(api):
    """Administration needs root or [api] admin_group as the primary or a
    supplementary group (SO_PEERGROUPS); reading is open to all."""
    path, top, d = api
    cases = [
        (["--reuid=nobody", "--regid=nogroup", "--clear-groups"], False),
        (["--reuid=nobody", "--regid=nogroup", "--groups=users"], False),
        (["--reuid=nobody", "--regid=nogroup", "--groups=users,adm"], True),
        (["--reuid=nobody", "--regid=nogroup", "--groups=adm,users"], True),
        (["--reuid=nobody", "--regid=adm", "--clear-groups"], True),
        (["--reuid=nobody", "--regid=users", "--groups=nogroup"], False),
    ]
    for args, admin in cases:
        r = run_as(path, args)
        assert ok(r["Status"]) and ok(r["List"]), args
        for name in ("Tune", "Reconcile", "Reload"):
            if admin:
                assert "error" not in r[name], (args, name, r[name])
            else:
                assert r[name].get("error") == DENIED, (args, name, r[name])


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_admin_group_root(api, tmp_path):
    """admin_group = root (GID 0): only members of group 0 administer. The
    kernel's list of the peer's groups is read as long as it is and no
    further (what lies past it must not count, zeros included)."""
    path, top, d = api
    with api_daemon(tmp_path, None, cgroups__include=top + "*", api__admin_group="root") as (d, path0):
        for args, admin in ((["--reuid=nobody", "--regid=nogroup", "--groups=users"], False),
                            (["--reuid=nobody", "--regid=nogroup", "--clear-groups"], False),
                            (["--reuid=nobody", "--regid=nogroup", "--groups=users,root"], True)):
            r = run_as(path0, args)
            for name in ("Tune", "Reconcile", "Reload"):
                if admin:
                    assert "error" not in r[name], (args, name, r[name])
                else:
                    assert r[name].get("error") == DENIED, (args, name, r[name])
