"""acctctl and programs' charges (issue 32, docs/charges.md), with a real
acctd on a fake cgroup tree and its history in a real SQLite store: show
prints charged values in their resources' units (read from the files that
acctd names), usage prints the integrals with units and puts them in its CSV,
history plots and tabulates a charged resource, status tells the charges'
state and list shows a charged resource's column."""
import csv
import io
import json
import os
import re
import subprocess
import time

import pytest

from test_api_client import IFACE, Varlink, api_daemon, ok
from test_history import now_us, poll, recording
from test_acctctl import Lines, acctctl_binary, base_env
from test_history_cli import ctl

MiB = 1 << 20
RESOURCES = {
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "0", "resource.gpu__averages": "yes",
    "resource.inflight__unit": "count", "resource.inflight__budget": "0",
    "resource.licence__unit": "seconds", "resource.licence__budget": "0",
    # RAM a program charges from its own memory: reconciled with memory
    "resource.arena__unit": "bytes", "resource.arena__budget": "0", "resource.arena__ram": "yes",
}


@pytest.fixture
def env(fakecg, tmp_path):
    fakecg.mkdir("/svc", memory=8 * MiB)
    fakecg.mkdir("/svc/job", memory=4 * MiB)
    fakecg.mkdir("/other", memory=1 * MiB)
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


def below(text, caption):
    """The text after the line that starts with caption."""
    i = ("\n" + text).index("\n" + caption)
    return text[text.index("\n", i + 1) + 1:]


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
    # the averages (stepped every 5 s) of a bytes resource are sizes too
    def averaged():
        with Varlink(sock) as v:
            c = ok(v.call(IFACE + ".Get", {"cgroup": "/svc/job"}))["charges"]["gpu"]
        return c.get("averages")
    poll(averaged, what="the first step of the averages")
    out = run(sock, "show", "/svc/job")
    assert re.search(r"^Averages of gpu: [0-9.]+[BKM], [0-9.]+[BKM], [0-9.]+[BKM] over 1, 5, 15 min", out, re.M), out


def test_units_are_those_acctd_keeps(env):
    """The units come from acctd (Status resources), as in effect since its
    start: a configuration file rewritten since (another unit for gpu,
    which a reload reports without applying) changes nothing shown."""
    sock = env["sock"]
    charge(sock, "gpu", 3 * MiB, "/svc/job")
    with Varlink(sock) as v:
        st = ok(v.call(IFACE + ".Status", {}))["status"]
    assert {r["name"]: r["unit"] for r in st["resources"]} == \
        {"gpu": "bytes", "inflight": "count", "licence": "seconds", "arena": "bytes"}, st["resources"]
    [conf] = config_sources(sock)
    with open(conf) as f:
        text = f.read()
    with open(conf, "w") as f:
        f.write(text.replace("unit = bytes", "unit = count"))
    out = run(sock, "show", "/svc/job")
    assert table_row(out, "gpu")[:3] == ["gpu", "bytes", "3.0M"], out
    assert "Units not known" not in out


def held_since(sock, since, path, resources, seconds):
    """Usage's rows of `path` for each resource once each was recorded for
    `seconds` at least, else None."""
    with Varlink(sock) as v:
        p = ok(v.call(IFACE + ".Usage", {"since_us": since, "charges": resources}))
    for c in p["cgroups"]:
        if c["path"] == path:
            got = {u["resource"]: u for u in c.get("charges", [])}
            if set(got) == set(resources) and all(u["recorded_us"] >= seconds * 1000000 for u in got.values()):
                return got
    return None


