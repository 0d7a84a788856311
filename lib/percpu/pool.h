/* pool.h - bulk-allocated, node-local memory for sharded counters.
 *
 * A sharded counter needs one 8-byte shard word per CPU, one node sum per NUMA
 * node, and some bookkeeping. Allocating these per counter would put the system
 * allocator on the upgrade path and scatter memory over nodes, so the pool hands
 * out *slots* from blocks of ACCT_POOL_BLOCK_SLOTS:
 *
 *   shard region: nr_shards pages; page k is CPU k's, bound to k's node, and
 *                 holds the shard words of the block's 512 slots. One counter's
 *                 words on consecutive CPUs are ACCT_SHARD_STRIDE bytes apart,
 *                 so the hot path computes `shard0 + cpu * 4096`. Words of
 *                 different counters share a CPU's page, which is fine: only
 *                 that CPU writes them (the kernel's percpu allocator does this).
 *   node region:  nr_nodes chunks; chunk n is node n's, bound to node n, and
 *                 gives each slot a whole cache line for its node sum, so that
 *                 folds into different counters never share a line.
 *   ext region:   ext_size bytes per slot of plain bookkeeping.
 *
 * Not thread-safe: the owner (the counter domain) serialises calls. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "topology.h"

#define ACCT_POOL_BLOCK_SLOTS 512u
#define ACCT_NODE_SLOT_SIZE 64u
#define ACCT_NODE_STRIDE (ACCT_POOL_BLOCK_SLOTS * ACCT_NODE_SLOT_SIZE)

struct acct_pool;

struct acct_pool_slot {
	uint32_t index;
	char *shard0; /* shard word of CPU 0; CPU k's is at shard0 + k * ACCT_SHARD_STRIDE */
	char *node0;  /* node sum of node 0; node n's is at node0 + n * ACCT_NODE_STRIDE */
	void *ext;    /* ext_size zeroed bytes, cache-line aligned */
};

/* Create an empty pool for topology `t` (which must outlive the pool) with
 * `ext_size` bytes of bookkeeping per slot. Returns 0 or -ENOMEM. */
int acct_pool_new(const struct acct_topology *t, size_t ext_size, struct acct_pool **ret);

/* Free the pool and every block; accepts NULL; returns NULL. */
struct acct_pool *acct_pool_free(struct acct_pool *p);

/* Take a slot whose shard words, node sums and ext are all zero. Grows the pool
 * by one block when no slot is free. Returns 0 or -ENOMEM (nothing changed). */
int acct_pool_get(struct acct_pool *p, struct acct_pool_slot *ret);

/* Look up slot `index` (which must have been handed out and not released). */
void acct_pool_lookup(const struct acct_pool *p, uint32_t index, struct acct_pool_slot *ret);

/* Zero the slot's memory and make it available again. The caller guarantees
 * that nobody uses the slot any more. */
void acct_pool_put(struct acct_pool *p, uint32_t index);

/* Slots handed out and not released; bytes mapped by the pool. */
unsigned acct_pool_used(const struct acct_pool *p);
size_t acct_pool_bytes(const struct acct_pool *p);

/* Bytes of pool memory one slot stands for (shard words, node lines, ext). */
size_t acct_pool_bytes_per_slot(const struct acct_pool *p);

/* Call fn(slot, userdata) for every slot handed out, in index order. */
void acct_pool_foreach(const struct acct_pool *p, void (*fn)(const struct acct_pool_slot *slot, void *userdata),
		       void *userdata);
