/* test-config.c - unit tests of the configuration: defaults, every key, the
 * exact messages for bad values and syntax errors, warnings, drop-in order,
 * the dump/reload round trip and the value parsers. The file is long because
 * every key of keys[] and every message is checked one by one. Files are
 * written to a mkdtemp() directory that each test removes again. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <ini.h>

#include "alloc-fail.h"
#include "collector-mode.h"
#include "budget-limits.h"
#include "config.h"
#include "parse.h"
#include "strv.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free)

static const struct acct_config poison;
#define POISON ((struct acct_config *)&poison)

/* ---- injection hooks (tests/meson.build wraps these for test-config) ------ */

/* The line buffer of config.c's reader with a guard byte before it
 * (test_blank_lines): while `guard_armed`, the first getline() of a file
 * (its buffer still NULL) is given a buffer of our own whose preceding byte
 * is '\n'. Before a malloc()ed buffer lies malloc's own header, whose last
 * byte is 0 for any size, so a reader that looked before the line's start
 * would go unseen there. free() hands the block back whole. With
 * optimisation glibc's headers turn getline() into __getdelim(). */
#define GUARD_BUF 256 /* the lines read while armed are shorter */
static bool guard_armed;
static char *guard_block; /* [0] is the guard byte, the buffer follows */

ssize_t __real_getline(char **line, size_t *n, FILE *f);
ssize_t __real___getdelim(char **line, size_t *n, int delim, FILE *f);
void __real_free(void *p);
ssize_t __wrap_getline(char **line, size_t *n, FILE *f);
ssize_t __wrap___getdelim(char **line, size_t *n, int delim, FILE *f);
void __wrap_free(void *p);

static void guard_buffer(char **line, size_t *n)
{
	if (!guard_armed || *line)
		return;
	assert_null(guard_block);
	guard_block = malloc(GUARD_BUF + 1);
	assert_non_null(guard_block);
	guard_block[0] = '\n';
	*line = guard_block + 1;
	*n = GUARD_BUF;
}

ssize_t __wrap_getline(char **line, size_t *n, FILE *f)
{
	guard_buffer(line, n);
	return __real_getline(line, n, f);
}

ssize_t __wrap___getdelim(char **line, size_t *n, int delim, FILE *f)
{
	guard_buffer(line, n);
	return __real___getdelim(line, n, delim, f);
}

void __wrap_free(void *p)
{
	if (guard_block && p == guard_block + 1) {
		p = guard_block;
		guard_block = NULL;
	}
	__real_free(p);
}

/* inih's result -2 (out of memory: only an inih built without
 * INI_USE_STACK returns it) while `inih_out_of_memory`. */
static bool inih_out_of_memory;

int __real_ini_parse_stream(ini_reader reader, void *stream, ini_handler handler, void *user);
int __wrap_ini_parse_stream(ini_reader reader, void *stream, ini_handler handler, void *user);

int __wrap_ini_parse_stream(ini_reader reader, void *stream, ini_handler handler, void *user)
{
	if (inih_out_of_memory)
		return -2;
	return __real_ini_parse_stream(reader, stream, handler, user);
}

/* open_memstream() fails (ENOMEM) after `memstream_left` more calls while
 * `memstream_armed`, once: its buffer is glibc's, out of alloc-fail.h's reach. */
static bool memstream_armed, memstream_hit;
static unsigned memstream_left;

FILE *__real_open_memstream(char **ptr, size_t *size);
FILE *__wrap_open_memstream(char **ptr, size_t *size);

FILE *__wrap_open_memstream(char **ptr, size_t *size)
{
	if (memstream_armed && memstream_left-- == 0) {
		memstream_armed = false;
		memstream_hit = true;
		errno = ENOMEM;
		return NULL;
	}
	return __real_open_memstream(ptr, size);
}

/* ---- helpers ------------------------------------------------------------- */

struct tmp {
	char dir[64];
	char *files[32];
	size_t nr_files;
	char *dirs[8];
	size_t nr_dirs;
};

static int setup_tmp(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	strcpy(t->dir, "/tmp/test-config-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	*state = t;
	return 0;
}

static int teardown_tmp(void **state)
{
	struct tmp *t = *state;

	for (size_t i = t->nr_files; i > 0; i--) {
		assert_int_equal(unlink(t->files[i - 1]), 0);
		free(t->files[i - 1]);
	}
	for (size_t i = t->nr_dirs; i > 0; i--) {
		assert_int_equal(rmdir(t->dirs[i - 1]), 0);
		free(t->dirs[i - 1]);
	}
	assert_int_equal(rmdir(t->dir), 0);
	free(t);
	return 0;
}

static char *tmp_path(struct tmp *t, const char *name)
{
	char *p = NULL;

	assert_true(asprintf(&p, "%s/%s", t->dir, name) > 0);
	return p;
}

/* Create directory NAME under the temporary directory; returns its path (owned by t). */
static const char *tmp_mkdir(struct tmp *t, const char *name)
{
	char *p = tmp_path(t, name);

	assert_int_equal(mkdir(p, 0755), 0);
	assert_true(t->nr_dirs < ELEMENTSOF(t->dirs));
	t->dirs[t->nr_dirs++] = p;
	return p;
}

/* Write file NAME with `text`; returns its path (owned by t). */
static const char *tmp_write(struct tmp *t, const char *name, const char *text)
{
	char *p = tmp_path(t, name);
	FILE *f = fopen(p, "we");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_true(t->nr_files < ELEMENTSOF(t->files));
	t->files[t->nr_files++] = p;
	return p;
}

static char *data_path(const char *rel)
{
	const char *d = getenv("ACCT_TEST_DATA");
	char *p = NULL;

	assert_true(asprintf(&p, "%s/%s", d ? d : "tests/data", rel) > 0);
	return p;
}

static void assert_strv(char *const *v, const char *const *expected)
{
	size_t i;

	assert_non_null(v);
	for (i = 0; expected[i]; i++) {
		assert_non_null(v[i]);
		assert_string_equal(v[i], expected[i]);
	}
	assert_null(v[i]);
}

static bool strv_eq(char *const *a, char *const *b)
{
	size_t i;

	if (!a || !b)
		return a == b;
	for (i = 0; a[i] && b[i]; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return !a[i] && !b[i];
}

static bool str_eq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

/* Every configured value (not the list of sources) is the same. */
static void assert_config_equal(const struct acct_config *a, const struct acct_config *b)
{
	assert_int_equal(a->fast_interval_us, b->fast_interval_us);
	assert_int_equal(a->slow_interval_us, b->slow_interval_us);
	assert_int_equal(a->rescan_interval_us, b->rescan_interval_us);
	assert_int_equal(a->workers, b->workers);
	assert_int_equal(a->load_average, b->load_average);
	assert_true(str_eq(a->cgroup_root, b->cgroup_root));
	assert_true(strv_eq(a->include, b->include));
	assert_true(strv_eq(a->exclude, b->exclude));
	assert_int_equal(a->max_depth, b->max_depth);
	assert_int_equal(a->tombstone_retention_us, b->tombstone_retention_us);
	assert_int_equal(a->max_tombstones, b->max_tombstones);
	assert_int_equal(a->log_rate_limit_interval_us, b->log_rate_limit_interval_us);
	assert_int_equal(a->log_rate_limit_burst, b->log_rate_limit_burst);
	assert_int_equal(a->bytes_budget, b->bytes_budget);
	assert_int_equal(a->cpu_budget_us, b->cpu_budget_us);
	assert_int_equal(a->tasks_budget, b->tasks_budget);
	assert_int_equal(a->auto_tune, b->auto_tune);
	assert_true(str_eq(a->socket_path, b->socket_path));
	assert_true(str_eq(a->admin_group, b->admin_group));
	assert_int_equal(a->max_message_size, b->max_message_size);
	assert_int_equal(a->max_connections, b->max_connections);
	assert_int_equal(a->max_connections_per_user, b->max_connections_per_user);
	assert_int_equal(a->idle_timeout_us, b->idle_timeout_us);
	assert_int_equal(a->max_output_queue, b->max_output_queue);
	assert_true(str_eq(a->metrics_listen, b->metrics_listen));
	assert_int_equal(a->metrics_max_depth, b->metrics_max_depth);
	assert_int_equal(a->metrics_max_series, b->metrics_max_series);
	assert_int_equal(a->log_level, b->log_level);
}

/* Load `text` as the main file (no drop-ins); expect failure `err` with
 * message "PATH:`line`: `msg`". */
static void expect_load_error(struct tmp *t, const char *text, int err, const char *msg)
{
	struct acct_config_diag diag = {};
	struct acct_config *c = POISON;
	const char *path = tmp_write(t, "bad.conf", text);
	char *expected = NULL;

	assert_true(asprintf(&expected, "%s:%s", path, msg) > 0);
	assert_int_equal(acct_config_load(path, "", &c, &diag), err);
	assert_ptr_equal(c, POISON);
	assert_non_null(diag.error);
	assert_string_equal(diag.error, expected);
	free(expected);
	acct_config_diag_clear(&diag);
	assert_null(diag.error);
	assert_null(diag.warnings);

	assert_int_equal(unlink(path), 0);
	free(t->files[--t->nr_files]);
}

/* ---- defaults ------------------------------------------------------------ */

static void expected_socket(char *buf, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (geteuid() == 0)
		snprintf(buf, size, "/run/acctd/io.acctd");
	else if (xdg && xdg[0] == '/')
		snprintf(buf, size, "%s/acctd/io.acctd", xdg);
	else
		snprintf(buf, size, "/run/user/%u/acctd/io.acctd", (unsigned)geteuid());
}

static void assert_defaults(const struct acct_config *c)
{
	static const char *const star[] = { "*", NULL };
	static const char *const none[] = { NULL };
	char sock[256];

	expected_socket(sock, sizeof(sock));
	assert_int_equal(c->fast_interval_us, 1000000);
	assert_int_equal(c->slow_interval_us, 10000000);
	assert_int_equal(c->rescan_interval_us, 60000000);
	assert_int_equal(c->workers, 2);
	assert_true(c->load_average);
	assert_null(c->cgroup_root);
	assert_strv(c->include, star);
	assert_strv(c->exclude, none);
	assert_int_equal(c->max_depth, 32);
	assert_int_equal(c->tombstone_retention_us, 300000000);
	assert_int_equal(c->max_tombstones, 4096);
	assert_int_equal(c->log_rate_limit_interval_us, 30000000);
	assert_int_equal(c->log_rate_limit_burst, 30);
	assert_int_equal(c->bytes_budget, 1 << 20);
	assert_int_equal(c->cpu_budget_us, 10000);
	assert_int_equal(c->tasks_budget, 8);
	assert_true(c->auto_tune);
	assert_string_equal(c->socket_path, sock);
	assert_null(c->admin_group);
	assert_int_equal(c->max_message_size, 16 << 20);
	assert_int_equal(c->max_connections, 4096);
	assert_int_equal(c->max_connections_per_user, 1024);
	assert_int_equal(c->idle_timeout_us, 300000000);
	assert_int_equal(c->max_output_queue, 4 << 20);
	/* the API's budgets (docs/api.md, "Resource budgets") */
	assert_int_equal(c->max_input_bytes_per_user, 32 << 20);
	assert_int_equal(c->max_input_bytes, 256 << 20);
	assert_int_equal(c->max_output_bytes_per_user, 32 << 20);
	assert_int_equal(c->max_output_bytes, 256 << 20);
	assert_int_equal(c->max_watches_per_user, 256);
	assert_int_equal(c->max_watches, 4096);
	assert_int_equal(c->max_watch_cgroups, 16384);
	assert_int_equal(c->max_watched_cgroups_per_user, 65536);
	assert_int_equal(c->max_watched_cgroups, 262144);
	assert_int_equal(c->max_queries_per_user, 4);
	assert_string_equal(c->metrics_listen, "127.0.0.1:9847");
	assert_int_equal(c->metrics_max_depth, 32);
	assert_int_equal(c->metrics_max_series, 50000);
	assert_int_equal(c->log_level, ACCT_LOG_INFO);
	/* [history] (docs/history.md) */
	assert_true(c->history_enabled);
	{
		_cleanup_free_ char *want = NULL;
		if (acct_config_default_history_path(&want) >= 0)
			assert_string_equal(c->history_path, want);
		else
			assert_null(c->history_path);
	}
	assert_int_equal(c->history_interval_us, UINT64_C(10000000));
	assert_int_equal(c->history_raw_retention_us, UINT64_C(3) * 3600 * 1000000);
	assert_int_equal(c->history_minute_retention_us, UINT64_C(7) * 86400 * 1000000);
	assert_int_equal(c->history_hour_retention_us, UINT64_C(365) * 86400 * 1000000);
	assert_int_equal(c->history_max_size, UINT64_C(1) << 30);
}

static void test_defaults(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	static const char *const none[] = { NULL };

	assert_int_equal(acct_config_new_defaults(&c), 0);
	assert_defaults(c);
	assert_strv(c->sources, none);
}

static void test_defaults_socket_unprivileged(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	const char *old = getenv("XDG_RUNTIME_DIR");
	char *saved = old ? strdup(old) : NULL;
	char sock[256];

	/* The root branch is the only one reachable as root; as another user
	 * check both the XDG_RUNTIME_DIR and the /run/user fallback. */
	assert_int_equal(setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1), 0);
	assert_int_equal(acct_config_new_defaults(&c), 0);
	expected_socket(sock, sizeof(sock));
	assert_string_equal(c->socket_path, sock);
	if (geteuid() != 0)
		assert_string_equal(c->socket_path, "/run/user/4242/acctd/io.acctd");
	c = acct_config_free(c);

	assert_int_equal(unsetenv("XDG_RUNTIME_DIR"), 0);
	assert_int_equal(acct_config_new_defaults(&c), 0);
	expected_socket(sock, sizeof(sock));
	assert_string_equal(c->socket_path, sock);

	if (saved)
		assert_int_equal(setenv("XDG_RUNTIME_DIR", saved, 1), 0);
	free(saved);
}

/* The documented configuration: every key commented out with its default.
 * Loading it as is, and with every key uncommented, gives the defaults. */
static void test_documented_defaults(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	_cleanup_free_ char *path = data_path("../../conf/acctd.conf");
	_cleanup_free_ char *text = NULL;
	struct acct_config_diag diag = {};
	const char *uncommented;
	size_t len = 0, keys = 0;
	FILE *in, *out;
	char *line = NULL;

	assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
	assert_null(diag.error);
	assert_int_equal(diag.nr_warnings, 0);
	assert_defaults(c);
	c = acct_config_free(c);

	in = fopen(path, "re");
	assert_non_null(in);
	out = open_memstream(&text, &len);
	assert_non_null(out);
	{
		size_t n = 0;

		while (getline(&line, &n, in) > 0) {
			/* "#key = value" lines are the commented-out keys. */
			if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z' && strstr(line, " =")) {
				fputs(line + 1, out);
				keys++;
			} else
				fputs(line, out);
		}
	}
	free(line);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(keys, 56); /* every key is documented */

	uncommented = tmp_write(t, "uncommented.conf", text);
	assert_int_equal(acct_config_load(uncommented, "", &c, &diag), 0);
	assert_null(diag.error);
	assert_int_equal(diag.nr_warnings, 0);
	if (geteuid() == 0)
		assert_defaults(c);
	acct_config_diag_clear(&diag);
}

