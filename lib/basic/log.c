/* log.c - formatting and delivery of log messages to the journal or stderr,
 * the queue and writer thread that keep a slow reader from blocking acctd, and
 * per-cause rate limits. The contract is in log.h.
 *
 * A message is formatted into a struct entry on the caller's stack, with room
 * for its prefix ("MESSAGE=" for the journal, "TIME LEVEL: " for stderr)
 * before the text, so it leaves in a single sd_journal_sendv() or write(2).
 * Synchronous delivery sends that entry; queued delivery copies it into a ring
 * of LOG_QUEUE_SLOTS entries under `lock` and the writer thread sends it from
 * there: only one consumer, which reads the slot at `head` without the lock
 * (producers write only slots between tail and head + LOG_QUEUE_SLOTS). */
#define SD_JOURNAL_SUPPRESS_LOCATION /* we send the caller's CODE_* fields */

#include "log.h"

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "util.h"

#define LOG_IDENTIFIER "acctd"
#define PREFIX_MAX 48 /* room before the message: "MESSAGE=", "2026-12-01 13:30:05.123 warning: " */
#define FIELD_KEY_MAX 64
#define JOURNAL_SOCKET "/run/systemd/journal/socket" /* exists where a journald runs */

static int max_level = LOG_INFO;
static int target_set = LOG_TARGET_AUTO; /* as set */
static int target_now = LOG_TARGET_AUTO; /* in effect; AUTO: not decided yet */

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert",   [LOG_CRIT] = "crit", [LOG_ERR] = "error",
	[LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

int log_set_max_level(int level)
{
	level = MIN(MAX(level, LOG_EMERG), LOG_DEBUG);
	return __atomic_exchange_n(&max_level, level, __ATOMIC_RELAXED);
}

int log_get_max_level(void)
{
	return __atomic_load_n(&max_level, __ATOMIC_RELAXED);
}

/* Parse decimal digits (no sign, no spaces) up to `end`; 0 or -EINVAL. */
static int parse_u64(const char *s, char end, uint64_t *ret, const char **ret_next)
{
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s != end)
		return -EINVAL;
	*ret = v;
	*ret_next = s;
	return 0;
}

/* systemd passes a service whose stderr is connected to the journal
 * JOURNAL_STREAM=DEV:INODE of that stream. The variable is inherited by
 * children whose stderr may be something else, hence the fstat(). */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	uint64_t dev, ino;
	struct stat st;

	if (!e || parse_u64(e, ':', &dev, &e) < 0 || parse_u64(e + 1, '\0', &ino, &e) < 0)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

void log_open(void)
{
	int t = __atomic_load_n(&target_set, __ATOMIC_RELAXED);

	if (t == LOG_TARGET_AUTO)
		t = stderr_is_journal() ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;
	__atomic_store_n(&target_now, t, __ATOMIC_RELAXED);
}

void log_set_target(enum log_target target)
{
	if (target != LOG_TARGET_STDERR && target != LOG_TARGET_JOURNAL && target != LOG_TARGET_JOURNAL_STREAM)
		target = LOG_TARGET_AUTO;
	__atomic_store_n(&target_set, target, __ATOMIC_RELAXED);
	__atomic_store_n(&target_now, target, __ATOMIC_RELAXED);
}

enum log_target log_get_target(void)
{
	int t = __atomic_load_n(&target_now, __ATOMIC_RELAXED);

	if (t == LOG_TARGET_AUTO) {
		int expected = LOG_TARGET_AUTO;

		t = stderr_is_journal() ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;
		/* A concurrent log_set_target() wins over this decision. */
		if (!__atomic_compare_exchange_n(&target_now, &expected, t, false, __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED) &&
		    expected != LOG_TARGET_AUTO)
			t = expected;
	}
	return (enum log_target)t;
}

/* Set by log_stop_writer() when its wait is over: the writer stops waiting
 * for the reader of stderr and drops what is left. */
static bool writer_abandon;
static __thread bool is_writer_thread;

/* Lines dropped (a full queue, a reader gone) and held back by rate limits. */
static uint64_t dropped_total, suppressed_total; /* atomic */

