/* config.c - acctd's configuration: built-in defaults, the INI files (read with
 * inih), the validation of every key, command-line overrides and the dump.
 * It is long because of the keys[] table, not because of code: the table
 * carries, for each of its 51 keys, its documentation-facing description,
 * range and dump format, and the loader, validator and dump are each written
 * once over it.
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

/* Longest string any format_*() below writes, NUL included. */
#define VALUE_BUF 32

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free)

/* ---- value parsers (the rest are in basic/parse.h) ------------------------ */

static const char *const log_level_names[] = {
	[ACCT_LOG_ERR] = "err",
	[ACCT_LOG_WARNING] = "warning",
	[ACCT_LOG_NOTICE] = "notice",
	[ACCT_LOG_INFO] = "info",
	[ACCT_LOG_DEBUG] = "debug",
};

int acct_parse_log_level(const char *s, enum acct_log_level *ret)
{
	if (!s)
		return -EINVAL;
	for (int l = ACCT_LOG_ERR; l <= ACCT_LOG_DEBUG; l++)
		if (strcasecmp(s, log_level_names[l]) == 0) {
			*ret = (enum acct_log_level)l;
			return 0;
		}
	return -EINVAL;
}

const char *acct_log_level_to_string(enum acct_log_level l)
{
	if ((int)l < ACCT_LOG_ERR || (int)l > ACCT_LOG_DEBUG)
		return NULL;
	return log_level_names[l];
}

/* ---- formatting (the dump and messages) ---------------------------------- */

/* The largest unit that represents `us` exactly, so that parsing gives it back. */
static const char *format_duration(uint64_t us, char buf[static VALUE_BUF])
{
	static const struct {
		uint64_t factor;
		const char *unit;
	} units[] = {
		{ 24 * USEC_PER_HOUR, "d" }, { USEC_PER_HOUR, "h" }, { USEC_PER_MIN, "min" }, { USEC_PER_SEC, "s" },
		{ USEC_PER_MSEC, "ms" }, { 1, "us" },
	};

	if (us == 0)
		return strcpy(buf, "0");
	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (us % units[i].factor == 0) {
			snprintf(buf, VALUE_BUF, "%" PRIu64 "%s", us / units[i].factor, units[i].unit);
			break;
		}
	return buf;
}

static const char *format_size(uint64_t bytes, char buf[static VALUE_BUF])
{
	static const struct {
		uint64_t factor;
		const char *unit;
	} units[] = { { SIZE_T, "T" }, { SIZE_G, "G" }, { SIZE_M, "M" }, { SIZE_K, "K" } };

	snprintf(buf, VALUE_BUF, "%" PRIu64, bytes);
	if (bytes == 0)
		return buf;
	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (bytes % units[i].factor == 0) {
			snprintf(buf, VALUE_BUF, "%" PRIu64 "%s", bytes / units[i].factor, units[i].unit);
			break;
		}
	return buf;
}

/* ---- the keys ------------------------------------------------------------ */

enum value_kind {
	V_DURATION,  /* acct_parse_duration_us() */
	V_SIZE,      /* acct_parse_size() */
	V_INTEGER,   /* plain decimal */
	V_BOOL,
	V_LOG_LEVEL,
	V_ROOT,      /* absolute path; empty: NULL (discover) */
	V_SOCKET,    /* absolute path that fits sockaddr_un */
	V_GROUP,     /* group name; empty: NULL */
	V_INCLUDE,   /* blank-separated globs; empty: "*" */
	V_EXCLUDE,   /* blank-separated globs; may be empty */
	V_LISTEN,    /* HOST:PORT, [IPV6]:PORT or none */
	V_FAMILIES,  /* metrics family words, comma or blank separated (acct_metrics_families_apply()) */
	V_COLLECTOR, /* auto, bpf or files (enum acct_collector_mode) */
	V_REMOVALS,  /* auto, each or summary (enum acct_removal_log) */
	V_UNIT,      /* bytes, count or seconds (enum acct_resource_unit) */
	V_ON_REMOVAL, /* release or reparent (enum acct_resource_removal) */
	V_BUDGET,    /* a quantity in a resource's unit, kept as text until the unit is known */
};

/* How a numeric value is stored; it also caps the range. */
enum store {
	S_NONE,
	S_U64,
	S_I64,
	S_UINT,
};

struct key_desc {
	const char *section;
	const char *name;
	enum value_kind kind;
	enum store store;
	size_t offset;
	uint64_t min, max; /* numeric kinds, in the stored unit */
	bool at_start;     /* a reload does not apply it: the next start does (acct_config_diff()) */
};

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

#define RESOURCE_PREFIX "resource."

static bool is_resource_section(const char *section)
{
	return strncmp(section, RESOURCE_PREFIX, strlen(RESOURCE_PREFIX)) == 0;
}

