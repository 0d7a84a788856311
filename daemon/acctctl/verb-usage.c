/* verb-usage.c - `acctctl usage`: what each cgroup used over a window, from
 * acctd's history (the Usage method): a table with human units and bounds,
 * the window and its gaps below it; or one JSON document (the method's
 * answer, every reply's cgroups in one array), or CSV with raw numbers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acctctl.h"
#include "charge-units.h"
#include "ctl-call.h"
#include "ctl-util.h"
#include "history-call.h"
#include "human.h"
#include "pager.h"
#include "rows.h"
#include "table.h"
#include "terminal.h"
#include "verbs.h"

/* The CSV columns: the members of a Usage, a Total's bound beside it. */
static const struct {
	const char *header, *key, *member; /* member: of the Total at key, or NULL for key itself */
} csv_columns[] = {
	{ "path", "path", NULL },
	{ "lives", "lives", NULL },
	{ "subtree_cgroups", "subtree_cgroups", NULL },
	{ "first_seen_us", "first_seen_us", NULL },
	{ "removed_us", "removed_us", NULL },
	{ "recorded_us", "recorded_us", NULL },
	{ "cpu_usec", "cpu_usec", "value" },
	{ "cpu_usec_bound", "cpu_usec", "bound" },
	{ "memory_byte_seconds", "memory_byte_seconds", "value" },
	{ "memory_byte_seconds_bound", "memory_byte_seconds", "bound" },
	{ "memory_avg_bytes", "memory_avg_bytes", NULL },
	{ "memory_max_bytes", "memory_max_bytes", NULL },
	{ "memory_peak_bytes", "memory_peak_bytes", NULL },
	{ "io_read_bytes", "io_read_bytes", "value" },
	{ "io_read_bytes_bound", "io_read_bytes", "bound" },
	{ "io_write_bytes", "io_write_bytes", "value" },
	{ "io_write_bytes_bound", "io_write_bytes", "bound" },
	{ "resolution", "resolution", NULL },
};

/* The ChargeUsage of resource `name` in Usage u, or NULL when u held none. */
static struct json_object *charge_usage(struct json_object *u, const char *name)
{
	struct json_object *cs = jget(u, "charges");

	for (size_t k = 0; cs && json_object_is_type(cs, json_type_array) && k < json_object_array_length(cs); k++) {
		struct json_object *c = json_object_array_get_idx(cs, k);
		const char *r = jstr(c, "resource");
		if (r && strcmp(r, name) == 0)
			return c;
	}
	return NULL;
}

/* --charge's CSV columns, named as the others are, with their unit: the
 * integral (unit x seconds) and its bound, the average and the largest
 * value in the unit, the time recorded. */
static const struct {
	int unit;			  /* enum acct_unit, or -ENOENT: not known */
	const char *integral, *plain; /* "charge_gpu_" + integral; "charge_gpu_avg" + plain */
} csv_charge_units[] = {
	{ ACCT_UNIT_BYTES, "byte_seconds", "_bytes" },
	{ ACCT_UNIT_COUNT, "count_seconds", "" },
	{ ACCT_UNIT_USEC, "usec_seconds", "_usec" },
	{ -ENOENT, "value_seconds", "" },
};

static void print_csv_charge_header(const char *name)
{
	int u = charge_unit(name);

	for (size_t i = 0; i < ELEMENTSOF(csv_charge_units); i++)
		if (csv_charge_units[i].unit == u || csv_charge_units[i].unit == -ENOENT) {
			const char *in = csv_charge_units[i].integral, *pl = csv_charge_units[i].plain;
			/* "charge_": a resource may be named as a column is (memory) */
			printf(",charge_%s_%s,charge_%s_%s_bound,charge_%s_avg%s,charge_%s_max%s,charge_%s_recorded_us", name,
			       in, name, in, name, pl, name, pl, name);
			return;
		}
}

