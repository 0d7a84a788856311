/* admin-group.c - [api] admin_group resolved at start and reload, off the
 * event loop. The contract is in admin-group.h. */
#include "admin-group.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/util.h"
#include "basic/worker.h"

/* One resolution on the thread: owned by struct admin_group, read by the
 * loop only after the thread has said it is done. */
struct job {
	char *name;
	unsigned gen;
	int fd; /* the pipe's write end: one byte when done */
	int r;  /* 0 and gid, or a negative errno */
	gid_t gid;
};

struct admin_group {
	struct event *ev;
	int fds[2]; /* thread -> loop */
	bool valid;
	gid_t gid;
	char *name;  /* configured; NULL: root only */
	unsigned gen; /* bumped by each admin_group_set() */
	struct job *job; /* in flight, or NULL */
	struct worker *worker; /* its thread, while job is in flight */
};

static struct job *job_free(struct job *j)
{
	if (j) {
		free(j->name);
		free(j);
	}
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct job *, job_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct admin_group *, admin_group_free)

/* getgrnam_r(), with a buffer grown on ERANGE; else a decimal group ID.
 * Returns 0 and *ret_gid, or -ENOENT, -ENOMEM. May block (NSS). */
static int resolve(const char *name, gid_t *ret_gid)
{
	long hint = sysconf(_SC_GETGR_R_SIZE_MAX);
	size_t size = hint > 0 ? (size_t)hint : 4096;
	struct group gr, *grp = NULL;
	int r;

	for (;;) {
		_cleanup_free_ char *buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		r = getgrnam_r(name, &gr, buf, size, &grp);
		if (r == ERANGE && size < (1u << 20)) {
			size *= 2;
			continue;
		}
		break;
	}
	if (r == 0 && grp) {
		*ret_gid = grp->gr_gid; /* a number: the buffer may go */
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long g = strtoul(name, &end, 10);
	if (errno || *end || end == name || name[0] == '-' || g != (gid_t)g)
		return -ENOENT;
	*ret_gid = (gid_t)g;
	return 0;
}

/* One resolution, then the thread ends (on_done() joins it): a reload
 * is rare, and a thread per reload holds nothing between them. */
static void resolver_main(struct worker *w, unsigned index, void *userdata)
{
	struct job *j = userdata;

	(void)w;
	(void)index;
	j->r = resolve(j->name, &j->gid);
	/* One byte per job and one job at a time: the pipe cannot fill up. */
	(void)!write(j->fd, "x", 1);
}

static int start_job(struct admin_group *a)
{
	_cleanup_(job_freep) struct job *j = calloc(1, sizeof(*j));
	struct worker *w = NULL;
	int r;

	if (!j)
		return -ENOMEM;
	j->name = strdup(a->name);
	if (!j->name)
		return -ENOMEM;
	j->gen = a->gen;
	j->fd = a->fds[1];
	/* Signals stay the loop's (libevent's handlers): worker_start() blocks
	 * them in the resolver. */
	r = worker_new("acctd-admingrp", 1, resolver_main, j, &w);
	if (r < 0)
		return r;
	r = worker_start(w);
	if (r < 0) {
		worker_free(w);
		return r;
	}
	a->worker = w;
	a->job = TAKE_PTR(j);
	return 0;
}

static void apply(struct admin_group *a, const char *name, int r, gid_t gid)
{
	if (r < 0) {
		log_warning_errno(r, "Failed to resolve admin_group '%s', only root may make administrative calls: %m",
				  name);
		a->valid = false;
		return;
	}
	a->valid = true;
	a->gid = gid;
}

static void on_done(evutil_socket_t fd, short what, void *userdata)
{
	struct admin_group *a = userdata;
	char c;

	(void)what;
	if (read(fd, &c, 1) != 1 || !a->job)
		return;
	a->worker = worker_free(a->worker); /* the resolver wrote its byte: it is ending */
	_cleanup_(job_freep) struct job *j = TAKE_PTR(a->job);
	if (j->gen == a->gen) {
		apply(a, j->name, j->r, j->gid);
		return;
	}
	/* Set again while this one ran: resolve the newest name. */
	if (a->name) {
		int r = start_job(a);
		if (r < 0)
			log_warning_errno(r, "Failed to start resolving admin_group '%s', keeping the previous one: %m",
					  a->name);
	}
}

int admin_group_new(struct event_base *base, const char *name, struct admin_group **ret)
{
	_cleanup_(admin_group_freep) struct admin_group *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->fds[0] = a->fds[1] = -EBADF;
	if (pipe2(a->fds, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	a->ev = event_new(base, a->fds[0], EV_READ | EV_PERSIST, on_done, a);
	if (!a->ev || event_add(a->ev, NULL) < 0)
		return -ENOMEM;
	if (name && *name) {
		a->name = strdup(name);
		if (!a->name)
			return -ENOMEM;
		gid_t gid = 0;
		int r = resolve(name, &gid); /* before the loop runs: blocking is fine */
		if (r == -ENOMEM)
			return r;
		apply(a, name, r, gid);
	}
	*ret = TAKE_PTR(a);
	return 0;
}

struct admin_group *admin_group_free(struct admin_group *a)
{
	if (!a)
		return NULL;
	if (a->job) {
		a->worker = worker_free(a->worker);
		a->job = job_free(a->job);
	}
	if (a->ev)
		event_free(a->ev);
	for (int i = 0; i < 2; i++)
		if (a->fds[i] >= 0)
			(void)close(a->fds[i]);
	free(a->name);
	free(a);
	return NULL;
}

int admin_group_set(struct admin_group *a, const char *name)
{
	_cleanup_free_ char *copy = NULL;

	if (name && *name) {
		copy = strdup(name);
		if (!copy)
			return -ENOMEM;
	}
	free(a->name);
	a->name = TAKE_PTR(copy);
	a->gen++;
	if (!a->name) {
		a->valid = false;
		return 0;
	}
	if (a->job)
		return 0; /* on_done() starts the next one */
	return start_job(a);
}

bool admin_group_get(const struct admin_group *a, gid_t *ret_gid)
{
	if (!a || !a->valid)
		return false;
	*ret_gid = a->gid;
	return true;
}
