/* tcp-peer.h - who is at the other end of an accepted TCP connection.
 *
 * The metrics endpoint shares its scrape slots fairly between clients
 * (metrics-http.c). A remote client is its address; a client on this host
 * (a loopback peer) is its user: every local user connects from 127.0.0.1,
 * and the kernel knows which user's socket is at the other end. It says so
 * through sock_diag (NETLINK_SOCK_DIAG, an exact lookup of the connection's
 * four-tuple, which any user may make: it is what ss(8) reads). */
#pragma once
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

struct tcp_peer {
	bool local;                   /* a loopback peer whose socket's owner is known */
	uid_t uid;                    /* with local */
	struct sockaddr_storage addr; /* without local: the peer's address, port 0 */
};

/* Identify the peer of the connected TCP socket fd into *ret. Returns 0, or
 * a negative errno (then *ret is untouched): the socket has no peer address,
 * or it is a loopback peer whose owner sock_diag did not tell (no netlink
 * socket allowed, say): all local users share the loopback addresses, so
 * such a peer has no identity rather than a shared one. */
int tcp_peer_identify(int fd, struct tcp_peer *ret);

/* Whether a and b are the same client. */
bool tcp_peer_equal(const struct tcp_peer *a, const struct tcp_peer *b);

/* "uid 1000" or "192.0.2.7" / "2001:db8::7", for logs. */
const char *tcp_peer_to_string(const struct tcp_peer *p, char *buf, size_t size);
