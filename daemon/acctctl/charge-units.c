/* charge-units.c - the unit of each charged resource, as acctd's Status
 * serves them (see charge-units.h). */
#include "charge-units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static struct known *known_find(const char *name)
{
	for (size_t i = 0; i < nr_known; i++)
		if (strcmp(known[i].name, name) == 0)
			return &known[i];
	return NULL;
}

static int unit_from_name(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(unit_names); i++)
		if (strcmp(unit_names[i].name, s) == 0)
			return (int)unit_names[i].unit;
	return -ENOENT;
}

int charge_units_from_status(struct json_object *status)
{
	struct json_object *list = jget(status, "resources");

	charge_units_reset();
	loaded = true;
	if (!list || !json_object_is_type(list, json_type_array)) {
		unknown_why = strdup("acctd does not say which resources it keeps");
		return unknown_why ? 0 : -ENOMEM;
	}
	size_t n = json_object_array_length(list);
	known = calloc(n ?: 1, sizeof(*known));
	if (!known)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(list, i);
		const char *name = jstr(r, "name"), *unit = jstr(r, "unit");
		if (!name || known_find(name))
			continue; /* not a resource acctd would serve: nothing to print it by */
		known[nr_known].name = strdup(name);
		if (!known[nr_known].name)
			return -ENOMEM;
		/* a unit of a later acctd prints as an integer */
		known[nr_known++].unit = unit ? unit_from_name(unit) : -ENOENT;
	}
	return 0;
}

void charge_units_load(void)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };

	if (loaded)
		return;
	if (call_once("Status", NULL, &reply) != EXIT_OK) {
		charge_units_reset();
		loaded = true;
		unknown_why = xstrdup("acctd's status could not be read");
		return;
	}
	if (charge_units_from_status(jget(reply.parameters, "status")) < 0)
		oom_exit();
}

int charge_unit(const char *name)
{
	struct known *k = name ? known_find(name) : NULL;

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
