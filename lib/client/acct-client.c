/* acct-client.c - the client side of acctd's varlink API: connecting,
 * calls and replies over a socket (with the descriptors a reply may carry),
 * varlink errors as errnos and plain words, and the charging calls. The wire
 * codec (framing, building and validating messages) is lib/varlink/varlink.h's,
 * shared with the server; a charge slot's memory is lib/percpu/charge-slot.h's.
 * See acct-client.h. */
#include "acct-client.h"
#include "basic/util.h"
#include "percpu/charge-slot.h"
#include "varlink/varlink.h"

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#define READ_CHUNK (64u << 10)
#define MIN_MAX_MESSAGE (64u << 10)

/* Descriptors received and not yet matched to their message, at most. A
 * reply carries one at most (OpenChargeSlot's); more are closed on arrival. */
#define MAX_PENDING_FDS 8

struct acct_client {
	int fd;
	size_t max_message;
	struct varlink_reader *reader; /* received bytes cut into messages */
	pthread_mutex_t lock;          /* the charging calls' exchanges */
	/* Bytes received on the stream so far, and the descriptors that came
	 * with them: each with the stream offset of the last byte of the read
	 * that carried it. The kernel ends a read after the bytes that carried
	 * descriptors, and attaches them to the first bytes of their sendmsg(),
	 * which starts a message (api-server.c): so a descriptor belongs to the
	 * message that holds that last byte. */
	uint64_t received;
	unsigned nr_fds;
	int fds[MAX_PENDING_FDS];
	uint64_t fd_at[MAX_PENDING_FDS];
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
	pthread_mutex_init(&c->lock, NULL);
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
	for (unsigned i = 0; i < c->nr_fds; i++)
		(void)close(c->fds[i]);
	varlink_reader_free(c->reader);
	pthread_mutex_destroy(&c->lock);
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

/* Read what the socket holds into the reader, and the descriptors that came
 * with it into c->fds (close-on-exec from the start: MSG_CMSG_CLOEXEC).
 * Returns the bytes read (> 0), or -EAGAIN, -EINTR, -ECONNRESET, -ENOMEM, or
 * recvmsg()'s error. */
static ssize_t read_some(struct acct_client *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * MAX_PENDING_FDS)];
	} control;
	size_t room = 0;
	void *p = varlink_reader_space(c->reader, READ_CHUNK, &room);
	if (!p)
		return -ENOMEM;
	struct iovec iov = { .iov_base = p, .iov_len = room };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = &control,
		.msg_controllen = sizeof(control),
	};
	ssize_t k = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (k < 0)
		return -errno;
	/* Descriptors first: they are ours to close even when no bytes came. */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (k > 0 && c->nr_fds < MAX_PENDING_FDS) {
				c->fds[c->nr_fds] = fd;
				c->fd_at[c->nr_fds++] = c->received + (uint64_t)k - 1;
			} else
				(void)close(fd); /* more than any reply carries */
		}
	}
	if (k == 0)
		return -ECONNRESET;
	c->received += (uint64_t)k;
	/* over the limit: the complete replies before it still come out,
	 * then the reader says -EMSGSIZE */
	(void)varlink_reader_commit(c->reader, (size_t)k);
	return k;
}

/* A message was just taken out of the reader: hand the descriptor that came
 * with it to *ret_fd (when not NULL; -EBADF when none came), and close the
 * others that came with it, and every one that came with it when the caller
 * wants none. */
static void take_fds(struct acct_client *c, int *ret_fd)
{
	uint64_t end = c->received - varlink_reader_pending(c->reader); /* the message's bytes end here */
	unsigned kept = 0;

	if (ret_fd)
		*ret_fd = -EBADF;
	for (unsigned i = 0; i < c->nr_fds; i++) {
		if (c->fd_at[i] >= end) { /* a later message's */
			c->fds[kept] = c->fds[i];
			c->fd_at[kept++] = c->fd_at[i];
		} else if (ret_fd && *ret_fd < 0)
			*ret_fd = c->fds[i];
		else
			(void)close(c->fds[i]); /* unexpected */
	}
	c->nr_fds = kept;
}

/* Wait up to the deadline (-1: none) for the next complete message: parsed
 * into *ret_msg when that is not NULL, else its text in *ret_text and
 * *ret_size; the descriptor that came with it in *ret_fd (take_fds()).
 * Returns 1, or a negative errno as acct_client_receive() says. */
