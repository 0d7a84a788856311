/* verb-status.c - the verbs about the daemon itself: `status` (its state),
 * and the administrative `tune`, `reconcile` and `reload`, which share the
 * printing of passes, budgets and reconciliation. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acctctl.h"
#include "charge-units.h"
#include "ctl-call.h"
#include "ctl-util.h"
#include "history-call.h"
#include "human.h"
#include "pager.h"
#include "verbs.h"

/* "N cgroups in 12ms (CPU 0.010s), F files, S empty skipped, X failed (reasons)" */
static char *pass_text(struct json_object *p)
{
	_cleanup_free_ char *errs = NULL;
	struct json_object *e = jget(p, "errors");
	int64_t failed = jint_or(p, "cgroups_failed", 0);

	if (e && json_object_is_type(e, json_type_object)) {
		json_object_object_foreach(e, k, v) {
			int64_t n = json_object_get_int64(v);
			char *s;
			if (n <= 0)
				continue;
			s = xasprintf("%s%s%s %" PRId64, errs ? errs : "", errs ? ", " : "", k, n);
			free(errs);
			errs = s;
		}
	}
	/* with the BPF collector: "; BPF 412 records in 1ms, 400 unchanged, 380
	 * pressure still, 5 checks, 0 mismatches" (unchanged: values left as they
	 * were, ages renewed; pressure still: the kernel's totals showed a
	 * cgroup's pressure unchanged, its files not read for it) */
	struct json_object *b = jget(p, "bpf");
	_cleanup_free_ char *bpf = b ? xasprintf("; BPF %" PRId64 " records in %s, %" PRId64 " unchanged, %" PRId64
						 " pressure still, %" PRId64 " checks, %" PRId64 " mismatches",
						 jint_or(b, "records", 0), fmt_duration(jint_or(b, "walk_us", 0)).s,
						 jint_or(b, "unchanged", 0), jint_or(b, "pressure_still", 0),
						 jint_or(b, "checks", 0), jint_or(b, "mismatches", 0))
				     : NULL;
	return xasprintf("%" PRId64 " cgroups in %s (CPU %.3fs), %" PRId64 " files read, %" PRId64 " steady, %" PRId64
			 " empty skipped (%" PRId64 " unread), %" PRId64 " failed%s%s%s%s",
			 jint_or(p, "cgroups", 0), fmt_duration(jint_or(p, "wall_us", 0)).s,
			 jdouble_or(p, "cpu_seconds", 0), jint_or(p, "files_read", 0), jint_or(p, "steady", 0),
			 jint_or(p, "skipped_empty", 0),
			 jint_or(p, "empty_unread", 0), failed, errs ? " (" : "", errs ? errs : "", errs ? ")" : "", bpf ? bpf : "");
}

/* What a pass did with each part of the cgroups' values: "cpu 12 read, 988
 * pruned; memory 1000 read; ..." (parts with no cgroup left out), or NULL
 * when the pass says nothing of them (an older acctd). */
static char *parts_text(struct json_object *pass)
{
	static const char *const outcomes[] = { "read", "pruned", "skipped" };
	struct json_object *parts = jget(pass, "parts");
	_cleanup_free_ char *s = NULL;

	if (!parts || !json_object_is_type(parts, json_type_object))
		return NULL;
	json_object_object_foreach(parts, name, part) {
		_cleanup_free_ char *one = NULL;
		for (size_t i = 0; i < ELEMENTSOF(outcomes); i++) {
			int64_t n = jint_or(part, outcomes[i], 0);
			if (n <= 0)
				continue;
			char *t = xasprintf("%s%s%" PRId64 " %s", one ? one : "", one ? ", " : "", n, outcomes[i]);
			free(one);
			one = t;
		}
		if (!one)
			continue;
		char *t = xasprintf("%s%s%s %s", s ? s : "", s ? "; " : "", name, one);
		free(s);
		s = t;
	}
	return TAKE_PTR(s);
}

/* "children_memory 2, cpu_backwards 1" or "none" */
static char *violations_text(struct json_object *v)
{
	_cleanup_free_ char *s = NULL;

	if (v && json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, k, n) {
			char *t;
			if (json_object_get_int64(n) <= 0)
				continue;
			t = xasprintf("%s%s%s %" PRId64, s ? s : "", s ? ", " : "", k, json_object_get_int64(n));
			free(s);
			s = t;
		}
	}
	return s ? TAKE_PTR(s) : xstrdup("none");
}

