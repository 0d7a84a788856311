/* manager-pass.c - the schedule of sampling passes: the ticks (fast, slow,
 * load, the BPF collector's walks alone), the reads that discovery asks for
 * at once (read_soon()), Reconcile's waiters, and what follows each pass
 * (reconciliation, the history, the front ends, READY=1 and STATUS=). */
#include "basic/strv.h"
#include "manager-internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/format-human.h"
#include "basic/log.h"
#include "basic/name-escape.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "build-config.h"
#include "format/ledger-json.h"
#include "state-writer.h"

#define LOAD_PERIOD_US 5000000u  /* the kernel's LOAD_FREQ */

const double manager_pass_bucket_bounds[MANAGER_PASS_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, __builtin_inf(),
};

static void pass_histogram_add(struct manager_pass_histogram *h, double seconds)
{
	for (int i = 0; i < MANAGER_PASS_BUCKETS; i++)
		if (seconds <= manager_pass_bucket_bounds[i])
			h->bucket[i]++;
	h->count++;
	h->sum_seconds += seconds;
}

static void start_soon_pass(struct manager *m);

void manager_on_inotify(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	int r = manager_process_changes(m);
	if (r < 0)
		log_warning_errno(r, "Failed to process cgroup changes, rescanning: %m");
	if (r < 0) {
		m->events_gap = true;
		(void)manager_scan(m);
	}
	start_soon_pass(m);
}

/* A scan of every directory; the passes it queues start after the running
 * handler (manager_on_sampler_done() or the next tick) where `inside_pass`. */
static void periodic_scan(struct manager *m, const char *why, bool inside_pass)
{
	m->rescans++;
	int r = manager_scan(m);
	if (r < 0)
		log_warning_errno(r, "Periodic cgroup rescan failed: %m");
	else if (r > 0)
		log_debug("Periodic rescan (%s) found %d changes inotify had not reported", why, r);
	if (!inside_pass)
		start_soon_pass(m);
}

/* The census, where every walked tree has a hierarchy the BPF collector
 * serves and discovery's set can stand for it: the hierarchies to ask the
 * sampler for; 0 where a scan must do. */
static uint32_t census_plan(struct manager *m)
{
	uint32_t served = 0;
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		if (acct_bpf_collector_reads(m->collector, h)) /* served, and not too large for a pinned read */
			served |= 1u << h;
	return acct_discovery_census_plan(m->discovery, served);
}

/* Where the include globs prune: discovery's scope of each hierarchy in
 * `plan` into scopes[] and its census into m->census_mine[] (bits in
 * m->census_scoped), after reading the directories above the scopes. Returns
 * 0; or why a scan must do instead. */
static const char *census_scopes(struct manager *m, uint32_t plan, struct acct_cgroup_scope *scopes[_ACCT_HIER_MAX])
{
	m->census_scoped = 0;
	int r = acct_discovery_census_above(m->discovery);
	if (r != 0)
		return r < 0 ? "directories above the scope unreadable" : "a directory above the scope differs";
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		if (!(plan & (1u << h)))
			continue;
		r = acct_discovery_census_scope(m->discovery, h, &scopes[h]);
		if (r < 0)
			return "no scope";
		if (scopes[h]) {
			acct_cgroup_scope_census(scopes[h], &m->census_mine[h]);
			m->census_scoped |= 1u << h;
		}
	}
	return NULL;
}

/* The periodic rescan looks for what inotify did not report. A scan reads
 * every directory of every hierarchy: at 10,000 cgroups in a hybrid layout
 * about a second of CPU, most of what an idle acctd costs. Where the BPF
 * collector walks the hierarchies, the next full pass takes their census
 * instead (acct_sampler_want_census_of()) and finish_pass() scans only where
 * it differs from discovery's (census_check()). Where the include globs
 * prune, the census is of the subtrees discovery follows, and the few
 * directories above them are read one level each now. */
void manager_on_rescan(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	uint32_t plan = m->census_asked ? 0 : census_plan(m);
	if (m->census_asked)
		/* the last one was never taken (no full pass since): scan */
		m->census_asked = 0;
	if (!plan) {
		periodic_scan(m, "every directory", false);
		return;
	}
	struct acct_cgroup_scope *scopes[_ACCT_HIER_MAX] = { 0 };
	const char *why = census_scopes(m, plan, scopes);
	if (why) {
		for (int h = 0; h < _ACCT_HIER_MAX; h++)
			free(scopes[h]);
		m->census_checks++;
		m->census_differed++;
		periodic_scan(m, why, false);
		return;
	}
	m->census_asked = plan;
	acct_sampler_want_census_of(m->sampler, plan, m->config->max_depth, scopes);
}

