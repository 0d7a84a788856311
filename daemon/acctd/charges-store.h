/* charges-store.h - the programs' charges kept across restarts
 * (docs/charges.md, "Durability"): the charges' state file in acctd's state
 * directory (charges.state beside history.db), loaded once at the start
 * before anything is served, written on the event loop every [api]
 * charge_sync_interval when the charges changed, at a clean stop, and at
 * once for a Charge with sync: true.
 *
 * Cost: a write snapshots every charged cgroup precisely (O(entries x
 * shards)), serialises it (charges-state.h) and replaces the file durably
 * (write-file.h: fsync of the file and of its directory) on the event loop;
 * an unchanged snapshot is not written. The figures are in docs/charges.md. */
#pragma once

#include <json-c/json.h>

struct manager;
struct charges_store;

/* Load the state file into m->charges, which must be empty and whose cgroups
 * must be scanned (manager_scan()), and start the sync timer on m->base.
 * A missing file is a first start. A file that cannot be believed
 * (charges-state.h's parser, or charges that do not fit the engine) is set
 * aside as PATH.corrupt-TIMESTAMP, logged and reported in Status, and the
 * start goes on with no charges. A resource of the file that is no longer
 * declared, or declared with another unit, is dropped and reported; charges
 * of a cgroup that is no longer tracked go by their resource's removal rule
 * (charges.h: acct_charges_remove()). Without a state directory charges are
 * not durable (logged). Returns 0 with *ret set, or -ENOMEM. */
int charges_store_start(struct manager *m, struct charges_store **ret);

/* Write the charges now if they changed since the last write that
 * completed: when it returns 0 every charge made before the call is durable.
 * Returns 0, -EOPNOTSUPP when charges are not durable (no state directory),
 * or the negative errno of the failed write (logged; the previous file
 * stays). NULL s: -EOPNOTSUPP. */
int charges_store_sync(struct charges_store *s, struct manager *m);

/* A clean stop: the final write (charges_store_sync(), failures logged) and
 * the timer stopped. NULL: no-op. */
void charges_store_stop(struct charges_store *s, struct manager *m);

/* The charge slots the loaded file named (charges-state.h), for the front
 * ends to take up (manager_frontend's slots_adopt); NULL when no file was
 * loaded. charges_store_forget_slots() frees them once taken up. */
const struct charges_state *charges_store_loaded_slots(const struct charges_store *s);
void charges_store_forget_slots(struct charges_store *s);

/* Free; accepts NULL; returns NULL. Writes nothing. */
struct charges_store *charges_store_free(struct charges_store *s);

/* Status()'s "charges_state" object (docs/charges.md); NULL for a NULL
 * store or -ENOMEM. */
struct json_object *charges_store_status_json(const struct charges_store *s);
