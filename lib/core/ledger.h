/* ledger.h - the table of cgroups and the quantities acctd keeps for each.
 *
 * Every cgroup acctd tracks has a record here: its identity (path, depth,
 * hierarchies and inodes), its quantities (counters of the counter engine:
 * memory, CPU time, throttling, PSI stall totals, limits, tasks), a per-node
 * memory breakdown in a counter's node sums, the keys of memory.stat as the
 * kernel reports them, block I/O per device (devices interned per ledger),
 * derived values (CPU rate and its 1/5/15-minute averages, I/O rates, a load
 * average, PSI averages) and the time each group of values was read.
 *
 * Concurrency. The table is a liburcu lock-free hash table: request handlers
 * look cgroups up and iterate without locks, while the owner (the event loop
 * thread) adds records and marks them dead. Every walk of the table runs in
 * an RCU read-side section the ledger takes itself, on every thread (the
 * table resizes in liburcu's thread and frees what it drops after a grace
 * period); a record pointer that outlives the call is the caller's to keep
 * valid: the owner's are (see below), another thread holds rcu_read_lock()
 * for as long as it uses one. Every thread calling in is RCU-registered
 * (acct_rcu_register()). Records are
 * freed after an RCU grace period, and only by acct_ledger_sweep(), which the
 * owner calls when no sampling pass is running, so sampling workers can hold
 * record pointers for the duration of a pass without RCU. Every value in a
 * record is read and written atomically; values of one record are not a
 * consistent snapshot (each carries its own age). Code outside the ledger
 * reads them through the functions below ("Readers").
 *
 * Tombstones. A removed cgroup is marked dead and keeps its final values until
 * the retention time has passed; a recreated cgroup under the same path is a
 * new record (lookups by path prefer the live one). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define _LGPL_SOURCE
#include <urcu.h>
#include <urcu/rculfhash.h>

#include "basic/quantity.h"
#include "cgroup/cgroup-layout.h"
#include "percpu/counter.h"


enum acct_psi_resource { ACCT_PSI_CPU, ACCT_PSI_MEMORY, ACCT_PSI_IO, _ACCT_PSI_MAX };
enum acct_psi_kind { ACCT_PSI_SOME, ACCT_PSI_FULL, _ACCT_PSI_KIND_MAX };

#define ACCT_MEMSTAT_MAX 96 /* distinct memory.stat keys kept */

/* Block I/O per device (v2 io.stat, v1 blkio): the same six values as the
 * quantities ACCT_Q_IO_READ_BYTES .. ACCT_Q_IO_DISCARD_IOS, which hold their
 * sums over the devices. Devices are interned per ledger (major, minor and
 * the kernel's name, at most ACCT_IO_DEVICES_MAX); a cgroup keeps values for
 * at most ACCT_IO_CG_DEVICES of them (its totals count every device). */
enum acct_io_stat {
	ACCT_IO_READ_BYTES,
	ACCT_IO_WRITE_BYTES,
	ACCT_IO_READ_IOS,
	ACCT_IO_WRITE_IOS,
	ACCT_IO_DISCARD_BYTES,
	ACCT_IO_DISCARD_IOS,
	_ACCT_IO_STAT_MAX,
};
#define ACCT_IO_DEVICES_MAX 256
#define ACCT_IO_CG_DEVICES 16
#define ACCT_IO_NAME_MAX 32

struct acct_io_device {
	unsigned major, minor;
	char name[ACCT_IO_NAME_MAX]; /* DEVNAME of /sys/dev/block/MAJ:MIN/uevent; "" if unknown */
};

struct acct_cgroup_io {
	unsigned n; /* atomic (release): slots in use */
	struct {
		uint16_t device;                /* index in the ledger's device table */
		int64_t v[_ACCT_IO_STAT_MAX];   /* atomic; -1: not reported by the kernel */
	} dev[ACCT_IO_CG_DEVICES];
};

/* The name of an I/O value ("read_bytes", ...) and the quantity that holds its
 * total; NULL / -1 outside the enum. */
const char *acct_io_stat_name(enum acct_io_stat s);
enum acct_quantity acct_io_stat_quantity(enum acct_io_stat s);

struct acct_cgroup {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	char *path;
	unsigned depth;
	uint64_t serial;                 /* unique per record, never reused */
	uint32_t hierarchies;            /* atomic; bits of enum acct_hierarchy */
	uint64_t inode[_ACCT_HIER_MAX];
	uint64_t created_us;             /* monotonic time it was discovered */
	bool dead;                       /* atomic */
	uint64_t died_us;                /* atomic; valid when dead */
	bool populated;                  /* atomic; from cgroup.events (true when unknown) */
	bool events_known;               /* atomic; populated was read from cgroup.events */
	uint64_t populated_changes;      /* atomic; changes of cgroup.events announced (owner) */
	uint64_t final_read;             /* atomic; populated_changes + 1 as of the last complete read
					  * made while not populated, 0 if none since (acct_cgroup_final()) */

	struct acct_counter *q[_ACCT_Q_MAX];
	bool q_known[_ACCT_Q_MAX];       /* atomic; the quantity has been read at least once */
	struct acct_counter *numa;       /* node sums = memory per NUMA node (bytes) */
	bool numa_known;
	int64_t *memstat;                /* atomic values, ACCT_MEMSTAT_MAX, NULL until read */

