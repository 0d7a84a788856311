/* api-watch.h - the varlink API's Watch: which records changed since the last
 * update (a fingerprint per record), and their streaming in bounded replies.
 * Internal to daemon/acctd/api-*.c. */
#pragma once

#include <json-c/json.h>

#include "api-dispatch.h"

struct conn;

/* The method io.acctd.Accounting.Watch (api_methods[M_WATCH]) and its
 * parameter names. Returns 1 (the connection now watches, for good), 0 (an
 * error was answered) or a negative errno. */
extern const char *const api_watch_params[];
int api_method_watch(struct request *rq, struct json_object *params);

/* Send c's due update: the records that changed since the last one (all of
 * them the first time), in replies of at most WATCH_CHUNK records. Returns 0
 * or -ENOMEM (the connection must close). */
int api_watch_update(struct conn *c);

/* Whether c's watch wants an update (its interval has passed). */
bool api_watch_due(const struct conn *c);

/* Stop and free a watch. Accepts NULL; returns NULL. */
struct watch *api_watch_free(struct watch *w);
