"""acctd --bpf-pin on this host's kernel: the privileged step that pins the BPF
cgroup iterator in bpffs for an unprivileged daemon (docs/systemd.md, "BPF:
the privilege split").

Real kernel, real bpffs, real cgroups; each test pins into a directory of its
own under /sys/fs/bpf (named after the test), removed afterwards, and leaves
its report (why nothing was pinned) in a file of its own. Skips where not
root or where the kernel cannot load the iterator (no BTF, no BPF).

Where BPF is unavailable (issue 27, item 8) the tests make it so in a mount
namespace of their own (unshare -m): /sys read-only without bpffs and without
CAP_SYS_ADMIN to mount one (systemd-nspawn's defaults), a read-only bpffs
holding pins of an earlier run, bpf() refused (no CAP_BPF). With
collector = auto --bpf-pin must exit 0 saying why in one line, and the daemon
then reads files with that reason in Status; with collector = bpf it fails."""
import os
import re
import shutil
import stat
import struct
import subprocess
import tempfile

import pytest

import acctd
from bpf_record import records  # tests/bpf_record.py
from test_api_client import IFACE, Varlink

BPFFS = "/sys/fs/bpf"
HIERARCHIES = ("unified", "memory", "cpuacct", "cpu", "blkio")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="acctd --bpf-pin loads a BPF program: needs root"),
    pytest.mark.skipif(not os.path.exists("/sys/kernel/btf/vmlinux"),
                       reason="no kernel BTF (/sys/kernel/btf/vmlinux): the iterator cannot load"),
]
needs_tools = pytest.mark.skipif(not (shutil.which("unshare") and shutil.which("setpriv")),
                                 reason="needs unshare and setpriv (util-linux)")


def mounted_hierarchies(output):
    """The hierarchies --bpf-pin reported on, pinned or not."""
    return [h for h in HIERARCHIES if re.search(r"^%s: (pinned at|not pinned)" % h, output, re.M)]