static char *drift_text(struct json_object *d, bool bytes)
{
	int64_t n = jint_or(d, "count", 0);
#define DRIFT_FMT(x) (bytes ? fmt_bytes(x).s : fmt_duration(x).s)
	if (n == 0)
		return xstrdup("no samples");
	return xasprintf("p50 %s, p90 %s, p99 %s, max %s", DRIFT_FMT(jint_or(d, "p50", 0)),
			 DRIFT_FMT(jint_or(d, "p90", 0)), DRIFT_FMT(jint_or(d, "p99", 0)),
			 DRIFT_FMT(jint_or(d, "max", 0)));
#undef DRIFT_FMT
}

static void print_reconciliation(struct json_object *rec)
{
	_cleanup_free_ char *last = violations_text(jget(rec, "violations"));
	_cleanup_free_ char *total = violations_text(jget(rec, "violations_total"));
	_cleanup_free_ char *dm = drift_text(jget(rec, "drift_memory_bytes"), true);
	_cleanup_free_ char *dc = drift_text(jget(rec, "drift_cpu_us"), false);
	const char *lv = jstr(rec, "last_violation");
	int64_t rootmem, used;

	int64_t parents = jint_or(rec, "checked_parents", 0), unchanged = jint_or(rec, "unchanged_passes", 0);
	print_field("Reconciliation", "%" PRId64 " passes; the last check covered %" PRId64 " parent%s; %" PRId64
		    " passes found no memory changed and checked nothing again",
		    jint_or(rec, "passes", 0), parents, parents == 1 ? "" : "s", unchanged);
	print_field("Violations", "last pass: %s; in total: %s", last, total);
	if (lv)
		print_field("Last violation", "%s", lv);
	print_field("Drift", "memory %s", dm);
	print_field("", "CPU %s", dc);
	if (jint(rec, "root_memory", &rootmem) && jint(rec, "meminfo_used", &used))
		print_field("Root memory", "%s (/proc/meminfo in use: %s)", fmt_bytes(rootmem).s, fmt_bytes(used).s);
}

/* One line per mounted hierarchy: which collector reads it and why, as the
 * daemon decided at start ("memory: bpf (attached)"). Older daemons have no
 * "collectors": nothing is printed. */
static void print_collectors(struct json_object *a)
{
	size_t n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(a, i);
		const char *reason = jstr(c, "reason");
		int64_t roots = jint_or(c, "walk_roots", -1);
		char walks[96] = "";
		if (roots >= 0) /* where the include globs prune: the subtrees that hold them */
			snprintf(walks, sizeof(walks), "; walks %" PRId64 " subtree%s", roots, roots == 1 ? "" : "s");
		print_field(i == 0 ? "Collectors" : "", "%s: %s%s%s%s%s", jstr(c, "hierarchy") ?: "?",
			    jstr(c, "collector") ?: "?", reason && *reason ? " (" : "", reason && *reason ? reason : "",
			    walks, reason && *reason ? ")" : "");
	}
}

/* The BPF collector's cross-checks against the files since start: a
 * mismatch is rare and worth seeing without /metrics. */
static void print_bpf_checks(struct json_object *b)
{
	int64_t checks = jint_or(b, "checks", 0), mismatches = jint_or(b, "mismatches", 0);
	const char *last = jstr(b, "last_mismatch");

	struct json_object *t = b ? jget(b, "threads") : NULL;
	const char *tc = jstr(t, "collector"), *tr = jstr(t, "reason");
	if (tc)
		print_field("Threads, load", "%s%s%s%s", tc, tr && *tr ? " (" : "", tr && *tr ? tr : "", tr && *tr ? ")" : "");
	/* Walks alone by the bytes budget: how often nothing was due. */
	int64_t walks = jint_or(b, "kernel_passes", 0), idle = jint_or(b, "kernel_idle", 0);
	if (walks + idle > 0)
		print_field("Walks alone", "%" PRId64 " (%" PRId64 " cgroups read as their memory came due), %" PRId64
			    " periods with none due", walks, jint_or(b, "kernel_due", 0), idle);
	if (checks <= 0)
		return;
	print_field("BPF checks", "%" PRId64 " since start, %" PRId64 " outside the files' readings%s%s", checks,
		    mismatches, last ? "; last: " : "", last ? last : "");
}

