/* api-charges.c - the varlink methods Charge and ChargeBatch (docs/charges.md):
 * whom a charge goes to and who may say so (for OpenChargeSlot too,
 * api-slots.c), all-or-nothing batches, and each connection's net charge of
 * the resources released when a client exits (its slots' folds come through
 * api_charges_apply_slot()).
 *
 * Whom. Without a cgroup, the caller's own: the cgroup that /proc/PID/cgroup
 * of its peer PID (SO_PEERCRED, at connect()) names now, in the first of the
 * memory, unified and cpuacct hierarchies that acctd tracks it in (the paths
 * acctd names cgroups by are relative to the hierarchy roots). A cgroup named
 * by a caller that is not root or in [api] admin_group must be its own or
 * below it; root and the admin group may name any. Only cgroups acctd tracks
 * (alive, in the ledger) can be charged: the path is looked up, never opened.
 *
 * A client's exit is the close of its connection: a connection keeps, per
 * (resource, cgroup) of the resources with release_on_exit, the sum of what
 * it charged, and its close charges the negation. A cgroup removed meanwhile
 * took the charges with it by its resource's rule (released, or to the
 * parent, where they stay). */
#include "api-charges.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-dispatch.h"
#include "api-server.h"
#include "basic/hash.h"
#include "basic/log.h"
#include "basic/path.h"
#include "basic/ptr-table.h"
#include "basic/read-file.h"
#include "basic/util.h"
#include "varlink/json-scan.h"
#include "charges-store.h"
#include "config/config.h"
#include "core/charges.h"
#include "core/ledger.h"
#include "manager.h"

enum { CHARGE_RESOURCE, CHARGE_DELTA, CHARGE_CGROUP, CHARGE_SYNC, _CHARGE_MAX };
const char *const api_charge_params[_CHARGE_MAX + 1] = {
	[CHARGE_RESOURCE] = "resource",
	[CHARGE_DELTA] = "delta",
	[CHARGE_CGROUP] = "cgroup",
	[CHARGE_SYNC] = "sync",
};

enum { BATCH_CHARGES, _BATCH_MAX };
const char *const api_charge_batch_params[_BATCH_MAX + 1] = {
	[BATCH_CHARGES] = "charges",
};

/* The members of one ChargeBatch entry. */
static const char *const entry_params[] = { "resource", "delta", "cgroup", NULL };

/* ---- a connection's net charges ------------------------------------------ */

struct net_charge {
	size_t res;
	uint64_t serial; /* the engine's entry charged (charges.h) */
	int64_t net;
	char path[]; /* normalised */
};

struct api_conn_charges {
	struct ptr_table nets;
};

struct net_key {
	size_t res;
	const char *path;
};

static uint64_t net_hash(size_t res, const char *path)
{
	return hash_mix64(hash_fnv1a_u64(hash_fnv1a_string(path), res));
}

static bool net_eq(const void *p, const void *k)
{
	const struct net_charge *n = p;
	const struct net_key *key = k;

	return n->res == key->res && strcmp(n->path, key->path) == 0;
}

/* Add delta to the connection's net of (res, path). A cgroup recreated under
 * the path since (another serial) starts a new net. Returns 0 or -ENOMEM. */
static int net_add(struct conn *c, size_t res, const char *path, uint64_t serial, int64_t delta)
{
	struct net_key k = { res, path };
	uint64_t h = net_hash(res, path);
	struct net_charge *n;

	if (!c->charges) {
		c->charges = calloc(1, sizeof(*c->charges));
		if (!c->charges)
			return -ENOMEM;
	}
	n = ptr_table_find(&c->charges->nets, h, net_eq, &k);
	if (n) {
		if (n->serial != serial) {
			n->serial = serial;
			n->net = 0;
		}
		n->net += delta; /* within range: the engine's values are at most 2^62 */
		return 0;
	}
	n = malloc(sizeof(*n) + strlen(path) + 1);
	if (!n)
		return -ENOMEM;
	*n = (struct net_charge){ .res = res, .serial = serial, .net = delta };
	strcpy(n->path, path);
	if (ptr_table_insert(&c->charges->nets, h, n) < 0) {
		free(n);
		return -ENOMEM;
	}
	return 0;
}

