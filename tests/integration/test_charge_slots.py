"""Charges through shared-memory charge slots (OpenChargeSlot, docs/charges.md
"Charge slots"), on this host's real cgroups with a real acctd (root only):
client programs on libacct-client (tests/charge-slot-client.c) moved into
real cgroups charge through slots, alone and several at once on nested
cgroups, with threads; the values appear for the cgroup and its ancestors
within their bound, exactly once the clients stop; a hostile client writing
garbage into its own slot: acctd goes on, the slot is dropped and counted in
Status, its last good total stays, nothing else moves; a client's exit
releases its slots' net charge where the resource says so, and a slot of
another resource outlives its connection while its process lives; the cap of
slots per connection."""
import json
import os
import shutil
import subprocess
import time

import pytest

import acctd
from test_api_client import IFACE, Varlink, error, ok
from test_charges import SUBDIRS, memory_base, rmtree_cgroups, wait_for

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups and move processes")

CLIENT = os.environ.get("ACCT_SLOT_CLIENT", "")
SLOTS_MAX = 4

RESOURCES = {
    # kept when a client exits
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "64K", "resource.gpu__on_removal": "reparent",
    # released when a client exits
    "resource.inflight__unit": "count", "resource.inflight__budget": "16",
    "resource.inflight__release_on_exit": "yes",
    "api__max_charge_slots_per_connection": str(SLOTS_MAX),
}
BUDGET = {"gpu": 64 << 10, "inflight": 16}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """One acctd for the file, on the real cgroups under /acctd-slots-PID."""
    import tempfile
    from test_api_client import socket_dir
    if not CLIENT or not os.access(CLIENT, os.X_OK):
        pytest.skip("ACCT_SLOT_CLIENT (tests/charge-slot-client.c) not built")
    base = memory_base()
    if base is None:
        pytest.skip("no writable cgroup hierarchy (v1 memory or v2) here")
    name = "acctd-slots-%d" % os.getpid()
    top = os.path.join(base, name)
    os.makedirs(top, exist_ok=True)
    work = tempfile.mkdtemp(prefix="daemon-", dir=str(tmp_path_factory.mktemp("slots")))
    # a history recording every second (test_history_counts_slots)
    conf = dict(RESOURCES, cgroups__include="/%s /%s/*" % (name, name), history__interval="1s")
    sock = os.path.join(socket_dir(), "io.acctd")
    d = acctd.Daemon(work, None, acctd.fast_config(work, **conf),
                     extra=["--socket", sock, "--metrics-listen", "none"])
    try:
        d.wait_notify("READY=1", timeout=120)
        yield {"d": d, "sock": sock, "dir": top, "path": "/" + name}
    finally:
        d.stop()
        shutil.rmtree(os.path.dirname(sock), ignore_errors=True)
        rmtree_cgroups(top)


def get(sock, path, precise=True):
    with Varlink(sock, timeout=60) as v:
        r = v.call(IFACE + ".Get", {"cgroup": path, "precise": precise})
    return None if "error" in r else r["parameters"].get("charges")


def value(sock, path, res, which="self"):
    c = get(sock, path)
    return None if c is None else c[res][which]["value"]


def slot_status(sock):
    """Status's charge_slots, after a Get has folded every slot (and dropped
    the orphans whose process exited), so that two snapshots compare."""
    with Varlink(sock, timeout=60) as v:
        v.call(IFACE + ".Get", {"cgroup": "/"})  # folds even where "/" is not tracked
        return ok(v.call(IFACE + ".Status", {}))["status"]["charge_slots"]


@pytest.fixture
def tree(env, request):
    """A real cgroup subtree of the test's own, {a/b, c/d, e/f}, tracked."""
    name = request.node.name.replace("test_", "")[:40]
    top = os.path.join(env["dir"], name)
    for sub in SUBDIRS:
        os.makedirs(os.path.join(top, sub), exist_ok=True)
    path = env["path"] + "/" + name
    try:
        for sub in SUBDIRS:
            full = path + ("/" + sub if sub else "")
            wait_for(lambda: get(env["sock"], full) is not None, "acctd to track " + full, timeout=60)
        yield {"dir": top, "path": path}
    finally:
        rmtree_cgroups(top)


