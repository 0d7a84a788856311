/* history-call.c - the shared part of usage and history (see history-call.h). */
#include "history-call.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acctctl.h"
#include "basic/format-double.h"
#include "ctl-call.h"
#include "ctl-util.h"

int history_window(struct json_object *params, int64_t *ret_since, int64_t *ret_until)
{
	uint64_t until = arg_until_us ? arg_until_us : arg_now_us, since = arg_since_us;

	if (!since)
		since = until > HISTORY_DEFAULT_SPAN_US ? until - HISTORY_DEFAULT_SPAN_US : 0;
	if (since >= until)
		return usage_error("The window is empty: --since (%s) is not before --until (%s).",
				   history_time((int64_t)since, true).s, history_time((int64_t)until, true).s);
	json_add(params, "since_us", json_object_new_int64((int64_t)since));
	/* always: acctd's own "now" would be another reading, a moment later
	 * (a last step of a few hundred microseconds, shown as no data) */
	json_add(params, "until_us", json_object_new_int64((int64_t)until));
	*ret_since = (int64_t)since;
	*ret_until = (int64_t)until;
	return EXIT_OK;
}

/* Say why a history call failed and return the exit status. */
static int history_failed(int r, const struct acct_reply *reply)
{
	if (reply && reply->error && strcmp(reply->error, ACCT_ERROR_HISTORY_UNAVAILABLE) == 0) {
		const char *reason = jstr(reply->parameters, "reason");

		fputs("acctd has no history to answer from", stderr);
		if (reason) {
			fputs(": ", stderr);
			print_text(stderr, reason);
		}
		fputs(".\nHistory is recorded when acctd.conf has [history] enabled=yes (the default) and its\n"
		      "path is writable; see 'man acctd.conf' and 'acctctl status'.\n",
		      stderr);
		return EXIT_FAIL;
	}
	if (reply && reply->error && strcmp(reply->error, ACCT_ERROR_METHOD_NOT_FOUND) == 0) {
		fprintf(stderr, "acctd does not answer %s: it is older than this acctctl and keeps no history.\n",
			command_name);
		return EXIT_FAIL;
	}
	return call_failed(r, reply);
}

int history_call(struct acct_client *c, const char *method, struct json_object *params, const char *key,
		 struct json_object **ret)
{
	_cleanup_json_ struct json_object *answer = NULL;
	struct json_object *all = NULL;
	int r;

	r = acct_client_send(c, method, params, ACCT_CALL_MORE);
	if (r < 0)
		return call_failed(r, NULL);
	for (;;) {
		_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
		struct json_object *a;

		r = acct_client_receive(c, CALL_TIMEOUT_MS, &reply);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return history_failed(r, NULL);
		if (reply.error)
			return history_failed(acct_error_to_errno(reply.error), &reply);
		a = jget(reply.parameters, key);
		if (!a || !json_object_is_type(a, json_type_array))
			return call_failed(-EBADMSG, NULL);
		if (!answer) {
			/* the first reply carries the window (and gaps): keep it whole */
			answer = json_object_get(reply.parameters);
			all = a;
		} else
			for (size_t i = 0; i < json_object_array_length(a); i++)
				if (json_object_array_add(all, json_object_get(json_object_array_get_idx(a, i))) < 0)
					oom_exit();
		if (!reply.continues)
			break;
	}
	*ret = TAKE_PTR(answer);
	return EXIT_OK;
}

struct history_time history_time(int64_t us, bool date)
{
	struct history_time b;
	time_t t = (time_t)(us / 1000000);
	struct tm tm;

	if (!localtime_r(&t, &tm) || strftime(b.s, sizeof(b.s), date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm) == 0)
		snprintf(b.s, sizeof(b.s), "@%" PRId64, us / 1000000);
	return b;
}

void csv_text(FILE *f, const char *s)
{
	_cleanup_free_ char *text = NULL;
	size_t size = 0, n;
	FILE *m = open_memstream(&text, &size);

	if (!m)
		oom_exit();
	print_text(m, s);
	if (fclose(m) != 0)
		oom_exit();
	n = strlen(text);
	if (!strpbrk(text, ",\"") && (n == 0 || (text[0] != ' ' && text[n - 1] != ' '))) {
		fputs(text, f);
		return;
	}
	fputc('"', f);
	for (const char *p = text; *p; p++) {
		if (*p == '"')
			fputc('"', f);
		fputc(*p, f);
	}
	fputc('"', f);
}

void csv_number(FILE *f, struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);
	char buf[FORMAT_DOUBLE_MAX];

	if (!v)
		return;
	if (json_object_is_type(v, json_type_int))
		fprintf(f, "%" PRId64, json_object_get_int64(v));
	else if (json_object_is_type(v, json_type_double) && isfinite(json_object_get_double(v))) {
		format_double_shortest(json_object_get_double(v), buf);
		fputs(buf, f);
	}
}
