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

/* A C1 control (U+0080-U+009F) is c2 80 - c2 9f in UTF-8. */
static bool is_c1(const unsigned char *u, size_t l)
{
	return l == 2 && u[0] == 0xc2 && u[1] < 0xa0;
}

size_t name_escape_span(const char *s, size_t n, enum name_escape_mode mode)
{
	const unsigned char *u = (const unsigned char *)s;
	bool terminal = mode == NAME_ESCAPE_TERMINAL;

	for (size_t i = 0; i < n;) {
		if (u[i] < 0x80) {
			if (terminal && (u[i] < 0x20 || u[i] == 0x7f))
				return i;
			i++;
			continue;
		}
		size_t l = utf8_char_len(s + i, n - i);
		if (l == 0 || (terminal && is_c1(u + i, l)))
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
		/* What stopped the span: a byte that is not UTF-8 or a C0/DEL (one
		 * byte), or a C1 control (both of its bytes). */
		size_t l = utf8_char_len(s + i, n - i) == 2 && is_c1(u + i, 2) ? 2 : 1;
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
