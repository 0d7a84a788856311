"""acctctl's output conventions from systemctl, ps and systemd-cgtop (issue 15):
-o/--output field selection for list and top (tables, --no-legend, --json),
the TASKS column and the block I/O columns (top's READ/s and WRITE/s computed
between two refreshes, as systemd-cgtop's Input/s and Output/s), --depth
with systemd-cgtop's default for top, no escape sequences off a terminal (no
colour in a pipe; top's full screen and colour only where TERM is not dumb), and their
bash completion. The daemon, the fake tree and the helpers are
test_acctctl.py's."""
import json
import os
import re
import shutil
import subprocess

import pytest

from test_acctctl import (EXIT_USAGE, INPLACE, INPLACE_HYBRID, MiB, Pty, acctctl_binary, base_env, complete, ctl,
                          fmt_bytes, run_ctl, table)

assert ctl  # the fixture, imported for the tests below

FIELDS = ["cgroup", "state", "memory", "bound", "cpu", "load", "psi-cpu", "psi-mem", "psi-io", "tasks", "read/s",
          "write/s", "read", "write", "age", "charge", "charge-bound"]


def wait_tasks(ctl):
    """Until every cgroup has its task count (read on load passes)."""
    ctl.wait(lambda: all(c.get("tasks") is not None for c in ctl.json("list")), "every cgroup's tasks")


# ---- -o/--output ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_no_legend_has_one_field_per_column(ctl):
    """--no-legend is for scripts: every row has one field per column, an
    empty cell (here the bound of an exact reading) printed as "-", so that
    awk's $N is column N on every row."""
    wait_tasks(ctl)
    # every field but a charged resource's (which needs --charge=NAME)
    for fields in ([f for f in FIELDS if not f.startswith("charge")], ["cgroup", "memory", "bound", "tasks"],
                   ["bound", "cgroup"]):
        lines = ctl.ok("list", "--no-legend", "-o", ",".join(fields)).splitlines()
        assert lines, fields
        for line in lines:
            assert len(line.split()) == len(fields), (fields, line)
    # the bound of an exact reading is an empty cell: "-" in its field
    rows = [l.split() for l in ctl.ok("list", "--no-legend", "-o", "cgroup,bound").splitlines()]
    assert any(r[1] == "-" for r in rows), rows
    # with the legend, an empty cell stays empty
    assert "-" not in ctl.ok("list", "-o", "cgroup,bound").split()



