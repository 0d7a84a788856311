/* config.h - acctd's configuration: built-in defaults, /etc/acctd/acctd.conf,
 * then /etc/acctd/acctd.conf.d/ *.conf in lexical order (INI, parsed by inih).
 *
 * Values: sizes take K/M/G/T suffixes (powers of 1024, "B" optional), durations
 * us/ms/s/min/h (a bare number is seconds), booleans yes/no/true/false/on/off/1/0.
 * A bad value is refused with "FILE:LINE: key: reason"; unknown sections and keys
 * are reported as warnings ("FILE:LINE: unknown key 'x' in section [y], ignoring") and
 * otherwise ignored. Loading is all-or-nothing: on error nothing is returned.
 * A load also refuses budgets beyond the host (budget-limits.h);
 * acct_config_set() checks one value's syntax and range only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/parse.h"
#include "collector-mode.h"
#include "removal-log.h"

#define ACCT_CONFIG_FILE "/etc/acctd/acctd.conf"
#define ACCT_CONFIG_DROPIN_DIR "/etc/acctd/acctd.conf.d"
#define ACCT_METRICS_DEFAULT_LISTEN "127.0.0.1:9847"

enum acct_log_level { /* syslog priorities */
	ACCT_LOG_ERR = 3,
	ACCT_LOG_WARNING = 4,
	ACCT_LOG_NOTICE = 5,
	ACCT_LOG_INFO = 6,
	ACCT_LOG_DEBUG = 7,
};

/* A resource that programs charge to their cgroups (docs/charges.md), one
 * [resource.NAME] section each. */
enum acct_resource_unit {
	ACCT_RESOURCE_COUNT,   /* things: requests, slots, licences */
	ACCT_RESOURCE_BYTES,
	ACCT_RESOURCE_SECONDS, /* counted in microseconds, as acctd counts CPU time */
	_ACCT_RESOURCE_UNIT_MAX,
};

/* What a removed cgroup's charges become. */
enum acct_resource_removal {
	ACCT_REMOVAL_RELEASE,  /* dropped: the ancestors' subtree totals fall */
	ACCT_REMOVAL_REPARENT, /* moved to the parent, as the kernel does for memory */
	_ACCT_REMOVAL_MAX,
};

#define ACCT_RESOURCE_NAME_MAX 64 /* bytes of a NAME, [a-z0-9_]+ */
#define ACCT_RESOURCES_MAX 256    /* declared resources */

struct acct_resource_config {
	char *name;                   /* NAME of [resource.NAME] */
	enum acct_resource_unit unit; /* (count) */
	int64_t budget;               /* error budget, in the unit (microseconds for seconds);
				       * default: [counters] tasks_budget, bytes_budget or cpu_budget */
	char *budget_text;            /* as written, until the load knows the unit; NULL: default */
	char *budget_origin;          /* "FILE:LINE" of budget_text */
	enum acct_resource_removal on_removal; /* (release) */
	bool release_on_exit;         /* a client's net charge goes when its connection closes (no) */
	bool averages;                /* 1/5/15-minute averages (no) */
	bool ram;                     /* reconciled against the cgroup's memory (no; bytes only) */
};

const char *acct_resource_unit_to_string(enum acct_resource_unit u);
const char *acct_resource_removal_to_string(enum acct_resource_removal r);
/* The unit or removal rule named `s`, or -EINVAL. */
int acct_resource_unit_from_string(const char *s);
int acct_resource_removal_from_string(const char *s);

struct acct_config {
	/* [sampling] */
	uint64_t fast_interval_us;    /* fast files: memory.current, cpu.stat, PSI (1s) */
	uint64_t slow_interval_us;    /* memory.stat, memory.numa_stat (10s) */
	uint64_t rescan_interval_us;  /* safety-net full rescan (60s) */
	unsigned workers;             /* sampling threads = max concurrent reads (2) */
	bool load_average;            /* per-cgroup load average, O(threads) (yes) */
	int collector;                /* enum acct_collector_mode (auto) */
	uint64_t bpf_interval_us;     /* memory from the collector alone, between file passes (100ms; 0 off) */
	char *bpf_pin_dir;            /* pinned iterators of acctd --bpf-pin (/sys/fs/bpf/acctd); NULL: none */