static void write_stderr(const char *p, size_t n)
{
	while (n > 0) {
		/* The writer thread waits for room in short polls, so that
		 * log_stop_writer() can call it off; a pipe with room for
		 * one page takes a line (< PIPE_BUF) without blocking. */
		if (is_writer_thread) {
			struct pollfd pfd = { .fd = STDERR_FILENO, .events = POLLOUT };
			int k = poll(&pfd, 1, 100);
			if (k == 0 || (k < 0 && errno == EINTR)) {
				if (__atomic_load_n(&writer_abandon, __ATOMIC_ACQUIRE))
					return;
				continue;
			}
		}
		ssize_t k = write(STDERR_FILENO, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			/* A reader gone (EPIPE: acctd ignores SIGPIPE) or a
			 * broken file: nowhere left to report it, but counted */
			__atomic_fetch_add(&dropped_total, 1, __ATOMIC_RELAXED);
			return;
		}
		p += k;
		n -= (size_t)k;
	}
}

/* A journal field name: A-Z, 0-9, '_', not starting with '_' (trusted fields)
 * or a digit, at most FIELD_KEY_MAX characters, followed by '='. */
static bool field_valid(const char *f)
{
	size_t i;

	if (!f || f[0] == '_' || (f[0] >= '0' && f[0] <= '9'))
		return false;
	for (i = 0; f[i] != '='; i++) {
		if (i >= FIELD_KEY_MAX)
			return false;
		if (!((f[i] >= 'A' && f[i] <= 'Z') || (f[i] >= '0' && f[i] <= '9') || f[i] == '_'))
			return false; /* also the NUL of a field without '=' */
	}
	return i > 0;
}

/* One message, formatted: what delivery needs, whichever thread delivers it.
 * text holds the prefix room, the message, its NUL, then the valid extra
 * fields, each with its NUL. file and func are the caller's __FILE__ and
 * __func__ (static strings). */
struct entry {
	int level, error, line, tid;
	const char *file, *func;
	struct timespec ts;       /* CLOCK_REALTIME when logged */
	uint64_t dropped_before;  /* queued: messages dropped just before this one */
	uint32_t msg_len;         /* message bytes after the prefix room */
	uint32_t text_len;        /* bytes of text in use */
	uint32_t nfields;
	bool journal_too;         /* log_record(): to a running journal as well */
	char text[PREFIX_MAX + LOG_QUEUE_TEXT];
};

static int send_journal(const struct entry *e, char *msg)
{
	char priority[16], code_line[32], code_file[256], code_func[256], errno_field[32], tid[32];
	struct iovec iov[8 + LOG_FIELDS_MAX];
	int n = 0;

#define IOV_STR(s) ((struct iovec){ .iov_base = (void *)(s), .iov_len = strlen(s) })
	memcpy(msg - 8, "MESSAGE=", 8);
	iov[n++] = (struct iovec){ .iov_base = msg - 8, .iov_len = e->msg_len + 8 };
	(void)snprintf(priority, sizeof(priority), "PRIORITY=%d", e->level);
	iov[n++] = IOV_STR(priority);
	iov[n++] = IOV_STR("SYSLOG_IDENTIFIER=" LOG_IDENTIFIER);
	(void)snprintf(tid, sizeof(tid), "TID=%d", e->tid);
	iov[n++] = IOV_STR(tid);
	if (e->file) {
		(void)snprintf(code_file, sizeof(code_file), "CODE_FILE=%s", e->file);
		iov[n++] = IOV_STR(code_file);
	}
	if (e->line > 0) {
		(void)snprintf(code_line, sizeof(code_line), "CODE_LINE=%d", e->line);
		iov[n++] = IOV_STR(code_line);
	}
	if (e->func) {
		(void)snprintf(code_func, sizeof(code_func), "CODE_FUNC=%s", e->func);
		iov[n++] = IOV_STR(code_func);
	}
	if (e->error != 0) {
		(void)snprintf(errno_field, sizeof(errno_field), "ERRNO=%d", e->error);
		iov[n++] = IOV_STR(errno_field);
	}
	const char *f = msg + e->msg_len + 1;
	for (uint32_t i = 0; i < e->nfields; i++) {
		iov[n++] = IOV_STR(f);
		f += strlen(f) + 1;
	}
#undef IOV_STR
	return sd_journal_sendv(iov, n);
}