class Client:
    """charge-slot-client moved into `cgdir` before it connects."""

    def __init__(self, sock, cgdir):
        self.p = subprocess.Popen([CLIENT, "unix:" + sock], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        with open(os.path.join(cgdir, "cgroup.procs"), "w") as f:
            f.write(str(self.p.pid))
        assert self.cmd("go") == "connected"

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def reply(self):
        line = self.p.stdout.readline()
        assert line, "client exited: %s" % self.p.poll()
        return line.strip()

    def cmd(self, line):
        self.send(line)
        return self.reply()

    def open(self, res, cgroup=None):
        r = self.cmd("open %s%s" % (res, " " + cgroup if cgroup else ""))
        assert r.startswith("slot "), r
        return int(r.split()[1])

    def exit(self):
        if self.p.poll() is None:
            self.send("close")
            self.p.stdin.close()
        assert self.p.wait(timeout=60) == 0


def test_slot_charges_cgroup_and_ancestors(env, tree):
    """A program in a/b opens a slot for its own cgroup (none named) and
    charges through it with no system call: Get shows it for a/b and every
    ancestor, exactly, and the approximate read within its bound."""
    sock, p = env["sock"], tree["path"]
    c = Client(sock, os.path.join(tree["dir"], "a", "b"))
    try:
        s = c.open("gpu")
        assert c.cmd("add %d 4096 1000" % s) == "added"
        assert value(sock, p + "/a/b", "gpu") == 4096 * 1000
        assert value(sock, p + "/a", "gpu", "subtree") == 4096 * 1000
        assert value(sock, p, "gpu", "subtree") == 4096 * 1000
        assert value(sock, p + "/a", "gpu") == 0
        approx = get(sock, p, precise=False)["gpu"]["subtree"]
        # the engine's bound plus the slot's, each at most the budget
        assert approx["bound"] <= 2 * BUDGET["gpu"] and approx["age_us"] == 0
        assert abs(approx["value"] - 4096 * 1000) <= approx["bound"]
        # an ancestor above the test's tree holds it too
        assert value(sock, env["path"], "gpu", "subtree") >= 4096 * 1000
        # List and Compare read the same: slots folded first (a charge just
        # made is in them), the slot's bound added to the engine's
        assert c.cmd("add %d 1 5" % s) == "added"
        with Varlink(sock, timeout=60) as v:
            rows = ok(v.call(IFACE + ".List", {"prefix": p}))["cgroups"]
            cmp_ = ok(v.call(IFACE + ".Compare", {"cgroup": p + "/a/b", "quantity": "charges.gpu.self",
                                                  "threshold": 4096 * 1000 + 5}))
        listed = {r["path"]: r.get("charges") for r in rows}
        mine = listed[p + "/a/b"]["gpu"]["self"]
        assert mine["bound"] == get(sock, p + "/a/b", precise=False)["gpu"]["self"]["bound"] > 0, mine
        assert abs(mine["value"] - (4096 * 1000 + 5)) <= mine["bound"], mine
        assert cmp_["result"] == "equal", cmp_
        st = slot_status(sock)
        assert st["open"] >= 1 and st["opened"] >= 1
        # folded by the passes too, without a read asking
        folds = st["folds"]
        assert c.cmd("add %d 1 10" % s) == "added"
        wait_for(lambda: slot_status(sock)["folds"] > folds, "a pass to fold the slot", timeout=60)
        assert value(sock, p + "/a/b", "gpu") == 4096 * 1000 + 15
    finally:
        c.exit()
    # gpu is not released at exit: the charge stays
    assert value(sock, p + "/a/b", "gpu") == 4096 * 1000 + 15


def test_concurrent_nested_slots(env, tree):
    """Three programs with two threads each charge through slots of nested
    cgroups (top, a, a/b) at once, and one of them a second resource; sampled
    reads of the ancestors stay within the bound of the final range, and once
    they stop every value is exact."""
    sock, p, top = env["sock"], tree["path"], tree["dir"]
    clients = [Client(sock, top), Client(sock, os.path.join(top, "a")), Client(sock, os.path.join(top, "a", "b"))]
    try:
        slots = [cl.open("gpu") for cl in clients]
        extra = clients[2].open("inflight", p + "/a/b")
        n = 200000
        deltas = [3, 5, 7]
        for cl, s, d in zip(clients, slots, deltas):
            cl.send("add %d %d %d 2" % (s, d, n))
        clients[2].send("add %d 1 %d 2" % (extra, n))
        final = 2 * n * sum(deltas)
        for _ in range(20):
            r = get(sock, p, precise=False)["gpu"]["subtree"]
            # three slots and the engine: at most 4 budgets
            assert r["bound"] <= 4 * BUDGET["gpu"]
            assert -r["bound"] <= r["value"] <= final + r["bound"]
        for cl in clients:
            assert cl.reply() == "added"
        assert clients[2].reply() == "added"
        assert value(sock, p, "gpu") == 2 * n * 3
        assert value(sock, p + "/a", "gpu") == 2 * n * 5
        assert value(sock, p + "/a/b", "gpu") == 2 * n * 7
        assert value(sock, p + "/a", "gpu", "subtree") == 2 * n * 12
        assert value(sock, p, "gpu", "subtree") == final
        assert value(sock, p + "/a/b", "inflight") == 2 * n
    finally:
        for cl in clients:
            cl.exit()
    # inflight is released with its connection, gpu stays
    assert value(sock, p + "/a/b", "inflight") == 0
    assert value(sock, p, "gpu", "subtree") == final


def test_hostile_slot(env, tree):
    """A client writes garbage into its own slot: acctd goes on, drops that
    slot with one log line and counts it in Status, keeps its last good
    total; the same client's other slot and another client's slot go on."""
    sock, p, top = env["sock"], tree["path"], tree["dir"]
    bad = Client(sock, os.path.join(top, "c"))
    good = Client(sock, os.path.join(top, "e"))
    try:
        before = slot_status(sock)
        s1 = bad.open("gpu")
        s2 = bad.open("gpu", p + "/c/d")
        g = good.open("gpu")
        assert bad.cmd("add %d 100 10" % s1) == "added"
        assert value(sock, p + "/c", "gpu") == 1000
        assert bad.cmd("garbage %d" % s1) == "garbage"
        wait_for(lambda: slot_status(sock)["dropped_corrupt"] > before["dropped_corrupt"],
                 "the corrupt slot to be dropped", timeout=60)
        assert value(sock, p + "/c", "gpu") == 1000  # its last good total
        assert bad.cmd("add %d 9 100" % s2) == "added"
        assert good.cmd("add %d 11 100" % g) == "added"
        assert value(sock, p + "/c/d", "gpu") == 900
        assert value(sock, p + "/e", "gpu") == 1100
        assert value(sock, p, "gpu", "subtree") == 1000 + 900 + 1100
        st = slot_status(sock)
        assert st["dropped_corrupt"] == before["dropped_corrupt"] + 1
        assert st["open"] == before["open"] + 2
    finally:
        bad.exit()
        good.exit()
    assert env["d"].proc.poll() is None
    with open(env["d"].log_path, errors="replace") as f:
        lines = [ln for ln in f if "Dropped the gpu charge slot" in ln and p + "/c:" in ln]
    assert len(lines) == 1, lines


def test_exit_releases(env, tree):
    """A client's exit (its connection's close) folds its slots a last time
    and releases the net charge of the resources with release_on_exit."""
    sock, p = env["sock"], tree["path"]
    c = Client(sock, os.path.join(tree["dir"], "e", "f"))
    s_in = c.open("inflight")
    s_gpu = c.open("gpu")
    assert c.cmd("add %d 1 500" % s_in) == "added"
    assert c.cmd("add %d 5 500" % s_gpu) == "added"
    assert value(sock, p + "/e/f", "inflight") == 500
    # charged after the last read: only the close's final fold sees it
    assert c.cmd("add %d 2 100" % s_gpu) == "added"
    c.exit()
    wait_for(lambda: value(sock, p + "/e/f", "inflight") == 0, "the release of inflight", timeout=60)
    assert value(sock, p + "/e/f", "gpu") == 2500 + 200
    assert value(sock, p + "/e", "inflight", "subtree") == 0


def test_slots_per_connection_cap(env, tree):
    """[api] max_charge_slots_per_connection slots on one connection, then
    ResourceLimitExceeded naming the key; another connection has its own."""
    sock, p = env["sock"], tree["path"]
    with Varlink(sock) as v:
        for _ in range(SLOTS_MAX):
            r = ok(v.call(IFACE + ".OpenChargeSlot", {"resource": "gpu", "cgroup": p + "/c"}))
            assert r == {"slot": 0}
        e = error(v.call(IFACE + ".OpenChargeSlot", {"resource": "gpu", "cgroup": p + "/c"}),
                  "io.acctd.Accounting.ResourceLimitExceeded")
        assert e == {"limit": "max_charge_slots_per_connection", "value": SLOTS_MAX}
        error(v.call(IFACE + ".OpenChargeSlot", {"resource": "nope", "cgroup": p}),
              "io.acctd.Accounting.NoSuchResource")
        error(v.call(IFACE + ".OpenChargeSlot", {"resource": "gpu", "cgroup": p + "/nope"}),
              "io.acctd.Accounting.NoSuchCgroup")
    c = Client(sock, os.path.join(tree["dir"], "c"))
    try:
        for i in range(SLOTS_MAX):
            assert c.open("gpu") == i
        r = c.cmd("open gpu")
        assert r.startswith("error "), r
    finally:
        c.exit()


def test_slot_outlives_connection(env, tree):
    """libacct-client's slots are independent of the connection: a slot of a
    resource without release_on_exit is still read after the connection
    closes, while its process lives; one with release_on_exit is released."""
    sock, p = env["sock"], tree["path"]
    c = Client(sock, os.path.join(tree["dir"], "c", "d"))
    try:
        g = c.open("gpu")
        i = c.open("inflight")
        assert c.cmd("add %d 3 100" % g) == "added"
        assert c.cmd("add %d 1 10" % i) == "added"
        open_before = slot_status(sock)["open"]
        assert c.cmd("disconnect") == "disconnected"
        wait_for(lambda: value(sock, p + "/c/d", "inflight") == 0, "the release of inflight", timeout=60)
        assert slot_status(sock)["open"] == open_before - 1
        assert c.cmd("add %d 3 100" % g) == "added"
        wait_for(lambda: value(sock, p + "/c/d", "gpu") == 600, "the orphan slot's fold", timeout=60)
    finally:
        c.exit()
    wait_for(lambda: slot_status(sock)["open"] == open_before - 2, "the orphan to go with its process",
             timeout=60)
    assert value(sock, p + "/c/d", "gpu") == 600


def test_history_counts_slots(env, tree):
    """The history records a slot's charges as Get serves them: folded
    before the recording (the value charged through the slot, not the last
    pass's fold of it) and with the slot's bound added to the engine's (a
    recorded bound without it understated the error)."""
    sock, p = env["sock"], tree["path"]
    c = Client(sock, os.path.join(tree["dir"], "a", "b"))
    try:
        s = c.open("gpu")
        assert c.cmd("add %d 4096 250" % s) == "added"
        want = 4096 * 250
        since = int(time.time() * 1e6) - 60 * 1000000

        def last_point():
            with Varlink(sock, timeout=60) as v:
                r = v.call(IFACE + ".History", {"cgroup": p + "/a/b", "since_us": since,
                                                "quantities": ["charges.gpu"]})
            if r.get("error") == IFACE + ".NoSuchCgroup":
                return None  # not recorded yet
            r = ok(r)
            pts = r["charges"][0]["points"] if r.get("charges") else []
            return pts[-1] if pts and pts[-1]["value"] == want else None
        pt = wait_for(last_point, "the slot's charge in the history", timeout=120)
        served = get(sock, p + "/a/b", precise=False)["gpu"]["subtree"]
        assert served["value"] == want
        assert pt["bound"] == served["bound"] > 0, (pt, served)
    finally:
        c.exit()
