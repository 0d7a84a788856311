/* manager.h - acctd's state and event loop: configuration, discovery, the
 * ledger, sampling passes, reconciliation, reloads and the systemd protocol.
 * The manager knows nothing of who serves its data: the varlink API, /metrics
 * and the state file register as front ends (struct manager_frontend) and
 * read struct manager, which is public, as the files of the manager do. */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>

#include "basic/util.h"
#include "cgroup/cgroup-discovery.h"
#include "config/config.h"
#include "core/ledger.h"
#include "core/reconcile.h"
#include "core/charges-ram.h"
#include "core/charges-avg.h"
#include "core/sampler.h"
#include "percpu/counter.h"

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
struct history_recorder; /* daemon/acctd/history-recorder.h */
struct history_queries;  /* daemon/acctd/query-workers.h */
struct history_query;
struct state_writer;     /* daemon/acctd/state-writer.h */
struct charges_store;    /* daemon/acctd/charges-store.h */
struct charges_state;    /* lib/format/charges-state.h */
struct manager;

/* Connections /metrics holds at most (the oldest idle one is closed for a
 * new one): the manager leaves descriptors for them (manager.c). */
#define METRICS_MAX_CONNECTIONS 64

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
	double pass_cpu_seconds[_ACCT_KIND_MAX]; /* the workers' CPU, summed by kind of pass */
	uint64_t sample_errors_total[_ACCT_ERR_MAX];
	uint64_t cgroups_failed_total;
	uint64_t reloads, reload_failures;
	uint64_t reload_time_us; /* monotonic time of the last reload attempt, 0 if none */
	/* The BPF collector: passes of its values alone, cross-checks against
	 * files and how many disagreed (sampler.c, "Cross-checks"), the last. */
	uint64_t kernel_passes, bpf_checks, bpf_mismatches;
	/* Ticks of bpf_interval at which no cgroup's memory was due (no walk
	 * alone), and the cgroups walks alone read by the budget. */
	uint64_t kernel_idle, kernel_due;
	char bpf_last_mismatch[160];
	uint64_t tombstones_folded; /* forgotten before their retention ([cgroups] max_tombstones) */
	/* The periodic rescan (manager-pass.c, manager_on_rescan()): scans of
	 * every directory, and censuses taken instead, of which how many
	 * differed from discovery's (each followed by a scan). */
	uint64_t rescans, census_checks, census_differed;
};

/* A front end: what serves the manager's data to the outside (the varlink
 * API, /metrics, the state file). The manager calls it through this table at
 * these points and knows nothing else of it, so that no call runs from the
 * manager to them. Each callback may be NULL; each gets the table's userdata. */
struct manager_frontend {
	const char *name; /* for the log */
	void *userdata;
	/* In manager_start(), in the order of manager_add_frontend(), once the
	 * event loop, the admin group and the history exist and before the first
	 * scan: listen. Returns 0 or a negative errno (logged by the front end),
	 * which fails the start. */
	int (*on_start)(struct manager *m, void *userdata);
	/* After the scan that follows the start and each reload that applied. */
	void (*on_scanned)(struct manager *m, void *userdata);
	/* After a full pass once its values are reconciled (before READY=1 at
	 * the first), and after a pass over queued cgroups (rep->flags has
	 * ACCT_PASS_EVENT; m->last_fast is then the last full pass); not after a
	 * walk of the BPF collector alone. */
	void (*on_pass)(struct manager *m, const struct acct_pass_report *rep, void *userdata);
	/* Charges the front end holds that the engine has not counted yet (the
	 * API's charge slots, docs/charges.md): fold them into the engine now,
	 * and add their bounds to a reading of (res, path). Called where the
	 * manager itself serves charged values: the history's recording of a
	 * pass, so that its values are the pass's and its bounds true (the
	 * last one in manager_free() too, before any on_free). */
	void (*charges_fold)(struct manager *m, void *userdata);
	void (*charges_bounds)(struct manager *m, size_t res, const char *path, struct acct_charge_reading *r,
			       void *userdata);
	/* The charge slots the front end keeps in systemd's descriptor store
	 * (docs/charges.md, "Durability"): add each to the state file's
	 * snapshot `st`, with the part of its total that the snapshot's charges
	 * hold. On the event loop, with no fold between it and the snapshot's
	 * reads of the engine. Returns 0 or -ENOMEM. */
	int (*charges_slots)(struct manager *m, struct charges_state *st, void *userdata);
	/* Once at the start, after the state file's load (`loaded`: its slots;
	 * NULL when none could be read) and before anything is served: take up
	 * the slots that systemd's descriptor store passed, and let go of the
	 * rest. */
	void (*slots_adopt)(struct manager *m, const struct charges_state *loaded, void *userdata);
	/* In manager_free(), in the order of manager_add_frontend(), before the
	 * history and the sampler: close and free everything, userdata too. */
	void (*on_free)(struct manager *m, void *userdata);
};

