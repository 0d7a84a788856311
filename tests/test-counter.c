/* test-counter.c - unit tests of every counter operation, run once per update
 * path (rseq where usable, and the compare-and-swap fallback) and on the real
 * and a simulated 64-CPU, 4-node topology; and of the slot pool under the
 * counters (pool.h) on its own, once.
 *
 * The file is long because every operation is checked on each update path
 * and topology by one table of runs, and the pool's tests share its set-up
 * (out of memory included, tests/test-oom.h and, for one allocation of a
 * pair, tests/alloc-fail.h); split, both would be repeated. */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "alloc-fail.h"
#include "counter.h"
#include "pool.h"
#include "rseq.h"
#include "test-oom.h"
#include "util.h"


struct fixture {
	enum acct_update_mode mode;
	const char *topology;
	struct acct_topology *topo;
	struct acct_domain *d;
};

static struct fixture *current;

static int setup_domain(void **state, bool auto_tune)
{
	struct fixture *f = current;
	struct acct_domain_options o = { .mode = f->mode, .auto_tune = auto_tune };

	assert_int_equal(acct_topology_from_spec(f->topology, &f->topo), 0);
	o.topology = f->topo;
	assert_int_equal(acct_domain_new(&o, &f->d), 0);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_domain(state, false);
}

static int setup_tuned(void **state)
{
	return setup_domain(state, true);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	f->d = acct_domain_free(f->d);
	f->topo = acct_topology_free(f->topo);
	return 0;
}

