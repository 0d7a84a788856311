/* rows-scan.h - one List reply, as text, straight into rows: the varlink
 * envelope and every CgroupSummary read with the strict pull reader of
 * json-scan.h, no json-c objects built. This is what makes `acctctl list`
 * over 10,000 cgroups cost a few milliseconds of its own (json-c took most
 * of its time: a hash table per object, a string per key; docs/performance.md,
 * "acctctl list against systemd-cgtop"). --json still goes through json-c,
 * since it prints the objects. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "rows.h"

/* Read one List reply message (text[0..size), a JSON object, as from
 * acct_client_receive_text()) and append its cgroups to rs, as rows_parse()
 * would from json-c objects: a summary without a "path" is left out; a
 * member that is null, of an unexpected type or out of range counts as
 * absent; unknown members are skipped (a newer acctd may add some).
 * Returns 0 with *ret_continues set from the reply's "continues";
 * -EPROTO when the reply is a varlink error (rs may have gained rows from
 * it: the caller fails anyway; parse the text again for the error's name and
 * parameters); -EBADMSG when the text is not one strict JSON object, or
 * "parameters" has no "cgroups" array; -ENOMEM. */
int rows_scan_reply(const char *text, size_t size, struct rows *rs, bool *ret_continues);
