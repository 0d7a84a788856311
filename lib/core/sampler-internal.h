/* sampler-internal.h - what the sampler's files share: sampler.c (the
 * workers and the pass), sampler-files.c (roles and the descriptor cache),
 * the readers by controller (sample-memory.c, sample-cpu.c, sample-io-psi.c,
 * sample-load.c) and sampler-bpf.c (the BPF collector's part). Nothing else
 * includes it: acct_sampler stays opaque to the rest of acctd (sampler.h). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "load.h"
#include "sampler.h"

/* The files a cgroup may have, by role. Which name and tree a role uses depends
 * on the layout (see pick_files()). */
enum file_role {
	F_EVENTS,
	F_MEMORY,
	F_CPU_STAT,      /* v2 cpu.stat (usage, and throttling with the cpu controller) */
	F_CPU_STAT_V1,   /* v1 cpu.stat: throttling */
	F_CPUACCT_USAGE, /* v1 cpuacct.usage, ns */
	F_CPUACCT_PERCPU,
	F_CPUACCT_STAT,  /* v1 user/system ticks */
	F_PSI_CPU,
	F_PSI_MEMORY,
	F_PSI_IO,
	F_IO_STAT,       /* v2 io.stat */
	F_BLKIO_BYTES,   /* v1 blkio.throttle.io_service_bytes_recursive */
	F_BLKIO_IOS,     /* v1 blkio.throttle.io_serviced_recursive */
	F_MEMORY_EVENTS, /* v2 memory.events */
	F_MEMORY_FAILCNT,     /* v1 memory.failcnt */
	F_MEMORY_OOM_CONTROL, /* v1 memory.oom_control */
	F_MEMORY_STAT,   /* slow from here */
	F_NUMA_STAT,
	F_MEMORY_PEAK,
	F_MEMORY_MAX,
	F_MEMORY_HIGH,
	F_SWAP,
	F_SWAP_MAX,
	F_THREADS,       /* load */
	_F_MAX,
};

#define FD_UNSET -1  /* not opened yet */
#define FD_ABSENT -2 /* the file does not exist for this cgroup */
#define FD_NONE -3   /* the role does not apply in this layout */

struct file_spec {
	const char *name;
	enum acct_hierarchy tree;
};

/* The parts a fast read can prune: their quantities are cumulative and the
 * kernel sums them up the tree, so an ancestor's total that stood still
 * proves its descendants' did (sampler-prune.c, docs/counters.md, "Pruning").
 * Not PSI: each group's totals are aggregated at its own reads, weighted by
 * whole jiffies of non-idle time, so a parent's can stand still while a
 * child's moves. */
enum prune_family { PF_CPU, PF_IO, _PF_MAX };

enum prune_outcome {
	PO_NONE,      /* not read this pass, or the read failed: proves nothing below */
	PO_CHANGED,   /* read, the witness moved */
	PO_UNCHANGED, /* read, the witness equals the previous good read's */
	PO_PRUNED,    /* not read: proven unchanged by an ancestor */
};

/* One family's witness of a cgroup: the sum of its cumulative totals (each
 * never decreases, so the sum stands still exactly when each does). */
struct prune_witness {
	uint64_t value;
	bool valid;            /* a good read gave value; false after a failed read */
	int8_t tree;           /* enum acct_hierarchy of the file it came from */
	uint64_t stable_since; /* end of the first read that saw value (monotonic usec) */
	uint64_t read_start;   /* start of the last good read */
};

/* Ordered by use: a pass over 10,000 idle cgroups touches each one's state
 * once, and each cache line of it is a miss; what every pass reads comes
 * first, what only reads of files and load passes use (descriptors, file
 * names, I/O and load history) after it. */
