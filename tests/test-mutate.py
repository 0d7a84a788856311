#!/usr/bin/python3
"""test-mutate.py - the mutation check's own tool (tools/mutate/mutate.py)
makes the mutants it promises, and only those: each operator on a small C
snippet, nothing inside comments, strings or preprocessor lines, ids that
survive lines moving, and an equivalent list whose reasons are mandatory;
its sanitizer re-run is make check's ASan+UBSan phase (the Makefile's), and
on a tree of one C file it kills a mutant only that build sees while a true
survivor survives (a few seconds: two small builds). The mutation run itself
is `make mutate`, not part of `make check`."""
import contextlib
import importlib.util
import io
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("mutate", os.path.join(ROOT, "tools/mutate/mutate.py"))
mutate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutate)

SNIPPET = """\
/* snippet.c - a < b in a comment; case 3: here is no label */
#include <errno.h>
#define LIMIT(a) ((a) < 10 && (a) != 0)

static const int table[] = { 1, 2 };

int f(int a, int b, const char *s)
{
        int *p = &a;
        if (a < 0)
                return -EINVAL;
        if (b >= 4 || !s)
                goto fail;
        switch (*p) {
        case 7:
                return a * b + 1;
        }
        if (a == b) {
                b = 2;
                return -ERANGE;
        }
        if (b != 0)
                a = b / 2; /* a == b here? */
        else
                return 0;
        (void) "x < y == z";
        return a - b;
fail:
        return -ENOENT;
}
"""


def muts(text, path="x.c"):
    return mutate.mutants_of(path, text)


def pairs(ms):
    return sorted((m.line, m.op, m.original, m.replacement) for m in ms)


class Operators(unittest.TestCase):
    def setUp(self):
        self.ms = muts(SNIPPET)
        self.by = pairs(self.ms)

    def test_each_operator(self):
        want = [
            (5, "const.inc", "1", "2"), (5, "const.dec", "1", "0"), (5, "const.inc", "2", "3"),
            (5, "const.dec", "2", "1"),
            (10, "cmp.lt-le", "<", "<="), (10, "const.inc", "0", "1"), (10, "check", "(a < 0)", "(0)"),
            (11, "errno.EINVAL-ERANGE", "EINVAL", "ERANGE"),
            (12, "cmp.ge-gt", ">=", ">"), (12, "const.dec", "4", "3"), (12, "const.inc", "4", "5"),
            (12, "logic.or-and", "||", "&&"), (12, "logic.not", "!", ""), (12, "check", "(b >= 4 || !s)", "(0)"),
            (15, "case", "case 7:", ""), (15, "const.inc", "7", "8"), (15, "const.dec", "7", "6"),
            (16, "arith.mul-div", "*", "/"), (16, "arith.add-sub", "+", "-"),
            (16, "const.dec", "1", "0"), (16, "const.inc", "1", "2"),
            (18, "cmp.eq-ne", "==", "!="), (18, "check", "(a == b)", "(0)"),
            (19, "const.inc", "2", "3"), (19, "const.dec", "2", "1"),
            (20, "errno.ERANGE-EINVAL", "ERANGE", "EINVAL"),
            (22, "cmp.ne-eq", "!=", "=="), (22, "const.inc", "0", "1"),
            (23, "arith.div-mul", "/", "*"), (23, "const.inc", "2", "3"), (23, "const.dec", "2", "1"),
            (25, "const.inc", "0", "1"),
            (27, "arith.sub-add", "-", "+"),
            (29, "errno.ENOENT-EINVAL", "ENOENT", "EINVAL"),
        ]
        self.assertEqual(self.by, sorted(want))

    def test_not_in_comments_strings_or_preprocessor(self):
        lines = {m.line for m in self.ms}
        # 1: comment, 3: #define, 26: a string, 9: "int *p" is a
        # declaration, 22's comment: the "==" in it.
        for n in (1, 2, 3, 9, 26):
            self.assertNotIn(n, lines)
        self.assertEqual([m.op for m in self.ms if m.line == 22 and m.op.startswith("cmp")], ["cmp.ne-eq"])

    def test_preprocessor_lines_inside_a_function(self):
        text = "int f(int a)\n{\n#if A > 2 && \\\n    B < 3\n\ta = 1;\n#endif\n\treturn a;\n}\n"
        self.assertEqual(pairs(muts(text)), [(5, "const.dec", "1", "0"), (5, "const.inc", "1", "2")])

    def test_guard_with_else_is_not_a_check(self):
        self.assertFalse([m for m in self.ms if m.op == "check" and m.line == 22])

    def test_apply_changes_only_the_span(self):
        for m in self.ms:
            new = m.apply(SNIPPET)
            self.assertEqual(new[:m.start], SNIPPET[:m.start])
            self.assertEqual(new[m.start + len(m.replacement):], SNIPPET[m.end:])
            self.assertIn("-" + SNIPPET.split("\n")[m.line - 1], m.diff(SNIPPET))

    def test_functions_named(self):
        # Tables are mutated too (a wrong entry is a mistake), named by the object.
        self.assertEqual({m.func for m in self.ms}, {"f", "table"})
        self.assertFalse(muts("static int g = 3;\nint h(void);\n"))


