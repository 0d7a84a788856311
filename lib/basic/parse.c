/* parse.c - sizes, durations and booleans. See parse.h for the syntax. */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "util.h"

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

/* A number followed by a unit from `units` (NULL-terminated names, factors
 * alongside). A well-formed negative number gives -ERANGE. */
static int parse_scaled(const char *s, const char *const *units, const uint64_t *factors,
			uint64_t *ret)
{
	const char *end = NULL;
	bool negative = false;
	uint64_t v = 0;
	int r;

	if (!s || !*s)
		return -EINVAL;
	if (*s == '-') {
		negative = true;
		s++;
	}
	r = parse_digits(s, &v, &end);
	if (r == -EINVAL)
		return r;
	for (size_t i = 0; units[i]; i++) {
		if (strcmp(end, units[i]) != 0)
			continue;
		if (negative || r < 0)
			return -ERANGE;
		if (factors[i] && v > UINT64_MAX / factors[i])
			return -ERANGE;
		*ret = v * factors[i];
		return 0;
	}
	return -EINVAL;
}

int acct_parse_size(const char *s, uint64_t *ret)
{
	static const char *const units[] = {
		"",  "B",  "b",                      /* bytes */
		"K", "KB", "k", "kB", "kb", "Kb",    /* the letter's case and the B are free */
		"M", "MB", "m", "mB", "mb", "Mb",
		"G", "GB", "g", "gB", "gb", "Gb",
		"T", "TB", "t", "tB", "tb", "Tb",
		NULL,
	};
	static const uint64_t factors[] = {
		1,      1,      1,
		SIZE_K, SIZE_K, SIZE_K, SIZE_K, SIZE_K, SIZE_K,
		SIZE_M, SIZE_M, SIZE_M, SIZE_M, SIZE_M, SIZE_M,
		SIZE_G, SIZE_G, SIZE_G, SIZE_G, SIZE_G, SIZE_G,
		SIZE_T, SIZE_T, SIZE_T, SIZE_T, SIZE_T, SIZE_T,
	};

	return parse_scaled(s, units, factors, ret);
}

int acct_parse_duration_us(const char *s, uint64_t *ret)
{
	static const char *const units[] = { "", "us", "ms", "s", "min", "h", NULL };
	static const uint64_t factors[] = {
		USEC_PER_SEC, 1, USEC_PER_MSEC, USEC_PER_SEC, USEC_PER_MIN, USEC_PER_HOUR,
	};

	return parse_scaled(s, units, factors, ret);
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