struct cg_state {
	/* ---- every pass ---- */
	/* Steady (sampler-steady.c): its entry in the table (index + 1; 0:
	 * none), cleared by its next full visit; whether its pressure witness
	 * comes with its record; where it prunes a descendant in this pass. */
	size_t steady_slot;
	bool steady_psi;
	uint64_t parent_seq;     /* s->prepare_seq where it is a pruning ancestor in the pass */
	uint32_t hierarchies; /* what the specs were chosen for */
	uint8_t parts_files;  /* bit per enum acct_pass_part with a file (pick_files()) */
	bool has_events;      /* spec[F_EVENTS] has a file */
	bool has_threads;     /* spec[F_THREADS] has a file */
	bool picked;          /* pick_files() ran for it at least once */
	bool memory_v1;       /* memory files are v1 (memsw includes memory) */
	bool read_empty;  /* read completely since last seen populated: skipped at the fast interval */
	bool seen_populated; /* a read found tasks in it */
	bool settling;       /* empty, CPU time not yet seen to stand still (SETTLE_US) */
	bool quiet_empty;    /* read empty from cgroup.events, settled: not read while the watch
			      * and the memcg record say nothing (sampler-prune.c, sampler_empty_quiet()) */
	bool memstat_clean;  /* memory.stat read since it emptied, no dirty or writeback pages */
	uint32_t left;       /* hierarchies it left while empty, its files there no longer read
			      * (sampler_state_of()); 0 once its files are picked again */
	bool own_memory_valid;
	bool load_valid;
	bool psi_quiet;          /* its totals equalled the read's before */
	bool psi_averages;       /* an average was not 0 at that read */
	uint64_t moving_gen;     /* s->moving_gen when it joined s->moving (its memory moved) */
	uint32_t rec_hint[_ACCT_HIER_MAX]; /* its record's position in the last snapshot of each
					    * hierarchy (sampler_bpf_lookup(), acct_bpf_snapshot_find_hint()) */
	bool cpu_bandwidth;      /* its last cpu.stat counted bandwidth periods: its CPU is never
				  * pruned (sampler-prune.c, sampler_prune_decide()) */
	uint32_t fds_open;       /* bit per enum file_role whose descriptor is kept (fd[] >= 0): an
				  * idle cgroup's pass need not touch fd[] to find none */
	uint64_t due_round;      /* s->due_round when acct_sampler_kernel_due() took it */
	uint64_t quiet_changes;  /* populated_changes taken before the read that made it quiet_empty */
	uint64_t quiet_epoch;    /* s->events_epoch then */
	int64_t quiet_memory;    /* own_memory then */
	int64_t own_memory; /* this cgroup's own memory reading (the root's is not the ledger's) */
	uint64_t memory_at; /* monotonic time of the last memory reading (set_memory()) */
	uint64_t restart; /* bit per quantity: its source file changed, the next reading starts anew */
	uint64_t slow_at;        /* the pass (now_us) of the last good slow-group read; 0: none */
	int64_t slow_memory;     /* own_memory at that read */
	uint64_t slow_hash;      /* the fingerprint of that read's files (sampler_slow_aged()) */
	unsigned slow_backoff;   /* reads in a row that found them the same: the refresh doubles */
	/* Pressure (sample_psi(), psi_due() in sampler.c); psi_quiet and
	 * psi_averages above. */
	uint64_t psi_at;         /* acct_now_us() before the last good pressure read; 0: none */
	uint64_t psi_sum;        /* the sum of the totals that read gave */
	uint64_t psi_still_at;   /* the last pass whose witness showed those totals (psi_due()); 0: none */
	bool psi_witness_moved;  /* this read was due because the witness moved */
	bool psi_witness_off;    /* the witness moved while the file stood still: not used for it */
	unsigned own_threads, own_active; /* from the last LOAD pass */
	unsigned tree_threads, tree_active; /* own + descendants', acct_sampler_aggregate_load() */
	unsigned tasks_served;              /* tree_threads as last set into the ledger (load_at != 0) */
	struct acct_cgroup *parent;  /* nearest tracked ancestor (owner thread, acct_sampler_start()) */
	uint64_t parent_gen;         /* s->release_gen when parent was found; 0: not yet */
	/* Pruning (sampler-prune.c). The outcome of this pass is published to
	 * descendants read later in it: outcome[] first, then outcome_gen
	 * (release) = the pass's generation. */
	uint8_t outcome[_PF_MAX];
	uint64_t outcome_gen;    /* atomic */
	struct prune_witness witness[_PF_MAX];
	uint64_t last_cpu_usec, last_cpu_at;
	struct acct_rate_avg rate_avg; /* as of rate_avg_at; the rate was 0 from then to last_cpu_at
					* (lazy decay, sample-cpu.c's sample_cpu_idle()) */
	uint64_t rate_avg_at;
	/* The record whose page counters and events were last applied to the
	 * ledger (sampler-bpf.c, "Unchanged records"); a flag is cleared where
	 * files set those quantities instead, and on a new pick of files. */
	struct bpf_applied {
		uint64_t usage, watermark, max, swap_usage, swap_max, high;
		uint64_t events[_ACCT_BPF_EV_MAX], failcnt;
		uint32_t flags; /* the record's ACCT_BPF_F_HIGH and ACCT_BPF_F_UNDER_OOM */
		int32_t nr_descendants;
		uint64_t quantities; /* bit per enum acct_quantity: what the record set */
		bool counters, events_valid;
	} applied;
	/* ---- reads of files, load passes, emptied cgroups ---- */
	/* Which roles were read (bit per enum file_role) in the full file pass
	 * roles_seq (s->files_seq) and in the one before it: a descriptor is
	 * kept only for a role read pass after pass (sampler-files.c,
	 * "Descriptors that pay"). */
	uint32_t roles_now, roles_before;
	uint64_t roles_seq;
	int fd[_F_MAX];
	struct file_spec spec[_F_MAX];
	struct acct_loadavg load;
	uint64_t load_at;
	size_t agg_slot;                  /* acct_sampler_aggregate_load()'s index, during it */
	uint64_t io_last[_ACCT_IO_STAT_MAX]; /* totals of the last I/O reading, for the rates */
	uint32_t io_last_known;           /* bit per enum acct_io_stat */
	bool io_rates_zero;               /* the rates of io_last_known were published 0, known, by
					   * sample_io_idle(), and nothing set them since */
	uint64_t io_last_at;
	uint64_t *percpu_last;            /* v1 usage_percpu, ns */
	size_t percpu_n;
	uint64_t settle_cpu;      /* CPU time (usec) at the first empty read it has had since */
	uint64_t settle_at;       /* monotonic usec of that read */
	int64_t memsw;    /* v1 memory.memsw.usage_in_bytes of this slow pass */
	bool memsw_valid;
};

