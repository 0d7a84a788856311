/* manager.c - acctd's manager: its construction (the configuration, the
 * cgroup layout, counter engine, ledger, discovery, BPF collector, sampler),
 * the start (the event loop's events, the history, the front ends, the first
 * scan and pass), the end, and the read-only accessors the front ends use.
 * The rest lives by concern in manager-*.c (manager-internal.h). */
#include "manager-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "admin-group.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "bpf-pin.h"
#include "cgroup/cgfs-parse.h"
#include "charges-store.h"
#include "core/charges.h"
#include "history-recorder.h"
#include "query-workers.h"
#include "state-writer.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_topology *, acct_topology_free)

#define TUNE_PERIOD_US 1000000u

static void on_tune(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	acct_domain_tune(m->domain, acct_now_us() * 1000);
}

static void on_watchdog(evutil_socket_t fd, short what, void *userdata)
{
	manager_notify("WATCHDOG=1");
}

/* ---- signals ----------------------------------------------------------------- */

static void on_signal(evutil_socket_t sig, short what, void *userdata)
{
	struct manager *m = userdata;

	if (sig == SIGHUP) {
		(void)manager_reload(m, NULL);
		return;
	}
	log_info("Received %s, stopping", strsignal((int)sig));
	manager_notify("STOPPING=1");
	m->exiting = true;
	event_base_loopexit(m->base, NULL);
}

/* ---- construction ---------------------------------------------------------- */

static int max_nodes_line(const char *key, size_t key_len, uint64_t total, const uint64_t *per_node, size_t nr_nodes,
			  void *userdata)
{
	size_t *max = userdata;
	*max = MAX(*max, nr_nodes);
	return 0;
}

/* The number of NUMA nodes the memory.numa_stat under mem reports; 0 when it
 * cannot be read or parsed. */
static size_t numa_stat_nodes(const char *mem)
{
	_cleanup_close_ int fd = -EBADF;
	char path[4096], buf[65536];
	size_t nodes = 0;

	snprintf(path, sizeof(path), "%s/memory.numa_stat", mem);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (cgfs_parse_numa_stat(buf, max_nodes_line, &nodes) < 0)
		return 0;
	return nodes;
}

/* The machine's topology, unless the cgroup tree reports more NUMA nodes than
 * the machine has (a tree from another machine, or a test's fake one): then a
 * simulated topology with that many nodes, so that no node's memory is lost. */
/* The charge engine for the configuration's [resource.NAME] sections, on the
 * ledger's counter domain. Returns 0 or a negative errno. */
static int charges_new(struct manager *m)
{
	const struct acct_config *c = m->config;
	_cleanup_free_ struct acct_charges_resource *res = calloc(c->nr_resources ?: 1, sizeof(*res));

	if (!res)
		return -ENOMEM;
	for (size_t i = 0; i < c->nr_resources; i++)
		res[i] = (struct acct_charges_resource){
			.name = c->resources[i].name,
			.budget = c->resources[i].budget,
			.reparent = c->resources[i].on_removal == ACCT_REMOVAL_REPARENT,
			.unit = c->resources[i].unit,
			.release_on_exit = c->resources[i].release_on_exit,
		};
	for (size_t i = 0; i < c->nr_resources; i++)
		log_info("Resource %s: unit %s, budget %" PRId64 ", on removal %s%s", res[i].name,
			 acct_resource_unit_to_string(c->resources[i].unit), res[i].budget,
			 acct_resource_removal_to_string(c->resources[i].on_removal),
			 res[i].release_on_exit ? ", released when a client exits" : "");
	int r = acct_charges_new(m->domain, res, c->nr_resources, &m->charges);
	if (r < 0)
		return r;
	/* Which are RAM, fixed at the start as the set of resources is. */
	_cleanup_free_ bool *ram = calloc(c->nr_resources ?: 1, sizeof(*ram));
	_cleanup_free_ bool *avg = calloc(c->nr_resources ?: 1, sizeof(*avg));
	if (!ram || !avg)
		return -ENOMEM;
	for (size_t i = 0; i < c->nr_resources; i++) {
		ram[i] = c->resources[i].ram;
		avg[i] = c->resources[i].averages;
	}
	r = acct_charges_ram_new(m->charges, ram, &m->charges_ram);
	if (r < 0)
		return r;
	/* Compared with the bounds Get serves: the engine's and the slots'. */
	acct_charges_ram_set_bounds(m->charges_ram, manager_charges_bounds_hook, m);
	return acct_charges_avg_new(m->charges, avg, &m->charges_avg);
}