/* Add a front end (the table is copied). Before manager_start(). Returns 0,
 * or -ENOMEM (then nothing was added: the caller frees its userdata). */
int manager_add_frontend(struct manager *m, const struct manager_frontend *fe);

/* The manager's state. Public so that the manager's files (manager.c:
 * construction and the loop; manager-pass.c, manager-reload.c,
 * manager-records.c, manager-history.c, manager-notify.c) share it without
 * accessors. Front ends read it through the accessors below, or directly
 * where they print the manager's own state (the state file). The event loop
 * owns it: nothing here may be touched from another thread. */
struct manager {
	struct event_base *base;
	struct manager_config_source source;
	struct acct_config *config;
	struct acct_hierarchies *layout;
	struct acct_domain *domain;
	struct acct_ledger *ledger;
	struct acct_charges *charges;         /* the [resource.NAME] of the start (docs/charges.md) */
	struct acct_charges_ram *charges_ram; /* their ram ones against memory (charges-reconcile.c) */
	struct acct_charges_avg *charges_avg; /* averages of those declared so (charges-reconcile.c) */
	struct charges_store *charges_store;  /* their state file (charges-store.h); from manager_start() */
	struct acct_discovery *discovery;
	struct acct_sampler *sampler;
	struct acct_bpf_collector *collector; /* NULL: collector = files */
	struct acct_task_walk *task_walk;     /* threads and load through BPF; NULL: files */
	char task_walk_reason[400];           /* why task_walk is NULL or fell back ("" when serving) */
	bool task_walk_fell_back;             /* the sampler stopped using it (cross-check) */
	struct acct_bpf_stat_map stat_map;
	char *meminfo_path; /* NULL: no root_meminfo check (a cgroup root elsewhere, no --meminfo) */
	long host_cpus;     /* configured CPUs: the most a cgroup can run on (manager_history_removed()) */

	struct event *ev_signal[3];
	struct event *ev_inotify, *ev_sampler, *ev_tick, *ev_rescan, *ev_tune, *ev_watchdog, *ev_kernel;

	unsigned pass_flags;     /* of the pass in flight */
	/* Cgroups to read at once, not at the next tick (read_soon()): new ones,
	 * and those whose populated changed with their ancestors. Emptied when a
	 * pass over them, or a full one, starts; a full one then covers them. */
	struct acct_cgroup **soon;
	size_t nr_soon, soon_cap;
	bool soon_all;           /* too many to list: the next full pass covers them */
	struct state_writer *state_writer; /* with --state-file */
	struct history_recorder *history;  /* the writing store's thread (history-recorder.h) */
	struct history_queries *history_queries; /* Usage and History (query-workers.h) */
	uint64_t next_history_us;          /* monotonic: the next recording after a pass */
	uint64_t last_pass_us;             /* monotonic: the start of the last pass that read memory or CPU (0: none) */
	uint64_t last_recorded_pass_us;    /* monotonic: the pass the last recording took its values from */
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
	uint64_t tombstones_folded; /* forgotten before their retention: max_tombstones */

	uint64_t reloads, reload_failures;
	enum manager_reload_outcome reload_outcome;
	char reload_error[512]; /* the reason, when reload_outcome is MANAGER_RELOAD_FAILED */
	char **config_warnings; /* of the configuration in effect (manager_config_warnings()) */
	uint64_t reload_time_us; /* monotonic time of the last reload attempt, 0 if none */

