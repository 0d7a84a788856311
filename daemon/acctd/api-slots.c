/* api-slots.c - the varlink method OpenChargeSlot and the charge slots a
 * connection holds (api-slots.h, docs/charges.md "Charge slots"): what acctd
 * keeps of each slot (its mapping, the total it folded last and that read's
 * bound), the folds that move what clients charged into the charge engine,
 * and the drop of a slot
 * whose client wrote garbage into it.
 *
 * Why fold a running total. A slot holds the client's net charge since the
 * slot was created (node sums + shard residues); acctd charges the engine
 * the difference from the total it folded last, so each fold is one charge
 * of the engine whatever the number of client charges, and a fold that
 * fails charges nothing and is simply retried with the next one.
 *
 * Slots and the connection's net charges. A fold goes through
 * api_charges_apply_slot(), which keeps the connection's net charge as
 * Charge does: a slot's charges are released at the connection's close
 * where the resource says release_on_exit, like its varlink charges.
 *
 * Slots that outlive their connection. libacct-client promises that a slot
 * is independent of the connection once open (acct-client.h). A slot of a
 * resource without release_on_exit therefore stays read after its
 * connection closes, as an orphan of the server, for as long as the process
 * that opened it lives (kill(pid, 0) at each fold: acctd holds no descriptor
 * per slot, so no pidfd); then it is folded a last time and freed. With
 * release_on_exit the close is the client's exit (docs/charges.md): the
 * slot is folded, released with the connection's net charge and freed.
 *
 * Slots across a restart (api-slots.h, docs/charges.md "Durability"). Under
 * systemd each slot's memfd and a pidfd of its client go into the service's
 * descriptor store; the state file records what acctd needs to read the
 * slot again (its geometry: nothing is read back from the slot but the id in
 * its header, which only has to match) and the part of the slot's total that
 * the saved charges hold, so that the next start folds exactly the rest:
 * nothing counted twice, nothing lost. An adopted slot has no connection: it
 * is an orphan, watched through its pidfd. */
#include "api-slots.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "api-charges.h"
#include "api-dispatch.h"
#include "api-server.h"
#include "basic/log.h"
#include "basic/path.h"
#include "basic/util.h"
#include "config/config.h"
#include "core/charges.h"
#include "format/charges-state.h"
#include "manager.h"
#include "percpu/charge-slot-owner.h"

struct api_slot {
	struct api_slot *next;
	struct acct_slot_owner *owner;
	size_t res;
	uint64_t serial;  /* the engine's entry of the cgroup (charges.h) */
	int64_t total;    /* the slot's total at the last good read, folded */
	uint64_t bound;   /* that read's bound */
	pid_t pid;        /* who opened it (the connection's peer) */
	uid_t uid;
	int64_t id;       /* in its header and its descriptors' names in the store */
	bool stored;      /* in systemd's descriptor store */
	int pidfd;        /* an adopted slot's client (-EBADF: kill(pid, 0)) */
	char path[];      /* normalised */
};

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* The store's names of slot `id`'s descriptors. */
#define STORE_SLOT "slot-"
#define STORE_PID "slotpid-"

/* Put fd into the service's descriptor store as PREFIX-ID. Returns > 0 when
 * sent, or the negative errno. systemd keeps at most FileDescriptorStoreMax
 * of them and drops the rest with a warning of its own: acctd cannot tell. */
static int store_put(int fd, const char *prefix, int64_t id)
{
	char msg[96];
	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s%" PRId64, prefix, id);
	return sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
}

/* Take slot `id`'s descriptors out of the store (both names). */
static void store_remove(int64_t id)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=" STORE_SLOT "%" PRId64, id);
	(void)sd_notify(0, msg);
	snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=" STORE_PID "%" PRId64, id);
	(void)sd_notify(0, msg);
}

/* A pidfd of connection c's peer: SO_PEERPIDFD (the process that
 * connected, Linux 6.5), else pidfd_open() of its SO_PEERCRED pid. */
static int peer_pidfd(const struct conn *c)
{
	int fd = -1;
	socklen_t len = sizeof(fd);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0)
		return fd;
	fd = (int)syscall(SYS_pidfd_open, c->cred.pid, 0);
	return fd >= 0 ? fd : -errno;
}

