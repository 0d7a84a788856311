/* history-sql.h - the store's state and what every file of lib/history does
 * with SQLite: errors, cached and one-shot statements, transactions, the
 * meta table. The bottom of lib/history: history-sql.c calls nothing else in
 * it, and every other file may call it. Internal to lib/history. */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/util.h"
#include "history-index.h"
#include "history-store.h"

#define HISTORY_APPLICATION_ID 0x61636374 /* "acct" */
#define HISTORY_SCHEMA_VERSION 5

/* Bucket lengths per resolution (0: a point). */
extern const uint64_t history_bucket_us[_HISTORY_RESOLUTION_MAX];

/* Watermarks in meta, per resolution: data_from_R (no data of R before it:
 * retention and the size cap moved it) and rolled_R (R's buckets are made up
 * to here, for minute and hour; NULL for raw). */
extern const char *const history_data_from_key[_HISTORY_RESOLUTION_MAX];
extern const char *const history_rolled_key[_HISTORY_RESOLUTION_MAX];

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

/* A one-shot statement, finalized when it goes out of scope. */
static inline void history_finalizep(sqlite3_stmt **st)
{
	if (*st)
		sqlite3_finalize(*st);
}
#define _cleanup_finalize_ _cleanup_(history_finalizep)

/* *ret_error (when not NULL) replaced by the formatted message (NULL when it
 * cannot be made). Returns 0, so that a caller can return its own errno. */
int history_set_error(char **ret_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A negative errno for SQLite's result `rc` on `db` (its system errno where it
 * has one: ENOSPC, EROFS, EACCES), with "WHAT: SQLite's message" in *ret_error. */
int history_sqlite_error(sqlite3 *db, int rc, const char *what, char **ret_error);

/* Bind/read a value that may be HISTORY_UNKNOWN (stored as NULL). */
int history_bind_value(sqlite3_stmt *st, int i, int64_t v);
int64_t history_column_value(sqlite3_stmt *st, int i);

/* Run `sql` (no parameters, no rows wanted); `what` names it in the error. */
int history_exec(struct history_store *s, const char *sql, const char *what, char **ret_error);

/* Undo a failed transaction (SQLite may have rolled it back already). */
void history_rollback(struct history_store *s);

/* The cached statement `id` (prepared from `sql` the first time), reset and
 * without bindings. Owned by the store: never finalized by the caller. */
int history_stmt(struct history_store *s, enum history_stmt id, const char *sql, sqlite3_stmt **ret,
		 char **ret_error);

/* A one-shot statement in *ret, the caller's to finalize (_cleanup_finalize_). */
int history_prepare(struct history_store *s, const char *sql, sqlite3_stmt **ret, char **ret_error);

/* One integer from `sql` (no parameters); 0 when it returns no row. */
int history_query_int(struct history_store *s, const char *sql, int64_t *ret, char **ret_error);

/* One integer of the meta table (0 when absent); set one. */
int history_meta_get(struct history_store *s, const char *key, int64_t *ret, char **ret_error);
int history_meta_set(struct history_store *s, const char *key, int64_t v, char **ret_error);