static unsigned shards(const struct fixture *f)
{
	return f->topo->nr_shards;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void assert_within(const struct acct_counter *c, int64_t exact)
{
	struct acct_reading rd;
	acct_counter_read(c, &rd);
	if (abs_u64(rd.value - exact) > rd.bound)
		fail_msg("approximate %ld +/- %lu is not within bound of %ld", (long)rd.value, (unsigned long)rd.bound,
			 (long)exact);
	struct acct_counter_stats st;
	acct_counter_stats(c, &st);
	assert_true(rd.bound <= (uint64_t)st.budget);
}

static void test_batch_formula(void **state)
{
	assert_int_equal(acct_batch_for_budget(0, 4), 1);
	assert_int_equal(acct_batch_for_budget(3, 4), 1);
	assert_int_equal(acct_batch_for_budget(4, 4), 2);
	assert_int_equal(acct_batch_for_budget(4096, 2), 2049);
	assert_int_equal(acct_batch_for_budget(4097, 64), 65);
	/* S * (b - 1) <= E for every budget */
	for (int64_t e = 0; e < 5000; e += 7)
		for (unsigned s = 1; s <= 65; s += 8)
			assert_true((acct_batch_for_budget(e, s) - 1) * (int64_t)s <= e);
	/* huge budgets are capped, never overflow */
	assert_true(acct_batch_for_budget(INT64_MAX, 1) <= ((int64_t)1 << 60));
	assert_int_equal(acct_batch_for_budget(-1, 4), 1);
}

static void test_compact_exact(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_reading rd;

	assert_int_equal(acct_counter_new(f->d, 1000, &c), 0);
	acct_counter_read(c, &rd);
	assert_int_equal(rd.value, 0);
	assert_int_equal(rd.bound, 0);
	acct_counter_add(c, 5);
	acct_counter_add(c, -12);
	acct_counter_add(c, 3);
	acct_counter_read(c, &rd);
	assert_int_equal(rd.value, -4);
	assert_int_equal(rd.bound, 0);
	assert_int_equal(acct_counter_read_precise(c), -4);

	struct acct_counter_stats st;
	acct_counter_stats(c, &st);
	assert_int_equal(st.state, ACCT_STATE_COMPACT);
	assert_false(st.upgraded);
	assert_int_equal(st.budget, 1000);
	acct_counter_free(c);
	assert_int_equal(acct_counter_new(f->d, -1, &c), -EINVAL);
}

static void test_int64_extremes(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;

	for (int sharded = 0; sharded < 2; sharded++) {
		assert_int_equal(acct_counter_new(f->d, 1 << 20, &c), 0);
		if (sharded)
			assert_int_equal(acct_counter_upgrade(c), 0);
		acct_counter_add(c, INT64_MAX);
		assert_int_equal(acct_counter_read_precise(c), INT64_MAX);
		acct_counter_add(c, INT64_MIN); /* -1 */
		assert_int_equal(acct_counter_read_precise(c), -1);
		acct_counter_add(c, INT64_MIN);
		acct_counter_add(c, 1); /* INT64_MIN */
		assert_int_equal(acct_counter_read_precise(c), INT64_MIN);
		acct_counter_add(c, INT64_MAX); /* -1 */
		acct_counter_add(c, 1);
		assert_int_equal(acct_counter_read_precise(c), 0);
		/* an intermediate overflow is harmless when the result fits */
		acct_counter_add(c, INT64_MAX);
		acct_counter_add(c, INT64_MAX);
		acct_counter_add(c, -INT64_MAX);
		acct_counter_add(c, -INT64_MAX);
		assert_int_equal(acct_counter_read_precise(c), 0);
		assert_within(c, 0);
		acct_counter_free(c);
	}
}

static void test_upgrade_keeps_value(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_counter_stats st;
	struct acct_domain_stats ds;

	assert_int_equal(acct_counter_new(f->d, 100 * shards(f), &c), 0);
	acct_counter_add(c, 12345);
	assert_int_equal(acct_counter_upgrade(c), 0);
	assert_int_equal(acct_counter_upgrade(c), 0); /* idempotent */
	acct_counter_stats(c, &st);
	assert_int_not_equal(st.state, ACCT_STATE_COMPACT);
	assert_true(st.upgraded);
	assert_int_equal(st.batch, 101);
	assert_int_equal(st.batch_max, 101);
	assert_int_equal(st.bound, 100 * shards(f));
	assert_int_equal(acct_counter_read_precise(c), 12345);
	assert_within(c, 12345);

	acct_domain_stats(f->d, &ds);
	assert_int_equal(ds.sharded, 1);
	assert_int_equal(ds.upgrades, 1);
	assert_int_equal(ds.compact_bytes, 64);
	assert_true(ds.sharded_bytes >= 64 + 8 * shards(f));
	assert_int_not_equal(ds.mode, ACCT_MODE_AUTO);
	acct_counter_free(c);
	acct_domain_stats(f->d, &ds);
	assert_int_equal(ds.sharded, 0);
	assert_int_equal(ds.counters, 0);
}

/* Signed deltas on a sharded counter: residues stay in shards until they reach
 * the batch, every approximate read is within the bound, precise is exact. */
static void test_sharded_signed(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	int64_t exact = 0;
	uint64_t rng = 42;

	assert_int_equal(acct_counter_new(f->d, 64 * shards(f), &c), 0);
	assert_int_equal(acct_counter_upgrade(c), 0);
	for (int i = 0; i < 100000; i++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		int64_t d = (int64_t)(rng % 201) - 100;
		acct_counter_add(c, d);
		exact += d;
		if (i % 97 == 0)
			assert_within(c, exact);
	}
	assert_int_equal(acct_counter_read_precise(c), exact);
	assert_within(c, exact);

	struct acct_counter_stats st;
	acct_counter_stats(c, &st);
	assert_true(st.folds > 0);
	acct_counter_free(c);
}

/* Small deltas stay in the shard (an approximate read lags), a delta larger than
 * the batch goes straight to the node sum. */
static void test_residue_and_direct(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_reading rd;
	struct acct_counter_stats st;

	assert_int_equal(acct_counter_new(f->d, 1000 * shards(f), &c), 0);
	assert_int_equal(acct_counter_upgrade(c), 0);
	acct_counter_add(c, 10);
	acct_counter_read(c, &rd);
	assert_int_equal(rd.value, 0); /* still a residue */
	assert_int_equal(acct_counter_read_precise(c), 10);
	acct_counter_add(c, 5000); /* > batch: direct, or a fold of this shard */
	acct_counter_read(c, &rd);
	assert_true(rd.value == 5000 || rd.value == 5010);
	acct_counter_stats(c, &st);
	assert_int_equal(st.direct + st.folds, 1);
	assert_int_equal(acct_counter_read_precise(c), 5010);
	acct_counter_free(c);
}

static void test_budget_zero_is_exact(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_reading rd;

	assert_int_equal(acct_counter_new(f->d, 0, &c), 0);
	assert_int_equal(acct_counter_upgrade(c), 0);
	for (int i = 1; i <= 100; i++) {
		acct_counter_add(c, i % 2 ? i : -i / 2);
		acct_counter_read(c, &rd);
		assert_int_equal(rd.bound, 0);
		assert_int_equal(rd.value, acct_counter_read_precise(c));
	}
	acct_counter_free(c);
}

/* Node 0 and a delta of 0 keep a counter compact (a compact counter's base is
 * node 0's value, its other nodes read 0); another node's value upgrades it,
 * and every node then reads what was added. */
static void test_add_node_compact(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_counter_stats st;
	struct acct_reading rd;
	unsigned nodes = f->topo->nr_nodes;

	assert_int_equal(acct_counter_new(f->d, 10 * shards(f), &c), 0);
	assert_int_equal(acct_counter_add_node(c, 0, 5), 0);
	assert_int_equal(acct_counter_add_node(c, 0, -2), 0);
	for (unsigned n = 0; n < nodes; n++)
		assert_int_equal(acct_counter_add_node(c, n, 0), 0);
	acct_counter_stats(c, &st);
	assert_false(st.upgraded);
	assert_int_equal(st.state, ACCT_STATE_COMPACT);
	for (unsigned n = 0; n < nodes; n++) {
		assert_int_equal(acct_counter_read_node(c, n, &rd), 0);
		assert_int_equal(rd.value, n == 0 ? 3 : 0);
		assert_int_equal(rd.bound, 0);
	}
	assert_int_equal(acct_counter_read_precise(c), 3);
	if (nodes > 1) {
		assert_int_equal(acct_counter_add_node(c, nodes - 1, 9), 0);
		acct_counter_stats(c, &st);
		assert_true(st.upgraded);
		assert_int_equal(acct_counter_read_node(c, 0, &rd), 0);
		assert_int_equal(rd.value, 3);
		assert_int_equal(acct_counter_read_node(c, nodes - 1, &rd), 0);
		assert_int_equal(rd.value, 9);
		assert_int_equal(acct_counter_read_precise(c), 12);
		/* sharded now: node 0 goes to its node sum, the total follows */
		assert_int_equal(acct_counter_add_node(c, 0, 4), 0);
		assert_int_equal(acct_counter_read_node(c, 0, &rd), 0);
		assert_int_equal(rd.value, 7);
		assert_int_equal(acct_counter_read_precise(c), 16);
	}
	assert_int_equal(acct_counter_add_node(c, nodes, 0), -EINVAL);
	acct_counter_free(c);
}

static void test_add_cpu_and_node(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_reading rd, sum = { 0 };
	unsigned nodes = f->topo->nr_nodes;

	assert_int_equal(acct_counter_new(f->d, 10 * shards(f), &c), 0);
	/* compact: add_cpu lands in the value */
	assert_int_equal(acct_counter_add_cpu(c, 0, 7), 0);
	assert_int_equal(acct_counter_read_precise(c), 7);
	assert_int_equal(acct_counter_add_cpu(c, shards(f), 1), -EINVAL);
	assert_int_equal(acct_counter_add_node(c, nodes, 1), -EINVAL);
	/* add_node upgrades */
	for (unsigned n = 0; n < nodes; n++)
		assert_int_equal(acct_counter_add_node(c, n, 1000 * (int64_t)(n + 1)), 0);
	for (unsigned n = 0; n < nodes; n++) {
		assert_int_equal(acct_counter_read_node(c, n, &rd), 0);
		assert_int_equal(rd.value, 1000 * (int64_t)(n + 1) + (n == 0 ? 7 : 0));
	}
	/* per-CPU data: every shard's CPU gets some */
	int64_t exact = acct_counter_read_precise(c);
	for (unsigned cpu = 0; cpu < shards(f); cpu++) {
		assert_int_equal(acct_counter_add_cpu(c, cpu, 3), 0);
		exact += 3;
	}
	assert_int_equal(acct_counter_read_precise(c), exact);
	/* node values add up to the approximate total with their bounds */
	for (unsigned n = 0; n < nodes; n++) {
		assert_int_equal(acct_counter_read_node(c, n, &rd), 0);
		sum.value += rd.value;
		sum.bound += rd.bound;
	}
	acct_counter_read(c, &rd);
	assert_int_equal(sum.value, rd.value);
	assert_int_equal(sum.bound, rd.bound);
	assert_true(abs_u64(rd.value - exact) <= rd.bound);
	assert_int_equal(acct_counter_read_node(c, nodes, &rd), -EINVAL);
	acct_counter_free(c);
}

static void test_compare(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	bool precise;

	assert_int_equal(acct_counter_new(f->d, 100 * shards(f), &c), 0);
	acct_counter_add(c, 500);
	/* compact: exact, never needs a precise read */
	assert_int_equal(acct_counter_compare(c, 499, &precise), 1);
	assert_false(precise);
	assert_int_equal(acct_counter_compare(c, 500, &precise), 0);
	assert_false(precise);
	assert_int_equal(acct_counter_compare(c, 501, &precise), -1);
	assert_false(precise);

	assert_int_equal(acct_counter_upgrade(c), 0);
	acct_counter_add(c, 50); /* a residue: approx 500, exact 550 */
	struct acct_reading rd;
	acct_counter_read(c, &rd);
	int64_t far = (int64_t)rd.bound + 1000;
	assert_int_equal(acct_counter_compare(c, 550 - far, &precise), 1);
	assert_false(precise);
	assert_int_equal(acct_counter_compare(c, 550 + far, &precise), -1);
	assert_false(precise);
	/* inside the band: answered precisely, and correctly */
	assert_int_equal(acct_counter_compare(c, 540, &precise), 1);
	assert_true(precise);
	assert_int_equal(acct_counter_compare(c, 550, &precise), 0);
	assert_true(precise);
	assert_int_equal(acct_counter_compare(c, 551, NULL), -1);
	/* extremes do not overflow */
	assert_int_equal(acct_counter_compare(c, INT64_MIN, NULL), 1);
	assert_int_equal(acct_counter_compare(c, INT64_MAX, NULL), -1);
	acct_counter_free(c);
}

static void test_budget_change(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_counter_stats st;
	struct acct_domain_stats ds;
	int64_t exact = 0;

	assert_int_equal(acct_counter_new(f->d, 1000 * shards(f), &c), 0);
	assert_int_equal(acct_counter_upgrade(c), 0);
	for (int i = 0; i < 50; i++) {
		acct_counter_add(c, 17); /* residue 850 < 1001 on this shard */
		exact += 17;
	}
	/* lower: the residue no longer fits; it is drained, then the bound drops */
	assert_int_equal(acct_counter_set_budget(c, 10 * shards(f)), 0);
	acct_counter_stats(c, &st);
	assert_int_equal(st.batch, 11);
	assert_int_equal(st.budget, 10 * shards(f));
	if (!st.shrink_pending)
		assert_int_equal(st.bound, 10 * shards(f));
	assert_within(c, exact);
	assert_int_equal(acct_counter_read_precise(c), exact);
	for (int i = 0; i < 1000; i++) {
		acct_counter_add(c, i % 3 - 1);
		exact += i % 3 - 1;
		assert_within(c, exact);
	}
	/* a tuner pass completes any pending shrink */
	acct_domain_tune(f->d, now_ns());
	acct_counter_stats(c, &st);
	assert_false(st.shrink_pending);
	assert_int_equal(st.bound, 10 * shards(f));
	assert_within(c, exact);

	/* raise: takes effect at once */
	assert_int_equal(acct_counter_set_budget(c, 5000 * shards(f)), 0);
	acct_counter_stats(c, &st);
	assert_int_equal(st.batch_max, 5001);
	if (acct_domain_stats(f->d, &ds), ds.auto_tune)
		assert_int_equal(st.batch, 11); /* the tuner grows it when it is busy */
	else {
		assert_int_equal(st.batch, 5001);
		assert_int_equal(st.bound, 5000 * shards(f));
	}
	assert_int_equal(acct_counter_set_budget(c, -5), -EINVAL);
	assert_int_equal(acct_counter_read_precise(c), exact);
	acct_counter_free(c);
}

/* Auto-tuning: a quiet counter's batch halves, a busy one's doubles up to the
 * budget's maximum; switching tuning off restores the maximum. */
/* The tuner's shrink rule: fewer than 20 events a second halve the batch; 20
 * do not. Each add too large for the batch is one event. */
static void test_tune_shrink_rate(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_counter_stats st;
	uint64_t t = 1000000000;

	assert_int_equal(acct_counter_new(f->d, 1024 * shards(f), &c), 0);
	assert_int_equal(acct_counter_upgrade(c), 0);
	acct_domain_tune(f->d, t); /* first pass: baseline */
	for (int i = 0; i < 20; i++)
		acct_counter_add(c, 1000000);
	t += 1000000000;
	acct_domain_tune(f->d, t);
	acct_counter_stats(c, &st);
	assert_int_equal(st.folds + st.direct, 20);
	assert_int_equal(st.tune_shrinks, 0);
	for (int i = 0; i < 19; i++)
		acct_counter_add(c, 1000000);
	t += 1000000000;
	acct_domain_tune(f->d, t);
	acct_counter_stats(c, &st);
	assert_int_equal(st.tune_shrinks, 1);
	assert_int_equal(acct_counter_read_precise(c), 39 * 1000000);
	acct_counter_free(c);
}

/* Lowering a budget folds only the shards whose residue exceeds the new batch:
 * a residue of exactly batch - 1 stays in its shard. */
static void test_lowering_folds_only_excess(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_counter_stats before, after;

	if (f->mode != ACCT_MODE_FALLBACK || shards(f) < 2)
		skip(); /* acct_counter_add_cpu() writes a chosen shard on the fallback path only */
	assert_int_equal(acct_counter_new(f->d, 1000 * shards(f), &c), 0);
	assert_int_equal(acct_counter_upgrade(c), 0);
	assert_int_equal(acct_counter_add_cpu(c, 0, 10), 0);
	assert_int_equal(acct_counter_add_cpu(c, 1, 11), 0);
	acct_counter_stats(c, &before);
	/* New batch 11: shard 0's 10 fits, shard 1's 11 does not. */
	assert_int_equal(acct_counter_set_budget(c, 10 * shards(f)), 0);
	acct_counter_stats(c, &after);
	assert_int_equal(after.batch, 11);
	assert_int_equal(after.folds, before.folds + 1);
	assert_false(after.shrink_pending);
	assert_int_equal(after.bound, 10 * shards(f));
	/* To budget 0 (batch 1): shard 0 is drained, and the lowering completes
	 * at once, nothing pending. */
	assert_int_equal(acct_counter_set_budget(c, 0), 0);
	acct_counter_stats(c, &after);
	assert_int_equal(after.folds, before.folds + 2);
	assert_false(after.shrink_pending);
	assert_int_equal(after.bound, 0);
	assert_int_equal(acct_counter_read_precise(c), 21);
	acct_counter_free(c);
}

static void test_auto_tune(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *quiet = NULL, *busy = NULL;
	struct acct_counter_stats st;
	uint64_t t = now_ns();

	assert_int_equal(acct_counter_new(f->d, 1024 * shards(f), &quiet), 0);
	assert_int_equal(acct_counter_new(f->d, 1024 * shards(f), &busy), 0);
	assert_int_equal(acct_counter_upgrade(quiet), 0);
	assert_int_equal(acct_counter_upgrade(busy), 0);
	acct_domain_tune(f->d, t); /* first pass: baseline */
	for (int round = 0; round < 6; round++) { /* both quiet: both shrink */
		t += 10000000;
		acct_domain_tune(f->d, t);
	}
	acct_counter_stats(busy, &st);
	assert_true(st.batch <= 1025 / 64 + 1);
	for (int round = 0; round < 12; round++) {
		for (int i = 0; i < 200000; i++)
			acct_counter_add(busy, 1);
		t += 10000000; /* 10 ms per round: the busy one folds far above the grow rate */
		acct_domain_tune(f->d, t);
	}
	acct_counter_stats(quiet, &st);
	assert_true(st.batch < 1025);
	assert_true(st.tune_shrinks > 0);
	assert_true(st.tune_shrinks <= 6 + 12); /* one at most per pass */
	assert_int_equal(st.bound, (uint64_t)(st.batch - 1) * shards(f));
	int64_t quiet_batch = st.batch;
	acct_counter_stats(busy, &st);
	assert_true(st.tune_grows > 0);
	assert_true(st.tune_grows <= 12); /* one at most per pass */
	assert_true(st.batch > quiet_batch);
	assert_true(st.batch <= st.batch_max);
	assert_int_equal(st.batch, st.batch_max);
	assert_int_equal(acct_counter_read_precise(busy), 12 * 200000);
	/* At its maximum a busy counter has nothing left to grow: no grow counted. */
	uint64_t grows = st.tune_grows;
	for (int i = 0; i < 200000; i++)
		acct_counter_add(busy, 1);
	t += 10000000;
	acct_domain_tune(f->d, t);
	acct_counter_stats(busy, &st);
	assert_int_equal(st.batch, st.batch_max);
	assert_int_equal(st.tune_grows, grows);

	acct_domain_set_auto_tune(f->d, false);
	acct_domain_tune(f->d, t + 10000000);
	acct_counter_stats(quiet, &st);
	assert_int_equal(st.batch, st.batch_max);
	struct acct_domain_stats ds;
	acct_domain_stats(f->d, &ds);
	assert_false(ds.auto_tune);
	assert_true(ds.tune_passes >= 13);
	acct_counter_free(quiet);
	acct_counter_free(busy);
}

/* The rate rule: 256 updates within a second upgrade a compact counter. */
static void test_upgrade_on_rate(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_counter_stats st;

	assert_int_equal(acct_counter_new(f->d, 1000, &c), 0);
	for (int i = 0; i < 255; i++)
		acct_counter_add(c, 1);
	acct_counter_stats(c, &st);
	assert_int_equal(st.state, ACCT_STATE_COMPACT);
	for (int i = 0; i < 10; i++)
		acct_counter_add(c, 1);
	acct_counter_stats(c, &st);
	assert_int_not_equal(st.state, ACCT_STATE_COMPACT);
	assert_int_equal(acct_counter_read_precise(c), 265);
	acct_counter_free(c);
}

struct race {
	struct acct_counter *c;
	pthread_barrier_t *barrier;
	int64_t sum;
	unsigned id;
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	pthread_barrier_wait(r->barrier);
	for (int i = 0; i < 200000; i++) {
		int64_t d = (i + r->id) % 7 - 3;
		acct_counter_add(r->c, d);
		r->sum += d;
	}
	return NULL;
}

static void *race_upgrader(void *arg)
{
	struct race *r = arg;
	pthread_barrier_wait(r->barrier);
	for (volatile int i = 0; i < 20000; i++)
		;
	assert_int_equal(acct_counter_upgrade(r->c), 0);
	return NULL;
}

/* Compact-to-sharded upgrade while four threads update: nothing is lost. */
static void test_upgrade_under_updates(void **state)
{
	struct fixture *f = *state;
	struct acct_domain_options o = {
		.topology = f->topo, .mode = f->mode, .upgrade_ops = UINT32_MAX, .upgrade_contention = UINT32_MAX
	};
	struct acct_domain *d = NULL;
	pthread_barrier_t barrier;
	pthread_t th[5];
	struct race r[5];
	int64_t exact = 0;

	assert_int_equal(acct_domain_new(&o, &d), 0);
	for (int round = 0; round < 5; round++) {
		struct acct_counter *c = NULL;
		assert_int_equal(acct_counter_new(d, 100 * shards(f), &c), 0);
		pthread_barrier_init(&barrier, NULL, 5);
		for (unsigned i = 0; i < 5; i++) {
			r[i] = (struct race){ .c = c, .barrier = &barrier, .id = i };
			pthread_create(&th[i], NULL, i < 4 ? race_writer : race_upgrader, &r[i]);
		}
		exact = 0;
		for (unsigned i = 0; i < 5; i++) {
			pthread_join(th[i], NULL);
			exact += r[i].sum;
		}
		pthread_barrier_destroy(&barrier);
		struct acct_counter_stats st;
		acct_counter_stats(c, &st);
		assert_true(st.upgraded);
		assert_int_equal(acct_counter_read_precise(c), exact);
		assert_within(c, exact);
		acct_counter_free(c);
	}
	acct_domain_free(d);
}

/* Many counters: slab and pool reuse, freed slots come back zeroed. */
static void test_many_counters(void **state)
{
	struct fixture *f = *state;
	enum { N = 20000, SHARDED = 1500 };
	struct acct_counter **cs = calloc(N, sizeof(*cs));
	struct acct_domain_stats ds;

	assert_non_null(cs);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			assert_int_equal(acct_counter_new(f->d, 1000, &cs[i]), 0);
			acct_counter_add(cs[i], i);
			if (i < SHARDED) {
				assert_int_equal(acct_counter_upgrade(cs[i]), 0);
				acct_counter_add(cs[i], 1);
				assert_int_equal(acct_counter_read_precise(cs[i]), i + 1);
			}
		}
		acct_domain_stats(f->d, &ds);
		assert_int_equal(ds.counters, N);
		assert_int_equal(ds.sharded, SHARDED);
		for (int i = 0; i < N; i++)
			cs[i] = acct_counter_free(cs[i]);
	}
	acct_domain_stats(f->d, &ds);
	assert_int_equal(ds.counters, 0);
	free(cs);
}

