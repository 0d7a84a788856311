/* test-charges-ram.c - unit tests of the reconciliation of charged RAM
 * against memory (lib/core/charges-ram.h): only ram resources count, their
 * subtree values summed per cgroup; a cgroup is flagged only beyond both
 * bounds, reported once when it becomes flagged and again after it cleared;
 * cgroups without memory are not compared; a cgroup charged below zero
 * beyond its bound (over-released) is flagged too; unexplained memory; the bounds
 * that readers outside the engine add (the daemon's charge slots) widen the
 * charged bound of both the check and a read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/charges-ram.h"
#include "percpu/counter.h"
#include "util.h"

/* The "kernel's" memory of the test: one value per path, bound 100. */
static const struct {
	const char *path;
	int64_t memory;
} memory_table[] = {
	{ "/", 1 << 20 },
	{ "/a", 10000 },
	{ "/a/b", 4000 },
};

static bool memory_of(const char *path, struct acct_reading *ret, void *userdata)
{
	(void)userdata;
	for (size_t i = 0; i < ELEMENTSOF(memory_table); i++)
		if (strcmp(memory_table[i].path, path) == 0) {
			*ret = (struct acct_reading){ memory_table[i].memory, 100 };
			return true;
		}
	return false;
}

struct flags_heard {
	char paths[8][32];
	size_t n;
};

static void heard(const struct acct_charges_ram_entry *e, void *userdata)
{
	struct flags_heard *h = userdata;
	assert_true(h->n < ELEMENTSOF(h->paths));
	strncpy(h->paths[h->n++], e->path, sizeof(h->paths[0]) - 1);
}

static const struct acct_charges_ram_entry *entry(struct acct_charges_ram *s, const char *path)
{
	size_t n;
	const struct acct_charges_ram_entry *e = acct_charges_ram_entries(s, &n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].path, path) == 0)
			return &e[i];
	fail_msg("no entry of %s", path);
	abort();
}

static void test_check(void **state)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;
	/* budgets 0: every read exact, bound 0 */
	const struct acct_charges_resource res[] = { { "arena", 0, false, 0, false }, { "gpu", 0, false, 0, false },
						     { "cache", 0, false, 0, false } };
	const bool ram[] = { true, false, true };
	struct acct_charges *ch = NULL;
	struct acct_charges_ram *s = NULL;
	struct flags_heard h = { 0 };
	struct acct_reading r;

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	assert_int_equal(acct_charges_ram_new(ch, ram, &s), 0);
	assert_true(acct_charges_ram_any(s));

	/* /a/b: 3000 + 1000 of RAM, and a non-RAM resource far above memory */
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 3000), 0);
	assert_int_equal(acct_charges_add(ch, 2, "/a/b", 1000), 0);
	assert_int_equal(acct_charges_add(ch, 1, "/a/b", 1 << 30), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/x", 5), 0); /* no memory known */
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(h.n, 0);
	assert_int_equal(acct_charges_ram_over(s), 0);
	const struct acct_charges_ram_entry *e = entry(s, "/a/b");
	assert_non_null(e);
	assert_int_equal(e->charged.value, 4000);
	assert_true(e->has_memory);
	r = acct_charges_ram_unexplained(&e->memory, &e->charged);
	assert_int_equal(r.value, 0);
	assert_int_equal(r.bound, 100);
	assert_int_equal(entry(s, "/a")->charged.value, 4000); /* the subtree's */
	assert_false(entry(s, "/x")->has_memory);
	assert_false(entry(s, "/x")->over);
	assert_int_equal(acct_charges_ram_read(s, "/a", true, &r), 0);
	assert_int_equal(r.value, 4000);
	assert_int_equal(acct_charges_ram_read(s, "/nothing", true, &r), -ENOENT);

	/* within the memory's bound: not flagged */
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 100), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_over(s), 0);
	/* beyond it: flagged, heard once; the parent (memory 10000) is not */
	assert_int_equal(acct_charges_add(ch, 2, "/a/b", 1), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(h.n, 1);
	assert_string_equal(h.paths[0], "/a/b");
	assert_int_equal(acct_charges_ram_over(s), 1);
	assert_true(entry(s, "/a/b")->over);
	assert_false(entry(s, "/a")->over);
	r = acct_charges_ram_unexplained(&entry(s, "/a/b")->memory, &entry(s, "/a/b")->charged);
	assert_int_equal(r.value, -101);
	/* cleared, then over again: heard again */
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", -1000), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_over(s), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 1000), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(h.n, 2);
	assert_int_equal(acct_charges_ram_checks(s), 6);

	acct_charges_ram_free(s);
	acct_charges_free(ch);
	acct_domain_free(d);
}

