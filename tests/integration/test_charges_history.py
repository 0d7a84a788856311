"""The history of charged resources (issue 32, docs/charges.md "History"), on
a fake cgroup tree with a real acctd and a real SQLite store: charges made
through varlink are recorded at the recordings that see them (a point per
change, the subtree value with its bound), History's "charges.NAME" returns
those points, Usage's charges their integral with its bound, and a removed
cgroup is still answered.

No timing is asserted: every check compares what the daemon answers with
the charges made and the times the daemon itself reports (the points'
times), and every wait is a polled condition with a generous deadline."""
import json
import re

import pytest

from test_api_client import IFACE, Varlink, api_daemon, error, ok
from test_history import now_us, poll, recording, usage
from test_history_cli import ctl

RESOURCES = {
    # exact reads (budget 0): the recorded bounds are 0, and the integral's
    # bound is the change's timing only
    "resource.gpu__unit": "bytes", "resource.gpu__budget": "0", "resource.gpu__on_removal": "release",
}


@pytest.fixture
def env(fakecg, tmp_path):
    fakecg.mkdir("/svc")
    fakecg.mkdir("/svc/job")
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, history__path=str(db), history__interval="1s", **RESOURCES) as (d, sock):
        yield {"fs": fakecg, "d": d, "sock": sock}


def call(sock, method, params):
    with Varlink(sock) as v:
        return ok(v.call(IFACE + "." + method, params))


def points(sock, cgroup, since, until=None):
    p = {"cgroup": cgroup, "since_us": since, "quantities": ["charges.gpu"]}
    if until is not None:
        p["until_us"] = until
    charges = call(sock, "History", p)["charges"]
    assert [c["resource"] for c in charges] == ["gpu"], charges
    return charges[0]["points"]


def last_value_is(sock, cgroup, since, value):
    pts = points(sock, cgroup, since)
    return pts if pts and pts[-1]["value"] == value else None


def gpu_usage(sock, since, until, path):
    _, cgs = usage(sock, since, until, charges=["gpu"])
    c = cgs[path].get("charges")
    assert c and c[0]["resource"] == "gpu", cgs[path]
    return cgs[path], c[0]


