/* history-upkeep.c - keeping the store (history-store.h): its size and
 * counts, the rollups of points into minute and hour buckets (by the walk of
 * history-rows.c, so that a rollup and the data it summarises agree),
 * retention, and the size cap. Calls history-rows.c and history-sql.c. */
#include "history-store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "basic/util.h"
#include "history-rows.h"
#include "history-sql.h"

uint64_t history_store_file_bytes(struct history_store *s)
{
	int64_t pages = 0, page_size = 0;
	if (history_query_int(s, "PRAGMA page_count", &pages, NULL) < 0 ||
	    history_query_int(s, "PRAGMA page_size", &page_size, NULL) < 0)
		return 0;
	uint64_t bytes = (uint64_t)pages * (uint64_t)page_size;
	_cleanup_free_ char *wal = NULL;
	struct stat st;
	if (asprintf(&wal, "%s-wal", s->path) >= 0 && stat(wal, &st) == 0)
		bytes += (uint64_t)st.st_size;
	return bytes;
}

int history_store_stats(struct history_store *s, struct history_stats *ret)
{
	*ret = (struct history_stats){ .file_bytes = history_store_file_bytes(s), .schema_version = HISTORY_SCHEMA_VERSION };
	int64_t v;
	int r = history_query_int(s, "SELECT count(*) FROM lives", &v, NULL);
	if (r < 0)
		return r;
	ret->lives = (uint64_t)v;
	static const char *const count_sql[_HISTORY_RESOLUTION_MAX] = {
		"SELECT count(*), coalesce(min(t_us), 0) FROM points",
		"SELECT count(*), coalesce(min(t_us), 0) FROM rollups WHERE res = 1",
		"SELECT count(*), coalesce(min(t_us), 0) FROM rollups WHERE res = 2",
	};
	for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
		_cleanup_finalize_ sqlite3_stmt *st = NULL;
		r = history_prepare(s, count_sql[res], &st, NULL);
		if (r < 0)
			return r;
		if (sqlite3_step(st) != SQLITE_ROW)
			return -EIO;
		ret->points[res] = (uint64_t)sqlite3_column_int64(st, 0);
		ret->oldest_us[res] = (uint64_t)sqlite3_column_int64(st, 1);
	}
	return 0;
}

/* ---- upkeep: rollups, retention, the size cap ----------------------------- */

/* Bounded work per history_store_maintain(): buckets rolled up per call. */
static const uint64_t rollup_batch_buckets[_HISTORY_RESOLUTION_MAX] = { 0, 60, 24 };

/* The lives that may have rows of res - 1 in [from, to): those with a point
 * in this run since `from` and those removed since, when all of [from, to)
 * is in this run (the index knows them); else every life that existed then. */