void api_charges_conn_release(struct conn *c)
{
	struct acct_charges *ch = manager_charges(c->s->m);
	size_t released = 0;

	if (!c->charges)
		return;
	for (size_t i = 0; i < ptr_table_capacity(&c->charges->nets); i++) {
		struct net_charge *n = ptr_table_at(&c->charges->nets, i);

		if (!n || n->net == 0)
			continue;
		/* -ESTALE: removed since, its charges went by the removal rule. */
		int r = acct_charges_add_serial(ch, n->res, n->path, -n->net, n->serial, NULL);
		if (r == 0)
			released++;
		else if (r != -ESTALE)
			log_warning_errno(r, "Failed to release the charges of a closed connection to %s, ignoring: %m",
					  n->path);
	}
	if (released > 0)
		log_debug("Released the net charges of pid %d to %zu cgroups", (int)c->cred.pid, released);
	ptr_table_clear(&c->charges->nets, free);
	free(c->charges);
	c->charges = NULL;
}

/* ---- whom a charge goes to ------------------------------------------------ */

bool api_cgroup_tracked(struct manager *m, const char *path)
{
	rcu_read_lock();
	struct acct_cgroup *cg = acct_ledger_find(manager_ledger(m), path);
	bool alive = cg && !acct_cgroup_is_dead(cg);
	rcu_read_unlock();
	return alive;
}

/* The caller's own cgroup as acctd names it (see the top of the file) into
 * `out`. Returns 0; -ENOENT with `out` the first path found when acctd
 * tracks none of them; -ESRCH when the peer has no PID or its cgroups
 * cannot be read (it exited). */
static int caller_cgroup(struct conn *c, char out[static CGROUP_PATH_MAX + 1])
{
	char file[64], buf[16384];
	/* memory, unified, cpuacct: the first tracked wins */
	char cand[3][CGROUP_PATH_MAX + 1] = { "", "", "" };

	if (c->cred.pid <= 0)
		return -ESRCH;
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)c->cred.pid);
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -ESRCH;
	ssize_t n = read_fd_whole(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* ID:CONTROLLERS:PATH; the path may hold ':' */
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1, *p = c2 + 1;
		int slot = -1;
		if (strcmp(line, "0") == 0 && !*ctrls)
			slot = 1;
		else
			for (char *tok = (char *)ctrls, *save = NULL; (tok = strtok_r(tok, ",", &save)); tok = NULL) {
				if (strcmp(tok, "memory") == 0)
					slot = 0;
				else if (strcmp(tok, "cpuacct") == 0 && slot < 0)
					slot = 2;
			}
		if (slot < 0 || cand[slot][0])
			continue;
		/* " (deleted)" and other oddities fail normalisation: skipped */
		if (path_normalize_cgroup(p, strlen(p), cand[slot]))
			cand[slot][0] = '\0';
	}
	for (size_t i = 0; i < ELEMENTSOF(cand); i++)
		if (cand[i][0] && api_cgroup_tracked(c->s->m, cand[i])) {
			strcpy(out, cand[i]);
			return 0;
		}
	for (size_t i = 0; i < ELEMENTSOF(cand); i++)
		if (cand[i][0]) {
			strcpy(out, cand[i]);
			return -ENOENT;
		}
	return -ESRCH;
}

/* What a call resolved once: the caller's own cgroup (for permission and
 * the default) and whether it administers. */
struct caller {
	bool admin;
	int own_r; /* caller_cgroup()'s result, 1 until asked */
	char own[CGROUP_PATH_MAX + 1];
};

static int caller_own(struct conn *c, struct caller *who)
{
	if (who->own_r == 1)
		who->own_r = caller_cgroup(c, who->own);
	return who->own_r;
}

static int charge_target_checked(struct request *rq, struct caller *who, bool absent, const char *name,
				 char path[static CGROUP_PATH_MAX + 1]);

/* Resolve the cgroup of one charge into `path`: `v` the parameter (NULL:
 * the caller's own), `name` its name in errors. Returns PARAM_OK,
 * PARAM_REPLIED (an error sent) or -ENOMEM. */
static int charge_target(struct request *rq, struct caller *who, struct json_object *v, const char *name,
			 char path[static CGROUP_PATH_MAX + 1])
{
	int r = api_check_cgroup(rq, v, name, false, path);
	if (r < 0 || r == PARAM_REPLIED)
		return r;
	return charge_target_checked(rq, who, r == PARAM_ABSENT, name, path);
}

/* charge_target() after the path was checked into `path` (or found absent):
 * the default, whether acctd tracks it, and the permission. */
