/* manager.c - acctd's state and event loop.
 *
 * The file is long because the schedule of passes (ticks, the reads that
 * changes of populated ask for at once, Reconcile's waiters) shares the
 * manager's state with discovery, reloads and the state file; splitting it
 * would make that state public. */
#include "manager.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cgfs-parse.h"
#include "config.h"
#include "build-config.h"
#include "format-human.h"
#include "ip-confine.h"
#include "ledger-json.h"
#include "log.h"
#include "admin-group.h"
#include "bpf-pin.h"
#include "api.h"
#include "metrics-http.h"
#include "name-escape.h"
#include "status.h"
#include "strv.h"
#include "time-util.h"
#include "util.h"
#include "state-writer.h"
#include "history-query.h"
#include "history-recorder.h"

struct manager {
	struct event_base *base;
	struct manager_config_source source;
	struct acct_config *config;
	struct acct_cgroup_layout *layout;
	struct acct_domain *domain;
	struct acct_ledger *ledger;
	struct acct_discovery *discovery;
	struct acct_sampler *sampler;
	struct acct_bpf_collector *collector; /* NULL: collector = files */
	struct acct_bpf_stat_map stat_map;
	char *meminfo_path; /* NULL: no root_meminfo check (a cgroup root elsewhere, no --meminfo) */
	long host_cpus;     /* configured CPUs: the most a cgroup can run on (history_removed()) */

	struct event *ev_signal[3];
	struct event *ev_inotify, *ev_sampler, *ev_tick, *ev_rescan, *ev_tune, *ev_watchdog, *ev_kernel;

	unsigned pass_flags;     /* of the pass in flight */
	/* Cgroups to read at once, not at the next tick (read_soon()): new ones,
	 * and those whose populated changed with their ancestors. Emptied when a
	 * pass over them, or a full one, starts; a full one then covers them. */
	struct acct_cgroup **soon;
	size_t nr_soon, soon_cap;
	bool soon_all;           /* too many to list: the next full pass covers them */
	uint64_t state_event_us; /* when a pass of queued cgroups last wrote the state file */
	struct state_writer *state_writer; /* with --state-file */
	struct history_recorder *history;  /* issue 14: the writing store's thread (history-recorder.h) */
	struct history_queries *history_queries; /* Usage and History (history-query.h) */
	uint64_t next_history_us;          /* monotonic: the next recording after a pass */
	uint64_t last_pass_us;             /* monotonic: the last pass that read memory or CPU (0: none) */
	uint64_t last_recorded_pass_us;    /* monotonic: the pass the last recording took its values from */
	bool pass_pending;       /* a tick came while a pass ran */
	uint64_t next_slow_us, next_load_us;
	bool ready;
	uint64_t started_us;
	uint64_t watchdog_usec;
	uint64_t status_sent_us;

	struct acct_pass_report last_fast, last_slow;
	uint64_t passes;
	struct acct_reconcile_report reconcile;
	uint64_t discovery_events;
	uint64_t tombstones_folded; /* forgotten before their retention: max_tombstones (issue 27) */

	uint64_t reloads, reload_failures;
	enum manager_reload_outcome reload_outcome;
	char reload_error[512]; /* the reason, when reload_outcome is MANAGER_RELOAD_FAILED */
	char **config_warnings; /* of the configuration in effect (manager_config_warnings()) */
	uint64_t reload_time_us; /* monotonic time of the last reload attempt, 0 if none */

	/* Cumulative figures for Status() and /metrics. */
	struct manager_pass_histogram pass_hist[2]; /* [0] fast-only passes, [1] passes with slow files */
	uint64_t sample_errors_total[_ACCT_ERR_MAX];
	uint64_t cgroups_failed_total;
	/* The BPF collector's passes and cross-checks, cumulative. */
	uint64_t kernel_passes, bpf_checks_total, bpf_mismatches_total;
	uint64_t next_kernel_us; /* a walk alone not before (on_kernel_tick()) */
	char bpf_last_mismatch[160];

	/* Run-time tuning (Tune()): differs from the configuration until a reload. */
	bool tuned;

	/* Callbacks waiting for the next complete pass (Reconcile()). */
	struct manager_waiter {
		manager_pass_fn fn;
		void *userdata;
	} *waiters;
	size_t nr_waiters;
	bool pass_requested;
	size_t waiters_in_pass; /* the first waiters_in_pass started before the running pass */

	struct admin_group *admin; /* resolved at start and reload, not per call */
	struct api_server *api;
	struct metrics_server *metrics;
	bool exiting;
	int exit_code;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_topology *, acct_topology_free)

#define LOAD_PERIOD_US 5000000u  /* the kernel's LOAD_FREQ */
#define TUNE_PERIOD_US 1000000u

const double manager_pass_bucket_bounds[MANAGER_PASS_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, __builtin_inf(),
};

static void pass_histogram_add(struct manager_pass_histogram *h, double seconds)
{
	for (int i = 0; i < MANAGER_PASS_BUCKETS; i++)
		if (seconds <= manager_pass_bucket_bounds[i])
			h->bucket[i]++;
	h->count++;
	h->sum_seconds += seconds;
}

static void notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notify(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	(void)sd_notify(0, buf);
}

void manager_status_line(const struct manager *m, char *buf, size_t size)
{
	uint64_t live = 0, dead = 0;
	uint64_t viol = 0;
	bool failed = m->reload_outcome == MANAGER_RELOAD_FAILED;

	acct_ledger_counts(m->ledger, &live, &dead);
	for (int i = 0; i < _ACCT_INV_MAX; i++)
		viol += m->reconcile.violations[i];
	/* The reason may quote a file's bytes: as text (systemd ignores a
	 * STATUS= that is not UTF-8), and the line cut between characters. */
	_cleanup_free_ char *why = failed ? name_escape(m->reload_error, NAME_ESCAPE_UTF8) : NULL;
	char line[4 * sizeof(m->reload_error) + 256];
	snprintf(line, sizeof(line), "%s%" PRIu64 " cgroups (%" PRIu64 " dead), last pass %" PRIu64 " ms, %" PRIu64
		 " invariant violations%s%s",
		 m->ready ? "Tracking " : "Starting: ", live, dead, m->last_fast.wall_us / 1000, viol,
		 failed ? "; reload failed: " : "", failed ? why ?: "(out of memory)" : "");
	size_t n = utf8_boundary(line, strlen(line), size - 1);
	memcpy(buf, line, n);
	buf[n] = '\0';
}

