"""acctctl and programs' charges (issue 32, docs/charges.md), with a real
acctd on a fake cgroup tree and its history in a real SQLite store: show
prints charged values in their resources' units (read from the files that
acctd names), usage prints the integrals with units and puts them in its CSV,
history plots and tabulates a charged resource, status tells the charges'
state and list shows a charged resource's column."""
import csv
import io
import os
import re
import time

import pytest

from test_api_client import IFACE, Varlink, api_daemon, ok
from test_history import now_us, poll, recording
from test_history_cli import ctl

MiB = 1 << 20
RESOURCES = {
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "0",
    "resource.inflight__unit": "count", "resource.inflight__budget": "0",
    "resource.licence__unit": "seconds", "resource.licence__budget": "0",
}


@pytest.fixture
def env(fakecg, tmp_path):
    fakecg.mkdir("/svc", memory=8 * MiB)
    fakecg.mkdir("/svc/job", memory=4 * MiB)
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s", **RESOURCES) as (d, sock):
        yield {"fs": fakecg, "d": d, "sock": sock}


def call(sock, method, params):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + "." + method, params))


def charge(sock, resource, delta, cgroup):
    call(sock, "Charge", {"resource": resource, "delta": delta, "cgroup": cgroup})


def run(sock, *args):
    p = ctl(sock, *args)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout


def table_row(text, first):
    """The cells of the row whose first cell is `first` (split on runs of
    two or more blanks, as acctctl's tables separate columns)."""
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells and cells[0] == first:
            return cells
    raise AssertionError("no row %r in:\n%s" % (first, text))


def config_sources(sock):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + ".Status", {}))["status"]["config_sources"]


def test_show_prints_charges_in_their_units(env):
    sock = env["sock"]
    charge(sock, "gpu", 3 * MiB, "/svc/job")
    charge(sock, "inflight", 7, "/svc/job")
    charge(sock, "licence", 1500000, "/svc/job")  # 1.5 s, in microseconds
    charge(sock, "gpu", MiB, "/svc")
    out = run(sock, "show", "/svc/job")
    # RESOURCE UNIT SELF [BOUND] SUBTREE [BOUND] AGE EXACT: the bounds are 0
    # (budget 0), blank as every exact value's in show; the age of a live read
    assert table_row(out, "gpu") == ["gpu", "bytes", "3.0M", "3.0M", "0.0s", "3145728/3145728"], out
    assert table_row(out, "inflight") == ["inflight", "count", "7", "7", "0.0s", "7/7"], out
    assert table_row(out, "licence") == ["licence", "seconds", "1.5s", "1.5s", "0.0s", "1500000/1500000"], out
    assert "Units not known" not in out
    # the parent: its own MiB, its subtree's 4 MiB
    out = run(sock, "show", "/svc")
    assert table_row(out, "gpu")[:4] == ["gpu", "bytes", "1.0M", "4.0M"], out


def test_show_units_unknown_when_the_configuration_changed(env):
    """A unit applies from acctd's start: a file changed since is not
    trusted, and show says so and prints the integers."""
    sock = env["sock"]
    charge(sock, "gpu", 3 * MiB, "/svc/job")
    [conf] = config_sources(sock)
    later = time.time() + 60
    os.utime(conf, (later, later))
    out = run(sock, "show", "/svc/job")
    assert "Units not known (%s changed after acctd started)" % conf in out, out
    assert table_row(out, "gpu")[:4] == ["gpu", "?", "3145728", "3145728"], out