static const struct key_desc *key_find(const char *section, const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static bool section_known(const char *section)
{
	if (is_resource_section(section))
		return true; /* the NAME is checked where the header is read */
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (strcmp(keys[i].section, section) == 0)
			return true;
	return false;
}

/* The keys of a [resource.NAME] section (docs/charges.md), in the order they
 * are documented and dumped; fields of struct acct_resource_config. The
 * section is "resource" here and "resource.NAME" in a file. */
#define RKEY(nm, k, field)                                                                   \
	{                                                                                    \
		.section = "resource", .name = nm, .kind = k, .store = S_NONE,               \
		.offset = offsetof(struct acct_resource_config, field),                      \
	}
static const struct key_desc resource_keys[] = {
	RKEY("unit", V_UNIT, unit),
	RKEY("budget", V_BUDGET, budget_text),
	RKEY("on_removal", V_ON_REMOVAL, on_removal),
	RKEY("release_on_exit", V_BOOL, release_on_exit),
	RKEY("averages", V_BOOL, averages),
	RKEY("ram", V_BOOL, ram),
};

static const char *const resource_unit_names[_ACCT_RESOURCE_UNIT_MAX] = {
	[ACCT_RESOURCE_COUNT] = "count",
	[ACCT_RESOURCE_BYTES] = "bytes",
	[ACCT_RESOURCE_SECONDS] = "seconds",
};

static const char *const resource_removal_names[_ACCT_REMOVAL_MAX] = {
	[ACCT_REMOVAL_RELEASE] = "release",
	[ACCT_REMOVAL_REPARENT] = "reparent",
};

const char *acct_resource_unit_to_string(enum acct_resource_unit u)
{
	return (unsigned)u < _ACCT_RESOURCE_UNIT_MAX ? resource_unit_names[u] : NULL;
}

const char *acct_resource_removal_to_string(enum acct_resource_removal r)
{
	return (unsigned)r < _ACCT_REMOVAL_MAX ? resource_removal_names[r] : NULL;
}

static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -EINVAL;
}

bool acct_resource_name_valid(const char *name)
{
	size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_");

	return n > 0 && n <= ACCT_RESOURCE_NAME_MAX && name[n] == '\0';
}

static const struct key_desc *resource_key_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(resource_keys); i++)
		if (strcmp(resource_keys[i].name, name) == 0)
			return &resource_keys[i];
	return NULL;
}

const struct acct_resource_config *acct_config_resource(const struct acct_config *c, const char *name)
{
	for (size_t i = 0; c && i < c->nr_resources; i++)
		if (strcmp(c->resources[i].name, name) == 0)
			return &c->resources[i];
	return NULL;
}

/* The resource `name`, added with its defaults when it is new. Returns 0,
 * -E2BIG beyond ACCT_RESOURCES_MAX or -ENOMEM. */