static int rollup_lives(struct history_store *s, uint64_t from, uint64_t to, int64_t **ret, char **ret_error)
{
	size_t n = 0, cap = 64;
	_cleanup_free_ int64_t *ids = malloc(cap * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
#define ADD(id)                                                                \
	do {                                                                   \
		if (n == cap) {                                                \
			int64_t *_m = reallocarray(ids, cap * 2, sizeof(*ids)); \
			if (!_m)                                               \
				return -ENOMEM;                                \
			ids = _m;                                              \
			cap *= 2;                                              \
		}                                                              \
		ids[n++] = (id);                                               \
	} while (0)
	if (from >= s->started_us) {
		for (size_t i = 0; i < ptr_table_capacity(&s->index.lives); i++) {
			const struct history_life *l = ptr_table_at(&s->index.lives, i);
			if (l && l->last_point_us >= from)
				ADD(l->id);
		}
		for (size_t i = 0; i < s->n_removed; i++)
			if (s->removed[i].removed_us >= from)
				ADD(s->removed[i].id);
	} else {
		_cleanup_finalize_ sqlite3_stmt *lives = NULL;
		int r = history_prepare(s,
					"SELECT id FROM lives WHERE first_seen_us < ?1 AND (removed_us IS NULL OR removed_us >= ?2)",
					&lives, ret_error);
		if (r < 0)
			return r;
		sqlite3_bind_int64(lives, 1, (int64_t)to);
		sqlite3_bind_int64(lives, 2, (int64_t)from);
		int rc;
		while ((rc = sqlite3_step(lives)) == SQLITE_ROW)
			ADD(sqlite3_column_int64(lives, 0));
		if (rc != SQLITE_DONE)
			return history_sqlite_error(s->db, rc, "rolling up", ret_error);
	}
#undef ADD
	*ret = TAKE_PTR(ids);
	return (int)n;
}

/* Summarise the rows of res - 1 into res's buckets in [from, to) for every
 * life with rows there (a life without is covered by the tail of its last
 * bucket: change-only, like the points). */
static int rollup(struct history_store *s, enum history_resolution res, uint64_t from, uint64_t to,
		  const struct history_run *runs, size_t n_runs, char **ret_error)
{
	const uint64_t len = history_bucket_us[res];
	_cleanup_free_ int64_t *ids = NULL;
	int n_ids = rollup_lives(s, from, to, &ids, ret_error);
	if (n_ids < 0)
		return n_ids;
	_cleanup_finalize_ sqlite3_stmt *removed = NULL;
	int r = history_prepare(s, "SELECT coalesce(removed_us, 0) FROM lives WHERE id = ?", &removed, ret_error);
	if (r < 0)
		return r;
	for (int j = 0; j < n_ids; j++) {
		int64_t life = ids[j];
		sqlite3_reset(removed);
		sqlite3_bind_int64(removed, 1, life);
		int rc = sqlite3_step(removed);
		if (rc != SQLITE_ROW)
			return rc == SQLITE_DONE ? 0 : history_sqlite_error(s->db, rc, "rolling up", ret_error);
		uint64_t removed_us = (uint64_t)sqlite3_column_int64(removed, 0);
		sqlite3_reset(removed);
		struct history_life_data d;
		r = history_life_data_load(s, res - 1, life, from, to, removed_us, runs, n_runs, &d, ret_error);
		if (r < 0)
			return r;
		size_t lo = 0;
		for (size_t k = 0; k < d.n;) {
			const struct history_row *w = &d.rows[k];
			if (w->t0_us < from || w->t0_us >= to) {
				k++;
				continue;
			}
			uint64_t a = w->t0_us - w->t0_us % len, b = a + len;
			size_t last = k;
			while (last + 1 < d.n && d.rows[last + 1].t0_us < b)
				last++;
			while (lo < d.n && MAX(d.rows[lo].t1_us, d.tail[lo]) <= a)
				lo++;
			struct history_acc x = HISTORY_ACC_INIT;
			/* The row after the bucket too: its change began in it. */
			history_accumulate(d.rows, d.tail, lo, MIN(last + 2, d.n), runs, n_runs, a, b, &x);
			const struct history_row *e = &d.rows[last];
			sqlite3_stmt *ins;
			r = history_stmt(s, HISTORY_STMT_INSERT_ROLLUP,
					 "INSERT OR REPLACE INTO rollups (res, life, t_us, t_last_off, run, uncovered_us,"
					 " memory_integral, memory_bound, memory_min, memory_max, tasks_max, cpu_usec,"
					 " memory_bytes, memory_peak_bytes, io_read_bytes, io_write_bytes, tasks)"
					 " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
					 &ins, ret_error);
			if (r < 0) {
				history_life_data_clear(&d);
				return r;
			}
			sqlite3_bind_int(ins, 1, (int)res);
			sqlite3_bind_int64(ins, 2, life);
			sqlite3_bind_int64(ins, 3, (int64_t)a);
			sqlite3_bind_int64(ins, 4, (int64_t)e->t_last_us - (int64_t)a);
			sqlite3_bind_int64(ins, 5, e->run);
			sqlite3_bind_int64(ins, 6, (int64_t)history_bucket_us[res] - (int64_t)x.covered_us);
			sqlite3_bind_double(ins, 7, x.integral);
			sqlite3_bind_double(ins, 8, x.bound);
			if (x.min != INT64_MAX)
				sqlite3_bind_int64(ins, 9, x.min);
			if (x.max != INT64_MIN)
				sqlite3_bind_int64(ins, 10, x.max);
			history_bind_value(ins, 11, x.tasks_max);
			history_bind_value(ins, 12, e->v.cpu_usec);
			history_bind_value(ins, 13, e->v.memory_bytes);
			history_bind_value(ins, 14, e->v.memory_peak_bytes);
			history_bind_value(ins, 15, e->v.io_read_bytes);
			history_bind_value(ins, 16, e->v.io_write_bytes);
			history_bind_value(ins, 17, e->v.tasks);
			rc = sqlite3_step(ins);
			sqlite3_reset(ins);
			if (rc != SQLITE_DONE) {
				history_life_data_clear(&d);
				return history_sqlite_error(s->db, rc, "rolling up", ret_error);
			}
			k = last + 1;
		}
		history_life_data_clear(&d);
	}
	return 0;
}

static const char *const delete_sql[_HISTORY_RESOLUTION_MAX][2] = {
	/* [0]: a life removed before the cutoff: all of it; [1]: all but the
	 * last row before the cutoff, whose tail may reach past it. */
	[HISTORY_RAW] = { "DELETE FROM points WHERE life = ?1",
			  "DELETE FROM points WHERE life = ?1 AND t_us <"
			  " (SELECT max(t_us) FROM points WHERE life = ?1 AND t_us < ?2)" },
	[HISTORY_MINUTE] = { "DELETE FROM rollups WHERE res = 1 AND life = ?1",
			     "DELETE FROM rollups WHERE res = 1 AND life = ?1 AND t_us <"
			     " (SELECT max(t_us) FROM rollups WHERE res = 1 AND life = ?1 AND t_us < ?2)" },
	[HISTORY_HOUR] = { "DELETE FROM rollups WHERE res = 2 AND life = ?1",
			   "DELETE FROM rollups WHERE res = 2 AND life = ?1 AND t_us <"
			   " (SELECT max(t_us) FROM rollups WHERE res = 2 AND life = ?1 AND t_us < ?2)" },
};

/* Charged resources have no rollups (docs/charges.md, "History"): their
 * points are kept as long as the longest-kept data of the kernel's
 * quantities (`oldest`), and go with their lives (above). A point is dropped once a
 * later point of its (life, resource) is itself before the cutoff (the last
 * one before it holds past it, as delete_sql's [1]). The statement scans the
 * table: run at most once an hour of cutoff (meta charges_pruned_us). */
static int prune_charges(struct history_store *s, int64_t oldest, char **ret_error)
{
	int64_t pruned;
	int r = history_meta_get(s, "charges_pruned_us", &pruned, ret_error);
	if (r < 0)
		return r;
	if (oldest <= pruned || (uint64_t)(oldest - pruned) < history_bucket_us[HISTORY_HOUR])
		return 0;
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	r = history_prepare(s,
			    "DELETE FROM charge_points WHERE t_us < ?1 AND EXISTS"
			    " (SELECT 1 FROM charge_points d WHERE d.life = charge_points.life"
			    " AND d.resource = charge_points.resource AND d.t_us > charge_points.t_us AND d.t_us <= ?1)",
			    &st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, oldest);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, "dropping old charges", ret_error);
	return history_meta_set(s, "charges_pruned_us", oldest, ret_error);
}