static int charge_target_checked(struct request *rq, struct caller *who, bool absent, const char *name,
				 char path[static CGROUP_PATH_MAX + 1])
{
	struct manager *m = rq->c->s->m;
	int r;

	if (absent) {
		r = caller_own(rq->c, who);
		if (r == -ENOENT) {
			r = api_no_such_cgroup(rq, who->own);
			return r < 0 ? r : PARAM_REPLIED;
		}
		if (r < 0) {
			/* No PID (the page's calls) or it exited: nobody to charge. */
			r = api_reply_error_string(rq, RES_INVALID_PARAMETER, "parameter", name);
			return r < 0 ? r : PARAM_REPLIED;
		}
		strcpy(path, who->own);
		return PARAM_OK;
	}
	if (!api_cgroup_tracked(m, path)) {
		r = api_no_such_cgroup(rq, path);
		return r < 0 ? r : PARAM_REPLIED;
	}
	if (!who->admin && (caller_own(rq->c, who) < 0 || !path_under(path, who->own, strlen(who->own)))) {
		log_debug("Refused a charge to %s to uid %u (pid %d)", path, (unsigned)rq->c->cred.uid,
			  (int)rq->c->cred.pid);
		r = api_reply_error(rq, RES_PERMISSION_DENIED, NULL);
		return r < 0 ? r : PARAM_REPLIED;
	}
	return PARAM_OK;
}

int api_charge_target(struct request *rq, struct json_object *v, const char *name,
		      char path[static CGROUP_PATH_MAX + 1])
{
	struct caller who = { .admin = api_is_admin(rq->c), .own_r = 1 };
	return charge_target(rq, &who, v, name, path);
}

static int no_such_resource(struct request *rq, const char *name)
{
	return api_reply_error_string(rq, RES_NO_SUCH_RESOURCE, "resource", name);
}

static int out_of_range(struct request *rq, const char *name)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();
	if (!p || api_json_add(p, "parameter", json_object_new_string(name)) < 0 ||
	    api_json_add(p, "reason", json_object_new_string("a charged value would leave -2^62..2^62")) < 0)
		return -ENOMEM;
	return api_reply_error(rq, RES_INVALID_PARAMETER, TAKE_PTR(p));
}

/* Apply one validated charge and keep the connection's net. Returns 0,
 * -ERANGE (nothing charged) or -ENOMEM. */
static int apply(struct conn *c, size_t res, const char *path, int64_t delta)
{
	struct acct_charges *ch = manager_charges(c->s->m);
	uint64_t serial = 0;
	int r;

	r = acct_charges_add_serial(ch, res, path, delta, 0, &serial);
	if (r < 0)
		return r;
	if (acct_charges_resource(ch, res)->release_on_exit) {
		r = net_add(c, res, path, serial, delta);
		if (r < 0) {
			/* Without its net the charge could not be released: undo. */
			(void)acct_charges_add(ch, res, path, -delta);
			return r;
		}
	}
	return 0;
}

int api_charges_apply_slot(struct conn *c, size_t res, const char *path, int64_t delta, uint64_t serial)
{
	struct acct_charges *ch = manager_charges(c->s->m);
	int r;

	r = acct_charges_add_serial(ch, res, path, delta, serial, NULL);
	if (r < 0)
		return r;
	if (acct_charges_resource(ch, res)->release_on_exit) {
		r = net_add(c, res, path, serial, delta);
		if (r < 0) {
			(void)acct_charges_add_serial(ch, res, path, -delta, serial, NULL);
			return r;
		}
	}
	return 0;
}

/* ---- the methods ------------------------------------------------------------ */

/* A sync: true charge that could not be made durable is taken back (the
 * caller is told it failed, so it must not stay) and refused. */
static int sync_failed(struct request *rq, size_t res, const char *path, int64_t delta, int error)
{
	char reason[160];

	(void)apply(rq->c, res, path, -delta);
	if (error == -EOPNOTSUPP)
		snprintf(reason, sizeof(reason), "charges are not durable: acctd has no state directory");
	else
		snprintf(reason, sizeof(reason), "the charge could not be made durable: %s", strerror(-error));
	_cleanup_json_ struct json_object *p = json_object_new_object();
	if (!p || api_json_add(p, "parameter", json_object_new_string("sync")) < 0 ||
	    api_json_add(p, "reason", json_object_new_string(reason)) < 0)
		return -ENOMEM;
	return api_reply_error(rq, RES_INVALID_PARAMETER, TAKE_PTR(p));
}

