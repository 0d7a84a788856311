/* api-charges-views.c - programs' charges in List, Watch and Compare
 * (api-charges-views.h, docs/charges.md). */
#include "api-charges-views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api-server.h"
#include "api-slots.h"
#include "basic/hash.h"
#include "basic/util.h"
#include "manager.h"

#define CHARGES_PREFIX "charges."

/* "NAME":{"self":Value,"subtree":Value of one resource, its object left
 * open for the averages; resource names are [a-z0-9_]+: no escaping.
 * Returns the length written or -ENOBUFS. */
static int charged_text(char *buf, size_t size, const char *name, const struct acct_charge_reading *r)
{
	int len = snprintf(buf, size,
			   "\"%s\":{\"self\":{\"value\":%" PRId64 ",\"bound\":%" PRIu64
			   ",\"age_us\":0},\"subtree\":{\"value\":%" PRId64 ",\"bound\":%" PRIu64 ",\"age_us\":0}",
			   name, r->self.value, r->self.bound, r->subtree.value, r->subtree.bound);
	return len < 0 || (size_t)len >= size ? -ENOBUFS : len;
}

void api_charges_list_member(struct acct_json_buf *b, size_t start, struct api_server *s, struct acct_charges *ch,
			     struct acct_charges_avg *avg, const char *path, uint64_t now_us)
{
	size_t n = acct_charges_nr_resources(ch), members = 0;
	char buf[256];

	if (b->failed || b->len <= start || b->data[b->len - 1] != '}')
		return;
	for (size_t i = 0; i < n; i++) {
		struct acct_charge_reading r;
		if (acct_charges_read(ch, i, path, &r) < 0)
			continue; /* never charged at or below path */
		api_slots_add_bounds(s, i, path, &r);
		int len = charged_text(buf, sizeof(buf), acct_charges_resource(ch, i)->name, &r);
		if (len < 0) {
			b->failed = true;
			return;
		}
		if (members++ == 0) {
			/* reopen the entry's object: its closing brace comes last */
			b->len--;
			acct_json_buf_append(b, ",\"charges\":{", 12);
		} else
			acct_json_buf_append(b, ",", 1);
		acct_json_buf_append(b, buf, (size_t)len);
		api_charges_put_averages(b, avg, i, path, now_us); /* as Get's: docs/charges.md, "Averages" */
		acct_json_buf_append(b, "}", 1);
	}
	if (members)
		acct_json_buf_append(b, "}}", 2);
}

void api_charges_put_averages(struct acct_json_buf *b, struct acct_charges_avg *avg, size_t res, const char *path,
			      uint64_t now_us)
{
	static const char *const names[_ACCT_AVG_MAX] = { "avg1", "avg5", "avg15" };
	struct acct_charges_avg_reading r;
	char buf[384];
	size_t len = 0;

	if (acct_charges_avg_read(avg, res, path, now_us, &r) < 0)
		return;
	len += (size_t)snprintf(buf, sizeof(buf), ",\"averages\":{\"avg1\":%.17g,\"avg5\":%.17g,\"avg15\":%.17g"
				",\"bound\":%" PRIu64 ",\"age_us\":%" PRIu64 ",\"covered_us\":%" PRIu64
				",\"whole_life\":%s,\"warming\":[",
				r.avg[0], r.avg[1], r.avg[2], r.bound, r.age_us, r.covered_us,
				r.whole_life ? "true" : "false");
	for (int k = 0, n = 0; k < _ACCT_AVG_MAX && len < sizeof(buf); k++)
		if (acct_charges_avg_warming(&r, k))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\"%s\"", n++ ? "," : "", names[k]);
	if (len < sizeof(buf))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "]}");
	if (len >= sizeof(buf)) {
		b->failed = true;
		return;
	}
	acct_json_buf_append(b, buf, len);
}

static struct json_object *value_json(const struct acct_reading *r)
{
	struct json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "value", json_object_new_int64(r->value));
	json_object_object_add(o, "bound", json_object_new_int64((int64_t)MIN(r->bound, (uint64_t)INT64_MAX)));
	json_object_object_add(o, "age_us", json_object_new_int64(0));
	return o;
}

/* Get's ChargeAverages as an object (api_charges_put_averages()'s members),
 * or NULL (out of memory). */
static struct json_object *averages_json(const struct acct_charges_avg_reading *r)
{
	static const char *const names[_ACCT_AVG_MAX] = { "avg1", "avg5", "avg15" };
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct json_object *warming = json_object_new_array();

	if (!o || !warming) {
		json_object_put(warming);
		return NULL;
	}
	for (int k = 0; k < _ACCT_AVG_MAX; k++)
		json_object_object_add(o, names[k], json_object_new_double(r->avg[k]));
	json_object_object_add(o, "bound", json_object_new_int64((int64_t)MIN(r->bound, (uint64_t)INT64_MAX)));
	json_object_object_add(o, "age_us", json_object_new_int64((int64_t)MIN(r->age_us, (uint64_t)INT64_MAX)));
	json_object_object_add(o, "covered_us",
			       json_object_new_int64((int64_t)MIN(r->covered_us, (uint64_t)INT64_MAX)));
	json_object_object_add(o, "whole_life", json_object_new_boolean(r->whole_life));
	for (int k = 0; k < _ACCT_AVG_MAX; k++)
		if (acct_charges_avg_warming(r, k))
			json_object_array_add(warming, json_object_new_string(names[k]));
	json_object_object_add(o, "warming", warming);
	return TAKE_PTR(o);
}

