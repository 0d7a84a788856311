/* daemon-stats.c - acctd's own figures in one struct (daemon-stats.h), the
 * one place Status() and /metrics take them from. */
#include "daemon-stats.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/util.h"

static void read_statm(uint64_t *ret_vsz, uint64_t *ret_rss)
{
	unsigned long long size = 0, rss = 0;
	_cleanup_fclose_ FILE *f = fopen("/proc/self/statm", "re");
	if (f && fscanf(f, "%llu %llu", &size, &rss) != 2)
		size = rss = 0;
	long page = sysconf(_SC_PAGESIZE);
	*ret_vsz = size * (uint64_t)page;
	*ret_rss = rss * (uint64_t)page;
}

static void gather_process(struct daemon_stats *x)
{
	struct rusage ru;
	struct rlimit rl;

	x->have_process = true;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		x->process_cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
					 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	read_statm(&x->process_virtual_bytes, &x->process_rss_bytes);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		x->process_max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

void daemon_stats_gather(const struct manager *m, unsigned flags, struct daemon_stats *ret)
{
	*ret = (struct daemon_stats){ 0 };
	manager_get_stats(m, &ret->manager);
	acct_ledger_counts(manager_ledger(m), &ret->cgroups_live, &ret->cgroups_dead);
	manager_domain_stats(m, &ret->domain);
	manager_effective_tuning(m, &ret->budgets, &ret->auto_tune);
	ret->reconcile = manager_reconcile_report(m);
	ret->reload_outcome = manager_reload_outcome(m, &ret->reload_reason);
	ret->have_sampler = manager_sampler_fd_stats(m, &ret->cached_descriptors, &ret->descriptors_degraded);
	const struct acct_bpf_collector *c = manager_collector(m);
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		ret->collectors[h].collector = manager_collector_of(m, h, &ret->collectors[h].reason);
		ret->collectors[h].walk_roots = c ? acct_bpf_collector_roots(c, h) : -1;
	}
	ret->bpf_percpu = c ? acct_bpf_collector_percpu(c) : NULL;
	ret->threads_collector = manager_threads_collector(m, &ret->threads_reason);
	struct history_recorder *hr = manager_history(m);
	if (hr) {
		ret->have_history = true;
		history_recorder_get_status(hr, &ret->history);
		ret->history_heap_bytes = history_heap_bytes();
	}
	ret->log_lines_dropped = log_dropped_total();
	ret->log_lines_suppressed = log_suppressed_total();
	if (flags & DAEMON_STATS_PROCESS)
		gather_process(ret);
}
