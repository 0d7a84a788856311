"""The dispatcher's rules (daemon/acctd/api-dispatch.c), all against one
daemon on real cgroups (root only): interface and method resolution, the
flags a method needs, unknown and doubled parameters, cgroup path
parameters, and who may administer. After every refusal the connection
answers the next call with that call's reply: a refusal is one reply,
never one followed by the method running anyway. A reply that passes a
descriptor (api_reply_fd(), OpenChargeSlot) carries it with its own first
byte, and a oneway call's passes none.

One daemon for the module, so that the mutation check (tools/mutate) can
run this file for every mutant of the dispatcher in seconds."""
import array
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

import acctd
from test_api_client import IFACE, SERVICE, Varlink, acctd_sanitizer, api_daemon, error, ok, socket_dir, still_serves
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
        # a resource, for OpenChargeSlot (the replies with a descriptor)
        with api_daemon(tmp, None, cgroups__include=top + "*", api__admin_group="adm",
                        **{"resource.gpu__unit": "bytes", "resource.gpu__budget": "64K"}) as (d, path):
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
        # the doubled name is the error named, before an unknown parameter
        p = error(v.call(IFACE + ".List", {"bogus": 1, "includeDead": True, "include_dead": True}), INVALID)
        assert p["parameter"] == "includeDead"
        answers_next(v)
        assert len(ok(v.call(IFACE + ".List", {"prefix": top, "includeDead": False}))["cgroups"]) == 3
    # the deprecation is logged once, not at every use
    assert d.wait_log("parameter includeDead is deprecated").count("parameter includeDead is deprecated") == 1


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


# ---- replies with a descriptor (api_reply_fd(): OpenChargeSlot's memfd) ----

def recv_fds(v, count):
    """The next `count` messages of v's connection, read with recvmsg() so
    that each descriptor (SCM_RIGHTS) is seen with the read that carried it.
    Returns (messages, starts, reads): the stream offset where each message
    begins, and each read as (offset of its first byte, offset past its last,
    descriptors), offsets counted from the first of these messages. Raises
    socket.timeout when they do not come."""
    assert v.buf == b"", "messages read before"
    data, reads = b"", []
    while data.count(b"\0") < count:
        chunk, anc, flags, _ = v.sock.recvmsg(1 << 16, socket.CMSG_SPACE(4 * array.array("i").itemsize))
        fds = []
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += array.array("i", payload[:len(payload) - len(payload) % 4]).tolist()
        assert not flags & socket.MSG_CTRUNC, "more descriptors than room for them"
        assert chunk or fds, "connection closed after %r" % data
        reads.append((len(data), len(data) + len(chunk), fds))
        data += chunk
    parts = data.split(b"\0")
    v.buf = b"\0".join(parts[count:])
    starts = [0]
    for m in parts[:count - 1]:
        starts.append(starts[-1] + len(m) + 1)
    return [json.loads(m) for m in parts[:count]], starts, reads


def received(reads):
    """The descriptors of `reads` (recv_fds()), closed here: [(read's
    index, what the descriptor is)]."""
    out = []
    for i, (_, _, fds) in enumerate(reads):
        for fd in fds:
            out.append((i, os.readlink("/proc/self/fd/%d" % fd)))
            os.close(fd)
    return out


def recv_fds_call(v, method, params=None, **flags):
    """A call and its reply, by recv_fds()."""
    v.send(method, params, **flags)
    return recv_fds(v, 1)


def slots_opened(v):
    """Status's count of charge slots opened since the start."""
    (r,), _, reads = recv_fds_call(v, IFACE + ".Status")
    assert received(reads) == []
    return ok(r)["status"]["charge_slots"]["opened"]


def test_slot_reply_descriptor(api):
    """OpenChargeSlot's reply passes the slot's memfd: the reply, and one
    descriptor with it, in the read of the reply's first byte; the next
    call's reply comes without one (a reply returned without its message,
    the descriptor left queued, would give the client no reply and hand the
    descriptor to the next)."""
    path, top, d = api
    with Varlink(path, timeout=5) as v:
        (r,), starts, reads = recv_fds_call(v, IFACE + ".OpenChargeSlot", {"resource": "gpu", "cgroup": top})
        assert ok(r) == {"slot": 0}
        got = received(reads)
        assert [i for i, _ in got] == [0], (got, reads)
        assert got[0][1].startswith("/memfd:acctd-charge-slot"), got
        (r,), _, reads = recv_fds_call(v, SERVICE + ".GetInfo")
        assert ok(r)["vendor"] == "acctd" and received(reads) == []


