#!/usr/bin/python3
"""test-link-deps.py - acctctl and acctd-generator link only what they use.

The generator parses acctd.conf and nothing else, acctctl talks varlink; neither
may pull in the daemon's engine through a layer it does not need (a
dependency object too wide in meson.build, an #include across layers). The
libraries each must NOT need are checked in the built binaries' NEEDED entries
(readelf -d), so that such a change fails here instead of showing up in ldd of
an installed system.

Usage: test-link-deps.py BINARY...; each binary is known by its file name.
Exit 0 when none needs a forbidden library, 1 otherwise (one line per
library), 77 when a binary or readelf is missing (the reason is printed).
"""
import os
import re
import shutil
import subprocess
import sys

# Libraries by soname prefix: the engine's (BPF, NUMA, RCU), the history's,
# the daemon's event loop and compression, the configuration's parser.
FORBIDDEN = {
    "acctd-generator": ["libbpf", "libelf", "libcgroup", "libnuma", "liburcu", "libsqlite3", "libjson-c", "libevent", "libz."],
    "acctctl": ["libbpf", "libelf", "libnuma", "liburcu", "libsqlite3", "libevent", "libz.", "libinih"],
}

NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]")


def main(argv):
    readelf = shutil.which("readelf")
    if not readelf:
        print("skipping: no readelf")
        return 77
    errors = []
    for path in argv[1:]:
        name = os.path.basename(path)
        if name not in FORBIDDEN:
            errors.append("%s: not a binary this test knows" % path)
            continue
        if not os.path.exists(path):
            print("skipping: %s was not built" % path)
            return 77
        out = subprocess.run([readelf, "-d", path], check=True, capture_output=True, text=True).stdout
        needed = NEEDED.findall(out)
        for lib in needed:
            for bad in FORBIDDEN[name]:
                if lib.startswith(bad):
                    errors.append("%s needs %s, which it must not use (its meson.build links a layer too many)" %
                                  (name, lib))
        print("%s: %s" % (name, " ".join(needed)))
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
