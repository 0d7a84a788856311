/* sampler-steady.c - a fast pass's visit of a steady cgroup in a few cache
 * lines instead of its whole state.
 *
 * At 10,000 idle cgroups a fast pass's visits were a quarter of acctd's CPU,
 * almost all of it cache misses: each visit walked the cgroup's sampler
 * state (17 lines), its ledger record and its counters to find, once more,
 * that nothing had changed. A steady cgroup is one whose last full visit
 * found nothing to read:
 * - its memcg record equal to the one applied before (page counters,
 *   events, limits: sampler-bpf.c, "Unchanged records"), populated, and its
 *   memory standing still;
 * - its CPU time and I/O pruned: its pruning ancestor's witness unchanged
 *   (sampler-prune.c), or without a file to read (io.stat where the io
 *   controller is off, a cgroup of the memory hierarchy alone); no CPU
 *   bandwidth periods, its I/O rates published 0;
 * - its pressure not due (sampler.c, psi_due()), nor read;
 * - no descendant in the pass that prunes against it, no failed read, not
 *   settling, no active thread at the last load pass.
 * Its full visit leaves an entry in a dense table in work order: the
 * record's fields it compared, its pruned families and when a full visit
 * comes due again (the earliest of pressure's refresh or decay and the
 * pruning refresh, sampler.c, steady_due()).
 *
 * In a fast or slow pass (not an event pass), a cgroup whose entry is
 * valid, whose visit is not due, whose record in this walk has those
 * fields equal, whose pruning ancestor published this pass an unchanged or
 * pruned outcome for each pruned family, and, in a load pass, whose
 * threads the task walk counts as its entry does with none active, gets a
 * light visit: its parts counted as a full visit would count them (memory
 * read, CPU time and I/O pruned, pressure skipped), and nothing written.
 * Two passes look at more: on a hybrid host, one that walks the unified
 * hierarchy brings the pressure witness, which the light visit compares as
 * psi_due() would (witness_still()); a slow pass's light visit needs the
 * slow group not due (v1 memcg records only: on v2 a slow pass takes the
 * record's stats). What a full visit would renew (the ages of the
 * quantities its record sets and of the fast group, its CPU rate's idle
 * time) comes from the ledger's epoch (ledger.h, "Steady cgroups"): the
 * full visit that made the entry made the cgroup a member, and a pass that
 * vouched for every member advances the epoch (sampler_steady_finish()). So
 * a light visit reads the entry and the record, both in sequence, and the
 * ancestor's outcome, and touches no line of the cgroup's own.
 *
 * Any other visit of the cgroup (the next full one, an event pass's, a walk
 * alone's, a settling re-read) first takes it out of the epoch, clears its
 * entry and sets in its state what its membership proved: its memory, CPU
 * time and I/O unchanged up to the epoch's time, from which its memory
 * motion, CPU rate and I/O rates are measured, as a full visit at each pass
 * would have left them (sampler_steady_leave()).
 *
 * The table is kept while each full pass's work list is the same list
 * (the ledger's snapshot, compared entry by entry at the start of a pass:
 * acct_sampler_start()'s same_list); on another list the epoch starts a new
 * generation, which takes every member out, and the pass's full visits make
 * the new table. */
#include "sampler-internal.h"

#include <stdlib.h>
#include <string.h>

#include "basic/util.h"

/* The record flags a full visit's comparisons cover (the rest say what a
 * walk copied: stats, nodes, which differ between fast and slow walks). */
#define STEADY_FLAGS                                                                                  \
	(ACCT_BPF_F_POPULATED | ACCT_BPF_F_MEMCG | ACCT_BPF_F_HIGH | ACCT_BPF_F_EVENTS | ACCT_BPF_F_UNDER_OOM | \
	 ACCT_BPF_F_PSI)

_Static_assert(sizeof(struct steady_print) == 16 * sizeof(uint64_t), "struct steady_print has no padding");

static void steady_print_of(const struct acct_bpf_record *r, struct steady_print *ret)
{
	*ret = (struct steady_print){
		.usage = r->usage,
		.watermark = r->watermark,
		.max = r->max,
		.swap_usage = r->swap_usage,
		.swap_max = r->swap_max,
		.high = r->high,
		.failcnt = r->failcnt,
		.flags = r->flags & STEADY_FLAGS,
		.nr_descendants = r->nr_descendants,
		.nr_psi = r->nr_psi,
	};
	memcpy(ret->events, r->events, sizeof(ret->events));
	for (unsigned i = 0; i < r->nr_psi && i < ACCT_BPF_PSI_MAX; i++)
		ret->psi_sum += r->psi_total[i];
}

static bool record_equal(const struct steady_entry *e, const struct acct_bpf_record *r)
{
	struct steady_print p;
	steady_print_of(r, &p);
	return memcmp(&p, &e->print, sizeof(p)) == 0;
}

