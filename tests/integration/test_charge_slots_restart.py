"""Charge slots across restarts of acctd (docs/charges.md, "Durability"), on
a fake tree with a real slot client (tests/charge-slot-client.c; as root it
names the fake cgroup, so no real cgroup is made): a clean stop folds every
slot before its final write, so what a client added since the last fold is
kept. The passes are an hour apart, so that only the stop can fold.

With systemd's descriptor store (played here by the test's notify socket,
acctd.Daemon's fdstore, which keeps what acctd sends with FDSTORE=1 and
passes it back with LISTEN_FDS at the next start): a client that goes on
charging its old slot after a restart, and after a SIGKILL, is counted
exactly; a release_on_exit slot's charges are kept across the restart and
released when the client exits after it."""
import contextlib
import grp
import os
import signal
import tempfile

import pytest

import acctd
from test_api_client import IFACE, Varlink, ok, socket_dir
from test_charges_durable import build, charge, daemon, get, wait_for
from test_charges_ram_slots import Client

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="the slot client names a cgroup: root only")

RESOURCES = {
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "64K", "resource.gpu__on_removal": "reparent",
    # no pass between the charges and the stop: only the stop folds
    "sampling__fast_interval": "1h", "sampling__slow_interval": "1h", "sampling__rescan_interval": "1h",
}
DB = "/system.slice/db.service"
STORED = dict(RESOURCES, **{
    "resource.inflight__unit": "count", "resource.inflight__budget": "16",
    "resource.inflight__release_on_exit": "yes",
})


def slot_folds(sock):
    """Status's charge_slots.folds (Status itself folds nothing)."""
    with Varlink(sock) as v:
        return ok(v.call(IFACE + ".Status"))["status"]["charge_slots"]["folds"]


def test_clean_stop_folds_the_slots(fakecg, tmp_path):
    """Charged through a slot, then SIGTERM before any pass folded it: the
    stop's final write holds it, and the next start serves it."""
    build(fakecg)
    state = tmp_path / "state"
    with daemon(fakecg, tmp_path, state, RESOURCES) as (d, sock):
        c = Client(sock)
        try:
            s = c.open("gpu", DB)
            assert c.cmd("add %d 7 1000" % s) == "added"
            assert slot_folds(sock) == 0  # no fold before the stop's
            assert d.stop() == 0
            d.wait_log("Saved the charges to")
        finally:
            c.exit()
    with daemon(fakecg, tmp_path, state, RESOURCES) as (d, sock):
        assert get(sock, DB)["gpu"] == (7000, 7000)
        assert get(sock, "/")["gpu"] == (0, 7000)


@contextlib.contextmanager
def stored_daemon(fakecg, tmp_path, state, store, sock):
    """acctd on the fake tree with the state directory `state`, the socket
    `sock` (the same across restarts, as acctd.socket's) and the
    descriptor store `store`."""
    conf = dict(STORED)
    if os.geteuid() != 0:
        conf["api__admin_group"] = grp.getgrgid(os.getgid()).gr_name
    work = tempfile.mkdtemp(prefix="daemon-", dir=str(tmp_path))
    d = acctd.Daemon(work, fakecg.root, acctd.fast_config(work, **conf), extra=["--socket", sock],
                     env={"STATE_DIRECTORY": str(state)}, fdstore=store)
    try:
        d.wait_notify("READY=1", timeout=60)
        wait_for(lambda: get(sock, DB) is not None, "acctd to track " + DB)
        yield d
    finally:
        d.stop()


def slots(sock):
    with Varlink(sock) as v:
        v.call(IFACE + ".Get", {"cgroup": "/"})  # folds, and lets exited clients' orphans go
        return ok(v.call(IFACE + ".Status"))["status"]["charge_slots"]


def test_slots_survive_restarts_with_the_store(fakecg, tmp_path):
    """A client charges through a gpu slot and a release_on_exit inflight
    slot; acctd restarts (SIGTERM), then is killed (SIGKILL) and starts
    again, each time with the store; the client goes on charging its old
    slots, and after the first restart connects again and charges a new
    slot too: every value exact, nothing counted twice; its exit after the
    restarts releases inflight and keeps gpu."""
    build(fakecg)
    state, store = tmp_path / "state", {}
    sdir = socket_dir()
    sock = os.path.join(sdir, "io.acctd")
    c = None
    try:
        with stored_daemon(fakecg, tmp_path, state, store, sock) as d:
            c = Client(sock)
            g, i = c.open("gpu", DB), c.open("inflight", DB)
            assert c.cmd("add %d 7 1000" % g) == "added"
            assert c.cmd("add %d 1 10" % i) == "added"
            assert get(sock, DB) == {"gpu": (7000, 7000), "inflight": (10, 10)}  # folded
            assert c.cmd("add %d 7 100" % g) == "added"  # folded by the stop only
            wait_for(lambda: sorted(k.split("-")[0] for k in store) == ["slot", "slot", "slotpid", "slotpid"],
                     "the slots in the store: %r" % d.read_notify(0))
            assert d.stop() == 0
        with stored_daemon(fakecg, tmp_path, state, store, sock) as d:
            assert get(sock, DB) == {"gpu": (7700, 7700), "inflight": (10, 10)}
            st = slots(sock)
            assert (st["adopted"], st["not_adopted"], st["open"]) == (2, 0, 2), st
            assert c.cmd("add %d 3 100" % g) == "added"
            assert c.cmd("add %d 2 10" % i) == "added"
            assert get(sock, DB) == {"gpu": (8000, 8000), "inflight": (30, 30)}
            # it connects again and opens a new slot: both counted
            assert c.cmd("connect") == "connected"
            g2 = c.open("gpu", DB)
            assert c.cmd("add %d 11 10" % g2) == "added"
            assert get(sock, DB) == {"gpu": (8110, 8110), "inflight": (30, 30)}
            # a slot opened after the last write of the state file is not in
            # it (a crash would lose it, docs/charges.md): written now
            charge(sock, "gpu", 0, DB, sync=True)
            assert c.cmd("add %d 1 5" % g) == "added"
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait(30)
        with stored_daemon(fakecg, tmp_path, state, store, sock) as d:
            # the state file's slot totals agree with its charges: exact
            assert get(sock, DB) == {"gpu": (8115, 8115), "inflight": (30, 30)}
            assert get(sock, "/")["gpu"] == (0, 8115)
            assert slots(sock)["adopted"] == 3
            c.exit()
            c = None
            wait_for(lambda: slots(sock)["open"] == 0, "the exited client's slots to go")
            assert get(sock, DB) == {"gpu": (8115, 8115), "inflight": (0, 0)}
            # let go: out of the store too (FDSTOREREMOVE comes through the
            # notify socket, which the harness reads on a thread of its own:
            # ASan beside two CPU hogs saw the store still full here)
            wait_for(lambda: store == {}, "the let-go slots to leave the descriptor store")
    finally:
        if c:
            c.exit()
        for fds in store.values():
            for fd in fds:
                os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(sock)
        with contextlib.suppress(OSError):
            os.rmdir(sdir)
