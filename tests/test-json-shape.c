/* test-json-shape.c - unit tests of the JSON shape scanner (json-shape.h):
 * every grammar rule, agreement with the varlink reader's strict parse (the
 * scanner never refuses what it accepts, and refuses what it calls bad), the
 * same result whatever the split of the bytes, the limits on the hostile
 * shapes of issue 27 ([{},{},...], [[],[],...], {"a":{},...}, deep nesting),
 * and its estimate against json-c's real allocations. */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json-shape.h"
#include "util.h"
#include "varlink.h"

static enum json_shape_verdict scan_text(const char *text, size_t len, const struct json_shape_limits *l,
					 struct json_shape *s)
{
	json_shape_init(s, l);
	size_t n = json_shape_feed(s, text, len);
	if (s->verdict == JSON_SHAPE_TOO_MANY || s->verdict == JSON_SHAPE_TOO_COSTLY)
		return s->verdict;
	assert_int_equal(n, len);
	return json_shape_finish(s);
}

static enum json_shape_verdict scan(const char *text)
{
	struct json_shape s;
	return scan_text(text, strlen(text), NULL, &s);
}

static const char *const good[] = {
	"{}", "[]", "0", "-0", "1", "-12", "1.5", "-0.25e+10", "1E5", "2e-3", "true", "false", "null", "\"\"",
	"\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\uD83D\\ude00\"", " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \n",
	"{\"method\":\"io.acctd.Accounting.Status\",\"parameters\":{\"x\":[{},{},[],[[]],\"s\",1,true,null]}}",
	"[[[[[]]]]]", "{\"a\":{\"b\":{\"c\":[null,false,-1.0e0]}}}", "\"\xc3\xa9\xe2\x82\xac\"", "[0,10,-0.0,9e9]",
};

static const char *const bad[] = {
	"", " ", "{", "}", "[", "]", "[1,]", "[,1]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{,}", "{1:2}", "{'a':1}",
	"'a'", "01", "-", "-a", "1.", ".5", "1e", "1e+", "+1", "0x1", "tru", "truex", "nul", "True", "\"a",
	"\"\\x\"", "\"\\u12g4\"", "\"\\u12\"", "[}", "{]", "{} {}", "[] 1", "\"a\tb\"", "\"a\nb\"", "[1 2]",
	"{\"a\" 1}", "{\"a\":1 \"b\":2}", "NaN", "Infinity", "[-]", "{\"a\":[}]}", "1 2", "/* */{}",
	/* json-c (strict) lets these through; RFC 8259 and the reader do not */
	"{\"a\":NaN}", "{\"a\":-Infinity}", "{\"a\":00}", "{\"a\":-01}", "{\"a\":1.}", "{\"a\":-.5}",
	"{\"a\x01\":1}",
};

static void test_grammar(void **state)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (scan(good[i]) != JSON_SHAPE_OK)
			fail_msg("refused: %s", good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (scan(bad[i]) != JSON_SHAPE_BAD)
			fail_msg("accepted: %s", bad[i]);
	}
}

/* The scanner agrees with the strict parse: a message it calls bad, the
 * reader's parse refuses too, and every object it accepts parses. */
static void test_agrees_with_the_parse(void **state)
{
	const char *const *lists[] = { good, bad };
	size_t sizes[] = { sizeof(good) / sizeof(good[0]), sizeof(bad) / sizeof(bad[0]) };

	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; i < sizes[l]; i++) {
			const char *t = lists[l][i];
			struct json_object *o = NULL;
			int k = varlink_message_parse(t, strlen(t), 0, &o);
			json_object_put(o);
			bool object = t[strspn(t, " \t\r\n")] == '{';
			if (scan(t) == JSON_SHAPE_OK && object && k != 0)
				fail_msg("scanner accepts, the parse refuses: %s", t);
			if (scan(t) != JSON_SHAPE_OK && k == 0)
				fail_msg("scanner refuses, the parse accepts: %s", t);
		}
}

