"""Block I/O and memory events (issue 11, items 15 and 16).

On this host's real v1 hierarchies (root only): a cgroup that writes and reads
with O_DIRECT, so that the block layer charges it, shows in acctd exactly the
bytes and operations per device that blkio.throttle.io_service_bytes_recursive
and io_serviced_recursive hold; a memory cgroup whose process exceeds its
limit and is OOM-killed shows the kernel's memory.failcnt (as
memory.events.max) and memory.oom_control's oom_kill. v2 io.stat and
memory.events through the fake tree (no v2 io or memory controller here): the
API's per-device values and totals, rates, /metrics families and acctctl's
columns."""
import os
import re
import subprocess
import sys
import time

import pytest

import acctd
from test_acctctl import acctctl_binary
from test_metrics import free_port, promtool, samples, start

INPLACE = {"mode": "v2", "write_mode": "inplace"}
BLKIO = "/sys/fs/cgroup/blkio"
MEMORY = "/sys/fs/cgroup/memory"
PREFIX = "acctd-i11-io"  # real cgroups made here carry this in their name


def live(doc, path):
    for c in doc["cgroups"]:
        if c["path"] == path and c["state"] == "live":
            return c
    return None


def val(cg, name):
    v = cg["values"].get(name)
    return None if v is None else v["value"]


# ---- v2 through the fake tree --------------------------------------------------------

@pytest.mark.parametrize("fakecg", [INPLACE], indirect=True)
def test_v2_io_stat_and_memory_events(fakecg, tmp_path):
    fs = fakecg
    db = "/app.slice/db.service"
    fs.mkdir(db, memory=8 << 20, procs=[10])
    fs.mkdir("/app.slice/web.service", memory=4 << 20, procs=[11])
    fs.add_io(db, "8:0", rbytes=40960, wbytes=1 << 20, rios=10, wios=16, dbytes=4096, dios=1)
    fs.add_io(db, "8:16", rbytes=8192, wbytes=0, rios=2, wios=0, dbytes=0, dios=0)
    fs.add_io("/app.slice/web.service", "8:0", wbytes=12288, wios=3)
    fs.add_memory_events(db, high=5, max=3, oom=2, oom_kill=1)

    d, m = start(tmp_path, fs)
    with d:
        doc = d.wait(lambda doc: val(live(doc, db), "io.read_bytes") == 49152 and
                     val(live(doc, db), "memory.events.oom_kill") == 1, what="db.service's I/O and events")
        c = live(doc, db)
        # totals: the sums over the devices, as io.stat gives them
        assert (val(c, "io.read_bytes"), val(c, "io.write_bytes"), val(c, "io.read_ios"), val(c, "io.write_ios"),
                val(c, "io.discard_bytes"), val(c, "io.discard_ios")) == (49152, 1 << 20, 12, 16, 4096, 1)
        devs = {x["device"]: x for x in c["io"]["devices"]}
        assert set(devs) == {"8:0", "8:16"}
        exp = fs.expected(db)["io"]
        for dev, e in exp.items():
            assert (devs[dev]["read_bytes"], devs[dev]["write_bytes"], devs[dev]["read_ios"], devs[dev]["write_ios"],
                    devs[dev]["discard_bytes"], devs[dev]["discard_ios"]) == \
                (e["rbytes"], e["wbytes"], e["rios"], e["wios"], e["dbytes"], e["dios"])
        # hierarchical: the slice holds both services' I/O (the kernel's io.stat)
        s = live(doc, "/app.slice")
        assert val(s, "io.write_bytes") == (1 << 20) + 12288 and val(s, "io.write_ios") == 19
        # memory events
        assert (val(c, "memory.events.low"), val(c, "memory.events.high"), val(c, "memory.events.max"),
                val(c, "memory.events.oom"), val(c, "memory.events.oom_kill"),
                val(c, "memory.events.oom_group_kill")) == (0, 5, 3, 2, 1, 0)
        assert c["values"]["memory.under_oom"] is None  # v1 only: never read on v2

        # rates: I/O between two passes gives a rate, none for two passes gives 0
        fs.add_io(db, "8:0", rbytes=64 << 20, rios=512)
        doc = d.wait(lambda doc: (live(doc, db)["io"]["rate"] or {}).get("read_bytes", 0) > 0,
                     what="a read rate after reading")
        r = live(doc, db)["io"]["rate"]
        assert r["read_ios"] > 0 and r["write_bytes"] == 0
        doc = d.wait(lambda doc: (live(doc, db)["io"]["rate"] or {}).get("read_bytes") == 0,
                     what="the read rate back at 0")
        assert val(live(doc, db), "io.read_bytes") == 49152 + (64 << 20)

        # /metrics: totals, per device, events; promtool is content with them
        page, _ = m.page("/metrics?family=all&format=text")
        promtool(page)
        sm = samples(page)

        def one(name, **labels):
            want = frozenset(labels.items())
            got = [v for (n, l), v in sm.items() if n == name and l == want]
            assert len(got) == 1, (name, labels, [(n, l) for (n, l) in sm if n == name][:10])
            return got[0]

        assert one("acctd_io_bytes_total", cgroup=db, operation="read") == 49152 + (64 << 20)
        assert one("acctd_io_operations_total", cgroup=db, operation="write") == 16
        assert one("acctd_io_device_bytes_total", cgroup=db, device="8:16", operation="read") == 8192
        assert one("acctd_io_device_operations_total", cgroup=db, device="8:0", operation="discard") == 1
        assert one("acctd_memory_events_total", cgroup=db, event="oom_kill") == 1
        assert one("acctd_memory_events_total", cgroup=db, event="high") == 5
        assert one("acctd_io_rate_bytes_per_second", cgroup=db, operation="read") == 0

        # acctctl: list/top columns, show's device table
        env = dict(os.environ, ACCTD_ADDRESS="unix:" + str(tmp_path / "api.sock"))
        out = subprocess.run([acctctl_binary(), "list", "--sort=io"], capture_output=True, text=True, env=env,
                             timeout=30, check=True).stdout
        header = out.splitlines()[0].split()
        assert header[-3:] == ["READ/s", "WRITE/s", "AGE"], header
        out = subprocess.run([acctctl_binary(), "show", db], capture_output=True, text=True, env=env, timeout=30,
                             check=True).stdout
        assert re.search(r"^8:16\s+-\s+8\.0K\s+0B\s+2\s+0\s+0B\s+0$", out, re.M), out
        assert re.search(r"^memory\.events\.oom_kill\s+1\s", out, re.M), out
        assert "I/O rate: read 0B/s" in out, out


