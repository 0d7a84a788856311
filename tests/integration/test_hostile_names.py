"""Cgroup names a hostile local user can make (issue 13, items 3, 8 and 9), on
this host's real cgroups (root only), through the real daemon and acctctl.

A cgroup name may hold any byte but '/' and NUL (the kernel refuses '\\n'
too). acctd serves a name as text (docs/api.md, "Cgroup paths"): valid UTF-8
unchanged, each byte that is not part of it as \\xHH, backslashes never
escaped; lookups take a path literally first, then with those escapes undone.
acctctl prints control characters as \\xHH as well; --json stays exact.

  - a name with the byte 0xff is listed as text, List stays valid JSON, and
    `acctctl list` works for root and for nobody; the served text finds the
    cgroup in Get, Compare and Watch; the state file, --dump and /metrics
    stay valid (item 3);
  - InvalidCgroupPath echoes the path cut between characters (item 3);
  - a name with ESC ] 0 ; (retitle) and ESC [ 2 J (clear screen) reaches the
    terminal escaped in list, show, compare and watch (item 8);
  - names with TAB, ESC, BEL or a C1 control are accepted by Get, Watch and
    Compare, raw or as the text acctctl showed (item 9)."""
import contextlib
import json
import os
import select
import signal
import subprocess
import time

import pytest

import acctd
from test_acctctl import acctctl_binary, base_env, run_ctl
from test_api_client import IFACE, Varlink, error, ok, socket_dir
from test_history import recording
from test_metrics import PROMTOOL, Metrics, free_port, promtool, series

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups")

# Two sets of names, each in its own cgroup with its own daemon, so that each
# item's tests fail for their own reason on a daemon without the fix: names
# that are valid UTF-8 but hold control characters (items 8 and 9), and names
# that are not UTF-8 (item 3).
# key: (name as bytes, its served text (JSON), what a terminal, the log and a
# /metrics label show)
TEXT_NAMES = {
    "evil": (b"evil\x1b]0;owned\x07\x1b[2J", "evil\x1b]0;owned\x07\x1b[2J", "evil\\x1b]0;owned\\x07\\x1b[2J"),
    "tab": (b"tab\there", "tab\there", "tab\\x09here"),
    "esc": (b"esc\x1bhere", "esc\x1bhere", "esc\\x1bhere"),
    "c1": ("c1\u009b31m".encode(), "c1\u009b31m", "c1\\xc2\\x9b31m"),
    "systemd": (b"machine-qemu\\x2d1.scope", "machine-qemu\\x2d1.scope", "machine-qemu\\x2d1.scope"),
}
BYTE_NAMES = {
    "bad": (b"bad-\xff\xfe.scope", "bad-\\xff\\xfe.scope", "bad-\\xff\\xfe.scope"),
    "cut": (b"cut-\xe2\x9c", "cut-\\xe2\\x9c", "cut-\\xe2\\x9c"),  # a character cut short
    # two names that serve the same text: the literal one wins lookups
    "twin_literal": (b"twin\\xff", "twin\\xff", "twin\\xff"),
    "twin_raw": (b"twin\xff", "twin\\xff", "twin\\xff"),
}


def path(h, key, form=1):
    """/BASE/NAME of h's set: form 1 the served text, 2 the terminal's; 0 the
    raw name as a str (surrogate-escaped where not UTF-8, as os.fsdecode)."""
    name = h["names"][key][form] if form else os.fsdecode(h["names"][key][0])
    return "%s/%s" % (h["base"], name)


