/* test-columns.c - unit tests of acctctl's columns of list and top
 * (daemon/acctctl/columns.h): -o's parsing (names in any case, the "path"
 * alias, unknown and empty fields, the 64-field limit), the default
 * selections with and without STATE, list --charge's columns appended to
 * them (and the limit), the field list of --output=help, each column's cell
 * as a table prints it (values, "-" for a missing figure, the bound's sign,
 * the load's "~" with and without the legend, rates rounded, the age of
 * memory or of the CPU rate, a charged value in its resource's unit) and
 * what --json keeps of a CgroupSummary with -o. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "columns.h"
#include "human.h"
#include "options.h"

static char *print_table(const struct table *t)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	assert_non_null(f);
	table_print(f, t, true, 0);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void test_parse(void **state)
{
	struct columns c = { 0 };
	const char *bad = NULL;

	(void)state;
	assert_int_equal(columns_parse("Path,memory,BOUND,read/s,write,age", &c, &bad), 0);
	assert_true(c.given);
	assert_int_equal(c.n, 6);
	assert_int_equal(c.v[0], COLUMN_CGROUP);
	assert_int_equal(c.v[1], COLUMN_MEMORY);
	assert_int_equal(c.v[2], COLUMN_BOUND);
	assert_int_equal(c.v[3], COLUMN_READ_RATE);
	assert_int_equal(c.v[4], COLUMN_WRITE);
	assert_int_equal(c.v[5], COLUMN_AGE);
	assert_string_equal(c.headers[0], "CGROUP");
	assert_string_equal(c.headers[2], "");
	assert_string_equal(c.headers[3], "READ/s");
	assert_int_equal(c.flags[0], COL_ELLIPSIZE);
	assert_int_equal(c.flags[2], COL_RIGHT | COL_TIGHT);
	assert_int_equal(c.flags[5], COL_RIGHT);

	/* a selection without CGROUP does not show it (the arrays past n are
	 * zero, CGROUP's value) */
	assert_int_equal(columns_parse("memory", &c, &bad), 0);
	assert_true(columns_has(&c, COLUMN_MEMORY));
	assert_false(columns_has(&c, COLUMN_CGROUP));

	/* a field named twice is two columns, as in ps */
	assert_int_equal(columns_parse("cgroup,CGROUP", &c, &bad), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.v[1], COLUMN_CGROUP);
	/* the last field of the table, alone */
	assert_int_equal(columns_parse("age", &c, &bad), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.v[0], COLUMN_AGE);
}

static void test_parse_bad(void **state)
{
	const char *s, *bad = NULL;
	struct columns c = { .n = 7 };

	(void)state;
	s = "memory,nope,cpu";
	assert_int_equal(columns_parse(s, &c, &bad), -EINVAL);
	assert_ptr_equal(bad, s + 7);
	assert_int_equal(c.n, 7); /* untouched */
	/* prefixes and extensions of a name, and of the alias, are not it */
	s = "memor";
	assert_int_equal(columns_parse(s, &c, &bad), -EINVAL);
	assert_ptr_equal(bad, s);
	s = "memoryx";
	assert_int_equal(columns_parse(s, &c, &bad), -EINVAL);
	s = "pat";
	assert_int_equal(columns_parse(s, &c, &bad), -EINVAL);
	s = "paths";
	assert_int_equal(columns_parse(s, &c, &bad), -EINVAL);
	/* an empty field, in the middle and at the end */
	s = "cpu,,load";
	assert_int_equal(columns_parse(s, &c, &bad), -EINVAL);
	assert_ptr_equal(bad, s + 4);
	s = "cpu,";
	assert_int_equal(columns_parse(s, &c, &bad), -EINVAL);
	assert_ptr_equal(bad, s + 4);
	assert_int_equal(c.n, 7);
}

static void test_parse_limit(void **state)
{
	char s[COLUMNS_MAX * 4 + 8] = "";
	struct columns c = { 0 };
	const char *bad = NULL;

	(void)state;
	for (int i = 0; i < COLUMNS_MAX; i++)
		strcat(s, i ? ",cpu" : "cpu");
	assert_int_equal(columns_parse(s, &c, &bad), 0);
	assert_int_equal(c.n, COLUMNS_MAX);
	strcat(s, ",cpu");
	assert_int_equal(columns_parse(s, &c, &bad), -E2BIG);
}

