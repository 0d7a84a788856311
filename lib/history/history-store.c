/* history-store.c - the history store's file, recording and upkeep
 * (history-store.h): opening (recognising, setting aside, migrating),
 * change-only recording with an in-memory index of this run's lives, the
 * accounting record of a removed cgroup, rollups, retention and the size cap.
 * The queries are in history-query.c.
 *
 * Durability. WAL with synchronous=NORMAL: a commit is in the WAL file when
 * it returns, so a process killed at any moment (SIGKILL) loses nothing
 * committed and never corrupts the file (SQLite's atomic commit); only a
 * power cut can lose the last commits, never the file's consistency. Each
 * call is one transaction.
 *
 * The file is long because opening, recording and the upkeep share the
 * store's private helpers (statements, watermarks, the error mapping) and
 * each is one transaction over the same tables; the queries are apart. */
#include "history-store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/strv.h"
#include "basic/util.h"
#include "history-internal.h"

const uint64_t history_bucket_us[_HISTORY_RESOLUTION_MAX] = {
	[HISTORY_RAW] = 0,
	[HISTORY_MINUTE] = UINT64_C(60000000),
	[HISTORY_HOUR] = UINT64_C(3600000000),
};

/* The schema, as the migrations that build it: a new file runs them all, a
 * file of version N runs those after N, all in one transaction. Never edit a
 * migration that has shipped: add one. */
struct migration {
	int version; /* the schema version it makes */
	const char *sql;
};
static const struct migration migrations[] = {
	{ 1,
	  /* A run is one life of acctd; a life one incarnation of a cgroup; a
	   * point a life's values when they changed. */
	  "CREATE TABLE runs (id INTEGER PRIMARY KEY, boot_id TEXT NOT NULL, started_us INTEGER NOT NULL,"
	  "  last_us INTEGER NOT NULL, ended_us INTEGER, interval_us INTEGER NOT NULL);"
	  "CREATE TABLE lives (id INTEGER PRIMARY KEY, path TEXT NOT NULL, boot_id TEXT NOT NULL,"
	  "  inode INTEGER NOT NULL, first_seen_us INTEGER NOT NULL, removed_us INTEGER);"
	  "CREATE INDEX lives_path ON lives (path);"
	  "CREATE TABLE points (life INTEGER NOT NULL, t_us INTEGER NOT NULL, run INTEGER NOT NULL,"
	  "  cpu_usec INTEGER, memory_bytes INTEGER, memory_peak_bytes INTEGER, io_read_bytes INTEGER,"
	  "  io_write_bytes INTEGER, tasks INTEGER, PRIMARY KEY (life, t_us)) WITHOUT ROWID;" },
	{ 2,
	  /* Rollups (minute, hour), the upkeep's watermarks, and the accounting
	   * record of a removed life. */
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
	  "ALTER TABLE lives ADD COLUMN rec_recorded_us INTEGER;" },
	{ 3,
	  /* The longest time between two recordings of a run (its start
	   * counting as one): what makes a window edge in an idle stretch
	   * exact (history-store.h). NULL for runs written before: unknown. */
	  "ALTER TABLE runs ADD COLUMN max_step_us INTEGER;"
	  /* Smaller rollup rows (a day at 10,000 cgroups is mostly minute
	   * rollups): the last point's time as its offset in the bucket, and
	   * the time the bucket was NOT covered (0 for almost every bucket,
	   * which SQLite stores in no bytes at all) instead of the covered time. */
	  "CREATE TABLE rollups_v3 (res INTEGER NOT NULL, life INTEGER NOT NULL, t_us INTEGER NOT NULL,"
	  "  t_last_off INTEGER NOT NULL, run INTEGER NOT NULL, uncovered_us INTEGER NOT NULL,"
	  "  memory_integral REAL NOT NULL, memory_bound REAL NOT NULL, memory_min INTEGER, memory_max INTEGER,"
	  "  tasks_max INTEGER, cpu_usec INTEGER, memory_bytes INTEGER, memory_peak_bytes INTEGER,"
	  "  io_read_bytes INTEGER, io_write_bytes INTEGER, tasks INTEGER,"
	  "  PRIMARY KEY (res, life, t_us)) WITHOUT ROWID;"
	  "INSERT INTO rollups_v3 SELECT res, life, t_us, t_last_us - t_us, run,"
	  "  (CASE res WHEN 1 THEN 60000000 ELSE 3600000000 END) - covered_us, memory_integral, memory_bound,"
	  "  memory_min, memory_max, tasks_max, cpu_usec, memory_bytes, memory_peak_bytes, io_read_bytes,"
	  "  io_write_bytes, tasks FROM rollups;"
	  "DROP TABLE rollups;"
	  "ALTER TABLE rollups_v3 RENAME TO rollups;"
	  /* Whether a life's counters count from 0 at its first point
	   * (struct history_sample's created_seen); lives written before: not
	   * known, so their first point is a baseline. */
	  "ALTER TABLE lives ADD COLUMN from_zero INTEGER NOT NULL DEFAULT 0;"
	  /* A life found at start: its cumulative counters at its first
	   * point, the baseline its usage counts from (raw points expire, and a
	   * rollup keeps a bucket's last values, not its first). */
	  "ALTER TABLE lives ADD COLUMN base_cpu_usec INTEGER;"
	  "ALTER TABLE lives ADD COLUMN base_io_read_bytes INTEGER;"
	  "ALTER TABLE lives ADD COLUMN base_io_write_bytes INTEGER;" },
	{ 4,
	  /* How far a removed life's CPU time may lie above its final point:
	   * the point was read before its last task left, or without a way to
	   * know when that was (history_store_removed()). NULL: final (and
	   * every life removed before this version, which claimed so). */
	  "ALTER TABLE lives ADD COLUMN final_cpu_usec_bound INTEGER;"
	  /* A life found at the start of a run that follows another of the
	   * same boot: the last recording of that run, which did not see it,
	   * so it was created after (its counters count from 0 there). NULL:
	   * not known (created while acctd ran, or the first run of a boot). */
	  "ALTER TABLE lives ADD COLUMN born_after_us INTEGER;" },
};

static int set_error(char **ret_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_error(char **ret_error, const char *fmt, ...)
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
	set_error(ret_error, "%s: %s%s%s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), sys ? ": " : "",
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

static void finalizep(sqlite3_stmt **st)
{
	if (*st)
		sqlite3_finalize(*st);
}
#define _cleanup_finalize_ _cleanup_(finalizep)

static int exec(struct history_store *s, const char *sql, const char *what, char **ret_error)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : history_sqlite_error(s->db, rc, what, ret_error);
}

/* Undo a failed transaction (SQLite may have rolled it back already). */
static void rollback(struct history_store *s)
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

static int prepare(struct history_store *s, const char *sql, sqlite3_stmt **ret, char **ret_error)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);
	return rc == SQLITE_OK ? 0 : history_sqlite_error(s->db, rc, "prepare", ret_error);
}

