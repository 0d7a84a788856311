#!/bin/bash
# test-boot.sh - acctd under a real systemd: install it with "meson install
# --destdir" into a Debian 12 root file system, boot that with systemd-nspawn
# and drive acctd the way an administrator does.
#
#   test-boot.sh BUILD_DIR
#   test-boot.sh --deb BUILD_DIR
#
# Steps (each prints its time):
#   0. DESTDIR install holds every file meson means to install; the units pass
#      systemd-analyze verify; systemd-analyze security's exposure level is at
#      most ACCTD_BOOT_MAX_EXPOSURE (default 2.0).
#   0. Also: acctd.socket listens from boot, acctd.service waits for a client;
#      systemctl enable acctd enables both.
#   1. systemctl start acctd: active, running as an unprivileged user without
#      capabilities, acctctl status answers and reports no unreadable file;
#      acctd --bpf-pin (ExecStartPre=+) pinned the BPF iterator, which acctd's
#      user reads in acctd's mount namespace, and Status's "collectors" shows
#      bpf (once acctd reports it); /metrics answers (when built).
#  1b. Network confinement (when /metrics is built): IPAddressDeny=any,
#      IPAddressAllow=localhost; with listen = 0.0.0.0:9847 but no
#      daemon-reload, 127.0.0.1 answers, 192.0.2.1 (on the container's lo,
#      scraped from outside acctd's cgroup) is dropped, and acctd warns; after
#      daemon-reload and a restart acctd-generator's drop-in lets it through.
#   2. systemctl reload with a good configuration applies it; with a bad one it
#      is refused and acctd keeps running with the good one; acctctl reload
#      reports the refusal as an error.
#   3. Socket activation: with the service stopped and the socket listening,
#      acctctl status starts acctd and gets its answer. Then a crash (SIGKILL)
#      is followed by a restart (Restart=on-failure).
#   4. A service started with systemd-run shows up in acctctl list under its
#      unit's cgroup.
#  4b. History (issue 14): once acctd has recorded the probe, "systemctl
#      restart acctd"; acctctl usage then still shows the probe.
#  4c. Charge slots (issue 32): a client charging through slots across
#      "systemctl restart acctd" (the descriptor store) is counted exactly,
#      and its exit after the restart releases its release_on_exit charge.
#   5. A 5 s watchdog (a drop-in) has not fired; systemctl stop acctd stops it
#      cleanly and in time; the journal holds acctd's structured log lines
#      (CODE_FILE, CODE_LINE, CODE_FUNC, PRIORITY) and no unexpected warning,
#      and the accounting record of the probe of step 4 (MESSAGE_ID, ACCTD_*).
#   6. The container again, booted with systemd-nspawn's defaults (issue 27,
#      item 8: read-only /sys, no bpffs, no CAP_BPF, bpf() filtered, the
#      host's network, /metrics off): systemctl start acctd succeeds, acctd --bpf-pin
#      says in one journal line why it pinned nothing, and acctctl status
#      shows every hierarchy on files with that reason.
# The acctctl steps are skipped, saying so, when acctctl is not built.
#
# With --deb, the Debian packages instead (debian/, docs/systemd.md):
#   d. tools/build-deb.sh builds them from the source tree (nocheck: without
#      the unit tests, which the build directory runs); the container boots
#      without acctd, and "apt install ./acctd_*.deb ./acctctl_*.deb" inside
#      it (offline: the root holds every dependency) runs the maintainer
#      scripts under the container's systemd: acctd.service and acctd.socket
#      must then be enabled and active, acctctl status answer, the man pages
#      and the conffile be installed, and the conffile check clean; "apt
#      purge acctd" then stops acctd and removes its units, conffile and
#      state. Steps 0-5 are the meson install's; the package runs the same
#      binaries and units.
#
# The root file system is built once with debootstrap and cached in
# ACCTD_BOOT_ROOT (default /var/cache/acctd-test/bookworm-root, see mkroot.sh);
# every run boots a throw-away overlay over it. The container is powered off
# and everything temporary removed on every exit, failures included
# (ACCTD_BOOT_KEEP=1 keeps the temporary directory for a post-mortem).
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, no systemd-nspawn or
# debootstrap, the Debian archive unreachable, a sanitizer build), with the
# reason printed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/cache.sh" # cached()
deb=
if [ "${1:-}" = --deb ]; then
	deb=1
	shift
fi
build=$(cd "${1:?usage: test-boot.sh [--deb] BUILD_DIR}" && pwd)
root_cache=${ACCTD_BOOT_ROOT:-/var/cache/acctd-test/bookworm-root}
max_exposure=${ACCTD_BOOT_MAX_EXPOSURE:-2.0}

skip() { echo "SKIP: $*"; exit 77; }
t0=${ACCTD_BOOT_T0:-$EPOCHREALTIME}
export ACCTD_BOOT_T0=$t0
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
say() { printf '[%5ss] %s\n' "$(since "$t0")" "$*"; }

# ---- preconditions (outside the private mount namespace) ---------------------

