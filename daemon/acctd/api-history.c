/* api-history.c - the history's methods, Usage and History
 * (docs/api.md, docs/history.md), answered from the query workers
 * (query-workers.h).
 *
 * The parameters are checked on the event loop; a worker reads the store
 * and builds the replies (json-c objects no other thread touches
 * meanwhile); the event loop only sends them. While a query runs, its
 * connection is busy, as Reconcile's is: its struct pass_wait (not on the
 * server's list of Reconcile calls) is what a closing connection detaches
 * (c->wait->c = NULL, then wait.gone), so that the query is called off and
 * its answer, if any, finds nobody and is freed. */
#include "api-history.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api-methods.h"
#include "api-server.h"
#include "basic/log.h"
#include "basic/util.h"
#include "format/ledger-json.h"
#include "history-recorder.h"
#include "manager.h"
#include "query-workers.h"

#define USAGE_CHUNK 256    /* cgroups per Usage reply with "more" */
#define HISTORY_CHUNK 1000 /* steps per History reply with "more" */
#define HISTORY_MAX_STEPS 100000
/* Charged resources one query may name (docs/charges.md, "History"): each
 * costs a store query per cgroup of the answer. */
#define HQ_MAX_CHARGES 16

enum {
	USAGE_SINCE,
	USAGE_UNTIL,
	USAGE_PREFIX,
	USAGE_DEPTH,
	USAGE_INCLUDE_REMOVED,
	USAGE_GROUP_BY_LEVEL,
	USAGE_CHARGES,
	_USAGE_MAX
};
const char *const api_usage_params[_USAGE_MAX + 1] = {
	[USAGE_SINCE] = "since_us",
	[USAGE_UNTIL] = "until_us",
	[USAGE_PREFIX] = "prefix",
	[USAGE_DEPTH] = "depth",
	[USAGE_INCLUDE_REMOVED] = "include_removed",
	[USAGE_GROUP_BY_LEVEL] = "group_by_level",
	[USAGE_CHARGES] = "charges",
};

enum { HISTORY_CGROUP, HISTORY_SINCE, HISTORY_UNTIL, HISTORY_STEP, HISTORY_QUANTITIES, _HISTORY_MAX };
const char *const api_history_params[_HISTORY_MAX + 1] = {
	[HISTORY_CGROUP] = "cgroup",
	[HISTORY_SINCE] = "since_us",
	[HISTORY_UNTIL] = "until_us",
	[HISTORY_STEP] = "step_us",
	[HISTORY_QUANTITIES] = "quantities",
};

/* History's quantities: the words and the bits of a step they select. */
enum { HQ_CPU = 1u << 0, HQ_MEMORY = 1u << 1, HQ_IO = 1u << 2, HQ_TASKS = 1u << 3, HQ_ALL = 15u };
static const struct {
	const char *word;
	unsigned bit;
} history_quantities[] = {
	{ "cpu", HQ_CPU }, { "memory", HQ_MEMORY }, { "io", HQ_IO }, { "tasks", HQ_TASKS },
};

struct hq_job {
	struct history_query q; /* first: the workers' handle */
	struct pass_wait wait;  /* .c, .rq: who is answered */
	bool more;
	uint64_t since_us, until_us, step_us;
	char path[CGROUP_PATH_MAX + 1]; /* Usage's prefix, History's cgroup */
	int depth;
	int group_level; /* Usage's group_by_level, 0: none */
	bool include_removed;
	unsigned quantities;
	unsigned cpus; /* the host's (manager_host_cpus()): no CPU figure is more */
	/* Charged resources asked for: Usage's charges, History's "charges.NAME" */
	char charges[HQ_MAX_CHARGES][ACCT_RESOURCE_NAME_MAX + 1];
	unsigned nr_charges;
	/* The answer, built on a query worker. */
	struct json_object **replies;
	size_t nr_replies;
	enum api_result error; /* RES_OK: the replies */
	struct json_object *error_params;
	int failure; /* < 0: no memory for the answer: the connection closes */
};

