/* page-call.h - one call of the varlink API made for the page (page-request.h)
 * over a connection from inside acctd (api_server_connect()): the call is
 * written, its one reply read back, as any client's would be. So the page's
 * data are the API's own documents, produced by the same code (List and Get
 * by ledger-json.c's writers, Usage and History on the query workers), under
 * the same access checks, budgets and limits as the caller's uid would meet
 * on the socket, and counted in the API's request figures.
 *
 * Cost: a socket pair and a bufferevent per call, and the reply held twice
 * while it passes (the API's output queue, then the reply buffer here). */
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <sys/types.h>

struct api_server;
struct page_call;

/* The end of a call: r = 0 with the reply (one varlink message without its
 * NUL byte; the callee's to drain or leave), or a negative errno with reply
 * NULL: -ECONNRESET (the API closed the connection: it closes on a budget's
 * refusal), -EFBIG (the reply grew past max_reply), -ENOMEM. Called at most
 * once, from the event loop; the callee may free pc in it (page_call_free()),
 * and must free it at some point after. */
typedef void (*page_call_done_fn)(struct page_call *pc, int r, struct evbuffer *reply, void *userdata);

/* Connect to api as uid/gid (api_server_connect()), send `call` (JSON text
 * of len bytes, a NUL byte added) and wait for the reply on base. Returns 0
 * with *ret (done is called later, never from here), or a negative errno of
 * api_server_connect() or -ENOMEM (nothing started). */
int page_call_start(struct event_base *base, struct api_server *api, uid_t uid, gid_t gid, const char *call,
		    size_t len, size_t max_reply, page_call_done_fn done, void *userdata, struct page_call **ret);

/* Free a call, finished or not: an unfinished one's connection is closed,
 * which calls it off in the API (a History query is cancelled) and done is
 * not called. Accepts NULL; returns NULL. */
struct page_call *page_call_free(struct page_call *pc);