if [ -z "${ACCTD_BOOT_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || skip "the boot test needs root (debootstrap, mounts, systemd-nspawn)"
	for tool in systemd-nspawn debootstrap nsenter unshare wget python3; do
		command -v "$tool" >/dev/null ||
			skip "$tool is missing (apt-get install systemd-container debootstrap; see tools/debian-packages)"
	done
	sanitize=$(meson introspect --buildoptions "$build" |
		python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"))')
	[ "$sanitize" = none ] ||
		skip "sanitizer build (b_sanitize=$sanitize): the boot test runs on the plain build"
	if [ -n "$deb" ]; then
		for tool in dpkg-buildpackage dh fakeroot; do
			command -v "$tool" >/dev/null ||
				skip "$tool is missing (apt-get install debhelper dpkg-dev fakeroot; see tools/debian-packages)"
		done
	fi
	# Every mount below (overlay, nspawn's tmpfs) lives and dies with a
	# private mount namespace.
	export ACCTD_BOOT_INNER=1
	exec unshare --mount --propagation private "$0" ${deb:+--deb} "$@"
fi

# ---- the cached root file system --------------------------------------------

mkdir -p "$(dirname "$root_cache")"
rc=0
cached 9 "$root_cache.lock" "$here/mkroot.sh" "$root_cache" || rc=$? # cache.sh
[ $rc -eq 77 ] && skip "the Debian archive cannot be reached to build the root file system"
[ $rc -eq 0 ] || { echo "FAIL: could not build the root file system"; exit 1; }
say "root file system: $root_cache"

# ---- a throw-away copy, with acctd installed ----------------------------------

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/acctd-boot.XXXXXX")
merged=$tmp/root
nspawn_pid=
leader=
cgroups=()
status=1

in_ct() { # run a command in the container, with a clean environment
	nsenter -t "$leader" -m -u -i -n -p -- env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 SYSTEMD_PAGER= \
		SYSTEMD_COLORS=0 "$@"
}

diagnose() {
	[ -n "$leader" ] || return 0
	echo "---- systemctl status acctd.service acctd.socket"
	in_ct systemctl status --no-pager -n 0 acctd.service acctd.socket 2>&1 || true
	echo "---- journalctl -u acctd (last 40)"
	in_ct journalctl --no-pager -u acctd -n 40 2>&1 || true
	echo "---- console (last 20 lines)"
	tail -n 20 "$tmp/console.log" 2>/dev/null || true
}

stop_container() { # power the container off (10 s), else kill it
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		[ -z "$leader" ] || in_ct systemctl poweroff --no-block >/dev/null 2>&1 || true
		for _ in $(seq 100); do
			kill -0 "$nspawn_pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$nspawn_pid" 2>/dev/null; then
			echo "the container did not power off in 10 s; killing it"
			kill -TERM "$nspawn_pid" 2>/dev/null || true
			sleep 2
			kill -KILL "$nspawn_pid" 2>/dev/null || true
		fi
		wait "$nspawn_pid" 2>/dev/null || true
	fi
	nspawn_pid=
	leader=
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ $status -eq 0 ] || [ -z "$leader" ] || diagnose
	stop_container
	remove_cgroups
	umount -l "$merged" 2>/dev/null || true
	umount -l /run/systemd/nspawn 2>/dev/null || true
	umount -l "$tmp/bpffs" 2>/dev/null || true
	if [ -n "${ACCTD_BOOT_KEEP:-}" ]; then
		echo "kept $tmp"
	else
		rm -rf "$tmp"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$merged" "$tmp/upper" "$tmp/work"
if ! mount -t overlay overlay -o "lowerdir=$root_cache,upperdir=$tmp/upper,workdir=$tmp/work" "$merged" 2>/dev/null; then
	say "no overlayfs here: copying the root file system"
	cp -a --reflink=auto "$root_cache/." "$merged/"
fi

# ---- d. the Debian packages ----------------------------------------------------

if [ -n "$deb" ]; then
	# Built from the source tree, without the unit tests (the build
	# directory's suite runs those), before the container starts.
	DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" "$here/../../tools/build-deb.sh" "$tmp/debs" \
		>"$tmp/build-deb.log" 2>&1 || { tail -n 40 "$tmp/build-deb.log"; echo "FAIL: tools/build-deb.sh"; exit 1; }
	mkdir -p "$merged/var/cache/acctd-debs"
	cp "$tmp/debs/"*.deb "$merged/var/cache/acctd-debs/"
	say "step d: built $(cd "$tmp/debs" && echo *.deb)"
fi

if [ -z "$deb" ]; then
# The DESTDIR install, checked against meson's own list of what it installs.
meson install -C "$build" --destdir "$merged" --quiet
meson introspect --installed "$build" | python3 -c '
import json, sys
print("\n".join(sorted(json.load(sys.stdin).values())))' >"$tmp/installed"
python3 -c '
import os, sys
dest = sys.argv[1]
files = [l.rstrip("\n") for l in sys.stdin if l.strip()]
missing = [f for f in files if not os.path.lexists(dest + f)]
for f in missing:
    print("not installed under DESTDIR:", f)
print("DESTDIR install: %d files" % len(files))
sys.exit(1 if missing or not files else 0)' "$merged" <"$tmp/installed"
for want in '/sbin/acctd$' '/acctd\.service$' '/acctd\.socket$' '/examples/acctd\.conf$' \
	'/io\.acctd\.Accounting\.varlink$'; do
	grep -q "$want" "$tmp/installed" || { echo "FAIL: meson installs nothing matching $want"; exit 1; }
done
# A shared client library (if any) must be found by the dynamic linker.
ldconfig -r "$merged" 2>/dev/null || true
say "acctd installed into the root file system"

acctctl=
if [ -x "$build/daemon/acctctl/acctctl" ]; then
	acctctl=$(grep '/bin/acctctl$' "$tmp/installed" || true)
	[ -n "$acctctl" ] || { echo "FAIL: acctctl is built but not installed"; exit 1; }
else
	echo "NOTE: acctctl is not built; the steps that call it are skipped"
fi

# A short watchdog period, so that a daemon that stops sending WATCHDOG=1 is
# caught within the test (the shipped unit says 30 s; checked in step 5).
mkdir -p "$merged/etc/systemd/system/acctd.service.d"
printf '[Service]\nWatchdogSec=5s\n' >"$merged/etc/systemd/system/acctd.service.d/50-boot-test.conf"
# The socket listens from boot on, as on a host where it is enabled; the
# service is enabled in the container, in step 0.
systemctl --root="$merged" --quiet enable acctd.socket
fi # meson install

# ---- boot ---------------------------------------------------------------------

# Without systemd as PID 1 nothing gives the container a cgroup of its own:
# nspawn would run in ours and leave its payload/ and supervisor/ cgroups
# behind in it. So the container gets a fresh cgroup below ours in the
# hierarchies systemd uses (cgroup2, and name=systemd on hybrid hosts), which
# is removed afterwards. (Under systemd, --keep-unit keeps it in our unit.)
make_cgroups() {
	local mnt path
	[ "$(cat /proc/1/comm)" != systemd ] || return 0
	while IFS=: read -r _ ctl path; do
		case "$ctl" in
		'') mnt=$(findmnt -n -o TARGET -t cgroup2 | head -n 1) ;;
		name=systemd) mnt=$(findmnt -n -o TARGET,OPTIONS -t cgroup | awk '$2 ~ /name=systemd/ { print $1; exit }') ;;
		*) continue ;;
		esac
		[ -n "$mnt" ] && [ -d "$mnt$path" ] || continue
		mkdir "${mnt%/}$path/${tmp##*/}"
		cgroups+=("${mnt%/}$path/${tmp##*/}")
	done </proc/self/cgroup
}
remove_cgroups() { # after the container: its cgroups, innermost first
	local cg d
	for cg in "${cgroups[@]}"; do
		[ -d "$cg" ] || continue
		# Anything still in there after a failed poweroff is the container's.
		[ ! -e "$cg/cgroup.kill" ] || echo 1 >"$cg/cgroup.kill" 2>/dev/null || true
		for _ in $(seq 50); do
			find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
			[ -d "$cg" ] || break
			sleep 0.1
		done
		[ ! -d "$cg" ] || echo "could not remove the container's cgroup $cg"
	done
}
make_cgroups

