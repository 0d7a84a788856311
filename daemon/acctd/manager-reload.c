/* manager-reload.c - the configuration: read at the start and at each
 * reload (SIGHUP, Reload()), which applies what can change while acctd runs
 * and says what changed and what waits for a restart; and Tune(), which
 * changes the budgets and auto-tuning until the next reload and says what
 * part of each bound it moved. */
#include "manager-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "admin-group.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "config/budget-limits.h"
#include "config/ip-confine.h"
#include "history-recorder.h"
#include "query-workers.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free)

int manager_config_load(const struct manager_config_source *src, struct acct_config **ret,
			struct acct_config_diag *diag)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	int r;

	r = acct_config_load(src->main_file, src->dropin_dir, &c, diag);
	for (unsigned i = 0; r >= 0 && i < src->nr_overrides; i++)
		r = acct_config_set(c, src->overrides[i].section, src->overrides[i].key, src->overrides[i].value,
				    src->overrides[i].origin, diag);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

int manager_load_config(const struct manager_config_source *src, struct acct_config **ret, char ***ret_warnings,
			char **ret_error)
{
	_cleanup_(acct_config_diag_clear) struct acct_config_diag diag = { 0 };
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	int r;

	r = manager_config_load(src, &c, &diag);
	if (r < 0) {
		*ret_error = diag.error ? strdup(diag.error) : strdup(strerror(-r));
		return r;
	}
	for (size_t i = 0; i < diag.nr_warnings; i++)
		log_warning("%s", diag.warnings[i]);
	char **warnings = diag.warnings ? TAKE_PTR(diag.warnings) : strv_new_empty();
	diag.nr_warnings = 0;
	if (!warnings)
		return log_oom();
	*ret_warnings = warnings;
	*ret = TAKE_PTR(c);
	*ret_error = NULL;
	return 0;
}

/* After the scan that follows the start or a reload, once: filter globs that
 * select nothing would otherwise fail silently. */
static void warn_unmatched_glob(bool include, const char *glob, void *userdata)
{
	log_warning("[cgroups] %s glob '%s' matches no cgroup", include ? "include" : "exclude", glob);
}

void manager_after_scan(struct manager *m)
{
	acct_discovery_unmatched(m->discovery, warn_unmatched_glob, NULL);
	for (size_t i = 0; i < m->nr_frontends; i++)
		if (m->frontends[i].on_scanned)
			m->frontends[i].on_scanned(m, m->frontends[i].userdata);
}

static void apply_filter(struct manager *m)
{
	struct acct_discovery_filter f = {
		.include = m->config->include,
		.exclude = m->config->exclude,
		.max_depth = m->config->max_depth,
	};
	int r = acct_discovery_set_filter(m->discovery, &f);
	if (r < 0)
		log_warning_errno(r, "Failed to apply the cgroup filter: %m");
}

/* acctd.service confines IP traffic to localhost unless acctd-generator
 * widened it for a non-local [metrics] listen (ip-confine.h); the generator
 * runs at daemon-reload only, so a changed address can leave /metrics where
 * its peers' packets are dropped. acctd cannot see the unit's firewall, only
 * ACCTD_IP_ALLOW, which the unit and the generator's drop-in set. */
void manager_warn_ip_confine(const char *listen)
{
	const char *allow = getenv(ACCT_IP_ALLOW_ENV);

	if (!acct_ip_confine_lets_through(allow, listen))
		log_warning("[metrics] listen = %s is not a loopback address, but acctd.service lets IP traffic "
			    "through to localhost only (" ACCT_IP_ALLOW_ENV "=%s): other hosts cannot scrape "
			    "/metrics until \"systemctl daemon-reload\" and \"systemctl restart acctd\"",
			    listen, allow);
}

void manager_reload_report_clear(struct manager_reload_report *r)
{
	if (!r)
		return;
	acct_config_changes_free(r->changes, r->nr_changes);
	*r = (struct manager_reload_report){ 0 };
}

/* Each key a reload changed, in the log as in the reply: SIGHUP has no
 * reply, and an operator reading the journal should see what moved. */
static void log_changes(const struct acct_config_change *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		log_info("Reload: [%s] %s: %s -> %s%s", v[i].section, v[i].key, *v[i].old_value ? v[i].old_value : "(empty)",
			 *v[i].new_value ? v[i].new_value : "(empty)",
			 v[i].at_start ? " (applies at the next start)" : "");
}