	uint32_t psi_avg[_ACCT_PSI_MAX][_ACCT_PSI_KIND_MAX][3]; /* atomic; hundredths of a percent */
	bool psi_known[_ACCT_PSI_MAX];
	bool cpu_rate_known;             /* atomic; set once a rate was computed (two CPU readings):
	                                  * until then the rate and its averages are absent */
	uint64_t cpu_rate_bits;          /* atomic double: cores, last interval */
	uint64_t cpu_rate_avg_bits[3];   /* atomic doubles: 1, 5, 15 minutes, as of cpu_rate_avg_us */
	uint64_t cpu_rate_avg_us;        /* atomic; when the averages were last set */
	uint64_t cpu_rate_idle_us;       /* atomic; the rate was 0 from cpu_rate_avg_us to this time
					  * (acct_cgroup_cpu_rate_idle()): a reader decays the averages
					  * over the difference (acct_cgroup_read(), "lazy decay") */
	uint64_t cpu_rate_seq;           /* atomic; odd while a writer changes the five fields above */
	unsigned long loadavg[3];        /* atomic; kernel fixed point (FSHIFT 11) */
	uint64_t load_since_us;          /* atomic; when the first load pass fed loadavg (monotonic) */
	bool load_whole_life;            /* atomic; the cgroup appeared while acctd ran: loadavg, started
					  * from 0 at its first load pass, covers its whole life */
	uint64_t sampled_us[_ACCT_GROUP_MAX]; /* atomic; monotonic time of the last good read */
	uint64_t q_sampled_us[_ACCT_Q_MAX]; /* atomic; a quantity read apart from its group (the BPF
					     * collector reads slow quantities at fast passes); 0 if never */
	uint64_t set_sampled_us;         /* atomic; when the quantities of set_mask were last read
					  * together apart from their group (acct_cgroup_set_sampled_set()) */
	uint64_t set_mask;               /* atomic; bit per enum acct_quantity */
	uint64_t kernel_bound[_ACCT_Q_MAX]; /* atomic; the kernel's own uncertainty of the value read
					     * (per-CPU batching: docs/counters.md, "Bounds") */
	uint64_t memstat_bound;          /* atomic; bytes: the kernel's unflushed stat updates at the
					  * last memory.stat reading bound every byte-valued key by this */
	uint64_t numa_us;                /* atomic; when numa was last set (0: with the slow group) */
	uint64_t memory_motion_bits;     /* atomic double: bytes per second memory moved by, mean
					  * of |change| / interval over the recent fast passes (an
					  * estimate of how far a served value may have moved since) */
	bool memory_motion_known;        /* atomic; two readings have been taken */
	uint64_t sample_errors;          /* atomic */

	struct acct_cgroup_io *io;       /* atomic pointer; NULL until a device was read */
	uint64_t io_rate_bits[_ACCT_IO_STAT_MAX]; /* atomic doubles: per second, last fast interval */
	bool io_rate_known;              /* atomic; two readings have been taken */

	void *sampler_state;             /* owned by the sampler */
	/* Steady (ledger.h, "Steady cgroups"): its ledger's epoch, and the
	 * epoch generation it joined (atomic; 0: not a member). */
	const struct acct_steady_epoch *steady_epoch;
	uint64_t steady_gen;
	struct acct_ledger *ledger;      /* the ledger it is in (acct_ledger_memory_changes()) */
	uint64_t history_inode;          /* owner thread: the inode that keys its life in the history
					  * (daemon/acctd/manager.c), fixed when first recorded: its
					  * hierarchies come and go one by one around creation and removal */
	bool created_seen;               /* owner thread: it appeared while acctd ran (not found by the
					  * start's scan), so its counters began at 0 under acctd's eyes
					  * (struct history_sample's created_seen) and so did its load
					  * averages (acct_cgroup_set_load_since()) */
};

struct acct_ledger_budgets {
	int64_t bytes, cpu_us, tasks;
};

struct acct_ledger;

/* Create an empty ledger whose counters come from `domain` (must outlive it).
 * Registers the calling thread with RCU if needed. Returns 0 or -ENOMEM. */
int acct_ledger_new(struct acct_domain *domain, const struct acct_ledger_budgets *budgets,
		    struct acct_ledger **ret);
/* Free the ledger and every record; no reader may be inside it. */
struct acct_ledger *acct_ledger_free(struct acct_ledger *l);

/* Set the budgets of every counter, existing and future (a reload or Tune). */
void acct_ledger_set_budgets(struct acct_ledger *l, const struct acct_ledger_budgets *budgets);
void acct_ledger_get_budgets(const struct acct_ledger *l, struct acct_ledger_budgets *ret);

/* Add a live record for `id`. If a live record with this path exists it is
 * returned (with -EEXIST). Owner thread only. Returns 0, -EEXIST or -ENOMEM. */
int acct_ledger_add(struct acct_ledger *l, const struct acct_cgroup_id *id, uint64_t now_us,
		    struct acct_cgroup **ret);

/* Mark a record dead at now_us (its final values stay). Owner thread only. */
void acct_ledger_kill(struct acct_ledger *l, struct acct_cgroup *cg, uint64_t now_us);

/* Update a live record's hierarchies and inodes (discovery CHANGED). */
void acct_ledger_update_id(struct acct_ledger *l, struct acct_cgroup *cg, const struct acct_cgroup_id *id);

/* Remove dead records older than `retention_us` (all dead ones when 0 and
 * `all` is set) from the table and free them after a grace period. `release`
 * (may be NULL) is called first for each, to free sampler state. Owner thread,
 * no sampling pass running. Returns the number removed. */
