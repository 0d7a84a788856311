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

#include "ledger.h"
#include "bench-tree.h"
#include "util.h"

int main(int argc, char **argv)
{
	struct bench_tree tree;
	int r, rounds = argc > 2 ? atoi(argv[2]) : 20;

	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: bench-load ROOT [ROUNDS]\n");
		return 2;
	}
	r = bench_tree_open(argv[1], ACCT_PASS_FAST | ACCT_PASS_LOAD, &tree);
	if (r < 0) {
		fprintf(stderr, "bench-load: setting up %s failed: %s\n", argv[1], strerror(-r));
		return 1;
	}
	struct acct_sampler *sampler = tree.sampler;
	struct acct_cgroup **cgs = tree.cgs;
	int n = (int)tree.n;

	uint64_t *t = calloc((size_t)rounds, sizeof(*t));
	if (!t)
		return 1;
	for (int i = 0; i < rounds; i++) {
		uint64_t t0 = bench_now_ns();
		/* 5 s later each round, as the daemon's LOAD passes */
		acct_sampler_aggregate_load(sampler, cgs, (size_t)n, (uint64_t)(i + 1) * 5000000u + t0 / 1000);
		t[i] = bench_now_ns() - t0;
	}
	qsort(t, (size_t)rounds, sizeof(*t), bench_compare_u64);
	printf("cgroups %d  aggregate_load median %.3f ms  min %.3f ms  (%d rounds)\n", n, t[rounds / 2] / 1e6,
	       t[0] / 1e6, rounds);
	free(t);

	bench_tree_close(&tree);
	return 0;
}
