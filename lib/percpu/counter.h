/* counter.h - scalable signed 64-bit counters with a stated error bound.
 *
 * A counter holds a quantity (bytes, microseconds, tasks, requests) that many
 * threads update and many readers read. It is built the way the Linux kernel
 * builds scalable counters (lib/percpu_counter.c, memcg's per-CPU stats), and
 * states what that costs in accuracy:
 *
 *   update  -> the current CPU's shard (a residue r, |r| <= batch - 1)
 *   fold    -> when a residue would leave that range it moves to its NUMA
 *              node's sum (one cache line per node, on that node)
 *   read    -> base + sum of node sums: O(nodes), never blocks writers, off by
 *              at most the bound below; precise read adds every shard.
 *
 * Error bound. With S shards (possible CPUs) and the counter's batch b,
 *
 *     |approximate - exact| <= S * (b - 1)
 *
 * because every shard keeps |r| <= b - 1 and a fold in progress holds at most
 * one shard's residue (that shard reads 0 meanwhile). The operator gives an
 * error budget E per counter; the engine derives
 *
 *     b_max = floor(E / S) + 1        (so S * (b_max - 1) <= E)
 *
 * and never runs with b > b_max, so the bound returned with every read is <= E.
 * E = 0 makes every update exact (each goes straight to its node sum).
 * "exact" means: all updates that returned before the read began, plus any
 * subset of those running concurrently with it.
 *
 * Compact counters. Most counters of a daemon are idle, so a counter starts as
 * one 64-bit atomic (exact, bound 0; the struct is one cache line) and upgrades
 * to shards when it sees contention (failed compare-and-swaps) or a high rate
 * (256 updates within one second, after Kent Overstreet's lazy percpu counter).
 * The compact value stays as the counter's base, so upgrading loses nothing and
 * is race-free. Shard memory comes from the domain's node-local pool (pool.h).
 *
 * Update paths. Where glibc registered restartable sequences (x86-64, rseq.h)
 * an update is a plain add inside an rseq critical section: no atomic
 * read-modify-write. Elsewhere, or when forced, shards are updated with
 * compare-and-swap on the shard of sched_getcpu(). Both are exact.
 *
 * Auto-tuning (a switch of its own, per domain). acct_domain_tune() halves the
 * batch of a counter that folds rarely (fresher reads, tighter bound) and
 * doubles that of one that folds often (less shared-line traffic), always
 * within b_max. Its state is in struct acct_counter_stats.
 *
 * Thread safety: every function may be called from any thread concurrently
 * with updates and reads of the same counter, except acct_counter_free() and
 * acct_domain_free(), which require that nobody else uses the object. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rseq.h"
#include "topology.h"

struct acct_domain;

enum acct_update_mode {
	ACCT_MODE_AUTO = 0, /* rseq where usable, else fallback */
	ACCT_MODE_RSEQ,     /* require rseq; acct_domain_new() fails with -EOPNOTSUPP without it */
	ACCT_MODE_FALLBACK, /* sched_getcpu() + compare-and-swap */
};

enum acct_counter_state {
	ACCT_STATE_COMPACT = 0,       /* one atomic word, exact */
	ACCT_STATE_SHARDED_RSEQ = 1,  /* shards, real topology, rseq hot path (inline) */
	ACCT_STATE_SHARDED_OTHER = 2, /* shards, fallback mode or simulated topology */
};

struct acct_domain_options {
	const struct acct_topology *topology; /* NULL: detect; copied */
	enum acct_update_mode mode;
	bool auto_tune;
	/* Upgrade rules; 0 picks the defaults (256 updates within 1000 ms, 64 failed CAS). */
	uint32_t upgrade_ops;
	uint32_t upgrade_window_ms;
	uint32_t upgrade_contention;
};

/* The counter itself: one cache line. Fields are private to counter.c and to the
 * inline fast path below; use the functions. */
struct acct_counter {
	uint32_t state;  /* enum acct_counter_state, atomic */
	uint32_t slot;   /* pool slot once sharded */
	int64_t base;    /* compact value; stays as the base after the upgrade */
	char *shard0;    /* this counter's shard word on shard 0 */
	int64_t lim;     /* 2 * (batch - 1): encoded shard words stay within +/- lim */
	struct acct_domain *domain;
	int64_t budget;  /* E */
	uint32_t ops;         /* updates counted for the rate rule (compact only) */
	uint32_t contention;  /* failed CAS seen (compact only) */
	uint32_t window_ms;   /* start of the rate window */
	uint32_t flags;
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct acct_counter) == 64, "a compact counter is one cache line");

