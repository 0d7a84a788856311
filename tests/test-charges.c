/* test-charges.c - unit tests of the charge engine (lib/core/charges.h):
 * self and subtree values, the bound invariant under threads charging nested
 * cgroups (every ancestor's sampled read within the budget while they run,
 * precise totals equal to the sum of the deltas once they stop), removal with
 * release and reparent, range checks. Runs in the TSan phase (suite threads). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/charges.h"
#include "percpu/counter.h"
#include "util.h"

static struct acct_domain *domain_new(void)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;

	assert_int_equal(acct_domain_new(&o, &d), 0);
	return d;
}

static int64_t self_of(struct acct_charges *ch, size_t res, const char *path)
{
	struct acct_charge_reading r;

	assert_int_equal(acct_charges_read_precise(ch, res, path, &r), 0);
	assert_int_equal(r.self.bound, 0);
	return r.self.value;
}

static int64_t subtree_of(struct acct_charges *ch, size_t res, const char *path)
{
	struct acct_charge_reading r;

	assert_int_equal(acct_charges_read_precise(ch, res, path, &r), 0);
	return r.subtree.value;
}

static void test_basics(void **state)
{
	struct acct_domain *d = domain_new();
	const struct acct_charges_resource res[] = { { "gpu", 1024, false, 0, false }, { "slots", 0, true, 0, false } };
	struct acct_charges *ch = NULL;
	struct acct_charge_reading r;

	(void)state;
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	assert_int_equal(acct_charges_nr_resources(ch), 2);
	assert_int_equal(acct_charges_resource_index(ch, "slots"), 1);
	assert_int_equal(acct_charges_resource_index(ch, "nope"), -ENOENT);
	assert_string_equal(acct_charges_resource(ch, 0)->name, "gpu");
	assert_null(acct_charges_resource(ch, 2));

	assert_int_equal(acct_charges_read(ch, 0, "/a", &r), -ENOENT);
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 100), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/a", 7), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/a/c", -3), 0);
	assert_int_equal(self_of(ch, 0, "/a"), 7);
	assert_int_equal(subtree_of(ch, 0, "/a"), 104);
	assert_int_equal(self_of(ch, 0, "/"), 0);
	assert_int_equal(subtree_of(ch, 0, "/"), 104);
	assert_int_equal(subtree_of(ch, 0, "/a/b"), 100);
	/* resources are apart */
	assert_int_equal(acct_charges_read(ch, 1, "/a", &r), -ENOENT);
	assert_int_equal(acct_charges_read(ch, 0, "/a", &r), 0);
	assert_true(r.self.bound <= 1024 && r.subtree.bound <= 1024);

	/* bad arguments */
	assert_int_equal(acct_charges_add(ch, 2, "/a", 1), -EINVAL);
	assert_int_equal(acct_charges_add(ch, 0, "a", 1), -EINVAL);
	assert_int_equal(acct_charges_add(ch, 0, NULL, 1), -EINVAL);
	assert_int_equal(acct_charges_remove(ch, "/"), -EINVAL);

	/* range: nothing is charged when a value would leave the range */
	assert_int_equal(acct_charges_add(ch, 1, "/x", INT64_C(1) << 61), 0);
	assert_int_equal(acct_charges_check(ch, 1, "/x/y", (INT64_C(1) << 61) + 1), -ERANGE); /* /x's subtree */
	assert_int_equal(acct_charges_add(ch, 1, "/x/y", (INT64_C(1) << 61) + 1), -ERANGE);
	assert_int_equal(acct_charges_check(ch, 1, "/x/y", INT64_C(1) << 61), 0); /* 2^62 is still in range */
	assert_int_equal(acct_charges_check(ch, 1, "/z", INT64_C(1) << 60), 0);
	assert_int_equal(acct_charges_check(ch, 1, "/z", INT64_MIN), -ERANGE);
	assert_int_equal(acct_charges_add(ch, 1, "/z", INT64_MIN), -ERANGE);
	assert_int_equal(subtree_of(ch, 1, "/"), INT64_C(1) << 61);

	acct_charges_free(ch);
	acct_domain_free(d);
}

static void test_bad_resources(void **state)
{
	struct acct_domain *d = domain_new();
	const struct acct_charges_resource twice[] = { { "a", 1, false, 0, false }, { "a", 1, false, 0, false } };
	const struct acct_charges_resource negative[] = { { "a", -1, false, 0, false } };
	struct acct_charges *ch = NULL;

	(void)state;
	assert_int_equal(acct_charges_new(d, twice, 2, &ch), -EINVAL);
	assert_int_equal(acct_charges_new(d, negative, 1, &ch), -EINVAL);
	assert_int_equal(acct_charges_new(NULL, negative, 0, &ch), -EINVAL);
	assert_null(ch);
	assert_int_equal(acct_charges_new(d, NULL, 0, &ch), 0); /* no resources declared */
	assert_int_equal(acct_charges_add(ch, 0, "/", 1), -EINVAL);
	acct_charges_free(ch);
	acct_domain_free(d);
}

