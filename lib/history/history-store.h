/* history-store.h - what every cgroup used over time, kept in a SQLite
 * database so that it outlives acctd's restarts and the cgroups themselves.
 *
 * Model (docs/history.md says the same for users).
 * - A *run* is one life of acctd: from history_store_open() (started_us) to
 *   its last recording (last_us), ended_us when it closed cleanly. Time
 *   outside every run is a *gap*: nothing is known of it and nothing is
 *   interpolated across it. A run is recorded at a fixed interval
 *   (interval_us), which bounds what a recording can have missed.
 * - A *life* is one incarnation of a cgroup: its path and its key (the boot
 *   id and the cgroup's inode, which the kernel does not reuse while the
 *   cgroup exists), from first_seen_us to removed_us. A life continues across
 *   runs of the same boot when a recording names the same path and key; a
 *   cgroup removed and created again under the same path is a new life.
 * - A *point* is a life's values at one recording: cumulative CPU time,
 *   memory, the kernel's memory peak, cumulative I/O bytes, tasks. A point is
 *   stored only when a value changed since the life's last point (an idle
 *   cgroup costs nothing per interval); within a run a value holds from its
 *   point to the next one.
 * - Rollups: points older than the raw retention are summarised into
 *   1-minute, then 1-hour buckets per life (CPU and I/O at the bucket's end,
 *   memory's integral, minimum and maximum over the bucket, covered time),
 *   each resolution kept for its own retention. The size cap drops the
 *   oldest data first, whatever its resolution (history_store_maintain()).
 *
 * Times are CLOCK_REALTIME microseconds (they must mean the same after a
 * restart or a reboot). Values acctd did not read are HISTORY_UNKNOWN.
 *
 * Threads. A store is used by one thread at a time (acctd's recorder thread
 * owns the writing store; queries open their own read-only store on the same
 * file: WAL lets them read while the writer writes).
 *
 * Errors. Functions return 0 or a negative errno, and where a person needs
 * the reason, a message in *ret_error (malloc()ed, the caller frees; set only
 * on failure): -ENOSPC (disk full), -EROFS / -EACCES (read-only or not
 * writable), -EIO (SQLite's I/O or corruption errors), -ENOMEM. A failed
 * recording changes nothing in the file (one transaction per call). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HISTORY_UNKNOWN INT64_MIN

enum history_resolution {
	HISTORY_RAW,    /* every point as recorded */
	HISTORY_MINUTE, /* 1-minute buckets */
	HISTORY_HOUR,   /* 1-hour buckets */
	_HISTORY_RESOLUTION_MAX,
};

struct history_limits {
	uint64_t retention_us[_HISTORY_RESOLUTION_MAX]; /* how long each resolution is kept */
	uint64_t max_bytes;                              /* the file's size cap (0: none) */
};

/* The identity of a cgroup's life. */
struct history_key {
	const char *path;  /* as the ledger keeps it: "/" for the root */
	uint64_t inode;    /* the cgroup directory's inode (v2, else the first v1 hierarchy) */
};

/* One life's values at one recording. */
struct history_values {
	int64_t cpu_usec;          /* cumulative since the cgroup's creation */
	int64_t memory_bytes;
	int64_t memory_peak_bytes; /* the kernel's peak since creation (memory.peak,
				    * memory.max_usage_in_bytes) */
	int64_t io_read_bytes;     /* cumulative */
	int64_t io_write_bytes;    /* cumulative */
	int64_t tasks;
};

struct history_sample {
	struct history_key key;
	struct history_values v;
	/* Whether acctd saw the cgroup being created (it appeared while acctd
	 * was running), so that its cumulative counters started at 0 at about
	 * its first recording. Else (found when acctd started, after a gap) its
	 * counters hold what it used before, at a time nobody recorded: its
	 * first point is only a baseline. Read for a new life only: a life that
	 * continues keeps what its first recording said. */
	bool created_seen;
};

struct history_store;

/* What open found and did, for Status and the log. */
struct history_open_info {
	bool created;            /* a new file */
	bool migrated;           /* from schema version from_version */
	int from_version;
	char *set_aside;         /* a corrupt or foreign file was renamed to this path (malloc()ed) */
	char set_aside_why[256]; /* why, for a person ("" when nothing was set aside) */
};