#define STATUS_PERIOD_US 5000000u

/* STATUS= after a change of state (ready, reload) at once, otherwise at most
 * every few seconds: systemd needs no more, and each is a datagram. */
static void update_status_full(struct manager *m, bool force)
{
	char line[768];
	uint64_t now = acct_now_us();

	if (!force && now - m->status_sent_us < STATUS_PERIOD_US)
		return;
	manager_status_line(m, line, sizeof(line));
	notify("STATUS=%s", line);
	m->status_sent_us = now;
}

static void update_status(struct manager *m)
{
	update_status_full(m, true);
}

/* ---- discovery ---------------------------------------------------------- */

/* Queue a live record for a read as soon as the sampler is free. More queued
 * entries than live cgroups (a storm of changes) fall back to a full pass. */
static void read_soon(struct manager *m, struct acct_cgroup *cg)
{
	if (!cg || acct_cgroup_is_dead(cg) || m->soon_all)
		return;
	uint64_t live = 0;
	acct_ledger_counts(m->ledger, &live, NULL);
	if (m->nr_soon >= MAX(live, (uint64_t)64)) {
		m->soon_all = true;
		m->nr_soon = 0;
		return;
	}
	if (m->nr_soon == m->soon_cap) {
		size_t cap = MAX(m->soon_cap * 2, (size_t)64);
		struct acct_cgroup **v = reallocarray(m->soon, cap, sizeof(*v));
		if (!v) {
			m->soon_all = true; /* the next full pass reads it */
			return;
		}
		m->soon = v;
		m->soon_cap = cap;
	}
	m->soon[m->nr_soon++] = cg;
}

/* A cgroup's populated changed: its values, and its ancestors' (which count
 * its usage), are read now, not at the next tick, and before the cgroup can
 * be removed so that its tombstone holds what it finally used. */
static void read_soon_with_ancestors(struct manager *m, struct acct_cgroup *cg)
{
	char buf[4096];

	if (!cg || acct_cgroup_is_dead(cg))
		return;
	read_soon(m, cg);
	snprintf(buf, sizeof(buf), "%s", cg->path);
	while (strcmp(buf, "/") != 0) {
		char *slash = strrchr(buf, '/');
		if (!slash)
			break;
		if (slash == buf)
			slash[1] = 0;
		else
			*slash = 0;
		read_soon(m, acct_ledger_find(m->ledger, buf));
	}
}

/* ---- history (issue 14, history-recorder.h) ---------------------------------- */

/* A record's values as the store keeps them. On the event loop, which owns
 * the records: no read-side section needed. */
static void history_values_of(const struct acct_cgroup *cg, struct history_values *v)
{
	static const struct {
		enum acct_quantity q;
		size_t offset;
	} map[] = {
		{ ACCT_Q_CPU_USAGE, offsetof(struct history_values, cpu_usec) },
		{ ACCT_Q_MEMORY, offsetof(struct history_values, memory_bytes) },
		{ ACCT_Q_MEMORY_PEAK, offsetof(struct history_values, memory_peak_bytes) },
		{ ACCT_Q_IO_READ_BYTES, offsetof(struct history_values, io_read_bytes) },
		{ ACCT_Q_IO_WRITE_BYTES, offsetof(struct history_values, io_write_bytes) },
		{ ACCT_Q_TASKS, offsetof(struct history_values, tasks) },
	};
	for (size_t i = 0; i < ELEMENTSOF(map); i++) {
		struct acct_reading rd;
		/* Precise: the store's totals are differences of these, and a
		 * shard's residue would be an error no bound accounts for. */
		int64_t *out = (int64_t *)((char *)v + map[i].offset);
		*out = acct_cgroup_get(cg, map[i].q, true, &rd) ? rd.value : HISTORY_UNKNOWN;
	}
}

/* The identity of a record's life: its path and the inode of its v2
 * directory, else of the first v1 hierarchy that has it, as when it was first
 * recorded, or when acctd's start found it. Fixed then: on a hybrid host a
 * cgroup's directories are created and removed one hierarchy at a time, in
 * an order of systemd's, and the store must find the same life at its
 * removal, when only the last directory is left, and after a restart, whose
 * scan sees them all (as a recording does, a pass after the creation). */
static uint64_t history_inode_of(struct acct_cgroup *cg)
{
	if (cg->history_inode)
		return cg->history_inode;
	uint32_t hier = __atomic_load_n(&cg->hierarchies, __ATOMIC_ACQUIRE);
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		if (hier & (1u << h)) {
			cg->history_inode = __atomic_load_n(&cg->inode[h], __ATOMIC_RELAXED);
			break;
		}
	return cg->history_inode;
}

/* Monotonic time `mono_us` as CLOCK_REALTIME. */
static uint64_t history_realtime_of(uint64_t mono_us)
{
	uint64_t now_mono = acct_now_us(), now_real = history_now_us();
	return mono_us <= now_mono ? now_real - MIN(now_real, now_mono - mono_us) : now_real;
}

/* A removed cgroup: its tombstone's values end its life in the store and go
 * to the journal as the accounting record. */
static void history_removed(struct manager *m, struct acct_cgroup *cg, uint64_t now_mono)
{
	if (!m->history)
		return;
	struct history_sample s = { .key = { .path = cg->path, .inode = history_inode_of(cg) },
				    .created_seen = cg->history_created_seen };
	history_values_of(cg, &s.v);
	enum acct_final f = acct_cgroup_final(cg);
	uint64_t read_mono = __atomic_load_n(&cg->sampled_us[ACCT_GROUP_FAST], __ATOMIC_RELAXED);
	/* Not read after its last task left: between that read and now it
	 * could have run on every CPU the host has. */
	int64_t cpu_bound = f == ACCT_FINAL_READ || !read_mono || now_mono <= read_mono
				    ? 0
				    : (int64_t)(now_mono - read_mono) * m->host_cpus;
	history_recorder_removed(m->history, &s, history_realtime_of(cg->created_us), history_realtime_of(now_mono),
				 history_realtime_of(read_mono ? read_mono : now_mono),
				 f == ACCT_FINAL_READ ? NULL : acct_final_to_string(f), cpu_bound);
}

