/* pool.c - slots of shard words and node sums, allocated a block at a time on
 * the nodes they belong to. */
#include "pool.h"

#include <errno.h>
#include <numa.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "basic/util.h"
#include "rseq.h"

#define SHARD_WORD_SIZE 8u

_Static_assert(ACCT_POOL_BLOCK_SLOTS * SHARD_WORD_SIZE == ACCT_SHARD_STRIDE,
	       "a block's shard words of one CPU fill exactly one stride");

struct pool_block {
	char *shards; /* nr_shards * ACCT_SHARD_STRIDE bytes */
	char *nodes;  /* nr_nodes * ACCT_NODE_STRIDE bytes */
	char *ext;    /* ACCT_POOL_BLOCK_SLOTS * ext_size bytes */
	uint8_t used[ACCT_POOL_BLOCK_SLOTS];
};

/* The block table never moves, so that slots can be looked up without the
 * owner's lock while another thread grows the pool. */
#define POOL_MAX_BLOCKS 8192u

struct acct_pool {
	const struct acct_topology *topo;
	size_t ext_size;
	struct pool_block *blocks[POOL_MAX_BLOCKS];
	unsigned nr_blocks;
	uint32_t *free; /* stack of released slot indexes */
	unsigned nr_free;
	size_t free_cap; /* slots the free stack can hold: every slot of the pool, grown geometrically */
	unsigned fresh; /* slots of the newest block never handed out start here */
	unsigned used;
	bool bind_nodes;
};

int acct_pool_new(const struct acct_topology *t, size_t ext_size, struct acct_pool **ret)
{
	struct acct_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->topo = t;
	p->ext_size = (ext_size + ACCT_CACHELINE - 1) / ACCT_CACHELINE * ACCT_CACHELINE;
	/* Binding pages to nodes only makes sense for nodes that exist. */
	p->bind_nodes = !t->simulated && t->nr_nodes > 1 && numa_available() >= 0;
	*ret = p;
	return 0;
}

