"""Charges across restarts of acctd (docs/charges.md, "Durability"), on a fake
tree: a clean stop keeps every charge; after SIGKILL what was charged since
the last write of the state file is lost and nothing else (a write follows a
change within [api] charge_sync_interval; Charge with sync: true is durable
when it returns); charges of release_on_exit resources are released by a
restart (their connections are gone); a damaged state file (garbage,
truncated, a wrong checksum, another version) is set aside, logged and
reported in Status, and acctd starts with no charges; a cgroup removed while
acctd was stopped has its charges go by its resource's removal rule; a
resource no longer declared is dropped and reported."""
import contextlib
import glob
import grp
import os
import signal
import time

import pytest

from test_api_client import IFACE, Varlink, api_daemon, ok

RESOURCES = {
    # reparented on removal
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "64K", "resource.gpu__on_removal": "reparent",
    # released on removal
    "resource.lease__unit": "count", "resource.lease__budget": "16",
    # released when a client exits (and so by a restart)
    "resource.inflight__unit": "count", "resource.inflight__budget": "16",
    "resource.inflight__release_on_exit": "yes",
}

CGROUPS = ["/system.slice", "/system.slice/db.service", "/system.slice/web.service", "/user.slice"]

DEADLINE = 60  # generous: the machine runs other tests beside this one


def build(fs):
    for p in CGROUPS:
        fs.mkdir(p, memory=1 << 20, cpu_usec=1000, procs=[])


@contextlib.contextmanager
def daemon(fakecg, tmp_path, state, resources=None, wait=CGROUPS, **conf):
    """acctd on the fake tree with its state directory `state` (shared by
    the restarts of a test) and the charged resources; yields (daemon,
    socket). Charges name cgroups, which root and the admin group may."""
    conf = dict(resources if resources is not None else RESOURCES, **conf)
    if os.geteuid() != 0:
        conf.setdefault("api__admin_group", grp.getgrgid(os.getgid()).gr_name)
    with api_daemon(tmp_path, fakecg.root, env={"STATE_DIRECTORY": str(state)}, **conf) as (d, sock):
        for p in wait:
            wait_for(lambda: get(sock, p) is not None, "acctd to track " + p)
        yield d, sock


def wait_for(pred, what, timeout=DEADLINE):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = pred()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def get(sock, path):
    """The charges of `path` read precisely, {resource: {self, subtree}}, or
    None when acctd does not track it."""
    with Varlink(sock) as v:
        r = v.call(IFACE + ".Get", {"cgroup": path, "precise": True})
    if "error" in r:
        return None
    return {k: (c["self"]["value"], c["subtree"]["value"]) for k, c in r["parameters"]["charges"].items()}


def charge(sock, resource, delta, cgroup, sync=False, v=None):
    params = {"resource": resource, "delta": delta, "cgroup": cgroup}
    if sync:
        params["sync"] = True
    if v is not None:
        return ok(v.call(IFACE + ".Charge", params))
    with Varlink(sock) as c:
        return ok(c.call(IFACE + ".Charge", params))


def status(sock):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + ".Status"))["status"]["charges_state"]


def everything(sock):
    return {p: get(sock, p) for p in CGROUPS + ["/"]}


def kill(d):
    """SIGKILL: no final write."""
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(30)


def zero(values):
    return {p: {k: (0, 0) for k in v} for p, v in values.items()}


def charge_some(sock, scale=1):
    charge(sock, "gpu", 4096 * scale, "/system.slice/db.service")
    charge(sock, "gpu", 1000 * scale, "/system.slice")
    charge(sock, "gpu", -7 * scale, "/user.slice")
    charge(sock, "lease", 3 * scale, "/system.slice/web.service")
    charge(sock, "lease", 5 * scale, "/")


