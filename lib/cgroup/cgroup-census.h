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
 * Pure arithmetic, no I/O; cost O(1) per id. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

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
