/* history-rows.c - one life's data read back (history-rows.h): the runs, a
 * life's rows at one resolution, the plan of pieces a window is read in, the
 * walk that turns rows into covered time, memory integrals and their bounds,
 * the counters' values at a window's ends, and what a life used over a
 * window. The rollups (history-upkeep.c), the accounting record of a removal
 * (history-record.c) and the queries (history-query.c) all use this one walk,
 * so that a rollup and the raw data it summarises agree by construction.
 * Calls only history-sql.c. */
#include "history-rows.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "basic/util.h"
#include "history-sql.h"

int history_load_runs(struct history_store *s, struct history_run **ret, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int r = history_prepare(s, "SELECT id, started_us, last_us, interval_us, max_step_us FROM runs ORDER BY id", &st, ret_error);
	if (r < 0)
		return r;
	_cleanup_free_ struct history_run *runs = NULL;
	size_t n = 0, cap = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct history_run *m = reallocarray(runs, cap, sizeof(*runs));
			if (!m)
				return -ENOMEM;
			runs = m;
		}
		runs[n++] = (struct history_run){
			.id = sqlite3_column_int64(st, 0),
			.started_us = (uint64_t)sqlite3_column_int64(st, 1),
			.last_us = (uint64_t)sqlite3_column_int64(st, 2),
			.interval_us = (uint64_t)sqlite3_column_int64(st, 3),
			.max_step_us = sqlite3_column_type(st, 4) == SQLITE_NULL ? UINT64_MAX
										 : (uint64_t)sqlite3_column_int64(st, 4),
		};
	}
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, "runs", ret_error);
	*ret = TAKE_PTR(runs);
	return (int)n;
}

const struct history_run *history_find_run(const struct history_run *runs, size_t n, int64_t id)
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

/* Columns read into a row: the rollups' in the points' shape (HISTORY_RAW_COLUMNS). */
#define ROLLUP_COLUMNS                                                                              \
	"t_us, t_us + ?4, t_us + t_last_off, run, ?4 - uncovered_us, memory_integral, memory_bound, memory_min," \
	" memory_max, tasks_max, cpu_usec, memory_bytes, memory_peak_bytes, io_read_bytes, io_write_bytes, tasks FROM rollups" \
	" WHERE res = ?5 AND life = ?1"

static const char *const rows_sql[_HISTORY_RESOLUTION_MAX] = {
	[HISTORY_RAW] = "SELECT * FROM (SELECT " HISTORY_RAW_COLUMNS " AND t_us < ?2 ORDER BY t_us DESC LIMIT 2)"
			" UNION ALL SELECT * FROM (SELECT " HISTORY_RAW_COLUMNS " AND t_us >= ?2 AND t_us < ?3 ORDER BY t_us)"
			" UNION ALL SELECT * FROM (SELECT " HISTORY_RAW_COLUMNS " AND t_us >= ?3 ORDER BY t_us LIMIT 1)",
	[HISTORY_MINUTE] = "SELECT * FROM (SELECT " ROLLUP_COLUMNS " AND t_us < ?2 ORDER BY t_us DESC LIMIT 2)"
			   " UNION ALL SELECT * FROM (SELECT " ROLLUP_COLUMNS " AND t_us >= ?2 AND t_us < ?3 ORDER BY t_us)"
			   " UNION ALL SELECT * FROM (SELECT " ROLLUP_COLUMNS " AND t_us >= ?3 ORDER BY t_us LIMIT 1)",
};

/* The row `st` is on (HISTORY_RAW_COLUMNS or ROLLUP_COLUMNS). */
static int64_t value_or_unknown(sqlite3_value *v)
{
	return sqlite3_value_type(v) == SQLITE_NULL ? HISTORY_UNKNOWN : sqlite3_value_int64(v);
}

