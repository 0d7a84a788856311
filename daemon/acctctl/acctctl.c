/* acctctl.c - acctd's control tool: asks the daemon over its varlink API
 * (lib/client/acct-client.h) and prints tables with human units, or JSON.
 *
 * Commands: status, list, show, top, watch, compare, tune, reconcile, reload.
 * Exit status (also in --help and docs/acctctl.md): 0 success (compare: above),
 * 1 failure or an error from acctd, 2 bad command line, 3 acctd not running,
 * 4 permission denied, 5 compare: below, 6 compare: equal.
 *
 * The file is long because the table renderer, the pager and terminal code
 * and the nine verbs are still one file; their split (a verbs[] table, one
 * file per larger verb) is open work of issue 10 (docs/design.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "acct-client.h"
#include "build-config.h"
#include "parse.h"
#include "util.h"

enum {
	EXIT_OK = 0,          /* compare: above */
	EXIT_FAIL = 1,        /* failure, or an error reported by acctd */
	EXIT_USAGE = 2,       /* invalid command line */
	EXIT_NOT_RUNNING = 3, /* nothing listens on the address */
	EXIT_DENIED = 4,      /* permission denied (socket or administrative call) */
	EXIT_BELOW = 5,       /* compare: below */
	EXIT_EQUAL = 6,       /* compare: equal */
};

#define CALL_TIMEOUT_MS (60 * 1000)

/* ---- command line state -------------------------------------------------- */

enum command {
	CMD_NONE = -1,
	CMD_STATUS,
	CMD_LIST,
	CMD_SHOW,
	CMD_TOP,
	CMD_WATCH,
	CMD_COMPARE,
	CMD_TUNE,
	CMD_RECONCILE,
	CMD_RELOAD,
	CMD_HELP,
	_CMD_MAX,
};

static const char *const command_names[_CMD_MAX] = {
	[CMD_STATUS] = "status",   [CMD_LIST] = "list",           [CMD_SHOW] = "show",
	[CMD_TOP] = "top",         [CMD_WATCH] = "watch",         [CMD_COMPARE] = "compare",
	[CMD_TUNE] = "tune",       [CMD_RECONCILE] = "reconcile", [CMD_RELOAD] = "reload",
	[CMD_HELP] = "help",
};

enum json_mode { JSON_OFF, JSON_SHORT, JSON_PRETTY };
enum sort_key { SORT_PATH, SORT_MEMORY, SORT_CPU, SORT_LOAD, SORT_PRESSURE, _SORT_MAX };
static const char *const sort_names[_SORT_MAX] = { "path", "memory", "cpu", "load", "pressure" };

static const char *arg_address;
static enum json_mode arg_json = JSON_OFF;
static bool arg_legend = true;
static bool arg_pager = true;
static bool arg_full;
static bool arg_quiet;
static bool arg_tree;
static bool arg_all;
static bool arg_precise;
static bool arg_batch;
static int arg_sort = -1;   /* -1: the command's default */
static int arg_depth = -1;  /* -1: all */
static uint64_t arg_iterations; /* 0: forever */
static uint64_t arg_delay_us = 1000000;
static const char *arg_prefix;
static bool arg_set_bytes, arg_set_cpu, arg_set_tasks, arg_set_auto_tune;
static int64_t arg_bytes_budget, arg_cpu_budget_us, arg_tasks_budget;
static bool arg_auto_tune;

/* What the output looked like before a pager took it over. */
static bool stdout_tty;
static unsigned term_columns = 80, term_lines = 24;
static bool utf8;

static volatile sig_atomic_t got_quit_signal;
static volatile sig_atomic_t got_winch;

/* ---- small helpers --------------------------------------------------------- */

static void oom_exit(void) __attribute__((noreturn));
static void oom_exit(void)
{
	fputs("Out of memory.\n", stderr);
	exit(EXIT_FAIL);
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		oom_exit();
	return p;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		oom_exit();
	return s;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom_exit();
	return p;
}

static struct json_object *xjson(struct json_object *o)
{
	if (!o)
		oom_exit();
	return o;
}

static void json_add(struct json_object *o, const char *key, struct json_object *v)
{
	if (json_object_object_add(o, key, xjson(v)) < 0)
		oom_exit();
}

static void json_putp(struct json_object **o)
{
	if (*o)
		json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_putp)

enum glyph { G_PLUSMINUS, G_ELLIPSIS, G_BRANCH, G_LAST, G_VERTICAL, G_SPACE };

static const char *glyph(enum glyph g)
{
	static const char *const u[] = { "±", "…", "├─", "└─", "│ ", "  " };
	static const char *const a[] = { "+-", "...", "|-", "`-", "| ", "  " };
	return utf8 ? u[g] : a[g];
}

/* Display columns of a UTF-8 string (every code point counts one). */
static size_t text_width(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/* Byte offset of the first `cols` columns of s. */
static size_t text_prefix_bytes(const char *s, size_t cols)
{
	size_t i = 0, n = 0;
	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (n == cols)
				break;
			n++;
		}
	}
	return i;
}

/* s shortened to `width` columns with an ellipsis in the middle. */
static char *ellipsize_middle(const char *s, size_t width)
{
	size_t w = text_width(s), ew = text_width(glyph(G_ELLIPSIS)), left, right;
	const char *tail;

	if (w <= width)
		return xstrdup(s);
	if (width <= ew)
		return xstrdup(glyph(G_ELLIPSIS));
	left = (width - ew) / 2;
	right = width - ew - left;
	tail = s + text_prefix_bytes(s, w - right);
	return xasprintf("%.*s%s%s", (int)text_prefix_bytes(s, left), s, glyph(G_ELLIPSIS), tail);
}

/* Strings with human units. Returned by value so that a call can sit in an
 * argument list: printf("%s", fmt_bytes(v).s). */
struct fbuf {
	char s[64];
};

/* Bytes with binary suffixes and one decimal: 512B, 1.5K, 64.0M, 1.2G. */
static struct fbuf fmt_bytes(int64_t v)
{
	static const char suffix[] = "BKMGTPE";
	struct fbuf b;
	double d;
	unsigned i = 0;

	if (v < 0) {
		snprintf(b.s, sizeof(b.s), "%" PRId64 "B", v);
		return b;
	}
	if (v < 1024) {
		snprintf(b.s, sizeof(b.s), "%" PRId64 "B", v);
		return b;
	}
	d = (double)v;
	while (d >= 1024 && i < 6) {
		d /= 1024;
		i++;
	}
	if (d >= 1023.95 && i < 6) { /* would print as 1024.0 */
		d /= 1024;
		i++;
	}
	snprintf(b.s, sizeof(b.s), "%.1f%c", d, suffix[i]);
	return b;
}

/* "12.500" -> "12.5", "10.0" -> "10" (in place, before a unit). */
static void trim_fraction(char *s)
{
	char *dot = strchr(s, '.'), *end;
	if (!dot)
		return;
	end = dot + strlen(dot);
	while (end > dot + 1 && end[-1] == '0')
		end--;
	if (end == dot + 1)
		end = dot;
	*end = '\0';
}

/* A duration: 250us, 12.5ms, 1.234s, 3min 12.5s, 2h 5min, 3d 4h. */
static struct fbuf fmt_duration(int64_t us)
{
	struct fbuf b;
	char num[32];
	uint64_t u = abs_u64(us);
	const char *sign = us < 0 ? "-" : "";

	if (u < 1000) {
		snprintf(b.s, sizeof(b.s), "%s%" PRIu64 "us", sign, u);
	} else if (u < 1000000) {
		snprintf(num, sizeof(num), "%.1f", (double)u / 1e3);
		trim_fraction(num);
		snprintf(b.s, sizeof(b.s), "%s%sms", sign, num);
	} else if (u < 60000000) {
		snprintf(num, sizeof(num), "%.3f", (double)u / 1e6);
		trim_fraction(num);
		snprintf(b.s, sizeof(b.s), "%s%ss", sign, num);
	} else if (u < UINT64_C(3600000000)) {
		snprintf(num, sizeof(num), "%.1f", (double)(u % 60000000) / 1e6);
		trim_fraction(num);
		snprintf(b.s, sizeof(b.s), "%s%" PRIu64 "min %ss", sign, u / 60000000, num);
	} else if (u < UINT64_C(86400000000)) {
		snprintf(b.s, sizeof(b.s), "%s%" PRIu64 "h %" PRIu64 "min", sign, u / UINT64_C(3600000000),
			 u % UINT64_C(3600000000) / 60000000);
	} else {
		snprintf(b.s, sizeof(b.s), "%s%" PRIu64 "d %" PRIu64 "h", sign, u / UINT64_C(86400000000),
			 u % UINT64_C(86400000000) / UINT64_C(3600000000));
	}
	return b;
}

/* An age: 0.4s, 12.0s, 3min 12s, 2h 5min. */
static struct fbuf fmt_age(int64_t us)
{
	struct fbuf b;

	if (us < 0)
		us = 0;
	if (us < 60000000)
		snprintf(b.s, sizeof(b.s), "%.1fs", (double)us / 1e6);
	else if (us < INT64_C(3600000000))
		snprintf(b.s, sizeof(b.s), "%" PRId64 "min %" PRId64 "s", us / 60000000, us % 60000000 / 1000000);
	else
		b = fmt_duration(us);
	return b;
}

/* Cores and load averages: two decimals. */
static struct fbuf fmt_2f(double v)
{
	struct fbuf b;
	snprintf(b.s, sizeof(b.s), "%.2f", v);
	return b;
}

static struct fbuf fmt_int(int64_t v)
{
	struct fbuf b;
	snprintf(b.s, sizeof(b.s), "%" PRId64, v);
	return b;
}

/* ---- JSON access -------------------------------------------------------------- */

static struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v; /* NULL for JSON null too */
}

static bool jint(struct json_object *o, const char *key, int64_t *ret)
{
	struct json_object *v = jget(o, key);
	if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return false;
	*ret = json_object_get_int64(v);
	return true;
}

static int64_t jint_or(struct json_object *o, const char *key, int64_t dflt)
{
	int64_t v;
	return jint(o, key, &v) ? v : dflt;
}

static bool jdouble(struct json_object *o, const char *key, double *ret)
{
	struct json_object *v = jget(o, key);
	if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return false;
	*ret = json_object_get_double(v);
	return true;
}

static double jdouble_or(struct json_object *o, const char *key, double dflt)
{
	double v;
	return jdouble(o, key, &v) ? v : dflt;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static bool jbool(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);
	return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* A Value {"value", "bound"?, "age_us"?}. */
struct value {
	bool set;
	int64_t value, bound, age_us; /* age_us -1: unknown */
};

static struct value value_of(struct json_object *v)
{
	struct value r = { .age_us = -1 };
	if (!v || !jint(v, "value", &r.value))
		return r;
	r.set = true;
	r.bound = jint_or(v, "bound", 0);
	r.age_us = jint_or(v, "age_us", -1);
	return r;
}

static void print_json(FILE *f, struct json_object *o)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE;

	flags |= arg_json == JSON_PRETTY ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;
	fputs(json_object_to_json_string_ext(o, flags), f);
	fputc('\n', f);
}