typedef void (*acct_ledger_release_fn)(struct acct_cgroup *cg, void *userdata);
unsigned acct_ledger_sweep(struct acct_ledger *l, uint64_t now_us, uint64_t retention_us,
			   acct_ledger_release_fn release, void *userdata);

/* Tombstones beyond the budget: when more than `max` dead records are held,
 * remove the oldest (earliest died_us) until `max` are left, as
 * acct_ledger_sweep() does. What they used stays counted where it is served:
 * a parent's cumulative values are the kernel's hierarchical readings, which
 * include its removed children's. Owner thread, no sampling pass running.
 * Costs O(records + dead log dead) when over the budget, O(1) otherwise.
 * Returns the number removed, or a negative errno (no memory: none removed). */
int acct_ledger_fold_oldest(struct acct_ledger *l, uint64_t max, acct_ledger_release_fn release, void *userdata);

/* Find by path; prefers a live record, else the most recent dead one. NULL if
 * none. The pointer stays valid on the owner thread until its next sweep, on
 * another while it holds rcu_read_lock() (see "Concurrency"). */
struct acct_cgroup *acct_ledger_find(struct acct_ledger *l, const char *path);

/* Call fn for every record (live and dead) in no particular order, inside a
 * read-side section (fn must not wait for a grace period: no
 * synchronize_rcu()). A non-zero return stops the walk and is returned. */
int acct_ledger_foreach(struct acct_ledger *l, int (*fn)(struct acct_cgroup *cg, void *userdata), void *userdata);

/* Records sorted by path (live before dead for equal paths) into a new array
 * (free() it); its pointers are valid as acct_ledger_find()'s are. Returns the
 * count or -ENOMEM. */
int acct_ledger_snapshot(struct acct_ledger *l, bool include_dead, struct acct_cgroup ***ret);
/* How many times a record was added, killed or removed: equal counts, the
 * same snapshot (the owner thread's; lock). */
uint64_t acct_ledger_changes(struct acct_ledger *l);
/* How many times a memory value (ACCT_Q_MEMORY) or its kernel bound was set
 * to another value: equal counts, every cgroup's memory and bound as they
 * were (acct_reconcile_pass() checks again only where it moved). Relaxed. */
uint64_t acct_ledger_memory_changes(const struct acct_ledger *l);

void acct_ledger_counts(const struct acct_ledger *l, uint64_t *ret_live, uint64_t *ret_dead);

/* Steady cgroups. A pass that finds a cgroup's values unchanged renews
 * their ages: stores into the record, a cache miss or three per cgroup and
 * pass, which at 10,000 idle cgroups was most of what a pass did for them.
 * Instead, the sampler makes such a cgroup a member of its ledger's epoch
 * (acct_cgroup_steady_join(), after the stamps of a pass that found it
 * unchanged), and at the end of each pass in which every member was found
 * unchanged again advances the epoch's time (acct_ledger_steady_advance()):
 * a member's fast group stamp, its set stamp (acct_cgroup_set_sampled_set())
 * and its CPU rate's idle time (acct_cgroup_cpu_rate_idle()) are then at
 * least the epoch's time, read through steady_us(). A pass that finds a
 * member changed takes it out (acct_cgroup_steady_leave()) before it sets
 * anything; a pass that cannot vouch for every member (another list of
 * cgroups) starts a new generation (acct_ledger_steady_reset()), which
 * takes them all out at once.
 *
 * Why a reader never gets an age younger than its value: it loads the
 * epoch's time first (acquire), then the generation and the membership.
 * A time published at the end of pass N was stored after every store of
 * that pass, so a reader that sees it sees every leave of pass N too: a
 * member it still sees was found unchanged in pass N, and its value (the
 * one it had then) was current at that pass's start, the time published.
 * An older time than the latest only makes an age older. */
struct acct_steady_epoch {
	uint64_t us;  /* atomic; the pass (now_us) up to which every member was found unchanged; 0: none */
	uint64_t gen; /* atomic; the generation of the members, never 0 */
};

/* The epoch's time where cg is a member of its current generation, else 0.
 * Lock-free; three loads. */
static inline uint64_t acct_cgroup_steady_us(const struct acct_cgroup *cg)
{
	const struct acct_steady_epoch *e = cg->steady_epoch;
	if (!e)
		return 0;
	uint64_t us = __atomic_load_n(&e->us, __ATOMIC_ACQUIRE); /* first: see above */
	uint64_t gen = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
	uint64_t mine = __atomic_load_n(&cg->steady_gen, __ATOMIC_ACQUIRE);
	return mine == gen ? us : 0;
}

/* Writers of the epoch (the sampler): join after the stamps of a pass that
 * found cg unchanged; leave before setting anything in a pass that reads it. */
static inline void acct_cgroup_steady_join(struct acct_cgroup *cg)
{
	if (cg->steady_epoch)
		__atomic_store_n(&cg->steady_gen, __atomic_load_n(&cg->steady_epoch->gen, __ATOMIC_RELAXED),
				 __ATOMIC_RELEASE);
}

static inline void acct_cgroup_steady_leave(struct acct_cgroup *cg)
{
	if (__atomic_load_n(&cg->steady_gen, __ATOMIC_RELAXED))
		__atomic_store_n(&cg->steady_gen, 0, __ATOMIC_RELAXED);
}

