/* test-plot.c - unit tests of acctctl's terminal plot (daemon/acctctl/plot.h):
 * the exact text of small plots in braille and in ASCII, with a gap (the line
 * breaks, the axis is dotted), a constant and an all-zero series, a step (the
 * ASCII join), more values than columns (means), and the refusals. TZ=UTC
 * for the times on the x axis. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "acctctl.h"
#include "human.h"
#include "plot.h"
#include "util.h"

/* ctl-util.c's print_json() reads it; the plot does not. */
enum json_mode arg_json;

/* 2026-12-01 10:00:00 UTC */
#define T0 UINT64_C(1796119200000000)
#define MIN_US UINT64_C(60000000)

/* 1M, 2M, 4M, no data for two minutes, 3M, 3M, 1M, 0 */
static const double memory[] = { 0, 1048576, 2097152, 4194304, NAN, NAN, 3145728, 3145728, 1048576, 0 };

static char *draw(const struct plot_series *s, unsigned width, unsigned height, bool unicode, int expect_r)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	assert_non_null(f);
	assert_int_equal(plot_draw(f, s, width, height, unicode), expect_r);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void expect(const struct plot_series *s, unsigned width, unsigned height, bool unicode, const char *expected)
{
	char *text = draw(s, width, height, unicode, 0);

	if (strcmp(text, expected) != 0)
		print_error("got:\n%s\nexpected:\n%s\n", text, expected);
	assert_string_equal(text, expected);
	/* every line within the width */
	for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = '\0';
		assert_true(text_width(line) <= width);
	}
	free(text);
}

static void test_gap_braille(void **state)
{
	struct plot_series s = { "Memory", PLOT_BYTES, memory, ELEMENTSOF(memory), T0, MIN_US };

	(void)state;
	expect(&s, 24, 4, true,
	       "Memory\n"
	       "4.0M ┤     ⢸⠉⠁\n"
	       "     │    ⣀⡸     ⠉⠉⠉⢱\n"
	       "     │  ⣀⣀⠇         ⢸⣀⡀\n"
	       "  0B ┤⣀⣀⠇             ⢸⣀\n"
	       "     └───────┈┈┈┈───────\n"
	       "      10:00  10:05 10:10\n");
}

static void test_gap_ascii(void **state)
{
	struct plot_series s = { "Memory", PLOT_BYTES, memory, ELEMENTSOF(memory), T0, MIN_US };

	(void)state;
	/* 4M before the gap and 3M after it are not joined */
	expect(&s, 24, 4, false,
	       "Memory\n"
	       "4.0M +      **\n"
	       "     |    **     ****\n"
	       "     |  **           **\n"
	       "  0B +**               *\n"
	       "     +--------...-------\n"
	       "      10:00  10:05 10:10\n");
}

static void test_constant(void **state)
{
	static const double c[] = { 0.5, 0.5, 0.5, 0.5 };
	struct plot_series s = { "CPU", PLOT_CORES, c, ELEMENTSOF(c), T0, MIN_US };

	(void)state;
	expect(&s, 20, 2, true,
	       "CPU\n"
	       "0.50 ┤⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉\n"
	       "0.00 ┤\n"
	       "     └──────────────\n"
	       "      10:00:00\n");
	expect(&s, 20, 2, false,
	       "CPU\n"
	       "0.50 +**************\n"
	       "0.00 +\n"
	       "     +--------------\n"
	       "      10:00:00\n");
}

static void test_all_zero(void **state)
{
	static const double z[] = { 0, 0, 0 };
	struct plot_series s = { "Tasks", PLOT_COUNT, z, ELEMENTSOF(z), T0, 60 * MIN_US };

	(void)state;
	/* the line at the bottom of a one-unit axis, not in the middle of nothing */
	expect(&s, 20, 2, false,
	       "Tasks\n"
	       "1 +\n"
	       "0 +*****************\n"
	       "  +-----------------\n"
	       "   10:00 11:30 13:00\n");
}

static void test_step_join(void **state)
{
	static const double st[] = { 0, 0, 0, 0, 100, 100, 100, 100 };
	struct plot_series s = { "IO", PLOT_BYTES_PER_S, st, ELEMENTSOF(st), T0, 1440 * MIN_US };

	(void)state;
	/* a window over a day has dates on the x axis */
	expect(&s, 22, 5, false,
	       "IO\n"
	       "100B/s +       *******\n"
	       "       |       |\n"
	       " 50B/s +       |\n"
	       "       |       |\n"
	       "  0B/s +*******\n"
	       "       +--------------\n"
	       "        12-01 10:00\n");
}

static void test_means(void **state)
{
	double many[40];
	struct plot_series s = { "Mean", PLOT_COUNT, many, ELEMENTSOF(many), T0, MIN_US };

	(void)state;
	/* 40 values on 10 columns: each column the mean of four; a column
	 * that has only some data shows the mean of those */
	for (size_t i = 0; i < ELEMENTSOF(many); i++)
		many[i] = i < 20 ? 0 : 10;
	many[0] = many[1] = many[2] = NAN;
	expect(&s, 14, 3, false,
	       "Mean\n"
	       "10 +     *****\n"
	       "   |     |\n"
	       " 0 +*****\n"
	       "   +----------\n"
	       "    10:00\n");
}

static void test_all_gap(void **state)
{
	static const double g[] = { NAN, NAN };
	struct plot_series s = { "Memory", PLOT_BYTES, g, ELEMENTSOF(g), T0, MIN_US };

	(void)state;
	expect(&s, 16, 2, false,
	       "Memory\n"
	       "1B +\n"
	       "0B +\n"
	       "   +............\n"
	       "    10:00:00\n");
}

/* The ages the axis and the tables print, at each unit's edges: minutes
 * carry the seconds within the minute, not the seconds since the hour. */
static void test_fmt_age(void **state)
{
	(void)state;
	assert_string_equal(fmt_age(400000).s, "0.4s");
	assert_string_equal(fmt_age(59900000).s, "59.9s");
	assert_string_equal(fmt_age(60000000).s, "1min 0s");
	assert_string_equal(fmt_age(192000000).s, "3min 12s");
	assert_string_equal(fmt_age(INT64_C(3599000000)).s, "59min 59s");
}

static void test_refused(void **state)
{
	struct plot_series s = { "Memory", PLOT_BYTES, memory, ELEMENTSOF(memory), T0, MIN_US };
	struct plot_series empty = { "Memory", PLOT_BYTES, memory, 0, T0, MIN_US };
	char *text;

	(void)state;
	/* nothing written on failure */
	text = draw(&empty, 80, 10, true, -EINVAL);
	assert_string_equal(text, "");
	free(text);
	text = draw(&s, 80, PLOT_MIN_HEIGHT - 1, true, -EINVAL);
	assert_string_equal(text, "");
	free(text);
	/* "4.0M" and " ┤" leave 7 columns of 13 */
	text = draw(&s, 13, 4, false, -EINVAL);
	assert_string_equal(text, "");
	free(text);
	text = draw(&s, 14, 4, false, 0);
	free(text);
	assert_int_equal(plot_data_columns(&s, 14), PLOT_MIN_COLUMNS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gap_braille), cmocka_unit_test(test_gap_ascii), cmocka_unit_test(test_constant),
		cmocka_unit_test(test_all_zero), cmocka_unit_test(test_fmt_age),    cmocka_unit_test(test_step_join), cmocka_unit_test(test_means),
		cmocka_unit_test(test_all_gap),     cmocka_unit_test(test_refused),
	};

	assert_int_equal(setenv("TZ", "UTC", 1), 0);
	tzset();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