/* After a full pass that took the census asked: compare each hierarchy's
 * with discovery's after the inotify events read so far (a scope's: as
 * asked); scan where any differs or was not taken. A cgroup made or removed
 * between the walk and the comparison (for a scope: between the ask and the
 * walk) makes them differ: a scan then costs what it always did. */
static void census_check(struct manager *m, const struct acct_pass_report *rep)
{
	uint32_t plan = m->census_asked;
	const char *why = NULL;
	char text[96];

	if (!plan || !(rep->census_taken & plan))
		return;
	m->census_asked = 0;
	m->census_checks++;
	if (manager_process_changes(m) < 0)
		why = "inotify failed";
	for (int h = 0; !why && h < _ACCT_HIER_MAX; h++) {
		struct acct_cgroup_census mine;
		if (!(plan & (1u << h)))
			continue;
		if (m->census_scoped & (1u << h))
			mine = m->census_mine[h];
		else if (acct_discovery_census(m->discovery, h, &mine) < 0)
			why = "no census";
		if (!why && !(rep->census_mask & (1u << h)))
			why = "no census";
		else if (!why && !acct_cgroup_census_equal(&mine, &rep->census[h])) {
			snprintf(text, sizeof(text), "%s census: %" PRIu64 " cgroups walked, %" PRIu64 " known",
				 acct_hierarchy_to_string(h), rep->census[h].count, mine.count);
			why = text;
		}
	}
	if (why) {
		m->census_differed++;
		periodic_scan(m, why, true);
	}
}

/* Where the include globs prune, the BPF walks cover the subtrees that hold
 * every cgroup discovery reports (acct_discovery_walk_roots()) instead of
 * every cgroup of each hierarchy: on a host where acctd reads a part, a walk
 * costs what that part holds, not what the host has (a test's acctd beside
 * 10,000 other cgroups walked 11,000 records a hierarchy per pass for its
 * 1,000). Recomputed when discovery heard or scanned anything since: a
 * cgroup made below a new top would otherwise have no record (it is read
 * from files then, as any cgroup without one). At most WALK_ROOTS_MAX roots
 * below one directory, else that directory: a walk per root. */
#define WALK_ROOTS_MAX 16

static void update_walk_roots(struct manager *m, const struct acct_discovery_stats *ds)
{
	uint64_t seen = ds->events + ds->scans;
	if (!m->collector || (m->walk_roots_valid && seen == m->walk_roots_seen))
		return;
	m->walk_roots_seen = seen;
	m->walk_roots_valid = true;
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		if (!acct_bpf_collector_serves(m->collector, h))
			continue;
		_cleanup_strv_free_ char **roots = NULL;
		int r = acct_discovery_walk_roots(m->discovery, h, WALK_ROOTS_MAX, &roots);
		if (r == -ENOENT)
			roots = NULL; /* not a hierarchy discovery walks: all of it */
		else if (r < 0) {
			m->walk_roots_valid = false; /* (no memory) the roots as they were, again next pass */
			continue;
		}
		if (acct_bpf_collector_set_roots(m->collector, h, roots) < 0)
			m->walk_roots_valid = false;
	}
}

