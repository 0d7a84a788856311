/* verb-compare.c - `acctctl compare CGROUP QUANTITY THRESHOLD`: above, below
 * or equal (exit 0, 5, 6), and whether acctd needed a precise read. The
 * threshold's unit comes from the quantity table (lib/basic/quantity.h), a
 * charged resource's from acctd's Status (charge-units.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acctctl.h"
#include "basic/parse.h"
#include "charge-units.h"
#include "ctl-call.h"
#include "ctl-util.h"
#include "human.h"
#include "verbs.h"

/* A threshold: a plain integer in the quantity's unit (bytes, us, count),
 * or a size for bytes, a duration for times (parse.h: the syntax of the
 * configuration). Which parser reads it follows from the unit, so "1M" is a
 * MiB for memory and never a month. */
static int parse_threshold(enum acct_unit u, const char *s, int64_t *ret)
{
	uint64_t v;
	char *end;
	long long n;
	int r;

	errno = 0;
	n = strtoll(s, &end, 10);
	if (*s && !*end && errno == 0) {
		*ret = n;
		return 0;
	}
	if (u == ACCT_UNIT_BYTES)
		r = acct_parse_size(s, &v);
	else if (u == ACCT_UNIT_USEC)
		r = acct_parse_duration_us(s, &v);
	else
		return -EINVAL;
	if (r < 0 || v > INT64_MAX)
		return -EINVAL;
	*ret = (int64_t)v;
	return 0;
}

/* The unit of `quantity`: the quantity table's, or for charges.NAME[.self]
 * the resource's (one Status call; a plain count where acctd does not say). */
static enum acct_unit unit_of(const char *quantity, bool charged)
{
	char name[256];

	if (!charged)
		return quantity_unit(quantity);
	snprintf(name, sizeof(name), "%s", quantity + strlen("charges."));
	char *dot = strchr(name, '.');
	if (dot)
		*dot = '\0';
	charge_units_load();
	int u = charge_unit(name);
	return u < 0 ? ACCT_UNIT_COUNT : (enum acct_unit)u;
}

/* An unknown quantity is a mistake on the command line: say which names
 * there are (lib/basic/quantity.c's table, the one acctd answers from). */
static int unknown_quantity(const char *name)
{
	fprintf(stderr, "Unknown quantity '%s'. Valid quantities:", name);
	for (int q = 0; q < _ACCT_Q_MAX; q++)
		fprintf(stderr, "%s %s", q ? "," : "", acct_quantity_info((enum acct_quantity)q)->name);
	fputs(".\n", stderr);
	return EXIT_USAGE;
}

int verb_compare(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	const char *result;
	struct value v;
	int64_t threshold;
	int r;

	/* charges.NAME[.self]: a charged resource, whose names and units only
	 * acctd knows (docs/charges.md) */
	bool charged = strncmp(args[1], "charges.", 8) == 0;
	if (!charged && acct_quantity_from_name(args[1]) < 0)
		return unknown_quantity(args[1]);
	enum acct_unit u = unit_of(args[1], charged);
	if (parse_threshold(u, args[2], &threshold) < 0) {
		fprintf(stderr, "Invalid threshold '%s' for %s: expected %s.\n", args[2], args[1],
			u == ACCT_UNIT_BYTES	 ? "bytes, or a size such as 512M or 1.5G"
			: u == ACCT_UNIT_USEC ? "microseconds, or a duration such as 250ms or 1.5s"
					 : "an integer");
		return EXIT_USAGE;
	}
	json_add(params, "cgroup", json_cgroup_arg(args[0]));
	json_add(params, "quantity", json_object_new_string(args[1]));
	json_add(params, "threshold", json_object_new_int64(threshold));
	r = call_once("Compare", params, &reply);
	if (r != EXIT_OK)
		return r;
	result = jstr(reply.parameters, "result");
	if (!result || (strcmp(result, "above") != 0 && strcmp(result, "below") != 0 && strcmp(result, "equal") != 0))
		return call_failed(-EBADMSG, NULL);
	v = value_of(jget(reply.parameters, "value"));
	if (arg_json)
		print_json(stdout, reply.parameters);
	else if (!arg_quiet) {
		struct fbuf fv = v.set ? fmt_unit(u, v.value) : (struct fbuf){ "" }, ft = fmt_unit(u, threshold);

		/* "3.0G is below 3.0G" contradicts itself: where the rounded
		 * texts match but the decision is not "equal", show both exactly. */
		if (v.set && strcmp(result, "equal") != 0 && strcmp(fv.s, ft.s) == 0) {
			fv = fmt_exact(u, v.value);
			ft = fmt_exact(u, threshold);
		}
		print_text(stdout, args[0]);
		printf(" %s", args[1]);
		if (v.set) {
			printf(" %s", fv.s);
			if (v.bound > 0)
				printf(" %s%s", glyph(G_PLUSMINUS), fmt_unit(u, v.bound).s);
		}
		/* Within the bound that no read can narrow: the kernel's
		 * per-CPU batching for its values; for a charge, the charge
		 * bound (the engine's and its slots' batching). */
		printf(" is %s%s %s (%s)\n", result, strcmp(result, "equal") == 0 ? " to" : "", ft.s,
		       !jbool(reply.parameters, "within_bound") ? (jbool(reply.parameters, "precise")
								       ? "a precise read was needed"
								       : "decided from the bound, no precise read")
		       : charged ? "as read: the threshold lies within the charge bound, the truth may be either side"
				 : "as read: the threshold lies within the kernel's own bound, the truth may be either side");
	}
	return strcmp(result, "above") == 0 ? EXIT_OK : strcmp(result, "below") == 0 ? EXIT_BELOW : EXIT_EQUAL;
}
