/* metrics-render.c - the ledger as a Prometheus text (0.0.4) or OpenMetrics
 * (1.0) page, rendered in steps (see metrics-render.h): the page's copy of
 * the ledger, the lines, the per-cgroup families and the order of the parts
 * (acctd's own families: metrics-self.c; cAdvisor's: metrics-cadvisor.c).
 *
 * Speed matters here (10,000 cgroups make a page of tens of megabytes), so
 * lines are assembled with memcpy and hand-written number formatting
 * (text-buf.h) into one growing buffer, the cgroup label is escaped only for
 * paths that need it, and filters are applied once per snapshot, not once
 * per line. */
#include "metrics-render.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/name-escape.h"
#include "basic/strv.h"
#include "basic/text-buf.h"
#include "basic/util.h"
#include "cgroup/cgroup-identity.h"
#include "metrics-render-internal.h"

/* ---- family sets and options ------------------------------------------------ */

/* The breakdown of memory in use (v2: anon + file + kernel + sock, and the
 * parts of them people watch; v1: cache + rss and theirs), not all ~30 keys:
 * at 10,000 cgroups every key is 10,000 series. */
char *const acct_metrics_default_memory_stat_types[] = {
	"anon", "file", "kernel", "sock", "shmem", "slab", "file_mapped", "file_dirty", "file_writeback", /* v2 */
	"cache", "rss", "rss_huge", "mapped_file", "dirty", "writeback", "swap",                          /* v1 */
	NULL,
};

void acct_metrics_options_default(struct acct_metrics_options *o)
{
	*o = (struct acct_metrics_options){
		.format = ACCT_METRICS_TEXT,
		.max_depth = 32,
		.memory_stat_types = acct_metrics_default_memory_stat_types,
		.families = ACCT_METRICS_FAMILIES_DEFAULT,
		.cut_hint = INT_MAX,
	};
}

/* ---- memory.stat keys ---------------------------------------------------------- */

enum acct_memstat_class acct_memstat_classify(const char *key)
{
	/* Event counters: page-level events, THP events, workingset refaults and
	 * activations, NUMA balancing, (z)swap-ins and -outs. Everything else in
	 * memory.stat (v1 and v2) is a size in bytes, except the two v1 limits and
	 * workingset_nodes (a count of radix-tree nodes). */
	static const char *const skip[] = { "hierarchical_memory_limit", "hierarchical_memsw_limit",
					    "workingset_nodes" };
	static const char *const event_prefixes[] = { "pg", "thp_", "workingset_", "numa_", "zswpin",
						      "zswpout", "zswpwb", "pswpin", "pswpout", "swpin_",
						      "swpout_" };

	for (size_t i = 0; i < ELEMENTSOF(skip); i++)
		if (strcmp(key, skip[i]) == 0)
			return ACCT_MEMSTAT_SKIP;
	for (size_t i = 0; i < ELEMENTSOF(event_prefixes); i++)
		if (strncmp(key, event_prefixes[i], strlen(event_prefixes[i])) == 0)
			return ACCT_MEMSTAT_EVENTS;
	return ACCT_MEMSTAT_BYTES;
}

/* ---- number formatting ------------------------------------------------------------ */

/* The kernel's fixed-point load average (11 fractional bits), exactly:
 * 1/2048 = 0.00048828125, so 11 decimals always suffice. */
static char *put_load(char *o, unsigned long v)
{
	o = text_put_u64(o, v >> 11);
	return text_put_fraction(o, (uint64_t)(v & 2047) * 48828125u, 11);
}

/* ---- per-cgroup families -------------------------------------------------------- */

/* memory.stat values of the class f->param (enum acct_memstat_class). */
static void cg_memstat(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	const char *label = f->param == ACCT_MEMSTAT_BYTES ? "type" : "event";

	if (r->memstat_at == UINT32_MAX)
		return;
	for (unsigned i = 0; i < p->nr_slots; i++) {
		int64_t v = p->mvals[r->memstat_at + i];
		if (p->slots[i].cls != f->param || v < 0)
			continue;
		struct lbl l = { label, p->slots[i].name };
		sample_i64(p, f, r, &l, 1, v);
	}
}

static void cg_numa(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (unsigned n = 0; n < r->nr_numa; n++) {
		char node[12];
		snprintf(node, sizeof(node), "%u", n);
		struct lbl l = { "node", node };
		sample_i64(p, f, r, &l, 1, p->numa[r->numa_at + n]);
	}
}

static const char *const psi_resources[_ACCT_PSI_MAX] = { "cpu", "memory", "io" };
static const char *const psi_kinds[_ACCT_PSI_KIND_MAX] = { "some", "full" };

static enum acct_quantity psi_total(int r, int k)
{
	return (enum acct_quantity)(ACCT_Q_PSI_CPU_SOME + 2 * r + k);
}

static void cg_psi_averages(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	static const char *const windows[3] = { "10s", "60s", "300s" };

	for (int res = 0; res < _ACCT_PSI_MAX; res++) {
		if (!(r->psi_known & (1u << res)))
			continue;
		for (int k = 0; k < _ACCT_PSI_KIND_MAX; k++) {
			if (!known(r, psi_total(res, k)))
				continue;
			for (int a = 0; a < 3; a++) {
				struct lbl l[3] = { { "resource", psi_resources[res] }, { "kind", psi_kinds[k] },
						    { "window", windows[a] } };
				/* hundredths of a percent -> ratio */
				sample_fixed(p, f, r, l, 3, r->psi_avg[res][k][a], 4);
			}
		}
	}
}

static void cg_load(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	static const char *const minute_windows[3] = { "1m", "5m", "15m" };

	if (r->age[ACCT_GROUP_LOAD] == UINT64_MAX)
		return;
	for (int i = 0; i < 3; i++) {
		struct lbl l = { "window", minute_windows[i] };
		char *o = metrics_line(p, f, "", r, &l, 1);
		if (o)
			end_line(p, put_load(o, r->loadavg[i]));
	}
}

