/* test-cgroup-discovery.c - discovery (scans, inotify, filters, overflow) on
 * fake trees and, as root, on the host's real hierarchies. Layout detection is
 * tested in test-cgroup-layout.c.
 *
 * Long because each behaviour runs on both kinds of tree (fake and real) and
 * the real ones need their setup and teardown, and the pure-v2 host is made
 * in a mount namespace of its own with every other cgroup mount detached;
 * split by kind of tree it would repeat the scan and event helpers. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup-discovery.h"
#include "strv.h"
#include "test-tree.h"
#include "util.h"

#define BIT(h) (1u << (h))
#define ALL_V1 (BIT(ACCT_HIER_MEMORY) | BIT(ACCT_HIER_CPUACCT) | BIT(ACCT_HIER_CPU))
#define ALL_HYBRID (BIT(ACCT_HIER_UNIFIED) | ALL_V1)

/* ---- helpers --------------------------------------------------------------- */

static uint64_t ino_of(const char *base, const char *rel)
{
	_cleanup_free_ char *p = xjoin(base, rel);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	return st.st_ino;
}

/* ---- event recording --------------------------------------------------- */

struct ev {
	enum acct_discovery_event ev;
	char *path;
	unsigned depth;
	uint32_t hier;
	uint64_t inode[_ACCT_HIER_MAX];
};

struct rec {
	struct ev *e;
	size_t n, cap;
};

static void rec_fn(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata)
{
	struct rec *r = userdata;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->e = realloc(r->e, r->cap * sizeof(*r->e));
		assert_non_null(r->e);
	}
	struct ev *e = &r->e[r->n++];
	e->ev = ev;
	e->path = strdup(id->path);
	assert_non_null(e->path);
	e->depth = id->depth;
	e->hier = id->hierarchies;
	memcpy(e->inode, id->inode, sizeof(e->inode));
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++)
		assert_true((id->inode[h] != 0) == !!(id->hierarchies & BIT(h)));
}

static void rec_clear(struct rec *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->e[i].path);
	r->n = 0;
}

static void rec_done(struct rec *r)
{
	rec_clear(r);
	free(r->e);
	r->e = NULL;
	r->cap = 0;
}

static const char *ev_name(enum acct_discovery_event ev)
{
	return ev == ACCT_CGROUP_ADDED	? "ADDED"
	       : ev == ACCT_CGROUP_REMOVED ? "REMOVED"
	       : ev == ACCT_CGROUP_EVENTS  ? "EVENTS"
					   : "CHANGED";
}

static void rec_print(const struct rec *r)
{
	for (size_t i = 0; i < r->n; i++)
		print_message("  %zu: %s %s hier=%#x\n", i, ev_name(r->e[i].ev), r->e[i].path, r->e[i].hier);
}

/* Index of the event (ev, path), or -1. */
static long rec_find(const struct rec *r, enum acct_discovery_event ev, const char *path)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].ev == ev && strcmp(r->e[i].path, path) == 0)
			return (long)i;
	return -1;
}

static const struct ev *rec_get(const struct rec *r, enum acct_discovery_event ev, const char *path)
{
	long i = rec_find(r, ev, path);
	if (i < 0) {
		rec_print(r);
		fail_msg("no %s event for %s", ev_name(ev), path);
	}
	return &r->e[i];
}

struct idx {
	const char *path;
	size_t i;
};

static int idx_cmp(const void *a, const void *b)
{
	return strcmp(((const struct idx *)a)->path, ((const struct idx *)b)->path);
}

/* Parents added before their children, children removed before parents:
 * for each event, the nearest ancestor with an event of the same kind comes
 * before it (ADDED) or after it (REMOVED). O(n log n) for the big scans. */
static void rec_check_order_of(const struct rec *r, enum acct_discovery_event ev)
{
	struct idx *v = calloc(r->n + 1, sizeof(*v));
	size_t n = 0;

	assert_non_null(v);
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].ev == ev)
			v[n++] = (struct idx){ r->e[i].path, i };
	qsort(v, n, sizeof(*v), idx_cmp);
	for (size_t k = 0; k < n; k++) {
		_cleanup_free_ char *up = strdup(v[k].path);
		assert_non_null(up);
		while (strcmp(up, "/") != 0) {
			char *slash = strrchr(up, '/');
			if (slash == up)
				slash[1] = '\0';
			else
				*slash = '\0';
			struct idx key = { up, 0 };
			struct idx *a = bsearch(&key, v, n, sizeof(*v), idx_cmp);
			if (!a)
				continue;
			if (ev == ACCT_CGROUP_ADDED ? a->i > v[k].i : a->i < v[k].i) {
				rec_print(r);
				fail_msg("%s %s in the wrong order with its ancestor %s", ev_name(ev), v[k].path, up);
			}
			break;
		}
	}
	free(v);
}

static void rec_check_order(const struct rec *r)
{
	rec_check_order_of(r, ACCT_CGROUP_ADDED);
	rec_check_order_of(r, ACCT_CGROUP_REMOVED);
}

static int scan(struct acct_discovery *d, struct rec *r)
{
	rec_clear(r);
	int n = acct_discovery_scan(d, rec_fn, r);
	assert_true(n >= 0);
	assert_int_equal((size_t)n, r->n);
	rec_check_order(r);
	return n;
}

static int process(struct acct_discovery *d, struct rec *r)
{
	rec_clear(r);
	int n = acct_discovery_process(d, rec_fn, r);
	assert_true(n >= 0);
	assert_int_equal((size_t)n, r->n);
	rec_check_order(r);
	return n;
}

/* ---- discovery on fake trees --------------------------------------------- */

struct fake {
	char *base;
	struct acct_hierarchies *layout;
	struct acct_discovery *d;
	struct rec rec;
};

static struct fake *fake_new(const struct acct_discovery_filter *filter)
{
	struct fake *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->base = make_tmpdir("acctd-disc");
	make_hybrid(f->base);
	xmkdir(f->base, "unified/system.slice");
	xmkdir(f->base, "unified/system.slice/a.service");
	xmkdir(f->base, "unified/system.slice/b.service");
	xmkdir(f->base, "unified/user.slice");
	xmkdir(f->base, "unified/user.slice/user-1000.slice");
	xmkdir(f->base, "memory/system.slice");
	xmkdir(f->base, "memory/system.slice/a.service");
	xmkdir(f->base, "memory/onlymem");
	xmkdir(f->base, "cpu,cpuacct/system.slice");
	xwrite(f->base, "unified/system.slice/cgroup.procs", ""); /* files are not cgroups */
	xsymlink("/", f->base, "unified/system.slice/link"); /* not followed */
	assert_int_equal(acct_hierarchies_detect(f->base, &f->layout), 0);
	assert_int_equal(acct_discovery_new(f->layout, filter, &f->d), 0);
	return f;
}

static void fake_free(struct fake *f)
{
	if (!f)
		return;
	acct_discovery_free(f->d);
	acct_hierarchies_free(f->layout);
	rec_done(&f->rec);
	rm_rf(f->base);
	free(f->base);
	free(f);
}

static int fake_teardown(void **state)
{
	fake_free(*state);
	*state = NULL;
	return 0;
}

