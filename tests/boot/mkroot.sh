#!/bin/bash
# mkroot.sh - build (once) and cache the minimal Debian root file system that the
# boot test boots with systemd-nspawn.
#
#   mkroot.sh [--current] ROOT [PACKAGE,...]
#
# ROOT becomes a debootstrap'ed Debian 12 (bookworm, minbase) with systemd,
# dbus and the run-time libraries acctd links against (libsqlite3-0 for the
# history since issue 14), and the PACKAGEs given (the journal forwarding
# test's root adds systemd-journal-remote: a root of its own, so that the
# boot test's and the VM image built on it stay as they are). It is built when missing or when the package list
# below changed (ROOT/.acctd-boot-root holds the list
# it was built with), into ROOT.new first, so that an interrupted build never
# leaves a half root behind; debootstrap's log is ROOT.log. The caller holds
# the lock.
#
# --current builds nothing: exit 0 where ROOT is current, 1 where it is not
# (cache.sh: whether the caller needs the exclusive lock).
#
# Exit status: 0 ready, 77 the Debian archive cannot be reached (the caller
# skips), 1 anything else.
set -euo pipefail

current_only=false
if [ "${1:-}" = --current ]; then
	current_only=true
	shift
fi
root=${1:?usage: mkroot.sh [--current] ROOT [PACKAGE,...]}
extra=${2:-}
suite=bookworm
# systemd, a D-Bus for systemctl and /bin/kill (procps) for ExecReload=; then
# what acctd and acctctl link against.
include=systemd,systemd-sysv,dbus,procps,libevent-2.1-7,libevent-pthreads-2.1-7,libinih1,libjson-c5,liburcu8,libnuma1,libcgroup2,zlib1g,libsystemd0,libbpf1,libsqlite3-0
include=$include${extra:+,$extra}
stamp="suite=$suite variant=minbase include=$include"

if [ -f "$root/.acctd-boot-root" ] && [ "$(cat "$root/.acctd-boot-root")" = "$stamp" ]; then
	exit 0
fi
$current_only && exit 1

# The mirror this host's apt uses: deb822 sources first, then sources.list.
mirror=${ACCTD_BOOT_MIRROR:-}
if [ -z "$mirror" ]; then
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		mirror=$(awk '/^URIs:/ && /debian\/?$/ && !/security/ { print $2; exit }' "$f")
		[ -n "$mirror" ] && break
	done
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
	mirror=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
		/etc/apt/sources.list)
fi
mirror=${mirror:-http://deb.debian.org/debian}

# Can the archive be reached? debootstrap itself would only fail after a while,
# with a message that does not say so.
if ! wget -q -T 15 -t 2 -O /dev/null "${mirror%/}/dists/$suite/Release"; then
	echo "the Debian archive ($mirror) cannot be reached" >&2
	exit 77
fi

echo "building the $suite root file system in $root from $mirror (once; takes a few minutes)" >&2
rm -rf "$root.new"
mkdir -p "$(dirname "$root")"
if ! debootstrap --variant=minbase --include="$include" "$suite" "$root.new" "$mirror" >"$root.log" 2>&1; then
	tail -n 20 "$root.log" >&2
	echo "debootstrap failed; the whole log is $root.log" >&2
	rm -rf "$root.new"
	exit 1
fi
# Nothing in the cache is machine-specific: every boot gets a fresh machine id
# (an empty /etc/machine-id makes systemd generate one in memory).
: >"$root.new/etc/machine-id"
rm -f "$root.new/var/cache/apt/archives/"*.deb
echo "$stamp" >"$root.new/.acctd-boot-root"
rm -rf "$root"
mv "$root.new" "$root"
echo "root file system ready" >&2