static int start_pass(struct manager *m, unsigned flags)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	struct acct_discovery_stats ds;

	/* Changes of cgroup.events already queued are announced before the pass
	 * looks at them: an empty cgroup is not read while none is (sampler.h,
	 * acct_sampler_events_watched()); a missing watch or an overflow since
	 * the last pass may have lost some, and wakes them all. */
	int pr = manager_process_changes(m);
	if (pr < 0)
		(void)manager_scan(m);
	bool heard = pr >= 0 && !m->events_gap;
	acct_discovery_stats(m->discovery, &ds);
	heard = heard && ds.unwatched == 0 && ds.overflows == m->events_overflows;
	m->events_overflows = ds.overflows;
	m->events_gap = false;
	acct_sampler_events_watched(m->sampler, heard, m->config->max_depth);
	update_walk_roots(m, &ds);
	uint64_t now = acct_now_us();

	/* Between passes: forget dead records past retention, release the
	 * descriptors of the dead ones. A state file write that holds records
	 * and has not begun goes first (state-writer.h). */
	state_writer_drop_pending(m->state_writer);
	acct_ledger_sweep(m->ledger, now, m->config->tombstone_retention_us, acct_sampler_release, m->sampler);
	manager_fold_tombstones(m);
	/* Dead records (kept for retention) have their sampler states
	 * released here; with none, the usual case, the snapshot of the live
	 * ones is the work as it is, without a look at each record (a cache
	 * miss per cgroup and pass). The ledger changes in this thread only. */
	uint64_t dead = 0;
	acct_ledger_counts(m->ledger, NULL, &dead);
	int n = acct_ledger_snapshot(m->ledger, dead > 0, &cgs);
	if (n < 0)
		return n;
	/* This pass reads every live cgroup, those queued for a read too. */
	m->nr_soon = 0;
	m->soon_all = false;
	size_t live = (size_t)n;
	if (dead > 0) {
		live = 0;
		for (int i = 0; i < n; i++) {
			if (acct_cgroup_is_dead(cgs[i]))
				acct_sampler_release(cgs[i], m->sampler);
			else
				cgs[live++] = cgs[i];
		}
	}
	int r = acct_sampler_start(m->sampler, cgs, live, flags, now);
	if (r == 0)
		m->pass_flags = flags;
	return r;
}

static unsigned due_flags(struct manager *m, uint64_t now);

static int compare_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
	return x < y ? -1 : x > y;
}

/* A pass over the queued cgroups (read_soon()), when the sampler is free; the
 * ticks' full passes go first when both wait (manager_on_sampler_done()). */
static void start_soon_pass(struct manager *m)
{
	if ((m->nr_soon == 0 && !m->soon_all) || !m->ready || acct_sampler_busy(m->sampler))
		return;
	if (m->soon_all) {
		int r = start_pass(m, due_flags(m, acct_now_us()));
		if (r < 0)
			log_warning_errno(r, "Failed to start a sampling pass: %m");
		return;
	}
	/* Sorted, duplicates and records that died meanwhile dropped; nothing is
	 * swept between queueing and here (only start_pass() sweeps, and it
	 * empties the queue first), so every pointer is still a record. */
	qsort(m->soon, m->nr_soon, sizeof(*m->soon), compare_ptr);
	size_t n = 0;
	for (size_t i = 0; i < m->nr_soon; i++)
		if ((n == 0 || m->soon[n - 1] != m->soon[i]) && !acct_cgroup_is_dead(m->soon[i]))
			m->soon[n++] = m->soon[i];
	int r = n ? acct_sampler_start(m->sampler, m->soon, n, ACCT_PASS_FAST | ACCT_PASS_EVENT, acct_now_us()) : 0;
	if (r < 0) {
		log_warning_errno(r, "Failed to start a sampling pass, ignoring: %m");
		return;
	}
	m->nr_soon = 0;
	if (n)
		m->pass_flags = ACCT_PASS_FAST | ACCT_PASS_EVENT;
}

static unsigned due_flags(struct manager *m, uint64_t now)
{
	unsigned flags = ACCT_PASS_FAST;
	if (now >= m->next_slow_us) {
		flags |= ACCT_PASS_SLOW;
		m->next_slow_us = now + m->config->slow_interval_us;
	}
	if (m->config->load_average && now >= m->next_load_us) {
		flags |= ACCT_PASS_LOAD;
		m->next_load_us = now + LOAD_PERIOD_US;
	}
	return flags;
}

/* The share of a core that walks alone may take (see finish_pass()). */
#define KERNEL_CPU_SHARE 0.02

/* Periods of bpf_interval with nothing due, counted while they pass: the
 * tick does not wake for them (arm_kernel_at()). */
static void kernel_quiet(struct manager *m, uint64_t now)
{
	if (!m->kernel_quiet_since_us)
		m->kernel_quiet_since_us = now;
}

static void kernel_loud(struct manager *m, uint64_t now)
{
	m->kernel_idle = manager_kernel_idle(m, now);
	m->kernel_quiet_since_us = 0;
}

uint64_t manager_kernel_idle(const struct manager *m, uint64_t now)
{
	uint64_t period = m->config->bpf_interval_us;
	if (!m->kernel_quiet_since_us || !period || now < m->kernel_quiet_since_us)
		return m->kernel_idle;
	return m->kernel_idle + (now - m->kernel_quiet_since_us) / period;
}

