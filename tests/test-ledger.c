/* test-ledger.c - the cgroup table: add, find, tombstones, sweep, values.
 *
 * It is long (a little over 1,000 lines) because every case shares the one
 * fixture of a ledger and its engine; the cases follow ledger.h's sections
 * (records, snapshots, values and bounds, ages and the steady epoch, the
 * CPU rate, reads). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc-fail.h"
#include "ledger.h"
#include "load.h"
#include "util.h"

struct fixture {
	struct acct_domain *d;
	struct acct_ledger *l;
};

/* The walks of the whole table (liburcu's cds_lfht_first(), wrapped at link
 * time: tests/meson.build), counted to see which calls walk it. */
static unsigned long table_walks;

void __real_cds_lfht_first(struct cds_lfht *ht, struct cds_lfht_iter *iter);
void __wrap_cds_lfht_first(struct cds_lfht *ht, struct cds_lfht_iter *iter);

void __wrap_cds_lfht_first(struct cds_lfht *ht, struct cds_lfht_iter *iter)
{
	table_walks++;
	__real_cds_lfht_first(ht, iter);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct acct_ledger_budgets b = { 1 << 20, 10000, 8 };
	assert_int_equal(acct_domain_new(NULL, &f->d), 0);
	assert_int_equal(acct_ledger_new(f->d, &b, &f->l), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	acct_ledger_free(f->l);
	acct_domain_free(f->d);
	free(f);
	return 0;
}

static struct acct_cgroup *add(struct fixture *f, const char *path, uint64_t now)
{
	struct acct_cgroup_id id = { .path = path, .depth = 1, .hierarchies = 1, .inode = { 42 } };
	struct acct_cgroup *cg = NULL;
	assert_int_equal(acct_ledger_add(f->l, &id, now, &cg), 0);
	return cg;
}

static void test_add_find(void **state)
{
	/* freeing nothing is allowed, as the manager's error paths do */
	assert_null(acct_ledger_free(NULL));

	struct fixture *f = *state;
	struct acct_cgroup *a = add(f, "/a", 1), *b = add(f, "/b", 1);
	struct acct_cgroup_id id = { .path = "/a", .depth = 1 };
	struct acct_cgroup *dup = NULL;
	uint64_t live, dead;

	assert_ptr_equal(acct_ledger_find(f->l, "/a"), a);
	assert_ptr_equal(acct_ledger_find(f->l, "/b"), b);
	assert_null(acct_ledger_find(f->l, "/c"));
	assert_int_equal(acct_ledger_add(f->l, &id, 2, &dup), -EEXIST);
	assert_ptr_equal(dup, a);
	acct_ledger_counts(f->l, &live, &dead);
	assert_int_equal(live, 2);
	assert_int_equal(dead, 0);
	assert_true(b->serial > a->serial);
}

static void test_tombstone_and_recreate(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *old = add(f, "/svc", 10), *cur;
	struct acct_reading rd;
	uint64_t live, dead;

	acct_cgroup_set(old, ACCT_Q_CPU_USAGE, 5000);
	acct_ledger_kill(f->l, old, 100);
	assert_true(acct_cgroup_is_dead(old));
	/* the final values stay */
	assert_true(acct_cgroup_get(old, ACCT_Q_CPU_USAGE, false, &rd));
	assert_int_equal(rd.value, 5000);
	assert_ptr_equal(acct_ledger_find(f->l, "/svc"), old);

	/* recreated under the same path: a new record, preferred by lookups */
	cur = add(f, "/svc", 200);
	assert_ptr_not_equal(cur, old);
	assert_ptr_equal(acct_ledger_find(f->l, "/svc"), cur);
	assert_false(acct_cgroup_get(cur, ACCT_Q_CPU_USAGE, false, &rd));
	acct_ledger_counts(f->l, &live, &dead);
	assert_int_equal(live, 1);
	assert_int_equal(dead, 1);

	struct acct_cgroup **v = NULL;
	assert_int_equal(acct_ledger_snapshot(f->l, true, &v), 2);
	assert_ptr_equal(v[0], cur); /* live before dead */
	assert_ptr_equal(v[1], old);
	free(v);
	assert_int_equal(acct_ledger_snapshot(f->l, false, &v), 1);
	free(v);

	/* retention not reached, then reached */
	assert_int_equal(acct_ledger_sweep(f->l, 150, 100, NULL, NULL), 0);
	assert_int_equal(acct_ledger_sweep(f->l, 300, 100, NULL, NULL), 1);
	acct_ledger_counts(f->l, &live, &dead);
	assert_int_equal(dead, 0);
	assert_ptr_equal(acct_ledger_find(f->l, "/svc"), cur);
}

static void test_values(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/x", 1);
	struct acct_reading rd;

	assert_false(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &rd));
	acct_cgroup_set(cg, ACCT_Q_MEMORY, 64 << 20);
	acct_cgroup_set(cg, ACCT_Q_MEMORY, 63 << 20);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &rd));
	assert_int_equal(rd.value, 63 << 20);
	assert_int_equal(rd.bound, 0);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &rd));
	assert_int_equal(rd.value, 63 << 20);

	assert_int_equal(acct_cgroup_set_node(cg, 0, 1000), 0);
	assert_int_equal(acct_cgroup_set_node(cg, 0, 700), 0);
	assert_int_equal(acct_counter_read_node(cg->numa, 0, &rd), 0);
	assert_int_equal(rd.value, 700);
	assert_int_equal(rd.bound, 0);

	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "anon 1", 4, 123), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "file", 4, 456), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "anon", 4, 124), 0);
	assert_int_equal(acct_ledger_memstat_count(f->l), 2);
	assert_string_equal(acct_ledger_memstat_key(f->l, 0), "anon");
	assert_int_equal(cg->memstat[0], 124);
	assert_int_equal(cg->memstat[1], 456);
	assert_null(acct_ledger_memstat_key(f->l, 2));

	acct_cgroup_set_double(&cg->cpu_rate_bits, 1.25);
	assert_true(acct_cgroup_get_double(&cg->cpu_rate_bits) == 1.25);
	assert_int_equal(acct_cgroup_age(cg, ACCT_GROUP_FAST, 10), UINT64_MAX);
	cg->sampled_us[ACCT_GROUP_FAST] = 4;
	assert_int_equal(acct_cgroup_age(cg, ACCT_GROUP_FAST, 10), 6);
}

