/* budget-limits.c - the error budgets against the host (budget-limits.h). */
#include "budget-limits.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/format-human.h"
#include "basic/util.h"
#include "config.h"

void acct_host_limits_get(struct acct_host_limits *ret)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE), cpus = sysconf(_SC_NPROCESSORS_CONF);
	unsigned long long pid_max = 0;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (f) {
		if (fscanf(f, "%llu", &pid_max) != 1)
			pid_max = 0;
		fclose(f);
	}
	*ret = (struct acct_host_limits){
		.memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0,
		.cpus = cpus > 0 ? (uint64_t)cpus : 0,
		.pid_max = pid_max,
	};
}

enum budget_unit { U_BYTES, U_USEC, U_COUNT };

static char *format_value(enum budget_unit u, uint64_t v, char buf[static FORMAT_HUMAN_MAX])
{
	int64_t x = v > INT64_MAX ? INT64_MAX : (int64_t)v;

	switch (u) {
	case U_BYTES:
		return format_bytes(buf, x);
	case U_USEC:
		return format_duration(buf, x);
	default:
		snprintf(buf, FORMAT_HUMAN_MAX, "%" PRId64, x);
		return buf;
	}
}

int acct_budget_limits_check(const struct acct_config *c, const struct acct_host_limits *h, const char **ret_key,
			     char **ret_reason)
{
	uint64_t cpu_limit = h->cpus > 0 && c->fast_interval_us <= UINT64_MAX / h->cpus ? h->cpus * c->fast_interval_us
										       : 0;
	/* What each budget is checked against, named in the refusal with the
	 * host's value. */
	const struct {
		const char *key;
		enum budget_unit unit;
		int64_t budget;
		uint64_t limit;
		const char *limit_name, *why;
	} checks[] = {
		{ "bytes_budget", U_BYTES, c->bytes_budget, h->memory_bytes, "the host's memory",
		  "every memory bound would be larger than all the memory there is" },
		{ "cpu_budget", U_USEC, c->cpu_budget_us, cpu_limit, "the CPU time the host can use in one fast_interval",
		  "every CPU rate's bound would exceed the whole host" },
		{ "tasks_budget", U_COUNT, c->tasks_budget, h->pid_max, "the host's kernel.pid_max",
		  "no cgroup can hold that many tasks" },
	};

	for (size_t i = 0; i < ELEMENTSOF(checks); i++) {
		char v[FORMAT_HUMAN_MAX], l[FORMAT_HUMAN_MAX];

		if (checks[i].limit == 0 || checks[i].budget <= 0 || (uint64_t)checks[i].budget <= checks[i].limit)
			continue;
		if (asprintf(ret_reason, "%s is more than %s (%s): %s",
			     format_value(checks[i].unit, (uint64_t)checks[i].budget, v), checks[i].limit_name,
			     format_value(checks[i].unit, checks[i].limit, l), checks[i].why) < 0)
			return -ENOMEM;
		*ret_key = checks[i].key;
		return -ERANGE;
	}
	return 0;
}
