/* charges-ram.c - reconciliation of charged RAM against the kernel's memory
 * (charges-ram.h, docs/charges.md). */
#include "charges-ram.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"

struct acct_charges_ram {
	struct acct_charges *ch;
	bool *ram; /* per resource of ch */
	size_t nr_resources;
	bool any;
	acct_charges_ram_bounds_fn bounds; /* NULL: the engine's bounds only */
	void *bounds_userdata;
	struct acct_charges_ram_entry *entries; /* sorted by path */
	size_t nr_entries;
	size_t over, below;
	uint64_t checks;
};

int acct_charges_ram_new(struct acct_charges *ch, const bool *ram, struct acct_charges_ram **ret)
{
	size_t n = acct_charges_nr_resources(ch);
	_cleanup_free_ struct acct_charges_ram *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->ram = calloc(n ?: 1, sizeof(*s->ram));
	if (!s->ram)
		return -ENOMEM;
	s->ch = ch;
	s->nr_resources = n;
	for (size_t i = 0; i < n; i++) {
		s->ram[i] = ram && ram[i];
		s->any |= s->ram[i];
	}
	*ret = TAKE_PTR(s);
	return 0;
}

static void entries_free(struct acct_charges_ram_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].path);
	free(e);
}

struct acct_charges_ram *acct_charges_ram_free(struct acct_charges_ram *s)
{
	if (!s)
		return NULL;
	entries_free(s->entries, s->nr_entries);
	free(s->ram);
	free(s);
	return NULL;
}

void acct_charges_ram_set_bounds(struct acct_charges_ram *s, acct_charges_ram_bounds_fn bounds, void *userdata)
{
	s->bounds = bounds;
	s->bounds_userdata = userdata;
}

bool acct_charges_ram_any(const struct acct_charges_ram *s)
{
	return s && s->any;
}

int acct_charges_ram_read(const struct acct_charges_ram *s, const char *path, bool precise, struct acct_reading *ret)
{
	struct acct_reading sum = { 0 };
	bool found = false;

	for (size_t i = 0; s && i < s->nr_resources; i++) {
		struct acct_charge_reading r;
		if (!s->ram[i])
			continue;
		int k = precise ? acct_charges_read_precise(s->ch, i, path, &r) : acct_charges_read(s->ch, i, path, &r);
		if (k < 0)
			continue;
		if (s->bounds)
			s->bounds(i, path, &r, s->bounds_userdata);
		found = true;
		if (__builtin_add_overflow(sum.value, r.subtree.value, &sum.value))
			sum.value = r.subtree.value > 0 ? INT64_MAX : INT64_MIN;
		if (__builtin_add_overflow(sum.bound, r.subtree.bound, &sum.bound))
			sum.bound = UINT64_MAX;
	}
	if (!found)
		return -ENOENT;
	*ret = sum;
	return 0;
}

/* The entries a check gathers, one per (ram resource, charged cgroup) until
 * merged; the engine's lock is held while it grows, so a failed allocation
 * is remembered and reported after. */
struct gather {
	const struct acct_charges_ram *s;
	size_t res; /* the resource walked */
	struct acct_charges_ram_entry *e;
	size_t n, cap;
	bool failed;
};

static void gather_one(const char *path, const struct acct_charge_reading *r, void *userdata)
{
	struct gather *g = userdata;

	if (g->failed)
		return;
	if (g->n == g->cap) {
		size_t cap = MAX(g->cap * 2, 16);
		struct acct_charges_ram_entry *v = reallocarray(g->e, cap, sizeof(*v));
		if (!v) {
			g->failed = true;
			return;
		}
		g->e = v;
		g->cap = cap;
	}
	char *p = strdup(path);
	if (!p) {
		g->failed = true;
		return;
	}
	struct acct_charge_reading rd = *r;
	if (g->s->bounds)
		g->s->bounds(g->res, path, &rd, g->s->bounds_userdata);
	g->e[g->n++] = (struct acct_charges_ram_entry){ .path = p, .charged = rd.subtree };
}