/* Arm the bpf_interval tick (a one-shot) for `at`, when a walk alone can
 * next have something to read (UINT64_MAX: not at all, no cgroup's memory
 * moves), but not before bpf_interval from now nor before the CPU share
 * allows (next_kernel_us). Every pass's end arms it again from what that
 * pass saw, so an idle host wakes for passes only: a 100 ms tick that found
 * nothing due cost about 0.13% of a core here, more than a fast pass over
 * 1,000 idle cgroups. */
static void arm_kernel_at(struct manager *m, uint64_t now, uint64_t at)
{
	uint64_t period = m->config->bpf_interval_us;
	if (!acct_bpf_collector_any(m->collector) || !period) {
		event_del(m->ev_kernel);
		return;
	}
	if (at > now + period)
		kernel_quiet(m, now); /* nothing due before then */
	if (at == UINT64_MAX) {
		event_del(m->ev_kernel);
		return;
	}
	at = MAX(at, MAX(now + period, m->next_kernel_us));
	struct timeval tv = timeval_from_usec(at - now);
	event_add(m->ev_kernel, &tv);
}

/* While a pass runs the sampler's list is in use: the tick is armed at the
 * interval and waits for that pass's end. */
static void manager_arm_kernel(struct manager *m, uint64_t now)
{
	arm_kernel_at(m, now, acct_sampler_busy(m->sampler) ? now : acct_sampler_kernel_next_us(m->sampler, now));
}

/* A pass of the collector's memory values alone ([sampling] bpf_interval):
 * only when the sampler is idle, since any other pass reads them too. It
 * reads the cgroups whose memory is due by the bytes budget
 * (acct_sampler_kernel_due()): none on an idle host, where the tick is not
 * even armed (manager_arm_kernel()); every cgroup where the sampler has no
 * list of moving ones yet. */
void manager_on_kernel_tick(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_free_ struct acct_cgroup **due = NULL;
	uint64_t now = acct_now_us();
	if (!m->ready || acct_sampler_busy(m->sampler))
		return; /* that pass's end arms the tick again */
	if (now < m->next_kernel_us) {
		manager_arm_kernel(m, now);
		return;
	}
	uint64_t next;
	int r = acct_sampler_kernel_due(m->sampler, now, &due, &next);
	if (r == 0) {
		kernel_quiet(m, now);
		arm_kernel_at(m, now, next);
		return;
	}
	kernel_loud(m, now);
	if (r > 0) {
		/* The root follows its top level (refresh_root()): only where
		 * this pass reads some of it. */
		m->kernel_top = false;
		for (int i = 0; i < r && !m->kernel_top; i++)
			m->kernel_top = due[i]->depth == 1;
		m->kernel_due_total += (uint64_t)r;
		r = acct_sampler_start(m->sampler, due, (size_t)r, ACCT_PASS_KERNEL, now);
		if (r == 0)
			m->pass_flags = ACCT_PASS_KERNEL;
	} else {
		m->kernel_top = true;
		r = start_pass(m, ACCT_PASS_KERNEL);
	}
	if (r < 0) {
		log_warning_errno(r, "Failed to start a BPF pass: %m");
		arm_kernel_at(m, now, now);
	}
}

void manager_on_tick(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;

	if (acct_sampler_busy(m->sampler)) {
		/* A pass takes longer than the interval: run the next one as soon
		 * as it completes instead of queueing more. */
		m->pass_pending = true;
		return;
	}
	int r = start_pass(m, due_flags(m, acct_now_us()));
	if (r < 0)
		log_warning_errno(r, "Failed to start a sampling pass: %m");
}

static void log_top(struct manager *m);

/* The front ends after a pass (struct manager_frontend's on_pass). */
static void frontends_pass(struct manager *m, const struct acct_pass_report *rep)
{
	for (size_t i = 0; i < m->nr_frontends; i++)
		if (m->frontends[i].on_pass)
			m->frontends[i].on_pass(m, rep, m->frontends[i].userdata);
}

/* A pass over queued cgroups only: its errors count, the values it read are
 * in the ledger (and go to the front ends: the state file), but the figures of the last full pass,
 * its histograms and reconciliation stay those of full passes. */
