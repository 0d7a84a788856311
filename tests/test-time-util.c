/* test-time-util.c - unit tests of the time conversions (lib/basic/time-util.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "parse.h"
#include "time-util.h"

static void check(uint64_t usec, long sec, long us)
{
	struct timeval tv = timeval_from_usec(usec);

	assert_int_equal(tv.tv_sec, sec);
	assert_int_equal(tv.tv_usec, us);
}

static void test_timeval_from_usec(void **state)
{
	(void)state;
	check(0, 0, 0);
	check(999999, 0, 999999);
	check(USEC_PER_SEC, 1, 0);
	check(2500000, 2, 500000);
	check(15 * USEC_PER_MIN + 1, 900, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeval_from_usec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
