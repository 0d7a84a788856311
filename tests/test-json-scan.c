/* test-json-scan.c - unit tests of the strict pull reader (lib/varlink/json-scan.h):
 * documents walked value by value, strings unescaped to UTF-8, numbers at
 * and past their limits, and a table of texts RFC 8259 rejects (each must
 * fail) beside one of texts it accepts (each must pass), read both by
 * json_scan_skip() and, for the accepted, by a full walk. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json-scan.h"

/* Skip one whole value and check that only white space follows. */
static int skip_all(const char *text, size_t size)
{
	struct json_scan s;
	int r;

	json_scan_init(&s, text, size);
	r = json_scan_skip(&s);
	if (r >= 0)
		r = json_scan_finish(&s);
	json_scan_done(&s);
	return r;
}

/* Walk every value with the typed readers (enter, member, element, string,
 * double, bool, null) and print a canonical form into out. */
static int walk(struct json_scan *s, char *out, size_t *pos, size_t size)
{
	const char *str;
	double d;
	bool b;
	int r;

#define PUT(...) (*pos += (size_t)snprintf(out + *pos, size - *pos, __VA_ARGS__))
	switch (json_scan_peek(s)) {
	case JSON_SCAN_OBJECT:
	case JSON_SCAN_ARRAY: {
		bool object = json_scan_peek(s) == JSON_SCAN_OBJECT;
		bool first = true;
		r = json_scan_enter(s, object ? JSON_SCAN_OBJECT : JSON_SCAN_ARRAY);
		if (r < 0)
			return r;
		PUT("%c", object ? '{' : '[');
		for (;;) {
			r = object ? json_scan_member(s, &str, NULL) : json_scan_element(s);
			if (r <= 0)
				break;
			PUT("%s", first ? "" : ",");
			if (object)
				PUT("\"%s\":", str);
			first = false;
			r = walk(s, out, pos, size);
			if (r < 0)
				return r;
		}
		if (r < 0)
			return r;
		PUT("%c", object ? '}' : ']');
		return 0;
	}
	case JSON_SCAN_STRING:
		r = json_scan_string(s, &str, NULL);
		if (r >= 0)
			PUT("\"%s\"", str);
		return r;
	case JSON_SCAN_NUMBER:
		r = json_scan_double(s, &d);
		if (r >= 0)
			PUT("%g", d);
		return r;
	case JSON_SCAN_TRUE:
	case JSON_SCAN_FALSE:
		r = json_scan_bool(s, &b);
		if (r >= 0)
			PUT("%s", b ? "true" : "false");
		return r;
	case JSON_SCAN_NULL:
		r = json_scan_null(s);
		if (r > 0)
			PUT("null");
		return r < 0 ? r : 0;
	default:
		return -EBADMSG;
	}
#undef PUT
}

static int walk_all(const char *text, char *out, size_t size)
{
	struct json_scan s;
	size_t pos = 0;
	int r;

	out[0] = '\0';
	json_scan_init(&s, text, strlen(text));
	r = walk(&s, out, &pos, size);
	if (r >= 0)
		r = json_scan_finish(&s);
	json_scan_done(&s);
	return r;
}

static const char *const accepted[] = {
	"0",
	"-0",
	"1.5e-3",
	"1E+2",
	"-12.25E2",
	"\"\"",
	"[]",
	"{}",
	" [ 1 , {\"a\" : [true,false,null]} ] \n",
	"{\"a\":{\"b\":{\"c\":[[],[{}]]}}}",
	"\"\\u00e9\\ud83d\\ude00\\/\\\"\\\\\\b\\f\\n\\r\\t\"",
	"\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
	"1e-400",
	"true",
	"null",
};

