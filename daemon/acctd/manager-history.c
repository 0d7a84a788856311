/* manager-history.c - what the manager feeds the history's recorder
 * (history-recorder.h): the live records' values after a pass when a
 * recording is due, a removed cgroup's last values, and the last pass's at a
 * clean stop. On the event loop, which owns the records. */
#include "manager-internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/format-human.h"
#include "basic/log.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "history-charges-walk.h"
#include "history-recorder.h"

/* A record's values as the store keeps them. On the event loop, which owns
 * the records: no read-side section needed. */
static void history_values_of(const struct acct_cgroup *cg, struct history_values *v)
{
	static const struct {
		enum acct_quantity q;
		size_t offset;
	} map[] = {
		{ ACCT_Q_CPU_USAGE, offsetof(struct history_values, cpu_usec) },
		{ ACCT_Q_MEMORY, offsetof(struct history_values, memory_bytes) },
		{ ACCT_Q_MEMORY_PEAK, offsetof(struct history_values, memory_peak_bytes) },
		{ ACCT_Q_IO_READ_BYTES, offsetof(struct history_values, io_read_bytes) },
		{ ACCT_Q_IO_WRITE_BYTES, offsetof(struct history_values, io_write_bytes) },
		{ ACCT_Q_TASKS, offsetof(struct history_values, tasks) },
	};
	for (size_t i = 0; i < ELEMENTSOF(map); i++) {
		struct acct_reading rd;
		/* Precise: the store's totals are differences of these, and a
		 * shard's residue would be an error no bound accounts for. */
		int64_t *out = (int64_t *)((char *)v + map[i].offset);
		*out = acct_cgroup_get(cg, map[i].q, true, &rd) ? rd.value : HISTORY_UNKNOWN;
	}
}

/* The identity of a record's life: its path and the inode of its v2
 * directory, else of the first v1 hierarchy that has it, as when it was first
 * recorded, or when acctd's start found it. Fixed then: on a hybrid host a
 * cgroup's directories are created and removed one hierarchy at a time, in
 * an order of systemd's, and the store must find the same life at its
 * removal, when only the last directory is left, and after a restart, whose
 * scan sees them all (as a recording does, a pass after the creation). */
uint64_t manager_history_inode_of(struct acct_cgroup *cg)
{
	if (cg->history_inode)
		return cg->history_inode;
	uint32_t hier = acct_cgroup_get_hierarchies(cg);
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		if (hier & (1u << h)) {
			cg->history_inode = acct_cgroup_get_inode(cg, (enum acct_hierarchy)h);
			break;
		}
	return cg->history_inode;
}

/* Monotonic time `mono_us` as CLOCK_REALTIME. */
static uint64_t history_realtime_of(uint64_t mono_us)
{
	uint64_t now_mono = acct_now_us(), now_real = history_now_us();
	return mono_us <= now_mono ? now_real - MIN(now_real, now_mono - mono_us) : now_real;
}

/* A removed cgroup: its tombstone's values end its life in the store and go
 * to the journal as the accounting record. */
void manager_history_removed(struct manager *m, struct acct_cgroup *cg, uint64_t now_mono)
{
	if (m->removals_unlogged++ == 0)
		m->removals_since_us = now_mono;
	if (!m->history)
		return;
	struct history_sample s = { .key = { .path = cg->path, .inode = manager_history_inode_of(cg) },
				    .created_seen = cg->created_seen };
	history_values_of(cg, &s.v);
	enum acct_final f = acct_cgroup_final(cg);
	uint64_t read_mono = acct_cgroup_get_group_sampled(cg, ACCT_GROUP_FAST);
	/* Not read after its last task left: between that read and now it
	 * could have run on every CPU the host has. */
	int64_t cpu_bound = f == ACCT_FINAL_READ || !read_mono || now_mono <= read_mono
				    ? 0
				    : (int64_t)(now_mono - read_mono) * m->host_cpus;
	history_recorder_removed(m->history, &s, history_realtime_of(cg->created_us), history_realtime_of(now_mono),
				 history_realtime_of(read_mono ? read_mono : now_mono),
				 f == ACCT_FINAL_READ ? NULL : acct_final_to_string(f), cpu_bound);
}

/* history_charges_walk()'s `life`: a live record of the ledger, as the
 * snapshot of the recording holds them (the ledger changes on the event loop
 * only, so a lookup now finds the snapshot's records), and its life's inode. */
static bool charged_life(const char *path, uint64_t *ret_inode, void *userdata)
{
	struct manager *m = userdata;
	struct acct_cgroup *cg = acct_ledger_find(m->ledger, path);

	if (!cg || acct_cgroup_is_dead(cg))
		return false; /* not tracked (a gone ancestor kept for its charged children), or removed */
	*ret_inode = manager_history_inode_of(cg);
	return true;
}

/* The charged values of the live records, each declared resource's subtree
 * value and its bound where something was charged at or below the cgroup,
 * into a new array (history_charge_samples_free()); *ret NULL when none. The
 * front ends' charge slots are folded first and their bounds added (struct
 * manager_frontend's charges_fold and charges_bounds), as Get serves them.
 * Cost: a fold of every slot, then O(charged entries) ledger lookups plus
 * O(slots) per charged one (history-charges-walk.h), not O(tracked cgroups x
 * resources). Returns the count or -ENOMEM. */
