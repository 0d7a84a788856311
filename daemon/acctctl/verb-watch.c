/* verb-watch.c - `acctctl watch CGROUP...`: a time-stamped line per cgroup
 * whenever acctd's Watch stream reports a change, until ^C, SIGTERM or the end
 * of the stream (all exit 0); or each update as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "acctctl.h"
#include "ctl-call.h"
#include "ctl-util.h"
#include "human.h"
#include "terminal.h"

static void watch_line(struct json_object *cg)
{
	struct json_object *values = jget(cg, "values"), *rate = jget(jget(cg, "cpu_rate_cores"), "rate");
	struct json_object *load = jget(cg, "load"), *pressure = jget(cg, "pressure");
	struct value mem = value_of(jget(values, "memory")), tasks = value_of(jget(values, "tasks"));
	const char *state = jstr(cg, "state");
	struct timespec ts;
	struct tm tm;
	char stamp[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&ts.tv_sec, &tm));
	printf("%s.%03ld %s:", stamp, ts.tv_nsec / 1000000, jstr(cg, "path") ?: "?");
	if (state && strcmp(state, "dead") == 0)
		printf(" removed (final values)");
	if (mem.set) {
		printf(" memory %s", fmt_bytes(mem.value).s);
		if (mem.bound > 0)
			printf(" %s%s", glyph(G_PLUSMINUS), fmt_bytes(mem.bound).s);
	} else
		printf(" memory -");
	if (rate)
		printf(", cpu %.2f", jdouble_or(rate, "value", 0));
	else
		printf(", cpu -");
	if (load)
		printf(", load %.2f", jdouble_or(load, "avg1", 0));
	else
		printf(", load -");
	if (tasks.set)
		printf(", tasks %" PRId64, tasks.value);
	if (pressure) {
		static const char *const res[] = { "cpu", "memory", "io" };
		bool any = false;
		for (size_t i = 0; i < ELEMENTSOF(res); i++) {
			struct json_object *some = jget(jget(pressure, res[i]), "some");
			if (!some)
				continue;
			printf("%s %s %.2f%%", any ? "" : ", pressure", res[i], jdouble_or(some, "avg10", 0));
			any = true;
		}
	}
	putchar('\n');
}

int verb_watch(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	int r;

	/* the only verb whose argument count depends on an option: verbs[] allows any */
	if (!args[0] && !arg_prefix)
		return usage_error("'watch' needs a CGROUP or --prefix=PATH.");
	if (args[0]) {
		struct json_object *a = xjson(json_object_new_array());
		for (size_t i = 0; args[i]; i++)
			json_object_array_add(a, xjson(json_object_new_string(args[i])));
		json_add(params, "cgroups", a);
	}
	if (arg_prefix)
		json_add(params, "prefix", json_object_new_string(arg_prefix));
	json_add(params, "interval_ms", json_object_new_int64((int64_t)(arg_delay_us / 1000)));

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	catch_quit_signals();
	r = acct_client_send(c, "Watch", params, ACCT_CALL_MORE);
	if (r < 0)
		return call_failed(r, NULL);
	for (;;) {
		struct json_object *a;

		r = acct_client_receive(c, -1, &reply);
		if (r == -EINTR) {
			if (got_quit_signal)
				return EXIT_OK; /* ^C ends a watch normally */
			continue;
		}
		if (r < 0)
			return call_failed(r, NULL);
		if (reply.error)
			return call_failed(acct_error_to_errno(reply.error), &reply);
		if (arg_json)
			print_json(stdout, reply.parameters);
		else {
			a = jget(reply.parameters, "cgroups");
			if (a && json_object_is_type(a, json_type_array))
				for (size_t i = 0; i < json_object_array_length(a); i++)
					watch_line(json_object_array_get_idx(a, i));
		}
		fflush(stdout);
		if (!reply.continues)
			return EXIT_OK; /* acctd ended the stream */
		if (got_quit_signal)
			return EXIT_OK;
	}
}