static void test_domain_options(void **state)
{
	struct fixture *f = *state;
	struct acct_domain *d = NULL;
	struct acct_domain_options o = { .mode = 7 };

	assert_int_equal(acct_domain_new(&o, &d), -EINVAL);
	assert_null(d);
	o.mode = ACCT_MODE_AUTO;
	o.topology = f->topo;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_domain_topology(d)->nr_shards, shards(f));
	acct_domain_free(d);
	assert_null(acct_domain_free(NULL));
	assert_null(acct_counter_free(NULL));
	assert_string_equal(acct_update_mode_to_string(ACCT_MODE_FALLBACK), "fallback");
}

/* --- The pool (pool.h) on its own. --- */

/* libnuma reports a failed mbind through numa_error(), a weak symbol that
 * programs may override: the binding test asks for a node this machine may
 * not have, and that failure is expected, so it is counted, not printed. */
static unsigned numa_errors;
void numa_error(char *where)
{
	(void)where;
	numa_errors++;
}

static int64_t *shard_word(const struct acct_pool_slot *s, unsigned cpu)
{
	return (int64_t *)(s->shard0 + (size_t)cpu * ACCT_SHARD_STRIDE);
}

static int64_t *node_sum(const struct acct_pool_slot *s, unsigned node)
{
	return (int64_t *)(s->node0 + (size_t)node * ACCT_NODE_STRIDE);
}

