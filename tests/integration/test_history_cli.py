"""acctctl usage and acctctl history (issue 14) against the real daemon: acctd
recording a real cgroup with a CPU burner into a real SQLite store (history
in the test's temporary directory, interval 1s), and acctctl's table, --json,
--csv and plot read back from it.

- usage: the burner's CPU time is the kernel's cpuacct delta within the bound
  acctd states; the table shows the same values as --json, and --csv (read
  with python's csv module) the same raw numbers.
- usage's I/O: a cgroup also in blkio does direct I/O; read and written bytes
  are the kernel's blkio deltas within the bound, each in its own column.
- history: under a pty (TERM and a window size set) a braille plot of memory
  with CPU below it; in a pipe a table of the steps; --csv the same steps as
  --json.
- Errors: a time that is not one exits 2 with the accepted forms; an acctd
  that records no history says so and how to turn it on (exit 1).

Every wait is a polled condition with a generous deadline; nothing asserts a
timing. Real cgroups are named hist-cli-* and removed afterwards."""
import contextlib
import csv
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import fcntl
import time

import pytest

import acctd
from test_acctctl import acctctl_binary, base_env, complete
from test_api_client import api_daemon

from test_history import CPUACCT, MEMORY, now_us, recording
from test_history import poll as poll_history

EXIT_FAIL, EXIT_USAGE = 1, 2


def poll(pred, timeout=90, what="condition"):
    """test_history's poll with this file's longer default (a recording at
    1 s under sanitizers, plus acctctl runs)."""
    return poll_history(pred, timeout=timeout, what=what, interval=0.2)


def ctl(sock, *args, env=None):
    return subprocess.run([acctctl_binary(), "--address", "unix:" + sock, "--no-pager"] + list(args),
                          capture_output=True, text=True, timeout=60, env=env or base_env())