static void test_names_and_help(void **state)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f;

	(void)state;
	assert_string_equal(columns_names(), "cgroup, state, memory, bound, cpu, load, psi-cpu, psi-mem, psi-io, "
					     "tasks, read/s, write/s, read, write, age, charge, charge-bound");
	/* a second call gives the same text, not the names twice */
	assert_string_equal(columns_names(), "cgroup, state, memory, bound, cpu, load, psi-cpu, psi-mem, psi-io, "
					     "tasks, read/s, write/s, read, write, age, charge, charge-bound");
	f = open_memstream(&text, &size);
	assert_non_null(f);
	columns_help(f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(text, "in any case), with their headers:\n"
				     "  cgroup    CGROUP   the path"));
	assert_non_null(strstr(text, "\n  bound     (none)   the memory reading's error bound"));
	assert_non_null(strstr(text, "\n  psi-io    PSI-IO   I/O pressure"));
	assert_non_null(strstr(text, "\n  age       AGE      age of the memory reading (of the CPU rate without one)\n"));
	/* one line a field, the last field's last: nothing past the table of
	 * fields is read; a name wider than its column (charge-bound) on a
	 * line of its own, the header and text in line with the others' */
	const char *last = "\n  charge-bound\n            (none)   that value's error bound (+-N), right after it\n";
	assert_true(strlen(text) > strlen(last));
	assert_string_equal(text + strlen(text) - strlen(last), last);
	size_t lines = 0;
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 1 + _COLUMN_MAX + 1);
	free(text);
}

static void test_append(void **state)
{
	struct columns c;

	(void)state;
	/* list --charge: CHARGE and its bound after the default columns,
	 * with their headers and flags; 0 each */
	columns_default(&c, false);
	assert_int_equal(columns_append(&c, COLUMN_CHARGE), 0);
	assert_int_equal(columns_append(&c, COLUMN_CHARGE_BOUND), 0);
	assert_int_equal(c.n, 14);
	assert_int_equal(c.v[12], COLUMN_CHARGE);
	assert_int_equal(c.v[13], COLUMN_CHARGE_BOUND);
	assert_string_equal(c.headers[12], "CHARGE");
	assert_string_equal(c.headers[13], "");
	assert_int_equal(c.flags[13], COL_RIGHT | COL_TIGHT);
	assert_false(c.given);
	/* up to COLUMNS_MAX; past it -E2BIG, as columns_parse() says of too
	 * many fields, and c untouched */
	while (c.n < COLUMNS_MAX)
		assert_int_equal(columns_append(&c, COLUMN_CPU), 0);
	assert_int_equal(columns_append(&c, COLUMN_CHARGE), -E2BIG);
	assert_int_equal(c.n, COLUMNS_MAX);
	assert_int_equal(c.v[COLUMNS_MAX - 1], COLUMN_CPU);
}

static void test_default(void **state)
{
	static const enum column want[] = { COLUMN_CGROUP,    COLUMN_STATE,	  COLUMN_MEMORY, COLUMN_BOUND,
					    COLUMN_CPU,	      COLUMN_LOAD,	  COLUMN_PSI_CPU, COLUMN_PSI_MEM,
					    COLUMN_PSI_IO,    COLUMN_TASKS,	  COLUMN_READ_RATE, COLUMN_WRITE_RATE,
					    COLUMN_AGE };
	struct columns c;

	(void)state;
	columns_default(&c, true);
	assert_false(c.given);
	assert_int_equal(c.n, 13);
	for (size_t i = 0; i < 13; i++)
		assert_int_equal(c.v[i], want[i]);
	assert_true(columns_has(&c, COLUMN_STATE));
	assert_true(columns_has(&c, COLUMN_AGE));
	assert_false(columns_has(&c, COLUMN_READ));

	columns_default(&c, false);
	assert_int_equal(c.n, 12);
	assert_int_equal(c.v[0], COLUMN_CGROUP);
	assert_int_equal(c.v[1], COLUMN_MEMORY);
	assert_int_equal(c.v[11], COLUMN_AGE);
	assert_false(columns_has(&c, COLUMN_STATE));
	assert_true(columns_has(&c, COLUMN_CGROUP));
}

/* A row with every figure; the tests take some away. */
static struct row full_row(void)
{
	return (struct row){
		.path = "/a",
		.mem = { .set = true, .value = 3 << 20, .bound = 4096, .age_us = 1500000 },
		.has_cpu = true,
		.cpu = 1.234,
		.has_load = true,
		.load_warming = true,
		.load = 0.5,
		.has_psi = { true, true, true },
		.psi = { 1.5, 2.25, 3 },
		.cpu_age = 7000000,
		.has_io = true,
		.io_read = 1023.5,
		.io_write = 2047.4,
		.tasks = { .set = true, .value = 12 },
		.io_read_total = { .set = true, .value = 5 << 20 },
		.io_write_total = { .set = true, .value = 6 << 10 },
	};
}