/* At the end of a pass in which every member was found unchanged (or left):
 * their ages run from `now_us` (the pass's start). Owner of the passes. */
void acct_ledger_steady_advance(struct acct_ledger *l, uint64_t now_us);
/* Every member out: a new generation (a pass that cannot vouch for them). */
void acct_ledger_steady_reset(struct acct_ledger *l);

/* Writers (the sampler; one writer per record at a time). */
void acct_cgroup_set(struct acct_cgroup *cg, enum acct_quantity q, int64_t value);
/* The kernel's own uncertainty of q's value as last set (bytes, usec or count,
 * as the quantity), added to the bound of every read (acct_cgroup_get()). */
void acct_cgroup_set_kernel_bound(struct acct_cgroup *cg, enum acct_quantity q, uint64_t bound);
/* Record that q was read at now_us apart from its group's pass (its age is
 * then the younger of the two: acct_cgroup_quantity_age()). */
void acct_cgroup_set_sampled(struct acct_cgroup *cg, enum acct_quantity q, uint64_t now_us);
/* The quantities of mask (bit per enum acct_quantity) were read together at
 * now_us apart from their group's pass: one stamp for all of them instead of
 * one acct_cgroup_set_sampled() each (the BPF collector's page counters from a
 * record that did not change). Their age is the youngest of their group's,
 * their own and this stamp. A mask that differs from the last call's is
 * stored first; a reader that sees the new stamp sees it (release), and one
 * that sees the new mask with the old stamp takes an older time, never a
 * younger one. */
static inline void acct_cgroup_set_sampled_set(struct acct_cgroup *cg, uint64_t mask, uint64_t now_us)
{
	if (__atomic_load_n(&cg->set_mask, __ATOMIC_RELAXED) != mask)
		__atomic_store_n(&cg->set_mask, mask, __ATOMIC_RELAXED);
	__atomic_store_n(&cg->set_sampled_us, now_us, __ATOMIC_RELEASE);
}
/* The same, but a cumulative quantity that has been read before is not moved
 * backwards: -ERANGE then, and the ledger keeps its value. One counter read. */
int acct_cgroup_set_checked(struct acct_cgroup *cg, enum acct_quantity q, int64_t value);
/* Per-node memory: value of node `node` (bytes). Returns 0, -EINVAL, -ENOMEM. */
int acct_cgroup_set_node(struct acct_cgroup *cg, unsigned node, int64_t value);
/* memory.stat key (interned; at most ACCT_MEMSTAT_MAX distinct keys per ledger,
 * -ENOSPC beyond). */
/* The index of a memory.stat key in the ledger's table, added if new, for a
 * writer that sets the same keys pass after pass (the BPF collector's stat
 * map) and need not look them up each time. The index holds for the
 * ledger's life. Returns it, -ENOSPC past ACCT_MEMSTAT_MAX keys, or -ENOMEM. */
int acct_ledger_memstat_intern(struct acct_ledger *l, const char *key);
/* acct_cgroup_set_memstat() by the index acct_ledger_memstat_intern() gave.
 * Returns 0, -EINVAL for an index never given, or -ENOMEM. */
int acct_cgroup_set_memstat_at(struct acct_ledger *l, struct acct_cgroup *cg, unsigned index, int64_t value);
int acct_cgroup_set_memstat(struct acct_ledger *l, struct acct_cgroup *cg, const char *key, size_t key_len,
			    int64_t value);
void acct_cgroup_set_double(uint64_t *bits, double v);
double acct_cgroup_get_double(const uint64_t *bits);

/* Whether a record's values are the cgroup's final ones: what it had used when
 * its last task left. A tombstone says so, or why not. */
enum acct_final {
	ACCT_FINAL_READ,           /* read completely while empty, no change of cgroup.events since */
	ACCT_FINAL_NEVER_READ,     /* removed before acctd read any value */
	ACCT_FINAL_NO_EVENTS,      /* no cgroup.events (a v1-only cgroup): when its tasks left is unknown */
	ACCT_FINAL_NOT_READ_EMPTY, /* last read while it had tasks, or its tasks changed since:
				    * removed before the read that follows its emptying */
	_ACCT_FINAL_MAX,
};
enum acct_final acct_cgroup_final(const struct acct_cgroup *cg);
/* "final", "never_read", "no_populated_events", "removed_before_final_read". */
const char *acct_final_to_string(enum acct_final f);

/* Readers. The bound of a reading is the counter engine's (its batching)
 * plus the kernel's (acct_cgroup_set_kernel_bound()). */
bool acct_cgroup_get(const struct acct_cgroup *cg, enum acct_quantity q, bool precise, struct acct_reading *ret);
/* The kernel's part of q's bound as last set (acct_cgroup_set_kernel_bound());
 * 0 when the kernel holds no uncertain amount of q. */
uint64_t acct_cgroup_kernel_bound(const struct acct_cgroup *cg, enum acct_quantity q);
bool acct_cgroup_is_dead(const struct acct_cgroup *cg);
/* Age in usec of a group's values at now_us; UINT64_MAX if never read.
 * Ages: a writer stores the values, then the stamp (release); a reader takes
 * the age first (acquire), then the values, which are then at least as new as
 * the age says (never older: an age read after a value could belong to the
 * next pass, the value to the one before). */