int manager_reload(struct manager *m, struct manager_reload_report *ret_report)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	_cleanup_strv_free_ char **warnings = NULL;
	_cleanup_free_ char *error = NULL;
	struct manager_reload_report report = { 0 };
	int r;

	if (ret_report)
		*ret_report = (struct manager_reload_report){ 0 };
	manager_notify("RELOADING=1\nMONOTONIC_USEC=%" PRIu64, acct_now_us());
	m->reloads++;
	m->reload_time_us = acct_now_us();
	r = manager_load_config(&m->source, &c, &warnings, &error);
	if (r < 0) {
		m->reload_failures++;
		m->reload_outcome = MANAGER_RELOAD_FAILED;
		snprintf(m->reload_error, sizeof(m->reload_error), "%s", error ? error : "unknown error");
		log_error("Reload failed, keeping the previous configuration: %s", m->reload_error);
		manager_update_status(m, true);
		manager_notify("READY=1");
		return r;
	}
	/* Before the keys only a start applies are put back below. */
	r = acct_config_diff(m->config, c, &report.changes, &report.nr_changes);
	if (r < 0)
		return log_oom();
	log_changes(report.changes, report.nr_changes);
	const char *old_root = m->config->cgroup_root ? m->config->cgroup_root : "";
	const char *new_root = c->cgroup_root ? c->cgroup_root : "";
	if (strcmp(old_root, new_root) != 0 || c->workers != m->config->workers)
		log_warning("cgroup root and worker count apply at the next restart, keeping the current ones");
	/* The collector is built at start (and its pins by --bpf-pin before it):
	 * keep the running one, and say so. */
	const char *old_pins = m->config->bpf_pin_dir ? m->config->bpf_pin_dir : "";
	if (c->collector != m->config->collector || strcmp(old_pins, c->bpf_pin_dir ? c->bpf_pin_dir : "") != 0)
		log_warning("[sampling] collector and bpf_pin_dir apply at the next restart, keeping collector = %s",
			    acct_collector_mode_to_string(m->config->collector));
	/* Every key only a start applies keeps its running value in the
	 * configuration kept, so that the next reload reports what differs from
	 * what runs: a change undone in the file had said "4 -> 2 (not applied)"
	 * with 2 running all along (the new-user trial). */
	if (acct_config_keep_at_start(c, m->config) < 0) {
		manager_reload_report_clear(&report);
		manager_notify("READY=1");
		return log_oom();
	}
	struct acct_ledger_budgets b = { c->bytes_budget, c->cpu_budget_us, c->tasks_budget };
	report.tuning_dropped = m->tuned;
	manager_effective_tuning(m, &report.was, &report.was_auto_tune);
	acct_ledger_set_budgets(m->ledger, &b);
	acct_domain_set_auto_tune(m->domain, c->auto_tune);
	m->tuned = false; /* back to the configured values */
	report.now = b;
	report.auto_tune = c->auto_tune;
	if (report.tuning_dropped)
		log_info("Reload: run-time tuning from acctctl tune dropped, budgets back to the configuration's: %" PRId64
			 " bytes, %" PRId64 " us, %" PRId64 " tasks, auto_tune %s",
			 b.bytes, b.cpu_us, b.tasks, c->auto_tune ? "on" : "off");
	log_set_max_level((int)c->log_level);
	log_ratelimit_set_default(c->log_rate_limit_interval_us, c->log_rate_limit_burst);
	acct_config_free(m->config);
	m->config = TAKE_PTR(c);
	strv_free(m->config_warnings);
	m->config_warnings = TAKE_PTR(warnings);
	apply_filter(m);
	if (m->admin) {
		r = admin_group_set(m->admin, m->config->admin_group);
		if (r < 0)
			log_warning_errno(r, "Failed to start resolving admin_group, keeping the previous one: %m");
	}
	(void)manager_scan(m);
	manager_after_scan(m);
	manager_arm_timers(m);
	if (m->history)
		history_recorder_configure(m->history, m->config);
	if (m->history_queries)
		history_queries_configure(m->history_queries, m->config);
	m->reload_outcome = MANAGER_RELOAD_OK;
	m->reload_error[0] = 0;
	manager_warn_ip_confine(m->config->metrics_listen); /* applies at the next start: say what it will need */
	log_info("Configuration reloaded");
	manager_update_status(m, true);
	manager_notify("READY=1");
	if (ret_report)
		*ret_report = report;
	else
		manager_reload_report_clear(&report);
	return 0;
}

void manager_tune_changes_clear(struct manager_tune_change *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].cgroup);
		v[i].cgroup = NULL;
	}
}

/* The budgets in the order of struct acct_ledger_budgets, each with the
 * quantity whose kernel part Tune tells: the one a person reads first. */