# ---- real v1 hierarchies ------------------------------------------------------------

def rmdir_retry(path):
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def whole_disk(dev):
    """MAJ:MIN of the disk holding device `dev` (a partition's parent)."""
    sysdir = os.path.realpath("/sys/dev/block/%d:%d" % (os.major(dev), os.minor(dev)))
    if os.path.exists(os.path.join(sysdir, "partition")):
        sysdir = os.path.dirname(sysdir)
    with open(os.path.join(sysdir, "dev")) as f:
        return f.read().strip()


def blkio_file(cg, name):
    """{(device, op): value} of a v1 rwstat file, and its Total."""
    out, total = {}, None
    with open(os.path.join(cg, name)) as f:
        for line in f:
            w = line.split()
            if w[0] == "Total":
                total = int(w[1])
            else:
                out[(w[0], w[1])] = int(w[2])
    return out, total


@pytest.fixture
def blkio_cgroup(tmp_path):
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    if not os.path.exists(os.path.join(BLKIO, "blkio.throttle.io_service_bytes_recursive")):
        pytest.skip("no v1 blkio hierarchy at %s" % BLKIO)
    data_dir = "/var/tmp"  # on a block device (tmp_path may be tmpfs)
    try:
        disk = whole_disk(os.stat(data_dir).st_dev)
    except OSError:
        pytest.skip("%s is not on a block device" % data_dir)
    name = "%s-%d" % (PREFIX, os.getpid())
    path = os.path.join(BLKIO, name)
    os.mkdir(path)
    data = os.path.join(data_dir, name + ".dat")
    try:
        # Since 6.9 the v1 throttle files count only on queues where throttling
        # was configured once: a limit nothing reaches (1 TiB/s, on this cgroup
        # only) turns the accounting on.
        with open(os.path.join(path, "blkio.throttle.read_bps_device"), "w") as f:
            f.write("%s %d\n" % (disk, 1 << 40))
        yield {"name": "/" + name, "dir": path, "data": data, "disk": disk}
    finally:
        rmdir_retry(path)
        if os.path.exists(data):
            os.unlink(data)


def run_in(cgroup_dir, argv):
    """Run argv as a process of the cgroup (it moves itself in before exec)."""
    code = "import os,sys; open(%r,'w').write(str(os.getpid())); os.execvp(sys.argv[1], sys.argv[1:])" % (
        os.path.join(cgroup_dir, "cgroup.procs"),)
    return subprocess.run([sys.executable, "-c", code] + argv, capture_output=True, text=True, timeout=120)