static void print_csv_charge(struct json_object *u, const char *name)
{
	struct json_object *c = charge_usage(u, name), *vs = jget(c, "value_seconds");

	fputs(",", stdout);
	csv_number(stdout, vs, "value");
	fputs(",", stdout);
	csv_number(stdout, vs, "bound");
	fputs(",", stdout);
	csv_number(stdout, c, "avg");
	fputs(",", stdout);
	csv_number(stdout, c, "max");
	fputs(",", stdout);
	csv_number(stdout, c, "recorded_us");
}

static void print_csv(struct json_object *cgroups)
{
	for (size_t i = 0; i < ELEMENTSOF(csv_columns); i++)
		printf("%s%s", i ? "," : "", csv_columns[i].header);
	if (arg_charge)
		print_csv_charge_header(arg_charge);
	putchar('\n');
	for (size_t r = 0; r < json_object_array_length(cgroups); r++) {
		struct json_object *u = json_object_array_get_idx(cgroups, r);

		for (size_t i = 0; i < ELEMENTSOF(csv_columns); i++) {
			struct json_object *o = u;
			const char *key = csv_columns[i].key;

			if (i)
				putchar(',');
			if (csv_columns[i].member) {
				o = jget(u, key);
				key = csv_columns[i].member;
			}
			if (jstr(o, key))
				csv_text(stdout, jstr(o, key));
			else
				csv_number(stdout, o, key);
		}
		if (arg_charge)
			print_csv_charge(u, arg_charge);
		putchar('\n');
	}
}

enum {
	U_PATH,
	U_SUBTREE,
	U_CPU,
	U_CPU_BOUND,
	U_MEM_AVG,
	U_MEM_AVG_BOUND,
	U_MEM_MAX,
	U_PEAK,
	U_READ,
	U_WRITE,
	U_RECORDED,
	U_REMOVED,
	_U_MAX,
};
static const char *const usage_headers[_U_MAX] = {
	"CGROUP", "BELOW", "CPU", "", "MEM AVG", "", "MEM MAX", "PEAK", "READ", "WRITE", "RECORDED", "REMOVED",
};
static unsigned usage_flags[_U_MAX] = {
	[U_PATH] = COL_ELLIPSIZE,
	[U_SUBTREE] = COL_RIGHT | COL_HIDDEN, /* shown with --group-by-level */
	[U_CPU] = COL_RIGHT,
	[U_CPU_BOUND] = COL_TIGHT,
	[U_MEM_AVG] = COL_RIGHT,
	[U_MEM_AVG_BOUND] = COL_TIGHT,
	[U_MEM_MAX] = COL_RIGHT,
	[U_PEAK] = COL_RIGHT,
	[U_READ] = COL_RIGHT,
	[U_WRITE] = COL_RIGHT,
	[U_RECORDED] = COL_RIGHT,
	[U_REMOVED] = 0,
};

/* A Total's value in human units ("-" when absent) and its bound ("" when 0). */
static void total_cells(struct table *t, struct json_object *total, bool bytes, char **value, char **bound)
{
	int64_t v, b;

	if (!jint(total, "value", &v)) {
		*value = cell_str(t, "-");
		*bound = cell_str(t, "");
		return;
	}
	b = jint_or(total, "bound", 0);
	*value = cell_str(t, bytes ? fmt_bytes(v).s : fmt_duration(v).s);
	*bound = b > 0 ? cell_fmt(t, "%s%s", glyph(G_PLUSMINUS), bytes ? fmt_bytes(b).s : fmt_duration(b).s)
		       : cell_str(t, "");
}

static char *bytes_cell(struct table *t, struct json_object *o, const char *key)
{
	double d;

	return jdouble(o, key, &d) ? cell_str(t, fmt_bytes((int64_t)(d + 0.5)).s) : cell_str(t, "-");
}

