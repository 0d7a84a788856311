#!/usr/bin/env python3
"""test-readme.py - run every command README.md shows, as written, on a clean clone.

    test-readme.py SOURCE_DIR

What a newcomer does, in order: the fenced code blocks of README.md, each
command line as it stands (a trailing backslash joins lines; '#' lines are
comments). A block runs on this host, in a fresh clone, unless the comment
right before it says otherwise (the README shows it, so that nothing is left
out without a reason anyone can read):

    <!-- readme-test: background: ... "MARKER" ... -->
        The block is one command that runs in the foreground until Ctrl-C
        (make run). It is started in the background; the test waits until
        its output shows MARKER (the first double-quoted string), runs the
        next block while it runs, then sends SIGINT to it, as Ctrl-C does, and
        requires it to stop.
    <!-- readme-test: booted: ... -->
        The commands run in a Debian 12 system booted under systemd-nspawn
        (tests/boot's cached root, mkroot.sh), the same system the install
        commands installed into: "sudo CMD" runs CMD as root, any other
        command runs as the unprivileged user nobody.
    <!-- readme-test: skip: REASON -->
        Not run; REASON (required) is printed.

Any other readme-test word fails the test, and so does a block in a language
other than a shell's.

The clone: "git clone" of SOURCE_DIR, checked out at the state of its working
tree (tracked files, committed or not: "git stash create"), into a temporary
directory. The host commands run as root (the test's user) in a private mount
and network namespace (so that nothing on the host is disturbed; "make run"'s
acctd keeps its files in the clone, and the system's /run/acctd and
/var/lib/acctd are read-only there, to show it) with a clean environment, where:
  - "sudo" is a stand-in that runs the command as it is (the test is root;
    real sudo would drop DESTDIR);
  - DESTDIR is the booted system's root (an overlay over tests/boot's cached
    Debian root), so "make install" and "meson install" install there, and
    /usr of this host is read-only, so that an install that ignores DESTDIR
    fails instead of writing into it.
After every host command nothing may have been installed under
DESTDIR/usr/local (the README installs for /usr); before the first booted
block, and at the end, acctd's files must be under DESTDIR/usr.

Exit status: 0 passed, 1 failed, 77 skipped (not root, a tool missing, not a
git checkout, the Debian archive unreachable for the root file system), with
the reason printed. The temporary directory is removed on every exit
(ACCTD_README_KEEP=1 keeps it).
"""

import os
import fcntl
import glob
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT_CACHE = os.environ.get('ACCTD_BOOT_ROOT', '/var/cache/acctd-test/bookworm-root')
SHELLS = {'', 'sh', 'shell', 'bash', 'console'}
KINDS = {'run', 'background', 'booted', 'skip'}
# Where acctd's files must be after the install, relative to DESTDIR; the
# units' directory is systemd's (/lib/systemd/system on Debian 12, /lib being
# /usr/lib in the merged-/usr root).
MUST_LAND = [
    'usr/sbin/acctd',
    'usr/bin/acctctl',
    'usr/lib/systemd/system/acctd.service',
    'usr/lib/systemd/system/acctd.socket',
    'usr/share/doc/acctd/examples/acctd.conf',
    'usr/share/varlink/io.acctd.Accounting.varlink',
    'usr/lib/systemd/system-generators/acctd-generator',
    'usr/share/bash-completion/completions/acctctl',
    'usr/include/acctd/acct-client.h',
    'usr/lib/*/libacct-client.so.0',
    'usr/lib/*/pkgconfig/acct-client.pc',
]
MAN_PAGES = ['usr/share/man/man8/acctd.8', 'usr/share/man/man1/acctctl.1',
             'usr/share/man/man5/acctd.conf.5', 'usr/share/man/man7/io.acctd.Accounting.7']
T0 = time.monotonic()
# A safety net, not a measurement: a host command that has not finished by then
# (a build takes minutes) runs until it is stopped.
HOST_TIMEOUT = 600


def say(msg):
    print('[%6.1fs] %s' % (time.monotonic() - T0, msg), flush=True)


def skip(why):
    print('SKIP:', why, flush=True)
    sys.exit(77)


class Failed(Exception):
    pass


# ---- README.md ----------------------------------------------------------------

ANNOTATION = re.compile(r'^<!--\s*readme-test:\s*([a-z-]+)\s*:?\s*(.*?)\s*-->\s*$')


