/* test-ledger-rcu.c - the ledger's table walks and its background resizes
 * (issue 13 item 11).
 *
 * The ledger's table (liburcu's lock-free hash table, CDS_LFHT_AUTO_RESIZE)
 * grows and shrinks in liburcu's worker thread, which frees the bucket
 * levels it drops after a grace period. A lookup or traversal outside a
 * read-side critical section does not hold that grace period back, even on
 * the thread that owns the ledger: it can walk freed buckets. liburcu's
 * contract is therefore that every lookup and traversal runs inside
 * rcu_read_lock(). Sanitizers cannot see a breach (the walks run in the
 * uninstrumented library), so this test checks the contract itself: the
 * table's walking functions are wrapped at link time (ld --wrap, see
 * tests/meson.build) and each call made outside a read-side section is
 * counted, while the owner thread uses every function of the ledger
 * without a read-side section of its own, as the daemon's main thread
 * does. And it grows the table to 16,384 records and shrinks it back,
 * round after round, with each lookup finding its record and each walk
 * every survivor. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "counter.h"
#include "ledger.h"
#include "util.h"

/* ---- the wrapped table functions ---------------------------------------------- */

static unsigned long outside; /* walks outside a read-side section */

void __real_cds_lfht_lookup(struct cds_lfht *ht, unsigned long hash, cds_lfht_match_fct match, const void *key,
			    struct cds_lfht_iter *iter);
void __real_cds_lfht_first(struct cds_lfht *ht, struct cds_lfht_iter *iter);
void __real_cds_lfht_next(struct cds_lfht *ht, struct cds_lfht_iter *iter);
void __real_cds_lfht_next_duplicate(struct cds_lfht *ht, cds_lfht_match_fct match, const void *key,
				    struct cds_lfht_iter *iter);
void __wrap_cds_lfht_lookup(struct cds_lfht *ht, unsigned long hash, cds_lfht_match_fct match, const void *key,
			    struct cds_lfht_iter *iter);
void __wrap_cds_lfht_first(struct cds_lfht *ht, struct cds_lfht_iter *iter);
void __wrap_cds_lfht_next(struct cds_lfht *ht, struct cds_lfht_iter *iter);
void __wrap_cds_lfht_next_duplicate(struct cds_lfht *ht, cds_lfht_match_fct match, const void *key,
				    struct cds_lfht_iter *iter);

static void check_section(void)
{
	if (!rcu_read_ongoing())
		outside++;
}

void __wrap_cds_lfht_lookup(struct cds_lfht *ht, unsigned long hash, cds_lfht_match_fct match, const void *key,
			    struct cds_lfht_iter *iter)
{
	check_section();
	__real_cds_lfht_lookup(ht, hash, match, key, iter);
}

void __wrap_cds_lfht_first(struct cds_lfht *ht, struct cds_lfht_iter *iter)
{
	check_section();
	__real_cds_lfht_first(ht, iter);
}

void __wrap_cds_lfht_next(struct cds_lfht *ht, struct cds_lfht_iter *iter)
{
	check_section();
	__real_cds_lfht_next(ht, iter);
}

void __wrap_cds_lfht_next_duplicate(struct cds_lfht *ht, cds_lfht_match_fct match, const void *key,
				    struct cds_lfht_iter *iter)
{
	check_section();
	__real_cds_lfht_next_duplicate(ht, match, key, iter);
}

/* ---- tests ------------------------------------------------------------------- */

#define ROUNDS 4
#define GROWN 16384
#define KEPT 64

static int count_one(struct acct_cgroup *cg, void *userdata)
{
	(*(unsigned *)userdata)++;
	return 0;
}

static void add(struct acct_ledger *l, const char *path)
{
	struct acct_cgroup_id id = { .path = path, .depth = 1 };
	struct acct_cgroup *cg;
	assert_int_equal(acct_ledger_add(l, &id, acct_now_us(), &cg), 0);
}

/* Every function of the ledger that walks its table, called by the owner
 * without a read-side section: each walk is inside one all the same. */