static void usage_row(struct table *t, struct json_object *u, bool date)
{
	char *cells[_U_MAX], *io_bound; /* I/O bounds: in --json and --csv; the table keeps one column each */
	struct json_object *bs = jget(u, "memory_byte_seconds");
	int64_t recorded = jint_or(u, "recorded_us", 0), removed;
	double bound;

	cells[U_PATH] = cell_str(t, jstr(u, "path") ?: "?");
	cells[U_SUBTREE] = cell_fmt(t, "%" PRId64, jint_or(u, "subtree_cgroups", 0));
	total_cells(t, jget(u, "cpu_usec"), false, &cells[U_CPU], &cells[U_CPU_BOUND]);
	if (jbool(u, "cpu_clipped") && arg_legend) /* "*": cut to the CPUs (the footer says) */
		cells[U_CPU] = cell_fmt(t, "%s*", cells[U_CPU]);
	cells[U_MEM_AVG] = bytes_cell(t, u, "memory_avg_bytes");
	/* the average's bound: the byte-seconds' over the seconds recorded */
	cells[U_MEM_AVG_BOUND] = jdouble(bs, "bound", &bound) && bound > 0 && recorded > 0
					 ? cell_fmt(t, "%s%s", glyph(G_PLUSMINUS),
						    fmt_bytes((int64_t)(bound / ((double)recorded / 1e6) + 0.5)).s)
					 : cell_str(t, "");
	cells[U_MEM_MAX] = bytes_cell(t, u, "memory_max_bytes");
	cells[U_PEAK] = bytes_cell(t, u, "memory_peak_bytes");
	total_cells(t, jget(u, "io_read_bytes"), true, &cells[U_READ], &io_bound);
	total_cells(t, jget(u, "io_write_bytes"), true, &cells[U_WRITE], &io_bound);
	cells[U_RECORDED] = cell_str(t, fmt_duration(recorded).s);
	cells[U_REMOVED] = jint(u, "removed_us", &removed) ? cell_str(t, history_time(removed, date).s) : cell_str(t, "");
	table_add(t, cells);
}

/* What --sort ranks a Usage by: a Total's value or a plain number, or two
 * Totals' sum (io). The keys of `list` that have no meaning over a window
 * (load, pressure, tasks, the rates) have no row. */
static const struct {
	enum sort_key key;
	const char *total[2]; /* Totals whose values add up (NULL: none) */
	const char *number;   /* or a plain number */
	const char *title;    /* for the footer: "by TITLE" */
} usage_sorts[] = {
	{ SORT_CPU, { "cpu_usec" }, NULL, "CPU time" },
	{ SORT_MEMORY, {}, "memory_avg_bytes", "average memory" },
	{ SORT_IO, { "io_read_bytes", "io_write_bytes" }, NULL, "I/O read and written" },
	{ SORT_READ, { "io_read_bytes" }, NULL, "I/O read" },
	{ SORT_WRITE, { "io_write_bytes" }, NULL, "I/O written" },
	{ SORT_CHARGE, {}, NULL, NULL }, /* --charge's integral (usage_figure()), by its name */
};
static int usage_sort = -1; /* index into usage_sorts; -1: by path */

/* The figure a Usage is ranked by; false where it has none. */
static bool usage_figure(struct json_object *u, double *ret)
{
	bool any = false;
	double sum = 0, d;

	if (usage_sorts[usage_sort].key == SORT_CHARGE) {
		/* the resource's value x time; a cgroup that held none has no
		 * ChargeUsage: it ranks as 0 (the table of charges leaves it out) */
		if (!jdouble(jget(charge_usage(u, arg_charge), "value_seconds"), "value", ret))
			*ret = 0;
		return true;
	}
	if (usage_sorts[usage_sort].number) {
		if (!jdouble(u, usage_sorts[usage_sort].number, &d))
			return false;
		*ret = d;
		return true;
	}
	for (size_t i = 0; i < ELEMENTSOF(usage_sorts[0].total) && usage_sorts[usage_sort].total[i]; i++)
		if (jdouble(jget(u, usage_sorts[usage_sort].total[i]), "value", &d)) {
			sum += d;
			any = true;
		}
	*ret = sum;
	return any;
}

/* By path; or largest figure first, Usages without it last, ties by path
 * (list's order: rows.c). */
static int usage_cmp(const void *a, const void *b)
{
	struct json_object *x = *(struct json_object *const *)a, *y = *(struct json_object *const *)b;

	if (usage_sort >= 0) {
		double fx = 0, fy = 0;
		bool hx = usage_figure(x, &fx), hy = usage_figure(y, &fy);

		if (hx != hy)
			return hx ? -1 : 1;
		if (fx != fy)
			return fx > fy ? -1 : 1;
	}
	return strcmp(jstr(x, "path") ?: "", jstr(y, "path") ?: "");
}

