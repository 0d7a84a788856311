/* verb-history.c - `acctctl history CGROUP`: one cgroup's history in steps
 * (the History method): on a terminal a plot of its memory with its CPU rate
 * below (plot.h), else a table of the steps; or one JSON document, or CSV. A
 * step without data is a gap, never interpolated. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acctctl.h"
#include "charge-units.h"
#include "ctl-call.h"
#include "ctl-util.h"
#include "history-call.h"
#include "human.h"
#include "pager.h"
#include "plot.h"
#include "table.h"
#include "terminal.h"
#include "verbs.h"

/* The members of a HistoryStep, in the order of the CSV columns. */
static const char *const step_members[] = {
	"t_us",		       "covered_us",	      "cpu_cores",	     "memory_mean_bytes",
	"memory_min_bytes",    "memory_max_bytes",    "io_read_bytes_per_s", "io_write_bytes_per_s",
	"tasks_max",
};

/* What one plot shows: a member of the steps, its unit and title. */
static const struct {
	const char *member, *title, *quantity;
	enum plot_unit unit;
} plots[] = {
	[PLOT_MEMORY] = { "memory_mean_bytes", "Memory (mean of each step)", "memory", PLOT_BYTES },
	[PLOT_CPU] = { "cpu_cores", "CPU (cores)", "cpu", PLOT_CORES },
	[PLOT_IO] = { "io_read_bytes_per_s", "I/O read per second", "io", PLOT_BYTES_PER_S },
	[PLOT_TASKS] = { "tasks_max", "Tasks (most in each step)", "tasks", PLOT_COUNT },
};

static void print_csv(struct json_object *steps)
{
	for (size_t i = 0; i < ELEMENTSOF(step_members); i++)
		printf("%s%s", i ? "," : "", step_members[i]);
	putchar('\n');
	for (size_t r = 0; r < json_object_array_length(steps); r++) {
		struct json_object *s = json_object_array_get_idx(steps, r);

		for (size_t i = 0; i < ELEMENTSOF(step_members); i++) {
			if (i)
				putchar(',');
			csv_number(stdout, s, step_members[i]);
		}
		putchar('\n');
	}
}

enum { H_TIME, H_CPU, H_MEM, H_MIN, H_MAX, H_READ, H_WRITE, H_TASKS, H_COVERED, _H_MAX };
static const char *const history_headers[_H_MAX] = {
	"TIME", "CPU", "MEM MEAN", "MEM MIN", "MEM MAX", "READ/s", "WRITE/s", "TASKS", "COVERED",
};
static const unsigned history_flags[_H_MAX] = {
	[H_TIME] = 0,	     [H_CPU] = COL_RIGHT,   [H_MEM] = COL_RIGHT,   [H_MIN] = COL_RIGHT,	  [H_MAX] = COL_RIGHT,
	[H_READ] = COL_RIGHT, [H_WRITE] = COL_RIGHT, [H_TASKS] = COL_RIGHT, [H_COVERED] = COL_RIGHT,
};

static char *num_cell(struct table *t, struct json_object *s, const char *key, enum plot_unit unit)
{
	double d;

	if (!jdouble(s, key, &d))
		return cell_str(t, "-");
	switch (unit) {
	case PLOT_BYTES:
		return cell_str(t, fmt_bytes((int64_t)(d + 0.5)).s);
	case PLOT_BYTES_PER_S:
		return cell_fmt(t, "%s/s", fmt_bytes((int64_t)(d + 0.5)).s);
	case PLOT_CORES:
		return cell_str(t, fmt_2f(d).s);
	default:
		return cell_str(t, fmt_int((int64_t)(d + 0.5)).s);
	}
}

