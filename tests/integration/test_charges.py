"""Programs' charges through the varlink API (docs/charges.md), on this host's
real cgroups with a real acctd (root only): client processes moved into real
cgroups charge the same and nested cgroups concurrently (Charge, ChargeBatch),
and the totals are exact once they stop; a non-root client may charge its own
cgroup and those below it only; undeclared resources, hostile cgroup names,
batches refused whole; a client's exit with and without release; a cgroup's
removal with release and with reparent."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import acctd
from test_api_client import IFACE, Varlink, error, ok

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups and move processes")

RESOURCES = {
    # reparented on removal, kept when a client exits
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "64K", "resource.gpu__on_removal": "reparent",
    # released on removal and when a client exits
    "resource.inflight__unit": "count", "resource.inflight__budget": "16",
    "resource.inflight__release_on_exit": "yes",
    "api__max_charge_batch": "1000",
}

# A client: waits for "go" (sent once it is in its cgroup), then runs the
# calls given as JSON lines [method, parameters, repeat] and prints each
# distinct outcome; "hold" keeps the connection open until stdin closes.
CLIENT = r"""
import json, socket, sys
path = sys.argv[1]
sys.stdin.readline()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
buf = b""
def call(method, params):
    global buf
    s.sendall(json.dumps({"method": "io.acctd.Accounting." + method, "parameters": params}).encode() + b"\0")
    while b"\0" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    return json.loads(msg)
for line in sys.stdin:
    line = line.strip()
    if line == "hold":
        print("holding", flush=True)
        sys.stdin.readline()
        break
    if not line:
        break
    method, params, repeat = json.loads(line)
    seen = set()
    for _ in range(repeat):
        r = call(method, params)
        out = r.get("error", "ok")
        if out not in seen:
            seen.add(out)
            print(json.dumps({"outcome": out, "parameters": r.get("parameters")}), flush=True)
    print("done", flush=True)
