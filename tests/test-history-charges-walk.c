/* test-history-charges-walk.c - unit tests of the charged values a history
 * recording takes (daemon/acctd/history-charges-walk.h): the walk of the
 * engine's entries yields exactly what a lookup of every tracked cgroup for
 * every resource yielded (the recording before issue 32's cost fix): the
 * same (cgroup, resource) pairs, values, bounds with the slots' added and
 * inodes, untracked and removed cgroups left out; and it costs O(charged
 * entries), not O(tracked cgroups): the figure of both on 10,000 tracked
 * cgroups is printed. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "basic/util.h"
#include "history-charges-walk.h"
#include "history-recorder.h"
#include "percpu/counter.h"

/* The "ledger" of a test: tracked paths, live or removed, each with an inode. */
struct tracked {
	char **paths;
	bool *dead;
	size_t n;
	size_t bounds_calls;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool life_of(const char *path, uint64_t *ret_inode, void *userdata)
{
	struct tracked *t = userdata;
	char **p = bsearch(&path, t->paths, t->n, sizeof(*t->paths), cmp_str);
	if (!p || t->dead[p - t->paths])
		return false;
	*ret_inode = 1000 + (uint64_t)(p - t->paths);
	return true;
}

/* A slot of resource 1 at /s/0 (bound 7), read by /s/0 and its ancestors. */
static void slot_bounds(size_t res, const char *path, struct acct_charge_reading *r, void *userdata)
{
	struct tracked *t = userdata;
	t->bounds_calls++;
	if (res == 1 && (strcmp(path, "/s/0") == 0 || strcmp(path, "/s") == 0 || strcmp(path, "/") == 0))
		r->subtree.bound += 7;
}

/* The recording's charged values as they were taken before the walk: every
 * live tracked cgroup looked up for every resource. */
static int lookup_all(struct acct_charges *ch, struct tracked *t, struct history_charge_sample **ret)
{
	size_t nres = acct_charges_nr_resources(ch), k = 0;
	struct history_charge_sample *c = calloc(t->n * nres + 1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	for (size_t res = 0; res < nres; res++)
		for (size_t i = 0; i < t->n; i++) {
			struct acct_charge_reading rd;
			uint64_t inode;
			if (!life_of(t->paths[i], &inode, t) || acct_charges_read(ch, res, t->paths[i], &rd) < 0)
				continue;
			slot_bounds(res, t->paths[i], &rd, t);
			c[k++] = (struct history_charge_sample){ .key = { .path = strdup(t->paths[i]), .inode = inode },
								 .resource = strdup(acct_charges_resource(ch, res)->name),
								 .value = rd.subtree.value,
								 .bound = (int64_t)rd.subtree.bound };
		}
	*ret = c;
	return (int)k;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct history_charge_sample *x = a, *y = b;
	int r = strcmp(x->resource, y->resource);
	return r ? r : strcmp(x->key.path, y->key.path);
}

static void assert_same(struct history_charge_sample *a, int na, struct history_charge_sample *b, int nb)
{
	assert_int_equal(na, nb);
	if (na == 0)
		return;
	qsort(a, (size_t)na, sizeof(*a), cmp_sample);
	qsort(b, (size_t)nb, sizeof(*b), cmp_sample);
	for (int i = 0; i < na; i++) {
		assert_string_equal(a[i].key.path, b[i].key.path);
		assert_string_equal(a[i].resource, b[i].resource);
		assert_int_equal(a[i].key.inode, b[i].key.inode);
		assert_int_equal(a[i].value, b[i].value);
		assert_int_equal(a[i].bound, b[i].bound);
	}
}

/* "/", /s, /s/0 .. /s/(n-2): n tracked cgroups, sorted. */
static void tracked_make(struct tracked *t, size_t n)
{
	t->paths = calloc(n, sizeof(*t->paths));
	t->dead = calloc(n, sizeof(*t->dead));
	assert_non_null(t->paths);
	assert_non_null(t->dead);
	t->paths[0] = strdup("/");
	t->paths[1] = strdup("/s");
	for (size_t i = 2; i < n; i++) {
		char buf[32];
		snprintf(buf, sizeof(buf), "/s/%zu", i - 2);
		t->paths[i] = strdup(buf);
	}
	t->n = n;
	qsort(t->paths, n, sizeof(*t->paths), cmp_str);
}

static void tracked_free(struct tracked *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->paths[i]);
	free(t->paths);
	free(t->dead);
}

static void test_same_as_lookup(void **state)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;
	const struct acct_charges_resource res[] = { { "gpu", 0, false, 0, false }, { "inflight", 16, true, 1, false },
						     { "idle", 0, false, 0, false } };
	struct acct_charges *ch = NULL;
	struct tracked t = { 0 };
	struct history_charge_sample *a = NULL, *b = NULL;

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	tracked_make(&t, 102);

