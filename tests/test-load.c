/* test-load.c - unit tests of load.h: the fixed-point load average against
 * hand-computed steps of the kernel's formula and against a transcription of
 * kernel/sched/loadavg.c, the catch-up after missed periods and its stated
 * bound, /proc/loadavg formatting, CPU rates and their moving averages, and
 * hierarchical task sums over a tree. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "load.h"
#include "util.h"

/* cmocka 1.1's assert_float_equal() compares floats; the rates need doubles. */
#define assert_near(a, b, eps)                                                            \
	do {                                                                              \
		double _a_ = (a), _b_ = (b), _e_ = (eps);                                 \
		if (!(fabs(_a_ - _b_) <= _e_))                                            \
			fail_msg("|%s - %s| = |%.17g - %.17g| > %g", #a, #b, _a_, _b_, _e_); \
	} while (0)

static const unsigned long EXP[3] = { ACCT_EXP_1, ACCT_EXP_5, ACCT_EXP_15 };

/* The kernel's calc_load() and calc_load_n(), transcribed as they are in
 * kernel/sched/loadavg.c (64-bit unsigned long), as the reference. */
static unsigned long ref_calc_load(unsigned long load, unsigned long exp, unsigned long active)
{
	unsigned long newload;

	newload = load * exp + active * (ACCT_FIXED_1 - exp);
	if (active >= load)
		newload += ACCT_FIXED_1 - 1;

	return newload / ACCT_FIXED_1;
}

/* Deterministic pseudo-random numbers (xorshift64*), so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* ---- load average ------------------------------------------------------- */

/* The first steps of one task becoming active in an idle cgroup, by hand from
 * newload = load e + active (2048 - e), + 2047 when active >= load, / 2048,
 * with active = 1 * 2048 = 2048:
 *
 *  EXP_1 = 1884 (2048 - e = 164)
 *   1: (0 * 1884 + 2048 * 164 + 2047) / 2048 = 337919 / 2048 = 164
 *   2: (164 * 1884 + 335872 + 2047) / 2048 = 646895 / 2048 = 315
 *   3: (315 * 1884 + 335872 + 2047) / 2048 = 931379 / 2048 = 454
 *  EXP_5 = 2014 (34)
 *   1: (0 + 2048 * 34 + 2047) / 2048 = 71679 / 2048 = 34
 *   2: (34 * 2014 + 69632 + 2047) / 2048 = 140155 / 2048 = 68
 *   3: (68 * 2014 + 69632 + 2047) / 2048 = 208631 / 2048 = 101
 *  EXP_15 = 2037 (11)
 *   1: (0 + 2048 * 11 + 2047) / 2048 = 24575 / 2048 = 11
 *   2: (11 * 2037 + 22528 + 2047) / 2048 = 46982 / 2048 = 22
 *   3: (22 * 2037 + 22528 + 2047) / 2048 = 69389 / 2048 = 33
 *
 * and of that task leaving again, from 2048 (active 0 < load: no rounding up):
 *  EXP_1: 2048 * 1884 / 2048 = 1884; 1884 * 1884 / 2048 = 3549456 / 2048 = 1733;
 *         1733 * 1884 / 2048 = 3264972 / 2048 = 1594 */
static void test_loadavg_hand_steps(void **state)
{
	static const unsigned long rise[3][3] = { { 164, 315, 454 }, { 34, 68, 101 }, { 11, 22, 33 } };
	static const unsigned long fall1[3] = { 1884, 1733, 1594 };
	struct acct_loadavg l = { { 0 } };

	for (int step = 0; step < 3; step++) {
		acct_loadavg_update(&l, 1);
		for (int i = 0; i < 3; i++)
			assert_int_equal(l.avenrun[i], rise[i][step]);
	}

	l = (struct acct_loadavg){ { 2048, 2048, 2048 } };
	for (int step = 0; step < 3; step++) {
		acct_loadavg_update(&l, 0);
		assert_int_equal(l.avenrun[0], fall1[step]);
	}
}

/* One task for 60 updates (5 minutes): the 1-minute average is close to
 * 2048 (1 - e^-5) = 2034.2. Precisely, without rounding it would be
 * 2048 (1 - (1884/2048)^60) = 2033.5 (EXP_1 is 2048 e^(-1/12) rounded); each
 * step rounds by less than one unit, towards the target, and earlier errors
 * decay by e, so the result lies within 1 / (1 - e) = 2048/164 units of that.
 * It is 2040; the 5 and 15-minute averages are 1317 and 590. */
static void test_loadavg_one_task(void **state)
{
	struct acct_loadavg l = { { 0 } };

	for (int n = 0; n < 60; n++)
		acct_loadavg_update(&l, 1);
	assert_int_equal(l.avenrun[0], 2040);
	assert_int_equal(l.avenrun[1], 1317);
	assert_int_equal(l.avenrun[2], 590);
	for (int i = 0; i < 3; i++) {
		double e = (double)EXP[i] / 2048.0;
		double ideal = 2048.0 * (1.0 - pow(e, 60));
		assert_true(l.avenrun[i] >= ideal);
		assert_true(l.avenrun[i] < ideal + 1.0 / (1.0 - e));
	}
	assert_near(l.avenrun[0], 2048.0 * (1.0 - exp(-5.0)), 8.0);
}

/* Random task counts, compared step by step with the transcribed kernel code. */
static void test_loadavg_matches_kernel(void **state)
{
	struct acct_loadavg l = { { 0 } };
	unsigned long ref[3] = { 0 };

	for (int step = 0; step < 20000; step++) {
		unsigned nr;

		switch (rnd() % 4) {
		case 0:
			nr = 0;
			break;
		case 1:
			nr = (unsigned)(rnd() % 4);
			break;
		case 2:
			nr = (unsigned)(rnd() % 1000);
			break;
		default:
			nr = (unsigned)(rnd() % 100000);
			break;
		}
		acct_loadavg_update(&l, nr);
		for (int i = 0; i < 3; i++) {
			ref[i] = ref_calc_load(ref[i], EXP[i], (unsigned long)nr * ACCT_FIXED_1);
			assert_int_equal(l.avenrun[i], ref[i]);
		}
	}
}

/* A constant count is reached exactly (1.00, 7.00) and left exactly (0.00). */
static void test_loadavg_steady_state(void **state)
{
	struct acct_loadavg l = { { 0 } };
	char buf[ACCT_LOADAVG_STRLEN];
	int n;

	assert_string_equal(acct_loadavg_format(l.avenrun[0], buf), "0.00");
	for (n = 0; n < 5000 && l.avenrun[2] != ACCT_FIXED_1; n++)
		acct_loadavg_update(&l, 1);
	assert_true(n < 5000);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(l.avenrun[i], ACCT_FIXED_1);
		assert_string_equal(acct_loadavg_format(l.avenrun[i], buf), "1.00");
		assert_near(acct_loadavg_value(&l, i), 1.0, 0.0);
	}
	acct_loadavg_update(&l, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(l.avenrun[i], ACCT_FIXED_1);

	for (n = 0; n < 5000 && l.avenrun[2] != 7 * ACCT_FIXED_1; n++)
		acct_loadavg_update(&l, 7);
	assert_true(n < 5000);
	assert_string_equal(acct_loadavg_format(l.avenrun[0], buf), "7.00");

	for (n = 0; n < 5000 && l.avenrun[2] != 0; n++)
		acct_loadavg_update(&l, 0);
	assert_true(n < 5000);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(l.avenrun[i], 0);
		assert_string_equal(acct_loadavg_format(l.avenrun[i], buf), "0.00");
	}
}