/* ---- every key ----------------------------------------------------------- */

static void test_every_key(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	_cleanup_free_ char *path = data_path("config/full.conf");
	/* relative to the root: the leading "/" added (test_relative_globs) */
	static const char *const include[] = { "/system.slice/*", "/user.slice/*", "/machine.slice", NULL };
	static const char *const exclude[] = { "/system.slice/boring.service", "*.scope", NULL };
	struct acct_config_diag diag = {};

	assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
	assert_null(diag.error);
	assert_int_equal(diag.nr_warnings, 0);
	assert_null(diag.warnings);

	assert_int_equal(c->fast_interval_us, 250000);
	assert_int_equal(c->slow_interval_us, 15000000);
	assert_int_equal(c->rescan_interval_us, 120000000);
	assert_int_equal(c->workers, 8);
	assert_false(c->load_average);
	assert_string_equal(c->cgroup_root, "/sys/fs/cgroup/unified");
	assert_strv(c->include, include);
	assert_strv(c->exclude, exclude);
	assert_int_equal(c->max_depth, 7);
	assert_int_equal(c->tombstone_retention_us, 3600000000ULL);
	assert_int_equal(c->bytes_budget, 512 * 1024);
	assert_int_equal(c->cpu_budget_us, 1500);
	assert_int_equal(c->tasks_budget, 0);
	assert_false(c->auto_tune);
	assert_string_equal(c->socket_path, "/tmp/acctd-test/io.acctd");
	assert_string_equal(c->admin_group, "acctd-admin");
	assert_int_equal(c->max_message_size, 1 << 20);
	assert_int_equal(c->max_connections, 100);
	assert_int_equal(c->max_connections_per_user, 10);
	assert_int_equal(c->idle_timeout_us, 90000000);
	assert_int_equal(c->max_output_queue, 12345);
	assert_string_equal(c->metrics_listen, "[::1]:9100");
	assert_int_equal(c->metrics_max_depth, 0);
	assert_int_equal(c->log_level, ACCT_LOG_DEBUG);

	assert_non_null(c->sources);
	assert_string_equal(c->sources[0], path);
	assert_null(c->sources[1]);
}

/* Empty values where they are allowed: root and admin_group unset, include
 * back to everything, exclude to nothing. */
static void test_empty_strings(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	static const char *const star[] = { "*", NULL };
	static const char *const none[] = { NULL };
	struct acct_config_diag diag = {};
	const char *main_file = tmp_write(t, "main.conf",
					  "[cgroups]\nroot = /x\ninclude = a b\nexclude = c\n"
					  "[api]\nadmin_group = wheel\n");
	const char *dir = tmp_mkdir(t, "main.conf.d");

	tmp_write(t, "main.conf.d/50-empty.conf",
		  "[cgroups]\nroot =\ninclude =\nexclude =\n[api]\nadmin_group =\n");
	assert_int_equal(acct_config_load(main_file, dir, &c, &diag), 0);
	assert_null(diag.error);
	assert_null(c->cgroup_root);
	assert_null(c->admin_group);
	assert_strv(c->include, star);
	assert_strv(c->exclude, none);
}

/* ---- bad values: the exact message, with file and line -------------------- */

struct bad_case {
	const char *section, *key, *value;
	int err;
	const char *reason;
};

#define A10 "aaaaaaaaaa"
#define A100 A10 A10 A10 A10 A10 A10 A10 A10 A10 A10

static const struct bad_case bad_cases[] = {
	/* durations */
	{ "sampling", "fast_interval", "abc", -EINVAL, "invalid duration 'abc' (expected " ACCT_DURATION_SYNTAX ")" },
	{ "sampling", "fast_interval", "1min 30", -EINVAL,
	  "invalid duration '1min 30' (expected " ACCT_DURATION_SYNTAX ")" },
	{ "sampling", "slow_interval", "1x", -EINVAL, "invalid duration '1x' (expected " ACCT_DURATION_SYNTAX ")" },
	{ "sampling", "slow_interval", "1S", -EINVAL, "invalid duration '1S' (expected " ACCT_DURATION_SYNTAX ")" },
	{ "sampling", "rescan_interval", "-5s", -ERANGE, "-5s is out of range (must be greater than 0)" },
	{ "sampling", "rescan_interval", "0", -ERANGE, "0 is out of range (must be greater than 0)" },
	{ "sampling", "fast_interval", "", -EINVAL, "empty value (expected a duration)" },
	{ "sampling", "fast_interval", "99999999999999999999", -ERANGE,
	  "99999999999999999999 is out of range (too large)" },
	{ "sampling", "fast_interval", "5124095577h", -ERANGE, "5124095577h is out of range (too large)" },
	{ "cgroups", "tombstone_retention", "-1min", -ERANGE, "-1min is out of range (must not be negative)" },
	{ "counters", "cpu_budget", "9223372036854775808us", -ERANGE,
	  "9223372036854775808us is out of range (too large)" },
	{ "counters", "cpu_budget", "-1ms", -ERANGE, "-1ms is out of range (must not be negative)" },
	{ "api", "idle_timeout", "0ms", -ERANGE, "0ms is out of range (must be greater than 0)" },
	{ "sampling", "fast_interval", "0.5us", -ERANGE,
	  "0.5us is out of range (must be greater than 0; durations count whole microseconds, and it rounds to 0)" },
	{ "sampling", "fast_interval", "0.000ms", -ERANGE, "0.000ms is out of range (must be greater than 0)" },
	/* a least above 1 is said; so is the largest where it is not 2^63 or more */
	{ "log", "rate_limit_interval", "999us", -ERANGE, "999us is out of range (must be at least 1ms)" },
	{ "cgroups", "max_tombstones", "4294967296", -ERANGE, "4294967296 is out of range (at most 4294967295)" },
	/* sizes */
	{ "counters", "bytes_budget", "50MB", -EINVAL,
	  "invalid size '50MB' (ambiguous unit: sizes are powers of 1024, write M or MiB)" },
	{ "counters", "bytes_budget", "4gb", -EINVAL,
	  "invalid size '4gb' (ambiguous unit: sizes are powers of 1024, write G or GiB)" },
	{ "counters", "bytes_budget", "1.5", -EINVAL,
	  "invalid size '1.5' (a count of bytes takes no fraction: use K, M or G for parts of a unit)" },
	{ "counters", "bytes_budget", "1x", -EINVAL, "invalid size '1x' (expected " ACCT_SIZE_SYNTAX ")" },
	{ "counters", "bytes_budget", "1 M M", -EINVAL, "invalid size '1 M M' (expected " ACCT_SIZE_SYNTAX ")" },
	{ "counters", "bytes_budget", "-1", -ERANGE, "-1 is out of range (must not be negative)" },
	{ "counters", "bytes_budget", "8388608T", -ERANGE, "8388608T is out of range (too large)" },
	{ "counters", "bytes_budget", "16777216T", -ERANGE, "16777216T is out of range (too large)" },
	{ "api", "max_message_size", "1K", -ERANGE, "1K is out of range (64K..1G)" },
	{ "api", "max_message_size", "2G", -ERANGE, "2G is out of range (64K..1G)" },
	{ "api", "max_message_size", "", -EINVAL, "empty value (expected a size)" },
	{ "api", "max_output_queue", "0", -ERANGE, "0 is out of range (must be greater than 0)" },
	/* integers */
	{ "sampling", "workers", "0", -ERANGE, "0 is out of range (1..64)" },
	{ "sampling", "workers", "65", -ERANGE, "65 is out of range (1..64)" },
	{ "sampling", "workers", "-1", -ERANGE, "-1 is out of range (1..64)" },
	{ "sampling", "workers", "two", -EINVAL, "invalid number 'two' (expected an integer)" },
	{ "sampling", "workers", "2k", -EINVAL, "invalid number '2k' (expected an integer)" },
	{ "cgroups", "max_depth", "256", -ERANGE, "256 is out of range (0..255)" },
	{ "counters", "tasks_budget", "-3", -ERANGE, "-3 is out of range (must not be negative)" },
	{ "counters", "tasks_budget", "9223372036854775808", -ERANGE,
	  "9223372036854775808 is out of range (too large)" },
	{ "api", "max_connections", "65537", -ERANGE, "65537 is out of range (1..65536)" },
	{ "api", "max_connections_per_user", "0", -ERANGE, "0 is out of range (1..65536)" },
	{ "metrics", "max_depth", "1000", -ERANGE, "1000 is out of range (0..255)" },
	{ "metrics", "max_series", "-1", -ERANGE, "-1 is out of range (must not be negative)" },
	{ "metrics", "max_series", "50k", -EINVAL, "invalid number '50k' (expected an integer)" },
	/* globs: the syntax of a scrape's cgroup= (cgroup-glob.h) */
	{ "metrics", "include", "/a /b//c", -EINVAL, "invalid glob '/b//c' (an empty path component)" },
	{ "metrics", "exclude", "/a/[bc", -EINVAL, "invalid glob '/a/[bc' (a '[' without its ']')" },
	{ "cgroups", "include", "system.slice/../x", -EINVAL, "invalid glob 'system.slice/../x' (a '.' or '..' path component)" },
	/* booleans and log levels */
	{ "sampling", "load_average", "maybe", -EINVAL,
	  "invalid boolean 'maybe' (expected yes, no, true, false, on, off, 1 or 0)" },
	{ "counters", "auto_tune", "", -EINVAL, "empty value (expected a boolean)" },
	{ "log", "level", "loud", -EINVAL,
	  "invalid log level 'loud' (expected err, warning, notice, info or debug)" },
	/* paths, names, addresses */
	{ "cgroups", "root", "sys/fs/cgroup", -EINVAL, "'sys/fs/cgroup' is not an absolute path" },
	{ "api", "socket", "io.acctd", -EINVAL, "'io.acctd' is not an absolute path" },
	{ "api", "socket", "", -EINVAL, "empty value (expected an absolute path)" },
	{ "api", "socket", "/run/" A100 "aaaaaaaaaa", -EINVAL,
	  "'/run/" A100 "aaaaaaaaaa' is too long for a Unix socket (at most 107 bytes)" },
	{ "api", "socket", "/run/" A100 "aaa", -EINVAL,
	  "'/run/" A100 "aaa' is too long for a Unix socket (at most 107 bytes)" },
	{ "api", "admin_group", "wheel:x", -EINVAL, "invalid group name 'wheel:x'" },
	{ "api", "admin_group", "-wheel", -EINVAL, "invalid group name '-wheel'" },
	{ "metrics", "listen", "9847", -EINVAL,
	  "invalid address '9847' (expected HOST:PORT, [IPV6]:PORT or none)" },
	{ "metrics", "listen", "::1:9847", -EINVAL,
	  "invalid address '::1:9847' (expected HOST:PORT, [IPV6]:PORT or none)" },
	{ "metrics", "listen", "[::1]9847", -EINVAL,
	  "invalid address '[::1]9847' (expected HOST:PORT, [IPV6]:PORT or none)" },
	{ "metrics", "listen", "127.0.0.1:0", -EINVAL, "invalid port in '127.0.0.1:0' (expected 1..65535)" },
	{ "metrics", "listen", "127.0.0.1:65536", -EINVAL,
	  "invalid port in '127.0.0.1:65536' (expected 1..65535)" },
	{ "metrics", "listen", "localhost:http", -EINVAL, "invalid port in 'localhost:http' (expected 1..65535)" },
	{ "metrics", "listen", "local_host:80", -EINVAL, "invalid host name in 'local_host:80'" },
	{ "metrics", "listen", ":80", -EINVAL, "invalid host name in ':80'" },
	{ "metrics", "listen", "[::g]:80", -EINVAL, "invalid IPv6 address in '[::g]:80'" },
	{ "metrics", "listen", "", -EINVAL, "empty value (expected HOST:PORT, [IPV6]:PORT or none)" },
	/* an empty value names what was expected, for every kind that needs one */
	{ "sampling", "workers", "", -EINVAL, "empty value (expected an integer)" },
	{ "log", "level", "", -EINVAL, "empty value (expected a log level)" },
	{ "sampling", "collector", "", -EINVAL, "empty value (expected a collector)" },
	{ "metrics", "families", "", -EINVAL, "empty value (expected metrics families)" },
	/* [history] interval's bounds: a tenth of a second to a day */
	{ "history", "interval", "99ms", -ERANGE, "99ms is out of range (100ms..1d)" },
	{ "history", "interval", "25h", -ERANGE, "25h is out of range (100ms..1d)" },
};

