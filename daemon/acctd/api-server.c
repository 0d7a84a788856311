/* api-server.c - the varlink API's server: the listening socket (socket
 * activation or a bound path), accept() with the connection limits, and one
 * struct conn per client, whose input is cut into calls for the dispatcher
 * and whose output queue is written without blocking (api-server.h has the
 * bounds). The API's public functions (api.h) are here. */
#include "api-charges.h"
#include "api-server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "api-methods.h"
#include "api-watch.h"
#include "basic/log.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "manager.h"
#include "varlink/varlink.h"

#define READ_CHUNK (64u * 1024)      /* bytes read per read() */
#define READS_PER_WAKEUP 4           /* fairness between connections */
#define READ_AHEAD (64u * 1024)      /* input buffered behind a call in progress */
#define ACCEPT_BURST 64
#define CALLS_PER_TURN 64            /* pipelined calls taken before others get a turn */
#define JSON_MAX_DEPTH 32            /* the interface nests 6 deep */
/* Big buffers are mmapped from this size on, and returned to the system
 * when freed (glibc's default threshold rises to the largest block freed,
 * up to 32 MiB: after one burst of 16 MiB messages, later big buffers came
 * from the heap, whose free pages stayed resident). */
#define MMAP_THRESHOLD (128u * 1024)
/* malloc_trim() once this much of big buffers was freed since the last:
 * it gives back the heap's free pages (parsed messages' many small objects). */
#define TRIM_AFTER (8u * 1024 * 1024)
/* A call this large is trimmed after at once: its parsed objects are many
 * small heap blocks (2,500,000 entries of a Watch take ~190 MB), freed
 * together when it has been answered. */
#define TRIM_CALL (1u * 1024 * 1024)

/* Give the heap's free pages back to the system (after a burst). */
static void heap_trim(struct api_server *s, const char *why)
{
	int released = malloc_trim(0);

	log_debug("Freed memory returned to the system after %s (malloc_trim: %s)", why,
		  released ? "pages released" : "nothing to release");
	s->released_since_trim = 0;
}

static uint64_t max_output(const struct api_server *s)
{
	return MAX(manager_config(s->m)->max_output_queue, (uint64_t)1);
}

/* ---- connections ------------------------------------------------------------------------ */

void api_server_budget_limits(const struct api_server *s, struct api_budget_limits *ret)
{
	const struct acct_config *cf = manager_config(s->m);

	*ret = (struct api_budget_limits){
		.per_user = {
			[BUDGET_INPUT] = cf->max_input_bytes_per_user,
			[BUDGET_OUTPUT] = cf->max_output_bytes_per_user,
			[BUDGET_CONNECTIONS] = cf->max_connections_per_user,
			[BUDGET_WATCHES] = cf->max_watches_per_user,
			[BUDGET_WATCH_CGROUPS] = cf->max_watched_cgroups_per_user,
		},
		.total = {
			[BUDGET_INPUT] = cf->max_input_bytes,
			[BUDGET_OUTPUT] = cf->max_output_bytes,
			[BUDGET_CONNECTIONS] = cf->max_connections,
			[BUDGET_WATCHES] = cf->max_watches,
			[BUDGET_WATCH_CGROUPS] = cf->max_watched_cgroups,
		},
	};
}

static void budget_refresh(struct api_server *s)
{
	struct api_budget_limits l;
	api_server_budget_limits(s, &l);
	api_budget_set_limits(&s->budget, &l);
}

static uint64_t budget_limit(const struct api_server *s, enum api_budget_kind kind, enum api_budget_scope scope)
{
	return scope == BUDGET_PER_USER ? s->budget.limits.per_user[kind] : s->budget.limits.total[kind];
}

/* What a connection's input holds: its pending bytes and what the message at
 * their head will cost json-c (varlink_reader_cost()). */
static uint64_t conn_input_cost(struct conn *c)
{
	return varlink_reader_pending(c->in) + varlink_reader_cost(c->in);
}

/* Charge the connection's input (conn_input_cost()) to its user. Returns 0,
 * or -EDQUOT when it does not fit (counted once per connection: after the
 * first refusal, c->in_refused says which limit, and the charge stays). */
static int conn_charge_input(struct conn *c)
{
	struct api_server *s = c->s;
	enum api_budget_scope scope;
	uint64_t want = conn_input_cost(c);

	if (want > c->in_charged && c->in_refused)
		return -EDQUOT;
	if (api_budget_resize(&s->budget, c->cred.uid, BUDGET_INPUT, &c->in_charged, want, &scope) < 0) {
		c->in_refused = api_budget_limit_name(BUDGET_INPUT, scope);
		log_debug("Closing connection of uid %u (pid %d): input estimated to cost %" PRIu64 " bytes, %s reached",
			  (unsigned)c->cred.uid, (int)c->cred.pid, want, c->in_refused);
		return -EDQUOT;
	}
	return 0;
}