"""


def memory_base():
    """Where to make real cgroups acctd tracks: the v1 memory hierarchy
    (hybrid hosts) or the v2 root; None when neither is writable."""
    for d in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup"):
        if os.path.exists(os.path.join(d, "cgroup.procs")) and os.access(d, os.W_OK):
            if d == "/sys/fs/cgroup" and not os.path.exists(os.path.join(d, "cgroup.controllers")):
                continue
            return d
    return None


SUBDIRS = ["", "a", "a/b", "c", "c/d", "e", "e/f"]


def rmtree_cgroups(top):
    """rmdir a cgroup directory and those below it, deepest first (cgroupfs
    refuses rm -r; a cgroup whose last process just exited may be busy)."""
    dirs = [dp for dp, _, _ in os.walk(top)]
    for d in sorted(dirs, key=len, reverse=True):
        for _ in range(100):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """One acctd for the file (a start on a host with thousands of cgroups
    takes a while), on the real cgroups under /acctd-charges-PID only, with
    its API socket and /metrics on a free port."""
    import socket as sk
    import tempfile
    from test_api_client import socket_dir
    base = memory_base()
    if base is None:
        pytest.skip("no writable cgroup hierarchy (v1 memory or v2) here")
    name = "acctd-charges-%d" % os.getpid()
    top = os.path.join(base, name)
    os.makedirs(top, exist_ok=True)
    with sk.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = tempfile.mkdtemp(prefix="daemon-", dir=str(tmp_path_factory.mktemp("charges")))
    conf = dict(RESOURCES, cgroups__include="/%s /%s/*" % (name, name), **{"resource.lease__unit": "seconds"})
    sock = os.path.join(socket_dir(), "io.acctd")
    d = acctd.Daemon(work, None, acctd.fast_config(work, **conf),
                     extra=["--socket", sock, "--metrics-listen", "127.0.0.1:%d" % port])
    try:
        d.wait_notify("READY=1", timeout=120)
        yield {"d": d, "sock": sock, "port": port, "dir": top, "path": "/" + name}
    finally:
        d.stop()
        shutil.rmtree(os.path.dirname(sock), ignore_errors=True)
        rmtree_cgroups(top)


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
            wait_for(lambda: charges(env["sock"], full) is not None, "acctd to track " + full, timeout=60)
        yield {"dir": top, "path": path}
    finally:
        rmtree_cgroups(top)


class Client:
    """A client process moved into `cgdir` before it connects."""

    def __init__(self, sock, cgdir, user=None):
        argv = [sys.executable, "-c", CLIENT, sock]
        if user:
            argv = ["setpriv", "--reuid", user, "--regid", user == "nobody" and "nogroup" or user,
                    "--clear-groups"] + argv
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        with open(os.path.join(cgdir, "cgroup.procs"), "w") as f:
            f.write(str(self.p.pid))
        self.p.stdin.write("go\n")
        self.p.stdin.flush()

    def run(self, method, params, repeat=1):
        """The outcomes of `repeat` calls: [{"outcome", "parameters"}, ...] (distinct)."""
        self.p.stdin.write(json.dumps([method, params, repeat]) + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            assert line, "client exited: %s" % self.p.poll()
            if line.strip() == "done":
                return out
            out.append(json.loads(line))

    def send(self, method, params, repeat=1):
        self.p.stdin.write(json.dumps([method, params, repeat]) + "\n")
        self.p.stdin.flush()

    def collect(self):
        out = []
        while True:
            line = self.p.stdout.readline()
            assert line, "client exited: %s" % self.p.poll()
            if line.strip() == "done":
                return out
            out.append(json.loads(line))

    def exit(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def wait_for(pred, what, timeout=30):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = pred()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def charges(sock, path, precise=True):
    with Varlink(sock) as v:
        r = v.call(IFACE + ".Get", {"cgroup": path, "precise": precise})
    if "error" in r:
        return None
    return r["parameters"].get("charges")


def value(sock, path, res, which="self"):
    c = charges(sock, path)
    return None if c is None else c[res][which]["value"]


@pytest.fixture
def daemon(env):
    return env["d"], env["sock"]


def test_concurrent_clients_exact(daemon, tree):
    """Four clients in three cgroups charge their own cgroups and those below
    them at once, by Charge and ChargeBatch; reads of an ancestor sampled
    meanwhile lie within their bound of the truth; once they stop, every
    precise value, own and subtree, is the sum of the deltas charged to it."""
    d, sock = daemon
    top, p = tree["dir"], tree["path"]
    clients = [Client(sock, top), Client(sock, top), Client(sock, os.path.join(top, "a")),
               Client(sock, os.path.join(top, "c"))]
    n = 300
    # top-level clients: own cgroup (no cgroup given) and a/b by a batch
    clients[0].send("Charge", {"resource": "gpu", "delta": 7}, n)
    clients[1].send("ChargeBatch", {"charges": [{"resource": "gpu", "delta": 3, "cgroup": p + "/a/b"},
                                                {"resource": "gpu", "delta": 5},
                                                {"resource": "inflight", "delta": 1, "cgroup": p + "/c/d"}]}, n)
    clients[2].send("Charge", {"resource": "gpu", "delta": 11, "cgroup": p + "/a/b"}, n)
    clients[3].send("ChargeBatch", {"charges": [{"resource": "gpu", "delta": -2}] * 4}, n)
    # sampled while they run: within the budget, read now; and the ancestor
    # a, whose subtree only grows here (3 and 11 to a/b), within its bound of
    # the truth: a precise read before and one after bracket the true value
    # at the approximate read (charges.h, the bound invariant)
    samples = 0
    while samples < 20:
        with Varlink(sock) as v:
            r = ok(v.call(IFACE + ".Get", {"cgroup": p}))
            g = r["charges"]["gpu"]["subtree"]
            assert g["bound"] <= 64 << 10 and g["age_us"] == 0
            v0 = ok(v.call(IFACE + ".Get", {"cgroup": p + "/a", "precise": True}))["charges"]["gpu"]["subtree"]
            a = ok(v.call(IFACE + ".Get", {"cgroup": p + "/a"}))["charges"]["gpu"]["subtree"]
            v1 = ok(v.call(IFACE + ".Get", {"cgroup": p + "/a", "precise": True}))["charges"]["gpu"]["subtree"]
        assert v0["value"] - a["bound"] <= a["value"] <= v1["value"] + a["bound"], (v0, a, v1)
        samples += 1
    for c in clients:
        outs = c.collect()
        assert [o["outcome"] for o in outs] == ["ok"], outs
    assert value(sock, p, "gpu") == n * (7 + 5)
    assert value(sock, p + "/a/b", "gpu") == n * (3 + 11)
    assert value(sock, p + "/a", "gpu") == 0
    assert value(sock, p + "/a", "gpu", "subtree") == n * (3 + 11)
    assert value(sock, p + "/c", "gpu") == -n * 8
    assert value(sock, p + "/c/d", "inflight") == n
    assert value(sock, p, "gpu", "subtree") == n * (7 + 5 + 3 + 11 - 8)
    # the ancestor above the test's tree holds it too (with the other tests')
    assert value(sock, p.rsplit("/", 1)[0], "gpu", "subtree") >= n * (7 + 5 + 3 + 11 - 8) - 1000
    c = charges(sock, p, precise=False)
    assert abs(c["gpu"]["subtree"]["value"] - n * 18) <= c["gpu"]["subtree"]["bound"]
    for cl in clients:
        cl.exit()
    # inflight is released as its client exits: back to 0 exactly
    wait_for(lambda: value(sock, p + "/c/d", "inflight") == 0, "the exited client's inflight released")
    assert value(sock, p + "/a/b", "gpu") == n * 14  # gpu is not released on exit


def test_non_root_permissions(daemon, tree):
    """nobody in c may charge c and c/d, not a or the parent; root may."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    d, sock = daemon
    top, p = tree["dir"], tree["path"]
    os.chmod(os.path.dirname(sock), 0o755)
    cl = Client(sock, os.path.join(top, "c"), user="nobody")
    assert cl.run("Charge", {"resource": "gpu", "delta": 4})[0]["outcome"] == "ok"
    assert cl.run("Charge", {"resource": "gpu", "delta": 6, "cgroup": p + "/c/d"})[0]["outcome"] == "ok"
    for target in (p + "/a", p, p.rsplit("/", 1)[0]):
        out = cl.run("Charge", {"resource": "gpu", "delta": 1, "cgroup": target})
        assert out[0]["outcome"] == "org.varlink.service.PermissionDenied", (target, out)
    # a batch with one entry it may not charge is refused whole
    out = cl.run("ChargeBatch", {"charges": [{"resource": "gpu", "delta": 100},
                                             {"resource": "gpu", "delta": 1, "cgroup": p + "/e"}]})
    assert out[0]["outcome"] == "org.varlink.service.PermissionDenied"
    cl.exit()
    assert value(sock, p + "/c", "gpu") == 4
    assert value(sock, p + "/c/d", "gpu") == 6
    assert value(sock, p + "/a", "gpu") == 0
    # root may name any cgroup
    with Varlink(sock) as v:
        ok(v.call(IFACE + ".Charge", {"resource": "gpu", "delta": 9, "cgroup": p + "/a"}))
    assert value(sock, p + "/a", "gpu") == 9