static void test_bad_values(void **state)
{
	struct tmp *t = *state;

	for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
		const struct bad_case *b = &bad_cases[i];
		char *text = NULL, *msg = NULL;

		/* The bad key on line 5, after a good one of the same section. */
		assert_true(asprintf(&text, "# acctd\n\n[log]\n[%s]\n%s = %s\nworkers = 3\n", b->section, b->key,
				     b->value) > 0);
		assert_true(asprintf(&msg, "5: %s: %s", b->key, b->reason) > 0);
		print_message("bad value %s.%s = '%s'\n", b->section, b->key, b->value);
		expect_load_error(t, text, b->err, msg);
		free(text);
		free(msg);
	}
}

/* The same through acct_config_set(): the origin replaces FILE:LINE and the
 * configuration is left as it was. */
static void test_set(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	_cleanup_(acct_config_freep) struct acct_config *d = NULL;
	struct acct_config_diag diag = {};

	assert_int_equal(acct_config_new_defaults(&c), 0);
	assert_int_equal(acct_config_new_defaults(&d), 0);
	for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
		const struct bad_case *b = &bad_cases[i];
		char *msg = NULL;

		assert_true(asprintf(&msg, "--test: %s: %s", b->key, b->reason) > 0);
		assert_int_equal(acct_config_set(c, b->section, b->key, b->value, "--test", &diag), b->err);
		assert_string_equal(diag.error, msg);
		assert_config_equal(c, d);
		free(msg);
	}
	acct_config_diag_clear(&diag);

	assert_int_equal(acct_config_set(c, "metrics", "listen", "none", "--metrics-listen", &diag), 0);
	assert_null(diag.error);
	assert_string_equal(c->metrics_listen, "none");
	assert_int_equal(acct_config_set(c, "metrics", "listen", "bogus", "--metrics-listen", &diag), -EINVAL);
	assert_string_equal(diag.error,
			    "--metrics-listen: listen: invalid address 'bogus' (expected HOST:PORT, [IPV6]:PORT or none)");
	assert_string_equal(c->metrics_listen, "none");
	acct_config_diag_clear(&diag);

	/* Surrounding blanks go, as inih strips them from files. */
	assert_int_equal(acct_config_set(c, "cgroups", "root", "  /srv/cg  ", "--cgroup-root", NULL), 0);
	assert_string_equal(c->cgroup_root, "/srv/cg");
	assert_int_equal(acct_config_set(c, "log", "level", "WARNING", "--log-level", NULL), 0);
	assert_int_equal(c->log_level, ACCT_LOG_WARNING);
	assert_int_equal(acct_config_set(c, "counters", "cpu_budget", "0", "tune", NULL), 0);
	assert_int_equal(c->cpu_budget_us, 0);
	assert_int_equal(acct_config_set(c, "counters", "bytes_budget", "8T", "tune", NULL), 0);
	assert_int_equal(c->bytes_budget, 8LL << 40);

	/* Unknown keys are errors here, and values that would not reload the same. */
	assert_int_equal(acct_config_set(c, "sampling", "bogus", "1", "--x", &diag), -EINVAL);
	assert_string_equal(diag.error, "--x: unknown key 'bogus' in section [sampling]");
	assert_int_equal(acct_config_set(c, "api", "socket", "/a\nb", "--x", &diag), -EINVAL);
	assert_string_equal(diag.error, "--x: socket: control character in value");
	assert_int_equal(acct_config_set(c, "cgroups", "exclude", "a ;b", "--x", &diag), -EINVAL);
	assert_string_equal(diag.error, "--x: exclude: ' ;' in a value would start a comment");
	/* The dump writes "key = VALUE": a leading ';' would be a comment there
	 * (found by tests/fuzz/fuzz-config.c). */
	assert_int_equal(acct_config_set(c, "api", "admin_group", ";x", "--x", &diag), -EINVAL);
	assert_string_equal(diag.error, "--x: admin_group: a value starting with ';' would be a comment");
	assert_int_equal(acct_config_set(c, "cgroups", "include", ";a b", "--x", &diag), -EINVAL);
	assert_int_equal(acct_config_set(c, "api", "socket", "/run/" A100 "aa", NULL, &diag), 0);
	assert_int_equal(strlen(c->socket_path), 107);
	assert_int_equal(acct_config_set(c, "api", "socket", "/x", NULL, &diag), 0);
	assert_int_equal(acct_config_set(c, "api", "socket", "x", NULL, &diag), -EINVAL);
	assert_string_equal(diag.error, "override: socket: 'x' is not an absolute path");

	/* fast_interval <= slow_interval, checked at once. */
	assert_int_equal(acct_config_set(c, "sampling", "fast_interval", "20s", "--fast", &diag), -EINVAL);
	assert_string_equal(diag.error, "--fast: fast_interval: fast_interval (20s) must not exceed slow_interval (10s)");
	assert_int_equal(c->fast_interval_us, 1000000);
	assert_int_equal(acct_config_set(c, "sampling", "slow_interval", "500ms", "--slow", &diag), -EINVAL);
	assert_string_equal(diag.error,
			    "--slow: slow_interval: fast_interval (1s) must not exceed slow_interval (500ms)");
	assert_int_equal(c->slow_interval_us, 10000000);
	assert_int_equal(acct_config_set(c, "sampling", "slow_interval", "1s", "--slow", &diag), 0);
	assert_int_equal(c->slow_interval_us, 1000000);
	acct_config_diag_clear(&diag);

	assert_int_equal(acct_config_set(NULL, "a", "b", "c", NULL, NULL), -EINVAL);
	/* Section, key and value are each required, whatever the others. */
	assert_int_equal(acct_config_set(c, NULL, "level", "debug", NULL, NULL), -EINVAL);
	assert_int_equal(acct_config_set(c, "log", NULL, "debug", NULL, NULL), -EINVAL);
	assert_int_equal(acct_config_set(c, "log", "level", NULL, NULL, NULL), -EINVAL);
	assert_int_equal(c->log_level, ACCT_LOG_WARNING);
}

static void test_syntax_errors(void **state)
{
	struct tmp *t = *state;

	expect_load_error(t, "[sampling]\nworkers = 2\n[log\nlevel = info\n", -EINVAL, "3: syntax error");
	expect_load_error(t, "[sampling]\n\nworkers\n", -EINVAL, "3: syntax error");
	/* An indented line is not a continuation of the value above it. */
	expect_load_error(t, "[cgroups]\ninclude = a\n   b\n", -EINVAL, "3: syntax error");
	/* The first error in the file wins, whatever its kind. */
	expect_load_error(t, "[sampling]\nworkers = 0\nbroken\n", -ERANGE, "2: workers: 0 is out of range (1..64)");
	expect_load_error(t, "[sampling]\nbroken\nworkers = 0\n", -EINVAL, "2: syntax error");
	/* A line too long for inih is refused where it cannot be a value
	 * (test_long_values: a long value is read whole). */
	{
		char text[400];

		memset(text, 'a', sizeof(text));
		memcpy(text, "[cgroups]\n# ok\n", 15);
		strcpy(text + 300, " = 1\n");
		expect_load_error(t, text, -EINVAL,
				  "3: line too long for a section header or key name (more than 197 characters)");
	}
	/* Error lines count CRLF lines, a BOM and indented lines correctly. */
	expect_load_error(t, "\xEF\xBB\xBF[sampling]\r\n\r\n  ; c\r\n\tworkers = 1\r\n  load_average = x\r\n", -EINVAL,
			  "5: load_average: invalid boolean 'x' (expected yes, no, true, false, on, off, 1 or 0)");
}

/* A file that cannot be read to its end fails the load with the read's
 * error: /proc/self/mem is a regular file whose first page (address 0) reads
 * EIO. */
static void test_read_error(void **state)
{
	struct acct_config_diag diag = {};
	struct acct_config *c = POISON;
	(void)state;

	assert_int_equal(acct_config_load("/proc/self/mem", "", &c, &diag), -EIO);
	assert_ptr_equal(c, POISON);
	assert_non_null(diag.error);
	assert_string_equal(diag.error, "/proc/self/mem: Input/output error");
	acct_config_diag_clear(&diag);
}

/* Values longer than inih's 200-byte line: a list of 120 globs (2,000
 * characters) in one assignment is read whole, inline comment and white
 * space handled as on a short line; a long comment is a comment. */
static void test_long_values(void **state)
{
	struct tmp *t = *state;
	char text[4096], *p = text;
	p += sprintf(p, "# %0300d\n[cgroups]\nexclude =  ", 0);
	for (int i = 0; i < 120; i++)
		p += sprintf(p, "/system.slice/unit-%03d.service ", i);
	sprintf(p, "  ; the last ones\nmax_depth = 3\n");
	const char *path = tmp_write(t, "long.conf", text);
	struct acct_config_diag diag = {};
	struct acct_config *c = NULL;
	assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
	assert_null(diag.warnings);
	assert_int_equal(strv_length(c->exclude), 120);
	assert_string_equal(c->exclude[0], "/system.slice/unit-000.service");
	assert_string_equal(c->exclude[119], "/system.slice/unit-119.service");
	assert_int_equal(c->max_depth, 3);
	acct_config_free(c);
	acct_config_diag_clear(&diag);

	/* A long path value ends where the line does, CRLF or LF: nothing of
	 * the line end is in it. */
	char dir[260];
	memset(dir, 'd', sizeof(dir));
	memcpy(dir, "/sys/fs/bpf/", 12);
	dir[sizeof(dir) - 1] = '\0';
	for (int crlf = 0; crlf < 2; crlf++) {
		snprintf(text, sizeof(text), "[sampling]\nbpf_pin_dir = %s%s", dir, crlf ? "\r\n" : "\n");
		path = tmp_write(t, crlf ? "long-crlf.conf" : "long-lf.conf", text);
		assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
		assert_string_equal(c->bpf_pin_dir, dir);
		acct_config_free(c);
		acct_config_diag_clear(&diag);
	}

	/* The longest key name a long line may have: inih's 200-byte buffer
	 * takes the name, "=", the mark and a NUL, and reading stops 3 bytes
	 * short of its end (197 characters): 194 characters. An unknown key of
	 * that length is a warning; one more is an error. */
	for (size_t len = 194; len <= 195; len++) {
		char name[200];
		memset(name, 'k', len);
		name[len] = '\0';
		snprintf(text, sizeof(text), "[sampling]\n%s = %0210d\n", name, 0);
		path = tmp_write(t, len == 194 ? "name-194.conf" : "name-195.conf", text);
		c = NULL;
		int r = acct_config_load(path, "", &c, &diag);
		if (len == 194) {
			assert_int_equal(r, 0);
			assert_int_equal(diag.nr_warnings, 1);
			assert_non_null(strstr(diag.warnings[0], "unknown key"));
			acct_config_free(c);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_non_null(strstr(diag.error, "2: line too long for a section header or key name"));
		}
		acct_config_diag_clear(&diag);
	}
	/* Blanks between the name and "=" are not part of the name, tabs as
	 * well as spaces: the 194-character name still fits. */
	{
		char name[195];
		memset(name, 'k', 194);
		name[194] = '\0';
		snprintf(text, sizeof(text), "[sampling]\n%s\t \t= %0210d\n", name, 0);
		path = tmp_write(t, "name-194-tab.conf", text);
		c = NULL;
		assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
		assert_int_equal(diag.nr_warnings, 1);
		assert_non_null(strstr(diag.warnings[0], "unknown key"));
		assert_non_null(strstr(diag.warnings[0], name));
		acct_config_free(c);
		acct_config_diag_clear(&diag);
	}
}

/* Blank lines, LF or CRLF, at the start of a file and between keys are
 * nothing: the reader's trimming of a line's end stops at the line's start,
 * whatever lies before the line in memory (here a '\n', by the getline()
 * hook above). */
