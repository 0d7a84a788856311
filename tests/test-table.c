/* test-table.c - unit tests of acctctl's table renderer (daemon/acctctl/table.h)
 * with styles: a table without table_style() prints no escape sequence, a
 * styled cell is wrapped in its SGR sequence without its padding, the styled
 * header is a bar as wide as the width asked for, and styles set before more
 * rows are added stay with their cells. Then the renderer's layout: empty
 * cells (blank with the legend, "-" without), no trailing blanks, control
 * characters escaped, the ellipsizable column shortened to a width, a styled
 * header bar as wide as asked with tight and left-aligned last columns, a
 * table reused after table_done(), and that neither table_add() nor
 * table_print() reads past the caller's ncols cells or flags (arrays placed
 * against an inaccessible page). And human.c's units, ages, widths and
 * middle ellipsis, which the tables print. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "acctctl.h"
#include "human.h"
#include "table.h"

/* ctl-util.c's print_json() reads it; the table does not. */
enum json_mode arg_json;

static const char *const headers[] = { "NAME", "MEM" };
static const unsigned flags[] = { COL_ELLIPSIZE, COL_RIGHT };

static void add(struct table *t, const char *name, const char *mem)
{
	char *row[] = { cell_str(t, name), cell_str(t, mem) };
	table_add(t, row);
}

/* /a 1.0M and /b 20.0M */
static void two_rows(struct table *t)
{
	table_init(t, 2, headers, flags);
	add(t, "/a", "1.0M");
	add(t, "/b", "20.0M");
}

static char *print(const struct table *t, unsigned max_width)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	assert_non_null(f);
	table_print(f, t, true, max_width);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void test_plain(void **state)
{
	struct table t;
	char *text;

	(void)state;
	two_rows(&t);
	text = print(&t, 40);
	assert_string_equal(text, "NAME    MEM\n"
				  "/a     1.0M\n"
				  "/b    20.0M\n");
	free(text);
	table_done(&t);
}

static void test_styled(void **state)
{
	struct table t;
	char *text;

	(void)state;
	two_rows(&t);
	table_style(&t, TABLE_HEADER, 0, STYLE_HEADER);
	table_style(&t, 0, 1, STYLE_WARN);
	table_style(&t, 1, 1, STYLE_GREW);
	text = print(&t, 20);
	assert_string_equal(text, "\033[7mNAME    MEM         \033[m\n"
				  "/a     \033[33m1.0M\033[m\n"
				  "/b    \033[1m20.0M\033[m\n");
	free(text);
	/* without a width, the bar is the headers' */
	text = print(&t, 0);
	assert_string_equal(text, "\033[7mNAME    MEM\033[m\n"
				  "/a     \033[33m1.0M\033[m\n"
				  "/b    \033[1m20.0M\033[m\n");
	free(text);
	table_done(&t);
}

static void test_style_then_grow(void **state)
{
	static const char first[] = "NAME   MEM\n\033[1;31m/a\033[m    1.0M\n";
	struct table t;
	char *text, *last;

	(void)state;
	table_init(&t, 2, headers, flags);
	add(&t, "/a", "1.0M");
	table_style(&t, 0, 0, STYLE_ALERT);
	for (int i = 0; i < 200; i++) /* past the first allocation of rows */
		add(&t, "/b", "2.0M");
	text = print(&t, 0);
	assert_true(strncmp(text, first, strlen(first)) == 0);
	assert_null(strchr(text + strlen(first), '\033'));
	last = strrchr(text, '/');
	assert_string_equal(last, "/b    2.0M\n");
	free(text);
	table_done(&t);
}


/* n bytes that end where an inaccessible page begins: reading one byte past
 * them faults. The two pages are left mapped (a test's lifetime). */
static void *against_guard(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	assert_int_equal(mprotect(p + page, page, PROT_NONE), 0);
	assert_true(n <= page);
	return p + page - n;
}

static char *print_legend(const struct table *t, bool legend, unsigned max_width)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	assert_non_null(f);
	table_print(f, t, legend, max_width);
	assert_int_equal(fclose(f), 0);
	return text;
}

/* An empty cell is blank with the legend and "-" without (one field per
 * column for scripts); no line ends in blanks, whether its last cells are
 * empty or its last column is left-aligned. */