static int resource_get(struct acct_config *c, const char *name, struct acct_resource_config **ret)
{
	struct acct_resource_config *v;

	for (size_t i = 0; i < c->nr_resources; i++)
		if (strcmp(c->resources[i].name, name) == 0) {
			*ret = &c->resources[i];
			return 0;
		}
	if (c->nr_resources >= ACCT_RESOURCES_MAX)
		return -E2BIG;
	v = reallocarray(c->resources, c->nr_resources + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->resources = v;
	v[c->nr_resources] = (struct acct_resource_config){ .name = strdup(name) };
	if (!v[c->nr_resources].name)
		return -ENOMEM;
	*ret = &v[c->nr_resources++];
	return 0;
}

static void resource_config_done(struct acct_resource_config *r)
{
	free(r->name);
	free(r->budget_text);
	free(r->budget_origin);
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

/* A key's field in its structure: struct acct_config, or struct
 * acct_resource_config for resource_keys[]. */
static void *field(void *c, const struct key_desc *k)
{
	return (char *)c + k->offset;
}

static const void *field_const(const void *c, const struct key_desc *k)
{
	return (const char *)c + k->offset;
}

static uint64_t store_max(enum store s)
{
	switch (s) {
	case S_I64:
		return INT64_MAX;
	case S_UINT:
		return UINT_MAX;
	default:
		return UINT64_MAX;
	}
}

static uint64_t get_number(const void *c, const struct key_desc *k)
{
	const void *p = field_const(c, k);

	switch (k->store) {
	case S_I64:
		return (uint64_t) * (const int64_t *)p;
	case S_UINT:
		return *(const unsigned *)p;
	default:
		return *(const uint64_t *)p;
	}
}

static void set_number(void *c, const struct key_desc *k, uint64_t v)
{
	void *p = field(c, k);

	switch (k->store) {
	case S_I64:
		*(int64_t *)p = (int64_t)v;
		break;
	case S_UINT:
		*(unsigned *)p = (unsigned)v;
		break;
	default:
		*(uint64_t *)p = v;
		break;
	}
}

static const char *format_number(const struct key_desc *k, uint64_t v, char buf[static VALUE_BUF])
{
	switch (k->kind) {
	case V_DURATION:
		return format_duration(v, buf);
	case V_SIZE:
		return format_size(v, buf);
	default:
		snprintf(buf, VALUE_BUF, "%" PRIu64, v);
		return buf;
	}
}


/* ---- validation ---------------------------------------------------------- */

static const char *kind_noun(enum value_kind kind)
{
	switch (kind) {
	case V_DURATION:
		return "a duration";
	case V_SIZE:
		return "a size";
	case V_INTEGER:
		return "an integer";
	case V_BOOL:
		return "a boolean";
	case V_LOG_LEVEL:
		return "a log level";
	case V_COLLECTOR:
		return "a collector";
	case V_REMOVALS:
		return "auto, each or summary";
	case V_UNIT:
		return "bytes, count or seconds";
	case V_ON_REMOVAL:
		return "release or reparent";
	case V_BUDGET:
		return "a budget";
	case V_ROOT:
	case V_SOCKET:
		return "an absolute path";
	case V_GROUP:
		return "a group name";
	case V_INCLUDE:
	case V_EXCLUDE:
		return "globs";
	case V_FAMILIES:
		return "metrics families";
	case V_LISTEN:
		return "HOST:PORT, [IPV6]:PORT or none";
	}
	return "a value";
}

/* Why `value` (which parsed, or overflowed, or was negative) is out of range. */
static char *range_reason(const struct key_desc *k, const char *value, uint64_t v, bool parsed)
{
	uint64_t smax = store_max(k->store);
	char lo[VALUE_BUF], hi[VALUE_BUF];
	char *s = NULL;
	int r;

	if (k->max < smax)
		r = asprintf(&s, "%s is out of range (%s..%s)", value, format_number(k, k->min, lo),
			     format_number(k, k->max, hi));
	else if (value[0] == '-')
		r = asprintf(&s, "%s is out of range (must %s)", value,
			     k->min > 0 ? "be greater than 0" : "not be negative");
	else if (parsed && v < k->min && k->min > 1)
		/* 999us where the least is 1ms: say the least */
		r = asprintf(&s, "%s is out of range (must be at least %s)", value, format_number(k, k->min, lo));
	else if (parsed && v < k->min && k->kind == V_DURATION && strpbrk(value, "123456789"))
		/* 0.5us: a value that is not 0 as written, but as stored. */
		r = asprintf(&s, "%s is out of range (must be greater than 0; durations count whole microseconds, and it "
				 "rounds to 0)",
			     value);
	else if (parsed && v < k->min)
		r = asprintf(&s, "%s is out of range (must be greater than 0)", value);
	else if (smax >= INT64_MAX) /* 2^63 - 1 says nothing that "too large" does not */
		r = asprintf(&s, "%s is out of range (too large)", value);
	else
		r = asprintf(&s, "%s is out of range (at most %s)", value, format_number(k, smax, hi));
	return r < 0 ? NULL : s;
}

static char *syntax_reason(const struct key_desc *k, const char *value)
{
	char *s = NULL;
	int r;

	switch (k->kind) {
	case V_DURATION:
		r = asprintf(&s, "invalid duration '%s' (expected " ACCT_DURATION_SYNTAX ")", value);
		break;
	case V_SIZE:
		r = asprintf(&s, "invalid size '%s' (%s)", value, acct_size_refusal(value));
		break;
	case V_INTEGER:
		r = asprintf(&s, "invalid number '%s' (expected an integer)", value);
		break;
	case V_BOOL:
		r = asprintf(&s, "invalid boolean '%s' (expected yes, no, true, false, on, off, 1 or 0)", value);
		break;
	case V_LOG_LEVEL:
		r = asprintf(&s, "invalid log level '%s' (expected err, warning, notice, info or debug)", value);
		break;
	case V_COLLECTOR:
		r = asprintf(&s, "invalid collector '%s' (expected auto, bpf or files)", value);
		break;
	case V_REMOVALS:
		r = asprintf(&s, "invalid value '%s' (expected auto, each or summary)", value);
		break;
	case V_UNIT:
		r = asprintf(&s, "invalid unit '%s' (expected bytes, count or seconds)", value);
		break;
	case V_ON_REMOVAL:
		r = asprintf(&s, "invalid value '%s' (expected release or reparent)", value);
		break;
	default:
		r = asprintf(&s, "invalid value '%s'", value);
		break;
	}
	return r < 0 ? NULL : s;
}

/* HOSTPORT_OK when `v` is a valid metrics address ("none" included), else the
 * part that is wrong. */
static enum hostport_error check_listen(const char *v)
{
	enum hostport_error e = HOSTPORT_OK;

	if (strcmp(v, "none") == 0)
		return HOSTPORT_OK;
	(void)hostport_parse(v, NULL, NULL, &e);
	return e;
}

static bool valid_group(const char *g)
{
	if (g[0] == '-' || strlen(g) > 256)
		return false;
	for (const char *p = g; *p; p++)
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p) || *p == ':' || *p == '/' ||
		    *p == ',')
			return false;
	return true;
}

/* Parse `value` for key `k` and store it in `c`. On failure `c` is unchanged
 * and *ret_reason says why (NULL on ENOMEM). */
