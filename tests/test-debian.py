#!/usr/bin/python3
"""test-debian.py - debian/ parses and packages everything meson installs.

   test-debian.py BUILD_DIR

Cheap checks of the Debian packaging (debian/, docs/systemd.md "Installing the
Debian package") on every build, so that a mistake shows here and not only in
the root-only boot test that builds and installs the packages
(tests/boot/test-boot.sh --deb):

1. debian/changelog parses (dpkg-parsechangelog), names the source acctd and
   the version meson.build says (a native package: no Debian revision).
2. debian/control parses (dh_listpackages) and lists the four packages;
   every package in its Build-Depends is in tools/debian-packages (the one
   list that make deps installs).
3. Every file meson installs (meson-info/intro-installed.json) is claimed by
   exactly one debian/PACKAGE.install line or by debian/not-installed (dh_missing
   fails the package build otherwise), and every .install line matches a file
   meson installs or, for a source path, a file in the tree (a stale line fails
   the build too). Paths are compared with the build's prefix read as /usr and
   its libdir's multiarch part as the host's.

Exit 0 when all hold, 1 otherwise (each problem on its own line), 77 without
dpkg-dev or debhelper (tools/debian-packages lists them).
"""
import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEBIAN = os.path.join(ROOT, "debian")
PACKAGES = ["acctd", "acctctl", "libacct-client0", "libacct-client-dev"]


def run(*cmd):
    return subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def main():
    build = sys.argv[1]
    for tool in ("dpkg-parsechangelog", "dh_listpackages", "dpkg-architecture"):
        if not shutil.which(tool):
            print(f"SKIP: {tool} is missing (apt-get install dpkg-dev debhelper; see tools/debian-packages)")
            return 77
    problems = []
    info = lambda name: json.load(open(os.path.join(build, "meson-info", f"intro-{name}.json")))

    project = info("projectinfo")
    source = run("dpkg-parsechangelog", "-S", "Source")
    version = run("dpkg-parsechangelog", "-S", "Version")
    if source != project["descriptive_name"]:
        problems.append(f"debian/changelog: source {source}, meson.build: project {project['descriptive_name']}")
    if version != project["version"]:
        problems.append(f"debian/changelog: version {version}, meson.build: {project['version']} "
                        "(dch -v VERSION for a native package)")

    listed = run("dh_listpackages").split()
    if sorted(listed) != sorted(PACKAGES):
        problems.append(f"dh_listpackages: {' '.join(listed)}; expected {' '.join(PACKAGES)}")

    # What "make deb" installs: sections [build] and [package].
    wanted, section = set(), None
    for line in open(os.path.join(ROOT, "tools", "debian-packages")):
        words = line.split("#", 1)[0].split()
        if len(words) == 1 and re.fullmatch(r"\[[a-z]+\]", words[0]):
            section = words[0][1:-1]
        elif section in ("build", "package"):
            wanted.update(words)
    control = open(os.path.join(DEBIAN, "control")).read()
    depends = re.search(r"^Build-Depends:(.*?)^\S", control, re.M | re.S).group(1)
    for dep in depends.split(","):
        name = re.sub(r"[\s(<\[].*", "", dep.strip(), flags=re.S).split(":")[0]
        if name and not name.startswith("debhelper-compat") and name not in wanted:
            problems.append(f"debian/control: Build-Depends {name} is not in tools/debian-packages [build] or [package]")

    # What meson installs, as paths below debian/tmp of a --prefix=/usr build.
    options = {o["name"]: o["value"] for o in info("buildoptions")}
    prefix = options["prefix"].rstrip("/")
    multiarch = run("dpkg-architecture", "-qDEB_HOST_MULTIARCH")
    installed = []
    for path in info("installed").values():
        if path.startswith(prefix + "/"):
            path = "/usr" + path[len(prefix):]
        installed.append(path.lstrip("/"))

    claims = {}  # pattern -> who claims it
    for package in PACKAGES:
        name = os.path.join(DEBIAN, f"{package}.install")
        for line in open(name):
            line = line.strip()
            if line and not line.startswith("#"):
                claims[line.split()[0].replace("${DEB_HOST_MULTIARCH}", multiarch)] = f"debian/{package}.install"
    for line in open(os.path.join(DEBIAN, "not-installed")):
        line = line.strip()
        if line and not line.startswith("#"):
            claims[line] = "debian/not-installed"

    for path in sorted(installed):
        who = [w for p, w in claims.items() if fnmatch.fnmatchcase(path, p)]
        if len(who) != 1:
            problems.append(f"/{path}: installed by meson, claimed by {len(who)} lines ({', '.join(who) or 'none'})")
    built_man = any(p.startswith("usr/share/man/") for p in installed)
    for pattern, who in claims.items():
        if any(fnmatch.fnmatchcase(p, pattern) for p in installed) or glob.glob(os.path.join(ROOT, pattern)):
            continue
        if pattern.startswith("usr/share/man/") and not built_man:
            continue  # this build has no scdoc (-Dman=auto); the package requires it
        problems.append(f"{who}: {pattern} matches nothing meson installs")

    # The symbols file lists what the library exports (dpkg-gensymbols would
    # find out only in a package build, in boot-deb).
    libs = [p for p in glob.glob(os.path.join(build, "lib", "client", "libacct-client.so.0.*")) if os.path.isfile(p)]
    if libs and shutil.which("nm"):
        out = subprocess.run(["nm", "-D", "--defined-only", libs[0]], check=True, capture_output=True,
                             text=True).stdout
        exported = {line.split()[-1].replace("@@", "@") for line in out.splitlines() if line.strip()}
        exported = {e if "@" in e else e + "@" + e for e in exported}  # the version node itself
        listed_syms = {line.split()[0] for line in open(os.path.join(DEBIAN, "libacct-client0.symbols"))
                       if line.startswith(" ")}
        for sym in sorted(exported - listed_syms):
            problems.append(f"debian/libacct-client0.symbols: {sym} is exported but not listed")
        for sym in sorted(listed_syms - exported):
            problems.append(f"debian/libacct-client0.symbols: {sym} is listed but not exported")

    for p in problems:
        print(p)
    print(f"debian/: {version}, {len(listed)} packages, {len(installed)} installed files claimed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
