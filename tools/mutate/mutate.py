#!/usr/bin/python3
"""mutate.py - the mutation check: would the tests notice a one-line mistake?

Applies small mistakes ("mutants") to chosen C files one at a time, builds,
runs the tests relevant to the file (tools/mutate/targets) with a time limit,
and reports which mutants the tests killed and which survived, with the
survivors as diffs. docs/testing.md, "Mutation check", is the user's guide.

It never touches the tree it checks: the tracked and untracked-but-not-ignored
files of --source are copied into a private work directory (default
SOURCE/build-mutate/, ignored by git), built there with meson and ninja, and
each mutant is written into that copy and undone after its run.

The script is long because its parts work on the same workspace and mutant
records (the operators that make mutants, the copy and its two builds, the
runs of meson and pytest targets, the sanitizer re-run, the lists it checks
and the report); split, each module would pass that state back and forth.

Mutant ids are FILE:FUNCTION:OPERATOR:LINEHASH:N, where LINEHASH hashes the
line's code with comments, string contents and spacing removed, and N counts
mutants of the same operator on equal lines in the same function. An id
therefore survives lines moving and unrelated edits; tools/mutate/equivalent
names mutants by it. Python 3 standard library only.
"""
import argparse
import difflib
import errno
import filecmp
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCE = os.path.dirname(os.path.dirname(HERE))
TARGETS_FILE = os.path.join(HERE, "targets")
EQUIVALENT_FILE = os.path.join(HERE, "equivalent")
KILL_RATE_MIN = 0.90

# The sanitizer re-run: a mutant that survives the plain build's tests runs
# again in an ASan+UBSan build of the same mutated copy, as make check's
# ASan+UBSan phase builds and runs it (the Makefile's build-asan/build.ninja,
# SANITIZE_C_ARGS, ASAN_RUN and ASAN_SUITES; test-mutate.py checks that these
# still say the same). Undefined behaviour that glibc's allocator or the
# stack layout hides from the plain build (a free past a struct, a short
# malloc) is a mistake make check catches, so the mutation check counts it.
SANITIZER_CC = "clang"
SANITIZER_C_ARGS = "-fno-sanitize-recover=all -fno-omit-frame-pointer"
SANITIZER_OPTIONS = ["-Db_sanitize=address,undefined", "-Db_lundef=false", "-Dc_args=" + SANITIZER_C_ARGS]
SANITIZER_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
                 "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
SANITIZER_SUITES = ("unit", "stress", "asan", "asan-fake", "asan-alone")
# A sanitizer's report in a failing test's log, shown with the kill, less
# its addresses (ASan's "... on address 0x602000000011 at pc ...").
SANITIZER_REPORT = re.compile(r"(?:ERROR: \w*Sanitizer: |runtime error: )[^\n]*?(?=(?: on address| at pc|:)? 0x|\n|$)")

# ---------------------------------------------------------------------------
# Reading C: what is code, where tokens are, which function holds them.


def mask(text):
    """TEXT with comments, the contents of string and character literals and
    preprocessor lines replaced by spaces (newlines kept), so that offsets and
    line numbers stay those of TEXT and no operator ever sees them."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != "\n":
                    out[k] = " "
            i = j + 1
        else:
            i += 1
    masked = "".join(out)
    # Preprocessor lines, with their continuations.
    lines = masked.split("\n")
    raw = text.split("\n")
    cont = False
    for idx, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = raw[idx].endswith("\\")
            lines[idx] = " " * len(line)
        else:
            cont = False
    return "\n".join(lines)


TOKEN = re.compile(r"""
 (?P<ws>\s+)
