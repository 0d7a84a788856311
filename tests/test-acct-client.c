/* test-acct-client.c - unit tests of the client library against a peer the
 * test scripts on the other end of a socketpair: addresses, the calls it
 * sends, replies split anywhere or pipelined, streams, errors as errnos and
 * words, malformed and oversized replies, a closed peer, timeouts and
 * signals; the charging calls (issue 32): Charge and ChargeBatch as they go on
 * the wire (batches split under the message limit, halved when refused), and
 * OpenChargeSlot's memfd sent by the daemon's own writer (reply-fds.c) over a
 * real socketpair with SCM_RIGHTS, mapped and charged, and descriptors that
 * come with other replies closed; the error of a thread's last charging call
 * (acct_client_last_error()), per thread on one connection. No daemon needed. Long because every
 * case drives the same scripted peer (its threads, framing and fd passing),
 * which a split would have to repeat. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "acct-client.h"
#include "charge-slot-owner.h"
#include "reply-fds.h"
#include "util.h"

/* A client on one end of a socketpair; the test plays acctd on *peer. */
static struct acct_client *pair(int *peer)
{
	struct acct_client *c = NULL;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(acct_client_new_from_fd(sv[0], &c), 0);
	*peer = sv[1];
	return c;
}

static void peer_write(int fd, const char *data, size_t size)
{
	while (size > 0) {
		ssize_t k = write(fd, data, size);
		assert_true(k > 0);
		data += k;
		size -= (size_t)k;
	}
}

/* Send a reply as text; the NUL is added. */
static void peer_send(int fd, const char *json)
{
	peer_write(fd, json, strlen(json) + 1);
}

/* Read one message (up to its NUL) and parse it. */
static struct json_object *peer_read(int fd)
{
	char buf[65536];
	size_t n = 0;

	for (;;) {
		assert_true(n < sizeof(buf));
		ssize_t k = read(fd, buf + n, 1);
		assert_int_equal(k, 1);
		if (buf[n] == '\0')
			break;
		n++;
	}
	struct json_object *o = json_tokener_parse(buf);
	assert_non_null(o);
	return o;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

/* ---- addresses ------------------------------------------------------------------ */

static void test_address_path(void **state)
{
	static const struct {
		const char *address;
		int r;
		const char *path;
	} cases[] = {
		{ "unix:/run/acctd/io.acctd", 0, "/run/acctd/io.acctd" },
		{ "unix:/run/acctd/io.acctd;mode=0666", 0, "/run/acctd/io.acctd" },
		{ "/tmp/x.sock", 0, "/tmp/x.sock" },
		{ "unix:@acctd-test", 0, "@acctd-test" },
		{ "tcp:127.0.0.1:1234", -EPROTONOSUPPORT, NULL },
		{ "exec:/usr/bin/acctd", -EPROTONOSUPPORT, NULL },
		{ "unix:", -EINVAL, NULL },
		{ "unix:relative/path", -EINVAL, NULL },
		{ "unix:;mode=0666", -EINVAL, NULL },
		{ "", -EINVAL, NULL },
		{ "relative", -EINVAL, NULL },
	};
	char *p = NULL;
	char longpath[200];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = NULL;
		assert_int_equal(acct_client_address_path(cases[i].address, &p), cases[i].r);
		if (cases[i].path)
			assert_string_equal(p, cases[i].path);
		else
			assert_null(p);
		free(p);
	}
	assert_int_equal(acct_client_address_path(NULL, &p), -EINVAL);
	/* longer than sun_path */
	memset(longpath, 'a', sizeof(longpath));
	memcpy(longpath, "unix:/", 6);
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(acct_client_address_path(longpath, &p), -EINVAL);
}