static void test_scan_fake(void **state)
{
	struct fake *f = *state = fake_new(NULL);
	struct acct_discovery_stats st;
	const struct ev *e;

	assert_true(acct_discovery_fd(f->d) >= 0);
	assert_int_equal(scan(f->d, &f->rec), 7);
	e = rec_get(&f->rec, ACCT_CGROUP_ADDED, "/");
	assert_int_equal(e->hier, ALL_HYBRID);
	assert_int_equal(e->inode[ACCT_HIER_UNIFIED], ino_of(f->base, "unified"));
	assert_int_equal(e->inode[ACCT_HIER_MEMORY], ino_of(f->base, "memory"));
	/* cpu and cpuacct are one mount: the same directory */
	assert_int_equal(e->inode[ACCT_HIER_CPU], ino_of(f->base, "cpu,cpuacct"));
	assert_int_equal(e->inode[ACCT_HIER_CPUACCT], ino_of(f->base, "cpu,cpuacct"));
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_ADDED, "/"), 0);

	e = rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice");
	assert_int_equal(e->hier, ALL_HYBRID);
	e = rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/a.service");
	assert_int_equal(e->hier, BIT(ACCT_HIER_UNIFIED) | BIT(ACCT_HIER_MEMORY));
	assert_int_equal(e->inode[ACCT_HIER_MEMORY], ino_of(f->base, "memory/system.slice/a.service"));
	assert_int_equal(e->inode[ACCT_HIER_UNIFIED], ino_of(f->base, "unified/system.slice/a.service"));
	assert_int_equal(e->inode[ACCT_HIER_CPU], 0);
	e = rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/b.service");
	assert_int_equal(e->hier, BIT(ACCT_HIER_UNIFIED));
	e = rec_get(&f->rec, ACCT_CGROUP_ADDED, "/user.slice/user-1000.slice");
	assert_int_equal(e->hier, BIT(ACCT_HIER_UNIFIED));
	e = rec_get(&f->rec, ACCT_CGROUP_ADDED, "/onlymem");
	assert_int_equal(e->hier, BIT(ACCT_HIER_MEMORY));
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/user.slice");
	/* the co-mounted tree is walked once: a hierarchy directory is not a cgroup */
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_ADDED, "/memory"), -1);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/link"), -1);
	for (size_t i = 0; i < f->rec.n; i++)
		assert_int_equal(f->rec.e[i].ev, ACCT_CGROUP_ADDED);

	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 7);
	assert_int_equal(st.directories, 7);
	assert_int_equal(st.scans, 1);
	assert_int_equal(st.events, 7);
	/* one watch per directory per tree: 6 in unified, 4 in memory, 2 in cpu,cpuacct */
	assert_int_equal(st.watches, 12);
	assert_int_equal(st.unwatched, 0);

	/* a second scan finds nothing new: the rescan after an overflow is idempotent */
	assert_int_equal(scan(f->d, &f->rec), 0);

	/* a path in memory/ only gains unified/: CHANGED */
	xmkdir(f->base, "unified/onlymem");
	assert_int_equal(process(f->d, &f->rec), 1);
	e = rec_get(&f->rec, ACCT_CGROUP_CHANGED, "/onlymem");
	assert_int_equal(e->hier, BIT(ACCT_HIER_UNIFIED) | BIT(ACCT_HIER_MEMORY));
	assert_int_equal(e->inode[ACCT_HIER_UNIFIED], ino_of(f->base, "unified/onlymem"));

	/* and loses memory/: CHANGED again, then gone from both: REMOVED */
	xrm_rf(f->base, "memory/onlymem");
	assert_int_equal(process(f->d, &f->rec), 1);
	e = rec_get(&f->rec, ACCT_CGROUP_CHANGED, "/onlymem");
	assert_int_equal(e->hier, BIT(ACCT_HIER_UNIFIED));
	assert_int_equal(e->inode[ACCT_HIER_MEMORY], 0);
	xrm_rf(f->base, "unified/onlymem");
	assert_int_equal(process(f->d, &f->rec), 1);
	rec_get(&f->rec, ACCT_CGROUP_REMOVED, "/onlymem");

	/* the same found by a scan instead of inotify */
	xmkdir(f->base, "cpu/system.slice/b.service");
	assert_int_equal(scan(f->d, &f->rec), 1);
	e = rec_get(&f->rec, ACCT_CGROUP_CHANGED, "/system.slice/b.service");
	assert_int_equal(e->hier, BIT(ACCT_HIER_UNIFIED) | BIT(ACCT_HIER_CPU) | BIT(ACCT_HIER_CPUACCT));
	assert_int_equal(process(f->d, &f->rec), 0); /* the queued IN_CREATE is stale now */
	assert_int_equal(scan(f->d, &f->rec), 0);
}

/* The census (cgroup-census.h) of dirs (relative to base), as a walk that
 * counts every one of them would take it. */
static struct acct_cgroup_census census_of(const char *base, const char *const *dirs)
{
	struct acct_cgroup_census c = { 0 };
	for (size_t i = 0; dirs[i]; i++)
		acct_cgroup_census_add(&c, ino_of(base, dirs[i]));
	return c;
}

static void assert_census(struct fake *f, enum acct_hierarchy h, const char *const *dirs)
{
	struct acct_cgroup_census mine, want = census_of(f->base, dirs);
	assert_int_equal(acct_discovery_census(f->d, h, &mine), 0);
	assert_int_equal(mine.count, want.count);
	assert_true(acct_cgroup_census_equal(&mine, &want));
}

/* Discovery's census is that of every directory it walked per tree, kept by
 * inotify; it cannot stand for a scan where exclude globs hide subtrees. */
static void test_census(void **state)
{
	struct fake *f = *state = fake_new(NULL);
	static const char *const memory[] = { "memory", "memory/system.slice", "memory/system.slice/a.service",
					      "memory/onlymem", NULL };
	static const char *const cpu[] = { "cpu,cpuacct", "cpu,cpuacct/system.slice", NULL };
	static const char *const memory2[] = { "memory", "memory/system.slice", "memory/system.slice/a.service",
					       "memory/x", NULL };
	struct acct_cgroup_census c;

	scan(f->d, &f->rec);
	assert_census(f, ACCT_HIER_MEMORY, memory);
	/* co-mounted: either name is the one tree */
	assert_census(f, ACCT_HIER_CPU, cpu);
	assert_census(f, ACCT_HIER_CPUACCT, cpu);
	assert_int_equal(acct_discovery_census(f->d, ACCT_HIER_BLKIO, &c), -ENOENT);

	/* one removed, one made (a larger inode): inotify keeps it current, and
	 * the old census differs from the new */
	struct acct_cgroup_census old;
	assert_int_equal(acct_discovery_census(f->d, ACCT_HIER_MEMORY, &old), 0);
	xrm_rf(f->base, "memory/onlymem");
	xmkdir(f->base, "memory/x");
	process(f->d, &f->rec);
	assert_census(f, ACCT_HIER_MEMORY, memory2);
	assert_int_equal(acct_discovery_census(f->d, ACCT_HIER_MEMORY, &c), 0);
	assert_int_equal(c.count, old.count);
	assert_false(acct_cgroup_census_equal(&c, &old));

	/* the plan: one hierarchy per tree, none where a tree has no served one */
	uint32_t all = BIT(ACCT_HIER_UNIFIED) | BIT(ACCT_HIER_MEMORY) | BIT(ACCT_HIER_CPU) | BIT(ACCT_HIER_CPUACCT);
	uint32_t plan = acct_discovery_census_plan(f->d, all);
	assert_int_equal(__builtin_popcount(plan), 3);
	assert_true(plan & BIT(ACCT_HIER_UNIFIED));
	assert_true(plan & BIT(ACCT_HIER_MEMORY));
	assert_int_equal(acct_discovery_census_plan(f->d, all & ~BIT(ACCT_HIER_MEMORY)), 0);

	char *exclude[] = { "/user.slice", NULL };
	struct acct_discovery_filter filter = { .exclude = exclude, .max_depth = 32 };
	assert_int_equal(acct_discovery_set_filter(f->d, &filter), 0);
	scan(f->d, &f->rec);
	assert_int_equal(acct_discovery_census(f->d, ACCT_HIER_MEMORY, &c), -ENODATA);
	assert_int_equal(acct_discovery_census_plan(f->d, all), 0);
}