def blocks(path):
    """The fenced code blocks: (line number, kind, note, language, [command])."""
    out = []
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = re.match(r'^(```+)\s*(\S*)\s*$', lines[i])
        if not m:
            i += 1
            continue
        start, fence, lang = i, m.group(1), m.group(2)
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        kind, note = 'run', ''
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and 'readme-test' in lines[j]:
            a = ANNOTATION.match(lines[j].strip())
            if not a:
                raise Failed('README.md:%d: cannot read the annotation %r' % (j + 1, lines[j]))
            kind, note = a.group(1), a.group(2)
            if kind not in KINDS:
                raise Failed('README.md:%d: unknown readme-test kind %r (known: %s)' %
                             (j + 1, kind, ', '.join(sorted(KINDS))))
            if kind == 'skip' and not note:
                raise Failed('README.md:%d: a skipped block needs its reason' % (j + 1))
        if lang not in SHELLS:
            raise Failed('README.md:%d: a %r block: only shell commands can be checked' % (start + 1, lang))
        cmds, cont = [], ''
        for line in body:
            s = line.strip()
            if not cont and (not s or s.startswith('#')):
                continue
            if s.endswith('\\'):
                cont += s[:-1] + ' '
                continue
            cmds.append(cont + s)
            cont = ''
        if cont:
            cmds.append(cont)
        if not cmds:
            raise Failed('README.md:%d: a code block without a command' % (start + 1))
        if kind == 'background':
            if len(cmds) != 1 or not re.search(r'"([^"]+)"', note):
                raise Failed('README.md:%d: a background block is one command, its annotation names '
                             'the "MARKER" it waits for' % (start + 1))
        out.append((start + 1, kind, note, cmds))
    return out


# ---- the booted system ----------------------------------------------------------

