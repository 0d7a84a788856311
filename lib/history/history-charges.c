/* history-charges.c - the history of charged resources (docs/charges.md,
 * "History"): recording a charged cgroup's subtree value of each declared
 * resource when it changes, and the queries that integrate it over a window
 * or list its points. Kept in table charge_points (schema 5), one row per
 * change, keyed by the life and the resource's name, so that the operator's
 * resources need no schema of their own. No rollups: points are kept as long
 * as the longest-kept data of the kernel's quantities (history-upkeep.c). */
#include "history-store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"
#include "history-rows.h"
#include "history-sql.h"

static int record_charges_tx(struct history_store *s, uint64_t now_us, const struct history_charge_sample *samples,
			     size_t n, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *last = NULL, *ins = NULL;
	int r = history_prepare(s,
				"SELECT value, bound, run FROM charge_points WHERE life = ?1 AND resource = ?2"
				" ORDER BY t_us DESC LIMIT 1",
				&last, ret_error);
	if (r >= 0)
		r = history_prepare(s,
				    "INSERT OR REPLACE INTO charge_points (life, resource, t_us, run, value, bound)"
				    " VALUES (?, ?, ?, ?, ?, ?)",
				    &ins, ret_error);
	if (r < 0)
		return r;
	int written = 0;
	for (size_t i = 0; i < n; i++) {
		const struct history_charge_sample *c = &samples[i];
		const struct history_life *l = history_index_get(&s->index, c->key.path, c->key.inode);
		if (!l)
			continue; /* not recorded (yet): nothing to key it by */
		sqlite3_reset(last);
		sqlite3_bind_int64(last, 1, l->id);
		sqlite3_bind_text(last, 2, c->resource, -1, SQLITE_STATIC);
		int rc = sqlite3_step(last);
		if (rc == SQLITE_ROW && sqlite3_column_int64(last, 0) == c->value &&
		    sqlite3_column_int64(last, 1) == c->bound && sqlite3_column_int64(last, 2) == s->run)
			continue; /* unchanged in this run: it holds */
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return history_sqlite_error(s->db, rc, "recording charges", ret_error);
		sqlite3_reset(last);
		sqlite3_reset(ins);
		sqlite3_bind_int64(ins, 1, l->id);
		sqlite3_bind_text(ins, 2, c->resource, -1, SQLITE_STATIC);
		sqlite3_bind_int64(ins, 3, (int64_t)now_us);
		sqlite3_bind_int64(ins, 4, s->run);
		sqlite3_bind_int64(ins, 5, c->value);
		sqlite3_bind_int64(ins, 6, c->bound);
		rc = sqlite3_step(ins);
		if (rc != SQLITE_DONE)
			return history_sqlite_error(s->db, rc, "recording charges", ret_error);
		written++;
	}
	return written;
}

int history_store_record_charges(struct history_store *s, uint64_t now_us, const struct history_charge_sample *samples,
				 size_t n, char **ret_error)
{
	if (s->readonly)
		return -EROFS;
	if (n == 0)
		return 0;
	int r = history_exec(s, "BEGIN IMMEDIATE", "recording charges", ret_error);
	if (r < 0)
		return r;
	int written = record_charges_tx(s, now_us, samples, n, ret_error);
	if (written >= 0)
		r = history_exec(s, "COMMIT", "recording charges", ret_error);
	if (written < 0 || r < 0) {
		history_rollback(s);
		return written < 0 ? written : r;
	}
	return written;
}

/* One stored point with what the queries need to place it in time. */
struct charge_row {
	int64_t life, run;
	uint64_t t_us, end_us;
	int64_t value, bound;
	uint64_t removed_us;
	/* |change| x the run's longest step, with the time the change can
	 * have happened in: (t_us - step, t_us]; 0 for a life's first point
	 * of a run. */
	double change;
	uint64_t step_us;
};