static void print_table(struct json_object *answer, struct json_object *steps)
{
	_cleanup_(table_done) struct table t = { 0 };
	int64_t step = jint_or(answer, "step_us", 0);
	bool date = jint_or(answer, "until_us", 0) - jint_or(answer, "since_us", 0) > INT64_C(86400000000);
	size_t gaps = 0, clipped = 0;

	table_init(&t, _H_MAX, history_headers, history_flags);
	for (size_t r = 0; r < json_object_array_length(steps); r++) {
		struct json_object *s = json_object_array_get_idx(steps, r);
		int64_t covered = jint_or(s, "covered_us", 0);
		char *cells[_H_MAX];

		int64_t t_us = jint_or(s, "t_us", 0);
		/* steps that are not whole seconds are told apart by their
		 * milliseconds (--step 1ms made 10,000 rows of one label) */
		cells[H_TIME] = step % 1000000 == 0 ? cell_str(&t, history_time(t_us, date).s)
						    : cell_fmt(&t, "%s.%03d", history_time(t_us, date).s,
							       (int)(((t_us % 1000000) + 1000000) % 1000000 / 1000));
		cells[H_CPU] = num_cell(&t, s, "cpu_cores", PLOT_CORES);
		if (jbool(s, "cpu_clipped") && arg_legend) { /* "*": cut to the CPUs (the footer says) */
			cells[H_CPU] = cell_fmt(&t, "%s*", cells[H_CPU]);
			clipped++;
		}
		cells[H_MEM] = num_cell(&t, s, "memory_mean_bytes", PLOT_BYTES);
		cells[H_MIN] = num_cell(&t, s, "memory_min_bytes", PLOT_BYTES);
		cells[H_MAX] = num_cell(&t, s, "memory_max_bytes", PLOT_BYTES);
		cells[H_READ] = num_cell(&t, s, "io_read_bytes_per_s", PLOT_BYTES_PER_S);
		cells[H_WRITE] = num_cell(&t, s, "io_write_bytes_per_s", PLOT_BYTES_PER_S);
		cells[H_TASKS] = num_cell(&t, s, "tasks_max", PLOT_COUNT);
		cells[H_COVERED] = covered <= 0 ? cell_str(&t, "no data")
				   : cell_fmt(&t, "%d%%", (int)(step > 0 ? (double)covered * 100 / (double)step + 0.5 : 100));
		gaps += covered <= 0;
		table_add(&t, cells);
	}
	table_print(stdout, &t, arg_legend, output_width());
	if (arg_legend)
		printf("\n%zu step%s of %s, %zu without data%s.\n", json_object_array_length(steps),
		       json_object_array_length(steps) == 1 ? "" : "s", fmt_duration(step).s, gaps,
		       gaps ? " (acctd was not recording, or the cgroup did not exist)" : "");
	if (arg_legend && clipped)
		printf("CPU*: more than the host's CPUs came out in %zu step%s, cut to them: an increase between\n"
		       "two recordings is spread over the time between them, which a short step can overfill\n"
		       "(docs/history.md).\n", clipped, clipped == 1 ? "" : "s");
}

/* The width of a plot: the terminal's, also behind a pipe ($COLUMNS, else
 * 80: terminal.h), as --full does not apply to it. */
static unsigned plot_width(void)
{
	return term_columns ? term_columns : 80;
}

/* The title of a plot: what it shows, of which cgroup (escaped for the terminal). */
static char *plot_title(const char *what, const char *cgroup)
{
	_cleanup_free_ char *name = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&name, &size);

	if (!f)
		oom_exit();
	print_text(f, cgroup);
	if (fclose(f) != 0)
		oom_exit();
	return xasprintf("%s of %s", what, name);
}

/* Draw plot `which` of the steps; height rows. */
static void draw_plot(struct json_object *answer, struct json_object *steps, enum plot_choice which, unsigned height)
{
	size_t n = json_object_array_length(steps);
	_cleanup_free_ double *v = xcalloc(n, sizeof(double));
	_cleanup_free_ char *title = plot_title(plots[which].title, jstr(answer, "cgroup") ?: "?");
	struct plot_series s = {
		.title = title,
		.unit = plots[which].unit,
		.values = v,
		.n = n,
		.start_us = (uint64_t)jint_or(answer, "since_us", 0),
		.step_us = (uint64_t)jint_or(answer, "step_us", 1),
	};

	for (size_t i = 0; i < n; i++) {
		struct json_object *st = json_object_array_get_idx(steps, i);
		if (jint_or(st, "covered_us", 0) <= 0 || !jdouble(st, plots[which].member, &v[i]))
			v[i] = NAN; /* a gap: no data, not zero */
	}
	if (plot_draw(stdout, &s, plot_width(), height, utf8) < 0)
		printf("%s: the terminal is too narrow for a plot.\n", title);
}

