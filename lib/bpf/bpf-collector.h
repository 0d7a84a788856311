/* bpf-collector.h - the kernel's own cgroup accounting, read through a BPF
 * cgroup iterator: one read() per hierarchy returns a record per cgroup
 * (cgroup-record.h), instead of several cgroupfs files per cgroup.
 *
 * Per hierarchy the collector either attaches the iterator itself (it needs
 * CAP_BPF and CAP_PERFMON, or root) or opens one that a privileged step pinned
 * in bpffs (acctd --bpf-pin, run as ExecStartPre=+: docs/systemd.md), which an
 * unprivileged daemon reads with plain read(). Where neither works the
 * hierarchy is not served and the reason says why, in words an operator can
 * act on; the caller then keeps reading files (the sampler does, per
 * quantity).
 *
 * What a record gives and how exact it is (docs/counters.md, "Bounds"):
 * - page counters (memory, swap or memsw, peak, limits, failcnt): the
 *   kernel's exact values, which include pages pre-charged into per-CPU
 *   charge stocks (acct_memcg_memory_bound());
 * - memcg stats (memory.stat items): the flushed values, which miss the
 *   updates not flushed yet (acct_memcg_stat_bound());
 * - per-node values of a few stat items, flushed as above;
 * - whether the cgroup is populated (exact).
 * Per-CPU data is not read: this kernel build has no per-CPU BTF type tags
 * and no per-CPU symbols (acct_bpf_collector_percpu() says so at run time).
 *
 * Threads: a collector is used from one thread at a time (the sampler's), except
 * the const queries and acct_bpf_collector_read_one(), which any thread may
 * call once it is built. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup-record.h"
#include "cgroup/cgroup-census.h"
#include "cgroup/cgroup-layout.h"
#include "cgroup/memcg-bounds.h"

struct acct_bpf_collector_options {
	const struct acct_hierarchies *layout;
	uint32_t hierarchies; /* bits of enum acct_hierarchy wanted */
	const char *pin_dir;  /* pinned iterators here are used first ("" or NULL: none) */
	const char *pin_note; /* why the pin step left nothing in pin_dir to use (its report), or NULL:
			       * then no pin there is opened, and it is the reason where attaching fails */
	bool attach;          /* may load and attach the program itself */
	const char *btf_path; /* NULL: the running kernel's; another path stands in for it (tests) */
	unsigned nr_nodes;    /* NUMA nodes (0: 1) */
	unsigned nr_cpus;     /* 0: the possible CPUs */
};

struct acct_bpf_collector;

/* Build a collector: for each wanted hierarchy that is mounted, open its pinned
 * iterator or attach one. Never fails for BPF's sake: a hierarchy that cannot
 * be served is recorded with its reason (acct_bpf_collector_reason()).
 * Returns 0, -EINVAL or -ENOMEM. */
int acct_bpf_collector_new(const struct acct_bpf_collector_options *opts, struct acct_bpf_collector **ret);
/* Detach and free. Accepts NULL; returns NULL. */
struct acct_bpf_collector *acct_bpf_collector_free(struct acct_bpf_collector *c);

/* Whether hierarchy h is read through BPF; and whether its last walk worked
 * (a pinned iterator's walk fails with -E2BIG while the hierarchy has more
 * cgroups than one read() holds: then h is read from files, the reason says so). */
bool acct_bpf_collector_serves(const struct acct_bpf_collector *c, enum acct_hierarchy h);
bool acct_bpf_collector_reads(const struct acct_bpf_collector *c, enum acct_hierarchy h);
/* Why h is or is not served ("attached", "pinned at PATH", "no BTF at ...",
 * "not permitted (needs CAP_BPF and CAP_PERFMON) ...", "the kernel's verifier
 * rejected the program (...): <its log's last line>"); "" for a hierarchy
 * that is not mounted. Static storage of c. */
const char *acct_bpf_collector_reason(const struct acct_bpf_collector *c, enum acct_hierarchy h);
/* How the loaded program reads a memcg, for the operator's log: "" where by
 * direct loads (the kernel has bpf_rdonly_cast(), Linux 6.2), else a
 * parenthesised note that it copies the fields with probe reads (Linux 6.1,
 * Debian 12: same records, a few helper calls more per cgroup). "" where
 * nothing was loaded. Static storage. */
const char *acct_bpf_collector_program_note(const struct acct_bpf_collector *c);
/* What the collector says about per-CPU data: read or why not. */
const char *acct_bpf_collector_percpu(const struct acct_bpf_collector *c);
const struct acct_memcg_batching *acct_bpf_collector_batching(const struct acct_bpf_collector *c);
/* Whether any hierarchy is served. */
bool acct_bpf_collector_any(const struct acct_bpf_collector *c);

