/* test-strv.c - unit tests of string vectors (lib/basic/strv.h): freeing
 * NULL, pushing with and without copying, splitting at blanks, copying (NULL
 * and empty give NULL) and glob matching. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strv.h"

static void test_free_and_length(void **state)
{
	(void)state;
	assert_null(strv_free(NULL));
	assert_int_equal(strv_length(NULL), 0);

	_cleanup_strv_free_ char **v = strv_new_empty();
	assert_non_null(v);
	assert_null(v[0]);
	assert_int_equal(strv_length(v), 0);
	v = strv_free(v);
	assert_null(v);
}

static void test_equal(void **state)
{
	char *a[] = { "x", "y", NULL }, *b[] = { "x", "y", NULL }, *c[] = { "x", NULL }, *d[] = { "x", "z", NULL };
	char *empty[] = { NULL };

	(void)state;
	assert_true(strv_equal(a, b));
	assert_false(strv_equal(a, c));
	assert_false(strv_equal(c, a));
	assert_false(strv_equal(a, d));
	assert_true(strv_equal(NULL, empty));
	assert_true(strv_equal(NULL, NULL));
	assert_false(strv_equal(NULL, c));
}

static void test_push(void **state)
{
	_cleanup_strv_free_ char **v = NULL;
	size_t n = 0;
	char *s = strdup("one");

	(void)state;
	assert_non_null(s);
	assert_int_equal(strv_push(&v, &n, s), 0);
	assert_int_equal(strv_push_dup(&v, &n, "two"), 0);
	assert_int_equal(n, 2);
	assert_int_equal(strv_length(v), 2);
	assert_ptr_equal(v[0], s);
	assert_string_equal(v[1], "two");
	assert_null(v[2]);
}

static void test_split(void **state)
{
	_cleanup_strv_free_ char **v = NULL, **e = NULL;

	(void)state;
	assert_int_equal(strv_split("  /a/*\t/b  /c\t", &v), 0);
	assert_int_equal(strv_length(v), 3);
	assert_string_equal(v[0], "/a/*");
	assert_string_equal(v[1], "/b");
	assert_string_equal(v[2], "/c");

	assert_int_equal(strv_split(" \t ", &e), 0);
	assert_non_null(e);
	assert_int_equal(strv_length(e), 0);
}

static void test_split_set(void **state)
{
	_cleanup_strv_free_ char **v = NULL, **e = NULL;

	(void)state;
	assert_int_equal(strv_split_set(",default,,-numa  +cpu\t,", ", \t", &v), 0);
	assert_int_equal(strv_length(v), 3);
	assert_string_equal(v[0], "default");
	assert_string_equal(v[1], "-numa");
	assert_string_equal(v[2], "+cpu");

	assert_int_equal(strv_split_set(", ,", ", \t", &e), 0);
	assert_non_null(e);
	assert_int_equal(strv_length(e), 0);
}

static void test_copy(void **state)
{
	char *src[] = { "x", "y", NULL };
	char *empty[] = { NULL };
	char **c = (char **)1;

	(void)state;
	assert_int_equal(strv_copy(NULL, &c), 0);
	assert_null(c);
	c = (char **)1;
	assert_int_equal(strv_copy(empty, &c), 0);
	assert_null(c);

	assert_int_equal(strv_copy(src, &c), 0);
	assert_int_equal(strv_length(c), 2);
	assert_ptr_not_equal(c[0], src[0]);
	assert_string_equal(c[0], "x");
	assert_string_equal(c[1], "y");
	c = strv_free(c);
}

static void test_fnmatch_any(void **state)
{
	char *globs[] = { "/system.slice/*", "/user.slice", NULL };
	char *none[] = { NULL };

	(void)state;
	assert_true(strv_fnmatch_any(globs, "/system.slice/foo.service"));
	assert_true(strv_fnmatch_any(globs, "/user.slice"));
	assert_false(strv_fnmatch_any(globs, "/user.slice/x"));
	assert_false(strv_fnmatch_any(globs, "/"));
	assert_false(strv_fnmatch_any(none, "/"));
	assert_false(strv_fnmatch_any(NULL, "/"));
}

/* Every matching glob is marked, not only the first: which ones ever matched. */
static void test_fnmatch_mark(void **state)
{
	char *globs[] = { "/system.slice/*", "*.service", "/nosuch", NULL };
	uint64_t hits = 0;
	(void)state;

	assert_true(strv_fnmatch_mark(globs, "/system.slice/foo.service", &hits));
	assert_int_equal(hits, 3);
	assert_false(strv_fnmatch_mark(globs, "/user.slice", &hits));
	assert_int_equal(hits, 3);
	assert_false(strv_fnmatch_mark(NULL, "/", &hits));
	assert_int_equal(hits, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_and_length),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_push),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_set),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_fnmatch_any),
		cmocka_unit_test(test_fnmatch_mark),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
