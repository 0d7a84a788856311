/* metrics-render.h - the ledger as a Prometheus page: text format 0.0.4 or
 * OpenMetrics 1.0, rendered in pieces into an output callback.
 *
 * Pure rendering, no I/O: the HTTP side (daemon/acctd/metrics-http.c) decides the
 * format, compresses and sends; tests call it directly.
 *
 * A page is rendered family by family (each metric family must be contiguous
 * on the page), and within a family cgroup by cgroup in path order. It is
 * produced in steps: acct_metrics_page_render() appends roughly `chunk` bytes
 * and returns, so a server can send them and continue later.
 *
 * What a page shows is copied from the ledger when it starts
 * (acct_metrics_page_new(), inside rcu_read_lock()): the exported cgroups'
 * paths and values, in one pass over the records. After that the page holds
 * no pointer into the ledger, so the ledger's owner may add, kill and sweep
 * records between steps, and every family shows the same instant. Memory:
 * about 450 bytes per exported cgroup plus its path (5 MB at 10,000
 * cgroups), against a page of ~3.5 KB per cgroup; it does not grow with the
 * page. (The alternative, keeping record pointers and re-finding them by path
 * after a sweep, reads every value in page order, family by family: a cache
 * miss per value, which made scrapes twice as slow at 10,000 cgroups.)
 *
 * Conventions of the page: names prefixed acctd_ (plus the standard
 * process_* families), base units (bytes, seconds, ratios), counters end in
 * _total (OpenMetrics: the family name without it, UNIT lines, _created for
 * acctd's own counters, whose start is known, and none for per-cgroup ones,
 * whose start is not), label cgroup="PATH" with \\, \" and \n escaped and
 * bytes that are not UTF-8 written as the four characters \xNN, no timestamps.
 * A path with a live record and tombstones is exported once (the live one).
 *
 * Which cgroups a page shows: those the options' filters let through (depth,
 * include, exclude, a scrape's select), less whole levels, deepest first,
 * where their per-cgroup series would pass max_series (the cut; the page
 * says what it left out). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/metrics-families.h"
#include "core/ledger.h"
#include "core/reconcile.h"
#include "core/sampler.h"
#include "percpu/counter.h"

enum acct_metrics_format {
	ACCT_METRICS_TEXT,        /* text/plain; version=0.0.4 */
	ACCT_METRICS_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

#define ACCT_METRICS_CONTENT_TYPE_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define ACCT_METRICS_CONTENT_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

struct acct_metrics_options {
	enum acct_metrics_format format;
	unsigned max_depth;             /* per-cgroup series down to this depth */
	char *const *include;           /* globs on paths (fnmatch, no flags); NULL: all */
	char *const *exclude;           /* globs; a match leaves out the subtree; NULL: none */
	char *const *memory_stat_types; /* globs on memory.stat types; NULL: all */
	uint32_t families;              /* bits of enum acct_metrics_family */
	char *const *select;            /* a scrape's cgroup= globs: also required; NULL: none */
	/* The cut that bounds a page: when the per-cgroup series of the
	 * cgroups above would pass max_series, whole levels are left out,
	 * deepest first, until the rest fits (0: no cut). Whole levels, so that
	 * the page shows the same cgroups from one scrape to the next. */
	unsigned max_series;
	/* The depth the previous page of this kind showed (struct
	 * acct_metrics_cut's depth_shown), for the cut's hysteresis: beyond it
	 * a level is added only when it fits in 90% of max_series, so that a
	 * level whose series hover at the bound does not come and go. INT_MAX:
	 * none (the default); -1: the previous page showed no cgroup. */
	int cut_hint;
};

/* The memory.stat types exported by default (NULL-terminated). */
extern char *const acct_metrics_default_memory_stat_types[];

/* Fill *o with the defaults: text, depth 32, every cgroup, the default
 * families and memory.stat types, no max_series cut and no hint for it. */
void acct_metrics_options_default(struct acct_metrics_options *o);

/* A labelled count (API requests by method and result, HTTP responses by code). */
struct acct_metrics_count {
	const char *a, *b; /* label values; b NULL for one label */
	uint64_t value;
};

