/* timestamp.c - systemd.time(7) timestamps (see timestamp.h for the syntax). */
#include "timestamp.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "parse.h"
#include "util.h"

/* 9999-12-31 23:59:59 UTC + 1 s: the first instant refused. */
#define TIMESTAMP_END_SEC INT64_C(253402300800)

/* Exactly n digits at *p, advancing it. */
static int digits(const char **p, unsigned n, unsigned *ret)
{
	unsigned v = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -EINVAL;
		v = v * 10 + (unsigned)((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return 0;
}

/* ".FRAC" at *p (absent: 0), 1 to 9 digits, as microseconds (truncated). */
static int fraction_us(const char **p, uint64_t *ret)
{
	uint64_t us = 0, scale = 100000;
	size_t n;

	*ret = 0;
	if (**p != '.')
		return 0;
	(*p)++;
	n = strspn(*p, "0123456789");
	if (n == 0 || n > 9)
		return -EINVAL;
	for (size_t i = 0; i < n && i < 6; i++, scale /= 10)
		us += (uint64_t)((*p)[i] - '0') * scale;
	*p += n;
	*ret = us;
	return 0;
}

static bool leap_year(unsigned y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(unsigned y, unsigned m)
{
	static const unsigned days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	return m == 2 && leap_year(y) ? 29 : days[m - 1];
}

/* Seconds since the epoch of a UTC civil time (fields already checked):
 * days from civil (H. Hinnant's algorithm), no timegm() needed. */
static int64_t utc_seconds(unsigned y, unsigned m, unsigned d, unsigned hh, unsigned mm, unsigned ss)
{
	int64_t yy = (int64_t)y - (m <= 2);
	int64_t era = yy / 400;
	int64_t yoe = yy - era * 400;
	int64_t doy = (153 * ((int64_t)m + (m > 2 ? -3 : 9)) + 2) / 5 + (int64_t)d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	int64_t days = era * 146097 + doe - 719468;

	return days * 86400 + (int64_t)hh * 3600 + (int64_t)mm * 60 + (int64_t)ss;
}

/* Local midnight of the day `days` after that of now_sec (may be negative). */
static int local_midnight(int64_t now_sec, int days, int64_t *ret)
{
	time_t t = (time_t)now_sec;
	struct tm tm;
	time_t r;

	if (!localtime_r(&t, &tm))
		return -ERANGE;
	tm.tm_mday += days;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_isdst = -1;
	r = mktime(&tm);
	if (r == (time_t)-1)
		return -ERANGE;
	*ret = (int64_t)r;
	return 0;
}

/* A zone at *p after a time: "", "Z", "UTC", "+HH:MM", "+HHMM", "-..." (a
 * blank may precede UTC and an offset). *ret_local: no zone; else
 * *ret_offset_sec east of UTC. The zone must end the string. */
static int zone(const char *p, bool *ret_local, int64_t *ret_offset_sec)
{
	unsigned hh, mm;
	int sign;

	*ret_local = false;
	*ret_offset_sec = 0;
	if (!*p) {
		*ret_local = true;
		return 0;
	}
	if (strcmp(p, "Z") == 0 || strcmp(p, "UTC") == 0 || strcmp(p, " UTC") == 0)
		return 0;
	if (*p == ' ')
		p++;
	if (*p != '+' && *p != '-')
		return -EINVAL;
	sign = *p == '-' ? -1 : 1;
	p++;
	if (digits(&p, 2, &hh) < 0)
		return -EINVAL;
	if (*p == ':')
		p++;
	if (digits(&p, 2, &mm) < 0 || *p)
		return -EINVAL;
	if (hh > 23 || mm > 59)
		return -ERANGE;
	*ret_offset_sec = sign * (int64_t)(hh * 3600 + mm * 60);
	return 0;
}

/* "HH:MM[:SS[.FRAC]]" at *p, advancing it. */
static int clock_time(const char **p, unsigned *hh, unsigned *mm, unsigned *ss, uint64_t *us)
{
	*ss = 0;
	if (digits(p, 2, hh) < 0 || **p != ':')
		return -EINVAL;
	(*p)++;
	if (digits(p, 2, mm) < 0)
		return -EINVAL;
	*us = 0;
	if (**p == ':') {
		(*p)++;
		if (digits(p, 2, ss) < 0 || fraction_us(p, us) < 0)
			return -EINVAL;
	}
	return 0;
}

/* A civil time in local time (tm fields as mktime() takes them). */
static int local_seconds(unsigned y, unsigned m, unsigned d, unsigned hh, unsigned mm, unsigned ss, int64_t *ret)
{
	struct tm tm = {
		.tm_year = (int)y - 1900,
		.tm_mon = (int)m - 1,
		.tm_mday = (int)d,
		.tm_hour = (int)hh,
		.tm_min = (int)mm,
		.tm_sec = (int)ss,
		.tm_isdst = -1,
	};
	time_t t = mktime(&tm);

	/* -1 is also 1969-12-31 23:59:59 UTC, before the epoch anyway */
	if (t == (time_t)-1)
		return -ERANGE;
	*ret = (int64_t)t;
	return 0;
}

/* An absolute time: date and/or clock time, then a zone. */
static int absolute(const char *s, uint64_t now_us, uint64_t *ret)
{
	const char *p = s;
	unsigned y, m, d, hh = 0, mm = 0, ss = 0;
	uint64_t us = 0;
	bool local, has_date = false;
	int64_t offset, sec;
	int r;

	if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) && p[2] == ':') {
		/* a clock time alone: today's */
		struct tm tm;
		time_t t = (time_t)(now_us / USEC_PER_SEC);

		if (clock_time(&p, &hh, &mm, &ss, &us) < 0)
			return -EINVAL;
		if (!localtime_r(&t, &tm))
			return -ERANGE;
		y = (unsigned)tm.tm_year + 1900;
		m = (unsigned)tm.tm_mon + 1;
		d = (unsigned)tm.tm_mday;
	} else {
		has_date = true;
		if (digits(&p, 4, &y) < 0 || *p++ != '-' || digits(&p, 2, &m) < 0 || *p++ != '-' ||
		    digits(&p, 2, &d) < 0)
			return -EINVAL;
		if ((*p == ' ' || *p == 'T') && isdigit((unsigned char)p[1])) {
			p++;
			if (clock_time(&p, &hh, &mm, &ss, &us) < 0)
				return -EINVAL;
		}
	}
	r = zone(p, &local, &offset);
	if (r < 0)
		return r;
	if (has_date && (y < 1970 || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)))
		return -ERANGE;
	if (hh > 23 || mm > 59 || ss > 59)
		return -ERANGE;
	if (local) {
		r = local_seconds(y, m, d, hh, mm, ss, &sec);
		if (r < 0)
			return r;
	} else
		sec = utc_seconds(y, m, d, hh, mm, ss) - offset;
	if (sec < 0 || sec >= TIMESTAMP_END_SEC)
		return -ERANGE;
	*ret = (uint64_t)sec * USEC_PER_SEC + us;
	return 0;
}

