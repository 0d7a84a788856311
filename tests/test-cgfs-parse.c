/* test-cgfs-parse.c - every parser on every kernel fixture in tests/data/kernel
 * (real files from a 6.18 host and files written from cgroup-v2.rst, see the
 * README there) with the exact values they hold, a table of malformed inputs
 * per parser with the error each must give, and every prefix of every fixture
 * through every parser in a buffer of exactly its size (for ASan). The file is
 * long because each of the ~15 formats has its fixtures, values and malformed
 * cases here, beside the one module they test. */
#include <errno.h>
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgfs-parse.h"
#include "util.h"

#define SENTINEL UINT64_C(0xdeadbeefcafef00d)

/* ---- helpers ---------------------------------------------------------- */

static char *read_fixture(const char *rel)
{
	const char *dir = getenv("ACCT_TEST_DATA");
	char path[4096];
	char *buf;
	FILE *f;
	long n;

	if (!dir)
		dir = "tests/data";
	snprintf(path, sizeof(path), "%s/kernel/%s", dir, rel);
	f = fopen(path, "re");
	if (!f)
		fail_msg("cannot open fixture %s: %s", path, strerror(errno));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static uint64_t fixture_u64(const char *rel)
{
	_cleanup_free_ char *buf = read_fixture(rel);
	uint64_t v = SENTINEL;

	assert_int_equal(cgfs_parse_u64(buf, &v), 0);
	return v;
}

static uint64_t kv(const char *buf, const char *key)
{
	uint64_t v = SENTINEL;
	int r = cgfs_flat_keyed_get(buf, key, &v);

	if (r != 0)
		fail_msg("key %s: %d", key, r);
	return v;
}

/* Assert an error and report the input that failed to give it. */
static void expect(int got, int want, const char *parser, const char *input)
{
	if (got != want)
		fail_msg("%s(\"%s\") = %d, expected %d", parser, input, got, want);
}

struct bad {
	const char *in;
	int error;
};

/* ---- single values ---------------------------------------------------- */

static void test_u64_fixtures(void **state)
{
	assert_true(fixture_u64("hybrid-6.18/v1-memory--memory.limit_in_bytes") == UINT64_C(9223372036854771712));
	assert_true(fixture_u64("hybrid-6.18/v1-memory--memory.max_usage_in_bytes") == 2261729280u);
	assert_true(fixture_u64("hybrid-6.18/v1-memory--memory.memsw.usage_in_bytes") == 438595584u);
	assert_true(fixture_u64("hybrid-6.18/v1-memory--memory.usage_in_bytes") == 438349824u);
	assert_true(fixture_u64("hybrid-6.18/v1-cpuacct-root--cpuacct.usage") == UINT64_C(245768883733));
	assert_true(fixture_u64("v2-6.x/memory.current") == 1358057472u);
	assert_true(fixture_u64("v2-6.x/memory.peak") == 1604149248u);
	assert_true(fixture_u64("v2-6.x/memory.max") == UINT64_MAX);
	assert_true(fixture_u64("v2-6.x/memory.high") == 2147483648u);
	assert_true(fixture_u64("v2-6.x/memory.swap.current") == 8388608u);
}

static void test_u64_edges(void **state)
{
	static const struct {
		const char *in;
		uint64_t v;
	} good[] = {
		{ "0\n", 0 },
		{ "0", 0 },
		{ "42", 42 },
		{ "007\n", 7 },
		{ "max", UINT64_MAX },
		{ "18446744073709551615\n", UINT64_MAX },
		{ "18446744073709551614", UINT64_MAX - 1 },
	};
	static const struct bad bad[] = {
		{ "", -EBADMSG },
		{ "\n", -EBADMSG },
		{ " 1\n", -EBADMSG },
		{ "1 \n", -EBADMSG },
		{ "1\n\n", -EBADMSG },
		{ "1\n2\n", -EBADMSG },
		{ "12a\n", -EBADMSG },
		{ "-1\n", -EBADMSG },
		{ "+1\n", -EBADMSG },
		{ "0x10\n", -EBADMSG },
		{ "1.5\n", -EBADMSG },
		{ "1\r\n", -EBADMSG },
		{ "Max\n", -EBADMSG },
		{ "maxi\n", -EBADMSG },
		{ "ma", -EBADMSG },
		{ "max 100000\n", -EBADMSG },
		{ "18446744073709551616\n", -ERANGE },
		{ "99999999999999999999999999999999\n", -ERANGE },
		{ "18446744073709551616x\n", -EBADMSG },
	};

	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		uint64_t v = SENTINEL;
		expect(cgfs_parse_u64(good[i].in, &v), 0, "cgfs_parse_u64", good[i].in);
		assert_true(v == good[i].v);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		uint64_t v = SENTINEL;
		expect(cgfs_parse_u64(bad[i].in, &v), bad[i].error, "cgfs_parse_u64", bad[i].in);
		assert_true(v == SENTINEL);
	}
	assert_int_equal(cgfs_parse_u64(NULL, &(uint64_t){ 0 }), -EINVAL);
}

/* ---- flat keyed ------------------------------------------------------- */

struct kv_log {
	size_t calls;
	size_t stop_after; /* 0: never stop */
	int stop_with;
	char first_key[CGFS_KEY_MAX + 1];
	char last_key[CGFS_KEY_MAX + 1];
	uint64_t last_value;
};

static int log_kv(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct kv_log *l = userdata;

	assert_true(key_len >= 1 && key_len <= CGFS_KEY_MAX);
	if (l->calls == 0) {
		memcpy(l->first_key, key, key_len);
		l->first_key[key_len] = '\0';
	}
	memcpy(l->last_key, key, key_len);
	l->last_key[key_len] = '\0';
	l->last_value = value;
	l->calls++;
	if (l->stop_after && l->calls == l->stop_after)
		return l->stop_with;
	return 0;
}

static void test_flat_keyed_v1_memory_stat(void **state)
{
	_cleanup_free_ char *buf = read_fixture("hybrid-6.18/v1-memory--memory.stat");
	struct kv_log l = {};

	assert_int_equal(cgfs_parse_flat_keyed(buf, log_kv, &l), 0);
	assert_int_equal(l.calls, 42);
	assert_string_equal(l.first_key, "cache");
	assert_string_equal(l.last_key, "total_unevictable");
	assert_true(l.last_value == 0);

	assert_true(kv(buf, "cache") == 0);
	assert_true(kv(buf, "hierarchical_memory_limit") == UINT64_C(9223372036854771712));
	assert_true(kv(buf, "hierarchical_memsw_limit") == UINT64_C(9223372036854771712));
	assert_true(kv(buf, "total_cache") == 284635136u);
	assert_true(kv(buf, "total_rss") == 5275648u);
	assert_true(kv(buf, "total_mapped_file") == 3457024u);
	assert_true(kv(buf, "total_dirty") == 221184u);
	assert_true(kv(buf, "total_workingset_refault_file") == 199397u);
	assert_true(kv(buf, "total_pgpgin") == 3425724u);
	assert_true(kv(buf, "total_pgpgout") == 3360587u);
	assert_true(kv(buf, "total_pgfault") == 4962173u);
	assert_true(kv(buf, "total_pgmajfault") == 1801u);
	assert_true(kv(buf, "total_inactive_anon") == 4960256u);
	assert_true(kv(buf, "total_active_anon") == 163840u);
	assert_true(kv(buf, "total_inactive_file") == 83599360u);
	assert_true(kv(buf, "total_active_file") == 201035776u);

	uint64_t v = SENTINEL;
	assert_int_equal(cgfs_flat_keyed_get(buf, "total", &v), -ENOENT);
	assert_int_equal(cgfs_flat_keyed_get(buf, "total_cach", &v), -ENOENT);
	assert_int_equal(cgfs_flat_keyed_get(buf, "total_cachee", &v), -ENOENT);
	assert_int_equal(cgfs_flat_keyed_get(buf, "", &v), -EINVAL);
	assert_true(v == SENTINEL);
}

static void test_flat_keyed_v2_memory_stat(void **state)
{
	static const char *const keys[] = {
		"anon", "file", "kernel", "kernel_stack", "pagetables", "sec_pagetables", "percpu", "sock",
		"vmalloc", "shmem", "zswap", "zswapped", "file_mapped", "file_dirty", "file_writeback",
		"swapcached", "anon_thp", "file_thp", "shmem_thp", "inactive_anon", "active_anon",
		"inactive_file", "active_file", "unevictable", "slab_reclaimable", "slab_unreclaimable", "slab",
		"workingset_refault_anon", "workingset_refault_file", "workingset_activate_anon",
		"workingset_activate_file", "workingset_restore_anon", "workingset_restore_file",
		"workingset_nodereclaim", "pgscan", "pgsteal", "pgfault", "pgmajfault", "pgrefill",
		"pgactivate", "pgdeactivate", "pglazyfree", "pglazyfreed", "zswpin", "zswpout", "zswpwb",
		"thp_fault_alloc", "thp_collapse_alloc", "thp_swpout", "thp_swpout_fallback",
	};
	_cleanup_free_ char *buf = read_fixture("v2-6.x/memory.stat");
	struct kv_log l = {};

	assert_int_equal(cgfs_parse_flat_keyed(buf, log_kv, &l), 0);
	assert_int_equal(l.calls, 69);
	assert_string_equal(l.first_key, "anon");
	assert_string_equal(l.last_key, "pgdemote_proactive");
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		uint64_t v;
		if (cgfs_flat_keyed_get(buf, keys[i], &v) != 0)
			fail_msg("memory.stat lacks %s", keys[i]);
	}

	assert_true(kv(buf, "anon") == 418623488u);
	assert_true(kv(buf, "file") == 891228160u);
	assert_true(kv(buf, "kernel") == 48201728u);
	assert_true(kv(buf, "kernel_stack") == 2342912u);
	assert_true(kv(buf, "pagetables") == 9740288u);
	assert_true(kv(buf, "sec_pagetables") == 0);
	assert_true(kv(buf, "percpu") == 1125840u);
	assert_true(kv(buf, "sock") == 4096u);
	assert_true(kv(buf, "shmem") == 2179072u);
	assert_true(kv(buf, "file_mapped") == 157794304u);
	assert_true(kv(buf, "swapcached") == 311296u);
	assert_true(kv(buf, "anon_thp") == 270532608u);
	assert_true(kv(buf, "slab") == kv(buf, "slab_reclaimable") + kv(buf, "slab_unreclaimable"));
	assert_true(kv(buf, "slab") == 34938704u);
	assert_true(kv(buf, "workingset_refault_file") == 13517u);
	assert_true(kv(buf, "pgfault") == 2783651u);
	assert_true(kv(buf, "pgmajfault") == 1873u);
	assert_true(kv(buf, "thp_fault_alloc") == 129u);
	assert_true(kv(buf, "anon_thp") == kv(buf, "thp_fault_alloc") * 2097152u);
}

