#!/usr/bin/python3
"""test-pkg-config.py - a program outside acctd builds against libacct-client
with nothing but `pkg-config --cflags --libs acct-client` (issue 32).

Lays the built library, its header and the generated acct-client.pc out as
`meson install` would under a temporary prefix (the .pc file meson wrote for
installation, with its prefix redefined: --define-variable=prefix=TMP), then
compiles a program that uses the charging calls with the flags pkg-config
prints, runs it against a fake acctd (a forked child on a socketpair, speaking
the real wire format), and checks that the calls it links come from the
library's ACCT_CLIENT_1 version node (acct_client_last_error() from
ACCT_CLIENT_2). The program calls json-c itself (json_object_put() on the
error's parameters): it links only because acct-client.pc requires json-c
publicly, as acct_charge(3) says.

Then the same from the build tree, not installed (acct_charge(3), NOTES):
PKG_CONFIG_PATH=BUILD/meson-uninstalled, where meson writes
acct-client-uninstalled.pc, which pkg-config takes for acct-client; its
Cflags must name lib/client (the header) and json-c's directory, nothing of
acctd's internals (lib/basic's log.h, the build's config.h), and the program
runs with LD_LIBRARY_PATH=BUILD/lib/client.

Usage: test-pkg-config.py BUILD_DIR SOURCE_ROOT
Exit 0, 1 on a failure (printed), 77 when pkg-config or a compiler is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PROGRAM = r"""
#include <acct-client.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A fake acctd: answers each call {"parameters":{"applied":N}} for a
 * ChargeBatch of N charges, NoSuchResource for the resource "nosuch" and {}
 * otherwise; exits at EOF. */
static void serve(int fd)
{
	char buf[1 << 16];
	size_t n = 0;
	for (;;) {
		ssize_t k = read(fd, buf + n, sizeof(buf) - n);
		if (k <= 0)
			_exit(0);
		n += (size_t)k;
		char *nul;
		while ((nul = memchr(buf, 0, n))) {
			size_t len = (size_t)(nul - buf) + 1, items = 0;
			for (char *p = buf; (p = strstr(p, "\"delta\"")) && p < nul; p++)
				items++;
			char reply[128];
			int r = strstr(buf, "ChargeBatch") ? snprintf(reply, sizeof(reply), "{\"parameters\":{\"applied\":%zu}}", items)
				: strstr(buf, "\"nosuch\"") ? snprintf(reply, sizeof(reply), "{\"error\":\"io.acctd.Accounting.NoSuchResource\","
								     "\"parameters\":{\"resource\":\"nosuch\"}}")
							   : snprintf(reply, sizeof(reply), "{}");
			if (write(fd, reply, (size_t)r + 1) < 0)
				_exit(1);
			memmove(buf, buf + len, n - len);
			n -= len;
		}
	}
}

