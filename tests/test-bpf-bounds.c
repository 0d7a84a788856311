/* test-bpf-bounds.c - the inputs of the memcg bounds that the BPF collector
 * detects (lib/bpf/bpf-bounds.c), without a kernel: BTF files written by the
 * test (libbpf's BTF writer) stand in for the kernel's, and the host's CPU
 * counts are the test's (libbpf_num_possible_cpus() and sysconf() wrapped
 * with ld --wrap: tests/meson.build). Where no BTF can be read, the largest
 * stock any known kernel keeps per CPU (7 memcgs, Linux 6.16+) and the
 * charge batch of 64 pages, so that acct_memcg_memory_bound() is never too
 * small; where BTF has memcg_stock_pcp, the length of its nr_pages[] (one
 * where it is a single counter or the struct is missing); the CPUs as given,
 * else the possible CPUs, else one. Any user can run it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf-bounds.h"
#include "memcg-bounds.h"

/* ---- the host's CPUs, as the test says ---------------------------------------- */

static bool fake_cpus;
static int fake_possible;
static long fake_online, fake_conf;

int __real_libbpf_num_possible_cpus(void);
int __wrap_libbpf_num_possible_cpus(void);
int __wrap_libbpf_num_possible_cpus(void)
{
	return fake_cpus ? fake_possible : __real_libbpf_num_possible_cpus();
}

long __real_sysconf(int name);
long __wrap_sysconf(int name);
long __wrap_sysconf(int name)
{
	if (fake_cpus && name == _SC_NPROCESSORS_ONLN)
		return fake_online;
	if (fake_cpus && name == _SC_NPROCESSORS_CONF)
		return fake_conf;
	return __real_sysconf(name);
}

static int fake_off(void **state)
{
	(void)state;
	fake_cpus = false;
	return 0;
}

/* ---- BTF files ---------------------------------------------------------------- */

/* A member of the struct a test writes: nr_pages or a neighbour, an
 * unsigned int array of `n` (n >= 0) or a single unsigned int (n < 0). */
struct member {
	const char *name;
	int n;
};

static void add_struct(struct btf *b, const char *name, int size, const struct member *m, size_t nm, const int *types,
		       int id)
{
	assert_int_equal(btf__add_struct(b, name, size), id);
	int bits = 0;
	for (size_t i = 0; i < nm; i++) {
		assert_int_equal(btf__add_field(b, m[i].name, types[i], bits, 0), 0);
		bits += 32 * (m[i].n < 0 ? 1 : m[i].n);
	}
}

/* Writes a BTF file with `struct name { members }`, the struct as the first
 * type (its member types after it) or the last (so that its members are
 * followed by the string section), and returns its path, which the caller
 * frees and removes. */
static char *write_btf(const char *name, const struct member *m, size_t nm, bool struct_first)
{
	struct btf *b = btf__new_empty();
	assert_non_null(b);
	/* type ids: the struct first is 1, its unsigned int 2, arrays 3...;
	 * else the unsigned int is 1, arrays 2..., the struct last */
	int u32 = struct_first ? 2 : 1, next = u32 + 1, size = 0;
	int types[16];
	assert_true(nm <= 16);
	for (size_t i = 0; i < nm; i++) {
		types[i] = m[i].n < 0 ? u32 : next++;
		size += 4 * (m[i].n < 0 ? 1 : m[i].n);
	}
	/* fields go to the type added last: the struct's right after it (a
	 * struct first refers to types added later) */
	if (struct_first)
		add_struct(b, name, size, m, nm, types, 1);
	assert_int_equal(btf__add_int(b, "unsigned int", 4, 0), u32);
	for (size_t i = 0; i < nm; i++)
		if (m[i].n >= 0)
			assert_int_equal(btf__add_array(b, u32, u32, m[i].n), types[i]);
	if (!struct_first)
		add_struct(b, name, size, m, nm, types, next);
	uint32_t len;
	const void *raw = btf__raw_data(b, &len);
	assert_non_null(raw);

	const char *dir = getenv("TMPDIR");
	char *path;
	assert_true(asprintf(&path, "%s/acctd-test-btf-XXXXXX", dir && *dir ? dir : "/tmp") > 0);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, raw, len), (ssize_t)len);
	close(fd);
	btf__free(b);
	return path;
}

/* The stock slots detected from such a file, for 2 CPUs. */
static unsigned slots(const char *name, const struct member *m, size_t nm, bool struct_first)
{
	char *path = write_btf(name, m, nm, struct_first);
	struct acct_memcg_batching b;
	acct_bpf_memcg_batching_detect(&b, 2, path);
	unlink(path);
	free(path);
	assert_int_equal(b.nr_cpus, 2);
	assert_int_equal(b.charge_batch, 64);
	assert_int_equal(b.page_size, sysconf(_SC_PAGESIZE));
	assert_int_equal(b.nr_online, sysconf(_SC_NPROCESSORS_ONLN));
	return b.stock_slots;
}

#define SLOTS(name, first, ...)                                                                        \
	slots(name, (const struct member[]){ __VA_ARGS__ }, sizeof((const struct member[]){ __VA_ARGS__ }) / \
							    sizeof(struct member),                             \
	      first)

/* ---- tests -------------------------------------------------------------------- */

