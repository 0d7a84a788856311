/* test-fresh.c - unit tests of fresh.h on temporary cgroup-like trees (the
 * files path; the BPF path needs the kernel: tests/integration/test_fresh.py):
 * which file per layout and hierarchies, units and bounds, a cgroup that is
 * gone against one that lacks a file, the root, and garbage. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fresh.h"
#include "test-tree.h"
#include "util.h"

#define Q(q) (UINT64_C(1) << (q))
#define CPU_TIMES (Q(ACCT_Q_CPU_USAGE) | Q(ACCT_Q_CPU_USER) | Q(ACCT_Q_CPU_SYSTEM))
#define H(h) (1u << (h))

struct fixture {
	char *base;
	struct acct_hierarchies L;
	struct acct_memcg_batching b;
	struct acct_fresh_options o;
};

static const char cpu_stat_v2[] = "usage_usec 5000123\nuser_usec 3000100\nsystem_usec 2000023\n"
				   "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n";

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->base = make_tmpdir("test-fresh");
	make_hybrid(f->base);
	f->L.mode = ACCT_CGROUP_HYBRID;
	f->L.root = f->base;
	f->L.mount[ACCT_HIER_UNIFIED] = xjoin(f->base, "unified");
	f->L.mount[ACCT_HIER_MEMORY] = xjoin(f->base, "memory");
	f->L.mount[ACCT_HIER_CPUACCT] = xjoin(f->base, "cpu,cpuacct");
	f->b = (struct acct_memcg_batching){ .nr_cpus = 4, .charge_batch = 64, .stock_slots = 1, .page_size = 4096 };
	f->o = (struct acct_fresh_options){ .layout = &f->L, .batching = &f->b, .user_hz = 100 };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rm_rf(f->base);
	free(f->base);
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		free(f->L.mount[h]);
	free(f);
	return 0;
}

/* v2 memory: memory.current and the unified cpu.stat, exact CPU, the memory
 * bound of a file reading (every stock slot). */
static void test_v2(void **state)
{
	struct fixture *f = *state;
	struct acct_fresh_reading rd;
	f->L.v2_memory = true;
	xmkdir(f->base, "unified/app.slice");
	xmkdir(f->base, "unified/app.slice/x.service");
	xwrite(f->base, "unified/app.slice/x.service/memory.current", "104857600\n");
	xwrite(f->base, "unified/app.slice/x.service/cpu.stat", cpu_stat_v2);

	assert_int_equal(acct_fresh_read(&f->o, "/app.slice/x.service", H(ACCT_HIER_UNIFIED), NULL, &rd), 0);
	assert_int_equal(rd.have, Q(ACCT_Q_MEMORY) | CPU_TIMES);
	assert_int_equal(rd.value[ACCT_Q_MEMORY], 104857600);
	assert_int_equal(rd.bound[ACCT_Q_MEMORY], acct_memcg_memory_bound(&f->b, INT_MAX));
	assert_true(rd.bound[ACCT_Q_MEMORY] > 0);
	assert_string_equal(rd.memory_source, "memory.current");
	assert_int_equal(rd.value[ACCT_Q_CPU_USAGE], 5000123);
	assert_int_equal(rd.value[ACCT_Q_CPU_USER], 3000100);
	assert_int_equal(rd.value[ACCT_Q_CPU_SYSTEM], 2000023);
	assert_int_equal(rd.bound[ACCT_Q_CPU_USAGE], 0);
	assert_null(rd.not_read);
	assert_true(rd.read_us > 0);
}

/* v1 memory and cpuacct on a hybrid host: memory.usage_in_bytes, cpuacct.usage
 * in ns (usec, rounded down) and cpuacct.stat in ticks (a tick's bound); the
 * unified cpu.stat is not read for a cgroup in cpuacct, as the sampler. */
