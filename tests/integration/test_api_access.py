"""Access control: read methods are open to every local user, Tune, Reconcile
and Reload need root or the configured admin group (the peer's own groups at
connect time, SO_PEERGROUPS). Clients run as nobody through setpriv."""
import grp
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import acctd
from test_api_client import IFACE, SERVICE, Varlink, api_daemon, ok

DENIED = SERVICE + ".PermissionDenied"

# Runs as another user: one call per argument, one JSON reply per line.
CLIENT = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
buf = b""
for arg in sys.argv[2:]:
    method, params = arg.split(" ", 1)
    s.sendall(json.dumps({"method": method, "parameters": json.loads(params)}).encode() + b"\0")
    while b"\0" not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            sys.exit("connection closed")
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    print(msg.decode())
"""

CALLS = [
    (SERVICE + ".GetInfo", {}),
    (IFACE + ".Status", {}),
    (IFACE + ".List", {}),
    (IFACE + ".Get", {"cgroup": "/user.slice"}),
    (IFACE + ".Compare", {"cgroup": "/user.slice", "quantity": "memory", "threshold": 1}),
    (IFACE + ".Tune", {"bytes_budget": 12345}),
    (IFACE + ".Reconcile", {}),
    (IFACE + ".Reload", {}),
]
ADMIN = {"Tune", "Reconcile", "Reload"}

pytestmark = [
    pytest.mark.skipif(not acctd.is_root(), reason="needs root to switch users"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)"),
]


def run_as(path, setpriv_args):
    args = ["setpriv"] + setpriv_args + [sys.executable, "-c", CLIENT, path]
    args += ["%s %s" % (m, json.dumps(p)) for m, p in CALLS]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd="/")
    assert p.returncode == 0, p.stderr
    replies = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(replies) == len(CALLS)
    return {m.rsplit(".", 1)[1]: r for (m, _), r in zip(CALLS, replies)}


def tree(fs):
    fs.mkdir("/user.slice", memory=4 << 20, procs=[12])
    fs.mkdir("/system.slice/a.service", memory=8 << 20, procs=[10])


def test_nobody_reads_but_may_not_administer(fakecg, tmp_path):
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        r = run_as(path, ["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        for name, reply in r.items():
            if name in ADMIN:
                assert reply.get("error") == DENIED, (name, reply)
            else:
                assert "error" not in reply, (name, reply)
        assert r["Get"]["parameters"]["cgroup"]["path"] == "/user.slice"
        # nothing changed: the budget is the configured one
        with Varlink(path) as v:
            st = ok(v.call(IFACE + ".Status"))["status"]
            assert st["budgets"]["bytes"] != 12345
            assert st["tuner"]["tuned"] is False
        assert d.proc.poll() is None


@pytest.mark.parametrize("how", ["supplementary", "primary"])
def test_admin_group(fakecg, tmp_path, how):
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, api__admin_group="adm") as (d, path):
        if how == "supplementary":
            args = ["--reuid=nobody", "--regid=nogroup", "--groups=adm"]
        else:
            args = ["--reuid=nobody", "--regid=adm", "--clear-groups"]
        r = run_as(path, args)
        for name, reply in r.items():
            assert "error" not in reply, (name, reply)
        assert r["Tune"]["parameters"]["budgets"]["bytes"] == 12345
        assert "pass" in r["Reconcile"]["parameters"]
        # the same user outside the group is refused
        r = run_as(path, ["--reuid=nobody", "--regid=nogroup", "--groups=users"])
        for name in ADMIN:
            assert r[name].get("error") == DENIED, (name, r[name])


def test_admin_group_follows_reload(fakecg, tmp_path):
    """The group is resolved at start and at each reload (on a thread), not at
    every call: a reload to no group refuses at once, one to the group's
    number admits again once resolved."""
    tree(fakecg)
    member = ["--reuid=nobody", "--regid=nogroup", "--groups=adm"]
    with api_daemon(tmp_path, fakecg.root, api__admin_group="adm") as (d, path):
        assert "error" not in run_as(path, member)["Tune"]
        for group in ["", str(grp.getgrnam("adm").gr_gid)]:
            acctd.fast_config(d.tmpdir, api__admin_group=group)
            before = d.wait(lambda doc: True, what="state")["daemon"]["reloads"]  # Reload calls count too
            d.signal(signal.SIGHUP)
            d.wait(lambda doc: doc["daemon"]["reloads"] > before, what="reload to %r" % group)
            end = time.monotonic() + 10
            while True:
                tune = run_as(path, member)["Tune"]
                if ("error" in tune) == (group == "") or time.monotonic() > end:
                    break
                time.sleep(0.1)
            if group == "":
                assert tune.get("error") == DENIED, tune
            else:
                assert "error" not in tune, tune


def test_root_administers(fakecg, tmp_path):
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        with Varlink(path) as v:
            p = ok(v.call(IFACE + ".Tune", {"bytes_budget": 1 << 20, "auto_tune": False}))
            assert p["budgets"]["bytes"] == 1 << 20 and p["auto_tune"] is False
            assert "pass" in ok(v.call(IFACE + ".Reconcile"))
            r = ok(v.call(IFACE + ".Reload"))
            assert (r["warnings"], r["changes"], r["dropped_tuning"]["was_auto_tune"]) == ([], [], False), r
            st = ok(v.call(IFACE + ".Status"))["status"]
            assert st["tuner"]["tuned"] is False  # a reload returns to the configured values
            assert st["reloads"] == 1 and st["reload_result"] == "ok"
