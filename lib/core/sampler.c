/* sampler.c - worker threads that read cgroupfs files into the ledger: the
 * pass (which groups of files, the settling of emptied cgroups, the final
 * read) and the workers that share it out.
 *
 * The readers are by controller: sample-memory.c, sample-cpu.c,
 * sample-io-psi.c, sample-load.c; which file a role reads and the
 * descriptor cache, sampler-files.c; the BPF collector's part,
 * sampler-bpf.c; publishing a value, for all of them, sample-values.c. Calls
 * run down that list, never back. What they share is in sampler-internal.h. */
#include "sampler-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "basic/parse.h"
#include "basic/util.h"
#include "bpf/bpf-bounds.h"
#include "cgroup/cgfs-parse.h"

/* ---- one cgroup's read ------------------------------------------------- */

/* A cgroup whose memory moved (its motion is not 0, or not known yet: a new
 * cgroup) in a fast pass: a walk alone may read it before the next one
 * (sampler-bpf.c, "Freshness from the budget"). A full fast pass makes the
 * list anew, a pass of queued cgroups (EVENT: new ones among them) adds to
 * it. Without memory for the list, the walks alone read every cgroup until
 * the next full fast pass (moving_valid stays false). */
static void note_moving(struct worker *w, struct acct_cgroup *cg, struct cg_state *st)
{
	if (w->nr_moving == w->moving_cap) {
		size_t cap = w->moving_cap ? 2 * w->moving_cap : 64;
		struct acct_cgroup **p = reallocarray(w->moving, cap, sizeof(*p));
		if (!p) {
			w->moving_cap = SIZE_MAX; /* this pass's list is lost */
			return;
		}
		w->moving = p;
		w->moving_cap = cap;
	}
	w->moving[w->nr_moving++] = cg;
	st->moving_gen = w->s->moving_gen;
}

/* Whether the cgroup has tasks: from the collector's records where they all
 * say, else cgroup.events (true when unknown). */
static bool sample_events(struct sample_ctx *x)
{
	bool populated = true, frozen;
	/* Populated in a record of every hierarchy the cgroup is in: no task can
	 * be missed, and cgroup.events need not be read. An empty one is read
	 * from cgroup.events (where it has one) all the same: the final-read
	 * rule needs populated read after populated_changes (sample_one()). */
	if (x->bpf_populated == 1) {
		x->events_known = x->st->has_events;
		acct_cgroup_set_populated(x->cg, true, x->events_known);
		return true;
	}
	if (x->bpf_populated == 0 && !x->st->has_events) {
		/* A v1-only cgroup: empty in every hierarchy, but without
		 * cgroup.events its final values stay unproven (events_known). */
		acct_cgroup_set_populated(x->cg, false, false);
		return false;
	}
	if (sampler_get(x, F_EVENTS)) {
		if (cgfs_parse_events(x->w->buf, &populated, &frozen) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			populated = true;
		} else
			x->events_known = true;
	}
	acct_cgroup_set_populated(x->cg, populated, x->events_known);
	return populated;
}

/* When an empty cgroup's values are final. A task leaves its cgroups
 * (cgroup_exit(): populated drops) before its last context switch, and that
 * switch charges the CPU time it ran since the scheduler last accounted it (up
 * to a tick, more if it is preempted on its way out). So an empty cgroup's CPU
 * time can still grow for a while; its read is final only when the CPU time has
 * stood still for SETTLE_US (two ticks at HZ=100) since an earlier empty read.
 * Memory is released before cgroup_exit() (exit_mm()) and needs no wait. */
#define SETTLE_US 20000

/* The files a cgroup's CPU time comes from (sample_cpu()). */
static const enum file_role cpu_roles[] = { F_CPU_STAT, F_CPUACCT_PERCPU, F_CPUACCT_USAGE };

/* Whether the cgroup has a file of its CPU time: a role of the layout that
 * the cgroup was not found without (a cgroup only in v1 memory has none). */
static bool has_cpu_source(const struct cg_state *st)
{
	for (size_t i = 0; i < ELEMENTSOF(cpu_roles); i++)
		if (st->spec[cpu_roles[i]].name && st->fd[cpu_roles[i]] != FD_NONE && st->fd[cpu_roles[i]] != FD_ABSENT)
			return true;
	return false;
}

/* Also: a cgroup with a CPU file whose CPU time this read did not take
 * (x->cpu_current) is not settled, whatever the ledger holds. Its file can be
 * gone while the cgroup is not (v1: the cpuacct directory removed before the
 * memory one; a missing file is no failed read), and the ledger's value is
 * then an earlier read's, or none: a tombstone said "final" with no CPU time
 * at all (real_sampling's churn, beside two CPU hogs). */
static bool empty_read_settled(struct sample_ctx *x)
{
	struct acct_reading rd;
	if (!has_cpu_source(x->st))
		return true; /* no CPU accounting for this cgroup */
	if (!x->cpu_current || !acct_cgroup_get(x->cg, ACCT_Q_CPU_USAGE, true, &rd))
		return false;
	uint64_t now = acct_now_us();
	if (!x->st->settling || (uint64_t)rd.value != x->st->settle_cpu) {
		x->st->settling = true;
		x->st->settle_cpu = (uint64_t)rd.value;
		x->st->settle_at = now;
		return false;
	}
	return now - x->st->settle_at >= SETTLE_US;
}