struct api_conn_slots {
	struct api_slot *head;
	unsigned n;
};

/* Free a slot; `forget`: acctd lets it go for good, so out of the store
 * (not at a stop: the store keeps it for the next start). */
static struct api_slot *slot_free(struct api_slot *sl, bool forget)
{
	if (!sl)
		return NULL;
	if (forget && sl->stored)
		store_remove(sl->id);
	if (sl->pidfd >= 0)
		(void)close(sl->pidfd);
	acct_slot_owner_free(sl->owner);
	free(sl);
	return NULL;
}

/* A fresh slot id: random, > 0 (unique across restarts, unlike a count). */
static int64_t new_id(void)
{
	uint64_t v = 0;
	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = (uint64_t)acct_now_us() ^ ((uint64_t)getpid() << 32);
	return (int64_t)(v & (uint64_t)INT64_MAX) ?: 1;
}

/* Put a new slot's memfd and its client's pidfd into the store. Failures
 * are logged: the slot works, it just does not outlive this acctd. */
static void slot_store(struct api_slot *sl, const struct conn *c, int memfd)
{
	int r = store_put(memfd, STORE_SLOT, sl->id);
	if (r <= 0) {
		log_debug_errno(r, "Failed to put a charge slot into the descriptor store: %m");
		return;
	}
	sl->stored = true;
	_cleanup_close_ int pidfd = peer_pidfd(c);
	if (pidfd < 0 || store_put(pidfd, STORE_PID, sl->id) <= 0)
		log_debug("No pidfd of pid %d in the descriptor store: after a restart its slot is kept "
			  "while a process of that pid lives",
			  (int)sl->pid);
}

int api_slots_open(struct conn *c, size_t res, const char *path, int *ret_fd)
{
	struct api_server *s = c->s;
	struct acct_charges *ch = manager_charges(s->m);
	const struct acct_charges_resource *rc = acct_charges_resource(ch, res);
	unsigned max = manager_config(s->m)->max_charge_slots_per_connection;
	_cleanup_free_ struct api_slot *sl = NULL;
	uint64_t serial = 0;
	int r;

	if (!rc)
		return -EINVAL;
	if (c->slots && c->slots->n >= max)
		return -EDQUOT;
	if (!c->slots) {
		c->slots = calloc(1, sizeof(*c->slots));
		if (!c->slots)
			return -ENOMEM;
	}
	sl = malloc(sizeof(*sl) + strlen(path) + 1);
	if (!sl)
		return -ENOMEM;
	/* A charge of 0 creates the cgroup's entry and names it by its serial,
	 * so that a fold never charges a cgroup created again under the path. */
	r = acct_charges_add_serial(ch, res, path, 0, 0, &serial);
	if (r < 0)
		return r;
	*sl = (struct api_slot){ .res = res, .serial = serial, .pid = c->cred.pid, .uid = c->cred.uid,
				 .id = new_id(), .pidfd = -EBADF };
	strcpy(sl->path, path);
	struct acct_slot_options o = { .mode = ACCT_MODE_AUTO, .budget = rc->budget, .id = (uint64_t)sl->id };
	r = acct_slot_create(&o, &sl->owner);
	if (r < 0)
		return r;
	int fd = acct_slot_owner_take_fd(sl->owner);
	if (fd < 0) {
		acct_slot_owner_free(sl->owner);
		return fd;
	}
	/* Under systemd (NOTIFY_SOCKET), into its descriptor store, to
	 * outlive this acctd. */
	const char *notify = getenv("NOTIFY_SOCKET");
	if (notify && *notify)
		slot_store(sl, c, fd);
	sl->next = c->slots->head;
	c->slots->head = TAKE_PTR(sl);
	c->slots->n++;
	s->slot_stats.open++;
	s->slot_stats.opened_total++;
	*ret_fd = fd;
	return 0;
}

/* Fold one slot of connection c (NULL: an orphan of server s). Returns 0
 * (folded, or nothing to fold, or a transient failure retried next time) or
 * 1 when the slot must be dropped. */