static void test_loadavg_value(void **state)
{
	struct acct_loadavg l = { { 1085, 2048, 3072 } };

	assert_near(acct_loadavg_value(&l, ACCT_AVG_1MIN), 1085.0 / 2048.0, 0.0);
	assert_near(acct_loadavg_value(&l, ACCT_AVG_5MIN), 1.0, 0.0);
	assert_near(acct_loadavg_value(&l, ACCT_AVG_15MIN), 1.5, 0.0);
	assert_true(isnan(acct_loadavg_value(&l, -1)));
	assert_true(isnan(acct_loadavg_value(&l, 3)));
}

/* LOAD_INT/LOAD_FRAC after + FIXED_1/200 = 10. */
static void test_loadavg_format(void **state)
{
	char buf[ACCT_LOADAVG_STRLEN], want[64];

	assert_string_equal(acct_loadavg_format(0, buf), "0.00");
	assert_string_equal(acct_loadavg_format(10, buf), "0.00");    /* 20 * 100 >> 11 = 0 */
	assert_string_equal(acct_loadavg_format(11, buf), "0.01");    /* 21 * 100 >> 11 = 1 */
	assert_string_equal(acct_loadavg_format(1085, buf), "0.53");  /* 0.5298 */
	assert_string_equal(acct_loadavg_format(2037, buf), "0.99");  /* 2047: 204700 >> 11 = 99 */
	assert_string_equal(acct_loadavg_format(2038, buf), "1.00");  /* 2048 */
	assert_string_equal(acct_loadavg_format(2047, buf), "1.00");
	assert_string_equal(acct_loadavg_format(2048, buf), "1.00");
	assert_string_equal(acct_loadavg_format(2058, buf), "1.00");  /* 1.0049 */
	assert_string_equal(acct_loadavg_format(2059, buf), "1.01");  /* 1.0054 */
	assert_string_equal(acct_loadavg_format(12 * 2048 + 1024, buf), "12.50");

	/* Saturates instead of wrapping. */
	snprintf(want, sizeof(want), "%lu.99", ULONG_MAX >> ACCT_FSHIFT);
	assert_string_equal(acct_loadavg_format(ULONG_MAX, buf), want);
	assert_true(strlen(buf) < ACCT_LOADAVG_STRLEN);

	/* Every value: within 0.0051 of the exact value, and non-decreasing. */
	double prev = 0.0;
	for (unsigned long x = 0; x < 64 * 2048; x++) {
		double shown = strtod(acct_loadavg_format(x, buf), NULL);
		assert_near(shown, (double)x / 2048.0, 0.0051);
		assert_true(shown >= prev);
		prev = shown;
	}
}