/* The live records' values, copied, go to the recorder as at the pass of
 * now_mono, whose values they are. */
static void history_record(struct manager *m, struct acct_cgroup **cgs, size_t n, uint64_t now_mono)
{
	m->last_recorded_pass_us = now_mono;
	struct history_sample *s = calloc(MAX(n, (size_t)1), sizeof(*s));
	size_t k = 0;
	if (!s)
		return (void)log_oom();
	for (size_t i = 0; i < n; i++) {
		if (acct_cgroup_is_dead(cgs[i]))
			continue;
		s[k].key.path = strdup(cgs[i]->path);
		if (!s[k].key.path) {
			history_samples_free(s, k);
			return (void)log_oom();
		}
		s[k].key.inode = history_inode_of(cgs[i]);
		s[k].created_seen = cgs[i]->history_created_seen;
		history_values_of(cgs[i], &s[k].v);
		k++;
	}
	history_recorder_submit(m->history, history_realtime_of(now_mono), s, k);
}

/* After a pass, when a recording is due. */
static void history_record_pass(struct manager *m, struct acct_cgroup **cgs, size_t n, uint64_t now_mono)
{
	m->last_pass_us = now_mono;
	if (!m->history || !m->config->history_enabled || now_mono < m->next_history_us)
		return;
	/* On the interval's grid, without catching up after a long pass. */
	uint64_t interval = m->config->history_interval_us;
	m->next_history_us = MAX(m->next_history_us + interval, now_mono + interval / 2);
	history_record(m, cgs, n, now_mono);
}

/* At a clean stop: the last pass's values, when no recording took them yet,
 * so that the run's recorded time reaches its last pass instead of ending up
 * to an interval before the stop. */
static void history_record_last_pass(struct manager *m)
{
	if (!m->history || !m->config->history_enabled || !m->last_pass_us ||
	    m->last_pass_us <= m->last_recorded_pass_us)
		return;
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(m->ledger, false, &cgs);
	if (n >= 0)
		history_record(m, cgs, (size_t)n, m->last_pass_us);
}

static void on_discovery(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata)
{
	struct manager *m = userdata;
	uint64_t now = acct_now_us();
	struct acct_cgroup *cg;
	_cleanup_free_ char *text = NULL; /* a name as the log shows it (name_text()) */
	int r;

	m->discovery_events++;
	switch (ev) {
	case ACCT_CGROUP_ADDED:
		r = acct_ledger_add(m->ledger, id, now, &cg);
		if (r == -EEXIST)
			acct_ledger_update_id(m->ledger, cg, id);
		else if (r < 0) {
			/* rate limited: a churning subtree would flood the log */
			static struct log_ratelimit track_failures = LOG_RATELIMIT_INIT("failures to track a cgroup");
			if (log_ratelimit_below(&track_failures))
				log_warning_errno(r, "Failed to track cgroup %s, ignoring: %m", name_text(id->path, &text));
		}
		else {
			log_debug("Tracking %s", name_text(id->path, &text));
			if (!m->ready) /* the start's scan: every directory is there */
				(void)history_inode_of(cg);
			else /* created while acctd ran (a rescan's find too: since the last scan) */
				cg->history_created_seen = true;
			read_soon(m, cg); /* its first values now: it may be short-lived */
		}
		break;
	case ACCT_CGROUP_REMOVED:
		cg = acct_ledger_find(m->ledger, id->path);
		if (cg && !acct_cgroup_is_dead(cg)) {
			acct_ledger_kill(m->ledger, cg, now);
			log_debug("%s removed, kept as a tombstone", name_text(id->path, &text));
			history_removed(m, cg, now);
		}
		break;
	case ACCT_CGROUP_CHANGED:
		cg = acct_ledger_find(m->ledger, id->path);
		if (cg && !acct_cgroup_is_dead(cg))
			acct_ledger_update_id(m->ledger, cg, id);
		break;
	case ACCT_CGROUP_EVENTS:
		cg = acct_ledger_find(m->ledger, id->path);
		if (cg && !acct_cgroup_is_dead(cg)) {
			/* Before the read: a read that started earlier is not final. */
			__atomic_fetch_add(&cg->populated_changes, 1, __ATOMIC_ACQ_REL);
			log_debug("%s: cgroup.events changed, reading it and its ancestors", name_text(id->path, &text));
			read_soon_with_ancestors(m, cg);
		}
		break;
	}
}

static void start_soon_pass(struct manager *m);

static void on_inotify(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	int r = acct_discovery_process(m->discovery, on_discovery, m);
	if (r < 0)
		log_warning_errno(r, "Failed to process cgroup changes, rescanning: %m");
	if (r < 0)
		(void)acct_discovery_scan(m->discovery, on_discovery, m);
	start_soon_pass(m);
}

static void on_rescan(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	int r = acct_discovery_scan(m->discovery, on_discovery, m);
	if (r < 0)
		log_warning_errno(r, "Periodic cgroup rescan failed: %m");
	else if (r > 0)
		log_debug("Periodic rescan found %d changes inotify had not reported", r);
	start_soon_pass(m);
}

/* ---- passes --------------------------------------------------------------- */

/* Tombstones beyond the budget ([cgroups] max_tombstones, issue 27): a user
 * who owns a delegated subtree can remove cgroups faster than the retention
 * forgets them (125 a second, 6 KiB each, 240 MB over 5 minutes). The oldest
 * go first; the totals acctd serves stay right because a parent's cumulative
 * values are the kernel's hierarchical readings, which already count its
 * removed children (acct_ledger_fold_oldest()). The history store and the
 * journal got the removal's record when it happened. */
