/* api-budget.c - the varlink API's resource budgets per uid and in total
 * (api-budget.h has the contract and the exemption's reasons). */
#include "api-budget.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"

static const struct {
	const char *kind, *per_user, *total;
} names[_BUDGET_MAX] = {
	[BUDGET_INPUT] = { "input", "max_input_bytes_per_user", "max_input_bytes" },
	[BUDGET_OUTPUT] = { "output", "max_output_bytes_per_user", "max_output_bytes" },
	[BUDGET_CONNECTIONS] = { "connections", "max_connections_per_user", "max_connections" },
	[BUDGET_WATCHES] = { "watches", "max_watches_per_user", "max_watches" },
	[BUDGET_WATCH_CGROUPS] = { "watch_cgroups", "max_watched_cgroups_per_user", "max_watched_cgroups" },
};

const char *api_budget_limit_name(enum api_budget_kind kind, enum api_budget_scope scope)
{
	return scope == BUDGET_PER_USER ? names[kind].per_user : names[kind].total;
}

const char *api_budget_kind_name(enum api_budget_kind kind)
{
	return names[kind].kind;
}

bool api_budget_exempt(uid_t uid, enum api_budget_kind kind)
{
	return uid == 0 && kind != BUDGET_CONNECTIONS;
}

void api_budget_init(struct api_budget *b, const struct api_budget_limits *limits)
{
	*b = (struct api_budget){ .limits = *limits };
}

void api_budget_done(struct api_budget *b)
{
	free(b->users);
	b->users = NULL;
	b->nr_users = 0;
}

void api_budget_set_limits(struct api_budget *b, const struct api_budget_limits *limits)
{
	b->limits = *limits;
}

static struct api_budget_user *user_find(const struct api_budget *b, uid_t uid)
{
	for (size_t i = 0; i < b->nr_users; i++)
		if (b->users[i].uid == uid)
			return &b->users[i];
	return NULL;
}

static uint64_t left(uint64_t limit, uint64_t used)
{
	return used >= limit ? 0 : limit - used;
}

uint64_t api_budget_room(const struct api_budget *b, uid_t uid, enum api_budget_kind kind)
{
	if (api_budget_exempt(uid, kind))
		return UINT64_MAX;
	const struct api_budget_user *u = user_find(b, uid);
	return MIN(left(b->limits.per_user[kind], u ? u->used[kind] : 0), left(b->limits.total[kind], b->used[kind]));
}

uint64_t api_budget_used(const struct api_budget *b, uid_t uid, enum api_budget_kind kind)
{
	const struct api_budget_user *u = user_find(b, uid);
	return u ? u->used[kind] : 0;
}

int api_budget_charge(struct api_budget *b, uid_t uid, enum api_budget_kind kind, uint64_t amount,
		      enum api_budget_scope *ret_scope)
{
	struct api_budget_user *u = user_find(b, uid);

	if (amount == 0)
		return 0;
	if (!api_budget_exempt(uid, kind)) {
		enum api_budget_scope scope;
		if (amount > left(b->limits.per_user[kind], u ? u->used[kind] : 0))
			scope = BUDGET_PER_USER;
		else if (amount > left(b->limits.total[kind], b->used[kind]))
			scope = BUDGET_TOTAL;
		else
			goto fits;
		b->refused[kind]++;
		if (ret_scope)
			*ret_scope = scope;
		return -EDQUOT;
	}
fits:
	if (!u) {
		struct api_budget_user *n = reallocarray(b->users, b->nr_users + 1, sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->users = n;
		u = &b->users[b->nr_users++];
		*u = (struct api_budget_user){ .uid = uid };
	}
	/* Exempt uids may pass the limits; the sums saturate instead of wrapping. */
	u->used[kind] = amount > UINT64_MAX - u->used[kind] ? UINT64_MAX : u->used[kind] + amount;
	b->used[kind] = amount > UINT64_MAX - b->used[kind] ? UINT64_MAX : b->used[kind] + amount;
	return 0;
}

void api_budget_release(struct api_budget *b, uid_t uid, enum api_budget_kind kind, uint64_t amount)
{
	struct api_budget_user *u = user_find(b, uid);

	if (!u)
		return;
	amount = MIN(amount, u->used[kind]);
	u->used[kind] -= amount;
	b->used[kind] -= MIN(amount, b->used[kind]);
	for (int k = 0; k < _BUDGET_MAX; k++)
		if (u->used[k])
			return;
	/* Nothing left charged: the entry goes, so the table holds only the
	 * uids connected now. */
	*u = b->users[--b->nr_users];
	if (b->nr_users == 0) {
		free(b->users);
		b->users = NULL;
	}
}

int api_budget_resize(struct api_budget *b, uid_t uid, enum api_budget_kind kind, uint64_t *charged, uint64_t want,
		      enum api_budget_scope *ret_scope)
{
	if (want < *charged)
		api_budget_release(b, uid, kind, *charged - want);
	else if (want > *charged) {
		int r = api_budget_charge(b, uid, kind, want - *charged, ret_scope);
		if (r < 0)
			return r;
	}
	*charged = want;
	return 0;
}
