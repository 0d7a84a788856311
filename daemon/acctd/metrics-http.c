/* metrics-http.c - the /metrics endpoint: evhttp on the manager's event loop,
 * content negotiation (metrics-request.c), gzip, and a page streamed in
 * chunks from the ledger, within limits no client can push past; and the
 * page's answers. Long because the scrapes' and the page's answers share the
 * connections' bookkeeping (below). GET and
 * HEAD /metrics; 404 for other paths, 405 (with Allow) for other methods.
 * Query parameters: format=text|openmetrics overrides the Accept header
 * (Prometheus 2.42 cannot choose the format in its scrape configuration, but
 * it can send params: {format: [text]}); family=LIST (repeatable, words
 * separated by commas or blanks, as in acct_metrics_families_apply())
 * replaces the configured set of families for that scrape; cgroup=GLOB and
 * max_depth=N select cgroups within what [metrics] exports, and a page that
 * selects none is bounded by [metrics] max_series (docs/metrics.md,
 * "Selection").
 *
 * The same server answers the page (docs/page.md): /, /ui/ and /api/NAME,
 * routed by page-request.c, the API calls made by page-call.c. Its answers
 * are here because they share the connections' bookkeeping with the scrapes
 * (the per-client slots, deadlines, response counts): the page's part is
 * the section "the page" below. */
#include "metrics-http.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/queue.h> /* before keyvalq_struct.h */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h> /* the request's HTTP version */
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "api.h"
#include "api-slots.h"
#include "config/config.h"
#include "core/charges.h"
#include "core/charges-avg.h"
#include "basic/hostport.h"
#include "basic/log.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "build-config.h"
#include "daemon-stats.h"
#include "format/metrics-render.h"
#include "metrics-cut-hints.h"
#include "history-recorder.h" /* history_now_us() */
#include "metrics-request.h"
#include "page-call.h"
#include "page-request.h"
#include "tcp-peer.h"

/* Limits. Request headers METRICS_MAX_HEADERS_SIZE, bodies
 * METRICS_MAX_BODY_SIZE (evhttp answers 413 beyond), no progress in either
 * direction for METRICS_IO_TIMEOUT_S (evhttp_set_timeout), a complete request
 * within METRICS_REQUEST_TIMEOUT_S of connecting or of the previous response
 * (slow clients that trickle a request), a whole response within
 * METRICS_RESPONSE_TIMEOUT_S (slow readers), and at most METRICS_MAX_CONNECTIONS
 * connections, of which METRICS_MAX_SCRAPES may be receiving a page (503 with
 * Retry-After beyond: each page holds a copy of the ledger, ~7 MB at 10,000
 * cgroups, so this bounds that memory), at most METRICS_MAX_SCRAPES_PER_PEER
 * of them for one client (tcp-peer.h: a user of this host, whatever address
 * it connects from, or a remote address), so that no client can take every
 * slot by holding slow scrapes. */
#define METRICS_LISTEN_PAUSE_US 100000 /* accept() failing for want of descriptors or memory */
#define METRICS_MAX_HEADERS_SIZE 8192
#define METRICS_MAX_BODY_SIZE 4096
#define METRICS_IO_TIMEOUT_S 15
#define METRICS_REQUEST_TIMEOUT_S 10
#define METRICS_RESPONSE_TIMEOUT_S 60
#define METRICS_MAX_SCRAPES 8 /* pages in progress at once: each holds its copy of the ledger */
#define METRICS_MAX_SCRAPES_PER_PEER 2 /* of them, one client's (a user on this host, or an address) */
#define METRICS_CHUNK (512u * 1024u)
#define METRICS_GZIP_LEVEL 1 /* the page compresses ~10x even so; higher levels cost far more CPU */

/* The page's calls (page-call.h): a reply at most this big (a List of
 * 10,000 cgroups is 2.4 MB). */
#define PAGE_CALL_MAX_REPLY (64u * 1024u * 1024u)
/* The uid and gid a remote client of the page calls the API as. */
#define PAGE_REMOTE_ID 65534

static const int response_codes[] = { 200, 302, 304, 400, 403, 404, 405, 429, 500, 503 };

struct scrape;

struct metrics_conn {
	struct metrics_server *server;
	struct metrics_conn *prev, *next;
	struct bufferevent *bev;         /* referenced until the entry is reaped */
	struct evhttp_connection *evcon; /* NULL until adopted */
	struct event *deadline;
	struct scrape *scrape;           /* the response in progress */
	struct page_call *call;          /* or the page's API call in progress (page-call.h) */
	struct evhttp_request *call_req; /* and its request */
	bool busy;                       /* a request is being answered */
	bool closed;                     /* evhttp closed it: reap */
	bool peer_known;
	struct tcp_peer peer;            /* who connected (tcp-peer.h): slots are shared per peer */
};

struct scrape {
	struct metrics_server *server;
	struct metrics_conn *conn;
	struct evhttp_request *req;
	struct acct_metrics_options opts;
	char **select; /* the request's cgroup= globs (opts.select), owned */
	struct acct_metrics_page *page;
	struct evbuffer *out;
	bool gzip;
	z_stream z;

	struct acct_metrics_self self;
	struct acct_reconcile_report reconcile;
	struct acct_metrics_count *api_requests;
	size_t nr_api_requests, cap_api_requests;
	struct acct_metrics_count api_budget_refusals[8];
	size_t nr_api_budget_refusals;
	char **api_strings;
	size_t nr_api_strings;
	struct acct_metrics_charge *charges; /* their cgroup strings owned */
	size_t nr_charges, cap_charges;
	struct acct_metrics_charge_ram *charges_ram; /* their cgroup strings owned */
	size_t nr_charges_ram;
	struct acct_metrics_count responses[ELEMENTSOF(response_codes)];
	char codes[ELEMENTSOF(response_codes)][8];
};

struct metrics_server {
	struct manager *m;
	struct api_server *api; /* its figures are on the page; NULL: none */
	struct evhttp *http;
	struct evconnlistener *listener;
	struct event *ev_adopt, *ev_reap, *ev_resume;
	uint64_t accept_pauses; /* of this episode of failed accepts; 0: accepting */
	struct metrics_conn *head, *tail; /* oldest first */
	unsigned nr_conns;                /* not closed */
	unsigned nr_scrapes;              /* pages in progress, the page's API calls included */
	uint64_t connections_total, evicted_total, refused_total, timeouts_total;
	uint64_t responses[ELEMENTSOF(response_codes)];
	double start_time; /* wall clock of the manager's start: fixed, for _created */
	struct metrics_cut_hints cut_hints; /* the max_series cut's hysteresis */
};