/* One integer from `sql` (no parameters); 0 when it returns no row. */
static int query_int(struct history_store *s, const char *sql, int64_t *ret, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int r = prepare(s, sql, &st, ret_error);
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

static int meta_set(struct history_store *s, const char *key, int64_t v, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int r = prepare(s, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", &st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, v);
	int rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? 0 : history_sqlite_error(s->db, rc, "meta", ret_error);
}

/* Watermarks in meta, per resolution: data_from_R (no data of R before it:
 * retention and the size cap moved it) and rolled_R (R's buckets are made up
 * to here, for minute and hour). */
static const char *const data_from_key[_HISTORY_RESOLUTION_MAX] = { "data_from_raw", "data_from_minute",
								    "data_from_hour" };
static const char *const rolled_key[_HISTORY_RESOLUTION_MAX] = { NULL, "rolled_minute", "rolled_hour" };

/* The column names of `table` in `db`, in order, as a new strv in *ret
 * (NULL: no such table). */
static int table_columns(sqlite3 *db, const char *table, char ***ret)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?) ORDER BY cid", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return history_sqlite_error(db, rc, "reading the schema", NULL);
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	_cleanup_strv_free_ char **names = NULL;
	size_t n = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (strv_push_dup(&names, &n, (const char *)sqlite3_column_text(st, 0) ?: "") < 0)
			return -ENOMEM;
	if (rc != SQLITE_DONE)
		return history_sqlite_error(db, rc, "reading the schema", NULL);
	*ret = TAKE_PTR(names);
	return 0;
}

/* The first name of `a` that `b` lacks, or NULL. */
static const char *first_missing(char *const *a, char *const *b)
{
	for (size_t i = 0; a && a[i]; i++) {
		bool found = false;
		for (size_t j = 0; b && b[j] && !found; j++)
			found = strcmp(a[i], b[j]) == 0;
		if (!found)
			return a[i];
	}
	return NULL;
}

/* Whether the two lists hold the same names in the same order. */
static bool same_columns(char *const *a, char *const *b)
{
	size_t n = strv_length(a);
	if (n != strv_length(b))
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

static void db_closep(sqlite3 **db)
{
	if (*db)
		sqlite3_close(*db);
}

/* Whether the file's tables are those schema `version` makes: the same
 * columns in the same order as a new store of that version has, made in
 * memory by the same migrations[]. A file whose version and tables disagree
 * (edited by hand, or written by a build whose migration changed without a
 * new version) fails every recording on a missing column: it is set aside
 * as a damaged one is. Tables of the file's own beside ours do no harm.
 * Returns 0 when they match, 1 when not (*ret_why says how), < 0 on error. */
static int check_tables(struct history_store *s, int version, char **ret_why)
{
	_cleanup_(db_closep) sqlite3 *ref = NULL;
	int rc = sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK)
		return history_sqlite_error(ref, rc, "reading the schema", ret_why);
	for (size_t i = 0; i < ELEMENTSOF(migrations) && migrations[i].version <= version; i++) {
		rc = sqlite3_exec(ref, migrations[i].sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			return history_sqlite_error(ref, rc, "reading the schema", ret_why);
	}
	_cleanup_finalize_ sqlite3_stmt *tables = NULL;
	rc = sqlite3_prepare_v2(ref, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1, &tables,
				NULL);
	if (rc != SQLITE_OK)
		return history_sqlite_error(ref, rc, "reading the schema", ret_why);
	while ((rc = sqlite3_step(tables)) == SQLITE_ROW) {
		const char *table = (const char *)sqlite3_column_text(tables, 0);
		_cleanup_strv_free_ char **want = NULL, **have = NULL;
		int r = table_columns(ref, table, &want);
		if (r >= 0)
			r = table_columns(s->db, table, &have);
		if (r < 0) {
			set_error(ret_why, "reading the schema of table %s: %s", table, strerror(-r));
			return r;
		}
		if (same_columns(have, want))
			continue;
		const char *missing = first_missing(want, have);
		const char *unknown = first_missing(have, want);
		if (!have)
			set_error(ret_why, "schema version %d without its table %s", version, table);
		else if (missing)
			set_error(ret_why, "schema version %d, but table %s has no column %s", version, table, missing);
		else if (unknown)
			set_error(ret_why, "schema version %d, but table %s has a column %s it does not define", version,
				  table, unknown);
		else
			set_error(ret_why, "schema version %d, but the columns of table %s are in another order", version,
				  table);
		return 1;
	}
	return rc == SQLITE_DONE ? 0 : history_sqlite_error(ref, rc, "reading the schema", ret_why);
}

/* What a file is, before it is used. */
enum file_kind {
	FILE_EMPTY,   /* a new database: no tables, no application id */
	FILE_OURS,    /* an acctd history of a known version */
	FILE_FOREIGN, /* another application's database */
	FILE_NEWER,   /* an acctd history of a schema this acctd does not know */
	FILE_CORRUPT, /* not SQLite, or failing its check */
};

static int classify(struct history_store *s, enum file_kind *ret_kind, int *ret_version, char **ret_error)
{
	int64_t app = 0, version = 0, tables = 0;
	char *what = NULL;
	int r = query_int(s, "PRAGMA application_id", &app, &what);
	if (r >= 0)
		r = query_int(s, "PRAGMA user_version", &version, &what);
	if (r >= 0)
		r = query_int(s, "SELECT count(*) FROM sqlite_master", &tables, &what);
	if (r == -EIO) {
		/* SQLITE_NOTADB, SQLITE_CORRUPT: not a database we can read. */
		set_error(ret_error, "%s", what ? what : "unreadable");
		free(what);
		*ret_kind = FILE_CORRUPT;
		return 0;
	}
	if (r < 0) {
		free(*ret_error);
		*ret_error = what;
		return r;
	}
	free(what);
	*ret_version = (int)version;
	if (app == 0 && version == 0 && tables == 0)
		*ret_kind = FILE_EMPTY;
	else if (app != HISTORY_APPLICATION_ID)
		*ret_kind = FILE_FOREIGN;
	else if (version > HISTORY_SCHEMA_VERSION || version < 1)
		*ret_kind = FILE_NEWER;
	else {
		/* quick_check: the structure of every page, without cross-checking
		 * indexes against tables row by row (integrity_check), so that a
		 * large store opens in seconds, not minutes. */
		_cleanup_finalize_ sqlite3_stmt *st = NULL;
		r = prepare(s, "PRAGMA quick_check(1)", &st, ret_error);
		if (r < 0)
			return r;
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0) {
			r = check_tables(s, (int)version, ret_error);
			if (r < 0)
				return r;
			*ret_kind = r == 0 ? FILE_OURS : FILE_CORRUPT;
		} else {
			set_error(ret_error, "integrity check: %s",
				  rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : sqlite3_errmsg(s->db));
			*ret_kind = FILE_CORRUPT;
		}
	}
	return 0;
}

