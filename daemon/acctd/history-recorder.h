/* history-recorder.h - the daemon's history: the thread that owns
 * the writing store (lib/history/history-store.h) and the accounting record
 * of each removed cgroup.
 *
 * The event loop never waits for SQLite. At each recording interval it copies
 * the few values of every live cgroup into a plain array of struct
 * history_sample (paths strdup()ed) and hands it over; the thread records it
 * and then lets the store roll up, expire and cap (history_store_maintain()).
 * The thread never touches a ledger record, so sweeps need not wait for it
 * (unlike the state writer's, state-writer.h). A recording handed over while
 * the previous one is still being written replaces the one waiting: the
 * thread never falls behind by more than one recording. Removals queue in
 * order and are never dropped.
 *
 * Removal. The thread ends the cgroup's life in the store with its
 * tombstone's final values (history_store_removed()) and, with [log]
 * removals = each, sends the accounting record to the journal (MESSAGE_ID
 * HISTORY_RECORD_MESSAGE_ID, fields ACCTD_*; docs/history.md) and the log
 * (with summary, the default, the event loop logs a count per window
 * instead: manager-history.c). A cgroup created and removed
 * between two recordings is recorded once, then removed, so that it is
 * accounted too. With history off, or the store failing, the record is sent
 * all the same, from the tombstone's values.
 *
 * Faults. A store that cannot be opened or written (full disk, read-only
 * directory) leaves the live ledger alone: the recorder says "failing" with
 * the reason (history_recorder_get_status(), the log once per change of
 * condition, /metrics) and tries again at every interval with a fresh open,
 * so that recording resumes by itself when the fault clears (the time it
 * failed is a gap in the store, never interpolated). A corrupt or foreign
 * file is set aside by the store at open; the recorder reports where.
 *
 * Stalls. A thread that does not come back from an attempt (a write to a
 * hung disk) cannot say so itself: the event loop judges it, when it hands
 * a recording over and in history_recorder_get_status(). Past
 * HISTORY_STALL_INTERVALS intervals without an attempt ending the state is
 * "stalled" (Status, /metrics) and one warning is logged; the thread logs
 * once when it records again. The store makes the stretch a gap. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "history/history-store.h"

/* The journal's MESSAGE_ID of the accounting record (docs/history.md). */
#define HISTORY_RECORD_MESSAGE_ID "d85349364a43483586dd4e8dd439700e"
/* Its schema's version, ACCTD_RECORD_VERSION (docs/history.md, "The
 * accounting record in the journal"): raised when a field changes its name,
 * unit or meaning or goes; fields added keep it. */
#define HISTORY_RECORD_VERSION 1

enum history_state {
	HISTORY_STATE_OFF,       /* [history] enabled = no */
	HISTORY_STATE_RECORDING, /* the last attempt worked (or none was due yet) */
	HISTORY_STATE_FAILING,   /* the last open or recording failed: last_error says why */
	HISTORY_STATE_STALLED,   /* no attempt has ended for more than HISTORY_STALL_INTERVALS
				  * intervals: the thread is blocked (a slow disk, a write
				  * that does not return) or acctd was stopped; what is not
				  * recorded meanwhile will be a gap in the store */
	_HISTORY_STATE_MAX,
};
/* "off", "recording", "failing", "stalled". */
const char *history_state_to_string(enum history_state s);

/* A copy of the recorder's condition, for Status and /metrics. */
struct history_recorder_status {
	bool enabled;
	char path[4096];            /* "" when there is no path (no home to put it in) */
	enum history_state state;
	char last_error[512];       /* "" when none since the last success */
	uint64_t last_recording_us; /* CLOCK_REALTIME of the last recording written, 0: none */
	uint64_t last_recording_age_us; /* now less last_recording_us (0 if in the future);
					 * UINT64_MAX: no recording yet */
	uint64_t interval_us;       /* the recording interval asked for */
	uint64_t stalled_us;        /* while stalled: how long since the last attempt ended
				     * (or recording was started), else 0 */
	uint64_t file_bytes;        /* database + WAL, at the last recording */
	char set_aside[4096];       /* where the last corrupt or foreign file went, "" if none */
	uint64_t recordings_total, errors_total, records_total; /* records: removals accounted */
};

struct history_recorder;

/* Start the thread with the [history] settings of `c` (copied). The store is
 * opened by the thread, at the first recording. Returns 0, -ENOMEM or the
 * negative errno of a thread that could not be started (worker_start()). */
int history_recorder_new(const struct acct_config *c, struct history_recorder **ret);

/* A reload: new limits apply at the next maintenance; a new path, interval or
 * enabled closes the store and opens it again at the next recording. Never
 * waits for the thread's I/O. */
void history_recorder_configure(struct history_recorder *r, const struct acct_config *c);

/* Record `samples[0..n)` (taken, with their paths: history_samples_free())
 * as at now_us (CLOCK_REALTIME), and after them the charged values
 * `charges[0..n_charges)` (taken, with their paths and resource names:
 * history_charge_samples_free(); NULL when there are none) of the same
 * cgroups (docs/charges.md, "History"). Never waits for the thread's I/O. */
void history_recorder_submit(struct history_recorder *r, uint64_t now_us, struct history_sample *samples, size_t n,
			     struct history_charge_sample *charges, size_t n_charges);

/* The cgroup `final` (copied) was removed at removed_us, first seen at
 * first_seen_us, its values last read at last_read_us (all CLOCK_REALTIME).
 * not_final: NULL where those are what it finally used, else why not
 * (acct_final_to_string(): static); the accounting record then says so, and
 * final_cpu_usec_bound how much more CPU time it may have used after that
 * read (history_store_removed(); 0 where final). Queued in order behind the
 * recordings already handed over. */
void history_recorder_removed(struct history_recorder *r, const struct history_sample *final, uint64_t first_seen_us,
			      uint64_t removed_us, uint64_t last_read_us, const char *not_final,
			      int64_t final_cpu_usec_bound);

/* The condition now (a copy, under the recorder's lock), "stalled" judged
 * at the time of the call: it reads the clock, so that a blocked thread is
 * seen from the event loop. */
void history_recorder_get_status(struct history_recorder *r, struct history_recorder_status *ret);

/* Write what is queued, close the store (ending its run cleanly), stop the
 * thread. Accepts NULL; returns NULL. */
struct history_recorder *history_recorder_free(struct history_recorder *r);

void history_samples_free(struct history_sample *s, size_t n);
void history_charge_samples_free(struct history_charge_sample *c, size_t n);

/* The boot id as the store wants it: 32 hex digits, read from
 * /proc/sys/kernel/random/boot_id. Returns 0 or a negative errno. */
int history_boot_id(char ret[static 33]);

/* CLOCK_REALTIME in microseconds. */
uint64_t history_now_us(void);