static void test_flat_keyed_cgroup_stat(void **state)
{
	_cleanup_free_ char *buf = read_fixture("hybrid-6.18/v2-unified--cgroup.stat");
	struct kv_log l = {};

	assert_int_equal(cgfs_parse_flat_keyed(buf, log_kv, &l), 0);
	assert_int_equal(l.calls, 6);
	assert_true(kv(buf, "nr_descendants") == 0);
	assert_true(kv(buf, "nr_subsys_perf_event") == 1);
	assert_true(kv(buf, "nr_dying_subsys_hugetlb") == 0);
}

static void test_flat_keyed_empty(void **state)
{
	_cleanup_free_ char *buf = read_fixture("hybrid-6.18/v2-unified--cgroup.controllers");
	struct kv_log l = {};
	uint64_t v = SENTINEL;

	assert_string_equal(buf, "");
	assert_int_equal(cgfs_parse_flat_keyed(buf, log_kv, &l), 0);
	assert_int_equal(l.calls, 0);
	assert_int_equal(cgfs_flat_keyed_get(buf, "anon", &v), -ENOENT);
	assert_true(v == SENTINEL);
}

static void test_flat_keyed_stop_early(void **state)
{
	_cleanup_free_ char *buf = read_fixture("v2-6.x/memory.stat");
	struct kv_log l = { .stop_after = 3, .stop_with = 42 };

	assert_int_equal(cgfs_parse_flat_keyed(buf, log_kv, &l), 42);
	assert_int_equal(l.calls, 3);
	assert_string_equal(l.last_key, "kernel");

	l = (struct kv_log){ .stop_after = 1, .stop_with = -EIO };
	assert_int_equal(cgfs_parse_flat_keyed(buf, log_kv, &l), -EIO);
	assert_int_equal(l.calls, 1);

	/* The last line stops too, and the value is still handed back. */
	l = (struct kv_log){ .stop_after = 69, .stop_with = 7 };
	assert_int_equal(cgfs_parse_flat_keyed(buf, log_kv, &l), 7);
	assert_int_equal(l.calls, 69);
}

static void test_flat_keyed_malformed(void **state)
{
	static const struct bad bad[] = {
		{ "anon 12a\n", -EBADMSG },
		{ "anon\n", -EBADMSG },
		{ "anon", -EBADMSG },
		{ "anon \n", -EBADMSG },
		{ "anon ", -EBADMSG },
		{ " anon 1\n", -EBADMSG },
		{ "anon  1\n", -EBADMSG },
		{ "anon 1 \n", -EBADMSG },
		{ "anon 1 2\n", -EBADMSG },
		{ "anon\t1\n", -EBADMSG },
		{ "anon 1\r\n", -EBADMSG },
		{ "anon -1\n", -EBADMSG },
		{ "anon +1\n", -EBADMSG },
		{ "anon 1.0\n", -EBADMSG },
		{ "anon max\n", -EBADMSG },
		{ "anon 18446744073709551616\n", -ERANGE },
		{ "anon 99999999999999999999999\n", -ERANGE },
		{ "anon 99999999999999999999999x\n", -EBADMSG },
		{ "anon 1\nfile 18446744073709551616\n", -ERANGE },
		{ "\n", -EBADMSG },
		{ "anon 1\n\nfile 2\n", -EBADMSG },
		{ "anon 1\n\n", -EBADMSG },
		{ "anon 1\nfile\n", -EBADMSG },
		{ "anon 1\nfile", -EBADMSG },
		{ "anon 1\nfile 2\n junk\n", -EBADMSG },
		{ " 1\n", -EBADMSG },
		{ "\xc3\xa9 1\n", -EBADMSG },
		{ "an\x7fon 1\n", -EBADMSG },
		/* 65 bytes of key */
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1\n", -EBADMSG },
	};
	static const char *const good[] = {
		"anon 1",   /* the last newline is optional */
		"anon 1\nfile 2",
		"anon 18446744073709551615\n",
		"io:8:16 5\n", /* any printable key */
		/* 64 bytes of key */
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1\n",
	};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct kv_log l = {};
		expect(cgfs_parse_flat_keyed(bad[i].in, log_kv, &l), bad[i].error, "cgfs_parse_flat_keyed", bad[i].in);
		/* Validated before the first callback: nothing half-applied. */
		assert_int_equal(l.calls, 0);
	}
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		struct kv_log l = {};
		expect(cgfs_parse_flat_keyed(good[i], log_kv, &l), 0, "cgfs_parse_flat_keyed", good[i]);
		assert_true(l.calls >= 1);
	}

	/* A lookup checks the whole file, not only the lines before its key. */
	uint64_t v = SENTINEL;
	assert_int_equal(cgfs_flat_keyed_get("anon 1\nfile 2x\n", "anon", &v), -EBADMSG);
	assert_int_equal(cgfs_flat_keyed_get("anon 1\nfile -2\n", "file", &v), -EBADMSG);
	assert_true(v == SENTINEL);
	/* Duplicates: the first wins. */
	assert_int_equal(cgfs_flat_keyed_get("a 1\na 2\n", "a", &v), 0);
	assert_true(v == 1);
	assert_int_equal(cgfs_parse_flat_keyed("a 1\n", NULL, NULL), -EINVAL);
}

/* ---- pressure --------------------------------------------------------- */

static void assert_psi_line(const struct cgfs_psi_line *l, double a10, double a60, double a300, uint64_t total)
{
	assert_true(l->present);
	/* Exact: the fixed-point parse yields the double nearest the decimal. */
	if (l->avg10 != a10 || l->avg60 != a60 || l->avg300 != a300)
		fail_msg("avgs %.17g %.17g %.17g, expected %.17g %.17g %.17g", l->avg10, l->avg60, l->avg300, a10, a60,
			 a300);
	assert_true(l->total_us == total);
}

static struct cgfs_psi fixture_psi(const char *rel)
{
	_cleanup_free_ char *buf = read_fixture(rel);
	struct cgfs_psi psi;

	memset(&psi, 0xa5, sizeof(psi));
	assert_int_equal(cgfs_parse_pressure(buf, &psi), 0);
	return psi;
}

static void test_pressure_fixtures(void **state)
{
	static const char *const zeros[] = {
		"hybrid-6.18/v2-unified--cpu.pressure",
		"hybrid-6.18/v2-unified--io.pressure",
		"hybrid-6.18/v2-unified--memory.pressure",
		"hybrid-6.18/proc--pressure-memory",
	};
	struct cgfs_psi psi;

	for (size_t i = 0; i < ELEMENTSOF(zeros); i++) {
		psi = fixture_psi(zeros[i]);
		assert_psi_line(&psi.some, 0, 0, 0, 0);
		assert_psi_line(&psi.full, 0, 0, 0, 0);
	}

	psi = fixture_psi("host-6.18/proc--pressure-cpu");
	assert_psi_line(&psi.some, 11.25, 22.28, 15.84, 82181888u);
	assert_psi_line(&psi.full, 0, 0, 0, 0);

	psi = fixture_psi("host-6.18/proc--pressure-io");
	assert_psi_line(&psi.some, 0, 0, 0.04, 3257120u);
	assert_psi_line(&psi.full, 0, 0, 0.04, 3191824u);

	psi = fixture_psi("v2-6.x/cpu.pressure");
	assert_psi_line(&psi.some, 1.52, 0.87, 0.23, 48761235u);
	assert_psi_line(&psi.full, 0.41, 0.19, 0.05, 10238347u);

	psi = fixture_psi("v2-6.x/io.pressure");
	assert_psi_line(&psi.some, 12.07, 8.45, 3.19, 912837465u);
	assert_psi_line(&psi.full, 10.33, 7.01, 2.66, 801827361u);

	/* cpu.pressure before 5.13 has no "full" line. */
	psi = fixture_psi("v2-5.10/cpu.pressure");
	assert_psi_line(&psi.some, 100.00, 64.31, 20.09, UINT64_C(1203948576));
	assert_false(psi.full.present);
	assert_true(psi.full.avg10 == 0 && psi.full.total_us == 0);
}

static void test_pressure_locale(void **state)
{
	/* The parser never consults the locale; prove it where a locale with a
	 * decimal comma is installed. */
	static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8" };
	const char *set = NULL;
	struct cgfs_psi psi;

	for (size_t i = 0; i < ELEMENTSOF(names) && !set; i++)
		set = setlocale(LC_NUMERIC, names[i]);
	if (!set)
		print_message("no locale with a decimal comma installed; checking under C only\n");
	assert_int_equal(cgfs_parse_pressure("some avg10=1.52 avg60=0.87 avg300=0.23 total=1\n", &psi), 0);
	assert_psi_line(&psi.some, 1.52, 0.87, 0.23, 1);
	assert_int_equal(cgfs_parse_pressure("some avg10=1,52 avg60=0,87 avg300=0,23 total=1\n", &psi), -EBADMSG);
	setlocale(LC_NUMERIC, "C");
}