/* Records of one walk: their bytes, and an index sorted by id. A snapshot
 * walked again keeps the order its last sort found (walk_ids, walk_perm):
 * where the kernel gives the same ids in the same order, the index is that
 * order again, with no sort (acct_bpf_snapshot_sort()). */
struct acct_bpf_snapshot {
	char *data;
	size_t data_size;
	const struct acct_bpf_record **rec; /* into data */
	size_t n, cap;
	uint64_t read_us; /* monotonic time the walk started */
	/* The last sort: its records' ids in walk order, and for each sorted
	 * position the walk's index of its record; walk_n 0: none kept. */
	uint64_t *walk_ids;
	uint32_t *walk_perm;
	const struct acct_bpf_record **scratch; /* walk_cap pointers */
	size_t walk_n, walk_cap;
	uint64_t sorts, sorts_reused;           /* sorts needed, and those the kept order made */
};
void acct_bpf_snapshot_clear(struct acct_bpf_snapshot *s);
/* Sort s->rec[0..n), records in walk order, by id. Where the ids are those
 * of the last sort, in the same order (each one compared: O(n)), the kept
 * permutation orders them; otherwise qsort (O(n log n)), and that order is
 * kept for the next walk (not without memory for it: then the next walk
 * sorts too). Records already in id order are left as they are. Returns
 * whether a sort was needed. */
bool acct_bpf_snapshot_sort(struct acct_bpf_snapshot *s);
/* The record of cgroup id, or NULL. O(log n). */
const struct acct_bpf_record *acct_bpf_snapshot_find(const struct acct_bpf_snapshot *s, uint64_t id);
/* The same, trying *hint first (a position in s->rec, any value): a caller
 * that looks the same cgroup up walk after walk keeps its record's last
 * position there, and while the hierarchy does not change finds it in O(1),
 * where the binary search touched log2(n) records. The hint is only a guess:
 * the record at it is returned only if its id is id. *hint is set to the
 * record's position (unchanged when there is none). */
const struct acct_bpf_record *acct_bpf_snapshot_find_hint(const struct acct_bpf_snapshot *s, uint64_t id,
							   uint32_t *hint);
/* The census (cgroup-census.h) of the cgroups of a whole walk at levels
 * 0..max_level (the root is level 0), into *ret. The kernel's iterator skips
 * cgroups being destroyed, so these are the hierarchy's directories. O(n). */
void acct_bpf_snapshot_census(const struct acct_bpf_snapshot *s, unsigned max_level,
			      struct acct_cgroup_census *ret);
/* The census of a scope (cgroup-census.h) as this walk found it, into
 * *ret: its count is the leaves' and, for each top in the walk, the
 * kernel's count of its live descendants and itself; its sums are those of
 * the scope's ids the walk has. Equal to acct_cgroup_scope_census() exactly
 * where the tops' subtrees hold the scope's ids and no other cgroup (with
 * the odds of a 64-bit collision). Needs the index sorted
 * (acct_bpf_snapshot_sort()). O((tops + ids) log n). */
void acct_bpf_snapshot_census_scope(const struct acct_bpf_snapshot *s, const struct acct_cgroup_scope *scope,
				    struct acct_cgroup_census *ret);

/* Walk only the subtrees below `roots` in hierarchy h from the next walk on
 * (paths below the hierarchy's mount, "/system.slice"; copied): a record per
 * cgroup there, the roots' own included, instead of one per cgroup of the
 * hierarchy. NULL: the whole hierarchy again (the default); empty: no
 * cgroup. For a host where acctd reads a part (discovery's
 * acct_discovery_walk_roots()): the walk then costs what that part holds.
 * Only where the collector attached the iterator itself; a pinned one walks
 * the whole hierarchy. The walking thread attaches a link per root at its
 * next walk; where one cannot be attached (removed since), it walks the whole
 * hierarchy until roots are set again. Any thread. Returns 0, -EINVAL (no
 * such hierarchy) or -ENOMEM (the roots as they were). */
int acct_bpf_collector_set_roots(struct acct_bpf_collector *c, enum acct_hierarchy h, char *const *roots);
/* The number of subtrees the walks of h cover as of the last walk
 * (acct_bpf_collector_set_roots()), or -1 where they cover the whole
 * hierarchy; -EINVAL for no such hierarchy. Any thread (relaxed: a walk
 * may be changing it). */
int acct_bpf_collector_roots(const struct acct_bpf_collector *c, enum acct_hierarchy h);

