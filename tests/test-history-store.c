/* test-history-store.c - the history store (lib/history/history-store.h) on
 * real SQLite files in a temporary directory: what usage answers equals the
 * deltas fed in, within the bounds the header states; lives across removal,
 * restarts and new inodes; gaps never interpolated; a writer killed with
 * SIGKILL, corrupt, foreign and newer files, an older schema migrated; a full
 * and a read-only file system (root: a small tmpfs); retention, the size cap,
 * and rollups that agree with the raw data they summarise.
 *
 * Time is simulated (now_us passed in), so nothing here waits.
 *
 * Long because the store's contract is one module's: every case shares the
 * fixture, the sample builders and the v1/v2 schema fixtures, which a split
 * into several files would have to repeat. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "alloc-fail.h"
#include "history-sql.h" /* plan_steps: the planner's work */
#include "history-store.h"
#include "test-tree.h"
#include "util.h"

#define BOOT "0123456789abcdef0123456789abcdef"
#define BOOT2 "fedcba9876543210fedcba9876543210"
#define SEC UINT64_C(1000000)
#define T0 (UINT64_C(1764576000) * SEC) /* 2025-12-01 08:00 UTC, a whole hour */
#define IV (10 * SEC)

static const struct history_limits no_limits = {};

struct fixture {
	char *dir;
	char *db;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	f->dir = make_tmpdir("test-history-store");
	f->db = xjoin(f->dir, "history.db");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rm_rf(f->dir);
	free(f->dir);
	free(f->db);
	free(f);
	return 0;
}

static struct history_store *xopen(const char *db, const char *boot, uint64_t now, const struct history_limits *l,
				   struct history_open_info *info)
{
	struct history_store *s = NULL;
	struct history_open_info local = {};
	_cleanup_free_ char *err = NULL;
	int r = history_store_open(db, boot, now, IV, l, &s, info ? info : &local, &err);
	if (r < 0)
		fail_msg("open %s: %s (%s)", db, strerror(-r), err ? err : "");
	if (!info)
		free(local.set_aside);
	return s;
}

static struct history_store *xopen_ro(const char *db)
{
	struct history_store *s = NULL;
	_cleanup_free_ char *err = NULL;
	int r = history_store_open_readonly(db, &s, &err);
	if (r < 0)
		fail_msg("open read-only %s: %s (%s)", db, strerror(-r), err ? err : "");
	return s;
}

static void xrecord(struct history_store *s, uint64_t now, const struct history_sample *smp, size_t n)
{
	_cleanup_free_ char *err = NULL;
	int r = history_store_record(s, now, smp, n, &err);
	if (r < 0)
		fail_msg("record: %s (%s)", strerror(-r), err ? err : "");
}

static struct history_sample sample(const char *path, uint64_t inode, int64_t cpu, int64_t mem)
{
	return (struct history_sample){
		.key = { .path = path, .inode = inode },
		.v = { .cpu_usec = cpu,
		       .memory_bytes = mem,
		       .memory_peak_bytes = HISTORY_UNKNOWN,
		       .io_read_bytes = HISTORY_UNKNOWN,
		       .io_write_bytes = HISTORY_UNKNOWN,
		       .tasks = 1 },
		.created_seen = true, /* as if acctd saw it created: counters from 0 */
	};
}

/* Usage of exactly one path over [since, until). */
static struct history_usage *usage_of(struct history_store *s, const char *path, uint64_t since, uint64_t until,
				      bool include_removed)
{
	struct history_usage_query q = { .since_us = since, .until_us = until, .prefix = path, .depth = 0,
					 .include_removed = include_removed };
	struct history_usage *u = NULL;
	_cleanup_free_ char *err = NULL;
	int n = history_store_usage(s, &q, &u, &err);
	if (n < 0)
		fail_msg("usage: %s (%s)", strerror(-n), err ? err : "");
	if (n == 0) {
		free(u);
		return NULL;
	}
	assert_int_equal(n, 1);
	assert_string_equal(u[0].path, path);
	return u;
}

static void free_usage(struct history_usage *u)
{
	history_usage_array_free(u, u ? 1 : 0);
}

/* True CPU of the burner at t: 0.5 cores from T0 (linear, so that a window
 * edge between recordings has a true value between the points around it). */
static int64_t burner_cpu(uint64_t t)
{
	return (int64_t)((t - T0) / 2);
}

/* True memory of the grower at t: 1 MiB + 1 KiB per second (linear). */
static double grower_mem(uint64_t t)
{
	return 1048576.0 + 1024.0 * (double)(t - T0) / 1e6;
}

/* 31 recordings from T0 every IV of: /burner (CPU), /idle (nothing changes),
 * /grower (memory grows). */
static void record_three(struct history_store *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = T0 + i * IV;
		struct history_sample smp[] = {
			sample("/burner", 11, burner_cpu(t), 4096),
			sample("/idle", 12, 777, 8192),
			sample("/grower", 13, 5, (int64_t)grower_mem(t)),
		};
		xrecord(s, t, smp, ELEMENTSOF(smp));
	}
}

static void test_usage_equals_deltas(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_three(s, 31); /* T0 .. T0 + 300 s */

	/* Window on recordings: the delta is exact, and so is each edge (a
	 * recording saw the value there: the next point is one interval on). */
	struct history_usage *u = usage_of(s, "/burner", T0 + 50 * SEC, T0 + 200 * SEC + 1, true);
	assert_int_equal(u->lives, 1);
	assert_int_equal(u->cpu_usec, burner_cpu(T0 + 200 * SEC) - burner_cpu(T0 + 50 * SEC));
	assert_int_equal(u->cpu_usec_bound, 0);
	assert_int_equal(u->resolution, HISTORY_RAW);
	assert_int_equal(u->removed_us, 0);
	free_usage(u);

	/* Edges between recordings: the true delta lies within the bound. */
	uint64_t a = T0 + 55 * SEC, b = T0 + 203 * SEC;
	u = usage_of(s, "/burner", a, b, true);
	int64_t exact = burner_cpu(b) - burner_cpu(a);
	assert_true(llabs(u->cpu_usec - exact) <= u->cpu_usec_bound);
	assert_true(u->cpu_usec_bound > 0);
	assert_int_equal(u->recorded_us, b - a);
	free_usage(u);

	/* A life that begins in the window counts from 0 (the kernel's counter
	 * starts there), exactly. */
	u = usage_of(s, "/burner", T0 - 100 * SEC, T0 + 300 * SEC + 1, true);
	assert_int_equal(u->cpu_usec, burner_cpu(T0 + 300 * SEC));
	assert_int_equal(u->cpu_usec_bound, 0);
	assert_int_equal(u->first_seen_us, T0);
	free_usage(u);

	/* Idle: one point, the value held all along. */
	u = usage_of(s, "/idle", T0 + 100 * SEC, T0 + 200 * SEC, true);
	assert_int_equal(u->cpu_usec, 0);
	assert_int_equal(u->recorded_us, 100 * SEC);
	assert_true(fabs(u->memory_byte_seconds - 8192.0 * 100) < 1e-6);
	assert_true(u->memory_byte_seconds_bound == 0);
	assert_int_equal(u->memory_max_bytes, 8192);
	free_usage(u);

	/* Memory: the true integral of a moving value lies within the bound. */
	a = T0 + 20 * SEC;
	b = T0 + 290 * SEC;
	u = usage_of(s, "/grower", a, b, true);
	double exact_bs = (grower_mem(a) + grower_mem(b)) / 2 * (double)(b - a) / 1e6;
	assert_true(u->memory_byte_seconds_bound > 0);
	assert_true(fabs(u->memory_byte_seconds - exact_bs) <= u->memory_byte_seconds_bound);
	free_usage(u);

	/* Change-only: the idle cgroup has one point, the others one per recording. */
	struct history_stats st;
	assert_int_equal(history_store_stats(s, &st), 0);
	assert_int_equal(st.points[HISTORY_RAW], 1 + 31 + 31);
	assert_int_equal(st.lives, 3);
	assert_int_equal(st.schema_version, 5);
	history_store_close(s, T0 + 301 * SEC);
}

/* Change-only recording compares every value: a sample that differs from
 * the previous one only in its task count, or only in one I/O counter, is a
 * new point; and the I/O counters come back as recorded, read apart from
 * written. */
static void test_every_value_is_a_change(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	struct history_sample smp = sample("/io", 31, 100, 4096);
	struct history_stats st;

	smp.v.io_read_bytes = 0;
	smp.v.io_write_bytes = 0;
	xrecord(s, T0, &smp, 1);
	xrecord(s, T0 + IV, &smp, 1); /* unchanged: no point */
	assert_int_equal(history_store_stats(s, &st), 0);
	assert_int_equal(st.points[HISTORY_RAW], 1);
	smp.v.tasks = 3;
	xrecord(s, T0 + 2 * IV, &smp, 1);
	assert_int_equal(history_store_stats(s, &st), 0);
	assert_int_equal(st.points[HISTORY_RAW], 2);
	smp.v.io_write_bytes = 1 << 20;
	xrecord(s, T0 + 3 * IV, &smp, 1);
	smp.v.io_read_bytes = 3 << 10;
	xrecord(s, T0 + 4 * IV, &smp, 1);
	assert_int_equal(history_store_stats(s, &st), 0);
	assert_int_equal(st.points[HISTORY_RAW], 4);

	struct history_usage *u = usage_of(s, "/io", T0, T0 + 4 * IV + 1, true);
	assert_int_equal(u->io_read_bytes, 3 << 10);
	assert_int_equal(u->io_write_bytes, 1 << 20);
	free_usage(u);
	history_store_close(s, T0 + 5 * IV);
}

/* /idler: CPU 100 at T0, 1000 from T0 + 20 s, idle (no point) until it
 * rises to 5000 at T0 + 150 s; recorded every IV to T0 + 200 s, except
 * that with `late` the recordings at T0 + 130 s and T0 + 140 s are missed
 * (a recorder held up: 30 s from the last recording to the point). */
static void record_idler(struct history_store *s, bool late)
{
	for (unsigned i = 0; i <= 20; i++) {
		if (late && (i == 13 || i == 14))
			continue;
		int64_t cpu = i < 2 ? 100 : i < 15 ? 1000 : 5000;
		struct history_sample smp = sample("/idler", 21, cpu, 4096);
		xrecord(s, T0 + i * IV, &smp, 1);
	}
}

/* A window edge in an idle stretch: the recording before the next point
 * (one interval before it) still saw the value held since the last point,
 * and the counter never goes back, so the value at the edge is exact. */
static void test_edge_in_idle_stretch_exact(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_idler(s, false);
	/* Edges at T0 + 60 s and T0 + 140 s (= the next point, 150 s, less one
	 * interval): both exact. */
	static const uint64_t since[] = { 60 * SEC, 140 * SEC };
	for (size_t k = 0; k < ELEMENTSOF(since); k++) {
		struct history_usage *u = usage_of(s, "/idler", T0 + since[k], T0 + 200 * SEC, false);
		assert_non_null(u);
		assert_int_equal(u->cpu_usec, 4000);
		assert_int_equal(u->cpu_usec_bound, 0);
		free_usage(u);
	}
	/* Both edges in idle stretches: nothing used, exactly. */
	struct history_usage *u = usage_of(s, "/idler", T0 + 30 * SEC, T0 + 100 * SEC, false);
	assert_non_null(u);
	assert_int_equal(u->cpu_usec, 0);
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	history_store_close(s, T0 + 200 * SEC);
}

/* An edge inside the last interval before a point (the counter may have
 * moved anywhere in it), or one a late recording leaves uncovered, keeps
 * the difference of the points around it as its bound. */
static void test_edge_in_last_interval_bounded(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_idler(s, false);
	struct history_usage *u = usage_of(s, "/idler", T0 + 145 * SEC, T0 + 200 * SEC, false);
	assert_non_null(u);
	assert_int_equal(u->cpu_usec, 4000);
	assert_int_equal(u->cpu_usec_bound, 4000);
	free_usage(u);
	/* The upper edge too: [30 s, 145 s) used between 0 and 4000. */
	u = usage_of(s, "/idler", T0 + 30 * SEC, T0 + 145 * SEC, false);
	assert_non_null(u);
	assert_int_equal(u->cpu_usec, 0);
	assert_int_equal(u->cpu_usec_bound, 4000);
	free_usage(u);
	history_store_close(s, T0 + 200 * SEC);

	/* A run whose recordings were 30 s apart before the point: an edge
	 * 25 s before it lies after the last recording that saw the old value;
	 * one 30 s before it does not. */
	_cleanup_free_ char *db2 = xjoin(f->dir, "late.db");
	s = xopen(db2, BOOT, T0, &no_limits, NULL);
	record_idler(s, true);
	u = usage_of(s, "/idler", T0 + 125 * SEC, T0 + 200 * SEC, false);
	assert_non_null(u);
	assert_int_equal(u->cpu_usec, 4000);
	assert_int_equal(u->cpu_usec_bound, 4000);
	free_usage(u);
	u = usage_of(s, "/idler", T0 + 120 * SEC, T0 + 200 * SEC, false);
	assert_non_null(u);
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	history_store_close(s, T0 + 200 * SEC);
}

static void test_prefix_and_depth(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	struct history_sample smp[] = {
		sample("/a", 1, 10, 1), sample("/a/b", 2, 20, 1), sample("/a/b/c", 3, 30, 1), sample("/ab", 4, 40, 1),
	};
	xrecord(s, T0, smp, ELEMENTSOF(smp));
	struct history_usage_query q = { .since_us = T0, .until_us = T0 + SEC, .prefix = "/a", .depth = 1,
					 .include_removed = true };
	struct history_usage *u = NULL;
	char *err = NULL;
	int n = history_store_usage(s, &q, &u, &err);
	assert_int_equal(n, 2);
	assert_string_equal(u[0].path, "/a");
	assert_string_equal(u[1].path, "/a/b");
	history_usage_array_free(u, (size_t)n);
	q.depth = -1;
	n = history_store_usage(s, &q, &u, &err);
	assert_int_equal(n, 3);
	history_usage_array_free(u, (size_t)n);
	q.prefix = "/";
	n = history_store_usage(s, &q, &u, &err);
	assert_int_equal(n, 4);
	history_usage_array_free(u, (size_t)n);
	history_store_close(s, T0 + SEC);
}

/* group_level: one row per path at the level, with its own totals (the
 * kernel's hierarchical counters) and its subtree's paths counted; a prefix
 * known but empty in the window answers none, an unknown one -ENOENT. */
