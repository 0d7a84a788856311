/* test-log.c - unit tests of the log's delivery (lib/basic/log.h): with the
 * writer thread, a reader of stderr that reads nothing (a pipe whose read end
 * this test holds) never blocks a thread that logs; what does not fit is
 * dropped and counted, what is delivered keeps its order, and a line
 * "N log lines dropped" stands at each gap with the gap's exact size once the
 * reader reads again. The stop returns within its bounded wait while the
 * reader still reads nothing. Rate limits let `burst` messages of a cause
 * through per window and sum up the rest in one line. Without the writer
 * (--dump, --check-config) a message is on stderr when log_info() returns.
 * The journal-stream target writes "<N>message" lines.
 * Each test points stderr at its own pipe and restores it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "util.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct redirect {
	int saved_stderr;
	int rfd; /* the read end: the test is the (slow) reader */
};

static int setup(void **state)
{
	struct redirect *r = calloc(1, sizeof(*r));
	int p[2];

	assert_non_null(r);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	r->saved_stderr = dup(STDERR_FILENO);
	assert_true(r->saved_stderr >= 0);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	r->rfd = p[0];
	log_set_target(LOG_TARGET_STDERR);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct redirect *r = *state;

	log_stop_writer(0);
	dup2(r->saved_stderr, STDERR_FILENO);
	close(r->saved_stderr);
	close(r->rfd);
	free(r);
	return 0;
}

/* Everything on the pipe until `until` is in it or the deadline passes. */
struct reader {
	int fd;
	char *buf;
	size_t len, cap;
};

static void read_some(struct reader *rd, int timeout_ms)
{
	int fl = fcntl(rd->fd, F_GETFL);
	fcntl(rd->fd, F_SETFL, fl | O_NONBLOCK);
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	do {
		if (rd->cap - rd->len < 65536) {
			rd->cap = rd->cap * 2 + 65536;
			rd->buf = realloc(rd->buf, rd->cap + 1);
			assert_non_null(rd->buf);
		}
		ssize_t k = read(rd->fd, rd->buf + rd->len, rd->cap - rd->len);
		if (k > 0)
			rd->len += (size_t)k;
		else
			usleep(1000);
	} while (now_ms() < end);
	rd->buf[rd->len] = '\0';
	fcntl(rd->fd, F_SETFL, fl);
}