static void finish_event_pass(struct manager *m, const struct acct_pass_report *rep)
{
	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		m->sample_errors_total[i] += rep->errors[i];
	m->cgroups_failed_total += rep->cgroups_failed;
	frontends_pass(m, rep);
}

/* The collector's figures of any pass; a part moved back to files is said
 * once, with the disagreement that decided it. */
static void note_bpf(struct manager *m, const struct acct_pass_report *rep)
{
	_cleanup_free_ char *text = NULL; /* the mismatch names a cgroup: as the log shows names */

	m->bpf_checks_total += rep->bpf_checks + rep->task_checks;
	m->bpf_mismatches_total += rep->bpf_mismatches + rep->task_mismatches;
	if (rep->last_mismatch[0]) {
		memcpy(m->bpf_last_mismatch, rep->last_mismatch, sizeof(m->bpf_last_mismatch));
		log_debug("BPF value outside the files' readings around the walk: %s",
			  name_text(rep->last_mismatch, &text));
	}
	if (rep->task_fallback) {
		log_warning("The BPF task walk's thread counts disagreed with the threads files %d load passes in a row "
			    "(last: %s): threads and load are read from files from now on",
			    ACCT_BPF_MISMATCH_PASSES, text ?: name_text(m->bpf_last_mismatch, &text));
		snprintf(m->task_walk_reason, sizeof(m->task_walk_reason),
			 "its thread counts disagreed with the threads files %d load passes in a row",
			 ACCT_BPF_MISMATCH_PASSES);
		m->task_walk_fell_back = true;
	}
	if (rep->bpf_fallbacks)
		log_warning("BPF values disagreed with the files %d passes in a row (last: %s): that part is read "
			    "from files from now on",
			    ACCT_BPF_MISMATCH_PASSES, text ?: name_text(m->bpf_last_mismatch, &text));
}

/* After a pass that set memory without a whole reconciliation (a walk alone,
 * an event pass): the root's memory follows its children, and Status's root
 * figure follows the root (acct_reconcile_root()). Without it, a root defined
 * at the last full pass served less than its top level as a walk had moved it. */
static void refresh_root(struct manager *m)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(m->ledger, false, &cgs);
	if (n < 0)
		return; /* out of memory: the next full pass defines it */
	acct_sampler_root_memory(m->sampler, cgs, (size_t)n);
	acct_reconcile_root(cgs, (size_t)n, m->meminfo_path, &m->reconcile);
}

static void finish_pass(struct manager *m, const struct acct_pass_report *rep)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	uint64_t now = acct_now_us();
	m->pass_cpu_seconds[acct_pass_kind_of(rep->flags)] += rep->cpu_seconds;
	note_bpf(m, rep);
	if ((rep->flags & ACCT_PASS_EVENT) || ((rep->flags & ACCT_PASS_KERNEL) && m->kernel_top))
		refresh_root(m);
	if (rep->flags & ACCT_PASS_KERNEL) {
		/* Walks alone take at most KERNEL_CPU_SHARE of a core: where one
		 * costs more than that share of bpf_interval (many cgroups), they
		 * run less often. */
		m->kernel_passes++;
		m->next_kernel_us = now + (uint64_t)(rep->cpu_seconds * 1e6 / KERNEL_CPU_SHARE);
		for (int i = 0; i < _ACCT_ERR_MAX; i++)
			m->sample_errors_total[i] += rep->errors[i];
		return;
	}
	if (rep->flags & ACCT_PASS_EVENT) {
		finish_event_pass(m, rep);
		return;
	}
	census_check(m, rep);
	int n = acct_ledger_snapshot(m->ledger, false, &cgs);

	if (n >= 0) {
		/* Stamped with the pass's start, not now: the walk or the threads
		 * files were read after the start and before now, and a value
		 * served as younger than its read would claim a freshness it has
		 * not (kernel-truth saw the root's tasks outside the kernel's
		 * counts around the stamp on a loaded machine, where passes take
		 * long and their completion waits for the event loop). */
		if (rep->flags & ACCT_PASS_LOAD)
			acct_sampler_aggregate_load(m->sampler, cgs, (size_t)n, rep->started_us);
		if (rep->flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW))
			acct_sampler_root_memory(m->sampler, cgs, (size_t)n);
		bool hierarchical = true; /* v2 always; v1 since 5.11 (use_hierarchy is always 1) */
		acct_reconcile_pass(m->ledger, cgs, (size_t)n, rep, m->meminfo_path, hierarchical, m->sampler,
				    &m->reconcile);
		if (rep->flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW))
			manager_charges_reconcile(m);
		manager_history_record_pass(m, cgs, (size_t)n, rep->started_us, now);
	}
	m->passes++;
	m->last_fast = *rep;
	if (rep->flags & ACCT_PASS_SLOW)
		m->last_slow = *rep;
	pass_histogram_add(&m->pass_hist[(rep->flags & ACCT_PASS_SLOW) ? 1 : 0], (double)rep->wall_us / 1e6);
	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		m->sample_errors_total[i] += rep->errors[i];
	m->cgroups_failed_total += rep->cgroups_failed;
	uint64_t errors = 0;
	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		errors += rep->errors[i];
	if (errors)
		log_debug("Pass over %" PRIu64 " cgroups: %" PRIu64 " failed reads (%" PRIu64 " vanished, %" PRIu64
			  " garbage, %" PRIu64 " unreadable)",
			  rep->cgroups, errors, rep->errors[ACCT_ERR_VANISHED], rep->errors[ACCT_ERR_GARBAGE],
			  rep->errors[ACCT_ERR_UNREADABLE]);
	frontends_pass(m, rep);
	if (!m->ready) {
		m->ready = true;
		manager_update_status(m, true);
		manager_notify("READY=1");
		log_info("Ready: %" PRIu64 " cgroups sampled in %" PRIu64 " ms", rep->cgroups, rep->wall_us / 1000);
		log_top(m);
	} else
		manager_update_status(m, false);
}