/* A steady cgroup as its last full visit left it (sampler-steady.c): its
 * memcg record then, to compare this pass's with, and what the light visit
 * renews. A dense array in work order: a light visit reads it in sequence
 * instead of the cgroup's state. */
/* The fields of a memcg record that a full visit compares or applies
 * (sampler-steady.c, steady_print_of()); no padding, compared whole. */
struct steady_print {
	uint64_t usage, watermark, max, swap_usage, swap_max, high, failcnt;
	uint64_t events[_ACCT_BPF_EV_MAX];
	uint64_t psi_sum;        /* the sum of its pressure totals (each only grows: equal sums, equal totals) */
	uint32_t flags;          /* its flags of STEADY_FLAGS */
	int32_t nr_descendants;
	uint32_t nr_psi;
	uint32_t zero;           /* 0: the struct's size a multiple of its alignment, no padding */
};

struct steady_entry {
	uint64_t inode;          /* its memcg record's id */
	uint64_t due_us;         /* the pass (now_us) from which a full visit is due */
	uint64_t quantities;     /* what its record set (struct bpf_applied's quantities) */
	struct steady_print print; /* its record then */
	uint32_t rec_hint;       /* its position in the last walk */
	uint32_t bpf_parts;      /* s->parts then (enum acct_sampler_bpf_part) */
	uint8_t parts;           /* the parts it has a source for (bit per enum acct_pass_part) */
	uint8_t pruned;          /* the families pruned (bit per enum prune_family) */
	bool valid;
	bool psi_still;          /* its pressure witness is in its record and was seen unchanged */
	/* Its threads as its last load visit counted them (none active), where a
	 * load pass's walk can say the same (load_id in hierarchy load_tree). */
	bool load_known;
	bool has_threads;
	uint8_t load_tree;
	uint32_t threads;
	uint64_t load_id;
	/* Its visit's due times apart (struct steady_due): due_us is the
	 * earliest of other_due_us and the pressure refresh, psi_refresh_us
	 * after the last pass that saw its pressure still. */
	uint64_t other_due_us;
	uint64_t psi_refresh_us;
	/* A hybrid host's pressure witness: its record in the unified
	 * hierarchy (psi_id), whose totals' sum, in the file's units, equalled
	 * its last read's (psi_sum) as the full visit left it; a light visit in
	 * a pass that walks that hierarchy compares them as psi_due() would,
	 * and renews psi_still_us (its psi_still_at) where they are equal. */
	bool psi_witness;
	uint32_t psi_hint;
	uint64_t psi_id;
	uint64_t psi_sum;
	uint64_t psi_still_us;
	/* A slow pass's light visit (v1 memcg records, whose stats are not
	 * taken): the pass from which its slow group is due (0: the next). */
	uint64_t slow_due_us;
};