static void test_group_by_level(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	/* "/a-x" and "/a.y" sort between "/a" and "/a/b": a group's subtree is
	 * not contiguous in path order */
	struct history_sample smp[] = {
		sample("/a", 1, 100, 1),	  sample("/a-x", 2, 7, 1),    sample("/a.y", 3, 8, 1),
		sample("/a/b", 4, 60, 1),	  sample("/a/b/c", 5, 30, 1), sample("/a/d", 6, 40, 1),
		sample("/b", 7, 50, 1),
	};
	xrecord(s, T0, smp, ELEMENTSOF(smp));
	smp[0].v.cpu_usec = 1100;
	smp[3].v.cpu_usec = 560;
	smp[6].v.cpu_usec = 250;
	xrecord(s, T0 + 10 * SEC, smp, ELEMENTSOF(smp));
	struct history_usage_query q = { .since_us = T0, .until_us = T0 + 10 * SEC + 1, .prefix = "/",
					 .depth = -1, .include_removed = true, .group_level = 1 };
	struct history_usage *u = NULL;
	char *err = NULL;
	int n = history_store_usage(s, &q, &u, &err);
	assert_int_equal(n, 4);
	assert_string_equal(u[0].path, "/a");
	assert_int_equal(u[0].cpu_usec, 1100); /* its own counter (from 0: created_seen): the subtree's */
	assert_int_equal(u[0].subtree_paths, 3); /* /a/b, /a/b/c, /a/d */
	assert_string_equal(u[1].path, "/a-x");
	assert_int_equal(u[1].subtree_paths, 0);
	assert_string_equal(u[2].path, "/a.y");
	assert_string_equal(u[3].path, "/b");
	assert_int_equal(u[3].cpu_usec, 250);
	history_usage_array_free(u, (size_t)n);
	/* level 2 under /a: the level above is left out */
	q.prefix = "/a";
	q.group_level = 2;
	n = history_store_usage(s, &q, &u, &err);
	assert_int_equal(n, 2);
	assert_string_equal(u[0].path, "/a/b");
	assert_int_equal(u[0].cpu_usec, 560);
	assert_int_equal(u[0].subtree_paths, 1);
	assert_string_equal(u[1].path, "/a/d");
	assert_int_equal(u[1].subtree_paths, 0);
	history_usage_array_free(u, (size_t)n);
	/* no group 3 levels down under /b: none, no error */
	q.prefix = "/b";
	q.group_level = 3;
	assert_int_equal(history_store_usage(s, &q, &u, &err), 0);
	/* a known prefix outside the window: none; "/a/b/" is "/a/b" */
	q.group_level = 0;
	q.depth = 0;
	q.prefix = "/a/b/";
	q.since_us = T0 + 20 * SEC;
	q.until_us = T0 + 30 * SEC;
	q.include_removed = false;
	assert_int_equal(history_store_usage(s, &q, &u, &err), 1); /* still there: its last point holds */
	history_usage_array_free(u, 1);
	q.since_us = T0 - 20 * SEC;
	q.until_us = T0 - 10 * SEC;
	assert_int_equal(history_store_usage(s, &q, &u, &err), 0);
	/* a prefix no life ever had (not even below it) */
	q.prefix = "/a/bc";
	assert_int_equal(history_store_usage(s, &q, &u, &err), -ENOENT);
	q.prefix = "/nothing";
	assert_int_equal(history_store_usage(s, &q, &u, &err), -ENOENT);
	free(err);
	history_store_close(s, T0 + 30 * SEC);
}

/* A cgroup created and removed between two recordings is recorded and ended
 * without moving the run's last recording: the other lives' values are not
 * held past it (a trial's live usage counted 2.8 s short, as exact, after a
 * short-lived cgroup's removal), and the time after it stays a gap. */
static void test_unrecorded_removal_keeps_run_end(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned k = 0; k < 2; k++) {
		struct history_sample smp = sample("/busy", 1, burner_cpu(T0 + k * IV), 4096);
		xrecord(s, T0 + k * IV, &smp, 1);
	}
	struct history_sample flash = sample("/flash", 2, 300, 8192);
	struct history_record rec;
	char *err = NULL;
	assert_int_equal(history_store_removed_unrecorded(s, &flash, 0, T0 + IV + 3 * SEC, &rec, &err), 0);
	assert_string_equal(rec.path, "/flash");
	assert_int_equal(rec.cpu_usec, 300);
	history_record_clear(&rec);
	/* /busy is known to T0 + IV, its last recording, not to the removal */
	struct history_usage *u = usage_of(s, "/busy", T0, T0 + IV + 5 * SEC, false);
	assert_non_null(u);
	assert_int_equal(u->recorded_us, IV);
	free_usage(u);
	struct history_gap *gaps = NULL;
	int n = history_store_gaps(s, T0, T0 + IV + 5 * SEC, &gaps, &err);
	assert_int_equal(n, 1);
	assert_true(gaps[0].from_us == T0 + IV && gaps[0].to_us == T0 + IV + 5 * SEC);
	free(gaps);
	/* the next recording names /busy anew (not skipped as named twice) */
	struct history_sample smp = sample("/busy", 1, burner_cpu(T0 + 2 * IV), 4096);
	xrecord(s, T0 + 2 * IV, &smp, 1);
	u = usage_of(s, "/busy", T0, T0 + 2 * IV + 1, false);
	assert_non_null(u);
	assert_int_equal(u->cpu_usec, burner_cpu(T0 + 2 * IV));
	free_usage(u);
	free(err);
	history_store_close(s, T0 + 2 * IV);
}

static void xrecord_charge(struct history_store *s, uint64_t now, const char *path, uint64_t inode, int64_t value,
			   int64_t bound)
{
	_cleanup_free_ char *err = NULL;
	struct history_charge_sample c = { .key = { .path = path, .inode = inode }, .resource = "gpu",
					   .value = value, .bound = bound };
	int r = history_store_record_charges(s, now, &c, 1, &err);
	if (r < 0)
		fail_msg("record charges: %s (%s)", strerror(-r), err ? err : "");
}

/* Charged resources: a point per change, the integral of what was held
 * (value x time) with its bound (bound x time, plus each change x a step),
 * a removed life still answered, after a reopen too. */
static void test_charges_integral(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	/* 1000 held over [T0, T0 + 10 IV), then 3000 to the removal at
	 * T0 + 20 IV + 1 s */
	for (unsigned k = 0; k <= 20; k++) {
		uint64_t t = T0 + k * IV;
		struct history_sample smp = sample("/svc", 7, 0, 4096);
		xrecord(s, t, &smp, 1);
		xrecord_charge(s, t, "/svc", 7, k < 10 ? 1000 : 3000, 10);
		xrecord_charge(s, t, "/unknown", 8, 5, 0); /* no life: skipped */
	}
	_cleanup_free_ char *err = NULL;
	struct history_charge_usage u;
	assert_int_equal(history_store_charge_usage(s, "/svc", "gpu", T0, T0 + 5 * IV, &u, &err), 0);
	assert_int_equal(u.lives, 1);
	assert_int_equal(u.recorded_us, 5 * IV);
	assert_true(fabs(u.value_seconds - 1000.0 * 5 * IV / 1e6) < 1e-6);
	assert_true(fabs(u.bound_seconds - 10.0 * 5 * IV / 1e6) < 1e-6);
	assert_int_equal(u.max_value, 1000);
	assert_int_equal(u.removed_us, 0);
	/* over the change: the true integral, the change at any time in
	 * (T0 + 9 IV, T0 + 10 IV], lies within the bound */
	assert_int_equal(history_store_charge_usage(s, "/svc", "gpu", T0, T0 + 20 * IV, &u, &err), 0);
	double lo = 1000.0 * 9 * IV / 1e6 + 3000.0 * 11 * IV / 1e6, hi = 1000.0 * 10 * IV / 1e6 + 3000.0 * 10 * IV / 1e6;
	assert_true(fabs(u.value_seconds - lo) <= u.bound_seconds + 1e-6);
	assert_true(fabs(u.value_seconds - hi) <= u.bound_seconds + 1e-6);
	assert_true(fabs(u.bound_seconds - (10.0 * 20 * IV / 1e6 + 2000.0 * IV / 1e6)) < 1e-6);
	assert_int_equal(u.max_value, 3000);

	struct history_charge_point *pts = NULL;
	int n = history_store_charge_points(s, "/svc", "gpu", T0, T0 + 20 * IV, &pts, &err);
	assert_int_equal(n, 2); /* change only */
	assert_true(pts[0].t_us == T0 && pts[0].end_us == T0 + 10 * IV && pts[0].value == 1000);
	assert_true(pts[1].t_us == T0 + 10 * IV && pts[1].end_us == T0 + 20 * IV && pts[1].value == 3000);
	free(pts);
	assert_int_equal(history_store_charge_usage(s, "/svc", "other", T0, T0 + IV, &u, &err), -ENOENT);
	assert_int_equal(history_store_charge_usage(s, "/unknown", "gpu", T0, T0 + IV, &u, &err), -ENOENT);

	/* removed: the value holds to the removal, and is answered after */
	uint64_t gone = T0 + 20 * IV + SEC;
	struct history_values fin = sample("/svc", 7, 0, 4096).v;
	struct history_record rec;
	assert_int_equal(history_store_removed(s, &(struct history_key){ .path = "/svc", .inode = 7 }, &fin, 0, gone,
					       &rec, &err),
			 0);
	history_record_clear(&rec);
	history_store_close(s, gone);
	s = xopen_ro(f->db);
	assert_int_equal(history_store_charge_usage(s, "/svc", "gpu", T0 + 10 * IV, gone + 100 * SEC, &u, &err), 0);
	assert_int_equal(u.removed_us, gone);
	assert_int_equal(u.recorded_us, gone - (T0 + 10 * IV));
	assert_true(fabs(u.value_seconds - 3000.0 * (double)(gone - T0 - 10 * IV) / 1e6) < 1e-6);
	history_store_close(s, 0);
}

/* A restart is a gap for charged values too: the new run restates an
 * unchanged value (a point at its first recording) and nothing holds across
 * the gap. */
static void test_charges_across_restart(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned k = 0; k <= 5; k++) {
		struct history_sample smp = sample("/svc", 7, 0, 4096);
		xrecord(s, T0 + k * IV, &smp, 1);
		xrecord_charge(s, T0 + k * IV, "/svc", 7, 500, 0);
	}
	history_store_close(s, T0 + 5 * IV);
	uint64_t t1 = T0 + 100 * IV; /* down for 95 intervals */
	s = xopen(f->db, BOOT, t1, &no_limits, NULL);
	for (unsigned k = 0; k <= 5; k++) {
		struct history_sample smp = sample("/svc", 7, 0, 4096);
		xrecord(s, t1 + k * IV, &smp, 1);
		xrecord_charge(s, t1 + k * IV, "/svc", 7, 500, 0);
	}
	_cleanup_free_ char *err = NULL;
	struct history_charge_point *pts = NULL;
	int n = history_store_charge_points(s, "/svc", "gpu", T0, t1 + 5 * IV, &pts, &err);
	assert_int_equal(n, 2);
	assert_true(pts[0].t_us == T0 && pts[0].end_us == T0 + 5 * IV);
	assert_true(pts[1].t_us == t1 && pts[1].end_us == t1 + 5 * IV);
	free(pts);
	struct history_charge_usage u;
	assert_int_equal(history_store_charge_usage(s, "/svc", "gpu", T0, t1 + 5 * IV, &u, &err), 0);
	assert_int_equal(u.recorded_us, 10 * IV);
	assert_true(fabs(u.value_seconds - 500.0 * 10 * IV / 1e6) < 1e-6);
	assert_true(u.bound_seconds == 0); /* no change, exact reads */
	history_store_close(s, t1 + 5 * IV);
}

static void test_removed_survives_reopen(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_three(s, 10); /* to T0 + 90 s */
	struct history_key key = { "/burner", 11 };
	struct history_values final = sample("/burner", 11, burner_cpu(T0 + 95 * SEC), 4096).v;
	final.memory_peak_bytes = 65536;
	struct history_record rec;
	char *err = NULL;
	assert_int_equal(history_store_removed(s, &key, &final, 0, T0 + 95 * SEC, &rec, &err), 0);
	assert_string_equal(rec.path, "/burner");
	assert_int_equal(rec.first_seen_us, T0);
	assert_int_equal(rec.removed_us, T0 + 95 * SEC);
	assert_int_equal(rec.cpu_usec, burner_cpu(T0 + 95 * SEC));
	assert_int_equal(rec.memory_peak_bytes, 65536);
	assert_int_equal(rec.recorded_us, 95 * SEC);
	assert_true(fabs(rec.memory_byte_seconds - 4096.0 * 95) < 1e-6);
	history_record_clear(&rec);
	/* Gone from the index: a second removal finds nothing. */
	assert_int_equal(history_store_removed(s, &key, &final, 0, T0 + 96 * SEC, &rec, &err), -ENOENT);
	free(err);
	err = NULL;
	history_store_close(s, T0 + 100 * SEC);

	s = xopen_ro(f->db);
	struct history_usage *u = usage_of(s, "/burner", T0, T0 + 3600 * SEC, true);
	assert_non_null(u);
	assert_int_equal(u->removed_us, T0 + 95 * SEC);
	assert_int_equal(u->cpu_usec, burner_cpu(T0 + 95 * SEC));
	assert_int_equal(u->cpu_usec_bound, 0);
	assert_int_equal(u->memory_peak_bytes, 65536);
	assert_int_equal(u->recorded_us, 95 * SEC);
	free_usage(u);
	assert_null(usage_of(s, "/burner", T0, T0 + 3600 * SEC, false));
	/* Still existing: /idle is there without removed ones. */
	u = usage_of(s, "/idle", T0, T0 + 3600 * SEC, false);
	assert_non_null(u);
	free_usage(u);
	history_store_close(s, 0);
}

/* A cgroup created while acctd was down (the new-user trial's: 2.736 s of
 * CPU, served as 5.1 ms): found at the next start of the same boot, which
 * the last run did not see at its last recording, so it was created after
 * that and its counters count from 0 there. A window that holds that
 * recording holds its whole life: exact. One that begins between that
 * recording and its first point counts from the point, and what it used
 * before is its bound (some, all or none of it in the window). A start on
 * another boot knows nothing of when it was created: from its first point,
 * as before. */
static void test_created_while_down_counts_from_zero(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned k = 0; k < 3; k++) {
		struct history_sample smp = sample("/old", 1, 500 * k, 4096);
		xrecord(s, T0 + k * IV, &smp, 1);
	}
	s = history_store_close(s, T0 + 2 * IV); /* down from T0 + 20 s to T0 + 120 s */
	s = xopen(f->db, BOOT, T0 + 120 * SEC, &no_limits, NULL);
	for (unsigned k = 0; k < 3; k++) {
		struct history_sample smp[] = { sample("/old", 1, 1000 + 500 * k, 4096),
						sample("/down", 2, 2736000 + 1000 * k, 4096) };
		smp[0].created_seen = smp[1].created_seen = false;
		smp[1].v.memory_peak_bytes = 7 << 20;
		xrecord(s, T0 + 120 * SEC + k * IV, smp, 2);
	}
	struct history_usage *u = usage_of(s, "/down", T0, T0 + 150 * SEC, true);
	assert_int_equal(u->cpu_usec, 2736000 + 2000);
	assert_int_equal(u->cpu_usec_bound, 0);
	assert_int_equal(u->memory_peak_bytes, 7 << 20); /* since its creation, in the window */
	free_usage(u);
	/* from the last run's end on: the same */
	u = usage_of(s, "/down", T0 + 2 * IV, T0 + 150 * SEC, true);
	assert_int_equal(u->cpu_usec, 2736000 + 2000);
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	/* beginning while it may already have run: from its first point, the
	 * rest its bound */
	u = usage_of(s, "/down", T0 + 60 * SEC, T0 + 150 * SEC, true);
	assert_int_equal(u->cpu_usec, 2000);
	assert_int_equal(u->cpu_usec_bound, 2736000);
	assert_true(u->memory_peak_bytes == HISTORY_UNKNOWN);
	free_usage(u);
	/* /old continued its life across the gap: exact, the gap's CPU included */
	u = usage_of(s, "/old", T0, T0 + 150 * SEC, true);
	assert_int_equal(u->cpu_usec, 2000);
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	s = history_store_close(s, T0 + 150 * SEC);
	/* another boot: its lives are new, and nothing says when they began */
	s = xopen(f->db, BOOT2, T0 + 200 * SEC, &no_limits, NULL);
	struct history_sample other = sample("/down", 2, 3000000, 4096);
	other.created_seen = false;
	xrecord(s, T0 + 200 * SEC, &other, 1);
	other.v.cpu_usec += 100;
	xrecord(s, T0 + 210 * SEC, &other, 1);
	u = usage_of(s, "/down", T0 + 160 * SEC, T0 + 220 * SEC, false);
	assert_int_equal(u->cpu_usec, 100);
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	history_store_close(s, T0 + 220 * SEC);
}