static void test_inotify_fake(void **state)
{
	struct fake *f = *state = fake_new(NULL);
	struct acct_discovery_stats st;
	const struct ev *e;

	scan(f->d, &f->rec);
	/* nested directories made before process() runs: the walk below the new
	 * directory finds the children that no watch saw */
	xmkdir(f->base, "memory/x");
	xmkdir(f->base, "memory/x/y");
	xmkdir(f->base, "memory/x/y/z");
	xmkdir(f->base, "memory/x/w");
	assert_int_equal(process(f->d, &f->rec), 4);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_ADDED, "/x"), 0);
	e = rec_get(&f->rec, ACCT_CGROUP_ADDED, "/x/y/z");
	assert_int_equal(e->hier, BIT(ACCT_HIER_MEMORY));
	assert_int_equal(e->inode[ACCT_HIER_MEMORY], ino_of(f->base, "memory/x/y/z"));
	assert_int_equal(e->depth, 3);
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/x/w");
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/x/y");

	/* one at a time, each seen by its parent's watch */
	xmkdir(f->base, "memory/x/y/z/deep");
	assert_int_equal(process(f->d, &f->rec), 1);
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/x/y/z/deep");
	assert_int_equal(process(f->d, &f->rec), 0);

	/* rm -r: the subtree is removed children first */
	xrm_rf(f->base, "memory/x");
	assert_int_equal(process(f->d, &f->rec), 5);
	for (size_t i = 0; i < f->rec.n; i++)
		assert_int_equal(f->rec.e[i].ev, ACCT_CGROUP_REMOVED);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/x"), 4);
	assert_true(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/x/y/z/deep") <
		    rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/x/y/z"));

	/* removal from one tree of a path in two: CHANGED */
	xrm_rf(f->base, "memory/system.slice/a.service");
	assert_int_equal(process(f->d, &f->rec), 1);
	e = rec_get(&f->rec, ACCT_CGROUP_CHANGED, "/system.slice/a.service");
	assert_int_equal(e->hier, BIT(ACCT_HIER_UNIFIED));

	/* a rename (v1 allows it) is a removal and an addition */
	xmkdir(f->base, "memory/r1");
	xmkdir(f->base, "memory/r1/child");
	assert_int_equal(process(f->d, &f->rec), 2);
	_cleanup_free_ char *from = xjoin(f->base, "memory/r1");
	_cleanup_free_ char *to = xjoin(f->base, "memory/r2");
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(process(f->d, &f->rec), 4);
	assert_true(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/r1/child") <
		    rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/r1"));
	assert_true(rec_find(&f->rec, ACCT_CGROUP_ADDED, "/r2") < rec_find(&f->rec, ACCT_CGROUP_ADDED, "/r2/child"));
	assert_int_equal(scan(f->d, &f->rec), 0);

	/* files do not count */
	xwrite(f->base, "memory/r2/memory.limit_in_bytes", "1\n");
	assert_int_equal(process(f->d, &f->rec), 0);

	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 9);
	assert_int_equal(st.overflows, 0);
	assert_int_equal(st.unwatched, 0);
}

/* A change of cgroup.events (IN_MODIFY on the directory's watch) in the
 * unified tree is ACCT_CGROUP_EVENTS for that cgroup; other files, and v1
 * trees (which have no cgroup.events), report nothing. */
static void test_events_fake(void **state)
{
	struct fake *f = *state = fake_new(NULL);

	xwrite(f->base, "unified/system.slice/a.service/cgroup.events", "populated 0\nfrozen 0\n");
	xwrite(f->base, "memory/system.slice/cgroup.events", "populated 0\n");
	scan(f->d, &f->rec);
	rec_clear(&f->rec);

	xwrite(f->base, "unified/system.slice/a.service/cgroup.events", "populated 1\nfrozen 0\n");
	assert_true(process(f->d, &f->rec) >= 1);
	for (size_t i = 0; i < f->rec.n; i++) {
		assert_int_equal(f->rec.e[i].ev, ACCT_CGROUP_EVENTS);
		assert_string_equal(f->rec.e[i].path, "/system.slice/a.service");
		assert_int_equal(f->rec.e[i].hier, BIT(ACCT_HIER_UNIFIED) | BIT(ACCT_HIER_MEMORY));
	}
	rec_clear(&f->rec);
	xwrite(f->base, "unified/system.slice/a.service/cgroup.procs", "1\n");
	xwrite(f->base, "memory/system.slice/cgroup.events", "populated 1\n");
	assert_int_equal(process(f->d, &f->rec), 0);
}

/* Replace directory rel by a new one (a new inode: the old one still exists
 * when the new one is made, so the file system cannot reuse its number). */
static void recreate(const char *base, const char *rel)
{
	_cleanup_free_ char *p = xjoin(base, rel);
	_cleanup_free_ char *tmp = NULL;
	assert_true(asprintf(&tmp, "%s.new", p) > 0);
	assert_int_equal(mkdir(tmp, 0755), 0);
	rm_rf(p);
	assert_int_equal(rename(tmp, p), 0);
}

static void test_recreate(void **state)
{
	struct fake *f = *state = fake_new(NULL);
	const struct ev *e;

	scan(f->d, &f->rec);
	uint64_t old = ino_of(f->base, "memory/system.slice/a.service");
	recreate(f->base, "memory/system.slice/a.service");
	assert_int_equal(scan(f->d, &f->rec), 2);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/system.slice/a.service"), 0);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/a.service"), 1);
	assert_int_equal(f->rec.e[0].inode[ACCT_HIER_MEMORY], old);
	e = &f->rec.e[1];
	assert_int_equal(e->inode[ACCT_HIER_MEMORY], ino_of(f->base, "memory/system.slice/a.service"));
	assert_true(e->inode[ACCT_HIER_MEMORY] != old);
	assert_int_equal(e->hier, BIT(ACCT_HIER_UNIFIED) | BIT(ACCT_HIER_MEMORY));
	/* the events inotify queued meanwhile are stale: nothing to report */
	assert_int_equal(process(f->d, &f->rec), 0);
	assert_int_equal(scan(f->d, &f->rec), 0);

	/* a recreated parent takes its subtree with it, in every tree */
	recreate(f->base, "cpu,cpuacct/system.slice");
	assert_int_equal(scan(f->d, &f->rec), 6);
	assert_true(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/system.slice/a.service") <
		    rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/system.slice"));
	assert_true(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/system.slice") <
		    rec_find(&f->rec, ACCT_CGROUP_ADDED, "/system.slice"));
	e = rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice");
	assert_int_equal(e->hier, ALL_HYBRID);
	assert_int_equal(e->inode[ACCT_HIER_CPU], ino_of(f->base, "cpu,cpuacct/system.slice"));
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/a.service");
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/b.service");
	assert_int_equal(process(f->d, &f->rec), 0);

	/* the same seen by inotify */
	recreate(f->base, "unified/user.slice");
	assert_int_equal(process(f->d, &f->rec), 3);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/user.slice/user-1000.slice"), 0);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/user.slice"), 1);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_ADDED, "/user.slice"), 2);
	assert_int_equal(scan(f->d, &f->rec), 0);
}

