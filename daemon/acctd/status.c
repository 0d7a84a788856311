/* status.c - the daemon's status document (status.h): one builder for the
 * Status() reply and the state file's "daemon" object. Its figures come from
 * daemon_stats_gather(), as /metrics' do. */
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/format-human.h"
#include "basic/log.h"
#include "basic/util.h"
#include "build-config.h"
#include "charges-store.h"
#include "daemon-stats.h"
#include "format/ledger-json.h"
#include "history-recorder.h"

struct json_object *daemon_budgets_json(const struct acct_ledger_budgets *b)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "bytes", json_object_new_int64(b->bytes));
	json_object_object_add(o, "cpu_us", json_object_new_int64(b->cpu_us));
	json_object_object_add(o, "tasks", json_object_new_int64(b->tasks));
	return o;
}

/* Per mounted hierarchy: which collector reads it and why. */
static struct json_object *collectors_json(const struct daemon_stats *ds)
{
	struct json_object *a = json_object_new_array();
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		const char *reason = ds->collectors[h].reason, *collector = ds->collectors[h].collector;
		if (!collector)
			continue;
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "hierarchy", json_object_new_string(acct_hierarchy_to_string(h)));
		json_object_object_add(o, "collector", json_object_new_string(collector));
		json_object_object_add(o, "reason", json_object_new_string(reason));
		/* the subtrees its BPF walks cover where the include globs prune;
		 * absent: the whole hierarchy (or files) */
		if (strcmp(collector, "bpf") == 0 && ds->collectors[h].walk_roots >= 0)
			json_object_object_add(o, "walk_roots", json_object_new_int(ds->collectors[h].walk_roots));
		json_object_array_add(a, o);
	}
	return a;
}

/* Recording health: the interval, the last recording's age,
 * and while the recorder is stalled a warning a person can act on. */
static void history_health_json(struct json_object *o, const struct history_recorder_status *hs)
{
	char a[FORMAT_HUMAN_MAX], b[FORMAT_HUMAN_MAX];
	_cleanup_free_ char *warning = NULL;

	json_object_object_add(o, "interval_us", json_object_new_int64((int64_t)hs->interval_us));
	json_object_object_add(o, "last_recording_age_us",
			       hs->last_recording_age_us != UINT64_MAX
				       ? json_object_new_int64((int64_t)hs->last_recording_age_us)
				       : NULL);
	if (hs->state == HISTORY_STATE_STALLED &&
	    asprintf(&warning, "no recording for %s (every %s): the recorder is stalled; that time is a gap in the history",
		     format_duration(a, (int64_t)hs->stalled_us), format_duration(b, (int64_t)hs->interval_us)) < 0)
		warning = NULL;
	json_object_object_add(o, "warning", warning ? json_object_new_string(warning) : NULL);
}

/* The history's condition (history-recorder.h); null before the recorder
 * starts (--dump). */
static struct json_object *history_json(const struct daemon_stats *ds)
{
	const struct history_recorder_status *hs = &ds->history;
	if (!ds->have_history)
		return NULL;
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "enabled", json_object_new_boolean(hs->enabled));
	json_object_object_add(o, "path", acct_json_text(hs->path));
	json_object_object_add(o, "state", json_object_new_string(history_state_to_string(hs->state)));
	json_object_object_add(o, "last_error", hs->last_error[0] ? acct_json_text(hs->last_error) : NULL);
	json_object_object_add(o, "last_recording_us",
			       hs->last_recording_us ? json_object_new_int64((int64_t)hs->last_recording_us) : NULL);
	json_object_object_add(o, "file_bytes", json_object_new_int64((int64_t)hs->file_bytes));
	json_object_object_add(o, "set_aside", hs->set_aside[0] ? acct_json_text(hs->set_aside) : NULL);
	json_object_object_add(o, "heap_bytes", json_object_new_int64((int64_t)ds->history_heap_bytes));
	history_health_json(o, hs);
	return o;
}

/* The ram resources' charges against memory (core/charges-ram.h); NULL when
 * no resource is declared ram. */
#define CHARGES_RAM_FIRST 8
static struct json_object *charges_ram_json(const struct acct_charges_ram *cr)
{
	size_t n, compared = 0;
	const struct acct_charges_ram_entry *e = acct_charges_ram_entries(cr, &n);