/* step_us of params: --step's, or for a plot (`plotting`, of values in
 * `unit`) one step per dot column; else acctd's default. Returns EXIT_OK or
 * EXIT_USAGE (too many steps). */
static int add_step(struct json_object *params, int64_t since, int64_t until, bool plotting, enum plot_unit unit)
{
	if (arg_step_us) {
		/* acctd answers at most HISTORY_MAX_STEPS steps: say so in
		 * terms of the options, not of the method's parameter */
		uint64_t n_steps = ((uint64_t)(until - since) + arg_step_us - 1) / arg_step_us;
		if (n_steps > HISTORY_MAX_STEPS)
			return usage_error("--step=%s over %s makes %" PRIu64 " steps; at most %u: a longer --step "
					   "(at least %s) or a shorter window.",
					   fmt_duration((int64_t)arg_step_us).s, fmt_duration(until - since).s, n_steps,
					   HISTORY_MAX_STEPS,
					   fmt_duration((until - since + HISTORY_MAX_STEPS - 1) / HISTORY_MAX_STEPS).s);
		json_add(params, "step_us", json_object_new_int64((int64_t)arg_step_us));
	} else if (plotting) {
		/* one step per dot column of the plot; a step shorter than
		 * acctd's recording interval shows that interval's average
		 * (docs/history.md, "Series") */
		struct plot_series probe = { .unit = unit };
		unsigned dots = plot_data_columns(&probe, plot_width()) * (utf8 ? 2 : 1);

		json_add(params, "step_us", json_object_new_int64(MAX((until - since) / (int64_t)MAX(dots, 1u), 1)));
	}
	return EXIT_OK;
}

/* --charge=NAME: the resource's recorded points (History's charges,
 * docs/charges.md "History": each point's subtree value and bound, held
 * from t_us to end_us) seen through the steps: per step the mean of the
 * values over the time they held in it, the largest value and bound, and
 * that time. */
struct charge_step {
	double mean; /* NAN: no value held in the step (no data) */
	int64_t max, bound, covered_us;
};

/* The points of --charge's resource in the answer, or NULL. */
static struct json_object *charge_points(struct json_object *answer)
{
	struct json_object *cs = jget(answer, "charges");

	for (size_t k = 0; cs && json_object_is_type(cs, json_type_array) && k < json_object_array_length(cs); k++) {
		struct json_object *c = json_object_array_get_idx(cs, k), *pts = jget(c, "points");
		const char *r = jstr(c, "resource");
		if (r && strcmp(r, arg_charge) == 0 && pts && json_object_is_type(pts, json_type_array))
			return pts;
	}
	return NULL;
}

/* n steps of the answer's window from its points (a new array: free() it).
 * The points come in time order and do not overlap, so one pass over them
 * serves every step. */
static struct charge_step *charge_steps(struct json_object *answer, size_t n)
{
	struct charge_step *cs = xcalloc(n, sizeof(*cs));
	struct json_object *pts = charge_points(answer);
	int64_t since = jint_or(answer, "since_us", 0), step = MAX(jint_or(answer, "step_us", 1), (int64_t)1);
	size_t np = pts ? json_object_array_length(pts) : 0, k0 = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t a = since + (int64_t)i * step, b = a + step;
		double sum = 0;