/* Drop res's data before `cutoff` (one row per living life stays: see above). */
static int prune(struct history_store *s, enum history_resolution res, uint64_t cutoff, char **ret_error)
{
	int64_t data_from;
	int r = history_meta_get(s, history_data_from_key[res], &data_from, ret_error);
	if (r < 0)
		return r;
	if ((int64_t)cutoff <= data_from)
		return 0;
	_cleanup_finalize_ sqlite3_stmt *gone_lives = NULL, *all = NULL, *older = NULL;
	r = history_prepare(s, delete_sql[res][0], &all, ret_error);
	if (r >= 0)
		r = history_prepare(s, delete_sql[res][1], &older, ret_error);
	if (r >= 0)
		r = history_prepare(s, "SELECT id FROM lives WHERE removed_us >= ?1 AND removed_us < ?2", &gone_lives, ret_error);
	if (r < 0)
		return r;
	/* Lives removed before the cutoff: all of their rows. */
	sqlite3_bind_int64(gone_lives, 1, data_from);
	sqlite3_bind_int64(gone_lives, 2, (int64_t)cutoff);
	int rc;
	while ((rc = sqlite3_step(gone_lives)) == SQLITE_ROW) {
		sqlite3_reset(all);
		sqlite3_bind_int64(all, 1, sqlite3_column_int64(gone_lives, 0));
		int rd = sqlite3_step(all);
		if (rd != SQLITE_DONE)
			return history_sqlite_error(s->db, rd, "dropping old data", ret_error);
	}
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, "dropping old data", ret_error);
	/* The others: all but their last row before the cutoff. A life whose
	 * last row is older than the last cutoff has nothing more to drop (that
	 * row is the one the last prune kept), so only the lives with points
	 * since are visited (all of them when those points may be in an
	 * earlier run, which the index does not know). */
	uint64_t since = (uint64_t)data_from > history_bucket_us[res] ? (uint64_t)data_from - history_bucket_us[res] : 0;
	_cleanup_free_ int64_t *ids = NULL;
	int n_ids = rollup_lives(s, since, cutoff, &ids, ret_error);
	if (n_ids < 0)
		return n_ids;
	for (int j = 0; j < n_ids; j++) {
		sqlite3_reset(older);
		sqlite3_bind_int64(older, 1, ids[j]);
		sqlite3_bind_int64(older, 2, (int64_t)cutoff);
		int rd = sqlite3_step(older);
		if (rd != SQLITE_DONE)
			return history_sqlite_error(s->db, rd, "dropping old data", ret_error);
	}
	r = history_meta_set(s, history_data_from_key[res], (int64_t)cutoff, ret_error);
	if (r < 0)
		return r;
	/* Lives all of whose data is gone, in every resolution. */
	int64_t oldest = INT64_MAX;
	for (int i = 0; i < _HISTORY_RESOLUTION_MAX; i++) {
		int64_t v;
		r = history_meta_get(s, history_data_from_key[i], &v, ret_error);
		if (r < 0)
			return r;
		oldest = MIN(oldest, v);
	}
	_cleanup_finalize_ sqlite3_stmt *gone = NULL;
	r = history_prepare(s, "DELETE FROM lives WHERE removed_us < ?", &gone, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_int64(gone, 1, oldest);
	rc = sqlite3_step(gone);
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, "dropping old lives", ret_error);
	if (sqlite3_changes(s->db) > 0) {
		/* In the same transaction: a life's id may be given again to a
		 * new life once it is gone (INTEGER PRIMARY KEY), which must not
		 * inherit these. */
		_cleanup_finalize_ sqlite3_stmt *orphans = NULL;
		r = history_prepare(s, "DELETE FROM charge_points WHERE life NOT IN (SELECT id FROM lives)", &orphans,
				    ret_error);
		if (r < 0)
			return r;
		rc = sqlite3_step(orphans);
		if (rc != SQLITE_DONE)
			return history_sqlite_error(s->db, rc, "dropping old charges", ret_error);
	}
	return prune_charges(s, oldest, ret_error);
}