static void print_budgets(struct json_object *b)
{
	print_field("Error budgets", "memory %s, CPU %s, tasks %" PRId64, fmt_bytes(jint_or(b, "bytes", 0)).s,
		    fmt_duration(jint_or(b, "cpu_us", 0)).s, jint_or(b, "tasks", 0));
}

/* The history store: its state, file, size and last recording,
 * and what went wrong where something did. */
static void print_history(struct json_object *h)
{
	const char *state = jstr(h, "state");
	int64_t last;

	if (!h)
		return;
	if (!state || strcmp(state, "off") == 0) {
		print_field("History", "off ([history] enabled = no)");
		return;
	}
	_cleanup_free_ char *age = NULL;
	int64_t age_us, interval_us;
	/* the last recording's age against the interval: a stall shows */
	if (jint(h, "last_recording_age_us", &age_us) && jint(h, "interval_us", &interval_us))
		age = xasprintf(" (%s ago, every %s)", fmt_duration(age_us).s, fmt_duration(interval_us).s);
	print_field("History", "%s to %s (%s; %s in memory)%s%s%s",
		    strcmp(state, "stalled") == 0 ? "stalled recording" : state, jstr(h, "path") ?: "?",
		    fmt_bytes(jint_or(h, "file_bytes", 0)).s, fmt_bytes(jint_or(h, "heap_bytes", 0)).s,
		    jint(h, "last_recording_us", &last) ? "; last recording " : "",
		    jint(h, "last_recording_us", &last) ? history_time(last, false).s : "", age ?: "");
	if (jstr(h, "warning"))
		print_field("", "warning: %s", jstr(h, "warning"));
	if (jstr(h, "last_error"))
		print_field("", "last error: %s", jstr(h, "last_error"));
	if (jstr(h, "set_aside"))
		print_field("", "a damaged or foreign file was set aside as %s", jstr(h, "set_aside"));
}

/* Whether Status's charges show no sign of a resource: no reconciliation
 * (no ram resource), no slot ever opened, nothing loaded, written or
 * refused. The API does not say which resources are declared (acctd keeps
 * its state file's figures with none), so where acctctl cannot read them
 * this keeps `status` as it was for the hosts that charge nothing. */
static bool charges_untouched(struct json_object *st, struct json_object *sl, struct json_object *rc)
{
	static const char *const figures[] = { "loaded_cgroups", "writes", "write_failures" };
	static const char *const texts[] = { "set_aside", "load_error", "dropped", "last_error" };

	if (rc || jint_or(sl, "opened", 0) > 0)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(figures); i++)
		if (jint_or(st, figures[i], 0) > 0)
			return false;
	for (size_t i = 0; i < ELEMENTSOF(texts); i++)
		if (jstr(st, texts[i]))
			return false;
	return true;
}

/* Programs' charges (docs/charges.md): the resources declared with their
 * units (as acctctl reads them: charge-units.h), the charges' state file,
 * the charge slots and the reconciliation of the ram resources with memory.
 * Nothing when acctd's files declare no resource, or when they cannot be
 * read and nothing shows a resource (charges_untouched()). */
