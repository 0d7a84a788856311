/* json-scan.h - a strict pull reader of JSON text (RFC 8259) that builds no
 * objects: the caller walks the document value by value and keeps only what
 * it needs. acctctl reads List replies (10,000 cgroups are 2.4 MB of JSON)
 * with it instead of json-c, which allocates a hash table per object and a
 * string per key and value (most of acctctl's time before).
 *
 * Usage, the member "n" of an object:
 *
 *     struct json_scan s;
 *     json_scan_init(&s, text, size);
 *     r = json_scan_enter(&s, JSON_SCAN_OBJECT);
 *     while (r >= 0 && (r = json_scan_member(&s, &key, NULL)) > 0)
 *             r = strcmp(key, "n") == 0 ? json_scan_int64(&s, &n) : json_scan_skip(&s);
 *     if (r >= 0)
 *             r = json_scan_finish(&s);   // nothing but white space after it
 *     json_scan_done(&s);
 *
 * json_scan_member() returns 1 with the next key, the reader then before the
 * member's value (read it, enter it, or skip it), or 0 after the closing
 * brace; arrays the same with json_scan_element().
 *
 * Strict: exactly RFC 8259's grammar (no comments, no single quotes, no
 * trailing commas, no leading zeros or '+', no NaN), strings valid UTF-8 (no
 * overlong forms, no surrogates, nothing above U+10FFFF, no raw control
 * characters), \u escapes paired correctly, and \u0000 rejected (strings are
 * handed out as C strings). Nesting deeper than JSON_SCAN_MAX_DEPTH fails.
 * Every error is -EBADMSG (malformed) or -ENOMEM (a string buffer), after
 * which the reader stays failed: every later call returns the same error.
 * Duplicate keys are not detected (the caller sees both, in order). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_SCAN_MAX_DEPTH 64

enum json_scan_type {
	JSON_SCAN_NONE, /* an error, or the end of the text */
	JSON_SCAN_OBJECT,
	JSON_SCAN_ARRAY,
	JSON_SCAN_STRING,
	JSON_SCAN_NUMBER,
	JSON_SCAN_TRUE,
	JSON_SCAN_FALSE,
	JSON_SCAN_NULL,
};

struct json_scan {
	const char *p, *end;
	int error;	  /* 0, or the error every call returns from then on */
	unsigned depth;	  /* containers open */
	uint64_t kinds;	  /* bit d set: the container at depth d+1 is an object */
	bool first;	  /* the innermost container has had no member/element yet */
	char *buf;	  /* unescaped strings; owned */
	size_t buf_size;
};

/* Start reading text[0..size). No allocation; json_scan_done() frees the
 * string buffer once a string was read. */
void json_scan_init(struct json_scan *s, const char *text, size_t size);
void json_scan_done(struct json_scan *s);

/* The type of the next value (white space skipped), without consuming it;
 * JSON_SCAN_NONE on an error or at the end of the text. */
enum json_scan_type json_scan_peek(struct json_scan *s);

/* Open the object or array that comes next (type: JSON_SCAN_OBJECT or
 * JSON_SCAN_ARRAY). Returns 0, or -EBADMSG when something else comes or the
 * nesting is too deep. */
int json_scan_enter(struct json_scan *s, enum json_scan_type type);
/* In an object: 1 and the next member's key in *ret_key (NUL-terminated,
 * valid until the next string is read; its length in *ret_len when not NULL),
 * the reader then before the member's value; or 0 after the closing brace.
 * Negative on an error. */
int json_scan_member(struct json_scan *s, const char **ret_key, size_t *ret_len);
/* In an array: 1 when an element follows (the reader before it), 0 after
 * the closing bracket, negative on an error. */
int json_scan_element(struct json_scan *s);

/* Read the next value as a string (valid until the next string is read;
 * length in *ret_len when not NULL). -EBADMSG when it is not a string. */
int json_scan_string(struct json_scan *s, const char **ret, size_t *ret_len);
/* Read the next value as a number: _int64 takes only integers (no fraction
 * or exponent) in range (else -ERANGE, the value consumed); _double any
 * number (finite: overflow is -ERANGE). -EBADMSG when it is not a number. */
int json_scan_int64(struct json_scan *s, int64_t *ret);
int json_scan_double(struct json_scan *s, double *ret);
/* Read the next value as true or false. -EBADMSG otherwise. */
int json_scan_bool(struct json_scan *s, bool *ret);
/* Consume a null if one comes next: 1 if it did, 0 if something else comes
 * (not consumed), negative on an error. */
int json_scan_null(struct json_scan *s);
/* Consume the next value whatever it is, checking it all. */
int json_scan_skip(struct json_scan *s);

/* After the document: 0 when only white space follows it, else -EBADMSG. */
int json_scan_finish(struct json_scan *s);
