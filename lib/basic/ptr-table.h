/* ptr-table.h - a hash table of pointers, keyed by what they point to: the
 * one index acctd's modules share (cgroups by path and watches by
 * descriptor in discovery, the history's lives by path and inode, the lines
 * `acctctl watch` has shown by path).
 *
 * Open addressing with linear probing, at most half full, grown by doubling;
 * removal shifts the later members of a probe run back into the hole
 * (backward-shift deletion, no tombstones), so lookups stay short however
 * many entries come and go. Each slot holds the pointer and its 64-bit hash:
 * a probe compares hashes first and calls the caller's equality only on a
 * match, and growth never hashes a key again.
 *
 * The caller hashes (hash.h; spread the bits with hash_mix64(): the slot is
 * the hash's low bits) and owns the entries: the table holds pointers only.
 * Not thread-safe. A zeroed struct ptr_table is an empty table. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ptr_table_slot {
	uint64_t hash;
	void *p; /* NULL: empty */
};

struct ptr_table {
	struct ptr_table_slot *slots;
	size_t mask; /* capacity - 1; capacity is 0 or a power of two (at least 64) */
	size_t n;    /* entries */
};

/* Whether entry p has key `key` (whatever the caller looks up by). */
typedef bool (*ptr_table_eq_fn)(const void *p, const void *key);

/* The entry with hash `hash` for which eq(entry, key), or NULL. O(1)
 * expected: a probe run of a half-full table. */
void *ptr_table_find(const struct ptr_table *t, uint64_t hash, ptr_table_eq_fn eq, const void *key);

/* Add p (not NULL, not already present) under `hash`. Returns 0, or -ENOMEM
 * with the table unchanged. O(1) amortised; a growth rehashes nothing (the
 * hashes are kept) but moves every entry. */
int ptr_table_insert(struct ptr_table *t, uint64_t hash, void *p);

/* Remove the entry that is exactly p (found through `hash`, the one it was
 * inserted with); nothing if absent. Never shrinks the table. O(1) expected. */
void ptr_table_remove(struct ptr_table *t, uint64_t hash, const void *p);

/* Call free_entry (if not NULL) on every entry, free the slots and leave an
 * empty table. */
void ptr_table_clear(struct ptr_table *t, void (*free_entry)(void *p));

/* Walking every entry: slots 0 to ptr_table_capacity() - 1, each holding an
 * entry or NULL (ptr_table_at()). Removing the entry at slot i may shift a
 * later one into i: look at i again. A removal can also shift the entry of
 * slot 0 (already seen) into the last slot, so a walk that removes may see an
 * entry twice; it never misses one. */
static inline size_t ptr_table_capacity(const struct ptr_table *t)
{
	return t->slots ? t->mask + 1 : 0;
}

static inline void *ptr_table_at(const struct ptr_table *t, size_t i)
{
	return t->slots[i].p;
}