int api_method_charge(struct request *rq, struct json_object *params)
{
	struct acct_charges *ch = manager_charges(rq->c->s->m);
	struct caller who = { .admin = api_is_admin(rq->c), .own_r = 1 };
	char path[CGROUP_PATH_MAX + 1];
	const char *name = NULL;
	int64_t delta = 0;
	bool sync = false;
	int r;

	if (varlink_param_string(params, api_charge_params[CHARGE_RESOURCE], &name) <= 0)
		return api_invalid_parameter(rq, api_charge_params[CHARGE_RESOURCE]);
	int res = acct_charges_resource_index(ch, name);
	if (res < 0)
		return no_such_resource(rq, name);
	if (varlink_param_int64(params, api_charge_params[CHARGE_DELTA], &delta) <= 0)
		return api_invalid_parameter(rq, api_charge_params[CHARGE_DELTA]);
	if (varlink_param_bool(params, api_charge_params[CHARGE_SYNC], &sync) < 0)
		return api_invalid_parameter(rq, api_charge_params[CHARGE_SYNC]);
	r = charge_target(rq, &who, api_param(params, api_charge_params[CHARGE_CGROUP]),
			  api_charge_params[CHARGE_CGROUP], path);
	if (r < 0 || r == PARAM_REPLIED)
		return r;
	r = apply(rq->c, (size_t)res, path, delta);
	if (r == -ERANGE)
		return out_of_range(rq, api_charge_params[CHARGE_DELTA]);
	if (r < 0)
		return r;
	if (sync) {
		/* Durable before the reply: the state file is written now, on the
		 * event loop (docs/charges.md, "Durability", for its cost). */
		r = charges_store_sync(rq->c->s->m->charges_store, rq->c->s->m);
		if (r < 0)
			return sync_failed(rq, (size_t)res, path, delta, r);
	}
	return api_reply(rq, NULL, false);
}

/* One validated entry. Its path is an offset into the batch's arena of
 * paths, not a CGROUP_PATH_MAX buffer of its own: a batch of 1024 entries
 * would touch 4 MiB, a page fault per entry, which cost more than everything
 * else ChargeBatch does (docs/performance.md, "ChargeBatch"). */
struct batch_item {
	size_t res;
	int64_t delta;
	size_t path; /* offset in the arena */
};

/* Keep `path` in the arena (*a, *len, *cap) for entry i, sharing the
 * previous entry's copy when it is the same cgroup (the common batch).
 * Returns 0 or -ENOMEM. */
static int arena_keep(char **a, size_t *len, size_t *cap, struct batch_item *items, size_t i, const char *path)
{
	size_t n = strlen(path) + 1;

	if (i > 0 && strcmp(*a + items[i - 1].path, path) == 0) {
		items[i].path = items[i - 1].path;
		return 0;
	}
	if (*len + n > *cap) {
		size_t c = MAX(*cap * 2, *len + n + 256);
		char *b = realloc(*a, c);
		if (!b)
			return -ENOMEM;
		*a = b;
		*cap = c;
	}
	memcpy(*a + *len, path, n);
	items[i].path = *len;
	*len += n;
	return 0;
}