/* Hand values: 1884^2 = (3549456 + 1024) >> 11 = 1733 (rounded to nearest). */
static void test_fixed_power_int(void **state)
{
	assert_int_equal(acct_fixed_power_int(1884, 11, 0), 2048);
	assert_int_equal(acct_fixed_power_int(1884, 11, 1), 1884);
	assert_int_equal(acct_fixed_power_int(1884, 11, 2), 1733);
	assert_int_equal(acct_fixed_power_int(1884, 11, 12), 751);
	assert_int_equal(acct_fixed_power_int(2048, 11, 1000000), 2048);
	assert_int_equal(acct_fixed_power_int(0, 11, 5), 0);
	assert_int_equal(acct_fixed_power_int(1884, 11, UINT_MAX), 0);
	/* Clamped inputs do not overflow. */
	assert_int_equal(acct_fixed_power_int(ULONG_MAX, 11, 7), 2048);
	assert_int_equal(acct_fixed_power_int(3, 0, 3), 2); /* frac_bits 1: 1.0 */
	assert_int_equal(acct_fixed_power_int(1UL << 31, 99, 3), 1UL << 31);
	/* Close to x^n: within 7/2048 for the three decay factors. */
	for (int i = 0; i < 3; i++)
		for (unsigned n = 0; n < 3000; n++)
			assert_near((double)acct_fixed_power_int(EXP[i], 11, n),
				    2048.0 * pow((double)EXP[i] / 2048.0, n), 7.0);
}

