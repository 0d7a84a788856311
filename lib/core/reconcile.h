/* reconcile.h - checking the ledger against the kernel after every pass.
 *
 * Drift (how stale the ledger was) comes from the sampler: per cgroup, the
 * difference between the value the ledger held and the kernel's new reading.
 * Invariants are checked here, over the whole tree, after a pass:
 *   children_memory: on hierarchical memory (v2, and v1 with use_hierarchy), the
 *       sum of the children's memory must not exceed the parent's, within their
 *       bounds plus a sampling-skew allowance (the pass reads the parent and the
 *       children at different instants): 1 MiB + 1% of the parent. Not checked
 *       at a v1 root, whose usage_in_bytes is computed from global page counts
 *       and omits kernel memory its children's counters include;
 *   root_meminfo: the root's memory (its own reading or the sum of the top
 *       level, whichever is larger) must not exceed MemTotal - MemFree (+1%) of
 *       /proc/meminfo (or of the meminfo file given for a fake tree);
 *   cpu_backwards: cumulative CPU time of a live cgroup never decreases (the
 *       sampler counts these while reading).
 * Violations are counted by kind, and the last one is kept as a message. */
#pragma once

#include <stdint.h>

#include "ledger.h"
#include "sampler.h"

enum acct_invariant {
	ACCT_INV_CHILDREN_MEMORY,
	ACCT_INV_ROOT_MEMINFO,
	ACCT_INV_CPU_BACKWARDS,
	_ACCT_INV_MAX,
};
const char *acct_invariant_to_string(enum acct_invariant i);

struct acct_reconcile_report {
	uint64_t passes;
	uint64_t checked_parents;                /* last pass */
	uint64_t violations[_ACCT_INV_MAX];      /* last pass */
	uint64_t violations_total[_ACCT_INV_MAX];
	char last_violation[256];                /* "" if none ever */
	struct histogram drift_memory;           /* last pass */
	struct histogram drift_cpu;
	int64_t root_memory;                     /* last pass; -1 unknown */
	int64_t meminfo_used;                    /* MemTotal - MemFree; -1 unknown */
	int64_t meminfo_total;
};

/* Run the invariant checks over `cgs` (live cgroups sorted by path, as from
 * acct_ledger_snapshot()) after a pass described by `pass`, updating *rep.
 * `meminfo_path` NULL skips the meminfo check. Owner thread. */
void acct_reconcile_pass(struct acct_ledger *l, struct acct_cgroup *const *cgs, size_t n,
			 const struct acct_pass_report *pass, const char *meminfo_path, bool hierarchical_memory,
			 struct acct_reconcile_report *rep);
