/* bench-cpu-avg-note.c - what an idle pass's CPU-average work costs per
 * cgroup: the eager decay the sampler used to do (acct_rate_avg_update() with
 * rate 0 and four stores into the record) against the lazy note it does now
 * (acct_cgroup_cpu_rate_idle(); docs/counters.md, "A pruned cgroup's CPU
 * rate: averages decayed when read"). 10,101 ledger records, 50 passes,
 * three rounds; the records stay warm in the cache, so this is the
 * instructions' cost, not the cache misses a real pass pays for either.
 * Built with the tests: build/tests/bench/bench-cpu-avg-note.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ledger.h"
#include "load.h"

enum { N = 10101, PASSES = 50, ROUNDS = 3 };

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(void)
{
	struct acct_ledger_budgets b = { 1 << 20, 10000, 8 };
	struct acct_domain *d;
	struct acct_ledger *l;
	struct acct_cgroup **cg = calloc(N, sizeof(*cg));
	struct acct_rate_avg *ra = calloc(N, sizeof(*ra));
	const double avg[3] = { 0.5, 0.4, 0.3 };

	if (!cg || !ra || acct_domain_new(NULL, &d) < 0 || acct_ledger_new(d, &b, &l) < 0)
		return 1;
	for (int i = 0; i < N; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/c%d", i);
		struct acct_cgroup_id id = { .path = path, .depth = 1, .hierarchies = 1 };
		if (acct_ledger_add(l, &id, 1, &cg[i]) < 0)
			return 1;
		ra[i] = (struct acct_rate_avg){ { avg[0], avg[1], avg[2] }, true };
		acct_cgroup_set_cpu_rate(cg[i], 0.5, avg, 1000000);
	}
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();
		for (int k = 1; k <= PASSES; k++)
			for (int i = 0; i < N; i++) {
				acct_rate_avg_update(&ra[i], 0.0, 1000000);
				acct_cgroup_set_double(&cg[i]->cpu_rate_bits, 0.0);
				for (int a = 0; a < 3; a++)
					acct_cgroup_set_double(&cg[i]->cpu_rate_avg_bits[a], ra[i].avg[a]);
			}
		uint64_t t1 = now_ns();
		for (int k = 1; k <= PASSES; k++)
			for (int i = 0; i < N; i++)
				acct_cgroup_cpu_rate_idle(cg[i], 1000000 + (uint64_t)k * 1000000);
		uint64_t t2 = now_ns();
		printf("eager %.1f ns per cgroup and pass, lazy %.1f\n", (double)(t1 - t0) / N / PASSES,
		       (double)(t2 - t1) / N / PASSES);
	}
	return 0;
}
