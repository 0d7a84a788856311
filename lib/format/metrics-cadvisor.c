/* metrics-cadvisor.c - cAdvisor's families on the /metrics page (group
 * cadvisor, off by default): acctd's quantities under the names, types,
 * units and labels of cAdvisor's metrics/prometheus.go, so that dashboards
 * and alert rules written for cAdvisor work unchanged; a value acctd does not
 * have on a layout is absent, never 0. The cgroup's label is id, as
 * cAdvisor's (metrics_line()). See docs/metrics.md, "cAdvisor's families". */
#include <stdio.h>

#include "basic/util.h"
#include "metrics-render-internal.h"

const char *const metrics_cadvisor_memstat_keys[_CADVISOR_MEMSTAT_MAX][2] = {
	[CADVISOR_RSS] = { "total_rss", "anon" },
	[CADVISOR_CACHE] = { "total_cache", "file" },
	[CADVISOR_MAPPED_FILE] = { "total_mapped_file", "file_mapped" },
};

/* cAdvisor shows the CFS families only for a cgroup with a CPU quota; acctd
 * does not read the quota, but periods elapse only under one: a cgroup
 * whose bandwidth control never ran (nr_periods 0) has none. */
static void cg_cadvisor_cfs(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (known(r, ACCT_Q_CPU_PERIODS) && r->q[ACCT_Q_CPU_PERIODS] > 0)
		metrics_cg_quantities(p, f, r);
}

/* container_spec_*: cAdvisor writes 0 for no limit. */
static void cg_cadvisor_limit(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	enum acct_quantity q = f->series[0].q;
	if (known(r, q))
		sample_i64(p, f, r, NULL, 0, MAX(r->q[q], 0));
}

/* container_fs_*: per device, device="/dev/NAME" as cAdvisor names it (the
 * kernel's name from sysfs); a device without one is /dev/block/MAJ:MIN,
 * udev's link to it, so that two such devices stay two series. f->param:
 * the enum acct_io_stat shown. */
static void cg_cadvisor_fs(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (uint32_t i = 0; i < r->nr_io; i++) {
		const struct io_slot *s = &p->io[r->io_at + i];
		if (s->v[f->param] < 0)
			continue;
		char dev[ACCT_IO_NAME_MAX + 32];
		if (s->device->name[0])
			snprintf(dev, sizeof(dev), "/dev/%s", s->device->name);
		else
			snprintf(dev, sizeof(dev), "/dev/block/%u:%u", s->device->major, s->device->minor);
		struct lbl l = { "device", dev };
		sample_i64(p, f, r, &l, 1, s->v[f->param]);
	}
}

#define QTY(q_) SERIES({ .q = (q_) })
#define MEMSTAT(k) SERIES({ .v = FIELD(struct row, cadvisor_memstat[k], SRC_ROW, V_I64, .flags = F_NONNEG) })
#define K(name_, type_, unit_, help_, ...)                                                                 \
	{ .name = (name_), .type = (type_), .rows = ROWS_LIVE, .group = ACCT_MF_CADVISOR, .unit = (unit_), \
	  .help = (help_), __VA_ARGS__ }