static void count_entry(const char *path, const struct acct_charge_reading *rd, void *u)
{
	(void)path;
	(void)rd;
	(*(unsigned *)u)++;
}

static void test_removal(void **state)
{
	struct acct_domain *d = domain_new();
	const struct acct_charges_resource res[] = { { "released", 16, false, 0, false }, { "reparented", 16, true, 0, false } };
	struct acct_charges *ch = NULL;
	struct acct_charge_reading r;

	(void)state;
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(acct_charges_add(ch, i, "/s", 1), 0);
		assert_int_equal(acct_charges_add(ch, i, "/s/a", 10), 0);
		assert_int_equal(acct_charges_add(ch, i, "/s/a/b", 100), 0);
		assert_int_equal(acct_charges_add(ch, i, "/s/a/c", 1000), 0);
		assert_int_equal(acct_charges_add(ch, i, "/s/ab", 5), 0); /* a prefix of the name, not below */
	}
	/* Removing /s/a takes /s/a/b and /s/a/c with it, both resources. */
	assert_int_equal(acct_charges_remove(ch, "/s/a"), 6);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(acct_charges_read(ch, i, "/s/a", &r), -ENOENT);
		assert_int_equal(acct_charges_read(ch, i, "/s/a/b", &r), -ENOENT);
		assert_int_equal(self_of(ch, i, "/s/ab"), 5);
	}
	/* release: gone from the ancestors' subtree values */
	assert_int_equal(self_of(ch, 0, "/s"), 1);
	assert_int_equal(subtree_of(ch, 0, "/s"), 6);
	assert_int_equal(subtree_of(ch, 0, "/"), 6);
	/* reparent: the parent's own value holds them, the subtree values stay */
	assert_int_equal(self_of(ch, 1, "/s"), 1111);
	assert_int_equal(subtree_of(ch, 1, "/s"), 1116);
	assert_int_equal(subtree_of(ch, 1, "/"), 1116);
	/* A cgroup recreated under the same path starts at 0, and is another
	 * entry to a charge that names the old one's serial. */
	uint64_t serial = 0, again = 0;
	assert_int_equal(acct_charges_add_serial(ch, 1, "/s/old", 4, 0, &serial), 0);
	assert_int_equal(acct_charges_add_serial(ch, 1, "/s/old", -1, serial, &again), 0);
	assert_int_equal(again, serial);
	assert_int_equal(acct_charges_remove(ch, "/s/old"), 1);
	assert_int_equal(acct_charges_add_serial(ch, 1, "/s/old", -3, serial, NULL), -ESTALE);
	assert_int_equal(acct_charges_read(ch, 1, "/s/old", &r), -ENOENT); /* not created */
	assert_int_equal(acct_charges_add_serial(ch, 1, "/s/old", 1, 0, &again), 0);
	assert_true(again != serial);
	assert_int_equal(acct_charges_remove(ch, "/s/old"), 1);
	assert_int_equal(self_of(ch, 1, "/s"), 1115); /* 1111, then the 3 and the 1 reparented */
	assert_int_equal(acct_charges_add(ch, 1, "/s/a", 2), 0);
	assert_int_equal(self_of(ch, 1, "/s/a"), 2);
	assert_int_equal(acct_charges_remove(ch, "/nothing/here"), 0);

	unsigned seen = 0;
	assert_int_equal(acct_charges_foreach(ch, 1, count_entry, &seen), 0);
	assert_int_equal(seen, 4); /* /, /s, /s/ab, /s/a */
	acct_charges_free(ch);
	acct_domain_free(d);
}

/* ---- threads ------------------------------------------------------------- */

#define THREADS 4
#define BUDGET 64

static const char *const cgroups[] = { "/", "/a", "/a/b", "/a/b/c", "/a/b/c/d", "/a/e", "/a/e/f", "/g", "/g/h" };
#define NR_CG ELEMENTSOF(cgroups)

/* Per thread and cgroup: the sum of the deltas started (published before the
 * charge) and completed (after it returned). All deltas are positive, so the
 * true value at a reader's read lies between the completed sums read before
 * it and the started sums read after it. */
struct tally {
	int64_t started[NR_CG], completed[NR_CG];
} _cacheline_aligned_;

static struct tally tallies[THREADS];
static struct acct_charges *shared;
static int stop;

static bool below(size_t cg, size_t anc)
{
	size_t n = strlen(cgroups[anc]);

	return strcmp(cgroups[anc], "/") == 0 ||
	       (strncmp(cgroups[cg], cgroups[anc], n) == 0 && (cgroups[cg][n] == '\0' || cgroups[cg][n] == '/'));
}

