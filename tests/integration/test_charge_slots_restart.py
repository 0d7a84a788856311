"""Charge slots across restarts of acctd (docs/charges.md, "Durability"), on
a fake tree with a real slot client (tests/charge-slot-client.c; as root it
names the fake cgroup, so no real cgroup is made): a clean stop folds every
slot before its final write, so what a client added since the last fold is
kept. The passes are an hour apart, so that only the stop can fold."""
import os
import subprocess

import pytest

import acctd
from test_api_client import IFACE, Varlink, ok
from test_charges_durable import build, daemon, get

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="the slot client names a cgroup: root only")

CLIENT = os.environ.get("ACCT_SLOT_CLIENT", "")
RESOURCES = {
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "64K", "resource.gpu__on_removal": "reparent",
    # no pass between the charges and the stop: only the stop folds
    "sampling__fast_interval": "1h", "sampling__slow_interval": "1h", "sampling__rescan_interval": "1h",
}
DB = "/system.slice/db.service"


class Client:
    """charge-slot-client, connected; it stays in its own cgroup and names
    the fake one."""

    def __init__(self, sock):
        if not CLIENT or not os.access(CLIENT, os.X_OK):
            pytest.skip("ACCT_SLOT_CLIENT (tests/charge-slot-client.c) not built")
        self.p = subprocess.Popen([CLIENT, "unix:" + sock], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        assert self.cmd("go") == "connected"

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline()
        assert out, "client exited: %s" % self.p.poll()
        return out.strip()

    def open(self, res, cgroup):
        r = self.cmd("open %s %s" % (res, cgroup))
        assert r.startswith("slot "), r
        return int(r.split()[1])

    def exit(self):
        if self.p.poll() is None:
            self.p.stdin.write("close\n")
            self.p.stdin.close()
        assert self.p.wait(timeout=60) == 0


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
