/* history-internal.h - what history-store.c (the file, recording, upkeep)
 * and history-query.c (usage, gaps, series) share: the store's state, the
 * SQLite error mapping, the runs, and one life's data read back as *rows*.
 * Internal to lib/history.
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
#include <stdint.h>

#include "history-index.h"
#include "history-store.h"

#define HISTORY_APPLICATION_ID 0x61636374 /* "acct" */
#define HISTORY_SCHEMA_VERSION 4

/* Bucket lengths per resolution (0: a point). */
extern const uint64_t history_bucket_us[_HISTORY_RESOLUTION_MAX];

struct history_run {
	int64_t id;
	uint64_t started_us, last_us, interval_us;
	uint64_t max_step_us; /* the longest time between two of its recordings
			       * (UINT64_MAX: unknown, a run of schema 2 or before) */
};

/* Statements prepared once per store (the hot ones: per life, per point). */
enum history_stmt {
	HISTORY_STMT_ROWS_RAW,
	HISTORY_STMT_ROWS_ROLLUP,
	HISTORY_STMT_INSERT_POINT,
	HISTORY_STMT_INSERT_LIFE,
	HISTORY_STMT_UPDATE_RUN,
	HISTORY_STMT_INSERT_ROLLUP,
	HISTORY_STMT_META_GET,
	HISTORY_STMT_LAST_POINT,
	_HISTORY_STMT_MAX,
};

struct history_store {
	sqlite3 *db;
	sqlite3_stmt *stmt[_HISTORY_STMT_MAX];
	char *path;
	bool readonly;
	char boot_id[33];
	int64_t run;
	uint64_t started_us, last_us, interval_us;
	uint64_t run_last_us;     /* the run's last recording (runs.last_us), or its start */
	uint64_t recordings;      /* recordings made since open (a stall's new run goes on counting) */
	uint64_t prev_run_end_us; /* the last recording of this boot before this run */
	struct history_limits limits;
	struct history_index index;
	/* Lives removed in this run, for the rollups (which visit only the
	 * lives with points since their watermark: those in the index, these). */
	struct history_removed_life {
		int64_t id;
		uint64_t removed_us;
	} *removed;
	size_t n_removed;
	/* Rounds of history_plan()'s loop since the store was opened: the
	 * planning's cost, which tests hold to the data's extent, not the
	 * window's length. */
	uint64_t plan_steps;
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

/* The cached statement `id` (prepared from `sql` the first time), reset and
 * without bindings. Owned by the store: never finalized by the caller. */
int history_stmt(struct history_store *s, enum history_stmt id, const char *sql, sqlite3_stmt **ret,
		 char **ret_error);

/* A negative errno for SQLite's result `rc` on `db` (its system errno where it
 * has one: ENOSPC, EROFS, EACCES), with "WHAT: SQLite's message" in *ret_error. */
int history_sqlite_error(sqlite3 *db, int rc, const char *what, char **ret_error);

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

/* One integer of the meta table (0 when absent). */
int history_meta_get(struct history_store *s, const char *key, int64_t *ret, char **ret_error);

/* Bind/read a value that may be HISTORY_UNKNOWN (stored as NULL). */
int history_bind_value(sqlite3_stmt *st, int i, int64_t v);
int64_t history_column_value(sqlite3_stmt *st, int i);

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
