/* cgroup-census.h - a summary of which cgroups a hierarchy holds, by id, that
 * two observers can compare instead of comparing their lists.
 *
 * Discovery keeps every directory of a hierarchy it walked, with its inode;
 * the BPF cgroup iterator visits every live cgroup of the hierarchy and
 * writes its kernfs id, which is the directory's inode number. Each side
 * folds the ids it has into a census; equal censuses mean the same set of
 * cgroups, so the periodic rescan, whose only job is to find what inotify
 * did not report, need not read a directory (docs/acctd.md, "Discovery").
 *
 * Why count + sum + a mixed sum suffices: kernfs allocates ids increasing
 * (idr_alloc_cyclic, with a generation in the high half once the low half
 * wraps), so a cgroup made since the last scan has an id larger than every
 * id it could replace. With the same count, removing k old ids and adding k
 * new ones raises the plain sum; the mixed sum (a 64-bit bijective hash of
 * each id, summed) covers the wrapped case at the odds of a 64-bit
 * collision. Order does not matter: both sums commute.
 *
 * A scope (struct acct_cgroup_scope) is the census of part of a hierarchy:
 * where include globs leave most of it unread, discovery knows whole
 * subtrees below a few directories, and the census is that of those
 * subtrees. Its count then comes from the kernel's own count of each top's
 * descendants (cgroup->nr_descendants, live ones: those with a directory)
 * and its sums from the known ids the walk still finds, so that it equals
 * the observer's census exactly where the walk's subtrees hold the known
 * cgroups and no other: every known id found (the sums; a known id lies in
 * its top's subtree, since ids are never reused and a cgroup never changes
 * its parent), and as many cgroups there as known (the count).
 *
 * Pure arithmetic, no I/O; cost O(1) per id. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct acct_cgroup_census {
	uint64_t count; /* cgroups */
	uint64_t sum;   /* of their ids, mod 2^64 */
	uint64_t mix;   /* of acct_cgroup_census_mix(id), mod 2^64 */
};

/* splitmix64's finaliser: a bijection of 64-bit values that spreads every
 * input bit over the output. */
static inline uint64_t acct_cgroup_census_mix(uint64_t id)
{
	id = (id ^ (id >> 30)) * 0xbf58476d1ce4e5b9ull;
	id = (id ^ (id >> 27)) * 0x94d049bb133111ebull;
	return id ^ (id >> 31);
}

/* Count the cgroup with id `id` into *c (start from a zeroed census). */
static inline void acct_cgroup_census_add(struct acct_cgroup_census *c, uint64_t id)
{
	c->count++;
	c->sum += id;
	c->mix += acct_cgroup_census_mix(id);
}

static inline bool acct_cgroup_census_equal(const struct acct_cgroup_census *a, const struct acct_cgroup_census *b)
{
	return a->count == b->count && a->sum == b->sum && a->mix == b->mix;
}

/* Whole subtrees of a hierarchy, for a census of part of it (above): their
 * tops' ids, and the ids of every cgroup an observer knows in them, tops
 * included. One allocation (acct_cgroup_scope_new()); free() frees it. */
struct acct_cgroup_scope {
	size_t n_tops, n_ids;
	/* Known cgroups at the observer's depth limit, whose descendants it
	 * does not follow: not tops (the kernel's count of their descendants
	 * would count what is not followed), each counts one, its id among ids. */
	size_t n_leaves;
	uint64_t *tops; /* into the same allocation */
	uint64_t ids[];
};

/* A scope with room for n_tops tops and n_ids ids (counts zero, to be
 * filled up to those), or NULL without memory. */
static inline struct acct_cgroup_scope *acct_cgroup_scope_new(size_t n_tops, size_t n_ids)
{
	const size_t most = (SIZE_MAX - sizeof(struct acct_cgroup_scope)) / sizeof(uint64_t);
	if (n_tops > most || n_ids > most - n_tops)
		return NULL;
	struct acct_cgroup_scope *s = calloc(1, sizeof(*s) + (n_ids + n_tops) * sizeof(uint64_t));
	if (s)
		s->tops = s->ids + n_ids;
	return s;
}

/* The observer's census of a scope: its known ids. */
static inline void acct_cgroup_scope_census(const struct acct_cgroup_scope *s, struct acct_cgroup_census *ret)
{
	*ret = (struct acct_cgroup_census){ 0 };
	for (size_t i = 0; i < s->n_ids; i++)
		acct_cgroup_census_add(ret, s->ids[i]);
}