static const char *const rejected[] = {
	"",
	"   ",
	"{\"a\":1,}",
	"[1,]",
	"[,1]",
	"01",
	"-01",
	"1.",
	".5",
	"+1",
	"-",
	"1e",
	"1e+",
	"0x10",
	"NaN",
	"Infinity",
	"-Infinity",
	"tru",
	"nul",
	"True",
	"'a'",
	"{\"a\" 1}",
	"{1:2}",
	"{\"a\":}",
	"[1 2]",
	"{}x",
	"[] []",
	"/*c*/1",
	"\"abc",
	"\"\\q\"",
	"\"\\u12\"",
	"\"\\u12G4\"",
	"\"\\u0000\"",
	"\"\\ud800\"",
	"\"\\udc00\"",
	"\"\\ud800\\u0041\"",
	"\"\\ud800x\"",
	"\"a\x01\"",
	"\"a\tb\"",
	"\"\xc0\xaf\"",	    /* overlong '/' */
	"\"\xe0\x80\xaf\"",	    /* overlong */
	"\"\xed\xa0\x80\"",	    /* a surrogate in UTF-8 */
	"\"\xf4\x90\x80\x80\"", /* above U+10FFFF */
	"\"\xe2\x82\"",	    /* truncated */
	"\"\x80\"",		    /* a continuation byte alone */
	"\"\xff\"",
	"[1]]",
	"[[1]",
	"{\"a\":[}",
	"1e400", /* walk only: -ERANGE from json_scan_double (skip accepts its syntax) */
};

static void test_accepted(void **state)
{
	char out[512];

	for (size_t i = 0; i < sizeof(accepted) / sizeof(*accepted); i++) {
		if (skip_all(accepted[i], strlen(accepted[i])) != 0 || walk_all(accepted[i], out, sizeof(out)) != 0)
			fail_msg("rejected a valid text: %s", accepted[i]);
	}
	assert_int_equal(walk_all(" [ 1 , {\"a\" : [true,false,null]} ] ", out, sizeof(out)), 0);
	assert_string_equal(out, "[1,{\"a\":[true,false,null]}]");
	assert_int_equal(walk_all("\"\\u00e9\\ud83d\\ude00\\/\"", out, sizeof(out)), 0);
	assert_string_equal(out, "\"\xc3\xa9\xf0\x9f\x98\x80/\"");
	assert_int_equal(walk_all("{\"a\\u0062\":-12.25E2}", out, sizeof(out)), 0);
	assert_string_equal(out, "{\"ab\":-1225}");
}

static void test_rejected(void **state)
{
	char out[512];

	for (size_t i = 0; i < sizeof(rejected) / sizeof(*rejected); i++) {
		bool walk_only = strcmp(rejected[i], "1e400") == 0;
		int a = skip_all(rejected[i], strlen(rejected[i])), b = walk_all(rejected[i], out, sizeof(out));
		if ((!walk_only && a != -EBADMSG) || b >= 0)
			fail_msg("accepted an invalid text: '%s' (skip %d, walk %d)", rejected[i], a, b);
	}
	/* an embedded NUL: a text is its bytes, not a C string */
	assert_int_equal(skip_all("\"a\0b\"", 5), -EBADMSG);
	assert_int_equal(skip_all("1\0", 2), -EBADMSG);
}

static void test_depth(void **state)
{
	char text[2 * (JSON_SCAN_MAX_DEPTH + 1) + 1];

	for (int n = JSON_SCAN_MAX_DEPTH; n <= JSON_SCAN_MAX_DEPTH + 1; n++) {
		memset(text, '[', (size_t)n);
		memset(text + n, ']', (size_t)n);
		assert_int_equal(skip_all(text, 2 * (size_t)n), n <= JSON_SCAN_MAX_DEPTH ? 0 : -EBADMSG);
	}
}

