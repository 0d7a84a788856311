/* history-charges-walk.h - the charged values that a history recording
 * takes (docs/charges.md, "History"): per declared resource, the subtree
 * value and its bound of every live tracked cgroup that has something
 * charged at or below it.
 *
 * Why a walk of the engine. The values exist only for cgroups with an entry
 * in the charge engine (charged ones and their ancestors); looking up every
 * tracked cgroup for every resource cost O(cgroups x resources) engine
 * lookups per recording, nearly all of them misses on a host where a few
 * services charge. Walking each resource's entries and looking each one up
 * in the ledger costs O(charged entries), as the RAM check does
 * (core/charges-ram.h), whatever the number of tracked cgroups. Pure: the
 * owner says which paths are live records and adds the bounds that the
 * engine does not know (the charge slots'), so it is tested without I/O
 * (tests/test-history-charges-walk.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/charges.h"
#include "history/history-store.h"

/* Whether `path` is a live tracked cgroup, with the inode that keys its life
 * in the store into *ret_inode; false to leave it out (not tracked, or
 * removed). Called under the engine's shared lock: must not call into the
 * engine. */
typedef bool (*history_charges_life_fn)(const char *path, uint64_t *ret_inode, void *userdata);

/* What readers outside the engine add to the bound of the reading of (res,
 * path) (the charge slots'): as core/charges-ram.h's bounds hook. May be
 * NULL. Under the engine's shared lock. */
typedef void (*history_charges_bounds_fn)(size_t res, const char *path, struct acct_charge_reading *r,
					  void *userdata);

/* The samples of every (resource, cgroup with an entry of it) that `life`
 * accepts: value the engine's approximate subtree read, bound its bound
 * with `bounds`' added; key and resource strdup()ed, in no particular order,
 * into a new array (history_charge_samples_free()), *ret NULL when none.
 * Cost: per resource one walk of the engine's entries, one `life` and one
 * `bounds` call per entry; never O(tracked cgroups). Returns the count, or
 * -ENOMEM (nothing returned). */
int history_charges_walk(struct acct_charges *ch, history_charges_life_fn life, history_charges_bounds_fn bounds,
			 void *userdata, struct history_charge_sample **ret);
