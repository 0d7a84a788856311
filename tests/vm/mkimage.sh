#!/bin/bash
# mkimage.sh - build (once) and cache the file tree of the virtual machine that
# the VM test boots: the boot test's Debian root (tests/boot/mkroot.sh) plus
# Debian's kernel, an initramfs and what the checks inside need.
#
#   mkimage.sh [--current] BASE_ROOT IMAGE
#
# IMAGE becomes a copy of BASE_ROOT (which the caller has made ready with
# mkroot.sh and holds a shared lock on) with the packages below installed
# from the Debian archive that BASE_ROOT's apt uses. It is rebuilt when the
# base root, the package list or the recipe version changed (IMAGE/.acctd-vm-image
# holds what it was built from), into IMAGE.new first, so that an interrupted
# build never leaves a half image behind; apt's log is IMAGE.log. Nothing of
# acctd goes into the cache: the test installs it into a throw-away copy. The
# caller holds the lock on IMAGE.
#
# --current builds nothing: exit 0 where IMAGE is current, 1 where it is not
# (tests/boot/cache.sh: whether the caller needs the exclusive lock).
#
# Exit status: 0 ready, 77 the Debian archive cannot be reached (the caller
# skips), 1 anything else.
set -euo pipefail
current_only=false
if [ "${1:-}" = --current ]; then
	current_only=true
	shift
fi

base=${1:?usage: mkimage.sh [--current] BASE_ROOT IMAGE}
image=${2:?usage: mkimage.sh [--current] BASE_ROOT IMAGE}
# The kernel and what boots it (udev comes with initramfs-tools); python3 runs
# the checks inside; prometheus (with promtool) scrapes acctd there. Bump
# recipe when the steps below change.
packages="linux-image-amd64 initramfs-tools kmod python3 prometheus"
recipe=2
stamp="base=[$(cat "$base/.acctd-boot-root")] packages=[$packages] recipe=$recipe"

if [ -f "$image/.acctd-vm-image" ] && [ "$(cat "$image/.acctd-vm-image")" = "$stamp" ]; then
	exit 0
fi
$current_only && exit 1

mirror=$(awk '$1 == "deb" { print $2; exit }' "$base/etc/apt/sources.list")
if ! wget -q -T 15 -t 2 -O /dev/null "${mirror%/}/dists/bookworm/Release"; then
	echo "the Debian archive ($mirror) cannot be reached" >&2
	exit 77
fi

echo "building the VM image in $image from $base (once; takes a few minutes)" >&2
rm -rf "$image.new"
cp -a --reflink=auto "$base" "$image.new"
# apt and the kernel's maintainer scripts want /proc, /sys and /dev; they get
# them in a mount namespace of their own, which takes the mounts away on exit.
cp /etc/resolv.conf "$image.new/etc/resolv.conf"
if ! unshare --mount --propagation private sh -c '
	set -e
	r=$1; shift
	mount -t proc proc "$r/proc"
	mount --rbind /sys "$r/sys"
	mount --rbind /dev "$r/dev"
	chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
		sh -c "apt-get update && apt-get install -y --no-install-recommends $*"
' sh "$image.new" $packages >"$image.log" 2>&1; then
	tail -n 20 "$image.log" >&2
	echo "installing the VM's packages failed; the whole log is $image.log" >&2
	rm -rf "$image.new"
	exit 1
fi
if ! ls "$image.new"/boot/vmlinuz-* "$image.new"/boot/initrd.img-* >/dev/null 2>&1; then
	echo "no kernel or initramfs in $image.new/boot after installing $packages" >&2
	rm -rf "$image.new"
	exit 1
fi
: >"$image.new/etc/resolv.conf"
rm -rf "$image.new/var/cache/apt/archives/"*.deb "$image.new/var/lib/apt/lists/"*
# Root logs in without a password on the serial console, for a post-mortem
# with ACCTD_VM_KEEP=1 (the image never leaves this machine).
chroot "$image.new" passwd -d root >/dev/null
# The checks start a Prometheus of their own when they need it; the packaged
# one would scrape itself from boot on and take emulated CPU time.
systemctl --root="$image.new" --quiet disable prometheus.service
echo "$stamp" >"$image.new/.acctd-vm-image"
rm -rf "$image"
mv "$image.new" "$image"
echo "VM image ready" >&2
