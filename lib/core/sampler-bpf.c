/* sampler-bpf.c - the sampler's part of the BPF collector (bpf-collector.h):
 * one walk of the kernel's memcgs per pass replaces most of the memory
 * files' reads (memory, peak, limits, swap, events, memory.stat keys, the
 * working set, NUMA), cross-checked against the files it replaces. CPU time,
 * PSI, I/O and threads always come from files: the kernel keeps them per
 * CPU, out of an iterator's reach here. */
#include "sampler-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/parse.h"
#include "basic/read-file.h"
#include "basic/util.h"
#include "cgroup/cgfs-parse.h"


#define CHECKS 4

static int64_t pages(const struct sample_ctx *x, unsigned long long n)
{
	uint64_t v = (uint64_t)n * (uint64_t)x->w->s->opts.batching.page_size;
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static void set_bpf(struct sample_ctx *x, enum acct_quantity q, int64_t v, uint64_t bound)
{
	acct_cgroup_set(x->cg, q, v);
	acct_cgroup_set_kernel_bound(x->cg, q, bound);
	acct_cgroup_set_sampled(x->cg, q, x->w->s->now_us);
}

/* Unbounded. Past the kernel's flush threshold a memcg's stats_updates stops
 * counting (acct_memcg_stat_bound()): its flushed stats may lag by any amount
 * until a flush, and a record's stats, working set and NUMA have no bound, so
 * they are not taken. In a pass that reads files the working set comes from
 * memory.stat's inactive_file (read just before, which flushed them) and NUMA
 * from memory.numa_stat; a walk alone leaves both as they are, their ages
 * growing. */
static void stats_from_files(struct sample_ctx *x, int64_t usage, uint64_t mem_bound)
{
	struct acct_sampler *s = x->w->s;
	if (!x->files_allowed)
		return;
	if (x->memstat_from_file && x->have_inactive)
		set_bpf(x, ACCT_Q_WORKING_SET, usage > x->inactive ? usage - x->inactive : 0,
			mem_bound + acct_memcg_file_stat_bound(&s->opts.batching));
	if (sampler_numa_from_file(x))
		acct_cgroup_set_numa_sampled(x->cg, s->now_us);
}

static void sampler_bpf_unbounded(struct sample_ctx *x, int64_t usage, uint64_t mem_bound)
{
	x->w->part.bpf_unbounded++;
	stats_from_files(x, usage, mem_bound);
}

/* Unchanged records. An idle cgroup's record is the same pass after pass,
 * and setting the ledger's values from it again changes none of them: each
 * set reads the counter first, a cache miss per quantity that was most of a
 * record's cost in the sampler at 10,000 cgroups. So where the page counters
 * (and the descendants their bound depends on) equal those last applied,
 * only the ages are renewed: the values are this walk's, exactly as if set.
 * What a set does besides is kept: the pass's drift (0), and the motion's
 * decay, by waiting until it has decayed to 0 (below 1 byte a second,
 * acct_cgroup_update_memory_motion()). Wherever files set these quantities
 * the applied record is forgotten (struct bpf_applied). */
static bool counters_unchanged(const struct sample_ctx *x, const struct acct_bpf_record *r)
{
	const struct bpf_applied *a = &x->st->applied;
	const uint32_t mask = ACCT_BPF_F_HIGH;
	return a->counters && a->usage == r->usage && a->watermark == r->watermark && a->max == r->max &&
	       a->swap_usage == r->swap_usage && a->swap_max == r->swap_max && a->high == r->high &&
	       (a->flags & mask) == (r->flags & mask) && a->nr_descendants == r->nr_descendants &&
	       acct_cgroup_memory_still(x->cg);
}

static void counters_applied(struct sample_ctx *x, const struct acct_bpf_record *r, bool v1)
{
	struct bpf_applied *a = &x->st->applied;
	/* what set_counters() set from it, whose ages a record found unchanged renews */
	a->quantities = QBIT(ACCT_Q_MEMORY) | QBIT(ACCT_Q_MEMORY_PEAK) | QBIT(ACCT_Q_MEMORY_MAX) | QBIT(ACCT_Q_SWAP);
	if (!v1) {
		a->quantities |= QBIT(ACCT_Q_SWAP_MAX);
		if (r->flags & ACCT_BPF_F_HIGH)
			a->quantities |= QBIT(ACCT_Q_MEMORY_HIGH);
	}
	a->usage = r->usage;
	a->watermark = r->watermark;
	a->max = r->max;
	a->swap_usage = r->swap_usage;
	a->swap_max = r->swap_max;
	a->high = r->high;
	a->flags = (a->flags & ~ACCT_BPF_F_HIGH) | (r->flags & ACCT_BPF_F_HIGH);
	a->nr_descendants = r->nr_descendants;
	a->counters = true;
}

static void set_counters(struct sample_ctx *x, const struct acct_bpf_record *r, int64_t usage, uint64_t mem_bound)
{
	struct acct_sampler *s = x->w->s;
	bool v1 = s->mem_hier != ACCT_HIER_UNIFIED;

	if (counters_unchanged(x, r)) {
		x->counters_same = true;
		x->w->part.bpf_unchanged++;
		if (!x->memory_set)
			histogram_add(&x->w->part.drift_memory, 0);
		x->memory_set = true;
		x->st->memory_at = s->now_us;
		/* One stamp for the quantities the record set (their ages were
		 * six stores, one by one: a steady cgroup's pass should touch as
		 * little as it can). */
		acct_cgroup_set_sampled_set(x->cg, x->st->applied.quantities, s->now_us);
		return;
	}
	sampler_set_memory(x, usage);
	acct_cgroup_set_kernel_bound(x->cg, ACCT_Q_MEMORY, mem_bound);
	acct_cgroup_set_sampled(x->cg, ACCT_Q_MEMORY, s->now_us);
	set_bpf(x, ACCT_Q_MEMORY_PEAK, pages(x, r->watermark), mem_bound);
	set_bpf(x, ACCT_Q_MEMORY_MAX, sampler_limit_value((uint64_t)pages(x, r->max)), 0);
	if (v1) {
		/* memsw and memory both hold the same pre-charged stock */
		set_bpf(x, ACCT_Q_SWAP, r->swap_usage > r->usage ? pages(x, r->swap_usage - r->usage) : 0, 0);
	} else {
		set_bpf(x, ACCT_Q_SWAP, pages(x, r->swap_usage), 0); /* charged without stock */
		set_bpf(x, ACCT_Q_SWAP_MAX, sampler_limit_value((uint64_t)pages(x, r->swap_max)), 0);
		if (r->flags & ACCT_BPF_F_HIGH)
			set_bpf(x, ACCT_Q_MEMORY_HIGH, sampler_limit_value((uint64_t)pages(x, r->high)), 0);
	}
	counters_applied(x, r, v1);
}

/* The memory group from the record, at every pass that reads memory (the
 * root keeps its files: its own reading is defined apart,
 * acct_sampler_root_memory()): page counters and events at every pass, the
 * stats (memory.stat keys, working set, NUMA) at slow passes, whose group
 * they are (a fast pass's walk leaves them out: their copy was most of a
 * record's cost). A walk alone (ACCT_PASS_KERNEL, bpf_interval) is leaner
 * still: page counters only, applied to memory, peak, limits and swap.
 *
 * Bounds (docs/counters.md): a page counter includes the charge stock
 * (acct_memcg_memory_bound(), by the record's descendants), a flushed stat
 * misses the unflushed updates (acct_memcg_stat_bound(), by the record's
 * stats_updates); read from files, the same bounds with the unknowns at
 * their largest.
 *
 * Budgets. bytes_budget is also the unflushed error acctd accepts from the
 * kernel: in a pass that reads files, a cgroup whose record's stat bound
 * exceeds it has its memory.stat read (which flushes the pending updates
 * when they pass the kernel's threshold) instead of taking the record's
 * keys, so a small budget buys tighter memory.stat bounds with file reads,
 * and a large one saves them. */
void sampler_bpf_memory(struct sample_ctx *x)
{
	struct acct_sampler *s = x->w->s;
	const struct acct_bpf_record *r = x->mem_rec;
	const struct acct_memcg_batching *b = &s->opts.batching;
	uint64_t mem_bound = acct_memcg_memory_bound(b, r->nr_descendants);
	int64_t usage = pages(x, r->usage);

	x->w->part.bpf_cgroups++;
	x->st->own_memory = usage;
	x->st->own_memory_valid = true;
	set_counters(x, r, usage, mem_bound);
	if (!(r->flags & ACCT_BPF_F_STATS) || !(__atomic_load_n(&s->parts, __ATOMIC_RELAXED) & ACCT_BPF_PART_STAT))
		return;
	/* ACCT_MEMCG_NO_BOUND (the kernel stopped counting: sampler_bpf_unbounded()) is
	 * over every budget. */
	uint64_t stat_bound = acct_memcg_stat_bound(b, r->stats_updates);
	bool unbounded = stat_bound == ACCT_MEMCG_NO_BOUND;
	if (s->mem_hier != ACCT_HIER_UNIFIED) {
		/* v1: a record's flushed stats are not taken. On v1 memory
		 * hierarchies they were seen to lag memory.stat by far more than
		 * stats_updates explains (90 MB of cache against a bound of
		 * 512 KiB; kernel-truth: a total_mapped_file 7 MB off), so there
		 * memory.stat, the working set and NUMA come from the files when a
		 * slow pass reads them (slow_due()), and keep their values and
		 * ages otherwise; the page counters above are exact. */
		if (unbounded)
			x->w->part.bpf_unbounded++;
		if (x->memstat_from_file)
			stats_from_files(x, usage, mem_bound);
		return;
	}
	if (!x->memstat_from_file && x->files_allowed && (unbounded || stat_bound > s->bytes_budget) &&
	    x->st->spec[F_MEMORY_STAT].name) {
		/* Beyond the budget: the file, as in a slow pass (see Budgets). */
		x->w->part.bpf_stat_reads++;
		if (sampler_get(x, F_MEMORY_STAT)) {
			if (cgfs_parse_flat_keyed(x->w->buf, sampler_memstat_kv, x) < 0)
				sampler_fail(x, ACCT_ERR_GARBAGE);
			else {
				x->memstat_from_file = true;
				acct_cgroup_set_memstat_bound(x->cg, acct_memcg_file_stat_bound(b));
			}
		}
	}
	/* A walk alone keeps the last file's keys where the record's are worse
	 * than the budget allows (see Budgets). */
	bool over_budget = !x->files_allowed && (unbounded || stat_bound > s->bytes_budget);
	if (!x->memstat_from_file && !over_budget) {
		for (unsigned i = 0; i < s->stat_map.n; i++) {
			unsigned idx = s->stat_map.e[i].index;
			if (idx >= r->nr_state || acct_bpf_record_state(r)[idx] < 0 || s->stat_key[i] < 0)
				continue;
			(void)acct_cgroup_set_memstat_at(s->ledger, x->cg, (unsigned)s->stat_key[i],
							 acct_bpf_record_state(r)[idx] * (int64_t)s->stat_map.e[i].unit);
		}
		acct_cgroup_set_memstat_bound(x->cg, stat_bound);
	}
	if (unbounded) {
		sampler_bpf_unbounded(x, usage, mem_bound);
		return;
	}
	if (s->inactive_entry >= 0 && s->stat_map.e[s->inactive_entry].index < r->nr_state) {
		int64_t inactive = acct_bpf_record_state(r)[s->stat_map.e[s->inactive_entry].index] *
				   (int64_t)s->stat_map.e[s->inactive_entry].unit;
		set_bpf(x, ACCT_Q_WORKING_SET, usage > inactive ? usage - inactive : 0, mem_bound + stat_bound);
	}
	if ((r->flags & ACCT_BPF_F_NODES) && s->node_items && r->nr_node_items == s->node_items) {
		for (unsigned n = 0; n < r->nr_nodes; n++) { /* until the ledger's nodes end */
			int64_t sum = 0;
			for (unsigned k = 0; k < s->node_items; k++)
				sum += acct_bpf_record_node(r, n)[k] * (int64_t)s->node_units[k];
			if (acct_cgroup_set_node(x->cg, n, sum) < 0)
				break;
		}
		acct_cgroup_set_numa_sampled(x->cg, s->now_us);
	} else if (s->nr_numa_entries) {
		int64_t sum = 0;
		for (unsigned k = 0; k < s->nr_numa_entries; k++) {
			unsigned e = (unsigned)s->numa_entry[k], idx = s->stat_map.e[e].index;
			if (idx >= r->nr_state)
				return;
			sum += acct_bpf_record_state(r)[idx] * (int64_t)s->stat_map.e[e].unit;
		}
		if (acct_cgroup_set_node(x->cg, 0, sum) == 0)
			acct_cgroup_set_numa_sampled(x->cg, s->now_us);
	}
}

void sampler_bpf_memory_events(struct sample_ctx *x)
{
	static const enum acct_quantity events[_ACCT_BPF_EV_MAX] = {
		[ACCT_BPF_EV_LOW] = ACCT_Q_MEMORY_EVENTS_LOW,
		[ACCT_BPF_EV_HIGH] = ACCT_Q_MEMORY_EVENTS_HIGH,
		[ACCT_BPF_EV_MAX] = ACCT_Q_MEMORY_EVENTS_MAX,
		[ACCT_BPF_EV_OOM] = ACCT_Q_MEMORY_EVENTS_OOM,
		[ACCT_BPF_EV_OOM_KILL] = ACCT_Q_MEMORY_EVENTS_OOM_KILL,
		[ACCT_BPF_EV_OOM_GROUP_KILL] = ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL,
	};
	const struct acct_bpf_record *r = x->mem_rec;
	struct bpf_applied *a = &x->st->applied;
	/* Unchanged records (above): the same events as applied last, none to
	 * restart (a new source's first reading is set unchecked), change no
	 * value; their age is the fast group's. */
	const uint32_t mask = ACCT_BPF_F_EVENTS | ACCT_BPF_F_UNDER_OOM;
	uint64_t restart = 0;
	for (int i = 0; i < _ACCT_BPF_EV_MAX; i++)
		restart |= x->st->restart & QBIT(events[i]);
	bool same = a->events_valid && !restart && memcmp(a->events, r->events, sizeof(a->events)) == 0 &&
		    a->failcnt == r->failcnt && (a->flags & mask) == (r->flags & mask);
	x->events_same = same;
	if (same)
		return;
	uint64_t invariant_errors = x->w->part.errors[ACCT_ERR_INVARIANT];
	if (x->w->s->mem_hier == ACCT_HIER_UNIFIED) {
		if (r->flags & ACCT_BPF_F_EVENTS)
			for (int i = 0; i < _ACCT_BPF_EV_MAX; i++)
				sampler_set_checked(x, events[i], (int64_t)MIN(r->events[i], (uint64_t)INT64_MAX));
	} else {
		/* v1, as from the files: failcnt as "max", oom_control's oom_kill and under_oom */
		sampler_set_unchecked(x, ACCT_Q_MEMORY_EVENTS_MAX, (int64_t)MIN(r->failcnt, (uint64_t)INT64_MAX));
		if (r->flags & ACCT_BPF_F_EVENTS)
			sampler_set_checked(x, ACCT_Q_MEMORY_EVENTS_OOM_KILL,
					    (int64_t)MIN(r->events[ACCT_BPF_EV_OOM_KILL], (uint64_t)INT64_MAX));
		acct_cgroup_set(x->cg, ACCT_Q_MEMORY_UNDER_OOM, !!(r->flags & ACCT_BPF_F_UNDER_OOM));
	}
	memcpy(a->events, r->events, sizeof(a->events));
	a->failcnt = r->failcnt;
	a->flags = (a->flags & ~mask) | (r->flags & mask);
	/* a value refused for going backwards is checked again next time */
	a->events_valid = x->w->part.errors[ACCT_ERR_INVARIANT] == invariant_errors;
}

/* Whether r, a record of the memcg hierarchy, serves cg's memory: a memcg's
 * record, memory still served by the collector, and not the root's (whose
 * own reading is defined apart, acct_sampler_root_memory()). */
static bool serves_memory(const struct acct_sampler *s, const struct acct_cgroup *cg, const struct acct_bpf_record *r)
{
	return (r->flags & ACCT_BPF_F_MEMCG) && (__atomic_load_n(&s->parts, __ATOMIC_RELAXED) & ACCT_BPF_PART_MEMORY) &&
	       strcmp(cg->path, "/") != 0;
}

uint64_t sampler_bpf_psi_sum(const struct acct_bpf_record *r)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < r->nr_psi && i < ACCT_BPF_PSI_MAX; i++)
		sum += r->psi_total[i] / 1000;
	return sum;
}

