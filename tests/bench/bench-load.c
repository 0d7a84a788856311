/* bench-load.c - times the hierarchical load aggregation,
 * acct_sampler_aggregate_load(), over a real tree after one real sampling pass.
 *
 *     tests/fakecg.py build --root ROOT --count 10000
 *     build/tests/bench/bench-load ROOT [ROUNDS]
 *
 * Prints the number of cgroups and the median and minimum time of one
 * aggregation over ROUNDS runs (default 20). It only reports; nothing fails on
 * slowness. The aggregation also advances each cgroup's load average, which is
 * arithmetic and costs the same in every round. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroup-discovery.h"
#include "counter.h"
#include "ledger.h"
#include "sampler.h"
#include "util.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_discovery(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata)
{
	struct acct_cgroup *cg;

	if (ev == ACCT_CGROUP_ADDED)
		(void)acct_ledger_add(userdata, id, now_ns() / 1000, &cg);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct acct_cgroup_layout *layout = NULL;
	struct acct_domain *domain = NULL;
	struct acct_ledger *ledger = NULL;
	struct acct_discovery *disc = NULL;
	struct acct_sampler *sampler = NULL;
	struct acct_cgroup **cgs = NULL;
	struct acct_pass_report rep;
	int r, n = 0, rounds = argc > 2 ? atoi(argv[2]) : 20;

	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: bench-load ROOT [ROUNDS]\n");
		return 2;
	}
	struct acct_domain_options dopts = { .mode = ACCT_MODE_AUTO };
	struct acct_ledger_budgets b = { 1 << 20, 1000, 16 };
	struct acct_discovery_filter f = { .max_depth = 255 };
	r = acct_cgroup_layout_detect(argv[1], &layout);
	if (r >= 0)
		r = acct_domain_new(&dopts, &domain);
	if (r >= 0)
		r = acct_ledger_new(domain, &b, &ledger);
	if (r >= 0)
		r = acct_discovery_new(layout, &f, &disc);
	if (r >= 0)
		r = acct_discovery_scan(disc, on_discovery, ledger);
	if (r >= 0) {
		struct acct_sampler_options sopts = { .layout = layout, .workers = 4 };
		r = acct_sampler_new(&sopts, ledger, &sampler);
	}
	if (r >= 0)
		r = n = acct_ledger_snapshot(ledger, false, &cgs);
	if (r >= 0)
		r = acct_sampler_run(sampler, cgs, (size_t)n, ACCT_PASS_FAST | ACCT_PASS_LOAD, now_ns() / 1000, &rep);
	if (r < 0) {
		fprintf(stderr, "bench-load: setting up %s failed: %s\n", argv[1], strerror(-r));
		return 1;
	}

	uint64_t *t = calloc((size_t)rounds, sizeof(*t));
	if (!t)
		return 1;
	for (int i = 0; i < rounds; i++) {
		uint64_t t0 = now_ns();
		/* 5 s later each round, as the daemon's LOAD passes */
		acct_sampler_aggregate_load(sampler, cgs, (size_t)n, (uint64_t)(i + 1) * 5000000u + t0 / 1000);
		t[i] = now_ns() - t0;
	}
	qsort(t, (size_t)rounds, sizeof(*t), compare_u64);
	printf("cgroups %d  aggregate_load median %.3f ms  min %.3f ms  (%d rounds)\n", n, t[rounds / 2] / 1e6,
	       t[0] / 1e6, rounds);
	free(t);

	sampler = acct_sampler_free(sampler);
	for (int i = 0; i < n; i++)
		acct_sampler_release(cgs[i], NULL);
	free(cgs);
	acct_discovery_free(disc);
	acct_ledger_free(ledger);
	acct_domain_free(domain);
	acct_cgroup_layout_free(layout);
	return 0;
}