/* ---- string arena ----------------------------------------------------------------- */

/* Many small strings freed together (table cells, paths): one allocation per
 * 64 KiB instead of one per string; a table of 10,000 rows has 100,000 cells. */
struct arena_block {
	struct arena_block *next;
	size_t used, size;
	char data[];
};

struct arena {
	struct arena_block *head;
};

static char *arena_alloc(struct arena *a, size_t n)
{
	struct arena_block *b = a->head;
	char *p;

	if (!b || b->size - b->used < n) {
		size_t size = MAX(n, (size_t)(64 << 10) - sizeof(*b));
		b = malloc(sizeof(*b) + size);
		if (!b)
			oom_exit();
		*b = (struct arena_block){ .next = a->head, .size = size };
		a->head = b;
	}
	p = b->data + b->used;
	b->used += n;
	return p;
}

static char *arena_strdup(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(arena_alloc(a, n), s, n);
}

static char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *arena_printf(struct arena *a, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (k < 0)
		oom_exit();
	if ((size_t)k < sizeof(buf))
		return memcpy(arena_alloc(a, (size_t)k + 1), buf, (size_t)k + 1);
	_cleanup_free_ char *big = NULL;
	va_start(ap, fmt);
	k = vasprintf(&big, fmt, ap);
	va_end(ap);
	if (k < 0)
		oom_exit();
	return arena_strdup(a, big);
}

static void arena_done(struct arena *a)
{
	while (a->head) {
		struct arena_block *next = a->head->next;
		free(a->head);
		a->head = next;
	}
}

/* ---- tables ---------------------------------------------------------------------- */

enum {
	COL_RIGHT = 1u << 0,     /* right-aligned */
	COL_ELLIPSIZE = 1u << 1, /* shortened in the middle when the table is too wide */
	COL_TIGHT = 1u << 2,     /* one space before it instead of two (a bound after its value) */
	COL_HIDDEN = 1u << 3,    /* not printed */
};

struct table {
	size_t ncols, nrows, cap;
	const char *const *headers;
	const unsigned *flags;
	char **cells;       /* nrows x ncols, in `strings` */
	struct arena strings;
};

static void table_init(struct table *t, size_t ncols, const char *const *headers, const unsigned *flags)
{
	*t = (struct table){ .ncols = ncols, .headers = headers, .flags = flags };
}

static void table_done(struct table *t)
{
	free(t->cells);
	arena_done(&t->strings);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/* A cell's text, kept by the table. */
#define cell_str(t, s) arena_strdup(&(t)->strings, (s))
#define cell_fmt(t, ...) arena_printf(&(t)->strings, __VA_ARGS__)

/* Append a row of ncols strings made with cell_str()/cell_fmt(). */
static void table_add(struct table *t, char **row)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **n = reallocarray(t->cells, cap * t->ncols, sizeof(char *));
		if (!n)
			oom_exit();
		t->cells = n;
		t->cap = cap;
	}
	memcpy(t->cells + t->nrows * t->ncols, row, t->ncols * sizeof(char *));
	t->nrows++;
}

static void pad(FILE *f, size_t n)
{
	static const char spaces[] = "                                                                ";

	while (n > 0) {
		size_t k = MIN(n, sizeof(spaces) - 1);
		fwrite(spaces, 1, k, f);
		n -= k;
	}
}

static void table_line(FILE *f, const struct table *t, const char *const *cells, const size_t *width)
{
	size_t last = t->ncols;
	bool first = true;

	/* no trailing blanks: stop after the last non-empty cell */
	while (last > 0 && (!cells[last - 1][0] || t->flags[last - 1] & COL_HIDDEN))
		last--;
	for (size_t i = 0; i < last; i++) {
		_cleanup_free_ char *shown = NULL;
		const char *s = cells[i];
		size_t w;

		if (t->flags[i] & COL_HIDDEN)
			continue;
		if (text_width(s) > width[i])
			s = shown = ellipsize_middle(s, width[i]);
		w = text_width(s);
		if (!first)
			pad(f, t->flags[i] & COL_TIGHT ? 1 : 2);
		first = false;
		if (t->flags[i] & COL_RIGHT)
			pad(f, width[i] - w);
		fputs(s, f);
		if (!(t->flags[i] & COL_RIGHT) && i + 1 < last)
			pad(f, width[i] - w);
	}
	fputc('\n', f);
}

/* Print with columns sized to their content; when max_width > 0 and the table
 * is wider, the ellipsizable column gives up the difference (down to 16). */
static void table_print(FILE *f, const struct table *t, bool legend, unsigned max_width)
{
	_cleanup_free_ size_t *width = xcalloc(t->ncols, sizeof(size_t));
	size_t total = 0;

	for (size_t i = 0; i < t->ncols; i++) {
		if (t->flags[i] & COL_HIDDEN)
			continue;
		width[i] = legend ? text_width(t->headers[i]) : 0;
		for (size_t r = 0; r < t->nrows; r++)
			width[i] = MAX(width[i], text_width(t->cells[r * t->ncols + i]));
		total += width[i] + (total == 0 ? 0 : t->flags[i] & COL_TIGHT ? 1 : 2);
	}
	if (max_width > 0 && total > max_width)
		for (size_t i = 0; i < t->ncols; i++)
			if (t->flags[i] & COL_ELLIPSIZE) {
				size_t excess = total - max_width, floor = MAX((size_t)16, legend ? text_width(t->headers[i]) : 0);
				width[i] = width[i] > floor + excess ? width[i] - excess : MIN(width[i], floor);
				break;
			}
	if (legend)
		table_line(f, t, t->headers, width);
	for (size_t r = 0; r < t->nrows; r++)
		table_line(f, t, (const char *const *)t->cells + r * t->ncols, width);
}

/* ---- terminal and pager ------------------------------------------------------------- */

static void probe_terminal(void)
{
	struct winsize ws;
	const char *e;

	stdout_tty = isatty(STDOUT_FILENO);
	if (stdout_tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
		term_columns = ws.ws_col;
		term_lines = ws.ws_row > 0 ? ws.ws_row : 24;
		return;
	}
	e = getenv("COLUMNS");
	if (e && atoi(e) > 0)
		term_columns = (unsigned)atoi(e);
	e = getenv("LINES");
	if (e && atoi(e) > 0)
		term_lines = (unsigned)atoi(e);
}

/* The width to fit tables into: the terminal's, unless --full or not a tty. */
static unsigned output_width(void)
{
	return stdout_tty && !arg_full ? term_columns : 0;
}

static pid_t pager_pid = -1;

static void pager_close(void)
{
	if (pager_pid <= 0)
		return;
	fflush(stdout);
	(void)fclose(stdout); /* EOF for the pager */
	(void)close(STDOUT_FILENO);
	while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
		;
	pager_pid = -1;
}

/* Pipe stdout into $ACCTD_PAGER, $PAGER or less (-FRSXMK: quits at once when
 * everything fits), as systemctl does, when stdout is a terminal. */
static void pager_open(void)
{
	const char *pager = getenv("ACCTD_PAGER");
	int fds[2];
	pid_t pid;

	if (!arg_pager || !stdout_tty || pager_pid > 0)
		return;
	if (!pager)
		pager = getenv("PAGER");
	if (pager && (!*pager || strcmp(pager, "cat") == 0))
		return;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		(void)close(fds[0]);
		(void)close(fds[1]);
		return;
	}
	if (pid == 0) {
		char buf[4096];
		ssize_t n;

		if (dup2(fds[0], STDIN_FILENO) < 0)
			_exit(EXIT_FAIL);
		(void)setenv("LESS", "FRSXMK", 0);
		(void)setenv("LESSCHARSET", "utf-8", 0);
		if (pager)
			execl("/bin/sh", "sh", "-c", pager, (char *)NULL);
		else {
			execlp("less", "less", (char *)NULL);
			execlp("more", "more", (char *)NULL);
		}
		/* no pager at all: copy, so that nothing is lost */
		while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0)
			if (write(STDOUT_FILENO, buf, (size_t)n) != n)
				break;
		_exit(EXIT_OK);
	}
	if (dup2(fds[1], STDOUT_FILENO) < 0) {
		(void)close(fds[0]);
		(void)close(fds[1]);
		return;
	}
	(void)close(fds[0]);
	(void)close(fds[1]);
	pager_pid = pid;
	/* the pager handles ^C itself; we must not die before it has everything */
	signal(SIGINT, SIG_IGN);
	atexit(pager_close);
}

/* ---- talking to acctd ---------------------------------------------------------------- */

static const char *command_name = "acctctl";

static int connect_daemon(struct acct_client **ret)
{
	_cleanup_free_ char *dflt = NULL, *path = NULL;
	const char *address = arg_address;
	int r;

	if (!address) {
		if (acct_client_default_address(&dflt) < 0)
			oom_exit();
		address = dflt;
	}
	r = acct_client_address_path(address, &path);
	if (r == -ENOMEM)
		oom_exit();
	if (r < 0) {
		fprintf(stderr, "Invalid address '%s': expected unix:PATH.\n", address);
		return EXIT_USAGE;
	}
	r = acct_client_connect(address, ret);
	switch (r) {
	case 0:
		return EXIT_OK;
	case -ENOENT:
	case -ECONNREFUSED:
	case -ENOTDIR:
		fprintf(stderr, "acctd is not running: %s: %s\n", path, strerror(-r));
		return EXIT_NOT_RUNNING;
	case -EACCES:
	case -EPERM:
		fprintf(stderr, "Permission denied: cannot connect to acctd at %s: %s\n", path, strerror(-r));
		return EXIT_DENIED;
	case -ENOMEM:
		oom_exit();
	default:
		fprintf(stderr, "Failed to connect to acctd at %s: %s\n", path, strerror(-r));
		return EXIT_FAIL;
	}
}

/* Say what went wrong with a call and return the exit status for it. */
static int call_failed(int r, const struct acct_reply *reply)
{
	_cleanup_free_ char *text = NULL;

	if (reply && reply->error) {
		if (strcmp(reply->error, ACCT_ERROR_PERMISSION_DENIED) == 0) {
			fprintf(stderr, "Permission denied: %s needs root or the admin group\n", command_name);
			return EXIT_DENIED;
		}
		if (acct_error_describe(reply->error, reply->parameters, &text) < 0)
			oom_exit();
		fprintf(stderr, "%s\n", text);
		return EXIT_FAIL;
	}
	switch (r) {
	case -ECONNRESET:
	case -EPIPE:
		fprintf(stderr, "acctd closed the connection.\n");
		break;
	case -ETIMEDOUT:
		fprintf(stderr, "Timed out waiting for acctd.\n");
		break;
	case -EBADMSG:
		fprintf(stderr, "acctd sent a reply that is not a valid varlink message.\n");
		break;
	case -EMSGSIZE:
		fprintf(stderr, "acctd's reply is larger than the limit.\n");
		break;
	case -ENOMEM:
		oom_exit();
	default:
		fprintf(stderr, "Failed to talk to acctd: %s\n", strerror(-r));
	}
	return EXIT_FAIL;
}

