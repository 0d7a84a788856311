/* api-methods.c - the varlink API's methods, one function each, and the
 * method table the dispatcher resolves calls against (api-dispatch.h).
 * Watch lives in api-watch.c.
 *
 * Each method's parameter names are written once, in its names table: the
 * table is what the dispatcher checks unknown parameters against, and the
 * method reads each parameter by its index into it.
 *
 * Order. Calls on one connection are answered in order. Most methods answer
 * at once; Reconcile (waits for a pass) and Watch (streams until the
 * connection closes) keep the connection busy, and the calls pipelined behind
 * them wait in the input buffer until they end. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-charges.h"
#include "api-charges-views.h"
#include "api-dispatch.h"
#include "api-history.h"
#include "api-methods.h"
#include "api-server.h"
#include "api-slots.h"
#include "api-watch.h"
#include "basic/log.h"
#include "basic/path.h"
#include "basic/util.h"
#include "build-config.h"
#include "core/charges.h"
#include "core/fresh.h"
#include "format/ledger-json.h"
#include "manager.h"
#include "status.h"

#define LIST_CHUNK 500 /* summaries per List reply with "more" */
#define URL "https://github.com/acctd/acctd"

/* Generated from io.acctd.Accounting.varlink (daemon/acctd/meson.build). */
extern const char acctd_interface_description[];
extern const size_t acctd_interface_description_size;

/* The standard interface, as every varlink service describes it. */
static const char service_description[] =
	"# The Varlink Service Interface is provided by every varlink service. It\n"
	"# describes the service and the interfaces it implements.\n"
	"interface org.varlink.service\n"
	"\n"
	"# Get a list of all the interfaces a service provides and information\n"
	"# about the implementation.\n"
	"method GetInfo() -> (\n"
	"  vendor: string,\n"
	"  product: string,\n"
	"  version: string,\n"
	"  url: string,\n"
	"  interfaces: []string\n"
	")\n"
	"\n"
	"# Get the description of an interface that is implemented by this service.\n"
	"method GetInterfaceDescription(interface: string) -> (description: string)\n"
	"\n"
	"# The requested interface was not found.\n"
	"error InterfaceNotFound (interface: string)\n"
	"\n"
	"# The requested method was not found\n"
	"error MethodNotFound (method: string)\n"
	"\n"
	"# The interface defines the requested method, but the service does not\n"
	"# implement it.\n"
	"error MethodNotImplemented (method: string)\n"
	"\n"
	"# One of the passed parameters is invalid.\n"
	"error InvalidParameter (parameter: string)\n"
	"\n"
	"# Client is denied access\n"
	"error PermissionDenied ()\n"
	"\n"
	"# Method is expected to be called with 'more' set to true, but wasn't\n"
	"error ExpectedMore ()\n";

/* ---- parameter names ---------------------------------------------------------------- */

static const char *const no_params[] = { NULL };

enum { LIST_PREFIX, LIST_DEPTH, LIST_INCLUDE_DEAD, _LIST_MAX };
static const char *const list_params[_LIST_MAX + 1] = {
	[LIST_PREFIX] = "prefix",
	[LIST_DEPTH] = "depth",
	[LIST_INCLUDE_DEAD] = "include_dead",
};

enum { GET_CGROUP, GET_PRECISE, _GET_MAX };
static const char *const get_params[_GET_MAX + 1] = {
	[GET_CGROUP] = "cgroup",
	[GET_PRECISE] = "precise",
};

enum { COMPARE_CGROUP, COMPARE_QUANTITY, COMPARE_THRESHOLD, COMPARE_PRECISE, _COMPARE_MAX };
static const char *const compare_params[_COMPARE_MAX + 1] = {
	[COMPARE_CGROUP] = "cgroup",
	[COMPARE_QUANTITY] = "quantity",
	[COMPARE_THRESHOLD] = "threshold",
	[COMPARE_PRECISE] = "precise",
};

/* The three budgets first, in the order of struct acct_ledger_budgets. */
enum { TUNE_BYTES, TUNE_CPU, TUNE_TASKS, TUNE_AUTO, _TUNE_MAX };
static const char *const tune_params[_TUNE_MAX + 1] = {
	[TUNE_BYTES] = "bytes_budget",
	[TUNE_CPU] = "cpu_budget_us",
	[TUNE_TASKS] = "tasks_budget",
	[TUNE_AUTO] = "auto_tune",
};

/* The camelCase names of acctd 0.1, accepted for one more release (see
 * api_deprecated_params in api-dispatch.h). */
const struct api_param_alias api_deprecated_params[] = {
	{ M_LIST, "includeDead", LIST_INCLUDE_DEAD },
	{ M_TUNE, "bytesBudget", TUNE_BYTES },
	{ M_TUNE, "cpuBudgetUs", TUNE_CPU },
	{ M_TUNE, "tasksBudget", TUNE_TASKS },
	{ M_TUNE, "autoTune", TUNE_AUTO },
	{ _M_MAX, NULL, 0 },
};

