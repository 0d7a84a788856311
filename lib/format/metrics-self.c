/* metrics-self.c - acctd's own families on the /metrics page: build, the
 * sampler's passes and errors, reconciliation, reloads, the history, the API
 * and HTTP servers, the counter engine and process_*. Most are one figure
 * of struct acct_metrics_self each, named by its offset (g_fields()); the
 * few with labels of their own have a function. OpenMetrics: acctd's
 * counters have _created (its start). */
#include <stdio.h>

#include "basic/util.h"
#include "metrics-render-internal.h"

/* One of acctd's own counters; OpenMetrics: with _created (acctd's start). */
static void self_counter(struct acct_metrics_page *p, const struct fam *f, const struct lbl *l, size_t nl, uint64_t v)
{
	sample_u64(p, f, "_total", NULL, l, nl, v);
	if (p->om && p->self->start_time > 0)
		sample_double(p, f, "_created", NULL, l, nl, p->self->start_time);
}

/* Each series' field of acctd's own figures (or of the reconciliation's
 * report), where shown: a gauge, or a counter with _created. */
static void g_fields(struct acct_metrics_page *p, const struct fam *f)
{
	for (size_t i = 0; i < f->nr_series; i++) {
		const struct series *s = &f->series[i];
		const void *base = s->v.src == SRC_RECONCILE ? (const void *)p->self->reconcile : (const void *)p->self;
		size_t nl = series_labels(s);
		if (!base || !field_shown(base, &s->v))
			continue;
		char *o = metrics_line(p, f, f->type == T_COUNTER ? "_total" : "", NULL, s->l, nl);
		if (o)
			end_line(p, put_field(o, base, &s->v));
		if (f->type == T_COUNTER && p->om && p->self->start_time > 0)
			sample_double(p, f, "_created", NULL, s->l, nl, p->self->start_time);
	}
}

static void g_build_info(struct acct_metrics_page *p, const struct fam *f)
{
	struct lbl l = { "version", p->self->version ? p->self->version : "unknown" };
	sample_u64(p, f, "_info", NULL, &l, 1, 1);
}

static void g_collector_info(struct acct_metrics_page *p, const struct fam *f)
{
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		if (!p->self->collectors[h].collector)
			continue;
		struct lbl l[3] = {
			{ "hierarchy", acct_hierarchy_to_string(h) },
			{ "collector", p->self->collectors[h].collector },
			{ "reason", p->self->collectors[h].reason ? p->self->collectors[h].reason : "" },
		};
		sample_u64(p, f, "_info", NULL, l, 3, 1);
	}
}

/* Only where a walk covers part of a hierarchy: a walk of all of it (or none)
 * has no roots to count, and a 0 would read as "walks nothing". */
static void g_walk_roots(struct acct_metrics_page *p, const struct fam *f)
{
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		if (!p->self->collectors[h].collector || p->self->collectors[h].walk_roots < 0)
			continue;
		struct lbl l = { "hierarchy", acct_hierarchy_to_string(h) };
		sample_u64(p, f, "", NULL, &l, 1, (uint64_t)p->self->collectors[h].walk_roots);
	}
}

static void g_exported(struct acct_metrics_page *p, const struct fam *f)
{
	sample_u64(p, f, "", NULL, NULL, 0, p->n);
}

static void g_pass_hist(struct acct_metrics_page *p, const struct fam *f)
{
	static const char *const kinds[2] = { "fast", "slow" };
	const struct acct_metrics_self *s = p->self;

	if (!s->bucket_bounds || s->nr_buckets == 0)
		return;
	for (int k = 0; k < 2; k++) {
		for (unsigned i = 0; i < s->nr_buckets && i < ACCT_METRICS_MAX_BUCKETS; i++) {
			char le[40];
			char *end = put_double(le, s->bucket_bounds[i], p->om);
			*end = '\0';
			struct lbl l[2] = { { "kind", kinds[k] }, { "le", le } };
			sample_u64(p, f, "_bucket", NULL, l, 2, s->pass[k].bucket[i]);
		}
		struct lbl l = { "kind", kinds[k] };
		sample_double(p, f, "_sum", NULL, &l, 1, s->pass[k].sum_seconds);
		sample_u64(p, f, "_count", NULL, &l, 1, s->pass[k].count);
		if (p->om && s->start_time > 0)
			sample_double(p, f, "_created", NULL, &l, 1, s->start_time);
	}
}