/* Connect, call `method` once, and return an exit status; the reply on success. */
static int call_once(const char *method, struct json_object *params, struct acct_reply *reply)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	int r;

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	r = acct_client_call(c, method, params, CALL_TIMEOUT_MS, reply);
	if (r < 0)
		return call_failed(r, reply);
	return EXIT_OK;
}


/* ---- status ------------------------------------------------------------------------------ */

static void print_field(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void print_field(const char *label, const char *fmt, ...)
{
	va_list ap;

	if (*label)
		printf("%15s: ", label);
	else
		printf("%17s", "");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* "N cgroups in 12ms (CPU 0.010s), F files, S empty skipped, X failed (reasons)" */
static char *pass_text(struct json_object *p)
{
	_cleanup_free_ char *errs = NULL;
	struct json_object *e = jget(p, "errors");
	int64_t failed = jint_or(p, "cgroups_failed", 0);

	if (e && json_object_is_type(e, json_type_object)) {
		json_object_object_foreach(e, k, v) {
			int64_t n = json_object_get_int64(v);
			char *s;
			if (n <= 0)
				continue;
			s = xasprintf("%s%s%s %" PRId64, errs ? errs : "", errs ? ", " : "", k, n);
			free(errs);
			errs = s;
		}
	}
	return xasprintf("%" PRId64 " cgroups in %s (CPU %.3fs), %" PRId64 " files read, %" PRId64
			 " empty skipped, %" PRId64 " failed%s%s%s",
			 jint_or(p, "cgroups", 0), fmt_duration(jint_or(p, "wall_us", 0)).s,
			 jdouble_or(p, "cpu_seconds", 0), jint_or(p, "files_read", 0), jint_or(p, "skipped_empty", 0),
			 failed, errs ? " (" : "", errs ? errs : "", errs ? ")" : "");
}

/* "children_memory 2, cpu_backwards 1" or "none" */
static char *violations_text(struct json_object *v)
{
	char *s = NULL;

	if (v && json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, k, n) {
			char *t;
			if (json_object_get_int64(n) <= 0)
				continue;
			t = xasprintf("%s%s%s %" PRId64, s ? s : "", s ? ", " : "", k, json_object_get_int64(n));
			free(s);
			s = t;
		}
	}
	return s ? s : xstrdup("none");
}

static char *drift_text(struct json_object *d, bool bytes)
{
	int64_t n = jint_or(d, "count", 0);
#define DRIFT_FMT(x) (bytes ? fmt_bytes(x).s : fmt_duration(x).s)
	if (n == 0)
		return xstrdup("no samples");
	return xasprintf("p50 %s, p90 %s, p99 %s, max %s", DRIFT_FMT(jint_or(d, "p50", 0)),
			 DRIFT_FMT(jint_or(d, "p90", 0)), DRIFT_FMT(jint_or(d, "p99", 0)),
			 DRIFT_FMT(jint_or(d, "max", 0)));
#undef DRIFT_FMT
}

static void print_reconciliation(struct json_object *rec)
{
	_cleanup_free_ char *last = violations_text(jget(rec, "violations"));
	_cleanup_free_ char *total = violations_text(jget(rec, "violations_total"));
	_cleanup_free_ char *dm = drift_text(jget(rec, "drift_memory_bytes"), true);
	_cleanup_free_ char *dc = drift_text(jget(rec, "drift_cpu_us"), false);
	const char *lv = jstr(rec, "last_violation");
	int64_t rootmem, used;

	print_field("Reconciliation", "%" PRId64 " passes; the last checked %" PRId64 " parents",
		    jint_or(rec, "passes", 0), jint_or(rec, "checked_parents", 0));
	print_field("Violations", "last pass: %s; in total: %s", last, total);
	if (lv)
		print_field("Last violation", "%s", lv);
	print_field("Drift", "memory %s", dm);
	print_field("", "CPU %s", dc);
	if (jint(rec, "root_memory", &rootmem) && jint(rec, "meminfo_used", &used))
		print_field("Root memory", "%s (/proc/meminfo in use: %s)", fmt_bytes(rootmem).s, fmt_bytes(used).s);
}

static void print_budgets(struct json_object *b)
{
	print_field("Error budgets", "memory %s, CPU %s, tasks %" PRId64, fmt_bytes(jint_or(b, "bytes", 0)).s,
		    fmt_duration(jint_or(b, "cpu_us", 0)).s, jint_or(b, "tasks", 0));
}

static int cmd_status(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_free_ char *fast = NULL, *slow = NULL, *sources = NULL;
	struct json_object *s, *tuner, *src;
	int r;

	r = call_once("Status", NULL, &reply);
	if (r != EXIT_OK)
		return r;
	s = jget(reply.parameters, "status");
	if (!s)
		return call_failed(-EBADMSG, NULL);
	pager_open();
	if (arg_json) {
		print_json(stdout, s);
		return EXIT_OK;
	}
	printf("acctd %s: %s\n", jstr(s, "version") ?: "?", jstr(s, "status") ?: "?");
	print_field("Up", "%s", fmt_duration(jint_or(s, "uptime_us", 0)).s);
	print_field("Cgroups", "%" PRId64 " live, %" PRId64 " dead; %s hierarchy at %s", jint_or(s, "cgroups_live", 0),
		    jint_or(s, "cgroups_dead", 0), jstr(s, "cgroup_mode") ?: "?", jstr(s, "cgroup_root") ?: "?");
	fast = pass_text(jget(s, "last_fast_pass"));
	slow = pass_text(jget(s, "last_slow_pass"));
	print_field("Fast pass", "every %s; last: %s", fmt_duration(jint_or(s, "fast_interval_us", 0)).s, fast);
	print_field("Slow pass", "every %s; last: %s", fmt_duration(jint_or(s, "slow_interval_us", 0)).s, slow);
	print_budgets(jget(s, "budgets"));
	tuner = jget(s, "tuner");
	print_field("Auto-tune", "%s, mode %s; %" PRId64 " counters, %" PRId64 " sharded, %" PRId64
		    " upgrades, %" PRId64 " tuning passes",
		    jbool(tuner, "auto_tune") ? "on" : "off", jstr(tuner, "mode") ?: "?", jint_or(tuner, "counters", 0),
		    jint_or(tuner, "sharded", 0), jint_or(tuner, "upgrades", 0), jint_or(tuner, "tune_passes", 0));
	if (jbool(tuner, "tuned"))
		print_field("Tuned", "at run time (a reload returns to the configuration)");
	print_reconciliation(jget(s, "reconciliation"));
	src = jget(s, "config_sources");
	if (src && json_object_is_type(src, json_type_array))
		for (size_t i = 0; i < json_object_array_length(src); i++) {
			char *t = xasprintf("%s%s%s", sources ? sources : "", sources ? ", " : "",
					    json_object_get_string(json_object_array_get_idx(src, i)));
			free(sources);
			sources = t;
		}
	print_field("Configuration", "%s", sources && *sources ? sources : "built-in defaults");
	print_field("Reloads", "%" PRId64 ", %" PRId64 " failed; last: %s", jint_or(s, "reloads", 0),
		    jint_or(s, "reload_failures", 0), jstr(s, "reload_result") ?: "none");
	return EXIT_OK;
}

/* ---- list and top --------------------------------------------------------------------------- */

struct row {
	struct json_object *obj; /* borrowed from the reply's array */
	const char *path;
	bool dead;
	struct value mem;
	bool has_cpu, has_load, has_psi[3];
	double cpu, load, psi[3]; /* psi: cpu, memory, io "some" avg10 */
	int64_t cpu_age;
	/* tree */
	size_t parent; /* SIZE_MAX: none shown */
	size_t *children, nchildren;
};

struct rows {
	struct row *v;
	size_t n, cap;
	size_t *order, norder; /* the table's order (a tree's is not v's) */
	struct arena strings;  /* the paths */
};

static void rows_done(struct rows *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->v[i].children);
		if (rs->v[i].obj)
			json_object_put(rs->v[i].obj);
	}
	free(rs->v);
	free(rs->order);
	arena_done(&rs->strings);
	*rs = (struct rows){ 0 };
}

/* Append the CgroupSummary objects of `array`; with keep_json each row keeps a
 * reference to its object (for --json), else only the figures are kept. */
static void rows_parse(struct json_object *array, bool keep_json, struct rows *rs)
{
	size_t n = json_object_array_length(array);

	if (rs->n + n > rs->cap) {
		size_t cap = MAX(rs->cap * 2, rs->n + n);
		struct row *v = reallocarray(rs->v, cap, sizeof(*v));
		if (!v)
			oom_exit();
		rs->v = v;
		rs->cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(array, i), *x;
		struct row *r = &rs->v[rs->n];
		const char *path = jstr(o, "path");

		if (!path)
			continue;
		*r = (struct row){ .obj = keep_json ? json_object_get(o) : NULL, .path = arena_strdup(&rs->strings, path),
				   .parent = SIZE_MAX, .cpu_age = -1 };
		r->dead = jstr(o, "state") && strcmp(jstr(o, "state"), "dead") == 0;
		r->mem = value_of(jget(o, "memory"));
		x = jget(o, "cpu_rate");
		if (x && jdouble(x, "value", &r->cpu)) {
			r->has_cpu = true;
			r->cpu_age = jint_or(x, "age_us", -1);
		}
		r->has_load = jdouble(o, "load1", &r->load);
		x = jget(o, "psi_some_avg10");
		if (x && json_object_is_type(x, json_type_object)) {
			r->has_psi[0] = jdouble(x, "cpu", &r->psi[0]);
			r->has_psi[1] = jdouble(x, "memory", &r->psi[1]);
			r->has_psi[2] = jdouble(x, "io", &r->psi[2]);
		} else if (x) { /* a single figure: the CPU's */
			r->has_psi[0] = true;
			r->psi[0] = json_object_get_double(x);
		}
		rs->n++;
	}
}

/* Call List with "more" and turn each reply into rows as it comes, so that
 * the memory of one reply's objects is reused for the next. Returns an exit
 * status. */
