#!/bin/bash
# test-cache.sh - tests/boot/cache.sh, the lock protocol of the cached Debian
# trees that the boot, journal and VM tests share, with a stand-in builder:
#   1. a current tree is used by two tests at once (the second does not wait
#      for the first to end, as it did when the stamp was read under an
#      exclusive lock);
#   2. a stale tree that two tests want at once is built once, and neither
#      goes on before it is built;
#   3. the builder's status comes back (77: the archive cannot be reached).
# Each wait is for a line in the log, with a deadline. Exit 0 passed, 1 failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'touch "$tmp/release"; wait; rm -rf "$tmp"' EXIT
log=$tmp/log
tree=$tmp/tree
mkdir -p "$tree"

# The builder: --current looks at the stamp; a build takes until the test
# releases it (or 77 where $tmp/unreachable exists).
cat >"$tmp/builder" <<'EOB'
#!/bin/bash
if [ "$1" = --current ]; then [ -f "$2/stamp" ]; exit; fi
[ -f "$1/stamp" ] && exit 0
[ -e "$1/../unreachable" ] && exit 77
echo "building" >>"$1/../log"
while [ ! -e "$1/../release-build" ]; do sleep 0.05; done
touch "$1/stamp"
echo "built" >>"$1/../log"
EOB
chmod +x "$tmp/builder"

# user NAME: uses the tree until $tmp/release exists; logs NAME-in, NAME-out.
user() {
	(
		. "$here/cache.sh"
		rc=0
		cached 9 "$tmp/lock" "$tmp/builder" "$tree" || rc=$?
		echo "$1-in $rc" >>"$log"
		[ $rc -eq 0 ] || exit $rc
		while [ ! -e "$tmp/release" ]; do sleep 0.05; done
		echo "$1-out" >>"$log"
	) &
}

fail() { echo "FAIL: $*"; echo "log:"; cat "$log" 2>/dev/null; exit 1; }
# wait_for LINE: until LINE is in the log (deadline 60 s: a loaded machine).
wait_for() {
	local deadline=$((SECONDS + 60))
	until grep -qx -- "$1" "$log" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || fail "no '$1' in the log within 60 s"
		sleep 0.05
	done
}

# 1. A current tree: both in at once.
touch "$tree/stamp"
: >"$log"
user a
wait_for "a-in 0"
user b
wait_for "b-in 0"
grep -q "a-out" "$log" && fail "b went in only after a was out"
touch "$tmp/release"
wait
echo "ok: a current tree is used by two tests at once"

# 2. A stale tree: built once, both in after it was built.
rm -f "$tree/stamp" "$tmp/release"
: >"$log"
user a
user b
wait_for "building"
if grep -q -- "-in" "$log"; then fail "a test went in before the tree was built"; fi
touch "$tmp/release-build"
wait_for "a-in 0"
wait_for "b-in 0"
[ "$(grep -c '^building$' "$log")" -eq 1 ] || fail "the tree was built more than once"
[ "$(sed -n 2p "$log")" = built ] || fail "a test went in before the build ended"
touch "$tmp/release"
wait
echo "ok: a stale tree wanted by two tests is built once, before either uses it"

# 3. The builder's status.
rm -f "$tree/stamp" "$tmp/release" "$tmp/release-build"
touch "$tmp/unreachable"
: >"$log"
user c
wait
grep -qx "c-in 77" "$log" || fail "the builder's 77 did not come back"
echo "ok: the builder's status comes back"
