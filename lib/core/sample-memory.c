/* sample-memory.c - the sampler's memory readers: memory in use
 * (memory.current or v1 memory.usage_in_bytes, through sample-values.c's one
 * reader), memory.stat and the working set, NUMA, peak, limits, swap, memory
 * events, when the slow group is due, and the root's memory, which is
 * defined from its children's. */
#include "sampler-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/hash.h"
#include "basic/parse.h"
#include "basic/util.h"
#include "cgroup/cgfs-parse.h"

int acct_sampler_read_memory(struct acct_sampler *s, struct acct_cgroup *cg, int64_t *ret_bytes)
{
	struct cg_state *st = sampler_state_of(s, cg);
	_cleanup_close_ int fd = -EBADF;

	if (!st)
		return -ENOMEM;
	if (st->fd[F_MEMORY] == FD_NONE || st->fd[F_MEMORY] == FD_ABSENT)
		return -ENODATA;
	/* Opened afresh, not the cached descriptor: a cgroup removed since the
	 * pass must read as gone (ENOENT), whatever an old descriptor gives. */
	fd = sampler_open_file(s, cg, &st->spec[F_MEMORY]);
	if (fd < 0)
		return fd == -ENODEV ? -ENOENT : fd;
	return acct_memory_read_fd(fd, ret_bytes);
}

/* ---- memory in use, memory.stat, the rest of the memory group ----------- */

/* Memory in use; with working_set (slow passes, right after memory.stat) also
 * the working set, from this memory reading and this pass's inactive_file:
 * inputs of one moment, so the working set has the slow group's age. A fast
 * pass leaves it alone: memory now minus an inactive_file up to a slow
 * interval old was off by whatever page cache came or went meanwhile. */
void sample_memory(struct sample_ctx *x, bool working_set)
{
	int64_t v;
	if (x->mem_rec) {
		sampler_bpf_memory(x);
		return;
	}
	x->st->applied.counters = false; /* files set them now (sampler-bpf.c, "Unchanged records") */
	if (!sampler_get(x, F_MEMORY))
		return;
	if (acct_memory_parse(x->w->buf, &v) < 0) {
		sampler_fail(x, ACCT_ERR_GARBAGE);
		return;
	}
	x->st->own_memory = v;
	x->st->own_memory_valid = true;
	/* The root's memory is defined from this reading and its children's
	 * after the pass (acct_sampler_root_memory()). */
	const struct acct_memcg_batching *b = &x->w->s->opts.batching;
	if (strcmp(x->cg->path, "/") != 0) {
		sampler_set_memory(x, v);
		/* Pre-charged stock, whose size here is unknown: every slot. */
		acct_cgroup_set_kernel_bound(x->cg, ACCT_Q_MEMORY, acct_memcg_memory_bound(b, INT_MAX));
	}
	/* The working set: this reading and the inactive_file read just before
	 * it (both the cgroup's own files, also at the root). */
	if (working_set && x->have_inactive) {
		acct_cgroup_set(x->cg, ACCT_Q_WORKING_SET, v > x->inactive ? v - x->inactive : 0);
		acct_cgroup_set_kernel_bound(x->cg, ACCT_Q_WORKING_SET,
					     acct_memcg_memory_bound(b, INT_MAX) + acct_memcg_file_stat_bound(b));
	}
}

