/* verb-charge.c - `acctctl charge RESOURCE DELTA [--cgroup CG] [--sync]`: one Charge
 * call for scripts (docs/charges.md). DELTA is an integer in the resource's
 * unit (acctctl does not know the unit: acctd.conf declares it), negative to
 * give back; without --cgroup the charge goes to acctctl's own cgroup, which
 * is the script's. Prints nothing on success (--json: the reply). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acctctl.h"
#include "ctl-call.h"
#include "ctl-util.h"
#include "options.h"
#include "verbs.h"

int verb_charge(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	long long delta;
	char *end;
	int r;

	errno = 0;
	delta = strtoll(args[1], &end, 10);
	if (!*args[1] || *end || errno != 0) {
		fprintf(stderr, "Invalid delta '%s': expected an integer in the resource's unit "
				"(bytes, a count, microseconds), negative to give back.\n",
			args[1]);
		return EXIT_USAGE;
	}
	json_add(params, "resource", json_object_new_string(args[0]));
	json_add(params, "delta", json_object_new_int64(delta));
	if (arg_cgroup)
		json_add(params, "cgroup", json_cgroup_arg(arg_cgroup));
	if (arg_sync)
		json_add(params, "sync", json_object_new_boolean(true));
	r = call_once("Charge", params, &reply);
	if (r != EXIT_OK)
		return r;
	if (arg_json)
		print_json(stdout, reply.parameters);
	return EXIT_OK;
}