/* Every byte of the slot is zero: what acct_pool_get() promises. */
static void assert_slot_zero(const struct acct_topology *t, const struct acct_pool_slot *s, size_t ext_size)
{
	for (unsigned cpu = 0; cpu < t->nr_shards; cpu++)
		assert_int_equal(*shard_word(s, cpu), 0);
	for (unsigned node = 0; node < t->nr_nodes; node++)
		assert_int_equal(*node_sum(s, node), 0);
	for (size_t i = 0; i < ext_size; i++)
		assert_int_equal(((const unsigned char *)s->ext)[i], 0);
}

static void fill_slot(const struct acct_topology *t, const struct acct_pool_slot *s, size_t ext_size)
{
	for (unsigned cpu = 0; cpu < t->nr_shards; cpu++)
		*shard_word(s, cpu) = (int64_t)s->index * 1000 + cpu + 1;
	for (unsigned node = 0; node < t->nr_nodes; node++)
		*node_sum(s, node) = -((int64_t)s->index * 1000 + node + 1);
	memset(s->ext, 0xa5, ext_size);
}

static void assert_slot_filled(const struct acct_topology *t, const struct acct_pool_slot *s)
{
	for (unsigned cpu = 0; cpu < t->nr_shards; cpu++)
		assert_int_equal(*shard_word(s, cpu), (int64_t)s->index * 1000 + cpu + 1);
	for (unsigned node = 0; node < t->nr_nodes; node++)
		assert_int_equal(*node_sum(s, node), -((int64_t)s->index * 1000 + node + 1));
}