static void test_filter(void **state)
{
	char *include[] = { "/system.slice/*", "/user.slice", NULL };
	char *exclude[] = { "/user.slice/user-*", NULL };
	struct acct_discovery_filter filter = { .include = include, .exclude = exclude, .max_depth = 2 };
	struct fake *f = *state = fake_new(&filter);
	struct acct_discovery_stats st;

	xmkdir(f->base, "unified/system.slice/a.service/deeper");
	xmkdir(f->base, "unified/user.slice/user-1000.slice/session-1.scope");
	assert_int_equal(scan(f->d, &f->rec), 3);
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/a.service");
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/b.service");
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/user.slice");
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 3);
	/* walked: / /system.slice /system.slice/{a,b}.service /user.slice; not:
	 * the excluded subtree, below depth 2, nor /onlymem, which no include
	 * glob can match nor any path below it */
	assert_int_equal(st.directories, 5);
	/* watched: walked directories above max_depth, per tree (unified 3,
	 * memory 2, cpu 2) */
	assert_int_equal(st.watches, 7);

	/* nothing below an excluded or too deep directory is watched or reported */
	xmkdir(f->base, "unified/user.slice/user-1000.slice/x");
	xmkdir(f->base, "unified/user.slice/user-2000.slice");
	xmkdir(f->base, "unified/system.slice/b.service/x");
	assert_int_equal(process(f->d, &f->rec), 0);
	xmkdir(f->base, "unified/system.slice/c.service");
	assert_int_equal(process(f->d, &f->rec), 1);
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/c.service");

	/* a new filter applies at the next scan */
	char *include2[] = { "/onlymem", "/system.slice/a.service*", NULL };
	struct acct_discovery_filter filter2 = { .include = include2, .max_depth = 3 };
	assert_int_equal(acct_discovery_set_filter(f->d, &filter2), 0);
	assert_int_equal(scan(f->d, &f->rec), 5);
	rec_get(&f->rec, ACCT_CGROUP_REMOVED, "/system.slice/b.service");
	rec_get(&f->rec, ACCT_CGROUP_REMOVED, "/system.slice/c.service");
	rec_get(&f->rec, ACCT_CGROUP_REMOVED, "/user.slice");
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/onlymem");
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/a.service/deeper");
	assert_int_equal(scan(f->d, &f->rec), 0);

	/* max_depth 0: the root only; no filter at all: everything */
	struct acct_discovery_filter root_only = { .max_depth = 0 };
	assert_int_equal(acct_discovery_set_filter(f->d, &root_only), 0);
	scan(f->d, &f->rec);
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 1);
	assert_int_equal(st.watches, 0);
	assert_int_equal(acct_discovery_set_filter(f->d, NULL), 0);
	scan(f->d, &f->rec);
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 13);
	assert_int_equal(st.tracked, st.directories);

	/* excluding the root excludes everything */
	char *all[] = { "*", NULL };
	struct acct_discovery_filter none = { .exclude = all, .max_depth = 100 };
	assert_int_equal(acct_discovery_set_filter(f->d, &none), 0);
	assert_int_equal(scan(f->d, &f->rec), 13);
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 0);
	assert_int_equal(st.directories, 0);
	assert_int_equal(st.watches, 0);
}

/* Include globs whose matches all lie below a literal prefix leave every
 * other directory unread and unwatched, so that a daemon limited to a
 * subtree costs what the subtree holds, not the host's thousands of other
 * cgroups (test daemons beside a tree of 10,000 took 5 s a rescan). Its
 * census then cannot stand for a scan; a glob with a wildcard right after
 * the "/" prunes nothing. */
static void test_include_prunes(void **state)
{
	char *include[] = { "/system.slice/a*", "/user.slice/user-1000.slice", NULL };
	struct acct_discovery_filter filter = { .include = include, .max_depth = 32 };
	struct fake *f = *state = fake_new(&filter);
	struct acct_discovery_stats st;
	struct acct_cgroup_census c;

	xmkdir(f->base, "unified/system.slice/a.service/x");
	xmkdir(f->base, "unified/user.slice/user-1000.slice/session-1.scope");
	xmkdir(f->base, "unified/other");
	xmkdir(f->base, "unified/other/deep");
	xmkdir(f->base, "unified/system.sliced"); /* shares the text, not the directory */
	assert_int_equal(scan(f->d, &f->rec), 3);
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/a.service");
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/a.service/x");
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/user.slice/user-1000.slice");
	acct_discovery_stats(f->d, &st);
	/* walked: / /system.slice /system.slice/a.service{,/x} /user.slice
	 * /user.slice/user-1000.slice; not b.service, /onlymem, /other,
	 * /system.sliced, nor below the literal user-1000.slice */
	assert_int_equal(st.directories, 6);
	assert_int_equal(st.watches, 6 + 3 + 2); /* unified 6, memory / /system.slice /system.slice/a.service, cpu 2 */

	/* nothing is heard below a pruned directory, nor of a new one */
	xmkdir(f->base, "unified/other/new");
	xmkdir(f->base, "unified/zzz");
	xmkdir(f->base, "unified/system.slice/b.service/x");
	assert_int_equal(process(f->d, &f->rec), 0);
	xmkdir(f->base, "unified/system.slice/a2");
	assert_int_equal(process(f->d, &f->rec), 1);
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/system.slice/a2");
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.directories, 7);

	/* The census of the whole cannot stand; that of the whole subtrees
	 * discovery follows (a scope) does, with the directories above them
	 * read one level (test_census_scope). */
	uint32_t all = BIT(ACCT_HIER_UNIFIED) | BIT(ACCT_HIER_MEMORY) | BIT(ACCT_HIER_CPU) | BIT(ACCT_HIER_CPUACCT);
	assert_int_equal(acct_discovery_census(f->d, ACCT_HIER_MEMORY, &c), -ENODATA);
	assert_int_not_equal(acct_discovery_census_plan(f->d, all), 0);

	/* a wildcard right after "/": every directory is read again */
	char *anywhere[] = { "/*a.service*", NULL };
	struct acct_discovery_filter filter2 = { .include = anywhere, .max_depth = 32 };
	assert_int_equal(acct_discovery_set_filter(f->d, &filter2), 0);
	scan(f->d, &f->rec);
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 2);
	assert_true(st.directories > 7);
	assert_int_equal(acct_discovery_census(f->d, ACCT_HIER_MEMORY, &c), 0);
	assert_int_not_equal(acct_discovery_census_plan(f->d, all), 0);
}

/* Scope ids of tree dir `tree` (relative paths), for comparison. */
static void assert_ids(const char *base, const char *tree, const uint64_t *got, size_t n, const char *const *want)
{
	size_t k = 0;
	for (; want[k]; k++) {
		_cleanup_free_ char *rel = xjoin(tree, want[k]);
		uint64_t ino = ino_of(base, rel);
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found |= got[i] == ino;
		assert_true(found);
	}
	assert_int_equal(n, k);
}

/* Where the include globs prune, the census is of a scope: the whole
 * subtrees below the literal prefixes (tops), every directory known in
 * them, a top at max_depth a leaf; the directories above them are read one
 * level, and differ where a directory the globs may hold was made, removed
 * or replaced without discovery hearing of it (here: before process()),
 * never for one the globs leave out or one on another device. */
/* The roots of a walk that covers every reported directory (for the BPF
 * collector's walks where the include globs prune): the whole subtrees'
 * tops and what a literal glob names, or their directory where more than
 * `max` are below it; the whole hierarchy where the root needs more, is
 * reported itself, or the globs do not prune. */
static void assert_roots(char **roots, const char *const *want)
{
	size_t n = 0;
	for (; want[n]; n++)
		if (!roots || !roots[n] || strcmp(roots[n], want[n]) != 0)
			fail_msg("root %zu: %s, not %s", n, roots && roots[n] ? roots[n] : "(none)", want[n]);
	if (!roots || roots[n])
		fail_msg("roots: %s after the %zu expected", roots ? roots[n] : "NULL", n);
}

