/* reply-fds.c - sending descriptors at their replies' offsets in a
 * connection's output stream. See reply-fds.h. */
#include "reply-fds.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/util.h"

/* At most this many buffers per sendmsg(), as the connection writer peeks. */
#define IOV_MAX_PEEK 16

int reply_fds_push(struct reply_fds *q, int fd, uint64_t at)
{
	if (fd < 0)
		return -EBADF;
	if (at < q->sent || (q->n > 0 && at < q->q[q->n - 1].at)) {
		(void)close(fd);
		return -EINVAL;
	}
	if (q->n >= REPLY_FDS_MAX) {
		(void)close(fd);
		return -EBUSY;
	}
	q->q[q->n].fd = fd;
	q->q[q->n++].at = at;
	return 0;
}

static void pop_front(struct reply_fds *q)
{
	(void)close(q->q[0].fd);
	memmove(&q->q[0], &q->q[1], (q->n - 1) * sizeof(q->q[0]));
	q->n--;
}

ssize_t reply_fds_sendmsg(struct reply_fds *q, int sock, const struct iovec *iov, size_t n, int flags)
{
	struct iovec v[IOV_MAX_PEEK];
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	struct msghdr mh = { .msg_iov = v };
	bool with_fd = q->n > 0 && q->q[0].at == q->sent;
	/* Bytes before the next descriptor's reply go out without it. */
	uint64_t room = q->n > 0 && !with_fd ? q->q[0].at - q->sent : UINT64_MAX;

	n = MIN(n, (size_t)IOV_MAX_PEEK);
	for (size_t i = 0; i < n && room > 0; i++) {
		v[i] = iov[i];
		if (v[i].iov_len > room)
			v[i].iov_len = (size_t)room;
		room -= v[i].iov_len;
		mh.msg_iovlen = i + 1;
	}
	if (with_fd) {
		memset(&control, 0, sizeof(control));
		mh.msg_control = &control;
		mh.msg_controllen = sizeof(control.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &q->q[0].fd, sizeof(int));
	}
	ssize_t k = sendmsg(sock, &mh, flags);
	if (k < 0)
		return -errno;
	if (with_fd && k > 0)
		pop_front(q); /* the peer holds its own copy now */
	q->sent += (uint64_t)k;
	return k;
}

void reply_fds_clear(struct reply_fds *q)
{
	while (q->n > 0)
		pop_front(q);
}