static void test_set_checked(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/c", 1);
	struct acct_reading rd;

	/* the first reading of a cumulative quantity is taken as it is */
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, 1000), 0);
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, 1500), 0);
	/* backwards: refused, the ledger keeps its value */
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, 1200), -ERANGE);
	assert_true(acct_cgroup_get(cg, ACCT_Q_CPU_USAGE, true, &rd));
	assert_int_equal(rd.value, 1500);
	/* a gauge may go down */
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_MEMORY, 10), 0);
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_MEMORY, 5), 0);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &rd));
	assert_int_equal(rd.value, 5);
	/* memory.stat keys are found by name once a cgroup reported them */
	assert_int_equal(acct_ledger_memstat_find(f->l, "inactive_file"), -ENOENT);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "inactive_file", 13, 7), 0);
	assert_int_equal(acct_ledger_memstat_find(f->l, "inactive_file"), 0);
}

/* The never-backwards rule at its boundary: back by exactly 1 is refused
 * (issue 17: the check loosened to `value + 1 < cur` went unnoticed with a
 * step back of 300), staying put and one forward are taken. */
static void test_set_checked_back_by_one(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/c", 1);
	struct acct_reading rd;

	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, 1000), 0);
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, 999), -ERANGE);
	assert_true(acct_cgroup_get(cg, ACCT_Q_CPU_USAGE, true, &rd));
	assert_int_equal(rd.value, 1000);
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, 1000), 0);
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, 1001), 0);
	assert_true(acct_cgroup_get(cg, ACCT_Q_CPU_USAGE, true, &rd));
	assert_int_equal(rd.value, 1001);
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, 1000), -ERANGE);
	/* every cumulative quantity, not only CPU time; gauges go back freely */
	cg = add(f, "/d", 1);
	for (int q = 0; q < _ACCT_Q_MAX; q++) {
		bool cumulative = acct_quantity_info(q)->cumulative;

		assert_int_equal(acct_cgroup_set_checked(cg, q, 50), 0);
		assert_int_equal(acct_cgroup_set_checked(cg, q, 49), cumulative ? -ERANGE : 0);
		assert_true(acct_cgroup_get(cg, q, true, &rd));
		assert_int_equal(rd.value, cumulative ? 50 : 49);
	}
}

/* Not read before: the first reading is taken whatever the counter holds
 * (the contract says only a quantity read before is held to its past). */
static void test_set_checked_first_reading(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/c", 1);
	struct acct_reading rd;

	assert_false(acct_cgroup_get(cg, ACCT_Q_CPU_USAGE, true, &rd));
	assert_int_equal(acct_cgroup_set_checked(cg, ACCT_Q_CPU_USAGE, -1), 0);
	assert_true(acct_cgroup_get(cg, ACCT_Q_CPU_USAGE, true, &rd));
	assert_int_equal(rd.value, -1);
}

static void test_quantity_names(void **state)
{
	for (int q = 0; q < _ACCT_Q_MAX; q++) {
		const struct acct_quantity_info *i = acct_quantity_info(q);
		assert_non_null(i->name);
		assert_int_equal(acct_quantity_from_name(i->name), q);
	}
	assert_int_equal(acct_quantity_from_name("nope"), -ENOENT);
	assert_null(acct_quantity_info(_ACCT_Q_MAX));
}

/* Block I/O per device: devices interned once per ledger with their name,
 * values per cgroup, ACCT_IO_CG_DEVICES at most per cgroup. */
static void test_io_devices(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/io", 1);
	int64_t v[_ACCT_IO_STAT_MAX] = { 4096, 8192, 1, 2, -1, -1 };

	assert_int_equal(acct_ledger_io_device_find(f->l, 8, 0), -ENOENT);
	assert_int_equal(acct_ledger_io_device_add(f->l, 8, 0, "sda"), 0);
	assert_int_equal(acct_ledger_io_device_add(f->l, 8, 16, NULL), 1);
	assert_int_equal(acct_ledger_io_device_add(f->l, 8, 0, "other"), 0); /* the first name stays */
	assert_int_equal(acct_ledger_io_device_find(f->l, 8, 16), 1);
	assert_string_equal(acct_ledger_io_device(f->l, 0)->name, "sda");
	assert_string_equal(acct_ledger_io_device(f->l, 1)->name, "");
	assert_null(acct_ledger_io_device(f->l, 2));

	assert_null(cg->io);
	assert_int_equal(acct_cgroup_set_io_device(cg, 1, v), 0);
	v[0] = 5000;
	assert_int_equal(acct_cgroup_set_io_device(cg, 1, v), 0); /* same slot, new value */
	assert_int_equal(cg->io->n, 1);
	assert_int_equal(cg->io->dev[0].device, 1);
	assert_int_equal(cg->io->dev[0].v[ACCT_IO_READ_BYTES], 5000);
	assert_int_equal(cg->io->dev[0].v[ACCT_IO_DISCARD_BYTES], -1);
	for (unsigned d = 2; d < ACCT_IO_CG_DEVICES + 1; d++)
		assert_int_equal(acct_cgroup_set_io_device(cg, d, v), 0);
	assert_int_equal(cg->io->n, ACCT_IO_CG_DEVICES);
	assert_int_equal(acct_cgroup_set_io_device(cg, ACCT_IO_CG_DEVICES + 1, v), -ENOSPC);
	assert_int_equal(acct_cgroup_set_io_device(cg, ACCT_IO_DEVICES_MAX, v), -EINVAL);
	/* every value has a quantity holding its total */
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++)
		assert_int_equal(acct_quantity_from_name(acct_quantity_info(acct_io_stat_quantity(k))->name),
				 acct_io_stat_quantity(k));
	assert_string_equal(acct_quantity_info(acct_io_stat_quantity(ACCT_IO_WRITE_IOS))->name, "io.write_ios");
	assert_string_equal(acct_io_stat_name(ACCT_IO_DISCARD_BYTES), "discard_bytes");
	assert_null(acct_io_stat_name(_ACCT_IO_STAT_MAX));
}