static int slot_fold(struct api_server *s, struct conn *c, struct api_slot *sl)
{
	struct acct_charges *ch = manager_charges(s->m);
	struct acct_reading rd;
	int r;

	r = acct_slot_read(sl->owner, &rd);
	if (r == -EBADMSG) {
		log_warning("Dropped the %s charge slot of pid %d (uid %u) for %s: its memory is corrupt; "
			    "its last good total %" PRId64 " stays charged",
			    acct_charges_resource(ch, sl->res)->name, (int)sl->pid, (unsigned)sl->uid, sl->path,
			    sl->total);
		s->slot_stats.corrupt_total++;
		return 1;
	}
	if (r < 0)
		return 0;
	/* Both totals are within +/- 2^62 (acct_slot_read() checks): no overflow. */
	int64_t diff = rd.value - sl->total;
	if (diff != 0) {
		r = c ? api_charges_apply_slot(c, sl->res, sl->path, diff, sl->serial)
		      : acct_charges_add_serial(ch, sl->res, sl->path, diff, sl->serial, NULL);
		if (r == -ESTALE) {
			/* The cgroup went, and its charges by the removal rule. */
			log_debug("Dropped a charge slot of pid %d for %s: the cgroup was removed", (int)sl->pid,
				  sl->path);
			s->slot_stats.gone_total++;
			return 1;
		}
		if (r == -ERANGE) {
			/* A total no honest client reaches in one cgroup's range. */
			log_warning("Dropped the %s charge slot of pid %d (uid %u) for %s: its total would take a "
				    "charged value beyond -2^62..2^62; its last good total %" PRId64 " stays charged",
				    acct_charges_resource(ch, sl->res)->name, (int)sl->pid, (unsigned)sl->uid, sl->path,
				    sl->total);
			s->slot_stats.corrupt_total++;
			return 1;
		}
		if (r < 0) {
			log_debug_errno(r, "Failed to fold a charge slot for %s, retrying at the next fold: %m",
					sl->path);
			return 0;
		}
		s->slot_stats.folds_total++;
	}
	sl->total = rd.value;
	sl->bound = rd.bound;
	return 0;
}

/* Whether the process that opened an orphan is gone: its pidfd readable
 * (an adopted slot's), else no process of its pid. */
static bool opener_gone(const struct api_slot *sl)
{
	if (sl->pidfd >= 0) {
		struct pollfd p = { .fd = sl->pidfd, .events = POLLIN };
		return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
	}
	return sl->pid <= 0 || (kill(sl->pid, 0) < 0 && errno == ESRCH);
}

/* An orphan of a release_on_exit resource (adopted after a restart: its
 * connection is of the last run) whose client exited: released as its
 * connection's close would have (its whole total, folded just before). */
static void orphan_release(struct api_server *s, struct api_slot *sl)
{
	struct acct_charges *ch = manager_charges(s->m);

	if (!acct_charges_resource(ch, sl->res)->release_on_exit || sl->total == 0)
		return;
	int r = acct_charges_add_serial(ch, sl->res, sl->path, -sl->total, sl->serial, NULL);
	if (r < 0 && r != -ESTALE)
		log_warning_errno(r, "Failed to release the charge slot of pid %d for %s: %m", (int)sl->pid, sl->path);
}

/* Fold the list at *head (of connection c, NULL: the orphans), the slots
 * at or under `prefix` only (NULL: all), dropping what must go. Returns the
 * number of slots freed. */
static unsigned list_fold(struct api_server *s, struct conn *c, struct api_slot **head, const char *prefix)
{
	size_t plen = prefix ? strlen(prefix) : 0;
	unsigned freed = 0;

	for (struct api_slot **p = head; *p;) {
		struct api_slot *sl = *p;
		if (prefix && !path_under(sl->path, prefix, plen)) {
			p = &sl->next;
			continue;
		}
		/* The liveness check first: a slot's last charges are folded
		 * below whatever the answer. */
		bool gone = !c && opener_gone(sl);
		int drop = slot_fold(s, c, sl);
		if (drop > 0 || gone) {
			if (gone && drop == 0)
				orphan_release(s, sl);
			*p = sl->next;
			slot_free(sl, true);
			s->slot_stats.open--;
			freed++;
		} else
			p = &sl->next;
	}
	return freed;
}