static int maintain_tx(struct history_store *s, uint64_t now_us, char **ret_error)
{
	_cleanup_free_ struct history_run *runs = NULL;
	int n_runs = history_load_runs(s, &runs, ret_error);
	if (n_runs < 0)
		return n_runs;
	int64_t rolled[_HISTORY_RESOLUTION_MAX] = {};
	int r;
	/* Buckets end before the last recording: all their data is in. */
	uint64_t complete = s->last_us;
	for (int res = HISTORY_MINUTE; res < _HISTORY_RESOLUTION_MAX; res++) {
		r = history_meta_get(s, history_rolled_key[res], &rolled[res], ret_error);
		if (r < 0)
			return r;
		const uint64_t len = history_bucket_us[res];
		uint64_t to = complete - complete % len;
		to = MIN(to, (uint64_t)rolled[res] + rollup_batch_buckets[res] * len);
		if (to > (uint64_t)rolled[res]) {
			r = rollup(s, res, (uint64_t)rolled[res], to, runs, (size_t)n_runs, ret_error);
			if (r >= 0)
				r = history_meta_set(s, history_rolled_key[res], (int64_t)to, ret_error);
			if (r < 0)
				return r;
			rolled[res] = (int64_t)to;
		}
		complete = (uint64_t)rolled[res];
	}
	/* Removed lives are needed by the rollups until both have passed them. */
	size_t kept = 0;
	for (size_t i = 0; i < s->n_removed; i++)
		if (s->removed[i].removed_us >= (uint64_t)rolled[HISTORY_HOUR])
			s->removed[kept++] = s->removed[i];
	s->n_removed = kept;
	/* Retention: each resolution is dropped only once the next coarser
	 * one holds it, and in steps of at least a minute (each step visits
	 * every life). */
	for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
		uint64_t keep = s->limits.retention_us[res];
		if (keep == 0 || keep >= now_us)
			continue;
		uint64_t cutoff = now_us - keep;
		if (res + 1 < _HISTORY_RESOLUTION_MAX)
			cutoff = MIN(cutoff, (uint64_t)rolled[res + 1]);
		int64_t data_from;
		r = history_meta_get(s, history_data_from_key[res], &data_from, ret_error);
		if (r < 0)
			return r;
		if ((int64_t)cutoff < data_from + (int64_t)MAX(history_bucket_us[res], UINT64_C(60000000)))
			continue;
		r = prune(s, res, cutoff, ret_error);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Give freed pages back to the file system and empty the WAL. */
static int shrink(struct history_store *s, char **ret_error)
{
	int r = history_exec(s, "PRAGMA incremental_vacuum", "shrinking", ret_error);
	if (r < 0)
		return r;
	return history_exec(s, "PRAGMA wal_checkpoint(TRUNCATE)", "shrinking", ret_error);
}

static int enforce_size_cap(struct history_store *s, uint64_t now_us, char **ret_error)
{
	/* The oldest time of each resolution's data (a scan: the cap is rare). */
	static const char *const oldest_sql[_HISTORY_RESOLUTION_MAX] = {
		"SELECT min(t_us) FROM points",
		"SELECT min(t_us) FROM rollups WHERE res = 1",
		"SELECT min(t_us) FROM rollups WHERE res = 2",
	};
	for (int round = 0; round < 16 && history_store_file_bytes(s) > s->limits.max_bytes; round++) {
		/* The oldest data, whatever its resolution. */
		int oldest_res = -1;
		int64_t oldest = INT64_MAX;
		for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
			_cleanup_finalize_ sqlite3_stmt *st = NULL;
			int64_t from;
			int r = history_prepare(s, oldest_sql[res], &st, ret_error);
			if (r >= 0)
				r = history_meta_get(s, history_data_from_key[res], &from, ret_error);
			if (r < 0)
				return r;
			int rc = sqlite3_step(st);
			if (rc != SQLITE_ROW)
				return history_sqlite_error(s->db, rc, "size cap", ret_error);
			if (sqlite3_column_type(st, 0) == SQLITE_NULL)
				continue;
			int64_t t = MAX(sqlite3_column_int64(st, 0), from);
			if (t < oldest) {
				oldest = t;
				oldest_res = res;
			}
		}
		if (oldest_res < 0 || (uint64_t)oldest >= now_us)
			return 0;
		uint64_t span = now_us - (uint64_t)oldest;
		uint64_t cutoff = (uint64_t)oldest + MAX(span / 8, MAX(history_bucket_us[oldest_res], UINT64_C(60000000)));
		cutoff = MIN(cutoff, now_us);
		int r = history_exec(s, "BEGIN IMMEDIATE", "size cap", ret_error);
		if (r < 0)
			return r;
		r = prune(s, oldest_res, cutoff, ret_error);
		if (r >= 0)
			r = history_exec(s, "COMMIT", "size cap", ret_error);
		if (r < 0) {
			history_rollback(s);
			return r;
		}
		r = shrink(s, ret_error);
		if (r < 0)
			return r;
	}
	return 0;
}

int history_store_maintain(struct history_store *s, uint64_t now_us, char **ret_error)
{
	if (s->readonly)
		return -EROFS;
	int r = history_exec(s, "BEGIN IMMEDIATE", "upkeep", ret_error);
	if (r < 0)
		return r;
	r = maintain_tx(s, now_us, ret_error);
	if (r >= 0)
		r = history_exec(s, "COMMIT", "upkeep", ret_error);
	if (r < 0) {
		history_rollback(s);
		return r;
	}
	if (s->limits.max_bytes > 0)
		return enforce_size_cap(s, now_us, ret_error);
	return 0;
}
