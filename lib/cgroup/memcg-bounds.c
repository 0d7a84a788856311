/* memcg-bounds.c - the kernel's memcg error model (memcg-bounds.h). */
#include "memcg-bounds.h"

#include "basic/util.h"

uint64_t acct_memcg_memory_bound(const struct acct_memcg_batching *b, int nr_descendants)
{
	uint64_t slots = MIN((uint64_t)b->stock_slots, 1 + (uint64_t)MAX(nr_descendants, 0));
	return (uint64_t)b->nr_cpus * (slots * b->charge_batch + 1) * (uint64_t)b->page_size;
}

uint64_t acct_memcg_stat_bound(const struct acct_memcg_batching *b, uint64_t stats_updates)
{
	uint64_t threshold = (uint64_t)(b->nr_online ? b->nr_online : b->nr_cpus) * b->charge_batch;
	if (stats_updates > threshold) /* UINT64_MAX included */
		return ACCT_MEMCG_NO_BOUND;
	return (stats_updates + (uint64_t)b->nr_cpus * b->charge_batch) * (uint64_t)b->page_size;
}

uint64_t acct_memcg_file_stat_bound(const struct acct_memcg_batching *b)
{
	return 2 * (uint64_t)b->nr_cpus * b->charge_batch * (uint64_t)b->page_size;
}