static void test_default_address(void **state)
{
	char *a = NULL;
	char dir[] = "/tmp/test-acct-client-XXXXXX";

	assert_int_equal(setenv("ACCTD_ADDRESS", "unix:/somewhere/else", 1), 0);
	assert_int_equal(acct_client_default_address(&a), 0);
	assert_string_equal(a, "unix:/somewhere/else");
	free(a);

	/* empty means unset */
	assert_int_equal(setenv("ACCTD_ADDRESS", "", 1), 0);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(setenv("XDG_RUNTIME_DIR", dir, 1), 0);
	assert_int_equal(acct_client_default_address(&a), 0);
	/* root, or no per-user daemon: the system socket */
	assert_string_equal(a, "unix:" ACCT_CLIENT_SYSTEM_SOCKET);
	free(a);

	if (geteuid() != 0) {
		/* a per-user daemon's socket wins when it exists */
		char sockdir[300], sockpath[320];
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd;

		snprintf(sockdir, sizeof(sockdir), "%s/acctd", dir);
		snprintf(sockpath, sizeof(sockpath), "%s/io.acctd", sockdir);
		assert_int_equal(mkdir(sockdir, 0700), 0);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		assert_true(strlen(sockpath) < sizeof(sa.sun_path));
		memcpy(sa.sun_path, sockpath, strlen(sockpath) + 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(acct_client_default_address(&a), 0);
		assert_true(strncmp(a, "unix:", 5) == 0);
		assert_string_equal(a + 5, sockpath);
		free(a);
		close(fd);
		unlink(sockpath);
		rmdir(sockdir);
	} else
		print_message("running as root: the per-user socket rule is not exercised\n");
	rmdir(dir);
	unsetenv("ACCTD_ADDRESS");
}

static void test_connect(void **state)
{
	char dir[] = "/tmp/test-acct-client-XXXXXX", path[200], address[220];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct acct_client *c = NULL;
	int lfd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sock", dir);
	snprintf(address, sizeof(address), "unix:%s", path);

	/* nothing there: acctd is not running */
	assert_int_equal(acct_client_connect(address, &c), -ENOENT);
	assert_null(c);
	assert_int_equal(acct_client_connect("tcp:1.2.3.4:5", &c), -EPROTONOSUPPORT);

	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* bound but not listening: refused */
	assert_int_equal(acct_client_connect(address, &c), -ECONNREFUSED);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(acct_client_connect(address, &c), 0);
	assert_non_null(c);
	assert_true(acct_client_fd(c) >= 0);

	/* the call reaches the listener */
	int afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	assert_int_equal(acct_client_send(c, "Status", NULL, 0), 0);
	struct json_object *call = peer_read(afd);
	assert_string_equal(str(call, "method"), "io.acctd.Accounting.Status");
	json_object_put(call);

	c = acct_client_free(c);
	assert_null(c);
	assert_null(acct_client_free(NULL));
	close(afd);
	close(lfd);
	unlink(path);
	rmdir(dir);
}

/* ---- calls --------------------------------------------------------------------- */

static void test_send_call(void **state)
{
	int peer;
	struct acct_client *c = pair(&peer);
	struct json_object *params = json_object_new_object(), *call, *v;

	json_object_object_add(params, "prefix", json_object_new_string("/system.slice"));
	json_object_object_add(params, "depth", json_object_new_int(2));

	assert_int_equal(acct_client_send(c, "List", params, ACCT_CALL_MORE), 0);
	call = peer_read(peer);
	assert_string_equal(str(call, "method"), "io.acctd.Accounting.List");
	assert_true(json_object_object_get_ex(call, "more", &v) && json_object_get_boolean(v));
	assert_false(json_object_object_get_ex(call, "oneway", NULL));
	assert_true(json_object_object_get_ex(call, "parameters", &v));
	assert_string_equal(str(v, "prefix"), "/system.slice");
	json_object_put(call);
	/* parameters were not consumed */
	assert_int_equal(json_object_object_length(params), 2);

	/* a full name goes as it is; no parameters */
	assert_int_equal(acct_client_send(c, "org.varlink.service.GetInfo", NULL, ACCT_CALL_ONEWAY), 0);
	call = peer_read(peer);
	assert_string_equal(str(call, "method"), "org.varlink.service.GetInfo");
	assert_true(json_object_object_get_ex(call, "oneway", &v) && json_object_get_boolean(v));
	assert_false(json_object_object_get_ex(call, "more", NULL));
	json_object_put(call);

	/* refused before anything is sent */
	assert_int_equal(acct_client_send(c, "List", NULL, ACCT_CALL_MORE | ACCT_CALL_ONEWAY), -EINVAL);
	assert_int_equal(acct_client_send(c, "", NULL, 0), -EINVAL);
	assert_int_equal(acct_client_send(c, NULL, NULL, 0), -EINVAL);
	struct json_object *arr = json_object_new_array();
	assert_int_equal(acct_client_send(c, "List", arr, 0), -EINVAL);
	json_object_put(arr);

	json_object_put(params);
	acct_client_free(c);
	close(peer);
}

static void test_call_reply(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	int peer;
	struct acct_client *c = pair(&peer);
	struct json_object *v;

	/* the peer answers ahead of time: the reply waits in the socket */
	peer_send(peer, "{\"parameters\":{\"status\":{\"version\":\"0.1.0\"}}}");
	assert_int_equal(acct_client_call(c, "Status", NULL, 1000, &reply), 0);
	assert_null(reply.error);
	assert_false(reply.continues);
	assert_true(json_object_object_get_ex(reply.parameters, "status", &v));
	assert_string_equal(str(v, "version"), "0.1.0");
	json_object_put(peer_read(peer));

	/* parameters null or missing: {} */
	peer_send(peer, "{\"parameters\":null}");
	assert_int_equal(acct_client_call(c, "Reload", NULL, 1000, &reply), 0);
	assert_non_null(reply.parameters);
	assert_int_equal(json_object_object_length(reply.parameters), 0);
	json_object_put(peer_read(peer));
	peer_send(peer, "{}");
	assert_int_equal(acct_client_call(c, "Reload", NULL, 1000, &reply), 0);
	assert_int_equal(json_object_object_length(reply.parameters), 0);
	json_object_put(peer_read(peer));

	acct_client_free(c);
	close(peer);
}

static void test_pipelined_and_split(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	static const char two[] = "{\"parameters\":{\"n\":1},\"continues\":true}\0{\"parameters\":{\"n\":2}}";
	int peer;
	struct acct_client *c = pair(&peer);
	struct json_object *v;

	/* two replies in one write */
	peer_write(peer, two, sizeof(two));
	assert_int_equal(acct_client_receive(c, 1000, &reply), 0);
	assert_true(reply.continues);
	assert_true(json_object_object_get_ex(reply.parameters, "n", &v));
	assert_int_equal(json_object_get_int(v), 1);
	/* the second is already buffered: no wait */
	assert_int_equal(acct_client_receive(c, 0, &reply), 0);
	assert_false(reply.continues);
	assert_true(json_object_object_get_ex(reply.parameters, "n", &v));
	assert_int_equal(json_object_get_int(v), 2);

	/* a reply arriving in pieces: nothing until its NUL */
	const char *msg = "{\"parameters\":{\"cgroup\":{\"path\":\"/a\"}}}";
	size_t half = strlen(msg) / 2;
	peer_write(peer, msg, half);
	assert_int_equal(acct_client_receive(c, 50, &reply), -ETIMEDOUT);
	assert_null(reply.parameters);
	peer_write(peer, msg + half, strlen(msg) - half);
	assert_int_equal(acct_client_receive(c, 50, &reply), -ETIMEDOUT);
	peer_write(peer, "", 1);
	assert_int_equal(acct_client_receive(c, 1000, &reply), 0);
	assert_true(json_object_object_get_ex(reply.parameters, "cgroup", &v));

	/* byte by byte */
	msg = "{\"parameters\":{\"x\":[1,2,3]},\"continues\":false}";
	for (size_t i = 0; i <= strlen(msg); i++)
		peer_write(peer, msg + i, 1);
	assert_int_equal(acct_client_receive(c, 1000, &reply), 0);
	assert_true(json_object_object_get_ex(reply.parameters, "x", &v));
	assert_int_equal(json_object_array_length(v), 3);

	acct_client_free(c);
	close(peer);
}

static void test_errors(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_free_ char *text = NULL;
	int peer;
	struct acct_client *c = pair(&peer);

	peer_send(peer, "{\"error\":\"io.acctd.Accounting.NoSuchCgroup\",\"parameters\":{\"cgroup\":\"/foo\"}}");
	assert_int_equal(acct_client_call(c, "Get", NULL, 1000, &reply), -ENOENT);
	assert_string_equal(reply.error, ACCT_ERROR_NO_SUCH_CGROUP);
	assert_int_equal(acct_error_describe(reply.error, reply.parameters, &text), 0);
	assert_string_equal(text, "No such cgroup: /foo");
	json_object_put(peer_read(peer));

	peer_send(peer, "{\"error\":\"org.varlink.service.PermissionDenied\"}");
	assert_int_equal(acct_client_call(c, "Tune", NULL, 1000, &reply), -EACCES);
	assert_string_equal(reply.error, ACCT_ERROR_PERMISSION_DENIED);
	assert_non_null(reply.parameters);
	json_object_put(peer_read(peer));

	acct_client_free(c);
	close(peer);
}

static void test_error_words(void **state)
{
	static const struct {
		const char *name, *params, *text;
		int errnum;
	} cases[] = {
		{ ACCT_ERROR_NO_SUCH_CGROUP, "{\"cgroup\":\"/a/b\"}", "No such cgroup: /a/b", ENOENT },
		{ ACCT_ERROR_NO_SUCH_CGROUP, NULL, "No such cgroup", ENOENT },
		{ ACCT_ERROR_INVALID_CGROUP_PATH, "{\"cgroup\":\"/../x\",\"reason\":\"leaves the root\"}",
		  "Invalid cgroup path '/../x': leaves the root", EINVAL },
		{ ACCT_ERROR_NO_SUCH_QUANTITY, "{\"quantity\":\"bogus\"}", "No such quantity: bogus", ENODATA },
		{ ACCT_ERROR_RELOAD_FAILED, "{\"reason\":\"a.conf:3: bad\"}", "Reload failed: a.conf:3: bad", EIO },
		{ ACCT_ERROR_PERMISSION_DENIED, "{}", "Permission denied", EACCES },
		{ ACCT_ERROR_INVALID_PARAMETER, "{\"parameter\":\"depth\"}", "Invalid parameter: depth", EINVAL },
		{ ACCT_ERROR_METHOD_NOT_FOUND, "{\"method\":\"io.acctd.Accounting.Nope\"}",
		  "acctd does not know the method io.acctd.Accounting.Nope (is it older than this client?)", ENXIO },
		{ ACCT_ERROR_INTERFACE_NOT_FOUND, "{\"interface\":\"x.y\"}", "acctd does not provide the interface x.y",
		  EADDRNOTAVAIL },
		{ ACCT_ERROR_METHOD_NOT_IMPLEMENTED, NULL, "acctd does not implement this method", ENOTTY },
		{ ACCT_ERROR_EXPECTED_MORE, NULL, "The method must be called with \"more\" (a stream of replies)", EBADE },
		{ ACCT_ERROR_RESOURCE_LIMIT_EXCEEDED, "{\"limit\":\"max_queries_per_user\",\"value\":4}",
		  "Too many history queries of this user at once (at most 4, acctd.conf's [api] max_queries_per_user): "
		  "try again when one has finished",
		  EBADR },
		{ ACCT_ERROR_RESOURCE_LIMIT_EXCEEDED, "{\"limit\":\"max_watches_per_user\",\"value\":16}",
		  "acctd's limit max_watches_per_user (16, acctd.conf's [api] section) does not allow the call", EBADR },
		{ ACCT_ERROR_RESOURCE_LIMIT_EXCEEDED, "{}", "A resource limit of acctd does not allow the call", EBADR },
		{ "com.example.Odd", "{\"x\":1}", "com.example.Odd {\"x\":1}", EBADR },
		{ "com.example.Odd", "{}", "com.example.Odd", EBADR },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *p = cases[i].params ? json_tokener_parse(cases[i].params) : NULL;
		char *text = NULL;

		assert_int_equal(acct_error_to_errno(cases[i].name), -cases[i].errnum);
		assert_int_equal(acct_error_describe(cases[i].name, p, &text), 0);
		assert_string_equal(text, cases[i].text);
		free(text);
		json_object_put(p);
	}
	assert_int_equal(acct_error_to_errno(NULL), -EBADR);
}

static void test_collect_stream(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply err = { 0 };
	int peer;
	struct acct_client *c = pair(&peer);
	struct json_object *all = NULL, *call, *v;

	peer_send(peer, "{\"parameters\":{\"cgroups\":[{\"path\":\"/\"},{\"path\":\"/a\"}]},\"continues\":true}");
	peer_send(peer, "{\"parameters\":{\"cgroups\":[]},\"continues\":true}");
	peer_send(peer, "{\"parameters\":{\"cgroups\":[{\"path\":\"/b\"}]}}");
	assert_int_equal(acct_client_call_collect(c, "List", NULL, "cgroups", 1000, &all, &err), 0);
	assert_int_equal(json_object_array_length(all), 3);
	assert_string_equal(str(json_object_array_get_idx(all, 2), "path"), "/b");
	json_object_put(all);
	call = peer_read(peer);
	assert_true(json_object_object_get_ex(call, "more", &v) && json_object_get_boolean(v));
	json_object_put(call);

	/* a daemon that answers in one piece */
	peer_send(peer, "{\"parameters\":{\"cgroups\":[{\"path\":\"/\"}]}}");
	assert_int_equal(acct_client_call_collect(c, "List", NULL, "cgroups", 1000, &all, NULL), 0);
	assert_int_equal(json_object_array_length(all), 1);
	json_object_put(all);
	json_object_put(peer_read(peer));

	/* an error after part of the stream: the error wins */
	all = NULL;
	peer_send(peer, "{\"parameters\":{\"cgroups\":[{\"path\":\"/\"}]},\"continues\":true}");
	peer_send(peer, "{\"error\":\"io.acctd.Accounting.InvalidCgroupPath\",\"parameters\":{\"cgroup\":\"x\",\"reason\":\"r\"}}");
	assert_int_equal(acct_client_call_collect(c, "List", NULL, "cgroups", 1000, &all, &err), -EINVAL);
	assert_null(all);
	assert_string_equal(err.error, ACCT_ERROR_INVALID_CGROUP_PATH);
	json_object_put(peer_read(peer));

	/* a reply without the array */
	peer_send(peer, "{\"parameters\":{\"other\":1}}");
	assert_int_equal(acct_client_call_collect(c, "List", NULL, "cgroups", 1000, &all, NULL), -EBADMSG);
	json_object_put(peer_read(peer));

	acct_client_free(c);
	close(peer);
}

static void test_bad_replies(void **state)
{
	static const char *const bad[] = {
		"not json",
		"[1,2,3]",
		"{\"parameters\":[]}",
		"{\"continues\":\"yes\"}",
		"{\"error\":42}",
		"{\"error\":\"not a qualified name\"}",
		"{\"error\":\"a.b.C\",\"continues\":true}",
		"{\"parameters\":{}} trailing",
		"{\"parameters\":{\"s\":\"\xff\xfe\"}}",
	};
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	int peer;
	struct acct_client *c = pair(&peer);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		peer_send(peer, bad[i]);
		assert_int_equal(acct_client_receive(c, 1000, &reply), -EBADMSG);
		assert_null(reply.parameters);
	}
	/* the stream stays in sync after a bad message */
	peer_send(peer, "{\"parameters\":{\"ok\":true}}");
	assert_int_equal(acct_client_receive(c, 1000, &reply), 0);
	assert_true(json_object_object_get_ex(reply.parameters, "ok", NULL));

	acct_client_free(c);
	close(peer);
}