|(?P<num>(?:0[xX][0-9a-fA-F]+|\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)[uUlLfF]*)
|(?P<id>[A-Za-z_]\w*)
|(?P<str>"[^"\n]*"|'[^'\n]*')
|(?P<op><<=|>>=|\.\.\.|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[-+*/%<>=!~&|^?:;,.(){}\[\]])
|(?P<other>.)
""", re.X | re.S)


class Tok:
    __slots__ = ("kind", "text", "start", "end", "func")

    def __init__(self, kind, text, start, end):
        self.kind, self.text, self.start, self.end = kind, text, start, end
        self.func = "-"

    def __repr__(self):
        return "Tok(%s %r @%d)" % (self.kind, self.text, self.start)


def tokenize(masked):
    toks = []
    for m in TOKEN.finditer(masked):
        kind = m.lastgroup
        if kind == "ws":
            continue
        toks.append(Tok(kind, m.group(), m.start(), m.end()))
    return toks


def attribute_functions(toks):
    """Set each token's .func: the function (or initialised object, or
    struct) whose top-level braces hold it; "-" outside any."""
    depth = 0
    header = []
    current = "-"
    for t in toks:
        if depth == 0:
            if t.text == "{":
                current = block_name(header)
                header = []
                depth = 1
                t.func = current
                continue
            if t.text in (";", "}"):
                header = []
            else:
                header.append(t)
            t.func = "-"
            continue
        t.func = current
        if t.text == "{":
            depth += 1
        elif t.text == "}":
            depth -= 1
            if depth == 0:
                current = "-"


def block_name(header):
    texts = [t.text for t in header]
    if "=" in texts:
        # An initialised object: the name before "=" (and its [...]).
        i = texts.index("=") - 1
        while i >= 0 and header[i].kind != "id":
            i -= 1
        return header[i].text if i >= 0 else "-"
    for i, t in enumerate(header[:-1]):
        if t.kind == "id" and header[i + 1].text == "(" and t.text not in ("__attribute__", "_Static_assert"):
            return t.text
    ids = [t.text for t in header if t.kind == "id"]
    return ".".join(ids[-2:]) if ids else "-"


# ---------------------------------------------------------------------------
# The operators. Each yields (operator, start, end, replacement) over the
# original text; op names are part of mutant ids, so they do not change.

CLASSES = ("cmp", "const", "arith", "logic", "case", "check", "errno")

CMP = {"<": ("lt-le", "<="), "<=": ("le-lt", "<"), ">": ("gt-ge", ">="), ">=": ("ge-gt", ">"),
       "==": ("eq-ne", "!="), "!=": ("ne-eq", "==")}
ARITH = {"+": ("add-sub", "-"), "-": ("sub-add", "+"), "*": ("mul-div", "/"), "/": ("div-mul", "*"),
         "+=": ("addeq-subeq", "-="), "-=": ("subeq-addeq", "+="), "*=": ("muleq-diveq", "/="),
         "/=": ("diveq-muleq", "*=")}
LOGIC = {"&&": ("and-or", "||"), "||": ("or-and", "&&")}
KEYWORDS = {"return", "sizeof", "case", "if", "while", "for", "switch", "do", "else", "goto", "typeof",
            "_Alignof", "alignof", "__typeof__"}
TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool",
              "_Bool", "const", "volatile", "struct", "union", "enum", "static", "extern", "restrict",
              "__restrict", "inline", "register", "auto"}
ERRNO_NAMES = set(errno.errorcode.values())
INT_LITERAL = re.compile(r"^(0[xX][0-9a-fA-F]+|[0-9]+)([uUlL]*)$")


def is_operand_end(t):
    return t is not None and (t.kind in ("num", "str") or t.text in (")", "]") or
                              (t.kind == "id" and t.text not in KEYWORDS and t.text not in TYPE_WORDS))


def star_is_binary(toks, i):
    prev = toks[i - 1] if i > 0 else None
    if not is_operand_end(prev):
        return False
    if prev.kind != "id":
        # "(struct x *) p" ends in ")" but a cast's "*" is followed by ")".
        return toks[i + 1].text != ")" if i + 1 < len(toks) else False
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    before = toks[i - 2] if i > 1 else None
    if prev.text.endswith("_t") or (before is not None and before.text in TYPE_WORDS):
        return False
    if nxt is None or nxt.text in (")", ",", "*", "const", "restrict", "__restrict"):
        return False
    # "foo *bar" at the start of a statement or parameter is a declaration.
    if before is None or before.text in (";", "{", "}", "(", ","):
        if nxt.kind == "id":
            return False
    return True


def int_mutations(text):
    m = INT_LITERAL.match(text)
    if not m:
        return []
    digits, suffix = m.groups()
    base = 16 if digits[:2].lower() == "0x" else (8 if len(digits) > 1 and digits[0] == "0" else 10)
    value = int(digits, base)

    def fmt(v):
        if base == 16:
            return digits[:2] + ("%X" if any(c in "ABCDEF" for c in digits[2:]) else "%x") % v + suffix
        if base == 8:
            return "0%o" % v + suffix
        return "%d" % v + suffix

    out = [("inc", fmt(value + 1))]
    if value > 0:
        out.append(("dec", fmt(value - 1)))
    return out


def matching(toks, i, open_, close):
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text == open_:
            depth += 1
        elif toks[j].text == close:
            depth -= 1
            if depth == 0:
                return j
    return None


def guard_body(toks, j):
    """Whether the statement starting at token J is a guard's body: return or
    goto, or a block whose last statement is one; and its last token."""
    if j >= len(toks):
        return None
    if toks[j].text in ("return", "goto"):
        k = j
        while k < len(toks) and toks[k].text != ";":
            k += 1
        return k if k < len(toks) else None
    if toks[j].text == "{":
        k = matching(toks, j, "{", "}")
        if k is None or k - j < 3 or toks[k - 1].text != ";":
            return None
        # Back to the start of the block's last statement.
        s = k - 2
        depth = 0
        while s > j:
            t = toks[s].text
            if t in (")", "]", "}"):
                depth += 1
            elif t in ("(", "[", "{"):
                depth -= 1
            elif depth == 0 and t == ";":
                break
            s -= 1
        if toks[s + 1].text in ("return", "goto"):
            return k
    return None


def operator_sites(toks):
    for i, t in enumerate(toks):
        if t.func == "-":
            continue  # file scope: declarations and initialisers of globals
        prev = toks[i - 1] if i > 0 else None
        if t.kind == "op" and t.text in CMP:
            name, rep = CMP[t.text]
            yield i, "cmp." + name, t.start, t.end, rep
        elif t.kind == "num":
            for name, rep in int_mutations(t.text):
                yield i, "const." + name, t.start, t.end, rep
        elif t.kind == "op" and t.text in ARITH:
            binary = star_is_binary(toks, i) if t.text == "*" else (is_operand_end(prev) or len(t.text) == 2)
            if binary:
                name, rep = ARITH[t.text]
                yield i, "arith." + name, t.start, t.end, rep
        elif t.kind == "op" and t.text in LOGIC:
            name, rep = LOGIC[t.text]
            yield i, "logic." + name, t.start, t.end, rep
        elif t.kind == "op" and t.text == "!":
            yield i, "logic.not", t.start, t.end, ""
        elif t.kind == "id" and t.text == "case":
            depth = 0
            for j in range(i + 1, len(toks)):
                x = toks[j].text
                if x in ("(", "["):
                    depth += 1
                elif x in (")", "]"):
                    depth -= 1
                elif x == ":" and depth == 0:
                    yield i, "case", t.start, toks[j].end, ""
                    break
                elif x in (";", "{", "}"):
                    break
        elif t.kind == "id" and t.text == "if" and i + 1 < len(toks) and toks[i + 1].text == "(":
            close = matching(toks, i + 1, "(", ")")
            if close is None:
                continue
            last = guard_body(toks, close + 1)
            if last is None or (last + 1 < len(toks) and toks[last + 1].text == "else"):
                continue
            yield i, "check", toks[i + 1].start, toks[close].end, "(0)"
        elif t.kind == "id" and t.text in ERRNO_NAMES and prev is not None and \
                prev.text in ("-", "case", "==", "!="):
            other = "ERANGE" if t.text == "EINVAL" else "EINVAL"
            yield i, "errno.%s-%s" % (t.text, other), t.start, t.end, other


class Mutant:
    __slots__ = ("id", "path", "func", "op", "line", "start", "end", "replacement", "original")

    @property
    def opclass(self):
        return self.op.split(".")[0]

    def apply(self, text):
        return text[:self.start] + self.replacement + text[self.end:]

    def describe(self):
        return "line %d: %r -> %r" % (self.line, self.original, self.replacement)

    def diff(self, text):
        new = self.apply(text)
        return "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                            "a/" + self.path, "b/" + self.path, n=2))


def normalize(line):
    return " ".join(line.split())


def mutants_of(path, text):
    """Every mutant of TEXT (the file PATH, relative to the tree), in order."""
    masked = mask(text)
    toks = tokenize(masked)
    attribute_functions(toks)
    mlines = masked.split("\n")
    line_starts = [0]
    for line in text.split("\n")[:-1]:
        line_starts.append(line_starts[-1] + len(line) + 1)

    def line_of(offset):
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    seen = {}
    out = []
    for i, op, start, end, rep in operator_sites(toks):
        line = line_of(toks[i].start)
        key_text = normalize(mlines[line - 1])
        h = hashlib.sha1(key_text.encode()).hexdigest()[:8]
        func = toks[i].func
        key = (func, op, h)
        n = seen.get(key, 0)
        seen[key] = n + 1
        m = Mutant()
        m.id = "%s:%s:%s:%s:%d" % (path, func, op, h, n)
        m.path, m.func, m.op, m.line = path, func, op, line
        m.start, m.end, m.replacement, m.original = start, end, rep, text[start:end]
        out.append(m)
    return out


def sample(mutants, max_n, seed):
    """At most MAX_N of MUTANTS, spread over the operator classes: each class
    in turn gives its next mutant in an order fixed by SEED and the ids, so
    the choice does not depend on line numbers or on the other files."""
    if max_n is None or len(mutants) <= max_n:
        return list(mutants)
    by_class = {}
    for m in mutants:
        by_class.setdefault(m.opclass, []).append(m)
    for lst in by_class.values():
        lst.sort(key=lambda m: hashlib.sha1(("%s/%s" % (seed, m.id)).encode()).hexdigest())
    chosen = []
    while len(chosen) < max_n:
        for c in CLASSES:
            if by_class.get(c) and len(chosen) < max_n:
                chosen.append(by_class[c].pop(0))
    order = {m.id: k for k, m in enumerate(mutants)}
    return sorted(chosen, key=lambda m: order[m.id])


# ---------------------------------------------------------------------------
# The data files.


class DataError(Exception):
    pass


def parse_equivalent(text, where="equivalent"):
    """Entries "ID REASON", one a line; a REASON may go on over following
    lines that start with white space; # starts a comment line. Returns
    {id: reason}. Raises DataError for an entry without a reason or twice."""
    entries = {}
    last = None
    for n, raw in enumerate(text.split("\n"), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            last = None if not raw.strip() else last
            continue
        if raw[0].isspace():
            if last is None:
                raise DataError("%s:%d: continuation line without an entry" % (where, n))
            entries[last] += " " + raw.strip()
            continue
        parts = raw.split(None, 1)
        mid = parts[0]
        reason = parts[1].strip() if len(parts) > 1 else ""
        if mid in entries:
            raise DataError("%s:%d: %s listed twice" % (where, n, mid))
        if mid.count(":") < 4:
            raise DataError("%s:%d: %r is not a mutant id (FILE:FUNCTION:OPERATOR:HASH:N)" % (where, n, mid))
        entries[mid] = reason
        last = mid
    for mid, reason in entries.items():
        if len(reason.split()) < 3:
            raise DataError("%s: %s: a reason is mandatory (why no behaviour can change), got %r"
                            % (where, mid, reason))
    return entries


class Target:
    def __init__(self, path, limit, tests):
        self.path, self.limit, self.tests = path, limit, tests


def parse_targets(text, where="targets"):
    """Lines "FILE LIMIT TEST...": LIMIT seconds per mutant ("auto": three
    times the unmutated run, plus 10 s); TEST is meson:NAME (a test of
    tests/meson.build) or pytest:FILE[@K-EXPRESSION]."""
    out = {}
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        f = shlex.split(line)
        if len(f) < 3:
            raise DataError("%s:%d: want FILE LIMIT TEST..." % (where, n))
        limit = None if f[1] == "auto" else float(f[1])
        tests = []
        for t in f[2:]:
            kind, _, arg = t.partition(":")
            if kind not in ("meson", "pytest") or not arg:
                raise DataError("%s:%d: %r is neither meson:NAME nor pytest:FILE[@K]" % (where, n, t))
            if kind == "pytest":
                file, _, k = arg.partition("@")
                tests.append(("pytest", file, k or None))
            else:
                tests.append(("meson", arg, None))
        out[f[0]] = Target(f[0], limit, tests)
    return out


# ---------------------------------------------------------------------------
# The private copy and its build.


def log(msg):
    print(msg, flush=True)


class Workspace:
    def __init__(self, source, workdir, verbose=False, jobs=2, index=0):
        self.source = os.path.abspath(source)
        self.jobs = jobs
        self.workdir = os.path.abspath(workdir)
        self.tree = os.path.join(self.workdir, "src" if index == 0 else "src-%d" % index)
        self.manifest = os.path.join(self.workdir, "manifest" if index == 0 else "manifest-%d" % index)
        self.build = os.path.join(self.tree, "build")
        # The ASan+UBSan build of the same copy, made at the first survivor
        # that needs it and kept, as the plain one, for later runs.
        self.san_build = os.path.join(self.tree, "build-asan")
        self.san_ready = False
        self.san_error = None  # why it could not be set up: not tried again this run
        self.san_tests = {}  # target path -> the tests the ASan phase runs of it
        self.verbose = verbose
        self.objects = None
        self.python = sys.executable

    def sync(self):
        """Make the copy equal the source's tracked and not-ignored files;
        a changed file gets a new mtime so that ninja rebuilds it."""
        files = subprocess.run(["git", "-C", self.source, "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                               check=True, capture_output=True).stdout.decode().split("\0")
        files = sorted({f for f in files if f and os.path.isfile(os.path.join(self.source, f))})
        os.makedirs(self.tree, exist_ok=True)
        manifest = self.manifest
        old = set()
        if os.path.exists(manifest):
            with open(manifest) as fh:
                old = set(fh.read().split("\0")) - {""}
        for f in sorted(old - set(files)):
            try:
                os.unlink(os.path.join(self.tree, f))
            except FileNotFoundError:
                pass
        copied = 0
        for f in files:
            src, dst = os.path.join(self.source, f), os.path.join(self.tree, f)
            if os.path.exists(dst) and filecmp.cmp(src, dst, shallow=False):
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)
            shutil.copymode(src, dst)
            copied += 1
        with open(manifest, "w") as fh:
            fh.write("\0".join(files))
        return copied

    def configure(self, build, options=(), env=None):
        """Set BUILD up, or read its meson.build files again."""
        if not os.path.exists(os.path.join(build, "build.ninja")):
            # No --werror: a mutant that only warns is still a mutant the
            # tests must catch. No slow tests, no man pages: not run here.
            subprocess.run(["meson", "setup", build, "-Dslow_tests=false", "-Dman=disabled"] + list(options),
                           cwd=self.tree, check=True, env=env, stdout=None if self.verbose else subprocess.DEVNULL)
        else:
            # A meson.build that changed since (a new test) is read again
            # now: the introspection below would otherwise describe the old
            # build, without the new test or its sources.
            subprocess.run(["ninja", "-C", build, "build.ninja"], check=True,
                           stdout=None if self.verbose else subprocess.DEVNULL)

    def setup(self):
        self.configure(self.build)
        with open(os.path.join(self.build, "compile_commands.json")) as fh:
            cc = json.load(fh)
        self.objects = {}
        for e in cc:
            src = os.path.relpath(os.path.join(e["directory"], e["file"]), self.tree)
            self.objects.setdefault(src, []).append(e["output"])

    def setup_sanitizer(self):
        """Set up (or read again) the copy's ASan+UBSan build, once a run:
        only a run with a survivor pays for it. Returns an error's text, or
        None."""
        if not self.san_ready and not self.san_error:
            env = dict(os.environ, CC=SANITIZER_CC)
            try:
                self.configure(self.san_build, SANITIZER_OPTIONS, env)
                self.san_ready = True
            except (OSError, subprocess.CalledProcessError):
                self.san_error = "the sanitizer build could not be set up (meson setup %s, CC=%s)" % (
                    self.san_build, SANITIZER_CC)
        return self.san_error

    def ninja(self, targets, timeout=None, build=None):
        r = subprocess.run(["ninja", "-C", build or self.build, "-j", str(self.jobs)] + targets,
                           capture_output=True, timeout=timeout)
        return r.returncode == 0, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")

    def introspect(self, build):
        return json.loads(subprocess.run(["meson", "introspect", "--tests", "--targets", build],
                                         check=True, capture_output=True).stdout)

    def sanitizer_tests(self, target):
        """Those of TARGET's tests that make check's ASan+UBSan phase runs:
        a meson test in one of its suites, an integration file whose meson
        test (integration-NAME for tests/integration/test_NAME.py) is in
        one. The others would add nothing make check sees."""
        if target.path not in self.san_tests:
            suites = {t["name"]: {s.split(":")[-1] for s in t["suite"]}
                      for t in self.introspect(self.san_build)["tests"]}

            def in_phase(name):
                return bool(suites.get(name, set()) & set(SANITIZER_SUITES))
            self.san_tests[target.path] = [
                (kind, name, k) for kind, name, k in target.tests
                if in_phase(name if kind == "meson" else
                            "integration-" + os.path.basename(name)[len("test_"):-len(".py")])]
        return self.san_tests[target.path]

    def test_targets(self, target, tests=None, build=None):
        """Build targets the tests of TARGET (or TESTS of it) need, in the
        plain build or BUILD."""
        build = build or self.build
        out = set()
        intro = self.introspect(build)
        by_id = {t["id"]: t for t in intro["targets"]}
        tests_by_name = {t["name"]: t for t in intro["tests"]}
        # The integration tests' interpreter (the one meson found, with
        # pytest), not necessarily the one running this tool: that of any
        # integration-FILE test (one meson test per file).
        for name in sorted(tests_by_name):
            if name.startswith("integration-"):
                self.python = tests_by_name[name]["cmd"][0]
                break
        for kind, name, _ in target.tests if tests is None else tests:
            if kind == "meson":
                if name not in tests_by_name:
                    raise DataError("%s: no meson test named %r" % (target.path, name))
                t = tests_by_name[name]
                for d in t.get("depends", []):
                    for fn in by_id.get(d, {}).get("filename", []):
                        out.add(os.path.relpath(fn, build))
                exe = t["cmd"][0]
                if exe.startswith(build + os.sep):
                    out.add(os.path.relpath(exe, build))
            else:
                # the daemon, its client, and the program on libacct-client
                # that the charge-slot tests run (ACCT_SLOT_CLIENT, as
                # tests/meson.build's integration_env)
                out.update(("daemon/acctd/acctd", "daemon/acctctl/acctctl", "tests/charge-slot-client"))
                # and the shared modules the integration tests preload
                # (tests/fault-preload.c)
                for t in intro["targets"]:
                    if t["type"] == "shared module":
                        out.update(os.path.relpath(fn, build) for fn in t["filename"])
        return sorted(out)

    def run_tests(self, target, timeout, sanitizer=False):
        """Run TARGET's tests, first failure stops; with SANITIZER, those of
        them that make check's ASan+UBSan phase runs, in the sanitizer build
        and its environment. Returns (verdict, detail): verdict "pass",
        "fail" or "timeout"."""
        deadline = time.monotonic() + timeout if timeout else None
        build = self.san_build if sanitizer else self.build
        tests = self.sanitizer_tests(target) if sanitizer else target.tests
        env = dict(os.environ)
        env.update(ACCTD=os.path.join(build, "daemon/acctd/acctd"),
                   ACCTCTL=os.path.join(build, "daemon/acctctl/acctctl"),
                   ACCT_TEST_DATA=os.path.join(self.tree, "tests/data"),
                   ACCT_SLOT_CLIENT=os.path.join(build, "tests/charge-slot-client"),
                   PYTHONDONTWRITEBYTECODE="1")
        if sanitizer:
            env.update(SANITIZER_ENV)
        meson_names = [name for kind, name, _ in tests if kind == "meson"]
        cmds = []
        if meson_names:
            # The sanitizer's report is in the failing test's log: printed,
            # so that the kill can say what the sanitizer saw.
            cmds.append(("meson " + " ".join(meson_names),
                         ["meson", "test", "-C", build, "--no-rebuild", "--maxfail", "1", "-t", "10"] +
                         (["--print-errorlogs"] if sanitizer else []) + meson_names))
        for kind, name, k in tests:
            if kind == "pytest":
                cmd = [self.python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                       os.path.join(self.tree, name)]
                if k:
                    cmd += ["-k", k]
                cmds.append(("pytest " + name + ("@" + k if k else ""), cmd))
        for label, cmd in cmds:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return "timeout", label
            p = subprocess.Popen(cmd, cwd=self.tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            try:
                out, _ = p.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                kill_tree(p.pid)
                p.communicate()
                return "timeout", label
            if p.returncode != 0:
                text = out.decode(errors="replace")
                failing = re.findall(r"^\s*\d+/\d+\s+(?:\S+ / )?(\S+)\s+(?:FAIL|ERROR|TIMEOUT)", text, re.M)
                if failing:
                    # (a failure is named again in meson's summary of them)
                    label = "meson " + " ".join(dict.fromkeys(failing))
                report = SANITIZER_REPORT.search(text) if sanitizer else None
                if report:
                    label += " (%s)" % report.group().strip()
                return "fail", label + "\n" + text[-3000:]
        return "pass", ""


def kill_tree(pid):
    """SIGKILL PID and every process below it. meson test starts each test in
    a session of its own, so killing meson's process group would leave a
    looping mutant running: the tree is collected from /proc first (children
    are reparented as soon as their parent dies), stopped, then killed."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children.get(p, [])
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for p in tree:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------------------
# The run.


