/* api-charges-views.h - programs' charges in the API's views beside the
 * kernel's values (docs/charges.md, "In the views"): List's entries and
 * Watch's records carry the charged resources of a cgroup that has charges,
 * Compare compares a charged value with a threshold. Internal to
 * daemon/acctd/api-*.c; event loop only. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "api-dispatch.h"
#include "core/charges.h"
#include "core/charges-avg.h"
#include "format/ledger-json.h"

/* List: the entry just written to b from offset `start` (one JSON object) gets
 * a member "charges":{NAME:Charged,...} with the resources charged at or below
 * `path`, read now (age 0: the caller folded the charge slots first,
 * api_slots_fold_all()), each bound with the bounds of the slots it covers
 * added (api_slots_add_bounds()), and for a resource declared averages its
 * "averages" as Get serves them (api_charges_put_averages(), ages at
 * now_us); nothing when there are none. Cost per entry: a lookup in the
 * engine and, averaged, one in the averages per declared resource. */
void api_charges_list_member(struct acct_json_buf *b, size_t start, struct api_server *s, struct acct_charges *ch,
			     struct acct_charges_avg *avg, const char *path, uint64_t now_us);

/* Watch: the same member as a new object (the same reading, the same
 * bounds, the same averages), or NULL when nothing is charged at or below
 * `path` (or out of memory: a record without it). */
struct json_object *api_charges_json(struct api_server *s, struct acct_charges *ch, struct acct_charges_avg *avg,
				     const char *path, uint64_t now_us);

/* Watch's fingerprint: h folded with the charged values of `path` and their
 * averages as of the last step (not their age): a change of either, a step
 * of the averages included, is a change of the record. */
uint64_t api_charges_hash(struct acct_charges *ch, struct acct_charges_avg *avg, const char *path, uint64_t h);

/* Get: ,"averages":{avg1, avg5, avg15, bound, age_us, covered_us,
 * whole_life, warming} of resource `res` at `path` (the IDL's
 * ChargeAverages), nothing when it is not averaged or `path` had no entry at
 * the last step. */
void api_charges_put_averages(struct acct_json_buf *b, struct acct_charges_avg *avg, size_t res, const char *path,
			      uint64_t now_us);

/* Compare on "charges.NAME" (the subtree value) or "charges.NAME.self": true
 * when `qname` names one (then *ret is what to return: 0 answered, or a
 * negative errno), false for any other quantity. As the kernel's
 * __percpu_counter_compare: from the approximate read when the threshold
 * lies outside value +/- bound, otherwise from a precise one. */
bool api_charges_compare(struct request *rq, const char *path, const char *qname, int64_t threshold, int *ret);
