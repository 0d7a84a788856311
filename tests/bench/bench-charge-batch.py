#!/usr/bin/env python3
"""bench-charge-batch - deltas per second through ChargeBatch (issue 32's
target: >= 2,000,000/s) against a real acctd.

Builds a small fake v2 tree (tests/fakecg.py), starts acctd on it with one
declared resource, and runs tests/bench/bench-charge-batch.c (libacct-client's
acct_client_charge_batch(), which sends messages of at most 1024 charges and
60 KiB) with 1, 2 and 4 client connections for --seconds each. Each delta is a
charge of 1 to one cgroup, so after every run the precise Get of that cgroup
must equal the sum of the deltas applied: the figure counts only deltas that
the daemon charged.

  bench-charge-batch.py [--build DIR] [--seconds S] [--batch N]

Prints a table and the load average before and after (the machine is shared).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, HERE)
import fakecg  # noqa: E402

from importlib import import_module  # noqa: E402

bench_api = import_module("bench-api")


def cpu_seconds(pid):
    """User + system CPU of process pid so far, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--batch", type=int, default=100000)
    ap.add_argument("--clients", default="1,2,4")
    a = ap.parse_args()
    acctd = os.path.join(a.build, "daemon", "acctd", "acctd")
    client = os.path.join(a.build, "tests", "bench", "bench-charge-batch")
    for p in (acctd, client):
        if not os.path.exists(p):
            sys.exit("%s not built" % p)
    work = tempfile.mkdtemp(prefix="bench-charge-batch-")
    try:
        root = os.path.join(work, "cg")
        fakecg.build(root, mode="v2", count=10, depth=2)
        fs = fakecg.FakeCgroupFS.open(root, autosave=False)
        target = sorted(p for p in fs.paths() if p != "/")[0]
        conf = os.path.join(work, "acctd.conf")
        with open(conf, "w") as f:
            f.write("[log]\nlevel = notice\n[resource.bench]\nunit = count\nbudget = 1048576\n"
                    "[api]\nmax_charge_batch = 100000\n[history]\nenabled = no\n")
        sock = os.path.join(work, "sock", "io.acctd")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        # Charges are durable (state file): a state directory of its own, or
        # the run would start from what earlier runs (as root: /var/lib/acctd,
        # shared with every other acctd on the machine) left charged.
        env["STATE_DIRECTORY"] = os.path.join(work, "state")
        os.makedirs(env["STATE_DIRECTORY"])
        log = open(os.path.join(work, "acctd.log"), "w")
        proc = subprocess.Popen([acctd, "--config", conf, "--config-dropins", "", "--socket", sock,
                                 "--metrics-listen", "none"] + fakecg.acctd_root_args(root),
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            end = time.monotonic() + 120
            while True:
                if proc.poll() is not None or time.monotonic() > end:
                    sys.exit("acctd did not start; see %s" % log.name)
                try:
                    bench_api.call(sock, "io.acctd.Accounting.Status")
                    break
                except (OSError, RuntimeError):
                    time.sleep(0.2)
            load0 = os.getloadavg()
            rows = []
            expected = 0
            for n in [int(x) for x in a.clients.split(",")]:
                cpu0 = cpu_seconds(proc.pid)
                out = subprocess.run([client, "unix:" + sock, "bench", target, str(a.seconds), str(a.batch), str(n)],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit("bench-charge-batch failed: %s" % out.stderr)
                r = json.loads(out.stdout)
                # acctd's own CPU: on a small machine the clients (json-c
                # building each message) take most of it, so deltas/s alone
                # can measure the client; deltas per acctd CPU-second is the
                # daemon's cost, whoever else runs.
                r["acctd_cpu"] = cpu_seconds(proc.pid) - cpu0
                expected += r["applied"]
                got = bench_api.call(sock, "io.acctd.Accounting.Get",
                                     {"cgroup": target, "precise": True})["parameters"]["charges"]["bench"]["self"]
                if got["value"] != expected:
                    sys.exit("charged %d, acctd holds %d" % (expected, got["value"]))
                rows.append(r)
            load1 = os.getloadavg()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        print("| clients | deltas/s | deltas applied | seconds | acctd CPU s | deltas per acctd CPU-s |")
        print("|--------:|---------:|---------------:|--------:|------------:|-----------------------:|")
        for r in rows:
            per = r["applied"] / r["acctd_cpu"] if r["acctd_cpu"] > 0 else 0
            print("| %d | %s | %s | %.1f | %.2f | %s |" % (r["clients"], format(int(r["deltas_per_s"]), ","),
                                                         format(r["applied"], ","), r["seconds"], r["acctd_cpu"],
                                                         format(int(per), ",")))
        print()
        print("machine: %s; load average before %.2f %.2f %.2f, after %.2f %.2f %.2f"
              % ((bench_api.machine(),) + load0 + load1))
        print("every applied delta checked: precise Get == sum of the deltas")
    finally:
        shutil.rmtree(work, ignore_errors=True) if not os.environ.get("KEEP") else None


if __name__ == "__main__":
    main()
