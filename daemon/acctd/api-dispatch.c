/* api-dispatch.c - the varlink API's dispatcher: one message in, the method
 * resolved against api_methods[], access and parameter names checked, the
 * method run and its outcome counted; and the reply and parameter helpers the
 * methods answer with (api-dispatch.h).
 *
 * Confinement. Cgroup paths from clients are normalised and checked
 * (path_normalize_cgroup(), lib/basic/path.h; a prefix matches whole
 * components, path_under()) and then only ever looked up in the ledger, never
 * on the file system: no path from a client is opened, stat()ed or resolved,
 * so neither ".." nor a symlink in the tree can reach anything the sampler
 * did not itself discover under the cgroup root. */
#include "admin-group.h"
#include "api-dispatch.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "api-server.h"
#include "basic/log.h"
#include "basic/name-escape.h"
#include "basic/path.h"
#include "basic/util.h"
#include "core/ledger.h"
#include "manager.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

const char *const api_result_names[_RES_MAX] = {
	[RES_OK] = "ok",
	[RES_INTERFACE_NOT_FOUND] = VARLINK_ERROR_INTERFACE_NOT_FOUND,
	[RES_METHOD_NOT_FOUND] = VARLINK_ERROR_METHOD_NOT_FOUND,
	[RES_INVALID_PARAMETER] = VARLINK_ERROR_INVALID_PARAMETER,
	[RES_PERMISSION_DENIED] = VARLINK_ERROR_PERMISSION_DENIED,
	[RES_EXPECTED_MORE] = VARLINK_ERROR_EXPECTED_MORE,
	[RES_NO_SUCH_CGROUP] = IFACE_ACCT ".NoSuchCgroup",
	[RES_INVALID_CGROUP_PATH] = IFACE_ACCT ".InvalidCgroupPath",
	[RES_NO_SUCH_QUANTITY] = IFACE_ACCT ".NoSuchQuantity",
	[RES_RELOAD_FAILED] = IFACE_ACCT ".ReloadFailed",
	[RES_RESOURCE_LIMIT_EXCEEDED] = IFACE_ACCT ".ResourceLimitExceeded",
	[RES_HISTORY_UNAVAILABLE] = IFACE_ACCT ".HistoryUnavailable",
	[RES_NO_SUCH_RESOURCE] = IFACE_ACCT ".NoSuchResource",
};

/* ---- replies ---------------------------------------------------------------- */

void api_count(struct request *rq, enum api_result r)
{
	if (rq->counted)
		return;
	rq->counted = true;
	rq->c->s->requests[rq->method][r]++;
}

/* Queue one message (taken). */
static int queue_message(struct conn *c, struct json_object *msg)
{
	_cleanup_json_ struct json_object *m = msg;
	const char *s;
	size_t n;
	int r;

	if (!m)
		return -ENOMEM;
	r = varlink_message_serialize(m, &s, &n);
	if (r >= 0 && evbuffer_add(c->out, s, n + 1) < 0) /* with its NUL */
		r = -ENOMEM;
	return r;
}

int api_reply(struct request *rq, struct json_object *params, bool continues)
{
	_cleanup_json_ struct json_object *p = params;

	api_count(rq, RES_OK);
	if (rq->flags & VARLINK_CALL_ONEWAY)
		return 0;
	return queue_message(rq->c, varlink_reply_new(TAKE_PTR(p), continues));
}

int api_reply_fd(struct request *rq, struct json_object *params, int fd)
{
	_cleanup_json_ struct json_object *p = params;
	_cleanup_close_ int owned = fd;
	struct conn *c = rq->c;
	int r;

	if (rq->flags & VARLINK_CALL_ONEWAY) {
		api_count(rq, RES_OK);
		return 0; /* nobody to send it to: closed */
	}
	/* The reply starts where the stream's queued bytes end. */
	r = reply_fds_push(&c->fds, TAKE_FD(owned), c->fds.sent + evbuffer_get_length(c->out));
	if (r < 0)
		return r;
	return api_reply(rq, TAKE_PTR(p), false);
}

int api_reply_error(struct request *rq, enum api_result e, struct json_object *params)
{
	_cleanup_json_ struct json_object *p = params;

	api_count(rq, e);
	if (rq->flags & VARLINK_CALL_ONEWAY)
		return 0;
	return queue_message(rq->c, varlink_error_new(api_result_names[e], TAKE_PTR(p)));
}

/* Add `v` (taken) to `o` as `key`. -ENOMEM when v is NULL (its allocation
 * failed) or the addition fails: a reply never carries a null where the
 * interface promises a string. */