static void conn_fold(struct conn *c, const char *prefix)
{
	if (c->slots)
		c->slots->n -= list_fold(c->s, c, &c->slots->head, prefix);
}

void api_slots_fold_under(struct api_server *s, const char *prefix)
{
	if (s->slot_stats.open == 0)
		return;
	for (struct conn *c = s->conns; c; c = c->next)
		conn_fold(c, prefix);
	(void)list_fold(s, NULL, &s->orphan_slots, prefix);
}

void api_slots_fold_all(struct api_server *s)
{
	api_slots_fold_under(s, NULL);
}

void api_slots_add_bounds(struct api_server *s, size_t res, const char *path, struct acct_charge_reading *r)
{
	size_t len = strlen(path);

	if (s->slot_stats.open == 0)
		return;
	for (struct conn *c = s->conns; c; c = c->next) {
		if (!c->slots)
			continue;
		for (struct api_slot *sl = c->slots->head; sl; sl = sl->next) {
			if (sl->res != res || !path_under(sl->path, path, len))
				continue;
			r->subtree.bound += sl->bound;
			if (strcmp(sl->path, path) == 0)
				r->self.bound += sl->bound;
		}
	}
	for (struct api_slot *sl = s->orphan_slots; sl; sl = sl->next)
		if (sl->res == res && path_under(sl->path, path, len)) {
			r->subtree.bound += sl->bound;
			if (strcmp(sl->path, path) == 0)
				r->self.bound += sl->bound;
		}
}

void api_slots_conn_close(struct conn *c)
{
	if (!c->slots)
		return;
	struct api_server *s = c->s;
	struct acct_charges *ch = manager_charges(s->m);

	conn_fold(c, NULL);
	for (struct api_slot *sl = c->slots->head, *next; sl; sl = next) {
		next = sl->next;
		if (acct_charges_resource(ch, sl->res)->release_on_exit || s->closing_all) {
			/* The client's exit: released with the connection's net
			 * (at a stop: kept in the store for the next start). */
			slot_free(sl, !s->closing_all);
			s->slot_stats.open--;
		} else {
			sl->next = s->orphan_slots;
			s->orphan_slots = sl;
		}
	}
	free(c->slots);
	c->slots = NULL;
}

void api_slots_server_free(struct api_server *s)
{
	for (struct api_slot *sl = s->orphan_slots, *next; sl; sl = next) {
		next = sl->next;
		slot_free(sl, false);
	}
	s->orphan_slots = NULL;
	for (size_t i = 0; i < s->nr_stored; i++)
		(void)close(s->stored[i].fd);
	free(s->stored);
	s->stored = NULL;
	s->nr_stored = 0;
}

/* ---- across a restart ----------------------------------------------------- */

