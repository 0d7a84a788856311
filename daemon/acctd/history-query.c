/* history-query.c - the query thread and its read-only store
 * (history-query.h). Finished jobs come back to the event loop through an
 * eventfd: libevent is not told about threads in acctd (no
 * evthread_use_pthreads()), so the thread never calls into it. */
#include "history-query.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

struct history_queries {
	struct event_base *base;
	int efd;
	struct event *ev_done;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock. */
	struct history_query *todo, **todo_tail;
	struct history_query *finished, **finished_tail;
	bool enabled;
	char *path;
	bool stop;
	/* The thread's own. */
	struct history_store *store;
	char *store_path;
	dev_t dev;
	ino_t ino;
};

static void queue_push(struct history_query ***tail, struct history_query *q)
{
	q->next = NULL;
	**tail = q;
	*tail = &q->next;
}

/* The store for `path` (NULL: history off), open and still the file at the
 * path; NULL with *reason otherwise. */
static struct history_store *get_store(struct history_queries *h, bool enabled, const char *path, char *reason,
				       size_t size)
{
	struct stat st;

	if (!enabled || !path) {
		snprintf(reason, size, "%s", !enabled ? "history is off ([history] enabled = no)" : "no history path");
		h->store = history_store_close(h->store, 0);
		return NULL;
	}
	if (stat(path, &st) < 0) {
		snprintf(reason, size, "no history at %s yet: %s", path, strerror(errno));
		h->store = history_store_close(h->store, 0);
		return NULL;
	}
	if (h->store && (st.st_dev != h->dev || st.st_ino != h->ino || !h->store_path || strcmp(path, h->store_path) != 0))
		h->store = history_store_close(h->store, 0);
	if (!h->store) {
		_cleanup_free_ char *error = NULL;
		int k = history_store_open_readonly(path, &h->store, &error);
		if (k < 0) {
			snprintf(reason, size, "cannot read %s: %s", path, error ?: strerror(-k));
			return NULL;
		}
		free(h->store_path);
		h->store_path = strdup(path);
		h->dev = st.st_dev;
		h->ino = st.st_ino;
	}
	return h->store;
}

static void *query_main(void *arg)
{
	struct history_queries *h = arg;
	char reason[1024];

	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (!h->todo && !h->stop)
			pthread_cond_wait(&h->cond, &h->lock);
		if (h->stop)
			break;
		struct history_query *q = h->todo;
		h->todo = q->next;
		if (!h->todo)
			h->todo_tail = &h->todo;
		bool enabled = h->enabled;
		_cleanup_free_ char *path = h->path ? strdup(h->path) : NULL;
		pthread_mutex_unlock(&h->lock);

		reason[0] = 0;
		struct history_store *s = get_store(h, enabled, path, reason, sizeof(reason));
		q->run(q, s, reason);

		pthread_mutex_lock(&h->lock);
		queue_push(&h->finished_tail, q);
		uint64_t one = 1;
		if (write(h->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warning_errno(errno, "History queries: cannot wake the event loop: %m");
	}
	pthread_mutex_unlock(&h->lock);
	h->store = history_store_close(h->store, 0);
	return NULL;
}

static void on_done(evutil_socket_t fd, short what, void *userdata)
{
	struct history_queries *h = userdata;
	uint64_t n;

	(void)!read(h->efd, &n, sizeof(n));
	pthread_mutex_lock(&h->lock);
	struct history_query *q = h->finished;
	h->finished = NULL;
	h->finished_tail = &h->finished;
	pthread_mutex_unlock(&h->lock);
	while (q) {
		struct history_query *next = q->next;
		q->done(q);
		q = next;
	}
}

static void set_config(struct history_queries *h, const struct acct_config *c)
{
	free(h->path);
	h->enabled = c->history_enabled;
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
	h->todo_tail = &h->todo;
	h->finished_tail = &h->finished;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	set_config(h, c);
	h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int k = h->efd < 0 ? -errno : 0;
	if (k == 0) {
		h->ev_done = event_new(base, h->efd, EV_READ | EV_PERSIST, on_done, h);
		if (!h->ev_done || event_add(h->ev_done, NULL) < 0)
			k = -ENOMEM;
	}
	if (k == 0) {
		k = -pthread_create(&h->thread, NULL, query_main, h);
		h->started = k == 0;
	}
	if (k < 0) {
		history_queries_free(h, NULL);
		return k;
	}
	*ret = h;
	return 0;
}

void history_queries_configure(struct history_queries *h, const struct acct_config *c)
{
	pthread_mutex_lock(&h->lock);
	set_config(h, c);
	pthread_mutex_unlock(&h->lock);
}

void history_queries_submit(struct history_queries *h, struct history_query *q)
{
	pthread_mutex_lock(&h->lock);
	queue_push(&h->todo_tail, q);
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

struct history_queries *history_queries_free(struct history_queries *h, void (*drop)(struct history_query *q))
{
	if (!h)
		return NULL;
	if (h->started) {
		pthread_mutex_lock(&h->lock);
		h->stop = true;
		pthread_cond_signal(&h->cond);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->thread, NULL);
	}
	struct history_query *lists[2] = { h->todo, h->finished };
	for (size_t i = 0; i < ELEMENTSOF(lists); i++)
		for (struct history_query *q = lists[i], *next; q; q = next) {
			next = q->next;
			if (drop)
				drop(q);
		}
	if (h->ev_done)
		event_free(h->ev_done);
	if (h->efd >= 0)
		close(h->efd);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h->path);
	free(h->store_path);
	free(h);
	return NULL;
}
