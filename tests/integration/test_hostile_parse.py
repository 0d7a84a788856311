"""Parsing amplification (issue 27, item 1): one message within
max_message_size whose shape costs json-c hundreds of times its bytes.

On the main of issue 27, a 16 MB {"method": "io.acctd.Accounting.Status",
"parameters": {"x": [{},{},...]}} from nobody took acctd to 4 GiB of RSS and
held its event loop 39 s (root's `acctctl status` waited that long);
[[],[],...] 800 MiB and 11 s. Now the varlink reader scans each message as
it arrives (lib/varlink/json-shape.h) and refuses such a shape a few KB in,
before json-c builds anything, dropping the rest of its bytes as they come.

The hostile client runs as `nobody` (setpriv), sends the issue's reproduction
and then a GetInfo on the same connection (the stream stays in sync), while
the test polls acctd's VmRSS and times root's `acctctl status`. Under a
sanitizer (its allocator keeps memory) the RSS bound is not asserted."""
import json
import shutil
import subprocess
import sys
import threading
import time

import pytest

import acctd
from test_acctctl import run_ctl
from test_api_client import IFACE, SERVICE, Varlink, acctd_sanitizer, api_daemon
from test_hostile_budget import LIMIT, NOBODY, Agent, clean_exit, rss, served, tree

MB = 1000 * 1000
MiB = 1 << 20

pytestmark = [
    pytest.mark.skipif(not acctd.is_root(), reason="needs root to run the hostile client as nobody"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)"),
]

# argv: socket path, shape, message bytes, repeats. Prints one JSON line: per
# message, whether it was all sent, the reply, and a GetInfo's reply after it.
SENDER = r"""
import json, socket, sys, time
path, shape, size, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
method = sys.argv[5] if len(sys.argv) > 5 else "io.acctd.Accounting.Status"
head = b'{"method":"%s","parameters":{"x":' % method.encode()
if shape == "members":
    n = (size - len(head) - 4) // 12
    body = b"{" + b",".join(b'"%08d":{}' % i for i in range(n)) + b"}"
else:
    item = {"objects": b"{}", "arrays": b"[]"}[shape]
    n = (size - len(head) - 4) // (len(item) + 1)
    body = b"[" + b",".join([item] * n) + b"]"
msg = head + body + b"}}\0"

def reply(s):
    buf = b""
    while b"\0" not in buf:
        c = s.recv(1 << 16)
        if not c:
            return {"eof": True}
        buf += c
    return json.loads(buf.split(b"\0")[0])

out = []
for i in range(repeat):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(600)
    t = time.monotonic()
    r = {"bytes": len(msg)}
    try:
        s.sendall(msg)
        r["sent"] = True
        r["reply"] = reply(s)
        s.sendall(b'{"method":"org.varlink.service.GetInfo"}\0')
        r["after"] = reply(s)
    except OSError as e:
        r["exception"] = "%s: %s" % (type(e).__name__, e)
    r["seconds"] = time.monotonic() - t
    out.append(r)
    s.close()
print(json.dumps(out), flush=True)
"""


def attack(d, path, shape, size, repeat=1, status_deadline=60, method=IFACE + ".Status"):
    """Send `repeat` hostile messages of `size` bytes as nobody; meanwhile
    sample acctd's RSS every 20 ms and time root's `acctctl status` one call
    after another. Returns (results, peak RSS, status latencies)."""
    p = subprocess.Popen(["setpriv"] + NOBODY + [sys.executable, "-c", SENDER, path, shape, str(size), str(repeat),
                                                 method],
                         stdout=subprocess.PIPE, text=True, cwd="/")
    peak = [rss(d)]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], rss(d))
            except (OSError, AssertionError):
                return
            time.sleep(0.02)

    t = threading.Thread(target=sample)
    t.start()
    latencies = []
    try:
        while p.poll() is None or len(latencies) < 3:
            t0 = time.monotonic()
            try:
                r = run_ctl(["status"], address=path, timeout=status_deadline)
                assert r.returncode == 0, r.stderr
            except subprocess.TimeoutExpired:
                pass
            latencies.append(time.monotonic() - t0)
        out, _ = p.communicate(timeout=600)
    finally:
        done.set()
        t.join()
        if p.poll() is None:
            p.kill()
            p.wait()
    return json.loads(out), peak[0], latencies


