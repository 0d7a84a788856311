/* load.h - per-cgroup load averages and CPU rates: pure arithmetic, no I/O.
 *
 * Load average. The same numbers /proc/loadavg shows for the whole system,
 * computed for one cgroup: every 5 s (LOAD_FREQ) the sampler counts the
 * cgroup's runnable and uninterruptible tasks and feeds the count to
 * acct_loadavg_update(). Which threads are a cgroup's, in which of the
 * hierarchies, and why acctd's own sampling threads never count as running,
 * is the sampler's rule (sample-load.c, "Threads and load"). The averages
 * are the kernel's (kernel/sched/loadavg.c) bit for bit: fixed point with 11 fractional bits, decay factors
 * EXP_1/EXP_5/EXP_15 = 2048 * exp(-5 s / {1, 5, 15} min), and calc_load()'s
 * rounding (up while the load rises, down while it falls, so a constant count
 * n is reached exactly: n * 2048, formatted "n.00"). When the sampler missed
 * periods, acct_loadavg_update_missed() catches up in one step as the kernel
 * does after NO_HZ idle (calc_load_n(), with the decay raised to the n-th power
 * by fixed_power_int()). That is close to, but not always exactly, the same as
 * n single updates; the difference is bounded in acct_loadavg_update_missed().
 *
 * CPU rate. acct_cpu_rate() turns two readings of a cumulative CPU-time
 * counter (cpu.stat usage_usec, cpuacct.usage) into cores in use, and
 * acct_rate_avg_update() keeps 1, 5 and 15-minute exponential moving averages
 * of that rate for samples taken at irregular intervals.
 *
 * Tree sums. acct_load_sum_tree() turns per-cgroup task counts into
 * hierarchical ones (each cgroup's own plus its descendants'), in one pass over
 * an array ordered children before parents: O(n) for n cgroups.
 *
 * Nothing here allocates, blocks or logs; a zeroed struct is the initial state
 * of both averages. The functions are not atomic: one thread updates a given
 * struct at a time (the ledger publishes the results atomically). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACCT_LOAD_NO_PARENT SIZE_MAX /* acct_load_sum_tree(): a node without a parent */

#define ACCT_FSHIFT 11                    /* bits of precision */
#define ACCT_FIXED_1 (1UL << ACCT_FSHIFT) /* 1.0 in fixed point */
#define ACCT_LOAD_FREQ_USEC 5000000ULL    /* one load-average period: 5 s */
#define ACCT_EXP_1 1884UL                 /* 1/exp(5 s/1 min) in fixed point */
#define ACCT_EXP_5 2014UL                 /* 1/exp(5 s/5 min) */
#define ACCT_EXP_15 2037UL                /* 1/exp(5 s/15 min) */

/* Index of the averages in struct acct_loadavg and struct acct_rate_avg. */
enum acct_avg_index {
	ACCT_AVG_1MIN = 0,
	ACCT_AVG_5MIN = 1,
	ACCT_AVG_15MIN = 2,
	_ACCT_AVG_MAX,
};

/* Load averages over 1, 5 and 15 minutes in fixed point (value * 2048), as the
 * kernel's avenrun[]. Zero-initialise before the first update. */
struct acct_loadavg {
	unsigned long avenrun[_ACCT_AVG_MAX];
};

/* Longest string acct_loadavg_format() writes, NUL included ("9007199254740991.99"
 * on 64-bit; the integer part is at most ULONG_MAX >> 11). */
#define ACCT_LOADAVG_STRLEN 24

/* True when every average is 0 (an update with no active task keeps them
 * so: the kernel's rounding takes a falling load down to 0 and no lower). */
static inline bool acct_loadavg_is_zero(const struct acct_loadavg *l)
{
	for (int i = 0; i < _ACCT_AVG_MAX; i++)
		if (l->avenrun[i])
			return false;
	return true;
}

/* One 5 s period has passed and `nr_active` tasks (runnable + uninterruptible)
 * are in the cgroup now: decay the three averages towards nr_active, exactly as
 * the kernel's calc_global_load() does. Counts above ULONG_MAX >> 11 (only
 * possible where long has 32 bits) are clamped to it. Cannot fail. */
void acct_loadavg_update(struct acct_loadavg *l, unsigned nr_active);

/* `periods` 5 s periods have passed since the last update (the sampler was late
 * or the cgroup was idle and not sampled) and `nr_active` tasks are active now:
 * catch up in one step, as the kernel's calc_global_nohz() with calc_load_n():
 * load' = calc_load(load, fixed_power_int(EXP, 11, periods), active).
 * periods = 0 leaves the averages unchanged; periods = 1 is exactly
 * acct_loadavg_update(). For more periods the result may differ from
 * `periods` single updates with the same count: fixed_power_int() rounds
 * EXP^n to 11 bits (off by up to ~7/2048) and the single updates round once
 * each. Per average, with e = EXP/2048, a = nr_active * 2048 and
 * pe = |fixed_power_int(EXP, 11, n) - 2048 e^n|:
 *     |missed - iterated| < |load - a| * pe / 2048 + 1 / (1 - e) + 1
 * (units of 1/2048 task; e.g. 1 task going idle for 12 periods: the 1-minute
 * average is 751 against 749, "0.37" either way). At steady state
 * (load = a) both are exact. Cannot fail. */