static void test_without_btf(void **state)
{
	(void)state;
	struct acct_memcg_batching b;
	acct_bpf_memcg_batching_detect(&b, 4, "/nonexistent/acctd-test-btf");
	assert_int_equal(b.nr_cpus, 4);
	assert_int_equal(b.charge_batch, 64);
	assert_int_equal(b.stock_slots, 7);
	assert_int_equal(b.page_size, sysconf(_SC_PAGESIZE));
	assert_true(b.nr_online >= 1);
	/* a memcg with 6 or more descendants: the whole stock of every CPU */
	assert_int_equal(acct_memcg_memory_bound(&b, 6), 4 * (7 * 64 + 1) * (uint64_t)b.page_size);
	assert_int_equal(acct_memcg_memory_bound(&b, 100), acct_memcg_memory_bound(&b, 6));

	/* the same from no parsed BTF */
	struct acct_memcg_batching none;
	acct_bpf_memcg_batching_from_btf(&none, 4, NULL);
	assert_memory_equal(&none, &b, sizeof(b));
}

/* Linux 6.16+: the stock caches as many memcgs as nr_pages[] has slots,
 * wherever the struct and the member are. */
static void test_stock_array(void **state)
{
	(void)state;
	for (int first = 0; first < 2; first++) {
		assert_int_equal(SLOTS("memcg_stock_pcp", first, { "cached", 7 }, { "nr_pages", 7 }, { "after", -1 }), 7);
		assert_int_equal(SLOTS("memcg_stock_pcp", first, { "cached", 7 }, { "nr_pages", 3 }), 3);
		assert_int_equal(SLOTS("memcg_stock_pcp", first, { "nr_pages", 3 }, { "cached", 5 }), 3);
		/* a neighbour whose name sorts just after nr_pages is not it */
		assert_int_equal(SLOTS("memcg_stock_pcp", first, { "nr_pages", 3 }, { "nr_paget", 5 }), 3);
		/* an array of no slots still caches one */
		assert_int_equal(SLOTS("memcg_stock_pcp", first, { "cached", 7 }, { "nr_pages", 0 }), 1);
	}
	/* the bound follows: 2 CPUs of 3 slots of 64 pages, and a page each */
	char *path = write_btf("memcg_stock_pcp", (const struct member[]){ { "nr_pages", 3 } }, 1, false);
	struct acct_memcg_batching b;
	acct_bpf_memcg_batching_detect(&b, 2, path);
	unlink(path);
	free(path);
	assert_int_equal(acct_memcg_memory_bound(&b, 100), 2 * (3 * 64 + 1) * (uint64_t)b.page_size);
}

/* Before 6.16: one counter, one memcg a CPU; a BTF without the struct is
 * taken as such a kernel too (it has BTF, so it is not an unknown one). */
static void test_stock_counter(void **state)
{
	(void)state;
	for (int first = 0; first < 2; first++) {
		assert_int_equal(SLOTS("memcg_stock_pcp", first, { "cached", 7 }, { "nr_pages", -1 }), 1);
		assert_int_equal(SLOTS("memcg_stock_pcp", first, { "nr_pages", -1 }, { "cached", -1 }), 1);
		assert_int_equal(SLOTS("obj_stock_pcp", first, { "cached", 7 }, { "nr_pages", 7 }), 1);
	}
}

/* nr_cpus 0: the possible CPUs, as libbpf counts them (the per-CPU stocks
 * exist for every possible CPU, online or not); where that count fails, the
 * CPUs the C library says are configured; one where neither can tell. The
 * online CPUs are the host's whatever nr_cpus is, 0 (taken as nr_cpus: the
 * larger threshold) where sysconf() cannot tell. */
static void test_cpus(void **state)
{
	(void)state;
	struct acct_memcg_batching b;
	fake_cpus = true;
	static const struct {
		int possible;
		long online, conf;
		unsigned nr_cpus, want_cpus, want_online;
	} cases[] = {
		{ 6, 3, 5, 0, 6, 3 },        { 6, 3, 5, 4, 4, 3 },  { 1, 1, 1, 0, 1, 1 },
		{ -ENOENT, -1, 12, 0, 12, 0 }, { 0, 0, -1, 0, 1, 0 }, { -ENOENT, -1, 12, 8, 8, 0 },
		/* one possible CPU is the count, whatever the C library says; a
		 * count of 0 from libbpf, or configured CPUs of 0, is no count */
		{ 1, 1, 12, 0, 1, 1 },       { 0, 0, 12, 0, 12, 0 }, { -ENOENT, -1, 0, 0, 1, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_possible = cases[i].possible;
		fake_online = cases[i].online;
		fake_conf = cases[i].conf;
		acct_bpf_memcg_batching_detect(&b, cases[i].nr_cpus, "/nonexistent/acctd-test-btf");
		assert_int_equal(b.nr_cpus, cases[i].want_cpus);
		assert_int_equal(b.nr_online, cases[i].want_online);
		assert_int_equal(b.stock_slots, 7);
	}
	fake_cpus = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_without_btf),
		cmocka_unit_test(test_stock_array),
		cmocka_unit_test(test_stock_counter),
		cmocka_unit_test_teardown(test_cpus, fake_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
