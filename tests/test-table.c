/* test-table.c - unit tests of acctctl's table renderer (daemon/acctctl/table.h)
 * with styles: a table without table_style() prints no escape sequence, a
 * styled cell is wrapped in its SGR sequence without its padding, the styled
 * header is a bar as wide as the width asked for, and styles set before more
 * rows are added stay with their cells. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acctctl.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_styled),
		cmocka_unit_test(test_style_then_grow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
