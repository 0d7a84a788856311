/* charge-slot-owner.c - creating a charge slot and reading it without
 * trusting it. The contract is in charge-slot-owner.h, the layout, the
 * invariants S1-S4 and the bound in charge-slot.h. */
#include "charge-slot-owner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/util.h"

#define PAGE 4096u
#define SLOT_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static size_t round_page(size_t n)
{
	return (n + PAGE - 1) / PAGE * PAGE;
}

static inline int64_t wrap_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

struct acct_slot_owner {
	int fd;
	char *map;
	size_t size;
	/* acctd's own copy of the geometry: never read back from the slot. */
	size_t shards_offset, nodes_offset;
	unsigned nr_shards, nr_nodes;
	int64_t lim;
};

/* The layout of a geometry (charge-slot.h): offsets and size into o. */
static void layout(struct acct_slot_owner *o, unsigned nr_shards, unsigned nr_nodes, int64_t batch)
{
	size_t table = round_page(sizeof(struct acct_slot_header) + (size_t)nr_shards * sizeof(uint16_t));
	size_t shards = (size_t)nr_shards * ACCT_SHARD_STRIDE;
	size_t nodes = round_page((size_t)nr_nodes * ACCT_SLOT_NODE_STRIDE);

	o->size = table + shards + nodes;
	o->shards_offset = table;
	o->nodes_offset = table + shards;
	o->nr_shards = nr_shards;
	o->nr_nodes = nr_nodes;
	o->lim = 2 * (batch - 1);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_topology *, acct_topology_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_slot_owner *, acct_slot_owner_free);