void sampler_steady_prepare(struct acct_sampler *s)
{
	if (!s->same_list || s->bytes_budget != s->steady_budget) {
		/* Another list: cgroups came or went, and the indices moved. A
		 * new generation of the epoch, which takes every member out, and
		 * a new table, empty: this pass's full visits fill both. So too
		 * for another bytes budget (a reload), by which the entries'
		 * slow groups were found not due. */
		s->steady_budget = s->bytes_budget;
		acct_ledger_steady_reset(s->ledger);
		free(s->steady);
		s->steady = NULL;
		s->nr_steady = 0;
		if (s->opts.collector && s->full_work && s->nr_full_work)
			s->steady = calloc(s->nr_full_work, sizeof(*s->steady));
		s->nr_steady = s->steady ? s->nr_full_work : 0; /* no memory: full visits only */
	}
	s->steady_ok = s->opts.collector && s->parents_on && s->steady;
}

/* Whether the pruning ancestor published, in this pass, an outcome that
 * prunes each of `families` again (as sampler_prune_decide() would: the
 * rest of its conditions held at the full visit and change only with an
 * outcome that is not one of these): STEADY_LIGHT, STEADY_FULL, or
 * STEADY_LATER where it has not published yet. */
static enum steady_visit ancestor_unchanged(const struct worker *w, size_t index, unsigned families)
{
	if (!families)
		return STEADY_LIGHT; /* nothing pruned: no file of CPU time or I/O to read */
	const struct cg_state *pst = w->s->parents_on && w->s->parents ? w->s->parents[index] : NULL;
	if (!pst)
		return STEADY_FULL;
	if (__atomic_load_n(&pst->outcome_gen, __ATOMIC_ACQUIRE) != w->generation)
		return STEADY_LATER;
	for (int f = 0; f < _PF_MAX; f++)
		if ((families & (1u << f)) && pst->outcome[f] != PO_UNCHANGED && pst->outcome[f] != PO_PRUNED)
			return STEADY_FULL;
	return STEADY_LIGHT;
}

static void count(struct worker *w, const struct steady_entry *e)
{
	static const enum acct_pass_part family_part[_PF_MAX] = { [PF_CPU] = ACCT_PART_CPU, [PF_IO] = ACCT_PART_IO };

	w->part.steady++;
	w->part.bpf_cgroups++;
	w->part.bpf_unchanged++;
	histogram_add(&w->part.drift_memory, 0);
	if (e->parts & (1u << ACCT_PART_MEMORY))
		w->part.parts[ACCT_PART_MEMORY][ACCT_OUTCOME_READ]++;
	for (int f = 0; f < _PF_MAX; f++)
		if (e->pruned & (1u << f))
			w->part.parts[family_part[f]][ACCT_OUTCOME_PRUNED]++;
	if (e->parts & (1u << ACCT_PART_PSI)) {
		w->part.parts[ACCT_PART_PSI][ACCT_OUTCOME_SKIPPED]++;
		if (e->psi_still)
			w->part.bpf_psi_still++;
	}
}

/* A hybrid host's pass that walks the unified hierarchy: whether the
 * entry's pressure witness stands still in this walk (psi_due()'s witness
 * 0), which a full visit would look at. */
static bool witness_still(struct acct_sampler *s, struct steady_entry *e)
{
	if (!e->psi_witness)
		return false;
	const struct acct_bpf_record *u = acct_bpf_snapshot_find_hint(&s->snap[ACCT_HIER_UNIFIED], e->psi_id, &e->psi_hint);
	return u && (u->flags & ACCT_BPF_F_PSI) && sampler_bpf_psi_sum(u) == e->psi_sum;
}

enum steady_visit sampler_steady_light(struct worker *w, size_t index, unsigned flags, uint64_t now_us)
{
	struct acct_sampler *s = w->s;