	if (!acct_charges_ram_any(cr))
		return NULL;
	struct json_object *o = json_object_new_object(), *first = json_object_new_array(),
			   *first_below = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		compared += e[i].has_memory;
		if (e[i].over && json_object_array_length(first) < CHARGES_RAM_FIRST)
			json_object_array_add(first, acct_json_text(e[i].path));
		if (e[i].below_zero && json_object_array_length(first_below) < CHARGES_RAM_FIRST)
			json_object_array_add(first_below, acct_json_text(e[i].path));
	}
	json_object_object_add(o, "checks", json_object_new_int64((int64_t)acct_charges_ram_checks(cr)));
	json_object_object_add(o, "compared", json_object_new_int64((int64_t)compared));
	json_object_object_add(o, "over_memory", json_object_new_int64((int64_t)acct_charges_ram_over(cr)));
	json_object_object_add(o, "first_over_memory", first);
	json_object_object_add(o, "below_zero", json_object_new_int64((int64_t)acct_charges_ram_below_zero(cr)));
	json_object_object_add(o, "first_below_zero", first_below);
	return o;
}

/* Discovery and the periodic rescan: what a census saved (IDL's Discovery). */
static struct json_object *discovery_json(const struct manager *m, const struct manager_stats *ms)
{
	struct acct_discovery_stats d;
	struct json_object *o = json_object_new_object();
	acct_discovery_stats(m->discovery, &d);
	const struct {
		const char *name;
		uint64_t value;
	} figures[] = {
		{ "tracked", d.tracked },     { "directories", d.directories },       { "watches", d.watches },
		{ "unwatched", d.unwatched }, { "scans", d.scans },                   { "overflows", d.overflows },
		{ "rescans", ms->rescans },    { "census_checks", ms->census_checks }, { "census_differed", ms->census_differed },
	};
	for (size_t i = 0; i < ELEMENTSOF(figures); i++)
		json_object_object_add(o, figures[i].name, json_object_new_int64((int64_t)figures[i].value));
	return o;
}

/* The declared resources as the charges engine keeps them (IDL's Resource). */
static struct json_object *resources_json(const struct manager *m)
{
	struct json_object *a = json_object_new_array();
	const struct acct_charges *ch = manager_charges(m);
	size_t n = ch ? acct_charges_nr_resources(ch) : 0;

	for (size_t i = 0; i < n; i++) {
		const struct acct_charges_resource *r = acct_charges_resource(ch, i);
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(r->name));
		json_object_object_add(o, "unit", json_object_new_string(acct_resource_unit_to_string(r->unit)));
		json_object_object_add(o, "budget", json_object_new_int64(r->budget));
		json_object_object_add(o, "on_removal",
				       json_object_new_string(acct_resource_removal_to_string(
					       r->reparent ? ACCT_REMOVAL_REPARENT : ACCT_REMOVAL_RELEASE)));
		json_object_object_add(o, "release_on_exit", json_object_new_boolean(r->release_on_exit));
		json_object_array_add(a, o);
	}
	return a;
}

/* The members are added in the order Status() has always had: its replies
 * are compared byte for byte. */