void sample_memory_events(struct sample_ctx *x)
{
	static const enum acct_quantity events[_CGFS_MEMEV_MAX] = {
		[CGFS_MEMEV_LOW] = ACCT_Q_MEMORY_EVENTS_LOW,
		[CGFS_MEMEV_HIGH] = ACCT_Q_MEMORY_EVENTS_HIGH,
		[CGFS_MEMEV_MAX] = ACCT_Q_MEMORY_EVENTS_MAX,
		[CGFS_MEMEV_OOM] = ACCT_Q_MEMORY_EVENTS_OOM,
		[CGFS_MEMEV_OOM_KILL] = ACCT_Q_MEMORY_EVENTS_OOM_KILL,
		[CGFS_MEMEV_OOM_GROUP_KILL] = ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL,
	};
	uint64_t v;

	if (x->mem_rec) {
		sampler_bpf_memory_events(x);
		return;
	}
	x->st->applied.events_valid = false;
	if (sampler_get(x, F_MEMORY_EVENTS)) {
		struct cgfs_memory_events ev;
		if (cgfs_parse_memory_events(x->w->buf, &ev) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else
			for (int i = 0; i < _CGFS_MEMEV_MAX; i++)
				if (ev.present & (1u << i))
					sampler_set_checked(x, events[i], (int64_t)MIN(ev.v[i], (uint64_t)INT64_MAX));
	}
	/* v1 failcnt counts the charges that hit the limit, as v2's "max" does
	 * (runc and cAdvisor map them onto each other); writing 0 resets it,
	 * so it is not checked for going backwards. */
	if (sampler_get(x, F_MEMORY_FAILCNT)) {
		if (cgfs_parse_u64(x->w->buf, &v) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else
			sampler_set_unchecked(x, ACCT_Q_MEMORY_EVENTS_MAX, (int64_t)MIN(v, (uint64_t)INT64_MAX));
	}
	if (sampler_get(x, F_MEMORY_OOM_CONTROL)) {
		bool under, has_kill;
		if (cgfs_parse_oom_control(x->w->buf, &under, &v, &has_kill) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else {
			acct_cgroup_set(x->cg, ACCT_Q_MEMORY_UNDER_OOM, under);
			if (has_kill)
				sampler_set_checked(x, ACCT_Q_MEMORY_EVENTS_OOM_KILL, (int64_t)MIN(v, (uint64_t)INT64_MAX));
		}
	}
}

/* When a slow pass reads a cgroup's slow group (memory.stat, NUMA, peak,
 * limits, swap). Its sizes follow the memory in use: the group is read
 * where memory moved by at least the bytes budget since the group was last
 * read (memory is read first to know), and in any case once it is old, for
 * what changes without the memory in use (the LRU lists' balance, event
 * counts, a limit someone wrote), which is served with its age meanwhile.
 * "Old" follows change too (sampler_slow_done()): SLOW_REFRESH_US after a read whose files
 * differed from the read before, twice the last interval after one that
 * found them the same byte for byte (their fingerprint, slow_hash), up to
 * SLOW_REFRESH_MAX_US; spread by the cgroup's serial so that the cgroups
 * found at start-up do not all come due in the same pass. An idle cgroup
 * then costs one slow read every 10 minutes, not one per slow_interval
 * (at 10,000 cgroups a read a minute was 0.6% of a core on its own). This
 * is evidence, not proof, as for pressure: what changed without moving the
 * memory by the budget is seen at the latest SLOW_REFRESH_MAX_US (plus the
 * spread) later, and the group's age says how old its values are. */
#define SLOW_REFRESH_US (60 * USEC_PER_SEC)
#define SLOW_REFRESH_MAX_US (600 * USEC_PER_SEC)
#define SLOW_REFRESH_SPREAD 30 /* seconds */
#define SLOW_BACKOFF_MAX 4     /* 60 s << 4 is past SLOW_REFRESH_MAX_US */
_Static_assert((SLOW_REFRESH_US << SLOW_BACKOFF_MAX) >= SLOW_REFRESH_MAX_US, "the back-off reaches the cap");

static uint64_t slow_refresh_us(const struct cg_state *st, const struct acct_cgroup *cg)
{
	uint64_t interval = SLOW_REFRESH_US << st->slow_backoff;
	return MIN(interval, (uint64_t)SLOW_REFRESH_MAX_US) + (cg->serial % SLOW_REFRESH_SPREAD) * USEC_PER_SEC;
}

bool sampler_slow_aged(const struct cg_state *st, const struct acct_cgroup *cg, uint64_t now_us)
{
	return !st->slow_at || now_us - st->slow_at >= slow_refresh_us(st, cg);
}

uint64_t sampler_slow_due_at(const struct sample_ctx *x)
{
	const struct cg_state *st = x->st;
	if (!st->slow_at || !st->own_memory_valid)
		return 0;
	int64_t moved = st->own_memory - st->slow_memory;
	if ((uint64_t)(moved < 0 ? -moved : moved) >= MAX(x->w->s->bytes_budget, (uint64_t)1))
		return 0;
	return st->slow_at + slow_refresh_us(st, x->cg);
}

bool sampler_slow_due(const struct sample_ctx *x, uint64_t now_us)
{
	return now_us >= sampler_slow_due_at(x);
}

/* After a good read of the slow group: the next interval
 * (sampler_slow_aged()). A read the memory's motion made due resets it as
 * one whose files changed would (they did: the memory is in them). So does
 * one that read a limit from its file (the files collector; a record brings
 * them every pass), which a write changes without a trace in any other
 * file: seen within a minute and the spread, as before. */
void sampler_slow_done(struct sample_ctx *x, bool by_age, uint64_t now_us)
{
	struct cg_state *st = x->st;
	bool same = st->slow_at && by_age && !x->slow_limits && x->slow_hash == st->slow_hash;
	st->slow_backoff = same ? MIN(st->slow_backoff + 1, (unsigned)SLOW_BACKOFF_MAX) : 0;
	st->slow_hash = x->slow_hash;
	st->slow_at = now_us;
	st->slow_memory = st->own_memory;
}

/* The slow files, and memory in use right after memory.stat (see
 * sample_memory()). */
static void read_slow(struct sample_ctx *x)
{
	uint64_t v;

	if (sampler_get(x, F_MEMORY_STAT)) {
		if (cgfs_parse_flat_keyed(x->w->buf, sampler_memstat_kv, x) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			x->have_inactive = false;
		} else { /* reading memory.stat flushed what was over the threshold */
			x->memstat_from_file = true;
			acct_cgroup_set_memstat_bound(x->cg, acct_memcg_file_stat_bound(&x->w->s->opts.batching));
		}
	}
	sample_memory(x, true);
	if (x->mem_rec) /* NUMA, peak, limits and swap came with the record */
		return;
	(void)sampler_numa_from_file(x);
	static const struct {
		enum file_role role;
		enum acct_quantity q;
	} singles[] = {
		{ F_MEMORY_PEAK, ACCT_Q_MEMORY_PEAK }, { F_MEMORY_MAX, ACCT_Q_MEMORY_MAX },
		{ F_MEMORY_HIGH, ACCT_Q_MEMORY_HIGH }, { F_SWAP, ACCT_Q_SWAP },
		{ F_SWAP_MAX, ACCT_Q_SWAP_MAX },
	};
	for (size_t i = 0; i < ELEMENTSOF(singles); i++) {
		if (!sampler_get(x, singles[i].role))
			continue;
		if (cgfs_parse_u64(x->w->buf, &v) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			continue;
		}
		bool limit = acct_quantity_info(singles[i].q)->limit;
		x->slow_limits |= limit; /* a limit someone writes: refreshed each minute */
		int64_t val = limit ? sampler_limit_value(v) : (int64_t)MIN(v, (uint64_t)INT64_MAX);
		if (singles[i].q == ACCT_Q_SWAP && x->st->memory_v1) {
			/* v1 memsw counts memory + swap: swap is set once this pass has
			 * read the memory (see sample_one()). */
			x->st->memsw = val;
			x->st->memsw_valid = true;
			continue;
		}
		acct_cgroup_set(x->cg, singles[i].q, val);
	}
}

void sample_slow(struct sample_ctx *x)
{
	/* sampler_get() folds each file read into the fingerprint
	 * (sampler_slow_done()) */
	x->slow_hash = FNV1A_64_OFFSET;
	x->slow_hashing = true;
	read_slow(x);
	x->slow_hashing = false;
}


/* ---- the root ----------------------------------------------------------- */

/* The root's memory, defined once for every layout: the larger of the root's
 * own reading and the sum of its top-level children's memory.
 *   v2: the kernel's root has no memory.current, so the sum of the top level
 *       (what the root's page counter holds: every page charged to a cgroup).
 *   v1 (hybrid, legacy): the root's memory.usage_in_bytes is computed from its
 *       file and anon page counts and leaves out the kernel memory (slab,
 *       stacks, page tables) that its children's page counters charge, so it
 *       can be below their sum; the larger of the two.
 *   A --cgroup-root tree whose root is a cgroup with its own counter: that
 *       reading, which the kernel's hierarchy keeps at or above the sum.
 * So a root is never smaller than the sum of its children. Not
 * MemTotal - MemAvailable of /proc/meminfo (systemd-cgtop's root figure): the
 * page cache that MemAvailable counts as available is charged to the
 * children, so that figure can fall below their sum. */
void acct_sampler_root_memory(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n)
{
	if (n == 0 || strcmp(cgs[0]->path, "/") != 0)
		return;
	const struct cg_state *st = cgs[0]->sampler_state;
	int64_t own = st && st->own_memory_valid ? st->own_memory : -1, top = -1;
	uint64_t top_sampled = UINT64_MAX; /* the oldest part of the sum */
	for (size_t i = 1; i < n; i++) {
		struct acct_reading rd;
		if (cgs[i]->depth != 1)
			continue;
		uint64_t t = acct_cgroup_quantity_sampled(cgs[i], ACCT_Q_MEMORY); /* before the value */
		if (acct_cgroup_get(cgs[i], ACCT_Q_MEMORY, false, &rd)) {
			top = MAX(top, (int64_t)0) + rd.value;
			top_sampled = MIN(top_sampled, t);
		}
	}
	if (MAX(own, top) >= 0) { /* else nothing holds memory accounting: absent */
		struct cg_state *root = cgs[0]->sampler_state;
		if (root) /* its motion as any other's (the drift is the passes') */
			sampler_set_memory_moved(cgs[0], root, MAX(own, top), s->now_us, NULL);
		else
			acct_cgroup_set(cgs[0], ACCT_Q_MEMORY, MAX(own, top));
		/* The sum is as old as its oldest part: after a walk alone that
		 * refreshed the top level, younger than the root's last file pass
		 * (own, read there, keeps that pass's age). */
		if (top >= own && top_sampled != UINT64_MAX && top_sampled)
			acct_cgroup_set_sampled(cgs[0], ACCT_Q_MEMORY, top_sampled);
		/* The children's counters together hold at most every stock slot
		 * of every CPU; v1's own root reading is made of flushed stats. */
		const struct acct_memcg_batching *b = &s->opts.batching;
		acct_cgroup_set_kernel_bound(cgs[0], ACCT_Q_MEMORY,
					     MAX(acct_memcg_memory_bound(b, INT_MAX), acct_memcg_file_stat_bound(b)));
	}
}

