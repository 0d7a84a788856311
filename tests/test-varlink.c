/* test-varlink.c - unit tests of the varlink codec: framing of a byte stream
 * (split anywhere, several messages per read, limits, bad messages), call and
 * reply parsing with every malformed field, building and serialization round
 * trips, names, and the typed parameter getters. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json-shape.h"
#include "ledger-json.h"
#include "test-oom.h"
#include "util.h"
#include "varlink.h"

static struct json_object *parse(const char *s)
{
	struct json_object *o = NULL;
	assert_int_equal(varlink_message_parse(s, strlen(s), 0, &o), 0);
	return o;
}

/* ---- framing ------------------------------------------------------------- */

static void test_reader_whole_and_split(void **state)
{
	static const char stream[] = "{\"method\":\"a.b.C\"}\0{\"x\": [1, 2, {\"y\": null}]}\0{}\0";
	size_t len = sizeof(stream) - 1; /* the literal's own NUL excluded */

	/* Every split point, and byte by byte. */
	for (size_t chunk = 1; chunk <= len; chunk++) {
		struct varlink_reader *r = NULL;
		struct json_object *o = NULL;
		int got = 0;

		assert_int_equal(varlink_reader_new(0, 0, &r), 0);
		for (size_t off = 0; off < len; off += chunk) {
			assert_int_equal(varlink_reader_feed(r, stream + off, off + chunk > len ? len - off : chunk), 0);
			int k;
			while ((k = varlink_reader_next(r, &o)) == 1) {
				if (got == 0)
					assert_string_equal(json_object_get_string(json_object_object_get(o, "method")), "a.b.C");
				if (got == 1)
					assert_int_equal(json_object_array_length(json_object_object_get(o, "x")), 3);
				if (got == 2)
					assert_int_equal(json_object_object_length(o), 0);
				json_object_put(o);
				got++;
			}
			assert_int_equal(k, 0);
		}
		assert_int_equal(got, 3);
		assert_int_equal(varlink_reader_pending(r), 0);
		varlink_reader_free(r);
	}
}