	/* [cgroups] */
	char *cgroup_root;            /* NULL: discover (libcgroup); else this directory */
	char **include;               /* NULL-terminated globs on cgroup paths ("*" if empty) */
	char **exclude;               /* NULL-terminated globs; excludes the subtree */
	unsigned max_depth;           /* 0 = root only (32) */
	uint64_t tombstone_retention_us; /* keep removed cgroups' final values (5min) */
	unsigned max_tombstones;      /* beyond, the oldest are forgotten early, counted (4096; 0 = no limit) */

	/* [counters] error budgets per kind of quantity */
	int64_t bytes_budget;         /* (1M) */
	int64_t cpu_budget_us;        /* (10ms) */
	int64_t tasks_budget;         /* (8) */
	bool auto_tune;               /* (yes) */

	/* [api] */
	char *socket_path;            /* /run/acctd/io.acctd as root, else $XDG_RUNTIME_DIR/acctd/io.acctd */
	char *admin_group;            /* group allowed administrative calls besides root (NULL) */
	uint64_t max_message_size;    /* (16M) */
	unsigned max_connections;     /* (4096) */
	unsigned max_connections_per_user; /* (1024) */
	uint64_t idle_timeout_us;     /* (5min) */
	uint64_t max_output_queue;    /* bytes queued per connection (4M) */
	/* resource budgets per uid and in total (daemon/acctd/api-budget.h) */
	uint64_t max_input_bytes_per_user;  /* input buffered, not yet taken as calls (32M) */
	uint64_t max_input_bytes;           /* (256M) */
	uint64_t max_output_bytes_per_user; /* replies queued, not yet written (32M) */
	uint64_t max_output_bytes;          /* (256M) */
	unsigned max_watches_per_user;      /* Watch calls in progress (256) */
	unsigned max_watches;               /* (4096) */
	unsigned max_watch_cgroups;         /* entries of one Watch's cgroups array (16384) */
	unsigned max_watched_cgroups_per_user; /* entries of all of a user's Watch calls (65536) */
	unsigned max_watched_cgroups;       /* (262144) */
	unsigned max_queries_per_user;      /* Usage and History queued and running, root not counted (4) */
	unsigned max_charge_batch;          /* entries of one ChargeBatch (100,000) */
	unsigned max_charge_slots_per_connection; /* slots open through one connection (64) */
	uint64_t charge_sync_interval_us;   /* the charges' state file written at most this late (5s) */
	char *charge_state_path;            /* the charges' state file (charges.state in the state directory); NULL: none */

	/* [metrics] */
	char *metrics_listen;         /* "HOST:PORT", "[V6]:PORT" or "none" (127.0.0.1:9847) */
	unsigned metrics_max_depth;   /* per-cgroup series down to this depth (32) */
	unsigned metrics_max_series;  /* the default page's cut: whole deepest levels beyond it (50,000; 0: none) */
	char **metrics_include;       /* globs on cgroup paths for per-cgroup series ("*") */
	char **metrics_exclude;       /* globs; excludes the subtree from the metrics () */
	char **metrics_families;      /* family words, see docs/metrics.md ("default") */

	/* [log] */
	enum acct_log_level log_level; /* (info) */
	uint64_t log_rate_limit_interval_us; /* per-cause rate limit window (30s) */
	unsigned log_rate_limit_burst;       /* messages of one cause per window (30; 0 = no limit) */
	enum acct_removal_log log_removals;  /* (summary) */

	/* [history] (docs/history.md, "In the daemon") */
	bool history_enabled;          /* record history (yes) */
	char *history_path;            /* the database (acct_config_default_history_path()); NULL: that default */
	uint64_t history_interval_us;  /* recording interval (10s) */
	uint64_t history_raw_retention_us;    /* full resolution (3h) */
	uint64_t history_minute_retention_us; /* 1-minute rollups (7d) */
	uint64_t history_hour_retention_us;   /* 1-hour rollups (365d) */
	uint64_t history_max_size;     /* the file's size cap, bytes (1G; 0: none) */

	/* [resource.NAME] sections, in the order first declared. A reload
	 * reports a change of them, which the next start applies. */
	struct acct_resource_config *resources;
	size_t nr_resources;

	/* Files that were read, in order (NULL-terminated; may be empty). */
	char **sources;
};