static void test_v1(void **state)
{
	struct fixture *f = *state;
	struct acct_fresh_reading rd;
	f->L.v2_memory = false;
	xmkdir(f->base, "memory/bpf-fresh-a");
	xmkdir(f->base, "cpu,cpuacct/bpf-fresh-a");
	xmkdir(f->base, "unified/bpf-fresh-a");
	xwrite(f->base, "memory/bpf-fresh-a/memory.usage_in_bytes", "209715200\n");
	xwrite(f->base, "cpu,cpuacct/bpf-fresh-a/cpuacct.usage", "7000000999\n");
	xwrite(f->base, "cpu,cpuacct/bpf-fresh-a/cpuacct.stat", "user 450\nsystem 230\n");
	xwrite(f->base, "unified/bpf-fresh-a/cpu.stat", cpu_stat_v2);

	uint32_t h = H(ACCT_HIER_UNIFIED) | H(ACCT_HIER_MEMORY) | H(ACCT_HIER_CPUACCT) | H(ACCT_HIER_CPU);
	assert_int_equal(acct_fresh_read(&f->o, "/bpf-fresh-a", h, NULL, &rd), 0);
	assert_int_equal(rd.have, Q(ACCT_Q_MEMORY) | CPU_TIMES);
	assert_int_equal(rd.value[ACCT_Q_MEMORY], 209715200);
	assert_string_equal(rd.memory_source, "memory.usage_in_bytes");
	assert_int_equal(rd.value[ACCT_Q_CPU_USAGE], 7000000);
	assert_int_equal(rd.bound[ACCT_Q_CPU_USAGE], 0);
	assert_int_equal(rd.value[ACCT_Q_CPU_USER], 4500000);
	assert_int_equal(rd.value[ACCT_Q_CPU_SYSTEM], 2300000);
	assert_int_equal(rd.bound[ACCT_Q_CPU_USER], 10000);
	assert_int_equal(rd.bound[ACCT_Q_CPU_SYSTEM], 10000);

	/* Only in the unified tree (no v2 memory): CPU from cpu.stat, no memory. */
	assert_int_equal(acct_fresh_read(&f->o, "/bpf-fresh-a", H(ACCT_HIER_UNIFIED), NULL, &rd), 0);
	assert_int_equal(rd.have, CPU_TIMES);
	assert_int_equal(rd.value[ACCT_Q_CPU_USAGE], 5000123);
	assert_null(rd.memory_source);
}

/* A file the cgroup lacks is left out; a cgroup whose directory is gone is
 * -ENOENT (the caller's no-such-cgroup), not an empty reading. */
static void test_absent_and_gone(void **state)
{
	struct fixture *f = *state;
	struct acct_fresh_reading rd;
	f->L.v2_memory = true;
	xmkdir(f->base, "unified/nomem");
	xwrite(f->base, "unified/nomem/cpu.stat", cpu_stat_v2);
	assert_int_equal(acct_fresh_read(&f->o, "/nomem", H(ACCT_HIER_UNIFIED), NULL, &rd), 0);
	assert_int_equal(rd.have, CPU_TIMES);

	xrm_rf(f->base, "unified/nomem");
	assert_int_equal(acct_fresh_read(&f->o, "/nomem", H(ACCT_HIER_UNIFIED), NULL, &rd), -ENOENT);
	assert_int_equal(rd.have, 0);

	/* gone from the memory hierarchy while still in cpuacct */
	f->L.v2_memory = false;
	xmkdir(f->base, "cpu,cpuacct/half");
	xwrite(f->base, "cpu,cpuacct/half/cpuacct.usage", "1000\n");
	assert_int_equal(acct_fresh_read(&f->o, "/half", H(ACCT_HIER_MEMORY) | H(ACCT_HIER_CPUACCT), NULL, &rd), -ENOENT);
}

/* The path made again (another directory, another inode) since the ledger
 * recorded the cgroup: what is there now is not its values, and the read
 * says the cgroup is gone; with the inodes it knows, or none, the read is
 * as before. Without the check the old cgroup was served the new one's
 * memory and CPU time. */
