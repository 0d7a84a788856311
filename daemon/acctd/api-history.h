/* api-history.h - the history's varlink methods, Usage and History
 * (api-history.c). Internal to daemon/acctd/api-*.c. */
#pragma once

#include "api-dispatch.h"

/* Their parameter names (NULL-terminated), for the method table. */
extern const char *const api_usage_params[];
extern const char *const api_history_params[];

/* The methods: check the parameters, queue the query, return 1 (the answer
 * comes from a query worker), or 0 when answered at once (an error). */
int api_method_usage(struct request *rq, struct json_object *params);
int api_method_history(struct request *rq, struct json_object *params);