/* Every split into two pieces, and byte by byte, ends the same. */
static void test_split_anywhere(void **state)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]) + sizeof(bad) / sizeof(bad[0]); i++) {
		const char *t = i < sizeof(good) / sizeof(good[0]) ? good[i] : bad[i - sizeof(good) / sizeof(good[0])];
		size_t len = strlen(t);
		struct json_shape whole, parts;
		enum json_shape_verdict v = scan_text(t, len, NULL, &whole);

		for (size_t cut = 0; cut <= len; cut++) {
			json_shape_init(&parts, NULL);
			assert_int_equal(json_shape_feed(&parts, t, cut), cut);
			assert_int_equal(json_shape_feed(&parts, t + cut, len - cut), len - cut);
			assert_int_equal(json_shape_finish(&parts), v);
			if (v == JSON_SHAPE_OK) {
				assert_int_equal(parts.cost, whole.cost);
				assert_int_equal(parts.values, whole.values);
				assert_int_equal(parts.longest, whole.longest);
			}
		}
		json_shape_init(&parts, NULL);
		for (size_t k = 0; k < len; k++)
			assert_int_equal(json_shape_feed(&parts, t + k, 1), 1);
		assert_int_equal(json_shape_finish(&parts), v);
	}
}

static void test_counts_and_nul(void **state)
{
	struct json_shape s;
	static const char t[] = "{\"a\":[1,\"xy\",{}],\"b\":null}\0{}";

	json_shape_init(&s, NULL);
	/* Stops before the NUL, without consuming it. */
	assert_int_equal(json_shape_feed(&s, t, sizeof(t) - 1), strlen(t));
	assert_int_equal(json_shape_feed(&s, t + strlen(t), 3), 0);
	assert_int_equal(json_shape_finish(&s), JSON_SHAPE_OK);
	assert_int_equal(s.containers, 3);
	assert_int_equal(s.members, 2);
	assert_int_equal(s.values, 6); /* the object, the array, 1, "xy", {}, null */
	assert_int_equal(s.bytes, strlen(t));
	assert_int_equal(s.longest, 2);
	assert_int_equal(s.cost, 2 * JSON_SHAPE_COST_OBJECT + JSON_SHAPE_COST_ARRAY + 2 * (JSON_SHAPE_COST_MEMBER + 1) +
					 JSON_SHAPE_COST_NUMBER + 1 + JSON_SHAPE_COST_STRING + 2 + 6 * JSON_SHAPE_COST_SLOT);
	assert_int_equal(json_shape_estimate(&s), s.cost + 4);

	/* A bad text is skipped to its NUL. */
	json_shape_init(&s, NULL);
	assert_int_equal(json_shape_feed(&s, "{x yz\0{}", 8), 5);
	assert_int_equal(json_shape_finish(&s), JSON_SHAPE_BAD);
}

/* A text of `n` copies of `item` between head and tail, comma-separated. */
static char *repeat(const char *head, const char *item, size_t n, const char *tail, size_t *ret_len)
{
	size_t hl = strlen(head), il = strlen(item), tl = strlen(tail);
	char *b = malloc(hl + n * (il + 1) + tl + 1), *p = b;
	assert_non_null(b);
	memcpy(p, head, hl);
	p += hl;
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		memcpy(p, item, il);
		p += il;
	}
	memcpy(p, tail, tl + 1);
	*ret_len = (size_t)(p - b) + tl;
	return b;
}

/* The reproduction and its relatives, with acctd's bound (16 x the
 * bytes + 1 MiB): refused long before their end, a few KB in; long strings,
 * and the longest Watch the defaults allow, pass. */
