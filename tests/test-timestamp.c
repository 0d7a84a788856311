/* test-timestamp.c - unit tests of the systemd.time(7) timestamp parser
 * (lib/basic/timestamp.h), at a fixed "now" and in fixed time zones (TZ set
 * here: UTC, and Europe/Berlin for local times with DST). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "parse.h"
#include "timestamp.h"

/* 2026-12-02 04:05:06.789 UTC */
#define NOW (UINT64_C(1796184306) * USEC_PER_SEC + 789000)
#define SEC(s) ((uint64_t)(s) * USEC_PER_SEC)

/* Europe/Berlin needs tzdata; without it TZ would silently mean UTC. */
static void set_tz(const char *tz)
{
	if (strcmp(tz, "UTC") != 0 && access("/usr/share/zoneinfo/Europe/Berlin", R_OK) < 0) {
		print_message("skipped: no /usr/share/zoneinfo/Europe/Berlin (tzdata)\n");
		skip();
	}
	assert_int_equal(setenv("TZ", tz, 1), 0);
	tzset();
}

static void ok(const char *s, uint64_t expected)
{
	uint64_t v = 0;
	int r = acct_parse_timestamp(s, NOW, &v);

	if (r != 0 || v != expected)
		print_error("'%s': r=%d v=%llu expected %llu\n", s, r, (unsigned long long)v,
			    (unsigned long long)expected);
	assert_int_equal(r, 0);
	assert_int_equal(v, expected);
}

static void bad(const char *s, int expected)
{
	uint64_t v = 4242;
	int r = acct_parse_timestamp(s, NOW, &v);

	if (r != expected)
		print_error("'%s': r=%d expected %d\n", s, r, expected);
	assert_int_equal(r, expected);
	assert_int_equal(v, 4242); /* untouched on failure */
}

static void test_now_and_days(void **state)
{
	(void)state;
	set_tz("UTC");
	ok("now", NOW);
	ok("today", SEC(1796169600));     /* 2026-12-02 00:00 */
	ok("yesterday", SEC(1796083200)); /* 2026-12-01 00:00 */
	ok("tomorrow", SEC(1796256000));  /* 2026-12-03 00:00 */
	/* in Berlin (UTC+1 in December) midnight is an hour earlier */
	set_tz("Europe/Berlin");
	ok("today", SEC(1796169600 - 3600));
	ok("yesterday", SEC(1796083200 - 3600));
}

static void test_relative(void **state)
{
	(void)state;
	set_tz("UTC");
	ok("-1h", NOW - USEC_PER_HOUR);
	ok("+5min", NOW + 5 * USEC_PER_MIN);
	ok("-10min", NOW - 10 * USEC_PER_MIN);
	ok("1h ago", NOW - USEC_PER_HOUR);
	ok("90s ago", NOW - 90 * USEC_PER_SEC);
	ok("-2d 3h", NOW - 51 * USEC_PER_HOUR);
	ok("2d 3h ago", NOW - 51 * USEC_PER_HOUR);
	ok("-1.5h", NOW - 90 * USEC_PER_MIN);
	ok("-0", NOW);
	ok("-30", NOW - 30 * USEC_PER_SEC); /* a bare number is seconds, as systemd */
	bad("--1h", -EINVAL);
	bad("+-1h", -EINVAL);
	bad("- 1h", -EINVAL);
	bad("-", -EINVAL);
	bad("ago", -EINVAL);
	bad(" ago", -EINVAL);
	bad("1h  ago ", -EINVAL);
	bad("-1parsec", -EINVAL);
	bad("-1h ago", -EINVAL);
	bad("-100y", -ERANGE); /* before the epoch */
	bad("+10000y", -ERANGE);
}

