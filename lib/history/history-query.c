/* history-query.c - reading the history back (history-store.h "queries"):
 * a life's rows at one resolution, the walk that turns rows into covered
 * time, memory integrals and their bounds over a window, and on it usage,
 * gaps and series. The rollups of history-store.c use the same walk, so that
 * a rollup and the raw data it summarises agree by construction.
 *
 * The file is long because usage and series share that walk, the plan of
 * pieces and the counters' edge rules (held values, idle stretches, runs'
 * steps): split, each would need the rows' internals the other uses. */
#include "history-store.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"
#include "history-internal.h"

static void finalizep(sqlite3_stmt **st)
{
	if (*st)
		sqlite3_finalize(*st);
}
#define _cleanup_finalize_ _cleanup_(finalizep)

static int prepare(struct history_store *s, const char *sql, sqlite3_stmt **ret, char **ret_error)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);
	return rc == SQLITE_OK ? 0 : history_sqlite_error(s->db, rc, "prepare", ret_error);
}

int history_load_runs(struct history_store *s, struct history_run **ret, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int r = prepare(s, "SELECT id, started_us, last_us, interval_us, max_step_us FROM runs ORDER BY id", &st, ret_error);
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

/* Columns read into a row: the points' and the rollups' as the same shape. */
#define RAW_COLUMNS                                                                                    \
	"t_us, t_us, t_us, run, 0, 0.0, 0.0, NULL, NULL, tasks, cpu_usec, memory_bytes, memory_peak_bytes," \
	" io_read_bytes, io_write_bytes, tasks FROM points WHERE life = ?1"
#define ROLLUP_COLUMNS                                                                              \
	"t_us, t_us + ?4, t_us + t_last_off, run, ?4 - uncovered_us, memory_integral, memory_bound, memory_min," \
	" memory_max, tasks_max, cpu_usec, memory_bytes, memory_peak_bytes, io_read_bytes, io_write_bytes, tasks FROM rollups" \
	" WHERE res = ?5 AND life = ?1"

static const char *const rows_sql[_HISTORY_RESOLUTION_MAX] = {
	[HISTORY_RAW] = "SELECT * FROM (SELECT " RAW_COLUMNS " AND t_us < ?2 ORDER BY t_us DESC LIMIT 2)"
			" UNION ALL SELECT * FROM (SELECT " RAW_COLUMNS " AND t_us >= ?2 AND t_us < ?3 ORDER BY t_us)"
			" UNION ALL SELECT * FROM (SELECT " RAW_COLUMNS " AND t_us >= ?3 ORDER BY t_us LIMIT 1)",
	[HISTORY_MINUTE] = "SELECT * FROM (SELECT " ROLLUP_COLUMNS " AND t_us < ?2 ORDER BY t_us DESC LIMIT 2)"
			   " UNION ALL SELECT * FROM (SELECT " ROLLUP_COLUMNS " AND t_us >= ?2 AND t_us < ?3 ORDER BY t_us)"
			   " UNION ALL SELECT * FROM (SELECT " ROLLUP_COLUMNS " AND t_us >= ?3 ORDER BY t_us LIMIT 1)",
};

/* The row `st` is on (RAW_COLUMNS or ROLLUP_COLUMNS). */
static int64_t value_or_unknown(sqlite3_value *v)
{
	return sqlite3_value_type(v) == SQLITE_NULL ? HISTORY_UNKNOWN : sqlite3_value_int64(v);
}

static void read_row(sqlite3_stmt *st, struct history_row *w)
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
		read_row(st, &rows[n++]);
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
	static const char *const from_key[_HISTORY_RESOLUTION_MAX] = { "data_from_raw", "data_from_minute",
									"data_from_hour" };
	static const char *const rolled_key[_HISTORY_RESOLUTION_MAX] = { NULL, "rolled_minute", "rolled_hour" };
	uint64_t from[_HISTORY_RESOLUTION_MAX], rolled[_HISTORY_RESOLUTION_MAX] = { UINT64_MAX };
	for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
		int64_t v;
		int r = history_meta_get(s, from_key[res], &v, ret_error);
		if (r < 0)
			return r;
		from[res] = (uint64_t)MAX(v, 0);
		if (rolled_key[res]) {
			r = history_meta_get(s, rolled_key[res], &v, ret_error);
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
			 * data: ~5 ms a year, minutes for until_us = 2^62 (issue
			 * 27); the pieces are the same (consecutive points pieces
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

void history_store_set_stop(struct history_store *s, int (*stop)(void *userdata), void *userdata)
{
	sqlite3_progress_handler(s->db, stop ? HISTORY_PROGRESS_STEPS : 0, stop, userdata);
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

/* What the usage of one life needs to know of it besides its rows. */
struct life_ref {
	uint64_t first_seen_us;
	bool from_zero;                    /* its counters count from 0 at its first point */
	const struct history_values *base; /* a life found at start: its counters then; NULL: none kept */
	uint64_t removed_us;               /* 0: not removed */
	int64_t final_cpu_bound;           /* its final point's CPU bound (history_store_removed()) */
	uint64_t born_after_us;            /* found at start: created after this (0: not known) */
};

/* What one life used over [a, b), read in pieces. */
struct life_eval {
	struct history_acc acc;
	int64_t cpu, cpu_bound, io_read, io_read_bound, io_write, io_write_bound;
	int64_t peak; /* the kernel's peak at the life's last value in the window */
};

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
			  size_t offset, const struct life_ref *lr, int64_t *value, int64_t *bound)
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

static void eval_life_data(const struct history_piece *pieces, size_t n_pieces, const struct history_life_data *d,
			   const struct history_life_data *edges, const struct history_run *runs, size_t n_runs,
			   const struct life_ref *lr, struct life_eval *ret);

/* edge_res NULL: the counters' values at the window's ends from the pieces;
 * else from the rows around each end at edge_res[0] and [1] (history_plan()). */
static int eval_life(struct history_store *s, const struct history_piece *pieces, size_t n_pieces,
		     const enum history_resolution *edge_res, const struct history_run *runs, size_t n_runs,
		     int64_t life, const struct life_ref *lr, struct life_eval *ret, char **ret_error)
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
	eval_life_data(pieces, n_pieces, d, edge_res ? edges : NULL, runs, n_runs, lr, ret);
out:
	for (size_t i = 0; i < n_pieces; i++)
		history_life_data_clear(&d[i]);
	for (int k = 0; k < 2; k++)
		history_life_data_clear(&edges[k]);
	return r;
}

/* The same, from the pieces' rows already read (d[i] for pieces[i]). */
static void eval_life_data(const struct history_piece *pieces, size_t n_pieces, const struct history_life_data *d,
			   const struct history_life_data *edges, const struct history_run *runs, size_t n_runs,
			   const struct life_ref *lr, struct life_eval *ret)
{
	const uint64_t removed_us = lr->removed_us;
	*ret = (struct life_eval){ .acc = HISTORY_ACC_INIT, .peak = HISTORY_UNKNOWN };
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
	struct life_eval e;
	const struct life_ref lr = { .first_seen_us = since_us, .from_zero = true, .removed_us = removed_us };
	int r = eval_life(s, pieces, (size_t)n, NULL, runs, (size_t)n_runs, life, &lr, &e, ret_error);
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

static void add_total(int64_t *sum, int64_t *sum_bound, int64_t v, int64_t b)
{
	if (v == HISTORY_UNKNOWN)
		return;
	if (*sum == HISTORY_UNKNOWN)
		*sum = 0;
	*sum += v;
	if (sum_bound)
		*sum_bound += b;
}

void history_usage_clear(struct history_usage *u)
{
	free(u->path);
	u->path = NULL;
}

void history_usage_array_free(struct history_usage *u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		history_usage_clear(&u[i]);
	free(u);
}

/* Does `path` match prefix `p` (itself or below, at a component boundary)
 * at most `depth` levels below (-1: any)? */
static bool path_matches(const char *path, const char *p, int depth)
{
	size_t lp = strlen(p);
	while (lp > 1 && p[lp - 1] == '/')
		lp--;
	const char *rest;
	if (lp == 1 && p[0] == '/')
		rest = path + 1;
	else {
		if (strncmp(path, p, lp) != 0 || (path[lp] != '\0' && path[lp] != '/'))
			return false;
		rest = path[lp] == '/' ? path + lp + 1 : path + lp;
	}
	if (depth < 0)
		return true;
	int levels = *rest ? 1 : 0;
	for (const char *c = rest; *c; c++)
		levels += *c == '/';
	return levels <= depth;
}

/* Whether the store has a life at or under `prefix` (any time): 1, 0 or a
 * negative errno. */
static int prefix_known(struct history_store *s, const char *prefix, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	/* under: the paths between "P/" and "P0" ('0' follows '/') */
	int r = prepare(s, "SELECT 1 FROM lives WHERE path = ?1 OR (path > ?1 || '/' AND path < ?1 || '0') LIMIT 1",
			&st, ret_error);
	if (r < 0)
		return r;
	size_t len = strlen(prefix);
	while (len > 1 && prefix[len - 1] == '/')
		len--;
	sqlite3_bind_text(st, 1, prefix, (int)len, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	return history_sqlite_error(s->db, rc, "usage", ret_error);
}

/* Levels of `path` below the root: "/" 0, "/a" 1, "/a/b" 2. */
static int path_level(const char *path)
{
	int levels = 0;
	for (const char *c = path; *c; c++)
		levels += *c == '/' && c[1] != '\0';
	return levels;
}

/* The row of out[0..n) (sorted by path) whose path is the first `len` bytes of
 * `path`, or NULL. */
static struct history_usage *find_group(struct history_usage *out, size_t n, const char *path, size_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(out[mid].path, path, len);
		if (c == 0 && out[mid].path[len] != '\0')
			c = 1; /* longer: after the prefix itself */
		if (c == 0)
			return &out[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Count `path`, below `level`, in the subtree_paths of its ancestor at `level`
 * (when that one has a row). */
static void count_in_group(struct history_usage *out, size_t n, const char *path, int level)
{
	size_t len = 0; /* up to the (level + 1)-th '/' */
	for (int seen = 0; path[len]; len++)
		if (path[len] == '/' && ++seen == level + 1)
			break;
	struct history_usage *g = find_group(out, n, path, len);
	if (g)
		g->subtree_paths++;
}

/* A CPU total is at most cpus x the window (every CPU busy for all of it).
 * The points allow [value - bound, value + bound], which around a gap or a
 * stall (an end held at the value before it, its bound all the gap's CPU)
 * can reach far past that: the answer is what both allow, the value kept
 * where it lies inside, else the middle of what is left. Points that
 * contradict the limit (the CPUs were more when they were written) win. */
static void clamp_cpu(struct history_usage *u, uint64_t window_us, unsigned cpus)
{
	if (!cpus || u->cpu_usec == HISTORY_UNKNOWN || window_us > (uint64_t)INT64_MAX / cpus)
		return;
	const int64_t cap = (int64_t)(window_us * cpus);
	const int64_t lo = MAX(u->cpu_usec - u->cpu_usec_bound, (int64_t)0);
	const int64_t hi = MIN(u->cpu_usec + u->cpu_usec_bound, cap);
	if (lo > hi || u->cpu_usec + u->cpu_usec_bound <= cap)
		return;
	if (u->cpu_usec > hi)
		u->cpu_usec = lo + (hi - lo) / 2;
	u->cpu_usec_bound = MAX(u->cpu_usec - lo, hi - u->cpu_usec);
}

int history_store_usage(struct history_store *s, const struct history_usage_query *q, struct history_usage **ret,
			char **ret_error)
{
	if (q->since_us >= q->until_us)
		return -EINVAL;
	struct history_piece pieces[HISTORY_MAX_PIECES];
	enum history_resolution res;
	/* Whole buckets at the ends too, the counters' values there read apart
	 * from the finest data (two seeks a busy life instead of up to an
	 * hour of minute rollups at each end: history_plan()). */
	enum history_resolution edge_res[2];
	int n_pieces = history_plan(s, q->since_us, q->until_us, pieces, &res, edge_res, ret_error);
	if (n_pieces < 0)
		return n_pieces;
	int r;
	_cleanup_free_ struct history_run *runs = NULL;
	int n_runs = history_load_runs(s, &runs, ret_error);
	if (n_runs < 0)
		return n_runs;
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	r = prepare(s,
		    "SELECT id, path, first_seen_us, coalesce(removed_us, 0), from_zero, base_cpu_usec, base_io_read_bytes,"
		    " base_io_write_bytes, coalesce(final_cpu_usec_bound, 0), coalesce(born_after_us, 0) FROM lives"
		    " WHERE first_seen_us < ?1 AND (removed_us IS NULL OR removed_us >= ?2)"
		    " AND (?3 OR removed_us IS NULL OR removed_us >= ?1) ORDER BY path, first_seen_us",
		    &st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, (int64_t)q->until_us);
	sqlite3_bind_int64(st, 2, (int64_t)q->since_us);
	sqlite3_bind_int(st, 3, q->include_removed);
	struct history_usage *out = NULL;
	size_t n = 0, cap = 0;
	int rc;
	const char *prefix = q->prefix ? q->prefix : "/";
	_cleanup_free_ char *prev_path = NULL; /* group_level: the last path counted */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *path = (const char *)sqlite3_column_text(st, 1);
		if (!path_matches(path, prefix, q->depth))
			continue;
		if (q->group_level > 0 && path_level(path) != q->group_level) {
			/* lives come sorted by path: a path's first counts */
			if (path_level(path) > q->group_level && (!prev_path || strcmp(prev_path, path) != 0)) {
				count_in_group(out, n, path, q->group_level);
				free(prev_path);
				prev_path = strdup(path);
				if (!prev_path) {
					r = -ENOMEM;
					goto fail;
				}
			}
			continue;
		}
		int64_t life = sqlite3_column_int64(st, 0);
		uint64_t first = (uint64_t)sqlite3_column_int64(st, 2), removed = (uint64_t)sqlite3_column_int64(st, 3);
		bool from_zero = sqlite3_column_int(st, 4) != 0;
		/* where a life found at start began: its counters then (NULL in
		 * stores of schema 2: read from its first point) */
		const struct history_values base = { .cpu_usec = history_column_value(st, 5),
						     .io_read_bytes = history_column_value(st, 6),
						     .io_write_bytes = history_column_value(st, 7) };
		const struct life_ref lr = { .first_seen_us = first, .from_zero = from_zero, .base = &base,
					     .removed_us = removed, .final_cpu_bound = sqlite3_column_int64(st, 8),
					     .born_after_us = (uint64_t)sqlite3_column_int64(st, 9) };
		struct history_usage *u = n > 0 && strcmp(out[n - 1].path, path) == 0 ? &out[n - 1] : NULL;
		if (!u) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				struct history_usage *m = reallocarray(out, cap, sizeof(*out));
				if (!m) {
					r = -ENOMEM;
					goto fail;
				}
				out = m;
			}
			u = &out[n];
			*u = (struct history_usage){
				.path = strdup(path),
				.first_seen_us = first,
				.cpu_usec = HISTORY_UNKNOWN,
				.memory_max_bytes = HISTORY_UNKNOWN,
				.memory_peak_bytes = HISTORY_UNKNOWN,
				.io_read_bytes = HISTORY_UNKNOWN,
				.io_write_bytes = HISTORY_UNKNOWN,
				.resolution = res,
			};
			if (!u->path) {
				r = -ENOMEM;
				goto fail;
			}
			n++;
		}
		/* A life whose last point is at or before the window's start (most:
		 * idle) held that point's values all along: that point alone
		 * answers, exactly (retention keeps each life's last point), read
		 * by the one seek that finds it. */
		sqlite3_stmt *lp;
		r = history_stmt(s, HISTORY_STMT_LAST_POINT,
				 "SELECT " RAW_COLUMNS " ORDER BY t_us DESC LIMIT 1", &lp, ret_error);
		if (r < 0)
			goto fail;
		sqlite3_bind_int64(lp, 1, life);
		rc = sqlite3_step(lp);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			r = history_sqlite_error(s->db, rc, "usage", ret_error);
			goto fail;
		}
		struct history_row last;
		bool idle = rc == SQLITE_ROW && (uint64_t)sqlite3_column_int64(lp, 0) <= q->since_us;
		if (idle)
			read_row(lp, &last);
		sqlite3_reset(lp);
		struct life_eval e;
		if (idle) {
			const struct history_piece whole = { HISTORY_RAW, q->since_us, q->until_us };
			uint64_t tail = history_tail_end(&last, 1, 0, runs, (size_t)n_runs, removed);
			const struct history_life_data d = { .rows = &last, .tail = &tail, .n = 1 };
			eval_life_data(&whole, 1, &d, NULL, runs, (size_t)n_runs, &lr, &e);
		} else {
			r = eval_life(s, pieces, (size_t)n_pieces, edge_res, runs, (size_t)n_runs, life, &lr, &e, ret_error);
			if (r < 0)
				goto fail;
		}
		const struct history_acc x = e.acc;
		int64_t io_b = 0;
		add_total(&u->cpu_usec, &u->cpu_usec_bound, e.cpu, e.cpu_bound);
		add_total(&u->io_read_bytes, &io_b, e.io_read, e.io_read_bound);
		add_total(&u->io_write_bytes, &io_b, e.io_write, e.io_write_bound);
		/* The kernel's peak since creation: only for lives created in the window. */
		if (first >= q->since_us && (from_zero || lr.born_after_us >= q->since_us) && e.peak != HISTORY_UNKNOWN)
			u->memory_peak_bytes = MAX(u->memory_peak_bytes, e.peak);
		u->lives++;
		u->removed_us = removed;
		u->recorded_us += x.covered_us;
		u->memory_byte_seconds += x.integral / 1e6;
		u->memory_byte_seconds_bound += x.bound / 1e6;
		if (x.max != INT64_MIN)
			u->memory_max_bytes = MAX(u->memory_max_bytes, x.max);
	}
	if (rc != SQLITE_DONE) {
		r = history_sqlite_error(s->db, rc, "usage", ret_error);
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		clamp_cpu(&out[i], q->until_us - q->since_us, q->cpus);
	if (n == 0 && strcmp(prefix, "/") != 0) {
		/* none in the window (or at the level): a prefix the store has
		 * never seen is an error (a typo must not look like an idle
		 * subtree) */
		r = prefix_known(s, prefix, ret_error);
		if (r <= 0) {
			r = r < 0 ? r : -ENOENT;
			goto fail;
		}
	}
	*ret = out;
	return (int)n;
fail:
	history_usage_array_free(out, n);
	return r;
}

int history_store_gaps(struct history_store *s, uint64_t since_us, uint64_t until_us, struct history_gap **ret,
		       char **ret_error)
{
	_cleanup_free_ struct history_run *runs = NULL;
	int n_runs = history_load_runs(s, &runs, ret_error);
	if (n_runs < 0)
		return n_runs;
	_cleanup_free_ struct history_gap *gaps = calloc((size_t)n_runs + 1, sizeof(*gaps));
	if (!gaps)
		return -ENOMEM;
	size_t n = 0;
	uint64_t t = since_us; /* known up to here */
	for (int i = 0; i < n_runs && t < until_us; i++) {
		if (runs[i].last_us < t)
			continue;
		if (runs[i].started_us > t)
			gaps[n++] = (struct history_gap){ t, MIN(runs[i].started_us, until_us) };
		t = MAX(t, runs[i].last_us);
	}
	if (t < until_us)
		gaps[n++] = (struct history_gap){ t, until_us };
	*ret = TAKE_PTR(gaps);
	return (int)n;
}

/* One life's piece of a series: its rows into the steps they overlap. */
static int series_piece(struct history_store *s, const struct history_piece *piece, int64_t life, uint64_t removed_us,
			const struct history_run *runs, size_t n_runs, uint64_t since_us, uint64_t until_us,
			uint64_t step_us, struct history_acc *accs, double *cpu, double *ior, double *iow,
			unsigned char *known, char **ret_error)
{
	struct history_life_data d;
	int r = history_life_data_load(s, piece->res, life, piece->a, piece->b, removed_us, runs, n_runs, &d, ret_error);
	if (r < 0)
		return r;
	/* Which counters this life has values of: in the steps its rows span,
	 * a rate of 0 is then true; else the rate is unknown (a cgroup without
	 * I/O accounting has no I/O rate, not 0 B/s). */
	unsigned char mask = 0;
	for (size_t k = 0; k < d.n; k++)
		mask |= (d.rows[k].v.cpu_usec != HISTORY_UNKNOWN ? 1 : 0) |
			(d.rows[k].v.io_read_bytes != HISTORY_UNKNOWN ? 2 : 0) |
			(d.rows[k].v.io_write_bytes != HISTORY_UNKNOWN ? 4 : 0);
	if (mask && d.n > 0) {
		uint64_t lo_t = MAX(MAX(d.rows[0].t0_us, piece->a), since_us);
		uint64_t hi_t = MIN(MIN(MAX(d.tail[d.n - 1], d.rows[d.n - 1].t1_us + 1), piece->b), until_us);
		for (uint64_t t = lo_t; t < hi_t; t = since_us + ((t - since_us) / step_us + 1) * step_us)
			known[(t - since_us) / step_us] |= mask;
	}
	size_t lo = 0;
	for (uint64_t i = (piece->a - since_us) / step_us; i * step_us + since_us < piece->b; i++) {
		uint64_t step_a = since_us + i * step_us, step_b = MIN(step_a + step_us, until_us);
		uint64_t a = MAX(step_a, piece->a), b = MIN(step_b, piece->b);
		/* Rows wholly before the step (bucket and tail) stay behind. */
		while (lo < d.n && MAX(d.rows[lo].t1_us, d.tail[lo]) <= a)
			lo++;
		size_t hi = lo;
		while (hi < d.n && d.rows[hi].t0_us < b)
			hi++;
		/* The next row: its change began inside this step. */
		hi = MIN(hi + 1, d.n);
		history_accumulate(d.rows, d.tail, lo, hi, runs, n_runs, a, b, &accs[i]);
	}
	/* Counters: each increase between two rows of one run, spread evenly
	 * over the time it can have happened in (an increase across a gap has
	 * no place in time). That is from the earlier row to the later one,
	 * and for two points of one run only the last step of the run before
	 * the later point (every recording before it saw the earlier value:
	 * history-store.h). Put at the later row alone, an increase made over
	 * a 10 s interval showed in a 1 s step as ten times the rate. */
	for (size_t k = 1; k < d.n; k++) {
		const struct history_row *p = &d.rows[k - 1], *w = &d.rows[k];
		/* A pair belongs to the piece of its later row; the last piece
		 * also takes the pair whose later row lies past the window (the
		 * first row after it is loaded): its increase began inside, and
		 * the window's last steps would show a rate of 0 without it. */
		if (p->run != w->run || w->t_last_us < piece->a || (w->t_last_us >= piece->b && piece->b < until_us))
			continue;
		uint64_t from = p->t_last_us, to = w->t_last_us;
		if (p->t1_us == p->t0_us && w->t1_us == w->t0_us) {
			const struct history_run *run = history_find_run(runs, n_runs, w->run);
			if (run && run->max_step_us != UINT64_MAX && w->t0_us > run->max_step_us)
				from = MAX(from, w->t0_us - run->max_step_us);
		}
		double inc[3] = { NAN, NAN, NAN };
		if (w->v.cpu_usec != HISTORY_UNKNOWN && p->v.cpu_usec != HISTORY_UNKNOWN)
			inc[0] = (double)(w->v.cpu_usec - p->v.cpu_usec);
		if (w->v.io_read_bytes != HISTORY_UNKNOWN && p->v.io_read_bytes != HISTORY_UNKNOWN)
			inc[1] = (double)(w->v.io_read_bytes - p->v.io_read_bytes);
		if (w->v.io_write_bytes != HISTORY_UNKNOWN && p->v.io_write_bytes != HISTORY_UNKNOWN)
			inc[2] = (double)(w->v.io_write_bytes - p->v.io_write_bytes);
		double *out[3] = { cpu, ior, iow };
		if (to <= from) { /* no span: all at the later row */
			if (to >= until_us)
				continue;
			uint64_t i = (to - since_us) / step_us;
			for (int q = 0; q < 3; q++)
				if (!isnan(inc[q]))
					out[q][i] += inc[q];
			continue;
		}
		uint64_t lo_t = MAX(from, since_us), hi_t = MIN(to, until_us);
		for (uint64_t t = lo_t; t < hi_t;) {
			uint64_t i = (t - since_us) / step_us;
			uint64_t end = MIN(since_us + (i + 1) * step_us, hi_t);
			double share = (double)(end - t) / (double)(to - from);
			for (int q = 0; q < 3; q++)
				if (!isnan(inc[q]))
					out[q][i] += inc[q] * share;
			t = end;
		}
	}
	history_life_data_clear(&d);
	return 0;
}

/* A series' plan: at each time the finest data kept there (points from
 * where raw data begins, minute rollups before that, hour rollups before
 * those). Not history_plan()'s fewest rows: a series cuts the window into
 * steps that need not fall on bucket boundaries, and a rollup read for a
 * step shorter than its bucket can only spread the bucket over it (a trial
 * saw 3.12 cores on a 2-CPU host, and memory in steps before acctd ran). */
static int plan_finest(struct history_store *s, uint64_t since_us, uint64_t until_us, struct history_piece *ret,
		       enum history_resolution *coarsest, char **ret_error)
{
	static const char *const from_key[_HISTORY_RESOLUTION_MAX] = { "data_from_raw", "data_from_minute",
									"data_from_hour" };
	uint64_t from[_HISTORY_RESOLUTION_MAX];
	for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
		int64_t v;
		int r = history_meta_get(s, from_key[res], &v, ret_error);
		if (r < 0)
			return r;
		from[res] = (uint64_t)MAX(v, 0);
	}
	/* coarsest first: hours before from[MINUTE], minutes before from[RAW],
	 * points from there on */
	size_t n = 0;
	*coarsest = HISTORY_RAW;
	for (int res = HISTORY_HOUR; res >= HISTORY_RAW; res--) {
		uint64_t a = MAX(since_us, res == HISTORY_HOUR ? 0 : from[res]);
		uint64_t b = res == HISTORY_RAW ? until_us : MIN(until_us, from[res - 1]);
		if (a >= b)
			continue;
		ret[n++] = (struct history_piece){ (enum history_resolution)res, a, b };
		if ((enum history_resolution)res > *coarsest)
			*coarsest = (enum history_resolution)res;
	}
	return (int)n;
}

int history_store_series(struct history_store *s, const char *path, uint64_t since_us, uint64_t until_us,
			 uint64_t step_us, struct history_step **ret, char **ret_error)
{
	if (since_us >= until_us || step_us == 0)
		return -EINVAL;
	uint64_t n_steps = (until_us - since_us + step_us - 1) / step_us;
	if (n_steps > 100000)
		return -E2BIG;
	struct history_piece pieces[HISTORY_MAX_PIECES];
	enum history_resolution coarsest;
	int n_pieces = plan_finest(s, since_us, until_us, pieces, &coarsest, ret_error);
	if (n_pieces < 0)
		return n_pieces;
	int r;
	_cleanup_free_ struct history_run *runs = NULL;
	int n_runs = history_load_runs(s, &runs, ret_error);
	if (n_runs < 0)
		return n_runs;
	_cleanup_free_ struct history_step *steps = calloc(n_steps, sizeof(*steps));
	_cleanup_free_ struct history_acc *accs = calloc(n_steps, sizeof(*accs));
	_cleanup_free_ double *cpu = calloc(n_steps, sizeof(double)), *ior = calloc(n_steps, sizeof(double)),
			      *iow = calloc(n_steps, sizeof(double));
	_cleanup_free_ unsigned char *known = calloc(n_steps, 1);
	if (!steps || !accs || !cpu || !ior || !iow || !known)
		return -ENOMEM;
	for (uint64_t i = 0; i < n_steps; i++)
		accs[i] = HISTORY_ACC_INIT;

	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	r = prepare(s,
		    "SELECT id, coalesce(removed_us, 0) FROM lives WHERE path = ?1 AND first_seen_us < ?2"
		    " AND (removed_us IS NULL OR removed_us >= ?3) ORDER BY first_seen_us",
		    &st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)until_us);
	sqlite3_bind_int64(st, 3, (int64_t)since_us);
	int rc;
	size_t n_lives = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		n_lives++;
		for (int p = 0; p < n_pieces; p++) {
			r = series_piece(s, &pieces[p], sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
					 runs, (size_t)n_runs, since_us, until_us, step_us, accs, cpu, ior, iow, known,
					 ret_error);
			if (r < 0)
				return r;
		}
	}
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, "series", ret_error);
	if (n_lives == 0) {
		/* none in the window: a path the store has never seen is an
		 * error (a typo must not look like an idle cgroup) */
		_cleanup_finalize_ sqlite3_stmt *any = NULL;
		r = prepare(s, "SELECT 1 FROM lives WHERE path = ?1 LIMIT 1", &any, ret_error);
		if (r < 0)
			return r;
		sqlite3_bind_text(any, 1, path, -1, SQLITE_STATIC);
		rc = sqlite3_step(any);
		if (rc == SQLITE_DONE)
			return -ENOENT;
		if (rc != SQLITE_ROW)
			return history_sqlite_error(s->db, rc, "series", ret_error);
	}
	for (uint64_t i = 0; i < n_steps; i++) {
		struct history_step *w = &steps[i];
		const struct history_acc *x = &accs[i];
		w->t_us = since_us + i * step_us;
		w->covered_us = x->covered_us;
		w->memory_min_bytes = w->memory_max_bytes = w->tasks_max = HISTORY_UNKNOWN;
		if (x->covered_us == 0) {
			w->cpu_cores = w->memory_mean_bytes = w->io_read_bytes_per_s = w->io_write_bytes_per_s = NAN;
			continue;
		}
		double secs = (double)x->covered_us / 1e6;
		w->cpu_cores = known[i] & 1 ? cpu[i] / (double)x->covered_us : NAN;
		/* never read (not in a memory hierarchy): unknown, not 0 */
		w->memory_mean_bytes = x->max != INT64_MIN ? x->integral / (double)x->covered_us : NAN;
		if (x->min != INT64_MAX)
			w->memory_min_bytes = x->min;
		if (x->max != INT64_MIN)
			w->memory_max_bytes = x->max;
		w->io_read_bytes_per_s = known[i] & 2 ? ior[i] / secs : NAN;
		w->io_write_bytes_per_s = known[i] & 4 ? iow[i] / secs : NAN;
		w->tasks_max = x->tasks_max;
	}
	*ret = TAKE_PTR(steps);
	return (int)n_steps;
}
