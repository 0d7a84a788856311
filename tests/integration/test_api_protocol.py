"""The varlink protocol on a raw socket: framing, pipelining, more/continues,
oneway, null and missing parameters, standard errors, upgrade, limits
(message size, never-terminated input, invalid UTF-8, nesting, connections,
idle clients, a client that stops reading, a thousand clients). After each
bad input the daemon still serves others."""
import json
import os
import resource
import socket
import time

import pytest

import acctd
from test_api_client import IFACE, SERVICE, Varlink, api_daemon, error, ok, rss_kib, still_serves

INVALID = SERVICE + ".InvalidParameter"


def small_tree(fs):
    fs.mkdir("/system.slice/a.service", memory=8 << 20, cpu_usec=1000, procs=[10])
    fs.mkdir("/system.slice/b.service", memory=16 << 20, cpu_usec=2000, procs=[11])
    fs.mkdir("/user.slice", memory=4 << 20, procs=[12])


@pytest.fixture
def api(fakecg, tmp_path):
    small_tree(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        yield d, path


def test_socket_mode_and_getinfo(api):
    d, path = api
    assert os.stat(path).st_mode & 0o777 == 0o666
    with Varlink(path) as v:
        p = ok(v.call(SERVICE + ".GetInfo"))
        assert p["vendor"] == "acctd" and p["product"] == "acctd"
        assert p["version"] and p["url"]
        assert set(p["interfaces"]) == {SERVICE, IFACE}


def test_framing(api):
    d, path = api
    with Varlink(path) as v:
        # two calls in one write
        v.send_raw(b'{"method":"org.varlink.service.GetInfo"}\0{"method":"io.acctd.Accounting.Status"}\0')
        assert ok(v.recv())["vendor"] == "acctd"
        assert "status" in ok(v.recv())
        # one call byte by byte
        msg = b'{"method":"io.acctd.Accounting.Get","parameters":{"cgroup":"/user.slice"}}\0'
        for i in range(len(msg)):
            v.send_raw(msg[i:i + 1])
            if i % 10 == 0:
                time.sleep(0.001)
        assert ok(v.recv())["cgroup"]["path"] == "/user.slice"
        # white space around the object is JSON
        v.send_raw(b' \n{"method":"org.varlink.service.GetInfo"}\n \0')
        assert ok(v.recv())["vendor"] == "acctd"
        # replies are single messages terminated by NUL, nothing else in between
        v.send_raw(b'{"method":"org.varlink.service.GetInfo"}\0')
        raw = b""
        while not raw.endswith(b"\0"):
            raw += v.sock.recv(65536)
        assert raw.count(b"\0") == 1
        json.loads(raw[:-1])


def test_pipelining_in_order(api):
    d, path = api
    paths = ["/", "/system.slice", "/system.slice/a.service", "/system.slice/b.service", "/user.slice"]
    with Varlink(path) as v:
        batch = b""
        for i in range(200):
            p = paths[i % len(paths)]
            batch += json.dumps({"method": IFACE + ".Get", "parameters": {"cgroup": p}}).encode() + b"\0"
            if i % 7 == 3:  # errors keep their place too
                batch += json.dumps({"method": IFACE + ".Get", "parameters": {"cgroup": "/nope%d" % i}}).encode() + b"\0"
        v.send_raw(batch)
        for i in range(200):
            assert ok(v.recv())["cgroup"]["path"] == paths[i % len(paths)]
            if i % 7 == 3:
                assert error(v.recv(), IFACE + ".NoSuchCgroup")["cgroup"] == "/nope%d" % i


def test_null_and_missing_parameters(api):
    d, path = api
    with Varlink(path) as v:
        for params, raw in ((None, False), (None, True), ({}, False)):
            v.send(IFACE + ".Status", params, raw_params=raw)
            assert ok(v.recv())["status"]["cgroups_live"] >= 5
            v.send(IFACE + ".List", params, raw_params=raw)
            assert len(ok(v.recv())["cgroups"]) >= 5
        # null for an optional parameter is its default
        p = ok(v.call(IFACE + ".List", {"prefix": None, "depth": None, "include_dead": None}))
        assert len(p["cgroups"]) >= 5
        # flags may be null or false
        assert ok(v.call(SERVICE + ".GetInfo", None, more=None, oneway=False, upgrade=False))


def test_oneway(api):
    d, path = api
    with Varlink(path) as v:
        v.send(SERVICE + ".GetInfo", oneway=True)
        v.send(IFACE + ".Get", {"cgroup": "/nope"}, oneway=True)  # errors are not sent either
        v.send(IFACE + ".Nope", oneway=True)
        v.send(IFACE + ".Get", {"cgroup": "/user.slice"})
        assert ok(v.recv())["cgroup"]["path"] == "/user.slice"
        v.sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            v.recv()


def test_more_and_continues(fakecg, tmp_path):
    fs = fakecg
    with fs.batch():
        for i in range(1200):
            fs.mkdir("/s%d.slice/u%d.service" % (i % 30, i), memory=(i + 1) << 12)
    with api_daemon(tmp_path, fs.root) as (d, path):
        with Varlink(path) as v:
            whole = ok(v.call(IFACE + ".List"))["cgroups"]
            assert len(whole) == len(fs.paths())
            replies = v.call_more(IFACE + ".List")
            assert len(replies) >= 3
            for r in replies[:-1]:
                assert r["continues"] is True
                assert 0 < len(r["parameters"]["cgroups"]) <= 500
            assert not replies[-1].get("continues")
            streamed = [c for r in replies for c in r["parameters"]["cgroups"]]
            assert [c["path"] for c in streamed] == [c["path"] for c in whole]
            # a method that does not stream answers once, without continues
            r = v.call_more(IFACE + ".Get", {"cgroup": "/"})
            assert len(r) == 1 and not r[0].get("continues")
            # the connection goes on normally after a stream
            assert ok(v.call(SERVICE + ".GetInfo"))


def test_standard_errors(api):
    d, path = api
    with Varlink(path) as v:
        assert error(v.call("com.example.Nope.Get"), SERVICE + ".InterfaceNotFound")["interface"] == "com.example.Nope"
        assert error(v.call(IFACE + ".Nope"), SERVICE + ".MethodNotFound")["method"] == IFACE + ".Nope"
        assert error(v.call(SERVICE + ".Nope"), SERVICE + ".MethodNotFound")["method"] == SERVICE + ".Nope"
        # malformed calls: named, and the connection stays usable
        for raw, field in ((b'{"parameters":{}}', "method"), (b'{"method":42}', "method"),
                           (b'{"method":"GetInfo"}', "method"),
                           (b'{"method":"org.varlink.service.GetInfo","parameters":[1]}', "parameters"),
                           (b'{"method":"org.varlink.service.GetInfo","more":"yes"}', "more"),
                           (b'{"method":"org.varlink.service.GetInfo","oneway":1}', "oneway")):
            v.send_raw(raw + b"\0")
            assert error(v.recv(), INVALID)["parameter"] == field, raw
        assert ok(v.call(SERVICE + ".GetInfo"))


@pytest.mark.parametrize("method,params,bad", [
    ("Get", {}, "cgroup"),
    ("Get", {"cgroup": 1}, "cgroup"),
    ("Get", {"cgroup": None}, "cgroup"),
    ("Get", {"cgroup": ["/"]}, "cgroup"),
    ("Get", {"cgroup": "/", "precise": "yes"}, "precise"),
    ("Get", {"cgroup": "/", "precise": 1}, "precise"),
    ("Get", {"cgroup": "/", "extra": 1}, "extra"),
    ("List", {"prefix": 5}, "prefix"),
    ("List", {"depth": "1"}, "depth"),
    ("List", {"depth": -1}, "depth"),
    ("List", {"depth": 1.5}, "depth"),
    ("List", {"depth": 1 << 70}, "depth"),
    ("List", {"include_dead": "true"}, "include_dead"),
    ("Compare", {"cgroup": "/", "quantity": "memory"}, "threshold"),
    ("Compare", {"cgroup": "/", "quantity": 3, "threshold": 1}, "quantity"),
    ("Compare", {"cgroup": "/", "quantity": "memory", "threshold": "1"}, "threshold"),
    ("Compare", {"cgroup": "/", "quantity": "memory", "threshold": 0.5}, "threshold"),
    ("Status", {"verbose": True}, "verbose"),
    ("Tune", {"bytes_budget": -1}, "bytes_budget"),
    ("Tune", {"cpu_budget_us": "x"}, "cpu_budget_us"),
    ("Tune", {"auto_tune": 1}, "auto_tune"),
    ("Reload", {"force": True}, "force"),
])
def test_wrong_parameters(api, method, params, bad):
    d, path = api
    with Varlink(path) as v:
        assert error(v.call(IFACE + "." + method, params), INVALID)["parameter"] == bad
        assert ok(v.call(SERVICE + ".GetInfo"))


def test_watch_parameters(api):
    d, path = api
    with Varlink(path) as v:
        error(v.call(IFACE + ".Watch", {"prefix": "/"}), SERVICE + ".ExpectedMore")
        for params, bad in (({}, "cgroups"), ({"cgroups": []}, "cgroups"), ({"cgroups": "/"}, "cgroups"),
                            ({"cgroups": [1]}, "cgroups"), ({"cgroups": [None]}, "cgroups"),
                            ({"prefix": "/", "interval_ms": 0}, "interval_ms"),
                            ({"prefix": "/", "interval_ms": "1"}, "interval_ms")):
            v.send(IFACE + ".Watch", params, more=True)
            assert error(v.recv(), INVALID)["parameter"] == bad, params
        v.send(IFACE + ".Watch", {"cgroups": ["/user.slice", "/nope"]}, more=True)
        assert error(v.recv(), IFACE + ".NoSuchCgroup")["cgroup"] == "/nope"
        assert ok(v.call(SERVICE + ".GetInfo"))


def test_upgrade_refused(api):
    d, path = api
    with Varlink(path) as v:
        assert error(v.call(SERVICE + ".GetInfo", upgrade=True), INVALID)["parameter"] == "upgrade"
        assert error(v.call(IFACE + ".Status", upgrade=True), INVALID)["parameter"] == "upgrade"
        # unknown methods stay unknown, upgrade or not
        error(v.call(IFACE + ".Nope", upgrade=True), SERVICE + ".MethodNotFound")
        assert ok(v.call(SERVICE + ".GetInfo"))


def test_interface_description(api):
    d, path = api
    with open(os.path.join(acctd.ROOT, "daemon", "acctd", "io.acctd.Accounting.varlink"), encoding="utf-8") as f:
        text = f.read()
    with Varlink(path) as v:
        assert ok(v.call(SERVICE + ".GetInterfaceDescription", {"interface": IFACE}))["description"] == text
        desc = ok(v.call(SERVICE + ".GetInterfaceDescription", {"interface": SERVICE}))["description"]
        assert desc.startswith("# The Varlink Service Interface") and "interface org.varlink.service\n" in desc
        for m in ("GetInfo", "GetInterfaceDescription", "InvalidParameter", "ExpectedMore", "PermissionDenied"):
            assert m in desc
        assert error(v.call(SERVICE + ".GetInterfaceDescription", {"interface": "com.example.X"}),
                     SERVICE + ".InterfaceNotFound")["interface"] == "com.example.X"
        assert error(v.call(SERVICE + ".GetInterfaceDescription"), INVALID)["parameter"] == "interface"


def test_oversized_message(fakecg, tmp_path):
    small_tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, api__max_message_size="64K") as (d, path):
        # just below the limit: fine
        with Varlink(path) as v:
            pad = "x" * (64 * 1024 - 200)
            assert error(v.call(IFACE + ".Get", {"cgroup": "/" + pad[:200]}), IFACE + ".NoSuchCgroup")
            msg = json.dumps({"method": SERVICE + ".GetInfo", "parameters": {}, "pad": pad}).encode()
            assert len(msg) < 64 * 1024
            v.send_raw(msg + b"\0")
            assert ok(v.recv())
        # complete but too large: answered calls before it, an error, closed
        with Varlink(path) as v:
            big = json.dumps({"method": SERVICE + ".GetInfo", "pad": "x" * (100 * 1024)}).encode()
            try:
                v.send_raw(b'{"method":"org.varlink.service.GetInfo"}\0' + big + b"\0")
            except (BrokenPipeError, ConnectionResetError):
                pass  # closed past the limit while the rest was being sent: the replies are there
            assert ok(v.recv())
            assert error(v.recv(), INVALID)["parameter"] == "message"
            assert v.at_eof()
        still_serves(path)
        # never terminated: refused once past the limit, closed
        with Varlink(path) as v:
            try:
                v.send_raw(b"{" + b" " * (1 << 20))
            except (BrokenPipeError, ConnectionResetError):
                pass
            assert error(v.recv(), INVALID)["parameter"] == "message"
            assert v.at_eof()
        still_serves(path)
        assert d.proc.poll() is None


