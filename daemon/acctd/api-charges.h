/* api-charges.h - the varlink methods Charge and ChargeBatch (api-charges.c,
 * docs/charges.md) and what a connection holds of its charges. Internal to
 * daemon/acctd/api-*.c. */
#pragma once

#include <stdbool.h>

#include <json-c/json.h>

#include "api-dispatch.h"

/* The methods' parameter names (the dispatcher checks calls against them). */
extern const char *const api_charge_params[];
extern const char *const api_charge_batch_params[];


/* Charge(resource, delta, cgroup?, sync?) and ChargeBatch(charges): answer
 * and return 0, or a negative errno (the connection closes). */
int api_method_charge(struct request *rq, struct json_object *params);
int api_method_charge_batch(struct request *rq, struct json_object *params);

/* The cgroup a charge of rq goes to, checked as Charge's (api-charges.c:
 * whom, and who may say so), into `path`: `v` the parameter (NULL: the
 * caller's own), `name` its name in errors. Returns PARAM_OK, PARAM_REPLIED
 * (an error sent) or -ENOMEM. For OpenChargeSlot (api-slots.c). */
int api_charge_target(struct request *rq, struct json_object *v, const char *name,
		      char path[static CGROUP_PATH_MAX + 1]);

struct manager;

/* Whether acctd tracks the cgroup `path` (alive in its ledger). */
bool api_cgroup_tracked(struct manager *m, const char *path);

/* Charge `delta` of a slot of connection c to (res, path), the entry with
 * `serial` only, keeping the connection's net as Charge does. Returns 0,
 * -ESTALE (the cgroup was removed since; nothing charged), -ERANGE or
 * -ENOMEM (nothing charged). */
int api_charges_apply_slot(struct conn *c, size_t res, const char *path, int64_t delta, uint64_t serial);

/* A connection's net charges of the resources with release_on_exit, per
 * cgroup (struct conn's `charges`; NULL until it charges one). */
struct api_conn_charges;

/* The connection is closing, which is its client's exit: charge back its net
 * charges (those to a cgroup removed since went by the removal rule) and
 * free them. Accepts a connection that never charged. */
void api_charges_conn_release(struct conn *c);

/* Whether a message's first `size` bytes begin a ChargeBatch call as its
 * first member ({"method":"io.acctd.Accounting.ChargeBatch"): the reader's
 * exemption from the parse limits (varlink_reader_set_exempt()), as
 * api_charge_batch_text() reads such a call without json-c, allocating less
 * than its bytes. `userdata` unused. */
bool api_charge_batch_exempt(const char *msg, size_t size, void *userdata);

/* Answer the call `text` (`size` bytes, NUL-terminated) of connection c
 * when it is a ChargeBatch of the common shape, read without json-c (no
 * object per entry), with the same replies and errors as
 * api_method_charge_batch(): returns 1 when answered, 0 when it is not
 * such a call (the caller builds it with json-c and dispatches it), or a
 * negative errno (the connection closes). */
int api_charge_batch_text(struct conn *c, const char *text, size_t size);
