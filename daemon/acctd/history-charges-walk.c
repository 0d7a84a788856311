/* history-charges-walk.c - the charged values of a history recording, by a
 * walk of the charge engine's entries (history-charges-walk.h). */
#include "history-charges-walk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"
#include "history-recorder.h"

/* The walk's state; the engine's shared lock is held while it grows, so a
 * failed allocation is remembered and reported after (as charges-ram.c). */
struct walk {
	history_charges_life_fn life;
	history_charges_bounds_fn bounds;
	void *userdata;
	size_t res;
	const char *name; /* the resource's, the engine's */
	struct history_charge_sample *c;
	size_t n, cap;
	bool failed;
};

static void walk_one(const char *path, const struct acct_charge_reading *engine, void *userdata)
{
	struct walk *w = userdata;
	uint64_t inode = 0;

	if (w->failed || !w->life(path, &inode, w->userdata))
		return;
	struct acct_charge_reading rd = *engine;
	if (w->bounds)
		w->bounds(w->res, path, &rd, w->userdata);
	if (w->n == w->cap) {
		size_t cap = MAX(w->cap * 2, 16);
		struct history_charge_sample *v = reallocarray(w->c, cap, sizeof(*v));
		if (!v) {
			w->failed = true;
			return;
		}
		w->c = v;
		w->cap = cap;
	}
	struct history_charge_sample *s = &w->c[w->n];
	*s = (struct history_charge_sample){ .key = { .path = strdup(path), .inode = inode },
					     .resource = strdup(w->name),
					     .value = rd.subtree.value,
					     .bound = (int64_t)rd.subtree.bound };
	w->n++; /* counted even half made: the free below takes both strings */
	if (!s->key.path || !s->resource)
		w->failed = true;
}

int history_charges_walk(struct acct_charges *ch, history_charges_life_fn life, history_charges_bounds_fn bounds,
			 void *userdata, struct history_charge_sample **ret)
{
	size_t nres = ch ? acct_charges_nr_resources(ch) : 0;
	struct walk w = { .life = life, .bounds = bounds, .userdata = userdata };

	for (size_t res = 0; res < nres && !w.failed; res++) {
		w.res = res;
		w.name = acct_charges_resource(ch, res)->name;
		(void)acct_charges_foreach(ch, res, walk_one, &w);
	}
	if (w.failed) {
		history_charge_samples_free(w.c, w.n);
		return -ENOMEM;
	}
	*ret = w.c;
	return (int)w.n;
}