int main(void)
{
	int sv[2];
	struct acct_client *c = NULL;
	struct acct_charge batch[3] = { { "gpu_memory", 1, NULL }, { "gpu_memory", -1, "/a" }, { "slots", 7, NULL } };
	size_t applied = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		serve(sv[1]);
	}
	close(sv[1]);
	if (acct_client_new_from_fd(sv[0], &c) < 0)
		return 1;
	if (acct_client_charge(c, "gpu_memory", 4096, NULL, ACCT_CHARGE_SYNC) != 0)
		return 2;
	if (acct_client_charge_batch(c, batch, 3, &applied) != 0 || applied != 3)
		return 3;
	if (acct_client_charge(c, "", 1, NULL, 0) != -EINVAL)
		return 4;
	struct acct_charge_slot *slot = NULL;
	/* The fake acctd sends no descriptor: a reply without one is refused. */
	if (acct_client_open_slot(c, "gpu_memory", NULL, &slot) != -EBADMSG || slot)
		return 5;
	acct_charge_slot_close(NULL);
	/* acctd's error, in words: what -ENOKEY alone does not say */
	char *name = NULL, *text = NULL;
	struct json_object *params = NULL;
	if (acct_client_charge(c, "nosuch", 1, NULL, 0) != -ENOKEY ||
	    acct_client_last_error(&name, &params, &text) != 1 || strcmp(name, "io.acctd.Accounting.NoSuchResource") != 0 ||
	    strncmp(text, "No such resource: nosuch", 24) != 0 || !json_object_object_get(params, "resource"))
		return 7;
	free(name);
	free(text);
	json_object_put(params);
	acct_client_free(c);
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 6;
	puts("charged");
	return 0;
}
"""


class Skip(Exception):
    """What the test needs is missing here (pkg-config, a compiler, the build)."""


def build_program(build, source, prefix, program):
    """Lay the built library, its header and acct-client.pc out under
    `prefix` as `meson install` would, and compile `program` (C source) with
    nothing but the flags `pkg-config --cflags --libs acct-client` prints.
    Returns (executable, libdir, flags); raises Skip, or AssertionError with
    the compiler's messages. Also used by tests/integration/test_charges.py,
    which runs such a program against a real acctd (issue 32, acceptance 1)."""
    pkg_config = shutil.which("pkg-config")
    cc = os.environ.get("CC_FOR_TEST") or shutil.which("cc") or shutil.which("gcc")
    if not pkg_config or not cc:
        raise Skip("pkg-config or a C compiler not found")
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            sanitize = [o["value"] for o in json.load(f) if o["name"] == "b_sanitize"]
    except (OSError, ValueError):
        sanitize = []
    if sanitize and sanitize[0] != "none":
        raise Skip("a sanitizer build (b_sanitize=%s): a plain program cannot link its library" % sanitize[0])
    pc = os.path.join(build, "meson-private", "acct-client.pc")
    lib = os.path.join(build, "lib", "client", "libacct-client.so")
    if not os.path.exists(pc) or not os.path.exists(lib):
        raise Skip("%s or %s was not built" % (pc, lib))
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc))
    var = ["--define-variable=prefix=" + prefix]
    libdir = subprocess.run([pkg_config] + var + ["--variable=libdir", "acct-client"], env=env, check=True,
                            capture_output=True, text=True).stdout.strip()
    includedir = subprocess.run([pkg_config] + var + ["--variable=includedir", "acct-client"], env=env,
                                check=True, capture_output=True, text=True).stdout.strip()
    # As meson install lays them out: the header under includedir/acctd,
    # the library with its soname links under libdir.
    os.makedirs(os.path.join(includedir, "acctd"))
    shutil.copy(os.path.join(source, "lib", "client", "acct-client.h"), os.path.join(includedir, "acctd"))
    os.makedirs(libdir)
    real = os.path.realpath(lib)
    shutil.copy(real, libdir)
    for link in ("libacct-client.so", "libacct-client.so.0"):
        os.symlink(os.path.basename(real), os.path.join(libdir, link))
    flags = subprocess.run([pkg_config] + var + ["--cflags", "--libs", "acct-client"], env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    src = os.path.join(prefix, "charge.c")
    exe = os.path.join(prefix, "charge")
    with open(src, "w") as f:
        f.write(program)
    p = subprocess.run([cc, "-std=gnu11", "-Wall", "-Werror", src, "-o", exe] + flags, capture_output=True,
                       text=True)
    assert p.returncode == 0, "compiling with %s failed:\n%s" % (" ".join(flags), p.stderr)
    return exe, libdir, flags


def build_uninstalled(build, workdir, program):
    """Compile `program` in `workdir` with the flags `pkg-config --cflags
    --libs acct-client` prints for the build tree (PKG_CONFIG_PATH=
    BUILD/meson-uninstalled). Returns (executable, flags, errors about the
    flags); raises Skip, or AssertionError with the compiler's messages."""
    pkg_config = shutil.which("pkg-config")
    cc = os.environ.get("CC_FOR_TEST") or shutil.which("cc") or shutil.which("gcc")
    if not pkg_config or not cc:
        raise Skip("pkg-config or a C compiler not found")
    pcdir = os.path.join(os.path.abspath(build), "meson-uninstalled")
    if not os.path.exists(os.path.join(pcdir, "acct-client-uninstalled.pc")):
        raise Skip("%s/acct-client-uninstalled.pc was not generated" % pcdir)
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir)
    flags = subprocess.run([pkg_config, "--cflags", "--libs", "acct-client"], env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    json_c = subprocess.run([pkg_config, "--cflags-only-I", "json-c"], capture_output=True, text=True).stdout.split()
    errors = []
    for f in flags:
        if f.startswith("-I") and f not in json_c and not os.path.normpath(f[2:]).endswith(os.path.join("lib", "client")):
            errors.append("the build tree's Cflags show %s, which is none of the public header's" % f)
    src = os.path.join(workdir, "charge.c")
    exe = os.path.join(workdir, "charge")
    with open(src, "w") as f:
        f.write(program)
    p = subprocess.run([cc, "-std=gnu11", "-Wall", "-Werror", src, "-o", exe] + flags, capture_output=True,
                       text=True)
    assert p.returncode == 0, "compiling with %s failed:\n%s" % (" ".join(flags), p.stderr)
    return exe, flags, errors


def main(argv):
    build, source = argv[1], argv[2]
    failed = run_installed(build, source)
    if failed == 77:
        return 77
    with tempfile.TemporaryDirectory() as workdir:
        try:
            exe, flags, errors = build_uninstalled(build, workdir, PROGRAM)
        except Skip as e:
            print("SKIP (build tree): %s" % e)
            return failed
        except AssertionError as e:
            print("build tree: %s" % e)
            return 1
        libdir = os.path.join(os.path.abspath(build), "lib", "client")
        p = subprocess.run([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir), capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0 or p.stdout.strip() != "charged":
            errors.append("the program built from the build tree failed with %d: %s%s" % (p.returncode, p.stdout,
                                                                                         p.stderr))
        for e in errors:
            print(e)
        print("built from the build tree with: %s" % " ".join(flags))
        return 1 if errors or failed else 0


def run_installed(build, source):
    """The program built against an installed layout; 0, 1 or 77."""
    with tempfile.TemporaryDirectory() as prefix:
        try:
            exe, libdir, flags = build_program(build, source, prefix, PROGRAM)
        except Skip as e:
            print("SKIP: %s" % e)
            return 77
        except AssertionError as e:
            print(e)
            return 1
        p = subprocess.run([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir), capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0 or p.stdout.strip() != "charged":
            print("the program failed with %d: %s%s" % (p.returncode, p.stdout, p.stderr))
            return 1
        # Its charging calls bind to the new version node.
        out = subprocess.run(["readelf", "--dyn-syms", "-W", exe], capture_output=True, text=True).stdout
        errors = []
        for symbol in ("acct_client_charge", "acct_client_charge_batch", "acct_client_open_slot",
                       "acct_charge_slot_close"):
            if not re.search(r"\s%s@ACCT_CLIENT_1\b" % symbol, out):
                errors.append("%s is not bound to ACCT_CLIENT_1 in the program" % symbol)
        if not re.search(r"\sacct_client_new_from_fd@ACCT_CLIENT_0\b", out):
            errors.append("acct_client_new_from_fd is not bound to ACCT_CLIENT_0")
        if not re.search(r"\sacct_client_last_error@ACCT_CLIENT_2\b", out):
            errors.append("acct_client_last_error is not bound to ACCT_CLIENT_2")
        for e in errors:
            print(e)
        print("built with: %s" % " ".join(flags))
        return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