/* usage_sort from --sort (and --top, which ranks by CPU unless told);
 * returns an exit status. */
static int pick_usage_sort(void)
{
	int key = arg_sort >= 0 ? arg_sort : arg_top > 0 ? SORT_CPU : SORT_PATH;

	usage_sort = -1;
	if (key == SORT_PATH)
		return EXIT_OK;
	if (key == SORT_CHARGE && !arg_charge)
		return usage_error("--sort=charge: name the charged resource with --charge=NAME.");
	for (size_t i = 0; i < ELEMENTSOF(usage_sorts); i++)
		if (usage_sorts[i].key == (enum sort_key)key) {
			usage_sort = (int)i;
			return EXIT_OK;
		}
	return usage_error("Sort key '%s' has no meaning over a window: usage sorts by path, cpu, memory, io, read, "
			   "write or charge.",
			   sort_names[key]);
}

/* Below the table: the window, and the gaps in it. A gap that runs to the
 * end of a window ending now or later is the time since acctd's last
 * recording (and the future), not a time acctd was down: said apart. */
static void print_footer(struct json_object *answer, size_t n, size_t total, bool date)
{
	struct json_object *gaps = jget(answer, "gaps");
	int64_t since = jint_or(answer, "since_us", 0), until = jint_or(answer, "until_us", 0);
	size_t ngaps = gaps && json_object_is_type(gaps, json_type_array) ? json_object_array_length(gaps) : 0;
	int64_t now = (int64_t)arg_now_us, pending_from = -1;
	size_t past = 0;

	if (n < total) /* --top */
		printf("\nThe first %zu of %zu cgroups by %s, from %s", n, total,
		       usage_sort < 0			     ? "path"
		       : usage_sorts[usage_sort].key == SORT_CHARGE ? arg_charge
								    : usage_sorts[usage_sort].title,
		       history_time(since, true).s);
	else
		printf("\n%zu cgroup%s, from %s", n, n == 1 ? "" : "s", history_time(since, true).s);
	printf(" to %s (%s).\n", history_time(until, date).s, fmt_duration(until - since).s);
	for (size_t i = 0; i < ngaps; i++) {
		struct json_object *g = json_object_array_get_idx(gaps, i);
		/* a few seconds of slack: a --until of a moment ago still ends in
		 * the time since the last recording */
		if (jint_or(g, "to_us", 0) >= until && until >= now - 5 * INT64_C(1000000))
			pending_from = jint_or(g, "from_us", 0);
		else
			past++;
	}
	if (past > 0) {
		printf("No data (acctd was not recording) in %zu gap%s:", past, past == 1 ? "" : "s");
		for (size_t i = 0, k = 0; i < ngaps; i++) {
			struct json_object *g = json_object_array_get_idx(gaps, i);
			int64_t from = jint_or(g, "from_us", 0), to = jint_or(g, "to_us", 0);

			if (pending_from >= 0 && i == ngaps - 1)
				break;
			printf("%s %s to %s (%s)", k++ ? "," : "", history_time(from, date).s, history_time(to, date).s,
			       fmt_duration(to - from).s);
		}
		printf(".\n");
	}
	if (pending_from >= 0 && until > pending_from) /* a window ending at the last recording has none */
		printf("Not recorded yet: from %s (acctd's last recording) to %s%s.\n", history_time(pending_from, date).s,
		       history_time(until, date).s, until > now ? " (the future)" : "");
	size_t clipped = 0;
	for (size_t i = 0; i < n; i++)
		clipped += jbool(json_object_array_get_idx(jget(answer, "cgroups"), i), "cpu_clipped");
	if (clipped > 0)
		printf("CPU*: its bound (and the value, where it lay outside) cut to what the host's CPUs allow\n"
		       "in the window, %s x %ld CPUs: the recordings at the window's ends, or around a gap\n"
		       "or a stall, allowed more (docs/history.md).\n",
		       fmt_duration(until - since).s, MAX(sysconf(_SC_NPROCESSORS_CONF), 1L));
	size_t no_peak = 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *u = json_object_array_get_idx(jget(answer, "cgroups"), i);
		no_peak += jget(u, "memory_max_bytes") && !jget(u, "memory_peak_bytes");
	}
	if (no_peak > 0) /* "-" under PEAK looks like a missing read: it is not one */
		printf("PEAK -: the kernel's peak spans a cgroup's whole life, so it is given only for cgroups acctd\n"
		       "saw created in the window; MEM MAX is the largest value recorded.\n");
	/* The one bound acctctl prints that is not |value - exact| <= N in
	 * every case (acctctl --help): said where it is shown. */
	if (n > 0)
		printf("MEM AVG's %s assumes memory moved steadily between two recordings: it covers a rise above the\n"
		       "cgroup's earlier peak, not a brief rise below that peak or a dip (acctctl(1), usage).\n",
		       glyph(G_PLUSMINUS));
}

