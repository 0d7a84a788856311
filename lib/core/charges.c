/* charges.c - programs' charges per resource and cgroup, with one error
 * budget for every read, ancestors included (charges.h states the invariant
 * and why each cgroup keeps its own subtree counter).
 *
 * Entries: one per (resource, cgroup path) that was charged or has a charged
 * descendant, in one hash table keyed by both, linked to their parent and
 * children so that a removal finds its subtree without a scan. The root "/"
 * of a resource is created with its first charge and never removed. */
#include "charges.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hash.h"
#include "basic/ptr-table.h"
#include "basic/util.h"

/* Magnitudes a charge may bring a value to: far from int64's ends, so that
 * charges racing past one check cannot wrap a counter. */
#define CHARGE_VALUE_MAX (INT64_C(1) << 62)

struct entry {
	size_t res;
	char *path;
	uint64_t hash;
	struct entry *parent, *first_child, *next_sibling, *prev_sibling;
	struct acct_counter *self, *subtree;
	uint64_t serial; /* unique in the engine: a recreated path is another entry */
};

struct acct_charges {
	struct acct_domain *domain;
	struct acct_charges_resource *res;
	size_t nr_res;
	/* Charges and reads share it; creating entries and removal hold it
	 * exclusively. The counters themselves take concurrent updates. */
	pthread_rwlock_t lock;
	struct ptr_table entries;
	uint64_t last_serial; /* under the exclusive lock */
};

struct key {
	size_t res;
	const char *path;
};

static uint64_t key_hash(size_t res, const char *path)
{
	return hash_mix64(hash_fnv1a_u64(hash_fnv1a_string(path), res));
}

static bool entry_eq(const void *p, const void *k)
{
	const struct entry *e = p;
	const struct key *key = k;

	return e->res == key->res && strcmp(e->path, key->path) == 0;
}

static struct entry *entry_find(const struct acct_charges *ch, size_t res, const char *path)
{
	struct key k = { res, path };

	return ptr_table_find(&ch->entries, key_hash(res, path), entry_eq, &k);
}

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	acct_counter_free(e->self);
	acct_counter_free(e->subtree);
	free(e->path);
	free(e);
}

static void entry_free_void(void *p)
{
	entry_free(p);
}

int acct_charges_new(struct acct_domain *domain, const struct acct_charges_resource *res, size_t n,
		     struct acct_charges **ret)
{
	struct acct_charges *ch;

	if (!domain || (n > 0 && !res))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!res[i].name || res[i].budget < 0)
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (strcmp(res[i].name, res[j].name) == 0)
				return -EINVAL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->domain = domain;
	if (pthread_rwlock_init(&ch->lock, NULL) != 0) {
		free(ch);
		return -ENOMEM;
	}
	ch->res = calloc(n ?: 1, sizeof(*ch->res));
	if (!ch->res) {
		acct_charges_free(ch);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ch->res[i] = res[i];
		ch->res[i].name = strdup(res[i].name);
		ch->nr_res = i + 1;
		if (!ch->res[i].name) {
			acct_charges_free(ch);
			return -ENOMEM;
		}
	}
	*ret = ch;
	return 0;
}

struct acct_charges *acct_charges_free(struct acct_charges *ch)
{
	if (!ch)
		return NULL;
	ptr_table_clear(&ch->entries, entry_free_void);
	for (size_t i = 0; ch->res && i < ch->nr_res; i++)
		free((char *)ch->res[i].name);
	free(ch->res);
	pthread_rwlock_destroy(&ch->lock);
	free(ch);
	return NULL;
}

