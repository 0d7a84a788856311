/* api-server.h - the varlink API's server: the listening socket and the
 * connections, each with a bounded input buffer and a bounded output queue.
 * Internal to daemon/acctd/api-*.c; the API's public face is api.h.
 *
 * Bounds. Input: at most max_message_size bytes per message, READ_CHUNK bytes
 * read per wake-up, nothing read while the connection is busy beyond
 * READ_AHEAD. Output: calls are taken only while the queue is below
 * max_output_queue, so the queue holds at most that plus the replies of one
 * call (List and Watch split theirs into messages of a bounded size); a Watch
 * produces an update only when its queue is empty (changes coalesce into the
 * next one); a connection whose queue makes no progress for idle_timeout is
 * closed, as is one that sends nothing and waits for nothing that long.
 *
 * Budgets per uid and in total (api-budget.h, docs/api.md): a read asks the
 * input budget for room first and reads no more than it grants (a user out
 * of room gets ResourceLimitExceeded and the connection closes); the input
 * buffer is shrunk to its pending bytes after every turn, so what is charged
 * is what is held, with what the call at its head will cost json-c to build
 * (varlink_reader_cost(), charged as its bytes arrive and while the call is
 * handled; a user out of room gets the same error). A message whose shape
 * would cost more than PARSE_COST_RATIO x its bytes + PARSE_COST_SLACK, or
 * that holds an array or object longer than twice max_watch_cgroups, is
 * refused as it arrives, before it is built, and its bytes are dropped up to
 * its NUL (api_conn_refuse_shape()): the connection goes on. A ChargeBatch
 * (its "method" first) is exempt while it arrives, as acctd reads it without
 * json-c (api_charge_batch_text()), allocating less than its bytes; one that
 * reader does not take meets the same bounds, whole, before json-c could. Queued output is charged after every kick: a connection
 * whose queue takes its user past the output budget is closed (the queue is
 * bounded before that by max_output_queue plus one call's replies). */
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "api-budget.h"
#include "api-dispatch.h"
#include "api-slots.h"
#include "api.h"
#include "format/ledger-json.h"
#include "reply-fds.h"

struct watch;     /* api-watch.h */
struct pass_wait; /* api-methods.h */

struct conn {
	struct api_server *s;
	struct conn *prev, *next;
	int fd;
	struct ucred cred;
	struct event *ev_read, *ev_write;
	struct event *ev_more; /* activated when calls wait after a turn */
	bool reading, writing; /* which events are added */
	struct varlink_reader *in;
	struct evbuffer *out;
	struct reply_fds fds; /* descriptors to send with replies in `out` */
	uint64_t last_active_us; /* bytes read, a reply sent, bytes written */
	bool eof;                /* the peer closed its side */
	bool input_drained;      /* no complete message left in `in` */
	bool closing;            /* close once the output is written */
	bool dead;               /* close now */
	bool busy;               /* a call in progress: later ones wait */
	struct watch *watch;
	struct pass_wait *wait;
	struct api_conn_charges *charges; /* net charges released at its close (api-charges.h) */
	struct api_conn_slots *slots;     /* charge slots, folded and freed at its close (api-slots.h) */
	/* What this connection holds of its user's budgets (api-budget.h). */
	uint64_t in_charged;  /* = varlink_reader_pending(in) after each read and each turn */
	uint64_t out_charged; /* = evbuffer_get_length(out) after each kick */
	const char *in_refused; /* the limit that stopped its reading, or NULL */
};

struct api_server {
	struct manager *m;
	int listen_fd;
	bool own_socket; /* bound by us: unlink on exit */
	bool own_dir;    /* the socket's directory was made by us: removed on exit if empty */
	char *socket_path;
	dev_t socket_dev;
	ino_t socket_ino;
	struct event *ev_listen, *ev_listen_retry, *ev_sweep;
	uint64_t accept_pauses; /* of this episode of failed accepts; 0: accepting */
	uint64_t sweep_period_us;

	struct conn *conns;
	uint64_t nr_conns, conns_total, refused_total;
	struct api_budget budget; /* per uid and in total: bytes, connections, watches */
	uint64_t released_since_trim; /* big buffers freed since the last malloc_trim() */
	struct pass_wait *waits; /* Reconcile calls waiting for their pass */
	struct api_slot_stats slot_stats; /* charge slots (api-slots.h) */
	struct api_slot *orphan_slots;    /* slots read after their connection closed (api-slots.c) */
	bool closing_all;                 /* api_server_free(): slots are not kept as orphans */
	struct api_stored_fd *stored;     /* what the store passed, until api_slots_adopt() */
	size_t nr_stored;

	uint64_t requests[_M_MAX][_RES_MAX];
	struct acct_json_buf text; /* replies written directly (Get, List) */

	/* What the layers above the dispatcher are reached through, set by
	 * api_server_add(), so that the dispatcher and the methods call down
	 * only: the method table and its deprecated names (api-methods.c), and
	 * the server's own api_conn_kick() for the methods that finish later. */
	const struct api_method *methods;
	const struct api_param_alias *deprecated_params;
	void (*kick)(struct conn *c);
};

/* Everything that may follow from an event on c: take calls, send a due
 * Watch update, write, close, and choose what to wait for. May free c. For
 * a method that answers later (Reconcile, Usage, History, Watch): through
 * the server's pointer, since the server calls the methods. */
static inline void api_conn_kick(struct conn *c)
{
	c->s->kick(c);
}

/* What parsing one call may cost: json-c's allocations, estimated (json-shape.h),
 * at most this many times its bytes, plus the slack (api-server.c says why). */
#define PARSE_COST_RATIO 16
#define PARSE_COST_SLACK (1u << 20)
/* Entries in one array or object of a message, at most. */
#define PARSE_MAX_ITEMS(max_watch_cgroups) (2 * (uint64_t)(max_watch_cgroups))

/* Set c's reader's shape limits from the configuration now: entries in one
 * array or object up to PARSE_MAX_ITEMS(max_watch_cgroups), and the cost bound
 * above. */
void api_conn_reader_limits(struct conn *c);

/* Answer a call the reader refused for its shape (varlink_reader_next()'s
 * `r`: -E2BIG, ResourceLimitExceeded naming max_watch_cgroups; -EFBIG,
 * InvalidParameter "message"). The connection goes on. Returns 0 or -ENOMEM
 * (nothing queued: close). */
int api_conn_refuse_shape(struct conn *c, int r);

/* The budgets' limits from the configuration now (a reload may change them). */
void api_server_budget_limits(const struct api_server *s, struct api_budget_limits *ret);

