/* history-sql.c - what every file of the store does with SQLite
 * (history-sql.h): SQLite's errors as negative errnos with a message, the
 * statements prepared once per store, one-shot statements, transactions and
 * the meta table's watermarks. Calls nothing else in lib/history. */
#include "history-sql.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"

const uint64_t history_bucket_us[_HISTORY_RESOLUTION_MAX] = {
	[HISTORY_RAW] = 0,
	[HISTORY_MINUTE] = UINT64_C(60000000),
	[HISTORY_HOUR] = UINT64_C(3600000000),
};

int history_set_error(char **ret_error, const char *fmt, ...)
{
	if (ret_error) {
		va_list ap;
		va_start(ap, fmt);
		char *m = NULL;
		if (vasprintf(&m, fmt, ap) < 0)
			m = NULL;
		va_end(ap);
		free(*ret_error);
		*ret_error = m;
	}
	return 0;
}

int history_sqlite_error(sqlite3 *db, int rc, const char *what, char **ret_error)
{
	int sys = db ? sqlite3_system_errno(db) : 0;
	int r;
	switch (rc & 0xff) {
	case SQLITE_FULL:
		r = -ENOSPC;
		break;
	case SQLITE_READONLY:
		r = -EROFS;
		break;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		r = -EACCES;
		break;
	case SQLITE_NOMEM:
		r = -ENOMEM;
		break;
	case SQLITE_CANTOPEN:
		r = sys == EACCES || sys == EROFS || sys == ENOENT || sys == ENOSPC ? -sys : -EIO;
		break;
	default:
		/* I/O errors carry the system's reason (a full disk shows as a
		 * failed write); corruption and the rest are -EIO. */
		r = sys == ENOSPC || sys == EROFS || sys == EACCES || sys == EDQUOT ? -(sys == EDQUOT ? ENOSPC : sys)
										    : -EIO;
	}
	history_set_error(ret_error, "%s: %s%s%s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), sys ? ": " : "",
			  sys ? strerror(sys) : "");
	return r;
}

int history_bind_value(sqlite3_stmt *st, int i, int64_t v)
{
	return v == HISTORY_UNKNOWN ? sqlite3_bind_null(st, i) : sqlite3_bind_int64(st, i, v);
}

int64_t history_column_value(sqlite3_stmt *st, int i)
{
	/* One sqlite3_column_*() call (each takes the statement's API entry and
	 * exit: most of the cost of reading a column), then the value itself. */
	sqlite3_value *v = sqlite3_column_value(st, i);
	return sqlite3_value_type(v) == SQLITE_NULL ? HISTORY_UNKNOWN : sqlite3_value_int64(v);
}

int history_exec(struct history_store *s, const char *sql, const char *what, char **ret_error)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : history_sqlite_error(s->db, rc, what, ret_error);
}

void history_rollback(struct history_store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		(void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int history_stmt(struct history_store *s, enum history_stmt id, const char *sql, sqlite3_stmt **ret,
		 char **ret_error)
{
	if (!s->stmt[id]) {
		int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[id], NULL);
		if (rc != SQLITE_OK)
			return history_sqlite_error(s->db, rc, "prepare", ret_error);
	} else {
		sqlite3_reset(s->stmt[id]);
		sqlite3_clear_bindings(s->stmt[id]);
	}
	*ret = s->stmt[id];
	return 0;
}

int history_prepare(struct history_store *s, const char *sql, sqlite3_stmt **ret, char **ret_error)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);
	return rc == SQLITE_OK ? 0 : history_sqlite_error(s->db, rc, "prepare", ret_error);
}

int history_query_int(struct history_store *s, const char *sql, int64_t *ret, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int r = history_prepare(s, sql, &st, ret_error);
	if (r < 0)
		return r;
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, sql, ret_error);
	*ret = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	return 0;
}

int history_meta_get(struct history_store *s, const char *key, int64_t *ret, char **ret_error)
{
	sqlite3_stmt *st;
	int r = history_stmt(s, HISTORY_STMT_META_GET, "SELECT value FROM meta WHERE key = ?", &st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, "meta", ret_error);
	*ret = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	return 0;
}

int history_meta_set(struct history_store *s, const char *key, int64_t v, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int r = history_prepare(s, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", &st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, v);
	int rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? 0 : history_sqlite_error(s->db, rc, "meta", ret_error);
}

const char *const history_data_from_key[_HISTORY_RESOLUTION_MAX] = { "data_from_raw", "data_from_minute",
								     "data_from_hour" };
const char *const history_rolled_key[_HISTORY_RESOLUTION_MAX] = { NULL, "rolled_minute", "rolled_hour" };