	/* Cumulative figures for Status() and /metrics. */
	struct manager_pass_histogram pass_hist[2]; /* [0] fast-only passes, [1] passes with slow files */
	double pass_cpu_seconds[_ACCT_KIND_MAX]; /* the workers' CPU, summed by kind of pass */
	uint64_t sample_errors_total[_ACCT_ERR_MAX];
	uint64_t cgroups_failed_total;
	/* The BPF collector's passes and cross-checks, cumulative. */
	uint64_t kernel_passes, bpf_checks_total, bpf_mismatches_total;
	uint64_t next_kernel_us; /* a walk alone not before (manager_on_kernel_tick()) */
	uint64_t kernel_idle, kernel_due_total; /* bpf_interval periods with nothing due; cgroups read when due */
	uint64_t kernel_quiet_since_us;         /* nothing due since then (0: a walk alone is due or ran) */
	bool kernel_top;         /* the running walk alone reads some of the top level */
	char bpf_last_mismatch[160];
	/* The periodic rescan: the census asked of the sampler and not yet
	 * taken (hierarchies, 0: none), and the figures of manager_stats. */
	uint32_t census_asked;
	/* of census_asked, the hierarchies asked for a scope's census (include
	 * globs that prune), and discovery's census of that scope when asked */
	uint32_t census_scoped;
	struct acct_cgroup_census census_mine[_ACCT_HIER_MAX];
	uint64_t rescans, census_checks, census_differed;
	/* The BPF walks' roots (update_walk_roots()): as of this many inotify
	 * events and scans of discovery, when valid. */
	uint64_t walk_roots_seen;
	bool walk_roots_valid;
	/* Whether every change of cgroup.events was heard (start_pass()): the
	 * discovery's overflows as of the last full pass, and whether reading
	 * inotify failed since (changes may have been lost). */
	uint64_t events_overflows;
	bool events_gap;

	/* Run-time tuning (Tune()): differs from the configuration until a reload. */
	bool tuned;

	/* [log] removals = summary: removals not logged yet, since the first of
	 * them (monotonic; manager_history_record_pass()). */
	uint64_t removals_unlogged, removals_since_us;

	/* Callbacks waiting for the next complete pass (Reconcile()). */
	struct manager_waiter {
		manager_pass_fn fn;
		void *userdata;
	} *waiters;
	size_t nr_waiters;
	bool pass_requested;
	size_t waiters_in_pass; /* the first waiters_in_pass started before the running pass */