def test_clean_stop_keeps_every_charge(fakecg, tmp_path):
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state) as (d, sock):
        assert status(sock)["durable"] is True
        charge_some(sock)
        # a connection's release_on_exit charge, held open across the stop
        held = Varlink(sock)
        charge(sock, "inflight", 9, "/system.slice/db.service", v=held)
        before = everything(sock)
        assert before["/system.slice/db.service"]["inflight"] == (9, 9)
        assert d.stop() == 0
        held.close()
        d.wait_log("Saved the charges to")
    assert os.path.exists(state / "charges.state")
    with daemon(fakecg, tmp_path, state) as (d, sock):
        after = everything(sock)
        st = status(sock)
        assert st["set_aside"] is None and st["load_error"] is None, st
        assert st["loaded_cgroups"] == 5, st
    # every charge back, subtrees rebuilt; the connection's released
    for p, v in before.items():
        want = dict(v, inflight=(0, 0))
        assert after[p] == want, (p, after[p], want)
    assert after["/"]["gpu"] == (0, 4096 + 1000 - 7)
    assert after["/"]["lease"] == (5, 8)


def test_charge_state_path_names_the_file(fakecg, tmp_path):
    """[api] charge_state_path puts the file where it says, not in the state
    directory (two acctds on one host must not share one): written there at
    a clean stop, loaded from there at the next start, none in the state
    directory."""
    build(fakecg)
    state = tmp_path / "state"
    mine = tmp_path / "elsewhere" / "gpu.state"
    with daemon(fakecg, tmp_path, state, api__charge_state_path=str(mine)) as (d, sock):
        assert status(sock)["path"] == str(mine)
        charge(sock, "gpu", 4096, "/system.slice/db.service")
        assert d.stop() == 0
        d.wait_log("Saved the charges to")
    assert mine.exists() and not (state / "charges.state").exists()
    with daemon(fakecg, tmp_path, state, api__charge_state_path=str(mine)) as (d, sock):
        assert get(sock, "/system.slice/db.service")["gpu"] == (4096, 4096)
    # without the key: the state directory's file, which holds nothing
    with daemon(fakecg, tmp_path, state) as (d, sock):
        assert status(sock)["path"] == str(state / "charges.state")
        assert get(sock, "/system.slice/db.service")["gpu"] == (0, 0)


def test_sigkill_after_a_sync_loses_nothing(fakecg, tmp_path):
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state, api__charge_sync_interval="200ms") as (d, sock):
        writes = status(sock)["writes"]
        charge_some(sock)
        before = everything(sock)
        # a write after the charges, within the interval (Status counts them)
        wait_for(lambda: status(sock)["writes"] > writes, "a write of the state file")
        kill(d)
    with daemon(fakecg, tmp_path, state) as (d, sock):
        after = everything(sock)
    assert after == before


def test_sigkill_loses_at_most_what_came_since_the_last_write(fakecg, tmp_path):
    """With a long interval no timed write comes: a sync: true charge is the
    last write, and what came after it (and only that) is lost."""
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state, api__charge_sync_interval="1h") as (d, sock):
        charge_some(sock)
        charge(sock, "gpu", 1, "/system.slice/web.service", sync=True)
        durable = everything(sock)
        charge_some(sock, scale=10)  # not durable: lost by the SIGKILL
        assert everything(sock) != durable
        kill(d)
    with daemon(fakecg, tmp_path, state) as (d, sock):
        assert everything(sock) == durable


def test_sync_charge_then_sigkill_survives(fakecg, tmp_path):
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state, api__charge_sync_interval="1h") as (d, sock):
        with Varlink(sock) as v:
            t0 = time.monotonic()
            charge(sock, "gpu", 123456, "/system.slice/db.service", sync=True, v=v)
            took = time.monotonic() - t0
            kill(d)  # at once: the reply came after the fsync
        print("Charge with sync: true took %.1f ms (the call, state file and fsync)" % (took * 1000))
    with daemon(fakecg, tmp_path, state) as (d, sock):
        assert get(sock, "/system.slice/db.service")["gpu"] == (123456, 123456)
        assert get(sock, "/")["gpu"] == (0, 123456)