static int wait_message(struct acct_client *c, int64_t deadline, struct json_object **ret_msg, const char **ret_text,
			size_t *ret_size, int *ret_fd)
{
	int r;

	for (;;) {
		if (ret_msg)
			r = varlink_reader_next(c->reader, ret_msg);
		else
			r = varlink_reader_next_text(c->reader, ret_text, ret_size);
		if (r != 0) {
			if (r > 0 || r == -EBADMSG)
				take_fds(c, r > 0 ? ret_fd : NULL); /* a message was consumed */
			return r; /* 1, or -EBADMSG, -EMSGSIZE, -ENOMEM */
		}

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

		ssize_t k = read_some(c);
		if (k == -EAGAIN || k == -EINTR)
			continue;
		if (k < 0)
			return (int)k;
	}
}

int acct_client_receive(struct acct_client *c, int timeout_ms, struct acct_reply *ret)
{
	struct json_object *msg = NULL;
	int r;

	acct_reply_clear(ret);
	r = wait_message(c, timeout_ms < 0 ? -1 : now_ms() + timeout_ms, &msg, NULL, NULL, NULL);
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
	int r = wait_message(c, timeout_ms < 0 ? -1 : now_ms() + timeout_ms, NULL, ret, ret_size, NULL);
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

/* ---- charges ------------------------------------------------------------------ */

static void json_putp(struct json_object **p)
{
	if (*p)
		json_object_put(*p);
}

/* The error acctd answered the calling thread's last charging call with
 * (acct_client_last_error()): its name and parameters, moved out of the
 * reply. Per thread, not per connection: any threads may charge on one
 * connection at once, and a record in the connection would hand a thread
 * the error of another thread's call that ended after its own. */
static _Thread_local struct acct_reply last_error;
/* Only for its destructor, which frees a thread's record when the thread
 * exits (C11 thread-local objects have none). */
static pthread_key_t last_error_key;
static pthread_once_t last_error_once = PTHREAD_ONCE_INIT;
static bool last_error_keyed;

static void last_error_free(void *p)
{
	acct_reply_clear(p);
}

static void last_error_key_init(void)
{
	last_error_keyed = pthread_key_create(&last_error_key, last_error_free) == 0;
}

/* A program that dlclose()s the library must not keep a destructor that
 * points into it for its threads' exits. */
__attribute__((destructor)) static void last_error_key_delete(void)
{
	if (last_error_keyed)
		(void)pthread_key_delete(last_error_key);
	last_error_keyed = false;
}

/* Replace the calling thread's last error with reply's (taken: the reply is
 * left cleared), or with none when reply is NULL or holds no error. */
static void last_error_set(struct acct_reply *reply)
{
	acct_reply_clear(&last_error);
	if (!reply || !reply->error)
		return;
	(void)pthread_once(&last_error_once, last_error_key_init);
	/* Registered at the thread's first error. Should that fail (no key, or
	 * no memory for the thread's table), the error is recorded all the
	 * same: only its bytes leak when the thread exits, where dropping it
	 * would tell the caller that acctd answered no error. */
	if (last_error_keyed && !pthread_getspecific(last_error_key))
		(void)pthread_setspecific(last_error_key, &last_error);
	last_error = *reply;
	*reply = (struct acct_reply){ 0 };
}

int acct_client_last_error(char **ret_name, struct json_object **ret_parameters, char **ret_text)
{
	_cleanup_free_ char *name = NULL, *text = NULL;
	int r;

	if (!last_error.error) {
		if (ret_name)
			*ret_name = NULL;
		if (ret_parameters)
			*ret_parameters = NULL;
		if (ret_text)
			*ret_text = NULL;
		return 0;
	}
	if (ret_name && !(name = strdup(last_error.error)))
		return -ENOMEM;
	if (ret_text) {
		r = acct_error_describe(last_error.error, last_error.parameters, &text);
		if (r < 0)
			return r;
	}
	if (ret_name)
		*ret_name = TAKE_PTR(name);
	if (ret_parameters)
		*ret_parameters = json_object_get(last_error.parameters);
	if (ret_text)
		*ret_text = TAKE_PTR(text);
	return 1;
}

/* One exchange under the connection's lock: send `method` with `params`
 * (taken), wait for the reply and, when ret_fd is not NULL, the descriptor
 * that came with it. Returns as acct_client_call() does. */
static int charge_call(struct acct_client *c, const char *method, struct json_object *params,
		       struct acct_reply *ret, int *ret_fd)
{
	_cleanup_(json_putp) struct json_object *p = params;
	struct json_object *msg = NULL;
	int r;

	if (ret_fd)
		*ret_fd = -EBADF;
	acct_reply_clear(ret);
	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	r = acct_client_send(c, method, p, 0);
	int64_t deadline = now_ms() + ACCT_CLIENT_CHARGE_TIMEOUT_MS;
	if (r >= 0)
		do
			r = wait_message(c, deadline, &msg, NULL, NULL, ret_fd);
		while (r == -EINTR);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	r = parse_reply(msg, ret);
	json_object_put(msg);
	if (r >= 0 && ret->error)
		r = acct_error_to_errno(ret->error);
	if (r < 0 && ret_fd && *ret_fd >= 0) {
		(void)close(*ret_fd);
		*ret_fd = -EBADF;
	}
	return r;
}

/* charge_call() for a message already written as text (`text`, `len` bytes
 * and its NUL). */
static int charge_call_text(struct acct_client *c, const char *text, size_t len, struct acct_reply *ret)
{
	struct json_object *msg = NULL;
	int r;

	acct_reply_clear(ret);
	pthread_mutex_lock(&c->lock);
	r = write_all(c->fd, text, len + 1);
	int64_t deadline = now_ms() + ACCT_CLIENT_CHARGE_TIMEOUT_MS;
	if (r >= 0)
		do
			r = wait_message(c, deadline, &msg, NULL, NULL, NULL);
		while (r == -EINTR);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	r = parse_reply(msg, ret);
	json_object_put(msg);
	if (r >= 0 && ret->error)
		r = acct_error_to_errno(ret->error);
	return r;
}

/* {"resource": R, "delta": D[, "cgroup": C]}, or NULL on -ENOMEM. */
static struct json_object *charge_object(const char *resource, int64_t delta, const char *cgroup)
{
	_cleanup_(json_putp) struct json_object *o = json_object_new_object();

	if (!o || json_object_object_add(o, "resource", json_object_new_string(resource)) < 0 ||
	    json_object_object_add(o, "delta", json_object_new_int64(delta)) < 0)
		return NULL;
	if (cgroup && json_object_object_add(o, "cgroup", json_object_new_string(cgroup)) < 0)
		return NULL;
	/* json_object_object_add() takes a NULL value as null: refuse those. */
	if (!json_object_object_get(o, "resource") || (cgroup && !json_object_object_get(o, "cgroup")))
		return NULL;
	return TAKE_PTR(o);
}

int acct_client_charge(struct acct_client *c, const char *resource, int64_t delta, const char *cgroup,
		       unsigned flags)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	struct json_object *p;
	int r;

	last_error_set(NULL);
	if (!resource || !*resource || (flags & ~(unsigned)ACCT_CHARGE_SYNC))
		return -EINVAL;
	p = charge_object(resource, delta, cgroup);
	if (p && (flags & ACCT_CHARGE_SYNC) && json_object_object_add(p, "sync", json_object_new_boolean(1)) < 0) {
		json_object_put(p);
		p = NULL;
	}
	r = charge_call(c, "Charge", p, &reply, NULL);
	last_error_set(&reply);
	return r;
}

