#!/bin/sh
# build-deb.sh - build acctd's Debian packages (debian/) from a copy of the
# source tree, so that the tree stays clean and the results land together.
#
#   tools/build-deb.sh OUTDIR
#
# Copies the source tree (the files git tracks plus the untracked ones it does
# not ignore; without git, everything but build directories) to
# OUTDIR/acctd-VERSION, runs "dpkg-buildpackage -b -us -uc" there, and leaves
# the .deb, .buildinfo and .changes files in OUTDIR (dpkg-buildpackage writes
# them into the parent of the tree it builds), replacing earlier ones. The
# copy is removed afterwards. DEB_BUILD_OPTIONS passes through: "nocheck"
# skips (and does not build) the unit tests, as the boot test does.
# "make deb" runs this with OUTDIR=build-deb.
set -eu

out=${1:?usage: build-deb.sh OUTDIR}
src=$(cd "$(dirname "$0")/.." && pwd)
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
mkdir -p "$out"
out=$(cd "$out" && pwd)
copy=$out/acctd-$version
rm -rf "$copy"
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mkdir "$copy"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# Deleted but not yet committed files are listed too: skip them.
	(cd "$src" && git ls-files -z -c -o --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -C "$copy" -xf -
else
	tar -C "$src" --exclude-vcs --exclude='./build' --exclude='./build-*' --exclude='./obj-*' \
		--exclude='./debian/tmp' -cf - . | tar -C "$copy" -xf -
fi
rc=0
(cd "$copy" && dpkg-buildpackage -b -us -uc) || rc=$?
rm -rf "$copy"
[ $rc -eq 0 ] || { echo "build-deb.sh: dpkg-buildpackage failed (exit $rc)" >&2; exit $rc; }
ls "$out"/*.deb