static void test_pressure_malformed(void **state)
{
	static const struct bad bad[] = {
		{ "", -EBADMSG },
		{ "\n", -EBADMSG },
		{ "some\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=1x\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=0 \n", -EBADMSG },
		{ "some avg10=0.0 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=0.000 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=0 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=.00 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=0,00 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=-1.00 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=1e2 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg60=0.00 avg10=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some  avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=0.00  avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=0 extra=1\n", -EBADMSG },
		{ "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		  -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		  -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n", -ERANGE },
		{ "some avg10=184467440737095517.00 avg60=0.00 avg300=0.00 total=0\n", -ERANGE },
		{ "some avg10=99999999999999999999.00 avg60=0.00 avg300=0.00 total=0\n", -ERANGE },
		{ "some avg10=99999999999999999999.0x avg60=0.00 avg300=0.00 total=0\n", -EBADMSG },
	};
	struct cgfs_psi psi;

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		memset(&psi, 0xa5, sizeof(psi));
		expect(cgfs_parse_pressure(bad[i].in, &psi), bad[i].error, "cgfs_parse_pressure", bad[i].in);
		assert_true(psi.some.total_us == UINT64_C(0xa5a5a5a5a5a5a5a5));
	}

	/* Missing final newline, and the largest avg that fits. */
	assert_int_equal(cgfs_parse_pressure("some avg10=0.01 avg60=0.10 avg300=99.99 total=18446744073709551615", &psi),
			 0);
	assert_psi_line(&psi.some, 0.01, 0.10, 99.99, UINT64_MAX);
	assert_false(psi.full.present);
	assert_int_equal(cgfs_parse_pressure("some avg10=184467440737095516.15 avg60=0.00 avg300=0.00 total=0\n", &psi),
			 0);
}

/* ---- cpu.stat, cpuacct.stat ------------------------------------------- */

static struct cgfs_cpu_stat fixture_cpu_stat(const char *rel)
{
	_cleanup_free_ char *buf = read_fixture(rel);
	struct cgfs_cpu_stat st;

	memset(&st, 0xa5, sizeof(st));
	assert_int_equal(cgfs_parse_cpu_stat(buf, &st), 0);
	return st;
}

static void test_cpu_stat_fixtures(void **state)
{
	struct cgfs_cpu_stat st;

	st = fixture_cpu_stat("hybrid-6.18/v2-unified-root--cpu.stat");
	assert_true(st.has_usage && !st.has_throttling);
	assert_true(st.usage_usec == 241132229u && st.user_usec == 155251906u && st.system_usec == 85880323u);
	assert_true(st.nr_periods == 0 && st.nr_throttled == 0 && st.throttled_usec == 0);

	st = fixture_cpu_stat("hybrid-6.18/v2-unified--cpu.stat");
	assert_true(st.has_usage && !st.has_throttling);
	assert_true(st.usage_usec == 0 && st.user_usec == 0 && st.system_usec == 0);

	st = fixture_cpu_stat("v2-6.x/cpu.stat");
	assert_true(st.has_usage && st.has_throttling);
	assert_true(st.usage_usec == UINT64_C(8142795112));
	assert_true(st.user_usec == UINT64_C(6012735544));
	assert_true(st.system_usec == UINT64_C(2130059568));
	assert_true(st.nr_periods == 412873u && st.nr_throttled == 3512u && st.throttled_usec == 51877423u);

	/* v1: throttled_time is in nanoseconds. */
	st = fixture_cpu_stat("v1-6.x/cpu.stat");
	assert_true(!st.has_usage && st.has_throttling);
	assert_true(st.usage_usec == 0 && st.user_usec == 0 && st.system_usec == 0);
	assert_true(st.nr_periods == 2746u && st.nr_throttled == 112u && st.throttled_usec == 7814261u);

	st = fixture_cpu_stat("host-6.18/v1-cpu-root--cpu.stat");
	assert_true(!st.has_usage && st.has_throttling);
	assert_true(st.nr_periods == 0 && st.nr_throttled == 0 && st.throttled_usec == 0);
}

static void test_cpu_stat_malformed(void **state)
{
	static const struct bad bad[] = {
		{ "", -EBADMSG },
		{ "nice_usec 0\n", -EBADMSG },
		{ "usage_usec 1\n", -EBADMSG },
		{ "usage_usec 1\nuser_usec 1\n", -EBADMSG },
		{ "usage_usec 1\nuser_usec 1\nsystem_usec 0\nusage_usec 1\n", -EBADMSG },
		{ "nr_periods 1\nnr_throttled 1\n", -EBADMSG },
		{ "nr_periods 1\nnr_throttled 1\nthrottled_usec 1\nthrottled_time 1000\n", -EBADMSG },
		{ "usage_usec 1\nuser_usec 1\nsystem_usec 0\nnr_periods 1\n", -EBADMSG },
		{ "usage_usec 1\nuser_usec 1\nsystem_usec x\n", -EBADMSG },
		{ "usage_usec 1\nuser_usec 1\nsystem_usec -1\n", -EBADMSG },
		{ "usage_usec 18446744073709551616\nuser_usec 1\nsystem_usec 0\n", -ERANGE },
		{ "usage_usec 1\nuser_usec 1\nsystem_usec", -EBADMSG },
	};
	struct cgfs_cpu_stat st;

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		memset(&st, 0xa5, sizeof(st));
		expect(cgfs_parse_cpu_stat(bad[i].in, &st), bad[i].error, "cgfs_parse_cpu_stat", bad[i].in);
		assert_true(st.usage_usec == UINT64_C(0xa5a5a5a5a5a5a5a5));
	}
	/* Unknown keys are ignored, and the throttled_time of a v1 file rounds down. */
	assert_int_equal(cgfs_parse_cpu_stat("wait_sum 5\nnr_periods 1\nnr_throttled 1\nthrottled_time 1999\n", &st), 0);
	assert_true(st.throttled_usec == 1);
	assert_int_equal(cgfs_parse_cpu_stat("nr_periods 1\nnr_throttled 1\nthrottled_time 18446744073709551615", &st),
			 0);
	assert_true(st.throttled_usec == UINT64_C(18446744073709551));
}

static void test_cpuacct_stat(void **state)
{
	_cleanup_free_ char *buf = read_fixture("hybrid-6.18/v1-cpuacct-root--cpuacct.stat");
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t user = SENTINEL, system = SENTINEL;

	assert_int_equal(cgfs_parse_cpuacct_stat(buf, 100, &user, &system), 0);
	assert_true(user == UINT64_C(158240000) && system == UINT64_C(87520000));
	assert_int_equal(cgfs_parse_cpuacct_stat(buf, 250, &user, &system), 0);
	assert_true(user == UINT64_C(63296000) && system == UINT64_C(35008000));
	assert_true(hz > 0);
	assert_int_equal(cgfs_parse_cpuacct_stat(buf, (unsigned)hz, &user, &system), 0);
	assert_true(user == UINT64_C(15824) * 1000000u / (uint64_t)hz);

	/* A remainder of ticks: 10 ticks at 3 Hz are 3.333333 s. */
	assert_int_equal(cgfs_parse_cpuacct_stat("user 10\nsystem 2\n", 3, &user, &system), 0);
	assert_true(user == 3333333u && system == 666666u);
	/* No intermediate overflow: the largest tick count at 1000 Hz... */
	assert_int_equal(cgfs_parse_cpuacct_stat("user 18446744073709551\nsystem 0\n", 1000, &user, &system), 0);
	assert_true(user == UINT64_C(18446744073709551000));
	/* ...and the result itself too large. */
	user = system = SENTINEL;
	assert_int_equal(cgfs_parse_cpuacct_stat("user 18446744073709552\nsystem 0\n", 1000, &user, &system), -ERANGE);
	assert_int_equal(cgfs_parse_cpuacct_stat("user 18446744073709551615\nsystem 0\n", 100, &user, &system),
			 -ERANGE);
	assert_int_equal(cgfs_parse_cpuacct_stat("user 0\nsystem 18446744073709551615\n", 100, &user, &system),
			 -ERANGE);
	assert_true(user == SENTINEL && system == SENTINEL);

	static const struct bad bad[] = {
		{ "", -EBADMSG },
		{ "user 1\n", -EBADMSG },
		{ "system 1\n", -EBADMSG },
		{ "user 1\nsystem 1\nuser 2\n", -EBADMSG },
		{ "user 1\nsystem -1\n", -EBADMSG },
		{ "user 1\nsystem 1x\n", -EBADMSG },
		{ "user 1\nsystem", -EBADMSG },
		{ "user 18446744073709551616\nsystem 1\n", -ERANGE },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		expect(cgfs_parse_cpuacct_stat(bad[i].in, 100, &user, &system), bad[i].error, "cgfs_parse_cpuacct_stat",
		       bad[i].in);
		assert_true(user == SENTINEL && system == SENTINEL);
	}
	assert_int_equal(cgfs_parse_cpuacct_stat(buf, 0, &user, &system), -EINVAL);
	/* Other keys are ignored. */
	assert_int_equal(cgfs_parse_cpuacct_stat("guest 7\nsystem 1\nuser 2\n", 100, &user, &system), 0);
	assert_true(user == 20000u && system == 10000u);
}

/* ---- cpuacct.usage_percpu --------------------------------------------- */