/* When a steady cgroup's full visit comes due again (sampler.c,
 * steady_due()): the pressure refresh counted from the last pass that saw
 * it unchanged (psi_seen_us + psi_refresh_us; psi_refresh_us 0: none), the
 * rest (pressure's decay, the pruning refresh) at other_us. */
struct steady_due {
	uint64_t other_us;
	uint64_t psi_refresh_us;
	uint64_t psi_seen_us;
};

/* One cgroup's threads as the task walk counted them. */
struct task_count {
	uint64_t id;       /* cgroup id (directory inode) in hierarchy `tree` */
	uint32_t tree;     /* enum acct_hierarchy */
	unsigned threads, active;
};

struct worker {
	struct acct_sampler *s;
	pthread_t thread;
	unsigned index;
	pid_t tid;                    /* set before acct_sampler_new() returns */
	struct acct_pass_report part; /* this worker's share of the current pass */
	double cpu_seconds;
	char *buf;
	size_t buf_size;
	struct acct_cgroup **settle;  /* emptied this pass, CPU time not settled yet */
	size_t nr_settle, settle_cap;
	bool settle_round;            /* re-reading them: do not queue again */
	uint64_t generation;          /* the pass being read */
	struct acct_cgroup **moving;  /* this share's cgroups whose memory moves (a full fast pass) */
	size_t nr_moving, moving_cap;
	size_t *later;                /* indices of steady cgroups whose ancestor's outcome was not
				       * published yet when taken: visited at the end of the share */
	size_t nr_later, later_cap;
	bool later_round;             /* visiting them: no deferring again */
};

struct acct_sampler {
	struct acct_sampler_options opts;
	struct acct_ledger *ledger;
	struct worker *workers;
	unsigned nr_workers;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t generation; /* bumped to start a pass */
	bool stop;
	unsigned running;    /* workers still in the pass */
	unsigned started;    /* workers that have published their tid */
	pid_t starter_tid;   /* the thread that started the current pass */
	bool busy;

	struct acct_cgroup **work;   /* in path order: parents before children */
	struct cg_state **parents;    /* the state of work[i]'s nearest tracked ancestor, or NULL; made
				       * for full_work, used in a pass where parents_on */
	bool parents_on;
	size_t nr_work;
	/* The last full pass's list (a copy), and whether this pass's is the
	 * same: the pruning ancestors and the steady table are kept while it
	 * is (acct_sampler_start()). */
	struct acct_cgroup **full_work;
	size_t nr_full_work;
	bool same_list;
	uint64_t release_gen;         /* bumped by every acct_sampler_release(): cached parents may be gone */
	size_t next; /* atomic */
	unsigned flags;
	uint64_t now_us;
	uint64_t started_us;

	int done_fd;
	uint64_t max_cached;  /* descriptors the cache may hold */
	uint64_t cached_fds; /* atomic */
	bool degraded;       /* atomic: descriptor limit reached */

