"""Reconciliation of a resource declared ram against memory when its charges
come through shared-memory charge slots (docs/charges.md, "Charge slots" and
"Reconciliation of RAM resources"), on a fake cgroup tree whose memory the
test sets exactly, with a real acctd and a real slot client
(tests/charge-slot-client.c; as root it names the fake cgroup, so no real
cgroup is made): the check compares with the bound that Get serves, the
engine's and the slot's, so a cgroup whose charges lie within it is not
flagged, and one beyond it is; Get's and /metrics' unexplained memory carry
the slot's bound too."""
import os
import subprocess

import pytest

import acctd
from test_charges_views import call, metrics, series, status_ram, views_daemon, wait_for

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="the slot client names a cgroup: root only")

CLIENT = os.environ.get("ACCT_SLOT_CLIENT", "")
MiB = 1 << 20
BUDGET = 64 << 10
RESOURCES = {
    # RAM an application charges through a slot; a budget, so that the
    # engine's reads and the slot's have bounds
    "resource.arena__unit": "bytes", "resource.arena__budget": str(BUDGET), "resource.arena__ram": "yes",
}


class Client:
    """charge-slot-client, connected; it stays in the cgroup it was started
    in and names a fake one (also test_charge_slots_restart.py's)."""

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
        """A slot of resource res for cgroup; its index."""
        r = self.cmd("open %s %s" % (res, cgroup))
        assert r.startswith("slot "), r
        return int(r.split()[1])

    def exit(self):
        if self.p.poll() is None:
            self.p.stdin.write("close\n")
            self.p.stdin.close()
        assert self.p.wait(timeout=60) == 0


@pytest.fixture
def env(fakecg, tmp_path):
    """acctd on a fake v2 tree with /svc (1 MiB) and /other (64 MiB: the
    root's memory stays far above anything charged), its socket and
    /metrics."""
    if not CLIENT or not os.access(CLIENT, os.X_OK):
        pytest.skip("ACCT_SLOT_CLIENT (tests/charge-slot-client.c) not built")
    fakecg.mkdir("/svc", memory=1 * MiB)
    fakecg.mkdir("/other", memory=64 * MiB)
    with views_daemon(fakecg, tmp_path, RESOURCES) as e:
        yield e


def checks_after(sock, n):
    """Status's reconciliation once two more checks than n ran (the second
    one began after whatever the test did before)."""
    return wait_for(lambda: (lambda s: s if s["checks"] >= n + 2 else None)(status_ram(sock)), "two more checks")


def test_slot_bound_in_reconciliation(env):
    """/svc charged through a slot beyond its memory by more than the
    engine's bound and the memory's, but within those and the slot's: not
    flagged (the bound Get serves says the truth may be below the memory).
    Charged beyond all of them: flagged."""
    sock, port = env["sock"], env["port"]
    # the engine's bound of a read, from a cgroup charged by Charge alone
    call(sock, "Charge", {"resource": "arena", "delta": 1, "cgroup": "/other"})
    engine = call(sock, "Get", {"cgroup": "/other"})["charges"]["arena"]["subtree"]["bound"]
    g = wait_for(lambda: (lambda r: r if r["cgroup"]["values"].get("memory") else None)(
        call(sock, "Get", {"cgroup": "/svc"})), "memory of /svc")
    mem = g["cgroup"]["values"]["memory"]
    assert mem["value"] == 1 * MiB
    mem_bound = mem.get("bound", 0)

    c = Client(sock)
    try:
        r = c.cmd("open arena /svc")
        assert r == "slot 0", r
        assert c.cmd("add 0 1 1") == "added"
        served = call(sock, "Get", {"cgroup": "/svc"})["charges"]["arena"]["subtree"]
        slot = served["bound"] - engine
        assert slot > 2, (served, engine)  # the slot's own bound, at most the budget
        assert slot <= BUDGET

        # above memory by more than the engine's and the memory's bounds,
        # within the slot's as well
        over = engine + mem_bound + slot // 2
        assert c.cmd("add 0 %d 1" % (1 * MiB + over - 1)) == "added"
        st = checks_after(sock, status_ram(sock)["checks"])
        got = call(sock, "Get", {"cgroup": "/svc", "precise": True})
        assert got["charges"]["arena"]["subtree"]["value"] == 1 * MiB + over
        assert "/svc" not in st["first_over_memory"], st
        page = wait_for(lambda: (lambda p: p if series(p, "acctd_charges_over_memory", "/svc") is not None else None)(
            metrics(port)), "acctd_charges_over_memory of /svc")
        assert series(page, "acctd_charges_over_memory", "/svc") == 0
        # unexplained memory: memory - charged, both bounds summed, the slot's included
        assert series(page, "acctd_unexplained_memory_bytes", "/svc") == -over
        assert series(page, "acctd_unexplained_memory_bound_bytes", "/svc") == mem_bound + engine + slot
        u = call(sock, "Get", {"cgroup": "/svc"})["unexplained_memory"]
        assert u["value"] == -over and u["bound"] == mem_bound + engine + slot, u
        assert "Charged RAM of /svc " not in env["d"].logtext()

        # beyond the slot's bound too: certainly leaked, flagged
        assert c.cmd("add 0 %d 1" % (slot + 1)) == "added"
        st = wait_for(lambda: (lambda s: s if "/svc" in s["first_over_memory"] else None)(status_ram(sock)),
                      "/svc flagged")
        env["d"].wait_log("Charged RAM of /svc ", timeout=60)
    finally:
        c.exit()


def test_compare_charge_in_its_unit_and_bound(env):
    """acctctl compare on a charged resource reads the threshold and prints
    the value in the resource's unit (bytes as sizes), and a threshold
    within the slot's bound is "within the charge bound", not the kernel's."""
    from test_history_cli import ctl
    sock = env["sock"]
    c = Client(sock)
    try:
        assert c.cmd("open arena /other") == "slot 0"
        assert c.cmd("add 0 %d 1" % (2 * MiB)) == "added"
        p = ctl(sock, "compare", "/other", "charges.arena.self", "1M")
        assert p.returncode == 0, (p.stdout, p.stderr)  # above
        assert "charges.arena.self 2.0M" in p.stdout and "is above 1.0M" in p.stdout, p.stdout
        # one byte off: inside the slot's bound, which no read narrows
        p = ctl(sock, "compare", "/other", "charges.arena.self", str(2 * MiB + 1))
        assert p.returncode == 5, (p.stdout, p.stderr)  # below
        assert "within the charge bound" in p.stdout and "kernel" not in p.stdout, p.stdout
    finally:
        c.exit()