def test_usage_with_units_and_csv(env):
    sock = env["sock"]
    since = now_us()
    poll(lambda: recording(sock, since), what="a first recording")
    charge(sock, "gpu", 3 * MiB, "/svc/job")
    charge(sock, "inflight", 4, "/svc/job")
    charge(sock, "licence", 2000000, "/svc/job")
    poll(lambda: held_since(sock, since, "/svc/job", ["gpu", "inflight", "licence"], 3), what="3 s recorded")
    until = now_us()
    # Every point up to `until` stored before the queries: the recorder
    # stores a pass's point after the pass, so a point stamped before
    # `until` could come between two of them (the CSV then had a later
    # recorded_us and a larger integral than the JSON before it, under ASan).
    poll(lambda: recording(sock, until), what="a recording after the window")
    window = ["--since", "@%.6f" % (since / 1e6), "--until", "@%.6f" % (until / 1e6)]
    rows = {}
    for r in ("gpu", "inflight", "licence"):
        p = run(sock, "usage", "/svc/job", "--charge=" + r, "--json", *window)
        [row] = [c for c in json.loads(p)["cgroups"] if c["path"] == "/svc/job"]
        [rows[r]] = row["charges"]
    DOT = "[·*]"

    # gpu, bytes: bytes x s (under a minute recorded), the average and the
    # largest value as sizes
    out = run(sock, "usage", "/svc/job", "--charge=gpu", *window)
    cells = table_row(below(out, "Charged gpu (bytes), held over the time recorded"), "/svc/job")
    held, avg, mx = cells[1], cells[-3], cells[-2]
    assert re.fullmatch(r"[0-9.]+M%ss" % DOT, held), out
    assert abs(float(held[:held.index("M")]) - rows["gpu"]["value_seconds"]["value"] / MiB) <= 0.051, (out, rows)
    assert (avg, mx) == ("3.0M", "3.0M"), out
    # inflight, count: count x time is a time (as CPU time is), the average
    # with decimals as a load's
    out = run(sock, "usage", "/svc/job", "--charge=inflight", *window)
    cells = table_row(below(out, "Charged inflight (count)"), "/svc/job")
    assert re.fullmatch(r"[0-9.]+s", cells[1]), out
    assert abs(float(cells[1][:-1]) - rows["inflight"]["value_seconds"]["value"]) <= 0.0011, (out, rows)
    assert cells[-3:-1] == ["4.00", "4"], out
    # licence, seconds (charged in microseconds): a duration x s
    out = run(sock, "usage", "/svc/job", "--charge=licence", *window)
    cells = table_row(below(out, "Charged licence (seconds)"), "/svc/job")
    assert re.fullmatch(r"[0-9.]+s%ss" % DOT, cells[1]), out
    assert abs(float(cells[1][:cells[1].index("s")]) - rows["licence"]["value_seconds"]["value"] / 1e6) <= 0.0011
    assert cells[-3:-1] == ["2s", "2s"], out

    # --sort=charge ranks by the resource's integral: /svc/job and /svc
    # (its subtree) held gpu, /other none (0: last)
    out = run(sock, "usage", "--prefix=/", "--charge=gpu", "--sort=charge", "--json", *window)
    paths = [c["path"] for c in json.loads(out)["cgroups"]]
    assert paths.index("/svc/job") < paths.index("/other") and paths.index("/svc") < paths.index("/other"), paths
    p = ctl(sock, "usage", "--sort=charge", *window)
    assert p.returncode == 2 and "--sort=charge: name the charged resource" in p.stderr, p

    # --csv: the charge's columns, raw numbers, the unit in the header
    for r, integral, plain in (("gpu", "byte_seconds", "_bytes"), ("inflight", "count_seconds", ""),
                               ("licence", "usec_seconds", "_usec")):
        p = run(sock, "usage", "/svc/job", "--charge=" + r, "--csv", *window)
        [line] = [x for x in csv.DictReader(io.StringIO(p)) if x["path"] == "/svc/job"]
        u = rows[r]
        pre = "charge_%s_" % r
        assert float(line[pre + integral]) == u["value_seconds"]["value"], (p, u)
        assert line[pre + integral + "_bound"] == str(u["value_seconds"].get("bound", "")), (p, u)
        assert float(line[pre + "avg" + plain]) == u["avg"] and int(line[pre + "max" + plain]) == u["max"], (p, u)
        assert int(line[pre + "recorded_us"]) == u["recorded_us"], (p, u)
    # a cgroup that held none: the columns empty
    p = run(sock, "usage", "/other", "--charge=gpu", "--csv", *window)
    [line] = list(csv.DictReader(io.StringIO(p)))
    assert line["charge_gpu_byte_seconds"] == "" and line["charge_gpu_max_bytes"] == "", p


