/* charge-units.c - the unit of each charged resource, read from the
 * configuration files that acctd names (see charge-units.h). */
#include "charge-units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acctctl.h"
#include "ctl-call.h"
#include "ctl-util.h"

/* acctd.conf's unit names and how acctctl prints them (a seconds resource
 * is charged in microseconds: a duration). */
static const struct {
	const char *name;
	enum acct_unit unit;
} unit_names[] = {
	{ "bytes", ACCT_UNIT_BYTES },
	{ "count", ACCT_UNIT_COUNT },
	{ "seconds", ACCT_UNIT_USEC },
};

/* What is known: a resource and its unit, -ENOENT for a unit that no file
 * gives in words acctctl knows. */
static struct known {
	char *name;
	int unit;
} *known;
static size_t nr_known;
static bool loaded;
static char *unknown_why;

void charge_units_reset(void)
{
	for (size_t i = 0; i < nr_known; i++)
		free(known[i].name);
	free(known);
	known = NULL;
	nr_known = 0;
	free(unknown_why);
	unknown_why = NULL;
	loaded = false;
}

static struct known *known_find(const char *name, size_t len)
{
	for (size_t i = 0; i < nr_known; i++)
		if (strlen(known[i].name) == len && strncmp(known[i].name, name, len) == 0)
			return &known[i];
	return NULL;
}

/* The entry of resource name[0..len), added as a count (acctd's default
 * unit) when new; NULL on ENOMEM. */
static struct known *known_get(const char *name, size_t len)
{
	struct known *k = known_find(name, len), *v;

	if (k)
		return k;
	v = reallocarray(known, nr_known + 1, sizeof(*v));
	if (!v)
		return NULL;
	known = v;
	known[nr_known] = (struct known){ .name = strndup(name, len), .unit = ACCT_UNIT_COUNT };
	if (!known[nr_known].name)
		return NULL;
	return &known[nr_known++];
}

static int unit_from_name(const char *s, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(unit_names); i++)
		if (strlen(unit_names[i].name) == len && strncmp(unit_names[i].name, s, len) == 0)
			return (int)unit_names[i].unit;
	return -ENOENT;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

int charge_units_parse(const char *text)
{
	struct known *section = NULL; /* the [resource.NAME] the lines are in, if any */

	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n'), *s = line, *eq;
		size_t n;

		n = end ? (size_t)(end - line) : strlen(line);
		line = end ? end + 1 : NULL;
		while (n > 0 && blank(*s)) /* acctd's reader drops leading blanks */
			s++, n--;
		if (n == 0 || *s == ';' || *s == '#')
			continue;
		if (*s == '[') {
			const char *close = memchr(s, ']', n);
			static const char prefix[] = "resource.";

			section = NULL;
			if (!close || (size_t)(close - s - 1) <= strlen(prefix) || strncmp(s + 1, prefix, strlen(prefix)) != 0)
				continue;
			section = known_get(s + 1 + strlen(prefix), (size_t)(close - s - 1) - strlen(prefix));
			if (!section)
				return -ENOMEM;
			continue;
		}
		eq = memchr(s, '=', n) ?: memchr(s, ':', n);
		if (!section || !eq)
			continue;
		size_t klen = (size_t)(eq - s), vlen;
		while (klen > 0 && blank(s[klen - 1]))
			klen--;
		if (klen != 4 || strncmp(s, "unit", 4) != 0)
			continue;
		const char *v = eq + 1, *vend = s + n;
		/* inih's inline comment: ';' after a blank */
		for (const char *c = v + 1; c < vend; c++)
			if (*c == ';' && blank(c[-1])) {
				vend = c;
				break;
			}
		while (v < vend && blank(*v))
			v++;
		vlen = (size_t)(vend - v);
		while (vlen > 0 && blank(v[vlen - 1]))
			vlen--;
		section->unit = unit_from_name(v, vlen);
	}
	return 0;
}

/* Whether file `path` changed after acctd started at `start_us`
 * (CLOCK_REALTIME): then what it says may not be what acctd runs with. A
 * second of slack for the clocks' reading apart. */
static bool changed_since(const char *path, int64_t start_us)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return false; /* the read says why */
	return (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000 > start_us + 1000000;
}

/* The units are not known, because of `why` (taken). */
static void set_unknown(char *why)
{
	charge_units_reset();
	unknown_why = why;
	loaded = true;
}

