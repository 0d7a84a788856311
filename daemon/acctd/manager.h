/* manager.h - acctd's state and event loop: configuration, discovery, the
 * ledger, sampling passes, reconciliation, reloads and the systemd protocol.
 * The API (varlink) and metrics endpoints plug into the same event base. */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>

#include "cgroup-discovery.h"
#include "config.h"
#include "counter.h"
#include "ledger.h"
#include "reconcile.h"
#include "sampler.h"
#include "util.h"

/* Where the configuration comes from, kept so that a reload reads the same
 * files and re-applies the same command-line overrides. */
struct manager_config_source {
	const char *main_file;  /* NULL: the default */
	const char *dropin_dir; /* NULL: the default */
	const char *state_file; /* NULL: none; else the ledger as JSON after every pass */
	const char *meminfo_file; /* --meminfo: NULL for the default (see manager.c: build_components()) */
	struct {
		const char *section, *key, *value, *origin;
	} overrides[8];
	unsigned nr_overrides;
};

struct admin_group;    /* daemon/acctd/admin-group.h: [api] admin_group's ID */
struct api_server;     /* daemon/acctd/api.h: the varlink API */
struct metrics_server; /* daemon/acctd/metrics-http.h: /metrics */
struct history_recorder; /* daemon/acctd/history-recorder.h */
struct history_queries;  /* daemon/acctd/history-query.h */
struct manager;

/* Pass durations as a Prometheus histogram (seconds). */
#define MANAGER_PASS_BUCKETS 14
extern const double manager_pass_bucket_bounds[MANAGER_PASS_BUCKETS]; /* last is +Inf */
struct manager_pass_histogram {
	uint64_t bucket[MANAGER_PASS_BUCKETS]; /* cumulative counts, as Prometheus wants them */
	uint64_t count;
	double sum_seconds;
};

/* How the last reload (SIGHUP, Reload()) went. */
enum manager_reload_outcome {
	MANAGER_RELOAD_NONE,   /* no reload yet */
	MANAGER_RELOAD_OK,
	MANAGER_RELOAD_FAILED, /* the previous configuration stayed; manager_reload_outcome() gives the reason */
};

typedef void (*manager_pass_fn)(struct manager *m, const struct acct_pass_report *rep, void *userdata);

/* The daemon's own figures, for Status() and /metrics: a copy, as they are
 * when manager_get_stats() is called. */
struct manager_stats {
	bool ready;          /* the first pass is done (READY=1 sent) */
	bool tuned;          /* Tune() since the start or the last reload */
	uint64_t started_us; /* monotonic */
	uint64_t passes;
	struct acct_pass_report last_fast, last_slow;
	struct manager_pass_histogram pass_hist[2]; /* [0] fast-only passes, [1] passes with slow files */
	uint64_t sample_errors_total[_ACCT_ERR_MAX];
	uint64_t cgroups_failed_total;
	uint64_t reloads, reload_failures;
	uint64_t reload_time_us; /* monotonic time of the last reload attempt, 0 if none */
	/* The BPF collector: passes of its values alone, cross-checks against
	 * files and how many disagreed (sampler.c, "Cross-checks"), the last. */
	uint64_t kernel_passes, bpf_checks, bpf_mismatches;
	char bpf_last_mismatch[160];
	uint64_t tombstones_folded; /* forgotten before their retention ([cgroups] max_tombstones) */
};

/* Load the configuration and build every component. Logs what fails and
 * returns a negative errno. */
/* Read the configuration `source` names: the files, then its overrides, and
 * nothing else (no cgroup, no socket): what --check-config and every start
 * and reload read. Returns 0 with *ret set, or a negative errno with
 * diag->error set; diag->warnings lists what was ignored either way. The
 * caller frees *ret and clears diag. */
int manager_config_load(const struct manager_config_source *source, struct acct_config **ret,
			struct acct_config_diag *diag);

int manager_new(const struct manager_config_source *source, struct manager **ret);
struct manager *manager_free(struct manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct manager *, manager_free)

/* Discover the cgroups and start the first full pass; READY=1 follows when it
 * completes. Returns 0 or a negative errno. */
int manager_start(struct manager *m);

/* Run the event loop until SIGTERM/SIGINT. Returns the exit code. */
int manager_run(struct manager *m);

/* Sample every cgroup once (all files, synchronously) and print the ledger as
 * JSON. Returns 0 or a negative errno. */
int manager_dump(struct manager *m, FILE *out);

/* Reload the configuration (SIGHUP). On error the old one stays and the error
 * is returned and its reason kept (manager_reload_outcome()). */
int manager_reload(struct manager *m);