static void test_every_walk_in_a_read_section(void **state)
{
	struct acct_domain *d;
	struct acct_ledger *l;
	struct acct_ledger_budgets b = { .bytes = 4096 };
	assert_int_equal(acct_domain_new(NULL, &d), 0);
	assert_int_equal(acct_ledger_new(d, &b, &l), 0);
	outside = 0;
	add(l, "/a");
	add(l, "/b");
	struct acct_cgroup *a = acct_ledger_find(l, "/a");
	assert_non_null(a);
	assert_null(acct_ledger_find(l, "/c"));
	unsigned n = 0;
	assert_int_equal(acct_ledger_foreach(l, count_one, &n), 0);
	assert_int_equal(n, 2);
	struct acct_cgroup **v = NULL;
	assert_int_equal(acct_ledger_snapshot(l, true, &v), 2);
	free(v);
	acct_ledger_set_budgets(l, &b);
	struct acct_cgroup_id id = { .path = "/a", .depth = 1, .hierarchies = 1 };
	id.inode[0] = 7;
	acct_ledger_update_id(l, a, &id);
	acct_ledger_kill(l, a, acct_now_us());
	add(l, "/a"); /* a new record beside the dead one */
	assert_false(acct_cgroup_is_dead(acct_ledger_find(l, "/a")));
	assert_int_equal(acct_ledger_sweep(l, acct_now_us(), 0, NULL, NULL), 1);
	assert_int_equal(outside, 0);
	acct_ledger_free(l);
	acct_domain_free(d);
}

/* Lookups and walks by the owner, without a read-side section of its own,
 * while the table resizes behind it. */
static void test_walks_during_resizes(void **state)
{
	struct acct_domain *d;
	struct acct_ledger *l;
	struct acct_ledger_budgets b = { 0 };
	char path[64];
	assert_int_equal(acct_domain_new(NULL, &d), 0);
	assert_int_equal(acct_ledger_new(d, &b, &l), 0);
	for (unsigned i = 0; i < KEPT; i++) {
		snprintf(path, sizeof(path), "/kept-%u", i);
		add(l, path);
	}
	uint64_t lookups = 0;
	outside = 0;
	for (unsigned round = 0; round < ROUNDS; round++) {
		for (unsigned i = 0; i < GROWN; i++) {
			snprintf(path, sizeof(path), "/r%u-%u", round, i);
			add(l, path);
			if (i % 64 == 0) {
				snprintf(path, sizeof(path), "/kept-%u", i / 64 % KEPT);
				assert_non_null(acct_ledger_find(l, path));
				lookups++;
			}
		}
		for (unsigned i = 0; i < GROWN; i++) {
			snprintf(path, sizeof(path), "/r%u-%u", round, i);
			struct acct_cgroup *cg = acct_ledger_find(l, path);
			assert_non_null(cg);
			acct_ledger_kill(l, cg, acct_now_us());
		}
		assert_int_equal(acct_ledger_sweep(l, acct_now_us(), 0, NULL, NULL), GROWN);
		/* the shrink runs now, in liburcu's thread */
		for (unsigned k = 0; k < 2000; k++) {
			snprintf(path, sizeof(path), "/kept-%u", k % KEPT);
			struct acct_cgroup *cg = acct_ledger_find(l, path);
			assert_non_null(cg);
			assert_string_equal(cg->path, path);
			lookups++;
			if (k % 100 == 0) {
				unsigned n = 0;
				assert_int_equal(acct_ledger_foreach(l, count_one, &n), 0);
				assert_int_equal(n, KEPT);
				struct acct_cgroup **v = NULL;
				assert_int_equal(acct_ledger_snapshot(l, true, &v), KEPT);
				free(v);
			}
		}
	}
	print_message("%" PRIu64 " lookups over %d grow-and-shrink rounds\n", lookups, ROUNDS);
	assert_int_equal(outside, 0);
	acct_ledger_free(l);
	acct_domain_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_walk_in_a_read_section),
		cmocka_unit_test(test_walks_during_resizes),
	};
	return cmocka_run_group_tests_name("ledger-rcu", tests, NULL, NULL);
}