def test_real_blkio_matches_kernel(blkio_cgroup, tmp_path):
    cg = blkio_cgroup
    w = run_in(cg["dir"], ["dd", "if=/dev/zero", "of=" + cg["data"], "bs=64k", "count=64", "oflag=direct"])
    assert w.returncode == 0, w.stderr
    r = run_in(cg["dir"], ["dd", "if=" + cg["data"], "of=/dev/null", "bs=64k", "iflag=direct"])
    assert r.returncode == 0, r.stderr
    # Nothing in the cgroup any more: its files hold still while acctd reads them.
    before = (blkio_file(cg["dir"], "blkio.throttle.io_service_bytes_recursive"),
              blkio_file(cg["dir"], "blkio.throttle.io_serviced_recursive"))
    conf = acctd.write_config(str(tmp_path / "a.conf"), {"cgroups": {"include": cg["name"] + "*"}})
    doc = acctd.dump(config=conf)
    after = (blkio_file(cg["dir"], "blkio.throttle.io_service_bytes_recursive"),
             blkio_file(cg["dir"], "blkio.throttle.io_serviced_recursive"))
    assert before == after
    (nbytes, total_bytes), (nios, total_ios) = before
    disk = cg["disk"]
    # the block layer saw the 4 MiB written and read
    assert nbytes[(disk, "Write")] >= 4 << 20 and nbytes[(disk, "Read")] >= 4 << 20, nbytes
    assert total_bytes >= 8 << 20

    c = live(doc, cg["name"])
    assert c is not None, [x["path"] for x in doc["cgroups"]]
    assert "blkio" in c["hierarchies"]
    devs = {x["device"]: x for x in c["io"]["devices"]}
    assert set(devs) == {dev for dev, _ in nbytes}, (devs, nbytes)
    for dev, x in devs.items():
        assert (x["read_bytes"], x["write_bytes"], x["discard_bytes"]) == \
            (nbytes[(dev, "Read")], nbytes[(dev, "Write")], nbytes[(dev, "Discard")])
        assert (x["read_ios"], x["write_ios"], x["discard_ios"]) == \
            (nios[(dev, "Read")], nios[(dev, "Write")], nios[(dev, "Discard")])
    assert val(c, "io.read_bytes") == sum(v for (dev, op), v in nbytes.items() if op == "Read")
    assert val(c, "io.write_bytes") == sum(v for (dev, op), v in nbytes.items() if op == "Write")
    assert val(c, "io.read_ios") == sum(v for (dev, op), v in nios.items() if op == "Read")
    assert val(c, "io.write_ios") == sum(v for (dev, op), v in nios.items() if op == "Write")
    # the device's kernel name, from sysfs
    with open("/sys/dev/block/%s/uevent" % disk) as f:
        devname = re.search(r"^DEVNAME=(.*)$", f.read(), re.M).group(1)
    assert devs[disk]["name"] == devname


OOM = r"""
import sys
b = bytearray(64 << 20)       # the limit is 16 MiB: the OOM killer ends this
for i in range(0, len(b), 4096):
    b[i] = 1
"""


@pytest.fixture
def oom_cgroup():
    if not acctd.is_root():
        pytest.skip("needs root to create cgroups")
    if not os.path.exists(os.path.join(MEMORY, "memory.oom_control")):
        pytest.skip("no v1 memory hierarchy at %s" % MEMORY)
    name = "%s-oom-%d" % (PREFIX, os.getpid())
    path = os.path.join(MEMORY, name)
    os.mkdir(path)
    try:
        with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
            f.write(str(16 << 20))
        yield {"name": "/" + name, "dir": path}
    finally:
        rmdir_retry(path)


def read_int(path):
    with open(path) as f:
        return int(f.read())


def oom_control(cg):
    with open(os.path.join(cg["dir"], "memory.oom_control")) as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


def test_real_memory_events_match_kernel(oom_cgroup, tmp_path):
    cg = oom_cgroup
    p = run_in(cg["dir"], [sys.executable, "-c", OOM])
    assert p.returncode == -9, (p.returncode, p.stderr)  # SIGKILL from the OOM killer
    failcnt = read_int(os.path.join(cg["dir"], "memory.failcnt"))
    oc = oom_control(cg)
    assert failcnt > 0 and oc["oom_kill"] == 1, (failcnt, oc)

    conf = acctd.write_config(str(tmp_path / "a.conf"), {"cgroups": {"include": cg["name"] + "*"}})
    doc = acctd.dump(config=conf)
    assert read_int(os.path.join(cg["dir"], "memory.failcnt")) == failcnt
    c = live(doc, cg["name"])
    assert c is not None, [x["path"] for x in doc["cgroups"]]
    assert val(c, "memory.events.max") == failcnt
    assert val(c, "memory.events.oom_kill") == oc["oom_kill"] == 1
    assert val(c, "memory.under_oom") == oc["under_oom"] == 0
    # v1 has no counterpart of these: never read, so null
    for k in ("memory.events.low", "memory.events.high", "memory.events.oom", "memory.events.oom_group_kill"):
        assert c["values"][k] is None, k