int api_method_charge_batch(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	struct acct_charges *ch = manager_charges(m);
	struct caller who = { .admin = api_is_admin(rq->c), .own_r = 1 };
	struct json_object *arr = NULL;
	char name[48];
	size_t n;
	int r;

	if (varlink_param_array(params, api_charge_batch_params[BATCH_CHARGES], &arr) <= 0)
		return api_invalid_parameter(rq, api_charge_batch_params[BATCH_CHARGES]);
	n = json_object_array_length(arr);
	unsigned max = manager_config(m)->max_charge_batch;
	if (n > max)
		/* Refused whole, before anything is charged. */
		return api_resource_limit(rq, "max_charge_batch", max);

	/* Validate every entry first: a batch is charged whole or not at all. */
	_cleanup_free_ struct batch_item *items = calloc(n ?: 1, sizeof(*items));
	_cleanup_free_ char *paths = NULL;
	size_t paths_len = 0, paths_cap = 0;
	char path[CGROUP_PATH_MAX + 1];
	if (!items)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		const char *rname = NULL, *unknown;

		if (!json_object_is_type(e, json_type_object)) {
			snprintf(name, sizeof(name), "charges[%zu]", i);
			return api_invalid_parameter(rq, name);
		}
		if ((unknown = varlink_param_unknown(e, entry_params))) {
			snprintf(name, sizeof(name), "charges[%zu].%.16s", i, unknown);
			return api_invalid_parameter(rq, name);
		}
		if (varlink_param_string(e, "resource", &rname) <= 0) {
			snprintf(name, sizeof(name), "charges[%zu].resource", i);
			return api_invalid_parameter(rq, name);
		}
		int res = acct_charges_resource_index(ch, rname);
		if (res < 0)
			return no_such_resource(rq, rname);
		items[i].res = (size_t)res;
		if (varlink_param_int64(e, "delta", &items[i].delta) <= 0) {
			snprintf(name, sizeof(name), "charges[%zu].delta", i);
			return api_invalid_parameter(rq, name);
		}
		snprintf(name, sizeof(name), "charges[%zu].cgroup", i);
		r = charge_target(rq, &who, api_param(e, "cgroup"), name, path);
		if (r < 0 || r == PARAM_REPLIED)
			return r;
		if (arena_keep(&paths, &paths_len, &paths_cap, items, i, path) < 0)
			return -ENOMEM;
		if (acct_charges_check(ch, items[i].res, path, items[i].delta) < 0) {
			snprintf(name, sizeof(name), "charges[%zu].delta", i);
			return out_of_range(rq, name);
		}
	}
	/* Apply. Entries that checked alone may together leave the range: then
	 * what was applied is undone, and the batch refused as a whole. */
	for (size_t i = 0; i < n; i++) {
		r = apply(rq->c, items[i].res, paths + items[i].path, items[i].delta);
		if (r < 0) {
			for (size_t j = i; j-- > 0;)
				(void)apply(rq->c, items[j].res, paths + items[j].path, -items[j].delta);
			if (r != -ERANGE)
				return r;
			snprintf(name, sizeof(name), "charges[%zu].delta", i);
			return out_of_range(rq, name);
		}
	}
	_cleanup_json_ struct json_object *p = json_object_new_object();
	if (!p || api_json_add(p, "applied", json_object_new_int64((int64_t)n)) < 0)
		return -ENOMEM;
	return api_reply(rq, TAKE_PTR(p), false);
}

/* ---- ChargeBatch without json-c --------------------------------------------- */

#define CHARGE_BATCH_METHOD "io.acctd.Accounting.ChargeBatch"

bool api_charge_batch_exempt(const char *msg, size_t size, void *userdata)
{
	static const char head[] = "\"method\"";
	const char *p = msg, *end = msg + size;

	(void)userdata;
	/* {"method":"io.acctd.Accounting.ChargeBatch", white space allowed */
#define SKIP_WS()                                                                                       \
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))                         \
		p++
	SKIP_WS();
	if (p == end || *p++ != '{')
		return false;
	SKIP_WS();
	if ((size_t)(end - p) < sizeof(head) - 1 || memcmp(p, head, sizeof(head) - 1) != 0)
		return false;
	p += sizeof(head) - 1;
	SKIP_WS();
	if (p == end || *p++ != ':')
		return false;
	SKIP_WS();
#undef SKIP_WS
	size_t n = strlen("\"" CHARGE_BATCH_METHOD "\"");
	return (size_t)(end - p) >= n && memcmp(p, "\"" CHARGE_BATCH_METHOD "\"", n) == 0;
}

/* One entry as read: its resource (-1: unknown, `name` its name in the
 * arena), its delta, its cgroup as given (an offset in the arena; SIZE_MAX:
 * absent), and then its normalised path (an offset in the paths' arena). */
struct raw_item {
	int res;
	int64_t delta;
	size_t name;
	size_t raw;
	size_t raw_len;
	size_t path;
};

/* Append s[0..len) and a NUL to the arena; its offset in *ret. */
static int raw_keep(char **a, size_t *len, size_t *cap, const char *s, size_t n, size_t *ret)
{
	if (*len + n + 1 > *cap) {
		size_t c = MAX(*cap * 2, *len + n + 1 + 256);
		char *b = realloc(*a, c);
		if (!b)
			return -ENOMEM;
		*a = b;
		*cap = c;
	}
	memcpy(*a + *len, s, n);
	(*a)[*len + n] = '\0';
	*ret = *len;
	*len += n + 1;
	return 0;
}

