/* metrics-http.h - the /metrics endpoint (Prometheus text 0.0.4 and OpenMetrics
 * 1.0) over HTTP with libevent's evhttp, served on the manager's event loop. */
#pragma once

#include "manager.h"

struct api_server;

/* Add /metrics as a front end of m (struct manager_frontend), before
 * manager_start(): at the start it listens on [metrics] listen (nothing for
 * "none"; a failure to, logged, fails the start), after each scan that
 * follows the start or a reload it warns of [metrics] include and exclude
 * globs that match no tracked cgroup, and manager_free() frees it. `api`
 * (may be NULL) is the server whose figures the page shows. Returns 0 or
 * -ENOMEM (nothing added). */
int metrics_server_add(struct manager *m, struct api_server *api);

/* Log a warning for each [metrics] include or exclude glob that matches no
 * tracked cgroup. */
void metrics_warn_unmatched(const struct manager *m);

/* Stop listening, drop connections. Accepts NULL; returns NULL. The manager
 * calls it through the front end's on_free. */
struct metrics_server *metrics_server_free(struct metrics_server *s);
