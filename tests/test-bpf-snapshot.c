/* test-bpf-snapshot.c - a walk's index without the kernel (lib/bpf's
 * acct_bpf_snapshot_sort() and acct_bpf_snapshot_find_hint()): records laid
 * out as a walk writes them, sorted anew or by the order the last sort
 * kept, and looked up by a position kept from the last walk. Each must give
 * what the plain qsort and binary search give, whatever the walk did in
 * between: the same ids in the same order, one made or removed, the same
 * ids in another order (a session split otherwise), records of another
 * size (a lean walk after a full one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/util.h"
#include "bpf-collector.h"
#include "cgroup-record.h"

/* Lay records of ids[0..n) out in walk order in s->data, each with `tail`
 * state items (another record size), and index them as read_snapshot()
 * does. */
static void lay_out(struct acct_bpf_snapshot *s, const uint64_t *ids, size_t n, unsigned tail)
{
	size_t size = sizeof(struct acct_bpf_record) + tail * sizeof(long long);
	free(s->data);
	s->data = calloc(n ? n : 1, size);
	assert_non_null(s->data);
	s->data_size = n * size;
	free(s->rec);
	s->rec = calloc(n ? n : 1, sizeof(*s->rec));
	assert_non_null(s->rec);
	s->cap = n;
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		struct acct_bpf_record *r = (struct acct_bpf_record *)(s->data + i * size);
		r->magic = ACCT_BPF_RECORD_MAGIC;
		r->size = (unsigned)size;
		r->id = ids[i];
		r->nr_state = tail;
		s->rec[i] = r;
	}
}

static void assert_index(const struct acct_bpf_snapshot *s, const uint64_t *ids, size_t n)
{
	uint64_t *want = malloc((n ? n : 1) * sizeof(*want));
	assert_non_null(want);
	memcpy(want, ids, n * sizeof(*want));
	for (size_t i = 1; i < n; i++) /* insertion sort: the plain truth */
		for (size_t j = i; j > 0 && want[j - 1] > want[j]; j--) {
			uint64_t t = want[j];
			want[j] = want[j - 1];
			want[j - 1] = t;
		}
	assert_int_equal(s->n, n);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(s->rec[k]->id, want[k]);
	/* every record is one of the walk's own (in data), once */
	for (size_t k = 0; k < n; k++) {
		assert_true((const char *)s->rec[k] >= s->data && (const char *)s->rec[k] < s->data + s->data_size);
		for (size_t j = k + 1; j < n; j++)
			assert_ptr_not_equal(s->rec[k], s->rec[j]);
	}
	free(want);
}

/* Pseudo-random ids in a partitioned walk's order: class by class of id % 3. */
static size_t make_walk(uint64_t *ids, size_t n, uint64_t seed)
{
	size_t k = 0;
	for (unsigned cls = 0; cls < 3; cls++)
		for (size_t i = 0; i < n; i++) {
			uint64_t id = 1000 + (i * 7919 + seed) % 100003;
			if (id % 3 == cls)
				ids[k++] = id;
		}
	return k;
}

