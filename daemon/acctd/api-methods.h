/* api-methods.h - what the varlink API's server needs to know of the methods
 * (api-methods.c): the Reconcile calls waiting for a pass, which the server
 * detaches from a closing connection and frees when it ends. Internal to
 * daemon/acctd/api-*.c. */
#pragma once

#include "api-dispatch.h"

/* A Reconcile call waiting for its pass, on the server's list s->waits. */
struct pass_wait {
	struct api_server *s;
	struct conn *c; /* NULL once the connection is gone (or for oneway) */
	struct request rq;
	struct pass_wait *prev, *next;
	/* Called once the connection closed while waiting (after c = NULL),
	 * on the event loop: a history query is called off. NULL: none. */
	void (*gone)(struct pass_wait *w);
};

/* Unlink w from its server's list and free it. The manager must not call
 * back for it afterwards: use it only where the loop has stopped (the
 * server's end); a closing connection sets w->c = NULL instead. */
void api_pass_wait_free(struct pass_wait *w);
