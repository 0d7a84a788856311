#!/bin/bash
# test-vm.sh - acctd on a real pure cgroup v2 host: a virtual machine (Debian
# 12, its 6.1 kernel, systemd as PID 1, cgroup2 only) booted under qemu's
# software emulation, with acctd installed by "meson install --destdir" and
# tests/vm/in-vm-checks.py run inside as a oneshot unit.
#
#   test-vm.sh BUILD_DIR
#
# The machines this project runs on bind every controller but hugetlb to
# cgroup v1, so this is where acctd meets the v2 memory, io and cpu
# controllers of a real kernel (docs/testing.md says what it covers).
#
# Steps (each prints its time):
#   1. The boot test's Debian root (tests/boot/mkroot.sh, ACCTD_BOOT_ROOT) and,
#      on top of it, the VM image (mkimage.sh: kernel, initramfs, python3),
#      both built once and cached in ACCTD_VM_IMAGE (default
#      /var/cache/acctd-test/bookworm-vm), rebuilt when what goes into them
#      changes.
#   2. A throw-away overlay of the image (a copy where overlayfs is missing)
#      gets acctd (meson install --destdir), the checks and their unit; it
#      becomes an ext4 disk image.
#   3. qemu boots it with two more disks: one the checks write their results
#      to (read back here after power-off), one scratch disk for the I/O
#      workload (io.stat of a virtio disk). The unit powers the machine off
#      when the checks end; ACCTD_VM_TIMEOUT (default 600 s) ends a machine
#      that hangs.
#   4. One line per check, PASS or FAIL; a failing check's log follows its
#      line, then acctd's journal and the console's last lines.
#
# Software emulation only: no -enable-kvm (a KVM guest hung at "Booting from
# ROM" on these machines). ACCTD_VM_KEEP=1 keeps the temporary directory (disk
# and console log) for a post-mortem.
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, qemu-system-x86_64,
# mkfs.ext4, debootstrap or wget missing, the Debian archive unreachable, a
# sanitizer build), with the reason printed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../boot/cache.sh" # cached()
build=$(cd "${1:?usage: test-vm.sh BUILD_DIR}" && pwd)
root_cache=${ACCTD_BOOT_ROOT:-/var/cache/acctd-test/bookworm-root}
image_cache=${ACCTD_VM_IMAGE:-/var/cache/acctd-test/bookworm-vm}
vm_timeout=${ACCTD_VM_TIMEOUT:-600}

skip() { echo "SKIP: $*"; exit 77; }
t0=${ACCTD_VM_T0:-$EPOCHREALTIME}
export ACCTD_VM_T0=$t0
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
say() { printf '[%5ss] %s\n' "$(since "$t0")" "$*"; }

# ---- preconditions (outside the private mount namespace) ---------------------

