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
 * on the stack (no allocation; at most LOG_MESSAGE_MAX - 1 bytes, longer ones
 * end in "...") and leaves in one sd_journal_sendv() or one write(2) (below
 * PIPE_BUF, so a pipe never splits it): lines of concurrent threads never
 * interleave. errno is preserved. log_open() and
 * log_set_target() are meant for startup and tests; calling them while other
 * threads log is safe, but those threads may log one more message to the old
 * destination. */
#pragma once

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <syslog.h>

#define LOG_MESSAGE_MAX 2048 /* bytes of formatted message, NUL included */
#define LOG_FIELDS_MAX 32    /* extra journal fields per message; more are dropped */

enum log_target {
	LOG_TARGET_AUTO = 0, /* journal if stderr is a journal stream, else stderr */
	LOG_TARGET_STDERR,
	LOG_TARGET_JOURNAL,
};

/* Decide the destination of LOG_TARGET_AUTO now, from $JOURNAL_STREAM and
 * stderr. Logging without log_open() decides at the first message; calling it
 * again decides again (after stderr was redirected). Cannot fail. */
void log_open(void);

/* Set the destination. AUTO is decided at the next log_open() or message;
 * STDERR and JOURNAL are used as they are (JOURNAL falls back to stderr per
 * message when sending fails, see above); other values mean AUTO. */
void log_set_target(enum log_target target);

/* The destination in effect: LOG_TARGET_STDERR or LOG_TARGET_JOURNAL (AUTO is
 * decided first). */
enum log_target log_get_target(void);

/* Messages with a priority above `level` (less important) are dropped; the
 * default is LOG_INFO. Values outside LOG_EMERG..LOG_DEBUG are clamped.
 * Returns the previous maximum. */
int log_set_max_level(int level);
int log_get_max_level(void);

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