struct producer {
	unsigned n;
	bool done; /* atomic */
	uint64_t ms;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	uint64_t t0 = now_ms();
	char pad[200];

	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (unsigned i = 0; i < p->n; i++)
		log_info("seq=%u %s", i, pad);
	p->ms = now_ms() - t0;
	__atomic_store_n(&p->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* A pipe nobody reads (64 KiB fill it): 5,000 lines of 250 bytes, 1.2 MB,
 * logged from a thread that must finish at once; then the reader catches up
 * and every line is either there, in order, or counted in the line that
 * stands at its gap. */
static void test_blocked_reader_never_blocks(void **state)
{
	struct redirect *r = *state;
	struct producer p = { .n = 5000 };
	struct reader rd = { .fd = r->rfd };
	pthread_t t;
	uint64_t dropped0 = log_dropped_total();

	assert_int_equal(log_start_writer(), 0);
	assert_int_equal(pthread_create(&t, NULL, produce, &p), 0);
	for (uint64_t end = now_ms() + 30000; !__atomic_load_n(&p.done, __ATOMIC_ACQUIRE) && now_ms() < end;)
		usleep(10000);
	/* On a synchronous log the producer is stuck in write(2) now. */
	assert_true(__atomic_load_n(&p.done, __ATOMIC_ACQUIRE));
	pthread_join(t, NULL);
	print_message("5000 lines logged in %" PRIu64 " ms with nobody reading\n", p.ms);
	uint64_t dropped = log_dropped_total() - dropped0;
	assert_true(dropped > 0);

	/* The reader catches up: the queue drains, the summary comes. */
	for (uint64_t end = now_ms() + 60000; now_ms() < end;) {
		size_t before = rd.len;
		read_some(&rd, 1000);
		if (rd.len > 0 && rd.len == before)
			break; /* a second without a line: the writer is idle */
	}

	unsigned expect = 0, seen = 0;
	uint64_t summed = 0, pending = 0;
	for (char *line = strtok(rd.buf, "\n"); line; line = strtok(NULL, "\n")) {
		const char *s = strstr(line, "seq=");
		unsigned long long n;
		if (s) {
			assert_int_equal(sscanf(s, "seq=%u", &seen), 1);
			/* in order, each gap exactly the count announced before it */
			assert_int_equal(seen, expect + pending);
			expect = seen + 1;
			pending = 0;
		} else if ((s = strstr(line, "warning: ")) && sscanf(s, "warning: %llu log lines dropped", &n) == 1) {
			assert_int_equal(pending, 0);
			pending = n;
			summed += n;
		} else
			fail_msg("unexpected line: %s", line);
	}
	/* a gap at the end is announced too (the line after the last seq) */
	assert_int_equal(expect + pending, 5000);
	assert_int_equal(summed, dropped);
	free(rd.buf);
}

/* The stop is bounded: with a reader that reads nothing it returns within
 * its wait (and a bit), dropping and counting what it could not deliver. */
static void test_stop_is_bounded(void **state)
{
	struct producer p = { .n = 2000 };
	uint64_t t0;

	(void)state;
	assert_int_equal(log_start_writer(), 0);
	produce(&p);
	t0 = now_ms();
	log_stop_writer(200 * 1000);
	assert_true(now_ms() - t0 < 5000);
	assert_true(log_dropped_total() > 0);
}

/* Synchronous delivery (no writer): the line is on stderr at once. */
static void test_synchronous_without_writer(void **state)
{
	struct redirect *r = *state;
	struct reader rd = { .fd = r->rfd };

	log_info("synchronous %d", 42);
	read_some(&rd, 0);
	assert_non_null(strstr(rd.buf, "info: synchronous 42\n"));
	free(rd.buf);
}

/* 100 messages of one cause with a burst of 5 per 300 ms: 5 go through, 95
 * are counted, and one summary says so once the window ended. */
static void test_ratelimit_summary(void **state)
{
	struct redirect *r = *state;
	struct reader rd = { .fd = r->rfd };
	static struct log_ratelimit rl = { .what = "test records", .interval_us = 300000, .burst = 5 };
	uint64_t suppressed0 = log_suppressed_total();
	unsigned logged = 0;

	assert_int_equal(log_start_writer(), 0);
	for (int i = 0; i < 100; i++)
		if (log_ratelimit_below(&rl)) {
			log_info("record %d", i);
			logged++;
		}
	assert_int_equal(logged, 5);
	assert_int_equal(log_suppressed_total() - suppressed0, 95);
	/* The writer writes the summary after the window, unprompted. */
	for (uint64_t end = now_ms() + 30000; now_ms() < end;) {
		read_some(&rd, 100);
		if (strstr(rd.buf, "Suppressed 95 test records"))
			break;
	}
	assert_non_null(strstr(rd.buf, "notice: Suppressed 95 test records in the last 1s"));
	assert_non_null(strstr(rd.buf, "record 4\n"));
	assert_null(strstr(rd.buf, "record 5\n"));
	/* A new window lets messages through again. */
	assert_true(log_ratelimit_below(&rl));
	free(rd.buf);
}

/* LOG_TARGET_JOURNAL_STREAM (acctd --bpf-pin under systemd): each message is
 * one line "<priority>message" on stderr, the journal stream, with no time
 * or level name of ours; the maximum level still applies; the queued writer
 * delivers the same. */
static void test_journal_stream(void **state)
{
	struct redirect *r = *state;
	struct reader rd = { .fd = r->rfd };

	log_set_target(LOG_TARGET_JOURNAL_STREAM);
	assert_int_equal(log_get_target(), LOG_TARGET_JOURNAL_STREAM);
	log_notice("nothing pinned: %s", "why");
	log_debug("not at the default level");
	assert_int_equal(log_error_errno(EPERM, "refused: %m"), -EPERM);
	read_some(&rd, 0);
	assert_string_equal(rd.buf, "<5>nothing pinned: why\n<3>refused: Operation not permitted\n");
	assert_int_equal(log_start_writer(), 0);
	log_warning("queued");
	log_stop_writer(10 * 1000000);
	rd.len = 0;
	read_some(&rd, 0);
	assert_string_equal(rd.buf, "<4>queued\n");
	free(rd.buf);
}

/* errno survives logging, queued as well as synchronous. */
static void test_errno_preserved(void **state)
{
	(void)state;
	errno = EBUSY;
	log_info("x");
	assert_int_equal(errno, EBUSY);
	assert_int_equal(log_start_writer(), 0);
	errno = EAGAIN;
	assert_int_equal(log_error_errno(ENOENT, "y: %m"), -ENOENT);
	assert_int_equal(errno, EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_blocked_reader_never_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_synchronous_without_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ratelimit_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errno_preserved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_stream, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
