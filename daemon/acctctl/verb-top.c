/* verb-top.c - `acctctl top`: a live view of the cgroups refreshed every
 * interval, like systemd-cgtop. Full screen with single keys on a terminal;
 * otherwise (-b) one table per iteration, or one JSON object with --json.
 * READ/s and WRITE/s are, as systemd-cgtop's Input/s and Output/s, the block
 * I/O between two refreshes (from acctd's totals and their ages).
 * Where colour is wanted (terminal.h colors_enabled()) the column headers are
 * a reverse-video bar, a figure that grew since the refresh before is bold,
 * and pressure is yellow from PSI_WARN % and red from PSI_ALERT %. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acctctl.h"
#include "columns.h"
#include "ctl-call.h"
#include "human.h"
#include "rows.h"
#include "terminal.h"
#include "verbs.h"

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A cgroup's I/O totals as one refresh saw them, and the rates since the
 * refresh before. */
struct io_seen {
	char *path;     /* in the history's arena */
	int64_t read, write;
	int64_t at_us;  /* when acctd read them: our clock minus their age */
	bool has_rate;
	double read_rate, write_rate;
};

/* What each key does, shown by ? over the table until the next key. */
static bool help_shown;
static const char *const key_help[] = {
	"acctctl top: keys",
	"",
	"  m   sort by memory             c   sort by CPU (the default)",
	"  l   sort by load (1 min)       p   sort by pressure (largest PSI avg10)",
	"  i   sort by I/O (read/s + write/s)",
	"  t   sort by tasks              n   sort by path",
	"  space   refresh now            q   quit (also ^C)",
	"  ?   this help; any key returns to the table",
	"",
	"Colours (--color, NO_COLOR): bold, a figure that grew since the refresh",
	"before; pressure yellow from 10%, red from 40%.",
	"LOAD~: warming up (counted for under a minute, from 0: reads low until then).",
	"Columns, bounds and ages: acctctl list --help, man acctctl.",
};

/* The previous refresh's totals, sorted by path. */
struct io_history {
	struct io_seen *v;
	size_t n;
	struct arena strings;
};

static void io_history_done(struct io_history *h)
{
	free(h->v);
	arena_done(&h->strings);
	*h = (struct io_history){ 0 };
}

static int io_seen_cmp(const void *a, const void *b)
{
	return strcmp(((const struct io_seen *)a)->path, ((const struct io_seen *)b)->path);
}

/* Two readings of a total closer than this are one reading seen twice (acctd
 * read nothing new between two refreshes; the difference is the calls'
 * latency): the rates of the one before stay. */
#define SAME_READING_US 5000

/* Replace each row's I/O rates by those between this refresh (its List
 * received at now_us) and the previous one in h, and remember this one in h.
 * A cgroup new since then (or whose totals went back: a new cgroup of the
 * same name) keeps acctd's rates over its last fast interval. */
static void io_rates(struct rows *rs, struct io_history *h, int64_t now_us)
{
	struct io_history next = { .v = xcalloc(rs->n, sizeof(struct io_seen)) };

	for (size_t i = 0; i < rs->n; i++) {
		struct row *r = &rs->v[i];
		struct io_seen key = { .path = (char *)r->path }, *p, *e;

		if (!r->io_read_total.set || !r->io_write_total.set)
			continue;
		e = &next.v[next.n++];
		*e = (struct io_seen){ .path = arena_strdup(&next.strings, r->path),
				       .read = r->io_read_total.value,
				       .write = r->io_write_total.value,
				       .at_us = now_us - MAX(r->io_read_total.age_us, (int64_t)0) };
		p = h->n ? bsearch(&key, h->v, h->n, sizeof(*h->v), io_seen_cmp) : NULL;
		if (!p || e->read < p->read || e->write < p->write)
			continue;
		if (e->at_us - p->at_us < SAME_READING_US) {
			char *path = e->path;
			*e = *p;
			e->path = path;
		} else {
			double span_s = (double)(e->at_us - p->at_us) / 1e6;
			e->has_rate = true;
			e->read_rate = (double)(e->read - p->read) / span_s;
			e->write_rate = (double)(e->write - p->write) / span_s;
		}
		if (!e->has_rate)
			continue;
		r->has_io = true;
		r->io_read = e->read_rate;
		r->io_write = e->write_rate;
		if (r->obj) { /* --json says what the table would */
			json_add(r->obj, "io_read_bytes_rate", json_object_new_double(e->read_rate));
			json_add(r->obj, "io_write_bytes_rate", json_object_new_double(e->write_rate));
		}
	}
	qsort(next.v, next.n, sizeof(*next.v), io_seen_cmp);
	io_history_done(h);
	*h = next;
}