def test_charges_recorded_integrated_and_kept_after_removal(env):
    sock, fs = env["sock"], env["fs"]
    since = now_us()
    poll(lambda: recording(sock, since), what="a first recording")

    t0a = now_us()
    call(sock, "Charge", {"resource": "gpu", "delta": 1000, "cgroup": "/svc/job"})
    p = poll(lambda: last_value_is(sock, "/svc/job", since, 1000), what="the charge in the history")
    # held over two more recordings: no new point while nothing changes
    poll(lambda: recording(sock, p[-1]["t_us"] + 2 * 1000000), what="two recordings more")
    assert len(points(sock, "/svc/job", since)) == 1

    t1a = now_us()
    call(sock, "Charge", {"resource": "gpu", "delta": 2000, "cgroup": "/svc/job"})
    poll(lambda: last_value_is(sock, "/svc/job", since, 3000), what="the change in the history")
    after = now_us() + 1000000
    poll(lambda: recording(sock, after), what="a recording a second after the change")

    until = now_us()
    pts = points(sock, "/svc/job", since, until)
    assert [q["value"] for q in pts] == [1000, 3000], pts
    assert all(q["bound"] == 0 for q in pts), pts
    p0, p1 = pts
    # each recorded after its charge began; the first holds until the second
    assert p0["t_us"] >= t0a and p1["t_us"] >= t1a, (t0a, t1a, pts)
    assert p0["end_us"] == p1["t_us"] and p1["end_us"] <= until, pts
    # the subtree value of the parent is the same
    assert [q["value"] for q in points(sock, "/svc", since, until)] == [1000, 3000]

    row, u = gpu_usage(sock, since, until, "/svc/job")
    # the integral is the points' values over the times they held
    held = sum(q["value"] * (q["end_us"] - q["t_us"]) for q in pts) / 1e6
    assert abs(u["value_seconds"]["value"] - held) <= 1e-6 * max(1.0, held), (u, pts)
    assert u["recorded_us"] == p1["end_us"] - p0["t_us"], (u, pts)
    assert u["max"] == 3000
    # The change happened at some c1 after the charge call began (t1a) and
    # after the recording before p1 (which still saw 1000): the bound is
    # |change| x that step, so the true integral for any such c1 lies within.
    bound = u["value_seconds"].get("bound", 0)
    assert bound > 0, u
    step_s = bound / 2000
    for c1 in (p1["t_us"] / 1e6, max(t1a / 1e6, p1["t_us"] / 1e6 - step_s)):
        true = 1000 * (c1 - p0["t_us"] / 1e6) + 3000 * (p1["end_us"] / 1e6 - c1)
        assert abs(u["value_seconds"]["value"] - true) <= bound + 1e-6, (u, pts, c1)
    # the parent's row holds its subtree's
    _, pu = gpu_usage(sock, since, until, "/svc")
    assert pu["max"] == 3000, pu

    # Removed: released (the parent's subtree value falls to 0), and the
    # removed cgroup's history still answered, its last value held to the removal.
    fs.rmdir("/svc/job")

    def removed():
        _, cgs = usage(sock, since, charges=["gpu"])
        r = cgs.get("/svc/job")
        return r if r and r.get("removed_us") else None
    row = poll(removed, what="the removal in the history")
    poll(lambda: last_value_is(sock, "/svc", since, 0), what="the release in the parent's history")
    until = now_us()
    pts = points(sock, "/svc/job", since, until)
    assert [q["value"] for q in pts] == [1000, 3000], pts
    assert pts[-1]["end_us"] == row["removed_us"], (row, pts)
    row, u = gpu_usage(sock, since, until, "/svc/job")
    held = sum(q["value"] * (q["end_us"] - q["t_us"]) for q in pts) / 1e6
    assert abs(u["value_seconds"]["value"] - held) <= 1e-6 * max(1.0, held), (u, pts)
    assert u["recorded_us"] == pts[-1]["end_us"] - pts[0]["t_us"]

    # acctctl usage --charge: the same figures, in --json and below the table
    window = ["--since", "@%.6f" % (since / 1e6), "--until", "@%.6f" % (until / 1e6)]
    p = ctl(sock, "usage", "/svc/job", "--charge=gpu", "--json", *window)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    [c] = [r for r in doc["cgroups"] if r["path"] == "/svc/job"]
    assert c["charges"][0]["max"] == 3000 and c["charges"][0]["recorded_us"] == u["recorded_us"], c
    p = ctl(sock, "usage", "/svc/job", "--charge=gpu", *window)
    assert p.returncode == 0, p.stderr
    # below the table, in the unit (bytes: acctctl reads it from acctd's files)
    assert "Charged gpu (bytes), held over the time recorded" in p.stdout, p.stdout
    assert re.search(r"^/svc/job .* 2\.9K +[0-9.]+s$", p.stdout, re.M), p.stdout
    p = ctl(sock, "usage", "--charge=nope", *window)
    assert p.returncode != 0 and "No such resource: nope" in p.stderr, (p.stdout, p.stderr)


def test_undeclared_resource_refused(env):
    sock = env["sock"]
    since = now_us()
    poll(lambda: recording(sock, since), what="a first recording")
    with Varlink(sock) as v:
        # named as Charge names it: NoSuchResource with the name
        e = error(v.call(IFACE + ".Usage", {"since_us": since - 1000000, "charges": ["nope"]}),
                  IFACE + ".NoSuchResource")
        assert e == {"resource": "nope"}, e
        e = error(v.call(IFACE + ".History", {"cgroup": "/svc", "since_us": since - 1000000,
                                              "quantities": ["charges.nope"]}),
                  IFACE + ".NoSuchResource")
        assert e == {"resource": "nope"}, e
        # not a name: InvalidParameter
        error(v.call(IFACE + ".Usage", {"since_us": since - 1000000, "charges": [7]}),
              "org.varlink.service.InvalidParameter")
        # declared, never charged: no points, no charges in Usage's rows
        p = ok(v.call(IFACE + ".History", {"cgroup": "/svc", "since_us": since - 1000000,
                                           "quantities": ["charges.gpu"]}))
    assert p["charges"] == [{"resource": "gpu", "points": []}], p
    assert p["steps"] and all(set(s) <= {"t_us", "covered_us"} for s in p["steps"]), p["steps"][:3]
    _, cgs = usage(sock, since - 1000000, charges=["gpu"])
    assert all("charges" not in c for c in cgs.values()), cgs
