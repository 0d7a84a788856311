/* state-writer.c - the --state-file document off the event loop
 * (state-writer.h). */
#include "state-writer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/log.h"
#include "basic/util.h"
#include "basic/worker.h"
#include "basic/write-file.h"
#include "format/ledger-json.h"

struct job {
	char *head, *tail;
	struct acct_cgroup **cgs;
	size_t n;
	uint64_t now_us;
};

struct state_writer {
	char *path;
	struct acct_ledger *ledger;
	unsigned nr_nodes;
	unsigned delay_ms; /* ACCTD_TEST_STATE_WRITE_DELAY_MS: a slow disk, for tests */
	struct worker *worker; /* its lock guards pending */
	struct job pending;    /* head != NULL: a write waits */
	uint64_t failures; /* writes failed in a row (the writer thread's) */
};

static void job_clear(struct job *j)
{
	free(j->head);
	free(j->tail);
	free(j->cgs);
	*j = (struct job){ 0 };
}

/* The records' text, between the head's and the tail's. Runs in the
 * read-side section writer_main() entered when it took the job. */
static void build(struct state_writer *w, const struct job *j, struct acct_json_buf *b)
{
	acct_json_buf_append(b, j->head, strlen(j->head));
	acct_json_buf_append(b, ",\"cgroups\":[", strlen(",\"cgroups\":["));
	for (size_t i = 0; i < j->n; i++) {
		if (i > 0)
			acct_json_buf_append(b, ",", 1);
		if (acct_cgroup_write_json(b, w->ledger, j->cgs[i], j->now_us, false, w->nr_nodes) < 0)
			b->failed = true;
	}
	acct_json_buf_append(b, "],", 2);
	acct_json_buf_append(b, j->tail, strlen(j->tail));
	acct_json_buf_append(b, "\n", 1);
}

static void write_one(struct state_writer *w, const struct job *j)
{
	_cleanup_(acct_json_buf_free) struct acct_json_buf b = {};
	build(w, j, &b);
	rcu_read_unlock(); /* the records are text now */
	if (w->delay_ms) {
		struct timespec ts = { w->delay_ms / 1000, (long)(w->delay_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	int r = b.failed ? -ENOMEM : write_file_atomic_at(AT_FDCWD, w->path, b.data, b.len, 0644);
	/* Every pass retries; the log says when writes start failing and when
	 * they work again, not ten times a second in between. */
	if (r < 0 && w->failures++ == 0)
		log_warning_errno(r, "Failed to write %s, retrying at every pass: %m", w->path);
	else if (r == 0 && w->failures > 0) {
		log_info("Wrote %s again, after %" PRIu64 " failed writes", w->path, w->failures);
		w->failures = 0;
	}
}

static void writer_main(struct worker *wk, unsigned index, void *userdata)
{
	struct state_writer *w = userdata;
	(void)index;
	acct_rcu_register();
	worker_lock(wk);
	for (;;) {
		while (!w->pending.head && !worker_stopping(wk))
			worker_wait(wk);
		if (!w->pending.head)
			break; /* stopping, nothing left to write */
		struct job j = w->pending;
		w->pending = (struct job){ 0 };
		/* Under the lock that state_writer_drop_pending() takes before a
		 * sweep: a sweep after this waits for this section to end before
		 * it frees any record (see state-writer.h). */
		rcu_read_lock();
		worker_unlock(wk);
		write_one(w, &j);
		job_clear(&j);
		worker_lock(wk);
	}
	worker_unlock(wk);
	rcu_unregister_thread();
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct state_writer *, state_writer_free);

int state_writer_new(const char *path, struct acct_ledger *ledger, unsigned nr_nodes, struct state_writer **ret)
{
	_cleanup_(state_writer_freep) struct state_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path)))
		return -ENOMEM;
	w->ledger = ledger;
	w->nr_nodes = nr_nodes;
	/* A writer killed between naming its finished file and the rename left
	 * it beside the state file (write-file.h): ours, gone before we write. */
	int removed = write_file_remove_stale_at(AT_FDCWD, path);
	if (removed > 0)
		log_info("Removed %d temporary file%s a killed acctd left beside %s", removed, removed == 1 ? "" : "s",
			 path);
	else if (removed < 0 && removed != -ENOENT)
		log_warning_errno(removed, "Cannot look for temporary files beside %s: %m", path);
	const char *delay = secure_getenv("ACCTD_TEST_STATE_WRITE_DELAY_MS");
	if (delay)
		w->delay_ms = (unsigned)strtoul(delay, NULL, 10);
	int r = worker_new("acctd-state", 1, writer_main, w, &w->worker);
	if (r < 0)
		return r;
	r = worker_start(w->worker);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(w);
	return 0;
}

void state_writer_submit(struct state_writer *w, char *head, char *tail, struct acct_cgroup **cgs, size_t n,
			 uint64_t now_us)
{
	worker_lock(w->worker);
	job_clear(&w->pending);
	w->pending = (struct job){ head, tail, cgs, n, now_us };
	worker_wake_one_locked(w->worker);
	worker_unlock(w->worker);
}

void state_writer_drop_pending(struct state_writer *w)
{
	if (!w)
		return;
	worker_lock(w->worker);
	job_clear(&w->pending);
	worker_unlock(w->worker);
}

struct state_writer *state_writer_free(struct state_writer *w)
{
	if (!w)
		return NULL;
	/* The write waiting is written before the thread ends (writer_main()). */
	w->worker = worker_free(w->worker);
	job_clear(&w->pending);
	free(w->path);
	free(w);
	return NULL;
}