int api_slots_note_stored_fd(struct api_server *s, const char *name, int fd)
{
	bool pidfd = strncmp(name, STORE_PID, strlen(STORE_PID)) == 0;
	const char *num = pidfd ? name + strlen(STORE_PID)
		: strncmp(name, STORE_SLOT, strlen(STORE_SLOT)) == 0 ? name + strlen(STORE_SLOT) : NULL;
	char *end = NULL;

	if (!num)
		return 0;
	errno = 0;
	long long id = strtoll(num, &end, 10);
	if (errno || end == num || *end || id <= 0) {
		/* Ours by its name, but no id of ours: let it go. */
		char msg[300];
		snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
		(void)sd_notify(0, msg);
		(void)close(fd);
		return 1;
	}
	struct api_stored_fd *v = reallocarray(s->stored, s->nr_stored + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->stored = v;
	s->stored[s->nr_stored++] = (struct api_stored_fd){ .id = id, .pidfd = pidfd, .fd = fd };
	return 1;
}

static int add_record(struct api_server *s, const struct api_slot *sl, struct charges_state *st)
{
	const struct acct_charges_resource *rc = acct_charges_resource(manager_charges(s->m), sl->res);
	struct acct_slot_geometry g;

	acct_slot_owner_geometry(sl->owner, &g);
	struct charges_state_slot rec = {
		.id = sl->id, .resource = (char *)rc->name, .path = (char *)sl->path,
		.folded = rc->release_on_exit ? 0 : sl->total, .pid = sl->pid > 0 ? sl->pid : 1,
		.nr_shards = g.nr_shards, .nr_nodes = g.nr_nodes, .batch = g.batch,
	};
	int r = charges_state_add_slot(st, &rec);
	return r == -EINVAL ? 0 : r; /* never one of ours */
}

int api_slots_snapshot(struct manager *m, struct charges_state *st, void *server)
{
	struct api_server *s = server;
	int r = 0;

	for (struct conn *c = s->conns; r == 0 && c; c = c->next)
		for (struct api_slot *sl = c->slots ? c->slots->head : NULL; r == 0 && sl; sl = sl->next)
			if (sl->stored)
				r = add_record(s, sl, st);
	for (struct api_slot *sl = s->orphan_slots; r == 0 && sl; sl = sl->next)
		if (sl->stored)
			r = add_record(s, sl, st);
	return r;
}

/* The stored descriptor of slot id (pidfd or memfd), taken; -EBADF if none. */
static int take_stored(struct api_server *s, int64_t id, bool pidfd)
{
	for (size_t i = 0; i < s->nr_stored; i++)
		if (s->stored[i].id == id && s->stored[i].pidfd == pidfd && s->stored[i].fd >= 0)
			return TAKE_FD(s->stored[i].fd);
	return -EBADF;
}

/* Take up the slot that record `rec` names, its memfd `fd`. Returns 0 or a
 * negative errno with the reason in *why (the slot is then let go). */
static int adopt_one(struct api_server *s, const struct charges_state_slot *rec, int fd, const char **why)
{
	struct acct_charges *ch = manager_charges(s->m);
	_cleanup_free_ struct api_slot *sl = NULL;
	struct acct_reading rd;
	int r;

	int res = acct_charges_resource_index(ch, rec->resource);
	if (res < 0 || strlen(rec->path) > CGROUP_PATH_MAX) {
		*why = "its resource is no longer declared";
		return -ENOENT;
	}
	if (!api_cgroup_tracked(s->m, rec->path)) {
		*why = "its cgroup is gone (its charges went by the removal rule)";
		return -ESTALE;
	}
	sl = calloc(1, sizeof(*sl) + strlen(rec->path) + 1);
	if (!sl)
		return -ENOMEM;
	*sl = (struct api_slot){ .res = (size_t)res, .pid = (pid_t)rec->pid, .uid = (uid_t)-1, .id = rec->id,
				 .stored = true, .pidfd = -EBADF };
	strcpy(sl->path, rec->path);
	struct acct_slot_geometry g = { .nr_shards = (uint32_t)MIN(rec->nr_shards, (int64_t)UINT32_MAX),
					.nr_nodes = (uint32_t)MIN(rec->nr_nodes, (int64_t)UINT32_MAX),
					.batch = rec->batch };
	r = acct_slot_adopt(fd, &g, (uint64_t)rec->id, &sl->owner);
	if (r < 0) {
		*why = r == -EBADMSG ? "its header is not the one acctd wrote" : "its memory is not the slot acctd made";
		return r;
	}
	r = acct_slot_read(sl->owner, &rd);
	if (r < 0) {
		*why = "its memory is corrupt";
		acct_slot_owner_free(TAKE_PTR(sl->owner));
		return r;
	}
	r = acct_charges_add_serial(ch, sl->res, sl->path, 0, 0, &sl->serial);
	/* What the saved charges hold of it is rec->folded: the rest is new. */
	if (r == 0)
		r = acct_charges_add_serial(ch, sl->res, sl->path, rd.value - rec->folded, sl->serial, NULL);
	if (r < 0) {
		*why = "its total does not fit the cgroup's charges";
		acct_slot_owner_free(TAKE_PTR(sl->owner));
		return r;
	}
	sl->total = rd.value;
	sl->bound = rd.bound;
	sl->pidfd = take_stored(s, rec->id, true);
	sl->next = s->orphan_slots;
	s->orphan_slots = TAKE_PTR(sl);
	s->slot_stats.open++;
	s->slot_stats.adopted_total++;
	return 0;
}

void api_slots_adopt(struct manager *m, const struct charges_state *loaded, void *server)
{
	struct api_server *s = server;

	for (size_t i = 0; i < s->nr_stored; i++) {
		struct api_stored_fd *sf = &s->stored[i];
		const char *why = "the state file does not record it (opened after its last write)";
		int r = -ENOENT;

		if (sf->fd < 0 || sf->pidfd)
			continue;
		for (size_t k = 0; loaded && k < loaded->nr_slots; k++)
			if (loaded->slots[k].id == sf->id) {
				r = adopt_one(s, &loaded->slots[k], sf->fd, &why);
				break;
			}
		if (r == 0)
			log_info("Took up charge slot %" PRId64 " from the descriptor store", sf->id);
		else {
			log_warning("Let go of charge slot %" PRId64 " of the descriptor store: %s", sf->id, why);
			s->slot_stats.not_adopted_total++;
			store_remove(sf->id);
		}
	}
	/* acctd keeps no descriptor of a slot (the store does): the memfds
	 * are closed (mapped, or let go above); a pidfd still here is of a slot
	 * not taken up (let go above, or never a memfd of it): out of the
	 * store too. */
	for (size_t i = 0; i < s->nr_stored; i++) {
		struct api_stored_fd *sf = &s->stored[i];
		if (sf->fd < 0)
			continue;
		if (sf->pidfd) {
			bool adopted = false;
			for (struct api_slot *sl = s->orphan_slots; sl; sl = sl->next)
				adopted |= sl->id == sf->id;
			if (!adopted)
				store_remove(sf->id);
		}
		(void)close(TAKE_FD(sf->fd));
	}
	free(s->stored);
	s->stored = NULL;
	s->nr_stored = 0;
}

void api_slots_stats(const struct api_server *s, struct api_slot_stats *ret)
{
	*ret = s->slot_stats;
}

/* ---- the method ------------------------------------------------------------- */

enum { SLOT_RESOURCE, SLOT_CGROUP, _SLOT_MAX };
const char *const api_open_charge_slot_params[_SLOT_MAX + 1] = {
	[SLOT_RESOURCE] = "resource",
	[SLOT_CGROUP] = "cgroup",
};

int api_method_open_charge_slot(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	struct acct_charges *ch = manager_charges(m);
	char path[CGROUP_PATH_MAX + 1];
	const char *name = NULL;
	_cleanup_close_ int fd = -EBADF;
	int r;

	if (varlink_param_string(params, api_open_charge_slot_params[SLOT_RESOURCE], &name) <= 0)
		return api_invalid_parameter(rq, api_open_charge_slot_params[SLOT_RESOURCE]);
	int res = acct_charges_resource_index(ch, name);
	if (res < 0)
		return api_reply_error_string(rq, RES_NO_SUCH_RESOURCE, "resource", name);
	r = api_charge_target(rq, api_param(params, api_open_charge_slot_params[SLOT_CGROUP]),
			      api_open_charge_slot_params[SLOT_CGROUP], path);
	if (r < 0 || r == PARAM_REPLIED)
		return r;
	r = api_slots_open(rq->c, (size_t)res, path, &fd);
	if (r == -EDQUOT)
		return api_resource_limit(rq, "max_charge_slots_per_connection",
					  manager_config(m)->max_charge_slots_per_connection);
	if (r < 0)
		/* The connection closes: a slot acctd cannot make is its failure. */
		return log_warning_errno(r, "Failed to create a charge slot for %s: %m", path);
	log_debug("Opened a %s charge slot for %s to pid %d", name, path, (int)rq->c->cred.pid);
	_cleanup_json_ struct json_object *p = json_object_new_object();
	/* "slot": the index of the descriptor among the reply's (one). */
	if (!p || api_json_add(p, "slot", json_object_new_int64(0)) < 0)
		return -ENOMEM;
	return api_reply_fd(rq, TAKE_PTR(p), TAKE_FD(fd));
}
