/* config.c - acctd's configuration: built-in defaults, the INI files (read with
 * inih), command-line overrides and the dump, over the keys[] table. The
 * values' parser and formatter are config-values.c, the [resource.NAME]
 * sections config-resources.c, the drop-in directory config-dropins.c and
 * the diagnostics config-diag.c (config-internal.h). It is long because of
 * the keys[] table, not because of code: the table carries, for each of its
 * 53 keys, its documentation-facing description, range and dump format.
 *
 * One table (keys[] below) names every key: its section, its kind of value, the
 * field it sets and the range it accepts. Loading, acct_config_set() and the
 * dump all go through it, so a key added there is parsed, validated, dumped and
 * round-tripped without further code.
 *
 * Line numbers. Debian's inih 55 is built without INI_HANDLER_LINENO, so the
 * handler is not told the line. We feed inih through our own reader, which
 * counts lines; inih handles one line completely (calling the handler at most
 * once) before it asks for the next, so the reader's count is the line of the
 * current handler call. The reader also removes leading whitespace: inih would
 * take an indented line after a key as a continuation of that key's value, and
 * acctd has no multi-line values, so such a line is a syntax error instead of a
 * silent change of the value above it. */
#include "config.h"
#include "config-internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/hostport.h"
#include "budget-limits.h"
#include "basic/parse.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "basic/suggest.h"
#include "basic/util.h"
#include "collector-mode.h"
#include "cgroup-glob.h"
#include "metrics-families.h"
#include "removal-log.h"


DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free)

/* ---- the keys ------------------------------------------------------------ */

#define KEY(sec, nm, k, st, field, lo, hi)                                                  \
	{                                                                                   \
		.section = sec, .name = nm, .kind = k, .store = st,                         \
		.offset = offsetof(struct acct_config, field), .min = lo, .max = hi,        \
	}
/* A key that only a start applies (the daemon keeps the running value until then). */
#define KEY_AT_START(sec, nm, k, st, field, lo, hi)                                         \
	{                                                                                   \
		.section = sec, .name = nm, .kind = k, .store = st,                         \
		.offset = offsetof(struct acct_config, field), .min = lo, .max = hi,        \
		.at_start = true,                                                           \
	}