def test_history_of_a_charge(env):
    sock = env["sock"]
    since = now_us()
    poll(lambda: recording(sock, since), what="a first recording")
    charge(sock, "gpu", 3 * MiB, "/svc/job")
    poll(lambda: held_since(sock, since, "/svc/job", ["gpu"], 2), what="2 s recorded")
    charge(sock, "gpu", 2 * MiB, "/svc/job")
    t = now_us()
    poll(lambda: recording(sock, t + 2000000), what="2 s more recorded")
    until = now_us()
    poll(lambda: recording(sock, until), what="a recording after the window")  # as in test_usage_with_units_and_csv
    window = ["--since", "@%.6f" % (since / 1e6), "--until", "@%.6f" % (until / 1e6)]
    # the table of steps: a gap before the first charge, then 3 MiB, then 5 MiB
    out = run(sock, "history", "/svc/job", "--charge=gpu", "--step=1s", *window)
    steps = below(out, "Charged gpu (bytes) of /svc/job, its subtree's value as recorded")
    rows = [re.split(r"\s{2,}", x.strip()) for x in steps.splitlines()[1:] if re.match(r"\d\d:", x)]
    assert rows[0][1:] == ["-", "-", "no data"], out
    maxes = [r[2] for r in rows if r[-1] != "no data"]
    assert maxes[0] == "3.0M" and maxes[-1] == "5.0M" and set(maxes) == {"3.0M", "5.0M"}, out
    # a whole step at one value has that value as its mean
    assert all(r[1] == r[2] for r in rows if r[-1] == "100%" and r[2] == "3.0M"), out
    # --csv: the recorded points themselves, raw, the unit in the header
    with Varlink(sock) as v:
        pts = ok(v.call(IFACE + ".History", {"cgroup": "/svc/job", "since_us": since, "until_us": until,
                                             "quantities": ["charges.gpu"]}))["charges"][0]["points"]
    assert [q["value"] for q in pts] == [3 * MiB, 5 * MiB], pts
    out = run(sock, "history", "/svc/job", "--charge=gpu", "--csv", *window)
    assert list(csv.reader(io.StringIO(out))) == [["t_us", "end_us", "charge_gpu_bytes", "charge_gpu_bytes_bound"]] + [
        [str(q["t_us"]), str(q["end_us"]), str(q["value"]), str(q["bound"])] for q in pts], out
    # the plot, also in a pipe with --plot=charge: its axis in the unit, 0 to the largest mean
    out = run(sock, "history", "/svc/job", "--charge=gpu", "--plot=charge", *window)
    lines = out.splitlines()
    assert lines[0] == "Charged gpu (bytes, mean of each step) of /svc/job", out
    assert re.match(r"5\.0M [┤+]", lines[1]) and any(re.match(r" *0B [┤+]", x) for x in lines), out
    # --json: History's answer, the points in its charges
    lines = run(sock, "history", "/svc/job", "--charge=gpu", "--json=lines", *window).splitlines()
    assert [json.loads(x) for x in lines] == pts, lines
    doc = json.loads(run(sock, "history", "/svc/job", "--charge=gpu", "--json", *window))
    assert doc["charges"][0]["resource"] == "gpu" and [q["value"] for q in doc["charges"][0]["points"]] == [
        3 * MiB, 5 * MiB], doc
    # --charge draws its resource only; an undeclared one is acctd's error
    p = ctl(sock, "history", "/svc/job", "--charge=gpu", "--plot=memory", *window)
    assert p.returncode == 2 and "--plot may be charge or none" in p.stderr, p.stderr
    p = ctl(sock, "history", "/svc/job", "--charge=nope", *window)
    assert p.returncode == 1 and "No such resource: nope" in p.stderr, p.stderr


def status_doc(sock):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + ".Status", {}))["status"]


