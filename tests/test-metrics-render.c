/* test-metrics-render.c - the Prometheus and OpenMetrics pages: values and
 * units, label escaping, family layout, filters, chunking, re-snapshots after
 * a sweep. Every page rendered here also goes through a
 * strict checker of the exposition syntax (check_page()). It is long because
 * that checker and the stored pages' comparison are shared by every case
 * here, which a split would have to export. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc-fail.h"
#include "ledger.h"
#include "util.h"
#include "metrics-render.h"
#include "histogram.h"
#include "path.h"
#include "reconcile.h"
#include "topology.h"

struct fixture {
	struct acct_domain *d;
	struct acct_ledger *l;
	uint64_t now;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct acct_ledger_budgets b = { 1 << 20, 10000, 8 };
	struct acct_topology *t = NULL;
	assert_int_equal(acct_topology_simulate(4, 2, &t), 0);
	struct acct_domain_options o = { .topology = t };
	assert_int_equal(acct_domain_new(&o, &f->d), 0);
	acct_topology_free(t);
	assert_int_equal(acct_ledger_new(f->d, &b, &f->l), 0);
	f->now = 1000000000;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	acct_ledger_free(f->l);
	acct_domain_free(f->d);
	free(f);
	return 0;
}

static struct acct_cgroup *add(struct fixture *f, const char *path)
{
	struct acct_cgroup_id id = { .path = path, .depth = path_depth(path), .hierarchies = 1, .inode = { 42 } };
	struct acct_cgroup *cg = NULL;
	assert_int_equal(acct_ledger_add(f->l, &id, f->now, &cg), 0);
	return cg;
}

/* A cgroup with every kind of value set. */
static struct acct_cgroup *add_full(struct fixture *f, const char *path)
{
	struct acct_cgroup *cg = add(f, path);
	acct_cgroup_set(cg, ACCT_Q_MEMORY, 10 << 20);
	acct_cgroup_set(cg, ACCT_Q_WORKING_SET, 8 << 20);
	acct_cgroup_set(cg, ACCT_Q_MEMORY_PEAK, 12 << 20);
	acct_cgroup_set(cg, ACCT_Q_MEMORY_MAX, 64 << 20);
	acct_cgroup_set(cg, ACCT_Q_MEMORY_HIGH, -1);
	acct_cgroup_set(cg, ACCT_Q_SWAP, 0);
	acct_cgroup_set(cg, ACCT_Q_SWAP_MAX, -1);
	acct_cgroup_set(cg, ACCT_Q_CPU_USAGE, 1500000);
	acct_cgroup_set(cg, ACCT_Q_CPU_USER, 1000001);
	acct_cgroup_set(cg, ACCT_Q_CPU_SYSTEM, 499999);
	acct_cgroup_set(cg, ACCT_Q_CPU_PERIODS, 10);
	acct_cgroup_set(cg, ACCT_Q_CPU_THROTTLED_PERIODS, 2);
	acct_cgroup_set(cg, ACCT_Q_CPU_THROTTLED, 250);
	acct_cgroup_set(cg, ACCT_Q_PSI_MEMORY_SOME, 42);
	acct_cgroup_set(cg, ACCT_Q_PSI_MEMORY_FULL, 7);
	acct_cgroup_set(cg, ACCT_Q_TASKS, 3);
	__atomic_store_n(&cg->psi_avg[ACCT_PSI_MEMORY][0][0], 1234, __ATOMIC_RELAXED);
	__atomic_store_n(&cg->psi_known[ACCT_PSI_MEMORY], true, __ATOMIC_RELEASE);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "anon", 4, 4096), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "file", 4, 8192), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "pgfault", 7, 77), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "workingset_nodes", 16, 5), 0);
	assert_int_equal(acct_cgroup_set_node(cg, 0, 6 << 20), 0);
	assert_int_equal(acct_cgroup_set_node(cg, 1, 4 << 20), 0);
	cg->loadavg[0] = 3072; /* 1.5 */
	cg->loadavg[1] = 1;
	cg->loadavg[2] = 0;
	acct_cgroup_set_double(&cg->cpu_rate_bits, 0.25);
	__atomic_store_n(&cg->cpu_rate_known, true, __ATOMIC_RELEASE);
	for (int g = 0; g < _ACCT_GROUP_MAX; g++)
		cg->sampled_us[g] = f->now - 1500000;
	return cg;
}

/* ---- output collection and a strict checker of the exposition ----------------- */

struct out {
	char *buf;
	size_t len, cap;
	unsigned calls;
	size_t max_piece;
};

static int collect(const void *data, size_t len, void *userdata)
{
	struct out *o = userdata;
	if (o->len + len + 1 > o->cap) {
		o->cap = (o->len + len + 1) * 2;
		o->buf = realloc(o->buf, o->cap);
		assert_non_null(o->buf);
	}
	memcpy(o->buf + o->len, data, len);
	o->len += len;
	o->buf[o->len] = '\0';
	o->calls++;
	if (len > o->max_piece)
		o->max_piece = len;
	return 0;
}

static bool is_name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

/* The family a sample belongs to, given the TYPE lines seen. */
static bool sample_in_family(const char *sample, const char *family, const char *type, bool om)
{
	size_t fl = strlen(family);
	if (strncmp(sample, family, fl) != 0)
		return false;
	const char *rest = sample + fl;
	if (!*rest)
		return strcmp(type, "counter") != 0 || !om ? true : false;
	if (strcmp(type, "histogram") == 0)
		return strcmp(rest, "_bucket") == 0 || strcmp(rest, "_sum") == 0 || strcmp(rest, "_count") == 0 ||
		       (om && strcmp(rest, "_created") == 0);
	if (om && strcmp(type, "counter") == 0)
		return strcmp(rest, "_total") == 0 || strcmp(rest, "_created") == 0;
	if (om && strcmp(type, "info") == 0)
		return strcmp(rest, "_info") == 0;
	return false;
}

/* Check the syntax of a whole page: every sample belongs to the family of
 * the last TYPE line, every family has HELP and TYPE once and is contiguous,
 * label values are escaped, values parse, OpenMetrics ends in # EOF and its
 * UNIT is the family name's suffix. Returns the number of samples. */
static size_t check_page(const char *page, bool om)
{
	char family[256] = "", type[32] = "";
	char seen[512][128];
	size_t nseen = 0, samples = 0;
	bool eof = false;

	assert_true(strlen(page) > 0);
	assert_int_equal(page[strlen(page) - 1], '\n');
	for (const char *l = page; *l;) {
		const char *nl = strchr(l, '\n');
		assert_non_null(nl);
		size_t len = (size_t)(nl - l);
		char line[8192];
		assert_true(len < sizeof(line));
		memcpy(line, l, len);
		line[len] = '\0';
		l = nl + 1;
		assert_false(eof); /* nothing after # EOF */
		if (strcmp(line, "# EOF") == 0) {
			assert_true(om);
			eof = true;
			continue;
		}
		if (!om && strncmp(line, "# acctd: ", 9) == 0)
			continue; /* a comment for people (the max_series cut); not in OpenMetrics */
		if (line[0] == '#') {
			char kw[8], name[256], rest[4096] = "";
			int n = sscanf(line, "# %7s %255s %4095[^\n]", kw, name, rest);
			assert_true(n >= 3);
			if (strcmp(kw, "TYPE") == 0) {
				for (size_t i = 0; i < nseen; i++)
					if (strcmp(seen[i], name) == 0)
						fail_msg("family %s appears twice", name);
				assert_true(nseen < 512);
				snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
				snprintf(family, sizeof(family), "%s", name);
				snprintf(type, sizeof(type), "%s", rest);
				assert_true(strcmp(type, "gauge") == 0 || strcmp(type, "counter") == 0 ||
					    strcmp(type, "histogram") == 0 || (om && strcmp(type, "info") == 0));
				if (!om && strcmp(type, "counter") == 0)
					assert_true(strlen(name) > 6 && strcmp(name + strlen(name) - 6, "_total") == 0);
				if (om && strcmp(type, "counter") == 0)
					assert_false(strlen(name) > 6 && strcmp(name + strlen(name) - 6, "_total") == 0);
			} else if (strcmp(kw, "UNIT") == 0) {
				assert_true(om);
				char sfx[64];
				snprintf(sfx, sizeof(sfx), "_%s", rest);
				assert_true(strlen(name) > strlen(sfx) && strcmp(name + strlen(name) - strlen(sfx), sfx) == 0);
			} else
				assert_string_equal(kw, "HELP");
			if (!om && strcmp(kw, "HELP") == 0) /* text: HELP comes first, TYPE follows */
				snprintf(family, sizeof(family), "%s", name);
			else
				assert_string_equal(name, family);
			continue;
		}
		/* name{labels} value */
		samples++;
		char *p = line;
		assert_true(is_name_char(*p, true));
		while (is_name_char(*p, false))
			p++;
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(p - line), line);
		if (!sample_in_family(name, family, type, om))
			fail_msg("sample %s outside its family (%s %s)", name, family, type);
		if (*p == '{') {
			p++;
			while (*p != '}') {
				assert_true(is_name_char(*p, true));
				while (is_name_char(*p, false))
					p++;
				assert_int_equal(*p++, '=');
				assert_int_equal(*p++, '"');
				while (*p != '"') {
					assert_true(*p != '\0' && *p != '\n');
					if (*p == '\\') {
						p++;
						assert_true(*p == '\\' || *p == '"' || *p == 'n');
					}
					p++;
				}
				p++;
				if (*p == ',')
					p++;
			}
			p++;
		}
		assert_int_equal(*p++, ' ');
		char *end;
		if (strcmp(p, "+Inf") != 0 && strcmp(p, "-Inf") != 0 && strcmp(p, "NaN") != 0) {
			(void)strtod(p, &end);
			if (*end != '\0')
				fail_msg("bad value in: %s", line);
		}
	}
	assert_int_equal(eof, om);
	return samples;
}

static char *render(struct fixture *f, const struct acct_metrics_options *o, const struct acct_metrics_self *self,
		    size_t chunk)
{
	struct acct_metrics_page *p = NULL;
	struct out out = { 0 };
	int r;

	rcu_read_lock();
	assert_int_equal(acct_metrics_page_new(f->l, o, self, f->now, &p), 0);
	do
		r = acct_metrics_page_render(p, chunk, collect, &out);
	while (r > 0);
	assert_int_equal(r, 0);
	assert_int_equal(acct_metrics_page_render(p, chunk, collect, &out), 0); /* done stays done */
	acct_metrics_page_free(p);
	rcu_read_unlock();
	check_page(out.buf, o->format == ACCT_METRICS_OPENMETRICS);
	return out.buf;
}