static int list_fetch(struct acct_client *c, const char *prefix, bool keep_json, struct rows *rs)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	struct json_object *a;
	int r;

	if (prefix)
		json_add(params, "prefix", json_object_new_string(prefix));
	if (arg_depth >= 0)
		json_add(params, "depth", json_object_new_int64(arg_depth));
	if (arg_all)
		json_add(params, "includeDead", json_object_new_boolean(1));
	r = acct_client_send(c, "List", params, ACCT_CALL_MORE);
	if (r < 0)
		return call_failed(r, NULL);
	do {
		do
			r = acct_client_receive(c, CALL_TIMEOUT_MS, &reply);
		while (r == -EINTR && !got_quit_signal);
		if (r == -EINTR)
			return EXIT_OK; /* top was asked to quit: the caller checks got_quit_signal */
		if (r < 0)
			return call_failed(r, NULL);
		if (reply.error)
			return call_failed(acct_error_to_errno(reply.error), &reply);
		a = jget(reply.parameters, "cgroups");
		if (!a || !json_object_is_type(a, json_type_array))
			return call_failed(-EBADMSG, NULL);
		rows_parse(a, keep_json, rs);
	} while (reply.continues);
	return EXIT_OK;
}

/* Paths in tree order: "/a" < "/a/b" < "/a-b" ('/' before every other byte). */
static int path_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
		if (x == y) {
			if (!x)
				return 0;
			continue;
		}
		if (!x || x == '/')
			return y == 0 ? 1 : -1;
		if (!y || y == '/')
			return 1;
		return x < y ? -1 : 1;
	}
}

static int sort_key = SORT_PATH;

static int row_path_cmp(const struct row *a, const struct row *b)
{
	int c = path_cmp(a->path, b->path);
	if (c)
		return c;
	return (int)a->dead - (int)b->dead; /* live first */
}

/* Largest first; rows without the figure last; then by path. */
static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	bool ha = true, hb = true;
	double x = 0, y = 0;

	switch (sort_key) {
	case SORT_MEMORY:
		ha = a->mem.set, hb = b->mem.set;
		x = (double)a->mem.value, y = (double)b->mem.value;
		break;
	case SORT_CPU:
		ha = a->has_cpu, hb = b->has_cpu, x = a->cpu, y = b->cpu;
		break;
	case SORT_LOAD:
		ha = a->has_load, hb = b->has_load, x = a->load, y = b->load;
		break;
	case SORT_PRESSURE:
		ha = a->has_psi[0] || a->has_psi[1] || a->has_psi[2];
		hb = b->has_psi[0] || b->has_psi[1] || b->has_psi[2];
		x = MAX(a->psi[0], MAX(a->psi[1], a->psi[2]));
		y = MAX(b->psi[0], MAX(b->psi[1], b->psi[2]));
		break;
	default:
		break;
	}
	if (ha != hb)
		return ha ? -1 : 1;
	if (x != y)
		return x > y ? -1 : 1;
	return row_path_cmp(a, b);
}

static int row_path_qcmp(const void *a, const void *b)
{
	return row_path_cmp(a, b);
}

static const struct row *sort_rows_base;
static int index_cmp(const void *pa, const void *pb)
{
	return row_cmp(&sort_rows_base[*(const size_t *)pa], &sort_rows_base[*(const size_t *)pb]);
}

/* The first row (live before dead) with exactly this path, or SIZE_MAX. */
static size_t rows_find(const struct rows *rs, const char *path, size_t len)
{
	size_t lo = 0, hi = rs->n;
	_cleanup_free_ char *p = strndup(path, len);

	if (!p)
		oom_exit();
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (path_cmp(rs->v[mid].path, p) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rs->n && strcmp(rs->v[lo].path, p) == 0 ? lo : SIZE_MAX;
}

/* Link every row to its nearest listed ancestor (rows sorted by path). */
static void rows_link(struct rows *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		struct row *r = &rs->v[i];
		size_t len = strlen(r->path);

		while (len > 1) {
			const char *slash = memrchr(r->path, '/', len);
			size_t j;
			if (!slash)
				break;
			len = slash == r->path ? 1 : (size_t)(slash - r->path);
			j = rows_find(rs, r->path, len);
			if (j != SIZE_MAX && j != i) {
				r->parent = j;
				break;
			}
		}
	}
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].parent != SIZE_MAX)
			rs->v[rs->v[i].parent].nchildren++;
	for (size_t i = 0; i < rs->n; i++) {
		rs->v[i].children = xcalloc(rs->v[i].nchildren, sizeof(size_t));
		rs->v[i].nchildren = 0;
	}
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].parent != SIZE_MAX) {
			struct row *p = &rs->v[rs->v[i].parent];
			p->children[p->nchildren++] = i;
		}
	sort_rows_base = rs->v;
	for (size_t i = 0; i < rs->n; i++)
		qsort(rs->v[i].children, rs->v[i].nchildren, sizeof(size_t), index_cmp);
}

static const char *const list_headers[] = { "CGROUP", "STATE", "MEMORY", "", "CPU", "LOAD", "PSI-CPU", "PSI-MEM",
					    "PSI-IO", "AGE" };
static const unsigned list_flags[] = { COL_ELLIPSIZE, 0, COL_RIGHT, COL_TIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT,
				       COL_RIGHT, COL_RIGHT, COL_RIGHT };
/* STATE only when tombstones were asked for */
static const unsigned list_flags_live[] = { COL_ELLIPSIZE, COL_HIDDEN, COL_RIGHT, COL_TIGHT, COL_RIGHT, COL_RIGHT,
					    COL_RIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT };
#define LIST_COLS ELEMENTSOF(list_headers)

static char *psi_cell(struct table *t, const struct row *r, int i)
{
	return r->has_psi[i] ? cell_fmt(t, "%.2f%%", r->psi[i]) : cell_str(t, "-");
}

/* Add the row with `name` (a cell already) in the first column. */
static void row_add(struct table *t, const struct row *r, char *name)
{
	int64_t age = r->mem.set ? r->mem.age_us : r->cpu_age;
	char *cells[LIST_COLS];

	if (!t)
		return;
	cells[0] = name;
	cells[1] = cell_str(t, r->dead ? "dead" : "live");
	cells[2] = cell_str(t, r->mem.set ? fmt_bytes(r->mem.value).s : "-");
	cells[3] = r->mem.set && r->mem.bound > 0 ? cell_fmt(t, "%s%s", glyph(G_PLUSMINUS), fmt_bytes(r->mem.bound).s)
						   : cell_str(t, "");
	cells[4] = cell_str(t, r->has_cpu ? fmt_2f(r->cpu).s : "-");
	cells[5] = cell_str(t, r->has_load ? fmt_2f(r->load).s : "-");
	cells[6] = psi_cell(t, r, 0);
	cells[7] = psi_cell(t, r, 1);
	cells[8] = psi_cell(t, r, 2);
	cells[9] = cell_str(t, age >= 0 ? fmt_age(age).s : "-");
	table_add(t, cells);
}

static void tree_add(struct table *t, struct rows *rs, size_t i, const char *prefix, bool root, bool last)
{
	const struct row *r = &rs->v[i];
	const struct row *p = r->parent != SIZE_MAX ? &rs->v[r->parent] : NULL;
	_cleanup_free_ char *next = NULL;
	const char *name = r->path;

	if (p) { /* the path below the parent's: usually one component */
		name = r->path + strlen(p->path);
		if (*name == '/')
			name++;
	}
	if (t)
		row_add(t, r,
			root ? cell_str(t, name) : cell_fmt(t, "%s%s%s", prefix, glyph(last ? G_LAST : G_BRANCH), name));
	rs->order[rs->norder++] = i;
	next = root ? xstrdup("") : xasprintf("%s%s", prefix, glyph(last ? G_SPACE : G_VERTICAL));
	for (size_t k = 0; k < r->nchildren; k++)
		tree_add(t, rs, r->children[k], next, false, k + 1 == r->nchildren);
}

/* Order the rows, flat in sort order or as a tree, and fill the table (when
 * not NULL) in that order; rs->order says which row is where. */
static void rows_table(struct rows *rs, bool tree, struct table *t)
{
	if (t)
		table_init(t, LIST_COLS, list_headers, arg_all ? list_flags : list_flags_live);
	free(rs->order);
	rs->order = xcalloc(rs->n, sizeof(size_t));
	rs->norder = 0;
	if (tree) {
		qsort(rs->v, rs->n, sizeof(*rs->v), row_path_qcmp);
		rows_link(rs);
		_cleanup_free_ size_t *roots = xcalloc(rs->n, sizeof(size_t));
		size_t nroots = 0;
		for (size_t i = 0; i < rs->n; i++)
			if (rs->v[i].parent == SIZE_MAX)
				roots[nroots++] = i;
		sort_rows_base = rs->v;
		qsort(roots, nroots, sizeof(size_t), index_cmp);
		for (size_t k = 0; k < nroots; k++)
			tree_add(t, rs, roots[k], "", true, true);
	} else {
		qsort(rs->v, rs->n, sizeof(*rs->v), row_cmp);
		for (size_t i = 0; i < rs->n; i++) {
			if (t)
				row_add(t, &rs->v[i], cell_str(t, rs->v[i].path));
			rs->order[rs->norder++] = i;
		}
	}
}

static int cmd_list(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_(rows_done) struct rows rs = { 0 };
	_cleanup_(table_done) struct table t = { 0 };
	size_t dead = 0;
	int r;

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	r = list_fetch(c, args[0], arg_json, &rs);
	if (r != EXIT_OK)
		return r;
	sort_key = arg_sort >= 0 ? arg_sort : SORT_PATH;
	rows_table(&rs, arg_tree, arg_json ? NULL : &t);
	pager_open();
	if (arg_json) {
		/* one object per line (short) or each indented (pretty), in the table's order */
		for (size_t i = 0; i < rs.norder; i++)
			print_json(stdout, rs.v[rs.order[i]].obj);
	} else {
		table_print(stdout, &t, arg_legend, output_width());
		for (size_t i = 0; i < rs.n; i++)
			dead += rs.v[i].dead;
		if (arg_legend) {
			printf("\n%zu cgroup%s listed", rs.n - dead, rs.n - dead == 1 ? "" : "s");
			if (arg_all)
				printf(", %zu removed (tombstones)", dead);
			printf(".\n");
		}
	}
	return EXIT_OK;
}

/* top: a terminal in raw mode for single keys, restored on every exit path. */
static struct termios saved_termios;
static bool termios_saved;
static bool cursor_hidden;

static void terminal_restore(void)
{
	if (termios_saved) {
		(void)tcsetattr(STDIN_FILENO, TCSANOW, &saved_termios);
		termios_saved = false;
	}
	if (cursor_hidden) {
		/* the cursor back, on a line of its own below the last frame */
		fputs("\033[?25h\n", stdout);
		fflush(stdout);
		cursor_hidden = false;
	}
}

static void terminal_raw(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_termios) < 0)
		return;
	t = saved_termios;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG stays: ^C is SIGINT */
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) < 0)
		return;
	termios_saved = true;
	atexit(terminal_restore);
}

static void on_quit_signal(int sig)
{
	got_quit_signal = sig;
}