@pytest.mark.parametrize("shape,size", [("objects", 4 * MB), ("objects", 16 * MB), ("arrays", 4 * MB),
                                        ("arrays", 16 * MB), ("members", 4 * MB)])
def test_costly_shape_refused_as_it_arrives(fakecg, tmp_path, capsys, shape, size):
    """The issue's reproduction and its relatives from nobody: refused with
    InvalidParameter "message", the connection still in sync (a GetInfo
    after it answers); acctd's RSS stays within 2 x the message + 32 MiB of
    where it was (the old code: 1 to 4 GiB); root's `acctctl status` answers
    within 10 s all along (the old code: up to 39 s)."""
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        served(path)
        time.sleep(0.3)
        before = rss(d)
        results, peak, latencies = attack(d, path, shape, size)
        with capsys.disabled():
            print("\n%s, %d MB from nobody: RSS %.1f MiB before, peak %.1f MiB; root's status took %.0f ms at most "
                  "(%d calls); the refusal came after %.2f s"
                  % (shape, size // MB, before / MiB, peak / MiB, max(latencies) * 1000, len(latencies),
                     results[0]["seconds"]))
        for r in results:
            assert "exception" not in r, r
            assert r["reply"].get("error") == SERVICE + ".InvalidParameter", r
            assert r["reply"]["parameters"] == {"parameter": "message"}, r
            assert "error" not in r["after"] and r["after"]["parameters"]["vendor"], r
        assert max(latencies) < 10, latencies
        if not acctd_sanitizer():
            assert peak - before <= 2 * size + 32 * MiB, (before, peak)
        served(path)
    clean_exit(d)


def test_costly_shape_charged_to_the_input_budget(fakecg, tmp_path):
    """A shape within the per-message bound (16 x its bytes + 1 MiB) is still
    charged, what it will cost to build, to its sender's input budget: with
    max_input_bytes_per_user = 1M, nobody's call of 16,000 strings in one
    array (92 KB of text, about 1.6 MB to build) is refused with the budget's
    error before it is built; root's, the same, is answered."""
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, api__max_input_bytes_per_user="1M") as (d, path):
        params = {"cgroups": ["/a"] * 16000}
        with Agent(path, NOBODY) as a:
            a.do("connect", id=0)
            a.do("send", id=0, method=IFACE + ".Watch", params=params, more=True)
            r = a.do("drain", id=0)
            assert r["eof"] and r["error"]["error"] == LIMIT, r
            assert r["error"]["parameters"] == {"limit": "max_input_bytes_per_user", "value": MiB}
        with Varlink(path) as v:
            v.send(IFACE + ".Watch", params, more=True)
            m = v.recv()
            assert "error" not in m, m
        d.wait_log("estimated to cost")
    clean_exit(d)


# ChargeBatch is read without json-c, and the reader lets a message that
# begins as one past the parse-cost limits (docs/performance.md,
# "ChargeBatch"): a batch of max_charge_batch entries must be accepted.
BATCH_CONF = {"resource.bench__unit": "count", "resource.bench__budget": "1048576", "api__max_charge_batch": "40000"}


def test_charge_batch_of_max_charge_batch_accepted(fakecg, tmp_path):
    """A ChargeBatch of max_charge_batch (40,000) ordinary entries, 2.2 MB
    that json-c would need ~60 MB to build (over 16 x its bytes + 1 MiB, and
    more entries than one array may have otherwise), is charged whole, once;
    one entry more is ResourceLimitExceeded max_charge_batch (nothing
    charged); a batch with one unknown resource at its end charges nothing."""
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, **BATCH_CONF) as (d, path):
        served(path)
        entry = {"resource": "bench", "delta": 1, "cgroup": "/s/c0001"}
        with Varlink(path) as v:
            r = v.call(IFACE + ".ChargeBatch", {"charges": [entry] * 40000})
            assert r.get("parameters") == {"applied": 40000}, r
            r = v.call(IFACE + ".ChargeBatch", {"charges": [entry] * 40001})
            assert r.get("error") == IFACE + ".ResourceLimitExceeded", r
            assert r["parameters"] == {"limit": "max_charge_batch", "value": 40000}, r
            r = v.call(IFACE + ".ChargeBatch", {"charges": [entry] * 39999 + [dict(entry, resource="nope")]})
            assert r.get("error") == IFACE + ".NoSuchResource", r
            r = v.call(IFACE + ".Get", {"cgroup": "/s/c0001", "precise": True})
            assert r["parameters"]["charges"]["bench"]["self"]["value"] == 40000, r
        served(path)
    clean_exit(d)


