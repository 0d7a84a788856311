/* verb-show.c - `acctctl show CGROUP`: every value of one cgroup with its
 * bound, age and exact integer, then pressure, I/O per device, memory per
 * NUMA node and memory.stat, each as a table; or the Get reply's cgroup as
 * JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acctctl.h"
#include "charge-units.h"
#include "ctl-call.h"
#include "ctl-util.h"
#include "human.h"
#include "pager.h"
#include "table.h"
#include "verbs.h"

/* memory.stat keys that count events rather than bytes. */
static bool memstat_is_count(const char *key)
{
	static const char *const prefixes[] = { "pg", "pswp", "workingset_", "thp_", "numa_", "zswpin", "zswpout",
						"zswpwb", "swpin_zero", "swpout_zero", "oom" };
	if (strncmp(key, "total_", 6) == 0)
		key += 6;
	for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
		if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

static const char *const value_order[] = {
	"memory", "memory.working_set", "memory.peak", "memory.max", "memory.high", "swap", "swap.max",
	"cpu.usage", "cpu.user", "cpu.system", "cpu.periods", "cpu.throttled_periods", "cpu.throttled", "tasks",
};

static void show_value_row(struct table *t, const char *name, struct json_object *v)
{
	struct value x = value_of(v);
	enum acct_unit u = quantity_unit(name);
	char *cells[5];

	cells[0] = cell_str(t, name);
	if (!x.set) {
		cells[1] = cell_str(t, "-");
		cells[2] = cell_str(t, "");
		cells[3] = cell_str(t, "never read");
		cells[4] = cell_str(t, "");
	} else {
		cells[1] = cell_str(t, quantity_is_limit(name) && x.value < 0 ? "max" : fmt_unit(u, x.value).s);
		cells[2] = x.bound > 0 ? cell_fmt(t, "%s%s", glyph(G_PLUSMINUS), fmt_unit(u, x.bound).s) : cell_str(t, "");
		cells[3] = cell_str(t, x.age_us >= 0 ? fmt_age(x.age_us).s : "-");
		cells[4] = cell_str(t, fmt_int(x.value).s);
	}
	table_add(t, cells);
}

static const char *age_text(struct json_object *o, char buf[static 80])
{
	int64_t age;
	if (!jint(o, "age_us", &age))
		return "";
	snprintf(buf, 80, ", age %s", fmt_age(age).s);
	return buf;
}

/* "; 5 and 15 min warming up (fed 3 min 10 s, from 0)" for a Load whose
 * warming list is not empty, else NULL: those averages began at 0 when acctd
 * first counted the cgroup's threads, and read low until they cover their
 * window. */
static char *load_warming_text(struct json_object *load)
{
	static const struct {
		const char *key, *name;
	} avgs[] = { { "avg1", "1" }, { "avg5", "5" }, { "avg15", "15" } };
	struct json_object *w = jget(load, "warming");
	size_t n = w && json_object_is_type(w, json_type_array) ? json_object_array_length(w) : 0;
	char names[32] = "";
	size_t k = 0;

	if (n == 0)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(avgs); i++)
		for (size_t j = 0; j < n; j++) {
			const char *s = json_object_get_string(json_object_array_get_idx(w, j));
			if (s && strcmp(s, avgs[i].key) == 0) {
				size_t left = n - ++k; /* names after this one */
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", avgs[i].name,
					 left == 0 ? "" : left == 1 ? " and " : ", ");
			}
		}
	if (k == 0)
		return NULL;
	return xasprintf("; %s min warming up (fed %s, from 0: low until then)", names,
			 fmt_duration(jint_or(load, "covered_us", 0)).s);
}

/* "I/O rate" line: bytes and operations per second, read and written. */
static void show_io_rate(struct json_object *io)
{
	struct json_object *rate = jget(io, "rate");
	char ab[80];

	if (!rate) {
		print_field("I/O rate", "-");
		return;
	}
	print_field("I/O rate", "read %s/s (%.1f ops/s), written %s/s (%.1f ops/s)%s",
		    fmt_bytes((int64_t)(jdouble_or(rate, "read_bytes", 0) + 0.5)).s, jdouble_or(rate, "read_ios", 0),
		    fmt_bytes((int64_t)(jdouble_or(rate, "write_bytes", 0) + 0.5)).s, jdouble_or(rate, "write_ios", 0),
		    age_text(rate, ab));
}