static void test_closed_peer(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	int peer;
	struct acct_client *c = pair(&peer);

	/* half a reply, then the daemon goes away */
	peer_write(peer, "{\"parameters\":", 14);
	close(peer);
	assert_int_equal(acct_client_receive(c, 1000, &reply), -ECONNRESET);
	assert_int_equal(acct_client_call(c, "Status", NULL, 1000, &reply), -EPIPE);
	assert_null(reply.error);
	acct_client_free(c);
}

/* Replies as text (acct_client_receive_text()): each message's bytes exactly,
 * split or pipelined, NUL-terminated, unparsed (a malformed one too: the
 * caller's reader judges it); acct_reply_parse() turns one into the reply
 * acct_client_receive() would have given. */
static void test_receive_text(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	const char *a = "{\"parameters\":{\"cgroups\":[]},\"continues\":true}", *b = "{\"parameters\":{}}";
	const char *err = "{\"error\":\"io.acctd.Accounting.NoSuchCgroup\",\"parameters\":{\"cgroup\":\"/x\"}}";
	const char *text;
	size_t size;
	int peer;
	struct acct_client *c = pair(&peer);

	/* two replies in one write, then one in two halves */
	char both[256];
	size_t la = strlen(a) + 1, lb = strlen(b) + 1;
	memcpy(both, a, la);
	memcpy(both + la, b, lb);
	peer_write(peer, both, la + lb);
	assert_int_equal(acct_client_receive_text(c, 1000, &text, &size), 0);
	assert_int_equal(size, la - 1);
	assert_string_equal(text, a);
	assert_int_equal(acct_client_receive_text(c, 1000, &text, &size), 0);
	assert_string_equal(text, b);
	peer_write(peer, err, 10);
	assert_int_equal(acct_client_receive_text(c, 50, &text, &size), -ETIMEDOUT);
	peer_write(peer, err + 10, strlen(err) + 1 - 10);
	assert_int_equal(acct_client_receive_text(c, 1000, &text, &size), 0);
	assert_int_equal(size, strlen(err));
	assert_int_equal(acct_reply_parse(text, size, &reply), 0);
	assert_string_equal(reply.error, ACCT_ERROR_NO_SUCH_CGROUP);
	assert_int_equal(acct_error_to_errno(reply.error), -ENOENT);
	assert_int_equal(acct_reply_parse("{\"parameters\":", 14, &reply), -EBADMSG);
	assert_null(reply.error);
	/* not JSON: handed out as it is */
	peer_send(peer, "not json");
	assert_int_equal(acct_client_receive_text(c, 1000, &text, &size), 0);
	assert_string_equal(text, "not json");
	close(peer);
	assert_int_equal(acct_client_receive_text(c, 1000, &text, &size), -ECONNRESET);
	acct_client_free(c);
}

