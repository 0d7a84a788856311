/* test-reconcile.c - reconciliation (lib/core/reconcile.c) as a module: each
 * invariant on both sides of its limit, on a ledger filled by hand and a
 * temporary cgroup-like v2 tree for the re-reads of suspects (read by the
 * real sampler, acct_sampler_read_memory()).
 *
 * The re-read takes each child twice and the parent twice around them, and
 * keeps each child's lower and the parent's higher reading: that matters
 * only when a value moves between two reads microseconds apart, which no
 * file of a temporary tree does and no real cgroup does on demand. The test
 * is linked with --wrap=acct_sampler_read_memory (tests/meson.build): the
 * wrapper records every re-read (which cgroups, in which order) and passes
 * it to the real function, except where a test scripts the readings. It is
 * also linked with --wrap=calloc, to fail an allocation on demand. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ledger.h"
#include "reconcile.h"
#include "sampler.h"
#include "test-tree.h"
#include "util.h"

#define MiB (INT64_C(1) << 20)
/* What the kernel's charge batching explains (reconcile.h): 1 MiB + 1%. */
#define SKEW(v) (MiB + (v) / 100)

/* ---- the re-reads -------------------------------------------------------- */

int __real_acct_sampler_read_memory(struct acct_sampler *s, struct acct_cgroup *cg, int64_t *ret_bytes);
int __wrap_acct_sampler_read_memory(struct acct_sampler *s, struct acct_cgroup *cg, int64_t *ret_bytes);

#define MAX_READS 512
static struct {
	const char *path[MAX_READS]; /* every re-read, in order */
	size_t n;
	const int64_t *script;       /* non-NULL: the readings to give, in order */
	size_t script_n;
} reads;

int __wrap_acct_sampler_read_memory(struct acct_sampler *s, struct acct_cgroup *cg, int64_t *ret_bytes)
{
	size_t i = reads.n++;
	if (i < MAX_READS)
		reads.path[i] = cg->path;
	if (reads.script) {
		assert_true(i < reads.script_n);
		if (reads.script[i] < 0)
			return (int)reads.script[i]; /* an errno; *ret_bytes untouched */
		*ret_bytes = reads.script[i];
		return 0;
	}
	return __real_acct_sampler_read_memory(s, cg, ret_bytes);
}

/* Allocation failures: the test is also linked with --wrap=calloc, and the
 * calloc_fail_in-th call from now fails (0: none). */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static unsigned calloc_fail_in;

void *__wrap_calloc(size_t n, size_t size)
{
	if (calloc_fail_in && --calloc_fail_in == 0)
		return NULL;
	return __real_calloc(n, size);
}

/* ---- fixture ----------------------------------------------------------------- */

struct fixture {
	char *base; /* the v2 tree */
	char *meminfo;
	struct acct_hierarchies L;
	struct acct_domain *domain;
	struct acct_ledger *ledger;
	struct acct_sampler *sampler;
	struct acct_reconcile_report rep;
	struct acct_cgroup **cgs; /* the last snapshot */
	int n;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->base = make_tmpdir("test-reconcile");
	f->meminfo = xjoin(f->base, "meminfo");
	f->L.mode = ACCT_CGROUP_UNIFIED;
	f->L.root = f->base;
	f->L.mount[ACCT_HIER_UNIFIED] = f->base;
	f->L.v2_memory = true;
	struct acct_ledger_budgets b = { 0 };
	assert_int_equal(acct_domain_new(NULL, &f->domain), 0);
	assert_int_equal(acct_ledger_new(f->domain, &b, &f->ledger), 0);
	struct acct_sampler_options o = { .layout = &f->L, .workers = 1, .nr_nodes = 1 };
	assert_int_equal(acct_sampler_new(&o, f->ledger, &f->sampler), 0);
	memset(&reads, 0, sizeof(reads));
	calloc_fail_in = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	free(f->cgs);
	struct acct_cgroup **all = NULL;
	int n = acct_ledger_snapshot(f->ledger, true, &all);
	for (int i = 0; i < n; i++)
		acct_sampler_release(all[i], f->sampler);
	free(all);
	acct_sampler_free(f->sampler);
	acct_ledger_free(f->ledger);
	acct_domain_free(f->domain);
	rm_rf(f->base);
	free(f->base);
	free(f->meminfo);
	free(f);
	return 0;
}