static void assert_has(const char *page, const char *line)
{
	char needle[1024];
	snprintf(needle, sizeof(needle), "\n%s\n", line);
	if (!strstr(page, needle) && strncmp(page, needle + 1, strlen(needle + 1)) != 0)
		fail_msg("missing line: %s", line);
}

static void assert_lacks(const char *page, const char *s)
{
	if (strstr(page, s))
		fail_msg("unexpected: %s", s);
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_text_values(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	add_full(f, "/a");
	acct_metrics_options_default(&o);
	char *page = render(f, &o, NULL, 1 << 20);

	assert_has(page, "acctd_memory_bytes{cgroup=\"/a\"} 10485760");
	assert_has(page, "acctd_memory_working_set_bytes{cgroup=\"/a\"} 8388608");
	assert_has(page, "acctd_memory_peak_bytes{cgroup=\"/a\"} 12582912");
	assert_has(page, "acctd_memory_limit_bytes{cgroup=\"/a\",limit=\"max\"} 67108864");
	assert_lacks(page, "limit=\"high\""); /* -1: no limit */
	assert_lacks(page, "acctd_memory_swap_limit_bytes{");
	assert_has(page, "acctd_memory_swap_bytes{cgroup=\"/a\"} 0");
	assert_has(page, "acctd_cpu_usage_seconds_total{cgroup=\"/a\"} 1.5");
	assert_has(page, "acctd_cpu_user_seconds_total{cgroup=\"/a\"} 1.000001");
	assert_has(page, "acctd_cpu_system_seconds_total{cgroup=\"/a\"} 0.499999");
	assert_has(page, "acctd_cpu_periods_total{cgroup=\"/a\"} 10");
	assert_has(page, "acctd_cpu_throttled_periods_total{cgroup=\"/a\"} 2");
	assert_has(page, "acctd_cpu_throttled_seconds_total{cgroup=\"/a\"} 0.00025");
	assert_has(page, "acctd_pressure_stalled_seconds_total{cgroup=\"/a\",resource=\"memory\",kind=\"some\"} 0.000042");
	assert_has(page, "acctd_pressure_stalled_seconds_total{cgroup=\"/a\",resource=\"memory\",kind=\"full\"} 0.000007");
	assert_has(page, "acctd_memory_stat_bytes{cgroup=\"/a\",type=\"anon\"} 4096");
	assert_has(page, "acctd_memory_stat_bytes{cgroup=\"/a\",type=\"file\"} 8192");
	assert_lacks(page, "pgfault");          /* events: off by default */
	assert_lacks(page, "workingset_nodes"); /* a count, not bytes */
	assert_has(page, "acctd_memory_numa_bytes{cgroup=\"/a\",node=\"0\"} 6291456");
	assert_has(page, "acctd_memory_numa_bytes{cgroup=\"/a\",node=\"1\"} 4194304");
	assert_has(page, "acctd_load_average{cgroup=\"/a\",window=\"1m\"} 1.5");
	assert_has(page, "acctd_load_average{cgroup=\"/a\",window=\"5m\"} 0.00048828125");
	assert_has(page, "acctd_load_average{cgroup=\"/a\",window=\"15m\"} 0");
	assert_has(page, "acctd_tasks{cgroup=\"/a\"} 3");
	assert_has(page, "acctd_value_age_seconds{cgroup=\"/a\",group=\"fast\"} 1.5");
	assert_has(page, "acctd_value_age_seconds{cgroup=\"/a\",group=\"slow\"} 1.5");
	assert_lacks(page, "acctd_pressure_stalled_ratio"); /* off by default */
	assert_lacks(page, "acctd_cpu_rate");
	assert_lacks(page, "acctd_value_bound"); /* all exact */
	assert_lacks(page, "acctd_cgroup_dead{");
	assert_lacks(page, "_created");
	assert_lacks(page, "# EOF");
	assert_lacks(page, "# UNIT");
	assert_has(page, "# TYPE acctd_cpu_usage_seconds_total counter");
	assert_has(page, "# TYPE acctd_build_info gauge");
	assert_has(page, "acctd_metrics_cgroups 1");
	free(page);

	/* everything on */
	o.families = ACCT_METRICS_FAMILIES_ALL;
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_memory_stat_events_total{cgroup=\"/a\",event=\"pgfault\"} 77");
	assert_has(page, "acctd_pressure_stalled_ratio{cgroup=\"/a\",resource=\"memory\",kind=\"some\",window=\"10s\"} 0.1234");
	assert_has(page, "acctd_pressure_stalled_ratio{cgroup=\"/a\",resource=\"memory\",kind=\"full\",window=\"300s\"} 0");
	assert_lacks(page, "resource=\"cpu\""); /* never read */
	assert_has(page, "acctd_cpu_rate_cores{cgroup=\"/a\"} 0.25");
	assert_has(page, "acctd_cpu_rate_average_cores{cgroup=\"/a\",window=\"5m\"} 0");
	assert_lacks(page, "workingset_nodes");
	free(page);

	/* only the memory group (and acctd's own, always there) */
	o.families = 1u << ACCT_MF_MEMORY;
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_memory_bytes{cgroup=\"/a\"} 10485760");
	assert_lacks(page, "acctd_cpu_");
	assert_lacks(page, "acctd_memory_stat_bytes");
	assert_lacks(page, "acctd_engine_");
	assert_has(page, "acctd_metrics_cgroups 1");
	free(page);
}

/* issue 15: cAdvisor's container_* families, off by default, with acctd's
 * values under cAdvisor's names, units and id label; absent where acctd has
 * no value, never 0; live cgroups only. */
static void test_cadvisor(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	struct acct_cgroup *a = add_full(f, "/system.slice/a.service");
	struct acct_cgroup *v1 = add(f, "/v1.slice");
	struct acct_cgroup *gone = add(f, "/gone.service");
	struct acct_cgroup *bare = add(f, "/bare.service");
	int64_t io[_ACCT_IO_STAT_MAX] = { 4096, 8192, 3, 5, -1, -1 };
	int sda = acct_ledger_io_device_add(f->l, 8, 0, "sda"), anon = acct_ledger_io_device_add(f->l, 253, 7, NULL);

	assert_true(sda >= 0 && anon >= 0);
	assert_int_equal(acct_cgroup_set_io_device(a, (unsigned)sda, io), 0);
	io[ACCT_IO_READ_BYTES] = 512;
	io[ACCT_IO_WRITE_IOS] = -1; /* not reported by the kernel: no series */
	assert_int_equal(acct_cgroup_set_io_device(a, (unsigned)anon, io), 0);
	acct_cgroup_set(a, ACCT_Q_MEMORY_EVENTS_MAX, 4);
	acct_cgroup_set(a, ACCT_Q_MEMORY_EVENTS_OOM_KILL, 1);
	assert_int_equal(acct_cgroup_set_memstat(f->l, a, "file_mapped", 11, 1024), 0);
	/* v1: hierarchical total_ keys, preferred to the cgroup's own */
	acct_cgroup_set(v1, ACCT_Q_MEMORY, 5000);
	acct_cgroup_set(v1, ACCT_Q_MEMORY_MAX, 9000);
	acct_cgroup_set(v1, ACCT_Q_CPU_USAGE, 0);
	acct_cgroup_set(v1, ACCT_Q_CPU_PERIODS, 0); /* no CPU quota ever ran: no cfs series */
	acct_cgroup_set(v1, ACCT_Q_CPU_THROTTLED_PERIODS, 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, v1, "rss", 3, 100), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, v1, "total_rss", 9, 300), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, v1, "total_cache", 11, 700), 0);
	acct_cgroup_set(gone, ACCT_Q_MEMORY, 222);
	acct_cgroup_set(gone, ACCT_Q_CPU_USAGE, 1500000);
	acct_ledger_kill(f->l, gone, f->now - 1000000);

	acct_metrics_options_default(&o);
	char *page = render(f, &o, NULL, 1 << 20);
	assert_lacks(page, "container_"); /* off by default */
	free(page);

	assert_int_equal(acct_metrics_families_apply(&o.families, (char *[]){ "cadvisor", NULL }, NULL), 0);
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "# TYPE container_cpu_usage_seconds_total counter");
	assert_has(page, "container_cpu_usage_seconds_total{id=\"/system.slice/a.service\",cpu=\"total\"} 1.5");
	assert_has(page, "container_cpu_usage_seconds_total{id=\"/v1.slice\",cpu=\"total\"} 0");
	assert_has(page, "container_cpu_user_seconds_total{id=\"/system.slice/a.service\"} 1.000001");
	assert_has(page, "container_cpu_system_seconds_total{id=\"/system.slice/a.service\"} 0.499999");
	assert_has(page, "container_cpu_cfs_periods_total{id=\"/system.slice/a.service\"} 10");
	assert_has(page, "container_cpu_cfs_throttled_periods_total{id=\"/system.slice/a.service\"} 2");
	assert_has(page, "container_cpu_cfs_throttled_seconds_total{id=\"/system.slice/a.service\"} 0.00025");
	assert_lacks(page, "container_cpu_cfs_periods_total{id=\"/v1.slice\"}");
	assert_lacks(page, "container_cpu_cfs_throttled_periods_total{id=\"/v1.slice\"}");
	assert_has(page, "container_memory_usage_bytes{id=\"/system.slice/a.service\"} 10485760");
	assert_has(page, "container_memory_working_set_bytes{id=\"/system.slice/a.service\"} 8388608");
	assert_has(page, "container_memory_max_usage_bytes{id=\"/system.slice/a.service\"} 12582912");
	assert_has(page, "container_memory_rss{id=\"/system.slice/a.service\"} 4096");
	assert_has(page, "container_memory_cache{id=\"/system.slice/a.service\"} 8192");
	assert_has(page, "container_memory_mapped_file{id=\"/system.slice/a.service\"} 1024");
	assert_has(page, "container_memory_rss{id=\"/v1.slice\"} 300");
	assert_has(page, "container_memory_cache{id=\"/v1.slice\"} 700");
	assert_lacks(page, "container_memory_mapped_file{id=\"/v1.slice\"}");
	assert_has(page, "container_memory_swap{id=\"/system.slice/a.service\"} 0");
	assert_has(page, "container_memory_failcnt{id=\"/system.slice/a.service\"} 4");
	assert_has(page, "container_oom_events_total{id=\"/system.slice/a.service\"} 1");
	assert_has(page, "container_spec_memory_limit_bytes{id=\"/system.slice/a.service\"} 67108864");
	assert_has(page, "container_spec_memory_limit_bytes{id=\"/v1.slice\"} 9000");
	assert_has(page, "container_spec_memory_swap_limit_bytes{id=\"/system.slice/a.service\"} 0"); /* unlimited */
	assert_lacks(page, "container_spec_memory_swap_limit_bytes{id=\"/v1.slice\"}"); /* never read */
	assert_has(page, "container_fs_reads_bytes_total{id=\"/system.slice/a.service\",device=\"/dev/sda\"} 4096");
	assert_has(page, "container_fs_writes_bytes_total{id=\"/system.slice/a.service\",device=\"/dev/sda\"} 8192");
	assert_has(page, "container_fs_reads_total{id=\"/system.slice/a.service\",device=\"/dev/sda\"} 3");
	assert_has(page, "container_fs_writes_total{id=\"/system.slice/a.service\",device=\"/dev/sda\"} 5");
	assert_has(page, "container_fs_reads_bytes_total{id=\"/system.slice/a.service\",device=\"/dev/block/253:7\"} 512");
	assert_lacks(page, "container_fs_writes_total{id=\"/system.slice/a.service\",device=\"/dev/block/253:7\"}");
	assert_has(page, "container_threads{id=\"/system.slice/a.service\"} 3");
	/* a cgroup never read has no series at all; a removed one is in none */
	assert_lacks(page, "/bare.service");
	assert_lacks(page, "id=\"/gone.service\"");
	assert_has(page, "acctd_removed_cgroup_cpu_usage_seconds_total{cgroup=\"/gone.service\"} 1.5");
	/* and acctd's own names still say cgroup= */
	assert_has(page, "acctd_memory_bytes{cgroup=\"/v1.slice\"} 5000");
	free(page);
	(void)bare;

	/* cadvisor alone: the per-device values are copied for it too */
	o.families = 1u << ACCT_MF_CADVISOR;
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "container_fs_writes_total{id=\"/system.slice/a.service\",device=\"/dev/sda\"} 5");
	assert_has(page, "container_memory_rss{id=\"/v1.slice\"} 300");
	assert_lacks(page, "acctd_io_device_bytes_total");
	assert_lacks(page, "acctd_memory_bytes");
	free(page);

	/* OpenMetrics: counter families without _total, UNIT where the name ends in it */
	o.format = ACCT_METRICS_OPENMETRICS;
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "# TYPE container_cpu_usage_seconds counter");
	assert_has(page, "# UNIT container_cpu_usage_seconds seconds");
	assert_has(page, "container_cpu_usage_seconds_total{id=\"/system.slice/a.service\",cpu=\"total\"} 1.5");
	assert_has(page, "# TYPE container_memory_failcnt gauge");
	assert_has(page, "# UNIT container_spec_memory_limit_bytes bytes");
	assert_has(page, "container_fs_reads_total{id=\"/system.slice/a.service\",device=\"/dev/sda\"} 3");
	free(page);
}