/* Pressure (PSI "some" avg10, %) from which a cell is yellow, and red: 10%
 * is where a workload starts to feel the stalls, 40% where it mostly waits. */
#define PSI_WARN 10.0
#define PSI_ALERT 40.0

/* A cgroup's figures as a refresh showed them (text: the cell; NULL where the
 * column is not shown), and which of them grew since the refresh before. */
struct shown {
	const char *path;
	double value[_COLUMN_MAX];
	const char *text[_COLUMN_MAX];
	uint32_t grew; /* 1u << enum column */
};
_Static_assert(_COLUMN_MAX <= 32, "struct shown's grew has a bit per column");

/* The last refresh's figures, sorted by path; a redraw (a key, a resize)
 * shows its `grew` again instead of comparing the figures with themselves. */
struct shown_frame {
	struct shown *v;
	size_t n;
	struct arena strings;
};

static void shown_frame_done(struct shown_frame *f)
{
	free(f->v);
	arena_done(&f->strings);
	*f = (struct shown_frame){ 0 };
}

static int shown_cmp(const void *a, const void *b)
{
	return strcmp(((const struct shown *)a)->path, ((const struct shown *)b)->path);
}

static const struct shown *shown_find(const struct shown_frame *f, const char *path)
{
	struct shown key = { .path = path };
	return f->n ? bsearch(&key, f->v, f->n, sizeof(*f->v), shown_cmp) : NULL;
}

/* Row r's figure in column c, for the columns where "grew" means something
 * (not the bound, the age, the path). */
static bool row_figure(const struct row *r, enum column c, double *ret)
{
	switch (c) {
	case COLUMN_MEMORY:
		*ret = (double)r->mem.value;
		return r->mem.set;
	case COLUMN_CPU:
		*ret = r->cpu;
		return r->has_cpu;
	case COLUMN_LOAD:
		*ret = r->load;
		return r->has_load;
	case COLUMN_TASKS:
		*ret = (double)r->tasks.value;
		return r->tasks.set;
	case COLUMN_READ_RATE:
		*ret = r->io_read;
		return r->has_io;
	case COLUMN_WRITE_RATE:
		*ret = r->io_write;
		return r->has_io;
	case COLUMN_READ:
		*ret = (double)r->io_read_total.value;
		return r->io_read_total.set;
	case COLUMN_WRITE:
		*ret = (double)r->io_write_total.value;
		return r->io_write_total.set;
	default:
		return false;
	}
}

/* After a refresh: remember what t (made from rs with cols) shows in *f,
 * marking the figures that are larger than in *f before and whose cell
 * changed (a difference too small to see is not news). */
static void shown_update(struct shown_frame *f, const struct rows *rs, const struct columns *cols,
			 const struct table *t)
{
	struct shown_frame next = { .v = xcalloc(MAX(t->nrows, (size_t)1), sizeof(struct shown)) };

	for (size_t k = 0; k < t->nrows; k++) {
		const struct row *r = &rs->v[rs->order[k]];
		struct shown *e = &next.v[next.n++];
		const struct shown *before = shown_find(f, r->path);

		e->path = arena_strdup(&next.strings, r->path);
		for (size_t i = 0; i < cols->n; i++) {
			enum column c = cols->v[i];
			const char *cell = t->cells[k * t->ncols + i];

			if (!row_figure(r, c, &e->value[c]))
				continue;
			e->text[c] = arena_strdup(&next.strings, cell);
			if (before && before->text[c] && e->value[c] > before->value[c] &&
			    strcmp(before->text[c], cell) != 0)
				e->grew |= 1u << c;
		}
	}
	qsort(next.v, next.n, sizeof(*next.v), shown_cmp);
	shown_frame_done(f);
	*f = next;
}

/* Colour t's header and cells: what grew since the refresh before (f),
 * and pressure by its level. */
