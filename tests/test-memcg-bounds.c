/* test-memcg-bounds.c - the kernel's memcg error model (lib/cgroup/memcg-bounds.h):
 * the charge stocks' bound on a page counter, the unflushed updates' bound on a
 * flushed stat (and where the kernel gives none), a stat file read just now.
 * Pure arithmetic: no cgroups needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "memcg-bounds.h"

static void test_memory_bound(void **state)
{
	(void)state;
	const struct acct_memcg_batching b = { .nr_cpus = 2, .charge_batch = 64, .stock_slots = 7, .page_size = 4096 };
	assert_true(acct_memcg_memory_bound(&b, 0) == 2u * (64 + 1) * 4096);
	assert_true(acct_memcg_memory_bound(&b, -5) == 2u * (64 + 1) * 4096);
	/* one slot per memcg of the subtree, up to the stock's slots */
	assert_true(acct_memcg_memory_bound(&b, 3) == 2u * (4 * 64 + 1) * 4096);
	assert_true(acct_memcg_memory_bound(&b, 6) == 2u * (7 * 64 + 1) * 4096);
	assert_true(acct_memcg_memory_bound(&b, 100000) == 2u * (7 * 64 + 1) * 4096);
	const struct acct_memcg_batching old = { .nr_cpus = 64, .charge_batch = 64, .stock_slots = 1, .page_size = 65536 };
	assert_true(acct_memcg_memory_bound(&old, 1000) == UINT64_C(64) * (64 + 1) * 65536);
}

static void test_stat_bound(void **state)
{
	(void)state;
	const struct acct_memcg_batching b = { .nr_cpus = 2, .charge_batch = 64, .stock_slots = 7, .page_size = 4096 };
	assert_true(acct_memcg_stat_bound(&b, 0) == 128u * 4096);
	assert_true(acct_memcg_stat_bound(&b, 10) == (10u + 128) * 4096);
	/* up to the kernel's flush threshold, charge_batch x online CPUs, the
	 * kernel counts them; past it, it stops counting: no bound */
	assert_true(acct_memcg_stat_bound(&b, 128) == (128u + 128) * 4096);
	assert_true(acct_memcg_stat_bound(&b, 129) == ACCT_MEMCG_NO_BOUND);
	assert_true(acct_memcg_stat_bound(&b, UINT64_C(1) << 50) == ACCT_MEMCG_NO_BOUND);
	/* a kernel that does not count them */
	assert_true(acct_memcg_stat_bound(&b, UINT64_MAX) == ACCT_MEMCG_NO_BOUND);
	/* the threshold counts online CPUs, the per-CPU remainders possible ones */
	const struct acct_memcg_batching few = { .nr_cpus = 8, .nr_online = 2, .charge_batch = 64, .page_size = 4096 };
	assert_true(acct_memcg_stat_bound(&few, 128) == (128u + 512) * 4096);
	assert_true(acct_memcg_stat_bound(&few, 129) == ACCT_MEMCG_NO_BOUND);
	/* a file read just now flushed past the threshold */
	assert_true(acct_memcg_file_stat_bound(&b) == (128u + 128) * 4096);
	assert_true(acct_memcg_file_stat_bound(&few) == 2u * 512 * 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_bound),
		cmocka_unit_test(test_stat_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