class Ids(unittest.TestCase):
    def test_unique(self):
        ids = [m.id for m in muts(SNIPPET)]
        self.assertEqual(len(ids), len(set(ids)))

    def test_stable_when_lines_move_and_comments_change(self):
        before = {m.id for m in muts(SNIPPET)}
        moved = SNIPPET.replace("#include <errno.h>\n", "#include <errno.h>\n\n/* more */\nstatic int g;\n\n")
        moved = moved.replace("/* a == b here? */", "/* another comment */")
        after = {m.id for m in muts(moved)}
        self.assertEqual(before, after)

    def test_unrelated_edit_keeps_other_ids(self):
        edited = SNIPPET.replace("return a - b;", "return a - b - 1;")
        before = {m.id for m in muts(SNIPPET) if m.line != 27}
        after = {m.id for m in muts(edited) if m.line != 27}
        self.assertEqual(before, after)
        self.assertNotEqual({m.id for m in muts(SNIPPET)}, {m.id for m in muts(edited)})

    def test_equal_lines_counted(self):
        text = "int f(int a)\n{\n\tif (a < 0)\n\t\treturn 1;\n\tif (a < 0)\n\t\treturn 2;\n\treturn 0;\n}\n"
        lt = sorted(m.id for m in muts(text) if m.op == "cmp.lt-le")
        self.assertEqual([i.rsplit(":", 1)[1] for i in lt], ["0", "1"])
        self.assertTrue(all(i.startswith("x.c:f:cmp.lt-le:") for i in lt))


class Sampling(unittest.TestCase):
    def test_deterministic_and_spread(self):
        ms = muts(SNIPPET)
        a = mutate.sample(ms, 7, "0")
        b = mutate.sample(list(reversed(ms)), 7, "0")
        self.assertEqual({m.id for m in a}, {m.id for m in b})
        self.assertEqual(len({m.opclass for m in a}), 7)
        self.assertEqual(len(mutate.sample(ms, 1000, "0")), len(ms))


class EquivalentList(unittest.TestCase):
    def test_parsed(self):
        e = mutate.parse_equivalent("# comment\n\nx.c:f:cmp.lt-le:0123abcd:0  a equals 0 there, both\n"
                                    "    branches return the same value\n")
        self.assertEqual(e, {"x.c:f:cmp.lt-le:0123abcd:0":
                             "a equals 0 there, both branches return the same value"})

    def test_reason_required(self):
        with self.assertRaises(mutate.DataError):
            mutate.parse_equivalent("x.c:f:cmp.lt-le:0123abcd:0\n")
        with self.assertRaises(mutate.DataError):
            mutate.parse_equivalent("x.c:f:cmp.lt-le:0123abcd:0 untested\n")

    def test_duplicate_and_malformed(self):
        with self.assertRaises(mutate.DataError):
            mutate.parse_equivalent("x.c:f:cmp.lt-le:0123abcd:0 a b c\nx.c:f:cmp.lt-le:0123abcd:0 a b c\n")
        with self.assertRaises(mutate.DataError):
            mutate.parse_equivalent("not-an-id because of reasons\n")

    def test_project_files_parse(self):
        with open(os.path.join(ROOT, "tools/mutate/equivalent")) as fh:
            mutate.parse_equivalent(fh.read())
        with open(os.path.join(ROOT, "tools/mutate/targets")) as fh:
            targets = mutate.parse_targets(fh.read())
        for path in targets:
            self.assertTrue(os.path.exists(os.path.join(ROOT, path)), path)


class SanitizerPhase(unittest.TestCase):
    """The re-run's build and environment are make check's ASan+UBSan
    phase's: a change to the Makefile's must be made in mutate.py too."""

    def setUp(self):
        with open(os.path.join(ROOT, "Makefile")) as fh:
            self.make = fh.read()

    def variable(self, name):
        m = re.search(r"^%s\s*:?=\s*(.*)$" % name, self.make, re.M)
        self.assertIsNotNone(m, name)
        return m.group(1).strip()

    def test_same_as_make_check(self):
        self.assertEqual(self.variable("SANITIZE_C_ARGS"), mutate.SANITIZER_C_ARGS)
        self.assertEqual(self.variable("ASAN_SUITES").split(), list(mutate.SANITIZER_SUITES))
        self.assertEqual(self.variable("ASAN_RUN"), " ".join("%s=%s" % kv for kv in mutate.SANITIZER_ENV.items()))
        setup = re.search(r"^build-asan/build\.ninja:\n\t((?:[^\n]*\\\n)*[^\n]*)", self.make, re.M).group(1)
        self.assertIn("CC=%s meson setup build-asan" % mutate.SANITIZER_CC, setup)
        for opt in mutate.SANITIZER_OPTIONS:
            self.assertIn(opt.replace(mutate.SANITIZER_C_ARGS, '"$(SANITIZE_C_ARGS)"'), setup)


