/* test-name-escape.c - unit tests of the served text of cgroup names
 * (lib/basic/name-escape.h): UTF-8 validity as RFC 3629 has it, both
 * escaping modes on names a hostile user can make (text mode: C0, DEL, C1
 * and bidi controls), cutting on a character boundary, and the inverse that
 * lookups use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "name-escape.h"
#include "util.h"

static void test_utf8_char_len(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} cases[] = {
		{ "a", 1 },
		{ "\x7f", 1 },
		{ "\xc3\xa9", 2 },         /* é */
		{ "\xc2\x80", 2 },         /* U+0080, a C1 control: valid UTF-8 */
		{ "\xe2\x9c\x93", 3 },     /* ✓ */
		{ "\xef\xbf\xbf", 3 },     /* U+FFFF */
		{ "\xf0\x9f\x90\xa7", 4 }, /* 🐧 */
		{ "\xf4\x8f\xbf\xbf", 4 }, /* U+10FFFF */
		{ "\xff", 0 },
		{ "\xfe", 0 },
		{ "\x80", 0 },             /* a continuation byte alone */
		{ "\xbf", 0 },
		{ "\xc0\xaf", 0 },         /* overlong '/' */
		{ "\xc1\xbf", 0 },         /* overlong */
		{ "\xe0\x80\xaf", 0 },     /* overlong '/' */
		{ "\xe0\x9f\xbf", 0 },     /* overlong */
		{ "\xf0\x8f\xbf\xbf", 0 }, /* overlong */
		{ "\xed\xa0\x80", 0 },     /* surrogate U+D800 */
		{ "\xed\xbf\xbf", 0 },     /* surrogate U+DFFF */
		{ "\xf4\x90\x80\x80", 0 }, /* U+110000 */
		{ "\xf5\x80\x80\x80", 0 },
		{ "\xc3", 0 },             /* cut short by the NUL */
		{ "\xe2\x9c", 0 },
		{ "\xf0\x9f\x90", 0 },
		{ "\xc3\x41", 0 },         /* followed by ASCII */
		{ "\xe2\x9c\xc3\xa9", 0 },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		size_t n = strlen(cases[i].s);
		assert_int_equal(utf8_char_len(cases[i].s, n), cases[i].len);
		/* a NUL-terminated string may be passed with an unknown length */
		assert_int_equal(utf8_char_len(cases[i].s, SIZE_MAX), cases[i].len);
	}
	/* a length that cuts the character */
	assert_int_equal(utf8_char_len("\xe2\x9c\x93", 2), 0);
	assert_int_equal(utf8_char_len("\xf0\x9f\x90\xa7", 3), 0);
	assert_int_equal(utf8_char_len("a", 0), 0);
}

struct escape_case {
	const char *raw, *utf8, *terminal;
};

/* Names as a hostile or merely unusual user makes them, and what each mode
 * serves. */