/* Give back what the input buffer holds beyond its pending bytes, and what
 * is charged beyond those and the head message's estimate. */
static void conn_input_sync(struct conn *c)
{
	struct api_server *s = c->s;
	size_t before = varlink_reader_allocated(c->in);

	varlink_reader_shrink(c->in);
	size_t after = varlink_reader_allocated(c->in);
	if (before > after && before - after >= MMAP_THRESHOLD)
		s->released_since_trim += before - after;
	/* Only down: charging up is for the read and the take, which act on
	 * a refusal. */
	uint64_t want = conn_input_cost(c);
	if (want < c->in_charged) {
		api_budget_release(&s->budget, c->cred.uid, BUDGET_INPUT, c->in_charged - want);
		c->in_charged = want;
	}
}

/* Has the peer closed its socket, both directions (POLLHUP), not only shut
 * its writing side down (a client may still read its answer then)? */
static bool peer_gone(int fd)
{
	struct pollfd p = { .fd = fd };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

static void conn_free(struct conn *c)
{
	struct api_server *s = c->s;

	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nr_conns--;
	api_budget_release(&s->budget, c->cred.uid, BUDGET_CONNECTIONS, 1);
	api_budget_release(&s->budget, c->cred.uid, BUDGET_INPUT, c->in_charged);
	api_budget_release(&s->budget, c->cred.uid, BUDGET_OUTPUT, c->out_charged);
	if (c->in_charged + c->out_charged >= MMAP_THRESHOLD)
		s->released_since_trim += c->in_charged + c->out_charged;
	if (c->wait) {
		c->wait->c = NULL; /* the pass will find nobody to answer */
		if (c->wait->gone)
			c->wait->gone(c->wait); /* a history query: called off */
	}
	c->watch = api_watch_free(c->watch);
	api_slots_conn_close(c);     /* a last fold: the slots' charges join the nets */
	api_charges_conn_release(c); /* the client's exit */
	if (c->ev_read)
		event_free(c->ev_read);
	if (c->ev_write)
		event_free(c->ev_write);
	if (c->ev_more)
		event_free(c->ev_more);
	if (c->out)
		evbuffer_free(c->out);
	varlink_reader_free(c->in);
	reply_fds_clear(&c->fds);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

/* Write what the queue holds, without blocking and without SIGPIPE. */
static void conn_flush(struct conn *c)
{
	while (evbuffer_get_length(c->out) > 0) {
		struct evbuffer_iovec v[16];
		int n = evbuffer_peek(c->out, -1, NULL, v, (int)ELEMENTSOF(v));
		if (n > (int)ELEMENTSOF(v))
			n = (int)ELEMENTSOF(v);
		/* Descriptors attached to replies (api_reply_fd()) go with their
		 * reply's first bytes: reply-fds.h. */
		ssize_t k = reply_fds_sendmsg(&c->fds, c->fd, (const struct iovec *)v, (size_t)n,
					      MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (k == -EINTR)
				continue;
			if (k != -EAGAIN)
				c->dead = true; /* EPIPE, ECONNRESET: the peer is gone */
			return;
		}
		evbuffer_drain(c->out, (size_t)k);
		c->last_active_us = acct_now_us();
	}
}

/* The input budget refused: the complete calls before are answered, this
 * one gets the error, then the connection closes. */
static void conn_refuse_input(struct conn *c)
{
	struct request rq = { .c = c, .method = M_UNKNOWN };
	enum api_budget_kind k = BUDGET_INPUT;
	enum api_budget_scope sc =
		strcmp(c->in_refused, api_budget_limit_name(k, BUDGET_PER_USER)) == 0 ? BUDGET_PER_USER : BUDGET_TOTAL;
	if (api_resource_limit(&rq, c->in_refused, budget_limit(c->s, k, sc)) < 0)
		c->dead = true;
	c->input_drained = true;
	c->closing = true;
}

/* The bound on what parsing a call may cost (PARSE_COST_RATIO and
 * PARSE_COST_SLACK, api-server.h): 16 x its bytes + 1 MiB lets every call of
 * the interface through, the costliest being a Watch of max_watch_cgroups
 * (16,384) names of one or two characters (about 20 x their bytes, 1.6 MB),
 * and refuses [{},{},...] (json-c: 264 x) and [[],[],...] (53 x) a few KB
 * in. Entries in one array or object are bounded by twice max_watch_cgroups
 * (PARSE_MAX_ITEMS()), the longest array a call takes: one longer is refused
 * as it comes, and up to that Watch's own check refuses it with the same
 * error, after the call is parsed. ChargeBatch is the exception: its entries
 * cost json-c ~33 x their text, so max_charge_batch (100,000) ordinary
 * entries could not pass; acctd reads it without json-c (api-charges.c), and
 * the reader lets a message that begins as one through, checking it whole
 * against these bounds when that reader does not take it (varlink.h,
 * varlink_reader_set_exempt()). */
void api_conn_reader_limits(struct conn *c)
{
	varlink_reader_set_exempt(c->in, api_charge_batch_exempt, NULL);
	varlink_reader_set_limits(c->in, PARSE_MAX_ITEMS(manager_config(c->s->m)->max_watch_cgroups), PARSE_COST_RATIO,
				  PARSE_COST_SLACK);
}

int api_conn_refuse_shape(struct conn *c, int r)
{
	struct request rq = { .c = c, .method = M_UNKNOWN };

	log_debug("Refused a call of uid %u (pid %d): %s", (unsigned)c->cred.uid, (int)c->cred.pid,
		  r == -E2BIG ? "an array or object longer than twice max_watch_cgroups"
			      : "too costly to parse for its size");
	if (r == -E2BIG)
		return api_resource_limit(&rq, "max_watch_cgroups", manager_config(c->s->m)->max_watch_cgroups);
	return api_invalid_parameter(&rq, "message");
}

/* Take calls from the input while nothing is in progress and the output has
 * room. */
static void conn_process(struct conn *c)
{
	struct api_server *s = c->s;
	uint64_t limit = max_output(s);
	unsigned calls = 0;

	/* A reload's max_watch_cgroups, from the next call on. */
	api_conn_reader_limits(c);
	while (!c->dead && !c->closing && !c->busy && evbuffer_get_length(c->out) < limit) {
		struct json_object *msg = NULL;
		if (calls++ == CALLS_PER_TURN) {
			/* Other connections first; the rest in a moment. */
			event_active(c->ev_more, 0, 0);
			return;
		}
		/* The call at the head is charged, with what it will cost to
		 * build, before json-c builds it; the charge stays while it is
		 * handled (conn_input_sync() gives back what it no longer holds). */
		if (conn_charge_input(c) < 0) {
			conn_refuse_input(c);
			return;
		}
		size_t pending = varlink_reader_pending(c->in);
		const char *text = NULL;
		size_t text_size = 0;
		int r = varlink_reader_next_text(c->in, &text, &text_size);
		size_t size = pending - varlink_reader_pending(c->in); /* of the call taken, if any */
		if (r > 0) {
			/* ChargeBatch reads its own calls, without json-c (the
			 * most of its cost: docs/performance.md, "ChargeBatch"). */
			r = api_charge_batch_text(c, text, text_size);
			if (r > 0) {
				if (size >= TRIM_CALL)
					heap_trim(c->s, "a large call");
				c->last_active_us = acct_now_us();
				continue;
			}
			if (r < 0) {
				log_debug_errno(r, "Closing connection of uid %u: %m", (unsigned)c->cred.uid);
				c->dead = true;
				return;
			}
			r = varlink_reader_parse_taken(c->in, text, text_size, &msg);
		}
		if (r == 0 && c->in_refused) {
			conn_refuse_input(c);
			return;
		}
		if (r == 0) {
			c->input_drained = true;
			return;
		}
		if (r == -E2BIG || r == -EFBIG) {
			/* Refused by its shape while it came: an error, and the
			 * connection goes on after it (its bytes are dropped). */
			if (api_conn_refuse_shape(c, r) < 0)
				c->dead = true;
			c->last_active_us = acct_now_us();
			continue;
		}
		if (r == -EMSGSIZE || r == -EBADMSG) {
			/* Protocol violations: one error, then the connection closes. */
			struct request rq = { .c = c, .method = M_UNKNOWN };
			log_debug("Closing connection of uid %u (pid %d): %s", (unsigned)c->cred.uid, (int)c->cred.pid,
				  r == -EMSGSIZE ? "message too large" : "malformed message");
			if (api_invalid_parameter(&rq, "message") < 0)
				c->dead = true;
			c->closing = true;
			return;
		}
		if (r < 0) {
			c->dead = true;
			return;
		}
		r = api_dispatch(c, msg);
		json_object_put(msg);
		if (size >= TRIM_CALL)
			heap_trim(c->s, "a large call");
		if (r < 0) {
			log_debug_errno(r, "Closing connection of uid %u: %m", (unsigned)c->cred.uid);
			c->dead = true;
		}
		c->last_active_us = acct_now_us();
	}
}

static void set_event(struct event *ev, bool *state, bool want)
{
	if (*state == want)
		return;
	if (want)
		event_add(ev, NULL);
	else
		event_del(ev);
	*state = want;
}

static void conn_kick(struct conn *c)
{
	struct api_server *s = c->s;
	uint64_t limit = max_output(s);
	enum api_budget_scope scope;

	conn_process(c);
	conn_input_sync(c);
	if (!c->dead && c->watch && c->eof)
		c->dead = true; /* nobody left to watch for */
	/* A Watch update only when the previous one has left: changes coalesce
	 * into the next update instead of piling up in the queue. */
	if (!c->dead && api_watch_due(c) && evbuffer_get_length(c->out) == 0 && api_watch_update(c) < 0)
		c->dead = true;
	if (!c->dead)
		conn_flush(c);
	size_t out = evbuffer_get_length(c->out);
	if (!c->dead && api_budget_resize(&s->budget, c->cred.uid, BUDGET_OUTPUT, &c->out_charged, out, &scope) < 0) {
		/* A client that does not read its replies (on this connection
		 * or its others) holds its user's output budget: this queue
		 * goes, with the connection. */
		log_debug("Closing connection of uid %u (pid %d): %zu bytes of output queued, past %s", (unsigned)c->cred.uid,
			  (int)c->cred.pid, out, api_budget_limit_name(BUDGET_OUTPUT, scope));
		c->dead = true;
	}
	if (c->dead || (c->closing && out == 0) || (c->eof && !c->busy && out == 0 && c->input_drained)) {
		conn_free(c);
		return;
	}
	bool want_read = !c->closing && !c->eof && out < limit &&
			 (!c->busy || varlink_reader_pending(c->in) < READ_AHEAD);
	set_event(c->ev_read, &c->reading, want_read);
	set_event(c->ev_write, &c->writing, out > 0);
}

static void on_conn_read(evutil_socket_t fd, short what, void *userdata)
{
	struct conn *c = userdata;

	struct api_server *s = c->s;

	for (int i = 0; i < READS_PER_WAKEUP; i++) {
		/* Ask the budget before the buffer grows. */
		size_t want = (size_t)MIN(api_budget_room(&s->budget, c->cred.uid, BUDGET_INPUT), (uint64_t)READ_CHUNK);
		if (want == 0) {
			enum api_budget_scope scope = BUDGET_PER_USER;
			(void)api_budget_charge(&s->budget, c->cred.uid, BUDGET_INPUT, 1, &scope); /* counts the refusal */
			c->in_refused = api_budget_limit_name(BUDGET_INPUT, scope);
			log_debug("Closing connection of uid %u (pid %d): %" PRIu64 " bytes of input buffered, %s reached",
				  (unsigned)c->cred.uid, (int)c->cred.pid, api_budget_used(&s->budget, c->cred.uid, BUDGET_INPUT),
				  c->in_refused);
			c->eof = true; /* read no more */
			c->input_drained = false;
			break;
		}
		size_t room = 0;
		void *p = varlink_reader_space(c->in, want, &room);
		if (!p) {
			c->dead = true;
			break;
		}
		room = MIN(room, want);
		ssize_t n = read(c->fd, p, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->eof = c->dead = true;
			break;
		}
		if (n == 0) {
			c->eof = true;
			/* Gone while a call of its runs, nothing more sent: nobody
			 * can read the answer, and closing now calls a history
			 * query off (conn_free(), wait->gone) instead of letting it
			 * run to its end, a worker held for nobody. */
			if (c->busy && varlink_reader_pending(c->in) == 0 && peer_gone(c->fd))
				c->dead = true;
			break;
		}
		c->input_drained = false;
		c->last_active_us = acct_now_us();
		/* The bytes fit (within the room asked for); what they will
		 * cost to parse is counted as they come (the commit scans
		 * them), and charged with them. */
		if (varlink_reader_commit(c->in, (size_t)n) < 0) {
			/* Beyond the message size without a NUL: what came before
			 * it is answered, then an error, then the connection
			 * closes (conn_process()). */
			(void)api_budget_resize(&s->budget, c->cred.uid, BUDGET_INPUT, &c->in_charged,
						varlink_reader_pending(c->in), NULL);
			c->eof = true;
			break;
		}
		if (conn_charge_input(c) < 0) {
			/* Complete calls before the costly one are answered; it
			 * gets the error (conn_process()). The bytes read are
			 * charged: they fit the room asked for. */
			(void)api_budget_resize(&s->budget, c->cred.uid, BUDGET_INPUT, &c->in_charged,
						MAX(c->in_charged, (uint64_t)varlink_reader_pending(c->in)), NULL);
			c->eof = true;
			c->input_drained = false;
			break;
		}
		if ((size_t)n < room)
			break;
		if (c->busy)
			break;
	}
	conn_kick(c);
}

static void on_conn_write(evutil_socket_t fd, short what, void *userdata)
{
	conn_kick(userdata);
}

static void on_conn_more(evutil_socket_t fd, short what, void *userdata)
{
	conn_kick(userdata);
}

static int conn_new(struct api_server *s, int fd, const struct ucred *cred)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		goto fail;
	c->s = s;
	c->fd = fd;
	c->cred = *cred;
	c->last_active_us = acct_now_us();
	c->input_drained = true;
	if (varlink_reader_new((size_t)manager_config(s->m)->max_message_size, JSON_MAX_DEPTH, &c->in) < 0)
		goto fail;
	api_conn_reader_limits(c);
	c->out = evbuffer_new();
	c->ev_read = event_new(manager_event_base(s->m), fd, EV_READ | EV_PERSIST, on_conn_read, c);
	c->ev_write = event_new(manager_event_base(s->m), fd, EV_WRITE | EV_PERSIST, on_conn_write, c);
	c->ev_more = event_new(manager_event_base(s->m), -1, 0, on_conn_more, c);
	if (!c->out || !c->ev_read || !c->ev_write || !c->ev_more)
		goto fail;
	/* The connection was charged by on_accept(). From here on conn_free()
	 * undoes everything. */
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nr_conns++;
	s->conns_total++;
	set_event(c->ev_read, &c->reading, true);
	return 0;
fail:
	if (c) {
		if (c->ev_read)
			event_free(c->ev_read);
		if (c->ev_write)
			event_free(c->ev_write);
		if (c->ev_more)
			event_free(c->ev_more);
		if (c->out)
			evbuffer_free(c->out);
		varlink_reader_free(c->in);
		free(c);
	}
	api_budget_release(&s->budget, cred->uid, BUDGET_CONNECTIONS, 1);
	close(fd);
	return -ENOMEM;
}

/* ---- listening --------------------------------------------------------------------------- */

static void on_listen_retry(evutil_socket_t fd, short what, void *userdata)
{
	struct api_server *s = userdata;
	event_add(s->ev_listen, NULL);
}

static void on_accept(evutil_socket_t lfd, short what, void *userdata)
{
	struct api_server *s = userdata;

	budget_refresh(s);
	for (int i = 0; i < ACCEPT_BURST; i++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			if (errno == EAGAIN)
				return;
			/* Out of descriptors or memory: pause instead of spinning on
			 * a connection we cannot take; the first pause of an episode
			 * is logged, and its end. */
			if (s->accept_pauses++ == 0)
				log_warning_errno(-errno, "Failed to accept a connection, pausing 100 ms at a time: %m");
			event_del(s->ev_listen);
			struct timeval tv = timeval_from_usec(100000);
			event_add(s->ev_listen_retry, &tv);
			return;
		}
		if (s->accept_pauses) {
			log_info("Accepting connections again, after %" PRIu64 " pauses", s->accept_pauses);
			s->accept_pauses = 0;
		}
		struct ucred cred;
		socklen_t len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			log_debug_errno(-errno, "Failed to read the peer's credentials, closing: %m");
			close(fd);
			continue;
		}
		enum api_budget_scope scope;
		int r = api_budget_charge(&s->budget, cred.uid, BUDGET_CONNECTIONS, 1, &scope);
		if (r < 0) {
			if (r == -EDQUOT)
				s->refused_total++;
			log_debug("Refused a connection of uid %u (pid %d): %s", (unsigned)cred.uid, (int)cred.pid,
				  r != -EDQUOT ? "out of memory"
				  : scope == BUDGET_TOTAL ? "too many connections" : "too many connections of this user");
			close(fd);
			continue;
		}
		if (conn_new(s, fd, &cred) < 0) {
			log_oom();
			continue; /* conn_free() closed fd */
		}
	}
}