static int apply_value(void *c, const struct key_desc *k, const char *value,
		       char **ret_reason)
{
	_cleanup_free_ char *v = NULL;
	char *reason = NULL;
	size_t len;
	int r;

	*ret_reason = NULL;

	/* Trim as inih does, so that a value set here dumps and reloads the same. */
	value += strspn(value, " \t");
	len = strlen(value);
	while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
		len--;
	v = strndup(value, len);
	if (!v)
		return -ENOMEM;

	for (const char *p = v; *p; p++) {
		if (iscntrl((unsigned char)*p) && *p != '\t') {
			*ret_reason = strdup("control character in value");
			return *ret_reason ? -EINVAL : -ENOMEM;
		}
		if (*p == ';' && p > v && (p[-1] == ' ' || p[-1] == '\t')) {
			*ret_reason = strdup("' ;' in a value would start a comment");
			return *ret_reason ? -EINVAL : -ENOMEM;
		}
		/* "key =;x" reads as ";x", but the dump writes "key = ;x". */
		if (*p == ';' && p == v) {
			*ret_reason = strdup("a value starting with ';' would be a comment");
			return *ret_reason ? -EINVAL : -ENOMEM;
		}
	}

	if (!*v && k->kind != V_ROOT && k->kind != V_GROUP && k->kind != V_INCLUDE &&
	    k->kind != V_EXCLUDE) {
		r = asprintf(&reason, "empty value (expected %s)", kind_noun(k->kind));
		*ret_reason = r < 0 ? NULL : reason;
		return r < 0 ? -ENOMEM : -EINVAL;
	}

	switch (k->kind) {
	case V_DURATION:
	case V_SIZE:
	case V_INTEGER: {
		uint64_t n = 0;

		if (k->kind == V_DURATION)
			r = acct_parse_duration_us(v, &n);
		else if (k->kind == V_SIZE)
			r = acct_parse_size(v, &n);
		else
			r = acct_parse_uint64(v, &n);
		if (r == -EINVAL)
			reason = syntax_reason(k, v);
		else if (r < 0 || n < k->min || n > k->max || n > store_max(k->store)) {
			reason = range_reason(k, v, n, r == 0);
			r = -ERANGE;
		}
		if (r < 0) {
			*ret_reason = reason;
			return reason ? r : -ENOMEM;
		}
		set_number(c, k, n);
		return 0;
	}
	case V_BOOL: {
		bool b;

		if (acct_parse_bool(v, &b) < 0) {
			*ret_reason = syntax_reason(k, v);
			return *ret_reason ? -EINVAL : -ENOMEM;
		}
		*(bool *)field(c, k) = b;
		return 0;
	}
	case V_LOG_LEVEL: {
		enum acct_log_level l;

		if (acct_parse_log_level(v, &l) < 0) {
			*ret_reason = syntax_reason(k, v);
			return *ret_reason ? -EINVAL : -ENOMEM;
		}
		*(enum acct_log_level *)field(c, k) = l;
		return 0;
	}
	case V_COLLECTOR: {
		int m = acct_collector_mode_from_string(v);

		if (m < 0) {
			*ret_reason = syntax_reason(k, v);
			return *ret_reason ? -EINVAL : -ENOMEM;
		}
		*(int *)field(c, k) = m;
		return 0;
	}
	case V_REMOVALS: {
		int m = acct_removal_log_from_string(v);

		if (m < 0) {
			*ret_reason = syntax_reason(k, v);
			return *ret_reason ? -EINVAL : -ENOMEM;
		}
		*(enum acct_removal_log *)field(c, k) = (enum acct_removal_log)m;
		return 0;
	}
	case V_UNIT:
	case V_ON_REMOVAL: {
		int m = k->kind == V_UNIT ? name_index(resource_unit_names, ELEMENTSOF(resource_unit_names), v)
					  : name_index(resource_removal_names, ELEMENTSOF(resource_removal_names), v);

		if (m < 0) {
			*ret_reason = syntax_reason(k, v);
			return *ret_reason ? -EINVAL : -ENOMEM;
		}
		if (k->kind == V_UNIT)
			*(enum acct_resource_unit *)field(c, k) = (enum acct_resource_unit)m;
		else
			*(enum acct_resource_removal *)field(c, k) = (enum acct_resource_removal)m;
		return 0;
	}
	case V_BUDGET: {
		/* Parsed once the section's unit is known (resolve_resources()). */
		char **p = field(c, k);

		free(*p);
		*p = TAKE_PTR(v);
		return 0;
	}
	case V_ROOT:
	case V_SOCKET:
	case V_GROUP: {
		char **p = field(c, k);

		if (k->kind == V_GROUP && *v && !valid_group(v))
			r = asprintf(&reason, "invalid group name '%s'", v);
		else if (k->kind != V_GROUP && *v && v[0] != '/')
			r = asprintf(&reason, "'%s' is not an absolute path", v);
		else if (k->kind == V_SOCKET && strlen(v) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
			r = asprintf(&reason, "'%s' is too long for a Unix socket (at most %zu bytes)", v,
				     sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
		else {
			free(*p);
			*p = *v ? TAKE_PTR(v) : NULL;
			return 0;
		}
		*ret_reason = r < 0 ? NULL : reason;
		return r < 0 ? -ENOMEM : -EINVAL;
	}
	case V_INCLUDE:
	case V_EXCLUDE: {
		_cleanup_(strv_freep) char **globs = NULL;
		char ***p = field(c, k);

		r = strv_split(v, &globs);
		if (r < 0)
			return r;
		/* The syntax a scrape's cgroup= takes too (cgroup-glob.h): a
		 * glob relative to the root gets its leading "/". */
		for (size_t i = 0; globs[i]; i++) {
			const char *why = NULL;
			char *norm = NULL;
			r = cgroup_glob_normalize(globs[i], &norm, &why);
			if (r == -EINVAL) {
				r = asprintf(&reason, "invalid glob '%s' (%s)", globs[i], why);
				*ret_reason = r < 0 ? NULL : reason;
				return r < 0 ? -ENOMEM : -EINVAL;
			}
			if (r < 0)
				return r;
			free(globs[i]);
			globs[i] = norm;
		}
		if (k->kind == V_INCLUDE && !globs[0]) {
			size_t n = 0;

			r = strv_push_dup(&globs, &n, "*");
			if (r < 0)
				return r;
		}
		strv_free(*p);
		*p = TAKE_PTR(globs);
		return 0;
	}
	case V_FAMILIES: {
		_cleanup_(strv_freep) char **words = NULL;
		char ***p = field(c, k);
		const char *bad = NULL;
		uint32_t set = 0;

		/* Commas or blanks between words, as the family= parameter of
		 * a scrape takes them: one syntax for both. */
		r = strv_split_set(v, ", \t", &words);
		if (r < 0)
			return r;
		if (!words[0] || acct_metrics_families_apply(&set, words, &bad) < 0) {
			r = asprintf(&reason,
				     "unknown family '%s' (expected default, all, none or a group, optionally with + or -)",
				     bad ? bad : v);
			*ret_reason = r < 0 ? NULL : reason;
			return r < 0 ? -ENOMEM : -EINVAL;
		}
		strv_free(*p);
		*p = TAKE_PTR(words);
		return 0;
	}
	case V_LISTEN: {
		enum hostport_error why = check_listen(v);
		char **p = field(c, k);

		if (why == HOSTPORT_OK) {
			free(*p);
			*p = TAKE_PTR(v);
			return 0;
		}
		if (why == HOSTPORT_BAD_PORT)
			r = asprintf(&reason, "invalid port in '%s' (expected 1..65535)", v);
		else if (why == HOSTPORT_BAD_HOST)
			r = asprintf(&reason, "invalid host name in '%s'", v);
		else if (why == HOSTPORT_BAD_ADDRESS)
			r = asprintf(&reason, "invalid IPv6 address in '%s'", v);
		else
			r = asprintf(&reason, "invalid address '%s' (expected HOST:PORT, [IPV6]:PORT or none)", v);
		*ret_reason = r < 0 ? NULL : reason;
		return r < 0 ? -ENOMEM : -EINVAL;
	}
	}
	return -EINVAL;
}

/* ---- diagnostics --------------------------------------------------------- */

static int diag_set_error(struct acct_config_diag *diag, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int diag_set_error(struct acct_config_diag *diag, int err, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int r;

	if (!diag)
		return err;
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	free(diag->error);
	diag->error = s;
	return err;
}

static int diag_warn(struct acct_config_diag *diag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int diag_warn(struct acct_config_diag *diag, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int r;

	if (!diag)
		return 0;
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	r = strv_push(&diag->warnings, &diag->nr_warnings, s);
	if (r < 0)
		free(s);
	return r;
}

void acct_config_diag_clear(struct acct_config_diag *diag)
{
	if (!diag)
		return;
	free(diag->error);
	diag->error = NULL;
	diag->warnings = strv_free(diag->warnings);
	diag->nr_warnings = 0;
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
	const char *dir = getenv("STATE_DIRECTORY"), *home;
	int r;

	if (dir && dir[0] == '/') /* "DIR[:DIR...]": the first is StateDirectory='s first */
		r = asprintf(ret, "%.*s/history.db", (int)strcspn(dir, ":"), dir);
	else if (geteuid() == 0)
		r = asprintf(ret, "/var/lib/acctd/history.db");
	else if ((dir = getenv("XDG_STATE_HOME")) && dir[0] == '/')
		r = asprintf(ret, "%s/acctd/history.db", dir);
	else if ((home = getenv("HOME")) && home[0] == '/')
		r = asprintf(ret, "%s/.local/state/acctd/history.db", home);
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
	if (acct_config_default_history_path(&c->history_path) == -ENOMEM)
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
	strv_free(c->metrics_include);
	strv_free(c->metrics_exclude);
	strv_free(c->metrics_families);
	strv_free(c->sources);
	for (size_t i = 0; i < c->nr_resources; i++)
		resource_config_done(&c->resources[i]);
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

			if (is_resource_section(s + 1)) {
				/* A resource is declared by its header, keys or none. */
				const char *name = s + 1 + strlen(RESOURCE_PREFIX);
				struct acct_resource_config *res;
				char *msg = NULL;
				int r;

				if (!acct_resource_name_valid(name)) {
					if (asprintf(&msg, "%s:%u: invalid resource name '%s' (expected 1 to %d of a-z, 0-9 and _)",
						     p->path, p->line, name, ACCT_RESOURCE_NAME_MAX) < 0)
						msg = NULL;
					parser_fail(p, -EINVAL, msg);
					return NULL;
				}
				r = resource_get(p->config, name, &res);
				if (r == -E2BIG) {
					if (asprintf(&msg, "%s:%u: too many resources (at most %d)", p->path, p->line,
						     ACCT_RESOURCES_MAX) < 0)
						msg = NULL;
					parser_fail(p, -E2BIG, msg);
					return NULL;
				}
				if (r < 0) {
					parser_fail(p, r, NULL);
					return NULL;
				}
			} else if (!section_known(s + 1) &&
			    diag_warn(p->diag, "%s:%u: unknown section [%s], ignoring%s", p->path, p->line, s + 1,
				      section_hint(s + 1, hint)) < 0) {
				parser_fail(p, -ENOMEM, NULL);
				return NULL;
			}
		}
	}
	return str;
}

/* A key of [resource.NAME] (declared by its header: parser_read()). */
static int parser_handle_resource(struct parser *p, const char *resource, const char *name, const char *value)
{
	_cleanup_free_ char *origin = NULL, *reason = NULL;
	struct acct_resource_config *res;
	const struct key_desc *k;
	char *msg = NULL;
	int r;

	r = resource_get(p->config, resource, &res);
	if (r < 0) {
		parser_fail(p, r, NULL);
		return 0;
	}
	if (asprintf(&origin, "%s:%u", p->path, p->line) < 0) {
		origin = NULL;
		parser_fail(p, -ENOMEM, NULL);
		return 0;
	}
	k = resource_key_find(name);
	if (!k) {
		/* Strict, unlike the other sections: a misspelt key of a
		 * resource would silently change what programs' charges mean. */
		const char *names[ELEMENTSOF(resource_keys) + 1];
		for (size_t i = 0; i < ELEMENTSOF(resource_keys); i++)
			names[i] = resource_keys[i].name;
		names[ELEMENTSOF(resource_keys)] = NULL;
		const char *near = suggest_nearest(name, names);
		if (asprintf(&msg, "%s: unknown key '%s' in section [%s%s]%s%s%s", origin, name, RESOURCE_PREFIX, resource,
			     near ? " (did you mean '" : "", near ?: "", near ? "'?)" : "") < 0)
			msg = NULL;
		parser_fail(p, -EINVAL, msg);
		return 0;
	}
	r = apply_value(res, k, value, &reason);
	if (r < 0) {
		if (!reason || asprintf(&msg, "%s: %s: %s", origin, k->name, reason) < 0)
			msg = NULL;
		parser_fail(p, r, msg);
		return 0;
	}
	if (k->kind == V_BUDGET) {
		free(res->budget_origin);
		res->budget_origin = TAKE_PTR(origin);
	}
	return 1;
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
	if (is_resource_section(section))
		return parser_handle_resource(p, section + strlen(RESOURCE_PREFIX), name, value);
	k = key_find(section, name);
	if (!k) {
		char hint[HINT_BUF];

		if (!*section)
			r = diag_warn(p->diag, "%s:%u: key '%s' outside of any section, ignoring%s", p->path,
				      p->line, name, key_hint(section, name, hint));
		else if (section_known(section))
			r = diag_warn(p->diag, "%s:%u: unknown key '%s' in section [%s], ignoring%s", p->path,
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
	r = apply_value(p->config, k, value, &reason);
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
		return diag_set_error(diag, r, "%s: %s", path, strerror(-r));
	}
	if (fstat(fd, &sb) < 0) {
		r = -errno;
		return diag_set_error(diag, r, "%s: %s", path, strerror(-r));
	}
	if (S_ISDIR(sb.st_mode))
		return diag_set_error(diag, -EISDIR, "%s: %s", path, strerror(EISDIR));
	if (!S_ISREG(sb.st_mode) && !(S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(1, 3)))
		return diag_set_error(diag, -EINVAL, "%s: not a regular file", path);
	if (fcntl(fd, F_SETFL, 0) < 0 || !(f = fdopen(fd, "r"))) {
		r = -errno;
		return diag_set_error(diag, r, "%s: %s", path, strerror(-r));
	}
	fd = -1; /* f owns it */

	p.f = f;
	r = ini_parse_stream(parser_read, &p, parser_handle, &p);
	free(p.buf);
	free(p.long_value);
	if (r == -2) {
		free(p.error_msg);
		return diag_set_error(diag, -ENOMEM, "%s: %s", path, strerror(ENOMEM));
	}
	/* inih goes on after a syntax error; the first error in the file wins. */
	if (r > 0 && (!p.error || (unsigned)r < p.error_line)) {
		free(p.error_msg);
		return diag_set_error(diag, -EINVAL, "%s:%d: syntax error", path, r);
	}
	if (p.error) {
		if (!p.error_msg)
			return diag_set_error(diag, p.error, "%s: %s", path, strerror(-p.error));
		if (diag) {
			free(diag->error);
			diag->error = p.error_msg;
		} else
			free(p.error_msg);
		return p.error;
	}
	if (p.read_errno)
		return diag_set_error(diag, -p.read_errno, "%s: %s", path, strerror(p.read_errno));

	r = sources_add(c, path);
	if (r < 0)
		return diag_set_error(diag, r, "%s: %s", path, strerror(-r));
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_dropin_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".conf") == 0;
}

/* The regular files *.conf of `dir`, sorted by strcmp(); a missing `dir` has none. */
static int list_dropins(const char *dir, char ***ret, struct acct_config_diag *diag)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_(strv_freep) char **names = strv_new_empty();
	size_t n = 0;
	int r;

	if (!names)
		return -ENOMEM;
	d = opendir(dir);
	if (!d) {
		r = -errno;
		if (r == -ENOENT) {
			*ret = TAKE_PTR(names);
			return 0;
		}
		return diag_set_error(diag, r, "%s: %s", dir, strerror(-r));
	}
	for (;;) {
		struct dirent *de;
		struct stat sb;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				return diag_set_error(diag, -errno, "%s: %s", dir, strerror(errno));
			break;
		}
		if (!is_dropin_name(de->d_name))
			continue;
		/* Follow symlinks: one to /dev/null masks a drop-in, as in systemd. */
		if (fstatat(dirfd(d), de->d_name, &sb, 0) < 0) {
			r = -errno;
			if (r == -ENOENT)
				continue; /* dangling symlink, or removed meanwhile */
			/* A symlink that loops reads as nothing, like a dangling one;
			 * it is worth a warning, not the whole configuration. */
			if (r == -ELOOP) {
				r = diag_warn(diag, "%s/%s: %s, ignoring", dir, de->d_name, strerror(ELOOP));
				if (r < 0)
					return r;
				continue;
			}
			return diag_set_error(diag, r, "%s/%s: %s", dir, de->d_name, strerror(-r));
		}
		if (!S_ISREG(sb.st_mode))
			continue;
		r = strv_push_dup(&names, &n, de->d_name);
		if (r < 0)
			return r;
	}
	qsort(names, n, sizeof(char *), cmp_names);
	*ret = TAKE_PTR(names);
	return 0;
}