static void fold_tombstones(struct manager *m)
{
	if (m->config->max_tombstones == 0)
		return;
	int r = acct_ledger_fold_oldest(m->ledger, m->config->max_tombstones, acct_sampler_release, m->sampler);
	if (r < 0)
		log_debug_errno(r, "Failed to fold tombstones beyond max_tombstones, at the next pass: %m");
	else if (r > 0) {
		m->tombstones_folded += (uint64_t)r;
		log_debug("Folded the %d oldest tombstones into their parents (max_tombstones = %u)", r,
			  m->config->max_tombstones);
	}
}

static int start_pass(struct manager *m, unsigned flags)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	uint64_t now = acct_now_us();

	/* Between passes: forget dead records past retention, release the
	 * descriptors of the dead ones. A state file write that holds records
	 * and has not begun goes first (state-writer.h). */
	state_writer_drop_pending(m->state_writer);
	acct_ledger_sweep(m->ledger, now, m->config->tombstone_retention_us, acct_sampler_release, m->sampler);
	fold_tombstones(m);
	int n = acct_ledger_snapshot(m->ledger, true, &cgs);
	if (n < 0)
		return n;
	/* This pass reads every live cgroup, those queued for a read too. */
	m->nr_soon = 0;
	m->soon_all = false;
	size_t live = 0;
	for (int i = 0; i < n; i++) {
		if (acct_cgroup_is_dead(cgs[i]))
			acct_sampler_release(cgs[i], m->sampler);
		else
			cgs[live++] = cgs[i];
	}
	int r = acct_sampler_start(m->sampler, cgs, live, flags, now);
	if (r == 0)
		m->pass_flags = flags;
	return r;
}

static unsigned due_flags(struct manager *m, uint64_t now);

static int compare_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
	return x < y ? -1 : x > y;
}

/* A pass over the queued cgroups (read_soon()), when the sampler is free; the
 * ticks' full passes go first when both wait (on_sampler_done()). */
static void start_soon_pass(struct manager *m)
{
	if ((m->nr_soon == 0 && !m->soon_all) || !m->ready || acct_sampler_busy(m->sampler))
		return;
	if (m->soon_all) {
		int r = start_pass(m, due_flags(m, acct_now_us()));
		if (r < 0)
			log_warning_errno(r, "Failed to start a sampling pass: %m");
		return;
	}
	/* Sorted, duplicates and records that died meanwhile dropped; nothing is
	 * swept between queueing and here (only start_pass() sweeps, and it
	 * empties the queue first), so every pointer is still a record. */
	qsort(m->soon, m->nr_soon, sizeof(*m->soon), compare_ptr);
	size_t n = 0;
	for (size_t i = 0; i < m->nr_soon; i++)
		if ((n == 0 || m->soon[n - 1] != m->soon[i]) && !acct_cgroup_is_dead(m->soon[i]))
			m->soon[n++] = m->soon[i];
	int r = n ? acct_sampler_start(m->sampler, m->soon, n, ACCT_PASS_FAST | ACCT_PASS_EVENT, acct_now_us()) : 0;
	if (r < 0) {
		log_warning_errno(r, "Failed to start a sampling pass, ignoring: %m");
		return;
	}
	m->nr_soon = 0;
	if (n)
		m->pass_flags = ACCT_PASS_FAST | ACCT_PASS_EVENT;
}

static unsigned due_flags(struct manager *m, uint64_t now)
{
	unsigned flags = ACCT_PASS_FAST;
	if (now >= m->next_slow_us) {
		flags |= ACCT_PASS_SLOW;
		m->next_slow_us = now + m->config->slow_interval_us;
	}
	if (m->config->load_average && now >= m->next_load_us) {
		flags |= ACCT_PASS_LOAD;
		m->next_load_us = now + LOAD_PERIOD_US;
	}
	return flags;
}

/* The share of a core that walks alone may take (see finish_pass()). */
#define KERNEL_CPU_SHARE 0.02

/* A pass of the collector's memory values alone ([sampling] bpf_interval):
 * only when the sampler is idle, since any other pass reads them too. */
static void on_kernel_tick(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	if (!m->ready || acct_sampler_busy(m->sampler) || acct_now_us() < m->next_kernel_us)
		return;
	int r = start_pass(m, ACCT_PASS_KERNEL);
	if (r < 0)
		log_warning_errno(r, "Failed to start a BPF pass: %m");
}

static void on_tick(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;

	if (acct_sampler_busy(m->sampler)) {
		/* A pass takes longer than the interval: run the next one as soon
		 * as it completes instead of queueing more. */
		m->pass_pending = true;
		return;
	}
	int r = start_pass(m, due_flags(m, acct_now_us()));
	if (r < 0)
		log_warning_errno(r, "Failed to start a sampling pass: %m");
}

static void write_state_file(struct manager *m, const struct acct_pass_report *rep);
static void log_top(struct manager *m);

/* A pass over queued cgroups only: its errors count, the values it read are
 * in the ledger (and the state file), but the figures of the last full pass,
 * its histograms and reconciliation stay those of full passes. */
static void finish_event_pass(struct manager *m, const struct acct_pass_report *rep)
{
	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		m->sample_errors_total[i] += rep->errors[i];
	m->cgroups_failed_total += rep->cgroups_failed;
	/* The whole ledger is written: at most every 100 ms for these passes, so
	 * that a storm of changes does not rewrite it per change. */
	uint64_t now = acct_now_us();
	if (m->source.state_file && now - m->state_event_us >= 100000) {
		write_state_file(m, &m->last_fast);
		m->state_event_us = now;
	}
}

/* The collector's figures of any pass; a part moved back to files is said
 * once, with the disagreement that decided it. */
