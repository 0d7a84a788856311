/* counter.c - the counter engine: compact counters, their upgrade to per-CPU
 * shards with per-node sums, folds, reads, budgets and the tuner.
 *
 * The contract and the bound are explained in counter.h. The invariants the
 * code below keeps, on which the bound rests:
 *
 *  I1. A shard word is 2r (residue r) or 1 (flagged: a fold owns it, r = 0).
 *      Every store of 2r keeps |2r| <= the limit that the storing update read.
 *  I2. Only one fold owns a shard at a time (the flag), and it holds at most
 *      that shard's residue outside both the shard and the node sums.
 *  I3. In rseq mode a shard word is written only by code running on its CPU
 *      inside a critical section, or by the fold that flagged it. In fallback
 *      mode every write is a compare-and-swap or made by the flag's owner.
 *  I4. Every step that reads the limit and writes a shard later, or that holds
 *      a residue outside both shard and node sums, runs either inside an rseq
 *      critical section (the fast path) or inside a writer window (quiesce.h:
 *      fallback updates, every fold, and the rseq slow path). A lowered bound
 *      is published only after the limit was lowered, an rseq fence and a
 *      grace period (acct_quiesce()) have passed, and then every shard was
 *      seen unflagged and within the new batch (drained where it was not).
 *
 * Why the bound then holds across a lowering (the full argument is in
 * docs/counters.md): after the grace period no writer that read the old limit
 * can still store, and no fold that took an old residue still holds it (I4);
 * every later store keeps the new limit (I1). A shard that is seen unflagged
 * and within the new batch therefore stays within it, and a fold that takes
 * it later holds no more than the new batch allows (I2). Before the bound is
 * published, readers use the old, larger one. Both steps of the old protocol
 * that broke this, a fold in flight whose flagged shard read as 0 and a
 * fallback writer's stale compare-and-swap left unfolded while a precise read
 * held folds off, are forced in tests/test-counter-interleave.c.
 *
 * Folds count themselves in folds_started/folds_done so that a precise read can
 * tell whether a residue was in flight between a shard and a node sum. */
#include "counter.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/util.h"
#include "pool.h"
#include "quiesce.h"

#ifdef ACCT_COUNTER_TEST_POINTS
void (*acct_counter_test_hook)(enum acct_counter_test_point point);
#define TEST_POINT(p)                              \
	do {                                       \
		if (acct_counter_test_hook)        \
			acct_counter_test_hook(p); \
	} while (0)
#else
#define TEST_POINT(p) \
	do {          \
	} while (0)
#endif

#define SLAB_CHUNK 1024u
/* Encoded words must stay far from overflow: |2r| + |2 delta| < 2^63. */
#define BATCH_CAP ((int64_t)1 << 60)

/* Tuner thresholds, in folds (and direct adds) per second per counter. */
#define TUNE_GROW_RATE 2000u
#define TUNE_SHRINK_RATE 20u

/* Sharded-only bookkeeping, one per pool slot. */
struct counter_ext {
	struct acct_counter *counter;
	char *node0;
	int64_t bound_batch; /* the batch the reported bound is computed from */
	int64_t shrink_to;   /* pending lower batch, 0 if none */
	uint64_t folds;
	uint64_t direct;
	uint64_t tune_grows, tune_shrinks;
	uint64_t last_events, last_tune_ns;
	/* Written by every fold: keep them apart from the read-mostly fields. */
	uint64_t folds_started _cacheline_aligned_;
	uint64_t folds_done;
	uint32_t precise_readers;
};

struct acct_domain {
	struct acct_topology *topo;
	enum acct_update_mode mode;
	unsigned spread;
	bool auto_tune;
	uint32_t upgrade_ops, upgrade_window_ms, upgrade_contention;
	unsigned *node_shards;

	pthread_mutex_t lock; /* slab, pool, upgrades, budgets and the tuner */
	struct acct_pool *pool;
	void **chunks;
	unsigned nr_chunks;
	struct acct_counter *free_list; /* linked through shard0 */
	uint64_t counters, sharded, upgrades, tune_passes;
};

static unsigned salt_next;
static _Thread_local unsigned thread_salt = UINT_MAX;

/* A small per-thread number that spreads threads over the simulated CPUs that
 * stand for their real CPU (see acct_topology_shard_of()). */
static unsigned my_salt(void)
{
	if (unlikely(thread_salt == UINT_MAX))
		thread_salt = __atomic_fetch_add(&salt_next, 1, __ATOMIC_RELAXED) & 0xffff;
	return thread_salt;
}

static uint32_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

static inline int64_t wrap_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

const char *acct_update_mode_to_string(enum acct_update_mode m)
{
	switch (m) {
	case ACCT_MODE_AUTO:
		return "auto";
	case ACCT_MODE_RSEQ:
		return "rseq";
	case ACCT_MODE_FALLBACK:
		return "fallback";
	}
	return "unknown";
}