static void test_openmetrics(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	static const double bounds[3] = { 0.001, 1, __builtin_inf() };
	struct acct_metrics_count api[2] = { { "io.acctd.Accounting.Get", "ok", 5 },
					     { "io.acctd.Accounting.Get", "io.acctd.Accounting.NoSuchCgroup", 1 } };
	struct acct_metrics_charge_ram charges_ram[3] = {
		{ .cgroup = "/a", .has_memory = true, .over = true, .unexplained = -5000, .unexplained_bound = 1024 },
		{ .cgroup = "/b", .has_memory = true, .over = false, .unexplained = 300, .unexplained_bound = 0 },
		/* over-released, its memory not read */
		{ .cgroup = "/c", .below_zero = true },
	};
	struct acct_metrics_charge charges[2] = {
		{ "gpu", "/a", "bytes", 1, 4096, 8192, 0, 512, false, { 0 } },
		/* averaged: 1, 5, 15-minute averages in microseconds */
		{ "lease", "/a\"b", "seconds", 1e6, 1500000, 2500000, 10, 0, true, { 2000000, 500000, 250 } },
	};
	struct acct_metrics_self self = {
		.version = "1.2.3",
		.charges = charges,
		.nr_charges = 2,
		.charges_ram = charges_ram,
		.nr_charges_ram = 3,
		.start_time = 1700000000.5,
		.ready = true,
		.bucket_bounds = bounds,
		.nr_buckets = 3,
		.pass = { { .bucket = { 1, 2, 3 }, .count = 3, .sum_seconds = 0.75 } },
		.have_api = true,
		.api_requests = api,
		.nr_api_requests = 2,
		.reloads = 2,
		.reload_failures = 1,
		.last_reload_ok = false,
	};

	add_full(f, "/a");
	acct_metrics_options_default(&o);
	o.format = ACCT_METRICS_OPENMETRICS;
	char *page = render(f, &o, &self, 1 << 20);
	assert_has(page, "# TYPE acctd_cpu_usage_seconds counter");
	assert_has(page, "# UNIT acctd_cpu_usage_seconds seconds");
	assert_has(page, "acctd_cpu_usage_seconds_total{cgroup=\"/a\"} 1.5");
	assert_lacks(page, "acctd_cpu_usage_seconds_created"); /* start unknown */
	assert_has(page, "# TYPE acctd_build info");
	assert_has(page, "acctd_build_info{version=\"1.2.3\"} 1");
	assert_has(page, "acctd_sampling_pass_duration_seconds_bucket{kind=\"fast\",le=\"0.001\"} 1");
	assert_has(page, "acctd_sampling_pass_duration_seconds_bucket{kind=\"fast\",le=\"1.0\"} 2");
	assert_has(page, "acctd_sampling_pass_duration_seconds_bucket{kind=\"fast\",le=\"+Inf\"} 3");
	assert_has(page, "acctd_sampling_pass_duration_seconds_sum{kind=\"fast\"} 0.75");
	assert_has(page, "acctd_sampling_pass_duration_seconds_count{kind=\"fast\"} 3");
	assert_has(page, "acctd_sampling_pass_duration_seconds_created{kind=\"fast\"} 1700000000.5");
	assert_has(page, "acctd_api_requests_total{method=\"io.acctd.Accounting.Get\",result=\"ok\"} 5");
	assert_has(page, "acctd_api_requests_created{method=\"io.acctd.Accounting.Get\",result=\"ok\"} 1700000000.5");
	assert_has(page, "acctd_config_reloads_total 2");
	assert_has(page, "acctd_config_reload_failures_total 1");
	/* programs' charges: base units, the cgroup label escaped */
	assert_has(page, "# TYPE acctd_charged gauge");
	assert_has(page, "acctd_charged{cgroup=\"/a\",resource=\"gpu\",unit=\"bytes\",scope=\"self\"} 4096");
	assert_has(page, "acctd_charged{cgroup=\"/a\",resource=\"gpu\",unit=\"bytes\",scope=\"subtree\"} 8192");
	assert_has(page, "acctd_charged_bound{cgroup=\"/a\",resource=\"gpu\",unit=\"bytes\",scope=\"subtree\"} 512");
	assert_has(page, "acctd_charged{cgroup=\"/a\\\"b\",resource=\"lease\",unit=\"seconds\",scope=\"subtree\"} 2.5");
	assert_has(page, "acctd_charged_bound{cgroup=\"/a\\\"b\",resource=\"lease\",unit=\"seconds\",scope=\"self\"} 1e-05");
	/* the averages of an averaged resource only, in base units */
	assert_has(page, "# TYPE acctd_charge_average gauge");
	assert_non_null(strstr(page, "\n# HELP acctd_charge_average The 1, 5 and 15-minute averages"));
	assert_has(page, "acctd_charge_average{cgroup=\"/a\\\"b\",resource=\"lease\",unit=\"seconds\",window=\"1m\"} 2");
	assert_has(page, "acctd_charge_average{cgroup=\"/a\\\"b\",resource=\"lease\",unit=\"seconds\",window=\"5m\"} 0.5");
	assert_has(page, "acctd_charge_average{cgroup=\"/a\\\"b\",resource=\"lease\",unit=\"seconds\",window=\"15m\"} 0.00025");
	assert_lacks(page, "acctd_charge_average{cgroup=\"/a\",");
	/* the ram resources against memory */
	assert_has(page, "# TYPE acctd_charges_over_memory gauge");
	assert_has(page, "acctd_charges_over_memory{cgroup=\"/a\"} 1");
	assert_has(page, "acctd_charges_over_memory{cgroup=\"/b\"} 0");
	assert_has(page, "# UNIT acctd_unexplained_memory_bytes bytes");
	assert_has(page, "acctd_unexplained_memory_bytes{cgroup=\"/a\"} -5000");
	assert_has(page, "acctd_unexplained_memory_bound_bytes{cgroup=\"/a\"} 1024");
	assert_has(page, "acctd_unexplained_memory_bytes{cgroup=\"/b\"} 300");
	assert_has(page, "# TYPE acctd_charges_below_zero gauge");
	assert_has(page, "acctd_charges_below_zero{cgroup=\"/c\"} 1");
	assert_has(page, "acctd_charges_below_zero{cgroup=\"/a\"} 0");
	assert_lacks(page, "acctd_charges_over_memory{cgroup=\"/c\"}");
	assert_lacks(page, "acctd_unexplained_memory_bytes{cgroup=\"/c\"}");
	assert_has(page, "acctd_config_last_reload_successful 0");
	assert_has(page, "acctd_ready 1");
	assert_true(strlen(page) > 6 && strcmp(page + strlen(page) - 6, "# EOF\n") == 0);
	free(page);

	/* the same in text: le as Go writes it */
	o.format = ACCT_METRICS_TEXT;
	page = render(f, &o, &self, 1 << 20);
	assert_has(page, "acctd_sampling_pass_duration_seconds_bucket{kind=\"fast\",le=\"1\"} 2");
	assert_has(page, "acctd_api_requests_total{method=\"io.acctd.Accounting.Get\",result=\"ok\"} 5");
	assert_has(page, "acctd_build_info{version=\"1.2.3\"} 1");
	assert_lacks(page, "_created");
	free(page);
}

