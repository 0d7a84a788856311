/* test-acct-client.c - unit tests of the client library against a peer the
 * test scripts on the other end of a socketpair: addresses, the calls it
 * sends, replies split anywhere or pipelined, streams, errors as errnos and
 * words, malformed and oversized replies, a closed peer, timeouts and
 * signals. No daemon needed. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
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
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