static void iterate(struct acct_loadavg *l, unsigned nr, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		acct_loadavg_update(l, nr);
}

/* update_missed(n) against n single updates. Not exact in general: the kernel
 * rounds e^n to 11 bits in fixed_power_int() and single updates round once per
 * step. Exact for n = 0, n = 1 and at steady state; otherwise within the bound
 * load.h states:
 *     |missed - iterated| < |load - a| * pe / 2048 + 1 / (1 - e) + 1,
 * because calc_load(load, P, a) = a + (load - a) P / 2048 within one unit of
 * rounding, P = 2048 e^n +- pe, and the iterated value lies within 1 / (1 - e)
 * of the unrounded a + (load - a) e^n. */
static void test_loadavg_missed(void **state)
{
	struct acct_loadavg a, b;

	/* n = 0 is a no-op; n = 1 is one update. */
	for (int t = 0; t < 2000; t++) {
		unsigned nr = (unsigned)(rnd() % 50);
		for (int i = 0; i < 3; i++)
			a.avenrun[i] = (unsigned long)(rnd() % (64 * 2048));
		b = a;
		acct_loadavg_update_missed(&a, nr, 0);
		assert_memory_equal(&a, &b, sizeof(a));
		acct_loadavg_update_missed(&a, nr, 1);
		acct_loadavg_update(&b, nr);
		assert_memory_equal(&a, &b, sizeof(a));
	}

	/* Steady state: a stays a, however many periods. */
	for (unsigned nr = 0; nr < 50; nr++) {
		a = (struct acct_loadavg){ { nr * 2048UL, nr * 2048UL, nr * 2048UL } };
		acct_loadavg_update_missed(&a, nr, 1 + (unsigned)(rnd() % 1000));
		for (int i = 0; i < 3; i++)
			assert_int_equal(a.avenrun[i], nr * 2048UL);
	}

	/* A case where they differ: 1 task goes idle for one minute (12 periods).
	 * Iterated: 749 (1 minute), 1670, 1916; caught up: 751, 1677, 1919, which is
	 * 2048 * fixed_power_int(EXP, 11, 12) / 2048 (active 0). "0.37" both. */
	a = b = (struct acct_loadavg){ { 2048, 2048, 2048 } };
	acct_loadavg_update_missed(&a, 0, 12);
	iterate(&b, 0, 12);
	assert_int_equal(a.avenrun[0], 751);
	assert_int_equal(a.avenrun[1], 1677);
	assert_int_equal(a.avenrun[2], 1919);
	assert_int_equal(b.avenrun[0], 749);
	assert_int_equal(b.avenrun[1], 1670);
	assert_int_equal(b.avenrun[2], 1916);

	/* The bound, over random states, counts and gaps. */
	unsigned long worst_diff = 0;
	for (int t = 0; t < 3000; t++) {
		unsigned nr = rnd() % 2 ? (unsigned)(rnd() % 8) : (unsigned)(rnd() % 5000);
		unsigned n = 1 + (unsigned)(rnd() % 300);
		for (int i = 0; i < 3; i++)
			a.avenrun[i] = rnd() % 2 ? (unsigned long)(rnd() % (16 * 2048)) : (unsigned long)(rnd() % 10000000);
		b = a;
		struct acct_loadavg start = a;
		acct_loadavg_update_missed(&a, nr, n);
		iterate(&b, nr, n);
		for (int i = 0; i < 3; i++) {
			double e = (double)EXP[i] / 2048.0;
			double act = (double)nr * 2048.0;
			double pe = fabs((double)acct_fixed_power_int(EXP[i], 11, n) - 2048.0 * pow(e, n));
			double bound = fabs((double)start.avenrun[i] - act) * pe / 2048.0 + 1.0 / (1.0 - e) + 1.0;
			unsigned long diff = a.avenrun[i] > b.avenrun[i] ? a.avenrun[i] - b.avenrun[i]
									 : b.avenrun[i] - a.avenrun[i];
			if (!((double)diff < bound + 1e-6))
				fail_msg("load %lu, %u tasks, %u periods, avg %d: missed %lu, iterated %lu, bound %g",
					 start.avenrun[i], nr, n, i, a.avenrun[i], b.avenrun[i], bound);
			worst_diff = MAX(worst_diff, diff);
		}
	}
	/* Mostly from loads of thousands of tasks, where it is a fraction of a percent. */
	print_message("worst |missed - iterated| over random cases: %lu/2048\n", worst_diff);
}