enum { DESCRIBE_INTERFACE, _DESCRIBE_MAX };
static const char *const describe_params[_DESCRIBE_MAX + 1] = {
	[DESCRIBE_INTERFACE] = "interface",
};

/* ---- org.varlink.service -------------------------------------------------------- */

static int m_get_info(struct request *rq, struct json_object *params)
{
	static const struct {
		const char *key, *value;
	} fields[] = { { "vendor", "acctd" }, { "product", "acctd" }, { "version", ACCTD_VERSION }, { "url", URL } };
	_cleanup_json_ struct json_object *p = json_object_new_object();
	struct json_object *ifs = json_object_new_array();

	/* Every allocation checked: json-c aborts on a NULL member. */
	if (!p || api_json_add(p, "interfaces", ifs) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(fields); i++)
		if (api_json_add(p, fields[i].key, json_object_new_string(fields[i].value)) < 0)
			return -ENOMEM;
	struct json_object *name;
	if (!(name = json_object_new_string(VARLINK_INTERFACE_SERVICE)) || json_object_array_add(ifs, name) < 0 ||
	    !(name = json_object_new_string(IFACE_ACCT)) || json_object_array_add(ifs, name) < 0) {
		json_object_put(name);
		return -ENOMEM;
	}
	return api_reply(rq, TAKE_PTR(p), false);
}

static int m_get_interface_description(struct request *rq, struct json_object *params)
{
	const char *name = NULL;
	size_t len = 0;
	int r = varlink_param_string_len(params, describe_params[DESCRIBE_INTERFACE], &name, &len);
	if (r <= 0)
		return api_invalid_parameter(rq, describe_params[DESCRIBE_INTERFACE]);
	_cleanup_json_ struct json_object *p = json_object_new_object();
	if (!p)
		return -ENOMEM;
	if (len == strlen(IFACE_ACCT) && strcmp(name, IFACE_ACCT) == 0)
		json_object_object_add(p, "description", json_object_new_string_len(acctd_interface_description,
										     (int)acctd_interface_description_size));
	else if (len == strlen(VARLINK_INTERFACE_SERVICE) && strcmp(name, VARLINK_INTERFACE_SERVICE) == 0)
		json_object_object_add(p, "description", json_object_new_string(service_description));
	else
		return api_reply_error_string(rq, RES_INTERFACE_NOT_FOUND, "interface", name);
	return api_reply(rq, TAKE_PTR(p), false);
}

/* ---- io.acctd.Accounting ----------------------------------------------------------- */

static int m_status(struct request *rq, struct json_object *params)
{
	_cleanup_json_ struct json_object *st = NULL;
	int r = daemon_status_json(rq->c->s->m, &st);
	if (r < 0)
		return r;
	/* The charge slots are the API server's, not the manager's. */
	struct api_slot_stats ss;
	api_slots_stats(rq->c->s, &ss);
	_cleanup_json_ struct json_object *slots = json_object_new_object();
	if (!slots || api_json_add(slots, "open", json_object_new_int64((int64_t)ss.open)) < 0 ||
	    api_json_add(slots, "opened", json_object_new_int64((int64_t)ss.opened_total)) < 0 ||
	    api_json_add(slots, "dropped_corrupt", json_object_new_int64((int64_t)ss.corrupt_total)) < 0 ||
	    api_json_add(slots, "dropped_removed", json_object_new_int64((int64_t)ss.gone_total)) < 0 ||
	    api_json_add(slots, "folds", json_object_new_int64((int64_t)ss.folds_total)) < 0 ||
	    api_json_add(slots, "adopted", json_object_new_int64((int64_t)ss.adopted_total)) < 0 ||
	    api_json_add(slots, "not_adopted", json_object_new_int64((int64_t)ss.not_adopted_total)) < 0 ||
	    api_json_add(st, "charge_slots", TAKE_PTR(slots)) < 0)
		return -ENOMEM;
	struct json_object *p = json_object_new_object();
	if (!p)
		return -ENOMEM;
	json_object_object_add(p, "status", TAKE_PTR(st));
	return api_reply(rq, p, false);
}

/* ---- fresh reads (Get and Compare with precise) -------------------------------
 *
 * A precise call reads the cgroup's memory and CPU time from the kernel now
 * (fresh.h), on this thread, beside any sampling pass, instead of serving the
 * last pass's values; the other quantities come from the ledger, read
 * precisely. The cgroup is looked up first (its hierarchies say which files),
 * then read outside the RCU section. Not read fresh, with the reason in
 * `not_fresh`: the root (its memory is defined from its children), a
 * tombstone (its final values are served), a read that failed otherwise. */

#define REASON_MAX 160

/* Returns 0 (ret filled; ret->have 0 and `reason` set when nothing was read)
 * or -ENOENT when the cgroup is not tracked or was removed before the read. */