static void test_blank_lines(void **state)
{
	struct tmp *t = *state;
	static const char *const texts[] = {
		"\n[sampling]\nworkers = 3\n",
		"\r\n\r\n[sampling]\r\n\r\nworkers = 3\r\n",
		"\r\n[sampling]\n\nworkers = 3\n\n",
	};

	for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
		const char *path = tmp_write(t, i == 0 ? "blank-0.conf" : i == 1 ? "blank-1.conf" : "blank-2.conf",
					     texts[i]);
		struct acct_config_diag diag = {};
		struct acct_config *c = NULL;

		guard_armed = true;
		int r = acct_config_load(path, "", &c, &diag);
		guard_armed = false;
		assert_null(guard_block); /* the buffer was ours, and freed */
		assert_null(diag.error);
		assert_int_equal(r, 0);
		assert_int_equal(diag.nr_warnings, 0);
		assert_int_equal(c->workers, 3);
		acct_config_free(c);
		acct_config_diag_clear(&diag);
	}
}

/* Only a regular file (or /dev/null) is read: a FIFO in place of the main
 * file is an error at once, not a wait for a writer; a drop-in symlink
 * that loops is a warning, the rest of the configuration loads. */
static void test_not_regular_files(void **state)
{
	struct tmp *t = *state;
	struct acct_config_diag diag = {};
	struct acct_config *c = NULL;
	char *fifo = tmp_path(t, "fifo.conf"), *want = NULL;
	assert_int_equal(mkfifo(fifo, 0600), 0);
	t->files[t->nr_files++] = fifo; /* removed by teardown_tmp() */
	assert_int_equal(acct_config_load(fifo, "", &c, &diag), -EINVAL);
	assert_null(c);
	assert_true(asprintf(&want, "%s: not a regular file", fifo) > 0);
	assert_string_equal(diag.error, want);
	free(want);
	acct_config_diag_clear(&diag);
	assert_int_equal(acct_config_load("/dev/null", "", &c, &diag), 0);
	acct_config_free(c);
	c = NULL;
	acct_config_diag_clear(&diag);

	const char *dir = tmp_mkdir(t, "conf.d");
	char *loop = tmp_path(t, "conf.d/10-loop.conf");
	assert_int_equal(symlink("10-loop.conf", loop), 0);
	t->files[t->nr_files++] = loop;
	tmp_write(t, "conf.d/20-ok.conf", "[sampling]\nworkers = 3\n");
	assert_int_equal(acct_config_load("", dir, &c, &diag), 0);
	assert_int_equal(c->workers, 3);
	assert_int_equal(diag.nr_warnings, 1);
	assert_non_null(strstr(diag.warnings[0], "10-loop.conf: Too many levels of symbolic links, ignoring"));
	acct_config_free(c);
	acct_config_diag_clear(&diag);
}

static void test_interval_conflict(void **state)
{
	struct tmp *t = *state;
	struct acct_config_diag diag = {};
	struct acct_config *c = POISON;
	const char *main_file, *dir, *dropin;
	char *expected = NULL;

	main_file = tmp_write(t, "main.conf", "[sampling]\nfast_interval = 20s\n");
	dir = tmp_mkdir(t, "main.conf.d");
	assert_int_equal(acct_config_load(main_file, "", &c, &diag), -EINVAL);
	assert_ptr_equal(c, POISON);
	assert_true(asprintf(&expected, "%s:2: fast_interval (20s) must not exceed slow_interval (10s, the default)",
			     main_file) > 0);
	assert_string_equal(diag.error, expected);
	free(expected);

	/* A drop-in may fix it: only the final values count. */
	dropin = tmp_write(t, "main.conf.d/10-slow.conf", "[sampling]\nslow_interval = 30s\n");
	assert_int_equal(acct_config_load(main_file, dir, &c, &diag), 0);
	assert_int_equal(c->fast_interval_us, 20000000);
	assert_int_equal(c->slow_interval_us, 30000000);
	c = acct_config_free(c);
	acct_config_diag_clear(&diag);

	/* ... or break it: the later assignment is blamed, the other one named. */
	tmp_write(t, "main.conf.d/20-slow.conf", "[sampling]\n\nslow_interval = 5s\n");
	c = POISON;
	assert_int_equal(acct_config_load(main_file, dir, &c, &diag), -EINVAL);
	assert_ptr_equal(c, POISON);
	assert_true(asprintf(&expected,
			     "%s/20-slow.conf:3: slow_interval (5s) must not be less than fast_interval (20s, set at %s:2)",
			     dir, main_file) > 0);
	assert_string_equal(diag.error, expected);
	free(expected);
	acct_config_diag_clear(&diag);
	(void)dropin;
}

/* Both keys in one file: the later line is blamed. */
static void test_interval_conflict_one_file(void **state)
{
	struct tmp *t = *state;
	struct acct_config_diag diag = {};
	struct acct_config *c = POISON;
	const char *path = tmp_write(t, "a.conf", "[sampling]\nfast_interval = 2s\nslow_interval = 1s\n");
	char *expected = NULL;

	assert_int_equal(acct_config_load(path, "", &c, &diag), -EINVAL);
	assert_true(asprintf(&expected, "%s:3: slow_interval (1s) must not be less than fast_interval (2s, set at %s:2)",
			     path, path) > 0);
	assert_string_equal(diag.error, expected);
	free(expected);
	acct_config_diag_clear(&diag);
}

/* ---- warnings ------------------------------------------------------------ */

static void test_unknown_warnings(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	struct acct_config_diag diag = {};
	const char *path = tmp_write(t, "warn.conf",
				     "stray = 1\n"
				     "[sampling]\n"
				     "workers = 4\n"
				     "foo = bar\n"
				     "[bar]\n"
				     "baz = 1\n"
				     "[log]\n"
				     "Level = debug\n"
				     "[]\n");
	char *expected[5] = {};

	assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
	assert_null(diag.error);
	assert_int_equal(c->workers, 4);
	assert_int_equal(c->log_level, ACCT_LOG_INFO);
	assert_true(asprintf(&expected[0], "%s:1: key 'stray' outside of any section, ignoring", path) > 0);
	assert_true(asprintf(&expected[1], "%s:4: unknown key 'foo' in section [sampling], ignoring", path) > 0);
	assert_true(asprintf(&expected[2], "%s:5: unknown section [bar], ignoring", path) > 0);
	assert_true(asprintf(&expected[3], "%s:8: unknown key 'Level' in section [log], ignoring (did you mean 'level'?)",
			     path) > 0);
	assert_true(asprintf(&expected[4], "%s:9: unknown section [], ignoring", path) > 0);
	assert_int_equal(diag.nr_warnings, 5);
	assert_strv(diag.warnings, (const char *const[]){ expected[0], expected[1], expected[2], expected[3],
							 expected[4], NULL });
	for (size_t i = 0; i < ELEMENTSOF(expected); i++)
		free(expected[i]);
	acct_config_diag_clear(&diag);
	assert_int_equal(diag.nr_warnings, 0);

	/* A NULL diag is allowed. */
	c = acct_config_free(c);
	assert_int_equal(acct_config_load(path, "", &c, NULL), 0);
}

/* Issue 15 item 1: a misspelt key or section names the one meant, a key in
 * the wrong section names its own, and what is too far from every name gets
 * no guess. */
static void test_unknown_hints(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	struct acct_config_diag diag = {};
	const char *path = tmp_write(t, "hints.conf",
				     "level = debug\n"
				     "[cgroup]\n"
				     "include = *\n"
				     "[sampling]\n"
				     "fast_intervall = 5s\n"
				     "fats_interval = 5s\n"
				     "level = debug\n"
				     "frequency = 5s\n"
				     "[Metrics]\n"
				     "[api]\n"
				     "max_conections = 10\n"
				     "socket_path = /run/x\n"
				     "[lgo]\n"
				     "[x]\n");
	static const char *const tails[] = {
		":1: key 'level' outside of any section, ignoring (it belongs in [log])",
		":2: unknown section [cgroup], ignoring (did you mean [cgroups]?)",
		":5: unknown key 'fast_intervall' in section [sampling], ignoring (did you mean 'fast_interval'?)",
		":6: unknown key 'fats_interval' in section [sampling], ignoring (did you mean 'fast_interval'?)",
		":7: unknown key 'level' in section [sampling], ignoring (it belongs in [log])",
		":8: unknown key 'frequency' in section [sampling], ignoring",
		":9: unknown section [Metrics], ignoring (did you mean [metrics]?)",
		":11: unknown key 'max_conections' in section [api], ignoring (did you mean 'max_connections'?)",
		":12: unknown key 'socket_path' in section [api], ignoring",
		":13: unknown section [lgo], ignoring (did you mean [log]?)",
		":14: unknown section [x], ignoring",
	};

	assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
	assert_int_equal(diag.nr_warnings, ELEMENTSOF(tails));
	for (size_t i = 0; i < ELEMENTSOF(tails); i++) {
		_cleanup_free_ char *want = NULL;

		assert_true(asprintf(&want, "%s%s", path, tails[i]) > 0);
		assert_string_equal(diag.warnings[i], want);
	}
	acct_config_diag_clear(&diag);

	/* command-line overrides are errors, with the same hints */
	assert_int_equal(acct_config_set(c, "sampling", "fast_intervall", "5s", "--x", &diag), -EINVAL);
	assert_string_equal(diag.error, "--x: unknown key 'fast_intervall' in section [sampling] (did you mean "
					"'fast_interval'?)");
	acct_config_diag_clear(&diag);
	assert_int_equal(acct_config_set(c, "cgroup", "root", "/x", "--x", &diag), -EINVAL);
	assert_string_equal(diag.error, "--x: unknown key 'root' in section [cgroup] (did you mean [cgroups]?)");
	acct_config_diag_clear(&diag);
}

/* ---- files and drop-ins -------------------------------------------------- */

static void test_dropin_order(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	struct acct_config_diag diag = {};
	const char *main_file = tmp_write(t, "acctd.conf", "[sampling]\nworkers = 3\n[log]\nlevel = err\n");
	const char *dir = tmp_mkdir(t, "acctd.conf.d");
	const char *a, *b, *z, *lower;

	/* Written out of order; read in strcmp() order, not the locale's
	 * ("10-" < "20-" < "Z-" < "a-"). */
	lower = tmp_write(t, "acctd.conf.d/a-lower.conf", "[counters]\ntasks_budget = 100\n");
	b = tmp_write(t, "acctd.conf.d/20-b.conf", "[sampling]\nworkers = 20\n");
	a = tmp_write(t, "acctd.conf.d/10-a.conf", "[sampling]\nworkers = 10\n[log]\nlevel = notice\n");
	z = tmp_write(t, "acctd.conf.d/Z-upper.conf", "[counters]\ntasks_budget = 99\n");
	/* Ignored: other suffixes, hidden files, directories, dangling links. */
	tmp_write(t, "acctd.conf.d/30-c.conf.disabled", "[sampling]\nworkers = 30\n");
	tmp_write(t, "acctd.conf.d/40-d.conf~", "[sampling]\nworkers = 40\n");
	tmp_write(t, "acctd.conf.d/.50-e.conf", "[sampling]\nworkers = 50\n");
	tmp_write(t, "acctd.conf.d/60-f.conf.d", "garbage\n");
	tmp_mkdir(t, "acctd.conf.d/70-g.conf");
	{
		char *link = tmp_path(t, "acctd.conf.d/80-h.conf");

		assert_int_equal(symlink("/nonexistent/x.conf", link), 0);
		t->files[t->nr_files++] = link;
	}

	assert_int_equal(acct_config_load(main_file, dir, &c, &diag), 0);
	assert_null(diag.error);
	assert_int_equal(diag.nr_warnings, 0);
	assert_int_equal(c->workers, 20);
	assert_int_equal(c->log_level, ACCT_LOG_NOTICE);
	assert_int_equal(c->tasks_budget, 100);
	assert_strv(c->sources, (const char *const[]){ main_file, a, b, z, lower, NULL });

	/* A trailing slash on the directory does not double the one in paths. */
	c = acct_config_free(c);
	{
		char *slashed = NULL;

		assert_true(asprintf(&slashed, "%s/", dir) > 0);
		assert_int_equal(acct_config_load(main_file, slashed, &c, &diag), 0);
		assert_strv(c->sources, (const char *const[]){ main_file, a, b, z, lower, NULL });
		free(slashed);
	}

	/* A bad drop-in fails the whole load and is named. */
	c = acct_config_free(c);
	{
		const char *bad = tmp_write(t, "acctd.conf.d/90-bad.conf", "[api]\nmax_connections = lots\n");
		struct acct_config *p = POISON;
		char *expected = NULL;

		assert_int_equal(acct_config_load(main_file, dir, &p, &diag), -EINVAL);
		assert_ptr_equal(p, POISON);
		assert_true(asprintf(&expected, "%s:2: max_connections: invalid number 'lots' (expected an integer)",
				     bad) > 0);
		assert_string_equal(diag.error, expected);
		free(expected);
		acct_config_diag_clear(&diag);
	}
}

