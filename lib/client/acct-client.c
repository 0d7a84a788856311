/* acct-client.c - the client side of acctd's varlink API: connecting,
 * calls and replies over a socket, and varlink errors as errnos and plain
 * words. The wire codec (framing, building and validating messages) is
 * lib/varlink/varlink.h's, shared with the server. See acct-client.h. */
#include "acct-client.h"
#include "basic/util.h"
#include "varlink/varlink.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#define READ_CHUNK (64u << 10)
#define MIN_MAX_MESSAGE (64u << 10)

struct acct_client {
	int fd;
	size_t max_message;
	struct varlink_reader *reader; /* received bytes cut into messages */
};

void acct_reply_clear(struct acct_reply *reply)
{
	if (!reply)
		return;
	if (reply->parameters)
		json_object_put(reply->parameters);
	free(reply->error);
	*reply = (struct acct_reply){ 0 };
}

/* ---- addresses --------------------------------------------------------- */

int acct_client_default_address(char **ret)
{
	_cleanup_free_ char *user = NULL;
	const char *env = getenv("ACCTD_ADDRESS"), *xdg;
	char *s = NULL;
	struct stat st;

	if (env && *env) {
		s = strdup(env);
		goto done;
	}
	if (geteuid() != 0) {
		/* A per-user acctd (run without root) listens in the runtime
		 * directory, as the daemon's default says; without one, the
		 * system daemon serves every local user's reads. */
		xdg = getenv("XDG_RUNTIME_DIR");
		if (xdg && xdg[0] == '/') {
			if (asprintf(&user, "%s/acctd/io.acctd", xdg) < 0)
				return -ENOMEM;
		} else if (asprintf(&user, "/run/user/%u/acctd/io.acctd", (unsigned)geteuid()) < 0)
			return -ENOMEM;
		if (stat(user, &st) == 0 && S_ISSOCK(st.st_mode)) {
			if (asprintf(&s, "unix:%s", user) < 0)
				return -ENOMEM;
			goto done;
		}
	}
	s = strdup("unix:" ACCT_CLIENT_SYSTEM_SOCKET);
done:
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

int acct_client_address_path(const char *address, char **ret_path)
{
	const char *p, *end;
	char *s;

	if (!address || !*address)
		return -EINVAL;
	if (address[0] == '/')
		p = address;
	else if (strncmp(address, "unix:", 5) == 0)
		p = address + 5;
	else if (strchr(address, ':'))
		return -EPROTONOSUPPORT;
	else
		return -EINVAL;
	/* varlink addresses may carry ";mode=0666" and the like */
	end = strchr(p, ';');
	if (!end)
		end = p + strlen(p);
	if (end == p || (p[0] != '/' && p[0] != '@'))
		return -EINVAL;
	if ((size_t)(end - p) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
		return -EINVAL;
	s = strndup(p, (size_t)(end - p));
	if (!s)
		return -ENOMEM;
	*ret_path = s;
	return 0;
}

/* ---- connections ------------------------------------------------------- */

int acct_client_new_from_fd(int fd, struct acct_client **ret)
{
	_cleanup_close_ int owned = fd;
	struct acct_client *c;
	int r;

	if (fd < 0)
		return -EBADF;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max_message = ACCT_CLIENT_MAX_MESSAGE_DEFAULT;
	r = varlink_reader_new(c->max_message, 0, &c->reader);
	if (r < 0) {
		free(c);
		return r;
	}
	c->fd = TAKE_FD(owned);
	*ret = c;
	return 0;
}

int acct_client_connect(const char *address, struct acct_client **ret)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int r;

	r = acct_client_address_path(address, &path);
	if (r < 0)
		return r;
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract: no terminating NUL counted */
	else
		len++;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sa, len) < 0)
		if (errno != EINTR)
			return -errno;
	return acct_client_new_from_fd(TAKE_FD(fd), ret);
}

struct acct_client *acct_client_free(struct acct_client *c)
{
	if (!c)
		return NULL;
	if (c->fd >= 0)
		(void)close(c->fd);
	varlink_reader_free(c->reader);
	free(c);
	return NULL;
}

int acct_client_fd(const struct acct_client *c)
{
	return c ? c->fd : -EBADF;
}