/* Over-released (charged below zero): flagged only beyond the charged
 * bound, with memory read or not (/x has none), heard once, cleared when
 * charged back; never "over memory" at once. */
static void test_below_zero(void **state)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;
	const struct acct_charges_resource res[] = { { "arena", 0, false, 0, false } };
	const bool ram[] = { true };
	struct acct_charges *ch = NULL;
	struct acct_charges_ram *s = NULL;
	struct flags_heard h = { 0 };

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	assert_int_equal(acct_charges_ram_new(ch, ram, &s), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 0), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/x", -1), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	/* the root's subtree holds /x's charge: both */
	assert_int_equal(h.n, 2);
	assert_string_equal(h.paths[0], "/");
	assert_string_equal(h.paths[1], "/x");
	assert_int_equal(acct_charges_ram_below_zero(s), 2);
	assert_true(entry(s, "/x")->below_zero);
	assert_false(entry(s, "/x")->has_memory);
	assert_false(entry(s, "/a/b")->below_zero);
	/* with memory: /a/b and its parent /a below zero, not over memory */
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", -5), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_below_zero(s), 4); /* /x, /a/b, /a and / */
	assert_true(entry(s, "/a/b")->below_zero);
	assert_false(entry(s, "/a/b")->over);
	assert_int_equal(acct_charges_ram_over(s), 0);
	assert_int_equal(h.n, 4);
	/* charged back: cleared */
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 5), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/x", 1), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_below_zero(s), 0);
	assert_int_equal(h.n, 4);

	acct_charges_ram_free(s);
	acct_charges_free(ch);
	acct_domain_free(d);
}

/* Within the charged bound (the hook's), a negative value is not flagged:
 * the truth may be 0 or above. */
static void bound_of_8(size_t res, const char *path, struct acct_charge_reading *r, void *userdata)
{
	(void)res, (void)path, (void)userdata;
	r->self.bound += 8;
	r->subtree.bound += 8;
}

static void test_below_zero_within_bound(void **state)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;
	const struct acct_charges_resource res[] = { { "arena", 0, false, 0, false } };
	const bool ram[] = { true };
	struct acct_charges *ch = NULL;
	struct acct_charges_ram *s = NULL;

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	assert_int_equal(acct_charges_ram_new(ch, ram, &s), 0);
	acct_charges_ram_set_bounds(s, bound_of_8, NULL);
	assert_int_equal(acct_charges_add(ch, 0, "/x", -8), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, NULL, NULL), 0);
	assert_int_equal(acct_charges_ram_below_zero(s), 0);
	assert_int_equal(acct_charges_add(ch, 0, "/x", -1), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, NULL, NULL), 0);
	assert_int_equal(acct_charges_ram_below_zero(s), 2); /* /x and the root */
	acct_charges_ram_free(s);
	acct_charges_free(ch);
	acct_domain_free(d);
}