	/* The BPF collector (sampler-bpf.c); snapshots are written by
	 * worker 0 before the others read them (snap_generation, under lock). */
	struct acct_bpf_stat_map stat_map;
	int stat_key[ACCT_BPF_STATE_MAX]; /* the ledger's index of stat_map.e[i].key; < 0: none */
	struct acct_bpf_snapshot snap[_ACCT_HIER_MAX];
	bool snap_valid[_ACCT_HIER_MAX];
	uint64_t snap_generation;
	int mem_hier;             /* hierarchy whose records carry memcg values; -1: none */
	int inactive_entry;       /* stat_map entry of (total_)inactive_file; -1: none */
	unsigned node_items;
	uint32_t node_units[ACCT_BPF_NODE_ITEMS];
	int numa_entry[ACCT_BPF_NODE_ITEMS]; /* stat_map entries of the NUMA keys (one node) */
	unsigned nr_numa_entries;            /* 0: not every NUMA key is mapped */
	unsigned parts;           /* atomic; enum acct_sampler_bpf_part still served */
	unsigned streak[2];       /* consecutive passes with a mismatch: memory, stat */
	size_t check_cursor;      /* rotating position of the cross-checks in the work list */
	struct acct_pass_report bpf_report; /* worker 0's BPF figures of this pass */
	/* The task walk (sample-load.c): threads and active ones per (hierarchy,
	 * cgroup id), sorted; written by worker 0 at the start of a LOAD pass
	 * before the others read it (snap_generation, under lock). */
	struct task_count *tasks;
	size_t nr_tasks, tasks_cap;
	bool tasks_valid;         /* this pass's walk worked: sample_load() uses it */
	/* Every thread the walk saw in each hierarchy, tracked cgroup or not:
	 * the root's count (acct_sampler_aggregate_load()). */
	struct task_total {
		unsigned threads, active;
	} task_totals[ACCT_TASK_SLOTS];
	bool task_walk_off;       /* the cross-check failed ACCT_BPF_MISMATCH_PASSES in a row */
	unsigned task_streak;
	size_t task_check_cursor;
	uint64_t bytes_budget;    /* the ledger's bytes budget when the pass started */
	uint64_t files_seq;       /* full passes that read files so far (struct cg_state's roles_seq) */
	/* Walks alone by the budget (sampler-bpf.c, "Freshness from the
	 * budget"): the cgroups whose memory moved at the last full fast pass,
	 * valid until one of them is released (moving_gen tells which). */
	struct acct_cgroup **moving;
	size_t nr_moving, moving_cap;
	uint64_t moving_gen;
	uint64_t due_round;       /* acct_sampler_kernel_due()'s calls: one entry per cgroup */
	uint64_t psi_walk_at;     /* the pass (now_us) of the last walk of the unified hierarchy,
				   * whose records carry the pressure witness (sampler_bpf_walk()) */
	bool moving_valid;
	/* Whether changes of cgroup.events are announced (acct_sampler_events_watched()):
	 * events_watched (atomic) for cgroups shallower than events_depth;
	 * events_epoch (atomic) bumped at each gap, which wakes every quiet cgroup. */
	bool events_watched;
	unsigned events_depth;
	uint64_t events_epoch;
	uint32_t census_want;     /* atomic: acct_sampler_want_census()'s hierarchies not taken yet */
	unsigned census_level;    /* atomic: and its max_level */
	/* atomic: the scope of each hierarchy's census asked (NULL: the whole
	 * walk), owned here until a pass takes it (acct_sampler_want_census_of()) */
	struct acct_cgroup_scope *census_scope[_ACCT_HIER_MAX];
	/* A walk alone over a few cgroups reads each one's record alone
	 * (one_mode): one_recs[i] for work[i] where one_ok[i]. */
	struct acct_bpf_record *one_recs;
	bool *one_ok;
	size_t one_cap;
	bool one_mode;
	/* Light visits of steady cgroups (sampler-steady.c): an entry per
	 * cgroup of full_work; steady_ok while this pass's list is that one. */
	struct steady_entry *steady;
	size_t nr_steady;
	bool steady_ok;
	uint64_t steady_budget;      /* bytes_budget when the table was made */
	uint64_t prepare_seq;     /* sampler_prune_prepare()'s calls (struct cg_state's parent_seq) */
	/* parents[] is kept for a pass over the same list where it was made
	 * whole, and nothing was released since (sampler_prune_prepare()). */
	uint64_t parents_release_gen;
	bool parents_whole;
};

