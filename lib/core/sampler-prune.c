/* sampler-prune.c - reading a cgroup's cumulative values only where they can
 * have changed, so that a pass costs what changed rather than what exists.
 *
 * The kernel sums CPU time and block I/O up the tree (v1 cpuacct charges
 * every ancestor at once, v2 cpu.stat and io.stat are flushed over the
 * subtree at every read, v1 blkio's *_recursive files add up the subtree),
 * and none of these totals ever decreases. So when an ancestor's total is the
 * same at two reads, no descendant's total moved between them, and a
 * descendant read after the first of the two still holds exactly what it
 * read. The argument, its races and what it does not cover are in
 * docs/counters.md, "Pruning"; this file applies it:
 *
 * - A pass reads parents before children (the ledger's path order), and
 *   each read publishes, per family, whether its
 *   witness (the sum of the family's totals) moved (struct cg_state's
 *   outcome[], then outcome_gen with release).
 * - A cgroup skips a family when its nearest tracked ancestor, read or
 *   pruned earlier in this pass, found that family's witness unchanged; its
 *   own last good read of the family began after the ancestor's witness took
 *   its value (stable_since); both witnesses come from the same hierarchy;
 *   its witness was read from the family's files as they are now (a change
 *   of source invalidates it: sampler_prune_source_changed()); and
 *   it was read in full less than PRUNE_REFRESH_US ago (a safety net, not a
 *   part of the argument).
 * - An ancestor whose read has not been published yet proves nothing: the
 *   descendant is read (two workers may meet at a level's boundary).
 *
 * Memory, which the kernel does not sum that way (a page moves between
 * cgroups, a parent's total can stand still while two children move),
 * threads, and pressure (each group's totals are aggregated at its own
 * reads, weighted by whole jiffies of non-idle time per CPU, so a parent's
 * can stand still while a child's moves: kernel-truth caught it) are not
 * pruned.
 *
 * Also here: empty cgroups that stay empty are not read at all while their
 * cgroup.events watch says nothing (sampler_empty_quiet(), end of file). */
#include "sampler-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/parse.h"
#include "basic/util.h"

/* Every family of a cgroup is read in full at least this often, whatever its
 * ancestors say, spread over another minute by the record's serial so that
 * the cgroups found at start-up do not all come due in the same pass. */
#define PRUNE_REFRESH_US (300 * USEC_PER_SEC)
#define PRUNE_REFRESH_SPREAD 60

static const uint64_t family_quantities[_PF_MAX] = {
	[PF_CPU] = QBIT(ACCT_Q_CPU_USAGE) | QBIT(ACCT_Q_CPU_USER) | QBIT(ACCT_Q_CPU_SYSTEM) | QBIT(ACCT_Q_CPU_PERIODS) |
		   QBIT(ACCT_Q_CPU_THROTTLED_PERIODS) | QBIT(ACCT_Q_CPU_THROTTLED),
	[PF_IO] = QBIT(ACCT_Q_IO_READ_BYTES) | QBIT(ACCT_Q_IO_WRITE_BYTES) | QBIT(ACCT_Q_IO_READ_IOS) |
		  QBIT(ACCT_Q_IO_WRITE_IOS) | QBIT(ACCT_Q_IO_DISCARD_BYTES) | QBIT(ACCT_Q_IO_DISCARD_IOS),
};

/* The nearest live ancestor of path that the ledger tracks (the include
 * globs and max_depth leave gaps), or NULL. Any ancestor is a witness: the
 * kernel's sums cover the whole subtree. */
static struct acct_cgroup *tracked_ancestor(struct acct_ledger *l, const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof(buf) || strcmp(path, "/") == 0)
		return NULL; /* a path this long is read in full: rare, and correct either way */
	memcpy(buf, path, len + 1);
	for (;;) {
		char *slash = strrchr(buf, '/');
		if (!slash)
			return NULL;
		if (slash == buf)
			buf[1] = '\0';
		else
			*slash = '\0';
		struct acct_cgroup *p = acct_ledger_find(l, buf);
		if (p && !acct_cgroup_is_dead(p))
			return p;
		if (slash == buf)
			return NULL;
	}
}

/* A full pass's list against the last one's (owner thread, at the start):
 * same_list where they are equal, else this list kept for the next. Without
 * memory for the copy no list is kept, and the next pass's is new. */