def test_status_tells_the_charges(env):
    sock = env["sock"]
    # more RAM charged to /svc/job than its 4 MiB of memory: flagged
    charge(sock, "arena", 6 * MiB, "/svc/job")
    st = poll(lambda: (lambda s: s if s["charges_reconciliation"]["over_memory"] >= 1 else None)(status_doc(sock)),
              what="the RAM reconciliation's flag")
    out = run(sock, "status")
    fields = {}
    for line in out.splitlines():
        m = re.match(r" *([A-Z][A-Za-z ]*): (.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2)
    assert fields["Charges"] == "resources gpu (bytes), inflight (count), licence (seconds), arena (bytes)", out
    state = st["charges_state"]
    assert fields["Charge state"].startswith("%s: %d cgroups loaded at the start, " % (
        state["path"], state["loaded_cgroups"])), out
    assert re.fullmatch(r"\d+ open, \d+ opened, 0 dropped \(garbage\), 0 dropped \(cgroup removed\), \d+ folds",
                        fields["Charge slots"]), out
    assert re.fullmatch(r"\d+ checks, \d+ cgroups compared with memory, 1 over it beyond both bounds \(/svc/job\)",
                        fields["Charged RAM"]), out


def test_list_with_a_charge_column(env):
    sock = env["sock"]
    charge(sock, "gpu", 3 * MiB, "/svc/job")
    charge(sock, "gpu", MiB, "/svc")
    # the default columns and the resource's, headed by its name, in its unit
    out = run(sock, "list", "--charge=gpu")
    header = out.splitlines()[0].split()
    assert header[0] == "CGROUP" and header[-2:] == ["AGE", "GPU"], out
    got = {r[0]: r[-1] for r in (x.split() for x in out.splitlines()[1:5])}
    # the subtree values; /other, never charged, is 0 (List leaves it out)
    assert got == {"/": "4.0M", "/svc": "4.0M", "/svc/job": "3.0M", "/other": "0B"}, out
    # -o picks it with its bound (0 here: budget 0, blank as memory's), --no-legend for scripts
    out = run(sock, "list", "--charge=gpu", "--no-legend", "-o", "cgroup,charge,charge-bound")
    assert [x.split() for x in out.splitlines()] == [["/", "4.0M", "-"], ["/other", "0B", "-"],
                                                     ["/svc", "4.0M", "-"], ["/svc/job", "3.0M", "-"]], out
    charge(sock, "inflight", 12, "/svc/job")
    out = run(sock, "list", "/svc", "--charge=inflight", "-o", "cgroup,charge")
    assert out.splitlines()[:3] == ["CGROUP    INFLIGHT", "/svc            12", "/svc/job        12"], out
    # --json: List's objects, charges with them
    doc = json.loads(run(sock, "list", "/svc/job", "--charge=gpu", "--json", "-o", "cgroup,charge"))
    assert doc == [{"path": "/svc/job", "charges": doc[0]["charges"]}], doc
    assert doc[0]["charges"]["gpu"]["subtree"]["value"] == 3 * MiB, doc
    # refused: a resource acctd does not declare, the field without the option, top
    p = ctl(sock, "list", "--charge=nope")
    assert p.returncode == 1 and "No such resource: nope" in p.stderr, p
    p = ctl(sock, "list", "-o", "charge")
    assert p.returncode == 2 and "--charge=NAME" in p.stderr, p
    p = ctl(sock, "top", "-b", "-n1", "-o", "charge")
    assert p.returncode == 2 and "only list shows a charged resource" in p.stderr, p
    # --sort=charge: largest subtree value first (0 where nothing was charged), ties by path
    out = run(sock, "list", "--charge=gpu", "--sort=charge", "--no-legend", "-o", "cgroup,charge")
    assert [x.split() for x in out.splitlines()] == [["/", "4.0M"], ["/svc", "4.0M"], ["/svc/job", "3.0M"],
                                                     ["/other", "0B"]], out
    out = run(sock, "list", "--charge=gpu", "--sort=charge", "--top=2", "-o", "cgroup,charge")
    assert "The first 2 of 4 cgroups by gpu (--top)" in out, out
    for args, why in ((["list", "--sort=charge"], "--sort=charge: name the charged resource with --charge=NAME"),
                      (["top", "-b", "-n1", "--sort=charge"], "--sort=charge: only list and usage")):
        p = ctl(sock, *args)
        assert p.returncode == 2 and why in p.stderr, p


def test_watch_prints_charges(env):
    """acctctl watch's line says what programs charged to the cgroup and
    below, in each resource's unit, and prints a new line when it changes."""
    sock = env["sock"]
    charge(sock, "gpu", 3 * MiB, "/svc/job")
    charge(sock, "inflight", 5, "/svc")
    proc = subprocess.Popen([acctctl_binary(), "--address", "unix:" + sock, "watch", "/svc", "-d", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, env=base_env())
    try:
        lines = Lines(proc)
        first = lines.next(30)
        assert first and " /svc: memory " in first, (first, proc.stderr.read() if not first else "")
        assert re.search(r", charged (gpu 3\.0M, inflight 5|inflight 5, gpu 3\.0M)$", first), first
        charge(sock, "gpu", MiB, "/svc")
        line = lines.next(30)
        while line is not None and "gpu 4.0M" not in line:
            line = lines.next(30)
        assert line and "inflight 5" in line, line
    finally:
        proc.kill()
        proc.wait()


def test_status_without_resources_says_nothing_of_charges(fakecg, tmp_path):
    """acctd keeps its state file's figures with no resource declared: the
    status of a host that charges nothing is as it was."""
    fakecg.mkdir("/svc")
    with api_daemon(tmp_path, fakecg.root) as (d, sock):
        assert status_doc(sock)["charges_state"] is not None
        out = run(sock, "status")
        assert "Configuration:" in out and "Charge" not in out, out
