/* test-bpf-bounds.c - the inputs of the memcg bounds that the BPF collector
 * detects (lib/bpf/bpf-collector.c, acct_bpf_memcg_batching_detect()),
 * without a kernel: where no BTF can be read, the largest stock any known
 * kernel keeps per CPU (7 memcgs, Linux 6.16+) and the charge batch of 64
 * pages, so that acct_memcg_memory_bound() is never too small; the CPUs as
 * given. Any user can run it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf-collector.h"
#include "memcg-bounds.h"

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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_without_btf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
