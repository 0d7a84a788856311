/* history-open.c - the history store's file (history-store.h): opening it
 * (recognising what the file is, setting aside one that is not ours or is
 * damaged, migrating an older schema, the index of this boot's lives) and
 * closing it. The schema lives here, as the migrations that build it.
 * Calls history-record.c (the run an open starts) and history-sql.c.
 *
 * Durability. WAL with synchronous=NORMAL: a commit is in the WAL file when
 * it returns, so a process killed at any moment (SIGKILL) loses nothing
 * committed and never corrupts the file (SQLite's atomic commit); only a
 * power cut can lose the last commits, never the file's consistency. Each
 * call is one transaction. */
#include "history-store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/strv.h"
#include "basic/util.h"
#include "history-record.h"
#include "history-sql.h"

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
	{ 5,
	  /* Charged resources (docs/charges.md, "History"): a life's subtree
	   * value of resource `resource` and its bound, a row when either
	   * changed, as points are for the kernel's quantities. A table of
	   * its own keyed by the resource's name: the declared resources are
	   * the operator's, not the schema's. */
	  "CREATE TABLE charge_points (life INTEGER NOT NULL, resource TEXT NOT NULL, t_us INTEGER NOT NULL,"
	  "  run INTEGER NOT NULL, value INTEGER NOT NULL, bound INTEGER NOT NULL,"
	  "  PRIMARY KEY (life, resource, t_us)) WITHOUT ROWID;" },
};

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
			history_set_error(ret_why, "reading the schema of table %s: %s", table, strerror(-r));
			return r;
		}
		if (strv_equal(have, want))
			continue;
		const char *missing = first_missing(want, have);
		const char *unknown = first_missing(have, want);
		if (!have)
			history_set_error(ret_why, "schema version %d without its table %s", version, table);
		else if (missing)
			history_set_error(ret_why, "schema version %d, but table %s has no column %s", version, table, missing);
		else if (unknown)
			history_set_error(ret_why, "schema version %d, but table %s has a column %s it does not define", version,
					  table, unknown);
		else
			history_set_error(ret_why, "schema version %d, but the columns of table %s are in another order", version,
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
	int r = history_query_int(s, "PRAGMA application_id", &app, &what);
	if (r >= 0)
		r = history_query_int(s, "PRAGMA user_version", &version, &what);
	if (r >= 0)
		r = history_query_int(s, "SELECT count(*) FROM sqlite_master", &tables, &what);
	if (r == -EIO) {
		/* SQLITE_NOTADB, SQLITE_CORRUPT: not a database we can read. */
		history_set_error(ret_error, "%s", what ? what : "unreadable");
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
		r = history_prepare(s, "PRAGMA quick_check(1)", &st, ret_error);
		if (r < 0)
			return r;
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0) {
			r = check_tables(s, (int)version, ret_error);
			if (r < 0)
				return r;
			*ret_kind = r == 0 ? FILE_OURS : FILE_CORRUPT;
		} else {
			history_set_error(ret_error, "integrity check: %s",
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
		history_set_error(ret_error, "%s: %s", dir, strerror(errno));
		return r;
	}
	uid_t me = geteuid();
	if ((st.st_uid != me && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		history_set_error(ret_error,
				  "its directory %s is owned by uid %u with mode %04o: it must be owned by acctd's user (uid %u) "
				  "or root and not writable by group or others, who could put a symlink or a file of theirs in "
				  "the history's place",
				  dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)me);
		return -EPERM;
	}
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		history_set_error(ret_error, "it is a symbolic link, which the history is never opened through");
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
			history_set_error(ret_error, "%s is a symbolic link: the history is not opened through one", s->path);
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
		history_set_error(ret_error, "renaming %s to %s: %s", s->path, to, strerror(errno));
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
		r = history_exec(s, migrations[i].sql, "migrating", ret_error);
		if (r < 0)
			return r;
	}
	_cleanup_free_ char *pragmas = NULL;
	if (asprintf(&pragmas, "PRAGMA application_id = %d; PRAGMA user_version = %d", HISTORY_APPLICATION_ID,
		     HISTORY_SCHEMA_VERSION) < 0) {
		return -ENOMEM;
	}
	r = history_exec(s, pragmas, "migrating", ret_error);
	if (r < 0)
		return r;
	/* Nothing has been dropped yet (data_from 0); rollups start with the
	 * oldest data: now for a new file, the first run of an older one. */
	int64_t oldest = 0;
	if (from >= 1) {
		r = history_query_int(s, "SELECT min(started_us) FROM runs", &oldest, ret_error);
		if (r < 0)
			return r;
	}
	if (oldest <= 0)
		oldest = (int64_t)now_us;
	for (int res = 0; res < _HISTORY_RESOLUTION_MAX; res++) {
		r = history_meta_set(s, history_data_from_key[res], 0, ret_error);
		if (r >= 0 && history_rolled_key[res])
			r = history_meta_set(s, history_rolled_key[res], oldest - oldest % (int64_t)history_bucket_us[res], ret_error);
		if (r < 0)
			return r;
	}
	return 0;
}