/* Memory that rises and falls back between two recordings (the new-user
 * trial's 28 MiB held for 4 s of a 10 s interval) leaves its mark only in
 * the kernel's peak: the recordings around it see 1 MiB each. The bound
 * covers the true integral through the peak's rise; without one (a peak
 * that stayed) the held value is taken as exact, as before. */
static void test_spike_between_recordings_bounded(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	const int64_t base = 1 << 20, spike = 28 << 20;
	for (unsigned i = 0; i <= 4; i++) {
		struct history_sample smp = sample("/spiky", 21, 0, base);
		smp.v.memory_peak_bytes = i < 2 ? base : spike; /* the spike: within (T0 + 10 s, T0 + 20 s] */
		xrecord(s, T0 + i * IV, &smp, 1);
	}
	struct history_usage *u = usage_of(s, "/spiky", T0, T0 + 4 * IV, true);
	/* true: 1 MiB for 40 s, and 27 MiB more for 4 s of them */
	double exact_bs = (double)base * 40 + (double)(spike - base) * 4;
	assert_true(fabs(u->memory_byte_seconds - (double)base * 40) < 1e-6);
	assert_true(fabs(u->memory_byte_seconds - exact_bs) <= u->memory_byte_seconds_bound);
	assert_true(u->memory_byte_seconds_bound <= (double)(spike - base) * (double)IV / 1e6 + 1e-6);
	free_usage(u);
	/* the spike's interval is outside [T0 + 20 s, T0 + 40 s): nothing moved there */
	u = usage_of(s, "/spiky", T0 + 2 * IV, T0 + 4 * IV, true);
	assert_true(u->memory_byte_seconds_bound == 0);
	free_usage(u);
	history_store_close(s, T0 + 4 * IV);
}

/* A cgroup removed before acctd read it after its last task left: its final
 * point's CPU time is what it had used at that read, and up to the bound
 * given more. The bound stays with the life (a reopen, a read-only store)
 * and is that of every usage window in which the life ends; a window that
 * ends before the removal does not take it, and a final removal has none. */
static void test_removed_not_final_bound(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_three(s, 10); /* to T0 + 90 s */
	struct history_key key = { "/burner", 11 };
	struct history_values final = sample("/burner", 11, burner_cpu(T0 + 90 * SEC), 4096).v;
	struct history_record rec;
	char *err = NULL;
	const int64_t cpu_bound = 2 * 5 * SEC; /* read 5 s before its removal, 2 CPUs */
	assert_int_equal(history_store_removed(s, &key, &final, cpu_bound, T0 + 95 * SEC, &rec, &err), 0);
	assert_int_equal(rec.cpu_usec, burner_cpu(T0 + 90 * SEC));
	assert_int_equal(rec.cpu_usec_bound, cpu_bound);
	history_record_clear(&rec);
	/* /idle removed with final values: no bound */
	struct history_key idle = { "/idle", 12 };
	struct history_values v = sample("/idle", 12, 777, 8192).v;
	assert_int_equal(history_store_removed(s, &idle, &v, 0, T0 + 95 * SEC, &rec, &err), 0);
	assert_int_equal(rec.cpu_usec_bound, 0);
	history_record_clear(&rec);
	history_store_close(s, T0 + 100 * SEC);

	s = xopen_ro(f->db);
	struct history_usage *u = usage_of(s, "/burner", T0, T0 + 3600 * SEC, true);
	assert_non_null(u);
	assert_int_equal(u->cpu_usec, burner_cpu(T0 + 90 * SEC));
	assert_int_equal(u->cpu_usec_bound, cpu_bound);
	free_usage(u);
	/* a window that begins after its first point: the start's own bound
	 * (0: a recording) plus the final point's */
	u = usage_of(s, "/burner", T0 + 30 * SEC, T0 + 3600 * SEC, true);
	assert_int_equal(u->cpu_usec, burner_cpu(T0 + 90 * SEC) - burner_cpu(T0 + 30 * SEC));
	assert_int_equal(u->cpu_usec_bound, cpu_bound);
	free_usage(u);
	/* ending before the removal: the recordings' values, as before */
	u = usage_of(s, "/burner", T0, T0 + 60 * SEC + 1, true);
	assert_int_equal(u->cpu_usec, burner_cpu(T0 + 60 * SEC));
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	u = usage_of(s, "/idle", T0, T0 + 3600 * SEC, true);
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	history_store_close(s, 0);
	free(err);
}

/* A cgroup found when acctd started (created_seen false) used CPU before its
 * first point, at a time nobody recorded: a window that begins before it
 * counts from that point, exactly, and has no kernel peak (since creation,
 * not the window's). One acctd saw created counts from 0, peak included; a
 * life keeps what its first recording said across a restart, whose scan
 * finds every cgroup as "not seen created". */
static void test_found_at_start_is_baseline(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned k = 0; k < 3; k++) {
		struct history_sample smp[] = { sample("/old", 1, 86400000000 + 500 * k, 4096),
						sample("/new", 2, 700 + 500 * k, 4096) };
		smp[0].created_seen = false;
		smp[0].v.memory_peak_bytes = smp[1].v.memory_peak_bytes = 5 << 20;
		xrecord(s, T0 + k * IV, smp, 2);
	}
	s = history_store_close(s, T0 + 2 * IV);
	struct history_usage *u = usage_of(s = xopen(f->db, BOOT, T0 + 3 * IV, &no_limits, NULL), "/old",
					   T0 - 600 * SEC, T0 + 3 * IV, true);
	assert_int_equal(u->cpu_usec, 1000);
	assert_int_equal(u->cpu_usec_bound, 0);
	assert_true(u->memory_peak_bytes == HISTORY_UNKNOWN);
	free_usage(u);
	u = usage_of(s, "/new", T0 - 600 * SEC, T0 + 3 * IV, true);
	assert_int_equal(u->cpu_usec, 1700);
	assert_int_equal(u->cpu_usec_bound, 0);
	assert_int_equal(u->memory_peak_bytes, 5 << 20);
	free_usage(u);
	/* a restart: the scan says "not seen created" of both; /new's life
	 * continues and still counts from 0 */
	struct history_sample again[] = { sample("/old", 1, 86400000000 + 2000, 4096), sample("/new", 2, 2700, 4096) };
	again[0].created_seen = again[1].created_seen = false;
	xrecord(s, T0 + 3 * IV, again, 2);
	u = usage_of(s, "/new", T0 - 600 * SEC, T0 + 4 * IV, true);
	assert_int_equal(u->lives, 1);
	assert_int_equal(u->cpu_usec, 2700);
	free_usage(u);
	u = usage_of(s, "/old", T0 - 600 * SEC, T0 + 4 * IV, true);
	assert_int_equal(u->cpu_usec, 2000);
	free_usage(u);
	history_store_close(s, T0 + 4 * IV);
}

/* The same baseline once minutes are rolled up: a window that begins a
 * minute before a found-at-start life's first point reads that minute from
 * its rollup, which keeps the bucket's last values, not the first point's.
 * The baseline kept with the life answers: the CPU used since the first
 * point, exactly (it was the whole counter, ±the whole counter). */
static void test_baseline_under_rollups(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0 + 25 * SEC, &no_limits, NULL);
	const int64_t before = 1000000 * (int64_t)SEC; /* used before acctd started */
	unsigned k;
	for (k = 0; k < 20; k++) {
		struct history_sample smp = sample("/", 1, before + 300 * k, 4096);
		smp.created_seen = false;
		xrecord(s, T0 + 25 * SEC + k * IV, &smp, 1);
		char *err = NULL;
		assert_int_equal(history_store_maintain(s, T0 + 25 * SEC + k * IV, &err), 0);
	}
	struct history_usage *u = usage_of(s, "/", T0 - 60 * SEC, T0 + 25 * SEC + k * IV, true);
	assert_int_equal(u->cpu_usec, 300 * (k - 1));
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	history_store_close(s, T0 + 25 * SEC + k * IV);
}

/* A removal between two recordings observes its own life only: the other
 * lives' values are not held over the time since the last recording (a
 * trial saw a live cgroup's CPU claimed exact 7 s past its last point,
 * because a removal had moved the run's end). The removed life is covered
 * to its removal. */
static void test_removal_does_not_extend_others(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned k = 0; k < 3; k++) {
		struct history_sample smp[] = { sample("/busy", 1, 1000 * k, 4096), sample("/gone", 2, 10 * k, 4096) };
		xrecord(s, T0 + k * IV, smp, 2);
	}
	struct history_key key = { "/gone", 2 };
	struct history_values final = sample("/gone", 2, 25, 4096).v;
	struct history_record rec;
	char *err = NULL;
	assert_int_equal(history_store_removed(s, &key, &final, 0, T0 + 25 * SEC, &rec, &err), 0);
	history_record_clear(&rec);
	struct history_usage *u = usage_of(s, "/busy", T0, T0 + 26 * SEC, true);
	assert_int_equal(u->recorded_us, 20 * SEC);
	assert_int_equal(u->cpu_usec, 2000);
	free_usage(u);
	u = usage_of(s, "/gone", T0, T0 + 26 * SEC, true);
	assert_int_equal(u->recorded_us, 25 * SEC);
	assert_int_equal(u->cpu_usec, 25);
	free_usage(u);
	history_store_close(s, T0 + 26 * SEC);
}

/* A series whose steps do not fall on minute boundaries, over minutes that
 * are rolled up: read from the points, not from rollups spread over the
 * steps (a trial saw memory in steps before the cgroup existed and more
 * cores than the host has). A cgroup appears at 65 s and burns one core
 * until 125 s. */
static void test_series_unaligned_over_rollups(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned k = 0; k < 24; k++) {
		uint64_t t = T0 + 5 * SEC + k * IV;
		struct history_sample smp[2] = { sample("/other", 1, 0, 4096) };
		size_t n = 1;
		if (t >= T0 + 65 * SEC) {
			uint64_t busy_to = MIN(t, T0 + 125 * SEC);
			smp[n++] = sample("/job", 2, (int64_t)(busy_to - (T0 + 65 * SEC)), 200 << 20);
		}
		xrecord(s, t, smp, n);
		char *err = NULL;
		assert_int_equal(history_store_maintain(s, t, &err), 0);
	}
	struct history_step *steps = NULL;
	char *err = NULL;
	int n = history_store_series(s, "/job", T0 + 7 * SEC, T0 + 237 * SEC, IV, &steps, &err);
	assert_int_equal(n, 23);
	for (int i = 0; i < n; i++) {
		uint64_t a = steps[i].t_us;
		if (a + IV <= T0 + 65 * SEC)
			assert_true(steps[i].covered_us == 0); /* before it existed */
		else {
			assert_true(steps[i].covered_us > 0);
			assert_true(steps[i].cpu_cores <= 1.0 + 1e-9);
			assert_true(steps[i].memory_max_bytes == 200 << 20);
		}
		if (a >= T0 + 75 * SEC && a + IV <= T0 + 125 * SEC)
			assert_true(fabs(steps[i].cpu_cores - 1.0) < 1e-9);
	}
	free(steps);
	history_store_close(s, T0 + 245 * SEC);
}

/* A series of values never read (a cgroup in no memory or I/O hierarchy) has
 * no memory mean and no I/O rate, not 0; a counter that is read and idle
 * has a rate of 0. */
static void test_series_unknown_is_absent(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned k = 0; k < 4; k++) {
		struct history_sample smp[] = { sample("/cpu-only", 1, 500, HISTORY_UNKNOWN),
						sample("/all", 2, 700, 4096) };
		smp[1].v.io_read_bytes = smp[1].v.io_write_bytes = 1 << 20;
		xrecord(s, T0 + k * IV, smp, 2);
	}
	struct history_step *steps = NULL;
	char *err = NULL;
	int n = history_store_series(s, "/cpu-only", T0, T0 + 30 * SEC, IV, &steps, &err);
	assert_int_equal(n, 3);
	for (int i = 0; i < n; i++) {
		assert_true(steps[i].covered_us == IV);
		assert_true(steps[i].cpu_cores == 0.0);
		assert_true(isnan(steps[i].memory_mean_bytes));
		assert_true(isnan(steps[i].io_read_bytes_per_s) && isnan(steps[i].io_write_bytes_per_s));
	}
	free(steps);
	n = history_store_series(s, "/all", T0, T0 + 30 * SEC, IV, &steps, &err);
	assert_int_equal(n, 3);
	for (int i = 0; i < n; i++) {
		assert_true(steps[i].memory_mean_bytes == 4096.0);
		assert_true(steps[i].io_read_bytes_per_s == 0.0 && steps[i].io_write_bytes_per_s == 0.0);
	}
	free(steps);
	/* a path never seen is an error; a known one outside the window, empty steps */
	steps = NULL;
	assert_int_equal(history_store_series(s, "/nope", T0, T0 + 30 * SEC, IV, &steps, &err), -ENOENT);
	assert_null(steps);
	n = history_store_series(s, "/all", T0 - 100 * SEC, T0 - 50 * SEC, IV, &steps, &err);
	assert_int_equal(n, 5);
	for (int i = 0; i < n; i++)
		assert_true(steps[i].covered_us == 0);
	free(steps);
	history_store_close(s, T0 + 30 * SEC);
}

/* A series in steps shorter than the recording interval: an increase of CPU
 * time is spread over the time it can have happened in (the last interval
 * before its point), never put whole in the point's step. 10 s of CPU
 * between the recordings at 10 s and 20 s is one core over [10 s, 20 s), not
 * ten cores in [20 s, 21 s). */
/* A window that ends before the next point (at it, or inside the interval
 * before it): the increase up to that point began inside the window and is
 * spread over its last steps too. Before, those steps showed a rate of 0 (a
 * trial saw 0.21 cores against 0.95 in the step cut by --until). */
static void test_series_last_steps(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_three(s, 10); /* /burner at 0.5 cores, points at 0, 10, ..., 90 s */
	static const struct {
		uint64_t a, b, step; /* seconds */
	} w[] = {
		{ 0, 90, 10 }, { 5, 85, 10 }, { 3, 88, 7 }, { 60, 90, 1 }, { 0, 91, 13 }, { 0, 95, 10 },
	};
	for (size_t k = 0; k < ELEMENTSOF(w); k++) {
		struct history_step *steps = NULL;
		char *err = NULL;
		int n = history_store_series(s, "/burner", T0 + w[k].a * SEC, T0 + w[k].b * SEC, w[k].step * SEC,
					     &steps, &err);
		assert_true(n > 0);
		unsigned covered = 0;
		for (int i = 0; i < n; i++) {
			if (steps[i].covered_us == 0) /* after the last point: no data */
				continue;
			covered++;
			if (fabs(steps[i].cpu_cores - 0.5) > 1e-9)
				fail_msg("window [%" PRIu64 ", %" PRIu64 ") step %" PRIu64 " s: step %d shows %.3f cores",
					 w[k].a, w[k].b, w[k].step, i, steps[i].cpu_cores);
		}
		assert_true(covered >= (unsigned)n - 1);
		free(steps);
	}
	history_store_close(s, T0 + 100 * SEC);
}