mkdir -p /run/systemd/nspawn
mount -t tmpfs tmpfs /run/systemd/nspawn
mkdir "$tmp/bpffs"
mount -t bpf -o mode=0700 bpf "$tmp/bpffs"

# boot NSPAWN_OPTION...: boot the container, with the options beyond the
# common ones, and wait until its systemd is up (running, or degraded by
# nothing of acctd's); sets nspawn_pid and leader.
boot() {
	(
		for cg in "${cgroups[@]}"; do echo "$BASHPID" >"$cg/cgroup.procs"; done
		exec systemd-nspawn -D "$merged" --register=no --keep-unit -q -b --console=pipe "$@"
	) </dev/null >"$tmp/console.log" 2>&1 &
	nspawn_pid=$!
	children() { # the processes whose parent is $1
		local d line f
		for d in /proc/[0-9]*; do
			line=$(cat "$d/stat" 2>/dev/null) || continue
			# After "PID (COMM) ": the state, then the parent's PID.
			read -r -a f <<<"${line##*) }"
			[ "${f[1]}" != "$1" ] || echo "${d#/proc/}"
		done
	}
	# nspawn's first child only prepares the container; the container's
	# init is the child that has become systemd.
	for _ in $(seq 100); do
		leader=
		for c in $(children "$nspawn_pid"); do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && leader=$c
		done
		[ -n "$leader" ] && break
		kill -0 "$nspawn_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$leader" ]; then
		cat "$tmp/console.log"
		echo "FAIL: systemd-nspawn started no container"
		exit 1
	fi
	# systemctl cannot connect until systemd has set up its private socket:
	# until then it says "offline" (or nothing), and is asked again.
	deadline=$((${EPOCHREALTIME%.*} + 120))
	while :; do
		state=$(in_ct timeout 60 systemctl is-system-running --wait 2>/dev/null || true)
		case "$state" in running | degraded) break ;; esac
		[ "${EPOCHREALTIME%.*}" -lt $deadline ] && kill -0 "$nspawn_pid" 2>/dev/null || break
		sleep 0.2
	done
	case "$state" in
	running) ;;
	degraded)
		# A container lacks hardware and kernel facilities some units
		# expect; that does not concern acctd, as long as acctd's units are
		# not the cause.
		echo "NOTE: the container booted degraded; failed units:"
		in_ct systemctl --failed --no-legend --plain
		if in_ct systemctl --failed --no-legend --plain | grep -q acctd; then
			echo "FAIL: an acctd unit failed at boot"
			exit 1
		fi
		;;
	*)
		echo "FAIL: the container did not boot (state '$state')"
		exit 1
		;;
	esac
	say "booted: systemd is $state (container init $leader)"
}

# bpf() is refused in a container by default; acctd --bpf-pin
# (ExecStartPre=+) needs it, with CAP_BPF and CAP_PERFMON, to load and pin
# the iterator the daemon reads (step 1). The container's /sys has no bpffs:
# it gets one of its own, mode 0700 as systemd mounts it on a host, which
# acctd --bpf-pin must make searchable for the daemon. (Step 6 boots with
# nspawn's defaults instead.) A network namespace of its own (loopback only):
# acctd's /metrics port in the container cannot collide with anything on the
# host.
boot --private-network --capability=CAP_BPF,CAP_PERFMON,CAP_SYS_ADMIN --system-call-filter=bpf --bind="$tmp/bpffs:/sys/fs/bpf"

fail() { echo "FAIL: $*"; exit 1; }
check() { # check DESCRIPTION COMMAND...: the command must succeed in the container
	local what=$1
	shift
	in_ct "$@" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "$what"; }
}
jsonq() { python3 "$here/jsonq.py" "$@"; }
acctd_status() { in_ct "$acctctl" --json=short status; }
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...: poll until the host command succeeds
	local secs=$1 what=$2
	shift 2
	for _ in $(seq $((secs * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	fail "$what (waited ${secs} s)"
}
main_pid() { in_ct systemctl show -P MainPID acctd.service; }

# ---- d. the Debian packages, installed with apt --------------------------------

if [ -n "$deb" ]; then
	in_ct systemctl is-active --quiet acctd.socket && fail "acctd.socket is active before the package is installed"
	# apt resolves the dependencies from the root's package lists; all are
	# installed already, so nothing is fetched (the container has no network).
	in_ct sh -c 'cd /var/cache/acctd-debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ./acctd_*.deb ./acctctl_*.deb' \
		>"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log"; fail "apt install ./acctd_*.deb ./acctctl_*.deb"; }
	say "step d: apt installed $(in_ct dpkg-query -W -f='${Package} ${Version}; ' acctd acctctl)"
	for unit in acctd.service acctd.socket; do
		[ "$(in_ct systemctl is-enabled "$unit")" = enabled ] || fail "$unit is not enabled by the package's postinst"
		in_ct systemctl is-active --quiet "$unit" || fail "$unit is not active after the package's postinst"
	done
	in_ct acctctl --json=short status >"$tmp/status.json" || fail "acctctl status (package)"
	live=$(jsonq get cgroups_live <"$tmp/status.json")
	[ "$live" -gt 0 ] 2>/dev/null || fail "acctctl status reports no cgroups: $(cat "$tmp/status.json")"
	uid=$(in_ct awk '/^Uid:/ { print $3 }' "/proc/$(main_pid)/status")
	[ "$uid" != 0 ] || fail "acctd from the package runs as root"
	for f in /usr/share/man/man8/acctd.8.gz /usr/share/man/man5/acctd.conf.5.gz \
		/usr/share/man/man7/io.acctd.Accounting.7.gz /usr/share/man/man1/acctctl.1.gz \
		/usr/share/varlink/io.acctd.Accounting.varlink /lib/systemd/system-generators/acctd-generator \
		/usr/share/bash-completion/completions/acctctl; do
		in_ct test -f "$f" || fail "the packages do not install $f"
	done
	# Every page and file the units' Documentation= names is there
	# (dh_compress must leave systemd.md alone).
	for doc in $(in_ct systemctl show -P Documentation acctd.service acctd.socket | tr ' ' '\n' | tr -d '"'); do
		case "$doc" in
		man:*)
			page=${doc#man:} sec=${doc##*(}
			sec=${sec%)}
			f=/usr/share/man/man$sec/${page%(*}.$sec.gz
			;;
		file://*) f=${doc#file://} ;;
		*) continue ;;
		esac
		in_ct test -f "$f" || fail "Documentation=$doc: no $f in the package"
	done
	# The shipped configuration is a conffile, and acctd takes it without a
	# warning (every key commented out: the built-in defaults).
	in_ct grep -qx /etc/acctd/acctd.conf /var/lib/dpkg/info/acctd.conffiles ||
		fail "/etc/acctd/acctd.conf is not a conffile of acctd"
	check "acctd --check-config with the packaged /etc/acctd/acctd.conf" /usr/sbin/acctd --check-config
	grep -qi warn "$tmp/out" && { cat "$tmp/out"; fail "acctd --check-config warns about the packaged acctd.conf"; }
	say "step d: acctd.service and acctd.socket enabled and active (uid $uid); acctctl status: $live cgroups; man pages and Documentation= installed"
	# Purge: prerm stops acctd, postrm removes the units' links, the
	# conffile and the state directory.
	in_ct env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q acctd >"$tmp/apt.log" 2>&1 ||
		{ cat "$tmp/apt.log"; fail "apt purge acctd"; }
	in_ct systemctl is-active --quiet acctd.service && fail "acctd.service is still active after apt purge acctd"
	in_ct systemctl is-active --quiet acctd.socket && fail "acctd.socket is still active after apt purge acctd"
	for f in /etc/acctd/acctd.conf /var/lib/acctd /var/lib/private/acctd /usr/sbin/acctd \
		/etc/systemd/system/multi-user.target.wants/acctd.service /etc/systemd/system/sockets.target.wants/acctd.socket; do
		in_ct test ! -e "$f" -a ! -L "$f" || fail "$f is still there after apt purge acctd"
	done
	say "step d: apt purge acctd stopped it and removed its files"
	status=0
	say "PASS"
	exit 0