/* A slot's size: a shard word per CPU, a cache line per node, ext rounded up
 * to whole cache lines; the pool maps whole blocks of slots. */
static void test_pool_sizes(void **state)
{
	static const struct {
		size_t ext, rounded;
	} exts[] = { { 0, 0 }, { 1, 64 }, { 64, 64 }, { 65, 128 }, { 100, 128 } };
	struct acct_topology *t = NULL;
	struct acct_pool_slot s;

	(void)state;
	assert_int_equal(acct_topology_simulate(8, 2, &t), 0);
	for (size_t i = 0; i < ELEMENTSOF(exts); i++) {
		struct acct_pool *p = NULL;
		assert_int_equal(acct_pool_new(t, exts[i].ext, &p), 0);
		assert_non_null(p);
		assert_int_equal(acct_pool_bytes_per_slot(p), 8 * 8 + 2 * ACCT_NODE_SLOT_SIZE + exts[i].rounded);
		assert_int_equal(acct_pool_bytes(p), 0);
		assert_int_equal(acct_pool_used(p), 0);
		assert_int_equal(acct_pool_get(p, &s), 0);
		assert_int_equal(acct_pool_bytes(p), ACCT_POOL_BLOCK_SLOTS * acct_pool_bytes_per_slot(p));
		assert_int_equal((uintptr_t)s.ext % ACCT_CACHELINE, 0);
		acct_pool_free(p);
	}
	assert_null(acct_pool_free(NULL));
	acct_topology_free(t);
}

struct seen {
	const struct acct_pool *pool;
	uint32_t first[8];
	unsigned n;
	uint32_t last;
};

static void see(const struct acct_pool_slot *slot, void *userdata)
{
	struct seen *v = userdata;
	struct acct_pool_slot l;

	if (v->n < ELEMENTSOF(v->first))
		v->first[v->n] = slot->index;
	v->n++;
	v->last = slot->index;
	acct_pool_lookup(v->pool, slot->index, &l);
	assert_ptr_equal(slot->shard0, l.shard0);
	assert_ptr_equal(slot->ext, l.ext);
}

/* Slots over two blocks: indexes in order, each slot's words apart from every
 * other's, lookup and foreach agree with get, put zeroes and recycles. */