void sampler_keep_full_work(struct acct_sampler *s)
{
	size_t n = s->nr_work;
	s->same_list = s->full_work && s->nr_full_work == n &&
		       (n == 0 || memcmp(s->full_work, s->work, n * sizeof(*s->work)) == 0);
	if (s->same_list)
		return;
	free(s->full_work);
	s->full_work = n ? malloc(n * sizeof(*s->full_work)) : NULL;
	s->nr_full_work = s->full_work ? n : 0;
	if (s->full_work)
		memcpy(s->full_work, s->work, n * sizeof(*s->work));
}

int sampler_prune_prepare(struct acct_sampler *s, size_t n)
{
	/* The same list as the last pass's, nothing released since and every
	 * ancestor's state made then: the same ancestors, the same states. A
	 * pass over 10,000 steady cgroups then touches none of their records
	 * here (it was two cache misses per cgroup and pass). */
	if (s->same_list && s->parents && s->parents_whole && s->parents_release_gen == s->release_gen)
		return 0;
	free(s->parents);
	s->parents = NULL;
	s->parents_whole = false;
	if (n == 0)
		return 0;
	/* The work stays in the ledger's path order, where a parent comes
	 * before its descendants. (An order by depth would publish every
	 * parent sooner, but it moved the moments at which a load pass counts
	 * each cgroup's running threads, and kernel-truth's root load average
	 * came out 1.5 above the kernel's, twice; path order passes.) */
	struct cg_state **parents = malloc(n * sizeof(*parents));
	if (!parents)
		return -ENOMEM;
	s->prepare_seq++;
	bool whole = true;
	for (size_t i = 0; i < n; i++) {
		struct acct_cgroup *cg = s->work[i];
		struct cg_state *st = cg->sampler_state;
		struct acct_cgroup *p;
		if (st && st->parent_gen == s->release_gen)
			p = st->parent;
		else {
			/* New, or something was released since: a cached ancestor
			 * may be gone. Costs a hash lookup per level climbed. */
			p = tracked_ancestor(s->ledger, cg->path);
			if (st) {
				st->parent = p;
				st->parent_gen = s->release_gen;
			}
		}
		/* The ancestor's state as it is now: a state made during the pass
		 * is not seen (that ancestor proves nothing this pass). */
		parents[i] = p ? p->sampler_state : NULL;
		if (parents[i])
			parents[i]->parent_seq = s->prepare_seq; /* not a steady leaf (sampler-steady.c) */
		else if (p || !st)
			whole = false; /* a state made later would be missed by a copy */
	}
	s->parents = parents;
	s->parents_release_gen = s->release_gen;
	s->parents_whole = whole;
	return 0;
}

static uint64_t prune_refresh_us(const struct acct_cgroup *cg)
{
	return PRUNE_REFRESH_US + (cg->serial % PRUNE_REFRESH_SPREAD) * USEC_PER_SEC;
}

unsigned sampler_prune_decide(struct sample_ctx *x, size_t index, uint64_t read_start)
{
	struct acct_sampler *s = x->w->s;
	struct cg_state *st = x->st, *pst;
	unsigned pruned = 0;

	if (!s->parents_on || !s->parents || x->w->settle_round || !(pst = s->parents[index]))
		return 0;
	/* Published in this pass: its outcome[] and witnesses are final. */
	if (__atomic_load_n(&pst->outcome_gen, __ATOMIC_ACQUIRE) != x->w->generation)
		return 0;
	for (int f = 0; f < _PF_MAX; f++) {
		const struct prune_witness *a = &pst->witness[f], *c = &st->witness[f];
		if (pst->outcome[f] != PO_UNCHANGED && pst->outcome[f] != PO_PRUNED)
			continue;
		if (!c->valid || !a->valid || c->tree != a->tree || c->read_start < a->stable_since)
			continue;
		/* CPU bandwidth: the kernel counts a period in which the group
		 * was active at the period timer, which may be after its last
		 * run (the first period it stays idle): nr_periods moves while
		 * no CPU time does, here or above, and it is the cgroup's own
		 * (not summed up the tree). Such a cgroup's CPU is read. */
		if (f == PF_CPU && st->cpu_bandwidth)
			continue;
		if (read_start - c->read_start >= prune_refresh_us(x->cg))
			continue;
		pruned |= 1u << f;
	}
	return pruned;
}

