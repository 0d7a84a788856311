/* test-format-double.c - unit tests of format_double_shortest()
 * (lib/basic/format-double.h): the spellings of chosen values (binary noise,
 * tiny and huge, subnormals, negative zero, the non-finite), and on random
 * doubles that every text reads back to the same bits and that no text with
 * fewer digits would. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format-double.h"

static void assert_text(double v, const char *want)
{
	char buf[FORMAT_DOUBLE_MAX];
	int n = format_double_shortest(v, buf);
	if (n < 0 || strcmp(buf, want) != 0)
		fail_msg("%.17g: got \"%s\" (%d), want \"%s\"", v, buf, n, want);
	assert_int_equal(n, (int)strlen(want));
}

static void test_spellings(void **state)
{
	static const struct {
		double v;
		const char *text;
	} table[] = {
		{ 0.1, "0.1" },
		{ 27.99, "27.99" },
		{ -27.99, "-27.99" },
		{ 0.1 + 0.2, "0.30000000000000004" },
		{ 1.0 / 3, "0.3333333333333333" },
		{ 2.0 / 3, "0.6666666666666666" },
		{ 1e-7, "1e-07" },
		{ 1.5e-7, "1.5e-07" },
		{ 0.0001, "0.0001" },
		{ 0.00012, "0.00012" },
		{ 1e300, "1e+300" },
		{ -1.25e300, "-1.25e+300" },
		{ 1e16, "10000000000000000" },
		{ 1e17, "1e+17" },
		{ 123456789012345680.0, "1.2345678901234568e+17" },
		{ 9007199254740993.0, "9007199254740992" }, /* 2^53 + 1 is not a double */
		{ 100, "100" },
		{ 1, "1" },
		{ 0, "0" },
		{ -0.0, "-0" },
		{ 5e-324, "5e-324" },                      /* the least subnormal */
		{ 5e-310, "5e-310" },                      /* a subnormal */
		{ 1.23e-300, "1.23e-300" },
		{ DBL_MIN, "2.2250738585072014e-308" },
		{ DBL_MAX, "1.7976931348623157e+308" },
		{ 0.95, "0.95" },
		{ 2.8571428571428572, "2.857142857142857" },
		/* 2^-1074 * 2^k near a power of two, where the interval is lopsided */
		{ 9007199254740992.0 * 2, "18014398509481984" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		assert_text(table[i].v, table[i].text);
}

static void test_not_finite(void **state)
{
	char buf[FORMAT_DOUBLE_MAX];

	(void)state;
	strcpy(buf, "x");
	assert_int_equal(format_double_shortest(NAN, buf), -EDOM);
	assert_string_equal(buf, "");
	assert_int_equal(format_double_shortest(INFINITY, buf), -EDOM);
	assert_int_equal(format_double_shortest(-INFINITY, buf), -EDOM);
	assert_string_equal(buf, "");
}

/* Significant digits of a text: its digits before any exponent, less the
 * leading and trailing zeros ("100" has 1, "0.0012" has 2). */
static int significant_digits(const char *s)
{
	char d[32];
	int n = 0, first = 0;
	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9' && n < (int)sizeof(d))
			d[n++] = *s;
	while (first < n && d[first] == '0')
		first++;
	while (n > first && d[n - 1] == '0')
		n--;
	return n - first;
}

/* Whether any decimal of p significant digits reads back to v: the nearest
 * one and its two neighbours (the only candidates). */
static bool some_text_of(int p, double v)
{
	char tmp[64], mant[32];
	int exp10;
	size_t k = 0;

	snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
	for (const char *c = tmp; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9')
			mant[k++] = *c;
	mant[k] = 0;
	exp10 = atoi(strchr(tmp, 'e') + 1) - (p - 1);
	unsigned long long m = strtoull(mant, NULL, 10);
	for (int d = -1; d <= 1; d++) {
		snprintf(tmp, sizeof(tmp), "%llue%d", m + (unsigned long long)(long long)d, exp10);
		if (strtod(tmp, NULL) == v)
			return true;
	}
	return false;
}

static void check_random(double v)
{
	char buf[FORMAT_DOUBLE_MAX];
	int n = format_double_shortest(v, buf);

	assert_true(n > 0 && n <= 24);
	double back = strtod(buf, NULL);
	if (memcmp(&back, &v, sizeof(v)) != 0)
		fail_msg("%a printed as %s reads back as %a", v, buf, back);
	int digits = significant_digits(buf);
	for (int p = 1; p < digits; p++)
		if (some_text_of(p, fabs(v)))
			fail_msg("%a printed as %s, but %d digits read back", v, buf, p);
}

static void test_random_bits(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int i = 0; i < 30000; i++) {
		double v;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(&v, &x, sizeof(v));
		if (!isfinite(v))
			continue;
		check_random(v);
	}
}

