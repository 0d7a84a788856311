"""Floating-point values are printed as the shortest text that reads back to
the same double (issue 11, item 13), in every document acctd writes: the
ledger as JSON (--dump, the API's replies as acctctl --json passes them on)
and the /metrics page.

The fake tree holds PSI averages such as 27.99 (which "%.17g" prints as
27.989999999999998); every number in the documents is compared with Python's
repr(), which is the shortest text that reads back."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import acctd  # noqa: E402
import test_acctctl  # noqa: E402
import test_metrics  # noqa: E402

INPLACE = {"mode": "v2", "write_mode": "inplace"}  # values change under cached descriptors

# A JSON or Prometheus number with a fraction or an exponent.
FLOAT = re.compile(r'(?<![\w."-])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w."])')


def significant(text):
    mant = re.split('[eE]', text)[0].replace('-', '').replace('.', '')
    return len(mant.strip('0')) or 1


def noisy_numbers(text):
    """The numbers in `text` written with more digits than they need."""
    bad = []
    for m in FLOAT.finditer(text):
        tok = m.group(0)
        if '.' not in tok and 'e' not in tok.lower():
            continue
        v = float(tok)
        if float(repr(v)) != v or significant(tok) > significant(repr(v)):
            bad.append(tok)
    return bad


def build(fs):
    fs.mkdir("/a.slice", memory=64 << 20, cpu_usec=1_000_000, procs=[100])
    fs.mkdir("/a.slice/b.service", memory=32 << 20, cpu_usec=700_000, procs=[101])
    fs.set_pressure("/a.slice", "cpu", some_avg10=27.99, some_avg60=0.1, some_avg300=1.23, some_total_us=5)
    fs.set_pressure("/a.slice/b.service", "memory", some_avg10=0.07, some_avg60=33.33, some_avg300=4.56,
                    full_avg10=0.29, some_total_us=7)


def churn(fs, d):
    """Changes across several passes that give rates (CPU, I/O): arbitrary
    doubles, non-zero when the documents are read right after."""
    d.next_state()
    for i in range(12):
        fs.add_cpu("/a.slice/b.service", 123_457 + i)
        fs.add_io("/a.slice/b.service", "8:0", rbytes=1_234_567 + i, wbytes=7_654_321, rios=12, wios=34)
        time.sleep(0.04)


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_dump_shortest_floats(fakecg):
    build(fakecg)
    p = acctd.run(["--dump", "--config", os.devnull, "--config-dropins", ""] + acctd.root_args(fakecg.root))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    a = acctd.by_path(doc)["/a.slice"]
    assert a["pressure"]["cpu"]["some"]["avg10"] == 27.99
    assert '"avg10":27.99' in p.stdout.replace(" ", "")
    assert noisy_numbers(p.stdout) == []


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_metrics_shortest_floats(fakecg, tmp_path):
    build(fakecg)
    d, m = test_metrics.start(tmp_path, fakecg)
    with d:
        churn(fakecg, d)
        page = m.page("/metrics?family=all")[0]
    assert noisy_numbers(page) == []
    assert "0.2799" in page


@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_api_shortest_floats(fakecg, tmp_path):
    build(fakecg)
    sock = tmp_path / "api.sock"
    d = acctd.Daemon(tmp_path, fakecg.root, acctd.fast_config(tmp_path), extra=["--socket", str(sock)])
    with d:
        churn(fakecg, d)
        for args in (["show", "/a.slice"], ["list"], ["status"]):
            p = subprocess.run([test_acctctl.acctctl_binary(), "--address", "unix:%s" % sock, "--json"] + args,
                               capture_output=True, text=True, timeout=30)
            assert p.returncode == 0, p.stderr
            assert noisy_numbers(p.stdout) == [], args


def test_noisy_numbers_detects_noise():
    """The check itself finds what "%.17g" writes."""
    assert noisy_numbers('{"a":27.989999999999998,"b":0.10000000000000001}') == ["27.989999999999998",
                                                                                "0.10000000000000001"]
    assert noisy_numbers('{"a":27.99,"b":0.1,"c":1e-07,"d":5.0,"e":-0.0}') == []