static void test_missing_files(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	struct acct_config_diag diag = {};
	struct acct_config *p = POISON;
	char *missing = tmp_path(t, "missing.conf");
	char *expected = NULL;
	struct stat sb;

	/* An explicit main file must exist. */
	assert_int_equal(acct_config_load(missing, "", &p, &diag), -ENOENT);
	assert_ptr_equal(p, POISON);
	assert_true(asprintf(&expected, "%s: No such file or directory", missing) > 0);
	assert_string_equal(diag.error, expected);
	free(expected);
	acct_config_diag_clear(&diag);

	/* A directory is not a configuration file. */
	assert_int_equal(acct_config_load(t->dir, "", &p, &diag), -EISDIR);
	assert_true(asprintf(&expected, "%s: Is a directory", t->dir) > 0);
	assert_string_equal(diag.error, expected);
	free(expected);
	acct_config_diag_clear(&diag);

	/* A missing drop-in directory is fine, also an explicit one. */
	{
		const char *main_file = tmp_write(t, "main.conf", "[log]\nlevel = debug\n");

		assert_int_equal(acct_config_load(main_file, missing, &c, &diag), 0);
		assert_int_equal(c->log_level, ACCT_LOG_DEBUG);
		c = acct_config_free(c);
		/* A drop-in "directory" that is a file is an error. */
		assert_int_equal(acct_config_load(main_file, main_file, &p, &diag), -ENOTDIR);
		assert_true(asprintf(&expected, "%s: Not a directory", main_file) > 0);
		assert_string_equal(diag.error, expected);
		free(expected);
		acct_config_diag_clear(&diag);
	}

	/* The default files may be missing: then the defaults apply. */
	if (stat(ACCT_CONFIG_FILE, &sb) == 0 || stat(ACCT_CONFIG_DROPIN_DIR, &sb) == 0)
		print_message("skipping the default-path check: %s exists on this host\n", ACCT_CONFIG_FILE);
	else {
		assert_int_equal(acct_config_load(NULL, NULL, &c, &diag), 0);
		assert_null(diag.error);
		assert_defaults(c);
		assert_null(c->sources[0]);
	}
	free(missing);
}

/* --config "" and --config-dropins "": no file at all, the built-in defaults
 * (docs/acctd.md: "" means none). */
static void test_no_files(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	struct acct_config_diag diag = {};
	const char *dir = tmp_mkdir(t, "only.conf.d");

	assert_int_equal(acct_config_load("", "", &c, &diag), 0);
	assert_null(diag.error);
	assert_defaults(c);
	assert_null(c->sources[0]);
	c = acct_config_free(c);

	/* no main file, but the drop-ins */
	tmp_write(t, "only.conf.d/10-a.conf", "[log]\nlevel = debug\n");
	assert_int_equal(acct_config_load("", dir, &c, &diag), 0);
	assert_null(diag.error);
	assert_int_equal(c->log_level, ACCT_LOG_DEBUG);
	assert_non_null(c->sources[0]);
	assert_non_null(strstr(c->sources[0], "10-a.conf"));
	assert_null(c->sources[1]);
}

/* Globs written relative to the root, as conf/acctd.conf says they are, match
 * the "/a/b" paths acctd matches them against: they get the leading "/";
 * absolute globs and those starting with '*' stay as written. */
static void test_relative_globs(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	static const char *const inc[] = { "/system.slice/*", "*.scope", "/user.slice", "/?x[ab]", NULL };
	static const char *const exc[] = { "/system.slice/noisy.service", "/init.scope", NULL };
	static const char *const minc[] = { "/system.slice", NULL };
	static const char *const mexc[] = { "/user.slice/*", NULL };
	struct acct_config_diag diag = {};
	const char *main_file = tmp_write(t, "main.conf",
					  "[cgroups]\ninclude = system.slice/* *.scope /user.slice ?x[ab]\n"
					  "exclude = system.slice/noisy.service /init.scope\n"
					  "[metrics]\ninclude = system.slice\nexclude = user.slice/*\n");

	assert_int_equal(acct_config_load(main_file, "", &c, &diag), 0);
	assert_null(diag.error);
	assert_strv(c->include, inc);
	assert_strv(c->exclude, exc);
	assert_strv(c->metrics_include, minc);
	assert_strv(c->metrics_exclude, mexc);
	assert_int_equal(acct_config_set(c, "cgroups", "include", "a/b", "override", &diag), 0);
	static const char *const ab[] = { "/a/b", NULL };
	assert_strv(c->include, ab);
}

/* Unreadable files say why (only testable without CAP_DAC_OVERRIDE). */
static void test_unreadable(void **state)
{
	struct tmp *t = *state;
	struct acct_config_diag diag = {};
	struct acct_config *p = POISON;
	const char *path = tmp_write(t, "secret.conf", "[log]\nlevel = debug\n");
	char *expected = NULL;
	FILE *f;

	assert_int_equal(chmod(path, 0), 0);
	assert_true(asprintf(&expected, "%s: Permission denied", path) > 0);
	f = fopen(path, "re");
	if (!f) {
		assert_int_equal(acct_config_load(path, "", &p, &diag), -EACCES);
		assert_ptr_equal(p, POISON);
		assert_string_equal(diag.error, expected);
	} else {
		/* Root reads anything: try as nobody in a child. */
		int status = 0;
		pid_t pid;

		fclose(f);
		if (geteuid() != 0)
			skip();
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int r;

			if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
			    setresuid(65534, 65534, 65534) < 0)
				_exit(77);
			r = acct_config_load(path, "", &p, &diag);
			_exit(r == -EACCES && p == POISON && diag.error && strcmp(diag.error, expected) == 0 ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) == 77)
			skip();
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	free(expected);
	acct_config_diag_clear(&diag);
}

/* ---- dump ---------------------------------------------------------------- */

static char *dump_to_string(const struct acct_config *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	acct_config_dump(c, f);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void round_trip(struct tmp *t, const struct acct_config *c)
{
	_cleanup_(acct_config_freep) struct acct_config *again = NULL;
	_cleanup_free_ char *text = dump_to_string(c);
	_cleanup_free_ char *text2 = NULL;
	struct acct_config_diag diag = {};
	const char *path = tmp_write(t, "dump.conf", text);

	assert_int_equal(acct_config_load(path, "", &again, &diag), 0);
	assert_null(diag.error);
	assert_int_equal(diag.nr_warnings, 0);
	assert_config_equal(c, again);

	/* And the second dump is the first one plus the dump as a source. */
	text2 = dump_to_string(again);
	assert_non_null(strstr(text2, path));
	assert_non_null(strstr(text2, "\n[sampling]\n"));
	assert_string_equal(strstr(text, "\n[sampling]\n"), strstr(text2, "\n[sampling]\n"));

	assert_int_equal(unlink(path), 0);
	free(t->files[--t->nr_files]);
}

static void test_dump(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	_cleanup_free_ char *path = data_path("config/full.conf");
	_cleanup_free_ char *text = NULL;
	struct acct_config_diag diag = {};

	/* Defaults: units where they are exact. */
	assert_int_equal(acct_config_new_defaults(&c), 0);
	text = dump_to_string(c);
	assert_non_null(strstr(text, "#   built-in defaults\n"));
	assert_non_null(strstr(text, "\n[sampling]\nfast_interval = 1s\nslow_interval = 10s\nrescan_interval = 1min\n"
				     "workers = 2\nload_average = yes\n"));
	assert_non_null(strstr(text, "\n[cgroups]\nroot =\ninclude = *\nexclude =\nmax_depth = 32\n"
				     "tombstone_retention = 5min\n"));
	assert_non_null(strstr(text, "\n[counters]\nbytes_budget = 1M\ncpu_budget = 10ms\ntasks_budget = 8\n"
				     "auto_tune = yes\n"));
	assert_non_null(strstr(text, "\nadmin_group =\nmax_message_size = 16M\nmax_connections = 4096\n"
				     "max_connections_per_user = 1024\nidle_timeout = 5min\nmax_output_queue = 4M\n"));
	assert_non_null(strstr(text, "\n[metrics]\nlisten = 127.0.0.1:9847\nmax_depth = 32\nmax_series = 50000\ninclude = *\nexclude =\n"
				     "families = default\n\n[log]\nlevel = info\n"));
	round_trip(t, c);
	c = acct_config_free(c);
	text = (free(text), NULL);

	/* Every key changed; plain numbers where no unit is exact. */
	assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
	text = dump_to_string(c);
	assert_non_null(strstr(text, "#   built-in defaults\n"));
	assert_non_null(strstr(text, path));
	assert_non_null(strstr(text, "fast_interval = 250ms\n"));
	assert_non_null(strstr(text, "rescan_interval = 2min\n"));
	assert_non_null(strstr(text, "include = /system.slice/* /user.slice/* /machine.slice\n"));
	assert_non_null(strstr(text, "exclude = /system.slice/boring.service *.scope\n"));
	assert_non_null(strstr(text, "tombstone_retention = 1h\n"));
	assert_non_null(strstr(text, "cpu_budget = 1500us\n"));
	assert_non_null(strstr(text, "bytes_budget = 512K\n"));
	assert_non_null(strstr(text, "max_output_queue = 12345\n"));
	assert_non_null(strstr(text, "listen = [::1]:9100\n"));
	assert_non_null(strstr(text, "level = debug\n"));
	round_trip(t, c);

	/* Odd values set at run time round-trip as well. */
	assert_int_equal(acct_config_set(c, "counters", "bytes_budget", "1025", NULL, NULL), 0);
	assert_int_equal(acct_config_set(c, "counters", "cpu_budget", "0", NULL, NULL), 0);
	/* the largest a load takes on any host: the least kernel.pid_max (budget-limits.h) */
	assert_int_equal(acct_config_set(c, "counters", "tasks_budget", "301", NULL, NULL), 0);
	assert_int_equal(acct_config_set(c, "cgroups", "tombstone_retention", "0", NULL, NULL), 0);
	assert_int_equal(acct_config_set(c, "sampling", "slow_interval", "18446744073709551615us", NULL, NULL), 0);
	assert_int_equal(acct_config_set(c, "api", "max_output_queue", "16T", NULL, NULL), 0);
	assert_int_equal(acct_config_set(c, "metrics", "listen", "none", NULL, NULL), 0);
	assert_int_equal(acct_config_set(c, "log", "level", "err", NULL, NULL), 0);
	assert_int_equal(acct_config_set(c, "cgroups", "root", "", NULL, NULL), 0);
	assert_int_equal(acct_config_set(c, "api", "admin_group", "", NULL, NULL), 0);
	round_trip(t, c);
	acct_config_diag_clear(&diag);
}

/* ---- out of memory ------------------------------------------------------- */

/* acct_config_set() with good and bad values of every kind, each allocation
 * failing in turn: -ENOMEM and the configuration as it was, until no
 * allocation fails and the usual result comes back. */
static void test_set_out_of_memory(void **state)
{
	static const struct {
		const char *section, *key, *value;
		int r;
	} cases[] = {
		{ "sampling", "fast_interval", "250ms", 0 },
		{ "sampling", "fast_interval", "soon", -EINVAL },
		{ "sampling", "slow_interval", "1ms", -EINVAL }, /* below fast_interval */
		{ "sampling", "load_average", "no", 0 },
		{ "sampling", "load_average", "maybe", -EINVAL },
		{ "log", "level", "debug", 0 },
		{ "log", "level", "loud", -EINVAL },
		{ "sampling", "collector", "files", 0 },
		{ "sampling", "collector", "nope", -EINVAL },
		{ "counters", "bytes_budget", "1.5G", 0 },
		{ "counters", "bytes_budget", "50MB", -EINVAL },
		{ "counters", "bytes_budget", "-1", -ERANGE },
		{ "api", "max_connections", "0", -ERANGE },
		{ "api", "socket", "relative", -EINVAL },
		{ "api", "socket", "/run/x", 0 },
		{ "api", "admin_group", "-bad", -EINVAL },
		{ "api", "admin_group", "adm", 0 },
		{ "cgroups", "root", "/x", 0 },
		{ "cgroups", "include", "a /b", 0 },
		{ "cgroups", "include", "", 0 },
		{ "cgroups", "exclude", "x", 0 },
		{ "metrics", "families", "bogus", -EINVAL },
		{ "metrics", "families", "", -EINVAL },
		{ "metrics", "families", "default -pressure", 0 },
		{ "metrics", "listen", "host:99999", -EINVAL },
		{ "metrics", "listen", "127.0.0.1:9100", 0 },
		{ "log", "level", "a\001b", -EINVAL },
		{ "log", "level", "", -EINVAL },
		{ "nosuch", "key", "1", -EINVAL },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		unsigned failures = 0;

		print_message("set [%s] %s = '%s'\n", cases[i].section, cases[i].key, cases[i].value);
		for (unsigned n = 0;; n++) {
			_cleanup_(acct_config_freep) struct acct_config *c = NULL;
			_cleanup_free_ char *before = NULL, *after = NULL;
			struct acct_config_diag diag = {};
			int r;

			assert_int_equal(acct_config_new_defaults(&c), 0);
			before = dump_to_string(c);
			alloc_fail_after(n);
			r = acct_config_set(c, cases[i].section, cases[i].key, cases[i].value, NULL, &diag);
			alloc_fail_off();
			if (!alloc_fail_hit()) {
				assert_int_equal(r, cases[i].r);
				assert_true(r == 0 || diag.error);
				acct_config_diag_clear(&diag);
				break;
			}
			failures++;
			assert_int_equal(r, -ENOMEM);
			after = dump_to_string(c);
			assert_string_equal(before, after);
			acct_config_diag_clear(&diag);
			assert_true(n < 100);
		}
		/* every case allocates: the value's copy or the message at least */
		assert_true(failures >= 1);
	}
}

/* Loading files with warnings, a bad value and drop-ins, each allocation
 * failing in turn: -ENOMEM and nothing returned, until the usual result. */
static void test_load_out_of_memory(void **state)
{
	struct tmp *t = *state;
	const char *good = tmp_write(t, "good.conf",
				     "[sampling]\nfast_interval = 2s\nunknown_key = 1\n[nosuch]\nx = 1\n"
				     "[cgroups]\ninclude = system.slice/*\n");
	const char *bad = tmp_write(t, "bad.conf", "[sampling]\nworkers = many\n");
	const char *dir = tmp_mkdir(t, "good.conf.d");
	tmp_write(t, "good.conf.d/10-a.conf", "[sampling]\nslow_interval = 20s\n");
	tmp_write(t, "good.conf.d/20-b.conf", "[log]\nlevel = debug\n");
	const struct {
		const char *main, *dropins;
		int r;
		unsigned warnings;
	} cases[] = {
		{ good, dir, 0, 2 },
		{ bad, "", -EINVAL, 0 },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		unsigned failures = 0;

		for (unsigned n = 0;; n++) {
			struct acct_config *c = POISON;
			struct acct_config_diag diag = {};
			int r;

			alloc_fail_after(n);
			r = acct_config_load(cases[i].main, cases[i].dropins, &c, &diag);
			alloc_fail_off();
			if (!alloc_fail_hit()) {
				assert_int_equal(r, cases[i].r);
				if (r == 0) {
					assert_int_equal(diag.nr_warnings, cases[i].warnings);
					assert_int_equal(c->slow_interval_us, 20 * USEC_PER_SEC);
					assert_int_equal(c->log_level, ACCT_LOG_DEBUG);
					acct_config_free(c);
				} else
					assert_non_null(strstr(diag.error, "workers"));
				acct_config_diag_clear(&diag);
				break;
			}
			failures++;
			print_message("load %s, allocation %u failed: %d %s\n", cases[i].main, n, r,
				      diag.error ? diag.error : "");
			assert_int_equal(r, -ENOMEM);
			assert_ptr_equal(c, POISON);
			acct_config_diag_clear(&diag);
			assert_true(n < 1000);
		}
		assert_true(failures >= 3);
	}
}

/* inih out of memory (its result -2) fails the load with ENOMEM and
 * "FILE: strerror", not a load of nothing: an inih built without
 * INI_USE_STACK allocates its line buffer. */
static void test_load_inih_out_of_memory(void **state)
{
	struct tmp *t = *state;
	const char *path = tmp_write(t, "main.conf", "[sampling]\nworkers = 3\n");
	struct acct_config_diag diag = {};
	struct acct_config *c = POISON;
	char *want = NULL;

	inih_out_of_memory = true;
	int r = acct_config_load(path, "", &c, &diag);
	inih_out_of_memory = false;
	assert_int_equal(r, -ENOMEM);
	assert_ptr_equal(c, POISON);
	assert_true(asprintf(&want, "%s: %s", path, strerror(ENOMEM)) > 0);
	assert_string_equal(diag.error, want);
	free(want);
	acct_config_diag_clear(&diag);
}

/* acct_config_diff() out of memory, each allocation and each memory stream
 * (the values of lists, the resources) failing in turn: -ENOMEM and nothing
 * returned, until the usual result. */
static void test_diff_out_of_memory(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *a = NULL, *b = NULL;
	unsigned allocs = 0, streams = 0;

	(void)state;
	assert_int_equal(acct_config_new_defaults(&a), 0);
	assert_int_equal(acct_config_new_defaults(&b), 0);
	assert_int_equal(acct_config_set(b, "cgroups", "exclude", "/a /b", NULL, NULL), 0);
	assert_int_equal(acct_config_set(b, "log", "level", "debug", NULL, NULL), 0);
	for (int mem = 0; mem < 2; mem++)
		for (unsigned n = 0;; n++) {
			struct acct_config_change *v = NULL;
			size_t nr = SIZE_MAX;
			bool hit;

			if (mem) {
				memstream_left = n;
				memstream_armed = true;
				memstream_hit = false;
			} else
				alloc_fail_after(n);
			int r = acct_config_diff(a, b, &v, &nr);
			if (mem) {
				memstream_armed = false;
				hit = memstream_hit;
			} else {
				alloc_fail_off();
				hit = alloc_fail_hit();
			}
			if (!hit) {
				assert_int_equal(r, 0);
				assert_int_equal(nr, 2);
				assert_string_equal(v[0].key, "exclude");
				assert_string_equal(v[1].key, "level");
				acct_config_changes_free(v, nr);
				break;
			}
			assert_int_equal(r, -ENOMEM);
			assert_null(v);
			assert_int_equal(nr, SIZE_MAX);
			if (mem)
				streams++;
			else
				allocs++;
			assert_true(n < 1000);
		}
	/* the array and two copies of each of 50-odd values; the lists' and
	 * the resources' streams of both configurations */
	assert_true(allocs > 100);
	assert_true(streams >= 2);
}

/* ---- value parsers ------------------------------------------------------- */

static void test_parse_size(void **state)
{
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "4096", 0, 4096 },
		{ "4096B", 0, 4096 },
		{ "512K", 0, 512 << 10 },
		{ "512KiB", 0, 512 << 10 },
		{ "1M", 0, 1 << 20 },
		{ "1 M", 0, 1 << 20 },
		{ "1\tMiB", 0, 1 << 20 },
		{ "3G", 0, 3ULL << 30 },
		{ "2T", 0, 2ULL << 40 },
		{ "1P", 0, 1ULL << 50 },
		{ "1E", 0, 1ULL << 60 },
		/* fractions, rounded down to a whole byte */
		{ "1.5G", 0, 3ULL << 29 },
		{ "0.5K", 0, 512 },
		{ "1.1K", 0, 1126 },
		{ "0.001K", 0, 1 },
		{ "0.0001K", 0, 0 },
		{ "1.999999999999999999K", 0, 2047 },
		{ "15.999999999999999999E", 0, UINT64_MAX - 1 },
		{ "007", 0, 7 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "16777215T", 0, 16777215ULL << 40 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "99999999999999999999999K", -ERANGE, 0 },
		{ "99999999999999999999.5K", -ERANGE, 0 },
		{ "16777216T", -ERANGE, 0 },
		{ "17179869184G", -ERANGE, 0 },
		{ "16E", -ERANGE, 0 },
		{ "-1", -ERANGE, 0 },
		{ "-1K", -ERANGE, 0 },
		{ "-1.5G", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
		{ "-", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "1K ", -EINVAL, 0 },
		{ "1x", -EINVAL, 0 },
		{ "1KB", -EINVAL, 0 },
		{ "1MB", -EINVAL, 0 },
		{ "1mb", -EINVAL, 0 },
		{ "1Gb", -EINVAL, 0 },
		{ "1m", -EINVAL, 0 },
		{ "1kib", -EINVAL, 0 },
		{ "1BB", -EINVAL, 0 },
		{ "1b", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "1e3", -EINVAL, 0 },
		{ "-1x", -EINVAL, 0 },
		{ "99999999999999999999x", -EINVAL, 0 },
		{ "1.5", -EINVAL, 0 },
		{ "1.5B", -EINVAL, 0 },
		{ ".5K", -EINVAL, 0 },
		{ "1.K", -EINVAL, 0 },
		{ "1..5K", -EINVAL, 0 },
		{ "1.5.5K", -EINVAL, 0 },
		{ "1.-5K", -EINVAL, 0 },
		{ "0.0000000000000000001K", -EINVAL, 0 }, /* 19 places */
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t v = 12345;

		print_message("size '%s'\n", cases[i].s);
		assert_int_equal(acct_parse_size(cases[i].s, &v), cases[i].r);
		assert_int_equal(v, cases[i].r == 0 ? cases[i].v : 12345);
	}
	assert_int_equal(acct_parse_size(NULL, &(uint64_t){ 0 }), -EINVAL);
}

