#!/bin/bash
# bench-empty.sh NxM NEW_BUILD OLD_BUILD: acctd's CPU over a tree of empty
# cgroups (docs/performance.md, "Session 24"). Makes /acctd-prof-empty
# (1 + N + N*M cgroups) with os.makedirs in memory, cpu, cpuacct, blkio, pids
# and unified (a hybrid host), runs each build's acctd over it (BPF collector,
# history off, its own socket), takes its CPU time (utime + stime) over 60 s
# after a minute of warm-up, prints Status's pass lines, and removes the tree.
# Root only; the tree disturbs other acctd instances on the host while it
# exists (about 5 minutes).
set -u
shape=$1; new=$2; old=$3
N=${shape%x*}; M=${shape#*x}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/acctd.conf" <<CONF
[sampling]
collector = bpf
bpf_pin_dir = $work/no-pins
[api]
socket = $work/acctd.sock
[history]
enabled = no
[cgroups]
include = /acctd-prof-empty*
CONF
mkdir -p "$work/no-pins" "$work/no-dropins"
tree() { # make | rm
	python3 - "$1" "$N" "$M" <<'PY'
import os, sys
op, n, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in "memory cpu cpuacct blkio pids unified".split():
    base = "/sys/fs/cgroup/%s/acctd-prof-empty" % d
    if op == "make":
        for i in range(n):
            for j in range(m):
                os.makedirs("%s/a%d/b%d" % (base, i, j), exist_ok=True)
    elif os.path.isdir(base):
        for root, _, _ in os.walk(base, topdown=False):
            os.rmdir(root)
PY
}
trap 'tree rm; rm -rf "$work"' EXIT
echo "$(date -u +%T) making $shape"
tree make
for b in "$new" "$old"; do
	"$b/daemon/acctd/acctd" --config "$work/acctd.conf" --config-dropins "$work/no-dropins" \
		--metrics-listen none --log-level info > "$work/acctd.log" 2>&1 &
	p=$!
	sleep 60
	a=$(awk '{print $14+$15}' /proc/$p/stat); l0=$(cut -d' ' -f1 /proc/loadavg)
	sleep 60
	c=$(awk '{print $14+$15}' /proc/$p/stat)
	echo "$(date -u +%T) $b $shape: $(echo "scale=2; ($c-$a)/60" | bc)% of a core over 60 s (load $l0 at start, $(cut -d' ' -f1 /proc/loadavg) at end)"
	"$new/daemon/acctctl/acctctl" --address="unix:$work/acctd.sock" status 2>&1 | grep -E 'Fast pass|Slow pass|Last reads'
	kill $p; wait $p
	sleep 3
done