/* A connection made inside acctd (api.h): one end of a socket pair is the
 * server's connection, with the credentials given, charged to that uid's
 * connection budget as an accepted one is; the other end is the caller's. */
int api_server_connect(struct api_server *s, uid_t uid, gid_t gid, int *ret_fd)
{
	int fds[2];
	enum api_budget_scope scope;

	if (!s || s->listen_fd < 0)
		return -ENOTCONN;
	budget_refresh(s);
	int r = api_budget_charge(&s->budget, uid, BUDGET_CONNECTIONS, 1, &scope);
	if (r < 0) {
		if (r == -EDQUOT)
			s->refused_total++;
		return r;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) < 0) {
		r = -errno;
		api_budget_release(&s->budget, uid, BUDGET_CONNECTIONS, 1);
		return r;
	}
	/* pid 0: no process of the peer's; SO_PEERGROUPS on the pair would
	 * name acctd's own groups, so only read-only methods may be called
	 * through it (page-request.c calls no other). */
	struct ucred cred = { .pid = 0, .uid = uid, .gid = gid };
	r = conn_new(s, fds[0], &cred); /* closes fds[0] and releases the charge on failure */
	if (r < 0) {
		close(fds[1]);
		return r;
	}
	*ret_fd = fds[1];
	return 0;
}

