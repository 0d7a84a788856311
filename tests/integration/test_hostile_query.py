"""History queries against a hostile local user (issue 27, item 2): one
`Usage` from `nobody` must not stop everybody's queries, outlive its client,
or hold up acctd's exit (docs/history.md, "Queries").

- A far-future window ([0, 2^62), a 100-byte call) costs what the data
  holds: it answers, with the gaps before and after the data, and root's
  `acctctl usage --since=-1h` answers meanwhile (today's main planned it a
  minute at a time, minutes of CPU on the only query thread).
- A long query (a store of many lives, which takes seconds to read) from
  nobody's four connections leaves root served; the fifth is refused with
  ResourceLimitExceeded at max_queries_per_user.
- nobody closing the connection calls its query off (debug log line).
- SIGTERM during a long query: acctd exits within 20 s (main hung in
  pthread_join until the query ended).

nobody's clients are agent processes run through setpriv
(test_hostile_budget). Every wait is a polled condition with a generous
deadline; no timing is asserted but those deadlines."""
import os
import sqlite3
import subprocess
import time

import pytest

import acctd
from test_acctctl import acctctl_binary, base_env
from test_api_client import IFACE, api_daemon, error, ok
from test_history import now_us, poll, recording
from test_hostile_budget import NOBODY, Agent

pytestmark = pytest.mark.skipif(not acctd.is_root(), reason="needs root to run a client as nobody")

LIMIT = IFACE + ".ResourceLimitExceeded"
FAR = 1 << 62
# Lives added to the store for a query that takes seconds: each costs a
# few reads of its rows, whatever the window.
BIG_LIVES = 300000


def conf(db):
    return {"history__path": str(db), "history__interval": "1s"}


def root_usage(sock, deadline=30):
    """root's `acctctl usage --since=-1h`: the seconds it took (fails past
    the deadline)."""
    t = time.monotonic()
    p = subprocess.run([acctctl_binary(), "--address", "unix:" + sock, "--no-pager", "usage", "--since=-1h"],
                       capture_output=True, text=True, timeout=deadline, env=base_env())
    assert p.returncode == 0, p.stderr
    return time.monotonic() - t


def make_big_store(fakecg, tmp_path, db):
    """A store acctd made and recorded into, with BIG_LIVES removed lives of
    two points each added, two hours before it: in a run of their own (id
    0, so that runs sorted by id stay sorted by start), outside root's
    --since=-1h, inside nobody's [0, 2^62)."""
    fakecg.mkdir("/a", memory=4 << 20, cpu_usec=1000, procs=[10])
    with api_daemon(tmp_path, fakecg.root, **conf(db)) as (d, sock):
        started = now_us()
        poll(lambda: recording(sock, started), what="a recording")
    with sqlite3.connect(str(db)) as c:
        t = c.execute("SELECT min(started_us) FROM runs").fetchone()[0] - 2 * 3600 * 1000000
        run = 0
        c.execute("INSERT INTO runs (id, boot_id, started_us, last_us, ended_us, interval_us, max_step_us)"
                  " VALUES (0, 'big', ?, ? + 1000, ? + 1000, 1000000, 1000000)", (t, t, t))
        base = c.execute("SELECT max(id) FROM lives").fetchone()[0] + 1
        c.execute("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)"
                  " INSERT INTO lives (id, path, boot_id, inode, first_seen_us, removed_us, from_zero)"
                  " SELECT ? + i, printf('/big/c%07d', i), 'big', i, ?, ? + 1000, 1 FROM n",
                  (BIG_LIVES, base, t, t))
        c.execute("INSERT INTO points (life, t_us, run, cpu_usec, memory_bytes, tasks)"
                  " SELECT id, first_seen_us, ?, 10, 4096, 1 FROM lives WHERE boot_id = 'big'"
                  " UNION ALL SELECT id, first_seen_us + 500, ?, 20, 8192, 1 FROM lives WHERE boot_id = 'big'",
                  (run, run))


