#!/usr/bin/env python3
"""test-install-deps.py - tools/install-deps picks the sections of
tools/debian-packages it is asked for: "make run" and "make install" ([build])
never pull in the test toolchain, "make deb" ([build] [package]) has every
Build-Depends of debian/control, and no section is silently ignored."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "install-deps")


def packages(*sections):
    out = subprocess.run(["sh", TOOL, "--list", *sections], check=True, capture_output=True, text=True).stdout
    return set(out.split())


def main():
    problems = []
    every = packages()
    build = packages("build")
    package = packages("build", "package")
    check = packages("check")
    for heavy in ("prometheus", "qemu-system-x86", "debootstrap", "python3-pytest", "lintian"):
        if heavy in build:
            problems.append(f"[build] (make run, make install) has {heavy}")
    for needed in ("gcc", "meson", "ninja-build", "clang", "bpftool", "libbpf-dev", "libjson-c-dev", "scdoc"):
        if needed not in build:
            problems.append(f"[build] lacks {needed}")
    for needed in ("debhelper", "dpkg-dev", "fakeroot"):
        if needed not in package:
            problems.append(f"[build] [package] (make deb) lacks {needed}")
    if every != build | package | check:
        problems.append(f"all sections {sorted(every)} != build+package+check")
    if not build < package:
        problems.append("[build] [package] is not a strict superset of [build]")
    r = subprocess.run(["sh", TOOL, "--list", "bogus"], capture_output=True, text=True)
    if r.returncode != 2 or "no section [bogus]" not in r.stderr:
        problems.append(f"an unknown section: exit {r.returncode}, {r.stderr.strip()!r}")
    for p in problems:
        print(p)
    print(f"install-deps: build {len(build)}, build+package {len(package)}, all {len(every)} packages")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
