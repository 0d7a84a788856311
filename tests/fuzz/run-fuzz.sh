#!/bin/sh
# run-fuzz.sh - run one libFuzzer target for a bounded time (meson suite
# "fuzz": make check-fuzz, make fuzz).
#
# Usage: run-fuzz.sh FUZZER TARGET FUZZ_DIR
# Seconds: $FUZZ_SECONDS (default 10). The fuzzer starts from a copy of
# FUZZ_DIR/corpus/TARGET and FUZZ_DIR/regressions/TARGET in a temporary
# directory, so nothing is ever written into the source tree; a crashing
# input is kept in $FUZZ_ARTIFACTS (default: fuzz-artifacts/TARGET in the
# current directory, the build directory under meson test), to be copied into
# FUZZ_DIR/regressions/TARGET once the bug is fixed. libFuzzer's final
# statistics (executions, executions per second, coverage) end the output.
set -eu
fuzzer=$1
target=$2
dir=$3
seconds=${FUZZ_SECONDS:-10}
artifacts=${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts/$target}

[ -d "$dir/corpus/$target" ] || { echo "no corpus: $dir/corpus/$target" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/acctd-run-fuzz-$target.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts"
cp "$dir/corpus/$target"/* "$work/corpus/"
if [ -d "$dir/regressions/$target" ]; then
	for f in "$dir/regressions/$target"/*; do
		[ -f "$f" ] && cp "$f" "$work/corpus/regression-$(basename "$f")"
	done
fi
echo "fuzz-$target: $seconds s from $(ls "$work/corpus" | wc -l) inputs; crashes go to $artifacts"
# Leaks are checked (detect_leaks, libFuzzer's -detect_leaks); -rss_limit_mb
# and -timeout catch runaway memory and hangs as failures too.
rc=0
# The targets' own temporary files go under $work too (TMPDIR), which the trap
# removes: libFuzzer ends without running their atexit() clean-up.
mkdir -p "$work/tmp"
TMPDIR=$work/tmp \
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$artifacts/" "$work/corpus" >"$work/log" 2>&1 || rc=$?
# Each new coverage and reduction has a line: leave them out.
grep -v '^#[0-9].*\(NEW\|REDUCE\)' "$work/log" || true
if [ "$rc" -ne 0 ]; then
	echo "fuzz-$target: FAILED (exit $rc); the input is in $artifacts" >&2
	exit 1
fi