static void test_series_spreads_increases(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	static const int64_t cpu[] = { 0, 0, 10 * (int64_t)SEC, 10 * (int64_t)SEC };
	for (unsigned k = 0; k < ELEMENTSOF(cpu); k++) {
		struct history_sample smp = sample("/burst", 3, cpu[k], 4096);
		xrecord(s, T0 + k * IV, &smp, 1);
	}
	struct history_step *steps = NULL;
	char *err = NULL;
	int n = history_store_series(s, "/burst", T0, T0 + 30 * SEC, SEC, &steps, &err);
	assert_int_equal(n, 30);
	double total = 0;
	for (int i = 0; i < n; i++) {
		double want = i >= 10 && i < 20 ? 1.0 : 0.0;
		assert_true(steps[i].covered_us == SEC);
		assert_true(fabs(steps[i].cpu_cores - want) < 1e-9);
		total += steps[i].cpu_cores * (double)steps[i].covered_us;
	}
	assert_true(fabs(total - 10.0 * (double)SEC) < 1.0);
	free(steps);
	history_store_close(s, T0 + 30 * SEC);
}

/* A recorder stalled for 15 intervals (issue 27: a thread blocked in a
 * write, SIGSTOP, a suspended machine): recordings at 0..90 s, then none
 * until 240 s, then on. The stall is a gap like a restart's: not covered,
 * the series empty there, the memory not held over it, the CPU across it
 * still exact (cumulative counters), and no window edge inside the run
 * bounded by the stall's whole length. On main the run went on: the stall
 * was covered with the last values held, and max_step_us became 150 s. */
static void test_stall_is_a_gap(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	const uint64_t stall_from = T0 + 90 * SEC, stall_to = stall_from + 15 * IV; /* 240 s */
	for (uint64_t t = T0; t <= stall_to + 90 * SEC; t += IV) {
		if (t > stall_from && t < stall_to)
			continue; /* the recorder is stalled: nothing recorded */
		struct history_sample smp[] = {
			sample("/burner", 11, burner_cpu(t), 4096),
			sample("/idle", 12, 777, 8192),
		};
		xrecord(s, t, smp, ELEMENTSOF(smp));
	}
	const uint64_t end = stall_to + 90 * SEC;

	struct history_gap *g = NULL;
	char *err = NULL;
	int n = history_store_gaps(s, T0, end, &g, &err);
	assert_int_equal(n, 1);
	assert_int_equal(g[0].from_us, stall_from);
	assert_int_equal(g[0].to_us, stall_to);
	free(g);

	/* Over the whole time: 90 s recorded before, 90 s after; the CPU of
	 * the stall is in the total, exactly (the counter's value after it
	 * holds it). */
	struct history_usage *u = usage_of(s, "/idle", T0, end, false);
	assert_int_equal(u->recorded_us, 180 * SEC);
	assert_true(fabs(u->memory_byte_seconds - 8192.0 * 180) < 1e-6);
	free_usage(u);
	u = usage_of(s, "/burner", T0, end, false);
	assert_int_equal(u->recorded_us, 180 * SEC);
	assert_int_equal(u->cpu_usec, burner_cpu(end - IV));
	assert_int_equal(u->cpu_usec_bound, burner_cpu(end) - burner_cpu(end - IV));
	free_usage(u);

	/* A window inside the stall has no recorded time, no memory held. */
	u = usage_of(s, "/idle", stall_from + 20 * SEC, stall_to - 20 * SEC, false);
	assert_non_null(u);
	assert_int_equal(u->recorded_us, 0);
	assert_true(u->memory_byte_seconds == 0);
	assert_true(u->memory_max_bytes == INT64_MIN || u->memory_max_bytes == HISTORY_UNKNOWN);
	free_usage(u);

	/* After the stall the run's steps are the interval again: an edge in
	 * an idle stretch there is exact, not bounded by the stall. */
	u = usage_of(s, "/idle", stall_to + 20 * SEC, end, false);
	assert_int_equal(u->cpu_usec, 0);
	assert_int_equal(u->cpu_usec_bound, 0);
	assert_int_equal(u->recorded_us, end - stall_to - 20 * SEC);
	free_usage(u);

	/* A window that ends just after the stall: its start is held at the
	 * value before the stall, bounded by all the stall's CPU (75 s), over
	 * 15 s. With the CPUs known the answer is what they allow, never more
	 * than cpus x 15 s, the true 7.5 s within its bound. */
	for (unsigned cpus = 0; cpus <= 2; cpus++) {
		const uint64_t a = stall_to - 10 * SEC, b = stall_to + 5 * SEC;
		struct history_usage_query q = { .since_us = a, .until_us = b, .prefix = "/burner", .depth = 0,
						 .cpus = cpus };
		n = history_store_usage(s, &q, &u, &err);
		assert_int_equal(n, 1);
		const int64_t truth = burner_cpu(b) - burner_cpu(a);
		assert_true(llabs(u->cpu_usec - truth) <= u->cpu_usec_bound);
		if (cpus)
			assert_true(u->cpu_usec <= (int64_t)(cpus * (b - a)));
		if (cpus == 1) {
			assert_int_equal(u->cpu_usec, 7500000);
			assert_int_equal(u->cpu_usec_bound, 7500000);
		}
		/* said wherever the CPUs cut it (Usage's cpu_clipped) */
		assert_int_equal(u->cpu_clipped, cpus > 0);
		if (cpus == 0)
			assert_int_equal(u->cpu_usec, 75 * (int64_t)SEC); /* unclamped: all the stall's CPU */
		free_usage(u);
	}

	/* The series: nothing in the stall's steps, never the held values. */
	struct history_step *steps = NULL;
	n = history_store_series(s, "/idle", T0, end, 30 * SEC, &steps, &err);
	assert_int_equal(n, 11);
	for (int i = 0; i < n; i++) {
		uint64_t a = steps[i].t_us, b = a + 30 * SEC;
		if (a >= stall_from && b <= stall_to) {
			assert_int_equal(steps[i].covered_us, 0);
			assert_true(isnan(steps[i].memory_mean_bytes));
		} else if (b <= stall_from || a >= stall_to)
			assert_int_equal(steps[i].covered_us, 30 * SEC);
	}
	free(steps);
	history_store_close(s, end);

	/* Read back by another connection (the query thread's): the same. */
	s = xopen_ro(f->db);
	n = history_store_gaps(s, T0, end, &g, &err);
	assert_int_equal(n, 1);
	free(g);
	history_store_close(s, end);
}

/* A removal seen after a stall ends the run too: the removed life's last
 * values are not held over the stall up to its final point. */
static void test_removal_after_stall_is_not_held(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned i = 0; i < 10; i++) {
		struct history_sample smp = sample("/gone", 21, 1000, 4096);
		xrecord(s, T0 + i * IV, &smp, 1);
	}
	struct history_record rec = {};
	char *err = NULL;
	struct history_key key = { "/gone", 21 };
	struct history_sample fin = sample("/gone", 21, 2000, 4096);
	const uint64_t removed = T0 + 90 * SEC + 20 * IV;
	assert_int_equal(history_store_removed(s, &key, &fin.v, 0, removed, &rec, &err), 0);
	/* Recorded from its first recording to the run's last one: 90 s. */
	assert_int_equal(rec.recorded_us, 90 * SEC);
	history_record_clear(&rec);
	struct history_usage *u = usage_of(s, "/gone", T0 + 100 * SEC, removed + SEC, true);
	assert_non_null(u);
	assert_int_equal(u->recorded_us, 0);
	free_usage(u);
	history_store_close(s, removed);
}

static void test_restart_continues_life(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	for (unsigned i = 0; i < 10; i++) {
		struct history_sample smp = sample("/svc", 100, 1000 * i, 4096);
		xrecord(s, T0 + i * IV, &smp, 1);
	}
	history_store_close(s, T0 + 95 * SEC);

	/* Down for 10 minutes; the cgroup kept running (cpu 9000 -> 50000). */
	uint64_t t1 = T0 + 690 * SEC;
	s = xopen(f->db, BOOT, t1, &no_limits, NULL);
	for (unsigned i = 0; i < 10; i++) {
		struct history_sample smp = sample("/svc", 100, 50000 + 1000 * i, 4096);
		xrecord(s, t1 + i * IV, &smp, 1);
	}
	struct history_usage *u = usage_of(s, "/svc", T0, t1 + 100 * SEC, true);
	assert_int_equal(u->lives, 1);
	/* Cumulative across the restart: exact, the gap included. */
	assert_int_equal(u->cpu_usec, 59000);
	assert_int_equal(u->cpu_usec_bound, 0);
	/* Recorded: 90 s of the first run, 90 s of the second; not the gap. */
	assert_int_equal(u->recorded_us, 180 * SEC);
	assert_true(fabs(u->memory_byte_seconds - 4096.0 * 180) < 1e-6);
	free_usage(u);

	struct history_gap *g = NULL;
	char *err = NULL;
	int n = history_store_gaps(s, T0 - 10 * SEC, t1 + 100 * SEC, &g, &err);
	assert_int_equal(n, 3);
	assert_int_equal(g[0].from_us, T0 - 10 * SEC);
	assert_int_equal(g[0].to_us, T0);
	assert_int_equal(g[1].from_us, T0 + 90 * SEC);
	assert_int_equal(g[1].to_us, t1);
	assert_int_equal(g[2].from_us, t1 + 90 * SEC);
	free(g);

	/* Gaps are not interpolated: the series has nothing in them. */
	struct history_step *steps = NULL;
	n = history_store_series(s, "/svc", T0, t1 + 90 * SEC, 30 * SEC, &steps, &err);
	assert_int_equal(n, 26);
	for (int i = 0; i < n; i++) {
		bool in_gap = steps[i].t_us >= T0 + 90 * SEC && steps[i].t_us + 30 * SEC <= t1;
		if (in_gap) {
			assert_int_equal(steps[i].covered_us, 0);
			assert_true(isnan(steps[i].memory_mean_bytes));
			assert_true(isnan(steps[i].cpu_cores));
		} else
			assert_true(steps[i].covered_us > 0);
	}
	assert_int_equal(steps[0].covered_us, 30 * SEC);
	assert_true(fabs(steps[0].memory_mean_bytes - 4096) < 1e-9);
	/* 1000 us of CPU per 10 s: 1e-4 cores. */
	assert_true(fabs(steps[1].cpu_cores - 1e-4) < 1e-12);
	free(steps);
	history_store_close(s, t1 + 95 * SEC);

	/* A third run: the same path with a new inode is a new life; the old
	 * one ended with the last run that saw it. */
	uint64_t t2 = t1 + 200 * SEC;
	s = xopen(f->db, BOOT, t2, &no_limits, NULL);
	struct history_sample smp = sample("/svc", 101, 7, 4096);
	xrecord(s, t2, &smp, 1);
	xrecord(s, t2 + IV, &smp, 1);
	u = usage_of(s, "/svc", T0, t2 + 100 * SEC, true);
	assert_int_equal(u->lives, 2);
	assert_int_equal(u->cpu_usec, 59000 + 7);
	assert_int_equal(u->removed_us, 0);
	free_usage(u);
	history_store_close(s, t2 + IV);

	/* Another boot: the lives of the last one are over. */
	s = xopen(f->db, BOOT2, t2 + 100 * SEC, &no_limits, NULL);
	u = usage_of(s, "/svc", T0, t2 + 200 * SEC, true);
	assert_int_equal(u->lives, 2);
	assert_int_equal(u->removed_us, t2 + IV);
	free_usage(u);
	history_store_close(s, t2 + 100 * SEC);
}

static void write_bytes(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
}

static void sql(const char *db, const char *text)
{
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(h, text, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", text, msg);
	sqlite3_close(h);
}

static bool integrity_ok(const char *db)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	bool ok = sqlite3_step(st) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
	sqlite3_finalize(st);
	sqlite3_close(h);
	return ok;
}

/* Open over a bad file: set aside for the reason `why` (a part of it), a
 * new store created and usable. */
static void assert_set_aside(const char *db, const char *why)
{
	struct history_open_info info = {};
	struct history_store *s = xopen(db, BOOT, T0 + 5 * SEC, &no_limits, &info);
	assert_true(info.created);
	assert_non_null(info.set_aside);
	if (!strstr(info.set_aside_why, why))
		fail_msg("set aside for \"%s\", not \"%s\"", info.set_aside_why, why);
	char want[4096];
	snprintf(want, sizeof(want), "%s.corrupt-%llu", db, (unsigned long long)(T0 / SEC + 5));
	assert_string_equal(info.set_aside, want);
	assert_int_equal(access(info.set_aside, F_OK), 0);
	struct history_sample smp = sample("/x", 1, 1, 1);
	xrecord(s, T0 + 10 * SEC, &smp, 1);
	history_store_close(s, T0 + 10 * SEC);
	assert_true(integrity_ok(db));
	unlink(info.set_aside);
	free(info.set_aside);
}

static void test_corrupt_file_set_aside(void **state)
{
	struct fixture *f = *state;
	char garbage[8192];
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)(i * 7919 + 13);
	write_bytes(f->db, garbage, sizeof(garbage));
	assert_set_aside(f->db, "not a database");

	/* A real store whose pages were damaged afterwards. */
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_three(s, 31);
	history_store_close(s, T0 + 400 * SEC);
	int fd = open(f->db, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, garbage, 4096, 4096), 4096);
	close(fd);
	assert_set_aside(f->db, "");
}

static void test_foreign_and_newer_set_aside(void **state)
{
	struct fixture *f = *state;
	sql(f->db, "CREATE TABLE foo (x); INSERT INTO foo VALUES (1)");
	assert_set_aside(f->db, "another application's database");
	unlink(f->db);
	/* Ours, but a schema this acctd does not know: never half-used. */
	sql(f->db, "PRAGMA application_id = 1633903476; PRAGMA user_version = 99; CREATE TABLE future (x)");
	assert_set_aside(f->db, "schema version 99, which this acctd");
}

/* A file whose version number and tables disagree (a build whose migration
 * changed without a new version wrote it: the one this test is named for
 * lacked lives.born_after_us): set aside, never a store that fails every
 * recording on the missing column. */
static void test_tables_unlike_their_version_set_aside(void **state)
{
	struct fixture *f = *state;
	static const struct {
		const char *sql, *why;
	} damage[] = {
		{ "ALTER TABLE lives DROP COLUMN born_after_us", "table lives has no column born_after_us" },
		{ "DROP TABLE meta", "without its table meta" },
		{ "ALTER TABLE runs ADD COLUMN extra INTEGER", "table runs has a column extra it does not define" },
	};
	for (size_t i = 0; i < ELEMENTSOF(damage); i++) {
		struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
		record_three(s, 31);
		history_store_close(s, T0 + 400 * SEC);
		sql(f->db, damage[i].sql);
		assert_set_aside(f->db, damage[i].why);
		unlink(f->db);
	}
	/* A table of the file's own beside ours does no harm: used as it is. */
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	history_store_close(s, T0 + 10 * SEC);
	sql(f->db, "CREATE TABLE notes (x)");
	struct history_open_info info = {};
	s = xopen(f->db, BOOT, T0 + 20 * SEC, &no_limits, &info);
	assert_null(info.set_aside);
	assert_false(info.created);
	history_store_close(s, T0 + 30 * SEC);
}

/* Schema version 1, as acctd wrote it before rollups (a fixture: the
 * migration must turn exactly this into the current schema). */