if [ -z "${ACCTD_VM_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || skip "the VM test needs root (debootstrap, chroot, mounts)"
	for tool in qemu-system-x86_64 mkfs.ext4 debootstrap wget python3 unshare chroot; do
		command -v "$tool" >/dev/null ||
			skip "$tool is missing (apt-get install qemu-system-x86 e2fsprogs debootstrap wget; see tools/debian-packages)"
	done
	sanitize=$(meson introspect --buildoptions "$build" |
		python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"))')
	[ "$sanitize" = none ] ||
		skip "sanitizer build (b_sanitize=$sanitize): the VM test runs on the plain build"
	export ACCTD_VM_INNER=1
	exec unshare --mount --propagation private "$0" "$@"
fi

# ---- 1. the cached root and image ---------------------------------------------

mkdir -p "$(dirname "$root_cache")" "$(dirname "$image_cache")"
rc=0
cached 9 "$root_cache.lock" "$here/../boot/mkroot.sh" "$root_cache" || rc=$? # ../boot/cache.sh
[ $rc -eq 77 ] && skip "the Debian archive cannot be reached to build the root file system"
[ $rc -eq 0 ] || { echo "FAIL: could not build the root file system"; exit 1; }
rc=0
cached 8 "$image_cache.lock" "$here/mkimage.sh" "$root_cache" "$image_cache" || rc=$?
[ $rc -eq 77 ] && skip "the Debian archive cannot be reached to build the VM image"
[ $rc -eq 0 ] || { echo "FAIL: could not build the VM image"; exit 1; }
say "VM image: $image_cache"

# ---- 2. a throw-away copy with acctd and the checks -----------------------------

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/acctd-vm.XXXXXX")
tree=$tmp/root
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	umount -l "$tree" 2>/dev/null || true
	if [ -n "${ACCTD_VM_KEEP:-}" ]; then
		echo "kept $tmp"
	else
		rm -rf "$tmp"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$tree" "$tmp/upper" "$tmp/work"
if ! mount -t overlay overlay -o "lowerdir=$image_cache,upperdir=$tmp/upper,workdir=$tmp/work" "$tree" 2>/dev/null; then
	say "no overlayfs here: copying the image"
	cp -a --reflink=auto "$image_cache/." "$tree/"
fi
meson install -C "$build" --destdir "$tree" --quiet
ldconfig -r "$tree"
for f in usr/local/sbin/acctd usr/local/bin/acctctl; do
	[ -x "$tree/$f" ] || { echo "FAIL: meson install put no /$f into the image"; exit 1; }
done
install -D -m 0755 "$here/in-vm-checks.py" "$tree/usr/local/lib/acctd-vm/in-vm-checks.py"
# The disks are told apart by label and serial number (udev's by-id links),
# not by the order the kernel finds them in (the -device ones come first).
cat >"$tree/etc/systemd/system/acctd-vm-checks.service" <<'EOF'
[Unit]
Description=acctd's checks on a pure cgroup v2 host (tests/vm)
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/bin/python3 /usr/local/lib/acctd-vm/in-vm-checks.py \
	--results /dev/disk/by-id/virtio-acctd-results --scratch /dev/disk/by-id/virtio-acctd-scratch --poweroff
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=540
# The checks power off themselves when done (--poweroff); these are for a
# crash or a timeout. The results are on their disk (fsync'ed): nothing else
# needs stopping cleanly.
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Install]
WantedBy=multi-user.target
EOF
# acctd.socket listens from boot on, as on a host where it is enabled.
systemctl --root="$tree" --quiet enable acctd.socket acctd-vm-checks.service
echo acctd-vm >"$tree/etc/hostname"

kernel=$(ls "$tree"/boot/vmlinuz-* | sort -V | tail -n 1)
initrd=$(ls "$tree"/boot/initrd.img-* | sort -V | tail -n 1)
cp "$kernel" "$tmp/vmlinuz"
cp "$initrd" "$tmp/initrd"
truncate -s 3G "$tmp/disk.img"
mkfs.ext4 -q -F -L acctd-vm -d "$tree" "$tmp/disk.img"
truncate -s 1M "$tmp/results.img"
truncate -s 64M "$tmp/scratch.img"
umount "$tree"
say "disk image ready (acctd installed, kernel ${kernel##*/vmlinuz-})"

# ---- 3. boot ----------------------------------------------------------------------

rc=0
timeout --kill-after=10 "$vm_timeout" qemu-system-x86_64 -m 2048 -smp 2 -no-reboot \
	-display none -monitor none -serial "file:$tmp/console.log" \
	-kernel "$tmp/vmlinuz" -initrd "$tmp/initrd" \
	-append "root=LABEL=acctd-vm rw console=ttyS0 quiet systemd.unified_cgroup_hierarchy=1" \
	-drive "file=$tmp/disk.img,format=raw,if=virtio" \
	-drive "file=$tmp/results.img,format=raw,if=none,id=results" \
	-device virtio-blk-pci,drive=results,serial=acctd-results \
	-drive "file=$tmp/scratch.img,format=raw,if=none,id=scratch" \
	-device virtio-blk-pci,drive=scratch,serial=acctd-scratch \
	</dev/null >"$tmp/qemu.log" 2>&1 || rc=$?
case $rc in
0) say "the VM powered off" ;;
124 | 137) say "the VM did not power off within $vm_timeout s: stopped (the verdicts are what the checks wrote)" ;;
*)
	cat "$tmp/qemu.log"
	echo "FAIL: qemu exited with status $rc"
	exit 1
	;;
esac

# ---- 4. the verdicts ----------------------------------------------------------------

status=0
python3 - "$tmp/results.img" <<'EOF' || status=1
import json, sys
text = open(sys.argv[1], "rb").read().rstrip(b"\0").decode()
results = [json.loads(line) for line in text.splitlines() if line.strip()]
done = any(r.get("done") for r in results)
checks = [r for r in results if "check" in r]
for r in checks:
    print("%s %s (%.1f s)" % ("PASS" if r["ok"] else "FAIL", r["check"], r["seconds"]))
    if not r["ok"]:
        print("    " + r["log"].replace("\n", "\n    "))
    elif r["log"]:  # what a passing check saw, in a line (e.g. the collector)
        print("    " + r["log"].splitlines()[0][:1000])
for r in results:
    if "journal" in r:
        print("---- acctd's journal in the VM (last 60 lines)")
        print(r["journal"])
failed = [r["check"] for r in checks if not r["ok"]]
if not checks:
    print("FAIL: no results from inside the VM")
elif not done:
    print("FAIL: the checks inside did not finish (the last one reported: %s)" % checks[-1]["check"])
elif failed:
    print("FAIL: %d of %d checks: %s" % (len(failed), len(checks), ", ".join(failed)))
else:
    print("all %d checks passed" % len(checks))
sys.exit(0 if checks and done and not failed else 1)
EOF
if [ $status -ne 0 ]; then
	echo "---- console (last 60 lines)"
	tail -n 60 "$tmp/console.log" | tr -d '\r'
fi
say "done"
exit $status