static void print_charges(struct json_object *s)
{
	struct json_object *st = jget(s, "charges_state"), *sl = jget(s, "charge_slots");
	struct json_object *rc = jget(s, "charges_reconciliation");
	_cleanup_free_ char *names = NULL;
	const char *name;
	int64_t last;
	int unit;

	if (!st && !rc)
		return;
	charge_units_load();
	if (charge_units_unknown() ? charges_untouched(st, sl, rc) : !charge_units_resource(0, &unit))
		return;
	for (size_t i = 0; (name = charge_units_resource(i, &unit)); i++) {
		char *n = xasprintf("%s%s%s (%s)", names ?: "", names ? ", " : "", name,
				    unit >= 0 ? charge_unit_name(unit) : "unit not known");
		free(names);
		names = n;
	}
	if (names)
		print_field("Charges", "resources %s", names);
	else /* the API does not list them: acctctl reads the configuration */
		print_field("Charges", "resources not known (%s)", charge_units_unknown() ?: "none in acctd's files");
	if (st && !jbool(st, "durable"))
		print_field("Charge state", "in memory only (no state directory): a restart loses the charges");
	else if (st) {
		_cleanup_free_ char *when = jint(st, "last_write_us", &last)
						    ? xasprintf("; the last %s ago in %s (at most %s)",
								fmt_age((int64_t)arg_now_us - last).s,
								fmt_duration(jint_or(st, "last_write_duration_us", 0)).s,
								fmt_duration(jint_or(st, "max_write_duration_us", 0)).s)
						    : NULL;
		print_field("Charge state", "%s: %" PRId64 " cgroups loaded at the start, %" PRId64 " writes, %" PRId64
			    " failed%s",
			    jstr(st, "path") ?: "?", jint_or(st, "loaded_cgroups", 0), jint_or(st, "writes", 0),
			    jint_or(st, "write_failures", 0), when ?: "");
	}
	if (jstr(st, "last_error"))
		print_field("", "last write failed: %s", jstr(st, "last_error"));
	if (jstr(st, "set_aside"))
		print_field("", "a damaged file was set aside as %s: %s", jstr(st, "set_aside"),
			    jstr(st, "load_error") ?: "?");
	else if (jstr(st, "load_error"))
		print_field("", "not loaded: %s", jstr(st, "load_error"));
	if (jstr(st, "dropped"))
		print_field("", "dropped at the load: %s", jstr(st, "dropped"));
	if (sl)
		print_field("Charge slots", "%" PRId64 " open, %" PRId64 " opened, %" PRId64 " dropped (garbage), %" PRId64
			    " dropped (cgroup removed), %" PRId64 " folds",
			    jint_or(sl, "open", 0), jint_or(sl, "opened", 0), jint_or(sl, "dropped_corrupt", 0),
			    jint_or(sl, "dropped_removed", 0), jint_or(sl, "folds", 0));
	if (rc) {
		_cleanup_free_ char *over = jstr_array_join(rc, "first_over_memory");
		print_field("Charged RAM", "%" PRId64 " checks, %" PRId64 " cgroups compared with memory, %" PRId64
			    " over it beyond both bounds%s%s%s",
			    jint_or(rc, "checks", 0), jint_or(rc, "compared", 0), jint_or(rc, "over_memory", 0),
			    over ? " (" : "", over ?: "", over ? ")" : "");
		/* Over-released charges, only when there are any. */
		if (jint_or(rc, "below_zero", 0) > 0) {
			_cleanup_free_ char *below = jstr_array_join(rc, "first_below_zero");
			print_field("", "%" PRId64 " below zero beyond their bound (over-released)%s%s%s",
				    jint_or(rc, "below_zero", 0), below ? " (" : "", below ?: "", below ? ")" : "");
		}
	}
}