static const struct escape_case escape_cases[] = {
	{ "/", "/", "/" },
	{ "/system.slice/a.service", "/system.slice/a.service", "/system.slice/a.service" },
	/* systemd's escapes are literal backslashes: kept as they are */
	{ "/machine-qemu\\x2d1\\x2dvm.scope", "/machine-qemu\\x2d1\\x2dvm.scope", "/machine-qemu\\x2d1\\x2dvm.scope" },
	{ "/a\\b\\\\c", "/a\\b\\\\c", "/a\\b\\\\c" },
	{ "/\xc3\xbc-\xe2\x9c\x93-\xf0\x9f\x90\xa7", "/\xc3\xbc-\xe2\x9c\x93-\xf0\x9f\x90\xa7",
	  "/\xc3\xbc-\xe2\x9c\x93-\xf0\x9f\x90\xa7" },
	{ "/bad-\xff\xfe.service", "/bad-\\xff\\xfe.service", "/bad-\\xff\\xfe.service" },
	{ "/\x80", "/\\x80", "/\\x80" },
	{ "/\xc0\xaf", "/\\xc0\\xaf", "/\\xc0\\xaf" },
	{ "/\xed\xa0\x80", "/\\xed\\xa0\\x80", "/\\xed\\xa0\\x80" },
	/* a character cut short, then a valid one */
	{ "/\xe2\x9c\xc3\xa9", "/\\xe2\\x9c\xc3\xa9", "/\\xe2\\x9c\xc3\xa9" },
	{ "/x\xe2\x9c", "/x\\xe2\\x9c", "/x\\xe2\\x9c" },
	/* controls: kept in JSON (which escapes them itself), escaped for a terminal */
	{ "/evil\x1b]0;owned\x07\x1b[2J", "/evil\x1b]0;owned\x07\x1b[2J", "/evil\\x1b]0;owned\\x07\\x1b[2J" },
	{ "/tab\there", "/tab\there", "/tab\\x09here" },
	{ "/del\x7f", "/del\x7f", "/del\\x7f" },
	{ "/c1\xc2\x9b" "31m", "/c1\xc2\x9b" "31m", "/c1\\xc2\\x9b31m" },
	{ "/c1-first\xc2\x80-last\xc2\x9f", "/c1-first\xc2\x80-last\xc2\x9f", "/c1-first\\xc2\\x80-last\\xc2\\x9f" },
	/* U+00A0 is the first character after C1: printable */
	{ "/nbsp\xc2\xa0", "/nbsp\xc2\xa0", "/nbsp\xc2\xa0" },
	/* a stray c2 is an invalid byte, not a C1 */
	{ "/\xc2", "/\\xc2", "/\\xc2" },
	/* bidi controls (issue 27 item 6): U+202E would show "/evilexe.doc" */
	{ "/evil\xe2\x80\xae" "cod.exe", "/evil\xe2\x80\xae" "cod.exe", "/evil\\xe2\\x80\\xaecod.exe" },
	{ "/alm\xd8\x9c", "/alm\xd8\x9c", "/alm\\xd8\\x9c" },                            /* U+061C */
	{ "/lrm\xe2\x80\x8e\xe2\x80\x8f", "/lrm\xe2\x80\x8e\xe2\x80\x8f", "/lrm\\xe2\\x80\\x8e\\xe2\\x80\\x8f" },
	{ "/lre\xe2\x80\xaa", "/lre\xe2\x80\xaa", "/lre\\xe2\\x80\\xaa" },                 /* U+202A */
	{ "/lri\xe2\x81\xa6-pdi\xe2\x81\xa9", "/lri\xe2\x81\xa6-pdi\xe2\x81\xa9",
	  "/lri\\xe2\\x81\\xa6-pdi\\xe2\\x81\\xa9" },                                     /* U+2066, U+2069 */
	/* their neighbours pass: U+061B, U+200D (ZWJ), U+2029, U+202F, U+2065,
	 * U+206A */
	{ "/ok\xd8\x9b\xe2\x80\x8d\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa",
	  "/ok\xd8\x9b\xe2\x80\x8d\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa",
	  "/ok\xd8\x9b\xe2\x80\x8d\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa" },
	/* a bidi control cut short is bytes that are not UTF-8, in both modes */
	{ "/cut\xe2\x80", "/cut\\xe2\\x80", "/cut\\xe2\\x80" },
};

static void test_escape(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(escape_cases); i++) {
		const struct escape_case *c = &escape_cases[i];
		_cleanup_free_ char *u = name_escape(c->raw, NAME_ESCAPE_UTF8);
		_cleanup_free_ char *t = name_escape(c->raw, NAME_ESCAPE_TEXT);
		size_t n = strlen(c->raw);

		assert_non_null(u);
		assert_non_null(t);
		assert_string_equal(u, c->utf8);
		assert_string_equal(t, c->terminal);
		/* the span is what comes out unchanged */
		size_t span = name_escape_span(c->raw, n, NAME_ESCAPE_UTF8);
		assert_true(span <= n);
		assert_int_equal(span == n, strcmp(u, c->raw) == 0);
		assert_memory_equal(u, c->raw, span);
		span = name_escape_span(c->raw, n, NAME_ESCAPE_TEXT);
		assert_int_equal(span == n, strcmp(t, c->raw) == 0);
		/* name_escape_to() writes no more than promised and no NUL */
		char buf[256];
		memset(buf, 'Z', sizeof(buf));
		size_t len = name_escape_to(buf, c->raw, n, NAME_ESCAPE_TEXT);
		assert_true(len <= NAME_ESCAPE_MAX_EXPANSION * n);
		assert_int_equal(len, strlen(c->terminal));
		assert_memory_equal(buf, c->terminal, len);
		assert_int_equal(buf[len], 'Z');
	}
	/* a length, not a NUL, ends the input */
	char out[16];
	assert_int_equal(name_escape_to(out, "\xff\xff", 1, NAME_ESCAPE_UTF8), 4);
	assert_memory_equal(out, "\\xff", 4);
	assert_int_equal(name_escape_to(out, "", 0, NAME_ESCAPE_UTF8), 0);
}