@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_output_selects_fields(ctl):
    fs = ctl.fs
    wait_tasks(ctl)
    # the columns named, in that order, in any case; "path" is cgroup's alias
    header, rows = table(ctl.ok("list", "-o", "tasks,CGROUP,memory"))
    assert header == ["TASKS", "CGROUP", "MEMORY"]
    assert [r[1] for r in rows] == sorted(fs.paths())
    for r in rows:
        assert len(r) == 3 and r[0] == str(fs.expected(r[1])["nr_tasks"]), r
    assert ctl.ok("list", "--output=path", "--no-legend").splitlines() == sorted(fs.paths())
    # for scripts: no legend, one value per field, a field twice as ps allows
    lines = ctl.ok("list", "/system.slice/a.service", "--output=cgroup,memory,read,write,cgroup",
                   "--no-legend").splitlines()
    assert lines[0].split() == ["/system.slice/a.service", "64.0M", "0B", "0B", "/system.slice/a.service"]
    # STATE when asked for, without --all
    assert ctl.ok("list", "-o", "state,cgroup", "--no-legend").splitlines()[0].split() == ["live", "/"]
    # with --tree, the first column keeps the tree
    lines = ctl.ok("list", "--tree", "-o", "cgroup,tasks", "--no-legend", env=base_env(LC_ALL="C")).splitlines()
    assert [l.split() for l in lines[3:6]] == [["|", "|-a.service", "1"], ["|", "`-b.service", "2"],
                                               ["|", "`-child", "1"]]

    # --json: only the members behind the fields, PSI only for the resources asked
    objs = ctl.json("list", "-o", "cgroup,tasks,psi-mem,read/s")
    assert [o["path"] for o in objs] == sorted(fs.paths())
    for o in objs:
        assert set(o) == {"path", "tasks", "psi_some_avg10", "io_read_bytes_rate"}, o
        assert o["tasks"]["value"] == fs.expected(o["path"])["nr_tasks"]
        assert set(o["psi_some_avg10"]) == {"memory"}
    lines = ctl.ok("--json=lines", "list", "-o", "memory,bound,age").splitlines()
    assert len(lines) == len(fs.paths())
    assert all(set(json.loads(l)) == {"memory", "cpu_rate"} for l in lines), lines
    frame = json.loads(ctl.ok("--json", "top", "-n", "1", "-o", "cgroup,cpu"))
    assert all(set(o) == {"path", "cpu_rate"} for o in frame["cgroups"]), frame

    # top: the same fields
    out = ctl.ok("top", "-b", "-n", "1", "-o", "cgroup,tasks", "--sort=tasks")
    lines = out.splitlines()
    assert lines[0].split() == ["CGROUP", "TASKS"]
    tasks = [int(l.split()[1]) for l in lines[1:]]
    assert tasks == sorted(tasks, reverse=True) and tasks[0] == fs.expected("/")["nr_tasks"]

    # unknown or empty fields: exit status 2, one line that lists the valid ones
    for arg, bad in (("cgroup,bogus,cpu", "bogus"), ("cgroup,,cpu", ""), ("", "")):
        p = ctl.run("list", "--output=" + arg)
        assert p.returncode == EXIT_USAGE and p.stdout == "", p
        assert p.stderr == "Unknown field '%s' for --output. Valid fields: %s.\n" % (bad, ", ".join(FIELDS)), p.stderr
    p = ctl.run("top", "-o", "nope", "-n", "1")
    assert p.returncode == EXIT_USAGE and "Unknown field 'nope'" in p.stderr
    p = ctl.run("show", "/", "-o", "cgroup")
    assert p.returncode == EXIT_USAGE and "Option --output does not apply to 'show'" in p.stderr

    # the fields are listed by --output=help and in list's and top's --help
    for args in (["list", "--output=help"], ["top", "-o", "help"], ["list", "--help"], ["top", "--help"]):
        p = run_ctl(args)
        assert p.returncode == 0, (args, p)
        assert "-o/--output=FIELD[,FIELD...]" in p.stdout, args
        for f in FIELDS:
            assert re.search(r"^  %s( +|\n {12}\S)" % re.escape(f), p.stdout, re.M), (args, f)
    assert "-o --output=FIELD[,FIELD...]" in run_ctl(["list", "--help"]).stdout