uint64_t acct_cgroup_age(const struct acct_cgroup *cg, enum acct_sample_group g, uint64_t now_us);
/* Age of quantity q: its group's, or younger where q was read apart from it. */
uint64_t acct_cgroup_quantity_age(const struct acct_cgroup *cg, enum acct_quantity q, uint64_t now_us);
/* When q was last read (the stamp acct_cgroup_quantity_age() measures from);
 * 0 if never. */
uint64_t acct_cgroup_quantity_sampled(const struct acct_cgroup *cg, enum acct_quantity q);

/* ---- Readers: a consistent copy of what a record serves -------------------
 *
 * What the API, Watch and /metrics serve of a record beside its quantities
 * (which acct_cgroup_get() reads from the counters), copied into a plain
 * struct, so that no reader touches a record's atomics itself.
 *
 * Memory orders, for every field below. A writer (the sampler, the owner)
 * stores values relaxed, then publishes them with a release store: of the
 * group's stamp (sampled_us), of a "known" flag (cpu_rate_known, psi_known,
 * io_rate_known, memory_motion_known, numa_known), of `dead`, or of a pointer
 * or count (memstat, io, io->n). acct_cgroup_read() loads the stamps first
 * and the flags, `dead` and pointers with acquire, then the values relaxed:
 * a value is at least as new as the stamp and flag copied with it (see
 * acct_cgroup_age()). The copy is not atomic as a whole: a pass may land
 * between two of its loads, as between two reads of the record before. */
enum acct_cgroup_read_what {
	ACCT_READ_STATE = 1u << 0,    /* dead, died_us, populated, hierarchies, sample_errors */
	ACCT_READ_CPU_RATE = 1u << 1, /* cpu_rate_known, cpu_rate, cpu_rate_avg */
	ACCT_READ_IO_RATE = 1u << 2,  /* io_rate_known, io_rate */
	ACCT_READ_MOTION = 1u << 3,   /* memory_motion_known, memory_motion */
	ACCT_READ_LOAD = 1u << 4,     /* loadavg */
	ACCT_READ_PSI = 1u << 5,      /* psi_known, psi_avg */
	ACCT_READ_MEMORY = 1u << 6,   /* memstat (the record's array), memstat_bound, numa_known, numa_us */
	ACCT_READ_IO = 1u << 7,       /* has_io and the values per device, copied */
	ACCT_READ_ALL = (1u << 8) - 1,
	/* What a List row shows, a part of the above: cpu_rate_known, cpu_rate,
	 * io_rate_known, io_rate[] of ACCT_IO_READ_BYTES and _WRITE_BYTES,
	 * loadavg[0], psi_known and psi_avg[][ACCT_PSI_SOME][0] (avg10) */
	ACCT_READ_LIST_ROW = 1u << 8,
};

struct acct_cgroup_values {
	/* always: the ages (usec at now_us; UINT64_MAX if never read), loaded first */
	uint64_t age[_ACCT_GROUP_MAX];

	/* ACCT_READ_STATE */
	bool dead;
	bool populated;
	uint32_t hierarchies;            /* bits of enum acct_hierarchy */
	uint64_t died_us;                /* when dead; 0 otherwise */
	uint64_t sample_errors;

	/* ACCT_READ_CPU_RATE, _IO_RATE, _MOTION (the values are copied whether
	 * known or not) */
	bool cpu_rate_known;
	bool io_rate_known;
	bool memory_motion_known;
	double cpu_rate;                 /* cores, last fast interval */
	double cpu_rate_avg[3];          /* 1, 5, 15 minutes */
	double io_rate[_ACCT_IO_STAT_MAX]; /* per second, last fast interval */
	double memory_motion;            /* bytes per second (struct acct_cgroup) */

	/* ACCT_READ_LOAD (and ACCT_READ_LIST_ROW: loadavg[0], load_covered_us,
	 * load_whole_life) */
	unsigned long loadavg[3];        /* kernel fixed point (FSHIFT 11) */
	uint64_t load_covered_us;        /* how long load passes have fed the averages; 0 if never */
	bool load_whole_life;            /* and that is the cgroup's whole life (acct_cgroup_set_load_since()) */

	/* ACCT_READ_PSI (the averages are copied whether known or not) */
	bool psi_known[_ACCT_PSI_MAX];
	uint32_t psi_avg[_ACCT_PSI_MAX][_ACCT_PSI_KIND_MAX][3]; /* hundredths of a percent */

	/* ACCT_READ_MEMORY. memstat is the record's own array (ACCT_MEMSTAT_MAX
	 * values, NULL until read), not a copy: a page reads a few of its keys,
 * and copying all would cost more than they do. Read it with
	 * acct_memstat_value() only, while the record is valid. */
	const int64_t *memstat;
	uint64_t memstat_bound;          /* bytes */
	bool numa_known;
	uint64_t numa_us;                /* when numa was last set; 0: with the slow group */

	/* ACCT_READ_IO: has_io once a device was read (then nr_io may still be 0,
	 * for a moment); the values per device, -1 where the kernel gave none */
	bool has_io;
	unsigned nr_io;
	struct {
		uint16_t device;         /* index in the ledger's device table */
		int64_t v[_ACCT_IO_STAT_MAX];
	} io[ACCT_IO_CG_DEVICES];
};

/* Copy what `what` (bits of enum acct_cgroup_read_what) names of cg into
 * *ret, and the ages at now_us (any value where the ages are not wanted); the
 * other fields are left as they were (the struct is large: only what is
 * asked is written). The caller keeps cg valid ("Concurrency" above).
 * Costs a few loads per field, no lock, no allocation; ACCT_READ_IO copies 6
 * values per device the cgroup has. */
