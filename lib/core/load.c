/* load.c - load averages in the kernel's fixed point, CPU rates and their
 * moving averages, hierarchical task counts. The contracts are in load.h.
 *
 * The fixed-point code follows kernel/sched/loadavg.c line for line, except
 * that the products are taken in uint64_t: the kernel's unsigned long products
 * (load * EXP) overflow on 32-bit machines above ~1000 tasks; here they cannot,
 * and on 64-bit machines the results are the same bits. */
#include "load.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "basic/util.h"

static const unsigned long exp_fixed[_ACCT_AVG_MAX] = { ACCT_EXP_1, ACCT_EXP_5, ACCT_EXP_15 };

/* Time constants of the rate averages, in microseconds. */
static const double tau_usec[_ACCT_AVG_MAX] = { 60e6, 300e6, 900e6 };

/* The kernel's calc_load(): one step of load' = load e + active (1 - e), with
 * rounding up while the load rises so that a constant active count is reached
 * exactly, and down while it falls so that it reaches 0. The kernel calls
 * the decay factor e (EXP_n) `exp`; that name is libm's here. */
static unsigned long calc_load(unsigned long load, unsigned long e, unsigned long active)
{
	uint64_t newload = (uint64_t)load * e + (uint64_t)active * (ACCT_FIXED_1 - e);

	if (active >= load)
		newload += ACCT_FIXED_1 - 1;
	/* Between load and active, so it fits an unsigned long. */
	return (unsigned long)(newload / ACCT_FIXED_1);
}

unsigned long acct_fixed_power_int(unsigned long x, unsigned frac_bits, unsigned n)
{
	uint64_t result, base;

	frac_bits = MIN(MAX(frac_bits, 1u), 31u);
	result = UINT64_C(1) << frac_bits;
	/* x <= 1.0 keeps every product below 2^62. */
	base = MIN((uint64_t)x, result);

	if (n) {
		for (;;) {
			if (n & 1) {
				result *= base;
				result += UINT64_C(1) << (frac_bits - 1);
				result >>= frac_bits;
			}
			n >>= 1;
			if (!n)
				break;
			base *= base;
			base += UINT64_C(1) << (frac_bits - 1);
			base >>= frac_bits;
		}
	}
	return (unsigned long)result;
}

/* nr_active in fixed point; clamped so that it fits an unsigned long. */
static unsigned long active_fixed(unsigned nr_active)
{
	unsigned long n = nr_active;

#if UINT_MAX > (ULONG_MAX >> ACCT_FSHIFT)
	n = MIN(n, ULONG_MAX >> ACCT_FSHIFT);
#endif
	return n << ACCT_FSHIFT;
}

void acct_loadavg_update(struct acct_loadavg *l, unsigned nr_active)
{
	unsigned long active = active_fixed(nr_active);

	for (int i = 0; i < _ACCT_AVG_MAX; i++)
		l->avenrun[i] = calc_load(l->avenrun[i], exp_fixed[i], active);
}

void acct_loadavg_update_missed(struct acct_loadavg *l, unsigned nr_active, unsigned periods)
{
	unsigned long active = active_fixed(nr_active);

	if (periods == 0)
		return;
	/* The kernel's calc_load_n(): a_n = a_0 e^n + a (1 - e^n). */
	for (int i = 0; i < _ACCT_AVG_MAX; i++)
		l->avenrun[i] = calc_load(l->avenrun[i], acct_fixed_power_int(exp_fixed[i], ACCT_FSHIFT, periods),
					  active);
}

const uint64_t acct_load_window_us[_ACCT_AVG_MAX] = {
	[ACCT_AVG_1MIN] = 60 * 1000000ULL,
	[ACCT_AVG_5MIN] = 300 * 1000000ULL,
	[ACCT_AVG_15MIN] = 900 * 1000000ULL,
};

bool acct_load_warming(uint64_t covered_us, bool whole_life, int which)
{
	if (which < 0 || which >= _ACCT_AVG_MAX || whole_life)
		return false;
	return covered_us < acct_load_window_us[which];
}

double acct_loadavg_value(const struct acct_loadavg *l, int which)
{
	if (which < 0 || which >= _ACCT_AVG_MAX)
		return NAN;
	return (double)l->avenrun[which] / (double)ACCT_FIXED_1;
}

char *acct_loadavg_format(unsigned long fixed, char buf[static ACCT_LOADAVG_STRLEN])
{
	const unsigned long offset = ACCT_FIXED_1 / 200; /* get_avenrun(loads, FIXED_1/200, 0) */
	unsigned long x = fixed > ULONG_MAX - offset ? ULONG_MAX : fixed + offset;

	/* LOAD_INT(x), LOAD_FRAC(x) */
	(void)snprintf(buf, ACCT_LOADAVG_STRLEN, "%lu.%02lu", x >> ACCT_FSHIFT,
		       ((x & (ACCT_FIXED_1 - 1)) * 100) >> ACCT_FSHIFT);
	return buf;
}

int acct_cpu_rate(uint64_t usage0_usec, uint64_t t0_usec, uint64_t usage1_usec, uint64_t t1_usec,
		  double *ret_rate)
{
	if (t1_usec <= t0_usec)
		return -EINVAL;
	if (usage1_usec < usage0_usec)
		return -ERANGE;
	*ret_rate = (double)(usage1_usec - usage0_usec) / (double)(t1_usec - t0_usec);
	return 0;
}

void acct_rate_avg_update(struct acct_rate_avg *a, double rate, uint64_t dt_usec)
{
	if (!isfinite(rate))
		return;
	if (!a->init) {
		for (int i = 0; i < _ACCT_AVG_MAX; i++)
			a->avg[i] = rate;
		a->init = true;
		return;
	}
	if (dt_usec == 0)
		return;
	for (int i = 0; i < _ACCT_AVG_MAX; i++) {
		/* avg += (1 - decay) (rate - avg), written so that decay = 0 (dt >> tau)
		 * gives the sample exactly. */
		double decay = exp(-(double)dt_usec / tau_usec[i]);
		double avg = decay == 0.0 ? rate : rate + decay * (a->avg[i] - rate);

		/* Within about 0.5 / alpha units in the last place of the input the
		 * step rounds to nothing and the average would stall (1.9999999999999933
		 * for a constant 2.0); step one ulp instead, so that a constant input
		 * is reached exactly. */
		if (avg == a->avg[i] && avg != rate)
			avg = nextafter(avg, rate);
		a->avg[i] = avg;
	}
}

double acct_rate_avg_decayed(double avg, int which, uint64_t dt_usec)
{
	if (which < 0 || which >= _ACCT_AVG_MAX || dt_usec == 0)
		return avg;
	double decay = exp(-(double)dt_usec / tau_usec[which]);
	return decay == 0.0 ? 0.0 : decay * avg;
}

void acct_load_sum_tree(const size_t *parent, size_t n, unsigned *threads, unsigned *active)
{
	/* Children come first, so a node's total is complete when it is reached
	 * and goes up to its parent once. */
	for (size_t i = 0; i < n; i++) {
		size_t p = parent[i];

		if (p == ACCT_LOAD_NO_PARENT || p <= i || p >= n)
			continue;
		threads[p] += threads[i];
		active[p] += active[i];
	}
}
