#!/usr/bin/python3
"""test-circles.py BUILD_DIR - no circle of files in lib/ and daemon/, no .c over MAX_C_LINES.

test-layering.py keeps the folders' includes pointing down; this keeps the
files of one folder from leaning on each other in a circle, which is what
makes a file impossible to read or change alone. It reads the object files
the build made (compile_commands.json says which object is whose source, so
a stale object left by a moved file is not read):

1. "A calls B" when A's object has an undefined symbol that B's defines
   (nm). A strongly connected component of more than one file (two files
   calling each other, directly or round a loop) is a circle; each is
   printed with every arrow inside it and the symbols that make the arrow.
   KNOWN_CYCLES lists the circles tolerated while they are taken apart: one
   that is found and not listed fails, and so does a listed one that is no
   longer found exactly, so the list can only shrink.
2. Every .c of lib/ and daemon/ has at most MAX_C_LINES lines (KNOWN_LONG
   lists the files being split, on the same terms). test-layering.py asks a
   reason at the top of every file over its own, lower, MAX_LINES.
3. Every tests/integration/test_*.py is its own meson test: listed in
   tests/meson.build's integration_files (or integration_helpers, the files
   with no tests), or the slow suite's test_kernel_truth.py. meson has no
   glob, so a file added without its line would never run.
4. Every file of fake_tree_files (tests/meson.build) is listed in
   integration_files and shows none of HOST_TOUCHES: no path under /sys/fs,
   no write to a cgroup's procs or quota, no unit or mount, no daemon
   without a fake root, no directory made outside the test's own. make check
   runs those files beside the tests that must run alone, which such a
   change on the host would disturb.

Exit 0 when all hold, 1 otherwise; 77 (skipped, saying why) without nm,
when the checks that need no nm pass.
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("lib", "daemon")
MAX_C_LINES = 1500

# Circles found on main when this test was written, each the exact set of
# files of one strongly connected component, with why it is still here.
KNOWN_CYCLES = [
]
# .c files over MAX_C_LINES on main when this test was written.
KNOWN_LONG = {
}


def objects(build):
    """{source: [object paths]} for the sources of FOLDERS (and the files the
    build generates into them), from compile_commands.json."""
    path = os.path.join(build, "compile_commands.json")
    out = {}
    for entry in json.load(open(path)):
        obj = os.path.normpath(os.path.join(entry["directory"], entry["output"]))
        src = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        rel_obj = os.path.relpath(obj, build)
        if rel_obj.split(os.sep)[0] not in FOLDERS or not src.endswith(".c"):
            continue
        rel_src = os.path.relpath(src, ROOT)
        if rel_src.startswith(".."):  # generated into the build directory
            rel_src = os.path.join(os.path.basename(os.path.normpath(build)), os.path.relpath(src, build))
        out.setdefault(rel_src, []).append(obj)
    return out


def symbols(objs):
    """{object: ({defined: nm's type letter}, {undefined})}: each object's external symbols."""
    p = subprocess.run(["nm", "-A", "-P", "-g"] + objs, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("nm failed (%d): %s" % (p.returncode, p.stderr.strip()))
    out = {o: ({}, set()) for o in objs}
    for line in p.stdout.splitlines():
        # "path/x.c.o: name T 0000000000000000 0000000000000010"
        head, _, rest = line.partition(": ")
        fields = rest.split()
        if head not in out or len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind in ("U", "w", "v"):
            out[head][1].add(name)
        else:
            out[head][0][name] = kind
    return out


def components(nodes, edges):
    """Tarjan's strongly connected components of the graph (iterative)."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.add(n)
                    if n == node:
                        break
                comps.append(comp)
    return comps


def describe(comp, arrows):
    lines = ["circle of %d files: %s" % (len(comp), ", ".join(sorted(comp)))]
    for (a, b), syms in sorted(arrows.items()):
        if a in comp and b in comp:
            both = " (and back)" if (b, a) in arrows else ""
            lines.append("  %s -> %s%s: %s" % (a, b, both, ", ".join(sorted(syms))))
    lines.append("  as a KNOWN_CYCLES entry: ({%s}, \"REASON\")," % ", ".join('"%s"' % f for f in sorted(comp)))
    return lines


def check_cycles(build, errors, report):
    srcs = objects(build)
    if not srcs:
        errors.append("%s: no object of %s in compile_commands.json" % (build, " or ".join(FOLDERS)))
        return
    missing = [o for objs in srcs.values() for o in objs if not os.path.exists(o)]
    if missing:
        errors.append("%d object(s) not built (first: %s): build before this test" % (len(missing), missing[0]))
        return
    syms = symbols(sorted(o for objs in srcs.values() for o in objs))
    undefined, definers, data = {}, {}, set()
    for src, objs in srcs.items():
        undefined[src] = set().union(*(syms[o][1] for o in objs))
        for o in objs:
            for n, kind in syms[o][0].items():
                definers.setdefault(n, set()).add(src)
                if kind not in "TtWwIi":  # a variable, not a function: said so in the arrow
                    data.add(n)
    arrows = {}
    for a, names in undefined.items():
        for n in names:
            for b in definers.get(n, ()):
                if b != a:
                    arrows.setdefault((a, b), set()).add(n + " (data)" if n in data else n)
    edges = {}
    for a, b in arrows:
        edges.setdefault(a, set()).add(b)
    circles = [c for c in components(set(srcs), edges) if len(c) > 1]
    known = [frozenset(files) for files, _ in KNOWN_CYCLES]
    for c in sorted(circles, key=sorted):
        text = describe(c, arrows)
        if frozenset(c) in known:
            report.extend(["known " + text[0]] + text[1:-1])
        else:
            errors.extend(["new " + text[0]] + text[1:])
    found = {frozenset(c) for c in circles}
    for files, reason in KNOWN_CYCLES:
        if frozenset(files) not in found:
            errors.append("KNOWN_CYCLES lists a circle that is no longer found (%s): remove it, or list the "
                          "circle it became: %s" % (reason, ", ".join(sorted(files))))
    report.append("read %d file(s): %d arrow(s), %d circle(s)" % (len(srcs), len(arrows), len(circles)))


def check_lengths(errors):
    for top in FOLDERS:
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                rel = os.path.relpath(os.path.join(folder, f), ROOT)
                lines = open(os.path.join(folder, f), encoding="utf-8").read().count("\n")
                if lines > MAX_C_LINES and rel not in KNOWN_LONG:
                    errors.append("%s: %d lines, over %d: split it" % (rel, lines, MAX_C_LINES))
                elif lines <= MAX_C_LINES and rel in KNOWN_LONG:
                    errors.append("%s: %d lines, no longer over %d: remove it from KNOWN_LONG" %
                                  (rel, lines, MAX_C_LINES))
    for rel in sorted(KNOWN_LONG):
        if not os.path.exists(os.path.join(ROOT, rel)):
            errors.append("%s: listed in KNOWN_LONG and gone: remove it from KNOWN_LONG" % rel)


def check_integration_files(errors):
    tests = os.path.join(ROOT, "tests")
    meson = open(os.path.join(tests, "meson.build")).read()
    listed = set(re.findall(r"^\s*\['(\w+)',", meson, re.M))
    helpers = re.search(r"^\s*integration_helpers = \[([^\]]*)\]", meson, re.M)
    helpers = set(re.findall(r"'(\w+)'", helpers.group(1))) if helpers else set()
    elsewhere = {"kernel_truth"} if "'test_kernel_truth.py'" in meson else set()
    files = {f[len("test_"):-len(".py")] for f in os.listdir(os.path.join(tests, "integration"))
             if f.startswith("test_") and f.endswith(".py")}
    for name in sorted(files - listed - helpers - elsewhere):
        errors.append("tests/integration/test_%s.py: not a meson test: add ['%s', TIMEOUT, PARALLEL] to "
                      "integration_files in tests/meson.build" % (name, name))
    for name in sorted((listed | helpers) - files):
        errors.append("tests/meson.build: lists integration file '%s', and tests/integration/test_%s.py "
                      "does not exist" % (name, name))
    check_fake_tree_files(meson, listed, tests, errors)


# What a file of fake_tree_files must not do: make check runs it beside the
# tests that must run alone, which a cgroup, mount, pin or quota made on the
# host, or a daemon on the host's cgroups, would disturb (tests/meson.build).
HOST_TOUCHES = [
    (re.compile(r"/sys/fs"), "a path under /sys/fs (cgroups, bpffs)"),
    (re.compile(r"""(cgroup\.procs|cgroup\.threads|/tasks|cpu\.max|cfs_quota_us)["']\s*,\s*["'][wa]"""),
     "a write to a cgroup's procs or quota"),
    (re.compile(r"systemd-run|\bmount\b|\bunshare\b"), "a unit or a mount"),
    (re.compile(r"\bDaemon\(\s*[^,()]+\)"), "a daemon without a fake root (Daemon(tmpdir) tracks the host)"),
    (re.compile(r"os\.(mkdir|makedirs)\((?![^)]*(tmp_path|tmpdir|home|self\.))"), "a directory made outside the test's own"),
]


def check_fake_tree_files(meson, listed, tests, errors):
    m = re.search(r"^\s*fake_tree_files = \[([^\]]*)\]", meson, re.M)
    fake = set(re.findall(r"'(\w+)'", m.group(1))) if m else set()
    for name in sorted(fake - listed):
        errors.append("tests/meson.build: fake_tree_files lists '%s', which integration_files does not" % name)
    for name in sorted(fake & listed):
        path = os.path.join(tests, "integration", "test_%s.py" % name)
        text = open(path).read()
        for pattern, what in HOST_TOUCHES:
            for hit in pattern.finditer(text):
                line = text.count("\n", 0, hit.start()) + 1
                errors.append("tests/integration/test_%s.py:%d: %s (%r), and the file is in fake_tree_files: "
                              "take it out, or keep the file on temporary trees" % (name, line, what, hit.group(0)))


def main(argv):
    if len(argv) != 2:
        print("usage: test-circles.py BUILD_DIR", file=sys.stderr)
        return 2
    errors, report = [], []
    check_lengths(errors)
    check_integration_files(errors)
    if shutil.which("nm") is None:
        for line in errors:
            print(line)
        if errors:
            return 1
        print("SKIP: nm (binutils) is not installed: the circle check reads symbols with it")
        return 77
    check_cycles(os.path.abspath(argv[1]), errors, report)
    for line in report + errors:
        print(line)
    print("circles: %d violation(s)" % sum(1 for e in errors if not e.startswith("  ")))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
