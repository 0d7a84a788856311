/* budget-limits.h - what an error budget may be on this host. A budget is the
 * most acctd's batching may add to one counter's bound (docs/counters.md); one
 * larger than all there is to count makes every bound it serves meaningless
 * (issue 31: "a 1T byte budget accepted silently"). The limits:
 *
 *   bytes_budget <= the host's memory (physical pages x page size): a memory
 *                   bound larger than the host's memory says nothing;
 *   cpu_budget   <= possible CPUs x fast_interval: the CPU time the whole host
 *                   can use in one fast pass; a larger error makes every CPU
 *                   rate computed over a pass wider than the host;
 *   tasks_budget <= kernel.pid_max: no cgroup can hold more tasks.
 *
 * They are checked where a budget is set: at a load of the configuration (the
 * start, --check-config, a reload, which then keeps the running configuration)
 * and by Tune. Pure: the host is passed in, so tests give any host. */
#pragma once

#include <stdint.h>

struct acct_config;

struct acct_host_limits {
	uint64_t memory_bytes; /* 0: unknown, not checked */
	uint64_t cpus;         /* possible CPUs; 0: unknown */
	uint64_t pid_max;      /* kernel.pid_max; 0: unknown */
};

/* This host's limits; a part that cannot be read is 0 (not checked). */
void acct_host_limits_get(struct acct_host_limits *ret);

/* Check the three budgets of `c` (and its fast_interval) against `h`.
 * Returns 0, or -ERANGE with *ret_key the key refused ("bytes_budget",
 * static) and *ret_reason why, naming the limit and the host's value
 * ("1T is more than the host's memory (7.7G): ...", malloc()ed); -ENOMEM. */
int acct_budget_limits_check(const struct acct_config *c, const struct acct_host_limits *h, const char **ret_key,
			     char **ret_reason);