/* The cgroup at `path` (its directory made), its memory in the ledger and in
 * its memory.current; memory < 0: neither. */
/* A record only (no files): `memory` < 0 for none. */
static struct acct_cgroup *add_record(struct fixture *f, const char *path, int64_t memory)
{
	struct acct_cgroup *cg = NULL;
	unsigned depth = 0;
	for (const char *p = path; *p; p++)
		depth += *p == '/';
	if (strcmp(path, "/") == 0)
		depth = 0;
	struct acct_cgroup_id id = { .path = path, .depth = depth, .hierarchies = 1u << ACCT_HIER_UNIFIED };
	assert_int_equal(acct_ledger_add(f->ledger, &id, 1, &cg), 0);
	if (memory >= 0)
		acct_cgroup_set(cg, ACCT_Q_MEMORY, memory);
	return cg;
}

static struct acct_cgroup *add(struct fixture *f, const char *path, int64_t memory)
{
	struct acct_cgroup *cg = add_record(f, path, memory);
	bool root = strcmp(path, "/") == 0;
	if (!root)
		xmkdir(f->base, path + 1);
	if (memory >= 0) {
		char rel[256], text[32];
		snprintf(rel, sizeof(rel), "%s/memory.current", root ? "." : path + 1);
		snprintf(text, sizeof(text), "%" PRId64 "\n", memory);
		xwrite(f->base, rel, text);
	}
	return cg;
}

/* What the kernel says now (the re-read), not what the pass put in the ledger. */
static void set_file(struct fixture *f, const char *path, const char *text)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "%s/memory.current", path + 1);
	xwrite(f->base, rel, text);
}

static void set_file_value(struct fixture *f, const char *path, int64_t v)
{
	char text[32];
	snprintf(text, sizeof(text), "%" PRId64 "\n", v);
	set_file(f, path, text);
}

static void pass(struct fixture *f, const struct acct_pass_report *p, bool meminfo, bool hierarchical, bool reread)
{
	free(f->cgs);
	f->cgs = NULL;
	f->n = acct_ledger_snapshot(f->ledger, false, &f->cgs);
	assert_true(f->n >= 0);
	acct_reconcile_pass(f->ledger, f->cgs, (size_t)f->n, p, meminfo ? f->meminfo : NULL, hierarchical,
			    reread ? f->sampler : NULL, &f->rep);
}

/* A pass (with meminfo and the re-read) in which the k-th calloc fails. */
static void pass_failing(struct fixture *f, unsigned k)
{
	free(f->cgs);
	f->cgs = NULL;
	f->n = acct_ledger_snapshot(f->ledger, false, &f->cgs);
	assert_true(f->n >= 0);
	calloc_fail_in = k;
	acct_reconcile_pass(f->ledger, f->cgs, (size_t)f->n, NULL, f->meminfo, true, f->sampler, &f->rep);
	assert_int_equal(calloc_fail_in, 0); /* it did fail */
}

static uint64_t bound(struct acct_cgroup *cg)
{
	struct acct_reading rd;
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &rd));
	return rd.bound;
}

/* ---- children_memory ------------------------------------------------------ */

/* The children's sum may exceed the parent by their bounds + 1 MiB + 1% of
 * the parent and no more: at the limit no violation, one byte over one (judged
 * on the pass's values: no sampler to re-read). A tenfold allowance (10% of
 * the parent) lets the byte over pass. */
static void test_children_memory_limit(void **state)
{
	struct fixture *f = *state;
	const int64_t P = 1000 * MiB;
	struct acct_cgroup *a = add(f, "/a", P);
	struct acct_cgroup *b = add(f, "/a/b", 600 * MiB);
	struct acct_cgroup *c = add(f, "/a/c", 0);
	int64_t edge = P + (int64_t)(bound(a) + bound(b) + bound(c)) + SKEW(P) - 600 * MiB;

	acct_cgroup_set(c, ACCT_Q_MEMORY, edge);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.checked_parents, 1);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	assert_string_equal(f->rep.last_violation, "");

	acct_cgroup_set(c, ACCT_Q_MEMORY, edge + 1);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.checked_parents, 1);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	assert_int_equal(f->rep.violations_total[ACCT_INV_CHILDREN_MEMORY], 1);
	char want[256];
	snprintf(want, sizeof(want), "children_memory: /a holds %" PRId64 " bytes, its 2 children %" PRId64, P,
		 600 * MiB + edge + 1);
	assert_string_equal(f->rep.last_violation, want);

	/* Per pass, and in total. */
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	assert_int_equal(f->rep.violations_total[ACCT_INV_CHILDREN_MEMORY], 2);
	assert_int_equal(f->rep.passes, 3);

	/* Not on memory that is not hierarchical (v1 without use_hierarchy). */
	pass(f, NULL, false, false, false);
	assert_int_equal(f->rep.checked_parents, 0);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	assert_int_equal(f->rep.violations_total[ACCT_INV_CHILDREN_MEMORY], 2);
}