int daemon_status_json(const struct manager *m, struct json_object **ret)
{
	struct json_object *st = json_object_new_object();
	char line[768];
	struct daemon_stats ds;
	const struct manager_stats *ms = &ds.manager;
	const struct acct_hierarchies *layout = manager_layout(m);
	const struct acct_config *config = manager_config(m);

	if (!st)
		return -ENOMEM;
	manager_status_line(m, line, sizeof(line));
	daemon_stats_gather(m, 0, &ds);

	json_object_object_add(st, "version", json_object_new_string(ACCTD_VERSION));
	json_object_object_add(st, "status", acct_json_text(line)); /* may quote a reload's reason */
	json_object_object_add(st, "uptime_us", json_object_new_int64((int64_t)(acct_now_us() - ms->started_us)));
	json_object_object_add(st, "cgroup_mode", json_object_new_string(acct_cgroup_mode_to_string(layout->mode)));
	json_object_object_add(st, "cgroup_root", acct_json_text(layout->root));
	json_object_object_add(st, "cgroups_live", json_object_new_int64((int64_t)ds.cgroups_live));
	json_object_object_add(st, "cgroups_dead", json_object_new_int64((int64_t)ds.cgroups_dead));
	json_object_object_add(st, "fast_interval_us", json_object_new_int64((int64_t)config->fast_interval_us));
	json_object_object_add(st, "slow_interval_us", json_object_new_int64((int64_t)config->slow_interval_us));
	json_object_object_add(st, "last_fast_pass", acct_pass_to_json(&ms->last_fast));
	json_object_object_add(st, "last_slow_pass", acct_pass_to_json(&ms->last_slow));
	json_object_object_add(st, "budgets", daemon_budgets_json(&ds.budgets));
	struct json_object *t = json_object_new_object();
	json_object_object_add(t, "auto_tune", json_object_new_boolean(ds.auto_tune));
	json_object_object_add(t, "tuned", json_object_new_boolean(ms->tuned));
	json_object_object_add(t, "mode", json_object_new_string(acct_update_mode_to_string(ds.domain.mode)));
	json_object_object_add(t, "counters", json_object_new_int64((int64_t)ds.domain.counters));
	json_object_object_add(t, "sharded", json_object_new_int64((int64_t)ds.domain.sharded));
	json_object_object_add(t, "upgrades", json_object_new_int64((int64_t)ds.domain.upgrades));
	json_object_object_add(t, "tune_passes", json_object_new_int64((int64_t)ds.domain.tune_passes));
	json_object_object_add(st, "tuner", t);
	json_object_object_add(st, "reconciliation", acct_reconcile_to_json(ds.reconcile));
	struct json_object *src = json_object_new_array();
	for (char **p = config->sources; p && *p; p++)
		json_object_array_add(src, acct_json_text(*p));
	json_object_object_add(st, "config_sources", src);
	json_object_object_add(st, "reloads", json_object_new_int64((int64_t)ms->reloads));
	json_object_object_add(st, "reload_failures", json_object_new_int64((int64_t)ms->reload_failures));
	/* "ok", the reason of a failed reload, or null before any reload */
	switch (ds.reload_outcome) {
	case MANAGER_RELOAD_NONE:
		json_object_object_add(st, "reload_result", NULL);
		break;
	case MANAGER_RELOAD_OK:
		json_object_object_add(st, "reload_result", json_object_new_string("ok"));
		break;
	case MANAGER_RELOAD_FAILED:
		json_object_object_add(st, "reload_result", acct_json_text(ds.reload_reason)); /* may quote a file */
		break;
	}
	json_object_object_add(st, "collectors", collectors_json(&ds));
	struct json_object *bpf = json_object_new_object();
	json_object_object_add(bpf, "kernel_passes", json_object_new_int64((int64_t)ms->kernel_passes));
	json_object_object_add(bpf, "kernel_idle", json_object_new_int64((int64_t)ms->kernel_idle));
	json_object_object_add(bpf, "kernel_due", json_object_new_int64((int64_t)ms->kernel_due));
	json_object_object_add(bpf, "checks", json_object_new_int64((int64_t)ms->bpf_checks));
	json_object_object_add(bpf, "mismatches", json_object_new_int64((int64_t)ms->bpf_mismatches));
	json_object_object_add(bpf, "last_mismatch",
			       ms->bpf_last_mismatch[0] ? acct_json_text(ms->bpf_last_mismatch) : NULL);
	json_object_object_add(bpf, "percpu", ds.bpf_percpu ? json_object_new_string(ds.bpf_percpu) : NULL);
	struct json_object *threads = json_object_new_object();
	json_object_object_add(threads, "collector", json_object_new_string(ds.threads_collector));
	json_object_object_add(threads, "reason", json_object_new_string(ds.threads_reason));
	json_object_object_add(bpf, "threads", threads);
	json_object_object_add(st, "bpf", bpf);
	json_object_object_add(st, "history", history_json(&ds));
	/* What a slow reader of the log and the rate limits cost, and
	 * the tombstones' budget. */
	struct json_object *lg = json_object_new_object();
	json_object_object_add(lg, "lines_dropped", json_object_new_int64((int64_t)ds.log_lines_dropped));
	json_object_object_add(lg, "lines_suppressed", json_object_new_int64((int64_t)ds.log_lines_suppressed));
	json_object_object_add(st, "log", lg);
	json_object_object_add(st, "tombstones_folded", json_object_new_int64((int64_t)ms->tombstones_folded));
	/* only where a resource is ram: the document is as before elsewhere */
	if (acct_charges_ram_any(manager_charges_ram(m)))
		json_object_object_add(st, "charges_reconciliation", charges_ram_json(manager_charges_ram(m)));
	json_object_object_add(st, "charges_state", charges_store_status_json(m->charges_store));
	json_object_object_add(st, "discovery", discovery_json(m, ms));
	json_object_object_add(st, "resources", resources_json(m));
	*ret = st;
	return 0;
}