/* Open (create if missing) the store at `path` for writing, start a run at
 * now_us recorded every interval_us, on the boot `boot_id` (32 hex digits:
 * /proc/sys/kernel/random/boot_id without dashes). Sets WAL mode. A file that
 * is not an acctd history (another application's database, not SQLite at
 * all, a schema newer than this acctd's), that fails SQLite's integrity
 * check, or whose tables are not those its schema version makes (a column
 * missing) is renamed to PATH.corrupt-<unix seconds> and a new store is
 * created (info->set_aside, info->set_aside_why);
 * a store of an older schema is migrated in one transaction. Ends a previous
 * run that did not close (SIGKILL) at its last recording. Never through a
 * symlink (-ELOOP), and only in a directory that acctd's user or root owns
 * and group and others cannot write (-EPERM otherwise: they could plant a
 * symlink or a file of theirs there). Returns 0, or -ENOSPC, -EROFS,
 * -EACCES, -ELOOP, -EPERM, -EIO, -ENOMEM with *ret_error. */
int history_store_open(const char *path, const char *boot_id, uint64_t now_us, uint64_t interval_us,
		       const struct history_limits *limits, struct history_store **ret,
		       struct history_open_info *info, char **ret_error);

/* Open an existing store read-only for queries (another thread's, or a
 * process's). -ENOENT if there is none; -ELOOP and -EPERM as
 * history_store_open(). */
int history_store_open_readonly(const char *path, struct history_store **ret, char **ret_error);

/* Change the limits (a reload). */
void history_store_set_limits(struct history_store *s, const struct history_limits *limits);

/* A recording (or a removal) more than HISTORY_STALL_INTERVALS intervals
 * after the run's last recording comes after a stall: a blocked recorder
 * thread, a slow disk, SIGSTOP, a suspended machine. Nobody recorded the
 * time in between, so the store ends the run at its last recording and
 * starts a new one (of the same boot, its lives continuing) at now_us: the
 * stall is a gap, as acctd's downtime is, never the last values held over
 * it (which would show a flat, covered stretch that never was, and bounds
 * the length of the stall). acctd's Status calls the recorder "stalled"
 * past the same bound. A step of exactly that many intervals (recordings
 * replaced while one was written) is still a step. */
#define HISTORY_STALL_INTERVALS 3

/* Record the cgroups that exist at now_us: a point for each whose values
 * changed since its life's last point (or that is new), the run's last_us
 * moved to now_us. After a stall (HISTORY_STALL_INTERVALS) a new run is
 * started first and every life gets a point in it. One transaction (two
 * after a stall: the new run is committed on its own); on failure no point
 * is written and the next call records against the same last points. Cost:
 * O(n) with an in-memory index of the lives of this run; n = 10,000 with
 * 10% changing writes ~1,000 rows. */
int history_store_record(struct history_store *s, uint64_t now_us, const struct history_sample *samples, size_t n,
			 char **ret_error);

/* A life's totals, written once when its cgroup is removed (the accounting
 * record) and returned by history_store_removed(). */
struct history_record {
	char *path;
	uint64_t first_seen_us, removed_us;
	int64_t cpu_usec;              /* its whole life's CPU time (final point) */
	int64_t cpu_usec_bound;        /* how much more it may have used (0: final) */
	int64_t memory_peak_bytes;     /* the kernel's peak, else the largest point */
	double memory_byte_seconds;    /* integral over the time it was recorded */
	double memory_byte_seconds_bound; /* see struct history_usage */
	int64_t io_read_bytes, io_write_bytes;
	uint64_t recorded_us;          /* time of its life acctd was recording (gaps excluded) */
};
void history_record_clear(struct history_record *r);

/* The cgroup `key` was removed at now_us with final values `final` (its
 * tombstone's). Ends its life and returns its totals in *ret (clear with
 * history_record_clear()). -ENOENT if the store has no life of it.
 * final_cpu_usec_bound: 0 when `final` was read after its last task left
 * (nothing more can be charged), else how much more CPU time it may have
 * used between that read and its removal (the time between them times the
 * CPUs it could run on); kept with the life, it is the bound of the final
 * point's CPU time in every usage that ends the life (history_usage). */
int history_store_removed(struct history_store *s, const struct history_key *key, const struct history_values *final,
			  int64_t final_cpu_usec_bound, uint64_t now_us, struct history_record *ret, char **ret_error);
