/* parse.c - sizes, durations and booleans. See parse.h for the syntax. */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* More decimal places are refused: with at most 18 the fraction's digits stay
 * below 10^18, so fraction * factor (factor < 2^65) fits in 128 bits and the
 * rounding is exact. */
#define MAX_FRACTION_DIGITS 18

/* Decimal digits at *s up to the first non-digit, which *ret_end points at.
 * Returns 0, -EINVAL when there is no digit, or -ERANGE when the number does
 * not fit (*ret_end still points past all the digits then). */
static int parse_digits(const char *s, uint64_t *ret, const char **ret_end)
{
	uint64_t v = 0;
	bool overflow = false;
	const char *p;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (p = s; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	*ret_end = p;
	if (overflow)
		return -ERANGE;
	*ret = v;
	return 0;
}

/* A decimal number with an optional fraction: "12", "1.5". */
struct decimal {
	uint64_t whole;    /* the integer part */
	uint64_t fraction; /* the digits after the point, as an integer */
	unsigned places;   /* how many there are */
};

/* The number at s; *ret_end points past it. -EINVAL when malformed ("", ".5",
 * "1.", more than MAX_FRACTION_DIGITS places); -ERANGE when the integer part
 * does not fit, with *ret and *ret_end set all the same, so that the caller
 * can still tell a well-formed value from a malformed one. */
static int parse_decimal(const char *s, struct decimal *ret, const char **ret_end)
{
	struct decimal d = { 0 };
	const char *end = NULL;
	int r;

	r = parse_digits(s, &d.whole, &end);
	if (r == -EINVAL)
		return r;
	if (*end == '.') {
		const char *f = end + 1;

		if (parse_digits(f, &d.fraction, &end) < 0 || end - f > MAX_FRACTION_DIGITS)
			return -EINVAL;
		d.places = (unsigned)(end - f);
	}
	*ret = d;
	*ret_end = end;
	return r;
}

/* d * factor rounded down, or -ERANGE past UINT64_MAX. */
static int scale(const struct decimal *d, uint64_t factor, uint64_t *ret)
{
	unsigned __int128 v = (unsigned __int128)d->whole * factor, ten_pow = 1;

	for (unsigned i = 0; i < d->places; i++)
		ten_pow *= 10;
	v += (unsigned __int128)d->fraction * factor / ten_pow;
	if (v > UINT64_MAX)
		return -ERANGE;
	*ret = (uint64_t)v;
	return 0;
}

struct unit {
	const char *name;
	uint64_t factor;
};

/* The entry of units (ended by a NULL name) spelt exactly s[0, len). */
static const struct unit *unit_find(const struct unit *units, const char *s, size_t len)
{
	for (; units->name; units++)
		if (strlen(units->name) == len && strncmp(units->name, s, len) == 0)
			return units;
	return NULL;
}

/* systemd's size units (parse_size() with base 1024, as MemoryMax= reads
 * them) and the IEC names of the same factors. Case matters, as in systemd. */
static const struct unit size_units[] = {
	{ "", 1 },       { "B", 1 },
	{ "K", SIZE_K }, { "KiB", SIZE_K },
	{ "M", SIZE_M }, { "MiB", SIZE_M },
	{ "G", SIZE_G }, { "GiB", SIZE_G },
	{ "T", SIZE_T }, { "TiB", SIZE_T },
	{ "P", SIZE_P }, { "PiB", SIZE_P },
	{ "E", SIZE_E }, { "EiB", SIZE_E },
	{ NULL, 0 },
};

/* The unit part of a size: after the number and the blanks that may follow
 * it. */
static const char *size_unit_text(const char *end)
{
	return end + strspn(end, " \t");
}

int acct_parse_size(const char *s, uint64_t *ret)
{
	const struct unit *u;
	const char *end = NULL, *unit;
	struct decimal d;
	bool negative = false;
	int r;

	if (!s || !*s)
		return -EINVAL;
	if (*s == '-') {
		negative = true;
		s++;
	}
	r = parse_decimal(s, &d, &end);
	if (r == -EINVAL)
		return r;
	unit = size_unit_text(end);
	u = unit_find(size_units, unit, strlen(unit));
	/* blanks only before a unit; no fraction of a byte, which would round
	 * to a value nobody wrote */
	if (!u || (!*unit && unit != end) || (u->factor == 1 && d.places > 0))
		return -EINVAL;
	if (negative || r < 0)
		return -ERANGE;
	return scale(&d, u->factor, ret);
}

const char *acct_size_refusal(const char *s)
{
	static const struct {
		char letter;
		const char *text;
	} meant[] = {
		{ 'K', "ambiguous unit: sizes are powers of 1024, write K or KiB" },
		{ 'M', "ambiguous unit: sizes are powers of 1024, write M or MiB" },
		{ 'G', "ambiguous unit: sizes are powers of 1024, write G or GiB" },
		{ 'T', "ambiguous unit: sizes are powers of 1024, write T or TiB" },
		{ 'P', "ambiguous unit: sizes are powers of 1024, write P or PiB" },
		{ 'E', "ambiguous unit: sizes are powers of 1024, write E or EiB" },
	};
	const struct unit *u;
	const char *end = NULL, *unit;
	struct decimal d;

	if (!s)
		return "expected " ACCT_SIZE_SYNTAX;
	s += *s == '-';
	if (parse_decimal(s, &d, &end) == -EINVAL)
		return "expected " ACCT_SIZE_SYNTAX;
	unit = size_unit_text(end);
	u = unit_find(size_units, unit, strlen(unit));
	if (u && u->factor == 1 && d.places > 0)
		return "a count of bytes takes no fraction: use K, M or G for parts of a unit";
	for (size_t i = 0; !u && i < ELEMENTSOF(meant); i++) {
		/* the letter in either case, then nothing, a B or an iB in any
		 * case: some spelling acct_parse_size() does not take */
		if (toupper((unsigned char)unit[0]) == meant[i].letter &&
		    (!unit[1] || strcasecmp(unit + 1, "b") == 0 || strcasecmp(unit + 1, "ib") == 0))
			return meant[i].text;
	}
	return "expected " ACCT_SIZE_SYNTAX;
}

/* systemd's time units (parse_sec(), as unit files read them): "m" is a
 * minute and "M" a month, case matters. A month and a year are systemd's
 * averages: 30.44 and 365.25 days. */
#define USEC_PER_DAY (24 * USEC_PER_HOUR)
static const struct unit seconds = { "s", USEC_PER_SEC };
static const struct unit time_units[] = {
	{ "us", 1 },                   { "usec", 1 },
	{ "ms", USEC_PER_MSEC },       { "msec", USEC_PER_MSEC },
	{ "s", USEC_PER_SEC },         { "sec", USEC_PER_SEC },
	{ "second", USEC_PER_SEC },    { "seconds", USEC_PER_SEC },
	{ "m", USEC_PER_MIN },         { "min", USEC_PER_MIN },
	{ "minute", USEC_PER_MIN },    { "minutes", USEC_PER_MIN },
	{ "h", USEC_PER_HOUR },        { "hr", USEC_PER_HOUR },
	{ "hour", USEC_PER_HOUR },     { "hours", USEC_PER_HOUR },
	{ "d", USEC_PER_DAY },         { "day", USEC_PER_DAY },
	{ "days", USEC_PER_DAY },
	{ "w", 7 * USEC_PER_DAY },     { "week", 7 * USEC_PER_DAY },
	{ "weeks", 7 * USEC_PER_DAY },
	{ "M", 2629800 * USEC_PER_SEC }, { "month", 2629800 * USEC_PER_SEC },
	{ "months", 2629800 * USEC_PER_SEC },
	{ "y", 31557600 * USEC_PER_SEC }, { "year", 31557600 * USEC_PER_SEC },
	{ "years", 31557600 * USEC_PER_SEC },
	{ NULL, 0 },
};

int acct_parse_duration_us(const char *s, uint64_t *ret)
{
	const char *p;
	bool negative = false, overflow = false;
	unsigned parts = 0;
	uint64_t total = 0;

	if (!s || !*s)
		return -EINVAL;
	if (*s == '-') {
		negative = true;
		s++;
	}
	for (p = s; *p; parts++) {
		const struct unit *u;
		const char *end = NULL, *unit;
		struct decimal d;
		uint64_t v = 0;
		size_t len;
		int r;

		r = parse_decimal(p, &d, &end);
		if (r == -EINVAL)
			return r;
		unit = end + strspn(end, " \t");
		len = strspn(unit, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
		if (len == 0) {
			/* a bare number is seconds, but only on its own: in
			 * "1min 30" it is more likely a slip than 30 s */
			if (*unit || unit != end || parts > 0)
				return -EINVAL;
			u = &seconds;
		} else if (!(u = unit_find(time_units, unit, len)))
			return -EINVAL;
		p = unit + len;
		/* blanks between parts, never at the end */
		p += strspn(p, " \t");
		if (p != unit + len && !*p)
			return -EINVAL;
		if (r < 0 || scale(&d, u->factor, &v) < 0 || total > UINT64_MAX - v)
			overflow = true;
		else
			total += v;
	}
	if (negative || overflow)
		return -ERANGE;
	*ret = total;
	return 0;
}

int acct_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

int acct_parse_uint64(const char *s, uint64_t *ret)
{
	const char *end = NULL;
	bool negative = false;
	uint64_t v = 0;
	int r;

	if (*s == '-') {
		negative = true;
		s++;
	}
	r = parse_digits(s, &v, &end);
	if (r == -EINVAL || *end)
		return -EINVAL;
	if (negative || r < 0)
		return -ERANGE;
	*ret = v;
	return 0;
}
