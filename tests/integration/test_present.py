"""What acctd presents for values it never read and for the root, on this
host's real cgroups (root only; the hybrid or legacy layout where noted).

A cgroup that exists only in the v1 memory hierarchy has no CPU accounting:
its CPU time, CPU rate and their averages are absent everywhere (null in the
state file and the API, `-` in acctctl's tables, no series in /metrics),
never 0. The root's memory is one figure everywhere (list, show, status,
/metrics, the state file), never below the sum of its top-level children."""
import json
import os
import re
import subprocess
import time

import pytest

import acctd
from test_acctctl import base_env, run_ctl
from test_metrics import Metrics, free_port, series

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to create cgroups")

V1_MEMORY = "/sys/fs/cgroup/memory"


def v1_only_dir(name):
    """Create NAME in the v1 memory hierarchy only; its path, or skip."""
    if not os.path.exists(os.path.join(V1_MEMORY, "memory.usage_in_bytes")):
        pytest.skip("no v1 memory hierarchy here (a cgroup without CPU accounting needs one)")
    for other in ("/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(other, name)):
            pytest.skip("%s exists in %s too" % (name, other))
    path = os.path.join(V1_MEMORY, name)
    os.mkdir(path)
    return path


@pytest.fixture
def memory_only():
    name = "i11-present-memonly-%d" % os.getpid()
    path = v1_only_dir(name)
    try:
        yield "/" + name
    finally:
        os.rmdir(path)


def start(tmp_path):
    port = free_port()
    sock = str(tmp_path / "api.sock")
    d = acctd.Daemon(tmp_path, None, acctd.fast_config(tmp_path, metrics__families="all"),
                     extra=["--metrics-listen", "127.0.0.1:%d" % port, "--socket", sock])
    return d, Metrics(port), "unix:" + sock


def live(doc, path):
    for c in doc["cgroups"]:
        if c["path"] == path and c["state"] == "live":
            return c
    return None


def list_row(text, path):
    """The cells of `path`'s row in `acctctl list --no-legend` (flat)."""
    for line in text.splitlines():
        cells = line.split()
        if cells and cells[0] == path:
            return cells
    raise AssertionError("%s not in list output:\n%s" % (path, text))


def test_no_cpu_accounting_is_absent(memory_only, tmp_path):
    d, metrics, address = start(tmp_path)
    with d:
        metrics.wait()
        # the cgroup read (memory), and the root's CPU rate computed (two readings)
        doc = d.wait(lambda doc: live(doc, memory_only)["values"]["memory"] is not None
                     and live(doc, "/")["cpu_rate_cores"] is not None, what="memory and the root's rate")
        doc = d.next_state(3)
        cg = live(doc, memory_only)
        assert cg["hierarchies"] == ["memory"], cg["hierarchies"]
        assert cg["values"]["memory"] is not None
        assert cg["values"]["cpu.usage"] is None
        assert cg["cpu_rate_cores"] is None, cg["cpu_rate_cores"]
        # the control: a cgroup with CPU accounting has its rate
        assert live(doc, "/")["cpu_rate_cores"]["rate"]["value"] >= 0

        # API: Get and List
        got = run_ctl(["--json=short", "show", memory_only], address)
        assert got.returncode == 0, got.stderr
        rec = json.loads(got.stdout)
        assert rec["cpu_rate_cores"] is None
        lst = run_ctl(["--json=short", "list", memory_only], address)
        assert lst.returncode == 0, lst.stderr
        entry = [c for c in map(json.loads, lst.stdout.splitlines()) if c["path"] == memory_only][0]
        assert entry["cpu_rate"] is None, entry
        assert entry["memory"] is not None

        # acctctl tables: "-", not 0.00
        env = base_env(COLUMNS="250")
        text = run_ctl(["--no-legend", "list", "--depth=0", memory_only], address, env=env).stdout
        cells = list_row(text, memory_only)
        # CGROUP MEMORY [±BOUND] CPU LOAD PSI-CPU PSI-MEM PSI-IO AGE
        cpu = cells[-6]
        assert cpu == "-", "CPU column %r in %r" % (cpu, cells)
        show = run_ctl(["show", memory_only], address, env=env).stdout
        m = re.search(r"^\s*CPU rate:\s*(.*)$", show, re.M)
        assert m and m.group(1).strip() == "-", show
        assert re.search(r"^cpu\.usage\s+-\s+never read", show, re.M), show

        # /metrics: no series for it, while the root has one
        page, _ = metrics.page()
        assert memory_only in series(page, "acctd_memory_bytes")
        assert memory_only not in series(page, "acctd_cpu_rate_cores"), \
            "invented CPU rate %r" % series(page, "acctd_cpu_rate_cores").get(memory_only)
        assert memory_only not in series(page, "acctd_cpu_rate_average_cores")
        assert "/" in series(page, "acctd_cpu_rate_cores")