void manager_on_sampler_done(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	struct acct_pass_report rep;

	if (acct_sampler_collect(m->sampler, &rep) < 0)
		return;
	finish_pass(m, &rep);
	manager_arm_kernel(m, acct_now_us());
	/* Waiters are served by a pass that read every file and started after
	 * they asked. */
	if (m->waiters_in_pass > 0 && (rep.flags & ACCT_PASS_SLOW)) {
		size_t n = m->waiters_in_pass;
		_cleanup_free_ struct manager_waiter *w = malloc(n * sizeof(*w));
		if (w) {
			memcpy(w, m->waiters, n * sizeof(*w));
			memmove(m->waiters, m->waiters + n, (m->nr_waiters - n) * sizeof(*w));
			m->nr_waiters -= n;
			m->waiters_in_pass = 0;
			for (size_t i = 0; i < n; i++)
				w[i].fn(m, &rep, w[i].userdata);
		}
	}
	if (m->pass_requested || m->pass_pending) {
		unsigned flags = due_flags(m, acct_now_us());
		if (m->pass_requested) {
			flags |= ACCT_PASS_SLOW;
			m->pass_requested = false;
			m->waiters_in_pass = m->nr_waiters;
		}
		m->pass_pending = false;
		int r = start_pass(m, flags);
		if (r < 0)
			log_warning_errno(r, "Failed to start a sampling pass: %m");
	} else
		start_soon_pass(m);
}

int manager_request_pass(struct manager *m, manager_pass_fn fn, void *userdata)
{
	struct manager_waiter *w = reallocarray(m->waiters, m->nr_waiters + 1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	m->waiters = w;
	m->waiters[m->nr_waiters++] = (struct manager_waiter){ fn, userdata };
	if (acct_sampler_busy(m->sampler)) {
		m->pass_requested = true; /* the pass after the running one */
		return 0;
	}
	int r = start_pass(m, due_flags(m, acct_now_us()) | ACCT_PASS_SLOW);
	if (r < 0) {
		m->nr_waiters--;
		return r;
	}
	m->waiters_in_pass = m->nr_waiters;
	return 0;
}

static int compare_memory_desc(const void *a, const void *b)
{
	const struct acct_cgroup *x = *(struct acct_cgroup *const *)a, *y = *(struct acct_cgroup *const *)b;
	struct acct_reading rx = { 0 }, ry = { 0 };
	(void)acct_cgroup_get(x, ACCT_Q_MEMORY, false, &rx);
	(void)acct_cgroup_get(y, ACCT_Q_MEMORY, false, &ry);
	return rx.value < ry.value ? 1 : rx.value > ry.value ? -1 : strcmp(x->path, y->path);
}

/* At start: what acctd tracks, the largest first, for whoever watches it start. */
static void log_top(struct manager *m)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(m->ledger, false, &cgs);
	if (n <= 0)
		return;
	qsort(cgs, (size_t)n, sizeof(*cgs), compare_memory_desc);
	log_info("%-48s %12s %14s", "CGROUP", "MEMORY", "CPU TIME");
	for (int i = 0; i < n && i < 15; i++) {
		struct acct_reading mem = { 0 }, cpu = { 0 };
		bool hm = acct_cgroup_get(cgs[i], ACCT_Q_MEMORY, false, &mem);
		bool hc = acct_cgroup_get(cgs[i], ACCT_Q_CPU_USAGE, false, &cpu);
		char ms[FORMAT_HUMAN_MAX] = "-", cs[FORMAT_HUMAN_MAX] = "-";
		/* acctctl's units (lib/basic/format-human.h): 36.0K, 3.0G, 1min 2.5s */
		if (hm)
			format_bytes(ms, mem.value);
		if (hc)
			format_duration(cs, cpu.value);
		_cleanup_free_ char *text = NULL;
		log_info("%-48s %12s %14s", name_text(cgs[i]->path, &text), ms, cs);
	}
	if (n > 15)
		log_info("... and %d more", n - 15);
}