/* An upper bound of a charge's bytes in a ChargeBatch message: every byte of
 * its strings escaped as \u00XX, the keys, the punctuation and the number. */
static size_t charge_size_max(const struct acct_charge *ch)
{
	size_t n = 64; /* {"resource":"","delta":-9223372036854775808,"cgroup":""}, */
	n += 6 * strlen(ch->resource);
	if (ch->cgroup)
		n += 6 * strlen(ch->cgroup);
	return n;
}

/* Append s as a JSON string at p, returning the end: '"' and '\\' escaped,
 * control characters as \u00XX, other bytes as they are (6 x strlen(s) + 2
 * bytes at most; acctd refuses invalid UTF-8 as json-c's writer would send it). */
static char *put_string(char *p, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	*p++ = '"';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			*p++ = '\\';
			*p++ = (char)ch;
		} else if (ch < 0x20) {
			memcpy(p, "\\u00", 4);
			p[4] = hex[ch >> 4];
			p[5] = hex[ch & 15];
			p += 6;
		} else
			*p++ = (char)ch;
	}
	*p++ = '"';
	return p;
}

/* One ChargeBatch message for charges[0..n), written directly as text (no
 * json-c object per charge: building those was most of a batch's cost on
 * the client's side, docs/performance.md "ChargeBatch"), in *ret (malloc'd,
 * NUL-terminated), its length without the NUL in *ret_len. `bytes` bounds
 * the charges' text (charge_size_max()'s sum). Returns 0 or -ENOMEM. */
static int batch_text(const struct acct_charge *charges, size_t n, size_t bytes, char **ret, size_t *ret_len)
{
	static const char head[] = "{\"method\":\"" ACCT_CLIENT_INTERFACE ".ChargeBatch\",\"parameters\":{\"charges\":[";
	char *buf = malloc(sizeof(head) + bytes + 8), *p;

	if (!buf)
		return -ENOMEM;
	p = mempcpy(buf, head, sizeof(head) - 1);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			*p++ = ',';
		p = mempcpy(p, "{\"resource\":", 12);
		p = put_string(p, charges[i].resource);
		p += sprintf(p, ",\"delta\":%" PRId64, charges[i].delta);
		if (charges[i].cgroup) {
			p = mempcpy(p, ",\"cgroup\":", 10);
			p = put_string(p, charges[i].cgroup);
		}
		*p++ = '}';
	}
	p = mempcpy(p, "]}}", 3);
	*p = '\0';
	*ret_len = (size_t)(p - buf);
	*ret = buf;
	return 0;
}

