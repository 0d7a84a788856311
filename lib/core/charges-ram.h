/* charges-ram.h - reconciliation of charged RAM against the kernel's memory
 * (docs/charges.md, "Reconciliation of RAM resources"). A resource declared
 * `ram` is memory that the cgroup's own memory.current already counts (an
 * application's arena, a cache it reports): what programs charge of it can
 * never honestly exceed what the kernel says the cgroup uses. For every
 * charged cgroup the check compares
 *
 *     charged = sum over the ram resources of the cgroup's subtree value
 *               (memory.current is hierarchical, so the subtree's charges)
 *     memory  = the ledger's memory of the cgroup
 *
 * and flags the cgroup (leaked or over-reported charges) when
 * charged - memory > charged_bound + memory_bound: only then is it certain
 * that the true charged value exceeds the true memory. It flags it too
 * (over-released: a client gave back more than it charged) when
 * -charged > charged_bound: only then is the true charged value certainly
 * below 0, which no memory can be; this needs no memory read. "Unexplained
 * memory" is memory - charged, with the sum of both bounds.
 *
 * Cost: one check is O(e log e) in the e charged entries of the ram
 * resources (the charge engine's entries, ancestors included), never
 * O(all cgroups): the engine is walked, and each charged cgroup's memory is
 * looked up. Not thread-safe: its owner (the daemon's event loop) calls
 * everything. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "charges.h"
#include "percpu/counter.h"

/* One charged cgroup as the last check found it. */
struct acct_charges_ram_entry {
	char *path;
	struct acct_reading charged; /* the ram resources' subtree values summed, bounds summed */
	struct acct_reading memory;  /* the kernel's (the ledger's), valid when has_memory */
	bool has_memory;             /* the cgroup is tracked and its memory read */
	bool over;                   /* charged exceeds memory beyond both bounds */
	bool below_zero;             /* charged is below 0 beyond its bound (over-released) */
};

struct acct_charges_ram;

/* The kernel's memory of `path` for the check: true and *ret, or false when
 * the cgroup is not tracked or its memory was never read. */
typedef bool (*acct_charges_ram_memory_fn)(const char *path, struct acct_reading *ret, void *userdata);

/* What readers outside the engine add to the bound of a reading of (res,
 * path): the daemon's charge slots, whose charges the engine holds only up to
 * their last fold and whose reads carry their own bound (docs/charges.md,
 * "Charge slots"). Adds to r->self.bound and r->subtree.bound; must not call
 * into the engine (it may run under the engine's shared lock). */
typedef void (*acct_charges_ram_bounds_fn)(size_t res, const char *path, struct acct_charge_reading *r,
					   void *userdata);

/* Called once for each cgroup that a check flags and the previous check did
 * not, over memory or below zero (e->over, e->below_zero: the owner logs
 * which became true; both may). */
typedef void (*acct_charges_ram_flag_fn)(const struct acct_charges_ram_entry *e, void *userdata);

/* The reconciliation state for the resources `ram[i]` of `ch` (one flag per
 * resource of the engine; nr_ram of them true). `ch` is not taken and must
 * outlive the state. Returns 0 or -ENOMEM. */
int acct_charges_ram_new(struct acct_charges *ch, const bool *ram, struct acct_charges_ram **ret);
/* Accepts NULL; returns NULL. */
struct acct_charges_ram *acct_charges_ram_free(struct acct_charges_ram *s);

/* From now on, add `bounds` (NULL: none) to every ram resource's reading
 * that acct_charges_ram_read() and acct_charges_ram_check() take, so that
 * both compare with the bound that the daemon serves for the value (the
 * engine's and its slots'), never the engine's alone: a cgroup is flagged
 * only when its charges certainly exceed its memory. */
void acct_charges_ram_set_bounds(struct acct_charges_ram *s, acct_charges_ram_bounds_fn bounds, void *userdata);

/* Whether any resource is declared ram (else checks do nothing). */
bool acct_charges_ram_any(const struct acct_charges_ram *s);
/* The sum of the ram resources' subtree values of `path` read now (bounds
 * summed): 0 and *ret, -ENOENT when no ram resource was ever charged at or
 * below it. The bounds hook, when set, adds its bounds. */
int acct_charges_ram_read(const struct acct_charges_ram *s, const char *path, bool precise, struct acct_reading *ret);

/* Compare every charged cgroup with its memory (see above) and keep the
 * result, each charged bound with the bounds hook's added (cost: the hook's
 * per charged entry; O(slots) for the daemon's); `flagged` (may be NULL)
 * hears of newly flagged cgroups. The caller folds what the hook's readers
 * hold into the engine first. Returns 0
 * or -ENOMEM (then the previous result stays). */
int acct_charges_ram_check(struct acct_charges_ram *s, acct_charges_ram_memory_fn memory, void *memory_userdata,
			   acct_charges_ram_flag_fn flagged, void *flagged_userdata);

/* The last check's entries, sorted by path (valid until the next check or
 * the free), and figures: checks run, cgroups compared, flagged now. */
const struct acct_charges_ram_entry *acct_charges_ram_entries(const struct acct_charges_ram *s, size_t *ret_n);
uint64_t acct_charges_ram_checks(const struct acct_charges_ram *s);
size_t acct_charges_ram_over(const struct acct_charges_ram *s);
size_t acct_charges_ram_below_zero(const struct acct_charges_ram *s);

/* Unexplained memory of an entry with memory: memory - charged, bound the sum. */
static inline struct acct_reading acct_charges_ram_unexplained(const struct acct_reading *memory,
							       const struct acct_reading *charged)
{
	return (struct acct_reading){ .value = memory->value - charged->value, .bound = memory->bound + charged->bound };
}