static void test_walk_roots(void **state)
{
	char *include[] = { "/system.slice/a*", "/user.slice/user-1000.slice", NULL };
	struct acct_discovery_filter filter = { .include = include, .max_depth = 3 };
	struct fake *f = *state = fake_new(&filter);
	char **roots = NULL;

	xmkdir(f->base, "unified/system.slice/a.service/x");
	xmkdir(f->base, "unified/system.slice/ab");
	xmkdir(f->base, "unified/system.slice/a2");
	xmkdir(f->base, "unified/other");
	scan(f->d, &f->rec);
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_UNIFIED, 8, &roots), 0);
	assert_roots(roots, (const char *const[]){ "/system.slice/a.service", "/system.slice/a2", "/system.slice/ab",
						   "/user.slice/user-1000.slice", NULL });
	roots = strv_free(roots);
	/* memory: a.service alone; cpu: nothing reported there */
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_MEMORY, 8, &roots), 0);
	assert_roots(roots, (const char *const[]){ "/system.slice/a.service", NULL });
	roots = strv_free(roots);
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_CPU, 8, &roots), 0);
	assert_roots(roots, (const char *const[]){ NULL });
	roots = strv_free(roots);
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_BLKIO, 8, &roots), -ENOENT);
	/* More than max (3 of 2) below system.slice: system.slice itself */
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_UNIFIED, 2, &roots), 0);
	assert_roots(roots, (const char *const[]){ "/system.slice", "/user.slice/user-1000.slice", NULL });
	roots = strv_free(roots);
	/* More than max below the root (2 of 1), or max 0: the whole hierarchy */
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_UNIFIED, 1, &roots), 0);
	assert_null(roots);
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_UNIFIED, 0, &roots), 0);
	assert_null(roots);
	/* A top made since: among them once heard */
	xmkdir(f->base, "unified/system.slice/a3");
	process(f->d, &f->rec);
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_UNIFIED, 8, &roots), 0);
	assert_roots(roots, (const char *const[]){ "/system.slice/a.service", "/system.slice/a2", "/system.slice/a3",
						   "/system.slice/ab", "/user.slice/user-1000.slice", NULL });
	roots = strv_free(roots);

	/* A glob whose prefix is the whole of the root's child: that child */
	char *prefix[] = { "/system.slice*", NULL };
	struct acct_discovery_filter filter_prefix = { .include = prefix, .max_depth = 3 };
	assert_int_equal(acct_discovery_set_filter(f->d, &filter_prefix), 0);
	scan(f->d, &f->rec);
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_UNIFIED, 8, &roots), 0);
	assert_roots(roots, (const char *const[]){ "/system.slice", NULL });
	roots = strv_free(roots);
	/* Globs that do not prune, or the root reported: the whole hierarchy */
	char *all[] = { "/*", NULL };
	struct acct_discovery_filter filter_all = { .include = all, .max_depth = 3 };
	assert_int_equal(acct_discovery_set_filter(f->d, &filter_all), 0);
	scan(f->d, &f->rec);
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_UNIFIED, 8, &roots), 0);
	assert_null(roots);
	char *root_too[] = { "/", "/system.slice/a*", NULL };
	struct acct_discovery_filter filter_root = { .include = root_too, .max_depth = 3 };
	assert_int_equal(acct_discovery_set_filter(f->d, &filter_root), 0);
	scan(f->d, &f->rec);
	assert_int_equal(acct_discovery_walk_roots(f->d, ACCT_HIER_UNIFIED, 8, &roots), 0);
	assert_null(roots);
}

static void test_census_scope(void **state)
{
	char *include[] = { "/system.slice/a*", "/user.slice/user-1000.slice", NULL };
	struct acct_discovery_filter filter = { .include = include, .max_depth = 3 };
	struct fake *f = *state = fake_new(&filter);
	_cleanup_free_ struct acct_cgroup_scope *sc = NULL, *sm = NULL, *none = NULL;
	struct acct_cgroup_census c;

	xmkdir(f->base, "unified/system.slice/a.service/x");
	xmkdir(f->base, "unified/system.slice/a.service/x/y"); /* below max_depth */
	xmkdir(f->base, "unified/system.slice/ab");
	xmkdir(f->base, "unified/system.slice/ab/deep");
	xmkdir(f->base, "unified/system.slice/ab/deep/leaf"); /* below max_depth */
	xmkdir(f->base, "unified/other");
	scan(f->d, &f->rec);
	assert_int_equal(acct_discovery_census_scope(f->d, ACCT_HIER_UNIFIED, &sc), 0);
	assert_non_null(sc);
	assert_ids(f->base, "unified", sc->tops, sc->n_tops,
		   (const char *const[]){ "system.slice/a.service", "system.slice/ab", NULL });
	assert_ids(f->base, "unified", sc->ids, sc->n_ids,
		   (const char *const[]){ "system.slice/a.service", "system.slice/a.service/x", "system.slice/ab",
					  "system.slice/ab/deep", NULL });
	assert_int_equal(sc->n_leaves, 0);
	acct_cgroup_scope_census(sc, &c);
	assert_int_equal(c.count, 4);
	/* memory: a.service alone; the v1 tree of cpu,cpuacct has none */
	assert_int_equal(acct_discovery_census_scope(f->d, ACCT_HIER_MEMORY, &sm), 0);
	assert_ids(f->base, "memory", sm->ids, sm->n_ids, (const char *const[]){ "system.slice/a.service", NULL });
	assert_int_equal(sm->n_tops, 1);
	assert_int_equal(acct_discovery_census_scope(f->d, ACCT_HIER_CPU, &none), 0);
	assert_int_equal(none->n_tops + none->n_ids + none->n_leaves, 0);
	free(TAKE_PTR(sc));
	assert_int_equal(acct_discovery_census_scope(f->d, ACCT_HIER_BLKIO, &sc), -ENOENT);
	assert_int_equal(acct_discovery_census_above(f->d), 0);

	/* A top at max_depth is a leaf: its descendants are not followed. */
	char *deep[] = { "/system.slice/a.service/x*", NULL };
	struct acct_discovery_filter filter_deep = { .include = deep, .max_depth = 3 };
	assert_int_equal(acct_discovery_set_filter(f->d, &filter_deep), 0);
	scan(f->d, &f->rec);
	assert_int_equal(acct_discovery_census_scope(f->d, ACCT_HIER_UNIFIED, &sc), 0);
	assert_int_equal(sc->n_tops, 0);
	assert_int_equal(sc->n_leaves, 1);
	assert_ids(f->base, "unified", sc->ids, sc->n_ids, (const char *const[]){ "system.slice/a.service/x", NULL });
	free(TAKE_PTR(sc));
	assert_int_equal(acct_discovery_set_filter(f->d, &filter), 0);
	scan(f->d, &f->rec);

	/* Unheard changes above the tops: a new directory the globs may hold,
	 * in any tree; one removed; one replaced (another inode). */
	xmkdir(f->base, "memory/system.slice/a3");
	assert_int_equal(acct_discovery_census_above(f->d), 1);
	process(f->d, &f->rec);
	assert_int_equal(acct_discovery_census_above(f->d), 0);
	xrm_rf(f->base, "memory/system.slice/a3");
	assert_int_equal(acct_discovery_census_above(f->d), 1);
	process(f->d, &f->rec);
	assert_int_equal(acct_discovery_census_above(f->d), 0);
	unsigned long long old_ab = xinode(f->base, "unified/system.slice/ab");
	xrm_rf(f->base, "unified/system.slice/ab");
	xmkdir(f->base, "unified/system.slice/ab");
	assert_int_not_equal(xinode(f->base, "unified/system.slice/ab"), old_ab); /* tmpfs: inodes increase */
	assert_int_equal(acct_discovery_census_above(f->d), 1);
	process(f->d, &f->rec);
	assert_int_equal(acct_discovery_census_above(f->d), 0);
	/* Below a top (the walk's census finds it: not this read's), where the
	 * globs hold nothing, or a file: no difference here. */
	xmkdir(f->base, "unified/system.slice/a.service/new");
	xmkdir(f->base, "unified/system.slice/b2");
	xmkdir(f->base, "unified/user.slice/user-1000.slice/new");
	xmkdir(f->base, "unified/zzz");
	xwrite(f->base, "unified/system.slice/a-file", "");
	assert_int_equal(acct_discovery_census_above(f->d), 0);
	process(f->d, &f->rec);

	/* Exclude globs: no census at all. */
	char *exclude[] = { "/system.slice/ab", NULL };
	struct acct_discovery_filter filter_ex = { .include = include, .exclude = exclude, .max_depth = 3 };
	assert_int_equal(acct_discovery_set_filter(f->d, &filter_ex), 0);
	scan(f->d, &f->rec);
	assert_int_equal(acct_discovery_census_scope(f->d, ACCT_HIER_UNIFIED, &sc), -ENODATA);
}