static void test_budgets(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/b", 1);
	struct acct_ledger_budgets b = { 4096, 77, 3 }, got;
	struct acct_counter_stats st;

	acct_ledger_set_budgets(f->l, &b);
	acct_ledger_get_budgets(f->l, &got);
	assert_int_equal(got.bytes, 4096);
	acct_counter_stats(cg->q[ACCT_Q_MEMORY], &st);
	assert_int_equal(st.budget, 4096);
	acct_counter_stats(cg->q[ACCT_Q_CPU_USAGE], &st);
	assert_int_equal(st.budget, 77);
	acct_counter_stats(cg->q[ACCT_Q_TASKS], &st);
	assert_int_equal(st.budget, 3);
}

/* A ledger freed with 63, 64 (its first batch of records to free exactly
 * full), 65 and 129 records, some of them dead: every record freed once
 * (a record freed twice or not at all shows as a crash here or in ASan). */
static void test_free_many(void **state)
{
	static const unsigned sizes[] = { 63, 64, 65, 129 };
	(void)state;

	/* and out of memory at the first or the second allocation of its list
	 * of records: the records it cannot list go the slow way */
	for (size_t s = 0; s < 3 * ELEMENTSOF(sizes); s++) {
		struct fixture f = { 0 };
		struct acct_ledger_budgets b = { 1 << 20, 10000, 8 };

		assert_int_equal(acct_domain_new(NULL, &f.d), 0);
		assert_int_equal(acct_ledger_new(f.d, &b, &f.l), 0);
		for (unsigned i = 0; i < sizes[s % ELEMENTSOF(sizes)]; i++) {
			char path[32];

			snprintf(path, sizeof(path), "/r%u", i);
			struct acct_cgroup *cg = add(&f, path, 1);
			acct_cgroup_set(cg, ACCT_Q_MEMORY, i);
			if (i % 3 == 0)
				acct_ledger_kill(f.l, cg, 2);
		}
		if (s >= ELEMENTSOF(sizes))
			alloc_fail_after(s < 2 * ELEMENTSOF(sizes) ? 0 : 1);
		assert_null(acct_ledger_free(f.l));
		alloc_fail_off();
		acct_domain_free(f.d);
	}
}

struct visits {
	unsigned n, stop_at;
};

static int visit(struct acct_cgroup *cg, void *userdata)
{
	struct visits *v = userdata;

	(void)cg;
	return ++v->n == v->stop_at ? 7 : 0;
}

/* foreach visits every record, and stops at the first nonzero return, which
 * it returns. */
static void test_foreach_stops(void **state)
{
	struct fixture *f = *state;
	struct visits v = { 0 };

	add(f, "/a", 1);
	add(f, "/b", 1);
	add(f, "/c", 1);
	assert_int_equal(acct_ledger_foreach(f->l, visit, &v), 0);
	assert_int_equal(v.n, 3);
	v = (struct visits){ .stop_at = 2 };
	assert_int_equal(acct_ledger_foreach(f->l, visit, &v), 7);
	assert_int_equal(v.n, 2);
}

/* A snapshot is sorted by path; under one path the live record comes first,
 * then the dead ones, newest first. More than one allocation's worth (256). */
static void test_snapshot_order(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup **v = NULL, *old, *newer, *cur;
	char path[32];

	for (unsigned i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "/p%03u", (i * 7) % 300); /* added out of order */
		add(f, path, 1);
	}
	old = add(f, "/svc", 1);
	acct_ledger_kill(f->l, old, 2);
	newer = add(f, "/svc", 3);
	acct_ledger_kill(f->l, newer, 4);
	cur = add(f, "/svc", 5);
	add(f, "/a", 1);

	assert_int_equal(acct_ledger_snapshot(f->l, true, &v), 304);
	assert_string_equal(v[0]->path, "/a");
	for (unsigned i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "/p%03u", i);
		assert_string_equal(v[1 + i]->path, path);
	}
	assert_ptr_equal(v[301], cur);
	assert_ptr_equal(v[302], newer);
	assert_ptr_equal(v[303], old);
	free(v);
	assert_int_equal(acct_ledger_snapshot(f->l, false, &v), 302);
	assert_ptr_equal(v[301], cur);
	free(v);
}

/* A snapshot taken again while nothing changed is the same array (copied
 * from the ledger's cache); an add, a kill, a sweep and a fold each make
 * the next one see the change. */
static void test_snapshot_reuse(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup **v = NULL, **w = NULL;

	struct acct_cgroup *b = add(f, "/b", 1);
	add(f, "/a", 1);
	assert_int_equal(acct_ledger_snapshot(f->l, false, &v), 2);
	assert_int_equal(acct_ledger_snapshot(f->l, false, &w), 2);
	assert_ptr_not_equal(v, w); /* the caller's own copy */
	assert_memory_equal(v, w, 2 * sizeof(*v));
	free(v);
	free(w);

	add(f, "/c", 1);
	assert_int_equal(acct_ledger_snapshot(f->l, false, &v), 3);
	assert_string_equal(v[2]->path, "/c");
	free(v);
	acct_ledger_kill(f->l, b, 2);
	assert_int_equal(acct_ledger_snapshot(f->l, false, &v), 2);
	assert_string_equal(v[1]->path, "/c");
	free(v);
	assert_int_equal(acct_ledger_snapshot(f->l, true, &v), 3);
	free(v);
	assert_int_equal(acct_ledger_sweep(f->l, 10, 1, NULL, NULL), 1);
	assert_int_equal(acct_ledger_snapshot(f->l, true, &v), 2);
	free(v);
	acct_ledger_kill(f->l, acct_ledger_find(f->l, "/a"), 20);
	assert_int_equal(acct_ledger_snapshot(f->l, true, &v), 2);
	free(v);
	assert_int_equal(acct_ledger_fold_oldest(f->l, 0, NULL, NULL), 1);
	assert_int_equal(acct_ledger_snapshot(f->l, true, &v), 1);
	assert_string_equal(v[0]->path, "/c");
	free(v);
}

/* The reuse is what makes a pass on an unchanged tree cheap: a snapshot
 * taken again while nothing changed walks no table (and sorts nothing), for
 * either kind; a change makes the next one walk again, once. */
