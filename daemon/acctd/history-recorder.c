/* history-recorder.c - the writing store on a thread of its own, and the
 * accounting records of removed cgroups (history-recorder.h). */
#include "history-recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/format-human.h"
#include "basic/log.h"
#include "basic/name-escape.h"
#include "basic/read-file.h"
#include "basic/util.h"
#include "basic/worker.h"
#include "cgroup/cgroup-identity.h"

/* The [history] settings the thread works with. */
struct settings {
	bool enabled;
	char *path;
	uint64_t interval_us;
	struct history_limits limits;
	enum acct_removal_log removals; /* [log] removals: a record in the log per cgroup, or not */
};

/* A removal waiting for the thread. */
struct removal {
	struct removal *next;
	struct history_sample final;
	uint64_t first_seen_us, removed_us, last_read_us;
	const char *not_final; /* static; NULL: the values are final */
	int64_t final_cpu_usec_bound;
};

struct history_recorder {
	struct worker *worker; /* the thread, and the lock of what follows */

	/* Under the worker's lock: what the event loop hands over. */
	struct settings want;      /* the settings asked for */
	uint64_t want_generation;  /* bumped by each configure */
	struct history_sample *pending; /* a recording waiting (pending_n may be 0: none alive) */
	size_t pending_n;
	struct history_charge_sample *pending_charges; /* its charged values (docs/charges.md) */
	size_t pending_charges_n;
	bool has_pending;
	uint64_t pending_us;
	struct removal *removals, **removals_tail;
	struct history_recorder_status status; /* the thread writes, readers copy */
	uint64_t progress_us; /* the end of the last attempt, or when recording was (re)started */
	bool stall_logged;    /* the event loop warned of the stall that goes on */

	/* The thread's own. */
	struct settings have;
	uint64_t have_generation;
	struct history_store *store;
	bool recorded;       /* the store's run has had a full recording */
	char boot_id[33];
	char condition[512]; /* the condition last logged: "" recording, else the error */
};

static const char *const state_names[_HISTORY_STATE_MAX] = {
	[HISTORY_STATE_OFF] = "off",
	[HISTORY_STATE_RECORDING] = "recording",
	[HISTORY_STATE_FAILING] = "failing",
	[HISTORY_STATE_STALLED] = "stalled",
};

const char *history_state_to_string(enum history_state s)
{
	return s >= 0 && s < _HISTORY_STATE_MAX ? state_names[s] : NULL;
}