static void on_winch(int sig)
{
	got_winch = 1;
}

/* SIGINT and SIGTERM interrupt waits (no SA_RESTART) and set got_quit_signal. */
static void catch_quit_signals(void)
{
	struct sigaction sa = { .sa_handler = on_quit_signal };

	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_winch;
	(void)sigaction(SIGWINCH, &sa, NULL);
}

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void top_frame(struct rows *rs, bool interactive, size_t iteration)
{
	_cleanup_(table_done) struct table t = { 0 };
	size_t dead = 0;

	sort_key = arg_sort >= 0 ? arg_sort : SORT_CPU;
	for (size_t i = 0; i < rs->n; i++)
		dead += rs->v[i].dead;
	rows_table(rs, false, &t);
	if (interactive) {
		_cleanup_free_ char *frame = NULL;
		size_t size = 0, max_rows;
		FILE *f = open_memstream(&frame, &size);
		char stamp[32];
		time_t now = time(NULL);
		struct tm tm;

		if (!f)
			oom_exit();
		strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&now, &tm));
		fprintf(f, "acctd top %s: %zu cgroups, sorted by %s, every %s. Keys: m c l p n sort, q quit\n", stamp,
			rs->n - dead, sort_names[sort_key], fmt_duration((int64_t)arg_delay_us).s);
		max_rows = term_lines > 3 ? term_lines - 3 : 1;
		t.nrows = MIN(t.nrows, max_rows); /* the cells stay in the table's arena */
		fputc('\n', f);
		table_print(f, &t, true, term_columns);
		fclose(f);
		/* home, then each line clears its rest, then clear below: no flicker */
		fputs("\033[H", stdout);
		for (char *line = frame, *nl; line && *line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			fwrite(line, 1, nl ? (size_t)(nl - line) : strlen(line), stdout);
			/* no newline after the last line: the screen must not scroll */
			fputs(nl && nl[1] ? "\033[K\n" : "\033[K", stdout);
		}
		fputs("\033[J", stdout);
	} else if (arg_json) {
		_cleanup_json_ struct json_object *o = xjson(json_object_new_object());
		_cleanup_json_ struct json_object *sorted = xjson(json_object_new_array());
		for (size_t i = 0; i < rs->norder; i++)
			json_object_array_add(sorted, json_object_get(rs->v[rs->order[i]].obj));
		json_add(o, "iteration", json_object_new_int64((int64_t)iteration));
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		json_add(o, "time_us", json_object_new_int64((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000));
		json_add(o, "cgroups", json_object_get(sorted));
		print_json(stdout, o);
	} else {
		if (iteration > 0)
			putchar('\n');
		table_print(stdout, &t, arg_legend, 0);
	}
	fflush(stdout);
}

static int cmd_top(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_(rows_done) struct rows rs = { 0 };
	bool interactive = stdout_tty && !arg_batch && !arg_json;
	int r;

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	catch_quit_signals();
	if (interactive) {
		terminal_raw();
		fputs("\033[?25l\033[H\033[2J", stdout); /* hide the cursor, clear */
		cursor_hidden = true;
		if (!termios_saved)
			atexit(terminal_restore);
	}
	for (size_t it = 0; !got_quit_signal; it++) {
		int64_t deadline;

		rows_done(&rs);
		r = list_fetch(c, args[0], arg_json, &rs);
		if (r != EXIT_OK) {
			terminal_restore();
			return r;
		}
		if (got_quit_signal)
			break;
		top_frame(&rs, interactive, it);
		if (arg_iterations > 0 && it + 1 >= arg_iterations)
			break;
		deadline = mono_us() + (int64_t)arg_delay_us;
		while (!got_quit_signal) {
			struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
			int64_t left = deadline - mono_us();
			int k;
			char key;

			if (left <= 0)
				break;
			k = poll(&pfd, termios_saved ? 1 : 0, (int)((left + 999) / 1000));
			if (k < 0 && errno == EINTR) {
				if (got_winch) {
					got_winch = 0;
					probe_terminal();
					if (interactive)
						top_frame(&rs, true, it);
				}
				continue;
			}
			if (k <= 0)
				continue;
			if (read(STDIN_FILENO, &key, 1) != 1)
				continue;
			switch (key) {
			case 'q':
			case 'Q':
				got_quit_signal = -1;
				break;
			case 'm':
				arg_sort = SORT_MEMORY;
				break;
			case 'c':
				arg_sort = SORT_CPU;
				break;
			case 'l':
				arg_sort = SORT_LOAD;
				break;
			case 'p':
				arg_sort = SORT_PRESSURE;
				break;
			case 'n':
				arg_sort = SORT_PATH;
				break;
			case ' ':
				deadline = 0; /* refresh now */
				break;
			default:
				continue;
			}
			if (!got_quit_signal && interactive && deadline != 0)
				top_frame(&rs, true, it);
		}
	}
	terminal_restore();
	return EXIT_OK;
}

/* ---- show ------------------------------------------------------------------------------------- */

enum unit { UNIT_BYTES, UNIT_USEC, UNIT_COUNT };

static enum unit quantity_unit(const char *name)
{
	static const char *const usec[] = { "cpu.usage", "cpu.user", "cpu.system", "cpu.throttled" };

	if (strncmp(name, "memory", 6) == 0 || strncmp(name, "swap", 4) == 0)
		return UNIT_BYTES;
	for (size_t i = 0; i < ELEMENTSOF(usec); i++)
		if (strcmp(name, usec[i]) == 0)
			return UNIT_USEC;
	return UNIT_COUNT;
}

static bool quantity_is_limit(const char *name)
{
	return strcmp(name, "memory.max") == 0 || strcmp(name, "memory.high") == 0 || strcmp(name, "swap.max") == 0;
}

static struct fbuf fmt_unit(enum unit u, int64_t v)
{
	switch (u) {
	case UNIT_BYTES:
		return fmt_bytes(v);
	case UNIT_USEC:
		return fmt_duration(v);
	default:
		return fmt_int(v);
	}
}