/* The same for a cgroup that may have been created and removed between two
 * recordings (no life of it in the store): its life is recorded from its
 * final values alone and ended, and the run's last recording stays where it
 * is (moving it to the removal would hold every other life's values over
 * time nobody recorded, their CPU then counted short as exact). */
int history_store_removed_unrecorded(struct history_store *s, const struct history_sample *final,
				     int64_t final_cpu_usec_bound, uint64_t now_us, struct history_record *ret,
				     char **ret_error);

/* Rollups, retention and the size cap, at now_us. Bounded work per call
 * (the recorder calls it after recordings). Returns 0 or an error. */
int history_store_maintain(struct history_store *s, uint64_t now_us, char **ret_error);

/* End the run cleanly at now_us and close. Accepts NULL; returns NULL. */
struct history_store *history_store_close(struct history_store *s, uint64_t now_us);

/* ---- queries ------------------------------------------------------------ */

/* What a cgroup (a path, all its lives in the window) used over [since, until).
 * Bounds are |value - exact| <= bound where the data allows one:
 *  - cpu_usec: exact between two points of one life (cumulative counters,
 *    across acctd's restarts too); at each end of the window the value lies
 *    between the points around it, so the bound is their difference, except:
 *    the final point's own bound when a life ends inside the window (0 where
 *    it was read after the last task left, else final_cpu_usec_bound of
 *    history_store_removed()); 0 when
 *    it begins inside the window and acctd saw it created (created_seen: the
 *    kernel's counter starts at 0, and when it was found at a start of the
 *    same boot as a run that did not record it: created after that run's
 *    last recording, at or after the window's start), when it begins inside the window but
 *    existed before (counted from its first point: what it used before is
 *    not known to be the window's; for one created while acctd was down
 *    that may lie in the window, and is its bound), at an end that is a point's own
 *    recording, and when the points around
 *    the end, p_i at t_i and p_j at t_j, are consecutive points of one run and
 *    the end is at or before t_j - max_step, the run's longest time between
 *    two recordings (kept in runs.max_step_us; the interval unless the
 *    recorder was held up): every recording of the run between them saw p_i's
 *    values (history_store_record() is given every cgroup that exists and
 *    writes a point whenever a value changed), the last one at or after
 *    t_j - max_step, and the counter never goes back, so the value at the end
 *    is exactly p_i's. An end inside that last step, across a gap or a
 *    restart, in rollups, or in a run of schema 2 or before keeps the
 *    difference.
 *  - memory_byte_seconds: the integral of memory over recorded_us, a value
 *    held until the next point; between a recording that saw m1 and the next
 *    that saw m2 the value moved at most |m2 - m1|, within one interval: the
 *    bound is the sum of |m2 - m1| x interval, or (p - m1) x interval where
 *    the kernel's peak rose to p between them (memory reached p then);
 *    otherwise memory is assumed to move between two recordings without
 *    overshooting both (docs/history.md).
 *  - memory_max_bytes: the largest value recorded in the window (a lower bound
 *    of the true peak); memory_peak_bytes the kernel's own peak since
 *    creation, only for lives acctd saw created in the window (else
 *    HISTORY_UNKNOWN). */
struct history_usage {
	char *path;
	unsigned lives;                 /* lives of this path that overlap the window */
	uint64_t first_seen_us;         /* of the first life in the window */
	uint64_t removed_us;            /* of the last life, 0 if it still exists */
	unsigned subtree_paths;         /* group_level: the paths below it with a life in the
					 * window (0 otherwise) */
	int64_t cpu_usec;
	int64_t cpu_usec_bound;
	double memory_byte_seconds;
	double memory_byte_seconds_bound;
	uint64_t recorded_us;           /* time in the window with data (gaps and time before
					 * first_seen or after removal excluded) */
	int64_t memory_max_bytes;
	int64_t memory_peak_bytes;
	int64_t io_read_bytes, io_write_bytes; /* deltas, bounds as cpu_usec's */
	bool cpu_clipped;               /* cpu_usec and its bound were cut to cpus x the window
					 * (history_usage_query.cpus): the points allowed more */
	enum history_resolution resolution; /* the finest data the answer used: HISTORY_RAW when
					     * it is as exact as the points would make it (whole
					     * buckets of rollups give the same answer), else the
					     * coarsest resolution a part of the window had left */
};
void history_usage_clear(struct history_usage *u);