int verb_status(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_free_ char *fast = NULL, *slow = NULL, *sources = NULL, *parts = NULL;
	struct json_object *s, *tuner;
	int r;

	r = call_once("Status", NULL, &reply);
	if (r != EXIT_OK)
		return r;
	s = jget(reply.parameters, "status");
	if (!s)
		return call_failed(-EBADMSG, NULL);
	pager_open();
	if (arg_json) {
		print_json(stdout, s);
		return EXIT_OK;
	}
	_cleanup_free_ char *head = xasprintf("acctd %s: %s", jstr(s, "version") ?: "?", jstr(s, "status") ?: "?");
	print_text(stdout, head);
	putchar('\n');
	print_field("Up", "%s", fmt_duration(jint_or(s, "uptime_us", 0)).s);
	print_field("Cgroups", "%" PRId64 " live, %" PRId64 " dead; %s hierarchy at %s", jint_or(s, "cgroups_live", 0),
		    jint_or(s, "cgroups_dead", 0), jstr(s, "cgroup_mode") ?: "?", jstr(s, "cgroup_root") ?: "?");
	if (jint_or(s, "tombstones_folded", 0) > 0)
		print_field("Tombstones", "%" PRId64 " folded into their parents early (max_tombstones)",
			    jint_or(s, "tombstones_folded", 0));
	if (jget(s, "log") && (jint_or(jget(s, "log"), "lines_dropped", 0) > 0 ||
			       jint_or(jget(s, "log"), "lines_suppressed", 0) > 0))
		print_field("Log", "%" PRId64 " lines dropped (a slow or gone reader), %" PRId64 " suppressed (rate limits)",
			    jint_or(jget(s, "log"), "lines_dropped", 0), jint_or(jget(s, "log"), "lines_suppressed", 0));
	fast = pass_text(jget(s, "last_fast_pass"));
	slow = pass_text(jget(s, "last_slow_pass"));
	print_field("Fast pass", "every %s; last: %s", fmt_duration(jint_or(s, "fast_interval_us", 0)).s, fast);
	print_field("Slow pass", "every %s; last: %s", fmt_duration(jint_or(s, "slow_interval_us", 0)).s, slow);
	parts = parts_text(jget(s, "last_fast_pass"));
	if (parts)
		print_field("Last reads", "%s", parts);
	print_collectors(jget(s, "collectors"));
	print_bpf_checks(jget(s, "bpf"));
	print_budgets(jget(s, "budgets"));
	tuner = jget(s, "tuner");
	print_field("Auto-tune", "%s, mode %s; %" PRId64 " counters, %" PRId64 " sharded, %" PRId64
		    " upgrades, %" PRId64 " tuning passes",
		    jbool(tuner, "auto_tune") ? "on" : "off", jstr(tuner, "mode") ?: "?", jint_or(tuner, "counters", 0),
		    jint_or(tuner, "sharded", 0), jint_or(tuner, "upgrades", 0), jint_or(tuner, "tune_passes", 0));
	if (jbool(tuner, "tuned"))
		print_field("Tuned", "at run time (a reload returns to the configuration)");
	print_reconciliation(jget(s, "reconciliation"));
	print_history(jget(s, "history"));
	print_charges(s);
	sources = jstr_array_join(s, "config_sources");
	print_field("Configuration", "%s", sources && *sources ? sources : "built-in defaults");
	print_field("Reloads", "%" PRId64 ", %" PRId64 " failed; last: %s", jint_or(s, "reloads", 0),
		    jint_or(s, "reload_failures", 0), jstr(s, "reload_result") ?: "none");
	return EXIT_OK;
}

/* One budget Tune changed: what it moved of the bounds, and what it could
 * not (the kernel's part; the IDL's TuneChange). "bytes: acctd's batching
 * now up to 4.0M per counter (was 16.0M); the kernel's part of /'s memory
 * is 3.5M and does not change: its bound is now at most ±7.5M". */
static void print_tune_change(struct json_object *c)
{
	const char *budget = jstr(c, "budget") ?: "?", *cgroup = jstr(c, "cgroup"), *q = jstr(c, "quantity") ?: "?";
	enum acct_unit u = quantity_unit(q);
	int64_t kernel = jint_or(c, "kernel_bound", 0);

	printf("%s: acctd's batching now up to %s per counter (was %s); ", strcmp(budget, "cpu_us") == 0 ? "cpu" : budget,
	       fmt_unit(u, jint_or(c, "new", 0)).s, fmt_unit(u, jint_or(c, "old", 0)).s);
	if (!cgroup)
		printf("the kernel's part of %s is not known yet (nothing read)\n", q);
	else if (kernel == 0)
		printf("the kernel adds nothing to %s: bounds are now at most ±%s\n", q,
		       fmt_unit(u, jint_or(c, "bound", 0)).s);
	else {
		printf("the kernel's part of ");
		print_text(stdout, cgroup); /* may quote a cgroup's name */
		printf("'s %s is %s and does not change: its bound is now at most ±%s\n", q, fmt_unit(u, kernel).s,
		       fmt_unit(u, jint_or(c, "bound", 0)).s);
	}
}

