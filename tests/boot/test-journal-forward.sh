#!/bin/bash
# test-journal-forward.sh - acctd's accounting records forwarded from several
# hosts to one collector with systemd's own tools (issue 33, docs/fleet.md
# "Accounting records through the journal").
#
#   test-journal-forward.sh BUILD_DIR
#
# Two hosts: two Debian 12 containers booted under a real systemd with
# systemd-nspawn (the boot test's recipe, nspawn's defaults: no BPF), each
# with acctd installed by "meson install --destdir", a hostname of its own
# (/etc/hostname) and a random machine id (nspawn --uuid, as a first boot
# makes one). The collector:
# systemd-journal-remote on this machine, listening on loopback (the
# containers share its network). In each host:
#   1. acctd.service runs; a transient unit fleet-probe.service (systemd-run)
#      burns some CPU and ends, and acctd sends its accounting record to the
#      host's journal (MESSAGE_ID d85349364a43483586dd4e8dd439700e, ACCTD_*);
#   2. systemd-journal-upload.service, its URL set by a drop-in of
#      journal-upload.conf, sends the host's journal to the collector.
# At the collector, journalctl -D DIR -o json selects the records by their
# fields: MESSAGE_ID and ACCTD_SERVICE=fleet-probe.service give one from each
# host (told apart by _HOSTNAME and _MACHINE_ID), with ACCTD_RECORD_VERSION=1
# and the schema's fields; adding _HOSTNAME= gives that host's alone. The
# CPU time in each record must equal what the host's systemd says the unit
# used (CPUUsageNSec) within acctd's own bound.
#
# The root file system is the boot test's plus systemd-journal-remote
# (journal-upload), built once with tests/boot/mkroot.sh and cached in
# ACCTD_JOURNAL_ROOT (default /var/cache/acctd-test/bookworm-journal-root).
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, a tool missing, the
# Debian archive unreachable, a sanitizer build), with the reason printed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/cache.sh" # cached()
build=$(cd "${1:?usage: test-journal-forward.sh BUILD_DIR}" && pwd)
root_cache=${ACCTD_JOURNAL_ROOT:-/var/cache/acctd-test/bookworm-journal-root}
remote=/lib/systemd/systemd-journal-remote
record_id=d85349364a43483586dd4e8dd439700e

skip() { echo "SKIP: $*"; exit 77; }
t0=$EPOCHREALTIME
say() { printf '[%5ss] %s\n' "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" "$*"; }
fail() { echo "FAIL: $*"; exit 1; }