# A tree of one C file for the whole run: sum() copies its input into a
# buffer of n * sizeof(int) bytes. Made malloc(sizeof(int) / n), the 16 bytes
# of the test's 4 ints land in glibc's smallest chunk (24 usable bytes): the
# plain build's test passes, ASan reports a heap-buffer-overflow. The guard
# of a malloc() that the test never fails is a true survivor in both.
FIXTURE = {
    "meson.build": "project('fixture', 'c')\n"
                   "test('sum', executable('test-sum', 'test-sum.c', 'sum.c'), suite : 'unit')\n",
    "meson_options.txt": "option('slow_tests', type : 'boolean', value : true)\n"
                         "option('man', type : 'feature', value : 'auto')\n",
    "sum.c": "#include <stdlib.h>\n#include <string.h>\n\n"
             "int sum(const int *v, int n)\n{\n"
             "\tint *copy = malloc(sizeof(*copy) * n);\n"
             "\tif (!copy)\n\t\treturn -1;\n"
             "\tmemcpy(copy, v, n * sizeof(*copy));\n"
             "\tint s = 0;\n\tfor (int i = 0; i < n; i++)\n\t\ts += copy[i];\n"
             "\tfree(copy);\n\treturn s;\n}\n",
    "test-sum.c": "int sum(const int *v, int n);\n\n"
                  "int main(void)\n{\n\tstatic const int v[] = { 1, 2, 3, 4 };\n"
                  "\treturn sum(v, 4) == 10 ? 0 : 1;\n}\n",
    "tools/mutate/targets": "sum.c auto meson:sum\n",
    "tools/mutate/equivalent": "",
}


@unittest.skipUnless(all(shutil.which(p) for p in ("git", "meson", "ninja", "cc", mutate.SANITIZER_CC)),
                     "needs git, meson, ninja, cc and %s" % mutate.SANITIZER_CC)
class SanitizerRerun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # One tree and work directory for both tests: the second run's
        # builds are incremental, as make mutate's are.
        cls.tmp = tempfile.TemporaryDirectory(prefix="test-mutate-")
        cls.src = os.path.join(cls.tmp.name, "src")
        for path, text in FIXTURE.items():
            os.makedirs(os.path.dirname(os.path.join(cls.src, path)), exist_ok=True)
            with open(os.path.join(cls.src, path), "w") as fh:
                fh.write(text)
        subprocess.run(["git", "init", "-q", cls.src], check=True)  # the copy is of git's files
        ms = {(m.line, m.op): m.id for m in mutate.mutants_of("sum.c", FIXTURE["sum.c"])}
        cls.ub, cls.survivor = ms[(6, "arith.mul-div")], ms[(7, "check")]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_fixture(self, *extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = mutate.main(["--source", self.src, "--workdir", os.path.join(self.tmp.name, "work"),
                              "--files", "sum.c", "--only", self.ub, "--only", self.survivor, "-j", "1"] + list(extra))
        return rc, out.getvalue()

    def test_ub_killed_by_sanitizer_true_survivor_survives(self):
        rc, out = self.run_fixture()
        self.assertEqual(rc, 1, out)  # the true survivor fails the run
        self.assertRegex(out, r"killed by sanitizer build: meson sum \(ERROR: AddressSanitizer: "
                              r"heap-buffer-overflow\) %s" % re.escape(self.ub))
        self.assertIn("SURVIVED " + self.survivor, out)
        self.assertRegex(out, r"sum\.c +2 mutants +0 stillborn +1 killed \(1 by sanitizer\) +1 survived")
        self.assertRegex(out, r"== Sanitizer re-runs.*\nsum\.c +2 survivors run again in ")

    def test_no_sanitizer(self):
        rc, out = self.run_fixture("--no-sanitizer")
        self.assertEqual(rc, 1, out)
        self.assertIn("SURVIVED " + self.ub, out)
        self.assertIn("SURVIVED " + self.survivor, out)
        self.assertNotIn("Sanitizer re-runs", out)

if __name__ == "__main__":
    unittest.main(verbosity=1)