static void test_percpu_fixture(void **state)
{
	_cleanup_free_ char *buf = read_fixture("hybrid-6.18/v1-cpuacct-root--cpuacct.usage_percpu");
	uint64_t values[4] = { SENTINEL, SENTINEL, SENTINEL, SENTINEL };
	size_t n = 99;

	assert_int_equal(cgfs_parse_percpu(buf, values, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_true(values[0] == UINT64_C(104117828903) && values[1] == UINT64_C(141651775472));
	assert_true(values[2] == SENTINEL);
	/* Together they are cpuacct.usage, read a moment earlier. */
	assert_true(values[0] + values[1] >= UINT64_C(245768883733));

	/* Exactly enough room. */
	assert_int_equal(cgfs_parse_percpu(buf, values, 2, &n), 0);
	assert_int_equal(n, 2);

	/* More CPUs than room: -ERANGE, nothing written, and how many there are. */
	values[0] = SENTINEL;
	n = 99;
	assert_int_equal(cgfs_parse_percpu(buf, values, 1, &n), -ERANGE);
	assert_true(values[0] == SENTINEL);
	assert_int_equal(n, 2);
	n = 99;
	assert_int_equal(cgfs_parse_percpu(buf, NULL, 0, &n), -ERANGE);
	assert_int_equal(n, 2);
	assert_int_equal(cgfs_parse_percpu(buf, NULL, 1, &n), -EINVAL);
}

static void test_percpu_many(void **state)
{
	enum { CPUS = 256 };
	_cleanup_free_ char *buf = malloc(CPUS * 24 + 2);
	uint64_t values[CPUS], small[64];
	size_t n, len = 0;

	assert_non_null(buf);
	for (unsigned i = 0; i < CPUS; i++)
		len += (size_t)sprintf(buf + len, "%llu ", (unsigned long long)i * UINT64_C(1000000007));
	strcpy(buf + len, "\n");

	for (size_t i = 0; i < ELEMENTSOF(small); i++)
		small[i] = SENTINEL;
	assert_int_equal(cgfs_parse_percpu(buf, small, ELEMENTSOF(small), &n), -ERANGE);
	for (size_t i = 0; i < ELEMENTSOF(small); i++)
		assert_true(small[i] == SENTINEL);

	assert_int_equal(cgfs_parse_percpu(buf, values, CPUS, &n), 0);
	assert_int_equal(n, CPUS);
	for (unsigned i = 0; i < CPUS; i++)
		assert_true(values[i] == (uint64_t)i * UINT64_C(1000000007));
}

static void test_percpu_malformed(void **state)
{
	static const struct bad bad[] = {
		{ "", -EBADMSG },
		{ "\n", -EBADMSG },
		{ " \n", -EBADMSG },
		{ " 1 2 \n", -EBADMSG },
		{ "1  2 \n", -EBADMSG },
		{ "1 2  \n", -EBADMSG },
		{ "1 x \n", -EBADMSG },
		{ "1 2x \n", -EBADMSG },
		{ "1 -2 \n", -EBADMSG },
		{ "1\t2\n", -EBADMSG },
		{ "1 2 \n3 \n", -EBADMSG },
		{ "1 2 \n\n", -EBADMSG },
		{ "1 18446744073709551616 \n", -ERANGE },
		{ "1 18446744073709551616x \n", -EBADMSG },
	};
	static const char *const good[] = { "1 2 \n", "1 2\n", "1 2", "1 2 ", "18446744073709551615 0 \n" };
	uint64_t values[4];
	size_t n;

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		n = 99;
		expect(cgfs_parse_percpu(bad[i].in, values, ELEMENTSOF(values), &n), bad[i].error, "cgfs_parse_percpu",
		       bad[i].in);
		assert_int_equal(n, 99);
	}
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		expect(cgfs_parse_percpu(good[i], values, ELEMENTSOF(values), &n), 0, "cgfs_parse_percpu", good[i]);
		assert_int_equal(n, 2);
	}
}

/* ---- memory.numa_stat ------------------------------------------------- */

struct numa_row {
	char key[CGFS_KEY_MAX + 1];
	uint64_t total;
	uint64_t per_node[CGFS_MAX_NODES];
	size_t nr;
};

struct numa_log {
	struct numa_row rows[64];
	size_t calls;
	size_t stop_after;
};

static int log_numa(const char *key, size_t key_len, uint64_t total, const uint64_t *per_node, size_t nr_nodes,
		    void *userdata)
{
	struct numa_log *l = userdata;
	struct numa_row *row;

	assert_true(l->calls < ELEMENTSOF(l->rows));
	assert_true(key_len >= 1 && key_len <= CGFS_KEY_MAX);
	assert_true(nr_nodes >= 1 && nr_nodes <= CGFS_MAX_NODES);
	row = &l->rows[l->calls++];
	memcpy(row->key, key, key_len);
	row->key[key_len] = '\0';
	row->total = total;
	memcpy(row->per_node, per_node, nr_nodes * sizeof(*per_node));
	row->nr = nr_nodes;
	if (l->stop_after && l->calls == l->stop_after)
		return 1;
	return 0;
}

static const struct numa_row *numa_find(const struct numa_log *l, const char *key)
{
	for (size_t i = 0; i < l->calls; i++)
		if (strcmp(l->rows[i].key, key) == 0)
			return &l->rows[i];
	fail_msg("numa_stat lacks %s", key);
	static const struct numa_row none;
	return &none; /* not reached */
}

static void test_numa_stat_v1(void **state)
{
	_cleanup_free_ char *buf = read_fixture("hybrid-6.18/v1-memory--memory.numa_stat");
	static struct numa_log l;
	const struct numa_row *row;

	memset(&l, 0, sizeof(l));
	assert_int_equal(cgfs_parse_numa_stat(buf, log_numa, &l), 0);
	assert_int_equal(l.calls, 8);
	assert_string_equal(l.rows[0].key, "total");
	assert_string_equal(l.rows[7].key, "hierarchical_unevictable");
	row = numa_find(&l, "total");
	assert_true(row->total == 0 && row->nr == 1 && row->per_node[0] == 0);
	row = numa_find(&l, "hierarchical_total");
	assert_true(row->total == 70733u && row->nr == 1 && row->per_node[0] == 70733u);
	row = numa_find(&l, "hierarchical_file");
	assert_true(row->total == 69492u && row->per_node[0] == 69492u);
	row = numa_find(&l, "hierarchical_anon");
	assert_true(row->total == 1241u && row->per_node[0] == 1241u);

	/* Sparse nodes (N0 and N2 have memory, N1 none): slot 1 is 0. */
	free(buf);
	buf = read_fixture("v1-6.x/memory.numa_stat");
	memset(&l, 0, sizeof(l));
	assert_int_equal(cgfs_parse_numa_stat(buf, log_numa, &l), 0);
	assert_int_equal(l.calls, 8);
	row = numa_find(&l, "total");
	assert_true(row->total == 393216u && row->nr == 3);
	assert_true(row->per_node[0] == 262144u && row->per_node[1] == 0 && row->per_node[2] == 131072u);
	row = numa_find(&l, "hierarchical_anon");
	assert_true(row->total == 98304u && row->per_node[0] == 32768u && row->per_node[2] == 65536u);
	/* v1's total is the file's, not a sum. */
	memset(&l, 0, sizeof(l));
	assert_int_equal(cgfs_parse_numa_stat("total=5 N0=1 N1=1\n", log_numa, &l), 0);
	assert_true(l.rows[0].total == 5);
	assert_int_equal(cgfs_parse_numa_stat("total=5 N0=18446744073709551615 N1=1\n", log_numa, &l), 0);
}

/* The v1 memory per node is the hierarchical one, as memory.usage_in_bytes
 * is: a parent whose pages all sit in its children has total=0 but its
 * hierarchical_total (the node sums) equals the LRU pages of its memory.stat. */
static void test_numa_v1_nodes(void **state)
{
	_cleanup_free_ char *buf = read_fixture("host-6.18/v1-memory-parent--memory.numa_stat");
	_cleanup_free_ char *stat = read_fixture("host-6.18/v1-memory-parent--memory.stat");
	uint64_t nodes[CGFS_MAX_NODES];
	size_t n = 99;
	bool hier = false;

	assert_int_equal(cgfs_numa_v1_nodes(buf, nodes, ELEMENTSOF(nodes), &n, &hier), 0);
	assert_true(hier);
	assert_int_equal(n, 1);
	uint64_t lru = kv(stat, "total_inactive_anon") + kv(stat, "total_active_anon") +
		       kv(stat, "total_inactive_file") + kv(stat, "total_active_file") + kv(stat, "total_unevictable");
	assert_true(lru > 0);
	if (nodes[0] * 4096 != lru)
		fail_msg("node 0 holds %llu pages, memory.stat's LRU %llu bytes", (unsigned long long)nodes[0],
			 (unsigned long long)lru);

	/* Sparse nodes: the hierarchical line, not the own one. */
	free(buf);
	buf = read_fixture("v1-6.x/memory.numa_stat");
	assert_int_equal(cgfs_numa_v1_nodes(buf, nodes, ELEMENTSOF(nodes), &n, &hier), 0);
	assert_true(hier && n == 3);
	assert_true(nodes[0] == 327680u && nodes[1] == 0 && nodes[2] == 196608u);

	/* A kernel without hierarchical_* lines: the own total, said so. */
	assert_int_equal(cgfs_numa_v1_nodes("total=5 N0=2 N1=3\nfile=1 N0=1 N1=0\n", nodes, 4, &n, &hier), 0);
	assert_true(!hier && n == 2 && nodes[0] == 2 && nodes[1] == 3 && nodes[2] == 0 && nodes[3] == 0);
	/* Neither line, too many nodes, garbage: nothing written. */
	n = 99;
	assert_int_equal(cgfs_numa_v1_nodes("file=1 N0=1\n", nodes, 4, &n, NULL), -ENOENT);
	assert_int_equal(cgfs_numa_v1_nodes("hierarchical_total=9 N0=1 N5=8\n", nodes, 4, &n, NULL), -ERANGE);
	assert_int_equal(cgfs_numa_v1_nodes("total=x N0=1\n", nodes, 4, &n, NULL), -EBADMSG);
	assert_int_equal(n, 99);
	assert_int_equal(cgfs_numa_v1_nodes(NULL, nodes, 4, &n, NULL), -EINVAL);
}