static void note_bpf(struct manager *m, const struct acct_pass_report *rep)
{
	_cleanup_free_ char *text = NULL; /* the mismatch names a cgroup: as the log shows names */

	m->bpf_checks_total += rep->bpf_checks;
	m->bpf_mismatches_total += rep->bpf_mismatches;
	if (rep->last_mismatch[0]) {
		memcpy(m->bpf_last_mismatch, rep->last_mismatch, sizeof(m->bpf_last_mismatch));
		log_debug("BPF value outside the files' readings around the walk: %s",
			  name_text(rep->last_mismatch, &text));
	}
	if (rep->bpf_fallbacks)
		log_warning("BPF values disagreed with the files %d passes in a row (last: %s): that part is read "
			    "from files from now on",
			    ACCT_BPF_MISMATCH_PASSES, text ?: name_text(m->bpf_last_mismatch, &text));
}

/* After a pass that set memory without a whole reconciliation (a walk alone,
 * an event pass): the root's memory follows its children, and Status's root
 * figure follows the root (acct_reconcile_root()). Without it, a root defined
 * at the last full pass served less than its top level as a walk had moved it. */
static void refresh_root(struct manager *m)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(m->ledger, false, &cgs);
	if (n < 0)
		return; /* out of memory: the next full pass defines it */
	acct_sampler_root_memory(m->sampler, cgs, (size_t)n);
	acct_reconcile_root(cgs, (size_t)n, m->meminfo_path, &m->reconcile);
}

static void finish_pass(struct manager *m, const struct acct_pass_report *rep)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	uint64_t now = acct_now_us();
	note_bpf(m, rep);
	if (rep->flags & (ACCT_PASS_KERNEL | ACCT_PASS_EVENT))
		refresh_root(m);
	if (rep->flags & ACCT_PASS_KERNEL) {
		/* Walks alone take at most KERNEL_CPU_SHARE of a core: where one
		 * costs more than that share of bpf_interval (many cgroups), they
		 * run less often. */
		m->kernel_passes++;
		m->next_kernel_us = now + (uint64_t)(rep->cpu_seconds * 1e6 / KERNEL_CPU_SHARE);
		for (int i = 0; i < _ACCT_ERR_MAX; i++)
			m->sample_errors_total[i] += rep->errors[i];
		return;
	}
	if (rep->flags & ACCT_PASS_EVENT) {
		finish_event_pass(m, rep);
		return;
	}
	int n = acct_ledger_snapshot(m->ledger, false, &cgs);

	if (n >= 0) {
		if (rep->flags & ACCT_PASS_LOAD)
			acct_sampler_aggregate_load(m->sampler, cgs, (size_t)n, now);
		if (rep->flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW))
			acct_sampler_root_memory(m->sampler, cgs, (size_t)n);
		bool hierarchical = true; /* v2 always; v1 since 5.11 (use_hierarchy is always 1) */
		acct_reconcile_pass(m->ledger, cgs, (size_t)n, rep, m->meminfo_path, hierarchical, m->sampler,
				    &m->reconcile);
		history_record_pass(m, cgs, (size_t)n, now);
	}
	m->passes++;
	m->last_fast = *rep;
	if (rep->flags & ACCT_PASS_SLOW)
		m->last_slow = *rep;
	pass_histogram_add(&m->pass_hist[(rep->flags & ACCT_PASS_SLOW) ? 1 : 0], (double)rep->wall_us / 1e6);
	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		m->sample_errors_total[i] += rep->errors[i];
	m->cgroups_failed_total += rep->cgroups_failed;
	uint64_t errors = 0;
	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		errors += rep->errors[i];
	if (errors)
		log_debug("Pass over %" PRIu64 " cgroups: %" PRIu64 " failed reads (%" PRIu64 " vanished, %" PRIu64
			  " garbage, %" PRIu64 " unreadable)",
			  rep->cgroups, errors, rep->errors[ACCT_ERR_VANISHED], rep->errors[ACCT_ERR_GARBAGE],
			  rep->errors[ACCT_ERR_UNREADABLE]);
	if (m->source.state_file)
		write_state_file(m, rep);
	if (!m->ready) {
		m->ready = true;
		update_status(m);
		notify("READY=1");
		log_info("Ready: %" PRIu64 " cgroups sampled in %" PRIu64 " ms", rep->cgroups, rep->wall_us / 1000);
		log_top(m);
	} else
		update_status_full(m, false);
}

static void on_sampler_done(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	struct acct_pass_report rep;

	if (acct_sampler_collect(m->sampler, &rep) < 0)
		return;
	finish_pass(m, &rep);
	/* Waiters are served by a pass that read every file and started after
	 * they asked. */
	if (m->waiters_in_pass > 0 && (rep.flags & ACCT_PASS_SLOW)) {
		size_t n = m->waiters_in_pass;
		_cleanup_free_ struct manager_waiter *w = malloc(n * sizeof(*w));
		if (w) {
			memcpy(w, m->waiters, n * sizeof(*w));
			memmove(m->waiters, m->waiters + n, (m->nr_waiters - n) * sizeof(*w));
			m->nr_waiters -= n;
			m->waiters_in_pass = 0;
			for (size_t i = 0; i < n; i++)
				w[i].fn(m, &rep, w[i].userdata);
		}
	}
	if (m->pass_requested || m->pass_pending) {
		unsigned flags = due_flags(m, acct_now_us());
		if (m->pass_requested) {
			flags |= ACCT_PASS_SLOW;
			m->pass_requested = false;
			m->waiters_in_pass = m->nr_waiters;
		}
		m->pass_pending = false;
		int r = start_pass(m, flags);
		if (r < 0)
			log_warning_errno(r, "Failed to start a sampling pass: %m");
	} else
		start_soon_pass(m);
}