/* Idle connections, and connections whose output does not move, go. */
static void on_sweep(evutil_socket_t fd, short what, void *userdata)
{
	struct api_server *s = userdata;
	uint64_t idle = manager_config(s->m)->idle_timeout_us, now = acct_now_us();

	budget_refresh(s);
	for (struct conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		bool waiting_for_us = c->busy && evbuffer_get_length(c->out) == 0; /* Reconcile, a quiet Watch */
		if (waiting_for_us || now - c->last_active_us < idle)
			continue;
		log_debug("Closing connection of uid %u (pid %d): %s for %" PRIu64 " ms", (unsigned)c->cred.uid,
			  (int)c->cred.pid, evbuffer_get_length(c->out) ? "output stalled" : "idle", idle / 1000);
		conn_free(c);
	}
	if (s->released_since_trim >= TRIM_AFTER) {
		heap_trim(s, "a burst");
	}
	/* The period follows the configured timeout (a reload may change it). */
	uint64_t period = MIN(MAX(idle / 4, (uint64_t)10000), (uint64_t)1000000);
	if (period != s->sweep_period_us) {
		s->sweep_period_us = period;
		struct timeval tv = timeval_from_usec(period);
		event_del(s->ev_sweep);
		event_add(s->ev_sweep, &tv);
	}
}