void acct_cgroup_read(const struct acct_cgroup *cg, unsigned what, uint64_t now_us, struct acct_cgroup_values *ret);

/* A memory.stat value of the array acct_cgroup_read() gave (index: from
 * acct_ledger_memstat_find() or below acct_ledger_memstat_count()); -1 where
 * the array is NULL, the index negative or the kernel did not report the key. */
static inline int64_t acct_memstat_value(const int64_t *memstat, int index)
{
	return memstat && index >= 0 ? __atomic_load_n(&memstat[index], __ATOMIC_RELAXED) : -1;
}

/* Whether q has been read for cg at least once (acquire: its value may be
 * read after). */
bool acct_cgroup_quantity_known(const struct acct_cgroup *cg, enum acct_quantity q);
/* How fast q's value moves, per second, where acctd measures it: memory from
 * the sampler's motion estimate, cpu.usage from the CPU rate (cores x 1e6
 * usec/s); false for other quantities and until measured. Motion x age
 * estimates how far a served value may have moved since it was read
 * (docs/counters.md, "Staleness and fresh reads"). */
static inline bool acct_cgroup_motion(const struct acct_cgroup *cg, enum acct_quantity q, double *ret)
{
	/* inline: the List writes four quantities per row, two never move */
	const uint64_t *bits;
	if (q == ACCT_Q_MEMORY && __atomic_load_n(&cg->memory_motion_known, __ATOMIC_ACQUIRE))
		bits = &cg->memory_motion_bits;
	else if (q == ACCT_Q_CPU_USAGE && __atomic_load_n(&cg->cpu_rate_known, __ATOMIC_ACQUIRE))
		bits = &cg->cpu_rate_bits;
	else
		return false;
	uint64_t b = __atomic_load_n(bits, __ATOMIC_RELAXED);
	double v;
	__builtin_memcpy(&v, &b, sizeof(v));
	*ret = q == ACCT_Q_CPU_USAGE ? v * 1e6 : v;
	return true;
}

/* Ask the CPU for what a read of cg will touch beyond the record itself (its
 * path, counters, NUMA sums and memory.stat array), for a caller that walks
 * many records and reads one a few records behind. Never faults. */
static inline void acct_cgroup_prefetch_values(const struct acct_cgroup *cg)
{
	__builtin_prefetch(cg->path);
	for (int q = 0; q < _ACCT_Q_MAX; q++)
		__builtin_prefetch(cg->q[q]);
	__builtin_prefetch(cg->numa);
	__builtin_prefetch(__atomic_load_n(&cg->memstat, __ATOMIC_RELAXED));
}

/* ---- end of Readers ------------------------------------------------------- */

/* memory.stat keys known to the ledger (index -> name); NULL past the end. */
const char *acct_ledger_memstat_key(const struct acct_ledger *l, unsigned index);
unsigned acct_ledger_memstat_count(const struct acct_ledger *l);
/* Index of memory.stat key `key`, or -ENOENT if no cgroup reported it yet. */
int acct_ledger_memstat_find(const struct acct_ledger *l, const char *key);

/* I/O devices. Find: the device's index, or -ENOENT (lock-free). Add: intern
 * it with `name` (may be NULL; truncated to ACCT_IO_NAME_MAX - 1), or return
 * the index it already has; -ENOSPC beyond ACCT_IO_DEVICES_MAX. Get: the
 * device at `index`, NULL past the end. */
int acct_ledger_io_device_find(const struct acct_ledger *l, unsigned major, unsigned minor);
int acct_ledger_io_device_add(struct acct_ledger *l, unsigned major, unsigned minor, const char *name);
const struct acct_io_device *acct_ledger_io_device(const struct acct_ledger *l, unsigned index);
/* Store a cgroup's values of device `device` (an index from the table above;
 * -1 in v[] for a value the kernel did not give). One writer per record.
 * Returns 0, -ENOMEM, or -ENOSPC when the cgroup has ACCT_IO_CG_DEVICES others. */
int acct_cgroup_set_io_device(struct acct_cgroup *cg, unsigned device, const int64_t v[_ACCT_IO_STAT_MAX]);

/* Register the calling thread with RCU (idempotent); a thread that calls
 * rcu_read_lock() must have done so. */
void acct_rcu_register(void);

/* Monotonic clock in usec. */
uint64_t acct_now_us(void);

/* ---- Writers: what the sampler publishes ----------------------------------
 *
 * The sampler's stores into a record, and the few fields of the owner's it
 * reads to decide what to read. One writer per record at a time (a worker
 * holds a cgroup for the whole of its read), so a writer may read back what
 * it stored itself without a lock. The memory orders, once for all of them:
 * - a plain value (an average, a rate, a bound, a flag a reader takes as it
 *   finds it) is stored relaxed: values of one record are no snapshot;
 * - a "known" flag or an age stamp is stored with release after the values
 *   it vouches for, and read with acquire before them (ledger.h, "Ages"), so
 *   a reader that sees it sees at least those values;
 * - the owner's identity fields (hierarchies) are read with acquire: the
 *   inodes the owner stored before them are then visible. */

/* The hierarchies the cgroup is in (bits of enum acct_hierarchy), as the
 * owner last stored them (acct_ledger_update_id()); acquire. */