/* ---- connections ------------------------------------------------------------- */

/* evhttp in libevent 2.1 has no connection limit and no callback for new
 * connections, so the count is kept with evhttp_set_bevcb(): it creates each
 * connection's bufferevent, which tells of every new connection; evhttp sets
 * its connection object as the bufferevent's callback argument, which is how
 * the connection is found (bufferevent_getcb(), on the next turn of the loop,
 * before any I/O on it) and given a close callback. The server holds a
 * reference on every bufferevent it created until that connection is known
 * to be closed, so a pointer never dangles (a freed connection's bufferevent
 * has its callbacks cleared, and evhttp always keeps an event callback on a
 * live one). Past the limit the oldest connection that is not being answered
 * is closed (idle keep-alive connections, clients that never finish a
 * request), so new scrapes are served while someone holds many idle
 * connections; when every other connection is being answered, the new one is
 * closed. */

/* evhttp always sets an event callback on a connection's bufferevent (the
 * read callback comes and goes: it is cleared while a response is written),
 * and bufferevent_free() clears them all. */
static bool bev_alive(struct bufferevent *bev)
{
	bufferevent_event_cb eventcb = NULL;
	bufferevent_getcb(bev, NULL, NULL, &eventcb, NULL);
	return eventcb != NULL;
}

static bool conn_alive(struct metrics_conn *c)
{
	return !c->closed && c->evcon && bev_alive(c->bev);
}

static void mark_closed(struct metrics_conn *c)
{
	if (c->closed)
		return;
	c->closed = true;
	c->server->nr_conns--;
	if (c->deadline)
		event_del(c->deadline);
	event_active(c->server->ev_reap, EV_TIMEOUT, 0);
}

static void arm_deadline(struct metrics_conn *c, int seconds)
{
	struct timeval tv = timeval_from_usec((uint64_t)seconds * USEC_PER_SEC);
	if (c && !c->closed && c->deadline)
		event_add(c->deadline, &tv);
}

static struct scrape *scrape_free(struct scrape *sc);

/* evhttp is closing the connection. A response in progress ends here: its
 * request is freed by evhttp when still attached to the connection, else
 * (a network error detached it) here. */
static void on_conn_close(struct evhttp_connection *evcon, void *userdata)
{
	struct metrics_conn *c = userdata;
	struct scrape *sc = c->scrape;

	if (c->call) { /* the request goes with the connection: evhttp frees it */
		c->call = page_call_free(c->call);
		c->call_req = NULL;
		c->server->nr_scrapes--;
	}
	if (sc) {
		c->scrape = NULL;
		if (!evhttp_request_get_connection(sc->req))
			evhttp_request_free(sc->req);
		scrape_free(sc);
	}
	mark_closed(c);
}

/* Close a live connection (timeout, eviction, a failed response). */
static void drop_conn(struct metrics_conn *c)
{
	if (conn_alive(c))
		evhttp_connection_free(c->evcon); /* calls on_conn_close() */
	else
		mark_closed(c);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata)
{
	struct metrics_conn *c = userdata;
	if (conn_alive(c))
		c->server->timeouts_total++;
	log_debug("Closing a metrics connection that passed its deadline");
	drop_conn(c);
}

static void on_reap(evutil_socket_t fd, short what, void *userdata)
{
	struct metrics_server *s = userdata;

	for (struct metrics_conn *c = s->head, *next; c; c = next) {
		next = c->next;
		if (!c->closed && c->evcon && !bev_alive(c->bev)) {
			/* Freed without telling us (libevent 2.1 always does tell):
			 * its request went with it. */
			if (c->scrape)
				scrape_free(c->scrape);
			c->scrape = NULL;
			if (c->call) {
				c->call = page_call_free(c->call);
				s->nr_scrapes--;
			}
			mark_closed(c);
		}
		if (!c->closed)
			continue;
		if (c->prev)
			c->prev->next = c->next;
		else
			s->head = c->next;
		if (c->next)
			c->next->prev = c->prev;
		else
			s->tail = c->prev;
		if (c->deadline)
			event_free(c->deadline);
		bufferevent_decref(c->bev); /* the last reference: closes the socket */
		free(c);
	}
}

/* A new connection: evhttp asks for its bufferevent. */
static struct bufferevent *on_new_bev(struct event_base *base, void *userdata)
{
	struct metrics_server *s = userdata;
	struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	struct metrics_conn *c;

	if (s->accept_pauses) {
		log_info("Accepting metrics connections again, after %" PRIu64 " pauses", s->accept_pauses);
		s->accept_pauses = 0;
	}
	if (!bev)
		return NULL; /* evhttp makes one itself: untracked, still bounded by the timeouts */
	/* Write what is queued in few calls (libevent's default is 16 KiB a
	 * write): a page's List of 1,000 cgroups is ~330 KB. */
	(void)bufferevent_set_max_single_write(bev, METRICS_CHUNK);
	c = calloc(1, sizeof(*c));
	if (c)
		c->deadline = evtimer_new(base, on_deadline, c);
	if (!c || !c->deadline) {
		free(c);
		return bev;
	}
	c->server = s;
	c->bev = bev;
	bufferevent_incref(bev);
	c->prev = s->tail;
	if (s->tail)
		s->tail->next = c;
	else
		s->head = c;
	s->tail = c;
	s->nr_conns++;
	s->connections_total++;
	event_active(s->ev_adopt, EV_TIMEOUT, 0);
	return bev;
}

/* Runs in the same turn of the loop as the accept, before any read on the new
 * connections: learn their evhttp connections, then enforce the limit. */
