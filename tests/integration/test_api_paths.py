"""Cgroup path confinement: hostile paths are refused with InvalidCgroupPath
and a reason, harmless spellings are normalised, and symlinks in the tree
that point outside it never lead to a read: the API only looks paths up in
the ledger, which holds what discovery found under the cgroup root."""
import os
import stat
import time

import pytest

import acctd
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


def real_v2_base():
    """Where this host's cgroup v2 tree is mounted (pure or hybrid), or None."""
    for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.exists(os.path.join(base, "cgroup.procs")) and \
                os.path.exists(os.path.join(base, "cgroup.subtree_control")):
            return base
    return None


@pytest.fixture
def siblings():
    """Real cgroups <top>/a, <top>/a/x, <top>/ab, <top>/ab/y (root only):
    "/a" and its sibling "/ab" both exist, each with a child."""
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    base = real_v2_base()
    if base is None:
        pytest.skip("no cgroup v2 hierarchy mounted here")
    name = "acctd-mutate-core-prefix-%d" % os.getpid()
    rel = ["", "/a", "/a/x", "/ab", "/ab/y"]
    made = []
    try:
        for r in rel:
            os.mkdir(base + "/" + name + r)
            made.append(base + "/" + name + r)
        yield "/" + name
    finally:
        for d in reversed(made):
            os.rmdir(d)


def test_prefix_whole_components(siblings, tmp_path):
    """A prefix matches whole components: List and Watch with prefix /a give
    /a and /a/x, never the sibling /ab or its child (issue 17: the boundary
    check of the prefix rule could be removed and no test failed)."""
    top = siblings
    a, ab = top + "/a", top + "/ab"
    with api_daemon(tmp_path, None, cgroups__include=top + "*") as (d, path):
        with Varlink(path) as v:
            deadline = time.monotonic() + 20
            while True:
                r = v.call(IFACE + ".List", {"prefix": top})
                got = {c["path"] for c in ok(r)["cgroups"]} if "error" not in r else set()
                if got == {top, a, a + "/x", ab, ab + "/y"}:
                    break
                assert time.monotonic() < deadline, got
                time.sleep(0.1)
            listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": a}))["cgroups"]}
            assert listed == {a, a + "/x"}
            listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": a + "/"}))["cgroups"]}
            assert listed == {a, a + "/x"}
            listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": a, "depth": 0}))["cgroups"]}
            assert listed == {a}
            listed = {c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": ab}))["cgroups"]}
            assert listed == {ab, ab + "/y"}
            # the start of a name is no prefix of it
            error(v.call(IFACE + ".List", {"prefix": top[:-1]}), IFACE + ".NoSuchCgroup")
        with Varlink(path) as v:
            v.send(IFACE + ".Watch", {"prefix": a, "interval_ms": 20}, more=True)
            first = v.recv()
            assert first["continues"] is True
            assert {c["path"] for c in ok(first)["cgroups"]} == {a, a + "/x"}
        with Varlink(path) as v:
            v.send(IFACE + ".Watch", {"prefix": ab, "interval_ms": 20}, more=True)
            assert {c["path"] for c in ok(v.recv())["cgroups"]} == {ab, ab + "/y"}


# ---- the listening socket's directory and mode (issue 27 item 4) -------------------

def start_refused(tmp_path, root, sock, env=None, wrapper=()):
    """acctd with --socket sock until it exits or is ready: (its exit
    status or None, its log)."""
    work = tmp_path / "work"
    work.mkdir()
    d = acctd.Daemon(work, root, acctd.fast_config(work), extra=["--socket", sock], env=env, wrapper=wrapper)
    try:
        end = time.monotonic() + 60
        while d.proc.poll() is None and not any(m.startswith("READY=1") for m in d.messages):
            assert time.monotonic() < end, "acctd neither exited nor got ready: " + d.logtext()
            time.sleep(0.05)
        return d.proc.poll(), d.logtext()
    finally:
        d.stop()


def assert_refused(result):
    rc, log = result
    assert rc is not None and rc != 0, "acctd started: " + log
    return log


def test_socket_directory_of_another_user_refused(fakecg, tmp_path):
    """A socket directory owned by another user (nobody), who could rename
    the socket and plant a symlink in its place: refused, the message naming
    the directory, its owner and its mode."""
    if not acctd.is_root():
        pytest.skip("needs root to give a directory to nobody")
    fakecg.mkdir("/a.service", memory=1 << 20, procs=[10])
    sdir = tmp_path / "theirs"
    sdir.mkdir(mode=0o755)
    os.chown(sdir, 65534, 65534)
    os.chmod(tmp_path, 0o755)
    log = assert_refused(start_refused(tmp_path, fakecg.root, str(sdir / "io.acctd")))
    assert "Refusing to make the socket %s/io.acctd: its directory %s is owned by uid 65534" % (sdir, sdir) in log, log
    assert "mode 0755" in log, log
    assert "chmod" not in log, log  # the directory is theirs: closing it is no remedy
    assert not (sdir / "io.acctd").exists()


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775])
def test_socket_directory_writable_by_others_refused(fakecg, tmp_path, mode):
    """A socket directory of acctd's own user that group or others may
    write (/tmp's 1777 too): refused with its mode, not repaired."""
    fakecg.mkdir("/a.service", memory=1 << 20, procs=[10])
    sdir = tmp_path / "open"
    sdir.mkdir()
    os.chmod(sdir, mode)
    log = assert_refused(start_refused(tmp_path, fakecg.root, str(sdir / "io.acctd")))
    assert "its directory %s is owned by uid %d" % (sdir, os.geteuid()) in log, log
    assert "with mode %04o" % mode in log and "not writable by group or others" in log, log
    assert os.stat(sdir).st_mode & 0o7777 == mode  # left as it was
    # a shared directory such as /tmp (sticky) is never to be closed
    assert ("chmod go-w %s" % sdir in log) == (not mode & 0o1000), log
    assert not (sdir / "io.acctd").exists()