/* An include glob matches the whole path, not one level: '*' crosses '/',
 * a match takes the cgroup alone (not its children), and a parent that does
 * not match hides none of them (the examples of acctd.conf(5), [cgroups]
 * include). */
static void test_filter_whole_path(void **state)
{
	static const struct {
		const char *include, *exclude;
		const char *taken[4];
	} cases[] = {
		{ "/system.slice", NULL, { "/system.slice" } },
		{ "/system.slice/*", NULL, { "/system.slice/a.service", "/system.slice/b.service", "/system.slice/a.service/x" } },
		{ "/*.slice", NULL, { "/system.slice", "/user.slice", "/user.slice/user-1000.slice" } },
		{ "/system.slice/*", "/system.slice/*/*", { "/system.slice/a.service", "/system.slice/b.service" } },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *include[] = { (char *)cases[i].include, NULL }, *exclude[] = { (char *)cases[i].exclude, NULL };
		struct acct_discovery_filter filter = { .include = include, .exclude = cases[i].exclude ? exclude : NULL,
							.max_depth = 32 };
		struct fake *f = *state = fake_new(&filter);
		int n = 0;

		xmkdir(f->base, "unified/system.slice/a.service/x");
		while (n < 4 && cases[i].taken[n])
			n++;
		assert_int_equal(scan(f->d, &f->rec), n);
		for (int k = 0; k < n; k++)
			rec_get(&f->rec, ACCT_CGROUP_ADDED, cases[i].taken[k]);
		fake_free(f);
		*state = NULL;
	}
}

static void test_overflow(void **state)
{
	struct fake *f = *state = fake_new(NULL);
	struct acct_discovery_stats st;
	char buf[sizeof(struct inotify_event)] __attribute__((aligned(8)));
	unsigned max_events = 16384, n;

	FILE *p = fopen("/proc/sys/fs/inotify/max_queued_events", "re");
	if (p) {
		if (fscanf(p, "%u", &max_events) != 1)
			max_events = 16384;
		fclose(p);
	}
	if (max_events > 100000) {
		print_message("max_queued_events %u is too large to overflow quickly: skipping\n", max_events);
		skip();
	}
	n = max_events + 100;
	scan(f->d, &f->rec);

	/* more directories than the queue holds: an overflow, then a full rescan */
	xmkdir(f->base, "memory/many");
	assert_int_equal(process(f->d, &f->rec), 1);
	for (unsigned i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof(name), "memory/many/c%u", i);
		xmkdir(f->base, name);
	}
	assert_int_equal(process(f->d, &f->rec), (int)n);
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.overflows, 1);
	assert_int_equal(st.scans, 2);
	assert_int_equal(st.tracked, 8 + n);
	assert_int_equal(st.watches, 13 + n);
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/many/c0");
	assert_int_equal(scan(f->d, &f->rec), 0);

	/* an overflow handed over by a caller that reads the descriptor itself:
	 * what no event announced is found by the rescan */
	xmkdir(f->base, "unified/missed");
	char drain[16384] __attribute__((aligned(8)));
	while (read(acct_discovery_fd(f->d), drain, sizeof(drain)) > 0)
		;
	assert_int_equal(process(f->d, &f->rec), 0);
	struct inotify_event ov = { .wd = -1, .mask = IN_Q_OVERFLOW };
	memcpy(buf, &ov, sizeof(ov));
	rec_clear(&f->rec);
	assert_int_equal(acct_discovery_handle_events(f->d, buf, sizeof(ov), rec_fn, &f->rec), 1);
	rec_get(&f->rec, ACCT_CGROUP_ADDED, "/missed");
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.overflows, 2);

	/* 10,000+ removals found by one scan */
	xrm_rf(f->base, "memory/many");
	assert_int_equal(scan(f->d, &f->rec), (int)n + 1);
	assert_int_equal(rec_find(&f->rec, ACCT_CGROUP_REMOVED, "/many"), (long)n);
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 8);
	assert_int_equal(st.watches, 13);
	assert_int_equal(st.directories, 8);
	/* the queued deletions are stale now */
	assert_int_equal(acct_discovery_process(f->d, NULL, NULL), 0);
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.tracked, 8);
}

static void test_invalid(void **state)
{
	struct acct_hierarchies empty = { 0 };
	struct acct_discovery *d = NULL;

	assert_int_equal(acct_discovery_new(&empty, NULL, &d), -EINVAL);
	assert_null(d);
	assert_int_equal(acct_discovery_new(NULL, NULL, &d), -EINVAL);
	assert_null(acct_discovery_free(NULL));
}

/* Paths longer than PATH_MAX: walked with openat(), watched through
 * /proc/self/fd, re-read one component at a time. */
static void test_long_paths(void **state)
{
	struct fake *f = *state = calloc(1, sizeof(struct fake));
	char name[201];
	const unsigned levels = 24; /* 24 * 201 > PATH_MAX */
	int fd;

	assert_non_null(f);
	f->base = make_tmpdir("acctd-disc");
	xwrite(f->base, "cgroup.controllers", "memory\n");
	memset(name, 'n', 200);
	name[200] = '\0';
	fd = open(f->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (unsigned i = 0; i < levels; i++) {
		assert_int_equal(mkdirat(fd, name, 0755), 0);
		int c = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(c >= 0);
		close(fd);
		fd = c;
	}
	assert_int_equal(acct_hierarchies_detect(f->base, &f->layout), 0);
	assert_int_equal(acct_discovery_new(f->layout, NULL, &f->d), 0);
	assert_int_equal(scan(f->d, &f->rec), (int)levels + 1);
	const struct ev *deepest = &f->rec.e[levels];
	assert_int_equal(deepest->depth, levels);
	assert_true(strlen(deepest->path) > PATH_MAX);
	_cleanup_free_ char *path = strdup(deepest->path);
	assert_non_null(path);

	struct acct_discovery_stats st;
	acct_discovery_stats(f->d, &st);
	assert_int_equal(st.watches, levels + 1);
	assert_int_equal(st.unwatched, 0);

	assert_int_equal(mkdirat(fd, "leaf", 0755), 0);
	assert_int_equal(process(f->d, &f->rec), 1);
	assert_int_equal(f->rec.e[0].ev, ACCT_CGROUP_ADDED);
	assert_int_equal(f->rec.e[0].depth, levels + 1);
	assert_int_equal(strncmp(f->rec.e[0].path, path, strlen(path)), 0);
	assert_string_equal(f->rec.e[0].path + strlen(path), "/leaf");
	assert_int_equal(unlinkat(fd, "leaf", AT_REMOVEDIR), 0);
	assert_int_equal(process(f->d, &f->rec), 1);
	assert_int_equal(f->rec.e[0].ev, ACCT_CGROUP_REMOVED);
	assert_int_equal(scan(f->d, &f->rec), 0);
	close(fd);
}

#define CHILD_CHECK(cond)                                                                 \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			_exit(1);                                                         \
		}                                                                         \
	} while (0)

