/* state-writer.h - the --state-file document, built and written on a thread
 * of its own.
 *
 * The document holds every record of the ledger (tombstones too): at 5,000
 * cgroups building and writing it took 28 ms a pass (402 ms at worst) on the
 * event loop, which every API call and scrape waited behind. The event loop
 * now hands over what only it can make (the pass, the reconciliation, the
 * Status document, as text) and a snapshot of the records; the writer writes
 * the records' text between those parts and replaces the file
 * (write-file.h). The records stay allocated while it reads them: a write
 * that has begun reads them in an RCU read-side section it enters when it
 * takes the job, under the lock state_writer_drop_pending() takes, so the
 * grace period of a sweep after that waits for it; a write that has not
 * begun is dropped before a sweep (the next pass asks for another).
 * A write asked for while one is under way waits, and a newer one replaces
 * it: the file is never older than the last pass by more than one write, and
 * writes never queue up. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ledger.h"

struct state_writer;

/* Start the writer thread for the file `path` (copied), reading `ledger`
 * (which must outlive the writer) with records of `nr_nodes` nodes. Returns
 * 0, -ENOMEM or the negative errno of a thread that could not be started
 * (worker_new()). */
int state_writer_new(const char *path, struct acct_ledger *ledger, unsigned nr_nodes, struct state_writer **ret);

/* Ask for the document `head` + the records + `tail` to be written: head is
 * the text of a JSON object without its closing brace, tail the text of one
 * without its opening brace; the writer joins them with
 * ',"cgroups":[...],', the records cgs[0..n) served as at now_us. head,
 * tail and cgs are taken (free()d by the writer). The owner of the ledger
 * calls state_writer_drop_pending() before each sweep. Never waits for the
 * writer's I/O. */
void state_writer_submit(struct state_writer *w, char *head, char *tail, struct acct_cgroup **cgs, size_t n,
			 uint64_t now_us);

/* Drop a write that has not begun (its records may be swept next). NULL: no-op. */
void state_writer_drop_pending(struct state_writer *w);

/* Finish the write under way and the one waiting, stop the thread, free.
 * Accepts NULL; returns NULL. */
struct state_writer *state_writer_free(struct state_writer *w);