static int fresh_read(struct manager *m, const char *path, struct acct_fresh_reading *ret, char reason[REASON_MAX])
{
	const struct acct_bpf_collector *c = manager_collector(m);
	struct acct_fresh_options o = {
		.layout = manager_layout(m),
		/* the collector only while the sampler takes memory from it */
		.collector = manager_collector_parts(m) & ACCT_BPF_PART_MEMORY ? c : NULL,
		.batching = manager_batching(m), /* zero where the tree is not the kernel's */
	};
	uint32_t hierarchies;
	uint64_t inodes[_ACCT_HIER_MAX] = { 0 };
	bool dead;

	reason[0] = '\0';
	*ret = (struct acct_fresh_reading){ 0 };
	rcu_read_lock();
	struct acct_cgroup *cg = acct_ledger_find(manager_ledger(m), path);
	if (cg) {
		hierarchies = acct_cgroup_get_hierarchies(cg); /* acquire: the inodes below are its */
		for (int h = 0; h < _ACCT_HIER_MAX; h++)
			if (hierarchies & (1u << h))
				inodes[h] = acct_cgroup_get_inode(cg, (enum acct_hierarchy)h);
		dead = acct_cgroup_is_dead(cg);
	}
	rcu_read_unlock();
	if (!cg)
		return -ENOENT;
	if (dead) {
		snprintf(reason, REASON_MAX, "the cgroup was removed: its last values are served");
		return 0;
	}
	int r = acct_fresh_read(&o, path, hierarchies, inodes, ret);
	if (r == -ENOENT)
		return r;
	if (r < 0)
		snprintf(reason, REASON_MAX, "the fresh read failed (%s): served from the last pass", strerror(-r));
	else if (ret->not_read)
		snprintf(reason, REASON_MAX, "%s", ret->not_read);
	return 0;
}

/* ,"not_fresh":"REASON" */
static void put_not_fresh(struct acct_json_buf *b, const char *reason)
{
	_cleanup_json_ struct json_object *o = json_object_new_string(reason);
	const char *t = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
			  : NULL;
	if (!t) {
		b->failed = true;
		return;
	}
	acct_json_buf_append(b, ",\"not_fresh\":", 13);
	acct_json_buf_append(b, t, strlen(t));
}

/* ,"charges":{"NAME":{"self":Value,"subtree":Value},...} for every declared
 * resource (nothing when none is declared): a cgroup nothing was charged to
 * has 0, exactly. Read live, so the age is 0: the charge slots are folded
 * first, and the bound is the counter's plus the bounds of the slots read
 * (docs/charges.md, "Charge slots"). */
static void put_charges(struct acct_json_buf *b, struct api_server *s, struct acct_charges *ch,
			struct acct_charges_avg *avg, const char *path, bool precise)
{
	size_t n = acct_charges_nr_resources(ch);
	char buf[160];

	if (n == 0)
		return;
	acct_json_buf_append(b, ",\"charges\":{", 12);
	for (size_t i = 0; i < n; i++) {
		struct acct_charge_reading r = { 0 };
		int k = precise ? acct_charges_read_precise(ch, i, path, &r) : acct_charges_read(ch, i, path, &r);
		if (k < 0)
			r = (struct acct_charge_reading){ 0 };
		api_slots_add_bounds(s, i, path, &r);
		/* resource names are [a-z0-9_]+: no escaping */
		int len = snprintf(buf, sizeof(buf),
				   "%s\"%s\":{\"self\":{\"value\":%" PRId64 ",\"bound\":%" PRIu64
				   ",\"age_us\":0},\"subtree\":{\"value\":%" PRId64 ",\"bound\":%" PRIu64 ",\"age_us\":0}",
				   i ? "," : "", acct_charges_resource(ch, i)->name, r.self.value, r.self.bound,
				   r.subtree.value, r.subtree.bound);
		if (len < 0 || (size_t)len >= sizeof(buf)) {
			b->failed = true;
			return;
		}
		acct_json_buf_append(b, buf, (size_t)len);
		api_charges_put_averages(b, avg, i, path, acct_now_us()); /* docs/charges.md, "Averages" */
		acct_json_buf_append(b, "}", 1);
	}
	acct_json_buf_append(b, "}", 1);
}

/* ,"unexplained_memory":Value: the cgroup's memory less what programs charged
 * of the ram resources to its subtree, read now (docs/charges.md,
 * "Reconciliation of RAM resources"); the bound is both bounds summed, the
 * age the memory's: with a fresh read of memory (precise), that one, as the
 * record beside it serves. Nothing when no resource is ram or memory was not
 * read. */