static void test_oversized(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	int peer, status;
	struct acct_client *c = pair(&peer);
	pid_t pid;

	assert_int_equal(acct_client_set_max_message(c, 1000), 0); /* raised to the 64 KiB floor */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* one good reply, then 200 KiB that never end */
		static char junk[200 << 10];
		const char *ok = "{\"parameters\":{\"ok\":1}}";
		(void)!write(peer, ok, strlen(ok) + 1);
		memset(junk, ' ', sizeof(junk));
		junk[0] = '{';
		for (size_t off = 0; off < sizeof(junk);) {
			ssize_t k = write(peer, junk + off, sizeof(junk) - off);
			if (k <= 0)
				_exit(0); /* the client gave up: fine */
			off += (size_t)k;
		}
		_exit(0);
	}
	close(peer);
	/* the good reply before the flood still comes out */
	assert_int_equal(acct_client_receive(c, 5000, &reply), 0);
	assert_true(json_object_object_get_ex(reply.parameters, "ok", NULL));
	assert_int_equal(acct_client_receive(c, 5000, &reply), -EMSGSIZE);
	acct_client_free(c);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void on_alarm(int sig)
{
}

static void test_interrupted(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval it = { .it_value = { .tv_usec = 50000 } };
	int peer;
	struct acct_client *c = pair(&peer);

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_int_equal(acct_client_receive(c, 5000, &reply), -EINTR);
	/* nothing lost: the reply after the signal arrives */
	peer_send(peer, "{\"parameters\":{\"after\":1}}");
	assert_int_equal(acct_client_receive(c, 1000, &reply), 0);
	assert_true(json_object_object_get_ex(reply.parameters, "after", NULL));
	acct_client_free(c);
	close(peer);
}

static void test_set_max_message_busy(void **state)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	int peer;
	struct acct_client *c = pair(&peer);

	peer_write(peer, "{\"param", 7);
	assert_int_equal(acct_client_receive(c, 50, &reply), -ETIMEDOUT);
	assert_int_equal(acct_client_set_max_message(c, 1 << 20), -EBUSY);
	acct_client_free(c);
	close(peer);
}

static void test_reply_clear(void **state)
{
	struct acct_reply r = { 0 };

	acct_reply_clear(&r); /* zeroed: fine */
	acct_reply_clear(NULL);
	r.parameters = json_object_new_object();
	r.error = strdup("a.b.C");
	r.continues = true;
	acct_reply_clear(&r);
	assert_null(r.parameters);
	assert_null(r.error);
	assert_false(r.continues);
}

/* ---- charges -------------------------------------------------------------------- */

static int64_t int_of(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	assert_true(json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int));
	return json_object_get_int64(v);
}

static struct json_object *params_of(struct json_object *call)
{
	struct json_object *v = NULL;
	assert_true(json_object_object_get_ex(call, "parameters", &v) && json_object_is_type(v, json_type_object));
	return v;
}