static void test_numa_stat_v2(void **state)
{
	_cleanup_free_ char *buf = read_fixture("v2-6.x/memory.numa_stat");
	_cleanup_free_ char *stat = read_fixture("v2-6.x/memory.stat");
	static struct numa_log l;
	const struct numa_row *row;

	memset(&l, 0, sizeof(l));
	assert_int_equal(cgfs_parse_numa_stat(buf, log_numa, &l), 0);
	assert_int_equal(l.calls, 27);
	row = numa_find(&l, "anon");
	assert_true(row->nr == 2 && row->per_node[0] == 308064256u && row->per_node[1] == 110559232u);
	assert_true(row->total == 418623488u);
	row = numa_find(&l, "kernel_stack");
	assert_true(row->per_node[0] == 1556480u && row->per_node[1] == 786432u);
	row = numa_find(&l, "workingset_refault_file");
	assert_true(row->total == 13517u && row->per_node[0] == 8009u);
	/* Every per-node row adds up to its memory.stat line. */
	for (size_t i = 0; i < l.calls; i++) {
		row = &l.rows[i];
		assert_int_equal(row->nr, 2);
		if (row->total != kv(stat, row->key))
			fail_msg("%s: numa_stat sums to %llu", row->key, (unsigned long long)row->total);
	}

	/* Sparse: nodes 0 and 3 only. */
	memset(&l, 0, sizeof(l));
	assert_int_equal(cgfs_parse_numa_stat("anon N0=4096 N3=8192\nfile N0=0 N3=1\n", log_numa, &l), 0);
	assert_int_equal(l.calls, 2);
	row = &l.rows[0];
	assert_true(row->nr == 4 && row->total == 12288u);
	assert_true(row->per_node[0] == 4096u && row->per_node[1] == 0 && row->per_node[2] == 0 &&
		    row->per_node[3] == 8192u);
	/* Only node 5 (a machine whose first nodes are memoryless). */
	memset(&l, 0, sizeof(l));
	assert_int_equal(cgfs_parse_numa_stat("anon N5=7", log_numa, &l), 0);
	assert_true(l.rows[0].nr == 6 && l.rows[0].per_node[5] == 7 && l.rows[0].per_node[0] == 0);
	/* The highest node that fits. */
	memset(&l, 0, sizeof(l));
	assert_int_equal(cgfs_parse_numa_stat("anon N63=1\n", log_numa, &l), 0);
	assert_true(l.rows[0].nr == CGFS_MAX_NODES && l.rows[0].per_node[63] == 1);

	/* Stop early. */
	memset(&l, 0, sizeof(l));
	l.stop_after = 2;
	assert_int_equal(cgfs_parse_numa_stat(buf, log_numa, &l), 1);
	assert_int_equal(l.calls, 2);
	assert_string_equal(l.rows[1].key, "file");
}

static void test_numa_stat_malformed(void **state)
{
	static const struct bad bad[] = {
		{ "\n", -EBADMSG },
		{ "anon\n", -EBADMSG },
		{ "anon \n", -EBADMSG },
		{ "anon N0=1 \n", -EBADMSG },
		{ "anon  N0=1\n", -EBADMSG },
		{ "anon N0=\n", -EBADMSG },
		{ "anon N0\n", -EBADMSG },
		{ "anon N=1\n", -EBADMSG },
		{ "anon n0=1\n", -EBADMSG },
		{ "anon N0=1x\n", -EBADMSG },
		{ "anon N0=-1\n", -EBADMSG },
		{ "anon N-1=1\n", -EBADMSG },
		{ "anon N0=1 N0=2\n", -EBADMSG },
		{ "anon N1=1 N0=2\n", -EBADMSG },
		{ "anon N0=1,N1=2\n", -EBADMSG },
		{ "anon N0=1\nfile=1 N0=1\n", -EBADMSG },
		{ "total=1 N0=1\nanon N0=1\n", -EBADMSG },
		{ "total=1\n", -EBADMSG },
		{ "total= N0=1\n", -EBADMSG },
		{ "total=x N0=1\n", -EBADMSG },
		{ "total=1  N0=1\n", -EBADMSG },
		{ "=1 N0=1\n", -EBADMSG },
		{ "anon N0=1\n\nfile N0=1\n", -EBADMSG },
		{ "anon N0=1\nfile N0=", -EBADMSG },
		{ "anon N64=1\n", -ERANGE },
		{ "anon N0=1 N99999999999999999999999=1\n", -ERANGE },
		{ "anon N0=18446744073709551616\n", -ERANGE },
		{ "anon N0=18446744073709551615 N1=1\n", -ERANGE }, /* the v2 sum */
		{ "total=18446744073709551616 N0=1\n", -ERANGE },
		{ "anon N0=18446744073709551616x\n", -EBADMSG },
	};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		static struct numa_log l;
		memset(&l, 0, sizeof(l));
		expect(cgfs_parse_numa_stat(bad[i].in, log_numa, &l), bad[i].error, "cgfs_parse_numa_stat", bad[i].in);
		assert_int_equal(l.calls, 0);
	}
	assert_int_equal(cgfs_parse_numa_stat("", log_numa, &(struct numa_log){}), 0);
}

/* ---- /proc/meminfo ---------------------------------------------------- */

static uint64_t meminfo(const char *buf, const char *key)
{
	uint64_t v = SENTINEL;
	int r = cgfs_meminfo_get(buf, key, &v);

	if (r != 0)
		fail_msg("meminfo %s: %d", key, r);
	return v;
}

static void test_meminfo(void **state)
{
	_cleanup_free_ char *buf = read_fixture("hybrid-6.18/proc--meminfo");
	uint64_t v = SENTINEL;

	assert_true(meminfo(buf, "MemTotal") == UINT64_C(24683656) * 1024);
	assert_true(meminfo(buf, "MemFree") == UINT64_C(23937976) * 1024);
	assert_true(meminfo(buf, "MemAvailable") == UINT64_C(24070372) * 1024);
	assert_true(meminfo(buf, "Buffers") == UINT64_C(12432) * 1024);
	assert_true(meminfo(buf, "Active(anon)") == UINT64_C(5504) * 1024);
	assert_true(meminfo(buf, "Inactive(file)") == UINT64_C(81976) * 1024);
	assert_true(meminfo(buf, "SwapTotal") == 0);
	assert_true(meminfo(buf, "KernelStack") == UINT64_C(17236) * 1024);
	assert_true(meminfo(buf, "SecPageTables") == 0);
	assert_int_equal(cgfs_meminfo_get(buf, "Mem", &v), -ENOENT);
	assert_int_equal(cgfs_meminfo_get(buf, "MemTotalX", &v), -ENOENT);
	assert_int_equal(cgfs_meminfo_get(buf, "Active", &v), 0);
	assert_true(v == UINT64_C(203024) * 1024);
	v = SENTINEL;
	assert_int_equal(cgfs_meminfo_get(buf, "MemTotal:", &v), -EINVAL);
	assert_int_equal(cgfs_meminfo_get(buf, "", &v), -EINVAL);
	assert_true(v == SENTINEL);

	/* Without a unit the value is a count, not kB. */
	static const char huge[] = "MemTotal:       24683656 kB\n"
				   "HugePages_Total:       0\n"
				   "HugePages_Free:       17\n"
				   "Hugepagesize:       2048 kB\n"
				   "Big:            18014398509481983 kB\n"
				   "Count:          18446744073709551615";
	assert_true(meminfo(huge, "HugePages_Total") == 0);
	assert_true(meminfo(huge, "HugePages_Free") == 17);
	assert_true(meminfo(huge, "Hugepagesize") == 2048u * 1024);
	assert_true(meminfo(huge, "Big") == UINT64_C(18446744073709550592));
	assert_true(meminfo(huge, "Count") == UINT64_MAX);

	static const struct bad bad[] = {
		{ "", -ENOENT },
		{ "\n", -EBADMSG },
		{ "X:\n", -EBADMSG },
		{ "X: \n", -EBADMSG },
		{ "X:1 kB\n", -EBADMSG },
		{ "X 1 kB\n", -EBADMSG },
		{ ": 1 kB\n", -EBADMSG },
		{ "X: 1 MB\n", -EBADMSG },
		{ "X: 1 kb\n", -EBADMSG },
		{ "X: 1 kB \n", -EBADMSG },
		{ "X: 1  kB\n", -EBADMSG },
		{ "X: 1kB\n", -EBADMSG },
		{ "X: 1 \n", -EBADMSG },
		{ "X: -1 kB\n", -EBADMSG },
		{ "X: 1x kB\n", -EBADMSG },
		{ "X Y: 1 kB\n", -EBADMSG },
		{ "X: 1 kB\n\nY: 2 kB\n", -EBADMSG },
		{ "X: 1 kB\nY: 2 k", -EBADMSG },
		{ "X: 18014398509481984 kB\n", -ERANGE },
		{ "X: 18446744073709551616\n", -ERANGE },
		{ "X: 18446744073709551616 MB\n", -EBADMSG },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		v = SENTINEL;
		expect(cgfs_meminfo_get(bad[i].in, "X", &v), bad[i].error, "cgfs_meminfo_get", bad[i].in);
		assert_true(v == SENTINEL);
	}
	/* The whole file is checked, also after the key. */
	assert_int_equal(cgfs_meminfo_get("X: 1 kB\nY: z kB\n", "X", &v), -EBADMSG);
}

/* ---- cgroup.events ---------------------------------------------------- */