int acct_slot_create(const struct acct_slot_options *opts, struct acct_slot_owner **ret)
{
	_cleanup_(acct_topology_freep) struct acct_topology *topo = NULL;
	_cleanup_(acct_slot_owner_freep) struct acct_slot_owner *o = NULL;
	enum acct_update_mode mode;
	int r;

	if (!opts || opts->budget < 0 || opts->mode > ACCT_MODE_FALLBACK)
		return -EINVAL;
	r = opts->topology ? acct_topology_dup(opts->topology, &topo) : acct_topology_detect(&topo);
	if (r < 0)
		return r;
	if (topo->nr_real_cpus == 0 || topo->nr_nodes == 0)
		return -EINVAL;
	mode = opts->mode;
	if (mode == ACCT_MODE_AUTO)
		mode = acct_rseq_usable() && acct_topology_spread(topo) > 0 ? ACCT_MODE_RSEQ : ACCT_MODE_FALLBACK;
	/* rseq needs every shard owned by one real CPU (counter.c does the same). */
	if (mode == ACCT_MODE_RSEQ && (!acct_rseq_usable() || acct_topology_spread(topo) == 0))
		return -EOPNOTSUPP;

	int64_t batch = acct_batch_for_budget(opts->budget, topo->nr_shards);

	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->fd = -EBADF;
	layout(o, topo->nr_shards, topo->nr_nodes, batch);

	o->fd = memfd_create("acctd-charge-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (o->fd < 0)
		return -errno;
	if (ftruncate(o->fd, (off_t)o->size) < 0)
		return -errno;
	void *m = mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	o->map = m;

	/* Plain stores: no client maps the slot before the descriptor is sent,
	 * and sending it orders these stores before the client's loads. */
	struct acct_slot_header *h = m;
	*h = (struct acct_slot_header){
		.magic = ACCT_SLOT_MAGIC,
		.version = ACCT_SLOT_VERSION,
		.header_size = sizeof(*h),
		.total_size = o->size,
		.table_offset = sizeof(*h),
		.shards_offset = o->shards_offset,
		.nodes_offset = o->nodes_offset,
		.shard_stride = ACCT_SHARD_STRIDE,
		.node_stride = ACCT_SLOT_NODE_STRIDE,
		.nr_shards = topo->nr_shards,
		.nr_nodes = topo->nr_nodes,
		.nr_real_cpus = topo->nr_real_cpus,
		.mode = mode == ACCT_MODE_RSEQ ? ACCT_SLOT_MODE_RSEQ : ACCT_SLOT_MODE_CAS,
		.budget = opts->budget,
		.batch = batch,
		.id = opts->id,
	};
	memcpy(o->map + sizeof(*h), topo->shard_node, (size_t)topo->nr_shards * sizeof(uint16_t));
	if (fcntl(o->fd, F_ADD_SEALS, SLOT_SEALS) < 0)
		return -errno;
	*ret = TAKE_PTR(o);
	return 0;
}

/* Far above any machine's (topology.h): a geometry beyond is not acctd's. */
#define ADOPT_SHARDS_MAX 65536u
#define ADOPT_NODES_MAX 4096u

int acct_slot_adopt(int fd, const struct acct_slot_geometry *g, uint64_t id, struct acct_slot_owner **ret)
{
	_cleanup_(acct_slot_owner_freep) struct acct_slot_owner *o = NULL;
	struct stat st;

	if (!g || g->nr_shards == 0 || g->nr_shards > ADOPT_SHARDS_MAX || g->nr_nodes == 0 ||
	    g->nr_nodes > ADOPT_NODES_MAX || g->batch < 1 || g->batch > ACCT_SLOT_VALUE_MAX)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->fd = -EBADF;
	layout(o, g->nr_shards, g->nr_nodes, g->batch);
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size != o->size)
		return -EBADF;
	/* Sealed against shrinking and growing: the size cannot change from
	 * here on, so a mapping of it never faults. */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EPERM;
	void *m = mmap(NULL, o->size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	o->map = m;
	const struct acct_slot_header *h = m;
	if (__atomic_load_n(&h->magic, __ATOMIC_RELAXED) != ACCT_SLOT_MAGIC ||
	    __atomic_load_n(&h->id, __ATOMIC_RELAXED) != id)
		return -EBADMSG;
	*ret = TAKE_PTR(o);
	return 0;
}

void acct_slot_owner_geometry(const struct acct_slot_owner *o, struct acct_slot_geometry *ret)
{
	*ret = (struct acct_slot_geometry){
		.nr_shards = o->nr_shards,
		.nr_nodes = o->nr_nodes,
		.batch = o->lim / 2 + 1,
	};
}

struct acct_slot_owner *acct_slot_owner_free(struct acct_slot_owner *o)
{
	if (!o)
		return NULL;
	if (o->map)
		(void)munmap(o->map, o->size);
	if (o->fd >= 0)
		(void)close(o->fd);
	free(o);
	return NULL;
}

int acct_slot_owner_fd(const struct acct_slot_owner *o)
{
	return o->fd;
}

int acct_slot_owner_take_fd(struct acct_slot_owner *o)
{
	return TAKE_FD(o->fd);
}

size_t acct_slot_owner_size(const struct acct_slot_owner *o)
{
	return o->size;
}

void *acct_slot_owner_memory(const struct acct_slot_owner *o)
{
	return o->map;
}

int acct_slot_read(const struct acct_slot_owner *o, struct acct_reading *ret)
{
	/* Node sums may wrap individually (a client that charges on one node and
	 * releases on another moves them apart forever): sum them modulo 2^64,
	 * as the engine does, and judge only the total. */
	int64_t nodes = 0;
	for (unsigned n = 0; n < o->nr_nodes; n++) {
		const int64_t *p = (const int64_t *)(o->map + o->nodes_offset + (size_t)n * ACCT_SLOT_NODE_STRIDE);
		nodes = wrap_add(nodes, __atomic_load_n(p, __ATOMIC_RELAXED));
	}
	/* S4: pairs with the release of a fold's node add. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);

	/* Each accepted residue is within batch - 1 (S1), so their sum is within
	 * S * (batch - 1) <= budget: it cannot overflow. */
	int64_t residues = 0;
	for (unsigned s = 0; s < o->nr_shards; s++) {
		const int64_t *p = (const int64_t *)(o->map + o->shards_offset + (size_t)s * ACCT_SHARD_STRIDE);
		int64_t w = __atomic_load_n(p, __ATOMIC_RELAXED);
		if (w & 1) {
			if (w != 1)
				return -EBADMSG; /* a flag carries no residue */
			continue;
		}
		if (abs_u64(w) > (uint64_t)o->lim)
			return -EBADMSG; /* past the batch: S1 broken */
		residues += w / 2;
	}

	int64_t total;
	if (__builtin_add_overflow(nodes, residues, &total) || total > ACCT_SLOT_VALUE_MAX ||
	    total < -ACCT_SLOT_VALUE_MAX)
		return -EBADMSG;
	*ret = (struct acct_reading){
		.value = total,
		.bound = (uint64_t)(o->lim / 2) * o->nr_shards,
	};
	return 0;
}