static void test_escaping(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	static const struct {
		const char *path, *label;
	} cases[] = {
		{ "/q\"uote", "/q\\\"uote" },
		{ "/back\\slash", "/back\\\\slash" },
		{ "/machine-qemu\\x2d1.scope", "/machine-qemu\\\\x2d1.scope" },
		/* controls as acctd's log and acctctl show them (name-escape.h's
		 * text mode; issue 27 item 6): never raw in a label */
		{ "/new\nline", "/new\\\\x0aline" },
		{ "/esc\x1b[2J-bel\x07-del\x7f", "/esc\\\\x1b[2J-bel\\\\x07-del\\\\x7f" },
		{ "/csi\xc2\x9b" "31m", "/csi\\\\xc2\\\\x9b31m" },
		{ "/rlo\xe2\x80\xae" "cod.exe", "/rlo\\\\xe2\\\\x80\\\\xaecod.exe" },
		{ "/utf8-\xc3\xbc-\xe2\x9c\x93-\xf0\x9f\x90\xa7", "/utf8-\xc3\xbc-\xe2\x9c\x93-\xf0\x9f\x90\xa7" },
		{ "/bad-\xff-\xc3", "/bad-\\\\xff-\\\\xc3" },
		{ "/overlong-\xc0\xaf", "/overlong-\\\\xc0\\\\xaf" },
		{ "/surrogate-\xed\xa0\x80", "/surrogate-\\\\xed\\\\xa0\\\\x80" },
		{ "/all-\"\\\n\x80", "/all-\\\"\\\\\\\\x0a\\\\x80" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		acct_cgroup_set(add(f, cases[i].path), ACCT_Q_MEMORY, (int64_t)i + 1);
	acct_metrics_options_default(&o);
	for (int fmt = 0; fmt < 2; fmt++) {
		o.format = fmt ? ACCT_METRICS_OPENMETRICS : ACCT_METRICS_TEXT;
		char *page = render(f, &o, NULL, 64);
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char line[512];
			snprintf(line, sizeof(line), "acctd_memory_bytes{cgroup=\"%s\"} %zu", cases[i].label, i + 1);
			assert_has(page, line);
		}
		free(page);
	}
}

/* Two names, one label value (lib/basic/name-escape.h: the text \xff and the
 * byte ff): the literal one is shown, once; a series twice would make the
 * page invalid. A name that is not UTF-8 and has no twin is shown. */
static void test_label_twins(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;

	acct_cgroup_set(add(f, "/twin\\xff"), ACCT_Q_MEMORY, 111);
	acct_cgroup_set(add(f, "/twin\xff"), ACCT_Q_MEMORY, 222);
	acct_cgroup_set(add(f, "/alone\xff"), ACCT_Q_MEMORY, 333);
	acct_metrics_options_default(&o);
	for (int fmt = 0; fmt < 2; fmt++) {
		o.format = fmt ? ACCT_METRICS_OPENMETRICS : ACCT_METRICS_TEXT;
		char *page = render(f, &o, NULL, 1 << 20);
		assert_has(page, "acctd_memory_bytes{cgroup=\"/twin\\\\xff\"} 111");
		assert_lacks(page, "acctd_memory_bytes{cgroup=\"/twin\\\\xff\"} 222");
		assert_has(page, "acctd_memory_bytes{cgroup=\"/alone\\\\xff\"} 333");
		free(page);
	}
}

/* acctd_cgroup_info names the cgroups that are a unit, pod or container,
 * live or removed (issue 33), and a removed cgroup's I/O is kept with its
 * CPU time. */
static void test_identity(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	const char *pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice";
	char ctr[256];
	int64_t io[_ACCT_IO_STAT_MAX] = { 4096, 8192, 3, 5, -1, -1 };
	int sda = acct_ledger_io_device_add(f->l, 8, 0, "sda");

	snprintf(ctr, sizeof(ctr), "%s/cri-containerd-abc.scope", pod);
	acct_cgroup_set(add(f, "/system.slice/web.service"), ACCT_Q_MEMORY, 1);
	acct_cgroup_set(add(f, "/system.slice/web.service/child"), ACCT_Q_MEMORY, 1);
	acct_cgroup_set(add(f, "/system.slice"), ACCT_Q_MEMORY, 1);
	acct_cgroup_set(add(f, pod), ACCT_Q_MEMORY, 1);
	acct_cgroup_set(add(f, ctr), ACCT_Q_MEMORY, 1);
	add(f, "/never-read.service");
	struct acct_cgroup *gone = add(f, "/system.slice/job.service");
	assert_true(sda >= 0);
	acct_cgroup_set(gone, ACCT_Q_CPU_USAGE, 2000000);
	acct_cgroup_set(gone, ACCT_Q_IO_READ_BYTES, 4096);
	acct_cgroup_set(gone, ACCT_Q_IO_WRITE_BYTES, 8192);
	assert_int_equal(acct_cgroup_set_io_device(gone, (unsigned)sda, io), 0);
	acct_ledger_kill(f->l, gone, f->now - 1000000);

	acct_metrics_options_default(&o);
	char *page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "# TYPE acctd_cgroup_info gauge");
	assert_has(page, "acctd_cgroup_info{cgroup=\"/system.slice/web.service\",service=\"web.service\"} 1");
	assert_has(page, "acctd_cgroup_info{cgroup=\"/system.slice/job.service\",service=\"job.service\"} 1");
	char line[512];
	snprintf(line, sizeof(line), "acctd_cgroup_info{cgroup=\"%s\",pod=\"12-34\"} 1", pod);
	assert_has(page, line);
	snprintf(line, sizeof(line), "acctd_cgroup_info{cgroup=\"%s\",pod=\"12-34\",container=\"abc\"} 1", ctr);
	assert_has(page, line);
	assert_lacks(page, "acctd_cgroup_info{cgroup=\"/system.slice/web.service/child\"");
	assert_lacks(page, "acctd_cgroup_info{cgroup=\"/system.slice\"");
	assert_lacks(page, "never-read");
	assert_has(page, "acctd_removed_cgroup_io_bytes_total{cgroup=\"/system.slice/job.service\",operation=\"read\"} 4096");
	assert_has(page, "acctd_removed_cgroup_io_bytes_total{cgroup=\"/system.slice/job.service\",operation=\"write\"} 8192");
	free(page);

	/* OpenMetrics: an info family */
	o.format = ACCT_METRICS_OPENMETRICS;
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "# TYPE acctd_cgroup info");
	assert_has(page, "acctd_cgroup_info{cgroup=\"/system.slice/web.service\",service=\"web.service\"} 1");
	free(page);

	/* without the removed families, a removed cgroup is named by none */
	acct_metrics_options_default(&o);
	o.families &= ~(1u << ACCT_MF_REMOVED);
	page = render(f, &o, NULL, 1 << 20);
	assert_lacks(page, "job.service");
	assert_has(page, "acctd_cgroup_info{cgroup=\"/system.slice/web.service\",service=\"web.service\"} 1");
	free(page);
	/* family=-identity: none */
	acct_metrics_options_default(&o);
	o.families &= ~(1u << ACCT_MF_IDENTITY);
	page = render(f, &o, NULL, 1 << 20);
	assert_lacks(page, "acctd_cgroup_info");
	free(page);
}

static void test_tombstones(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	struct acct_cgroup *old = add(f, "/svc"), *gone = add(f, "/gone");

	acct_cgroup_set(old, ACCT_Q_MEMORY, 111);
	acct_cgroup_set(old, ACCT_Q_CPU_USAGE, 7000000);
	acct_cgroup_set(gone, ACCT_Q_MEMORY, 222);
	acct_cgroup_set(gone, ACCT_Q_CPU_USAGE, 1500000);
	acct_cgroup_set(gone, ACCT_Q_MEMORY_PEAK, 4096);
	acct_ledger_kill(f->l, old, f->now - 2500000);
	acct_ledger_kill(f->l, gone, f->now - 2500000);
	acct_cgroup_set(add(f, "/svc"), ACCT_Q_MEMORY, 333); /* recreated */
	acct_metrics_options_default(&o);
	char *page = render(f, &o, NULL, 1 << 20);
	/* one series per path: the live record where there is one */
	assert_has(page, "acctd_memory_bytes{cgroup=\"/svc\"} 333");
	assert_lacks(page, "acctd_memory_bytes{cgroup=\"/svc\"} 111");
	assert_lacks(page, "acctd_removed_cgroup_age_seconds{cgroup=\"/svc\"}");
	/* issue 15 item 3: a removed cgroup is in no live family (sum() over
	 * them counts what exists), only in the removed_ ones */
	assert_lacks(page, "acctd_memory_bytes{cgroup=\"/gone\"}");
	assert_lacks(page, "acctd_cpu_usage_seconds_total{cgroup=\"/gone\"}");
	assert_lacks(page, "acctd_cgroup_dead");
	assert_has(page, "acctd_removed_cgroup_age_seconds{cgroup=\"/gone\"} 2.5");
	assert_has(page, "acctd_removed_cgroup_cpu_usage_seconds_total{cgroup=\"/gone\"} 1.5");
	assert_has(page, "acctd_removed_cgroup_memory_peak_bytes{cgroup=\"/gone\"} 4096");
	assert_has(page, "# TYPE acctd_removed_cgroup_cpu_usage_seconds_total counter");
	assert_has(page, "acctd_metrics_cgroups 2");
	free(page);

	/* family=-removed: away */
	o.families &= ~(1u << ACCT_MF_REMOVED);
	page = render(f, &o, NULL, 1 << 20);
	assert_lacks(page, "/gone");
	assert_lacks(page, "acctd_removed_");
	assert_has(page, "acctd_memory_bytes{cgroup=\"/svc\"} 333");
	free(page);
	acct_metrics_options_default(&o);

	/* past retention the series disappears */
	acct_ledger_sweep(f->l, f->now + 10, 0, NULL, NULL);
	page = render(f, &o, NULL, 1 << 20);
	assert_lacks(page, "/gone");
	assert_has(page, "acctd_memory_bytes{cgroup=\"/svc\"} 333");
	free(page);
}