/* Sections and keys in the order they are documented and dumped. */
static const struct key_desc keys[] = {
	KEY("sampling", "fast_interval", V_DURATION, S_U64, fast_interval_us, 1, UINT64_MAX),
	KEY("sampling", "slow_interval", V_DURATION, S_U64, slow_interval_us, 1, UINT64_MAX),
	KEY("sampling", "rescan_interval", V_DURATION, S_U64, rescan_interval_us, 1, UINT64_MAX),
	KEY_AT_START("sampling", "workers", V_INTEGER, S_UINT, workers, 1, 64),
	KEY("sampling", "load_average", V_BOOL, S_NONE, load_average, 0, 0),
	KEY_AT_START("sampling", "collector", V_COLLECTOR, S_NONE, collector, 0, 0),
	KEY_AT_START("sampling", "bpf_pin_dir", V_ROOT, S_NONE, bpf_pin_dir, 0, 0),
	KEY("sampling", "bpf_interval", V_DURATION, S_U64, bpf_interval_us, 0, UINT64_MAX),

	KEY_AT_START("cgroups", "root", V_ROOT, S_NONE, cgroup_root, 0, 0),
	KEY("cgroups", "include", V_INCLUDE, S_NONE, include, 0, 0),
	KEY("cgroups", "exclude", V_EXCLUDE, S_NONE, exclude, 0, 0),
	KEY("cgroups", "max_depth", V_INTEGER, S_UINT, max_depth, 0, 255),
	KEY("cgroups", "tombstone_retention", V_DURATION, S_U64, tombstone_retention_us, 0, UINT64_MAX),
	/* A budget on tombstones (daemon/acctd/manager-records.c, "Tombstones beyond the budget"). */
	KEY("cgroups", "max_tombstones", V_INTEGER, S_UINT, max_tombstones, 0, UINT_MAX),

	KEY("counters", "bytes_budget", V_SIZE, S_I64, bytes_budget, 0, INT64_MAX),
	KEY("counters", "cpu_budget", V_DURATION, S_I64, cpu_budget_us, 0, INT64_MAX),
	KEY("counters", "tasks_budget", V_INTEGER, S_I64, tasks_budget, 0, INT64_MAX),
	KEY("counters", "auto_tune", V_BOOL, S_NONE, auto_tune, 0, 0),

	KEY_AT_START("api", "socket", V_SOCKET, S_NONE, socket_path, 0, 0),
	KEY("api", "admin_group", V_GROUP, S_NONE, admin_group, 0, 0),
	KEY("api", "max_message_size", V_SIZE, S_U64, max_message_size, 64 * SIZE_K, SIZE_G),
	KEY("api", "max_connections", V_INTEGER, S_UINT, max_connections, 1, 65536),
	KEY("api", "max_connections_per_user", V_INTEGER, S_UINT, max_connections_per_user, 1, 65536),
	KEY("api", "idle_timeout", V_DURATION, S_U64, idle_timeout_us, 1, UINT64_MAX),
	KEY("api", "max_output_queue", V_SIZE, S_U64, max_output_queue, 1, UINT64_MAX),
	/* Resource budgets per uid and in total (daemon/acctd/api-budget.h). */
	KEY("api", "max_input_bytes_per_user", V_SIZE, S_U64, max_input_bytes_per_user, 1, UINT64_MAX),
	KEY("api", "max_input_bytes", V_SIZE, S_U64, max_input_bytes, 1, UINT64_MAX),
	KEY("api", "max_output_bytes_per_user", V_SIZE, S_U64, max_output_bytes_per_user, 1, UINT64_MAX),
	KEY("api", "max_output_bytes", V_SIZE, S_U64, max_output_bytes, 1, UINT64_MAX),
	KEY("api", "max_watches_per_user", V_INTEGER, S_UINT, max_watches_per_user, 1, UINT_MAX),
	KEY("api", "max_watches", V_INTEGER, S_UINT, max_watches, 1, UINT_MAX),
	KEY("api", "max_watch_cgroups", V_INTEGER, S_UINT, max_watch_cgroups, 1, UINT_MAX),
	KEY("api", "max_watched_cgroups_per_user", V_INTEGER, S_UINT, max_watched_cgroups_per_user, 1, UINT_MAX),
	KEY("api", "max_watched_cgroups", V_INTEGER, S_UINT, max_watched_cgroups, 1, UINT_MAX),
	KEY("api", "max_queries_per_user", V_INTEGER, S_UINT, max_queries_per_user, 1, UINT_MAX),
	KEY("api", "max_charge_batch", V_INTEGER, S_UINT, max_charge_batch, 1, UINT_MAX),
	KEY("api", "max_charge_slots_per_connection", V_INTEGER, S_UINT, max_charge_slots_per_connection, 1, UINT_MAX),
	/* How much a crash may lose of the charges (docs/charges.md, "Durability"). */
	KEY("api", "charge_sync_interval", V_DURATION, S_U64, charge_sync_interval_us, 10 * USEC_PER_MSEC, 24 * USEC_PER_HOUR),
	/* Where they live: two acctds on one host must not share one file. */
	KEY_AT_START("api", "charge_state_path", V_ROOT, S_NONE, charge_state_path, 0, 0),

	KEY_AT_START("metrics", "listen", V_LISTEN, S_NONE, metrics_listen, 0, 0),
	KEY("metrics", "max_depth", V_INTEGER, S_UINT, metrics_max_depth, 0, 255),
	/* The default page's bound (docs/metrics.md, "Selection"). */
	KEY("metrics", "max_series", V_INTEGER, S_UINT, metrics_max_series, 0, UINT_MAX),
	KEY("metrics", "include", V_INCLUDE, S_NONE, metrics_include, 0, 0),
	KEY("metrics", "exclude", V_EXCLUDE, S_NONE, metrics_exclude, 0, 0),
	KEY("metrics", "families", V_FAMILIES, S_NONE, metrics_families, 0, 0),

	KEY("log", "level", V_LOG_LEVEL, S_NONE, log_level, 0, 0),
	/* Per-cause rate limits (log.h, struct log_ratelimit). */
	KEY("log", "rate_limit_interval", V_DURATION, S_U64, log_rate_limit_interval_us, USEC_PER_MSEC, UINT64_MAX),
	KEY("log", "rate_limit_burst", V_INTEGER, S_UINT, log_rate_limit_burst, 0, UINT_MAX),
	/* A line per removed cgroup, or one per interval (history-recorder.h). */
	KEY("log", "removals", V_REMOVALS, S_NONE, log_removals, 0, 0),

	/* The history (docs/history.md). */
	KEY("history", "enabled", V_BOOL, S_NONE, history_enabled, 0, 0),
	KEY("history", "path", V_ROOT, S_NONE, history_path, 0, 0),
	KEY("history", "interval", V_DURATION, S_U64, history_interval_us, 100 * USEC_PER_MSEC, 24 * USEC_PER_HOUR),
	KEY("history", "raw_retention", V_DURATION, S_U64, history_raw_retention_us, 0, UINT64_MAX),
	KEY("history", "minute_retention", V_DURATION, S_U64, history_minute_retention_us, 0, UINT64_MAX),
	KEY("history", "hour_retention", V_DURATION, S_U64, history_hour_retention_us, 0, UINT64_MAX),
	KEY("history", "max_size", V_SIZE, S_U64, history_max_size, 0, UINT64_MAX),
};