/* "@SECONDS[.FRAC]". */
static int epoch(const char *s, uint64_t *ret)
{
	const char *p = s + 1;
	size_t n = strspn(p, "0123456789");
	uint64_t sec = 0, us;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (sec > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		sec = sec * 10 + (uint64_t)(p[i] - '0');
	}
	p += n;
	if (fraction_us(&p, &us) < 0 || *p)
		return -EINVAL;
	if (sec >= (uint64_t)TIMESTAMP_END_SEC)
		return -ERANGE;
	*ret = sec * USEC_PER_SEC + us;
	return 0;
}

/* "-DURATION", "+DURATION" or "DURATION ago". */
static int relative(const char *s, uint64_t now_us, uint64_t *ret)
{
	_cleanup_free_ char *copy = NULL;
	const char *span = s;
	bool before = true;
	uint64_t d;
	size_t n = strlen(s);
	int r;

	if (*s == '-' || *s == '+') {
		before = *s == '-';
		span = s + 1;
		/* "--1h", "+-1h": the duration parser would take its own sign */
		if (*span == '-' || *span == '+' || *span == ' ')
			return -EINVAL;
	} else if (n > 4 && strcmp(s + n - 4, " ago") == 0) {
		size_t len = n - 4;

		while (len > 0 && s[len - 1] == ' ')
			len--;
		if (len == 0)
			return -EINVAL;
		copy = strndup(s, len);
		if (!copy)
			return -ENOMEM;
		span = copy;
	} else
		return -EINVAL;
	r = acct_parse_duration_us(span, &d);
	if (r < 0)
		return r;
	if (before) {
		if (d > now_us)
			return -ERANGE;
		*ret = now_us - d;
	} else {
		if (d >= (uint64_t)TIMESTAMP_END_SEC * USEC_PER_SEC - now_us)
			return -ERANGE;
		*ret = now_us + d;
	}
	return 0;
}

int acct_parse_timestamp(const char *s, uint64_t now_us, uint64_t *ret)
{
	static const struct {
		const char *name;
		int days; /* midnight this many days from today's */
	} days[] = { { "today", 0 }, { "yesterday", -1 }, { "tomorrow", 1 } };
	int64_t sec;
	int r;

	if (!s || !*s || isspace((unsigned char)s[0]) || isspace((unsigned char)s[strlen(s) - 1]))
		return -EINVAL;
	if (now_us >= (uint64_t)TIMESTAMP_END_SEC * USEC_PER_SEC)
		return -ERANGE;
	if (strcmp(s, "now") == 0) {
		*ret = now_us;
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(days); i++)
		if (strcmp(s, days[i].name) == 0) {
			r = local_midnight((int64_t)(now_us / USEC_PER_SEC), days[i].days, &sec);
			if (r < 0)
				return r;
			if (sec < 0)
				return -ERANGE;
			*ret = (uint64_t)sec * USEC_PER_SEC;
			return 0;
		}
	if (s[0] == '@')
		return epoch(s, ret);
	if (isdigit((unsigned char)s[0])) {
		r = absolute(s, now_us, ret);
		if (r != -EINVAL)
			return r;
		/* "1h ago" starts with a digit too */
	}
	return relative(s, now_us, ret);
}