/* The prefix of e's line on stderr into stamp: "<N>" on the journal stream
 * (journald reads the priority off it: SyslogLevelPrefix=, on by default),
 * else the local wall-clock time and the level, since stderr (a terminal, a
 * file) has no time of its own. Returns its length. */
static size_t stderr_prefix(const struct entry *e, bool stream, char stamp[static PREFIX_MAX])
{
	if (stream) {
		int w = snprintf(stamp, PREFIX_MAX, "<%d>", e->level);
		return w > 0 ? (size_t)w : 0;
	}
	const char *name = level_names[e->level];
	struct tm tm;
	size_t n = 0;
	int w;

	if (localtime_r(&e->ts.tv_sec, &tm))
		n = strftime(stamp, PREFIX_MAX, "%Y-%m-%d %H:%M:%S", &tm);
	w = n > 0 ? snprintf(stamp + n, PREFIX_MAX - n, ".%03ld %s: ", e->ts.tv_nsec / 1000000, name)
		  : snprintf(stamp, PREFIX_MAX, "%s: ", name);
	return w > 0 ? MIN((size_t)w + n, (size_t)PREFIX_MAX - 1) : 0;
}

/* Send e to the destination in effect. e's text is modified (prefixes). */
static void deliver(struct entry *e)
{
	char *msg = e->text + PREFIX_MAX;
	enum log_target target = log_get_target();
	bool stream = target == LOG_TARGET_JOURNAL_STREAM;

	if (target == LOG_TARGET_JOURNAL) {
		if (send_journal(e, msg) >= 0)
			return;
	} else if (stream) {
		/* a record whose fields are its point goes whole */
		if (e->journal_too && send_journal(e, msg) >= 0)
			return;
	} else if (e->journal_too && access(JOURNAL_SOCKET, F_OK) == 0)
		(void)send_journal(e, msg); /* and stderr below: it writes its own prefix */

	char stamp[PREFIX_MAX];
	size_t n = stderr_prefix(e, stream, stamp);
	char *p = msg - n;

	memcpy(p, stamp, n);
	msg[e->msg_len] = '\n';
	write_stderr(p, (size_t)(msg + e->msg_len + 1 - p));
	msg[e->msg_len] = '\0';
}

/* ---- the queue and its writer ---------------------------------------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond_ready = PTHREAD_COND_INITIALIZER;   /* writer: something to do */
static pthread_cond_t cond_drained = PTHREAD_COND_INITIALIZER; /* log_stop_writer(): the writer moved */
static struct entry *ring;       /* LOG_QUEUE_SLOTS entries; NULL: synchronous */
static uint64_t head, tail;      /* under lock; entries [head, tail) are queued */
static uint64_t pending_drops;   /* under lock: dropped since the last queued entry */
static bool queued;              /* atomic: deliver through the ring */
static bool stopping;            /* under lock */
static bool writer_running;      /* under lock */
static pthread_t writer;

static void summary(uint64_t n, struct timespec ts)
{
	struct entry e = { .level = LOG_WARNING, .tid = (int)gettid(), .ts = ts };
	int k = snprintf(e.text + PREFIX_MAX, LOG_MESSAGE_MAX,
			 "%" PRIu64 " log line%s dropped: the reader of the log was too slow", n, n == 1 ? "" : "s");

	e.msg_len = (uint32_t)MAX(k, 0);
	deliver(&e);
}

static void ratelimit_flush_all(bool force);