/* One cgroup's read in a pass: what the readers share while reading it. */
struct sample_ctx {
	struct worker *w;
	struct acct_cgroup *cg;
	struct cg_state *st;
	bool failed;
	unsigned nr_failures;   /* failed values so far (a part failed if its read added one) */
	bool events_known;      /* populated came from cgroup.events */
	bool have_inactive;     /* this pass's memory.stat gave inactive_file */
	int64_t inactive;
	const struct acct_bpf_record *mem_rec; /* the collector's memcg record, NULL: files */
	const struct acct_bpf_record *psi_rec; /* its record of the unified hierarchy with pressure
						* totals (the witness, psi_due()), NULL: none this pass */
	bool memstat_from_file; /* this pass read memory.stat: fresher than the record's keys */
	bool memstat_dirty;     /* that memory.stat counted dirty or writeback pages (sampler_memstat_kv()) */
	bool files_allowed;     /* a pass that reads files (not ACCT_PASS_KERNEL) */
	int bpf_populated;      /* populated in every hierarchy's record: 1, 0; -1: unknown */
	/* What the readers saw, for pruning: each family's witness (bit per
	 * enum prune_family in witnessed). */
	uint64_t witness[_PF_MAX];
	int8_t witness_tree[_PF_MAX];
	unsigned witnessed;
	bool cpu_current;       /* this read took the CPU time: read it, or pruned (sample_cumulative()) */
	bool memory_set;        /* memory was set in this read (sampler_set_memory()) */
	/* What makes a cgroup steady (sampler-steady.c): */
	bool counters_same;     /* its record's page counters equalled those applied (set_counters()) */
	bool events_same;       /* and its events (sampler_bpf_memory_events()) */
	bool psi_read;          /* its pressure was read */
	bool slow_hashing;      /* sampler_get() folds what it reads into slow_hash (sample_slow()) */
	uint64_t slow_hash;     /* FNV-1a of the slow group's files as read (sampler_slow_done()) */
	bool slow_limits;       /* sample_slow() read a limit from its file */
	unsigned pruned;        /* the families pruned (bit per enum prune_family) */
};

/* A mask of quantities (bit per enum acct_quantity). */
#define QBIT(q) (UINT64_C(1) << (q))

/* sampler-files.c: roles and the descriptor cache. */
/* The sampler's state of cg, made at its first read, its files picked
 * again when its hierarchies changed. NULL without memory. */
struct cg_state *sampler_state_of(struct acct_sampler *s, struct acct_cgroup *cg);
/* Close the descriptors of the roles this pass did not read (end of a
 * cgroup's read; "Descriptors that pay"). */
void sampler_close_unread(struct acct_sampler *s, struct cg_state *st);
/* Open a role's file of cg afresh: a descriptor or a negative errno. */
int sampler_open_file(struct acct_sampler *s, struct acct_cgroup *cg, const struct file_spec *spec);
/* Count a failed read of this cgroup (x->failed set). */
void sampler_fail(struct sample_ctx *x, enum acct_sample_error e);
/* Read a role into x->w->buf: true with the content, false when the file is
 * missing (not a failure) or failed (counted, x->failed set). */
bool sampler_get(struct sample_ctx *x, enum file_role f);

/* sample-values.c: publishing a value, for every reader. */
/* Set a cumulative quantity: unchecked (a counter that may be reset, or a new
 * source), or checked against going backwards (a violation is counted). */
void sampler_set_unchecked(struct sample_ctx *x, enum acct_quantity q, int64_t v);
void sampler_set_checked(struct sample_ctx *x, enum acct_quantity q, int64_t v);
/* A limit as served: -1 for "max" and v1's PAGE_COUNTER_MAX-derived values. */
int64_t sampler_limit_value(uint64_t v);
/* Memory in use, with the drift histogram (when not NULL) and the motion
 * estimate; sampler_set_memory() for a reader's ctx. */