static void test_events(void **state)
{
	_cleanup_free_ char *host = read_fixture("hybrid-6.18/v2-unified--cgroup.events");
	_cleanup_free_ char *doc = read_fixture("v2-6.x/cgroup.events");
	bool populated = false, frozen = true;

	assert_int_equal(cgfs_parse_events(host, &populated, &frozen), 0);
	assert_true(populated && !frozen);
	assert_int_equal(cgfs_parse_events(doc, &populated, &frozen), 0);
	assert_true(populated && frozen);
	/* Before 5.2 there is no "frozen". */
	assert_int_equal(cgfs_parse_events("populated 0\n", &populated, &frozen), 0);
	assert_true(!populated && !frozen);
	assert_int_equal(cgfs_parse_events("frozen 1\npopulated 1\nfuture 9\n", &populated, &frozen), 0);
	assert_true(populated && frozen);
	assert_int_equal(cgfs_parse_events(doc, NULL, &frozen), 0);
	assert_int_equal(cgfs_parse_events(doc, &populated, NULL), 0);

	static const struct bad bad[] = {
		{ "", -EBADMSG },
		{ "frozen 0\n", -EBADMSG },
		{ "populated 2\n", -EBADMSG },
		{ "populated 1\nfrozen 2\n", -EBADMSG },
		{ "populated 1\npopulated 0\n", -EBADMSG },
		{ "populated 1\nfrozen 0\nfrozen 0\n", -EBADMSG },
		{ "populated yes\n", -EBADMSG },
		{ "populated -1\n", -EBADMSG },
		{ "populated\n", -EBADMSG },
		{ "populated 18446744073709551616\n", -ERANGE },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		populated = frozen = true;
		expect(cgfs_parse_events(bad[i].in, &populated, &frozen), bad[i].error, "cgfs_parse_events", bad[i].in);
		assert_true(populated && frozen);
	}
}

/* ---- cgroup.procs ----------------------------------------------------- */

struct pid_log {
	int pids[16];
	size_t n;
	size_t stop_after;
};

static int log_pid(int pid, void *userdata)
{
	struct pid_log *l = userdata;

	assert_true(l->n < ELEMENTSOF(l->pids));
	l->pids[l->n++] = pid;
	return l->stop_after && l->n == l->stop_after ? -ECANCELED : 0;
}

static void test_pids(void **state)
{
	_cleanup_free_ char *buf = read_fixture("hybrid-6.18/v2-unified--cgroup.procs");
	struct pid_log l = {};

	assert_int_equal(cgfs_parse_pids(buf, log_pid, &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.pids[0], 18311);

	l = (struct pid_log){};
	assert_int_equal(cgfs_parse_pids("1\n22\n333\n2147483647", log_pid, &l), 0);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.pids[2], 333);
	assert_int_equal(l.pids[3], 2147483647);

	l = (struct pid_log){ .stop_after = 2 };
	assert_int_equal(cgfs_parse_pids("1\n22\n333\n", log_pid, &l), -ECANCELED);
	assert_int_equal(l.n, 2);

	l = (struct pid_log){};
	assert_int_equal(cgfs_parse_pids("", log_pid, &l), 0);
	assert_int_equal(l.n, 0);

	static const struct bad bad[] = {
		{ "\n", -EBADMSG },
		{ "0\n", -EBADMSG },
		{ "-1\n", -EBADMSG },
		{ "1 2\n", -EBADMSG },
		{ " 1\n", -EBADMSG },
		{ "1 \n", -EBADMSG },
		{ "1\n\n2\n", -EBADMSG },
		{ "12\n\n", -EBADMSG },
		{ "1\nabc\n", -EBADMSG },
		{ "2147483648\n", -ERANGE },
		{ "1\n18446744073709551616\n", -ERANGE },
		{ "1\n18446744073709551616x\n", -EBADMSG },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		l = (struct pid_log){};
		expect(cgfs_parse_pids(bad[i].in, log_pid, &l), bad[i].error, "cgfs_parse_pids", bad[i].in);
		assert_int_equal(l.n, 0);
	}
}

/* ---- /proc/PID/stat --------------------------------------------------- */

static void test_proc_stat(void **state)
{
	_cleanup_free_ char *weird = read_fixture("host-6.18/proc--PID-stat-weird-comm");
	_cleanup_free_ char *init = read_fixture("host-6.18/proc--1-stat");
	char st = '?';

	/* comm is "x) (y z)": spaces and both parentheses. */
	assert_int_equal(cgfs_parse_proc_stat_state(weird, &st), 0);
	assert_int_equal(st, 'R');
	assert_int_equal(cgfs_parse_proc_stat_state(init, &st), 0);
	assert_int_equal(st, 'S');

	static const struct {
		const char *in;
		char state;
	} good[] = {
		{ "42 (a) b) Z 1 2 3\n", 'Z' },
		{ "42 () S 1\n", 'S' },
		{ "42 ()) D 1\n", 'D' },
		{ "42 ((() I 1\n", 'I' },
		{ "42 (a) T 1", 'T' },
		{ "42 (tracee) t 1", 't' },
		{ "42 (x) R", 'R' },
		{ "42 (x) X\n", 'X' },
		{ "7 (kworker/u8:2-events_unbound) I 2 0 0 0 -1 69238880\n", 'I' },
	};
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		st = '?';
		expect(cgfs_parse_proc_stat_state(good[i].in, &st), 0, "cgfs_parse_proc_stat_state", good[i].in);
		assert_int_equal(st, good[i].state);
	}

	static const struct bad bad[] = {
		{ "", -EBADMSG },
		{ "42", -EBADMSG },
		{ "42 ", -EBADMSG },
		{ "42 (", -EBADMSG },
		{ "42 (x", -EBADMSG },
		{ "42 (x)", -EBADMSG },
		{ "42 (x) ", -EBADMSG },
		{ "42 (x)S 1", -EBADMSG },
		{ "42 (x)  S 1", -EBADMSG },
		{ "42 (x) Q 1", -EBADMSG },
		{ "42 (x) s 1", -EBADMSG },
		{ "42 (x) RR 1", -EBADMSG },
		{ "42 (x) R1", -EBADMSG },
		{ "42 x) R 1", -EBADMSG },
		{ "42  (x) R 1", -EBADMSG },
		{ "(x) R 1", -EBADMSG },
		{ "-1 (x) R 1", -EBADMSG },
		{ "0 (x) R 1", -EBADMSG },
		{ "4x (x) R 1", -EBADMSG },
		{ "2147483648 (x) R 1", -ERANGE },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		st = '?';
		expect(cgfs_parse_proc_stat_state(bad[i].in, &st), bad[i].error, "cgfs_parse_proc_stat_state", bad[i].in);
		assert_int_equal(st, '?');
	}
}

/* ---- misuse ----------------------------------------------------------- */

static int count_kv_stub(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	return 0;
}

static int count_numa_stub(const char *key, size_t key_len, uint64_t total, const uint64_t *per_node, size_t nr_nodes,
			   void *userdata)
{
	return 0;
}

static int count_pid_stub(int pid, void *userdata)
{
	return 0;
}

