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

#include "basic/histogram.h"
#include "bpf/bpf-collector.h"
#include "bpf/task-walk.h"
#include "cgroup/cgroup-layout.h"
#include "cgroup/memcg-bounds.h"
#include "ledger.h"

enum acct_pass_flags {
	ACCT_PASS_FAST = 1 << 0,
	ACCT_PASS_SLOW = 1 << 1,
	ACCT_PASS_LOAD = 1 << 2,
	/* With FAST: a pass over a few cgroups the caller wants read now (their
	 * populated changed); read like FAST, the flag is for the caller's report. */
	ACCT_PASS_EVENT = 1 << 3,
	/* Alone: the collector's memory values only, no file read (a short
	 * interval's pass, cheap where a file pass is not: sampler.c). */
	ACCT_PASS_KERNEL = 1 << 4,
};

/* A pass by what it read, for its costs (the dearest of its flags): a walk
 * alone (KERNEL), a pass of queued cgroups (EVENT), one with the slow
 * files (SLOW), one with the threads (LOAD), else a fast pass. */
enum acct_pass_kind { ACCT_KIND_FAST, ACCT_KIND_SLOW, ACCT_KIND_LOAD, ACCT_KIND_EVENT, ACCT_KIND_WALK, _ACCT_KIND_MAX };
enum acct_pass_kind acct_pass_kind_of(unsigned flags);
const char *acct_pass_kind_to_string(enum acct_pass_kind k);

enum acct_sample_error {
	ACCT_ERR_VANISHED,   /* ENOENT/ENODEV mid-read: the cgroup is going away */
	ACCT_ERR_GARBAGE,    /* the content did not parse */
	ACCT_ERR_UNREADABLE, /* EACCES, EISDIR, EIO, ... */
	ACCT_ERR_INVARIANT,  /* a cumulative value went backwards */
	_ACCT_ERR_MAX,
};
const char *acct_sample_error_to_string(enum acct_sample_error e);

/* What a pass did with each part of a cgroup's values (struct
 * acct_pass_report's parts[][]): read it (a file or a collector's record),
 * pruned it (proven unchanged without a read: an ancestor's cumulative
 * witness stood still, docs/counters.md, "Pruning"), or skipped it (not read
 * and not proven: the cgroup was empty at its last read, or the part was
 * not due). A part a cgroup has no source for is not counted. */
enum acct_pass_part {
	ACCT_PART_MEMORY, /* memory in use (and its events) */
	ACCT_PART_CPU,    /* CPU time, user/system, throttling */
	ACCT_PART_IO,     /* block I/O totals */
	ACCT_PART_PSI,    /* pressure stall totals and averages (skipped: not due,
			   * sampler.c, psi_due()) */
	ACCT_PART_LOAD,   /* threads and their states (LOAD passes) */
	ACCT_PART_MEMORY_STAT, /* the slow group: memory.stat, NUMA, peak, limits, swap
				* (slow passes; skipped: not due, sampler.c, slow_due()) */
	_ACCT_PART_MAX,
};
enum acct_part_outcome { ACCT_OUTCOME_READ, ACCT_OUTCOME_PRUNED, ACCT_OUTCOME_SKIPPED, _ACCT_OUTCOME_MAX };
const char *acct_pass_part_to_string(enum acct_pass_part p);
const char *acct_part_outcome_to_string(enum acct_part_outcome o);