/* I/O per device (cumulative), a column per value the kernel gives. */
static void show_io_devices(struct json_object *io)
{
	static const char *const dh[] = { "DEVICE", "NAME", "READ", "WRITTEN", "READS", "WRITES", "DISCARDED", "DISCARDS" };
	static const unsigned df[] = { 0, 0, COL_RIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT };
	static const struct {
		const char *key;
		bool bytes;
	} cols[] = { { "read_bytes", true },	{ "write_bytes", true },   { "read_ios", false },
		     { "write_ios", false },	{ "discard_bytes", true }, { "discard_ios", false } };
	struct json_object *devs = jget(io, "devices");
	_cleanup_(table_done) struct table t = { 0 };

	if (!devs || !json_object_is_type(devs, json_type_array) || json_object_array_length(devs) == 0)
		return;
	table_init(&t, 8, dh, df);
	for (size_t i = 0; i < json_object_array_length(devs); i++) {
		struct json_object *d = json_object_array_get_idx(devs, i);
		char *cells[8];
		int64_t v;
		cells[0] = cell_str(&t, jstr(d, "device") ?: "?");
		cells[1] = cell_str(&t, jstr(d, "name") ?: "-");
		for (size_t k = 0; k < ELEMENTSOF(cols); k++)
			cells[2 + k] = !jint(d, cols[k].key, &v) ? cell_str(&t, "-")
				       : cols[k].bytes		 ? cell_str(&t, fmt_bytes(v).s)
								 : cell_str(&t, fmt_int(v).s);
		table_add(&t, cells);
	}
	putchar('\n');
	table_print(stdout, &t, arg_legend, 0);
}

/* How far memory and CPU time may have moved since they were read: their
 * measured motion (per second) times their age, an estimate, not a bound
 * (docs/counters.md, "Staleness and fresh reads"); or that they were read
 * fresh for this call. */
static void show_motion(struct json_object *values)
{
	static const char *const names[] = { "memory", "cpu.usage" };
	bool any = false;

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		struct json_object *v = jget(values, names[i]);
		struct value x = value_of(v);
		enum acct_unit u = quantity_unit(names[i]);
		double motion;
		if (!x.set)
			continue;
		if (!any)
			putchar('\n');
		any = true;
		if (jbool(v, "fresh"))
			printf("%s: read fresh for this call (age %s); its bound is the kernel's only\n", names[i],
			       x.age_us >= 0 ? fmt_age(x.age_us).s : "-");
		else if (!jdouble(v, "motion_per_s", &motion) || x.age_us < 0)
			printf("%s: how fast it moves is not measured yet (two passes needed)\n", names[i]);
		else
			printf("%s: may have moved by about %s since (estimate from the last passes: %s/s x %s)\n",
			       names[i], fmt_unit(u, (int64_t)(motion * (double)x.age_us / 1e6 + 0.5)).s,
			       fmt_unit(u, (int64_t)(motion + 0.5)).s, fmt_age(x.age_us).s);
	}
}

/* Values whose bound is larger than the value, and why: a leaf's memory of
 * 180.0K served ±520.0K looks wrong until one knows that nearly all of it is
 * the kernel's per-CPU charge stock, which no file shows and no budget of
 * acctd's moves (docs/counters.md, "Bounds from the kernel"). */
static void show_large_bounds(struct json_object *values)
{
	bool any = false;

	if (!values || !json_object_is_type(values, json_type_object))
		return;
	json_object_object_foreach(values, name, v) {
		struct value x = value_of(v);
		if (!x.set || x.bound <= 0 || (uint64_t)x.bound <= (uint64_t)llabs(x.value))
			continue;
		enum acct_unit u = quantity_unit(name);
		int64_t kernel = MIN(MAX(jint_or(v, "kernel_bound", 0), (int64_t)0), x.bound);
		if (!any)
			printf("\nBounds larger than their values:\n");
		any = true;
		printf("  %s %s %s%s: %s%s of it the kernel's, %s%s acctd's batching\n", name, fmt_unit(u, x.value).s,
		       glyph(G_PLUSMINUS), fmt_unit(u, x.bound).s, glyph(G_PLUSMINUS), fmt_unit(u, kernel).s,
		       glyph(G_PLUSMINUS), fmt_unit(u, x.bound - kernel).s);
	}
	if (any)
		printf("The kernel's part is what it holds per CPU and has not counted yet (memory charged ahead\n"
		       "into per-CPU stocks: 64 pages a CPU for each cgroup it caches; stats not yet flushed):\n"
		       "no file shows it and no budget moves it. acctd's part is at most its budget (acctctl tune).\n");
}