static const struct key_desc *key_find(const char *section, const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static bool section_known(const char *section)
{
	if (config_is_resource_section(section))
		return true; /* the NAME is checked where the header is read */
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (strcmp(keys[i].section, section) == 0)
			return true;
	return false;
}

/* ---- hints for unknown names ("did you mean ...?") ------------------------ */

#define HINT_BUF 128

/* " (did you mean [cgroups]?)" for a misspelt section, else "". */
static const char *section_hint(const char *section, char buf[static HINT_BUF])
{
	const char *names[ELEMENTSOF(keys) + 1];
	size_t n = 0;

	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (n == 0 || strcmp(names[n - 1], keys[i].section) != 0)
			names[n++] = keys[i].section; /* keys[] is grouped by section */
	names[n] = NULL;
	const char *near = suggest_nearest(section, names);
	buf[0] = '\0';
	if (near)
		snprintf(buf, HINT_BUF, " (did you mean [%s]?)", near);
	return buf;
}

/* For a key not in `section` ("" outside of any): " (it belongs in [log])"
 * when another section has it, " (did you mean 'fast_interval'?)" for a
 * misspelt key of the section, else "". */
static const char *key_hint(const char *section, const char *name, char buf[static HINT_BUF])
{
	const char *names[ELEMENTSOF(keys) + 1];
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (strcmp(keys[i].name, name) == 0) {
			snprintf(buf, HINT_BUF, " (it belongs in [%s])", keys[i].section);
			return buf;
		}
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (strcmp(keys[i].section, section) == 0)
			names[n++] = keys[i].name;
	names[n] = NULL;
	const char *near = suggest_nearest(name, names);
	if (near)
		snprintf(buf, HINT_BUF, " (did you mean '%s'?)", near);
	return buf;
}

/* ---- defaults and lifetime ----------------------------------------------- */

static char *default_socket_path(void)
{
	const char *xdg;
	char *s = NULL;

	if (geteuid() == 0)
		return strdup("/run/acctd/io.acctd");
	xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg && xdg[0] == '/') {
		if (asprintf(&s, "%s/acctd/io.acctd", xdg) < 0)
			return NULL;
	} else if (asprintf(&s, "/run/user/%u/acctd/io.acctd", (unsigned)geteuid()) < 0)
		return NULL;
	return s;
}

int acct_config_default_history_path(char **ret)
{
	return acct_config_default_state_path("history.db", ret);
}