int api_json_add(struct json_object *o, const char *key, struct json_object *v)
{
	if (!v)
		return -ENOMEM;
	if (json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

int api_reply_error_string(struct request *rq, enum api_result e, const char *key, const char *value)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();
	if (!p || api_json_add(p, key, acct_json_text(value)) < 0) /* may quote a name or a file */
		return -ENOMEM;
	return api_reply_error(rq, e, TAKE_PTR(p));
}

int api_invalid_parameter(struct request *rq, const char *name)
{
	return api_reply_error_string(rq, RES_INVALID_PARAMETER, "parameter", name);
}

int api_no_such_cgroup(struct request *rq, const char *path)
{
	return api_reply_error_string(rq, RES_NO_SUCH_CGROUP, "cgroup", path);
}

int api_resource_limit(struct request *rq, const char *limit, uint64_t value)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();
	/* every member checked: json-c aborts on a NULL one */
	if (!p || api_json_add(p, "limit", json_object_new_string(limit)) < 0 ||
	    api_json_add(p, "value", json_object_new_int64(value > INT64_MAX ? INT64_MAX : (int64_t)value)) < 0)
		return -ENOMEM;
	return api_reply_error(rq, RES_RESOURCE_LIMIT_EXCEEDED, TAKE_PTR(p));
}

struct acct_json_buf *api_text_begin(struct api_server *s)
{
	s->text.len = 0;
	s->text.failed = false;
	acct_json_buf_append(&s->text, "{\"parameters\":{", 15);
	return &s->text;
}

int api_text_reply(struct request *rq, bool continues)
{
	struct api_server *s = rq->c->s;
	int r = 0;

	if (continues)
		acct_json_buf_append(&s->text, "},\"continues\":true}", 19);
	else
		acct_json_buf_append(&s->text, "}}", 2);
	if (s->text.failed)
		r = -ENOMEM;
	else {
		api_count(rq, RES_OK);
		if (!(rq->flags & VARLINK_CALL_ONEWAY) && evbuffer_add(rq->c->out, s->text.data, s->text.len + 1) < 0)
			r = -ENOMEM;
	}
	/* Do not keep the memory of one huge List for good. */
	if (s->text.alloc > (1u << 20))
		acct_json_buf_free(&s->text);
	return r;
}

/* ---- parameters ------------------------------------------------------------------ */

/* A client's path is the served text of a name (name-escape.h): a name with
 * bytes that are not UTF-8 is sent back with \xHH in their place. So when the
 * normalised path names no cgroup as it is but does with those escapes
 * undone, `path` becomes the name (the literal one wins when both exist). A
 * prefix (List, Watch) is resolved the same way when it names a cgroup. */
static void cgroup_path_resolve(struct manager *m, char path[static CGROUP_PATH_MAX + 1])
{
	struct acct_ledger *l = manager_ledger(m);
	char raw[CGROUP_PATH_MAX + 1];

	rcu_read_lock();
	bool unescaped = !acct_ledger_find(l, path) && name_unescape(path, raw) && acct_ledger_find(l, raw);
	rcu_read_unlock();
	if (unescaped)
		strcpy(path, raw); /* unescaping only shortens */
}

int api_check_cgroup(struct request *rq, struct json_object *v, const char *name, bool required, char *out)
{
	if (!v || json_object_is_type(v, json_type_null)) {
		if (!required)
			return PARAM_ABSENT;
		int r = api_invalid_parameter(rq, name);
		return r < 0 ? r : PARAM_REPLIED;
	}
	if (!json_object_is_type(v, json_type_string)) {
		int r = api_invalid_parameter(rq, name);
		return r < 0 ? r : PARAM_REPLIED;
	}
	return api_check_cgroup_string(rq, json_object_get_string(v), (size_t)json_object_get_string_len(v), out);
}

int api_check_cgroup_string(struct request *rq, const char *s, size_t len, char *out)
{
	const char *why = path_normalize_cgroup(s, len, out);
	if (why) {
		/* The path as given, but only as much of it as is useful, cut
		 * between characters (the message was valid UTF-8 and stays so). */
		len = utf8_boundary(s, len, 256);
		_cleanup_json_ struct json_object *p = json_object_new_object();
		if (!p || api_json_add(p, "cgroup", json_object_new_string_len(s, (int)len)) < 0 ||
		    api_json_add(p, "reason", json_object_new_string(why)) < 0)
			return -ENOMEM;
		int r = api_reply_error(rq, RES_INVALID_CGROUP_PATH, TAKE_PTR(p));
		return r < 0 ? r : PARAM_REPLIED;
	}
	cgroup_path_resolve(rq->c->s->m, out);
	return PARAM_OK;
}

struct json_object *api_param(struct json_object *params, const char *name)
{
	struct json_object *v = NULL;
	(void)json_object_object_get_ex(params, name, &v);
	return v;
}

/* ---- access ------------------------------------------------------------------- */

static bool gid_in(gid_t gid, const gid_t *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == gid)
			return true;
	return false;
}

/* Root, or a member of [api] admin_group. The groups are the peer's own at
 * connect() time, from SO_PEERGROUPS (Linux 4.13): the kernel's record, with
 * no race against the client exiting and its PID being reused, which reading
 * /proc/PID/status would have. Only where the kernel lacks it do we fall back
 * to the group database (getgrouplist() of the peer's user), which may differ
 * from the process's actual groups (for example after setgroups()). */
