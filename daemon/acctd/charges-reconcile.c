/* charges-reconcile.c - after each full pass, what programs charged of the
 * resources declared `ram` against the cgroups' memory as the pass read it
 * (core/charges-ram.h, docs/charges.md "Reconciliation of RAM resources"): a
 * cgroup whose charged RAM exceeds its memory beyond both bounds is flagged,
 * and so is one whose charged RAM is below zero beyond its bound
 * (over-released), each in the log once when it becomes so, in Status and in
 * /metrics. The check
 * walks the charge engine's entries, so it costs O(charged cgroups), not
 * O(tracked cgroups). Its values are those Get serves: the charge slots
 * are folded first and their bounds added to the engine's, so that a cgroup
 * is flagged only when its charges certainly exceed its memory, whatever its
 * slots hold (docs/charges.md, "Charge slots"). It also steps the averages of the resources declared
 * `averages` (core/charges-avg.h) after the passes. */
#include "manager-internal.h"

#include <inttypes.h>

#include "basic/format-human.h"
#include "basic/log.h"
#include "basic/name-escape.h"
#include "basic/time-util.h"
#include "core/charges-ram.h"

/* The ledger's memory of a live cgroup that a pass has read. */
static bool memory_of(const char *path, struct acct_reading *ret, void *userdata)
{
	struct manager *m = userdata;
	bool ok = false;

	rcu_read_lock();
	struct acct_cgroup *cg = acct_ledger_find(m->ledger, path);
	if (cg && !acct_cgroup_is_dead(cg) && acct_cgroup_quantity_known(cg, ACCT_Q_MEMORY))
		ok = acct_cgroup_get(cg, ACCT_Q_MEMORY, false, ret);
	rcu_read_unlock();
	return ok;
}

static void log_flagged(const struct acct_charges_ram_entry *e, void *userdata)
{
	_cleanup_free_ char *text = NULL;
	char c[FORMAT_HUMAN_MAX], k[FORMAT_HUMAN_MAX];

	/* Exclusive: charged below 0 cannot exceed a memory, which is >= 0. */
	if (e->below_zero) {
		log_warning("Charged RAM of %s (%" PRId64 " bytes, +/- %" PRIu64 " bytes) is below zero beyond its "
			    "bound: charges over-released (a client gave back more than it charged)",
			    name_text(e->path, &text), e->charged.value, e->charged.bound);
		return;
	}
	log_warning("Charged RAM of %s (%s, +/- %" PRIu64 " bytes) exceeds its memory (%s, +/- %" PRIu64
		    " bytes) beyond both bounds: charges leaked or over-reported",
		    name_text(e->path, &text), format_bytes(c, e->charged.value), e->charged.bound,
		    format_bytes(k, e->memory.value), e->memory.bound);
}

void manager_charges_fold(struct manager *m)
{
	for (size_t f = 0; f < m->nr_frontends; f++)
		if (m->frontends[f].charges_fold)
			m->frontends[f].charges_fold(m, m->frontends[f].userdata);
}

void manager_charges_add_bounds(struct manager *m, size_t res, const char *path, struct acct_charge_reading *r)
{
	for (size_t f = 0; f < m->nr_frontends; f++)
		if (m->frontends[f].charges_bounds)
			m->frontends[f].charges_bounds(m, res, path, r, m->frontends[f].userdata);
}

void manager_charges_bounds_hook(size_t res, const char *path, struct acct_charge_reading *r, void *userdata)
{
	manager_charges_add_bounds(userdata, res, path, r);
}

void manager_charges_reconcile(struct manager *m)
{
	/* The averages' periods are 5 s, passes more frequent: a step when one
	 * is due (a late pass catches up). */
	int r = acct_charges_avg_step(m->charges_avg, acct_now_us());
	if (r < 0)
		log_warning_errno(r, "Failed to update the charges' averages, ignoring: %m");
	if (!acct_charges_ram_any(m->charges_ram))
		return;
	/* What the slots hold up to now, as Get reads it: without it a slot's
	 * charges since the last pass's fold would be missing from the check
	 * (its bound covers its read's error, not an unfolded delta). The
	 * bounds hook adds the slots' bounds (manager_charges_bounds_hook()). */
	manager_charges_fold(m);
	r = acct_charges_ram_check(m->charges_ram, memory_of, m, log_flagged, m);
	if (r < 0)
		log_warning_errno(r, "Failed to reconcile charged RAM against memory, ignoring: %m");
}