/* Is something listening on `path`? */
static bool socket_in_use(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return true; /* do not remove what we cannot check */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	return connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno != ECONNREFUSED;
}

/* Make the directories above `path`; *ret_made_parent: its own directory
 * (the last) was made now. */
static int mkdir_parents(const char *path, bool *ret_made_parent)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	*ret_made_parent = false;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		int made = mkdir(p, 0755);
		if (made < 0 && errno != EEXIST)
			return -errno;
		*ret_made_parent = made == 0;
		*s = '/';
	}
	return 0;
}

/* Whether the directory of the socket at `path` (already made) is one that
 * only acctd's user (or root) can write: anyone else who can write it can
 * rename the socket and put a symlink or another file in its place, between
 * acctd's bind() and its chmod() or later, and have root open or change what
 * the name then points to. As systemd's RuntimeDirectory= ends up: owned by
 * the service's user, not writable by group or others. A directory acctd
 * made now is made so (whatever the umask); an existing one that is not so is
 * refused, not repaired: what others could plant in it is there already. */
static int check_socket_dir(const char *path, bool made_dir)
{
	_cleanup_free_ char *dir = strdup(path);
	struct stat st;

	if (!dir)
		return log_oom();
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0'; /* "/io.acctd": the root directory */
	else if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return log_error_errno(-errno, "Failed to open %s, the socket's directory: %m", dir);
	if (made_dir && (st.st_mode & 07777) != 0755 && fchmod(fd, 0755) == 0)
		st.st_mode = (st.st_mode & ~07777U) | 0755;
	uid_t me = geteuid();
	if ((st.st_uid == me || st.st_uid == 0) && !(st.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	char owner[64] = "";
	struct passwd pw, *found = NULL;
	char buf[1024];
	if (getpwuid_r(st.st_uid, &pw, buf, sizeof(buf), &found) == 0 && found)
		snprintf(owner, sizeof(owner), " (%s)", found->pw_name);
	/* The remedy that fits: a shared directory such as /tmp (sticky) is
	 * never to be changed; a directory of another user is theirs; only a
	 * directory of ours that is too open can simply be closed. */
	char remedy[PATH_MAX + 64];
	bool ours = st.st_uid == me || st.st_uid == 0;
	if (!ours || (st.st_mode & S_ISVTX))
		snprintf(remedy, sizeof(remedy), "a directory of acctd's own: the default /run/acctd, or a new one");
	else
		snprintf(remedy, sizeof(remedy), "a directory of acctd's own: the default /run/acctd, or chmod go-w %s",
			 dir);
	return log_error_errno(EPERM,
			       "Refusing to make the socket %s: its directory %s is owned by uid %u%s with mode %04o; it "
			       "must be owned by acctd's user (uid %u) or root and not writable by group or others, or "
			       "they could replace the socket with a symlink (use %s)",
			       path, dir, (unsigned)st.st_uid, owner, (unsigned)(st.st_mode & 07777), (unsigned)me, remedy);
}

static int bind_socket(struct api_server *s, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return log_error_errno(ENAMETOOLONG, "Socket path %s is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	bool made_dir;
	r = mkdir_parents(path, &made_dir);
	if (r < 0)
		return log_error_errno(r, "Failed to create the directory of %s: %m", path);
	r = check_socket_dir(path, made_dir);
	if (r < 0)
		return r;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return log_error_errno(EEXIST, "%s exists and is not a socket, refusing to replace it", path);
		if (socket_in_use(path))
			return log_error_errno(EADDRINUSE, "%s is in use: is another acctd running?", path);
		(void)unlink(path); /* a stale socket of a previous run */
	}
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error_errno(-errno, "Failed to create a socket: %m");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return log_error_errno(-errno, "Failed to bind %s: %m", path);
	/* Everyone may connect; the methods that change something check the
	 * caller themselves. The name is not followed: were it a symlink by
	 * now, chmod() would make its target 0666 (fchmodat2(), or glibc's
	 * O_PATH fallback, refuses a symlink with EOPNOTSUPP). Not a umask
	 * around bind(): the umask is the whole process's, and other threads
	 * create files meanwhile. */
	if (fchmodat(AT_FDCWD, path, 0666, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		return log_error_errno(r, "Failed to make %s accessible to everyone%s: %m", path,
				       r == -EOPNOTSUPP || r == -ELOOP ? " (it was replaced by a symlink)" : "");
	}
	if (lstat(path, &st) < 0)
		return log_error_errno(-errno, "Failed to check %s: %m", path);
	if (!S_ISSOCK(st.st_mode))
		return log_error_errno(EEXIST, "%s was replaced after it was made, refusing it", path);
	if (listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		(void)unlink(path);
		return log_error_errno(r, "Failed to set up %s: %m", path);
	}
	s->listen_fd = TAKE_FD(fd);
	s->own_socket = true;
	s->own_dir = made_dir;
	s->socket_dev = st.st_dev;
	s->socket_ino = st.st_ino;
	return 0;
}

/* The socket systemd passed: the one named "varlink", or the only one but
 * the charge slots of its descriptor store (api_slots_note_stored_fd()). */
static int passed_socket(struct api_server *s)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(true, &names);
	int fd = -1, others = 0, other = -1, r = 0;

	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	for (int i = 0; i < n; i++) {
		const char *name = names && names[i] ? names[i] : "";
		if (strcmp(name, "varlink") == 0)
			fd = SD_LISTEN_FDS_START + i;
		else if (r >= 0 && (r = api_slots_note_stored_fd(s, name, SD_LISTEN_FDS_START + i)) == 0) {
			others++;
			other = SD_LISTEN_FDS_START + i;
		}
		free(names ? names[i] : NULL);
	}
	if (fd < 0 && others == 1)
		fd = other;
	free(names);
	if (r < 0)
		return log_oom();
	if (fd < 0)
		return -ENOENT;
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
		return log_error_errno(EINVAL, "The socket passed by systemd is not a listening Unix stream socket");
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return log_error_errno(-errno, "Failed to set up the passed socket: %m");
	return fd;
}

/* The front end's start (struct manager_frontend): listen. */
static int on_start(struct manager *m, void *userdata)
{
	struct api_server *s = userdata;
	int r;

	struct api_budget_limits limits;
	api_server_budget_limits(s, &limits);
	api_budget_init(&s->budget, &limits);
	/* A fixed threshold (also turns off glibc's dynamic one): see MMAP_THRESHOLD. */
	(void)mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);

	int fd = passed_socket(s);
	if (fd >= 0) {
		s->listen_fd = fd;
		log_info("Listening on the varlink socket passed by systemd");
	} else if (fd != -ENOENT)
		return fd;
	else {
		const char *path = manager_config(m)->socket_path;
		if (!path)
			return log_error_errno(EINVAL, "No socket path configured");
		if (!(s->socket_path = strdup(path)))
			return log_oom();
		r = bind_socket(s, path);
		if (r < 0)
			return r;
		log_info("Listening on %s", path);
	}
	s->ev_listen = event_new(manager_event_base(m), s->listen_fd, EV_READ | EV_PERSIST, on_accept, s);
	s->ev_listen_retry = evtimer_new(manager_event_base(m), on_listen_retry, s);
	s->ev_sweep = event_new(manager_event_base(m), -1, EV_PERSIST, on_sweep, s);
	if (!s->ev_listen || !s->ev_listen_retry || !s->ev_sweep)
		return log_oom();
	s->sweep_period_us = 100000;
	struct timeval tv = timeval_from_usec(s->sweep_period_us);
	if (event_add(s->ev_listen, NULL) < 0 || event_add(s->ev_sweep, &tv) < 0)
		return log_oom();
	return 0;
}

/* After each pass: the charge slots folded, so that the engine's values
 * (the history's, the state's) are never older than a pass. */
static void on_pass(struct manager *m, const struct acct_pass_report *rep, void *userdata)
{
	api_slots_fold_all(userdata);
}

/* The history's recording of a pass: the slots' charges counted, their
 * bounds added (manager.h, charges_fold and charges_bounds). */
static void charges_fold(struct manager *m, void *userdata)
{
	api_slots_fold_all(userdata);
}

static void charges_bounds(struct manager *m, size_t res, const char *path, struct acct_charge_reading *r,
			   void *userdata)
{
	api_slots_add_bounds(userdata, res, path, r);
}

static void on_free(struct manager *m, void *userdata)
{
	(void)api_server_free(userdata);
}

int api_server_add(struct manager *m, struct api_server **ret)
{
	struct api_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->m = m;
	s->listen_fd = -1;
	s->methods = api_methods;
	s->deprecated_params = api_deprecated_params;
	s->kick = conn_kick;
	struct manager_frontend fe = {
		.name = "api", .userdata = s, .on_start = on_start, .on_pass = on_pass, .on_free = on_free,
		.charges_fold = charges_fold, .charges_bounds = charges_bounds,
		.charges_slots = api_slots_snapshot, .slots_adopt = api_slots_adopt,
	};
	r = manager_add_frontend(m, &fe);
	if (r < 0) {
		free(s);
		return r;
	}
	/* Usage and History are this server's: what their queries hold is
	 * this server's to free when the end leaves them unanswered. */
	m->history_query_drop = api_history_query_drop;
	if (ret)
		*ret = s;
	return 0;
}

struct api_server *api_server_free(struct api_server *s)
{
	if (!s)
		return NULL;
	s->closing_all = true;
	while (s->conns)
		conn_free(s->conns);
	api_slots_server_free(s);
	/* Passes still asked for: the manager will not call back (the loop has
	 * stopped), so forget them here. */
	while (s->waits)
		api_pass_wait_free(s->waits);
	if (s->ev_listen)
		event_free(s->ev_listen);
	if (s->ev_listen_retry)
		event_free(s->ev_listen_retry);
	if (s->ev_sweep)
		event_free(s->ev_sweep);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->own_socket && s->socket_path) {
		/* Only our own: another instance may have replaced it. */
		struct stat st;
		if (lstat(s->socket_path, &st) == 0 && st.st_dev == s->socket_dev && st.st_ino == s->socket_ino)
			(void)unlink(s->socket_path);
		/* A directory acctd made for its socket (/run/acctd of a
		 * foreground run) goes with it, unless something else is in it
		 * now (another instance's socket: rmdir refuses). */
		char *slash = s->own_dir ? strrchr(s->socket_path, '/') : NULL;
		if (slash && slash != s->socket_path) {
			*slash = '\0';
			(void)rmdir(s->socket_path);
		}
	}
	free(s->socket_path);
	api_budget_done(&s->budget);
	acct_json_buf_free(&s->text);
	free(s);
	return NULL;
}

void api_server_stats(const struct api_server *s, struct api_stats *ret)
{
	*ret = (struct api_stats){ 0 };
	if (!s)
		return;
	ret->connections = s->nr_conns;
	ret->connections_total = s->conns_total;
	ret->refused_total = s->refused_total;
}

void api_server_foreach_budget_refusal(const struct api_server *s,
				       void (*fn)(const char *resource, uint64_t count, void *userdata), void *userdata)
{
	if (!s)
		return;
	for (int k = 0; k < _BUDGET_MAX; k++)
		fn(api_budget_kind_name((enum api_budget_kind)k), s->budget.refused[k], userdata);
}

void api_server_foreach_request_count(const struct api_server *s,
				      void (*fn)(const char *method, const char *result, uint64_t count, void *userdata),
				      void *userdata)
{
	if (!s)
		return;
	for (int i = 0; i < _M_MAX; i++)
		for (int r = 0; r < _RES_MAX; r++)
			if (s->requests[i][r])
				fn(s->methods[i].name, api_result_names[r], s->requests[i][r], userdata);
}
