#!/usr/bin/env python3
"""bench-parse - what a hostile message's shape costs acctd (issue 27, item 1).

For each acctd build given (--acctd, repeatable; acctctl is taken beside it,
daemon/acctctl/acctctl of the same build tree) and each shape and size, a
fresh acctd on a small fake tree (tests/fakecg.py), and a client running as
`nobody` (setpriv) that sends the shape again and again, each on a new
connection, reading the reply:

  objects  {"method":"io.acctd.Accounting.Status","parameters":{"x":[{},{},...]}}
  arrays   the same with [[],[],...]

Once the client has built its message and starts sending, acctd's VmRSS is
sampled every 20 ms (the peak is reported, with the RSS before), and root's
`acctctl status` is timed one call after another for --seconds and at least
--calls calls (one every 0.1 s at most; but no longer than --max-seconds
once 3 calls are done, for a daemon that stalls): p50 and max. Needs root (setpriv).
Prints one table row per run.

  bench-parse.py --acctd build/daemon/acctd/acctd --acctd /work/main/build/daemon/acctd/acctd
                 [--shapes objects,arrays] [--sizes 4,16] [--calls 20] [--seconds 30] [--max-seconds 150]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import fakecg  # noqa: E402

MB = 1000 * 1000
MiB = 1 << 20

# argv: socket, shape, bytes. One line per message answered: seconds, error name.
SENDER = r"""
import json, socket, sys, time
path, shape, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
head = b'{"method":"io.acctd.Accounting.Status","parameters":{"x":['
item = {"objects": b"{}", "arrays": b"[]"}[shape]
n = (size - len(head) - 4) // (len(item) + 1)
msg = head + b",".join([item] * n) + b"]}}\0"
print("ready", flush=True)
while True:
    t = time.monotonic()
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    try:
        s.sendall(msg)
        buf = b""
        while b"\0" not in buf:
            c = s.recv(1 << 16)
            if not c:
                break
            buf += c
        r = json.loads(buf.split(b"\0")[0]) if b"\0" in buf else {"error": "eof"}
    except OSError as e:
        r = {"error": type(e).__name__}
    s.close()
    print("%.3f %s" % (time.monotonic() - t, r.get("error", "ok")), flush=True)
"""


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def start(acctd, root, workdir):
    conf = os.path.join(workdir, "acctd.conf")
    with open(conf, "w") as f:
        f.write("[sampling]\nfast_interval = 1s\nslow_interval = 10s\n[log]\nlevel = notice\n")
    sdir = os.path.join(workdir, "sock")
    os.makedirs(sdir, exist_ok=True)
    os.chmod(workdir, 0o755)
    os.chmod(sdir, 0o755)
    sock = os.path.join(sdir, "io.acctd")
    log = open(os.path.join(workdir, "acctd.log"), "w")
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    proc = subprocess.Popen([acctd, "--config", conf, "--config-dropins", "", "--cgroup-root", root,
                             "--meminfo", os.path.join(root, ".fakecg-meminfo"), "--socket", sock],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit("acctd exited; see %s/acctd.log" % workdir)
        if os.path.exists(sock) and status(acctctl_of(acctd), sock)[0] == 0:
            return proc, sock
        time.sleep(0.2)
    proc.kill()
    sys.exit("acctd did not become ready")


def acctctl_of(acctd):
    p = os.path.join(os.path.dirname(os.path.dirname(acctd)), "acctctl", "acctctl")
    if not os.path.exists(p):
        sys.exit("no acctctl beside %s" % acctd)
    return p


def status(acctctl, sock, timeout=600):
    t = time.monotonic()
    r = subprocess.run([acctctl, "--address", sock, "status"], capture_output=True, timeout=timeout)
    return r.returncode, time.monotonic() - t


def run(acctd, shape, size, calls, seconds, max_seconds, workdir):
    root = os.path.join(workdir, "cg")
    fakecg.build(root, count=20)
    proc, sock = start(acctd, root, workdir)
    ctl = acctctl_of(acctd)
    time.sleep(1)
    before = rss(proc.pid)
    peak = [before]
    stop = threading.Event()
    sender = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                               SENDER, sock, shape, str(size)], stdout=subprocess.PIPE, text=True, cwd="/")
    assert sender.stdout.readline().strip() == "ready"
    replies = []

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss(proc.pid))
            time.sleep(0.02)

    def collect():
        for line in sender.stdout:
            replies.append(line.split())

    threads = [threading.Thread(target=sample), threading.Thread(target=collect)]
    for t in threads:
        t.start()
    lat = []
    t0 = time.monotonic()
    while (len(lat) < calls or time.monotonic() - t0 < seconds) and not (
            len(lat) >= 3 and time.monotonic() - t0 >= max_seconds):
        rc, s = status(ctl, sock)
        if rc != 0:
            print("acctctl status failed (%d)" % rc, file=sys.stderr)
        lat.append(s)
        time.sleep(max(0.0, 0.1 - s))
    sender.kill()
    sender.wait()
    stop.set()
    for t in threads:
        t.join()
    proc.terminate()
    proc.wait(timeout=60)
    return {"before": before, "peak": peak[0], "p50": statistics.median(lat), "max": max(lat), "n": len(lat),
            "messages": len(replies), "reply": ",".join(sorted({r[1].split(".")[-1] for r in replies})) or "-",
            "per_message": statistics.median(float(r[0]) for r in replies) if replies else float("nan")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--acctd", action="append", required=True)
    ap.add_argument("--shapes", default="objects,arrays")
    ap.add_argument("--sizes", default="4,16", help="message sizes in MB (10^6 bytes)")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--max-seconds", type=float, default=150)
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        sys.exit("needs root and setpriv (the hostile client runs as nobody)")
    print("| acctd | shape | size | messages answered | replies | ms per message | RSS before | peak RSS "
          "| status p50 | status max | status calls |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for acctd in a.acctd:
        for shape in a.shapes.split(","):
            for mb in a.sizes.split(","):
                with tempfile.TemporaryDirectory(prefix="bench-parse-") as w:
                    r = run(os.path.abspath(acctd), shape, int(mb) * MB, a.calls, a.seconds, a.max_seconds, w)
                print("| %s | %s | %s MB | %d | %s | %.0f | %.1f MiB | %.1f MiB | %.0f ms | %.0f ms | %d |"
                      % (acctd, shape, mb, r["messages"], r["reply"], r["per_message"] * 1000,
                         r["before"] / MiB, r["peak"] / MiB, r["p50"] * 1000, r["max"] * 1000, r["n"]), flush=True)


if __name__ == "__main__":
    main()