static inline uint32_t acct_cgroup_get_hierarchies(const struct acct_cgroup *cg)
{
	return __atomic_load_n(&cg->hierarchies, __ATOMIC_ACQUIRE);
}

/* The directory inode of the cgroup in hierarchy h (after
 * acct_cgroup_get_hierarchies(), which orders it); relaxed. */
static inline uint64_t acct_cgroup_get_inode(const struct acct_cgroup *cg, enum acct_hierarchy h)
{
	return __atomic_load_n(&cg->inode[h], __ATOMIC_RELAXED);
}

/* A change of cgroup.events announced by the owner, before it has the cgroup
 * read again: a read that started earlier is then not the final one
 * (acct_cgroup_final()). Acquire and release. */
static inline void acct_cgroup_announce_populated_change(struct acct_cgroup *cg)
{
	__atomic_fetch_add(&cg->populated_changes, 1, __ATOMIC_ACQ_REL);
}

/* Changes of cgroup.events the owner has announced; acquire, taken before a
 * read of cgroup.events so that a change announced after it makes that read
 * not the final one (acct_cgroup_final()). */
static inline uint64_t acct_cgroup_get_populated_changes(const struct acct_cgroup *cg)
{
	return __atomic_load_n(&cg->populated_changes, __ATOMIC_ACQUIRE);
}

/* Whether the cgroup has tasks; from_events: that came from its
 * cgroup.events (which stays known once it did). Relaxed. */
static inline void acct_cgroup_set_populated(struct acct_cgroup *cg, bool populated, bool from_events)
{
	__atomic_store_n(&cg->populated, populated, __ATOMIC_RELAXED);
	if (from_events)
		__atomic_store_n(&cg->events_known, true, __ATOMIC_RELAXED);
}

/* The final-read mark (acct_cgroup_final()): set after a complete read made
 * while empty, with the populated_changes the read was taken against; cleared
 * by a read that found tasks. Release, after the values of that read. */
static inline void acct_cgroup_mark_final(struct acct_cgroup *cg, uint64_t populated_changes)
{
	__atomic_store_n(&cg->final_read, populated_changes + 1, __ATOMIC_RELEASE);
}

static inline void acct_cgroup_clear_final(struct acct_cgroup *cg)
{
	__atomic_store_n(&cg->final_read, 0, __ATOMIC_RELEASE);
}

/* The age stamp of a group's values: release, after every value of the group
 * (ledger.h, "Ages"). */
static inline void acct_cgroup_set_group_sampled(struct acct_cgroup *cg, enum acct_sample_group g, uint64_t now_us)
{
	__atomic_store_n(&cg->sampled_us[g], now_us, __ATOMIC_RELEASE);
}

/* The monotonic time of a group's last good read (0: none), the epoch's
 * time for a steady member's fast group ("Steady cgroups"); acquire, as
 * every age of the ledger is read (ledger.h, ages). */
static inline uint64_t acct_cgroup_get_group_sampled(const struct acct_cgroup *cg, enum acct_sample_group g)
{
	/* the epoch first (acct_cgroup_steady_us()): it covers the fast group */
	uint64_t steady = g == ACCT_GROUP_FAST ? acct_cgroup_steady_us(cg) : 0;
	uint64_t t = __atomic_load_n(&cg->sampled_us[g], __ATOMIC_ACQUIRE);
	return t > steady ? t : steady;
}

/* One more read of this cgroup that failed in part; relaxed. */
static inline void acct_cgroup_count_sample_error(struct acct_cgroup *cg)
{
	__atomic_fetch_add(&cg->sample_errors, 1, __ATOMIC_RELAXED);
}

/* The CPU rate (cores) and its 1/5/15-minute averages as of at_us (the
 * reading they come from). Lazy decay: a pass that finds the cgroup idle
 * does not decay the averages; it says until when the rate was 0
 * (acct_cgroup_cpu_rate_idle()), and acct_cgroup_read() serves
 * avg x exp(-(idle_us - at_us) / tau), what decaying them at each such pass
 * gave (within rounding), so an idle cgroup costs one store per pass and no
 * arithmetic. One writer per record at a time (the sampler); readers take the
 * five fields as one under cpu_rate_seq (a sequence count), so they never mix
 * averages of one reading with the times of another. Readers take them only
 * once acct_cgroup_mark_cpu_rate_known() was called (two readings): an idle
 * cgroup's rate may be stored before that. */