/* From schema `from` (0: an empty file) to this acctd's, in one transaction. */
static int migrate(struct history_store *s, int from, uint64_t now_us, char **ret_error)
{
	int r = history_exec(s, "BEGIN IMMEDIATE", "migrating", ret_error);
	if (r < 0)
		return r;
	r = migrate_tx(s, from, now_us, ret_error);
	if (r >= 0)
		r = history_exec(s, "COMMIT", "migrating", ret_error);
	if (r < 0)
		history_rollback(s);
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
	int r = history_prepare(s,
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
		history_set_error(ret_error, "invalid boot id or interval");
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
			history_set_error(ret_error, "%s: not writable: %s", need[i], strerror(errno));
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
		history_set_error(ret_error, "%s: %s", path, why ? why : "unreadable");
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
		r = history_exec(s, "PRAGMA auto_vacuum = INCREMENTAL", "creating", ret_error);
		if (r < 0)
			return r;
	}
	_cleanup_finalize_ sqlite3_stmt *wal = NULL;
	r = history_prepare(s, "PRAGMA journal_mode = WAL", &wal, ret_error);
	if (r < 0)
		return r;
	int rc = sqlite3_step(wal);
	if (rc != SQLITE_ROW)
		return history_sqlite_error(s->db, rc, "WAL mode", ret_error);
	if (strcmp((const char *)sqlite3_column_text(wal, 0), "wal") != 0) {
		history_set_error(ret_error, "%s: WAL mode refused (journal mode %s)", path, sqlite3_column_text(wal, 0));
		return -EIO;
	}
	sqlite3_reset(wal);
	/* NORMAL is durable against a crash of the process in WAL mode; the WAL
	 * is cut back after checkpoints so it does not keep its high mark. */
	r = history_exec(s, "PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = 4194304", "opening", ret_error);
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
		r = history_query_int(s, "PRAGMA auto_vacuum", &av, ret_error);
		if (r >= 0 && av != 2)
			r = history_exec(s, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM", "migrating", ret_error);
		if (r < 0)
			return r;
	}
	/* The lives first (a read), the run last: a run committed by an open
	 * that then failed would stay behind, and the next open would take it
	 * for an earlier run of this boot, so every cgroup found at its start
	 * would count as created while acctd was down, from zero. */
	r = load_lives(s, ret_error);
	if (r < 0)
		return r;
	r = history_run_start(s, now_us, ret_error);
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
		history_set_error(ret_error, "%s: %s", path, strerror(errno));
		return r;
	}
	r = db_open(s, SQLITE_OPEN_READONLY, ret_error);
	if (r < 0)
		return r;
	int64_t app = 0, version = 0;
	r = history_query_int(s, "PRAGMA application_id", &app, ret_error);
	if (r >= 0)
		r = history_query_int(s, "PRAGMA user_version", &version, ret_error);
	if (r < 0)
		return r;
	if (app != HISTORY_APPLICATION_ID || version != HISTORY_SCHEMA_VERSION) {
		history_set_error(ret_error, "%s: not an acctd history of schema %d (application id %#" PRIx64 ", version %" PRId64 ")",
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