static const char schema_v1[] =
	"PRAGMA application_id = 1633903476; PRAGMA user_version = 1;"
	"CREATE TABLE runs (id INTEGER PRIMARY KEY, boot_id TEXT NOT NULL, started_us INTEGER NOT NULL,"
	"  last_us INTEGER NOT NULL, ended_us INTEGER, interval_us INTEGER NOT NULL);"
	"CREATE TABLE lives (id INTEGER PRIMARY KEY, path TEXT NOT NULL, boot_id TEXT NOT NULL,"
	"  inode INTEGER NOT NULL, first_seen_us INTEGER NOT NULL, removed_us INTEGER);"
	"CREATE INDEX lives_path ON lives (path);"
	"CREATE TABLE points (life INTEGER NOT NULL, t_us INTEGER NOT NULL, run INTEGER NOT NULL,"
	"  cpu_usec INTEGER, memory_bytes INTEGER, memory_peak_bytes INTEGER, io_read_bytes INTEGER,"
	"  io_write_bytes INTEGER, tasks INTEGER, PRIMARY KEY (life, t_us)) WITHOUT ROWID;"
	"INSERT INTO runs VALUES (1, '0123456789abcdef0123456789abcdef', 1764576000000000, 1764576020000000,"
	"  NULL, 10000000);"
	"INSERT INTO lives VALUES (1, '/old', '0123456789abcdef0123456789abcdef', 5, 1764576000000000, NULL);"
	"INSERT INTO points VALUES (1, 1764576000000000, 1, 100, 4096, NULL, NULL, NULL, 1);"
	"INSERT INTO points VALUES (1, 1764576010000000, 1, 300, 4096, NULL, NULL, NULL, 1);"
	"INSERT INTO points VALUES (1, 1764576020000000, 1, 600, 4096, NULL, NULL, NULL, 1);";

static void test_migrate_v1(void **state)
{
	struct fixture *f = *state;
	sql(f->db, schema_v1);
	struct history_open_info info = {};
	struct history_store *s = xopen(f->db, BOOT, T0 + 100 * SEC, &no_limits, &info);
	assert_true(info.migrated);
	assert_int_equal(info.from_version, 1);
	assert_false(info.created);
	assert_null(info.set_aside);
	/* The old run did not close: it ended at its last recording, and its
	 * life continues (same boot, path, inode). */
	struct history_sample smp = sample("/old", 5, 1600, 4096);
	xrecord(s, T0 + 100 * SEC, &smp, 1);
	struct history_usage *u = usage_of(s, "/old", T0, T0 + 200 * SEC, true);
	assert_int_equal(u->lives, 1);
	/* A life from before schema 3 does not say whether acctd saw it
	 * created: its first point (100) is a baseline, not counted. */
	assert_int_equal(u->cpu_usec, 1600 - 100);
	assert_int_equal(u->recorded_us, 20 * SEC);
	free_usage(u);
	struct history_stats st;
	assert_int_equal(history_store_stats(s, &st), 0);
	assert_int_equal(st.schema_version, 5);
	history_store_close(s, T0 + 110 * SEC);
	/* The size cap can give pages back now. */
	sqlite3 *h = NULL;
	sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA auto_vacuum", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 2);
	sqlite3_finalize(q);
	sqlite3_close(h);
	assert_true(integrity_ok(f->db));
	/* Opened again: nothing more to migrate. */
	s = xopen(f->db, BOOT, T0 + 200 * SEC, &no_limits, &info);
	assert_false(info.migrated);
	history_store_close(s, T0 + 200 * SEC);
}

/* Schema version 2, as acctd wrote it before runs kept their longest step:
 * the v1 fixture migrated (the same statements), with a removed life's
 * accounting record and a minute rollup. Its run's step is unknown: its
 * edges keep their difference bounds; a new run's are exact in idle
 * stretches. The rollup keeps its values in v3's smaller row. */
static const char schema_v2_more[] =
	"CREATE TABLE rollups (res INTEGER NOT NULL, life INTEGER NOT NULL, t_us INTEGER NOT NULL,"
	"  t_last_us INTEGER NOT NULL, run INTEGER NOT NULL, covered_us INTEGER NOT NULL,"
	"  memory_integral REAL NOT NULL, memory_bound REAL NOT NULL, memory_min INTEGER, memory_max INTEGER,"
	"  tasks_max INTEGER, cpu_usec INTEGER, memory_bytes INTEGER, memory_peak_bytes INTEGER,"
	"  io_read_bytes INTEGER, io_write_bytes INTEGER, tasks INTEGER,"
	"  PRIMARY KEY (res, life, t_us)) WITHOUT ROWID;"
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
	"ALTER TABLE lives ADD COLUMN rec_cpu_usec INTEGER;"
	"ALTER TABLE lives ADD COLUMN rec_memory_peak_bytes INTEGER;"
	"ALTER TABLE lives ADD COLUMN rec_memory_byte_seconds REAL;"
	"ALTER TABLE lives ADD COLUMN rec_memory_byte_seconds_bound REAL;"
	"ALTER TABLE lives ADD COLUMN rec_io_read_bytes INTEGER;"
	"ALTER TABLE lives ADD COLUMN rec_io_write_bytes INTEGER;"
	"ALTER TABLE lives ADD COLUMN rec_recorded_us INTEGER;"
	"INSERT INTO lives VALUES (2, '/gone', '0123456789abcdef0123456789abcdef', 6, 1764576000000000,"
	"  1764576020000000, 50, NULL, 0.0, 0.0, NULL, NULL, 20000000);"
	"INSERT INTO points VALUES (2, 1764576000000000, 1, 10, 4096, NULL, NULL, NULL, 1);"
	"INSERT INTO points VALUES (2, 1764576020000000, 1, 50, 4096, NULL, NULL, NULL, 1);"
	"INSERT INTO rollups VALUES (1, 2, 1764576000000000, 1764576020000000, 1, 20000000, 81920000000.0, 0.0,"
	"  4096, 4096, 1, 50, 4096, NULL, NULL, NULL, 1);"
	"PRAGMA user_version = 2;";

static void test_migrate_v2(void **state)
{
	struct fixture *f = *state;
	sql(f->db, schema_v1);
	sql(f->db, schema_v2_more);
	struct history_open_info info = {};
	struct history_store *s = xopen(f->db, BOOT, T0 + 100 * SEC, &no_limits, &info);
	assert_true(info.migrated);
	assert_int_equal(info.from_version, 2);
	{
		sqlite3 *h = NULL;
		sqlite3_stmt *q = NULL;
		assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(h,
						    "SELECT t_us, t_last_off, uncovered_us, memory_integral, cpu_usec"
						    " FROM rollups WHERE res = 1 AND life = 2",
						    -1, &q, NULL),
				 SQLITE_OK);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int64(q, 0), (int64_t)T0);
		assert_int_equal(sqlite3_column_int64(q, 1), 20 * SEC);
		assert_int_equal(sqlite3_column_int64(q, 2), 40 * SEC);
		assert_true(sqlite3_column_double(q, 3) == 81920000000.0);
		assert_int_equal(sqlite3_column_int64(q, 4), 50);
		assert_int_equal(sqlite3_step(q), SQLITE_DONE);
		sqlite3_finalize(q);
		sqlite3_close(h);
	}
	/* The old run's edges: [5 s, 15 s) of /old lies between its points
	 * (100, 300, 600 at 0, 10, 20 s) and keeps the difference bounds. */
	struct history_usage *u = usage_of(s, "/old", T0 + 5 * SEC, T0 + 15 * SEC, true);
	assert_int_equal(u->cpu_usec, 200);
	assert_int_equal(u->cpu_usec_bound, 200 + 300);
	free_usage(u);
	u = usage_of(s, "/gone", T0, T0 + 200 * SEC, true);
	assert_int_equal(u->cpu_usec, 50 - 10); /* from its first point: a life of schema 2 */
	assert_int_equal(u->cpu_usec_bound, 0); /* removed before schema 4: final, as it claimed */
	assert_int_equal(u->removed_us, T0 + 20 * SEC);
	free_usage(u);
	/* The new run records its steps: an idle stretch's edge is exact. */
	for (unsigned i = 0; i <= 10; i++) {
		struct history_sample smp = sample("/old", 5, i < 8 ? 1600 : 2000, 4096);
		xrecord(s, T0 + 100 * SEC + i * IV, &smp, 1);
	}
	u = usage_of(s, "/old", T0 + 120 * SEC, T0 + 210 * SEC, true);
	assert_int_equal(u->cpu_usec, 400);
	assert_int_equal(u->cpu_usec_bound, 0);
	free_usage(u);
	struct history_stats st;
	assert_int_equal(history_store_stats(s, &st), 0);
	assert_int_equal(st.schema_version, 5);
	history_store_close(s, T0 + 210 * SEC);
	assert_true(integrity_ok(f->db));
	s = xopen(f->db, BOOT, T0 + 300 * SEC, &no_limits, &info);
	assert_false(info.migrated);
	history_store_close(s, T0 + 300 * SEC);
}

/* The writer killed with SIGKILL while it records (many cgroups, every
 * recording changing): the file opens intact, and the last recording the
 * child reported is there (loss: at most the recording in flight). */
static void test_sigkill_while_recording(void **state)
{
	struct fixture *f = *state;
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		struct history_store *s = NULL;
		struct history_open_info info = {};
		char *err = NULL;
		if (history_store_open(f->db, BOOT, T0, IV, &no_limits, &s, &info, &err) < 0)
			_exit(1);
		enum { N = 500 };
		static struct history_sample smp[N];
		static char paths[N][32];
		for (uint64_t i = 1;; i++) {
			for (unsigned j = 0; j < N; j++) {
				snprintf(paths[j], sizeof(paths[j]), "/job-%u", j);
				smp[j] = sample(paths[j], 1000 + j, (int64_t)(i * 1000 + j), (int64_t)(i * 4096));
			}
			if (history_store_record(s, T0 + i * IV, smp, N, &err) < 0)
				_exit(2);
			if (write(pfd[1], &i, sizeof(i)) != sizeof(i))
				_exit(3);
		}
	}
	close(pfd[1]);
	uint64_t last = 0, i;
	while (last < 30 && read(pfd[0], &i, sizeof(i)) == sizeof(i))
		last = i;
	assert_int_equal(kill(pid, SIGKILL), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	while (read(pfd[0], &i, sizeof(i)) == sizeof(i))
		last = i;
	close(pfd[0]);
	assert_true(last >= 30);

	assert_true(integrity_ok(f->db));
	struct history_store *s = xopen_ro(f->db);
	struct history_gap *g = NULL;
	char *err = NULL;
	int n = history_store_gaps(s, T0, T0 + 100000 * SEC, &g, &err);
	assert_int_equal(n, 1);
	/* The run's last recording: the last reported, or the one after it
	 * that committed before the child could report it. */
	assert_true(g[0].from_us == T0 + last * IV || g[0].from_us == T0 + (last + 1) * IV);
	uint64_t end = g[0].from_us;
	free(g);
	struct history_usage *u = usage_of(s, "/job-7", T0, end + 1, true);
	assert_int_equal(u->cpu_usec, (int64_t)((end - T0) / IV * 1000 + 7));
	free_usage(u);
	history_store_close(s, 0);
	/* Opened for writing: the killed run ends at its last recording. */
	s = xopen(f->db, BOOT, end + 60 * SEC, &no_limits, NULL);
	history_store_close(s, end + 60 * SEC);
	assert_true(integrity_ok(f->db));
}

/* ---- rollups, retention, the size cap ------------------------------------ */

#define N_CG 6
static const char *const cg_paths[N_CG] = { "/c0", "/c1", "/c2", "/c3", "/c4", "/c5" };

/* Recording k (every IV from T0) of cgroup i: it changes in two periods of
 * every three ((k / (i + 1)) % 3 != 0), CPU and memory both. */
static struct history_sample cg_sample(unsigned i, unsigned k)
{
	unsigned changes = 0;
	for (unsigned j = 1; j <= k; j++)
		changes += (j / (i + 1)) % 3 != 0;
	return sample(cg_paths[i], 200 + i, (int64_t)changes * 37 * (i + 1),
		      1048576 + (int64_t)((changes * (i + 3)) % 17) * 4096);
}

/* Three hours (1080 recordings), acctd down from 1h30 to 1h40, /c5 removed
 * at 2h30. */
static struct history_store *record_hours(const char *db, const struct history_limits *l)
{
	struct history_store *s = xopen(db, BOOT, T0, l, NULL);
	for (unsigned k = 0; k < 1080; k++) {
		uint64_t t = T0 + k * IV;
		if (k == 540)
			s = history_store_close(s, t - IV);
		if (k >= 540 && k < 600)
			continue;
		if (k == 600)
			s = xopen(db, BOOT, t, l, NULL);
		struct history_sample smp[N_CG];
		size_t n = 0;
		for (unsigned i = 0; i < N_CG; i++)
			if (i != 5 || k < 900)
				smp[n++] = cg_sample(i, k);
		xrecord(s, t, smp, n);
		if (k == 900) {
			struct history_key key = { "/c5", 205 };
			struct history_values v = cg_sample(5, 900).v;
			struct history_record rec;
			char *err = NULL;
			assert_int_equal(history_store_removed(s, &key, &v, 0, t + 5 * SEC, &rec, &err), 0);
			history_record_clear(&rec);
		}
	}
	return s;
}

struct window {
	uint64_t a, b;
	bool aligned; /* to the resolution compared */
};

struct answer {
	int64_t cpu, cpu_bound;
	double bs, bs_bound;
	uint64_t recorded;
	enum history_resolution res;
};

static void answers(struct history_store *s, const struct window *w, size_t n_w, struct answer out[][N_CG])
{
	for (size_t j = 0; j < n_w; j++)
		for (unsigned i = 0; i < N_CG; i++) {
			struct history_usage *u = usage_of(s, cg_paths[i], w[j].a, w[j].b, true);
			if (!u) {
				out[j][i] = (struct answer){ .cpu = HISTORY_UNKNOWN };
				continue;
			}
			out[j][i] = (struct answer){ u->cpu_usec, u->cpu_usec_bound, u->memory_byte_seconds,
						     u->memory_byte_seconds_bound, u->recorded_us, u->resolution };
			free_usage(u);
		}
}

/* A rollup's answer against the raw one over the same window: CPU within
 * the coarser answer's bound (exact over whole lives), memory's integral and
 * the recorded time equal on bucket boundaries, within the bound elsewhere. */
static void assert_agree(const struct window *w, size_t n_w, struct answer raw[][N_CG], struct answer got[][N_CG],
			 enum history_resolution want)
{
	for (size_t j = 0; j < n_w; j++)
		for (unsigned i = 0; i < N_CG; i++) {
			const struct answer *r = &raw[j][i], *g = &got[j][i];
			if (r->cpu == HISTORY_UNKNOWN) {
				assert_int_equal(g->cpu, HISTORY_UNKNOWN);
				continue;
			}
			assert_int_equal(r->res, HISTORY_RAW);
			assert_int_equal(g->res, want);
			if (llabs(g->cpu - r->cpu) > g->cpu_bound)
				fail_msg("window %zu %s: cpu %" PRId64 " +- %" PRId64 ", raw %" PRId64, j, cg_paths[i],
					 g->cpu, g->cpu_bound, r->cpu);
			if (w[j].aligned) {
				assert_int_equal(g->recorded, r->recorded);
				if (fabs(g->bs - r->bs) > 1e-9 * r->bs + 1e-6)
					fail_msg("window %zu %s: byte-seconds %.6f, raw %.6f", j, cg_paths[i], g->bs, r->bs);
			} else if (fabs(g->bs - r->bs) > g->bs_bound + 1e-6)
				fail_msg("window %zu %s: byte-seconds %.3f +- %.3f, raw %.3f", j, cg_paths[i], g->bs,
					 g->bs_bound, r->bs);
		}
}

static void maintain_until_done(struct history_store *s, uint64_t now)
{
	for (unsigned i = 0; i < 20; i++) {
		_cleanup_free_ char *err = NULL;
		int r = history_store_maintain(s, now, &err);
		if (r < 0)
			fail_msg("maintain: %s (%s)", strerror(-r), err ? err : "");
	}
}

