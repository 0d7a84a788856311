/* verb-watch.c - `acctctl watch CGROUP...`: a time-stamped line per cgroup
 * (its memory, CPU, load, tasks, pressure and what programs charged to it)
 * at start and then whenever what the line shows changed (acctd's Watch stream
 * reports every interval; identical lines would be noise), until ^C, SIGTERM or
 * the end of the stream (all exit 0); or each update as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acctctl.h"
#include "charge-units.h"
#include "basic/hash.h"
#include "basic/ptr-table.h"
#include "ctl-call.h"
#include "ctl-util.h"
#include "human.h"
#include "terminal.h"
#include "verbs.h"

/* The last text printed for each cgroup, to print only changes, found by
 * path through a hash table (ptr-table.h): a watch of --prefix=/ on a host
 * of 10,000 cgroups looks up every cgroup at every update, which a list
 * searched from the start made 50 million comparisons per update. */
struct shown {
	char *path, *text;
};

static bool shown_eq(const void *p, const void *key)
{
	return strcmp(((const struct shown *)p)->path, key) == 0;
}

static void shown_free(void *p)
{
	struct shown *e = p;
	free(e->path);
	free(e->text);
	free(e);
}

static void shown_table_clear(struct ptr_table *t)
{
	ptr_table_clear(t, shown_free);
}

/* Whether `text` differs from what was last shown for path; remembers it. */
static bool shown_changed(struct ptr_table *t, const char *path, const char *text)
{
	uint64_t hash = hash_mix64(hash_fnv1a_string(path));
	struct shown *e = ptr_table_find(t, hash, shown_eq, path);

	if (e) {
		if (strcmp(e->text, text) == 0)
			return false;
		free(e->text);
		e->text = xstrdup(text);
		return true;
	}
	e = malloc(sizeof(*e));
	if (!e)
		oom_exit();
	*e = (struct shown){ xstrdup(path), xstrdup(text) };
	if (ptr_table_insert(t, hash, e) < 0)
		oom_exit();
	return true;
}

/* The line's text after the time stamp, to `f`. */
static void watch_text(FILE *f, struct json_object *cg)
{
	struct json_object *values = jget(cg, "values"), *rate = jget(jget(cg, "cpu_rate_cores"), "rate");
	struct json_object *load = jget(cg, "load"), *pressure = jget(cg, "pressure");
	struct value mem = value_of(jget(values, "memory")), tasks = value_of(jget(values, "tasks"));
	const char *state = jstr(cg, "state");

	print_text(f, jstr(cg, "path") ?: "?");
	fputc(':', f);
	if (state && strcmp(state, "dead") == 0)
		fprintf(f, " removed (final values)");
	if (mem.set) {
		fprintf(f, " memory %s", fmt_bytes(mem.value).s);
		if (mem.bound > 0)
			fprintf(f, " %s%s", glyph(G_PLUSMINUS), fmt_bytes(mem.bound).s);
	} else
		fprintf(f, " memory -");
	if (rate)
		fprintf(f, ", cpu %.2f", jdouble_or(rate, "value", 0));
	else
		fprintf(f, ", cpu -");
	if (load)
		fprintf(f, ", load %.2f", jdouble_or(load, "avg1", 0));
	else
		fprintf(f, ", load -");
	if (tasks.set)
		fprintf(f, ", tasks %" PRId64, tasks.value);
	if (pressure) {
		static const char *const res[] = { "cpu", "memory", "io" };
		bool any = false;
		for (size_t i = 0; i < ELEMENTSOF(res); i++) {
			struct json_object *some = jget(jget(pressure, res[i]), "some");
			if (!some)
				continue;
			fprintf(f, "%s %s %.2f%%", any ? "" : ", pressure", res[i], jdouble_or(some, "avg10", 0));
			any = true;
		}
	}
	/* What programs charged to it and below (its subtree value, as the
	 * kernel's values here are the subtree's), in each resource's unit. */
	struct json_object *charges = jget(cg, "charges");
	if (charges && json_object_is_type(charges, json_type_object)) {
		bool any = false;
		json_object_object_foreach(charges, name, c) {
			struct value sub = value_of(jget(c, "subtree"));
			if (!sub.set)
				continue;
			fprintf(f, "%s ", any ? "," : ", charged");
			print_text(f, name);
			fprintf(f, " %s", fmt_charge(name, sub.value).s);
			if (sub.bound > 0)
				fprintf(f, " %s%s", glyph(G_PLUSMINUS), fmt_charge(name, sub.bound).s);
			any = true;
		}
	}
}

/* Print cg's line, time-stamped, unless it shows what it showed last. */
static void watch_line(struct ptr_table *shown, struct json_object *cg)
{
	_cleanup_free_ char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	struct timespec ts;
	struct tm tm;
	char stamp[32];

	if (!f)
		oom_exit();
	watch_text(f, cg);
	if (fclose(f) != 0)
		oom_exit();
	if (!shown_changed(shown, jstr(cg, "path") ?: "?", text))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&ts.tv_sec, &tm));
	printf("%s.%03ld %s\n", stamp, ts.tv_nsec / 1000000, text);
}

int verb_watch(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	_cleanup_(shown_table_clear) struct ptr_table shown = { 0 };
	int r;

	/* the only verb whose argument count depends on an option: verbs[] allows any */
	if (!args[0] && !arg_prefix)
		return usage_error("'watch' needs a CGROUP or --prefix=PATH.");
	if (args[0]) {
		struct json_object *a = xjson(json_object_new_array());
		for (size_t i = 0; args[i]; i++)
			json_object_array_add(a, json_cgroup_arg(args[i]));
		json_add(params, "cgroups", a);
	}
	if (arg_prefix)
		json_add(params, "prefix", json_cgroup_arg(arg_prefix));
	json_add(params, "interval_ms", json_object_new_int64((int64_t)(arg_delay_us / 1000)));

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	if (!arg_json)
		charge_units_load(); /* one Status call: the charged resources' units */
	catch_quit_signals();
	quit_signal_ends_reads(acct_client_fd(c));
	r = acct_client_send(c, "Watch", params, ACCT_CALL_MORE);
	if (r < 0)
		return call_failed(r, NULL);
	for (;;) {
		struct json_object *a;

		r = acct_client_receive(c, -1, &reply);
		if (r < 0 && got_quit_signal)
			return EXIT_OK; /* ^C ends a watch normally (-EINTR, or -ECONNRESET: terminal.h) */
		if (r == -EINTR)
			continue;
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
					watch_line(&shown, json_object_array_get_idx(a, i));
		}
		fflush(stdout);
		if (!reply.continues)
			return EXIT_OK; /* acctd ended the stream */
		if (got_quit_signal)
			return EXIT_OK;
	}
}
