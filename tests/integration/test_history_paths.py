"""Where the history may be written (issue 27 item 5): never through a
symlink, and only in a directory that acctd's user (or root) owns and group
and others cannot write. Before, a history.db that was a symlink was
followed: root wrote its SQLite database over the link's target, a file of
root's with mode 0600.

Each refusal leaves the live ledger serving, and says why in Status'
history (last_error, state "failing") and in the log; the file the link
points to is left as it was, byte for byte and mode."""
import os
import stat

import pytest

import acctd
from test_api_client import IFACE, Varlink, api_daemon, error, ok
from test_history import history_status, ledger_serves, poll

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root: the target is a file of root's")


def settled(sock):
    """Status' history once it failed (with its reason) or recorded: a
    daemon that does not refuse fails the test at once, not at a deadline.
    "recording" alone is not enough: it is also the state before the first
    attempt (history-recorder.h), which a slow start (TSan beside other
    tests) showed here before the store was opened."""
    h = history_status(sock)
    failed = h["state"] == "failing" and h.get("last_error")
    return h if failed or (h["state"] == "recording" and h.get("last_recording_us")) else None


def secret_file(tmp_path):
    p = tmp_path / "secret"
    p.write_bytes(b"root's own, not a database\n")
    os.chmod(p, 0o600)
    return p


def assert_untouched(p):
    st = os.stat(p)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0, oct(st.st_mode)
    assert p.read_bytes() == b"root's own, not a database\n"


@pytest.mark.parametrize("dir_mode", [0o755, 0o777])
def test_history_symlink_refused(fakecg, tmp_path, dir_mode):
    """history.db a symlink to root's 0600 file (in acctd's own directory,
    and in one that others can write, as the issue found it): refused with
    the reason, the target unchanged, no -wal or -shm beside it."""
    fakecg.mkdir("/a", memory=1 << 20, procs=[10])
    secret = secret_file(tmp_path)
    hdir = tmp_path / "h"
    hdir.mkdir()
    os.chmod(hdir, dir_mode)
    db = hdir / "history.db"
    os.symlink(secret, db)
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        h = poll(lambda: settled(sock), what="the history refused")
        assert_untouched(secret)
        assert h["state"] == "failing", h
        want = "symbolic link" if dir_mode == 0o755 else "mode %04o" % dir_mode
        assert want in h["last_error"], h
        d.wait_log(want)
        assert ledger_serves(sock)
        # a query says the same, not "no history yet" (the link is there)
        with Varlink(sock) as v:
            why = error(v.call(IFACE + ".Usage", {"since_us": 0}), IFACE + ".HistoryUnavailable")["reason"]
        assert want in why and "yet" not in why, why
    assert_untouched(secret)
    assert os.path.islink(db)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("secret-")]  # no -wal, -shm
    assert sorted(os.listdir(hdir)) == ["history.db"]


@pytest.mark.parametrize("case", ["dangling symlink", "open directory"])
def test_queries_say_why_there_is_no_history(fakecg, tmp_path, case):
    """Usage where the store is refused and no file was ever made (a link to
    nothing, a directory others can write): the reason is the refusal, as in
    Status, not "no history yet" (the new-user trial)."""
    fakecg.mkdir("/a", memory=1 << 20, procs=[10])
    hdir = tmp_path / "h"
    hdir.mkdir()
    db = hdir / "history.db"
    if case == "dangling symlink":
        os.symlink(tmp_path / "nothing", db)
        want = "symbolic link"
    else:
        os.chmod(hdir, 0o777)
        want = "mode 0777"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        h = poll(lambda: settled(sock), what="the history refused")
        assert h["state"] == "failing" and want in h["last_error"], h
        with Varlink(sock) as v:
            why = error(v.call(IFACE + ".Usage", {"since_us": 0}), IFACE + ".HistoryUnavailable")["reason"]
        assert want in why and "yet" not in why, why


@pytest.mark.parametrize("dir_mode", [0o777, 0o1777, 0o770])
def test_history_directory_writable_by_others_refused(fakecg, tmp_path, dir_mode):
    """A history directory that group or others may write (/tmp's 1777
    too: the sticky bit does not stop them from making history.db, -wal or
    -shm first) is refused with its owner and mode; nothing is created."""
    fakecg.mkdir("/a", memory=1 << 20, procs=[10])
    hdir = tmp_path / "open"
    hdir.mkdir()
    os.chmod(hdir, dir_mode)
    db = hdir / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        h = poll(lambda: settled(sock), what="the history refused")
        assert h["state"] == "failing", h
        assert "its directory %s is owned by uid 0 with mode %04o" % (hdir, dir_mode) in h["last_error"], h
        assert "not writable by group or others" in h["last_error"], h
        d.wait_log("mode %04o" % dir_mode)
        assert ledger_serves(sock)
    assert os.listdir(hdir) == []
    assert stat.S_IMODE(os.stat(hdir).st_mode) == dir_mode  # not repaired behind the admin's back


def test_history_in_a_private_directory_records(fakecg, tmp_path):
    """The same directory made private (0755, root's) records."""
    fakecg.mkdir("/a", memory=1 << 20, procs=[10])
    hdir = tmp_path / "mine"
    hdir.mkdir()
    os.chmod(hdir, 0o755)
    with api_daemon(tmp_path, fakecg.root, history__path=str(hdir / "history.db"), history__interval="1s") as (d, sock):
        poll(lambda: history_status(sock)["state"] == "recording", what="recording")
    assert (hdir / "history.db").is_file()


def test_history_through_a_symlinked_directory_records(fakecg, tmp_path):
    """The history's directory reached through a symlink, as systemd's
    DynamicUser= makes /var/lib/acctd (a link to /var/lib/private/acctd):
    recorded and queried, the file made in the real directory. Only the
    file's own name must not be a link (SQLite's NOFOLLOW refuses a link
    anywhere in the path: before, the history failed under acctd.service,
    which the boot test found)."""
    fakecg.mkdir("/a", memory=1 << 20, procs=[10])
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    real = private / "acctd"
    real.mkdir()
    os.chmod(real, 0o755)
    link = tmp_path / "acctd"
    os.symlink("private/acctd", link)
    db = link / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        h = poll(lambda: (lambda h: h if h["last_recording_us"] or h["last_error"] else None)(history_status(sock)),
                 what="a recording or an error")
        assert h["state"] == "recording" and not h["last_error"], h
        with Varlink(sock) as v:
            assert ok(v.call(IFACE + ".Usage", {"since_us": 0}))
    assert (real / "history.db").is_file() and not os.path.islink(real / "history.db")
