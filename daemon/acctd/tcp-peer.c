/* tcp-peer.c - who is at the other end of a TCP connection (tcp-peer.h). */
#include "tcp-peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/util.h"

static bool is_loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	if (a->ss_family == AF_INET6) {
		const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(x))
			return true;
		return IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127;
	}
	return false;
}

static void put_endpoint(const struct sockaddr_storage *a, __be16 *port, __be32 addr[4])
{
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)a;
		*port = in->sin_port;
		memcpy(addr, &in->sin_addr, sizeof(in->sin_addr));
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)a;
		*port = in6->sin6_port;
		memcpy(addr, &in6->sin6_addr, sizeof(in6->sin6_addr));
	}
}

/* The owner of the socket at the peer's end of this connection: the socket
 * whose source is our peer and whose destination is us. */
static int lookup_uid(const struct sockaddr_storage *us, const struct sockaddr_storage *peer, uid_t *ret)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg = {
		.nlh = { .nlmsg_len = sizeof(msg), .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
		.req = { .sdiag_family = (__u8)peer->ss_family, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u },
	};
	msg.req.id.idiag_cookie[0] = msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	put_endpoint(peer, &msg.req.id.idiag_sport, msg.req.id.idiag_src);
	put_endpoint(us, &msg.req.id.idiag_dport, msg.req.id.idiag_dst);

	_cleanup_close_ int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	if (sendto(nl, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	union {
		struct nlmsghdr nlh;
		char buf[8192];
	} reply;
	struct timeval tv = { .tv_sec = 1 };
	(void)setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ssize_t n = recv(nl, &reply, sizeof(reply), 0);
	if (n < 0)
		return -errno;
	for (struct nlmsghdr *h = &reply.nlh; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			return e->error < 0 ? e->error : -ENOENT;
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *d = NLMSG_DATA(h);
			*ret = d->idiag_uid;
			return 0;
		}
	}
	return -ENOENT;
}

int tcp_peer_identify(int fd, struct tcp_peer *ret)
{
	struct sockaddr_storage us, peer;
	socklen_t lu = sizeof(us), lp = sizeof(peer);
	if (getsockname(fd, (struct sockaddr *)&us, &lu) < 0 || getpeername(fd, (struct sockaddr *)&peer, &lp) < 0)
		return -errno;
	if (peer.ss_family != AF_INET && peer.ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	struct tcp_peer p = { 0 };
	if (is_loopback(&peer)) {
		/* Every local user comes from a loopback address: without its
		 * owner, a local peer is nobody in particular. */
		int r = lookup_uid(&us, &peer, &p.uid);
		if (r < 0)
			return r;
		p.local = true;
	} else {
		p.addr = peer;
		if (peer.ss_family == AF_INET)
			((struct sockaddr_in *)&p.addr)->sin_port = 0;
		else
			((struct sockaddr_in6 *)&p.addr)->sin6_port = 0;
	}
	*ret = p;
	return 0;
}

bool tcp_peer_equal(const struct tcp_peer *a, const struct tcp_peer *b)
{
	if (a->local != b->local)
		return false;
	if (a->local)
		return a->uid == b->uid;
	if (a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET)
		return ((const struct sockaddr_in *)&a->addr)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)&b->addr)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)&a->addr)->sin6_addr,
		      &((const struct sockaddr_in6 *)&b->addr)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

const char *tcp_peer_to_string(const struct tcp_peer *p, char *buf, size_t size)
{
	if (p->local)
		snprintf(buf, size, "uid %u", (unsigned)p->uid);
	else if (p->addr.ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)&p->addr)->sin_addr, buf, (socklen_t)size);
	else
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&p->addr)->sin6_addr, buf, (socklen_t)size);
	return buf;
}