def test_errors_and_hostile_names(daemon, tree):
    d, sock = daemon
    p = tree["path"]
    with Varlink(sock) as v:
        e = error(v.call(IFACE + ".Charge", {"resource": "nope", "delta": 1, "cgroup": p}), IFACE + ".NoSuchResource")
        assert e == {"resource": "nope"}
        error(v.call(IFACE + ".Charge", {"resource": "gpu", "delta": 1.5, "cgroup": p}),
              "org.varlink.service.InvalidParameter")
        error(v.call(IFACE + ".Charge", {"resource": "gpu", "cgroup": p}), "org.varlink.service.InvalidParameter")
        error(v.call(IFACE + ".Charge", {"resource": "gpu", "delta": 1, "cgroup": p, "extra": 1}),
              "org.varlink.service.InvalidParameter")
        # sync: true is accepted, durable before the reply (test_charges_durable.py): charged and given back
        for delta in (1, -1):
            ok(v.call(IFACE + ".Charge", {"resource": "gpu", "delta": delta, "cgroup": p, "sync": True}))
        for hostile in ["../../etc", p + "/../..", "relative", p + "/a\u0000b", "/" + "x" * 5000, p + "/./a"]:
            error(v.call(IFACE + ".Charge", {"resource": "gpu", "delta": 1, "cgroup": hostile}),
                  IFACE + ".InvalidCgroupPath")
        for absent in [p + "/nonexistent", p + "/a/b/c/d/e", "/acctd-no-such-\u00e9\u4e2d"]:
            error(v.call(IFACE + ".Charge", {"resource": "gpu", "delta": 1, "cgroup": absent}),
                  IFACE + ".NoSuchCgroup")
        # a charge beyond the range is refused, nothing charged
        error(v.call(IFACE + ".Charge", {"resource": "gpu", "delta": (1 << 62) + 1, "cgroup": p + "/e"}),
              "org.varlink.service.InvalidParameter")
        # a batch with one bad entry: nothing of it is charged
        r = v.call(IFACE + ".ChargeBatch", {"charges": [{"resource": "gpu", "delta": 5, "cgroup": p + "/e"},
                                                        {"resource": "nope", "delta": 1, "cgroup": p + "/e"}]})
        error(r, IFACE + ".NoSuchResource")
        r = v.call(IFACE + ".ChargeBatch", {"charges": [{"resource": "gpu", "delta": 5, "cgroup": p + "/e"},
                                                        {"resource": "gpu", "delta": "x", "cgroup": p + "/e"}]})
        assert error(r, "org.varlink.service.InvalidParameter") == {"parameter": "charges[1].delta"}
        # over [api] max_charge_batch: refused whole, the connection goes on
        big = [{"resource": "gpu", "delta": 1, "cgroup": p + "/e"}] * 1001
        assert error(v.call(IFACE + ".ChargeBatch", {"charges": big}), IFACE + ".ResourceLimitExceeded") == {
            "limit": "max_charge_batch", "value": 1000}
        assert ok(v.call(IFACE + ".ChargeBatch", {"charges": big[:1000]})) == {"applied": 1000}
    assert value(sock, p + "/e", "gpu") == 1000