/* The kernel's bound of each value widens the allowance by that much (the
 * parent's and every child's): a sum 5 MiB over the plain limit passes with 3
 * MiB on the parent and 2 MiB on a child, not with either alone. */
static void test_children_memory_bounds(void **state)
{
	struct fixture *f = *state;
	const int64_t P = 200 * MiB;
	struct acct_cgroup *a = add(f, "/a", P);
	struct acct_cgroup *b = add(f, "/a/b", 0);
	assert_int_equal(bound(a), 0); /* a ledger without budgets adds none */
	acct_cgroup_set(b, ACCT_Q_MEMORY, P + SKEW(P) + 5 * MiB);

	acct_cgroup_set_kernel_bound(a, ACCT_Q_MEMORY, 3 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	acct_cgroup_set_kernel_bound(a, ACCT_Q_MEMORY, 0);
	acct_cgroup_set_kernel_bound(b, ACCT_Q_MEMORY, 2 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	acct_cgroup_set_kernel_bound(a, ACCT_Q_MEMORY, 3 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
}

/* Only direct children count (a grandchild is in its parent's sum already),
 * only cgroups with a memory reading, and the root is never checked: its
 * memory is defined as at least its children's (acct_sampler_root_memory()). */
static void test_children_memory_who(void **state)
{
	struct fixture *f = *state;
	add(f, "/", 10 * MiB);
	add(f, "/a", 100 * MiB);
	add(f, "/a/b", 90 * MiB);
	add(f, "/a/b/c", 80 * MiB);
	add(f, "/a/b/c/d", 70 * MiB);
	add(f, "/a/nomem", -1);
	add(f, "/x", -1);
	add(f, "/x/y", 50 * MiB);
	add(f, "/z", 40 * MiB);
	pass(f, NULL, false, true, false);
	/* /a, /a/b, /a/b/c; not the root, /x (no reading), or the leaves */
	assert_int_equal(f->rep.checked_parents, 3);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);

	/* the same ledger, a child over its parent deep down */
	add(f, "/a/b/c/e", 13 * MiB); /* 70 + 13 > 80 + 1 MiB + 0.8 MiB */
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.checked_parents, 3);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	assert_non_null(strstr(f->rep.last_violation, "/a/b/c holds"));
}

/* A path of any length: a parent whose path is longer than PATH_MAX (a deep
 * tree has them) is checked like any other. A record whose path has no '/'
 * has no parent. */
static void test_children_memory_long_paths(void **state)
{
	struct fixture *f = *state;
	char parent[4400] = "", child[4410], comp[201];
	memset(comp, 'x', 200);
	comp[200] = 0;
	while (strlen(parent) < 4200) {
		strcat(parent, "/");
		strcat(parent, comp);
	}
	snprintf(child, sizeof(child), "%s/c", parent);
	add_record(f, parent, 10 * MiB);
	add_record(f, child, 20 * MiB);
	add_record(f, "x", 20 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.checked_parents, 1);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
}

/* A suspect is re-read from the kernel's files: a violation only when the
 * files still show the children over the parent by more than 1 MiB + 1% of
 * the parent's re-read value (at the limit: none). The re-read takes the
 * direct children, the parent, the children, the parent, in that order. */
/* children_memory is not checked again while nothing it reads changed since
 * a check whose values raised no suspect (acct_ledger_memory_changes(),
 * acct_ledger_changes()); a memory value, a bound or a cgroup more makes
 * a check, and so does the pass after a check with a suspect. */
static void test_children_memory_unchanged(void **state)
{
	struct fixture *f = *state;
	const int64_t P = 500 * MiB;
	add(f, "/a", P);
	struct acct_cgroup *b = add(f, "/a/b", 100 * MiB);

	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.checked_parents, 1);
	assert_int_equal(f->rep.unchanged_passes, 0);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.unchanged_passes, 1);
	assert_int_equal(f->rep.checked_parents, 1); /* the last check's */
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	/* the same value set again changes nothing */
	acct_cgroup_set(b, ACCT_Q_MEMORY, 100 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.unchanged_passes, 2);
	/* a child over its parent: checked, found */
	acct_cgroup_set(b, ACCT_Q_MEMORY, 2 * P);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.unchanged_passes, 2);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	/* a suspect: checked again, found again */
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.unchanged_passes, 2);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	/* back under: checked, then not */
	acct_cgroup_set(b, ACCT_Q_MEMORY, 100 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.unchanged_passes, 3);
	/* a bound alone, and a cgroup more, make a check */
	acct_cgroup_set_kernel_bound(b, ACCT_Q_MEMORY, 4096);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.unchanged_passes, 3);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.unchanged_passes, 4);
	add(f, "/a/c", 450 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.unchanged_passes, 4);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
}

