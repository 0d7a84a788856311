/* verb-top.c - `acctctl top`: a live view of the cgroups refreshed every
 * interval, like systemd-cgtop. Full screen with single keys on a terminal;
 * otherwise (-b) one table per iteration, or one JSON object with --json. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acctctl.h"
#include "ctl-call.h"
#include "human.h"
#include "rows.h"
#include "terminal.h"

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void top_frame(struct rows *rs, bool interactive, size_t iteration)
{
	_cleanup_(table_done) struct table t = { 0 };
	size_t dead = 0;

	enum sort_key sort_key = arg_sort >= 0 ? arg_sort : SORT_CPU;

	for (size_t i = 0; i < rs->n; i++)
		dead += rs->v[i].dead;
	rows_table(rs, false, sort_key, &t);
	if (interactive) {
		_cleanup_free_ char *frame = NULL;
		size_t size = 0, max_rows;
		FILE *f = open_memstream(&frame, &size);
		char stamp[32];
		time_t now = time(NULL);
		struct tm tm;

		if (!f)
			oom_exit();
		strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&now, &tm));
		fprintf(f, "acctd top %s: %zu cgroups, sorted by %s, every %s. Keys: m c l p n sort, q quit\n", stamp,
			rs->n - dead, sort_names[sort_key], fmt_duration((int64_t)arg_delay_us).s);
		max_rows = term_lines > 3 ? term_lines - 3 : 1;
		t.nrows = MIN(t.nrows, max_rows); /* the cells stay in the table's arena */
		fputc('\n', f);
		table_print(f, &t, true, term_columns);
		fclose(f);
		/* home, then each line clears its rest, then clear below: no flicker */
		fputs("\033[H", stdout);
		for (char *line = frame, *nl; line && *line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			fwrite(line, 1, nl ? (size_t)(nl - line) : strlen(line), stdout);
			/* no newline after the last line: the screen must not scroll */
			fputs(nl && nl[1] ? "\033[K\n" : "\033[K", stdout);
		}
		fputs("\033[J", stdout);
	} else if (arg_json) {
		_cleanup_json_ struct json_object *o = xjson(json_object_new_object());
		_cleanup_json_ struct json_object *sorted = xjson(json_object_new_array());
		for (size_t i = 0; i < rs->norder; i++)
			json_object_array_add(sorted, json_object_get(rs->v[rs->order[i]].obj));
		json_add(o, "iteration", json_object_new_int64((int64_t)iteration));
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		json_add(o, "time_us", json_object_new_int64((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000));
		json_add(o, "cgroups", json_object_get(sorted));
		print_json(stdout, o);
	} else {
		if (iteration > 0)
			putchar('\n');
		table_print(stdout, &t, arg_legend, 0);
	}
	fflush(stdout);
}

int verb_top(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_(rows_done) struct rows rs = { 0 };
	bool interactive = stdout_tty && !arg_batch && !arg_json;
	int r;

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	catch_quit_signals();
	if (interactive) {
		terminal_raw();
		terminal_hide_cursor();
	}
	for (size_t it = 0; !got_quit_signal; it++) {
		int64_t deadline;

		rows_done(&rs);
		r = list_fetch(c, args[0], arg_json, &rs);
		if (r != EXIT_OK) {
			terminal_restore();
			return r;
		}
		if (got_quit_signal)
			break;
		top_frame(&rs, interactive, it);
		if (arg_iterations > 0 && it + 1 >= arg_iterations)
			break;
		deadline = mono_us() + (int64_t)arg_delay_us;
		while (!got_quit_signal) {
			struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
			int64_t left = deadline - mono_us();
			int k;
			char key;

			if (left <= 0)
				break;
			k = poll(&pfd, terminal_is_raw() ? 1 : 0, (int)((left + 999) / 1000));
			if (k < 0 && errno == EINTR) {
				if (got_winch) {
					got_winch = 0;
					probe_terminal();
					if (interactive)
						top_frame(&rs, true, it);
				}
				continue;
			}
			if (k <= 0)
				continue;
			if (read(STDIN_FILENO, &key, 1) != 1)
				continue;
			switch (key) {
			case 'q':
			case 'Q':
				got_quit_signal = -1;
				break;
			case 'm':
				arg_sort = SORT_MEMORY;
				break;
			case 'c':
				arg_sort = SORT_CPU;
				break;
			case 'i':
				arg_sort = SORT_IO;
				break;
			case 'l':
				arg_sort = SORT_LOAD;
				break;
			case 'p':
				arg_sort = SORT_PRESSURE;
				break;
			case 'n':
				arg_sort = SORT_PATH;
				break;
			case ' ':
				deadline = 0; /* refresh now */
				break;
			default:
				continue;
			}
			if (!got_quit_signal && interactive && deadline != 0)
				top_frame(&rs, true, it);
		}
	}
	terminal_restore();
	return EXIT_OK;
}