/* One cgroup's charged value of one resource (docs/charges.md), for
 * acctd_charged and acctd_charged_bound, and its averages for
 * acctd_charge_average. */
struct acct_metrics_charge {
	const char *resource, *cgroup;
	const char *unit;   /* the base unit: "bytes", "count" or "seconds" */
	double divisor;     /* charged units per base unit (1e6 for seconds: charged in microseconds) */
	int64_t self, subtree;
	uint64_t self_bound, subtree_bound;
	/* The subtree value's 1, 5 and 15-minute averages (docs/charges.md,
	 * "Averages"), in charged units, as of their last step; only where the
	 * resource is declared averages and the cgroup was averaged. */
	bool has_averages;
	double averages[3];
};

/* One charged cgroup of the ram resources against its memory
 * (docs/charges.md, "Reconciliation of RAM resources"), for
 * acctd_charges_over_memory, acctd_charges_below_zero and
 * acctd_unexplained_memory_bytes{,_bound}. */
struct acct_metrics_charge_ram {
	const char *cgroup;
	bool has_memory;          /* over and unexplained are known */
	bool over;                /* charged RAM above memory beyond both bounds */
	bool below_zero;          /* charged RAM below zero beyond its bound (over-released) */
	int64_t unexplained;      /* memory - charged RAM */
	uint64_t unexplained_bound;
};

#define ACCT_METRICS_MAX_BUCKETS 32

/* acctd's own figures, gathered by the daemon when a scrape starts. Pointers
 * must stay valid for the life of the page. */
struct acct_metrics_self {
	const char *version;
	double start_time;      /* wall clock (s): process_start_time_seconds, _created */
	bool ready;
	uint64_t cgroups_live, cgroups_dead;

	/* Sampling passes: [0] fast files only, [1] with the slow files. */
	const double *bucket_bounds; /* upper bounds, the last one +Inf */
	unsigned nr_buckets;         /* <= ACCT_METRICS_MAX_BUCKETS */
	struct {
		uint64_t bucket[ACCT_METRICS_MAX_BUCKETS]; /* cumulative */
		uint64_t count;
		double sum_seconds;
	} pass[2];
	uint64_t sample_errors[_ACCT_ERR_MAX];
	double pass_cpu_seconds[_ACCT_KIND_MAX]; /* the sampler workers' CPU by kind of pass */
	uint64_t cgroups_failed_total;
	/* The last full pass (not a pass of queued cgroups): cgroups per part
	 * read, pruned and skipped (struct acct_pass_report's parts). */
	uint64_t pass_parts[_ACCT_PART_MAX][_ACCT_OUTCOME_MAX];
	uint64_t pass_steady; /* of them, visited light (steady) */
	/* Log lines dropped (a slow reader) and suppressed (rate
	 * limits), tombstones folded (max_tombstones). */
	uint64_t log_lines_dropped, log_lines_suppressed, tombstones_folded;
	bool have_sampler;
	uint64_t cached_descriptors;
	bool descriptors_degraded;

	const struct acct_reconcile_report *reconcile; /* NULL: none */

	bool have_domain;
	struct acct_domain_stats domain;
	struct acct_ledger_budgets budgets;

	uint64_t reloads, reload_failures;
	bool last_reload_ok;        /* true as well when there was none */
	double last_reload_time;    /* wall clock (s) of the last attempt; 0: none */

	bool have_api;
	uint64_t api_connections, api_connections_total, api_refused_total;
	const struct acct_metrics_count *api_requests; /* method, result */
	size_t nr_api_requests;
	const struct acct_metrics_count *api_budget_refusals; /* resource */
	size_t nr_api_budget_refusals;

	bool have_http;
	uint64_t http_connections, http_connections_total;
	uint64_t http_evicted_total, http_refused_total, http_timeouts_total;
	const struct acct_metrics_count *http_responses; /* code */
	size_t nr_http_responses;

	/* Per hierarchy: the collector reading it ("bpf", "files"; NULL: not
	 * mounted) and why, and the subtrees its BPF walks cover (-1: the whole
	 * hierarchy, or no walk); the collector's cross-checks and walks alone. */
	struct {
		const char *collector, *reason;
		int walk_roots;
	} collectors[_ACCT_HIER_MAX];
	uint64_t bpf_checks, bpf_mismatches, kernel_passes, kernel_idle, kernel_due;