static void on_adopt(evutil_socket_t fd, short what, void *userdata)
{
	struct metrics_server *s = userdata;
	struct metrics_conn *first_new = NULL;

	for (struct metrics_conn *c = s->head; c; c = c->next) {
		if (c->closed || c->evcon)
			continue;
		bufferevent_event_cb eventcb = NULL;
		void *arg = NULL;
		bufferevent_getcb(c->bev, NULL, NULL, &eventcb, &arg);
		if (!eventcb || !arg) {
			mark_closed(c); /* evhttp gave up on it already */
			continue;
		}
		c->evcon = arg;
		c->peer_known = tcp_peer_identify(bufferevent_getfd(c->bev), &c->peer) == 0;
		evhttp_connection_set_closecb(c->evcon, on_conn_close, c);
		arm_deadline(c, METRICS_REQUEST_TIMEOUT_S);
		if (!first_new)
			first_new = c;
	}
	while (s->nr_conns > METRICS_MAX_CONNECTIONS) {
		struct metrics_conn *victim = NULL;
		bool is_new = false;
		for (struct metrics_conn *c = s->head; c && !victim; c = c->next) {
			if (c == first_new)
				is_new = true;
			if (!c->closed && !c->busy && c->evcon)
				victim = c;
		}
		if (!victim)
			break;
		if (is_new)
			s->refused_total++;
		else
			s->evicted_total++;
		log_debug("Metrics connections past the limit of %u: closing the oldest idle one",
			  METRICS_MAX_CONNECTIONS);
		drop_conn(victim);
	}
}

/* accept() failed with what waiting can cure (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM): the pending connection stays readable, so without a pause
 * libevent retries at once, forever (a core and a log line each time). Stop
 * listening for METRICS_LISTEN_PAUSE_US; log the first pause of an episode
 * only, and its end (on_new_bev()). */
static struct metrics_server *listening; /* see on_accept_error() */

static void on_accept_error(struct evconnlistener *listener, void *userdata)
{
	/* The listener's argument is evhttp's own (its accept callback's), so
	 * the server is found another way: there is one per process. */
	struct metrics_server *s = listening;
	int e = EVUTIL_SOCKET_ERROR();
	if (!s || userdata != s->http)
		return;
	if (s->accept_pauses++ == 0)
		log_warning_errno(-e, "Failed to accept a metrics connection, pausing the listener %u ms at a time: %m",
				  METRICS_LISTEN_PAUSE_US / 1000);
	evconnlistener_disable(listener);
	struct timeval tv = timeval_from_usec(METRICS_LISTEN_PAUSE_US);
	event_add(s->ev_resume, &tv);
}

static void on_resume(evutil_socket_t fd, short what, void *userdata)
{
	struct metrics_server *s = userdata;
	evconnlistener_enable(s->listener);
}

/* Pages in progress for the client p: one client (a local user, a remote
 * address) gets METRICS_MAX_SCRAPES_PER_PEER of the METRICS_MAX_SCRAPES, so
 * that one that holds slow scrapes cannot take every slot from the others. */
static unsigned peer_scrapes(const struct metrics_server *s, const struct tcp_peer *p)
{
	unsigned n = 0;
	for (const struct metrics_conn *c = s->head; c; c = c->next)
		n += !c->closed && (c->scrape || c->call) && c->peer_known && tcp_peer_equal(&c->peer, p);
	return n;
}

static struct metrics_conn *find_conn(struct metrics_server *s, struct evhttp_connection *evcon)
{
	for (struct metrics_conn *c = s->head; c; c = c->next)
		if (c->evcon == evcon && !c->closed)
			return c;
	return NULL;
}

/* ---- responses ------------------------------------------------------------------ */

static void count_response(struct metrics_server *s, int code)
{
	for (size_t i = 0; i < ELEMENTSOF(response_codes); i++)
		if (response_codes[i] == code)
			s->responses[i]++;
}

/* A request is answered: back to waiting for the next one. */
static void request_done(struct metrics_conn *c)
{
	if (!c || c->closed)
		return;
	c->busy = false;
	arm_deadline(c, METRICS_REQUEST_TIMEOUT_S);
}

/* evhttp in libevent 2.1 sends a reply's body also to HEAD: the answer to
 * HEAD must be given none (a body after it would be read as the next
 * response on the connection). */
static bool is_head(struct evhttp_request *req)
{
	return evhttp_request_get_command(req) == EVHTTP_REQ_HEAD;
}

static void reply_text(struct metrics_server *s, struct metrics_conn *c, struct evhttp_request *req, int code,
		       const char *reason, const char *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *b = evbuffer_new();

	count_response(s, code);
	evhttp_add_header(h, "Content-Type", "text/plain; charset=utf-8");
	if (b && body)
		evbuffer_add(b, body, strlen(body));
	evhttp_send_reply(req, code, reason, is_head(req) ? NULL : b);
	if (b)
		evbuffer_free(b);
	request_done(c);
}

/* ---- scrapes ---------------------------------------------------------------------- */

/* A scrape starts by copying what the page shows from the ledger
 * (acct_metrics_page_new() under rcu_read_lock(): paths and values, ~550
 * bytes per cgroup, one pass over the records); then it renders about
 * METRICS_CHUNK bytes of the page, hands them to evhttp as one HTTP chunk
 * (gzip-compressed when asked for) and continues when that chunk has left for
 * the socket. A slow reader holds at most one chunk, and the daemon's memory
 * does not grow with the page. The event loop runs between chunks, and with it
 * the sweep that frees tombstones: the page holds no record pointers, so
 * nothing needs to be re-found, and every family of a page shows the same
 * instant. (Keeping a sorted array of record pointers instead, and re-finding
 * them by path after each sweep, saves the copy but reads the ledger in page
 * order, a cache miss per value: twice as slow at 10,000 cgroups.) */

static struct scrape *scrape_free(struct scrape *sc)
{
	if (!sc)
		return NULL;
	sc->server->nr_scrapes--;
	acct_metrics_page_free(sc->page);
	strv_free(sc->select);
	if (sc->out)
		evbuffer_free(sc->out);
	if (sc->gzip)
		deflateEnd(&sc->z);
	for (size_t i = 0; i < sc->nr_api_strings; i++)
		free(sc->api_strings[i]);
	free(sc->api_strings);
	free(sc->api_requests);
	for (size_t i = 0; i < sc->nr_charges; i++)
		free((char *)sc->charges[i].cgroup);
	free(sc->charges);
	for (size_t i = 0; i < sc->nr_charges_ram; i++)
		free((char *)sc->charges_ram[i].cgroup);
	free(sc->charges_ram);
	free(sc);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct scrape *, scrape_free)

static int gz_write(struct scrape *sc, int flush)
{
	do {
		struct evbuffer_iovec v;
		if (evbuffer_reserve_space(sc->out, 64 * 1024, &v, 1) < 1)
			return -ENOMEM;
		sc->z.next_out = v.iov_base;
		sc->z.avail_out = (uInt)v.iov_len;
		int r = deflate(&sc->z, flush);
		if (r == Z_STREAM_ERROR)
			return -EIO;
		v.iov_len -= sc->z.avail_out;
		if (evbuffer_commit_space(sc->out, &v, 1) < 0)
			return -ENOMEM;
		if (flush == Z_FINISH && r == Z_STREAM_END)
			return 0;
	} while (sc->z.avail_in > 0 || sc->z.avail_out == 0 || flush == Z_FINISH);
	return 0;
}