void manager_arm_timers(struct manager *m)
{
	struct timeval tv = timeval_from_usec(m->config->fast_interval_us);
	event_add(m->ev_tick, &tv);
	tv = timeval_from_usec(m->config->rescan_interval_us);
	event_add(m->ev_rescan, &tv);
	manager_arm_kernel(m, acct_now_us());
}

int manager_first_pass(struct manager *m)
{
	uint64_t now = acct_now_us();
	m->next_slow_us = now + m->config->slow_interval_us;
	m->next_load_us = now + LOAD_PERIOD_US;
	return start_pass(m, ACCT_PASS_FAST | ACCT_PASS_SLOW | (m->config->load_average ? ACCT_PASS_LOAD : 0));
}

/* The document of --dump (the state file's has the same members, and "daemon"). */
static struct json_object *ledger_json(struct manager *m, struct acct_cgroup *const *cgs, size_t n,
				       const struct acct_pass_report *rep, uint64_t now)
{
	struct json_object *top = json_object_new_object(), *arr = json_object_new_array();
	json_object_object_add(top, "version", json_object_new_string(ACCTD_VERSION));
	json_object_object_add(top, "cgroup_mode", json_object_new_string(acct_cgroup_mode_to_string(m->layout->mode)));
	json_object_object_add(top, "cgroup_root", acct_json_text(m->layout->root));
	unsigned nodes = acct_domain_topology(m->domain)->nr_nodes;
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, acct_cgroup_to_json(m->ledger, cgs[i], now, false, nodes));
	json_object_object_add(top, "cgroups", arr);
	json_object_object_add(top, "pass", acct_pass_to_json(rep));
	json_object_object_add(top, "reconciliation", acct_reconcile_to_json(&m->reconcile));
	return top;
}

int manager_dump(struct manager *m, FILE *out)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	struct acct_pass_report rep;
	int r, n;

	r = manager_scan(m);
	if (r < 0)
		return log_error_errno(r, "Failed to walk the cgroup hierarchies: %m");
	n = acct_ledger_snapshot(m->ledger, false, &cgs);
	if (n < 0)
		return log_oom();
	unsigned flags = ACCT_PASS_FAST | ACCT_PASS_SLOW | (m->config->load_average ? ACCT_PASS_LOAD : 0);
	r = acct_sampler_run(m->sampler, cgs, (size_t)n, flags, acct_now_us(), &rep);
	if (r < 0)
		return log_error_errno(r, "Sampling failed: %m");
	uint64_t now = acct_now_us();
	if (flags & ACCT_PASS_LOAD)
		acct_sampler_aggregate_load(m->sampler, cgs, (size_t)n, rep.started_us); /* as finish_pass() */
	acct_sampler_root_memory(m->sampler, cgs, (size_t)n);
	acct_reconcile_pass(m->ledger, cgs, (size_t)n, &rep, m->meminfo_path, true, m->sampler, &m->reconcile);

	struct json_object *top = ledger_json(m, cgs, (size_t)n, &rep, now);
	fputs(json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE), out);
	fputc('\n', out);
	json_object_put(top);
	return fflush(out) == 0 ? 0 : -errno;
}