static int history_charges_of(struct manager *m, struct history_charge_sample **ret)
{
	struct acct_charges *ch = m->charges;

	*ret = NULL;
	if (!ch || acct_charges_nr_resources(ch) == 0)
		return 0;
	manager_charges_fold(m);
	return history_charges_walk(ch, charged_life, manager_charges_bounds_hook, m, ret);
}

/* The live records' values, copied, go to the recorder as at the pass of
 * now_mono, whose values they are. */
static void history_record(struct manager *m, struct acct_cgroup **cgs, size_t n, uint64_t now_mono)
{
	m->last_recorded_pass_us = now_mono;
	struct history_sample *s = calloc(MAX(n, (size_t)1), sizeof(*s));
	size_t k = 0;
	if (!s)
		return (void)log_oom();
	for (size_t i = 0; i < n; i++) {
		if (acct_cgroup_is_dead(cgs[i]))
			continue;
		s[k].key.path = strdup(cgs[i]->path);
		if (!s[k].key.path) {
			history_samples_free(s, k);
			return (void)log_oom();
		}
		s[k].key.inode = manager_history_inode_of(cgs[i]);
		s[k].created_seen = cgs[i]->created_seen;
		history_values_of(cgs[i], &s[k].v);
		k++;
	}
	struct history_charge_sample *c = NULL;
	int nc = history_charges_of(m, &c);
	if (nc < 0) {
		/* the kernel's quantities still go: a recording without charges
		 * holds their last values, as the store says */
		(void)log_oom();
		nc = 0;
	}
	history_recorder_submit(m->history, history_realtime_of(now_mono), s, k, c, (size_t)nc);
}

/* [log] removals = summary: one line per rate-limit window for the cgroups
 * removed in it, saying where their records are, where `each` logs a line
 * per cgroup (the recorder's structured record): a host that churns
 * containers would fill its journal with those. `now`: at the stop, the
 * window not over yet. */
static void log_removal_summary(struct manager *m, uint64_t now_mono, bool now)
{
	bool journal = log_get_target() == LOG_TARGET_JOURNAL;
	if (acct_removal_log_effective(m->config->log_removals, journal) != ACCT_REMOVALS_SUMMARY ||
	    m->removals_unlogged == 0 ||
	    (!now && now_mono < m->removals_since_us + m->config->log_rate_limit_interval_us))
		return;
	char span[FORMAT_HUMAN_MAX], keep[FORMAT_HUMAN_MAX];
	/* the window rounded up to whole seconds: what --since takes back */
	uint64_t secs = (now_mono - m->removals_since_us + USEC_PER_SEC - 1) / USEC_PER_SEC;
	format_duration(span, (int64_t)(secs * USEC_PER_SEC));
	bool one = m->removals_unlogged == 1;
	/* an absolute --since: the line is read later than it is written */
	uint64_t since_s = history_realtime_of(now_mono - secs * USEC_PER_SEC) / USEC_PER_SEC;
	if (m->config->history_enabled)
		log_info("%" PRIu64 " cgroup%s removed in the last %s; %s: acctctl usage --since=@%" PRIu64
			 " ([log] removals = each logs one line per cgroup)",
			 m->removals_unlogged, one ? "" : "s", span, one ? "its accounting record" : "their accounting records",
			 since_s);
	else
		log_info("%" PRIu64 " cgroup%s removed in the last %s; their final values: acctctl list --all, for %s "
			 "([cgroups] tombstone_retention; [log] removals = each logs one line per cgroup)",
			 m->removals_unlogged, m->removals_unlogged == 1 ? "" : "s", span,
			 format_duration(keep, (int64_t)m->config->tombstone_retention_us));
	m->removals_unlogged = 0;
}

/* After a pass, when a recording is due. Its points are stamped with the
 * pass's start, not its end: the pass read every value after its start, one
 * cgroup after the other, and a point stamped later than its read claims
 * that value at a time when the kernel's was already further. Stamped at
 * the end, a long pass (the first one, reading every file for the first
 * time, took 2-7 s on a loaded host) made the interval to the next point
 * look that much shorter than the CPU time it held: 2.76 cores on a 2-CPU
 * host (the new-user trial of session 31). From the start, each value is
 * read at most a pass's duration after its point, at about the same offset
 * in every pass (the path order), so the offsets cancel out of the
 * intervals between points; the ages served have the same origin. */
void manager_history_record_pass(struct manager *m, struct acct_cgroup **cgs, size_t n, uint64_t started_mono,
				 uint64_t now_mono)
{
	m->last_pass_us = started_mono;
	log_removal_summary(m, now_mono, false);
	if (!m->history || !m->config->history_enabled || now_mono < m->next_history_us)
		return;
	/* On the interval's grid, without catching up after a long pass. */
	uint64_t interval = m->config->history_interval_us;
	m->next_history_us = MAX(m->next_history_us + interval, now_mono + interval / 2);
	history_record(m, cgs, n, started_mono);
}

/* At a clean stop: the removals not summed up yet, and the last pass's values, when no recording took them yet,
 * so that the run's recorded time reaches its last pass instead of ending up
 * to an interval before the stop. */
void manager_history_record_last_pass(struct manager *m)
{
	log_removal_summary(m, acct_now_us(), true);
	if (!m->history || !m->config->history_enabled || !m->last_pass_us ||
	    m->last_pass_us <= m->last_recorded_pass_us)
		return;
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(m->ledger, false, &cgs);
	if (n >= 0)
		history_record(m, cgs, (size_t)n, m->last_pass_us);
}