struct history_usage_query {
	uint64_t since_us, until_us;
	const char *prefix;   /* "/" for all; a path matches the prefix itself and below
			       * at a component boundary */
	int depth;            /* levels below the prefix (-1: any) */
	bool include_removed; /* lives removed in (or before the end of) the window */
	int group_level;      /* 0: a row per path; else a row per path at this level below the root
			       * ("/system.slice" 1, "/system.slice/x.service" 2), with the totals of its own lives, which the
			       * kernel's hierarchical counters make its subtree's; deeper paths are only
			       * counted in its subtree_paths. Paths above the level are left out, as is
			       * a group whose own path has no life in the window. */
	unsigned cpus;        /* the CPUs a cgroup can run on (0: not known). No CPU total of a
			       * window exceeds cpus x its length: where the points around an end
			       * are far apart (a gap, a stall) and value + bound says more, the
			       * answer is what that limit and the points allow. */
};

/* Usage per path, sorted by path, into a new array (history_usage_array_free()).
 * Returns the count (0 for a prefix with lives, none in the window or at the
 * group level), -ENOENT for a prefix other than "/" that no life ever had, or
 * another negative errno. */
int history_store_usage(struct history_store *s, const struct history_usage_query *q, struct history_usage **ret,
			char **ret_error);
void history_usage_array_free(struct history_usage *u, size_t n);

/* Gaps in [since, until): times no run was recording. */
struct history_gap {
	uint64_t from_us, to_us;
};
int history_store_gaps(struct history_store *s, uint64_t since_us, uint64_t until_us, struct history_gap **ret,
		       char **ret_error);

/* One step of a history series: over [t_us, t_us + step). A step with no data
 * (a gap, or before the cgroup existed) has covered_us == 0 and unknown
 * values. cpu_cores: CPU time in the step / covered time, each increase
 * between two points spread evenly over the time it can have happened in
 * (docs/history.md, "Series"). Memory: mean
 * (integral / covered), min and max of the values held in the step. */
struct history_step {
	uint64_t t_us;
	uint64_t covered_us;
	double cpu_cores;
	double memory_mean_bytes;
	int64_t memory_min_bytes, memory_max_bytes;
	double io_read_bytes_per_s, io_write_bytes_per_s;
	int64_t tasks_max;
	bool cpu_clipped; /* cpu_cores was more than the CPUs and cut to them (history_series_cap_cpu()) */
};

/* The series of `path` (its lives in the window, one after another) from
 * since_us to until_us in steps of step_us (the last may be shorter), at
 * most 100,000 steps (-E2BIG beyond). Returns the count; -ENOENT when the
 * store has no life of `path` at any time (a life outside the window gives
 * steps without data). */
int history_store_series(struct history_store *s, const char *path, uint64_t since_us, uint64_t until_us,
			 uint64_t step_us, struct history_step **ret, char **ret_error);

/* No cgroup uses more than the host's `cpus` CPUs (0: not known, nothing
 * done): a step of a series whose cpu_cores is more (an increase spread over
 * the time between two points that were not read where they were recorded,
 * a step shorter than that spread) is cut to `cpus`, and cpu_clipped says
 * so. Pure; O(n). */
void history_series_cap_cpu(struct history_step *steps, size_t n, unsigned cpus);

/* ---- charged resources (docs/charges.md, "History") --------------------- */

/* One charged cgroup's subtree value of one resource at a recording, with
 * its bound (|value - exact| <= bound when it was read). */
struct history_charge_sample {
	struct history_key key;
	const char *resource; /* the declared name, [a-z0-9_]+ */
	int64_t value;
	int64_t bound;
};

/* Record charged values at now_us, after history_store_record() of the same
 * recording (which makes the lives: a sample whose life the store does not
 * know, a cgroup not recorded yet, is skipped). A point is written for a
 * (life, resource) whose value or bound changed since its last point, or
 * whose last point is of another run (a run's first recording restates
 * every value: nothing holds across a gap). A value holds from its point to
 * the next one of the same run, to the run's last recording, or to the
 * life's removal. The caller names every (cgroup, resource) that has been
 * charged; one not named holds its last value. One transaction; on failure
 * nothing is written. Cost: an index lookup and one keyed SQLite read per
 * sample. Returns the points written, or a negative errno with *ret_error. */
