/* api-dispatch.h - the varlink API's dispatcher: resolves a call against the
 * method table (api-methods.c), checks access and parameters, counts the
 * outcome; and the helpers every method answers with (replies, errors, cgroup
 * path parameters). Internal to daemon/acctd/api-*.c; the API's public face
 * is api.h. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/ledger-json.h"
#include "basic/path.h" /* CGROUP_PATH_MAX */
#include "basic/util.h"
#include "varlink/varlink.h"

#define IFACE_ACCT "io.acctd.Accounting"

struct conn;
struct api_server;

/* Drop a json-c reference at the end of a scope; NULL is fine. */
static inline void json_object_putp(struct json_object **p)
{
	if (*p)
		(void)json_object_put(*p);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

/* ---- outcomes, for /metrics ------------------------------------------------ */

enum api_result {
	RES_OK,
	RES_INTERFACE_NOT_FOUND,
	RES_METHOD_NOT_FOUND,
	RES_INVALID_PARAMETER,
	RES_PERMISSION_DENIED,
	RES_EXPECTED_MORE,
	RES_NO_SUCH_CGROUP,
	RES_INVALID_CGROUP_PATH,
	RES_NO_SUCH_QUANTITY,
	RES_RELOAD_FAILED,
	RES_RESOURCE_LIMIT_EXCEEDED,
	RES_HISTORY_UNAVAILABLE,
	RES_NO_SUCH_RESOURCE,
	_RES_MAX,
};

/* "ok", or the qualified error name. */
extern const char *const api_result_names[_RES_MAX];

enum api_method_id {
	M_STATUS,
	M_LIST,
	M_GET,
	M_WATCH,
	M_COMPARE,
	M_TUNE,
	M_RECONCILE,
	M_RELOAD,
	M_GET_INFO,
	M_GET_INTERFACE_DESCRIPTION,
	M_USAGE,   /* history queries, answered from the query threads */
	M_HISTORY,
	M_CHARGE,  /* programs' charges (api-charges.c) */
	M_CHARGE_BATCH,
	M_OPEN_CHARGE_SLOT,
	M_UNKNOWN, /* malformed messages, unknown interfaces and methods */
	_M_MAX,
};

/* One call being answered. */
struct request {
	struct conn *c;
	enum api_method_id method;
	unsigned flags; /* VARLINK_CALL_* */
	bool counted;
};

/* A method returns 0 when it has answered (a reply or an error), 1 when it
 * goes on asynchronously (the connection stays busy until it ends), or a
 * negative errno for an internal failure (the connection is closed). */
typedef int (*api_method_fn)(struct request *rq, struct json_object *params);

struct api_method {
	const char *name; /* qualified */
	api_method_fn fn;
	bool admin;                 /* root or the admin group (api_is_admin()) for any call */
	bool needs_more;            /* ExpectedMore without "more" */
	const char *const *params;  /* the parameter names, NULL-terminated; methods
				     * read their parameters by index into it */
};

/* Whether the peer of c may administer: root, or a member of [api]
 * admin_group (the peer's groups at connect() time). For methods that are
 * open to all but whose changes are not (Tune). */
bool api_is_admin(struct conn *c);

/* Indexed by enum api_method_id (api-methods.c). */
extern const struct api_method api_methods[_M_MAX];

/* A deprecated parameter name: `old` of `method` is read as the method's
 * parameter number `index` (its current name in api_methods[].params). */
struct api_param_alias {
	enum api_method_id method;
	const char *old;
	unsigned index;
};

/* The deprecated names still accepted (api-methods.c), ended by old == NULL.
 * The dispatcher renames them in a call's parameters before the method sees
 * them, logs the first use of each once per daemon, and answers
 * InvalidParameter naming the old name when a call gives both names. */
extern const struct api_param_alias api_deprecated_params[];

/* Answer one message (a parsed JSON object, not taken). Returns 0, or a
 * negative errno when the connection must close. Marks the connection busy
 * when the method goes on asynchronously. */
int api_dispatch(struct conn *c, struct json_object *msg);

/* ---- replies ---------------------------------------------------------------- */

/* Add v (taken; NULL: an allocation that failed) to object o as key. Returns 0,
 * or -ENOMEM with v released: one check for both allocations, so that a reply
 * is never sent with a member missing. */
int api_json_add(struct json_object *o, const char *key, struct json_object *v);

/* Count the outcome of rq once (the first count of a request wins). */
void api_count(struct request *rq, enum api_result r);

/* A reply with `params` (taken; NULL: {}), counted as ok. Nothing is queued
 * for oneway calls. Returns 0 or -ENOMEM. */
int api_reply(struct request *rq, struct json_object *params, bool continues);
/* A final reply with `params` (taken; NULL: {}) that carries the descriptor
 * `fd` (taken: closed here for a oneway call or on failure, else once sent),
 * counted as ok: reply-fds.h says how it travels. The reply should name it as
 * index 0 ({"slot": 0} for OpenChargeSlot), as systemd's varlink indexes the
 * descriptors of a message. Returns 0, or -ENOMEM or -EBUSY (REPLY_FDS_MAX
 * descriptors already waiting on this connection): the connection closes. */
int api_reply_fd(struct request *rq, struct json_object *params, int fd);
/* An error reply (params taken; NULL: {}), counted as e. Returns 0 or -ENOMEM. */
int api_reply_error(struct request *rq, enum api_result e, struct json_object *params);
/* An error reply with one string parameter {key: value}, value as its served
 * text (acct_json_text(): it may hold a path with bytes that are not UTF-8).
 * Returns 0 or -ENOMEM. */
int api_reply_error_string(struct request *rq, enum api_result e, const char *key, const char *value);
/* InvalidParameter {"parameter": name}. Returns 0 or -ENOMEM. */
int api_invalid_parameter(struct request *rq, const char *name);
/* NoSuchCgroup {"cgroup": path}. Returns 0 or -ENOMEM. */
int api_no_such_cgroup(struct request *rq, const char *path);
/* ResourceLimitExceeded naming the configuration key `limit` and its `value`. */
int api_resource_limit(struct request *rq, const char *limit, uint64_t value);

/* Replies written as text by the direct writers of ledger-json.c (Get and
 * List: no json-c objects, about ten times cheaper). Start with
 * api_text_begin(), append the parameters' members to the buffer it returns
 * (owned by the server, valid until api_text_reply()), finish with
 * api_text_reply(), which closes the document, counts and queues it (or drops
 * it for oneway). api_text_reply() returns 0 or -ENOMEM. */
struct acct_json_buf *api_text_begin(struct api_server *s);
int api_text_reply(struct request *rq, bool continues);

/* ---- parameters ---------------------------------------------------------------- */

enum { PARAM_ABSENT, PARAM_OK, PARAM_REPLIED };

/* The member `name` of params, or NULL. */
struct json_object *api_param(struct json_object *params, const char *name);

/* A cgroup path value `v` (of the parameter `name`), normalised into `out`
 * (CGROUP_PATH_MAX + 1 bytes). Returns PARAM_OK, PARAM_ABSENT (v absent or
 * null and not required), PARAM_REPLIED (an error has been sent: InvalidParameter
 * or InvalidCgroupPath), or -ENOMEM. */
int api_check_cgroup(struct request *rq, struct json_object *v, const char *name, bool required, char *out);

/* The same for a string value `s` of `len` bytes (valid UTF-8, no NUL):
 * PARAM_OK, PARAM_REPLIED (InvalidCgroupPath sent) or -ENOMEM. */
int api_check_cgroup_string(struct request *rq, const char *s, size_t len, char *out);

/* The same for the parameter `name` of params. */
static inline int api_param_cgroup(struct request *rq, struct json_object *params, const char *name, bool required,
				   char *out)
{
	return api_check_cgroup(rq, api_param(params, name), name, required, out);
}