int acct_config_default_state_path(const char *name, char **ret)
{
	const char *dir = getenv("STATE_DIRECTORY"), *home;
	int r;

	if (dir && dir[0] == '/') /* "DIR[:DIR...]": the first is StateDirectory='s first */
		r = asprintf(ret, "%.*s/%s", (int)strcspn(dir, ":"), dir, name);
	else if (geteuid() == 0)
		r = asprintf(ret, "/var/lib/acctd/%s", name);
	else if ((dir = getenv("XDG_STATE_HOME")) && dir[0] == '/')
		r = asprintf(ret, "%s/acctd/%s", dir, name);
	else if ((home = getenv("HOME")) && home[0] == '/')
		r = asprintf(ret, "%s/.local/state/acctd/%s", home, name);
	else {
		*ret = NULL;
		return -ENOENT;
	}
	if (r < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

int acct_config_new_defaults(struct acct_config **ret)
{
	_cleanup_(acct_config_freep) struct acct_config *c = calloc(1, sizeof(*c));
	size_t n = 0;

	if (!c)
		return -ENOMEM;
	*c = (struct acct_config){
		.fast_interval_us = 1 * USEC_PER_SEC,
		.slow_interval_us = 10 * USEC_PER_SEC,
		.rescan_interval_us = 60 * USEC_PER_SEC,
		.workers = 2,
		.load_average = true,
		.collector = ACCT_COLLECTOR_AUTO,
		.bpf_interval_us = 100 * USEC_PER_MSEC,
		.max_depth = 32,
		.tombstone_retention_us = 5 * USEC_PER_MIN,
		.max_tombstones = 4096,
		.bytes_budget = (int64_t)SIZE_M,
		.cpu_budget_us = 10 * (int64_t)USEC_PER_MSEC,
		.tasks_budget = 8,
		.auto_tune = true,
		.max_message_size = 16 * SIZE_M,
		.max_connections = 4096,
		.max_connections_per_user = 1024,
		.idle_timeout_us = 5 * USEC_PER_MIN,
		.max_output_queue = 4 * SIZE_M,
		/* Budgets (docs/api.md, "Resource budgets", says how they were sized). */
		.max_input_bytes_per_user = 32 * SIZE_M,
		.max_input_bytes = 256 * SIZE_M,
		.max_output_bytes_per_user = 32 * SIZE_M,
		.max_output_bytes = 256 * SIZE_M,
		.max_watches_per_user = 256,
		.max_watches = 4096,
		.max_watch_cgroups = 16384,
		.max_watched_cgroups_per_user = 65536,
		.max_watched_cgroups = 262144,
		.max_queries_per_user = 4,
		.max_charge_batch = 100000,
		.max_charge_slots_per_connection = 64,
		.charge_sync_interval_us = 5 * USEC_PER_SEC,
		.metrics_max_depth = 32,
		.metrics_max_series = 50000,
		.history_enabled = true,
		.history_interval_us = 10 * USEC_PER_SEC,
		/* 3 h: at 10,000 cgroups 47 MB of points beside a day's
		 * 124 MB of minute rollups (docs/performance.md) */
		.history_raw_retention_us = 3 * USEC_PER_HOUR,
		.history_minute_retention_us = 7 * 24 * USEC_PER_HOUR,
		.history_hour_retention_us = 365 * 24 * USEC_PER_HOUR,
		.history_max_size = SIZE_G,
		.log_level = ACCT_LOG_INFO,
		.log_rate_limit_interval_us = 30 * USEC_PER_SEC,
		.log_rate_limit_burst = 30,
		.log_removals = ACCT_REMOVALS_AUTO,
	};
	c->exclude = strv_new_empty();
	c->metrics_exclude = strv_new_empty();
	c->sources = strv_new_empty();
	c->socket_path = default_socket_path();
	c->metrics_listen = strdup(ACCT_METRICS_DEFAULT_LISTEN);
	c->bpf_pin_dir = strdup(ACCT_BPF_PIN_DIR);
	/* NULL without a home to put it in: the daemon says so. */
	if (acct_config_default_history_path(&c->history_path) == -ENOMEM ||
	    acct_config_default_state_path("charges.state", &c->charge_state_path) == -ENOMEM)
		return -ENOMEM;
	size_t mi = 0, mf = 0;
	if (!c->exclude || !c->metrics_exclude || !c->sources || !c->socket_path || !c->metrics_listen || !c->bpf_pin_dir ||
	    strv_push_dup(&c->include, &n, "*") < 0 || strv_push_dup(&c->metrics_include, &mi, "*") < 0 ||
	    strv_push_dup(&c->metrics_families, &mf, "default") < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(c);
	return 0;
}

struct acct_config *acct_config_free(struct acct_config *c)
{
	if (!c)
		return NULL;
	free(c->cgroup_root);
	free(c->bpf_pin_dir);
	strv_free(c->include);
	strv_free(c->exclude);
	free(c->socket_path);
	free(c->admin_group);
	free(c->metrics_listen);
	free(c->history_path);
	free(c->charge_state_path);
	strv_free(c->metrics_include);
	strv_free(c->metrics_exclude);
	strv_free(c->metrics_families);
	strv_free(c->sources);
	for (size_t i = 0; i < c->nr_resources; i++)
		config_resource_done(&c->resources[i]);
	free(c->resources);
	free(c);
	return NULL;
}

/* ---- loading ------------------------------------------------------------- */

/* Where the intervals were last set, to blame the right line for a conflict. */
struct load_state {
	char *fast_origin, *slow_origin;
	unsigned long fast_seq, slow_seq, seq;
	char *origins[ELEMENTSOF(keys)]; /* "FILE:LINE" of each key's last assignment, NULL: default */
};

static void load_state_done(struct load_state *st)
{
	free(st->fast_origin);
	free(st->slow_origin);
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		free(st->origins[i]);
}

struct parser {
	struct acct_config *config;
	struct acct_config_diag *diag;
	struct load_state *state;
	const char *path;
	FILE *f;
	char *buf;
	size_t bufsz;
	unsigned line;
	int read_errno;
	int error;           /* first error of a key or the reader (negative errno) */
	unsigned error_line;
	char *error_msg;     /* the full "FILE:LINE: ..." message */
	char *long_value;    /* the value of a line too long for inih (parser_read()) */
};

/* What inih receives as the value of a line too long for its buffer; the
 * handler takes the real value from the reader (parser_read()). */
#define LONG_VALUE_MARK "\x01"

static void parser_fail(struct parser *p, int err, char *msg)
{
	p->error = msg ? err : -ENOMEM;
	p->error_line = p->line;
	p->error_msg = msg;
}

/* inih's reader: one physical line per call, counted; see the top of the file. */
static char *parser_read(char *str, int num, void *stream)
{
	struct parser *p = stream;
	size_t n, max = num > 3 ? (size_t)num - 3 : 0; /* inih wants room for \r\n\0 */
	ssize_t got;
	char *s;

	if (p->error)
		return NULL;
	errno = 0;
	got = getline(&p->buf, &p->bufsz, p->f);
	if (got < 0) {
		if (ferror(p->f))
			p->read_errno = errno ?: EIO;
		return NULL;
	}
	p->line++;
	s = p->buf;
	n = (size_t)got;
	if (p->line == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
		s += 3;
		n -= 3;
	}
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	while (n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	if (n > max) {
		/* inih as Debian builds it reads lines into a buffer of 200
		 * bytes: a longer assignment (a long list of globs) reaches it as
		 * "name=" and a mark, and parser_handle() takes the value from
		 * here. A long comment is a comment. */
		if (s[0] == '#' || s[0] == ';') {
			memcpy(str, "#", 2);
			return str;
		}
		size_t name_len = strcspn(s, "=:");
		while (name_len > 0 && (s[name_len - 1] == ' ' || s[name_len - 1] == '\t'))
			name_len--;
		if (s[0] == '[' || !s[strcspn(s, "=:")] || name_len == 0 || name_len + sizeof(LONG_VALUE_MARK) + 1 > max) {
			char *msg = NULL;
			if (asprintf(&msg, "%s:%u: line too long for a section header or key name (more than %zu characters)",
				     p->path, p->line, max) < 0)
				msg = NULL;
			parser_fail(p, -EINVAL, msg);
			return NULL;
		}
		char *v = s + strcspn(s, "=:") + 1;
		/* inih's rules for a value: an inline comment starts with ';'
		 * after white space; white space around the value goes */
		for (char *c = v; *c; c++)
			if (*c == ';' && c > v && (c[-1] == ' ' || c[-1] == '\t')) {
				*c = '\0';
				break;
			}
		v += strspn(v, " \t");
		size_t vlen = strlen(v);
		while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			v[--vlen] = '\0';
		free(p->long_value);
		p->long_value = strdup(v);
		if (!p->long_value) {
			parser_fail(p, -ENOMEM, NULL);
			return NULL;
		}
		memcpy(str, s, name_len);
		memcpy(str + name_len, "=" LONG_VALUE_MARK, sizeof(LONG_VALUE_MARK) + 1);
		return str;
	}
	memcpy(str, s, n + 1);

	/* inih does not pass section headers to the handler; report unknown
	 * sections here, where the line is known. A malformed header is left to
	 * inih, which reports it as a syntax error. */
	if (s[0] == '[') {
		char *close = strchr(s, ']');

		if (close) {
			*close = '\0';
			char hint[HINT_BUF];

			if (config_is_resource_section(s + 1)) {
				/* A resource is declared by its header, keys or none. */
				char where[PATH_MAX + 16], *msg = NULL;
				snprintf(where, sizeof(where), "%s:%u", p->path, p->line);
				int r = config_resource_declare(p->config, s + 1 + strlen(RESOURCE_PREFIX), where, &msg);
				if (r < 0) {
					parser_fail(p, r, msg);
					return NULL;
				}
			} else if (!section_known(s + 1) &&
			    config_diag_warn(p->diag, "%s:%u: unknown section [%s], ignoring%s", p->path, p->line, s + 1,
				      section_hint(s + 1, hint)) < 0) {
				parser_fail(p, -ENOMEM, NULL);
				return NULL;
			}
		}
	}
	return str;
}

static int parser_handle(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	_cleanup_free_ char *origin = NULL, *reason = NULL;
	const struct key_desc *k;
	char *msg = NULL;
	int r;

	if (p->error)
		return 0;
	_cleanup_free_ char *long_value = NULL;
	if (strcmp(value, LONG_VALUE_MARK) == 0 && p->long_value)
		value = long_value = TAKE_PTR(p->long_value);
	if (config_is_resource_section(section)) {
		if (asprintf(&origin, "%s:%u", p->path, p->line) < 0) {
			origin = NULL;
			parser_fail(p, -ENOMEM, NULL);
			return 0;
		}
		r = config_resource_assign(p->config, section + strlen(RESOURCE_PREFIX), name, value, origin, &msg);
		if (r < 0)
			parser_fail(p, r, msg);
		return r < 0 ? 0 : 1;
	}
	k = key_find(section, name);
	if (!k) {
		char hint[HINT_BUF];

		if (!*section)
			r = config_diag_warn(p->diag, "%s:%u: key '%s' outside of any section, ignoring%s", p->path,
				      p->line, name, key_hint(section, name, hint));
		else if (section_known(section))
			r = config_diag_warn(p->diag, "%s:%u: unknown key '%s' in section [%s], ignoring%s", p->path,
				      p->line, name, section, key_hint(section, name, hint));
		else
			r = 0; /* the section was reported already */
		if (r < 0) {
			parser_fail(p, r, NULL);
			return 0;
		}
		return 1;
	}

	if (asprintf(&origin, "%s:%u", p->path, p->line) < 0) {
		origin = NULL;
		parser_fail(p, -ENOMEM, NULL);
		return 0;
	}
	r = config_apply_value(p->config, k, value, &reason);
	if (r < 0) {
		if (!reason || asprintf(&msg, "%s: %s: %s", origin, k->name, reason) < 0)
			msg = NULL;
		parser_fail(p, r, msg);
		return 0;
	}

	char *o = strdup(origin);
	if (!o) {
		parser_fail(p, -ENOMEM, NULL);
		return 0;
	}
	free(p->state->origins[k - keys]);
	p->state->origins[k - keys] = o;
	if (k->offset == offsetof(struct acct_config, fast_interval_us)) {
		free(p->state->fast_origin);
		p->state->fast_origin = TAKE_PTR(origin);
		p->state->fast_seq = ++p->state->seq;
	} else if (k->offset == offsetof(struct acct_config, slow_interval_us)) {
		free(p->state->slow_origin);
		p->state->slow_origin = TAKE_PTR(origin);
		p->state->slow_seq = ++p->state->seq;
	}
	return 1;
}

static int sources_add(struct acct_config *c, const char *path)
{
	size_t n = strv_length(c->sources);

	return strv_push_dup(&c->sources, &n, path);
}

/* Read one file into `c`. A missing file is skipped unless `must_exist`. */
static int load_file(struct acct_config *c, const char *path, bool must_exist, struct load_state *st,
		     struct acct_config_diag *diag)
{
	_cleanup_fclose_ FILE *f = NULL;
	struct parser p = { .config = c, .diag = diag, .state = st, .path = path };
	struct stat sb;
	int r;

	/* Non-blocking: opening a FIFO waits for a writer, which would hang a
	 * reload on the event loop. Only a regular file is read (or /dev/null,
	 * the empty configuration); anything else is an error. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT && !must_exist)
			return 0;
		return config_diag_error(diag, r, "%s: %s", path, strerror(-r));
	}
	if (fstat(fd, &sb) < 0) {
		r = -errno;
		return config_diag_error(diag, r, "%s: %s", path, strerror(-r));
	}
	if (S_ISDIR(sb.st_mode))
		return config_diag_error(diag, -EISDIR, "%s: %s", path, strerror(EISDIR));
	if (!S_ISREG(sb.st_mode) && !(S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(1, 3)))
		return config_diag_error(diag, -EINVAL, "%s: not a regular file", path);
	if (fcntl(fd, F_SETFL, 0) < 0 || !(f = fdopen(fd, "r"))) {
		r = -errno;
		return config_diag_error(diag, r, "%s: %s", path, strerror(-r));
	}
	fd = -1; /* f owns it */

	p.f = f;
	r = ini_parse_stream(parser_read, &p, parser_handle, &p);
	free(p.buf);
	free(p.long_value);
	if (r == -2) {
		free(p.error_msg);
		return config_diag_error(diag, -ENOMEM, "%s: %s", path, strerror(ENOMEM));
	}
	/* inih goes on after a syntax error; the first error in the file wins. */
	if (r > 0 && (!p.error || (unsigned)r < p.error_line)) {
		free(p.error_msg);
		return config_diag_error(diag, -EINVAL, "%s:%d: syntax error", path, r);
	}
	if (p.error) {
		if (!p.error_msg)
			return config_diag_error(diag, p.error, "%s: %s", path, strerror(-p.error));
		if (diag) {
			free(diag->error);
			diag->error = p.error_msg;
		} else
			free(p.error_msg);
		return p.error;
	}
	if (p.read_errno)
		return config_diag_error(diag, -p.read_errno, "%s: %s", path, strerror(p.read_errno));

	r = sources_add(c, path);
	if (r < 0)
		return config_diag_error(diag, r, "%s: %s", path, strerror(-r));
	return 0;
}

static int load_dropins(struct acct_config *c, const char *dir, struct load_state *st,
			struct acct_config_diag *diag)
{
	_cleanup_(strv_freep) char **names = NULL;
	int r;

	r = config_list_dropins(dir, &names, diag);
	if (r < 0)
		return r;
	for (char **name = names; name && *name; name++) {
		_cleanup_free_ char *path = path_join(dir, *name);

		if (!path)
			return -ENOMEM;
		r = load_file(c, path, true, st, diag);
		if (r < 0)
			return r;
	}
	return 0;
}

/* fast_interval <= slow_interval, checked once everything is read so that the
 * order of the two keys does not matter; the later assignment is blamed. */
static int check_intervals(const struct acct_config *c, const struct load_state *st,
			   struct acct_config_diag *diag)
{
	char fast[VALUE_BUF], slow[VALUE_BUF];
	const char *blamed, *other;

	if (c->fast_interval_us <= c->slow_interval_us)
		return 0;
	config_format_duration(c->fast_interval_us, fast);
	config_format_duration(c->slow_interval_us, slow);
	if (st->fast_seq > st->slow_seq) {
		blamed = st->fast_origin;
		other = st->slow_origin;
		return config_diag_error(diag, -EINVAL, "%s: fast_interval (%s) must not exceed slow_interval (%s%s%s)",
				      blamed, fast, slow, other ? ", set at " : ", the default", other ?: "");
	}
	blamed = st->slow_origin ?: "configuration";
	other = st->fast_origin;
	return config_diag_error(diag, -EINVAL, "%s: slow_interval (%s) must not be less than fast_interval (%s%s%s)",
			      blamed, slow, fast, other ? ", set at " : ", the default", other ?: "");
}

/* The budgets against the host (budget-limits.h), once everything is read:
 * fast_interval takes part. The key refused is blamed where it was set. */
static int check_budgets(const struct acct_config *c, const struct acct_host_limits *host,
			 const struct load_state *st, struct acct_config_diag *diag)
{
	_cleanup_free_ char *reason = NULL;
	const char *key = NULL;
	int r = acct_budget_limits_check(c, host, &key, &reason);

	if (r == -ENOMEM)
		return config_diag_error(diag, r, "%s", strerror(-r));
	if (r < 0) {
		const struct key_desc *k = key_find("counters", key);
		const char *origin = k && st->origins[k - keys] ? st->origins[k - keys] : "configuration";
		return config_diag_error(diag, r, "%s: %s: %s", origin, key, reason);
	}
	return 0;
}

int acct_config_load(const char *main_file, const char *dropin_dir, struct acct_config **ret,
		     struct acct_config_diag *diag)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	_cleanup_(load_state_done) struct load_state st = {};
	int r;

	if (!ret)
		return -EINVAL;
	r = acct_config_new_defaults(&c);
	if (r < 0)
		return config_diag_error(diag, r, "%s", strerror(-r));

	/* "" means no main file, as for the drop-in directory */
	if (!main_file || *main_file) {
		r = load_file(c, main_file ?: ACCT_CONFIG_FILE, main_file != NULL, &st, diag);
		if (r < 0)
			return r;
	}
	if (!dropin_dir)
		dropin_dir = ACCT_CONFIG_DROPIN_DIR;
	if (*dropin_dir) {
		r = load_dropins(c, dropin_dir, &st, diag);
		if (r < 0)
			return r;
	}
	r = check_intervals(c, &st, diag);
	if (r < 0)
		return r;
	r = config_resources_resolve(c, diag);
	if (r < 0)
		return r;
	struct acct_host_limits host;
	acct_host_limits_get(&host);
	r = check_budgets(c, &host, &st, diag);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

int acct_config_set(struct acct_config *c, const char *section, const char *key, const char *value,
		    const char *origin, struct acct_config_diag *diag)
{
	_cleanup_free_ char *reason = NULL;
	uint64_t fast, slow;
	const struct key_desc *k;
	int r;

	if (!c || !section || !key || !value)
		return -EINVAL;
	if (!origin)
		origin = "override";
	k = key_find(section, key);
	if (!k) {
		char hint[HINT_BUF];

		return config_diag_error(diag, -EINVAL, "%s: unknown key '%s' in section [%s]%s", origin, key, section,
				      section_known(section) ? key_hint(section, key, hint) : section_hint(section, hint));
	}

	fast = c->fast_interval_us;
	slow = c->slow_interval_us;
	r = config_apply_value(c, k, value, &reason);
	if (r < 0) {
		if (!reason)
			return config_diag_error(diag, r, "%s: %s: %s", origin, k->name, strerror(-r));
		return config_diag_error(diag, r, "%s: %s: %s", origin, k->name, reason);
	}
	if (c->fast_interval_us > c->slow_interval_us) {
		char f[VALUE_BUF], s[VALUE_BUF];

		config_format_duration(c->fast_interval_us, f);
		config_format_duration(c->slow_interval_us, s);
		c->fast_interval_us = fast;
		c->slow_interval_us = slow;
		return config_diag_error(diag, -EINVAL, "%s: %s: fast_interval (%s) must not exceed slow_interval (%s)",
				      origin, k->name, f, s);
	}
	return 0;
}

/* ---- dump ---------------------------------------------------------------- */

void acct_config_dump(const struct acct_config *c, FILE *f)
{
	const char *section = NULL;

	fputs("# acctd configuration: the effective value of every key.\n"
	      "# Sources, in the order applied (later ones override earlier ones):\n"
	      "#   built-in defaults\n",
	      f);
	for (size_t i = 0; c->sources && c->sources[i]; i++) {
		fputs("#   ", f);
		/* A control character in a file name must not end the comment. */
		for (const char *p = c->sources[i]; *p; p++)
			fputc(iscntrl((unsigned char)*p) ? '?' : *p, f);
		fputc('\n', f);
	}

	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const struct key_desc *k = &keys[i];
		_cleanup_free_ char *v = config_value_string(c, k);

		if (!section || strcmp(section, k->section) != 0) {
			section = k->section;
			fprintf(f, "\n[%s]\n", section);
		}
		fprintf(f, "%s =%s%s\n", k->name, v && *v ? " " : "", v ? v : "");
	}
	config_resources_dump(c, f);
}

/* ---- differences (a reload's report) -------------------------------------- */

void acct_config_changes_free(struct acct_config_change *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].old_value);
		free(v[i].new_value);
	}
	free(v);
}