static void test_sort_kept_order(void **state)
{
	(void)state;
	struct acct_bpf_snapshot s = { 0 };
	uint64_t ids[300], other[300];
	size_t n = make_walk(ids, 300, 5);

	lay_out(&s, ids, n, 0);
	assert_true(acct_bpf_snapshot_sort(&s));
	assert_index(&s, ids, n);
	assert_int_equal(s.sorts, 1);
	assert_int_equal(s.sorts_reused, 0);

	/* The same walk again, records of another size (a full walk after a
	 * lean one): the kept order, and right. */
	lay_out(&s, ids, n, 3);
	assert_true(acct_bpf_snapshot_sort(&s));
	assert_index(&s, ids, n);
	assert_int_equal(s.sorts_reused, 1);

	/* Same ids, two swapped in walk order (another session split): not the
	 * kept order; sorted anew, and that order kept. */
	memcpy(other, ids, n * sizeof(*ids));
	uint64_t t = other[10];
	other[10] = other[n - 10];
	other[n - 10] = t;
	lay_out(&s, other, n, 0);
	assert_true(acct_bpf_snapshot_sort(&s));
	assert_index(&s, other, n);
	assert_int_equal(s.sorts_reused, 1);
	lay_out(&s, other, n, 0);
	assert_true(acct_bpf_snapshot_sort(&s));
	assert_index(&s, other, n);
	assert_int_equal(s.sorts_reused, 2);

	/* One id changed in place (a cgroup removed, another made where the
	 * walk had it): same count, same positions, another id. */
	memcpy(other, ids, n * sizeof(*ids));
	other[n / 2] = 99999999;
	lay_out(&s, other, n, 0);
	assert_true(acct_bpf_snapshot_sort(&s));
	assert_index(&s, other, n);
	assert_int_equal(s.sorts_reused, 2);

	/* One fewer (the last removed): sorted anew. */
	lay_out(&s, ids, n - 1, 0);
	assert_true(acct_bpf_snapshot_sort(&s));
	assert_index(&s, ids, n - 1);
	assert_int_equal(s.sorts_reused, 2);

	/* In id order already: left as it is, no sort counted. */
	uint64_t up[5] = { 3, 5, 8, 13, 21 };
	uint64_t sorts = s.sorts;
	lay_out(&s, up, 5, 0);
	assert_false(acct_bpf_snapshot_sort(&s));
	assert_index(&s, up, 5);
	assert_int_equal(s.sorts, sorts);

	/* Empty. */
	lay_out(&s, NULL, 0, 0);
	assert_false(acct_bpf_snapshot_sort(&s));
	acct_bpf_snapshot_clear(&s);
}

static void test_find_hint(void **state)
{
	(void)state;
	struct acct_bpf_snapshot s = { 0 };
	uint64_t ids[200], other[200];
	size_t n = make_walk(ids, 200, 11);
	uint32_t hint[200];

	lay_out(&s, ids, n, 0);
	(void)acct_bpf_snapshot_sort(&s);
	/* Hints of any value find what the binary search finds. */
	for (size_t i = 0; i < n; i++) {
		hint[i] = (uint32_t)(i * 31 % (n + 5)); /* some past the end */
		const struct acct_bpf_record *r = acct_bpf_snapshot_find_hint(&s, ids[i], &hint[i]);
		assert_non_null(r);
		assert_ptr_equal(r, acct_bpf_snapshot_find(&s, ids[i]));
		assert_ptr_equal(s.rec[hint[i]], r);
	}
	uint32_t h = 0;
	assert_null(acct_bpf_snapshot_find_hint(&s, 7, &h)); /* no such id */
	assert_int_equal(h, 0);

	/* The next walk lost a cgroup and gained another: every kept hint
	 * still finds its own record or none, never a neighbour's. */
	memcpy(other, ids, n * sizeof(*ids));
	uint64_t gone = other[n / 3];
	other[n / 3] = 1; /* sorts first: every position after it moves */
	lay_out(&s, other, n, 0);
	(void)acct_bpf_snapshot_sort(&s);
	for (size_t i = 0; i < n; i++) {
		const struct acct_bpf_record *r = acct_bpf_snapshot_find_hint(&s, ids[i], &hint[i]);
		if (ids[i] == gone) {
			assert_null(r);
			continue;
		}
		assert_non_null(r);
		assert_int_equal(r->id, ids[i]);
		assert_ptr_equal(r, acct_bpf_snapshot_find(&s, ids[i]));
	}
	acct_bpf_snapshot_clear(&s);
}

/* A small hierarchy as a partitioned walk writes it (ids by class of id %
 * 2, not in pre-order):
 *   1 /            4 /c
 *   2 /a           3 /b
 *   5 /a/x         7 /b/w
 *   9 /a/x/y
 *   6 /a/z
 * and the kernel's count of live descendants of each. */
struct cg {
	uint64_t id;
	int nr_descendants;
};

static void lay_out_tree(struct acct_bpf_snapshot *s, const struct cg *cgs, size_t n)
{
	uint64_t ids[16];
	assert_true(n <= 16);
	for (size_t i = 0; i < n; i++)
		ids[i] = cgs[i].id;
	lay_out(s, ids, n, 0);
	for (size_t i = 0; i < n; i++)
		((struct acct_bpf_record *)s->rec[i])->nr_descendants = cgs[i].nr_descendants;
	(void)acct_bpf_snapshot_sort(s);
}