/* Whether a file of its CPU time is in a tree the cgroup left while empty
 * (sampler_state_of()): that time is no longer read, so standing still
 * proves nothing. */
static bool cpu_source_left(const struct cg_state *st)
{
	if (!st->left)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(cpu_roles); i++)
		if (st->spec[cpu_roles[i]].name && (st->left & (1u << st->spec[cpu_roles[i]].tree)))
			return true;
	return false;
}

/* Queue an emptied cgroup for the re-read at the end of this worker's share
 * of the pass; without memory for the queue, the next pass reads it. */
static void queue_settle(struct worker *w, struct acct_cgroup *cg)
{
	if (w->settle_round)
		return;
	if (w->nr_settle == w->settle_cap) {
		size_t cap = w->settle_cap ? 2 * w->settle_cap : 16;
		struct acct_cgroup **p = realloc(w->settle, cap * sizeof(*p));
		if (!p)
			return;
		w->settle = p;
		w->settle_cap = cap;
	}
	w->settle[w->nr_settle++] = cg;
}

/* The parts cg has a source for (bit per enum acct_pass_part): what a pass
 * counts for it. */
static unsigned parts_present(const struct sample_ctx *x)
{
	return x->st->parts_files | (x->mem_rec ? 1u << ACCT_PART_MEMORY : 0);
}

static void count_parts(struct worker *w, unsigned parts, enum acct_part_outcome o)
{
	for (int p = 0; p < _ACCT_PART_MAX; p++)
		if (parts & (1u << p))
			w->part.parts[p][o]++;
}

/* The pass part of each pruning family. */
static const enum acct_pass_part family_part[_PF_MAX] = {
	[PF_CPU] = ACCT_PART_CPU,
	[PF_IO] = ACCT_PART_IO,
};

/* When a cgroup's files were read, on the clock of the pass's now_us (its
 * start as the owner gave it): now_us plus the time from the pass's start to
 * read_start. The rates divide by the time between two reads, and a pass
 * reads its cgroups one after the other after the walk: dividing by the
 * time between two passes' starts made a rate too high wherever a read came
 * later in its pass than the one before in its own (the walk of a large
 * tree taking longer, a worker woken late): the root at 2.26 cores on a
 * 2-CPU host beside 10,000 other cgroups (the new-user trial of session
 * 31). The ages stay the pass's start (ledger.h, "Ages"). */
static uint64_t read_moment(const struct sample_ctx *x, uint64_t read_start, uint64_t now_us)
{
	uint64_t started = x->w->s->started_us;
	return now_us + (read_start > started ? read_start - started : 0);
}

/* The fast group's cumulative families: each read, or pruned (its rate then
 * 0 since the last reading), then the outcome published for descendants. */
static void sample_cumulative(struct sample_ctx *x, size_t index, uint64_t read_start, uint64_t now_us)
{
	unsigned failures[_PF_MAX] = { 0 };
	unsigned pruned = sampler_prune_decide(x, index, read_start);
	uint64_t read_at = read_moment(x, read_start, now_us);
	x->pruned = pruned;

	for (int f = 0; f < _PF_MAX; f++) {
		unsigned before = x->nr_failures;
		if (pruned & (1u << f)) {
			if (f == PF_CPU)
				sample_cpu_unchanged(x, read_at);
			else if (f == PF_IO)
				sample_io_idle(x, read_at);
		} else if (f == PF_CPU)
			sample_cpu(x, read_at);
		else
			sample_io(x, read_at);
		failures[f] = x->nr_failures - before;
		/* Counted where a file was read (or failed): a role whose file
		 * this cgroup lacks (io.stat without the io controller) is no read. */
		if (pruned & (1u << f))
			x->w->part.parts[family_part[f]][ACCT_OUTCOME_PRUNED]++;
		else if ((x->witnessed & (1u << f)) || failures[f])
			x->w->part.parts[family_part[f]][ACCT_OUTCOME_READ]++;
	}
	/* Its CPU time is this read's: read now, or proved unchanged since. */
	x->cpu_current = (pruned & (1u << PF_CPU)) || (x->witnessed & (1u << PF_CPU));
	/* A settling cgroup's second read in a pass publishes nothing: its
	 * descendants may be reading the first one's outcome now. */
	if (!x->w->settle_round)
		sampler_prune_publish(x, pruned, failures, read_start, acct_now_us());
}