#define KEY_IS(key, len, lit) ((len) == sizeof(lit) - 1 && memcmp((key), (lit), sizeof(lit) - 1) == 0)

/* Read a ChargeBatch call's text: 1 when it has exactly the common shape
 * (method, then parameters with only charges, entries with only resource,
 * delta and cgroup each at most once, the right types), with the entries
 * in *items (at most `max` kept; *ret_n counts them all); 0 when it has
 * not (json-c's path reads it then, with its errors); -ENOMEM. */
static int batch_read(struct acct_charges *ch, const char *text, size_t size, unsigned max, struct raw_item **items,
		      size_t *ret_n, char **arena, size_t *alen, size_t *acap)
{
	struct json_scan s;
	const char *key, *str;
	char last_res[64]; /* the name of the resource last looked up, found */
	size_t klen, slen, n = 0, cap = 0, last_res_len = SIZE_MAX;
	bool method = false, params = false;
	int r;

	json_scan_init(&s, text, size);
	r = json_scan_enter(&s, JSON_SCAN_OBJECT);
	while (r >= 0 && (r = json_scan_member(&s, &key, &klen)) > 0) {
		if (strcmp(key, "method") == 0 && !method) {
			method = true;
			r = json_scan_string(&s, &str, &slen);
			if (r >= 0 && strcmp(str, CHARGE_BATCH_METHOD) != 0)
				r = -EBADMSG;
			continue;
		}
		if (strcmp(key, "parameters") != 0 || params) {
			r = -EBADMSG;
			break;
		}
		params = true;
		bool charges = false;
		r = json_scan_enter(&s, JSON_SCAN_OBJECT);
		while (r >= 0 && (r = json_scan_member(&s, &key, &klen)) > 0) {
			if (strcmp(key, "charges") != 0 || charges) {
				r = -EBADMSG;
				break;
			}
			charges = true;
			r = json_scan_enter(&s, JSON_SCAN_ARRAY);
			while (r >= 0 && (r = json_scan_element(&s)) > 0) {
				struct raw_item e = { .res = -1, .raw = SIZE_MAX };
				bool has_res = false, has_delta = false, has_cg = false;

				r = json_scan_enter(&s, JSON_SCAN_OBJECT);
				while (r >= 0 && (r = json_scan_member(&s, &key, &klen)) > 0) {
					/* Keys by length first: this runs per entry. */
					if (KEY_IS(key, klen, "resource") && !has_res) {
						has_res = true;
						r = json_scan_string(&s, &str, &slen);
						if (r >= 0 && n < max) {
							/* The previous entry's resource when the same name. */
							if (n > 0 && (*items)[n - 1].res >= 0 && slen == last_res_len &&
							    memcmp(str, last_res, slen) == 0)
								e.res = (*items)[n - 1].res;
							else {
								e.res = acct_charges_resource_index(ch, str);
								if (e.res >= 0 && slen < sizeof(last_res)) {
									memcpy(last_res, str, slen);
									last_res_len = slen;
								} else
									last_res_len = SIZE_MAX;
							}
							if (e.res < 0 && raw_keep(arena, alen, acap, str, slen, &e.name) < 0)
								return -ENOMEM;
						}
					} else if (KEY_IS(key, klen, "delta") && !has_delta) {
						has_delta = true;
						r = json_scan_int64(&s, &e.delta);
					} else if (KEY_IS(key, klen, "cgroup") && !has_cg) {
						has_cg = true;
						r = json_scan_null(&s);
						if (r == 0) {
							r = json_scan_string(&s, &str, &slen);
							if (r >= 0 && n < max) {
								/* The previous entry's copy when the same. */
								if (n > 0 && (*items)[n - 1].raw != SIZE_MAX &&
								    (*items)[n - 1].raw_len == slen &&
								    memcmp(*arena + (*items)[n - 1].raw, str, slen) == 0)
									e.raw = (*items)[n - 1].raw;
								else if (raw_keep(arena, alen, acap, str, slen, &e.raw) < 0)
									return -ENOMEM;
								e.raw_len = slen;
							}
						}
					} else
						r = -EBADMSG;
				}
				if (r >= 0 && (!has_res || !has_delta))
					r = -EBADMSG;
				if (r < 0)
					break;
				r = 1;
				if (n < max) {
					if (n == cap) {
						size_t c = MAX(cap * 2, (size_t)64);
						struct raw_item *b = realloc(*items, c * sizeof(*b));
						if (!b)
							return -ENOMEM;
						*items = b;
						cap = c;
					}
					(*items)[n] = e;
				}
				n++;
			}
		}
		if (r >= 0 && !charges)
			r = -EBADMSG;
	}
	if (r >= 0 && (!method || !params))
		r = -EBADMSG;
	if (r >= 0)
		r = json_scan_finish(&s);
	json_scan_done(&s);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0;
	*ret_n = n;
	return 1;
}

