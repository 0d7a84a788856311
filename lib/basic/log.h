/* log.h - acctd's log: syslog priorities, sent to the journal with structured
 * fields when acctd runs as a systemd service, else one line per message on
 * stderr.
 *
 * Usage follows systemd's: log once, at the boundary, and return the error in
 * the same statement,
 *
 *     return log_error_errno(r, "Failed to open %s: %m", path);
 *
 * where %m is strerror(|r|) and the value is -|r|. Library code logs at debug
 * level at most (STYLE.md).
 *
 * Destination. With LOG_TARGET_AUTO (the default) the log goes to the journal
 * when stderr is a journal stream: systemd then sets $JOURNAL_STREAM to
 * "DEVICE:INODE" of that stream, and fstat(STDERR_FILENO) must match it (a
 * child whose stderr was redirected inherits the variable but not the stream).
 * Everything else goes to stderr as "YYYY-MM-DD HH:MM:SS.mmm LEVEL: message\n"
 * (local wall-clock time; error, warning, notice, info, debug; emerg, alert,
 * crit), without a program name; the journal keeps its own time instead.
 *
 * Journal fields. Every message carries MESSAGE, PRIORITY, SYSLOG_IDENTIFIER=
 * acctd, CODE_FILE, CODE_LINE, CODE_FUNC, TID, ERRNO when error != 0, and the
 * caller's extra "KEY=value" fields (log_fields()). If sd_journal_sendv()
 * fails the message goes to stderr instead; note that it reports success when
 * no journal socket exists (/run/systemd/journal/socket), so LOG_TARGET_JOURNAL
 * set by hand without a journald drops messages.
 *
 * Threads. Every function may be called from any thread. A message is formatted
 * on the caller's stack (no allocation; at most LOG_MESSAGE_MAX - 1 bytes,
 * longer ones end in "...") and leaves in one sd_journal_sendv() or one
 * write(2) (below PIPE_BUF, so a pipe never splits it): lines of concurrent
 * threads never interleave. errno is preserved. log_open() and
 * log_set_target() are meant for startup and tests; calling them while other
 * threads log is safe, but those threads may log one more message to the old
 * destination.
 *
 * Synchronous and queued delivery. Until log_start_writer() a message is
 * written by the thread that logs it, which blocks for as long as the reader
 * of stderr or the journal does not take it: right for short runs (--dump,
 * --check-config, --bpf-pin, tests) and the start. After
 * log_start_writer() (acctd's run) a message is copied into a bounded
 * in-memory queue (LOG_QUEUE_SLOTS messages, no allocation, a mutex held for
 * one copy) and one writer thread delivers it, in the order logged: a thread
 * that logs never waits for a reader. When the queue is full the message is
 * dropped and counted (log_dropped_total()); the writer then writes
 * "N log lines dropped" at the place of the gap, in the order of the others,
 * once the reader takes lines again. The time on stderr is the time the
 * message was logged, TID the logging thread's; the journal stamps its entry
 * when it receives it. log_stop_writer() delivers what is queued within a
 * bounded wait and returns to synchronous delivery. A child of fork() starts
 * synchronous (pthread_atfork). */
#pragma once

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <syslog.h>

#define LOG_MESSAGE_MAX 2048 /* bytes of formatted message, NUL included */
#define LOG_FIELDS_MAX 32    /* extra journal fields per message; more are dropped */
#define LOG_QUEUE_SLOTS 256  /* messages the queue holds (log_start_writer()) */
#define LOG_QUEUE_TEXT 6144  /* bytes of message and fields per queued message; fields beyond are dropped */

enum log_target {
	LOG_TARGET_AUTO = 0, /* journal if stderr is a journal stream, else stderr */
	LOG_TARGET_STDERR,
	LOG_TARGET_JOURNAL,
	/* The journal through the stream on stderr, as "<N>message\n" (a
	 * message marked journal-too, whose fields are its point, still goes
	 * through the native socket): for a process that exits right after it
	 * logs, such as acctd --bpf-pin run as ExecStartPre=. journald learns
	 * the unit of a native message by reading /proc/PID of its sender,
	 * which is gone once the sender has exited, so "journalctl -u" misses
	 * the message (systemd issue 2913); a stream's unit is learned when
	 * systemd connects it, before the process runs. Never chosen by AUTO. */
	LOG_TARGET_JOURNAL_STREAM,
};

/* Decide the destination of LOG_TARGET_AUTO now, from $JOURNAL_STREAM and
 * stderr. Logging without log_open() decides at the first message; calling it
 * again decides again (after stderr was redirected). Cannot fail. */
void log_open(void);

/* Set the destination. AUTO is decided at the next log_open() or message;
 * STDERR, JOURNAL and JOURNAL_STREAM are used as they are (JOURNAL falls back
 * to stderr per message when sending fails, see above); other values mean
 * AUTO. */
void log_set_target(enum log_target target);

/* The destination in effect: LOG_TARGET_STDERR, LOG_TARGET_JOURNAL or
 * LOG_TARGET_JOURNAL_STREAM (AUTO is decided first). */
enum log_target log_get_target(void);

/* Messages with a priority above `level` (less important) are dropped; the
 * default is LOG_INFO. Values outside LOG_EMERG..LOG_DEBUG are clamped.
 * Returns the previous maximum. */
int log_set_max_level(int level);
int log_get_max_level(void);

/* Start the writer thread: from now on messages are queued and delivered by
 * it (see "Synchronous and queued delivery" above). Idempotent. Returns 0, or
 * a negative errno (memory, threads) with delivery left synchronous. */