/* Every size unit the syntax takes, one by one (issue 17: "Gb" mapped to MiB
 * went unnoticed because only some spellings were tried), each at 1, at 3, at
 * 2.5, at the largest count that fits and the first that does not; then every
 * other spelling of each letter (case, B, iB), which must be refused with the
 * unit to write instead (issue 15: "50MB" meant MiB without saying so). */
static void test_parse_size_every_unit(void **state)
{
	static const struct {
		const char *unit;
		uint64_t factor;
	} units[] = {
		{ "", 1 },
		{ "B", 1 },
		{ "K", UINT64_C(1) << 10 }, { "KiB", UINT64_C(1) << 10 },
		{ "M", UINT64_C(1) << 20 }, { "MiB", UINT64_C(1) << 20 },
		{ "G", UINT64_C(1) << 30 }, { "GiB", UINT64_C(1) << 30 },
		{ "T", UINT64_C(1) << 40 }, { "TiB", UINT64_C(1) << 40 },
		{ "P", UINT64_C(1) << 50 }, { "PiB", UINT64_C(1) << 50 },
		{ "E", UINT64_C(1) << 60 }, { "EiB", UINT64_C(1) << 60 },
	};
	static const char letters[] = "KMGTPE";
	static const char *const tails[] = { "", "B", "b", "iB", "ib", "IB", "Ib" };
	unsigned refused = 0;

	for (size_t u = 0; u < ELEMENTSOF(units); u++) {
		uint64_t v, f = units[u].factor, most = UINT64_MAX / f;
		char s[64];

		print_message("size unit '%s'\n", units[u].unit);
		snprintf(s, sizeof(s), "1%s", units[u].unit);
		assert_int_equal(acct_parse_size(s, &v), 0);
		assert_int_equal(v, f);
		snprintf(s, sizeof(s), "3%s", units[u].unit);
		assert_int_equal(acct_parse_size(s, &v), 0);
		assert_int_equal(v, 3 * f);
		snprintf(s, sizeof(s), "2.5%s", units[u].unit);
		assert_int_equal(acct_parse_size(s, &v), f > 1 ? 0 : -EINVAL);
		if (f > 1)
			assert_int_equal(v, 2 * f + f / 2);
		snprintf(s, sizeof(s), "%" PRIu64 "%s", most, units[u].unit);
		assert_int_equal(acct_parse_size(s, &v), 0);
		assert_int_equal(v, most * f);
		if (f > 1) {
			snprintf(s, sizeof(s), "%" PRIu64 "%s", most + 1, units[u].unit);
			v = 12345;
			assert_int_equal(acct_parse_size(s, &v), -ERANGE);
			assert_int_equal(v, 12345);
		}
		snprintf(s, sizeof(s), "-1%s", units[u].unit);
		assert_int_equal(acct_parse_size(s, &v), -ERANGE);
	}
	for (size_t l = 0; letters[l]; l++)
		for (int upper = 0; upper < 2; upper++)
			for (size_t t = 0; t < ELEMENTSOF(tails); t++) {
				char s[16], want[80];
				uint64_t v = 12345;

				snprintf(s, sizeof(s), "50%c%s", upper ? letters[l] : letters[l] - 'A' + 'a', tails[t]);
				if ((upper && !*tails[t]) || (upper && strcmp(tails[t], "iB") == 0))
					continue; /* K, KiB: taken above */
				refused++;
				print_message("size '%s'\n", s);
				assert_int_equal(acct_parse_size(s, &v), -EINVAL);
				assert_int_equal(v, 12345);
				snprintf(want, sizeof(want), "ambiguous unit: sizes are powers of 1024, write %c or %ciB",
					 letters[l], letters[l]);
				assert_string_equal(acct_size_refusal(s), want);
			}
	assert_int_equal(refused, 6 * (2 * 7 - 2));
	assert_string_equal(acct_size_refusal("1x"), "expected " ACCT_SIZE_SYNTAX);
	assert_string_equal(acct_size_refusal("x"), "expected " ACCT_SIZE_SYNTAX);
	assert_string_equal(acct_size_refusal("50Q"), "expected " ACCT_SIZE_SYNTAX);
	assert_string_equal(acct_size_refusal("50KBB"), "expected " ACCT_SIZE_SYNTAX);
	assert_string_equal(acct_size_refusal(NULL), "expected " ACCT_SIZE_SYNTAX);
	assert_string_equal(acct_size_refusal("-2mb"), "ambiguous unit: sizes are powers of 1024, write M or MiB");
	assert_string_equal(acct_size_refusal("2.5 gB"), "ambiguous unit: sizes are powers of 1024, write G or GiB");
	assert_string_equal(acct_size_refusal("1.5B"),
			    "a count of bytes takes no fraction: use K, M or G for parts of a unit");
}

/* A plain integer: no unit, no sign, no spaces; negative and too large are
 * out of range, the rest malformed. */
static void test_parse_uint64(void **state)
{
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "7", 0, 7 },
		{ "007", 0, 7 },
		{ "1234567890", 0, 1234567890 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "99999999999999999999", -ERANGE, 0 },
		{ "-1", -ERANGE, 0 },
		{ "-0", -ERANGE, 0 },
		{ "-18446744073709551616", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "-", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ "x", -EINVAL, 0 },
		{ "12x", -EINVAL, 0 },
		{ "1K", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "-1x", -EINVAL, 0 },
		{ "18446744073709551616x", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t v = 12345;

		print_message("uint64 '%s'\n", cases[i].s);
		assert_int_equal(acct_parse_uint64(cases[i].s, &v), cases[i].r);
		assert_int_equal(v, cases[i].r == 0 ? cases[i].v : 12345);
	}
}