int manager_request_pass(struct manager *m, manager_pass_fn fn, void *userdata)
{
	struct manager_waiter *w = reallocarray(m->waiters, m->nr_waiters + 1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	m->waiters = w;
	m->waiters[m->nr_waiters++] = (struct manager_waiter){ fn, userdata };
	if (acct_sampler_busy(m->sampler)) {
		m->pass_requested = true; /* the pass after the running one */
		return 0;
	}
	int r = start_pass(m, due_flags(m, acct_now_us()) | ACCT_PASS_SLOW);
	if (r < 0) {
		m->nr_waiters--;
		return r;
	}
	m->waiters_in_pass = m->nr_waiters;
	return 0;
}

int manager_tune(struct manager *m, const struct acct_ledger_budgets *budgets, int auto_tune, const struct ucred *by)
{
	if (budgets && (budgets->bytes < 0 || budgets->cpu_us < 0 || budgets->tasks < 0))
		return -EINVAL;
	if (budgets)
		acct_ledger_set_budgets(m->ledger, budgets);
	if (auto_tune >= 0)
		acct_domain_set_auto_tune(m->domain, auto_tune > 0);
	m->tuned = true;
	log_info("Tuned at run time by uid %u (pid %d): budgets %" PRId64 " bytes, %" PRId64 " us, %" PRId64
		 " tasks, auto_tune %s",
		 (unsigned)by->uid, (int)by->pid, budgets ? budgets->bytes : m->config->budget_bytes, budgets ? budgets->cpu_us : m->config->budget_cpu_us,
		 budgets ? budgets->tasks : m->config->budget_tasks, auto_tune < 0 ? "unchanged" : auto_tune ? "on" : "off");
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

static void on_tune(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	acct_domain_tune(m->domain, acct_now_us() * 1000);
}

static void on_watchdog(evutil_socket_t fd, short what, void *userdata)
{
	notify("WATCHDOG=1");
}

/* ---- signals and reload ---------------------------------------------------- */

static void on_signal(evutil_socket_t sig, short what, void *userdata)
{
	struct manager *m = userdata;

	if (sig == SIGHUP) {
		(void)manager_reload(m);
		return;
	}
	log_info("Received %s, stopping", strsignal((int)sig));
	notify("STOPPING=1");
	m->exiting = true;
	event_base_loopexit(m->base, NULL);
}

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

/* The configuration with its warnings logged; on error its reason in
 * *ret_error. *ret_warnings: what was ignored (never NULL on success). */
static int load_config(const struct manager_config_source *src, struct acct_config **ret, char ***ret_warnings,
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

static void arm_timers(struct manager *m)
{
	struct timeval tv = timeval_from_usec(m->config->fast_interval_us);
	event_add(m->ev_tick, &tv);
	tv = timeval_from_usec(m->config->rescan_interval_us);
	event_add(m->ev_rescan, &tv);
	if (acct_bpf_collector_any(m->collector) && m->config->bpf_interval_us) {
		tv = timeval_from_usec(m->config->bpf_interval_us);
		event_add(m->ev_kernel, &tv);
	} else
		event_del(m->ev_kernel);
}

/* After the scan that follows the start or a reload, once: filter globs that
 * select nothing would otherwise fail silently. */
static void warn_unmatched_glob(bool include, const char *glob, void *userdata)
{
	log_warning("[cgroups] %s glob '%s' matches no cgroup", include ? "include" : "exclude", glob);
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
static void warn_ip_confine(const char *listen)
{
	const char *allow = getenv(ACCT_IP_ALLOW_ENV);

	if (!acct_ip_confine_lets_through(allow, listen))
		log_warning("[metrics] listen = %s is not a loopback address, but acctd.service lets IP traffic "
			    "through to localhost only (" ACCT_IP_ALLOW_ENV "=%s): other hosts cannot scrape "
			    "/metrics until \"systemctl daemon-reload\" and \"systemctl restart acctd\"",
			    listen, allow);
}

int manager_reload(struct manager *m)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	_cleanup_strv_free_ char **warnings = NULL;
	_cleanup_free_ char *error = NULL;
	int r;

	notify("RELOADING=1\nMONOTONIC_USEC=%" PRIu64, acct_now_us());
	m->reloads++;
	m->reload_time_us = acct_now_us();
	r = load_config(&m->source, &c, &warnings, &error);
	if (r < 0) {
		m->reload_failures++;
		m->reload_outcome = MANAGER_RELOAD_FAILED;
		snprintf(m->reload_error, sizeof(m->reload_error), "%s", error ? error : "unknown error");
		log_error("Reload failed, keeping the previous configuration: %s", m->reload_error);
		update_status(m);
		notify("READY=1");
		return r;
	}
	const char *old_root = m->config->cgroup_root ? m->config->cgroup_root : "";
	const char *new_root = c->cgroup_root ? c->cgroup_root : "";
	if (strcmp(old_root, new_root) != 0 || c->workers != m->config->workers)
		log_warning("cgroup root and worker count apply at the next restart, keeping the current ones");
	/* The collector is built at start (and its pins by --bpf-pin before it):
	 * keep the running one, and say so. */
	const char *old_pins = m->config->bpf_pin_dir ? m->config->bpf_pin_dir : "";
	if (c->collector != m->config->collector || strcmp(old_pins, c->bpf_pin_dir ? c->bpf_pin_dir : "") != 0) {
		log_warning("[sampling] collector and bpf_pin_dir apply at the next restart, keeping collector = %s",
			    acct_collector_mode_to_string(m->config->collector));
		c->collector = m->config->collector;
		free(c->bpf_pin_dir);
		c->bpf_pin_dir = m->config->bpf_pin_dir ? strdup(m->config->bpf_pin_dir) : NULL;
	}
	struct acct_ledger_budgets b = { c->budget_bytes, c->budget_cpu_us, c->budget_tasks };
	acct_ledger_set_budgets(m->ledger, &b);
	acct_domain_set_auto_tune(m->domain, c->auto_tune);
	m->tuned = false; /* back to the configured values */
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
	(void)acct_discovery_scan(m->discovery, on_discovery, m);
	acct_discovery_unmatched(m->discovery, warn_unmatched_glob, NULL);
	metrics_warn_unmatched(m);
	arm_timers(m);
	if (m->history)
		history_recorder_configure(m->history, m->config);
	if (m->history_queries)
		history_queries_configure(m->history_queries, m->config);
	m->reload_outcome = MANAGER_RELOAD_OK;
	m->reload_error[0] = 0;
	warn_ip_confine(m->config->metrics_listen); /* applies at the next start: say what it will need */
	log_info("Configuration reloaded");
	update_status(m);
	notify("READY=1");
	return 0;
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
static int topology_for_layout(const struct acct_cgroup_layout *layout, struct acct_topology **ret)
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
static bool layout_is_kernels(const struct acct_cgroup_layout *l)
{
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		struct statfs sf;
		if (l->mount[h] && statfs(l->mount[h], &sf) == 0)
			return sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC;
	}
	return false;
}

/* The BPF collector, per [sampling] collector: each hierarchy's choice and
 * its reason logged once (Status and /metrics show them too). */
static int build_collector(struct manager *m, unsigned nr_nodes)
{
	struct acct_config *c = m->config;
	int r;
	if (c->collector == ACCT_COLLECTOR_FILES) {
		log_info("Collector: cgroupfs files (collector = files)");
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

	r = acct_cgroup_layout_detect(c->cgroup_root, &m->layout);
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
	struct acct_ledger_budgets b = { c->budget_bytes, c->budget_cpu_us, c->budget_tasks };
	r = acct_ledger_new(m->domain, &b, &m->ledger);
	if (r < 0)
		return log_error_errno(r, "Failed to create the ledger: %m");
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
	r = load_config(source, &m->config, &m->config_warnings, &error);
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
	m->ev_inotify = event_new(m->base, acct_discovery_fd(m->discovery), EV_READ | EV_PERSIST, on_inotify, m);
	m->ev_sampler = event_new(m->base, acct_sampler_fd(m->sampler), EV_READ | EV_PERSIST, on_sampler_done, m);
	m->ev_tick = event_new(m->base, -1, EV_PERSIST, on_tick, m);
	m->ev_rescan = event_new(m->base, -1, EV_PERSIST, on_rescan, m);
	m->ev_tune = event_new(m->base, -1, EV_PERSIST, on_tune, m);
	m->ev_watchdog = event_new(m->base, -1, EV_PERSIST, on_watchdog, m);
	m->ev_kernel = event_new(m->base, -1, EV_PERSIST, on_kernel_tick, m);
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
	arm_timers(m);

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
	r = api_server_start(m);
	if (r < 0)
		return r;
	r = metrics_server_start(m);
	if (r < 0)
		return r;
	warn_ip_confine(m->config->metrics_listen);
	r = acct_discovery_scan(m->discovery, on_discovery, m);
	if (r < 0)
		return log_error_errno(r, "Failed to walk the cgroup hierarchies: %m");
	acct_discovery_unmatched(m->discovery, warn_unmatched_glob, NULL);
	metrics_warn_unmatched(m);
	uint64_t live;
	acct_ledger_counts(m->ledger, &live, NULL);
	log_info("Found %" PRIu64 " cgroups", live);
	update_status(m);
	uint64_t now = acct_now_us();
	m->next_slow_us = now + m->config->slow_interval_us;
	m->next_load_us = now + LOAD_PERIOD_US;
	r = start_pass(m, ACCT_PASS_FAST | ACCT_PASS_SLOW | (m->config->load_average ? ACCT_PASS_LOAD : 0));
	if (r < 0)
		return log_error_errno(r, "Failed to start the first sampling pass: %m");
	return 0;
}

int manager_run(struct manager *m)
{
	event_base_dispatch(m->base);
	return m->exit_code;
}

/* The document of --dump and --state-file. */
static struct json_object *ledger_json(struct manager *m, struct acct_cgroup *const *cgs, size_t n,
				       const struct acct_pass_report *rep, uint64_t now)
{
	struct json_object *top = json_object_new_object(), *arr = json_object_new_array();
	json_object_object_add(top, "version", json_object_new_string(ACCTD_VERSION));
	json_object_object_add(top, "cgroup_mode", json_object_new_string(acct_cgroup_mode_to_string(m->layout->mode)));
	json_object_object_add(top, "cgroup_root", acct_json_text(m->layout->root));
	unsigned nodes = acct_domain_topology(m->domain)->nr_nodes;
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, acct_cgroup_to_json(m->ledger, cgs[i], now, false, nodes));
	json_object_object_add(top, "cgroups", arr);
	json_object_object_add(top, "pass", acct_pass_to_json(rep));
	json_object_object_add(top, "reconciliation", acct_reconcile_to_json(&m->reconcile));
	return top;
}

/* The state file's "daemon" object: the Status() document (status.c) and
 * the figures only the state file has. NULL on -ENOMEM. */
static struct json_object *daemon_json(const struct manager *m)
{
	struct json_object *o = NULL;
	uint64_t cached;
	bool degraded;

	if (daemon_status_json(m, &o) < 0)
		return NULL;
	json_object_object_add(o, "passes", json_object_new_int64((int64_t)m->passes));
	acct_sampler_fd_stats(m->sampler, &cached, &degraded);
	json_object_object_add(o, "cached_descriptors", json_object_new_int64((int64_t)cached));
	json_object_object_add(o, "descriptors_degraded", json_object_new_boolean(degraded));
	return o;
}

/* The text of a json-c object without its closing brace ("{...", head) or
 * without its opening one ("...}", tail), to splice an array between them.
 * NULL on -ENOMEM. */
static char *object_text(struct json_object *o, bool head)
{
	const char *t = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
			  : NULL;
	size_t len = t ? strlen(t) : 0;
	if (len < 2)
		return NULL;
	return head ? strndup(t, len - 1) : strdup(t + 1);
}

/* --state-file: the whole ledger, tombstones included, replaced atomically
 * after every pass, by the state writer's thread (state-writer.h). The event
 * loop makes the small parts around the records, which read its own state,
 * as json-c objects; the writer puts the records' text between them. The
 * document is that of --dump (ledger_json()) plus "daemon", on one line. */
static void write_state_file(struct manager *m, const struct acct_pass_report *rep)
{
	struct json_object *head = json_object_new_object(), *tail = json_object_new_object();
	if (head && tail) {
		json_object_object_add(head, "version", json_object_new_string(ACCTD_VERSION));
		json_object_object_add(head, "cgroup_mode",
				       json_object_new_string(acct_cgroup_mode_to_string(m->layout->mode)));
		json_object_object_add(head, "cgroup_root", acct_json_text(m->layout->root));
		json_object_object_add(tail, "pass", acct_pass_to_json(rep));
		json_object_object_add(tail, "reconciliation", acct_reconcile_to_json(&m->reconcile));
		json_object_object_add(tail, "daemon", daemon_json(m));
	}
	char *head_text = object_text(head, true), *tail_text = object_text(tail, false);
	json_object_put(head);
	json_object_put(tail);
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(m->ledger, true, &cgs);
	if (!head_text || !tail_text || n < 0) {
		free(head_text);
		free(tail_text);
		free(cgs);
		log_warning("Failed to build the state file (out of memory), skipping this pass's");
		return;
	}
	state_writer_submit(m->state_writer, head_text, tail_text, cgs, (size_t)n, acct_now_us());
}

static int compare_memory_desc(const void *a, const void *b)
{
	const struct acct_cgroup *x = *(struct acct_cgroup *const *)a, *y = *(struct acct_cgroup *const *)b;
	struct acct_reading rx = { 0 }, ry = { 0 };
	(void)acct_cgroup_get(x, ACCT_Q_MEMORY, false, &rx);
	(void)acct_cgroup_get(y, ACCT_Q_MEMORY, false, &ry);
	return rx.value < ry.value ? 1 : rx.value > ry.value ? -1 : strcmp(x->path, y->path);
}

/* At start: what acctd tracks, the largest first, for whoever watches it start. */
static void log_top(struct manager *m)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(m->ledger, false, &cgs);
	if (n <= 0)
		return;
	qsort(cgs, (size_t)n, sizeof(*cgs), compare_memory_desc);
	log_info("%-48s %12s %14s", "CGROUP", "MEMORY", "CPU TIME");
	for (int i = 0; i < n && i < 15; i++) {
		struct acct_reading mem = { 0 }, cpu = { 0 };
		bool hm = acct_cgroup_get(cgs[i], ACCT_Q_MEMORY, false, &mem);
		bool hc = acct_cgroup_get(cgs[i], ACCT_Q_CPU_USAGE, false, &cpu);
		char ms[FORMAT_HUMAN_MAX] = "-", cs[FORMAT_HUMAN_MAX] = "-";
		/* acctctl's units (lib/basic/format-human.h): 36.0K, 3.0G, 1min 2.5s */
		if (hm)
			format_bytes(ms, mem.value);
		if (hc)
			format_duration(cs, cpu.value);
		_cleanup_free_ char *text = NULL;
		log_info("%-48s %12s %14s", name_text(cgs[i]->path, &text), ms, cs);
	}
	if (n > 15)
		log_info("... and %d more", n - 15);
}

int manager_dump(struct manager *m, FILE *out)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	struct acct_pass_report rep;
	int r, n;

	r = acct_discovery_scan(m->discovery, on_discovery, m);
	if (r < 0)
		return log_error_errno(r, "Failed to walk the cgroup hierarchies: %m");
	n = acct_ledger_snapshot(m->ledger, false, &cgs);
	if (n < 0)
		return log_oom();
	unsigned flags = ACCT_PASS_FAST | ACCT_PASS_SLOW | (m->config->load_average ? ACCT_PASS_LOAD : 0);
	r = acct_sampler_run(m->sampler, cgs, (size_t)n, flags, acct_now_us(), &rep);
	if (r < 0)
		return log_error_errno(r, "Sampling failed: %m");
	uint64_t now = acct_now_us();
	if (flags & ACCT_PASS_LOAD)
		acct_sampler_aggregate_load(m->sampler, cgs, (size_t)n, now);
	acct_sampler_root_memory(m->sampler, cgs, (size_t)n);
	acct_reconcile_pass(m->ledger, cgs, (size_t)n, &rep, m->meminfo_path, true, m->sampler, &m->reconcile);

	struct json_object *top = ledger_json(m, cgs, (size_t)n, &rep, now);
	fputs(json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE), out);
	fputc('\n', out);
	json_object_put(top);
	return fflush(out) == 0 ? 0 : -errno;
}