# ---- tasks and I/O ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fakecg", [INPLACE, INPLACE_HYBRID], indirect=True)
def test_tasks_column(ctl):
    fs = ctl.fs
    wait_tasks(ctl)
    header, rows = table(ctl.ok("list"))
    assert "TASKS" in header
    i = header.index("TASKS") - len(header)  # from the end: the bound may take a column before it
    for r in rows:
        assert r[i] == str(fs.expected(r[0])["nr_tasks"]), (header, r)
    # --sort=tasks: largest first, ties by path
    rows = [l.split() for l in ctl.ok("list", "--sort=tasks", "--no-legend").splitlines()]
    want = sorted(fs.paths(), key=lambda p: (-fs.expected(p)["nr_tasks"], p))
    assert [r[0] for r in rows] == want
    # top shows them too, and sorts by them
    lines = ctl.ok("top", "-b", "-n", "1", "--sort=tasks").splitlines()
    assert lines[0].split()[-4:] == ["TASKS", "READ/s", "WRITE/s", "AGE"]
    assert [l.split()[0] for l in lines[1:]] == want


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_top_io_rates_between_refreshes(ctl):
    """READ/s and WRITE/s in top are the I/O between two refreshes, as
    systemd-cgtop's: I/O done once, just after the first refresh, shows in
    the second refresh 2 s later as its bytes over those 2 s, while acctd's
    own rate (over its last fast interval, 100 ms) is back to 0 by then."""
    fs = ctl.fs
    path = "/system.slice/a.service"
    ctl.wait_rates()
    top = subprocess.Popen([acctctl_binary(), "--address", ctl.address, "--json", "top", "-n", "2", "-d", "2"],
                           stdout=subprocess.PIPE, text=True, env=base_env())
    try:
        first = json.loads(top.stdout.readline())
        fs.add_io(path, "8:0", rbytes=8 * MiB, wbytes=2 * MiB)
        second = json.loads(top.stdout.readline())
        assert top.wait(10) == 0
    finally:
        top.kill()
        top.wait()
    a0 = next(c for c in first["cgroups"] if c["path"] == path)
    a1 = next(c for c in second["cgroups"] if c["path"] == path)
    assert a0["io_read_bytes_rate"] == 0 and a0["io_write_bytes_rate"] == 0, a0
    # 8 MiB over the 2 s between the refreshes (give or take a fast interval
    # on either side): 4 MiB/s; 2 MiB written: 1 MiB/s
    assert 8 * MiB / 2.5 < a1["io_read_bytes_rate"] < 8 * MiB / 1.5, a1
    assert 2 * MiB / 2.5 < a1["io_write_bytes_rate"] < 2 * MiB / 1.5, a1
    assert a1["io_read_bytes"]["value"] - a0["io_read_bytes"]["value"] == 8 * MiB, (a0, a1)
    # acctd's own rate is that of its last fast interval: nothing read since
    d = next(c for c in ctl.json("list", path) if c["path"] == path)
    assert d["io_read_bytes_rate"] == 0 and d["io_read_bytes"]["value"] == a1["io_read_bytes"]["value"], d

    # the tables say the same: the second frame of top -b, list's totals
    p = subprocess.Popen([acctctl_binary(), "--address", ctl.address, "top", "-b", "-n", "2", "-d", "2", "-o",
                          "cgroup,read/s,write/s", path], stdout=subprocess.PIPE, text=True, env=base_env())
    try:
        frame = [p.stdout.readline() for _ in range(2)]  # header, /system.slice/a.service
        fs.add_io(path, "8:0", rbytes=16 * MiB)
        out = p.stdout.read()
        assert p.wait(10) == 0
    finally:
        p.kill()
        p.wait()
    assert frame[1].split() == [path, "0B", "0B"], frame
    row = out.splitlines()[2].split()  # after the empty line and the header
    assert row[0] == path and row[2] == "0B", out
    assert re.fullmatch(r"\d\.\dM", row[1]) and 16 / 2.5 < float(row[1][:-1]) < 16 / 1.5, out
    total = ctl.ok("list", path, "-o", "read,write", "--no-legend").split()
    assert total == [fmt_bytes(24 * MiB), fmt_bytes(2 * MiB)], total