static void test_pool_slots(void **state)
{
	enum { N = ACCT_POOL_BLOCK_SLOTS + 1, EXT = 100, EXT_ROUNDED = 128 };
	struct acct_topology *t = NULL;
	struct acct_pool *p = NULL;
	struct acct_pool_slot *s = calloc(N, sizeof(*s));
	struct acct_pool_slot l, r;
	struct seen v = { .n = 0 };

	(void)state;
	assert_non_null(s);
	assert_int_equal(acct_topology_simulate(4, 2, &t), 0);
	assert_int_equal(acct_pool_new(t, EXT, &p), 0);
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(acct_pool_get(p, &s[i]), 0);
		assert_int_equal(s[i].index, i);
		assert_int_equal(acct_pool_used(p), i + 1);
		assert_int_equal((uintptr_t)s[i].ext % ACCT_CACHELINE, 0);
		assert_slot_zero(t, &s[i], EXT);
		fill_slot(t, &s[i], EXT);
	}
	assert_int_equal(acct_pool_bytes(p), 2 * ACCT_POOL_BLOCK_SLOTS * acct_pool_bytes_per_slot(p));
	/* Neighbours in a block: a shard word, a node line, an ext apart. */
	assert_int_equal(s[1].shard0 - s[0].shard0, 8);
	assert_int_equal(s[1].node0 - s[0].node0, ACCT_NODE_SLOT_SIZE);
	assert_int_equal((char *)s[1].ext - (char *)s[0].ext, EXT_ROUNDED);
	for (unsigned i = 0; i < N; i++) {
		assert_slot_filled(t, &s[i]);
		acct_pool_lookup(p, i, &l);
		assert_int_equal(l.index, i);
		assert_ptr_equal(l.shard0, s[i].shard0);
		assert_ptr_equal(l.node0, s[i].node0);
		assert_ptr_equal(l.ext, s[i].ext);
	}

	acct_pool_put(p, 5);
	acct_pool_put(p, N - 1);
	acct_pool_put(p, 0);
	assert_int_equal(acct_pool_used(p), N - 3);
	v.pool = p;
	acct_pool_foreach(p, see, &v);
	assert_int_equal(v.n, N - 3);
	assert_int_equal(v.first[0], 1);
	assert_int_equal(v.first[3], 4);
	assert_int_equal(v.first[4], 6);
	assert_int_equal(v.last, N - 2);
	/* Released slots come back last released first, zeroed; the rest kept
	 * their values; then the fresh slots of the newest block. */
	static const uint32_t again[] = { 0, N - 1, 5 };
	for (size_t k = 0; k < ELEMENTSOF(again); k++) {
		assert_int_equal(acct_pool_get(p, &r), 0);
		assert_int_equal(r.index, again[k]);
		assert_slot_zero(t, &r, EXT);
	}
	for (unsigned i = 1; i < N - 1; i++)
		if (i != 5)
			assert_slot_filled(t, &s[i]);
	assert_int_equal(acct_pool_get(p, &r), 0);
	assert_int_equal(r.index, N);
	assert_int_equal(acct_pool_used(p), N + 1);
	assert_int_equal(acct_pool_bytes(p), 2 * ACCT_POOL_BLOCK_SLOTS * acct_pool_bytes_per_slot(p));
	acct_pool_free(p);
	acct_topology_free(t);
	free(s);
}

static int page_policy(const void *addr, unsigned long *ret_nodes)
{
	int mode = -1;
	*ret_nodes = 0;
	assert_int_equal(get_mempolicy(&mode, ret_nodes, sizeof(*ret_nodes) * 8, (void *)addr, MPOL_F_ADDR), 0);
	return mode;
}

/* Shard pages and node lines are bound to their node on a real machine of
 * several nodes only: never for a simulated topology (its nodes are not this
 * machine's), never with one node. A topology that claims two real nodes with
 * every CPU on node 0 makes the binding visible on any machine. */
static void test_pool_binding(void **state)
{
	struct acct_topology *t = NULL;
	struct acct_pool *p = NULL;
	struct acct_pool_slot s;
	unsigned long nodes;

	(void)state;
	if (numa_available() < 0)
		skip();

	/* Simulated: nothing bound. */
	assert_int_equal(acct_topology_simulate(4, 2, &t), 0);
	assert_int_equal(acct_pool_new(t, 0, &p), 0);
	assert_int_equal(acct_pool_get(p, &s), 0);
	for (unsigned cpu = 0; cpu < t->nr_shards; cpu++)
		assert_int_equal(page_policy(shard_word(&s, cpu), &nodes), MPOL_DEFAULT);
	p = acct_pool_free(p);

	/* "Real" with two nodes, every CPU on node 0: each CPU's page bound to
	 * node 0, node 0's lines to node 0 (binding node 1 fails on a machine
	 * without it; that is not what is checked). */
	t->simulated = false;
	for (unsigned cpu = 0; cpu < t->nr_shards; cpu++)
		t->shard_node[cpu] = 0;
	numa_errors = 0;
	assert_int_equal(acct_pool_new(t, 0, &p), 0);
	assert_int_equal(acct_pool_get(p, &s), 0);
	for (unsigned cpu = 0; cpu < t->nr_shards; cpu++) {
		assert_int_equal(page_policy(shard_word(&s, cpu), &nodes), MPOL_BIND);
		assert_int_equal(nodes, 1);
	}
	assert_int_equal(page_policy(node_sum(&s, 0), &nodes), MPOL_BIND);
	assert_int_equal(nodes, 1);
	/* One failed bind per node this machine lacks (here node 1, if absent),
	 * none beyond the node region. */
	assert_int_equal(numa_errors, numa_max_node() >= 1 ? 0 : 1);
	p = acct_pool_free(p);
	t = acct_topology_free(t);

	/* This machine as it is: bound only where it has several nodes. */
	assert_int_equal(acct_topology_detect(&t), 0);
	assert_int_equal(acct_pool_new(t, 0, &p), 0);
	assert_int_equal(acct_pool_get(p, &s), 0);
	for (unsigned cpu = 0; cpu < t->nr_shards; cpu++) {
		int mode = page_policy(shard_word(&s, cpu), &nodes);
		if (t->nr_nodes > 1) {
			assert_int_equal(mode, MPOL_BIND);
			assert_int_equal(nodes, 1ul << t->shard_node[cpu]);
		} else
			assert_int_equal(mode, MPOL_DEFAULT);
	}
	acct_pool_free(p);
	acct_topology_free(t);
}

/* The block table is fixed: the pool hands out 8192 blocks' slots, then
 * -ENOMEM with nothing changed, and a released slot is still handed out. */
static void test_pool_block_limit(void **state)
{
	enum { BLOCKS = 8192 };
	struct acct_topology *t = NULL;
	struct acct_pool *p = NULL;
	struct acct_pool_slot s;

	(void)state;
	assert_int_equal(acct_topology_simulate(1, 1, &t), 0);
	assert_int_equal(acct_pool_new(t, 0, &p), 0);
	for (unsigned i = 0; i < BLOCKS * ACCT_POOL_BLOCK_SLOTS; i++)
		if (acct_pool_get(p, &s) < 0)
			fail_msg("slot %u not handed out", i);
	assert_int_equal(s.index, BLOCKS * ACCT_POOL_BLOCK_SLOTS - 1);
	size_t bytes = acct_pool_bytes(p);
	assert_int_equal(bytes, (size_t)BLOCKS * ACCT_POOL_BLOCK_SLOTS * acct_pool_bytes_per_slot(p));
	assert_int_equal(acct_pool_get(p, &s), -ENOMEM);
	assert_int_equal(acct_pool_used(p), BLOCKS * ACCT_POOL_BLOCK_SLOTS);
	assert_int_equal(acct_pool_bytes(p), bytes);
	acct_pool_put(p, 77);
	assert_int_equal(acct_pool_get(p, &s), 0);
	assert_int_equal(s.index, 77);
	acct_pool_free(p);
	acct_topology_free(t);
}

