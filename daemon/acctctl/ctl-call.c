/* ctl-call.c - connecting to acctd and calling it (see ctl-call.h). */
#include "ctl-call.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "acctctl.h"
#include "ctl-util.h"

int connect_daemon(struct acct_client **ret)
{
	_cleanup_free_ char *dflt = NULL, *path = NULL;
	const char *address = arg_address;
	int r;

	if (!address) {
		if (acct_client_default_address(&dflt) < 0)
			oom_exit();
		address = dflt;
	}
	r = acct_client_address_path(address, &path);
	if (r == -ENOMEM)
		oom_exit();
	if (r < 0) {
		fprintf(stderr, "Invalid address '%s': expected unix:PATH.\n", address);
		return EXIT_USAGE;
	}
	r = acct_client_connect(address, ret);
	switch (r) {
	case 0:
		return EXIT_OK;
	case -ENOENT:
	case -ECONNREFUSED:
	case -ENOTDIR:
		fprintf(stderr, "acctd is not running: %s: %s\n", path, strerror(-r));
		return EXIT_NOT_RUNNING;
	case -EACCES:
	case -EPERM:
		fprintf(stderr, "Permission denied: cannot connect to acctd at %s: %s\n", path, strerror(-r));
		return EXIT_DENIED;
	case -ENOMEM:
		oom_exit();
	default:
		fprintf(stderr, "Failed to connect to acctd at %s: %s\n", path, strerror(-r));
		return EXIT_FAIL;
	}
}

int call_failed(int r, const struct acct_reply *reply)
{
	_cleanup_free_ char *text = NULL;

	if (reply && reply->error) {
		if (strcmp(reply->error, ACCT_ERROR_PERMISSION_DENIED) == 0) {
			fprintf(stderr, "Permission denied: %s needs root or the admin group\n", command_name);
			return EXIT_DENIED;
		}
		if (acct_error_describe(reply->error, reply->parameters, &text) < 0)
			oom_exit();
		print_text(stderr, text); /* may quote a cgroup's name */
		fputc('\n', stderr);
		/* every cgroup path acctctl sends is one its command line gave, and
		 * acctd's normalisation (path.h) is the one that decides */
		if (strcmp(reply->error, ACCT_ERROR_INVALID_CGROUP_PATH) == 0)
			return EXIT_USAGE;
		return EXIT_FAIL;
	}
	switch (r) {
	case -ECONNRESET:
	case -EPIPE:
		fprintf(stderr, "acctd closed the connection.\n");
		break;
	case -ETIMEDOUT:
		fprintf(stderr, "Timed out waiting for acctd.\n");
		break;
	case -EBADMSG:
		fprintf(stderr, "acctd sent a reply that is not a valid varlink message.\n");
		break;
	case -EMSGSIZE:
		fprintf(stderr, "acctd's reply is larger than the limit.\n");
		break;
	case -ENOMEM:
		oom_exit();
	default:
		fprintf(stderr, "Failed to talk to acctd: %s\n", strerror(-r));
	}
	return EXIT_FAIL;
}

int call_once(const char *method, struct json_object *params, struct acct_reply *reply)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	int r;

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	r = acct_client_call(c, method, params, CALL_TIMEOUT_MS, reply);
	if (r < 0)
		return call_failed(r, reply);
	return EXIT_OK;
}