class Container:
    """DESTDIR's root booted under systemd-nspawn (as tests/boot/test-boot.sh does)."""

    def __init__(self, tmp, root):
        self.tmp, self.root = tmp, root
        self.proc = self.leader = None
        self.cgroups = []

    def _make_cgroups(self):
        # Without systemd as PID 1 nothing gives the container a cgroup of its
        # own: nspawn would leave its payload/ and supervisor/ cgroups in ours.
        if open('/proc/1/comm').read().strip() == 'systemd':
            return
        for line in open('/proc/self/cgroup'):
            _, ctl, path = line.rstrip('\n').split(':', 2)
            if ctl == '':
                mnt = subprocess.run(['findmnt', '-n', '-o', 'TARGET', '-t', 'cgroup2'],
                                     capture_output=True, text=True).stdout.split('\n')[0]
            elif ctl == 'name=systemd':
                mnt = next((l.split()[0] for l in subprocess.run(
                    ['findmnt', '-n', '-o', 'TARGET,OPTIONS', '-t', 'cgroup'],
                    capture_output=True, text=True).stdout.split('\n') if 'name=systemd' in l), '')
            else:
                continue
            d = mnt.rstrip('/') + path
            if mnt and os.path.isdir(d):
                cg = d.rstrip('/') + '/' + os.path.basename(self.tmp)
                os.mkdir(cg)
                self.cgroups.append(cg)

    def _children(self, pid):
        out = []
        for d in os.listdir('/proc'):
            if not d.isdigit():
                continue
            try:
                stat = open('/proc/%s/stat' % d).read()
            except OSError:
                continue
            if stat.rsplit(')', 1)[1].split()[1] == str(pid):
                out.append(int(d))
        return out

    def boot(self):
        self._make_cgroups()
        os.makedirs('/run/systemd/nspawn', exist_ok=True)
        subprocess.run(['mount', '-t', 'tmpfs', 'tmpfs', '/run/systemd/nspawn'], check=True)
        bpffs = os.path.join(self.tmp, 'bpffs')
        os.mkdir(bpffs)
        subprocess.run(['mount', '-t', 'bpf', '-o', 'mode=0700', 'bpf', bpffs], check=True)
        cgroups = self.cgroups

        def enter():
            for cg in cgroups:
                with open(cg + '/cgroup.procs', 'w') as f:
                    f.write(str(os.getpid()))
        # The same container as the boot test's: acctd --bpf-pin (ExecStartPre=+)
        # may load and pin its BPF iterator, in a bpffs of its own.
        self.proc = subprocess.Popen(
            ['systemd-nspawn', '-D', self.root, '--register=no', '--keep-unit', '-q', '-b',
             '--console=pipe', '--private-network', '--capability=CAP_BPF,CAP_PERFMON,CAP_SYS_ADMIN',
             '--system-call-filter=bpf', '--bind=%s:/sys/fs/bpf' % bpffs],
            stdin=subprocess.DEVNULL, stdout=open(os.path.join(self.tmp, 'console.log'), 'w'),
            stderr=subprocess.STDOUT, preexec_fn=enter)
        for _ in range(100):
            for c in self._children(self.proc.pid):
                try:
                    if open('/proc/%d/comm' % c).read().strip() == 'systemd':
                        self.leader = c
                except OSError:
                    pass
            if self.leader or self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if not self.leader:
            raise Failed('systemd-nspawn started no container:\n' + self.console())
        deadline = time.monotonic() + 120
        state = ''
        while time.monotonic() < deadline and self.proc.poll() is None:
            state = self.run(['timeout', '60', 'systemctl', 'is-system-running', '--wait']).stdout.strip()
            if state in ('running', 'degraded'):
                break
            time.sleep(0.2)
        if state not in ('running', 'degraded'):
            raise Failed("the container did not boot (state %r):\n%s" % (state, self.console()))
        say('booted the installed root: systemd is %s' % state)

    def console(self):
        try:
            return ''.join(open(os.path.join(self.tmp, 'console.log')).readlines()[-20:])
        except OSError:
            return ''

    def run(self, argv, user=None):
        """argv in the container, as root or (user) as that user, with a clean environment."""
        as_user = ['setpriv', '--reuid=' + user, '--regid=' + user, '--clear-groups'] if user else []  # uid, gid
        return subprocess.run(
            ['nsenter', '-t', str(self.leader), '-m', '-u', '-i', '-n', '-p', '--', 'env', '-i',
             'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8',
             'HOME=/root' if not user else 'HOME=/', 'SYSTEMD_PAGER=', 'SYSTEMD_COLORS=0'] + as_user + argv,
            stdin=subprocess.DEVNULL, capture_output=True, text=True)

    def diagnose(self):
        if not self.leader:
            return
        for argv in (['systemctl', 'status', '--no-pager', '-n', '0', 'acctd.service', 'acctd.socket'],
                     ['journalctl', '--no-pager', '-u', 'acctd', '-n', '30']):
            r = self.run(argv)
            print('----', ' '.join(argv), '\n' + r.stdout + r.stderr)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            if self.leader:
                self.run(['systemctl', 'poweroff', '--no-block'])
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                print('the container did not power off in 10 s; killing it')
                self.proc.kill()
                self.proc.wait()
        for cg in self.cgroups:
            if os.path.exists(cg + '/cgroup.kill'):
                try:
                    open(cg + '/cgroup.kill', 'w').write('1')
                except OSError:
                    pass
            for _ in range(50):
                for d, _subdirs, _files in sorted(os.walk(cg, topdown=False)):
                    try:
                        os.rmdir(d)
                    except OSError:
                        pass
                if not os.path.isdir(cg):
                    break
                time.sleep(0.1)
            if os.path.isdir(cg):
                print('could not remove the container cgroup', cg)


# ---- the run ----------------------------------------------------------------------

def usr_local(dest):
    out = set()
    for d, dirs, files in os.walk(os.path.join(dest, 'usr/local')):
        for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            out.add(os.path.relpath(os.path.join(d, f), dest))
    return out


def landed(dest, where):
    want = MUST_LAND + (MAN_PAGES if shutil.which('scdoc') else [])
    missing = [f for f in want if not glob.glob(os.path.join(dest, f))]
    if missing:
        raise Failed('%s: not installed under DESTDIR/usr: %s' % (where, ', '.join(missing)))
    say('%s: acctd\'s %d files are under DESTDIR/usr%s' %
        (where, len(want), '' if shutil.which('scdoc') else ' (no scdoc: no man pages to look for)'))


