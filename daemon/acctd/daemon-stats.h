/* daemon-stats.h - acctd's own figures (passes, errors, descriptors, the
 * history, the log, the process), gathered in one place for Status()
 * (status.c) and /metrics (metrics-http.c), so that the two cannot show them
 * differently. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "history-recorder.h"
#include "manager.h"

/* What daemon_stats_gather() reads beyond the manager's own state. */
enum {
	DAEMON_STATS_PROCESS = 1u << 0, /* CPU time, memory, descriptor limit: getrusage(), /proc/self/statm */
};

struct daemon_stats {
	struct manager_stats manager; /* passes, errors, reloads, the BPF collector (manager_get_stats()) */
	uint64_t cgroups_live, cgroups_dead;
	struct acct_domain_stats domain;    /* the counter engine */
	struct acct_ledger_budgets budgets; /* in effect: tuned or configured */
	bool auto_tune;
	/* The manager's own, valid until the event loop runs again. */
	const struct acct_reconcile_report *reconcile;
	enum manager_reload_outcome reload_outcome;
	const char *reload_reason; /* NULL unless the last reload failed */
	bool have_sampler;         /* false: the descriptor figures are 0 */
	uint64_t cached_descriptors;
	bool descriptors_degraded;
	/* Per hierarchy, as manager_collector_of(): collector NULL when it is
	 * not mounted (reason NULL too). */
	struct {
		const char *collector, *reason;
		int walk_roots; /* subtrees the BPF walks cover, -1: the whole hierarchy (acct_bpf_collector_roots()) */
	} collectors[_ACCT_HIER_MAX];
	const char *bpf_percpu; /* acct_bpf_collector_percpu(); NULL without a BPF collector */
	const char *threads_collector, *threads_reason; /* manager_threads_collector() */
	bool have_history;      /* false before the recorder starts (--dump): history* are 0 */
	struct history_recorder_status history;
	uint64_t history_heap_bytes; /* SQLite's heap (history_heap_bytes()) */
	uint64_t log_lines_dropped, log_lines_suppressed;
	/* With DAEMON_STATS_PROCESS; a figure that cannot be read is 0. */
	bool have_process;
	double process_cpu_seconds;
	uint64_t process_virtual_bytes, process_rss_bytes;
	uint64_t process_max_fds; /* UINT64_MAX: unlimited */
};

/* The figures as they are now, into *ret (every member written). On the
 * event loop. Costs a few copies, plus two system calls and a read of /proc
 * with DAEMON_STATS_PROCESS. Cannot fail. */
void daemon_stats_gather(const struct manager *m, unsigned flags, struct daemon_stats *ret);