		cs[i] = (struct charge_step){ .mean = NAN, .max = INT64_MIN };
		while (k0 < np && jint_or(json_object_array_get_idx(pts, k0), "end_us", 0) <= a)
			k0++;
		for (size_t k = k0; k < np; k++) {
			struct json_object *p = json_object_array_get_idx(pts, k);
			int64_t from = MAX(jint_or(p, "t_us", 0), a), to = MIN(jint_or(p, "end_us", 0), b);
			int64_t v = jint_or(p, "value", 0);

			if (jint_or(p, "t_us", 0) >= b)
				break;
			if (to <= from)
				continue;
			sum += (double)v * (double)(to - from);
			cs[i].covered_us += to - from;
			cs[i].max = MAX(cs[i].max, v);
			cs[i].bound = MAX(cs[i].bound, jint_or(p, "bound", 0));
		}
		if (cs[i].covered_us > 0)
			cs[i].mean = sum / (double)cs[i].covered_us;
	}
	return cs;
}

/* How a charged resource of unit `unit` (-ENOENT: not known) plots and
 * prints: its axis's unit, and its CSV column's suffix as usage's. */
static const struct {
	int unit;
	enum plot_unit plot;
	const char *csv; /* "charge_gpu" + csv */
} charge_plot_units[] = {
	{ ACCT_UNIT_BYTES, PLOT_BYTES, "_bytes" },
	{ ACCT_UNIT_COUNT, PLOT_COUNT, "" },
	{ ACCT_UNIT_USEC, PLOT_USEC, "_usec" },
	{ -ENOENT, PLOT_COUNT, "_value" },
};

static size_t charge_plot_unit(void)
{
	int u = charge_unit(arg_charge);

	for (size_t i = 0; i < ELEMENTSOF(charge_plot_units); i++)
		if (charge_plot_units[i].unit == u)
			return i;
	return ELEMENTSOF(charge_plot_units) - 1;
}

/* A mean in the resource's unit: a count with two decimals (a load-like
 * resource's mean is fractional), bytes and durations rounded; %.6g when
 * the unit is not known. */
static char *charge_mean_cell(struct table *t, double mean)
{
	int u = charge_unit(arg_charge);

	if (isnan(mean))
		return cell_str(t, "-");
	if (u < 0)
		return cell_fmt(t, "%.6g", mean);
	if (u == ACCT_UNIT_COUNT)
		return cell_str(t, fmt_2f(mean).s);
	return cell_str(t, fmt_unit((enum acct_unit)u, (int64_t)llround(mean)).s);
}

static void print_charge_csv(struct json_object *answer)
{
	struct json_object *pts = charge_points(answer);
	const char *suffix = charge_plot_units[charge_plot_unit()].csv;

	printf("t_us,end_us,charge_%s%s,charge_%s%s_bound\n", arg_charge, suffix, arg_charge, suffix);
	for (size_t i = 0; pts && i < json_object_array_length(pts); i++) {
		struct json_object *p = json_object_array_get_idx(pts, i);
		static const char *const members[] = { "t_us", "end_us", "value", "bound" };

		for (size_t k = 0; k < ELEMENTSOF(members); k++) {
			if (k)
				putchar(',');
			csv_number(stdout, p, members[k]);
		}
		putchar('\n');
	}
}