static void hq_job_free(struct hq_job *j)
{
	for (size_t i = 0; i < j->nr_replies; i++)
		json_object_put(j->replies[i]);
	free(j->replies);
	json_object_put(j->error_params);
	free(j);
}

void api_history_query_drop(struct history_query *q)
{
	hq_job_free((struct hq_job *)q);
}

static void hq_error(struct hq_job *j, enum api_result e, const char *key, const char *value)
{
	j->error = e;
	j->error_params = json_object_new_object();
	if (!j->error_params || api_json_add(j->error_params, key, acct_json_text(value)) < 0)
		j->failure = -ENOMEM;
}

static int hq_add_reply(struct hq_job *j, struct json_object *o)
{
	struct json_object **v = reallocarray(j->replies, j->nr_replies + 1, sizeof(*v));
	if (!o || !v) {
		json_object_put(o);
		if (v)
			j->replies = v;
		return -ENOMEM;
	}
	j->replies = v;
	j->replies[j->nr_replies++] = o;
	return 0;
}

static int add_int(struct json_object *o, const char *key, int64_t v)
{
	return api_json_add(o, key, json_object_new_int64(v));
}

/* Total (value: int, bound: ?int); nothing when the value is unknown. */
static int add_total(struct json_object *o, const char *key, int64_t value, int64_t bound)
{
	if (value == HISTORY_UNKNOWN)
		return 0;
	struct json_object *t = json_object_new_object();
	if (!t || add_int(t, "value", value) < 0 || (bound > 0 && add_int(t, "bound", bound) < 0)) {
		json_object_put(t);
		return -ENOMEM;
	}
	return api_json_add(o, key, t);
}

static int add_double(struct json_object *o, const char *key, double v)
{
	if (isnan(v) || isinf(v))
		return 0;
	return api_json_add(o, key, json_object_new_double(v));
}

static const char *const resolution_names[_HISTORY_RESOLUTION_MAX] = {
	[HISTORY_RAW] = "raw", [HISTORY_MINUTE] = "minute", [HISTORY_HOUR] = "hour",
};

/* FloatTotal (value: float, bound: ?float). */
static int add_float_total(struct json_object *o, const char *key, double value, double bound)
{
	struct json_object *t = json_object_new_object();
	int r = t ? api_json_add(t, "value", json_object_new_double(value)) : -ENOMEM;
	if (r == 0 && bound > 0)
		r = api_json_add(t, "bound", json_object_new_double(bound));
	if (r == 0)
		r = api_json_add(o, key, TAKE_PTR(t));
	json_object_put(t);
	return r;
}

/* A CgroupUsage's `charges`: what path held of each resource asked for
 * that has charge points (ChargeUsage), in the order asked; nothing when
 * none has. Returns 0 or a negative errno (*ret_error for the store's). */
static int usage_charges(const struct hq_job *j, struct history_store *s, const char *path, struct json_object *o,
			 char **ret_error)
{
	struct json_object *a = NULL;
	int r = 0;
	for (unsigned k = 0; r == 0 && k < j->nr_charges; k++) {
		struct history_charge_usage cu;
		r = history_store_charge_usage(s, path, j->charges[k], j->since_us, j->until_us, &cu, ret_error);
		if (r == -ENOENT) {
			r = 0;
			continue; /* never charged: no entry */
		}
		if (r < 0)
			break;
		struct json_object *e = json_object_new_object();
		if (!a && !(a = json_object_new_array()))
			r = -ENOMEM;
		if (r == 0)
			r = e ? api_json_add(e, "resource", json_object_new_string(j->charges[k])) : -ENOMEM;
		if (r == 0)
			r = add_float_total(e, "value_seconds", cu.value_seconds, cu.bound_seconds);
		if (r == 0)
			r = add_int(e, "recorded_us", (int64_t)cu.recorded_us);
		if (r == 0 && cu.recorded_us > 0)
			r = add_double(e, "avg", cu.value_seconds * 1e6 / (double)cu.recorded_us);
		if (r == 0 && cu.max_value != HISTORY_UNKNOWN)
			r = add_int(e, "max", cu.max_value);
		if (r == 0 && json_object_array_add(a, e) < 0)
			r = -ENOMEM;
		if (r < 0)
			json_object_put(e);
	}
	if (r == 0 && a)
		r = api_json_add(o, "charges", TAKE_PTR(a));
	json_object_put(a);
	return r;
}