/* Walk hierarchy h into *snap (its old records are replaced; the buffer is
 * reused). A walk is whole or fails: the kernel ends a cgroup iterator's
 * output at its 8-page seq buffer (about 31 records), so an attached
 * iterator walks a larger hierarchy in several sessions, each writing one
 * class of ids (id % n; n doubles on overflow and is remembered per
 * hierarchy), which costs a visit of every cgroup per session. Returns the
 * number of records, -ENODEV when h is not served, -E2BIG when the walk
 * does not fit one session of a pinned iterator (which cannot be split), or
 * the error of the walk (-EBADMSG: a record of another size or magic). */
int acct_bpf_collector_read(struct acct_bpf_collector *c, enum acct_hierarchy h, struct acct_bpf_snapshot *snap);
/* The same, with page counters only in the memcg records where the program is
 * attached (no stats, events or nodes: a lean walk costs about half; a pinned
 * iterator writes whole records all the same). */
int acct_bpf_collector_read_lean(struct acct_bpf_collector *c, enum acct_hierarchy h,
				 struct acct_bpf_snapshot *snap);
/* The same with page counters and events in the memcg records (no stats or
 * nodes, whose copy is most of a record's cost; a pinned iterator writes
 * whole records all the same). */
int acct_bpf_collector_read_no_stats(struct acct_bpf_collector *c, enum acct_hierarchy h,
				     struct acct_bpf_snapshot *snap);

/* Read the one cgroup whose directory in hierarchy h is `dir` (absolute) now,
 * through an iterator restricted to it, into *ret: the record's head (its
 * tail is not kept). Returns 0, -ENODEV (h not served),
 * -EPERM (the collector only reads pinned iterators: it cannot attach a new
 * one), -ENOENT (no such cgroup) or another negative errno. Any thread may
 * call it, also while the sampler walks with the same collector: it attaches
 * its own link and reads into a buffer of its own, and its read session and
 * a walk's take turns (the program's partition is global to its links). */
int acct_bpf_collector_read_one(const struct acct_bpf_collector *c, enum acct_hierarchy h, const char *dir,
				struct acct_bpf_record *ret);

/* The same with page counters only in a memcg's record (a lean walk's
 * record): what a walk alone needs of one cgroup, for the sampler's reads of
 * the few cgroups whose memory is due (lib/core/sampler-bpf.c). */
int acct_bpf_collector_read_one_lean(const struct acct_bpf_collector *c, enum acct_hierarchy h, const char *dir,
				     struct acct_bpf_record *ret);

/* Pin an iterator for each served hierarchy that the collector attached
 * itself at DIR/<hierarchy name> (created 0755, the pins 0644, readable by an
 * unprivileged daemon). Existing pins there are replaced. Returns the number
 * pinned or a negative errno. */
int acct_bpf_collector_pin(struct acct_bpf_collector *c, const char *dir);

/* ---- the memcg stat index map ---------------------------------------------
 *
 * state[] is indexed by the kernel's private memcg stat index, which no
 * interface names. The map is derived by matching: memory.stat of up to 64
 * cgroups is read, then the hierarchy is walked, then memory.stat is read
 * again; key K maps to index i (in unit u: 1, 1024 or the page size) when, for
 * every sampled cgroup, state[i] * u lies between K's two readings, and no
 * other index does. Keys without a unique match stay unmapped (served from
 * files). */
struct acct_bpf_stat_map {
	unsigned n;
	struct {
		char key[48];     /* as memory.stat names it (v1: total_*, the hierarchical values) */
		uint16_t index;   /* the record's stat slot (acct_bpf_record_state()) */
		uint32_t unit;    /* bytes per state[] unit */
	} e[ACCT_BPF_STATE_MAX];
	unsigned cgroups_used; /* cgroups the map was derived from */
};

/* Derive the map for hierarchy h (the one holding memory.stat) into *ret and
 * tell the program which items to copy per node (those of numa_keys[], up to
 * ACCT_BPF_NODE_ITEMS, which must be mapped). Returns the number of keys
 * mapped, -ENODEV when h is not served, or a negative errno. */
int acct_bpf_collector_map_stats(struct acct_bpf_collector *c, enum acct_hierarchy h,
				 const char *const *numa_keys, struct acct_bpf_stat_map *ret);
/* The memory.stat keys whose per-node values make a cgroup's memory on a
 * node, as acctd defines it from memory.numa_stat: v1 the LRU lists
 * (hierarchical_total), v2 anon, file, kernel stack, page tables and slab.
 * NULL-terminated, static. */
const char *const *acct_bpf_numa_keys(bool v2);
/* Per-node items as set by the last acct_bpf_collector_map_stats(): how many,
 * and the unit (bytes per value) of each. For pinned iterators the privileged
 * step chose them: this reports what it chose (by re-deriving). */
unsigned acct_bpf_collector_node_items(const struct acct_bpf_collector *c, enum acct_hierarchy h,
				       uint32_t units[ACCT_BPF_NODE_ITEMS]);