struct acct_reading {
	int64_t value;  /* approximate (or precise) value */
	uint64_t bound; /* |value - exact| <= bound */
};

struct acct_counter_stats {
	enum acct_counter_state state;
	int64_t budget;        /* E */
	int64_t batch;         /* batch in effect for new updates */
	int64_t batch_max;     /* floor(E / S) + 1 */
	uint64_t bound;        /* current bound of an approximate read */
	uint64_t folds;        /* residues moved to node sums */
	uint64_t direct;       /* updates that went straight to a node sum */
	uint64_t tune_grows;   /* batch doublings by the tuner */
	uint64_t tune_shrinks; /* batch halvings by the tuner */
	bool shrink_pending;   /* a lower batch waits for residues to drain */
	bool upgraded;         /* went from compact to sharded */
};

struct acct_domain_stats {
	enum acct_update_mode mode; /* the mode in effect (never AUTO) */
	bool auto_tune;
	unsigned nr_shards, nr_nodes;
	uint64_t counters;         /* live counters */
	uint64_t sharded;          /* of which sharded */
	uint64_t upgrades;         /* compact -> sharded since creation */
	uint64_t tune_passes;
	size_t compact_bytes;      /* bytes per compact counter */
	size_t sharded_bytes;      /* bytes per sharded counter (incl. its shards) */
	size_t pool_bytes;         /* shard/node memory mapped */
};

/* Create a domain: a topology, its pools and the counters made from them.
 * Returns 0, -EINVAL for a bad option, -EOPNOTSUPP when ACCT_MODE_RSEQ is asked
 * for and unusable, or -ENOMEM. Cost: reads sysfs once; allocates lazily. */
int acct_domain_new(const struct acct_domain_options *opts, struct acct_domain **ret);

/* Free the domain and every counter still in it; accepts NULL; returns NULL. */
struct acct_domain *acct_domain_free(struct acct_domain *d);

const struct acct_topology *acct_domain_topology(const struct acct_domain *d);
void acct_domain_stats(struct acct_domain *d, struct acct_domain_stats *ret);

/* Switch auto-tuning on or off. Off returns every counter to its b_max at the
 * next acct_domain_tune(). */
void acct_domain_set_auto_tune(struct acct_domain *d, bool on);

/* One tuner pass over the domain's sharded counters (call it periodically, say
 * every second; `now_ns` is CLOCK_MONOTONIC). Also completes pending batch
 * shrinks. Cost: O(sharded counters x shards) worst case. */
void acct_domain_tune(struct acct_domain *d, uint64_t now_ns);

/* Create a compact counter of value 0 with error budget `budget` (>= 0).
 * Returns 0, -EINVAL for a negative budget, or -ENOMEM. Takes a counter from
 * the domain's slab (the system allocator runs once per 1024 counters). */
int acct_counter_new(struct acct_domain *d, int64_t budget, struct acct_counter **ret);

/* Return the counter to its domain; accepts NULL; returns NULL. Nobody may use
 * the counter concurrently or afterwards. */
struct acct_counter *acct_counter_free(struct acct_counter *c);

/* Out-of-line update: everything the inline path below does not handle. */
void acct_counter_add_slow(struct acct_counter *c, int64_t delta);

/* Add a signed delta. Never loses an update. Any thread, any CPU. Like a relaxed
 * atomic add, it does not order the caller's other memory accesses. Cost: about a
 * nanosecond on the rseq path (no atomic instruction), an uncontended CAS when
 * compact, a CAS on a CPU-local line in fallback mode; a fold (one atomic add
 * to the node's line) every ~batch/|delta| updates. The running total must stay
 * within int64 (intermediate wrap-around is harmless). */