void sampler_set_memory_moved(struct acct_cgroup *cg, struct cg_state *st, int64_t v, uint64_t now,
			      struct histogram *drift);
void sampler_set_memory(struct sample_ctx *x, int64_t v);
bool sampler_numa_from_file(struct sample_ctx *x);
/* A memory.stat key into the ledger (cgfs_kv_fn; userdata is the ctx). */
int sampler_memstat_kv(const char *key, size_t key_len, uint64_t value, void *userdata);

/* sample-memory.c */
/* Memory in use (a fast pass), and with working_set the working set too (a
 * slow pass, right after memory.stat). */
void sample_memory(struct sample_ctx *x, bool working_set);
/* The slow group: memory.stat, then memory in use, NUMA, peak, limits, swap;
 * their fingerprint in x->slow_hash. */
void sample_slow(struct sample_ctx *x);
/* When a slow pass reads the slow group (sample-memory.c, "When a slow pass
 * reads a cgroup's slow group"): aged (its refresh interval passed since
 * the last good read, or none), due (aged, or memory moved by the bytes
 * budget since: memory must have been read in this pass). */
bool sampler_slow_aged(const struct cg_state *st, const struct acct_cgroup *cg, uint64_t now_us);
bool sampler_slow_due(const struct sample_ctx *x, uint64_t now_us);
/* The pass from which the slow group is due (0: now), with memory as read
 * in this visit. */
uint64_t sampler_slow_due_at(const struct sample_ctx *x);
/* After a good read of the slow group (made due by age: by_age): the next
 * refresh interval, from whether the files read the same as at the last. */
void sampler_slow_done(struct sample_ctx *x, bool by_age, uint64_t now_us);
void sample_memory_events(struct sample_ctx *x);

/* sample-cpu.c */
void sample_cpu(struct sample_ctx *x, uint64_t now_us);
/* An empty cgroup skipped at a fast pass: its CPU rate is 0 since the last
 * reading, without a read. */
void sample_cpu_idle(struct sample_ctx *x, uint64_t now_us);
/* Its CPU time proven unchanged without a read (pruned): the rate is 0 since
 * the last reading, and known (two readings' worth). */
void sample_cpu_unchanged(struct sample_ctx *x, uint64_t now_us);

/* sample-io-psi.c */
/* Pressure: the three files; true when each that exists was read and parsed
 * (then the ctx's st->psi_* describe this read). */
bool sample_psi(struct sample_ctx *x);
void sample_io(struct sample_ctx *x, uint64_t now_us);

/* sample-load.c: this cgroup's own threads and active ones (a LOAD pass),
 * from the task walk where it ran, else from its threads file. */
void sample_load(struct sample_ctx *x);
/* This LOAD pass's walk's count of cgroup `id` of hierarchy `tree`, or NULL
 * (none of its threads seen). O(log n). */
const struct task_count *sampler_find_tasks(const struct acct_sampler *s, uint32_t tree, uint64_t id);
/* The task walk of a LOAD pass with its cross-check (worker 0, before the
 * others read: sample-load.c says how). */
void sampler_task_walk(struct acct_sampler *s);
/* Whether cg, read empty, is not read again this pass (sampler.c); st may
 * be NULL (then false). */
bool sampler_empty_quiet(const struct acct_sampler *s, const struct acct_cgroup *cg, const struct cg_state *st,
			 uint64_t changes);
/* Where a cgroup in `hierarchies` lists its threads (the first of
 * sampler-files.c's threads_order that it is in), or NULL. */
const struct file_spec *sampler_threads_spec(uint32_t hierarchies);
/* Whether tid is a thread of this sampler that runs because a pass runs. */
bool sampler_is_own_thread(const struct acct_sampler *s, int tid);

/* sample-io-psi.c: an I/O rate of 0 since the last reading, without a read
 * (the totals were proven unchanged). */
void sample_io_idle(struct sample_ctx *x, uint64_t now_us);

/* sampler-prune.c: which families a cgroup's read may skip, and publishing
 * what its read found to the descendants read after it. */