static void test_filters(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	const char *paths[] = { "/", "/system.slice", "/system.slice/a.service", "/system.slice/a.service/x",
				"/user.slice", "/user.slice/u.service", "/kube", "/kube/pod1", "/kube/pod1/c1" };
	char *inc[] = { "/system.slice*", "/kube*", NULL };
	char *exc[] = { "/kube/pod1", NULL };
	char *types[] = { "an*", NULL };

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct acct_cgroup *cg = add(f, paths[i]);
		acct_cgroup_set(cg, ACCT_Q_MEMORY, 1);
		assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "anon", 4, 1), 0);
		assert_int_equal(acct_cgroup_set_memstat(f->l, cg, "file", 4, 2), 0);
	}
	acct_metrics_options_default(&o);
	o.max_depth = 1;
	char *page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_memory_bytes{cgroup=\"/\"} 1");
	assert_has(page, "acctd_memory_bytes{cgroup=\"/system.slice\"} 1");
	assert_lacks(page, "a.service");
	assert_has(page, "acctd_metrics_cgroups 4");
	free(page);

	o.max_depth = 32;
	o.include = inc;
	o.exclude = exc; /* the subtree goes */
	o.memory_stat_types = types;
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_memory_bytes{cgroup=\"/system.slice/a.service/x\"} 1");
	assert_has(page, "acctd_memory_bytes{cgroup=\"/kube\"} 1");
	assert_lacks(page, "/kube/pod1");
	assert_lacks(page, "/user.slice");
	assert_lacks(page, "cgroup=\"/\"");
	assert_has(page, "acctd_memory_stat_bytes{cgroup=\"/kube\",type=\"anon\"} 1");
	assert_lacks(page, "type=\"file\"");
	assert_has(page, "acctd_metrics_cgroups 4");
	free(page);
}

/* What the max_series cut of a page with options o leaves out. */
static struct acct_metrics_cut page_cut(struct fixture *f, const struct acct_metrics_options *o)
{
	struct acct_metrics_page *pg = NULL;
	struct acct_metrics_cut cut;

	rcu_read_lock();
	assert_int_equal(acct_metrics_page_new(f->l, o, NULL, f->now, &pg), 0);
	acct_metrics_page_cut(pg, &cut);
	acct_metrics_page_free(pg);
	rcu_read_unlock();
	return cut;
}

/* The max_series cut: whole levels, deepest first, and a page that says
 * what it left out; a scrape's cgroup= globs (select) narrow the include
 * globs, and excludes still apply. */
static void test_cut_and_select(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	struct acct_metrics_cut cut;
	/* levels of 1, 2, 3 and 1 cgroups, one series each (memory alone) but the root's two */
	const char *paths[] = { "/", "/a", "/b", "/a/x", "/a/y", "/b/z", "/a/x/deep" };

	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		struct acct_cgroup *cg = add(f, paths[i]);
		acct_cgroup_set(cg, ACCT_Q_MEMORY, 1);
		if (i == 0) /* the root's level: 2 series */
			acct_cgroup_set(cg, ACCT_Q_WORKING_SET, 1);
	}
	acct_metrics_options_default(&o);
	o.families = 1u << ACCT_MF_MEMORY;

	static const struct {
		unsigned max_series;
		uint64_t left_out, series_left_out;
		int depth_shown;
		const char *comment; /* NULL: none */
	} cases[] = {
		{ 0, 0, 0, 32, NULL }, /* no cut */
		{ 8, 0, 0, 32, NULL }, /* all fit */
		{ 7, 1, 1, 2,
		  "# acctd: 1 cgroups below depth 2 (1 series) left out of this page by [metrics] max_series = 7; "
		  "ask for them with ?max_depth=N or ?cgroup=GLOB\n" },
		{ 6, 4, 4, 1, "# acctd: 4 cgroups below depth 1 (4 series)" },
		{ 4, 4, 4, 1, NULL },
		{ 3, 6, 6, 0, NULL },
		{ 2, 6, 6, 0, NULL },
		{ 1, 7, 8, -1, "# acctd: all 7 cgroups (8 series) left out" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		o.max_series = cases[i].max_series;
		cut = page_cut(f, &o);
		assert_int_equal(cut.cgroups, cases[i].left_out);
		assert_int_equal(cut.series, cases[i].series_left_out);
		assert_int_equal(cut.depth_shown, cases[i].depth_shown);

		char *page = render(f, &o, NULL, 1 << 20);
		char line[128];
		snprintf(line, sizeof(line), "acctd_metrics_cgroups_left_out %" PRIu64, cases[i].left_out);
		assert_has(page, line);
		snprintf(line, sizeof(line), "acctd_metrics_series_left_out %" PRIu64, cases[i].series_left_out);
		assert_has(page, line);
		snprintf(line, sizeof(line), "acctd_metrics_cgroups %" PRIu64, ELEMENTSOF(paths) - cases[i].left_out);
		assert_has(page, line);
		/* whole levels: every cgroup down to the level shown, none below */
		for (size_t k = 0; k < ELEMENTSOF(paths); k++) {
			int depth = 0;
			for (const char *c = paths[k] + 1; *c; c++)
				depth += *c == '/';
			depth += strcmp(paths[k], "/") != 0;
			snprintf(line, sizeof(line), "acctd_memory_bytes{cgroup=\"%s\"} 1", paths[k]);
			if (depth <= cases[i].depth_shown)
				assert_has(page, line);
			else
				assert_lacks(page, line);
		}
		if (cases[i].comment)
			assert_non_null(strstr(page, cases[i].comment));
		if (!cases[i].left_out)
			assert_lacks(page, "# acctd:");
		free(page);
	}
	/* Hysteresis: past the depth the previous page showed (cut_hint), a
	 * level is added only when it fits in 90% of max_series (8 series in
	 * all, 7 down to depth 2); a level that does not fit goes at once. */
	static const struct {
		unsigned max_series;
		int hint, depth_shown;
	} hyst[] = {
		{ 8, INT_MAX, 32 }, /* no hint: all fit */
		{ 8, 2, 2 },        /* 8 > 90% of 8: depth 3 stays out */
		{ 9, 2, 32 },       /* 8 <= 90% of 9 (8.1): it comes back */
		{ 8, 3, 32 },       /* shown before: stays while it fits */
		{ 6, 3, 1 },        /* no longer fits: cut at once, past the hint */
		{ 2, INT_MAX, 0 },
		{ 2, -1, -1 },      /* the root's 2 series > 90% of 2 */
	};
	for (size_t i = 0; i < ELEMENTSOF(hyst); i++) {
		o.max_series = hyst[i].max_series;
		o.cut_hint = hyst[i].hint;
		cut = page_cut(f, &o);
		if (cut.depth_shown != hyst[i].depth_shown)
			fail_msg("max_series %u, hint %d: depth %d shown, not %d", hyst[i].max_series, hyst[i].hint,
				 cut.depth_shown, hyst[i].depth_shown);
	}
	o.cut_hint = INT_MAX;

	/* OpenMetrics allows no comment lines: the gauges alone say it */
	o.max_series = 6;
	o.format = ACCT_METRICS_OPENMETRICS;
	char *page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_metrics_cgroups_left_out 4");
	assert_lacks(page, "# acctd:");
	free(page);
	o.format = ACCT_METRICS_TEXT;

	/* select: also required, with the include globs; excludes still apply */
	char *inc[] = { "/a*", "/b", NULL };
	char *sel[] = { "/a/*", "/b*", NULL };
	char *exc[] = { "/a/x", NULL };
	o.max_series = 0;
	o.include = inc;
	o.select = sel;
	o.exclude = exc;
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_memory_bytes{cgroup=\"/a/y\"} 1");
	assert_has(page, "acctd_memory_bytes{cgroup=\"/b\"} 1");
	assert_lacks(page, "cgroup=\"/a\"");       /* not selected */
	assert_lacks(page, "cgroup=\"/b/z\"");     /* not included */
	assert_lacks(page, "cgroup=\"/a/x");        /* excluded, with its subtree */
	assert_lacks(page, "cgroup=\"/\"");
	assert_has(page, "acctd_metrics_cgroups 2");
	free(page);
}

/* v1: the hierarchical total_<key> is exported as <key>, the local key not. */
static void test_memstat_v1(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	struct acct_cgroup *cg = add(f, "/v1");
	struct acct_cgroup *local_only = add(f, "/local");
	static const struct {
		const char *k;
		int64_t v;
	} kv[] = { { "cache", 1 }, { "rss", 2 }, { "pgfault", 3 }, { "hierarchical_memory_limit", 4 },
		   { "total_cache", 10 }, { "total_rss", 20 }, { "total_pgfault", 30 },
		   { "total_workingset_refault_file", 40 } };

	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		assert_int_equal(acct_cgroup_set_memstat(f->l, cg, kv[i].k, strlen(kv[i].k), kv[i].v), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, local_only, "cache", 5, 5), 0);
	acct_metrics_options_default(&o);
	o.families = ACCT_METRICS_FAMILIES_ALL;
	char *page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_memory_stat_bytes{cgroup=\"/v1\",type=\"cache\"} 10");
	assert_has(page, "acctd_memory_stat_bytes{cgroup=\"/v1\",type=\"rss\"} 20");
	assert_lacks(page, "type=\"cache\"} 1\n");
	assert_has(page, "acctd_memory_stat_events_total{cgroup=\"/v1\",event=\"pgfault\"} 30");
	assert_has(page, "acctd_memory_stat_events_total{cgroup=\"/v1\",event=\"workingset_refault_file\"} 40");
	assert_lacks(page, "hierarchical_memory_limit");
	assert_has(page, "acctd_memory_stat_bytes{cgroup=\"/local\",type=\"cache\"} 5"); /* no total_: the local key */
	free(page);
}

static void test_classify(void **state)
{
	static const char *const bytes[] = { "anon", "file", "kernel", "kernel_stack", "pagetables", "percpu", "sock",
					     "shmem", "zswap", "zswapped", "file_mapped", "anon_thp", "slab",
					     "inactive_file", "unevictable", "cache", "rss", "rss_huge", "swap",
					     "hugetlb", "swapcached" };
	static const char *const events[] = { "pgfault", "pgmajfault", "pgscan", "pgsteal_kswapd", "pgpgin",
					      "thp_fault_alloc", "workingset_refault_anon", "workingset_nodereclaim",
					      "numa_pages_migrated", "zswpin", "zswpout", "zswpwb", "pswpin",
					      "swpout_zero", "pgdemote_kswapd", "pgpromote_success" };
	static const char *const skip[] = { "workingset_nodes", "hierarchical_memory_limit",
					    "hierarchical_memsw_limit" };
	for (size_t i = 0; i < sizeof(bytes) / sizeof(bytes[0]); i++)
		assert_int_equal(acct_memstat_classify(bytes[i]), ACCT_MEMSTAT_BYTES);
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		assert_int_equal(acct_memstat_classify(events[i]), ACCT_MEMSTAT_EVENTS);
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		assert_int_equal(acct_memstat_classify(skip[i]), ACCT_MEMSTAT_SKIP);
}