void history_read_row(sqlite3_stmt *st, struct history_row *w)
{
	/* sqlite3_column_value() once per column: each sqlite3_column_*() call
	 * pays the statement's API entry and exit, the value's own accessors
	 * do not (a usage of 10,000 cgroups reads ~150,000 rows). */
	sqlite3_value *c[16];
	for (int i = 0; i < 16; i++)
		c[i] = sqlite3_column_value(st, i);
	*w = (struct history_row){
		.t0_us = (uint64_t)sqlite3_value_int64(c[0]),
		.t1_us = (uint64_t)sqlite3_value_int64(c[1]),
		.t_last_us = (uint64_t)sqlite3_value_int64(c[2]),
		.run = sqlite3_value_int64(c[3]),
		.covered_us = (uint64_t)sqlite3_value_int64(c[4]),
		.memory_integral = sqlite3_value_double(c[5]),
		.memory_bound = sqlite3_value_double(c[6]),
		.memory_min = sqlite3_value_type(c[7]) == SQLITE_NULL ? INT64_MAX : sqlite3_value_int64(c[7]),
		.memory_max = sqlite3_value_type(c[8]) == SQLITE_NULL ? INT64_MIN : sqlite3_value_int64(c[8]),
		.tasks_max = value_or_unknown(c[9]),
		.v = {
			.cpu_usec = value_or_unknown(c[10]),
			.memory_bytes = value_or_unknown(c[11]),
			.memory_peak_bytes = value_or_unknown(c[12]),
			.io_read_bytes = value_or_unknown(c[13]),
			.io_write_bytes = value_or_unknown(c[14]),
			.tasks = value_or_unknown(c[15]),
		},
	};
}

static int row_cmp(const void *a, const void *b)
{
	const struct history_row *x = a, *y = b;
	return x->t0_us < y->t0_us ? -1 : x->t0_us > y->t0_us;
}

int history_life_rows(struct history_store *s, enum history_resolution res, int64_t life, uint64_t since_us,
		      uint64_t until_us, struct history_row **ret, char **ret_error)
{
	sqlite3_stmt *st;
	int r = res == HISTORY_RAW
			? history_stmt(s, HISTORY_STMT_ROWS_RAW, rows_sql[HISTORY_RAW], &st, ret_error)
			: history_stmt(s, HISTORY_STMT_ROWS_ROLLUP, rows_sql[HISTORY_MINUTE], &st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, life);
	sqlite3_bind_int64(st, 2, (int64_t)since_us);
	sqlite3_bind_int64(st, 3, (int64_t)until_us);
	if (res != HISTORY_RAW) {
		sqlite3_bind_int64(st, 4, (int64_t)history_bucket_us[res]);
		sqlite3_bind_int(st, 5, (int)res);
	}
	_cleanup_free_ struct history_row *rows = NULL;
	size_t n = 0, cap = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct history_row *m = reallocarray(rows, cap, sizeof(*rows));
			if (!m)
				return -ENOMEM;
			rows = m;
		}
		history_read_row(st, &rows[n++]);
	}
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, "reading points", ret_error);
	sqlite3_reset(st);
	/* The parts come in their own order (the rows before since newest
	 * first): sorted here, without a sorter in SQLite per life. */
	bool sorted = true;
	for (size_t k = 1; k < n && sorted; k++)
		sorted = rows[k - 1].t0_us < rows[k].t0_us;
	if (!sorted)
		qsort(rows, n, sizeof(*rows), row_cmp);
	*ret = TAKE_PTR(rows);
	return (int)n;
}

uint64_t history_tail_end(const struct history_row *rows, size_t n, size_t k, const struct history_run *runs,
			  size_t n_runs, uint64_t removed_us)
{
	uint64_t end = UINT64_MAX;
	if (k + 1 < n)
		end = rows[k + 1].t0_us;
	/* Within a run a value holds until the life's next point (a removal's
	 * final point included, which may come after the run's last
	 * recording); else until the run's last recording. */
	if (k + 1 >= n || rows[k + 1].run != rows[k].run) {
		const struct history_run *run = history_find_run(runs, n_runs, rows[k].run);
		end = MIN(end, run ? run->last_us : rows[k].t1_us);
	}
	if (removed_us)
		end = MIN(end, removed_us);
	return MAX(end, rows[k].t1_us);
}

