/* metrics-families.h - the names of the /metrics family groups that the
 * configuration ([metrics] families), the family= query parameter and the
 * renderer (format/metrics-render.h) share. Here, below both, so that the
 * configuration can check a name without depending on the renderer. */
#pragma once

#include <stddef.h>

#include <stdint.h>

/* Groups of families that can be switched on and off (config [metrics]
 * families, the query parameter family=). acctd's own families (build info,
 * passes, errors, reconciliation, reloads, API, HTTP) are always on. */
enum acct_metrics_family {
	ACCT_MF_MEMORY,        /* memory in use, working set, peak, limits, swap */
	ACCT_MF_MEMORY_STAT,   /* memory.stat sizes by type (bytes) */
	ACCT_MF_MEMORY_EVENTS, /* memory.stat event counters (pgfault, ...) */
	ACCT_MF_NUMA,          /* memory per NUMA node */
	ACCT_MF_CPU,           /* CPU time, periods, throttling */
	ACCT_MF_PRESSURE,      /* PSI stall time totals */
	ACCT_MF_PRESSURE_AVG,  /* PSI 10/60/300 s averages */
	ACCT_MF_LOAD,          /* load averages, tasks */
	ACCT_MF_CPU_RATE,      /* CPU rate (cores) and its 1/5/15 min averages */
	ACCT_MF_ACCURACY,      /* ages, error bounds, per-cgroup sample errors */
	ACCT_MF_ENGINE,        /* the counter engine and its tuner (domain totals) */
	ACCT_MF_ENGINE_KINDS,  /* the ledger's counters by kind: a walk over every counter */
	ACCT_MF_PROCESS,       /* process_* of acctd itself */
	ACCT_MF_IO,            /* block I/O bytes and operations, summed over devices */
	ACCT_MF_IO_DEVICES,    /* block I/O per device */
	ACCT_MF_IO_RATE,       /* block I/O per second over the last fast interval */
	ACCT_MF_REMOVED,       /* final values of removed cgroups (tombstones), in their own families */
	ACCT_MF_CADVISOR,      /* cAdvisor's container_* names for the same values, label id */
	ACCT_MF_IDENTITY,      /* acctd_cgroup_info: the service, pod and container a cgroup is (fleet queries) */
	_ACCT_MF_MAX,
};

/* What is derivable with rate() from a default family is off by default
 * (pressure averages, CPU and I/O rates), and so are the memory.stat event counters
 * and the per-kind counter statistics (a cache miss per counter: ~20 per
 * cgroup), and the cAdvisor names (the default families' values again, ~20
 * series per cgroup, for dashboards written for cAdvisor). */
#define ACCT_METRICS_FAMILIES_ALL ((1u << _ACCT_MF_MAX) - 1)
#define ACCT_METRICS_FAMILIES_DEFAULT                                                                   \
	(ACCT_METRICS_FAMILIES_ALL & ~((1u << ACCT_MF_MEMORY_EVENTS) | (1u << ACCT_MF_PRESSURE_AVG) | \
				       (1u << ACCT_MF_CPU_RATE) | (1u << ACCT_MF_ENGINE_KINDS) | (1u << ACCT_MF_IO_RATE) | \
				       (1u << ACCT_MF_CADVISOR)))

const char *acct_metrics_family_to_string(enum acct_metrics_family f);
/* The family named `s`, or -ENOENT if there is none. */
int acct_metrics_family_from_string(const char *s);
/* Every word acct_metrics_families_apply() takes, "memory, memory_stat, ...,
 * all, default, none", into buf (cut to size, NUL-terminated): for a
 * refusal that says what is accepted. Returns buf. */
char *acct_metrics_family_names(char *buf, size_t size);

/* Apply a list of words to a family set, in order: "all", "default", "none",
 * a family name (adds it), "-name" (removes it), "+name" (adds it). Returns 0
 * or -EINVAL (*ret_bad, if not NULL, points at the word); *set is unchanged
 * on error. */
int acct_metrics_families_apply(uint32_t *set, char *const *words, const char **ret_bad);
