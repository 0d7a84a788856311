/* verb-history.c - `acctctl history CGROUP`: one cgroup's history in steps
 * (the History method): on a terminal a plot of its memory with its CPU rate
 * below (plot.h), else a table of the steps; or one JSON document, or CSV. A
 * step without data is a gap, never interpolated. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acctctl.h"
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

int verb_history(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	_cleanup_json_ struct json_object *answer = NULL;
	struct json_object *steps, *q;
	enum plot_choice first = PLOT_NONE, second = PLOT_NONE;
	int64_t since, until;
	int r;

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
	} else if (first != PLOT_NONE) {
		/* one step per dot column of the plot; a step shorter than
		 * acctd's recording interval shows that interval's average
		 * (docs/history.md, "Series") */
		struct plot_series probe = { .unit = plots[first].unit };
		unsigned dots = plot_data_columns(&probe, plot_width()) * (utf8 ? 2 : 1);

		json_add(params, "step_us", json_object_new_int64(MAX((until - since) / (int64_t)MAX(dots, 1u), 1)));
	}
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