fi

# ---- 0. the installed units --------------------------------------------------

check "acctd.socket listens from boot on" systemctl is-active --quiet acctd.socket
in_ct systemctl is-active --quiet acctd.service && fail "acctd.service started before anyone asked for it"
check "systemctl enable acctd" systemctl enable acctd
for unit in acctd.service acctd.socket; do
	[ "$(in_ct systemctl is-enabled "$unit")" = enabled ] || fail "$unit is not enabled by systemctl enable acctd"
done
# The container has no man(1) to look up Documentation=man:... pages with:
# verify without, and look for the pages among the installed files instead.
check "systemd-analyze verify acctd.service acctd.socket" systemd-analyze verify --man=no acctd.service acctd.socket
[ ! -s "$tmp/out" ] || { cat "$tmp/out"; fail "systemd-analyze verify is not clean"; }
for page in $(in_ct systemctl show -P Documentation acctd.service acctd.socket | tr ' ' '\n' | tr -d '"' | sed -n 's/^man:\(.*\)(\(.*\))$/\1.\2/p'); do
	grep -q "/man${page##*.}/$page\(\.gz\)\?$" "$tmp/installed" || fail "Documentation= names man page $page, which is not installed"
done
in_ct systemd-analyze security --no-pager acctd.service >"$tmp/security" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for acctd.service: \([0-9.]*\) \([A-Z]*\).*/\1 \2/p' "$tmp/security")
[ -n "$exposure" ] || { cat "$tmp/security"; fail "no exposure level from systemd-analyze security"; }
python3 -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))' "${exposure% *}" "$max_exposure" ||
	{ grep '✗' "$tmp/security"; fail "exposure level $exposure is above $max_exposure"; }
say "step 0: units verify clean; exposure level $exposure"

# ---- 1. start -------------------------------------------------------------------

check "systemctl start acctd" systemctl start acctd
check "acctd.service is active" systemctl is-active --quiet acctd.service
pid=$(main_pid)
uid=$(in_ct awk '/^Uid:/ { print $3 }' "/proc/$pid/status")
[ "$uid" != 0 ] || fail "acctd runs as root"
caps=$(in_ct awk '/^CapEff:/ { print $2 }' "/proc/$pid/status")
[ "$caps" = 0000000000000000 ] || fail "acctd has capabilities: $caps"
# The unit's resource limits (docs/systemd.md, "Resource limits").
for limit in MemoryHigh=402653184 MemoryMax=536870912 TasksMax=128; do
	got=$(in_ct systemctl show -P "${limit%%=*}" acctd.service)
	[ "$got" = "${limit#*=}" ] || fail "acctd.service has ${limit%%=*}=$got, not ${limit#*=}"
done
if [ -n "$acctctl" ]; then
	acctd_status >"$tmp/status.json" || fail "acctctl status"
	live=$(jsonq get cgroups_live <"$tmp/status.json")
	[ "$live" -gt 0 ] 2>/dev/null || fail "acctctl status reports no cgroups: $(cat "$tmp/status.json")"
	# Unprivileged and sandboxed, acctd must still read every file it samples.
	unreadable=$(jsonq sum unreadable <"$tmp/status.json")
	[ "$(jsonq sum files_read <"$tmp/status.json")" -gt 0 ] || fail "acctd read no files: $(cat "$tmp/status.json")"
	[ "$unreadable" = 0 ] || fail "acctd could not read $unreadable files: $(cat "$tmp/status.json")"
	say "step 1: acctd active as uid $uid without capabilities; acctctl status: $live cgroups"
else
	say "step 1: acctd active as uid $uid without capabilities (acctctl status skipped: not built)"
fi

# The BPF collector's privilege split: acctd --bpf-pin (ExecStartPre=+, as
# root) pinned the iterator, 0644, and made the container's 0700 bpffs
# searchable; the daemon's user, without capabilities and in the daemon's
# own mount namespace, reads whole records from it.
in_ct journalctl -u acctd -o cat --no-pager >"$tmp/journal.txt"
grep -q '^memory: pinned at /sys/fs/bpf/acctd/memory$' "$tmp/journal.txt" ||
	{ cat "$tmp/journal.txt"; fail "acctd --bpf-pin did not pin the memory hierarchy's iterator"; }
mode=$(in_ct stat -c %a /sys/fs/bpf/acctd/memory) || fail "no pin at /sys/fs/bpf/acctd/memory"
[ "$mode" = 644 ] || fail "the pin's mode is $mode, not 644"
mode=$(in_ct stat -c %a /sys/fs/bpf)
# others may search, not list (the sticky bit of some bpffs mounts aside)
[ $((0$mode & 07)) = 1 ] || fail "/sys/fs/bpf (mounted 0700) is $mode: others cannot search it, or can list it"
gid=$(in_ct awk '/^Gid:/ { print $3 }' "/proc/$pid/status")
# One read(): a cgroup iterator returns at most 8 pages per read() and does
# not resume a walk in the next one.
in_ct nsenter -t "$pid" -m -S "$uid" -G "$gid" -- dd if=/sys/fs/bpf/acctd/memory bs=1M count=1 status=none \
	>"$tmp/pin.bin" || fail "acctd's user cannot read its pin in acctd's mount namespace"