def test_removal_release_and_reparent(daemon, tree):
    d, sock = daemon
    p = tree["path"]
    # held open: inflight is released when the connection closes
    with Varlink(sock) as v:
        ok(v.call(IFACE + ".ChargeBatch", {"charges": [
            {"resource": "gpu", "delta": 100, "cgroup": p + "/e/f"},
            {"resource": "gpu", "delta": 10, "cgroup": p + "/e"},
            {"resource": "inflight", "delta": 7, "cgroup": p + "/e/f"},
            {"resource": "inflight", "delta": 1, "cgroup": p + "/e"}]}))
        assert value(sock, p, "inflight", "subtree") == 8
        os.rmdir(os.path.join(tree["dir"], "e", "f"))
        # gpu reparents: e's own value holds f's; inflight releases: e's subtree drops
        wait_for(lambda: value(sock, p + "/e", "gpu") == 110, "f's gpu reparented to e")
        assert value(sock, p + "/e", "gpu", "subtree") == 110
        assert value(sock, p + "/e", "inflight", "subtree") == 1
        assert value(sock, p, "inflight", "subtree") == 1
        os.rmdir(os.path.join(tree["dir"], "e"))
        wait_for(lambda: value(sock, p, "gpu") == 110, "e's gpu reparented to the top")
        assert value(sock, p, "inflight", "subtree") == 0
        # the removed cgroup cannot be charged (a tombstone is no target)
        error(v.call(IFACE + ".Charge", {"resource": "gpu", "delta": 1, "cgroup": p + "/e"}), IFACE + ".NoSuchCgroup")
    # the connection's net to the removed cgroups went with them: its close
    # releases nothing more (a later Get on a new connection follows the close)
    wait_for(lambda: value(sock, p, "inflight", "subtree") == 0, "nothing released twice")
    assert value(sock, p, "gpu", "subtree") == 110