static void test_parse_duration(void **state)
{
	static const uint64_t S = 1000000, MIN = 60 * S, H = 60 * MIN, D = 24 * H;
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "10", 0, 10 * S },
		{ "10s", 0, 10 * S },
		{ "10 s", 0, 10 * S },
		{ "250ms", 0, 250000 },
		{ "250msec", 0, 250000 },
		{ "7us", 0, 7 },
		{ "7usec", 0, 7 },
		{ "1sec", 0, S },
		{ "1second", 0, S },
		{ "3seconds", 0, 3 * S },
		{ "5min", 0, 5 * MIN },
		{ "5m", 0, 5 * MIN },
		{ "1minute", 0, MIN },
		{ "2minutes", 0, 2 * MIN },
		{ "2h", 0, 2 * H },
		{ "2hr", 0, 2 * H },
		{ "1hour", 0, H },
		{ "3hours", 0, 3 * H },
		{ "1d", 0, D },
		{ "1day", 0, D },
		{ "2days", 0, 2 * D },
		{ "1w", 0, 7 * D },
		{ "1week", 0, 7 * D },
		{ "2weeks", 0, 14 * D },
		{ "1M", 0, 2629800 * S },
		{ "1month", 0, 2629800 * S },
		{ "2months", 0, 2 * 2629800 * S },
		{ "1y", 0, 31557600 * S },
		{ "1year", 0, 31557600 * S },
		{ "2years", 0, 2 * 31557600 * S },
		{ "1.5s", 0, 1500000 },
		{ "0.5ms", 0, 500 },
		{ "0.5us", 0, 0 },
		{ "1.25", 0, 1250000 },
		{ "1h 30min", 0, H + 30 * MIN },
		{ "1h30min", 0, H + 30 * MIN },
		{ "1min\t30s", 0, 90 * S },
		{ "2 hours 3 minutes", 0, 2 * H + 3 * MIN },
		{ "1s 1s", 0, 2 * S },
		{ "18446744073709551615us", 0, UINT64_MAX },
		{ "18446744073709s", 0, 18446744073709000000ULL },
		{ "5124095576h", 0, 5124095576ULL * 3600000000ULL },
		{ "5124095577h", -ERANGE, 0 },
		{ "18446744073710s", -ERANGE, 0 },
		{ "18446744073709551616us", -ERANGE, 0 },
		{ "18446744073709551615us 1us", -ERANGE, 0 },
		{ "99999999999999999999.5s", -ERANGE, 0 },
		{ "-1s", -ERANGE, 0 },
		{ "-0", -ERANGE, 0 },
		{ "-1h 30min", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "s", -EINVAL, 0 },
		{ "abc", -EINVAL, 0 },
		{ " 10s", -EINVAL, 0 },
		{ "10s ", -EINVAL, 0 },
		{ "10 ", -EINVAL, 0 },
		{ "1x", -EINVAL, 0 },
		{ "1S", -EINVAL, 0 },
		{ "1Min", -EINVAL, 0 },
		{ "1min 30", -EINVAL, 0 },
		{ "1min30", -EINVAL, 0 },
		{ "30 1min", -EINVAL, 0 },
		{ "1h -30min", -EINVAL, 0 },
		{ "--1s", -EINVAL, 0 },
		{ "1.s", -EINVAL, 0 },
		{ ".5s", -EINVAL, 0 },
		{ "1,5s", -EINVAL, 0 },
		{ "99999999999999999999x", -EINVAL, 0 },
		{ "0.0000000000000000001s", -EINVAL, 0 },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t v = 12345;

		print_message("duration '%s'\n", cases[i].s);
		assert_int_equal(acct_parse_duration_us(cases[i].s, &v), cases[i].r);
		assert_int_equal(v, cases[i].r == 0 ? cases[i].v : 12345);
	}
	assert_int_equal(acct_parse_duration_us(NULL, &(uint64_t){ 0 }), -EINVAL);
}

static void test_parse_bool_and_level(void **state)
{
	static const char *const yes[] = { "yes", "YES", "true", "True", "on", "1" };
	static const char *const no[] = { "no", "No", "false", "FALSE", "off", "0" };
	static const char *const bad[] = { "", "y", "n", "2", "yes ", "enable", "-1" };
	enum acct_log_level l = ACCT_LOG_ERR;
	bool b;

	for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
		b = false;
		assert_int_equal(acct_parse_bool(yes[i], &b), 0);
		assert_true(b);
		b = true;
		assert_int_equal(acct_parse_bool(no[i], &b), 0);
		assert_false(b);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		b = true;
		assert_int_equal(acct_parse_bool(bad[i], &b), -EINVAL);
		assert_true(b);
	}
	assert_int_equal(acct_parse_bool(NULL, &b), -EINVAL);

	for (int i = ACCT_LOG_ERR; i <= ACCT_LOG_DEBUG; i++) {
		const char *s = acct_log_level_to_string((enum acct_log_level)i);

		assert_non_null(s);
		assert_int_equal(acct_parse_log_level(s, &l), 0);
		assert_int_equal(l, i);
	}
	assert_string_equal(acct_log_level_to_string(ACCT_LOG_ERR), "err");
	assert_string_equal(acct_log_level_to_string(ACCT_LOG_WARNING), "warning");
	assert_string_equal(acct_log_level_to_string(ACCT_LOG_NOTICE), "notice");
	assert_string_equal(acct_log_level_to_string(ACCT_LOG_INFO), "info");
	assert_string_equal(acct_log_level_to_string(ACCT_LOG_DEBUG), "debug");
	assert_null(acct_log_level_to_string((enum acct_log_level)2));
	assert_null(acct_log_level_to_string((enum acct_log_level)8));
	assert_int_equal(acct_parse_log_level("DEBUG", &l), 0);
	assert_int_equal(l, ACCT_LOG_DEBUG);
	l = ACCT_LOG_INFO;
	assert_int_equal(acct_parse_log_level("error", &l), -EINVAL);
	assert_int_equal(acct_parse_log_level("7", &l), -EINVAL);
	assert_int_equal(acct_parse_log_level("", &l), -EINVAL);
	assert_int_equal(acct_parse_log_level(NULL, &l), -EINVAL);
	assert_int_equal(l, ACCT_LOG_INFO);
}

static void test_metrics_families(void **state)
{
	struct acct_config *c = NULL;
	struct acct_config_diag diag = { 0 };

	assert_int_equal(acct_config_new_defaults(&c), 0);
	assert_int_equal(acct_config_set(c, "metrics", "families", "default -pressure +cpu_rate", "test", &diag), 0);
	assert_string_equal(c->metrics_families[1], "-pressure");
	assert_int_equal(acct_config_set(c, "metrics", "families", "default +bogus", "test", &diag), -EINVAL);
	assert_string_equal(diag.error, "test: families: unknown family '+bogus' (expected default, all, none or a "
					"group, optionally with + or -)");
	assert_string_equal(c->metrics_families[1], "-pressure"); /* unchanged */
	/* commas as in a scrape's ?family= (issue 15 item 9: one syntax) */
	assert_int_equal(acct_config_set(c, "metrics", "families", "default,-numa, +cpu_rate", "test", &diag), 0);
	assert_string_equal(c->metrics_families[0], "default");
	assert_string_equal(c->metrics_families[1], "-numa");
	assert_string_equal(c->metrics_families[2], "+cpu_rate");
	assert_null(c->metrics_families[3]);
	acct_config_diag_clear(&diag);
	assert_int_equal(acct_config_set(c, "metrics", "families", ", ,", "test", &diag), -EINVAL);
	assert_string_equal(diag.error, "test: families: unknown family ', ,' (expected default, all, none or a "
					"group, optionally with + or -)");
	assert_string_equal(c->metrics_families[1], "-numa"); /* unchanged */
	acct_config_diag_clear(&diag);
	assert_int_equal(acct_config_set(c, "metrics", "families", "default,,bogus", "test", &diag), -EINVAL);
	assert_string_equal(diag.error, "test: families: unknown family 'bogus' (expected default, all, none or a "
					"group, optionally with + or -)");
	assert_int_equal(acct_config_set(c, "metrics", "exclude", "/user.slice /machine.slice", "test", &diag), 0);
	assert_string_equal(c->metrics_exclude[1], "/machine.slice");
	acct_config_diag_clear(&diag);
	acct_config_free(c);
}

/* [sampling] collector's names (collector-mode.h). */
static void test_collector_modes(void **state)
{
	(void)state;
	for (int m = 0; m < _ACCT_COLLECTOR_MAX; m++) {
		const char *s = acct_collector_mode_to_string(m);
		assert_non_null(s);
		assert_int_equal(acct_collector_mode_from_string(s), m);
	}
	assert_string_equal(acct_collector_mode_to_string(ACCT_COLLECTOR_AUTO), "auto");
	assert_string_equal(acct_collector_mode_to_string(ACCT_COLLECTOR_BPF), "bpf");
	assert_string_equal(acct_collector_mode_to_string(ACCT_COLLECTOR_FILES), "files");
	assert_null(acct_collector_mode_to_string(_ACCT_COLLECTOR_MAX));
	assert_null(acct_collector_mode_to_string((enum acct_collector_mode)-1));
	assert_int_equal(acct_collector_mode_from_string("BPF"), -EINVAL);
	assert_int_equal(acct_collector_mode_from_string(""), -EINVAL);
	assert_int_equal(acct_collector_mode_from_string("bpf "), -EINVAL);
	assert_int_equal(acct_collector_mode_from_string(NULL), -EINVAL);
}

/* ---- budgets against the host (budget-limits.h) --------------------------- */

/* Refused with `key` and a reason that contains `words`, or accepted (key NULL). */
static void expect_budget(const struct acct_config *c, const struct acct_host_limits *h, const char *key,
			  const char *words)
{
	_cleanup_free_ char *reason = NULL;
	const char *got = NULL;
	int r = acct_budget_limits_check(c, h, &got, &reason);

	if (!key) {
		assert_int_equal(r, 0);
		assert_null(reason);
		return;
	}
	assert_int_equal(r, -ERANGE);
	assert_string_equal(got, key);
	assert_non_null(reason);
	if (!strstr(reason, words))
		fail_msg("'%s' does not say '%s'", reason, words);
}

static void test_budget_limits(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	const struct acct_host_limits host = { .memory_bytes = 8ULL << 30, .cpus = 4, .pid_max = 32768 };
	const struct acct_host_limits unknown = { 0 };

	(void)state;
	assert_int_equal(acct_config_new_defaults(&c), 0);
	expect_budget(c, &host, NULL, NULL);

	/* The trial's 1T on a host of 8G; the host's memory itself is the most. */
	c->bytes_budget = 1LL << 40;
	expect_budget(c, &host, "bytes_budget", "1.0T is more than the host's memory (8.0G)");
	expect_budget(c, &unknown, NULL, NULL);
	c->bytes_budget = 8LL << 30;
	expect_budget(c, &host, NULL, NULL);
	c->bytes_budget = (8LL << 30) + 1;
	expect_budget(c, &host, "bytes_budget", "the host's memory (8.0G)");
	c->bytes_budget = (int64_t)SIZE_M;

	/* 4 CPUs x a 1s fast pass: 4s of CPU time at most. */
	c->cpu_budget_us = 4 * (int64_t)USEC_PER_SEC;
	expect_budget(c, &host, NULL, NULL);
	c->cpu_budget_us++;
	expect_budget(c, &host, "cpu_budget", "the CPU time the host can use in one fast_interval (4s)");
	c->fast_interval_us = 2 * USEC_PER_SEC;
	expect_budget(c, &host, NULL, NULL);
	c->cpu_budget_us = 10 * (int64_t)USEC_PER_MSEC;

	c->tasks_budget = 32769;
	expect_budget(c, &host, "tasks_budget", "kernel.pid_max (32768)");
	c->tasks_budget = 32768;
	expect_budget(c, &host, NULL, NULL);
}

/* Load `text`: refused with -ERANGE, the message "PATH:`start`HOST)`end`"
 * where HOST is this host's value. */
static void expect_beyond_host(struct tmp *t, const char *text, const char *start, const char *end)
{
	struct acct_config_diag diag = {};
	struct acct_config *c = POISON;
	const char *path = tmp_write(t, "bad.conf", text);
	_cleanup_free_ char *expected = NULL;

	assert_true(asprintf(&expected, "%s:%s", path, start) > 0);
	assert_int_equal(acct_config_load(path, "", &c, &diag), -ERANGE);
	assert_ptr_equal(c, POISON);
	assert_non_null(diag.error);
	if (strncmp(diag.error, expected, strlen(expected)) != 0 || !strstr(diag.error, end))
		fail_msg("'%s' is not '%s...)%s'", diag.error, expected, end);
	acct_config_diag_clear(&diag);
	assert_int_equal(unlink(path), 0);
	free(t->files[--t->nr_files]);
}

/* A load refuses a budget beyond this host, blaming the line that set it. */
static void test_load_budget_beyond_host(void **state)
{
	struct tmp *t = *state;

	/* No host has 4P of memory, nor a pid_max of 2^62 (at most 2^22). */
	expect_beyond_host(t, "[counters]\nbytes_budget = 1M\nbytes_budget = 4096T\n",
			   "3: bytes_budget: 4.0P is more than the host's memory (",
			   "): every memory bound would be larger than all the memory there is");
	expect_beyond_host(t, "[counters]\ntasks_budget = 4611686018427387904\n",
			   "2: tasks_budget: 4611686018427387904 is more than the host's kernel.pid_max (",
			   "): no cgroup can hold that many tasks");
}