/* When a fast pass reads a cgroup's pressure. Its totals are not sums kept
 * up the tree (enum prune_family): no ancestor proves them. But they grow
 * only while a task of the cgroup's subtree is runnable, in an I/O wait or
 * in a memory stall, and such a task leaves traces that the pass has
 * already read: CPU time (it ran to get there, and runs when it is done),
 * or a thread counted active (R or D) by the last load pass. So pressure is
 * read where one of these says something may have stalled:
 * - never read, or the last read failed;
 * - not quiet: its totals moved between its last two reads;
 * - an average was not 0 at the last read, and that is PSI_DECAY_US ago
 *   (the kernel decays the averages at each read, so they must be read to
 *   fall; a 0.00 stays 0.00 until a new stall);
 * - its CPU time was read and moved since the last pressure read began, or
 *   could not be shown unchanged (no CPU witness, a failed read);
 * - the last load pass found an active thread in its subtree;
 * - the pass was queued by an event, or re-reads an emptied cgroup;
 * - the witness moved: the kernel's own totals of the cgroup (a BPF
 *   record's, psi_witness()) differ from those of the last read;
 * - and in any case once it is PSI_REFRESH_US old (spread by the record's
 *   serial so that the cgroups found at start-up do not all come due at
 *   once), counted from the last witness that showed its totals unchanged
 *   where there is one.
 * Otherwise its values stand, served with the age of their read
 * (ACCT_GROUP_PSI). This is evidence, not proof: the kernel folds each
 * CPU's stall times into the totals a record copies when the file is read
 * and by its averaging work, at most PSI_FREQ (2 s) after a group's tasks
 * changed state; so a stall that no other trace shows (a task placed in
 * another cgroup of the v1 cpuacct tree than of the unified one, a runnable
 * task moved in and out without running) is seen by the witness within a
 * walk and those 2 s, and without a witness at the refresh. The age says
 * how old the value is, never that it is newer than its read.
 * docs/counters.md, "Pressure". */
#define PSI_REFRESH_US (60 * USEC_PER_SEC)
#define PSI_REFRESH_SPREAD 30
#define PSI_DECAY_US (10 * USEC_PER_SEC)

/* The witness: 1 where the kernel's totals in this pass's record differ from
 * those the last read gave (each file total is the kernel's in ns divided
 * by 1,000, so the sums are equal exactly when every total is), 0 where they
 * are the same, -1 where there is none (no record, or not usable for this
 * cgroup: the root's file shows no CPU "full" line's total, and one whose
 * witness once moved while its file stood still). */
static int psi_witness(const struct sample_ctx *x)
{
	const struct acct_bpf_record *r = x->psi_rec;

	if (!r || x->st->psi_witness_off || strcmp(x->cg->path, "/") == 0)
		return -1;
	return sampler_bpf_psi_sum(r) != x->st->psi_sum;
}

static bool psi_due(struct sample_ctx *x, unsigned flags, uint64_t now_us)
{
	struct cg_state *st = x->st;
	const struct prune_witness *cpu = &st->witness[PF_CPU];

	st->psi_witness_moved = false;
	if (!st->psi_at || !st->psi_quiet || (flags & ACCT_PASS_EVENT) || x->w->settle_round)
		return true;
	int witness = psi_witness(x);
	if (witness > 0) {
		st->psi_witness_moved = true;
		return true;
	}
	if (witness == 0) {
		st->psi_still_at = now_us;
		x->w->part.bpf_psi_still++;
	}
	uint64_t age = now_us > st->psi_at ? now_us - st->psi_at : 0;
	uint64_t seen = MAX(st->psi_at, st->psi_still_at);
	uint64_t unseen = now_us > seen ? now_us - seen : 0;
	if (unseen >= PSI_REFRESH_US + (x->cg->serial % PSI_REFRESH_SPREAD) * USEC_PER_SEC ||
	    (st->psi_averages && age >= PSI_DECAY_US))
		return true;
	if (__atomic_load_n(&st->outcome_gen, __ATOMIC_RELAXED) != x->w->generation ||
	    (st->outcome[PF_CPU] != PO_UNCHANGED && st->outcome[PF_CPU] != PO_PRUNED) || !cpu->valid ||
	    cpu->stable_since > st->psi_at)
		return true;
	return st->load_valid && st->tree_active > 0;
}

/* The fast pass of a quiet empty cgroup (sampler_empty_quiet()): memory from
 * its record, CPU time and I/O pruned or read, nothing else; false where it
 * is not quiet (then it is read as any other). A slow pass reads it as
 * before where memory comes from files. */