static void test_made_again(void **state)
{
	struct fixture *f = *state;
	struct acct_fresh_reading rd;
	f->L.v2_memory = true;
	xmkdir(f->base, "unified/x");
	xwrite(f->base, "unified/x/memory.current", "4096\n");
	xwrite(f->base, "unified/x/cpu.stat", cpu_stat_v2);
	uint64_t inodes[_ACCT_HIER_MAX] = { 0 };
	inodes[ACCT_HIER_UNIFIED] = xinode(f->base, "unified/x");
	assert_int_equal(acct_fresh_read(&f->o, "/x", H(ACCT_HIER_UNIFIED), inodes, &rd), 0);
	assert_int_equal(rd.have, Q(ACCT_Q_MEMORY) | CPU_TIMES);
	assert_int_equal(rd.value[ACCT_Q_MEMORY], 4096);

	xremake(f->base, "unified/x");
	xwrite(f->base, "unified/x/memory.current", "8192\n");
	xwrite(f->base, "unified/x/cpu.stat", cpu_stat_v2);
	assert_int_equal(acct_fresh_read(&f->o, "/x", H(ACCT_HIER_UNIFIED), inodes, &rd), -ENOENT);
	assert_int_equal(rd.have, 0);
	/* v1 CPU time, the same */
	f->L.v2_memory = false;
	assert_int_equal(acct_fresh_read(&f->o, "/x", H(ACCT_HIER_UNIFIED), inodes, &rd), -ENOENT);
	inodes[ACCT_HIER_UNIFIED] = 0; /* not known: read */
	assert_int_equal(acct_fresh_read(&f->o, "/x", H(ACCT_HIER_UNIFIED), inodes, &rd), 0);
	assert_int_equal(rd.have, CPU_TIMES);
	xmkdir(f->base, "cpu,cpuacct/y");
	xwrite(f->base, "cpu,cpuacct/y/cpuacct.usage", "1000\n");
	uint64_t yino = xinode(f->base, "cpu,cpuacct/y");
	inodes[ACCT_HIER_CPUACCT] = yino + 1; /* another cgroup's */
	assert_int_equal(acct_fresh_read(&f->o, "/y", H(ACCT_HIER_CPUACCT), inodes, &rd), -ENOENT);
	inodes[ACCT_HIER_CPUACCT] = yino;
	assert_int_equal(acct_fresh_read(&f->o, "/y", H(ACCT_HIER_CPUACCT), inodes, &rd), 0);
	assert_int_equal(rd.value[ACCT_Q_CPU_USAGE], 1);
	xrm_rf(f->base, "unified/x.old");
}

/* The root is not read: its memory is defined from its children. */
static void test_root(void **state)
{
	struct fixture *f = *state;
	struct acct_fresh_reading rd;
	f->L.v2_memory = true;
	xwrite(f->base, "unified/memory.current", "1\n");
	assert_int_equal(acct_fresh_read(&f->o, "/", H(ACCT_HIER_UNIFIED), NULL, &rd), 0);
	assert_int_equal(rd.have, 0);
	assert_non_null(rd.not_read);
	assert_non_null(strstr(rd.not_read, "root"));
}

/* Garbage is an error, not a value; and the arguments are checked. */
static void test_garbage(void **state)
{
	struct fixture *f = *state;
	struct acct_fresh_reading rd;
	f->L.v2_memory = true;
	xmkdir(f->base, "unified/bad");
	xwrite(f->base, "unified/bad/memory.current", "12 34\n");
	assert_int_equal(acct_fresh_read(&f->o, "/bad", H(ACCT_HIER_UNIFIED), NULL, &rd), -EBADMSG);
	xwrite(f->base, "unified/bad/memory.current", "12\n");
	xwrite(f->base, "unified/bad/cpu.stat", "usage_usec 5\n");
	assert_int_equal(acct_fresh_read(&f->o, "/bad", H(ACCT_HIER_UNIFIED), NULL, &rd), -EBADMSG);
	assert_int_equal(acct_fresh_read(&f->o, "bad", H(ACCT_HIER_UNIFIED), NULL, &rd), -EINVAL);
	assert_int_equal(acct_fresh_read(NULL, "/bad", H(ACCT_HIER_UNIFIED), NULL, &rd), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absent_and_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_made_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
