/* test-reply-fds.c - daemon/acctd/reply-fds.c over a real socketpair: a
 * descriptor travels with the first bytes of its reply and never with the
 * bytes before it, the writer's partial writes keep that, a descriptor sent is
 * closed on the daemon's side, and the queue's limits and clearing. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "reply-fds.h"
#include "util.h"

/* One recvmsg(): its bytes into buf (returned count), its descriptors (at
 * most 4) into fds, their number into *nfds. */
static ssize_t recv_fds(int sock, char *buf, size_t size, int *fds, size_t *nfds)
{
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(sizeof(int) * 4)];
	} control;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control) };
	ssize_t k = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	*nfds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds + *nfds, CMSG_DATA(cm), n * sizeof(int));
			*nfds += n;
		}
	return k;
}

/* Is fd open in this process? */
static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Two replies in one buffer, the second with a descriptor: the first goes
 * alone, the second with it; the receiver finds it with the second's bytes. */
static void test_fd_at_its_reply(void **state)
{
	int sv[2], p[2];
	const char stream[] = "{\"parameters\":{}}\0{\"parameters\":{\"slot\":0}}";
	size_t first = strlen(stream) + 1, total = sizeof(stream);
	struct reply_fds q = { 0 };
	char buf[256];
	int fds[4];
	size_t nfds;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(reply_fds_push(&q, p[1], first), 0);

	struct iovec iov[2] = { { (void *)stream, 10 }, { (void *)(stream + 10), total - 10 } };
	ssize_t k = reply_fds_sendmsg(&q, sv[0], iov, 2, MSG_NOSIGNAL);
	assert_true(k == (ssize_t)first); /* stopped before the descriptor's reply */
	assert_true(is_open(p[1]));
	struct iovec rest = { (void *)(stream + first), total - first };
	k = reply_fds_sendmsg(&q, sv[0], &rest, 1, MSG_NOSIGNAL);
	assert_true(k == (ssize_t)(total - first));
	assert_false(is_open(p[1])); /* sent: the daemon's copy is closed */
	assert_int_equal(q.n, 0);
	assert_true(q.sent == total);

	/* The first reply's bytes alone carry nothing (a read may run on into
	 * the next reply's bytes: the kernel stops a read after the bytes that
	 * carried descriptors, not before them). */
	k = recv_fds(sv[1], buf, first, fds, &nfds);
	assert_true(k == (ssize_t)first);
	assert_true(nfds == 0);
	k = recv_fds(sv[1], buf, sizeof(buf), fds, &nfds);
	assert_true(k == (ssize_t)(total - first));
	assert_true(nfds == 1);
	assert_memory_equal(buf, stream + first, total - first);
	/* The received copy is the pipe's write end. */
	assert_int_equal(write(fds[0], "x", 1), 1);
	assert_int_equal(read(p[0], buf, 1), 1);
	close(fds[0]);
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
}

/* A socket that takes a few bytes at a time (a full peer): the descriptor
 * still goes with its reply's first byte, whatever the writes' sizes. */
static void test_partial_writes(void **state)
{
	int sv[2], p[2];
	char stream[8192];
	struct reply_fds q = { 0 };
	const size_t at = 5000;
	int fds[4];
	size_t nfds, got = 0, fd_at = SIZE_MAX;

	memset(stream, 'a', sizeof(stream));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	int sndbuf = 4096;
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	assert_int_equal(reply_fds_push(&q, p[1], at), 0);
	while (got < sizeof(stream)) {
		if (q.sent < sizeof(stream)) {
			struct iovec iov = { stream + q.sent, sizeof(stream) - (size_t)q.sent };
			ssize_t k = reply_fds_sendmsg(&q, sv[0], &iov, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			assert_true(k > 0 || k == -EAGAIN);
		}
		char buf[700];
		ssize_t r = recv_fds(sv[1], buf, sizeof(buf), fds, &nfds);
		if (r < 0) {
			assert_int_equal(errno, EAGAIN);
			continue;
		}
		if (nfds > 0) {
			assert_true(nfds == 1 && fd_at == SIZE_MAX);
			fd_at = got;
			close(fds[0]);
		}
		got += (size_t)r;
		/* A read that carried the descriptor holds its reply's first byte. */
		if (nfds > 0)
			assert_true(fd_at <= at && at < got);
	}
	assert_true(fd_at != SIZE_MAX);
	assert_false(is_open(p[1]));
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
}

static void test_queue_limits(void **state)
{
	struct reply_fds q = { .sent = 100 };
	int p[2];

	assert_int_equal(reply_fds_push(&q, -1, 100), -EBADF);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(reply_fds_push(&q, p[1], 99), -EINVAL); /* before what was sent */
	assert_false(is_open(p[1]));                              /* taken even on failure */
	close(p[0]);

	int first = -1;
	for (unsigned i = 0; i < REPLY_FDS_MAX; i++) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (i == 0)
			first = fd;
		assert_int_equal(reply_fds_push(&q, fd, 200 + i), 0);
	}
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(reply_fds_push(&q, fd, 1000), -EBUSY);
	assert_false(is_open(fd));
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(reply_fds_push(&q, fd, 150), -EINVAL); /* before the last queued */
	assert_false(is_open(fd));
	assert_true(is_open(first));
	reply_fds_clear(&q);
	assert_int_equal(q.n, 0);
	assert_false(is_open(first));
	reply_fds_clear(&q); /* empty: fine */
}

/* A peer that went away: the error comes back, the descriptor stays queued
 * until the connection clears it. */
static void test_peer_gone(void **state)
{
	int sv[2], p[2];
	struct reply_fds q = { 0 };

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	close(sv[1]);
	assert_int_equal(reply_fds_push(&q, p[1], 0), 0);
	struct iovec iov = { "{}", 3 };
	assert_int_equal(reply_fds_sendmsg(&q, sv[0], &iov, 1, MSG_NOSIGNAL), -EPIPE);
	assert_true(is_open(p[1]));
	reply_fds_clear(&q);
	assert_false(is_open(p[1]));
	close(p[0]);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fd_at_its_reply),
		cmocka_unit_test(test_partial_writes),
		cmocka_unit_test(test_queue_limits),
		cmocka_unit_test(test_peer_gone),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
