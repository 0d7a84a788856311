/* api-watch.c - the varlink API's Watch: the watched set (explicit cgroups
 * and/or a prefix), a fingerprint of each record's values to tell what
 * changed since the last update, and the updates themselves, in replies of at
 * most WATCH_CHUNK records.
 *
 * Coalescing: the timer only marks an update due; the server sends it when the
 * connection's output queue is empty (api_conn_kick()), so a slow reader gets
 * fewer, newer updates, never a backlog. */
#include "api-watch.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "api-charges-views.h"
#include "api-server.h"
#include "api-slots.h"
#include "basic/hash.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "format/ledger-json.h"
#include "manager.h"

#define WATCH_CHUNK 64 /* full records per Watch reply */
#define WATCH_MIN_INTERVAL_MS 10
#define WATCH_MAX_INTERVAL_MS (24 * 3600 * 1000)
#define WATCH_DEFAULT_INTERVAL_MS 1000

enum { WATCH_CGROUPS, WATCH_PREFIX, WATCH_INTERVAL, _WATCH_MAX };
const char *const api_watch_params[_WATCH_MAX + 1] = {
	[WATCH_CGROUPS] = "cgroups",
	[WATCH_PREFIX] = "prefix",
	[WATCH_INTERVAL] = "interval_ms",
};

struct watch {
	char **paths; /* explicit cgroups, or NULL */
	size_t nr_paths;
	char *prefix; /* or NULL */
	uint64_t interval_us;
	struct event *timer;
	struct seen {
		uint64_t serial, hash;
	} *seen; /* what the last update reported, sorted by serial */
	size_t nr_seen;
	bool due;   /* an interval passed since the last check */
	bool first; /* nothing sent yet */
	/* What it holds of its user's budgets: one Watch, and an entry per
	 * cgroup named and for the prefix (api-budget.h). */
	struct api_budget *budget;
	uid_t uid;
	uint64_t charged[_BUDGET_MAX];
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct watch *, api_watch_free)

static uint64_t double_bits(double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

/* A fingerprint of a record's values (not their ages): equal fingerprints,
 * nothing to report. */
static uint64_t record_hash(struct acct_ledger *l, const struct acct_cgroup *cg)
{
	struct acct_cgroup_values cv;
	uint64_t h = FNV1A_64_OFFSET;

	acct_cgroup_read(cg,
			 ACCT_READ_STATE | ACCT_READ_CPU_RATE | ACCT_READ_IO_RATE | ACCT_READ_LOAD | ACCT_READ_PSI |
				 ACCT_READ_MEMORY,
			 0 /* no ages */, &cv);
	h = hash_fnv1a_u64(h, cg->serial);
	h = hash_fnv1a_u64(h, cv.dead);
	h = hash_fnv1a_u64(h, cv.populated);
	h = hash_fnv1a_u64(h, cv.hierarchies);
	for (int q = 0; q < _ACCT_Q_MAX; q++) {
		struct acct_reading rd = { 0 };
		bool known = acct_cgroup_get(cg, (enum acct_quantity)q, false, &rd);
		h = hash_fnv1a_u64(h, known);
		h = hash_fnv1a_u64(h, (uint64_t)rd.value);
	}
	h = hash_fnv1a_u64(h, cv.cpu_rate_known);
	h = hash_fnv1a_u64(h, double_bits(cv.cpu_rate));
	/* I/O rates (the per-device values move with the totals, which are quantities) */
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++)
		h = hash_fnv1a_u64(h, double_bits(cv.io_rate[k]));
	for (int i = 0; i < 3; i++) {
		h = hash_fnv1a_u64(h, double_bits(cv.cpu_rate_avg[i]));
		h = hash_fnv1a_u64(h, cv.loadavg[i]);
	}
	for (int r = 0; r < _ACCT_PSI_MAX; r++) {
		h = hash_fnv1a_u64(h, cv.psi_known[r]);
		for (int k = 0; k < _ACCT_PSI_KIND_MAX; k++)
			for (int a = 0; a < 3; a++)
				h = hash_fnv1a_u64(h, cv.psi_avg[r][k][a]);
	}
	if (cv.memstat)
		for (unsigned i = 0; i < acct_ledger_memstat_count(l); i++)
			h = hash_fnv1a_u64(h, (uint64_t)acct_memstat_value(cv.memstat, (int)i));
	if (cv.numa_known)
		for (unsigned n = 0;; n++) {
			struct acct_reading rd;
			if (acct_counter_read_node(cg->numa, n, &rd) < 0)
				break;
			h = hash_fnv1a_u64(h, (uint64_t)rd.value);
		}
	h = hash_fnv1a_u64(h, cv.sample_errors);
	return h;
}

