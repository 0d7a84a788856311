/* charges-state.h - the charges' state file (docs/charges.md, "Durability"):
 * what acctd keeps of the programs' charges across a restart, as bytes, and
 * the strict parser that reads it back. Pure: no I/O, no daemon state.
 *
 * The file is one header line and a JSON document:
 *
 *     acctd-charges 1 LENGTH CRC32\n
 *     {"resources":[{"name":"gpu","unit":"bytes","charges":[["/a/b",4096],...]},...]}
 *
 * LENGTH is the document's size in bytes (decimal) and CRC32 its zlib crc32
 * (8 lowercase hex digits): a truncated, extended or altered file is told
 * from a good one before anything of it is believed. Each charge is a
 * cgroup's own charged value (its subtree's is rebuilt by charging it
 * again). The parser takes all of a file or nothing. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The file format's version in the header line. */
#define CHARGES_STATE_VERSION 1

/* The largest magnitude of a charged value (the engine's range, charges.h). */
#define CHARGES_STATE_VALUE_MAX ((int64_t)1 << 62)

struct charges_state_entry {
	char *path;    /* a normalised cgroup path, "/" the root */
	int64_t value; /* the cgroup's own charged value */
};

struct charges_state_resource {
	char *name;
	char *unit; /* as the configuration spells it: "bytes", "count", "seconds" */
	struct charges_state_entry *entries;
	size_t nr_entries, cap_entries;
};

/* A charge slot kept in systemd's descriptor store across a restart
 * (docs/charges.md, "Durability"): what acctd needs to take it up again,
 * all of it acctd's own (never read from the slot). A slot is written only
 * where acctd stores slots; a file without any has no "slots" member, as
 * before slots were kept:
 *
 *     "slots":[[ID,"RESOURCE","/a/b",FOLDED,PID,NR_SHARDS,NR_NODES,BATCH],...]
 */
struct charges_state_slot {
	int64_t id;       /* > 0: the id in the slot's header and its descriptors' names */
	char *resource;
	char *path;       /* a normalised cgroup path */
	int64_t folded;   /* of the slot's total, what the saved charges hold (0 for a
			   * release_on_exit resource, whose charges are not saved) */
	int64_t pid;      /* who opened it, > 0 (the log; liveness without a pidfd) */
	int64_t nr_shards, nr_nodes, batch; /* its geometry (charge-slot-owner.h) */
};

/* Zero-initialise; charges_state_clear() frees what it holds. */
struct charges_state {
	struct charges_state_resource *resources;
	size_t nr_resources, cap_resources;
	struct charges_state_slot *slots;
	size_t nr_slots, cap_slots;
};

/* Free everything s holds and zero it. Accepts an empty state. */
void charges_state_clear(struct charges_state *s);

/* Append a resource; its index to *ret_index (may be NULL). Returns 0,
 * -EEXIST for a name already there, -EINVAL for an empty name or unit, or
 * -ENOMEM (nothing added). */
int charges_state_add_resource(struct charges_state *s, const char *name, const char *unit, size_t *ret_index);

/* Append the charge `value` of cgroup `path` to resource `res`. No check of
 * duplicates here (the parser checks them; the daemon adds each cgroup once).
 * Returns 0, -EINVAL (bad index, a path not starting with "/", a value out
 * of +-CHARGES_STATE_VALUE_MAX) or -ENOMEM. */
int charges_state_add_entry(struct charges_state *s, size_t res, const char *path, int64_t value);

/* Append a slot (copied). Returns 0, -EINVAL (an id or pid <= 0, an empty
 * resource, a path not starting with "/", folded out of
 * +-CHARGES_STATE_VALUE_MAX, a geometry <= 0) or -ENOMEM. */
int charges_state_add_slot(struct charges_state *s, const struct charges_state_slot *slot);

/* The file's bytes for s into *ret (NUL-terminated for convenience, not
 * counted in *ret_len). Returns 0 or -ENOMEM (nothing written). */
int charges_state_serialise(const struct charges_state *s, char **ret, size_t *ret_len);

/* Parse the file data[0..len) into *ret (empty on entry; zeroed on failure).
 * Returns 0, or -EBADMSG with a one-line reason in reason[0..size) for any
 * damage: a header that is not exactly as above, a version other than
 * CHARGES_STATE_VERSION, a length other than what follows the header, a
 * wrong checksum, JSON that does not parse to its end, a member missing,
 * unknown or of the wrong type, a path that is not normalised, a value out
 * of range or not an integer, a resource or a cgroup of a resource twice,
 * a slot that charges_state_add_slot() refuses or an id twice. -ENOMEM when
 * out of memory. */
int charges_state_parse(const char *data, size_t len, struct charges_state *ret, char *reason, size_t size);
