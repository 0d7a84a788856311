/* api-budget.h - the varlink API's resource budgets: what each uid, and all
 * clients together, may hold in the daemon (queued input bytes, queued output
 * bytes, connections, Watch subscriptions, watched cgroup entries), the way
 * dbus-broker accounts bytes and objects per user. Pure accounting: no I/O, no
 * logging, no clock; the server asks before it commits memory and gives back
 * what it frees.
 *
 * Exemption: uid 0 is not limited by the byte and Watch budgets (it is still
 * counted, so its use shows and takes room from the totals): root's tools
 * must not be locked out by unprivileged users who filled the totals, and
 * root can exhaust the host's memory without acctd's help anyway.
 * Connections are limited for root too: they are descriptors, which run out
 * for everybody (the [api] max_connections limits predate this module).
 *
 * Cost: one small entry per uid with something charged (a linear scan; the
 * number of distinct uids connected at once is small). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum api_budget_kind {
	BUDGET_INPUT,         /* bytes read and not yet taken as calls */
	BUDGET_OUTPUT,        /* bytes of replies queued and not yet written */
	BUDGET_CONNECTIONS,   /* open connections */
	BUDGET_WATCHES,       /* Watch calls in progress */
	BUDGET_WATCH_CGROUPS, /* cgroup entries those Watch calls name */
	_BUDGET_MAX,
};

/* The limits: per uid and for all uids together. */
struct api_budget_limits {
	uint64_t per_user[_BUDGET_MAX];
	uint64_t total[_BUDGET_MAX];
};

struct api_budget_user {
	uid_t uid;
	uint64_t used[_BUDGET_MAX];
};

struct api_budget {
	struct api_budget_limits limits;
	struct api_budget_user *users; /* those with something charged */
	size_t nr_users;
	uint64_t used[_BUDGET_MAX];    /* all uids together */
	uint64_t refused[_BUDGET_MAX]; /* charges refused, for Status and /metrics */
};

/* Which limit refused a charge. */
enum api_budget_scope {
	BUDGET_PER_USER,
	BUDGET_TOTAL,
};

/* The configuration key of each limit ("max_input_bytes_per_user", ...), for
 * error replies and logs: a refused user learns what to ask the admin to raise. */
const char *api_budget_limit_name(enum api_budget_kind kind, enum api_budget_scope scope);
/* "input", "output", "connections", "watches", "watch_cgroups". */
const char *api_budget_kind_name(enum api_budget_kind kind);

/* Whether the byte and Watch budgets leave uid alone (see the head comment). */
bool api_budget_exempt(uid_t uid, enum api_budget_kind kind);

/* Start with nothing charged, under `limits` (copied). */
void api_budget_init(struct api_budget *b, const struct api_budget_limits *limits);
/* Free what b holds. Accepts a zeroed struct. */
void api_budget_done(struct api_budget *b);
/* New limits (a reload): what is charged stays charged, also above them. */
void api_budget_set_limits(struct api_budget *b, const struct api_budget_limits *limits);

/* How much uid may still charge of kind: the smaller of its own room and the
 * total's (0 when either is used up; UINT64_MAX when exempt). */
uint64_t api_budget_room(const struct api_budget *b, uid_t uid, enum api_budget_kind kind);

/* Charge `amount` of kind to uid. Returns 0, -EDQUOT when it does not fit
 * (nothing charged, the refusal counted, *ret_scope, when not NULL, says which
 * limit) or -ENOMEM (nothing charged, nothing counted). Exempt uids are
 * charged without a check. */
int api_budget_charge(struct api_budget *b, uid_t uid, enum api_budget_kind kind, uint64_t amount,
		      enum api_budget_scope *ret_scope);
/* Give back `amount` of kind charged to uid (capped at what is charged). */
void api_budget_release(struct api_budget *b, uid_t uid, enum api_budget_kind kind, uint64_t amount);
/* Move uid's charge of kind from *charged to `want`: release when smaller,
 * charge the difference when larger. On success *charged = want and 0 is
 * returned; on -EDQUOT or -ENOMEM *charged is unchanged. */
int api_budget_resize(struct api_budget *b, uid_t uid, enum api_budget_kind kind, uint64_t *charged, uint64_t want,
		      enum api_budget_scope *ret_scope);

/* What uid holds of kind now (0 for a uid with nothing charged). */
uint64_t api_budget_used(const struct api_budget *b, uid_t uid, enum api_budget_kind kind);
