/* config-values.c - the values of acctd.conf's keys: the one parser and
 * checker (config_apply_value()) and formatter (config_value_string()) that
 * the keys of config.c's keys[] and config-resources.c's resource_keys[]
 * share, with the messages that name what is wrong, and the names of the
 * enumerated values (log levels, resource units and removal rules). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "basic/hostport.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "basic/util.h"
#include "cgroup-glob.h"
#include "collector-mode.h"
#include "config-internal.h"
#include "metrics-families.h"
#include "removal-log.h"

/* ---- names --------------------------------------------------------------- */

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

int acct_resource_unit_from_string(const char *s)
{
	return name_index(resource_unit_names, ELEMENTSOF(resource_unit_names), s);
}

int acct_resource_removal_from_string(const char *s)
{
	return name_index(resource_removal_names, ELEMENTSOF(resource_removal_names), s);
}

/* ---- formatting (the dump and messages) ---------------------------------- */

/* The largest unit that represents `us` exactly, so that parsing gives it back. */
const char *config_format_duration(uint64_t us, char buf[static VALUE_BUF])
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

const char *config_format_size(uint64_t bytes, char buf[static VALUE_BUF])
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
		return config_format_duration(v, buf);
	case V_SIZE:
		return config_format_size(v, buf);
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
int config_apply_value(void *c, const struct key_desc *k, const char *value,
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
		int m = k->kind == V_UNIT ? acct_resource_unit_from_string(v) : acct_resource_removal_from_string(v);

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

/* ---- the dump's text of a value ---------------------------------------- */

/* The value of key `k` in `c` as the dump writes it (and a load reads it
 * back); "" for an empty one. Returns a malloc()ed string or NULL (ENOMEM). */
char *config_value_string(const void *c, const struct key_desc *k)
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
			return strdup(config_format_size((uint64_t)res->budget, buf));
		if (res->unit == ACCT_RESOURCE_SECONDS)
			return strdup(config_format_duration((uint64_t)res->budget, buf));
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
