/* log.c - formatting and delivery of log messages to the journal or stderr.
 * The contract is in log.h.
 *
 * State is three atomic ints and no lock: a message is formatted into one
 * stack buffer behind room for its prefix ("MESSAGE=" for the journal, "TIME LEVEL: "
 * for stderr), so it leaves in a single sd_journal_sendv() or write(2) without
 * a copy. */
#define SD_JOURNAL_SUPPRESS_LOCATION /* we send the caller's CODE_* fields */

#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
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
	if (target != LOG_TARGET_STDERR && target != LOG_TARGET_JOURNAL)
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

static void write_stderr(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(STDERR_FILENO, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere left to report it */
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

static int send_journal(int level, int error, const char *file, int line, const char *func,
			const char *const fields[], char *msg, size_t msg_len)
{
	char priority[16], code_line[32], code_file[256], code_func[256], errno_field[32], tid[32];
	struct iovec iov[8 + LOG_FIELDS_MAX];
	int n = 0;

#define IOV_STR(s) ((struct iovec){ .iov_base = (void *)(s), .iov_len = strlen(s) })
	memcpy(msg - 8, "MESSAGE=", 8);
	iov[n++] = (struct iovec){ .iov_base = msg - 8, .iov_len = msg_len + 8 };
	(void)snprintf(priority, sizeof(priority), "PRIORITY=%d", level);
	iov[n++] = IOV_STR(priority);
	iov[n++] = IOV_STR("SYSLOG_IDENTIFIER=" LOG_IDENTIFIER);
	(void)snprintf(tid, sizeof(tid), "TID=%d", (int)gettid());
	iov[n++] = IOV_STR(tid);
	if (file) {
		(void)snprintf(code_file, sizeof(code_file), "CODE_FILE=%s", file);
		iov[n++] = IOV_STR(code_file);
	}
	if (line > 0) {
		(void)snprintf(code_line, sizeof(code_line), "CODE_LINE=%d", line);
		iov[n++] = IOV_STR(code_line);
	}
	if (func) {
		(void)snprintf(code_func, sizeof(code_func), "CODE_FUNC=%s", func);
		iov[n++] = IOV_STR(code_func);
	}
	if (error != 0) {
		(void)snprintf(errno_field, sizeof(errno_field), "ERRNO=%d", error);
		iov[n++] = IOV_STR(errno_field);
	}
	for (size_t i = 0, extra = 0; fields && fields[i] && extra < LOG_FIELDS_MAX; i++)
		if (field_valid(fields[i])) {
			iov[n++] = IOV_STR(fields[i]);
			extra++;
		}
#undef IOV_STR
	return sd_journal_sendv(iov, n);
}

static int log_dispatchv(int level, int error, const char *file, int line, const char *func,
			 const char *const fields[], const char *format, va_list ap)
	__attribute__((format(printf, 7, 0)));

static int log_dispatchv(int level, int error, const char *file, int line, const char *func,
			 const char *const fields[], const char *format, va_list ap)
{
	int saved_errno = errno;
	char buf[PREFIX_MAX + LOG_MESSAGE_MAX + 1]; /* prefix, message, '\n' */
	char *msg = buf + PREFIX_MAX;
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

	if (log_get_target() != LOG_TARGET_JOURNAL ||
	    send_journal(level, error, file, line, func, fields, msg, len) < 0) {
		const char *name = level_names[level];
		char stamp[PREFIX_MAX];
		struct timespec ts;
		struct tm tm;
		size_t n = 0;
		int w;

		/* the local wall-clock time: stderr (a terminal, a file) has no
		 * time of its own, unlike the journal */
		if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && localtime_r(&ts.tv_sec, &tm))
			n = strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
		w = n > 0 ? snprintf(stamp + n, sizeof(stamp) - n, ".%03ld %s: ", ts.tv_nsec / 1000000, name)
			  : snprintf(stamp, sizeof(stamp), "%s: ", name);
		n = w > 0 ? MIN((size_t)w + n, sizeof(stamp) - 1) : 0;
		char *p = msg - n;

		memcpy(p, stamp, n);
		msg[len] = '\n';
		write_stderr(p, (size_t)(msg + len + 1 - p));
	}

	errno = saved_errno;
	return -error;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
{
	va_list ap;
	int r;

	va_start(ap, format);
	r = log_dispatchv(level, error, file, line, func, NULL, format, ap);
	va_end(ap);
	return r;
}

int log_fields(int level, int error, const char *file, int line, const char *func, const char *const fields[],
	       const char *format, ...)
{
	va_list ap;
	int r;

	va_start(ap, format);
	r = log_dispatchv(level, error, file, line, func, fields, format, ap);
	va_end(ap);
	return r;
}