int history_plan(struct history_store *s, uint64_t since_us, uint64_t until_us, struct history_piece *ret,
		 enum history_resolution *coarsest, enum history_resolution edges[2], char **ret_error)
{
	uint64_t from[_HISTORY_RESOLUTION_MAX], rolled[_HISTORY_RESOLUTION_MAX] = { UINT64_MAX };
	for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
		int64_t v;
		int r = history_meta_get(s, history_data_from_key[res], &v, ret_error);
		if (r < 0)
			return r;
		from[res] = (uint64_t)MAX(v, 0);
		if (history_rolled_key[res]) {
			r = history_meta_get(s, history_rolled_key[res], &v, ret_error);
			if (r < 0)
				return r;
			rolled[res] = (uint64_t)MAX(v, 0);
		}
	}
	/* The fewest rows that answer exactly where the data allows: whole
	 * hours from hour rollups, whole minutes at the ends from minute
	 * rollups, the rest (the ends' partial minutes, and what is not rolled
	 * up yet) from points; where a finer resolution is dropped, the finest
	 * one left (a partial bucket, then, with its bound). Memory's integral
	 * over whole buckets is the same at every resolution (the rollups are
	 * the same walk), so only the ends need the fine data. */
	size_t n = 0;
	int worst = HISTORY_RAW;
	for (uint64_t t = since_us; t < until_us;) {
		s->plan_steps++;
		int res = -1;
		uint64_t end = 0;
		for (int c = HISTORY_HOUR; c > HISTORY_RAW && res < 0; c--) {
			const uint64_t len = history_bucket_us[c];
			uint64_t lim = MIN(until_us, rolled[c]);
			if (t % len != 0 || t < from[c] || lim < t + len)
				continue;
			/* The window's ends from the finest data there is when
			 * the counters' values at since and until come from the
			 * pieces (edges NULL); else the caller reads them apart. */
			if (!edges && t == since_us && t >= from[c - 1])
				continue;
			uint64_t e = t + (lim - t) / len * len;
			if (!edges && e == until_us && until_us - 1 >= from[c - 1])
				e -= len;
			/* Up to where a coarser whole bucket may begin. */
			if (c + 1 < _HISTORY_RESOLUTION_MAX) {
				const uint64_t next = history_bucket_us[c + 1];
				e = MIN(e, t - t % next + next);
			}
			if (e <= t)
				continue;
			res = c;
			end = e;
		}
		if (res < 0) {
			/* The finest resolution with data at t, to the next boundary
			 * a coarser whole bucket may start at. */
			res = t >= from[HISTORY_RAW] ? HISTORY_RAW : t >= from[HISTORY_MINUTE] ? HISTORY_MINUTE : HISTORY_HOUR;
			const uint64_t next = res == HISTORY_HOUR ? until_us : history_bucket_us[res + 1];
			end = res == HISTORY_HOUR ? until_us : MIN(until_us, t - t % next + next);
			if (res != HISTORY_RAW && rolled[res] > t)
				end = MIN(end, rolled[res]);
			/* Past the rollups' watermarks no coarser bucket can be
			 * whole at any later boundary (each would end past the
			 * rolled data), and points stay the finest data to the
			 * window's end: one piece to there. Stepping a minute at a
			 * time instead made the cost follow the window, not the
			 * data: ~5 ms a year, minutes for until_us = 2^62; the
			 * pieces are the same (consecutive points pieces
			 * were merged into one). */
			if (res == HISTORY_RAW && t + history_bucket_us[HISTORY_MINUTE] > rolled[HISTORY_MINUTE] &&
			    t + history_bucket_us[HISTORY_HOUR] > rolled[HISTORY_HOUR])
				end = until_us;
		}
		/* Degraded where the finer data is gone (a whole bucket read from
		 * a rollup while the finer data is there answers the same). */
		if (res > worst && t < from[res - 1])
			worst = res;
		if (n > 0 && ret[n - 1].res == (enum history_resolution)res && ret[n - 1].b == t)
			ret[n - 1].b = end;
		else if (n < HISTORY_MAX_PIECES)
			ret[n++] = (struct history_piece){ (enum history_resolution)res, t, end };
		else
			ret[n - 1] = (struct history_piece){ (enum history_resolution)res, ret[n - 1].a, end };
		t = end;
	}
	if (edges)
		for (int k = 0; k < 2; k++) {
			uint64_t t = k == 0 ? since_us : until_us - 1;
			edges[k] = t >= from[HISTORY_RAW]	 ? HISTORY_RAW
				   : t >= from[HISTORY_MINUTE] ? HISTORY_MINUTE
							       : HISTORY_HOUR;
			/* the ends are as exact as the data read there */
			worst = MAX(worst, (int)edges[k]);
		}
	*coarsest = (enum history_resolution)worst;
	return (int)n;
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t lo = MAX(a0, b0), hi = MIN(a1, b1);
	return hi > lo ? hi - lo : 0;
}