static struct fixture *many(struct fixture *f, unsigned n)
{
	char path[64];
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/s%04u", i);
		add_full(f, path);
	}
	return f;
}

/* Any chunk size gives the same page; pieces stay near the chunk size. */
static void test_chunks(void **state)
{
	struct fixture *f = many(*state, 300);
	struct acct_metrics_options o;

	acct_metrics_options_default(&o);
	o.families = ACCT_METRICS_FAMILIES_ALL;
	for (int fmt = 0; fmt < 2; fmt++) {
		o.format = fmt ? ACCT_METRICS_OPENMETRICS : ACCT_METRICS_TEXT;
		char *whole = render(f, &o, NULL, 1 << 30);
		static const size_t chunks[] = { 0, 1, 100, 4096, 65536 };
		for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
			struct acct_metrics_page *p = NULL;
			struct out out = { 0 };
			int r;
			rcu_read_lock();
			assert_int_equal(acct_metrics_page_new(f->l, &o, NULL, f->now, &p), 0);
			do
				r = acct_metrics_page_render(p, chunks[c], collect, &out);
			while (r > 0);
			assert_int_equal(r, 0);
			assert_int_equal(acct_metrics_page_bytes(p), out.len);
			acct_metrics_page_free(p);
			rcu_read_unlock();
			assert_string_equal(out.buf, whole);
			if (chunks[c] >= 4096)
				assert_true(out.max_piece < chunks[c] + 8192);
			free(out.buf);
		}
		free(whole);
	}
}

static int fail_write(const void *data, size_t len, void *userdata)
{
	return -EPIPE;
}

static void test_write_error(void **state)
{
	struct fixture *f = many(*state, 10);
	struct acct_metrics_options o;
	acct_metrics_options_default(&o);
	rcu_read_lock();
	assert_int_equal(acct_metrics_render(f->l, &o, NULL, f->now, fail_write, NULL), -EPIPE);
	rcu_read_unlock();
}


/* Options the renderer cannot honour are refused before anything is
 * rendered: an unknown format, more latency buckets than a page has room for. */
static void test_bad_options(void **state)
{
	struct fixture *f = many(*state, 2);
	struct acct_metrics_options o;
	struct acct_metrics_page *p = NULL;
	struct out out = { 0 };
	static const struct acct_metrics_self too_many = { .nr_buckets = ACCT_METRICS_MAX_BUCKETS + 1 };

	int r[4];

	acct_metrics_options_default(&o);
	o.format = (enum acct_metrics_format)7;
	/* results asserted outside the read-side section (a failed assertion
	 * inside would leave it held) */
	rcu_read_lock();
	r[0] = acct_metrics_page_new(f->l, &o, NULL, f->now, &p);
	r[1] = acct_metrics_render(f->l, &o, NULL, f->now, collect, &out);
	acct_metrics_options_default(&o);
	r[2] = acct_metrics_page_new(f->l, &o, &too_many, f->now, &p);
	r[3] = acct_metrics_render(f->l, &o, &too_many, f->now, collect, &out);
	rcu_read_unlock();
	for (int i = 0; i < 4; i++)
		assert_int_equal(r[i], -EINVAL);
	assert_null(p);
	assert_int_equal(out.len, 0);
	free(out.buf);
}

/* A writer that allocates nothing (the sweep below fails allocations): into
 * a buffer made beforehand. */
struct fixed_out {
	char *buf;
	size_t len, cap;
};

static int collect_fixed(const void *data, size_t len, void *userdata)
{
	struct fixed_out *o = userdata;
	assert_true(o->len + len < o->cap);
	memcpy(o->buf + o->len, data, len);
	o->len += len;
	o->buf[o->len] = '\0';
	return 0;
}

/* Out of memory at any allocation of a page (its rows, arena, bounds, the
 * text buffer): the render fails with -ENOMEM, or, where the allocation was
 * one the page can do without, gives the whole page. */
static void test_out_of_memory(void **state)
{
	struct fixture *f = many(*state, 40);
	struct acct_metrics_options o;
	unsigned failed = 0;

	acct_metrics_options_default(&o);
	assert_int_equal(acct_metrics_families_apply(&o.families, (char *[]){ "cadvisor", NULL }, NULL), 0);
	char *whole = render(f, &o, NULL, 1 << 20);
	struct fixed_out out = { .cap = 2 * strlen(whole) + 1 };
	out.buf = malloc(out.cap);
	assert_non_null(out.buf);
	for (unsigned n = 0; n < 400; n++) {
		out.len = 0;
		out.buf[0] = '\0';
		alloc_fail_after(n);
		rcu_read_lock();
		int r = acct_metrics_render(f->l, &o, NULL, f->now, collect_fixed, &out);
		rcu_read_unlock();
		bool hit = alloc_fail_hit();
		alloc_fail_off();
		if (!hit) {
			assert_int_equal(r, 0);
			assert_string_equal(out.buf, whole);
			break;
		}
		if (r == -ENOMEM)
			failed++;
		else {
			assert_int_equal(r, 0);
			assert_string_equal(out.buf, whole);
		}
	}
	free(out.buf);
	assert_true(failed >= 3); /* rows, arena, text: each failed the page */
	free(whole);
}

/* What the max_series cut left out is said whatever families are on (the
 * memory family is the first, bit 0: here it is off). */
static void test_cut_said_without_memory(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	const char *paths[] = { "/", "/a", "/b", "/a/x" };

	for (size_t i = 0; i < ELEMENTSOF(paths); i++)
		acct_cgroup_set(add(f, paths[i]), ACCT_Q_CPU_USAGE, 1000);
	acct_metrics_options_default(&o);
	o.families = 1u << ACCT_MF_CPU;
	o.max_series = 2;
	char *page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_metrics_cgroups_left_out 3");
	assert_lacks(page, "id=\"/a\"");
	free(page);
}

/* A v1 cgroup whose total_rss is 0 has an RSS of 0 in cAdvisor's name:
 * its own key, not the v2 one (anon, absent on v1). */
static void test_cadvisor_zero_key(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	struct acct_cgroup *v1 = add(f, "/idle.slice");

	acct_cgroup_set(v1, ACCT_Q_MEMORY, 4096);
	assert_int_equal(acct_cgroup_set_memstat(f->l, v1, "total_rss", 9, 0), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, v1, "total_cache", 11, 4096), 0);
	acct_metrics_options_default(&o);
	assert_int_equal(acct_metrics_families_apply(&o.families, (char *[]){ "cadvisor", NULL }, NULL), 0);
	char *page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "container_memory_rss{id=\"/idle.slice\"} 0");
	assert_has(page, "container_memory_cache{id=\"/idle.slice\"} 4096");
	free(page);
}

/* The deepest levels a page can have (depth 255: the cut counts levels in
 * a byte) are cut like any other; the chain's paths reach 510 bytes, and
 * one of 512 is filtered by an exclude of its parent's glob. */
static void test_cut_deepest_levels(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	char path[600] = "";
	size_t len = 0;

	acct_cgroup_set(add(f, "/"), ACCT_Q_MEMORY, 1);
	for (int d = 1; d <= 255; d++) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/a");
		acct_cgroup_set(add(f, path), ACCT_Q_MEMORY, 1);
	}
	assert_int_equal(len, 510);
	/* 512 bytes: under the 510-byte chain, "/bb" is its last part */
	snprintf(path + 508, sizeof(path) - 508, "/bb");
	assert_int_equal(strlen(path), 511);
	snprintf(path + 508, sizeof(path) - 508, "/bbb");
	assert_int_equal(strlen(path), 512);
	acct_cgroup_set(add(f, path), ACCT_Q_MEMORY, 1);
	acct_metrics_options_default(&o);
	o.families = 1u << ACCT_MF_MEMORY;
	o.max_depth = 1000;
	o.max_series = 250; /* depths 0 to 249 */
	o.cut_hint = 255;   /* the last page showed them all: no hysteresis */
	char *page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_metrics_cgroups_left_out 7");
	assert_has(page, "acctd_metrics_series_left_out 7");
	free(page);
	/* the 512-byte path's level (255) shown, and the path left out by an
	 * exclude of its parent */
	o.max_series = 0;
	path[508] = '\0'; /* the chain at depth 254 */
	char glob[600];
	snprintf(glob, sizeof(glob), "%s", path);
	char *excl[] = { glob, NULL };
	o.exclude = excl;
	page = render(f, &o, NULL, 1 << 20);
	assert_lacks(page, "bbb");
	unsigned shown = 0;
	for (const char *c = page; (c = strstr(c, "\nacctd_memory_bytes{")); c++)
		shown++;
	assert_int_equal(shown, 257 - 3); /* the depth-254 chain, and below it the 255 one and bbb */
	free(page);
	o.exclude = NULL;
	page = render(f, &o, NULL, 1 << 20);
	char line[700];
	snprintf(line, sizeof(line), "acctd_memory_bytes{cgroup=\"%s/bbb\"} 1", path);
	assert_has(page, line);
	free(page);
}

/* Whether a page of the memory family with options o, rendered with each
 * allocation failed in turn, ever succeeds with `needle` in it. */
static bool shown_in_any_failure(struct fixture *f, const struct acct_metrics_options *o, const char *needle)
{
	struct fixed_out out = { .cap = 1 << 20 };
	bool shown = false;

	out.buf = malloc(out.cap);
	assert_non_null(out.buf);
	for (unsigned n = 0; n < 400; n++) {
		out.len = 0;
		out.buf[0] = '\0';
		alloc_fail_after(n);
		rcu_read_lock();
		int r = acct_metrics_render(f->l, o, NULL, f->now, collect_fixed, &out);
		rcu_read_unlock();
		bool hit = alloc_fail_hit();
		alloc_fail_off();
		if (!hit)
			break;
		assert_true(r == 0 || r == -ENOMEM);
		shown |= r == 0 && strstr(out.buf, needle);
	}
	free(out.buf);
	return shown;
}

/* An exclude glob is matched against every ancestor of a path, on a copy of
 * the path: on the stack up to 511 bytes, allocated from 512 on (its
 * terminator would not fit). Out of memory for that copy, the cgroup is
 * exported rather than dropped; a 511-byte path needs no memory and stays
 * excluded whatever fails. */