if [ -z "${ACCTD_JOURNAL_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, mounts, systemd-nspawn)"
	for tool in systemd-nspawn debootstrap nsenter unshare wget python3 journalctl; do
		command -v "$tool" >/dev/null ||
			skip "$tool is missing (apt-get install systemd-container debootstrap; see tools/debian-packages)"
	done
	[ -x "$remote" ] || skip "$remote is missing (apt-get install systemd-journal-remote)"
	sanitize=$(meson introspect --buildoptions "$build" |
		python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"))')
	[ "$sanitize" = none ] || skip "sanitizer build (b_sanitize=$sanitize): runs on the plain build"
	export ACCTD_JOURNAL_INNER=1
	exec unshare --mount --propagation private "$0" "$@"
fi

# ---- the cached root file system, with journal-upload -----------------------

mkdir -p "$(dirname "$root_cache")"
rc=0
cached 9 "$root_cache.lock" "$here/mkroot.sh" "$root_cache" systemd-journal-remote || rc=$? # cache.sh
[ $rc -eq 77 ] && skip "the Debian archive cannot be reached to build the root file system"
[ $rc -eq 0 ] || fail "could not build the root file system"
say "root file system: $root_cache"

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/acctd-journal.XXXXXX")
hosts=(a b)
declare -A nspawn_pid leader merged
cgroups=()
collector=
status=1

in_ct() { # in_ct HOST COMMAND...: run a command in that container, clean environment
	local h=$1
	shift
	nsenter -t "${leader[$h]}" -m -u -i -n -p -- env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 SYSTEMD_PAGER= \
		SYSTEMD_COLORS=0 "$@"
}

stop_container() {
	local h=$1 pid=${nspawn_pid[$1]:-}
	[ -n "$pid" ] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		[ -z "${leader[$h]:-}" ] || in_ct "$h" systemctl poweroff --no-block >/dev/null 2>&1 || true
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			sleep 2
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	fi
	nspawn_pid[$h]=
	leader[$h]=
}

diagnose() {
	local h
	for h in "${hosts[@]}"; do
		[ -n "${leader[$h]:-}" ] || continue
		echo "---- host $h: systemctl status acctd systemd-journal-upload"
		in_ct "$h" systemctl status --no-pager -n 10 acctd.service systemd-journal-upload.service 2>&1 || true
	done
	echo "---- the collector's log"
	tail -n 20 "$tmp/remote.log" 2>/dev/null || true
}

cleanup() {
	local rc=$? h cg
	trap - EXIT INT TERM
	[ $status -eq 0 ] || diagnose
	for h in "${hosts[@]}"; do stop_container "$h"; done
	[ -z "$collector" ] || { kill "$collector" 2>/dev/null || true; wait "$collector" 2>/dev/null || true; }
	for cg in "${cgroups[@]}"; do
		[ -d "$cg" ] || continue
		[ ! -e "$cg/cgroup.kill" ] || echo 1 >"$cg/cgroup.kill" 2>/dev/null || true
		for _ in $(seq 50); do
			find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
			[ -d "$cg" ] || break
			sleep 0.1
		done
	done
	for h in "${hosts[@]}"; do umount -l "${merged[$h]:-/nonexistent}" 2>/dev/null || true; done
	umount -l /run/systemd/nspawn 2>/dev/null || true
	if [ -n "${ACCTD_BOOT_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the collector ------------------------------------------------------------

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/remote"
"$remote" --listen-http="127.0.0.1:$port" --output="$tmp/remote/" >"$tmp/remote.log" 2>&1 &
collector=$!
say "collector: systemd-journal-remote on 127.0.0.1:$port, writing $tmp/remote/"

# ---- two hosts ------------------------------------------------------------------

# Each container gets a cgroup of its own below ours where PID 1 is not
# systemd (the boot test says why).
make_cgroup() {
	local h=$1 mnt path
	[ "$(cat /proc/1/comm)" != systemd ] || return 0
	while IFS=: read -r _ ctl path; do
		case "$ctl" in
		'') mnt=$(findmnt -n -o TARGET -t cgroup2 | head -n 1) ;;
		name=systemd) mnt=$(findmnt -n -o TARGET,OPTIONS -t cgroup | awk '$2 ~ /name=systemd/ { print $1; exit }') ;;
		*) continue ;;
		esac
		[ -n "$mnt" ] && [ -d "$mnt$path" ] || continue
		mkdir "${mnt%/}$path/${tmp##*/}-$h"
		cgroups+=("${mnt%/}$path/${tmp##*/}-$h")
	done </proc/self/cgroup
}

mkdir -p /run/systemd/nspawn
mount -t tmpfs tmpfs /run/systemd/nspawn
for h in "${hosts[@]}"; do
	merged[$h]=$tmp/$h/root
	mkdir -p "${merged[$h]}" "$tmp/$h/upper" "$tmp/$h/work"
	if ! mount -t overlay overlay -o "lowerdir=$root_cache,upperdir=$tmp/$h/upper,workdir=$tmp/$h/work" \
		"${merged[$h]}" 2>/dev/null; then
		cp -a --reflink=auto "$root_cache/." "${merged[$h]}/"
	fi
	meson install -C "$build" --destdir "${merged[$h]}" --quiet
	ldconfig -r "${merged[$h]}" 2>/dev/null || true
	# Both hosts share this machine's network: no /metrics port to collide.
	# A container on a hybrid host sees the host's v1 hierarchies, other
	# tests' cgroups included: each acctd accounts its own services only.
	mkdir -p "${merged[$h]}/etc/acctd" "${merged[$h]}/etc/systemd/journal-upload.conf.d"
	printf '[metrics]\nlisten = none\n[cgroups]\ninclude = */system.slice */system.slice/*\n' \
		>"${merged[$h]}/etc/acctd/acctd.conf"
	# systemd in the container sets the hostname from /etc/hostname, and
	# takes an empty /etc/machine-id from dbus's copy, the same in both
	# (debootstrap made it): without it, from nspawn's --uuid (boot())
	echo "acctd-fleet-$h" >"${merged[$h]}/etc/hostname"
	rm -f "${merged[$h]}/var/lib/dbus/machine-id"
	printf '[Upload]\nURL=http://127.0.0.1:%s\n' "$port" \
		>"${merged[$h]}/etc/systemd/journal-upload.conf.d/50-collector.conf"
	make_cgroup "$h"
done
say "acctd installed into both hosts"

boot() { # boot HOST: nspawn's defaults, the host's network, a hostname of its own
	local h=$1 c cg uuid
	# A machine id of its own, as a first boot makes one.
	uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	(
		for cg in "${cgroups[@]}"; do
			case "$cg" in *-"$h") echo "$BASHPID" >"$cg/cgroup.procs" ;; esac
		done
		exec systemd-nspawn -D "${merged[$h]}" --register=no --keep-unit -q -b --console=pipe \
			--hostname="acctd-fleet-$h" --uuid="$uuid"
	) </dev/null >"$tmp/$h/console.log" 2>&1 &
	nspawn_pid[$h]=$!
	for _ in $(seq 100); do
		for c in $(ps -o pid= --ppid "${nspawn_pid[$h]}"); do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && leader[$h]=$c
		done
		[ -n "${leader[$h]:-}" ] && break
		kill -0 "${nspawn_pid[$h]}" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "${leader[$h]:-}" ] || { cat "$tmp/$h/console.log"; fail "systemd-nspawn started no container for host $h"; }
}
ready() { # ready HOST: wait until its systemd is up
	local h=$1 state deadline=$((${EPOCHREALTIME%.*} + 120))
	while :; do
		state=$(in_ct "$h" timeout 60 systemctl is-system-running --wait 2>/dev/null || true)
		case "$state" in running | degraded) break ;; esac
		[ "${EPOCHREALTIME%.*}" -lt $deadline ] && kill -0 "${nspawn_pid[$h]}" 2>/dev/null || break
		sleep 0.2
	done
	case "$state" in running | degraded) ;; *) fail "host $h did not boot (state '$state')" ;; esac
}
for h in "${hosts[@]}"; do boot "$h"; done
for h in "${hosts[@]}"; do ready "$h"; done
say "both hosts booted: $(for h in "${hosts[@]}"; do printf '%s machine %s; ' "$(in_ct "$h" hostname)" "$(in_ct "$h" cat /etc/machine-id)"; done)"