/* Issue 27: Usage over [0, 2^62) (a 100-byte call from anyone) planned the
 * window a minute at a time past the rollups: ~5 ms a year, minutes of CPU
 * on the query thread. The planner's work follows the data: an hour of it
 * takes a bounded number of rounds, whatever the window, and the answer is
 * the one for a window just around the data; gaps say honestly that there
 * is nothing before or after. Work is counted in the planner's rounds, not
 * timed. */
static void test_far_window_costs_the_data(void **state)
{
	struct fixture *f = *state;
	const uint64_t H = 3600 * SEC;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_three(s, 361); /* T0 .. T0 + 1 h */
	maintain_until_done(s, T0 + H);
	history_store_close(s, T0 + H);
	s = xopen_ro(f->db);

	struct history_usage_query near = { .since_us = T0 - H, .until_us = T0 + 2 * H, .prefix = "/", .depth = -1,
					    .include_removed = true };
	struct history_usage_query far = near, years = near;
	far.since_us = 0;
	far.until_us = UINT64_C(1) << 62;
	years.since_us = 0;
	years.until_us = T0 + 10 * 366 * 24 * H; /* main: 5 million rounds, 50 ms */
	struct history_usage *un = NULL, *uf = NULL, *uy = NULL;
	_cleanup_free_ char *err = NULL;
	int nn = history_store_usage(s, &near, &un, &err);
	assert_int_equal(nn, 3);

	s->plan_steps = 0;
	assert_int_equal(history_store_usage(s, &years, &uy, &err), nn);
	if (s->plan_steps > 16)
		fail_msg("10 years of window, an hour of data: %" PRIu64 " planning rounds", s->plan_steps);
	s->plan_steps = 0;
	assert_int_equal(history_store_usage(s, &far, &uf, &err), nn);
	if (s->plan_steps > 16)
		fail_msg("[0, 2^62), an hour of data: %" PRIu64 " planning rounds", s->plan_steps);

	for (int i = 0; i < nn; i++)
		for (int k = 0; k < 2; k++) {
			const struct history_usage *a = &un[i], *b = k ? &uf[i] : &uy[i];
			assert_string_equal(a->path, b->path);
			assert_int_equal(a->lives, b->lives);
			assert_int_equal(a->first_seen_us, b->first_seen_us);
			assert_int_equal(a->cpu_usec, b->cpu_usec);
			assert_int_equal(a->cpu_usec_bound, b->cpu_usec_bound);
			assert_int_equal(a->recorded_us, b->recorded_us);
			assert_true(a->memory_byte_seconds == b->memory_byte_seconds);
			assert_true(a->memory_byte_seconds_bound == b->memory_byte_seconds_bound);
			assert_int_equal(a->memory_max_bytes, b->memory_max_bytes);
			assert_int_equal(a->resolution, b->resolution);
		}
	/* the burner's CPU from 0 to its last recording, all of it recorded */
	assert_string_equal(uf[0].path, "/burner");
	assert_int_equal(uf[0].cpu_usec, burner_cpu(T0 + H));
	assert_int_equal(uf[0].recorded_us, H);

	/* Gaps: nothing before the run, nothing after its last recording. */
	struct history_gap *g = NULL;
	int ng = history_store_gaps(s, far.since_us, far.until_us, &g, &err);
	assert_int_equal(ng, 2);
	assert_int_equal(g[0].from_us, 0);
	assert_int_equal(g[0].to_us, T0);
	assert_int_equal(g[1].from_us, T0 + H);
	assert_int_equal(g[1].to_us, far.until_us);
	free(g);

	history_usage_array_free(un, (size_t)nn);
	history_usage_array_free(uf, (size_t)nn);
	history_usage_array_free(uy, (size_t)nn);
	history_store_close(s, 0);
}

static void test_rollups_agree_with_raw(void **state)
{
	struct fixture *f = *state;
	const uint64_t H = 3600 * SEC, M = 60 * SEC;
	struct history_limits l = { .retention_us = { 365 * 24 * H, 365 * 24 * H, 365 * 24 * H } };
	struct history_store *s = record_hours(f->db, &l);
	const uint64_t now = T0 + 1080 * IV;

	const struct window minute_w[] = {
		{ T0 - H, T0 + 4 * H, true },          /* whole lives: CPU exact */
		{ T0 + 7 * M, T0 + 52 * M, true },
		{ T0 + 80 * M, T0 + 160 * M, true },  /* across the gap and the removal */
		{ T0 + 30 * M + 10 * SEC, T0 + 2 * H + 5 * M + 35 * SEC, false },
	};
	const struct window hour_w[] = {
		{ T0 - H, T0 + 4 * H, true },
		{ T0 + H, T0 + 2 * H, true },
		{ T0, T0 + 2 * H, true },
		{ T0 + 20 * M, T0 + 100 * M, false },
	};
	struct answer raw_m[ELEMENTSOF(minute_w)][N_CG], raw_h[ELEMENTSOF(hour_w)][N_CG];
	answers(s, minute_w, ELEMENTSOF(minute_w), raw_m);
	answers(s, hour_w, ELEMENTSOF(hour_w), raw_h);
	/* Whole lives: CPU is the last value, exactly. */
	for (unsigned i = 0; i < N_CG; i++) {
		assert_int_equal(raw_m[0][i].cpu, cg_sample(i, i == 5 ? 900 : 1079).v.cpu_usec);
		assert_int_equal(raw_m[0][i].cpu_bound, 0);
	}

	/* Rolled up, nothing dropped: whole buckets come from rollups (hours
	 * at the window's ends too), the counters' values at the ends from
	 * points, and the answers are the same. */
	maintain_until_done(s, now);
	struct answer mixed[ELEMENTSOF(minute_w)][N_CG], mixed_h[ELEMENTSOF(hour_w)][N_CG];
	answers(s, minute_w, ELEMENTSOF(minute_w), mixed);
	answers(s, hour_w, ELEMENTSOF(hour_w), mixed_h);
	for (size_t j = 0; j < ELEMENTSOF(minute_w) + ELEMENTSOF(hour_w); j++)
		for (unsigned i = 0; i < N_CG; i++) {
			bool m = j < ELEMENTSOF(minute_w);
			const struct answer *g = m ? &mixed[j][i] : &mixed_h[j - ELEMENTSOF(minute_w)][i];
			const struct answer *r = m ? &raw_m[j][i] : &raw_h[j - ELEMENTSOF(minute_w)][i];
			assert_int_equal(g->res, HISTORY_RAW);
			assert_int_equal(g->cpu, r->cpu);
			assert_int_equal(g->cpu_bound, r->cpu_bound);
			assert_int_equal(g->recorded, r->recorded);
			assert_true(fabs(g->bs - r->bs) <= 1e-9 * r->bs + 1e-6);
		}

	/* Raw kept 20 minutes: older windows are answered from minute rollups. */
	l.retention_us[HISTORY_RAW] = 20 * M;
	history_store_set_limits(s, &l);
	maintain_until_done(s, now);
	struct history_stats st;
	assert_int_equal(history_store_stats(s, &st), 0);
	assert_true(st.points[HISTORY_MINUTE] > 0);
	assert_true(st.points[HISTORY_HOUR] > 0);
	struct answer got_m[ELEMENTSOF(minute_w)][N_CG];
	answers(s, minute_w, ELEMENTSOF(minute_w), got_m);
	assert_agree(minute_w, ELEMENTSOF(minute_w), raw_m, got_m, HISTORY_MINUTE);
	for (unsigned i = 0; i < N_CG; i++)
		assert_int_equal(got_m[0][i].cpu_bound, 0);

	/* Minutes kept 30 minutes: older windows from hour rollups. */
	l.retention_us[HISTORY_MINUTE] = 30 * M;
	history_store_set_limits(s, &l);
	maintain_until_done(s, now);
	struct answer got_h[ELEMENTSOF(hour_w)][N_CG];
	answers(s, hour_w, ELEMENTSOF(hour_w), got_h);
	assert_agree(hour_w, ELEMENTSOF(hour_w), raw_h, got_h, HISTORY_HOUR);

	/* Retention: nothing of the dropped resolutions is older than it
	 * (but for each life's last row before the cutoff). */
	assert_int_equal(history_store_stats(s, &st), 0);
	assert_true(st.points[HISTORY_RAW] <= N_CG + 20 * 6 * N_CG);
	assert_true(st.points[HISTORY_MINUTE] <= N_CG + 60 * N_CG);
	history_store_close(s, now);
}

/* A series over minutes that are rolled up (their points dropped) and the
 * recent points: a path created in the minute not rolled up yet has no row in
 * the minutes' piece, and no values there; its points give the last step. */
static void test_series_new_life_past_rollups(void **state)
{
	struct fixture *f = *state;
	const uint64_t M = 60 * SEC;
	struct history_limits l = { .retention_us = { 20 * M, 0, 0 } };
	struct history_store *s = xopen(f->db, BOOT, T0, &l, NULL);
	for (unsigned k = 0; k < 360; k++) { /* 1 h, /new from 59:40 */
		struct history_sample smp[] = { sample("/old", 1, k * 100, 4096 + k), sample("/new", 2, k * 50, 8192) };
		xrecord(s, T0 + k * IV, smp, k >= 358 ? 2 : 1);
	}
	const uint64_t now = T0 + 359 * IV;
	maintain_until_done(s, now);
	struct history_step *steps = NULL;
	char *err = NULL;
	int n = history_store_series(s, "/new", T0 + 30 * M, now, 10 * M, &steps, &err);
	assert_int_equal(n, 3);
	assert_true(steps[0].covered_us == 0);
	assert_true(steps[1].covered_us == 0);
	assert_int_equal(steps[2].covered_us, IV);
	assert_true(steps[2].memory_max_bytes == 8192);
	free(steps);
	steps = NULL;
	/* the one before it over the same window: from the minutes, then points */
	n = history_store_series(s, "/old", T0 + 30 * M, now, 10 * M, &steps, &err);
	assert_int_equal(n, 3);
	for (int i = 0; i < n; i++)
		assert_true(steps[i].covered_us > 0);
	free(steps);
	free(err);
	history_store_close(s, now);
}

/* Retention drops old points but keeps each life's last one: an idle
 * cgroup's value still holds in the recent window, and older windows come
 * from rollups. */
static void test_retention_keeps_held_value(void **state)
{
	struct fixture *f = *state;
	const uint64_t M = 60 * SEC;
	struct history_limits l = { .retention_us = { 20 * M, 0, 0 } };
	struct history_store *s = xopen(f->db, BOOT, T0, &l, NULL);
	for (unsigned k = 0; k < 720; k++) { /* 2 h */
		struct history_sample smp[] = { sample("/idle", 1, 5, 8192), sample("/busy", 2, k * 100, 4096 + k) };
		xrecord(s, T0 + k * IV, smp, ELEMENTSOF(smp));
	}
	const uint64_t now = T0 + 719 * IV;
	maintain_until_done(s, now);
	struct history_stats st;
	assert_int_equal(history_store_stats(s, &st), 0);
	/* /idle: its one point; /busy: the last 20 minutes and one before. */
	assert_true(st.points[HISTORY_RAW] <= 1 + 20 * 6 + 2);
	assert_true(st.oldest_us[HISTORY_RAW] == T0);
	struct history_usage *u = usage_of(s, "/idle", now - 10 * M, now, true);
	assert_int_equal(u->resolution, HISTORY_RAW);
	assert_int_equal(u->recorded_us, 10 * M);
	assert_true(fabs(u->memory_byte_seconds - 8192.0 * 600) < 1e-6);
	assert_int_equal(u->cpu_usec, 0);
	free_usage(u);
	u = usage_of(s, "/idle", T0 + 30 * M, T0 + 40 * M, true);
	assert_int_equal(u->resolution, HISTORY_MINUTE);
	assert_int_equal(u->recorded_us, 10 * M);
	assert_true(fabs(u->memory_byte_seconds - 8192.0 * 600) < 1e-6);
	free_usage(u);
	u = usage_of(s, "/busy", T0 + 30 * M, T0 + 40 * M, true);
	assert_int_equal(u->resolution, HISTORY_MINUTE);
	assert_int_equal(u->recorded_us, 10 * M);
	/* Whole minutes at the ends: CPU exact from the minutes' last points
	 * (60 recordings of 100 us, the first edge held at 29:50). */
	assert_true(llabs(u->cpu_usec - 6000) <= u->cpu_usec_bound);
	free_usage(u);
	history_store_close(s, now);
}

/* Charge points under retention: a value held since long keeps its one
 * point, a moving one loses the points superseded before the longest
 * retention, and what lies inside it is whole. */
static void test_charges_retention(void **state)
{
	struct fixture *f = *state;
	const uint64_t M = 60 * SEC;
	struct history_limits l = { .retention_us = { 20 * M, 40 * M, 60 * M } };
	struct history_store *s = xopen(f->db, BOOT, T0, &l, NULL);
	const unsigned n_rec = 4 * 360; /* 4 h */
	for (unsigned k = 0; k < n_rec; k++) {
		struct history_sample smp[] = { sample("/idle", 1, 5, 8192), sample("/busy", 2, k * 100, 4096) };
		xrecord(s, T0 + k * IV, smp, ELEMENTSOF(smp));
		xrecord_charge(s, T0 + k * IV, "/idle", 1, 500, 0);
		xrecord_charge(s, T0 + k * IV, "/busy", 2, k, 0);
	}
	const uint64_t now = T0 + (n_rec - 1) * IV;
	maintain_until_done(s, now);
	_cleanup_free_ char *err = NULL;
	struct history_charge_point *pts = NULL;
	assert_int_equal(history_store_charge_points(s, "/idle", "gpu", T0, now, &pts, &err), 1);
	free(pts);
	int n = history_store_charge_points(s, "/busy", "gpu", T0, now, &pts, &err);
	assert_true(n >= 180 && n < (int)n_rec); /* the last 30 min at least, not all */
	free(pts);
	struct history_charge_usage u;
	assert_int_equal(history_store_charge_usage(s, "/idle", "gpu", now - 30 * M, now, &u, &err), 0);
	assert_int_equal(u.recorded_us, 30 * M);
	assert_true(fabs(u.value_seconds - 500.0 * 1800) < 1e-6);
	assert_int_equal(history_store_charge_usage(s, "/busy", "gpu", now - 30 * M, now, &u, &err), 0);
	assert_int_equal(u.recorded_us, 30 * M);
	history_store_close(s, now);
}

/* A series' step above the host's CPUs (2.52 cores on 2: a trial saw one)
 * is cut to them and says so; others, and steps without CPU, stay. */
static void test_series_cap_cpu(void **state)
{
	(void)state;
	struct history_step steps[] = {
		{ .covered_us = SEC, .cpu_cores = 2.52 }, { .covered_us = SEC, .cpu_cores = 2.0 },
		{ .covered_us = SEC, .cpu_cores = 0.5 },  { .covered_us = SEC, .cpu_cores = NAN },
		{ .covered_us = 0, .cpu_cores = NAN },
	};
	history_series_cap_cpu(steps, ELEMENTSOF(steps), 0); /* CPUs not known: nothing */
	assert_true(steps[0].cpu_cores == 2.52 && !steps[0].cpu_clipped);
	history_series_cap_cpu(steps, ELEMENTSOF(steps), 2);
	assert_true(steps[0].cpu_cores == 2.0 && steps[0].cpu_clipped);
	assert_true(steps[1].cpu_cores == 2.0 && !steps[1].cpu_clipped);
	assert_true(steps[2].cpu_cores == 0.5 && !steps[2].cpu_clipped);
	assert_true(isnan(steps[3].cpu_cores) && !steps[3].cpu_clipped);
	assert_true(isnan(steps[4].cpu_cores) && !steps[4].cpu_clipped);
}