static int write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -e;
}

static unsigned count_events;
static void count_fn(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata)
{
	count_events++;
}

/* In a user namespace of its own with max_inotify_watches = 5 (the limit
 * of that namespace only): discovery goes on without the watches it cannot
 * have, counts them, and a rescan finds what inotify could not report. */
static int watch_limit_child(const char *base)
{
	struct acct_hierarchies *l = NULL;
	struct acct_discovery *d = NULL;
	struct acct_discovery_stats st;

	char uid_map[32], gid_map[32];

	/* map ourselves to root inside, so the fake tree stays ours */
	snprintf(uid_map, sizeof(uid_map), "0 %u 1", (unsigned)geteuid());
	snprintf(gid_map, sizeof(gid_map), "0 %u 1", (unsigned)getegid());
	if (unshare(CLONE_NEWUSER) < 0)
		return 77;
	if (write_proc("/proc/self/setgroups", "deny") < 0 || write_proc("/proc/self/uid_map", uid_map) < 0 ||
	    write_proc("/proc/self/gid_map", gid_map) < 0 ||
	    write_proc("/proc/sys/user/max_inotify_watches", "5") < 0)
		return 77;

	CHILD_CHECK(acct_hierarchies_detect(base, &l) == 0);
	CHILD_CHECK(acct_discovery_new(l, NULL, &d) == 0);
	CHILD_CHECK(acct_discovery_scan(d, NULL, NULL) == 7);
	acct_discovery_stats(d, &st);
	CHILD_CHECK(st.tracked == 7);
	CHILD_CHECK(st.watches == 5);
	CHILD_CHECK(st.unwatched == 7);
	CHILD_CHECK(st.watch_failures == 7);

	/* memory/ has no watch: only the rescan sees this */
	char *p = NULL;
	CHILD_CHECK(asprintf(&p, "%s/memory/unseen", base) > 0);
	CHILD_CHECK(mkdir(p, 0755) == 0);
	free(p);
	CHILD_CHECK(acct_discovery_process(d, NULL, NULL) == 0);
	count_events = 0;
	CHILD_CHECK(acct_discovery_scan(d, count_fn, NULL) == 1);
	CHILD_CHECK(count_events == 1);
	acct_discovery_stats(d, &st);
	CHILD_CHECK(st.unwatched == 8);
	CHILD_CHECK(st.watch_failures == 7 + 8);

	/* room again: the next scan arms every watch */
	CHILD_CHECK(write_proc("/proc/sys/user/max_inotify_watches", "1000") == 0);
	CHILD_CHECK(acct_discovery_scan(d, NULL, NULL) == 0);
	acct_discovery_stats(d, &st);
	CHILD_CHECK(st.unwatched == 0);
	CHILD_CHECK(st.watches == 13);
	CHILD_CHECK(asprintf(&p, "%s/memory/seen", base) > 0);
	CHILD_CHECK(mkdir(p, 0755) == 0);
	free(p);
	CHILD_CHECK(acct_discovery_process(d, NULL, NULL) == 1);

	acct_discovery_free(d);
	acct_hierarchies_free(l);
	return 0;
}

static void test_watch_limit(void **state)
{
	struct fake *f = *state = fake_new(NULL);
	int status;

	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(watch_limit_child(f->base));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		print_message("cannot set max_inotify_watches in a user namespace here: skipping\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- the host's hierarchies ---------------------------------------------- */

static void test_host_scan(void **state)
{
	struct acct_hierarchies *l = NULL;
	struct acct_discovery *d = NULL;
	struct rec rec = { 0 };

	if (acct_hierarchies_detect(NULL, &l) < 0) {
		print_message("no cgroup hierarchy here: skipping\n");
		skip();
	}
	assert_int_equal(acct_discovery_new(l, NULL, &d), 0);
	assert_true(scan(d, &rec) >= 1);
	const struct ev *e = rec_get(&rec, ACCT_CGROUP_ADDED, "/");
	assert_int_equal(rec_find(&rec, ACCT_CGROUP_ADDED, "/"), 0);
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++) {
		assert_int_equal(!!(e->hier & BIT(h)), !!l->mount[h]);
		assert_int_equal(!!e->inode[h], !!l->mount[h]);
	}
	struct acct_discovery_stats st;
	acct_discovery_stats(d, &st);
	print_message("host: %zu cgroups, %llu watches, %llu unwatched\n", rec.n, (unsigned long long)st.watches,
		      (unsigned long long)st.unwatched);
	assert_int_equal(st.tracked, rec.n);
	/* a rescan works; other processes may create cgroups meanwhile, so its
	 * event count is not checked */
	assert_true(scan(d, &rec) >= 0);
	rec_done(&rec);
	acct_discovery_free(d);
	acct_hierarchies_free(l);
}

/* Detach every cgroup and cgroup2 mount this mount namespace sees, not only
 * those under /sys/fs/cgroup: another program's mount of a v1 hierarchy
 * elsewhere (a container runtime's, another test's) would make the host look
 * hybrid to libcgroup. mountinfo's mount points escape space, tab, newline
 * and backslash as \ooo. Returns 0, or -errno of the first mount that would
 * not go. */
static int detach_cgroup_mounts(void)
{
	for (int round = 0; round < 64; round++) {
		FILE *f = fopen("/proc/self/mountinfo", "re");
		char line[4096], point[4096];
		int detached = 0, left = 0, r = 0;

		if (!f)
			return -errno;
		while (fgets(line, sizeof(line), f)) {
			/* ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - FSTYPE ... */
			char *sep = strstr(line, " - "), *fields[5], *save = NULL;
			int n = 0;
			if (!sep)
				continue;
			bool cg = strncmp(sep + 3, "cgroup ", 7) == 0 || strncmp(sep + 3, "cgroup2 ", 8) == 0;
			for (char *t = strtok_r(line, " ", &save); t && n < 5; t = strtok_r(NULL, " ", &save))
				fields[n++] = t;
			if (!cg || n < 5)
				continue;
			size_t k = 0;
			for (const char *c = fields[4]; *c && k + 1 < sizeof(point); c++)
				if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] && c[3]) {
					point[k++] = (char)((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
					c += 3;
				} else
					point[k++] = *c;
			point[k] = 0;
			left++;
			if (umount2(point, MNT_DETACH) == 0)
				detached++;
			else if (r == 0)
				r = -errno;
		}
		fclose(f);
		if (left == 0)
			return 0;
		if (detached == 0)
			return r ?: -EBUSY;
	}
	return -ELOOP;
}

/* In a mount namespace of its own: the host as a pure v2 host (cgroup2 at
 * /sys/fs/cgroup), then with cgroup2 only somewhere unusual (libcgroup finds
 * no controller: the mountinfo fallback), then with no cgroup mount at all. */
static int pure_v2_child(void)
{
	struct acct_hierarchies *l = NULL;
	struct acct_discovery *d = NULL;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return 77;
	if (umount2("/sys/fs/cgroup", MNT_DETACH) < 0 && errno != EINVAL)
		return 77;
	if (detach_cgroup_mounts() < 0)
		return 77;
	if (mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL) < 0)
		return 77;

	CHILD_CHECK(acct_hierarchies_detect(NULL, &l) == 0);
	CHILD_CHECK(l->mode == ACCT_CGROUP_UNIFIED);
	CHILD_CHECK(strcmp(l->root, "/sys/fs/cgroup") == 0);
	CHILD_CHECK(strcmp(l->mount[ACCT_HIER_UNIFIED], "/sys/fs/cgroup") == 0);
	CHILD_CHECK(!l->mount[ACCT_HIER_MEMORY] && !l->mount[ACCT_HIER_CPU] && !l->mount[ACCT_HIER_CPUACCT]);
	CHILD_CHECK(acct_discovery_new(l, NULL, &d) == 0);
	CHILD_CHECK(acct_discovery_scan(d, NULL, NULL) >= 1);
	d = acct_discovery_free(d);
	l = acct_hierarchies_free(l);

	char dir[] = "/tmp/acctd-v2-XXXXXX";
	CHILD_CHECK(umount2("/sys/fs/cgroup", MNT_DETACH) == 0);
	CHILD_CHECK(mkdtemp(dir));
	CHILD_CHECK(mount("cgroup2", dir, "cgroup2", 0, NULL) == 0);
	int r = acct_hierarchies_detect(NULL, &l);
	(void)umount2(dir, MNT_DETACH);
	(void)rmdir(dir);
	CHILD_CHECK(r == 0);
	CHILD_CHECK(l->mode == ACCT_CGROUP_UNIFIED);
	CHILD_CHECK(strcmp(l->mount[ACCT_HIER_UNIFIED], dir) == 0);
	l = acct_hierarchies_free(l);

	/* nothing left: no hierarchy */
	CHILD_CHECK(mount("tmpfs", "/sys/fs/cgroup", "tmpfs", 0, NULL) == 0);
	CHILD_CHECK(acct_hierarchies_detect(NULL, &l) == -ENOENT);
	return 0;
}