int log_start_writer(void);

/* Stop the writer thread: deliver what is queued, waiting at most
 * `timeout_us` for a slow reader, then drop (and count) the rest and return to
 * synchronous delivery. A writer stuck in sd_journal_sendv() past the wait is
 * left behind (the process is about to exit) and later messages are dropped
 * and counted. No-op without a writer. */
void log_stop_writer(uint64_t timeout_us);

/* Messages dropped because the queue was full (a slow or stopped reader), since
 * the start; and messages a rate limit suppressed (struct log_ratelimit). */
uint64_t log_dropped_total(void);
uint64_t log_suppressed_total(void);

/* Per-cause rate limits, as systemd's log_ratelimit: at most `burst` messages
 * of one cause per `interval_us`; the rest are suppressed and counted, and a
 * summary "Suppressed N <what> in the last <interval>" is logged (at notice)
 * once the window has ended: by the writer thread within a second, or without
 * one at the cause's next message; log_stop_writer() says what every window
 * suppressed so far. A limiter is a static object of the code
 * that logs, e.g.
 *
 *     static struct log_ratelimit rl = LOG_RATELIMIT_INIT("removal records");
 *     if (log_ratelimit_below(&rl))
 *             log_info(...);
 *
 * interval_us and burst of 0 take the process-wide defaults
 * (log_ratelimit_set_default(); until then 30 s and 30). Thread-safe. */
struct log_ratelimit {
	const char *what;  /* the summary's noun: "removal records" */
	uint64_t interval_us, burst;
	/* private */
	uint64_t begin_us, num, suppressed;
	int registered;
	struct log_ratelimit *next;
};
#define LOG_RATELIMIT_INIT(what_) { .what = (what_) }

/* True when a message of this cause may be logged now; false when it is
 * suppressed (and counted). Costs a mutex and a clock read. */
int log_ratelimit_below(struct log_ratelimit *rl);

/* The defaults for limiters whose interval_us and burst are 0 ([log]
 * rate_limit_interval, rate_limit_burst). burst 0 means no limit. */
void log_ratelimit_set_default(uint64_t interval_us, uint64_t burst);

/* |error| as a positive errno value; INT_MIN gives INT_MAX. */
static inline int log_errno_value(int error)
{
	return error == INT_MIN ? INT_MAX : abs(error);
}

/* Log `format` at priority `level` (LOG_PRI(level) is used; a facility is
 * ignored) unless it is above the maximum. When error != 0, errno is set to
 * |error| before formatting, so %m prints strerror(|error|), and the journal
 * gets ERRNO=|error|; with error = 0 %m prints the caller's errno. `file`,
 * `line`, `func` are the caller's (the macros below pass them; NULL/0 omit
 * them). Returns -|error| (0 when error is 0), whether or not anything was
 * written; errno is left as it was. */
int log_internal(int level, int error, const char *file, int line, const char *func, const char *format,
		 ...) __attribute__((format(printf, 6, 7)));

/* log_internal() with extra journal fields: `fields` is a NULL-terminated
 * array (or NULL) of "KEY=value" strings, KEY made of A-Z, 0-9 and '_', not
 * starting with '_', at most 64 characters. Invalid fields and those beyond
 * LOG_FIELDS_MAX are dropped; the message is sent regardless. On stderr the
 * fields are not shown. Returns -|error|. */
int log_fields(int level, int error, const char *file, int line, const char *func, const char *const fields[],
	       const char *format, ...) __attribute__((format(printf, 7, 8)));

/* log_fields() for a record that readers collect from the journal (acctd's
 * accounting records, docs/history.md): when the log is not the journal but a
 * journal runs on this host (its socket exists), the entry with its fields is
 * sent to the journal as well as written to stderr. Delivered like any other
 * message (by the log writer once started: the caller never waits for the
 * journal). Returns -|error|. */
int log_record(int level, int error, const char *file, int line, const char *func, const char *const fields[],
	       const char *format, ...) __attribute__((format(printf, 7, 8)));

/* The macros evaluate their format arguments only when the level is logged. */
#define log_full_errno(level, error, ...)                                                              \
	({                                                                                             \
		int _log_level_ = (level), _log_error_ = (error);                                      \
		log_get_max_level() >= LOG_PRI(_log_level_)                                            \
			? log_internal(_log_level_, _log_error_, __FILE__, __LINE__, __func__, __VA_ARGS__) \
			: -log_errno_value(_log_error_);                                               \
	})
#define log_full(level, ...) ((void)log_full_errno((level), 0, __VA_ARGS__))

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)

#define log_oom() log_error_errno(ENOMEM, "Out of memory.")

/* A NULL-terminated field array for log_full_fields(): LOG_FIELDS("CGROUP=/a", "UNIT=b.service"). */
#define LOG_FIELDS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* log_fields() with the caller's location:
 *     log_full_fields(LOG_WARNING, r, LOG_FIELDS(cgroup_field), "Failed to read %s: %m", p); */
#define log_full_fields(level, error, fields, ...)                                                       \
	({                                                                                               \
		int _log_level_ = (level), _log_error_ = (error);                                        \
		log_get_max_level() >= LOG_PRI(_log_level_)                                              \
			? log_fields(_log_level_, _log_error_, __FILE__, __LINE__, __func__, (fields),   \
				     __VA_ARGS__)                                                        \
			: -log_errno_value(_log_error_);                                                 \
	})