static void test_size_cap(void **state)
{
	struct fixture *f = *state;
	const uint64_t cap = 384 * 1024;
	struct history_limits l = { .max_bytes = cap };
	struct history_store *s = xopen(f->db, BOOT, T0, &l, NULL);
	enum { N = 60, K = 2000 };
	char paths[N][16];
	struct history_sample smp[N];
	for (unsigned k = 0; k < K; k++) {
		for (unsigned i = 0; i < N; i++) {
			snprintf(paths[i], sizeof(paths[i]), "/busy-%u", i);
			smp[i] = sample(paths[i], 300 + i, (int64_t)k * 1000 + i, 1048576 + (int64_t)(k % 50) * 4096);
		}
		xrecord(s, T0 + k * IV, smp, N);
		if (k % 100 == 99)
			maintain_until_done(s, T0 + k * IV);
	}
	const uint64_t now = T0 + (K - 1) * IV;
	maintain_until_done(s, now);
	struct history_stats st;
	assert_int_equal(history_store_stats(s, &st), 0);
	if (st.file_bytes > cap)
		fail_msg("%" PRIu64 " bytes, cap %" PRIu64, st.file_bytes, cap);
	struct stat sb;
	assert_int_equal(stat(f->db, &sb), 0);
	assert_true((uint64_t)sb.st_size <= cap);
	/* The oldest data went first: the newest is whole. */
	assert_true(st.oldest_us[HISTORY_RAW] > T0);
	struct history_usage *u = usage_of(s, "/busy-3", now - 600 * SEC, now + 1, true);
	assert_int_equal(u->cpu_usec, 60 * 1000);
	assert_int_equal(u->resolution, HISTORY_RAW);
	free_usage(u);
	history_store_close(s, now);
	assert_true(integrity_ok(f->db));
}

/* ---- file system faults ------------------------------------------------- */

/* A tmpfs of `size` on dir, or false where mounting is not allowed. */
static bool mount_tmpfs(const char *dir, const char *size)
{
	if (geteuid() != 0)
		return false;
	char opts[64];
	snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
	return mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0;
}

static void test_disk_full(void **state)
{
	struct fixture *f = *state;
	_cleanup_free_ char *dir = xjoin(f->dir, "small");
	xmkdir(f->dir, "small");
	if (!mount_tmpfs(dir, "1m")) {
		print_message("SKIP: needs root and mount(2) for a 1 MiB tmpfs\n");
		skip();
	}
	_cleanup_free_ char *db = xjoin(dir, "history.db"), *filler = xjoin(dir, "filler");
	struct history_store *s = xopen(db, BOOT, T0, &no_limits, NULL);
	record_three(s, 5);
	/* Fill what is left. */
	int fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	static char block[65536];
	while (write(fd, block, sizeof(block)) > 0)
		;
	while (write(fd, block, 512) > 0)
		;
	close(fd);
	/* Recordings of new cgroups until the file system refuses. */
	int r = 0;
	char *err = NULL;
	unsigned k;
	for (k = 0; k < 1000 && r == 0; k++) {
		char paths[50][32];
		struct history_sample smp[50];
		for (unsigned i = 0; i < 50; i++) {
			snprintf(paths[i], sizeof(paths[i]), "/full/a-rather-long-name-%u-%u", k, i);
			smp[i] = sample(paths[i], 1000 * k + i, k, i);
		}
		r = history_store_record(s, T0 + (5 + k) * IV, smp, 50, &err); /* no stall: every interval */
	}
	assert_int_equal(r, -ENOSPC);
	assert_non_null(err);
	print_message("full after %u recordings: %s\n", k, err);
	free(err);
	err = NULL;
	assert_true(integrity_ok(db));
	/* Space again: recording resumes, the earlier data is intact. */
	assert_int_equal(unlink(filler), 0);
	struct history_sample again = sample("/burner", 11, burner_cpu(T0 + 5000 * SEC), 4096);
	xrecord(s, T0 + 5000 * SEC, &again, 1);
	struct history_usage *u = usage_of(s, "/burner", T0, T0 + 5001 * SEC, true);
	assert_int_equal(u->cpu_usec, burner_cpu(T0 + 5000 * SEC));
	free_usage(u);
	history_store_close(s, T0 + 5000 * SEC);
	assert_true(integrity_ok(db));
	assert_int_equal(umount(dir), 0);
}

static void test_read_only(void **state)
{
	struct fixture *f = *state;
	_cleanup_free_ char *dir = xjoin(f->dir, "ro");
	xmkdir(f->dir, "ro");
	_cleanup_free_ char *db = xjoin(dir, "history.db");
	struct history_store *s = NULL;
	struct history_open_info info = {};
	char *err = NULL;
	if (!mount_tmpfs(dir, "4m")) {
		/* Unprivileged: a directory without write permission. */
		assert_int_equal(chmod(dir, 0500), 0);
		int r = history_store_open(db, BOOT, T0, IV, &no_limits, &s, &info, &err);
		assert_true(r == -EACCES || r == -EROFS);
		assert_non_null(err);
		free(err);
		chmod(dir, 0700);
		return;
	}
	/* An existing store on a file system remounted read-only. */
	s = xopen(db, BOOT, T0, &no_limits, NULL);
	record_three(s, 5);
	history_store_close(s, T0 + 50 * SEC);
	assert_int_equal(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);
	int r = history_store_open(db, BOOT, T0 + 100 * SEC, IV, &no_limits, &s, &info, &err);
	assert_int_equal(r, -EROFS);
	assert_non_null(err);
	print_message("read-only: %s\n", err);
	free(err);
	err = NULL;
	assert_null(info.set_aside);
	/* A new file in a read-only directory. */
	_cleanup_free_ char *db2 = xjoin(dir, "new.db");
	r = history_store_open(db2, BOOT, T0 + 100 * SEC, IV, &no_limits, &s, &info, &err);
	assert_int_equal(r, -EROFS);
	free(err);
	assert_int_equal(umount(dir), 0);
}

/* ---- statements that fail --------------------------------------------------------- */

/* sqlite3_step() and sqlite3_prepare_v2/v3() as the library calls them
 * (ld --wrap, tests/meson.build): the one after `stmt_fail_after` more calls
 * fails with SQLITE_FULL without running, as a full disk would have it fail
 * (the library reports -ENOSPC for it, where a statement misused after a
 * failure it ignored gives -EIO); -1: none. */
int __real_sqlite3_step(sqlite3_stmt *st);
int __wrap_sqlite3_step(sqlite3_stmt *st);
int __real_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail);
int __wrap_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail);
int __real_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags, sqlite3_stmt **st,
			      const char **tail);
int __wrap_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags, sqlite3_stmt **st,
			      const char **tail);
static int stmt_fail_after = -1;
static bool stmt_failed;

static bool stmt_fail_now(void)
{
	if (stmt_fail_after < 0)
		return false;
	if (stmt_fail_after-- > 0)
		return false;
	stmt_failed = true;
	return true;
}

int __wrap_sqlite3_step(sqlite3_stmt *st)
{
	return stmt_fail_now() ? SQLITE_FULL : __real_sqlite3_step(st);
}

int __wrap_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail)
{
	if (stmt_fail_now()) {
		*st = NULL;
		return SQLITE_FULL;
	}
	return __real_sqlite3_prepare_v2(db, sql, n, st, tail);
}

int __wrap_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags, sqlite3_stmt **st,
			      const char **tail)
{
	if (stmt_fail_now()) {
		*st = NULL;
		return SQLITE_FULL;
	}
	return __real_sqlite3_prepare_v3(db, sql, n, flags, st, tail);
}

/* Every field of the usage of every path, removed ones too, as text. */
static char *usage_digest(struct history_store *s, uint64_t since, uint64_t until)
{
	struct history_usage_query q = { .since_us = since, .until_us = until, .prefix = "/", .depth = -1,
					 .include_removed = true };
	struct history_usage *u = NULL;
	_cleanup_free_ char *err = NULL;
	int n = history_store_usage(s, &q, &u, &err);
	if (n < 0)
		fail_msg("usage: %s (%s)", strerror(-n), err ? err : "");
	char *text = NULL;
	size_t size = 0;
	FILE *fp = open_memstream(&text, &size);
	assert_non_null(fp);
	for (int i = 0; i < n; i++)
		fprintf(fp, "%s lives %u first %" PRIu64 " removed %" PRIu64 " cpu %" PRId64 " +-%" PRId64
			" mem %.0f +-%.0f recorded %" PRIu64 " max %" PRId64 " peak %" PRId64 " io %" PRId64 " %" PRId64 "\n",
			u[i].path, u[i].lives, u[i].first_seen_us, u[i].removed_us, u[i].cpu_usec, u[i].cpu_usec_bound,
			u[i].memory_byte_seconds, u[i].memory_byte_seconds_bound, u[i].recorded_us, u[i].memory_max_bytes,
			u[i].memory_peak_bytes, u[i].io_read_bytes, u[i].io_write_bytes);
	assert_int_equal(fclose(fp), 0);
	history_usage_array_free(u, n > 0 ? (size_t)n : 0);
	return text;
}

/* A store of an earlier boot: /burner and /idle recorded three times. */
static void statement_store(const char *db)
{
	unlink(db);
	struct history_store *s = xopen(db, BOOT, T0, &no_limits, NULL);
	record_three(s, 3);
	history_store_close(s, T0 + 2 * IV);
}

#define T1 (T0 + 100 * SEC)

/* The calls of a new boot on that store: open (its run ends the earlier
 * boot's lives), recordings of a cgroup found at start and of one created,
 * the latter's removal, another recording. With fail_at >= 0 the statement
 * after fail_at more fails: the call it fails in must fail (r < 0, nothing
 * of it kept), and the same call again, without failure, must do what it
 * would have done. Returns the usage digest of the end state. */
enum fail_kind { FAIL_STATEMENT, FAIL_ALLOCATION };

static bool failed_now(enum fail_kind k)
{
	return k == FAIL_STATEMENT ? stmt_failed : alloc_fail_hit();
}

static char *statement_calls(const char *db, enum fail_kind kind, int fail_at, bool *ret_hit, bool *ret_set_aside)
{
	struct history_sample at_start = sample("/burner", 21, 100, 4096);
	struct history_sample created = sample("/new", 22, 5, 1024);
	at_start.created_seen = false;
	struct history_store *s = NULL;
	struct history_record rec = {};
	_cleanup_free_ char *err = NULL;
	int r;

	bool set_aside = false, hit = false;
	struct history_sample brief = sample("/brief", 23, 7, 512);

	stmt_failed = false;
	if (kind == FAIL_STATEMENT)
		stmt_fail_after = fail_at;
	else if (fail_at >= 0)
		alloc_fail_after((unsigned)fail_at);
	for (int call = 0; call < 6;) {
		bool before = hit;
		switch (call) {
		case 0: {
			struct history_open_info info = {};
			r = history_store_open(db, BOOT2, T1, IV, &no_limits, &s, &info, &err);
			set_aside = info.set_aside != NULL;
			free(info.set_aside);
			break;
		}
		case 1: {
			struct history_sample smp[] = { at_start, created };
			r = history_store_record(s, T1, smp, 2, &err);
			break;
		}
		case 2: {
			at_start.v.cpu_usec = 200;
			struct history_sample smp[] = { at_start, created }; /* /new unchanged: no point */
			r = history_store_record(s, T1 + IV, smp, 2, &err);
			break;
		}
		case 3:
			r = history_store_removed(s, &created.key, &created.v, 0, T1 + IV + SEC, &rec, &err);
			if (r >= 0) {
				assert_string_equal(rec.path, "/new");
				history_record_clear(&rec);
			}
			break;
		case 4: {
			at_start.v.cpu_usec = 300;
			r = history_store_record(s, T1 + 2 * IV, &at_start, 1, &err);
			break;
		}
		default:
			/* after a stall, the removal of a cgroup never recorded
			 * (its one point starts a new run) */
			r = history_store_removed_unrecorded(s, &brief, 0, T1 + 10 * IV, &rec, &err);
			if (r >= 0) {
				assert_string_equal(rec.path, "/brief");
				history_record_clear(&rec);
			}
			break;
		}
		free(err);
		err = NULL;
		hit = hit || failed_now(kind);
		if (hit && !before) {
			/* a statement of this call failed: so must the call,
			 * with the statement's error; an allocation may fail
			 * it (-ENOMEM) or be done without */
			stmt_fail_after = -1;
			alloc_fail_off();
			if (r >= 0 && kind == FAIL_STATEMENT && call == 0 && set_aside) {
				/* a file it cannot read is set aside and a new one
				 * made (test_corrupt_file_set_aside): allowed */
				call++;
				continue;
			}
			if (kind == FAIL_STATEMENT && r >= 0)
				fail_msg("call %d succeeded though its statement %d failed", call, fail_at);
			if (r >= 0) {
				call++;
				continue;
			}
			if (r != (kind == FAIL_STATEMENT ? -ENOSPC : -ENOMEM))
				fail_msg("call %d failed with %s, not the failure made (%s %d)", call, strerror(-r),
					 kind == FAIL_STATEMENT ? "statement" : "allocation", fail_at);
			continue; /* again, without failure */
		}
		if (r < 0)
			fail_msg("call %d failed: %s", call, strerror(-r));
		call++;
	}
	stmt_fail_after = -1;
	alloc_fail_off();
	char *digest = usage_digest(s, T0, T1 + 11 * IV);
	history_store_close(s, T1 + 10 * IV);
	*ret_hit = hit;
	*ret_set_aside = set_aside;
	return digest;
}

/* Any statement of a new boot's open, recordings and removals fails in turn
 * (a full disk), then any allocation: the call fails with that error and
 * keeps nothing, and done again gives what it gives without failure. */
static void failure_sweep(const char *db, enum fail_kind kind)
{
	bool hit, set_aside;
	unsigned compared = 0;
	int n;

	statement_store(db);
	char *want = statement_calls(db, kind, -1, &hit, &set_aside);
	assert_false(hit);
	assert_false(set_aside);
	/* What the calls record, whatever fails on the way: the earlier boot's
	 * lives end at its last recording; /burner, found at the new boot's
	 * start, counts from its first point (200 us of 100 to 300), /new,
	 * created, from 0; /brief, removed unrecorded, is its one point. */
	char line[256];
	snprintf(line, sizeof(line), "/burner lives 2 first %" PRIu64 " removed 0 cpu %" PRId64 " ", T0,
		 burner_cpu(T0 + 2 * IV) + 200);
	assert_non_null(strstr(want, line));
	snprintf(line, sizeof(line), "/idle lives 1 first %" PRIu64 " removed %" PRIu64 " cpu 777 ", T0, T0 + 2 * IV);
	assert_non_null(strstr(want, line));
	snprintf(line, sizeof(line), "/new lives 1 first %" PRIu64 " removed %" PRIu64 " cpu 5 ", T1, T1 + IV + SEC);
	assert_non_null(strstr(want, line));
	snprintf(line, sizeof(line), "/brief lives 1 first %" PRIu64 " removed %" PRIu64 " cpu 7 ", T1 + 10 * IV,
		 T1 + 10 * IV);
	assert_non_null(strstr(want, line));
	for (n = 0; n < 600; n++) {
		statement_store(db);
		char *got = statement_calls(db, kind, n, &hit, &set_aside);
		if (!hit) {
			free(got);
			break;
		}
		if (set_aside) {
			free(got);
			continue;
		}
		compared++;
		if (strcmp(got, want) != 0)
			fail_msg("%s %d failed: the end state differs\n%s\nnot\n%s", kind == FAIL_STATEMENT ? "statement" : "allocation", n,
				 got, want);
		free(got);
	}
	assert_true(n > 10 && n < 600);
	assert_true(compared > 10);
	free(want);
}