int acct_client_set_max_message(struct acct_client *c, size_t max)
{
	struct varlink_reader *n = NULL;
	int r;

	max = MAX(max, (size_t)MIN_MAX_MESSAGE);
	if (varlink_reader_pending(c->reader) > 0)
		return -EBUSY;
	r = varlink_reader_new(max, 0, &n);
	if (r < 0)
		return r;
	varlink_reader_free(c->reader);
	c->reader = n;
	c->max_message = max;
	return 0;
}

/* ---- sending ------------------------------------------------------------ */

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };
				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return -errno;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int acct_client_send(struct acct_client *c, const char *method, struct json_object *parameters, unsigned flags)
{
	_cleanup_free_ char *full = NULL;
	struct json_object *call;
	const char *text;
	size_t len;
	int r;

	if (!method || !*method || (flags & ACCT_CALL_MORE && flags & ACCT_CALL_ONEWAY))
		return -EINVAL;
	if (parameters && !json_object_is_type(parameters, json_type_object))
		return -EINVAL;
	if (!strchr(method, '.') && asprintf(&full, "%s.%s", ACCT_CLIENT_INTERFACE, method) < 0)
		return -ENOMEM;
	call = varlink_call_new(full ? full : method, parameters ? json_object_get(parameters) : NULL,
				(flags & ACCT_CALL_MORE ? VARLINK_CALL_MORE : 0) |
					(flags & ACCT_CALL_ONEWAY ? VARLINK_CALL_ONEWAY : 0));
	if (!call)
		return -ENOMEM;
	r = varlink_message_serialize(call, &text, &len);
	/* the string's NUL terminator is the message's end marker */
	if (r >= 0)
		r = write_all(c->fd, text, len + 1);
	json_object_put(call);
	return r;
}

/* ---- receiving ---------------------------------------------------------- */