static int sink(const void *data, size_t len, void *userdata)
{
	struct scrape *sc = userdata;

	if (!sc->gzip)
		return evbuffer_add(sc->out, data, len) < 0 ? -ENOMEM : 0;
	sc->z.next_in = (Bytef *)(uintptr_t)data;
	sc->z.avail_in = (uInt)len;
	return gz_write(sc, Z_NO_FLUSH);
}

static void scrape_step(struct scrape *sc);

static void on_chunk_sent(struct evhttp_connection *evcon, void *userdata)
{
	scrape_step(userdata);
}

/* The response failed half-way: the status line is gone, so the only way to
 * tell the client is to close the connection. */
static void scrape_fail(struct scrape *sc, int r)
{
	struct metrics_conn *c = sc->conn;
	struct evhttp_request *req = sc->req;
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);

	log_warning_errno(r, "Failed to render the metrics page, closing the connection: %m");
	if (c && conn_alive(c)) {
		drop_conn(c); /* frees the scrape through on_conn_close() */
		return;
	}
	if (c)
		c->scrape = NULL;
	scrape_free(sc);
	if (evcon)
		evhttp_connection_free(evcon); /* frees the request too */
	else
		evhttp_request_free(req);
}

static void scrape_step(struct scrape *sc)
{
	int r;

	do {
		r = acct_metrics_page_render(sc->page, METRICS_CHUNK, sink, sc);
		if (r < 0) {
			scrape_fail(sc, r);
			return;
		}
		if (r == 0 && sc->gzip) {
			sc->z.avail_in = 0;
			int k = gz_write(sc, Z_FINISH);
			if (k < 0) {
				scrape_fail(sc, k);
				return;
			}
		}
		/* An empty piece (gzip keeps small inputs) is not sent: evhttp would
		 * not call back for it. */
	} while (r > 0 && evbuffer_get_length(sc->out) == 0);

	if (r > 0) {
		evhttp_send_reply_chunk_with_cb(sc->req, sc->out, on_chunk_sent, sc);
		return;
	}
	struct evhttp_request *req = sc->req;
	struct metrics_conn *c = sc->conn;
	if (evbuffer_get_length(sc->out) > 0)
		evhttp_send_reply_chunk(req, sc->out);
	log_debug("Served a metrics page of %" PRIu64 " bytes%s", acct_metrics_page_bytes(sc->page),
		  sc->gzip ? " (before gzip)" : "");
	if (c)
		c->scrape = NULL;
	scrape_free(sc);
	evhttp_send_reply_end(req); /* may close the connection: on_conn_close() */
	request_done(c);
}

static void add_api_request(const char *method, const char *result, uint64_t count, void *userdata)
{
	struct scrape *sc = userdata;

	if (sc->nr_api_requests == sc->cap_api_requests) {
		size_t cap = MAX(sc->cap_api_requests * 2, 16);
		struct acct_metrics_count *v = reallocarray(sc->api_requests, cap, sizeof(*v));
		char **str = reallocarray(sc->api_strings, 2 * cap, sizeof(*str));
		if (v)
			sc->api_requests = v;
		if (str)
			sc->api_strings = str;
		if (!v || !str)
			return;
		sc->cap_api_requests = cap;
	}
	/* Copied: the API may change its table while the page is sent. */
	_cleanup_free_ char *a = strdup(method), *b = strdup(result);
	if (!a || !b)
		return;
	sc->api_requests[sc->nr_api_requests++] = (struct acct_metrics_count){ a, b, count };
	sc->api_strings[sc->nr_api_strings++] = TAKE_PTR(a);
	sc->api_strings[sc->nr_api_strings++] = TAKE_PTR(b);
}

static void add_budget_refusal(const char *resource, uint64_t count, void *userdata)
{
	struct scrape *sc = userdata;

	if (sc->nr_api_budget_refusals < ELEMENTSOF(sc->api_budget_refusals))
		sc->api_budget_refusals[sc->nr_api_budget_refusals++] = (struct acct_metrics_count){ resource, NULL, count };
}

struct charge_gather {
	struct scrape *sc;
	const struct acct_charges_resource *res;
	struct api_server *api; /* its slots' bounds are added (NULL: none) */
	size_t index;
	struct acct_charges_avg *avg; /* the averages of the resources declared so */
};

static void add_charge(const char *path, const struct acct_charge_reading *engine, void *userdata)
{
	struct charge_gather *g = userdata;
	struct scrape *sc = g->sc;
	struct acct_charge_reading rd = *engine, *r = &rd;

	if (g->api)
		api_slots_add_bounds(g->api, g->index, path, r);

	if (sc->nr_charges == sc->cap_charges) {
		size_t cap = MAX(sc->cap_charges * 2, 16);
		struct acct_metrics_charge *v = reallocarray(sc->charges, cap, sizeof(*v));
		if (!v)
			return; /* a page with fewer series, not none */
		sc->charges = v;
		sc->cap_charges = cap;
	}
	char *cg = strdup(path); /* copied: the entry may go while the page is sent */
	if (!cg)
		return;
	bool seconds = g->res->unit == ACCT_RESOURCE_SECONDS;
	sc->charges[sc->nr_charges++] = (struct acct_metrics_charge){
		.resource = g->res->name, /* the engine's, which lives as long as the daemon */
		.cgroup = cg,
		.unit = acct_resource_unit_to_string((enum acct_resource_unit)g->res->unit),
		.divisor = seconds ? 1e6 : 1,
		.self = r->self.value,
		.subtree = r->subtree.value,
		.self_bound = r->self.bound,
		.subtree_bound = r->subtree.bound,
	};
	/* As of the last step: the age does not go to the page. */
	struct acct_charges_avg_reading ar;
	if (acct_charges_avg_read(g->avg, g->index, path, 0, &ar) == 0) {
		struct acct_metrics_charge *c = &sc->charges[sc->nr_charges - 1];
		c->has_averages = true;
		_Static_assert(ELEMENTSOF(c->averages) == _ACCT_AVG_MAX, "one average per window of charges-avg.h");
		for (int k = 0; k < _ACCT_AVG_MAX; k++)
			c->averages[k] = ar.avg[k];
	}
}