struct json_object *api_charges_json(struct api_server *s, struct acct_charges *ch, struct acct_charges_avg *avg,
				     const char *path, uint64_t now_us)
{
	size_t n = acct_charges_nr_resources(ch);
	_cleanup_json_ struct json_object *all = NULL;

	for (size_t i = 0; i < n; i++) {
		struct acct_charge_reading r;
		if (acct_charges_read(ch, i, path, &r) < 0)
			continue;
		api_slots_add_bounds(s, i, path, &r);
		if (!all && !(all = json_object_new_object()))
			return NULL;
		struct json_object *o = json_object_new_object();
		if (!o)
			return NULL;
		json_object_object_add(all, acct_charges_resource(ch, i)->name, o);
		json_object_object_add(o, "self", value_json(&r.self));
		json_object_object_add(o, "subtree", value_json(&r.subtree));
		struct acct_charges_avg_reading ar;
		if (acct_charges_avg_read(avg, i, path, now_us, &ar) == 0) {
			struct json_object *a = averages_json(&ar);
			if (!a)
				return NULL;
			json_object_object_add(o, "averages", a);
		}
	}
	return TAKE_PTR(all);
}

uint64_t api_charges_hash(struct acct_charges *ch, struct acct_charges_avg *avg, const char *path, uint64_t h)
{
	size_t n = acct_charges_nr_resources(ch);

	for (size_t i = 0; i < n; i++) {
		struct acct_charge_reading r;
		bool known = acct_charges_read(ch, i, path, &r) == 0;
		h = hash_fnv1a_u64(h, known);
		if (known) {
			h = hash_fnv1a_u64(h, (uint64_t)r.self.value);
			h = hash_fnv1a_u64(h, (uint64_t)r.subtree.value);
		}
		/* The averages as of their last step (not their age), as the
		 * record's load averages count (record_hash()): a step that
		 * moves them is a change of the record. */
		struct acct_charges_avg_reading ar;
		if (acct_charges_avg_read(avg, i, path, 0, &ar) == 0) {
			for (int k = 0; k < _ACCT_AVG_MAX; k++) {
				uint64_t bits;
				memcpy(&bits, &ar.avg[k], sizeof(bits));
				h = hash_fnv1a_u64(h, bits);
			}
			h = hash_fnv1a_u64(h, ar.covered_us);
		}
	}
	return h;
}

static uint64_t distance(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

bool api_charges_compare(struct request *rq, const char *path, const char *qname, int64_t threshold, int *ret)
{
	struct manager *m = rq->c->s->m;
	struct acct_charges *ch = manager_charges(m);
	char name[128];

	if (strncmp(qname, CHARGES_PREFIX, strlen(CHARGES_PREFIX)) != 0)
		return false;
	const char *rest = qname + strlen(CHARGES_PREFIX), *dot = strchr(rest, '.');
	bool self = dot && strcmp(dot, ".self") == 0;
	size_t len = dot ? (size_t)(dot - rest) : strlen(rest);
	int res = -ENOENT;
	if (len < sizeof(name) && (!dot || self)) {
		memcpy(name, rest, len);
		name[len] = '\0';
		res = acct_charges_resource_index(ch, name);
	}
	if (res < 0) {
		*ret = api_reply_error_string(rq, RES_NO_SUCH_QUANTITY, "quantity", qname);
		return true;
	}
	rcu_read_lock();
	bool tracked = acct_ledger_find(manager_ledger(m), path) != NULL;
	rcu_read_unlock();
	if (!tracked) {
		*ret = api_no_such_cgroup(rq, path);
		return true;
	}
	/* Nothing ever charged: exactly 0. The slots at and below path folded
	 * first, their bounds added to the engine's (docs/charges.md, "Charge
	 * slots"): a precise read is precise about the engine only. */
	struct acct_charge_reading r = { 0 };
	bool precise = false;
	api_slots_fold_under(rq->c->s, path);
	if (acct_charges_read(ch, (size_t)res, path, &r) == 0) {
		api_slots_add_bounds(rq->c->s, (size_t)res, path, &r);
		struct acct_reading *v = self ? &r.self : &r.subtree;
		if (distance(v->value, threshold) <= v->bound) {
			(void)acct_charges_read_precise(ch, (size_t)res, path, &r);
			api_slots_add_bounds(rq->c->s, (size_t)res, path, &r);
			precise = true;
		}
	}
	struct acct_reading v = self ? r.self : r.subtree;
	int cmp = v.value > threshold ? 1 : v.value < threshold ? -1 : 0;
	_cleanup_json_ struct json_object *p = json_object_new_object();
	struct json_object *val = value_json(&v);
	if (!p || !val) {
		json_object_put(val);
		*ret = -ENOMEM;
		return true;
	}
	json_object_object_add(p, "result", json_object_new_string(cmp > 0 ? "above" : cmp < 0 ? "below" : "equal"));
	json_object_object_add(p, "value", val);
	json_object_object_add(p, "precise", json_object_new_boolean(precise));
	/* A precise read with charges in flight keeps a bound that may hold
	 * the threshold. */
	if (v.bound > 0 && distance(v.value, threshold) <= v.bound)
		json_object_object_add(p, "within_bound", json_object_new_boolean(true));
	*ret = api_reply(rq, TAKE_PTR(p), false);
	return true;
}
