#!/usr/bin/env python3
"""bench-query-fairness.py - root's history query beside a hostile one
(issue 27, item 2 and acceptance 2).

For each run: a fresh acctd records a small fake tree (tests/fakecg.py, v2)
into a fresh store at a 1 s interval; once it has recorded, `nobody`
(setpriv) sends `Usage` with since_us 0 and until_us 2^62 on --conns
connections (a 100-byte call each), and 0.5 s later root runs `acctctl
usage --since=-1h`; the figure is root's wall time, capped at --cap seconds
(then "> cap"). With --lives N the store first gets N removed lives two
hours back (two points each, a run of their own), so that nobody's queries
take seconds on any build: then it measures fairness, not only the
planner. acctd is stopped after each run (SIGTERM, then SIGKILL after
--cap: the time it took is reported too).

  bench-query-fairness.py [--build DIR] [--runs R] [--cap S] [--conns C] [--lives N] [--json FILE]

acctd and acctctl come from DIR/daemon/acctd and DIR/daemon/acctctl (default:
build/ in the source tree). Needs root (setpriv to nobody).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FAKECG = os.path.join(SRC, "tests", "fakecg.py")
IFACE = "io.acctd.Accounting"
FAR = 1 << 62

# nobody's client: send Usage on each of N connections, then wait to be killed.
NOBODY_CLIENT = r"""
import json, socket, sys, time
path, n, far = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(json.dumps({"method": "io.acctd.Accounting.Usage",
                          "parameters": {"since_us": 0, "until_us": far}}).encode() + b"\0")
    conns.append(s)
print("sent", flush=True)
sys.stdin.readline()
"""


def call(sock_path, method, params=None, timeout=10):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock_path)
    s.sendall(json.dumps({"method": method, "parameters": params or {}}).encode() + b"\0")
    buf = b""
    while b"\0" not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf.split(b"\0")[0])


class Acctd:
    def __init__(self, acctd, root, tmp, db):
        self.sock = os.path.join(tmp, "io.acctd")
        os.chmod(tmp, 0o755)
        conf = os.path.join(tmp, "acctd.conf")
        with open(conf, "w") as f:
            f.write("[history]\npath = %s\ninterval = 1s\n" % db)
        self.log = open(os.path.join(tmp, "acctd.log"), "a")
        self.proc = subprocess.Popen([acctd, "--config", conf, "--config-dropins", "", "--cgroup-root", root,
                                      "--meminfo", os.path.join(root, ".fakecg-meminfo"), "--socket", self.sock,
                                      "--metrics-listen", "none", "--log-level", "info"],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, STATE_DIRECTORY=tmp))
        started = time.time_ns() // 1000
        end = time.monotonic() + 120
        while time.monotonic() < end:
            try:
                h = call(self.sock, IFACE + ".Status")["parameters"]["status"]["history"]
                if h["state"] == "recording" and (h.get("last_recording_us") or 0) > started:
                    return
            except (OSError, KeyError, ValueError):
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        sys.exit("bench-query-fairness: acctd did not record; see %s" % self.log.name)

    def stop(self, cap):
        """SIGTERM; SIGKILL after cap. Returns the seconds to exit, or None when killed."""
        t = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(cap)
            took = time.monotonic() - t
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            took = None
        self.log.close()
        return took


def add_lives(db, n):
    """n removed lives two hours before the first run, in a run of their own (id 0)."""
    with sqlite3.connect(db) as c:
        t = c.execute("SELECT min(started_us) FROM runs").fetchone()[0] - 2 * 3600 * 1000000
        c.execute("INSERT INTO runs (id, boot_id, started_us, last_us, ended_us, interval_us, max_step_us)"
                  " VALUES (0, 'big', ?, ? + 1000, ? + 1000, 1000000, 1000000)", (t, t, t))
        base = c.execute("SELECT max(id) FROM lives").fetchone()[0] + 1
        c.execute("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)"
                  " INSERT INTO lives (id, path, boot_id, inode, first_seen_us, removed_us, from_zero)"
                  " SELECT ? + i, printf('/big/c%07d', i), 'big', i, ?, ? + 1000, 1 FROM n", (n, base, t, t))
        c.execute("INSERT INTO points (life, t_us, run, cpu_usec, memory_bytes, tasks)"
                  " SELECT id, first_seen_us, 0, 10, 4096, 1 FROM lives WHERE boot_id = 'big'"
                  " UNION ALL SELECT id, first_seen_us + 500, 0, 20, 8192, 1 FROM lives WHERE boot_id = 'big'")


def one_run(args, acctd, acctctl, root, tmp):
    db = os.path.join(tmp, "history.db")
    d = Acctd(acctd, root, tmp, db)
    if args.lives:
        d.stop(args.cap)
        add_lives(db, args.lives)
        d = Acctd(acctd, root, tmp, db)
    nobody = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                               NOBODY_CLIENT, d.sock, str(args.conns), str(FAR)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
    assert nobody.stdout.readline().strip() == "sent"
    time.sleep(0.5)  # nobody's queries are running: the figure is root's wait beside them
    t = time.monotonic()
    try:
        p = subprocess.run([acctctl, "--address", "unix:" + d.sock, "--no-pager", "usage", "--since=-1h"],
                           capture_output=True, text=True, timeout=args.cap)
        took = time.monotonic() - t if p.returncode == 0 else None
        if p.returncode != 0:
            print("acctctl failed: %s" % p.stderr.strip(), file=sys.stderr)
    except subprocess.TimeoutExpired:
        took = None
    nobody.stdin.close()
    nobody.wait()
    stop = d.stop(args.cap)
    shutil.rmtree(tmp, ignore_errors=True)
    return took, stop


def fmt(x, cap):
    return "> %d s" % cap if x is None else "%.3f s" % x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cap", type=int, default=60)
    ap.add_argument("--conns", type=int, default=1)
    ap.add_argument("--lives", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-query-fairness: needs root (setpriv to nobody)")
    acctd = os.path.join(args.build, "daemon", "acctd", "acctd")
    acctctl = os.path.join(args.build, "daemon", "acctctl", "acctctl")
    top = tempfile.mkdtemp(prefix="bench-query-")
    os.chmod(top, 0o755)
    root = os.path.join(top, "cg")
    subprocess.run([sys.executable, FAKECG, "build", "--root", root, "--mode", "v2", "--count", "50"], check=True,
                   stdout=subprocess.DEVNULL)
    runs = []
    try:
        for i in range(args.runs):
            took, stop = one_run(args, acctd, acctctl, root, tempfile.mkdtemp(prefix="run-", dir=top))
            runs.append({"root_usage_s": took, "sigterm_exit_s": stop})
            print("run %d: root's usage %s; SIGTERM to exit %s" % (i + 1, fmt(took, args.cap), fmt(stop, args.cap)),
                  file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    done = [r["root_usage_s"] for r in runs if r["root_usage_s"] is not None]
    capped = len(runs) - len(done)
    p50 = None if capped * 2 >= len(runs) else statistics.median(done + [float("inf")] * capped)
    worst = None if capped else max(done)
    print("| build | runs | root's usage --since=-1h p50 | max | SIGTERM to exit, max |")
    print("|---|---|---|---|---|")
    stops = [r["sigterm_exit_s"] for r in runs]
    print("| %s | %d | %s | %s | %s |" % (args.build, len(runs), fmt(p50, args.cap), fmt(worst, args.cap),
                                          fmt(None if None in stops else max(stops), args.cap)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"build": args.build, "conns": args.conns, "lives": args.lives, "cap_s": args.cap, "runs": runs},
                      f, indent=1)


if __name__ == "__main__":
    main()
