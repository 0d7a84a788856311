/* metrics-http.h - the /metrics endpoint (Prometheus text 0.0.4 and OpenMetrics
 * 1.0) over HTTP with libevent's evhttp, served on the manager's event loop. */
#pragma once

#include "manager.h"

/* Connections the endpoint holds at most (the oldest idle one is closed for
 * a new one); the manager leaves descriptors for them (manager.c). */
#define METRICS_MAX_CONNECTIONS 64

/* Listen on m->config->metrics_listen (nothing for "none"). Returns 0 or a
 * negative errno (logged). */
int metrics_server_start(struct manager *m);

/* Log a warning for each [metrics] include or exclude glob that matches no
 * tracked cgroup (the manager calls it once after each start or reload). */
void metrics_warn_unmatched(const struct manager *m);

/* Stop listening, drop connections. Accepts NULL; returns NULL. */
struct metrics_server *metrics_server_free(struct metrics_server *s);
