/* bench-tree.h - what bench-load and bench-json share: a real cgroup tree
 * (fakecg or /sys/fs/cgroup) discovered into a ledger and sampled once, as the
 * daemon would at start, plus their clock and sort helpers. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cgroup-discovery.h"
#include "counter.h"
#include "ledger.h"
#include "sampler.h"

struct bench_tree {
	struct acct_hierarchies *layout;
	struct acct_domain *domain;
	struct acct_ledger *ledger;
	struct acct_discovery *disc;
	struct acct_sampler *sampler;
	struct acct_cgroup **cgs; /* the live records, path order */
	size_t n;
};

/* Discover the tree at `root`, make a record for every cgroup and run one
 * sampling pass with `pass_flags` (ACCT_PASS_*). Returns 0 or a negative errno;
 * on error *t holds nothing (it is closed). */
int bench_tree_open(const char *root, unsigned pass_flags, struct bench_tree *t);

/* Free everything bench_tree_open() made; *t may be partly filled. */
void bench_tree_close(struct bench_tree *t);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* qsort() comparison of uint64_t, ascending. */
int bench_compare_u64(const void *a, const void *b);