static void g_sample_errors(struct acct_metrics_page *p, const struct fam *f)
{
	for (int i = 0; i < _ACCT_ERR_MAX; i++) {
		struct lbl l = { "reason", acct_sample_error_to_string((enum acct_sample_error)i) };
		self_counter(p, f, &l, 1, p->self->sample_errors[i]);
	}
}

static void g_pass_cpu(struct acct_metrics_page *p, const struct fam *f)
{
	for (int k = 0; k < _ACCT_KIND_MAX; k++) {
		struct lbl l = { "kind", acct_pass_kind_to_string((enum acct_pass_kind)k) };
		sample_double(p, f, "_total", NULL, &l, 1, p->self->pass_cpu_seconds[k]);
		if (p->om && p->self->start_time > 0)
			sample_double(p, f, "_created", NULL, &l, 1, p->self->start_time);
	}
}

static void g_pass_parts(struct acct_metrics_page *p, const struct fam *f)
{
	for (int k = 0; k < _ACCT_PART_MAX; k++)
		for (int o = 0; o < _ACCT_OUTCOME_MAX; o++) {
			struct lbl l[2] = { { "part", acct_pass_part_to_string((enum acct_pass_part)k) },
					    { "outcome", acct_part_outcome_to_string((enum acct_part_outcome)o) } };
			sample_u64(p, f, "", NULL, l, 2, p->self->pass_parts[k][o]);
		}
}

/* The percentiles of the drift histogram of the report at the series'
 * offset (V_USEC: microseconds, shown as seconds). */
static void g_drift(struct acct_metrics_page *p, const struct fam *f)
{
	static const struct {
		const char *name;
		double pct;
	} stats[] = { { "p50", 50 }, { "p90", 90 }, { "p99", 99 } };
	const struct acct_reconcile_report *r = p->self->reconcile;

	if (!r)
		return;
	const struct histogram *h = (const void *)((const char *)r + f->series[0].v.off);
	unsigned dec = f->series[0].v.kind == V_USEC ? 6 : 0;
	if (h->count == 0)
		return;
	for (size_t i = 0; i < ELEMENTSOF(stats); i++) {
		struct lbl l = { "stat", stats[i].name };
		sample_fixed(p, f, NULL, &l, 1, (int64_t)MIN(histogram_percentile(h, stats[i].pct), (uint64_t)INT64_MAX),
			     dec);
	}
	struct lbl l = { "stat", "max" };
	sample_fixed(p, f, NULL, &l, 1, (int64_t)MIN(h->max, (uint64_t)INT64_MAX), dec);
}

/* Violations by invariant, from the report's array at the series' offset:
 * a counter (with _created) or the last pass's gauge. */
static void g_violations(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_reconcile_report *r = p->self->reconcile;
	if (!r)
		return;
	const uint64_t *v = (const void *)((const char *)r + f->series[0].v.off);
	for (int i = 0; i < _ACCT_INV_MAX; i++) {
		struct lbl l = { "invariant", acct_invariant_to_string((enum acct_invariant)i) };
		if (f->type == T_COUNTER)
			self_counter(p, f, &l, 1, v[i]);
		else
			sample_u64(p, f, "", NULL, &l, 1, v[i]);
	}
}

/* MemTotal only beside MemTotal - MemFree. */
static void g_meminfo_total(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_reconcile_report *r = p->self->reconcile;
	if (r && r->meminfo_total >= 0 && r->meminfo_used >= 0)
		sample_i64(p, f, NULL, NULL, 0, r->meminfo_total);
}

static void g_api_requests(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	for (size_t i = 0; s->have_api && i < s->nr_api_requests; i++) {
		struct lbl l[2] = { { "method", s->api_requests[i].a }, { "result", s->api_requests[i].b } };
		self_counter(p, f, l, 2, s->api_requests[i].value);
	}
}

/* acctd_charged (param 0) and acctd_charged_bound (1): per resource and
 * cgroup, the cgroup's own value and its subtree's, in base units. */
static void g_charged(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	for (size_t i = 0; i < s->nr_charges; i++) {
		const struct acct_metrics_charge *c = &s->charges[i];
		struct lbl l[4] = { { "cgroup", c->cgroup }, { "resource", c->resource }, { "unit", c->unit },
				    { "scope", "self" } };
		double v = f->param ? (double)c->self_bound : (double)c->self;
		sample_double(p, f, "", NULL, l, 4, v / c->divisor);
		l[3].value = "subtree";
		v = f->param ? (double)c->subtree_bound : (double)c->subtree;
		sample_double(p, f, "", NULL, l, 4, v / c->divisor);
	}
}

/* acctd_charge_average: per resource declared averages and averaged
 * cgroup, the subtree value's averages by window, in base units. */