/* Values as acctd computes them: short decimals divided and scaled, as rates,
 * PSI averages and CPU seconds are. */
static void test_random_short_decimals(void **state)
{
	uint64_t x = 42;

	(void)state;
	for (int i = 0; i < 30000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int digits = 1 + (int)(x % 15);
		uint64_t m = (x >> 8) % 1000000000000000ull;
		for (int d = 15; d > digits; d--)
			m /= 10;
		int e = (int)((x >> 56) % 40) - 20;
		char text[64];
		snprintf(text, sizeof(text), "%llue%d", (unsigned long long)m, e);
		double v = strtod(text, NULL);
		check_random(v);
		char buf[FORMAT_DOUBLE_MAX];
		format_double_shortest(v, buf);
		if (m != 0 && significant_digits(buf) > digits)
			fail_msg("%s printed as %s", text, buf);
		check_random((double)m / 1e6); /* cpu seconds from microseconds */
	}
}

/* format_fixed() prints what snprintf("%.*f") prints: exact ties and values
 * next to them (where the fast path must step aside), signs and zeros, the
 * limits of the fast path, and random values at every scale. */
static void check_fixed(double v, unsigned decimals, size_t size)
{
	char want[512], got[512];
	int a = snprintf(want, size, "%.*f", (int)decimals, v), b = format_fixed(got, size, v, decimals);

	if (a != b || strcmp(want, got) != 0)
		fail_msg("format_fixed(%.17g, %u, %zu): '%s' (%d), snprintf: '%s' (%d)", v, decimals, size, got, b, want,
			 a);
}

static void test_fixed(void **state)
{
	static const double spot[] = { 0,	 -0.0,	  0.125,    0.375,     2.5,	  3.5,	     0.005,
				       1.005,	 2.675,	  -0.001,   -0.0049,   999.995,	  0.994999, 0.995,
				       1023.95,	 1e9,	  999999999.4, 1e15,  1e300,	  -1e300,    5e-324,
				       0.05,	 0.15,	  0.25,	    0.35,      0.45,	  12.345,    9.999999999 };
	uint64_t x = 0x9e3779b97f4a7c15u;

	for (size_t i = 0; i < sizeof(spot) / sizeof(*spot); i++)
		for (unsigned d = 0; d <= 4; d++) {
			check_fixed(spot[i], d, 64);
			check_fixed(-spot[i], d, 64);
		}
	check_fixed(NAN, 2, 64);
	check_fixed(INFINITY, 1, 64);
	check_fixed(-INFINITY, 1, 64);
	check_fixed(1e300, 2, 512);
	check_fixed(12345.678, 2, 4); /* too small: truncated as snprintf does */
	check_fixed(12345.678, 2, 15);
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned d = (unsigned)(x % 4);
		double scale = pow(10, (double)(x >> 8 & 15) - 5);
		double v = (double)(x >> 12) / (double)(UINT64_C(1) << 52) * scale;
		/* and exact ties k + 1/2 at the last printed digit, and their neighbours */
		double tie = ((double)(x >> 40 & 0xfffff) + 0.5) / pow(10, d);
		check_fixed(x & 1 ? -v : v, d, 64);
		check_fixed(tie, d, 64);
		check_fixed(nextafter(tie, 0), d, 64);
		check_fixed(nextafter(tie, 1e9), d, 64);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spellings),
		cmocka_unit_test(test_not_finite),
		cmocka_unit_test(test_random_bits),
		cmocka_unit_test(test_random_short_decimals),
		cmocka_unit_test(test_fixed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