void acct_loadavg_update_missed(struct acct_loadavg *l, unsigned nr_active, unsigned periods);

/* The window of each average (enum acct_avg_index): 1, 5 and 15 minutes. */
extern const uint64_t acct_load_window_us[_ACCT_AVG_MAX];

/* Whether the average `which` is still warming up: it was fed for
 * `covered_us` only, less than its window, from 0 while the cgroup existed
 * (and may have had tasks) before, so it reads low; an average that covers
 * the cgroup's whole life (`whole_life`: it appeared while acctd ran) began
 * at 0 as the kernel's would have, and is not. Also false for an index out
 * of range. Pure. */
bool acct_load_warming(uint64_t covered_us, bool whole_life, int which);

/* The average `which` (enum acct_avg_index) as a double: avenrun / 2048,
 * unrounded (e.g. 0.5327 where /proc/loadavg would print "0.53").
 * Returns NAN for an index out of range. */
double acct_loadavg_value(const struct acct_loadavg *l, int which);

/* Format a fixed-point load (an avenrun[] value) as /proc/loadavg does:
 * "%lu.%02lu" of LOAD_INT/LOAD_FRAC after adding FIXED_1/200 (= 10), which
 * rounds to about the nearest hundredth: 2047 ("0.9995") -> "1.00", 2058
 * ("1.0049") -> "1.00", 2059 ("1.0054") -> "1.01". The addition saturates at
 * ULONG_MAX. Writes at most ACCT_LOADAVG_STRLEN bytes including the NUL;
 * returns buf. */
char *acct_loadavg_format(unsigned long fixed, char buf[static ACCT_LOADAVG_STRLEN]);

/* The kernel's fixed_power_int(): x^n for x in fixed point with `frac_bits`
 * fractional bits, rounding each multiplication to nearest; x^0 = 1 <<
 * frac_bits. Meant for x <= 1.0: frac_bits is clamped to 1..31 and x to
 * 1 << frac_bits, so no input overflows. Exposed for the tests. */
unsigned long acct_fixed_power_int(unsigned long x, unsigned frac_bits, unsigned n);

/* Cores in use between two readings of a cumulative CPU-time counter:
 * (usage1 - usage0) / (t1 - t0), all in microseconds (timestamps from
 * CLOCK_MONOTONIC). Returns 0 and writes *ret_rate; -EINVAL when time did not
 * advance (t1 <= t0), -ERANGE when the counter went backwards (usage1 <
 * usage0; time is checked first); both are invariant violations the caller
 * counts, and *ret_rate is not written. */
int acct_cpu_rate(uint64_t usage0_usec, uint64_t t0_usec, uint64_t usage1_usec, uint64_t t1_usec,
		  double *ret_rate);

/* Exponential moving averages of a rate over 1, 5 and 15 minutes (time
 * constants tau = 60, 300, 900 s). Zero-initialise before the first update. */
struct acct_rate_avg {
	double avg[_ACCT_AVG_MAX];
	bool init; /* a sample has been seen */
};

/* Add a sample `rate` taken `dt_usec` after the previous one: avg += alpha *
 * (rate - avg) with alpha = 1 - exp(-dt / tau), so irregular intervals weigh
 * correctly. The first sample sets all three averages to `rate` (dt ignored);
 * dt = 0 afterwards changes nothing; a dt much longer than tau makes the
 * average the sample. A NaN or infinite rate is ignored. Cannot fail. */
void acct_rate_avg_update(struct acct_rate_avg *a, double rate, uint64_t dt_usec);

/* Average `which` (enum acct_avg_index) after dt_usec more of a rate of 0:
 * avg x exp(-dt / tau), 0 where the decay underflows; what
 * acct_rate_avg_update() with rate 0 gives (but for its last-place step,
 * which only a subnormal average can take). For averages decayed when read
 * (acct_cgroup_read()). Cannot fail. */
double acct_rate_avg_decayed(double avg, int which, uint64_t dt_usec);

/* Hierarchical sums over a forest of n nodes stored children before parents:
 * parent[i] is the index of node i's parent, or ACCT_LOAD_NO_PARENT. On entry
 * threads[i] and active[i] hold node i's own counts; on return, its own plus
 * those of all its descendants (unsigned arithmetic, wrapping as C's). A parent
 * index not above i (which would break the order) is treated as no parent.
 * O(n). Cannot fail. */
void acct_load_sum_tree(const size_t *parent, size_t n, unsigned *threads, unsigned *active);