static void put_unexplained(struct acct_json_buf *b, struct acct_charges_ram *cr, struct acct_cgroup *cg,
			    const char *path, bool precise, const struct acct_fresh_reading *fresh, uint64_t now)
{
	struct acct_reading mem, charged = { 0 };
	uint64_t age;
	char buf[160];

	if (!acct_charges_ram_any(cr))
		return;
	if (fresh && (fresh->have & (UINT64_C(1) << ACCT_Q_MEMORY))) {
		mem = (struct acct_reading){ fresh->value[ACCT_Q_MEMORY], fresh->bound[ACCT_Q_MEMORY] };
		age = now > fresh->read_us ? now - fresh->read_us : 0;
	} else if (acct_cgroup_quantity_known(cg, ACCT_Q_MEMORY) && acct_cgroup_get(cg, ACCT_Q_MEMORY, precise, &mem))
		age = acct_cgroup_quantity_age(cg, ACCT_Q_MEMORY, now);
	else
		return;
	(void)acct_charges_ram_read(cr, path, precise, &charged); /* -ENOENT: nothing charged, 0 */
	struct acct_reading u = acct_charges_ram_unexplained(&mem, &charged);
	int len = snprintf(buf, sizeof(buf), ",\"unexplained_memory\":{\"value\":%" PRId64 ",\"bound\":%" PRIu64
			   ",\"age_us\":%" PRIu64 "}",
			   u.value, u.bound, age);
	if (len < 0 || (size_t)len >= sizeof(buf)) {
		b->failed = true;
		return;
	}
	acct_json_buf_append(b, buf, (size_t)len);
}

static int m_get(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	struct acct_ledger *ledger = manager_ledger(m);
	char path[CGROUP_PATH_MAX + 1], reason[REASON_MAX] = "";
	struct acct_fresh_reading fresh;
	bool precise = false;
	int r;

	r = api_param_cgroup(rq, params, get_params[GET_CGROUP], true, path);
	if (r != PARAM_OK)
		return r < 0 ? r : 0;
	if (varlink_param_bool(params, get_params[GET_PRECISE], &precise) < 0)
		return api_invalid_parameter(rq, get_params[GET_PRECISE]);
	if (precise && fresh_read(m, path, &fresh, reason) == -ENOENT)
		return api_no_such_cgroup(rq, path);

	unsigned nodes = manager_nr_nodes(m);
	/* What the charge slots charged up to now, outside the RCU section (a
	 * fold may wait for the engine's lock): served with age 0. */
	api_slots_fold_under(rq->c->s, path);
	rcu_read_lock();
	struct acct_cgroup *cg = acct_ledger_find(ledger, path);
	if (cg) {
		struct acct_json_buf *b = api_text_begin(rq->c->s);
		acct_json_buf_append(b, "\"cgroup\":", 9);
		(void)acct_cgroup_write_json_fresh(b, ledger, cg, acct_now_us(), precise, nodes,
						   precise ? &fresh : NULL);
		if (reason[0])
			put_not_fresh(b, reason);
		put_charges(b, rq->c->s, manager_charges(m), manager_charges_avg(m), path, precise);
		put_unexplained(b, manager_charges_ram(m), cg, path, precise, precise ? &fresh : NULL, acct_now_us());
	}
	rcu_read_unlock();
	if (!cg)
		return api_no_such_cgroup(rq, path);
	return api_text_reply(rq, false);
}

