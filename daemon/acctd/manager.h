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

struct manager {
	struct event_base *base;
	struct manager_config_source source;
	struct acct_config *config;
	struct acct_cgroup_layout *layout;
	struct acct_domain *domain;
	struct acct_ledger *ledger;
	struct acct_discovery *discovery;
	struct acct_sampler *sampler;
	char *meminfo_path; /* NULL: no root_meminfo check (a cgroup root elsewhere, no --meminfo) */

	struct event *ev_signal[3];
	struct event *ev_inotify, *ev_sampler, *ev_tick, *ev_rescan, *ev_tune, *ev_watchdog;

	unsigned pass_flags;     /* of the pass in flight */
	bool pass_pending;       /* a tick came while a pass ran */
	uint64_t next_slow_us, next_load_us;
	bool ready;
	uint64_t started_us;
	uint64_t watchdog_usec;
	uint64_t status_sent_us;

	struct acct_pass_report last_fast, last_slow;
	uint64_t passes;
	struct acct_reconcile_report reconcile;
	uint64_t discovery_events;

	uint64_t reloads, reload_failures;
	enum manager_reload_outcome reload_outcome;
	char reload_error[512]; /* the reason, when reload_outcome is MANAGER_RELOAD_FAILED */
	uint64_t reload_time_us; /* monotonic time of the last reload attempt, 0 if none */

	/* Cumulative figures for Status() and /metrics. */
	struct manager_pass_histogram pass_hist[2]; /* [0] fast-only passes, [1] passes with slow files */
	uint64_t sample_errors_total[_ACCT_ERR_MAX];
	uint64_t cgroups_failed_total;

	/* Run-time tuning (Tune()): differs from the configuration until a reload. */
	bool tuned;

	/* Callbacks waiting for the next complete pass (Reconcile()). */
	struct manager_waiter {
		manager_pass_fn fn;
		void *userdata;
	} *waiters;
	size_t nr_waiters;
	bool pass_requested;
	size_t waiters_in_pass; /* the first waiters_in_pass started before the running pass */

	struct admin_group *admin; /* resolved at start and reload, not per call */
	struct api_server *api;
	struct metrics_server *metrics;
	bool exiting;
	int exit_code;
};

/* Load the configuration and build every component. Logs what fails and
 * returns a negative errno. */
int manager_new(const struct manager_config_source *source, struct manager **ret);
struct manager *manager_free(struct manager *m);

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

/* One-line summary for STATUS= and Status(). */
void manager_status_line(const struct manager *m, char *buf, size_t size);

/* Run a full pass (fast and slow files) as soon as possible and call fn(m, report,
 * userdata) on the event loop once it and its reconciliation are done. If a pass
 * is running, the one after it serves. Returns 0 or -ENOMEM. */
int manager_request_pass(struct manager *m, manager_pass_fn fn, void *userdata);

/* Change error budgets and auto-tuning at run time (Tune()). budgets NULL keeps
 * them; auto_tune < 0 keeps it. A reload returns to the configured values.
 * Returns 0 or -EINVAL for a negative budget. */
int manager_tune(struct manager *m, const struct acct_ledger_budgets *budgets, int auto_tune);

/* The budgets and auto_tune in effect (configured, or tuned). */
void manager_effective_tuning(const struct manager *m, struct acct_ledger_budgets *ret_budgets, bool *ret_auto_tune);

/* ---- read-only access, for the API (daemon/acctd/api-*.c) ------------------
 * The API reads the manager through these rather than its fields. None fails;
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
/* The [api] admin_group, resolved at start and reload (admin-group.h). */
const struct admin_group *manager_admin_group(const struct manager *m);
/* Hand the API server to the manager, which frees it with itself. */
void manager_set_api(struct manager *m, struct api_server *s);