static int load_dropins(struct acct_config *c, const char *dir, struct load_state *st,
			struct acct_config_diag *diag)
{
	_cleanup_(strv_freep) char **names = NULL;
	int r;

	r = list_dropins(dir, &names, diag);
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
	format_duration(c->fast_interval_us, fast);
	format_duration(c->slow_interval_us, slow);
	if (st->fast_seq > st->slow_seq) {
		blamed = st->fast_origin;
		other = st->slow_origin;
		return diag_set_error(diag, -EINVAL, "%s: fast_interval (%s) must not exceed slow_interval (%s%s%s)",
				      blamed, fast, slow, other ? ", set at " : ", the default", other ?: "");
	}
	blamed = st->slow_origin ?: "configuration";
	other = st->fast_origin;
	return diag_set_error(diag, -EINVAL, "%s: slow_interval (%s) must not be less than fast_interval (%s%s%s)",
			      blamed, slow, fast, other ? ", set at " : ", the default", other ?: "");
}

/* Parse each resource's budget in its unit, once every file is read (a
 * section may give budget before unit, and a drop-in may change either), and
 * check what depends on the unit. */
static int resolve_resources(struct acct_config *c, struct acct_config_diag *diag)
{
	for (size_t i = 0; i < c->nr_resources; i++) {
		struct acct_resource_config *res = &c->resources[i];
		const char *origin = res->budget_origin ?: "configuration";
		uint64_t n = 0;
		int r;

		if (res->ram && res->unit != ACCT_RESOURCE_BYTES)
			return diag_set_error(diag, -EINVAL, "configuration: [resource.%s] ram: a RAM resource counts bytes (unit = bytes)",
					      res->name);
		if (!res->budget_text) {
			res->budget = res->unit == ACCT_RESOURCE_BYTES	 ? c->bytes_budget
				      : res->unit == ACCT_RESOURCE_SECONDS ? c->cpu_budget_us
									   : c->tasks_budget;
			continue;
		}
		switch (res->unit) {
		case ACCT_RESOURCE_BYTES:
			r = acct_parse_size(res->budget_text, &n);
			if (r == -EINVAL)
				return diag_set_error(diag, r, "%s: budget: invalid size '%s' (%s)", origin, res->budget_text,
						      acct_size_refusal(res->budget_text));
			break;
		case ACCT_RESOURCE_SECONDS:
			r = acct_parse_duration_us(res->budget_text, &n);
			if (r == -EINVAL)
				return diag_set_error(diag, r, "%s: budget: invalid duration '%s' (expected " ACCT_DURATION_SYNTAX ")",
						      origin, res->budget_text);
			break;
		default:
			r = acct_parse_uint64(res->budget_text, &n);
			if (r == -EINVAL)
				return diag_set_error(diag, r, "%s: budget: invalid number '%s' (expected an integer)", origin,
						      res->budget_text);
			break;
		}
		if (r < 0 || n > INT64_MAX)
			return diag_set_error(diag, -ERANGE, "%s: budget: %s is out of range (too large)", origin,
					      res->budget_text);
		res->budget = (int64_t)n;
	}
	return 0;
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
		return diag_set_error(diag, r, "%s", strerror(-r));
	if (r < 0) {
		const struct key_desc *k = key_find("counters", key);
		const char *origin = k && st->origins[k - keys] ? st->origins[k - keys] : "configuration";
		return diag_set_error(diag, r, "%s: %s: %s", origin, key, reason);
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
		return diag_set_error(diag, r, "%s", strerror(-r));

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
	r = resolve_resources(c, diag);
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

		return diag_set_error(diag, -EINVAL, "%s: unknown key '%s' in section [%s]%s", origin, key, section,
				      section_known(section) ? key_hint(section, key, hint) : section_hint(section, hint));
	}

	fast = c->fast_interval_us;
	slow = c->slow_interval_us;
	r = apply_value(c, k, value, &reason);
	if (r < 0) {
		if (!reason)
			return diag_set_error(diag, r, "%s: %s: %s", origin, k->name, strerror(-r));
		return diag_set_error(diag, r, "%s: %s: %s", origin, k->name, reason);
	}
	if (c->fast_interval_us > c->slow_interval_us) {
		char f[VALUE_BUF], s[VALUE_BUF];

		format_duration(c->fast_interval_us, f);
		format_duration(c->slow_interval_us, s);
		c->fast_interval_us = fast;
		c->slow_interval_us = slow;
		return diag_set_error(diag, -EINVAL, "%s: %s: fast_interval (%s) must not exceed slow_interval (%s)",
				      origin, k->name, f, s);
	}
	return 0;
}