def test_slot_reply_oneway(api):
    """A oneway OpenChargeSlot opens the slot (Status counts it) but has no
    reply, so it passes no descriptor either: queued, the descriptor would
    go with the next reply's first byte, the next call's, which a client
    takes for that call's own. The connection answers its next calls
    normally, none with a descriptor."""
    path, top, d = api
    with Varlink(path, timeout=5) as v:
        before = slots_opened(v)
        v.send(IFACE + ".OpenChargeSlot", {"resource": "gpu", "cgroup": top}, oneway=True)
        (r,), _, reads = recv_fds_call(v, IFACE + ".Status")
        assert received(reads) == [], reads
        assert ok(r)["status"]["charge_slots"]["opened"] == before + 1
        (r,), _, reads = recv_fds_call(v, SERVICE + ".GetInfo")
        assert ok(r)["vendor"] == "acctd" and received(reads) == []


def test_slot_reply_pipelined(api):
    """OpenChargeSlot right behind another call in one write: the earlier
    call's reply is still queued when the slot's is made, so the descriptor
    goes at the stream offset past the queued bytes (those already sent
    plus those queued), the slot reply's first byte, never the earlier
    reply's: the read that carries it holds that byte. Twice on one
    connection, the second time with bytes sent before."""
    path, top, d = api
    call = lambda method, params: json.dumps({"method": method, "parameters": params}).encode() + b"\0"
    with Varlink(path, timeout=5) as v:
        for _ in range(2):
            v.send_raw(call(SERVICE + ".GetInfo", {}) +
                       call(IFACE + ".OpenChargeSlot", {"resource": "gpu", "cgroup": top}))
            (info, r), starts, reads = recv_fds(v, 2)
            assert ok(info)["vendor"] == "acctd"
            assert ok(r) == {"slot": 0}
            got = received(reads)
            assert len(got) == 1 and got[0][1].startswith("/memfd:"), (got, reads)
            first, end, _ = reads[got[0][0]]
            assert first <= starts[1] < end, ("the descriptor came with bytes %d..%d, the slot reply "
                                              "begins at %d" % (first, end, starts[1]), reads)


# ---- faults the kernel cannot be made to produce: tests/fault-preload.c ----