/* What a reload reports: the keys that changed, old and new, and those only
 * a start applies. */
/* ---- [resource.NAME] ------------------------------------------------------ */

static void test_resources(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL, *again = NULL;
	struct acct_config_diag diag = {};
	const struct acct_resource_config *r;
	const char *path = tmp_write(t, "res.conf",
				     "[counters]\nbytes_budget = 2M\n"
				     "[resource.gpu_memory]\nbudget = 4M\nunit = bytes\non_removal = reparent\nram = yes\n"
				     "[resource.inflight]\naverages = yes\nrelease_on_exit = yes\n"
				     "[resource.cpu_lease]\nunit = seconds\nbudget = 10ms\n"
				     "[resource.defaults_bytes]\nunit = bytes\n"
				     "[resource.empty_0]\n");

	assert_int_equal(acct_config_load(path, "", &c, &diag), 0);
	assert_null(diag.error);
	assert_int_equal(c->nr_resources, 5);
	r = acct_config_resource(c, "gpu_memory");
	assert_non_null(r);
	assert_int_equal(r->unit, ACCT_RESOURCE_BYTES);
	assert_int_equal(r->budget, 4 << 20); /* budget before unit: parsed in the unit */
	assert_int_equal(r->on_removal, ACCT_REMOVAL_REPARENT);
	assert_true(r->ram);
	assert_false(r->release_on_exit);
	r = acct_config_resource(c, "inflight");
	assert_int_equal(r->unit, ACCT_RESOURCE_COUNT);
	assert_int_equal(r->budget, c->tasks_budget);
	assert_true(r->averages);
	assert_true(r->release_on_exit);
	assert_int_equal(r->on_removal, ACCT_REMOVAL_RELEASE);
	assert_int_equal(acct_config_resource(c, "cpu_lease")->budget, 10000);
	assert_int_equal(acct_config_resource(c, "defaults_bytes")->budget, 2 << 20);
	assert_non_null(acct_config_resource(c, "empty_0"));
	assert_null(acct_config_resource(c, "nope"));
	assert_string_equal(c->resources[0].name, "gpu_memory"); /* in the order declared */

	/* The dump loads back to the same resources. */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	acct_config_dump(c, f);
	assert_int_equal(fclose(f), 0);
	const char *dumped = tmp_write(t, "dump.conf", text);
	free(text);
	assert_int_equal(acct_config_load(dumped, "", &again, &diag), 0);
	assert_int_equal(again->nr_resources, c->nr_resources);
	for (size_t i = 0; i < c->nr_resources; i++) {
		assert_string_equal(again->resources[i].name, c->resources[i].name);
		assert_int_equal(again->resources[i].unit, c->resources[i].unit);
		assert_int_equal(again->resources[i].budget, c->resources[i].budget);
		assert_int_equal(again->resources[i].on_removal, c->resources[i].on_removal);
		assert_int_equal(again->resources[i].release_on_exit, c->resources[i].release_on_exit);
		assert_int_equal(again->resources[i].averages, c->resources[i].averages);
		assert_int_equal(again->resources[i].ram, c->resources[i].ram);
	}

	/* A reload reports a change of the declared set, to apply at the start. */
	struct acct_config_change *v = NULL;
	size_t n = 0;
	assert_int_equal(acct_config_diff(c, again, &v, &n), 0);
	assert_int_equal(n, 0);
	acct_config_changes_free(v, n);
	_cleanup_(acct_config_freep) struct acct_config *none = NULL;
	assert_int_equal(acct_config_new_defaults(&none), 0);
	assert_int_equal(acct_config_diff(none, c, &v, &n), 0);
	assert_int_equal(n, 2); /* bytes_budget and the resources */
	assert_string_equal(v[1].section, "resource");
	assert_true(v[1].at_start);
	assert_non_null(strstr(v[1].new_value, "gpu_memory: unit=bytes budget=4M on_removal=reparent"));
	acct_config_changes_free(v, n);
}

static void test_resource_errors(void **state)
{
	struct tmp *t = *state;

	expect_load_error(t, "[resource.GPU]\n", -EINVAL,
			  "1: invalid resource name 'GPU' (expected 1 to 64 of a-z, 0-9 and _)");
	expect_load_error(t, "[resource.]\n", -EINVAL, "1: invalid resource name '' (expected 1 to 64 of a-z, 0-9 and _)");
	expect_load_error(t, "[resource.a/b]\n", -EINVAL,
			  "1: invalid resource name 'a/b' (expected 1 to 64 of a-z, 0-9 and _)");
	expect_load_error(t, "[resource.a]\nunit = pages\n", -EINVAL,
			  "2: unit: invalid unit 'pages' (expected bytes, count or seconds)");
	expect_load_error(t, "[resource.a]\non_removal = keep\n", -EINVAL,
			  "2: on_removal: invalid value 'keep' (expected release or reparent)");
	expect_load_error(t, "[resource.a]\nram = maybe\n", -EINVAL,
			  "2: ram: invalid boolean 'maybe' (expected yes, no, true, false, on, off, 1 or 0)");
	expect_load_error(t, "[resource.a]\nunti = count\n", -EINVAL,
			  "2: unknown key 'unti' in section [resource.a] (did you mean 'unit'?)");
	expect_load_error(t, "[resource.a]\nbudget = 4M\n\nunit = count\n", -EINVAL,
			  "2: budget: invalid number '4M' (expected an integer)");
	expect_load_error(t, "[resource.a]\nunit = seconds\nbudget = 4x\n", -EINVAL,
			  "3: budget: invalid duration '4x' (expected " ACCT_DURATION_SYNTAX ")");
	char msg[256];
	snprintf(msg, sizeof(msg), "3: budget: invalid size 'lots' (%s)", acct_size_refusal("lots"));
	expect_load_error(t, "[resource.a]\nunit = bytes\nbudget = lots\n", -EINVAL, msg);
}

static void test_diff(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *a = NULL, *b = NULL;
	struct acct_config_change *v = NULL;
	size_t n = SIZE_MAX;

	(void)state;
	assert_int_equal(acct_config_new_defaults(&a), 0);
	assert_int_equal(acct_config_new_defaults(&b), 0);
	assert_int_equal(acct_config_diff(a, b, &v, &n), 0);
	assert_int_equal(n, 0);
	acct_config_changes_free(v, n);

	assert_int_equal(acct_config_set(b, "sampling", "workers", "4", NULL, NULL), 0);
	assert_int_equal(acct_config_set(b, "counters", "bytes_budget", "4M", NULL, NULL), 0);
	assert_int_equal(acct_config_set(b, "cgroups", "exclude", "/a /b", NULL, NULL), 0);
	assert_int_equal(acct_config_set(b, "log", "removals", "each", NULL, NULL), 0);
	assert_int_equal(acct_config_diff(a, b, &v, &n), 0);
	const struct acct_config_change want[] = {
		{ "sampling", "workers", "2", "4", true },
		{ "cgroups", "exclude", "", "/a /b", false },
		{ "counters", "bytes_budget", "1M", "4M", false },
		{ "log", "removals", "auto", "each", false },
	};
	assert_int_equal(n, ELEMENTSOF(want));
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(v[i].section, want[i].section);
		assert_string_equal(v[i].key, want[i].key);
		assert_string_equal(v[i].old_value, want[i].old_value);
		assert_string_equal(v[i].new_value, want[i].new_value);
		assert_int_equal(v[i].at_start, want[i].at_start);
	}
	acct_config_changes_free(v, n);
}

/* acct_config_keep_at_start(): every key only a start applies takes the
 * running value (a reload's configuration then says what runs: the next
 * reload reports what differs from that, the new-user trial's "workers: 4
 * -> 2 (not applied)" with 2 running); the others keep the new ones; out of
 * memory, nothing changes. */
static void test_keep_at_start(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *running = NULL, *loaded = NULL, *file = NULL;
	static const char *const at_start[][3] = {
		{ "sampling", "workers", "4" },	       { "sampling", "collector", "files" },
		{ "sampling", "bpf_pin_dir", "/run/x" }, { "cgroups", "root", "/srv/cg" },
		{ "api", "socket", "/run/x.sock" },      { "api", "charge_state_path", "/var/lib/x" },
		{ "metrics", "listen", "none" },
	};
	struct acct_config_change *v = NULL;
	size_t n = SIZE_MAX;

	(void)state;
	assert_int_equal(acct_config_new_defaults(&running), 0);
	assert_int_equal(acct_config_set(running, "cgroups", "root", "/srv/was", NULL, NULL), 0);
	assert_int_equal(acct_config_new_defaults(&loaded), 0);
	for (size_t i = 0; i < ELEMENTSOF(at_start); i++)
		assert_int_equal(acct_config_set(loaded, at_start[i][0], at_start[i][1], at_start[i][2], NULL, NULL), 0);
	assert_int_equal(acct_config_set(loaded, "sampling", "fast_interval", "2s", NULL, NULL), 0);
	/* the reload's report: each of them, not applied */
	assert_int_equal(acct_config_diff(running, loaded, &v, &n), 0);
	assert_int_equal(n, ELEMENTSOF(at_start) + 1);
	acct_config_changes_free(v, n);

	/* without memory for a copy: nothing changed */
	for (unsigned k = 0;; k++) {
		alloc_fail_after(k);
		int r = acct_config_keep_at_start(loaded, running);
		alloc_fail_off();
		if (!alloc_fail_hit()) {
			assert_int_equal(r, 0);
			break;
		}
		assert_int_equal(r, -ENOMEM);
		assert_int_equal(loaded->workers, 4);
		assert_string_equal(loaded->socket_path, "/run/x.sock");
	}
	/* kept: the running values of the start's keys, the new fast interval */
	assert_int_equal(acct_config_diff(running, loaded, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].key, "fast_interval");
	acct_config_changes_free(v, n);
	assert_string_equal(loaded->cgroup_root, "/srv/was");
	/* the file back to the running workers: no change at the next reload;
	 * a change still pending is reported again */
	assert_int_equal(acct_config_new_defaults(&file), 0);
	assert_int_equal(acct_config_set(file, "sampling", "fast_interval", "2s", NULL, NULL), 0);
	assert_int_equal(acct_config_set(file, "cgroups", "root", "/srv/was", NULL, NULL), 0);
	assert_int_equal(acct_config_set(file, "metrics", "listen", "none", NULL, NULL), 0);
	assert_int_equal(acct_config_diff(loaded, file, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].key, "listen");
	assert_true(v[0].at_start);
	acct_config_changes_free(v, n);
}

static void test_removal_log(void **state)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;

	(void)state;
	assert_int_equal(acct_config_new_defaults(&c), 0);
	/* a record per cgroup to the journal, a summary to a terminal or a file */
	assert_int_equal(c->log_removals, ACCT_REMOVALS_AUTO);
	assert_int_equal(acct_removal_log_effective(c->log_removals, true), ACCT_REMOVALS_EACH);
	assert_int_equal(acct_removal_log_effective(c->log_removals, false), ACCT_REMOVALS_SUMMARY);
	assert_int_equal(acct_removal_log_effective(ACCT_REMOVALS_SUMMARY, true), ACCT_REMOVALS_SUMMARY);
	assert_int_equal(acct_removal_log_effective(ACCT_REMOVALS_EACH, false), ACCT_REMOVALS_EACH);
	assert_int_equal(acct_config_set(c, "log", "removals", "each", NULL, NULL), 0);
	assert_int_equal(c->log_removals, ACCT_REMOVALS_EACH);
	assert_int_equal(acct_config_set(c, "log", "removals", "Summary", NULL, NULL), 0);
	assert_int_equal(c->log_removals, ACCT_REMOVALS_SUMMARY);
	assert_int_equal(acct_config_set(c, "log", "removals", "all", NULL, NULL), -EINVAL);
	assert_int_equal(c->log_removals, ACCT_REMOVALS_SUMMARY);
	for (int m = 0; m < _ACCT_REMOVALS_MAX; m++)
		assert_int_equal(acct_removal_log_from_string(acct_removal_log_to_string(m)), m);
	assert_null(acct_removal_log_to_string(_ACCT_REMOVALS_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_defaults_socket_unprivileged),
		cmocka_unit_test_setup_teardown(test_documented_defaults, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test_setup_teardown(test_empty_strings, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_bad_values, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_set),
		cmocka_unit_test_setup_teardown(test_syntax_errors, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_read_error),
		cmocka_unit_test_setup_teardown(test_long_values, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_blank_lines, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_not_regular_files, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_interval_conflict, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_interval_conflict_one_file, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_unknown_hints, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_unknown_warnings, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_dropin_order, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_missing_files, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_no_files, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_relative_globs, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_unreadable, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_dump, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_set_out_of_memory),
		cmocka_unit_test_setup_teardown(test_load_out_of_memory, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_load_inih_out_of_memory, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_diff_out_of_memory),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_size_every_unit),
		cmocka_unit_test(test_parse_uint64),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_bool_and_level),
		cmocka_unit_test(test_metrics_families),
		cmocka_unit_test(test_collector_modes),
		cmocka_unit_test(test_budget_limits),
		cmocka_unit_test_setup_teardown(test_load_budget_beyond_host, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_keep_at_start),
		cmocka_unit_test_setup_teardown(test_resources, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_resource_errors, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_removal_log),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
