"""acctd against a hostile local user (issue 13): what such a user can plant
or send must not make acctd write, read or hang where it should not.

The state file: a directory the daemon writes its state file into may be
writable by others (here: owned by `nobody`, which makes the kernel's
protected_symlinks allow following their links). Whatever they plant at the
names acctd uses (a symlink at the old fixed temporary name or at the state
file itself, a FIFO) must neither be written through nor block the daemon."""
import json
import os
import stat

import pytest

import acctd

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
    with acctd.Daemon(shared, fs.root, conf) as d:
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