static void test_int64(void **state)
{
	static const struct {
		const char *text;
		int r;
		int64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "-0", 0, 0 },
		{ "9223372036854775807", 0, INT64_MAX },
		{ "-9223372036854775808", 0, INT64_MIN },
		{ "9223372036854775808", -ERANGE, 0 },
		{ "-9223372036854775809", -ERANGE, 0 },
		{ "99999999999999999999", -ERANGE, 0 },
		{ "1.5", -ERANGE, 0 },
		{ "1e3", -ERANGE, 0 },
		{ "\"1\"", -EBADMSG, 0 },
		{ "null", -EBADMSG, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct json_scan s;
		int64_t v = 42;
		json_scan_init(&s, cases[i].text, strlen(cases[i].text));
		int r = json_scan_int64(&s, &v);
		if (r != cases[i].r || (r == 0 && v != cases[i].v) || (r != 0 && v != 42))
			fail_msg("%s: %d %lld", cases[i].text, r, (long long)v);
		json_scan_done(&s);
	}

	/* -ERANGE consumes the number and leaves the reader usable */
	struct json_scan s;
	int64_t v;
	const char *text = "[1.5, 7]";
	json_scan_init(&s, text, strlen(text));
	assert_int_equal(json_scan_enter(&s, JSON_SCAN_ARRAY), 0);
	assert_int_equal(json_scan_element(&s), 1);
	assert_int_equal(json_scan_int64(&s, &v), -ERANGE);
	assert_int_equal(json_scan_element(&s), 1);
	assert_int_equal(json_scan_int64(&s, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(json_scan_element(&s), 0);
	assert_int_equal(json_scan_finish(&s), 0);
	json_scan_done(&s);
}

static void test_double(void **state)
{
	struct json_scan s;
	double d = 0;
	const char *text = "[0.25, -1e-2, 1e400, 3]";

	json_scan_init(&s, text, strlen(text));
	assert_int_equal(json_scan_enter(&s, JSON_SCAN_ARRAY), 0);
	assert_int_equal(json_scan_element(&s), 1);
	assert_int_equal(json_scan_double(&s, &d), 0);
	assert_true(d == 0.25);
	assert_int_equal(json_scan_element(&s), 1);
	assert_int_equal(json_scan_double(&s, &d), 0);
	assert_true(d == -0.01);
	assert_int_equal(json_scan_element(&s), 1);
	assert_int_equal(json_scan_double(&s, &d), -ERANGE);
	assert_int_equal(json_scan_element(&s), 1);
	assert_int_equal(json_scan_double(&s, &d), 0);
	assert_true(d == 3);
	assert_int_equal(json_scan_element(&s), 0);
	assert_int_equal(json_scan_finish(&s), 0);
	json_scan_done(&s);
}

/* Every number reads as strtod() reads it, bit for bit: short decimals (the
 * exact fast path) and long ones, exponents, negative zero. */
static void test_double_exact(void **state)
{
	uint64_t x = 0x2545f4914f6cdd1du;
	char text[64];

	for (int i = 0; i < 300000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int prec = (int)(x % 20);
		double v = (double)(x >> 11) / (double)(UINT64_C(1) << (x >> 3 & 63));
		int n = i % 3 == 0 ? snprintf(text, sizeof(text), "%.*e", prec, x & 4 ? -v : v)
				   : snprintf(text, sizeof(text), "%.*f", prec, x & 4 ? -v : v);
		struct json_scan s;
		double got = 0, want = strtod(text, NULL);
		json_scan_init(&s, text, (size_t)n);
		assert_int_equal(json_scan_double(&s, &got), 0);
		if (memcmp(&got, &want, sizeof(got)) != 0)
			fail_msg("%s: %.17g, strtod %.17g", text, got, want);
		json_scan_done(&s);
	}
	static const char *const spot[] = { "-0", "-0.0", "0.1", "9.91", "615961", "999999999999999",
					    "9999999999999999", "0.0000000000000000000001", "123456789012345.6" };
	for (size_t i = 0; i < sizeof(spot) / sizeof(*spot); i++) {
		struct json_scan s;
		double got = 1, want = strtod(spot[i], NULL);
		json_scan_init(&s, spot[i], strlen(spot[i]));
		assert_int_equal(json_scan_double(&s, &got), 0);
		if (memcmp(&got, &want, sizeof(got)) != 0)
			fail_msg("%s: %.17g, strtod %.17g", spot[i], got, want);
		json_scan_done(&s);
	}
}

/* Misuse and errors: calls that do not fit where the reader stands fail,
 * and a failed reader fails every later call the same way. */
static void test_errors_stick(void **state)
{
	struct json_scan s;
	const char *key;
	int64_t v;
	bool b;
	const char *text = "{\"a\": [1, x]}";

	json_scan_init(&s, text, strlen(text));
	assert_int_equal(json_scan_element(&s), -EBADMSG); /* not in an array */
	assert_int_equal(json_scan_enter(&s, JSON_SCAN_OBJECT), -EBADMSG);
	json_scan_done(&s);

	json_scan_init(&s, text, strlen(text));
	assert_int_equal(json_scan_enter(&s, JSON_SCAN_OBJECT), 0);
	assert_int_equal(json_scan_element(&s), -EBADMSG); /* in an object */
	json_scan_done(&s);

	json_scan_init(&s, text, strlen(text));
	assert_int_equal(json_scan_enter(&s, JSON_SCAN_OBJECT), 0);
	assert_int_equal(json_scan_member(&s, &key, NULL), 1);
	assert_string_equal(key, "a");
	assert_int_equal(json_scan_bool(&s, &b), -EBADMSG); /* an array comes */
	assert_int_equal(json_scan_peek(&s), JSON_SCAN_NONE);
	assert_int_equal(json_scan_skip(&s), -EBADMSG);
	assert_int_equal(json_scan_int64(&s, &v), -EBADMSG);
	assert_int_equal(json_scan_finish(&s), -EBADMSG);
	json_scan_done(&s);

	json_scan_init(&s, text, strlen(text));
	assert_int_equal(json_scan_enter(&s, JSON_SCAN_OBJECT), 0);
	assert_int_equal(json_scan_member(&s, &key, NULL), 1);
	assert_int_equal(json_scan_skip(&s), -EBADMSG); /* the x */
	assert_int_equal(json_scan_member(&s, &key, NULL), -EBADMSG);
	json_scan_done(&s);

	/* null: consumed when it comes, else left */
	json_scan_init(&s, "[null, 1]", 9);
	assert_int_equal(json_scan_enter(&s, JSON_SCAN_ARRAY), 0);
	assert_int_equal(json_scan_element(&s), 1);
	assert_int_equal(json_scan_null(&s), 1);
	assert_int_equal(json_scan_element(&s), 1);
	assert_int_equal(json_scan_null(&s), 0);
	assert_int_equal(json_scan_int64(&s, &v), 0);
	assert_int_equal(json_scan_element(&s), 0);
	assert_int_equal(json_scan_finish(&s), 0);
	json_scan_done(&s);
}

/* A long string (past the first buffer) with escapes at both ends. */
static void test_long_string(void **state)
{
	size_t n = 100000;
	char *text = malloc(n + 16), *want = malloc(n + 16);
	struct json_scan s;
	const char *str;
	size_t len;

	assert_non_null(text);
	assert_non_null(want);
	text[0] = '"';
	memcpy(text + 1, "\\n", 2);
	memset(text + 3, 'x', n);
	memcpy(text + 3 + n, "\\u20ac\"", 8);
	want[0] = '\n';
	memset(want + 1, 'x', n);
	memcpy(want + 1 + n, "\xe2\x82\xac", 4);
	json_scan_init(&s, text, strlen(text));
	assert_int_equal(json_scan_string(&s, &str, &len), 0);
	assert_int_equal(len, n + 4);
	assert_memory_equal(str, want, n + 4);
	assert_int_equal(str[len], '\0');
	assert_int_equal(json_scan_finish(&s), 0);
	json_scan_done(&s);
	free(text);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),     cmocka_unit_test(test_rejected),
		cmocka_unit_test(test_depth),	     cmocka_unit_test(test_int64),
		cmocka_unit_test(test_double),	     cmocka_unit_test(test_errors_stick),
		cmocka_unit_test(test_long_string),  cmocka_unit_test(test_double_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