static int compare_entry(const void *a, const void *b)
{
	return strcmp(((const struct acct_charges_ram_entry *)a)->path, ((const struct acct_charges_ram_entry *)b)->path);
}

static const struct acct_charges_ram_entry *find_entry(const struct acct_charges_ram_entry *e, size_t n,
						       const char *path)
{
	struct acct_charges_ram_entry key = { .path = (char *)path };
	/* no previous check (e NULL): bsearch()'s base must not be NULL */
	return n ? bsearch(&key, e, n, sizeof(*e), compare_entry) : NULL;
}

int acct_charges_ram_check(struct acct_charges_ram *s, acct_charges_ram_memory_fn memory, void *memory_userdata,
			   acct_charges_ram_flag_fn flagged, void *flagged_userdata)
{
	struct gather g = { .s = s };

	if (!s->any)
		return 0;
	for (size_t i = 0; i < s->nr_resources; i++)
		if (s->ram[i]) {
			g.res = i;
			(void)acct_charges_foreach(s->ch, i, gather_one, &g);
		}
	if (g.failed) {
		entries_free(g.e, g.n);
		return -ENOMEM;
	}
	/* One entry per cgroup: the ram resources' values and bounds summed. */
	if (g.n)
		qsort(g.e, g.n, sizeof(*g.e), compare_entry);
	size_t n = 0, over = 0;
	for (size_t i = 0; i < g.n; i++) {
		if (n > 0 && strcmp(g.e[n - 1].path, g.e[i].path) == 0) {
			/* saturated: several resources near the engine's range */
			struct acct_reading *c = &g.e[n - 1].charged;
			if (__builtin_add_overflow(c->value, g.e[i].charged.value, &c->value))
				c->value = g.e[i].charged.value > 0 ? INT64_MAX : INT64_MIN;
			if (__builtin_add_overflow(c->bound, g.e[i].charged.bound, &c->bound))
				c->bound = UINT64_MAX;
			free(g.e[i].path);
			continue;
		}
		g.e[n++] = g.e[i];
	}
	size_t below = 0;
	for (size_t i = 0; i < n; i++) {
		struct acct_charges_ram_entry *e = &g.e[i];
		const struct acct_charges_ram_entry *old = find_entry(s->entries, s->nr_entries, e->path);
		/* Over-released, memory or not: certain only beyond the bound. */
		e->below_zero = e->charged.value < 0 && abs_u64(e->charged.value) > e->charged.bound;
		below += e->below_zero;
		bool new_below = e->below_zero && !(old && old->below_zero);
		e->has_memory = memory(e->path, &e->memory, memory_userdata);
		if (!e->has_memory) {
			if (flagged && new_below)
				flagged(e, flagged_userdata);
			continue;
		}
		/* Certain only beyond both bounds: the true charged value may be
		 * charged.bound lower, the true memory memory.bound higher. */
		uint64_t slack;
		if (__builtin_add_overflow(e->charged.bound, e->memory.bound, &slack))
			slack = UINT64_MAX;
		e->over = e->charged.value > e->memory.value &&
			  (uint64_t)e->charged.value - (uint64_t)e->memory.value > slack;
		over += e->over;
		if (flagged && ((e->over && !(old && old->over)) || new_below))
			flagged(e, flagged_userdata);
	}
	entries_free(s->entries, s->nr_entries);
	s->entries = g.e;
	s->nr_entries = n;
	s->over = over;
	s->below = below;
	s->checks++;
	return 0;
}

const struct acct_charges_ram_entry *acct_charges_ram_entries(const struct acct_charges_ram *s, size_t *ret_n)
{
	*ret_n = s ? s->nr_entries : 0;
	return s ? s->entries : NULL;
}

uint64_t acct_charges_ram_checks(const struct acct_charges_ram *s)
{
	return s ? s->checks : 0;
}

size_t acct_charges_ram_over(const struct acct_charges_ram *s)
{
	return s ? s->over : 0;
}

size_t acct_charges_ram_below_zero(const struct acct_charges_ram *s)
{
	return s ? s->below : 0;
}