struct acct_pass_report {
	unsigned flags;
	uint64_t started_us, wall_us;
	double cpu_seconds;            /* user+system CPU of the workers for this pass */
	uint64_t cgroups;              /* cgroups in the pass */
	uint64_t steady;               /* cgroups given a light visit: steady, their entry and record
					* prove nothing changed (sampler-steady.c) */
	uint64_t skipped_empty;        /* fast files not read: cgroup not populated */
	uint64_t empty_unread;         /* of them, cgroup.events not read either: empty since a read,
					* as its watch and memcg record say (sampler-prune.c,
					* sampler_empty_quiet()) */
	uint64_t parts[_ACCT_PART_MAX][_ACCT_OUTCOME_MAX]; /* cgroups, per part and outcome */
	uint64_t files_read;
	uint64_t open_per_read;        /* reads that could not use a cached descriptor */
	uint64_t errors[_ACCT_ERR_MAX];
	uint64_t cgroups_failed;       /* cgroups with at least one failed value */
	/* Drift distributions (histogram.h: percentiles within 1/64 of exact). */
	struct histogram drift_memory; /* |new - ledger| bytes, per cgroup */
	struct histogram drift_cpu;    /* usec of CPU the ledger had not seen yet */
	/* The last reading counted in errors[ACCT_ERR_INVARIANT], "PATH QUANTITY
	 * OLD -> NEW" (cut to fit); "" if none this pass. */
	char last_backwards[128];
	/* The BPF collector's share (zero without one). */
	uint64_t bpf_records;          /* records walked, all hierarchies */
	uint64_t bpf_walk_us;          /* wall time of the walks */
	uint64_t bpf_cgroups;          /* cgroups whose memory came from a record */
	uint64_t bpf_checks;           /* cross-checks against files (sampler-bpf.c, sampler_bpf_walk()) */
	uint64_t bpf_mismatches;       /* of them, values outside what the timing explains */
	uint64_t bpf_fallbacks;        /* quantities moved back to files by this pass */
	uint64_t bpf_stat_reads;       /* memory.stat files read because a record's unflushed
					* updates exceeded bytes_budget or were uncounted
					* (sampler-bpf.c, "Budgets" and "Unbounded") */
	uint64_t bpf_unbounded;        /* records past the kernel's flush threshold (ditto) */
	uint64_t bpf_psi_still;        /* cgroups whose pressure totals the kernel's (a record's witness)
					* showed unchanged since their last read (sampler.c, psi_due()) */
	uint64_t bpf_unchanged;        /* of bpf_cgroups, those whose page counters equalled the record
					* applied last: only their ages renewed (sampler-bpf.c,
					* "Unchanged records") */
	/* The task walk's share, in a LOAD pass (sample-load.c; zero without). */
	uint64_t task_records;         /* threads walked */
	uint64_t task_walk_us;         /* wall time of the walk and its sums */
	uint64_t task_checks;          /* cgroups whose thread list was read around the walk */
	uint64_t task_mismatches;      /* of them, a walk's count outside the two lists' */
	bool task_fallback;            /* this pass moved threads back to files for good */
	/* The census asked for (acct_sampler_want_census()): the hierarchies
	 * whose request this pass took, and census[h] for each bit h of
	 * census_mask (a hierarchy whose walk failed is not in it). */
	uint32_t census_taken, census_mask;
	struct acct_cgroup_census census[_ACCT_HIER_MAX];
	char last_mismatch[160];       /* "PATH QUANTITY bpf V not in [A, B]"; "" if none */
};

struct acct_sampler_options {
	const struct acct_hierarchies *layout;
	unsigned workers;       /* >= 1 */
	long page_size;         /* 0: sysconf */
	long user_hz;           /* 0: sysconf */
	unsigned nr_cpus;       /* for usage_percpu; 0: the counter domain's shards */
	uint64_t max_cached_fds; /* 0: RLIMIT_NOFILE minus a reserve (1/8, at least 48) */
	/* The BPF collector (NULL: files only), used by one worker at the start
	 * of every pass that reads memory; it must outlive the sampler. The
	 * stat map (copied) says which memory.stat keys its records serve. */
	struct acct_bpf_collector *collector;
	const struct acct_bpf_stat_map *stat_map;
	/* The BPF task walk (NULL: threads from files), used by one worker at
	 * the start of every LOAD pass (sample-load.c); it must outlive the
	 * sampler. */
	struct acct_task_walk *task_walk;
	unsigned nr_nodes;      /* NUMA nodes of the ledger (0: 1) */
	/* The tree is the kernel's cgroupfs (not a test's copy): values carry
	 * the kernel's batching in their bounds. */
	bool kernel_bounds;
	/* The kernel's batching, for bounds (nr_cpus 0: detected). */
	struct acct_memcg_batching batching;
};

struct acct_sampler;

/* Start the worker threads. Returns 0, -EINVAL or a pthread error. */
int acct_sampler_new(const struct acct_sampler_options *opts, struct acct_ledger *ledger,
		     struct acct_sampler **ret);
