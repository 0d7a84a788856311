/* sample-cpu.c - the sampler's CPU readers: v2 cpu.stat, v1 cpu.stat
 * (throttling), cpuacct.usage, usage_percpu and cpuacct.stat, and the CPU
 * rate and its averages derived from successive readings. */
#include "sampler-internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/util.h"
#include "cgroup/cgfs-parse.h"

/* The CPU family's witness for pruning: the usage total just read, from
 * the role's hierarchy. */
static void witness_cpu(struct sample_ctx *x, enum file_role role, uint64_t usage_usec)
{
	x->witness[PF_CPU] = usage_usec;
	x->witness_tree[PF_CPU] = (int8_t)x->st->spec[role].tree;
	x->witnessed |= 1u << PF_CPU;
}

static void note_cpu(struct sample_ctx *x, uint64_t usage_usec, uint64_t now_us)
{
	struct cg_state *st = x->st;
	struct acct_reading old;

	/* no drift across a change of source file: two different counters */
	if (!(st->restart & QBIT(ACCT_Q_CPU_USAGE)) && acct_cgroup_get(x->cg, ACCT_Q_CPU_USAGE, true, &old) &&
	    (int64_t)usage_usec >= old.value)
		histogram_add(&x->w->part.drift_cpu, usage_usec - (uint64_t)old.value);
	if (st->last_cpu_at && now_us > st->last_cpu_at && usage_usec >= st->last_cpu_usec) {
		uint64_t dt = now_us - st->last_cpu_at;
		double rate = (double)(usage_usec - st->last_cpu_usec) / (double)dt;
		/* Lazy decay: the idle passes since the averages were set left
		 * them alone (sample_cpu_idle()); decay them over that time now,
		 * as those passes would have, then add this interval. */
		if (st->last_cpu_at > st->rate_avg_at)
			acct_rate_avg_update(&st->rate_avg, 0.0, st->last_cpu_at - st->rate_avg_at);
		acct_rate_avg_update(&st->rate_avg, rate, dt);
		st->rate_avg_at = now_us;
		acct_cgroup_set_cpu_rate(x->cg, rate, st->rate_avg.avg, now_us);
		acct_cgroup_mark_cpu_rate_known(x->cg);
	} else if (!st->last_cpu_at) {
		/* The first reading (of this source): nothing to decay before it.
		 * After a change of source the averages go on from here, not
		 * decayed over the time between the sources (as they never
		 * were): the ledger's are set anew as of now, the rate kept. */
		if (st->rate_avg.init)
			acct_cgroup_set_cpu_rate(x->cg, acct_cgroup_get_double(&x->cg->cpu_rate_bits), st->rate_avg.avg,
						 now_us);
		st->rate_avg_at = now_us;
	}
	st->last_cpu_usec = usage_usec;
	st->last_cpu_at = now_us;
}

/* v1 cpuacct.usage_percpu: each CPU's share lands in the matching CPU's shard of
 * the usage counter (acct_counter_add_cpu()), so the per-CPU structure the
 * kernel gives is kept; the total is the sum of the per-CPU nanoseconds / 1000,
 * as cpuacct.usage gives it. Returns true when it set the usage. */
static bool sample_percpu(struct sample_ctx *x, uint64_t now_us)
{
	struct cg_state *st = x->st;
	uint64_t on_stack[1024], *ns = on_stack, total = 0;
	_cleanup_free_ uint64_t *on_heap = NULL;
	size_t n = 0; /* set by a parse that succeeds (n <= max) or finds too many values (n > max) */

	int r = cgfs_parse_percpu(x->w->buf, ns, ELEMENTSOF(on_stack), &n);
	if (n > ELEMENTSOF(on_stack)) {
		/* More possible CPUs than the stack holds (the file lists every
		 * one): n of them. Without the memory, cpuacct.usage gives the
		 * total this pass. */
		on_heap = malloc(n * sizeof(*on_heap));
		if (!on_heap)
			return false;
		ns = on_heap;
		r = cgfs_parse_percpu(x->w->buf, ns, n, &n);
	}
	if (r < 0) { /* (a parse that succeeds has at least one value) */
		sampler_fail(x, ACCT_ERR_GARBAGE);
		return false;
	}
	if (st->percpu_n != n) {
		uint64_t *p = calloc(n, sizeof(*p));
		if (!p)
			return false;
		free(st->percpu_last);
		st->percpu_last = p;
		st->percpu_n = n;
		/* first reading (or CPUs hot-added): start from the current total */
		for (size_t i = 0; i < n; i++) {
			total += ns[i];
			p[i] = ns[i] / 1000;
		}
		note_cpu(x, total / 1000, now_us);
		sampler_set_unchecked(x, ACCT_Q_CPU_USAGE, (int64_t)(total / 1000));
		witness_cpu(x, F_CPUACCT_PERCPU, total / 1000);
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		if (ns[i] / 1000 < st->percpu_last[i]) {
			snprintf(x->w->part.last_backwards, sizeof(x->w->part.last_backwards),
				 "%s cpu.usage (CPU %zu) %" PRIu64 " -> %" PRIu64, x->cg->path, i, st->percpu_last[i],
				 ns[i] / 1000);
			sampler_fail(x, ACCT_ERR_INVARIANT);
			return true; /* keep the old value */
		}
		total += ns[i];
	}
	total /= 1000; /* usec, exactly cpuacct.usage / 1000 */
	note_cpu(x, total, now_us);
	witness_cpu(x, F_CPUACCT_PERCPU, total);
	unsigned shards = acct_domain_topology(x->cg->q[ACCT_Q_CPU_USAGE]->domain)->nr_shards;
	for (size_t i = 0; i < n; i++) {
		uint64_t us = ns[i] / 1000;
		if (us != st->percpu_last[i])
			(void)acct_counter_add_cpu(x->cg->q[ACCT_Q_CPU_USAGE], (unsigned)(i % shards),
						   (int64_t)(us - st->percpu_last[i]));
		st->percpu_last[i] = us;
	}
	/* Per-CPU microseconds are rounded down one by one; the remainder (less
	 * than one usec per CPU) goes in as one add so the total is exact. */
	sampler_set_unchecked(x, ACCT_Q_CPU_USAGE, (int64_t)total);
	return true;
}