/* --charge: below the table, a table of the cgroups that held the
 * resource: what they held (the integral, value x time, in the resource's
 * unit x the time unit that suits the time recorded) with its bound, the
 * average and the largest value, the time recorded. Raw numbers where the
 * unit is not known (charge-units.h), as --json has them. */
static void print_charges(struct json_object *cgroups, size_t n)
{
	static const char *const ch[] = { "CGROUP", "HELD", "", "AVG", "MAX", "RECORDED" };
	static const unsigned cf[] = { COL_ELLIPSIZE, COL_RIGHT, COL_TIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT };
	_cleanup_(table_done) struct table t = { 0 };
	int unit = charge_unit(arg_charge);

	table_init(&t, ELEMENTSOF(ch), ch, cf);
	for (size_t i = 0; i < n; i++) {
		struct json_object *u = json_object_array_get_idx(cgroups, i), *c = charge_usage(u, arg_charge);
		struct json_object *vs = jget(c, "value_seconds");
		int64_t recorded = jint_or(c, "recorded_us", 0), max;
		double bound = jdouble_or(vs, "bound", 0), avg;
		char *cells[ELEMENTSOF(ch)];

		if (!c)
			continue;
		cells[0] = cell_str(&t, jstr(u, "path") ?: "?");
		cells[1] = cell_str(&t, fmt_charge_integral(unit, jdouble_or(vs, "value", 0), recorded).s);
		cells[2] = bound > 0 ? cell_fmt(&t, "%s%s", glyph(G_PLUSMINUS), fmt_charge_integral(unit, bound, recorded).s)
				     : cell_str(&t, "");
		/* a count's average has decimals, as a load's; the others are rounded as their values */
		cells[3] = !jdouble(c, "avg", &avg) ? cell_str(&t, "-")
			   : unit < 0		    ? cell_fmt(&t, "%.6g", avg)
			   : unit == ACCT_UNIT_COUNT ? cell_str(&t, fmt_2f(avg).s)
						    : cell_str(&t, fmt_charge(arg_charge, (int64_t)(avg < 0 ? avg - 0.5 : avg + 0.5)).s);
		cells[4] = jint(c, "max", &max) ? cell_str(&t, fmt_charge(arg_charge, max).s) : cell_str(&t, "-");
		cells[5] = cell_str(&t, fmt_duration(recorded).s);
		table_add(&t, cells);
	}
	if (t.nrows == 0) {
		printf("\nNo cgroup here held charged resource %s in this window.\n", arg_charge);
		return;
	}
	putchar('\n');
	if (arg_legend) {
		if (unit < 0)
			printf("Charged %s, value x seconds over the time recorded (units not known: %s):\n", arg_charge,
			       charge_units_unknown() ?: "no file of acctd's declares it");
		else
			printf("Charged %s (%s), held over the time recorded (value x time%s):\n", arg_charge,
			       charge_unit_name(unit), unit == ACCT_UNIT_COUNT ? ": 3 held for an hour is 3h" : "");
	}
	table_print(stdout, &t, arg_legend, output_width());
}