static inline void acct_counter_add(struct acct_counter *c, int64_t delta)
{
#if ACCT_HAVE_RSEQ_ASM
	int64_t delta2;
	/* 2 * delta overflowing, or the sum overflowing inside the section, sends
	 * the update to the slow path, where it goes straight to a node sum. */
	if (__builtin_expect(__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == ACCT_STATE_SHARDED_RSEQ, 1) &&
	    __builtin_expect(!__builtin_add_overflow(delta, delta, &delta2), 1) &&
	    __builtin_expect(acct_rseq_shard_add(c->shard0, &c->lim, delta2), 1))
		return;
#endif
	acct_counter_add_slow(c, delta);
}

/* Add `delta` on behalf of CPU `cpu` (per-CPU data such as cpuacct.usage_percpu):
 * in fallback mode into that CPU's shard, in rseq mode (where only a CPU itself
 * may write its shard) into that CPU's node sum; compact counters add to their
 * value. Returns 0 or -EINVAL when cpu >= the topology's shards. */
int acct_counter_add_cpu(struct acct_counter *c, unsigned cpu, int64_t delta);

/* Add `delta` to node `node`'s sum (per-node data such as memory.numa_stat).
 * A compact counter stays compact for node 0 (its base is node 0's value)
 * and for a delta of 0, and is upgraded first for another node. Returns 0,
 * -EINVAL for a bad node, -ENOMEM. */
int acct_counter_add_node(struct acct_counter *c, unsigned node, int64_t delta);

/* Approximate read: value and bound (<= budget). O(nodes), never waits, never
 * blocks writers. */
void acct_counter_read(const struct acct_counter *c, struct acct_reading *ret);

/* Precise read: base + node sums + every shard, consistent with respect to
 * folds (retries, and at worst briefly holds new folds off and waits for those
 * in progress). Bound 0 when no update is concurrent. O(shards). */
int64_t acct_counter_read_precise(const struct acct_counter *c);

/* Approximate value of node `node` (its node sum, plus the base for node 0)
 * with the bound of that node's shards. Returns 0 or -EINVAL. */
int acct_counter_read_node(const struct acct_counter *c, unsigned node, struct acct_reading *ret);

/* Compare the counter with `threshold`: <0 below, 0 equal, >0 above. Answers
 * from the approximate read when the threshold lies outside value +/- bound,
 * and reads precisely only inside that band; *ret_precise (may be NULL) says
 * which happened. */
int acct_counter_compare(const struct acct_counter *c, int64_t threshold, bool *ret_precise);

/* Change the error budget at run time. Raising it takes effect at once; lowering
 * it lowers the batch at once and the reported bound as soon as every shard's
 * residue fits (at once when they already do, else by a later tuner pass), so
 * every read stays within the bound it reports. Returns 0 or -EINVAL. */
int acct_counter_set_budget(struct acct_counter *c, int64_t budget);

/* Upgrade a compact counter to shards now. Returns 0 (also when already
 * sharded) or -ENOMEM. */
int acct_counter_upgrade(struct acct_counter *c);

void acct_counter_stats(const struct acct_counter *c, struct acct_counter_stats *ret);

/* b_max for budget E over `shards` shards: floor(E / shards) + 1, capped so that
 * encoded shard words cannot overflow. */
int64_t acct_batch_for_budget(int64_t budget, unsigned shards);

const char *acct_update_mode_to_string(enum acct_update_mode m);

#ifdef ACCT_COUNTER_TEST_POINTS
/* Scheduling points of a test build (tests/test-counter-interleave.c): the
 * engine calls the hook, when set, at each point below, so that a test can stop
 * a thread there and force an interleaving that preemption produces only by
 * chance. Normal builds compile the points away. */
enum acct_counter_test_point {
	ACCT_TP_CAS_LIMIT_READ, /* fallback update: limit read, shard not yet written */
	ACCT_TP_FOLD_HELD,      /* fold: residue taken from its shard, not yet in the node sum */
	ACCT_TP_PRECISE_WAIT,   /* precise read: folds held off, waiting for those in flight */
	ACCT_TP_LOWERING,       /* budget lowering: limit lowered, shards not yet checked */
	ACCT_TP_COMPACT_CAS,    /* compact update: base read, compare-and-swap not yet tried */
	ACCT_TP_DRAIN,          /* budget lowering: a shard found over the new batch, not yet drained */
	ACCT_TP_DRAIN_PINNED,   /* rseq drain: running on the shard's CPU, the shard not yet grabbed */
};
extern void (*acct_counter_test_hook)(enum acct_counter_test_point point);
#endif