/* Every charged cgroup of every resource (docs/charges.md). */
static void gather_charges(struct metrics_server *s, struct scrape *sc)
{
	struct acct_charges *ch = manager_charges(s->m);

	/* The slots' charges up to now (docs/charges.md, "Charge slots"). */
	if (s->api)
		api_slots_fold_all(s->api);
	for (size_t i = 0; i < acct_charges_nr_resources(ch); i++) {
		struct charge_gather g = { sc, acct_charges_resource(ch, i), s->api, i, manager_charges_avg(s->m) };
		(void)acct_charges_foreach(ch, i, add_charge, &g);
	}
	sc->self.charges = sc->charges;
	sc->self.nr_charges = sc->nr_charges;
}

/* The ram resources' charged cgroups that the last full pass compared with
 * their memory (core/charges-ram.h), copied: the next pass replaces them. */
static void gather_charges_ram(struct metrics_server *s, struct scrape *sc)
{
	size_t n;
	const struct acct_charges_ram_entry *e = acct_charges_ram_entries(manager_charges_ram(s->m), &n);

	if (n == 0 || !(sc->charges_ram = calloc(n, sizeof(*sc->charges_ram))))
		return; /* out of memory: a page without them, not none */
	for (size_t i = 0; i < n; i++) {
		char *cg = strdup(e[i].path);
		if (!cg)
			break;
		struct acct_reading u = e[i].has_memory ? acct_charges_ram_unexplained(&e[i].memory, &e[i].charged)
							: (struct acct_reading){ 0 };
		sc->charges_ram[sc->nr_charges_ram++] = (struct acct_metrics_charge_ram){
			.cgroup = cg, .has_memory = e[i].has_memory, .over = e[i].over, .below_zero = e[i].below_zero,
			.unexplained = u.value, .unexplained_bound = u.bound,
		};
	}
	sc->self.charges_ram = sc->charges_ram;
	sc->self.nr_charges_ram = sc->nr_charges_ram;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* acctd's own figures, as they are when the scrape starts: those of Status
 * (daemon_stats_gather()), the API's and the endpoint's own. */
static void gather_self(struct metrics_server *s, struct scrape *sc)
{
	struct api_server *api = s->api;
	struct acct_metrics_self *x = &sc->self;
	struct daemon_stats ds;
	const struct manager_stats *ms = &ds.manager;
	double wall = wall_now();
	uint64_t mono = acct_now_us();

	daemon_stats_gather(s->m, DAEMON_STATS_PROCESS, &ds);
	x->version = ACCTD_VERSION;
	x->start_time = s->start_time;
	x->ready = ms->ready;
	x->cgroups_live = ds.cgroups_live;
	x->cgroups_dead = ds.cgroups_dead;
	x->bucket_bounds = manager_pass_bucket_bounds;
	x->nr_buckets = MIN(MANAGER_PASS_BUCKETS, ACCT_METRICS_MAX_BUCKETS);
	for (int k = 0; k < 2; k++) {
		memcpy(x->pass[k].bucket, ms->pass_hist[k].bucket, x->nr_buckets * sizeof(uint64_t));
		x->pass[k].count = ms->pass_hist[k].count;
		x->pass[k].sum_seconds = ms->pass_hist[k].sum_seconds;
	}
	memcpy(x->sample_errors, ms->sample_errors_total, sizeof(x->sample_errors));
	memcpy(x->pass_cpu_seconds, ms->pass_cpu_seconds, sizeof(x->pass_cpu_seconds));
	x->cgroups_failed_total = ms->cgroups_failed_total;
	memcpy(x->pass_parts, ms->last_fast.parts, sizeof(x->pass_parts));
	x->pass_steady = ms->last_fast.steady;
	x->log_lines_dropped = ds.log_lines_dropped;
	x->log_lines_suppressed = ds.log_lines_suppressed;
	x->tombstones_folded = ms->tombstones_folded;
	x->have_sampler = ds.have_sampler;
	x->cached_descriptors = ds.cached_descriptors;
	x->descriptors_degraded = ds.descriptors_degraded;
	sc->reconcile = *ds.reconcile; /* the page outlives this turn of the loop */
	x->reconcile = &sc->reconcile;
	x->have_domain = true;
	x->domain = ds.domain;
	x->budgets = ds.budgets;
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		x->collectors[h].collector = ds.collectors[h].collector;
		x->collectors[h].reason = ds.collectors[h].reason;
		x->collectors[h].walk_roots = ds.collectors[h].walk_roots;
	}
	x->bpf_checks = ms->bpf_checks;
	x->bpf_mismatches = ms->bpf_mismatches;
	x->kernel_passes = ms->kernel_passes;
	x->kernel_idle = ms->kernel_idle;
	x->kernel_due = ms->kernel_due;
	x->reloads = ms->reloads;
	x->reload_failures = ms->reload_failures;
	x->last_reload_ok = ds.reload_outcome != MANAGER_RELOAD_FAILED; /* true as well when none */
	x->last_reload_time = ms->reload_time_us ? wall - (double)(mono - ms->reload_time_us) / 1e6 : 0;
	if (api) {
		struct api_stats st;
		api_server_stats(api, &st);
		x->have_api = true;
		x->api_connections = st.connections;
		x->api_connections_total = st.connections_total;
		x->api_refused_total = st.refused_total;
		api_server_foreach_request_count(api, add_api_request, sc);
		x->api_requests = sc->api_requests;
		x->nr_api_requests = sc->nr_api_requests;
		api_server_foreach_budget_refusal(api, add_budget_refusal, sc);
		x->api_budget_refusals = sc->api_budget_refusals;
		x->nr_api_budget_refusals = sc->nr_api_budget_refusals;
	}
	if (ds.have_history) {
		const struct history_recorder_status *hs = &ds.history;
		x->have_history = true;
		x->history_enabled = hs->enabled;
		x->history_up = hs->state == HISTORY_STATE_RECORDING;
		x->history_bytes = hs->file_bytes;
		x->history_heap_bytes = ds.history_heap_bytes;
		x->history_errors_total = hs->errors_total;
		x->history_recordings_total = hs->recordings_total;
		x->history_records_total = hs->records_total;
		x->history_last_recording_time = (double)hs->last_recording_us / 1e6;
		x->history_last_recording_age = hs->last_recording_age_us == UINT64_MAX
							? -1
							: (double)hs->last_recording_age_us / 1e6;
		x->history_interval = (double)hs->interval_us / 1e6;
		x->history_stalled = hs->state == HISTORY_STATE_STALLED;
	}
	gather_charges(s, sc);
	gather_charges_ram(s, sc);
	x->have_http = true;
	x->http_connections = s->nr_conns;
	x->http_connections_total = s->connections_total;
	x->http_evicted_total = s->evicted_total;
	x->http_refused_total = s->refused_total;
	x->http_timeouts_total = s->timeouts_total;
	for (size_t i = 0; i < ELEMENTSOF(response_codes); i++) {
		snprintf(sc->codes[i], sizeof(sc->codes[i]), "%d", response_codes[i]);
		sc->responses[i] = (struct acct_metrics_count){ sc->codes[i], NULL, s->responses[i] };
	}
	x->http_responses = sc->responses;
	x->nr_http_responses = ELEMENTSOF(response_codes);

	x->have_process = ds.have_process;
	x->process_cpu_seconds = ds.process_cpu_seconds;
	x->process_virtual_bytes = ds.process_virtual_bytes;
	x->process_rss_bytes = ds.process_rss_bytes;
	x->process_max_fds = ds.process_max_fds;
}

