/* charge-slot.c - a charge slot's client side: mapping a slot that acctd
 * created, validating its header, and charging it. The layout, invariants
 * S1-S4 and the bound are in charge-slot.h. */
#include "charge-slot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/util.h"

#define PAGE 4096u

/* How a writer's slow path updates (struct acct_slot_writer.path). */
enum {
	PATH_RSEQ = 1,   /* rseq critical sections, spread over simulated shards */
	PATH_CAS = 2,    /* sched_getcpu() + compare-and-swap */
	PATH_DIRECT = 3, /* straight to node sums (rseq slot, no rseq here): S3 */
};

static inline int64_t wrap_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* Highest possible kernel CPU id + 1, from /sys/devices/system/cpu/possible
 * ("0-3,5"); sysconf() where that cannot be read. 0 when unknown. */
static unsigned possible_cpus(void)
{
	char buf[4096];
	unsigned highest = 0;
	bool any = false;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");

	if (f) {
		size_t k = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[k] = 0;
		for (char *s = buf; *s;) {
			if (*s < '0' || *s > '9') {
				s++;
				continue;
			}
			unsigned long v = strtoul(s, &s, 10);
			if (v >= UINT_MAX)
				return 0;
			highest = MAX(highest, (unsigned)v);
			any = true;
		}
		if (any)
			return highest + 1;
	}
	long n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 && n <= 65536 ? (unsigned)n : 0;
}

/* The header's geometry, checked against the descriptor's size. */
static int header_check(const struct acct_slot_header *h, uint64_t file_size)
{
	if (h->magic != ACCT_SLOT_MAGIC || h->header_size != sizeof(*h))
		return -EBADMSG;
	if (h->version != ACCT_SLOT_VERSION)
		return -EPROTO;
	if (h->shard_stride != ACCT_SHARD_STRIDE || h->node_stride != ACCT_SLOT_NODE_STRIDE ||
	    (h->mode != ACCT_SLOT_MODE_RSEQ && h->mode != ACCT_SLOT_MODE_CAS))
		return -EPROTO;
	if (h->total_size != file_size || h->total_size > SIZE_MAX || h->nr_shards == 0 || h->nr_shards > 65536 ||
	    h->nr_nodes == 0 || h->nr_nodes > h->nr_shards || h->nr_real_cpus == 0 || h->nr_real_cpus > 65536)
		return -EBADMSG;
	/* The batch as counter.h derives it, b <= floor(E / S) + 1, so that the
	 * bound S * (b - 1) stays within the budget (and 2 * b within int64). */
	if (h->budget < 0 || h->batch < 1 || h->batch - 1 > h->budget / (int64_t)h->nr_shards)
		return -EBADMSG;
	/* Each region inside the file, in order, without overlap; sizes are
	 * bounded above, so none of these sums overflows. */
	uint64_t table_end = h->table_offset + (uint64_t)h->nr_shards * sizeof(uint16_t);
	uint64_t shards_end = h->shards_offset + (uint64_t)h->nr_shards * ACCT_SHARD_STRIDE;
	uint64_t nodes_end = h->nodes_offset + (uint64_t)h->nr_nodes * ACCT_SLOT_NODE_STRIDE;
	if (h->table_offset < sizeof(*h) || h->table_offset > file_size || table_end > h->shards_offset ||
	    h->shards_offset > file_size || h->shards_offset % PAGE != 0 || shards_end > h->nodes_offset ||
	    h->nodes_offset > file_size || h->nodes_offset % ACCT_SLOT_NODE_STRIDE != 0 || nodes_end > file_size)
		return -EBADMSG;
	return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_slot_writer *, acct_slot_unmap);