static void show_cgroup(struct json_object *cg)
{
	static const char *const vh[] = { "QUANTITY", "VALUE", "BOUND", "AGE", "EXACT" };
	static const unsigned vf[] = { 0, COL_RIGHT, 0, COL_RIGHT, COL_RIGHT };
	static const char *const ph[] = { "PRESSURE", "SOME10", "SOME60", "SOME300", "SOME-TOTAL", "FULL10",
					  "FULL60", "FULL300", "FULL-TOTAL" };
	static const unsigned pf[] = { 0, COL_RIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT,
				       COL_RIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT };
	static const char *const nh[] = { "NODE", "MEMORY", "BOUND", "AGE" };
	static const unsigned nf[] = { COL_RIGHT, COL_RIGHT, 0, COL_RIGHT };
	struct json_object *values = jget(cg, "values"), *x;
	const char *state = jstr(cg, "state");
	bool dead = state && strcmp(state, "dead") == 0;
	_cleanup_free_ char *hier = NULL;
	_cleanup_(table_done) struct table t = { 0 };
	char ab[80];
	int64_t d;

	print_text(stdout, jstr(cg, "path") ?: "?");
	putchar('\n');
	if (dead && jint(cg, "dead_for_us", &d) && jbool(cg, "final"))
		print_field("State", "dead: removed %s ago; these are its final values", fmt_age(d).s);
	else if (dead && jint(cg, "dead_for_us", &d))
		print_field("State", "dead: removed %s ago; its last values, not final (%s)", fmt_age(d).s,
			    jstr(cg, "final_reason") ?: "unknown");
	else
		print_field("State", "%s, %s", state ?: "?", jbool(cg, "populated") ? "populated" : "empty (no processes)");
	hier = jstr_array_join(cg, "hierarchies");
	print_field("Hierarchies", "%s", hier ?: "-");
	print_field("Depth", "%" PRId64, jint_or(cg, "depth", 0));
	print_field("Sample errors", "%" PRId64, jint_or(cg, "sample_errors", 0));
	x = jget(cg, "cpu_rate_cores");
	if (x) {
		struct json_object *rate = jget(x, "rate");
		print_field("CPU rate", "%s cores now; %.2f, %.2f, %.2f over 1, 5, 15 min%s",
			    rate ? fmt_2f(jdouble_or(rate, "value", 0)).s : "-", jdouble_or(x, "avg1", 0),
			    jdouble_or(x, "avg5", 0), jdouble_or(x, "avg15", 0), age_text(rate, ab));
	} else
		print_field("CPU rate", "-"); /* CPU time not read (twice): no rate, not 0 */
	x = jget(cg, "load");
	if (x) {
		_cleanup_free_ char *warming = load_warming_text(x);
		print_field("Load", "%.2f, %.2f, %.2f over 1, 5, 15 min%s%s", jdouble_or(x, "avg1", 0),
			    jdouble_or(x, "avg5", 0), jdouble_or(x, "avg15", 0), age_text(x, ab), warming ?: "");
	} else
		print_field("Load", "-");
	x = jget(cg, "io");
	if (x)
		show_io_rate(x);

	/* every value with bound and age */
	putchar('\n');
	table_init(&t, 5, vh, vf);
	for (size_t i = 0; i < ELEMENTSOF(value_order); i++)
		if (values && json_object_object_get_ex(values, value_order[i], NULL))
			show_value_row(&t, value_order[i], jget(values, value_order[i]));
	if (values && json_object_is_type(values, json_type_object)) {
		json_object_object_foreach(values, k, v) {
			bool known = false;
			for (size_t i = 0; i < ELEMENTSOF(value_order); i++)
				known |= strcmp(k, value_order[i]) == 0;
			if (!known)
				show_value_row(&t, k, v);
		}
	}
	table_print(stdout, &t, arg_legend, 0);
	table_done(&t);
	show_motion(values);
	show_large_bounds(values);

	/* pressure */
	x = jget(cg, "pressure");
	if (x) {
		static const char *const res[] = { "cpu", "memory", "io" };
		table_init(&t, 9, ph, pf);
		for (size_t i = 0; i < ELEMENTSOF(res); i++) {
			struct json_object *pr = jget(x, res[i]);
			char *cells[9];
			if (!pr)
				continue;
			cells[0] = cell_str(&t, res[i]);
			for (int k = 0; k < 2; k++) {
				struct json_object *line = jget(pr, k == 0 ? "some" : "full");
				struct value tot = value_of(jget(line, "total_us"));
				cells[1 + 4 * k] = line ? cell_fmt(&t, "%.2f%%", jdouble_or(line, "avg10", 0)) : cell_str(&t, "-");
				cells[2 + 4 * k] = line ? cell_fmt(&t, "%.2f%%", jdouble_or(line, "avg60", 0)) : cell_str(&t, "-");
				cells[3 + 4 * k] = line ? cell_fmt(&t, "%.2f%%", jdouble_or(line, "avg300", 0)) : cell_str(&t, "-");
				cells[4 + 4 * k] = cell_str(&t, tot.set ? fmt_duration(tot.value).s : "-");
			}
			table_add(&t, cells);
		}
		if (t.nrows > 0) {
			putchar('\n');
			table_print(stdout, &t, arg_legend, 0);
		}
		table_done(&t);
	}

	x = jget(cg, "io");
	if (x)
		show_io_devices(x);

	/* per NUMA node */
	x = jget(cg, "numa");
	if (x && json_object_is_type(x, json_type_array) && json_object_array_length(x) > 0) {
		table_init(&t, 4, nh, nf);
		for (size_t i = 0; i < json_object_array_length(x); i++) {
			struct json_object *n = json_object_array_get_idx(x, i);
			struct value v = value_of(n);
			char *cells[4];
			cells[0] = cell_str(&t, fmt_int(jint_or(n, "node", (int64_t)i)).s);
			cells[1] = cell_str(&t, v.set ? fmt_bytes(v.value).s : "-");
			cells[2] = v.bound > 0 ? cell_fmt(&t, "%s%s", glyph(G_PLUSMINUS), fmt_bytes(v.bound).s) : cell_str(&t, "");
			cells[3] = cell_str(&t, v.age_us >= 0 ? fmt_age(v.age_us).s : "-");
			table_add(&t, cells);
		}
		putchar('\n');
		table_print(stdout, &t, arg_legend, 0);
		table_done(&t);
	}

	/* memory.stat, as the kernel reports it */
	x = jget(cg, "memory_stat");
	if (x && json_object_is_type(x, json_type_object)) {
		static const char *const mh[] = { "MEMORY.STAT", "VALUE", "EXACT" };
		static const unsigned mf[] = { 0, COL_RIGHT, COL_RIGHT };
		table_init(&t, 3, mh, mf);
		json_object_object_foreach(x, k, v) {
			char *cells[3];
			int64_t n = json_object_get_int64(v);
			cells[0] = cell_str(&t, k);
			cells[1] = cell_str(&t, memstat_is_count(k) ? fmt_int(n).s : fmt_bytes(n).s);
			cells[2] = cell_str(&t, fmt_int(n).s);
			table_add(&t, cells);
		}
		putchar('\n');
		if (arg_legend && jint(cg, "memory_stat_age_us", &d))
			printf("memory.stat read %s ago:\n", fmt_age(d).s);
		table_print(stdout, &t, arg_legend, 0);
		table_done(&t);
	}
}