def host_cmd(cmd, clone, env, log, dest, before):
    say('$ ' + cmd)
    with open(log, 'w') as out:
        p = subprocess.Popen(['bash', '-c', cmd], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            p.wait(HOST_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise Failed('%r had not finished after %d s; a command that runs until it is stopped needs the '
                         '"readme-test: background" annotation:\n%s' %
                         (cmd, HOST_TIMEOUT, open(log, errors='replace').read()[-2000:]))
        r = p
    text = open(log, errors='replace').read()
    if r.returncode != 0:
        raise Failed('%r exited with %d:\n%s' % (cmd, r.returncode, text[-4000:]))
    new = usr_local(dest) - before
    if new:
        raise Failed('%r installed under /usr/local, not /usr, as the README says:\n  %s\n%s' %
                     (cmd, '\n  '.join(sorted(new)[:10]), text[-2000:]))


def start_background(cmd, marker, clone, env, log, timeout=1200):
    say('$ %s    (in the background, until it logs %r)' % (cmd, marker))
    out = open(log, 'w')
    p = subprocess.Popen(['bash', '-c', cmd], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker in open(log, errors='replace').read():
            say('... it logged %r' % marker)
            return p
        if p.poll() is not None:
            raise Failed('%r exited with %d before logging %r:\n%s' %
                         (cmd, p.returncode, marker, open(log, errors='replace').read()[-4000:]))
        time.sleep(0.5)
    raise Failed('%r did not log %r in %d s' % (cmd, marker, timeout))


def stop_background(p, cmd, log):
    os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C in its terminal does
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise Failed('%r did not stop within 20 s of SIGINT:\n%s' %
                     (cmd, open(log, errors='replace').read()[-2000:]))
    say('... SIGINT (Ctrl-C) stopped it (exit status %d)' % p.returncode)


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, '..', '..'))
    if not os.environ.get('ACCTD_README_INNER'):
        if os.geteuid() != 0:
            skip('the README test needs root (make run, the install into a booted root, mounts)')
        for tool in ('git', 'unshare', 'nsenter', 'systemd-nspawn', 'debootstrap', 'wget', 'ip', 'findmnt'):
            if not shutil.which(tool):
                skip('%s is missing (see tools/debian-packages)' % tool)
        if subprocess.run(['git', '-C', src, 'rev-parse', '--git-dir'], capture_output=True).returncode:
            skip('%s is not a git checkout: nothing to clone' % src)
        # The root file system, built once (needs the network: before unshare).
        os.makedirs(os.path.dirname(ROOT_CACHE), exist_ok=True)
        # tests/boot's protocol: exclusive while it may be (re)built, shared
        # while in use. Held shared by another test (the boot or VM test), it
        # is built and in use as it is: share it rather than wait.
        lock = os.open(ROOT_CACHE + '.lock', os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fcntl.flock(lock, fcntl.LOCK_SH)
        else:
            r = subprocess.run([os.path.join(HERE, '..', 'boot', 'mkroot.sh'), ROOT_CACHE])
            if r.returncode == 77:
                skip('the Debian archive cannot be reached to build the root file system')
            if r.returncode:
                print('FAIL: could not build the root file system')
                return 1
            fcntl.flock(lock, fcntl.LOCK_SH)  # nobody rebuilds it under us
        if not os.path.exists(os.path.join(ROOT_CACHE, '.acctd-boot-root')):
            print('FAIL: no root file system in', ROOT_CACHE)
            return 1
        os.set_inheritable(lock, True)
        env = dict(os.environ, ACCTD_README_INNER='1')
        os.execvpe('unshare', ['unshare', '--mount', '--net', '--propagation', 'private',
                               sys.executable, os.path.abspath(__file__), src], env)

    # meson test's timeout (SIGTERM) still powers off the container and cleans up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    subprocess.run(['ip', 'link', 'set', 'lo', 'up'], check=True)
    tmp = tempfile.mkdtemp(prefix='acctd-readme.', dir=os.environ.get('TMPDIR', '/var/tmp'))
    container = None
    status = 1
    try:
        # ---- the clean clone
        rev = subprocess.run(['git', '-C', src, 'stash', 'create'], capture_output=True,
                             text=True, check=True).stdout.strip() or 'HEAD'
        rev = subprocess.run(['git', '-C', src, 'rev-parse', rev], capture_output=True,
                             text=True, check=True).stdout.strip()
        clone = os.path.join(tmp, 'acctd')
        subprocess.run(['git', 'clone', '-q', '--no-checkout', src, clone], check=True)
        subprocess.run(['git', '-C', clone, 'fetch', '-q', src, rev], check=True)
        subprocess.run(['git', '-C', clone, 'checkout', '-q', '--detach', rev], check=True)
        say('clean clone of %s at %s in %s' % (src, rev[:12], clone))
        todo = blocks(os.path.join(clone, 'README.md'))

        # ---- the root to install into and boot: an overlay over the cache
        dest = os.path.join(tmp, 'root')
        for d in (dest, tmp + '/upper', tmp + '/work'):
            os.mkdir(d)
        if subprocess.run(['mount', '-t', 'overlay', 'overlay', '-o', 'lowerdir=%s,upperdir=%s/upper,workdir=%s/work'
                           % (ROOT_CACHE, tmp, tmp), dest], capture_output=True).returncode:
            say('no overlayfs here: copying the root file system')
            subprocess.run(['cp', '-a', '--reflink=auto', ROOT_CACHE + '/.', dest + '/'], check=True)
        before = usr_local(dest)
        # This host's /usr read-only: an install that ignores DESTDIR fails.
        subprocess.run(['mount', '--bind', '/usr', '/usr'], check=True)
        subprocess.run(['mount', '-o', 'remount,bind,ro', '/usr'], check=True)
        # make run's acctd keeps its socket and history in the clone
        # (build/run): the system's /run/acctd and /var/lib/acctd, which an
        # installed acctd owns, are read-only here, so that an instance that
        # reached for them would fail (and the host's are never touched).
        for d in ('/run/acctd', '/var/lib/acctd'):
            os.makedirs(d, exist_ok=True)
            subprocess.run(['mount', '-t', 'tmpfs', '-o', 'mode=0755,ro', 'tmpfs', d], check=True)
        shim = os.path.join(tmp, 'shim')
        os.mkdir(shim)
        with open(os.path.join(shim, 'sudo'), 'w') as f:
            f.write('#!/bin/sh\n# tests/readme: the test runs as root; real sudo would drop DESTDIR.\nexec "$@"\n')
        os.chmod(os.path.join(shim, 'sudo'), 0o755)
        env = {'PATH': shim + ':/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
               'HOME': os.environ.get('HOME', '/root'), 'LANG': 'C.UTF-8', 'TERM': 'dumb',
               'USER': 'root', 'DESTDIR': dest}

        # ---- the blocks, in order
        background = None
        ran = skipped = 0
        for n, (line, kind, note, cmds) in enumerate(todo):
            t = time.monotonic()
            log = os.path.join(tmp, 'block-%d.log' % line)
            if kind == 'skip':
                say('README.md:%d: NOT RUN: %s -- %s' % (line, ' ; '.join(cmds), note))
                skipped += len(cmds)
                continue
            if kind == 'booted':
                if container is None:
                    landed(dest, 'README.md:%d' % line)
                    container = Container(tmp, dest)
                    container.boot()
                for cmd in cmds:
                    sudo = cmd.startswith('sudo ')
                    say('$ %s    (in the booted system, as %s)' % (cmd, 'root' if sudo else 'nobody'))
                    r = container.run(['bash', '-c', cmd[5:] if sudo else cmd], None if sudo else '65534')
                    if r.returncode:
                        container.diagnose()
                        raise Failed('%r exited with %d in the booted system:\n%s' %
                                     (cmd, r.returncode, (r.stdout + r.stderr)[-4000:]))
                    print(r.stdout.rstrip()[-1500:])
            elif kind == 'background':
                marker = re.search(r'"([^"]+)"', note).group(1)
                background = (start_background(cmds[0], marker, clone, env, log), cmds[0], log)
                if n + 1 == len(todo):
                    raise Failed('README.md:%d: a background block with no block after it' % line)
                ran += 1
                continue
            else:
                for cmd in cmds:
                    host_cmd(cmd, clone, env, log, dest, before)
            ran += len(cmds)
            if background:
                stop_background(*background)
                background = None
            say('README.md:%d: %d command(s) passed in %.1f s' % (line, len(cmds), time.monotonic() - t))
        landed(dest, 'after the last block')
        say('PASS: %d commands ran as written, %d not run (reasons above), in %.0f s' %
            (ran, skipped, time.monotonic() - T0))
        status = 0
    except Failed as e:
        print('FAIL:', e, flush=True)
    finally:
        if 'background' in locals() and background and background[0].poll() is None:
            os.killpg(background[0].pid, signal.SIGKILL)
            background[0].wait()
        if container:
            container.stop()
        for m in ('/run/systemd/nspawn', os.path.join(tmp, 'bpffs'), os.path.join(tmp, 'root')):
            subprocess.run(['umount', '-l', m], capture_output=True)
        if os.environ.get('ACCTD_README_KEEP'):
            print('kept', tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == '__main__':
    sys.exit(main())