# ---- --depth ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_depth_like_cgtop(ctl):
    deep = "/system.slice/b.service/child/deeper"
    ctl.fs.mkdir(deep, memory=MiB, procs=[300])
    ctl.wait(lambda: any(o["path"] == deep for o in ctl.json("list")), "the fourth level")

    def paths(*args):
        return [l.split()[0] for l in ctl.ok(*args, "--no-legend").splitlines() if l]

    # top: at most 3 levels by default (systemd-cgtop's --depth default), all with --depth=all
    assert deep not in paths("top", "-b", "-n", "1")
    assert "/system.slice/b.service/child" in paths("top", "-b", "-n", "1")
    assert deep in paths("top", "-b", "-n", "1", "--depth=all")
    assert paths("top", "-b", "-n", "1", "--depth=1", "--sort=path") == ["/", "/idle.slice", "/system.slice",
                                                                         "/user.slice"]
    assert paths("top", "-b", "-n", "1", "--depth=0") == ["/"]
    # relative to the prefix, as cgtop's to its root
    assert paths("top", "/system.slice", "-b", "-n", "1", "--depth=1", "--sort=path") == [
        "/system.slice", "/system.slice/a.service", "/system.slice/b.service"]
    top_json = json.loads(ctl.ok("--json", "top", "-n", "1"))
    assert deep not in [c["path"] for c in top_json["cgroups"]]
    # list: every level by default
    assert deep in paths("list")
    assert deep not in paths("list", "--depth=3")
    assert deep in paths("list", "--depth=all")
    p = ctl.run("list", "--depth=some")
    assert p.returncode == EXIT_USAGE and p.stderr == "Invalid depth 'some': expected a number of levels or all.\n"


# ---- no escape sequences off a terminal -------------------------------------------------------------


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_no_escapes_off_a_terminal(ctl):
    """Off a terminal acctctl prints no escape sequence: no colour in a pipe
    (only --color=always puts it there: test_acctctl.test_top_colour; it does
    not read SYSTEMD_COLORS). Its escape sequences are top's full screen and
    colour, on a terminal whose TERM is not dumb: with TERM=dumb top prints
    plain tables."""
    for env in (base_env(TERM="xterm-256color"), base_env(TERM="xterm-256color", SYSTEMD_COLORS="1")):
        for args in (["list"], ["list", "--tree"], ["status"], ["show", "/system.slice/a.service"],
                     ["top", "-n", "1"], ["compare", "/", "memory", "1"]):
            p = ctl.run(*args, env=env)
            assert "\x1b" not in p.stdout + p.stderr, (args, p.stdout)
    # on a terminal with TERM=dumb: plain tables, no screen control, no raw mode
    t = Pty([acctctl_binary(), "--address", ctl.address, "top", "-n", "2", "-d", "0.2"],
            env=base_env(TERM="dumb"))
    try:
        assert t.proc.wait(10) == 0
        t.drain()
    finally:
        t.close()
    out = t.out.decode().replace("\r", "")
    assert "\x1b" not in out, repr(out[:300])
    frames = out.split("\n\n")
    assert len(frames) == 2 and all(f.startswith("CGROUP ") for f in frames), out
    # on a terminal that is not dumb, full screen (test_acctctl.test_top_interactive)
    t = Pty([acctctl_binary(), "--address", ctl.address, "top", "-n", "1"], env=base_env(TERM="xterm"))
    try:
        assert t.proc.wait(10) == 0
        t.drain()
    finally:
        t.close()
    assert b"\x1b[H" in t.out


# ---- bash completion ----------------------------------------------------------------------------------


def test_bash_completion_of_output_sort_depth():
    if not shutil.which("bash"):
        pytest.skip("no bash")
    env = base_env(PATH=os.path.dirname(acctctl_binary()) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                   ACCTD_ADDRESS="unix:/nonexistent")
    assert "--output=" in complete("acctctl list --", env) and "-o" in complete("acctctl top -", env)
    assert "--output=" not in complete("acctctl show --", env)
    assert complete("acctctl list --output=", env) == FIELDS + ["help"]
    assert complete("acctctl list -o psi", env) == ["psi-cpu", "psi-mem", "psi-io"]
    assert complete("acctctl top --output=cgroup,ta", env) == ["cgroup,tasks"]
    assert complete("acctctl list -o cgroup,read", env) == ["cgroup,read/s", "cgroup,read"]
    assert complete("acctctl list --sort=t", env) == ["tasks"]
    assert complete("acctctl top --sort=w", env) == ["write/s", "write"]
    assert complete("acctctl top --depth=", env) == ["all"]