static void test_empty_cells(void **state)
{
	static const char *const h3[] = { "NAME", "MEM", "NOTE" };
	static const unsigned f3[] = { COL_ELLIPSIZE, COL_RIGHT, 0 };
	struct table t;
	char *text;

	(void)state;
	table_init(&t, 3, h3, f3);
	{
		char *r1[] = { cell_str(&t, "/a"), cell_str(&t, ""), cell_str(&t, "x") };
		table_add(&t, r1);
		char *r2[] = { cell_str(&t, "/bb"), cell_str(&t, "1.0M"), cell_str(&t, "") };
		table_add(&t, r2);
		char *r3[] = { cell_str(&t, "/c"), cell_str(&t, "2.0M"), cell_str(&t, "long") };
		table_add(&t, r3);
	}
	text = print_legend(&t, true, 0);
	assert_string_equal(text, "NAME   MEM  NOTE\n"
				  "/a          x\n"
				  "/bb   1.0M\n"
				  "/c    2.0M  long\n");
	free(text);
	text = print_legend(&t, false, 0);
	assert_string_equal(text, "/a      -  x\n"
				  "/bb  1.0M  -\n"
				  "/c   2.0M  long\n");
	free(text);
	table_done(&t);
}

/* A cell with a control character is printed escaped (a cgroup name may
 * hold any byte), in memory of its own in the arena: the cells added after
 * it do not overwrite it. */
static void test_control_escaped(void **state)
{
	struct table t;
	char *text;

	(void)state;
	table_init(&t, 2, headers, flags);
	add(&t, "\001", "1.0M");
	add(&t, "/b", "2.0M");
	add(&t, "a\033[31mb", "3.0M");
	add(&t, "/d", "4.0M");
	text = print(&t, 0);
	assert_string_equal(text, "NAME         MEM\n"
				  "\\x01        1.0M\n"
				  "/b          2.0M\n"
				  "a\\x1b[31mb  3.0M\n"
				  "/d          4.0M\n");
	free(text);
	table_done(&t);
}

/* Too wide for max_width: the ellipsizable column gives up the difference,
 * down to 16 columns; the others keep theirs. */
static void test_ellipsized_to_width(void **state)
{
	struct table t;
	char *text;

	(void)state;
	utf8 = false;
	table_init(&t, 2, headers, flags);
	add(&t, "/system.slice/a-very-long-service-name.service", "1.0M");
	add(&t, "/b", "20.0M");
	/* 46 + 2 + 5 = 53 columns; 40 asked: 13 fewer for NAME, 33 */
	text = print(&t, 40);
	assert_string_equal(text, "NAME                                 MEM\n"
				  "/system.slice/a...ce-name.service   1.0M\n"
				  "/b                                 20.0M\n");
	free(text);
	/* 20 asked: NAME stops at 16 */
	text = print(&t, 20);
	assert_string_equal(text, "NAME                MEM\n"
				  "/syste...service   1.0M\n"
				  "/b                20.0M\n");
	free(text);
	/* exactly as wide: nothing shortened */
	text = print(&t, 53);
	assert_string_equal(strchr(text, '\n') + 1, "/system.slice/a-very-long-service-name.service   1.0M\n"
						     "/b                                              20.0M\n");
	free(text);
	table_done(&t);

	/* three columns: two separators count (46 + 2 + 4 + 2 + 5 = 59; 50
	 * asked: NAME gives up 9) */
	static const char *const h3[] = { "NAME", "MEM", "BOUND" };
	static const unsigned f3[] = { COL_ELLIPSIZE, COL_RIGHT, COL_RIGHT };
	table_init(&t, 3, h3, f3);
	char *r[] = { cell_str(&t, "/system.slice/a-very-long-service-name.service"), cell_str(&t, "1.0M"),
		      cell_str(&t, "4.0K") };
	table_add(&t, r);
	text = print(&t, 50);
	assert_string_equal(text, "NAME                                    MEM  BOUND\n"
				  "/system.slice/a-v...vice-name.service  1.0M   4.0K\n");
	free(text);
	table_done(&t);
}

/* The styled header bar spans max_width whatever the columns: a tight
 * column (one space before it) and a left-aligned last column count what
 * they print. */