int verb_tune(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	int r;

	if (arg_set_bytes)
		json_add(params, "bytes_budget", json_object_new_int64(arg_bytes_budget));
	if (arg_set_cpu)
		json_add(params, "cpu_budget_us", json_object_new_int64(arg_cpu_budget_us));
	if (arg_set_tasks)
		json_add(params, "tasks_budget", json_object_new_int64(arg_tasks_budget));
	if (arg_set_auto_tune)
		json_add(params, "auto_tune", json_object_new_boolean(arg_auto_tune));
	r = call_once("Tune", params, &reply);
	if (r != EXIT_OK)
		return r;
	if (arg_json) {
		print_json(stdout, reply.parameters);
		return EXIT_OK;
	}
	print_budgets(jget(reply.parameters, "budgets"));
	print_field("Auto-tune", "%s", jbool(reply.parameters, "auto_tune") ? "on" : "off");
	struct json_object *changes = jget(reply.parameters, "changes");
	size_t n = changes && json_object_is_type(changes, json_type_array) ? json_object_array_length(changes) : 0;
	for (size_t i = 0; i < n; i++)
		print_tune_change(json_object_array_get_idx(changes, i));
	if (json_object_object_length(params) > 0)
		printf("Changed until the next reload of the configuration.\n");
	return EXIT_OK;
}

int verb_reconcile(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_free_ char *pass = NULL;
	int r;

	r = call_once("Reconcile", NULL, &reply);
	if (r != EXIT_OK)
		return r;
	if (arg_json) {
		print_json(stdout, reply.parameters);
		return EXIT_OK;
	}
	pass = pass_text(jget(reply.parameters, "pass"));
	print_field("Pass", "%s", pass);
	print_reconciliation(jget(reply.parameters, "reconciliation"));
	return EXIT_OK;
}

/* "memory 4.0M, CPU 20ms, tasks 8, auto-tune off" of a Budgets and its auto_tune */
static char *budgets_text(struct json_object *b, bool auto_tune)
{
	return xasprintf("memory %s, CPU %s, tasks %" PRId64 ", auto-tune %s", fmt_bytes(jint_or(b, "bytes", 0)).s,
			 fmt_duration(jint_or(b, "cpu_us", 0)).s, jint_or(b, "tasks", 0), auto_tune ? "on" : "off");
}

int verb_reload(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	int r;

	r = call_once("Reload", NULL, &reply);
	if (r != EXIT_OK)
		return r;
	if (arg_json) {
		print_json(stdout, reply.parameters);
		return EXIT_OK;
	}
	/* What changed, a key a line: "[sampling] fast_interval: 1s -> 2s";
	 * a key only a start applies says so. Older daemons say nothing. */
	struct json_object *c = jget(reply.parameters, "changes");
	size_t nc = c && json_object_is_type(c, json_type_array) ? json_object_array_length(c) : 0;
	if (c && nc == 0)
		printf("Reloaded: no key changed\n");
	else if (c)
		printf("Reloaded: %zu key%s changed\n", nc, nc == 1 ? "" : "s");
	for (size_t i = 0; i < nc; i++) {
		struct json_object *k = json_object_array_get_idx(c, i);
		const char *key = jstr(k, "key") ?: "?", *dot = strchr(key, '.');
		const char *old = jstr(k, "old"), *new = jstr(k, "new");
		_cleanup_free_ char *line = xasprintf("  [%.*s] %s: %s -> %s%s", dot ? (int)(dot - key) : 0, key,
						      dot ? dot + 1 : key, old && *old ? old : "(empty)",
						      new && *new ? new : "(empty)",
						      jbool(k, "at_start") ? " (not applied: needs a restart of acctd)" : "");
		print_text(stdout, line); /* may quote a file or group name */
		putchar('\n');
	}
	struct json_object *d = jget(reply.parameters, "dropped_tuning");
	if (d) {
		_cleanup_free_ char *was = budgets_text(jget(d, "was"), jbool(d, "was_auto_tune"));
		_cleanup_free_ char *now = budgets_text(jget(d, "now"), jbool(d, "auto_tune"));
		printf("Run-time tuning from acctctl tune dropped: budgets back to the configuration's (%s; were %s)\n",
		       now, was);
	}
	/* Applied, but what it ignored is said: a typo must not pass unseen. */
	struct json_object *w = jget(reply.parameters, "warnings");
	size_t n = w && json_object_is_type(w, json_type_array) ? json_object_array_length(w) : 0;
	if (n > 0)
		fprintf(stderr, "Reloaded; the configuration ignores:\n");
	for (size_t i = 0; i < n; i++) {
		fputs("  ", stderr);
		print_text(stderr, json_object_get_string(json_object_array_get_idx(w, i)) ?: "?");
		fputc('\n', stderr);
	}
	return EXIT_OK;
}