def hierarchies():
    """Where to make the cgroups: v2's root, else v1's memory and the unified
    hierarchy (hybrid), whichever exist."""
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return ["/sys/fs/cgroup"]
    return [h for h in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified") if os.path.isdir(h)]


def remove(dirs):
    for d in reversed(dirs):
        for _ in range(50):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


@contextlib.contextmanager
def hostile_daemon(tmp_path_factory, base, names):
    """The cgroups /base/NAME, a process in the literal twin if there is one,
    and acctd tracking /base with its API socket (open to nobody), a state
    file and /metrics."""
    if not hierarchies():
        pytest.skip("no cgroup hierarchy to create cgroups in")
    made = []
    sleeper = subprocess.Popen(["sleep", "600"])
    sdir = socket_dir()
    sock = os.path.join(sdir, "io.acctd")
    d = None
    try:
        for h in hierarchies():
            top = os.path.join(os.fsencode(h), base.encode())
            os.mkdir(top)
            made.append(top)
            for raw, _, _ in names.values():
                os.mkdir(os.path.join(top, raw))
                made.append(os.path.join(top, raw))
            if "twin_literal" in names:
                with open(os.path.join(top, names["twin_literal"][0], b"cgroup.procs"), "w") as f:
                    f.write(str(sleeper.pid))
        work = tmp_path_factory.mktemp(base)
        port = free_port()
        conf = acctd.fast_config(work, cgroups__include="/%s*" % base)
        d = acctd.Daemon(work, None, conf, extra=["--socket", sock, "--metrics-listen", "127.0.0.1:%d" % port])
        d.wait_notify("READY=1", timeout=30)
        h = {"daemon": d, "sock": sock, "address": "unix:" + sock, "metrics": Metrics(port), "base": "/" + base,
             "names": names}
        yield h
        # a clean exit: no sanitizer report (ASan builds), no crash
        assert d.stop() == 0, d.logtext()[-3000:]
    finally:
        if d:
            d.stop()
        sleeper.kill()
        sleeper.wait()
        remove(made)
        for p in (sock, sdir):
            try:
                os.unlink(p) if p == sock else os.rmdir(p)
            except OSError:
                pass


@pytest.fixture(scope="module")
def text_names(tmp_path_factory):
    with hostile_daemon(tmp_path_factory, "hostile-names-%d-text" % os.getpid(), TEXT_NAMES) as h:
        yield h


@pytest.fixture(scope="module")
def byte_names(tmp_path_factory):
    with hostile_daemon(tmp_path_factory, "hostile-names-%d-bytes" % os.getpid(), BYTE_NAMES) as h:
        yield h


def list_paths(sock, prefix):
    """The paths List serves under prefix (the reply parsed as strict JSON)."""
    with Varlink(sock) as v:
        return [c["path"] for c in ok(v.call(IFACE + ".List", {"prefix": prefix}))["cgroups"]]


def all_paths(h):
    return sorted([path(h, k) for k in h["names"]] + [h["base"]])


def wait_listed(h):
    end = time.monotonic() + 20
    while True:
        got = sorted(list_paths(h["sock"], h["base"]))
        if got == all_paths(h):
            return got
        assert time.monotonic() < end, "listed %r, want %r" % (got, all_paths(h))
        time.sleep(0.2)


# ---- item 3: names that are not UTF-8 ------------------------------------------

def test_list_serves_text(byte_names):
    """List is valid JSON and shows each name as its served text."""
    got = wait_listed(byte_names)
    assert got.count(path(byte_names, "twin_raw")) == 2  # two names, one text


def test_escaped_path_finds_the_cgroup(byte_names):
    """The text List showed finds the cgroup in Get, Compare and Watch."""
    h = byte_names
    wait_listed(h)
    for key in ("bad", "cut"):
        p = path(h, key)
        with Varlink(h["sock"]) as v:
            assert ok(v.call(IFACE + ".Get", {"cgroup": p}))["cgroup"]["path"] == p
            assert ok(v.call(IFACE + ".Get", {"cgroup": p, "precise": True}))["cgroup"]["path"] == p
            assert ok(v.call(IFACE + ".Compare", {"cgroup": p, "quantity": "memory", "threshold": 0}))["result"]
            v.send(IFACE + ".Watch", {"cgroups": [p], "interval_ms": 100}, more=True)
            assert [c["path"] for c in ok(v.recv())["cgroups"]] == [p]
        # a prefix in served text selects the cgroup's subtree
        assert list_paths(h["sock"], p) == [p]
    # what is not there is echoed as sent
    gone = "%s/gone-\\xff" % h["base"]
    with Varlink(h["sock"]) as v:
        assert error(v.call(IFACE + ".Get", {"cgroup": gone}), IFACE + ".NoSuchCgroup")["cgroup"] == gone


def test_literal_name_wins(byte_names):
    """Where one name holds the text \\xff and another the byte ff, the text
    finds the literal one (the one with the process in it)."""
    h = byte_names
    wait_listed(h)
    end = time.monotonic() + 20
    while True:
        with Varlink(h["sock"]) as v:
            cg = ok(v.call(IFACE + ".Get", {"cgroup": path(h, "twin_literal")}))["cgroup"]
        if cg["populated"]:
            break
        assert time.monotonic() < end, "the literal twin never read populated: %r" % cg
        time.sleep(0.2)


def test_invalid_path_echo_cut_between_characters(text_names):
    """InvalidCgroupPath echoes at most 256 bytes of the path, cut where no
    UTF-8 character is split (byte 256 is inside an é here)."""
    bad = "x" + "\u00e9" * 300  # not absolute
    with Varlink(text_names["sock"]) as v:
        p = error(v.call(IFACE + ".Get", {"cgroup": bad}), IFACE + ".InvalidCgroupPath")
    assert "absolute" in p["reason"]
    assert p["cgroup"] == bad[:128]  # 1 + 127 * 2 = 255 bytes
    with Varlink(text_names["sock"]) as v:
        p = error(v.call(IFACE + ".Get", {"cgroup": "/a\u0000" + "\u00e9" * 300}), IFACE + ".InvalidCgroupPath")
    assert "NUL" in p["reason"] and len(p["cgroup"].encode()) <= 256


def ctl(h, *args, user=None):
    return run_ctl(["--no-pager"] + list(args), address=h["address"], user=user)


@pytest.mark.parametrize("user", [None, "nobody"])
def test_acctctl_list_for_everyone(byte_names, user):
    """acctctl list works for root and nobody with these names in the tree,
    and shows each as its text; --json keeps that text exactly."""
    h = byte_names
    end = time.monotonic() + 20
    while True:  # until discovery has them all, through acctctl alone
        p = ctl(h, "--json", "list", h["base"], user=user)
        assert p.returncode == 0, (p.returncode, p.stderr)
        got = sorted(o["path"] for o in json.loads(p.stdout))
        if got == all_paths(h):
            break
        assert time.monotonic() < end, got
        time.sleep(0.2)
    p = ctl(h, "list", h["base"], user=user)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    for key, (_, _, shown) in h["names"].items():
        assert shown in p.stdout, (key, shown, p.stdout)


def test_acctctl_raw_argument(byte_names):
    """A name given raw on the command line (pasted from ls) is sent as its
    text, and finds the cgroup in show, compare, watch and list."""
    h = byte_names
    wait_listed(h)
    raw, text = path(h, "bad", 0), path(h, "bad")
    p = ctl(h, "show", raw)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert p.stdout.splitlines()[0] == text
    p = ctl(h, "compare", raw, "memory", "0")
    assert p.returncode in (0, 6) and p.stdout.startswith(text + " memory "), (p.returncode, p.stdout, p.stderr)
    p = ctl(h, "--json", "list", raw)
    assert p.returncode == 0 and [o["path"] for o in json.loads(p.stdout)] == [text], p
    w = subprocess.Popen([acctctl_binary(), "--address", h["address"], "--json", "watch", raw],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
    try:
        ready, _, _ = select.select([w.stdout], [], [], 20)
        assert ready, "no update from acctctl watch"
        assert [c["path"] for c in json.loads(w.stdout.readline())["cgroups"]] == [text]
    finally:
        w.send_signal(signal.SIGINT)
        w.wait(30)


@pytest.mark.parametrize("names", ["text_names", "byte_names"])
def test_state_file_dump_metrics(request, names, tmp_path):
    """The state file, --dump and /metrics stay valid with these names, and
    a label is never given to two series."""
    h = request.getfixturevalue(names)
    wait_listed(h)
    with open(h["daemon"].state, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))  # strict: no stray bytes
    assert sorted(c["path"] for c in doc["cgroups"]) == all_paths(h)
    conf = acctd.write_config(str(tmp_path / "dump.conf"), {"cgroups": {"include": h["base"] + "*"}})
    p = subprocess.run([acctd.binary(), "--dump", "--config", conf, "--config-dropins", ""], capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    assert sorted(c["path"] for c in json.loads(p.stdout.decode("utf-8"))["cgroups"]) == all_paths(h)
    page = h["metrics"].wait()  # decoded as strict UTF-8
    labels = series(page, "acctd_memory_bytes")  # asserts that no series is there twice
    # labels show names as the log and acctctl do: controls too as \xHH
    assert sorted(labels) == sorted(set([path(h, k, 2) for k in h["names"]] + [h["base"]])), sorted(labels)
    if os.path.exists(PROMTOOL):
        promtool(page)


# ---- item 8: control characters reach no terminal -----------------------------------

def assert_terminal_safe(text):
    for c in "\x1b\x07\t\u009b":
        assert c not in text, "%r reaches the terminal: %r" % (c, text)


@pytest.mark.parametrize("user", [None, "nobody"])
def test_acctctl_list_escapes(text_names, user):
    """list and list --tree print control characters in names as \\xHH;
    --json keeps the names exactly."""
    h = text_names
    wait_listed(h)
    for args in (["list", h["base"]], ["list", "--tree", h["base"]]):
        p = ctl(h, *args, user=user)
        assert p.returncode == 0, (args, p.returncode, p.stdout, p.stderr)
        assert_terminal_safe(p.stdout)
        for key, (_, _, shown) in h["names"].items():
            assert shown in p.stdout, (key, shown, p.stdout)
    p = ctl(h, "--json", "list", h["base"], user=user)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert sorted(o["path"] for o in json.loads(p.stdout)) == all_paths(h)


def test_acctctl_show_compare(text_names):
    """show and compare take the raw name and the text acctctl showed, and
    print the name escaped; so does an error that quotes a name."""
    h = text_names
    wait_listed(h)
    for arg in (path(h, "evil", 0), path(h, "evil", 2)):
        p = ctl(h, "show", arg)
        assert p.returncode == 0, (arg, p.returncode, p.stderr)
        assert p.stdout.splitlines()[0] == path(h, "evil", 2)
        assert_terminal_safe(p.stdout)
    p = ctl(h, "--json", "show", path(h, "evil", 2))
    assert p.returncode == 0 and json.loads(p.stdout)["path"] == path(h, "evil")
    for arg in (path(h, "tab", 0), path(h, "tab", 2)):
        p = ctl(h, "compare", arg, "memory", "0")
        assert p.returncode in (0, 6), (arg, p.returncode, p.stderr)  # above or equal
        assert p.stdout.startswith(path(h, "tab", 2) + " memory "), p.stdout
        assert_terminal_safe(p.stdout)
    p = ctl(h, "show", "%s/gone\x1b]0;x" % h["base"])
    assert p.returncode == 1 and "gone\\x1b]0;x" in p.stderr, (p.returncode, p.stderr)
    assert_terminal_safe(p.stderr)


def test_acctctl_watch(text_names):
    """watch takes the ESC name and prints it escaped."""
    h = text_names
    wait_listed(h)
    w = subprocess.Popen([acctctl_binary(), "--address", h["address"], "watch", path(h, "evil", 0)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
    try:
        ready, _, _ = select.select([w.stdout], [], [], 20)
        assert ready, "no line from acctctl watch"
        line = w.stdout.readline().decode()
        assert (" %s: " % path(h, "evil", 2)) in line, line
        assert_terminal_safe(line)
    finally:
        w.send_signal(signal.SIGINT)
        try:
            w.wait(30)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()
    assert w.returncode == 0, w.stderr.read().decode()


# ---- item 9: every name List shows is one Get, Watch and Compare take -------------

@pytest.mark.parametrize("key", ["tab", "esc", "evil", "c1"])
def test_control_names_accepted(text_names, key):
    """A name with TAB, ESC, BEL or a C1 control, as List shows it and as
    acctctl shows it, is taken by Get, Compare and Watch (cgroups, prefix)."""
    h = text_names
    wait_listed(h)
    for p in (path(h, key), path(h, key, 2)):
        with Varlink(h["sock"]) as v:
            assert ok(v.call(IFACE + ".Get", {"cgroup": p}))["cgroup"]["path"] == path(h, key), p
            assert ok(v.call(IFACE + ".Compare", {"cgroup": p, "quantity": "memory", "threshold": 0}))["result"]
            v.send(IFACE + ".Watch", {"cgroups": [p], "interval_ms": 100}, more=True)
            assert [c["path"] for c in ok(v.recv())["cgroups"]] == [path(h, key)]
        with Varlink(h["sock"]) as v:
            v.send(IFACE + ".Watch", {"prefix": p, "interval_ms": 100}, more=True)
            assert [c["path"] for c in ok(v.recv())["cgroups"]] == [path(h, key)]


# ---- the same rule for other text that may quote a name or a file ---------------

def test_reload_failure_reason_is_text(fakecg, tmp_path):
    """A configuration value with the byte ff: Reload's ReloadFailed, Status's
    reload_result and status line, and STATUS= quote it as \\xff; the replies
    stay JSON."""
    fakecg.mkdir("/a.service", memory=1 << 20, procs=[10])
    conf = acctd.fast_config(tmp_path)
    with acctd.Daemon(tmp_path, fakecg.root, conf) as d:
        d.wait_notify("READY=1", timeout=30)
        with open(conf, "wb") as f:
            f.write(b"[sampling]\nfast_interval = 1\xffs\n")
        with Varlink(d.socket) as v:
            p = error(v.call(IFACE + ".Reload"), IFACE + ".ReloadFailed")
            assert "'1\\xffs'" in p["reason"], p
            st = ok(v.call(IFACE + ".Status"))["status"]
            assert "'1\\xffs'" in st["reload_result"] and "'1\\xffs'" in st["status"], st
        # and systemd's STATUS= (systemd ignores one that is not UTF-8)
        assert "'1\\xffs'" in d.wait_notify("reload failed")


# ---- issue 27 item 6: one rule for every text a name leaves acctd in -------------

# Names a delegated user can make, with what a terminal obeys in them: C0
# (ESC, BEL), DEL, a byte that is not UTF-8, a C1 control (U+009B, CSI) and a
# bidi override (U+202E); key: (name as bytes, its text as every text output
# shows it: name-escape.h's text mode).
CONTROL_NAMES = {
    "esc": (b"esc\x1b[2J", b"esc\\x1b[2J"),
    "bel": (b"bel\x07", b"bel\\x07"),
    "del": (b"del\x7f", b"del\\x7f"),
    "ff": (b"ff\xff", b"ff\\xff"),
    "csi": ("csi\u009b31m".encode(), b"csi\\xc2\\x9b31m"),
    "rlo": ("rlo\u202ecod.exe".encode(), b"rlo\\xe2\\x80\\xaecod.exe"),
}
# Raw, none of these may reach a log, a scrape or a terminal.
RAW_CONTROLS = [b"\x1b", b"\x07", b"\x7f", b"\xff", "\u009b".encode(), "\u202e".encode()]


def shows_all(data, label=False):
    """data when it shows every name, escaped or raw (so that a daemon that
    shows them raw fails on the assertion, at once), else None."""
    def forms(raw, text):
        return (text.replace(b"\\", b"\\\\"), raw) if label else (text, raw)
    return data if all(any(f in data for f in forms(*n)) for n in CONTROL_NAMES.values()) else None


def assert_no_raw_controls(what, data):
    for c in RAW_CONTROLS:
        assert c not in data, "%s carries %r raw: %r" % (what, c, data[-3000:])


@pytest.fixture
def control_names(fakecg, tmp_path):
    """acctd on a fake tree holding CONTROL_NAMES under /ctl, recording a
    history every second, with its API socket and /metrics."""
    base = "/ctl"
    for raw, _ in CONTROL_NAMES.values():
        fakecg.mkdir(base + "/" + os.fsdecode(raw), memory=4 << 20, cpu_usec=1000000, procs=[10])
    sdir = socket_dir()
    sock = os.path.join(sdir, "io.acctd")
    port = free_port()
    conf = acctd.fast_config(tmp_path, history__path=str(tmp_path / "history.db"), history__interval="1s",
                             log__removals="each")  # the records' text: test_log_escapes_controls
    d = acctd.Daemon(tmp_path, fakecg.root, conf,
                     extra=["--socket", sock, "--metrics-listen", "127.0.0.1:%d" % port])
    try:
        d.wait_notify("READY=1", timeout=30)
        yield {"daemon": d, "sock": sock, "address": "unix:" + sock, "metrics": Metrics(port), "base": base,
               "fakecg": fakecg}
        assert d.stop() == 0
    finally:
        d.stop()
        for p in (sock, sdir):
            with contextlib.suppress(OSError):
                os.unlink(p) if p == sock else os.rmdir(p)


def ctl_bytes(h, *args):
    p = subprocess.run([acctctl_binary(), "--address", h["address"], "--no-pager"] + list(args),
                       capture_output=True, timeout=60, env=base_env())
    assert p.returncode == 0, (args, p.returncode, p.stdout, p.stderr)
    assert_no_raw_controls("acctctl %s's stderr" % " ".join(args), p.stderr)
    return p.stdout


def wait_for(pred, what, timeout=60):
    end = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        assert time.monotonic() < end, "timed out waiting for %s" % what
        time.sleep(0.2)


def log_bytes(d):
    d.log.flush()
    with open(d.log_path, "rb") as f:
        return f.read()


def test_metrics_labels_escape_controls(control_names):
    """/metrics shows each name in its text (controls as \\xHH, the label's
    backslash escaped), never a raw control; promtool accepts the page."""
    h = control_names

    def page():
        status, hdrs, data = h["metrics"].request()
        if status != 200:
            return None
        return shows_all(data, label=True)

    data = wait_for(page, "every name on the /metrics page")
    assert_no_raw_controls("/metrics", data)
    for _, text in CONTROL_NAMES.values():
        assert b'cgroup="/ctl/' + text.replace(b"\\", b"\\\\") + b'"' in data, text
    if os.path.exists(PROMTOOL):
        promtool(data.decode("utf-8"))


def test_acctctl_tables_escape_controls(control_names):
    """acctctl list, list --tree, top and usage show each name in its text,
    no raw control or bidi character."""
    h = control_names
    for args in (["list", h["base"]], ["list", "--tree", h["base"]], ["top", "-n", "1", "--no-legend"]):
        out = wait_for(lambda: shows_all(ctl_bytes(h, *args)), "every name in acctctl %s" % " ".join(args))
        assert_no_raw_controls("acctctl %s" % " ".join(args), out)
    since = "@%d" % (int(time.time()) - 3600)
    # usage answers from the history: once there is one (before, it exits 1)
    wait_for(lambda: recording(h["sock"]), "a recording")
    out = wait_for(lambda: shows_all(ctl_bytes(h, "usage", "--since", since, "--prefix", h["base"])),
                   "every name in acctctl usage")
    assert_no_raw_controls("acctctl usage", out)
    out = ctl_bytes(h, "usage", "--since", since, "--prefix", h["base"], "--csv")
    assert_no_raw_controls("acctctl usage --csv", out)


def test_log_escapes_controls(control_names):
    """The log's start summary and each removed cgroup's accounting record
    ("NAME: Consumed ...") show the name in its text, never raw."""
    h = control_names
    d = h["daemon"]
    # recorded at least once, so that the records have the store's values
    wait_for(lambda: recording(h["sock"]), "a recording")
    for raw, _ in CONTROL_NAMES.values():
        h["fakecg"].rmdir(h["base"] + "/" + os.fsdecode(raw))
    for raw, text in CONTROL_NAMES.values():
        wait_for(lambda: any(b"/ctl/" + n + b": Consumed" in log_bytes(d) for n in (raw, text)),
                 "the record of %r" % text)
    log = log_bytes(d)
    assert_no_raw_controls("the log", log)
    for _, text in CONTROL_NAMES.values():
        assert b"/ctl/" + text + b": Consumed" in log, text
