/* charge-slot-owner.h - acctd's side of a charge slot (charge-slot.h):
 * creating the sealed memfd and reading what a client charged into it,
 * trusting none of it (charge-slot.h, "Trust"; invariants S1-S4).
 *
 * How acctd serves one (the OpenChargeSlot method): check the resource and
 * the caller's right to the cgroup as Charge does; acct_slot_create() with the
 * resource's error budget (the slot's bound is its own: a charge engine that
 * keeps one budget for a whole tree counts each slot's bound against it);
 * answer with api_reply_fd(rq, {"slot": 0}, acct_slot_owner_take_fd()),
 * which sends the memfd with the reply and closes it (acctd keeps no
 * descriptor per slot, so slots do not eat its descriptor limit); keep the owner with the client's
 * charges, and on each pass add acct_slot_read()'s value (a slot's running
 * total, so the engine applies the difference since the last read) with its
 * bound. A read that fails with -EBADMSG means the client wrote garbage into
 * its own slot: drop the slot (log it once) and keep the last good value or
 * release it, as the resource's configuration says; nothing else is
 * affected. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "charge-slot.h"
#include "counter.h"
#include "topology.h"

struct acct_slot_options {
	const struct acct_topology *topology; /* NULL: this machine's; copied */
	enum acct_update_mode mode;           /* AUTO: rseq where acctd can use it */
	int64_t budget;                       /* error budget E, >= 0 */
	uint64_t id;                          /* written into the header (acct_slot_adopt()) */
};

/* What acctd must know of a slot to read it, kept by acctd (its state file
 * across a restart), never read back from the slot: the layout follows from
 * it (charge-slot.h). */
struct acct_slot_geometry {
	uint32_t nr_shards, nr_nodes;
	int64_t batch; /* >= 1 */
};

struct acct_slot_owner;

/* Create a slot: a sealed memfd of charge-slot.h's layout, mapped shared, header
 * written, every counter word 0. Returns 0, -EINVAL (negative budget, bad
 * mode), -EOPNOTSUPP (ACCT_MODE_RSEQ without rseq, or a topology whose shards
 * real CPUs cannot own), -ENOMEM, or the errno of memfd_create(), ftruncate(),
 * mmap() or fcntl(F_ADD_SEALS). Cost: those system calls; the pages are
 * allocated as they are touched. */
int acct_slot_create(const struct acct_slot_options *opts, struct acct_slot_owner **ret);

/* Take up again a slot that this acctd or an earlier one created, from its
 * memfd `fd` (not consumed: acctd keeps no descriptor per slot) and the
 * geometry and id acctd kept of it (a restart under systemd's descriptor
 * store: docs/charges.md, "Durability"). Trusts nothing of the descriptor:
 * -EBADF unless it is a regular file of exactly the size the geometry
 * gives, -EPERM unless sealed against shrinking and growing (a shrink would
 * fault acctd), -EINVAL for a geometry out of range, -EBADMSG when the
 * header's magic or id is not acctd's (a client that rewrote its own header
 * loses its slot, nothing else); else 0 with a read-only mapping in *ret, read
 * with acct_slot_read() as a created slot, its values checked as always.
 * Cost: fstat(), fcntl(), mmap(). */
int acct_slot_adopt(int fd, const struct acct_slot_geometry *g, uint64_t id, struct acct_slot_owner **ret);

/* The geometry acctd keeps of slot o (to adopt it after a restart). */
void acct_slot_owner_geometry(const struct acct_slot_owner *o, struct acct_slot_geometry *ret);

/* Unmap, close and free; accepts NULL; returns NULL. A client's mapping stays
 * valid (the memfd lives while anyone maps it). */
struct acct_slot_owner *acct_slot_owner_free(struct acct_slot_owner *o);

/* The memfd, owned by the slot (dup it, or send it with SCM_RIGHTS, which
 * dups); -EBADF once taken. */
int acct_slot_owner_fd(const struct acct_slot_owner *o);

/* Take the memfd out of the slot (the caller owns it from then on; -EBADF
 * when already taken). The slot keeps its mapping, which is all a read
 * needs: acctd hands the descriptor to the reply that sends it
 * (api_reply_fd()) and so holds no descriptor per slot, only a mapping. */
int acct_slot_owner_take_fd(struct acct_slot_owner *o);

/* Bytes the memfd spans, and its mapping (for tests that play a hostile client). */
size_t acct_slot_owner_size(const struct acct_slot_owner *o);
void *acct_slot_owner_memory(const struct acct_slot_owner *o);

/* Read the slot: value = node sums + shard residues, bound = S * (batch - 1)
 * (S4). Returns 0 and *ret, or -EBADMSG when a word is impossible (corrupt
 * slot, charge-slot.h "Trust"; *ret untouched). Never faults, never waits, takes no
 * lock. Cost: O(shards + nodes) relaxed loads. */
int acct_slot_read(const struct acct_slot_owner *o, struct acct_reading *ret);
