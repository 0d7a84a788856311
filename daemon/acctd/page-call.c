/* page-call.c - one varlink call for the page over an internal connection
 * (see page-call.h). */
#include "page-call.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <stdlib.h>
#include <unistd.h>

#include "api.h"
#include "basic/util.h"

struct page_call {
	struct bufferevent *bev;
	struct evbuffer *reply;
	size_t max_reply;
	size_t scanned; /* bytes of the input searched for the NUL byte */
	page_call_done_fn done;
	void *userdata;
	bool finished;
};
DEFINE_TRIVIAL_CLEANUP_FUNC(struct page_call *, page_call_free)

/* Call done once; the callee may free pc, so nothing touches pc after. */
static void finish(struct page_call *pc, int r)
{
	if (pc->finished)
		return;
	pc->finished = true;
	bufferevent_disable(pc->bev, EV_READ | EV_WRITE);
	pc->done(pc, r, r == 0 ? pc->reply : NULL, pc->userdata);
}

static void on_read(struct bufferevent *bev, void *userdata)
{
	struct page_call *pc = userdata;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr from, end;

	/* The NUL byte that ends the message, searched for in the bytes that
	 * arrived since the last look only: a List of 1,000 cgroups comes in
	 * tens of reads. */
	if (evbuffer_ptr_set(in, &from, pc->scanned, EVBUFFER_PTR_SET) < 0)
		return finish(pc, -EIO);
	end = evbuffer_search(in, "", 1, &from);
	if (end.pos < 0) {
		pc->scanned = evbuffer_get_length(in);
		if (pc->scanned > pc->max_reply)
			finish(pc, -EFBIG);
		return;
	}
	if ((size_t)end.pos > pc->max_reply)
		return finish(pc, -EFBIG);
	if (evbuffer_remove_buffer(in, pc->reply, (size_t)end.pos) != end.pos)
		return finish(pc, -ENOMEM);
	finish(pc, 0);
}

static void on_event(struct bufferevent *bev, short what, void *userdata)
{
	struct page_call *pc = userdata;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		finish(pc, -ECONNRESET);
}

int page_call_start(struct event_base *base, struct api_server *api, uid_t uid, gid_t gid, const char *call,
		    size_t len, size_t max_reply, page_call_done_fn done, void *userdata, struct page_call **ret)
{
	_cleanup_(page_call_freep) struct page_call *pc = calloc(1, sizeof(*pc));
	int fd = -EBADF;

	if (!pc)
		return -ENOMEM;
	pc->max_reply = max_reply;
	pc->done = done;
	pc->userdata = userdata;
	pc->reply = evbuffer_new();
	if (!pc->reply)
		return -ENOMEM;
	int r = api_server_connect(api, uid, gid, &fd);
	if (r < 0)
		return r;
	pc->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!pc->bev) {
		close(fd);
		return -ENOMEM;
	}
	bufferevent_setcb(pc->bev, on_read, NULL, on_event, pc);
	/* Read what is there in one go (libevent's default is 16 KiB a
	 * callback): fewer wake-ups per reply. */
	(void)bufferevent_set_max_single_read(pc->bev, 256 * 1024);
	if (bufferevent_write(pc->bev, call, len) < 0 || bufferevent_write(pc->bev, "", 1) < 0 ||
	    bufferevent_enable(pc->bev, EV_READ | EV_WRITE) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(pc);
	return 0;
}

struct page_call *page_call_free(struct page_call *pc)
{
	if (!pc)
		return NULL;
	if (pc->bev)
		bufferevent_free(pc->bev); /* closes our end: the API sees the peer gone */
	if (pc->reply)
		evbuffer_free(pc->reply);
	free(pc);
	return NULL;
}