@pytest.mark.parametrize("payload", [
    b'{"method":"io.acctd.Accounting.Get","parameters":{"cgroup":"/\xff\xfe"}}',
    b'{"method":"io.acctd.Accounting.Get","parameters":{"cgroup":"/\xc0\xae\xc0\xae"}}',  # overlong ".."
    b'{"method":"io.acctd.Accounting.Get","parameters":{"cgroup":"/\xed\xa0\x80"}}',  # a surrogate
    b'{"method":"io.acctd.Accounting.Get","parameters":{"cgroup":"/\x01"}}',  # raw control character
    b'{"method":"org.varlink.service.GetInfo"',  # truncated
    b'{"method":"org.varlink.service.GetInfo"}}',  # trailing garbage
    b'[1, 2, 3]',
    b'"a string"',
    b'',
    b'not json at all',
])
def test_malformed_json(api, payload):
    d, path = api
    with Varlink(path) as v:
        v.send_raw(payload + b"\0")
        assert error(v.recv(), INVALID)["parameter"] == "message"
        assert v.at_eof()
    still_serves(path)


def test_deep_nesting(api):
    d, path = api
    with Varlink(path) as v:
        deep = b'{"method":"org.varlink.service.GetInfo","parameters":{"x":' + b"[" * 10000 + b"]" * 10000 + b"}}"
        v.send_raw(deep + b"\0")
        assert error(v.recv(), INVALID)["parameter"] == "message"
        assert v.at_eof()
    with Varlink(path) as v:
        # moderate nesting is fine (unknown parameter, but parsed)
        nested = {"method": SERVICE + ".GetInfo", "parameters": {"x": [[[[[[[[1]]]]]]]]}}
        assert error(v.call(SERVICE + ".GetInfo", nested["parameters"]), INVALID)["parameter"] == "x"
    still_serves(path)