static struct json_object *usage_json(const struct history_usage *u, bool grouped)
{
	struct json_object *o = json_object_new_object();
	int r = o ? 0 : -ENOMEM;
	bool memory = u->memory_max_bytes != HISTORY_UNKNOWN;

	if (r == 0)
		r = api_json_add(o, "path", acct_json_text(u->path));
	if (r == 0)
		r = add_int(o, "lives", u->lives);
	if (r == 0 && grouped)
		r = add_int(o, "subtree_cgroups", u->subtree_paths);
	if (r == 0)
		r = add_int(o, "first_seen_us", (int64_t)u->first_seen_us);
	if (r == 0 && u->removed_us)
		r = add_int(o, "removed_us", (int64_t)u->removed_us);
	if (r == 0)
		r = add_int(o, "recorded_us", (int64_t)u->recorded_us);
	if (r == 0)
		r = add_total(o, "cpu_usec", u->cpu_usec, u->cpu_usec_bound);
	if (r == 0 && u->cpu_clipped)
		r = api_json_add(o, "cpu_clipped", json_object_new_boolean(true));
	if (r == 0 && memory) {
		struct json_object *t = json_object_new_object();
		r = t ? api_json_add(t, "value", json_object_new_double(u->memory_byte_seconds)) : -ENOMEM;
		if (r == 0 && u->memory_byte_seconds_bound > 0)
			r = api_json_add(t, "bound", json_object_new_double(u->memory_byte_seconds_bound));
		if (r == 0)
			r = api_json_add(o, "memory_byte_seconds", TAKE_PTR(t));
		json_object_put(t);
		if (r == 0 && u->recorded_us > 0)
			r = add_double(o, "memory_avg_bytes", u->memory_byte_seconds * 1e6 / (double)u->recorded_us);
		if (r == 0)
			r = add_int(o, "memory_max_bytes", u->memory_max_bytes);
	}
	if (r == 0 && u->memory_peak_bytes != HISTORY_UNKNOWN)
		r = add_int(o, "memory_peak_bytes", u->memory_peak_bytes);
	if (r == 0)
		r = add_total(o, "io_read_bytes", u->io_read_bytes, 0);
	if (r == 0)
		r = add_total(o, "io_write_bytes", u->io_write_bytes, 0);
	if (r == 0 && u->resolution >= 0 && u->resolution < _HISTORY_RESOLUTION_MAX)
		r = api_json_add(o, "resolution", json_object_new_string(resolution_names[u->resolution]));
	if (r < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* The answer's replies: n items in chunks of `chunk` with "more" (else one
 * reply), each an array at `key`; head() adds the first reply's other
 * members, item() builds item i (NULL: no memory). A failure to build ends
 * the answer with j->failure. */
static void hq_add_chunks(struct hq_job *j, size_t n, size_t chunk, const char *key,
			  int (*head)(struct hq_job *j, struct json_object *p, const void *ctx),
			  struct json_object *(*item)(const struct hq_job *j, const void *ctx, size_t i), const void *ctx)
{
	size_t i = 0;
	do {
		size_t end = j->more ? MIN(n, i + chunk) : n;
		struct json_object *p = json_object_new_object(), *a = json_object_new_array();
		int r = p && a ? 0 : -ENOMEM;
		if (r == 0 && i == 0)
			r = head(j, p, ctx);
		for (; r == 0 && i < end; i++) {
			struct json_object *o = item(j, ctx, i);
			if (!o || json_object_array_add(a, o) < 0) {
				json_object_put(o);
				r = -ENOMEM;
			}
		}
		if (r == 0)
			r = api_json_add(p, key, TAKE_PTR(a));
		json_object_put(a);
		if (r == 0)
			r = hq_add_reply(j, TAKE_PTR(p));
		json_object_put(p);
		if (r < 0) {
			j->failure = r;
			break;
		}
	} while (i < n);
}

struct usage_replies {
	const struct history_usage *u;
	const struct history_gap *gaps;
	int ng;
	struct json_object **charges; /* per row: its CgroupUsage's `charges` holder, or NULL */
};

/* Usage's first reply: the window and its gaps. */
static int usage_head(struct hq_job *j, struct json_object *p, const void *ctx)
{
	const struct usage_replies *ur = ctx;
	struct json_object *g = json_object_new_array();
	int r = g ? 0 : -ENOMEM;
	for (int k = 0; r == 0 && k < ur->ng; k++) {
		struct json_object *o = json_object_new_object();
		r = o ? add_int(o, "from_us", (int64_t)ur->gaps[k].from_us) : -ENOMEM;
		if (r == 0)
			r = add_int(o, "to_us", (int64_t)ur->gaps[k].to_us);
		if (r == 0 && json_object_array_add(g, o) < 0)
			r = -ENOMEM;
		if (r < 0)
			json_object_put(o);
	}
	if (r == 0)
		r = add_int(p, "since_us", (int64_t)j->since_us);
	if (r == 0)
		r = add_int(p, "until_us", (int64_t)j->until_us);
	if (r == 0)
		r = api_json_add(p, "gaps", TAKE_PTR(g));
	json_object_put(g);
	return r;
}

static struct json_object *usage_item(const struct hq_job *j, const void *ctx, size_t i)
{
	const struct usage_replies *ur = ctx;
	struct json_object *o = usage_json(&ur->u[i], j->group_level > 0), *c;
	if (o && ur->charges && ur->charges[i] && json_object_object_get_ex(ur->charges[i], "charges", &c) &&
	    api_json_add(o, "charges", json_object_get(c)) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static void run_usage(struct history_query *q, struct history_store *s, const char *reason)
{
	struct hq_job *j = (struct hq_job *)q;
	_cleanup_free_ char *error = NULL;
	struct history_usage *u = NULL;
	struct history_gap *gaps = NULL;
	int n = 0, ng = 0;

	if (!s)
		return hq_error(j, RES_HISTORY_UNAVAILABLE, "reason", reason);
	struct history_usage_query uq = {
		.since_us = j->since_us,
		.until_us = j->until_us,
		.prefix = j->path,
		.depth = j->depth,
		.include_removed = j->include_removed,
		.group_level = j->group_level,
		/* no cgroup used more than the host's CPUs, which bounds the bounds */
		.cpus = j->cpus,
	};
	n = history_store_usage(s, &uq, &u, &error);
	if (n >= 0) {
		free(error);
		error = NULL;
		ng = history_store_gaps(s, j->since_us, j->until_us, &gaps, &error);
	}
	if (n == -ENOENT) {
		hq_error(j, RES_NO_SUCH_CGROUP, "cgroup", j->path);
		goto out;
	}
	if (n < 0 || ng < 0) {
		if (n == -ENOMEM || ng == -ENOMEM)
			j->failure = -ENOMEM;
		else
			hq_error(j, RES_HISTORY_UNAVAILABLE, "reason", error ?: strerror(-(n < 0 ? n : ng)));
		goto out;
	}
	struct usage_replies ur = { .u = u, .gaps = gaps, .ng = ng };
	if (j->nr_charges > 0 && n > 0) {
		/* Read here, on the worker with the store; the items are built
		 * from them. */
		ur.charges = calloc((size_t)n, sizeof(*ur.charges));
		if (!ur.charges) {
			j->failure = -ENOMEM;
			goto out;
		}
		for (int i = 0; i < n; i++) {
			ur.charges[i] = json_object_new_object();
			int r = ur.charges[i] ? usage_charges(j, s, u[i].path, ur.charges[i], &error) : -ENOMEM;
			if (r < 0) {
				if (r == -ENOMEM)
					j->failure = r;
				else
					hq_error(j, RES_HISTORY_UNAVAILABLE, "reason", error ?: strerror(-r));
				for (int k = 0; k <= i; k++)
					json_object_put(ur.charges[k]);
				free(ur.charges);
				goto out;
			}
		}
	}
	hq_add_chunks(j, (size_t)n, USAGE_CHUNK, "cgroups", usage_head, usage_item, &ur);
	for (int i = 0; ur.charges && i < n; i++)
		json_object_put(ur.charges[i]);
	free(ur.charges);
out:
	if (n > 0)
		history_usage_array_free(u, (size_t)n);
	free(gaps);
}

static struct json_object *step_json(const struct history_step *st, unsigned quantities)
{
	struct json_object *o = json_object_new_object();
	int r = o ? 0 : -ENOMEM;

	if (r == 0)
		r = add_int(o, "t_us", (int64_t)st->t_us);
	if (r == 0)
		r = add_int(o, "covered_us", (int64_t)st->covered_us);
	if (st->covered_us > 0) {
		if (r == 0 && (quantities & HQ_CPU))
			r = add_double(o, "cpu_cores", st->cpu_cores);
		if (r == 0 && (quantities & HQ_CPU) && st->cpu_clipped)
			r = api_json_add(o, "cpu_clipped", json_object_new_boolean(true));
		if (r == 0 && (quantities & HQ_MEMORY)) {
			r = add_double(o, "memory_mean_bytes", st->memory_mean_bytes);
			if (r == 0 && st->memory_min_bytes != HISTORY_UNKNOWN)
				r = add_int(o, "memory_min_bytes", st->memory_min_bytes);
			if (r == 0 && st->memory_max_bytes != HISTORY_UNKNOWN)
				r = add_int(o, "memory_max_bytes", st->memory_max_bytes);
		}
		if (r == 0 && (quantities & HQ_IO)) {
			r = add_double(o, "io_read_bytes_per_s", st->io_read_bytes_per_s);
			if (r == 0)
				r = add_double(o, "io_write_bytes_per_s", st->io_write_bytes_per_s);
		}
		if (r == 0 && (quantities & HQ_TASKS) && st->tasks_max != HISTORY_UNKNOWN)
			r = add_int(o, "tasks_max", st->tasks_max);
	}
	if (r < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* History's first reply: the cgroup, the window and the step, and the
 * charged resources' points read on the worker (ctx: struct
 * history_replies). */
struct history_replies {
	const struct history_step *steps;
	struct json_object *charges; /* [](resource, points), NULL: none asked */
};

static int history_head(struct hq_job *j, struct json_object *p, const void *ctx)
{
	const struct history_replies *hr = ctx;
	int r = api_json_add(p, "cgroup", acct_json_text(j->path));
	if (r == 0 && hr->charges)
		r = api_json_add(p, "charges", json_object_get(hr->charges));
	if (r == 0)
		r = add_int(p, "since_us", (int64_t)j->since_us);
	if (r == 0)
		r = add_int(p, "until_us", (int64_t)j->until_us);
	if (r == 0)
		r = add_int(p, "step_us", (int64_t)j->step_us);
	return r;
}

static struct json_object *history_item(const struct hq_job *j, const void *ctx, size_t i)
{
	return step_json(&((const struct history_replies *)ctx)->steps[i], j->quantities);
}

/* History's `charges`: for each resource asked for, the points of the
 * cgroup's value (ChargePoint: a value from t_us to end_us, with its bound)
 * in the window; none where it was never charged. */
static int history_charges_json(const struct hq_job *j, struct history_store *s, struct json_object **ret,
				char **ret_error)
{
	struct json_object *a = json_object_new_array();
	int r = a ? 0 : -ENOMEM;
	for (unsigned k = 0; r == 0 && k < j->nr_charges; k++) {
		_cleanup_free_ struct history_charge_point *pts = NULL;
		int n = history_store_charge_points(s, j->path, j->charges[k], j->since_us, j->until_us, &pts, ret_error);
		if (n == -ENOENT)
			n = 0;
		if (n < 0) {
			r = n;
			break;
		}
		struct json_object *e = json_object_new_object(), *v = json_object_new_array();
		r = e && v ? api_json_add(e, "resource", json_object_new_string(j->charges[k])) : -ENOMEM;
		for (int i = 0; r == 0 && i < n; i++) {
			struct json_object *o = json_object_new_object();
			r = o ? add_int(o, "t_us", (int64_t)pts[i].t_us) : -ENOMEM;
			if (r == 0)
				r = add_int(o, "end_us", (int64_t)pts[i].end_us);
			if (r == 0)
				r = add_int(o, "value", pts[i].value);
			if (r == 0)
				r = add_int(o, "bound", pts[i].bound);
			if (r == 0 && json_object_array_add(v, o) < 0)
				r = -ENOMEM;
			if (r < 0)
				json_object_put(o);
		}
		if (r == 0)
			r = api_json_add(e, "points", TAKE_PTR(v));
		if (r == 0 && json_object_array_add(a, e) < 0)
			r = -ENOMEM;
		else if (r == 0)
			e = NULL;
		json_object_put(v);
		json_object_put(e);
	}
	if (r < 0) {
		json_object_put(a);
		return r;
	}
	*ret = a;
	return 0;
}

static void run_history(struct history_query *q, struct history_store *s, const char *reason)
{
	struct hq_job *j = (struct hq_job *)q;
	_cleanup_free_ char *error = NULL;
	_cleanup_free_ struct history_step *steps = NULL;

	if (!s)
		return hq_error(j, RES_HISTORY_UNAVAILABLE, "reason", reason);
	int n = history_store_series(s, j->path, j->since_us, j->until_us, j->step_us, &steps, &error);
	if (n > 0) /* no step holds more than every CPU busy */
		history_series_cap_cpu(steps, (size_t)n, j->cpus);
	if (n == -ENOENT)
		return hq_error(j, RES_NO_SUCH_CGROUP, "cgroup", j->path);
	if (n == -ENOMEM) {
		j->failure = n;
		return;
	}
	if (n < 0)
		return hq_error(j, RES_HISTORY_UNAVAILABLE, "reason", error ?: strerror(-n));
	struct history_replies hr = { .steps = steps };
	int r = j->nr_charges > 0 ? history_charges_json(j, s, &hr.charges, &error) : 0;
	if (r == -ENOMEM) {
		j->failure = r;
		return;
	}
	if (r < 0)
		return hq_error(j, RES_HISTORY_UNAVAILABLE, "reason", error ?: strerror(-r));
	hq_add_chunks(j, (size_t)n, HISTORY_CHUNK, "steps", history_head, history_item, &hr);
	json_object_put(hr.charges);
}

/* On the event loop: send what the worker built. */
static void hq_done(struct history_query *q)
{
	struct hq_job *j = (struct hq_job *)q;
	struct conn *c = j->wait.c;

	if (c) {
		int r = j->failure;
		if (r == 0 && j->error != RES_OK)
			r = api_reply_error(&j->wait.rq, j->error, TAKE_PTR(j->error_params));
		for (size_t i = 0; r == 0 && j->error == RES_OK && i < j->nr_replies; i++) {
			r = api_reply(&j->wait.rq, j->replies[i], i + 1 < j->nr_replies);
			j->replies[i] = NULL; /* taken */
		}
		c->wait = NULL;
		c->busy = false;
		if (r < 0)
			c->dead = true;
		c->last_active_us = acct_now_us();
		api_conn_kick(c);
	}
	hq_job_free(j);
}

/* A time parameter: absent (PARAM_ABSENT), or a non-negative integer. */
static int time_param(struct request *rq, struct json_object *params, const char *name, bool required,
		      uint64_t *ret)
{
	int64_t v;
	int r = varlink_param_int64(params, name, &v);
	if (r < 0 || (r > 0 && v < 0) || (r == 0 && required)) {
		r = api_invalid_parameter(rq, name);
		return r < 0 ? r : PARAM_REPLIED;
	}
	if (r > 0)
		*ret = (uint64_t)v;
	return r > 0 ? PARAM_OK : PARAM_ABSENT;
}

/* j's connection closed: nobody waits for the answer any more. */
static void hq_gone(struct pass_wait *w)
{
	struct hq_job *j = (struct hq_job *)(void *)((char *)w - offsetof(struct hq_job, wait));
	struct history_queries *h = manager_history_queries(w->s->m);
	if (h)
		history_queries_cancel(h, &j->q);
}

/* Queue j for the workers; the connection stays busy until hq_done(). */
static int hq_submit(struct request *rq, struct hq_job *j, history_query_run_fn run)
{
	struct history_queries *h = manager_history_queries(rq->c->s->m);
	if (!h) {
		hq_job_free(j);
		return api_reply_error_string(rq, RES_HISTORY_UNAVAILABLE, "reason", "history is not running");
	}
	if (rq->flags & VARLINK_CALL_ONEWAY) { /* nobody to answer: nothing to compute */
		hq_job_free(j);
		api_count(rq, RES_OK);
		return 0;
	}
	j->q.run = run;
	j->q.done = hq_done;
	j->q.uid = rq->c->cred.uid;
	j->wait = (struct pass_wait){ .s = rq->c->s, .c = rq->c, .rq = *rq, .gone = hq_gone };
	j->more = rq->flags & VARLINK_CALL_MORE;
	int r = history_queries_submit(h, &j->q);
	if (r < 0) {
		hq_job_free(j);
		if (r != -EUSERS)
			return r;
		log_debug("Usage/History of uid %u refused: max_queries_per_user (%u) reached.",
			  (unsigned)rq->c->cred.uid, history_queries_max_per_user(h));
		return api_resource_limit(rq, "max_queries_per_user", history_queries_max_per_user(h));
	}
	rq->c->wait = &j->wait;
	return 1;
}

/* Take charged resource `name` (declared, else refused) into j's list.
 * Returns 0, -ENOENT for an undeclared name (NoSuchResource, as Charge says
 * it), or -EINVAL for no name or too many. */
static int hq_add_charge(struct request *rq, struct hq_job *j, const char *name)
{
	if (!name || j->nr_charges >= HQ_MAX_CHARGES)
		return -EINVAL;
	if (acct_charges_resource_index(manager_charges(rq->c->s->m), name) < 0 || strlen(name) > ACCT_RESOURCE_NAME_MAX)
		return -ENOENT;
	for (unsigned k = 0; k < j->nr_charges; k++)
		if (strcmp(j->charges[k], name) == 0)
			return 0; /* asked twice: answered once */
	strcpy(j->charges[j->nr_charges++], name);
	return 0;
}

int api_method_usage(struct request *rq, struct json_object *params)
{
	_cleanup_free_ struct hq_job *j = calloc(1, sizeof(*j));
	int64_t depth = -1, level = 0;
	int r;

	if (!j)
		return -ENOMEM;
	*j = (struct hq_job){ .until_us = history_now_us(), .depth = -1, .include_removed = true,
			      .cpus = manager_host_cpus(rq->c->s->m) };
	strcpy(j->path, "/");
	if ((r = time_param(rq, params, api_usage_params[USAGE_SINCE], true, &j->since_us)) == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	if ((r = time_param(rq, params, api_usage_params[USAGE_UNTIL], false, &j->until_us)) == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	if (j->since_us >= j->until_us)
		return api_invalid_parameter(rq, api_usage_params[r == PARAM_OK ? USAGE_UNTIL : USAGE_SINCE]);
	r = api_param_cgroup(rq, params, api_usage_params[USAGE_PREFIX], false, j->path);
	if (r == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	r = varlink_param_int64(params, api_usage_params[USAGE_DEPTH], &depth);
	if (r < 0 || (r > 0 && (depth < -1 || depth > INT_MAX)))
		return api_invalid_parameter(rq, api_usage_params[USAGE_DEPTH]);
	j->depth = (int)depth;
	if (varlink_param_bool(params, api_usage_params[USAGE_INCLUDE_REMOVED], &j->include_removed) < 0)
		return api_invalid_parameter(rq, api_usage_params[USAGE_INCLUDE_REMOVED]);
	r = varlink_param_int64(params, api_usage_params[USAGE_GROUP_BY_LEVEL], &level);
	if (r < 0 || (r > 0 && (level < 1 || level > CGROUP_PATH_MAX / 2)))
		return api_invalid_parameter(rq, api_usage_params[USAGE_GROUP_BY_LEVEL]);
	j->group_level = (int)level;
	struct json_object *cs = NULL;
	r = varlink_param_array(params, api_usage_params[USAGE_CHARGES], &cs);
	if (r < 0)
		return api_invalid_parameter(rq, api_usage_params[USAGE_CHARGES]);
	for (size_t i = 0; r > 0 && i < json_object_array_length(cs); i++) {
		struct json_object *w = json_object_array_get_idx(cs, i);
		const char *name = json_object_is_type(w, json_type_string) ? json_object_get_string(w) : NULL;
		r = hq_add_charge(rq, j, name);
		if (r == -ENOENT)
			return api_reply_error_string(rq, RES_NO_SUCH_RESOURCE, "resource", name);
		if (r < 0)
			return api_invalid_parameter(rq, api_usage_params[USAGE_CHARGES]);
		r = 1;
	}
	return hq_submit(rq, TAKE_PTR(j), run_usage);
}

int api_method_history(struct request *rq, struct json_object *params)
{
	_cleanup_free_ struct hq_job *j = calloc(1, sizeof(*j));
	struct json_object *qs = NULL;
	int r;

	if (!j)
		return -ENOMEM;
	*j = (struct hq_job){ .until_us = history_now_us(), .quantities = HQ_ALL, .cpus = manager_host_cpus(rq->c->s->m) };
	r = api_param_cgroup(rq, params, api_history_params[HISTORY_CGROUP], true, j->path);
	if (r == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	if ((r = time_param(rq, params, api_history_params[HISTORY_SINCE], true, &j->since_us)) == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	if ((r = time_param(rq, params, api_history_params[HISTORY_UNTIL], false, &j->until_us)) == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	if (j->since_us >= j->until_us)
		return api_invalid_parameter(rq, api_history_params[r == PARAM_OK ? HISTORY_UNTIL : HISTORY_SINCE]);
	uint64_t span = j->until_us - j->since_us;
	j->step_us = MAX(span / 120, manager_config(rq->c->s->m)->history_interval_us);
	if ((r = time_param(rq, params, api_history_params[HISTORY_STEP], false, &j->step_us)) == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	if (j->step_us == 0 || span / j->step_us + (span % j->step_us != 0) > HISTORY_MAX_STEPS)
		return api_invalid_parameter(rq, api_history_params[HISTORY_STEP]);
	r = varlink_param_array(params, api_history_params[HISTORY_QUANTITIES], &qs);
	if (r < 0)
		return api_invalid_parameter(rq, api_history_params[HISTORY_QUANTITIES]);
	if (r > 0) {
		j->quantities = 0;
		for (size_t i = 0; i < json_object_array_length(qs); i++) {
			struct json_object *w = json_object_array_get_idx(qs, i);
			const char *word = json_object_is_type(w, json_type_string) ? json_object_get_string(w) : NULL;
			if (word && strncmp(word, "charges.", strlen("charges.")) == 0) {
				int k = hq_add_charge(rq, j, word + strlen("charges."));
				if (k == -ENOENT)
					return api_reply_error_string(rq, RES_NO_SUCH_RESOURCE, "resource",
								      word + strlen("charges."));
				if (k < 0)
					return api_invalid_parameter(rq, api_history_params[HISTORY_QUANTITIES]);
				continue; /* selects no step member */
			}
			size_t k = 0;
			while (word && k < ELEMENTSOF(history_quantities) && strcmp(history_quantities[k].word, word) != 0)
				k++;
			if (!word || k == ELEMENTSOF(history_quantities))
				return api_invalid_parameter(rq, api_history_params[HISTORY_QUANTITIES]);
			j->quantities |= history_quantities[k].bit;
		}
	}
	return hq_submit(rq, TAKE_PTR(j), run_history);
}