static int topology_for_layout(const struct acct_hierarchies *layout, struct acct_topology **ret)
{
	_cleanup_(acct_topology_freep) struct acct_topology *t = NULL;
	const char *mem = layout->mount[ACCT_HIER_MEMORY] ? layout->mount[ACCT_HIER_MEMORY]
							  : layout->mount[ACCT_HIER_UNIFIED];
	int r = acct_topology_detect(&t);

	if (r < 0)
		return r;
	size_t nodes = mem ? numa_stat_nodes(mem) : 0;
	if (nodes > t->nr_nodes) {
		log_notice("The cgroup tree reports %zu NUMA nodes, this machine %u: simulating %zu nodes", nodes,
			   t->nr_nodes, nodes);
		unsigned cpus = MAX(t->nr_shards, (unsigned)nodes);
		t = acct_topology_free(t);
		r = acct_topology_simulate(cpus, (unsigned)nodes, &t);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(t);
	return 0;
}

/* Whether the hierarchies are the kernel's cgroup file systems, not a copy
 * in a directory (tests, --cgroup-root on a snapshot). */
static bool layout_is_kernels(const struct acct_hierarchies *l)
{
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		struct statfs sf;
		if (l->mount[h] && statfs(l->mount[h], &sf) == 0)
			return sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC;
	}
	return false;
}

/* Threads and their states for tasks and load: one task walk per load pass
 * instead of a cgroup.threads per cgroup and a /proc/<tid>/stat per thread.
 * The one acctd --bpf-pin pinned first (an unprivileged daemon can read
 * nothing else), else one attached here; where neither, files, with both
 * reasons. Returns 0, or -ENOMEM. */
static int build_task_walk(struct manager *m, const char *pin_note, const char *btf_path)
{
	const struct acct_config *c = m->config;
	char *why = m->task_walk_reason;
	size_t size = sizeof(m->task_walk_reason);
	char pin_why[sizeof(m->task_walk_reason)] = "";
	int r = -ENOENT;

	if (c->cgroup_root) {
		/* the walk gives the kernel's cgroups, not those of another tree */
		snprintf(why, size, "a tree other than the kernel's (cgroup_root)");
		goto done;
	}
	if (c->bpf_pin_dir && *c->bpf_pin_dir && !pin_note) {
		_cleanup_free_ char *path = NULL;
		if (asprintf(&path, "%s/" BPF_PIN_TASKS, c->bpf_pin_dir) < 0)
			return log_oom();
		r = acct_task_walk_open_pin(m->layout, path, &m->task_walk, pin_why, sizeof(pin_why));
	}
	if (r == -ENOMEM)
		return log_oom();
	if (r < 0) {
		r = acct_task_walk_new(m->layout, btf_path, &m->task_walk, why, size);
		if (r == -ENOMEM)
			return log_oom();
		if (r < 0 && *pin_why) {
			/* both: what the pin step left, and why attaching failed */
			char attach_why[sizeof(m->task_walk_reason)];
			memcpy(attach_why, why, size);
			if (snprintf(why, size, "%s; %s", pin_why, attach_why) >= (int)size)
				memcpy(why + size - 4, "...", 4); /* cut: the pin's reason comes first */
		}
	}
done:
	if (m->task_walk)
		log_info("Threads and load: bpf (%s)", acct_task_walk_source(m->task_walk));
	else
		log_info("Threads and load: files (%s)", why);
	return 0;
}

/* The BPF collector, per [sampling] collector: each hierarchy's choice and
 * its reason logged once (Status and /metrics show them too). */