static void test_header_bar_width(void **state)
{
	static const char *const h3[] = { "NAME", "MEM", "BOUND" };
	static const unsigned f3[] = { 0, COL_RIGHT, COL_TIGHT };
	struct table t;
	char *text;

	(void)state;
	table_init(&t, 3, h3, f3);
	char *r[] = { cell_str(&t, "/a"), cell_str(&t, "1.0M"), cell_str(&t, "+-4.0K") };
	table_add(&t, r);
	table_style(&t, TABLE_HEADER, 0, STYLE_HEADER);
	text = print_legend(&t, true, 24);
	/* NAME(4) 2 MEM(4) 1 BOUND: the last column is left-aligned and
	 * prints its 5 columns, not its width of 6: 16, then 8 blanks to 24 */
	assert_string_equal(text, "\033[7mNAME   MEM BOUND        \033[m\n"
				  "/a    1.0M +-4.0K\n");
	free(text);
	table_done(&t);
}

/* table_done() leaves a table to fill again, unstyled. */
static void test_reused_after_done(void **state)
{
	struct table t;
	char *text;

	(void)state;
	two_rows(&t);
	table_style(&t, TABLE_HEADER, 0, STYLE_HEADER);
	table_style(&t, 0, 1, STYLE_WARN);
	table_done(&t);
	add(&t, "/c", "3.0M");
	text = print(&t, 20);
	assert_string_equal(text, "NAME   MEM\n"
				  "/c    3.0M\n");
	free(text);
	table_done(&t);
}

/* A row is ncols cells and a table's flags ncols words: nothing past them
 * is read (here the next byte faults). */
static void test_reads_ncols_only(void **state)
{
	struct table t;
	char *text;

	(void)state;
	unsigned *fl = against_guard(2 * sizeof(unsigned));
	fl[0] = COL_RIGHT; /* no column may be shortened: the search for one ends at ncols */
	fl[1] = COL_RIGHT;
	table_init(&t, 2, headers, fl);
	for (int i = 0; i < 3; i++) {
		char **row = against_guard(2 * sizeof(char *));
		row[0] = cell_str(&t, "/a-rather-long-name");
		row[1] = cell_str(&t, "1.0M");
		table_add(&t, row);
	}
	text = print(&t, 10);
	assert_string_equal(text, "               NAME   MEM\n"
				  "/a-rather-long-name  1.0M\n"
				  "/a-rather-long-name  1.0M\n"
				  "/a-rather-long-name  1.0M\n");
	free(text);
	table_done(&t);
}

/* ---- human.c ---- */

static void test_text_width(void **state)
{
	(void)state;
	assert_int_equal(text_width(""), 0);
	assert_int_equal(text_width("abc"), 3);
	assert_int_equal(text_width("\302\261"), 1);          /* ± */
	assert_int_equal(text_width("a\342\200\246b"), 3);    /* a…b */
	assert_int_equal(text_width("\360\237\220\247!"), 2); /* a 4-byte code point */
	assert_int_equal(text_width("\177"), 1);              /* DEL is one byte, not a continuation */
}

static void check_ellipsis(bool u, const char *s, size_t width, const char *want)
{
	utf8 = u;
	char *e = ellipsize_middle(s, width);
	assert_string_equal(e, want);
	free(e);
}

/* The middle gives way: as many columns of the head as of the tail (one
 * more of the tail when odd), whole UTF-8 characters only. */
static void test_ellipsize_middle(void **state)
{
	(void)state;
	check_ellipsis(false, "abcdefghij", 10, "abcdefghij");
	check_ellipsis(false, "abcdefghij", 11, "abcdefghij");
	check_ellipsis(false, "abcdefghij", 9, "abc...hij");
	check_ellipsis(false, "abcdefghij", 8, "ab...hij");
	check_ellipsis(false, "abcdefghij", 4, "...j");
	check_ellipsis(false, "abcdefghij", 3, "...");
	check_ellipsis(false, "abcdefghij", 2, "...");
	check_ellipsis(true, "abcdefghij", 1, "\342\200\246");
	check_ellipsis(true, "abcdefghij", 2, "\342\200\246j");
	check_ellipsis(true, "abcdefghij", 6, "ab\342\200\246hij");
	/* multi-byte characters in head and tail are kept whole */
	check_ellipsis(true, "\303\251\303\251\303\251xyz\303\240\303\240\303\240", 7,
		       "\303\251\303\251\303\251\342\200\246\303\240\303\240\303\240");
	check_ellipsis(false, "\303\251\303\251\303\251xyz\303\240\303\240\303\240", 7,
		       "\303\251\303\251...\303\240\303\240");
	check_ellipsis(true, "\303\251\303\251\303\251xyz\303\240\303\240\303\240", 9,
		       "\303\251\303\251\303\251xyz\303\240\303\240\303\240");
	check_ellipsis(true, "\303\251\303\251\303\251xyz\303\240\303\240\303\240", 8,
		       "\303\251\303\251\303\251\342\200\246z\303\240\303\240\303\240");
	utf8 = false;
}