static bool sample_quiet(struct sample_ctx *x, size_t index, unsigned flags, uint64_t changes, uint64_t read_start,
			 uint64_t now_us)
{
	struct worker *w = x->w;
	struct cg_state *st = x->st;

	if ((flags & ACCT_PASS_EVENT) || w->settle_round || !sampler_empty_quiet(w->s, x->cg, st, changes) ||
	    x->bpf_populated == 1)
		return false;
	/* Memory is the collector's record's, the witness of memory that moves
	 * without a task (its page cache reclaimed) and of a task in a v1
	 * memcg that no watch hears. Without a record (the files collector, a
	 * tree the collector does not serve) the cgroup is read as any empty
	 * one: a quiet pass would renew the fast group's age over a memory
	 * value it did not read. A slow pass without a record reads it too. */
	if (!x->mem_rec && ((parts_present(x) & (1u << ACCT_PART_MEMORY)) || (flags & ACCT_PASS_SLOW)))
		return false;
	w->part.skipped_empty++;
	w->part.empty_unread++;
	unsigned skipped = parts_present(x) & ~(1u << ACCT_PART_CPU | 1u << ACCT_PART_IO);
	if (x->mem_rec) {
		sample_memory(x, false);
		w->part.parts[ACCT_PART_MEMORY][ACCT_OUTCOME_READ]++;
		skipped &= ~(1u << ACCT_PART_MEMORY);
		int64_t moved = st->own_memory - st->quiet_memory;
		if (!st->own_memory_valid || (uint64_t)(moved < 0 ? -moved : moved) >= MAX(w->s->bytes_budget, (uint64_t)1))
			st->quiet_empty = false; /* read in full at the next pass */
	}
	count_parts(w, skipped, ACCT_OUTCOME_SKIPPED);
	sample_cumulative(x, index, read_start, now_us);
	/* CPU time or I/O charged to it: a task may be in it where no watch
	 * sees (a v1 tree only), or writeback charged after its tasks left. */
	if (st->outcome[PF_CPU] == PO_CHANGED || st->outcome[PF_IO] == PO_CHANGED || x->failed)
		st->quiet_empty = false;
	if (!x->failed)
		acct_cgroup_set_group_sampled(x->cg, ACCT_GROUP_FAST, now_us);
	if (x->mem_rec && !acct_cgroup_memory_still(x->cg))
		note_moving(w, x->cg, st);
	return true;
}

/* When a steady cgroup's full visit comes due again (sampler-steady.c): the
 * earliest of pressure's refresh and decay (psi_due()) and the pruning
 * refresh (sampler_prune_due()). */
static void steady_due(const struct sample_ctx *x, struct steady_due *ret)
{
	const struct cg_state *st = x->st;
	*ret = (struct steady_due){ .other_us = sampler_prune_due(x) };
	if (st->parts_files & (1u << ACCT_PART_PSI)) {
		ret->psi_seen_us = MAX(st->psi_at, st->psi_still_at);
		ret->psi_refresh_us = PSI_REFRESH_US + (x->cg->serial % PSI_REFRESH_SPREAD) * USEC_PER_SEC;
		if (st->psi_averages)
			ret->other_us = MIN(ret->other_us, st->psi_at + PSI_DECAY_US);
	}
}