# ---- 1. a unit's accounting record in each host's journal ----------------------

declare -A cpu_systemd
for h in "${hosts[@]}"; do
	in_ct "$h" systemctl start acctd.service || fail "systemctl start acctd on host $h"
done
for h in "${hosts[@]}"; do
	# acctd must have found the slice before the unit starts: wait for Ready
	for _ in $(seq 150); do
		in_ct "$h" systemctl show -P StatusText acctd.service | grep -q . && break
		sleep 0.2
	done
	# Half a second of CPU, then the unit ends and systemd removes its cgroup.
	in_ct "$h" systemd-run --quiet --wait --unit=fleet-probe.service -p CPUAccounting=yes \
		sh -c 'end=$(($(date +%s) + 1)); while [ "$(date +%s)" -lt "$end" ]; do :; done' \
		>"$tmp/$h/run.log" 2>&1 || { cat "$tmp/$h/run.log"; fail "systemd-run fleet-probe.service on host $h"; }
done
for h in "${hosts[@]}"; do
	found=
	for _ in $(seq 300); do
		if in_ct "$h" journalctl -o json --no-pager "MESSAGE_ID=$record_id" ACCTD_SERVICE=fleet-probe.service \
			>"$tmp/$h/record.json" 2>/dev/null && [ -s "$tmp/$h/record.json" ]; then
			found=1
			break
		fi
		sleep 0.2
	done
	[ -n "$found" ] || fail "no accounting record of fleet-probe.service in host $h's journal"
done
say "step 1: both hosts' journals hold fleet-probe.service's accounting record"

# ---- 2. forwarded to the collector, selected there by field --------------------

for h in "${hosts[@]}"; do
	in_ct "$h" systemctl start systemd-journal-upload.service || fail "systemctl start systemd-journal-upload on host $h"
