/* page-request.c - routing of the page's requests and its API parameters
 * (see page-request.h). */
#include "page-request.h"

#include <errno.h>
#include <json-c/json.h>
#include <sys/queue.h> /* before keyvalq_struct.h */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/name-escape.h"
#include "basic/util.h"

#define IFACE "io.acctd.Accounting."
#define PARAM_WORD_MAX 64

enum param_type { P_STRING, P_INT, P_TIME, P_BOOL };

struct page_param {
	const char *name;
	enum param_type type;
};

static const struct page_endpoint {
	const char *path;
	const char *method;
	struct page_param params[7]; /* ended by name NULL */
} endpoints[] = {
	{ "/api/status", IFACE "Status", { { NULL, 0 } } },
	{ "/api/list", IFACE "List", { { "prefix", P_STRING }, { "depth", P_INT }, { "include_dead", P_BOOL }, { NULL, 0 } } },
	{ "/api/get", IFACE "Get", { { "cgroup", P_STRING }, { NULL, 0 } } },
	{ "/api/usage",
	  IFACE "Usage",
	  { { "since_us", P_TIME },
	    { "until_us", P_TIME },
	    { "prefix", P_STRING },
	    { "depth", P_INT },
	    { "include_removed", P_BOOL },
	    { "group_by_level", P_INT },
	    { NULL, 0 } } },
	{ "/api/history",
	  IFACE "History",
	  { { "cgroup", P_STRING }, { "since_us", P_TIME }, { "until_us", P_TIME }, { "step_us", P_INT }, { NULL, 0 } } },
};

static void refuse(struct page_plan *ret, int code, const char *reason, const char *body)
{
	ret->route = PAGE_REFUSE;
	ret->code = code;
	ret->reason = reason;
	snprintf(ret->body, sizeof(ret->body), "%s", body);
}

/* A 400 naming the parameter and the client's value, cut and escaped. */
static void refuse_param(struct page_plan *ret, const char *what, const char *name, const char *value)
{
	char n[4 * PARAM_WORD_MAX + 1], v[4 * PARAM_WORD_MAX + 1];
	size_t ln = strlen(name), lv = strlen(value);
	size_t cn = utf8_boundary(name, ln, PARAM_WORD_MAX), cv = utf8_boundary(value, lv, PARAM_WORD_MAX);
	n[name_escape_to(n, name, cn, NAME_ESCAPE_TEXT)] = '\0';
	v[name_escape_to(v, value, cv, NAME_ESCAPE_TEXT)] = '\0';
	ret->route = PAGE_REFUSE;
	ret->code = 400;
	ret->reason = "Bad Request";
	snprintf(ret->body, sizeof(ret->body), "Bad query: %s '%s%s'='%s%s'\n", what, n, cn < ln ? "..." : "", v,
		 cv < lv ? "..." : "");
}

