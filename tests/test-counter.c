/* test-counter.c - unit tests of every counter operation, run once per update
 * path (rseq where usable, and the compare-and-swap fallback) and on the real
 * and a simulated 64-CPU, 4-node topology. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "counter.h"
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
	assert_int_equal(acct_counter_compare(c, 501, &precise), -1);

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
	assert_int_equal(st.bound, (uint64_t)(st.batch - 1) * shards(f));
	int64_t quiet_batch = st.batch;
	acct_counter_stats(busy, &st);
	assert_true(st.tune_grows > 0);
	assert_true(st.batch > quiet_batch);
	assert_true(st.batch <= st.batch_max);
	assert_int_equal(st.batch, st.batch_max);
	assert_int_equal(acct_counter_read_precise(busy), 12 * 200000);

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
		cmocka_unit_test_setup_teardown(test_compare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_change, setup_tuned, teardown),
		cmocka_unit_test_setup_teardown(test_auto_tune, setup_tuned, teardown),
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
	int failed = 0;

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