/* Out of memory: acct_pool_new() and acct_pool_get() return -ENOMEM and
 * change nothing, whether the allocator or a mapping fails; the pool works
 * once memory is back. */
static void test_pool_no_memory(void **state)
{
	struct acct_topology *t = NULL;
	struct acct_topology *t64 = NULL;
	struct acct_pool *p = NULL, *p2 = (struct acct_pool *)&p, *p64 = NULL;
	struct acct_pool_slot s;
	struct oom oom;
	int r_new, r_get, r_map, r_nodes;
	unsigned used_get, used_map;
	size_t bytes_get, bytes_map;

	(void)state;
	if (!oom_supported())
		skip();
	/* 1024 CPUs: a block's shard region (4 MiB) is more than the slack. */
	assert_int_equal(acct_topology_simulate(1024, 4, &t), 0);
	assert_int_equal(acct_pool_new(t, 64, &p), 0);

	/* The allocator fails: no pool, no block. */
	oom_begin(&oom, 1u << 20, true, 0);
	r_new = acct_pool_new(t, 64, &p2);
	r_get = acct_pool_get(p, &s);
	used_get = acct_pool_used(p);
	bytes_get = acct_pool_bytes(p);
	oom_end(&oom);

	/* A mapping fails (the block's bookkeeping was allocated): the shard
	 * region here; the node region (2 MiB for 64 nodes) with a topology
	 * whose shard region (256 KiB) fits. */
	oom_begin(&oom, 1u << 20, false, 0);
	r_map = acct_pool_get(p, &s);
	used_map = acct_pool_used(p);
	bytes_map = acct_pool_bytes(p);
	oom_end(&oom);
	assert_int_equal(acct_topology_simulate(64, 64, &t64), 0);
	assert_int_equal(acct_pool_new(t64, 64, &p64), 0);
	oom_begin(&oom, 1u << 20, false, 0);
	r_nodes = acct_pool_get(p64, &s);
	oom_end(&oom);
	assert_int_equal(r_nodes, -ENOMEM);
	assert_int_equal(acct_pool_used(p64), 0);
	acct_pool_free(p64);
	acct_topology_free(t64);

	assert_int_equal(r_new, -ENOMEM);
	assert_ptr_equal(p2, (struct acct_pool *)&p);
	assert_int_equal(r_get, -ENOMEM);
	assert_int_equal(used_get, 0);
	assert_int_equal(bytes_get, 0);
	assert_int_equal(r_map, -ENOMEM);
	assert_int_equal(used_map, 0);
	assert_int_equal(bytes_map, 0);

	assert_int_equal(acct_pool_get(p, &s), 0);
	assert_int_equal(s.index, 0);
	assert_int_equal(acct_pool_used(p), 1);
	assert_slot_zero(t, &s, 64);
	acct_pool_free(p);
	acct_topology_free(t);
}

/* acct_pool_free() unmaps every block: the address space is back where it was. */
static void test_pool_free_unmaps(void **state)
{
	struct acct_topology *t = NULL;
	struct acct_pool *p = NULL;
	struct acct_pool_slot s;

	(void)state;
	assert_int_equal(acct_topology_simulate(256, 2, &t), 0);
	unsigned long before = oom_mapped_bytes();
	assert_int_equal(acct_pool_new(t, 0, &p), 0);
	for (unsigned i = 0; i < 3 * ACCT_POOL_BLOCK_SLOTS; i++)
		assert_int_equal(acct_pool_get(p, &s), 0);
	/* Three blocks of 256 shard pages (1 MiB each) and two node chunks. */
	assert_true(oom_mapped_bytes() >= before + 3 * (256 * ACCT_SHARD_STRIDE + 2 * ACCT_NODE_STRIDE));
	acct_pool_free(p);
	assert_true(oom_mapped_bytes() < before + 256 * ACCT_SHARD_STRIDE);
	acct_topology_free(t);
}

/* --- The domain's own rules, once (not per mode and topology). --- */

static void test_mode_names(void **state)
{
	(void)state;
	assert_string_equal(acct_update_mode_to_string(ACCT_MODE_AUTO), "auto");
	assert_string_equal(acct_update_mode_to_string(ACCT_MODE_RSEQ), "rseq");
	assert_string_equal(acct_update_mode_to_string(ACCT_MODE_FALLBACK), "fallback");
	assert_string_equal(acct_update_mode_to_string((enum acct_update_mode)7), "unknown");
}

/* rseq needs every shard owned by one real CPU: a simulated topology of fewer
 * CPUs than the machine has (spread 0) falls back under AUTO, and an explicit
 * RSEQ is refused. */
static void test_domain_spread_zero(void **state)
{
	struct acct_topology *t = NULL;
	struct acct_domain *d = (struct acct_domain *)&t;
	struct acct_domain_stats ds;
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };

	(void)state;
	assert_int_equal(acct_topology_detect(&t), 0);
	unsigned real = t->nr_shards;
	t = acct_topology_free(t);
	if (real < 2)
		skip();
	assert_int_equal(acct_topology_simulate(1, 1, &t), 0);
	assert_int_equal(acct_topology_spread(t), 0);
	o.topology = t;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	acct_domain_stats(d, &ds);
	assert_int_equal(ds.mode, ACCT_MODE_FALLBACK);
	d = acct_domain_free(d);
	if (acct_rseq_usable()) {
		d = (struct acct_domain *)&t;
		o.mode = ACCT_MODE_RSEQ;
		assert_int_equal(acct_domain_new(&o, &d), -EOPNOTSUPP);
		assert_ptr_equal(d, (struct acct_domain *)&t);
	}
	acct_topology_free(t);
}

/* The rate window is measured in milliseconds: 256 updates 50 ms after the
 * window opened are within a 10 s window, and not within a 10 ms one, which
 * then starts again. */
