/* history-query.h - history queries (Usage, History) on a thread of their
 * own, with its own read-only store (history_store_open_readonly()), so that
 * a query over 10,000 cgroups and a day never holds up the event loop.
 *
 * A query is a job: its `run` function is called on the query thread with
 * the store open (it builds the replies there, as json-c objects no other
 * thread touches), then its `done` function on the event loop, which sends
 * them. Jobs run one at a time in the order they came; the store is opened
 * at the first job and opened again when the file at the path is another one
 * (the recorder set a corrupt file aside) or after an error. */
#pragma once

#include <event2/event.h>
#include <stdbool.h>

#include "config.h"
#include "history-store.h"

struct history_query;
/* On the query thread. `s` is NULL when the store cannot be opened (history
 * off, no file yet, unreadable): `reason` says why. */
typedef void (*history_query_run_fn)(struct history_query *q, struct history_store *s, const char *reason);
/* On the event loop, once `run` returned; it frees the job. */
typedef void (*history_query_done_fn)(struct history_query *q);

/* Embedded at the start of the caller's job structure. */
struct history_query {
	history_query_run_fn run;
	history_query_done_fn done;
	struct history_query *next; /* the queue's */
};

struct history_queries;

/* Start the thread, answering on `base` ([history] of `c`: enabled, path).
 * Returns 0 or a negative errno. */
int history_queries_new(struct event_base *base, const struct acct_config *c, struct history_queries **ret);
/* A reload: a new path or enabled applies to the next job. */
void history_queries_configure(struct history_queries *h, const struct acct_config *c);
/* Queue q (taken until its done is called). */
void history_queries_submit(struct history_queries *h, struct history_query *q);
/* Stop the thread; jobs not done are freed with their done function never
 * called, through `drop` (may be NULL). Accepts NULL; returns NULL. */
struct history_queries *history_queries_free(struct history_queries *h, void (*drop)(struct history_query *q));