static void test_snapshot_reuse_walks_nothing(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup **v = NULL;

	add(f, "/b", 1);
	add(f, "/a", 1);
	for (int dead = 0; dead < 2; dead++) {
		unsigned long before = table_walks;

		assert_int_equal(acct_ledger_snapshot(f->l, dead, &v), 2);
		free(v);
		assert_int_equal(table_walks, before + 1);
		assert_int_equal(acct_ledger_snapshot(f->l, dead, &v), 2);
		assert_string_equal(v[0]->path, "/a");
		free(v);
		assert_int_equal(table_walks, before + 1);
	}
	add(f, "/c", 1);
	unsigned long before = table_walks;
	assert_int_equal(acct_ledger_snapshot(f->l, false, &v), 3);
	free(v);
	assert_int_equal(acct_ledger_snapshot(f->l, false, &v), 3);
	free(v);
	assert_int_equal(table_walks, before + 1);
}

struct released {
	unsigned n;
	struct acct_cgroup *cg[8];
};

static void note_release(struct acct_cgroup *cg, void *userdata)
{
	struct released *r = userdata;

	assert_true(r->n < ELEMENTSOF(r->cg));
	r->cg[r->n++] = cg;
}

/* Tombstones beyond the budget (acct_ledger_fold_oldest()): with more than
 * max dead records the oldest deaths go, whatever their order in the table
 * or by path, until max are left; the live ones stay, the dead count follows,
 * and at or under the budget nothing goes. */
static void test_fold_oldest_keeps_max(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *a = add(f, "/a", 1), *b = add(f, "/b", 1), *c = add(f, "/c", 1), *d = add(f, "/d", 1);
	struct released rel = { 0 };
	uint64_t live, dead;

	/* died in the order a, c, b: neither the order of adding nor of path */
	acct_ledger_kill(f->l, b, 30);
	acct_ledger_kill(f->l, a, 10);
	acct_ledger_kill(f->l, c, 20);
	assert_int_equal(acct_ledger_fold_oldest(f->l, 3, note_release, &rel), 0);
	assert_int_equal(rel.n, 0);

	assert_int_equal(acct_ledger_fold_oldest(f->l, 1, note_release, &rel), 2);
	assert_int_equal(rel.n, 2);
	assert_ptr_equal(rel.cg[0], a);
	assert_ptr_equal(rel.cg[1], c);
	acct_ledger_counts(f->l, &live, &dead);
	assert_int_equal(live, 1);
	assert_int_equal(dead, 1);
	assert_null(acct_ledger_find(f->l, "/a"));
	assert_null(acct_ledger_find(f->l, "/c"));
	assert_ptr_equal(acct_ledger_find(f->l, "/b"), b);
	assert_ptr_equal(acct_ledger_find(f->l, "/d"), d);

	/* at the budget now: nothing more goes */
	assert_int_equal(acct_ledger_fold_oldest(f->l, 1, note_release, &rel), 0);
	assert_int_equal(rel.n, 2);
	acct_ledger_counts(f->l, &live, &dead);
	assert_int_equal(dead, 1);
}

/* Out of memory for the list of tombstones: -ENOMEM and none removed (the
 * contract: the caller tries again at its next pass); then it goes through. */
static void test_fold_oldest_out_of_memory(void **state)
{
	struct fixture *f = *state;
	struct released rel = { 0 };
	uint64_t live, dead;

	for (unsigned i = 0; i < 3; i++) {
		char path[32];

		snprintf(path, sizeof(path), "/t%u", i);
		acct_ledger_kill(f->l, add(f, path, 1), 10 + i);
	}
	alloc_fail_after(0);
	assert_int_equal(acct_ledger_fold_oldest(f->l, 0, note_release, &rel), -ENOMEM);
	alloc_fail_off();
	assert_true(alloc_fail_hit());
	assert_int_equal(rel.n, 0);
	acct_ledger_counts(f->l, &live, &dead);
	assert_int_equal(dead, 3);
	assert_non_null(acct_ledger_find(f->l, "/t0"));

	assert_int_equal(acct_ledger_fold_oldest(f->l, 0, note_release, &rel), 3);
	acct_ledger_counts(f->l, &live, &dead);
	assert_int_equal(dead, 0);
}

/* ACCT_MEMSTAT_MAX distinct keys are kept; one more is refused and nothing
 * is written for it. */
static void test_memstat_full(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/m", 1);
	char key[32];

	for (unsigned i = 0; i < ACCT_MEMSTAT_MAX; i++) {
		snprintf(key, sizeof(key), "key%u", i);
		assert_int_equal(acct_cgroup_set_memstat(f->l, cg, key, strlen(key), i), 0);
	}
	assert_int_equal(acct_ledger_memstat_count(f->l), ACCT_MEMSTAT_MAX);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "one_more", 8, 5), -ENOSPC);
	assert_int_equal(acct_ledger_memstat_find(f->l, "one_more"), -ENOENT);
	assert_int_equal(acct_ledger_memstat_count(f->l), ACCT_MEMSTAT_MAX);
	/* a known key still takes a value */
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "key3", 4, 33), 0);
	assert_int_equal(cg->memstat[3], 33);
	for (unsigned i = 0; i < ACCT_MEMSTAT_MAX; i++)
		if (i != 3)
			assert_int_equal(cg->memstat[i], i);
}

/* The kernel's own bound is added to every read's bound, and saturates. */
static void test_kernel_bound(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/k", 1);
	struct acct_reading rd;

	acct_cgroup_set(cg, ACCT_Q_MEMORY, 1000);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &rd));
	assert_int_equal(rd.bound, 0);
	acct_cgroup_set_kernel_bound(cg, ACCT_Q_MEMORY, 5);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &rd));
	assert_int_equal(rd.value, 1000);
	assert_int_equal(rd.bound, 5);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &rd));
	assert_int_equal(rd.value, 1000);
	assert_int_equal(rd.bound, 5);
	acct_cgroup_set_kernel_bound(cg, ACCT_Q_MEMORY, UINT64_MAX);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &rd));
	assert_true(rd.bound == UINT64_MAX);
	/* a sharded counter's approximate read has a bound of its own: the two
	 * add up, saturating */
	struct acct_counter_stats st;
	assert_int_equal(acct_counter_upgrade(cg->q[ACCT_Q_MEMORY]), 0);
	acct_counter_stats(cg->q[ACCT_Q_MEMORY], &st);
	assert_true(st.bound > 0);
	acct_cgroup_set_kernel_bound(cg, ACCT_Q_MEMORY, 5);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &rd));
	assert_int_equal(rd.value, 1000);
	assert_int_equal(rd.bound, st.bound + 5);
	acct_cgroup_set_kernel_bound(cg, ACCT_Q_MEMORY, UINT64_MAX - st.bound);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &rd));
	assert_true(rd.bound == UINT64_MAX);
	acct_cgroup_set_kernel_bound(cg, ACCT_Q_MEMORY, UINT64_MAX - st.bound + 1);
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &rd));
	assert_true(rd.bound == UINT64_MAX);
	/* other quantities keep their own */
	acct_cgroup_set(cg, ACCT_Q_CPU_USAGE, 1);
	assert_true(acct_cgroup_get(cg, ACCT_Q_CPU_USAGE, true, &rd));
	assert_int_equal(rd.bound, 0);
}

