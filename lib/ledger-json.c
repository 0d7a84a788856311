/* ledger-json.c - ledger records, passes and reconciliation as JSON. */
#include "ledger-json.h"

#include <string.h>

#include "util.h"

static struct json_object *value_json(int64_t v, uint64_t bound, uint64_t age)
{
	struct json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "value", json_object_new_int64(v));
	if (bound)
		json_object_object_add(o, "bound", json_object_new_int64((int64_t)MIN(bound, (uint64_t)INT64_MAX)));
	if (age != UINT64_MAX)
		json_object_object_add(o, "age_us", json_object_new_int64((int64_t)age));
	return o;
}

static struct json_object *double_json(double v, uint64_t age)
{
	struct json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "value", json_object_new_double(v));
	if (age != UINT64_MAX)
		json_object_object_add(o, "age_us", json_object_new_int64((int64_t)age));
	return o;
}

static struct json_object *quantity_json(const struct acct_cgroup *cg, enum acct_quantity q, uint64_t now_us,
					 bool precise)
{
	struct acct_reading rd;
	if (!acct_cgroup_get(cg, q, precise, &rd))
		return NULL;
	return value_json(rd.value, rd.bound, acct_cgroup_age(cg, acct_quantity_info(q)->group, now_us));
}

static const char *const psi_names[_ACCT_PSI_MAX] = { "cpu", "memory", "io" };
static const char *const avg_names[3] = { "avg10", "avg60", "avg300" };

static struct json_object *psi_json(const struct acct_cgroup *cg, uint64_t now_us)
{
	static const enum acct_quantity totals[_ACCT_PSI_MAX][2] = {
		{ ACCT_Q_PSI_CPU_SOME, ACCT_Q_PSI_CPU_FULL },
		{ ACCT_Q_PSI_MEMORY_SOME, ACCT_Q_PSI_MEMORY_FULL },
		{ ACCT_Q_PSI_IO_SOME, ACCT_Q_PSI_IO_FULL },
	};
	struct json_object *o = json_object_new_object();
	uint64_t age = acct_cgroup_age(cg, ACCT_GROUP_FAST, now_us);

	for (int r = 0; r < _ACCT_PSI_MAX; r++) {
		if (!__atomic_load_n(&cg->psi_known[r], __ATOMIC_ACQUIRE)) {
			json_object_object_add(o, psi_names[r], NULL);
			continue;
		}
		struct json_object *res = json_object_new_object();
		for (int k = 0; k < 2; k++) {
			struct acct_reading rd;
			if (!acct_cgroup_get(cg, totals[r][k], false, &rd))
				continue;
			struct json_object *line = json_object_new_object();
			for (int a = 0; a < 3; a++)
				json_object_object_add(
					line, avg_names[a],
					json_object_new_double(__atomic_load_n(&cg->psi_avg[r][k][a], __ATOMIC_RELAXED) / 100.0));
			json_object_object_add(line, "total_us", value_json(rd.value, rd.bound, age));
			json_object_object_add(res, k == 0 ? "some" : "full", line);
		}
		json_object_object_add(o, psi_names[r], res);
	}
	return o;
}