static void *writer_main(void *arg)
{
	(void)arg;
	is_writer_thread = true;
	pthread_mutex_lock(&lock);
	for (;;) {
		if (head == tail && pending_drops == 0 && !stopping) {
			/* Wake up at least every second: rate limits whose window
			 * ended have a summary to write. */
			struct timespec dl;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_sec += 1;
			pthread_cond_timedwait(&cond_ready, &lock, &dl);
			if (head == tail && pending_drops == 0 && !stopping) {
				pthread_mutex_unlock(&lock);
				ratelimit_flush_all(false);
				pthread_mutex_lock(&lock);
				continue;
			}
		}
		if (head == tail) {
			if (pending_drops > 0) {
				uint64_t n = pending_drops;
				struct timespec ts;
				pending_drops = 0;
				pthread_mutex_unlock(&lock);
				clock_gettime(CLOCK_REALTIME, &ts);
				if (!__atomic_load_n(&writer_abandon, __ATOMIC_ACQUIRE))
					summary(n, ts);
				pthread_mutex_lock(&lock);
				continue;
			}
			break; /* stopping, all delivered */
		}
		struct entry *e = &ring[head % LOG_QUEUE_SLOTS];
		pthread_mutex_unlock(&lock);
		if (__atomic_load_n(&writer_abandon, __ATOMIC_ACQUIRE))
			/* its dropped_before were counted when dropped */
			__atomic_fetch_add(&dropped_total, 1, __ATOMIC_RELAXED);
		else {
			if (e->dropped_before > 0)
				summary(e->dropped_before, e->ts);
			deliver(e);
		}
		pthread_mutex_lock(&lock);
		head++;
		pthread_cond_broadcast(&cond_drained);
	}
	writer_running = false;
	pthread_cond_broadcast(&cond_drained);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* In a child of fork() only the forking thread exists: no writer, and the
 * lock may have been held by one that is gone. */
static void atfork_child(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;

	lock = m;
	cond_ready = c;
	cond_drained = c;
	__atomic_store_n(&queued, false, __ATOMIC_RELEASE);
	writer_running = false;
	stopping = false;
	head = tail = pending_drops = 0;
}

static void register_atfork(void)
{
	(void)pthread_atfork(NULL, NULL, atfork_child);
}

int log_start_writer(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int r = 0;

	(void)pthread_once(&once, register_atfork);
	pthread_mutex_lock(&lock);
	if (writer_running)
		goto out;
	if (!ring) {
		/* calloc of this size maps fresh zero pages: memory is used
		 * only as far as the queue ever fills */
		ring = calloc(LOG_QUEUE_SLOTS, sizeof(*ring));
		if (!ring) {
			r = -ENOMEM;
			goto out;
		}
	}
	head = tail = pending_drops = 0;
	stopping = false;
	__atomic_store_n(&writer_abandon, false, __ATOMIC_RELEASE);
	r = -pthread_create(&writer, NULL, writer_main, NULL);
	if (r < 0)
		goto out;
	writer_running = true;
	__atomic_store_n(&queued, true, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&lock);
	return r;
}

void log_stop_writer(uint64_t timeout_us)
{
	struct timespec dl;
	bool joined = false;

	/* What the rate limits suppressed so far, into the queue before it
	 * closes. */
	ratelimit_flush_all(true);
	pthread_mutex_lock(&lock);
	if (!writer_running || stopping) {
		pthread_mutex_unlock(&lock);
		return;
	}
	stopping = true;
	pthread_cond_signal(&cond_ready);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)(timeout_us / 1000000);
	dl.tv_nsec += (long)(timeout_us % 1000000) * 1000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	while (writer_running)
		if (pthread_cond_timedwait(&cond_drained, &lock, &dl) == ETIMEDOUT)
			break;
	if (writer_running) {
		/* The reader did not take what was left in time: the writer
		 * drops it (counted) and exits, unless it is inside
		 * sd_journal_sendv(), which cannot be called off. */
		__atomic_store_n(&writer_abandon, true, __ATOMIC_RELEASE);
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += 300 * 1000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
		while (writer_running)
			if (pthread_cond_timedwait(&cond_drained, &lock, &dl) == ETIMEDOUT)
				break;
	}
	joined = !writer_running;
	pthread_mutex_unlock(&lock);
	if (joined) {
		(void)pthread_join(writer, NULL);
		__atomic_store_n(&queued, false, __ATOMIC_RELEASE);
	} else
		(void)pthread_detach(writer); /* stays queued: messages now drop, counted */
}