static void test_children_memory_reread(void **state)
{
	struct fixture *f = *state;
	const int64_t P = 500 * MiB;
	add(f, "/a", P);
	add(f, "/a/b", 300 * MiB);
	add(f, "/a/b/g", 1 * MiB);
	add(f, "/a/c", 400 * MiB); /* the pass's values: 200 MiB over */

	/* The files: the children's sum at the limit of the parent's reading. */
	set_file_value(f, "/a/c", P + SKEW(P) - 300 * MiB);
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	static const char *const order[] = { "/a/b", "/a/c", "/a", "/a/b", "/a/c", "/a" };
	assert_int_equal(reads.n, ELEMENTSOF(order));
	for (size_t i = 0; i < ELEMENTSOF(order); i++)
		assert_string_equal(reads.path[i], order[i]);

	/* one byte over */
	set_file_value(f, "/a/c", P + SKEW(P) - 300 * MiB + 1);
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	char want[256];
	snprintf(want, sizeof(want),
		 "children_memory: /a holds %" PRId64 " bytes, its 2 children %" PRId64
		 " (re-read: children at their lower, the parent at its higher of two readings)",
		 P, P + SKEW(P) + 1);
	assert_string_equal(f->rep.last_violation, want);

	/* The pass had caught a child at a high moment: the files clear it. */
	set_file_value(f, "/a/c", 100 * MiB);
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	assert_int_equal(f->rep.violations_total[ACCT_INV_CHILDREN_MEMORY], 1);
}

/* Within the re-read, each child at the lower of its two readings and the
 * parent at the higher of its two: a child that fell between its readings or
 * a parent that fell between its readings is no violation (scripted: a file
 * does not change between two reads microseconds apart). */
static void test_children_memory_reread_lower_higher(void **state)
{
	struct fixture *f = *state;
	const int64_t P = 500 * MiB;
	add(f, "/a", P);
	add(f, "/a/b", 800 * MiB);

	/* b, a, b, a: b fell from 800 to 400 MiB */
	reads.script = (const int64_t[]){ 800 * MiB, P, 400 * MiB, P };
	reads.script_n = 4;
	pass(f, NULL, false, true, true);
	assert_int_equal(reads.n, 4);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);

	/* b fell the other way round: its first reading is the lower */
	reads.n = 0;
	reads.script = (const int64_t[]){ 400 * MiB, P, 800 * MiB, P };
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);

	/* the parent rose to 900 MiB between its two readings: its higher counts */
	reads.n = 0;
	reads.script = (const int64_t[]){ 800 * MiB, P, 800 * MiB, 900 * MiB };
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	reads.n = 0;
	reads.script = (const int64_t[]){ 800 * MiB, 900 * MiB, 800 * MiB, P };
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);

	/* both readings of each over: a violation, with the parent's higher and
	 * the child's lower in the message */
	reads.n = 0;
	reads.script = (const int64_t[]){ 801 * MiB, P - 1, 800 * MiB, P };
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	assert_non_null(strstr(f->rep.last_violation, "/a holds 524288000 bytes, its 1 children 838860800 "));
	reads.script = NULL;
}

/* A suspect whose re-read fails proves nothing: a child that vanished
 * counts 0 (the others can still prove a violation), any other failure of
 * any of the four reads ends the re-read without a violation. */