static const struct history_run *find_run(const struct history_run *runs, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (runs[mid].id == id)
			return &runs[mid];
		if (runs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Every point of (path, resource), of every life, ordered by life and time,
 * with its end worked out (history-store.h). Returns the count (0: none). */
static int load_rows(struct history_store *s, const char *path, const char *resource, struct charge_row **ret,
		     char **ret_error)
{
	_cleanup_free_ struct history_run *runs = NULL;
	int n_runs = history_load_runs(s, &runs, ret_error);
	if (n_runs < 0)
		return n_runs;
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int r = history_prepare(s,
				"SELECT c.life, c.run, c.t_us, c.value, c.bound, coalesce(l.removed_us, 0)"
				" FROM charge_points c JOIN lives l ON c.life = l.id"
				" WHERE l.path = ?1 AND c.resource = ?2 ORDER BY c.life, c.t_us",
				&st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, resource, -1, SQLITE_STATIC);
	_cleanup_free_ struct charge_row *rows = NULL;
	size_t n = 0, cap = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct charge_row *m = reallocarray(rows, cap, sizeof(*rows));
			if (!m)
				return -ENOMEM;
			rows = m;
		}
		rows[n++] = (struct charge_row){
			.life = sqlite3_column_int64(st, 0),
			.run = sqlite3_column_int64(st, 1),
			.t_us = (uint64_t)sqlite3_column_int64(st, 2),
			.value = sqlite3_column_int64(st, 3),
			.bound = sqlite3_column_int64(st, 4),
			.removed_us = (uint64_t)sqlite3_column_int64(st, 5),
		};
	}
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, "reading charges", ret_error);
	if (n > INT32_MAX)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		struct charge_row *c = &rows[i];
		const struct history_run *run = find_run(runs, (size_t)n_runs, c->run);
		uint64_t last_us = run ? run->last_us : c->t_us;
		uint64_t interval = run ? run->interval_us : 0;
		bool next_same = i + 1 < n && rows[i + 1].life == c->life && rows[i + 1].run == c->run;
		if (next_same)
			c->end_us = rows[i + 1].t_us;
		else if (c->removed_us >= c->t_us && c->removed_us <= last_us + HISTORY_STALL_INTERVALS * interval)
			/* removed in this run (its removal came after the
			 * run's last recording, within what is no stall): the
			 * value held until then, as the kernel's do */
			c->end_us = c->removed_us;
		else
			c->end_us = MAX(last_us, c->t_us);
		if (i > 0 && rows[i - 1].life == c->life && rows[i - 1].run == c->run) {
			int64_t d = c->value - rows[i - 1].value;
			c->change = d < 0 ? -(double)d : (double)d;
			c->step_us = run && run->max_step_us != UINT64_MAX ? run->max_step_us : interval;
		}
	}
	*ret = TAKE_PTR(rows);
	return (int)n;
}

int history_store_charge_usage(struct history_store *s, const char *path, const char *resource, uint64_t since_us,
			       uint64_t until_us, struct history_charge_usage *ret, char **ret_error)
{
	_cleanup_free_ struct charge_row *rows = NULL;
	int n = load_rows(s, path, resource, &rows, ret_error);
	if (n < 0)
		return n;
	if (n == 0)
		return -ENOENT;
	struct history_charge_usage u = { .max_value = HISTORY_UNKNOWN };
	int64_t counted_life = 0;
	for (int i = 0; i < n; i++) {
		const struct charge_row *c = &rows[i];
		uint64_t a = MAX(c->t_us, since_us), b = MIN(c->end_us, until_us);
		if (c->step_us > 0) {
			uint64_t ca = c->t_us > c->step_us ? c->t_us - c->step_us : 0;
			ca = MAX(ca, since_us);
			uint64_t cb = MIN(c->t_us, until_us);
			if (cb > ca)
				u.bound_seconds += c->change * (double)(cb - ca) / 1e6;
		}
		if (b <= a)
			continue;
		double dt = (double)(b - a) / 1e6;
		u.recorded_us += b - a;
		u.value_seconds += (double)c->value * dt;
		u.bound_seconds += (double)c->bound * dt;
		if (u.max_value == HISTORY_UNKNOWN || c->value > u.max_value)
			u.max_value = c->value;
		if (c->life != counted_life) {
			u.lives++;
			counted_life = c->life;
			u.removed_us = c->removed_us;
		}
	}
	*ret = u;
	return 0;
}

int history_store_charge_points(struct history_store *s, const char *path, const char *resource, uint64_t since_us,
				uint64_t until_us, struct history_charge_point **ret, char **ret_error)
{
	_cleanup_free_ struct charge_row *rows = NULL;
	int n = load_rows(s, path, resource, &rows, ret_error);
	if (n < 0)
		return n;
	if (n == 0)
		return -ENOENT;
	_cleanup_free_ struct history_charge_point *pts = calloc((size_t)n, sizeof(*pts));
	if (!pts)
		return -ENOMEM;
	int k = 0;
	for (int i = 0; i < n; i++) {
		uint64_t a = MAX(rows[i].t_us, since_us), b = MIN(rows[i].end_us, until_us);
		/* a point at the window's start that holds no time there still
		 * says what the value was from then on: keep those that begin
		 * inside the window even when they hold nothing (a removal at
		 * the point) */
		if (b < a || (b == a && rows[i].t_us < since_us) || a >= until_us)
			continue;
		pts[k++] = (struct history_charge_point){ .t_us = a, .end_us = b, .value = rows[i].value,
							   .bound = rows[i].bound };
	}
	*ret = TAKE_PTR(pts);
	return k;
}