def test_socket_is_public_in_a_private_directory(fakecg, tmp_path):
    """In a directory of its own (made now, or there before with 0755) the
    socket is 0666 after start."""
    fakecg.mkdir("/a.service", memory=1 << 20, procs=[10])
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        st = os.lstat(path)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666, oct(st.st_mode)
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o755
    made = tmp_path / "made" / "acctd"
    work = tmp_path / "w"
    work.mkdir()
    os.chmod(tmp_path, 0o755)
    with acctd.Daemon(work, fakecg.root, acctd.fast_config(work), extra=["--socket", str(made / "io.acctd")]) as d:
        d.wait_notify("READY=1", timeout=30)
        assert stat.S_IMODE(os.lstat(made / "io.acctd").st_mode) == 0o666
        assert stat.S_IMODE(os.stat(made).st_mode) == 0o755


def test_chmod_does_not_follow_a_planted_symlink(fakecg, tmp_path):
    """The socket's name replaced by a symlink to root's 0600 file right
    after bind() (tests/fault-preload.c's plant-symlink: the race of the
    issue, won every time): acctd refuses to start and the file keeps its
    mode and content. Before, chmod() followed the link and made it 0666."""
    from test_api_client import acctd_sanitizer
    from test_api_dispatch import fault_preload
    if acctd_sanitizer():  # gcc's runtime must come first; an instrumented shim before it aborts acctd
        pytest.skip("acctd is built with a sanitizer: the fault shim cannot be preloaded into it")
    fakecg.mkdir("/a.service", memory=1 << 20, procs=[10])
    secret = tmp_path / "secret"
    secret.write_text("root's own\n")
    os.chmod(secret, 0o600)
    fdir = tmp_path / "faults"
    fdir.mkdir()
    (fdir / "plant-symlink").write_text(str(secret))
    sdir = tmp_path / "sock"
    sdir.mkdir(mode=0o755)
    result = start_refused(tmp_path, fakecg.root, str(sdir / "io.acctd"), env={"ACCTD_FAULT_DIR": str(fdir)},
                           wrapper=["env", "LD_PRELOAD=" + fault_preload()])
    assert os.path.islink(sdir / "io.acctd")  # the shim did plant it
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600, oct(os.stat(secret).st_mode)
    assert secret.read_text() == "root's own\n"
    log = assert_refused(result)
    assert "Failed to make %s/io.acctd accessible to everyone (it was replaced by a symlink)" % sdir in log, log


def test_socket_activation_is_systemds_to_place(fakecg, tmp_path):
    """A socket passed by systemd (here systemd-socket-activate, in a 0777
    directory that acctd's own bind would refuse) is served as it is: its
    place is systemd's to choose, and the checks above are for acctd's own."""
    import shutil
    tool = shutil.which("systemd-socket-activate")
    if not tool:
        pytest.skip("needs systemd-socket-activate")
    fakecg.mkdir("/a.service", memory=1 << 20, procs=[10])
    sdir = tmp_path / "passed"
    sdir.mkdir()
    os.chmod(sdir, 0o777)
    os.chmod(tmp_path, 0o755)
    sock = str(sdir / "io.acctd")
    work = tmp_path / "w"
    work.mkdir()
    d = acctd.Daemon(work, fakecg.root, acctd.fast_config(work), wrapper=[tool, "-l", sock, "--fdname=varlink"],
                     extra=["--socket", str(tmp_path / "unused" / "io.acctd")])
    try:
        end = time.monotonic() + 30
        while not os.path.exists(sock):
            assert time.monotonic() < end and d.proc.poll() is None, d.logtext()
            time.sleep(0.05)
        with Varlink(sock, timeout=60) as v:  # the first connection starts acctd
            assert ok(v.call(IFACE + ".Status"))["status"]
        d.wait_log("Listening on the varlink socket passed by systemd")
        assert not (tmp_path / "unused").exists()
    finally:
        d.stop()