static void test_boundary(void **state)
{
	static const char s[] = "ab\xc3\xa9\xe2\x9c\x93\xf0\x9f\x90\xa7\xff";
	static const size_t want[] = {
		/* max: 0  1  2  3  4  5  6  7  8  9  10  11  12  13  14 */
		0, 1, 2, 2, 4, 4, 4, 7, 7, 7, 7, 11, 12, 12, 12,
	};
	size_t n = strlen(s);

	(void)state;
	for (size_t max = 0; max < ELEMENTSOF(want); max++)
		assert_int_equal(utf8_boundary(s, n, max), MIN(want[max], n));
	/* the echo of a 300-byte path cut at 256 does not split the é at 255-256 */
	char path[301];
	memset(path, 'a', 300);
	path[0] = '/';
	path[255] = '\xc3';
	path[256] = '\xa9';
	path[300] = 0;
	assert_int_equal(utf8_boundary(path, 300, 256), 255);
	path[255] = 'a';
	assert_int_equal(utf8_boundary(path, 300, 256), 256);
}

static void test_unescape(void **state)
{
	static const struct {
		const char *text, *raw; /* raw NULL: nothing to unescape */
	} cases[] = {
		{ "/a.service", NULL },
		{ "/machine-qemu\\x2d1.scope", NULL }, /* systemd's: never ours */
		{ "/a\\x00b", NULL },                   /* a NUL cannot be in a name */
		{ "/a\\x2fb", NULL },                   /* nor can an escape make a '/' */
		{ "/a\\x2e\\x2e", NULL },               /* or a '.' */
		{ "/a\\xFF", NULL },                    /* we write lowercase only */
		{ "/a\\xf", NULL },
		{ "/a\\x", NULL },
		{ "/a\\", NULL },
		{ "/bad-\\xff\\xfe.service", "/bad-\xff\xfe.service" },
		{ "/x\\x2d\\xff", "/x\\x2d\xff" }, /* both kinds in one path */
		{ "/evil\\x1b]0;owned\\x07", "/evil\x1b]0;owned\x07" },
		{ "/tab\\x09here", "/tab\there" },
		{ "/del\\x7f", "/del\x7f" },
		{ "/c1\\xc2\\x9b", "/c1\xc2\x9b" },
		{ "/rlo\\xe2\\x80\\xae", "/rlo\xe2\x80\xae" },
		{ "/\\\\xff", "/\\\xff" }, /* a literal backslash, then an escape */
		{ "/\\x\\xff", "/\\x\xff" },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char out[64];
		memset(out, 'Z', sizeof(out));
		bool r = name_unescape(cases[i].text, out);
		assert_int_equal(r, cases[i].raw != NULL);
		if (r)
			assert_string_equal(out, cases[i].raw);
		else
			assert_int_equal(out[0], 'Z'); /* untouched */
	}
	/* what either mode serves reads back as the name */
	for (size_t i = 0; i < ELEMENTSOF(escape_cases); i++) {
		const struct escape_case *c = &escape_cases[i];
		if (strstr(c->raw, "\\x")) /* literal escapes: the literal lookup finds those */
			continue;
		const char *texts[] = { c->utf8, c->terminal };
		for (size_t k = 0; k < ELEMENTSOF(texts); k++) {
			char out[256];
			if (name_unescape(texts[k], out))
				assert_string_equal(out, c->raw);
			else
				assert_string_equal(texts[k], c->raw);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_char_len),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_boundary),
		cmocka_unit_test(test_unescape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