def test_exit_release_after_removal(daemon, tree):
    """A client's net charge to a cgroup removed before it exits went with the
    removal; its exit releases nothing there (and never from a new cgroup
    under the same path)."""
    d, sock = daemon
    top, p = tree["dir"], tree["path"]
    cl = Client(sock, top)
    assert cl.run("Charge", {"resource": "inflight", "delta": 5, "cgroup": p + "/c/d"})[0]["outcome"] == "ok"
    assert cl.run("Charge", {"resource": "inflight", "delta": 2, "cgroup": p + "/a"})[0]["outcome"] == "ok"
    os.rmdir(os.path.join(top, "c", "d"))
    wait_for(lambda: value(sock, p + "/c", "inflight", "subtree") == 0, "d's inflight released on removal")
    os.mkdir(os.path.join(top, "c", "d"))
    wait_for(lambda: charges(sock, p + "/c/d") is not None, "the new c/d tracked")
    with Varlink(sock) as v:  # held open: its own charge stays until it closes
        ok(v.call(IFACE + ".Charge", {"resource": "inflight", "delta": 3, "cgroup": p + "/c/d"}))
        cl.exit()
        wait_for(lambda: value(sock, p + "/a", "inflight") == 0, "the client's inflight to a released")
        assert value(sock, p + "/c/d", "inflight") == 3
    wait_for(lambda: value(sock, p + "/c/d", "inflight") == 0, "root's own inflight released at its close")


def test_acctctl_charge_and_show(daemon, tree):
    """acctctl charge for scripts, and show printing the charged values."""
    from test_acctctl import acctctl_binary
    d, sock = daemon
    p = tree["path"]

    def ctl(*args):
        return subprocess.run([acctctl_binary(), "--address", "unix:" + sock, "--no-pager"] + list(args),
                              capture_output=True, text=True, timeout=60)
    r = ctl("charge", "gpu", "4242", "--cgroup", p + "/a")
    assert r.returncode == 0 and r.stdout == "", r
    r = ctl("charge", "gpu", "--cgroup", p + "/a", "--", "-42")
    assert r.returncode == 0, r
    assert value(sock, p + "/a", "gpu") == 4200
    r = ctl("charge", "nope", "1", "--cgroup", p)
    assert r.returncode != 0 and "No such resource: nope" in r.stderr, r
    r = ctl("charge", "gpu", "12x")
    assert r.returncode == 2 and "Invalid delta" in r.stderr, r
    # an option after "--" is an argument: said so, nothing charged
    r = ctl("charge", "gpu", "--", "-2", "--cgroup=" + p + "/a")
    assert r.returncode == 2 and "'--cgroup=%s/a' came after '--'" % p in r.stderr, r
    assert value(sock, p + "/a", "gpu") == 4200
    r = ctl("show", p)
    assert r.returncode == 0, r
    # RESOURCE UNIT SELF [BOUND] SUBTREE [BOUND] AGE EXACT: in the unit (bytes, read
    # from acctd's file), EXACT the integers self/subtree: p itself 0, its subtree a's 4200
    row = [line.split() for line in r.stdout.splitlines() if line.split()[:1] == ["gpu"]]
    assert len(row) == 1, r.stdout
    assert row[0][1] == "bytes" and row[0][-1] == "0/4200", r.stdout


def test_metrics(env, tree):
    """/metrics: acctd_charged and its bound for the charged cgroup and each
    ancestor (subtree), in base units."""
    import urllib.request
    sock, port, p = env["sock"], env["port"], tree["path"]
    with Varlink(sock) as v:
        ok(v.call(IFACE + ".ChargeBatch", {"charges": [
            {"resource": "gpu", "delta": 4096, "cgroup": p + "/a/b"},
            {"resource": "lease", "delta": 1500000, "cgroup": p + "/a"}]}))
    page = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60).read().decode()
    lines = set(page.splitlines())

    def has(cg, res, unit, scope, val):
        want = 'acctd_charged{cgroup="%s",resource="%s",unit="%s",scope="%s"} %s' % (cg, res, unit, scope, val)
        assert want in lines, (want, [x for x in lines if x.startswith("acctd_charged")])
    has(p + "/a/b", "gpu", "bytes", "self", "4096")
    has(p + "/a", "gpu", "bytes", "subtree", "4096")
    has(p, "gpu", "bytes", "subtree", "4096")
    has(p + "/a", "gpu", "bytes", "self", "0")
    has(p + "/a", "lease", "seconds", "self", "1.5")
    assert any(x.startswith('acctd_charged{cgroup="/",resource="gpu",unit="bytes",scope="subtree"}') for x in lines)
    assert any(x.startswith('acctd_charged_bound{cgroup="%s",resource="gpu"' % p) for x in lines)