static void test_children_memory_reread_fails(void **state)
{
	struct fixture *f = *state;
	add(f, "/a", 100 * MiB);
	add(f, "/a/b", 150 * MiB);
	add(f, "/a/c", 100 * MiB);
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);

	/* c gone (its files): b alone is still over */
	xrm_rf(f->base, "a/c");
	reads.n = 0;
	pass(f, NULL, false, true, true);
	assert_int_equal(reads.n, 6);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	assert_non_null(strstr(f->rep.last_violation, "its 2 children 157286400 "));
	xmkdir(f->base, "a/c");
	set_file_value(f, "/a/c", 100 * MiB);

	/* garbage in a child's file: the re-read ends there */
	set_file(f, "/a/c", "lots\n");
	reads.n = 0;
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	assert_int_equal(reads.n, 2); /* b, then c fails */
	set_file_value(f, "/a/c", 100 * MiB);

	/* the parent's file does not parse: nothing proven */
	set_file(f, "/a", "");
	reads.n = 0;
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	assert_int_equal(reads.n, 3); /* b, c, then a fails */

	/* Each of the four reads (scripted): c vanishing at its first or its
	 * second reading counts 0, b's 150 MiB is a violation; another error at
	 * any read is none, and nothing is read after it. */
	static const struct {
		int64_t script[6]; /* b c a b c a; < 0: that errno */
		size_t reads;
		uint64_t violations;
	} cases[] = {
		{ { 150 * MiB, -ENOENT, 100 * MiB, 150 * MiB, 100 * MiB, 100 * MiB }, 6, 1 },
		{ { 150 * MiB, 100 * MiB, 100 * MiB, 150 * MiB, -ENOENT, 100 * MiB }, 6, 1 },
		/* b at the limit, c vanished: exactly 0 for c, no violation */
		{ { 100 * MiB + SKEW(100 * MiB), -ENOENT, 100 * MiB, 100 * MiB + SKEW(100 * MiB), 100 * MiB, 100 * MiB },
		  6, 0 },
		{ { 100 * MiB + SKEW(100 * MiB), 100 * MiB, 100 * MiB, 100 * MiB + SKEW(100 * MiB), -ENOENT, 100 * MiB },
		  6, 0 },
		{ { 150 * MiB, -EIO }, 2, 0 },
		{ { 150 * MiB, 100 * MiB, -EIO }, 3, 0 },
		{ { 150 * MiB, 100 * MiB, 100 * MiB, 150 * MiB, -EIO }, 5, 0 },
		{ { 150 * MiB, 100 * MiB, 100 * MiB, 150 * MiB, 100 * MiB, -EIO }, 6, 0 },
		{ { 150 * MiB, 100 * MiB, -ENOENT }, 3, 0 }, /* the parent gone */
		{ { 150 * MiB, 100 * MiB, 100 * MiB, 150 * MiB, 100 * MiB, 100 * MiB }, 6, 1 },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		reads.n = 0;
		reads.script = cases[i].script;
		reads.script_n = cases[i].reads;
		pass(f, NULL, false, true, true);
		assert_int_equal(reads.n, cases[i].reads);
		assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], cases[i].violations);
	}
	reads.script = NULL;
}

/* Names that extend a parent's with a character that sorts before '/'
 * ("/a-x", "/a.b") come between the parent and its children in path order;
 * the re-read still finds the children. */
static void test_children_memory_reread_siblings(void **state)
{
	struct fixture *f = *state;
	add(f, "/a", 100 * MiB);
	add(f, "/a-x", 300 * MiB);
	add(f, "/a-x/y", 1 * MiB);
	add(f, "/a.b", 5 * MiB);
	add(f, "/a/b", 150 * MiB);
	add(f, "/a/nomem", -1);
	add(f, "/ab", 7 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	pass(f, NULL, false, true, true);
	static const char *const order[] = { "/a/b", "/a", "/a/b", "/a" };
	assert_int_equal(reads.n, ELEMENTSOF(order));
	for (size_t i = 0; i < ELEMENTSOF(order); i++)
		assert_string_equal(reads.path[i], order[i]);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
}

/* At most 64 suspects are re-read in a pass; a suspect whose re-read failed
 * does not use up one of them. Without a sampler every suspect is judged on
 * the pass's values. */
static void test_children_memory_confirm_max(void **state)
{
	struct fixture *f = *state;
	char path[64];
	for (int i = 0; i < 70; i++) {
		snprintf(path, sizeof(path), "/p%02d", i);
		add(f, path, 10 * MiB);
		snprintf(path, sizeof(path), "/p%02d/c", i);
		add(f, path, 20 * MiB);
	}
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.checked_parents, 70);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 70);
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 64);

	/* the first ten parents' files gone: the other sixty are all re-read */
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "p%02d/memory.current", i);
		xrm_rf(f->base, path);
	}
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 60);
}

