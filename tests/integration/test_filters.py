"""Configuration files and cgroup filters as documented: `--config ""` means no
file; include and exclude globs written relative to the root (as
conf/acctd.conf says) select what they name; a glob that selects nothing is
warned about once per start and per reload, instead of failing silently."""
import os
import signal
import subprocess

import acctd


def tree(fs):
    fs.mkdir("/system.slice/a.service", memory=8 << 20, cpu_usec=1000, procs=[10])
    fs.mkdir("/system.slice/b.service", memory=4 << 20, cpu_usec=1000, procs=[11])
    fs.mkdir("/user.slice/user-1000.slice", memory=2 << 20, procs=[12])


def test_config_empty_means_none(tmp_path):
    p = acctd.run(["--config", "", "--config-dropins", "", "--check-config"])
    assert p.returncode == 0, p.stderr
    assert "#   built-in defaults" in p.stdout, p.stdout
    # only the drop-ins
    dropins = tmp_path / "conf.d"
    dropins.mkdir()
    (dropins / "10-level.conf").write_text("[log]\nlevel = debug\n")
    p = acctd.run(["--config", "", "--config-dropins", str(dropins), "--check-config"])
    assert p.returncode == 0, p.stderr
    assert "level = debug" in p.stdout and "10-level.conf" in p.stdout, p.stdout


def test_relative_globs_select(fakecg, tmp_path):
    tree(fakecg)
    conf = acctd.write_config(str(tmp_path / "acctd.conf"), {
        "cgroups": {"include": "system.slice system.slice/*", "exclude": "system.slice/b.service"}})
    doc = acctd.dump(fakecg.root, conf)
    assert sorted(acctd.by_path(doc)) == ["/system.slice", "/system.slice/a.service"]


def test_unmatched_globs_warned(fakecg, tmp_path):
    tree(fakecg)
    conf = acctd.fast_config(tmp_path, cgroups__include="system.slice/* user.slice nosuch.slice/*",
                             cgroups__exclude="system.slice/b.service typo.slice",
                             metrics__include="*", metrics__exclude="nothing.slice/*")
    with acctd.Daemon(tmp_path, fakecg.root, conf) as d:
        d.wait_notify("READY=1")
        doc = d.next_state(1)
        assert sorted(acctd.by_path(doc)) == ["/system.slice/a.service", "/user.slice"]
        warned = ["[cgroups] include glob '/nosuch.slice/*' matches no cgroup",
                  "[cgroups] exclude glob '/typo.slice' matches no cgroup",
                  "[metrics] exclude glob '/nothing.slice/*' matches no cgroup"]
        for w in warned:
            log = d.wait_log(w)
            assert log.count(w) == 1, (w, log)
        for quiet in ("'/system.slice/*'", "'/user.slice'", "'/system.slice/b.service'", "glob '*'"):
            assert quiet not in log, (quiet, log)
        # once more per reload, not per pass
        d.signal(signal.SIGHUP)
        d.wait(lambda _: d.logtext().count("Configuration reloaded") == 1, what="the reload")
        d.next_state(3)
        for w in warned:
            log = d.wait_log(w, count=2)
            assert log.count(w) == 2, (w, log)


def test_list_when_the_root_is_filtered_out(fakecg, tmp_path):
    """An include filter that selects only cgroups below "/" (or below a
    prefix) leaves the prefix untracked: List still lists what is tracked under
    it, and only a prefix with nothing tracked at or under it is unknown."""
    tree(fakecg)
    conf = acctd.fast_config(tmp_path, cgroups__include="system.slice/*")
    ctl = os.environ.get("ACCTCTL") or os.path.join(acctd.ROOT, "build", "daemon", "acctctl", "acctctl")
    with acctd.Daemon(tmp_path, fakecg.root, conf) as d:
        d.wait_notify("READY=1")
        assert sorted(acctd.by_path(d.next_state(1))) == ["/system.slice/a.service", "/system.slice/b.service"]
        env = dict(os.environ, ACCTD_ADDRESS="unix:" + d.socket)
        for args in (["list"], ["list", "/system.slice"], ["list", "--tree"], ["top", "-b", "-n", "1"]):
            p = subprocess.run([ctl] + args + ["--json"] * (args[0] == "list"), env=env,
                               capture_output=True, text=True, timeout=30)
            assert p.returncode == 0, (args, p.stdout, p.stderr)
            assert "/system.slice/a.service" in p.stdout and "/system.slice/b.service" in p.stdout, (args, p.stdout)
        p = subprocess.run([ctl, "list", "/user.slice"], env=env, capture_output=True, text=True, timeout=30)
        assert p.returncode != 0 and "No such cgroup: /user.slice" in p.stderr, (p.returncode, p.stderr)