	struct admin_group *admin; /* resolved at start and reload, not per call */
	/* The front ends (manager_add_frontend()), in the order they were added. */
	struct manager_frontend *frontends;
	size_t nr_frontends;
	/* Frees a history query never answered, at the end (query-workers.h):
	 * set by the front end that submits them (the API). */
	void (*history_query_drop)(struct history_query *q);
	bool exiting;
	int exit_code;
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

/* What a reload changed: the keys whose values differ (old -> new, and those
 * only a start applies), and the run-time tuning it dropped. */
struct manager_reload_report {
	struct acct_config_change *changes;
	size_t nr_changes;
	bool tuning_dropped;                 /* Tune()'s values were in effect until this reload */
	struct acct_ledger_budgets was, now; /* the budgets before and after */
	bool was_auto_tune, auto_tune;
};
void manager_reload_report_clear(struct manager_reload_report *r);

/* Reload the configuration (SIGHUP, Reload()); the changes are logged, and
 * told in *ret_report (NULL: not wanted; clear it after). On error the old
 * one stays and the error is returned and its reason kept
 * (manager_reload_outcome()); *ret_report is then empty. */
int manager_reload(struct manager *m, struct manager_reload_report *ret_report);

/* One-line summary for STATUS= and Status(), valid UTF-8 (a reload's reason
 * as its served text, name-escape.h), at most size - 1 bytes cut between
 * characters. */
void manager_status_line(const struct manager *m, char *buf, size_t size);

/* Run a full pass (fast and slow files) as soon as possible and call fn(m, report,
 * userdata) on the event loop once it and its reconciliation are done. If a pass
 * is running, the one after it serves. Returns 0 or -ENOMEM. */
int manager_request_pass(struct manager *m, manager_pass_fn fn, void *userdata);

/* What Tune() changed of one budget, and what it cannot change: a value's
 * bound is acctd's batching part (at most the budget per counter) plus the
 * kernel's own (memcg's per-CPU charge stocks), which no budget moves.
 * `cgroup` is the live record whose kernel part of `quantity` is the largest
 * (the shallowest on ties: the root where it is as large as any); NULL when
 * none has been read. */
struct manager_tune_change {
	const char *budget;   /* "bytes", "cpu_us", "tasks" (static) */
	const char *quantity; /* the one whose kernel part is told: memory, cpu.usage, tasks (static) */
	int64_t old_budget, new_budget;
	char *cgroup;
	uint64_t kernel_bound;
};
#define MANAGER_TUNE_MAX_CHANGES 3
void manager_tune_changes_clear(struct manager_tune_change *v, size_t n);

/* Change error budgets and auto-tuning at run time (Tune()), logged with the
 * caller `by` (uid and pid). budgets NULL keeps them; auto_tune < 0 keeps it.
 * A reload returns to the configured values. Each budget whose value changed
 * is told in ret_changes (at most MANAGER_TUNE_MAX_CHANGES; clear them after).
 * Returns 0; -EINVAL for a negative budget; -ERANGE for one beyond the host
 * (budget-limits.h) with *ret_key the configuration key ("cpu_budget") and
 * *ret_reason why (malloc()ed); -ENOMEM. Nothing changes on failure. */
int manager_tune(struct manager *m, const struct acct_ledger_budgets *budgets, int auto_tune, const struct ucred *by,
		 struct manager_tune_change ret_changes[static MANAGER_TUNE_MAX_CHANGES], size_t *ret_n,
		 const char **ret_key, char **ret_reason);

/* The budgets and auto_tune in effect (configured, or tuned). */
void manager_effective_tuning(const struct manager *m, struct acct_ledger_budgets *ret_budgets, bool *ret_auto_tune);

/* ---- read-only access, for the API (daemon/acctd/api-*.c) ------------------
 * The API, /metrics and the status document read the manager through these
 * (struct manager below is public for the manager's own files). None fails;
 * none takes a reference: what they return belongs to the manager. */

/* Who counts threads and their states for tasks and load: "bpf" (the task
 * walk) or "files", with the reason (static or the manager's, valid while
 * it lives). */
const char *manager_threads_collector(const struct manager *m, const char **ret_reason);

/* The event loop everything runs on. */
struct event_base *manager_event_base(const struct manager *m);
/* The configuration in effect. A reload replaces it: do not keep the pointer
 * across returns to the event loop. */
const struct acct_config *manager_config(const struct manager *m);
/* The ledger (lookups under rcu_read_lock(), as ledger.h says). */
struct acct_ledger *manager_ledger(const struct manager *m);
/* What programs charged (core/charges.h): the resources declared at the
 * start, in the order declared; any thread may charge and read. */
struct acct_charges *manager_charges(const struct manager *m);
/* The reconciliation of the ram resources' charges against memory, as the
 * last full pass left it (core/charges-ram.h); event loop only. */
struct acct_charges_ram *manager_charges_ram(const struct manager *m);
/* The averages of the resources declared `averages` (core/charges-avg.h);
 * event loop only. */
struct acct_charges_avg *manager_charges_avg(const struct manager *m);
/* NUMA nodes of the counter domain's topology (for the records' per-node values). */
unsigned manager_nr_nodes(const struct manager *m);
/* The host's configured CPUs, counted once at start: no cgroup uses more. */
unsigned manager_host_cpus(const struct manager *m);
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
const struct acct_hierarchies *manager_layout(const struct manager *m);
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
/* The history's recorder and query thread (history-recorder.h,
 * query-workers.h); NULL before manager_start(). */
struct history_recorder *manager_history(const struct manager *m);
struct history_queries *manager_history_queries(const struct manager *m);