/* Whether the store may be opened at `path`, in the directory `dir` (see
 * history_store_open()): the file is not a symlink, and the directory is one
 * that only acctd's user (or root) can write. Whoever else can write the
 * directory can put a symlink there (to a file of root's, which acctd would
 * then overwrite with its database) or a file of their own (which would
 * receive every cgroup's history), as history.db or as its -wal or -shm;
 * refusing their symlinks alone would not be enough. The rule of the API
 * socket's directory; as there, a sticky directory (/tmp) is refused too:
 * the sticky bit keeps others from renaming acctd's files, not from making
 * theirs first. Returns 0, or -ELOOP or -EPERM with *ret_error. */
static int check_place(const char *path, const char *dir, char **ret_error)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		int r = -errno;
		set_error(ret_error, "%s: %s", dir, strerror(errno));
		return r;
	}
	uid_t me = geteuid();
	if ((st.st_uid != me && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		set_error(ret_error,
			  "its directory %s is owned by uid %u with mode %04o: it must be owned by acctd's user (uid %u) "
			  "or root and not writable by group or others, who could put a symlink or a file of theirs in "
			  "the history's place",
			  dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)me);
		return -EPERM;
	}
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		set_error(ret_error, "it is a symbolic link, which the history is never opened through");
		return -ELOOP;
	}
	return 0;
}

/* The directory of `path`, as a new string; NULL on ENOMEM. */
static char *dir_of(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return NULL;
	char *slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else
		slash[slash == dir ? 1 : 0] = '\0';
	return dir;
}

/* `path` with its directory's symlinks resolved (realpath(3) of the
 * directory, then the file's own name), as a new string; NULL on ENOMEM.
 * Where the directory cannot be resolved, a copy of `path` (the open then
 * says why). The parents are trusted, as systemd trusts them: with
 * DynamicUser= the state directory /var/lib/acctd is itself a symlink to
 * /var/lib/private/acctd, and SQLite's NOFOLLOW refuses a symlink anywhere
 * in the path; the file's own name is never resolved. */
static char *resolved_path(const char *path)
{
	_cleanup_free_ char *dir = dir_of(path);
	if (!dir)
		return NULL;
	_cleanup_free_ char *real = realpath(dir, NULL);
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char *ret = NULL;
	if (!real)
		return errno == ENOMEM ? NULL : strdup(path);
	if (asprintf(&ret, "%s%s%s", real, strcmp(real, "/") == 0 ? "" : "/", name) < 0)
		return NULL;
	return ret;
}

static int db_open(struct history_store *s, int flags, char **ret_error)
{
	_cleanup_free_ char *real = resolved_path(s->path);
	if (!real)
		return -ENOMEM;
	/* NOFOLLOW: a symlink put in the file's place after check_place() is
	 * refused too (SQLite then opens with O_NOFOLLOW). */
	int rc = sqlite3_open_v2(real, &s->db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		int r;
		if (s->db && sqlite3_extended_errcode(s->db) == SQLITE_CANTOPEN_SYMLINK) {
			set_error(ret_error, "%s is a symbolic link: the history is not opened through one", s->path);
			r = -ELOOP;
		} else
			r = history_sqlite_error(s->db, rc, s->path, ret_error);
		sqlite3_close(s->db);
		s->db = NULL;
		return r;
	}
	sqlite3_extended_result_codes(s->db, 1);
	/* Readers and the writer share the file: wait for a lock rather than fail. */
	sqlite3_busy_timeout(s->db, 5000);
	/* Pages read through a mapping rather than copied by read(2): the
	 * queries walk many of them (a usage of 10,000 cgroups over a day).
	 * Both bounds are in history-store.h. */
	char pragmas[128];
	snprintf(pragmas, sizeof(pragmas), "PRAGMA mmap_size = %" PRIu64 "; PRAGMA cache_size = -%" PRIu64,
		 HISTORY_MMAP_BYTES, HISTORY_CACHE_BYTES >> 10);
	(void)sqlite3_exec(s->db, pragmas, NULL, NULL, NULL);
	return 0;
}

uint64_t history_heap_bytes(void)
{
	sqlite3_int64 n = sqlite3_memory_used();
	return n > 0 ? (uint64_t)n : 0;
}

/* Rename the file (and its WAL) out of the way. */
static int set_aside(struct history_store *s, uint64_t now_us, struct history_open_info *info, char **ret_error)
{
	_cleanup_free_ char *to = NULL;
	if (asprintf(&to, "%s.corrupt-%" PRIu64, s->path, now_us / 1000000) < 0)
		return -ENOMEM;
	if (rename(s->path, to) < 0) {
		int r = -errno;
		set_error(ret_error, "renaming %s to %s: %s", s->path, to, strerror(errno));
		return r;
	}
	static const char *const companions[] = { "-wal", "-shm" };
	for (size_t i = 0; i < ELEMENTSOF(companions); i++) {
		_cleanup_free_ char *from = NULL, *dest = NULL;
		if (asprintf(&from, "%s%s", s->path, companions[i]) < 0 ||
		    asprintf(&dest, "%s%s", to, companions[i]) < 0)
			return -ENOMEM;
		if (rename(from, dest) < 0 && errno != ENOENT)
			(void)unlink(from);
	}
	free(info->set_aside);
	info->set_aside = TAKE_PTR(to);
	return 0;
}

static int migrate_tx(struct history_store *s, int from, uint64_t now_us, char **ret_error)
{
	int r;
	for (size_t i = 0; i < ELEMENTSOF(migrations); i++) {
		if (migrations[i].version <= from)
			continue;
		r = exec(s, migrations[i].sql, "migrating", ret_error);
		if (r < 0)
			return r;
	}
	_cleanup_free_ char *pragmas = NULL;
	if (asprintf(&pragmas, "PRAGMA application_id = %d; PRAGMA user_version = %d", HISTORY_APPLICATION_ID,
		     HISTORY_SCHEMA_VERSION) < 0) {
		return -ENOMEM;
	}
	r = exec(s, pragmas, "migrating", ret_error);
	if (r < 0)
		return r;
	/* Nothing has been dropped yet (data_from 0); rollups start with the
	 * oldest data: now for a new file, the first run of an older one. */
	int64_t oldest = 0;
	if (from >= 1) {
		r = query_int(s, "SELECT min(started_us) FROM runs", &oldest, ret_error);
		if (r < 0)
			return r;
	}
	if (oldest <= 0)
		oldest = (int64_t)now_us;
	for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
		r = meta_set(s, data_from_key[res], 0, ret_error);
		if (r >= 0 && rolled_key[res])
			r = meta_set(s, rolled_key[res], oldest - oldest % (int64_t)history_bucket_us[res], ret_error);
		if (r < 0)
			return r;
	}
	return 0;
}