class SanitizerRerun:
    """The sanitizer re-run of one file's survivors (SANITIZER_OPTIONS,
    above). Before the first, the file's tests that make check's ASan+UBSan
    phase runs must pass unmutated in the sanitizer build (once, in the copy
    of the worker that found the survivor); their time sets the limit, as
    the plain run's does. A failure kills the mutant; a timeout does not:
    the plain build's tests ended in time, so it says only that the
    sanitizer build is slower."""

    def __init__(self, target, text):
        self.target, self.text = target, text
        self.lock = threading.Lock()
        self.limit = None    # seconds a re-run may take, once the baseline passed
        self.error = None    # why survivors are not re-run, if so
        self.runs = 0        # survivors re-run
        self.seconds = 0.0   # all it cost: set-ups, builds, the baseline, the re-runs

    def rerun(self, ws, path, mutated):
        """Run the survivor whose text MUTATED is at PATH in WS's copy in the
        sanitizer build. Returns (killed, how): how is the kill, or why the
        survivor stands without a verdict ("" if it passed)."""
        t0 = time.monotonic()
        try:
            return self._rerun(ws, path, mutated)
        finally:
            with self.lock:
                self.seconds += time.monotonic() - t0

    def _rerun(self, ws, path, mutated):
        error = ws.setup_sanitizer()
        if error:
            with self.lock:
                self.error = self.error or error
            return False, error
        tests = ws.sanitizer_tests(self.target)
        if not tests:
            return False, "none of its tests runs in make check's ASan+UBSan phase"
        build_targets = ws.test_targets(self.target, tests, ws.san_build)
        with self.lock:
            if self.limit is None and self.error is None:
                self.baseline(ws, path, mutated, build_targets)
            if self.error:
                return False, self.error.split("\n")[0]
            self.runs += 1
        ok, _ = ws.ninja(build_targets, build=ws.san_build)
        if not ok:
            return False, "it does not build in the sanitizer build"
        verdict, detail = ws.run_tests(self.target, self.limit, sanitizer=True)
        if verdict == "fail":
            return True, "sanitizer build: " + detail.split("\n")[0]
        return False, "its sanitizer re-run timed out (%s)" % detail if verdict == "timeout" else ""

    def baseline(self, ws, path, mutated, build_targets):
        """The unmutated tests in WS's sanitizer build, the mutant put back
        after; sets limit, or error."""
        with open(path, "w") as fh:
            fh.write(self.text)
        try:
            ok, out = ws.ninja(build_targets, build=ws.san_build)
            if not ok:
                self.error = "the unmutated tree does not build with the sanitizers:\n" + out[-3000:]
                return
            b0 = time.monotonic()
            verdict, detail = ws.run_tests(self.target, None, sanitizer=True)
            base = time.monotonic() - b0
            if verdict != "pass":
                self.error = "the sanitizer build fails its tests unmutated (%s)" % detail[-3000:]
                return
            self.limit = 3 * base + 10
            log("  %s: survivors run again in the sanitizer build: tests %s took %.1f s unmutated there, "
                "limit %.0f s" % (self.target.path, " ".join(n for _, n, _ in ws.sanitizer_tests(self.target)),
                                  base, self.limit))
        finally:
            if self.error:
                log("  %s: no sanitizer re-run: %s" % (self.target.path, self.error))
            with open(path, "w") as fh:
                fh.write(mutated)

    def line(self):
        return "%-34s %3d survivors run again in %s%s" % (
            self.target.path, self.runs, fmt_time(self.seconds),
            "  (not run: %s)" % self.error.split("\n")[0] if self.error else "")


