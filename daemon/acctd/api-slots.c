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
 * slot is folded, released with the connection's net charge and freed. */
#include "api-slots.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "api-charges.h"
#include "api-dispatch.h"
#include "api-server.h"
#include "basic/log.h"
#include "basic/path.h"
#include "basic/util.h"
#include "config/config.h"
#include "core/charges.h"
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
	char path[];      /* normalised */
};

struct api_conn_slots {
	struct api_slot *head;
	unsigned n;
};

static struct api_slot *slot_free(struct api_slot *sl)
{
	if (!sl)
		return NULL;
	acct_slot_owner_free(sl->owner);
	free(sl);
	return NULL;
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
	*sl = (struct api_slot){ .res = res, .serial = serial, .pid = c->cred.pid, .uid = c->cred.uid };
	strcpy(sl->path, path);
	struct acct_slot_options o = { .mode = ACCT_MODE_AUTO, .budget = rc->budget };
	r = acct_slot_create(&o, &sl->owner);
	if (r < 0)
		return r;
	int fd = acct_slot_owner_take_fd(sl->owner);
	if (fd < 0) {
		acct_slot_owner_free(sl->owner);
		return fd;
	}
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

/* Whether the process that opened an orphan is gone. */
static bool opener_gone(const struct api_slot *sl)
{
	return sl->pid <= 0 || (kill(sl->pid, 0) < 0 && errno == ESRCH);
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
		if (slot_fold(s, c, sl) > 0 || gone) {
			*p = sl->next;
			slot_free(sl);
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
			/* The client's exit: released with the connection's net. */
			slot_free(sl);
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
		slot_free(sl);
	}
	s->orphan_slots = NULL;
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
