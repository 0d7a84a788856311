/* sampler.h - reading cgroupfs into the ledger on worker threads.
 *
 * A pass reads, for a list of cgroups, the files of one or more groups:
 *   FAST: memory in use, CPU time and throttling, PSI, cgroup.events
 *   SLOW: memory.stat, memory.numa_stat, peak, limits, swap (and every fast
 *         file, so that empty cgroups are refreshed at least this often)
 *   LOAD: the cgroup's threads and their states, for the load average (O(threads))
 * on a fixed set of worker threads (bounded concurrency), never on the caller's
 * thread. Descriptors of the files are kept open between passes (pread at
 * offset 0 re-reads a cgroupfs file) as long as the descriptor limit allows;
 * past it the sampler opens and closes per read. A populated=0 cgroup (from
 * cgroup.events) is read once after it empties, then not at the fast interval
 * until it is populated again (its CPU rate is then 0). A complete read made
 * while it was empty is recorded as final (acct_cgroup_final()).
 *
 * A file that vanishes, holds garbage or cannot be read fails that value of
 * that cgroup for this pass (counted by reason), nothing else.
 *
 * During a pass the sampler owns every cgroup's sampler_state; the owner of the
 * ledger must not sweep records until the pass is collected. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup-layout.h"
#include "ledger.h"

enum acct_pass_flags {
	ACCT_PASS_FAST = 1 << 0,
	ACCT_PASS_SLOW = 1 << 1,
	ACCT_PASS_LOAD = 1 << 2,
	/* With FAST: a pass over a few cgroups the caller wants read now (their
	 * populated changed); read like FAST, the flag is for the caller's report. */
	ACCT_PASS_EVENT = 1 << 3,
};

enum acct_sample_error {
	ACCT_ERR_VANISHED,   /* ENOENT/ENODEV mid-read: the cgroup is going away */
	ACCT_ERR_GARBAGE,    /* the content did not parse */
	ACCT_ERR_UNREADABLE, /* EACCES, EISDIR, EIO, ... */
	ACCT_ERR_INVARIANT,  /* a cumulative value went backwards */
	_ACCT_ERR_MAX,
};
const char *acct_sample_error_to_string(enum acct_sample_error e);

#define ACCT_DRIFT_BUCKETS 48 /* log2 buckets: bucket k holds |drift| in [2^(k-1), 2^k) */

struct acct_drift_hist {
	uint64_t count;
	uint64_t max;
	uint64_t sum;
	uint64_t bucket[ACCT_DRIFT_BUCKETS];
};
/* Percentile (0..100) as the upper edge of the bucket that holds it. */
uint64_t acct_drift_percentile(const struct acct_drift_hist *h, double pct);
void acct_drift_add(struct acct_drift_hist *h, uint64_t v);
void acct_drift_merge(struct acct_drift_hist *into, const struct acct_drift_hist *from);

struct acct_pass_report {
	unsigned flags;
	uint64_t started_us, wall_us;
	double cpu_seconds;            /* user+system CPU of the workers for this pass */
	uint64_t cgroups;              /* cgroups in the pass */
	uint64_t skipped_empty;        /* fast files not read: cgroup not populated */
	uint64_t files_read;
	uint64_t open_per_read;        /* reads that could not use a cached descriptor */
	uint64_t errors[_ACCT_ERR_MAX];
	uint64_t cgroups_failed;       /* cgroups with at least one failed value */
	struct acct_drift_hist drift_memory; /* |new - ledger| bytes, per cgroup */
	struct acct_drift_hist drift_cpu;    /* usec of CPU the ledger had not seen yet */
};

struct acct_sampler_options {
	const struct acct_cgroup_layout *layout;
	unsigned workers;       /* >= 1 */
	long page_size;         /* 0: sysconf */
	long user_hz;           /* 0: sysconf */
	unsigned nr_cpus;       /* for usage_percpu; 0: the counter domain's shards */
	uint64_t max_cached_fds; /* 0: RLIMIT_NOFILE minus a reserve (1/8, at least 48) */
};

struct acct_sampler;

/* Start the worker threads. Returns 0, -EINVAL or a pthread error. */
int acct_sampler_new(const struct acct_sampler_options *opts, struct acct_ledger *ledger,
		     struct acct_sampler **ret);
/* Stop the workers (waiting for a pass in progress) and free the sampler. */
struct acct_sampler *acct_sampler_free(struct acct_sampler *s);

/* Start an asynchronous pass over cgs[0..n) (the array is copied). Returns 0 or
 * -EBUSY when a pass is running. Completion makes acct_sampler_fd() readable.
 * The calling thread, like the workers, is a sampling thread for this pass: a
 * LOAD pass counts it among its cgroup's threads but never as active. */
int acct_sampler_start(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n, unsigned flags,
		       uint64_t now_us);
/* An eventfd that becomes readable when a pass completes. */
int acct_sampler_fd(const struct acct_sampler *s);
bool acct_sampler_busy(const struct acct_sampler *s);
/* After completion: consume the eventfd, fill *report. Returns 0 or -EAGAIN when
 * the pass has not completed. */
int acct_sampler_collect(struct acct_sampler *s, struct acct_pass_report *report);
/* Start, wait and collect (for --dump and tests). */
int acct_sampler_run(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n, unsigned flags,
		     uint64_t now_us, struct acct_pass_report *report);

/* Hierarchical aggregation after a LOAD pass: each cgroup's tasks and load
 * average include those of its descendants that list their threads in the
 * same hierarchy (sampler.c, "Threads and load": each thread counted once, in
 * one hierarchy per cgroup). cgs must be all live cgroups sorted by path
 * (acct_ledger_snapshot()). Owner thread, no pass running. */
void acct_sampler_aggregate_load(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n,
				 uint64_t now_us);

/* Free a record's sampler state (closes its descriptors). Safe on records that
 * have none. Owner thread, no pass running (use as the ledger sweep callback). */
void acct_sampler_release(struct acct_cgroup *cg, void *userdata);

/* Descriptors currently cached, and whether the sampler has fallen back to
 * open-per-read because the limit was reached. */
void acct_sampler_fd_stats(const struct acct_sampler *s, uint64_t *ret_cached, bool *ret_degraded);

/* Raise RLIMIT_NOFILE's soft limit to its hard limit. Returns the new soft
 * limit or a negative errno. */
long acct_raise_nofile(void);