int api_charge_batch_text(struct conn *c, const char *text, size_t size)
{
	struct manager *m = c->s->m;
	struct acct_charges *ch = manager_charges(m);
	const struct api_method *mt = &c->s->methods[M_CHARGE_BATCH];
	struct request rq = { .c = c, .method = M_CHARGE_BATCH };
	struct caller who = { .own_r = 1 };
	_cleanup_free_ struct raw_item *items = NULL;
	_cleanup_free_ char *raw = NULL, *paths = NULL;
	size_t n = 0, raw_len = 0, raw_cap = 0, paths_len = 0, paths_cap = 0;
	char name[48], path[CGROUP_PATH_MAX + 1];
	unsigned max = manager_config(m)->max_charge_batch;
	int r;

	/* The cheap test first: most calls are not ChargeBatch. */
	if (size < 40 || !api_charge_batch_exempt(text, size, NULL))
		return 0;
	if (mt->fn != api_method_charge_batch || mt->admin || mt->needs_more)
		return 0;
	r = batch_read(ch, text, size, max, &items, &n, &raw, &raw_len, &raw_cap);
	if (r <= 0)
		return r;
	who.admin = api_is_admin(c);
	if (n > max)
		/* Refused whole, before anything is charged (as api_method_charge_batch()). */
		return (r = api_resource_limit(&rq, "max_charge_batch", max)) < 0 ? r : 1;

	/* Validate every entry in order, with api_method_charge_batch()'s
	 * errors; a cgroup given as the previous entry's is the same path,
	 * checked once. */
	for (size_t i = 0; i < n; i++) {
		struct raw_item *e = &items[i];

		if (e->res < 0)
			return (r = no_such_resource(&rq, raw + e->name)) < 0 ? r : 1;
		if (i > 0 && e->raw == items[i - 1].raw)
			e->path = items[i - 1].path;
		else {
			snprintf(name, sizeof(name), "charges[%zu].cgroup", i);
			if (e->raw == SIZE_MAX)
				r = charge_target_checked(&rq, &who, true, name, path);
			else {
				r = api_check_cgroup_string(&rq, raw + e->raw, e->raw_len, path);
				if (r == PARAM_OK)
					r = charge_target_checked(&rq, &who, false, name, path);
			}
			if (r < 0)
				return r;
			if (r == PARAM_REPLIED)
				return 1;
			/* Shared with the entry before when it resolved the same. */
			if (i > 0 && strcmp(paths + items[i - 1].path, path) == 0)
				e->path = items[i - 1].path;
			else if (raw_keep(&paths, &paths_len, &paths_cap, path, strlen(path), &e->path) < 0)
				return -ENOMEM;
		}
		if (acct_charges_check(ch, (size_t)e->res, paths + e->path, e->delta) < 0) {
			snprintf(name, sizeof(name), "charges[%zu].delta", i);
			return (r = out_of_range(&rq, name)) < 0 ? r : 1;
		}
	}
	/* Apply, entry by entry as api_method_charge_batch() (entries that
	 * checked alone may together leave the range: undone, refused). */
	for (size_t i = 0; i < n; i++) {
		r = apply(c, (size_t)items[i].res, paths + items[i].path, items[i].delta);
		if (r < 0) {
			for (size_t j = i; j-- > 0;)
				(void)apply(c, (size_t)items[j].res, paths + items[j].path, -items[j].delta);
			if (r != -ERANGE)
				return r;
			snprintf(name, sizeof(name), "charges[%zu].delta", i);
			return (r = out_of_range(&rq, name)) < 0 ? r : 1;
		}
	}
	_cleanup_json_ struct json_object *p = json_object_new_object();
	if (!p || api_json_add(p, "applied", json_object_new_int64((int64_t)n)) < 0)
		return -ENOMEM;
	r = api_reply(&rq, TAKE_PTR(p), false);
	return r < 0 ? r : 1;
}
