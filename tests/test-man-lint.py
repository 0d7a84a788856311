#!/usr/bin/python3
"""test-man-lint.py - the rendered man pages are lint-clean for mandoc.

Runs "mandoc -Tlint -W warning" on each page given and fails on any message,
but one class: "skipping paragraph macro: PP empty / PP after SH / PP after SS".
scdoc (1.11) writes a .P after every heading and at the end of each indented
block; mandoc drops those that hold no text and says so, and groff ignores
them as well, so they change nothing a reader sees. Messages of level STYLE
(below WARNING: input lines over 80 bytes, a lower-case title) are not
checked: both are the form scdoc writes, and man pages by convention take
their title from the command's name.

Usage: test-man-lint.py PAGE... Exit 0 clean, 1 with findings (printed),
77 (skip, with the reason) when mandoc or the pages are missing.
"""
import re
import shutil
import subprocess
import sys

IGNORED = re.compile(r"WARNING: skipping paragraph macro: PP (empty|after SH|after SS)$")


def main():
    pages = sys.argv[1:]
    if not pages:
        print("SKIP: no man pages were built (scdoc not found, or -Dman=disabled)")
        return 77
    mandoc = shutil.which("mandoc")
    if not mandoc:
        print("SKIP: mandoc not found (Debian package mandoc, in tools/debian-packages)")
        return 77
    findings, ignored = [], 0
    for page in pages:
        p = subprocess.run([mandoc, "-Tlint", "-W", "warning", page], capture_output=True, text=True)
        for line in (p.stdout + p.stderr).splitlines():
            if IGNORED.search(line):
                ignored += 1
            elif line.strip():
                findings.append(line)
        # 0: clean; 2-3: warnings/errors (reported above); other: mandoc itself failed
        if p.returncode not in (0, 2, 3, 4):
            findings.append("%s: mandoc exited with %d" % (page, p.returncode))
    for f in findings:
        print(f)
    print("%d page(s), %d finding(s), %d redundant .P from scdoc ignored" % (len(pages), len(findings), ignored))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