static int m_list(struct request *rq, struct json_object *params)
{
	struct acct_ledger *ledger = manager_ledger(rq->c->s->m);
	char prefix[CGROUP_PATH_MAX + 1] = "/";
	int64_t depth = -1;
	bool include_dead = false;
	int r;

	r = api_param_cgroup(rq, params, list_params[LIST_PREFIX], false, prefix);
	if (r == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	r = varlink_param_int64(params, list_params[LIST_DEPTH], &depth);
	if (r < 0 || (r > 0 && depth < 0))
		return api_invalid_parameter(rq, list_params[LIST_DEPTH]);
	if (varlink_param_bool(params, list_params[LIST_INCLUDE_DEAD], &include_dead) < 0)
		return api_invalid_parameter(rq, list_params[LIST_INCLUDE_DEAD]);

	size_t plen = strlen(prefix);
	unsigned pdepth = path_depth(prefix);
	bool more = rq->flags & VARLINK_CALL_MORE;
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	uint64_t now = acct_now_us();

	rcu_read_lock();
	int n = acct_ledger_snapshot(ledger, include_dead, &cgs);
	if (n < 0) {
		rcu_read_unlock();
		return n;
	}
	/* Keep the matches in place. */
	size_t k = 0;
	for (int i = 0; i < n; i++)
		if (path_under(cgs[i]->path, prefix, plen) &&
		    (depth < 0 || (int64_t)cgs[i]->depth - (int64_t)pdepth <= depth))
			cgs[k++] = cgs[i];
	/* The prefix need not be tracked itself (an include filter may select
	 * only cgroups below it, "/" included): unknown only when nothing at or
	 * under it is. */
	if (k == 0 && !acct_ledger_find(ledger, prefix)) {
		rcu_read_unlock();
		return api_no_such_cgroup(rq, prefix);
	}
	r = 0;
	size_t i = 0;
	api_slots_fold_all(rq->c->s); /* charged values read now: age 0 (docs/charges.md) */
	do {
		size_t end = more ? MIN(k, i + LIST_CHUNK) : k;
		struct acct_json_buf *b = api_text_begin(rq->c->s);
		acct_json_buf_append(b, "\"cgroups\":[", 11);
		for (size_t first = i; i < end; i++) {
			if (i > first)
				acct_json_buf_append(b, ",", 1);
			size_t start = b->len;
			(void)acct_cgroup_list_entry_write(b, cgs[i], now);
			api_charges_list_member(b, start, rq->c->s, manager_charges(rq->c->s->m),
						manager_charges_avg(rq->c->s->m), cgs[i]->path, now);
		}
		acct_json_buf_append(b, "]", 1);
		r = api_text_reply(rq, more && i < k);
	} while (r >= 0 && i < k);
	rcu_read_unlock();
	return r;
}

/* Whether the v1 memory controller has a source for q; the v2-only ones
 * (memory.high, memory.events' low/high/oom/oom_group_kill, PSI) it lacks. */
static bool memory_v1_lacks(enum acct_quantity q)
{
	switch (q) {
	case ACCT_Q_MEMORY_HIGH:
	case ACCT_Q_MEMORY_EVENTS_LOW:
	case ACCT_Q_MEMORY_EVENTS_HIGH:
	case ACCT_Q_MEMORY_EVENTS_OOM:
	case ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL:
		return true;
	default:
		return false;
	}
}

/* NoSuchQuantity for a known quantity that was never read for this cgroup,
 * with a reason: the layout has no file for it, or the cgroup lies outside
 * the hierarchy that has it. */
static int reply_not_read(struct request *rq, const char *qname, enum acct_quantity q)
{
	const struct acct_hierarchies *L = manager_layout(rq->c->s->m);
	_cleanup_free_ char *reason = NULL;
	const char *why;
	struct json_object *p;

	if (L->mode != ACCT_CGROUP_UNIFIED && !L->v2_memory && memory_v1_lacks(q))
		why = "is not read on cgroup v1: the v1 memory controller has no such file";
	else if (L->mode == ACCT_CGROUP_LEGACY && q >= ACCT_Q_PSI_CPU_SOME && q <= ACCT_Q_PSI_IO_FULL)
		why = "is not read on cgroup v1: pressure (PSI) is a cgroup v2 file";
	else if (q == ACCT_Q_MEMORY_UNDER_OOM && L->v2_memory)
		why = "is not read on cgroup v2: it is the v1 memory.oom_control's";
	else
		why = "is not read for this cgroup on this layout (no source file in its hierarchies)";
	if (asprintf(&reason, "%s %s", qname, why) < 0)
		reason = NULL;
	p = json_object_new_object();
	if (!p || !reason) {
		json_object_put(p);
		return -ENOMEM;
	}
	json_object_object_add(p, "quantity", json_object_new_string(qname));
	json_object_object_add(p, "reason", json_object_new_string(reason));
	return api_reply_error(rq, RES_NO_SUCH_QUANTITY, p);
}

static bool is_fresh_quantity(enum acct_quantity q)
{
	for (size_t i = 0; i < ACCT_FRESH_MAX; i++)
		if (acct_fresh_quantities[i] == q)
			return true;
	return false;
}

/* |a - b| without overflow. */
static uint64_t distance(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

static int m_compare(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	struct acct_ledger *ledger = manager_ledger(m);
	char path[CGROUP_PATH_MAX + 1], reason[REASON_MAX] = "";
	const char *qname = NULL;
	int64_t threshold = 0;
	bool want_fresh = false;
	struct acct_fresh_reading fresh = { 0 };
	int r;

	r = api_param_cgroup(rq, params, compare_params[COMPARE_CGROUP], true, path);
	if (r != PARAM_OK)
		return r < 0 ? r : 0;
	if (varlink_param_string(params, compare_params[COMPARE_QUANTITY], &qname) <= 0)
		return api_invalid_parameter(rq, compare_params[COMPARE_QUANTITY]);
	if (varlink_param_int64(params, compare_params[COMPARE_THRESHOLD], &threshold) <= 0)
		return api_invalid_parameter(rq, compare_params[COMPARE_THRESHOLD]);
	if (varlink_param_bool(params, compare_params[COMPARE_PRECISE], &want_fresh) < 0)
		return api_invalid_parameter(rq, compare_params[COMPARE_PRECISE]);
	if (api_charges_compare(rq, path, qname, threshold, &r))
		return r; /* charges.NAME: a charged value (docs/charges.md) */
	int q = acct_quantity_from_name(qname);
	if (q < 0)
		return api_reply_error_string(rq, RES_NO_SUCH_QUANTITY, "quantity", qname);
	/* precise: memory and CPU time against a reading taken now */
	want_fresh = want_fresh && is_fresh_quantity((enum acct_quantity)q);
	if (want_fresh && fresh_read(m, path, &fresh, reason) == -ENOENT)
		return api_no_such_cgroup(rq, path);
	bool is_fresh = fresh.have & (UINT64_C(1) << q);
	if (want_fresh && !is_fresh && !reason[0])
		snprintf(reason, sizeof(reason), "%s has no source file for this cgroup", qname);

	rcu_read_lock();
	struct acct_cgroup *cg = acct_ledger_find(ledger, path);
	if (!cg) {
		rcu_read_unlock();
		return api_no_such_cgroup(rq, path);
	}
	if (!is_fresh && !acct_cgroup_quantity_known(cg, (enum acct_quantity)q)) {
		/* A quantity acctd knows but never read for this cgroup: say why,
		 * so that it does not read as a misspelt name. */
		rcu_read_unlock();
		return reply_not_read(rq, qname, (enum acct_quantity)q);
	}
	bool precise = false;
	struct acct_reading rd;
	uint64_t now = acct_now_us(), age;
	if (is_fresh) {
		/* The kernel's value as read is compared exactly; its bound is the
		 * kernel's own and stays in the reply. */
		rd = (struct acct_reading){ .value = fresh.value[q], .bound = fresh.bound[q] };
		precise = true;
		age = now > fresh.read_us ? now - fresh.read_us : 0;
	} else {
		/* The served bound is the engine's plus the kernel's (its per-CPU
		 * charge stocks): decided from the bound only outside both; inside,
		 * a precise read removes the engine's part, never the kernel's. */
		uint64_t kernel = acct_cgroup_kernel_bound(cg, (enum acct_quantity)q);
		acct_counter_read(cg->q[q], &rd);
		rd.bound = rd.bound + kernel < rd.bound ? UINT64_MAX : rd.bound + kernel;
		if (distance(rd.value, threshold) <= rd.bound) {
			rd = (struct acct_reading){ .value = acct_counter_read_precise(cg->q[q]), .bound = kernel };
			precise = true;
		}
		age = acct_cgroup_quantity_age(cg, (enum acct_quantity)q, now);
	}
	int cmp = rd.value > threshold ? 1 : rd.value < threshold ? -1 : 0;
	/* What is left of the bound (the kernel's) still holds the threshold:
	 * the value as read decides, the truth may lie on either side. */
	bool within = rd.bound > 0 && distance(rd.value, threshold) <= rd.bound;
	double motion = 0;
	bool motion_known = acct_cgroup_motion(cg, (enum acct_quantity)q, &motion);
	rcu_read_unlock();

	_cleanup_json_ struct json_object *p = json_object_new_object(), *v = json_object_new_object();
	if (!p || !v)
		return -ENOMEM;
	json_object_object_add(p, "result", json_object_new_string(cmp > 0 ? "above" : cmp < 0 ? "below" : "equal"));
	json_object_object_add(v, "value", json_object_new_int64(rd.value));
	if (rd.bound)
		json_object_object_add(v, "bound", json_object_new_int64((int64_t)MIN(rd.bound, (uint64_t)INT64_MAX)));
	if (age != UINT64_MAX)
		json_object_object_add(v, "age_us", json_object_new_int64((int64_t)age));
	if (motion_known)
		json_object_object_add(v, "motion_per_s", json_object_new_double(motion));
	if (is_fresh)
		json_object_object_add(v, "fresh", json_object_new_boolean(true));
	json_object_object_add(p, "value", TAKE_PTR(v));
	json_object_object_add(p, "precise", json_object_new_boolean(precise));
	if (within)
		json_object_object_add(p, "within_bound", json_object_new_boolean(true));
	if (reason[0])
		json_object_object_add(p, "not_fresh", json_object_new_string(reason));
	return api_reply(rq, TAKE_PTR(p), false);
}

/* Tune's word on one budget it changed (manager_tune_change; the IDL's
 * TuneChange). bound: the most the cgroup's bound can now be. */
static struct json_object *tune_change_json(const struct manager_tune_change *c)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	uint64_t bound = (uint64_t)c->new_budget + c->kernel_bound;

	if (!o || api_json_add(o, "budget", json_object_new_string(c->budget)) < 0 ||
	    api_json_add(o, "old", json_object_new_int64(c->old_budget)) < 0 ||
	    api_json_add(o, "new", json_object_new_int64(c->new_budget)) < 0 ||
	    api_json_add(o, "quantity", json_object_new_string(c->quantity)) < 0 ||
	    (c->cgroup && api_json_add(o, "cgroup", acct_json_text(c->cgroup)) < 0) ||
	    api_json_add(o, "kernel_bound", json_object_new_int64((int64_t)MIN(c->kernel_bound, (uint64_t)INT64_MAX))) < 0 ||
	    api_json_add(o, "bound", json_object_new_int64((int64_t)MIN(bound, (uint64_t)INT64_MAX))) < 0)
		return NULL;
	return TAKE_PTR(o);
}

static int m_tune(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	struct acct_ledger_budgets b;
	struct manager_tune_change changes[MANAGER_TUNE_MAX_CHANGES];
	size_t nr_changes = 0;
	bool auto_tune = false, any_budget = false;
	int r;

	manager_effective_tuning(m, &b, NULL);
	int64_t *fields[] = { [TUNE_BYTES] = &b.bytes, [TUNE_CPU] = &b.cpu_us, [TUNE_TASKS] = &b.tasks };
	for (int i = TUNE_BYTES; i <= TUNE_TASKS; i++) {
		int64_t v;
		r = varlink_param_int64(params, tune_params[i], &v);
		if (r < 0 || (r > 0 && v < 0))
			return api_invalid_parameter(rq, tune_params[i]);
		if (r > 0) {
			*fields[i] = v;
			any_budget = true;
		}
	}
	r = varlink_param_bool(params, tune_params[TUNE_AUTO], &auto_tune);
	if (r < 0)
		return api_invalid_parameter(rq, tune_params[TUNE_AUTO]);
	int at = r > 0 ? auto_tune : -1;
	/* Reading is open to all (Status shows the same); changing is not. */
	if (any_budget || at >= 0) {
		if (!api_is_admin(rq->c)) {
			log_debug("Refused a change by Tune to uid %u (pid %d)", (unsigned)rq->c->cred.uid,
				  (int)rq->c->cred.pid);
			return api_reply_error(rq, RES_PERMISSION_DENIED, NULL);
		}
		_cleanup_free_ char *reason = NULL;
		const char *key = NULL;
		r = manager_tune(m, any_budget ? &b : NULL, at, &rq->c->cred, changes, &nr_changes, &key, &reason);
		if (r == -ENOMEM)
			return r;
		if (r == -ERANGE) {
			/* beyond the host: InvalidParameter says which, and why
			 * (budget-limits.h); "cpu_budget" is the key of cpu_budget_us */
			const char *name = tune_params[TUNE_BYTES];
			for (int i = TUNE_BYTES; i <= TUNE_TASKS; i++)
				if (strncmp(tune_params[i], key, strlen(key)) == 0)
					name = tune_params[i];
			_cleanup_json_ struct json_object *e = json_object_new_object();
			if (!e || api_json_add(e, "parameter", json_object_new_string(name)) < 0 ||
			    api_json_add(e, "reason", json_object_new_string(reason)) < 0)
				return -ENOMEM;
			return api_reply_error(rq, RES_INVALID_PARAMETER, TAKE_PTR(e));
		}
		if (r < 0)
			return api_invalid_parameter(rq, tune_params[TUNE_BYTES]);
	}

	manager_effective_tuning(m, &b, &auto_tune);
	_cleanup_json_ struct json_object *p = json_object_new_object(), *a = json_object_new_array();
	r = p && a ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < nr_changes; i++) {
		struct json_object *o = tune_change_json(&changes[i]);
		if (!o || json_object_array_add(a, o) < 0) {
			json_object_put(o);
			r = -ENOMEM;
		}
	}
	manager_tune_changes_clear(changes, nr_changes);
	if (r < 0 || api_json_add(p, "budgets", daemon_budgets_json(&b)) < 0 ||
	    api_json_add(p, "auto_tune", json_object_new_boolean(auto_tune)) < 0 ||
	    api_json_add(p, "changes", TAKE_PTR(a)) < 0)
		return -ENOMEM;
	return api_reply(rq, TAKE_PTR(p), false);
}

