#!/usr/bin/env python3
"""run-pytest.py - one integration file's tests as meson runs them:
pytest.main(ARGS), then an immediate exit with its status.

Why not "python3 -m pytest": three times a file's tests had all passed and
the process then did not exit until meson's timeout killed it (float_text
and history in session 25; TSan's fresh beside two CPU hogs and 10,000 extra
cgroups in session 28: "10 passed in 246.94s", killed at 300 s). What holds
an interpreter at its exit (a thread not marked daemon, a child process that
keeps the output pipe open) is the harness's doing, not acctd's, and it is
named here instead of waited for: threads still running and child processes
still alive are printed to stderr, the children are killed, and the process
ends with os._exit(). No test relies on atexit handlers (tests/integration
registers none); fixtures' teardown runs inside pytest.main().

    run-pytest.py PYTEST-ARGS...
"""
import os
import signal
import sys
import threading

import pytest


def children():
    """(pid, command line) of this process's live children, from /proc."""
    me, found = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        # state and ppid follow the command name's closing parenthesis
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[1] == me and fields[0] != "Z":
            found.append((int(pid), cmd))
    return found


def main():
    rc = int(pytest.main(sys.argv[1:]))
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon and t.is_alive():
            print("run-pytest: thread %r still running at exit" % t.name, file=sys.stderr)
    for pid, cmd in children():
        print("run-pytest: child %d still running at exit, killed: %s" % (pid, cmd[:200]), file=sys.stderr)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == "__main__":
    main()
