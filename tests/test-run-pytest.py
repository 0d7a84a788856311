#!/usr/bin/env python3
"""The integration runner (tests/integration/run-pytest.py) ends when pytest
is done, whatever the tests left behind: a file whose test leaves a thread
that is not a daemon and a child process exits at once with pytest's status,
names both, and kills the child. Under "python3 -m pytest" the same file
does not exit until the thread ends (10 minutes here)."""
import os
import subprocess
import sys
import tempfile
import time

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration", "run-pytest.py")

LEAKY = '''
import subprocess, threading, time

def test_leaves_a_thread_and_a_child():
    threading.Thread(target=time.sleep, args=(600,), name="sleeper").start()
    p = subprocess.Popen(["sleep", "600"])
    with open("child.pid", "w") as f:
        f.write(str(p.pid))
'''

FAILING = '''
def test_fails():
    assert False
'''


def run(tmp, body):
    with open(os.path.join(tmp, "test_case.py"), "w") as f:
        f.write(body)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, RUNNER, "-q", "-p", "no:cacheprovider", "test_case.py"], cwd=tmp,
                       capture_output=True, text=True, timeout=120)
    return p, time.monotonic() - t0


def main():
    try:
        import pytest  # noqa: F401
    except ImportError:
        print("SKIP: pytest is not installed (apt-get install python3-pytest)")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        p, took = run(tmp, LEAKY)
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
        assert took < 60, took
        assert "thread 'sleeper' still running at exit" in p.stderr, p.stderr
        pid = int(open(os.path.join(tmp, "child.pid")).read())
        assert "child %d still running at exit, killed: sleep 600" % pid in p.stderr, p.stderr
        for _ in range(100):  # killed: gone once its parent (init, by now) reaps it
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break
            except FileNotFoundError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("child %d still alive" % pid)
        p, _ = run(tmp, FAILING)
        assert p.returncode == 1, (p.returncode, p.stdout)
        assert "still running" not in p.stderr, p.stderr
    print("run-pytest: exits at once, names and kills what tests leave, keeps pytest's status")


main()
