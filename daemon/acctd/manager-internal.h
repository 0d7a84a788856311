/* manager-internal.h - what the manager's files call in each other. They call
 * downwards only, so that none of them calls back into one that calls it:
 * manager.c (construction, the loop, the end) -> manager-reload.c ->
 * manager-pass.c -> manager-records.c -> manager-history.c, and all of them
 * -> manager-notify.c (the systemd protocol). Nothing outside the manager
 * includes this file. */
#pragma once

#include "manager.h"

/* manager-notify.c: sd_notify() with a formatted message, its failure ignored
 * (not under systemd there is no one to tell). */
void manager_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STATUS= with manager_status_line(): at once when `force` (a change of
 * state: ready, reload), otherwise at most every few seconds. */
void manager_update_status(struct manager *m, bool force);

/* manager-history.c: the history's feed (history-recorder.h). */
/* The identity of cg's life in the store, fixed at its first call. */
uint64_t manager_history_inode_of(struct acct_cgroup *cg);
/* cg was removed at now_mono: its tombstone's values end its life in the store. */
void manager_history_removed(struct manager *m, struct acct_cgroup *cg, uint64_t now_mono);
/* After a full pass over cgs (n of them) that started at started_mono and
 * ended at now_mono: a recording when one is due (by now_mono), stamped with
 * started_mono, as the values' ages are (the pass read them after it). */
void manager_history_record_pass(struct manager *m, struct acct_cgroup **cgs, size_t n, uint64_t started_mono,
				 uint64_t now_mono);
/* At a clean stop: the last pass's values, when no recording took them yet. */
void manager_history_record_last_pass(struct manager *m);

/* charges-reconcile.c: after a full pass that read memory, the ram
 * resources' charges against it (core/charges-ram.h); a newly flagged cgroup
 * is logged once. O(charged cgroups). And the averages' steps when a period
 * is due (core/charges-avg.h). */
void manager_charges_reconcile(struct manager *m);
/* The charges that the front ends hold and the engine has not counted yet
 * (the API's charge slots; struct manager_frontend's charges_fold): folded
 * into the engine now. Cost: the front ends' (O(slots x shards)). */
void manager_charges_fold(struct manager *m);
/* Their bounds added to a reading of (res, path) (charges_bounds), so that
 * what the manager uses is what Get serves (docs/charges.md, "Charge
 * slots"). Touches no engine. O(slots). */
void manager_charges_add_bounds(struct manager *m, size_t res, const char *path, struct acct_charge_reading *r);
/* The same as a bounds hook, `userdata` the manager: core/charges-ram.h's
 * (installed on the manager's reconciliation state) and
 * history-charges-walk.h's. */
void manager_charges_bounds_hook(size_t res, const char *path, struct acct_charge_reading *r, void *userdata);

/* manager-records.c: discovery into records, tombstones. */
/* Walk the hierarchies and bring the ledger in line (acct_discovery_scan()).
 * Returns the number of changes found or a negative errno. */
int manager_scan(struct manager *m);
/* The changes inotify reported (acct_discovery_process()). Returns 0 or a
 * negative errno (then a scan is needed). */
int manager_process_changes(struct manager *m);
/* Fold the oldest tombstones beyond [cgroups] max_tombstones into their
 * parents. Between passes. */
void manager_fold_tombstones(struct manager *m);

/* manager-pass.c: the schedule of passes and their waiters. */
/* Arm the tick, rescan and BPF timers from the configuration (the start and
 * each reload). */
void manager_arm_timers(struct manager *m);
/* The periods of bpf_interval with nothing due so far (the tick does not
 * wake for them, manager-pass.c). */
uint64_t manager_kernel_idle(const struct manager *m, uint64_t now);
/* The first full pass of the start (READY=1 follows it). Returns 0 or a
 * negative errno. */
int manager_first_pass(struct manager *m);
/* Event callbacks of the schedule, installed by manager_start(). */
void manager_on_inotify(evutil_socket_t fd, short what, void *userdata);
void manager_on_rescan(evutil_socket_t fd, short what, void *userdata);
void manager_on_tick(evutil_socket_t fd, short what, void *userdata);
void manager_on_kernel_tick(evutil_socket_t fd, short what, void *userdata);
void manager_on_sampler_done(evutil_socket_t fd, short what, void *userdata);

/* manager-reload.c: the configuration, at the start and at reloads. */
/* The configuration with its warnings logged; on error its reason in
 * *ret_error. *ret_warnings: what was ignored (never NULL on success). */
int manager_load_config(const struct manager_config_source *src, struct acct_config **ret, char ***ret_warnings,
			char **ret_error);
/* After the scan that follows the start or a reload: globs that select
 * nothing are said, and the front ends are told (on_scanned). */
void manager_after_scan(struct manager *m);
/* Say when [metrics] listen is not let through by acctd.service's IP
 * confinement (ip-confine.h). */
void manager_warn_ip_confine(const char *listen);
