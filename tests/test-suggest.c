/* test-suggest.c - unit tests of the "did you mean" distance and choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "suggest.h"
#include "util.h"

static void test_distance(void **state)
{
	static const struct {
		const char *a, *b;
		size_t d;
	} cases[] = {
		{ "", "", 0 },
		{ "abc", "abc", 0 },
		{ "", "abc", 3 },
		{ "abc", "", 3 },
		{ "fast_intervall", "fast_interval", 1 }, /* insertion */
		{ "fast_interva", "fast_interval", 1 },   /* deletion */
		{ "fast_interwal", "fast_interval", 1 },  /* substitution */
		{ "fats_interval", "fast_interval", 1 },  /* adjacent swap */
		{ "ca", "abc", 3 },                       /* OSA: no edit of a swapped pair */
		{ "kitten", "sitting", 3 },
		{ "cgroup", "cgroups", 1 },
		{ "Metrics", "metrics", 1 },
		{ "interval", "fast_interval", 5 },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		print_message("'%s' '%s'\n", cases[i].a, cases[i].b);
		assert_int_equal(suggest_distance(cases[i].a, cases[i].b), cases[i].d);
		assert_int_equal(suggest_distance(cases[i].b, cases[i].a), cases[i].d);
	}

	char longer[SUGGEST_MAX_NAME + 2];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(suggest_distance(longer, "a"), (size_t)-1);
	assert_int_equal(suggest_distance("a", longer), (size_t)-1);
	longer[SUGGEST_MAX_NAME] = '\0'; /* exactly the longest */
	assert_int_equal(suggest_distance(longer, ""), SUGGEST_MAX_NAME);
}

static void test_nearest(void **state)
{
	static const char *const names[] = { "fast_interval", "slow_interval", "rescan_interval", "workers",
					     "log", "api", NULL };

	(void)state;
	assert_string_equal(suggest_nearest("fast_intervall", names), "fast_interval");
	assert_string_equal(suggest_nearest("slow_intreval", names), "slow_interval");
	assert_string_equal(suggest_nearest("worker", names), "workers");
	assert_string_equal(suggest_nearest("lgo", names), "log");
	assert_string_equal(suggest_nearest("apx", names), "api");
	/* the limit grows with the word: 1 edit up to 4 characters, 2 up to 8, 3 beyond */
	assert_null(suggest_nearest("agx", names));           /* 2 edits from "api", 3 characters */
	assert_string_equal(suggest_nearest("wrkrs", names), "workers"); /* 2 edits, 5 characters */
	assert_null(suggest_nearest("wrkr", names));          /* 3 edits */
	assert_string_equal(suggest_nearest("fst_intrvl", names), "fast_interval"); /* 3 edits, 10 characters */
	assert_null(suggest_nearest("f_intrvl", names));      /* 5 edits */
	/* fewer edits than characters: "x" is 1 from nothing useful */
	assert_null(suggest_nearest("x", (const char *const[]){ "y", NULL }));
	assert_null(suggest_nearest("", names));
	/* an exact match suggests nothing; ties go to the first */
	assert_null(suggest_nearest("workers", names));
	assert_string_equal(suggest_nearest("ab", (const char *const[]){ "abc", "abd", NULL }), "abc");
	assert_string_equal(suggest_nearest("abd_", (const char *const[]){ "abcx_", "abd", NULL }), "abd");
	assert_null(suggest_nearest("anything", (const char *const[]){ NULL }));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distance),
		cmocka_unit_test(test_nearest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
