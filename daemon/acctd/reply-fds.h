/* reply-fds.h - descriptors sent with a connection's replies (SCM_RIGHTS).
 *
 * A method that hands the client a descriptor (OpenChargeSlot: a charge slot's
 * memfd, lib/percpu/charge-slot-owner.h) attaches it to its reply. The output
 * of a connection is a byte stream; each descriptor is queued with the stream
 * offset where its reply begins, and the writer sends the bytes before that
 * offset in sendmsg() calls of their own, then the reply's bytes with the
 * descriptor in the same sendmsg(). The kernel attaches it to the first bytes
 * of that call, so the client finds it with its reply's first read (and
 * lib/client/acct-client.c matches it to that message).
 *
 * Ownership: a queued descriptor belongs to the queue, which closes it once
 * sent (the client has its own copy then) or when cleared. Not thread-safe:
 * one connection's writer uses its queue. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Descriptors one connection may have waiting to be sent; a method attaches
 * one per reply, and a connection takes no call while its output is long. */
#define REPLY_FDS_MAX 16

struct reply_fds {
	uint64_t sent; /* bytes of the stream written so far */
	unsigned n;
	struct {
		int fd;
		uint64_t at; /* stream offset of the first byte it goes with */
	} q[REPLY_FDS_MAX];
};

/* Queue `fd` (taken, even on failure: closed then) to go with the byte at
 * stream offset `at`, which must be >= q->sent and >= the offset of the
 * last one queued. Returns 0, -EBADF for a negative fd, -EINVAL for an offset
 * out of order, or -EBUSY when REPLY_FDS_MAX are waiting. */
int reply_fds_push(struct reply_fds *q, int fd, uint64_t at);

/* Send as much of the `n` buffers (the stream from offset q->sent) as one
 * sendmsg() takes, stopping before the next descriptor's offset and carrying
 * the descriptor when its offset is the first byte sent. `flags` go to
 * sendmsg() (MSG_NOSIGNAL | MSG_DONTWAIT). Returns the bytes sent (>= 0; the
 * caller drains them from its buffer) or sendmsg()'s negative errno. A
 * descriptor that went out is closed here. Cost: one sendmsg(). */
ssize_t reply_fds_sendmsg(struct reply_fds *q, int sock, const struct iovec *iov, size_t n, int flags);

/* Close every queued descriptor (a connection that goes away). */
void reply_fds_clear(struct reply_fds *q);