static void test_charge_wire(void **state)
{
	int peer;
	struct acct_client *c = pair(&peer);
	struct json_object *call, *p, *v;

	/* The reply may be waiting before the call goes: the client sends, then reads. */
	peer_send(peer, "{\"parameters\":{}}");
	assert_int_equal(acct_client_charge(c, "gpu_memory", -42, "/a.slice/b\"c", ACCT_CHARGE_SYNC), 0);
	call = peer_read(peer);
	assert_string_equal(str(call, "method"), "io.acctd.Accounting.Charge");
	assert_false(json_object_object_get_ex(call, "more", NULL));
	assert_false(json_object_object_get_ex(call, "oneway", NULL));
	p = params_of(call);
	assert_string_equal(str(p, "resource"), "gpu_memory");
	assert_true(int_of(p, "delta") == -42);
	assert_string_equal(str(p, "cgroup"), "/a.slice/b\"c");
	assert_true(json_object_object_get_ex(p, "sync", &v) && json_object_get_boolean(v));
	json_object_put(call);

	/* No cgroup, no sync: neither key is sent (acctd's defaults apply). */
	peer_send(peer, "{}");
	assert_int_equal(acct_client_charge(c, "slots", INT64_MIN, NULL, 0), 0);
	call = peer_read(peer);
	p = params_of(call);
	assert_true(int_of(p, "delta") == INT64_MIN);
	assert_false(json_object_object_get_ex(p, "cgroup", NULL));
	assert_false(json_object_object_get_ex(p, "sync", NULL));
	assert_int_equal(json_object_object_length(p), 2);
	json_object_put(call);

	/* acctd's errors as errnos. */
	peer_send(peer, "{\"error\":\"io.acctd.Accounting.NoSuchResource\",\"parameters\":{\"resource\":\"x\"}}");
	assert_int_equal(acct_client_charge(c, "x", 1, NULL, 0), -ENOKEY);
	json_object_put(peer_read(peer));
	peer_send(peer, "{\"error\":\"org.varlink.service.PermissionDenied\"}");
	assert_int_equal(acct_client_charge(c, "x", 1, "/other", 0), -EACCES);
	json_object_put(peer_read(peer));
	peer_send(peer, "{\"error\":\"io.acctd.Accounting.NoSuchCgroup\",\"parameters\":{\"cgroup\":\"/gone\"}}");
	assert_int_equal(acct_client_charge(c, "x", 1, "/gone", 0), -ENOENT);
	json_object_put(peer_read(peer));

	/* Refused before anything is sent. */
	assert_int_equal(acct_client_charge(c, NULL, 1, NULL, 0), -EINVAL);
	assert_int_equal(acct_client_charge(c, "", 1, NULL, 0), -EINVAL);
	assert_int_equal(acct_client_charge(c, "x", 1, NULL, 0x80), -EINVAL);
	struct acct_charge bad[] = { { .resource = "x", .delta = 1 }, { .resource = NULL, .delta = 2 } };
	size_t applied = 99;
	assert_int_equal(acct_client_charge_batch(c, bad, 2, &applied), -EINVAL);
	assert_int_equal(acct_client_charge_batch(c, NULL, 1, &applied), -EINVAL);
	assert_int_equal(acct_client_charge_batch(c, NULL, 0, &applied), 0);
	assert_true(applied == 0);
	char b;
	assert_true(recv(peer, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN);

	char *words = NULL;
	struct json_object *params = json_tokener_parse("{\"resource\":\"gpu_memory\"}");
	assert_int_equal(acct_error_describe(ACCT_ERROR_NO_SUCH_RESOURCE, params, &words), 0);
	json_object_put(params);
	assert_string_equal(words, "No such resource: gpu_memory (resources are declared in acctd.conf's [resource.NAME] sections, and one added since acctd started applies at its next start)");
	free(words);
	acct_client_free(c);
	close(peer);
}

/* A fake acctd for ChargeBatch: reads calls in the real wire format, checks
 * each against the client's limits, and answers {"applied": n}, or refuses
 * messages of more than `refuse_over` charges as acctd's reader does. */
struct batch_server {
	int fd;
	size_t refuse_over; /* 0: never */
	size_t messages, refused, charges, largest;
	int64_t sum;
	bool in_order;
	const char *cgroup; /* every "cgroup" given must read back as this */
	bool cgroups_equal;
};

static void *batch_serve(void *userdata)
{
	struct batch_server *s = userdata;
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	int64_t next = 0;

	s->in_order = true;
	s->cgroups_equal = true;
	for (;;) {
		ssize_t k = read(s->fd, buf + n, cap - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		char *nul;
		while ((nul = memchr(buf, 0, n))) {
			size_t len = (size_t)(nul - buf);
			struct json_object *call = json_tokener_parse(buf), *a = NULL;
			s->largest = MAX(s->largest, len);
			if (call && json_object_object_get_ex(call, "parameters", &a))
				json_object_object_get_ex(a, "charges", &a);
			size_t items = a ? json_object_array_length(a) : 0;
			char reply[128];
			if (s->refuse_over && items > s->refuse_over) {
				s->refused++;
				snprintf(reply, sizeof(reply), "{\"error\":\"io.acctd.Accounting.ResourceLimitExceeded\","
								"\"parameters\":{\"limit\":\"max_watch_cgroups\"}}");
			} else {
				s->messages++;
				for (size_t i = 0; i < items; i++) {
					struct json_object *o = json_object_array_get_idx(a, i), *d, *cg;
					json_object_object_get_ex(o, "delta", &d);
					if (s->cgroup && json_object_object_get_ex(o, "cgroup", &cg))
						s->cgroups_equal &= strcmp(json_object_get_string(cg), s->cgroup) == 0;
					int64_t delta = json_object_get_int64(d);
					s->in_order &= delta == next++;
					s->sum += delta;
					s->charges++;
				}
				snprintf(reply, sizeof(reply), "{\"parameters\":{\"applied\":%zu}}", items);
			}
			json_object_put(call);
			if (write(s->fd, reply, strlen(reply) + 1) < 0)
				break;
			memmove(buf, nul + 1, n - len - 1);
			n -= len + 1;
		}
	}
	free(buf);
	return NULL;
}

static void test_charge_batch_split(void **state)
{
	const size_t n = 5000;
	struct acct_charge *ch = calloc(n, sizeof(*ch));
	char cgroup[301];
	int64_t want = 0;

	/* Long names, and a quote that escapes: a message must still fit. */
	memset(cgroup, 'q', sizeof(cgroup) - 1);
	cgroup[0] = '/';
	cgroup[7] = '"';
	/* and those the text writer escapes otherwise (libacct-client writes
	 * ChargeBatch messages without json-c) */
	cgroup[9] = '\\';
	cgroup[11] = '\n';
	cgroup[13] = '\x01';
	cgroup[15] = '\x1f';
	cgroup[17] = '/';
	memcpy(cgroup + 19, "\xc3\xa9", 2);
	cgroup[sizeof(cgroup) - 1] = 0;
	for (size_t i = 0; i < n; i++) {
		ch[i] = (struct acct_charge){ .resource = "gpu_memory", .delta = (int64_t)i, .cgroup = i % 2 ? cgroup : NULL };
		want += (int64_t)i;
	}
	for (int refuse = 0; refuse < 2; refuse++) {
		int peer;
		struct acct_client *c = pair(&peer);
		struct batch_server s = { .fd = peer, .refuse_over = refuse ? 20 : 0, .cgroup = cgroup };
		pthread_t t;
		size_t applied = 0;

		assert_int_equal(pthread_create(&t, NULL, batch_serve, &s), 0);
		assert_int_equal(acct_client_charge_batch(c, ch, n, &applied), 0);
		acct_client_free(c); /* the server sees EOF */
		pthread_join(t, NULL);
		close(peer);
		assert_true(applied == n);
		assert_true(s.charges == n && s.sum == want && s.in_order);
		assert_true(s.cgroups_equal);
		assert_true(s.largest <= ACCT_CLIENT_CHARGE_BATCH_BYTES);
		assert_true(s.messages >= n / ACCT_CLIENT_CHARGE_BATCH_ITEMS + 1);
		if (refuse)
			assert_true(s.refused >= 1 && s.messages >= n / 20);
		else
			assert_true(s.refused == 0);
	}
	free(ch);
}

/* Several threads charge on one connection at once: each exchange holds the
 * connection, so every thread gets its own reply (the fake acctd answers
 * with the number of charges of each call, different per thread). */
struct charger {
	struct acct_client *c;
	size_t n;
	int failures;
};

static void *charge_loop(void *userdata)
{
	struct charger *ch = userdata;
	struct acct_charge charges[8];

	for (size_t i = 0; i < ch->n; i++)
		charges[i] = (struct acct_charge){ .resource = "r", .delta = 0 };
	for (int round = 0; round < 300; round++) {
		size_t applied = 0;
		if (acct_client_charge_batch(ch->c, charges, ch->n, &applied) != 0 || applied != ch->n)
			ch->failures++;
	}
	return NULL;
}

static void test_charge_threads(void **state)
{
	int peer;
	struct acct_client *c = pair(&peer);
	struct batch_server s = { .fd = peer };
	struct charger ch[4];
	pthread_t server, t[4];

	assert_int_equal(pthread_create(&server, NULL, batch_serve, &s), 0);
	for (int i = 0; i < 4; i++) {
		ch[i] = (struct charger){ .c = c, .n = (size_t)i + 1 };
		assert_int_equal(pthread_create(&t[i], NULL, charge_loop, &ch[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(ch[i].failures, 0);
	}
	acct_client_free(c);
	pthread_join(server, NULL);
	close(peer);
	assert_true(s.messages == 4 * 300);
	assert_true(s.charges == 300 * (1 + 2 + 3 + 4));
}

/* ---- the last error of a thread's charging call ----------------------------------- */

/* The calling thread's last error: 1 and its name and words, or 0. The name
 * and words are checked against `name` and `text` (NULL: there must be none). */
static void assert_last_error(const char *name, const char *text)
{
	char *n = (char *)1, *t = (char *)1;
	struct json_object *p = (struct json_object *)1;

	assert_int_equal(acct_client_last_error(&n, &p, &t), name ? 1 : 0);
	if (!name) {
		assert_null(n);
		assert_null(p);
		assert_null(t);
		return;
	}
	assert_string_equal(n, name);
	assert_true(json_object_is_type(p, json_type_object));
	if (text)
		assert_string_equal(t, text);
	free(n);
	free(t);
	json_object_put(p);
}

static void test_charge_last_error(void **state)
{
	int peer;
	struct acct_client *c = pair(&peer);
	struct json_object *p = NULL;
	char *name = NULL, *text = NULL;

	/* acctd's error: its name, parameters and words, for as long as the
	 * thread makes no other charging call */
	peer_send(peer, "{\"error\":\"io.acctd.Accounting.NoSuchResource\",\"parameters\":{\"resource\":\"gpu\"}}");
	assert_int_equal(acct_client_charge(c, "gpu", 1, NULL, 0), -ENOKEY);
	json_object_put(peer_read(peer));
	assert_int_equal(acct_client_last_error(&name, &p, &text), 1);
	assert_string_equal(name, ACCT_ERROR_NO_SUCH_RESOURCE);
	assert_string_equal(str(p, "resource"), "gpu");
	assert_string_equal(text, "No such resource: gpu (resources are declared in acctd.conf's [resource.NAME] sections, and one added since acctd started applies at its next start)");
	free(name), free(text), json_object_put(p);
	assert_int_equal(acct_client_last_error(NULL, NULL, NULL), 1); /* it stays */
	assert_last_error(ACCT_ERROR_NO_SUCH_RESOURCE, NULL);

	/* what -EBADR alone cannot say: which error */
	peer_send(peer, "{\"error\":\"io.acctd.Accounting.Quota\",\"parameters\":{\"left\":3}}");
	assert_int_equal(acct_client_charge(c, "gpu", 1, NULL, 0), -EBADR);
	json_object_put(peer_read(peer));
	assert_last_error("io.acctd.Accounting.Quota", "io.acctd.Accounting.Quota {\"left\":3}");

	/* a success clears it */
	peer_send(peer, "{}");
	assert_int_equal(acct_client_charge(c, "gpu", 1, NULL, 0), 0);
	json_object_put(peer_read(peer));
	assert_last_error(NULL, NULL);

	/* so does a call refused before anything was sent */
	peer_send(peer, "{\"error\":\"org.varlink.service.PermissionDenied\"}");
	assert_int_equal(acct_client_open_slot(c, "gpu", "/other", &(struct acct_charge_slot *){ NULL }), -EACCES);
	json_object_put(peer_read(peer));
	assert_last_error(ACCT_ERROR_PERMISSION_DENIED, "Permission denied");
	assert_int_equal(acct_client_charge(c, "", 1, NULL, 0), -EINVAL);
	assert_last_error(NULL, NULL);

	/* a batch: the error of the message that failed, with its words */
	struct acct_charge two[] = { { .resource = "gpu", .delta = 1 }, { .resource = "gpu", .delta = 2, .cgroup = "/x" } };
	size_t applied = 99;
	peer_send(peer, "{\"parameters\":{\"applied\":2}}");
	assert_int_equal(acct_client_charge_batch(c, two, 2, &applied), 0);
	json_object_put(peer_read(peer));
	assert_last_error(NULL, NULL);
	peer_send(peer, "{\"error\":\"io.acctd.Accounting.NoSuchCgroup\",\"parameters\":{\"cgroup\":\"/x\"}}");
	assert_int_equal(acct_client_charge_batch(c, two, 2, &applied), -ENOENT);
	json_object_put(peer_read(peer));
	assert_last_error(ACCT_ERROR_NO_SUCH_CGROUP, "No such cgroup: /x");
	/* a message refused as too long and sent again in halves is no error
	 * of the call, which succeeded */
	peer_send(peer, "{\"error\":\"io.acctd.Accounting.ResourceLimitExceeded\",\"parameters\":{\"limit\":\"max_message_size\"}}");
	peer_send(peer, "{\"parameters\":{\"applied\":1}}");
	peer_send(peer, "{\"parameters\":{\"applied\":1}}");
	assert_int_equal(acct_client_charge_batch(c, two, 2, &applied), 0);
	assert_true(applied == 2);
	for (int i = 0; i < 3; i++)
		json_object_put(peer_read(peer));
	assert_last_error(NULL, NULL);

	/* other calls keep their errors in their replies and leave it alone */
	peer_send(peer, "{\"error\":\"org.varlink.service.PermissionDenied\"}");
	assert_int_equal(acct_client_charge(c, "gpu", 1, "/other", 0), -EACCES);
	json_object_put(peer_read(peer));
	struct acct_reply reply = { 0 };
	peer_send(peer, "{\"error\":\"io.acctd.Accounting.NoSuchCgroup\"}");
	assert_int_equal(acct_client_call(c, "Get", NULL, 1000, &reply), -ENOENT);
	json_object_put(peer_read(peer));
	acct_reply_clear(&reply);
	assert_last_error(ACCT_ERROR_PERMISSION_DENIED, NULL);

	/* a transport failure has no error of acctd: the errno is all there is */
	close(peer);
	assert_true(acct_client_charge(c, "gpu", 1, NULL, 0) < 0);
	assert_last_error(NULL, NULL);
	acct_client_free(c);
}

/* A fake acctd that refuses every Charge with NoSuchResource, naming the
 * resource of that call. */
static void *refuse_serve(void *userdata)
{
	int fd = *(int *)userdata;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);

	for (;;) {
		ssize_t k = read(fd, buf + n, cap - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		char *nul;
		while ((nul = memchr(buf, 0, n))) {
			size_t len = (size_t)(nul - buf);
			struct json_object *call = json_tokener_parse(buf);
			char reply[256];
			snprintf(reply, sizeof(reply),
				 "{\"error\":\"io.acctd.Accounting.NoSuchResource\",\"parameters\":{\"resource\":\"%s\"}}",
				 str(params_of(call), "resource"));
			json_object_put(call);
			if (write(fd, reply, strlen(reply) + 1) < 0)
				break;
			memmove(buf, nul + 1, n - len - 1);
			n -= len + 1;
		}
	}
	free(buf);
	return NULL;
}

struct refused_charger {
	struct acct_client *c;
	char resource[16];
	pthread_barrier_t *turns; /* NULL: charge freely */
	int wrong;
};

/* Whether the thread's last error names `resource`. */
static bool last_error_names(const char *resource)
{
	struct json_object *p = NULL;
	bool ok = acct_client_last_error(NULL, &p, NULL) == 1 && strcmp(str(p, "resource"), resource) == 0;

	json_object_put(p);
	return ok;
}

static void *refused_loop(void *userdata)
{
	struct refused_charger *ch = userdata;

	for (int i = 0; i < 300; i++) {
		if (ch->turns) {
			/* In turns: the first thread's call ends, then the
			 * second's, then both read; each must find its own. */
			bool first = strcmp(ch->resource, "res0") == 0;
			if (!first)
				(void)pthread_barrier_wait(ch->turns);
			if (acct_client_charge(ch->c, ch->resource, 1, NULL, 0) != -ENOKEY)
				ch->wrong++;
			if (first)
				(void)pthread_barrier_wait(ch->turns);
			(void)pthread_barrier_wait(ch->turns + 1);
		} else if (acct_client_charge(ch->c, ch->resource, 1, NULL, 0) != -ENOKEY)
			ch->wrong++;
		if (!last_error_names(ch->resource))
			ch->wrong++;
	}
	/* the thread exits with its last error recorded: freed then (ASan's
	 * leak check would report it otherwise) */
	return NULL;
}

/* Threads charging on one connection at once each read their own call's
 * error, never that of another thread's call that ended meanwhile. */
static void test_charge_last_error_threads(void **state)
{
	int peer;
	struct acct_client *c = pair(&peer);
	struct refused_charger ch[4];
	pthread_t server, t[4];

	pthread_barrier_t turns[2];

	assert_int_equal(pthread_create(&server, NULL, refuse_serve, &peer), 0);
	/* two threads in turns, so that one call always ends between the
	 * other's and its read; then four at once */
	for (int round = 0; round < 2; round++) {
		int n = round == 0 ? 2 : 4;
		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_barrier_init(&turns[i], NULL, 2), 0);
		for (int i = 0; i < n; i++) {
			ch[i] = (struct refused_charger){ .c = c, .turns = round == 0 ? turns : NULL };
			snprintf(ch[i].resource, sizeof(ch[i].resource), "res%d", i);
			assert_int_equal(pthread_create(&t[i], NULL, refused_loop, &ch[i]), 0);
		}
		for (int i = 0; i < n; i++) {
			pthread_join(t[i], NULL);
			assert_int_equal(ch[i].wrong, 0);
		}
		for (int i = 0; i < 2; i++)
			pthread_barrier_destroy(&turns[i]);
	}
	/* nor the calling thread's, which made no charging call since its last */
	assert_last_error(NULL, NULL);
	acct_client_free(c);
	pthread_join(server, NULL);
	close(peer);
}

/* Send `json` with the descriptors `fds` attached (SCM_RIGHTS), as a daemon
 * other than acctd might; the descriptors are the caller's still. */
static void peer_send_fds(int sock, const char *json, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} control = { 0 };
	struct iovec iov = { .iov_base = (void *)json, .iov_len = strlen(json) + 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * nfds) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	assert_true(nfds >= 1 && nfds <= 4);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	assert_true(sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)iov.iov_len);
}

/* A pipe whose read end tells whether any copy of the write end is open. */
static void watched_pipe(int p[2])
{
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
}

static bool write_end_open(int rd)
{
	char b;
	ssize_t k = read(rd, &b, 1);
	return k < 0 && errno == EAGAIN; /* 0: EOF, every write end closed */
}

/* The daemon's side of OpenChargeSlot, as api_reply_fd() does it: the reply
 * queued, the memfd attached at its first byte, written by reply-fds.c
 * (tests/test-reply-fds.c splits a stream at a descriptor; here the stream
 * is the one reply, after bytes of earlier replies already sent). */
struct slot_server {
	int fd;
	int memfd;
	char *method, *resource, *cgroup;
};

static void *slot_serve(void *userdata)
{
	struct slot_server *s = userdata;
	struct reply_fds q = { .sent = 12345 };
	struct json_object *call = peer_read(s->fd), *p = params_of(call);
	char out[] = "{\"parameters\":{\"slot\":0}}";

	s->method = strdup(str(call, "method"));
	s->resource = str(p, "resource") ? strdup(str(p, "resource")) : NULL;
	s->cgroup = str(p, "cgroup") ? strdup(str(p, "cgroup")) : NULL;
	json_object_put(call);
	assert_int_equal(reply_fds_push(&q, fcntl(s->memfd, F_DUPFD_CLOEXEC, 3), q.sent), 0);
	for (size_t done = 0; done < sizeof(out);) {
		struct iovec iov = { .iov_base = out + done, .iov_len = sizeof(out) - done };
		ssize_t k = reply_fds_sendmsg(&q, s->fd, &iov, 1, MSG_NOSIGNAL);
		assert_true(k > 0);
		done += (size_t)k;
	}
	assert_int_equal(q.n, 0);
	return NULL;
}

static void test_open_slot(void **state)
{
	struct acct_slot_options o = { .budget = 4096 };
	struct acct_slot_owner *owner = NULL;
	struct acct_charge_slot *slot = NULL;
	struct acct_reading rd;
	int peer;
	struct acct_client *c = pair(&peer);
	pthread_t t;

	assert_int_equal(acct_slot_create(&o, &owner), 0);
	struct slot_server s = { .fd = peer, .memfd = acct_slot_owner_fd(owner) };
	assert_int_equal(pthread_create(&t, NULL, slot_serve, &s), 0);
	assert_int_equal(acct_client_open_slot(c, "gpu_memory", "/a.slice", &slot), 0);
	pthread_join(t, NULL);
	assert_string_equal(s.method, "io.acctd.Accounting.OpenChargeSlot");
	assert_string_equal(s.resource, "gpu_memory");
	assert_string_equal(s.cgroup, "/a.slice");
	free(s.method), free(s.resource), free(s.cgroup);
	acct_client_free(c); /* the slot outlives its connection */
	close(peer);

	int64_t sum = 0;
	for (int64_t i = 0; i < 100000; i++) {
		acct_charge_slot_add(slot, i % 7 - 3);
		sum += i % 7 - 3;
	}
	acct_charge_slot_add(slot, 1 << 30);
	sum += 1 << 30;
	assert_int_equal(acct_slot_read(owner, &rd), 0);
	assert_true(rd.value == sum);
	slot = acct_charge_slot_close(slot);
	assert_null(acct_charge_slot_close(NULL));
	acct_slot_owner_free(owner);
}

static void test_unexpected_fds(void **state)
{
	int peer, p[2], q[2];
	struct acct_client *c = pair(&peer);
	struct acct_charge_slot *slot = NULL;
	struct acct_reply reply = { 0 };

	/* A descriptor with a Charge reply: closed, the call succeeds. */
	watched_pipe(p);
	peer_send_fds(peer, "{\"parameters\":{}}", &p[1], 1);
	close(p[1]);
	assert_int_equal(acct_client_charge(c, "x", 1, NULL, 0), 0);
	json_object_put(peer_read(peer));
	assert_false(write_end_open(p[0]));
	close(p[0]);

	/* With a reply read by the generic receive: closed too. */
	watched_pipe(p);
	peer_send_fds(peer, "{\"parameters\":{\"a\":1}}", &p[1], 1);
	close(p[1]);
	assert_int_equal(acct_client_receive(c, 1000, &reply), 0);
	assert_false(write_end_open(p[0]));
	close(p[0]);

	/* A descriptor that comes with the next reply is not taken for this
	 * one: two replies in one read, the second carries it. */
	watched_pipe(p);
	peer_send(peer, "{\"parameters\":{\"first\":1}}");
	peer_send_fds(peer, "{\"parameters\":{\"second\":1}}", &p[1], 1);
	close(p[1]);
	assert_int_equal(acct_client_receive(c, 1000, &reply), 0);
	assert_true(json_object_object_get_ex(reply.parameters, "first", NULL));
	assert_true(write_end_open(p[0])); /* held for the second reply */
	assert_int_equal(acct_client_receive(c, 1000, &reply), 0);
	assert_true(json_object_object_get_ex(reply.parameters, "second", NULL));
	assert_false(write_end_open(p[0]));
	close(p[0]);

	/* OpenChargeSlot without a descriptor, or with a wrong index: -EBADMSG. */
	peer_send(peer, "{\"parameters\":{\"slot\":0}}");
	assert_int_equal(acct_client_open_slot(c, "x", NULL, &slot), -EBADMSG);
	json_object_put(peer_read(peer));
	watched_pipe(p);
	peer_send_fds(peer, "{\"parameters\":{\"slot\":1}}", &p[1], 1);
	close(p[1]);
	assert_int_equal(acct_client_open_slot(c, "x", NULL, &slot), -EBADMSG);
	json_object_put(peer_read(peer));
	assert_false(write_end_open(p[0]));
	close(p[0]);
	/* A descriptor that is not a slot: refused by its seals, closed. */
	watched_pipe(p);
	peer_send_fds(peer, "{\"parameters\":{\"slot\":0}}", &p[1], 1);
	close(p[1]);
	assert_true(acct_client_open_slot(c, "x", NULL, &slot) < 0);
	json_object_put(peer_read(peer));
	assert_false(write_end_open(p[0]));
	close(p[0]);
	/* An error reply with a descriptor: the error, and the descriptor closed. */
	watched_pipe(p);
	peer_send_fds(peer, "{\"error\":\"io.acctd.Accounting.NoSuchResource\"}", &p[1], 1);
	close(p[1]);
	assert_int_equal(acct_client_open_slot(c, "x", NULL, &slot), -ENOKEY);
	json_object_put(peer_read(peer));
	assert_false(write_end_open(p[0]));
	close(p[0]);
	/* Two descriptors with a slot's reply: the slot is the first, the
	 * second is closed. */
	struct acct_slot_options o = { .budget = 64 };
	struct acct_slot_owner *owner = NULL;
	assert_int_equal(acct_slot_create(&o, &owner), 0);
	watched_pipe(q);
	int two[2] = { acct_slot_owner_fd(owner), q[1] };
	peer_send_fds(peer, "{\"parameters\":{\"slot\":0}}", two, 2);
	close(q[1]);
	assert_int_equal(acct_client_open_slot(c, "x", NULL, &slot), 0);
	json_object_put(peer_read(peer));
	assert_false(write_end_open(q[0]));
	close(q[0]);
	acct_charge_slot_add(slot, 5);
	struct acct_reading rd;
	assert_int_equal(acct_slot_read(owner, &rd), 0);
	assert_true(rd.value == 5);
	acct_charge_slot_close(slot);
	acct_slot_owner_free(owner);

	/* Descriptors left pending when the client goes are closed with it. */
	watched_pipe(p);
	peer_send_fds(peer, "{\"parameters\":{}}", &p[1], 1);
	peer_send(peer, "{\"parameters\":{}}");
	close(p[1]);
	acct_reply_clear(&reply);
	acct_client_free(c);
	assert_false(write_end_open(p[0]));
	close(p[0]);
	close(peer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_address_path),
		cmocka_unit_test(test_default_address),
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_send_call),
		cmocka_unit_test(test_call_reply),
		cmocka_unit_test(test_pipelined_and_split),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_error_words),
		cmocka_unit_test(test_collect_stream),
		cmocka_unit_test(test_bad_replies),
		cmocka_unit_test(test_closed_peer),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_receive_text),
		cmocka_unit_test(test_interrupted),
		cmocka_unit_test(test_set_max_message_busy),
		cmocka_unit_test(test_reply_clear),
		cmocka_unit_test(test_charge_wire),
		cmocka_unit_test(test_charge_batch_split),
		cmocka_unit_test(test_charge_threads),
		cmocka_unit_test(test_charge_last_error),
		cmocka_unit_test(test_charge_last_error_threads),
		cmocka_unit_test(test_open_slot),
		cmocka_unit_test(test_unexpected_fds),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