records=$(python3 "$here/../bpf_record.py" "$tmp/pin.bin") && [ "$records" -gt 0 ] ||
	fail "acctd's user did not read whole records from its pin: $records"
if [ -n "$acctctl" ]; then
	# The Status reply's "collectors" (one entry per hierarchy): at least one
	# hierarchy served by BPF through its pin. Until acctd reports them,
	# the pins and the read above are the evidence.
	python3 -c '
import json, sys
def find(o):  # "collectors" wherever the reply puts it
    if isinstance(o, dict):
        return o["collectors"] if "collectors" in o else next((f for f in map(find, o.values()) if f is not None), None)
    return None
c = find(json.load(open(sys.argv[1])))
if c is None:
    print("NOTE: acctctl status has no \"collectors\" yet; checked the pins instead")
    sys.exit(0)
bpf = [e["hierarchy"] for e in c if e.get("collector") == "bpf" and e.get("reason", "").startswith("pinned at")]
if not bpf:
    print("FAIL: no hierarchy served by BPF through a pin:", json.dumps(c))
    sys.exit(1)
print("collectors: bpf for", ", ".join(bpf))' "$tmp/status.json" || fail "the BPF collector is not active"
fi
say "step 1: --bpf-pin pinned the iterator; acctd's user reads $records records from its pin"

# /metrics, when acctd is built with it: served through the sandbox's
# RestrictAddressFamilies= (fetched by the host's python3 in the container's
# network namespace; 9847 is the default port, lib/config/config.h).
if grep -q 'metrics-http\.c' "$build/compile_commands.json" 2>/dev/null; then
	nsenter -t "$leader" -n python3 -c '
import urllib.request
page = urllib.request.urlopen("http://127.0.0.1:9847/metrics", timeout=10).read().decode()
assert "acctd_" in page, page[:500]' || fail "GET /metrics"
	say "step 1: /metrics answers"
	network_confinement=1
fi

# ---- 1b. network confinement ------------------------------------------------------

# GET /metrics at ADDR:9847 from outside acctd's cgroup (the host's python3 in
# the container's network namespace). Exit 0: answered; 2: no answer within
# 3 s (what the unit's BPF firewall does to a peer's SYN: drops it); 1: any
# other failure (refused: nothing listens there).
scrape() {
	nsenter -t "$leader" -n python3 -c '
import socket, sys, urllib.error, urllib.request
try:
    page = urllib.request.urlopen("http://%s:9847/metrics" % sys.argv[1], timeout=3).read().decode()
except (socket.timeout, TimeoutError):
    sys.exit(2)
except urllib.error.URLError as e:
    sys.exit(2 if isinstance(e.reason, (socket.timeout, TimeoutError)) else 1)
sys.exit(0 if "acctd_" in page else 1)' "$1"
}
dropin=/run/systemd/generator/acctd.service.d/50-metrics-listen.conf
ipset() { # ipset PROPERTY: acctd.service's IPAddressAllow= or IPAddressDeny=, sorted, one line
	in_ct systemctl show -P "$1" acctd.service | tr ' ' '\n' | LC_ALL=C sort | paste -s -d ' '
}
if [ -n "${network_confinement:-}" ]; then
	# The unit confines IP traffic to localhost (docs/systemd.md, "Network
	# confinement").
	deny=$(ipset IPAddressDeny)
	allow=$(ipset IPAddressAllow)
	[ "$deny" = "0.0.0.0/0 ::/0" ] || fail "acctd.service has IPAddressDeny=$deny, not any"
	[ "$allow" = "127.0.0.0/8 ::1/128" ] || fail "acctd.service has IPAddressAllow=$allow, not localhost"
	in_ct test ! -e "$dropin" || fail "acctd-generator wrote $dropin for the default configuration"
	# A non-loopback address of the container's own (TEST-NET-1, on lo: no
	# module needed), so that a peer's packets are not from 127.0.0.0/8.
	nsenter -t "$leader" -n ip addr add 192.0.2.1/32 dev lo || fail "cannot add 192.0.2.1 to the container's lo"
	# acctd listening on every address, but started without a daemon-reload:
	# the generator has not seen the file, the unit still lets only
	# localhost through, and acctd says so.
	in_ct mkdir -p /etc/acctd
	printf '[metrics]\nlisten = 0.0.0.0:9847\n' | in_ct tee /etc/acctd/acctd.conf >/dev/null
	check "systemctl restart acctd (listen = 0.0.0.0:9847)" systemctl restart acctd
	in_ct test ! -e "$dropin" || fail "$dropin exists before any daemon-reload"
	scrape 127.0.0.1 || fail "GET http://127.0.0.1:9847/metrics with listen = 0.0.0.0:9847 (exit $?)"
	rc=0
	scrape 192.0.2.1 || rc=$?
	[ $rc = 2 ] || fail "GET http://192.0.2.1:9847/metrics was not dropped by IPAddressDeny=any (exit $rc; 0: answered, 1: refused)"
	warned() { # the journal has N (default: 1 or more) of acctd's warnings that its unit drops peers
		local n
		n=$(in_ct journalctl -u acctd -o cat --no-pager | grep -c '^\[metrics\] listen = 0.0.0.0:9847 is not a loopback address, but acctd.service lets IP traffic through to localhost only' || true)
		if [ -n "${1:-}" ]; then [ "$n" = "$1" ]; else [ "$n" -gt 0 ]; fi
	}
	wait_for 10 "acctd did not warn that its unit drops /metrics' peers" warned
	say "step 1b: IPAddressDeny=any, IPAddressAllow=localhost: 127.0.0.1 answered, 192.0.2.1 dropped; acctd warned"
	# daemon-reload runs the generator; the restart applies its drop-in.
	check "systemctl daemon-reload" systemctl daemon-reload
	in_ct cat "$dropin" >"$tmp/dropin" 2>&1 || { cat "$tmp/dropin"; fail "acctd-generator wrote no $dropin"; }
	grep -qx 'IPAddressAllow=any' "$tmp/dropin" && grep -qx 'Environment=ACCTD_IP_ALLOW=any' "$tmp/dropin" ||
		{ cat "$tmp/dropin"; fail "$dropin does not widen IPAddressAllow="; }
	check "systemctl restart acctd (after daemon-reload)" systemctl restart acctd
	allow=$(ipset IPAddressAllow)
	case " $allow " in *" 0.0.0.0/0 "*) ;; *) fail "IPAddressAllow=$allow after the drop-in: no 0.0.0.0/0" ;; esac
	scrape 192.0.2.1 || fail "GET http://192.0.2.1:9847/metrics after daemon-reload and restart (exit $?)"
	scrape 127.0.0.1 || fail "GET http://127.0.0.1:9847/metrics after daemon-reload and restart (exit $?)"
	# Only the first start warned (journald has had the scrapes' time to
	# take in the restarted acctd's lines).
	warned 1 || fail "acctd warned again, though its unit now lets peers through"
	say "step 1b: after daemon-reload: $dropin (IPAddressAllow=$allow); 192.0.2.1 answered"
	# Back to the defaults: the drop-in goes at the next daemon-reload.
	in_ct rm -f /etc/acctd/acctd.conf
	check "systemctl daemon-reload (defaults)" systemctl daemon-reload
	in_ct test ! -e "$dropin" || fail "$dropin is still there with the default configuration"
	check "systemctl restart acctd (defaults)" systemctl restart acctd
	[ "$(ipset IPAddressAllow)" = "127.0.0.0/8 ::1/128" ] ||
		fail "IPAddressAllow= is not back to localhost"
