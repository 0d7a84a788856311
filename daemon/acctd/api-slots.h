/* api-slots.h - the charge slots a connection holds (OpenChargeSlot,
 * api-charges.c; the slot itself: lib/percpu/charge-slot-owner.h), folded
 * into the charge engine on every pass and before every read that serves
 * charges, dropped when a client corrupts one, folded a last time and freed
 * when their connection closes. docs/charges.md, "Charge slots". Internal to
 * daemon/acctd/api-*.c and the metrics endpoint; on the event loop only. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct request;
struct api_server;
struct acct_charge_reading;
struct api_slot;
struct charges_state;
struct manager;

/* OpenChargeSlot's parameter names, and the method: the resource and the
 * caller's right to the cgroup checked as Charge's (api_charge_target()); a
 * slot whose memfd goes with the reply, {"slot": 0}; past [api]
 * max_charge_slots_per_connection ResourceLimitExceeded. Answers and returns
 * 0, or a negative errno (the connection closes). */
extern const char *const api_open_charge_slot_params[];
int api_method_open_charge_slot(struct request *rq, struct json_object *params);

/* A connection's slots (struct conn's `slots`; NULL until it opens one). */
struct api_conn_slots;

/* The server's figures of slots, for Status (charge_slots). */
struct api_slot_stats {
	uint64_t open;            /* slots held now, orphans included */
	uint64_t opened_total;    /* since the start */
	uint64_t corrupt_total;   /* dropped: the client wrote garbage (or a total out of range) */
	uint64_t gone_total;      /* dropped: their cgroup was removed */
	uint64_t folds_total;     /* folds that charged a difference */
	uint64_t adopted_total;   /* taken up from systemd's descriptor store at the start */
	uint64_t not_adopted_total; /* passed by the store but not taken up (logged) */
};

/* Open a slot of resource `res` for the cgroup `path` (normalised, tracked,
 * the caller's right to it checked) on connection c, with the resource's
 * budget. Returns 0 with the slot kept and its memfd in *ret_fd (the
 * caller's: it goes with the reply), -EDQUOT when c holds
 * [api] max_charge_slots_per_connection already (nothing created), -ERANGE
 * when the cgroup cannot take a charge, or acct_slot_create()'s errno. */
int api_slots_open(struct conn *c, size_t res, const char *path, int *ret_fd);

/* Fold every slot of every connection of s: charge the difference of each
 * slot's running total since its last fold to its (resource, cgroup).
 * Corrupt slots are dropped (one log line each, counted); slots whose cgroup
 * was removed are dropped (their charges went by the removal rule). Cost:
 * O(slots x shards) relaxed loads and a charge per slot that moved. */
void api_slots_fold_all(struct api_server *s);

/* The same for the slots of `prefix` and the cgroups below it only (NULL:
 * all): what a read of prefix's self and subtree values depends on (Get). */
void api_slots_fold_under(struct api_server *s, const char *prefix);

/* The bounds of the slots that a read of (res, path) must add to the
 * engine's bound (docs/charges.md, "Charge slots"): into r->self.bound the
 * sum of the bounds of the slots of `path` itself, into r->subtree.bound
 * that of the slots of `path` and every cgroup below it. O(slots). */
void api_slots_add_bounds(struct api_server *s, size_t res, const char *path, struct acct_charge_reading *r);

/* Connection c closes: fold its slots a last time (so that its net charges
 * hold what they charged); free those of resources with release_on_exit
 * (the client's exit) and keep the others read, as orphans of the server,
 * while the process that opened them lives (libacct-client's slots are
 * independent of their connection). Accepts a connection with none. */
void api_slots_conn_close(struct conn *c);

/* ---- across a restart: systemd's descriptor store ---------------------------
 * Where acctd runs under systemd (NOTIFY_SOCKET set at the start), each slot
 * it opens goes into the service's descriptor store (FDSTORE=1) as
 * "slot-ID", with a pidfd of its client as "slotpid-ID", and leaves it
 * (FDSTOREREMOVE=1) when acctd lets the slot go while running; the state
 * file records each stored slot's id, resource, cgroup, geometry and the part
 * of its total that the saved charges hold. The next start takes the stored
 * slots up against those records (docs/charges.md, "Durability"). */

/* A descriptor the store passed at the start, until taken up. */
struct api_stored_fd {
	int64_t id;
	bool pidfd; /* slotpid-ID, else slot-ID */
	int fd;
};

/* At the start, for each descriptor systemd passed with its name: keep
 * those of the store's slots for api_slots_adopt(). Returns 1 (kept: the
 * server owns fd), 0 (not a slot's name: fd is the caller's) or -ENOMEM. */
int api_slots_note_stored_fd(struct api_server *s, const char *name, int fd);

/* manager_frontend's charges_slots: the stored slots into st, each with the
 * total of its last fold (0 for a release_on_exit resource, whose charges
 * the state file does not hold). Returns 0 or -ENOMEM. */
int api_slots_snapshot(struct manager *m, struct charges_state *st, void *server);

/* manager_frontend's slots_adopt: take up each stored slot that `loaded`
 * (the state file's slots; NULL: none) records and that passes
 * acct_slot_adopt()'s checks, folding at once what it holds beyond its
 * recorded total; it is then read as an orphan while its client lives
 * (its pidfd) and released at the client's exit where its resource says
 * release_on_exit. The others are closed and removed from the store, each
 * logged. Closes every descriptor noted. */
void api_slots_adopt(struct manager *m, const struct charges_state *loaded, void *server);

/* Free the orphans (the server goes: after its connections). They stay in
 * the descriptor store, for the next start. */
void api_slots_server_free(struct api_server *s);

/* The server's figures. */
void api_slots_stats(const struct api_server *s, struct api_slot_stats *ret);