/* A Charged's value or bound cell in the resource's unit ("-" when absent). */
static char *charge_cell(struct table *t, const char *name, struct value v)
{
	return cell_str(t, v.set ? fmt_charge(name, v.value).s : "-");
}

/* A bound cell: "" when 0, as every exact value of show's (acctctl(1), Units). */
static char *charge_bound_cell(struct table *t, const char *name, struct value v)
{
	return v.bound > 0 ? cell_fmt(t, "%s%s", glyph(G_PLUSMINUS), fmt_charge(name, v.bound).s) : cell_str(t, "");
}

/* An average of a resource in its unit: counts (load-like) with two
 * decimals, as load averages; bytes and durations rounded, as their values. */
static struct fbuf fmt_charge_avg(const char *name, double avg)
{
	int u = charge_unit(name);

	if (u < 0 || u == ACCT_UNIT_COUNT)
		return fmt_2f(avg);
	return fmt_unit((enum acct_unit)u, (int64_t)(avg < 0 ? avg - 0.5 : avg + 0.5));
}

/* What programs charged (Get's charges, docs/charges.md): per resource the
 * cgroup's own value and its subtree's, each with its bound, in the
 * resource's unit (charge-units.h: read from acctd's configuration, plain
 * integers when not known), the age of the read and the exact integers. */