fi

# ---- 2. reload ------------------------------------------------------------------

reloads_done() { # reloads_done N: acctd has finished N reloads
	[ "$(in_ct journalctl -u acctd -o cat --no-pager | grep -c -e '^Configuration reloaded' \
		-e '^Reload failed')" -ge "$1" ]
}
# systemd 252 ends "systemctl reload" when /bin/kill returns, before acctd is
# done (Type=notify-reload, which waits, came with systemd 253): wait for it.
in_ct mkdir -p /etc/acctd
printf '[sampling]\nfast_interval = 2s\n[log]\nlevel = info\nremovals = each\n' | in_ct tee /etc/acctd/acctd.conf >/dev/null
check "systemctl reload acctd (good configuration)" systemctl reload acctd
wait_for 20 "acctd did not finish reloading the good configuration" reloads_done 1
in_ct journalctl -u acctd -o cat --no-pager | grep -q '^Configuration reloaded' ||
	fail "the good configuration was not applied"
if [ -n "$acctctl" ]; then
	acctd_status >"$tmp/status.json" || fail "acctctl status after the good reload"
	[ "$(jsonq get fast_interval_us <"$tmp/status.json")" = 2000000 ] ||
		fail "fast_interval is not 2s after the reload: $(cat "$tmp/status.json")"
	[ "$(jsonq get reload_result <"$tmp/status.json")" = ok ] ||
		fail "reload_result is not ok: $(cat "$tmp/status.json")"
fi
pid=$(main_pid)
printf '[sampling]\nfast_interval = banana\n' | in_ct tee /etc/acctd/acctd.conf >/dev/null
check "systemctl reload acctd (bad configuration)" systemctl reload acctd
wait_for 20 "acctd did not finish reloading the bad configuration" reloads_done 2
in_ct journalctl -u acctd -o cat --no-pager | grep -q '^Reload failed, keeping the previous configuration' ||
	fail "the bad configuration was not refused"
check "acctd.service is active after the bad reload" systemctl is-active --quiet acctd.service
[ "$(main_pid)" = "$pid" ] || fail "acctd restarted instead of keeping its configuration"
if [ -n "$acctctl" ]; then
	acctd_status >"$tmp/status.json" || fail "acctctl status after the bad reload"
	[ "$(jsonq get fast_interval_us <"$tmp/status.json")" = 2000000 ] ||
		fail "the bad reload changed the configuration: $(cat "$tmp/status.json")"
	result=$(jsonq get reload_result <"$tmp/status.json")
	case "$result" in *fast_interval*) ;; *) fail "reload_result does not name the bad key: $result" ;; esac
fi
if [ -n "$acctctl" ]; then
	# The same through the API, which tells root (an administrator) by its
	# credentials on the socket and answers once the reload is done.
	in_ct "$acctctl" reload >"$tmp/out" 2>&1 && fail "acctctl reload accepted the bad configuration"
	grep -q fast_interval "$tmp/out" || fail "acctctl reload does not say what is wrong: $(cat "$tmp/out")"
	in_ct rm -f /etc/acctd/acctd.conf
	check "acctctl reload (back to the defaults)" "$acctctl" reload
	acctd_status >"$tmp/status.json" || fail "acctctl status after acctctl reload"
	[ "$(jsonq get fast_interval_us <"$tmp/status.json")" = 1000000 ] ||
		fail "acctctl reload did not apply the defaults: $(cat "$tmp/status.json")"
fi
in_ct rm -f /etc/acctd/acctd.conf
say "step 2: good configuration applied, bad one refused (acctd kept pid $pid)"

# ---- 3. socket activation, restart on failure -------------------------------

in_ct systemctl stop acctd.service 2>/dev/null || fail "systemctl stop acctd.service"
check "acctd.socket stays active" systemctl is-active --quiet acctd.socket
in_ct systemctl is-active --quiet acctd.service && fail "acctd.service is still active"
if [ -n "$acctctl" ]; then
	acctd_status >"$tmp/status.json" || fail "acctctl status through the socket of a stopped acctd"
	# acctd answers from its first moment; "active" follows READY=1.
	wait_for 20 "acctd.service did not become active after its socket started it" \
		in_ct systemctl is-active --quiet acctd.service
	say "step 3: acctctl status started acctd through acctd.socket"
else
	say "step 3: socket activation skipped (no acctctl)"
fi
check "systemctl start acctd.service" systemctl start acctd.service
pid=$(main_pid)
check "kill -KILL acctd" kill -KILL "$pid"
restarted() { p=$(main_pid) && [ "$p" != 0 ] && [ "$p" != "$pid" ] && in_ct systemctl is-active --quiet acctd.service; }
wait_for 20 "acctd was not restarted after SIGKILL" restarted
say "step 3: killed acctd (pid $pid) was restarted (pid $(main_pid))"

# ---- 4. a new service shows up --------------------------------------------------

check "systemd-run a probe service" systemd-run --unit=acctd-boot-probe.service --property=Type=exec sleep 600
if [ -n "$acctctl" ]; then
	listed() {
		in_ct "$acctctl" --json=short list >"$tmp/list.json" &&
			jsonq has-suffix /system.slice/acctd-boot-probe.service <"$tmp/list.json"
	}
	wait_for 20 "acctctl list does not show /system.slice/acctd-boot-probe.service" listed
	# The path as acctd sees it, printed: where the container's cgroup tree is
	# mounted as a subtree of the host's, there is a prefix.
	say "step 4: acctctl list shows $(jsonq has-suffix /system.slice/acctd-boot-probe.service <"$tmp/list.json")"
else
	say "step 4: skipped (no acctctl)"
fi