/* Out of memory at each allocation of an add in turn: -ENOMEM and no trace
 * in the ledger, until the add goes through. The first add of a fresh
 * domain also grows its counter memory (the counters' allocations fail too). */
static void test_add_out_of_memory(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup_id id = { .path = "/oom", .depth = 1, .hierarchies = 1 };
	uint64_t live, dead;
	unsigned failures = 0;
	int r;

	for (unsigned n = 0;; n++) {
		struct acct_cgroup *cg = NULL;

		alloc_fail_after(n);
		r = acct_ledger_add(f->l, &id, 1, &cg);
		alloc_fail_off();
		if (r == 0) {
			assert_false(alloc_fail_hit());
			assert_ptr_equal(acct_ledger_find(f->l, "/oom"), cg);
			break;
		}
		failures++;
		assert_int_equal(r, -ENOMEM);
		assert_null(acct_ledger_find(f->l, "/oom"));
		acct_ledger_counts(f->l, &live, &dead);
		assert_int_equal(live, 0);
		assert_true(n < 1000);
	}
	/* the record, its path and the counter memory at least */
	assert_true(failures >= 3);
	add(f, "/other", 1);
	acct_ledger_counts(f->l, &live, &dead);
	assert_int_equal(live, 2);
}

/* Out of memory in the other allocating calls: -ENOMEM, nothing changed. */
static void test_values_out_of_memory(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/v", 1), **v = NULL;
	int64_t io[_ACCT_IO_STAT_MAX] = { 1, 2, 3, 4, 5, 6 };

	alloc_fail_after(0);
	assert_int_equal(acct_ledger_snapshot(f->l, true, &v), -ENOMEM);
	alloc_fail_off();
	assert_null(v);

	/* a new key, then the cgroup's first value array */
	alloc_fail_after(0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "anon", 4, 1), -ENOMEM);
	alloc_fail_off();
	assert_int_equal(acct_ledger_memstat_find(f->l, "anon"), -ENOENT);
	alloc_fail_after(1);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "anon", 4, 1), -ENOMEM);
	alloc_fail_off();
	assert_null(cg->memstat);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "anon", 4, 1), 0);
	assert_int_equal(cg->memstat[0], 1);

	alloc_fail_after(0);
	assert_int_equal(acct_cgroup_set_io_device(cg, 0, io), -ENOMEM);
	alloc_fail_off();
	assert_null(cg->io);
	assert_int_equal(acct_cgroup_set_io_device(cg, 0, io), 0);
	assert_int_equal(cg->io->dev[0].v[5], 6);
}

/* acct_cgroup_read(): what a record serves, copied; only what was asked. */
/* Lazy decay (ledger.h, acct_cgroup_set_cpu_rate()): the averages are served
 * decayed over the idle time the sampler noted since they were set, once,
 * and over that time only: not the reader's clock, not twice, not from the
 * first idle note. */
static void test_cpu_rate_lazy_decay(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/lazy", 1);
	static const double tau[3] = { 60e6, 300e6, 900e6 };
	const double avg[3] = { 0.75, 0.5, 0.25 };
	const uint64_t t0 = 1000000000;
	struct acct_cgroup_values cv;

	acct_cgroup_set_cpu_rate(cg, 0.875, avg, t0);
	acct_cgroup_mark_cpu_rate_known(cg);
	/* read long after: no idle time noted, nothing decays */
	acct_cgroup_read(cg, ACCT_READ_CPU_RATE, t0 + 500000000, &cv);
	assert_true(cv.cpu_rate_known);
	assert_true(cv.cpu_rate == 0.875);
	for (int a = 0; a < 3; a++)
		assert_true(cv.cpu_rate_avg[a] == avg[a]);

	/* idle until t0 + 10 s, then t0 + 25 s: decayed over 25 s */
	acct_cgroup_cpu_rate_idle(cg, t0 + 10000000);
	acct_cgroup_cpu_rate_idle(cg, t0 + 25000000);
	for (uint64_t now = t0 + 25000000; now < t0 + 1000000000; now += 300000000) {
		acct_cgroup_read(cg, ACCT_READ_CPU_RATE | ACCT_READ_LIST_ROW, now, &cv);
		assert_true(cv.cpu_rate == 0.0);
		for (int a = 0; a < 3; a++) {
			double want = avg[a] * exp(-25e6 / tau[a]);
			assert_true(fabs(cv.cpu_rate_avg[a] - want) <= 1e-15 * want);
		}
	}
	/* what the eager decay (one update of rate 0 per idle pass) gave */
	struct acct_rate_avg eager = { { avg[0], avg[1], avg[2] }, true };
	acct_rate_avg_update(&eager, 0.0, 10000000);
	acct_rate_avg_update(&eager, 0.0, 15000000);
	for (int a = 0; a < 3; a++)
		assert_true(fabs(cv.cpu_rate_avg[a] - eager.avg[a]) <= 1e-14 * eager.avg[a]);

	/* a new reading sets them anew: no decay until the next idle note */
	const double avg2[3] = { 2.0, 1.5, 1.0 };
	acct_cgroup_set_cpu_rate(cg, 2.5, avg2, t0 + 26000000);
	acct_cgroup_read(cg, ACCT_READ_CPU_RATE, t0 + 90000000, &cv);
	assert_true(cv.cpu_rate == 2.5);
	for (int a = 0; a < 3; a++)
		assert_true(cv.cpu_rate_avg[a] == avg2[a]);
	acct_cgroup_cpu_rate_idle(cg, t0 + 86000000);
	acct_cgroup_read(cg, ACCT_READ_CPU_RATE, t0 + 90000000, &cv);
	for (int a = 0; a < 3; a++) {
		double want = avg2[a] * exp(-60e6 / tau[a]);
		assert_true(fabs(cv.cpu_rate_avg[a] - want) <= 1e-15 * want);
	}
	/* days idle: the averages reach 0, as the eager decay's did */
	acct_cgroup_cpu_rate_idle(cg, t0 + 86000000 + 30ULL * 86400 * 1000000);
	acct_cgroup_read(cg, ACCT_READ_CPU_RATE, 0, &cv);
	for (int a = 0; a < 3; a++)
		assert_true(cv.cpu_rate_avg[a] == 0.0);
}