def fault_preload():
    """The fault shim, built next to the daemon under test (build/tests/)."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(acctd.binary()))))
    path = os.path.join(build, "tests", "acctd-fault-preload.so")
    assert os.path.exists(path), "%s is not built (ninja -C %s tests/acctd-fault-preload.so)" % (path, build)
    return path


@contextlib.contextmanager
def faulty_daemon(tmp, top, wrapper=(), **conf):
    """acctd with the fault shim preloaded, on the real cgroups under `top`;
    yields (daemon, socket path, fault directory)."""
    fdir = str(tmp / "faults")
    os.mkdir(fdir)
    sdir = socket_dir()
    path = os.path.join(sdir, "io.acctd")
    config = acctd.fast_config(str(tmp), cgroups__include=top + "*", **conf)
    # preloaded into acctd alone, not the wrapper's programs (in a sanitizer
    # build the shim is instrumented too, and only acctd has the runtime)
    d = acctd.Daemon(str(tmp), None, config, extra=["--socket", path],
                     wrapper=list(wrapper) + ["env", "LD_PRELOAD=" + fault_preload()],
                     env={"ACCTD_FAULT_DIR": fdir})
    try:
        d.wait_notify("READY=1", timeout=30)
        yield d, path, fdir
    finally:
        d.stop()
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(sdir)


ENOMEM_CLOSE = "Closing connection of uid 0: Cannot allocate memory"


def sweep(d, path, fdir, method, params, same, more=False):
    """Fail each allocation of one call in turn, the first, then the second,
    ..., until the call makes no more. Each time the client gets either the
    reply it gets without a fault (same(reply) is true) or, with no reply at
    all, a closed connection that the daemon logs as out of memory: never
    another reply, an error included. Returns how many allocations there were
    and how many of their failures closed the connection."""
    done = os.path.join(fdir, "fail-alloc.done")
    closed = 0
    base = d.logtext().count(ENOMEM_CLOSE)
    for n in range(10000):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(done)
        with open(os.path.join(fdir, "fail-alloc.tmp"), "w") as f:
            f.write("%d\n" % n)
        os.rename(os.path.join(fdir, "fail-alloc.tmp"), os.path.join(fdir, "fail-alloc"))
        with Varlink(path) as v:
            v.send(method, params, **({"more": True} if more else {}))
            reply = v.recv()
        end = time.monotonic() + 10
        while not os.path.exists(done):
            assert time.monotonic() < end, (method, n, "the shim reported nothing", reply, d.logtext()[-1500:])
            time.sleep(0.005)
        with open(done) as f:
            failed = f.read().strip() == "failed"
        if reply is None:
            assert failed, (method, n, "closed without a fault")
            closed += 1
            log = d.wait_log(ENOMEM_CLOSE, count=base + closed)
            assert log.count(ENOMEM_CLOSE) == base + closed, (method, n, log[-2000:])
        else:
            assert isinstance(reply, dict) and same(reply), (method, n, reply)
        if not failed:
            assert "Closing connection of uid 0: Invalid argument" not in d.logtext()
            return n, closed
    raise AssertionError("%s: no end of allocations" % method)


def test_out_of_memory(tmp_path):
    """An allocation failing anywhere in a call's dispatch and reply closes
    that connection (the daemon says why), and the daemon goes on serving:
    the client never gets a reply that is wrong, an error that blames its
    call, or a message that is not a reply."""
    base = real_v2_base()
    if base is None:
        pytest.skip("no cgroup v2 hierarchy mounted here")
    if acctd_sanitizer():  # its allocator is linked into acctd, before any preloaded one
        pytest.skip("acctd is built with a sanitizer: its allocator comes before the fault shim's")
    top = "/acctd-mutate2-oom-%d" % os.getpid()
    made = []
    try:
        for rel in ("", "/a", "/gone"):
            os.mkdir(base + top + rel)
            made.append(base + top + rel)
        with faulty_daemon(tmp_path, top, api__max_watch_cgroups="2") as (d, path, fdir):
            d.wait(lambda doc: top + "/gone" in acctd.by_path(doc), what="the cgroups discovered")
            os.rmdir(made.pop())
            d.wait(lambda doc: acctd.by_path(doc)[top + "/gone"]["state"] == "dead", what="/gone dead")
            calls = [
                # first: the daemon's first text reply (its buffer grows)
                ("get", IFACE + ".Get", {"cgroup": top},
                 lambda r, ref: "error" not in r and r["parameters"]["cgroup"]["path"] == top),
                # no parameters object: the dispatcher makes an empty one
                ("no parameters", IFACE + ".Get", None, lambda r, ref: r == ref),
                ("missing", IFACE + ".Get", {"cgroup": top + "/nope"}, lambda r, ref: r == ref),
                ("bad path", IFACE + ".Get", {"cgroup": "a"}, lambda r, ref: r == ref),
                # every member allocated and checked (json-c aborts on a NULL one)
                ("getinfo", SERVICE + ".GetInfo", {}, lambda r, ref: r == ref),
                # a budget's refusal (ResourceLimitExceeded): max_watch_cgroups is 2 here
                ("limit", IFACE + ".Watch", {"cgroups": [top, top, top]}, lambda r, ref: r == ref),
                # a deprecated name renamed in place; the dead cgroup shows it was taken
                ("dead", IFACE + ".List", {"prefix": top, "includeDead": True},
                 lambda r, ref: "error" not in r and
                 sorted(c["path"] for c in r["parameters"]["cgroups"]) == [top, top + "/a", top + "/gone"]),
            ]
            for name, method, params, same in calls:
                ref = None
                more = method.endswith(".Watch")
                if name != "get":
                    with Varlink(path) as v:
                        v.send(method, params, **({"more": True} if more else {}))
                        ref = v.recv()
                n, closed = sweep(d, path, fdir, method, params, lambda r: same(r, ref), more=more)
                print("%s: %d allocations, %d of their failures closed the connection" % (name, n, closed))
                assert n > 0 and closed > 0, (name, n, closed)
            still_serves(path)
            assert d.proc.poll() is None
    finally:
        for p in reversed(made):
            os.rmdir(p)


# The files that stand in for /etc/passwd and /etc/group in a mount namespace
# of the daemon's own (and of the probe below): users and a group of this test,
# whatever the host's databases hold.
BIND_DATABASES = 'mount --bind "$1" /etc/passwd && mount --bind "$2" /etc/group && shift 2 && exec "$@"'

# The smallest buffer getpwuid_r() takes for a user (binary search).
PW_BUFFER_PROBE = r"""
import ctypes, sys
libc = ctypes.CDLL(None)
class Passwd(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("passwd", ctypes.c_char_p), ("uid", ctypes.c_uint),
                ("gid", ctypes.c_uint), ("gecos", ctypes.c_char_p), ("dir", ctypes.c_char_p),
                ("shell", ctypes.c_char_p)]
