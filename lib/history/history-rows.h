/* history-rows.h - one life's data read back as *rows*, and the walk over
 * them that usage, series, the rollups and a removal's accounting record
 * share. Calls only history-sql.h. Internal to lib/history.
 *
 * A row is a raw point or a rollup bucket seen the same way: a bucket
 * [t0_us, t1_us) summarised (covered time, memory integral and bound,
 * minimum and maximum; nothing for a point, whose t1_us == t0_us), then the
 * values of its last point (at t_last_us) that hold after the bucket until
 * the life's next row, the end of the run of that point, or the life's
 * removal, whichever comes first (the row's *tail*). Usage, series and the
 * rollups themselves are computed by one walk over rows, whatever their
 * resolution. */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "history-sql.h"
#include "history-store.h"

struct history_run {
	int64_t id;
	uint64_t started_us, last_us, interval_us;
	uint64_t max_step_us; /* the longest time between two of its recordings
			       * (UINT64_MAX: unknown, a run of schema 2 or before) */
};

struct history_row {
	uint64_t t0_us, t1_us, t_last_us;
	int64_t run;
	uint64_t covered_us;
	double memory_integral;   /* byte-microseconds over the bucket's covered time */
	double memory_bound;      /* its bound, same unit */
	int64_t memory_min, memory_max; /* over the bucket; INT64_MAX/INT64_MIN: none */
	int64_t tasks_max;
	struct history_values v;  /* of the last point, held in the tail */
};

/* Every run, sorted by start. Returns the count or a negative errno. */
int history_load_runs(struct history_store *s, struct history_run **ret, char **ret_error);

/* The run with `id` in `runs` (sorted by id as by start), or NULL. */
const struct history_run *history_find_run(const struct history_run *runs, size_t n, int64_t id);

/* The rows of life `life` at resolution `res` needed for the window
 * [since_us, until_us): the two before since_us (the tail and edge value of
 * the last one reach into the window), those inside, and the first one at or
 * after until_us (the edge's upper value). Sorted by t0. Returns the count. */
int history_life_rows(struct history_store *s, enum history_resolution res, int64_t life, uint64_t since_us,
		      uint64_t until_us, struct history_row **ret, char **ret_error);

/* Where the tail of rows[k] ends: the next row's start, the end of its run,
 * the life's removal (0: none). */
uint64_t history_tail_end(const struct history_row *rows, size_t n, size_t k, const struct history_run *runs,
			  size_t n_runs, uint64_t removed_us);

/* A window read in pieces, each [a, b) at resolution res. */
struct history_piece {
	enum history_resolution res;
	uint64_t a, b;
};
#define HISTORY_MAX_PIECES 8
/* The pieces of [since_us, until_us) (at most HISTORY_MAX_PIECES). Returns
 * their count; *coarsest the coarsest resolution a part of the window had to
 * be read at because the finer data is gone (whole buckets read from rollups
 * while the finer data is there do not count: they give the same answer).
 * edges NULL: the whole buckets at the window's two ends come from the finest
 * data there (the counters' values at since and until are read from the
 * pieces); else they may be coarse, and edges[0] and edges[1] are the finest
 * resolutions holding since_us and until_us - 1, which the caller reads the
 * counters' values at the ends from (history_life_data_load() of [t, t)). */
int history_plan(struct history_store *s, uint64_t since_us, uint64_t until_us, struct history_piece *ret,
		 enum history_resolution *coarsest, enum history_resolution edges[2], char **ret_error);

/* Memory integral of one life over [since, until) (for the accounting
 * record): value, bound, recorded time, largest value. */
struct history_life_totals {
	double memory_integral, memory_bound; /* byte-microseconds */
	uint64_t recorded_us;
	int64_t memory_max;
};
int history_life_totals(struct history_store *s, int64_t life, uint64_t since_us, uint64_t until_us,
			uint64_t removed_us, struct history_life_totals *ret, char **ret_error);

/* What rows lo..hi-1 (their tails ending at tail[k]) say about [a, b):
 * covered time, memory's integral and its bound (byte-microseconds), the
 * smallest and largest memory value, the most tasks. Added to *x. */
struct history_acc {
	uint64_t covered_us;
	double integral, bound;
	int64_t min, max, tasks_max; /* INT64_MAX, INT64_MIN, HISTORY_UNKNOWN: none */
};
#define HISTORY_ACC_INIT ((struct history_acc){ .min = INT64_MAX, .max = INT64_MIN, .tasks_max = HISTORY_UNKNOWN })

/* One life's rows for a window (history_life_rows()) with the ends of their tails. */
struct history_life_data {
	struct history_row *rows;
	uint64_t *tail;
	size_t n;
};
int history_life_data_load(struct history_store *s, enum history_resolution res, int64_t life, uint64_t since_us,
			   uint64_t until_us, uint64_t removed_us, const struct history_run *runs, size_t n_runs,
			   struct history_life_data *d, char **ret_error);
void history_life_data_clear(struct history_life_data *d);

void history_accumulate(const struct history_row *rows, const uint64_t *tail, size_t lo, size_t hi,
			const struct history_run *runs, size_t n_runs, uint64_t a, uint64_t b, struct history_acc *x);

/* The columns a row is read from (history_read_row()), for the points of
 * life ?1: what a statement of the points selects before its own conditions
 * and order. */
#define HISTORY_RAW_COLUMNS                                                                            \
	"t_us, t_us, t_us, run, 0, 0.0, 0.0, NULL, NULL, tasks, cpu_usec, memory_bytes, memory_peak_bytes," \
	" io_read_bytes, io_write_bytes, tasks FROM points WHERE life = ?1"

/* The row `st` is on (HISTORY_RAW_COLUMNS, or the rollups' same shape) into *w. */
void history_read_row(sqlite3_stmt *st, struct history_row *w);

/* What the usage of one life needs to know of it besides its rows. */
struct history_life_ref {
	uint64_t first_seen_us;
	bool from_zero;                    /* its counters count from 0 at its first point */
	const struct history_values *base; /* a life found at start: its counters then; NULL: none kept */
	uint64_t removed_us;               /* 0: not removed */
	int64_t final_cpu_bound;           /* its final point's CPU bound (history_store_removed()) */
	uint64_t born_after_us;            /* found at start: created after this (0: not known) */
};

/* What one life used over [a, b), read in pieces. */
struct history_life_eval {
	struct history_acc acc;
	int64_t cpu, cpu_bound, io_read, io_read_bound, io_write, io_write_bound;
	int64_t peak; /* the kernel's peak at the life's last value in the window */
};

/* What life `life` used over the pieces (history_plan()), its rows read here.
 * edge_res NULL: the counters' values at the window's ends from the pieces;
 * else from the rows around each end at edge_res[0] and [1] (history_plan()).
 * Returns 0 or a negative errno. */
int history_eval_life(struct history_store *s, const struct history_piece *pieces, size_t n_pieces,
		      const enum history_resolution *edge_res, const struct history_run *runs, size_t n_runs, int64_t life,
		      const struct history_life_ref *lr, struct history_life_eval *ret, char **ret_error);

/* The same, from the pieces' rows already read (d[i] for pieces[i]; edges
 * NULL, or the rows around the window's two ends). */
void history_eval_life_data(const struct history_piece *pieces, size_t n_pieces, const struct history_life_data *d,
			    const struct history_life_data *edges, const struct history_run *runs, size_t n_runs,
			    const struct history_life_ref *lr, struct history_life_eval *ret);