static void acc_value(struct history_acc *x, int64_t m, int64_t tasks)
{
	if (m != HISTORY_UNKNOWN) {
		x->min = MIN(x->min, m);
		x->max = MAX(x->max, m);
	}
	if (tasks != HISTORY_UNKNOWN)
		x->tasks_max = MAX(x->tasks_max, tasks);
}

void history_accumulate(const struct history_row *rows, const uint64_t *tail, size_t lo, size_t hi,
		       const struct history_run *runs, size_t n_runs, uint64_t a, uint64_t b, struct history_acc *x)
{
	for (size_t k = lo; k < hi; k++) {
		const struct history_row *w = &rows[k];
		uint64_t len = w->t1_us - w->t0_us;
		if (len > 0 && w->covered_us > 0) {
			uint64_t ov = overlap(w->t0_us, w->t1_us, a, b);
			if (ov == len) {
				x->covered_us += w->covered_us;
				x->integral += w->memory_integral;
				x->bound += w->memory_bound;
			} else if (ov > 0) {
				/* Where in the bucket its covered time lay is not kept:
				 * the share is proportional, and the bound covers the
				 * whole range the part could have had. */
				double f = (double)ov / (double)len;
				x->covered_us += (uint64_t)llround((double)w->covered_us * f);
				x->integral += w->memory_integral * f;
				x->bound += w->memory_bound * f +
					    (double)MAX(w->memory_max, 0) * (double)MIN(ov, w->covered_us);
			}
			if (ov > 0) {
				if (w->memory_min != INT64_MAX)
					acc_value(x, w->memory_min, HISTORY_UNKNOWN);
				if (w->memory_max != INT64_MIN)
					acc_value(x, w->memory_max, w->tasks_max);
			}
		}
		/* A value seen at a point moved there within the run's interval
		 * before it: held values are off by at most the change, for at
		 * most that long (points only; a bucket carries its own bound).
		 * Where the kernel's peak rose meanwhile, memory went up to it
		 * within that time (a recording before saw the old peak: the
		 * point would be there otherwise), however briefly and whatever
		 * it came back to: off by up to the new peak then. */
		if (len == 0 && k > 0 && tail[k - 1] == w->t0_us && rows[k - 1].t1_us == rows[k - 1].t0_us &&
		    w->v.memory_bytes != HISTORY_UNKNOWN && rows[k - 1].v.memory_bytes != HISTORY_UNKNOWN) {
			const struct history_run *run = history_find_run(runs, n_runs, w->run);
			uint64_t iv = run ? run->interval_us : 0;
			uint64_t from = MAX(rows[k - 1].t0_us, w->t0_us > iv ? w->t0_us - iv : 0);
			uint64_t ov = overlap(from, w->t0_us, a, b);
			const int64_t held = rows[k - 1].v.memory_bytes;
			uint64_t off = abs_u64(w->v.memory_bytes - held);
			const int64_t peak = w->v.memory_peak_bytes, prev_peak = rows[k - 1].v.memory_peak_bytes;
			if (peak != HISTORY_UNKNOWN && prev_peak != HISTORY_UNKNOWN && peak > prev_peak && peak > held)
				off = MAX(off, (uint64_t)(peak - held));
			x->bound += (double)off * (double)ov;
		}
		uint64_t ov = overlap(w->t1_us, tail[k], a, b);
		if (ov > 0) {
			x->covered_us += ov;
			if (w->v.memory_bytes != HISTORY_UNKNOWN)
				x->integral += (double)w->v.memory_bytes * (double)ov;
			acc_value(x, w->v.memory_bytes, w->v.tasks);
		}
	}
}