static void cg_ages(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	static const char *const groups[_ACCT_GROUP_MAX] = { "fast", "slow", "load", "pressure" };

	for (int g = 0; g < _ACCT_GROUP_MAX; g++) {
		if (r->age[g] == UINT64_MAX)
			continue;
		struct lbl l = { "group", groups[g] };
		sample_fixed(p, f, r, &l, 1, (int64_t)MIN(r->age[g], (uint64_t)INT64_MAX), 6);
	}
}

/* Error bounds of the quantities of one unit (f->param, enum acct_unit),
 * where not zero. */
static void cg_bounds(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (!r->bounded)
		return;
	for (int q = 0; q < _ACCT_Q_MAX; q++) {
		const struct acct_quantity_info *qi = acct_quantity_info((enum acct_quantity)q);
		if ((int)qi->unit != f->param || !(r->bounded & (1ull << q)))
			continue;
		struct lbl l = { "quantity", qi->name };
		uint64_t b = p->bounds[r->bounds_at + (unsigned)q];
		sample_fixed(p, f, r, &l, 1, (int64_t)MIN(b, (uint64_t)INT64_MAX), unit_decimals((enum acct_quantity)q));
	}
}

/* acctd_cgroup_info: the service, pod and container the cgroup is
 * (cgroup-identity.h), for cgroups that are one and were read; live and
 * removed alike, so that a removed cgroup's final values join with it too. */
static void cg_identity(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	struct acct_cgroup_identity id;
	struct lbl l[3];
	size_t n = 0;

	/* a cgroup never read has no series at all (nothing to join with) */
	if (!r->known || !acct_cgroup_identity(p->arena + r->path, &id))
		return;
	/* a removed cgroup's, only where its removed_ families are on the page */
	if (r->dead && !(p->opts.families & (1u << ACCT_MF_REMOVED)))
		return;
	if (id.service[0])
		l[n++] = (struct lbl){ "service", id.service };
	if (id.pod[0])
		l[n++] = (struct lbl){ "pod", id.pod };
	if (id.container[0])
		l[n++] = (struct lbl){ "container", id.container };
	sample_u64(p, f, sample_suffix(f), r, l, n, 1);
}

static void cg_removed_age(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	sample_fixed(p, f, r, NULL, 0, (int64_t)(p->now_us > r->died_us ? p->now_us - r->died_us : 0), 6);
}

/* ---- block I/O ---------------------------------------------------------------------- */

static const char *const io_operations[_ACCT_IO_STAT_MAX] = { "read", "write", "read", "write", "discard", "discard" };

/* The kinds of I/O stat (f->param) of the I/O families. */
enum { IO_BYTES, IO_OPS };

static bool io_stat_is(enum acct_io_stat k, int ops)
{
	bool is_ops = k == ACCT_IO_READ_IOS || k == ACCT_IO_WRITE_IOS || k == ACCT_IO_DISCARD_IOS;
	return is_ops == (ops != 0);
}

static void cg_io_devices(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (uint32_t i = 0; i < r->nr_io; i++) {
		const struct io_slot *s = &p->io[r->io_at + i];
		char dev[32];
		snprintf(dev, sizeof(dev), "%u:%u", s->device->major, s->device->minor);
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
			if (!io_stat_is((enum acct_io_stat)k, f->param) || s->v[k] < 0)
				continue;
			struct lbl l[3] = { { "device", dev }, { "operation", io_operations[k] },
					    { "device_name", s->device->name } };
			sample_i64(p, f, r, l, s->device->name[0] ? 3 : 2, s->v[k]);
		}
	}
}

static void cg_io_rate(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (!r->io_rate_known)
		return;
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
		if (!io_stat_is((enum acct_io_stat)k, f->param) || !known(r, acct_io_stat_quantity((enum acct_io_stat)k)))
			continue;
		struct lbl l = { "operation", io_operations[k] };
		sample_double(p, f, "", r, &l, 1, r->io_rate[k]);
	}
}

/* ---- what the cut left out ------------------------------------------------------------- */

/* acctd_metrics_cgroups_left_out (param 0) and _series_left_out (1). The
 * first also says it in a comment line, for a person reading the page with
 * curl; the text format only, since OpenMetrics allows no comments but
 * HELP, TYPE, UNIT and EOF. */
static void g_left_out(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_cut *c = &p->cut;

	if (f->param == 0 && c->cgroups && !p->om) {
		char line[384];
		int n;
		if (c->depth_shown >= 0)
			n = snprintf(line, sizeof(line),
				     "# acctd: %" PRIu64 " cgroups below depth %d (%" PRIu64 " series) left out of this "
				     "page by [metrics] max_series = %u; ask for them with ?max_depth=N or ?cgroup=GLOB\n",
				     c->cgroups, c->depth_shown, c->series, p->opts.max_series);
		else
			n = snprintf(line, sizeof(line),
				     "# acctd: all %" PRIu64 " cgroups (%" PRIu64 " series) left out of this page by "
				     "[metrics] max_series = %u; ask for them with ?max_depth=N or ?cgroup=GLOB\n",
				     c->cgroups, c->series, p->opts.max_series);
		char *o = text_buf_reserve(&p->w, sizeof(line));
		if (o)
			text_buf_commit(&p->w, text_put_mem(o, line, (size_t)MIN(n, (int)sizeof(line) - 1)));
	}
	sample_u64(p, f, "", NULL, NULL, 0, f->param == 0 ? c->cgroups : c->series);
}

/* ---- the per-cgroup families, in page order ------------------------------------------- */

