/* fuzz-json-scan.c - libFuzzer target: the strict JSON pull reader
 * (lib/varlink/json-scan.h) on any bytes.
 *
 * Beyond "no crash" (the input is copied into a buffer of exactly its size,
 * so AddressSanitizer reports any read past the end) the target checks what
 * the module promises:
 *   - json_scan_skip() + json_scan_finish() and a full walk with the typed
 *     readers (enter, member, element, string, int64, bool, null) agree on
 *     whether the text is valid, and fail only with -EBADMSG;
 *   - every string handed out has no NUL inside its length, and the walk's
 *     canonical re-serialization (strings re-escaped) is valid again: the
 *     strings are valid UTF-8;
 *   - nothing the reader accepts is rejected by the varlink codec's reader
 *     (json-c, strict, plus its RFC 8259 checks), for objects nested less
 *     deeply than both limits: json-scan is at least as strict (json-c
 *     also takes NaN, "1." and \u0000, which json-scan rejects).
 *
 * Built by meson with -Dfuzz=true (clang); make check-fuzz and make fuzz run
 * it (tests/fuzz/run-fuzz.sh), from a copy of tests/fuzz/corpus/json-scan. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-scan.h"
#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

struct out {
	char *p;
	size_t n, size;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->size - o->n < n + 1) {
		o->size = (o->n + n + 1) * 2;
		o->p = realloc(o->p, o->size);
		check(o->p != NULL, "out of memory");
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
	o->p[o->n] = '\0';
}

static void put_string(struct out *o, const char *s, size_t n)
{
	check(strlen(s) == n, "a string has no NUL inside its length");
	put(o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		char esc[8];
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == '"' || c == '\\') {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			put(o, esc, 6);
		} else
			put(o, s + i, 1);
	}
	put(o, "\"", 1);
}

static int walk(struct json_scan *s, struct out *o)
{
	const char *str;
	size_t len;
	int64_t v;
	bool b;
	int r;

	switch (json_scan_peek(s)) {
	case JSON_SCAN_OBJECT:
	case JSON_SCAN_ARRAY: {
		bool object = json_scan_peek(s) == JSON_SCAN_OBJECT, first = true;
		r = json_scan_enter(s, object ? JSON_SCAN_OBJECT : JSON_SCAN_ARRAY);
		if (r < 0)
			return r;
		put(o, object ? "{" : "[", 1);
		while ((r = object ? json_scan_member(s, &str, &len) : json_scan_element(s)) > 0) {
			if (!first)
				put(o, ",", 1);
			first = false;
			if (object) {
				put_string(o, str, len);
				put(o, ":", 1);
			}
			r = walk(s, o);
			if (r < 0)
				return r;
		}
		if (r < 0)
			return r;
		put(o, object ? "}" : "]", 1);
		return 0;
	}
	case JSON_SCAN_STRING:
		r = json_scan_string(s, &str, &len);
		if (r >= 0)
			put_string(o, str, len);
		return r;
	case JSON_SCAN_NUMBER:
		r = json_scan_int64(s, &v);
		if (r == -ERANGE) { /* a fraction, exponent or out of range: consumed */
			put(o, "0", 1);
			return 0;
		}
		if (r >= 0) {
			char num[32];
			put(o, num, (size_t)snprintf(num, sizeof(num), "%lld", (long long)v));
		}
		return r;
	case JSON_SCAN_TRUE:
	case JSON_SCAN_FALSE:
		r = json_scan_bool(s, &b);
		if (r >= 0)
			put(o, b ? "true" : "false", b ? 4 : 5);
		return r;
	case JSON_SCAN_NULL:
		r = json_scan_null(s);
		if (r > 0)
			put(o, "null", 4);
		return r < 0 ? r : (r == 0 ? -EBADMSG : 0);
	default:
		return json_scan_skip(s); /* fails: nothing valid comes */
	}
}

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	struct out o = { 0 };
	struct json_scan s;
	size_t opens = 0;
	int a, b;

	check(text != NULL, "out of memory");
	memcpy(text, data, size);

	a = skip_all(text, size);
	check(a == 0 || a == -EBADMSG, "skip: 0 or -EBADMSG");

	json_scan_init(&s, text, size);
	b = walk(&s, &o);
	if (b >= 0)
		b = json_scan_finish(&s);
	json_scan_done(&s);
	check(b == 0 || b == -EBADMSG, "walk: 0 or -EBADMSG");
	check(a == b, "skip and walk agree");

	if (a == 0) {
		check(o.p != NULL && skip_all(o.p, o.n) == 0, "the canonical form is valid again");
		for (size_t i = 0; i < size; i++)
			opens += text[i] == '[' || text[i] == '{';
		size_t i = 0;
		while (i < size && strchr(" \t\r\n", text[i]))
			i++;
		if (i < size && text[i] == '{' && opens < 60) {
			struct json_object *msg = NULL;
			check(varlink_message_parse(text, size, 0, &msg) == 0, "json-c takes what json-scan takes");
			json_object_put(msg);
		}
	}
	free(o.p);
	free(text);
	return 0;
}
