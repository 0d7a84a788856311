"""acctctl's completions for bash, zsh and fish (shell-completion/), each run
in its real shell: every command, every option of each command, every -o
field and compare QUANTITY that acctctl's own help lists (so that a command
or an option added to acctctl's verbs[] table without its completions fails
here, in whichever shell lacks it), option values, and cgroup paths asked
from the running daemon. A shell that is not installed is skipped, saying so
(tools/debian-packages lists zsh and fish for the tests).

bash is driven through its completion function (test_acctctl.complete), zsh
on a pseudo-terminal with compinit and compadd wrapped to write what it is
given, fish with `complete -C`. The daemon and the fake tree are
test_acctctl.py's."""
import importlib.util
import os
import pty
import re
import select
import shutil
import subprocess
import tempfile
import time

import pytest

from test_acctctl import INPLACE, acctctl_binary, base_env, complete, ctl, run_ctl

assert ctl  # the fixture, imported for the tests below

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZSH_DIR = os.path.join(ROOT, "shell-completion", "zsh")
FISH_FILE = os.path.join(ROOT, "shell-completion", "fish", "acctctl.fish")

# acctctl's help read as tests/test-man-coverage.py reads it for the man page
_spec = importlib.util.spec_from_file_location("man_coverage", os.path.join(ROOT, "tests", "test-man-coverage.py"))
man_coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(man_coverage)
help_options = man_coverage.help_options


def acctctl_help(*args):
    p = run_ctl(list(args) + ["--help"])
    assert p.returncode == 0, p.stderr
    return p.stdout


def help_verbs():
    commands = acctctl_help().split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  ([a-z]+)", commands, re.M)


def shell_env(**extra):
    return base_env(PATH=os.path.dirname(acctctl_binary()) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                    **extra)