@pytest.fixture
def pin(tmp_path, request):
    """pin(collector="auto", env=None) runs acctd --bpf-pin with a pin
    directory of this test's own; .dir is that directory."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", request.node.name)
    pin_dir = os.path.join(BPFFS, "acctd-test-bpf-pin-%d-%s" % (os.getpid(), name))

    # Readable by nobody: a daemon run as nobody reads the report.
    home = tempfile.mkdtemp(prefix="acctd-test-bpf-pin-")
    os.chmod(home, 0o755)
    report = os.path.join(home, "report")

    def run(collector="auto", env=None, pin_dir=pin_dir, inside=None):
        """inside: a shell script run first in a mount namespace of its own,
        then acctd --bpf-pin under `setpriv $PRIV` (PRIV in env)."""
        conf = acctd.write_config(os.path.join(home, "acctd.conf"),
                                  {"sampling": {"collector": collector, "bpf_pin_dir": pin_dir}})
        os.chmod(conf, 0o644)
        e = {"ACCTD_BPF_PIN_REPORT": report}
        e.update(env or {})
        args = ["--bpf-pin", "--config", conf, "--config-dropins", ""]
        # acctd.service's UMask=
        if inside is None:
            return acctd.run(args, env=e, preexec_fn=lambda: os.umask(0o077))
        env_all = dict(os.environ, **e)
        env_all.pop("NOTIFY_SOCKET", None)
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                               inside + '\nexec setpriv ${PRIV:---} "$@"', "sh", acctd.binary()] + args,
                              capture_output=True, text=True, timeout=60, env=env_all,
                              preexec_fn=lambda: os.umask(0o077))

    run.dir = pin_dir
    run.home = home
    run.report = report
    yield run
    for h in HIERARCHIES + ("tasks",):
        try:
            os.unlink(os.path.join(pin_dir, h))
        except FileNotFoundError:
            pass
    try:
        os.rmdir(pin_dir)
    except FileNotFoundError:
        pass
    shutil.rmtree(home)


def pin_or_skip(pin):
    p = pin()
    out = p.stdout + p.stderr
    if p.returncode == 0 and "pinned at" not in p.stdout:
        pytest.skip("the kernel does not load the iterator here: " + out.strip().replace("\n", "; "))
    assert p.returncode == 0, out
    return p


def test_pins_are_0644_one_per_hierarchy(pin):
    p = pin_or_skip(pin)
    hiers = mounted_hierarchies(p.stdout)
    assert hiers, p.stdout
    assert stat.S_IMODE(os.stat(pin.dir).st_mode) == 0o755
    for h in hiers:
        path = os.path.join(pin.dir, h)
        assert "%s: pinned at %s" % (h, path) in p.stdout, p.stdout
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644, path
    # and the task iterator beside them, for threads and load
    tasks = os.path.join(pin.dir, "tasks")
    assert "threads: pinned at %s" % tasks in p.stdout, p.stdout
    assert stat.S_IMODE(os.stat(tasks).st_mode) == 0o644, tasks
    # The memory hierarchy's memory.stat keys were mapped before pinning, so
    # the pinned program copies per-node values.
    assert re.search(r"^(memory|unified): \d+ memory.stat keys mapped .*, [1-9]\d* per-node items$", p.stdout,
                     re.M), p.stdout


def test_second_run_replaces_the_pins(pin):
    p = pin_or_skip(pin)
    pins = mounted_hierarchies(p.stdout) + ["tasks"]
    before = {h: os.stat(os.path.join(pin.dir, h)).st_ino for h in pins}
    p2 = pin()
    assert p2.returncode == 0, p2.stdout + p2.stderr
    after = {h: os.stat(os.path.join(pin.dir, h)).st_ino for h in pins}
    assert all(before[h] != after[h] for h in pins), (before, after)
    assert sorted(os.listdir(pin.dir)) == sorted(pins)


def test_collector_files_removes_the_pins(pin):
    pin_or_skip(pin)
    assert os.listdir(pin.dir)
    p = pin(collector="files")
    assert p.returncode == 0, p.stdout + p.stderr
    assert not os.path.exists(pin.dir), os.listdir(pin.dir)
    assert re.search(r"collector = files: nothing pinned, [1-9]\d* earlier pins removed", p.stdout), p.stdout
    # And again, with nothing left to remove.
    p = pin(collector="files")
    assert p.returncode == 0 and "0 earlier pins removed" in p.stdout, p.stdout + p.stderr


def read_as_nobody(path):
    """The bytes uid/gid 65534, without supplementary groups or
    capabilities, reads from path in one read(); None if it cannot.

    One read(), not a loop to the end: the kernel's cgroup iterator returns
    at most one session (8 pages) per read() and refuses to resume a walk in
    a second read() (EOPNOTSUPP), so on a host with more cgroups than fit a
    session a loop would fail for the kernel's sake, not the permission's."""
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            with open(path, "rb", buffering=0) as f:
                data = f.read(1 << 20)
            while data:
                data = data[os.write(w, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(child, 0)
    return data if os.waitstatus_to_exitcode(status) == 0 else None


def assert_whole_records(h, data):
    assert data is not None, "uid 65534 could not read the %s pin" % h
    assert len(data) > 0, "the %s pin gave nothing" % h
    try:
        records(data)
    except ValueError as e:
        pytest.fail("%s: %s" % (h, e))


def test_unprivileged_user_reads_whole_records(pin):
    p = pin_or_skip(pin)
    for h in mounted_hierarchies(p.stdout):
        assert_whole_records(h, read_as_nobody(os.path.join(pin.dir, h)))
    # The task iterator's: whole 48-byte records (struct acct_task_record),
    # each thread's cgroup filled in for every mounted hierarchy.
    data = read_as_nobody(os.path.join(pin.dir, "tasks"))
    assert data and len(data) % 48 == 0, None if data is None else len(data)
    slots = [i for i, h in enumerate(HIERARCHIES) if h in mounted_hierarchies(p.stdout)]
    for off in range(0, len(data), 48):
        tid, flags, *cgroups = struct.unpack_from("=II5Q", data, off)
        assert tid > 0 and all(cgroups[i] for i in slots), (tid, flags, cgroups)


def test_pin_dir_below_a_0700_directory(pin):
    """systemd mounts bpffs with mode 0700: --bpf-pin gives the directories
    above its pins search permission (not read), or the daemon's user could
    not reach them."""
    parent = pin.dir + "-0700"
    os.mkdir(parent, 0o700)
    try:
        p = pin(pin_dir=parent + "/acctd")
        if p.returncode == 0 and "pinned at" not in p.stdout:
            pytest.skip("the kernel does not load the iterator here")
        assert p.returncode == 0, p.stdout + p.stderr
        assert stat.S_IMODE(os.stat(parent).st_mode) == 0o711
        assert_whole_records("memory", read_as_nobody(parent + "/acctd/memory"))
        p = pin(collector="files", pin_dir=parent + "/acctd")
        assert p.returncode == 0 and not os.path.exists(parent + "/acctd"), p.stdout + p.stderr
    finally:
        for h in HIERARCHIES:
            try:
                os.unlink(os.path.join(parent, "acctd", h))
            except FileNotFoundError:
                pass
        for d in (parent + "/acctd", parent):
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass


def test_verifier_rejection_auto_starts_bpf_refuses(pin):
    """A program the kernel refuses: with collector = auto the service must
    still start (exit 0, nothing pinned, files); with bpf it must not."""
    pin_or_skip(pin)  # and stale pins of an earlier run are there
    reject = {"ACCTD_TEST_BPF_REJECT": "1"}
    p = pin(env=reject)
    assert p.returncode == 0, p.stdout + p.stderr
    # (The reason's wording is the collector's: the verifier refuses this one
    # with EACCES, which reads as "not permitted".)
    # One line: the reason is the same for every hierarchy.
    lines = p.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "nothing pinned: the daemon reads cgroupfs files (collector = auto; BPF is unavailable: loading the BPF "
        "program: "), p.stdout
    assert not os.path.exists(pin.dir) or not os.listdir(pin.dir), "stale pins left behind"
    p = pin(collector="bpf", env=reject)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "nothing pinned and collector = bpf" in p.stdout, p.stdout


def test_pin_dir_outside_bpffs_is_an_error(pin, tmp_path):
    pin_or_skip(pin)
    p = pin(pin_dir=str(tmp_path / "not-bpffs"))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "is not on a bpf file system" in p.stderr + p.stdout, p.stdout + p.stderr


def test_not_root_says_it_needs_root(tmp_path):
    """Run as nobody, --bpf-pin says it needs root instead of a bare errno."""
    conf = acctd.write_config(str(tmp_path / "acctd.conf"), {"sampling": {"bpf_pin_dir": BPFFS + "/acctd-nobody"}})
    os.chmod(str(tmp_path), 0o755)
    os.chmod(conf, 0o644)
    p = acctd.run(["--bpf-pin", "--config", conf, "--config-dropins", ""],
                  preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "needs root" in p.stdout + p.stderr, p.stdout + p.stderr
    assert not os.path.exists(BPFFS + "/acctd-nobody")


# ---- BPF unavailable (issue 27, item 8) ---------------------------------------------------------

def report_of(pin):
    with open(pin.report) as f:
        return f.read().split("\n")


def daemon_collectors(pin):
    """Status's collectors of a daemon run as nobody without capabilities
    (as acctd.service runs it) with pin.dir and pin.report."""
    conf = acctd.write_config(os.path.join(pin.home, "daemon.conf"), {
        "sampling": {"bpf_pin_dir": pin.dir, "fast_interval": "200ms"},
        "cgroups": {"include": "/acctd-test-bpf-pin-none*"},
    })
    os.chmod(conf, 0o644)
    home = os.path.join(pin.home, "d")
    os.mkdir(home)
    # The daemon's own (its socket is made only where no one else can write).
    os.chown(home, 65534, 65534)
    os.chmod(home, 0o755)
    d = acctd.Daemon(home, None, conf, env={"ACCTD_BPF_PIN_REPORT": pin.report},
                     wrapper=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"))
    try:
        d.wait_notify("READY=1", timeout=60)
        with Varlink(d.socket, timeout=60) as v:
            r = v.call(IFACE + ".Status", {})
        assert "error" not in r, r
    finally:
        assert d.stop() == 0, d.logtext()
    # read once acctd has exited: its log thread has written every line
    return {c["hierarchy"]: c for c in r["parameters"]["status"]["collectors"]}, d.logtext()


# systemd-nspawn's defaults: /sys read-only, no bpffs, no CAP_SYS_ADMIN to
# mount one (nor CAP_BPF: the pin step never gets that far).
NSPAWN_LIKE = """umount /sys/fs/bpf 2>/dev/null || true
mount -o remount,bind,ro /sys
"""


@needs_tools
def test_read_only_sys_without_bpffs_auto_starts_bpf_refuses(pin):
    """The issue's case: "Failed to remove /sys/fs/bpf/acctd: Read-only file
    system", exit 1 and a failed unit. Now: exit 0, one line with the
    reason, the reason left for the daemon; collector = bpf still fails."""
    nodrop = {"PRIV": "--bounding-set=-sys_admin"}
    p = pin(inside=NSPAWN_LIKE, env=nodrop)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert re.search(r"^nothing pinned: the daemon reads cgroupfs files \(collector = auto; BPF is unavailable: "
                     r"no bpf file system at /sys/fs/bpf and mounting one failed: Operation not permitted\)$",
                     p.stdout, re.M), out
    assert "rror" not in out, out
    assert report_of(pin)[:2] == [pin.dir, "no bpf file system at /sys/fs/bpf and mounting one failed: "
                                           "Operation not permitted"]
    p = pin(collector="bpf", inside=NSPAWN_LIKE, env=nodrop)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "nothing pinned and collector = bpf: no bpf file system at /sys/fs/bpf" in p.stdout, p.stdout
    # collector = files removes what it can, and a read-only /sys is no error.
    p = pin(collector="files", inside=NSPAWN_LIKE, env=nodrop)
    assert p.returncode == 0, p.stdout + p.stderr


@needs_tools
def test_read_only_bpffs_stale_pins_are_not_served(pin):
    """A read-only bpffs: nothing can be pinned (exit 0 with auto), and pins
    of an earlier run that cannot be removed are not read by the daemon,
    which reads files and says why in Status."""
    ro = "mount -o remount,bind,ro /sys/fs/bpf\n"
    # Nothing there yet: the pin directory cannot be made.
    pin(collector="files")  # bpffs mounted (by an earlier test or here) and no pins
    p = pin(inside=ro)
    assert p.returncode == 0 and p.stdout.count("\n") >= 1, p.stdout + p.stderr
    if "pinned at" in p.stdout or "not pinned: loading" in p.stdout:
        pytest.skip("the kernel does not load the iterator here")
    assert ("BPF is unavailable: cannot pin the iterators in %s: Read-only file system" % pin.dir) in p.stdout, \
        p.stdout + p.stderr
    # Pins of an earlier run, left where they cannot be removed.
    pin_or_skip(pin)
    p = pin(inside=ro)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    why = "cannot remove the pin %s/unified of an earlier run: Read-only file system" % pin.dir
    if not os.path.exists(os.path.join(pin.dir, "unified")):
        why = why.replace("/unified", "/memory")
    assert ("(collector = auto; BPF is unavailable: %s)" % why) in p.stdout, out
    assert report_of(pin)[:2] == [pin.dir, why]
    assert os.listdir(pin.dir), "the earlier pins are gone: the bpffs was not read-only"
    p = pin(collector="bpf", inside=ro)
    assert p.returncode == 1 and "nothing pinned and collector = bpf: " + why in p.stdout, p.stdout + p.stderr
    p = pin(collector="files", inside=ro)
    assert p.returncode == 0 and "collector = files: nothing pinned; " + why in p.stdout, p.stdout + p.stderr
    # The daemon does not serve the stale pins: files, the pin step's reason.
    cs, log = daemon_collectors(pin)
    assert cs, log
    for h, c in cs.items():
        assert c["collector"] == "files" and c["reason"] == "acctd --bpf-pin pinned nothing: " + why, (h, c)
    assert "acctd --bpf-pin pinned nothing: " + why in log


@needs_tools
def test_bpf_refused_reason_in_status(pin):
    """bpf() refused to root (no CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN: a
    container's default): exit 0, and the daemon's Status gives the pin
    step's reason rather than its own."""
    pin_or_skip(pin)
    p = pin(inside=":", env={"PRIV": "--bounding-set=-bpf,-perfmon,-sys_admin"})
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    why = "loading the BPF program: not permitted"
    assert "(collector = auto; BPF is unavailable: " + why in p.stdout, out
    assert not os.path.exists(pin.dir) or not os.listdir(pin.dir), "stale pins left behind"
    assert report_of(pin)[1].startswith(why)
    cs, _ = daemon_collectors(pin)
    for h, c in cs.items():
        assert c["collector"] == "files" and c["reason"].startswith("acctd --bpf-pin pinned nothing: " + why), \
            (h, c)
    # Pinned again: the report goes, and the daemon reads the pins.
    pin_or_skip(pin)
    assert not os.path.exists(pin.report)