uint64_t log_dropped_total(void)
{
	return __atomic_load_n(&dropped_total, __ATOMIC_RELAXED);
}

uint64_t log_suppressed_total(void)
{
	return __atomic_load_n(&suppressed_total, __ATOMIC_RELAXED);
}

/* Queue e (its used bytes), or drop and count it when the queue is full or
 * stopping. */
static void enqueue(const struct entry *e)
{
	pthread_mutex_lock(&lock);
	if (tail - head >= LOG_QUEUE_SLOTS || stopping) {
		pending_drops++;
		__atomic_fetch_add(&dropped_total, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&lock);
		return;
	}
	struct entry *slot = &ring[tail % LOG_QUEUE_SLOTS];
	memcpy(slot, e, offsetof(struct entry, text));
	memcpy(slot->text + PREFIX_MAX, e->text + PREFIX_MAX, e->text_len);
	slot->dropped_before = pending_drops;
	pending_drops = 0;
	tail++;
	pthread_cond_signal(&cond_ready);
	pthread_mutex_unlock(&lock);
}

/* ---- rate limits -------------------------------------------------------------- */

static pthread_mutex_t rl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct log_ratelimit *rl_list; /* under rl_lock: limiters that were used */
static uint64_t rl_interval_us = 30 * 1000000ULL, rl_burst = 30;

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t rl_interval(const struct log_ratelimit *rl)
{
	return rl->interval_us ?: rl_interval_us;
}

/* The window of rl ended at now: the number it suppressed, its window reset.
 * Under rl_lock. */
static uint64_t rl_end(struct log_ratelimit *rl, uint64_t now, bool force)
{
	uint64_t n = 0;
	if (force || rl->begin_us == 0 || now - rl->begin_us >= rl_interval(rl)) {
		n = rl->suppressed;
		rl->begin_us = 0;
		rl->num = 0;
		rl->suppressed = 0;
	}
	return n;
}

static void rl_summary(const struct log_ratelimit *rl, uint64_t n, uint64_t interval)
{
	char fields[2][64];
	snprintf(fields[0], sizeof(fields[0]), "ACCTD_SUPPRESSED=%" PRIu64, n);
	snprintf(fields[1], sizeof(fields[1]), "ACCTD_SUPPRESSED_WHAT=%s", rl->what ?: "messages");
	(void)log_fields(LOG_NOTICE, 0, __FILE__, __LINE__, __func__, LOG_FIELDS(fields[0], fields[1]),
			 "Suppressed %" PRIu64 " %s in the last %" PRIu64 "s (rate limit: [log] rate_limit_burst)", n,
			 rl->what ?: "messages", (interval + 999999) / 1000000);
}

/* Summaries of the windows that ended; with force, of every window (at the
 * stop: what was suppressed is said before the process exits). */
static void ratelimit_flush_all(bool force)
{
	struct {
		struct log_ratelimit *rl;
		uint64_t n, interval;
	} due[16];
	size_t k = 0;
	uint64_t now = mono_us();

	pthread_mutex_lock(&rl_lock);
	for (struct log_ratelimit *rl = rl_list; rl && k < ELEMENTSOF(due); rl = rl->next)
		if (rl->suppressed > 0) {
			uint64_t interval = force ? MIN(now - rl->begin_us, rl_interval(rl)) : rl_interval(rl);
			uint64_t n = rl_end(rl, now, force);
			if (n > 0)
				due[k++] = (typeof(due[0])){ rl, n, interval };
		}
	pthread_mutex_unlock(&rl_lock);
	for (size_t i = 0; i < k; i++)
		rl_summary(due[i].rl, due[i].n, due[i].interval);
}

void log_ratelimit_set_default(uint64_t interval_us, uint64_t burst)
{
	pthread_mutex_lock(&rl_lock);
	rl_interval_us = interval_us ?: 1;
	rl_burst = burst;
	pthread_mutex_unlock(&rl_lock);
}