int verb_usage(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_json_ struct json_object *answer = NULL;
	_cleanup_(table_done) struct table t = { 0 };
	struct json_object *cgroups;
	size_t n, total;
	bool date;
	int r;

	if (args[0] && arg_prefix)
		return usage_error("Give CGROUPs or --prefix, not both.");
	r = pick_usage_sort();
	if (r != EXIT_OK)
		return r;
	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	/* one call for the prefix, or one per CGROUP (that cgroup alone, or its
	 * subtree to --depth), their cgroups in one answer */
	for (size_t i = 0; i == 0 || (args[0] && args[i]); i++) {
		_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
		_cleanup_json_ struct json_object *part = NULL;
		const char *prefix = args[0] ? args[i] : arg_prefix;
		int depth = args[0] ? 0 : -1;
		int64_t since, until;

		if (arg_depth >= 0)
			depth = arg_depth;
		r = history_window(params, &since, &until);
		if (r != EXIT_OK)
			return r;
		if (prefix)
			json_add(params, "prefix", json_cgroup_arg(prefix));
		if (depth >= 0)
			json_add(params, "depth", json_object_new_int(depth));
		json_add(params, "include_removed", json_object_new_boolean(!arg_no_removed));
		if (arg_group_level > 0)
			json_add(params, "group_by_level", json_object_new_int(arg_group_level));
		if (arg_charge) {
			struct json_object *names = xjson(json_object_new_array());
			if (json_object_array_add(names, xjson(json_object_new_string(arg_charge))) < 0)
				oom_exit();
			json_add(params, "charges", names);
		}
		r = history_call(c, "Usage", params, "cgroups", &part);
		if (r != EXIT_OK)
			return r;
		if (!answer) {
			answer = TAKE_PTR(part);
			continue;
		}
		cgroups = jget(part, "cgroups");
		for (size_t k = 0; k < json_object_array_length(cgroups); k++)
			if (json_object_array_add(jget(answer, "cgroups"),
						  json_object_get(json_object_array_get_idx(cgroups, k))) < 0)
				oom_exit();
	}
	cgroups = jget(answer, "cgroups");
	json_object_array_sort(cgroups, usage_cmp);
	n = total = json_object_array_length(cgroups);
	if (arg_top > 0 && n > arg_top) { /* every output keeps the first N: --json's document too */
		if (json_object_array_del_idx(cgroups, (size_t)arg_top, n - (size_t)arg_top) < 0)
			oom_exit();
		n = (size_t)arg_top;
	}
	if (arg_charge && !arg_json)
		charge_units_load();
	pager_open();
	if (arg_json == JSON_LINES) {
		for (size_t i = 0; i < n; i++)
			print_json(stdout, json_object_array_get_idx(cgroups, i));
		return EXIT_OK;
	}
	if (arg_json) {
		print_json(stdout, answer);
		return EXIT_OK;
	}
	if (arg_csv) {
		print_csv(cgroups);
		return EXIT_OK;
	}
	/* dates on the times when the window spans more than today */
	date = jint_or(answer, "until_us", 0) - jint_or(answer, "since_us", 0) > INT64_C(86400000000);
	if (arg_group_level > 0)
		usage_flags[U_SUBTREE] &= ~COL_HIDDEN;
	table_init(&t, _U_MAX, usage_headers, usage_flags);
	for (size_t i = 0; i < n; i++)
		usage_row(&t, json_object_array_get_idx(cgroups, i), date);
	table_print(stdout, &t, arg_legend, output_width());
	if (arg_charge)
		print_charges(cgroups, n);
	if (arg_legend)
		print_footer(answer, n, total, date);
	if (arg_legend && n == 0) {
		/* a known path without data here (a typo is NoSuchCgroup) */
		if (args[0] && args[1])
			fputs("None of the cgroups named has data in this window", stdout);
		else {
			fputs("No cgroup at or under ", stdout);
			print_text(stdout, args[0] ?: arg_prefix ?: "/");
			fputs(" has data in this window", stdout);
		}
		if (arg_group_level > 0)
			printf(" %d level%s below the root", arg_group_level, arg_group_level == 1 ? "" : "s");
		fputs(".\n", stdout);
	}
	return EXIT_OK;
}