static void test_upgrade_window_ms(void **state)
{
	static const uint32_t windows[] = { 10000, 10 };
	struct acct_domain_options o = { .mode = ACCT_MODE_FALLBACK };
	struct acct_counter_stats st;

	(void)state;
	for (size_t w = 0; w < ELEMENTSOF(windows); w++) {
		struct acct_domain *d = NULL;
		struct acct_counter *c = NULL;

		o.upgrade_window_ms = windows[w];
		assert_int_equal(acct_domain_new(&o, &d), 0);
		assert_int_equal(acct_counter_new(d, 1000, &c), 0);
		nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
		for (int i = 0; i < 256; i++)
			acct_counter_add(c, 1);
		acct_counter_stats(c, &st);
		if (windows[w] == 10000)
			assert_int_not_equal(st.state, ACCT_STATE_COMPACT);
		else {
			assert_int_equal(st.state, ACCT_STATE_COMPACT);
			for (int i = 0; i < 256; i++)
				acct_counter_add(c, 1);
			acct_counter_stats(c, &st);
			assert_int_not_equal(st.state, ACCT_STATE_COMPACT);
		}
		assert_int_equal(acct_counter_read_precise(c), windows[w] == 10000 ? 256 : 512);
		acct_counter_free(c);
		acct_domain_free(d);
	}
}

/* Out of memory: no domain, no counter, -ENOMEM; what exists keeps working. */
static void test_domain_no_memory(void **state)
{
	struct acct_domain *d = NULL, *d2 = (struct acct_domain *)&d;
	struct acct_counter *c = NULL, *c2 = (struct acct_counter *)&c;
	struct acct_topology *t = NULL;
	struct acct_domain_options o = { .mode = ACCT_MODE_FALLBACK };
	struct oom oom;
	int r_domain, r_counter, r_nodes;

	(void)state;
	if (!oom_supported())
		skip();
	assert_int_equal(acct_domain_new(&o, &d), 0);
	/* 8192 nodes: the per-node table (32 KiB) is the domain's one
	 * allocation that a 24 KiB hole cannot hold. */
	assert_int_equal(acct_topology_simulate(8192, 8192, &t), 0);

	oom_begin(&oom, 1u << 20, true, 0);
	r_domain = acct_domain_new(&o, &d2);
	r_counter = acct_counter_new(d, 1000, &c2); /* a new domain has no counter memory yet */
	oom_end(&oom);

	/* Room for the domain and its copy of the topology, not for its node table. */
	o.topology = t;
	oom_begin(&oom, 1u << 20, true, 24 << 10);
	r_nodes = acct_domain_new(&o, &d2);
	oom_end(&oom);

	assert_int_equal(r_domain, -ENOMEM);
	assert_int_equal(r_counter, -ENOMEM);
	assert_int_equal(r_nodes, -ENOMEM);
	assert_ptr_equal(d2, (struct acct_domain *)&d);
	assert_ptr_equal(c2, (struct acct_counter *)&c);
	assert_int_equal(acct_counter_new(d, 1000, &c), 0);
	acct_counter_add(c, 5);
	assert_int_equal(acct_counter_read_precise(c), 5);
	acct_counter_free(c);
	acct_domain_free(d);
	acct_topology_free(t);
}

/* The slab's second allocation failing: its chunk of counters was allocated,
 * the table that lists the chunks cannot grow. test-oom.h's hoard cannot fail
 * the one and not the other (that depends on how glibc splits an aligned
 * allocation), so alloc-fail.h fails exactly the second. The caller gets
 * -ENOMEM, nothing of the chunk is kept (the next counter grows the slab
 * anew), and the domain stays usable. */
static void test_slab_table_no_memory(void **state)
{
	struct acct_domain *d = NULL;
	struct acct_counter *c = NULL, *c2 = (struct acct_counter *)&c;
	struct acct_domain_options o = { .mode = ACCT_MODE_FALLBACK };
	struct acct_domain_stats ds;
	int r;

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	/* A new domain has no counter memory: the first counter grows the slab,
	 * aligned_alloc() for the chunk, then reallocarray() for the table. */
	alloc_fail_after(1);
	r = acct_counter_new(d, 1000, &c2);
	alloc_fail_off();
	assert_true(alloc_fail_hit());
	assert_int_equal(r, -ENOMEM);
	assert_ptr_equal(c2, (struct acct_counter *)&c);
	acct_domain_stats(d, &ds);
	assert_int_equal(ds.counters, 0);

	assert_int_equal(acct_counter_new(d, 1000, &c), 0);
	acct_counter_add(c, 7);
	assert_int_equal(acct_counter_read_precise(c), 7);
	acct_counter_free(c);
	acct_domain_free(d);
}

static int run_suite(struct fixture *f)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_formula),
		cmocka_unit_test_setup_teardown(test_compact_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_int64_extremes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upgrade_keeps_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sharded_signed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_residue_and_direct, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_zero_is_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_add_cpu_and_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_add_node_compact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_change, setup_tuned, teardown),
		cmocka_unit_test_setup_teardown(test_auto_tune, setup_tuned, teardown),
		cmocka_unit_test_setup_teardown(test_lowering_folds_only_excess, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tune_shrink_rate, setup_tuned, teardown),
		cmocka_unit_test_setup_teardown(test_upgrade_on_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upgrade_under_updates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_domain_options, setup, teardown),
	};
	char name[64];

	current = f;
	snprintf(name, sizeof(name), "counter/%s/%s", acct_update_mode_to_string(f->mode), f->topology);
	return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}

int main(void)
{
	static const char *topologies[] = { "real", "64x4" };
	const struct CMUnitTest pool_tests[] = {
		cmocka_unit_test(test_pool_sizes),
		cmocka_unit_test(test_pool_slots),
		cmocka_unit_test(test_pool_binding),
		cmocka_unit_test(test_pool_block_limit),
		cmocka_unit_test(test_pool_no_memory),
		cmocka_unit_test(test_pool_free_unmaps),
	};
	const struct CMUnitTest domain_tests[] = {
		cmocka_unit_test(test_mode_names),
		cmocka_unit_test(test_domain_spread_zero),
		cmocka_unit_test(test_upgrade_window_ms),
		cmocka_unit_test(test_domain_no_memory),
		cmocka_unit_test(test_slab_table_no_memory),
	};
	int failed = cmocka_run_group_tests_name("pool", pool_tests, NULL, NULL);

	failed += cmocka_run_group_tests_name("domain", domain_tests, NULL, NULL);

	for (size_t t = 0; t < ELEMENTSOF(topologies); t++) {
		struct fixture fallback = { .mode = ACCT_MODE_FALLBACK, .topology = topologies[t] };
		failed += run_suite(&fallback);
		if (acct_rseq_usable()) {
			struct fixture rseq = { .mode = ACCT_MODE_RSEQ, .topology = topologies[t] };
			failed += run_suite(&rseq);
		} else
			printf("# rseq path not tested: restartable sequences are not usable here\n");
	}
	return failed ? 1 : 0;
}