static void print_charge_table(struct json_object *answer, const struct charge_step *cs, size_t n)
{
	static const char *const hh[] = { "TIME", "MEAN", "MAX", "BOUND", "COVERED" };
	static const unsigned hf[] = { 0, COL_RIGHT, COL_RIGHT, 0, COL_RIGHT };
	_cleanup_(table_done) struct table t = { 0 };
	int64_t step = jint_or(answer, "step_us", 0);
	bool date = jint_or(answer, "until_us", 0) - jint_or(answer, "since_us", 0) > INT64_C(86400000000);
	size_t gaps = 0;

	table_init(&t, ELEMENTSOF(hh), hh, hf);
	for (size_t i = 0; i < n; i++) {
		int64_t t_us = jint_or(answer, "since_us", 0) + (int64_t)i * step;
		char *cells[ELEMENTSOF(hh)];

		cells[0] = step % 1000000 == 0 ? cell_str(&t, history_time(t_us, date).s)
					       : cell_fmt(&t, "%s.%03d", history_time(t_us, date).s,
							  (int)(((t_us % 1000000) + 1000000) % 1000000 / 1000));
		cells[1] = charge_mean_cell(&t, cs[i].mean);
		cells[2] = cs[i].covered_us > 0 ? cell_str(&t, fmt_charge(arg_charge, cs[i].max).s) : cell_str(&t, "-");
		cells[3] = cs[i].bound > 0 ? cell_fmt(&t, "%s%s", glyph(G_PLUSMINUS), fmt_charge(arg_charge, cs[i].bound).s)
					   : cell_str(&t, "");
		cells[4] = cs[i].covered_us <= 0 ? cell_str(&t, "no data")
			   : cell_fmt(&t, "%d%%", (int)(step > 0 ? (double)cs[i].covered_us * 100 / (double)step + 0.5 : 100));
		gaps += cs[i].covered_us <= 0;
		table_add(&t, cells);
	}
	if (arg_legend) {
		int u = charge_unit(arg_charge);
		printf("Charged %s", arg_charge);
		if (u >= 0)
			printf(" (%s)", charge_unit_name(u));
		else
			printf(" (units not known: %s)", charge_units_unknown() ?: "no file of acctd's declares it");
		fputs(" of ", stdout);
		print_text(stdout, jstr(answer, "cgroup") ?: "?");
		printf(", its subtree's value as recorded:\n");
	}
	table_print(stdout, &t, arg_legend, output_width());
	if (arg_legend)
		printf("\n%zu step%s of %s, %zu without a value (before its first charge, acctd not recording, or the "
		       "cgroup removed).\n",
		       n, n == 1 ? "" : "s", fmt_duration(step).s, gaps);
}

static void draw_charge_plot(struct json_object *answer, const struct charge_step *cs, size_t n, unsigned height)
{
	_cleanup_free_ double *v = xcalloc(n, sizeof(double));
	_cleanup_free_ char *what = NULL, *title = NULL;
	int u = charge_unit(arg_charge);

	what = u >= 0 ? xasprintf("Charged %s (%s, mean of each step)", arg_charge, charge_unit_name(u))
		      : xasprintf("Charged %s (mean of each step; units not known)", arg_charge);
	title = plot_title(what, jstr(answer, "cgroup") ?: "?");
	for (size_t i = 0; i < n; i++)
		v[i] = cs[i].mean; /* NAN: a gap, not zero */
	struct plot_series s = {
		.title = title,
		.unit = charge_plot_units[charge_plot_unit()].plot,
		.values = v,
		.n = n,
		.start_us = (uint64_t)jint_or(answer, "since_us", 0),
		.step_us = (uint64_t)jint_or(answer, "step_us", 1),
	};
	if (plot_draw(stdout, &s, plot_width(), height, utf8) < 0)
		printf("%s: the terminal is too narrow for a plot.\n", title);
}

/* history --charge=NAME: the History call for "charges.NAME" alone, and its
 * plot (on a terminal, or with --plot=charge), table, CSV (the points, raw)
 * or JSON. */
