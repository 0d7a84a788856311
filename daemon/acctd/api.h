/* api.h - the varlink API of acctd (io.acctd.Accounting and org.varlink.service)
 * on a Unix socket, served on the manager's event loop (docs/api.md).
 *
 * The implementation, one file per layer, top to bottom: api-server.c (the
 * listening socket, accept() and its connection limits, one struct conn per
 * client with bounded input and output), api-dispatch.c (the method table's
 * resolution, access and parameter checks, outcome counting, the reply
 * helpers), api-methods.c (one function per method, and the method table)
 * and api-watch.c (Watch's change detection and streaming); api-budget.c
 * accounts what each uid holds (bytes, connections, watches) for the server
 * and Watch. */
#pragma once

#include <sys/types.h>

#include "manager.h"

struct api_server;

/* Add the API as a front end of m (struct manager_frontend), before
 * manager_start(): at the start it listens on the socket passed by systemd
 * (sd_listen_fds_with_names(), name "varlink") or else binds the configured
 * [api] socket (mode 0666, parent created); a failure to (logged) fails the
 * start. manager_free() frees the server, also after a failed start.
 * Returns 0 with the server in *ret (may be NULL; the manager's, not the
 * caller's), or -ENOMEM (nothing added). */
int api_server_add(struct manager *m, struct api_server **ret);

/* Close every connection and the listening socket (and remove the socket
 * file if this server bound it and it is still the same inode). Accepts
 * NULL; returns NULL. The manager calls it through the front end's on_free. */
struct api_server *api_server_free(struct api_server *s);

/* Connect to the API from inside acctd (the page's calls, page-call.h): a
 * connection of the server like an accepted one, whose peer is `uid` and
 * `gid` (the page's client: a local user, or nobody for a remote one), with
 * that uid's budgets and the connection limits, and *ret_fd the other end
 * of a socket pair (non-blocking, close-on-exec; the caller's, to close).
 * Returns 0, -ENOTCONN when the API is not serving, -EDQUOT when the
 * connection budget refuses (counted as a refused connection), or a negative
 * errno of socketpair() or -ENOMEM. */
int api_server_connect(struct api_server *s, uid_t uid, gid_t gid, int *ret_fd);

/* Figures for Status() and /metrics. */
struct api_stats {
	uint64_t connections;       /* open now */
	uint64_t connections_total; /* accepted since start */
	uint64_t refused_total;     /* refused for limits */
};
/* Fill *ret (zeros for s NULL). */
void api_server_stats(const struct api_server *s, struct api_stats *ret);

/* Charges refused by the resource budgets (api-budget.h), for Status and
 * /metrics: calls fn for every resource ("input", "output", "connections",
 * "watches", "watch_cgroups"; static strings), zeros included. Accepts NULL
 * (no calls). */
void api_server_foreach_budget_refusal(const struct api_server *s,
				       void (*fn)(const char *resource, uint64_t count, void *userdata), void *userdata);

/* Requests by method and result ("ok" or the error name), for /metrics:
 * calls fn for every (method, result, count) with a count above 0. Accepts
 * NULL (no calls). */
void api_server_foreach_request_count(const struct api_server *s,
				      void (*fn)(const char *method, const char *result, uint64_t count, void *userdata),
				      void *userdata);

/* Free a history query (Usage, History) that will never be answered: the
 * query thread's end calls it for the jobs it did not finish. */
struct history_query;
void api_history_query_drop(struct history_query *q);
