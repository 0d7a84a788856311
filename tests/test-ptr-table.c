/* test-ptr-table.c - unit tests of the hash table of pointers
 * (lib/basic/ptr-table.h): lookups, the growth, backward-shift deletion
 * with long and wrapping probe runs (hashes chosen to collide), a random
 * sequence against a plain array, clearing, and a failed growth. After every
 * change the table's invariant is checked whole: each entry is reachable
 * from its home slot without crossing an empty one, and the count is right. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "alloc-fail.h"
#include "ptr-table.h"

struct entry {
	uint64_t key, hash;
	int freed;
};

static bool entry_eq(const void *p, const void *key)
{
	return ((const struct entry *)p)->key == *(const uint64_t *)key;
}

/* Every entry reachable from its home slot through occupied slots only,
 * and as many entries as t->n. */
static void check_invariant(const struct ptr_table *t)
{
	size_t n = 0;

	for (size_t i = 0; i < ptr_table_capacity(t); i++) {
		const struct entry *e = ptr_table_at(t, i);
		if (!e)
			continue;
		n++;
		assert_true(t->slots[i].hash == e->hash);
		for (size_t j = e->hash & t->mask; j != i; j = (j + 1) & t->mask)
			assert_non_null(ptr_table_at(t, j));
	}
	assert_int_equal(n, t->n);
	if (t->slots)
		assert_true(2 * t->n <= t->mask + 1);
}

static struct entry *find(const struct ptr_table *t, const struct entry *e)
{
	return ptr_table_find(t, e->hash, entry_eq, &e->key);
}

static void test_empty(void **state)
{
	struct ptr_table t = { 0 };
	struct entry e = { .key = 1, .hash = 1 };

	(void)state;
	assert_null(find(&t, &e));
	ptr_table_remove(&t, e.hash, &e);
	assert_int_equal(ptr_table_capacity(&t), 0);
	ptr_table_clear(&t, NULL);
	assert_null(t.slots);
}

/* Many keys on few hashes: probe runs hundreds long; removing every third
 * must leave every other one found. */
static void test_collisions(void **state)
{
	enum { N = 3000 };
	struct ptr_table t = { 0 };
	struct entry *v = calloc(N, sizeof(*v));

	(void)state;
	assert_non_null(v);
	for (size_t i = 0; i < N; i++) {
		v[i] = (struct entry){ .key = i, .hash = i % 7 };
		assert_int_equal(ptr_table_insert(&t, v[i].hash, &v[i]), 0);
	}
	check_invariant(&t);
	for (size_t i = 0; i < N; i++)
		assert_ptr_equal(find(&t, &v[i]), &v[i]);
	for (size_t i = 0; i < N; i += 3)
		ptr_table_remove(&t, v[i].hash, &v[i]);
	check_invariant(&t);
	for (size_t i = 0; i < N; i++)
		assert_ptr_equal(find(&t, &v[i]), i % 3 ? &v[i] : NULL);
	/* Removing what is absent changes nothing. */
	ptr_table_remove(&t, v[0].hash, &v[0]);
	assert_int_equal(t.n, N - N / 3);
	ptr_table_clear(&t, NULL);
	free(v);
}

/* Homes in the last slots: runs wrap to slot 0, and a removal near the end
 * must shift entries from the start of the table back across the wrap, or
 * leave them where their homes lie after the hole. Each of 500 removal
 * orders (shuffled) on a fresh table, checked after every removal. */
static void test_wrapping_runs(void **state)
{
	enum { N = 20, ORDERS = 500 };
	struct entry v[N];
	size_t order[N];
	uint64_t x = 0x2545f4914f6cdd1d;

	(void)state;
	for (int o = 0; o < ORDERS; o++) {
		struct ptr_table t = { 0 };
		bool gone[N] = { false };

		for (size_t i = 0; i < N; i++) {
			/* capacity 64: homes 60-63 in half the orders, 62, 63, 0 and 1
			 * (homes on both sides of the wrap) in the other */
			size_t base = o % 2 ? 62 : 60;
			v[i] = (struct entry){ .key = i, .hash = (base + (i * 5 + (size_t)o / 2) % 4) & 63 };
			assert_int_equal(ptr_table_insert(&t, v[i].hash, &v[i]), 0);
			order[i] = i;
		}
		assert_int_equal(ptr_table_capacity(&t), 64);
		assert_non_null(ptr_table_at(&t, 0)); /* the run wrapped */
		check_invariant(&t);
		for (size_t i = N - 1; i > 0; i--) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t k = x % (i + 1), tmp = order[i];
			order[i] = order[k];
			order[k] = tmp;
		}
		for (size_t r = 0; r < N; r++) {
			size_t i = order[r];
			ptr_table_remove(&t, v[i].hash, &v[i]);
			gone[i] = true;
			check_invariant(&t);
			for (size_t j = 0; j < N; j++)
				assert_ptr_equal(find(&t, &v[j]), gone[j] ? NULL : &v[j]);
		}
		assert_int_equal(t.n, 0);
		ptr_table_clear(&t, NULL);
	}
}

