/* api.h - the varlink API of acctd (io.acctd.Accounting and org.varlink.service)
 * on a Unix socket, served on the manager's event loop. */
#pragma once

#include "manager.h"

/* Listen on the socket passed by systemd (sd_listen_fds_with_names(), name
 * "varlink") or else bind m->config->socket_path (mode 0666, parent created).
 * Returns 0 or a negative errno (logged). */
int api_server_start(struct manager *m);

/* Close every connection and the listening socket. Accepts NULL; returns NULL. */
struct api_server *api_server_free(struct api_server *s);

/* Figures for Status() and /metrics. */
struct api_stats {
	uint64_t connections;       /* open now */
	uint64_t connections_total; /* accepted since start */
	uint64_t refused_total;     /* refused for limits */
};
void api_server_stats(const struct api_server *s, struct api_stats *ret);

/* Requests by method and result ("ok" or the error name), for /metrics:
 * calls fn for every (method, result, count). */
void api_server_foreach_request_count(const struct api_server *s,
				      void (*fn)(const char *method, const char *result, uint64_t count, void *userdata),
				      void *userdata);