static void test_host_pure_v2(void **state)
{
	int status;

	if (geteuid() != 0) {
		print_message("not root: cannot mount cgroup2, skipping\n");
		skip();
	}
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(pure_v2_child());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		print_message("cannot remount cgroups in a mount namespace here: skipping\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

struct real {
	struct acct_hierarchies *layout;
	struct acct_discovery *d;
	struct rec rec;
	char top[64]; /* acctd-test-<pid> */
	char include[2][80]; /* report only our own cgroups: others may come and go */
	char *made[_ACCT_HIER_MAX][3];
};

static int real_setup(void **state)
{
	struct real *r = calloc(1, sizeof(*r));
	if (!r)
		return -1;
	snprintf(r->top, sizeof(r->top), "acctd-test-%d", (int)getpid());
	*state = r;
	return 0;
}

/* Runs even when the test failed: leave no cgroup behind. */
static int real_teardown(void **state)
{
	struct real *r = *state;
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++)
		for (int i = 2; i >= 0; i--)
			if (r->made[h][i]) {
				if (rmdir(r->made[h][i]) < 0 && errno != ENOENT)
					fprintf(stderr, "cleanup: rmdir %s: %m\n", r->made[h][i]);
				free(r->made[h][i]);
			}
	acct_discovery_free(r->d);
	acct_hierarchies_free(r->layout);
	rec_done(&r->rec);
	free(r);
	*state = NULL;
	return 0;
}

static void real_tree(struct real *r, unsigned h)
{
	const char *rel[3] = { "", "/a", "/a/b" };
	char paths[3][PATH_MAX];

	print_message("mkdir/rmdir below %s\n", r->layout->mount[h]);
	for (unsigned i = 0; i < 3; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/%s%s", r->top, rel[i]);
		assert_true(asprintf(&r->made[h][i], "%s%s", r->layout->mount[h], paths[i]) > 0);
		if (mkdir(r->made[h][i], 0755) < 0) {
			int e = errno;
			free(r->made[h][i]);
			r->made[h][i] = NULL;
			if (i == 0 && (e == EACCES || e == EPERM || e == EROFS)) {
				print_message("cannot create cgroups here (%s): skipping\n", strerror(e));
				skip();
			}
			fail_msg("mkdir: %s", strerror(e));
		}
	}
	assert_int_equal(process(r->d, &r->rec), 3);
	for (unsigned i = 0; i < 3; i++) {
		const struct ev *e = rec_get(&r->rec, ACCT_CGROUP_ADDED, paths[i]);
		assert_true(e->hier & BIT(h));
		struct stat st;
		assert_int_equal(stat(r->made[h][i], &st), 0);
		assert_int_equal(e->inode[h], st.st_ino);
	}
	assert_int_equal(rec_find(&r->rec, ACCT_CGROUP_ADDED, paths[0]), 0);
	assert_int_equal(process(r->d, &r->rec), 0);

	for (int i = 2; i >= 0; i--) {
		assert_int_equal(rmdir(r->made[h][i]), 0);
		free(r->made[h][i]);
		r->made[h][i] = NULL;
	}
	assert_int_equal(process(r->d, &r->rec), 3);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(rec_find(&r->rec, ACCT_CGROUP_REMOVED, paths[i]), 2 - (long)i);
	assert_int_equal(scan(r->d, &r->rec), 0);
}

static void test_real_inotify(void **state)
{
	struct real *r = *state;

	if (geteuid() != 0) {
		print_message("not root: cannot create cgroups, skipping\n");
		skip();
	}
	if (access("/sys/fs/cgroup/memory", F_OK) < 0) {
		print_message("/sys/fs/cgroup/memory is absent (not a v1/hybrid host): skipping\n");
		skip();
	}
	assert_int_equal(acct_hierarchies_detect(NULL, &r->layout), 0);
	assert_non_null(r->layout->mount[ACCT_HIER_MEMORY]);
	snprintf(r->include[0], sizeof(r->include[0]), "/%s", r->top);
	snprintf(r->include[1], sizeof(r->include[1]), "/%s/*", r->top);
	char *include[] = { r->include[0], r->include[1], NULL };
	struct acct_discovery_filter filter = { .include = include, .max_depth = UINT_MAX };
	assert_int_equal(acct_discovery_new(r->layout, &filter, &r->d), 0);
	assert_int_equal(scan(r->d, &r->rec), 0);
	real_tree(r, ACCT_HIER_MEMORY);
	if (r->layout->mount[ACCT_HIER_UNIFIED])
		real_tree(r, ACCT_HIER_UNIFIED);
	else
		print_message("no v2 tree here: unified part skipped\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid),
		cmocka_unit_test_teardown(test_scan_fake, fake_teardown),
		cmocka_unit_test_teardown(test_census, fake_teardown),
		cmocka_unit_test_teardown(test_census_scope, fake_teardown),
		cmocka_unit_test_teardown(test_walk_roots, fake_teardown),
		cmocka_unit_test_teardown(test_inotify_fake, fake_teardown),
		cmocka_unit_test_teardown(test_events_fake, fake_teardown),
		cmocka_unit_test_teardown(test_recreate, fake_teardown),
		cmocka_unit_test_teardown(test_filter, fake_teardown),
		cmocka_unit_test_teardown(test_include_prunes, fake_teardown),
		cmocka_unit_test_teardown(test_filter_whole_path, fake_teardown),
		cmocka_unit_test_teardown(test_overflow, fake_teardown),
		cmocka_unit_test_teardown(test_long_paths, fake_teardown),
		cmocka_unit_test_teardown(test_watch_limit, fake_teardown),
		cmocka_unit_test(test_host_scan),
		cmocka_unit_test(test_host_pure_v2),
		cmocka_unit_test_setup_teardown(test_real_inotify, real_setup, real_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