/* Stop the workers and free the sampler. A pass in progress may be cut
 * short: workers still waiting for worker 0's walk return without reading
 * (no worker reads a snapshot before it is whole); the others finish the
 * pass. Its report is never collected. */
struct acct_sampler *acct_sampler_free(struct acct_sampler *s);

/* Start an asynchronous pass over cgs[0..n) (the array is copied). Returns 0 or
 * -EBUSY when a pass is running. Completion makes acct_sampler_fd() readable.
 * The calling thread, like the workers, is a sampling thread for this pass: a
 * LOAD pass counts it among its cgroup's threads but never as active. */
int acct_sampler_start(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n, unsigned flags,
		       uint64_t now_us);

/* Walks alone by the budget (sampler-bpf.c, "Freshness from the budget"):
 * the cgroups whose memory a walk alone should read now, those of the last
 * full fast pass's moving ones (memory motion not 0) whose expected
 * staleness, motion x age, has reached the bytes budget; *ret (the caller
 * frees it) for acct_sampler_start(..., ACCT_PASS_KERNEL). Idle cgroups are
 * never due: their memory is read by fast passes. *ret_next_us: when the
 * first of the others comes due at its present motion (its last memory
 * reading plus budget / motion), UINT64_MAX where none will; now_us on
 * errors. Call while no pass runs. Returns the number due (0: *ret NULL),
 * -ESTALE when there is no such list (no fast pass yet with the BPF
 * collector, or a moving cgroup was released since: the caller walks every
 * cgroup as before), or -ENOMEM. O(moving cgroups). */
int acct_sampler_kernel_due(struct acct_sampler *s, uint64_t now_us, struct acct_cgroup ***ret,
			    uint64_t *ret_next_us);
/* When a walk alone can next have something to read, as above without the
 * list: now_us where one is due already (its motion not known yet
 * included) or there is no list; UINT64_MAX where none moves. So an idle
 * host needs no tick until a pass finds motion. Call while no pass runs. */
uint64_t acct_sampler_kernel_next_us(struct acct_sampler *s, uint64_t now_us);
/* Ask the next full fast pass (ACCT_PASS_FAST without EVENT or KERNEL) for
 * the census (cgroup-census.h) of each hierarchy in `hierarchies` (a mask of
 * 1 << enum acct_hierarchy) at levels 0..max_level, from the collector's
 * walks: those the pass makes anyway, and a lean walk of each other one. The
 * report's census_mask says which it took. Any thread, any time; requests
 * add up until a pass takes them (the last max_level holds). Nothing
 * without a collector. */
void acct_sampler_want_census(struct acct_sampler *s, uint32_t hierarchies, unsigned max_level);
/* The same, for the scope scopes[h] of each hierarchy h that has one
 * (cgroup-census.h; NULL, or scopes NULL: the whole walk at levels
 * 0..max_level): takes them (scopes[h] NULL after), and frees any asked
 * before and not taken yet. */
void acct_sampler_want_census_of(struct acct_sampler *s, uint32_t hierarchies, unsigned max_level,
				 struct acct_cgroup_scope *scopes[_ACCT_HIER_MAX]);
/* Whether the owner hears every change of cgroup.events (inotify IN_MODIFY,
 * announced with acct_cgroup_announce_populated_change() before it starts
 * the next pass) for cgroups of depth < max_depth that have the file: then
 * a cgroup read empty and settled is not read again until a change is
 * announced (docs/counters.md, "Empty cgroups"). `watched` false (a watch
 * missing, an inotify overflow: changes may have been lost) wakes every
 * such cgroup; they become quiet again at their next empty read once it is
 * true. Any thread, any time; the next pass uses it. Default: false. */
void acct_sampler_events_watched(struct acct_sampler *s, bool watched, unsigned max_depth);
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
 * same hierarchy (sample-load.c, "Threads and load": each thread counted once, in
 * one hierarchy per cgroup). cgs must be all live cgroups sorted by path
 * (acct_ledger_snapshot()). now_us stamps the values as sampled: the pass's
 * started_us, which precedes every read the pass made (a later time would
 * serve them younger than they are). Owner thread, no pass running. */
void acct_sampler_aggregate_load(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n,
				 uint64_t now_us);

