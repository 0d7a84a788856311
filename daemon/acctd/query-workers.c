/* query-workers.c - the history query workers, their read-only stores, the
 * per-user queues and calling queries off (query-workers.h). Finished jobs
 * come back to the event loop through an eventfd: libevent is not told about
 * threads in acctd (no evthread_use_pthreads()), so no worker ever calls
 * into it. */
#include "query-workers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/util.h"
#include "basic/worker.h"

enum { Q_QUEUED = 1, Q_RUNNING, Q_FINISHED };

/* One uid with jobs queued or running; on h->users while it has any. */
struct user_queue {
	uid_t uid;
	unsigned queued, running;
	struct history_query *todo, **todo_tail;
	struct user_queue *next;
};

/* One of the worker's threads. */
struct query_thread {
	struct history_queries *h;
	struct history_query *current; /* under the lock; read by stop_query() on the thread */
	/* The thread's own. */
	struct history_store *store;
	char *store_path;
	dev_t dev;
	ino_t ino;
};

struct history_queries {
	struct event_base *base;
	int efd;
	struct event *ev_done;
	struct worker *worker;    /* the threads, and the lock of what follows */
	struct query_thread threads[HISTORY_QUERY_WORKERS];
	/* Under the worker's lock. */
	struct user_queue *users; /* the round-robin order: served ones go last */
	struct history_query *finished, **finished_tail;
	bool enabled;
	char *path;
	unsigned max_per_user;
	uint64_t cancelled;
};

static void queue_push(struct history_query ***tail, struct history_query *q)
{
	q->next = NULL;
	**tail = q;
	*tail = &q->next;
}

static struct user_queue *user_find(struct history_queries *h, uid_t uid, struct user_queue ***ret_link)
{
	struct user_queue **link = &h->users;
	while (*link && (*link)->uid != uid)
		link = &(*link)->next;
	if (ret_link)
		*ret_link = link;
	return *link;
}

/* Free u once it has nothing queued or running (under lock). */
static void user_release(struct history_queries *h, struct user_queue *u)
{
	struct user_queue **link;
	if (u->queued > 0 || u->running > 0 || !user_find(h, u->uid, &link))
		return;
	*link = u->next;
	free(u);
}

/* The next job, round-robin across uids with one queued and below the
 * running cap; its uid goes to the end of the order (under lock). */
static struct history_query *take_job(struct history_queries *h)
{
	const unsigned cap = HISTORY_QUERY_WORKERS > 1 ? HISTORY_QUERY_WORKERS - 1 : 1;
	for (struct user_queue **link = &h->users; *link; link = &(*link)->next) {
		struct user_queue *u = *link;
		if (!u->todo || u->running >= cap)
			continue;
		struct history_query *q = u->todo;
		u->todo = q->next;
		if (!u->todo)
			u->todo_tail = &u->todo;
		u->queued--;
		u->running++;
		q->state = Q_RUNNING;
		/* last in the order, so that the others come first */
		*link = u->next;
		struct user_queue **end = link;
		while (*end)
			end = &(*end)->next;
		u->next = NULL;
		*end = u;
		return q;
	}
	return NULL;
}