static void test_hostile_shapes(void **state)
{
	static const struct {
		const char *head, *item, *tail;
		size_t n;
		enum json_shape_verdict want;
		size_t max_bytes; /* consumed before the refusal, at most */
	} cases[] = {
		{ "{\"method\":\"io.acctd.Accounting.Status\",\"parameters\":{\"x\":[", "{}", "]}}", 1400000,
		  JSON_SHAPE_TOO_COSTLY, 8192 },
		{ "[", "[]", "]", 1400000, JSON_SHAPE_TOO_COSTLY, 64 * 1024 },
		{ "[", "{\"a\":{}}", "]", 1400000, JSON_SHAPE_TOO_COSTLY, 64 * 1024 },
		{ "{\"p\":{", "\"a\":{}", "}}", 1400000, JSON_SHAPE_TOO_COSTLY, 64 * 1024 },
		{ "[", "[0]", "]", 1400000, JSON_SHAPE_TOO_COSTLY, 64 * 1024 },
		/* within the bound */
		{ "{\"parameters\":{\"cgroups\":[", "\"/a\"", "]}}", 16384, JSON_SHAPE_OK, 0 },
		{ "{\"parameters\":{\"cgroups\":[", "\"/\"", "]}}", 16384, JSON_SHAPE_OK, 0 },
		{ "[", "\"/system.slice/some-service-name.service\"", "]", 16384, JSON_SHAPE_OK, 0 },
		{ "[", "null", "]", 16384, JSON_SHAPE_OK, 0 },
	};
	const struct json_shape_limits l = { .max_depth = 32, .max_items = 16384, .ratio = 16, .slack = 1u << 20 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		_cleanup_free_ char *t = repeat(cases[i].head, cases[i].item, cases[i].n, cases[i].tail, &len);
		struct json_shape s;
		enum json_shape_verdict v = scan_text(t, len, &l, &s);
		if (v != cases[i].want)
			fail_msg("%s: %s, not %s", cases[i].item, json_shape_verdict_name(v),
				 json_shape_verdict_name(cases[i].want));
		if (v != JSON_SHAPE_OK) {
			assert_true(s.bytes <= cases[i].max_bytes);
			/* Consumes nothing more. */
			assert_int_equal(json_shape_feed(&s, t + s.bytes, len - s.bytes), 0);
			/* Within the bound up to the refusal. */
			assert_true(json_shape_estimate(&s) <= 16 * s.bytes + (1u << 20) + JSON_SHAPE_COST_OBJECT * 2);
		}
	}
	/* One long string: about three times its length (text, token buffer, copy). */
	size_t big = 4u << 20;
	char *t = malloc(big + 3);
	assert_non_null(t);
	memset(t, 'a', big + 2);
	t[0] = t[big + 1] = '"';
	t[big + 2] = 0;
	struct json_shape s;
	assert_int_equal(scan_text(t, big + 2, &l, &s), JSON_SHAPE_OK);
	assert_true(json_shape_estimate(&s) >= 3 * big && json_shape_estimate(&s) <= 3 * big + 1024);
	free(t);
}

static void test_max_items(void **state)
{
	const struct json_shape_limits l = { .max_items = 100 };
	struct json_shape s;
	size_t len;

	for (size_t n = 99; n <= 101; n++) {
		_cleanup_free_ char *a = repeat("{\"cgroups\":[", "\"/a\"", n, "]}", &len);
		assert_int_equal(scan_text(a, len, &l, &s), n <= 100 ? JSON_SHAPE_OK : JSON_SHAPE_TOO_MANY);
		if (n > 100) /* refused at the 101st element's first byte */
			assert_int_equal(s.bytes, strlen("{\"cgroups\":[") + 100 * strlen("\"/a\",") + 1);
		_cleanup_free_ char *o = repeat("{", "\"k\":0", n, "}", &len);
		assert_int_equal(scan_text(o, len, &l, &s), n <= 100 ? JSON_SHAPE_OK : JSON_SHAPE_TOO_MANY);
	}
	/* Counted per container: two arrays of 100. */
	_cleanup_free_ char *a = repeat("[", "0", 100, "]", &len);
	_cleanup_free_ char *two = NULL;
	assert_true(asprintf(&two, "[%s,%s]", a, a) > 0);
	assert_int_equal(scan_text(two, strlen(two), &l, &s), JSON_SHAPE_OK);
}