static bool scope_agrees(const struct cg *cgs, size_t n, const struct acct_cgroup_scope *scope)
{
	struct acct_bpf_snapshot s = { 0 };
	struct acct_cgroup_census walked, known;
	lay_out_tree(&s, cgs, n);
	acct_bpf_snapshot_census_scope(&s, scope, &walked);
	acct_bpf_snapshot_clear(&s);
	acct_cgroup_scope_census(scope, &known);
	return acct_cgroup_census_equal(&walked, &known);
}

/* A scope's census from a walk (the subtrees of /a and /c, known: /a /a/x
 * /a/x/y /a/z /c) equals the observer's where the walk's subtrees hold the
 * known cgroups and no other, in any walk order; it differs for a known one
 * gone, an unknown one there, one swapped for another (the count alike), a
 * top gone; cgroups outside the scope do not count; a leaf counts one,
 * whatever lies below it. */
static void test_census_scope(void **state)
{
	(void)state;
	const struct cg tree[] = { { 2, 3 }, { 4, 0 }, { 6, 0 }, { 1, 7 }, { 3, 1 }, { 5, 1 }, { 7, 0 }, { 9, 0 } };
	_cleanup_free_ struct acct_cgroup_scope *scope = acct_cgroup_scope_new(2, 5);
	assert_non_null(scope);
	const uint64_t tops[] = { 2, 4 }, ids[] = { 2, 5, 9, 6, 4 };
	memcpy(scope->tops, tops, sizeof(tops));
	memcpy(scope->ids, ids, sizeof(ids));
	scope->n_tops = 2;
	scope->n_ids = 5;
	assert_true(scope_agrees(tree, ELEMENTSOF(tree), scope));

	/* /a/x/y gone */
	const struct cg gone[] = { { 2, 2 }, { 4, 0 }, { 6, 0 }, { 1, 6 }, { 3, 1 }, { 5, 0 }, { 7, 0 } };
	assert_false(scope_agrees(gone, ELEMENTSOF(gone), scope));
	/* /a/q (10) made, unknown */
	const struct cg made[] = { { 2, 4 }, { 4, 0 }, { 6, 0 }, { 1, 8 }, { 3, 1 }, { 5, 1 }, { 7, 0 }, { 9, 0 }, { 10, 0 } };
	assert_false(scope_agrees(made, ELEMENTSOF(made), scope));
	/* /a/z (6) gone and /a/q (10) made: the same count */
	const struct cg swapped[] = { { 2, 3 }, { 4, 0 }, { 1, 7 }, { 3, 1 }, { 5, 1 }, { 7, 0 }, { 9, 0 }, { 10, 0 } };
	assert_false(scope_agrees(swapped, ELEMENTSOF(swapped), scope));
	/* /c gone */
	const struct cg top_gone[] = { { 2, 3 }, { 6, 0 }, { 1, 6 }, { 3, 1 }, { 5, 1 }, { 7, 0 }, { 9, 0 } };
	assert_false(scope_agrees(top_gone, ELEMENTSOF(top_gone), scope));
	/* /b/v (11) made and /b/w (7) gone: outside */
	const struct cg outside[] = { { 2, 3 }, { 4, 0 }, { 6, 0 }, { 1, 7 }, { 3, 1 }, { 5, 1 }, { 11, 0 }, { 9, 0 } };
	assert_true(scope_agrees(outside, ELEMENTSOF(outside), scope));

	/* /a/x a leaf (at the observer's depth limit), /a/x/y not known */
	_cleanup_free_ struct acct_cgroup_scope *leaf = acct_cgroup_scope_new(0, 1);
	assert_non_null(leaf);
	leaf->ids[0] = 5;
	leaf->n_ids = 1;
	leaf->n_leaves = 1;
	assert_true(scope_agrees(tree, ELEMENTSOF(tree), leaf));
	const struct cg no_x[] = { { 2, 1 }, { 4, 0 }, { 6, 0 }, { 1, 4 }, { 3, 1 }, { 7, 0 } };
	assert_false(scope_agrees(no_x, ELEMENTSOF(no_x), leaf));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sort_kept_order),
		cmocka_unit_test(test_find_hint),
		cmocka_unit_test(test_census_scope),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