static void top_style(struct table *t, const struct rows *rs, const struct columns *cols,
		      const struct shown_frame *f)
{
	table_style(t, TABLE_HEADER, 0, STYLE_HEADER);
	for (size_t k = 0; k < t->nrows; k++) {
		const struct row *r = &rs->v[rs->order[k]];
		const struct shown *s = shown_find(f, r->path);

		for (size_t i = 0; i < cols->n; i++) {
			enum column c = cols->v[i];
			int psi = c == COLUMN_PSI_CPU ? 0 : c == COLUMN_PSI_MEM ? 1 : c == COLUMN_PSI_IO ? 2 : -1;

			if (psi >= 0 && r->has_psi[psi] && r->psi[psi] >= PSI_WARN)
				table_style(t, k, i, r->psi[psi] >= PSI_ALERT ? STYLE_ALERT : STYLE_WARN);
			else if (s && s->grew & 1u << c)
				table_style(t, k, i, STYLE_GREW);
		}
	}
}

/* Draw a frame of rs; `refreshed`: rs is new (not a redraw after a key or a
 * resize), so that with colour what it shows becomes the figures the next
 * refresh compares with (in *shown). */
static void top_frame(struct rows *rs, const struct columns *cols, bool interactive, size_t iteration,
		      struct shown_frame *shown, bool refreshed)
{
	_cleanup_(table_done) struct table t = { 0 };
	size_t dead = 0;

	enum sort_key sort_key = arg_sort >= 0 ? arg_sort : SORT_CPU;

	for (size_t i = 0; i < rs->n; i++)
		dead += rs->v[i].dead;
	rows_table(rs, false, sort_key, 0, cols, &t);
	if (colors_enabled() && !arg_json) {
		if (refreshed)
			shown_update(shown, rs, cols, &t);
		top_style(&t, rs, cols, shown);
	}
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
		fprintf(f, "%sacctd top %s: %zu cgroups, sorted by %s, every %s. Keys: ? help, q quit%s\n",
			t.header_style ? "\033[1m" : "", stamp, rs->n - dead, sort_names[sort_key],
			fmt_duration((int64_t)arg_delay_us).s, t.header_style ? "\033[m" : "");
		fputc('\n', f);
		if (help_shown)
			for (size_t i = 0; i < ELEMENTSOF(key_help); i++)
				fprintf(f, "%s\n", key_help[i]);
		else {
			max_rows = term_lines > 3 ? term_lines - 3 : 1;
			t.nrows = MIN(t.nrows, max_rows); /* the cells stay in the table's arena */
			table_print(f, &t, true, term_columns);
		}
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
			if (json_object_array_add(sorted, columns_json(cols, rs->v[rs->order[i]].obj)) < 0)
				oom_exit();
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
	_cleanup_(io_history_done) struct io_history seen = { 0 };
	_cleanup_(shown_frame_done) struct shown_frame shown = { 0 };
	const char *term = getenv("TERM");
	/* full screen needs a terminal that moves its cursor: not TERM=dumb
	 * (Emacs' shell, a CI log); there a pty gets the plain tables */
	bool interactive = stdout_tty && !arg_batch && !arg_json && !(term && strcmp(term, "dumb") == 0);
	struct columns cols = arg_columns;
	int r;

	if (!cols.given)
		columns_default(&cols, false);
	if (columns_has(&cols, COLUMN_CHARGE) || columns_has(&cols, COLUMN_CHARGE_BOUND))
		return usage_error("-o charge: only list shows a charged resource (list --charge=NAME).");
	if (arg_sort == SORT_CHARGE)
		return usage_error("--sort=charge: only list and usage show a charged resource (--charge=NAME).");
	if (arg_depth == DEPTH_DEFAULT)
		arg_depth = TOP_DEPTH;

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
		io_rates(&rs, &seen, mono_us());
		top_frame(&rs, &cols, interactive, it, &shown, true);
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
						top_frame(&rs, &cols, true, it, &shown, false);
				}
				continue;
			}
			if (k <= 0)
				continue;
			if (read(STDIN_FILENO, &key, 1) != 1)
				continue;
			if (help_shown && key != 'q' && key != 'Q') { /* any key leaves the help */
				help_shown = false;
				top_frame(&rs, &cols, true, it, &shown, false);
				continue;
			}
			switch (key) {
			case '?':
			case 'h':
				help_shown = true;
				break;
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
			case 't':
				arg_sort = SORT_TASKS;
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
				top_frame(&rs, &cols, true, it, &shown, false);
		}
	}
	terminal_restore();
	return EXIT_OK;
}