/* The five fields of the CPU rate are one reading (cpu_rate_seq): a reader
 * racing the writer never applies one reading's idle time to another's
 * averages. Reading k sets all three averages to k and then notes k % 7 + 1
 * seconds idle, so a served triple must be k decayed by exactly that (or not
 * at all); a torn copy gives k decayed by another reading's time. */
struct seq_race {
	struct acct_cgroup *cg;
	unsigned n;
	unsigned reads; /* atomic */
	bool done;      /* atomic */
};

static void *seq_writer(void *arg)
{
	struct seq_race *r = arg;
	/* until the reader has read a while (a busy machine may run the two
	 * one after the other for a long time) */
	for (unsigned k = 1; k <= r->n || __atomic_load_n(&r->reads, __ATOMIC_RELAXED) < 1000000; k++) {
		const double avg[3] = { k, k, k };
		uint64_t at = (uint64_t)k * 1000000000;
		acct_cgroup_set_cpu_rate(r->cg, k, avg, at);
		acct_cgroup_cpu_rate_idle(r->cg, at + (uint64_t)(k % 7 + 1) * 1000000);
	}
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static bool seq_consistent(const double v[3])
{
	static const double tau[3] = { 60.0, 300.0, 900.0 };
	if (v[0] == 0.0 && v[1] == 0.0 && v[2] == 0.0)
		return true; /* before the first reading */
	if (v[0] == v[1] && v[1] == v[2] && v[0] == round(v[0]))
		return true; /* set, not decayed yet */
	for (unsigned j = 1; j <= 7; j++) {
		double kj = round(v[2] * exp(j / tau[2]));
		if ((unsigned)kj % 7 + 1 != j)
			continue;
		bool ok = true;
		for (int a = 0; a < 3; a++)
			ok = ok && fabs(v[a] - kj * exp(-(double)j / tau[a])) <= 1e-9 * kj;
		if (ok)
			return true;
	}
	return false;
}

static void test_cpu_rate_seq(void **state)
{
	struct fixture *f = *state;
	struct seq_race r = { .cg = add(f, "/seq", 1), .n = 200000 };
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, seq_writer, &r), 0);
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		struct acct_cgroup_values cv;
		acct_cgroup_read(r.cg, ACCT_READ_CPU_RATE, 0, &cv);
		if (!seq_consistent(cv.cpu_rate_avg))
			fail_msg("a torn copy: %.17g %.17g %.17g", cv.cpu_rate_avg[0], cv.cpu_rate_avg[1],
				 cv.cpu_rate_avg[2]);
		__atomic_fetch_add(&r.reads, 1, __ATOMIC_RELAXED);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* One stamp for the page counters read together (acct_cgroup_set_sampled_set()):
 * the quantities of its mask are as young as it, the others keep their age. */
static void test_sampled_set(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/set", 1);
	uint64_t mask = (UINT64_C(1) << ACCT_Q_MEMORY) | (UINT64_C(1) << ACCT_Q_SWAP);

	cg->sampled_us[ACCT_GROUP_FAST] = 100;
	cg->sampled_us[ACCT_GROUP_SLOW] = 50;
	acct_cgroup_set_sampled(cg, ACCT_Q_MEMORY_MAX, 120);
	acct_cgroup_set_sampled_set(cg, mask, 200);
	assert_int_equal(acct_cgroup_quantity_sampled(cg, ACCT_Q_MEMORY), 200);
	assert_int_equal(acct_cgroup_quantity_age(cg, ACCT_Q_SWAP, 250), 50);
	assert_int_equal(acct_cgroup_quantity_sampled(cg, ACCT_Q_MEMORY_MAX), 120);
	assert_true(acct_cgroup_quantity_sampled(cg, ACCT_Q_CPU_USAGE) < 200);
	/* a younger own stamp or group stamp wins */
	acct_cgroup_set_sampled(cg, ACCT_Q_MEMORY, 300);
	assert_int_equal(acct_cgroup_quantity_sampled(cg, ACCT_Q_MEMORY), 300);
	/* a narrower mask leaves the dropped quantity's age as it was read */
	acct_cgroup_set_sampled_set(cg, UINT64_C(1) << ACCT_Q_MEMORY, 400);
	assert_int_equal(acct_cgroup_quantity_sampled(cg, ACCT_Q_MEMORY), 400);
	assert_true(acct_cgroup_quantity_sampled(cg, ACCT_Q_SWAP) < 400);
}

/* Steady cgroups (ledger.h): a member's fast group stamp, set stamp and CPU
 * rate's idle time follow the epoch's time; nothing else does, not a
 * non-member's, not after it left, not after a new generation. */