def far_usage(a, i):
    a.do("connect", id=i)
    a.do("send", id=i, method=IFACE + ".Usage", params={"since_us": 0, "until_us": FAR})


def still_running(a, i, timeout=1.0):
    """nobody's query i has not answered within timeout."""
    return a.do("recv", id=i, timeout=timeout).get("timeout", False)


def test_far_future_usage_leaves_root_served(fakecg, tmp_path):
    """Usage over [0, 2^62) from nobody answers with the data's usage and a
    gap before and after it, and root's acctctl usage --since=-1h answers
    within 30 s at the same time."""
    fakecg.mkdir("/a", memory=4 << 20, cpu_usec=1000, procs=[10])
    db = tmp_path / "history.db"
    with api_daemon(tmp_path, fakecg.root, **conf(db)) as (d, sock):
        started = now_us()
        poll(lambda: recording(sock, started), what="a recording")
        with Agent(sock, NOBODY) as a:
            far_usage(a, 0)
            root_usage(sock)
            r = ok(a.do("recv", id=0, timeout=60).get("msg"))
        assert r["since_us"] == 0 and r["until_us"] == FAR
        assert r["gaps"][0]["from_us"] == 0 and r["gaps"][-1]["to_us"] == FAR, r["gaps"]
        assert r["gaps"][-1]["from_us"] >= started, r["gaps"]
        assert "/a" in [c["path"] for c in r["cgroups"]]


def test_long_queries_leave_root_served_and_are_capped(fakecg, tmp_path):
    """Four long queries of nobody's at once (its budget, max_queries_per_user
    = 4): root is answered while they run; nobody's fifth is refused."""
    db = tmp_path / "history.db"
    make_big_store(fakecg, tmp_path, db)
    with api_daemon(tmp_path, fakecg.root, **conf(db)) as (d, sock):
        with Agent(sock, NOBODY) as a:
            for i in range(4):
                far_usage(a, i)
            assert still_running(a, 0), "a query of %d lives answered within 1 s: not a long one" % BIG_LIVES
            far_usage(a, 4)
            p = error(a.do("recv", id=4, timeout=30).get("msg"), LIMIT)
            assert p == {"limit": "max_queries_per_user", "value": 4}
            took = root_usage(sock)
            running = still_running(a, 3, timeout=0.1)
            a.do("closeall")
        print("root's usage --since=-1h beside 4 long queries: %.2f s (theirs still running: %s)" % (took, running))


def test_client_gone_calls_query_off(fakecg, tmp_path):
    """nobody's long query is called off when nobody closes the connection:
    the log says so, and root is answered."""
    db = tmp_path / "history.db"
    make_big_store(fakecg, tmp_path, db)
    with api_daemon(tmp_path, fakecg.root, **conf(db)) as (d, sock):
        with Agent(sock, NOBODY) as a:
            far_usage(a, 0)
            assert still_running(a, 0), "a query of %d lives answered within 1 s: not a long one" % BIG_LIVES
            a.do("close", id=0)
            poll(lambda: "History query of uid 65534 called off (running)" in d.logtext(), timeout=60,
                 what="nobody's query called off")
        root_usage(sock)


def test_sigterm_during_long_query(fakecg, tmp_path):
    """SIGTERM while nobody's long query runs: acctd exits 0 within 20 s."""
    db = tmp_path / "history.db"
    make_big_store(fakecg, tmp_path, db)
    with api_daemon(tmp_path, fakecg.root, **conf(db)) as (d, sock):
        with Agent(sock, NOBODY) as a:
            far_usage(a, 0)
            assert still_running(a, 0), "a query of %d lives answered within 1 s: not a long one" % BIG_LIVES
            t = time.monotonic()
            d.signal(15)
            try:
                rc = d.proc.wait(20)
            except subprocess.TimeoutExpired:
                raise AssertionError("acctd still running 20 s after SIGTERM during a query:\n" + d.logtext()[-3000:])
            print("acctd exited %.2f s after SIGTERM during a long query" % (time.monotonic() - t))
            assert rc == 0, d.logtext()[-3000:]
