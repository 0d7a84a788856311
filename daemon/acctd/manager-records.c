/* manager-records.c - discovery into the ledger's records: a cgroup found
 * becomes a record, queued to be read at once (read_soon()); a removed one
 * becomes a tombstone, its values sent to the history; tombstones beyond
 * [cgroups] max_tombstones are folded into their parents. */
#include "manager-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/name-escape.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "core/charges.h"

/* Queue a live record for a read as soon as the sampler is free. More queued
 * entries than live cgroups (a storm of changes) fall back to a full pass. */
static void read_soon(struct manager *m, struct acct_cgroup *cg)
{
	if (!cg || acct_cgroup_is_dead(cg) || m->soon_all)
		return;
	uint64_t live = 0;
	acct_ledger_counts(m->ledger, &live, NULL);
	if (m->nr_soon >= MAX(live, (uint64_t)64)) {
		m->soon_all = true;
		m->nr_soon = 0;
		return;
	}
	if (m->nr_soon == m->soon_cap) {
		size_t cap = MAX(m->soon_cap * 2, (size_t)64);
		struct acct_cgroup **v = reallocarray(m->soon, cap, sizeof(*v));
		if (!v) {
			m->soon_all = true; /* the next full pass reads it */
			return;
		}
		m->soon = v;
		m->soon_cap = cap;
	}
	m->soon[m->nr_soon++] = cg;
}

/* A cgroup's populated changed: its values, and its ancestors' (which count
 * its usage), are read now, not at the next tick, and before the cgroup can
 * be removed so that its tombstone holds what it finally used. */
static void read_soon_with_ancestors(struct manager *m, struct acct_cgroup *cg)
{
	char buf[4096];

	if (!cg || acct_cgroup_is_dead(cg))
		return;
	read_soon(m, cg);
	snprintf(buf, sizeof(buf), "%s", cg->path);
	while (strcmp(buf, "/") != 0) {
		char *slash = strrchr(buf, '/');
		if (!slash)
			break;
		if (slash == buf)
			slash[1] = 0;
		else
			*slash = 0;
		read_soon(m, acct_ledger_find(m->ledger, buf));
	}
}

static void on_discovery(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata)
{
	struct manager *m = userdata;
	uint64_t now = acct_now_us();
	struct acct_cgroup *cg;
	_cleanup_free_ char *text = NULL; /* a name as the log shows it (name_text()) */
	int r;

	m->discovery_events++;
	switch (ev) {
	case ACCT_CGROUP_ADDED:
		r = acct_ledger_add(m->ledger, id, now, &cg);
		if (r == -EEXIST)
			acct_ledger_update_id(m->ledger, cg, id);
		else if (r < 0) {
			/* rate limited: a churning subtree would flood the log */
			static struct log_ratelimit track_failures = LOG_RATELIMIT_INIT("failures to track a cgroup");
			if (log_ratelimit_below(&track_failures))
				log_warning_errno(r, "Failed to track cgroup %s, ignoring: %m", name_text(id->path, &text));
		}
		else {
			log_debug("Tracking %s", name_text(id->path, &text));
			if (!m->ready) /* the start's scan: every directory is there */
				(void)manager_history_inode_of(cg);
			else /* created while acctd ran (a rescan's find too: since the last scan) */
				cg->created_seen = true;
			read_soon(m, cg); /* its first values now: it may be short-lived */
		}
		break;
	case ACCT_CGROUP_REMOVED:
		cg = acct_ledger_find(m->ledger, id->path);
		if (cg && !acct_cgroup_is_dead(cg)) {
			acct_ledger_kill(m->ledger, cg, now);
			/* Its charges (and those of any subtree under it) are
			 * released or go to the parent: docs/charges.md. */
			(void)acct_charges_remove(m->charges, id->path);
			log_debug("%s removed, kept as a tombstone", name_text(id->path, &text));
			manager_history_removed(m, cg, now);
		}
		break;
	case ACCT_CGROUP_CHANGED:
		cg = acct_ledger_find(m->ledger, id->path);
		if (cg && !acct_cgroup_is_dead(cg))
			acct_ledger_update_id(m->ledger, cg, id);
		break;
	case ACCT_CGROUP_EVENTS:
		cg = acct_ledger_find(m->ledger, id->path);
		if (cg && !acct_cgroup_is_dead(cg)) {
			/* Before the read: a read that started earlier is not final. */
			acct_cgroup_announce_populated_change(cg);
			log_debug("%s: cgroup.events changed, reading it and its ancestors", name_text(id->path, &text));
			read_soon_with_ancestors(m, cg);
		}
		break;
	}
}

/* Tombstones beyond the budget ([cgroups] max_tombstones): a user
 * who owns a delegated subtree can remove cgroups faster than the retention
 * forgets them (125 a second, 6 KiB each, 240 MB over 5 minutes). The oldest
 * go first; the totals acctd serves stay right because a parent's cumulative
 * values are the kernel's hierarchical readings, which already count its
 * removed children (acct_ledger_fold_oldest()). The history store and the
 * journal got the removal's record when it happened. */
void manager_fold_tombstones(struct manager *m)
{
	if (m->config->max_tombstones == 0)
		return;
	int r = acct_ledger_fold_oldest(m->ledger, m->config->max_tombstones, acct_sampler_release, m->sampler);
	if (r < 0)
		log_debug_errno(r, "Failed to fold tombstones beyond max_tombstones, at the next pass: %m");
	else if (r > 0) {
		m->tombstones_folded += (uint64_t)r;
		log_debug("Folded the %d oldest tombstones into their parents (max_tombstones = %u)", r,
			  m->config->max_tombstones);
	}
}

int manager_scan(struct manager *m)
{
	return acct_discovery_scan(m->discovery, on_discovery, m);
}

int manager_process_changes(struct manager *m)
{
	return acct_discovery_process(m->discovery, on_discovery, m);
}
