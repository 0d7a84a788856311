/* memcg-bounds.h - how far the kernel's own memcg figures may be from the
 * truth: page counters hold pages pre-charged into per-CPU charge stocks, and
 * memcg stats miss the per-CPU updates not flushed yet. Both collectors (BPF
 * records and cgroupfs files) serve these bounds with their values
 * (docs/counters.md, "Bounds"). Pure arithmetic over the kernel's batching,
 * which lib/bpf/bpf-bounds.c detects from the kernel's BTF (acct_bpf_memcg_batching_detect()). */
#pragma once

#include <stdint.h>

/* The kernel's batching, from which bounds are derived. */
struct acct_memcg_batching {
	unsigned nr_cpus;      /* possible CPUs */
	unsigned nr_online;    /* online CPUs at detection: the kernel's stat flush threshold counts them
				* (0: taken as nr_cpus) */
	unsigned charge_batch; /* MEMCG_CHARGE_BATCH, pages (64 since Linux 6.1, 32 before: 64 is used) */
	unsigned stock_slots;  /* memcgs one CPU's charge stock caches (memcg_stock_pcp.nr_pages[] in BTF; 1 before 6.16) */
	long page_size;
};

/* Bytes by which a memory page counter (memory.current, usage_in_bytes, memsw)
 * may exceed what the cgroup's pages use: the pages sitting pre-charged in
 * per-CPU charge stocks, at most charge_batch per stock slot per CPU, each
 * slot caching one memcg of the subtree (so min(stock_slots, 1 + descendants)
 * slots count), plus one page per CPU of byte-granular object stock. */
uint64_t acct_memcg_memory_bound(const struct acct_memcg_batching *b, int nr_descendants);
/* acct_memcg_stat_bound()'s answer where the kernel gives no bound. */
#define ACCT_MEMCG_NO_BOUND UINT64_MAX
/* Bytes (in the unit's terms: multiply pages by the page size) by which a
 * flushed memcg stat of a record may differ from the truth: the updates not
 * flushed yet, stats_updates (pages) plus less than charge_batch per CPU still
 * in per-CPU counters. Only while the memcg is below the kernel's flush
 * threshold (more than charge_batch x online CPUs pending) does stats_updates
 * count them: above it the kernel stops counting (memcg_rstat_updated(), ever
 * since Linux 6.8 added the count: "already flushable") and nothing in the
 * record says how far the stats lag until some reader or the 2-second
 * periodic work flushes them. Returns ACCT_MEMCG_NO_BOUND then, and for stats_updates UINT64_MAX (a kernel
 * that does not count them). A CPU taken offline after detection lowers the
 * kernel's threshold below nr_online's: a restart of acctd picks it up. */
uint64_t acct_memcg_stat_bound(const struct acct_memcg_batching *b, uint64_t stats_updates);
/* The same for a memory.stat or memory.numa_stat file read just now: reading
 * it flushed the memcg's subtree if it was over the threshold, so at most the
 * threshold plus the per-CPU remainders, 2 x charge_batch x CPUs pages. */
uint64_t acct_memcg_file_stat_bound(const struct acct_memcg_batching *b);
