/* charge-slot.h - a counter that lives in shared memory, written by a client
 * process and read by acctd: the shared-memory charging path of issue 32.
 *
 * acctd creates a slot (a memfd, sealed against shrinking, growing and further
 * sealing) for one (resource, cgroup) and passes its descriptor to a client.
 * The client maps it and charges with the counter engine's own per-CPU update
 * (counter.h): a residue per CPU shard, folded into its NUMA node's sum when it
 * would leave +/- (batch - 1). No system call per charge. acctd reads the slot
 * by summing node sums and shards, and gets a value with a bound.
 *
 * Layout (offsets in the header; acctd never reads them back):
 *
 *   header   struct acct_slot_header, then the shard -> node table (uint16 per
 *            shard), rounded up to a page
 *   shards   one page per shard; the shard word is the page's first 8 bytes,
 *            so that shard k's word is at shards + k * ACCT_SHARD_STRIDE and
 *            the engine's rseq critical section (rseq.h) serves unchanged.
 *            Pages of a memfd are allocated on first touch, by the CPU that
 *            first charges, so a slot costs a page per CPU that charges it
 *            (and lands on that CPU's node under the default policy).
 *   nodes    one cache line per node holding its node sum
 *
 * Shard words are encoded as the engine's (rseq.h): 2r, or 1 while a fold
 * owns the shard. The invariants, cited below as S1-S4:
 *
 *  S1. Every store of 2r keeps |2r| <= lim = 2 * (batch - 1); batch is fixed
 *      when the slot is created (no budget changes, no tuner: a lowering would
 *      need every client process to quiesce).
 *  S2. A fold flags its shard (1), adds residue + delta to the node sum with a
 *      release read-modify-write, then stores 0 with release. At most one fold
 *      owns a shard, and it holds at most that shard's residue (<= batch - 1)
 *      outside both shard and node sums. A client killed inside a fold
 *      leaves its shard flagged for good (later charges on it go straight to
 *      the node sum) and that residue lost: within the bound.
 *  S3. All writers of one slot use the slot's mode: rseq (a shard is written
 *      only from its CPU inside a critical section, or by the fold owning it)
 *      or compare-and-swap (every write a CAS or the fold owner's). A client
 *      that cannot use rseq on an rseq slot adds straight to node sums, which
 *      never touches a shard. Mixing plain rseq stores with CAS on one shard
 *      would lose updates.
 *  S4. acctd reads node sums first, then (after an acquire fence) shards: a
 *      residue whose fold it saw in a node sum is flagged or gone from its
 *      shard (S2), so nothing is counted twice, and at most the residues of
 *      folds in flight, one per shard, are missed.
 *
 * Bound. By S1 and S4, with S shards,
 *
 *     |value - exact| <= S * (batch - 1) <= budget
 *
 * where exact is every charge that returned before the read began plus any
 * subset of those running concurrently; with no charge running (quiesced) the
 * read is exact.
 *
 * Trust. The client owns the memory and may write anything anywhere, at any
 * time. acctd therefore keeps its own copy of the geometry (it never reads a
 * size, offset, index or pointer from the slot), reads every word with a
 * relaxed atomic load (data-race free however the client writes), and checks
 * every value: a shard word must be 1 or even with |word| <= lim, and the total
 * must lie within +/- ACCT_SLOT_VALUE_MAX. Anything else makes the read fail
 * with -EBADMSG: the slot is corrupt and acctd may drop it. A client can harm
 * only its own slot (its own memfd); the seals keep acctd's mapping from ever
 * faulting (SIGBUS) on a truncated file.
 *
 * acctd's side (create, read) is charge-slot-owner.h; this module is the
 * layout and the client's side, and builds without libnuma so that
 * libacct-client can carry it.
 *
 * Thread safety: acct_slot_add() from any thread of any process that mapped
 * the slot, concurrently with each other and with acct_slot_read(). Create,
 * map, free and unmap require that no other thread uses that object. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rseq.h"

#define ACCT_SLOT_MAGIC UINT64_C(0x544f4c5354434341) /* "ACCTSLOT" little-endian */
#define ACCT_SLOT_VERSION 1u
#define ACCT_SLOT_NODE_STRIDE 64u
/* The largest total a slot may hold, +/- 2^62 - 1 (4 EiB in bytes): any real
 * resource is far below it, and a total beyond it is taken as corruption. */