/* Diagnostics of a load: the first error and every warning, as
 * "FILE:LINE: ..." lines. Free with acct_config_diag_clear(). */
struct acct_config_diag {
	char *error;
	char **warnings; /* NULL-terminated or NULL */
	size_t nr_warnings;
};

/* Fill *ret with the built-in defaults. Returns 0 or -ENOMEM. */
int acct_config_new_defaults(struct acct_config **ret);

/* The resource called `name`, or NULL. */
const struct acct_resource_config *acct_config_resource(const struct acct_config *c, const char *name);

/* Whether `name` is a valid resource NAME: 1..ACCT_RESOURCE_NAME_MAX bytes of
 * [a-z0-9_]. */
bool acct_resource_name_valid(const char *name);

/* Load the configuration. `main_file` NULL means ACCT_CONFIG_FILE, which may be
 * missing; "" means none (built-in defaults and the drop-ins only); any other
 * main_file must exist. `dropin_dir` NULL means
 * ACCT_CONFIG_DROPIN_DIR (may be missing); "" means none. Returns 0, or a
 * negative errno with diag->error set ("FILE:LINE: key: reason" for a bad value,
 * "FILE: strerror" for an unreadable file). */
int acct_config_load(const char *main_file, const char *dropin_dir, struct acct_config **ret,
		     struct acct_config_diag *diag);

/* Apply one "section.key=value" assignment (used for command-line overrides
 * and by tests) with the same validation; `origin` names it in messages. */
int acct_config_set(struct acct_config *c, const char *section, const char *key, const char *value,
		    const char *origin, struct acct_config_diag *diag);

/* One key whose value differs between two configurations: its values as the
 * dump writes them, and whether only a start applies it (a reload keeps the
 * running value: [sampling] workers, collector, bpf_pin_dir, [cgroups] root,
 * [api] socket, [metrics] listen). */
struct acct_config_change {
	const char *section, *key; /* static */
	char *old_value, *new_value;
	bool at_start;
};

/* The keys whose values differ from `old` to `new`, in the documented order,
 * into a new array of *ret_n (free with acct_config_changes_free()). Returns
 * 0 or -ENOMEM (nothing returned). */
int acct_config_diff(const struct acct_config *old, const struct acct_config *new, struct acct_config_change **ret,
		     size_t *ret_n);
void acct_config_changes_free(struct acct_config_change *v, size_t n);

/* Put the running value of every key only a start applies (struct
 * acct_config_change's at_start: workers, collector, bpf_pin_dir, root,
 * socket, charge_state_path, listen) into `c`, a configuration a reload
 * loaded, so that it says what runs: the next reload's acct_config_diff()
 * then reports what differs from what runs (a change undone in the file is
 * no change, one still pending is reported again). The declared resources
 * are not copied. Returns 0, or -ENOMEM with `c` unchanged. */
int acct_config_keep_at_start(struct acct_config *c, const struct acct_config *running);

/* Write the effective configuration as a loadable INI file with every key. */
void acct_config_dump(const struct acct_config *c, FILE *f);

struct acct_config *acct_config_free(struct acct_config *c);
void acct_config_diag_clear(struct acct_config_diag *diag);

/* The default [history] path: $STATE_DIRECTORY/history.db under systemd
 * (the first directory of StateDirectory=), /var/lib/acctd/history.db as
 * root, else $XDG_STATE_HOME/acctd/history.db (~/.local/state/acctd/...).
 * Sets *ret to a malloc()ed string and returns 0, or sets it to NULL and
 * returns -ENOENT (no home to put it in) or -ENOMEM. */
int acct_config_default_history_path(char **ret);

/* The default path of the state file `name` in acctd's state directory, by
 * the rule of acct_config_default_history_path() (which is
 * acct_config_default_state_path("history.db", ...)): the charges' state
 * file is "charges.state". Returns 0, -ENOENT (no directory known, *ret
 * NULL) or -ENOMEM. */
int acct_config_default_state_path(const char *name, char **ret);

/* The log level parser (sizes, durations and booleans: parse.h).
 * Returns 0 or -EINVAL. */
int acct_parse_log_level(const char *s, enum acct_log_level *ret);
const char *acct_log_level_to_string(enum acct_log_level l);