/* Counts beyond what fits are clamped, not wrapped (a no-op check on 64-bit
 * machines, where every unsigned count fits); the kernel's 64-bit results. */
static void test_loadavg_large_counts(void **state)
{
	struct acct_loadavg l = { { 0 } };
	unsigned long ref = 0;

	for (int n = 0; n < 100; n++) {
		acct_loadavg_update(&l, UINT_MAX);
		if (sizeof(unsigned long) == 8)
			ref = ref_calc_load(ref, ACCT_EXP_1, (unsigned long)UINT_MAX * ACCT_FIXED_1);
	}
	if (sizeof(unsigned long) == 8)
		assert_int_equal(l.avenrun[0], ref);
	assert_true(l.avenrun[0] <= (ULONG_MAX >> ACCT_FSHIFT) << ACCT_FSHIFT);
	acct_loadavg_update_missed(&l, 0, 1000000);
	assert_int_equal(l.avenrun[0], 0);
}

/* ---- CPU rate ----------------------------------------------------------- */

static void test_cpu_rate(void **state)
{
	double r = -1.0;

	assert_int_equal(acct_cpu_rate(0, 0, 1000000, 1000000, &r), 0);
	assert_near(r, 1.0, 0.0);
	assert_int_equal(acct_cpu_rate(100, 1000, 2100, 2000, &r), 0);
	assert_near(r, 2.0, 0.0);
	assert_int_equal(acct_cpu_rate(5, 10, 5, 20, &r), 0); /* idle */
	assert_near(r, 0.0, 0.0);
	assert_int_equal(acct_cpu_rate(0, 0, 250000, 1000000, &r), 0);
	assert_near(r, 0.25, 0.0);
	assert_int_equal(acct_cpu_rate(0, 0, UINT64_MAX, 1, &r), 0); /* huge but finite */
	assert_true(isfinite(r) && r > 1e19);

	/* Refusals leave *ret_rate alone. */
	r = -1.0;
	assert_int_equal(acct_cpu_rate(0, 1000, 10, 1000, &r), -EINVAL); /* time stood still */
	assert_int_equal(acct_cpu_rate(0, 1000, 10, 999, &r), -EINVAL);  /* time went back */
	assert_int_equal(acct_cpu_rate(10, 1000, 9, 2000, &r), -ERANGE); /* counter went back */
	assert_int_equal(acct_cpu_rate(10, 1000, 9, 1000, &r), -EINVAL); /* both: time first */
	assert_near(r, -1.0, 0.0);
}

/* ---- rate averages ------------------------------------------------------ */

static void test_rate_avg_first_sample(void **state)
{
	struct acct_rate_avg a = {};

	acct_rate_avg_update(&a, NAN, 1000000); /* ignored, even as the first */
	assert_false(a.init);
	acct_rate_avg_update(&a, 3.5, 123456789);
	assert_true(a.init);
	for (int i = 0; i < 3; i++)
		assert_near(a.avg[i], 3.5, 0.0);
}

