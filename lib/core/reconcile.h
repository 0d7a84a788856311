/* reconcile.h - checking the ledger against the kernel after every pass.
 *
 * Drift (how stale the ledger was) comes from the sampler: per cgroup, the
 * difference between the value the ledger held and the kernel's new reading.
 * Invariants are checked here, over the whole tree, after a pass:
 *   children_memory: on hierarchical memory (v2, and v1 with use_hierarchy), the
 *       sum of the children's memory must not exceed the parent's. The kernel
 *       is only accused of what the timing cannot explain. A pass reads a
 *       parent and its children up to tens of milliseconds apart (other
 *       cgroups' files in between), long enough for a child to allocate or
 *       free hundreds of MiB; so the pass's values only select suspects
 *       (children's sum > parent + their bounds + 1 MiB + 1% of the parent),
 *       and a suspect is re-read at once: each child, the parent, each child
 *       again, the parent again. It is a violation only when the children's
 *       sum, taking each child's lower reading, still exceeds the parent's
 *       higher reading by more than 1 MiB + 1% (the kernel's charge
 *       batching): a false alarm would need a child's memory to change
 *       direction twice within these microseconds. At most CONFIRM_MAX suspects a pass are
 *       re-read; a suspect that cannot be re-read (a file vanished) is not a
 *       violation. Not checked at the root, whose memory is defined as at least
 *       the sum of its children (acct_sampler_root_memory());
 *   root_meminfo: the root's memory (as defined there: its own reading or
 *       the sum of the top level, the larger) must not exceed MemTotal - MemFree (+1%) of
 *       /proc/meminfo (or of the meminfo file given for a fake tree);
 *   cpu_backwards: cumulative CPU time of a live cgroup never decreases
 *       between two readings of the same file (the sampler counts these while
 *       reading; a change of source file restarts the series unchecked).
 * Violations are counted by kind, and the last one is kept as a message. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

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
	uint64_t violations[_ACCT_INV_MAX];      /* last pass (and root checks since) */
	uint64_t violations_total[_ACCT_INV_MAX];
	char last_violation[256];                /* "" if none ever */
	struct histogram drift_memory;           /* last pass */
	struct histogram drift_cpu;
	int64_t root_memory;                     /* last check; -1 unknown */
	int64_t meminfo_used;                    /* MemTotal - MemFree; -1 unknown */
	int64_t meminfo_total;
	uint64_t unchanged_passes;               /* children_memory not checked again: nothing it
						  * reads changed since a check that found no violation */
	/* What the last children_memory check saw (acct_reconcile_pass()). */
	bool checked;
	uint64_t checked_changes, checked_memory;
};

/* Run the invariant checks over `cgs` (live cgroups sorted by path, as from
 * acct_ledger_snapshot()) after a pass described by `pass`, updating *rep.
 * `meminfo_path` NULL skips the meminfo check. `reread` is the sampler that
 * re-reads suspects of children_memory (acct_sampler_read_memory()); NULL
 * judges on the pass's values alone. Owner thread, no pass running. */
void acct_reconcile_pass(struct acct_ledger *l, struct acct_cgroup *const *cgs, size_t n,
			 const struct acct_pass_report *pass, const char *meminfo_path, bool hierarchical_memory,
			 struct acct_sampler *reread, struct acct_reconcile_report *rep);

/* The index in cgs[0..n) (sorted by path, as from acct_ledger_snapshot()) of
 * each cgroup's parent into ret[0..n): the cgroup whose path is its
 * dirname, or -1 where the array has none, and for the root and the top
 * level (whose parent, the root, is not checked). One walk of the array,
 * O(n) (reconcile.c says why it holds). Returns 0 or -ENOMEM. */
int acct_reconcile_parents(struct acct_cgroup *const *cgs, size_t n, ssize_t *ret);

/* The root_meminfo check alone, with the root's memory as the ledger holds it
 * now (rep->root_memory) and meminfo read again: after a pass that moved the
 * root's memory without a whole reconciliation (a walk alone, an event pass),
 * so that Status and /metrics keep saying what List and Get do. Counts into
 * the last pass's violations; rep->passes is not advanced. acct_reconcile_pass()
 * ends with it. */
void acct_reconcile_root(struct acct_cgroup *const *cgs, size_t n, const char *meminfo_path,
			 struct acct_reconcile_report *rep);
