/* history-query.c - the queries (history-store.h "queries"): usage per
 * path over a window, the gaps between runs, and one path's series in
 * steps, all computed by the walk over a life's rows in history-rows.c, on
 * which the rollups are made too. Calls only history-rows.c and
 * history-sql.c; nothing of the store calls it. */
#include "history-store.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"
#include "history-rows.h"
#include "history-sql.h"

void history_store_set_stop(struct history_store *s, int (*stop)(void *userdata), void *userdata)
{
	sqlite3_progress_handler(s->db, stop ? HISTORY_PROGRESS_STEPS : 0, stop, userdata);
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
	int r = history_prepare(s, "SELECT 1 FROM lives WHERE path = ?1 OR (path > ?1 || '/' AND path < ?1 || '0') LIMIT 1",
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
	u->cpu_clipped = true;
}

void history_series_cap_cpu(struct history_step *steps, size_t n, unsigned cpus)
{
	if (!cpus)
		return;
	for (size_t i = 0; i < n; i++)
		if (!isnan(steps[i].cpu_cores) && steps[i].cpu_cores > (double)cpus) {
			steps[i].cpu_cores = (double)cpus;
			steps[i].cpu_clipped = true;
		}
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
	r = history_prepare(s,
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
		const struct history_life_ref lr = { .first_seen_us = first, .from_zero = from_zero, .base = &base,
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
				 "SELECT " HISTORY_RAW_COLUMNS " ORDER BY t_us DESC LIMIT 1", &lp, ret_error);
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
			history_read_row(lp, &last);
		sqlite3_reset(lp);
		struct history_life_eval e;
		if (idle) {
			const struct history_piece whole = { HISTORY_RAW, q->since_us, q->until_us };
			uint64_t tail = history_tail_end(&last, 1, 0, runs, (size_t)n_runs, removed);
			const struct history_life_data d = { .rows = &last, .tail = &tail, .n = 1 };
			history_eval_life_data(&whole, 1, &d, NULL, runs, (size_t)n_runs, &lr, &e);
		} else {
			r = history_eval_life(s, pieces, (size_t)n_pieces, edge_res, runs, (size_t)n_runs, life, &lr, &e, ret_error);
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
	uint64_t from[_HISTORY_RESOLUTION_MAX];
	for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
		int64_t v;
		int r = history_meta_get(s, history_data_from_key[res], &v, ret_error);
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
	r = history_prepare(s,
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
		r = history_prepare(s, "SELECT 1 FROM lives WHERE path = ?1 LIMIT 1", &any, ret_error);
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