	/* The history: up is 1 while recording works (0 failing or
	 * off), errors counts failed opens and recordings. */
	bool have_history;
	bool history_enabled, history_up;
	uint64_t history_bytes, history_errors_total, history_recordings_total, history_records_total;
	uint64_t history_heap_bytes; /* SQLite's heap (history_heap_bytes()) */
	double history_last_recording_time; /* wall clock (s); 0: none */
	/* Recording health: the last recording's age (s; < 0:
	 * none yet) against the interval (s); stalled past three intervals. */
	double history_last_recording_age, history_interval;
	bool history_stalled;

	/* Programs' charges, every charged cgroup of every resource. */
	const struct acct_metrics_charge *charges;
	size_t nr_charges;
	/* The ram resources' charged cgroups with their memory read, as the
	 * last full pass reconciled them. */
	const struct acct_metrics_charge_ram *charges_ram;
	size_t nr_charges_ram;

	bool have_process;
	double process_cpu_seconds;
	uint64_t process_rss_bytes, process_virtual_bytes, process_max_fds;
};

/* Output: called with each piece of the page, in order. A negative return
 * stops the rendering and is passed up. */
typedef int (*acct_metrics_write_fn)(const void *data, size_t len, void *userdata);

struct acct_metrics_page;

/* Start a page: copy what it shows from `l` (inside rcu_read_lock(), or on
 * the ledger's owner thread). `opts` and its globs, and `self` and what it
 * points to, must stay valid for the life of the page; `l` need not.
 * `now_us` (monotonic) is the instant ages are computed at. Cost: O(cgroups),
 * ~10 ms at 10,000. Returns 0, -ENOMEM, or -EINVAL for a bad option. */
int acct_metrics_page_new(struct acct_ledger *l, const struct acct_metrics_options *opts,
			  const struct acct_metrics_self *self, uint64_t now_us, struct acct_metrics_page **ret);

/* Render the next part of the page: about `chunk` bytes (at least one
 * cgroup of the current family; a line is never split), passed to `write`
 * (possibly nothing in a step, possibly more than one call). Touches no
 * ledger. Returns 1 when more is to come, 0 when the page is complete
 * (OpenMetrics: "# EOF" written), or a negative errno (-ENOMEM, or what
 * `write` returned); after an error the page is unusable. */
int acct_metrics_page_render(struct acct_metrics_page *p, size_t chunk, acct_metrics_write_fn write,
			     void *userdata);

/* Bytes rendered so far. */
uint64_t acct_metrics_page_bytes(const struct acct_metrics_page *p);

/* What the max_series cut left out of the page: cgroups and their
 * per-cgroup series (0 and 0 without a cut); the deepest level shown (-1:
 * none; the depth limit when nothing was cut). The page says the same in
 * acctd_metrics_cgroups_left_out, acctd_metrics_series_left_out and, in the
 * text format, a comment line. */
struct acct_metrics_cut {
	uint64_t cgroups, series;
	int depth_shown;
};
void acct_metrics_page_cut(const struct acct_metrics_page *p, struct acct_metrics_cut *ret);

/* Accepts NULL; returns NULL. */
struct acct_metrics_page *acct_metrics_page_free(struct acct_metrics_page *p);

/* The whole page in one go (tests, tools). Same contract as the three above. */
int acct_metrics_render(struct acct_ledger *l, const struct acct_metrics_options *opts,
			const struct acct_metrics_self *self, uint64_t now_us, acct_metrics_write_fn write,
			void *userdata);

/* Classification of a memory.stat key, for the two memory.stat families. */
enum acct_memstat_class {
	ACCT_MEMSTAT_BYTES,  /* a size: acctd_memory_stat_bytes{type} */
	ACCT_MEMSTAT_EVENTS, /* an event counter: acctd_memory_stat_events_total{event} */
	ACCT_MEMSTAT_SKIP,   /* a limit or a count of objects: not exported */
};
/* The class of `key` (v1's total_ prefix already removed). */
enum acct_memstat_class acct_memstat_classify(const char *key);