static void test_exclude_long_path_without_memory(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	char path[600] = "/ex/";
	char *excl[] = { "/ex", NULL };

	acct_cgroup_set(add(f, "/"), ACCT_Q_MEMORY, 1);
	acct_cgroup_set(add(f, "/ex"), ACCT_Q_MEMORY, 1);
	memset(path + 4, 'l', 507);
	assert_int_equal(strlen(path), 511);
	acct_cgroup_set(add(f, path), ACCT_Q_MEMORY, 1);
	memset(path + 4, 's', 508);
	assert_int_equal(strlen(path), 512);
	acct_cgroup_set(add(f, path), ACCT_Q_MEMORY, 1);
	acct_metrics_options_default(&o);
	o.families = 1u << ACCT_MF_MEMORY;
	o.exclude = excl;
	char *page = render(f, &o, NULL, 1 << 20);
	assert_lacks(page, "/ex");
	free(page);
	assert_true(shown_in_any_failure(f, &o, "/ex/ssss"));
	assert_false(shown_in_any_failure(f, &o, "/ex/llll"));
}

/* With error budgets of 0 every counter's batch is 1 (exact): the largest
 * batch of each kind is 1. */
static void test_engine_kinds_exact(void **state)
{
	struct fixture g = { 0 };
	struct acct_ledger_budgets b = { 0, 0, 0 };
	struct acct_topology *t = NULL;
	struct acct_metrics_options o;
	static const struct acct_metrics_self self = { .have_domain = true };

	(void)state;
	assert_int_equal(acct_topology_simulate(4, 2, &t), 0);
	struct acct_domain_options dopt = { .topology = t };
	assert_int_equal(acct_domain_new(&dopt, &g.d), 0);
	acct_topology_free(t);
	assert_int_equal(acct_ledger_new(g.d, &b, &g.l), 0);
	g.now = 1000000000;
	add_full(&g, "/a");
	acct_metrics_options_default(&o);
	o.families = 1u << ACCT_MF_ENGINE_KINDS;
	char *page = render(&g, &o, &self, 1 << 20);
	assert_has(page, "acctd_engine_batch_max{kind=\"bytes\"} 1");
	assert_has(page, "acctd_engine_batch_max{kind=\"cpu\"} 1");
	assert_has(page, "acctd_engine_batch_max{kind=\"tasks\"} 1");
	free(page);
	acct_ledger_free(g.l);
	acct_domain_free(g.d);
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* No (name, labels) twice on a page. */
static void assert_no_duplicates(const char *page)
{
	char *copy = strdup(page), **lines = NULL;
	size_t n = 0, cap = 0;
	for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '#')
			continue;
		*strrchr(l, ' ') = '\0';
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			lines = realloc(lines, cap * sizeof(*lines));
		}
		lines[n++] = l;
	}
	qsort(lines, n, sizeof(*lines), compare_strings);
	for (size_t i = 1; i < n; i++)
		if (strcmp(lines[i - 1], lines[i]) == 0)
			fail_msg("series twice: %s", lines[i]);
	free(lines);
	free(copy);
}

/* The ledger changes between two steps, records are swept and freed: the
 * page goes on with the copy it took at its start (every family shows the
 * same instant), without touching freed records (ASan checks that). */
static void test_sweep_during_page(void **state)
{
	struct fixture *f = many(*state, 200);
	struct acct_metrics_options o;
	struct acct_metrics_page *p = NULL;
	struct out out = { 0 };
	int r, steps = 0;

	acct_metrics_options_default(&o);
	rcu_read_lock();
	assert_int_equal(acct_metrics_page_new(f->l, &o, NULL, f->now, &p), 0);
	rcu_read_unlock();
	do {
		r = acct_metrics_page_render(p, 2000, collect, &out);
		steps++;
		if (steps == 20 || steps == 60) {
			/* kill and sweep every third cgroup, change the others, add one, wait for the frees */
			char path[64];
			for (unsigned i = (unsigned)steps; i < 200; i++) {
				snprintf(path, sizeof(path), "/s%04u", i);
				struct acct_cgroup *cg = acct_ledger_find(f->l, path);
				if (!cg || acct_cgroup_is_dead(cg))
					continue;
				if (i % 3 == 0)
					acct_ledger_kill(f->l, cg, f->now);
				else
					acct_cgroup_set(cg, ACCT_Q_MEMORY, 1);
			}
			acct_ledger_sweep(f->l, f->now + 1, 0, NULL, NULL);
			snprintf(path, sizeof(path), "/s%04u-new", steps);
			add_full(f, path);
			rcu_barrier();
		}
	} while (r > 0);
	assert_int_equal(r, 0);
	acct_metrics_page_free(p);
	assert_true(steps > 60);
	check_page(out.buf, false);
	assert_no_duplicates(out.buf);
	/* the page is the ledger as it was when it started */
	assert_has(out.buf, "acctd_metrics_cgroups 200");
	assert_has(out.buf, "acctd_memory_bytes{cgroup=\"/s0199\"} 10485760");
	assert_has(out.buf, "acctd_value_age_seconds{cgroup=\"/s0198\",group=\"load\"} 1.5");
	assert_lacks(out.buf, "-new");
	assert_lacks(out.buf, "acctd_memory_bytes{cgroup=\"/s0100\"} 1\n"); /* changed after the start */
	free(out.buf);
}

static void test_bounds(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	struct acct_cgroup *cg = add(f, "/charged");

	acct_cgroup_set(cg, ACCT_Q_MEMORY, 1 << 20);
	acct_cgroup_set(cg, ACCT_Q_CPU_USAGE, 1000);
	assert_int_equal(acct_counter_upgrade(cg->q[ACCT_Q_MEMORY]), 0);
	assert_int_equal(acct_counter_upgrade(cg->q[ACCT_Q_CPU_USAGE]), 0);
	struct acct_reading mem, cpu;
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, false, &mem));
	assert_true(acct_cgroup_get(cg, ACCT_Q_CPU_USAGE, false, &cpu));
	acct_metrics_options_default(&o);
	char *page = render(f, &o, NULL, 1 << 20);
	if (mem.bound) {
		char line[256];
		snprintf(line, sizeof(line), "acctd_value_bound_bytes{cgroup=\"/charged\",quantity=\"memory\"} %llu",
			 (unsigned long long)mem.bound);
		assert_has(page, line);
	}
	if (cpu.bound)
		assert_non_null(strstr(page, "\nacctd_value_bound_seconds{cgroup=\"/charged\",quantity=\"cpu.usage\"} 0."));
	assert_true(mem.bound > 0 || cpu.bound > 0);
	assert_lacks(page, "acctd_value_age_seconds{cgroup=\"/charged\""); /* never sampled */
	free(page);
}

/* A cgroup read without CPU accounting (v1 memory hierarchy only): its fast
 * values are fresh, its CPU time was never read, so it has no CPU rate and no
 * averages, not 0; nor a working set, load or task count it never had. */
static void test_never_read_is_absent(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	struct acct_cgroup *cg = add(f, "/memonly");

	acct_cgroup_set(cg, ACCT_Q_MEMORY, 1 << 20);
	cg->sampled_us[ACCT_GROUP_FAST] = f->now - 100000;
	cg->sampled_us[ACCT_GROUP_SLOW] = f->now - 100000;
	acct_metrics_options_default(&o);
	o.families = ACCT_METRICS_FAMILIES_ALL;
	char *page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_memory_bytes{cgroup=\"/memonly\"} 1048576");
	assert_lacks(page, "acctd_cpu_rate_cores{cgroup=\"/memonly\"}");
	assert_lacks(page, "acctd_cpu_rate_average_cores{cgroup=\"/memonly\"");
	assert_lacks(page, "acctd_cpu_usage_seconds_total{cgroup=\"/memonly\"}");
	assert_lacks(page, "acctd_memory_working_set_bytes{cgroup=\"/memonly\"}");
	assert_lacks(page, "acctd_load_average{cgroup=\"/memonly\"");
	assert_lacks(page, "acctd_tasks{cgroup=\"/memonly\"}");
	assert_lacks(page, "acctd_pressure_stalled_ratio{cgroup=\"/memonly\"");
	free(page);

	/* once a rate was computed it is there, even when it is 0 */
	__atomic_store_n(&cg->cpu_rate_known, true, __ATOMIC_RELEASE);
	page = render(f, &o, NULL, 1 << 20);
	assert_has(page, "acctd_cpu_rate_cores{cgroup=\"/memonly\"} 0");
	free(page);
}

/* ---- the whole page against a stored copy ------------------------------------------ */

/* Every family with values: two full cgroups (one whose path needs escaping),
 * I/O devices and rates, v1 memory.stat, a tombstone, and acctd's own figures
 * all set. The pages are compared byte for byte with tests/data/metrics-render/
 * (ACCT_METRICS_GOLDEN_WRITE=1 rewrites them): restructuring the renderer must
 * not change a byte of what it serves. */