	/* nothing charged: none, and NULL */
	int na = history_charges_walk(ch, life_of, slot_bounds, &t, &a);
	assert_int_equal(na, 0);
	assert_null(a);

	assert_int_equal(acct_charges_add(ch, 0, "/s/0", 4096), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/s/7", -5), 0);
	assert_int_equal(acct_charges_add(ch, 1, "/s/0", 3), 0);
	assert_int_equal(acct_charges_add(ch, 1, "/s/99", 100), 0);
	/* charged below a cgroup that is not tracked (a state file's gone parent) */
	assert_int_equal(acct_charges_add(ch, 0, "/gone/x", 1), 0);
	/* a removed one, its tombstone still in the ledger */
	assert_int_equal(acct_charges_add(ch, 1, "/s/50", 9), 0);
	char *key = "/s/50", **p = bsearch(&key, t.paths, t.n, sizeof(*t.paths), cmp_str);
	assert_non_null(p);
	t.dead[p - t.paths] = true;

	na = history_charges_walk(ch, life_of, slot_bounds, &t, &a);
	int nb = lookup_all(ch, &t, &b);
	/* gpu: /, /s, /s/0, /s/7; inflight: /, /s, /s/0, /s/99 (not /s/50, removed, nor /gone) */
	assert_int_equal(na, 8);
	assert_same(a, na, b, nb);
	for (int i = 0; i < na; i++) {
		if (strcmp(a[i].key.path, "/") == 0 && strcmp(a[i].resource, "gpu") == 0)
			assert_int_equal(a[i].value, 4096 - 5 + 1); /* /gone/x's too: the root's subtree */
		if (strcmp(a[i].key.path, "/s/0") == 0 && strcmp(a[i].resource, "inflight") == 0)
			assert_true(a[i].bound >= 7); /* the slot's added to the engine's */
	}
	history_charge_samples_free(a, (size_t)na);
	history_charge_samples_free(b, (size_t)nb);

	tracked_free(&t);
	acct_charges_free(ch);
	acct_domain_free(d);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 10,000 tracked cgroups, 20 charged with 3 resources: the walk's cost
 * follows the charged entries (66 here), the lookups' the tracked cgroups
 * (30,000 lookups). Printed, not asserted (a loaded machine stretches
 * both); the two results are compared. */
static void test_cost(void **state)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;
	const struct acct_charges_resource res[] = { { "a", 0, false, 0, false }, { "b", 16, false, 1, false },
						     { "c", 65536, false, 0, false } };
	struct acct_charges *ch = NULL;
	struct tracked t = { 0 };
	uint64_t walk_ns = UINT64_MAX, lookup_ns = UINT64_MAX;
	int na = 0, nb = 0;

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	tracked_make(&t, 10000);
	for (int k = 0; k < 20; k++)
		for (size_t r = 0; r < ELEMENTSOF(res); r++) {
			char buf[32];
			snprintf(buf, sizeof(buf), "/s/%d", k * 400);
			assert_int_equal(acct_charges_add(ch, r, buf, 4096), 0);
		}
	for (int rep = 0; rep < 5; rep++) {
		struct history_charge_sample *a = NULL, *b = NULL;
		uint64_t t0 = now_ns();
		na = history_charges_walk(ch, life_of, slot_bounds, &t, &a);
		uint64_t t1 = now_ns();
		nb = lookup_all(ch, &t, &b);
		uint64_t t2 = now_ns();
		walk_ns = MIN(walk_ns, t1 - t0);
		lookup_ns = MIN(lookup_ns, t2 - t1);
		assert_same(a, na, b, nb);
		history_charge_samples_free(a, (size_t)na);
		history_charge_samples_free(b, (size_t)nb);
	}
	assert_int_equal(na, 3 * (20 + 2));
	print_message("history charges of %zu tracked cgroups, %d charged values: walk %.1f us, "
		      "lookup of every tracked cgroup %.1f us (best of 5)\n",
		      t.n, na, (double)walk_ns / 1e3, (double)lookup_ns / 1e3);

	tracked_free(&t);
	acct_charges_free(ch);
	acct_domain_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_lookup),
		cmocka_unit_test(test_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