static void test_absolute_utc(void **state)
{
	(void)state;
	set_tz("Europe/Berlin"); /* a zone in the text wins over TZ */
	ok("2026-12-01T10:00:00Z", SEC(1796119200));
	ok("2026-12-01 10:00 UTC", SEC(1796119200));
	ok("2026-12-01 10:00:00UTC", SEC(1796119200));
	ok("2026-12-01T10:00:00.25Z", SEC(1796119200) + 250000);
	ok("2026-12-01T10:00:00.123456789Z", SEC(1796119200) + 123456);
	ok("2026-12-01 10:00+01:00", SEC(1796119200 - 3600));
	ok("2026-12-01 10:00 -0530", SEC(1796119200 + 5 * 3600 + 1800));
	ok("2026-12-01Z", SEC(1796083200));
	ok("1970-01-01 00:00:00 UTC", 0);
	ok("2024-02-29 12:00 UTC", SEC(1709208000)); /* leap year */
	ok("9999-12-31 23:59:59Z", SEC(INT64_C(253402300799)));
	bad("2026-02-29 12:00 UTC", -ERANGE);
	bad("2026-13-01", -ERANGE);
	bad("2026-00-01", -ERANGE);
	bad("2026-12-00", -ERANGE);
	bad("2026-12-01 24:00", -ERANGE);
	bad("2026-12-01 10:60", -ERANGE);
	bad("2026-12-01 10:00:60", -ERANGE);
	bad("1969-12-31 23:59:59Z", -ERANGE);
	bad("2026-12-01 10:00+24:00", -ERANGE);
	bad("1970-01-01 00:30+01:00", -ERANGE); /* 1969 in UTC */
	bad("2026-12-01T", -EINVAL);
	bad("2026-12-01 10", -EINVAL);
	bad("2026-12-01 10:0", -EINVAL);
	bad("2026-12-1", -EINVAL);
	bad("26-12-01", -EINVAL);
	bad("2026/12/01", -EINVAL);
	bad("2026-12-01 10:00:00.", -EINVAL);
	bad("2026-12-01 10:00:00.1234567890Z", -EINVAL);
	bad("2026-12-01 10:00 utc", -EINVAL);
	bad("2026-12-01 10:00 CET", -EINVAL);
	bad("2026-12-01 10:00+1", -EINVAL);
	bad("2026-12-01 10:00Z ", -EINVAL);
	bad(" 2026-12-01", -EINVAL);
	bad("2026-12-01  10:00", -EINVAL);
}

static void test_absolute_local(void **state)
{
	(void)state;
	set_tz("Europe/Berlin");
	ok("2026-12-01 10:00", SEC(1796119200 - 3600));       /* CET, UTC+1 */
	ok("2026-07-01 10:00", SEC(INT64_C(1782900000) - 7200)); /* CEST, UTC+2 */
	ok("2026-12-01", SEC(1796083200 - 3600));
	ok("2026-12-01T10:00:30.5", SEC(1796119200 - 3600 + 30) + 500000);
	/* a clock time alone is today's */
	ok("10:00", SEC(1796169600 - 3600 + 10 * 3600));
	ok("10:00:01Z", SEC(1796169600 + 10 * 3600 + 1));
	set_tz("UTC");
	ok("2026-12-01 10:00", SEC(1796119200));
	ok("04:00", SEC(1796169600 + 4 * 3600));
	bad("4:00", -EINVAL);
	bad("25:00", -ERANGE);
}

static void test_epoch(void **state)
{
	(void)state;
	ok("@0", 0);
	ok("@1764584400", SEC(1764584400));
	ok("@1764584400.5", SEC(1764584400) + 500000);
	ok("@1.000001", 1000001);
	bad("@", -EINVAL);
	bad("@-1", -EINVAL);
	bad("@1.", -EINVAL);
	bad("@1e9", -EINVAL);
	bad("@ 1", -EINVAL);
	bad("@99999999999999999999999", -ERANGE);
	bad("@253402300800", -ERANGE);
}

static void test_malformed(void **state)
{
	(void)state;
	bad(NULL, -EINVAL);
	bad("", -EINVAL);
	bad(" now", -EINVAL);
	bad("now ", -EINVAL);
	bad("Now", -EINVAL);
	bad("noww", -EINVAL);
	bad("today 10:00", -EINVAL);
	bad("1h", -EINVAL); /* a span is not a time: -1h, +1h or 1h ago */
	bad("-1h\n", -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_now_and_days), cmocka_unit_test(test_relative),
		cmocka_unit_test(test_absolute_utc), cmocka_unit_test(test_absolute_local),
		cmocka_unit_test(test_epoch),        cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