#define ACCT_SLOT_VALUE_MAX (INT64_MAX / 2)

enum acct_slot_mode {
	ACCT_SLOT_MODE_RSEQ = 1, /* shards written in rseq critical sections */
	ACCT_SLOT_MODE_CAS = 2,  /* shards written with compare-and-swap */
};

/* What acctd writes at offset 0, once, before it passes the descriptor on.
 * Little-endian host layout; the client validates it (acct_slot_map()). */
struct acct_slot_header {
	uint64_t magic;       /* ACCT_SLOT_MAGIC */
	uint32_t version;     /* ACCT_SLOT_VERSION */
	uint32_t header_size; /* sizeof(struct acct_slot_header) */
	uint64_t total_size;  /* the memfd's size */
	uint64_t table_offset;  /* uint16 node of each shard */
	uint64_t shards_offset; /* shard k's word at shards_offset + k * shard_stride */
	uint64_t nodes_offset;  /* node n's sum at nodes_offset + n * node_stride */
	uint32_t shard_stride;  /* ACCT_SHARD_STRIDE */
	uint32_t node_stride;   /* ACCT_SLOT_NODE_STRIDE */
	uint32_t nr_shards;
	uint32_t nr_nodes;
	uint32_t nr_real_cpus; /* kernel CPU ids are below this */
	uint32_t mode;         /* enum acct_slot_mode */
	int64_t budget;        /* E */
	int64_t batch;         /* acct_batch_for_budget(E, nr_shards) */
	uint64_t id;           /* acctd's name of the slot, kept across its restarts */
};

/* ---- the client's side ------------------------------------------------------- */

/* A client's mapping. Fields are private to charge-slot.c and the inline fast
 * path below. */
struct acct_slot_writer {
	char *shard0;       /* shard 0's word in the mapping */
	int64_t lim;        /* 2 * (batch - 1), a private copy (S1) */
	uint32_t inline_ok; /* the inline rseq path may run */
	uint32_t path;      /* how acct_slot_add_slow() updates */
	char *node0;
	unsigned nr_shards, nr_nodes, nr_real_cpus, spread;
	uint16_t *shard_node; /* private copy of the table */
	void *map;
	size_t size;
};

/* Map the slot in descriptor `fd` (not consumed: close it after) and validate
 * its header: -EBADMSG for a wrong magic or header size, sizes that disagree
 * with the descriptor's, or a geometry or table that does not fit; -EPROTO for
 * another version, mode or stride; -EPERM when the memfd is not sealed against
 * shrinking (a shrink would fault this process); -ENOMEM; the errno of
 * fstat(), fcntl() or mmap(). The header is copied before it is checked, so a
 * concurrent writer cannot make the checks lie. Cost: those system calls. */
int acct_slot_map(int fd, struct acct_slot_writer **ret);

/* Unmap and free; accepts NULL; returns NULL. */
struct acct_slot_writer *acct_slot_unmap(struct acct_slot_writer *w);

/* Everything the inline path below does not handle: folds, simulated
 * topologies, compare-and-swap slots, clients without rseq. */
void acct_slot_add_slow(struct acct_slot_writer *w, int64_t delta);

/* Charge `delta` (signed). Never loses a charge; never makes a system call.
 * Cost: the engine's (counter.h): on an rseq slot on the real topology a plain
 * add inside an rseq critical section, about a nanosecond; a fold (one atomic
 * add to the node's line) every ~batch/|delta| charges; a compare-and-swap on
 * a CPU-local line on a CAS slot; a shared atomic add when this process cannot
 * use rseq on an rseq slot. The total must stay within +/- ACCT_SLOT_VALUE_MAX
 * or acctd reports the slot corrupt. */
static inline void acct_slot_add(struct acct_slot_writer *w, int64_t delta)
{
#if ACCT_HAVE_RSEQ_ASM
	int64_t delta2;
	if (__builtin_expect(w->inline_ok, 1) && __builtin_expect(!__builtin_add_overflow(delta, delta, &delta2), 1) &&
	    __builtin_expect(acct_rseq_shard_add(w->shard0, &w->lim, delta2), 1))
		return;
#endif
	acct_slot_add_slow(w, delta);
}
