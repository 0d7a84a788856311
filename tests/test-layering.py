#!/usr/bin/python3
"""test-layering.py - the source tree keeps its shape (docs/design.md).

Checks, on the sources rather than the build, so that a violation is reported
with the file and line that commits it:

1. Every #include "..." of a file in lib/LAYER/ or daemon/PROGRAM/ names a
   header of its own folder by name ("ledger.h") or a header of a layer that
   ALLOWED lists for it by the layer's path ("basic/log.h", from lib/, as
   dbus-broker writes "bus/peer.h"): dependencies point down only, and every
   include says where its header lives. (lib/ is on every include path, so
   the build does not stop an upward include: this test does, naming the rule
   broken.)
2. Every .c file in lib/ and daemon/ is listed in its folder's meson.build
   (sources are listed explicitly; a file nobody builds is a mistake).
3. Every source file over MAX_LINES lines says at its top why it is long.

Exit 0 when all hold, 1 otherwise (each violation on its own line).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Who may include whom. Order matters only for reading: each layer lists the
# layers below it that it uses.
ALLOWED = {
    "lib/basic": [],
    "lib/percpu": ["lib/basic"],
    "lib/cgroup": ["lib/basic"],
    "lib/bpf": ["lib/basic", "lib/cgroup"],
    "lib/varlink": ["lib/basic"],
    "lib/config": ["lib/basic"],
    "lib/core": ["lib/basic", "lib/percpu", "lib/cgroup", "lib/bpf", "lib/config"],
    "lib/format": ["lib/basic", "lib/percpu", "lib/cgroup", "lib/bpf", "lib/config", "lib/core"],
    # lib/percpu for charge slots only (charge-slot.h, built without libnuma:
    # test-link-deps.py keeps acctctl off the engine's libraries).
    "lib/client": ["lib/basic", "lib/percpu", "lib/varlink"],
    "lib/history": ["lib/basic"],
    "daemon/acctd": ["lib/basic", "lib/percpu", "lib/cgroup", "lib/bpf", "lib/varlink", "lib/config", "lib/core", "lib/format", "lib/history"],
    "daemon/acctctl": ["lib/basic", "lib/varlink", "lib/client"],
    "daemon/acctd-generator": ["lib/basic", "lib/config"],
}
# Generated into the build directory (build-config.h at its top, the BPF
# skeletons beside lib/bpf); anyone may include them.
GENERATED = {"build-config.h", "cgroup-iter.skel.h", "task-iter.skel.h"}
MAX_LINES = 1000
# A long file's head comment must say why, in words like these.
LONG_REASON = re.compile(r"\b(is long|long because|why it is long)\b", re.I)

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(folder):
    path = os.path.join(ROOT, folder)
    return sorted(f for f in os.listdir(path) if f.endswith((".c", ".h")))


def main():
    errors = []
    owner = {}  # header name -> folder
    for folder in ALLOWED:
        if not os.path.isdir(os.path.join(ROOT, folder)):
            errors.append("%s: folder listed in ALLOWED does not exist" % folder)
            continue
        for f in sources(folder):
            if f.endswith(".h"):
                if f in owner:
                    errors.append("%s/%s: header name also used in %s" % (folder, f, owner[f]))
                owner[f] = folder

    for folder in ALLOWED:
        if not os.path.isdir(os.path.join(ROOT, folder)):
            continue
        may = set(ALLOWED[folder]) | {folder}
        meson = open(os.path.join(ROOT, folder, "meson.build")).read()
        for f in sources(folder):
            text = open(os.path.join(ROOT, folder, f), encoding="utf-8").read()
            for m in INCLUDE.finditer(text):
                name = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                if name in GENERATED:
                    continue
                layer, _, base = name.rpartition("/")
                home = owner.get(base)
                if home is None:
                    errors.append("%s/%s:%d: includes \"%s\", which no layer has" % (folder, f, line, name))
                elif home not in may:
                    errors.append("%s/%s:%d: includes \"%s\" from %s; %s may use only %s" %
                                  (folder, f, line, name, home, folder, ", ".join(sorted(may))))
                elif home == folder and layer:
                    errors.append("%s/%s:%d: includes its own folder's header as \"%s\"; by name: \"%s\"" %
                                  (folder, f, line, name, base))
                elif home != folder and "lib/" + layer != home:
                    errors.append("%s/%s:%d: includes \"%s\"; by its layer's path: \"%s/%s\"" %
                                  (folder, f, line, name, home[len("lib/"):], base))
            if f.endswith(".c") and "'%s'" % f not in meson:
                errors.append("%s/%s: not listed in %s/meson.build" % (folder, f, folder))
            lines = text.count("\n")
            head = text[:text.find("*/") + 2] if text.startswith("/*") else ""
            if lines > MAX_LINES and not LONG_REASON.search(head):
                errors.append("%s/%s: %d lines, and its head comment does not say why it is long" %
                              (folder, f, lines))

    for e in errors:
        print(e)
    print("layering: %d violation(s)" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
