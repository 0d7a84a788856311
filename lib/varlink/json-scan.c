/* json-scan.c - a strict pull reader of JSON text (see json-scan.h). One pass
 * over the bytes, no allocation but one buffer for unescaped strings. */
#include "json-scan.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "basic/name-escape.h"
#include "basic/util.h"

static_assert(JSON_SCAN_MAX_DEPTH <= 64, "container kinds fit in a uint64_t");

void json_scan_init(struct json_scan *s, const char *text, size_t size)
{
	*s = (struct json_scan){ .p = text, .end = text + size };
}

void json_scan_done(struct json_scan *s)
{
	free(s->buf);
	s->buf = NULL;
	s->buf_size = 0;
}

static int fail(struct json_scan *s, int error)
{
	if (!s->error)
		s->error = error;
	return s->error;
}

static void skip_space(struct json_scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

enum json_scan_type json_scan_peek(struct json_scan *s)
{
	if (s->error)
		return JSON_SCAN_NONE;
	skip_space(s);
	if (s->p >= s->end)
		return JSON_SCAN_NONE;
	switch (*s->p) {
	case '{':
		return JSON_SCAN_OBJECT;
	case '[':
		return JSON_SCAN_ARRAY;
	case '"':
		return JSON_SCAN_STRING;
	case 't':
		return JSON_SCAN_TRUE;
	case 'f':
		return JSON_SCAN_FALSE;
	case 'n':
		return JSON_SCAN_NULL;
	case '-':
	case '0' ... '9':
		return JSON_SCAN_NUMBER;
	default:
		return JSON_SCAN_NONE;
	}
}

/* ---- containers ------------------------------------------------------------- */

int json_scan_enter(struct json_scan *s, enum json_scan_type type)
{
	if (s->error)
		return s->error;
	if ((type != JSON_SCAN_OBJECT && type != JSON_SCAN_ARRAY) || json_scan_peek(s) != type)
		return fail(s, -EBADMSG);
	if (s->depth >= JSON_SCAN_MAX_DEPTH)
		return fail(s, -EBADMSG);
	if (type == JSON_SCAN_OBJECT)
		s->kinds |= UINT64_C(1) << s->depth;
	else
		s->kinds &= ~(UINT64_C(1) << s->depth);
	s->depth++;
	s->first = true;
	s->p++;
	return 0;
}

/* Before the next member or element of the innermost container (an object
 * when `object`): 1 when one follows, 0 after the closing bracket. */
static int next_item(struct json_scan *s, bool object)
{
	char close = object ? '}' : ']';

	if (s->error)
		return s->error;
	if (s->depth == 0 || !!(s->kinds & (UINT64_C(1) << (s->depth - 1))) != object)
		return fail(s, -EBADMSG); /* not in such a container: a caller's mistake */
	skip_space(s);
	if (s->p >= s->end)
		return fail(s, -EBADMSG);
	if (*s->p == close) {
		s->p++;
		s->depth--;
		s->first = false; /* the parent has had this container as an item */
		return 0;
	}
	if (!s->first) {
		if (*s->p != ',')
			return fail(s, -EBADMSG);
		s->p++;
		skip_space(s);
	}
	s->first = false;
	return 1;
}

int json_scan_member(struct json_scan *s, const char **ret_key, size_t *ret_len)
{
	int r = next_item(s, true);
	if (r <= 0)
		return r;
	r = json_scan_string(s, ret_key, ret_len);
	if (r < 0)
		return r;
	skip_space(s);
	if (s->p >= s->end || *s->p != ':')
		return fail(s, -EBADMSG);
	s->p++;
	return 1;
}

int json_scan_element(struct json_scan *s)
{
	return next_item(s, false);
}

/* ---- strings ------------------------------------------------------------------ */

/* Room for n more bytes after the first `used` of the buffer. */
static int reserve(struct json_scan *s, size_t used, size_t n)
{
	if (s->buf_size - used >= n && s->buf)
		return 0;
	size_t size = MAX(MAX(s->buf_size * 2, used + n), (size_t)256);
	char *b = realloc(s->buf, size);
	if (!b)
		return fail(s, -ENOMEM);
	s->buf = b;
	s->buf_size = size;
	return 0;
}

static int hex4(const char *p, unsigned *ret)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -EBADMSG;
	}
	*ret = v;
	return 0;
}