done
select_records() { journalctl -D "$tmp/remote" -o json --no-pager "MESSAGE_ID=$record_id" "$@" 2>/dev/null; }
for _ in $(seq 300); do
	n=$(select_records ACCTD_SERVICE=fleet-probe.service | python3 -c '
import json, sys
print(len({json.loads(l)["_HOSTNAME"] for l in sys.stdin if l.strip()}))')
	[ "$n" -ge 2 ] && break
	sleep 0.2
done
[ "$n" -ge 2 ] || { ls -l "$tmp/remote"; fail "the collector holds records of $n of 2 hosts"; }
select_records ACCTD_SERVICE=fleet-probe.service >"$tmp/collected.json"
for h in "${hosts[@]}"; do
	select_records ACCTD_SERVICE=fleet-probe.service "_HOSTNAME=acctd-fleet-$h" >"$tmp/$h/collected.json"
done
python3 - "$tmp" "${hosts[@]}" <<'PY' || fail "the records at the collector"
import json, os, sys
tmp, hosts = sys.argv[1], sys.argv[2:]
def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]
every = load(os.path.join(tmp, "collected.json"))
by_host = {}
for e in every:
    by_host.setdefault(e["_HOSTNAME"], []).append(e)
assert sorted(by_host) == ["acctd-fleet-%s" % h for h in hosts], sorted(by_host)
machines = {e["_MACHINE_ID"] for e in every}
assert len(machines) == len(hosts), {e["_HOSTNAME"]: e["_MACHINE_ID"] for e in every}  # two hosts, not one twice
for h in hosts:
    mine = load(os.path.join(tmp, h, "collected.json"))
    assert mine and all(e["_HOSTNAME"] == "acctd-fleet-" + h for e in mine), mine
    local = load(os.path.join(tmp, h, "record.json"))
    e = mine[-1]
    # the host's own record, unchanged by the trip
    assert any(l["__CURSOR"] and l["ACCTD_CPU_USEC"] == e["ACCTD_CPU_USEC"] and
               l["ACCTD_REMOVED_USEC"] == e["ACCTD_REMOVED_USEC"] for l in local), (local, e)
    assert e["ACCTD_RECORD_VERSION"] == "1", e
    assert e["ACCTD_CGROUP"].endswith("/system.slice/fleet-probe.service"), e
    assert e["ACCTD_SERVICE"] == "fleet-probe.service", e
    assert e["_SYSTEMD_UNIT"] == "acctd.service", e
    for f in ("ACCTD_CPU_USEC", "ACCTD_FIRST_SEEN_USEC", "ACCTD_REMOVED_USEC", "ACCTD_LIFETIME_USEC"):
        assert e[f].isdigit(), (f, e)
    assert int(e["ACCTD_REMOVED_USEC"]) >= int(e["ACCTD_FIRST_SEEN_USEC"]), e
    print("host %s (machine %s): %s" % (h, e["_MACHINE_ID"], e["MESSAGE"]))
PY
# What each host's systemd counted for the unit: acctd's record within its bound.
for h in "${hosts[@]}"; do
	sd=$(in_ct "$h" journalctl -o json --no-pager -u fleet-probe.service | python3 -c '
import json, re, sys
for l in sys.stdin:
    e = json.loads(l)
    if "CPU_USAGE_NSEC" in e:
        print(e["CPU_USAGE_NSEC"])
        break')
	python3 - "$tmp/$h/collected.json" "$sd" <<'PY' || fail "host $h: acctd's CPU time against systemd's"
import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
acct = int(e["ACCTD_CPU_USEC"])
bound = int(e.get("ACCTD_CPU_USEC_BOUND", "0"))
if sys.argv[2]:
    sd = int(sys.argv[2]) // 1000
    # systemd reads cpuacct when the unit stops; acctd its last read of the
    # emptied cgroup (or states how much more it may have used)
    assert abs(acct - sd) <= bound + 20000, (acct, bound, sd)
    print("CPU: acctd %d us (+%d), systemd %d us" % (acct, bound, sd))
else:
    print("CPU: acctd %d us (+%d); systemd logged no CPU_USAGE_NSEC" % (acct, bound))
PY
done
say "step 2: the collector holds both hosts' records, selected by MESSAGE_ID and ACCTD_SERVICE, and by _HOSTNAME"
status=0
echo "PASS"
