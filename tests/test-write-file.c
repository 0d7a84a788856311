/* test-write-file.c - write_file_atomic_at() (lib/basic/write-file.h) in a
 * temporary directory: new and replaced files, relative to a directory
 * descriptor, a symlink at the target replaced rather than followed, errors
 * that leave the target untouched, and no temporary file left behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "read-file.h"
#include "test-tree.h"
#include "util.h"
#include "write-file.h"

static int setup(void **state)
{
	*state = make_tmpdir("test-write-file");
	return 0;
}

static int teardown(void **state)
{
	rm_rf(*state);
	free(*state);
	return 0;
}

static void assert_content(const char *path, const char *want)
{
	_cleanup_free_ char *got = read_file_at(AT_FDCWD, path);
	assert_non_null(got);
	assert_string_equal(got, want);
}

/* Names in dir other than the ones expected: a temporary file left behind. */
static unsigned others(const char *dir, const char *const *expected)
{
	_cleanup_(closedirp) DIR *d = opendir(dir);
	unsigned n = 0;
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		bool known = false;
		for (const char *const *e = expected; *e; e++)
			known |= strcmp(de->d_name, *e) == 0;
		n += !known;
	}
	return n;
}

static void test_new_and_replaced(void **state)
{
	const char *dir = *state;
	_cleanup_free_ char *path = xjoin(dir, "state.json");
	mode_t mask = umask(022);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, path, "first\n", 6, 0640), 0);
	assert_content(path, "first\n");
	struct stat st1, st2;
	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(st1.st_mode & 07777, 0640);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, path, "second, longer\n", 15, 0644), 0);
	assert_content(path, "second, longer\n");
	assert_int_equal(stat(path, &st2), 0);
	assert_int_equal(st2.st_mode & 07777, 0644);
	/* a new file renamed over the old one, never the old one rewritten */
	assert_int_not_equal(st1.st_ino, st2.st_ino);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, path, "", 0, 0644), 0);
	assert_content(path, "");
	umask(mask);
	assert_int_equal(others(dir, (const char *const[]){ "state.json", NULL }), 0);
}

/* The durable variant replaces the same way (its fsyncs are not observable
 * here; the charges' state file's SIGKILL tests rely on them). */
static void test_durable(void **state)
{
	const char *dir = *state;
	_cleanup_free_ char *path = xjoin(dir, "charges.state");
	mode_t mask = umask(022);
	assert_int_equal(write_file_durable_at(AT_FDCWD, path, "one\n", 4, 0600), 0);
	assert_content(path, "one\n");
	assert_int_equal(write_file_durable_at(AT_FDCWD, path, "two, longer\n", 12, 0600), 0);
	assert_content(path, "two, longer\n");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	umask(mask);
	assert_int_equal(others(dir, (const char *const[]){ "charges.state", NULL }), 0);
	/* a directory that is not there: nothing written, the error returned */
	_cleanup_free_ char *nodir = xjoin(dir, "no/such/charges.state");
	assert_int_equal(write_file_durable_at(AT_FDCWD, nodir, "x", 1, 0600), -ENOENT);
}

/* What a writer killed between linkat() and rename() leaves is removed; names
 * that only look alike, other files' temporaries and symlinks stay. */
static void test_remove_stale(void **state)
{
	const char *dir = *state;
	static const char *const stale[] = { ".state.json.0123456789abcdef", ".state.json.fedcba9876543210" };
	static const char *const kept[] = { "state.json", ".state.json.0123", ".state.json.0123456789abcdeg",
					    ".state.json.0123456789ABCDEF", ".other.json.0123456789abcdef",
					    ".state.json.0123456789abcdef0", NULL };

	for (size_t i = 0; i < ELEMENTSOF(stale); i++)
		xwrite(dir, stale[i], "partial");
	for (const char *const *k = kept; *k; k++)
		xwrite(dir, *k, "x");
	_cleanup_free_ char *target = xjoin(dir, "elsewhere"), *link = xjoin(dir, ".state.json.00000000000000aa");
	xwrite(dir, "elsewhere", "theirs");
	assert_int_equal(symlink(target, link), 0);
	_cleanup_free_ char *path = xjoin(dir, "state.json");

	assert_int_equal(write_file_remove_stale_at(AT_FDCWD, path), 2);
	static const char *const left[] = { "state.json", ".state.json.0123", ".state.json.0123456789abcdeg",
					    ".state.json.0123456789ABCDEF", ".other.json.0123456789abcdef",
					    ".state.json.0123456789abcdef0", "elsewhere", ".state.json.00000000000000aa",
					    NULL };
	assert_int_equal(others(dir, left), 0);
	assert_content(target, "theirs");
	assert_int_equal(write_file_remove_stale_at(AT_FDCWD, path), 0);
	_cleanup_free_ char *missing = xjoin(dir, "nodir/state.json");
	assert_int_equal(write_file_remove_stale_at(AT_FDCWD, missing), -ENOENT);
}

static void test_relative_to_dirfd(void **state)
{
	const char *dir = *state;
	xmkdir(dir, "sub");
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(write_file_atomic_at(dfd, "sub/f", "x", 1, 0644), 0);
	assert_int_equal(write_file_atomic_at(dfd, "g", "y", 1, 0644), 0);
	_cleanup_free_ char *f = xjoin(dir, "sub/f"), *g = xjoin(dir, "g");
	assert_content(f, "x");
	assert_content(g, "y");
}

/* A symlink at the target (someone else's, in a shared directory) is
 * replaced by the new file; what it pointed to stays as it was. */
static void test_symlink_replaced_not_followed(void **state)
{
	const char *dir = *state;
	_cleanup_free_ char *victim = xjoin(dir, "victim"), *path = xjoin(dir, "state.json");
	xwrite(dir, "victim", "secret\n");
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, path, "state\n", 6, 0644), 0);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_content(path, "state\n");
	assert_content(victim, "secret\n");
}

/* Errors: the step's errno, the target untouched, nothing left behind. */
static void test_errors(void **state)
{
	const char *dir = *state;
	_cleanup_free_ char *path = xjoin(dir, "keep"), *under_file = xjoin(dir, "keep/x"),
			    *missing = xjoin(dir, "no/such/dir/f"), *trailing = xjoin(dir, "sub/");
	xwrite(dir, "keep", "old\n");
	assert_int_equal(write_file_atomic_at(AT_FDCWD, under_file, "new", 3, 0644), -ENOTDIR);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, missing, "new", 3, 0644), -ENOENT);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, trailing, "new", 3, 0644), -EISDIR);
	/* a directory at the target: rename() refuses to replace it */
	xmkdir(dir, "adir");
	_cleanup_free_ char *adir = xjoin(dir, "adir");
	assert_int_equal(write_file_atomic_at(AT_FDCWD, adir, "new", 3, 0644), -EISDIR);
	assert_content(path, "old\n");
	assert_int_equal(others(dir, (const char *const[]){ "keep", "adir", NULL }), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_and_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_durable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relative_to_dirfd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_replaced_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};
	return cmocka_run_group_tests_name("write-file", tests, NULL, NULL);
}