struct manager *manager_free(struct manager *m)
{
	if (!m)
		return NULL;
	m->api = api_server_free(m->api); /* before the queries: it detaches their connections */
	m->metrics = metrics_server_free(m->metrics);
	m->history_queries = history_queries_free(m->history_queries, api_history_query_drop);
	history_record_last_pass(m);
	m->history = history_recorder_free(m->history); /* writes what is queued, ends the run */
	m->admin = admin_group_free(m->admin); /* before the event base it watches */
	/* Workers first: they hold record pointers; so does the state file's
	 * writer, which finishes its last write. */
	m->sampler = acct_sampler_free(m->sampler);
	m->state_writer = state_writer_free(m->state_writer);
	m->collector = acct_bpf_collector_free(m->collector);
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
	if (m->base)
		event_base_free(m->base);
	acct_discovery_free(m->discovery);
	acct_ledger_free(m->ledger);
	acct_domain_free(m->domain);
	acct_cgroup_layout_free(m->layout);
	acct_config_free(m->config);
	strv_free(m->config_warnings);
	free(m->meminfo_path);
	free(m->waiters);
	free(m->soon);
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

struct acct_ledger *manager_ledger(const struct manager *m)
{
	return m->ledger;
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

void manager_set_api(struct manager *m, struct api_server *s)
{
	m->api = s;
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
		.bpf_checks = m->bpf_checks_total,
		.bpf_mismatches = m->bpf_mismatches_total,
		.tombstones_folded = m->tombstones_folded,
	};
	memcpy(ret->bpf_last_mismatch, m->bpf_last_mismatch, sizeof(ret->bpf_last_mismatch));
	memcpy(ret->sample_errors_total, m->sample_errors_total, sizeof(ret->sample_errors_total));
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

const struct acct_cgroup_layout *manager_layout(const struct manager *m)
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

struct api_server *manager_api(const struct manager *m)
{
	return m->api;
}

void manager_set_metrics(struct manager *m, struct metrics_server *s)
{
	m->metrics = s;
}

struct history_recorder *manager_history(const struct manager *m)
{
	return m->history;
}

struct history_queries *manager_history_queries(const struct manager *m)
{
	return m->history_queries;
}