/* s with each run of blanks made one blank, in place: the cells without
 * their padding (test-table checks the layout). */
static void squeeze(char *s)
{
	char *to = s;

	for (const char *p = s; *p; p++)
		if (*p != ' ' || (to > s && to[-1] != ' '))
			*to++ = *p;
	*to = 0;
}

/* The cells of r in every column, one row, without the header, blanks
 * squeezed. */
static char *cells(const struct row *r)
{
	struct columns c;
	struct table t;
	const char *bad;
	char *text, *row;
	size_t head;

	assert_int_equal(columns_parse("cgroup,state,memory,bound,cpu,load,psi-cpu,psi-mem,psi-io,tasks,"
				       "read/s,write/s,read,write,age",
				       &c, &bad),
			 0);
	columns_table_init(&c, &t);
	columns_table_add(&c, &t, r, cell_str(&t, r->path));
	text = print_table(&t);
	table_done(&t);
	head = strcspn(text, "\n");
	assert_int_equal(text[head], '\n');
	row = strdup(text + head + 1);
	assert_non_null(row);
	free(text);
	squeeze(row);
	return row;
}

static void test_cells(void **state)
{
	struct row r = full_row();
	struct columns c;
	struct table t;
	const char *bad;
	char *text;

	(void)state;
	utf8 = false;
	arg_legend = true;
	/* STATE is left-aligned: its cells are narrower than its header */
	assert_int_equal(columns_parse("state,memory", &c, &bad), 0);
	columns_table_init(&c, &t);
	columns_table_add(&c, &t, &r, cell_str(&t, r.path));
	text = print_table(&t);
	table_done(&t);
	assert_string_equal(text, "STATE  MEMORY\nlive     3.0M\n");
	free(text);

	text = cells(&r);
	assert_string_equal(text, "/a live 3.0M +-4.0K 1.23 0.50~ 1.50% 2.25% 3.00% 12 1.0K 2.0K 5.0M 6.0K 1.5s\n");
	free(text);

	/* without the legend (fields for scripts) no "~"; a tombstone; the
	 * rates rounded to the nearest byte */
	arg_legend = false;
	r.dead = true;
	r.io_read = 1024.4;
	r.io_write = 1;
	text = cells(&r);
	assert_string_equal(text, "/a dead 3.0M +-4.0K 1.23 0.50 1.50% 2.25% 3.00% 12 1.0K 1B 5.0M 6.0K 1.5s\n");
	free(text);
	arg_legend = true;

	/* a load not warming up has no "~"; a bound of 0 is not shown */
	r = full_row();
	r.load_warming = false;
	r.mem.bound = 0;
	r.io_read = 0.5;
	text = cells(&r);
	assert_string_equal(text, "/a live 3.0M 1.23 0.50 1.50% 2.25% 3.00% 12 1B 2.0K 5.0M 6.0K 1.5s\n");
	free(text);
}

static void test_cells_missing(void **state)
{
	struct row r = full_row();
	char *text;

	(void)state;
	utf8 = false;
	arg_legend = false; /* "-" for an empty cell, not blank */
	/* each PSI resource alone */
	r.has_psi[0] = false;
	r.has_psi[2] = false;
	/* no memory figure: the age is the CPU rate's */
	r.mem.set = false;
	text = cells(&r);
	assert_string_equal(text, "/a live - 1.23 0.50 - 2.25% - 12 1.0K 2.0K 5.0M 6.0K 7.0s\n");
	free(text);

	r = full_row();
	r.has_psi[1] = false;
	r.has_cpu = false;
	r.has_load = false;
	r.has_io = false;
	r.tasks.set = false;
	r.io_read_total.set = false;
	r.io_write_total.set = false;
	r.mem.set = false;
	r.cpu_age = -1;
	text = cells(&r);
	assert_string_equal(text, "/a live - - - 1.50% - 3.00% - - - - - -\n");
	free(text);

	/* a memory figure whose age is 0 is known, not missing */
	r = full_row();
	r.mem.age_us = 0;
	r.cpu_age = -1;
	text = cells(&r);
	assert_string_equal(text, "/a live 3.0M +-4.0K 1.23 0.50 1.50% 2.25% 3.00% 12 1.0K 2.0K 5.0M 6.0K 0.0s\n");
	free(text);
	arg_legend = true;
}

/* The cells of r in CHARGE and its bound, for a resource of unit `unit`
 * (negative: not known), blanks squeezed. */
static char *charge_cells(const struct row *r, int unit)
{
	struct columns c;
	struct table t;
	const char *bad;
	char *text;

	assert_int_equal(columns_parse("cgroup,charge,charge-bound", &c, &bad), 0);
	c.charge_unit = unit;
	columns_table_init(&c, &t);
	columns_table_add(&c, &t, r, cell_str(&t, r->path));
	text = print_table(&t);
	table_done(&t);
	squeeze(text);
	return text;
}