def test_acctctl_charge_sync_then_sigkill_survives(fakecg, tmp_path):
    """acctctl charge --sync asks for sync: true (a long interval: no timed
    write comes before the SIGKILL); a negative DELTA before '--' is refused
    with the way to write it."""
    from test_history_cli import ctl
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state, api__charge_sync_interval="1h") as (d, sock):
        p = ctl(sock, "charge", "gpu", "4096", "--cgroup=/user.slice", "--sync")
        assert p.returncode == 0, (p.stdout, p.stderr)
        kill(d)
    with daemon(fakecg, tmp_path, state) as (d, sock):
        assert get(sock, "/user.slice")["gpu"] == (4096, 4096)
        p = ctl(sock, "charge", "gpu", "-1", "--cgroup=/user.slice")
        assert p.returncode == 2 and "after '--'" in p.stderr, (p.returncode, p.stderr)


def damage_garbage(data):
    return b"\x00\xffnot a state file at all\n" * 10


def damage_truncated(data):
    return data[: len(data) - 9]


def damage_checksum(data):
    # one digit of a value changed: the length stays, the checksum differs
    head, body = data.split(b"\n", 1)
    i = body.index(b"4096")
    return head + b"\n" + body[:i] + b"5" + body[i + 1:]


def damage_version(data):
    return data.replace(b"acctd-charges 1 ", b"acctd-charges 2 ", 1)


def damage_empty(data):
    return b""


@pytest.mark.parametrize("damage", [damage_garbage, damage_truncated, damage_checksum, damage_version, damage_empty])
def test_damaged_state_file_is_set_aside(fakecg, tmp_path, damage):
    build(fakecg)
    state = tmp_path / "state"
    path = state / "charges.state"
    with daemon(fakecg, tmp_path, state) as (d, sock):
        charge_some(sock)
        assert d.stop() == 0
    data = path.read_bytes()
    assert data.startswith(b"acctd-charges 1 ")
    path.write_bytes(damage(data))
    with daemon(fakecg, tmp_path, state) as (d, sock):
        d.wait_log("is damaged")
        st = status(sock)
        assert st["set_aside"] and st["load_error"], st
        assert st["loaded_cgroups"] == 0
        # moved aside as it was, nothing of it loaded
        assert os.path.basename(st["set_aside"]).startswith("charges.state.corrupt-")
        assert open(st["set_aside"], "rb").read() == damage(data)
        assert not path.exists()
        assert everything(sock) == zero(everything(sock))
        # and the charges from now on are kept again
        charge(sock, "gpu", 77, "/user.slice", sync=True)
    assert glob.glob(str(state / "charges.state.corrupt-*")) == [st["set_aside"]]
    with daemon(fakecg, tmp_path, state) as (d, sock):
        assert get(sock, "/user.slice")["gpu"] == (77, 77)
        assert status(sock)["set_aside"] is None


def test_cgroup_removed_while_stopped_goes_by_its_rule(fakecg, tmp_path):
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state) as (d, sock):
        charge(sock, "gpu", 500, "/system.slice/db.service")
        charge(sock, "gpu", 20, "/system.slice")
        charge(sock, "lease", 4, "/system.slice/db.service")
        charge(sock, "lease", 1, "/system.slice")
    fakecg.rmdir("/system.slice/db.service")
    alive = [p for p in CGROUPS if p != "/system.slice/db.service"]
    with daemon(fakecg, tmp_path, state, wait=alive) as (d, sock):
        # gpu reparents: to the parent's own value; lease is released
        assert get(sock, "/system.slice")["gpu"] == (520, 520)
        assert get(sock, "/system.slice")["lease"] == (1, 1)
        assert get(sock, "/")["lease"] == (0, 1)
        assert get(sock, "/system.slice/db.service") is None