static int history_charge(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	_cleanup_json_ struct json_object *answer = NULL;
	_cleanup_free_ struct charge_step *cs = NULL;
	_cleanup_free_ char *quantity = xasprintf("charges.%s", arg_charge);
	struct json_object *q;
	bool plotting;
	int64_t since, until;
	size_t n;
	int r;

	if (arg_plot != PLOT_DEFAULT && arg_plot != PLOT_NONE && arg_plot != PLOT_CHARGE)
		return usage_error("--charge plots the charged resource: --plot may be charge or none with it.");
	plotting = !arg_json && !arg_csv && (arg_plot == PLOT_CHARGE || (arg_plot == PLOT_DEFAULT && stdout_tty));
	/* the unit first: it sizes the plot's labels, and so its steps */
	if (!arg_json)
		charge_units_load();
	json_add(params, "cgroup", json_cgroup_arg(args[0]));
	r = history_window(params, &since, &until);
	if (r != EXIT_OK)
		return r;
	r = add_step(params, since, until, plotting, charge_plot_units[charge_plot_unit()].plot);
	if (r != EXIT_OK)
		return r;
	q = xjson(json_object_new_array());
	if (json_object_array_add(q, xjson(json_object_new_string(quantity))) < 0)
		oom_exit();
	json_add(params, "quantities", q);

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	r = history_call(c, "History", params, "steps", &answer);
	if (r != EXIT_OK)
		return r;
	n = json_object_array_length(jget(answer, "steps"));

	pager_open();
	if (arg_json == JSON_LINES) {
		struct json_object *pts = charge_points(answer);
		for (size_t i = 0; pts && i < json_object_array_length(pts); i++)
			print_json(stdout, json_object_array_get_idx(pts, i));
		return EXIT_OK;
	}
	if (arg_json) {
		print_json(stdout, answer);
		return EXIT_OK;
	}
	if (arg_csv) {
		print_charge_csv(answer);
		return EXIT_OK;
	}
	cs = charge_steps(answer, n);
	if (plotting) {
		unsigned height = term_lines > 6 ? term_lines - 6 : PLOT_MIN_HEIGHT;
		draw_charge_plot(answer, cs, n, MAX(PLOT_MIN_HEIGHT, MIN(height, 16u)));
	} else
		print_charge_table(answer, cs, n);
	return EXIT_OK;
}

int verb_history(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	_cleanup_json_ struct json_object *answer = NULL;
	struct json_object *steps, *q;
	enum plot_choice first = PLOT_NONE, second = PLOT_NONE;
	int64_t since, until;
	int r;

	if (arg_charge)
		return history_charge(args);
	if (arg_plot == PLOT_CHARGE)
		return usage_error("--plot=charge needs --charge=NAME.");
	/* what to draw: memory and CPU on a terminal, the chosen one anywhere */
	if (!arg_json && !arg_csv) {
		if (arg_plot == PLOT_DEFAULT && stdout_tty) {
			first = PLOT_MEMORY;
			second = PLOT_CPU;
		} else if (arg_plot != PLOT_DEFAULT)
			first = arg_plot;
	}

	json_add(params, "cgroup", json_cgroup_arg(args[0]));
	r = history_window(params, &since, &until);
	if (r != EXIT_OK)
		return r;
	r = add_step(params, since, until, first != PLOT_NONE, first != PLOT_NONE ? plots[first].unit : PLOT_COUNT);
	if (r != EXIT_OK)
		return r;
	if (first != PLOT_NONE) {
		q = xjson(json_object_new_array());
		json_object_array_add(q, xjson(json_object_new_string(plots[first].quantity)));
		if (second != PLOT_NONE)
			json_object_array_add(q, xjson(json_object_new_string(plots[second].quantity)));
		json_add(params, "quantities", q);
	}

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	r = history_call(c, "History", params, "steps", &answer);
	if (r != EXIT_OK)
		return r;
	steps = jget(answer, "steps");

	pager_open();
	if (arg_json == JSON_LINES) {
		for (size_t i = 0; i < json_object_array_length(steps); i++)
			print_json(stdout, json_object_array_get_idx(steps, i));
	} else if (arg_json)
		print_json(stdout, answer);
	else if (arg_csv)
		print_csv(steps);
	else if (first == PLOT_NONE)
		print_table(answer, steps);
	else {
		/* each plot: its title, rows, the axis and the times, in the
		 * terminal's height */
		unsigned nplots = second != PLOT_NONE ? 2 : 1;
		unsigned height = term_lines > 4 * nplots + 2 ? (term_lines - 2) / nplots - 4 : PLOT_MIN_HEIGHT;

		height = MAX(PLOT_MIN_HEIGHT, MIN(height, 16u));
		draw_plot(answer, steps, first, height);
		if (second != PLOT_NONE) {
			putchar('\n');
			draw_plot(answer, steps, second, height);
		}
	}
	return EXIT_OK;
}