/* From schema `from` (0: an empty file) to this acctd's, in one transaction. */
static int migrate(struct history_store *s, int from, uint64_t now_us, char **ret_error)
{
	int r = exec(s, "BEGIN IMMEDIATE", "migrating", ret_error);
	if (r < 0)
		return r;
	r = migrate_tx(s, from, now_us, ret_error);
	if (r >= 0)
		r = exec(s, "COMMIT", "migrating", ret_error);
	if (r < 0)
		rollback(s);
	return r;
}

static struct history_store *store_free(struct history_store *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(s->stmt); i++)
		sqlite3_finalize(s->stmt[i]);
	if (s->db)
		sqlite3_close(s->db);
	history_index_clear(&s->index);
	free(s->removed);
	free(s->path);
	free(s);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct history_store *, store_free);

/* Lives of this boot that were open at the last run: the index, each with
 * the values of its last point. */
static int load_lives(struct history_store *s, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *st = NULL;
	int r = prepare(s,
			"SELECT l.id, l.path, l.inode, l.first_seen_us, p.run, p.cpu_usec, p.memory_bytes,"
			"  p.memory_peak_bytes, p.io_read_bytes, p.io_write_bytes, p.tasks, p.t_us IS NOT NULL"
			" FROM lives l LEFT JOIN points p ON p.life = l.id AND p.t_us ="
			"  (SELECT max(t_us) FROM points WHERE life = l.id)"
			" WHERE l.boot_id = ? AND l.removed_us IS NULL",
			&st, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, s->boot_id, -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct history_life *l = calloc(1, sizeof(*l));
		if (!l)
			return -ENOMEM;
		l->id = sqlite3_column_int64(st, 0);
		l->path = strdup((const char *)sqlite3_column_text(st, 1));
		l->inode = (uint64_t)sqlite3_column_int64(st, 2);
		l->first_seen_us = (uint64_t)sqlite3_column_int64(st, 3);
		l->has_last = sqlite3_column_int(st, 11);
		l->run = sqlite3_column_int64(st, 4);
		l->last = (struct history_values){
			.cpu_usec = history_column_value(st, 5),
			.memory_bytes = history_column_value(st, 6),
			.memory_peak_bytes = history_column_value(st, 7),
			.io_read_bytes = history_column_value(st, 8),
			.io_write_bytes = history_column_value(st, 9),
			.tasks = history_column_value(st, 10),
		};
		if (!l->path || history_index_add(&s->index, l) < 0) {
			history_life_free(l);
			return -ENOMEM;
		}
	}
	return rc == SQLITE_DONE ? 0 : history_sqlite_error(s->db, rc, "loading lives", ret_error);
}

/* Start this run: end the runs that did not close (at their last
 * recording), end the lives of other boots (the reboot removed them, at the
 * end of their boot's last run). */
/* Inside a transaction: a new run of this boot from now_us (its id in
 * *ret_run). Returns 0 or a negative errno with *ret_error (`what` says when). */