/* The records of cg for this pass, found by the directory inode the ledger
 * keeps per hierarchy: its memcg record (NULL where files serve it, and for a
 * cgroup created since the walk) and whether it is populated (1, 0, -1
 * unknown): the OR over the records of every hierarchy it is in, when all
 * have one (else cgroup.events). */
void sampler_bpf_lookup(struct sample_ctx *x)
{
	struct acct_sampler *s = x->w->s;
	uint32_t h = acct_cgroup_get_hierarchies(x->cg);
	unsigned parts = __atomic_load_n(&s->parts, __ATOMIC_RELAXED);
	bool all = h != 0, any = false;

	x->mem_rec = NULL;
	x->psi_rec = NULL;
	x->bpf_populated = -1;
	for (int i = 0; i < _ACCT_HIER_MAX; i++) {
		if (!(h & (1u << i)))
			continue;
		/* By its position in the last walk: an unchanged hierarchy's
		 * record is where it was (the binary search of every cgroup and
		 * pass touched 14 records at 10,000 cgroups to find it). */
		const struct acct_bpf_record *r =
			s->snap_valid[i] ? acct_bpf_snapshot_find_hint(&s->snap[i],
								       acct_cgroup_get_inode(x->cg, (enum acct_hierarchy)i),
								       &x->st->rec_hint[i])
					 : NULL;
		if (!r) {
			all = false;
			continue;
		}
		any |= (r->flags & ACCT_BPF_F_POPULATED) != 0;
		if (i == s->mem_hier && serves_memory(s, x->cg, r))
			x->mem_rec = r;
		if (i == ACCT_HIER_UNIFIED && (r->flags & ACCT_BPF_F_PSI))
			x->psi_rec = r;
	}
	if ((all || any) && (parts & ACCT_BPF_PART_POPULATED))
		x->bpf_populated = any;
}