static void sample_one(struct worker *w, struct acct_cgroup *cg, size_t index, unsigned flags, uint64_t now_us)
{
	enum steady_visit light = sampler_steady_light(w, index, flags, now_us);
	if (light == STEADY_LIGHT || (light == STEADY_LATER && !w->later_round && sampler_steady_defer(w, index)))
		return;

	struct cg_state *st = sampler_state_of(w->s, cg);
	struct sample_ctx x = { .w = w, .cg = cg, .st = st, .bpf_populated = -1,
				.files_allowed = !(flags & ACCT_PASS_KERNEL) };
	bool steady_populated = false;

	if (!st) {
		w->part.errors[ACCT_ERR_UNREADABLE]++;
		w->part.cgroups_failed++;
		return;
	}
	sampler_steady_leave(w->s, cg, st);
	bool slow = flags & ACCT_PASS_SLOW;
	bool fast = flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW);

	if (flags & ACCT_PASS_KERNEL) {
		/* Page counters from the lean record only (memory, peak, limits,
		 * swap); the group's age stays the last file pass's, those
		 * quantities carry their own. Stats, events and NUMA wait for the
		 * next file pass. */
		if (w->s->one_mode)
			sampler_bpf_one(&x, index);
		else
			sampler_bpf_lookup(&x);
		if (x.mem_rec)
			sampler_bpf_memory(&x);
		return;
	}

	if (fast) {
		if (w->s->opts.collector)
			sampler_bpf_lookup(&x);
		/* Before cgroup.events: a change announced after this load makes
		 * this read not the final one (acct_cgroup_final()). */
		uint64_t changes = acct_cgroup_get_populated_changes(cg);
		uint64_t epoch = __atomic_load_n(&w->s->events_epoch, __ATOMIC_ACQUIRE);
		uint64_t read_start = acct_now_us();
		bool populated = false;
		if (sample_quiet(&x, index, flags, changes, read_start, now_us)) {
			/* empty, as its watch and record say: nothing more */
		} else if (!(populated = sample_events(&x)) && st->read_empty && !slow) {
			/* Read since its last task left: nothing of the fast group
			 * can have grown, and no task can run in it. (A slow pass
			 * reads it: its page cache can still be reclaimed.) */
			w->part.skipped_empty++;
			count_parts(w, parts_present(&x), ACCT_OUTCOME_SKIPPED);
			sample_cpu_idle(&x, now_us);
		} else {
			bool slow_by_age = slow && sampler_slow_aged(st, cg, now_us);
			if (slow && !slow_by_age) {
				sample_memory(&x, false);
				slow = sampler_slow_due(&x, now_us);
				if (!slow)
					w->part.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_SKIPPED]++;
			}
			if (slow) {
				sample_slow(&x); /* memory.stat, then memory */
				w->part.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_READ]++;
			} else
				sample_memory(&x, false);
			if (parts_present(&x) & (1u << ACCT_PART_MEMORY))
				w->part.parts[ACCT_PART_MEMORY][ACCT_OUTCOME_READ]++;
			if (slow && st->memsw_valid) {
				if (st->own_memory_valid) { /* memsw is this cgroup's own memory + swap */
					acct_cgroup_set(cg, ACCT_Q_SWAP,
							st->memsw > st->own_memory ? st->memsw - st->own_memory : 0);
					st->applied.counters = false; /* swap set apart from a record */
				}
				st->memsw_valid = false;
			}
			sample_cumulative(&x, index, read_start, now_us);
			if (parts_present(&x) & (1u << ACCT_PART_PSI)) {
				if (!psi_due(&x, flags, now_us))
					w->part.parts[ACCT_PART_PSI][ACCT_OUTCOME_SKIPPED]++;
				else {
					if (sample_psi(&x))
						acct_cgroup_set_group_sampled(cg, ACCT_GROUP_PSI, now_us);
					w->part.parts[ACCT_PART_PSI][ACCT_OUTCOME_READ]++;
					x.psi_read = true;
				}
			}
			sample_memory_events(&x);
			/* An empty cgroup is read once after it empties (this pass, when
			 * it was populated at the last one), then skipped until it
			 * is populated again; a failed read is retried. */
			st->read_empty = !populated && !x.failed;
			/* Quiet from now on where cgroup.events itself said empty (and
			 * the final read, if one is due, is made: read_empty is
			 * cleared below while it settles), and memory.stat, read now,
			 * shows no page still to be written back (its I/O can be
			 * charged later: docs/counters.md, "Empty cgroups"). */
			st->quiet_empty = st->read_empty && x.events_known && x.memstat_from_file && !x.memstat_dirty;
			st->quiet_changes = changes;
			st->quiet_epoch = epoch;
			st->quiet_memory = st->own_memory;
			/* Final only once a task was seen (read populated, or a change
			 * announced): kernfs loses some changes of a new cgroup's
			 * cgroup.events, so "empty at the first read" does not prove
			 * that no task came and went before its removal. */
			if (x.events_known && populated) {
				st->seen_populated = true;
				st->settling = false;
				acct_cgroup_clear_final(cg);
			} else if (x.events_known && !x.failed && (st->seen_populated || changes > 0)) {
				if (cpu_source_left(st)) {
					/* its CPU time can no longer be read (a tree it
					 * left): no read proves it final now; one made
					 * before stands */
				} else if (empty_read_settled(&x)) {
					st->settling = false;
					acct_cgroup_mark_final(cg, changes);
				} else {
					st->read_empty = false; /* read again, at the latest next pass */
					queue_settle(w, cg);
				}
			}
			/* else (cgroup.events unreadable: being removed, or a failed
			 * read): an earlier final read stands */
			if (!x.failed)
				acct_cgroup_set_group_sampled(cg, ACCT_GROUP_FAST, now_us);
			if (x.mem_rec && !w->settle_round && !acct_cgroup_memory_still(cg))
				note_moving(w, cg, st);
			if (slow && !x.failed) {
				acct_cgroup_set_group_sampled(cg, ACCT_GROUP_SLOW, now_us);
				sampler_slow_done(&x, slow_by_age, now_us);
			}
			steady_populated = populated;
		}
	}
	if (flags & ACCT_PASS_LOAD) {
		sample_load(&x);
		if (st->load_valid && st->own_threads > 0)
			st->quiet_empty = false; /* a thread where no watch saw a task come */
		if (st->has_threads)
			w->part.parts[ACCT_PART_LOAD][ACCT_OUTCOME_READ]++;
	}
	sampler_close_unread(w->s, st);
	if (x.failed) {
		w->part.cgroups_failed++;
		acct_cgroup_count_sample_error(cg);
	}
	struct steady_due due = { 0 };
	if (steady_populated)
		steady_due(&x, &due);
	sampler_steady_note(&x, index, flags, steady_populated, &due);
}

/* ---- workers ---------------------------------------------------------- */

