/* format-double.c - the shortest decimal text of a double that reads back
 * (see format-double.h).
 *
 * How: any decimal of at most 15 significant digits survives a trip through a
 * normal double (DBL_DIG), so when some text of 15 digits or fewer reads back,
 * the nearest 15-digit rounding of v, with its trailing zeros cut, is that
 * text.
 * Past 15 digits the nearest rounding may miss where a neighbour would not
 * (v's interval of values that read back to it is lopsided at a power of two),
 * so at 16 digits both neighbours are tried too; 17 digits always read back.
 * The digits come from printf's %e, the check from strtod() on an integer
 * mantissa with an exponent ("2799e-2"), which no locale changes. */
#include "format-double.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct decimal {
	char digits[24]; /* significant digits (at most 17), NUL-terminated */
	int exp10;       /* the first digit's power of ten */
};

/* The nearest decimal of `precision` significant digits to a > 0. */
static void nearest(double a, int precision, struct decimal *d)
{
	char tmp[64];
	size_t n = 0;
	const char *p;

	snprintf(tmp, sizeof(tmp), "%.*e", precision - 1, a);
	/* "D[<radix character>DDD]e[+-]XX": the radix character may be any
	 * string in some locales, so take the digits wherever they are. */
	for (p = tmp; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9' && n < sizeof(d->digits) - 1)
			d->digits[n++] = *p;
	d->digits[n] = 0;
	d->exp10 = *p == 'e' ? atoi(p + 1) : 0;
}

/* Whether d reads back as a. */
static bool reads_back(const struct decimal *d, double a)
{
	char tmp[64];
	int len = (int)strlen(d->digits);

	snprintf(tmp, sizeof(tmp), "%se%d", d->digits, d->exp10 - (len - 1));
	return strtod(tmp, NULL) == a;
}

/* d's digits as an integer plus `delta`, if it keeps the same number of
 * digits (otherwise a shorter text exists and was already tried). */
static bool neighbour(const struct decimal *d, int delta, struct decimal *ret)
{
	int len = (int)strlen(d->digits);
	uint64_t m = strtoull(d->digits, NULL, 10), lo = 1, hi;

	for (int i = 1; i < len; i++)
		lo *= 10;
	hi = lo * 10;
	m += (uint64_t)(int64_t)delta;
	if (m < lo || m >= hi)
		return false;
	snprintf(ret->digits, sizeof(ret->digits), "%llu", (unsigned long long)m);
	ret->exp10 = d->exp10;
	return true;
}

static void shortest(double a, struct decimal *d)
{
	struct decimal c;

	/* Subnormals (and a margin above them) carry fewer than 15 digits, so
	 * the argument above does not hold there: count up instead. Rare. */
	for (int p = a < 1e-290 ? 1 : 15; p < 15; p++) {
		nearest(a, p, d);
		if (reads_back(d, a))
			return;
	}
	nearest(a, 15, d);
	if (reads_back(d, a))
		return;
	nearest(a, 16, d);
	if (reads_back(d, a))
		return;
	if (neighbour(d, -1, &c) && reads_back(&c, a)) {
		*d = c;
		return;
	}
	if (neighbour(d, +1, &c) && reads_back(&c, a)) {
		*d = c;
		return;
	}
	nearest(a, 17, d);
}

int format_double_shortest(double v, char buf[static FORMAT_DOUBLE_MAX])
{
	struct decimal d;
	char *o = buf;

	buf[0] = 0;
	if (!isfinite(v))
		return -EDOM;
	if (signbit(v))
		*o++ = '-';
	if (v == 0) {
		*o++ = '0';
		*o = 0;
		return (int)(o - buf);
	}
	shortest(fabs(v), &d);
	size_t n = strlen(d.digits);
	while (n > 1 && d.digits[n - 1] == '0')
		d.digits[--n] = 0;

	int e = d.exp10;
	if (e < -4 || e > 16) {
		*o++ = d.digits[0];
		if (n > 1) {
			*o++ = '.';
			memcpy(o, d.digits + 1, n - 1);
			o += n - 1;
		}
		o += sprintf(o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	} else if (e < 0) {
		memcpy(o, "0.", 2);
		o += 2;
		for (int i = -1; i > e; i--)
			*o++ = '0';
		memcpy(o, d.digits, n);
		o += n;
	} else {
		/* e + 1 digits before the point, zeros if the digits run out. */
		for (int i = 0; i <= e; i++)
			*o++ = (size_t)i < n ? d.digits[i] : '0';
		if (n > (size_t)e + 1) {
			*o++ = '.';
			memcpy(o, d.digits + e + 1, n - (size_t)e - 1);
			o += n - (size_t)e - 1;
		}
	}
	*o = 0;
	return (int)(o - buf);
}

int format_fixed(char *buf, size_t size, double v, unsigned decimals)
{
	static const double scale[] = { 1, 10, 100, 1000 };

	if (decimals < sizeof(scale) / sizeof(*scale) && size >= 16 && isfinite(v)) {
		/* The product is rounded, but rounding is monotonic and every
		 * k + 1/2 below 1e9 is a double: when the exact |v| * 10^d lies
		 * below (above) such a midpoint, the product lies below (above)
		 * it or on it. floor() and the subtraction are exact. So a
		 * fraction other than one half rounds as the exact value does;
		 * on one half (a tie, or a value within half an ulp of one)
		 * printf decides. */
		double a = fabs(v) * scale[decimals];
		if (a < 1e9) {
			double whole = floor(a), frac = a - whole;
			if (frac != 0.5) {
				uint64_t n = (uint64_t)whole + (frac > 0.5);
				char digits[24];
				size_t k = 0, len = 0;
				do {
					digits[k++] = (char)('0' + n % 10);
					n /= 10;
				} while (n > 0 || k <= decimals); /* at least one digit before the point */
				if (signbit(v))
					buf[len++] = '-';
				while (k > decimals)
					buf[len++] = digits[--k];
				if (decimals > 0) {
					buf[len++] = '.';
					while (k > 0)
						buf[len++] = digits[--k];
				}
				buf[len] = '\0';
				return (int)len;
			}
		}
	}
	return snprintf(buf, size, "%.*f", (int)decimals, v);
}