int log_ratelimit_below(struct log_ratelimit *rl)
{
	uint64_t now = mono_us(), ended, interval;
	bool ok;

	pthread_mutex_lock(&rl_lock);
	if (!rl->registered) {
		rl->registered = 1;
		rl->next = rl_list;
		rl_list = rl;
	}
	interval = rl_interval(rl);
	ended = rl_end(rl, now, false);
	uint64_t burst = rl->burst ?: rl_burst;
	if (rl->begin_us == 0)
		rl->begin_us = now ?: 1;
	ok = burst == 0 || rl->num < burst;
	if (ok)
		rl->num++;
	else {
		rl->suppressed++;
		__atomic_fetch_add(&suppressed_total, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&rl_lock);
	if (ended > 0)
		rl_summary(rl, ended, interval);
	return ok;
}

/* ---- formatting ----------------------------------------------------------------- */

static int log_dispatchv(int level, int error, const char *file, int line, const char *func,
			 const char *const fields[], bool journal_too, const char *format, va_list ap)
	__attribute__((format(printf, 8, 0)));

static int log_dispatchv(int level, int error, const char *file, int line, const char *func,
			 const char *const fields[], bool journal_too, const char *format, va_list ap)
{
	int saved_errno = errno;
	struct entry e;
	char *msg = e.text + PREFIX_MAX;
	size_t len;
	int k;

	error = log_errno_value(error);
	level = LOG_PRI(level);
	if (level > log_get_max_level())
		return -error;

	if (error != 0)
		errno = error; /* for %m */
	k = vsnprintf(msg, LOG_MESSAGE_MAX, format, ap);
	if (k < 0)
		k = snprintf(msg, LOG_MESSAGE_MAX, "(unformattable message: %s)", format);
	k = MAX(k, 0);
	len = MIN((size_t)k, (size_t)LOG_MESSAGE_MAX - 1);
	if (k >= LOG_MESSAGE_MAX) /* truncated */
		memcpy(msg + len - 3, "...", 3);
	while (len > 0 && msg[len - 1] == '\n')
		len--;
	msg[len] = '\0';

	e.level = level;
	e.error = error;
	e.file = file;
	e.line = line;
	e.func = func;
	e.tid = (int)gettid();
	e.dropped_before = 0;
	if (clock_gettime(CLOCK_REALTIME, &e.ts) < 0)
		e.ts = (struct timespec){ 0 };
	e.msg_len = (uint32_t)len;
	e.nfields = 0;
	e.journal_too = journal_too;
	/* The fields after the message, as many as fit. */
	size_t used = len + 1;
	for (size_t i = 0; fields && fields[i] && e.nfields < LOG_FIELDS_MAX; i++) {
		if (!field_valid(fields[i]))
			continue;
		size_t fl = strlen(fields[i]) + 1;
		if (used + fl > LOG_QUEUE_TEXT)
			break;
		memcpy(msg + used, fields[i], fl);
		used += fl;
		e.nfields++;
	}
	e.text_len = (uint32_t)used;

	if (__atomic_load_n(&queued, __ATOMIC_ACQUIRE))
		enqueue(&e);
	else
		deliver(&e);

	errno = saved_errno;
	return -error;
}
int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
{
	va_list ap;
	int r;

	va_start(ap, format);
	r = log_dispatchv(level, error, file, line, func, NULL, false, format, ap);
	va_end(ap);
	return r;
}

int log_fields(int level, int error, const char *file, int line, const char *func, const char *const fields[],
	       const char *format, ...)
{
	va_list ap;
	int r;

	va_start(ap, format);
	r = log_dispatchv(level, error, file, line, func, fields, false, format, ap);
	va_end(ap);
	return r;
}

int log_record(int level, int error, const char *file, int line, const char *func, const char *const fields[],
	       const char *format, ...)
{
	va_list ap;
	int r;

	va_start(ap, format);
	r = log_dispatchv(level, error, file, line, func, fields, true, format, ap);
	va_end(ap);
	return r;
}
