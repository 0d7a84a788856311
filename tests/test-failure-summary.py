#!/usr/bin/env python3
"""test-failure-summary.py - tools/failure-summary (the reasons `make check`
prints last when a meson test run failed) on a testlog.json made here: a
pytest failure, the soak's verdict, a cmocka failure, a timeout and a test
that passed; one reason each, in order, the passing test absent; the size
limits; a log named by LOGBASE; exit 2 and a message for a missing log."""
import json
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "failure-summary")

PYTEST = """....F
    def test_acctd_matches_kernel(tmp_path):
>       assert not rep.fail, "acctd disagrees with the kernel"
E       AssertionError: acctd disagrees with the kernel:
E           /x memory.current: acctd 5 (bound 0), kernel [6, 7]
=========================== short test summary info ============================
FAILED test_kernel_truth.py::test_acctd_matches_kernel - AssertionError: acctd...
1 failed in 200.00s
"""
SOAK = "resource samples ...\nacctd's log, the end:\nsome log line\nFAIL:\n- own memory grew: 1 KiB\nsoak: 60 s, figures\n"
CMOCKA = "[ RUN      ] test_b\n0x1 != 0x2\n[   LINE   ] --- test-x.c:12: error: Failure!\n[  FAILED  ] test_b\n"


def run(build, *logbase):
    return subprocess.run([sys.executable, TOOL, build, *logbase], capture_output=True, text=True)


def write(build, tests, logbase="testlog"):
    os.makedirs(os.path.join(build, "meson-logs"), exist_ok=True)
    with open(os.path.join(build, "meson-logs", logbase + ".json"), "w") as f:
        for name, result, out in tests:
            f.write(json.dumps({"name": name, "result": result, "returncode": 1, "duration": 2.0, "stdout": out}) + "\n")


def main():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        write(d, [("s / ok", "OK", "E   not a failure\n"), ("s / truth", "FAIL", PYTEST), ("s / soak", "FAIL", SOAK),
                  ("s / unit", "FAIL", CMOCKA), ("s / slow", "TIMEOUT", "\n".join("line %d" % i for i in range(40)))])
        r = run(d)
        out = r.stdout
        check(r.returncode == 0, "exit %d on a readable log" % r.returncode)
        check("s / ok" not in out and "not a failure" not in out, "a passing test is listed:\n" + out)
        heads = [out.find("--- s / %s: " % n) for n in ("truth", "soak", "unit", "slow")]
        check(-1 not in heads and heads == sorted(heads), "the failed tests, in order:\n" + out)
        check("/x memory.current: acctd 5 (bound 0), kernel [6, 7]" in out and "FAILED test_kernel_truth.py" in out,
              "pytest's E and FAILED lines:\n" + out)
        check("def test_acctd" not in out, "pytest's source lines are not a reason:\n" + out)
        check("- own memory grew: 1 KiB" in out and "soak: 60 s" in out and "some log line" not in out,
              "the soak's verdict alone:\n" + out)
        check("error: Failure!" in out and "[  FAILED  ] test_b" in out and "[ RUN" not in out, "cmocka's lines:\n" + out)
        check("line 39" in out and "line 27" not in out, "the last 12 lines of an unknown log:\n" + out)
        check("--- s / slow: TIMEOUT" in out, "the result is named:\n" + out)

        write(d, [("s / big", "FAIL", "\n".join("E   %s" % ("x" * 200) for _ in range(30)))] * 6)
        out = run(d).stdout
        check(len(out) < 9200 and "[... cut at 9000 characters]" in out, "the total limit (%d characters)" % len(out))
        check(out.count("    [...]") >= 3, "the per-test limit")

        write(d, [("s / ok", "OK", "")])
        r = run(d)
        check(r.returncode == 0 and r.stdout == "", "nothing printed when nothing failed: %r" % r.stdout)

        # make check's runs in one build directory each have a log of their own
        write(d, [("s / alone", "FAIL", CMOCKA)], logbase="testlog-alone")
        r = run(d, "testlog-alone")
        check(r.returncode == 0 and "--- s / alone: FAIL" in r.stdout and "testlog-alone.txt" in r.stdout,
              "the log named by LOGBASE:\n" + r.stdout)
        check(run(d).stdout == "", "the default log is testlog.json")

        r = run(os.path.join(d, "missing"))
        check(r.returncode == 2 and "cannot read" in r.stderr, "a missing log: exit %d, %r" % (r.returncode, r.stderr))

    for f in failures:
        print("FAIL: " + f)
    print("%d checks failed" % len(failures) if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