static void test_reader_space_commit(void **state)
{
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;
	size_t room = 0;

	assert_int_equal(varlink_reader_new(0, 0, &r), 0);
	char *p = varlink_reader_space(r, 100, &room);
	assert_non_null(p);
	assert_true(room >= 100);
	memcpy(p, "{\"a\":1}\0{\"b\"", 12);
	assert_int_equal(varlink_reader_commit(r, 12), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	assert_int_equal(json_object_get_int(json_object_object_get(o, "a")), 1);
	json_object_put(o);
	assert_int_equal(varlink_reader_next(r, &o), 0);
	assert_int_equal(varlink_reader_pending(r), 4);
	/* Many rounds: the buffer is reused, not grown. */
	for (int i = 0; i < 10000; i++) {
		assert_int_equal(varlink_reader_feed(r, ":2}", 4), 0); /* with the NUL */
		assert_int_equal(varlink_reader_next(r, &o), 1);
		assert_int_equal(json_object_get_int(json_object_object_get(o, "b")), 2);
		json_object_put(o);
		assert_int_equal(varlink_reader_feed(r, "{\"b\"", 4), 0);
	}
	assert_int_equal(varlink_reader_pending(r), 4);
	varlink_reader_free(r);
}

static void test_reader_limits(void **state)
{
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;
	char big[200];

	/* A complete message over the limit. */
	assert_int_equal(varlink_reader_new(64, 0, &r), 0);
	memset(big, ' ', sizeof(big));
	big[0] = '{';
	big[98] = '}';
	big[99] = 0;
	assert_int_equal(varlink_reader_feed(r, "{}", 3), 0);
	assert_int_equal(varlink_reader_feed(r, big, 100), 0); /* the NUL came with it */
	assert_int_equal(varlink_reader_next(r, &o), 1);     /* what came before is served */
	json_object_put(o);
	assert_int_equal(varlink_reader_next(r, &o), -EMSGSIZE);
	assert_int_equal(varlink_reader_next(r, &o), -EMSGSIZE); /* for good */
	assert_int_equal(varlink_reader_feed(r, "{}", 3), -EMSGSIZE);
	varlink_reader_free(r);

	/* Bytes that never end: refused as soon as they pass the limit,
	 * complete messages before them still served. */
	assert_int_equal(varlink_reader_new(64, 0, &r), 0);
	assert_int_equal(varlink_reader_feed(r, "{}", 3), 0);
	assert_int_equal(varlink_reader_feed(r, big, 64), 0);
	assert_int_equal(varlink_reader_feed(r, big, 1), -EMSGSIZE);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	assert_int_equal(varlink_reader_next(r, &o), -EMSGSIZE);
	varlink_reader_free(r);

	/* Exactly at the limit is fine. */
	assert_int_equal(varlink_reader_new(64, 0, &r), 0);
	memset(big, ' ', 64);
	big[0] = '{';
	big[63] = '}';
	big[64] = 0;
	assert_int_equal(varlink_reader_feed(r, big, 65), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	varlink_reader_free(r);

	/* And so is a message exactly at the limit that has not ended yet:
	 * the limit is of the message without its NUL, so the reader waits
	 * for the NUL instead of breaking. */
	assert_int_equal(varlink_reader_new(64, 0, &r), 0);
	assert_int_equal(varlink_reader_feed(r, big, 64), 0);
	assert_int_equal(varlink_reader_next(r, &o), 0);
	assert_int_equal(varlink_reader_next(r, &o), 0);
	assert_int_equal(varlink_reader_feed(r, big + 64, 1), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	varlink_reader_free(r);
}

/* Issue 27: a message whose shape would cost json-c far more than its bytes
 * is refused while it arrives, before its NUL and before anything is built;
 * its bytes are dropped as they come, and the stream goes on after it. */
/* The exemption: a message whose first bytes the server says it reads
 * without json-c. */
static bool exempt_x(const char *msg, size_t size, void *userdata)
{
	(*(unsigned *)userdata)++;
	return size >= 13 && memcmp(msg, "{\"method\":\"x.", 13) == 0;
}

static void test_reader_exempt(void **state)
{
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;
	const char *text = NULL;
	size_t size = 0, n = 3000;
	unsigned asked = 0;
	char *msg = malloc(64 + 3 * n);

	assert_non_null(msg);
	for (int exempt = 0; exempt < 2; exempt++) {
		/* [{},{},...]: 784 bytes to json-c per 3 bytes of text */
		for (int which = 0; which < 2; which++) {
			size_t len = (size_t)sprintf(msg, "{\"method\":\"%s.y.Z\",\"parameters\":{\"x\":[",
						     which ? "x" : "a");
			for (size_t i = 0; i < n; i++)
				len += (size_t)sprintf(msg + len, "%s{}", i ? "," : "");
			len += (size_t)sprintf(msg + len, "]}}");
			assert_int_equal(varlink_reader_new(16u << 20, 32, &r), 0);
			varlink_reader_set_limits(r, 100000, 16, 64 * 1024);
			if (exempt)
				varlink_reader_set_exempt(r, exempt_x, &asked);
			assert_int_equal(varlink_reader_feed(r, msg, len + 1), 0);
			int k = varlink_reader_next_text(r, &text, &size);
			if (exempt && which) {
				/* Let through whole, then the same bound when built. */
				assert_int_equal(k, 1);
				assert_int_equal(size, len);
				assert_memory_equal(text, msg, len);
				assert_int_equal(varlink_reader_parse_taken(r, text, size, &o), -EFBIG);
			} else
				assert_int_equal(k, -EFBIG);
			/* In sync after it. */
			static const char next[] = "{\"method\":\"x.y.Z\"}"; /* with its NUL */
			assert_int_equal(varlink_reader_feed(r, next, sizeof(next)), 0);
			assert_int_equal(varlink_reader_next(r, &o), 1);
			json_object_put(o);
			varlink_reader_free(r);
		}
	}
	assert_int_equal(asked, 2); /* once per message over the bound */
	free(msg);
	(void)state;
}

/* The exemption is asked with the message's own bytes so far, from its
 * first byte, whatever came before it in the stream: the same message gives
 * the same text and size behind another message in the buffer as at the
 * stream's start. */
struct exempt_seen {
	char text[64];
	size_t size;
	unsigned calls;
};

static bool exempt_record(const char *msg, size_t size, void *userdata)
{
	struct exempt_seen *seen = userdata;

	seen->calls++;
	seen->size = size;
	memcpy(seen->text, msg, MIN(size, sizeof(seen->text)));
	return true;
}

static void test_reader_exempt_after_message(void **state)
{
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;
	struct exempt_seen seen[2] = { 0 };
	const char *text = NULL;
	size_t size = 0, len, n = 3000;
	char *msg = malloc(64 + 3 * n);

	assert_non_null(msg);
	/* [{},{},...]: over the bound long before its end */
	len = (size_t)sprintf(msg, "{\"method\":\"x.y.Z\",\"parameters\":{\"x\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(msg + len, "%s{}", i ? "," : "");
	len += (size_t)sprintf(msg + len, "]}}");
	for (int after = 0; after < 2; after++) {
		assert_int_equal(varlink_reader_new(16u << 20, 32, &r), 0);
		varlink_reader_set_limits(r, 100000, 16, 64 * 1024);
		varlink_reader_set_exempt(r, exempt_record, &seen[after]);
		/* one read with both messages: the second is scanned only once
		 * the first is taken, in place behind it */
		if (after)
			assert_int_equal(varlink_reader_feed(r, "{\"a\":1}", 8), 0);
		assert_int_equal(varlink_reader_feed(r, msg, len + 1), 0);
		if (after) {
			assert_int_equal(varlink_reader_next(r, &o), 1);
			json_object_put(o);
		}
		assert_int_equal(varlink_reader_next_text(r, &text, &size), 1);
		assert_int_equal(size, len);
		assert_memory_equal(text, msg, len);
		assert_int_equal(seen[after].calls, 1);
		assert_true(seen[after].size > 0 && seen[after].size < len);
		assert_memory_equal(seen[after].text, msg, MIN(seen[after].size, sizeof(seen[after].text)));
		varlink_reader_free(r);
	}
	assert_int_equal(seen[1].size, seen[0].size);
	free(msg);
	(void)state;
}

static void test_reader_shape_limits(void **state)
{
	static const struct {
		const char *item;
		int want;
	} cases[] = { { "{}", -EFBIG }, { "[]", -EFBIG }, { "\"/a\"", -E2BIG } };

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct varlink_reader *r = NULL;
		struct json_object *o = NULL;
		char chunk[4096];
		size_t il = strlen(cases[c].item), fed = 0;

		assert_int_equal(varlink_reader_new(16u << 20, 32, &r), 0);
		varlink_reader_set_limits(r, 1000, 16, 64 * 1024);
		assert_int_equal(varlink_reader_feed(r, "{\"method\":\"a.b.C\"}", 19), 0);
		static const char head[] = "{\"method\":\"a.b.C\",\"parameters\":{\"x\":[";
		assert_int_equal(varlink_reader_feed(r, head, sizeof(head) - 1), 0);
		/* The call before it is served, and costs what it costs. */
		assert_int_equal(varlink_reader_next(r, &o), 1);
		json_object_put(o);
		assert_true(varlink_reader_cost(r) >= JSON_SHAPE_COST_OBJECT * 2);
		/* 4 MB of items in 4 KB pieces: refused early, memory flat. */
		int k = 0;
		size_t refused_at = 0, most_pending = 0;
		while (fed < (4u << 20)) {
			size_t n = 0;
			while (n + il + 1 <= sizeof(chunk)) {
				memcpy(chunk + n, cases[c].item, il);
				chunk[n + il] = ',';
				n += il + 1;
			}
			assert_int_equal(varlink_reader_feed(r, chunk, n), 0);
			fed += n;
			most_pending = MAX(most_pending, varlink_reader_pending(r));
			/* As the server does after each turn: the buffer goes
			 * once the dropped bytes leave nothing pending. */
			varlink_reader_shrink(r);
			if (k == 0) {
				k = varlink_reader_next(r, &o);
				if (k != 0)
					refused_at = fed;
			} else
				assert_int_equal(varlink_reader_next(r, &o), 0); /* handed out once */
		}
		assert_int_equal(k, cases[c].want);
		assert_true(refused_at > 0 && refused_at <= 64 * 1024);
		assert_true(most_pending <= 64 * 1024);
		/* Its end, then a good call in the same piece: in sync. */
		assert_int_equal(varlink_reader_feed(r, "{}]}}\0{\"method\":\"x.y.Z\"}", 25), 0);
		assert_int_equal(varlink_reader_next(r, &o), 1);
		assert_string_equal(json_object_get_string(json_object_object_get(o, "method")), "x.y.Z");
		json_object_put(o);
		assert_int_equal(varlink_reader_next(r, &o), 0);
		assert_int_equal(varlink_reader_pending(r), 0);
		assert_int_equal(varlink_reader_cost(r), 0);
		varlink_reader_free(r);
	}

	/* Without limits (the default, a client's reader), the same shape passes. */
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;
	assert_int_equal(varlink_reader_new(0, 0, &r), 0);
	assert_int_equal(varlink_reader_feed(r, "{\"x\":[{},{},{},{},{},{},{},{},{},{}]}", 38), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	/* The refusal can also come with the NUL in the same piece. */
	varlink_reader_set_limits(r, 2, 0, 0);
	assert_int_equal(varlink_reader_feed(r, "{\"x\":[1,2,3]}\0{\"x\":[1,2]}", 26), 0);
	assert_int_equal(varlink_reader_next(r, &o), -E2BIG);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	/* Limits set on a reader without them while a message is half in: it
	 * is scanned again from its start, counting. */
	varlink_reader_set_limits(r, 0, 0, 0);
	assert_int_equal(varlink_reader_feed(r, "{\"x\":[1,2,3", 11), 0);
	assert_int_equal(varlink_reader_cost(r), 0);
	varlink_reader_set_limits(r, 2, 0, 0);
	assert_true(varlink_reader_cost(r) == 0); /* refused: nothing to cost */
	assert_int_equal(varlink_reader_next(r, &o), -E2BIG);
	assert_int_equal(varlink_reader_feed(r, "]}\0", 3), 0);
	assert_int_equal(varlink_reader_next(r, &o), 0);
	assert_int_equal(varlink_reader_pending(r), 0);
	/* A message the scanner finds bad never reaches json-c, and the next is in sync. */
	assert_int_equal(varlink_reader_feed(r, "{\"x\":[1,]}\0{}", 14), 0);
	assert_int_equal(varlink_reader_next(r, &o), -EBADMSG);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	varlink_reader_free(r);
}

static void test_reader_bad_messages(void **state)
{
	static const char *const bad[] = {
		"",                      /* empty */
		"{",                     /* incomplete */
		"[1,2]",                 /* not an object */
		"\"x\"",                 /* not an object */
		"{} {}",                 /* two documents */
		"{}x",                   /* trailing garbage */
		"{'a': 1}",              /* not JSON */
		"{\"a\": \"\xff\xfe\"}", /* invalid UTF-8 */
		"{\"a\": \"\xc0\xaf\"}", /* overlong encoding */
		"{\"a\": nan}",
		"{\"a\": \"\xed\xa0\x80\"}",     /* a surrogate */
		"{\"a\": \"\xf4\x90\x80\x80\"}", /* beyond U+10FFFF */
		"{\"a\": \"\xe2\x82\"}",         /* truncated sequence */
		"{\"a\": \"\x01\"}",              /* a raw control character */
		"{\"a\": 1, }",
	};
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;

	assert_int_equal(varlink_reader_new(0, 0, &r), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(varlink_reader_feed(r, bad[i], strlen(bad[i]) + 1), 0);
		assert_int_equal(varlink_reader_next(r, &o), -EBADMSG);
		/* The stream stays in sync. */
		assert_int_equal(varlink_reader_feed(r, "{\"ok\":true}", 12), 0);
		assert_int_equal(varlink_reader_next(r, &o), 1);
		assert_true(json_object_get_boolean(json_object_object_get(o, "ok")));
		json_object_put(o);
	}
	/* Trailing white space is JSON. UTF-8 that is valid passes. */
	o = parse("{\"a\": \"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \\\" '\"} \n");
	json_object_put(o);
	varlink_reader_free(r);
}

/* varlink_message_parse() applies the checks of varlink_reader_next(): what
 * json-c lets through and RFC 8259 does not (leading zeros, a number ending
 * in its point, NaN and Infinity) is refused by both, not only by the
 * reader's scan. */
static void test_message_parse_strict(void **state)
{
	static const char *const lenient[] = {
		"{\"a\":00}", "{\"a\":-01}", "{\"a\":1.}", "{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":-Infinity}",
	};
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;

	assert_int_equal(varlink_reader_new(0, 0, &r), 0);
	for (size_t i = 0; i < sizeof(lenient) / sizeof(lenient[0]); i++) {
		o = NULL;
		assert_int_equal(varlink_message_parse(lenient[i], strlen(lenient[i]), 0, &o), -EBADMSG);
		assert_null(o);
		assert_int_equal(varlink_reader_feed(r, lenient[i], strlen(lenient[i]) + 1), 0);
		assert_int_equal(varlink_reader_next(r, &o), -EBADMSG);
	}
	varlink_reader_free(r);
	/* the same numbers written as JSON has them pass */
	o = parse("{\"a\":0,\"b\":-1,\"c\":1.0,\"d\":1e3}");
	json_object_put(o);
	(void)state;
}

static void test_reader_depth(void **state)
{
	char deep[300];
	struct json_object *o = NULL;
	size_t n = 0;

	/* {"a":[[[...]]]} with 1 + 40 levels */
	n += (size_t)sprintf(deep, "{\"a\":");
	for (int i = 0; i < 40; i++)
		deep[n++] = '[';
	for (int i = 0; i < 40; i++)
		deep[n++] = ']';
	deep[n++] = '}';
	deep[n] = 0;
	assert_int_equal(varlink_message_parse(deep, n, 32, &o), -EBADMSG);
	assert_int_equal(varlink_message_parse(deep, n, 64, &o), 0);
	json_object_put(o);
	/* A NUL inside is refused, not truncated, and not taken for white space
	 * at the end either. */
	assert_int_equal(varlink_message_parse("{}\0{}", 5, 0, &o), -EBADMSG);
	assert_int_equal(varlink_message_parse("{}\0", 3, 0, &o), -EBADMSG);
	assert_int_equal(varlink_message_parse("{} ", 3, 0, &o), 0);
	json_object_put(o);
	/* Depth 1 is one object, nothing nested; 0 is the default. */
	assert_int_equal(varlink_message_parse("{}", 2, 1, &o), 0);
	json_object_put(o);
	assert_int_equal(varlink_message_parse("{\"a\":{}}", 8, 1, &o), -EBADMSG);
	assert_int_equal(varlink_message_parse("{\"a\":{}}", 8, 0, &o), 0);
	json_object_put(o);
}

/* A message arriving in reads, with a shrink after each (what the server
 * does between reads): the buffer is reallocated O(log size) times, not at
 * every read. Cutting it to fit after each read made 15 MB cost 240 copies
 * of up to 15 MB (over 10 s under TSan). */
static void test_reader_shrink_amortised(void **state)
{
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;
	static char piece[64 * 1024];
	const size_t pieces = 256; /* 16 MiB */
	unsigned changes = 0;

	memset(piece, ' ', sizeof(piece));
	assert_int_equal(varlink_reader_new(32u << 20, 0, &r), 0);
	assert_int_equal(varlink_reader_feed(r, "{\"a\":1", 6), 0);
	for (size_t i = 0; i < pieces; i++) {
		size_t before = varlink_reader_allocated(r);
		assert_int_equal(varlink_reader_feed(r, piece, sizeof(piece)), 0);
		assert_int_equal(varlink_reader_next(r, &o), 0);
		varlink_reader_shrink(r);
		size_t after = varlink_reader_allocated(r);
		changes += after != before;
		/* What it holds stays within its bound of the pending bytes. */
		assert_true(after <= 4 * varlink_reader_pending(r) + sizeof(piece));
	}
	assert_true(changes <= 16); /* doublings from 64 KiB to 16 MiB: 9 */
	assert_int_equal(varlink_reader_feed(r, "}", 2), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	assert_int_equal(json_object_get_int(json_object_object_get(o, "a")), 1);
	json_object_put(o);
	varlink_reader_shrink(r);
	assert_int_equal(varlink_reader_allocated(r), 0);
	varlink_reader_free(r);
}

/* Moving pending bytes to the front keeps every position: a complete message
 * not yet taken, and the unterminated tail after it whose length the limit
 * counts. The first buffer is one page. */
/* varlink_reader_shrink(): the buffer is freed when nothing is pending, cut
 * to the pending bytes otherwise, and the stream stays in sync across it
 * (a message split around a shrink, a NUL scanned before it). */
static void test_reader_shrink(void **state)
{
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;
	char big[100000];

	assert_int_equal(varlink_reader_new(0, 0, &r), 0);
	varlink_reader_shrink(r); /* nothing allocated yet */
	assert_int_equal(varlink_reader_allocated(r), 0);
	memset(big, ' ', sizeof(big));
	assert_int_equal(varlink_reader_feed(r, "{\"a\":1", 6), 0);
	assert_int_equal(varlink_reader_feed(r, big, sizeof(big)), 0);
	assert_int_equal(varlink_reader_feed(r, "}\0{\"b\"", 6), 0);
	assert_true(varlink_reader_allocated(r) >= sizeof(big));
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	assert_int_equal(varlink_reader_next(r, &o), 0); /* "{"b"" scanned, no NUL */
	varlink_reader_shrink(r);
	assert_int_equal(varlink_reader_pending(r), 4);
	assert_int_equal(varlink_reader_allocated(r), 4);
	varlink_reader_shrink(r); /* already fitting: nothing changes */
	assert_int_equal(varlink_reader_allocated(r), 4);
	assert_int_equal(varlink_reader_feed(r, ":2}\0{}", 6), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	assert_int_equal(json_object_get_int(json_object_object_get(o, "b")), 2);
	json_object_put(o);
	assert_int_equal(varlink_reader_next(r, &o), 0);
	assert_int_equal(varlink_reader_feed(r, "", 1), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	varlink_reader_shrink(r);
	assert_int_equal(varlink_reader_allocated(r), 0);
	assert_int_equal(varlink_reader_pending(r), 0);
	/* And it reads on after being freed. */
	assert_int_equal(varlink_reader_feed(r, "{\"c\":3}", 8), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	assert_int_equal(json_object_get_int(json_object_object_get(o, "c")), 3);
	json_object_put(o);
	varlink_reader_free(r);
}

static void test_reader_compaction(void **state)
{
	static const char stream[] = "{\"a\":1}\0{\"b\":2}\0{\"c\"";
	struct varlink_reader *r = NULL;
	struct json_object *o = NULL;
	size_t room = 0;

	assert_int_equal(varlink_reader_new(64, 0, &r), 0);
	assert_non_null(varlink_reader_space(r, 1, &room));
	assert_int_equal(room, 4096);
	assert_int_equal(varlink_reader_feed(r, stream, sizeof(stream) - 1), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	json_object_put(o);
	/* Asking for more room than is left behind the data moves it. */
	char *p = varlink_reader_space(r, 4090, &room);
	assert_non_null(p);
	assert_true(room >= 4090);
	memcpy(p, ":3}", 3); /* the NUL comes later: the tail's length is checked alone */
	assert_int_equal(varlink_reader_commit(r, 3), 0);
	assert_int_equal(varlink_reader_feed(r, "", 1), 0);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	assert_int_equal(json_object_get_int(json_object_object_get(o, "b")), 2);
	json_object_put(o);
	assert_int_equal(varlink_reader_next(r, &o), 1);
	assert_int_equal(json_object_get_int(json_object_object_get(o, "c")), 3);
	json_object_put(o);
	assert_int_equal(varlink_reader_pending(r), 0);
	/* The tail's length is counted from its start: 64 bytes pass, 65 not. */
	char big[65];
	memset(big, ' ', sizeof(big));
	assert_int_equal(varlink_reader_feed(r, big, 64), 0);
	assert_int_equal(varlink_reader_feed(r, big, 1), -EMSGSIZE);
	/* Broken for good: no byte taken after the one that broke the limit. */
	assert_int_equal(varlink_reader_feed(r, big, 0), -EMSGSIZE);
	assert_int_equal(varlink_reader_feed(r, big, 1), -EMSGSIZE);
	assert_int_equal(varlink_reader_commit(r, 0), -EMSGSIZE);
	assert_int_equal(varlink_reader_pending(r), 65);
	varlink_reader_free(r);
}

/* Out of memory while parsing a call: -ENOMEM, not a bad message. */
static void test_call_parse_no_memory(void **state)
{
	struct varlink_call c = { 0 };
	const char *field = NULL;
	struct oom oom;
	int r;

	if (!oom_supported())
		skip();
	struct json_object *m = parse("{\"method\":\"a.b.C\"}");
	oom_begin(&oom, 1u << 20, true, 0);
	r = varlink_call_parse(m, &c, &field); /* no parameters: an empty object is made */
	oom_end(&oom);
	assert_int_equal(r, -ENOMEM);
	assert_null(field);
	assert_int_equal(varlink_call_parse(m, &c, &field), 0);
	varlink_call_clear(&c);
	json_object_put(m);
}

/* Out of memory: no reader; no room, and the bytes not taken. */
static void test_reader_no_memory(void **state)
{
	struct varlink_reader *r = NULL, *r2 = (struct varlink_reader *)&r;
	size_t big = 4u << 20, room = 0;
	struct oom oom;
	int r_new, r_feed;
	void *space;

	if (!oom_supported())
		skip();
	char *data = calloc(1, big);
	assert_non_null(data);
	assert_int_equal(varlink_reader_new(0, 0, &r), 0);
	oom_begin(&oom, 1u << 20, true, 0);
	r_new = varlink_reader_new(0, 0, &r2);
	oom_end(&oom);
	/* Room beyond the slack: the buffer cannot grow. */
	oom_begin(&oom, 1u << 20, false, 0);
	space = varlink_reader_space(r, big, &room);
	r_feed = varlink_reader_feed(r, data, big);
	oom_end(&oom);

	assert_int_equal(r_new, -ENOMEM);
	assert_ptr_equal(r2, (struct varlink_reader *)&r);
	assert_null(space);
	assert_int_equal(r_feed, -ENOMEM);
	assert_int_equal(varlink_reader_pending(r), 0);
	assert_int_equal(varlink_reader_feed(r, "{}", 3), 0);
	assert_int_equal(varlink_reader_pending(r), 3);
	varlink_reader_free(r);
	free(data);
}

/* ---- calls ----------------------------------------------------------------- */

static void test_call_parse(void **state)
{
	struct varlink_call c = { 0 };
	const char *field = NULL;
	struct json_object *m;

	m = parse("{\"method\":\"io.acctd.Accounting.Get\",\"parameters\":{\"cgroup\":\"/\"},\"more\":true,\"x\":1}");
	assert_int_equal(varlink_call_parse(m, &c, &field), 0);
	json_object_put(m); /* the call holds its own reference */
	assert_string_equal(c.method, "io.acctd.Accounting.Get");
	assert_int_equal(c.interface_len, strlen("io.acctd.Accounting"));
	assert_string_equal(c.member, "Get");
	assert_int_equal(c.flags, VARLINK_CALL_MORE);
	assert_string_equal(json_object_get_string(json_object_object_get(c.parameters, "cgroup")), "/");
	varlink_call_clear(&c);

	/* null and missing parameters are {} */
	static const char *const empty[] = {
		"{\"method\":\"org.varlink.service.GetInfo\"}",
		"{\"method\":\"org.varlink.service.GetInfo\",\"parameters\":null}",
		"{\"method\":\"org.varlink.service.GetInfo\",\"parameters\":{},\"oneway\":true,\"upgrade\":false,\"more\":null}",
	};
	for (size_t i = 0; i < 3; i++) {
		m = parse(empty[i]);
		assert_int_equal(varlink_call_parse(m, &c, NULL), 0);
		json_object_put(m);
		assert_non_null(c.parameters);
		assert_true(json_object_is_type(c.parameters, json_type_object));
		assert_int_equal(json_object_object_length(c.parameters), 0);
		assert_int_equal(c.flags, i == 2 ? VARLINK_CALL_ONEWAY : 0);
		varlink_call_clear(&c);
	}

	static const struct {
		const char *msg, *field;
	} bad[] = {
		{ "{}", "method" },
		{ "{\"method\":1}", "method" },
		{ "{\"method\":\"GetInfo\"}", "method" },
		{ "{\"method\":\"org.varlink.service.getInfo\"}", "method" },
		{ "{\"method\":\"org..service.GetInfo\"}", "method" },
		{ "{\"method\":\".org.varlink.service.GetInfo\"}", "method" },
		{ "{\"method\":\"org.varlink.service.Get-Info\"}", "method" },
		{ "{\"method\":\"org.varlink.service.GetInfo\\u0000x\"}", "method" },
		{ "{\"method\":\"a.b.C\",\"parameters\":[]}", "parameters" },
		{ "{\"method\":\"a.b.C\",\"parameters\":\"x\"}", "parameters" },
		{ "{\"method\":\"a.b.C\",\"oneway\":1}", "oneway" },
		{ "{\"method\":\"a.b.C\",\"more\":\"yes\"}", "more" },
		{ "{\"method\":\"a.b.C\",\"upgrade\":{}}", "upgrade" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = parse(bad[i].msg);
		field = NULL;
		c.method = "untouched";
		assert_int_equal(varlink_call_parse(m, &c, &field), -EBADMSG);
		assert_string_equal(c.method, "untouched");
		assert_non_null(field);
		assert_string_equal(field, bad[i].field);
		json_object_put(m);
	}
	c = (struct varlink_call){ 0 };
	m = json_object_new_array();
	assert_int_equal(varlink_call_parse(m, &c, &field), -EBADMSG);
	assert_string_equal(field, "");
	json_object_put(m);
}

static void test_names(void **state)
{
	size_t n = 0;
	assert_true(varlink_interface_name_is_valid("org.varlink.service", 19));
	assert_true(varlink_interface_name_is_valid("io.acctd.Accounting", 19));
	assert_true(varlink_interface_name_is_valid("a-b.c--d.e1", 11));
	assert_true(varlink_interface_name_is_valid("a.0b", 4));
	assert_false(varlink_interface_name_is_valid("org", 3));
	assert_false(varlink_interface_name_is_valid("org.", 4));
	assert_false(varlink_interface_name_is_valid("0rg.x", 5));
	assert_false(varlink_interface_name_is_valid("a-.b", 4));
	assert_false(varlink_interface_name_is_valid("a.b_c", 5));
	/* Only the first `len` bytes count: here the name ends in a dash. */
	assert_false(varlink_interface_name_is_valid("a.b-c", 4));
	assert_true(varlink_interface_name_is_valid("a.b-c", 5));
	/* At most 255 characters. */
	char longest[257];
	memset(longest, 'b', sizeof(longest));
	longest[0] = 'a';
	longest[1] = '.';
	assert_true(varlink_interface_name_is_valid(longest, 255));
	assert_false(varlink_interface_name_is_valid(longest, 256));
	assert_false(varlink_interface_name_is_valid(longest, 0));
	assert_true(varlink_qualified_name_is_valid("io.acctd.Accounting.NoSuchCgroup", &n));
	assert_int_equal(n, 19);
	assert_false(varlink_qualified_name_is_valid("io.acctd.Accounting.get", NULL));
	assert_false(varlink_qualified_name_is_valid("Accounting.Get", NULL));
	assert_false(varlink_qualified_name_is_valid("io.acctd.Accounting.", NULL));
	/* A member name of at most 255 characters. */
	char qualified[4 + 256 + 1];
	memcpy(qualified, "a.b.", 4);
	memset(qualified + 4, 'M', 256);
	qualified[4 + 255] = 0;
	assert_true(varlink_qualified_name_is_valid(qualified, &n));
	assert_int_equal(n, 3);
	qualified[4 + 255] = 'M';
	qualified[4 + 256] = 0;
	assert_false(varlink_qualified_name_is_valid(qualified, NULL));
}

static void test_build_roundtrip(void **state)
{
	struct json_object *p = json_object_new_object();
	json_object_object_add(p, "cgroup", json_object_new_string("/a/b\"c/\xc3\xa9"));
	struct json_object *call = varlink_call_new("io.acctd.Accounting.Get", p, VARLINK_CALL_MORE | VARLINK_CALL_ONEWAY);
	assert_non_null(call);
	const char *s;
	size_t len;
	assert_int_equal(varlink_message_serialize(call, &s, &len), 0);
	assert_int_equal(s[len], 0); /* the terminator, to be sent with it */
	assert_null(strchr(s, '\n'));
	assert_non_null(strstr(s, "\"/a/b\\\"c/\xc3\xa9\"")); /* no slash escaping, raw UTF-8 */

	struct varlink_reader *r = NULL;
	struct json_object *back = NULL;
	struct varlink_call c;
	assert_int_equal(varlink_reader_new(0, 0, &r), 0);
	assert_int_equal(varlink_reader_feed(r, s, len + 1), 0);
	assert_int_equal(varlink_reader_next(r, &back), 1);
	assert_int_equal(varlink_call_parse(back, &c, NULL), 0);
	assert_string_equal(c.method, "io.acctd.Accounting.Get");
	assert_int_equal(c.flags, VARLINK_CALL_MORE | VARLINK_CALL_ONEWAY);
	assert_string_equal(json_object_get_string(json_object_object_get(c.parameters, "cgroup")), "/a/b\"c/\xc3\xa9");
	varlink_call_clear(&c);
	json_object_put(back);
	json_object_put(call);
	varlink_reader_free(r);

	/* Empty parameters are left out of a call. */
	call = varlink_call_new("org.varlink.service.GetInfo", json_object_new_object(), 0);
	assert_int_equal(varlink_message_serialize(call, &s, &len), 0);
	assert_string_equal(s, "{\"method\":\"org.varlink.service.GetInfo\"}");
	json_object_put(call);
	call = varlink_call_new("org.varlink.service.GetInfo", NULL, 0);
	json_object_put(call);

	/* Replies. */
	struct json_object *rep = varlink_reply_new(NULL, true);
	assert_int_equal(varlink_message_serialize(rep, &s, &len), 0);
	assert_string_equal(s, "{\"parameters\":{},\"continues\":true}");
	struct varlink_reply rp;
	assert_int_equal(varlink_reply_parse(rep, &rp), 0);
	assert_true(rp.continues);
	assert_null(rp.error);
	varlink_reply_clear(&rp);
	json_object_put(rep);

	rep = varlink_error_new_string(VARLINK_ERROR_INVALID_PARAMETER, "parameter", "cgroup");
	assert_int_equal(varlink_message_serialize(rep, &s, &len), 0);
	assert_string_equal(s, "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"cgroup\"}}");
	assert_int_equal(varlink_reply_parse(rep, &rp), 0);
	assert_string_equal(rp.error, VARLINK_ERROR_INVALID_PARAMETER);
	assert_false(rp.continues);
	assert_string_equal(json_object_get_string(json_object_object_get(rp.parameters, "parameter")), "cgroup");
	varlink_reply_clear(&rp);
	json_object_put(rep);
}

static void test_reply_parse(void **state)
{
	static const char *const good[] = {
		"{}",
		"{\"parameters\":null}",
		"{\"parameters\":{\"a\":1},\"continues\":false}",
		"{\"error\":\"a.b.C\"}",
		"{\"error\":\"a.b.C\",\"parameters\":{}}",
		"{\"error\":null,\"continues\":true}",
	};
	static const char *const bad[] = {
		"{\"parameters\":[]}",
		"{\"continues\":1}",
		"{\"error\":1}",
		"{\"error\":\"nodots\"}",
		"{\"error\":\"a.b.C\",\"continues\":true}",
	};
	struct varlink_reply rp;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct json_object *m = parse(good[i]);
		assert_int_equal(varlink_reply_parse(m, &rp), 0);
		assert_non_null(rp.parameters);
		varlink_reply_clear(&rp);
		json_object_put(m);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *m = parse(bad[i]);
		assert_int_equal(varlink_reply_parse(m, &rp), -EBADMSG);
		json_object_put(m);
	}
}

static void test_params(void **state)
{
	struct json_object *p =
		parse("{\"s\":\"x\",\"n\":null,\"i\":-5,\"big\":9223372036854775807,\"huge\":18446744073709551615,"
		      "\"f\":3.0,\"fr\":3.5,\"b\":true,\"a\":[1],\"nul\":\"a\\u0000b\",\"fbig\":1e30,"
		      "\"f2p63\":9223372036854775808.0,\"fm2p63\":-9223372036854775808.0,\"fmbig\":-1e30}");
	const char *s = "default";
	size_t len = 0;
	int64_t i = 42;
	bool b = false;
	struct json_object *a = NULL;

	assert_int_equal(varlink_param_string(p, "s", &s), 1);
	assert_string_equal(s, "x");
	s = "default";
	assert_int_equal(varlink_param_string(p, "n", &s), 0);
	assert_int_equal(varlink_param_string(p, "missing", &s), 0);
	assert_string_equal(s, "default");
	assert_int_equal(varlink_param_string(p, "i", &s), -EINVAL);
	assert_int_equal(varlink_param_string_len(p, "nul", &s, &len), 1);
	assert_int_equal(len, 3);
	assert_int_equal(strlen(s), 1);

	assert_int_equal(varlink_param_int64(p, "i", &i), 1);
	assert_int_equal(i, -5);
	assert_int_equal(varlink_param_int64(p, "big", &i), 1);
	assert_int_equal(i, INT64_MAX);
	assert_int_equal(varlink_param_int64(p, "huge", &i), -EINVAL);
	assert_int_equal(varlink_param_int64(p, "f", &i), 1);
	assert_int_equal(i, 3);
	assert_int_equal(varlink_param_int64(p, "fr", &i), -EINVAL);
	assert_int_equal(varlink_param_int64(p, "fbig", &i), -EINVAL);
	/* Doubles at the edges of int64: -2^63 is one, 2^63 is not. */
	assert_int_equal(varlink_param_int64(p, "f2p63", &i), -EINVAL);
	assert_int_equal(varlink_param_int64(p, "fm2p63", &i), 1);
	assert_int_equal(i, INT64_MIN);
	assert_int_equal(varlink_param_int64(p, "fmbig", &i), -EINVAL);
	assert_int_equal(varlink_param_int64(p, "s", &i), -EINVAL);
	assert_int_equal(varlink_param_int64(p, "b", &i), -EINVAL);
	i = 7;
	assert_int_equal(varlink_param_int64(p, "n", &i), 0);
	assert_int_equal(i, 7);

	assert_int_equal(varlink_param_bool(p, "b", &b), 1);
	assert_true(b);
	assert_int_equal(varlink_param_bool(p, "i", &b), -EINVAL);
	assert_int_equal(varlink_param_array(p, "a", &a), 1);
	assert_int_equal(json_object_array_length(a), 1);
	assert_int_equal(varlink_param_array(p, "s", &a), -EINVAL);

	static const char *const known[] = { "s", "n", "i", "big", "huge", "f", "fr", "b", "a", "nul", NULL };
	const char *u = varlink_param_unknown(p, known);
	assert_non_null(u);
	assert_string_equal(u, "fbig");
	static const char *const all[] = { "s", "n", "i", "big", "huge", "f", "fr", "b", "a", "nul", "fbig",
					   "f2p63", "fm2p63", "fmbig", NULL };
	assert_null(varlink_param_unknown(p, all));
	json_object_put(p);
}

/* ---- the direct writers of ledger-json.c ------------------------------------
 *
 * The writers define the record and the List entry; acct_cgroup_to_json() and
 * acct_cgroup_list_entry_json() are parsed from their text. The API serves Get
 * and List with the text, --dump, --state-file and Watch print the json-c
 * objects: json-c must print back exactly the text, whatever state a record
 * is in (numbers keep their text, escapes round-trip). */

static void expect_same(struct acct_ledger *l, struct acct_cgroup *cg, uint64_t now, bool precise, unsigned nodes)
{
	struct acct_json_buf b = { 0 };
	const int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;

	struct json_object *o = acct_cgroup_to_json(l, cg, now, precise, nodes);
	assert_int_equal(acct_cgroup_write_json(&b, l, cg, now, precise, nodes), 0);
	assert_string_equal(b.data, json_object_to_json_string_ext(o, flags));
	json_object_put(o);
	acct_json_buf_free(&b);

	o = acct_cgroup_list_entry_json(cg, now);
	assert_int_equal(acct_cgroup_list_entry_write(&b, cg, now), 0);
	assert_string_equal(b.data, json_object_to_json_string_ext(o, flags));
	json_object_put(o);
	acct_json_buf_free(&b);
}

static void test_direct_writers(void **state)
{
	struct acct_domain *d = NULL;
	struct acct_ledger *l = NULL;
	struct acct_ledger_budgets budgets = { 4096, 1000, 1 };
	struct acct_cgroup *cg = NULL;
	static const char *const paths[] = { "/", "/system.slice/a\\x2d.service", "/q\"uote/\x01ctl\t/\xc3\xa9/s/l" };

	assert_int_equal(acct_domain_new(NULL, &d), 0);
	assert_int_equal(acct_ledger_new(d, &budgets, &l), 0);
	unsigned nodes = acct_domain_topology(d)->nr_nodes;
	for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
		struct acct_cgroup_id id = { .path = paths[p], .depth = (unsigned)p, .hierarchies = (uint32_t)(p == 0 ? 1 : 0xf) };
		assert_int_equal(acct_ledger_add(l, &id, 1000, &cg), 0);

		/* Fresh: nothing read yet. */
		expect_same(l, cg, 2000, false, nodes);
		/* Every kind of value. */
		for (int q = 0; q < _ACCT_Q_MAX; q++)
			acct_cgroup_set(cg, (enum acct_quantity)q, q == ACCT_Q_MEMORY_MAX ? -1 : (int64_t)q * 1234567 - 5);
		__atomic_store_n(&cg->sampled_us[ACCT_GROUP_FAST], 1500, __ATOMIC_RELAXED);
		expect_same(l, cg, 2000, false, nodes);
		__atomic_store_n(&cg->sampled_us[ACCT_GROUP_SLOW], 1700, __ATOMIC_RELAXED);
		__atomic_store_n(&cg->sampled_us[ACCT_GROUP_LOAD], 1900, __ATOMIC_RELAXED);
		for (int r = 0; r < _ACCT_PSI_MAX; r++) {
			__atomic_store_n(&cg->psi_known[r], r != 1, __ATOMIC_RELAXED);
			for (int k = 0; k < _ACCT_PSI_KIND_MAX; k++)
				for (int a = 0; a < 3; a++)
					__atomic_store_n(&cg->psi_avg[r][k][a], (uint32_t)(r * 1000 + k * 333 + a * 7 + 1), __ATOMIC_RELAXED);
		}
		static const double doubles[] = { 0.0, -0.0, 1.0, 0.1, 1e-300, 123456.789, 1e22, -2.5, 1e15, 3e15 };
		for (size_t i = 0; i < sizeof(doubles) / sizeof(doubles[0]); i++) {
			__atomic_store_n(&cg->cpu_rate_known, i > 0, __ATOMIC_RELEASE);
			acct_cgroup_set_double(&cg->cpu_rate_bits, doubles[i]);
			acct_cgroup_set_double(&cg->cpu_rate_avg_bits[i % 3], doubles[(i + 1) % 10]);
			__atomic_store_n(&cg->loadavg[i % 3], (unsigned long)(i * 777), __ATOMIC_RELAXED);
			expect_same(l, cg, 2000 + i, false, nodes);
		}
		assert_int_equal(acct_cgroup_set_memstat(l, cg, "anon", 4, 4096), 0);
		assert_int_equal(acct_cgroup_set_memstat(l, cg, "file", 4, 0), 0);
		assert_int_equal(acct_cgroup_set_memstat(l, cg, "we\"ird", 6, 77), 0);
		assert_int_equal(acct_cgroup_set_node(cg, 0, 1 << 20), 0);
		__atomic_store_n(&cg->numa_known, true, __ATOMIC_RELEASE);
		__atomic_store_n(&cg->sample_errors, 3, __ATOMIC_RELAXED);
		__atomic_store_n(&cg->populated, p == 1, __ATOMIC_RELAXED);
		expect_same(l, cg, 5000, false, nodes);
		expect_same(l, cg, 5000, true, nodes);
		acct_counter_add(cg->q[ACCT_Q_MEMORY], 12345); /* a bound to show */
		expect_same(l, cg, 5000, false, nodes);
		acct_ledger_kill(l, cg, 6000);
		expect_same(l, cg, 9000, false, nodes);
	}
	acct_ledger_free(l);
	acct_domain_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_whole_and_split),
		cmocka_unit_test(test_reader_space_commit),
		cmocka_unit_test(test_reader_limits),
		cmocka_unit_test(test_reader_shape_limits),
		cmocka_unit_test(test_reader_bad_messages),
		cmocka_unit_test(test_reader_depth),
		cmocka_unit_test(test_reader_compaction),
		cmocka_unit_test(test_reader_shrink),
		cmocka_unit_test(test_reader_shrink_amortised),
		cmocka_unit_test(test_reader_no_memory),
		cmocka_unit_test(test_call_parse_no_memory),
		cmocka_unit_test(test_call_parse),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_build_roundtrip),
		cmocka_unit_test(test_reply_parse),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_reader_exempt),
		cmocka_unit_test(test_reader_exempt_after_message),
		cmocka_unit_test(test_message_parse_strict),
		cmocka_unit_test(test_direct_writers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