static void test_rate_avg_dt(void **state)
{
	struct acct_rate_avg a = {};

	acct_rate_avg_update(&a, 1.0, 0);
	/* dt = 0 changes nothing, however different the sample. */
	acct_rate_avg_update(&a, 1000.0, 0);
	for (int i = 0; i < 3; i++)
		assert_near(a.avg[i], 1.0, 0.0);
	/* NaN and infinities are ignored. */
	acct_rate_avg_update(&a, NAN, 1000000);
	acct_rate_avg_update(&a, INFINITY, 1000000);
	acct_rate_avg_update(&a, -INFINITY, 1000000);
	for (int i = 0; i < 3; i++)
		assert_near(a.avg[i], 1.0, 0.0);
	/* One step of exactly tau: avg = r + (avg - r) / e. */
	static const double tau[3] = { 60e6, 300e6, 900e6 };
	for (int i = 0; i < 3; i++) {
		struct acct_rate_avg b = { { 0.0, 0.0, 0.0 }, true };
		acct_rate_avg_update(&b, 2.0, (uint64_t)tau[i]);
		assert_near(b.avg[i], 2.0 * (1.0 - exp(-1.0)), 1e-12);
	}
	/* A huge gap (hours, or a bogus UINT64_MAX) makes the average the sample. */
	acct_rate_avg_update(&a, 0.125, 24ULL * 3600 * 1000000);
	for (int i = 0; i < 3; i++)
		assert_near(a.avg[i], 0.125, 0.0);
	acct_rate_avg_update(&a, 7.0, UINT64_MAX);
	for (int i = 0; i < 3; i++)
		assert_near(a.avg[i], 7.0, 0.0);
}

/* A constant input r after starting at 0 gives r (1 - e^(-T/tau)) at time T,
 * however the samples are spaced: irregular intervals must weigh correctly. */
static void test_rate_avg_converges(void **state)
{
	static const double tau[3] = { 60.0, 300.0, 900.0 };
	struct acct_rate_avg reg = {}, irr = {};
	uint64_t t_irr = 0;

	acct_rate_avg_update(&reg, 0.0, 0);
	acct_rate_avg_update(&irr, 0.0, 0);
	/* One hour: regular 1 s samples against random 1 ms..20 s gaps. */
	for (int s = 0; s < 3600; s++)
		acct_rate_avg_update(&reg, 2.0, 1000000);
	while (t_irr < 3600ULL * 1000000) {
		uint64_t dt = 1000 + rnd() % 20000000; /* not inside MIN(): evaluated twice */
		dt = MIN(dt, 3600ULL * 1000000 - t_irr);
		acct_rate_avg_update(&irr, 2.0, dt);
		t_irr += dt;
	}
	for (int i = 0; i < 3; i++) {
		double want = 2.0 * (1.0 - exp(-3600.0 / tau[i]));
		assert_near(reg.avg[i], want, 1e-9);
		assert_near(irr.avg[i], want, 1e-9);
	}
	assert_true(reg.avg[0] >= reg.avg[1] && reg.avg[1] >= reg.avg[2]);
	/* Long enough (12 h: e^(-12 h / 15 min) = e^-48 is far below an ulp) and
	 * each average is the input exactly, up and down, not stuck a few ulps
	 * short where a step rounds to nothing. */
	for (int s = 0; s < 12 * 3600; s++)
		acct_rate_avg_update(&reg, 2.0, 1000000);
	for (int i = 0; i < 3; i++)
		assert_near(reg.avg[i], 2.0, 0.0);
	for (int s = 0; s < 12 * 3600; s++)
		acct_rate_avg_update(&reg, 0.5, 1000000);
	for (int i = 0; i < 3; i++)
		assert_near(reg.avg[i], 0.5, 0.0);
}

/* A small tree, children before parents as the sampler orders it (deepest
 * first):
 *     /           own 1          total 1+2+3+4+5+6 = 21
 *     /a          own 2          /a + /a/x + /a/y + /a/x/1 = 2+4+5+3 = 14
 *     /b          own 6 (alone)  6
 *     /a/x        own 4          4 + 3 = 7
 *     /a/y        own 5          5
 *     /a/x/1      own 3          3
 * plus a node whose parent is not tracked (NO_PARENT) and one whose parent
 * index would break the order (treated as a root). */