/* Find each of work[0..n)'s nearest tracked ancestor (s->parents); the work
 * is in the ledger's path order (parents first). Owner thread, at the start
 * of a pass. Returns 0 or -ENOMEM (then nothing is pruned in this pass). */
int sampler_prune_prepare(struct acct_sampler *s, size_t n);
/* The families cg may skip in this pass (bit per enum prune_family);
 * index is its position in s->work, read_start the time its read began. */
unsigned sampler_prune_decide(struct sample_ctx *x, size_t index, uint64_t read_start);
/* After the read: record each family's witness (or its failure), and
 * publish this pass's outcome to descendants. pruned as decided, failures_at
 * the ctx's nr_failures before each family's read. */
void sampler_prune_publish(struct sample_ctx *x, unsigned pruned, const unsigned failures_before[_PF_MAX],
			   uint64_t read_start, uint64_t read_end);
/* A source file of the quantities `changed` (a mask of QBIT()s) changed
 * (note_source_changes()): the families they belong to are read in full at
 * the next pass, whose read sets their witnesses anew. */
void sampler_prune_source_changed(struct cg_state *st, uint64_t changed);

/* sampler-bpf.c: the collector's part (sampler_bpf_walk() and sampler_bpf_memory() say how). */
void sampler_bpf_init(struct acct_sampler *s, const struct acct_sampler_options *opts);
void sampler_bpf_walk(struct acct_sampler *s);
void sampler_bpf_lookup(struct sample_ctx *x);
/* The same in a walk alone that read each cgroup's record alone (one_mode):
 * work[index]'s (sampler-bpf.c, "Freshness from the budget"). */
void sampler_bpf_one(struct sample_ctx *x, size_t index);
void sampler_bpf_memory(struct sample_ctx *x);
/* The sum of a record's pressure totals in the files' units (each file total
 * is the kernel's in ns divided by 1,000: equal sums, equal totals), what the
 * witness compares with a read's (sampler.c, psi_witness()). */
uint64_t sampler_bpf_psi_sum(const struct acct_bpf_record *r);
void sampler_bpf_memory_events(struct sample_ctx *x);

/* At the start of a full pass (owner thread): same_list where its list is
 * the last full pass's, else this one kept as full_work. */
void sampler_keep_full_work(struct acct_sampler *s);
/* When the pruning refresh makes a full read of one of the families x
 * pruned due (the pass's now_us, UINT64_MAX for none; sampler-steady.c). */
uint64_t sampler_prune_due(const struct sample_ctx *x);

/* sampler-steady.c: light visits of steady cgroups. */
/* Before a full pass (owner thread, after sampler_prune_prepare()): keep
 * the table where the work list is the last full pass's (same_list), else
 * start an empty one; steady_ok where light visits may use it. */
void sampler_steady_prepare(struct acct_sampler *s);
/* A light visit of work[index]: STEADY_LIGHT where its table entry proves
 * it steady now (the visit is done), STEADY_LATER where it would but for
 * its pruning ancestor's outcome, not published yet (the other worker is
 * reading the ancestor: try again later), STEADY_FULL where it needs a full
 * visit. */
enum steady_visit { STEADY_FULL, STEADY_LIGHT, STEADY_LATER };
enum steady_visit sampler_steady_light(struct worker *w, size_t index, unsigned flags, uint64_t now_us);
/* Queue work[index] for the end of this worker's share (STEADY_LATER):
 * false where there is no room (then visit it now). */
bool sampler_steady_defer(struct worker *w, size_t index);
/* At the start of any other visit of cg: out of the epoch, its entry
 * cleared, and what its membership proved set in its state. */
void sampler_steady_leave(struct acct_sampler *s, struct acct_cgroup *cg, struct cg_state *st);
/* At the end of a pass (owner thread): advance the epoch where the pass
 * vouched for every member. */
void sampler_steady_finish(struct acct_sampler *s);
/* At the end of a full visit of work[index]: make its entry where the visit
 * found it (populated and) steady, due as `due` says, else clear it. */
void sampler_steady_note(const struct sample_ctx *x, size_t index, unsigned flags, bool populated,
			 const struct steady_due *due);
