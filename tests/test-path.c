/* test-path.c - unit tests of path strings (lib/basic/path.h): the depth of
 * relative cgroup paths, joining without doubled slashes, and the API's
 * confinement rules: normalising a client's cgroup path and "at or under a
 * prefix" by whole components. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc-fail.h"
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
	/* and it fits the memory it was given */
	assert_true(alloc_last_malloc_size() >= strlen(want) + 1);
}

static void test_join(void **state)
{
	(void)state;
	check_join("/sys/fs/cgroup", "memory", "/sys/fs/cgroup/memory");
	check_join("/sys/fs/cgroup/", "memory", "/sys/fs/cgroup/memory");
	check_join("/", "a", "/a");
	check_join("", "a", "/a");
	check_join("/etc/acctd/acctd.conf.d", "10-x.conf", "/etc/acctd/acctd.conf.d/10-x.conf");

	/* the result is terminated even in memory that held something before:
	 * fill a block of the result's size and free it for the join to reuse */
	for (int i = 0; i < 8; i++) {
		char *junk = malloc(sizeof("/sys/fs/cgroup/memory"));
		assert_non_null(junk);
		memset(junk, 'x', sizeof("/sys/fs/cgroup/memory"));
		free(junk);
		check_join("/sys/fs/cgroup", "memory", "/sys/fs/cgroup/memory");
	}

	/* out of memory: NULL */
	alloc_fail_after(0);
	char *p = path_join("/a", "b");
	alloc_fail_off();
	assert_null(p);
	assert_true(alloc_fail_hit());
}

static bool under(const char *path, const char *prefix)
{
	return path_under(path, prefix, strlen(prefix));
}

/* Whole components (issue 17: without the boundary check "/a" matched its
 * sibling "/ab", and no test noticed). */
static void test_under_sibling(void **state)
{
	(void)state;
	assert_true(under("/a", "/a"));
	assert_true(under("/a/b", "/a"));
	assert_true(under("/a/b/c", "/a"));
	assert_false(under("/ab", "/a"));
	assert_false(under("/ab/c", "/a"));
	assert_false(under("/a.slice", "/a"));
	assert_false(under("/b", "/a"));
	assert_false(under("/", "/a"));
	assert_false(under("/a", "/a/b"));
	assert_true(under("/a/b", "/a/b"));
	assert_false(under("/a/bc", "/a/b"));
	assert_false(under("/a/c", "/a/b"));
	assert_false(under("/x/b", "/a/b"));
	/* the root is a prefix of everything, itself included */
	assert_true(under("/", "/"));
	assert_true(under("/a", "/"));
	assert_true(under("/ab/c", "/"));
}

static void check_normalize(const char *in, const char *want)
{
	char out[CGROUP_PATH_MAX + 1];

	print_message("normalize '%s'\n", in);
	assert_null(path_normalize_cgroup(in, strlen(in), out));
	assert_string_equal(out, want);
}

static void check_refused(const char *in, size_t len, const char *why)
{
	char out[CGROUP_PATH_MAX + 1];
	const char *r = path_normalize_cgroup(in, len, out);

	print_message("refuse '%.*s'\n", (int)MIN(len, (size_t)40), in);
	assert_non_null(r);
	assert_string_equal(r, why);
}

static void test_normalize(void **state)
{
	(void)state;
	check_normalize("/", "/");
	check_normalize("//", "/");
	check_normalize("/a", "/a");
	check_normalize("/a/", "/a");
	check_normalize("//a//b///", "/a/b");
	check_normalize("/a/b", "/a/b");
	/* names that only look like . and .. are names */
	check_normalize("/.a/..b/...", "/.a/..b/...");
	check_normalize("/a./b..", "/a./b..");
	check_normalize("/~/x y", "/~/x y");
	check_normalize("/\x80\xff", "/\x80\xff");
	/* control characters are bytes a name may hold (TAB, ESC: issue 13 item 9) */
	check_normalize("/a\tb//\x1b]0;x\x07/", "/a\tb/\x1b]0;x\x07");
	check_normalize("/a\x1f/\x7f", "/a\x1f/\x7f");
	check_normalize("/a\nb", "/a\nb");

	check_refused("", 0, "empty path");
	check_refused("a", 1, "not absolute (must start with /)");
	check_refused("a/b", 3, "not absolute (must start with /)");
	check_refused("/a\0b", 4, "contains a NUL byte");
	check_refused("\x01/a", 3, "not absolute (must start with /)");
	check_refused("/.", 2, "contains a . or .. component");
	check_refused("/..", 3, "contains a . or .. component");
	check_refused("/a/./b", 6, "contains a . or .. component");
	check_refused("/a/../b", 7, "contains a . or .. component");
	check_refused("/a/..", 5, "contains a . or .. component");
	check_refused("/a/.", 4, "contains a . or .. component");
}

/* The limits, each at its edge. */
static void test_normalize_limits(void **state)
{
	char in[CGROUP_PATH_MAX + 2], out[CGROUP_PATH_MAX + 1];
	(void)state;

	/* a component of 255 bytes is taken, 256 is not */
	in[0] = '/';
	memset(in + 1, 'x', CGROUP_NAME_MAX + 1);
	assert_null(path_normalize_cgroup(in, 1 + CGROUP_NAME_MAX, out));
	assert_int_equal(strlen(out), 1 + CGROUP_NAME_MAX);
	assert_memory_equal(out, in, 1 + CGROUP_NAME_MAX);
	check_refused(in, 1 + CGROUP_NAME_MAX + 1, "has a component longer than 255 bytes");

	/* 4096 bytes in all are taken, 4097 are not; components "/xxx" */
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = i % 4 == 0 ? '/' : 'x';
	assert_null(path_normalize_cgroup(in, CGROUP_PATH_MAX, out));
	assert_int_equal(strlen(out), CGROUP_PATH_MAX);
	assert_memory_equal(out, in, CGROUP_PATH_MAX);
	check_refused(in, CGROUP_PATH_MAX + 1, "longer than 4096 bytes");
	/* slashes count against the limit as given, before they are merged */
	memset(in, '/', CGROUP_PATH_MAX + 1);
	in[CGROUP_PATH_MAX] = 'a';
	check_refused(in, CGROUP_PATH_MAX + 1, "longer than 4096 bytes");
	assert_null(path_normalize_cgroup(in + 1, CGROUP_PATH_MAX, out));
	assert_string_equal(out, "/a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_under_sibling),
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_normalize_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