/* Without memory for its arrays a pass checks nothing (its counts are 0;
 * the next pass checks again); without memory for a re-read the suspect is
 * not proven. */
static void test_allocation_failures(void **state)
{
	struct fixture *f = *state;
	add(f, "/a", 100 * MiB);
	add(f, "/a/b", 150 * MiB);
	pass(f, NULL, false, true, true); /* the sampler's own state allocated */
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
	/* the pass's four arrays, and the stack of the parents' walk */
	for (unsigned k = 1; k <= 5; k++) {
		pass_failing(f, k);
		assert_int_equal(f->rep.checked_parents, 0);
		assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
		assert_int_equal(f->rep.violations_total[ACCT_INV_CHILDREN_MEMORY], 1);
		assert_int_equal(f->rep.passes, 1 + k);
	}
	/* the re-read's two */
	for (unsigned k = 6; k <= 7; k++) {
		reads.n = 0;
		pass_failing(f, k);
		assert_int_equal(reads.n, 0);
		assert_int_equal(f->rep.checked_parents, 1);
		assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 0);
	}
	pass(f, NULL, false, true, true);
	assert_int_equal(f->rep.violations[ACCT_INV_CHILDREN_MEMORY], 1);
}

/* ---- root_meminfo --------------------------------------------------------------- */

/* The root's memory may exceed MemTotal - MemFree by 1% of it + 1 MiB and no
 * more; the figures are reported. */
static void test_root_meminfo(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *root = add(f, "/", -1);
	add(f, "/a", 5 * MiB);
	xwrite(f->base, "meminfo",
	       "MemTotal:        1000000 kB\nMemFree:          400000 kB\nMemAvailable:     700000 kB\n");
	const int64_t used = 600000 * INT64_C(1024);

	/* no root reading: nothing to compare */
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.root_memory, -1);
	assert_int_equal(f->rep.meminfo_total, 1000000 * INT64_C(1024));
	assert_int_equal(f->rep.meminfo_used, used);
	assert_int_equal(f->rep.violations[ACCT_INV_ROOT_MEMINFO], 0);

	acct_cgroup_set(root, ACCT_Q_MEMORY, used + used / 100 + MiB);
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.root_memory, used + used / 100 + MiB);
	assert_int_equal(f->rep.violations[ACCT_INV_ROOT_MEMINFO], 0);

	acct_cgroup_set(root, ACCT_Q_MEMORY, used + used / 100 + MiB + 1);
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_ROOT_MEMINFO], 1);
	assert_int_equal(f->rep.violations_total[ACCT_INV_ROOT_MEMINFO], 1);
	char want[256];
	snprintf(want, sizeof(want),
		 "root_meminfo: cgroups hold %" PRId64 " bytes, more than the %" PRId64
		 " bytes in use by /proc/meminfo",
		 used + used / 100 + MiB + 1, used);
	assert_string_equal(f->rep.last_violation, want);

	/* checked on memory that is not hierarchical too; not without a meminfo */
	pass(f, NULL, true, false, false);
	assert_int_equal(f->rep.violations[ACCT_INV_ROOT_MEMINFO], 1);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_ROOT_MEMINFO], 0);
	assert_int_equal(f->rep.meminfo_used, -1);
	assert_int_equal(f->rep.meminfo_total, -1);
	assert_int_equal(f->rep.root_memory, used + used / 100 + MiB + 1);
}

/* A meminfo that cannot be read or lacks a key is no figure (no check); a
 * MemFree above MemTotal is 0 in use. */
