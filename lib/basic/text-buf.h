/* text-buf.h - a growable text buffer and the number writers that fill it.
 *
 * The /metrics page and ledger-json's records (Get, List) are tens of
 * megabytes of numbers at 10,000 cgroups, so they are written by hand, not by
 * printf: digits two at a time, exact fixed-point decimals, the shortest text
 * of a double. The writers are inline; these are hot paths.
 *
 * Two forms: text_put_*(o, ...) write at `o`, where the caller has reserved
 * room (text_buf_reserve()), and return the new end, to be committed with
 * text_buf_commit(); text_buf_append() copies bytes with its own check. */
#pragma once

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format-double.h"
#include "util.h"

struct text_buf {
	char *data;
	size_t len, alloc;
	bool failed; /* an allocation failed: the text is incomplete, not to be used */
};

/* Make room for more than `n` bytes past len (n and a terminator): the slow
 * path of text_buf_reserve(). Returns false, with `failed` set, when memory
 * (or size_t) runs out, and then for every later call until
 * text_buf_free() (or the owner clears `failed`). */
bool text_buf_grow(struct text_buf *b, size_t n);

/* Free the text; the buffer is empty and usable again. */
void text_buf_free(struct text_buf *b);

/* Room for `n` bytes and a terminator past the end: where to write them, or
 * NULL when the buffer cannot grow to it (then, and from then on, `failed`
 * is set). One branch when the room is there: after a failure, what still
 * fits the room may be written, but the text is not to be used (every
 * user tests `failed` before it reads the text). */
static inline char *text_buf_reserve(struct text_buf *b, size_t n)
{
	if (likely(b->alloc - b->len > n))
		return b->data + b->len;
	return text_buf_grow(b, n) ? b->data + b->len : NULL;
}

/* Take what was written at text_buf_reserve()'s pointer, up to `end`. */
static inline void text_buf_commit(struct text_buf *b, const char *end)
{
	b->len = (size_t)(end - b->data);
}

static inline void text_buf_append(struct text_buf *b, const void *s, size_t n)
{
	char *o = text_buf_reserve(b, n);
	if (likely(o)) {
		memcpy(o, s, n);
		b->len += n;
	}
}

/* ---- writers at a reserved pointer ------------------------------------------- */

/* The longest a writer below writes (text_put_double(): 24 bytes). */
#define TEXT_NUMBER_MAX 32

extern const char text_digit_pairs[201];

static inline char *text_put_mem(char *o, const void *s, size_t n)
{
	memcpy(o, s, n);
	return o + n;
}

static inline char *text_put_str(char *o, const char *s)
{
	return text_put_mem(o, s, strlen(s));
}

/* At most 20 bytes. */
static inline char *text_put_u64(char *o, uint64_t v)
{
	char tmp[24];
	char *t = tmp + sizeof(tmp);

	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;
		v /= 100;
		*--t = text_digit_pairs[d + 1];
		*--t = text_digit_pairs[d];
	}
	if (v >= 10) {
		*--t = text_digit_pairs[v * 2 + 1];
		*--t = text_digit_pairs[v * 2];
	} else
		*--t = (char)('0' + v);
	return text_put_mem(o, t, (size_t)(tmp + sizeof(tmp) - t));
}

/* At most 20 bytes (INT64_MIN included). */
static inline char *text_put_i64(char *o, int64_t v)
{
	if (v < 0) {
		*o++ = '-';
		return text_put_u64(o, abs_u64(v));
	}
	return text_put_u64(o, (uint64_t)v);
}

/* frac / 10^decimals (frac < 10^decimals, decimals <= 19) as ".ddd" with
 * trailing zeros dropped; nothing for 0. */
static inline char *text_put_fraction(char *o, uint64_t frac, unsigned decimals)
{
	if (frac == 0)
		return o;
	while (frac % 10 == 0) {
		frac /= 10;
		decimals--;
	}
	*o++ = '.';
	char *start = o;
	o += decimals;
	for (char *d = o; d > start; frac /= 10)
		*--d = (char)('0' + frac % 10);
	return o;
}

extern const uint64_t text_pow10[12];

/* v / 10^decimals exactly (decimals <= 11): microseconds as seconds,
 * hundredths of a percent as a ratio. At most 32 bytes. */
static inline char *text_put_fixed(char *o, int64_t v, unsigned decimals)
{
	uint64_t a = abs_u64(v), p = text_pow10[decimals];
	if (v < 0)
		*o++ = '-';
	o = text_put_u64(o, a / p);
	return text_put_fraction(o, a % p, decimals);
}

/* A double as Go's strconv 'g' with the shortest representation writes it
 * (Prometheus' text): NaN, +Inf, -Inf, an integral value below 1e15 as an
 * integer, else the fewest digits that read back to the same double
 * (format-double.h), so 0.1 is "0.1", never "0.10000000000000001". At most
 * TEXT_NUMBER_MAX bytes. */
static inline char *text_put_double(char *o, double v)
{
	if (isnan(v))
		return text_put_mem(o, "NaN", 3);
	if (isinf(v))
		return text_put_mem(o, v > 0 ? "+Inf" : "-Inf", 4);
	if (v == floor(v) && fabs(v) < 1e15)
		return text_put_i64(o, (int64_t)v);
	char buf[FORMAT_DOUBLE_MAX];
	int n = format_double_shortest(v, buf);
	return text_put_mem(o, buf, (size_t)n);
}