static void test_statement_failures(void **state)
{
	struct fixture *f = *state;
	failure_sweep(f->db, FAIL_STATEMENT);
}

static void test_allocation_failures(void **state)
{
	struct fixture *f = *state;
	failure_sweep(f->db, FAIL_ALLOCATION);
}

/* The queries (usage, grouped usage, gaps, a series) as text, or the
 * error of the one that failed. */
static int query_digest(struct history_store *s, int which, char **ret)
{
	char *err = NULL, *text = NULL;
	size_t size = 0;
	FILE *fp = open_memstream(&text, &size);
	int n = 0;

	assert_non_null(fp);
	if (which <= 1) {
		struct history_usage_query q = { .since_us = T0, .until_us = T1 + 3 * IV, .prefix = "/", .depth = -1,
						 .include_removed = true, .group_level = which, .cpus = 1 };
		struct history_usage *u = NULL;
		n = history_store_usage(s, &q, &u, &err);
		for (int i = 0; i < n; i++)
			fprintf(fp, "%s lives %u below %u cpu %" PRId64 " +-%" PRId64 "%s mem %.0f recorded %" PRIu64 "\n",
				u[i].path, u[i].lives, u[i].subtree_paths, u[i].cpu_usec, u[i].cpu_usec_bound,
				u[i].cpu_clipped ? "*" : "", u[i].memory_byte_seconds, u[i].recorded_us);
		if (n > 0)
			history_usage_array_free(u, (size_t)n);
	} else if (which == 2) {
		struct history_gap *g = NULL;
		n = history_store_gaps(s, T0, T1 + 3 * IV, &g, &err);
		for (int i = 0; i < n; i++)
			fprintf(fp, "gap %" PRIu64 " %" PRIu64 "\n", g[i].from_us, g[i].to_us);
		free(g);
	} else {
		struct history_step *steps = NULL;
		n = history_store_series(s, "/burner", T0, T1 + 3 * IV, IV, &steps, &err);
		for (int i = 0; i < n; i++)
			fprintf(fp, "%" PRIu64 " %" PRIu64 " %.3f %.0f\n", steps[i].t_us, steps[i].covered_us,
				steps[i].cpu_cores, steps[i].memory_mean_bytes);
		free(steps);
	}
	free(err);
	assert_int_equal(fclose(fp), 0);
	if (n < 0) {
		free(text);
		return n;
	}
	*ret = text;
	return 0;
}

/* Each statement, then each allocation, of each query fails in turn: the
 * query fails with that error (-ENOSPC: a full disk's; -ENOMEM), and
 * without failure answers what it answers on its own. Over two boots (a
 * gap), a group with paths below it that sorts after the middle of the
 * groups before it (/a, /burner, /g), and more paths than the first
 * allocation of the answer holds (64). */
static void test_query_failures(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	struct history_sample many[80];
	char paths[80][16];

	for (int i = 0; i < 80; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/g/p%02d", i);
		many[i] = sample(paths[i], 100 + (uint64_t)i, i, 4096);
	}
	record_three(s, 3);
	xrecord(s, T0 + 2 * IV, many, 80);
	history_store_close(s, T0 + 2 * IV);
	s = xopen(f->db, BOOT2, T1, &no_limits, NULL);
	for (unsigned i = 0; i < 3; i++) {
		struct history_sample smp[] = { sample("/burner", 31, burner_cpu(T1 + i * IV), 4096),
						sample("/g", 32, 100 + i, 8192), sample("/g/x", 33, 50 + i, 4096),
						sample("/g/x/y", 34, 20, 4096), sample("/a", 35, 1, 4096) };
		xrecord(s, T1 + i * IV, smp, ELEMENTSOF(smp));
	}
	for (int which = 0; which < 4; which++) {
		char *want = NULL;
		assert_int_equal(query_digest(s, which, &want), 0);
		if (which == 0)
			assert_non_null(strstr(want, "/g/p79 lives 1 below 0 cpu 79 +-0 mem"));
		if (which == 1)
			assert_non_null(strstr(want, "/g lives 1 below 82 cpu"));
		for (int kind = FAIL_STATEMENT; kind <= FAIL_ALLOCATION; kind++) {
			int n;
			for (n = 0; n < 1000; n++) {
				char *got = NULL;
				stmt_failed = false;
				if (kind == FAIL_STATEMENT)
					stmt_fail_after = n;
				else
					alloc_fail_after((unsigned)n);
				int r = query_digest(s, which, &got);
				bool hit = failed_now(kind);
				stmt_fail_after = -1;
				alloc_fail_off();
				if (!hit) {
					assert_int_equal(r, 0);
					assert_string_equal(got, want);
					free(got);
					break;
				}
				if (r != (kind == FAIL_STATEMENT ? -ENOSPC : -ENOMEM))
					fail_msg("query %d: %s %d failed, the query gave %d", which,
						 kind == FAIL_STATEMENT ? "statement" : "allocation", n, r);
			}
			assert_true(n > 0 && n < 1000);
		}
		free(want);
	}
	history_store_close(s, T1 + 3 * IV);
}

/* The window's checks: an empty or reversed one is refused; a CPU total
 * the CPUs allow is neither cut nor marked; the CPU limit over no answer
 * (a known path, none in the window) is none; a series of more than
 * 100,000 steps is refused. */
static void test_query_windows(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	struct history_usage *u = NULL;
	struct history_step *steps = NULL;
	char *err = NULL;

	record_three(s, 4);
	struct history_usage_query q = { .since_us = T0 + IV, .until_us = T0 + IV, .prefix = "/", .depth = -1 };
	assert_int_equal(history_store_usage(s, &q, &u, &err), -EINVAL);
	q.until_us = T0;
	assert_int_equal(history_store_usage(s, &q, &u, &err), -EINVAL);
	/* the burner's 0.5 cores over 30 s: 15 s of CPU, exact, under 1 CPU x 30 s */
	q.since_us = T0;
	q.until_us = T0 + 3 * IV + 1;
	q.cpus = 1;
	q.prefix = "/burner";
	assert_int_equal(history_store_usage(s, &q, &u, &err), 1);
	assert_int_equal(u[0].cpu_usec, burner_cpu(T0 + 3 * IV));
	assert_int_equal(u[0].cpu_usec_bound, 0);
	assert_false(u[0].cpu_clipped);
	history_usage_array_free(u, 1);
	/* a microsecond: the smallest window */
	q.until_us = T0 + 1;
	assert_int_equal(history_store_usage(s, &q, &u, &err), 1);
	history_usage_array_free(u, 1);
	u = NULL;
	q.since_us = T0 - 100 * SEC;
	q.until_us = T0 - 50 * SEC;
	assert_int_equal(history_store_usage(s, &q, &u, &err), 0);
	free(u);
	u = NULL;
	q.prefix = "/";
	assert_int_equal(history_store_usage(s, &q, &u, &err), 0);
	free(u);

	assert_int_equal(history_store_series(s, "/burner", T0, T0, IV, &steps, &err), -EINVAL);
	assert_int_equal(history_store_series(s, "/burner", T0, T0 + IV, 0, &steps, &err), -EINVAL);
	assert_int_equal(history_store_series(s, "/burner", T0, T0 + 100000, 1, &steps, &err), 100000);
	free(steps);
	assert_int_equal(history_store_series(s, "/burner", T0, T0 + 100001, 1, &steps, &err), -E2BIG);
	free(err);
	history_store_close(s, T0 + 3 * IV);
}

/* A series of a cgroup with CPU and both I/O counters, each moving
 * steadily (0.5 cores, 1,000 B/s read, 2,000 B/s written), over a window
 * that ends between two recordings: every step has each rate, the last
 * ones too (the increase to the recording after the window began inside
 * it), and memory held at its one value. */
static void test_series_rates(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	struct history_step *steps = NULL;
	char *err = NULL;

	for (unsigned i = 0; i < 4; i++) {
		uint64_t t = T0 + i * IV;
		struct history_sample smp = sample("/io", 51, burner_cpu(t), 4096);
		smp.v.io_read_bytes = (int64_t)((t - T0) / 1000);
		smp.v.io_write_bytes = (int64_t)((t - T0) / 500);
		xrecord(s, t, &smp, 1);
	}
	int n = history_store_series(s, "/io", T0, T0 + 25 * SEC, 5 * SEC, &steps, &err);
	assert_int_equal(n, 5);
	for (int i = 0; i < n; i++) {
		assert_int_equal(steps[i].t_us, T0 + (uint64_t)i * 5 * SEC);
		assert_int_equal(steps[i].covered_us, 5 * SEC);
		if (fabs(steps[i].cpu_cores - 0.5) > 1e-9 || fabs(steps[i].io_read_bytes_per_s - 1000) > 1e-6 ||
		    fabs(steps[i].io_write_bytes_per_s - 2000) > 1e-6 || steps[i].memory_mean_bytes != 4096 ||
		    steps[i].memory_min_bytes != 4096 || steps[i].memory_max_bytes != 4096)
			fail_msg("step %d: cpu %f read %f write %f mem %f", i, steps[i].cpu_cores,
				 steps[i].io_read_bytes_per_s, steps[i].io_write_bytes_per_s, steps[i].memory_mean_bytes);
	}
	free(steps);
	free(err);
	history_store_close(s, T0 + 3 * IV);
}

/* A life's counters are known up to and in the step its last row ends on:
 * /x (CPU and I/O) removed at T0 + 25 s, where a step begins, and created
 * again at T0 + 30 s without I/O accounting. In the step [25 s, 35 s) the
 * second life alone has values, and the I/O rate is 0 there (the first
 * life's, known at its removal), not unknown. */
static void test_series_known_at_removal(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	struct history_step *steps = NULL;
	struct history_record rec;
	char *err = NULL;

	for (unsigned i = 0; i < 3; i++) {
		uint64_t t = T0 + i * IV;
		struct history_sample smp = sample("/x", 61, burner_cpu(t), 4096);
		smp.v.io_read_bytes = (int64_t)((t - T0) / 1000);
		smp.v.io_write_bytes = (int64_t)((t - T0) / 500);
		xrecord(s, t, &smp, 1);
	}
	struct history_values final = sample("/x", 61, burner_cpu(T0 + 25 * SEC), 4096).v;
	final.io_read_bytes = 25000;
	final.io_write_bytes = 50000;
	assert_int_equal(history_store_removed(s, &(struct history_key){ "/x", 61 }, &final, 0, T0 + 25 * SEC, &rec,
					       &err), 0);
	history_record_clear(&rec);
	struct history_sample again = sample("/x", 62, 0, 8192);
	xrecord(s, T0 + 30 * SEC, &again, 1);
	again.v.cpu_usec = 500000;
	xrecord(s, T0 + 40 * SEC, &again, 1);

	int n = history_store_series(s, "/x", T0 + 5 * SEC, T0 + 45 * SEC, 10 * SEC, &steps, &err);
	assert_int_equal(n, 4);
	/* [5, 15) and [15, 25): the first life's rates */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(steps[i].covered_us, 10 * SEC);
		assert_true(fabs(steps[i].io_read_bytes_per_s - 1000) < 1e-6);
		assert_true(fabs(steps[i].io_write_bytes_per_s - 2000) < 1e-6);
	}
	/* [25, 35): the second life from 30 s; the first one's I/O known */
	assert_int_equal(steps[2].covered_us, 5 * SEC);
	assert_true(steps[2].io_read_bytes_per_s == 0);
	assert_true(steps[2].io_write_bytes_per_s == 0);
	assert_false(isnan(steps[2].cpu_cores));
	/* [35, 45): the second life alone, without I/O, to its last recording */
	assert_int_equal(steps[3].covered_us, 5 * SEC);
	assert_true(isnan(steps[3].io_read_bytes_per_s));
	assert_true(isnan(steps[3].io_write_bytes_per_s));
	free(steps);
	free(err);
	history_store_close(s, T0 + 40 * SEC);
}

/* Gaps: none in a window that ends where a run's recording ends, though a
 * later run starts after it; the time between two runs is one. */
static void test_gaps_at_run_end(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	struct history_gap *g = NULL;
	char *err = NULL;

	record_three(s, 3);
	history_store_close(s, T0 + 2 * IV);
	s = xopen(f->db, BOOT2, T1, &no_limits, NULL);
	record_three(s, 0);
	struct history_sample smp = sample("/burner", 41, 5, 4096);
	xrecord(s, T1, &smp, 1);
	assert_int_equal(history_store_gaps(s, T0, T0 + 2 * IV, &g, &err), 0);
	free(g);
	g = NULL;
	assert_int_equal(history_store_gaps(s, T0, T1, &g, &err), 1);
	assert_int_equal(g[0].from_us, T0 + 2 * IV);
	assert_int_equal(g[0].to_us, T1);
	free(g);
	free(err);
	history_store_close(s, T1);
}

/* A life of this boot's last run that is gone when acctd starts again
 * (removed while it was down) ends where that run ended, the last time it
 * was known to exist. */
static void test_gone_while_down_ends_at_last_run(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_three(s, 3);
	history_store_close(s, T0 + 2 * IV);
	s = xopen(f->db, BOOT, T0 + 100 * SEC, &no_limits, NULL);
	struct history_sample smp[] = { sample("/burner", 11, burner_cpu(T0 + 100 * SEC), 4096),
					sample("/grower", 13, 5, 2000000) };
	xrecord(s, T0 + 100 * SEC, smp, ELEMENTSOF(smp));
	struct history_usage *u = usage_of(s, "/idle", T0, T0 + 200 * SEC, true);
	assert_non_null(u);
	assert_int_equal(u->removed_us, T0 + 2 * IV);
	free_usage(u);
	u = usage_of(s, "/burner", T0, T0 + 200 * SEC, true);
	assert_int_equal(u->removed_us, 0);
	free_usage(u);
	history_store_close(s, T0 + 100 * SEC);
}

/* A store opened read-only records nothing: -EROFS. */
static void test_read_only_store_refuses(void **state)
{
	struct fixture *f = *state;
	struct history_store *s = xopen(f->db, BOOT, T0, &no_limits, NULL);
	record_three(s, 2);
	history_store_close(s, T0 + IV);
	s = xopen_ro(f->db);
	struct history_sample smp = sample("/burner", 11, 1, 1);
	struct history_record rec = {};
	char *err = NULL;
	assert_int_equal(history_store_record(s, T0 + 2 * IV, &smp, 1, &err), -EROFS);
	free(err);
	err = NULL;
	assert_int_equal(history_store_removed(s, &smp.key, &smp.v, 0, T0 + 2 * IV, &rec, &err), -EROFS);
	free(err);
	history_store_close(s, T0 + 2 * IV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_usage_equals_deltas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_value_is_a_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_edge_in_idle_stretch_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_edge_in_last_interval_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix_and_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_by_level, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unrecorded_removal_keeps_run_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_last_steps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_survives_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_not_final_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spike_between_recordings_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_created_while_down_counts_from_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_continues_life, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stall_is_a_gap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removal_after_stall_is_not_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_found_at_start_is_baseline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_spreads_increases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_baseline_under_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removal_does_not_extend_others, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_unaligned_over_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_unknown_is_absent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_file_set_aside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_and_newer_set_aside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tables_unlike_their_version_set_aside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sigkill_while_recording, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollups_agree_with_raw, setup, teardown),
		cmocka_unit_test_setup_teardown(test_far_window_costs_the_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_keeps_held_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_cap, setup, teardown),
		cmocka_unit_test(test_series_cap_cpu),
		cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_statement_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allocation_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_windows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gaps_at_run_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_rates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_known_at_removal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gone_while_down_ends_at_last_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_store_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_charges_integral, setup, teardown),
		cmocka_unit_test_setup_teardown(test_charges_across_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_charges_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_new_life_past_rollups, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