void charge_units_load(void)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	struct json_object *st, *sources;
	int64_t uptime;

	if (loaded)
		return;
	loaded = true;
	if (call_once("Status", NULL, &reply) != EXIT_OK) {
		set_unknown(xstrdup("acctd's status could not be read"));
		return;
	}
	st = jget(reply.parameters, "status");
	sources = jget(st, "config_sources");
	if (!sources || !json_object_is_type(sources, json_type_array) || !jint(st, "uptime_us", &uptime)) {
		set_unknown(xstrdup("acctd does not name its configuration files"));
		return;
	}
	for (size_t i = 0; i < json_object_array_length(sources); i++) {
		const char *path = json_object_get_string(json_object_array_get_idx(sources, i));
		_cleanup_free_ char *text = NULL;
		size_t size = 0;
		FILE *f;

		if (!path || path[0] != '/') { /* relative to acctd's directory, not ours */
			set_unknown(xasprintf("acctd names its configuration file %s relative to its own directory",
					      path ?: "?"));
			return;
		}
		if (changed_since(path, (int64_t)arg_now_us - uptime)) {
			set_unknown(xasprintf("%s changed after acctd started", path));
			return;
		}
		f = fopen(path, "re");
		if (!f) {
			set_unknown(xasprintf("%s: %s", path, strerror(errno)));
			return;
		}
		/* getdelim() to NUL: the whole file (a text file holds none) */
		if (getdelim(&text, &size, '\0', f) < 0 && ferror(f)) {
			int e = errno;
			fclose(f);
			set_unknown(xasprintf("%s: %s", path, strerror(e)));
			return;
		}
		fclose(f);
		if (text && charge_units_parse(text) < 0)
			oom_exit();
	}
}

int charge_unit(const char *name)
{
	struct known *k = name ? known_find(name, strlen(name)) : NULL;

	return k ? k->unit : -ENOENT;
}

const char *charge_units_resource(size_t i, int *ret_unit)
{
	if (i >= nr_known)
		return NULL;
	*ret_unit = known[i].unit;
	return known[i].name;
}

const char *charge_units_unknown(void)
{
	return unknown_why;
}

const char *charge_unit_name(int unit)
{
	for (size_t i = 0; i < ELEMENTSOF(unit_names); i++)
		if ((int)unit_names[i].unit == unit)
			return unit_names[i].name;
	return "";
}

struct fbuf fmt_charge(const char *name, int64_t v)
{
	int u = charge_unit(name);

	return u >= 0 ? fmt_unit((enum acct_unit)u, v) : fmt_int(v);
}

const char *charge_time_unit(int64_t recorded_us, double *ret_s)
{
	static const struct {
		const char *name;
		double s;
	} units[] = { { "h", 3600 }, { "min", 60 }, { "s", 1 } };

	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if ((double)recorded_us >= units[i].s * 1e6 || i == ELEMENTSOF(units) - 1) {
			*ret_s = units[i].s;
			return units[i].name;
		}
	return NULL; /* not reached */
}

/* d rounded to an int64_t, saturated (a corrupt answer must not be UB). */
static int64_t round_i64(double d)
{
	if (!(d > -9.2e18))
		return d < 0 ? INT64_MIN : 0; /* NaN: 0 */
	if (d > 9.2e18)
		return INT64_MAX;
	return (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
}

struct fbuf fmt_charge_integral(int unit, double value_s, int64_t recorded_us)
{
	struct fbuf b;
	double per;
	const char *tu = charge_time_unit(recorded_us, &per);

	/* a number of at most 20 characters and "·min": never cut */
	switch (unit) {
	case ACCT_UNIT_BYTES:
		if (snprintf(b.s, sizeof(b.s), "%s%s%s", fmt_bytes(round_i64(value_s / per)).s, glyph(G_TIMES), tu) < 0)
			b.s[0] = '\0';
		break;
	case ACCT_UNIT_USEC:
		if (snprintf(b.s, sizeof(b.s), "%s%s%s", fmt_duration(round_i64(value_s / per)).s, glyph(G_TIMES), tu) < 0)
			b.s[0] = '\0';
		break;
	case ACCT_UNIT_COUNT:
		b = fmt_duration(round_i64(value_s * 1e6));
		break;
	default:
		snprintf(b.s, sizeof(b.s), "%.6g", value_s);
	}
	return b;
}