static void test_no_ram(void **state)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;
	const struct acct_charges_resource res[] = { { "gpu", 0, false, 0, false } };
	struct acct_charges *ch = NULL;
	struct acct_charges_ram *s = NULL;
	size_t n;

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_charges_new(d, res, 1, &ch), 0);
	assert_int_equal(acct_charges_ram_new(ch, NULL, &s), 0);
	assert_false(acct_charges_ram_any(s));
	assert_int_equal(acct_charges_add(ch, 0, "/a", 1 << 30), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, NULL, NULL), 0);
	assert_null(acct_charges_ram_entries(s, &n));
	assert_int_equal(n, 0);
	assert_null(acct_charges_ram_free(s));
	assert_null(acct_charges_ram_free(NULL));
	acct_charges_free(ch);
	acct_domain_free(d);
}

/* The bounds hook of the test: 50 more on the ram resource 0's readings of
 * /a/b (a slot of /a/b) and of its ancestors' subtrees. */
static void slot_bounds(size_t res, const char *path, struct acct_charge_reading *r, void *userdata)
{
	size_t *calls = userdata;
	(*calls)++;
	if (res != 0)
		return;
	if (strcmp(path, "/a/b") == 0)
		r->self.bound += 50;
	if (strcmp(path, "/a/b") == 0 || strcmp(path, "/a") == 0 || strcmp(path, "/") == 0)
		r->subtree.bound += 50;
}

static void test_bounds_hook(void **state)
{
	struct acct_domain_options o = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d = NULL;
	const struct acct_charges_resource res[] = { { "arena", 0, false, 0, false }, { "cache", 0, false, 0, false } };
	const bool ram[] = { true, true };
	struct acct_charges *ch = NULL;
	struct acct_charges_ram *s = NULL;
	struct flags_heard h = { 0 };
	struct acct_reading r;
	size_t calls = 0;

	(void)state;
	assert_int_equal(acct_domain_new(&o, &d), 0);
	assert_int_equal(acct_charges_new(d, res, ELEMENTSOF(res), &ch), 0);
	assert_int_equal(acct_charges_ram_new(ch, ram, &s), 0);

	/* /a/b: 4130 charged against 4000 +/- 100 of memory: beyond the
	 * memory's bound and the engine's (0), within those and the slot's 50 */
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 4100), 0);
	assert_int_equal(acct_charges_add(ch, 1, "/a/b", 30), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_over(s), 1); /* the engine's bound alone */
	acct_charges_ram_set_bounds(s, slot_bounds, &calls);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_over(s), 0);
	assert_false(entry(s, "/a/b")->over);
	assert_int_equal(entry(s, "/a/b")->charged.value, 4130);
	assert_int_equal(entry(s, "/a/b")->charged.bound, 50); /* cache's reading got none */
	assert_int_equal(entry(s, "/a")->charged.bound, 50);
	/* one call per (ram resource, charged cgroup): /, /a, /a/b of both */
	assert_int_equal(calls, 6);
	r = acct_charges_ram_unexplained(&entry(s, "/a/b")->memory, &entry(s, "/a/b")->charged);
	assert_int_equal(r.value, -130);
	assert_int_equal(r.bound, 150);
	/* a read (Get's unexplained memory) adds them too */
	assert_int_equal(acct_charges_ram_read(s, "/a/b", false, &r), 0);
	assert_int_equal(r.value, 4130);
	assert_int_equal(r.bound, 50);
	/* beyond all three bounds: flagged with the hook too */
	assert_int_equal(acct_charges_add(ch, 0, "/a/b", 21), 0);
	assert_int_equal(acct_charges_ram_check(s, memory_of, NULL, heard, &h), 0);
	assert_int_equal(acct_charges_ram_over(s), 1);
	assert_true(entry(s, "/a/b")->over);
	/* without it again: the engine's bounds only */
	acct_charges_ram_set_bounds(s, NULL, NULL);
	assert_int_equal(acct_charges_ram_read(s, "/a/b", false, &r), 0);
	assert_int_equal(r.bound, 0);

	acct_charges_ram_free(s);
	acct_charges_free(ch);
	acct_domain_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_no_ram),
		cmocka_unit_test(test_below_zero),
		cmocka_unit_test(test_below_zero_within_bound),
		cmocka_unit_test(test_bounds_hook),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