/* ---- dump ---------------------------------------------------------------- */

/* The value of key `k` in `c` as the dump writes it (and a load reads it
 * back); "" for an empty one. Returns a malloc()ed string or NULL (ENOMEM). */
static char *value_string(const void *c, const struct key_desc *k)
{
	const void *p = field_const(c, k);
	char buf[VALUE_BUF];

	switch (k->kind) {
	case V_DURATION:
	case V_SIZE:
	case V_INTEGER:
		return strdup(format_number(k, get_number(c, k), buf));
	case V_BOOL:
		return strdup(*(const bool *)p ? "yes" : "no");
	case V_LOG_LEVEL:
		return strdup(acct_log_level_to_string(*(const enum acct_log_level *)p) ?: "info");
	case V_COLLECTOR:
		return strdup(acct_collector_mode_to_string(*(const int *)p) ?: "auto");
	case V_REMOVALS:
		return strdup(acct_removal_log_to_string(*(const enum acct_removal_log *)p) ?: "summary");
	case V_UNIT:
		return strdup(acct_resource_unit_to_string(*(const enum acct_resource_unit *)p) ?: "count");
	case V_ON_REMOVAL:
		return strdup(acct_resource_removal_to_string(*(const enum acct_resource_removal *)p) ?: "release");
	case V_BUDGET: {
		/* The resolved budget in its unit, never the text: the dump reloads the same. */
		const struct acct_resource_config *res = c;

		if (res->unit == ACCT_RESOURCE_BYTES)
			return strdup(format_size((uint64_t)res->budget, buf));
		if (res->unit == ACCT_RESOURCE_SECONDS)
			return strdup(format_duration((uint64_t)res->budget, buf));
		snprintf(buf, sizeof(buf), "%" PRId64, res->budget);
		return strdup(buf);
	}
	case V_ROOT:
	case V_SOCKET:
	case V_GROUP:
	case V_LISTEN:
		return strdup(*(char *const *)p ?: "");
	case V_INCLUDE:
	case V_EXCLUDE:
	case V_FAMILIES: {
		char *const *v = *(char **const *)p;
		char *s = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&s, &len);

		if (!f)
			return NULL;
		for (size_t i = 0; v && v[i]; i++)
			fprintf(f, "%s%s", i ? " " : "", v[i]);
		if (fclose(f) != 0) {
			free(s);
			return NULL;
		}
		return s;
	}
	}
	return strdup("");
}

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
		_cleanup_free_ char *v = value_string(c, k);

		if (!section || strcmp(section, k->section) != 0) {
			section = k->section;
			fprintf(f, "\n[%s]\n", section);
		}
		fprintf(f, "%s =%s%s\n", k->name, v && *v ? " " : "", v ? v : "");
	}
	for (size_t i = 0; i < c->nr_resources; i++) {
		fprintf(f, "\n[" RESOURCE_PREFIX "%s]\n", c->resources[i].name);
		for (size_t j = 0; j < ELEMENTSOF(resource_keys); j++) {
			_cleanup_free_ char *v = value_string(&c->resources[i], &resource_keys[j]);
			fprintf(f, "%s =%s%s\n", resource_keys[j].name, v && *v ? " " : "", v ? v : "");
		}
	}
}

/* The resources of c in one line ("name: unit=... budget=...; ..."), for a
 * reload's report; NULL on ENOMEM. */
static char *resources_string(const struct acct_config *c)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < c->nr_resources; i++) {
		fprintf(f, "%s%s:", i ? "; " : "", c->resources[i].name);
		for (size_t j = 0; j < ELEMENTSOF(resource_keys); j++) {
			_cleanup_free_ char *v = value_string(&c->resources[i], &resource_keys[j]);
			fprintf(f, " %s=%s", resource_keys[j].name, v ?: "");
		}
	}
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
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

int acct_config_diff(const struct acct_config *old, const struct acct_config *new, struct acct_config_change **ret,
		     size_t *ret_n)
{
	struct acct_config_change *v = calloc(ELEMENTSOF(keys) + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		_cleanup_free_ char *a = value_string(old, &keys[i]), *b = value_string(new, &keys[i]);

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
	_cleanup_free_ char *a = resources_string(old), *b = resources_string(new);
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