/* Reload's word on one key that changed (the IDL's ConfigChange). */
static struct json_object *config_change_json(const struct acct_config_change *c)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *key = NULL;

	if (!o || asprintf(&key, "%s.%s", c->section, c->key) < 0)
		return NULL;
	/* values may quote a file or group name */
	if (api_json_add(o, "key", json_object_new_string(key)) < 0 ||
	    api_json_add(o, "old", acct_json_text(c->old_value)) < 0 ||
	    api_json_add(o, "new", acct_json_text(c->new_value)) < 0 ||
	    api_json_add(o, "at_start", json_object_new_boolean(c->at_start)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

static struct json_object *dropped_tuning_json(const struct manager_reload_report *rep)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();

	if (!o || api_json_add(o, "was", daemon_budgets_json(&rep->was)) < 0 ||
	    api_json_add(o, "was_auto_tune", json_object_new_boolean(rep->was_auto_tune)) < 0 ||
	    api_json_add(o, "now", daemon_budgets_json(&rep->now)) < 0 ||
	    api_json_add(o, "auto_tune", json_object_new_boolean(rep->auto_tune)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

static int m_reload(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	_cleanup_(manager_reload_report_clear) struct manager_reload_report rep = { 0 };
	const char *reason = NULL;
	log_info("Reload requested by uid %u (pid %d)", (unsigned)rq->c->cred.uid, (int)rq->c->cred.pid);
	int r = manager_reload(m, &rep);
	if (r < 0) {
		(void)manager_reload_outcome(m, &reason);
		return api_reply_error_string(rq, RES_RELOAD_FAILED, "reason", reason);
	}
	/* What the new configuration ignores goes back to whoever asked for it,
	 * not only to the log (a typo would otherwise pass unseen); so does
	 * what it changed, and the run-time tuning it dropped. */
	_cleanup_json_ struct json_object *p = json_object_new_object(), *w = json_object_new_array(),
					  *c = json_object_new_array();
	if (!p || !w || !c)
		return -ENOMEM;
	for (char *const *line = manager_config_warnings(m); *line; line++)
		if (json_object_array_add(w, acct_json_text(*line)) < 0) /* may quote a file name */
			return -ENOMEM;
	for (size_t i = 0; i < rep.nr_changes; i++) {
		struct json_object *o = config_change_json(&rep.changes[i]);
		if (!o || json_object_array_add(c, o) < 0) {
			json_object_put(o);
			return -ENOMEM;
		}
	}
	if (api_json_add(p, "warnings", TAKE_PTR(w)) < 0 || api_json_add(p, "changes", TAKE_PTR(c)) < 0 ||
	    (rep.tuning_dropped && api_json_add(p, "dropped_tuning", dropped_tuning_json(&rep)) < 0))
		return -ENOMEM;
	return api_reply(rq, TAKE_PTR(p), false);
}

/* ---- Reconcile: answered after the next full pass --------------------------------- */

void api_pass_wait_free(struct pass_wait *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		w->s->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	free(w);
}

/* Called by the manager on the event loop once the pass is done. The
 * connection may have closed meanwhile: then w->c is NULL. */
static void on_pass_done(struct manager *m, const struct acct_pass_report *rep, void *userdata)
{
	struct pass_wait *w = userdata;
	struct conn *c = w->c;

	if (c) {
		struct json_object *p = json_object_new_object();
		int r = -ENOMEM;
		if (p) {
			json_object_object_add(p, "pass", acct_pass_to_json(rep));
			json_object_object_add(p, "reconciliation", acct_reconcile_to_json(manager_reconcile_report(m)));
			r = api_reply(&w->rq, p, false);
		}
		c->wait = NULL;
		c->busy = false;
		if (r < 0)
			c->dead = true;
		c->last_active_us = acct_now_us();
	}
	api_pass_wait_free(w);
	if (c)
		api_conn_kick(c);
}

static int m_reconcile(struct request *rq, struct json_object *params)
{
	struct api_server *s = rq->c->s;
	_cleanup_free_ struct pass_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	bool oneway = rq->flags & VARLINK_CALL_ONEWAY;
	*w = (struct pass_wait){ .s = s, .c = oneway ? NULL : rq->c, .rq = *rq, .next = s->waits };
	int r = manager_request_pass(s->m, on_pass_done, w);
	if (r < 0)
		return r;
	/* The manager holds it now; it comes back to on_pass_done(). */
	struct pass_wait *held = TAKE_PTR(w);
	if (s->waits)
		s->waits->prev = held;
	s->waits = held;
	if (oneway) {
		api_count(rq, RES_OK);
		return 0;
	}
	rq->c->wait = held;
	return 1;
}

/* ---- the method table --------------------------------------------------------------- */

const struct api_method api_methods[_M_MAX] = {
	[M_STATUS] = { IFACE_ACCT ".Status", m_status, false, false, no_params },
	[M_LIST] = { IFACE_ACCT ".List", m_list, false, false, list_params },
	[M_GET] = { IFACE_ACCT ".Get", m_get, false, false, get_params },
	[M_WATCH] = { IFACE_ACCT ".Watch", api_method_watch, false, true, api_watch_params },
	[M_COMPARE] = { IFACE_ACCT ".Compare", m_compare, false, false, compare_params },
	[M_TUNE] = { IFACE_ACCT ".Tune", m_tune, false, false, tune_params }, /* changes: admin, in m_tune() */
	[M_RECONCILE] = { IFACE_ACCT ".Reconcile", m_reconcile, true, false, no_params },
	[M_RELOAD] = { IFACE_ACCT ".Reload", m_reload, true, false, no_params },
	[M_GET_INFO] = { VARLINK_INTERFACE_SERVICE ".GetInfo", m_get_info, false, false, no_params },
	[M_GET_INTERFACE_DESCRIPTION] = { VARLINK_INTERFACE_SERVICE ".GetInterfaceDescription",
					  m_get_interface_description, false, false, describe_params },
	/* Read-only, open to all: answered from the query thread (api-history.c). */
	[M_USAGE] = { IFACE_ACCT ".Usage", api_method_usage, false, false, api_usage_params },
	[M_HISTORY] = { IFACE_ACCT ".History", api_method_history, false, false, api_history_params },
	/* Open to all: whom a caller may charge is checked per cgroup (api-charges.c). */
	[M_CHARGE] = { IFACE_ACCT ".Charge", api_method_charge, false, false, api_charge_params },
	[M_CHARGE_BATCH] = { IFACE_ACCT ".ChargeBatch", api_method_charge_batch, false, false, api_charge_batch_params },
	[M_OPEN_CHARGE_SLOT] = { IFACE_ACCT ".OpenChargeSlot", api_method_open_charge_slot, false, false,
				 api_open_charge_slot_params },
	[M_UNKNOWN] = { "unknown", NULL, false, false, no_params },
};