/* One-line summary for STATUS= and Status(), valid UTF-8 (a reload's reason
 * as its served text, name-escape.h), at most size - 1 bytes cut between
 * characters. */
void manager_status_line(const struct manager *m, char *buf, size_t size);

/* Run a full pass (fast and slow files) as soon as possible and call fn(m, report,
 * userdata) on the event loop once it and its reconciliation are done. If a pass
 * is running, the one after it serves. Returns 0 or -ENOMEM. */
int manager_request_pass(struct manager *m, manager_pass_fn fn, void *userdata);

/* Change error budgets and auto-tuning at run time (Tune()), logged with the
 * caller `by` (uid and pid). budgets NULL keeps them; auto_tune < 0 keeps it. A reload returns to the configured values.
 * Returns 0 or -EINVAL for a negative budget. */
int manager_tune(struct manager *m, const struct acct_ledger_budgets *budgets, int auto_tune, const struct ucred *by);

/* The budgets and auto_tune in effect (configured, or tuned). */
void manager_effective_tuning(const struct manager *m, struct acct_ledger_budgets *ret_budgets, bool *ret_auto_tune);

/* ---- read-only access, for the API (daemon/acctd/api-*.c) ------------------
 * The API, /metrics and the status document read the manager through these:
 * struct manager is manager.c's own. None fails;
 * none takes a reference: what they return belongs to the manager. */

/* The event loop everything runs on. */
struct event_base *manager_event_base(const struct manager *m);
/* The configuration in effect. A reload replaces it: do not keep the pointer
 * across returns to the event loop. */
const struct acct_config *manager_config(const struct manager *m);
/* The ledger (lookups under rcu_read_lock(), as ledger.h says). */
struct acct_ledger *manager_ledger(const struct manager *m);
/* NUMA nodes of the counter domain's topology (for the records' per-node values). */
unsigned manager_nr_nodes(const struct manager *m);
/* The result of the last reconciliation. */
const struct acct_reconcile_report *manager_reconcile_report(const struct manager *m);
/* How the last reload went. ret_reason (may be NULL) is set to the reason
 * when it failed, to NULL otherwise. */
enum manager_reload_outcome manager_reload_outcome(const struct manager *m, const char **ret_reason);
/* What the last load of the configuration (the start, or the last reload that
 * applied) ignored, as "FILE:LINE: ..." lines: a NULL-terminated vector,
 * never NULL. */
char *const *manager_config_warnings(const struct manager *m);
/* The [api] admin_group, resolved at start and reload (admin-group.h). */
const struct admin_group *manager_admin_group(const struct manager *m);
/* The daemon's own figures (struct manager_stats above). */
void manager_get_stats(const struct manager *m, struct manager_stats *ret);
/* Where the cgroup hierarchies are mounted (cgroup-discovery.h). */
const struct acct_cgroup_layout *manager_layout(const struct manager *m);
/* Which collector reads hierarchy h ("bpf" or "files"; NULL when h is not
 * mounted) and why, in an operator's words (*ret_reason, static or the
 * collector's). Status and /metrics show these. */
const char *manager_collector_of(const struct manager *m, enum acct_hierarchy h, const char **ret_reason);
/* The BPF collector (NULL when every hierarchy is read from files), and the
 * parts of it the sampler still uses (acct_sampler_bpf_parts()): for fresh
 * reads (Get and Compare with precise), which read the way the sampler does. */
const struct acct_bpf_collector *manager_collector(const struct manager *m);
/* The kernel batching the served bounds come from (acct_sampler_batching()). */
const struct acct_memcg_batching *manager_batching(const struct manager *m);
unsigned manager_collector_parts(const struct manager *m);
/* The counter engine's figures (counter.h). */
void manager_domain_stats(const struct manager *m, struct acct_domain_stats *ret);
/* The sampler's descriptor cache (sampler.h). Returns false, the outputs
 * untouched, when there is no sampler. */
bool manager_sampler_fd_stats(const struct manager *m, uint64_t *ret_cached, bool *ret_degraded);
/* The API server, or NULL when it is not running (yet). */
struct api_server *manager_api(const struct manager *m);
/* Hand the API server to the manager, which frees it with itself. */
void manager_set_api(struct manager *m, struct api_server *s);
/* The history's recorder and query thread (history-recorder.h,
 * history-query.h); NULL before manager_start(). */
struct history_recorder *manager_history(const struct manager *m);
struct history_queries *manager_history_queries(const struct manager *m);
/* Hand the metrics server to the manager, which frees it with itself. */
void manager_set_metrics(struct manager *m, struct metrics_server *s);