class Zsh:
    """An interactive `zsh -f` on a pseudo-terminal with compinit over
    shell-completion/zsh: complete(line) types line and a tab, and returns
    the words that the completion functions gave compadd and that match.
    compadd's calls with -O, -A or -D are the completion system's own, which
    filter or describe: they are not candidates. (No comments in SETUP: an
    interactive zsh -f takes '#' as a word.)"""

    SETUP = r"""
PS1='%% '; bindkey -e; unsetopt auto_list auto_menu list_beep beep
fpath=(%s $fpath); autoload -Uz compinit; compinit -u -D
compadd() {
  if (( ${@[(I)-O]} || ${@[(I)-A]} || ${@[(I)-D]} )); then builtin compadd "$@"; return; fi
  local -a hits; builtin compadd -O hits "$@"; (( $#hits )) && print -rl -- $hits >> $CANDIDATES
  builtin compadd "$@"
}
_t_end() { print -r -- '<END>' >> $CANDIDATES }
_t_complete() { comppostfuncs=(_t_end); _main_complete }
zle -C t-complete complete-word _t_complete; bindkey '^I' t-complete
print READY
"""

    def __init__(self, env):
        self.tmp = tempfile.mkdtemp(prefix="acctctl-zsh-")
        self.file = os.path.join(self.tmp, "candidates")
        env = dict(env, HOME=self.tmp, TERM="dumb", CANDIDATES=self.file)
        env.pop("ZDOTDIR", None)
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(["zsh", "-f", "-i"], stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.out = b""
        os.write(self.master, (self.SETUP % ZSH_DIR).encode())
        self.wait(lambda: b"READY\r\n" in self.out, "zsh's setup")

    def wait(self, done, what):
        end = time.monotonic() + 30
        while not done():
            assert time.monotonic() < end, "no %s: %r" % (what, self.out[-2000:])
            r, _, _ = select.select([self.master], [], [], 0.1)
            if r:
                self.out += os.read(self.master, 65536)

    def complete(self, line):
        open(self.file, "w").close()
        os.write(self.master, line.encode() + b"\t")
        self.wait(lambda: open(self.file).read().endswith("<END>\n"), "completion of %r" % line)
        os.write(self.master, b"\x15")  # ^U: an empty line for the next
        return [w for w in open(self.file).read().splitlines() if w != "<END>"]

    def close(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self.master)
        shutil.rmtree(self.tmp, ignore_errors=True)


def fish_complete(line, env):
    home = tempfile.mkdtemp(prefix="acctctl-fish-")
    try:
        p = subprocess.run(["fish", "--no-config", "-c", 'source "$argv[1]"; complete -C "$argv[2]"', FISH_FILE,
                            line], capture_output=True, text=True, env=dict(env, HOME=home), timeout=30)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return [w.split("\t", 1)[0] for w in p.stdout.splitlines()]


@pytest.fixture(params=["bash", "zsh", "fish"])
def shell(request):
    """complete(line, env) in one of the shells; the candidates as the word
    they complete: without the "--option=" before a value, the fields before
    a ',', or the '=' that bash adds after an option, each once."""
    name = request.param
    if not shutil.which(name):
        pytest.skip("%s is not installed (apt-get install %s; tools/debian-packages [check])" % (name, name))
    sessions = []

    def run(line, env):
        if name == "bash":
            words = complete(line, env)
        elif name == "fish":
            words = fish_complete(line, env)
        else:
            if not sessions or sessions[-1][0] is not env:
                sessions.append((env, Zsh(env)))
            words = sessions[-1][1].complete(line)
        out = []
        for w in words:
            w = re.sub(r"^--[a-z-]+=(?=.)", "", w).rstrip("=") if w.startswith("--") else w
            w = w.rsplit(",", 1)[-1]
            if w not in out:
                out.append(w)
        return out

    run.name = name
    yield run
    for _, z in sessions:
        z.close()


def test_every_command_option_field_quantity(shell):
    env = shell_env(ACCTD_ADDRESS="unix:/nonexistent")
    verbs = help_verbs()
    assert "status" in verbs and "help" in verbs, verbs
    assert sorted(shell("acctctl ", env)) == sorted(verbs)
    assert sorted(shell("acctctl re", env)) == ["reconcile", "reload"]
    common = help_options(acctctl_help().split("Options:", 1)[1])
    assert {"--address", "--color", "-l", "--full"} <= common, common
    assert common <= set(shell("acctctl -", env))
    for v in verbs:
        want = help_options(acctctl_help(v)) | common
        got = set(shell("acctctl %s -" % v, env))
        assert want <= got, (shell.name, v, sorted(want - got))
    # an option of another command is not offered
    assert "--tree" in shell("acctctl list --", env) and "--tree" not in shell("acctctl show --", env)
    assert "--precise" not in shell("acctctl list --", env)

    fields = re.findall(r"^  (\S+)", run_ctl(["list", "--output=help"]).stdout, re.M)
    assert "psi-cpu" in fields and "read/s" in fields, fields
    assert shell("acctctl list --output=", env) == fields + ["help"] or \
        sorted(shell("acctctl list --output=", env)) == sorted(fields + ["help"])
    assert sorted(shell("acctctl top -o cgroup,ta", env)) == ["tasks"]
    quantities = re.findall(r"\b((?:memory|swap|cpu|tasks|io|psi)(?:\.[a-z_]+)*)[,.]\s",
                            acctctl_help("compare").split("QUANTITY:", 1)[1].split("THRESHOLD:", 1)[0])
    assert len(quantities) > 30 and "psi.io.full" in quantities, quantities
    assert sorted(shell("acctctl compare /x ", env)) == sorted(quantities)


def test_option_values(shell):
    env = shell_env(ACCTD_ADDRESS="unix:/nonexistent")
    assert sorted(shell("acctctl list --sort=p", env)) == ["path", "pressure"]
    assert sorted(shell("acctctl top --sort=w", env)) == ["write", "write/s"]
    assert sorted(shell("acctctl usage --sort=", env)) == ["cpu", "io", "memory", "path", "read", "write"]
    assert shell("acctctl usage --since ye", env) == ["yesterday"]
    assert shell("acctctl history /x --plot=m", env) == ["memory"]
    assert sorted(shell("acctctl --color=", env)) == ["always", "auto", "never"]
    assert sorted(shell("acctctl --json=", env)) == ["lines", "pretty", "short"]
    assert sorted(shell("acctctl tune --auto-tune=", env)) == ["no", "yes"]
    assert shell("acctctl list --depth=", env) == ["all"]
    assert sorted(shell("acctctl help r", env)) == ["reconcile", "reload"]


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_cgroups_from_the_daemon(shell, ctl):
    env = shell_env()
    assert sorted(shell("acctctl --address %s show /system.slice/b" % ctl.address, env)) == [
        "/system.slice/b.service", "/system.slice/b.service/child"]
    assert sorted(shell("acctctl --address=%s compare /u" % ctl.address, env)) == ["/user.slice"]
    env = shell_env(ACCTD_ADDRESS=ctl.address)
    assert shell("acctctl watch /system.slice/a.service /u", env) == ["/user.slice"]
    assert shell("acctctl usage --prefix /u", env) == ["/user.slice"]
    # no daemon: nothing, quietly
    assert shell("acctctl show /", shell_env(ACCTD_ADDRESS="unix:/nonexistent")) == []