/* Depth as json-c counts it, the outermost container being level 1: the
 * scanner refuses exactly what the reader's parse refuses. */
static void test_depth(void **state)
{
	const struct json_shape_limits l = { .max_depth = 32 };
	char t[200];

	for (int d = 30; d <= 34; d++) {
		size_t n = 0;
		t[n++] = '{';
		t[n++] = '"';
		t[n++] = 'a';
		t[n++] = '"';
		t[n++] = ':';
		for (int i = 1; i < d; i++)
			t[n++] = '[';
		for (int i = 1; i < d; i++)
			t[n++] = ']';
		t[n++] = '}';
		struct json_shape s;
		struct json_object *o = NULL;
		enum json_shape_verdict v = scan_text(t, n, &l, &s);
		int k = varlink_message_parse(t, n, 32, &o);
		json_object_put(o);
		assert_int_equal(v, d <= 32 ? JSON_SHAPE_OK : JSON_SHAPE_TOO_DEEP);
		assert_int_equal(k, d <= 32 ? 0 : -EBADMSG);
	}
	/* The scanner's own stack: deeper than it can follow is refused. */
	char deep[JSON_SHAPE_MAX_DEPTH + 2];
	memset(deep, '[', sizeof(deep));
	struct json_shape s;
	json_shape_init(&s, NULL);
	json_shape_feed(&s, deep, sizeof(deep));
	assert_int_equal(s.verdict, JSON_SHAPE_TOO_DEEP);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* The estimate is an upper bound of json-c's heap use for every shape, and
 * not far above it for the costly ones (mallinfo2 before and after a parse). */
static void test_estimate_against_json_c(void **state)
{
#ifdef UNDER_ASAN
	skip(); /* ASan's allocator: mallinfo2 does not see it */
#else
	static const struct {
		const char *item;
		double tight; /* estimate / real at most */
	} cases[] = {
		{ "{}", 1.2 }, { "[]", 1.4 }, { "\"\"", 1.4 }, { "\"/a\"", 1.4 }, { "0", 2.0 }, { "1.5", 1.4 },
		{ "true", 1.4 }, { "null", 3.0 }, { "{\"a\":0}", 1.4 }, { "[0,0,0,0,0,0,0,0,0,0]", 1.8 },
		{ "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"", 1.4 },
	};
	size_t n = 20000;

	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		_cleanup_free_ char *t = repeat("{\"x\":[", cases[i].item, n, "]}", &len);
		struct json_shape s;
		assert_int_equal(scan_text(t, len, NULL, &s), JSON_SHAPE_OK);
		struct json_object *o = NULL;
		struct mallinfo2 a = mallinfo2();
		assert_int_equal(varlink_message_parse(t, len, 0, &o), 0);
		struct mallinfo2 b = mallinfo2();
		/* What the parse holds at its end, the tokener freed (its
		 * buffer of the longest token is in the estimate too). */
		size_t real = (b.uordblks + b.hblkhd) - (a.uordblks + a.hblkhd);
		json_object_put(o);
		uint64_t est = json_shape_estimate(&s);
		printf("%-12.12s real %7zu estimate %7" PRIu64 " (%.2f)\n", cases[i].item, real / n, est / n,
		       (double)est / (double)real);
		if (est < real || (double)est > cases[i].tight * (double)real)
			fail_msg("%s: estimate %" PRIu64 " against %zu allocated", cases[i].item, est, real);
	}
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grammar),
		cmocka_unit_test(test_agrees_with_the_parse),
		cmocka_unit_test(test_split_anywhere),
		cmocka_unit_test(test_counts_and_nul),
		cmocka_unit_test(test_hostile_shapes),
		cmocka_unit_test(test_max_items),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_estimate_against_json_c),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
