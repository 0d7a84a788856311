/* human.c - human units and glyphs (see human.h). */
#include "human.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "basic/format-double.h"
#include "basic/format-human.h"
#include "ctl-util.h"

bool utf8;

const char *glyph(enum glyph g)
{
	static const char *const u[] = { "±", "…", "├─", "└─", "│ ", "  ", "·" };
	static const char *const a[] = { "+-", "...", "|-", "`-", "| ", "  ", "*" };
	return utf8 ? u[g] : a[g];
}

size_t text_width(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/* Byte offset of the first `cols` columns of s. */
static size_t text_prefix_bytes(const char *s, size_t cols)
{
	size_t i = 0, n = 0;
	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (n == cols)
				break;
			n++;
		}
	}
	return i;
}

/* s shortened to `width` columns with an ellipsis in the middle. */
char *ellipsize_middle(const char *s, size_t width)
{
	size_t w = text_width(s), ew = text_width(glyph(G_ELLIPSIS)), left, right;
	const char *tail;

	if (w <= width)
		return xstrdup(s);
	if (width <= ew)
		return xstrdup(glyph(G_ELLIPSIS));
	left = (width - ew) / 2;
	right = width - ew - left;
	tail = s + text_prefix_bytes(s, w - right);
	return xasprintf("%.*s%s%s", (int)text_prefix_bytes(s, left), s, glyph(G_ELLIPSIS), tail);
}

struct fbuf fmt_bytes(int64_t v)
{
	struct fbuf b;
	format_bytes(b.s, v);
	return b;
}

struct fbuf fmt_duration(int64_t us)
{
	struct fbuf b;
	format_duration(b.s, us);
	return b;
}

/* An age: 0.4s, 12.0s, 3min 12s, 2h 5min. */
struct fbuf fmt_age(int64_t us)
{
	struct fbuf b;

	if (us < 0)
		us = 0;
	if (us < 60000000) {
		int n = format_fixed(b.s, sizeof(b.s) - 1, (double)us / 1e6, 1); /* "%.1fs" */
		b.s[n] = 's';
		b.s[n + 1] = '\0';
	}
	else if (us < INT64_C(3600000000))
		snprintf(b.s, sizeof(b.s), "%" PRId64 "min %" PRId64 "s", us / 60000000, us % 60000000 / 1000000);
	else
		b = fmt_duration(us);
	return b;
}

/* Cores and load averages: two decimals. */
struct fbuf fmt_2f(double v)
{
	struct fbuf b;
	format_fixed(b.s, sizeof(b.s), v, 2); /* "%.2f", without printf's cost */
	return b;
}

struct fbuf fmt_int(int64_t v)
{
	struct fbuf b;
	snprintf(b.s, sizeof(b.s), "%" PRId64, v);
	return b;
}

struct fbuf fmt_unit(enum acct_unit u, int64_t v)
{
	switch (u) {
	case ACCT_UNIT_BYTES:
		return fmt_bytes(v);
	case ACCT_UNIT_USEC:
		return fmt_duration(v);
	default:
		return fmt_int(v);
	}
}

struct fbuf fmt_exact(enum acct_unit u, int64_t v)
{
	struct fbuf b;

	snprintf(b.s, sizeof(b.s), "%" PRId64 "%s", v,
		 u == ACCT_UNIT_BYTES ? " bytes" : u == ACCT_UNIT_USEC ? "us" : "");
	return b;
}

enum acct_unit quantity_unit(const char *name)
{
	int q = acct_quantity_from_name(name);

	return q >= 0 ? acct_quantity_info((enum acct_quantity)q)->unit : ACCT_UNIT_COUNT;
}

bool quantity_is_limit(const char *name)
{
	int q = acct_quantity_from_name(name);

	return q >= 0 && acct_quantity_info((enum acct_quantity)q)->limit;
}