#define QTY(q_) SERIES({ .q = (q_) })
#define ROW_FIELD(member, kind, ...) FIELD(struct row, member, SRC_ROW, kind, __VA_ARGS__)
#define R(name_, type_, unit_, help_, ...)                                                                   \
	{ .name = (name_), .type = (type_), .rows = ROWS_REMOVED, .group = ACCT_MF_REMOVED, .unit = (unit_), \
	  .help = (help_), __VA_ARGS__ }
#define C(name_, type_, group_, unit_, help_, ...)                                                        \
	{ .name = (name_), .type = (type_), .rows = ROWS_LIVE, .group = (group_), .unit = (unit_), .help = (help_), \
	  __VA_ARGS__ }

static const struct fam cgroup_families[] = {
	/* What the max_series cut left out of this page (cut_levels()). */
	C("acctd_metrics_cgroups_left_out", T_GAUGE, -1, NULL,
	  "Cgroups left out of this page by [metrics] max_series (whole levels, deepest first); "
	  "?max_depth=N or ?cgroup=GLOB shows them.",
	  .global = g_left_out, .param = 0),
	C("acctd_metrics_series_left_out", T_GAUGE, -1, NULL,
	  "Per-cgroup series left out of this page by [metrics] max_series.", .global = g_left_out, .param = 1),
	/* Removed cgroups (tombstones), kept until [cgroups] tombstone_retention ends. */
	R("acctd_removed_cgroup_age_seconds", T_GAUGE, "seconds",
	  "Seconds since the cgroup was removed; its removed_ series go when tombstone_retention ends.",
	  .cg = cg_removed_age),
	R("acctd_removed_cgroup_cpu_usage_seconds", T_COUNTER, "seconds",
	  "CPU time the removed cgroup used, hierarchical: its last reading.", .cg = metrics_cg_quantities,
	  QTY(ACCT_Q_CPU_USAGE)),
	R("acctd_removed_cgroup_memory_peak_bytes", T_GAUGE, "bytes",
	  "Highest memory in use the kernel saw in the removed cgroup: its last reading.", .cg = metrics_cg_quantities,
	  QTY(ACCT_Q_MEMORY_PEAK)),
	R("acctd_removed_cgroup_io_bytes", T_COUNTER, "bytes",
	  "Block I/O bytes the removed cgroup did, hierarchical, by operation: its last reading.",
	  .cg = metrics_cg_quantities,
	  SERIES({ .q = ACCT_Q_IO_READ_BYTES, .l = { { "operation", "read" } } },
		 { .q = ACCT_Q_IO_WRITE_BYTES, .l = { { "operation", "write" } } },
		 { .q = ACCT_Q_IO_DISCARD_BYTES, .l = { { "operation", "discard" } } })),
	/* What names a cgroup, live or removed: fleet queries join on it
	 * (docs/fleet.md). Only cgroups that are a unit, pod or container. */
	{ .name = "acctd_cgroup", .type = T_INFO, .rows = ROWS_ALL, .group = ACCT_MF_IDENTITY,
	  .help = "The systemd unit (service), or the Kubernetes pod and container, that the cgroup is; "
		  "for cgroups that are one, live or removed.",
	  .cg = cg_identity },

	/* Per live cgroup. */
	C("acctd_memory_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes",
	  "Memory in use, hierarchical: memory.current (v2), memory.usage_in_bytes (v1).", .cg = metrics_cg_quantities,
	  QTY(ACCT_Q_MEMORY)),
	C("acctd_memory_working_set_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes",
	  "Memory in use minus inactive page cache (cAdvisor's working set).", .cg = metrics_cg_quantities,
	  QTY(ACCT_Q_WORKING_SET)),
	C("acctd_memory_peak_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes",
	  "Highest memory in use seen by the kernel: memory.peak (v2), memory.max_usage_in_bytes (v1).",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_MEMORY_PEAK)),
	C("acctd_memory_limit_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes",
	  "Memory limits: max (memory.max, memory.limit_in_bytes) and high (v2); absent when unlimited.",
	  .cg = metrics_cg_quantities,
	  SERIES({ .q = ACCT_Q_MEMORY_MAX, .l = { { "limit", "max" } } },
		 { .q = ACCT_Q_MEMORY_HIGH, .l = { { "limit", "high" } } })),
	C("acctd_memory_swap_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes", "Swap in use.", .cg = metrics_cg_quantities,
	  QTY(ACCT_Q_SWAP)),
	C("acctd_memory_swap_limit_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes", "Swap limit; absent when unlimited.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_SWAP_MAX)),
	C("acctd_memory_stat_bytes", T_GAUGE, ACCT_MF_MEMORY_STAT, "bytes",
	  "memory.stat sizes by type, hierarchical (v1: the total_ keys, named without the prefix).", .cg = cg_memstat,
	  .param = ACCT_MEMSTAT_BYTES),
	C("acctd_memory_stat_events", T_COUNTER, ACCT_MF_MEMORY_EVENTS, NULL,
	  "memory.stat event counters (page faults, reclaim scans, refaults, ...).", .cg = cg_memstat,
	  .param = ACCT_MEMSTAT_EVENTS),
	C("acctd_memory_numa_bytes", T_GAUGE, ACCT_MF_NUMA, "bytes", "Memory per NUMA node (memory.numa_stat).",
	  .cg = cg_numa),
	C("acctd_cpu_usage_seconds", T_COUNTER, ACCT_MF_CPU, "seconds", "CPU time used, hierarchical.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_CPU_USAGE)),
	C("acctd_cpu_user_seconds", T_COUNTER, ACCT_MF_CPU, "seconds", "CPU time used in user mode.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_CPU_USER)),
	C("acctd_cpu_system_seconds", T_COUNTER, ACCT_MF_CPU, "seconds", "CPU time used in kernel mode.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_CPU_SYSTEM)),
	C("acctd_cpu_periods", T_COUNTER, ACCT_MF_CPU, NULL, "CFS bandwidth periods elapsed.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_CPU_PERIODS)),
	C("acctd_cpu_throttled_periods", T_COUNTER, ACCT_MF_CPU, NULL, "CFS bandwidth periods in which it was throttled.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_CPU_THROTTLED_PERIODS)),
	C("acctd_cpu_throttled_seconds", T_COUNTER, ACCT_MF_CPU, "seconds", "Time throttled by CFS bandwidth control.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_CPU_THROTTLED)),
	C("acctd_memory_events", T_COUNTER, ACCT_MF_MEMORY, NULL,
	  "Memory events, hierarchical: memory.events (v2); v1: memory.failcnt as max, memory.oom_control's oom_kill.",
	  .cg = metrics_cg_quantities,
	  SERIES({ .q = ACCT_Q_MEMORY_EVENTS_LOW, .l = { { "event", "low" } } },
		 { .q = ACCT_Q_MEMORY_EVENTS_HIGH, .l = { { "event", "high" } } },
		 { .q = ACCT_Q_MEMORY_EVENTS_MAX, .l = { { "event", "max" } } },
		 { .q = ACCT_Q_MEMORY_EVENTS_OOM, .l = { { "event", "oom" } } },
		 { .q = ACCT_Q_MEMORY_EVENTS_OOM_KILL, .l = { { "event", "oom_kill" } } },
		 { .q = ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL, .l = { { "event", "oom_group_kill" } } })),
	C("acctd_memory_under_oom", T_GAUGE, ACCT_MF_MEMORY, NULL,
	  "1 while the cgroup is under OOM with the OOM killer disabled (v1 memory.oom_control under_oom).",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_MEMORY_UNDER_OOM)),
	C("acctd_io_bytes", T_COUNTER, ACCT_MF_IO, "bytes",
	  "Block I/O bytes by operation, hierarchical, summed over the devices: io.stat (v2), "
	  "blkio.throttle.io_service_bytes_recursive (v1).",
	  .cg = metrics_cg_quantities,
	  SERIES({ .q = ACCT_Q_IO_READ_BYTES, .l = { { "operation", "read" } } },
		 { .q = ACCT_Q_IO_WRITE_BYTES, .l = { { "operation", "write" } } },
		 { .q = ACCT_Q_IO_DISCARD_BYTES, .l = { { "operation", "discard" } } })),
	C("acctd_io_operations", T_COUNTER, ACCT_MF_IO, NULL,
	  "Block I/O operations by operation, summed over the devices: io.stat (v2), "
	  "blkio.throttle.io_serviced_recursive (v1).",
	  .cg = metrics_cg_quantities,
	  SERIES({ .q = ACCT_Q_IO_READ_IOS, .l = { { "operation", "read" } } },
		 { .q = ACCT_Q_IO_WRITE_IOS, .l = { { "operation", "write" } } },
		 { .q = ACCT_Q_IO_DISCARD_IOS, .l = { { "operation", "discard" } } })),
	C("acctd_io_device_bytes", T_COUNTER, ACCT_MF_IO_DEVICES, "bytes",
	  "Block I/O bytes per device (device=MAJ:MIN, device_name from sysfs) and operation.", .cg = cg_io_devices,
	  .param = IO_BYTES),
	C("acctd_io_device_operations", T_COUNTER, ACCT_MF_IO_DEVICES, NULL,
	  "Block I/O operations per device and operation.", .cg = cg_io_devices, .param = IO_OPS),
	C("acctd_io_rate_bytes_per_second", T_GAUGE, ACCT_MF_IO_RATE, "bytes_per_second",
	  "Block I/O bytes per second over the last fast interval, by operation (systemd-cgtop's Input/s, Output/s).",
	  .cg = cg_io_rate, .param = IO_BYTES),
	C("acctd_io_rate_operations_per_second", T_GAUGE, ACCT_MF_IO_RATE, NULL,
	  "Block I/O operations per second over the last fast interval, by operation.", .cg = cg_io_rate,
	  .param = IO_OPS),
	C("acctd_pressure_stalled_seconds", T_COUNTER, ACCT_MF_PRESSURE, "seconds",
	  "PSI: time some (or all, kind full) of the cgroup's tasks were stalled on a resource.",
	  .cg = metrics_cg_quantities,
	  SERIES({ .q = ACCT_Q_PSI_CPU_SOME, .l = { { "resource", "cpu" }, { "kind", "some" } } },
		 { .q = ACCT_Q_PSI_CPU_FULL, .l = { { "resource", "cpu" }, { "kind", "full" } } },
		 { .q = ACCT_Q_PSI_MEMORY_SOME, .l = { { "resource", "memory" }, { "kind", "some" } } },
		 { .q = ACCT_Q_PSI_MEMORY_FULL, .l = { { "resource", "memory" }, { "kind", "full" } } },
		 { .q = ACCT_Q_PSI_IO_SOME, .l = { { "resource", "io" }, { "kind", "some" } } },
		 { .q = ACCT_Q_PSI_IO_FULL, .l = { { "resource", "io" }, { "kind", "full" } } })),
	C("acctd_pressure_stalled_ratio", T_GAUGE, ACCT_MF_PRESSURE_AVG, "ratio",
	  "PSI averages over 10, 60 and 300 s as a ratio (the kernel's percentage / 100).", .cg = cg_psi_averages),
	C("acctd_load_average", T_GAUGE, ACCT_MF_LOAD, NULL,
	  "Load average (runnable and uninterruptible threads) of the cgroup and its descendants over 1, 5 and 15 min.",
	  .cg = cg_load),
	C("acctd_tasks", T_GAUGE, ACCT_MF_LOAD, NULL, "Threads in the cgroup and its descendants.",
	  .cg = metrics_cg_quantities, QTY(ACCT_Q_TASKS)),
	C("acctd_cpu_rate_cores", T_GAUGE, ACCT_MF_CPU_RATE, "cores",
	  "CPU time used per wall-clock time over the last fast interval.", .cg = metrics_cg_fields,
	  SERIES({ .v = ROW_FIELD(cpu_rate, V_DOUBLE, .when = offsetof(struct row, cpu_rate_known)) })),
	C("acctd_cpu_rate_average_cores", T_GAUGE, ACCT_MF_CPU_RATE, "cores",
	  "Exponential 1, 5 and 15 min averages of the CPU rate.", .cg = metrics_cg_fields,
	  SERIES({ .v = ROW_FIELD(cpu_rate_avg[0], V_DOUBLE, .when = offsetof(struct row, cpu_rate_known)),
		   .l = { { "window", "1m" } } },
		 { .v = ROW_FIELD(cpu_rate_avg[1], V_DOUBLE, .when = offsetof(struct row, cpu_rate_known)),
		   .l = { { "window", "5m" } } },
		 { .v = ROW_FIELD(cpu_rate_avg[2], V_DOUBLE, .when = offsetof(struct row, cpu_rate_known)),
		   .l = { { "window", "15m" } } })),
	C("acctd_value_age_seconds", T_GAUGE, ACCT_MF_ACCURACY, "seconds",
	  "Time since the values of a group were read: fast (memory, CPU, PSI), slow (memory.stat, NUMA, peak, "
	  "limits, swap), load (load average, tasks).",
	  .cg = cg_ages),
	C("acctd_value_bound_bytes", T_GAUGE, ACCT_MF_ACCURACY, "bytes",
	  "Error bound of a byte value (|value - exact| <= bound); absent when 0.", .cg = cg_bounds,
	  .param = ACCT_UNIT_BYTES),
	C("acctd_value_bound_seconds", T_GAUGE, ACCT_MF_ACCURACY, "seconds",
	  "Error bound of a time value; absent when 0.", .cg = cg_bounds, .param = ACCT_UNIT_USEC),
	C("acctd_value_bound", T_GAUGE, ACCT_MF_ACCURACY, NULL, "Error bound of a count (tasks, periods); absent when 0.",
	  .cg = cg_bounds, .param = ACCT_UNIT_COUNT),
	C("acctd_cgroup_sample_errors", T_COUNTER, ACCT_MF_ACCURACY, NULL,
	  "Failed reads of the cgroup's files; absent while there were none.", .cg = metrics_cg_fields,
	  SERIES({ .v = ROW_FIELD(sample_errors, V_U64, .flags = F_POSITIVE) })),
};
_Static_assert(ELEMENTSOF(cgroup_families) <= METRICS_CGROUP_FAMILIES_MAX, "METRICS_CGROUP_FAMILIES_MAX");
_Static_assert(sizeof(struct row) <= UINT16_MAX, "struct field's offsets");
static const size_t cgroup_families_n = ELEMENTSOF(cgroup_families);

/* The page's parts, in page order: acctd's own families, the per-cgroup
 * ones, cAdvisor's names for the same values. */
static const struct {
	const struct fam *families;
	const size_t *n;
} page_parts[] = {
	{ metrics_self_families, &metrics_self_families_n },
	{ cgroup_families, &cgroup_families_n },
	{ metrics_cadvisor_families, &metrics_cadvisor_families_n },
};

/* ---- taking the page's copy of the ledger ----------------------------------------- */

/* As discovery filters: the include globs (and a scrape's cgroup= globs)
 * on the path, the exclude globs on the path and every ancestor. */
static bool wanted(const struct acct_metrics_options *o, const struct acct_cgroup *cg)
{
	if (cg->depth > o->max_depth)
		return false;
	if (o->include && !strv_fnmatch_any(o->include, cg->path))
		return false;
	if (o->select && !strv_fnmatch_any(o->select, cg->path))
		return false;
	if (!o->exclude || !o->exclude[0])
		return true;
	if (strv_fnmatch_any(o->exclude, cg->path) || strv_fnmatch_any(o->exclude, "/"))
		return false;
	size_t n = strlen(cg->path);
	char stack[512];
	char *buf = n < sizeof(stack) ? stack : malloc(n + 1);
	if (!buf)
		return true; /* no memory: err on exporting */
	memcpy(buf, cg->path, n + 1);
	bool hit = false;
	for (char *s = buf + 1; *s && !hit; s++)
		if (*s == '/') {
			*s = '\0';
			hit = strv_fnmatch_any(o->exclude, buf);
			*s = '/';
		}
	if (buf != stack)
		free(buf);
	return !hit;
}

/* Room for `more` elements of `size` bytes past *n in the array *v of
 * capacity *cap. */
static int grow(void **v, size_t *cap, size_t n, size_t more, size_t size)
{
	if (n + more <= *cap)
		return 0;
	size_t c = MAX(*cap * 2, n + more + 64);
	void *nv = reallocarray(*v, c, size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/* The memory.stat types on this page and the keys they come from. */
static void make_slots(struct acct_metrics_page *p, struct acct_ledger *l)
{
	bool bytes = p->opts.families & (1u << ACCT_MF_MEMORY_STAT);
	bool events = p->opts.families & (1u << ACCT_MF_MEMORY_EVENTS);
	unsigned nk = acct_ledger_memstat_count(l);

	p->nr_slots = 0;
	if (!bytes && !events)
		return;
	for (unsigned i = 0; i < nk; i++) {
		const char *k = acct_ledger_memstat_key(l, i);
		bool total = strncmp(k, "total_", 6) == 0;
		const char *name = total ? k + 6 : k;
		enum acct_memstat_class cls = acct_memstat_classify(name);
		if (cls == ACCT_MEMSTAT_SKIP || (cls == ACCT_MEMSTAT_BYTES && !bytes) ||
		    (cls == ACCT_MEMSTAT_EVENTS && !events))
			continue;
		if (cls == ACCT_MEMSTAT_BYTES && p->opts.memory_stat_types && !strv_fnmatch_any(p->opts.memory_stat_types, name))
			continue;
		unsigned s = 0;
		while (s < p->nr_slots && strcmp(p->slots[s].name, name) != 0)
			s++;
		if (s == p->nr_slots)
			p->slots[p->nr_slots++] = (struct slot){ .name = name, .cls = (uint8_t)cls, .total = -1, .local = -1 };
		if (total)
			p->slots[s].total = (int16_t)i;
		else
			p->slots[s].local = (int16_t)i;
	}
}

static void prefetch_record(const struct acct_cgroup *cg)
{
	for (size_t off = 0; off < sizeof(*cg); off += 64)
		__builtin_prefetch((const char *)cg + off);
}

/* A row's I/O rates and per-device values (the latter in cv only when their
 * families are on: gather()). */
static int gather_io(struct acct_metrics_page *p, struct acct_ledger *l, const struct acct_cgroup_values *cv,
		     struct row *row, size_t *n, size_t *cap)
{
	row->io_rate_known = cv->io_rate_known;
	for (int k = 0; row->io_rate_known && k < _ACCT_IO_STAT_MAX; k++)
		row->io_rate[k] = cv->io_rate[k];
	if (!cv->has_io || !(p->opts.families & ((1u << ACCT_MF_IO_DEVICES) | (1u << ACCT_MF_CADVISOR))))
		return 0;
	unsigned nd = cv->nr_io;
	int r = grow((void **)&p->io, cap, *n, nd, sizeof(*p->io));
	if (r < 0)
		return r;
	row->io_at = (uint32_t)*n;
	for (unsigned i = 0; i < nd; i++) {
		struct io_slot *s = &p->io[*n];
		s->device = acct_ledger_io_device(l, cv->io[i].device);
		if (!s->device)
			continue;
		memcpy(s->v, cv->io[i].v, sizeof(s->v));
		(*n)++;
		row->nr_io++;
	}
	return 0;
}

/* Copy what the page shows of every cgroup it shows, in one pass over the
 * ledger: records are visited once each, their counters (allocated side by
 * side) read together and fetched ahead, instead of once per family in page
 * order, a cache miss per value. The page then holds no pointer into the
 * ledger. */
/* Whether cg's label value is another cgroup's on this page. Two names can
 * serve one text (name-escape.h: the four characters \xff, and the byte ff,
 * which is not UTF-8; or \x1b and ESC), but a series must be unique; the
 * text names the literal one, as in the API's lookups, so the other is left
 * out. Only names that are not UTF-8 or hold controls pay for the lookup. Caller holds rcu_read_lock(). */
static bool label_taken(const struct acct_metrics_page *p, struct acct_ledger *l, const struct acct_cgroup *cg,
			size_t len)
{
	if (name_escape_span(cg->path, len, NAME_ESCAPE_TEXT) == len)
		return false;
	_cleanup_free_ char *text = name_escape(cg->path, NAME_ESCAPE_TEXT);
	const struct acct_cgroup *twin = text ? acct_ledger_find(l, text) : NULL;
	return twin && wanted(&p->opts, twin);
}

static int gather(struct acct_metrics_page *p, struct acct_ledger *l)
{
	_cleanup_free_ struct acct_cgroup **v = NULL;
	size_t arena_len = 0, arena_cap = 0, nb = 0, cap_b = 0, nm = 0, cap_m = 0, nn = 0, cap_n = 0, ni = 0, cap_io = 0;
	int n = acct_ledger_snapshot(l, true, &v);
	int r = 0;

	if (n < 0)
		return n;
	make_slots(p, l);
	/* the per-device values only where a family shows them */
	unsigned what = ACCT_READ_STATE | ACCT_READ_CPU_RATE | ACCT_READ_IO_RATE | ACCT_READ_LOAD | ACCT_READ_PSI |
			ACCT_READ_MEMORY | (p->opts.families & ((1u << ACCT_MF_IO_DEVICES) | (1u << ACCT_MF_CADVISOR)) ? ACCT_READ_IO : 0);
	p->rows = calloc(MAX((size_t)n, 1), sizeof(*p->rows));
	if (!p->rows)
		return -ENOMEM;
	for (int i = 0; i < n && r == 0; i++) {
		if (i + 8 < n)
			prefetch_record(v[i + 8]);
		if (i + 4 < n)
			acct_cgroup_prefetch_values(v[i + 4]);
		const struct acct_cgroup *cg = v[i];
		/* One record per path: the live one, sorted first, else the newest tombstone. */
		if ((i > 0 && strcmp(cg->path, v[i - 1]->path) == 0) || !wanted(&p->opts, cg))
			continue;

		size_t len = strlen(cg->path);
		if (unlikely(label_taken(p, l, cg, len)))
			continue;
		struct row *row = &p->rows[p->n];
		if ((r = grow((void **)&p->arena, &arena_cap, arena_len, len + 1, 1)) < 0)
			break;
		memcpy(p->arena + arena_len, cg->path, len + 1);
		/* before the quantities: the ages first (ledger.h, acct_cgroup_age()) */
		struct acct_cgroup_values cv = { 0 }; /* parts outside `what` read as absent (UBSan: io_rate_known unset) */
		acct_cgroup_read(cg, what, p->now_us, &cv);
		*row = (struct row){ .path = (uint32_t)arena_len, .len = (uint32_t)len, .plain = label_plain(cg->path, len),
				     .dead = cv.dead, .depth = (uint8_t)MIN(cg->depth, UINT8_MAX),
				     .memstat_at = UINT32_MAX };
		if (row->dead)
			row->died_us = cv.died_us;
		arena_len += len + 1;

		for (int g = 0; g < _ACCT_GROUP_MAX; g++)
			row->age[g] = cv.age[g];
		uint64_t b[_ACCT_Q_MAX];
		for (int q = 0; q < _ACCT_Q_MAX; q++) {
			struct acct_reading rd;
			b[q] = 0;
			if (!acct_cgroup_get(cg, (enum acct_quantity)q, false, &rd))
				continue;
			row->known |= 1ull << q;
			row->q[q] = rd.value;
			b[q] = rd.bound;
			if (rd.bound)
				row->bounded |= 1ull << q;
		}
		if (row->bounded) {
			if ((r = grow((void **)&p->bounds, &cap_b, nb, _ACCT_Q_MAX, sizeof(*p->bounds))) < 0)
				break;
			row->bounds_at = (uint32_t)nb;
			memcpy(p->bounds + nb, b, sizeof(b));
			nb += _ACCT_Q_MAX;
		}
		for (int res = 0; res < _ACCT_PSI_MAX; res++) {
			if (!cv.psi_known[res])
				continue;
			row->psi_known |= 1u << res;
			memcpy(row->psi_avg[res], cv.psi_avg[res], sizeof(row->psi_avg[res]));
		}
		for (int a = 0; a < 3; a++) {
			row->loadavg[a] = cv.loadavg[a];
			row->cpu_rate_avg[a] = cv.cpu_rate_avg[a];
		}
		row->cpu_rate = cv.cpu_rate;
		row->cpu_rate_known = cv.cpu_rate_known;
		row->sample_errors = cv.sample_errors;
		if ((r = gather_io(p, l, &cv, row, &ni, &cap_io)) < 0)
			break;

		const int64_t *ms = cv.memstat;
		for (int k = 0; k < _CADVISOR_MEMSTAT_MAX; k++) {
			const int *ki = p->cadvisor_keys[k];
			int64_t val = acct_memstat_value(ms, ki[0]);
			if (val < 0)
				val = acct_memstat_value(ms, ki[1]);
			row->cadvisor_memstat[k] = val;
		}
		if (ms && p->nr_slots) {
			if ((r = grow((void **)&p->mvals, &cap_m, nm, p->nr_slots, sizeof(*p->mvals))) < 0)
				break;
			row->memstat_at = (uint32_t)nm;
			for (unsigned s = 0; s < p->nr_slots; s++) {
				const struct slot *sl = &p->slots[s];
				int64_t val = acct_memstat_value(ms, sl->total);
				if (val < 0 && sl->local >= 0)
					val = acct_memstat_value(ms, sl->local);
				p->mvals[nm + s] = val;
			}
			nm += p->nr_slots;
		}
		if ((p->opts.families & (1u << ACCT_MF_NUMA)) && cv.numa_known) {
			row->numa_at = (uint32_t)nn;
			for (unsigned node = 0;; node++) {
				struct acct_reading rd;
				if (acct_counter_read_node(cg->numa, node, &rd) < 0)
					break; /* past the topology's last node */
				if ((r = grow((void **)&p->numa, &cap_n, nn, 1, sizeof(*p->numa))) < 0)
					break;
				p->numa[nn++] = rd.value;
				row->nr_numa++;
			}
		}
		p->n++;
	}
	return r;
}

static bool family_on(const struct acct_metrics_page *p, const struct fam *f)
{
	return f->group < 0 || (p->opts.families & (1u << f->group));
}

/* The per-cgroup series of row r: its families render in counting mode. */
static uint64_t row_series(struct acct_metrics_page *p, const struct row *r)
{
	p->counting = true;
	p->counted = 0;
	for (size_t i = 0; i < p->nr_fams; i++) {
		const struct fam *f = p->fams[i];
		if (f->cg && family_on(p, f) && family_shows(f, r))
			f->cg(p, f, r);
	}
	p->counting = false;
	return p->counted;
}

/* The max_series cut: count each level's per-cgroup series (exactly: the
 * families render in counting mode, ~1 ms at 10,000 cgroups), keep the
 * levels from the root down while their sum fits, and drop the rows of the
 * deeper ones. Whole levels, not the cgroups with the largest values: a
 * top-N would change its members between scrapes, and every change ends
 * series in Prometheus and starts others. Hysteresis against a level whose
 * sum hovers at the bound (bounds and sample errors are shown only while not
 * zero, tombstones come and go): past opts.cut_hint, the depth the previous
 * page showed, a level is added only when it fits in CUT_DEEPEN_PERCENT of
 * max_series; a level that no longer fits goes at once. */
#define CUT_DEEPEN_PERCENT 90

static void cut_levels(struct acct_metrics_page *p)
{
	uint64_t per_level[UINT8_MAX + 1] = { 0 };
	uint64_t total = 0, kept = 0, max = p->opts.max_series;
	int deepest = -1, present = -1;

	p->cut = (struct acct_metrics_cut){ .depth_shown = (int)MIN(p->opts.max_depth, UINT8_MAX) };
	if (!max)
		return;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t n = row_series(p, &p->rows[i]);
		per_level[p->rows[i].depth] += n;
		total += n;
		present = MAX(present, (int)p->rows[i].depth);
	}
	for (int d = 0; d <= present; d++) {
		/* beyond the hint, only with room to spare */
		uint64_t room = d > p->opts.cut_hint ? max * CUT_DEEPEN_PERCENT / 100 : max;
		if (kept + per_level[d] > room)
			break;
		kept += per_level[d];
		deepest = d;
	}
	if (deepest >= present)
		return;
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++)
		if ((int)p->rows[i].depth <= deepest)
			p->rows[n++] = p->rows[i];
	p->cut = (struct acct_metrics_cut){ .cgroups = p->n - n, .series = total - kept, .depth_shown = deepest };
	p->n = n;
}

static int kind_of_unit(enum acct_unit u)
{
	return u == ACCT_UNIT_BYTES ? KIND_BYTES : u == ACCT_UNIT_USEC ? KIND_CPU : KIND_TASKS;
}

static int engine_stats_one(struct acct_cgroup *cg, void *userdata)
{
	struct kind_stats *ks = userdata;
	for (int q = 0; q < _ACCT_Q_MAX; q++) {
		struct acct_counter_stats st;
		struct kind_stats *k = &ks[kind_of_unit(acct_quantity_info((enum acct_quantity)q)->unit)];
		acct_counter_stats(cg->q[q], &st);
		k->counters++;
		k->sharded += st.state != ACCT_STATE_COMPACT;
		k->folds += st.folds;
		k->grows += st.tune_grows;
		k->shrinks += st.tune_shrinks;
		k->batch_max = MAX(k->batch_max, st.batch);
	}
	return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_metrics_page *, acct_metrics_page_free);

int acct_metrics_page_new(struct acct_ledger *l, const struct acct_metrics_options *opts,
			  const struct acct_metrics_self *self, uint64_t now_us, struct acct_metrics_page **ret)
{
	static const struct acct_metrics_self no_self = { 0 };
	_cleanup_(acct_metrics_page_freep) struct acct_metrics_page *p = NULL;
	int r;

	if (opts->format != ACCT_METRICS_TEXT && opts->format != ACCT_METRICS_OPENMETRICS)
		return -EINVAL;
	if (self && self->nr_buckets > ACCT_METRICS_MAX_BUCKETS)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->opts = *opts;
	p->self = self ? self : &no_self;
	p->now_us = now_us;
	p->om = opts->format == ACCT_METRICS_OPENMETRICS;
	for (size_t part = 0; part < ELEMENTSOF(page_parts); part++)
		for (size_t i = 0; i < *page_parts[part].n; i++) {
			const struct fam *f = &page_parts[part].families[i];
			p->name_len[p->nr_fams] = (uint16_t)strlen(f->name);
			p->fams[p->nr_fams++] = f;
		}
	for (int k = 0; k < _CADVISOR_MEMSTAT_MAX; k++)
		for (int v = 0; v < 2; v++)
			p->cadvisor_keys[k][v] = opts->families & (1u << ACCT_MF_CADVISOR)
							 ? acct_ledger_memstat_find(l, metrics_cadvisor_memstat_keys[k][v])
							 : -ENOENT;
	r = gather(p, l);
	if (r < 0)
		return r;
	cut_levels(p);
	if ((opts->families & (1u << ACCT_MF_ENGINE_KINDS)) && p->self->have_domain) {
		for (int k = 0; k < _KIND_MAX; k++)
			p->kinds[k].batch_max = 1;
		(void)acct_ledger_foreach(l, engine_stats_one, p->kinds);
	}
	*ret = TAKE_PTR(p);
	return 0;
}

struct acct_metrics_page *acct_metrics_page_free(struct acct_metrics_page *p)
{
	if (!p)
		return NULL;
	free(p->rows);
	free(p->arena);
	free(p->bounds);
	free(p->mvals);
	free(p->numa);
	free(p->io);
	text_buf_free(&p->w);
	free(p);
	return NULL;
}

uint64_t acct_metrics_page_bytes(const struct acct_metrics_page *p)
{
	return p->bytes;
}

/* ---- rendering ---------------------------------------------------------------------- */

void acct_metrics_page_cut(const struct acct_metrics_page *p, struct acct_metrics_cut *ret)
{
	*ret = p->cut;
}

static int flush(struct acct_metrics_page *p, acct_metrics_write_fn write, void *userdata)
{
	if (p->w.failed)
		return -ENOMEM;
	if (p->w.len == 0)
		return 0;
	int r = write(p->w.data, p->w.len, userdata);
	p->bytes += p->w.len;
	p->w.len = 0;
	return r < 0 ? r : 0;
}

int acct_metrics_page_render(struct acct_metrics_page *p, size_t chunk, acct_metrics_write_fn write, void *userdata)
{
	int r;

	if (p->done)
		return 0;
	while (p->fi < p->nr_fams) {
		const struct fam *f = p->fams[p->fi];
		if (!family_on(p, f)) {
			p->fi++;
			continue;
		}
		if (f->global)
			f->global(p, f);
		else {
			/* At least one cgroup per step, whatever the chunk size. */
			size_t first = p->pos;
			for (; p->pos < p->n && (p->pos == first || p->w.len < chunk) && !p->w.failed; p->pos++)
				if (family_shows(f, &p->rows[p->pos]))
					f->cg(p, f, &p->rows[p->pos]);
		}
		if (p->w.failed)
			return -ENOMEM;
		if (f->global || p->pos >= p->n) {
			p->fi++;
			p->pos = 0;
			p->header_done = false;
		}
		if (p->w.len >= chunk) {
			if ((r = flush(p, write, userdata)) < 0)
				return r;
			return 1;
		}
	}
	if (p->om) {
		char *o = text_buf_reserve(&p->w, 8);
		if (o)
			text_buf_commit(&p->w, text_put_str(o, "# EOF\n"));
	}
	if ((r = flush(p, write, userdata)) < 0)
		return r;
	p->done = true;
	return 0;
}

int acct_metrics_render(struct acct_ledger *l, const struct acct_metrics_options *opts,
			const struct acct_metrics_self *self, uint64_t now_us, acct_metrics_write_fn write, void *userdata)
{
	_cleanup_(acct_metrics_page_freep) struct acct_metrics_page *p = NULL;
	int r = acct_metrics_page_new(l, opts, self, now_us, &p);

	if (r < 0)
		return r;
	do
		r = acct_metrics_page_render(p, 1 << 20, write, userdata);
	while (r > 0);
	return r;
}