int64_t acct_batch_for_budget(int64_t budget, unsigned shards)
{
	if (budget < 0 || shards == 0)
		return 1;
	int64_t b = budget / (int64_t)shards;
	return b >= BATCH_CAP ? BATCH_CAP : b + 1;
}

/* ---- domain ------------------------------------------------------------ */

int acct_domain_new(const struct acct_domain_options *opts, struct acct_domain **ret)
{
	static const struct acct_domain_options defaults = { .mode = ACCT_MODE_AUTO };
	struct acct_domain *d;
	int r;

	if (!opts)
		opts = &defaults;
	if (opts->mode > ACCT_MODE_FALLBACK)
		return -EINVAL;
	if (opts->mode == ACCT_MODE_RSEQ && !acct_rseq_usable())
		return -EOPNOTSUPP;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	r = opts->topology ? acct_topology_dup(opts->topology, &d->topo) : acct_topology_detect(&d->topo);
	if (r < 0) {
		free(d);
		return r;
	}
	d->spread = acct_topology_spread(d->topo);
	d->mode = opts->mode;
	if (d->mode == ACCT_MODE_AUTO)
		d->mode = acct_rseq_usable() ? ACCT_MODE_RSEQ : ACCT_MODE_FALLBACK;
	/* rseq needs every shard owned by one real CPU. */
	if (d->mode == ACCT_MODE_RSEQ && d->spread == 0) {
		if (opts->mode == ACCT_MODE_RSEQ) {
			acct_domain_free(d);
			return -EOPNOTSUPP;
		}
		d->mode = ACCT_MODE_FALLBACK;
	}
	(void)acct_quiesce_init(); /* before any writer window (quiesce.h) */
	d->auto_tune = opts->auto_tune;
	d->upgrade_ops = opts->upgrade_ops ?: 256;
	d->upgrade_window_ms = opts->upgrade_window_ms ?: 1000;
	d->upgrade_contention = opts->upgrade_contention ?: 64;
	pthread_mutex_init(&d->lock, NULL);

	d->node_shards = calloc(d->topo->nr_nodes, sizeof(*d->node_shards));
	r = d->node_shards ? acct_pool_new(d->topo, sizeof(struct counter_ext), &d->pool) : -ENOMEM;
	if (r < 0) {
		acct_domain_free(d);
		return r;
	}
	for (unsigned n = 0; n < d->topo->nr_nodes; n++)
		d->node_shards[n] = acct_topology_node_shards(d->topo, n);
	*ret = d;
	return 0;
}

struct acct_domain *acct_domain_free(struct acct_domain *d)
{
	if (!d)
		return NULL;
	/* Counters may have been freed on other threads (RCU callbacks) under
	 * the lock: taking it orders those frees before this one. */
	pthread_mutex_lock(&d->lock);
	pthread_mutex_unlock(&d->lock);
	for (unsigned i = 0; i < d->nr_chunks; i++)
		free(d->chunks[i]);
	free(d->chunks);
	acct_pool_free(d->pool);
	free(d->node_shards);
	acct_topology_free(d->topo);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return NULL;
}

const struct acct_topology *acct_domain_topology(const struct acct_domain *d)
{
	return d->topo;
}

void acct_domain_set_auto_tune(struct acct_domain *d, bool on)
{
	__atomic_store_n(&d->auto_tune, on, __ATOMIC_RELAXED);
}

/* ---- counter memory ----------------------------------------------------- */

static int slab_grow(struct acct_domain *d)
{
	struct acct_counter *chunk = aligned_alloc(ACCT_CACHELINE, SLAB_CHUNK * sizeof(*chunk));
	if (!chunk)
		return -ENOMEM;
	void **chunks = reallocarray(d->chunks, d->nr_chunks + 1, sizeof(*chunks));
	if (!chunks) {
		free(chunk);
		return -ENOMEM;
	}
	d->chunks = chunks;
	d->chunks[d->nr_chunks++] = chunk;
	for (unsigned i = SLAB_CHUNK; i-- > 0;) {
		chunk[i].shard0 = (char *)d->free_list;
		d->free_list = &chunk[i];
	}
	return 0;
}

int acct_counter_new(struct acct_domain *d, int64_t budget, struct acct_counter **ret)
{
	struct acct_counter *c;

	if (budget < 0)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	if (!d->free_list) {
		int r = slab_grow(d);
		if (r < 0) {
			pthread_mutex_unlock(&d->lock);
			return r;
		}
	}
	c = d->free_list;
	d->free_list = (struct acct_counter *)c->shard0;
	d->counters++;
	pthread_mutex_unlock(&d->lock);

	*c = (struct acct_counter){
		.state = ACCT_STATE_COMPACT,
		.domain = d,
		.budget = budget,
		.window_ms = now_ms(),
	};
	*ret = c;
	return 0;
}