const struct fam metrics_cadvisor_families[] = {
	/* cAdvisor without per-CPU usage (its default) writes one series, cpu="total" */
	K("container_cpu_usage_seconds", T_COUNTER, "seconds", "Cumulative CPU time consumed (cpu=total), hierarchical.",
	  .cg = metrics_cg_quantities, SERIES({ .q = ACCT_Q_CPU_USAGE, .l = { { "cpu", "total" } } })),
	K("container_cpu_user_seconds", T_COUNTER, "seconds", "Cumulative user CPU time consumed.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_CPU_USER)),
	K("container_cpu_system_seconds", T_COUNTER, "seconds", "Cumulative system CPU time consumed.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_CPU_SYSTEM)),
	K("container_cpu_cfs_periods", T_COUNTER, NULL, "Number of elapsed CFS enforcement periods.", .cg = cg_cadvisor_cfs,
	  QTY(ACCT_Q_CPU_PERIODS)),
	K("container_cpu_cfs_throttled_periods", T_COUNTER, NULL, "Number of throttled CFS periods.",
	  .cg = cg_cadvisor_cfs, QTY(ACCT_Q_CPU_THROTTLED_PERIODS)),
	K("container_cpu_cfs_throttled_seconds", T_COUNTER, "seconds", "Total time the cgroup was throttled.",
	  .cg = cg_cadvisor_cfs, QTY(ACCT_Q_CPU_THROTTLED)),
	K("container_memory_usage_bytes", T_GAUGE, "bytes",
	  "Current memory usage, including all memory regardless of when it was accessed.", .cg = metrics_cg_quantities,
	  QTY(ACCT_Q_MEMORY)),
	K("container_memory_working_set_bytes", T_GAUGE, "bytes", "Current working set: usage minus inactive_file.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_WORKING_SET)),
	K("container_memory_max_usage_bytes", T_GAUGE, "bytes", "Maximum memory usage recorded.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_MEMORY_PEAK)),
	K("container_memory_rss", T_GAUGE, NULL, "Size of RSS in bytes (memory.stat total_rss, v2 anon).",
	  .cg = metrics_cg_fields, MEMSTAT(CADVISOR_RSS)),
	K("container_memory_cache", T_GAUGE, NULL, "Page cache in bytes (memory.stat total_cache, v2 file).",
	  .cg = metrics_cg_fields, MEMSTAT(CADVISOR_CACHE)),
	K("container_memory_mapped_file", T_GAUGE, NULL,
	  "Size of memory mapped files in bytes (memory.stat total_mapped_file, v2 file_mapped).",
	  .cg = metrics_cg_fields, MEMSTAT(CADVISOR_MAPPED_FILE)),
	K("container_memory_swap", T_GAUGE, NULL, "Swap usage in bytes.", .cg = metrics_cg_quantities, QTY(ACCT_Q_SWAP)),
	/* a counter in cAdvisor, but without _total, which OpenMetrics requires of
	 * a counter's samples: a gauge keeps the name dashboards query */
	K("container_memory_failcnt", T_GAUGE, NULL,
	  "Number of times memory usage hit its limit (v1 memory.failcnt, v2 memory.events max).",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_MEMORY_EVENTS_MAX)),
	K("container_oom_events", T_COUNTER, NULL, "Count of processes killed by the OOM killer in the cgroup.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_MEMORY_EVENTS_OOM_KILL)),
	K("container_spec_memory_limit_bytes", T_GAUGE, "bytes", "Memory limit; 0 when unlimited.",
	  .cg = cg_cadvisor_limit, QTY(ACCT_Q_MEMORY_MAX)),
	K("container_spec_memory_swap_limit_bytes", T_GAUGE, "bytes", "Swap limit; 0 when unlimited.",
	  .cg = cg_cadvisor_limit, QTY(ACCT_Q_SWAP_MAX)),
	K("container_fs_reads_bytes", T_COUNTER, "bytes", "Cumulative count of bytes read, per device.",
	  .cg = cg_cadvisor_fs, .param = ACCT_IO_READ_BYTES),
	K("container_fs_writes_bytes", T_COUNTER, "bytes", "Cumulative count of bytes written, per device.",
	  .cg = cg_cadvisor_fs, .param = ACCT_IO_WRITE_BYTES),
	K("container_fs_reads", T_COUNTER, NULL, "Cumulative count of reads completed, per device.",
	  .cg = cg_cadvisor_fs, .param = ACCT_IO_READ_IOS),
	K("container_fs_writes", T_COUNTER, NULL, "Cumulative count of writes completed, per device.",
	  .cg = cg_cadvisor_fs, .param = ACCT_IO_WRITE_IOS),
	K("container_threads", T_GAUGE, NULL, "Number of threads in the cgroup and its descendants.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_TASKS)),
};
const size_t metrics_cadvisor_families_n = ELEMENTSOF(metrics_cadvisor_families);
_Static_assert(ELEMENTSOF(metrics_cadvisor_families) <= METRICS_CADVISOR_FAMILIES_MAX,
	       "METRICS_CADVISOR_FAMILIES_MAX");