want_restarts=1 why_restarts="the SIGKILL"

# ---- 4b. history survives a restart (issue 14) ----------------------------------

# acctd records into its state directory (StateDirectory=acctd); after
# "systemctl restart acctd" the new acctd answers Usage from the same store,
# the probe's time before the restart included.
if [ -n "$acctctl" ] && in_ct "$acctctl" usage --help >/dev/null 2>&1; then
	asked=$(date +%s%6N)
	recorded_after() {
		acctd_status >"$tmp/status.json" &&
			last=$(jsonq get last_recording_us <"$tmp/status.json") && [ "$last" != null ] && [ "$last" -gt "$asked" ]
	}
	wait_for 60 "acctd recorded no history (Status: $(cat "$tmp/status.json" 2>/dev/null))" recorded_after
	check "systemctl restart acctd" systemctl restart acctd
	# A restart by hand starts NRestarts (step 5) from 0 again.
	want_restarts=0 why_restarts="none since step 4b's systemctl restart"
	in_ct "$acctctl" --json=short usage --since=-10min >"$tmp/usage.json" 2>"$tmp/out" ||
		{ cat "$tmp/out"; fail "acctctl usage after systemctl restart acctd"; }
	jsonq has-suffix /system.slice/acctd-boot-probe.service <"$tmp/usage.json" >/dev/null ||
		{ cat "$tmp/usage.json"; fail "acctctl usage after the restart does not show the probe recorded before it"; }
	say "step 4b: after systemctl restart acctd, acctctl usage shows the probe recorded before the restart"
else
	say "step 4b: skipped (no acctctl, or an acctctl without usage)"
fi
check "systemctl stop acctd-boot-probe.service" systemctl stop acctd-boot-probe.service
# Its accounting record (checked in step 5) is written when acctd hears the
# cgroup removed; step 4c restarts acctd, and a removal that comes while no
# acctd runs has no record (session 30: seen once beside mutation runs). So
# the restart waits for the record.
probe_recorded() {
	in_ct journalctl -u acctd -o json --no-pager MESSAGE_ID=d85349364a43483586dd4e8dd439700e |
		grep -q 'acctd-boot-probe.service'
}
wait_for 30 "no accounting record of acctd-boot-probe.service after its stop" probe_recorded

# ---- 4c. charge slots survive a restart (issue 32) -------------------------------