/* A decimal integer, optionally negative, nothing else. */
static int parse_int(const char *s, int64_t *ret)
{
	char *end = NULL;
	if (!*s || (*s != '-' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || !end || *end != '\0' || end == s)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse_bool(const char *s, bool *ret)
{
	if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
		*ret = true;
	else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
		*ret = false;
	else
		return -EINVAL;
	return 0;
}

static const struct page_param *find_param(const struct page_endpoint *e, const char *name)
{
	for (const struct page_param *p = e->params; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

/* The call of e with the query's parameters into ret->call, or a refusal. */
static void plan_call(const struct page_endpoint *e, const char *query, uint64_t now_us, struct page_plan *ret)
{
	struct evkeyvalq kv;
	struct json_object *call = json_object_new_object(), *params = json_object_new_object();
	bool oom = !call || !params, bad = false;

	TAILQ_INIT(&kv);
	if (query && evhttp_parse_query_str(query, &kv) < 0) {
		refuse(ret, 400, "Bad Request", "Bad query: cannot parse it\n");
		bad = true;
	}
	for (struct evkeyval *p = TAILQ_FIRST(&kv); p && !bad && !oom; p = TAILQ_NEXT(p, next)) {
		const struct page_param *pp = find_param(e, p->key);
		struct json_object *v = NULL;
		int64_t i = 0;
		bool b = false;
		if (!pp) {
			refuse_param(ret, "unknown parameter", p->key, p->value);
			bad = true;
			break;
		}
		switch (pp->type) {
		case P_STRING:
			v = json_object_new_string(p->value);
			break;
		case P_BOOL:
			bad = parse_bool(p->value, &b) < 0;
			if (!bad)
				v = json_object_new_boolean(b);
			break;
		case P_INT:
		case P_TIME:
			bad = parse_int(p->value, &i) < 0;
			if (!bad && pp->type == P_TIME && i < 0) {
				/* relative to now; before the epoch is a mistake */
				bad = (uint64_t)(-(i + 1)) >= now_us;
				i = bad ? 0 : (int64_t)now_us + i;
			}
			if (!bad)
				v = json_object_new_int64(i);
			break;
		}
		if (bad) {
			refuse_param(ret, "bad value of", p->key, p->value);
			break;
		}
		/* the last of repeated parameters counts */
		if (!v || json_object_object_add(params, p->key, v) < 0) {
			json_object_put(v);
			oom = true;
		}
	}
	evhttp_clear_headers(&kv);
	if (!bad && !oom) {
		struct json_object *m = json_object_new_string(e->method);
		if (!m || json_object_object_add(call, "method", m) < 0) {
			json_object_put(m);
			oom = true;
		} else if (json_object_object_add(call, "parameters", params) < 0)
			oom = true;
		else
			params = NULL; /* taken */
	}
	if (!bad && !oom) {
		const char *text = json_object_to_json_string_ext(call, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		ret->call = text ? strdup(text) : NULL;
		oom = !ret->call;
		if (!oom)
			ret->route = PAGE_CALL;
	}
	if (oom && !bad)
		refuse(ret, 500, "Internal Server Error", "Out of memory.\n");
	json_object_put(params);
	json_object_put(call);
}

void page_request_plan(enum metrics_method method, const char *path, const char *query, uint64_t now_us,
		       struct page_plan *ret)
{
	*ret = (struct page_plan){ .route = PAGE_NOT_MINE };
	if (!path)
		return;
	bool root = strcmp(path, "/") == 0;
	bool ui = strncmp(path, "/ui/", 4) == 0 || strcmp(path, "/ui") == 0;
	bool api = strncmp(path, "/api/", 5) == 0;
	if (!root && !ui && !api)
		return;
	if (method != METRICS_METHOD_GET && method != METRICS_METHOD_HEAD) {
		ret->allow = true;
		return refuse(ret, 405, "Method Not Allowed", "The page is read-only: GET and HEAD only.\n");
	}
	if (root || strcmp(path, "/ui") == 0) {
		ret->route = PAGE_REDIRECT;
		ret->location = "/ui/";
		return;
	}
	if (ui) {
		for (const struct page_asset *a = page_assets; a->path; a++)
			if (strcmp(a->path, path) == 0) {
				ret->route = PAGE_ASSET;
				ret->asset = a;
				return;
			}
		return refuse(ret, 404, "Not Found", "No such file of the page.\n");
	}
	for (size_t i = 0; i < ELEMENTSOF(endpoints); i++)
		if (strcmp(endpoints[i].path, path) == 0)
			return plan_call(&endpoints[i], query, now_us, ret);
	refuse(ret, 404, "Not Found",
	       "No such endpoint: the page's are /api/status, /api/list, /api/get, /api/usage, /api/history.\n");
}

void page_plan_done(struct page_plan *p)
{
	free(p->call);
	p->call = NULL;
}

int page_reply_code(const char *reply, size_t len, const char **ret_reason)
{
	static const struct {
		const char *error;
		int code;
		const char *reason;
	} map[] = {
		{ "io.acctd.Accounting.NoSuchCgroup", 404, "Not Found" },
		{ "org.varlink.service.InvalidParameter", 400, "Bad Request" },
		{ "io.acctd.Accounting.InvalidCgroupPath", 400, "Bad Request" },
		{ "org.varlink.service.PermissionDenied", 403, "Forbidden" },
		{ "io.acctd.Accounting.ResourceLimitExceeded", 429, "Too Many Requests" },
		{ "io.acctd.Accounting.HistoryUnavailable", 503, "Service Unavailable" },
	};
	static const char reply_head[] = "{\"parameters\":", error_head[] = "{\"error\":\"";

	/* The server writes a reply's members in this order (varlink.c,
	 * api_text_reply()): an error's name comes first. */
	if (len >= sizeof(reply_head) - 1 && memcmp(reply, reply_head, sizeof(reply_head) - 1) == 0) {
		*ret_reason = "OK";
		return 200;
	}
	if (len > sizeof(error_head) - 1 && memcmp(reply, error_head, sizeof(error_head) - 1) == 0) {
		const char *name = reply + sizeof(error_head) - 1;
		const char *end = memchr(name, '"', len - (size_t)(name - reply));
		for (size_t i = 0; end && i < ELEMENTSOF(map); i++)
			if ((size_t)(end - name) == strlen(map[i].error) && memcmp(name, map[i].error, (size_t)(end - name)) == 0) {
				*ret_reason = map[i].reason;
				return map[i].code;
			}
	}
	*ret_reason = "Internal Server Error";
	return 500;
}