static void test_charge_cells(void **state)
{
	struct row r = { .path = "/a", .charge = { .set = true, .value = 3 << 20, .bound = 4096 } };
	char *text;

	(void)state;
	utf8 = false;
	/* list --charge=NAME: the subtree value in the resource's unit, bytes
	 * (unit 0) too, its bound after it with the sign */
	text = charge_cells(&r, ACCT_UNIT_BYTES);
	assert_string_equal(text, "CGROUP CHARGE\n/a 3.0M +-4.0K\n");
	free(text);
	text = charge_cells(&r, ACCT_UNIT_USEC);
	assert_string_equal(text, "CGROUP CHARGE\n/a 3.146s +-4.1ms\n");
	free(text);
	/* a count, and a unit not known: integers */
	text = charge_cells(&r, ACCT_UNIT_COUNT);
	assert_string_equal(text, "CGROUP CHARGE\n/a 3145728 +-4096\n");
	free(text);
	text = charge_cells(&r, -ENOENT);
	assert_string_equal(text, "CGROUP CHARGE\n/a 3145728 +-4096\n");
	free(text);
	/* a bound of 0 is not shown; nothing charged reads 0, without a bound */
	r.charge.bound = 0;
	text = charge_cells(&r, ACCT_UNIT_BYTES);
	assert_string_equal(text, "CGROUP CHARGE\n/a 3.0M\n");
	free(text);
	r.charge = (struct value){ .bound = 5, .age_us = -1 };
	text = charge_cells(&r, ACCT_UNIT_BYTES);
	assert_string_equal(text, "CGROUP CHARGE\n/a 0B\n");
	free(text);
}

static struct json_object *parse(const char *s)
{
	struct json_object *o = json_tokener_parse(s);

	assert_non_null(o);
	return o;
}

static void assert_json(struct json_object *o, const char *want)
{
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), want);
}

static void test_json(void **state)
{
	struct json_object *o = parse("{\"path\":\"/a\",\"state\":\"live\",\"memory\":{\"value\":1},"
				      "\"cpu_rate\":{\"value\":2},\"load1\":0.5,\"load1_warming\":true,"
				      "\"psi_some_avg10\":{\"cpu\":1.5,\"memory\":2.5,\"io\":3.5},"
				      "\"tasks\":{\"value\":3},\"io_read_bytes\":{\"value\":4},"
				      "\"io_write_bytes\":{\"value\":5}}");
	struct json_object *n;
	struct columns c;
	const char *bad;

	(void)state;
	/* no -o: the object itself */
	columns_default(&c, false);
	n = columns_json(&c, o);
	assert_ptr_equal(n, o);
	json_object_put(n);

	/* members once each, in the columns' order, the load with its warming
	 * flag, the age with both its readings, PSI with the selected
	 * resources only */
	assert_int_equal(columns_parse("load,psi-io,memory,bound,psi-cpu,age,write,read/s", &c, &bad), 0);
	n = columns_json(&c, o);
	assert_json(n, "{\"load1\":0.5,\"load1_warming\":true,\"psi_some_avg10\":{\"io\":3.5,\"cpu\":1.5},"
		       "\"memory\":{\"value\":1},\"cpu_rate\":{\"value\":2},\"io_write_bytes\":{\"value\":5},"
		       "\"io_read_bytes_rate\":null}");
	json_object_put(n);

	/* PSI null in acctd's reply stays null, whichever resources */
	json_object_object_add(o, "psi_some_avg10", NULL);
	assert_int_equal(columns_parse("psi-mem,psi-cpu,state", &c, &bad), 0);
	n = columns_json(&c, o);
	assert_json(n, "{\"psi_some_avg10\":null,\"state\":\"live\"}");
	json_object_put(n);
	/* nor is another value that is not an object taken apart */
	json_object_object_add(o, "psi_some_avg10", json_object_new_int(5));
	n = columns_json(&c, o);
	assert_json(n, "{\"psi_some_avg10\":5,\"state\":\"live\"}");
	json_object_put(n);
	json_object_put(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),	    cmocka_unit_test(test_parse_bad), cmocka_unit_test(test_parse_limit),
		cmocka_unit_test(test_names_and_help), cmocka_unit_test(test_default),	 cmocka_unit_test(test_cells),
		cmocka_unit_test(test_cells_missing), cmocka_unit_test(test_json),
		cmocka_unit_test(test_append),	      cmocka_unit_test(test_charge_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