static int build_collector(struct manager *m, unsigned nr_nodes)
{
	struct acct_config *c = m->config;
	int r;
	if (c->collector == ACCT_COLLECTOR_FILES) {
		log_info("Collector: cgroupfs files (collector = files)");
		snprintf(m->task_walk_reason, sizeof(m->task_walk_reason), "collector = files in the configuration");
		return 0;
	}
	uint32_t want = 0;
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		if (m->layout->mount[h])
			want |= 1u << h;
	/* Where acctd --bpf-pin pinned nothing, its reason (and no stale pin). */
	_cleanup_free_ char *pin_note = NULL;
	if (c->bpf_pin_dir && *c->bpf_pin_dir) {
		r = bpf_pin_report_read(c->bpf_pin_dir, &pin_note);
		if (r < 0)
			log_warning_errno(r, "Cannot read acctd --bpf-pin's report, ignoring: %m");
	}
	struct acct_bpf_collector_options o = {
		.layout = m->layout,
		.hierarchies = want,
		.pin_dir = c->bpf_pin_dir,
		.pin_note = pin_note,
		.attach = true,
		.nr_nodes = nr_nodes,
		/* Tests stand another file in for the kernel's BTF (a missing one
		 * simulates a kernel without BTF). */
		.btf_path = secure_getenv("ACCTD_TEST_BTF"),
	};
	r = acct_bpf_collector_new(&o, &m->collector);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the BPF collector: %m");
	r = build_task_walk(m, pin_note, o.btf_path);
	if (r < 0)
		return r;
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		if (m->layout->mount[h])
			log_info("Collector for %s: %s (%s)", acct_hierarchy_to_string(h),
				 acct_bpf_collector_serves(m->collector, h) ? "bpf" : "files",
				 acct_bpf_collector_reason(m->collector, h));
	/* Kept when it serves nothing: its reasons are what Status shows. */
	if (!acct_bpf_collector_any(m->collector)) {
		if (c->collector == ACCT_COLLECTOR_BPF)
			return log_error_errno(-ENODEV, "No hierarchy can be read through BPF (collector = bpf)");
		return 0;
	}
	int mem = m->layout->v2_memory ? ACCT_HIER_UNIFIED : ACCT_HIER_MEMORY;
	if (acct_bpf_collector_serves(m->collector, mem)) {
		r = acct_bpf_collector_map_stats(m->collector, mem, acct_bpf_numa_keys(mem == ACCT_HIER_UNIFIED),
						 &m->stat_map);
		if (r < 0)
			log_warning_errno(r, "Cannot map memory.stat keys to the kernel's stat items (served from files): %m");
		else
			log_info("BPF serves %u memory.stat keys (matched to the kernel's stat items on %u cgroups); per-CPU data: %s", m->stat_map.n,
				 m->stat_map.cgroups_used, acct_bpf_collector_percpu(m->collector));
	}
	return 0;
}

/* Descriptors of the daemon's own beside connections and cached files:
 * sockets, the event loop, inotify, BPF links and maps, the journal, the
 * files a reload or a fresh read opens. */
#define FD_RESERVE_OWN 64

/* How many cgroupfs descriptors the sampler may keep open: what RLIMIT_NOFILE
 * leaves once [api] max_connections, the metrics endpoint's connections and
 * the daemon's own are set aside, so that a full house of clients never
 * finds acctd out of descriptors. A limit too small for all of them keeps a
 * quarter for the cache (sampling without cached descriptors costs an open
 * and a close per read), and the log says how many clients fit. */
static uint64_t descriptor_budget(const struct acct_config *c)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0; /* the sampler's own default */
	uint64_t lim = rl.rlim_cur;
	uint64_t reserve = (uint64_t)c->max_connections + METRICS_MAX_CONNECTIONS + FD_RESERVE_OWN;
	if (lim >= reserve && lim - reserve >= lim / 4)
		return MAX(lim - reserve, (uint64_t)1);
	uint64_t cache = MAX(lim / 4, (uint64_t)1);
	uint64_t left = lim - cache;
	uint64_t clients = left > METRICS_MAX_CONNECTIONS + FD_RESERVE_OWN ? left - METRICS_MAX_CONNECTIONS - FD_RESERVE_OWN : 0;
	log_warning("RLIMIT_NOFILE %" PRIu64 " cannot hold [api] max_connections=%u beside the metrics endpoint and "
		    "cached cgroup files: about %" PRIu64 " API clients fit, %" PRIu64 " files stay open",
		    lim, c->max_connections, clients, cache);
	return cache;
}

