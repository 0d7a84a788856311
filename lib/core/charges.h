/* charges.h - what programs charge to their cgroups (docs/charges.md): per
 * declared resource and per cgroup, a net charged value kept in the counter
 * engine (percpu/counter.h), served for the cgroup itself and for its
 * subtree, each with its error bound.
 *
 * The bound invariant (cited as "charges.h, the bound invariant"):
 *
 *     every read of a resource with budget E, a cgroup's own value or its
 *     subtree's, of any cgroup, ancestors included, is off by at most E,
 *     however many cgroups below it charge.
 *
 * A subtree value is therefore never summed from the descendants' counters:
 * with per-cgroup batching alone the errors of n descendants add up to n * E
 * (BRIEF lesson 6). The kernel reaches one bound for a whole tree in two ways:
 * memcg's rstat keeps one flush threshold for all pending per-CPU updates, and
 * the page counters and cpuacct_charge() charge every ancestor as they go.
 * Charges do the latter: each cgroup has two counters, `self` and `subtree`,
 * each with budget E, and a charge adds its delta to its cgroup's `self` and
 * to the `subtree` of the cgroup and of every ancestor. Each read is then one
 * counter's read, bounded by that counter's budget E. The price is O(depth)
 * counter updates per charge (about a nanosecond each on the rseq path),
 * which is what the kernel pays in page_counter_charge().
 *
 * Removal of a cgroup takes its subtree with it (cgroupfs removes children
 * first; a batch of removals may come in any order): `release` subtracts the
 * subtree's charges from every ancestor's subtree value, `reparent` adds them
 * to the parent's own value (the ancestors' subtree values stay). Both read
 * the removed counters precisely, with no charge in flight, so nothing is
 * lost or counted twice.
 *
 * Concurrency. Any thread may charge and read concurrently; charges and reads
 * share a reader-writer lock that only creating a cgroup's entry and removal
 * take exclusively. A charge costs the shared lock (two atomic operations on
 * one line), a hash lookup and O(depth) counter updates. Values are exact in
 * sum: after every charge has returned, a precise read is the sum of the
 * deltas charged. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percpu/counter.h"

struct acct_charges;

/* What the engine needs of a declared resource (config.h's struct
 * acct_resource_config carries more). */
struct acct_charges_resource {
	const char *name;  /* copied */
	int64_t budget;    /* E, >= 0 */
	bool reparent;     /* on removal: to the parent (true) or released */
	/* Carried for the engine's owner (the daemon's API and metrics), not
	 * used by the engine: the unit (config.h's enum acct_resource_unit)
	 * and whether a client's net charge goes when it exits. */
	unsigned unit;
	bool release_on_exit;
};

/* One cgroup's charged value of one resource. */
struct acct_charge_reading {
	struct acct_reading self;    /* charged to the cgroup itself */
	struct acct_reading subtree; /* to it and every cgroup below it */
};

/* Create the engine for `n` resources, with counters from `domain` (not
 * taken; it must outlive the engine). Returns 0, -EINVAL for a negative
 * budget, a NULL or repeated name, or -ENOMEM. */
int acct_charges_new(struct acct_domain *domain, const struct acct_charges_resource *res, size_t n,
		     struct acct_charges **ret);

/* Free everything; accepts NULL; returns NULL. Nobody may use the engine
 * concurrently or afterwards. */
struct acct_charges *acct_charges_free(struct acct_charges *ch);

/* The index of resource `name`, or -ENOENT. O(resources). */
int acct_charges_resource_index(const struct acct_charges *ch, const char *name);
size_t acct_charges_nr_resources(const struct acct_charges *ch);
/* The resource at `index` (its name and budget as given), or NULL. */
const struct acct_charges_resource *acct_charges_resource(const struct acct_charges *ch, size_t index);

/* Charge `delta` of resource `res` to the cgroup `path` (normalised, "/" the
 * root; its ancestors and it are created as needed, with zero values).
 * Returns 0, -EINVAL for a bad index or a path not starting with "/",
 * -ERANGE when the cgroup's value or an ancestor's subtree value would leave
 * int64 (nothing charged), or -ENOMEM (nothing charged). */
int acct_charges_add(struct acct_charges *ch, size_t res, const char *path, int64_t delta);

/* acct_charges_add() for an owner that must not charge a cgroup that was
 * removed and created again under the same path (a client's release at its
 * exit): each entry has a serial, unique in the engine, that *ret_serial
 * (may be NULL) receives; with `expect_serial` not 0 the charge is made only
 * if the entry of `path` still has that serial, else -ESTALE (nothing
 * charged, nothing created). */
int acct_charges_add_serial(struct acct_charges *ch, size_t res, const char *path, int64_t delta,
			    uint64_t expect_serial, uint64_t *ret_serial);

/* Check, without charging, what acct_charges_add() would refuse with -ERANGE;
 * for a batch that is validated before it is applied. Returns 0 or -ERANGE.
 * Advisory where other charges run concurrently. */
int acct_charges_check(struct acct_charges *ch, size_t res, const char *path, int64_t delta);

/* The approximate reading of `path`: 0 and *ret (bounds <= the budget), or
 * -ENOENT when nothing was ever charged to it or below it (or -EINVAL).
 * Cost: the shared lock, a lookup, two counter reads (O(nodes)). */
int acct_charges_read(struct acct_charges *ch, size_t res, const char *path, struct acct_charge_reading *ret);

/* The same, precise: bounds 0 when no charge is concurrent. O(shards). */
int acct_charges_read_precise(struct acct_charges *ch, size_t res, const char *path, struct acct_charge_reading *ret);

/* Call fn for every cgroup with an entry of resource `res` (approximate
 * readings), in no particular order, under the shared lock: fn must not call
 * back into the engine for anything but reads. Returns 0 or -EINVAL. */
int acct_charges_foreach(struct acct_charges *ch, size_t res,
			 void (*fn)(const char *path, const struct acct_charge_reading *r, void *userdata),
			 void *userdata);

/* The cgroup `path` and every cgroup below it were removed: apply each
 * resource's removal rule and drop their entries. Returns the number of
 * entries dropped (0 when none), or -EINVAL for the root. Cost: exclusive
 * lock, O(entries of the subtree x shards + depth). */
int acct_charges_remove(struct acct_charges *ch, const char *path);