static int insert_run(struct history_store *s, uint64_t now_us, const char *what, int64_t *ret_run, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *ins = NULL;
	int r = prepare(s, "INSERT INTO runs (boot_id, started_us, last_us, interval_us, max_step_us) VALUES (?, ?, ?, ?, 0)",
			&ins, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_text(ins, 1, s->boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(ins, 2, (int64_t)now_us);
	sqlite3_bind_int64(ins, 3, (int64_t)now_us);
	sqlite3_bind_int64(ins, 4, (int64_t)s->interval_us);
	int rc = sqlite3_step(ins);
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, what, ret_error);
	*ret_run = sqlite3_last_insert_rowid(s->db);
	return 0;
}

static int start_run(struct history_store *s, uint64_t now_us, char **ret_error)
{
	int r = exec(s, "BEGIN IMMEDIATE", "starting a run", ret_error);
	if (r < 0)
		return r;
	_cleanup_finalize_ sqlite3_stmt *lives = NULL, *prev = NULL;
	r = exec(s, "UPDATE runs SET ended_us = last_us WHERE ended_us IS NULL", "starting a run", ret_error);
	if (r < 0)
		goto fail;
	r = prepare(s,
		    "UPDATE lives SET removed_us = (SELECT max(last_us) FROM runs WHERE runs.boot_id = lives.boot_id)"
		    " WHERE removed_us IS NULL AND boot_id != ?",
		    &lives, ret_error);
	if (r < 0)
		goto fail;
	sqlite3_bind_text(lives, 1, s->boot_id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(lives);
	if (rc != SQLITE_DONE) {
		r = history_sqlite_error(s->db, rc, "starting a run", ret_error);
		goto fail;
	}
	r = prepare(s, "SELECT max(last_us) FROM runs WHERE boot_id = ?", &prev, ret_error);
	if (r < 0)
		goto fail;
	sqlite3_bind_text(prev, 1, s->boot_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(prev);
	if (rc != SQLITE_ROW) {
		r = history_sqlite_error(s->db, rc, "starting a run", ret_error);
		goto fail;
	}
	s->prev_run_end_us = (uint64_t)sqlite3_column_int64(prev, 0);
	r = insert_run(s, now_us, "starting a run", &s->run, ret_error);
	if (r < 0)
		goto fail;
	r = exec(s, "COMMIT", "starting a run", ret_error);
	if (r < 0)
		goto fail;
	s->started_us = s->last_us = s->run_last_us = now_us;
	return 0;
fail:
	rollback(s);
	return r;
}

/* After a stall (HISTORY_STALL_INTERVALS): end the run at its last
 * recording and start a new one at now_us, as a restart would, but keeping
 * the index (the lives continue: nobody removed them, and the removals
 * acctd saw meanwhile come through history_store_removed()). Every life
 * gets a point at the new run's first recording, which begins its data
 * after the gap. Returns 0 when there was no stall, 1 when a new run was
 * started, or a negative errno (nothing changed). */
static int split_if_stalled(struct history_store *s, uint64_t now_us, char **ret_error)
{
	if (s->recordings == 0 || now_us <= s->run_last_us ||
	    now_us - s->run_last_us <= HISTORY_STALL_INTERVALS * s->interval_us)
		return 0;
	_cleanup_finalize_ sqlite3_stmt *end = NULL;
	int r = prepare(s, "UPDATE runs SET ended_us = last_us WHERE id = ?", &end, ret_error);
	if (r < 0)
		return r;
	r = exec(s, "BEGIN IMMEDIATE", "ending a stalled run", ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_int64(end, 1, s->run);
	int64_t run = 0;
	int rc = sqlite3_step(end);
	r = rc == SQLITE_DONE ? insert_run(s, now_us, "ending a stalled run", &run, ret_error)
			      : history_sqlite_error(s->db, rc, "ending a stalled run", ret_error);
	if (r < 0) {
		rollback(s);
		return r;
	}
	r = exec(s, "COMMIT", "ending a stalled run", ret_error);
	if (r < 0) {
		rollback(s);
		return r;
	}
	s->run = run;
	s->run_last_us = s->last_us = MAX(s->last_us, now_us);
	for (size_t i = 0; i < ptr_table_capacity(&s->index.lives); i++) {
		struct history_life *l = ptr_table_at(&s->index.lives, i);
		if (l) {
			l->pointed = false;
			l->last_point_us = 0;
		}
	}
	return 1;
}

static bool valid_boot_id(const char *b)
{
	if (!b || strlen(b) != 32)
		return false;
	for (const char *p = b; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

int history_store_open(const char *path, const char *boot_id, uint64_t now_us, uint64_t interval_us,
		       const struct history_limits *limits, struct history_store **ret,
		       struct history_open_info *info, char **ret_error)
{
	*info = (struct history_open_info){};
	if (!valid_boot_id(boot_id) || interval_us == 0) {
		set_error(ret_error, "invalid boot id or interval");
		return -EINVAL;
	}
	_cleanup_(store_freep) struct history_store *s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path)))
		return -ENOMEM;
	memcpy(s->boot_id, boot_id, 33);
	s->interval_us = interval_us;
	if (limits)
		s->limits = *limits;

	/* SQLite opens a file it cannot write read-only and fails later, with
	 * less telling errors: ask first (the directory too: the WAL and its
	 * index are created beside the file). */
	_cleanup_free_ char *dir = dir_of(path);
	if (!dir)
		return -ENOMEM;
	int r = check_place(path, dir, ret_error);
	if (r < 0)
		return r;
	const char *const need[] = { dir, path };
	for (size_t i = 0; i < ELEMENTSOF(need); i++)
		if (access(need[i], W_OK) < 0 && !(i == 1 && errno == ENOENT)) {
			r = -errno;
			set_error(ret_error, "%s: not writable: %s", need[i], strerror(errno));
			return r;
		}
	r = db_open(s, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, ret_error);
	if (r < 0)
		return r;
	enum file_kind kind;
	int version = 0;
	_cleanup_free_ char *why = NULL;
	r = classify(s, &kind, &version, &why);
	if (r < 0) {
		set_error(ret_error, "%s: %s", path, why ? why : "unreadable");
		return r;
	}
	if (kind == FILE_FOREIGN || kind == FILE_NEWER || kind == FILE_CORRUPT) {
		if (kind == FILE_FOREIGN)
			snprintf(info->set_aside_why, sizeof(info->set_aside_why), "another application's database");
		else if (kind == FILE_NEWER)
			snprintf(info->set_aside_why, sizeof(info->set_aside_why),
				 "schema version %d, which this acctd (%d) does not know", version, HISTORY_SCHEMA_VERSION);
		else
			snprintf(info->set_aside_why, sizeof(info->set_aside_why), "%s", why ?: "damaged");
		sqlite3_close(s->db);
		s->db = NULL;
		r = set_aside(s, now_us, info, ret_error);
		if (r < 0)
			return r;
		r = db_open(s, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, ret_error);
		if (r < 0)
			return r;
		kind = FILE_EMPTY;
	}
	/* Incremental auto-vacuum can only be chosen before the first table:
	 * it lets the size cap give pages back to the file system. */
	if (kind == FILE_EMPTY) {
		r = exec(s, "PRAGMA auto_vacuum = INCREMENTAL", "creating", ret_error);
		if (r < 0)
			return r;
	}
	_cleanup_finalize_ sqlite3_stmt *wal = NULL;
	r = prepare(s, "PRAGMA journal_mode = WAL", &wal, ret_error);
	if (r < 0)
		return r;
	int rc = sqlite3_step(wal);
	if (rc != SQLITE_ROW)
		return history_sqlite_error(s->db, rc, "WAL mode", ret_error);
	if (strcmp((const char *)sqlite3_column_text(wal, 0), "wal") != 0) {
		set_error(ret_error, "%s: WAL mode refused (journal mode %s)", path, sqlite3_column_text(wal, 0));
		return -EIO;
	}
	sqlite3_reset(wal);
	/* NORMAL is durable against a crash of the process in WAL mode; the WAL
	 * is cut back after checkpoints so it does not keep its high mark. */
	r = exec(s, "PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = 4194304", "opening", ret_error);
	if (r < 0)
		return r;
	if (kind == FILE_EMPTY) {
		r = migrate(s, 0, now_us, ret_error);
		if (r < 0)
			return r;
		info->created = true;
	} else if (version < HISTORY_SCHEMA_VERSION) {
		r = migrate(s, version, now_us, ret_error);
		if (r < 0)
			return r;
		info->migrated = true;
		info->from_version = version;
		/* Version 1 was created without incremental auto-vacuum: the
		 * size cap needs it, and only a VACUUM can turn it on. */
		int64_t av = 0;
		r = query_int(s, "PRAGMA auto_vacuum", &av, ret_error);
		if (r >= 0 && av != 2)
			r = exec(s, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM", "migrating", ret_error);
		if (r < 0)
			return r;
	}
	r = start_run(s, now_us, ret_error);
	if (r < 0)
		return r;
	r = load_lives(s, ret_error);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

int history_store_open_readonly(const char *path, struct history_store **ret, char **ret_error)
{
	_cleanup_(store_freep) struct history_store *s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path)))
		return -ENOMEM;
	s->readonly = true;
	/* The place first: a symlink (even one to nothing) or an open
	 * directory is the reason there is no history, not ENOENT. */
	_cleanup_free_ char *dir = dir_of(path);
	if (!dir)
		return -ENOMEM;
	int r = check_place(path, dir, ret_error);
	if (r < 0)
		return r;
	if (access(path, F_OK) < 0) {
		r = -errno;
		set_error(ret_error, "%s: %s", path, strerror(errno));
		return r;
	}
	r = db_open(s, SQLITE_OPEN_READONLY, ret_error);
	if (r < 0)
		return r;
	int64_t app = 0, version = 0;
	r = query_int(s, "PRAGMA application_id", &app, ret_error);
	if (r >= 0)
		r = query_int(s, "PRAGMA user_version", &version, ret_error);
	if (r < 0)
		return r;
	if (app != HISTORY_APPLICATION_ID || version != HISTORY_SCHEMA_VERSION) {
		set_error(ret_error, "%s: not an acctd history of schema %d (application id %#" PRIx64 ", version %" PRId64 ")",
			  path, HISTORY_SCHEMA_VERSION, (uint64_t)app, version);
		return -EPROTO;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

void history_store_set_limits(struct history_store *s, const struct history_limits *limits)
{
	s->limits = *limits;
}

static bool values_equal(const struct history_values *a, const struct history_values *b)
{
	return a->cpu_usec == b->cpu_usec && a->memory_bytes == b->memory_bytes &&
	       a->memory_peak_bytes == b->memory_peak_bytes && a->io_read_bytes == b->io_read_bytes &&
	       a->io_write_bytes == b->io_write_bytes && a->tasks == b->tasks;
}

static int insert_point(struct history_store *s, sqlite3_stmt *st, int64_t life, uint64_t t_us,
			const struct history_values *v, char **ret_error)
{
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, life);
	sqlite3_bind_int64(st, 2, (int64_t)t_us);
	sqlite3_bind_int64(st, 3, s->run);
	history_bind_value(st, 4, v->cpu_usec);
	history_bind_value(st, 5, v->memory_bytes);
	history_bind_value(st, 6, v->memory_peak_bytes);
	history_bind_value(st, 7, v->io_read_bytes);
	history_bind_value(st, 8, v->io_write_bytes);
	history_bind_value(st, 9, v->tasks);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : history_sqlite_error(s->db, rc, "recording", ret_error);
}

#define INSERT_POINT_SQL                                                                                       \
	"INSERT OR REPLACE INTO points (life, t_us, run, cpu_usec, memory_bytes, memory_peak_bytes, io_read_bytes," \
	" io_write_bytes, tasks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

/* What a recording changes in the index, applied once it has committed. */
struct pending {
	struct history_life *life;
	const struct history_values *v;
};

/* Mark the lives recording `gen` named as not named: after a recording that
 * failed, or named only some, the next whole one names them anew. */
static void forget_seen(struct history_index *x, uint64_t gen)
{
	for (size_t i = 0; i < ptr_table_capacity(&x->lives); i++) {
		struct history_life *l = ptr_table_at(&x->lives, i);
		if (l && l->seen == gen)
			l->seen = 0;
	}
}

/* history_store_record(), and with !whole the lives named only: the run's
 * last recording stays, and no life goes for not being named. */
static int record_samples(struct history_store *s, uint64_t now_us, const struct history_sample *samples, size_t n,
			  bool whole, char **ret_error)
{
	if (s->readonly)
		return -EROFS;
	int r = whole ? split_if_stalled(s, now_us, ret_error) : 0;
	if (r < 0)
		return r;
	_cleanup_free_ struct pending *pending = calloc(n ? n : 1, sizeof(*pending));
	_cleanup_free_ struct history_life **created_lives = calloc(n ? n : 1, sizeof(*created_lives));
	if (!pending || !created_lives)
		return -ENOMEM;
	size_t n_pending = 0, n_created = 0;
	uint64_t gen = s->recordings + 1;
	sqlite3_stmt *ins_point, *ins_life, *upd_run;
	_cleanup_finalize_ sqlite3_stmt *end_life = NULL;
	r = history_stmt(s, HISTORY_STMT_INSERT_POINT, INSERT_POINT_SQL, &ins_point, ret_error);
	if (r >= 0)
		r = history_stmt(s, HISTORY_STMT_INSERT_LIFE,
				 "INSERT INTO lives (path, boot_id, inode, first_seen_us, from_zero, base_cpu_usec,"
				 " base_io_read_bytes, base_io_write_bytes, born_after_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
				 &ins_life,
				 ret_error);
	if (r >= 0)
		r = history_stmt(s, HISTORY_STMT_UPDATE_RUN,
				 "UPDATE runs SET last_us = ?1, max_step_us = max(max_step_us, ?1 - last_us) WHERE id = ?2",
				 &upd_run, ret_error);
	if (r >= 0 && whole && s->recordings == 0)
		r = prepare(s, "UPDATE lives SET removed_us = ? WHERE id = ?", &end_life, ret_error);
	if (r < 0)
		return r;
	r = exec(s, "BEGIN IMMEDIATE", "recording", ret_error);
	if (r < 0)
		return r;
	int rc;
	for (size_t i = 0; i < n; i++) {
		const struct history_sample *smp = &samples[i];
		struct history_life *l = history_index_get(&s->index, smp->key.path, smp->key.inode);
		bool created = false;
		if (!l) {
			sqlite3_reset(ins_life);
			sqlite3_bind_text(ins_life, 1, smp->key.path, -1, SQLITE_STATIC);
			sqlite3_bind_text(ins_life, 2, s->boot_id, -1, SQLITE_STATIC);
			sqlite3_bind_int64(ins_life, 3, (int64_t)smp->key.inode);
			sqlite3_bind_int64(ins_life, 4, (int64_t)now_us);
			sqlite3_bind_int(ins_life, 5, smp->created_seen);
			history_bind_value(ins_life, 6, smp->v.cpu_usec);
			history_bind_value(ins_life, 7, smp->v.io_read_bytes);
			history_bind_value(ins_life, 8, smp->v.io_write_bytes);
			/* Not in the last run of this boot, which recorded every
			 * cgroup there was at its last recording: created since. */
			if (!smp->created_seen && s->prev_run_end_us > 0 && s->prev_run_end_us <= now_us)
				sqlite3_bind_int64(ins_life, 9, (int64_t)s->prev_run_end_us);
			else
				sqlite3_bind_null(ins_life, 9);
			rc = sqlite3_step(ins_life);
			if (rc != SQLITE_DONE) {
				r = history_sqlite_error(s->db, rc, "recording", ret_error);
				goto fail;
			}
			l = calloc(1, sizeof(*l));
			if (l) {
				l->id = sqlite3_last_insert_rowid(s->db);
				l->inode = smp->key.inode;
				l->first_seen_us = now_us;
			}
			if (!l || !(l->path = strdup(smp->key.path)) || history_index_add(&s->index, l) < 0) {
				history_life_free(l);
				r = -ENOMEM;
				goto fail;
			}
			created = true;
			created_lives[n_created++] = l;
		} else if (l->seen == gen)
			continue; /* named twice: the first counts */
		l->seen = gen;
		if (created || !l->pointed || !values_equal(&l->last, &smp->v)) {
			r = insert_point(s, ins_point, l->id, now_us, &smp->v, ret_error);
			if (r < 0)
				goto fail;
			pending[n_pending++] = (struct pending){ .life = l, .v = &smp->v };
		}
	}
	/* The first recording of a run ends the lives of the last run that are
	 * gone (removed while acctd was down): at the end of the run of their
	 * last point, the last time they were known to exist. */
	if (whole && s->recordings == 0)
		for (size_t i = 0; i < ptr_table_capacity(&s->index.lives); i++) {
			struct history_life *l = ptr_table_at(&s->index.lives, i);
			if (!l || l->seen == gen)
				continue;
			sqlite3_reset(end_life);
			sqlite3_bind_int64(end_life, 1, (int64_t)s->prev_run_end_us);
			sqlite3_bind_int64(end_life, 2, l->id);
			rc = sqlite3_step(end_life);
			if (rc != SQLITE_DONE) {
				r = history_sqlite_error(s->db, rc, "recording", ret_error);
				goto fail;
			}
		}
	if (whole) {
		sqlite3_bind_int64(upd_run, 1, (int64_t)now_us);
		sqlite3_bind_int64(upd_run, 2, s->run);
		rc = sqlite3_step(upd_run);
		if (rc != SQLITE_DONE) {
			r = history_sqlite_error(s->db, rc, "recording", ret_error);
			goto fail;
		}
		sqlite3_reset(upd_run);
	}
	r = exec(s, "COMMIT", "recording", ret_error);
	if (r < 0)
		goto fail;

	for (size_t i = 0; i < n_pending; i++) {
		pending[i].life->last = *pending[i].v;
		pending[i].life->has_last = pending[i].life->pointed = true;
		pending[i].life->run = s->run;
		pending[i].life->last_point_us = now_us;
	}
	if (!whole) {
		/* the next whole recording names them anew */
		forget_seen(&s->index, gen);
		return 0;
	}
	if (s->recordings == 0)
		for (size_t i = 0; i < ptr_table_capacity(&s->index.lives);) {
			struct history_life *l = ptr_table_at(&s->index.lives, i);
			if (l && l->seen != gen) {
				history_index_remove(&s->index, l);
				history_life_free(l);
				continue; /* the slot may hold a shifted entry now */
			}
			i++;
		}
	s->recordings++;
	s->last_us = now_us;
	s->run_last_us = now_us;
	return 0;
fail:
	rollback(s);
	/* Lives created in the failed transaction do not exist. */
	for (size_t i = 0; i < n_created; i++) {
		history_index_remove(&s->index, created_lives[i]);
		history_life_free(created_lives[i]);
	}
	/* The next recording compares against the same last points. */
	forget_seen(&s->index, gen);
	return r;
}

void history_record_clear(struct history_record *r)
{
	free(r->path);
	r->path = NULL;
}

/* The field of `final` where it is known, else the life's last value. */
static int64_t known(int64_t v, int64_t last)
{
	return v != HISTORY_UNKNOWN ? v : last;
}

int history_store_removed(struct history_store *s, const struct history_key *key, const struct history_values *final,
			  int64_t final_cpu_usec_bound, uint64_t now_us, struct history_record *ret, char **ret_error)
{
	if (s->readonly)
		return -EROFS;
	/* A removal after a stall: its final point begins the new run, so
	 * that the life's values are not held over the stall up to it. */
	int r = split_if_stalled(s, now_us, ret_error);
	if (r < 0)
		return r;
	struct history_life *l = history_index_get(&s->index, key->path, key->inode);
	if (!l) {
		set_error(ret_error, "%s: no life of it in the history", key->path);
		return -ENOENT;
	}
	struct history_values v = *final;
	if (l->has_last) {
		v.cpu_usec = known(v.cpu_usec, l->last.cpu_usec);
		v.memory_bytes = known(v.memory_bytes, l->last.memory_bytes);
		v.memory_peak_bytes = known(v.memory_peak_bytes, l->last.memory_peak_bytes);
		v.io_read_bytes = known(v.io_read_bytes, l->last.io_read_bytes);
		v.io_write_bytes = known(v.io_write_bytes, l->last.io_write_bytes);
		v.tasks = known(v.tasks, l->last.tasks);
	}
	/* The final point holds for no time: it is where the life ends. */
	if (now_us < l->first_seen_us)
		now_us = l->first_seen_us;
	_cleanup_finalize_ sqlite3_stmt *ins = NULL, *upd = NULL;
	r = prepare(s, INSERT_POINT_SQL, &ins, ret_error);
	if (r >= 0)
		r = prepare(s,
			    "UPDATE lives SET removed_us = ?, rec_cpu_usec = ?, rec_memory_peak_bytes = ?,"
			    " rec_memory_byte_seconds = ?, rec_memory_byte_seconds_bound = ?, rec_io_read_bytes = ?,"
			    " rec_io_write_bytes = ?, rec_recorded_us = ?, final_cpu_usec_bound = ? WHERE id = ?",
			    &upd, ret_error);
	if (r < 0)
		return r;
	r = exec(s, "BEGIN IMMEDIATE", "recording a removal", ret_error);
	if (r < 0)
		return r;
	r = insert_point(s, ins, l->id, now_us, &v, ret_error);
	if (r < 0)
		goto fail;
	/* The run's last recording stays where it is: a removal observes
	 * this life only, and moving the run's end to it would stretch every
	 * other life's held values over time nobody recorded (history_tail_end()
	 * takes a life's values to its final point). */
	struct history_life_totals t;
	r = history_life_totals(s, l->id, l->first_seen_us, now_us + 1, now_us, &t, ret_error);
	if (r < 0)
		goto fail;
	struct history_record rec = {
		.first_seen_us = l->first_seen_us,
		.removed_us = now_us,
		.cpu_usec = v.cpu_usec,
		.cpu_usec_bound = v.cpu_usec != HISTORY_UNKNOWN ? MAX(final_cpu_usec_bound, (int64_t)0) : 0,
		.memory_peak_bytes = v.memory_peak_bytes != HISTORY_UNKNOWN ? v.memory_peak_bytes : t.memory_max,
		.memory_byte_seconds = t.memory_integral / 1e6,
		.memory_byte_seconds_bound = t.memory_bound / 1e6,
		.io_read_bytes = v.io_read_bytes,
		.io_write_bytes = v.io_write_bytes,
		.recorded_us = t.recorded_us,
	};
	sqlite3_bind_int64(upd, 1, (int64_t)now_us);
	history_bind_value(upd, 2, rec.cpu_usec);
	history_bind_value(upd, 3, rec.memory_peak_bytes);
	sqlite3_bind_double(upd, 4, rec.memory_byte_seconds);
	sqlite3_bind_double(upd, 5, rec.memory_byte_seconds_bound);
	history_bind_value(upd, 6, rec.io_read_bytes);
	history_bind_value(upd, 7, rec.io_write_bytes);
	sqlite3_bind_int64(upd, 8, (int64_t)rec.recorded_us);
	if (rec.cpu_usec_bound > 0)
		sqlite3_bind_int64(upd, 9, rec.cpu_usec_bound);
	else
		sqlite3_bind_null(upd, 9);
	sqlite3_bind_int64(upd, 10, l->id);
	int rc = sqlite3_step(upd);
	if (rc != SQLITE_DONE) {
		r = history_sqlite_error(s->db, rc, "recording a removal", ret_error);
		goto fail;
	}
	r = exec(s, "COMMIT", "recording a removal", ret_error);
	if (r < 0)
		goto fail;
	s->last_us = MAX(s->last_us, now_us);
	struct history_removed_life *m = reallocarray(s->removed, s->n_removed + 1, sizeof(*s->removed));
	if (m) {
		s->removed = m;
		s->removed[s->n_removed++] = (struct history_removed_life){ l->id, now_us };
	} else
		s->started_us = UINT64_MAX; /* the rollups then visit every life */
	history_index_remove(&s->index, l);
	/* history_index_remove() hashes the path: it is taken only now. */
	rec.path = TAKE_PTR(l->path);
	history_life_free(l);
	*ret = rec;
	return 0;
fail:
	rollback(s);
	return r;
}

int history_store_record(struct history_store *s, uint64_t now_us, const struct history_sample *samples, size_t n,
			 char **ret_error)
{
	return record_samples(s, now_us, samples, n, true, ret_error);
}

int history_store_removed_unrecorded(struct history_store *s, const struct history_sample *final,
				     int64_t final_cpu_usec_bound, uint64_t now_us, struct history_record *ret,
				     char **ret_error)
{
	int r = split_if_stalled(s, now_us, ret_error); /* its one point in the new run */
	if (r < 0)
		return r;
	if (history_index_get(&s->index, final->key.path, final->key.inode))
		return history_store_removed(s, &final->key, &final->v, final_cpu_usec_bound, now_us, ret, ret_error);
	r = record_samples(s, now_us, final, 1, false, ret_error);
	if (r < 0)
		return r;
	return history_store_removed(s, &final->key, &final->v, final_cpu_usec_bound, now_us, ret, ret_error);
}

struct history_store *history_store_close(struct history_store *s, uint64_t now_us)
{
	if (!s)
		return NULL;
	if (!s->readonly && s->db) {
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(s->db, "UPDATE runs SET ended_us = ? WHERE id = ?", -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, (int64_t)MAX(now_us, s->last_us));
			sqlite3_bind_int64(st, 2, s->run);
			(void)sqlite3_step(st);
		}
		sqlite3_finalize(st);
	}
	return store_free(s);
}

static uint64_t file_bytes(struct history_store *s)
{
	int64_t pages = 0, page_size = 0;
	if (query_int(s, "PRAGMA page_count", &pages, NULL) < 0 ||
	    query_int(s, "PRAGMA page_size", &page_size, NULL) < 0)
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
	*ret = (struct history_stats){ .file_bytes = file_bytes(s), .schema_version = HISTORY_SCHEMA_VERSION };
	int64_t v;
	int r = query_int(s, "SELECT count(*) FROM lives", &v, NULL);
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
		r = prepare(s, count_sql[res], &st, NULL);
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

/* Summarise the rows of res - 1 into res's buckets in [from, to) for every
 * life with rows there (a life without is covered by the tail of its last
 * bucket: change-only, like the points). */
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
		int r = prepare(s,
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
	int r = prepare(s, "SELECT coalesce(removed_us, 0) FROM lives WHERE id = ?", &removed, ret_error);
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

/* Drop res's data before `cutoff` (one row per living life stays: see above). */
static int prune(struct history_store *s, enum history_resolution res, uint64_t cutoff, char **ret_error)
{
	int64_t data_from;
	int r = history_meta_get(s, data_from_key[res], &data_from, ret_error);
	if (r < 0)
		return r;
	if ((int64_t)cutoff <= data_from)
		return 0;
	_cleanup_finalize_ sqlite3_stmt *gone_lives = NULL, *all = NULL, *older = NULL;
	r = prepare(s, delete_sql[res][0], &all, ret_error);
	if (r >= 0)
		r = prepare(s, delete_sql[res][1], &older, ret_error);
	if (r >= 0)
		r = prepare(s, "SELECT id FROM lives WHERE removed_us >= ?1 AND removed_us < ?2", &gone_lives, ret_error);
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
	r = meta_set(s, data_from_key[res], (int64_t)cutoff, ret_error);
	if (r < 0)
		return r;
	/* Lives all of whose data is gone, in every resolution. */
	int64_t oldest = INT64_MAX;
	for (int i = 0; i < _HISTORY_RESOLUTION_MAX; i++) {
		int64_t v;
		r = history_meta_get(s, data_from_key[i], &v, ret_error);
		if (r < 0)
			return r;
		oldest = MIN(oldest, v);
	}
	_cleanup_finalize_ sqlite3_stmt *gone = NULL;
	r = prepare(s, "DELETE FROM lives WHERE removed_us < ?", &gone, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_int64(gone, 1, oldest);
	rc = sqlite3_step(gone);
	return rc == SQLITE_DONE ? 0 : history_sqlite_error(s->db, rc, "dropping old lives", ret_error);
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
		r = history_meta_get(s, rolled_key[res], &rolled[res], ret_error);
		if (r < 0)
			return r;
		const uint64_t len = history_bucket_us[res];
		uint64_t to = complete - complete % len;
		to = MIN(to, (uint64_t)rolled[res] + rollup_batch_buckets[res] * len);
		if (to > (uint64_t)rolled[res]) {
			r = rollup(s, res, (uint64_t)rolled[res], to, runs, (size_t)n_runs, ret_error);
			if (r >= 0)
				r = meta_set(s, rolled_key[res], (int64_t)to, ret_error);
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
		r = history_meta_get(s, data_from_key[res], &data_from, ret_error);
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
	int r = exec(s, "PRAGMA incremental_vacuum", "shrinking", ret_error);
	if (r < 0)
		return r;
	return exec(s, "PRAGMA wal_checkpoint(TRUNCATE)", "shrinking", ret_error);
}

static int enforce_size_cap(struct history_store *s, uint64_t now_us, char **ret_error)
{
	/* The oldest time of each resolution's data (a scan: the cap is rare). */
	static const char *const oldest_sql[_HISTORY_RESOLUTION_MAX] = {
		"SELECT min(t_us) FROM points",
		"SELECT min(t_us) FROM rollups WHERE res = 1",
		"SELECT min(t_us) FROM rollups WHERE res = 2",
	};
	for (int round = 0; round < 16 && file_bytes(s) > s->limits.max_bytes; round++) {
		/* The oldest data, whatever its resolution. */
		int oldest_res = -1;
		int64_t oldest = INT64_MAX;
		for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
			_cleanup_finalize_ sqlite3_stmt *st = NULL;
			int64_t from;
			int r = prepare(s, oldest_sql[res], &st, ret_error);
			if (r >= 0)
				r = history_meta_get(s, data_from_key[res], &from, ret_error);
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
		int r = exec(s, "BEGIN IMMEDIATE", "size cap", ret_error);
		if (r < 0)
			return r;
		r = prune(s, oldest_res, cutoff, ret_error);
		if (r >= 0)
			r = exec(s, "COMMIT", "size cap", ret_error);
		if (r < 0) {
			rollback(s);
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
	int r = exec(s, "BEGIN IMMEDIATE", "upkeep", ret_error);
	if (r < 0)
		return r;
	r = maintain_tx(s, now_us, ret_error);
	if (r >= 0)
		r = exec(s, "COMMIT", "upkeep", ret_error);
	if (r < 0) {
		rollback(s);
		return r;
	}
	if (s->limits.max_bytes > 0)
		return enforce_size_cap(s, now_us, ret_error);
	return 0;
}