@pytest.mark.parametrize("shape", ["objects", "members"])
def test_costly_shape_as_charge_batch_refused(fakecg, tmp_path, shape):
    """The exemption is no way around the bound: the issue's shapes sent as
    a ChargeBatch from nobody are refused as before (InvalidParameter
    "message", the connection in sync), json-c never building them."""
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, **BATCH_CONF) as (d, path):
        served(path)
        before = rss(d)
        results, peak, latencies = attack(d, path, shape, 4 * MB, method=IFACE + ".ChargeBatch")
        for r in results:
            assert "exception" not in r, r
            assert r["reply"].get("error") == SERVICE + ".InvalidParameter", r
            assert r["reply"]["parameters"] == {"parameter": "message"}, r
            assert "error" not in r["after"] and r["after"]["parameters"]["vendor"], r
        assert max(latencies) < 10, latencies
        if not acctd_sanitizer():
            assert peak - before <= 2 * 4 * MB + 32 * MiB, (before, peak)
        served(path)
    clean_exit(d)


def raw_call(sock, text):
    """Send one message's text as given; return the reply, parsed."""
    sock.sendall(text.encode() + b"\0")
    buf = b""
    while b"\0" not in buf:
        chunk = sock.recv(1 << 16)
        assert chunk, "connection closed after %r" % text[:200]
        buf += chunk
    return json.loads(buf.split(b"\0")[0])


# "parameters" texts of ChargeBatch, odd and ordinary: acctd's own reader
# takes a call whose method comes first, json-c the same call with its
# parameters first. Both must answer alike.
BATCH_CASES = [
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"/s/c0002"}]}',
    '{"charges":[]}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"/s/c0002"},{"resource":"nope","delta":1}]}',
    '{"charges":[{"resource":"bench","delta":"1","cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":1.5,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":1e3,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":-0,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":9223372036854775808,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":4611686018427387905,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":4611686018427387904,"cgroup":"/s/c0002"},'
    '{"resource":"bench","delta":1,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":null}]}',
    '{"charges":[{"resource":"bench","delta":1}]}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"../x"}]}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"/zz"}]}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"/s/c0002/"}]}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"\\/s\\/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"/s/c0002","x":1}]}',
    '{"charges":[{"resource":"bench","resource":"nope","delta":1,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","delta":1,"delta":2,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"b\\u00e9nch","delta":1,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"delta":1,"cgroup":"/s/c0002"}]}',
    '{"charges":[{"resource":"bench","cgroup":"/s/c0002"}]}',
    '{"charges":[1]}',
    '{"charges":{}}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"/s/c0002"}],"more":1}',
    '{"charges":[{"resource":"bench","delta":1,"cgroup":"/s/c0002"}],"charges":[]}',
    '{}',
]


def test_charge_batch_own_reader_answers_as_json_c(fakecg, tmp_path):
    """Every case of BATCH_CASES gets the same reply from acctd's own
    ChargeBatch reader as from json-c's path, and the charges they applied
    are equal (the precise value doubles)."""
    import socket
    tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, **dict(BATCH_CONF, api__max_charge_batch="3")) as (d, path):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.settimeout(60)
        cases = BATCH_CASES + ['{"charges":[%s]}' % ",".join(['{"resource":"bench","delta":1}'] * 4)]
        for p in cases:
            own = raw_call(s, '{"method":"%s.ChargeBatch","parameters":%s}' % (IFACE, p))
            other = raw_call(s, '{"parameters":%s,"method":"%s.ChargeBatch"}' % (p, IFACE))
            assert own == other, (p, own, other)
        r = raw_call(s, json.dumps({"method": IFACE + ".Get", "parameters": {"cgroup": "/s/c0002", "precise": True}}))
        assert r["parameters"]["charges"]["bench"]["self"]["value"] % 2 == 0, r
        s.close()
    clean_exit(d)