/* memory.stat keys that count events rather than bytes. */
static bool memstat_is_count(const char *key)
{
	static const char *const prefixes[] = { "pg", "pswp", "workingset_", "thp_", "numa_", "zswpin", "zswpout",
						"zswpwb", "swpin_zero", "swpout_zero", "oom" };
	if (strncmp(key, "total_", 6) == 0)
		key += 6;
	for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
		if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

static const char *const value_order[] = {
	"memory", "memory.working_set", "memory.peak", "memory.max", "memory.high", "swap", "swap.max",
	"cpu.usage", "cpu.user", "cpu.system", "cpu.periods", "cpu.throttled_periods", "cpu.throttled", "tasks",
};

static void show_value_row(struct table *t, const char *name, struct json_object *v)
{
	struct value x = value_of(v);
	enum unit u = quantity_unit(name);
	char *cells[5];

	cells[0] = cell_str(t, name);
	if (!x.set) {
		cells[1] = cell_str(t, "-");
		cells[2] = cell_str(t, "");
		cells[3] = cell_str(t, "never read");
		cells[4] = cell_str(t, "");
	} else {
		cells[1] = cell_str(t, quantity_is_limit(name) && x.value < 0 ? "max" : fmt_unit(u, x.value).s);
		cells[2] = x.bound > 0 ? cell_fmt(t, "%s%s", glyph(G_PLUSMINUS), fmt_unit(u, x.bound).s) : cell_str(t, "");
		cells[3] = cell_str(t, x.age_us >= 0 ? fmt_age(x.age_us).s : "-");
		cells[4] = cell_str(t, fmt_int(x.value).s);
	}
	table_add(t, cells);
}

static const char *age_text(struct json_object *o, char buf[static 80])
{
	int64_t age;
	if (!jint(o, "age_us", &age))
		return "";
	snprintf(buf, 80, ", age %s", fmt_age(age).s);
	return buf;
}

static void show_cgroup(struct json_object *cg)
{
	static const char *const vh[] = { "QUANTITY", "VALUE", "BOUND", "AGE", "EXACT" };
	static const unsigned vf[] = { 0, COL_RIGHT, 0, COL_RIGHT, COL_RIGHT };
	static const char *const ph[] = { "PRESSURE", "SOME10", "SOME60", "SOME300", "SOME-TOTAL", "FULL10",
					  "FULL60", "FULL300", "FULL-TOTAL" };
	static const unsigned pf[] = { 0, COL_RIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT,
				       COL_RIGHT, COL_RIGHT, COL_RIGHT, COL_RIGHT };
	static const char *const nh[] = { "NODE", "MEMORY", "BOUND", "AGE" };
	static const unsigned nf[] = { COL_RIGHT, COL_RIGHT, 0, COL_RIGHT };
	struct json_object *values = jget(cg, "values"), *x, *h;
	const char *state = jstr(cg, "state");
	bool dead = state && strcmp(state, "dead") == 0;
	_cleanup_free_ char *hier = NULL;
	struct table t;
	char ab[80];
	int64_t d;

	printf("%s\n", jstr(cg, "path") ?: "?");
	if (dead && jint(cg, "dead_for_us", &d))
		print_field("State", "dead: removed %s ago; these are its final values", fmt_age(d).s);
	else
		print_field("State", "%s, %s", state ?: "?", jbool(cg, "populated") ? "populated" : "empty (no processes)");
	h = jget(cg, "hierarchies");
	if (h && json_object_is_type(h, json_type_array))
		for (size_t i = 0; i < json_object_array_length(h); i++) {
			char *s = xasprintf("%s%s%s", hier ? hier : "", hier ? ", " : "",
					    json_object_get_string(json_object_array_get_idx(h, i)));
			free(hier);
			hier = s;
		}
	print_field("Hierarchies", "%s", hier ?: "-");
	print_field("Depth", "%" PRId64, jint_or(cg, "depth", 0));
	print_field("Sample errors", "%" PRId64, jint_or(cg, "sample_errors", 0));
	x = jget(cg, "cpu_rate_cores");
	if (x) {
		struct json_object *rate = jget(x, "rate");
		print_field("CPU rate", "%s cores now; %.2f, %.2f, %.2f over 1, 5, 15 min%s",
			    rate ? fmt_2f(jdouble_or(rate, "value", 0)).s : "-", jdouble_or(x, "avg1", 0),
			    jdouble_or(x, "avg5", 0), jdouble_or(x, "avg15", 0), age_text(rate, ab));
	}
	x = jget(cg, "load");
	if (x)
		print_field("Load", "%.2f, %.2f, %.2f over 1, 5, 15 min%s", jdouble_or(x, "avg1", 0),
			    jdouble_or(x, "avg5", 0), jdouble_or(x, "avg15", 0), age_text(x, ab));
	else
		print_field("Load", "-");

	/* every value with bound and age */
	putchar('\n');
	table_init(&t, 5, vh, vf);
	for (size_t i = 0; i < ELEMENTSOF(value_order); i++)
		if (values && json_object_object_get_ex(values, value_order[i], NULL))
			show_value_row(&t, value_order[i], jget(values, value_order[i]));
	if (values && json_object_is_type(values, json_type_object)) {
		json_object_object_foreach(values, k, v) {
			bool known = false;
			for (size_t i = 0; i < ELEMENTSOF(value_order); i++)
				known |= strcmp(k, value_order[i]) == 0;
			if (!known)
				show_value_row(&t, k, v);
		}
	}
	table_print(stdout, &t, arg_legend, 0);
	table_done(&t);

	/* pressure */
	x = jget(cg, "pressure");
	if (x) {
		static const char *const res[] = { "cpu", "memory", "io" };
		table_init(&t, 9, ph, pf);
		for (size_t i = 0; i < ELEMENTSOF(res); i++) {
			struct json_object *pr = jget(x, res[i]);
			char *cells[9];
			if (!pr)
				continue;
			cells[0] = cell_str(&t, res[i]);
			for (int k = 0; k < 2; k++) {
				struct json_object *line = jget(pr, k == 0 ? "some" : "full");
				struct value tot = value_of(jget(line, "total_us"));
				cells[1 + 4 * k] = line ? cell_fmt(&t, "%.2f%%", jdouble_or(line, "avg10", 0)) : cell_str(&t, "-");
				cells[2 + 4 * k] = line ? cell_fmt(&t, "%.2f%%", jdouble_or(line, "avg60", 0)) : cell_str(&t, "-");
				cells[3 + 4 * k] = line ? cell_fmt(&t, "%.2f%%", jdouble_or(line, "avg300", 0)) : cell_str(&t, "-");
				cells[4 + 4 * k] = cell_str(&t, tot.set ? fmt_duration(tot.value).s : "-");
			}
			table_add(&t, cells);
		}
		if (t.nrows > 0) {
			putchar('\n');
			table_print(stdout, &t, arg_legend, 0);
		}
		table_done(&t);
	}

	/* per NUMA node */
	x = jget(cg, "numa");
	if (x && json_object_is_type(x, json_type_array) && json_object_array_length(x) > 0) {
		table_init(&t, 4, nh, nf);
		for (size_t i = 0; i < json_object_array_length(x); i++) {
			struct json_object *n = json_object_array_get_idx(x, i);
			struct value v = value_of(n);
			char *cells[4];
			cells[0] = cell_str(&t, fmt_int(jint_or(n, "node", (int64_t)i)).s);
			cells[1] = cell_str(&t, v.set ? fmt_bytes(v.value).s : "-");
			cells[2] = v.bound > 0 ? cell_fmt(&t, "%s%s", glyph(G_PLUSMINUS), fmt_bytes(v.bound).s) : cell_str(&t, "");
			cells[3] = cell_str(&t, v.age_us >= 0 ? fmt_age(v.age_us).s : "-");
			table_add(&t, cells);
		}
		putchar('\n');
		table_print(stdout, &t, arg_legend, 0);
		table_done(&t);
	}

	/* memory.stat, as the kernel reports it */
	x = jget(cg, "memory_stat");
	if (x && json_object_is_type(x, json_type_object)) {
		static const char *const mh[] = { "MEMORY.STAT", "VALUE", "EXACT" };
		static const unsigned mf[] = { 0, COL_RIGHT, COL_RIGHT };
		table_init(&t, 3, mh, mf);
		json_object_object_foreach(x, k, v) {
			char *cells[3];
			int64_t n = json_object_get_int64(v);
			if (strcmp(k, "age_us") == 0)
				continue;
			cells[0] = cell_str(&t, k);
			cells[1] = cell_str(&t, memstat_is_count(k) ? fmt_int(n).s : fmt_bytes(n).s);
			cells[2] = cell_str(&t, fmt_int(n).s);
			table_add(&t, cells);
		}
		putchar('\n');
		if (arg_legend && jint(x, "age_us", &d))
			printf("memory.stat read %s ago:\n", fmt_age(d).s);
		table_print(stdout, &t, arg_legend, 0);
		table_done(&t);
	}
}

static int cmd_show(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	struct json_object *cg;
	int r;

	json_add(params, "cgroup", json_object_new_string(args[0]));
	if (arg_precise)
		json_add(params, "precise", json_object_new_boolean(1));
	r = call_once("Get", params, &reply);
	if (r != EXIT_OK)
		return r;
	cg = jget(reply.parameters, "cgroup");
	if (!cg)
		return call_failed(-EBADMSG, NULL);
	pager_open();
	if (arg_json)
		print_json(stdout, cg);
	else
		show_cgroup(cg);
	return EXIT_OK;
}

/* ---- watch ---------------------------------------------------------------------------------- */

static void watch_line(struct json_object *cg)
{
	struct json_object *values = jget(cg, "values"), *rate = jget(jget(cg, "cpu_rate_cores"), "rate");
	struct json_object *load = jget(cg, "load"), *pressure = jget(cg, "pressure");
	struct value mem = value_of(jget(values, "memory")), tasks = value_of(jget(values, "tasks"));
	const char *state = jstr(cg, "state");
	struct timespec ts;
	struct tm tm;
	char stamp[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&ts.tv_sec, &tm));
	printf("%s.%03ld %s:", stamp, ts.tv_nsec / 1000000, jstr(cg, "path") ?: "?");
	if (state && strcmp(state, "dead") == 0)
		printf(" removed (final values)");
	if (mem.set) {
		printf(" memory %s", fmt_bytes(mem.value).s);
		if (mem.bound > 0)
			printf(" %s%s", glyph(G_PLUSMINUS), fmt_bytes(mem.bound).s);
	} else
		printf(" memory -");
	if (rate)
		printf(", cpu %.2f", jdouble_or(rate, "value", 0));
	if (load)
		printf(", load %.2f", jdouble_or(load, "avg1", 0));
	if (tasks.set)
		printf(", tasks %" PRId64, tasks.value);
	if (pressure) {
		static const char *const res[] = { "cpu", "memory", "io" };
		bool any = false;
		for (size_t i = 0; i < ELEMENTSOF(res); i++) {
			struct json_object *some = jget(jget(pressure, res[i]), "some");
			if (!some)
				continue;
			printf("%s %s %.2f%%", any ? "" : ", pressure", res[i], jdouble_or(some, "avg10", 0));
			any = true;
		}
	}
	putchar('\n');
}

static int cmd_watch(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	int r;

	if (args[0]) {
		struct json_object *a = xjson(json_object_new_array());
		for (size_t i = 0; args[i]; i++)
			json_object_array_add(a, xjson(json_object_new_string(args[i])));
		json_add(params, "cgroups", a);
	}
	if (arg_prefix)
		json_add(params, "prefix", json_object_new_string(arg_prefix));
	json_add(params, "interval_ms", json_object_new_int64((int64_t)(arg_delay_us / 1000)));

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	catch_quit_signals();
	r = acct_client_send(c, "Watch", params, ACCT_CALL_MORE);
	if (r < 0)
		return call_failed(r, NULL);
	for (;;) {
		struct json_object *a;

		r = acct_client_receive(c, -1, &reply);
		if (r == -EINTR) {
			if (got_quit_signal)
				return EXIT_OK; /* ^C ends a watch normally */
			continue;
		}
		if (r < 0)
			return call_failed(r, NULL);
		if (reply.error)
			return call_failed(acct_error_to_errno(reply.error), &reply);
		if (arg_json)
			print_json(stdout, reply.parameters);
		else {
			a = jget(reply.parameters, "cgroups");
			if (a && json_object_is_type(a, json_type_array))
				for (size_t i = 0; i < json_object_array_length(a); i++)
					watch_line(json_object_array_get_idx(a, i));
		}
		fflush(stdout);
		if (!reply.continues)
			return EXIT_OK; /* acctd ended the stream */
		if (got_quit_signal)
			return EXIT_OK;
	}
}

/* ---- compare ------------------------------------------------------------------------------------ */

/* A threshold: a plain integer in the quantity's unit (bytes, us, count),
 * or a size (K/M/G/T) or a duration (us/ms/s/min/h). */
static int parse_threshold(const char *quantity, const char *s, int64_t *ret)
{
	enum unit u = quantity_unit(quantity);
	uint64_t v;
	char *end;
	long long n;

	errno = 0;
	n = strtoll(s, &end, 10);
	if (*s && !*end && errno == 0) {
		*ret = n;
		return 0;
	}
	if (acct_parse_size(s, &v) == 0 && v <= INT64_MAX) {
		if (u == UNIT_USEC)
			return -EINVAL;
		*ret = (int64_t)v;
		return 0;
	}
	if (acct_parse_duration_us(s, &v) == 0 && v <= INT64_MAX) {
		if (u == UNIT_BYTES)
			return -EINVAL;
		*ret = (int64_t)v;
		return 0;
	}
	return -EINVAL;
}

static int cmd_compare(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	const char *result;
	struct value v;
	int64_t threshold;
	enum unit u = quantity_unit(args[1]);
	int r;

	if (parse_threshold(args[1], args[2], &threshold) < 0) {
		fprintf(stderr, "Invalid threshold '%s' for %s: expected %s.\n", args[2], args[1],
			u == UNIT_BYTES	 ? "bytes, or a size such as 512M or 2G"
			: u == UNIT_USEC ? "microseconds, or a duration such as 250ms or 3s"
					 : "an integer");
		return EXIT_USAGE;
	}
	json_add(params, "cgroup", json_object_new_string(args[0]));
	json_add(params, "quantity", json_object_new_string(args[1]));
	json_add(params, "threshold", json_object_new_int64(threshold));
	r = call_once("Compare", params, &reply);
	if (r != EXIT_OK)
		return r;
	result = jstr(reply.parameters, "result");
	if (!result || (strcmp(result, "above") != 0 && strcmp(result, "below") != 0 && strcmp(result, "equal") != 0))
		return call_failed(-EBADMSG, NULL);
	v = value_of(jget(reply.parameters, "value"));
	if (arg_json)
		print_json(stdout, reply.parameters);
	else if (!arg_quiet) {
		printf("%s %s", args[0], args[1]);
		if (v.set) {
			printf(" %s", fmt_unit(u, v.value).s);
			if (v.bound > 0)
				printf(" %s%s", glyph(G_PLUSMINUS), fmt_unit(u, v.bound).s);
		}
		printf(" is %s %s (%s)\n", result, fmt_unit(u, threshold).s,
		       jbool(reply.parameters, "precise") ? "a precise read was needed"
							  : "decided from the bound, no precise read");
	}
	return strcmp(result, "above") == 0 ? EXIT_OK : strcmp(result, "below") == 0 ? EXIT_BELOW : EXIT_EQUAL;
}

/* ---- tune, reconcile, reload ------------------------------------------------------------------------ */