static size_t utf8_put(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A \u escape at p (after the backslash and 'u'), a pair where it is a high
 * surrogate: the code point, and how many input bytes after "\u" it took. */
static int unicode_escape(const char *p, const char *end, unsigned *ret_cp, size_t *ret_used)
{
	unsigned hi, lo;

	if (end - p < 4 || hex4(p, &hi) < 0)
		return -EBADMSG;
	if (hi == 0)
		return -EBADMSG; /* U+0000: strings are C strings */
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return -EBADMSG; /* a low surrogate alone */
	if (hi < 0xd800 || hi > 0xdbff) {
		*ret_cp = hi;
		*ret_used = 4;
		return 0;
	}
	/* a high surrogate: a low one must follow */
	if (end - p < 10 || p[4] != '\\' || p[5] != 'u' || hex4(p + 6, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
		return -EBADMSG;
	*ret_cp = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
	*ret_used = 10;
	return 0;
}

/* Bytes copied as they are inside a string: printable ASCII but '"' and '\\'. */
static const bool plain[256] = {
	[0x20 ... 0x21] = true, /* '"' is 0x22 */
	[0x23 ... 0x5b] = true, /* '\\' is 0x5c */
	[0x5d ... 0x7f] = true,
};

int json_scan_string(struct json_scan *s, const char **ret, size_t *ret_len)
{
	const unsigned char *p, *end = (const unsigned char *)s->end;
	size_t used = 0;

	if (json_scan_peek(s) != JSON_SCAN_STRING)
		return fail(s, -EBADMSG);
	p = (const unsigned char *)s->p + 1;
	for (;;) {
		/* a run of plain printable ASCII, copied at once */
		const unsigned char *q = p;
		while (q < end && plain[*q])
			q++;
		if (reserve(s, used, (size_t)(q - p) + 5) < 0)
			return s->error;
		memcpy(s->buf + used, p, (size_t)(q - p));
		used += (size_t)(q - p);
		p = q;
		if (p >= end || *p < 0x20)
			return fail(s, -EBADMSG); /* unterminated, or a raw control character */
		if (*p == '"') {
			p++;
			break;
		}
		if (*p >= 0x80) {
			size_t n = utf8_char_len((const char *)p, (size_t)(end - p));
			if (n == 0)
				return fail(s, -EBADMSG);
			memcpy(s->buf + used, p, n);
			used += n;
			p += n;
			continue;
		}
		/* a backslash */
		if (end - p < 2)
			return fail(s, -EBADMSG);
		char c = (char)p[1];
		p += 2;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			s->buf[used++] = c;
			break;
		case 'b':
			s->buf[used++] = '\b';
			break;
		case 'f':
			s->buf[used++] = '\f';
			break;
		case 'n':
			s->buf[used++] = '\n';
			break;
		case 'r':
			s->buf[used++] = '\r';
			break;
		case 't':
			s->buf[used++] = '\t';
			break;
		case 'u': {
			unsigned cp;
			size_t n;
			if (unicode_escape((const char *)p, s->end, &cp, &n) < 0)
				return fail(s, -EBADMSG);
			used += utf8_put(s->buf + used, cp);
			p += n;
			break;
		}
		default:
			return fail(s, -EBADMSG);
		}
	}
	s->buf[used] = '\0';
	s->p = (const char *)p;
	*ret = s->buf;
	if (ret_len)
		*ret_len = used;
	return 0;
}

/* ---- numbers, literals ------------------------------------------------------ */

/* The span of the number at s->p (RFC 8259's grammar); whether it has a
 * fraction or exponent. 0 or -EBADMSG. */
static int number_span(struct json_scan *s, size_t *ret_len, bool *ret_integer)
{
	const char *p = s->p, *end = s->end;
	bool integer = true;

	if (p < end && *p == '-')
		p++;
	if (p >= end || *p < '0' || *p > '9')
		return -EBADMSG;
	if (*p == '0')
		p++;
	else
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	if (p < end && *p == '.') {
		integer = false;
		p++;
		if (p >= end || *p < '0' || *p > '9')
			return -EBADMSG;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		integer = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return -EBADMSG;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	*ret_len = (size_t)(p - s->p);
	*ret_integer = integer;
	return 0;
}

int json_scan_int64(struct json_scan *s, int64_t *ret)
{
	bool integer, neg;
	uint64_t v = 0, limit;
	size_t n;

	if (json_scan_peek(s) != JSON_SCAN_NUMBER || number_span(s, &n, &integer) < 0)
		return fail(s, -EBADMSG);
	const char *p = s->p;
	s->p += n;
	if (!integer)
		return -ERANGE;
	neg = *p == '-';
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (size_t i = neg; i < n; i++) {
		unsigned d = (unsigned)(p[i] - '0');
		if (v > (limit - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* The exact double of a short decimal (at most 15 digits, at most 22 after
 * the point, no exponent), or false: digits and 10^k are then exact doubles,
 * and one division rounds correctly, as strtod() would (Clinger's fast
 * path). Most figures of a List reply ("0.0", "9.91", "615961") are such. */
static bool short_decimal(const char *p, size_t n, double *ret)
{
	static const double pow10[] = { 1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8,  1e9,  1e10, 1e11,
					 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
	uint64_t m = 0;
	size_t digits = 0, frac = 0, i = 0;
	bool neg = false, point = false;

	if (p[0] == '-')
		neg = true, i++;
	for (; i < n; i++) {
		if (p[i] == '.') {
			point = true;
			continue;
		}
		if (p[i] < '0' || p[i] > '9')
			return false; /* an exponent */
		m = m * 10 + (uint64_t)(p[i] - '0');
		if (m > 0 || point)
			digits++;
		frac += point;
		if (digits > 15 || frac > 22)
			return false;
	}
	double d = (double)m / pow10[frac];
	*ret = neg ? -d : d;
	return true;
}

int json_scan_double(struct json_scan *s, double *ret)
{
	bool integer;
	size_t n;
	char *e;

	if (json_scan_peek(s) != JSON_SCAN_NUMBER || number_span(s, &n, &integer) < 0)
		return fail(s, -EBADMSG);
	if (short_decimal(s->p, n, ret)) {
		s->p += n;
		return 0;
	}
	/* strtod() wants a terminated string, as json-c it assumes the "C"
	 * LC_NUMERIC (acctctl never sets it) */
	if (reserve(s, 0, n + 1) < 0)
		return s->error;
	memcpy(s->buf, s->p, n);
	s->buf[n] = '\0';
	s->p += n;
	errno = 0;
	double d = strtod(s->buf, &e);
	if ((size_t)(e - s->buf) != n)
		return fail(s, -EBADMSG);
	if (!isfinite(d))
		return -ERANGE;
	*ret = d; /* underflow to 0 or a denormal is fine */
	return 0;
}

static int literal(struct json_scan *s, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return fail(s, -EBADMSG);
	s->p += n;
	return 0;
}

int json_scan_bool(struct json_scan *s, bool *ret)
{
	switch (json_scan_peek(s)) {
	case JSON_SCAN_TRUE:
		if (literal(s, "true") < 0)
			return s->error;
		*ret = true;
		return 0;
	case JSON_SCAN_FALSE:
		if (literal(s, "false") < 0)
			return s->error;
		*ret = false;
		return 0;
	default:
		return fail(s, -EBADMSG);
	}
}

int json_scan_null(struct json_scan *s)
{
	if (json_scan_peek(s) != JSON_SCAN_NULL)
		return s->error ? s->error : 0;
	return literal(s, "null") < 0 ? s->error : 1;
}

int json_scan_skip(struct json_scan *s)
{
	unsigned depth = s->depth;
	int r;

	do {
		switch (json_scan_peek(s)) {
		case JSON_SCAN_OBJECT:
		case JSON_SCAN_ARRAY: {
			bool object = json_scan_peek(s) == JSON_SCAN_OBJECT;
			r = json_scan_enter(s, object ? JSON_SCAN_OBJECT : JSON_SCAN_ARRAY);
			if (r < 0)
				return r;
			break;
		}
		case JSON_SCAN_STRING:
			r = json_scan_string(s, &(const char *){ NULL }, NULL);
			if (r < 0)
				return r;
			break;
		case JSON_SCAN_NUMBER: {
			bool integer;
			size_t n;
			if (number_span(s, &n, &integer) < 0)
				return fail(s, -EBADMSG);
			s->p += n;
			break;
		}
		case JSON_SCAN_TRUE:
			if (literal(s, "true") < 0)
				return s->error;
			break;
		case JSON_SCAN_FALSE:
			if (literal(s, "false") < 0)
				return s->error;
			break;
		case JSON_SCAN_NULL:
			if (literal(s, "null") < 0)
				return s->error;
			break;
		default:
			return fail(s, -EBADMSG);
		}
		/* close every container that ends here, and step to the next item
		 * of the innermost one still open below where we started */
		while (s->depth > depth) {
			bool object = s->kinds & (UINT64_C(1) << (s->depth - 1));
			r = object ? json_scan_member(s, &(const char *){ NULL }, NULL) : json_scan_element(s);
			if (r < 0)
				return r;
			if (r > 0)
				break; /* a value follows: read it */
		}
	} while (s->depth > depth);
	return 0;
}

int json_scan_finish(struct json_scan *s)
{
	if (s->error)
		return s->error;
	skip_space(s);
	if (s->depth != 0 || s->p != s->end)
		return fail(s, -EBADMSG);
	return 0;
}