/* Turn one message into a reply. */
static int parse_reply(struct json_object *msg, struct acct_reply *ret)
{
	struct varlink_reply vr = { 0 };
	int r;

	r = varlink_reply_parse(msg, &vr);
	if (r < 0)
		return r;
	struct acct_reply reply = {
		.parameters = json_object_get(vr.parameters),
		.error = vr.error ? strdup(vr.error) : NULL,
		.continues = vr.continues,
	};
	r = vr.error && !reply.error ? -ENOMEM : 0;
	varlink_reply_clear(&vr);
	if (r < 0) {
		acct_reply_clear(&reply);
		return r;
	}
	*ret = reply;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait up to the deadline (-1: none) for the next complete message: parsed
 * into *ret_msg when that is not NULL, else its text in *ret_text and
 * *ret_size. Returns 1, or a negative errno as acct_client_receive() says. */
static int wait_message(struct acct_client *c, int64_t deadline, struct json_object **ret_msg, const char **ret_text,
			size_t *ret_size)
{
	int r;

	for (;;) {
		if (ret_msg)
			r = varlink_reader_next(c->reader, ret_msg);
		else
			r = varlink_reader_next_text(c->reader, ret_text, ret_size);
		if (r != 0)
			return r; /* 1, or -EBADMSG, -EMSGSIZE, -ENOMEM */

		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int wait = -1;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			wait = (int)MIN(left, (int64_t)INT32_MAX);
		}
		r = poll(&pfd, 1, wait);
		if (r < 0)
			return -errno; /* -EINTR included: the caller decides */
		if (r == 0)
			return -ETIMEDOUT;

		size_t room = 0;
		void *p = varlink_reader_space(c->reader, READ_CHUNK, &room);
		if (!p)
			return -ENOMEM;
		ssize_t k = recv(c->fd, p, room, MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -ECONNRESET;
		/* over the limit: the complete replies before it still come out,
		 * then the reader says -EMSGSIZE */
		(void)varlink_reader_commit(c->reader, (size_t)k);
	}
}

int acct_client_receive(struct acct_client *c, int timeout_ms, struct acct_reply *ret)
{
	struct json_object *msg = NULL;
	int r;

	acct_reply_clear(ret);
	r = wait_message(c, timeout_ms < 0 ? -1 : now_ms() + timeout_ms, &msg, NULL, NULL);
	if (r < 0)
		return r;
	r = parse_reply(msg, ret);
	json_object_put(msg);
	return r;
}

int acct_reply_parse(const char *text, size_t size, struct acct_reply *ret)
{
	struct json_object *msg = NULL;
	int r;

	acct_reply_clear(ret);
	r = varlink_message_parse(text, size, 0, &msg);
	if (r < 0)
		return r;
	r = parse_reply(msg, ret);
	json_object_put(msg);
	return r;
}

int acct_client_receive_text(struct acct_client *c, int timeout_ms, const char **ret, size_t *ret_size)
{
	int r = wait_message(c, timeout_ms < 0 ? -1 : now_ms() + timeout_ms, NULL, ret, ret_size);
	return r < 0 ? r : 0;
}

int acct_client_call(struct acct_client *c, const char *method, struct json_object *parameters, int timeout_ms,
		     struct acct_reply *ret)
{
	int r;

	acct_reply_clear(ret);
	r = acct_client_send(c, method, parameters, 0);
	if (r < 0)
		return r;
	do
		r = acct_client_receive(c, timeout_ms, ret);
	while (r == -EINTR);
	if (r < 0)
		return r;
	if (ret->error)
		return acct_error_to_errno(ret->error);
	return 0;
}

int acct_client_call_collect(struct acct_client *c, const char *method, struct json_object *parameters,
			     const char *key, int timeout_ms, struct json_object **ret_array,
			     struct acct_reply *ret_error_reply)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	struct json_object *all = json_object_new_array(), *a;
	int r;

	if (!all)
		return -ENOMEM;
	r = acct_client_send(c, method, parameters, ACCT_CALL_MORE);
	if (r < 0)
		goto fail;
	do {
		do
			r = acct_client_receive(c, timeout_ms, &reply);
		while (r == -EINTR);
		if (r < 0)
			goto fail;
		if (reply.error) {
			r = acct_error_to_errno(reply.error);
			if (ret_error_reply) {
				acct_reply_clear(ret_error_reply);
				*ret_error_reply = reply;
				reply = (struct acct_reply){ 0 };
			}
			goto fail;
		}
		if (!json_object_object_get_ex(reply.parameters, key, &a) || !json_object_is_type(a, json_type_array)) {
			r = -EBADMSG;
			goto fail;
		}
		for (size_t i = 0, n = json_object_array_length(a); i < n; i++)
			if (json_object_array_add(all, json_object_get(json_object_array_get_idx(a, i))) < 0) {
				r = -ENOMEM;
				goto fail;
			}
	} while (reply.continues);
	*ret_array = all;
	return 0;
fail:
	json_object_put(all);
	return r;
}

/* ---- errors --------------------------------------------------------------- */

static const struct {
	const char *name;
	int error;
} error_table[] = {
	{ ACCT_ERROR_NO_SUCH_CGROUP, ENOENT },
	{ ACCT_ERROR_INVALID_CGROUP_PATH, EINVAL },
	{ ACCT_ERROR_NO_SUCH_QUANTITY, ENODATA },
	{ ACCT_ERROR_RELOAD_FAILED, EIO },
	{ ACCT_ERROR_INTERFACE_NOT_FOUND, EADDRNOTAVAIL },
	{ ACCT_ERROR_METHOD_NOT_FOUND, ENXIO },
	{ ACCT_ERROR_METHOD_NOT_IMPLEMENTED, ENOTTY },
	{ ACCT_ERROR_INVALID_PARAMETER, EINVAL },
	{ ACCT_ERROR_PERMISSION_DENIED, EACCES },
	{ ACCT_ERROR_EXPECTED_MORE, EBADE },
};

int acct_error_to_errno(const char *name)
{
	if (name)
		for (size_t i = 0; i < ELEMENTSOF(error_table); i++)
			if (strcmp(name, error_table[i].name) == 0)
				return -error_table[i].error;
	return -EBADR;
}