def fits(size):
    pw, res, buf = Passwd(), ctypes.POINTER(Passwd)(), ctypes.create_string_buffer(size)
    return libc.getpwuid_r(int(sys.argv[1]), ctypes.byref(pw), buf, size, ctypes.byref(res)) == 0 and bool(res)
lo, hi = 1, 1 << 16
assert fits(hi)
while lo < hi:
    mid = (lo + hi) // 2
    lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
print(lo)
"""


def in_databases(pw, gr):
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", BIND_DATABASES, "sh", pw, gr]


@pytest.mark.skipif(shutil.which("setpriv") is None or shutil.which("unshare") is None,
                    reason="needs setpriv and unshare (util-linux)")
def test_admin_without_peergroups(tmp_path):
    """Where the kernel lacks SO_PEERGROUPS (before 4.13: getsockopt() fails
    with ENOPROTOOPT), the admin group's members are those of the group
    database: a user listed in the group (as the only entry in the buffer
    is_admin() gives getpwuid_r(): 4096 bytes, exactly filled) administers
    with no supplementary group at all; one who is not listed does not, even
    with the group among the process's own groups. With SO_PEERGROUPS the
    same daemon goes by the process's groups."""
    if real_v2_base() is None:
        pytest.skip("no cgroup v2 hierarchy mounted here")
    adm, member, plain = 64700, 64701, 64702
    with open("/etc/passwd") as f:
        passwd = f.read()
    with open("/etc/group") as f:
        group = f.read()
    pw, gr = str(tmp_path / "passwd"), str(tmp_path / "group")

    def write(gecos_len):
        with open(pw, "w") as f:
            f.write(passwd + "acctd-m2-member:x:%d:%d:%s:/nonexistent:/usr/sbin/nologin\n"
                    % (member, member, "g" * gecos_len))
            f.write("acctd-m2-plain:x:%d:%d::/nonexistent:/usr/sbin/nologin\n" % (plain, plain))
        with open(gr, "w") as f:
            f.write(group + "acctd-m2-adm:x:%d:acctd-m2-member\n" % adm)
            f.write("acctd-m2-member:x:%d:\nacctd-m2-plain:x:%d:\n" % (member, plain))

    def needed():
        p = subprocess.run(in_databases(pw, gr) + [sys.executable, "-c", PW_BUFFER_PROBE, str(member)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return int(p.stdout)

    write(3900)
    write(3900 + 4096 - needed())
    assert needed() == 4096

    top = "/acctd-mutate2-none-%d" % os.getpid()  # nothing to track: only access is tested
    with faulty_daemon(tmp_path, top, wrapper=in_databases(pw, gr), api__admin_group="acctd-m2-adm") as (d, path, fdir):
        def admin(args):
            r = run_as(path, ["--reuid=%d" % args[0], "--regid=%d" % args[1]] + args[2:])
            verdicts = {name: "error" not in r[name] for name in ("Tune", "Reconcile", "Reload")}
            assert len(set(verdicts.values())) == 1, (args, r)
            if not verdicts["Tune"]:
                assert all(r[name].get("error") == DENIED for name in verdicts), (args, r)
            return verdicts["Tune"]

        listed = [member, member, "--clear-groups"]
        by_process = [plain, plain, "--groups=%d" % adm]
        nowhere = [plain, plain, "--clear-groups"]
        primary = [plain, adm, "--clear-groups"]
        # the kernel's record of the process's groups
        assert [admin(a) for a in (listed, by_process, nowhere, primary)] == [False, True, False, True]
        open(os.path.join(fdir, "no-peergroups"), "w").close()
        # the group database's
        assert [admin(a) for a in (listed, by_process, nowhere, primary)] == [True, False, False, True]