static inline void acct_cgroup_cpu_rate_write_begin(struct acct_cgroup *cg)
{
	uint64_t seq = __atomic_load_n(&cg->cpu_rate_seq, __ATOMIC_RELAXED);
	__atomic_store_n(&cg->cpu_rate_seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void acct_cgroup_cpu_rate_write_end(struct acct_cgroup *cg)
{
	uint64_t seq = __atomic_load_n(&cg->cpu_rate_seq, __ATOMIC_RELAXED);
	__atomic_store_n(&cg->cpu_rate_seq, seq + 1, __ATOMIC_RELEASE);
}

static inline void acct_cgroup_set_cpu_rate(struct acct_cgroup *cg, double rate, const double avg[3], uint64_t at_us)
{
	acct_cgroup_cpu_rate_write_begin(cg);
	acct_cgroup_set_double(&cg->cpu_rate_bits, rate);
	for (int i = 0; i < 3; i++)
		acct_cgroup_set_double(&cg->cpu_rate_avg_bits[i], avg[i]);
	__atomic_store_n(&cg->cpu_rate_avg_us, at_us, __ATOMIC_RELAXED);
	__atomic_store_n(&cg->cpu_rate_idle_us, at_us, __ATOMIC_RELAXED);
	acct_cgroup_cpu_rate_write_end(cg);
}

/* The rate was 0 from the last acct_cgroup_set_cpu_rate() until until_us
 * (a later time than any given before): the rate is 0 and the averages
 * decay over that time when read. */
static inline void acct_cgroup_cpu_rate_idle(struct acct_cgroup *cg, uint64_t until_us)
{
	acct_cgroup_cpu_rate_write_begin(cg);
	acct_cgroup_set_double(&cg->cpu_rate_bits, 0.0);
	__atomic_store_n(&cg->cpu_rate_idle_us, until_us, __ATOMIC_RELAXED);
	acct_cgroup_cpu_rate_write_end(cg);
}

/* Release, after acct_cgroup_set_cpu_rate(). */
static inline void acct_cgroup_mark_cpu_rate_known(struct acct_cgroup *cg)
{
	__atomic_store_n(&cg->cpu_rate_known, true, __ATOMIC_RELEASE);
}

/* Block I/O per second of value k (enum acct_io_stat); relaxed, published by
 * acct_cgroup_mark_io_rate_known() (release). */
static inline void acct_cgroup_set_io_rate(struct acct_cgroup *cg, enum acct_io_stat k, double per_s)
{
	acct_cgroup_set_double(&cg->io_rate_bits[k], per_s);
}

static inline void acct_cgroup_mark_io_rate_known(struct acct_cgroup *cg)
{
	__atomic_store_n(&cg->io_rate_known, true, __ATOMIC_RELEASE);
}

/* A PSI line's avg10/60/300 in hundredths of a percent; relaxed, published
 * for the resource by acct_cgroup_mark_psi_known() (release). */
static inline void acct_cgroup_set_psi_avg(struct acct_cgroup *cg, enum acct_psi_resource r, enum acct_psi_kind k,
					   const uint32_t hundredths[3])
{
	for (int a = 0; a < 3; a++)
		__atomic_store_n(&cg->psi_avg[r][k][a], hundredths[a], __ATOMIC_RELAXED);
}

static inline void acct_cgroup_mark_psi_known(struct acct_cgroup *cg, enum acct_psi_resource r)
{
	__atomic_store_n(&cg->psi_known[r], true, __ATOMIC_RELEASE);
}

/* Fold one rate of memory motion (bytes per second) into the estimate with
 * weight `weight` (the first rate is taken as it is), and mark it known
 * (release, after the value). Its only writer reads back its own value. */
static inline void acct_cgroup_update_memory_motion(struct acct_cgroup *cg, double rate, double weight)
{
	bool known = __atomic_load_n(&cg->memory_motion_known, __ATOMIC_RELAXED);
	double prev = known ? acct_cgroup_get_double(&cg->memory_motion_bits) : rate;
	double next = prev + weight * (rate - prev);
	/* Below a byte a second is still: a decay that reaches 0, so that a
	 * still cgroup's motion is exactly 0 (acct_cgroup_memory_still()). */
	acct_cgroup_set_double(&cg->memory_motion_bits, next < 1.0 ? 0.0 : next);
	__atomic_store_n(&cg->memory_motion_known, true, __ATOMIC_RELEASE);
}

/* Whether memory's motion is known and 0: a reading equal to the last one
 * would leave it as it is. Relaxed (the sampler's own value). */
static inline bool acct_cgroup_memory_still(const struct acct_cgroup *cg)
{
	return __atomic_load_n(&cg->memory_motion_known, __ATOMIC_RELAXED) &&
	       acct_cgroup_get_double(&cg->memory_motion_bits) == 0.0;
}

/* The bound of every byte-valued memory.stat key as last read; relaxed. */
static inline void acct_cgroup_set_memstat_bound(struct acct_cgroup *cg, uint64_t bound)
{
	__atomic_store_n(&cg->memstat_bound, bound, __ATOMIC_RELAXED);
}

/* When the per-node memory was set apart from the slow group; relaxed. */
static inline void acct_cgroup_set_numa_sampled(struct acct_cgroup *cg, uint64_t now_us)
{
	__atomic_store_n(&cg->numa_us, now_us, __ATOMIC_RELAXED);
}

/* The load average (kernel fixed point, FSHIFT 11); relaxed, before the load
 * group's stamp. */
static inline void acct_cgroup_set_loadavg(struct acct_cgroup *cg, const unsigned long avenrun[3])
{
	for (int k = 0; k < 3; k++)
		__atomic_store_n(&cg->loadavg[k], avenrun[k], __ATOMIC_RELAXED);
}

/* Since when load passes have fed the load average (monotonic usec), and
 * whether that is the cgroup's whole life (it appeared while acctd ran, so
 * its averages began at 0 as the kernel's would have). Otherwise an average
 * over a window longer than the time covered is still warming up: it began
 * at 0 although the cgroup had tasks before, and reads low
 * (acct_load_warming()). Relaxed, before the load group's stamp. */
static inline void acct_cgroup_set_load_since(struct acct_cgroup *cg, uint64_t since_us, bool whole_life)
{
	__atomic_store_n(&cg->load_since_us, since_us, __ATOMIC_RELAXED);
	__atomic_store_n(&cg->load_whole_life, whole_life, __ATOMIC_RELAXED);
}