static void test_root_meminfo_input(void **state)
{
	struct fixture *f = *state;
	struct acct_cgroup *root = add(f, "/", 100 * MiB);
	(void)root;

	pass(f, NULL, true, true, false); /* no such file */
	assert_int_equal(f->rep.meminfo_used, -1);
	assert_int_equal(f->rep.meminfo_total, -1);
	assert_int_equal(f->rep.root_memory, 100 * MiB);

	xwrite(f->base, "meminfo", "MemTotal:        1000000 kB\nMemAvailable:     700000 kB\n");
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.meminfo_used, -1);
	assert_int_equal(f->rep.violations[ACCT_INV_ROOT_MEMINFO], 0);
	xwrite(f->base, "meminfo", "MemFree:        1000000 kB\n");
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.meminfo_total, -1);

	/* a meminfo of any size: its keys past the first 16 KiB count too */
	char *big = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&big, &size);
	assert_non_null(m);
	for (int i = 0; i < 1000; i++)
		fprintf(m, "Key%04d:        %d kB\n", i, i);
	fputs("MemTotal:        3000 kB\nMemFree:        1000 kB\n", m);
	assert_int_equal(fclose(m), 0);
	assert_true(size > 20000);
	xwrite(f->base, "meminfo", big);
	free(big);
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.meminfo_total, 3072000);
	assert_int_equal(f->rep.meminfo_used, 2048000);

	/* a directory: cannot be read */
	xrm_rf(f->base, "meminfo");
	xmkdir(f->base, "meminfo");
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.meminfo_used, -1);
	xrm_rf(f->base, "meminfo");

	xwrite(f->base, "meminfo", "MemTotal:        1000 kB\nMemFree:        2000 kB\n");
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.meminfo_total, 1024000);
	assert_int_equal(f->rep.meminfo_used, 0);
	assert_int_equal(f->rep.violations[ACCT_INV_ROOT_MEMINFO], 1);
	/* the limit's 1 MiB: at it, no violation */
	acct_cgroup_set(root, ACCT_Q_MEMORY, MiB);
	pass(f, NULL, true, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_ROOT_MEMINFO], 0);
}

/* The root's memory is reported only from a first record that is the root. */
static void test_root_memory_reported(void **state)
{
	struct fixture *f = *state;
	pass(f, NULL, true, true, false); /* an empty ledger */
	assert_int_equal(f->n, 0);
	assert_int_equal(f->rep.root_memory, -1);
	assert_int_equal(f->rep.checked_parents, 0);
	add(f, "/a", 5 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.root_memory, -1);
	add(f, "/", 7 * MiB);
	pass(f, NULL, false, true, false);
	assert_int_equal(f->rep.root_memory, 7 * MiB);
}

/* ---- cpu_backwards and the pass's figures ---------------------------------------- */

/* The sampler counts CPU time going backwards while it reads; each pass adds
 * its count, with its last reading in the message, and the drift
 * distributions are the pass's. */
static void test_cpu_backwards(void **state)
{
	struct fixture *f = *state;
	struct acct_pass_report p = { 0 };
	add(f, "/a", MiB);

	pass(f, &p, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CPU_BACKWARDS], 0);
	assert_string_equal(f->rep.last_violation, "");

	p.errors[ACCT_ERR_INVARIANT] = 3;
	p.errors[ACCT_ERR_GARBAGE] = 5;
	snprintf(p.last_backwards, sizeof(p.last_backwards), "/a cpu_usage 10 -> 5");
	histogram_add(&p.drift_memory, 4096);
	histogram_add(&p.drift_cpu, 77);
	pass(f, &p, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CPU_BACKWARDS], 3);
	assert_int_equal(f->rep.violations_total[ACCT_INV_CPU_BACKWARDS], 3);
	assert_string_equal(f->rep.last_violation,
			    "cpu_backwards: cumulative CPU time went backwards in 3 reading(s), the last "
			    "/a cpu_usage 10 -> 5");
	assert_memory_equal(&f->rep.drift_memory, &p.drift_memory, sizeof(p.drift_memory));
	assert_memory_equal(&f->rep.drift_cpu, &p.drift_cpu, sizeof(p.drift_cpu));

	p.errors[ACCT_ERR_INVARIANT] = 2;
	pass(f, &p, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CPU_BACKWARDS], 2);
	assert_int_equal(f->rep.violations_total[ACCT_INV_CPU_BACKWARDS], 5);

	/* a pass without any: this pass's count is 0, the last message stays */
	memset(&p, 0, sizeof(p));
	pass(f, &p, false, true, false);
	assert_int_equal(f->rep.violations[ACCT_INV_CPU_BACKWARDS], 0);
	assert_int_equal(f->rep.violations_total[ACCT_INV_CPU_BACKWARDS], 5);
	assert_non_null(strstr(f->rep.last_violation, "in 2 reading(s)"));
	assert_int_equal(f->rep.passes, 4);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(acct_invariant_to_string(ACCT_INV_CHILDREN_MEMORY), "children_memory");
	assert_string_equal(acct_invariant_to_string(ACCT_INV_ROOT_MEMINFO), "root_meminfo");
	assert_string_equal(acct_invariant_to_string(ACCT_INV_CPU_BACKWARDS), "cpu_backwards");
	assert_string_equal(acct_invariant_to_string(_ACCT_INV_MAX), "unknown");
}