/* A random sequence of inserts and removes against a plain array. */
static void test_random_against_array(void **state)
{
	enum { KEYS = 1024, OPS = 50000 };
	struct ptr_table t = { 0 };
	struct entry *v = calloc(KEYS, sizeof(*v));
	bool *in = calloc(KEYS, sizeof(*in));
	uint64_t x = 0x9e3779b97f4a7c15;

	(void)state;
	assert_true(v && in);
	for (size_t i = 0; i < KEYS; i++)
		v[i] = (struct entry){ .key = i, .hash = (i * 2654435761u) % 509 };
	for (int op = 0; op < OPS; op++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t k = x % KEYS;
		if (in[k])
			ptr_table_remove(&t, v[k].hash, &v[k]);
		else
			assert_int_equal(ptr_table_insert(&t, v[k].hash, &v[k]), 0);
		in[k] = !in[k];
		if (op % 1000 == 0) {
			check_invariant(&t);
			for (size_t i = 0; i < KEYS; i++)
				assert_ptr_equal(find(&t, &v[i]), in[i] ? &v[i] : NULL);
		}
	}
	check_invariant(&t);
	ptr_table_clear(&t, NULL);
	free(v);
	free(in);
}

static void count_free(void *p)
{
	((struct entry *)p)->freed++;
}

static void test_clear_frees_each_once(void **state)
{
	enum { N = 500 };
	struct ptr_table t = { 0 };
	struct entry v[N];

	(void)state;
	for (size_t i = 0; i < N; i++) {
		v[i] = (struct entry){ .key = i, .hash = i * 31 };
		assert_int_equal(ptr_table_insert(&t, v[i].hash, &v[i]), 0);
	}
	ptr_table_clear(&t, count_free);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(v[i].freed, 1);
	assert_null(t.slots);
	assert_int_equal(t.n, 0);
	assert_int_equal(ptr_table_capacity(&t), 0);
}

/* A growth that cannot allocate leaves the table as it was. */
static void test_failed_growth(void **state)
{
	enum { N = 32 };
	struct ptr_table t = { 0 };
	struct entry v[N + 1];

	(void)state;
	for (size_t i = 0; i <= N; i++)
		v[i] = (struct entry){ .key = i, .hash = i };
	alloc_fail_after(0);
	assert_int_equal(ptr_table_insert(&t, v[0].hash, &v[0]), -ENOMEM);
	alloc_fail_off();
	assert_null(t.slots);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(ptr_table_insert(&t, v[i].hash, &v[i]), 0);
	assert_int_equal(ptr_table_capacity(&t), 64); /* full to half: the next one grows */
	alloc_fail_after(0);
	assert_int_equal(ptr_table_insert(&t, v[N].hash, &v[N]), -ENOMEM);
	assert_true(alloc_fail_hit());
	alloc_fail_off();
	assert_int_equal(ptr_table_capacity(&t), 64);
	check_invariant(&t);
	for (size_t i = 0; i < N; i++)
		assert_ptr_equal(find(&t, &v[i]), &v[i]);
	assert_null(find(&t, &v[N]));
	assert_int_equal(ptr_table_insert(&t, v[N].hash, &v[N]), 0);
	assert_int_equal(ptr_table_capacity(&t), 128);
	check_invariant(&t);
	ptr_table_clear(&t, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_wrapping_runs),
		cmocka_unit_test(test_random_against_array),
		cmocka_unit_test(test_clear_frees_each_once),
		cmocka_unit_test(test_failed_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