/* Freshness from the budget. A walk alone (ACCT_PASS_KERNEL) refreshes the
 * memory between fast passes, and its cost was a walk of every memcg, idle
 * or not, as often as KERNEL_CPU_SHARE allowed. Its work list is now the
 * cgroups whose memory is due (acct_sampler_kernel_due()): those that moved
 * at the last fast pass, once motion x age reaches the bytes budget, so
 * that a value's expected staleness stays within what the operator allows
 * and an idle cgroup costs nothing between fast passes. Up to ONE_MAX of
 * them are read one by one (an iterator restricted to the cgroup, page
 * counters only); more are read with one walk of the hierarchy, as before. */
#define ONE_MAX 32

void sampler_bpf_one(struct sample_ctx *x, size_t index)
{
	struct acct_sampler *s = x->w->s;
	x->mem_rec = NULL;
	x->psi_rec = NULL;
	x->bpf_populated = -1;
	if (index < s->nr_work && s->one_ok[index] && serves_memory(s, x->cg, &s->one_recs[index]))
		x->mem_rec = &s->one_recs[index];
}

/* The memory file of cg in the collector's memcg hierarchy, by path. */
static int check_path(const struct acct_sampler *s, const struct acct_cgroup *cg, const char *file, char *buf,
		      size_t size)
{
	int n = snprintf(buf, size, "%s%s/%s", s->opts.layout->mount[s->mem_hier],
			 strcmp(cg->path, "/") == 0 ? "" : cg->path, file);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* A cross-check's reading of a memory file, opened now (not the pass's
 * cached descriptor: this is the file's value around the walk). */
static int read_memory_file(const char *path, uint64_t *ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	int64_t v;
	if (fd < 0)
		return -errno;
	int r = acct_memory_read_fd(fd, &v);
	if (r < 0)
		return r;
	*ret = (uint64_t)v;
	return 0;
}

enum acct_bracket acct_bracket_judge(uint64_t v, uint64_t before, uint64_t after)
{
	if (v >= MIN(before, after) && v <= MAX(before, after))
		return ACCT_BRACKET_AGREE;
	return before == after ? ACCT_BRACKET_MISMATCH : ACCT_BRACKET_INCONCLUSIVE;
}

/* Note a mismatch of `what` in cg: the record's v outside [a, b]. */
static void note_mismatch(struct acct_pass_report *rep, bool *flag, const struct acct_cgroup *cg, const char *what,
			  int64_t v, uint64_t a, uint64_t b)
{
	*flag = true;
	rep->bpf_mismatches++;
	snprintf(rep->last_mismatch, sizeof(rep->last_mismatch), "%s %s: bpf %" PRId64 " not in [%" PRIu64 ", %" PRIu64 "]",
		 cg->path, what, v, MIN(a, b), MAX(a, b));
}

/* Confirmation of a memory check that did not agree. Even two equal file
 * readings around a walk prove no stillness: memory that a task maps and
 * unmaps in a loop returns to the same value many times a millisecond, and
 * a walk of many cgroups takes milliseconds. So a disagreement is tried
 * again, the cgroup alone: its file, its record read alone, its file
 * again, microseconds apart; one agreement clears it. A collector that
 * really reads wrong disagrees every time, so more tries cost only where
 * it does. Microseconds apart only where the thread runs on: preempted
 * between its reads (TSan beside two CPU hogs), a try catches a dip often
 * enough that three in a row did, 4 times in 431 checks of the flickering
 * cgroups of test_bpf_collector.py. Tries at most: */
#define CONFIRM_TRIES 8

/* One memory cross-check: the record's value v against the files' `before`
 * and `after`. Returns whether it counts as a check (it proved something):
 * agreement, or a mismatch that CONFIRM_TRIES reads of the cgroup alone
 * also found (noted in rep and *flag); a disagreement that could not be
 * confirmed (the cgroup went; a pinned iterator cannot read one cgroup:
 * then only a still bracket counts) is no check. */
static bool check_memory(struct acct_sampler *s, bool *flag, const struct acct_cgroup *cg, const char *mem_file,
			 uint64_t v, uint64_t before, uint64_t after)
{
	struct acct_pass_report *rep = &s->bpf_report;
	enum acct_bracket j = acct_bracket_judge(v, before, after);
	char path[4096];

	for (int t = 0; t < CONFIRM_TRIES && j != ACCT_BRACKET_AGREE; t++) {
		struct acct_bpf_record rec;
		uint64_t a, b;
		if (check_path(s, cg, mem_file, path, sizeof(path)) < 0 || read_memory_file(path, &a) < 0 ||
		    check_path(s, cg, "", path, sizeof(path)) < 0)
			return false; /* gone */
		int r = acct_bpf_collector_read_one_lean(s->opts.collector, (enum acct_hierarchy)s->mem_hier, path, &rec);
		if (r == -EPERM)
			break; /* pinned: the first verdict stands */
		if (r < 0 || check_path(s, cg, mem_file, path, sizeof(path)) < 0 || read_memory_file(path, &b) < 0)
			return false;
		v = rec.usage * (uint64_t)s->opts.batching.page_size;
		before = a;
		after = b;
		j = acct_bracket_judge(v, before, after);
	}
	if (j == ACCT_BRACKET_MISMATCH)
		note_mismatch(rep, flag, cg, "memory", (int64_t)v, before, after);
	return j != ACCT_BRACKET_INCONCLUSIVE;
}

/* A walk alone over a few cgroups: each one's record alone, with the memory
 * file read before and after it for the first CHECKS of them (the walk's
 * cross-check). Returns false where it cannot (a pinned iterator: no
 * reads of one cgroup; no memory): then the hierarchy is walked. */
static bool read_each(struct acct_sampler *s, const char *mem_file)
{
	struct acct_pass_report *rep = &s->bpf_report;
	char path[4096];

	if (s->flags != ACCT_PASS_KERNEL || s->nr_work > ONE_MAX || s->mem_hier < 0 ||
	    !(__atomic_load_n(&s->parts, __ATOMIC_RELAXED) & ACCT_BPF_PART_MEMORY))
		return false;
	if (s->nr_work > s->one_cap) {
		struct acct_bpf_record *r = reallocarray(s->one_recs, ONE_MAX, sizeof(*r));
		if (!r)
			return false;
		s->one_recs = r;
		bool *ok = reallocarray(s->one_ok, ONE_MAX, sizeof(*ok));
		if (!ok)
			return false;
		s->one_ok = ok;
		s->one_cap = ONE_MAX;
	}
	bool mem_bad = false;
	size_t nchk = 0;
	for (size_t i = 0; i < s->nr_work; i++) {
		const struct acct_cgroup *cg = s->work[i];
		uint64_t before = 0, after;
		s->one_ok[i] = false;
		if (!(acct_cgroup_get_hierarchies(cg) & (1u << s->mem_hier)) || strcmp(cg->path, "/") == 0)
			continue;
		bool check = nchk < CHECKS && check_path(s, cg, mem_file, path, sizeof(path)) == 0 &&
			     read_memory_file(path, &before) == 0;
		if (check_path(s, cg, "", path, sizeof(path)) < 0)
			continue;
		int r = acct_bpf_collector_read_one_lean(s->opts.collector, (enum acct_hierarchy)s->mem_hier, path,
							 &s->one_recs[i]);
		if (r == -EPERM)
			return false; /* pinned: walk */
		if (r < 0) {
			if (r != -ENOENT) /* removed meanwhile */
				rep->errors[ACCT_ERR_UNREADABLE]++;
			continue;
		}
		/* Read by path: another cgroup made under it since discovery
		 * last looked is a stranger whose record is not this one's
		 * (this cgroup is gone; discovery will say so). */
		if (s->one_recs[i].id != acct_cgroup_get_inode(cg, (enum acct_hierarchy)s->mem_hier))
			continue;
		s->one_ok[i] = true;
		rep->bpf_records++;
		if (check && check_path(s, cg, mem_file, path, sizeof(path)) == 0 && read_memory_file(path, &after) == 0) {
			nchk++;
			uint64_t v = s->one_recs[i].usage * (uint64_t)s->opts.batching.page_size;
			rep->bpf_checks += check_memory(s, &mem_bad, cg, mem_file, v, before, after);
		}
	}
	s->streak[0] = mem_bad ? s->streak[0] + 1 : 0;
	if (s->streak[0] >= ACCT_BPF_MISMATCH_PASSES) {
		__atomic_fetch_and(&s->parts, ~(unsigned)ACCT_BPF_PART_MEMORY, __ATOMIC_RELAXED);
		rep->bpf_fallbacks++;
	}
	s->one_mode = true;
	return true;
}

/* Walk hierarchy i into s->snap[i] (snap_valid[i] when it worked). */
static void walk_one(struct acct_sampler *s, int i)
{
	struct acct_pass_report *rep = &s->bpf_report;

	if (!acct_bpf_collector_serves(s->opts.collector, i))
		return;
	/* A walk alone refreshes page counters only (see sample_one()); a fast
	 * pass the page counters and events (the stats, working set and NUMA
	 * are the slow group's); a slow pass everything. */
	int r = s->flags & ACCT_PASS_KERNEL  ? acct_bpf_collector_read_lean(s->opts.collector, i, &s->snap[i])
		: s->flags & ACCT_PASS_SLOW ? acct_bpf_collector_read(s->opts.collector, i, &s->snap[i])
					      : acct_bpf_collector_read_no_stats(s->opts.collector, i, &s->snap[i]);
	if (r < 0) {
		/* Too many cgroups for a pinned iterator is a state the reason
		 * shows, not a failed read. */
		if (r != -E2BIG)
			rep->errors[ACCT_ERR_UNREADABLE]++;
		return;
	}
	s->snap_valid[i] = true;
	rep->bpf_records += (uint64_t)r;
}

/* The hierarchies other than the memcg one that this pass must walk. Their
 * records say only whether a cgroup is populated (sampler_bpf_lookup()), and
 * populated in one hierarchy is populated: a cgroup that the memcg walk found
 * populated needs no other record. One that it did not find, or found empty,
 * needs a record of every hierarchy it is in (else cgroup.events is read),
 * so those are walked. A walk alone serves memory only. On a pure v2 host
 * there is one hierarchy; on a hybrid one with one task in each cgroup this
 * saves three walks of four. A quiet empty cgroup (sampler.c,
 * sampler_empty_quiet()) needs none either: its watch says what a record
 * would, and if the memcg record shows a task it is read in full (with
 * cgroup.events) this pass and not quiet at the next. */
static uint32_t walk_needed(const struct acct_sampler *s)
{
	uint32_t need = 0, all = 0;

	if (s->flags & ACCT_PASS_KERNEL)
		return 0;
	for (int i = 0; i < _ACCT_HIER_MAX; i++)
		if (i != s->mem_hier && acct_bpf_collector_serves(s->opts.collector, i))
			all |= 1u << i;
	if (!(__atomic_load_n(&s->parts, __ATOMIC_RELAXED) & ACCT_BPF_PART_POPULATED))
		return 0; /* nothing would use them */
	bool mem = s->mem_hier >= 0 && s->snap_valid[s->mem_hier];
	/* The work list is in path order and the records in id order, which
	 * are the same order wherever cgroups were made parents first and
	 * siblings in name order: each record is then the one after the last
	 * found, and the search (log2(n) records touched, 4.5% of acctd's
	 * CPU at 10,101 idle cgroups) is only the fallback. */
	uint32_t hint = 0;
	for (size_t k = 0; k < s->nr_work && need != all; k++) {
		const struct acct_cgroup *cg = s->work[k];
		uint32_t h = acct_cgroup_get_hierarchies(cg);
		if (mem && (h & (1u << s->mem_hier))) {
			const struct acct_bpf_record *r = acct_bpf_snapshot_find_hint(
				&s->snap[s->mem_hier], acct_cgroup_get_inode(cg, (enum acct_hierarchy)s->mem_hier), &hint);
			if (r)
				hint++;
			if (r && (r->flags & ACCT_BPF_F_POPULATED))
				continue;
		}
		if (sampler_empty_quiet(s, cg, cg->sampler_state, acct_cgroup_get_populated_changes(cg)))
			continue;
		need |= h & all;
	}
	return need;
}

/* The pressure witness (sampler.c, psi_due()) is in the records of the
 * unified hierarchy. Where that is the memcg hierarchy (a pure v2 host) it
 * comes with every pass's walk; on a hybrid host the unified hierarchy is
 * walked for it every PSI_WITNESS_US, so that a stall no other trace shows
 * is read within that (plus the kernel's 2 s of averaging) instead of at
 * the minute's refresh; its records are small (no memcg there). */
#define PSI_WITNESS_US (10 * USEC_PER_SEC)

static bool psi_walk_due(const struct acct_sampler *s)
{
	return !(s->flags & ACCT_PASS_KERNEL) && s->mem_hier != ACCT_HIER_UNIFIED &&
	       acct_bpf_collector_serves(s->opts.collector, ACCT_HIER_UNIFIED) &&
	       (!s->psi_walk_at || s->now_us - s->psi_walk_at >= PSI_WITNESS_US);
}

void acct_sampler_want_census_of(struct acct_sampler *s, uint32_t hierarchies, unsigned max_level,
				 struct acct_cgroup_scope *scopes[_ACCT_HIER_MAX])
{
	for (int i = 0; scopes && i < _ACCT_HIER_MAX; i++) {
		struct acct_cgroup_scope *old = __atomic_exchange_n(&s->census_scope[i], TAKE_PTR(scopes[i]),
								    __ATOMIC_ACQ_REL);
		free(old);
	}
	/* (without a collector no pass walks, so none takes it) */
	__atomic_store_n(&s->census_level, max_level, __ATOMIC_RELAXED);
	__atomic_or_fetch(&s->census_want, hierarchies, __ATOMIC_RELEASE);
}

void acct_sampler_want_census(struct acct_sampler *s, uint32_t hierarchies, unsigned max_level)
{
	acct_sampler_want_census_of(s, hierarchies, max_level, NULL);
}

/* The census asked for, in a full fast pass (worker 0, after the pass's own
 * walks): from the snapshot of each hierarchy this pass walked, and a lean
 * walk of each other one (a hierarchy without memcg values writes small
 * records: about what one walk of the memcg hierarchy costs, once per
 * rescan_interval instead of a readdir of every directory); of the whole
 * walk, or of the scope asked (then freed). A failed walk leaves its bit
 * out, so the owner scans. */
static void take_census(struct acct_sampler *s)
{
	struct acct_pass_report *rep = &s->bpf_report;

	if ((s->flags & (ACCT_PASS_FAST | ACCT_PASS_EVENT | ACCT_PASS_KERNEL)) != ACCT_PASS_FAST)
		return;
	uint32_t want = __atomic_exchange_n(&s->census_want, 0, __ATOMIC_ACQUIRE);
	unsigned level = __atomic_load_n(&s->census_level, __ATOMIC_RELAXED);
	rep->census_taken = want;
	for (int i = 0; want && i < _ACCT_HIER_MAX; i++) {
		if (!(want & (1u << i)))
			continue;
		_cleanup_free_ struct acct_cgroup_scope *scope =
			__atomic_exchange_n(&s->census_scope[i], NULL, __ATOMIC_ACQ_REL);
		if (!acct_bpf_collector_serves(s->opts.collector, i))
			continue;
		if (!s->snap_valid[i]) {
			int r = acct_bpf_collector_read_lean(s->opts.collector, i, &s->snap[i]);
			if (r < 0) {
				if (r != -E2BIG)
					rep->errors[ACCT_ERR_UNREADABLE]++;
				continue;
			}
			s->snap_valid[i] = true;
			rep->bpf_records += (uint64_t)r;
		}
		if (scope)
			acct_bpf_snapshot_census_scope(&s->snap[i], scope, &rep->census[i]);
		else
			acct_bpf_snapshot_census(&s->snap[i], level, &rep->census[i]);
		rep->census_mask |= 1u << i;
	}
}

/* Walk every served hierarchy into one snapshot each (worker 0, at the start
 * of a pass that reads memory; the other workers wait for it), with the
 * cross-checks around the walk: worker 0 reads the memory file of CHECKS
 * cgroups of the work list (rotating), walks, and reads them again; the
 * record's value must lie between the two file readings. Once per pass it
 * does the same for one cgroup's memory.stat and every mapped key. A value
 * outside is a mismatch (counted, the last one reported);
 * ACCT_BPF_MISMATCH_PASSES passes in a row with a mismatch move that part
 * back to files for good (logged by the caller from the report), since the
 * timing no longer explains it. */
void sampler_bpf_walk(struct acct_sampler *s)
{
	struct acct_pass_report *rep = &s->bpf_report;
	const char *mem_file = s->mem_hier == ACCT_HIER_UNIFIED ? "memory.current" : "memory.usage_in_bytes";
	struct {
		struct acct_cgroup *cg;
		uint64_t before;
		bool ok;
	} chk[CHECKS];
	size_t nchk = 0;
	char path[4096];
	_cleanup_free_ char *stat_before = NULL, *stat_after = NULL;
	struct acct_cgroup *stat_cg = NULL;

	uint64_t t_each = acct_now_us();
	if (read_each(s, mem_file)) {
		rep->bpf_walk_us = acct_now_us() - t_each;
		return;
	}
	unsigned parts = __atomic_load_n(&s->parts, __ATOMIC_RELAXED);
	if (s->mem_hier >= 0 && (parts & ACCT_BPF_PART_MEMORY))
		for (size_t i = 0; i < s->nr_work && nchk < CHECKS; i++) {
			struct acct_cgroup *cg = s->work[(s->check_cursor + i) % s->nr_work];
			if (!(acct_cgroup_get_hierarchies(cg) & (1u << s->mem_hier)) ||
			    strcmp(cg->path, "/") == 0 || check_path(s, cg, mem_file, path, sizeof(path)) < 0 ||
			    read_memory_file(path, &chk[nchk].before) < 0)
				continue;
			chk[nchk].cg = cg;
			if (!stat_cg && s->stat_map.n && (parts & ACCT_BPF_PART_STAT) && !(s->flags & ACCT_PASS_KERNEL) &&
			    check_path(s, cg, "memory.stat", path, sizeof(path)) == 0 && (stat_before = read_file_at(AT_FDCWD, path)))
				stat_cg = cg;
			nchk++;
		}
	if (s->nr_work)
		/* the next window: windows tile the list, so every cgroup is
		 * checked within nr_work / CHECKS passes (a stride other than
		 * CHECKS leaves cgroups unchecked where it shares a factor
		 * larger than CHECKS with nr_work) */
		s->check_cursor = (s->check_cursor + CHECKS) % s->nr_work;

	uint64_t t0 = acct_now_us();
	for (int i = 0; i < _ACCT_HIER_MAX; i++)
		s->snap_valid[i] = false;
	/* The memcg hierarchy first: its records serve memory, and say for
	 * most cgroups what the others' would (walk_needed()). */
	if (s->mem_hier >= 0)
		walk_one(s, s->mem_hier);
	uint32_t others = walk_needed(s);
	if (psi_walk_due(s))
		others |= 1u << ACCT_HIER_UNIFIED;
	for (int i = 0; i < _ACCT_HIER_MAX; i++)
		if (i != s->mem_hier && (others & (1u << i)))
			walk_one(s, i);
	if (s->snap_valid[ACCT_HIER_UNIFIED])
		s->psi_walk_at = s->now_us;
	take_census(s);
	rep->bpf_walk_us = acct_now_us() - t0;
	if (s->mem_hier < 0 || !s->snap_valid[s->mem_hier])
		return;

	bool mem_bad = false, stat_bad = false;
	for (size_t i = 0; i < nchk; i++) {
		uint64_t after;
		const struct acct_bpf_record *r = acct_bpf_snapshot_find(&s->snap[s->mem_hier],
								       acct_cgroup_get_inode(chk[i].cg, (enum acct_hierarchy)s->mem_hier));
		if (!r || !(r->flags & ACCT_BPF_F_MEMCG) || check_path(s, chk[i].cg, mem_file, path, sizeof(path)) < 0 ||
		    read_memory_file(path, &after) < 0)
			continue; /* removed meanwhile */
		uint64_t v = r->usage * (uint64_t)s->opts.batching.page_size;
		rep->bpf_checks += check_memory(s, &mem_bad, chk[i].cg, mem_file, v, chk[i].before, after);
	}
	const struct acct_bpf_record *r =
		stat_cg ? acct_bpf_snapshot_find(&s->snap[s->mem_hier],
					 acct_cgroup_get_inode(stat_cg, (enum acct_hierarchy)s->mem_hier))
		: NULL;
	if (r && (r->flags & ACCT_BPF_F_STATS) && check_path(s, stat_cg, "memory.stat", path, sizeof(path)) == 0 &&
	    (stat_after = read_file_at(AT_FDCWD, path))) {
		rep->bpf_checks++;
		for (unsigned i = 0; i < s->stat_map.n; i++) {
			uint64_t a, b;
			unsigned idx = s->stat_map.e[i].index;
			if (cgfs_flat_keyed_get(stat_before, s->stat_map.e[i].key, &a) < 0 ||
			    cgfs_flat_keyed_get(stat_after, s->stat_map.e[i].key, &b) < 0 || idx >= r->nr_state)
				continue;
			int64_t v = acct_bpf_record_state(r)[idx] * (int64_t)s->stat_map.e[i].unit;
			if (v < 0 || acct_bracket_judge((uint64_t)v, a, b) != ACCT_BRACKET_AGREE)
				note_mismatch(rep, &stat_bad, stat_cg, s->stat_map.e[i].key, v, a, b);
		}
	}
	/* Parts whose values keep disagreeing go back to files. */
	static const unsigned part_of[2] = { ACCT_BPF_PART_MEMORY, ACCT_BPF_PART_STAT };
	bool bad[2] = { mem_bad, stat_bad };
	for (int p = 0; p < 2; p++) {
		s->streak[p] = bad[p] ? s->streak[p] + 1 : 0;
		if (s->streak[p] >= ACCT_BPF_MISMATCH_PASSES && (parts & part_of[p])) {
			__atomic_fetch_and(&s->parts, ~part_of[p], __ATOMIC_RELAXED);
			rep->bpf_fallbacks++;
		}
	}
}

const struct acct_memcg_batching *acct_sampler_batching(const struct acct_sampler *s)
{
	return &s->opts.batching;
}

unsigned acct_sampler_bpf_parts(const struct acct_sampler *s)
{
	return s->opts.collector && acct_bpf_collector_any(s->opts.collector) ? __atomic_load_n(&s->parts, __ATOMIC_RELAXED)
									       : 0;
}

void sampler_bpf_init(struct acct_sampler *s, const struct acct_sampler_options *opts)
{
	s->mem_hier = -1;
	s->inactive_entry = -1;
	s->parts = ACCT_BPF_PART_POPULATED | ACCT_BPF_PART_MEMORY | ACCT_BPF_PART_STAT;
	if (opts->collector) {
		if (opts->layout->v2_memory && acct_bpf_collector_serves(opts->collector, ACCT_HIER_UNIFIED))
			s->mem_hier = ACCT_HIER_UNIFIED;
		else if (!opts->layout->v2_memory && acct_bpf_collector_serves(opts->collector, ACCT_HIER_MEMORY))
			s->mem_hier = ACCT_HIER_MEMORY;
		if (opts->stat_map)
			s->stat_map = *opts->stat_map;
		/* Each key's index once, not a search per key, cgroup and pass. */
		for (unsigned i = 0; i < s->stat_map.n; i++)
			s->stat_key[i] = acct_ledger_memstat_intern(s->ledger, s->stat_map.e[i].key);
		const char *inactive = s->mem_hier == ACCT_HIER_UNIFIED ? "inactive_file" : "total_inactive_file";
		for (unsigned i = 0; i < s->stat_map.n; i++)
			if (strcmp(s->stat_map.e[i].key, inactive) == 0)
				s->inactive_entry = (int)i;
		if (s->mem_hier >= 0)
			s->node_items = acct_bpf_collector_node_items(opts->collector, s->mem_hier, s->node_units);
		/* On one node the program reads no per-node values: node 0 is the
		 * sum of the NUMA keys, when every one of them is mapped. */
		const char *const *numa = acct_bpf_numa_keys(s->mem_hier == ACCT_HIER_UNIFIED);
		bool all = true;
		for (unsigned k = 0; numa[k] && all; k++) {
			all = false;
			for (unsigned i = 0; i < s->stat_map.n && k < ACCT_BPF_NODE_ITEMS; i++)
				if (strcmp(s->stat_map.e[i].key, numa[k]) == 0) {
					s->numa_entry[k] = (int)i;
					all = true;
				}
			s->nr_numa_entries = all ? k + 1 : 0;
		}
		if (!all || opts->nr_nodes > 1)
			s->nr_numa_entries = 0;
	}
}