	unsigned kind = flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW | ACCT_PASS_LOAD | ACCT_PASS_EVENT | ACCT_PASS_KERNEL);
	bool slow = kind & ACCT_PASS_SLOW, load = kind & ACCT_PASS_LOAD;
	if (!s->steady_ok || index >= s->nr_steady || w->settle_round ||
	    (kind & ~(ACCT_PASS_SLOW | ACCT_PASS_LOAD)) != ACCT_PASS_FAST)
		return STEADY_FULL;
	struct steady_entry *e = &s->steady[index];
	/* A slow pass: where its slow group is not due (a v1 memcg record's
	 * entry; on v2 the record's stats, which a slow pass takes, are not
	 * compared). */
	if (!e->valid || now_us >= e->due_us || (slow && now_us >= e->slow_due_us))
		return STEADY_FULL;
	int mh = s->mem_hier;
	if (mh < 0 || !s->snap_valid[mh] || __atomic_load_n(&s->parts, __ATOMIC_RELAXED) != e->bpf_parts)
		return STEADY_FULL;
	const struct acct_bpf_record *r = acct_bpf_snapshot_find_hint(&s->snap[mh], e->inode, &e->rec_hint);
	if (!r || !record_equal(e, r))
		return STEADY_FULL;
	enum steady_visit ancestor = ancestor_unchanged(w, index, e->pruned);
	if (ancestor != STEADY_LIGHT)
		return ancestor;
	/* A walk of the unified hierarchy apart from the memcg one brings the
	 * pressure witness, which a full visit looks at. */
	bool witness = mh != ACCT_HIER_UNIFIED && s->snap_valid[ACCT_HIER_UNIFIED] && (e->parts & (1u << ACCT_PART_PSI));
	if (witness && !witness_still(s, e))
		return STEADY_FULL;
	if (load) {
		/* sample_load() would set the same counts, none active (then
		 * nothing of its state changes), from this pass's walk. */
		if (!e->load_known || !s->tasks_valid)
			return STEADY_FULL;
		const struct task_count *c = sampler_find_tasks(s, e->load_tree, e->load_id);
		if ((c ? c->threads : 0) != e->threads || (c && c->active))
			return STEADY_FULL;
	}
	count(w, e);
	if (witness) {
		/* as psi_due() with its witness 0: seen still now, its refresh
		 * counted from now */
		w->part.bpf_psi_still++;
		e->psi_still_us = now_us;
		e->due_us = MIN(e->other_due_us, now_us + e->psi_refresh_us);
	}
	if (slow)
		w->part.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_SKIPPED]++;
	if (load && e->has_threads)
		w->part.parts[ACCT_PART_LOAD][ACCT_OUTCOME_READ]++;
	return STEADY_LIGHT;
}

/* A steady cgroup taken before its pruning ancestor's outcome was
 * published (the other worker is reading the ancestor: at 1,011 cgroups a
 * tenth to a quarter of the leaves of a pass) is visited at the end of this
 * worker's share, when the outcome is there, instead of in full now. Its
 * light visit writes nothing, so its place in the pass does not matter; one
 * still not light then is visited in full there (a leaf: no cgroup of the
 * pass prunes against a steady one). */
bool sampler_steady_defer(struct worker *w, size_t index)
{
	if (w->nr_later == w->later_cap) {
		size_t cap = w->later_cap ? 2 * w->later_cap : 64;
		size_t *p = reallocarray(w->later, cap, sizeof(*p));
		if (!p)
			return false;
		w->later = p;
		w->later_cap = cap;
	}
	w->later[w->nr_later++] = index;
	return true;
}

void sampler_steady_leave(struct acct_sampler *s, struct acct_cgroup *cg, struct cg_state *st)
{
	uint64_t steady = acct_cgroup_steady_us(cg);
	acct_cgroup_steady_leave(cg);
	if (st->steady_slot) {
		size_t i = st->steady_slot - 1;
		if (s->steady && i < s->nr_steady && s->full_work[i] == cg) {
			struct steady_entry *e = &s->steady[i];
			if (e->valid) /* what its light visits' witness saw */
				st->psi_still_at = MAX(st->psi_still_at, e->psi_still_us);
			e->valid = false;
		}
		st->steady_slot = 0;
	}
	if (!steady)
		return;
	/* Unchanged up to the epoch's time: what a full visit at each pass
	 * would have set (set_counters(), sample_cpu_idle(), sample_io_idle(),
	 * psi_due()), a little earlier (a pass's start, not its read). */
	st->memory_at = MAX(st->memory_at, steady);
	if (st->last_cpu_at)
		st->last_cpu_at = MAX(st->last_cpu_at, steady);
	if (st->io_last_at)
		st->io_last_at = MAX(st->io_last_at, steady);
	if (st->steady_psi)
		st->psi_still_at = MAX(st->psi_still_at, steady);
}

void sampler_steady_finish(struct acct_sampler *s)
{
	if (s->steady_ok)
		acct_ledger_steady_advance(s->ledger, s->now_us);
}

/* The files of each family (sample_cpu(), sample_io()). */
static const enum file_role family_roles[_PF_MAX][5] = {
	[PF_CPU] = { F_CPU_STAT, F_CPU_STAT_V1, F_CPUACCT_USAGE, F_CPUACCT_PERCPU, F_CPUACCT_STAT },
	[PF_IO] = { F_IO_STAT, F_BLKIO_BYTES, F_BLKIO_IOS, F_IO_STAT, F_IO_STAT },
};

