/* charges-avg.h - 1, 5 and 15-minute averages of charged values
 * (docs/charges.md, "Averages"), for the resources declared `averages = yes`
 * (load-like ones: requests in flight, job slots): per charged cgroup, of its
 * subtree value, as the daemon keeps load averages (load.h).
 *
 * The formula. Every ACCT_LOAD_FREQ_USEC (5 s) period the subtree value v is
 * sampled and each average decays towards it, as the kernel's calc_load()
 * does with the task count:
 *
 *     avg' = avg * e + v * (1 - e),   e = exp(-5 s / {1, 5, 15} min)
 *
 * in double precision (charged values may be negative and beyond the
 * kernel's fixed point). Periods that passed without a step (a late pass) are
 * caught up in one, as calc_load_n(): avg' = avg * e^n + v * (1 - e^n), with
 * the value now. An entry starts at 0 when first sampled, which counts as one
 * period: a value v held from then on reads v * (1 - e^n) after n periods.
 *
 * Warming up, as load.h's acct_load_warming(): an average that began at 0
 * while the cgroup already had charges (the entry existed before averaging
 * began, which only restored charges allow) reads low until it has covered
 * its window; one that began with the entry's first charge (whole life) is
 * exact from the start.
 *
 * The bound: each sample is a read within the resource's budget E, and the
 * weights sum to at most 1, so each average is within E of the same average
 * of the exact values at the sampling moments.
 *
 * Cost: a step walks the averaged resources' entries in the charge engine and
 * merges them with the last step's by path: O(e log e) for e entries, once
 * per period. Not thread-safe: its owner (the daemon's event loop) calls
 * everything. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "charges.h"
#include "load.h"

/* One cgroup's averages of one resource. */
struct acct_charges_avg_reading {
	double avg[_ACCT_AVG_MAX]; /* enum acct_avg_index */
	uint64_t bound;            /* the resource's budget */
	uint64_t covered_us;       /* periods fed x 5 s */
	uint64_t age_us;           /* since the last step */
	bool whole_life;           /* began with the entry's first charge */
};

struct acct_charges_avg;

/* Averages for the resources `averages[i]` of `ch` (one flag per resource of
 * the engine; may be NULL: none). `ch` must outlive the state. Returns 0 or
 * -ENOMEM. */
int acct_charges_avg_new(struct acct_charges *ch, const bool *averages, struct acct_charges_avg **ret);
/* Accepts NULL; returns NULL. */
struct acct_charges_avg *acct_charges_avg_free(struct acct_charges_avg *s);

/* Whether resource `res` is averaged. */
bool acct_charges_avg_enabled(const struct acct_charges_avg *s, size_t res);

/* Take the steps due at `now_us` (monotonic): none before a period has
 * passed since the last. The first call starts the clock; what is charged
 * then was charged before averaging began (not whole life). Returns the
 * number of periods stepped (0: none due), or -ENOMEM: a resource whose
 * table could not be built keeps its averages, which the next step carries
 * on (they miss this period's sample). */
int acct_charges_avg_step(struct acct_charges_avg *s, uint64_t now_us);

/* The averages of `path` for resource `res` at `now_us`: 0 and *ret, or
 * -ENOENT (not averaged, or not charged at the last step). */
int acct_charges_avg_read(const struct acct_charges_avg *s, size_t res, const char *path, uint64_t now_us,
			  struct acct_charges_avg_reading *ret);

/* Whether the average `which` of `r` still warms up (acct_load_warming()). */
static inline bool acct_charges_avg_warming(const struct acct_charges_avg_reading *r, int which)
{
	return acct_load_warming(r->covered_us, r->whole_life, which);
}