int acct_slot_map(int fd, struct acct_slot_writer **ret)
{
	_cleanup_(acct_slot_unmapp) struct acct_slot_writer *w = NULL;
	struct acct_slot_header h;
	struct stat st;
	int r;

	if (fd < 0)
		return -EBADF;
	if (fstat(fd, &st) < 0)
		return -errno;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return -errno;
	if (!(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (st.st_size < (off_t)sizeof(h) || (uint64_t)st.st_size > SIZE_MAX)
		return -EBADMSG;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	w->map = m;
	w->size = (size_t)st.st_size;

	memcpy(&h, m, sizeof(h));
	r = header_check(&h, (uint64_t)st.st_size);
	if (r < 0)
		return r;
	w->shard_node = malloc((size_t)h.nr_shards * sizeof(uint16_t));
	if (!w->shard_node)
		return -ENOMEM;
	memcpy(w->shard_node, (char *)m + h.table_offset, (size_t)h.nr_shards * sizeof(uint16_t));
	for (unsigned s = 0; s < h.nr_shards; s++)
		if (w->shard_node[s] >= h.nr_nodes)
			return -EBADMSG;

	w->shard0 = (char *)m + h.shards_offset;
	w->node0 = (char *)m + h.nodes_offset;
	w->lim = 2 * (h.batch - 1);
	w->nr_shards = h.nr_shards;
	w->nr_nodes = h.nr_nodes;
	w->nr_real_cpus = h.nr_real_cpus;
	w->spread = h.nr_shards / h.nr_real_cpus;
	if (h.mode == ACCT_SLOT_MODE_CAS)
		w->path = PATH_CAS;
	else {
		/* The rseq section indexes shards by the kernel's CPU id without a
		 * check: take it only where every id this machine may report
		 * falls inside the slot (S3 otherwise: node sums only). */
		unsigned cpus = possible_cpus();
		bool fits = cpus > 0 && cpus <= h.nr_real_cpus && w->spread > 0;
		w->path = fits && acct_rseq_usable() ? PATH_RSEQ : PATH_DIRECT;
		w->inline_ok = w->path == PATH_RSEQ && w->spread == 1;
	}
	*ret = TAKE_PTR(w);
	return 0;
}

struct acct_slot_writer *acct_slot_unmap(struct acct_slot_writer *w)
{
	if (!w)
		return NULL;
	if (w->map)
		(void)munmap(w->map, w->size);
	free(w->shard_node);
	free(w);
	return NULL;
}

static unsigned salt_next;
static _Thread_local unsigned thread_salt = UINT_MAX;

/* A per-thread number spreading threads over the simulated shards of their
 * real CPU, as counter.c does (topology.h, acct_topology_shard_of()). */
static unsigned my_salt(void)
{
	if (unlikely(thread_salt == UINT_MAX))
		thread_salt = __atomic_fetch_add(&salt_next, 1, __ATOMIC_RELAXED) & 0xffff;
	return thread_salt;
}

/* acct_topology_shard_of() on the slot's geometry (this side has no topology
 * object): congruent to cpu modulo the real CPUs whenever spread >= 1. */
static unsigned shard_of(const struct acct_slot_writer *w, unsigned cpu)
{
	if (w->spread == 0)
		return (cpu + my_salt()) % w->nr_shards;
	return cpu % w->nr_real_cpus + w->nr_real_cpus * (my_salt() % w->spread);
}

static int64_t *shard_word(const struct acct_slot_writer *w, unsigned shard)
{
	return (int64_t *)(w->shard0 + (size_t)shard * ACCT_SHARD_STRIDE);
}

static void node_add(const struct acct_slot_writer *w, unsigned shard, int64_t delta)
{
	int64_t *sum = (int64_t *)(w->node0 + (size_t)w->shard_node[shard] * ACCT_SLOT_NODE_STRIDE);
	/* Release: a reader that sees this sees the shard flagged (S2, S4). */
	__atomic_fetch_add(sum, delta, __ATOMIC_SEQ_CST);
}

/* Does 2 * delta fit within lim at all? */
static bool delta_fits(int64_t delta, int64_t lim)
{
	return (uint64_t)delta + (uint64_t)(lim >> 1) <= (uint64_t)lim;
}

/* S2: finish a fold that flagged `shard`, whose word was `word`. */
static void fold_commit(const struct acct_slot_writer *w, unsigned shard, int64_t word, int64_t delta)
{
	node_add(w, shard, wrap_add(word / 2, delta));
	__atomic_store_n(shard_word(w, shard), 0, __ATOMIC_RELEASE);
}

#if ACCT_HAVE_RSEQ_ASM
static void add_rseq(struct acct_slot_writer *w, int64_t delta)
{
	size_t offset = w->spread <= 1 ? 0 : (size_t)(my_salt() % w->spread) * w->nr_real_cpus * ACCT_SHARD_STRIDE;
	unsigned cpu;

	if (delta_fits(delta, w->lim) && acct_rseq_shard_add(w->shard0 + offset, &w->lim, delta * 2))
		return;
	/* Fold the shard of the CPU we are on now (any shard may fold at any time). */
	int64_t word = acct_rseq_shard_grab(w->shard0 + offset, &cpu);
	unsigned shard = cpu + (unsigned)(offset / ACCT_SHARD_STRIDE);
	if (word & 1)
		node_add(w, shard, delta); /* another fold owns it: exact anyway */
	else
		fold_commit(w, shard, word, delta);
}
#endif

static void add_cas(struct acct_slot_writer *w, int64_t delta)
{
	unsigned shard = shard_of(w, acct_current_cpu());
	int64_t *word = shard_word(w, shard);
	int64_t v = __atomic_load_n(word, __ATOMIC_RELAXED);

	for (;;) {
		if (v & 1) {
			node_add(w, shard, delta);
			return;
		}
		if (delta_fits(delta, w->lim) && abs_u64(wrap_add(v, 2 * delta)) <= (uint64_t)w->lim) {
			if (__atomic_compare_exchange_n(word, &v, wrap_add(v, 2 * delta), true, __ATOMIC_RELEASE,
							__ATOMIC_RELAXED))
				return;
			continue;
		}
		/* Fold: take the shard with the flag (S2). */
		if (__atomic_compare_exchange_n(word, &v, 1, true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			fold_commit(w, shard, v, delta);
			return;
		}
	}
}

void acct_slot_add_slow(struct acct_slot_writer *w, int64_t delta)
{
	switch (w->path) {
#if ACCT_HAVE_RSEQ_ASM
	case PATH_RSEQ:
		add_rseq(w, delta);
		return;
#endif
	case PATH_CAS:
		add_cas(w, delta);
		return;
	default:
		node_add(w, shard_of(w, acct_current_cpu()), delta);
		return;
	}
}