/* A cgroup without tasks uses no CPU: its rate is 0 from the last reading on,
 * without a read. The averages are not decayed here (lazy decay, ledger.h's
 * acct_cgroup_set_cpu_rate()): the ledger is told until when the rate was 0
 * and its readers decay them over that time, and note_cpu() decays the
 * sampler's copy (st->rate_avg, as of st->rate_avg_at) when the CPU time
 * moves again. */
void sample_cpu_idle(struct sample_ctx *x, uint64_t now_us)
{
	struct cg_state *st = x->st;

	if (!st->last_cpu_at || now_us <= st->last_cpu_at)
		return;
	acct_cgroup_cpu_rate_idle(x->cg, now_us);
	st->last_cpu_at = now_us;
}

void sample_cpu_unchanged(struct sample_ctx *x, uint64_t now_us)
{
	bool measured = x->st->last_cpu_at && now_us > x->st->last_cpu_at;
	sample_cpu_idle(x, now_us);
	/* Two readings bracket it: the last read and the proof that nothing
	 * moved since (sampler-prune.c), so the rate of 0 is measured. */
	if (measured)
		acct_cgroup_mark_cpu_rate_known(x->cg);
}

void sample_cpu(struct sample_ctx *x, uint64_t now_us)
{
	struct cgfs_cpu_stat cs;

	if (x->st->spec[F_CPU_STAT].name && sampler_get(x, F_CPU_STAT)) {
		if (cgfs_parse_cpu_stat(x->w->buf, &cs) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else {
			if (cs.has_usage) {
				note_cpu(x, cs.usage_usec, now_us);
				witness_cpu(x, F_CPU_STAT, cs.usage_usec);
				sampler_set_checked(x, ACCT_Q_CPU_USAGE, (int64_t)cs.usage_usec);
				sampler_set_checked(x, ACCT_Q_CPU_USER, (int64_t)cs.user_usec);
				sampler_set_checked(x, ACCT_Q_CPU_SYSTEM, (int64_t)cs.system_usec);
			}
			x->st->cpu_bandwidth = cs.has_throttling && cs.nr_periods > 0;
			if (cs.has_throttling) {
				sampler_set_checked(x, ACCT_Q_CPU_PERIODS, (int64_t)cs.nr_periods);
				sampler_set_checked(x, ACCT_Q_CPU_THROTTLED_PERIODS, (int64_t)cs.nr_throttled);
				sampler_set_checked(x, ACCT_Q_CPU_THROTTLED, (int64_t)cs.throttled_usec);
			}
		}
	}
	if (x->st->spec[F_CPU_STAT_V1].name && sampler_get(x, F_CPU_STAT_V1)) {
		if (cgfs_parse_cpu_stat(x->w->buf, &cs) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else if (cs.has_throttling) {
			x->st->cpu_bandwidth = cs.nr_periods > 0;
			sampler_set_checked(x, ACCT_Q_CPU_PERIODS, (int64_t)cs.nr_periods);
			sampler_set_checked(x, ACCT_Q_CPU_THROTTLED_PERIODS, (int64_t)cs.nr_throttled);
			sampler_set_checked(x, ACCT_Q_CPU_THROTTLED, (int64_t)cs.throttled_usec);
		}
	}
	bool have_usage = false;
	if (x->st->spec[F_CPUACCT_PERCPU].name && sampler_get(x, F_CPUACCT_PERCPU))
		have_usage = sample_percpu(x, now_us);
	if (!have_usage && x->st->spec[F_CPUACCT_USAGE].name && sampler_get(x, F_CPUACCT_USAGE)) {
		uint64_t ns;
		if (cgfs_parse_u64(x->w->buf, &ns) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else {
			note_cpu(x, ns / 1000, now_us);
			sampler_set_checked(x, ACCT_Q_CPU_USAGE, (int64_t)(ns / 1000));
			witness_cpu(x, F_CPUACCT_USAGE, ns / 1000);
		}
	}
	if (x->st->spec[F_CPUACCT_STAT].name && sampler_get(x, F_CPUACCT_STAT)) {
		uint64_t user, sys;
		if (cgfs_parse_cpuacct_stat(x->w->buf, (unsigned)x->w->s->opts.user_hz, &user, &sys) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else {
			sampler_set_checked(x, ACCT_Q_CPU_USER, (int64_t)user);
			sampler_set_checked(x, ACCT_Q_CPU_SYSTEM, (int64_t)sys);
		}
	}
}

