#!/bin/sh
# check-rules.sh - the shipped Prometheus rules (prometheus/*.yml) parse and
# pass their unit tests: promtool check rules, then promtool test rules on
# tests/prometheus/*.test.yml (the series and what the rules must make of
# them). Exit 77 (skip) without promtool (Debian package prometheus, in
# tools/debian-packages' [check] section).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$(dirname "$here")")
promtool=$(command -v promtool || true)
if [ -z "$promtool" ]; then
	echo "SKIP: promtool is not installed (apt-get install prometheus)"
	exit 77
fi
"$promtool" check rules "$src"/prometheus/*.yml
# promtool resolves rule_files relative to the test file
"$promtool" test rules "$here"/*.test.yml