bool api_is_admin(struct conn *c)
{
	char buf[4096];
	gid_t admin;

	if (c->cred.uid == 0)
		return true;
	if (!admin_group_get(manager_admin_group(c->s->m), &admin)) /* resolved at start and reload, not here */
		return false;
	if (c->cred.gid == admin)
		return true;

	gid_t groups[NGROUPS_MAX];
	socklen_t len = sizeof(groups);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		return gid_in(admin, groups, len / sizeof(gid_t));
	if (errno != ENOPROTOOPT)
		return false;
	struct passwd pw, *pwp = NULL;
	if (getpwuid_r(c->cred.uid, &pw, buf, sizeof(buf), &pwp) != 0 || !pwp)
		return false;
	int n = (int)ELEMENTSOF(groups);
	if (getgrouplist(pwp->pw_name, c->cred.gid, groups, &n) < 0)
		return false;
	return gid_in(admin, groups, (size_t)n);
}

/* ---- dispatch ------------------------------------------------------------------- */

static void varlink_call_clearp(struct varlink_call *call)
{
	varlink_call_clear(call);
}

static bool known_interface(const struct varlink_call *call)
{
	return (call->interface_len == strlen(IFACE_ACCT) && strncmp(call->method, IFACE_ACCT, call->interface_len) == 0) ||
	       (call->interface_len == strlen(VARLINK_INTERFACE_SERVICE) &&
		strncmp(call->method, VARLINK_INTERFACE_SERVICE, call->interface_len) == 0);
}

/* Rename the deprecated parameters of a call to `method` in place. Returns 0;
 * 1 and in *ret_old the old name of a parameter that was given under both
 * names; or -ENOMEM (not a fault of the call's). */
static int rename_deprecated(const struct api_server *s, enum api_method_id method, struct json_object *params,
			     const char **ret_old)
{
	static bool logged[16]; /* per api_deprecated_params[] entry; event loop thread only */

	if (!params)
		return 0;
	for (size_t i = 0; s->deprecated_params[i].old; i++) {
		const struct api_param_alias *a = &s->deprecated_params[i];
		struct json_object *v;
		if (a->method != method || !json_object_object_get_ex(params, a->old, &v))
			continue;
		const char *name = s->methods[method].params[a->index];
		if (json_object_object_get_ex(params, name, NULL)) {
			*ret_old = a->old;
			return 1;
		}
		if (i < ELEMENTSOF(logged) && !logged[i]) {
			logged[i] = true;
			log_notice("%s: parameter %s is deprecated, use %s (the old name is accepted until the next release)",
				   s->methods[method].name, a->old, name);
		}
		if (json_object_object_add(params, name, json_object_get(v)) < 0) {
			json_object_put(v); /* the reference the addition did not take */
			return -ENOMEM;
		}
		json_object_object_del(params, a->old);
	}
	return 0;
}

int api_dispatch(struct conn *c, struct json_object *msg)
{
	_cleanup_(varlink_call_clearp) struct varlink_call call = { 0 };
	struct request rq = { .c = c, .method = M_UNKNOWN };
	const char *field = NULL;
	int r;

	r = varlink_call_parse(msg, &call, &field);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return api_invalid_parameter(&rq, field && *field ? field : "message");
	rq.flags = call.flags;

	if (!known_interface(&call)) {
		char iface[256];
		snprintf(iface, sizeof(iface), "%.*s", (int)call.interface_len, call.method);
		return api_reply_error_string(&rq, RES_INTERFACE_NOT_FOUND, "interface", iface);
	}
	const struct api_method *mt = NULL;
	for (int i = 0; i < M_UNKNOWN; i++)
		if (strcmp(c->s->methods[i].name, call.method) == 0) {
			mt = &c->s->methods[i];
			rq.method = (enum api_method_id)i;
			break;
		}
	if (!mt)
		return api_reply_error_string(&rq, RES_METHOD_NOT_FOUND, "method", call.method);
	/* No method of ours hands the connection over to another protocol. */
	if (call.flags & VARLINK_CALL_UPGRADE)
		return api_invalid_parameter(&rq, "upgrade");
	if (mt->needs_more && (!(call.flags & VARLINK_CALL_MORE) || (call.flags & VARLINK_CALL_ONEWAY)))
		return api_reply_error(&rq, RES_EXPECTED_MORE, NULL);
	if (mt->admin && !api_is_admin(c)) {
		log_debug("Refused %s to uid %u (pid %d)", call.method, (unsigned)c->cred.uid, (int)c->cred.pid);
		return api_reply_error(&rq, RES_PERMISSION_DENIED, NULL);
	}
	const char *both = NULL;
	r = rename_deprecated(c->s, rq.method, call.parameters, &both);
	if (r < 0)
		return r;
	if (r > 0)
		return api_invalid_parameter(&rq, both);
	const char *unknown = varlink_param_unknown(call.parameters, mt->params);
	if (unknown)
		return api_invalid_parameter(&rq, unknown);
	r = mt->fn(&rq, call.parameters);
	if (r == 1) {
		c->busy = true;
		r = 0;
	}
	return r;
}