static void wake_loop(struct history_queries *h)
{
	uint64_t one = 1;
	if (write(h->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warning_errno(errno, "History queries: cannot wake the event loop: %m");
}

/* q finished or was dropped: to the event loop (under lock). */
static void finish(struct history_queries *h, struct history_query *q)
{
	q->state = Q_FINISHED;
	queue_push(&h->finished_tail, q);
	wake_loop(h);
}

/* The store for `path` (NULL: history off), open and still the file at the
 * path; NULL with *reason otherwise. */
static struct history_store *get_store(struct query_thread *w, bool enabled, const char *path, char *reason, size_t size)
{
	struct stat st;

	if (!enabled || !path) {
		snprintf(reason, size, "%s", !enabled ? "history is off ([history] enabled = no)" : "no history path");
		w->store = history_store_close(w->store, 0);
		return NULL;
	}
	/* No file (or a symlink, even to nothing): the read-only open says
	 * why, the place first (a symlink, an open directory), else that
	 * there is no history at the path yet. */
	if (lstat(path, &st) < 0 || S_ISLNK(st.st_mode)) {
		_cleanup_free_ char *error = NULL;
		struct history_store *none = NULL;
		int k = history_store_open_readonly(path, &none, &error);
		if (k >= 0) /* it came meanwhile: the next query opens it */
			none = history_store_close(none, 0);
		if (k == -ENOENT)
			snprintf(reason, size, "no history at %s yet", path);
		else
			snprintf(reason, size, "cannot read %s: %s", path, error ?: strerror(k < 0 ? -k : EAGAIN));
		w->store = history_store_close(w->store, 0);
		return NULL;
	}
	if (w->store && (st.st_dev != w->dev || st.st_ino != w->ino || !w->store_path || strcmp(path, w->store_path) != 0))
		w->store = history_store_close(w->store, 0);
	if (!w->store) {
		_cleanup_free_ char *error = NULL;
		int k = history_store_open_readonly(path, &w->store, &error);
		if (k < 0) {
			snprintf(reason, size, "cannot read %s: %s", path, error ?: strerror(-k));
			return NULL;
		}
		free(w->store_path);
		w->store_path = strdup(path);
		w->dev = st.st_dev;
		w->ino = st.st_ino;
	}
	return w->store;
}

/* SQLite's progress handler, on the worker: nonzero stops the statement. */
static int stop_query(void *userdata)
{
	struct query_thread *w = userdata;
	/* w->current is written by this thread only (under lock, outside any
	 * statement); the flags are atomic. */
	return worker_stopping(w->h->worker) || (w->current && atomic_load(&w->current->cancelled));
}

/* A stop comes before the jobs queued: they are not run (history_queries_free()
 * drops them). */
static void query_main(struct worker *wk, unsigned index, void *userdata)
{
	struct history_queries *h = userdata;
	struct query_thread *w = &h->threads[index];
	char reason[1024];

	worker_lock(wk);
	for (;;) {
		struct history_query *q = NULL;
		while (!worker_stopping(wk) && !(q = take_job(h)))
			worker_wait(wk);
		if (!q)
			break;
		w->current = q;
		bool enabled = h->enabled;
		_cleanup_free_ char *path = h->path ? strdup(h->path) : NULL;
		worker_unlock(wk);

		reason[0] = 0;
		struct history_store *s = get_store(w, enabled, path, reason, sizeof(reason));
		if (s)
			history_store_set_stop(s, stop_query, w);
		q->run(q, s, reason);
		if (s)
			history_store_set_stop(s, NULL, NULL);
		/* A statement stopped midway may hold its read snapshot until
		 * reset, keeping the WAL from being checkpointed: a fresh handle. */
		if (s && (atomic_load(&q->cancelled) || worker_stopping(wk)))
			w->store = history_store_close(w->store, 0);

		worker_lock(wk);
		w->current = NULL;
		struct user_queue *u = user_find(h, q->uid, NULL);
		if (u) {
			u->running--;
			user_release(h, u);
		}
		finish(h, q);
		/* its uid may run another now: a thread waiting may take it */
		worker_wake_all_locked(wk);
	}
	worker_unlock(wk);
	w->store = history_store_close(w->store, 0);
}

static void on_done(evutil_socket_t fd, short what, void *userdata)
{
	struct history_queries *h = userdata;
	uint64_t n;

	(void)!read(h->efd, &n, sizeof(n));
	worker_lock(h->worker);
	struct history_query *q = h->finished;
	h->finished = NULL;
	h->finished_tail = &h->finished;
	worker_unlock(h->worker);
	while (q) {
		struct history_query *next = q->next;
		q->done(q);
		q = next;
	}
}

static void set_config(struct history_queries *h, const struct acct_config *c)
{
	free(h->path);
	h->path = NULL;
	h->enabled = c->history_enabled;
	h->max_per_user = c->max_queries_per_user;
	if (c->history_path && *c->history_path)
		h->path = strdup(c->history_path);
	else
		(void)acct_config_default_history_path(&h->path);
}

int history_queries_new(struct event_base *base, const struct acct_config *c, struct history_queries **ret)
{
	struct history_queries *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->base = base;
	h->efd = -1;
	h->finished_tail = &h->finished;
	for (size_t i = 0; i < ELEMENTSOF(h->threads); i++)
		h->threads[i].h = h;
	set_config(h, c);
	int k = worker_new("acctd-query", HISTORY_QUERY_WORKERS, query_main, h, &h->worker);
	if (k == 0) {
		h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		k = h->efd < 0 ? -errno : 0;
	}
	if (k == 0) {
		h->ev_done = event_new(base, h->efd, EV_READ | EV_PERSIST, on_done, h);
		if (!h->ev_done || event_add(h->ev_done, NULL) < 0)
			k = -ENOMEM;
	}
	if (k == 0)
		k = worker_start(h->worker);
	if (k < 0) {
		history_queries_free(h, NULL);
		return k;
	}
	*ret = h;
	return 0;
}

void history_queries_configure(struct history_queries *h, const struct acct_config *c)
{
	worker_lock(h->worker);
	set_config(h, c);
	worker_unlock(h->worker);
}

unsigned history_queries_max_per_user(const struct history_queries *h)
{
	return h->max_per_user;
}

int history_queries_submit(struct history_queries *h, struct history_query *q)
{
	struct user_queue **link;
	int r = 0;

	atomic_init(&q->cancelled, false);
	worker_lock(h->worker);
	struct user_queue *u = user_find(h, q->uid, &link);
	if (u && q->uid != 0 && u->queued + u->running >= h->max_per_user) {
		r = -EUSERS;
		goto out;
	}
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u) {
			r = -ENOMEM;
			goto out;
		}
		u->uid = q->uid;
		u->todo_tail = &u->todo;
		*link = u; /* last in the order */
	}
	q->state = Q_QUEUED;
	queue_push(&u->todo_tail, q);
	u->queued++;
	worker_wake_all_locked(h->worker);
out:
	worker_unlock(h->worker);
	return r;
}