struct json_object *acct_cgroup_to_json(struct acct_ledger *l, const struct acct_cgroup *cg, uint64_t now_us,
					bool precise, unsigned nr_nodes)
{
	struct json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	bool dead = acct_cgroup_is_dead(cg);

	json_object_object_add(o, "path", json_object_new_string(cg->path));
	json_object_object_add(o, "depth", json_object_new_int((int)cg->depth));
	json_object_object_add(o, "state", json_object_new_string(dead ? "dead" : "live"));
	if (dead)
		json_object_object_add(o, "dead_for_us",
				       json_object_new_int64((int64_t)(now_us - __atomic_load_n(&cg->died_us, __ATOMIC_RELAXED))));
	json_object_object_add(o, "populated", json_object_new_boolean(__atomic_load_n(&cg->populated, __ATOMIC_RELAXED)));
	struct json_object *h = json_object_new_array();
	static const char *const hier[_ACCT_HIER_MAX] = { "unified", "memory", "cpuacct", "cpu" };
	uint32_t bits = __atomic_load_n(&cg->hierarchies, __ATOMIC_RELAXED);
	for (int i = 0; i < _ACCT_HIER_MAX; i++)
		if (bits & (1u << i))
			json_object_array_add(h, json_object_new_string(hier[i]));
	json_object_object_add(o, "hierarchies", h);

	struct json_object *q = json_object_new_object();
	for (int i = 0; i < _ACCT_Q_MAX; i++) {
		if (i >= ACCT_Q_PSI_CPU_SOME && i <= ACCT_Q_PSI_IO_FULL)
			continue; /* under "pressure" */
		json_object_object_add(q, acct_quantity_info(i)->name, quantity_json(cg, i, now_us, precise));
	}
	json_object_object_add(o, "values", q);

	uint64_t fast_age = acct_cgroup_age(cg, ACCT_GROUP_FAST, now_us);
	struct json_object *cpu = json_object_new_object();
	json_object_object_add(cpu, "rate", double_json(acct_cgroup_get_double(&cg->cpu_rate_bits), fast_age));
	static const char *const minutes[3] = { "avg1", "avg5", "avg15" };
	for (int i = 0; i < 3; i++)
		json_object_object_add(cpu, minutes[i], json_object_new_double(acct_cgroup_get_double(&cg->cpu_rate_avg_bits[i])));
	json_object_object_add(o, "cpu_rate_cores", cpu);

	uint64_t load_age = acct_cgroup_age(cg, ACCT_GROUP_LOAD, now_us);
	if (load_age != UINT64_MAX) {
		struct json_object *la = json_object_new_object();
		for (int i = 0; i < 3; i++) {
			unsigned long v = __atomic_load_n(&cg->loadavg[i], __ATOMIC_RELAXED);
			json_object_object_add(la, minutes[i], json_object_new_double((double)v / 2048.0));
		}
		json_object_object_add(la, "age_us", json_object_new_int64((int64_t)load_age));
		json_object_object_add(o, "load", la);
	} else
		json_object_object_add(o, "load", NULL);

	json_object_object_add(o, "pressure", psi_json(cg, now_us));

	uint64_t slow_age = acct_cgroup_age(cg, ACCT_GROUP_SLOW, now_us);
	int64_t *ms = __atomic_load_n(&cg->memstat, __ATOMIC_ACQUIRE);
	if (ms) {
		struct json_object *m = json_object_new_object();
		for (unsigned i = 0; i < acct_ledger_memstat_count(l); i++) {
			int64_t v = __atomic_load_n(&ms[i], __ATOMIC_RELAXED);
			if (v >= 0)
				json_object_object_add(m, acct_ledger_memstat_key(l, i), json_object_new_int64(v));
		}
		if (slow_age != UINT64_MAX)
			json_object_object_add(m, "age_us", json_object_new_int64((int64_t)slow_age));
		json_object_object_add(o, "memory_stat", m);
	} else
		json_object_object_add(o, "memory_stat", NULL);

	if (__atomic_load_n(&cg->numa_known, __ATOMIC_ACQUIRE)) {
		struct json_object *nodes = json_object_new_array();
		for (unsigned n = 0; n < nr_nodes; n++) {
			struct acct_reading rd;
			if (acct_counter_read_node(cg->numa, n, &rd) < 0)
				break;
			struct json_object *e = value_json(rd.value, rd.bound, slow_age);
			json_object_object_add(e, "node", json_object_new_int((int)n));
			json_object_array_add(nodes, e);
		}
		json_object_object_add(o, "numa", nodes);
	} else
		json_object_object_add(o, "numa", NULL);
	json_object_object_add(o, "sample_errors",
			       json_object_new_int64((int64_t)__atomic_load_n(&cg->sample_errors, __ATOMIC_RELAXED)));
	return o;
}