static struct counter_ext *counter_ext(const struct acct_counter *c)
{
	struct acct_pool_slot s;
	acct_pool_lookup(c->domain->pool, c->slot, &s);
	return s.ext;
}

struct acct_counter *acct_counter_free(struct acct_counter *c)
{
	if (!c)
		return NULL;
	struct acct_domain *d = c->domain;
	pthread_mutex_lock(&d->lock);
	if (c->state != ACCT_STATE_COMPACT) {
		acct_pool_put(d->pool, c->slot);
		d->sharded--;
	}
	c->state = ACCT_STATE_COMPACT;
	c->shard0 = (char *)d->free_list;
	d->free_list = c;
	d->counters--;
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* ---- shards and nodes ----------------------------------------------------- */

static inline int64_t *shard_word(const struct acct_counter *c, unsigned shard)
{
	return (int64_t *)(c->shard0 + (size_t)shard * ACCT_SHARD_STRIDE);
}

static inline int64_t *node_sum(const struct counter_ext *e, unsigned node)
{
	return (int64_t *)(e->node0 + (size_t)node * ACCT_NODE_STRIDE);
}

static inline int64_t batch_of_lim(int64_t lim)
{
	return lim / 2 + 1;
}

/* The residue a shard word stands for (a flagged word stands for 0). */
static inline int64_t word_residue(int64_t w)
{
	return (w & 1) ? 0 : w / 2;
}

/* Does 2 * delta fit within lim (so the fast path may take it)? */
static inline bool delta_fits(int64_t delta, int64_t lim)
{
	return (uint64_t)delta + (uint64_t)(lim >> 1) <= (uint64_t)lim;
}

static void node_add(struct counter_ext *e, unsigned node, int64_t delta)
{
	__atomic_fetch_add(node_sum(e, node), delta, __ATOMIC_SEQ_CST);
}

/* Add straight to a node sum: exact, for deltas too large to batch and for
 * updates that meet a shard while a fold owns it. */
static void direct_add(struct counter_ext *e, unsigned node, int64_t delta)
{
	node_add(e, node, delta);
	__atomic_fetch_add(&e->direct, 1, __ATOMIC_RELAXED);
}

/* Enter a fold. Returns false when a precise read holds folds off; the caller
 * then adds directly. */
static bool fold_begin(struct counter_ext *e)
{
	__atomic_fetch_add(&e->folds_started, 1, __ATOMIC_SEQ_CST);
	if (likely(__atomic_load_n(&e->precise_readers, __ATOMIC_SEQ_CST) == 0))
		return true;
	__atomic_fetch_sub(&e->folds_started, 1, __ATOMIC_SEQ_CST);
	return false;
}

static void fold_end(struct counter_ext *e)
{
	__atomic_fetch_add(&e->folds_done, 1, __ATOMIC_SEQ_CST);
}

/* Finish a fold that owns shard `shard` (whose word was `w`, now flagged):
 * move the residue and `delta` to the node, then release the shard. */
static void fold_commit(struct acct_counter *c, struct counter_ext *e, unsigned shard, int64_t w, int64_t delta)
{
	TEST_POINT(ACCT_TP_FOLD_HELD);
	node_add(e, c->domain->topo->shard_node[shard], wrap_add(w / 2, delta));
	__atomic_store_n(shard_word(c, shard), 0, __ATOMIC_RELEASE);
	__atomic_fetch_add(&e->folds, 1, __ATOMIC_RELAXED);
}

#if ACCT_HAVE_RSEQ_ASM
/* Byte offset of this thread's shards from shard0 in a simulated topology
 * (0 for the real one); the shard index is cpu + offset / stride. */
static inline size_t spread_offset(const struct acct_domain *d)
{
	if (d->spread <= 1)
		return 0;
	return (size_t)(my_salt() % d->spread) * d->topo->nr_real_cpus * ACCT_SHARD_STRIDE;
}

static void fold_rseq(struct acct_counter *c, struct counter_ext *e, size_t offset, int64_t delta)
{
	const struct acct_topology *t = c->domain->topo;
	unsigned cpu, shard;
	int64_t w;

	if (!fold_begin(e)) {
		direct_add(e, t->shard_node[acct_topology_shard_of(t, acct_current_cpu(), my_salt())], delta);
		return;
	}
	/* Folds the shard of the CPU we are on now, which may differ from the one
	 * that overflowed: any shard's residue may go to its node at any time. */
	w = acct_rseq_shard_grab(c->shard0 + offset, &cpu);
	shard = cpu + (unsigned)(offset / ACCT_SHARD_STRIDE);
	if (w & 1)
		direct_add(e, t->shard_node[shard], delta);
	else
		fold_commit(c, e, shard, w, delta);
	fold_end(e);
}
#endif

/* Fallback mode: take shard `shard` with a CAS, or add directly if it is taken. */
static void fold_cas(struct acct_counter *c, struct counter_ext *e, unsigned shard, int64_t delta)
{
	int64_t *word = shard_word(c, shard);
	unsigned node = c->domain->topo->shard_node[shard];
	int64_t w;

	if (!fold_begin(e)) {
		direct_add(e, node, delta);
		return;
	}
	w = __atomic_load_n(word, __ATOMIC_RELAXED);
	for (;;) {
		if (w & 1) {
			direct_add(e, node, delta);
			fold_end(e);
			return;
		}
		if (__atomic_compare_exchange_n(word, &w, 1, true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
	}
	fold_commit(c, e, shard, w, delta);
	fold_end(e);
}

/* Fallback mode update of shard `shard`. Runs inside a writer window. */
static void shard_add_cas(struct acct_counter *c, struct counter_ext *e, unsigned shard, int64_t delta)
{
	int64_t *word = shard_word(c, shard);
	int64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);

	for (;;) {
		int64_t lim = __atomic_load_n(&c->lim, __ATOMIC_ACQUIRE);
		TEST_POINT(ACCT_TP_CAS_LIMIT_READ);
		if (w & 1) {
			direct_add(e, c->domain->topo->shard_node[shard], delta);
			return;
		}
		if (!delta_fits(delta, lim) || abs_u64(w + 2 * delta) > (uint64_t)lim) {
			fold_cas(c, e, shard, delta);
			return;
		}
		/* The limit may be lowered after we read it: the caller's window
		 * makes the lowerer wait for this store (I4) and drain it. */
		if (__atomic_compare_exchange_n(word, &w, w + 2 * delta, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
}

/* ---- upgrade ----------------------------------------------------------- */

static int64_t initial_batch(const struct acct_counter *c)
{
	return acct_batch_for_budget(c->budget, c->domain->topo->nr_shards);
}

int acct_counter_upgrade(struct acct_counter *c)
{
	struct acct_domain *d = c->domain;
	struct acct_pool_slot s;
	int r;

	pthread_mutex_lock(&d->lock);
	if (c->state != ACCT_STATE_COMPACT) {
		pthread_mutex_unlock(&d->lock);
		return 0;
	}
	r = acct_pool_get(d->pool, &s);
	if (r < 0) {
		pthread_mutex_unlock(&d->lock);
		return r;
	}
	struct counter_ext *e = s.ext;
	int64_t batch = initial_batch(c);
	e->counter = c;
	e->node0 = s.node0;
	e->bound_batch = batch;
	e->last_tune_ns = 0;
	c->slot = s.index;
	c->shard0 = s.shard0;
	__atomic_store_n(&c->lim, 2 * (batch - 1), __ATOMIC_RELAXED);
	d->upgrades++;
	d->sharded++;
	bool inline_path = d->mode == ACCT_MODE_RSEQ && !d->topo->simulated;
	/* Publishes shard0, slot and lim to updaters that see the new state. */
	__atomic_store_n(&c->state, inline_path ? ACCT_STATE_SHARDED_RSEQ : ACCT_STATE_SHARDED_OTHER,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static void compact_add(struct acct_counter *c, int64_t delta)
{
	struct acct_domain *d = c->domain;
	int64_t v = __atomic_load_n(&c->base, __ATOMIC_RELAXED);
	bool contended = false;

	TEST_POINT(ACCT_TP_COMPACT_CAS);
	while (!__atomic_compare_exchange_n(&c->base, &v, wrap_add(v, delta), true, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED))
		contended = true;

	/* Heuristics only: racy counts are fine, torn ones impossible. */
	if (contended) {
		uint32_t n = __atomic_load_n(&c->contention, __ATOMIC_RELAXED) + 1;
		__atomic_store_n(&c->contention, n, __ATOMIC_RELAXED);
		if (n >= d->upgrade_contention) {
			__atomic_store_n(&c->contention, 0, __ATOMIC_RELAXED);
			(void)acct_counter_upgrade(c); /* on -ENOMEM stay compact: still exact */
			return;
		}
	}
	uint32_t ops = __atomic_load_n(&c->ops, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&c->ops, ops, __ATOMIC_RELAXED);
	if (ops % d->upgrade_ops == 0) {
		uint32_t now = now_ms(), start = __atomic_load_n(&c->window_ms, __ATOMIC_RELAXED);
		if (now - start < d->upgrade_window_ms)
			(void)acct_counter_upgrade(c);
		else
			__atomic_store_n(&c->window_ms, now, __ATOMIC_RELAXED);
	}
}

/* ---- updates ------------------------------------------------------------- */

void acct_counter_add_slow(struct acct_counter *c, int64_t delta)
{
	uint32_t state = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
	struct acct_domain *d = c->domain;

	if (state == ACCT_STATE_COMPACT) {
		compact_add(c, delta);
		return;
	}
	struct counter_ext *e = counter_ext(c);
	if (unlikely(!acct_window_enter())) {
		/* No window without memory for its record: exact and window-free. */
		direct_add(e, d->topo->shard_node[acct_topology_shard_of(d->topo, acct_current_cpu(), my_salt())],
			   delta);
		return;
	}
	/* I4 */
#if ACCT_HAVE_RSEQ_ASM
	if (d->mode == ACCT_MODE_RSEQ) {
		size_t offset = spread_offset(d);
		int64_t lim = __atomic_load_n(&c->lim, __ATOMIC_RELAXED);
		if (!delta_fits(delta, lim) || !acct_rseq_shard_add(c->shard0 + offset, &c->lim, delta * 2))
			fold_rseq(c, e, offset, delta);
		acct_window_exit();
		return;
	}
#endif
	shard_add_cas(c, e, acct_topology_shard_of(d->topo, acct_current_cpu(), my_salt()), delta);
	acct_window_exit();
}

int acct_counter_add_cpu(struct acct_counter *c, unsigned cpu, int64_t delta)
{
	struct acct_domain *d = c->domain;

	if (cpu >= d->topo->nr_shards)
		return -EINVAL;
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == ACCT_STATE_COMPACT) {
		compact_add(c, delta);
		return 0;
	}
	struct counter_ext *e = counter_ext(c);
	if (d->mode == ACCT_MODE_RSEQ)
		node_add(e, d->topo->shard_node[cpu], delta);
	else if (acct_window_enter()) { /* I4 */
		shard_add_cas(c, e, cpu, delta);
		acct_window_exit();
	} else
		direct_add(e, d->topo->shard_node[cpu], delta); /* no window: exact and window-free */
	return 0;
}

int acct_counter_add_node(struct acct_counter *c, unsigned node, int64_t delta)
{
	if (node >= c->domain->topo->nr_nodes)
		return -EINVAL;
	/* A compact counter's base is node 0's value (acct_counter_read_node()),
	 * and its other nodes read 0: so node 0, and nothing at all, need no
	 * shards. One per-node counter per cgroup (its NUMA memory) stays
	 * compact on a one-node host, and out of the tuner's passes. The
	 * same path as acct_counter_add()'s while compact, with its race
	 * against an upgrade: the base stays in the sum. */
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == ACCT_STATE_COMPACT && (node == 0 || delta == 0)) {
		if (delta)
			compact_add(c, delta);
		return 0;
	}
	int r = acct_counter_upgrade(c);
	if (r < 0)
		return r;
	node_add(counter_ext(c), node, delta);
	return 0;
}

/* ---- reads ------------------------------------------------------------- */

static uint64_t bound_for(const struct acct_counter *c, int64_t batch, unsigned shards)
{
	(void)c;
	return (uint64_t)(batch - 1) * shards;
}

/* Is the counter sharded? Reads the base too, consistently: a compact answer
 * means the base was read while the counter was still compact. */
static bool read_state(const struct acct_counter *c, int64_t *ret_base)
{
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == ACCT_STATE_COMPACT) {
		*ret_base = __atomic_load_n(&c->base, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&c->state, __ATOMIC_SEQ_CST) == ACCT_STATE_COMPACT)
			return false;
	}
	*ret_base = __atomic_load_n(&c->base, __ATOMIC_SEQ_CST);
	return true;
}

void acct_counter_read(const struct acct_counter *c, struct acct_reading *ret)
{
	int64_t base;

	if (!read_state(c, &base)) {
		*ret = (struct acct_reading){ .value = base, .bound = 0 };
		return;
	}
	const struct counter_ext *e = counter_ext(c);
	const struct acct_topology *t = c->domain->topo;
	/* The bound in effect before and after the sums; the larger covers both
	 * a batch raised during the read and one lowered during it. */
	int64_t b1 = __atomic_load_n(&e->bound_batch, __ATOMIC_ACQUIRE);
	int64_t sum = base;
	for (unsigned n = 0; n < t->nr_nodes; n++)
		sum = wrap_add(sum, __atomic_load_n(node_sum(e, n), __ATOMIC_RELAXED));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	int64_t b2 = __atomic_load_n(&e->bound_batch, __ATOMIC_ACQUIRE);
	*ret = (struct acct_reading){ .value = sum, .bound = bound_for(c, MAX(b1, b2), t->nr_shards) };
}

int acct_counter_read_node(const struct acct_counter *c, unsigned node, struct acct_reading *ret)
{
	const struct acct_domain *d = c->domain;
	int64_t base;

	if (node >= d->topo->nr_nodes)
		return -EINVAL;
	if (!read_state(c, &base)) {
		*ret = (struct acct_reading){ .value = node == 0 ? base : 0, .bound = 0 };
		return 0;
	}
	const struct counter_ext *e = counter_ext(c);
	int64_t b1 = __atomic_load_n(&e->bound_batch, __ATOMIC_ACQUIRE);
	int64_t v = __atomic_load_n(node_sum(e, node), __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	int64_t b2 = __atomic_load_n(&e->bound_batch, __ATOMIC_ACQUIRE);
	*ret = (struct acct_reading){
		.value = node == 0 ? wrap_add(v, base) : v,
		.bound = bound_for(c, MAX(b1, b2), d->node_shards[node]),
	};
	return 0;
}

static int64_t sum_all(const struct acct_counter *c, const struct counter_ext *e, int64_t base)
{
	const struct acct_topology *t = c->domain->topo;
	int64_t sum = base;

	for (unsigned n = 0; n < t->nr_nodes; n++)
		sum = wrap_add(sum, __atomic_load_n(node_sum(e, n), __ATOMIC_RELAXED));
	for (unsigned s = 0; s < t->nr_shards; s++)
		sum = wrap_add(sum, word_residue(__atomic_load_n(shard_word(c, s), __ATOMIC_RELAXED)));
	return sum;
}

int64_t acct_counter_read_precise(const struct acct_counter *c)
{
	int64_t base, sum;

	if (!read_state(c, &base))
		return base;
	struct counter_ext *e = counter_ext(c);

	/* Optimistic: no fold may begin or be in flight while we sum (seqlock). */
	for (int attempt = 0; attempt < 4; attempt++) {
		uint64_t done = __atomic_load_n(&e->folds_done, __ATOMIC_SEQ_CST);
		sum = sum_all(c, e, __atomic_load_n(&c->base, __ATOMIC_RELAXED));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->folds_started, __ATOMIC_SEQ_CST) == done)
			return sum;
	}

	/* Busy counter: hold new folds off (they add directly instead) and wait
	 * for those in flight, then sum. */
	__atomic_fetch_add(&e->precise_readers, 1, __ATOMIC_SEQ_CST);
	for (unsigned spins = 0;; spins++) {
		uint64_t started = __atomic_load_n(&e->folds_started, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&e->folds_done, __ATOMIC_SEQ_CST) == started)
			break;
		if (spins == 0)
			TEST_POINT(ACCT_TP_PRECISE_WAIT);
		if (spins > 64)
			sched_yield(); /* a folder was preempted mid-fold */
	}
	sum = sum_all(c, e, __atomic_load_n(&c->base, __ATOMIC_RELAXED));
	__atomic_fetch_sub(&e->precise_readers, 1, __ATOMIC_SEQ_CST);
	return sum;
}

int acct_counter_compare(const struct acct_counter *c, int64_t threshold, bool *ret_precise)
{
	struct acct_reading rd;

	acct_counter_read(c, &rd);
	__int128 v = rd.value, b = rd.bound, t = threshold;
	if (ret_precise)
		*ret_precise = false;
	if (v - b > t)
		return 1;
	if (v + b < t)
		return -1;
	if (rd.bound == 0)
		return 0; /* exact, and neither above nor below: equal */
	if (ret_precise)
		*ret_precise = true;
	int64_t p = acct_counter_read_precise(c);
	return p > threshold ? 1 : p < threshold ? -1 : 0;
}

/* ---- batch changes, budgets, the tuner ------------------------------------- */

/* The word of shard `s` once no fold holds it. Called after the grace period
 * of a lowering: a fold that holds the shard now began after it and finishes
 * without waiting for anything we hold (quiesce.h), so this wait is short. */
static int64_t shard_settled(const struct acct_counter *c, unsigned s)
{
	int64_t w;

	for (unsigned spins = 0; (w = __atomic_load_n(shard_word(c, s), __ATOMIC_ACQUIRE)) & 1; spins++)
		if (spins >= 64)
			sched_yield(); /* the folder was preempted */
	return w;
}

/* Move the residue of shard `shard` (real CPU `cpu`) to its node by running on
 * that CPU for a moment. Returns false when this thread may not run there. */
static bool drain_shard_rseq(struct acct_counter *c, struct counter_ext *e, unsigned shard)
{
#if ACCT_HAVE_RSEQ_ASM
	const struct acct_topology *t = c->domain->topo;
	unsigned real = t->nr_real_cpus, cpu = shard % real;
	size_t offset = (size_t)(shard / real) * real * ACCT_SHARD_STRIDE;
	cpu_set_t old, one;
	bool ok = false;

	if (sched_getaffinity(0, sizeof(old), &old) < 0)
		return false;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		return false;
	if (acct_current_cpu() == cpu && fold_begin(e)) {
		unsigned got;
		/* Where a test moves this thread off `cpu`: the kernel does so only
		 * for a CPU going offline, which a test cannot make happen. */
		TEST_POINT(ACCT_TP_DRAIN_PINNED);
		int64_t w = acct_rseq_shard_grab(c->shard0 + offset, &got);
		if (got == cpu && !(w & 1)) {
			fold_commit(c, e, shard, w, 0);
			ok = true;
		} else if (!(w & 1)) {
			/* Migrated despite the mask (CPU going offline): still a valid fold. */
			fold_commit(c, e, got + (unsigned)(offset / ACCT_SHARD_STRIDE), w, 0);
		}
		fold_end(e);
	}
	(void)sched_setaffinity(0, sizeof(old), &old);
	return ok;
#else
	(void)c, (void)e, (void)shard;
	return false;
#endif
}

/* Try to finish lowering the bound to e->shrink_to (I4): every shard must be
 * seen unflagged and within the new batch, which a drain can force. Called
 * with the domain lock held, after the limit was lowered and lowering_fence()
 * has run. A drain that cannot run (a precise read holds folds off, or this
 * thread may not run on the shard's CPU) leaves the shrink pending: the old,
 * larger bound stays until a later tuner pass completes it. */
static void shrink_try_complete(struct acct_counter *c, struct counter_ext *e)
{
	const struct acct_domain *d = c->domain;
	int64_t b = e->shrink_to;

	if (b == 0)
		return;
	TEST_POINT(ACCT_TP_LOWERING);
	for (unsigned s = 0; s < d->topo->nr_shards; s++) {
		if (abs_u64(shard_settled(c, s) / 2) <= (uint64_t)(b - 1))
			continue;
		TEST_POINT(ACCT_TP_DRAIN);
		if (d->mode == ACCT_MODE_RSEQ)
			(void)drain_shard_rseq(c, e, s);
		else
			fold_cas(c, e, s, 0);
		if (abs_u64(shard_settled(c, s) / 2) > (uint64_t)(b - 1))
			return;
	}
	__atomic_store_n(&e->bound_batch, b, __ATOMIC_RELEASE);
	__atomic_store_n(&e->shrink_to, 0, __ATOMIC_RELAXED);
}

/* Set the batch of a sharded counter. Domain lock held. Returns true when a
 * lower batch needs lowering_fence() before shrink_try_complete(). */
static bool set_batch_locked(struct acct_counter *c, struct counter_ext *e, int64_t b)
{
	int64_t cur = batch_of_lim(__atomic_load_n(&c->lim, __ATOMIC_RELAXED));

	if (b >= cur) {
		/* Raise the reported bound before any residue may grow past it. */
		if (b > __atomic_load_n(&e->bound_batch, __ATOMIC_RELAXED))
			__atomic_store_n(&e->bound_batch, b, __ATOMIC_SEQ_CST);
		__atomic_store_n(&c->lim, 2 * (b - 1), __ATOMIC_SEQ_CST);
		if (e->shrink_to && b >= e->shrink_to)
			__atomic_store_n(&e->shrink_to, b, __ATOMIC_RELAXED);
		return false;
	}
	__atomic_store_n(&c->lim, 2 * (b - 1), __ATOMIC_SEQ_CST);
	__atomic_store_n(&e->shrink_to, b, __ATOMIC_RELAXED);
	return true;
}

/* After it no rseq commit that read an old limit can happen (the fence), and
 * no window that may have read one is still open (the grace period, I4). */
static void lowering_fence(const struct acct_domain *d)
{
	if (d->mode == ACCT_MODE_RSEQ)
		(void)acct_rseq_fence();
	acct_quiesce();
}

int acct_counter_set_budget(struct acct_counter *c, int64_t budget)
{
	struct acct_domain *d = c->domain;

	if (budget < 0)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	__atomic_store_n(&c->budget, budget, __ATOMIC_RELAXED);
	if (c->state != ACCT_STATE_COMPACT) {
		struct counter_ext *e = counter_ext(c);
		int64_t bmax = acct_batch_for_budget(budget, d->topo->nr_shards);
		int64_t cur = batch_of_lim(__atomic_load_n(&c->lim, __ATOMIC_RELAXED));
		int64_t b = __atomic_load_n(&d->auto_tune, __ATOMIC_RELAXED) ? MIN(cur, bmax) : bmax;
		if (set_batch_locked(c, e, b)) {
			lowering_fence(d);
			shrink_try_complete(c, e);
		}
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

struct tune_pass {
	struct acct_domain *d;
	uint64_t now_ns;
	bool auto_tune;
	bool phase_complete; /* second phase: complete shrinks after one fence */
	bool need_fence;
};

static void tune_one(const struct acct_pool_slot *slot, void *userdata)
{
	struct tune_pass *p = userdata;
	struct counter_ext *e = slot->ext;
	struct acct_counter *c = e->counter;
	int64_t bmax = acct_batch_for_budget(__atomic_load_n(&c->budget, __ATOMIC_RELAXED), p->d->topo->nr_shards);
	int64_t cur = batch_of_lim(__atomic_load_n(&c->lim, __ATOMIC_RELAXED));

	if (p->phase_complete) {
		shrink_try_complete(c, e);
		return;
	}
	uint64_t events = __atomic_load_n(&e->folds, __ATOMIC_RELAXED) + __atomic_load_n(&e->direct, __ATOMIC_RELAXED);
	uint64_t elapsed = p->now_ns - e->last_tune_ns;
	bool first = e->last_tune_ns == 0;
	int64_t want = cur;

	if (!p->auto_tune)
		want = bmax;
	else if (!first && elapsed > 0) {
		/* events per second, without overflow for any plausible count */
		uint64_t rate = (uint64_t)((unsigned __int128)(events - e->last_events) * 1000000000u / elapsed);
		if (rate > TUNE_GROW_RATE && cur < bmax) {
			want = cur > bmax / 2 ? bmax : cur * 2;
			__atomic_store_n(&e->tune_grows, e->tune_grows + 1, __ATOMIC_RELAXED);
		} else if (rate < TUNE_SHRINK_RATE && cur > 1) {
			want = cur / 2;
			__atomic_store_n(&e->tune_shrinks, e->tune_shrinks + 1, __ATOMIC_RELAXED);
		}
		want = MIN(want, bmax);
	} else
		want = MIN(cur, bmax);
	e->last_events = events;
	e->last_tune_ns = p->now_ns;
	if (want != cur && set_batch_locked(c, e, want))
		p->need_fence = true;
	if (e->shrink_to)
		p->need_fence = true;
}

void acct_domain_tune(struct acct_domain *d, uint64_t now_ns)
{
	struct tune_pass p = {
		.d = d,
		.now_ns = now_ns ?: 1,
		.auto_tune = __atomic_load_n(&d->auto_tune, __ATOMIC_RELAXED),
	};

	pthread_mutex_lock(&d->lock);
	acct_pool_foreach(d->pool, tune_one, &p);
	if (p.need_fence) {
		lowering_fence(d);
		p.phase_complete = true;
		acct_pool_foreach(d->pool, tune_one, &p);
	}
	d->tune_passes++;
	pthread_mutex_unlock(&d->lock);
}

/* ---- introspection ------------------------------------------------------- */

void acct_counter_stats(const struct acct_counter *c, struct acct_counter_stats *ret)
{
	const struct acct_domain *d = c->domain;
	int64_t budget = __atomic_load_n(&c->budget, __ATOMIC_RELAXED);
	int64_t base;

	*ret = (struct acct_counter_stats){
		.state = ACCT_STATE_COMPACT,
		.budget = budget,
		.batch_max = acct_batch_for_budget(budget, d->topo->nr_shards),
		.batch = 1,
	};
	if (!read_state(c, &base))
		return;
	const struct counter_ext *e = counter_ext(c);
	ret->state = __atomic_load_n(&c->state, __ATOMIC_RELAXED);
	ret->batch = batch_of_lim(__atomic_load_n(&c->lim, __ATOMIC_RELAXED));
	ret->bound = bound_for(c, __atomic_load_n(&e->bound_batch, __ATOMIC_RELAXED), d->topo->nr_shards);
	ret->folds = __atomic_load_n(&e->folds, __ATOMIC_RELAXED);
	ret->direct = __atomic_load_n(&e->direct, __ATOMIC_RELAXED);
	ret->tune_grows = __atomic_load_n(&e->tune_grows, __ATOMIC_RELAXED);
	ret->tune_shrinks = __atomic_load_n(&e->tune_shrinks, __ATOMIC_RELAXED);
	ret->shrink_pending = __atomic_load_n(&e->shrink_to, __ATOMIC_RELAXED) != 0;
	ret->upgraded = true;
}

void acct_domain_stats(struct acct_domain *d, struct acct_domain_stats *ret)
{
	pthread_mutex_lock(&d->lock);
	*ret = (struct acct_domain_stats){
		.mode = d->mode,
		.auto_tune = __atomic_load_n(&d->auto_tune, __ATOMIC_RELAXED),
		.nr_shards = d->topo->nr_shards,
		.nr_nodes = d->topo->nr_nodes,
		.counters = d->counters,
		.sharded = d->sharded,
		.upgrades = d->upgrades,
		.tune_passes = d->tune_passes,
		.compact_bytes = sizeof(struct acct_counter),
		.sharded_bytes = sizeof(struct acct_counter) + acct_pool_bytes_per_slot(d->pool),
		.pool_bytes = acct_pool_bytes(d->pool),
	};
	pthread_mutex_unlock(&d->lock);
}