int acct_config_keep_at_start(struct acct_config *c, const struct acct_config *running)
{
	char *copies[ELEMENTSOF(keys)] = { 0 };

	/* The strings first, so that running out of memory changes nothing. */
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const char *v = keys[i].at_start && keys[i].store == S_NONE && keys[i].kind != V_COLLECTOR
					? *(char *const *)((const char *)running + keys[i].offset)
					: NULL;
		if (v && !(copies[i] = strdup(v))) {
			for (size_t k = 0; k < i; k++)
				free(copies[k]);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		if (!keys[i].at_start)
			continue;
		void *to = (char *)c + keys[i].offset;
		const void *from = (const char *)running + keys[i].offset;
		if (keys[i].kind == V_COLLECTOR)
			*(int *)to = *(const int *)from;
		else if (keys[i].store == S_UINT)
			*(unsigned *)to = *(const unsigned *)from;
		else if (keys[i].store == S_U64)
			*(uint64_t *)to = *(const uint64_t *)from;
		else if (keys[i].store == S_I64)
			*(int64_t *)to = *(const int64_t *)from;
		else { /* a path, socket or address: the copy made above */
			free(*(char **)to);
			*(char **)to = copies[i];
		}
	}
	return 0;
}

int acct_config_diff(const struct acct_config *old, const struct acct_config *new, struct acct_config_change **ret,
		     size_t *ret_n)
{
	struct acct_config_change *v = calloc(ELEMENTSOF(keys) + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		_cleanup_free_ char *a = config_value_string(old, &keys[i]), *b = config_value_string(new, &keys[i]);

		if (!a || !b) {
			acct_config_changes_free(v, n);
			return -ENOMEM;
		}
		if (strcmp(a, b) == 0)
			continue;
		v[n++] = (struct acct_config_change){
			.section = keys[i].section,
			.key = keys[i].name,
			.old_value = TAKE_PTR(a),
			.new_value = TAKE_PTR(b),
			.at_start = keys[i].at_start,
		};
	}
	/* The resources as one change: charges of a resource live as long as
	 * the daemon, so the declared set changes at the next start. */
	_cleanup_free_ char *a = config_resources_string(old), *b = config_resources_string(new);
	if (!a || !b) {
		acct_config_changes_free(v, n);
		return -ENOMEM;
	}
	if (strcmp(a, b) != 0)
		v[n++] = (struct acct_config_change){
			.section = "resource",
			.key = "resources",
			.old_value = TAKE_PTR(a),
			.new_value = TAKE_PTR(b),
			.at_start = true,
		};
	*ret = v;
	*ret_n = n;
	return 0;
}