# With resources declared, a client (tests/charge-slot-client.c, on the
# installed libacct-client) charges a cgroup through a gpu slot and a
# release_on_exit inflight slot; "systemctl restart acctd": the new acctd
# takes the slots up from the descriptor store (FileDescriptorStoreMax=), the
# values are exact (nothing lost, nothing counted twice), the client's
# charges into its old slots go on being counted, and its exit after the
# restart releases inflight (its pidfd) and empties the store.
slot_client=$build/tests/charge-slot-client
if [ -n "$acctctl" ] && [ -x "$slot_client" ]; then
	mkdir -p "$merged/usr/local/libexec/acctd-test"
	cp "$slot_client" "$merged/usr/local/libexec/acctd-test/"
	printf '[resource.gpu]\nunit = bytes\nbudget = 64K\n[resource.inflight]\nunit = count\nbudget = 16\nrelease_on_exit = yes\n' |
		in_ct tee /etc/acctd/acctd.conf >/dev/null
	check "systemctl restart acctd (resources declared)" systemctl restart acctd
	in_ct "$acctctl" --json=short list >"$tmp/list.json" || fail "acctctl list (step 4c)"
	cg=$(jsonq has-suffix /system.slice <"$tmp/list.json") || fail "acctctl list shows no /system.slice"
	coproc SLOTC { in_ct /usr/local/libexec/acctd-test/charge-slot-client unix:/run/acctd/io.acctd 2>&1; }
	slot_cmd() { # slot_cmd LINE: one command to the client, its answer in $reply
		echo "$1" >&"${SLOTC[1]}"
		IFS= read -r -t 30 reply <&"${SLOTC[0]}" || fail "the slot client did not answer '$1'"
	}
	slot_cmd go
	[ "$reply" = connected ] || fail "the slot client did not connect: $reply"
	slot_cmd "open gpu $cg"
	g=${reply#slot }
	slot_cmd "open inflight $cg"
	i=${reply#slot }
	[[ "$g$i" =~ ^[0-9]+$ ]] || fail "the slot client opened no slots: $reply"
	charged() { # charged "GPU INFLIGHT": the cgroup's own values, read precisely, are these
		in_ct "$acctctl" --json=short show --precise "$cg" >"$tmp/show.json" &&
			python3 -c '
import json, sys
def find(o):
    if isinstance(o, dict):
        if "charges" in o:
            return o["charges"]
        o = list(o.values())
    for v in o if isinstance(o, list) else []:
        c = find(v)
        if c is not None:
            return c
c = find(json.load(sys.stdin))
print(c["gpu"]["self"]["value"], c["inflight"]["self"]["value"])' <"$tmp/show.json" >"$tmp/charged.txt" &&
			[ "$(cat "$tmp/charged.txt")" = "$1" ]
	}
	wait_charged() { # wait_charged "GPU INFLIGHT" WHAT: within 20 s (100 reads at most)
		local end=$((SECONDS + 20))
		for _ in $(seq 100); do
			charged "$1" 2>/dev/null && return 0
			[ $SECONDS -lt $end ] || break
			sleep 0.2
		done
		fail "$2: gpu and inflight are $(cat "$tmp/charged.txt" 2>/dev/null), not $1"
	}
	slot_cmd "add $g 7 1000"
	slot_cmd "add $i 1 10"
	wait_charged "7000 10" "the slots' charges before the restart"
	slot_cmd "add $g 7 100" # after the last fold: the stop folds it
	check "systemctl restart acctd (slots held)" systemctl restart acctd
	stored=$(in_ct systemctl show -P NFileDescriptorStore acctd.service)
	[ "$stored" = 4 ] || fail "the descriptor store holds $stored descriptors, not the 2 slots' 4"
	wait_charged "7700 10" "the slots' charges after the restart"
	acctd_status >"$tmp/status.json" || fail "acctctl status (step 4c)"
	[ "$(jsonq get adopted <"$tmp/status.json")" = 2 ] || fail "acctd took up no slots: $(cat "$tmp/status.json")"
	slot_cmd "add $g 3 100"
	slot_cmd "add $i 2 10"
	wait_charged "8000 30" "the old slots' charges after the restart"
	echo close >&"${SLOTC[1]}"
	wait "$SLOTC_PID" || fail "the slot client failed"
	wait_charged "8000 0" "inflight released at the client's exit"
	no_store() { [ "$(in_ct systemctl show -P NFileDescriptorStore acctd.service)" = 0 ]; }
	wait_for 20 "the exited client's slots are still in the descriptor store" no_store
	in_ct rm -f /etc/acctd/acctd.conf
	say "step 4c: slots charged across systemctl restart acctd (gpu 8000, inflight 30 then released at the client's exit)"
else
	say "step 4c: skipped (no acctctl, or no tests/charge-slot-client)"
fi

# ---- 5. stop, journal ------------------------------------------------------------

# Still the same acctd, 5 s watchdog and all: give it more than the period.
ran=$(in_ct ps -o etimes= -p "$(main_pid)" | tr -d ' ')
[ "$ran" -ge 7 ] || sleep $((7 - ran))
restarts=$(in_ct systemctl show -P NRestarts acctd.service)
[ "$restarts" = "$want_restarts" ] ||
	fail "acctd restarted $restarts times ($want_restarts expected: $why_restarts); the watchdog?"
start=$EPOCHREALTIME
in_ct systemctl stop acctd.service 2>/dev/null || fail "systemctl stop acctd"
took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
result=$(in_ct systemctl show -P Result acctd.service)
code=$(in_ct systemctl show -P ExecMainStatus acctd.service)
[ "$result" = success ] && [ "$code" = 0 ] || fail "acctd did not stop cleanly: Result=$result status=$code"
python3 -c 'import sys; sys.exit(float(sys.argv[1]) >= 10)' "$took" || fail "stopping took ${took}s"
in_ct journalctl -u acctd -o json --no-pager >"$tmp/journal.json"
python3 "$here/check-journal.py" <"$tmp/journal.json" || fail "the journal does not hold acctd's structured log lines"
# The accounting record of the probe stopped in step 4 (docs/history.md): one
# structured entry with its MESSAGE_ID and fields, as systemd's for a unit,
# its schema's version and the unit it was (ACCTD_SERVICE, docs/fleet.md).
python3 - "$tmp/journal.json" <<'PY' || fail "no accounting record of acctd-boot-probe.service in the journal"
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line) if line.strip() else {}
    if (e.get("MESSAGE_ID") == "d85349364a43483586dd4e8dd439700e"
            and e.get("ACCTD_CGROUP", "").endswith("/system.slice/acctd-boot-probe.service")
            and e.get("ACCTD_CPU_USEC", "").isdigit() and e.get("ACCTD_LIFETIME_USEC", "").isdigit()
            and e.get("ACCTD_RECORD_VERSION") == "1"
            and e.get("ACCTD_SERVICE") == "acctd-boot-probe.service"
            and ": Consumed " in e.get("MESSAGE", "")):
        print("accounting record:", e["MESSAGE"])
        sys.exit(0)
sys.exit(1)
PY
say "step 5: stopped cleanly in ${took}s; the journal holds acctd's structured lines and the probe's accounting record"

# ---- 6. nspawn's defaults: no BPF (issue 27, item 8) ----------------------------

# The container as systemd-nspawn makes it unless told otherwise: /sys
# read-only without bpffs (but with the directory /sys/fs/bpf, which a
# private network's fresh sysfs lacks), no CAP_BPF, bpf() refused by its
# system call filter, the host's network. acctd --bpf-pin can pin nothing
# there; with collector = auto (the default) "systemctl start acctd" must
# succeed all the same, on files, with the reason in the journal (one line)
# and in Status.
step6=$EPOCHREALTIME
# Not started at boot: the start below is the first of this boot. On the
# host's network /metrics stays off, so as not to meet a port in use.
check "systemctl disable acctd.service" systemctl disable acctd.service
in_ct mkdir -p /etc/acctd
printf '[metrics]\nlisten = none\n' | in_ct tee /etc/acctd/acctd.conf >/dev/null
stop_container
remove_cgroups
cgroups=()
make_cgroups
boot
in_ct systemctl is-active --quiet acctd.service && fail "acctd.service started at boot though disabled"
in_ct test -w /sys/fs && fail "the container's /sys is writable: not nspawn's defaults"
in_ct grep -q '^[^ ]* /sys/fs/bpf bpf ' /proc/self/mounts && fail "the container has a bpffs: not nspawn's defaults"
check "systemctl start acctd (nspawn's defaults: no BPF)" systemctl start acctd
check "acctd.service is active (nspawn's defaults)" systemctl is-active --quiet acctd.service
in_ct journalctl -b -u acctd -o cat --no-pager >"$tmp/journal.txt"
why=$(sed -n 's/^nothing pinned: the daemon reads cgroupfs files (collector = auto; BPF is unavailable: \(.*\))$/\1/p' \
	"$tmp/journal.txt")
[ -n "$why" ] || { cat "$tmp/journal.txt"; fail "acctd --bpf-pin did not say in one line why it pinned nothing"; }
grep -e 'Control process exited' -e 'Failed with result' "$tmp/journal.txt" &&
	fail "the start without BPF logged a failure"
grep ': not pinned: ' "$tmp/journal.txt" && fail "acctd --bpf-pin said more than one line for one reason"
in_ct grep -q '^[^ ]* /sys/fs/bpf bpf ' /proc/self/mounts && fail "acctd --bpf-pin mounted a bpffs it could not use"
if [ -n "$acctctl" ]; then
	acctd_status >"$tmp/status.json" || fail "acctctl status (nspawn's defaults)"
	[ "$(jsonq sum files_read <"$tmp/status.json")" -gt 0 ] || fail "acctd read no files: $(cat "$tmp/status.json")"
	# Every hierarchy on files, for the pin step's reason.
	python3 -c '
import json, sys
def find(o):  # "collectors" wherever the reply puts it
    if isinstance(o, dict):
        return o["collectors"] if "collectors" in o else next((f for f in map(find, o.values()) if f is not None), None)
    return None
c = find(json.load(open(sys.argv[1])))
want = "acctd --bpf-pin pinned nothing: " + sys.argv[2]
bad = [e for e in c or [] if e.get("collector") != "files" or e.get("reason") != want]
if not c or bad:
    print("FAIL: want every hierarchy on files with the reason %r: %s" % (want, json.dumps(c)))
    sys.exit(1)' "$tmp/status.json" "$why" || fail "Status does not show files and the reason"
	in_ct "$acctctl" status >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "acctctl status (text)"; }
	grep -qF "acctd --bpf-pin pinned nothing: $why" "$tmp/out" ||
		{ cat "$tmp/out"; fail "acctctl status does not print why BPF is not in use"; }
fi
say "step 6: nspawn's defaults: systemctl start acctd ran acctd on files ($(since "$step6") s); reason: $why"

status=0
say "PASS"
