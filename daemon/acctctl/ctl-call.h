/* ctl-call.h - talking to acctd: connect to the address of --address,
 * $ACCTD_ADDRESS or the default, call methods, and turn every failure into
 * one line on stderr and acctctl's exit status. */
#pragma once

#include "client/acct-client.h"

/* How long a call waits for a reply. */
#define CALL_TIMEOUT_MS (60 * 1000)

/* Connect to acctd. Returns EXIT_OK with *ret set, or an exit status
 * (EXIT_USAGE, EXIT_NOT_RUNNING, EXIT_DENIED, EXIT_FAIL) after saying why. */
int connect_daemon(struct acct_client **ret);
/* Say what went wrong with a call (negative errno r, or reply's error when
 * reply is not NULL and has one) and return the exit status for it. */
int call_failed(int r, const struct acct_reply *reply);
/* Connect, call `method` once with params (may be NULL), and return an exit
 * status; *reply holds the reply on EXIT_OK. */
int call_once(const char *method, struct json_object *params, struct acct_reply *reply);
