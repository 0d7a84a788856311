/* query-workers.h - history queries (Usage, History) on worker threads of
 * their own, each with its own read-only store (history_store_open_readonly()),
 * so that a query over 10,000 cgroups and a day never holds up the event
 * loop, and one user's long query never holds up another's.
 *
 * A query is a job: its `run` function is called on a worker with the store
 * open (it builds the replies there, as json-c objects no other thread
 * touches), then its `done` function on the event loop, which sends them.
 *
 * Fairness, the way dbus-broker budgets per user: each uid has its own queue;
 * a free worker takes the next job round-robin across the uids with jobs
 * queued, and no uid runs more than HISTORY_QUERY_WORKERS - 1 at once, so
 * that one worker is always left for the others. A uid other than root may
 * have at most `max_queries_per_user` ([api]) queued and running together:
 * history_queries_submit() refuses the next one.
 *
 * A query is called off (history_queries_cancel()) when its client goes
 * away: a queued one is dropped, a running one stops at SQLite's next
 * progress call (history_store_set_stop()). At the end, every running query
 * is called off, and the workers are waited for at most
 * HISTORY_QUERY_STOP_US: shutdown never waits on a query.
 *
 * Each worker opens the store at its first job, and again when the file at
 * the path is another one (the recorder set a corrupt file aside). */
#pragma once

#include <event2/event.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "config/config.h"
#include "history/history-store.h"

#define HISTORY_QUERY_WORKERS 3
#define HISTORY_QUERY_STOP_US (2 * 1000 * 1000)

struct history_query;
/* On a worker. `s` is NULL when the store cannot be opened (history off, no
 * file yet, unreadable): `reason` says why. A query called off meanwhile
 * gets errors from the store: its answer is never sent. */
typedef void (*history_query_run_fn)(struct history_query *q, struct history_store *s, const char *reason);
/* On the event loop, once `run` returned or the query was called off before
 * it ran (then `run` is never called); it frees the job. */
typedef void (*history_query_done_fn)(struct history_query *q);

/* Embedded at the start of the caller's job structure; set run, done, uid. */
struct history_query {
	history_query_run_fn run;
	history_query_done_fn done;
	uid_t uid; /* whose queue, whose budget */
	/* Private to query-workers.c. */
	atomic_bool cancelled;
	int state;
	struct history_query *next;
};

struct history_queries;

/* Start the workers, answering on `base` ([history] of `c`: enabled, path;
 * [api] max_queries_per_user). Returns 0 or a negative errno. */
int history_queries_new(struct event_base *base, const struct acct_config *c, struct history_queries **ret);
/* A reload: a new path, enabled or budget applies to the next job. */
void history_queries_configure(struct history_queries *h, const struct acct_config *c);
/* Queue q (taken until its done is called) and return 0; or -EUSERS when
 * q->uid (not root) has max_queries_per_user queued and running already
 * (q is not taken). */
int history_queries_submit(struct history_queries *h, struct history_query *q);
/* The budget submit refused at: max_queries_per_user. */
unsigned history_queries_max_per_user(const struct history_queries *h);
/* Call q off (its client went away; on the event loop): dropped if queued,
 * stopped if running; its done still comes, on the event loop, later.
 * Logged at debug, with the count since the start. */
void history_queries_cancel(struct history_queries *h, struct history_query *q);
/* Stop the workers (running queries called off, each waited for at most
 * HISTORY_QUERY_STOP_US in all; one that does not stop is left running and
 * its memory kept: the process is ending); jobs not done are freed with
 * their done function never called, through `drop` (may be NULL). Accepts
 * NULL; returns NULL. */
struct history_queries *history_queries_free(struct history_queries *h, void (*drop)(struct history_query *q));