static int build_components(struct manager *m)
{
	struct acct_config *c = m->config;
	int r;

	r = acct_hierarchies_detect(c->cgroup_root, &m->layout);
	if (r < 0)
		return log_error_errno(r, "Failed to find the cgroup hierarchies%s%s: %m",
				       c->cgroup_root ? " under " : "", c->cgroup_root ? c->cgroup_root : "");
	log_info("cgroup mode %s under %s", acct_cgroup_mode_to_string(m->layout->mode), m->layout->root);

	struct acct_domain_options dopts = { .mode = ACCT_MODE_AUTO, .auto_tune = c->auto_tune };
	_cleanup_(acct_topology_freep) struct acct_topology *topo = NULL;
	r = topology_for_layout(m->layout, &topo);
	if (r < 0)
		return log_error_errno(r, "Failed to read the CPU and NUMA topology: %m");
	dopts.topology = topo;
	r = acct_domain_new(&dopts, &m->domain); /* copies the topology */
	if (r < 0)
		return log_error_errno(r, "Failed to set up the counter engine: %m");
	struct acct_ledger_budgets b = { c->bytes_budget, c->cpu_budget_us, c->tasks_budget };
	r = acct_ledger_new(m->domain, &b, &m->ledger);
	if (r < 0)
		return log_error_errno(r, "Failed to create the ledger: %m");
	r = charges_new(m);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the charged resources: %m");
	struct acct_discovery_filter f = { .include = c->include, .exclude = c->exclude, .max_depth = c->max_depth };
	r = acct_discovery_new(m->layout, &f, &m->discovery);
	if (r < 0)
		return log_error_errno(r, "Failed to set up cgroup discovery: %m");
	r = build_collector(m, topo->nr_nodes);
	if (r < 0)
		return r;
	struct acct_sampler_options sopts = {
		.layout = m->layout,
		.workers = c->workers,
		.collector = acct_bpf_collector_any(m->collector) ? m->collector : NULL,
		.task_walk = m->task_walk,
		.nr_nodes = topo->nr_nodes,
		.kernel_bounds = layout_is_kernels(m->layout),
		.stat_map = &m->stat_map,
		.max_cached_fds = descriptor_budget(c),
	};
	r = acct_sampler_new(&sopts, m->ledger, &m->sampler);
	if (r < 0)
		return log_error_errno(r, "Failed to start the sampling workers: %m");
	if (m->source.state_file) {
		r = state_writer_new(m->source.state_file, m->ledger, topo->nr_nodes, &m->state_writer);
		if (r < 0)
			return log_error_errno(r, "Failed to start the state file's writer: %m");
	}

	/* The host's meminfo describes the host's cgroups only: a tree elsewhere
	 * (a test's or a container's) is checked against meminfo only when told
	 * which file describes it. */
	const char *meminfo = m->source.meminfo_file ? m->source.meminfo_file : c->cgroup_root ? NULL : "/proc/meminfo";
	if (meminfo) {
		/* A file named on the command line that cannot be read is a mistake
		 * to report now, not a check that silently never runs. */
		if (m->source.meminfo_file && access(meminfo, R_OK) < 0)
			return log_error_errno(-errno, "Failed to access --meminfo %s: %m", meminfo);
		m->meminfo_path = strdup(meminfo);
		if (!m->meminfo_path)
			return log_oom();
	}
	/* Once: glibc counts them in /sys at every call. */
	m->host_cpus = MAX(sysconf(_SC_NPROCESSORS_CONF), 1L);
	return 0;
}

int manager_new(const struct manager_config_source *source, struct manager **ret)
{
	_cleanup_(manager_freep) struct manager *m = calloc(1, sizeof(*m));
	_cleanup_free_ char *error = NULL;
	int r;

	if (!m)
		return log_oom();
	m->source = *source;
	m->started_us = acct_now_us();
	r = manager_load_config(source, &m->config, &m->config_warnings, &error);
	if (r < 0) {
		log_error("%s", error ? error : strerror(-r));
		return r;
	}
	log_set_max_level((int)m->config->log_level);
	log_ratelimit_set_default(m->config->log_rate_limit_interval_us, m->config->log_rate_limit_burst);
	long nofile = acct_raise_nofile();
	if (nofile < 0)
		log_debug_errno((int)nofile, "Failed to raise RLIMIT_NOFILE, ignoring: %m");
	r = build_components(m);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(m);
	return 0;
}

