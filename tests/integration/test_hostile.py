"""acctd against a hostile local user (issue 13): what such a user can plant
or send must not make acctd write, read or hang where it should not.

The state file: a directory the daemon writes its state file into may be
writable by others (here: owned by `nobody`, which makes the kernel's
protected_symlinks allow following their links). Whatever they plant at the
names acctd uses (a symlink at the old fixed temporary name or at the state
file itself, a FIFO) must neither be written through nor block the daemon."""
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

import acctd
from test_metrics import Metrics, free_port

NOBODY = 65534
needs_root = pytest.mark.skipif(not acctd.is_root(), reason="needs root to act as root beside nobody's files")


def plant_symlink(target, link):
    os.symlink(target, link)
    os.lchown(link, NOBODY, NOBODY)


@needs_root
@pytest.mark.parametrize("planted", ["symlinks", "fifo"])
def test_state_file_through_planted_names(fakecg, tmp_path, planted):
    """A root daemon writing its state file into a directory `nobody` owns:
    nothing nobody planted is written through, the daemon keeps passing, the
    state file becomes a regular file of root's with the whole document, and
    no temporary file is left behind."""
    fs = fakecg
    fs.mkdir("/a", memory=4 << 20)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, NOBODY, NOBODY)
    victim = tmp_path / "victim"
    victim.write_text("root's secret\n")
    os.chmod(victim, 0o600)
    state = shared / "state.json"
    if planted == "symlinks":
        plant_symlink(str(victim), str(shared / "state.json.tmp"))
        plant_symlink(str(victim), str(state))
    else:
        os.mkfifo(shared / "state.json.tmp")
        os.chown(shared / "state.json.tmp", NOBODY, NOBODY)
    conf = acctd.fast_config(tmp_path)
    # the API socket in a directory of root's: acctd makes it only where no one else can write
    sock = tmp_path / "sock" / "io.acctd"
    with acctd.Daemon(shared, fs.root, conf, extra=["--socket", str(sock)]) as d:
        doc = d.next_state(3)
        assert any(c["path"] == "/a" for c in doc["cgroups"])
    assert victim.read_text() == "root's secret\n"
    st = os.lstat(state)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0
    mask = os.umask(0)
    os.umask(mask)
    assert st.st_mode & 0o7777 == 0o644 & ~mask
    json.loads(state.read_text())
    leftover = [n for n in os.listdir(shared) if n.startswith(".state.json.")]
    assert leftover == []


# ---- descriptors: item 5 --------------------------------------------------------

def many_cgroups(fs, n):
    for i in range(n):
        fs.mkdir("/s%03d" % i, memory=1 << 20, cpu_usec=1000 * i, procs=[1000 + i])


def open_idle(path, n):
    """n connected, idle varlink clients (the caller closes them)."""
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        out.append(s)
    return out


def call(sock, method):
    sock.sendall(json.dumps({"method": method}).encode() + b"\0")
    buf = b""
    while not buf.endswith(b"\0"):
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        buf += chunk
    return json.loads(buf[:-1])


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


@pytest.mark.parametrize("fakecg", ["v2"], indirect=True)
def test_descriptor_budget_leaves_room_for_connections(fakecg, tmp_path):
    """With RLIMIT_NOFILE 512 and 300 cgroups (about 4 files each that the
    sampler would keep open), max_connections = 200 API clients are each
    served while a scrape is too: the sampler's descriptor cache leaves room
    for the configured connections and the metrics listener."""
    fs = fakecg
    many_cgroups(fs, 300)
    port = free_port()
    conf = acctd.fast_config(tmp_path, api__max_connections="200")
    with acctd.Daemon(tmp_path, fs.root, conf, nofile=512,
                      extra=["--metrics-listen", "127.0.0.1:%d" % port]) as d:
        d.next_state(3)
        clients = open_idle(d.socket, 200)
        try:
            for c in clients:
                c.settimeout(10)
                assert "parameters" in call(c, "io.acctd.Accounting.Status")
            code, _, _ = Metrics(port).request()
            assert code == 200
            assert open_fds(d.proc.pid) <= 512
        finally:
            for c in clients:
                c.close()
        assert "Failed to accept" not in d.logtext()