int acct_client_charge_batch(struct acct_client *c, const struct acct_charge *charges, size_t n,
			     size_t *ret_applied)
{
	size_t applied = 0, done = 0, limit = ACCT_CLIENT_CHARGE_BATCH_ITEMS;
	int r = 0;

	last_error_set(NULL);
	if (n > 0 && !charges)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!charges[i].resource || !*charges[i].resource)
			return -EINVAL;
	while (done < n) {
		_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
		/* As many as fit, at least one; the envelope ({"method":
		 * "io.acctd.Accounting.ChargeBatch","parameters":{"charges":[]}})
		 * takes < 128 bytes. */
		size_t k = 0, bytes = 128;
		while (done + k < n && k < limit) {
			size_t b = charge_size_max(&charges[done + k]);
			if (k > 0 && bytes + b > ACCT_CLIENT_CHARGE_BATCH_BYTES)
				break;
			bytes += b;
			k++;
		}
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		r = batch_text(charges + done, k, bytes, &text, &len);
		if (r < 0)
			break;
		r = charge_call_text(c, text, len, &reply);
		if (r < 0 && reply.error && strcmp(reply.error, ACCT_ERROR_RESOURCE_LIMIT_EXCEEDED) == 0 && k > 1) {
			/* Refused before any of it was applied: again in halves. */
			limit = k / 2;
			continue;
		}
		if (r < 0) {
			last_error_set(&reply);
			break;
		}
		struct json_object *v;
		if (!json_object_object_get_ex(reply.parameters, "applied", &v) || !json_object_is_type(v, json_type_int) ||
		    json_object_get_int64(v) < 0 || (uint64_t)json_object_get_int64(v) > k) {
			r = -EBADMSG;
			break;
		}
		applied += (size_t)json_object_get_int64(v);
		done += k;
	}
	if (ret_applied)
		*ret_applied = applied;
	return r < 0 ? r : 0;
}

/* A slot as the library hands it out is the mapping of charge-slot.h
 * itself: struct acct_charge_slot is never defined, only its pointer is
 * converted, so that a charge costs no load more than the inline path. */
static struct acct_slot_writer *slot_writer(struct acct_charge_slot *slot)
{
	return (struct acct_slot_writer *)slot;
}

int acct_client_open_slot(struct acct_client *c, const char *resource, const char *cgroup,
			  struct acct_charge_slot **ret)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_close_ int fd = -EBADF;
	struct acct_slot_writer *w = NULL;
	struct json_object *p, *v;
	int r;

	last_error_set(NULL);
	if (!resource || !*resource)
		return -EINVAL;
	p = json_object_new_object();
	if (p && (json_object_object_add(p, "resource", json_object_new_string(resource)) < 0 ||
		  !json_object_object_get(p, "resource") ||
		  (cgroup && (json_object_object_add(p, "cgroup", json_object_new_string(cgroup)) < 0 ||
			      !json_object_object_get(p, "cgroup"))))) {
		json_object_put(p);
		p = NULL;
	}
	r = charge_call(c, "OpenChargeSlot", p, &reply, &fd);
	if (r < 0) {
		last_error_set(&reply);
		return r;
	}
	/* "slot" is the index of the descriptor among those sent with the
	 * reply, as systemd's varlink passes descriptors: one, so 0. */
	if (fd < 0 || !json_object_object_get_ex(reply.parameters, "slot", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) != 0)
		return -EBADMSG;
	r = acct_slot_map(fd, &w);
	if (r < 0)
		return r;
	*ret = (struct acct_charge_slot *)w; /* the mapping keeps the memory; the descriptor closes here */
	return 0;
}

void acct_charge_slot_add(struct acct_charge_slot *slot, int64_t delta)
{
	acct_slot_add(slot_writer(slot), delta);
}

struct acct_charge_slot *acct_charge_slot_close(struct acct_charge_slot *slot)
{
	acct_slot_unmap(slot_writer(slot)); /* accepts NULL */
	return NULL;
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
	{ ACCT_ERROR_NO_SUCH_RESOURCE, ENOKEY },
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
		/* a section added since acctd started is declared, and not in effect */
		k = a ? asprintf(&s,
				 "No such resource: %s (resources are declared in acctd.conf's [resource.NAME] "
				 "sections, and one added since acctd started applies at its next start)",
				 a)
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