static int seen_cmp(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

struct watch *api_watch_free(struct watch *w)
{
	if (!w)
		return NULL;
	if (w->timer)
		event_free(w->timer);
	for (int k = 0; w->budget && k < _BUDGET_MAX; k++)
		api_budget_release(w->budget, w->uid, (enum api_budget_kind)k, w->charged[k]);
	for (size_t i = 0; i < w->nr_paths; i++)
		free(w->paths[i]);
	free(w->paths);
	free(w->prefix);
	free(w->seen);
	free(w);
	return NULL;
}

bool api_watch_due(const struct conn *c)
{
	return c->watch && c->watch->due;
}

/* The records watched now, live and dead. Caller holds rcu_read_lock(). */
static int watch_records(struct acct_ledger *ledger, struct watch *w, struct acct_cgroup ***ret)
{
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	size_t k = 0;

	if (w->prefix) {
		int n = acct_ledger_snapshot(ledger, true, &cgs);
		if (n < 0)
			return n;
		size_t plen = strlen(w->prefix);
		for (int i = 0; i < n; i++)
			if (path_under(cgs[i]->path, w->prefix, plen))
				cgs[k++] = cgs[i];
	}
	if (w->nr_paths) {
		struct acct_cgroup **p = reallocarray(cgs, k + w->nr_paths + 1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		cgs = p;
		for (size_t i = 0; i < w->nr_paths; i++) {
			struct acct_cgroup *cg = acct_ledger_find(ledger, w->paths[i]);
			bool dup = false;
			for (size_t j = 0; cg && j < k && !dup; j++)
				dup = cgs[j] == cg;
			if (cg && !dup)
				cgs[k++] = cg;
		}
	}
	*ret = TAKE_PTR(cgs);
	return (int)k;
}

/* Charge `amount` of kind to w's user; answers ResourceLimitExceeded when it
 * does not fit. Returns 1 (charged), 0 (answered) or a negative errno. */
static int watch_charge(struct request *rq, struct watch *w, enum api_budget_kind kind, uint64_t amount)
{
	struct api_server *s = rq->c->s;
	enum api_budget_scope scope;

	int r = api_budget_charge(&s->budget, w->uid, kind, amount, &scope);
	if (r == -EDQUOT) {
		const struct api_budget_limits *l = &s->budget.limits;
		return api_resource_limit(rq, api_budget_limit_name(kind, scope),
					  scope == BUDGET_PER_USER ? l->per_user[kind] : l->total[kind]);
	}
	if (r < 0)
		return r;
	w->budget = &s->budget;
	w->charged[kind] += amount;
	return 1;
}

/* Queue one update reply holding `arr` (taken). */
static int send_chunk(struct request *rq, struct json_object *arr)
{
	_cleanup_json_ struct json_object *a = arr;
	struct json_object *p = json_object_new_object();
	if (!p)
		return -ENOMEM;
	json_object_object_add(p, "cgroups", TAKE_PTR(a));
	return api_reply(rq, p, true);
}

int api_watch_update(struct conn *c)
{
	struct manager *m = c->s->m;
	struct acct_ledger *ledger = manager_ledger(m);
	struct watch *w = c->watch;
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	unsigned nodes = manager_nr_nodes(m);
	uint64_t now = acct_now_us();
	struct request rq = { .c = c, .method = M_WATCH, .flags = VARLINK_CALL_MORE, .counted = true };
	int r = 0;

	api_slots_fold_all(c->s); /* charged values read now: age 0 (docs/charges.md) */

	rcu_read_lock();
	int n = watch_records(ledger, w, &cgs);
	if (n < 0) {
		rcu_read_unlock();
		return n;
	}
	_cleanup_free_ struct seen *seen = calloc((size_t)n + 1, sizeof(*seen));
	if (!seen) {
		rcu_read_unlock();
		return -ENOMEM;
	}
	_cleanup_json_ struct json_object *arr = NULL;
	size_t in_arr = 0, sent = 0;
	for (int i = 0; i < n && r >= 0; i++) {
		struct acct_charges *ch = manager_charges(m);
		seen[i] = (struct seen){ cgs[i]->serial,
					 api_charges_hash(ch, manager_charges_avg(m), cgs[i]->path,
							  record_hash(ledger, cgs[i])) };
		struct seen *old = w->seen ? bsearch(&seen[i], w->seen, w->nr_seen, sizeof(*seen), seen_cmp) : NULL;
		if (!w->first && old && old->hash == seen[i].hash)
			continue;
		if (!arr && !(arr = json_object_new_array()))
			r = -ENOMEM;
		else {
			struct json_object *o = acct_cgroup_to_json(ledger, cgs[i], now, false, nodes);
			struct json_object *charged =
				api_charges_json(c->s, manager_charges(m), manager_charges_avg(m), cgs[i]->path, now);
			if (o && charged)
				json_object_object_add(o, "charges", charged);
			else
				json_object_put(charged);
			json_object_array_add(arr, o);
			in_arr++;
		}
		if (r >= 0 && in_arr == WATCH_CHUNK) {
			r = send_chunk(&rq, TAKE_PTR(arr));
			sent++;
			in_arr = 0;
		}
	}
	rcu_read_unlock();
	if (r >= 0 && (in_arr > 0 || (w->first && sent == 0))) {
		if (!arr && !(arr = json_object_new_array()))
			r = -ENOMEM;
		else
			r = send_chunk(&rq, TAKE_PTR(arr));
	}
	if (r < 0)
		return r;
	qsort(seen, (size_t)n, sizeof(*seen), seen_cmp);
	free(w->seen);
	w->seen = TAKE_PTR(seen);
	w->nr_seen = (size_t)n;
	w->first = false;
	w->due = false;
	return 0;
}

static void on_watch_timer(evutil_socket_t fd, short what, void *userdata)
{
	struct conn *c = userdata;
	c->watch->due = true;
	api_conn_kick(c);
}

int api_method_watch(struct request *rq, struct json_object *params)
{
	struct conn *c = rq->c;
	struct manager *m = c->s->m;
	struct acct_ledger *ledger = manager_ledger(m);
	char path[CGROUP_PATH_MAX + 1];
	struct json_object *list = NULL;
	int64_t interval = WATCH_DEFAULT_INTERVAL_MS;
	int r;

	_cleanup_(api_watch_freep) struct watch *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->first = true;
	w->uid = c->cred.uid;
	r = varlink_param_array(params, api_watch_params[WATCH_CGROUPS], &list);
	if (r < 0)
		return api_invalid_parameter(rq, api_watch_params[WATCH_CGROUPS]);
	if (list) {
		size_t n = json_object_array_length(list);
		/* Each entry is looked up at every update: bounded per call,
		 * checked before anything is copied. */
		unsigned max = manager_config(m)->max_watch_cgroups;
		if (n > max)
			return api_resource_limit(rq, "max_watch_cgroups", max);
		w->paths = calloc(n + 1, sizeof(char *));
		if (!w->paths)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			struct json_object *v = json_object_array_get_idx(list, i);
			if (!v) /* null inside the array */
				return api_invalid_parameter(rq, api_watch_params[WATCH_CGROUPS]);
			r = api_check_cgroup(rq, v, api_watch_params[WATCH_CGROUPS], true, path);
			if (r != PARAM_OK)
				return r < 0 ? r : 0;
			if (!(w->paths[w->nr_paths++] = strdup(path)))
				return -ENOMEM;
		}
	}
	r = api_param_cgroup(rq, params, api_watch_params[WATCH_PREFIX], false, path);
	if (r == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	if (r == PARAM_OK && !(w->prefix = strdup(path)))
		return -ENOMEM;
	r = varlink_param_int64(params, api_watch_params[WATCH_INTERVAL], &interval);
	if (r < 0 || interval < WATCH_MIN_INTERVAL_MS || interval > WATCH_MAX_INTERVAL_MS)
		return api_invalid_parameter(rq, api_watch_params[WATCH_INTERVAL]);
	if (!w->prefix && w->nr_paths == 0)
		return api_invalid_parameter(rq, api_watch_params[WATCH_CGROUPS]);
	/* What is watched must exist when the watch starts. */
	const char *missing = NULL;
	rcu_read_lock();
	if (w->prefix && !acct_ledger_find(ledger, w->prefix))
		missing = w->prefix;
	for (size_t i = 0; !missing && i < w->nr_paths; i++)
		if (!acct_ledger_find(ledger, w->paths[i]))
			missing = w->paths[i];
	rcu_read_unlock();
	if (missing)
		return api_no_such_cgroup(rq, missing);
	r = watch_charge(rq, w, BUDGET_WATCHES, 1);
	if (r <= 0)
		return r;
	r = watch_charge(rq, w, BUDGET_WATCH_CGROUPS, w->nr_paths + (w->prefix ? 1 : 0));
	if (r <= 0)
		return r; /* the cleanup gives the Watch back */
	w->interval_us = (uint64_t)interval * 1000;
	w->timer = event_new(manager_event_base(m), -1, EV_PERSIST, on_watch_timer, c);
	struct timeval tv = timeval_from_usec(w->interval_us);
	if (!w->timer || event_add(w->timer, &tv) < 0)
		return -ENOMEM;
	api_count(rq, RES_OK);
	w->due = true; /* the first update at once */
	c->watch = TAKE_PTR(w);
	return 1;
}