static double thread_cpu_seconds(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct acct_sampler *s = w->s;
	uint64_t seen = 0;

	pthread_mutex_lock(&s->lock);
	w->tid = gettid();
	s->started++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (;;) {
		pthread_mutex_lock(&s->lock);
		while (!s->stop && s->generation == seen)
			pthread_cond_wait(&s->cond, &s->lock);
		if (s->stop) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		seen = s->generation;
		w->generation = seen;
		unsigned flags = s->flags;
		uint64_t now = s->now_us;
		pthread_mutex_unlock(&s->lock);

		double cpu0 = thread_cpu_seconds();
		memset(&w->part, 0, sizeof(w->part));
		w->nr_moving = 0;
		if (w->moving_cap == SIZE_MAX)
			w->moving_cap = 0, free(w->moving), w->moving = NULL;
		bool cgroup_walk = s->opts.collector && (flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW | ACCT_PASS_KERNEL));
		bool task_walk = s->opts.task_walk && (flags & ACCT_PASS_LOAD);
		if (cgroup_walk || task_walk) {
			/* Worker 0 walks; the others wait for the snapshots. */
			if (w->index == 0) {
				memset(&s->bpf_report, 0, sizeof(s->bpf_report));
				if (cgroup_walk)
					sampler_bpf_walk(s);
				sampler_task_walk(s);
			}
			pthread_mutex_lock(&s->lock);
			if (w->index == 0) {
				s->snap_generation = seen;
				pthread_cond_broadcast(&s->cond);
			} else
				while (s->snap_generation != seen && !s->stop)
					pthread_cond_wait(&s->cond, &s->lock);
			/* Stopping before the snapshots are whole: worker 0 may be
			 * writing them still, so this pass reads nothing more. */
			bool abandon = s->snap_generation != seen;
			pthread_mutex_unlock(&s->lock);
			if (abandon)
				return NULL;
		}
		for (;;) {
			size_t i = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
			if (i >= s->nr_work)
				break;
			sample_one(w, s->work[i], i, flags, now);
		}
		w->later_round = true;
		for (size_t k = 0; k < w->nr_later; k++)
			sample_one(w, s->work[w->later[k]], w->later[k], flags, now);
		w->later_round = false;
		w->nr_later = 0;
		if (w->nr_settle) {
			/* Cgroups this share found emptied: read them once more when
			 * their CPU time can have settled (empty_read_settled()). One
			 * wait per pass, on this worker only. */
			struct timespec ts = { 0, SETTLE_US * 1000L };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
			w->settle_round = true;
			for (size_t i = 0; i < w->nr_settle; i++)
				sample_one(w, w->settle[i], SIZE_MAX, ACCT_PASS_FAST, now);
			w->settle_round = false;
			w->nr_settle = 0;
		}
		w->cpu_seconds = thread_cpu_seconds() - cpu0;

		pthread_mutex_lock(&s->lock);
		bool last = --s->running == 0;
		pthread_mutex_unlock(&s->lock);
		if (last) {
			uint64_t one = 1;
			(void)!write(s->done_fd, &one, sizeof(one));
		}
	}
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_sampler *, acct_sampler_free);

int acct_sampler_new(const struct acct_sampler_options *opts, struct acct_ledger *ledger,
		     struct acct_sampler **ret)
{
	_cleanup_(acct_sampler_freep) struct acct_sampler *s = NULL;

