/* ledger-json.h - the ledger as JSON (json-c), shared by `acctd --dump`, the
 * varlink API and acctctl, so that every consumer sees the same names.
 *
 * A value is {"value": V, "bound": B, "age_us": A} (bound and age omitted when
 * 0 / unknown), or null when it has never been read. Units are in the names'
 * documentation (docs/ledger.md): bytes, microseconds, counts. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "ledger.h"
#include "reconcile.h"
#include "sampler.h"

/* The full record of one cgroup. `precise` forces precise counter reads.
 * Returns a new object or NULL on allocation failure. */
struct json_object *acct_cgroup_to_json(struct acct_ledger *l, const struct acct_cgroup *cg, uint64_t now_us,
					bool precise, unsigned nr_nodes);

/* The summary used by List: memory, CPU rate, load, PSI some avg10. */
struct json_object *acct_cgroup_summary_json(const struct acct_cgroup *cg, uint64_t now_us);

struct json_object *acct_reconcile_to_json(const struct acct_reconcile_report *rep);
struct json_object *acct_pass_to_json(const struct acct_pass_report *pass);
struct json_object *acct_drift_to_json(const struct acct_drift_hist *h);