static const struct {
	const char *budget;
	enum acct_quantity q;
	size_t offset;
} tune_budgets[] = {
	{ "bytes", ACCT_Q_MEMORY, offsetof(struct acct_ledger_budgets, bytes) },
	{ "cpu_us", ACCT_Q_CPU_USAGE, offsetof(struct acct_ledger_budgets, cpu_us) },
	{ "tasks", ACCT_Q_TASKS, offsetof(struct acct_ledger_budgets, tasks) },
};
_Static_assert(ELEMENTSOF(tune_budgets) == MANAGER_TUNE_MAX_CHANGES, "a change per budget at most");

static int64_t budget_of(const struct acct_ledger_budgets *b, size_t i)
{
	return *(const int64_t *)((const char *)b + tune_budgets[i].offset);
}

struct kernel_part {
	enum acct_quantity q;
	const struct acct_cgroup *cg;
	uint64_t bound;
};

static size_t path_depth(const char *p)
{
	size_t n = 0;
	for (; *p; p++)
		n += *p == '/' && p[1];
	return n;
}

static int find_kernel_part(struct acct_cgroup *cg, void *userdata)
{
	struct kernel_part *k = userdata;

	if (acct_cgroup_is_dead(cg) || !__atomic_load_n(&cg->q_known[k->q], __ATOMIC_ACQUIRE))
		return 0;
	/* the samplers store it (relaxed): a value of this pass or the last */
	uint64_t b = acct_cgroup_kernel_bound(cg, k->q);
	if (!k->cg || b > k->bound ||
	    (b == k->bound && (path_depth(cg->path) < path_depth(k->cg->path) ||
			       (path_depth(cg->path) == path_depth(k->cg->path) && strcmp(cg->path, k->cg->path) < 0)))) {
		k->cg = cg;
		k->bound = b;
	}
	return 0;
}

int manager_tune(struct manager *m, const struct acct_ledger_budgets *budgets, int auto_tune, const struct ucred *by,
		 struct manager_tune_change ret_changes[static MANAGER_TUNE_MAX_CHANGES], size_t *ret_n,
		 const char **ret_key, char **ret_reason)
{
	struct acct_ledger_budgets was;
	size_t n = 0;

	*ret_n = 0;
	if (budgets && (budgets->bytes < 0 || budgets->cpu_us < 0 || budgets->tasks < 0))
		return -EINVAL;
	if (budgets) {
		/* The configuration's own limits against the host, so that Tune
		 * cannot set what a reload would refuse. */
		struct acct_config c = *m->config; /* read only: its strings stay m->config's */
		struct acct_host_limits host;
		c.bytes_budget = budgets->bytes;
		c.cpu_budget_us = budgets->cpu_us;
		c.tasks_budget = budgets->tasks;
		acct_host_limits_get(&host);
		int r = acct_budget_limits_check(&c, &host, ret_key, ret_reason);
		if (r < 0)
			return r;
	}
	manager_effective_tuning(m, &was, NULL);
	if (budgets)
		acct_ledger_set_budgets(m->ledger, budgets);
	if (auto_tune >= 0)
		acct_domain_set_auto_tune(m->domain, auto_tune > 0);
	m->tuned = true;
	log_info("Tuned at run time by uid %u (pid %d): budgets %" PRId64 " bytes, %" PRId64 " us, %" PRId64
		 " tasks, auto_tune %s",
		 (unsigned)by->uid, (int)by->pid, budgets ? budgets->bytes : was.bytes, budgets ? budgets->cpu_us : was.cpu_us,
		 budgets ? budgets->tasks : was.tasks, auto_tune < 0 ? "unchanged" : auto_tune ? "on" : "off");
	for (size_t i = 0; budgets && i < ELEMENTSOF(tune_budgets); i++) {
		if (budget_of(budgets, i) == budget_of(&was, i))
			continue;
		struct kernel_part k = { .q = tune_budgets[i].q };
		(void)acct_ledger_foreach(m->ledger, find_kernel_part, &k);
		ret_changes[n] = (struct manager_tune_change){
			.budget = tune_budgets[i].budget,
			.quantity = acct_quantity_info(tune_budgets[i].q)->name,
			.old_budget = budget_of(&was, i),
			.new_budget = budget_of(budgets, i),
			.cgroup = k.cg ? strdup(k.cg->path) : NULL,
			.kernel_bound = k.bound,
		};
		if (k.cg && !ret_changes[n].cgroup) {
			manager_tune_changes_clear(ret_changes, n);
			return log_oom();
		}
		n++;
	}
	*ret_n = n;
	return 0;
}

void manager_effective_tuning(const struct manager *m, struct acct_ledger_budgets *ret_budgets, bool *ret_auto_tune)
{
	struct acct_domain_stats ds;
	if (ret_budgets)
		acct_ledger_get_budgets(m->ledger, ret_budgets);
	if (ret_auto_tune) {
		acct_domain_stats(m->domain, &ds);
		*ret_auto_tune = ds.auto_tune;
	}
}