void history_life_data_clear(struct history_life_data *d)
{
	free(d->rows);
	free(d->tail);
	*d = (struct history_life_data){};
}

int history_life_data_load(struct history_store *s, enum history_resolution res, int64_t life, uint64_t since_us,
			  uint64_t until_us, uint64_t removed_us, const struct history_run *runs, size_t n_runs,
			  struct history_life_data *d, char **ret_error)
{
	*d = (struct history_life_data){};
	int n = history_life_rows(s, res, life, since_us, until_us, &d->rows, ret_error);
	if (n < 0)
		return n;
	d->n = (size_t)n;
	d->tail = calloc(d->n ? d->n : 1, sizeof(*d->tail));
	if (!d->tail) {
		history_life_data_clear(d);
		return -ENOMEM;
	}
	for (size_t k = 0; k < d->n; k++)
		d->tail[k] = history_tail_end(d->rows, d->n, k, runs, n_runs, removed_us);
	return 0;
}

/* A cumulative counter's value at t (one of history_values' fields, at
 * `offset`), from the rows around it: `value` the held one (the last point at
 * or before t), `bound` the distance to the next (the true value lies
 * between, the counter being monotonic) - or 0 where t lies in an idle
 * stretch: when the two are consecutive points of one run, every recording
 * of the run between them saw the lower value (a point is written whenever a
 * value changed), and the one just before the upper point was at most the
 * run's longest step (max_step_us) before it; up to that time the counter
 * still held the lower value exactly. */
static void counter_at(const struct history_life_data *d, const struct history_run *runs, size_t n_runs,
		       size_t offset, uint64_t t, int64_t *value, int64_t *bound)
{
	const struct history_row *lower = NULL, *upper = NULL;
	for (size_t k = 0; k < d->n; k++) {
		if (d->rows[k].t_last_us <= t)
			lower = &d->rows[k];
		else if (!upper)
			upper = &d->rows[k];
	}
	int64_t lv = lower ? *(const int64_t *)((const char *)&lower->v + offset) : HISTORY_UNKNOWN;
	int64_t uv = upper ? *(const int64_t *)((const char *)&upper->v + offset) : HISTORY_UNKNOWN;
	if (lv == HISTORY_UNKNOWN) {
		/* Nothing at or before t (the life's first bucket begins after
		 * it): the counter was between 0 and the first value known. */
		*value = uv == HISTORY_UNKNOWN ? HISTORY_UNKNOWN : 0;
		*bound = uv == HISTORY_UNKNOWN ? 0 : uv;
		return;
	}
	*value = lv;
	*bound = uv != HISTORY_UNKNOWN && uv > lv ? uv - lv : 0;
	if (lower->t1_us == lower->t0_us && lower->t0_us == t)
		*bound = 0; /* t is the point's own recording */
	/* Points only (a bucket's last point may follow others in it), of one
	 * run (a gap or a restart between them records nothing); the rows of a
	 * life at one resolution are consecutive, so lower and upper are
	 * neighbours. */
	if (*bound > 0 && lower->t1_us == lower->t0_us && upper->t1_us == upper->t0_us && lower->run == upper->run) {
		const struct history_run *run = history_find_run(runs, n_runs, upper->run);
		if (run && run->max_step_us != UINT64_MAX && t + run->max_step_us <= upper->t0_us)
			*bound = 0;
	}
}

