/* name-escape.c - the served text of cgroup paths (see name-escape.h). */
#include "name-escape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char hex[] = "0123456789abcdef";

size_t utf8_char_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
	size_t len;

	if (n == 0)
		return 0;
	if (u[0] < 0x80)
		return 1;
	/* The lead byte says how many follow; the second byte's range rules out
	 * overlong forms (e0, f0), surrogates (ed) and > U+10FFFF (f4). c0, c1
	 * and f5-ff lead nothing valid. */
	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		len = 2;
	else if (u[0] >= 0xe0 && u[0] <= 0xef) {
		len = 3;
		if (u[0] == 0xe0)
			lo = 0xa0;
		else if (u[0] == 0xed)
			hi = 0x9f;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		len = 4;
		if (u[0] == 0xf0)
			lo = 0x90;
		else if (u[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < len || u[1] < lo || u[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((u[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

size_t utf8_boundary(const char *s, size_t n, size_t max)
{
	size_t i = 0;

	if (n <= max)
		return n;
	while (i < max) {
		size_t l = utf8_char_len(s + i, n - i);
		if (l == 0)
			l = 1;
		if (i + l > max)
			break;
		i += l;
	}
	return i;
}

/* The characters that text mode escapes although they are valid UTF-8: a
 * terminal or a text renderer obeys them (name-escape.h). By code point. */
static const struct {
	uint32_t lo, hi;
} text_controls[] = {
	{ 0x0000, 0x001f }, /* C0 */
	{ 0x007f, 0x009f }, /* DEL, C1 (U+009B: CSI) */
	{ 0x061c, 0x061c }, /* ARABIC LETTER MARK */
	{ 0x200e, 0x200f }, /* LRM, RLM */
	{ 0x202a, 0x202e }, /* LRE, RLE, PDF, LRO, RLO */
	{ 0x2066, 0x2069 }, /* LRI, RLI, FSI, PDI */
};

/* Whether the valid UTF-8 character u[0..l) is one of text_controls[]. All
 * of them are below U+0800, or three bytes starting e2 (U+2000-U+2FFF), so
 * most characters are decided by their lead byte. */
static bool is_text_control(const unsigned char *u, size_t l)
{
	uint32_t cp;

	if (l == 1)
		return u[0] < 0x20 || u[0] == 0x7f;
	if (l == 2)
		cp = (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
	else if (l == 3 && u[0] == 0xe2)
		cp = (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
	else
		return false;
	for (size_t i = 0; i < sizeof(text_controls) / sizeof(text_controls[0]); i++)
		if (cp >= text_controls[i].lo && cp <= text_controls[i].hi)
			return true;
	return false;
}

/* How many bytes at u (n left) are escaped together: the whole character
 * for a control (mode permitting), one byte for a byte that is not UTF-8;
 * 0 for a character that passes through, whose length is then *ret_len. */
static size_t escaped_len(const char *s, size_t n, enum name_escape_mode mode, size_t *ret_len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t l = u[0] < 0x80 ? 1 : utf8_char_len(s, n);

	if (l == 0)
		return 1;
	*ret_len = l;
	return mode == NAME_ESCAPE_TEXT && is_text_control(u, l) ? l : 0;
}

size_t name_escape_span(const char *s, size_t n, enum name_escape_mode mode)
{
	for (size_t i = 0; i < n;) {
		size_t l = 0;
		if (escaped_len(s + i, n - i, mode, &l) > 0)
			return i;
		i += l;
	}
	return n;
}

size_t name_escape_to(char *out, const char *s, size_t n, enum name_escape_mode mode)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0;

	for (size_t i = 0;;) {
		size_t k = name_escape_span(s + i, n - i, mode);
		memcpy(out + o, s + i, k);
		o += k;
		i += k;
		if (i >= n)
			return o;
		/* What stopped the span: a byte that is not UTF-8 (one byte), or a
		 * control (all of its bytes). */
		size_t unused, l = escaped_len(s + i, n - i, mode, &unused);
		for (size_t j = 0; j < l; j++, i++) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[u[i] >> 4];
			out[o++] = hex[u[i] & 15];
		}
	}
}

char *name_escape(const char *s, enum name_escape_mode mode)
{
	size_t n = strlen(s);

	if (n > (SIZE_MAX - 1) / NAME_ESCAPE_MAX_EXPANSION)
		return NULL;
	char *out = malloc(n * NAME_ESCAPE_MAX_EXPANSION + 1);
	if (!out)
		return NULL;
	out[name_escape_to(out, s, n, mode)] = '\0';
	return out;
}

const char *name_text(const char *s, char **buf)
{
	size_t n = strlen(s);

	if (name_escape_span(s, n, NAME_ESCAPE_TEXT) == n)
		return s;
	*buf = name_escape(s, NAME_ESCAPE_TEXT);
	return *buf ? *buf : "(a name: out of memory)";
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* uppercase too: name_escape_to() writes lowercase only */
}

/* The byte of the escape that starts at p, or -1 when none does there. Reads
 * no further than a NUL. */
static int escape_at(const char *p)
{
	if (p[0] != '\\' || p[1] != 'x')
		return -1;
	int h = hex_digit(p[2]);
	if (h < 0)
		return -1;
	int l = hex_digit(p[3]);
	if (l < 0)
		return -1;
	int v = h << 4 | l;
	/* only what an escaping mode writes: never '/', '.', NUL or "\x2d" */
	return (v >= 0x01 && v <= 0x1f) || v == 0x7f || v >= 0x80 ? v : -1;
}

bool name_unescape(const char *s, char *out)
{
	const char *p = s;

	while ((p = strchr(p, '\\')) && escape_at(p) < 0)
		p++;
	if (!p)
		return false;
	size_t o = (size_t)(p - s);
	memcpy(out, s, o);
	while (*p) {
		int v = escape_at(p);
		if (v >= 0) {
			out[o++] = (char)v;
			p += 4;
		} else
			out[o++] = *p++;
	}
	out[o] = '\0';
	return true;
}