@pytest.mark.parametrize("fakecg", ["v2"], indirect=True)
def test_listeners_pause_when_out_of_descriptors(fakecg, tmp_path):
    """Out of descriptors (300 idle clients against RLIMIT_NOFILE 256), a
    scrape must not make the metrics listener spin: at most a few log lines
    and little CPU while it waits, and the scrape is answered once the idle
    clients leave."""
    fs = fakecg
    many_cgroups(fs, 50)
    port = free_port()
    conf = acctd.fast_config(tmp_path, log__level="info")
    with acctd.Daemon(tmp_path, fs.root, conf, nofile=256,
                      extra=["--metrics-listen", "127.0.0.1:%d" % port]) as d:
        d.next_state(2)
        clients = open_idle(d.socket, 300)
        result = {}

        def scrape():
            try:
                result["code"] = Metrics(port).request(timeout=30)[0]
            except OSError as e:
                result["error"] = e

        try:
            time.sleep(0.5)
            lines0 = d.logtext().count("\n")
            cpu0 = cpu_seconds(d.proc.pid)
            t = threading.Thread(target=scrape)
            t.start()
            time.sleep(2)
            logged = d.logtext().count("\n") - lines0
            cpu = cpu_seconds(d.proc.pid) - cpu0
        finally:
            for c in clients:
                c.close()
        t.join(30)
        assert result.get("code") == 200, (result, d.logtext()[-3000:])
        assert logged <= 10, "%d log lines in 2 s out of descriptors:\n%s" % (logged, d.logtext()[-2000:])
        # a spinning listener takes a whole core; passes over 50 cgroups a tenth of that
        assert cpu < 1.0, "%.2f s of CPU in 2 s out of descriptors" % cpu


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---- the state file off the event loop: item 7 -----------------------------------

@pytest.mark.parametrize("fakecg", ["v2"], indirect=True)
def test_state_file_never_blocks_the_api(fakecg, tmp_path):
    """The state file is built and written off the event loop: with every
    write made to take a second (ACCTD_TEST_STATE_WRITE_DELAY_MS, a slow
    disk), API calls keep being answered at once, and the file still
    follows the passes (a write asked for during one waits, the newest
    wins)."""
    fs = fakecg
    many_cgroups(fs, 200)
    conf = acctd.fast_config(tmp_path)
    with acctd.Daemon(tmp_path, fs.root, conf, env={"ACCTD_TEST_STATE_WRITE_DELAY_MS": "1000"}) as d:
        first = d.next_state(1, timeout=20)["daemon"]["passes"]
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(d.socket)
        c.settimeout(10)
        worst = 0.0
        end = time.monotonic() + 3.5
        while time.monotonic() < end:
            t0 = time.monotonic()
            assert "parameters" in call(c, "io.acctd.Accounting.Status")
            worst = max(worst, time.monotonic() - t0)
            time.sleep(0.05)
        c.close()
        # each write takes a second; a blocked loop would hold a call as long
        assert worst < 0.5, "an API call waited %.3f s behind the state file" % worst
        later = d.next_state(1, timeout=20)["daemon"]["passes"]
        assert later > first + 3  # passes went on (100 ms apart) while writes took 1 s


# ---- scrape slots shared per client: item 6 ----------------------------------------

HOLD_SCRAPES = r"""
import os, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
held = []
for _ in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a slow reader
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    held.append(s)
    time.sleep(0.05)
codes = []
for s in held:
    s.settimeout(5)
    codes.append(s.recv(12).decode().split()[1])
print(" ".join(codes), flush=True)
sys.stdin.readline()  # hold them until told
"""


@needs_root
@pytest.mark.parametrize("fakecg", ["v2"], indirect=True)
def test_one_user_cannot_take_every_scrape_slot(fakecg, tmp_path):
    """`nobody` holds 8 scrapes that read nothing (a page of 2,000 cgroups
    stays in progress): it gets 2 pages, 503 for the rest, and another user's
    scrape (root's, as Prometheus') is answered."""
    fs = fakecg
    with fs.batch():
        for i in range(2000):
            fs.mkdir("/svc-%04d.service" % i, memory=1 << 20, cpu_usec=1000 * i, procs=[1000 + i])
    port = free_port()
    # max_series = 0: the page must be all 2,000 cgroups, larger than the
    # socket buffers, or it would be sent whole and hold no slot (the
    # default bound leaves out the level of the 2,000 services)
    conf = acctd.fast_config(tmp_path, sampling__fast_interval="1s", sampling__slow_interval="2s",
                             metrics__max_series="0")
    with acctd.Daemon(tmp_path, fs.root, conf, extra=["--metrics-listen", "127.0.0.1:%d" % port]) as d:
        d.next_state(1, timeout=30)
        hog = subprocess.Popen([sys.executable, "-c", HOLD_SCRAPES, str(port), "8"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, user=NOBODY, group=NOBODY, cwd="/")
        try:
            codes = hog.stdout.readline().split()
            assert sorted(codes) == ["200"] * 2 + ["503"] * 6, codes
            code, _, _ = Metrics(port).request(timeout=30)
            assert code == 200
        finally:
            hog.stdin.close()
            hog.wait(10)