void metrics_warn_unmatched(const struct manager *m)
{
	const struct acct_config *cfg = manager_config(m);
	_cleanup_free_ struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(manager_ledger(m), false, &cgs);
	if (n < 0)
		return;
	char *const *const lists[2] = { cfg->metrics_include, cfg->metrics_exclude };
	for (int l = 0; l < 2; l++)
		for (size_t g = 0; lists[l] && lists[l][g]; g++) {
			char *const one[2] = { lists[l][g], NULL };
			bool hit = false;
			for (int i = 0; i < n && !hit; i++)
				hit = strv_fnmatch_any(one, cgs[i]->path);
			if (!hit)
				log_warning("[metrics] %s glob '%s' matches no cgroup", l == 0 ? "include" : "exclude",
					    lists[l][g]);
		}
}

/* The page's options from [metrics]: max_depth, max_series, include,
 * exclude and families; memory_stat_types keeps the renderer's default (no
 * key sets it). */
static void options_from_config(const struct acct_config *cfg, struct acct_metrics_options *o)
{
	acct_metrics_options_default(o);
	o->max_depth = cfg->metrics_max_depth;
	o->max_series = cfg->metrics_max_series;
	o->include = cfg->metrics_include;
	o->exclude = cfg->metrics_exclude && cfg->metrics_exclude[0] ? cfg->metrics_exclude : NULL;
	/* validated when the configuration was loaded */
	uint32_t set = 0;
	if (cfg->metrics_families && acct_metrics_families_apply(&set, cfg->metrics_families, NULL) == 0)
		o->families = set;
}

/* A new scrape of the page that opts describes, with acctd's own figures as
 * they are now; it takes *select (opts->select), also on failure. Returns 0
 * and *ret, or -ENOMEM or the renderer's negative errno (*ret untouched). */
static int scrape_new(struct metrics_server *s, struct evhttp_request *req, const struct acct_metrics_options *opts,
		      char ***select, bool gzip, struct scrape **ret)
{
	_cleanup_(strv_freep) char **globs = TAKE_PTR(*select);
	_cleanup_(scrape_freep) struct scrape *sc = calloc(1, sizeof(*sc));
	int r;

	if (!sc)
		return -ENOMEM;
	sc->server = s;
	s->nr_scrapes++;
	sc->req = req;
	sc->opts = *opts;
	sc->select = TAKE_PTR(globs);
	sc->out = evbuffer_new();
	if (!sc->out)
		return -ENOMEM;
	if (gzip) {
		if (deflateInit2(&sc->z, METRICS_GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return -ENOMEM;
		sc->gzip = true;
	}
	gather_self(s, sc);
	rcu_read_lock();
	r = acct_metrics_page_new(manager_ledger(s->m), &sc->opts, &sc->self, acct_now_us(), &sc->page);
	rcu_read_unlock();
	if (r < 0)
		return r;
	if (sc->opts.max_series) {
		struct acct_metrics_cut cut;
		acct_metrics_page_cut(sc->page, &cut);
		metrics_cut_hint_set(&s->cut_hints, sc->opts.families, cut.depth_shown);
	}
	*ret = TAKE_PTR(sc);
	return 0;
}

static void scrape_start(struct metrics_server *s, struct metrics_conn *c, struct evhttp_request *req,
			 const struct acct_metrics_options *opts, char ***select, bool gzip)
{
	struct scrape *sc = NULL;
	int r = scrape_new(s, req, opts, select, gzip, &sc);

	if (r < 0) {
		log_warning_errno(r, "Failed to start a metrics page: %m");
		reply_text(s, c, req, 500, "Internal Server Error", "Out of memory.\n");
		return;
	}

	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Content-Type", opts->format == ACCT_METRICS_OPENMETRICS
						     ? ACCT_METRICS_CONTENT_TYPE_OPENMETRICS
						     : ACCT_METRICS_CONTENT_TYPE_TEXT);
	if (gzip)
		evhttp_add_header(h, "Content-Encoding", "gzip");
	count_response(s, 200);
	sc->conn = c;
	if (c) {
		c->scrape = sc;
		arm_deadline(c, METRICS_RESPONSE_TIMEOUT_S);
	}
	evhttp_send_reply_start(req, 200, "OK");
	scrape_step(sc); /* sc is freed once the page is sent or fails, or the connection closes */
}

/* ---- the page (page-request.h) ----------------------------------------------------------- */

/* What every answer of the page carries. */
static void page_headers(struct evkeyvalq *out)
{
	evhttp_add_header(out, "Content-Security-Policy", PAGE_CSP);
	evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(out, "Referrer-Policy", "no-referrer");
	evhttp_add_header(out, "X-Frame-Options", "DENY");
}

static void reply_body(struct metrics_server *s, struct metrics_conn *c, struct evhttp_request *req, int code,
		       const char *reason, const void *body, size_t len)
{
	struct evbuffer *b = evbuffer_new();

	count_response(s, code);
	if (b && body)
		evbuffer_add_reference(b, body, len, NULL, NULL);
	if (is_head(req)) {
		char n[24];
		snprintf(n, sizeof(n), "%zu", len);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Length", n);
	}
	evhttp_send_reply(req, code, reason, is_head(req) ? NULL : b);
	if (b)
		evbuffer_free(b);
	request_done(c);
}

/* The API's reply to a page's call: passed on as it is, with the status
 * its error means. */
static void on_page_call_done(struct page_call *pc, int r, struct evbuffer *reply, void *userdata)
{
	struct metrics_conn *c = userdata;
	struct metrics_server *s = c->server;
	struct evhttp_request *req = c->call_req;
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);

	c->call = NULL;
	c->call_req = NULL;
	s->nr_scrapes--;
	if (r < 0) {
		log_debug_errno(r, "A call of the page failed: %m");
		page_call_free(pc);
		if (r == -ECONNRESET) /* the API closes a connection past a budget */
			evhttp_add_header(out, "Retry-After", "1");
		reply_text(s, c, req, r == -ECONNRESET ? 503 : 500,
			   r == -ECONNRESET ? "Service Unavailable" : "Internal Server Error",
			   r == -ECONNRESET ? "The API closed the call (a budget of this client's?), retry later\n"
					    : "The API's reply could not be passed on\n");
		return;
	}
	const char *reason = "OK";
	/* the error's name is in the reply's first bytes */
	size_t head = MIN(evbuffer_get_length(reply), (size_t)256);
	int code = page_reply_code((const char *)evbuffer_pullup(reply, (ssize_t)head), head, &reason);
	evhttp_add_header(out, "Content-Type", "application/json");
	evhttp_add_header(out, "Cache-Control", "no-store");
	count_response(s, code);
	evhttp_send_reply(req, code, reason, is_head(req) ? NULL : reply);
	page_call_free(pc);
	request_done(c);
}

