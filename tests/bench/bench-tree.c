/* bench-tree.c - a discovered, sampled ledger for the benchmarks. See
 * bench-tree.h. */
#include "bench-tree.h"

#include <stdlib.h>
#include <time.h>

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int bench_compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void on_discovery(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata)
{
	struct acct_cgroup *cg;

	if (ev == ACCT_CGROUP_ADDED)
		(void)acct_ledger_add(userdata, id, bench_now_ns() / 1000, &cg);
}

int bench_tree_open(const char *root, unsigned pass_flags, struct bench_tree *t)
{
	struct acct_domain_options dopts = { .mode = ACCT_MODE_AUTO };
	struct acct_ledger_budgets b = { 1 << 20, 1000, 16 };
	struct acct_discovery_filter f = { .max_depth = 255 };
	struct acct_pass_report rep;
	int r;

	*t = (struct bench_tree){};
	r = acct_hierarchies_detect(root, &t->layout);
	if (r >= 0)
		r = acct_domain_new(&dopts, &t->domain);
	if (r >= 0)
		r = acct_ledger_new(t->domain, &b, &t->ledger);
	if (r >= 0)
		r = acct_discovery_new(t->layout, &f, &t->disc);
	if (r >= 0)
		r = acct_discovery_scan(t->disc, on_discovery, t->ledger);
	if (r >= 0) {
		struct acct_sampler_options sopts = { .layout = t->layout, .workers = 4 };
		r = acct_sampler_new(&sopts, t->ledger, &t->sampler);
	}
	if (r >= 0) {
		r = acct_ledger_snapshot(t->ledger, false, &t->cgs);
		if (r >= 0)
			t->n = (size_t)r;
	}
	if (r >= 0)
		r = acct_sampler_run(t->sampler, t->cgs, t->n, pass_flags, bench_now_ns() / 1000, &rep);
	if (r < 0) {
		bench_tree_close(t);
		return r;
	}
	return 0;
}

void bench_tree_close(struct bench_tree *t)
{
	t->sampler = acct_sampler_free(t->sampler);
	for (size_t i = 0; i < t->n; i++)
		acct_sampler_release(t->cgs[i], NULL);
	free(t->cgs);
	acct_discovery_free(t->disc);
	acct_ledger_free(t->ledger);
	acct_domain_free(t->domain);
	acct_hierarchies_free(t->layout);
	*t = (struct bench_tree){};
}