static void *map_region(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void block_free(const struct acct_pool *p, struct pool_block *b)
{
	if (!b)
		return;
	if (b->shards)
		munmap(b->shards, (size_t)p->topo->nr_shards * ACCT_SHARD_STRIDE);
	if (b->nodes)
		munmap(b->nodes, (size_t)p->topo->nr_nodes * ACCT_NODE_STRIDE);
	free(b->ext);
	free(b);
}

static int pool_grow(struct acct_pool *p)
{
	const struct acct_topology *t = p->topo;
	if (p->nr_blocks == POOL_MAX_BLOCKS)
		return -ENOMEM;
	struct pool_block *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->shards = map_region((size_t)t->nr_shards * ACCT_SHARD_STRIDE);
	b->nodes = map_region((size_t)t->nr_nodes * ACCT_NODE_STRIDE);
	b->ext = aligned_alloc(ACCT_CACHELINE, ACCT_POOL_BLOCK_SLOTS * p->ext_size);
	/* The free stack holds every slot: doubled when a block outgrows it,
	 * not grown a block at a time (8,192 reallocations of up to 2 MiB,
	 * which took minutes under ASan, whose realloc always copies). */
	size_t need = (size_t)(p->nr_blocks + 1) * ACCT_POOL_BLOCK_SLOTS;
	bool stack_ok = need <= p->free_cap;
	if (!stack_ok) {
		size_t cap = MAX(need, MIN(2 * p->free_cap, (size_t)POOL_MAX_BLOCKS * ACCT_POOL_BLOCK_SLOTS));
		uint32_t *free_stack = reallocarray(p->free, cap, sizeof(*free_stack));
		if (free_stack) {
			p->free = free_stack;
			p->free_cap = cap;
			stack_ok = true;
		}
	}
	if (!b->shards || !b->nodes || !b->ext || !stack_ok) {
		block_free(p, b);
		return -ENOMEM;
	}
	memset(b->ext, 0, ACCT_POOL_BLOCK_SLOTS * p->ext_size);
	if (p->bind_nodes) {
		/* Before first touch, so the pages are faulted in on their node. */
		for (unsigned cpu = 0; cpu < t->nr_shards; cpu++)
			numa_tonode_memory(b->shards + (size_t)cpu * ACCT_SHARD_STRIDE, ACCT_SHARD_STRIDE,
					   t->shard_node[cpu]);
		for (unsigned node = 0; node < t->nr_nodes; node++)
			numa_tonode_memory(b->nodes + (size_t)node * ACCT_NODE_STRIDE, ACCT_NODE_STRIDE, (int)node);
	}
	/* Published before any of its slots is handed out; readers find it through
	 * a slot index that reaches them with release/acquire ordering. */
	__atomic_store_n(&p->blocks[p->nr_blocks], b, __ATOMIC_RELEASE);
	p->nr_blocks++;
	p->fresh = 0;
	return 0;
}

void acct_pool_lookup(const struct acct_pool *p, uint32_t index, struct acct_pool_slot *ret)
{
	struct pool_block *b = __atomic_load_n(&p->blocks[index / ACCT_POOL_BLOCK_SLOTS], __ATOMIC_ACQUIRE);
	unsigned i = index % ACCT_POOL_BLOCK_SLOTS;

	ret->index = index;
	ret->shard0 = b->shards + (size_t)i * SHARD_WORD_SIZE;
	ret->node0 = b->nodes + (size_t)i * ACCT_NODE_SLOT_SIZE;
	ret->ext = b->ext + (size_t)i * p->ext_size;
}

int acct_pool_get(struct acct_pool *p, struct acct_pool_slot *ret)
{
	uint32_t index;

	if (p->nr_free > 0)
		index = p->free[--p->nr_free];
	else {
		if (p->nr_blocks == 0 || p->fresh == ACCT_POOL_BLOCK_SLOTS) {
			int r = pool_grow(p);
			if (r < 0)
				return r;
		}
		index = (p->nr_blocks - 1) * ACCT_POOL_BLOCK_SLOTS + p->fresh++;
	}
	p->blocks[index / ACCT_POOL_BLOCK_SLOTS]->used[index % ACCT_POOL_BLOCK_SLOTS] = 1;
	p->used++;
	acct_pool_lookup(p, index, ret);
	return 0;
}

void acct_pool_put(struct acct_pool *p, uint32_t index)
{
	struct acct_pool_slot s;

	acct_pool_lookup(p, index, &s);
	for (unsigned cpu = 0; cpu < p->topo->nr_shards; cpu++)
		__atomic_store_n((int64_t *)(s.shard0 + (size_t)cpu * ACCT_SHARD_STRIDE), 0, __ATOMIC_RELAXED);
	for (unsigned node = 0; node < p->topo->nr_nodes; node++)
		__atomic_store_n((int64_t *)(s.node0 + (size_t)node * ACCT_NODE_STRIDE), 0, __ATOMIC_RELAXED);
	memset(s.ext, 0, p->ext_size);
	p->blocks[index / ACCT_POOL_BLOCK_SLOTS]->used[index % ACCT_POOL_BLOCK_SLOTS] = 0;
	p->free[p->nr_free++] = index;
	p->used--;
}

unsigned acct_pool_used(const struct acct_pool *p)
{
	return p->used;
}

size_t acct_pool_bytes_per_slot(const struct acct_pool *p)
{
	return (size_t)p->topo->nr_shards * SHARD_WORD_SIZE + (size_t)p->topo->nr_nodes * ACCT_NODE_SLOT_SIZE +
	       p->ext_size;
}

size_t acct_pool_bytes(const struct acct_pool *p)
{
	return (size_t)p->nr_blocks * ACCT_POOL_BLOCK_SLOTS * acct_pool_bytes_per_slot(p);
}

void acct_pool_foreach(const struct acct_pool *p, void (*fn)(const struct acct_pool_slot *slot, void *userdata),
		       void *userdata)
{
	for (unsigned bi = 0; bi < p->nr_blocks; bi++)
		for (unsigned i = 0; i < ACCT_POOL_BLOCK_SLOTS; i++) {
			if (!p->blocks[bi]->used[i])
				continue;
			struct acct_pool_slot s;
			acct_pool_lookup(p, bi * ACCT_POOL_BLOCK_SLOTS + i, &s);
			fn(&s, userdata);
		}
}

struct acct_pool *acct_pool_free(struct acct_pool *p)
{
	if (!p)
		return NULL;
	for (unsigned i = 0; i < p->nr_blocks; i++)
		block_free(p, p->blocks[i]);
	free(p->free);
	free(p);
	return NULL;
}