static void *charger(void *arg)
{
	struct tally *t = arg;
	uint64_t x = (uint64_t)(t - tallies) * 0x9E3779B97F4A7C15ull + 1;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t cg = x % NR_CG;
		int64_t delta = (int64_t)(x >> 40) % 7 + 1;

		__atomic_store_n(&t->started[cg], t->started[cg] + delta, __ATOMIC_SEQ_CST);
		assert_int_equal(acct_charges_add(shared, 0, cgroups[cg], delta), 0);
		__atomic_store_n(&t->completed[cg], t->completed[cg] + delta, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int64_t tally_sum(size_t anc, bool subtree, bool completed)
{
	int64_t s = 0;

	for (size_t t = 0; t < THREADS; t++)
		for (size_t cg = 0; cg < NR_CG; cg++)
			if (subtree ? below(cg, anc) : cg == anc)
				s += __atomic_load_n(completed ? &tallies[t].completed[cg] : &tallies[t].started[cg],
						     __ATOMIC_SEQ_CST);
	return s;
}

static void test_threads_bound(void **state)
{
	struct acct_domain *d = domain_new();
	const struct acct_charges_resource res[] = { { "r", BUDGET, false, 0, false } };
	pthread_t th[THREADS];
	uint64_t reads = 0, max_bound = 0;

	(void)state;
	memset(tallies, 0, sizeof(tallies));
	stop = 0;
	assert_int_equal(acct_charges_new(d, res, 1, &shared), 0);
	for (size_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, charger, &tallies[i]), 0);

	/* Sample every cgroup, its own value and its subtree's, while they run:
	 * a subtree with 5 charging descendants stays within one budget. */
	for (int round = 0; round < 3000; round++)
		for (size_t anc = 0; anc < NR_CG; anc++)
			for (int sub = 0; sub < 2; sub++) {
				struct acct_charge_reading r;
				int64_t lo = tally_sum(anc, sub, true);
				int rr = acct_charges_read(shared, 0, cgroups[anc], &r);
				int64_t hi = tally_sum(anc, sub, false);
				if (rr == -ENOENT) {
					assert_int_equal(lo, 0);
					continue;
				}
				assert_int_equal(rr, 0);
				const struct acct_reading *v = sub ? &r.subtree : &r.self;
				assert_true(v->bound <= BUDGET);
				if (v->value < lo - (int64_t)v->bound || v->value > hi + (int64_t)v->bound)
					fail_msg("%s %s: %" PRId64 " +/- %" PRIu64 " outside [%" PRId64 ", %" PRId64 "]",
						 cgroups[anc], sub ? "subtree" : "self", v->value, v->bound, lo, hi);
				reads++;
				max_bound = MAX(max_bound, v->bound);
			}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);

	/* Quiesced: precise values are the sums, exactly. */
	for (size_t anc = 0; anc < NR_CG; anc++) {
		struct acct_charge_reading r;
		if (tally_sum(anc, true, true) == 0)
			continue;
		assert_int_equal(acct_charges_read_precise(shared, 0, cgroups[anc], &r), 0);
		assert_int_equal(r.self.value, tally_sum(anc, false, true));
		assert_int_equal(r.subtree.value, tally_sum(anc, true, true));
		assert_int_equal(r.self.bound, 0);
		assert_int_equal(r.subtree.bound, 0);
	}
	printf("# %" PRIu64 " sampled reads, largest bound %" PRIu64 " (budget %d)\n", reads, max_bound, BUDGET);
	shared = acct_charges_free(shared);
	acct_domain_free(d);
}

/* Removal while others charge elsewhere and into the removed subtree: the
 * totals of what stays are exact, and a removed cgroup's charges went to its
 * parent exactly once (reparent) - none lost, none counted twice. */
struct remover_arg {
	int64_t charged; /* to /p/q by this thread, all accepted */
};

static void *charge_q(void *arg)
{
	struct remover_arg *a = arg;

	for (int i = 0; i < 20000; i++) {
		assert_int_equal(acct_charges_add(shared, 0, "/p/q", 3), 0);
		a->charged += 3;
	}
	__atomic_add_fetch(&stop, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void test_threads_removal(void **state)
{
	struct acct_domain *d = domain_new();
	const struct acct_charges_resource res[] = { { "r", BUDGET, true, 0, false } };
	struct remover_arg args[2] = {};
	pthread_t th[2];
	int removals = 0;

	(void)state;
	assert_int_equal(acct_charges_new(d, res, 1, &shared), 0);
	stop = 0;
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, charge_q, &args[i]), 0);
	/* /p/q is removed and recreated by the chargers, again and again, until
	 * both are done; all of its charges end in /p (reparented) or in /p/q. */
	while (__atomic_load_n(&stop, __ATOMIC_SEQ_CST) < 2) {
		int r = acct_charges_remove(shared, "/p/q");
		assert_true(r >= 0);
		removals += r;
		sched_yield();
	}
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	struct acct_charge_reading p;
	assert_int_equal(acct_charges_read_precise(shared, 0, "/p", &p), 0);
	assert_int_equal(p.subtree.value, args[0].charged + args[1].charged);
	struct acct_charge_reading q = {};
	(void)acct_charges_read_precise(shared, 0, "/p/q", &q);
	assert_int_equal(p.self.value + q.self.value, args[0].charged + args[1].charged);
	printf("# %d entries removed while charging\n", removals);
	shared = acct_charges_free(shared);
	acct_domain_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basics),
		cmocka_unit_test(test_bad_resources),
		cmocka_unit_test(test_removal),
		cmocka_unit_test(test_threads_bound),
		cmocka_unit_test(test_threads_removal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