static void page_answer(struct metrics_server *s, struct metrics_conn *c, struct evhttp_request *req,
			struct page_plan *pp)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);

	page_headers(out);
	switch (pp->route) {
	case PAGE_NOT_MINE:
		break;
	case PAGE_REFUSE:
		if (pp->allow)
			evhttp_add_header(out, "Allow", "GET, HEAD");
		reply_text(s, c, req, pp->code, pp->reason, pp->body);
		return;
	case PAGE_REDIRECT:
		evhttp_add_header(out, "Location", pp->location);
		reply_text(s, c, req, 302, "Found", "The page is at /ui/\n");
		return;
	case PAGE_ASSET: {
		const char *inm = evhttp_find_header(in, "If-None-Match");
		evhttp_add_header(out, "ETag", pp->asset->etag);
		evhttp_add_header(out, "Cache-Control", "no-cache");
		if (inm && strcmp(inm, pp->asset->etag) == 0) {
			count_response(s, 304);
			evhttp_send_reply(req, 304, "Not Modified", NULL);
			request_done(c);
			return;
		}
		evhttp_add_header(out, "Content-Type", pp->asset->content_type);
		reply_body(s, c, req, 200, "OK", pp->asset->data, pp->asset->size);
		return;
	}
	case PAGE_CALL:
		break;
	}
	/* An API call: a slot of the client's and of all, as a scrape. */
	if (!c || !s->api) {
		reply_text(s, c, req, 503, "Service Unavailable",
			   !s->api ? "The varlink API is not serving: the page has no data\n" : "Retry later\n");
		return;
	}
	if ((c->peer_known && peer_scrapes(s, &c->peer) >= METRICS_MAX_SCRAPES_PER_PEER) ||
	    s->nr_scrapes >= METRICS_MAX_SCRAPES) {
		evhttp_add_header(out, "Retry-After", "1");
		reply_text(s, c, req, 503, "Service Unavailable", "Too many requests in progress, retry later\n");
		return;
	}
	/* A local user calls the API as itself; anyone else as nobody. */
	uid_t uid = c->peer_known && c->peer.local ? c->peer.uid : PAGE_REMOTE_ID;
	gid_t gid = c->peer_known && c->peer.local ? (gid_t)-1 : PAGE_REMOTE_ID;
	int r = page_call_start(manager_event_base(s->m), s->api, uid, gid, pp->call, strlen(pp->call),
				PAGE_CALL_MAX_REPLY, on_page_call_done, c, &c->call);
	if (r < 0) {
		if (r == -EDQUOT)
			evhttp_add_header(out, "Retry-After", "1");
		reply_text(s, c, req, r == -EDQUOT ? 429 : 503, r == -EDQUOT ? "Too Many Requests" : "Service Unavailable",
			   r == -EDQUOT ? "Too many API connections for this client\n" : "The varlink API is not serving\n");
		return;
	}
	c->call_req = req;
	s->nr_scrapes++;
}