static void test_sum_tree(void **state)
{
	enum { X1, AX, AY, A, B, ROOT, ORPHAN, BAD, N };
	const size_t NP = ACCT_LOAD_NO_PARENT;
	const size_t parent[N] = { [X1] = AX, [AX] = A, [AY] = A, [A] = ROOT, [B] = ROOT, [ROOT] = NP,
				   [ORPHAN] = NP, [BAD] = X1 };
	unsigned threads[N] = { [X1] = 3, [AX] = 4, [AY] = 5, [A] = 2, [B] = 6, [ROOT] = 1, [ORPHAN] = 9, [BAD] = 7 };
	unsigned active[N] = { [X1] = 1, [AX] = 0, [AY] = 2, [A] = 0, [B] = 1, [ROOT] = 0, [ORPHAN] = 1, [BAD] = 1 };

	(void)state;
	acct_load_sum_tree(parent, N, threads, active);
	assert_int_equal(threads[X1], 3);
	assert_int_equal(threads[AX], 7);
	assert_int_equal(threads[AY], 5);
	assert_int_equal(threads[A], 14);
	assert_int_equal(threads[B], 6);
	assert_int_equal(threads[ROOT], 21);
	assert_int_equal(threads[ORPHAN], 9);
	assert_int_equal(threads[BAD], 7); /* not added to X1 either */
	assert_int_equal(active[AX], 1);
	assert_int_equal(active[A], 3);
	assert_int_equal(active[ROOT], 4);
	assert_int_equal(active[ORPHAN], 1);

	acct_load_sum_tree(parent, 0, threads, active); /* nothing to do */
}

/* Random forests against the definition: a node's total is the sum of the own
 * counts of every node whose chain of parents reaches it (O(n^2), the
 * reference). */
static void test_sum_tree_random(void **state)
{
	enum { N = 500 };
	static size_t parent[N];
	static unsigned own[N], threads[N], active[N];
	unsigned seed = 12345;

	(void)state;
	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < N; i++) {
			seed = seed * 1103515245u + 12345u;
			/* parents above i; about one node in 50 a root */
			parent[i] = i + 1 < N && (seed >> 16) % 50 ? i + 1 + (seed >> 8) % (N - i - 1) : ACCT_LOAD_NO_PARENT;
			own[i] = (seed >> 4) % 100;
			threads[i] = own[i];
			active[i] = own[i] / 3;
		}
		acct_load_sum_tree(parent, N, threads, active);
		for (size_t t = 0; t < N; t++) {
			unsigned want = 0, want_active = 0;
			for (size_t i = 0; i < N; i++)
				for (size_t a = i; a != ACCT_LOAD_NO_PARENT; a = parent[a])
					if (a == t) {
						want += own[i];
						want_active += own[i] / 3;
						break;
					}
			assert_int_equal(threads[t], want);
			assert_int_equal(active[t], want_active);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loadavg_hand_steps),
		cmocka_unit_test(test_loadavg_one_task),
		cmocka_unit_test(test_loadavg_matches_kernel),
		cmocka_unit_test(test_loadavg_steady_state),
		cmocka_unit_test(test_loadavg_value),
		cmocka_unit_test(test_loadavg_format),
		cmocka_unit_test(test_fixed_power_int),
		cmocka_unit_test(test_loadavg_missed),
		cmocka_unit_test(test_loadavg_large_counts),
		cmocka_unit_test(test_cpu_rate),
		cmocka_unit_test(test_rate_avg_first_sample),
		cmocka_unit_test(test_rate_avg_dt),
		cmocka_unit_test(test_rate_avg_converges),
		cmocka_unit_test(test_sum_tree),
		cmocka_unit_test(test_sum_tree_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