/* Whether none of family f's files exists for the cgroup (io.stat where its
 * parent did not enable the io controller): a full visit reads nothing of
 * it, and a light one need not either. */
static bool family_absent(const struct cg_state *st, int f)
{
	for (size_t i = 0; i < ELEMENTSOF(family_roles[f]); i++) {
		enum file_role role = family_roles[f][i];
		if (st->spec[role].name && st->fd[role] != FD_ABSENT && st->fd[role] != FD_NONE)
			return false;
	}
	return true;
}

void sampler_steady_note(const struct sample_ctx *x, size_t index, unsigned flags, bool populated,
			 const struct steady_due *due)
{
	struct acct_sampler *s = x->w->s;
	struct cg_state *st = x->st;

	if (!s->steady_ok || index >= s->nr_steady || s->work[index] != x->cg)
		return;
	struct steady_entry *e = &s->steady[index];
	const struct acct_bpf_record *r = x->mem_rec;
	unsigned parts = st->parts_files | (r ? 1u << ACCT_PART_MEMORY : 0);
	/* Each family pruned, or without a file (then read by no visit: a
	 * cgroup of the memory hierarchy alone has none). */
	unsigned families = 0;
	for (int f = 0; f < _PF_MAX; f++)
		if (!(x->pruned & (1u << f)) && !family_absent(st, f))
			families |= 1u << f;
	families |= x->pruned;
	bool io_still = !st->io_last_at || !st->io_last_known || st->io_rates_zero;
	if ((flags & (ACCT_PASS_EVENT | ACCT_PASS_KERNEL)) || !(flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW)) ||
	    x->w->settle_round || x->failed || !populated || !r || x->bpf_populated != 1 || !x->counters_same ||
	    !x->events_same || x->psi_read || (x->pruned & families) != families ||
	    st->cpu_bandwidth || !io_still || st->settling || st->parent_seq == s->prepare_seq ||
	    (st->load_valid && st->tree_active > 0) || !x->files_allowed || !acct_cgroup_memory_still(x->cg))
		return;
	*e = (struct steady_entry){
		.inode = r->id,
		.due_us = due->psi_refresh_us ? MIN(due->other_us, due->psi_seen_us + due->psi_refresh_us) : due->other_us,
		.other_due_us = due->other_us,
		.psi_refresh_us = due->psi_refresh_us,
		/* v1 memcg records: a slow pass takes nothing more of them */
		.slow_due_us = s->mem_hier != ACCT_HIER_UNIFIED ? sampler_slow_due_at(x) : 0,
		.quantities = st->applied.quantities,
		.rec_hint = st->rec_hint[s->mem_hier],
		.bpf_parts = __atomic_load_n(&s->parts, __ATOMIC_RELAXED),
		.parts = (uint8_t)parts,
		.pruned = (uint8_t)x->pruned,
		.valid = true,
		/* psi_due() found its witness unchanged in the memcg record (a
		 * pure v2 host: the unified hierarchy's records), which a light
		 * visit compares too; on a hybrid host light visits are made
		 * only in passes without the witness. */
		.psi_still = x->psi_rec && x->psi_rec == r && !st->psi_witness_off &&
			     (parts & (1u << ACCT_PART_PSI)),
	};
	steady_print_of(r, &e->print);
	const struct file_spec *ts = &st->spec[F_THREADS];
	uint32_t h = acct_cgroup_get_hierarchies(x->cg);
	/* A hybrid host's witness (psi_witness(): not the root's, nor one found
	 * unusable for this cgroup), as a pass that walks the unified
	 * hierarchy would compare it with the last read. */
	uint64_t uid = (h & (1u << ACCT_HIER_UNIFIED)) ? acct_cgroup_get_inode(x->cg, ACCT_HIER_UNIFIED) : 0;
	if (s->mem_hier != ACCT_HIER_UNIFIED && (parts & (1u << ACCT_PART_PSI)) && uid && !st->psi_witness_off &&
	    strcmp(x->cg->path, "/") != 0) {
		e->psi_witness = true;
		e->psi_id = uid;
		e->psi_hint = st->rec_hint[ACCT_HIER_UNIFIED];
		e->psi_sum = st->psi_sum;
	}
	if (st->load_valid && st->own_active == 0 && ts->name && (h & (1u << ts->tree)) &&
	    acct_cgroup_get_inode(x->cg, ts->tree)) {
		e->load_known = true;
		e->load_tree = (uint8_t)ts->tree;
		e->load_id = acct_cgroup_get_inode(x->cg, ts->tree);
		e->threads = st->own_threads;
	}
	e->has_threads = st->has_threads;
	st->steady_slot = index + 1;
	st->steady_psi = e->psi_still;
	/* after every stamp of this visit (ledger.h, "Steady cgroups") */
	acct_cgroup_steady_join(x->cg);
}