/* ---- parents ------------------------------------------------------------- */

static int compare_paths(const void *a, const void *b)
{
	return strcmp((*(struct acct_cgroup *const *)a)->path, (*(struct acct_cgroup *const *)b)->path);
}

/* acct_reconcile_parents() in one walk against the plain search of each
 * cgroup's dirname, on paths that sort between a parent and its children
 * ("/a-x", "/a.b", "/a b": their next character is below '/'), parents the
 * array lacks (include filters: "/q/r/s" without "/q/r"; "/n/o" without
 * "/n" right after "/m", a cgroup of the missing parent's length that must
 * not be taken for it), names that extend others ("/ab", "/a/bc"), and a
 * deep chain. */
static void test_parents(void **state)
{
	(void)state;
	static const char *const paths[] = {
		"/", "/a", "/a-x", "/a-x/y", "/a.b", "/a b", "/a b/c", "/a/b", "/a/b-c", "/a/b-c/d", "/a/b/c",
		"/a/b/c/d", "/a/b/c/d/e", "/a/bc", "/a/bc/x", "/ab", "/ab/c", "/q/r/s", "/q/r/s/t", "/q", "/z",
		"/a/b/c-", "/a/b/c-/k", "/a/b/c/d-e", "/a/b/c/d/e/f", "/m", "/n/o",
	};
	enum { N = sizeof(paths) / sizeof(paths[0]) };
	static struct acct_cgroup rec[N];
	struct acct_cgroup *cgs[N];
	ssize_t got[N];

	for (size_t i = 0; i < N; i++) {
		rec[i] = (struct acct_cgroup){ .path = (char *)paths[i] };
		cgs[i] = &rec[i];
	}
	qsort(cgs, N, sizeof(*cgs), compare_paths);
	assert_int_equal(acct_reconcile_parents(cgs, N, got), 0);
	size_t found = 0;
	for (size_t i = 0; i < N; i++) {
		const char *path = cgs[i]->path, *slash = strrchr(path, '/');
		ssize_t want = -1;
		if (slash != path)
			for (size_t j = 0; j < N; j++)
				if (strlen(cgs[j]->path) == (size_t)(slash - path) &&
				    strncmp(cgs[j]->path, path, (size_t)(slash - path)) == 0)
					want = (ssize_t)j;
		assert_int_equal(got[i], want);
		found += want >= 0;
	}
	assert_int_equal(found, 16); /* the cases above have parents, not only -1 */
	assert_int_equal(acct_reconcile_parents(cgs, 0, got), 0);
}

/* Without memory for its walk's stack acct_reconcile_parents() says so with
 * -ENOMEM, its contract's only error, for an empty array too. */
static void test_parents_out_of_memory(void **state)
{
	(void)state;
	static struct acct_cgroup rec[2] = { { .path = (char *)"/a" }, { .path = (char *)"/a/b" } };
	struct acct_cgroup *cgs[2] = { &rec[0], &rec[1] };
	ssize_t got[2];

	for (size_t n = 0; n <= 2; n += 2) {
		calloc_fail_in = 1;
		assert_int_equal(acct_reconcile_parents(cgs, n, got), -ENOMEM);
		assert_int_equal(calloc_fail_in, 0);
	}
	assert_int_equal(acct_reconcile_parents(cgs, 2, got), 0);
	assert_int_equal(got[1], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_children_memory_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_who, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_long_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_reread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_reread_lower_higher, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_reread_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_reread_siblings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_children_memory_confirm_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allocation_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_meminfo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_meminfo_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_memory_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_backwards, setup, teardown),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_parents),
		cmocka_unit_test(test_parents_out_of_memory),
	};
	return cmocka_run_group_tests_name("reconcile", tests, NULL, NULL);
}
