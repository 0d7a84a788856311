/* test-charges-avg.c - unit tests of the averages of charged values
 * (lib/core/charges-avg.h): the documented formula, v * (1 - e^n) for a value
 * held n periods from 0, missed periods caught up in one step, warming up of
 * an entry charged before averaging began, resources not averaged. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/charges-avg.h"
#include "percpu/counter.h"
#include "util.h"

#define P ACCT_LOAD_FREQ_USEC

static double held(double v, int k, uint64_t n)
{
	return v * (1 - exp(-(double)n * (double)P / (double)acct_load_window_us[k]));
}

static void assert_close(double a, double b)
{
	if (fabs(a - b) > 1e-9 * fmax(1, fabs(b)))
		fail_msg("%.17g != %.17g", a, b);
}

static void test_formula(void **state)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;
	const struct acct_charges_resource res[] = { { "inflight", 0, false, 0, false }, { "gpu", 0, false, 0, false } };
	const bool avg[] = { true, false };
	struct acct_charges *ch = NULL;
	struct acct_charges_avg *s = NULL;
	struct acct_charges_avg_reading r;
	uint64_t t0 = 1000000;

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	assert_int_equal(acct_charges_avg_new(ch, avg, &s), 0);
	assert_true(acct_charges_avg_enabled(s, 0));
	assert_false(acct_charges_avg_enabled(s, 1));

	/* charged before the clock starts: not whole life */
	assert_int_equal(acct_charges_add(ch, 0, "/old", 8), 0);
	assert_int_equal(acct_charges_avg_step(s, t0), 0);
	assert_int_equal(acct_charges_avg_read(s, 0, "/old", t0, &r), 0);
	assert_false(r.whole_life);
	assert_int_equal(r.covered_us, 0);
	assert_true(acct_charges_avg_warming(&r, ACCT_AVG_1MIN));

	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 100), 0);
	assert_int_equal(acct_charges_add(ch, 1, "/a/b", 100), 0);
	assert_int_equal(acct_charges_avg_step(s, t0 + P - 1), 0); /* not due */
	assert_int_equal(acct_charges_avg_read(s, 0, "/a/b", t0, &r), -ENOENT);
	assert_int_equal(acct_charges_avg_step(s, t0 + P), 1);
	assert_int_equal(acct_charges_avg_read(s, 0, "/a/b", t0 + P + 7, &r), 0);
	assert_true(r.whole_life);
	assert_int_equal(r.covered_us, P);
	assert_int_equal(r.age_us, 7);
	for (int k = 0; k < _ACCT_AVG_MAX; k++) {
		assert_close(r.avg[k], held(100, k, 1));
		assert_false(acct_charges_avg_warming(&r, k));
	}
	/* the ancestor's subtree value is averaged too */
	assert_int_equal(acct_charges_avg_read(s, 0, "/a", t0 + P, &r), 0);
	assert_close(r.avg[0], held(100, 0, 1));
	/* not averaged */
	assert_int_equal(acct_charges_avg_read(s, 1, "/a/b", t0 + P, &r), -ENOENT);

	/* three periods late: caught up in one step, still v (1 - e^n) */
	assert_int_equal(acct_charges_avg_step(s, t0 + 4 * P + 3), 3);
	assert_int_equal(acct_charges_avg_read(s, 0, "/a/b", t0 + 4 * P + 3, &r), 0);
	assert_int_equal(r.covered_us, 4 * P);
	assert_int_equal(r.age_us, 3); /* periods keep their boundaries */
	for (int k = 0; k < _ACCT_AVG_MAX; k++)
		assert_close(r.avg[k], held(100, k, 4));
	/* the old entry decays from 0 towards 8 */
	assert_int_equal(acct_charges_avg_read(s, 0, "/old", t0 + 4 * P, &r), 0);
	assert_close(r.avg[2], held(8, 2, 4));
	assert_true(acct_charges_avg_warming(&r, ACCT_AVG_1MIN));

	/* falls to 0: one period's decay of each */
	double before[_ACCT_AVG_MAX];
	assert_int_equal(acct_charges_avg_read(s, 0, "/a/b", t0 + 4 * P, &r), 0);
	for (int k = 0; k < _ACCT_AVG_MAX; k++)
		before[k] = r.avg[k];
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", -100), 0);
	assert_int_equal(acct_charges_avg_step(s, t0 + 5 * P), 1);
	assert_int_equal(acct_charges_avg_read(s, 0, "/a/b", t0 + 5 * P, &r), 0);
	for (int k = 0; k < _ACCT_AVG_MAX; k++)
		assert_close(r.avg[k], before[k] * exp(-(double)P / (double)acct_load_window_us[k]));

	/* removed: gone at the next step */
	assert_true(acct_charges_remove(ch, "/a") > 0);
	assert_int_equal(acct_charges_avg_step(s, t0 + 6 * P), 1);
	assert_int_equal(acct_charges_avg_read(s, 0, "/a/b", t0 + 6 * P, &r), -ENOENT);

	assert_null(acct_charges_avg_free(s));
	assert_null(acct_charges_avg_free(NULL));
	acct_charges_free(ch);
	acct_domain_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formula),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