static int cmd_tune(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	int r;

	if (arg_set_bytes)
		json_add(params, "bytesBudget", json_object_new_int64(arg_bytes_budget));
	if (arg_set_cpu)
		json_add(params, "cpuBudgetUs", json_object_new_int64(arg_cpu_budget_us));
	if (arg_set_tasks)
		json_add(params, "tasksBudget", json_object_new_int64(arg_tasks_budget));
	if (arg_set_auto_tune)
		json_add(params, "autoTune", json_object_new_boolean(arg_auto_tune));
	r = call_once("Tune", params, &reply);
	if (r != EXIT_OK)
		return r;
	if (arg_json) {
		print_json(stdout, reply.parameters);
		return EXIT_OK;
	}
	print_budgets(jget(reply.parameters, "budgets"));
	print_field("Auto-tune", "%s", jbool(reply.parameters, "auto_tune") ? "on" : "off");
	if (json_object_object_length(params) > 0)
		printf("Changed until the next reload of the configuration.\n");
	return EXIT_OK;
}

static int cmd_reconcile(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_free_ char *pass = NULL;
	int r;

	r = call_once("Reconcile", NULL, &reply);
	if (r != EXIT_OK)
		return r;
	if (arg_json) {
		print_json(stdout, reply.parameters);
		return EXIT_OK;
	}
	pass = pass_text(jget(reply.parameters, "pass"));
	print_field("Pass", "%s", pass);
	print_reconciliation(jget(reply.parameters, "reconciliation"));
	return EXIT_OK;
}

static int cmd_reload(char **args)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	int r;

	r = call_once("Reload", NULL, &reply);
	if (r != EXIT_OK)
		return r;
	if (arg_json)
		print_json(stdout, reply.parameters);
	return EXIT_OK;
}

/* ---- help ------------------------------------------------------------------------------------------- */

static const char options_common[] =
	"\nCommon options: --address=unix:PATH, --json[=short|pretty], --no-legend, --no-pager,\n"
	"-l/--full (see acctctl --help).\n";

static void help_main(FILE *f)
{
	fprintf(f,
		"acctctl [OPTIONS...] COMMAND ...\n\n"
		"Query and control acctd, the cgroup accounting daemon. Every value comes with its\n"
		"error bound (shown as %sN: |value - exact| <= N) and its age.\n\n"
		"Commands:\n"
		"  status                        The daemon: cgroups, passes, budgets, checks, reloads\n"
		"  list [PREFIX]                 Cgroups with memory, CPU, load and pressure (default)\n"
		"  show CGROUP                   Every value of one cgroup with its bound and age\n"
		"  top [PREFIX]                  Live view of the busiest cgroups, like systemd-cgtop\n"
		"  watch CGROUP...               Print a cgroup's values whenever they change\n"
		"  compare CGROUP QUANTITY THRESHOLD\n"
		"                                Is QUANTITY above, below or equal to THRESHOLD?\n"
		"  tune                          Show or change error budgets and auto-tuning (admin)\n"
		"  reconcile                     Sample every cgroup now and report (admin)\n"
		"  reload                        Reload acctd's configuration (admin)\n"
		"  help [COMMAND]                This help, or a command's (also COMMAND --help)\n\n"
		"Options:\n"
		"  -h --help                     Show help\n"
		"     --version                  Show the version\n"
		"     --address=unix:PATH        Talk to acctd at PATH; default $ACCTD_ADDRESS, else\n"
		"                                " ACCT_CLIENT_SYSTEM_SOCKET " (as another user than root:\n"
		"                                $XDG_RUNTIME_DIR/acctd/io.acctd when that exists)\n"
		"     --json[=short|pretty]      JSON: one object per line (short, the default), or indented\n"
		"     --no-legend                No column headers and footers\n"
		"     --no-pager                 Do not pipe output into a pager\n"
		"  -l --full                     Do not shorten cgroup paths to the terminal width\n\n"
		"Units: bytes with binary suffixes B, K, M, G, T (powers of 1024, one decimal: 64.0M\n"
		"is 64 MiB); CPU rate in cores (1.00 = one CPU busy); pressure (PSI) in %%; times\n"
		"and ages in us, ms, s, min, h.\n\n"
		"Exit status:\n"
		"  0  success; compare: above\n"
		"  1  failure, or an error reported by acctd (no such cgroup, ...)\n"
		"  2  invalid command line\n"
		"  3  acctd is not running (nothing listens on the address)\n"
		"  4  permission denied (the socket, or an administrative command)\n"
		"  5  compare: below\n"
		"  6  compare: equal\n\n"
		"See 'acctctl COMMAND --help' and docs/acctctl.md.\n",
		glyph(G_PLUSMINUS));
}

static void help_command(FILE *f, int cmd)
{
	switch (cmd) {
	case CMD_STATUS:
		fputs("acctctl status\n\n"
		      "Show the daemon's state: version, uptime, cgroups live and dead, the last fast and\n"
		      "slow sampling passes, error budgets and the tuner, reconciliation (invariant\n"
		      "violations, drift), configuration sources and reloads.\n",
		      f);
		break;
	case CMD_LIST:
		fputs("acctctl list [PREFIX] [--tree] [--all] [--sort=KEY] [--depth=N]\n\n"
		      "List the cgroups under PREFIX (default /): MEMORY with its bound, CPU rate in\n"
		      "cores, LOAD (1 min), PSI \"some\" avg10 of CPU, memory and IO, and the AGE of the\n"
		      "memory reading.\n\n"
		      "      --tree         Children below their parent, indented\n"
		      "  -a --all           Also removed cgroups (tombstones) with their final values\n"
		      "      --sort=KEY     path (default), memory, cpu, load or pressure; largest first\n"
		      "      --depth=N      At most N levels below PREFIX\n",
		      f);
		break;
	case CMD_SHOW:
		fputs("acctctl show CGROUP [--precise]\n\n"
		      "Show every value of CGROUP with its bound and age: memory, working set, peak,\n"
		      "limits, swap, CPU times and throttling, tasks, CPU rate, load, pressure (PSI),\n"
		      "memory per NUMA node and memory.stat. A removed cgroup shows its final values.\n\n"
		      "      --precise      Read the counters precisely (no batching error)\n",
		      f);
		break;
	case CMD_TOP:
		fputs("acctctl top [PREFIX] [-n N] [-b] [-d SECONDS] [--sort=KEY] [--depth=N]\n\n"
		      "A live view of the cgroups, refreshed every interval, like systemd-cgtop. On a\n"
		      "terminal: full screen; keys m (memory), c (CPU), l (load), p (pressure), n (path)\n"
		      "sort, space refreshes, q or ^C quits. Otherwise (or with -b) one table per\n"
		      "iteration, separated by an empty line; with --json one object per iteration.\n\n"
		      "  -n --iterations=N  Stop after N iterations (default: run until stopped)\n"
		      "  -b --batch         Batch mode: plain tables, no screen control, no keys\n"
		      "  -d --delay=SECONDS Interval (default 1; also 500ms, 2s, 1min)\n"
		      "      --sort=KEY     cpu (default), memory, load, pressure or path\n"
		      "      --depth=N      At most N levels below PREFIX\n",
		      f);
		break;
	case CMD_WATCH:
		fputs("acctctl watch CGROUP... [--prefix=PATH] [-d SECONDS]\n\n"
		      "Print the values of the cgroups (or of every cgroup under --prefix) whenever one\n"
		      "changes, at most every interval: one line per cgroup and update, or with --json\n"
		      "one object per update. ^C stops (exit status 0).\n\n"
		      "      --prefix=PATH  Watch every cgroup under PATH\n"
		      "  -d --delay=SECONDS Shortest interval between updates (default 1; also 500ms)\n",
		      f);
		break;
	case CMD_COMPARE:
		fputs("acctctl compare CGROUP QUANTITY THRESHOLD [-q]\n\n"
		      "Is QUANTITY of CGROUP above, below or equal to THRESHOLD? acctd answers from the\n"
		      "error bound when THRESHOLD lies outside value +-bound and reads the counter\n"
		      "precisely only inside that band; the output says which.\n\n"
		      "QUANTITY: memory, memory.working_set, memory.peak, memory.max, memory.high, swap,\n"
		      "swap.max, cpu.usage, cpu.user, cpu.system, cpu.periods, cpu.throttled_periods,\n"
		      "cpu.throttled, tasks.\n"
		      "THRESHOLD: an integer in the quantity's unit (bytes, microseconds, count), or a\n"
		      "size (512M, 2G) or a duration (250ms, 3s, 2min).\n\n"
		      "Exit status: 0 above, 5 below, 6 equal (1-4 as for every command).\n\n"
		      "  -q --quiet         Print nothing; use the exit status\n",
		      f);
		break;
	case CMD_TUNE:
		fputs("acctctl tune [--bytes-budget=SIZE] [--cpu-budget=DURATION] [--tasks-budget=N]\n"
		      "             [--auto-tune=yes|no]\n\n"
		      "Change the error budgets (the largest error of one counter read) and the\n"
		      "auto-tuner at run time, until the next reload; without options, show them.\n"
		      "Needs root or the configured admin group.\n\n"
		      "      --bytes-budget=SIZE      Bytes, or K, M, G, T (powers of 1024)\n"
		      "      --cpu-budget=DURATION    us, ms, s, min, h (a bare number is seconds)\n"
		      "      --tasks-budget=N         Tasks\n"
		      "      --auto-tune=yes|no       Let the tuner move batches within the budgets\n",
		      f);
		break;
	case CMD_RECONCILE:
		fputs("acctctl reconcile\n\n"
		      "Sample every cgroup now (fast and slow files) and print the pass and its\n"
		      "reconciliation: invariant violations and drift. Needs root or the admin group.\n",
		      f);
		break;
	case CMD_RELOAD:
		fputs("acctctl reload\n\n"
		      "Reload acctd's configuration; a refused file keeps the old configuration and its\n"
		      "error is printed. Needs root or the admin group.\n",
		      f);
		break;
	case CMD_HELP:
		fputs("acctctl help [COMMAND]\n\nShow acctctl's help, or COMMAND's.\n", f);
		return;
	default:
		help_main(f);
		return;
	}
	fputs(options_common, f);
}

/* ---- command line --------------------------------------------------------------------------------- */

#define M(c) (1u << (c))
#define ALL_COMMANDS (~0u)

enum {
	ARG_VERSION = 0x100,
	ARG_ADDRESS,
	ARG_JSON,
	ARG_NO_LEGEND,
	ARG_NO_PAGER,
	ARG_TREE,
	ARG_SORT,
	ARG_DEPTH,
	ARG_PRECISE,
	ARG_PREFIX,
	ARG_BYTES_BUDGET,
	ARG_CPU_BUDGET,
	ARG_TASKS_BUDGET,
	ARG_AUTO_TUNE,
};