# A program outside acctd, built with pkg-config alone (tests/test-pkg-config.py
# lays the library out as installed): it waits for "go" (sent once it is in
# its cgroup), charges its own cgroup through the API and through a slot, says
# "charged", and exits at "exit". On the way it charges an undeclared resource
# and reads acctd's error with acct_client_last_error().
PROGRAM = r"""
#include <acct-client.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct acct_client *c = NULL;
	struct acct_charge_slot *slot = NULL;
	char line[64];

	if (argc != 2 || !fgets(line, sizeof(line), stdin))
		return 1;
	if (acct_client_connect(argv[1], &c) < 0)
		return 2;
	if (acct_client_charge(c, "gpu", 1 << 20, NULL, 0) != 0)
		return 3;
	char *name = NULL, *text = NULL;
	if (acct_client_charge(c, "nosuch", 1, NULL, 0) != -ENOKEY || acct_client_last_error(&name, NULL, &text) != 1 ||
	    strcmp(name, "io.acctd.Accounting.NoSuchResource") != 0 || strncmp(text, "No such resource: nosuch", 24) != 0)
		return 6;
	free(name);
	free(text);
	if (acct_client_open_slot(c, "gpu", NULL, &slot) != 0 || acct_client_last_error(NULL, NULL, NULL) != 0)
		return 4;
	for (int i = 0; i < 1000; i++)
		acct_charge_slot_add(slot, 4096);
	puts("charged");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 5;
	acct_charge_slot_close(slot);
	acct_client_free(c);
	return 0;
}
"""


def test_pkg_config_program(env, tree, tmp_path):
    """Issue 32's first acceptance: a program linked against libacct-client
    through pkg-config charges a resource from inside a real cgroup (its own,
    found from its credentials: none named), through Charge and through a
    slot; `acctctl show` and /metrics show it for that cgroup and for its
    ancestors. Charging an undeclared resource, it reads acctd's error
    (name and words) with acct_client_last_error()."""
    import importlib.util
    import urllib.request
    from test_acctctl import acctctl_binary
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("pkgconfig_test", os.path.join(here, "..", "test-pkg-config.py"))
    pc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pc)
    build = os.path.dirname(os.path.dirname(os.path.dirname(acctd.binary())))
    try:
        exe, libdir, _ = pc.build_program(build, os.path.join(here, "..", ".."), str(tmp_path / "prefix"), PROGRAM)
    except pc.Skip as e:
        pytest.skip(str(e))
    sock, port, p = env["sock"], env["port"], tree["path"]
    prog = subprocess.Popen([exe, "unix:" + sock], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    try:
        with open(os.path.join(tree["dir"], "a", "b", "cgroup.procs"), "w") as f:
            f.write(str(prog.pid))
        prog.stdin.write("go\n")
        prog.stdin.flush()
        assert prog.stdout.readline().strip() == "charged", prog.poll()
        want = (1 << 20) + 1000 * 4096
        # Get folds the slot: the program's whole charge, in its own cgroup
        assert value(sock, p + "/a/b", "gpu") == want

        def show(cg):
            r = subprocess.run([acctctl_binary(), "--address", "unix:" + sock, "--no-pager", "show", cg],
                               capture_output=True, text=True, timeout=60, env=dict(os.environ, LC_ALL="C"))
            assert r.returncode == 0, r
            row = [line.split() for line in r.stdout.splitlines() if line.split()[:1] == ["gpu"]]
            assert len(row) == 1, r.stdout
            # RESOURCE UNIT SELF [BOUND] SUBTREE [BOUND] AGE EXACT: EXACT is self/subtree
            return row[0][-1].split("/")
        # a/b itself, a and p by their subtrees
        assert show(p + "/a/b") == [str(want), str(want)]
        assert show(p + "/a") == ["0", str(want)]
        assert show(p) == ["0", str(want)]
        page = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60).read().decode()
        lines = set(page.splitlines())
        for cg, scope in ((p + "/a/b", "self"), (p + "/a/b", "subtree"), (p + "/a", "subtree"), (p, "subtree")):
            want_line = 'acctd_charged{cgroup="%s",resource="gpu",unit="bytes",scope="%s"} %d' % (cg, scope, want)
            assert want_line in lines, (want_line, sorted(x for x in lines if x.startswith("acctd_charged{")))
    finally:
        if prog.poll() is None:
            prog.stdin.write("exit\n")
            prog.stdin.flush()
        assert prog.wait(timeout=60) == 0