void history_queries_cancel(struct history_queries *h, struct history_query *q)
{
	worker_lock(h->worker);
	const int state = q->state;
	if (state == Q_FINISHED || atomic_load(&q->cancelled)) {
		worker_unlock(h->worker);
		return;
	}
	atomic_store(&q->cancelled, true);
	const uint64_t nth = ++h->cancelled;
	struct user_queue *u = user_find(h, q->uid, NULL);
	if (state == Q_QUEUED && u) {
		struct history_query **p = &u->todo;
		while (*p && *p != q)
			p = &(*p)->next;
		if (*p) {
			*p = q->next;
			if (u->todo_tail == &q->next)
				u->todo_tail = p;
			u->queued--;
			user_release(h, u);
			finish(h, q);
		}
	}
	worker_unlock(h->worker);
	log_debug("History query of uid %u called off (%s): its client went away (%" PRIu64 " since the start).",
		  (unsigned)q->uid, state == Q_QUEUED ? "queued" : "running", nth);
}

struct history_queries *history_queries_free(struct history_queries *h, void (*drop)(struct history_query *q))
{
	if (!h)
		return NULL;
	/* Every running query stops at SQLite's next progress call; the
	 * queued ones are not run (query_main()). */
	if (h->worker && worker_stop(h->worker, HISTORY_QUERY_STOP_US) < 0) {
		/* A query between two statements for that long: it would read
		 * h, so h stays; the process is ending. */
		log_warning("History queries: a query did not stop within %u ms; not waiting for it.",
			    (unsigned)(HISTORY_QUERY_STOP_US / 1000));
		return NULL;
	}
	h->worker = worker_free(h->worker);
	while (h->users) {
		struct user_queue *u = h->users;
		h->users = u->next;
		for (struct history_query *q = u->todo, *next; q; q = next) {
			next = q->next;
			if (drop)
				drop(q);
		}
		free(u);
	}
	for (struct history_query *q = h->finished, *next; q; q = next) {
		next = q->next;
		if (drop)
			drop(q);
	}
	if (h->ev_done)
		event_free(h->ev_done);
	if (h->efd >= 0)
		close(h->efd);
	for (size_t i = 0; i < ELEMENTSOF(h->threads); i++)
		free(h->threads[i].store_path);
	free(h->path);
	free(h);
	return NULL;
}
