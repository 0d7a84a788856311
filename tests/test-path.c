/* test-path.c - unit tests of path strings (lib/basic/path.h): the depth of
 * relative cgroup paths and joining without doubled slashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "path.h"
#include "util.h"

static void test_depth(void **state)
{
	(void)state;
	assert_int_equal(path_depth("/"), 0);
	assert_int_equal(path_depth("/a"), 1);
	assert_int_equal(path_depth("/a/b"), 2);
	assert_int_equal(path_depth("/system.slice/foo.service/x"), 3);
}

static void check_join(const char *a, const char *b, const char *want)
{
	_cleanup_free_ char *p = path_join(a, b);

	assert_non_null(p);
	assert_string_equal(p, want);
}

static void test_join(void **state)
{
	(void)state;
	check_join("/sys/fs/cgroup", "memory", "/sys/fs/cgroup/memory");
	check_join("/sys/fs/cgroup/", "memory", "/sys/fs/cgroup/memory");
	check_join("/", "a", "/a");
	check_join("", "a", "/a");
	check_join("/etc/acctd/acctd.conf.d", "10-x.conf", "/etc/acctd/acctd.conf.d/10-x.conf");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_join),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