def test_connection_limits(fakecg, tmp_path):
    small_tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, api__max_connections="4") as (d, path):
        held = [Varlink(path) for _ in range(4)]
        for v in held:
            assert ok(v.call(SERVICE + ".GetInfo"))
        extra = Varlink(path)
        assert extra.at_eof(), "the fifth connection should be closed at once"
        extra.close()
        held.pop().close()
        time.sleep(0.2)
        still_serves(path)
        for v in held:
            v.close()
    with api_daemon(tmp_path, fakecg.root, api__max_connections_per_user="2") as (d, path):
        a, b = Varlink(path), Varlink(path)
        assert ok(a.call(SERVICE + ".GetInfo")) and ok(b.call(SERVICE + ".GetInfo"))
        c = Varlink(path)
        assert c.at_eof()
        c.close()
        a.close()
        time.sleep(0.2)
        still_serves(path)
        b.close()


def test_idle_timeout(fakecg, tmp_path):
    small_tree(fakecg)
    with api_daemon(tmp_path, fakecg.root, api__idle_timeout="300ms") as (d, path):
        with Varlink(path) as v:
            assert ok(v.call(SERVICE + ".GetInfo"))
            t0 = time.monotonic()
            assert v.at_eof(timeout=5)
            assert 0.2 < time.monotonic() - t0 < 3
        # a quiet Watch is not idle
        with Varlink(path) as v:
            v.send(IFACE + ".Watch", {"cgroups": ["/user.slice"], "interval_ms": 50}, more=True)
            assert ok(v.recv())["cgroups"][0]["path"] == "/user.slice"
            assert not v.at_eof(timeout=1.0)