static void show_charges(struct json_object *charges)
{
	static const char *const ch[] = { "RESOURCE", "UNIT", "SELF", "BOUND", "SUBTREE", "BOUND", "AGE", "EXACT" };
	static const unsigned cf[] = { 0, 0, COL_RIGHT, 0, COL_RIGHT, 0, COL_RIGHT, COL_RIGHT };
	_cleanup_(table_done) struct table t = { 0 };

	if (!charges || !json_object_is_type(charges, json_type_object) || json_object_object_length(charges) == 0)
		return;
	charge_units_load();
	table_init(&t, ELEMENTSOF(ch), ch, cf);
	json_object_object_foreach(charges, k, v) {
		struct value self = value_of(jget(v, "self")), sub = value_of(jget(v, "subtree"));
		int64_t age = self.age_us >= 0 ? self.age_us : sub.age_us;
		char *cells[ELEMENTSOF(ch)];

		cells[0] = cell_str(&t, k);
		cells[1] = cell_str(&t, charge_unit(k) >= 0 ? charge_unit_name(charge_unit(k)) : "?");
		cells[2] = charge_cell(&t, k, self);
		cells[3] = charge_bound_cell(&t, k, self);
		cells[4] = charge_cell(&t, k, sub);
		cells[5] = charge_bound_cell(&t, k, sub);
		cells[6] = cell_str(&t, age >= 0 ? fmt_age(age).s : "-");
		/* the integers acctd sent, self/subtree, as EXACT of the values above */
		cells[7] = cell_fmt(&t, "%s/%s", self.set ? fmt_int(self.value).s : "-", sub.set ? fmt_int(sub.value).s : "-");
		table_add(&t, cells);
	}
	putchar('\n');
	if (arg_legend) {
		printf("Charged by programs (SELF: to the cgroup itself; SUBTREE: to it and below; read live):\n");
		if (charge_units_unknown())
			printf("Units not known (%s): values are integers in each resource's unit.\n",
			       charge_units_unknown());
	}
	table_print(stdout, &t, arg_legend, 0);
	/* The averages of the resources declared so (docs/charges.md, "Averages"). */
	json_object_object_foreach(charges, name, c) {
		struct json_object *a = jget(c, "averages"), *w = jget(a, "warming");
		if (!a)
			continue;
		printf("Averages of %s: %s, %s, %s over 1, 5, 15 min", name, fmt_charge_avg(name, jdouble_or(a, "avg1", 0)).s,
		       fmt_charge_avg(name, jdouble_or(a, "avg5", 0)).s, fmt_charge_avg(name, jdouble_or(a, "avg15", 0)).s);
		size_t nw = w && json_object_is_type(w, json_type_array) ? json_object_array_length(w) : 0;
		for (size_t i = 0; i < nw; i++)
			printf("%s%s", i ? ", " : "; warming up: ",
			       json_object_get_string(json_object_array_get_idx(w, i)));
		putchar('\n');
	}
}

/* Get's unexplained_memory: memory less the charged RAM (docs/charges.md,
 * "Reconciliation of RAM resources"); nothing when absent. */
static void show_unexplained(struct json_object *u)
{
	struct value v = value_of(u);

	if (!v.set)
		return;
	printf("\nUnexplained memory: %s", fmt_bytes(v.value).s);
	if (v.bound > 0)
		printf(" %s%s", glyph(G_PLUSMINUS), fmt_bytes((int64_t)v.bound).s);
	printf("%s\n", arg_legend ? " (memory less what programs charged of the ram resources)" : "");
}

/* --json: the cgroup's record with what Get serves beside it (charges,
 * unexplained_memory) added as members, so that what read the record before
 * still reads it. */
static void show_json(struct json_object *params, struct json_object *cg)
{
	static const char *const beside[] = { "charges", "unexplained_memory" };

	for (size_t i = 0; i < ELEMENTSOF(beside); i++) {
		struct json_object *o = jget(params, beside[i]);
		if (o)
			json_object_object_add(cg, beside[i], json_object_get(o));
	}
	print_json(stdout, cg);
}

int verb_show(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	struct json_object *cg;
	int r;

	json_add(params, "cgroup", json_cgroup_arg(args[0]));
	if (arg_precise)
		json_add(params, "precise", json_object_new_boolean(1));
	r = call_once("Get", params, &reply);
	if (r != EXIT_OK)
		return r;
	cg = jget(reply.parameters, "cgroup");
	if (!cg)
		return call_failed(-EBADMSG, NULL);
	pager_open();
	if (arg_json)
		show_json(reply.parameters, cg);
	else {
		show_cgroup(cg);
		show_charges(jget(reply.parameters, "charges"));
		show_unexplained(jget(reply.parameters, "unexplained_memory"));
		const char *why = jstr(reply.parameters, "not_fresh");
		if (why)
			printf("\nNot read fresh: %s\n", why);
	}
	return EXIT_OK;
}