class FileResult:
    def __init__(self, path):
        self.path = path
        self.mutants = 0
        self.stillborn = []
        self.killed = []      # (mutant, how)
        self.survived = []
        self.equivalent = []
        self.wall = 0.0
        self.error = None
        self.sanitizer = None  # its SanitizerRerun, where a survivor needed one

    @property
    def denominator(self):
        return self.mutants - len(self.stillborn) - len(self.equivalent)

    @property
    def rate(self):
        d = self.denominator
        return 1.0 if d <= 0 else len(self.killed) / d

    def line(self):
        by = ["%d by %s" % (n, what) for what, n in
              (("timeout", sum(1 for _, how in self.killed if how.startswith("timeout"))),
               ("sanitizer", sum(1 for _, how in self.killed if how.startswith("sanitizer"))))
              if n]
        return ("%-34s %4d mutants %3d stillborn %4d killed%s %3d survived %3d equivalent  kill rate %5.1f%%  %s"
                % (self.path, self.mutants, len(self.stillborn), len(self.killed),
                   " (%s)" % ", ".join(by) if by else "", len(self.survived),
                   len(self.equivalent), 100 * self.rate, fmt_time(self.wall)))


def fmt_time(s):
    return "%dm%02ds" % (s // 60, s % 60)


def run_file(wss, target, text, chosen, equivalent, args):
    """Run CHOSEN, mutants of TARGET's file whose unmutated text is TEXT,
    spread over the workspaces WSS (one thread each)."""
    res = FileResult(target.path)
    t0 = time.monotonic()
    prepared = []
    for ws in wss:
        objs = ws.objects.get(target.path)
        if not objs:
            res.error = "no object is built from %s" % target.path
            return res
        build_targets = ws.test_targets(target)
        ok, out = ws.ninja(build_targets)
        if not ok:
            res.error = "the unmutated tree does not build:\n" + out[-3000:]
            return res
        prepared.append((ws, objs, build_targets))
    b0 = time.monotonic()
    verdict, detail = wss[0].run_tests(target, None)
    base = time.monotonic() - b0
    if verdict != "pass":
        res.error = "the unmutated tree fails its tests (%s)" % detail[-3000:]
        return res
    limit = target.limit if target.limit else 3 * base + 10
    if args.limit:
        limit = args.limit
    log("%s: %d mutants, tests %s took %.1f s unmutated, limit %.0f s a mutant"
        % (target.path, len(chosen), " ".join(n if k == "meson" else n + ("@" + kk if kk else "")
                                              for k, n, kk in target.tests), base, limit))
    outcome = [None] * len(chosen)
    queue = []
    for k, m in enumerate(chosen):
        if m.id in equivalent and not args.check_equivalent:
            outcome[k] = ("equivalent", "")
            log("  [%d/%d] equivalent %s" % (k + 1, len(chosen), m.id))
        else:
            queue.append(k)
    lock = threading.Lock()
    san = None if args.no_sanitizer else SanitizerRerun(target, text)

    def worker(ws, objs, build_targets):
        path = os.path.join(ws.tree, target.path)
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    k = queue.pop(0)
                m = chosen[k]
                with open(path, "w") as fh:
                    fh.write(m.apply(text))
                ok, _ = ws.ninja(objs)
                if ok:
                    ok, _ = ws.ninja(build_targets)
                note = ""
                if not ok:
                    kind, how = "stillborn", ""
                else:
                    verdict, detail = ws.run_tests(target, limit)
                    killed = verdict != "pass"
                    how = ("timeout in " if verdict == "timeout" else "") + detail.split("\n")[0]
                    if not killed and san is not None:
                        # Only survivors pay for the sanitizer build: a few a run.
                        killed, how = san.rerun(ws, path, m.apply(text))
                        note = "" if killed or not how else "  [no sanitizer verdict: %s]" % how
                    if killed:
                        kind = "killed"
                    else:
                        kind, how = ("equivalent", "") if m.id in equivalent else ("survived", "")
                with lock:
                    outcome[k] = (kind, how)
                    if kind == "killed" and m.id in equivalent:
                        log("  warning: %s is listed as equivalent but the tests kill it" % m.id)
                    shown = {"killed": "killed by " + how, "survived": "SURVIVED",
                             "equivalent": "equivalent (survived)"}.get(kind, kind)
                    log("  [%d/%d] %s %s  (%s)%s" % (k + 1, len(chosen), shown, m.id, m.describe(), note))
        finally:
            with open(path, "w") as fh:
                fh.write(text)

    threads = [threading.Thread(target=worker, args=p) for p in prepared]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m, (kind, how) in zip(chosen, outcome):
        res.mutants += 1
        if kind == "stillborn":
            res.stillborn.append(m)
        elif kind == "killed":
            res.killed.append((m, how))
        elif kind == "survived":
            res.survived.append(m)
        else:
            res.equivalent.append(m)
    res.wall = time.monotonic() - t0
    if san is not None and (san.runs or san.error):
        res.sanitizer = san
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="mutate.py",
        description="The mutation check (docs/testing.md): plants one-line mistakes in C files, one at a "
                    "time, in a private copy of the tree, and reports which the tests catch.")
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="the tree to check (default: this one)")
    ap.add_argument("--workdir", help="private copy and build (default: SOURCE/build-mutate)")
    ap.add_argument("--files", nargs="+", metavar="FILE",
                    help="files to mutate, relative to SOURCE (default: all of tools/mutate/targets)")
    ap.add_argument("--max-per-file", type=int, default=40, metavar="N",
                    help="sample at most N mutants a file, spread over the operators (default 40)")
    ap.add_argument("--all", action="store_true", help="every mutant, no sampling")
    ap.add_argument("--seed", default="0", help="the sample's seed (default 0)")
    ap.add_argument("--only", action="append", metavar="ID", help="run only this mutant (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the chosen mutants and exit, running nothing")
    ap.add_argument("--diff", action="store_true", help="with --list: print each mutant's diff")
    ap.add_argument("--limit", type=float, help="seconds a mutant's tests may take (default: the targets file)")
    ap.add_argument("--check-equivalent", action="store_true",
                    help="run the mutants listed as equivalent too (a listed one that is killed is reported)")
    ap.add_argument("--targets", help="the file -> tests table (default: SOURCE/tools/mutate/targets, "
                    "else this tool's)")
    ap.add_argument("--equivalent", help="the equivalent-mutant list (default: SOURCE/tools/mutate/equivalent, "
                    "else this tool's)")
    ap.add_argument("--no-sanitizer", action="store_true",
                    help="do not run the plain build's survivors again in an ASan+UBSan build of the copy "
                    "(as make check's sanitizer phase: clang, its suites and options), where a failure "
                    "counts as \"killed by sanitizer build\"")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="ninja's parallel jobs (default 2)")
    ap.add_argument("-w", "--workers", type=int, default=1,
                    help="mutants run at once, each in a copy of its own (default 1)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # "--list | head" ends quietly

    source = os.path.abspath(args.source)
    for attr, own in (("targets", TARGETS_FILE), ("equivalent", EQUIVALENT_FILE)):
        if getattr(args, attr) is None:
            theirs = os.path.join(source, "tools/mutate", os.path.basename(own))
            setattr(args, attr, theirs if os.path.exists(theirs) else own)
    try:
        with open(args.targets) as fh:
            targets = parse_targets(fh.read(), args.targets)
        with open(args.equivalent) as fh:
            equivalent = parse_equivalent(fh.read(), args.equivalent)
    except DataError as e:
        print("mutate: %s" % e, file=sys.stderr)
        return 2
    files = []
    for f in args.files or sorted(targets):
        files += [x for x in f.split(",") if x]
    for f in files:
        if f not in targets:
            print("mutate: %s: not in %s (which tests run for it?)" % (f, args.targets), file=sys.stderr)
            return 2

    plan = []
    all_ids = set()
    for f in files:
        with open(os.path.join(source, f)) as fh:
            text = fh.read()
        ms = mutants_of(f, text)
        all_ids.update(m.id for m in ms)
        if args.only:
            chosen = [m for m in ms if m.id in args.only]
        else:
            chosen = ms if args.all else sample(ms, args.max_per_file, args.seed)
        plan.append((targets[f], text, ms, chosen))
    if args.only:
        missing = set(args.only) - all_ids
        if missing:
            print("mutate: no such mutant: %s" % " ".join(sorted(missing)), file=sys.stderr)
            return 2
    stale = sorted(i for i in equivalent if i.split(":")[0] in files and i not in all_ids)

    if args.list:
        for target, text, ms, chosen in plan:
            print("# %s: %d mutants, %d chosen" % (target.path, len(ms), len(chosen)))
            for m in chosen:
                mark = "  [equivalent]" if m.id in equivalent else ""
                print("%s  %s%s" % (m.id, m.describe(), mark))
                if args.diff:
                    print(m.diff(text), end="")
        for i in stale:
            print("stale equivalent entry (no such mutant): %s" % i)
        return 0

    t0 = time.monotonic()
    wss = []
    for i in range(max(1, args.workers)):
        ws = Workspace(source, args.workdir or os.path.join(source, "build-mutate"), args.verbose, args.jobs, i)
        n = ws.sync()
        log("mutate: %s copied to %s (%d files changed)" % (source, ws.tree, n))
        ws.setup()
        wss.append(ws)
    results = []
    for target, text, ms, chosen in plan:
        results.append((run_file(wss, target, text, chosen, equivalent, args), text))

    print("\n== Survivors")
    for res, text in results:
        for m in res.survived:
            print("\n%s  (%s)" % (m.id, m.describe()))
            print(m.diff(text), end="")
    print("\n== Equivalent (tools/mutate/equivalent)")
    for res, _ in results:
        for m in res.equivalent:
            print("%s\n    %s" % (m.id, equivalent[m.id]))
    failed = bool(stale)
    if stale:
        print("\n== Stale equivalent entries (no such mutant; remove or update them)")
        for i in stale:
            print(i)
    print("\n== Figures (kill rate = killed / (mutants - stillborn - equivalent))")
    total = FileResult("total")
    for res, _ in results:
        if res.error:
            print("%s: ERROR: %s" % (res.path, res.error))
            failed = True
            continue
        print(res.line())
        total.mutants += res.mutants
        total.stillborn += res.stillborn
        total.killed += res.killed
        total.survived += res.survived
        total.equivalent += res.equivalent
        if res.survived or res.rate < KILL_RATE_MIN:
            failed = True
    total.wall = time.monotonic() - t0
    print(total.line())
    sanitized = [res.sanitizer for res, _ in results if res.sanitizer]
    if sanitized:
        print("\n== Sanitizer re-runs (the plain build's survivors, in an ASan+UBSan build; wall time)")
        for san in sanitized:
            print(san.line())
    if total.rate < KILL_RATE_MIN:
        failed = True
    if failed:
        print("\nmutate: FAILED: a survivor is neither killed nor listed as equivalent with a reason, "
              "a kill rate is under %d%%, an equivalent entry is stale or a file could not be checked"
              % (100 * KILL_RATE_MIN))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