uint64_t sampler_prune_due(const struct sample_ctx *x)
{
	uint64_t due = UINT64_MAX;
	for (int f = 0; f < _PF_MAX; f++)
		if (x->pruned & (1u << f)) {
			/* less a second: a light visit compares the pass's start,
			 * sampler_prune_decide() its own read's */
			uint64_t at = x->st->witness[f].read_start + prune_refresh_us(x->cg);
			due = MIN(due, at > USEC_PER_SEC ? at - USEC_PER_SEC : 0);
		}
	return due;
}

/* Not the restart bits themselves: a quantity that the new files never
 * give (v1's throttling counts after a move to cpuacct alone, or to a v2
 * cpu.stat without the cpu controller) keeps its bit forever, and its
 * family would never be pruned again. One whole read from the new files
 * is what the argument needs; the restart bits go on guarding the series
 * (sampler_set_checked()). */
void sampler_prune_source_changed(struct cg_state *st, uint64_t changed)
{
	for (int f = 0; f < _PF_MAX; f++)
		if (changed & family_quantities[f])
			st->witness[f].valid = false;
}

void sampler_prune_publish(struct sample_ctx *x, unsigned pruned, const unsigned failures[_PF_MAX],
			   uint64_t read_start, uint64_t read_end)
{
	struct cg_state *st = x->st;

	for (int f = 0; f < _PF_MAX; f++) {
		struct prune_witness *c = &st->witness[f];
		if (pruned & (1u << f)) {
			/* Unchanged since its last read: the witness, its
			 * stable_since and read_start stand. */
			st->outcome[f] = PO_PRUNED;
			continue;
		}
		if (!(x->witnessed & (1u << f)) || failures[f] > 0) {
			/* Not read (no such file) or a value failed: the next
			 * read must be a whole one before anything is pruned. */
			c->valid = false;
			st->outcome[f] = PO_NONE;
			continue;
		}
		if (c->valid && c->tree == x->witness_tree[f] && c->value == x->witness[f])
			st->outcome[f] = PO_UNCHANGED;
		else {
			c->value = x->witness[f];
			c->tree = x->witness_tree[f];
			c->valid = true;
			c->stable_since = read_end;
			st->outcome[f] = PO_CHANGED;
		}
		c->read_start = read_start;
	}
	__atomic_store_n(&st->outcome_gen, x->w->generation, __ATOMIC_RELEASE);
}

/* Empty cgroups that stay empty. A cgroup read empty from its cgroup.events
 * (and settled: its final values read, empty_read_settled()) is not read
 * again, not even its cgroup.events, while nothing says that it may have
 * changed (docs/counters.md, "Empty cgroups"):
 * - the owner hears every change of its cgroup.events (a watch with
 *   IN_MODIFY, no gap since: acct_sampler_events_watched()), and none was
 *   announced since before that read (populated_changes);
 * - in the memcg hierarchy, where that is not the unified one, this pass's
 *   record says no task, and memory did not move by bytes_budget since;
 * - its CPU time and I/O stood still: they are not skipped but pruned
 *   (above), so work charged to it without a task (writeback
 *   after its tasks left) is read as soon as an ancestor's total moves, and
 *   wakes it;
 * - the last load pass found no thread in it.
 * The state alone, for sample_quiet() (sampler.c) and the walks' planning
 * (sampler-bpf.c, walk_needed()); `changes` is populated_changes, taken
 * before the read. */
bool sampler_empty_quiet(const struct acct_sampler *s, const struct acct_cgroup *cg, const struct cg_state *st,
			 uint64_t changes)
{
	return st && st->quiet_empty && st->read_empty && !st->settling && st->has_events &&
	       __atomic_load_n(&s->events_watched, __ATOMIC_ACQUIRE) &&
	       cg->depth < __atomic_load_n(&s->events_depth, __ATOMIC_RELAXED) &&
	       st->quiet_epoch == __atomic_load_n(&s->events_epoch, __ATOMIC_ACQUIRE) && changes == st->quiet_changes;
}

void acct_sampler_events_watched(struct acct_sampler *s, bool watched, unsigned max_depth)
{
	if (!watched)
		__atomic_fetch_add(&s->events_epoch, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&s->events_depth, max_depth, __ATOMIC_RELAXED);
	__atomic_store_n(&s->events_watched, watched, __ATOMIC_RELEASE);
}
