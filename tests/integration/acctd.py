"""Running the real acctd binary from integration tests.

ACCTD in the environment names the binary (meson sets it); otherwise the
build directory's is used. Daemon starts acctd in the foreground with a state
file and a notify socket, and lets a test wait for conditions on the ledger.
"""
import array
import glob
import json
import os
import signal
import socket
import subprocess
import threading
import time

import fakecg  # tests/fakecg.py, on sys.path through conftest.py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def binary():
    path = os.environ.get("ACCTD") or os.path.join(ROOT, "build", "daemon", "acctd", "acctd")
    if not os.path.exists(path):
        raise RuntimeError("acctd binary not found at %s (set ACCTD)" % path)
    return path


def write_config(path, sections):
    """sections: {"sampling": {"fast_interval": "100ms"}, ...}"""
    with open(path, "w") as f:
        for sec, kv in sections.items():
            f.write("[%s]\n" % sec)
            for k, v in kv.items():
                f.write("%s = %s\n" % (k, v))
    return path


def run(args, **kw):
    """Run acctd to completion; returns CompletedProcess with text output."""
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    env.update(kw.pop("env", {}))
    return subprocess.run([binary()] + list(args), capture_output=True, text=True, timeout=kw.pop("timeout", 60),
                          env=env, **kw)


# --cgroup-root ROOT, and --meminfo with the fake tree's own meminfo.
root_args = fakecg.acctd_root_args


def dump(root=None, config=None, extra=()):
    args = ["--dump", "--config-dropins", ""]
    if config:
        args += ["--config", config]
    else:
        args += ["--config", os.devnull]
    if root:
        args += root_args(root)
    p = run(args + list(extra))
    assert p.returncode == 0, "acctd --dump failed (%d): %s" % (p.returncode, p.stderr)
    return json.loads(p.stdout)


def by_path(doc, include_dead=True):
    out = {}
    for c in doc["cgroups"]:
        if c["state"] == "dead" and not include_dead:
            continue
        out.setdefault(c["path"], c)  # live first: the daemon sorts live before dead
    return out


def value(cg, name):
    v = cg["values"].get(name)
    return None if v is None else v["value"]