	if (!opts->layout || opts->workers == 0 || opts->workers > 256)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->opts = *opts;
	if (s->opts.page_size <= 0)
		s->opts.page_size = sysconf(_SC_PAGESIZE);
	if (s->opts.user_hz <= 0)
		s->opts.user_hz = sysconf(_SC_CLK_TCK);
	s->ledger = ledger;
	s->release_gen = 1; /* a state's parent_gen 0: its ancestor not looked up yet */
	if (s->opts.batching.nr_cpus == 0)
		acct_bpf_memcg_batching_detect(&s->opts.batching, opts->nr_cpus, NULL);
	if (s->opts.page_size > 0)
		s->opts.batching.page_size = s->opts.page_size;
	if (!opts->kernel_bounds) /* a copy of a tree: no kernel batched its values */
		s->opts.batching.nr_cpus = 0;
	sampler_bpf_init(s, opts);
	s->max_cached = opts->max_cached_fds;
	if (s->max_cached == 0) {
		struct rlimit rl;
		uint64_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 1024;
		uint64_t reserve = MAX(lim / 8, (uint64_t)48);
		s->max_cached = lim > reserve ? lim - reserve : 0;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->workers = calloc(opts->workers, sizeof(*s->workers));
	if (s->done_fd < 0 || !s->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < opts->workers; i++) {
		struct worker *w = &s->workers[i];
		w->s = s;
		w->index = i;
		w->buf_size = 16384;
		w->buf = malloc(w->buf_size);
		if (!w->buf)
			return -ENOMEM;
		int r = pthread_create(&w->thread, NULL, worker_main, w);
		if (r != 0)
			return -r;
		s->nr_workers++;
	}
	/* Every tid known before the first pass, so that no worker is ever
	 * counted as active (count_thread()); the lock orders the stores before
	 * the workers' reads. */
	pthread_mutex_lock(&s->lock);
	while (s->started < s->nr_workers)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	*ret = TAKE_PTR(s);
	return 0;
}

struct acct_sampler *acct_sampler_free(struct acct_sampler *s)
{
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (unsigned i = 0; i < s->nr_workers; i++)
		pthread_join(s->workers[i].thread, NULL);
	/* Buffers of workers that never started too (acct_sampler_new() failed). */
	for (unsigned i = 0; s->workers && i < s->opts.workers; i++) {
		free(s->workers[i].buf);
		free(s->workers[i].settle);
		free(s->workers[i].moving);
		free(s->workers[i].later);
	}
	free(s->moving);
	free(s->one_recs);
	free(s->steady);
	free(s->full_work);
	free(s->one_ok);
	free(s->workers);
	free(s->work);
	free(s->parents);
	free(s->tasks);
	for (int i = 0; i < _ACCT_HIER_MAX; i++) {
		acct_bpf_snapshot_clear(&s->snap[i]);
		free(s->census_scope[i]);
	}
	if (s->done_fd >= 0)
		close(s->done_fd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

/* A pass that reads every live cgroup's fast group: it makes the list of
 * moving cgroups. */
static bool full_fast_pass(unsigned flags)
{
	return (flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW)) && !(flags & (ACCT_PASS_EVENT | ACCT_PASS_KERNEL));
}

int acct_sampler_start(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n, unsigned flags,
		       uint64_t now_us)
{
	pthread_mutex_lock(&s->lock);
	if (s->busy) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	struct acct_cgroup **copy = n ? malloc(n * sizeof(*copy)) : NULL;
	if (n && !copy) {
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	if (n)
		memcpy(copy, cgs, n * sizeof(*copy));
	free(s->work);
	s->work = copy;
	s->nr_work = n;
	s->next = 0;
	/* The budget first: the steady table is kept only while it is the same
	 * (sampler_steady_prepare()). */
	struct acct_ledger_budgets budgets;
	acct_ledger_get_budgets(s->ledger, &budgets);
	s->bytes_budget = (uint64_t)MAX(budgets.bytes, (int64_t)0);
	/* Each cgroup's nearest tracked ancestor, so that pruning can use its
	 * read; a pass of queued cgroups (EVENT) reads what it was given in full,
	 * and leaves the last full pass's list and what was made for it. */
	s->flags = flags;
	s->same_list = false;
	s->parents_on = false;
	s->steady_ok = false;
	if (!(flags & (ACCT_PASS_EVENT | ACCT_PASS_KERNEL))) {
		sampler_keep_full_work(s);
		s->parents_on = sampler_prune_prepare(s, n) == 0; /* no memory: this pass prunes nothing */
		sampler_steady_prepare(s);
	}
	s->now_us = now_us;
	s->started_us = acct_now_us();
	s->one_mode = false;
	if (full_fast_pass(flags)) {
		s->files_seq++;
		s->moving_gen++; /* the list this pass makes (note_moving()) */
		s->moving_valid = false;
	}
	s->busy = true;
	s->starter_tid = gettid();
	s->running = s->nr_workers;
	s->generation++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int acct_sampler_fd(const struct acct_sampler *s)
{
	return s->done_fd;
}

bool acct_sampler_busy(const struct acct_sampler *s)
{
	return __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE);
}

/* The workers' lists of moving cgroups become the sampler's (anew) or are
 * added to it (under lock, the workers done). A cgroup may then be listed
 * twice, and be read once (acct_sampler_kernel_due()). */
static void collect_moving(struct acct_sampler *s, bool anew)
{
	size_t n = anew ? 0 : s->nr_moving;
	for (unsigned i = 0; i < s->nr_workers; i++) {
		if (s->workers[i].moving_cap == SIZE_MAX) {
			s->moving_valid = false; /* a share lost its list */
			return;
		}
		n += s->workers[i].nr_moving;
	}
	if (n > s->moving_cap) {
		struct acct_cgroup **p = reallocarray(s->moving, n, sizeof(*p));
		if (!p) {
			s->moving_valid = false;
			return;
		}
		s->moving = p;
		s->moving_cap = n;
	}
	if (anew)
		s->nr_moving = 0;
	for (unsigned i = 0; i < s->nr_workers; i++) {
		if (s->workers[i].nr_moving == 0)
			continue; /* (its list may be NULL: no memcpy from it, UBSan) */
		memcpy(s->moving + s->nr_moving, s->workers[i].moving, s->workers[i].nr_moving * sizeof(*s->moving));
		s->nr_moving += s->workers[i].nr_moving;
	}
	s->moving_valid = true;
}

/* The moving cgroups by the bytes budget: those due now into due[] (room
 * for nr_moving; NULL: only counted) and their number into *ret_n; returns when the first of
 * the others comes due at its present motion (UINT64_MAX: none will). Due:
 * the expected staleness, motion x age, has reached the budget, or the
 * motion is not known yet (a new cgroup: two readings). */
static uint64_t scan_moving(struct acct_sampler *s, uint64_t now_us, struct acct_cgroup **due, size_t *ret_n)
{
	struct acct_ledger_budgets budgets;
	acct_ledger_get_budgets(s->ledger, &budgets);
	double budget = (double)MAX(budgets.bytes, (int64_t)0);
	uint64_t next = UINT64_MAX;
	size_t n = 0;
	s->due_round++;
	for (size_t i = 0; i < s->nr_moving; i++) {
		struct acct_cgroup *cg = s->moving[i];
		struct cg_state *st = cg->sampler_state;
		if (!st || acct_cgroup_is_dead(cg) || st->due_round == s->due_round)
			continue; /* (listed twice: a pass of queued cgroups added it again) */
		st->due_round = s->due_round;
		double age = now_us > st->memory_at ? (double)(now_us - st->memory_at) / 1e6 : 0;
		bool known = __atomic_load_n(&cg->memory_motion_known, __ATOMIC_ACQUIRE);
		double motion = known ? acct_cgroup_get_double(&cg->memory_motion_bits) : 0;
		if (!known || motion * age >= budget) {
			if (due)
				due[n] = cg;
			n++;
		}
		else if (motion > 0) /* (not NaN) the age at which it reaches the budget; a day at most */
			next = MIN(next, st->memory_at + (uint64_t)MIN(budget / motion * 1e6, 86400e6));
	}
	*ret_n = n;
	return next;
}

int acct_sampler_kernel_due(struct acct_sampler *s, uint64_t now_us, struct acct_cgroup ***ret,
			    uint64_t *ret_next_us)
{
	*ret = NULL;
	*ret_next_us = now_us;
	if (!s->moving_valid || acct_sampler_busy(s))
		return -ESTALE;
	_cleanup_free_ struct acct_cgroup **due = malloc(MAX(s->nr_moving, (size_t)1) * sizeof(*due));
	if (!due)
		return -ENOMEM;
	size_t n;
	*ret_next_us = scan_moving(s, now_us, due, &n);
	if (n > 0)
		*ret = TAKE_PTR(due);
	return (int)MIN(n, (size_t)INT_MAX);
}

uint64_t acct_sampler_kernel_next_us(struct acct_sampler *s, uint64_t now_us)
{
	if (!s->moving_valid)
		return now_us;
	size_t n;
	uint64_t next = scan_moving(s, now_us, NULL, &n);
	return n > 0 ? now_us : next;
}

int acct_sampler_collect(struct acct_sampler *s, struct acct_pass_report *report)
{
	uint64_t v;

	pthread_mutex_lock(&s->lock);
	if (!s->busy || s->running > 0) {
		pthread_mutex_unlock(&s->lock);
		return -EAGAIN;
	}
	(void)!read(s->done_fd, &v, sizeof(v));
	*report = (struct acct_pass_report){
		.flags = s->flags,
		.started_us = s->started_us,
		.wall_us = acct_now_us() - s->started_us,
		.cgroups = s->nr_work,
	};
	for (unsigned i = 0; i < s->nr_workers; i++) {
		const struct acct_pass_report *p = &s->workers[i].part;
		report->cpu_seconds += s->workers[i].cpu_seconds;
		report->skipped_empty += p->skipped_empty;
		report->empty_unread += p->empty_unread;
		for (int k = 0; k < _ACCT_PART_MAX; k++)
			for (int o = 0; o < _ACCT_OUTCOME_MAX; o++)
				report->parts[k][o] += p->parts[k][o];
		report->files_read += p->files_read;
		report->open_per_read += p->open_per_read;
		report->cgroups_failed += p->cgroups_failed;
		for (int e = 0; e < _ACCT_ERR_MAX; e++)
			report->errors[e] += p->errors[e];
		histogram_merge(&report->drift_memory, &p->drift_memory);
		histogram_merge(&report->drift_cpu, &p->drift_cpu);
		if (p->last_backwards[0])
			memcpy(report->last_backwards, p->last_backwards, sizeof(report->last_backwards));
		report->bpf_cgroups += p->bpf_cgroups;
		report->bpf_stat_reads += p->bpf_stat_reads;
		report->bpf_unbounded += p->bpf_unbounded;
		report->bpf_unchanged += p->bpf_unchanged;
		report->bpf_psi_still += p->bpf_psi_still;
		report->steady += p->steady;
	}
	if (s->opts.collector && (full_fast_pass(s->flags) || (s->moving_valid && (s->flags & ACCT_PASS_EVENT))))
		collect_moving(s, full_fast_pass(s->flags));
	sampler_steady_finish(s);
	if (s->opts.task_walk && (s->flags & ACCT_PASS_LOAD)) {
		const struct acct_pass_report *b = &s->bpf_report;
		report->task_records = b->task_records;
		report->task_walk_us = b->task_walk_us;
		report->task_checks = b->task_checks;
		report->task_mismatches = b->task_mismatches;
		report->task_fallback = b->task_fallback;
		if (!s->opts.collector)
			report->errors[ACCT_ERR_UNREADABLE] += b->errors[ACCT_ERR_UNREADABLE];
		if (b->task_mismatches)
			memcpy(report->last_mismatch, b->last_mismatch, sizeof(report->last_mismatch));
	}
	if (s->opts.collector && (s->flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW | ACCT_PASS_KERNEL))) {
		const struct acct_pass_report *b = &s->bpf_report;
		report->bpf_records = b->bpf_records;
		report->bpf_walk_us = b->bpf_walk_us;
		report->bpf_checks = b->bpf_checks;
		report->bpf_mismatches = b->bpf_mismatches;
		report->bpf_fallbacks = b->bpf_fallbacks;
		report->census_taken = b->census_taken;
		report->census_mask = b->census_mask;
		memcpy(report->census, b->census, sizeof(report->census));
		report->errors[ACCT_ERR_UNREADABLE] += b->errors[ACCT_ERR_UNREADABLE];
		memcpy(report->last_mismatch, b->last_mismatch, sizeof(report->last_mismatch));
	}
	s->busy = false;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int acct_sampler_run(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n, unsigned flags,
		     uint64_t now_us, struct acct_pass_report *report)
{
	int r = acct_sampler_start(s, cgs, n, flags, now_us);
	if (r < 0)
		return r;
	for (;;) {
		r = acct_sampler_collect(s, report);
		if (r != -EAGAIN)
			return r;
		/* wait for the eventfd without consuming it */
		fd_set set;
		FD_ZERO(&set);
		FD_SET(s->done_fd, &set);
		(void)select(s->done_fd + 1, &set, NULL, NULL, NULL);
	}
}