int acct_charges_resource_index(const struct acct_charges *ch, const char *name)
{
	for (size_t i = 0; ch && name && i < ch->nr_res; i++)
		if (strcmp(ch->res[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

size_t acct_charges_nr_resources(const struct acct_charges *ch)
{
	return ch ? ch->nr_res : 0;
}

const struct acct_charges_resource *acct_charges_resource(const struct acct_charges *ch, size_t index)
{
	return ch && index < ch->nr_res ? &ch->res[index] : NULL;
}

/* ---- entries ------------------------------------------------------------- */

/* Under the exclusive lock: the entry of `path`, created with its missing
 * ancestors. Returns 0 or -ENOMEM (what was created stays: empty entries
 * are harmless). */
static int entry_get(struct acct_charges *ch, size_t res, const char *path, struct entry **ret)
{
	struct entry *e = entry_find(ch, res, path), *parent = NULL;
	int r;

	if (e) {
		*ret = e;
		return 0;
	}
	if (strcmp(path, "/") != 0) {
		/* The parent first: "/a/b" -> "/a", "/a" -> "/". */
		const char *slash = strrchr(path, '/');
		size_t plen = slash == path ? 1 : (size_t)(slash - path);
		_cleanup_free_ char *ppath = strndup(path, plen);

		if (!ppath)
			return -ENOMEM;
		r = entry_get(ch, res, ppath, &parent);
		if (r < 0)
			return r;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->res = res;
	e->path = strdup(path);
	e->hash = key_hash(res, path);
	e->serial = ++ch->last_serial;
	if (!e->path || acct_counter_new(ch->domain, ch->res[res].budget, &e->self) < 0 ||
	    acct_counter_new(ch->domain, ch->res[res].budget, &e->subtree) < 0 ||
	    ptr_table_insert(&ch->entries, e->hash, e) < 0) {
		entry_free(e);
		return -ENOMEM;
	}
	e->parent = parent;
	if (parent) {
		e->next_sibling = parent->first_child;
		if (parent->first_child)
			parent->first_child->prev_sibling = e;
		parent->first_child = e;
	}
	*ret = e;
	return 0;
}

static bool fits(const struct acct_counter *c, int64_t delta)
{
	struct acct_reading rd;

	acct_counter_read(c, &rd);
	/* |value| + bound + |delta| <= 2^62, each term checked alone first */
	uint64_t mag = rd.value < 0 ? -(uint64_t)rd.value : (uint64_t)rd.value;
	uint64_t d = delta < 0 ? -(uint64_t)delta : (uint64_t)delta;
	return mag <= (uint64_t)CHARGE_VALUE_MAX && rd.bound <= (uint64_t)CHARGE_VALUE_MAX &&
	       d <= (uint64_t)CHARGE_VALUE_MAX && mag + rd.bound + d <= (uint64_t)CHARGE_VALUE_MAX;
}

/* Under the lock (either way): whether adding delta keeps every value in range. */
static bool entry_fits(const struct entry *e, int64_t delta)
{
	if (!fits(e->self, delta))
		return false;
	for (const struct entry *a = e; a; a = a->parent)
		if (!fits(a->subtree, delta))
			return false;
	return true;
}

static void entry_charge(struct entry *e, int64_t delta)
{
	acct_counter_add(e->self, delta);
	for (struct entry *a = e; a; a = a->parent)
		acct_counter_add(a->subtree, delta);
}

static bool valid_path(const char *path)
{
	return path && path[0] == '/';
}

int acct_charges_add_serial(struct acct_charges *ch, size_t res, const char *path, int64_t delta,
			    uint64_t expect_serial, uint64_t *ret_serial)
{
	struct entry *e;
	int r = 0;

	if (!ch || res >= ch->nr_res || !valid_path(path))
		return -EINVAL;
	pthread_rwlock_rdlock(&ch->lock);
	e = entry_find(ch, res, path);
	if (e || expect_serial) {
		if (!e || (expect_serial && e->serial != expect_serial))
			r = -ESTALE;
		else if (entry_fits(e, delta)) {
			entry_charge(e, delta);
			if (ret_serial)
				*ret_serial = e->serial;
		} else
			r = -ERANGE;
		pthread_rwlock_unlock(&ch->lock);
		return r;
	}
	pthread_rwlock_unlock(&ch->lock);

	/* A cgroup's first charge: create its entry. Charging under the
	 * exclusive lock is no different from under the shared one. */
	pthread_rwlock_wrlock(&ch->lock);
	r = entry_get(ch, res, path, &e);
	if (r >= 0) {
		if (entry_fits(e, delta)) {
			entry_charge(e, delta);
			if (ret_serial)
				*ret_serial = e->serial;
		} else
			r = -ERANGE;
	}
	pthread_rwlock_unlock(&ch->lock);
	return r;
}

int acct_charges_add(struct acct_charges *ch, size_t res, const char *path, int64_t delta)
{
	return acct_charges_add_serial(ch, res, path, delta, 0, NULL);
}

int acct_charges_check(struct acct_charges *ch, size_t res, const char *path, int64_t delta)
{
	struct entry *e;
	int r = 0;

	if (!ch || res >= ch->nr_res || !valid_path(path))
		return -EINVAL;
	pthread_rwlock_rdlock(&ch->lock);
	/* A path without an entry starts at 0; its nearest existing ancestor
	 * carries the subtree values it would add to. */
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		r = -ENOMEM;
	while (r == 0) {
		e = entry_find(ch, res, p);
		if (e) {
			if (!entry_fits(e, delta)) /* an ancestor: conservative, its own value too */
				r = -ERANGE;
			break;
		}
		if (strcmp(p, "/") == 0) {
			uint64_t d = delta < 0 ? -(uint64_t)delta : (uint64_t)delta;
			if (d > (uint64_t)CHARGE_VALUE_MAX)
				r = -ERANGE;
			break;
		}
		char *slash = strrchr(p, '/');
		if (slash == p)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	pthread_rwlock_unlock(&ch->lock);
	return r;
}

static int read_entry(struct acct_charges *ch, size_t res, const char *path, bool precise,
		      struct acct_charge_reading *ret)
{
	const struct entry *e;

	if (!ch || res >= ch->nr_res || !valid_path(path))
		return -EINVAL;
	pthread_rwlock_rdlock(&ch->lock);
	e = entry_find(ch, res, path);
	if (e) {
		if (precise) {
			ret->self = (struct acct_reading){ .value = acct_counter_read_precise(e->self) };
			ret->subtree = (struct acct_reading){ .value = acct_counter_read_precise(e->subtree) };
		} else {
			acct_counter_read(e->self, &ret->self);
			acct_counter_read(e->subtree, &ret->subtree);
		}
	}
	pthread_rwlock_unlock(&ch->lock);
	return e ? 0 : -ENOENT;
}

int acct_charges_read(struct acct_charges *ch, size_t res, const char *path, struct acct_charge_reading *ret)
{
	return read_entry(ch, res, path, false, ret);
}

int acct_charges_read_precise(struct acct_charges *ch, size_t res, const char *path, struct acct_charge_reading *ret)
{
	return read_entry(ch, res, path, true, ret);
}

int acct_charges_foreach(struct acct_charges *ch, size_t res,
			 void (*fn)(const char *path, const struct acct_charge_reading *r, void *userdata),
			 void *userdata)
{
	if (!ch || res >= ch->nr_res || !fn)
		return -EINVAL;
	pthread_rwlock_rdlock(&ch->lock);
	for (size_t i = 0; i < ptr_table_capacity(&ch->entries); i++) {
		const struct entry *e = ptr_table_at(&ch->entries, i);
		struct acct_charge_reading r;

		if (!e || e->res != res)
			continue;
		acct_counter_read(e->self, &r.self);
		acct_counter_read(e->subtree, &r.subtree);
		fn(e->path, &r, userdata);
	}
	pthread_rwlock_unlock(&ch->lock);
	return 0;
}

/* ---- removal ------------------------------------------------------------- */

/* Unlink and free e and its subtree (the exclusive lock held). Returns the
 * number of entries freed. */
static size_t subtree_drop(struct acct_charges *ch, struct entry *e)
{
	size_t n = 0;

	while (e->first_child)
		n += subtree_drop(ch, e->first_child);
	if (e->prev_sibling)
		e->prev_sibling->next_sibling = e->next_sibling;
	else if (e->parent)
		e->parent->first_child = e->next_sibling;
	if (e->next_sibling)
		e->next_sibling->prev_sibling = e->prev_sibling;
	ptr_table_remove(&ch->entries, e->hash, e);
	entry_free(e);
	return n + 1;
}

int acct_charges_remove(struct acct_charges *ch, const char *path)
{
	size_t dropped = 0;

	if (!ch || !valid_path(path) || strcmp(path, "/") == 0)
		return -EINVAL;
	/* Exclusive: no charge is in flight, so the precise reads below are
	 * the exact sums and no charge lands on a dropped entry. */
	pthread_rwlock_wrlock(&ch->lock);
	for (size_t res = 0; res < ch->nr_res; res++) {
		struct entry *e = entry_find(ch, res, path);

		if (!e)
			continue;
		/* The subtree's total holds every charge below and to it. */
		int64_t total = acct_counter_read_precise(e->subtree);
		if (ch->res[res].reparent)
			/* The parent's subtree value already holds them: only
			 * its own value changes. */
			acct_counter_add(e->parent->self, total);
		else
			for (struct entry *a = e->parent; a; a = a->parent)
				acct_counter_add(a->subtree, -total);
		dropped += subtree_drop(ch, e);
	}
	pthread_rwlock_unlock(&ch->lock);
	return (int)MIN(dropped, (size_t)INT32_MAX);
}