int manager_start(struct manager *m)
{
	static const int sigs[3] = { SIGTERM, SIGINT, SIGHUP };
	int r;

	m->base = event_base_new();
	if (!m->base)
		return log_oom();
	for (int i = 0; i < 3; i++) {
		m->ev_signal[i] = evsignal_new(m->base, sigs[i], on_signal, m);
		if (!m->ev_signal[i] || event_add(m->ev_signal[i], NULL) < 0)
			return log_oom();
	}
	m->ev_inotify = event_new(m->base, acct_discovery_fd(m->discovery), EV_READ | EV_PERSIST, manager_on_inotify, m);
	m->ev_sampler = event_new(m->base, acct_sampler_fd(m->sampler), EV_READ | EV_PERSIST, manager_on_sampler_done, m);
	m->ev_tick = event_new(m->base, -1, EV_PERSIST, manager_on_tick, m);
	m->ev_rescan = event_new(m->base, -1, EV_PERSIST, manager_on_rescan, m);
	m->ev_tune = event_new(m->base, -1, EV_PERSIST, on_tune, m);
	m->ev_watchdog = event_new(m->base, -1, EV_PERSIST, on_watchdog, m);
	m->ev_kernel = event_new(m->base, -1, 0, manager_on_kernel_tick, m); /* armed per use */
	if (!m->ev_inotify || !m->ev_sampler || !m->ev_tick || !m->ev_rescan || !m->ev_tune || !m->ev_watchdog ||
	    !m->ev_kernel)
		return log_oom();
	event_add(m->ev_inotify, NULL);
	event_add(m->ev_sampler, NULL);
	struct timeval tv = timeval_from_usec(TUNE_PERIOD_US);
	event_add(m->ev_tune, &tv);
	if (sd_watchdog_enabled(0, &m->watchdog_usec) > 0 && m->watchdog_usec > 0) {
		tv = timeval_from_usec(m->watchdog_usec / 2);
		event_add(m->ev_watchdog, &tv);
	}
	manager_arm_timers(m);

	r = admin_group_new(m->base, m->config->admin_group, &m->admin);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the admin group: %m");
	/* History: its threads open the store, never the event loop. */
	r = history_recorder_new(m->config, &m->history);
	if (r < 0)
		return log_error_errno(r, "Failed to start the history recorder: %m");
	r = history_queries_new(m->base, m->config, &m->history_queries);
	if (r < 0)
		return log_error_errno(r, "Failed to start the history queries' thread: %m");
	for (size_t i = 0; i < m->nr_frontends; i++)
		if (m->frontends[i].on_start) {
			r = m->frontends[i].on_start(m, m->frontends[i].userdata);
			if (r < 0)
				return r;
		}
	manager_warn_ip_confine(m->config->metrics_listen);
	r = manager_scan(m);
	if (r < 0)
		return log_error_errno(r, "Failed to walk the cgroup hierarchies: %m");
	manager_after_scan(m);
	/* The charges of the last run, once the cgroups are known (those gone
	 * meanwhile go by their removal rule) and before anything is served. */
	r = charges_store_start(m, &m->charges_store);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the charges' state file: %m");
	/* The slots of the last run that systemd's descriptor store kept,
	 * taken up against what the state file says of them. */
	for (size_t i = 0; i < m->nr_frontends; i++)
		if (m->frontends[i].slots_adopt)
			m->frontends[i].slots_adopt(m, charges_store_loaded_slots(m->charges_store),
						    m->frontends[i].userdata);
	charges_store_forget_slots(m->charges_store);
	uint64_t live;
	acct_ledger_counts(m->ledger, &live, NULL);
	log_info("Found %" PRIu64 " cgroups", live);
	manager_update_status(m, true);
	r = manager_first_pass(m);
	if (r < 0)
		return log_error_errno(r, "Failed to start the first sampling pass: %m");
	return 0;
}