@pytest.mark.parametrize("fakecg", [{"mode": "v2", "write_mode": "inplace"}], indirect=True)
def test_client_that_stops_reading(fakecg, tmp_path):
    small_tree(fakecg)
    watched = ["/w.slice/u%d.service" % i for i in range(300)]
    with fakecg.batch():
        for p in watched:
            fakecg.mkdir(p, memory=1 << 20)
    # under AddressSanitizer, freed memory sits in a quarantine (256 MB) and
    # would count as growth: keep it small
    asan = {"ASAN_OPTIONS": (os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8").lstrip(":")}
    with api_daemon(tmp_path, fakecg.root, env=asan, api__max_output_queue="64K", api__idle_timeout="2s") as (d, path):
        still_serves(path)
        rss0 = rss_kib(d.proc.pid)
        # pipelined calls, never reading the replies: the daemon stops reading
        # once its queue for us is full, so our sends block
        v = Varlink(path)
        v.sock.setblocking(False)
        call = json.dumps({"method": IFACE + ".Get", "parameters": {"cgroup": "/system.slice"}}).encode() + b"\0"
        sent = 0
        blocked_at = None
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                sent += v.sock.send(call * 64)
            except BlockingIOError:
                if blocked_at is None:
                    blocked_at = time.monotonic()
                if time.monotonic() - blocked_at > 0.5:
                    break
                time.sleep(0.01)
            else:
                blocked_at = None
        assert blocked_at is not None, "the daemon kept reading requests of a client that reads nothing"
        # a watcher that does not read either, of 300 cgroups that all change
        # (each update ~1 MB, more than the socket buffer holds)
        w = Varlink(path)
        w.send(IFACE + ".Watch", {"prefix": "/w.slice", "interval_ms": 10}, more=True)
        for i in range(10):
            with fakecg.batch():
                for p in watched:
                    fakecg.set_memory(p, (1 << 20) + ((i + 1) << 12))
            time.sleep(0.05)
        # meanwhile others are served, and the daemon's memory stays put
        still_serves(path)
        grown = rss_kib(d.proc.pid) - rss0
        assert grown < 64 * 1024, "daemon grew by %d KiB" % grown
        # a connection whose output does not move is closed after idle_timeout
        time.sleep(3)
        v.sock.setblocking(True)
        assert v.at_eof(timeout=5)
        assert w.at_eof(timeout=5)
        v.close()
        w.close()
        still_serves(path)
        assert d.proc.poll() is None


@pytest.mark.parametrize("fakecg", [{"mode": "v2", "write_mode": "inplace"}], indirect=True)
def test_watch_coalesces_for_a_slow_reader(fakecg, tmp_path):
    small_tree(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        with Varlink(path) as w:
            w.send(IFACE + ".Watch", {"cgroups": ["/user.slice"], "interval_ms": 10}, more=True)
            first = ok(w.recv())
            assert first["cgroups"][0]["values"]["memory"]["value"] == 4 << 20
            # many changes while we do not read: fewer updates than changes,
            # and the last one we read has the last value
            for i in range(1, 21):
                fakecg.set_memory("/user.slice", (4 << 20) + (i << 12))
                time.sleep(0.03)
            want = (4 << 20) + (20 << 12)
            got = []
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                r = ok(w.recv())
                got.append(r["cgroups"][0]["values"]["memory"]["value"])
                assert r["cgroups"][0]["path"] == "/user.slice"
                if got[-1] == want:
                    break
            assert got[-1] == want
            assert len(got) <= 20


def test_thousand_connections(fakecg, tmp_path):
    small_tree(fakecg)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1100:
        pytest.skip("cannot raise RLIMIT_NOFILE to 1100")
    try:
        with api_daemon(tmp_path, fakecg.root) as (d, path):
            conns = [Varlink(path) for _ in range(1000)]
            msg = json.dumps({"method": IFACE + ".Get", "parameters": {"cgroup": "/user.slice"}}).encode() + b"\0"
            for v in conns:
                v.send_raw(msg)
            for v in conns:
                assert ok(v.recv())["cgroup"]["path"] == "/user.slice"
            # all at once again, from every connection, the other way round
            for v in reversed(conns):
                v.send(SERVICE + ".GetInfo")
            for v in conns:
                assert ok(v.recv())["vendor"] == "acctd"
            for v in conns:
                v.close()
            still_serves(path)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_reconcile_then_hang_up(api):
    d, path = api
    # callers that leave before the pass ends must not hurt anyone
    for _ in range(20):
        v = Varlink(path)
        v.send(IFACE + ".Reconcile")
        v.close()
    # a pipelined call waits for the Reconcile before it
    with Varlink(path) as v:
        v.send(IFACE + ".Reconcile")
        v.send(SERVICE + ".GetInfo")
        rec = ok(v.recv())
        assert "pass" in rec and "reconciliation" in rec
        assert ok(v.recv())["vendor"] == "acctd"
    # oneway: no reply, the pass still happens
    with Varlink(path) as v:
        v.send(IFACE + ".Reconcile", oneway=True)
        assert ok(v.call(SERVICE + ".GetInfo"))
    time.sleep(0.5)
    still_serves(path)
    assert d.proc.poll() is None


def test_socket_removed_on_exit_and_stale_replaced(fakecg, tmp_path):
    small_tree(fakecg)
    with api_daemon(tmp_path, fakecg.root) as (d, path):
        still_serves(path)
        # a second daemon on the same socket refuses to start
        second = acctd.run(["--config", os.devnull, "--config-dropins", ""] + acctd.root_args(fakecg.root) +
                           ["--socket", path], timeout=20)
        assert second.returncode != 0
        assert "in use" in second.stderr + second.stdout
        still_serves(path)
        # it exits (SIGTERM) and takes its socket away
        assert d.stop() == 0
        assert not os.path.exists(path)
        # a stale socket file (nobody listening) is replaced
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
        assert os.path.exists(path)
        os.makedirs(tmp_path / "second")
        d2 = acctd.Daemon(tmp_path / "second", fakecg.root, acctd.fast_config(tmp_path / "second"),
                          extra=["--socket", path])
        try:
            d2.wait_notify("READY=1", timeout=30)
            still_serves(path)
        finally:
            assert d2.stop() == 0
        assert not os.path.exists(path)