int history_store_record_charges(struct history_store *s, uint64_t now_us, const struct history_charge_sample *samples,
				 size_t n, char **ret_error);

/* What a path (all its lives in the window, removed ones included) held of
 * a resource over [since, until): the integral of the recorded value over
 * the time it was recorded (value x seconds, in the resource's unit x s),
 * and its bound: each value's own bound x the time it held, plus, for each
 * change between two points of one run, |change| x the run's longest step
 * between recordings (the change happened at some time since the previous
 * recording, which saw the old value). Time before a life's first charge
 * point, in gaps, or after its removal is not covered (recorded_us). */
struct history_charge_usage {
	unsigned lives;        /* lives with charge points that overlap the window */
	uint64_t recorded_us;  /* time in the window with a value */
	double value_seconds;  /* the integral */
	double bound_seconds;  /* its bound */
	int64_t max_value;     /* the largest value held in the window (HISTORY_UNKNOWN: none) */
	uint64_t removed_us;   /* of the last life, 0 if it still exists */
};

/* One charge point as the store holds it: the value from t_us on, until
 * end_us (the next point, the run's last recording, or the removal). */
struct history_charge_point {
	uint64_t t_us, end_us;
	int64_t value, bound;
};

/* The integral of resource `resource` of `path` over [since, until) in
 * *ret. -ENOENT when the store has no charge point of that path and
 * resource at any time; 0 otherwise. */
int history_store_charge_usage(struct history_store *s, const char *path, const char *resource, uint64_t since_us,
			       uint64_t until_us, struct history_charge_usage *ret, char **ret_error);

/* The points of `path`'s resource that hold at some time in [since, until),
 * in time order, into a new array (free()); each end_us as above, never
 * beyond until_us, t_us never before since_us (clipped). Returns the count,
 * -ENOENT as history_store_charge_usage(), or another negative errno. */
int history_store_charge_points(struct history_store *s, const char *path, const char *resource, uint64_t since_us,
				uint64_t until_us, struct history_charge_point **ret, char **ret_error);

/* Queries that can be called off: while `stop` is set, it is
 * called every few thousand SQLite steps of `s`'s statements, on the thread
 * running them; once it returns nonzero the statement stops and the query
 * that ran it returns a negative errno (its answer is not to be used). A
 * query that nobody waits for any more then ends within microseconds,
 * whatever its size. stop NULL: no such calls. Costs one call per
 * HISTORY_PROGRESS_STEPS steps, far below a row's reading. */
#define HISTORY_PROGRESS_STEPS 4096
void history_store_set_stop(struct history_store *s, int (*stop)(void *userdata), void *userdata);

/* The file's size and what it holds, for Status and /metrics. */
struct history_stats {
	uint64_t file_bytes;        /* database + WAL */
	uint64_t lives, points[_HISTORY_RESOLUTION_MAX];
	uint64_t oldest_us[_HISTORY_RESOLUTION_MAX]; /* 0: none */
	int schema_version;
};
int history_store_stats(struct history_store *s, struct history_stats *ret);

/* The file's size alone (history_stats.file_bytes): two pragmas and a stat,
 * whatever the store holds, so a caller can take it after every recording;
 * history_store_stats() counts rows, a cost that grows with what is stored.
 * 0 when it cannot be read. */
uint64_t history_store_file_bytes(struct history_store *s);

/* What each open store may hold in memory. The page cache is on the heap
 * (at most HISTORY_CACHE_BYTES a store, filled as pages are used: a
 * daemon's writer and reader together take up to twice that within minutes
 * of recording many cgroups, then no more); the mapping is of the file, so
 * its pages are the page cache of the file, shared, reclaimable, counted in
 * VmRSS as RssFile once touched (at most HISTORY_MMAP_BYTES a store, never
 * more than the file). */
#define HISTORY_CACHE_BYTES (UINT64_C(16) << 20)
#define HISTORY_MMAP_BYTES (UINT64_C(256) << 20)

/* The bytes SQLite holds on the heap for every store of this process: page
 * caches, prepared statements, schemas. Any thread; O(1). */
uint64_t history_heap_bytes(void);