static void g_charge_average(struct acct_metrics_page *p, const struct fam *f)
{
	static const char *const windows[3] = { "1m", "5m", "15m" };
	const struct acct_metrics_self *s = p->self;
	for (size_t i = 0; i < s->nr_charges; i++) {
		const struct acct_metrics_charge *c = &s->charges[i];
		if (!c->has_averages)
			continue;
		struct lbl l[4] = { { "cgroup", c->cgroup }, { "resource", c->resource }, { "unit", c->unit },
				    { "window", NULL } };
		for (int k = 0; k < 3; k++) {
			l[3].value = windows[k];
			sample_double(p, f, "", NULL, l, 4, c->averages[k] / c->divisor);
		}
	}
}

/* acctd_charges_over_memory (param 0), acctd_unexplained_memory_bytes (1)
 * and its bound (2): per charged cgroup of the ram resources whose memory
 * was read; acctd_charges_below_zero (3): per charged cgroup. */
static void g_charges_ram(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	for (size_t i = 0; i < s->nr_charges_ram; i++) {
		const struct acct_metrics_charge_ram *c = &s->charges_ram[i];
		struct lbl l = { "cgroup", c->cgroup };
		if (f->param != 3 && !c->has_memory)
			continue;
		int64_t v = f->param == 0 ? c->over
			    : f->param == 1 ? c->unexplained
			    : f->param == 2 ? (int64_t)c->unexplained_bound
					    : c->below_zero;
		sample_i64(p, f, NULL, &l, 1, v);
	}
}

static void g_api_budget_refusals(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	for (size_t i = 0; s->have_api && i < s->nr_api_budget_refusals; i++) {
		struct lbl l = { "resource", s->api_budget_refusals[i].a };
		self_counter(p, f, &l, 1, s->api_budget_refusals[i].value);
	}
}

static void g_http_responses(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	for (size_t i = 0; s->have_http && i < s->nr_http_responses; i++) {
		struct lbl l = { "code", s->http_responses[i].a };
		self_counter(p, f, &l, 1, s->http_responses[i].value);
	}
}

static void g_engine_counters(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_domain_stats *d = &p->self->domain;
	if (!p->self->have_domain)
		return;
	struct lbl c = { "state", "compact" }, sh = { "state", "sharded" };
	sample_u64(p, f, "", NULL, &c, 1, d->counters - MIN(d->sharded, d->counters));
	sample_u64(p, f, "", NULL, &sh, 1, d->sharded);
}

static const char *const kind_names[_KIND_MAX] = { "bytes", "cpu", "tasks" };

static void g_engine_batch_limit(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	int64_t budgets[_KIND_MAX] = { s->budgets.bytes, s->budgets.cpu_us, s->budgets.tasks };

	if (!s->have_domain)
		return;
	for (int k = 0; k < _KIND_MAX; k++) {
		struct lbl l = { "kind", kind_names[k] };
		sample_i64(p, f, NULL, &l, 1, acct_batch_for_budget(budgets[k], s->domain.nr_shards));
	}
}

/* The field of struct kind_stats at the series' offset, by kind. */
static void g_engine_kinds(struct acct_metrics_page *p, const struct fam *f)
{
	if (!p->self->have_domain)
		return;
	for (int k = 0; k < _KIND_MAX; k++) {
		struct lbl l = { "kind", kind_names[k] };
		char *o = metrics_line(p, f, "", NULL, &l, 1);
		if (o)
			end_line(p, put_field(o, &p->kinds[k], &f->series[0].v));
	}
}

static void g_engine_tune(struct acct_metrics_page *p, const struct fam *f)
{
	if (!p->self->have_domain)
		return;
	for (int k = 0; k < _KIND_MAX; k++) {
		struct lbl l[2] = { { "kind", kind_names[k] }, { "direction", "grow" } };
		sample_u64(p, f, "", NULL, l, 2, p->kinds[k].grows);
		l[1].value = "shrink";
		sample_u64(p, f, "", NULL, l, 2, p->kinds[k].shrinks);
	}
}

/* ---- the families, in page order ----------------------------------------------------- */

/* A figure of struct acct_metrics_self, shown when the bool `when` is
 * (0: always). */
#define SELF(member, kind, ...) SERIES({ .v = FIELD(struct acct_metrics_self, member, SRC_SELF, kind, __VA_ARGS__) })
#define WHEN(have) .when = offsetof(struct acct_metrics_self, have)
#define RECONCILE(member, kind, ...) \
	SERIES({ .v = FIELD(struct acct_reconcile_report, member, SRC_RECONCILE, kind, __VA_ARGS__) })