class Cgroup:
    """A real v1 cgroup /hist-cli-TAG-PID in cpuacct (and memory where that
    hierarchy exists, so that the history has memory too)."""

    def __init__(self, tag):
        self.name = "/hist-cli-%s-%d" % (tag, os.getpid())
        self.dirs = [h + self.name for h in (CPUACCT, MEMORY) if os.path.isdir(h)]
        for d in self.dirs:
            os.mkdir(d)
        self.procs = []

    def usage_us(self):
        with open(CPUACCT + self.name + "/cpuacct.usage") as f:
            return int(f.read()) // 1000

    def burn(self, cpu_seconds):
        """A python process in the cgroup burning cpu_seconds of CPU with
        20 MiB allocated; waits for it."""
        code = ("import sys, time\nsys.stdin.readline()\nb = bytearray(20 << 20)\n"
                "t = time.process_time()\nwhile time.process_time() - t < %f: pass\n" % cpu_seconds)
        p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True)
        self.procs.append(p)
        for d in self.dirs:
            with open(d + "/cgroup.procs", "w") as f:
                f.write(str(p.pid))
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.wait(120) == 0

    def remove(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for d in self.dirs:
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


@contextlib.contextmanager
def burner_cgroup(tag):
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    if not os.path.exists(CPUACCT + "/cpuacct.usage"):
        pytest.skip("no v1 cpuacct hierarchy at %s" % CPUACCT)
    cg = Cgroup(tag)
    try:
        yield cg
    finally:
        cg.remove()


def hist_conf(tmp_path, **extra):
    c = {"history__path": str(tmp_path / "hist" / "history.db"), "history__interval": "1s",
         "cgroups__include": "/hist-cli-*", "sampling__collector": "files"}
    c.update(extra)
    return c


def settle(sock, until_us):
    """Wait until acctd has written two recordings after until_us (the
    interval is 1s), so that a window that ends at until_us no longer
    changes: its last step's coverage is then final."""
    def done():
        p = ctl(sock, "status", "--json")
        h = json.loads(p.stdout).get("history") or {} if p.returncode == 0 else {}
        return (h.get("last_recording_us") or 0) > until_us + 1000000

    poll(done, what="a recording after %d" % until_us)


def usage_json(sock, *args):
    p = ctl(sock, "usage", "--json", *args)
    if p.returncode != 0:
        return None, p
    return json.loads(p.stdout), p


DURATION_UNITS = {"us": 1, "ms": 1000, "s": 1000000, "min": 60000000, "h": 3600000000, "d": 86400000000}


def parse_duration(text):
    """acctctl's human duration ("1.503s", "2min 3.5s") in microseconds."""
    total = 0.0
    for num, unit in re.findall(r"([0-9.]+)(us|ms|s|min|h|d)\b", text):
        total += float(num) * DURATION_UNITS[unit]
    assert total or text in ("0", "0us"), text
    return total


BYTES_UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_bytes(text):
    m = re.fullmatch(r"([0-9.]+)([BKMGT])", text)
    assert m, text
    return float(m.group(1)) * BYTES_UNITS[m.group(2)]


# ---- usage --------------------------------------------------------------------------------


def test_usage_table_json_csv(tmp_path):
    with burner_cgroup("cpu") as cg, api_daemon(tmp_path, None, **hist_conf(tmp_path)) as (d, sock):
        early = "@%d" % (now_us() // 1000000 - 60)

        def known():
            doc, _ = usage_json(sock, "--since", early)
            return doc and any(c["path"] == cg.name for c in doc["cgroups"])

        # known to the history, idle, before the window opens
        poll(known, what="the cgroup in the history")
        t0 = now_us()
        since = "@%d.%06d" % (t0 // 1000000, t0 % 1000000)
        k0 = cg.usage_us()
        cg.burn(1.5)
        delta = cg.usage_us() - k0
        assert delta >= 1400000, delta

        def matches():
            doc, _ = usage_json(sock, "--since", since, cg.name)
            us = [c for c in (doc or {}).get("cgroups", []) if c["path"] == cg.name]
            if not us or "cpu_usec" not in us[0]:
                return None
            cpu = us[0]["cpu_usec"]
            return doc if abs(cpu["value"] - delta) <= cpu.get("bound", 0) + 1 else None

        poll(matches, what="usage's CPU time to reach the kernel's delta %d us" % delta)
        # one fixed window for the three outputs, in the past and recorded
        t1 = now_us()
        settle(sock, t1)
        window = ["--since", since, "--until", "@%d.%06d" % (t1 // 1000000, t1 % 1000000), cg.name]

        doc, p = usage_json(sock, *window)
        assert p.returncode == 0, p.stderr
        assert doc["since_us"] == t0 and doc["until_us"] == t1, (doc["since_us"], doc["until_us"], t0, t1)
        [u] = [c for c in doc["cgroups"] if c["path"] == cg.name]
        cpu = u["cpu_usec"]
        assert abs(cpu["value"] - delta) <= cpu.get("bound", 0) + 1, (u, delta)

        # the table: the same cgroup, its CPU in human units (rounded) and bound
        p = ctl(sock, "usage", *window)
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert lines[0].split()[:2] == ["CGROUP", "CPU"], lines[0]
        row = next(l for l in lines if l.startswith(cg.name + " "))
        cells = re.split(r"\s{2,}", row.strip())
        shown_cpu = cells[1].split(" ±")[0]
        assert abs(parse_duration(shown_cpu) - cpu["value"]) <= 0.001 * cpu["value"] + 1000, (row, cpu)
        if cpu.get("bound"):
            assert "±" in row, row
        if "memory_avg_bytes" in u:  # one decimal of the unit
            shown = parse_bytes(cells[2].split(" ±")[0])
            assert abs(shown - u["memory_avg_bytes"]) <= 0.05 * u["memory_avg_bytes"] + 1, (row, u)
            # its bound: the byte-seconds' bound over the seconds recorded
            bs_bound = u.get("memory_byte_seconds", {}).get("bound", 0)
            if bs_bound > 0 and u["recorded_us"] > 0:
                want = bs_bound / (u["recorded_us"] / 1e6)
                shown_bound = parse_bytes(cells[2].split(" ±")[1])
                assert abs(shown_bound - want) <= 0.05 * want + 1, (row, u)
        assert re.fullmatch(r"1 cgroup, from .* to .*\.", lines[lines.index("") + 1]), p.stdout
        assert "Not recorded yet" not in p.stdout, p.stdout  # a window in the past, recorded
        # the one bound that is not hard is said to be so, under the table
        assert "MEM AVG's ± assumes memory moved steadily" in p.stdout, p.stdout
        # a PEAK of "-" (a life acctd did not see begin) is said not to be a missing read
        no_peak = "memory_max_bytes" in u and "memory_peak_bytes" not in u
        assert ("PEAK -: the kernel's peak spans a cgroup's whole life" in p.stdout) == no_peak, (p.stdout, u)
        # A window to now: the time since the last recording is not yet
        # recorded, and not a time acctd was down.
        p = ctl(sock, "usage", "--since", since, cg.name)
        assert p.returncode == 0, p.stderr
        assert "not recording" not in p.stdout, p.stdout
        tail = [l for l in p.stdout.splitlines() if l.startswith("Not recorded yet: from ")]
        assert len(tail) <= 1 and all(l.endswith(".") for l in tail), p.stdout

        # --csv: a header, one row, raw numbers equal to --json's
        p = ctl(sock, "usage", "--csv", *window)
        assert p.returncode == 0, p.stderr
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        assert [r["path"] for r in rows] == [cg.name], p.stdout
        r = rows[0]
        assert int(r["cpu_usec"]) == cpu["value"]
        assert r["cpu_usec_bound"] == ("%d" % cpu["bound"] if "bound" in cpu else "")
        assert int(r["recorded_us"]) == u["recorded_us"]
        assert r["removed_us"] == "" and r["resolution"] == u["resolution"]
        for k in ("memory_avg_bytes", "memory_max_bytes", "memory_peak_bytes"):
            assert (float(r[k]) if r[k] else None) == (float(u[k]) if k in u else None), (k, r, u)

        # --json=lines: one Usage per line
        p = ctl(sock, "usage", "--json=lines", *window)
        assert [json.loads(l)["path"] for l in p.stdout.splitlines()] == [cg.name]


BLKIO = "/sys/fs/cgroup/blkio"
IO_CODE = """import mmap, os, sys
sys.stdin.readline()
buf = mmap.mmap(-1, 1 << 20)
buf.write(b"x" * (1 << 20))
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
for i in range(8):
    os.pwrite(fd, buf, i << 20)
os.fsync(fd)
for i in range(3):
    os.preadv(fd, [buf], i << 20)
os.close(fd)
"""


def blkio_bytes(name):
    """The kernel's (read, write) bytes for the v1 blkio cgroup NAME."""
    rd = wr = 0
    with open(BLKIO + name + "/blkio.throttle.io_service_bytes_recursive") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] == "Read":
                rd += int(parts[2])
            elif len(parts) == 3 and parts[1] == "Write":
                wr += int(parts[2])
    return rd, wr


def test_usage_io_read_apart_from_write(tmp_path):
    """A cgroup writes 8 MiB and reads 3 MiB with O_DIRECT (so the kernel's
    blkio counts them, unlike cached I/O): the history's read and written
    bytes over a window are the kernel's within acctd's bound, and the
    table's READ and WRITE columns show the same, each in its own column."""
    if not os.path.isdir(BLKIO):
        pytest.skip("no v1 blkio hierarchy at %s" % BLKIO)
    with burner_cgroup("io") as cg, api_daemon(tmp_path, None, **hist_conf(tmp_path)) as (d, sock):
        blk = BLKIO + cg.name
        os.mkdir(blk)
        try:
            early = "@%d" % (now_us() // 1000000 - 60)

            def known():
                doc, _ = usage_json(sock, "--since", early)
                return doc and any(c["path"] == cg.name and "io_write_bytes" in c for c in doc["cgroups"])

            # known to the history with its I/O counters, before the window opens
            poll(known, what="the cgroup's I/O in the history")
            t0 = now_us()
            since = "@%d.%06d" % (t0 // 1000000, t0 % 1000000)
            rd0, wr0 = blkio_bytes(cg.name)
            p = subprocess.Popen([sys.executable, "-c", IO_CODE, str(tmp_path / "direct.bin")],
                                 stdin=subprocess.PIPE, text=True)
            cg.procs.append(p)
            for dr in cg.dirs + [blk]:
                with open(dr + "/cgroup.procs", "w") as f:
                    f.write(str(p.pid))
            p.stdin.write("go\n")
            p.stdin.flush()
            assert p.wait(120) == 0
            rd, wr = blkio_bytes(cg.name)
            rd, wr = rd - rd0, wr - wr0
            if rd < 3 << 20 or wr < 8 << 20:
                pytest.skip("the filesystem under %s did not do direct I/O (read %d, wrote %d)" % (tmp_path, rd, wr))

            def matches():
                doc, _ = usage_json(sock, "--since", since, cg.name)
                us = [c for c in (doc or {}).get("cgroups", []) if c["path"] == cg.name]
                return us and all(abs(us[0].get(k, {}).get("value", 0) - want) <= us[0][k].get("bound", 0)
                                  for k, want in (("io_read_bytes", rd), ("io_write_bytes", wr)) if k in us[0])

            poll(matches, what="usage's I/O to reach the kernel's read %d and written %d bytes" % (rd, wr))
            t1 = now_us()
            settle(sock, t1)
            window = ["--since", since, "--until", "@%d.%06d" % (t1 // 1000000, t1 % 1000000), cg.name]
            doc, p = usage_json(sock, *window)
            assert p.returncode == 0, p.stderr
            [u] = [c for c in doc["cgroups"] if c["path"] == cg.name]
            # the kernel's deltas over the window, within the bound acctd states
            for key, kernel in (("io_read_bytes", rd), ("io_write_bytes", wr)):
                assert abs(u[key]["value"] - kernel) <= u[key].get("bound", 0), (key, kernel, u)

            p = ctl(sock, "usage", *window)
            assert p.returncode == 0, p.stderr
            lines = p.stdout.splitlines()
            header = re.split(r"\s{2,}", lines[0].strip())
            row = next(l for l in lines if l.startswith(cg.name + " "))
            cells = re.split(r"\s{2,}", row.strip())
            for col, key in (("READ", "io_read_bytes"), ("WRITE", "io_write_bytes")):
                shown = parse_bytes(cells[header.index(col)].split(" ±")[0])
                want = u[key]["value"]
                assert abs(shown - want) <= 0.05 * want + 1, (col, row, u)
        finally:
            for pr in cg.procs:
                if pr.poll() is None:
                    pr.kill()
                pr.wait()
            for _ in range(100):
                try:
                    os.rmdir(blk)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def test_usage_sort_top(tmp_path):
    """"Which cgroup used the most CPU?" in one command: --sort ranks the
    Usages largest first and --top=N keeps the first N (by CPU unless --sort
    says otherwise) in the table, --json and --csv alike; a key that means
    nothing over a window is a usage error."""
    with burner_cgroup("small") as small, burner_cgroup("big") as big, burner_cgroup("mid") as mid, \
            api_daemon(tmp_path, None, **hist_conf(tmp_path)) as (d, sock):
        t0 = now_us()
        since = "@%d.%06d" % (t0 // 1000000, t0 % 1000000)
        want = [big.name, mid.name, small.name]
        for cg, seconds in ((small, 0.3), (big, 1.5), (mid, 0.8)):
            cg.burn(seconds)

        def ranked():
            doc, _ = usage_json(sock, "--since", since, "--sort=cpu")
            ours = [c["path"] for c in (doc or {}).get("cgroups", []) if c["path"] in want and "cpu_usec" in c]
            return doc if ours == want else None

        doc = poll(ranked, what="the three burners in the history, ranked by CPU time")
        t1 = now_us()
        settle(sock, t1)
        window = ["--since", since, "--until", "@%d.%06d" % (t1 // 1000000, t1 % 1000000)]
        full = [c["path"] for c in usage_json(sock, *window, "--sort=cpu")[0]["cgroups"]]
        assert [p for p in full if p in want] == want, full
        cpu = {c["path"]: c["cpu_usec"]["value"] for c in usage_json(sock, *window)[0]["cgroups"]
               if "cpu_usec" in c}
        assert [cpu[p] for p in full if p in cpu] == sorted(cpu.values(), reverse=True), (full, cpu)

        # --top alone ranks by CPU: the same first two in every output
        top, p = usage_json(sock, *window, "--top=2")
        assert p.returncode == 0, p.stderr
        assert [c["path"] for c in top["cgroups"]] == full[:2]
        p = ctl(sock, "usage", "--csv", *window, "--top=2")
        assert [r["path"] for r in csv.DictReader(io.StringIO(p.stdout))] == full[:2], p.stdout
        p = ctl(sock, "usage", *window, "--top=2")
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert [l.split()[0] for l in lines[1:3]] == full[:2], p.stdout
        assert lines[3] == "" and lines[4].startswith("The first 2 of %d cgroups by CPU time, from " % len(full)), \
            p.stdout
        # --prefix and --sort=path: our three in path order, then the first one only
        prefix = ["--prefix", big.name]
        assert [c["path"] for c in usage_json(sock, *window, *prefix)[0]["cgroups"]] == [big.name]
        names = sorted(want)
        for c in usage_json(sock, *window, "--sort=path")[0]["cgroups"]:
            assert c["path"] in full
        assert [c["path"] for c in usage_json(sock, *window, "--sort=path", "--top=1")[0]["cgroups"]] == \
            [sorted(full)[0]], names

        for args, why in ((["--sort=load"], "Sort key 'load' has no meaning over a window"),
                          (["--sort=read/s"], "Sort key 'read/s' has no meaning over a window"),
                          (["--top=0"], "Invalid number of cgroups '0' for --top")):
            p = ctl(sock, "usage", *args)
            assert (p.returncode, p.stdout) == (EXIT_USAGE, ""), (args, p)
            assert why in p.stderr, (args, p.stderr)


def test_csv_quotes_paths(tmp_path):
    """A cgroup name with a comma and a quote: one field, RFC 4180 quoted."""
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    if not os.path.isdir(CPUACCT):
        pytest.skip("no v1 cpuacct hierarchy at %s" % CPUACCT)
    name = '/hist-cli-a,"b-%d' % os.getpid()
    os.mkdir(CPUACCT + name)
    try:
        with api_daemon(tmp_path, None, **hist_conf(tmp_path)) as (d, sock):
            since = "@%d" % (now_us() // 1000000 - 60)

            def listed():
                p = ctl(sock, "usage", "--csv", "--since", since)
                rows = list(csv.DictReader(io.StringIO(p.stdout))) if p.returncode == 0 else []
                return p if name in [r["path"] for r in rows] else None

            p = poll(listed, what="the cgroup in usage --csv")
            assert '"' + name.replace('"', '""') + '"' in p.stdout
    finally:
        os.rmdir(CPUACCT + name)


# ---- history ------------------------------------------------------------------------------


def run_pty(cmd, env, columns=100, lines=40):
    """cmd on a pty of columns x lines; its output (bytes) after it exits."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 1)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    assert p.wait(30) == 0, out
    return out.decode()


def test_history_plot_and_table(tmp_path):
    with burner_cgroup("hist") as cg, api_daemon(tmp_path, None, **hist_conf(tmp_path)) as (d, sock):
        t0 = now_us()
        since = "@%d" % (t0 // 1000000 - 5)
        poll(lambda: any(c["path"] == cg.name for c in (usage_json(sock, "--since", since)[0] or {})
                         .get("cgroups", [])), what="the cgroup in the history")
        cg.burn(1.0)
        total = cg.usage_us()  # the cgroup's whole CPU time: nothing ran in it before

        def all_recorded():
            # the burner's CPU in the history (acctd records a value when it
            # has read it, which may be after the burn's second)
            doc, _ = usage_json(sock, "--since", since, cg.name)
            us = [c for c in (doc or {}).get("cgroups", []) if c["path"] == cg.name]
            cpu = us[0].get("cpu_usec") if us else None
            return cpu and abs(cpu["value"] - total) <= cpu.get("bound", 0) + 1

        poll(all_recorded, what="the burner's CPU time %d us in the history" % total)
        # one fixed window for every output, past the burn's recording (the
        # next whole second), and recorded
        t1 = (now_us() // 1000000 + 1) * 1000000
        settle(sock, t1)
        window = ["--since", since, "--until", "@%d" % (t1 // 1000000), "--step", "1s", cg.name]

        # a terminal: the plot, memory then CPU, braille (UTF-8 locale)
        env = base_env(TERM="xterm", COLUMNS="100", LINES="40")
        out = run_pty([acctctl_binary(), "--address", "unix:" + sock, "--no-pager", "history"] + window, env)
        lines = out.replace("\r\n", "\n").splitlines()
        titles = [l for l in lines if " of " + cg.name in l]
        assert [t.rsplit(" of ", 1)[0] for t in titles] == ["Memory (mean of each step)", "CPU (cores)"], out
        assert re.search("[\u2801-\u28ff]", out), out  # braille dots
        assert sum(1 for l in lines if l.lstrip().startswith("└")) == 2, out
        assert max(len(l) for l in lines) <= 100, out

        # a pipe: the table, the same steps as --json and --csv
        doc = json.loads(ctl(sock, "history", "--json", *window).stdout)
        assert doc["cgroup"] == cg.name and doc["step_us"] >= 1000000
        p = ctl(sock, "history", *window)
        assert p.returncode == 0, p.stderr
        tl = p.stdout.splitlines()
        assert tl[0].split()[:3] == ["TIME", "CPU", "MEM"], p.stdout
        assert len(tl) == 1 + len(doc["steps"]) + 2, p.stdout
        gaps = sum(1 for s in doc["steps"] if s["covered_us"] == 0)
        assert tl[-1].endswith(", %d without data%s." % (
            gaps, " (acctd was not recording, or the cgroup did not exist)" if gaps else "")), tl[-1]
        assert "⠀" not in p.stdout and not re.search("[\u2800-\u28ff]", p.stdout)
        rows = list(csv.DictReader(io.StringIO(ctl(sock, "history", "--csv", *window).stdout)))
        assert [int(r["t_us"]) for r in rows] == [s["t_us"] for s in doc["steps"]]
        for r, s in zip(rows, doc["steps"]):
            assert (float(r["cpu_cores"]) if r["cpu_cores"] else None) == s.get("cpu_cores"), (r, s)
        # the window holds the cgroup's whole life: the CPU of the steps
        # (cores over the time each has data) adds up to the kernel's total
        used = sum(s.get("cpu_cores", 0) * s["covered_us"] for s in doc["steps"])
        assert abs(used - total) <= 0.01 * total + 1000, (used, total, [s for s in doc["steps"] if s["covered_us"]])

        # steps of less than a second: each labelled with its milliseconds
        short = ["--since", "@%d" % (t1 // 1000000 - 1), "--until", "@%d" % (t1 // 1000000), "--step", "250ms"]
        p = ctl(sock, "history", "--plot=none", *short, cg.name)
        assert p.returncode == 0, p.stderr
        labels = [l.split()[0] for l in p.stdout.splitlines()[1:5]]
        assert [l[-4:] for l in labels] == [".000", ".250", ".500", ".750"], p.stdout

        # --plot=cpu in a pipe: that plot alone, ASCII without UTF-8
        p = ctl(sock, "history", "--plot=cpu", *window, env=base_env(LC_ALL="C", COLUMNS="80"))
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("CPU (cores) of " + cg.name + "\n"), p.stdout
        assert "*" in p.stdout and all(ord(ch) < 128 for ch in p.stdout), p.stdout


# acctd re-reads its open files with pread, as on cgroupfs: the fake rewrites in place
@pytest.mark.parametrize("fakecg", [{"mode": "v2", "write_mode": "inplace"}], indirect=True)
def test_cpu_clipped_to_the_host(fakecg, tmp_path):
    cpus = os.sysconf("SC_NPROCESSORS_CONF")  # what acctd clips to
    fakecg.mkdir("/burst", memory=8 << 20, procs=[4242])  # populated: an empty one is not read for CPU
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s") as (d, sock):
        started = now_us()
        poll(lambda: recording(sock, started + 2 * 1000000), what="two recordings")
        fakecg.add_cpu("/burst", 60 * 1000000)  # a minute, seen at one recording
        since = started - 1000000

        def seen():
            doc, _ = usage_json(sock, "--since", "@%d" % (since // 1000000), "/burst")
            us = (doc or {}).get("cgroups", [])
            return us and us[0].get("cpu_usec", {}).get("value", 0) >= 60 * 1000000

        poll(seen, what="the minute of CPU in the history")
        t1 = (now_us() // 1000000 + 1) * 1000000
        poll(lambda: recording(sock, t1), what="a recording past the window")
        window = ["--since", "@%d" % (since // 1000000), "--until", "@%d" % (t1 // 1000000)]

        # History: the jump's steps clipped to the CPUs, and said so
        doc = json.loads(ctl(sock, "history", "--json", "--step", "100ms", *window, "/burst").stdout)
        busy = [s for s in doc["steps"] if s.get("cpu_cores", 0) > 0]
        assert busy and all(s["cpu_cores"] <= cpus for s in busy), busy
        assert any(s.get("cpu_clipped") for s in busy), busy
        assert not any(s.get("cpu_clipped") for s in doc["steps"] if s.get("cpu_cores", 0) < cpus), doc
        p = ctl(sock, "history", "--plot=none", "--step", "100ms", *window, "/burst")
        assert p.returncode == 0, p.stderr
        marked = [l for l in p.stdout.splitlines() if re.match(r"^\S+\s+[0-9.]+\*\s", l)]
        n = sum(1 for s in doc["steps"] if s.get("cpu_clipped"))
        assert len(marked) == n, p.stdout
        assert ("CPU*: more than the host's CPUs came out in %d step%s, cut to them" % (n, "" if n == 1 else "s")
                in p.stdout), p.stdout

        # Usage: a window ending between the two points (in the last step
        # before the later one) has the minute as its end's bound, far more
        # than its CPUs x 3 s: clipped to that, the true 0 within the bound
        until = busy[-1]["t_us"]
        w = ["--since", "@%.6f" % ((until - 3000000) / 1e6), "--until", "@%.6f" % (until / 1e6), "/burst"]
        u, err = usage_json(sock, *w)
        assert u, err
        cpu = u["cgroups"][0]
        assert cpu.get("cpu_clipped") is True, cpu
        assert cpu["cpu_usec"]["value"] + cpu["cpu_usec"].get("bound", 0) <= cpus * 3000000, cpu
        p = ctl(sock, "usage", *w)
        assert p.returncode == 0, p.stderr
        row = [l for l in p.stdout.splitlines() if l.startswith("/burst")]
        assert len(row) == 1 and re.match(r"^/burst\s+\S+\*\s", row[0]), p.stdout
        assert "CPU*: its bound (and the value, where it lay outside) cut to what the host's CPUs allow" in p.stdout, \
            p.stdout


# ---- errors -------------------------------------------------------------------------------


def test_bad_times_exit_2():
    for args in (["usage", "--since", "yesterdayy"], ["history", "/x", "--until", "2026-13-01"],
                 ["usage", "--since", "1h"], ["history", "/x", "--since", "now", "--until", "-1h"]):
        p = subprocess.run([acctctl_binary(), "--address", "unix:/nonexistent"] + args, capture_output=True,
                           text=True, timeout=30, env=base_env())
        assert p.returncode == EXIT_USAGE, (args, p)
        assert p.stdout == ""
        if "--since" in args and args[-1] != "-1h":
            assert "expected now, today, yesterday" in p.stderr and "@SECONDS" in p.stderr, p.stderr
    p = subprocess.run([acctctl_binary(), "usage", "--csv", "--json"], capture_output=True, text=True, env=base_env())
    assert p.returncode == EXIT_USAGE and "exclude" in p.stderr
    # more steps than acctd answers: said in the options' terms, before asking
    p = subprocess.run([acctctl_binary(), "--address", "unix:/nonexistent", "history", "/x", "--since", "-7d",
                        "--step", "1s"], capture_output=True, text=True, timeout=30, env=base_env())
    assert p.returncode == EXIT_USAGE, p
    assert "604800 steps" in p.stderr or "604801 steps" in p.stderr, p.stderr
    assert "at least 6.048s" in p.stderr, p.stderr


def test_history_off_says_how_to_turn_it_on(tmp_path):
    with api_daemon(tmp_path, None, **hist_conf(tmp_path, history__enabled="no")) as (d, sock):
        for args in (["usage"], ["history", "/"]):
            p = ctl(sock, *args)
            assert p.returncode == EXIT_FAIL, (args, p)
            assert "no history" in p.stderr and "enabled=yes" in p.stderr, p.stderr
            assert p.stdout == ""


def test_completion():
    env = base_env(PATH=os.path.dirname(acctctl_binary()) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                   ACCTD_ADDRESS="unix:/nonexistent")
    assert "--no-removed" in complete("acctctl usage --", env)
    assert "--plot=" in complete("acctctl history --", env) and "--tree" not in complete("acctctl history --", env)
    assert complete("acctctl history /x --plot=m", env) == ["memory"]
    assert complete("acctctl usage --since ye", env) == ["yesterday"]