/* The piece data that holds time t (the last one when none does). */
static const struct history_life_data *data_at(const struct history_piece *pieces, const struct history_life_data *d,
					       size_t n, uint64_t t)
{
	for (size_t i = 0; i < n; i++)
		if (t < pieces[i].b)
			return &d[i];
	return &d[n - 1];
}

/* A counter's delta over [a, b): from 0 when the life begins in the window
 * and acctd saw it created (from_zero: the kernel's counters start at 0),
 * from its first point when it begins in the window but existed before
 * (what it used before that point is not the window's), to the final point
 * when it ends in it (bound: the final point's own, for CPU time). */
static void counter_delta(const struct history_piece *pieces, const struct history_life_data *d, size_t n,
			  const struct history_life_data *edges, const struct history_run *runs, size_t n_runs,
			  size_t offset, const struct history_life_ref *lr, int64_t *value, int64_t *bound)
{
	uint64_t a = pieces[0].a, b = pieces[n - 1].b;
	const uint64_t first_seen_us = lr->first_seen_us, removed_us = lr->removed_us;
	const bool from_zero = lr->from_zero;
	const struct history_values *base = lr->base;
	int64_t v0 = 0, b0 = 0, v1, b1 = 0;
	if (first_seen_us < a)
		counter_at(edges ? &edges[0] : &d[0], runs, n_runs, offset, a, &v0, &b0);
	else if (!from_zero && lr->born_after_us >= a)
		; /* created inside the window, after born_after_us: from 0, like from_zero */
	else if (!from_zero) {
		if (base && *(const int64_t *)((const char *)base + offset) != HISTORY_UNKNOWN)
			v0 = *(const int64_t *)((const char *)base + offset); /* kept with the life: points expire */
		else
			counter_at(data_at(pieces, d, n, first_seen_us), runs, n_runs, offset, first_seen_us, &v0, &b0);
		/* Created after born_after_us, before the window: what it used
		 * before its first point may lie in the window, all or none. */
		if (lr->born_after_us && v0 != HISTORY_UNKNOWN)
			b0 += v0;
	}
	if (removed_us && removed_us < b) {
		counter_at(data_at(pieces, d, n, removed_us), runs, n_runs, offset, removed_us, &v1, &b1);
		b1 = offset == offsetof(struct history_values, cpu_usec) ? lr->final_cpu_bound : 0;
	} else
		counter_at(edges ? &edges[1] : &d[n - 1], runs, n_runs, offset, b - 1, &v1, &b1);
	if (v0 == HISTORY_UNKNOWN || v1 == HISTORY_UNKNOWN) {
		*value = HISTORY_UNKNOWN;
		*bound = 0;
		return;
	}
	*value = v1 > v0 ? v1 - v0 : 0;
	*bound = b0 + b1;
}

