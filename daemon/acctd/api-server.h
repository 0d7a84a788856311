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
 * closed, as is one that sends nothing and waits for nothing that long. */
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "api-dispatch.h"
#include "api.h"
#include "ledger-json.h"

struct watch;     /* api-watch.h */
struct pass_wait; /* api-methods.h */

struct uid_count {
	uid_t uid;
	unsigned count;
};

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
	uint64_t last_active_us; /* bytes read, a reply sent, bytes written */
	bool eof;                /* the peer closed its side */
	bool input_drained;      /* no complete message left in `in` */
	bool closing;            /* close once the output is written */
	bool dead;               /* close now */
	bool busy;               /* a call in progress: later ones wait */
	struct watch *watch;
	struct pass_wait *wait;
};

struct api_server {
	struct manager *m;
	int listen_fd;
	bool own_socket; /* bound by us: unlink on exit */
	char *socket_path;
	dev_t socket_dev;
	ino_t socket_ino;
	struct event *ev_listen, *ev_listen_retry, *ev_sweep;
	uint64_t accept_pauses; /* of this episode of failed accepts; 0: accepting */
	uint64_t sweep_period_us;

	struct conn *conns;
	uint64_t nr_conns, conns_total, refused_total;
	struct uid_count *uids;
	size_t nr_uids;
	struct pass_wait *waits; /* Reconcile calls waiting for their pass */

	uint64_t requests[_M_MAX][_RES_MAX];
	struct acct_json_buf text; /* replies written directly (Get, List) */
};

/* Everything that may follow from an event on c: take calls, send a due
 * Watch update, write, close, and choose what to wait for. May free c. */
void api_conn_kick(struct conn *c);

