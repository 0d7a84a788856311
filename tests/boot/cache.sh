# cache.sh - sourced by the tests that share a cached Debian tree (the boot
# test's root, the VM image on top of it, the journal test's root): hold the
# tree's lock shared for as long as the test uses it, and build the tree first
# where it is missing or stale.
#
#   cached FD LOCK_FILE BUILDER ARGS...
#
# "BUILDER ARGS" makes the tree current (exit 0) or cannot reach the Debian
# archive (77); "BUILDER --current ARGS" exits 0 where it is current already
# and builds nothing. Returns the builder's status, with LOCK_FILE held shared
# on FD either way (the caller exits on a failure, which drops it).
#
# Shared while the tree is in use, so that the tests using one tree run side by
# side: nobody rebuilds it under them. Exclusive only while it is built. Before
# (session 27), each test took the lock exclusively to look at the stamp and
# so waited for every test using the tree to end: in make check the boot
# tests, the README test and the VM test ran one after another, and the VM
# test began its own work 7 minutes in. A test that finds the tree stale drops
# its shared lock before it asks for the exclusive one (so two such tests do
# not hold each other up), builds (the builder checks its stamp again: one of
# two finds the other's build), drops the lock and starts again from the
# shared lock. The exclusive lock is only tried, never waited for: flock(2)
# is not fair, and a test waiting for it while the one that built goes back
# to its shared lock and uses the tree would wait for that whole test (seen
# in make check beside mutation runs: test-cache's second user not in within
# 60 s). One that cannot have it looks again under the shared lock, which
# waits for a build in progress.
cached() {
	local fd=$1 lock=$2
	shift 2
	eval "exec $fd>\"\$lock\""
	while :; do
		flock -s "$fd"
		"$1" --current "${@:2}" && return 0
		flock -u "$fd"
		if ! flock -n "$fd"; then
			sleep 0.2
			continue
		fi
		local rc=0
		"$@" || rc=$?
		flock -u "$fd"
		if [ $rc -ne 0 ]; then
			flock -s "$fd"
			return $rc
		fi
	done
}