static void golden_ledger(struct fixture *f)
{
	struct acct_cgroup *a = add_full(f, "/system.slice/a.service");
	struct acct_cgroup *w = add_full(f, "/we\"i\\rd\xff\x1b.scope");
	struct acct_cgroup *v1 = add(f, "/v1.slice");
	struct acct_cgroup *gone = add(f, "/gone.service");
	int64_t io[_ACCT_IO_STAT_MAX] = { 4096, 8192, 3, 5, 7, 9 };
	int sda = acct_ledger_io_device_add(f->l, 8, 0, "sda"), anon = acct_ledger_io_device_add(f->l, 253, 7, NULL);

	assert_true(sda >= 0 && anon >= 0);
	assert_int_equal(acct_cgroup_set_io_device(a, (unsigned)sda, io), 0);
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
		acct_cgroup_set(a, acct_io_stat_quantity((enum acct_io_stat)k), io[k] * 2);
		acct_cgroup_set_double(&a->io_rate_bits[k], 0.1 * (k + 1));
	}
	__atomic_store_n(&a->io_rate_known, true, __ATOMIC_RELEASE);
	io[ACCT_IO_READ_BYTES] = 512;
	io[ACCT_IO_WRITE_IOS] = -1;
	assert_int_equal(acct_cgroup_set_io_device(a, (unsigned)anon, io), 0);
	assert_int_equal(acct_cgroup_set_io_device(w, (unsigned)anon, io), 0);
	for (int i = 0; i < 3; i++) {
		acct_cgroup_set_double(&a->cpu_rate_avg_bits[i], 1.0 / (i + 3));
		acct_cgroup_set_double(&w->cpu_rate_avg_bits[i], 1e-7 * (i + 1));
	}
	acct_cgroup_set_double(&w->cpu_rate_bits, 123456789.125);
	acct_cgroup_set(a, ACCT_Q_MEMORY_EVENTS_LOW, 1);
	acct_cgroup_set(a, ACCT_Q_MEMORY_EVENTS_HIGH, 2);
	acct_cgroup_set(a, ACCT_Q_MEMORY_EVENTS_MAX, 4);
	acct_cgroup_set(a, ACCT_Q_MEMORY_EVENTS_OOM, 5);
	acct_cgroup_set(a, ACCT_Q_MEMORY_EVENTS_OOM_KILL, 1);
	acct_cgroup_set(a, ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL, 6);
	acct_cgroup_set(a, ACCT_Q_MEMORY_UNDER_OOM, 0);
	acct_cgroup_set(a, ACCT_Q_PSI_CPU_SOME, 1234567);
	acct_cgroup_set(w, ACCT_Q_MEMORY_HIGH, 1 << 30);
	acct_cgroup_set(w, ACCT_Q_SWAP_MAX, 1 << 20);
	acct_cgroup_set(w, ACCT_Q_CPU_USAGE, -3);
	__atomic_store_n(&w->sample_errors, 17, __ATOMIC_RELAXED);
	__atomic_store_n(&w->psi_avg[ACCT_PSI_MEMORY][1][2], 10000, __ATOMIC_RELAXED);
	w->loadavg[0] = 2047;
	w->loadavg[1] = 4096 + 1;
	w->loadavg[2] = ~0ul;
	assert_int_equal(acct_cgroup_set_memstat(f->l, a, "file_mapped", 11, 1024), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, a, "thp_fault_alloc", 15, 3), 0);
	assert_int_equal(acct_counter_upgrade(a->q[ACCT_Q_MEMORY]), 0);
	assert_int_equal(acct_counter_upgrade(a->q[ACCT_Q_CPU_USAGE]), 0);
	assert_int_equal(acct_counter_upgrade(a->q[ACCT_Q_TASKS]), 0);
	acct_cgroup_set(v1, ACCT_Q_MEMORY, 5000);
	acct_cgroup_set(v1, ACCT_Q_MEMORY_MAX, 9000);
	acct_cgroup_set(v1, ACCT_Q_CPU_USAGE, 0);
	acct_cgroup_set(v1, ACCT_Q_CPU_PERIODS, 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, v1, "rss", 3, 100), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, v1, "total_rss", 9, 300), 0);
	assert_int_equal(acct_cgroup_set_memstat(f->l, v1, "total_cache", 11, 700), 0);
	acct_cgroup_set(gone, ACCT_Q_MEMORY, 222);
	acct_cgroup_set(gone, ACCT_Q_CPU_USAGE, 1500000);
	acct_cgroup_set(gone, ACCT_Q_MEMORY_PEAK, 4096);
	acct_ledger_kill(f->l, gone, f->now - 1000000);
}

static void golden_compare(const char *page, const char *name)
{
	char path[4096];
	const char *dir = getenv("ACCT_TEST_DATA");

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/metrics-render/%s", dir, name);
	if (getenv("ACCT_METRICS_GOLDEN_WRITE")) {
		FILE *out = fopen(path, "we");
		assert_non_null(out);
		assert_int_equal(fwrite(page, 1, strlen(page), out), strlen(page));
		assert_int_equal(fclose(out), 0);
		return;
	}
	FILE *in = fopen(path, "re");
	if (!in)
		fail_msg("%s: %m", path);
	char *want = calloc(1, 1 << 20);
	assert_non_null(want);
	size_t n = fread(want, 1, (1 << 20) - 1, in);
	fclose(in);
	if (strlen(page) != n || memcmp(page, want, n) != 0) {
		size_t i = 0;
		while (i < n && page[i] == want[i])
			i++;
		fail_msg("%s differs at byte %zu: ...%.80s", name, i, page + (i > 20 ? i - 20 : 0));
	}
	free(want);
}

static void test_golden(void **state)
{
	struct fixture *f = *state;
	struct acct_metrics_options o;
	static const double bounds[4] = { 0.001, 0.25, 1, __builtin_inf() };
	static const struct acct_metrics_count api[2] = {
		{ "io.acctd.Accounting.Get", "ok", 5 },
		{ "io.acctd.Accounting.Get", "io.acctd.Accounting.NoSuchCgroup", 1 },
	};
	static const struct acct_metrics_count refusals[1] = { { "cpu", NULL, 3 } };
	static const struct acct_metrics_count http[2] = { { "200", NULL, 40 }, { "400", NULL, 2 } };
	struct acct_reconcile_report rec = {
		.passes = 9, .checked_parents = 4, .unchanged_passes = 5, .root_memory = 1 << 30, .meminfo_used = 2ll << 30,
		.meminfo_total = 8ll << 30,
	};
	struct acct_metrics_self self = {
		.version = "1.2.3",
		.start_time = 1700000000.5,
		.ready = true,
		.cgroups_live = 3,
		.cgroups_dead = 1,
		.bucket_bounds = bounds,
		.nr_buckets = 4,
		.pass = { { .bucket = { 1, 2, 3, 3 }, .count = 3, .sum_seconds = 0.75 },
			  { .bucket = { 0, 1, 1, 2 }, .count = 2, .sum_seconds = 1.5 } },
		.cgroups_failed_total = 6, .pass_steady = 11,
		.log_lines_dropped = 7, .log_lines_suppressed = 8, .tombstones_folded = 9,
		.have_sampler = true, .cached_descriptors = 120, .descriptors_degraded = true,
		.reconcile = &rec,
		.have_domain = true,
		.budgets = { 1 << 20, 10000, 8 },
		.reloads = 2, .reload_failures = 1, .last_reload_ok = false, .last_reload_time = 1700000100.25,
		.have_api = true, .api_connections = 2, .api_connections_total = 30, .api_refused_total = 1,
		.api_requests = api, .nr_api_requests = 2, .api_budget_refusals = refusals, .nr_api_budget_refusals = 1,
		.have_http = true, .http_connections = 1, .http_connections_total = 42, .http_evicted_total = 3,
		.http_refused_total = 4, .http_timeouts_total = 5, .http_responses = http, .nr_http_responses = 2,
		.collectors = { [0] = { "bpf", "the kernel's accounting", 3 }, [1] = { "files", NULL, -1 } },
		.bpf_checks = 11, .bpf_mismatches = 1, .kernel_passes = 12,
		.have_history = true, .history_enabled = true, .history_up = true, .history_bytes = 1 << 22,
		.history_errors_total = 1, .history_recordings_total = 100, .history_records_total = 7,
		.history_heap_bytes = 1 << 20, .history_last_recording_time = 1700000200.75,
		.history_last_recording_age = 2.5, .history_interval = 10, .history_stalled = false,
		.have_process = true, .process_cpu_seconds = 12.34, .process_rss_bytes = 1 << 24,
		.process_virtual_bytes = 1ull << 33, .process_max_fds = 65536,
	};

	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		self.sample_errors[i] = (uint64_t)i * 3;
	for (int i = 0; i < _ACCT_KIND_MAX; i++)
		self.pass_cpu_seconds[i] = 0.25 * (i + 1);
	for (int i = 0; i < _ACCT_INV_MAX; i++) {
		rec.violations[i] = (uint64_t)i;
		rec.violations_total[i] = (uint64_t)i * 10;
	}
	for (uint64_t v = 1; v < 200; v += 7) {
		histogram_add(&rec.drift_memory, v * 4096);
		histogram_add(&rec.drift_cpu, v * 1000);
	}
	acct_domain_stats(f->d, &self.domain);
	golden_ledger(f);
	acct_metrics_options_default(&o);
	o.families = ACCT_METRICS_FAMILIES_ALL;
	o.memory_stat_types = NULL;
	static const char *const names[2] = { "all.txt", "all.om" };
	for (int om = 0; om < 2; om++) {
		o.format = om ? ACCT_METRICS_OPENMETRICS : ACCT_METRICS_TEXT;
		char *page = render(f, &o, &self, 1 << 20);
		golden_compare(page, names[om]);
		char *small = render(f, &o, &self, 1); /* one cgroup per step: the same bytes */
		assert_string_equal(small, page);
		free(small);
		free(page);
	}
	/* the defaults, and no self figures at all */
	acct_metrics_options_default(&o);
	char *page = render(f, &o, NULL, 1 << 20);
	golden_compare(page, "default.txt");
	free(page);
}

static void test_families_apply(void **state)
{
	uint32_t set = 0;
	const char *bad = NULL;
	char *w1[] = { "default", "memory_events", "-numa", NULL };
	char *w2[] = { "none", "+memory", "cpu", NULL };
	char *w3[] = { "all", "-all", NULL };
	char *w4[] = { "memory", "nosuch", NULL };

	assert_int_equal(acct_metrics_families_apply(&set, w1, NULL), 0);
	assert_int_equal(set, (ACCT_METRICS_FAMILIES_DEFAULT | (1u << ACCT_MF_MEMORY_EVENTS)) & ~(1u << ACCT_MF_NUMA));
	assert_int_equal(acct_metrics_families_apply(&set, w2, NULL), 0);
	assert_int_equal(set, (1u << ACCT_MF_MEMORY) | (1u << ACCT_MF_CPU));
	assert_int_equal(acct_metrics_families_apply(&set, w3, NULL), 0);
	assert_int_equal(set, 0);
	set = 5;
	assert_int_equal(acct_metrics_families_apply(&set, w4, &bad), -EINVAL);
	assert_string_equal(bad, "nosuch");
	assert_int_equal(set, 5);
	for (int i = 0; i < _ACCT_MF_MAX; i++)
		assert_int_equal(acct_metrics_family_from_string(acct_metrics_family_to_string(i)), i);
	assert_int_equal(acct_metrics_family_from_string("x"), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_text_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_openmetrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cadvisor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_label_twins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tombstones, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_and_select, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memstat_v1, setup, teardown),
		cmocka_unit_test(test_classify),
		cmocka_unit_test_setup_teardown(test_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep_during_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_read_is_absent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_golden, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_said_without_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cadvisor_zero_key, setup, teardown),
		cmocka_unit_test(test_engine_kinds_exact),
		cmocka_unit_test_setup_teardown(test_cut_deepest_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exclude_long_path_without_memory, setup, teardown),
		cmocka_unit_test(test_families_apply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