static void test_einval(void **state)
{
	uint64_t v = SENTINEL, values[2];
	struct cgfs_psi psi;
	struct cgfs_cpu_stat st;
	size_t n;
	char c;

	assert_int_equal(cgfs_parse_u64("1", NULL), -EINVAL);
	assert_int_equal(cgfs_parse_flat_keyed(NULL, count_kv_stub, NULL), -EINVAL);
	assert_int_equal(cgfs_flat_keyed_get(NULL, "a", &v), -EINVAL);
	assert_int_equal(cgfs_flat_keyed_get("a 1", NULL, &v), -EINVAL);
	assert_int_equal(cgfs_flat_keyed_get("a 1", "a", NULL), -EINVAL);
	assert_int_equal(cgfs_parse_pressure(NULL, &psi), -EINVAL);
	assert_int_equal(cgfs_parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=0", NULL), -EINVAL);
	assert_int_equal(cgfs_parse_cpu_stat(NULL, &st), -EINVAL);
	assert_int_equal(cgfs_parse_cpu_stat("usage_usec 1", NULL), -EINVAL);
	assert_int_equal(cgfs_parse_cpuacct_stat("user 1\nsystem 1\n", 100, NULL, &v), -EINVAL);
	assert_int_equal(cgfs_parse_percpu(NULL, values, 2, &n), -EINVAL);
	assert_int_equal(cgfs_parse_percpu("1 2", values, 2, NULL), -EINVAL);
	assert_int_equal(cgfs_parse_numa_stat("anon N0=1", NULL, NULL), -EINVAL);
	assert_int_equal(cgfs_parse_numa_stat(NULL, count_numa_stub, NULL), -EINVAL);
	assert_int_equal(cgfs_meminfo_get(NULL, "X", &v), -EINVAL);
	assert_int_equal(cgfs_meminfo_get("X: 1", NULL, &v), -EINVAL);
	assert_int_equal(cgfs_meminfo_get("X: 1", "X", NULL), -EINVAL);
	assert_int_equal(cgfs_parse_events(NULL, NULL, NULL), -EINVAL);
	assert_int_equal(cgfs_parse_pids(NULL, count_pid_stub, NULL), -EINVAL);
	assert_int_equal(cgfs_parse_pids("1", NULL, NULL), -EINVAL);
	assert_int_equal(cgfs_parse_proc_stat_state(NULL, &c), -EINVAL);
	assert_int_equal(cgfs_parse_proc_stat_state("1 (x) R 1", NULL), -EINVAL);
	assert_true(v == SENTINEL);
}


/* ---- block I/O and memory events -------------------------------------- */

static void test_io_stat(void **state)
{
	_cleanup_free_ char *buf = read_fixture("v2-6.x/io.stat");
	struct cgfs_io_device d[4];
	size_t n = 0;

	assert_int_equal(cgfs_parse_io_stat(buf, d, ELEMENTSOF(d), &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(d[0].major, 8);
	assert_int_equal(d[0].minor, 16);
	assert_int_equal(d[0].present, (1u << _CGFS_IO_FIELD_MAX) - 1);
	assert_true(d[0].v[CGFS_IO_RBYTES] == 1459200 && d[0].v[CGFS_IO_WBYTES] == 314773504);
	assert_true(d[0].v[CGFS_IO_RIOS] == 192 && d[0].v[CGFS_IO_WIOS] == 353);
	assert_true(d[1].major == 8 && d[1].minor == 0);
	assert_true(d[1].v[CGFS_IO_DBYTES] == 50331648 && d[1].v[CGFS_IO_DIOS] == 3021);

	/* other controllers' keys (io.cost, iolatency) are skipped; a key may be missing */
	assert_int_equal(cgfs_parse_io_stat("259:0 rbytes=5 wbytes=6 rios=1 wios=2 cost.vrate=135.04 cost.usage=7 "
					    "depth=max avg_lat=0\n253:3 wbytes=9\n",
					    d, ELEMENTSOF(d), &n),
			 0);
	assert_int_equal(n, 2);
	assert_true(d[0].major == 259 && d[0].v[CGFS_IO_RBYTES] == 5 && d[0].v[CGFS_IO_WIOS] == 2);
	assert_int_equal(d[0].present, 0xf);
	assert_true(d[1].v[CGFS_IO_WBYTES] == 9 && d[1].present == (1u << CGFS_IO_WBYTES));
	assert_int_equal(cgfs_parse_io_stat("", d, ELEMENTSOF(d), &n), 0);
	assert_int_equal(n, 0);

	/* Linux 6.1's root io.stat: devices without I/O as "MAJ:MIN " alone,
	 * left out (read in the VM of tests/vm) */
	_cleanup_free_ char *root61 = read_fixture("vm-6.1/v2-root--io.stat");
	assert_int_equal(cgfs_parse_io_stat(root61, d, ELEMENTSOF(d), &n), 0);
	assert_int_equal(n, 3);
	assert_true(d[0].major == 254 && d[0].minor == 32 && d[0].v[CGFS_IO_RBYTES] == 52655104);
	assert_true(d[2].major == 254 && d[2].minor == 0 && d[2].v[CGFS_IO_WIOS] == 6);
	assert_int_equal(d[1].present, (1u << _CGFS_IO_FIELD_MAX) - 1);
	assert_int_equal(cgfs_parse_io_stat("8:0 \n", d, ELEMENTSOF(d), &n), 0);
	assert_int_equal(n, 0);

	static const struct bad bad[] = {
		{ "8:0\n", -EBADMSG },                    /* no key */
		{ "8:0  \n", -EBADMSG },                  /* two blanks */
		{ "8:0 \t\n", -EBADMSG },
		{ "8:0 rbytes=\n", -EBADMSG },
		{ "8:0 rbytes=1x\n", -EBADMSG },
		{ "8:0 rbytes=-1\n", -EBADMSG },
		{ "8:0 rbytes=1 rbytes=2\n", -EBADMSG },  /* a key twice */
		{ "8:0 rbytes=1\n8:0 wbytes=2\n", -EBADMSG }, /* a device twice */
		{ "8:0 rbytes=1  wbytes=2\n", -EBADMSG },
		{ "8-0 rbytes=1\n", -EBADMSG },
		{ "8: rbytes=1\n", -EBADMSG },
		{ "8:0 cost.vrate=\n", -EBADMSG },
		{ "8:0 =5\n", -EBADMSG },
		{ "8:0 rbytes=1\n\n", -EBADMSG },
		{ "8:0 rbytes=99999999999999999999\n", -ERANGE },
		{ "4294967296:0 rbytes=1\n", -ERANGE },
		{ "1:1 rios=1\n1:2 rios=1\n1:3 rios=1\n1:4 rios=1\n1:5 rios=1\n", -ERANGE }, /* more than max */
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct cgfs_io_device keep = { .major = 77 };
		d[0] = keep;
		n = 12345;
		expect(cgfs_parse_io_stat(bad[i].in, d, ELEMENTSOF(d), &n), bad[i].error, "io_stat", bad[i].in);
		assert_int_equal(n, 12345);
		assert_int_equal(d[0].major, 77);
	}
}

static void test_blkio_rwstat(void **state)
{
	_cleanup_free_ char *bytes = read_fixture("host-6.18/v1-blkio--blkio.throttle.io_service_bytes_recursive");
	_cleanup_free_ char *ios = read_fixture("host-6.18/v1-blkio--blkio.throttle.io_serviced_recursive");
	_cleanup_free_ char *root = read_fixture("host-6.18/v1-blkio-root--blkio.throttle.io_service_bytes_recursive");
	struct cgfs_io_device d[4];
	uint64_t total = SENTINEL;
	size_t n = 0;

	assert_int_equal(cgfs_parse_blkio_rwstat(bytes, false, d, ELEMENTSOF(d), &n, &total), 0);
	assert_int_equal(n, 1);
	assert_true(total == UINT64_C(247833026560));
	assert_true(d[0].major == 254 && d[0].minor == 0);
	assert_true(d[0].v[CGFS_IO_RBYTES] == 8486912 && d[0].v[CGFS_IO_WBYTES] == 1048576);
	assert_true(d[0].v[CGFS_IO_DBYTES] == UINT64_C(247823491072));
	assert_int_equal(d[0].present, (1u << CGFS_IO_RBYTES) | (1u << CGFS_IO_WBYTES) | (1u << CGFS_IO_DBYTES));
	/* the operations file merges into the same device */
	assert_int_equal(cgfs_parse_blkio_rwstat(ios, true, d, ELEMENTSOF(d), &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_true(d[0].v[CGFS_IO_RIOS] == 1815 && d[0].v[CGFS_IO_WIOS] == 16 && d[0].v[CGFS_IO_DIOS] == 30228);
	assert_true(d[0].v[CGFS_IO_RBYTES] == 8486912);
	assert_int_equal(d[0].present, (1u << _CGFS_IO_FIELD_MAX) - 1);

	n = 0;
	assert_int_equal(cgfs_parse_blkio_rwstat(root, false, d, ELEMENTSOF(d), &n, &total), 0);
	assert_true(n == 1 && total == UINT64_C(247862775808) && d[0].v[CGFS_IO_RBYTES] == 10346496);
	/* a cgroup without I/O (or a queue without throttling): "Total 0" only */
	n = 0;
	assert_int_equal(cgfs_parse_blkio_rwstat("Total 0\n", false, d, ELEMENTSOF(d), &n, &total), 0);
	assert_true(n == 0 && total == 0);
	/* pre-4.19: no Discard; two devices */
	n = 0;
	assert_int_equal(cgfs_parse_blkio_rwstat("8:0 Read 1\n8:0 Write 2\n8:0 Sync 3\n8:0 Async 0\n8:0 Total 3\n"
						 "8:16 Read 4\n8:16 Write 0\n8:16 Sync 4\n8:16 Async 0\n8:16 Total 4\n"
						 "Total 7\n",
						 false, d, ELEMENTSOF(d), &n, &total),
			 0);
	assert_true(n == 2 && total == 7 && d[1].minor == 16 && d[1].v[CGFS_IO_RBYTES] == 4);
	assert_int_equal(d[0].present, (1u << CGFS_IO_RBYTES) | (1u << CGFS_IO_WBYTES));

	static const struct bad bad[] = {
		{ "", -EBADMSG },                              /* no Total */
		{ "8:0 Read 1\n", -EBADMSG },
		{ "Total 1\n8:0 Read 1\n", -EBADMSG },         /* Total not last */
		{ "8:0 Read 1\n8:0 Read 2\nTotal 3\n", -EBADMSG },
		{ "8:0 Read 1\n8:16 Read 1\n8:0 Write 1\nTotal 3\n", -EBADMSG }, /* lines apart */
		{ "8:0 Read -1\nTotal 0\n", -EBADMSG },
		{ "8:0 Read 1 \nTotal 0\n", -EBADMSG },
		{ "8:0 Read\nTotal 0\n", -EBADMSG },
		{ "Total\n", -EBADMSG },
		{ "Total 1\nTotal 1\n", -EBADMSG },
		{ "8:0 Read 99999999999999999999\nTotal 0\n", -ERANGE },
		{ "1:1 Read 1\n1:2 Read 1\n1:3 Read 1\n1:4 Read 1\n1:5 Read 1\nTotal 0\n", -ERANGE },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		n = 0;
		d[0].major = 77;
		expect(cgfs_parse_blkio_rwstat(bad[i].in, false, d, ELEMENTSOF(d), &n, NULL), bad[i].error, "blkio_rwstat",
		       bad[i].in);
		assert_int_equal(n, 0);
		assert_int_equal(d[0].major, 77);
	}
}

static void test_memory_events(void **state)
{
	_cleanup_free_ char *buf = read_fixture("v2-6.x/memory.events");
	_cleanup_free_ char *oom = read_fixture("host-6.18/v1-memory-oom--memory.oom_control");
	_cleanup_free_ char *quiet = read_fixture("host-6.18/v1-memory--memory.oom_control");
	struct cgfs_memory_events ev;
	uint64_t kills = SENTINEL;
	bool under = true, has = false;

	assert_int_equal(cgfs_parse_memory_events(buf, &ev), 0);
	assert_int_equal(ev.present, (1u << _CGFS_MEMEV_MAX) - 1);
	assert_true(ev.v[CGFS_MEMEV_LOW] == 0 && ev.v[CGFS_MEMEV_HIGH] == 12 && ev.v[CGFS_MEMEV_MAX] == 98);
	assert_true(ev.v[CGFS_MEMEV_OOM] == 2 && ev.v[CGFS_MEMEV_OOM_KILL] == 1 && ev.v[CGFS_MEMEV_OOM_GROUP_KILL] == 0);
	/* before 5.16: no oom_group_kill */
	assert_int_equal(cgfs_parse_memory_events("low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\n", &ev), 0);
	assert_int_equal(ev.present, (1u << CGFS_MEMEV_OOM_GROUP_KILL) - 1);
	memset(&ev, 0x5a, sizeof(ev));
	assert_int_equal(cgfs_parse_memory_events("max 1\nmax 2\n", &ev), -EBADMSG);
	assert_int_equal(cgfs_parse_memory_events("max -1\n", &ev), -EBADMSG);
	assert_true(ev.v[0] == UINT64_C(0x5a5a5a5a5a5a5a5a));

	assert_true(fixture_u64("host-6.18/v1-memory-oom--memory.failcnt") == 98);
	assert_true(fixture_u64("host-6.18/v1-memory--memory.failcnt") == 0);
	assert_int_equal(cgfs_parse_oom_control(oom, &under, &kills, &has), 0);
	assert_true(!under && has && kills == 1);
	assert_int_equal(cgfs_parse_oom_control(quiet, &under, &kills, &has), 0);
	assert_true(!under && has && kills == 0);
	assert_int_equal(cgfs_parse_oom_control("oom_kill_disable 1\nunder_oom 1\n", &under, &kills, &has), 0);
	assert_true(under && !has && kills == 0);
	kills = SENTINEL;
	assert_int_equal(cgfs_parse_oom_control("oom_kill_disable 0\noom_kill 3\n", &under, &kills, &has), -EBADMSG);
	assert_int_equal(cgfs_parse_oom_control("under_oom 2\n", &under, &kills, &has), -EBADMSG);
	assert_int_equal(cgfs_parse_oom_control("under_oom 0\noom_kill 1\noom_kill 1\n", &under, &kills, &has), -EBADMSG);
	assert_true(kills == SENTINEL);
}

/* ---- every fixture, every prefix, every parser ------------------------- */

static const char *const all_fixtures[] = {
	"hybrid-6.18/proc--meminfo",
	"hybrid-6.18/proc--pressure-memory",
	"hybrid-6.18/v1-cpuacct-root--cpuacct.stat",
	"hybrid-6.18/v1-cpuacct-root--cpuacct.usage",
	"hybrid-6.18/v1-cpuacct-root--cpuacct.usage_all",
	"hybrid-6.18/v1-cpuacct-root--cpuacct.usage_percpu",
	"hybrid-6.18/v1-memory--memory.limit_in_bytes",
	"hybrid-6.18/v1-memory--memory.max_usage_in_bytes",
	"hybrid-6.18/v1-memory--memory.memsw.usage_in_bytes",
	"hybrid-6.18/v1-memory--memory.numa_stat",
	"hybrid-6.18/v1-memory--memory.stat",
	"hybrid-6.18/v1-memory--memory.usage_in_bytes",
	"hybrid-6.18/v2-unified--cgroup.controllers",
	"hybrid-6.18/v2-unified--cgroup.events",
	"hybrid-6.18/v2-unified--cgroup.procs",
	"hybrid-6.18/v2-unified--cgroup.stat",
	"hybrid-6.18/v2-unified--cpu.pressure",
	"hybrid-6.18/v2-unified--cpu.stat",
	"hybrid-6.18/v2-unified--io.pressure",
	"hybrid-6.18/v2-unified--memory.pressure",
	"hybrid-6.18/v2-unified-root--cpu.stat",
	"host-6.18/proc--1-stat",
	"host-6.18/proc--PID-stat-weird-comm",
	"host-6.18/proc--pressure-cpu",
	"host-6.18/proc--pressure-io",
	"host-6.18/v1-cpu-root--cpu.stat",
	"host-6.18/v1-blkio--blkio.throttle.io_service_bytes_recursive",
	"host-6.18/v1-blkio--blkio.throttle.io_serviced_recursive",
	"host-6.18/v1-blkio-root--blkio.throttle.io_service_bytes_recursive",
	"host-6.18/v1-memory--memory.failcnt",
	"host-6.18/v1-memory--memory.oom_control",
	"host-6.18/v1-memory-oom--memory.failcnt",
	"host-6.18/v1-memory-oom--memory.oom_control",
	"v1-6.x/cpu.stat",
	"v1-6.x/memory.numa_stat",
	"v2-5.10/cpu.pressure",
	"v2-6.x/cgroup.events",
	"v2-6.x/cpu.pressure",
	"v2-6.x/cpu.stat",
	"v2-6.x/io.pressure",
	"v2-6.x/io.stat",
	"v2-6.x/memory.events",
	"v2-6.x/memory.current",
	"v2-6.x/memory.high",
	"v2-6.x/memory.max",
	"v2-6.x/memory.numa_stat",
	"v2-6.x/memory.peak",
	"v2-6.x/memory.stat",
	"v2-6.x/memory.swap.current",
	"vm-6.1/v2-root--io.stat",
};

static void check_result(int r, const char *what, const char *rel, size_t len)
{
	if (r == 0 || r == -EBADMSG || r == -ERANGE || r == -ENOENT)
		return;
	fail_msg("%s on %zu bytes of %s: %d", what, len, rel, r);
}

static void run_all_parsers(const char *buf, const char *rel, size_t len)
{
	uint64_t v, values[8];
	struct cgfs_psi psi;
	struct cgfs_cpu_stat st;
	bool b1, b2;
	size_t n;
	char c;

	check_result(cgfs_parse_u64(buf, &v), "u64", rel, len);
	check_result(cgfs_parse_flat_keyed(buf, count_kv_stub, NULL), "flat_keyed", rel, len);
	check_result(cgfs_flat_keyed_get(buf, "total_cache", &v), "flat_keyed_get", rel, len);
	check_result(cgfs_parse_pressure(buf, &psi), "pressure", rel, len);
	check_result(cgfs_parse_cpu_stat(buf, &st), "cpu_stat", rel, len);
	check_result(cgfs_parse_cpuacct_stat(buf, 100, &v, &v), "cpuacct_stat", rel, len);
	check_result(cgfs_parse_percpu(buf, values, ELEMENTSOF(values), &n), "percpu", rel, len);
	check_result(cgfs_parse_numa_stat(buf, count_numa_stub, NULL), "numa_stat", rel, len);
	check_result(cgfs_meminfo_get(buf, "SecPageTables", &v), "meminfo", rel, len);
	check_result(cgfs_parse_events(buf, &b1, &b2), "events", rel, len);
	check_result(cgfs_parse_pids(buf, count_pid_stub, NULL), "pids", rel, len);
	check_result(cgfs_parse_proc_stat_state(buf, &c), "proc_stat", rel, len);
	struct cgfs_io_device devs[4];
	struct cgfs_memory_events ev;
	n = 0;
	check_result(cgfs_parse_io_stat(buf, devs, ELEMENTSOF(devs), &n), "io_stat", rel, len);
	n = 0;
	check_result(cgfs_parse_blkio_rwstat(buf, false, devs, ELEMENTSOF(devs), &n, &v), "blkio_rwstat", rel, len);
	check_result(cgfs_parse_memory_events(buf, &ev), "memory_events", rel, len);
	check_result(cgfs_parse_oom_control(buf, &b1, &v, &b2), "oom_control", rel, len);
}

static void test_all_prefixes(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(all_fixtures); i++) {
		_cleanup_free_ char *whole = read_fixture(all_fixtures[i]);
		size_t len = strlen(whole);

		for (size_t k = 0; k <= len; k++) {
			/* Exactly k bytes and the NUL: ASan sees any read past it. */
			_cleanup_free_ char *buf = malloc(k + 1);
			assert_non_null(buf);
			memcpy(buf, whole, k);
			buf[k] = '\0';
			run_all_parsers(buf, all_fixtures[i], k);
		}
	}
}

/* A file cut at a line boundary, or inside a value, is indistinguishable from
 * a shorter file and passes; cut anywhere else it must fail. */
static void test_truncation(void **state)
{
	_cleanup_free_ char *buf = read_fixture("v2-6.x/memory.stat");
	size_t len = strlen(buf), ok = 0;

	for (size_t k = 0; k < len; k++) {
		char saved = buf[k];
		struct kv_log l = {};
		bool valid;
		int r;

		buf[k] = '\0';
		r = cgfs_parse_flat_keyed(buf, log_kv, &l);
		/* memory.stat's keys hold no digits, so a digit ends a value. */
		valid = k == 0 || buf[k - 1] == '\n' || (buf[k - 1] >= '0' && buf[k - 1] <= '9');
		if (valid != (r == 0))
			fail_msg("cut at %zu: %d", k, r);
		if (r == 0)
			ok++;
		else
			assert_int_equal(r, -EBADMSG);
		buf[k] = saved;
	}
	assert_true(ok >= 2 * 69);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_u64_fixtures),
		cmocka_unit_test(test_u64_edges),
		cmocka_unit_test(test_flat_keyed_v1_memory_stat),
		cmocka_unit_test(test_flat_keyed_v2_memory_stat),
		cmocka_unit_test(test_flat_keyed_cgroup_stat),
		cmocka_unit_test(test_flat_keyed_empty),
		cmocka_unit_test(test_flat_keyed_stop_early),
		cmocka_unit_test(test_flat_keyed_malformed),
		cmocka_unit_test(test_pressure_fixtures),
		cmocka_unit_test(test_pressure_locale),
		cmocka_unit_test(test_pressure_malformed),
		cmocka_unit_test(test_cpu_stat_fixtures),
		cmocka_unit_test(test_cpu_stat_malformed),
		cmocka_unit_test(test_cpuacct_stat),
		cmocka_unit_test(test_percpu_fixture),
		cmocka_unit_test(test_percpu_many),
		cmocka_unit_test(test_percpu_malformed),
		cmocka_unit_test(test_numa_stat_v1),
		cmocka_unit_test(test_numa_stat_v2),
		cmocka_unit_test(test_numa_v1_nodes),
		cmocka_unit_test(test_numa_stat_malformed),
		cmocka_unit_test(test_meminfo),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_pids),
		cmocka_unit_test(test_proc_stat),
		cmocka_unit_test(test_io_stat),
		cmocka_unit_test(test_blkio_rwstat),
		cmocka_unit_test(test_memory_events),
		cmocka_unit_test(test_einval),
		cmocka_unit_test(test_all_prefixes),
		cmocka_unit_test(test_truncation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