uint64_t history_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int history_boot_id(char ret[static 33])
{
	_cleanup_free_ char *text = read_file_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id");
	size_t n = 0;

	if (!text)
		return -errno;
	for (const char *p = text; *p && *p != '\n'; p++) {
		if (*p == '-')
			continue;
		if (n == 32 || !((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return -EINVAL;
		ret[n++] = *p;
	}
	if (n != 32)
		return -EINVAL;
	ret[n] = 0;
	return 0;
}

void history_samples_free(struct history_sample *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		free((char *)s[i].key.path);
	free(s);
}

void history_charge_samples_free(struct history_charge_sample *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++) {
		free((char *)c[i].key.path);
		free((char *)c[i].resource);
	}
	free(c);
}

static void settings_clear(struct settings *s)
{
	free(s->path);
	*s = (struct settings){ 0 };
}

static int settings_from_config(const struct acct_config *c, struct settings *ret)
{
	*ret = (struct settings){
		.enabled = c->history_enabled,
		.interval_us = c->history_interval_us,
		.removals = acct_removal_log_effective(c->log_removals, log_get_target() == LOG_TARGET_JOURNAL),
		.limits = {
			.retention_us = {
				[HISTORY_RAW] = c->history_raw_retention_us,
				[HISTORY_MINUTE] = c->history_minute_retention_us,
				[HISTORY_HOUR] = c->history_hour_retention_us,
			},
			.max_bytes = c->history_max_size,
		},
	};
	/* Empty or unset: the default for whoever runs acctd (config.h). */
	if (c->history_path && *c->history_path)
		return (ret->path = strdup(c->history_path)) ? 0 : -ENOMEM;
	int k = acct_config_default_history_path(&ret->path);
	return k == -ENOENT ? 0 : k;
}

static bool same_string(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* ---- the thread ------------------------------------------------------------ */

/* Set the condition under the lock, and log it when it changed: once when
 * recording starts failing (or fails differently), once when it works again. */
static void set_condition(struct history_recorder *r, enum history_state state, int error, const char *reason)
{
	char text[sizeof(r->condition)] = "";

	if (state == HISTORY_STATE_FAILING)
		snprintf(text, sizeof(text), "%s", reason ?: strerror(-error));
	worker_lock(r->worker);
	r->status.state = state;
	snprintf(r->status.last_error, sizeof(r->status.last_error), "%s", text);
	if (state == HISTORY_STATE_FAILING)
		r->status.errors_total++;
	worker_unlock(r->worker);

	if (strcmp(text, r->condition) == 0)
		return;
	if (state == HISTORY_STATE_FAILING)
		log_warning_errno(error, "History: %s; the live ledger goes on, recording is retried every %s", text,
				  format_duration((char[FORMAT_HUMAN_MAX]){}, (int64_t)r->have.interval_us));
	else if (r->condition[0])
		log_info("History: recording to %s again", r->have.path);
	snprintf(r->condition, sizeof(r->condition), "%s", text);
}

static int mkdir_parents(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static void close_store(struct history_recorder *r)
{
	r->store = history_store_close(r->store, history_now_us());
}

/* Open the store if it is not open and history is on. Returns 0 when open. */
static int ensure_open(struct history_recorder *r, uint64_t now_us)
{
	struct history_open_info info = {};
	_cleanup_free_ char *error = NULL;
	int k;

	if (r->store)
		return 0;
	if (!r->have.enabled)
		return -ENOTCONN;
	if (!r->have.path) {
		set_condition(r, HISTORY_STATE_FAILING, -ENOENT, "no path for the history: set [history] path");
		return -ENOENT;
	}
	if (!r->boot_id[0] && (k = history_boot_id(r->boot_id)) < 0) {
		set_condition(r, HISTORY_STATE_FAILING, k, "cannot read /proc/sys/kernel/random/boot_id");
		return k;
	}
	k = mkdir_parents(r->have.path);
	if (k >= 0)
		k = history_store_open(r->have.path, r->boot_id, now_us, r->have.interval_us, &r->have.limits, &r->store,
				       &info, &error);
	if (k < 0) {
		_cleanup_free_ char *reason = NULL, *dir = strdup(r->have.path);
		/* SQLite reports the last thing it tried (a read-only open of a
		 * file that is not there: ENOENT); a person wants the cause. */
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash && slash != dir) {
			*slash = 0;
			if (access(dir, W_OK) < 0 && (errno == EROFS || errno == EACCES)) {
				k = -errno;
				free(error);
				error = NULL;
				if (asprintf(&error, "%s is not writable: %s", dir, strerror(-k)) < 0)
					error = NULL;
			}
		}
		if (asprintf(&reason, "cannot open %s: %s", r->have.path, error ?: strerror(-k)) < 0)
			reason = NULL;
		set_condition(r, HISTORY_STATE_FAILING, k, reason);
		free(info.set_aside);
		return k;
	}
	r->recorded = false;
	if (info.set_aside) {
		log_warning("History: %s was not a usable acctd history (%s); set aside as %s, a new one was created",
			    r->have.path, info.set_aside_why, info.set_aside);
		worker_lock(r->worker);
		snprintf(r->status.set_aside, sizeof(r->status.set_aside), "%s", info.set_aside);
		worker_unlock(r->worker);
		free(info.set_aside);
	}
	if (info.migrated)
		log_info("History: %s migrated from schema version %d", r->have.path, info.from_version);
	else if (info.created)
		log_info("History: created %s", r->have.path);
	else /* say so: a daemon run by hand on the defaults records into the service's store */
		log_info("History: opened %s, recording into the history it holds", r->have.path);
	return 0;
}

/* A failed recording or maintenance: the store is closed and opened afresh
 * at the next interval (its integrity checked again; the time in between
 * is a gap). */
static void store_failed(struct history_recorder *r, int k, const char *what, const char *error)
{
	_cleanup_free_ char *reason = NULL;
	if (asprintf(&reason, "cannot %s %s: %s", what, r->have.path, error ?: strerror(-k)) < 0)
		reason = NULL;
	set_condition(r, HISTORY_STATE_FAILING, k, reason);
	close_store(r);
}

/* The time without an attempt ending, when it is a stall (more than
 * HISTORY_STALL_INTERVALS intervals), else 0. Called with the lock held. */
static uint64_t stalled_for(const struct history_recorder *r, uint64_t now_us)
{
	if (!r->want.enabled || !r->want.interval_us || now_us <= r->progress_us)
		return 0;
	uint64_t d = now_us - r->progress_us;
	return d > HISTORY_STALL_INTERVALS * r->want.interval_us ? d : 0;
}

/* An attempt ended: the thread goes on. Once after a stall, it says so. */
static void progress(struct history_recorder *r)
{
	uint64_t now = history_now_us(), stalled;
	bool logged;
	worker_lock(r->worker);
	stalled = stalled_for(r, now);
	logged = r->stall_logged;
	r->stall_logged = false;
	r->progress_us = now;
	worker_unlock(r->worker);
	if (logged || stalled)
		log_notice("History: the recorder goes on after %s without recording; that time is a gap in the history",
			   format_duration((char[FORMAT_HUMAN_MAX]){}, (int64_t)stalled));
}

static void record_once(struct history_recorder *r, uint64_t now_us, const struct history_sample *samples, size_t n,
			const struct history_charge_sample *charges, size_t n_charges)
{
	_cleanup_free_ char *error = NULL;

	if (ensure_open(r, now_us) < 0)
		return;
	int k = history_store_record(r->store, now_us, samples, n, &error);
	if (k < 0)
		return store_failed(r, k, "record to", error);
	/* After the kernel's quantities: they make the lives the charges are
	 * kept by. A failure here leaves those recorded; the next recording
	 * writes the charged values that changed since their last points. */
	k = history_store_record_charges(r->store, now_us, charges, n_charges, &error);
	if (k < 0)
		return store_failed(r, k, "record charges to", error);
	k = history_store_maintain(r->store, now_us, &error);
	if (k < 0)
		return store_failed(r, k, "maintain", error);
	/* The size only: the counts of history_store_stats() would scan the
	 * stored rows after every recording, a cost that grows with the store
	 * and not with what changed. */
	uint64_t file_bytes = history_store_file_bytes(r->store);
	worker_lock(r->worker);
	r->recorded = true;
	r->status.last_recording_us = now_us;
	r->status.recordings_total++;
	r->status.file_bytes = file_bytes;
	worker_unlock(r->worker);
	set_condition(r, HISTORY_STATE_RECORDING, 0, NULL);
}

static void record(struct history_recorder *r, uint64_t now_us, const struct history_sample *samples, size_t n,
		   const struct history_charge_sample *charges, size_t n_charges)
{
	record_once(r, now_us, samples, n, charges, n_charges);
	progress(r);
}

/* Append to the message at *p, never past end (a long path is cut). */
static void appendf(char **p, char *end, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char **p, char *end, const char *fmt, ...)
{
	va_list ap;
	if (*p >= end - 1)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(*p, (size_t)(end - *p), fmt, ap);
	va_end(ap);
	*p = n < 0 ? *p : MIN(*p + n, end - 1);
}

static void field(char ***v, size_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void field(char ***v, size_t *n, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		(*v)[(*n)++] = s;
	va_end(ap);
}

/* The accounting record: one structured journal entry, and the log. `rec`
 * is the store's (NULL when the store could not give it: the tombstone's
 * values alone then). */
static void account(const struct removal *x, const struct history_record *rec, uint64_t interval_us)
{
	const struct history_values *v = &x->final.v;
	int64_t cpu = rec ? rec->cpu_usec : v->cpu_usec;
	int64_t peak = rec && rec->memory_peak_bytes != HISTORY_UNKNOWN ? rec->memory_peak_bytes : v->memory_peak_bytes;
	int64_t rd = rec ? rec->io_read_bytes : v->io_read_bytes, wr = rec ? rec->io_write_bytes : v->io_write_bytes;
	/* The store's life begins at the first recording that named it (up to
	 * an interval after its creation); the ledger saw it created, in this
	 * run. The earlier of the two. */
	uint64_t first = rec ? MIN(rec->first_seen_us, x->first_seen_us) : x->first_seen_us;
	uint64_t life = x->removed_us > first ? x->removed_us - first : 0;
	char b[6][FORMAT_HUMAN_MAX], msg[LOG_MESSAGE_MAX], *p = msg, *end = msg + sizeof(msg);
	char *store[24] = {}, **fields = store;
	struct acct_cgroup_identity id;
	size_t nf = 0;
	/* the name as every text acctd writes shows it (name-escape.h): a
	 * terminal following the log must not obey the name's controls */
	_cleanup_free_ char *text = NULL;
	const char *name = name_text(x->final.key.path, &text);
	/* Memory integrated over recorded time: not for a cgroup whose memory
	 * acctd never read (outside the memory hierarchy) or never recorded. */
	bool integral = rec && rec->recorded_us > 0 && v->memory_bytes != HISTORY_UNKNOWN;

	/* As systemd says it of a stopped unit. */
	appendf(&p, end, "%s: Consumed", name);
	const char *sep = " ";
	if (cpu != HISTORY_UNKNOWN) {
		appendf(&p, end, "%s%s CPU time", sep, format_duration(b[0], cpu));
		sep = ", ";
	}
	if (peak != HISTORY_UNKNOWN) {
		appendf(&p, end, "%s%s memory peak", sep, format_bytes(b[1], peak));
		sep = ", ";
	}
	if (integral) {
		appendf(&p, end, "%s%s memory average", sep,
			format_bytes(b[2], (int64_t)(rec->memory_byte_seconds * 1e6 / (double)rec->recorded_us)));
		/* the average is over the time with data, which the lifetime
		 * below exceeds by more than the wait for the first recording
		 * (up to an interval) only where acctd was down meanwhile */
		if (rec->recorded_us + interval_us + USEC_PER_SEC < life)
			appendf(&p, end, " (over %s recorded)", format_duration(b[5], (int64_t)rec->recorded_us));
		sep = ", ";
	}
	if (rd != HISTORY_UNKNOWN && wr != HISTORY_UNKNOWN) {
		appendf(&p, end, "%s%s read, %s written", sep, format_bytes(b[3], rd), format_bytes(b[4], wr));
		sep = ", ";
	}
	appendf(&p, end, "%s over %s.", sep[0] == ' ' ? " nothing" : "", format_duration(b[2], (int64_t)life));
	/* Values read before its last task left, or without a way to know
	 * when that was: what it used after that read is not in them. */
	if (x->not_final) {
		appendf(&p, end, " Not final: last read %s before its removal (%s)",
			format_duration(b[5], (int64_t)(x->removed_us > x->last_read_us ? x->removed_us - x->last_read_us
											  : 0)),
			x->not_final);
		if (cpu != HISTORY_UNKNOWN && x->final_cpu_usec_bound > 0)
			appendf(&p, end, "; up to %s more CPU time", format_duration(b[5], x->final_cpu_usec_bound));
		appendf(&p, end, ".");
	}

	field(&fields, &nf, "MESSAGE_ID=%s", HISTORY_RECORD_MESSAGE_ID);
	field(&fields, &nf, "ACCTD_RECORD_VERSION=%d", HISTORY_RECORD_VERSION);
	field(&fields, &nf, "ACCTD_CGROUP=%s", name);
	/* what it was, as /metrics' acctd_cgroup_info says it: a fleet's
	 * collector selects and groups records by these (docs/fleet.md) */
	if (acct_cgroup_identity(name, &id)) {
		if (id.service[0])
			field(&fields, &nf, "ACCTD_SERVICE=%s", id.service);
		if (id.pod[0])
			field(&fields, &nf, "ACCTD_POD=%s", id.pod);
		if (id.container[0])
			field(&fields, &nf, "ACCTD_CONTAINER=%s", id.container);
	}
	if (cpu != HISTORY_UNKNOWN)
		field(&fields, &nf, "ACCTD_CPU_USEC=%" PRId64, cpu);
	if (cpu != HISTORY_UNKNOWN && x->final_cpu_usec_bound > 0)
		field(&fields, &nf, "ACCTD_CPU_USEC_BOUND=%" PRId64, x->final_cpu_usec_bound);
	if (peak != HISTORY_UNKNOWN)
		field(&fields, &nf, "ACCTD_MEMORY_PEAK_BYTES=%" PRId64, peak);
	if (integral) {
		field(&fields, &nf, "ACCTD_MEMORY_BYTE_SECONDS=%.0f", rec->memory_byte_seconds);
		field(&fields, &nf, "ACCTD_RECORDED_USEC=%" PRIu64, rec->recorded_us);
	}
	if (rd != HISTORY_UNKNOWN)
		field(&fields, &nf, "ACCTD_IO_READ_BYTES=%" PRId64, rd);
	if (wr != HISTORY_UNKNOWN)
		field(&fields, &nf, "ACCTD_IO_WRITE_BYTES=%" PRId64, wr);
	field(&fields, &nf, "ACCTD_FIRST_SEEN_USEC=%" PRIu64, first);
	field(&fields, &nf, "ACCTD_REMOVED_USEC=%" PRIu64, x->removed_us);
	field(&fields, &nf, "ACCTD_LIFETIME_USEC=%" PRIu64, life);
	field(&fields, &nf, "ACCTD_FINAL=%s", x->not_final ?: "final");
	if (x->not_final)
		field(&fields, &nf, "ACCTD_LAST_READ_USEC=%" PRIu64, x->last_read_us);
	fields[nf] = NULL;

	/* Under systemd the log is the journal: one entry with the fields. From
	 * a terminal the log is stderr; the entry goes to the journal as well
	 * when there is one, for the pipelines that collect it (log_record():
	 * through the log's writer, so that a stalled journal never holds the
	 * recorder). Rate limited per cause: a delegated user
	 * removing cgroups by the thousand would flood the log; the store keeps
	 * every record, the summary counts the rest. */
	static struct log_ratelimit records = LOG_RATELIMIT_INIT("removal records");
	if (log_ratelimit_below(&records))
		log_record(LOG_INFO, 0, __FILE__, __LINE__, __func__, (const char *const *)fields, "%s", msg);
	for (size_t i = 0; i < nf; i++)
		free(fields[i]);
}

static void removed(struct history_recorder *r, struct removal *x)
{
	_cleanup_free_ char *error = NULL;
	struct history_record rec = {};
	bool have = false;

	if (ensure_open(r, x->removed_us) == 0) {
		int k = history_store_removed(r->store, &x->final.key, &x->final.v, x->final_cpu_usec_bound, x->removed_us,
					      &rec, &error);
		if (k == -ENOENT && r->recorded) {
			/* Created and removed between two recordings: its life
			 * recorded from its final values, then ended. Not before
			 * the run's first full recording, which ends the previous
			 * run's lives it does not name. */
			free(error);
			error = NULL;
			k = history_store_removed_unrecorded(r->store, &x->final, x->final_cpu_usec_bound, x->removed_us,
							     &rec, &error);
		}
		if (k >= 0)
			have = true;
		else if (k != -ENOENT)
			store_failed(r, k, "record the removal of a cgroup in", error);
	}
	/* summary: the event loop counts it in a line per window (manager-history.c) */
	if (r->have.removals == ACCT_REMOVALS_EACH)
		account(x, have ? &rec : NULL, r->have.interval_us);
	if (have)
		history_record_clear(&rec);
	worker_lock(r->worker);
	r->status.records_total++;
	worker_unlock(r->worker);
}

/* Apply the settings asked for. Called with the lock held. */
static void apply_settings(struct history_recorder *r)
{
	struct settings *w = &r->want, *h = &r->have;
	bool reopen = w->enabled != h->enabled || w->interval_us != h->interval_us || !same_string(w->path, h->path);

	if (reopen) {
		worker_unlock(r->worker);
		close_store(r);
		worker_lock(r->worker);
	}
	free(h->path);
	*h = *w;
	h->path = w->path ? strdup(w->path) : NULL;
	r->have_generation = r->want_generation;
	if (reopen)
		r->progress_us = history_now_us(); /* the next recording is an interval away */
	r->status.enabled = h->enabled;
	snprintf(r->status.path, sizeof(r->status.path), "%s", h->path ?: "");
	if (!h->enabled) {
		r->status.state = HISTORY_STATE_OFF;
		r->status.last_error[0] = 0;
		r->condition[0] = 0;
	} else if (r->status.state == HISTORY_STATE_OFF)
		r->status.state = HISTORY_STATE_RECORDING;
	if (r->store)
		history_store_set_limits(r->store, &h->limits);
}

/* Everything handed over before the stop is done before the thread ends:
 * the loop leaves only when nothing is left. */
static void recorder_main(struct worker *w, unsigned index, void *userdata)
{
	struct history_recorder *r = userdata;

	(void)index;
	worker_lock(w);
	for (;;) {
		while (!r->has_pending && !r->removals && r->have_generation == r->want_generation &&
		       !worker_stopping(w))
			worker_wait(w);
		if (r->have_generation != r->want_generation)
			apply_settings(r);
		/* Removals first: they happened before the recording that waits
		 * (which no longer lists them). */
		struct removal *x = r->removals;
		if (x) {
			r->removals = x->next;
			if (!r->removals)
				r->removals_tail = &r->removals;
			worker_unlock(r->worker);
			removed(r, x); /* the record goes to the journal with history off too */
			free((char *)x->final.key.path);
			free(x);
			worker_lock(r->worker);
			continue;
		}
		if (r->has_pending) {
			struct history_sample *s = TAKE_PTR(r->pending);
			size_t n = r->pending_n;
			struct history_charge_sample *c = TAKE_PTR(r->pending_charges);
			size_t n_charges = r->pending_charges_n;
			uint64_t now_us = r->pending_us;
			r->has_pending = false;
			worker_unlock(r->worker);
			if (r->have.enabled)
				record(r, now_us, s, n, c, n_charges);
			history_samples_free(s, n);
			history_charge_samples_free(c, n_charges);
			worker_lock(r->worker);
			continue;
		}
		if (worker_stopping(w))
			break;
	}
	worker_unlock(w);
	close_store(r);
}

/* ---- the event loop's side -------------------------------------------------- */

DEFINE_TRIVIAL_CLEANUP_FUNC(struct history_recorder *, history_recorder_free);

int history_recorder_new(const struct acct_config *c, struct history_recorder **ret)
{
	_cleanup_(history_recorder_freep) struct history_recorder *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->removals_tail = &r->removals;
	/* Named for a person (top -H, ps -L) and for the tests, which stop
	 * this one thread to stall the recorder (test_history_stall.py). */
	int k = worker_new("acctd-history", 1, recorder_main, r, &r->worker);
	if (k < 0)
		return k;
	k = settings_from_config(c, &r->want);
	if (k < 0)
		return k;
	r->want_generation = 1;
	r->status.enabled = r->want.enabled;
	r->status.state = r->want.enabled ? HISTORY_STATE_RECORDING : HISTORY_STATE_OFF;
	r->progress_us = history_now_us();
	snprintf(r->status.path, sizeof(r->status.path), "%s", r->want.path ?: "");
	k = worker_start(r->worker);
	if (k < 0)
		return k;
	*ret = TAKE_PTR(r);
	return 0;
}

void history_recorder_configure(struct history_recorder *r, const struct acct_config *c)
{
	struct settings s;
	if (settings_from_config(c, &s) < 0)
		return;
	worker_lock(r->worker);
	settings_clear(&r->want);
	r->want = s;
	r->want_generation++;
	worker_wake_one_locked(r->worker);
	worker_unlock(r->worker);
}

void history_recorder_submit(struct history_recorder *r, uint64_t now_us, struct history_sample *samples, size_t n,
			     struct history_charge_sample *charges, size_t n_charges)
{
	uint64_t stalled;
	worker_lock(r->worker);
	if (r->has_pending) {
		history_samples_free(r->pending, r->pending_n);
		history_charge_samples_free(r->pending_charges, r->pending_charges_n);
	}
	r->pending = samples;
	r->pending_n = n;
	r->pending_charges = charges;
	r->pending_charges_n = n_charges;
	r->pending_us = now_us;
	r->has_pending = true;
	worker_wake_one_locked(r->worker);
	/* The thread cannot report that it is blocked: warn here, once. */
	stalled = r->stall_logged ? 0 : stalled_for(r, history_now_us());
	if (stalled)
		r->stall_logged = true;
	uint64_t interval_us = r->want.interval_us;
	worker_unlock(r->worker);
	if (stalled)
		log_warning("History: no recording for %s (every %s): the recorder is stalled; the time it does not "
			    "record will be a gap in the history",
			    format_duration((char[FORMAT_HUMAN_MAX]){}, (int64_t)stalled),
			    format_duration((char[FORMAT_HUMAN_MAX]){}, (int64_t)interval_us));
}

void history_recorder_removed(struct history_recorder *r, const struct history_sample *final, uint64_t first_seen_us,
			      uint64_t removed_us, uint64_t last_read_us, const char *not_final,
			      int64_t final_cpu_usec_bound)
{
	struct removal *x = calloc(1, sizeof(*x));
	if (!x)
		return;
	*x = (struct removal){ .final = *final, .first_seen_us = first_seen_us, .removed_us = removed_us,
			       .last_read_us = last_read_us, .not_final = not_final,
			       .final_cpu_usec_bound = not_final ? final_cpu_usec_bound : 0 };
	x->final.key.path = strdup(final->key.path);
	if (!x->final.key.path) {
		free(x);
		return;
	}
	worker_lock(r->worker);
	*r->removals_tail = x;
	r->removals_tail = &x->next;
	worker_wake_one_locked(r->worker);
	worker_unlock(r->worker);
}

void history_recorder_get_status(struct history_recorder *r, struct history_recorder_status *ret)
{
	uint64_t now = history_now_us();
	worker_lock(r->worker);
	*ret = r->status;
	ret->interval_us = r->want.interval_us;
	ret->last_recording_age_us = !ret->last_recording_us ? UINT64_MAX
				     : now > ret->last_recording_us ? now - ret->last_recording_us
								    : 0;
	ret->stalled_us = ret->state != HISTORY_STATE_OFF ? stalled_for(r, now) : 0;
	if (ret->stalled_us)
		ret->state = HISTORY_STATE_STALLED;
	worker_unlock(r->worker);
}

struct history_recorder *history_recorder_free(struct history_recorder *r)
{
	if (!r)
		return NULL;
	/* What is queued is written first (recorder_main()). */
	r->worker = worker_free(r->worker);
	history_samples_free(r->pending, r->pending_n);
	history_charge_samples_free(r->pending_charges, r->pending_charges_n);
	for (struct removal *x = r->removals, *next; x; x = next) {
		next = x->next;
		free((char *)x->final.key.path);
		free(x);
	}
	close_store(r);
	settings_clear(&r->want);
	settings_clear(&r->have);
	free(r);
	return NULL;
}