int history_eval_life(struct history_store *s, const struct history_piece *pieces, size_t n_pieces,
		      const enum history_resolution *edge_res, const struct history_run *runs, size_t n_runs, int64_t life,
		      const struct history_life_ref *lr, struct history_life_eval *ret, char **ret_error)
{
	const uint64_t removed_us = lr->removed_us;
	struct history_life_data d[HISTORY_MAX_PIECES] = {}, edges[2] = {};
	int r = 0;
	for (size_t i = 0; i < n_pieces; i++) {
		r = history_life_data_load(s, pieces[i].res, life, pieces[i].a, pieces[i].b, removed_us, runs, n_runs,
					   &d[i], ret_error);
		if (r < 0)
			goto out;
	}
	for (int k = 0; edge_res && n_pieces > 0 && k < 2; k++) {
		uint64_t t = k == 0 ? pieces[0].a : pieces[n_pieces - 1].b - 1;
		r = history_life_data_load(s, edge_res[k], life, t, t, removed_us, runs, n_runs, &edges[k], ret_error);
		if (r < 0)
			goto out;
	}
	history_eval_life_data(pieces, n_pieces, d, edge_res ? edges : NULL, runs, n_runs, lr, ret);
out:
	for (size_t i = 0; i < n_pieces; i++)
		history_life_data_clear(&d[i]);
	for (int k = 0; k < 2; k++)
		history_life_data_clear(&edges[k]);
	return r;
}

void history_eval_life_data(const struct history_piece *pieces, size_t n_pieces, const struct history_life_data *d,
			    const struct history_life_data *edges, const struct history_run *runs, size_t n_runs,
			    const struct history_life_ref *lr, struct history_life_eval *ret)
{
	const uint64_t removed_us = lr->removed_us;
	*ret = (struct history_life_eval){ .acc = HISTORY_ACC_INIT, .peak = HISTORY_UNKNOWN };
	for (size_t i = 0; i < n_pieces; i++)
		history_accumulate(d[i].rows, d[i].tail, 0, d[i].n, runs, n_runs, pieces[i].a, pieces[i].b, &ret->acc);
	if (n_pieces == 0)
		return;
	const size_t n = n_pieces;
	const uint64_t b = pieces[n - 1].b;
	counter_delta(pieces, d, n, edges, runs, n_runs, offsetof(struct history_values, cpu_usec), lr, &ret->cpu,
		      &ret->cpu_bound);
	counter_delta(pieces, d, n, edges, runs, n_runs, offsetof(struct history_values, io_read_bytes), lr,
		      &ret->io_read, &ret->io_read_bound);
	counter_delta(pieces, d, n, edges, runs, n_runs, offsetof(struct history_values, io_write_bytes), lr,
		      &ret->io_write, &ret->io_write_bound);
	uint64_t t_end = removed_us && removed_us < b ? removed_us : b - 1;
	int64_t pb;
	counter_at(edges && t_end == b - 1 ? &edges[1] : data_at(pieces, d, n, t_end), runs, n_runs,
		   offsetof(struct history_values, memory_peak_bytes), t_end, &ret->peak, &pb);
}

int history_life_totals(struct history_store *s, int64_t life, uint64_t since_us, uint64_t until_us,
			uint64_t removed_us, struct history_life_totals *ret, char **ret_error)
{
	struct history_piece pieces[HISTORY_MAX_PIECES];
	enum history_resolution coarsest;
	int n = history_plan(s, since_us, until_us, pieces, &coarsest, NULL, ret_error);
	if (n < 0)
		return n;
	_cleanup_free_ struct history_run *runs = NULL;
	int n_runs = history_load_runs(s, &runs, ret_error);
	if (n_runs < 0)
		return n_runs;
	struct history_life_eval e;
	const struct history_life_ref lr = { .first_seen_us = since_us, .from_zero = true, .removed_us = removed_us };
	int r = history_eval_life(s, pieces, (size_t)n, NULL, runs, (size_t)n_runs, life, &lr, &e, ret_error);
	if (r < 0)
		return r;
	*ret = (struct history_life_totals){
		.memory_integral = e.acc.integral,
		.memory_bound = e.acc.bound,
		.recorded_us = e.acc.covered_us,
		.memory_max = e.acc.max == INT64_MIN ? HISTORY_UNKNOWN : e.acc.max,
	};
	return 0;
}