/* The string parameter `key`, or NULL. */
static const char *param_string(struct json_object *parameters, const char *key)
{
	struct json_object *v;

	if (!parameters || !json_object_object_get_ex(parameters, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int acct_error_describe(const char *name, struct json_object *parameters, char **ret)
{
	const char *a, *b;
	char *s = NULL;
	int k;

	if (!name)
		name = "(no error name)";
	if (strcmp(name, ACCT_ERROR_NO_SUCH_CGROUP) == 0) {
		a = param_string(parameters, "cgroup");
		k = a ? asprintf(&s, "No such cgroup: %s", a) : asprintf(&s, "No such cgroup");
	} else if (strcmp(name, ACCT_ERROR_INVALID_CGROUP_PATH) == 0) {
		a = param_string(parameters, "cgroup");
		b = param_string(parameters, "reason");
		k = asprintf(&s, "Invalid cgroup path%s%s%s%s%s", a ? " '" : "", a ? a : "", a ? "'" : "",
			     b ? ": " : "", b ? b : "");
	} else if (strcmp(name, ACCT_ERROR_NO_SUCH_QUANTITY) == 0) {
		a = param_string(parameters, "quantity");
		b = param_string(parameters, "reason"); /* a known quantity never read there */
		if (a && b)
			k = asprintf(&s, "%s: not available for this cgroup (%s)", a, b);
		else
			k = a ? asprintf(&s, "No such quantity: %s", a) : asprintf(&s, "No such quantity");
	} else if (strcmp(name, ACCT_ERROR_NO_SUCH_RESOURCE) == 0) {
		a = param_string(parameters, "resource");
		k = a ? asprintf(&s, "No such resource: %s (resources are declared in acctd.conf's [resource.NAME] sections)", a)
		      : asprintf(&s, "No such resource");
	} else if (strcmp(name, ACCT_ERROR_RELOAD_FAILED) == 0) {
		a = param_string(parameters, "reason");
		k = a ? asprintf(&s, "Reload failed: %s", a) : asprintf(&s, "Reload failed");
	} else if (strcmp(name, ACCT_ERROR_RESOURCE_LIMIT_EXCEEDED) == 0) {
		struct json_object *v = NULL;
		a = param_string(parameters, "limit");
		int64_t value = parameters && json_object_object_get_ex(parameters, "value", &v) &&
					json_object_is_type(v, json_type_int)
				? json_object_get_int64(v)
				: -1;
		if (a && strcmp(a, "max_queries_per_user") == 0)
			k = asprintf(&s, "Too many history queries of this user at once (at most %" PRId64
				     ", acctd.conf's [api] max_queries_per_user): try again when one has finished", value);
		else if (a && value >= 0)
			k = asprintf(&s, "acctd's limit %s (%" PRId64 ", acctd.conf's [api] section) does not allow the call",
				     a, value);
		else
			k = asprintf(&s, "A resource limit of acctd does not allow the call");
	} else if (strcmp(name, ACCT_ERROR_PERMISSION_DENIED) == 0) {
		k = asprintf(&s, "Permission denied");
	} else if (strcmp(name, ACCT_ERROR_INVALID_PARAMETER) == 0) {
		a = param_string(parameters, "parameter");
		b = param_string(parameters, "reason"); /* Tune's budget beyond the host */
		k = asprintf(&s, "Invalid parameter%s%s%s%s", a ? ": " : "", a ? a : "", b ? ": " : "", b ? b : "");
	} else if (strcmp(name, ACCT_ERROR_METHOD_NOT_FOUND) == 0) {
		a = param_string(parameters, "method");
		k = asprintf(&s, "acctd does not know the method%s%s (is it older than this client?)", a ? " " : "",
			     a ? a : "");
	} else if (strcmp(name, ACCT_ERROR_METHOD_NOT_IMPLEMENTED) == 0) {
		a = param_string(parameters, "method");
		k = asprintf(&s, "acctd does not implement%s%s", a ? " " : " this method", a ? a : "");
	} else if (strcmp(name, ACCT_ERROR_INTERFACE_NOT_FOUND) == 0) {
		a = param_string(parameters, "interface");
		k = asprintf(&s, "acctd does not provide the interface%s%s", a ? " " : "", a ? a : "");
	} else if (strcmp(name, ACCT_ERROR_EXPECTED_MORE) == 0) {
		k = asprintf(&s, "The method must be called with \"more\" (a stream of replies)");
	} else {
		const char *p = NULL;

		if (parameters && json_object_object_length(parameters) > 0)
			p = json_object_to_json_string_ext(parameters,
							   JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		k = asprintf(&s, "%s%s%s", name, p ? " " : "", p ? p : "");
	}
	if (k < 0)
		return -ENOMEM;
	*ret = s;
	return 0;
}