int manager_add_frontend(struct manager *m, const struct manager_frontend *fe)
{
	struct manager_frontend *v = reallocarray(m->frontends, m->nr_frontends + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->frontends = v;
	m->frontends[m->nr_frontends++] = *fe;
	return 0;
}

int manager_run(struct manager *m)
{
	event_base_dispatch(m->base);
	/* What clients added to their charge slots since the last pass's fold
	 * goes into the engine before the final write: a clean stop loses
	 * nothing (docs/charges.md, "Durability"). */
	if (m->charges_store)
		manager_charges_fold(m);
	charges_store_stop(m->charges_store, m); /* the final write of a clean stop */
	return m->exit_code;
}

struct manager *manager_free(struct manager *m)
{
	if (!m)
		return NULL;
	/* The last pass's recording while the front ends live: it folds the
	 * API's charge slots and adds their bounds (struct manager_frontend's
	 * charges_fold, charges_bounds), whose server on_free frees. */
	if (m->config) /* else manager_new() failed before any pass, at the configuration */
		manager_history_record_last_pass(m);
	/* The front ends next: the API detaches its connections from the
	 * history's queries before they end. */
	for (size_t i = 0; i < m->nr_frontends; i++)
		if (m->frontends[i].on_free)
			m->frontends[i].on_free(m, m->frontends[i].userdata);
	m->history_queries = history_queries_free(m->history_queries, m->history_query_drop);
	m->history = history_recorder_free(m->history); /* writes what is queued, ends the run */
	m->admin = admin_group_free(m->admin); /* before the event base it watches */
	/* Workers first: they hold record pointers; so does the state file's
	 * writer, which finishes its last write. */
	m->sampler = acct_sampler_free(m->sampler);
	m->state_writer = state_writer_free(m->state_writer);
	m->collector = acct_bpf_collector_free(m->collector);
	m->task_walk = acct_task_walk_free(m->task_walk);
	if (m->ledger) {
		_cleanup_free_ struct acct_cgroup **cgs = NULL;
		int n = acct_ledger_snapshot(m->ledger, true, &cgs);
		for (int i = 0; i < n; i++)
			acct_sampler_release(cgs[i], NULL);
	}
	struct event **evs[] = { &m->ev_inotify, &m->ev_sampler, &m->ev_kernel, &m->ev_tick, &m->ev_rescan, &m->ev_tune,
				 &m->ev_watchdog, &m->ev_signal[0], &m->ev_signal[1], &m->ev_signal[2] };
	for (size_t i = 0; i < ELEMENTSOF(evs); i++)
		if (*evs[i]) {
			event_free(*evs[i]);
			*evs[i] = NULL;
		}
	m->charges_store = charges_store_free(m->charges_store); /* before the event base */
	if (m->base)
		event_base_free(m->base);
	acct_discovery_free(m->discovery);
	acct_ledger_free(m->ledger);
	acct_charges_ram_free(m->charges_ram);
	acct_charges_avg_free(m->charges_avg);
	acct_charges_free(m->charges);
	acct_domain_free(m->domain);
	acct_hierarchies_free(m->layout);
	acct_config_free(m->config);
	strv_free(m->config_warnings);
	free(m->meminfo_path);
	free(m->waiters);
	free(m->soon);
	free(m->frontends);
	free(m);
	return NULL;
}

/* ---- read-only access, for the API, /metrics and the status document ------- */

struct event_base *manager_event_base(const struct manager *m)
{
	return m->base;
}

const struct acct_config *manager_config(const struct manager *m)
{
	return m->config;
}

struct acct_charges *manager_charges(const struct manager *m)
{
	return m->charges;
}

struct acct_charges_ram *manager_charges_ram(const struct manager *m)
{
	return m->charges_ram;
}

struct acct_charges_avg *manager_charges_avg(const struct manager *m)
{
	return m->charges_avg;
}

struct acct_ledger *manager_ledger(const struct manager *m)
{
	return m->ledger;
}

unsigned manager_host_cpus(const struct manager *m)
{
	return (unsigned)m->host_cpus;
}

unsigned manager_nr_nodes(const struct manager *m)
{
	return acct_domain_topology(m->domain)->nr_nodes;
}

const struct acct_reconcile_report *manager_reconcile_report(const struct manager *m)
{
	return &m->reconcile;
}

enum manager_reload_outcome manager_reload_outcome(const struct manager *m, const char **ret_reason)
{
	if (ret_reason)
		*ret_reason = m->reload_outcome == MANAGER_RELOAD_FAILED ? m->reload_error : NULL;
	return m->reload_outcome;
}

char *const *manager_config_warnings(const struct manager *m)
{
	return m->config_warnings;
}

const struct admin_group *manager_admin_group(const struct manager *m)
{
	return m->admin;
}

void manager_get_stats(const struct manager *m, struct manager_stats *ret)
{
	*ret = (struct manager_stats){
		.ready = m->ready,
		.tuned = m->tuned,
		.started_us = m->started_us,
		.passes = m->passes,
		.last_fast = m->last_fast,
		.last_slow = m->last_slow,
		.pass_hist = { m->pass_hist[0], m->pass_hist[1] },
		.cgroups_failed_total = m->cgroups_failed_total,
		.reloads = m->reloads,
		.reload_failures = m->reload_failures,
		.reload_time_us = m->reload_time_us,
		.kernel_passes = m->kernel_passes,
		.kernel_idle = manager_kernel_idle(m, acct_now_us()),
		.kernel_due = m->kernel_due_total,
		.bpf_checks = m->bpf_checks_total,
		.bpf_mismatches = m->bpf_mismatches_total,
		.tombstones_folded = m->tombstones_folded,
		.rescans = m->rescans,
		.census_checks = m->census_checks,
		.census_differed = m->census_differed,
	};
	memcpy(ret->bpf_last_mismatch, m->bpf_last_mismatch, sizeof(ret->bpf_last_mismatch));
	memcpy(ret->sample_errors_total, m->sample_errors_total, sizeof(ret->sample_errors_total));
	memcpy(ret->pass_cpu_seconds, m->pass_cpu_seconds, sizeof(ret->pass_cpu_seconds));
}

const char *manager_collector_of(const struct manager *m, enum acct_hierarchy h, const char **ret_reason)
{
	if ((unsigned)h >= _ACCT_HIER_MAX || !m->layout->mount[h])
		return NULL;
	bool served = acct_bpf_collector_reads(m->collector, h);
	unsigned parts = m->sampler ? acct_sampler_bpf_parts(m->sampler) : 0;
	if (served && parts == 0)
		*ret_reason = "moved back to files: its values disagreed with the files (see the log)";
	else if (m->collector)
		*ret_reason = acct_bpf_collector_reason(m->collector, h);
	else
		*ret_reason = "collector = files in the configuration";
	return served && parts ? "bpf" : "files";
}

const char *manager_threads_collector(const struct manager *m, const char **ret_reason)
{
	bool served = m->task_walk && !m->task_walk_fell_back;
	*ret_reason = served ? acct_task_walk_source(m->task_walk) : m->task_walk_reason;
	return served ? "bpf" : "files";
}

const struct acct_bpf_collector *manager_collector(const struct manager *m)
{
	return m->collector;
}

const struct acct_memcg_batching *manager_batching(const struct manager *m)
{
	return acct_sampler_batching(m->sampler);
}

unsigned manager_collector_parts(const struct manager *m)
{
	return m->sampler ? acct_sampler_bpf_parts(m->sampler) : 0;
}

const struct acct_hierarchies *manager_layout(const struct manager *m)
{
	return m->layout;
}

void manager_domain_stats(const struct manager *m, struct acct_domain_stats *ret)
{
	acct_domain_stats(m->domain, ret);
}

bool manager_sampler_fd_stats(const struct manager *m, uint64_t *ret_cached, bool *ret_degraded)
{
	if (!m->sampler)
		return false;
	acct_sampler_fd_stats(m->sampler, ret_cached, ret_degraded);
	return true;
}

struct history_recorder *manager_history(const struct manager *m)
{
	return m->history;
}

struct history_queries *manager_history_queries(const struct manager *m)
{
	return m->history_queries;
}
