/* history-call.h - what `acctctl usage` and `acctctl history` share: the
 * window of --since/--until as the history methods take it, a streaming call
 * (`more`) collected into one answer, the errors of history in plain words
 * (history off: how to turn it on), times as the tables print them, and CSV
 * fields (RFC 4180). */
#pragma once

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

#include "client/acct-client.h"

/* The error acctd answers when it records no history or cannot read it. */
#define ACCT_ERROR_HISTORY_UNAVAILABLE ACCT_CLIENT_INTERFACE ".HistoryUnavailable"

/* --since when not given: an hour before the end of the window. */
#define HISTORY_DEFAULT_SPAN_US (UINT64_C(3600) * 1000000)
/* The most steps the History method answers (io.acctd.Accounting.varlink). */
#define HISTORY_MAX_STEPS 100000u

/* Add since_us and until_us to params (until: now, read once, when --until
 * was not given), and return the window in *ret_since and *ret_until. Returns EXIT_OK, or EXIT_USAGE after saying why (--since not
 * before --until). */
int history_window(struct json_object *params, int64_t *ret_since, int64_t *ret_until);

/* Call `method` of acctd with `more` and collect the whole answer into *ret:
 * the first reply's parameters, with array `key` holding the elements of
 * that array in every reply, in order. Returns EXIT_OK, or an exit status
 * after saying why on stderr: HistoryUnavailable says that history is off
 * or unreadable (with acctd's reason) and how to turn it on; an acctd
 * without the method says that it is older than acctctl. */
int history_call(struct acct_client *c, const char *method, struct json_object *params, const char *key,
		 struct json_object **ret);

/* A time for tables: local "YYYY-MM-DD HH:MM:SS", or "HH:MM:SS" without
 * `date`. */
struct history_time {
	char s[32];
};
struct history_time history_time(int64_t us, bool date);

/* Print s as one CSV field: as print_text() shows it (control characters
 * and bytes that are not UTF-8 as \xHH, so that a cgroup name is one line
 * and harmless on a terminal), in double quotes with inner quotes doubled
 * when it holds a comma, a quote or a blank at either end (RFC 4180). */
void csv_text(FILE *f, const char *s);
/* Print member `key` of o as a raw number for CSV (an integer exactly, a
 * float in its shortest exact text); nothing when absent. */
void csv_number(FILE *f, struct json_object *o, const char *key);