struct json_object *acct_cgroup_summary_json(const struct acct_cgroup *cg, uint64_t now_us)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(cg->path));
	json_object_object_add(o, "state", json_object_new_string(acct_cgroup_is_dead(cg) ? "dead" : "live"));
	json_object_object_add(o, "memory", quantity_json(cg, ACCT_Q_MEMORY, now_us, false));
	json_object_object_add(o, "cpu_rate", double_json(acct_cgroup_get_double(&cg->cpu_rate_bits),
							   acct_cgroup_age(cg, ACCT_GROUP_FAST, now_us)));
	json_object_object_add(o, "load1", json_object_new_double((double)__atomic_load_n(&cg->loadavg[0], __ATOMIC_RELAXED) / 2048.0));
	json_object_object_add(o, "psi_some_avg10",
			       json_object_new_double(__atomic_load_n(&cg->psi_avg[ACCT_PSI_CPU][0][0], __ATOMIC_RELAXED) / 100.0));
	return o;
}

struct json_object *acct_drift_to_json(const struct acct_drift_hist *h)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "count", json_object_new_int64((int64_t)h->count));
	json_object_object_add(o, "p50", json_object_new_int64((int64_t)acct_drift_percentile(h, 50)));
	json_object_object_add(o, "p90", json_object_new_int64((int64_t)acct_drift_percentile(h, 90)));
	json_object_object_add(o, "p99", json_object_new_int64((int64_t)acct_drift_percentile(h, 99)));
	json_object_object_add(o, "max", json_object_new_int64((int64_t)MIN(h->max, (uint64_t)INT64_MAX)));
	return o;
}

struct json_object *acct_reconcile_to_json(const struct acct_reconcile_report *rep)
{
	struct json_object *o = json_object_new_object();
	struct json_object *v = json_object_new_object(), *t = json_object_new_object();
	json_object_object_add(o, "passes", json_object_new_int64((int64_t)rep->passes));
	json_object_object_add(o, "checked_parents", json_object_new_int64((int64_t)rep->checked_parents));
	for (int i = 0; i < _ACCT_INV_MAX; i++) {
		json_object_object_add(v, acct_invariant_to_string(i), json_object_new_int64((int64_t)rep->violations[i]));
		json_object_object_add(t, acct_invariant_to_string(i), json_object_new_int64((int64_t)rep->violations_total[i]));
	}
	json_object_object_add(o, "violations", v);
	json_object_object_add(o, "violations_total", t);
	json_object_object_add(o, "last_violation",
			       rep->last_violation[0] ? json_object_new_string(rep->last_violation) : NULL);
	json_object_object_add(o, "drift_memory_bytes", acct_drift_to_json(&rep->drift_memory));
	json_object_object_add(o, "drift_cpu_us", acct_drift_to_json(&rep->drift_cpu));
	json_object_object_add(o, "root_memory", rep->root_memory >= 0 ? json_object_new_int64(rep->root_memory) : NULL);
	json_object_object_add(o, "meminfo_used", rep->meminfo_used >= 0 ? json_object_new_int64(rep->meminfo_used) : NULL);
	return o;
}

struct json_object *acct_pass_to_json(const struct acct_pass_report *pass)
{
	struct json_object *o = json_object_new_object(), *e = json_object_new_object();
	json_object_object_add(o, "cgroups", json_object_new_int64((int64_t)pass->cgroups));
	json_object_object_add(o, "wall_us", json_object_new_int64((int64_t)pass->wall_us));
	json_object_object_add(o, "cpu_seconds", json_object_new_double(pass->cpu_seconds));
	json_object_object_add(o, "files_read", json_object_new_int64((int64_t)pass->files_read));
	json_object_object_add(o, "skipped_empty", json_object_new_int64((int64_t)pass->skipped_empty));
	json_object_object_add(o, "open_per_read", json_object_new_int64((int64_t)pass->open_per_read));
	json_object_object_add(o, "cgroups_failed", json_object_new_int64((int64_t)pass->cgroups_failed));
	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		json_object_object_add(e, acct_sample_error_to_string(i), json_object_new_int64((int64_t)pass->errors[i]));
	json_object_object_add(o, "errors", e);
	return o;
}
