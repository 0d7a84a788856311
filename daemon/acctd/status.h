/* status.h - the daemon's status document: what Status() answers (as its
 * "status" parameter) and, with a few state-file-only figures added, the
 * "daemon" object of --state-file. Built in one place so that the two cannot
 * disagree. */
#pragma once

#include <json-c/json.h>

#include "core/ledger.h"
#include "manager.h"

/* The status document of m, as io.acctd.Accounting.Status returns it:
 * version, status line, uptime, cgroup mode and root, live and dead cgroups,
 * intervals, the last fast and slow passes, the budgets in effect (tuned or
 * configured), the tuner, reconciliation, configuration sources and reloads.
 * Returns 0 with a new object in *ret, or -ENOMEM (*ret untouched). */
int daemon_status_json(const struct manager *m, struct json_object **ret);

/* {"bytes", "cpu_us", "tasks"}: budgets as Status() and Tune() report them.
 * Returns a new object, or NULL on -ENOMEM. */
struct json_object *daemon_budgets_json(const struct acct_ledger_budgets *b);