/* Ages: seconds with a tenth below a minute (59.99999 s rounds up in the
 * text, and stays in seconds), minutes and whole seconds below an hour,
 * then hours and minutes; a negative age (clocks) is 0. */
static void test_ages(void **state)
{
	(void)state;
	assert_string_equal(fmt_age(0).s, "0.0s");
	assert_string_equal(fmt_age(-5000000).s, "0.0s");
	assert_string_equal(fmt_age(59999999).s, "60.0s");
	assert_string_equal(fmt_age(60000000).s, "1min 0s");
	assert_string_equal(fmt_age(180999998).s, "3min 0s");
	assert_string_equal(fmt_age(181000000).s, "3min 1s");
	assert_string_equal(fmt_age(INT64_C(3599999999)).s, "59min 59s");
	assert_string_equal(fmt_age(INT64_C(3600000000)).s, "1h 0min");
	assert_string_equal(fmt_age(INT64_C(7500000000)).s, "2h 5min");
}

static void test_units(void **state)
{
	(void)state;
	assert_string_equal(fmt_unit(ACCT_UNIT_BYTES, 1536).s, "1.5K");
	/* a negative size as its magnitude reads (unexplained memory below 0) */
	assert_string_equal(fmt_unit(ACCT_UNIT_BYTES, -10072064).s, "-9.6M");
	assert_string_equal(fmt_unit(ACCT_UNIT_BYTES, -512).s, "-512B");
	assert_string_equal(fmt_unit(ACCT_UNIT_BYTES, INT64_MIN).s, "-9223372036854775808B");
	assert_string_equal(fmt_unit(ACCT_UNIT_USEC, 1500).s, "1.5ms");
	assert_string_equal(fmt_unit(ACCT_UNIT_COUNT, 1536).s, "1536");
	assert_string_equal(fmt_exact(ACCT_UNIT_BYTES, 3221225472).s, "3221225472 bytes");
	assert_string_equal(fmt_exact(ACCT_UNIT_USEC, 1500).s, "1500us");
	assert_string_equal(fmt_exact(ACCT_UNIT_COUNT, 7).s, "7");
	assert_string_equal(fmt_2f(1.005).s, "1.00");
	assert_string_equal(fmt_int(-3).s, "-3");
	/* the quantity table's first entry, another, and a name it lacks */
	assert_int_equal(quantity_unit("memory"), ACCT_UNIT_BYTES);
	assert_int_equal(quantity_unit("cpu.usage"), ACCT_UNIT_USEC);
	assert_int_equal(quantity_unit("cpu.periods"), ACCT_UNIT_COUNT);
	assert_int_equal(quantity_unit("no.such"), ACCT_UNIT_COUNT);
	assert_true(quantity_is_limit("memory.max"));
	assert_false(quantity_is_limit("memory"));
	assert_false(quantity_is_limit("no.such"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_styled),
		cmocka_unit_test(test_style_then_grow),
		cmocka_unit_test(test_empty_cells),
		cmocka_unit_test(test_control_escaped),
		cmocka_unit_test(test_ellipsized_to_width),
		cmocka_unit_test(test_header_bar_width),
		cmocka_unit_test(test_reused_after_done),
		cmocka_unit_test(test_reads_ncols_only),
		cmocka_unit_test(test_text_width),
		cmocka_unit_test(test_ellipsize_middle),
		cmocka_unit_test(test_ages),
		cmocka_unit_test(test_units),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