#define KIND(member, kind) SERIES({ .v = FIELD(struct kind_stats, member, SRC_SELF, kind) })
#define G(name_, type_, group_, unit_, help_, ...)                                                               \
	{ .name = (name_), .type = (type_), .rows = ROWS_LIVE, .group = (group_), .unit = (unit_), .help = (help_), \
	  __VA_ARGS__ }
#define F(name_, type_, group_, unit_, help_, ...) G(name_, type_, group_, unit_, help_, .global = g_fields, __VA_ARGS__)

_Static_assert(offsetof(struct acct_metrics_self, version) == 0, "no bool at offset 0: `when` 0 means none");
_Static_assert(sizeof(struct acct_metrics_self) <= UINT16_MAX, "struct field's offsets");

const struct fam metrics_self_families[] = {
	G("acctd_build", T_INFO, -1, NULL, "acctd's version (value 1).", .global = g_build_info),
	F("acctd_ready", T_GAUGE, -1, NULL, "1 once the first complete sampling pass is in the ledger.",
	  SELF(ready, V_BOOL)),
	G("acctd_collector", T_INFO, -1, NULL,
	  "The collector reading each cgroup hierarchy (bpf: the kernel's accounting through a BPF iterator; "
	  "files: cgroupfs files) and why (value 1).",
	  .global = g_collector_info),
	G("acctd_collector_walk_roots", T_GAUGE, -1, NULL,
	  "Subtrees each BPF walk of a hierarchy covers: those that hold every cgroup acctd reads there (the include "
	  "globs' tops, or their directory). Absent where the walk covers the whole hierarchy.",
	  .global = g_walk_roots),
	F("acctd_collector_checks", T_COUNTER, -1, NULL,
	  "Cross-checks of the BPF collector's values against files read around its walk.", SELF(bpf_checks, V_U64)),
	F("acctd_collector_mismatches", T_COUNTER, -1, NULL,
	  "Cross-checks whose BPF value lay outside the files' readings around the walk.", SELF(bpf_mismatches, V_U64)),
	F("acctd_collector_walks", T_COUNTER, -1, NULL,
	  "Passes of the BPF collector's memory values alone (sampling.bpf_interval).", SELF(kernel_passes, V_U64)),
	F("acctd_collector_walks_idle", T_COUNTER, -1, NULL,
	  "bpf_interval periods in which no cgroup's memory was due by the bytes budget: no walk alone ran, and acctd did not wake for one.",
	  SELF(kernel_idle, V_U64)),
	F("acctd_collector_walk_due_cgroups", T_COUNTER, -1, NULL,
	  "cgroups that walks alone read because their memory was due by the bytes budget (motion x age).",
	  SELF(kernel_due, V_U64)),
	F("acctd_cgroups", T_GAUGE, -1, NULL, "cgroups in the ledger: live, and tombstones kept for their retention.",
	  SERIES({ .v = FIELD(struct acct_metrics_self, cgroups_live, SRC_SELF, V_U64), .l = { { "state", "live" } } },
		 { .v = FIELD(struct acct_metrics_self, cgroups_dead, SRC_SELF, V_U64), .l = { { "state", "dead" } } })),
	G("acctd_metrics_cgroups", T_GAUGE, -1, NULL,
	  "cgroups on this page, after metrics.max_depth, the include and exclude globs, a scrape's selection and the "
	  "max_series cut (one per path).",
	  .global = g_exported),
	G("acctd_sampling_pass_duration_seconds", T_HISTOGRAM, -1, "seconds",
	  "Wall-clock duration of sampling passes: kind fast reads the fast files only, slow the slow files too.",
	  .global = g_pass_hist),
	G("acctd_sampling_errors", T_COUNTER, -1, NULL, "Failed reads of cgroup files, by reason.",
	  .global = g_sample_errors),
	G("acctd_sampling_cpu_seconds", T_COUNTER, -1, "seconds",
	  "CPU time (user and system) of the sampler's workers in passes, by kind of pass: walk (the BPF "
	  "collector's walks alone), event (queued cgroups), slow (with the slow files), load (with the threads), "
	  "fast (the rest). The BPF walks that a pass makes are its own.",
	  .global = g_pass_cpu),
	G("acctd_sampling_pass_cgroups", T_GAUGE, -1, NULL,
	  "cgroups of the last full pass by part of their values (memory, cpu, io, psi, load, memory_stat) and "
	  "outcome: read, pruned (proven unchanged without a read: an ancestor's total stood still), skipped (not "
	  "read: empty since its last read; psi: nothing may have stalled, served with its age; memory_stat: not "
	  "due).",
	  .global = g_pass_parts),
	F("acctd_sampling_pass_steady_cgroups", T_GAUGE, -1, NULL,
	  "cgroups of the last full pass that were steady: their entry, this walk's record and their ancestor's "
	  "outcome proved nothing changed, and nothing of theirs was touched (counted in the parts too).",
	  SELF(pass_steady, V_U64)),
	F("acctd_sampling_failed_cgroups", T_COUNTER, -1, NULL,
	  "cgroups with at least one failed value in a pass, summed over passes.", SELF(cgroups_failed_total, V_U64)),
	/* A log that cannot hold acctd up, rate limits, the tombstones' budget. */
	F("acctd_log_lines_dropped", T_COUNTER, -1, NULL,
	  "Log lines dropped because the reader of the log (stderr, the journal) was too slow.",
	  SELF(log_lines_dropped, V_U64)),
	F("acctd_log_lines_suppressed", T_COUNTER, -1, NULL,
	  "Log lines suppressed by the per-cause rate limits ([log] rate_limit_burst).", SELF(log_lines_suppressed, V_U64)),
	F("acctd_tombstones_folded", T_COUNTER, -1, NULL,
	  "Tombstones forgotten before tombstone_retention ended, beyond [cgroups] max_tombstones.",
	  SELF(tombstones_folded, V_U64)),
	F("acctd_sampling_cached_descriptors", T_GAUGE, -1, NULL, "cgroup file descriptors kept open between passes.",
	  SELF(cached_descriptors, V_U64, WHEN(have_sampler))),
	F("acctd_sampling_descriptors_degraded", T_GAUGE, -1, NULL,
	  "1 when the descriptor limit was reached and files are opened per read.",
	  SELF(descriptors_degraded, V_BOOL, WHEN(have_sampler))),
	F("acctd_reconcile_passes", T_COUNTER, -1, NULL, "Reconciliations of the ledger against the kernel.",
	  RECONCILE(passes, V_U64)),
	F("acctd_reconcile_checked_parents", T_GAUGE, -1, NULL,
	  "Parents whose children's memory the last check covered.", RECONCILE(checked_parents, V_U64)),
	F("acctd_reconcile_unchanged_passes", T_COUNTER, -1, NULL,
	  "Reconciliations that found no memory value, bound or cgroup changed since a check with no suspect, and "
	  "checked nothing again.",
	  RECONCILE(unchanged_passes, V_U64)),
	G("acctd_reconcile_drift_bytes", T_GAUGE, -1, "bytes",
	  "Memory drift per cgroup in the last pass: |kernel reading - ledger value| (p50/p90/p99 within "
	  "1/64 of the exact percentiles).",
	  .global = g_drift, RECONCILE(drift_memory, V_U64)),
	G("acctd_reconcile_drift_seconds", T_GAUGE, -1, "seconds",
	  "CPU time per cgroup that the ledger had not seen yet at the last pass (p50/p90/p99 within 1/64 of "
	  "the exact percentiles).",
	  .global = g_drift, RECONCILE(drift_cpu, V_USEC)),
	F("acctd_reconcile_drift_cgroups", T_GAUGE, -1, NULL, "cgroups whose drift was measured in the last pass.",
	  SERIES({ .v = FIELD(struct acct_reconcile_report, drift_memory.count, SRC_RECONCILE, V_U64),
		   .l = { { "quantity", "memory" } } },
		 { .v = FIELD(struct acct_reconcile_report, drift_cpu.count, SRC_RECONCILE, V_U64),
		   .l = { { "quantity", "cpu" } } })),
	G("acctd_invariant_violations", T_COUNTER, -1, NULL, "Invariant violations found by reconciliation.",
	  .global = g_violations, RECONCILE(violations_total, V_U64)),
	G("acctd_invariant_violations_last_pass", T_GAUGE, -1, NULL,
	  "Invariant violations found by the last reconciliation.", .global = g_violations, RECONCILE(violations, V_U64)),
	F("acctd_reconcile_root_memory_bytes", T_GAUGE, -1, "bytes",
	  "The root's memory at the last reconciliation (its reading or the sum of the top level, the larger).",
	  RECONCILE(root_memory, V_I64, .flags = F_NONNEG)),
	F("acctd_reconcile_meminfo_used_bytes", T_GAUGE, -1, "bytes",
	  "MemTotal - MemFree of /proc/meminfo at the last reconciliation.",
	  RECONCILE(meminfo_used, V_I64, .flags = F_NONNEG)),
	G("acctd_reconcile_meminfo_total_bytes", T_GAUGE, -1, "bytes",
	  "MemTotal of /proc/meminfo at the last reconciliation.", .global = g_meminfo_total),
	F("acctd_config_reloads", T_COUNTER, -1, NULL, "Configuration reloads attempted.", SELF(reloads, V_U64)),
	F("acctd_config_reload_failures", T_COUNTER, -1, NULL,
	  "Configuration reloads that failed (the previous configuration stayed).", SELF(reload_failures, V_U64)),
	F("acctd_config_last_reload_successful", T_GAUGE, -1, NULL,
	  "0 when the last reload failed, else 1 (also when there was none).", SELF(last_reload_ok, V_BOOL)),
	F("acctd_config_last_reload_timestamp_seconds", T_GAUGE, -1, "seconds",
	  "Wall-clock time of the last reload attempt.", SELF(last_reload_time, V_DOUBLE, .flags = F_POSITIVE)),
	/* The history (docs/history.md, "In the daemon"). */
	F("acctd_history_enabled", T_GAUGE, -1, NULL, "1 when history.enabled is on.",
	  SELF(history_enabled, V_BOOL, WHEN(have_history))),
	F("acctd_history_up", T_GAUGE, -1, NULL,
	  "1 while the history is recorded, 0 while its store fails (full disk, read-only), its recorder is stalled or "
	  "history is off.",
	  SELF(history_up, V_BOOL, WHEN(have_history))),
	F("acctd_history_bytes", T_GAUGE, -1, "bytes", "Size of the history database with its write-ahead log.",
	  SELF(history_bytes, V_U64, WHEN(have_history))),
	F("acctd_history_heap_bytes", T_GAUGE, -1, "bytes",
	  "What SQLite holds on acctd's heap: the history's page caches (at most 16 MiB each for recording and "
	  "queries) and statements.",
	  SELF(history_heap_bytes, V_U64, WHEN(have_history))),
	F("acctd_history_errors", T_COUNTER, -1, NULL, "Failed opens and recordings of the history store.",
	  SELF(history_errors_total, V_U64, WHEN(have_history))),
	F("acctd_history_recordings", T_COUNTER, -1, NULL, "Recordings written to the history store.",
	  SELF(history_recordings_total, V_U64, WHEN(have_history))),
	F("acctd_history_records", T_COUNTER, -1, NULL,
	  "Accounting records of removed cgroups (the journal's and the store's).",
	  SELF(history_records_total, V_U64, WHEN(have_history))),
	F("acctd_history_last_recording_timestamp_seconds", T_GAUGE, -1, "seconds",
	  "Wall-clock time of the last recording written.",
	  SELF(history_last_recording_time, V_DOUBLE, WHEN(have_history), .flags = F_POSITIVE)),
	/* Recording health, judged when the page is made. */
	F("acctd_history_last_recording_age_seconds", T_GAUGE, -1, "seconds",
	  "How long ago the last recording was written (absent before the first).",
	  SELF(history_last_recording_age, V_DOUBLE, WHEN(have_history), .flags = F_NONNEG)),
	F("acctd_history_interval_seconds", T_GAUGE, -1, "seconds", "The history's recording interval.",
	  SELF(history_interval, V_DOUBLE, WHEN(have_history))),
	F("acctd_history_stalled", T_GAUGE, -1, NULL,
	  "1 while no recording has ended for more than three intervals (a blocked recorder, acctd stopped): "
	  "that time is a gap in the history.",
	  SELF(history_stalled, V_BOOL, WHEN(have_history))),
	G("acctd_api_requests", T_COUNTER, -1, NULL, "varlink API calls by method and result (ok or the error name).",
	  .global = g_api_requests),
	/* Programs' charges (docs/charges.md): each read within the resource's budget. */
	G("acctd_charged", T_GAUGE, -1, NULL,
	  "What programs charged to the cgroup, by resource, in the resource's base unit (label unit): "
	  "scope self to the cgroup itself, subtree to it and every cgroup below it.",
	  .global = g_charged, .param = 0),
	G("acctd_charged_bound", T_GAUGE, -1, NULL,
	  "The error bound of acctd_charged with the same labels: at most the resource's budget, plus at most one budget per open charge slot it covers.",
	  .global = g_charged, .param = 1),
	G("acctd_charge_average", T_GAUGE, -1, NULL,
	  "The 1, 5 and 15-minute averages (label window: 1m, 5m, 15m) of acctd_charged's subtree value, for the "
	  "resources declared averages, in the resource's base unit (label unit), as of their last 5 s step; "
	  "each within the resource's budget.",
	  .global = g_charge_average),
	/* Reconciliation of the ram resources' charges (docs/charges.md). */
	G("acctd_charges_over_memory", T_GAUGE, -1, NULL,
	  "1 where what programs charged of the resources declared ram to the cgroup's subtree exceeds its memory "
	  "beyond both bounds (leaked or over-reported charges), else 0; per charged cgroup, as of the last full pass.",
	  .global = g_charges_ram, .param = 0),
	G("acctd_charges_below_zero", T_GAUGE, -1, NULL,
	  "1 where what programs charged of the resources declared ram to the cgroup's subtree is below zero "
	  "beyond its bound (over-released: a client gave back more than it charged), else 0; per charged cgroup, "
	  "as of the last full pass.",
	  .global = g_charges_ram, .param = 3),
	G("acctd_unexplained_memory_bytes", T_GAUGE, -1, "bytes",
	  "The cgroup's memory less what programs charged of the resources declared ram to its subtree "
	  "(negative: more charged than used); per charged cgroup, as of the last full pass.",
	  .global = g_charges_ram, .param = 1),
	G("acctd_unexplained_memory_bound_bytes", T_GAUGE, -1, "bytes",
	  "The error bound of acctd_unexplained_memory_bytes: the memory's bound and the charges' summed.",
	  .global = g_charges_ram, .param = 2),
	F("acctd_api_connections", T_GAUGE, -1, NULL, "Open varlink API connections.",
	  SELF(api_connections, V_U64, WHEN(have_api))),
	F("acctd_api_connections_accepted", T_COUNTER, -1, NULL, "varlink API connections accepted.",
	  SELF(api_connections_total, V_U64, WHEN(have_api))),
	F("acctd_api_connections_refused", T_COUNTER, -1, NULL, "varlink API connections refused for their limits.",
	  SELF(api_refused_total, V_U64, WHEN(have_api))),
	G("acctd_api_budget_refusals", T_COUNTER, -1, NULL,
	  "Refusals of a client by a full budget of acctd.conf's [api] section, of its user or of all users "
	  "(docs/api.md, Resource budgets), one per refusal, by budget: input (max_input_bytes*: a connection's "
	  "unparsed input and its calls' parsing cost; the client gets ResourceLimitExceeded, the connection is "
	  "closed), output (max_output_bytes*: replies the client does not read; the connection is closed), "
	  "connections (max_connections*: a new connection not accepted), watches and watch_cgroups "
	  "(max_watches*, max_watched_cgroups*: a Watch refused with ResourceLimitExceeded). Root is refused "
	  "only for connections.",
	  .global = g_api_budget_refusals),
	G("acctd_metrics_responses", T_COUNTER, -1, NULL, "HTTP responses of the metrics endpoint, by status code.",
	  .global = g_http_responses),
	F("acctd_metrics_connections", T_GAUGE, -1, NULL, "Open connections to the metrics endpoint.",
	  SELF(http_connections, V_U64, WHEN(have_http))),
	F("acctd_metrics_connections_accepted", T_COUNTER, -1, NULL, "Connections to the metrics endpoint accepted.",
	  SELF(http_connections_total, V_U64, WHEN(have_http))),
	F("acctd_metrics_connections_dropped", T_COUNTER, -1, NULL,
	  "Connections to the metrics endpoint closed by acctd: evicted for a new one past the limit, refused, or "
	  "timed out.",
	  SERIES({ .v = FIELD(struct acct_metrics_self, http_evicted_total, SRC_SELF, V_U64, WHEN(have_http)),
		   .l = { { "reason", "evicted" } } },
		 { .v = FIELD(struct acct_metrics_self, http_refused_total, SRC_SELF, V_U64, WHEN(have_http)),
		   .l = { { "reason", "refused" } } },
		 { .v = FIELD(struct acct_metrics_self, http_timeouts_total, SRC_SELF, V_U64, WHEN(have_http)),
		   .l = { { "reason", "timeout" } } })),
	G("acctd_engine_counters", T_GAUGE, ACCT_MF_ENGINE, NULL,
	  "Counters of the counter engine: compact (one word) or sharded (per CPU).", .global = g_engine_counters),
	F("acctd_engine_upgrades", T_COUNTER, ACCT_MF_ENGINE, NULL, "Counters upgraded from compact to sharded.",
	  SELF(domain.upgrades, V_U64, WHEN(have_domain))),
	F("acctd_engine_tune_passes", T_COUNTER, ACCT_MF_ENGINE, NULL, "Passes of the batch tuner.",
	  SELF(domain.tune_passes, V_U64, WHEN(have_domain))),
	F("acctd_engine_auto_tune", T_GAUGE, ACCT_MF_ENGINE, NULL, "1 when the batch tuner is on.",
	  SELF(domain.auto_tune, V_BOOL, WHEN(have_domain))),
	F("acctd_engine_pool_bytes", T_GAUGE, ACCT_MF_ENGINE, "bytes", "Memory mapped for shards and node sums.",
	  SELF(domain.pool_bytes, V_SIZE, WHEN(have_domain))),
	F("acctd_engine_shards", T_GAUGE, ACCT_MF_ENGINE, NULL, "Shards per sharded counter (possible CPUs).",
	  SELF(domain.nr_shards, V_UINT, WHEN(have_domain))),
	F("acctd_engine_numa_nodes", T_GAUGE, ACCT_MF_ENGINE, NULL, "NUMA nodes of the counter engine's topology.",
	  SELF(domain.nr_nodes, V_UINT, WHEN(have_domain))),
	F("acctd_engine_error_budget_bytes", T_GAUGE, ACCT_MF_ENGINE, "bytes",
	  "Error budget of each byte counter (the largest bound a read may report).",
	  SELF(budgets.bytes, V_I64, WHEN(have_domain))),
	F("acctd_engine_error_budget_seconds", T_GAUGE, ACCT_MF_ENGINE, "seconds",
	  "Error budget of each CPU-time counter.", SELF(budgets.cpu_us, V_USEC, WHEN(have_domain))),
	F("acctd_engine_error_budget_tasks", T_GAUGE, ACCT_MF_ENGINE, NULL,
	  "Error budget of each count (tasks, periods).", SELF(budgets.tasks, V_I64, WHEN(have_domain))),
	G("acctd_engine_batch_limit", T_GAUGE, ACCT_MF_ENGINE, NULL,
	  "Largest batch the budget allows, by kind of counter (in the counter's unit: bytes, microseconds, count).",
	  .global = g_engine_batch_limit),
	G("acctd_engine_batch_max", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL,
	  "Largest batch in effect among the ledger's counters of a kind (the tuner moves it below the limit).",
	  .global = g_engine_kinds, KIND(batch_max, V_I64)),
	G("acctd_engine_ledger_counters", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL, "The ledger's counters, by kind.",
	  .global = g_engine_kinds, KIND(counters, V_U64)),
	G("acctd_engine_sharded_counters", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL, "The ledger's sharded counters, by kind.",
	  .global = g_engine_kinds, KIND(sharded, V_U64)),
	G("acctd_engine_folds", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL,
	  "Residues folded into node sums by the counters now in the ledger, by kind (falls when cgroups go).",
	  .global = g_engine_kinds, KIND(folds, V_U64)),
	G("acctd_engine_tune_adjustments", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL,
	  "Batch doublings (grow) and halvings (shrink) by the tuner of the counters now in the ledger.",
	  .global = g_engine_tune),
	F("process_cpu_seconds", T_COUNTER, ACCT_MF_PROCESS, "seconds", "User and system CPU time of acctd.",
	  SELF(process_cpu_seconds, V_DOUBLE, WHEN(have_process))),
	F("process_resident_memory_bytes", T_GAUGE, ACCT_MF_PROCESS, "bytes", "Resident memory of acctd.",
	  SELF(process_rss_bytes, V_U64, WHEN(have_process))),
	F("process_virtual_memory_bytes", T_GAUGE, ACCT_MF_PROCESS, "bytes", "Virtual memory of acctd.",
	  SELF(process_virtual_bytes, V_U64, WHEN(have_process))),
	F("process_start_time_seconds", T_GAUGE, ACCT_MF_PROCESS, "seconds", "Start time of acctd since the Unix epoch.",
	  SELF(start_time, V_DOUBLE, WHEN(have_process), .flags = F_POSITIVE)),
	F("process_max_fds", T_GAUGE, ACCT_MF_PROCESS, NULL, "Limit on open file descriptors of acctd.",
	  SELF(process_max_fds, V_U64, WHEN(have_process))),
};
const size_t metrics_self_families_n = ELEMENTSOF(metrics_self_families);
_Static_assert(ELEMENTSOF(metrics_self_families) <= METRICS_SELF_FAMILIES_MAX, "METRICS_SELF_FAMILIES_MAX");