static const struct option options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, ARG_VERSION },
	{ "address", required_argument, NULL, ARG_ADDRESS },
	{ "json", optional_argument, NULL, ARG_JSON },
	{ "no-legend", no_argument, NULL, ARG_NO_LEGEND },
	{ "no-pager", no_argument, NULL, ARG_NO_PAGER },
	{ "full", no_argument, NULL, 'l' },
	{ "tree", no_argument, NULL, ARG_TREE },
	{ "all", no_argument, NULL, 'a' },
	{ "sort", required_argument, NULL, ARG_SORT },
	{ "depth", required_argument, NULL, ARG_DEPTH },
	{ "precise", no_argument, NULL, ARG_PRECISE },
	{ "iterations", required_argument, NULL, 'n' },
	{ "batch", no_argument, NULL, 'b' },
	{ "delay", required_argument, NULL, 'd' },
	{ "prefix", required_argument, NULL, ARG_PREFIX },
	{ "quiet", no_argument, NULL, 'q' },
	{ "bytes-budget", required_argument, NULL, ARG_BYTES_BUDGET },
	{ "cpu-budget", required_argument, NULL, ARG_CPU_BUDGET },
	{ "tasks-budget", required_argument, NULL, ARG_TASKS_BUDGET },
	{ "auto-tune", required_argument, NULL, ARG_AUTO_TUNE },
	{}
};

/* Which commands an option applies to. */
static unsigned option_commands(int opt)
{
	switch (opt) {
	case ARG_TREE:
	case 'a':
		return M(CMD_LIST);
	case ARG_SORT:
	case ARG_DEPTH:
		return M(CMD_LIST) | M(CMD_TOP);
	case ARG_PRECISE:
		return M(CMD_SHOW);
	case 'n':
	case 'b':
		return M(CMD_TOP);
	case 'd':
		return M(CMD_TOP) | M(CMD_WATCH);
	case ARG_PREFIX:
		return M(CMD_WATCH);
	case 'q':
		return M(CMD_COMPARE);
	case ARG_BYTES_BUDGET:
	case ARG_CPU_BUDGET:
	case ARG_TASKS_BUDGET:
	case ARG_AUTO_TUNE:
		return M(CMD_TUNE);
	default:
		return ALL_COMMANDS;
	}
}

static const char *option_name(int opt)
{
	for (size_t i = 0; options[i].name; i++)
		if (options[i].val == opt)
			return options[i].name;
	return "?";
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

/* Seconds (may have a fraction) or a duration with a unit (500ms, 2s, 1min). */
static int parse_delay(const char *s, uint64_t *ret)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (*s && !*end && errno == 0 && isfinite(d) && d > 0 && d < 1e9) {
		*ret = (uint64_t)llround(d * 1e6);
		return 0;
	}
	return acct_parse_duration_us(s, ret);
}

static int parse_sort(const char *s)
{
	static const struct {
		const char *name;
		int key;
	} keys[] = { { "path", SORT_PATH },	{ "name", SORT_PATH }, { "memory", SORT_MEMORY }, { "mem", SORT_MEMORY },
		     { "cpu", SORT_CPU },	{ "load", SORT_LOAD }, { "pressure", SORT_PRESSURE },
		     { "psi", SORT_PRESSURE } };
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (strcmp(s, keys[i].name) == 0)
			return keys[i].key;
	return -1;
}

static int parse_uint(const char *s, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end || errno || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

static int parse_argv(int argc, char **argv, int *ret_cmd, char ***ret_args, bool *ret_help)
{
	int seen[64], nseen = 0, c, cmd = CMD_NONE;
	uint64_t u;
	bool help = false;
	char **args;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hlaqbn:d:", options, NULL)) >= 0) {
		if (c == '?') {
			if (optopt)
				return usage_error("Unknown option -%c. See 'acctctl --help'.", optopt);
			return usage_error("Unknown option %s. See 'acctctl --help'.", argv[optind - 1]);
		}
		if (c == ':')
			return usage_error("Option %s needs an argument.", argv[optind - 1]);
		if (nseen < (int)ELEMENTSOF(seen))
			seen[nseen++] = c;
		switch (c) {
		case 'h':
			help = true;
			break;
		case ARG_VERSION:
			printf("acctctl %s\n", ACCTD_VERSION);
			exit(EXIT_OK);
		case ARG_ADDRESS:
			arg_address = optarg;
			break;
		case ARG_JSON:
			if (!optarg || strcmp(optarg, "short") == 0)
				arg_json = JSON_SHORT;
			else if (strcmp(optarg, "pretty") == 0)
				arg_json = JSON_PRETTY;
			else
				return usage_error("Invalid --json mode '%s': expected short or pretty.", optarg);
			break;
		case ARG_NO_LEGEND:
			arg_legend = false;
			break;
		case ARG_NO_PAGER:
			arg_pager = false;
			break;
		case 'l':
			arg_full = true;
			break;
		case ARG_TREE:
			arg_tree = true;
			break;
		case 'a':
			arg_all = true;
			break;
		case ARG_SORT:
			arg_sort = parse_sort(optarg);
			if (arg_sort < 0)
				return usage_error("Invalid sort key '%s': expected path, memory, cpu, load or pressure.",
						   optarg);
			break;
		case ARG_DEPTH:
			if (parse_uint(optarg, 1024, &u) < 0)
				return usage_error("Invalid depth '%s': expected a number of levels.", optarg);
			arg_depth = (int)u;
			break;
		case ARG_PRECISE:
			arg_precise = true;
			break;
		case 'n':
			if (parse_uint(optarg, UINT32_MAX, &u) < 0 || u == 0)
				return usage_error("Invalid number of iterations '%s'.", optarg);
			arg_iterations = u;
			break;
		case 'b':
			arg_batch = true;
			break;
		case 'd':
			if (parse_delay(optarg, &arg_delay_us) < 0 || arg_delay_us < 10000 ||
			    arg_delay_us > UINT64_C(86400000000))
				return usage_error("Invalid interval '%s': expected seconds (0.5, 2) or a duration "
						   "(500ms, 1min), at least 10ms.", optarg);
			break;
		case ARG_PREFIX:
			arg_prefix = optarg;
			break;
		case 'q':
			arg_quiet = true;
			break;
		case ARG_BYTES_BUDGET: {
			uint64_t v;
			if (acct_parse_size(optarg, &v) < 0 || v > INT64_MAX)
				return usage_error("Invalid size '%s': expected bytes or K, M, G, T (as 64M).", optarg);
			arg_bytes_budget = (int64_t)v;
			arg_set_bytes = true;
			break;
		}
		case ARG_CPU_BUDGET: {
			uint64_t v;
			if (acct_parse_duration_us(optarg, &v) < 0 || v > INT64_MAX)
				return usage_error("Invalid duration '%s': expected us, ms, s, min or h (as 10ms).",
						   optarg);
			arg_cpu_budget_us = (int64_t)v;
			arg_set_cpu = true;
			break;
		}
		case ARG_TASKS_BUDGET:
			if (parse_uint(optarg, INT64_MAX, &u) < 0)
				return usage_error("Invalid number of tasks '%s'.", optarg);
			arg_tasks_budget = (int64_t)u;
			arg_set_tasks = true;
			break;
		case ARG_AUTO_TUNE:
			if (acct_parse_bool(optarg, &arg_auto_tune) < 0)
				return usage_error("Invalid value '%s' for --auto-tune: expected yes or no.", optarg);
			arg_set_auto_tune = true;
			break;
		default:
			return usage_error("Unexpected option. See 'acctctl --help'.");
		}
	}

	args = argv + optind;
	if (args[0]) {
		for (int i = 0; i < _CMD_MAX; i++)
			if (strcmp(args[0], command_names[i]) == 0)
				cmd = i;
		if (cmd == CMD_NONE)
			return usage_error("Unknown command '%s'. See 'acctctl --help'.", args[0]);
		args++;
	}
	if (cmd == CMD_HELP) {
		int what = CMD_NONE;
		if (args[0]) {
			for (int i = 0; i < _CMD_MAX; i++)
				if (strcmp(args[0], command_names[i]) == 0)
					what = i;
			if (what == CMD_NONE)
				return usage_error("Unknown command '%s'. See 'acctctl --help'.", args[0]);
		}
		help_command(stdout, what);
		exit(EXIT_OK);
	}
	if (help) {
		help_command(stdout, cmd);
		exit(EXIT_OK);
	}
	if (cmd == CMD_NONE)
		cmd = CMD_LIST;

	for (int i = 0; i < nseen; i++)
		if (!(option_commands(seen[i]) & M(cmd))) {
			const char *name = option_name(seen[i]);
			return usage_error("Option --%s does not apply to '%s'. See 'acctctl %s --help'.", name,
					   command_names[cmd], command_names[cmd]);
		}

	size_t nargs = 0;
	while (args[nargs])
		nargs++;
	switch (cmd) {
	case CMD_STATUS:
	case CMD_TUNE:
	case CMD_RECONCILE:
	case CMD_RELOAD:
		if (nargs > 0)
			return usage_error("'%s' takes no arguments.", command_names[cmd]);
		break;
	case CMD_LIST:
	case CMD_TOP:
		if (nargs > 1)
			return usage_error("'%s' takes at most one PREFIX.", command_names[cmd]);
		break;
	case CMD_SHOW:
		if (nargs != 1)
			return usage_error("'show' needs exactly one CGROUP.");
		break;
	case CMD_WATCH:
		if (nargs == 0 && !arg_prefix)
			return usage_error("'watch' needs a CGROUP or --prefix=PATH.");
		break;
	case CMD_COMPARE:
		if (nargs != 3)
			return usage_error("'compare' needs CGROUP QUANTITY THRESHOLD.");
		break;
	default:
		break;
	}
	*ret_cmd = cmd;
	*ret_args = args;
	*ret_help = false;
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	static int (*const run[_CMD_MAX])(char **args) = {
		[CMD_STATUS] = cmd_status,   [CMD_LIST] = cmd_list,	      [CMD_SHOW] = cmd_show,
		[CMD_TOP] = cmd_top,	     [CMD_WATCH] = cmd_watch,	      [CMD_COMPARE] = cmd_compare,
		[CMD_TUNE] = cmd_tune,	     [CMD_RECONCILE] = cmd_reconcile, [CMD_RELOAD] = cmd_reload,
	};
	const char *codeset;
	char **args = NULL;
	bool help = false;
	int cmd = CMD_NONE, r;

	/* only the character type: numbers keep their '.' whatever the locale */
	(void)setlocale(LC_CTYPE, "");
	codeset = nl_langinfo(CODESET);
	utf8 = codeset && strcmp(codeset, "UTF-8") == 0;
	probe_terminal();

	r = parse_argv(argc, argv, &cmd, &args, &help);
	if (r != EXIT_OK)
		return r;
	command_name = command_names[cmd];
	r = run[cmd](args);
	fflush(stdout);
	pager_close();
	return r;
}