def test_subtree_removed_while_stopped_reaches_a_tracked_ancestor(fakecg, tmp_path):
    """A gone cgroup's gone parent is removed in turn: reparented charges
    reach the nearest cgroup that exists, released ones leave every value."""
    build(fakecg)
    fakecg.mkdir("/user.slice/u", memory=1 << 20, cpu_usec=1, procs=[])
    fakecg.mkdir("/user.slice/u/app", memory=1 << 20, cpu_usec=1, procs=[])
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state, wait=CGROUPS + ["/user.slice/u/app"]) as (d, sock):
        charge(sock, "gpu", 300, "/user.slice/u/app")
        charge(sock, "lease", 2, "/user.slice/u/app")
        charge(sock, "gpu", 5, "/user.slice")
    fakecg.rmdir("/user.slice/u/app")
    fakecg.rmdir("/user.slice/u")
    with daemon(fakecg, tmp_path, state) as (d, sock):
        assert get(sock, "/user.slice")["gpu"] == (305, 305)
        assert get(sock, "/user.slice")["lease"] == (0, 0)
        assert get(sock, "/")["gpu"] == (0, 305)
        assert get(sock, "/")["lease"] == (0, 0)
        assert get(sock, "/user.slice/u") is None


def test_resource_no_longer_declared_is_dropped_and_reported(fakecg, tmp_path):
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state) as (d, sock):
        charge(sock, "gpu", 500, "/system.slice")
        charge(sock, "lease", 4, "/user.slice")
    fewer = {k: v for k, v in RESOURCES.items() if not k.startswith("resource.lease__")}
    with daemon(fakecg, tmp_path, state, resources=fewer) as (d, sock):
        d.wait_log("holds charges of resources dropped now")
        st = status(sock)
        assert "lease (no longer declared)" in st["dropped"], st
        assert st["set_aside"] is None
        assert get(sock, "/system.slice")["gpu"] == (500, 500)
        assert "lease" not in get(sock, "/user.slice")


def test_write_cost_at_1000_cgroups(fakecg, tmp_path):
    """The cost of a write at 1,000 cgroups x 2 resources (docs/charges.md
    quotes it): a sync: true charge's time and the writer's own figure."""
    for i in range(10):
        fakecg.mkdir("/bulk-%d" % i, memory=1 << 20, cpu_usec=1, procs=[])
        for j in range(99):
            fakecg.mkdir("/bulk-%d/c-%d" % (i, j), memory=1 << 20, cpu_usec=1, procs=[])
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state, api__charge_sync_interval="1h") as (d, sock):
        wait_for(lambda: get(sock, "/bulk-9/c-98") is not None, "acctd to track the 1,000 cgroups")
        with Varlink(sock) as v:
            batch = []
            for i in range(10):
                for j in range(99):
                    batch.append({"resource": "gpu", "delta": 4096 + j, "cgroup": "/bulk-%d/c-%d" % (i, j)})
                    batch.append({"resource": "lease", "delta": 1 + j, "cgroup": "/bulk-%d/c-%d" % (i, j)})
                batch.append({"resource": "gpu", "delta": 1, "cgroup": "/bulk-%d" % i})
                batch.append({"resource": "lease", "delta": 1, "cgroup": "/bulk-%d" % i})
            for k in range(0, len(batch), 200):
                part = batch[k:k + 200]
                assert ok(v.call(IFACE + ".ChargeBatch", {"charges": part}))["applied"] == len(part)
            times = []
            for k in range(5):
                t0 = time.monotonic()
                charge(sock, "gpu", 1, "/bulk-0", sync=True, v=v)
                times.append(time.monotonic() - t0)
        st = status(sock)
        size = os.path.getsize(state / "charges.state")
        print("1,000 cgroups x 2 resources: %d bytes; sync: true charge %.1f ms median; snapshot %.1f ms; "
              "write %.1f ms, max %.1f ms" % (size, sorted(times)[2] * 1000, st["last_snapshot_us"] / 1000,
                                              st["last_write_duration_us"] / 1000, st["max_write_duration_us"] / 1000))
        assert st["writes"] >= 5
