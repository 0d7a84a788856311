/* state-writer.h - the --state-file document, built and written on a thread
 * of its own.
 *
 * The document holds every record of the ledger (tombstones too): at 5,000
 * cgroups building and writing it took 28 ms a pass (402 ms at worst) on the
 * event loop, which every API call and scrape waited behind. The event loop
 * now hands over the small parts only it can make (the pass, the
 * reconciliation, the Status document) as text; the writer takes its own
 * snapshot of the ledger, inside an RCU read-side section for as long as it
 * uses the records, writes the records' text between those parts and
 * replaces the file (write-file.h). A write asked for while one is under way
 * waits, and a newer one replaces it: the file is never older than the last
 * pass by more than one write, and writes never queue up. */
#pragma once
#include <stdint.h>

#include "ledger.h"

struct state_writer;

/* Start the writer thread for the file `path` (copied), reading `ledger`
 * (which must outlive the writer) with records of `nr_nodes` nodes. Returns
 * 0, -ENOMEM or a pthread error. */
int state_writer_new(const char *path, struct acct_ledger *ledger, unsigned nr_nodes, struct state_writer **ret);

/* Ask for the document `head` + the records + `tail` to be written: head is
 * the text of a JSON object without its closing brace, tail the text of one
 * without its opening brace; the writer joins them with
 * ',"cgroups":[...],' (both taken: free()d by the writer). Records are
 * served as at now_us. Never blocks on the writer's I/O. */
void state_writer_submit(struct state_writer *w, char *head, char *tail, uint64_t now_us);

/* Finish the write under way and the one waiting, stop the thread, free.
 * Accepts NULL; returns NULL. */
struct state_writer *state_writer_free(struct state_writer *w);