static void on_request(struct evhttp_request *req, void *userdata)
{
	struct metrics_server *s = userdata;
	struct metrics_conn *c = find_conn(s, evhttp_request_get_connection(req));
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct acct_metrics_options opts;
	_cleanup_(metrics_plan_done) struct metrics_plan plan = { .max_depth = -1 };

	if (c) {
		c->busy = true;
		arm_deadline(c, METRICS_RESPONSE_TIMEOUT_S);
	}
	/* The page's paths (page-request.h), on the same listener and limits. */
	{
		struct page_plan pp;
		page_request_plan(cmd == EVHTTP_REQ_GET ? METRICS_METHOD_GET : cmd == EVHTTP_REQ_HEAD ? METRICS_METHOD_HEAD
												      : METRICS_METHOD_OTHER,
				  uri ? evhttp_uri_get_path(uri) : NULL, uri ? evhttp_uri_get_query(uri) : NULL,
				  history_now_us(), &pp);
		if (pp.route != PAGE_NOT_MINE) {
			if (req->major == 1 && req->minor == 0)
				evhttp_add_header(out, "Connection", "close");
			page_answer(s, c, req, &pp);
			page_plan_done(&pp);
			return;
		}
	}
	options_from_config(manager_config(s->m), &opts);
	/* The request alone decides the answer (metrics-request.h), the scrape
	 * limits below aside. */
	struct metrics_request mr = {
		.method = cmd == EVHTTP_REQ_GET ? METRICS_METHOD_GET : cmd == EVHTTP_REQ_HEAD ? METRICS_METHOD_HEAD
											 : METRICS_METHOD_OTHER,
		.major = req->major,
		.minor = req->minor,
		.path = uri ? evhttp_uri_get_path(uri) : NULL,
		.query = uri ? evhttp_uri_get_query(uri) : NULL,
		.accept = evhttp_find_header(in, "Accept"),
		.accept_encoding = evhttp_find_header(in, "Accept-Encoding"),
	};
	metrics_request_plan(&mr, opts.families, &plan);
	/* HTTP/1.0 has no chunked encoding: the end of the page is the end of
	 * the connection, also for a client that asked for keep-alive. */
	if (plan.close)
		evhttp_add_header(out, "Connection", "close");
	evhttp_add_header(out, "Vary", "Accept, Accept-Encoding");
	if (plan.code != 200) {
		if (plan.allow)
			evhttp_add_header(out, "Allow", "GET, HEAD");
		reply_text(s, c, req, plan.code, plan.reason, plan.body);
		return;
	}
	opts.format = plan.format;
	opts.families = plan.families;
	bool gzip = plan.gzip;
	/* The request's selection narrows what the configuration exports:
	 * its globs must match as well as the include key's, the excludes
	 * still leave their subtrees out, its depth is at most max_depth.
	 * Having chosen, it gets what it chose: no max_series cut. */
	if (metrics_plan_selects(&plan))
		opts.max_series = 0;
	else
		opts.cut_hint = metrics_cut_hint_get(&s->cut_hints, opts.families);
	if (plan.max_depth >= 0)
		opts.max_depth = MIN(opts.max_depth, (unsigned)plan.max_depth);
	opts.select = plan.cgroups;

	if (cmd == EVHTTP_REQ_GET && c && c->peer_known && peer_scrapes(s, &c->peer) >= METRICS_MAX_SCRAPES_PER_PEER) {
		char who[INET6_ADDRSTRLEN + 16];
		log_debug("Refused a metrics page to %s: %u of its pages in progress",
			  tcp_peer_to_string(&c->peer, who, sizeof(who)), METRICS_MAX_SCRAPES_PER_PEER);
		evhttp_add_header(out, "Retry-After", "1");
		reply_text(s, c, req, 503, "Service Unavailable",
			   "Too many metrics pages in progress for this client, retry later\n");
		return;
	}
	if (cmd == EVHTTP_REQ_GET && s->nr_scrapes >= METRICS_MAX_SCRAPES) {
		evhttp_add_header(out, "Retry-After", "1");
		reply_text(s, c, req, 503, "Service Unavailable", "Too many metrics pages in progress, retry later\n");
		return;
	}
	if (cmd == EVHTTP_REQ_HEAD) {
		evhttp_add_header(out, "Content-Type", opts.format == ACCT_METRICS_OPENMETRICS
							       ? ACCT_METRICS_CONTENT_TYPE_OPENMETRICS
							       : ACCT_METRICS_CONTENT_TYPE_TEXT);
		if (gzip)
			evhttp_add_header(out, "Content-Encoding", "gzip");
		count_response(s, 200);
		evhttp_send_reply(req, 200, "OK", NULL);
		request_done(c);
		return;
	}
	scrape_start(s, c, req, &opts, &plan.cgroups, gzip);
}

/* ---- the server ---------------------------------------------------------------------- */

/* The front end's start (struct manager_frontend): listen. */
static int on_start(struct manager *m, void *userdata)
{
	struct metrics_server *s = userdata;
	const char *listen = manager_config(m)->metrics_listen;
	_cleanup_free_ char *host = NULL;
	uint16_t port = 0;
	struct manager_stats ms;
	int r;

	if (!listen || strcmp(listen, "none") == 0) {
		log_info("Metrics endpoint disabled");
		return 0;
	}
	r = hostport_parse(listen, &host, &port, NULL);
	if (r < 0)
		return log_error_errno(r, "Bad metrics listen address '%s': %m", listen);

	/* evbuffer writes to sockets with writev(): a client that goes away
	 * must not kill the daemon. */
	(void)signal(SIGPIPE, SIG_IGN);

	manager_get_stats(m, &ms);
	s->start_time = wall_now() - (double)(acct_now_us() - ms.started_us) / 1e6;
	s->http = evhttp_new(manager_event_base(m));
	s->ev_adopt = event_new(manager_event_base(m), -1, 0, on_adopt, s);
	s->ev_reap = event_new(manager_event_base(m), -1, 0, on_reap, s);
	s->ev_resume = evtimer_new(manager_event_base(m), on_resume, s);
	if (!s->http || !s->ev_adopt || !s->ev_reap || !s->ev_resume)
		return log_oom();
	evhttp_set_max_headers_size(s->http, METRICS_MAX_HEADERS_SIZE);
	evhttp_set_max_body_size(s->http, METRICS_MAX_BODY_SIZE);
	evhttp_set_timeout(s->http, METRICS_IO_TIMEOUT_S);
	/* Every method reaches the handler, which answers 405 (evhttp would say 501). */
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
						    EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
						    EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_bevcb(s->http, on_new_bev, s);
	evhttp_set_gencb(s->http, on_request, s);
	errno = 0;
	struct evhttp_bound_socket *bound = evhttp_bind_socket_with_handle(s->http, host, port);
	if (!bound) {
		r = errno > 0 ? -errno : -EADDRNOTAVAIL;
		return log_error_errno(r, "Failed to listen for metrics on %s: %m", listen);
	}
	s->listener = evhttp_bound_socket_get_listener(bound);
	listening = s;
	evconnlistener_set_error_cb(s->listener, on_accept_error);
	log_info("Serving metrics on http://%s/metrics", listen);
	return 0;
}

static void on_scanned(struct manager *m, void *userdata)
{
	metrics_warn_unmatched(m);
}

static void on_free(struct manager *m, void *userdata)
{
	(void)metrics_server_free(userdata);
}

int metrics_server_add(struct manager *m, struct api_server *api)
{
	struct metrics_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->m = m;
	s->api = api;
	struct manager_frontend fe = {
		.name = "metrics", .userdata = s, .on_start = on_start, .on_scanned = on_scanned, .on_free = on_free,
	};
	int r = manager_add_frontend(m, &fe);
	if (r < 0)
		free(s);
	return r;
}

struct metrics_server *metrics_server_free(struct metrics_server *s)
{
	if (!s)
		return NULL;
	if (listening == s)
		listening = NULL;
	/* Closes every connection (on_conn_close() ends the responses). */
	if (s->http)
		evhttp_free(s->http);
	for (struct metrics_conn *c = s->head; c; c = c->next)
		if (!c->closed) {
			c->closed = true; /* untracked close: the reap below still drops the reference */
			s->nr_conns--;
		}
	if (s->ev_reap)
		on_reap(-1, 0, s);
	if (s->ev_adopt)
		event_free(s->ev_adopt);
	if (s->ev_reap)
		event_free(s->ev_reap);
	if (s->ev_resume)
		event_free(s->ev_resume);
	free(s);
	return NULL;
}