static void test_steady_epoch(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *a = add(f, "/steady-a", 1), *b = add(f, "/steady-b", 1);
	uint64_t mask = UINT64_C(1) << ACCT_Q_MEMORY_PEAK;
	const double avg[3] = { 0.5, 0.25, 0.125 };
	struct acct_cgroup_values cv;

	for (int i = 0; i < 2; i++) {
		struct acct_cgroup *cg = i ? b : a;
		acct_cgroup_set_group_sampled(cg, ACCT_GROUP_FAST, 1000);
		acct_cgroup_set_group_sampled(cg, ACCT_GROUP_SLOW, 1000);
		acct_cgroup_set_sampled_set(cg, mask, 1000);
		acct_cgroup_set_cpu_rate(cg, 0.0, avg, 900);
		acct_cgroup_mark_cpu_rate_known(cg);
		acct_cgroup_cpu_rate_idle(cg, 1000);
	}
	/* an epoch with no time yet, and a member: its own stamps */
	acct_cgroup_steady_join(a);
	assert_int_equal(acct_cgroup_steady_us(a), 0);
	assert_int_equal(acct_cgroup_get_group_sampled(a, ACCT_GROUP_FAST), 1000);
	/* advanced: the member's fast group, set stamp and idle time follow it */
	acct_ledger_steady_advance(f->l, 5000);
	assert_int_equal(acct_cgroup_steady_us(a), 5000);
	assert_int_equal(acct_cgroup_steady_us(b), 0);
	assert_int_equal(acct_cgroup_get_group_sampled(a, ACCT_GROUP_FAST), 5000);
	assert_int_equal(acct_cgroup_age(a, ACCT_GROUP_FAST, 6000), 1000);
	assert_int_equal(acct_cgroup_age(b, ACCT_GROUP_FAST, 6000), 5000);
	assert_int_equal(acct_cgroup_age(a, ACCT_GROUP_SLOW, 6000), 5000); /* not the slow group */
	assert_int_equal(acct_cgroup_quantity_sampled(a, ACCT_Q_MEMORY_PEAK), 5000); /* the set stamp */
	assert_int_equal(acct_cgroup_quantity_sampled(b, ACCT_Q_MEMORY_PEAK), 1000);
	assert_int_equal(acct_cgroup_quantity_sampled(a, ACCT_Q_CPU_USAGE), 5000); /* a fast group quantity */
	assert_int_equal(acct_cgroup_quantity_sampled(a, ACCT_Q_MEMORY_MAX), 1000); /* slow, not in the set */
	acct_cgroup_read(a, ACCT_READ_CPU_RATE, 6000, &cv);
	assert_int_equal(cv.age[ACCT_GROUP_FAST], 1000);
	for (int k = 0; k < 3; k++)
		assert_true(fabs(cv.cpu_rate_avg[k] - acct_rate_avg_decayed(avg[k], k, 4100)) <= 1e-15);
	acct_cgroup_read(b, ACCT_READ_CPU_RATE, 6000, &cv);
	for (int k = 0; k < 3; k++)
		assert_true(fabs(cv.cpu_rate_avg[k] - acct_rate_avg_decayed(avg[k], k, 100)) <= 1e-15);
	/* never backwards */
	acct_ledger_steady_advance(f->l, 4000);
	assert_int_equal(acct_cgroup_steady_us(a), 5000);
	/* a rate that is not 0 is not idle until the epoch's time: as set, undecayed */
	acct_cgroup_set_cpu_rate(a, 1.0, avg, 900);
	acct_cgroup_read(a, ACCT_READ_CPU_RATE, 6000, &cv);
	assert_true(cv.cpu_rate == 1.0);
	for (int k = 0; k < 3; k++)
		assert_true(cv.cpu_rate_avg[k] == avg[k]);
	/* left: its own stamps again */
	acct_cgroup_steady_leave(a);
	assert_int_equal(acct_cgroup_get_group_sampled(a, ACCT_GROUP_FAST), 1000);
	assert_int_equal(acct_cgroup_quantity_sampled(a, ACCT_Q_MEMORY_PEAK), 1000);
	/* a new generation takes every member out */
	acct_cgroup_steady_join(a);
	acct_cgroup_steady_join(b);
	assert_int_equal(acct_cgroup_steady_us(b), 5000);
	acct_ledger_steady_reset(f->l);
	acct_ledger_steady_advance(f->l, 7000);
	assert_int_equal(acct_cgroup_steady_us(a), 0);
	assert_int_equal(acct_cgroup_steady_us(b), 0);
	assert_int_equal(acct_cgroup_get_group_sampled(b, ACCT_GROUP_FAST), 1000);
	/* a member of the new one follows, until its death */
	acct_cgroup_steady_join(b);
	assert_int_equal(acct_cgroup_get_group_sampled(b, ACCT_GROUP_FAST), 7000);
	acct_ledger_kill(f->l, b, 7500);
	assert_int_equal(acct_cgroup_steady_us(b), 0);
	assert_int_equal(acct_cgroup_get_group_sampled(b, ACCT_GROUP_FAST), 1000);
}