class Daemon:
    """acctd in the foreground: state file, notify socket, log capture."""

    def __init__(self, tmpdir, root=None, config=None, extra=(), env=None, nofile=None, wrapper=(), fdstore=None):
        """wrapper: a command that runs acctd (setpriv ... to drop privileges:
        the notify socket is then writable by anyone). fdstore: a dict
        {name: [fd, ...]} playing systemd's descriptor store: its descriptors
        are passed at the start (LISTEN_FDS, LISTEN_FDNAMES) and it keeps what
        acctd sends with FDSTORE=1 and drops what FDSTOREREMOVE=1 names."""
        self.tmpdir = str(tmpdir)
        self.state = os.path.join(self.tmpdir, "state.json")
        self.notify_path = os.path.join(self.tmpdir, "notify.sock")
        self.log_path = os.path.join(self.tmpdir, "acctd.log")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        if wrapper:
            os.chmod(self.notify_path, 0o777)
        self.notify.settimeout(0.1)
        self.messages = []
        self._lock = threading.Lock()
        self._closing = False
        # Each test daemon has its own API socket and no metrics listener,
        # so that several can run at once, beside a host acctd too.
        self.socket = os.path.join(self.tmpdir, "io.acctd")
        args = list(wrapper) + [binary(), "--state-file", self.state, "--config-dropins", ""]
        args += ["--config", config or os.devnull]
        if root:
            args += root_args(root)
        extra = list(extra)
        conf_text = open(config).read() if config else ""
        if "--socket" not in extra and "\nsocket" not in "\n" + conf_text.replace(" ", ""):
            args += ["--socket", self.socket]
        if "--metrics-listen" not in extra:
            args += ["--metrics-listen", "none"]
        args += extra
        e = dict(os.environ)
        e["NOTIFY_SOCKET"] = self.notify_path
        # The history's default path ([history] path) is below the state
        # directory: each test daemon records its own, never the host's
        # /var/lib/acctd (a test sets path or STATE_DIRECTORY to share one).
        e["STATE_DIRECTORY"] = self.tmpdir
        e.update(env or {})
        self.log = open(self.log_path, "w")
        self.fdstore = fdstore
        passed = [(name, fd) for name, fds in sorted((fdstore or {}).items()) for fd in fds]
        if passed:
            e["LISTEN_FDS"] = str(len(passed))
            e["LISTEN_FDNAMES"] = ":".join(name for name, _ in passed)
            # LISTEN_PID is acctd's: the shell's pid, which exec keeps
            args = ["/bin/sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh"] + args
            # high numbers first, so that placing them at 3.. clobbers none
            high = [os.dup2(fd, 1000 + i, inheritable=True) for i, (_, fd) in enumerate(passed)]
        def limits():
            for i, fd in enumerate(high if passed else ()):
                os.dup2(fd, 3 + i)
            if nofile is not None:
                import resource
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=e, preexec_fn=limits,
                                     pass_fds=list(range(3, 3 + len(passed))))
        for fd in (high if passed else ()):
            os.close(fd)
        # like systemd, read every notification as it comes
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def _read_loop(self):
        while not self._closing:
            try:
                if self.fdstore is None:
                    msg = self.notify.recv(4096).decode()
                else:
                    data, anc, _, _ = self.notify.recvmsg(4096, socket.CMSG_SPACE(16 * 4))
                    msg = data.decode()
                    self._store(msg, anc)
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                self.messages.append(msg)

    def _store(self, msg, anc):
        """What systemd does with FDSTORE=1 and FDSTOREREMOVE=1."""
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += array.array("i", data[:len(data) - len(data) % 4]).tolist()
        fields = dict(ln.split("=", 1) for ln in msg.split("\n") if "=" in ln)
        name = fields.get("FDNAME", "stored")
        with self._lock:
            if fields.get("FDSTORE") == "1":
                self.fdstore.setdefault(name, []).extend(fds)
                fds = []
            if fields.get("FDSTOREREMOVE") == "1":
                for fd in self.fdstore.pop(name, []):
                    os.close(fd)
        for fd in fds:
            os.close(fd)

    def read_notify(self, timeout=0.2):
        time.sleep(timeout)
        with self._lock:
            return list(self.messages)

    def wait_notify(self, needle, timeout=60):  # as wait(): for a loaded machine
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for m in self.read_notify(0.05):
                if needle in m:
                    return m
            if self.proc.poll() is not None and not any(needle in m for m in self.read_notify(0.2)):
                break
        raise AssertionError("no notify message with %r; got %r; log:\n%s" % (needle, self.messages, self.logtext()))

    def doc(self):
        try:
            with open(self.state) as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def wait(self, pred, timeout=60, what="condition"):
        """Wait until pred(doc) is true for a state written after this call.
        The default deadline is for a loaded machine (issue 30: two CPU hogs,
        or another test's 10,000 cgroups that every pass's BPF walk visits);
        a wait returns as soon as its condition holds, so a long one costs a
        passing test nothing."""
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            d = self.doc()
            if d is not None:
                last = d
                try:
                    if pred(d):
                        return d
                except (KeyError, TypeError):
                    pass
            if self.proc.poll() is not None:
                raise AssertionError("acctd exited (%s) while waiting for %s; log:\n%s"
                                     % (self.proc.returncode, what, self.logtext()))
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s; last state: %s\nlog:\n%s"
                             % (what, json.dumps(last)[:2000] if last else None, self.logtext()))

    def passes(self):
        d = self.doc()
        return d["daemon"]["passes"] if d else 0

    def next_state(self, passes=2, timeout=60):
        """A state written at least `passes` passes from now."""
        start = self.passes()
        return self.wait(lambda d: d["daemon"]["passes"] >= start + passes, timeout, "%d more passes" % passes)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def logtext(self):
        if not self.log.closed:  # stop() closes it: the file stays to read
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, needle, count=1, timeout=30):
        """The log once it holds `needle` (a string, or a compiled regular
        expression) at least `count` times. acctd hands its messages to a
        writer thread of its own (lib/basic/log.c), so a line reaches the file
        a moment after what it reports, and later still on a busy machine:
        wait for it; never read the log once and assert."""
        end = time.monotonic() + timeout
        while True:
            text = self.logtext()
            found = len(needle.findall(text)) if hasattr(needle, "findall") else text.count(needle)
            if found >= count:
                return text
            if time.monotonic() >= end:
                raise AssertionError("after %d s the log holds %r %d times, not %d; its end:\n%s"
                                     % (timeout, getattr(needle, "pattern", needle), found, count, text[-3000:]))
            time.sleep(0.02)

    def stop(self, timeout=10):
        if self._closing:
            return self.proc.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("acctd did not stop within %ss on SIGTERM" % timeout)
        self.read_notify(0.2)
        self._closing = True
        self._reader.join()
        self.notify.close()
        self.log.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def fast_config(tmpdir, **overrides):
    sections = {
        "sampling": {"fast_interval": "100ms", "slow_interval": "300ms", "rescan_interval": "2s"},
        "cgroups": {"tombstone_retention": "1min"},
        "log": {"level": "debug"},
    }
    for key, val in overrides.items():
        sec, k = key.split("__")
        sections.setdefault(sec, {})[k] = val
    return write_config(os.path.join(str(tmpdir), "acctd.conf"), sections)


def threads_in_open(pid):
    """The threads of process pid now in openat(2) (syscall 257 on x86-64):
    a test that holds a pass in a FIFO's open() looks for them."""
    tids = set()
    for f in glob.glob("/proc/%d/task/*/syscall" % pid):
        try:
            with open(f) as fh:
                if fh.read().startswith("257 "):
                    tids.add(f)
        except OSError:
            pass
    return tids


def is_root():
    return os.geteuid() == 0