/* Define the root's memory after every pass that set memory (fast, slow,
 * event and kernel passes: a root left behind its children would serve less
 * than their sum): the larger of the root's own reading and the sum of its
 * top-level children's (the definition, per layout, is at the function). Sets
 * the root record's "memory", which every consumer reads, aged as its oldest
 * part; nothing when neither is known. cgs as for
 * acct_sampler_aggregate_load(). Owner thread, no pass running. */
void acct_sampler_root_memory(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n);

/* Free a record's sampler state (closes its descriptors). Safe on records that
 * have none. Owner thread, no pass running (use as the ledger sweep callback). */
void acct_sampler_release(struct acct_cgroup *cg, void *userdata);

/* Read cg's memory in use now (the file a pass reads: memory.current or
 * memory.usage_in_bytes) on the calling thread, into *ret_bytes, without
 * touching the ledger: for reconciliation, which needs a parent's and its
 * children's readings closer together than a pass takes them. The file is
 * opened for this read (a removed cgroup reads as gone). Owner thread, no
 * pass running. Returns 0, -ENODATA when the cgroup has no such file,
 * -ENOENT when it vanished, or another negative errno. */
int acct_sampler_read_memory(struct acct_sampler *s, struct acct_cgroup *cg, int64_t *ret_bytes);

/* The memory file (v2 memory.current, v1 memory.usage_in_bytes): the one
 * reader of it, which the pass, acct_sampler_read_memory(), the collector's
 * cross-checks and fresh readings (fresh.h) all use. Parse: 0 with the bytes,
 * or -EBADMSG for anything but one number of at most INT64_MAX. Read: the
 * whole file of the open descriptor fd from offset 0 (pread: a cached
 * descriptor reads anew), then parsed; -ENOENT when the cgroup went away
 * (ENODEV), -EBADMSG as the parse (or more than one number's bytes), another
 * negative errno of pread(2). Neither writes *ret_bytes on failure. */
int acct_memory_parse(const char *text, int64_t *ret_bytes);
int acct_memory_read_fd(int fd, int64_t *ret_bytes);

/* Which quantities the collector serves now (reconciliation may move some
 * back to files): a mask of enum acct_sampler_bpf_part bits. */
enum acct_sampler_bpf_part {
	ACCT_BPF_PART_POPULATED = 1 << 0, /* populated, instead of cgroup.events */
	ACCT_BPF_PART_MEMORY = 1 << 1,    /* memory, peak, limits, swap, events */
	ACCT_BPF_PART_STAT = 1 << 2,      /* mapped memory.stat keys, working set, NUMA */
};
unsigned acct_sampler_bpf_parts(const struct acct_sampler *s);
/* The batching the sampler's bounds come from (nr_cpus 0 on a tree that is
 * not the kernel's: no kernel batched its values). */
const struct acct_memcg_batching *acct_sampler_batching(const struct acct_sampler *s);
/* Passes in a row with a mismatch after which a part goes back to files. */
#define ACCT_BPF_MISMATCH_PASSES 3

/* What one cross-check proves: a collector's value v read between two file
 * readings `before` and `after` of the same quantity.
 * A value that stood still across the bracket (before == after) must equal
 * it: anything else is a MISMATCH. A value that moved proves less than it
 * seems: memory can fall and rise again between the two readings (a task
 * that frees and allocates, a process that execs), so a v outside
 * [min, max] may be a true reading of the dip; it is INCONCLUSIVE, not
 * evidence against the collector. Only a v within the bracket is AGREE.
 * (Counting moved values as mismatches turned a churning host's memory
 * over to files for good: ten thousand cgroups whose tasks were starting
 * gave a "mismatch" in three passes in a row within a minute.) */
enum acct_bracket {
	ACCT_BRACKET_AGREE,
	ACCT_BRACKET_MISMATCH,
	ACCT_BRACKET_INCONCLUSIVE,
};
enum acct_bracket acct_bracket_judge(uint64_t v, uint64_t before, uint64_t after);

/* Descriptors currently cached, and whether the sampler has fallen back to
 * open-per-read because the limit was reached. */
void acct_sampler_fd_stats(const struct acct_sampler *s, uint64_t *ret_cached, bool *ret_degraded);

/* Raise RLIMIT_NOFILE's soft limit to its hard limit. Returns the new soft
 * limit or a negative errno. */
long acct_raise_nofile(void);