static void test_read(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *cg = add(f, "/r", 1);
	struct acct_cgroup_values cv;
	int64_t io[_ACCT_IO_STAT_MAX] = { 10, 20, 1, 2, -1, -1 };
	double motion = -1;

	/* nothing read yet */
	memset(&cv, 0xaa, sizeof(cv));
	acct_cgroup_read(cg, ACCT_READ_ALL, 10, &cv);
	for (int g = 0; g < _ACCT_GROUP_MAX; g++)
		assert_int_equal(cv.age[g], UINT64_MAX);
	assert_false(cv.dead);
	assert_int_equal(cv.died_us, 0);
	assert_true(cv.populated); /* until cgroup.events says otherwise */
	assert_int_equal(cv.hierarchies, 1);
	assert_int_equal(cv.sample_errors, 0);
	assert_false(cv.cpu_rate_known);
	assert_false(cv.io_rate_known);
	assert_false(cv.memory_motion_known);
	for (int r = 0; r < _ACCT_PSI_MAX; r++)
		assert_false(cv.psi_known[r]);
	assert_null(cv.memstat);
	assert_int_equal(acct_memstat_value(cv.memstat, 0), -1);
	assert_false(cv.numa_known);
	assert_false(cv.has_io);
	assert_int_equal(cv.nr_io, 0);
	assert_false(acct_cgroup_quantity_known(cg, ACCT_Q_MEMORY));
	assert_false(acct_cgroup_motion(cg, ACCT_Q_MEMORY, &motion));
	assert_false(acct_cgroup_motion(cg, ACCT_Q_CPU_USAGE, &motion));
	assert_true(motion == -1); /* not written */

	/* what the sampler stores */
	acct_cgroup_set(cg, ACCT_Q_MEMORY, 4096);
	acct_cgroup_set_double(&cg->cpu_rate_bits, 0.5);
	for (int a = 0; a < 3; a++)
		acct_cgroup_set_double(&cg->cpu_rate_avg_bits[a], a + 0.25);
	cg->cpu_rate_known = true;
	acct_cgroup_set_double(&cg->io_rate_bits[ACCT_IO_WRITE_BYTES], 300.0);
	cg->io_rate_known = true;
	acct_cgroup_set_double(&cg->memory_motion_bits, 1e6);
	cg->memory_motion_known = true;
	cg->loadavg[1] = 2048;
	cg->psi_avg[ACCT_PSI_IO][ACCT_PSI_FULL][2] = 1234;
	cg->psi_known[ACCT_PSI_IO] = true;
	cg->populated = false;
	cg->sample_errors = 3;
	cg->memstat_bound = 8192;
	cg->numa_us = 7;
	cg->sampled_us[ACCT_GROUP_FAST] = 4;
	cg->sampled_us[ACCT_GROUP_LOAD] = 10;
	assert_int_equal(acct_cgroup_set_node(cg, 0, 100), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "anon", 4, 123), 0);
	assert_int_equal(acct_ledger_io_device_add(f->l, 8, 0, "sda"), 0);
	assert_int_equal(acct_ledger_io_device_add(f->l, 8, 16, "sdb"), 1);
	assert_int_equal(acct_cgroup_set_io_device(cg, 1, io), 0);
	acct_ledger_kill(f->l, cg, 9);

	acct_cgroup_read(cg, ACCT_READ_ALL, 12, &cv);
	assert_int_equal(cv.age[ACCT_GROUP_FAST], 8);
	assert_int_equal(cv.age[ACCT_GROUP_SLOW], UINT64_MAX);
	assert_int_equal(cv.age[ACCT_GROUP_LOAD], 2);
	assert_true(cv.dead);
	assert_int_equal(cv.died_us, 9);
	assert_false(cv.populated);
	assert_int_equal(cv.sample_errors, 3);
	assert_true(cv.cpu_rate_known && cv.cpu_rate == 0.5 && cv.cpu_rate_avg[2] == 2.25);
	assert_true(cv.io_rate_known && cv.io_rate[ACCT_IO_WRITE_BYTES] == 300.0);
	assert_true(cv.memory_motion_known && cv.memory_motion == 1e6);
	assert_int_equal(cv.loadavg[1], 2048);
	assert_true(cv.psi_known[ACCT_PSI_IO]);
	assert_false(cv.psi_known[ACCT_PSI_CPU]);
	assert_int_equal(cv.psi_avg[ACCT_PSI_IO][ACCT_PSI_FULL][2], 1234);
	assert_non_null(cv.memstat);
	assert_int_equal(acct_memstat_value(cv.memstat, acct_ledger_memstat_find(f->l, "anon")), 123);
	assert_int_equal(acct_memstat_value(cv.memstat, 1), -1); /* a key it did not report */
	assert_int_equal(acct_memstat_value(cv.memstat, -ENOENT), -1);
	assert_int_equal(cv.memstat_bound, 8192);
	assert_true(cv.numa_known);
	assert_int_equal(cv.numa_us, 7);
	assert_true(cv.has_io);
	assert_int_equal(cv.nr_io, 1);
	assert_int_equal(cv.io[0].device, 1);
	assert_memory_equal(cv.io[0].v, io, sizeof(io));

	assert_true(acct_cgroup_quantity_known(cg, ACCT_Q_MEMORY));
	assert_false(acct_cgroup_quantity_known(cg, ACCT_Q_TASKS));
	assert_true(acct_cgroup_motion(cg, ACCT_Q_MEMORY, &motion) && motion == 1e6);
	assert_true(acct_cgroup_motion(cg, ACCT_Q_CPU_USAGE, &motion) && motion == 0.5e6);
	assert_false(acct_cgroup_motion(cg, ACCT_Q_TASKS, &motion));
	assert_int_equal(acct_cgroup_get_hierarchies(cg), 1);

	/* only what was asked is written: the ages always */
	memset(&cv, 0xaa, sizeof(cv));
	acct_cgroup_read(cg, ACCT_READ_LOAD, 12, &cv);
	assert_int_equal(cv.age[ACCT_GROUP_LOAD], 2);
	assert_int_equal(cv.loadavg[1], 2048);
	assert_int_equal(cv.sample_errors, UINT64_C(0xaaaaaaaaaaaaaaaa));
	assert_int_equal(cv.nr_io, 0xaaaaaaaau);
	assert_int_equal(cv.io[0].v[0], (int64_t)UINT64_C(0xaaaaaaaaaaaaaaaa));

	/* a List row: its part of the rates, load and pressure */
	cg->loadavg[0] = 1024;
	cg->psi_avg[ACCT_PSI_IO][ACCT_PSI_SOME][0] = 77;
	acct_cgroup_set_double(&cg->io_rate_bits[ACCT_IO_READ_BYTES], 100.0);
	memset(&cv, 0xaa, sizeof(cv));
	acct_cgroup_read(cg, ACCT_READ_LIST_ROW, 12, &cv);
	assert_true(cv.cpu_rate_known && cv.cpu_rate == 0.5);
	assert_true(cv.io_rate_known && cv.io_rate[ACCT_IO_READ_BYTES] == 100.0 &&
		    cv.io_rate[ACCT_IO_WRITE_BYTES] == 300.0);
	assert_int_equal(cv.loadavg[0], 1024);
	assert_true(cv.psi_known[ACCT_PSI_IO] && !cv.psi_known[ACCT_PSI_MEMORY]);
	assert_int_equal(cv.psi_avg[ACCT_PSI_IO][ACCT_PSI_SOME][0], 77);
	assert_int_equal(cv.loadavg[1], 0xaaaaaaaaaaaaaaaau); /* not a List row's */
	assert_int_equal(cv.psi_avg[ACCT_PSI_IO][ACCT_PSI_FULL][2], 0xaaaaaaaau);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_add_find, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_reuse_walks_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fold_oldest_keeps_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fold_oldest_out_of_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tombstone_and_recreate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_checked_back_by_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_checked_first_reading, setup, teardown),
		cmocka_unit_test(test_quantity_names),
		cmocka_unit_test_setup_teardown(test_io_devices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budgets, setup, teardown),
		cmocka_unit_test(test_free_many),
		cmocka_unit_test_setup_teardown(test_foreach_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memstat_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_add_out_of_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values_out_of_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_rate_lazy_decay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sampled_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady_epoch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_rate_seq, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
