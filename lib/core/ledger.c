/* ledger.c - cgroup records in an RCU hash table, and their values. */
#include "ledger.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/hash.h"
#include "basic/util.h"
#include "load.h"

struct acct_ledger {
	struct cds_lfht *ht;
	struct acct_domain *domain;
	struct acct_ledger_budgets budgets;
	uint64_t next_serial;
	uint64_t live, dead; /* atomic */

	pthread_mutex_t keys_lock;
	char *memstat_keys[ACCT_MEMSTAT_MAX]; /* published with release stores */
	unsigned nr_memstat_keys;             /* atomic */

	struct acct_io_device io_devices[ACCT_IO_DEVICES_MAX]; /* under keys_lock, published like the keys */
	unsigned nr_io_devices;                                 /* atomic */

	/* The last sorted snapshot of each kind (live only, with the dead),
	 * reused while no record was added, killed or removed since: a pass
	 * on an unchanged tree copies it instead of walking the table and
	 * sorting every path (acct_ledger_snapshot()). changes is bumped under
	 * the lock before a record leaves the table, so a cached array holds
	 * only records that another thread's read-side section still covers. */
	struct acct_steady_epoch steady; /* ledger.h, "Steady cgroups" */
	uint64_t memory_changes;         /* atomic; acct_ledger_memory_changes() */

	pthread_mutex_t snap_lock;
	uint64_t changes;
	struct {
		struct acct_cgroup **v;
		size_t n;
		uint64_t changes;
		bool valid;
	} snap[2];
};

/* A record was added, killed or is about to leave the table. */
static void note_change(struct acct_ledger *l)
{
	pthread_mutex_lock(&l->snap_lock);
	l->changes++;
	pthread_mutex_unlock(&l->snap_lock);
}

uint64_t acct_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline struct acct_cgroup *record_of(struct cds_lfht_node *n)
{
	return n ? caa_container_of(n, struct acct_cgroup, node) : NULL;
}

/* liburcu's cds_lfht_for_each_entry() applies container_of to the NULL that
 * ends the walk (undefined behaviour UBSan reports); this one does not. */
#define for_each_record(ht, iter, cg)                                                      \
	for (cds_lfht_first((ht), (iter)); ((cg) = record_of(cds_lfht_iter_get_node(iter))) != NULL; \
	     cds_lfht_next((ht), (iter)))

static int64_t budget_for(const struct acct_ledger_budgets *b, enum acct_unit u)
{
	switch (u) {
	case ACCT_UNIT_BYTES:
		return b->bytes;
	case ACCT_UNIT_USEC:
		return b->cpu_us;
	case ACCT_UNIT_COUNT:
		return b->tasks;
	}
	return 0;
}

static _Thread_local bool rcu_registered;

void acct_rcu_register(void)
{
	if (!rcu_registered) {
		rcu_register_thread();
		rcu_registered = true;
	}
}

int acct_ledger_new(struct acct_domain *domain, const struct acct_ledger_budgets *budgets,
		    struct acct_ledger **ret)
{
	/* Until the hash table exists the record holds nothing but itself. */
	_cleanup_free_ struct acct_ledger *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	acct_rcu_register();
	l->ht = cds_lfht_new(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	if (!l->ht)
		return -ENOMEM;
	l->domain = domain;
	l->budgets = *budgets;
	l->next_serial = 1;
	pthread_mutex_init(&l->keys_lock, NULL);
	pthread_mutex_init(&l->snap_lock, NULL);
	l->steady.gen = 1;
	*ret = TAKE_PTR(l);
	return 0;
}

static struct acct_cgroup *record_free(struct acct_cgroup *cg)
{
	if (!cg)
		return NULL;
	for (int q = 0; q < _ACCT_Q_MAX; q++)
		acct_counter_free(cg->q[q]);
	acct_counter_free(cg->numa);
	free(cg->memstat);
	free(cg->io);
	free(cg->path);
	free(cg);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_cgroup *, record_free);

static void record_free_rcu(struct rcu_head *head)
{
	(void)record_free(caa_container_of(head, struct acct_cgroup, rcu));
}

struct acct_ledger *acct_ledger_free(struct acct_ledger *l)
{
	struct cds_lfht_iter iter;
	struct acct_cgroup *cg;

	if (!l)
		return NULL;
	/* Nobody reads any more (the contract): unlink and free at once, then let
	 * the frees that sweeps queued earlier run before the domain goes. */
	struct acct_cgroup **dying = NULL;
	size_t n = 0, cap = 0;
	rcu_read_lock();
	for_each_record(l->ht, &iter, cg) {
		if (cds_lfht_del(l->ht, &cg->node) != 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct acct_cgroup **v = reallocarray(dying, ncap, sizeof(*v));
			if (!v) {
				call_rcu(&cg->rcu, record_free_rcu); /* no memory: the slow way */
				continue;
			}
			dying = v;
			cap = ncap;
		}
		dying[n++] = cg;
	}
	rcu_read_unlock();
	synchronize_rcu();
	for (size_t i = 0; i < n; i++)
		(void)record_free(dying[i]);
	free(dying);
	rcu_barrier();
	cds_lfht_destroy(l->ht, NULL);
	for (unsigned i = 0; i < l->nr_memstat_keys; i++)
		free(l->memstat_keys[i]);
	pthread_mutex_destroy(&l->keys_lock);
	for (size_t k = 0; k < ELEMENTSOF(l->snap); k++)
		free(l->snap[k].v);
	pthread_mutex_destroy(&l->snap_lock);
	free(l);
	return NULL;
}

static int match_path(struct cds_lfht_node *node, const void *key)
{
	const struct acct_cgroup *cg = caa_container_of(node, struct acct_cgroup, node);
	return strcmp(cg->path, key) == 0;
}

/* Every walk of the table runs in a read-side section of its own (nested in
 * the caller's, if any), also on the owner thread: the table resizes in
 * liburcu's thread, which frees the bucket levels it drops after a grace
 * period that only a read-side section holds back (liburcu's contract for
 * cds_lfht_lookup() and the traversals; tests/test-ledger-rcu.c). */
struct acct_cgroup *acct_ledger_find(struct acct_ledger *l, const char *path)
{
	struct cds_lfht_iter iter;
	struct acct_cgroup *best = NULL;

	rcu_read_lock();
	cds_lfht_lookup(l->ht, hash_fnv1a_string(path), match_path, path, &iter);
	for (struct cds_lfht_node *n = cds_lfht_iter_get_node(&iter); n;
	     cds_lfht_next_duplicate(l->ht, match_path, path, &iter), n = cds_lfht_iter_get_node(&iter)) {
		struct acct_cgroup *cg = caa_container_of(n, struct acct_cgroup, node);
		if (!acct_cgroup_is_dead(cg)) {
			best = cg;
			break;
		}
		if (!best || cg->serial > best->serial)
			best = cg;
	}
	rcu_read_unlock();
	return best;
}

int acct_ledger_add(struct acct_ledger *l, const struct acct_cgroup_id *id, uint64_t now_us,
		    struct acct_cgroup **ret)
{
	_cleanup_(record_freep) struct acct_cgroup *cg = NULL;
	struct acct_cgroup *existing;
	int r = 0;

	existing = acct_ledger_find(l, id->path);
	if (existing && !acct_cgroup_is_dead(existing)) {
		if (ret)
			*ret = existing;
		return -EEXIST;
	}

	cg = calloc(1, sizeof(*cg));
	if (!cg)
		return -ENOMEM;
	cg->path = strdup(id->path);
	if (!cg->path)
		return -ENOMEM;
	cg->depth = id->depth;
	cg->hierarchies = id->hierarchies;
	memcpy(cg->inode, id->inode, sizeof(cg->inode));
	cg->created_us = now_us;
	cg->populated = true;
	cg->serial = l->next_serial++;
	cg->steady_epoch = &l->steady;
	cg->ledger = l;
	for (int q = 0; q < _ACCT_Q_MAX && r == 0; q++)
		r = acct_counter_new(l->domain, budget_for(&l->budgets, acct_quantity_info(q)->unit), &cg->q[q]);
	/* Per-node values arrive whole from the kernel and go straight to the node
	 * sums: budget 0 keeps the reported bound at its true value, 0. */
	if (r == 0)
		r = acct_counter_new(l->domain, 0, &cg->numa);
	if (r < 0)
		return r;
	struct acct_cgroup *added = TAKE_PTR(cg); /* the hash table owns it from here */
	cds_lfht_node_init(&added->node);
	rcu_read_lock();
	cds_lfht_add(l->ht, hash_fnv1a_string(added->path), &added->node);
	rcu_read_unlock();
	note_change(l);
	__atomic_fetch_add(&l->live, 1, __ATOMIC_RELAXED);
	if (ret)
		*ret = added;
	return 0;
}

void acct_ledger_kill(struct acct_ledger *l, struct acct_cgroup *cg, uint64_t now_us)
{
	if (acct_cgroup_is_dead(cg))
		return;
	acct_cgroup_steady_leave(cg); /* its ages stop at its last read */
	__atomic_store_n(&cg->died_us, now_us, __ATOMIC_RELAXED);
	__atomic_store_n(&cg->dead, true, __ATOMIC_RELEASE);
	note_change(l);
	__atomic_fetch_sub(&l->live, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&l->dead, 1, __ATOMIC_RELAXED);
}

enum acct_final acct_cgroup_final(const struct acct_cgroup *cg)
{
	/* final_read is stored as the change count seen before the read, + 1: a
	 * change of cgroup.events announced during or after that read (new
	 * tasks, gone again) makes the count differ, whatever the order of the
	 * two stores. */
	uint64_t f = __atomic_load_n(&cg->final_read, __ATOMIC_ACQUIRE);
	if (f != 0 && f == __atomic_load_n(&cg->populated_changes, __ATOMIC_ACQUIRE) + 1)
		return ACCT_FINAL_READ;
	bool any = false;
	for (int q = 0; q < _ACCT_Q_MAX && !any; q++)
		any = __atomic_load_n(&cg->q_known[q], __ATOMIC_RELAXED);
	if (!any)
		return ACCT_FINAL_NEVER_READ;
	if (!__atomic_load_n(&cg->events_known, __ATOMIC_RELAXED))
		return ACCT_FINAL_NO_EVENTS;
	return ACCT_FINAL_NOT_READ_EMPTY;
}

const char *acct_final_to_string(enum acct_final f)
{
	static const char *const names[_ACCT_FINAL_MAX] = {
		[ACCT_FINAL_READ] = "final",
		[ACCT_FINAL_NEVER_READ] = "never_read",
		[ACCT_FINAL_NO_EVENTS] = "no_populated_events",
		[ACCT_FINAL_NOT_READ_EMPTY] = "removed_before_final_read",
	};
	return f < _ACCT_FINAL_MAX ? names[f] : "unknown";
}

void acct_ledger_update_id(struct acct_ledger *l, struct acct_cgroup *cg, const struct acct_cgroup_id *id)
{
	(void)l;
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		__atomic_store_n(&cg->inode[h], id->inode[h], __ATOMIC_RELAXED);
	__atomic_store_n(&cg->hierarchies, id->hierarchies, __ATOMIC_RELEASE);
}

unsigned acct_ledger_sweep(struct acct_ledger *l, uint64_t now_us, uint64_t retention_us,
			   acct_ledger_release_fn release, void *userdata)
{
	struct cds_lfht_iter iter;
	struct acct_cgroup *cg;
	unsigned removed = 0;

	if (__atomic_load_n(&l->dead, __ATOMIC_RELAXED) == 0)
		return 0; /* nothing to look for: a pass on a still tree walks nothing */
	rcu_read_lock();
	for_each_record(l->ht, &iter, cg) {
		if (!acct_cgroup_is_dead(cg))
			continue;
		uint64_t died = __atomic_load_n(&cg->died_us, __ATOMIC_RELAXED);
		if (now_us - died < retention_us)
			continue;
		note_change(l);
		if (cds_lfht_del(l->ht, &cg->node) != 0)
			continue;
		if (release)
			release(cg, userdata);
		call_rcu(&cg->rcu, record_free_rcu);
		__atomic_fetch_sub(&l->dead, 1, __ATOMIC_RELAXED);
		removed++;
	}
	rcu_read_unlock();
	return removed;
}

static int compare_died(const void *a, const void *b)
{
	const struct acct_cgroup *x = *(struct acct_cgroup *const *)a, *y = *(struct acct_cgroup *const *)b;
	uint64_t dx = __atomic_load_n(&x->died_us, __ATOMIC_RELAXED), dy = __atomic_load_n(&y->died_us, __ATOMIC_RELAXED);
	if (dx != dy)
		return dx < dy ? -1 : 1;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

int acct_ledger_fold_oldest(struct acct_ledger *l, uint64_t max, acct_ledger_release_fn release, void *userdata)
{
	uint64_t dead = __atomic_load_n(&l->dead, __ATOMIC_RELAXED);
	struct cds_lfht_iter iter;
	struct acct_cgroup *cg;
	size_t n = 0;
	int removed = 0;

	if (dead <= max)
		return 0;
	/* Only the owner adds and kills: `dead` cannot grow meanwhile. */
	_cleanup_free_ struct acct_cgroup **v = calloc(dead, sizeof(*v));
	if (!v)
		return -ENOMEM;
	rcu_read_lock();
	for_each_record(l->ht, &iter, cg)
		if (acct_cgroup_is_dead(cg) && n < dead)
			v[n++] = cg;
	qsort(v, n, sizeof(*v), compare_died);
	for (size_t i = 0; i < n && n - i > max; i++) {
		note_change(l);
		if (cds_lfht_del(l->ht, &v[i]->node) != 0)
			continue;
		if (release)
			release(v[i], userdata);
		call_rcu(&v[i]->rcu, record_free_rcu);
		__atomic_fetch_sub(&l->dead, 1, __ATOMIC_RELAXED);
		removed++;
	}
	rcu_read_unlock();
	return removed;
}

int acct_ledger_foreach(struct acct_ledger *l, int (*fn)(struct acct_cgroup *cg, void *userdata), void *userdata)
{
	struct cds_lfht_iter iter;
	struct acct_cgroup *cg;
	int r = 0;

	rcu_read_lock(); /* see acct_ledger_find() */
	for_each_record(l->ht, &iter, cg) {
		r = fn(cg, userdata);
		if (r != 0)
			break;
	}
	rcu_read_unlock();
	return r;
}

static int compare_records(const void *a, const void *b)
{
	const struct acct_cgroup *x = *(struct acct_cgroup *const *)a, *y = *(struct acct_cgroup *const *)b;
	int r = strcmp(x->path, y->path);
	if (r != 0)
		return r;
	if (acct_cgroup_is_dead(x) != acct_cgroup_is_dead(y))
		return acct_cgroup_is_dead(x) ? 1 : -1;
	return x->serial < y->serial ? 1 : -1;
}

int acct_ledger_snapshot(struct acct_ledger *l, bool include_dead, struct acct_cgroup ***ret)
{
	struct cds_lfht_iter iter;
	_cleanup_free_ struct acct_cgroup **v = NULL;
	struct acct_cgroup *cg;
	size_t n = 0, cap = 0;
	int k = include_dead ? 1 : 0;

	pthread_mutex_lock(&l->snap_lock);
	uint64_t changes = l->changes;
	if (l->snap[k].valid && l->snap[k].changes == changes) {
		n = l->snap[k].n;
		v = malloc(MAX(n, (size_t)1) * sizeof(*v));
		if (v && n)
			memcpy(v, l->snap[k].v, n * sizeof(*v));
		pthread_mutex_unlock(&l->snap_lock);
		if (!v)
			return -ENOMEM;
		*ret = TAKE_PTR(v);
		return (int)n;
	}
	pthread_mutex_unlock(&l->snap_lock);

	rcu_read_lock(); /* see acct_ledger_find() */
	for_each_record(l->ht, &iter, cg) {
		if (!include_dead && acct_cgroup_is_dead(cg))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct acct_cgroup **nv = reallocarray(v, cap, sizeof(*v));
			if (!nv) {
				rcu_read_unlock();
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = cg;
	}
	rcu_read_unlock();
	if (n > 1)
		qsort(v, n, sizeof(*v), compare_records);
	/* Kept for the next call if nothing changed meanwhile; without memory
	 * for the copy the next call sorts again. */
	struct acct_cgroup **copy = malloc(MAX(n, (size_t)1) * sizeof(*copy));
	pthread_mutex_lock(&l->snap_lock);
	if (copy && l->changes == changes) {
		if (n) /* v is NULL for an empty table */
			memcpy(copy, v, n * sizeof(*copy));
		free(l->snap[k].v);
		l->snap[k].v = TAKE_PTR(copy);
		l->snap[k].n = n;
		l->snap[k].changes = changes;
		l->snap[k].valid = true;
	}
	pthread_mutex_unlock(&l->snap_lock);
	free(copy);
	*ret = TAKE_PTR(v);
	return (int)n;
}

void acct_ledger_counts(const struct acct_ledger *l, uint64_t *ret_live, uint64_t *ret_dead)
{
	if (ret_live)
		*ret_live = __atomic_load_n(&l->live, __ATOMIC_RELAXED);
	if (ret_dead)
		*ret_dead = __atomic_load_n(&l->dead, __ATOMIC_RELAXED);
}

void acct_ledger_set_budgets(struct acct_ledger *l, const struct acct_ledger_budgets *budgets)
{
	struct cds_lfht_iter iter;
	struct acct_cgroup *cg;

	l->budgets = *budgets;
	rcu_read_lock();
	for_each_record(l->ht, &iter, cg)
		for (int q = 0; q < _ACCT_Q_MAX; q++)
			(void)acct_counter_set_budget(cg->q[q], budget_for(budgets, acct_quantity_info(q)->unit));
	rcu_read_unlock();
}

void acct_ledger_get_budgets(const struct acct_ledger *l, struct acct_ledger_budgets *ret)
{
	*ret = l->budgets;
}

/* ---- values ------------------------------------------------------------- */

uint64_t acct_ledger_changes(struct acct_ledger *l)
{
	pthread_mutex_lock(&l->snap_lock);
	uint64_t changes = l->changes;
	pthread_mutex_unlock(&l->snap_lock);
	return changes;
}

uint64_t acct_ledger_memory_changes(const struct acct_ledger *l)
{
	return __atomic_load_n(&l->memory_changes, __ATOMIC_RELAXED);
}

static void note_memory_change(struct acct_cgroup *cg, enum acct_quantity q)
{
	if (q == ACCT_Q_MEMORY && cg->ledger)
		__atomic_fetch_add(&cg->ledger->memory_changes, 1, __ATOMIC_RELAXED);
}

int acct_cgroup_set_checked(struct acct_cgroup *cg, enum acct_quantity q, int64_t value)
{
	/* The sampler is the only writer of kernel quantities, so moving the
	 * counter to the new reading is one add of the difference. */
	int64_t cur = acct_counter_read_precise(cg->q[q]);
	bool known = __atomic_load_n(&cg->q_known[q], __ATOMIC_ACQUIRE);

	if (known && acct_quantity_info(q)->cumulative && value < cur)
		return -ERANGE;
	if (value != cur)
		acct_counter_add(cg->q[q], (int64_t)((uint64_t)value - (uint64_t)cur));
	if (value != cur || !known)
		note_memory_change(cg, q); /* a first reading is a change too: the cgroup now has one */
	if (!known)
		__atomic_store_n(&cg->q_known[q], true, __ATOMIC_RELEASE);
	return 0;
}

void acct_cgroup_set(struct acct_cgroup *cg, enum acct_quantity q, int64_t value)
{
	int64_t cur = acct_counter_read_precise(cg->q[q]);
	if (value != cur)
		acct_counter_add(cg->q[q], (int64_t)((uint64_t)value - (uint64_t)cur));
	if (value != cur || !__atomic_load_n(&cg->q_known[q], __ATOMIC_RELAXED))
		note_memory_change(cg, q);
	__atomic_store_n(&cg->q_known[q], true, __ATOMIC_RELEASE);
}

int acct_cgroup_set_node(struct acct_cgroup *cg, unsigned node, int64_t value)
{
	struct acct_reading rd;
	int r = acct_counter_read_node(cg->numa, node, &rd);
	if (r < 0)
		return r;
	r = acct_counter_add_node(cg->numa, node, (int64_t)((uint64_t)value - (uint64_t)rd.value));
	if (r == 0)
		__atomic_store_n(&cg->numa_known, true, __ATOMIC_RELEASE);
	return r;
}

static int memstat_key_find(const struct acct_ledger *l, const char *key, size_t key_len)
{
	unsigned n = __atomic_load_n(&l->nr_memstat_keys, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		if (strncmp(l->memstat_keys[i], key, key_len) == 0 && l->memstat_keys[i][key_len] == 0)
			return (int)i;
	return -ENOENT;
}

int acct_ledger_memstat_find(const struct acct_ledger *l, const char *key)
{
	return memstat_key_find(l, key, strlen(key));
}

static int memstat_key_index(struct acct_ledger *l, const char *key, size_t key_len)
{
	int found = memstat_key_find(l, key, key_len);
	if (found >= 0)
		return found;

	pthread_mutex_lock(&l->keys_lock);
	int r = -ENOSPC;
	unsigned n = l->nr_memstat_keys;
	for (unsigned i = 0; i < n; i++)
		if (strncmp(l->memstat_keys[i], key, key_len) == 0 && l->memstat_keys[i][key_len] == 0) {
			r = (int)i;
			goto out;
		}
	if (n < ACCT_MEMSTAT_MAX) {
		char *k = strndup(key, key_len);
		if (!k) {
			r = -ENOMEM;
			goto out;
		}
		l->memstat_keys[n] = k;
		__atomic_store_n(&l->nr_memstat_keys, n + 1, __ATOMIC_RELEASE);
		r = (int)n;
	}
out:
	pthread_mutex_unlock(&l->keys_lock);
	return r;
}

int acct_ledger_memstat_intern(struct acct_ledger *l, const char *key)
{
	return memstat_key_index(l, key, strlen(key));
}

int acct_cgroup_set_memstat(struct acct_ledger *l, struct acct_cgroup *cg, const char *key, size_t key_len,
			    int64_t value)
{
	int i = memstat_key_index(l, key, key_len);
	if (i < 0)
		return i;
	return acct_cgroup_set_memstat_at(l, cg, (unsigned)i, value);
}

int acct_cgroup_set_memstat_at(struct acct_ledger *l, struct acct_cgroup *cg, unsigned i, int64_t value)
{
	if (i >= __atomic_load_n(&l->nr_memstat_keys, __ATOMIC_ACQUIRE))
		return -EINVAL;
	int64_t *v = __atomic_load_n(&cg->memstat, __ATOMIC_ACQUIRE);
	if (!v) {
		v = malloc(ACCT_MEMSTAT_MAX * sizeof(*v));
		if (!v)
			return -ENOMEM;
		/* -1: the kernel did not report this key for this cgroup */
		for (unsigned k = 0; k < ACCT_MEMSTAT_MAX; k++)
			v[k] = -1;
		__atomic_store_n(&cg->memstat, v, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&v[i], value, __ATOMIC_RELAXED);
	return 0;
}

const char *acct_ledger_memstat_key(const struct acct_ledger *l, unsigned index)
{
	return index < __atomic_load_n(&l->nr_memstat_keys, __ATOMIC_ACQUIRE) ? l->memstat_keys[index] : NULL;
}

unsigned acct_ledger_memstat_count(const struct acct_ledger *l)
{
	return __atomic_load_n(&l->nr_memstat_keys, __ATOMIC_ACQUIRE);
}

void acct_cgroup_set_double(uint64_t *bits, double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof(b));
	__atomic_store_n(bits, b, __ATOMIC_RELAXED);
}

double acct_cgroup_get_double(const uint64_t *bits)
{
	uint64_t b = __atomic_load_n(bits, __ATOMIC_RELAXED);
	double v;
	memcpy(&v, &b, sizeof(v));
	return v;
}

bool acct_cgroup_get(const struct acct_cgroup *cg, enum acct_quantity q, bool precise, struct acct_reading *ret)
{
	if (!__atomic_load_n(&cg->q_known[q], __ATOMIC_ACQUIRE))
		return false;
	if (precise)
		*ret = (struct acct_reading){ .value = acct_counter_read_precise(cg->q[q]), .bound = 0 };
	else
		acct_counter_read(cg->q[q], ret);
	uint64_t kb = __atomic_load_n(&cg->kernel_bound[q], __ATOMIC_RELAXED);
	ret->bound = ret->bound + kb < ret->bound ? UINT64_MAX : ret->bound + kb;
	return true;
}

uint64_t acct_cgroup_kernel_bound(const struct acct_cgroup *cg, enum acct_quantity q)
{
	return __atomic_load_n(&cg->kernel_bound[q], __ATOMIC_RELAXED);
}

void acct_cgroup_set_kernel_bound(struct acct_cgroup *cg, enum acct_quantity q, uint64_t bound)
{
	if (__atomic_load_n(&cg->kernel_bound[q], __ATOMIC_RELAXED) == bound)
		return;
	__atomic_store_n(&cg->kernel_bound[q], bound, __ATOMIC_RELAXED);
	note_memory_change(cg, q);
}

void acct_cgroup_set_sampled(struct acct_cgroup *cg, enum acct_quantity q, uint64_t now_us)
{
	__atomic_store_n(&cg->q_sampled_us[q], now_us, __ATOMIC_RELEASE); /* after the value: ledger.h, ages */
}

void acct_ledger_steady_advance(struct acct_ledger *l, uint64_t now_us)
{
	if (now_us > __atomic_load_n(&l->steady.us, __ATOMIC_RELAXED))
		__atomic_store_n(&l->steady.us, now_us, __ATOMIC_RELEASE);
}

void acct_ledger_steady_reset(struct acct_ledger *l)
{
	__atomic_store_n(&l->steady.gen, __atomic_load_n(&l->steady.gen, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

uint64_t acct_cgroup_quantity_sampled(const struct acct_cgroup *cg, enum acct_quantity q)
{
	/* the epoch first (ledger.h, "Steady cgroups"): it covers the fast
	 * group's stamp and the set stamp */
	uint64_t steady = acct_cgroup_steady_us(cg);
	uint64_t t = MAX(acct_cgroup_get_group_sampled(cg, acct_quantity_info(q)->group),
			 __atomic_load_n(&cg->q_sampled_us[q], __ATOMIC_ACQUIRE));
	/* the stamp before the mask (acct_cgroup_set_sampled_set()) */
	uint64_t set = MAX(__atomic_load_n(&cg->set_sampled_us, __ATOMIC_ACQUIRE), steady);
	if (__atomic_load_n(&cg->set_mask, __ATOMIC_RELAXED) & (UINT64_C(1) << q))
		t = MAX(t, set);
	return t;
}

uint64_t acct_cgroup_quantity_age(const struct acct_cgroup *cg, enum acct_quantity q, uint64_t now_us)
{
	uint64_t t = acct_cgroup_quantity_sampled(cg, q);
	if (t == 0)
		return UINT64_MAX;
	return now_us > t ? now_us - t : 0;
}

bool acct_cgroup_is_dead(const struct acct_cgroup *cg)
{
	return __atomic_load_n(&cg->dead, __ATOMIC_ACQUIRE);
}

uint64_t acct_cgroup_age(const struct acct_cgroup *cg, enum acct_sample_group g, uint64_t now_us)
{
	uint64_t t = acct_cgroup_get_group_sampled(cg, g);
	if (t == 0)
		return UINT64_MAX;
	return now_us > t ? now_us - t : 0;
}

/* ---- Readers: a consistent copy of what a record serves ------------------
 * (memory orders: ledger.h, same section) */

/* Local copies of acct_cgroup_age() and acct_cgroup_get_double(): the
 * exported ones are not inlined (the library is position independent), and
 * a List or a scrape calls this once per cgroup. */
static inline uint64_t age_at(const struct acct_cgroup *cg, enum acct_sample_group g, uint64_t now_us)
{
	uint64_t t = acct_cgroup_get_group_sampled(cg, g);
	if (t == 0)
		return UINT64_MAX;
	return now_us > t ? now_us - t : 0;
}

static inline double double_at(const uint64_t *bits)
{
	uint64_t b = __atomic_load_n(bits, __ATOMIC_RELAXED);
	double v;
	memcpy(&v, &b, sizeof(v));
	return v;
}

/* How long load passes have fed cg's load average at now_us, and whether
 * that is its whole life (struct acct_cgroup_values). */
static void load_coverage(const struct acct_cgroup *cg, uint64_t now_us, struct acct_cgroup_values *ret)
{
	uint64_t since = __atomic_load_n(&cg->load_since_us, __ATOMIC_RELAXED);
	ret->load_covered_us = since && now_us > since ? now_us - since : 0;
	ret->load_whole_life = __atomic_load_n(&cg->load_whole_life, __ATOMIC_RELAXED);
}

/* The CPU rate and its averages, decayed over the idle time the sampler
 * noted since they were set (acct_cgroup_set_cpu_rate(), "lazy decay"): the
 * averages as the last pass would have left them had it decayed them, not as
 * of now_us (a reader's clock is no pass's). The five fields are taken as one
 * under the writer's sequence count (a seqlock: retried while a write is in
 * progress or landed between the loads; a write is a few stores). */
static void cpu_rate_copy(const struct acct_cgroup *cg, struct acct_cgroup_values *ret)
{
	uint64_t seq0, seq1, at, idle;
	double avg[3];
	/* A member's rate was 0 at its joining, and stood still since
	 * (acct_cgroup_cpu_rate_idle() until the epoch's time). */
	uint64_t steady = acct_cgroup_steady_us(cg);

	for (;;) {
		seq0 = __atomic_load_n(&cg->cpu_rate_seq, __ATOMIC_ACQUIRE);
		ret->cpu_rate = double_at(&cg->cpu_rate_bits);
		for (int a = 0; a < 3; a++)
			avg[a] = double_at(&cg->cpu_rate_avg_bits[a]);
		at = __atomic_load_n(&cg->cpu_rate_avg_us, __ATOMIC_RELAXED);
		idle = __atomic_load_n(&cg->cpu_rate_idle_us, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		seq1 = __atomic_load_n(&cg->cpu_rate_seq, __ATOMIC_RELAXED);
		if (!(seq0 & 1) && seq0 == seq1)
			break;
		caa_cpu_relax();
	}
	if (steady > idle && ret->cpu_rate == 0)
		idle = steady;
	uint64_t dt = idle > at ? idle - at : 0;
	for (int a = 0; a < 3; a++)
		ret->cpu_rate_avg[a] = acct_rate_avg_decayed(avg[a], a, dt);
}

void acct_cgroup_read(const struct acct_cgroup *cg, unsigned what, uint64_t now_us, struct acct_cgroup_values *ret)
{
	/* the stamps before anything they date */
	for (int g = 0; g < _ACCT_GROUP_MAX; g++)
		ret->age[g] = age_at(cg, (enum acct_sample_group)g, now_us);

	if (what & ACCT_READ_STATE) {
		ret->dead = __atomic_load_n(&cg->dead, __ATOMIC_ACQUIRE);
		ret->died_us = ret->dead ? __atomic_load_n(&cg->died_us, __ATOMIC_RELAXED) : 0;
		ret->populated = __atomic_load_n(&cg->populated, __ATOMIC_RELAXED);
		ret->hierarchies = __atomic_load_n(&cg->hierarchies, __ATOMIC_ACQUIRE);
		ret->sample_errors = __atomic_load_n(&cg->sample_errors, __ATOMIC_RELAXED);
	}
	if (what & ACCT_READ_LIST_ROW) { /* a part of what follows, which may copy it again */
		ret->cpu_rate_known = __atomic_load_n(&cg->cpu_rate_known, __ATOMIC_ACQUIRE);
		ret->cpu_rate = double_at(&cg->cpu_rate_bits);
		ret->io_rate_known = __atomic_load_n(&cg->io_rate_known, __ATOMIC_ACQUIRE);
		ret->io_rate[ACCT_IO_READ_BYTES] = double_at(&cg->io_rate_bits[ACCT_IO_READ_BYTES]);
		ret->io_rate[ACCT_IO_WRITE_BYTES] = double_at(&cg->io_rate_bits[ACCT_IO_WRITE_BYTES]);
		ret->loadavg[0] = __atomic_load_n(&cg->loadavg[0], __ATOMIC_RELAXED);
		load_coverage(cg, now_us, ret);
		for (int r = 0; r < _ACCT_PSI_MAX; r++) {
			ret->psi_known[r] = __atomic_load_n(&cg->psi_known[r], __ATOMIC_ACQUIRE);
			ret->psi_avg[r][ACCT_PSI_SOME][0] = __atomic_load_n(&cg->psi_avg[r][ACCT_PSI_SOME][0], __ATOMIC_RELAXED);
		}
	}
	if (what & ACCT_READ_CPU_RATE) {
		ret->cpu_rate_known = __atomic_load_n(&cg->cpu_rate_known, __ATOMIC_ACQUIRE);
		cpu_rate_copy(cg, ret);
	}
	if (what & ACCT_READ_IO_RATE) {
		ret->io_rate_known = __atomic_load_n(&cg->io_rate_known, __ATOMIC_ACQUIRE);
#pragma GCC unroll 6
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++)
			ret->io_rate[k] = double_at(&cg->io_rate_bits[k]);
	}
	if (what & ACCT_READ_MOTION) {
		ret->memory_motion_known = __atomic_load_n(&cg->memory_motion_known, __ATOMIC_ACQUIRE);
		ret->memory_motion = double_at(&cg->memory_motion_bits);
	}
	if (what & ACCT_READ_LOAD) {
		for (int a = 0; a < 3; a++)
			ret->loadavg[a] = __atomic_load_n(&cg->loadavg[a], __ATOMIC_RELAXED);
		load_coverage(cg, now_us, ret);
	}
	if (what & ACCT_READ_PSI)
		for (int r = 0; r < _ACCT_PSI_MAX; r++) {
			const uint32_t *from = &cg->psi_avg[r][0][0];
			uint32_t *to = &ret->psi_avg[r][0][0];
			ret->psi_known[r] = __atomic_load_n(&cg->psi_known[r], __ATOMIC_ACQUIRE);
			/* unrolled: the atomics keep the compiler from doing it, and
			 * this runs once per cgroup of a List or a scrape */
#pragma GCC unroll 6
			for (int i = 0; i < _ACCT_PSI_KIND_MAX * 3; i++)
				to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
		}
	if (what & ACCT_READ_MEMORY) {
		ret->memstat = __atomic_load_n(&cg->memstat, __ATOMIC_ACQUIRE);
		ret->memstat_bound = __atomic_load_n(&cg->memstat_bound, __ATOMIC_RELAXED);
		ret->numa_us = __atomic_load_n(&cg->numa_us, __ATOMIC_RELAXED);
		ret->numa_known = __atomic_load_n(&cg->numa_known, __ATOMIC_ACQUIRE);
	}
	if (what & ACCT_READ_IO) {
		const struct acct_cgroup_io *io = __atomic_load_n(&cg->io, __ATOMIC_ACQUIRE);
		unsigned n = io ? __atomic_load_n(&io->n, __ATOMIC_ACQUIRE) : 0;
		ret->has_io = io != NULL;
		ret->nr_io = n;
		for (unsigned i = 0; i < n; i++) {
			ret->io[i].device = io->dev[i].device;
			for (int k = 0; k < _ACCT_IO_STAT_MAX; k++)
				ret->io[i].v[k] = __atomic_load_n(&io->dev[i].v[k], __ATOMIC_RELAXED);
		}
	}
}

bool acct_cgroup_quantity_known(const struct acct_cgroup *cg, enum acct_quantity q)
{
	return __atomic_load_n(&cg->q_known[q], __ATOMIC_ACQUIRE);
}

/* ---- end of Readers ------------------------------------------------------- */

/* ---- block I/O per device ------------------------------------------------- */

static const struct {
	const char *name;
	enum acct_quantity total;
} io_stats[_ACCT_IO_STAT_MAX] = {
	[ACCT_IO_READ_BYTES] = { "read_bytes", ACCT_Q_IO_READ_BYTES },
	[ACCT_IO_WRITE_BYTES] = { "write_bytes", ACCT_Q_IO_WRITE_BYTES },
	[ACCT_IO_READ_IOS] = { "read_ios", ACCT_Q_IO_READ_IOS },
	[ACCT_IO_WRITE_IOS] = { "write_ios", ACCT_Q_IO_WRITE_IOS },
	[ACCT_IO_DISCARD_BYTES] = { "discard_bytes", ACCT_Q_IO_DISCARD_BYTES },
	[ACCT_IO_DISCARD_IOS] = { "discard_ios", ACCT_Q_IO_DISCARD_IOS },
};

const char *acct_io_stat_name(enum acct_io_stat s)
{
	return (unsigned)s < _ACCT_IO_STAT_MAX ? io_stats[s].name : NULL;
}

enum acct_quantity acct_io_stat_quantity(enum acct_io_stat s)
{
	return (unsigned)s < _ACCT_IO_STAT_MAX ? io_stats[s].total : (enum acct_quantity)-1;
}

int acct_ledger_io_device_find(const struct acct_ledger *l, unsigned major, unsigned minor)
{
	unsigned n = __atomic_load_n(&l->nr_io_devices, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		if (l->io_devices[i].major == major && l->io_devices[i].minor == minor)
			return (int)i;
	return -ENOENT;
}

int acct_ledger_io_device_add(struct acct_ledger *l, unsigned major, unsigned minor, const char *name)
{
	int r = acct_ledger_io_device_find(l, major, minor);
	if (r >= 0)
		return r;

	pthread_mutex_lock(&l->keys_lock);
	unsigned n = l->nr_io_devices;
	r = -ENOSPC;
	for (unsigned i = 0; i < n; i++)
		if (l->io_devices[i].major == major && l->io_devices[i].minor == minor) {
			r = (int)i; /* another worker added it meanwhile */
			goto out;
		}
	if (n < ACCT_IO_DEVICES_MAX) {
		struct acct_io_device *d = &l->io_devices[n];
		*d = (struct acct_io_device){ .major = major, .minor = minor };
		if (name)
			snprintf(d->name, sizeof(d->name), "%s", name);
		__atomic_store_n(&l->nr_io_devices, n + 1, __ATOMIC_RELEASE);
		r = (int)n;
	}
out:
	pthread_mutex_unlock(&l->keys_lock);
	return r;
}

const struct acct_io_device *acct_ledger_io_device(const struct acct_ledger *l, unsigned index)
{
	return index < __atomic_load_n(&l->nr_io_devices, __ATOMIC_ACQUIRE) ? &l->io_devices[index] : NULL;
}

int acct_cgroup_set_io_device(struct acct_cgroup *cg, unsigned device, const int64_t v[_ACCT_IO_STAT_MAX])
{
	struct acct_cgroup_io *io = __atomic_load_n(&cg->io, __ATOMIC_ACQUIRE);

	if (device >= ACCT_IO_DEVICES_MAX)
		return -EINVAL;
	if (!io) {
		io = calloc(1, sizeof(*io));
		if (!io)
			return -ENOMEM;
		__atomic_store_n(&cg->io, io, __ATOMIC_RELEASE);
	}
	unsigned n = __atomic_load_n(&io->n, __ATOMIC_RELAXED), i;
	for (i = 0; i < n; i++)
		if (io->dev[i].device == device)
			break;
	if (i == ACCT_IO_CG_DEVICES)
		return -ENOSPC;
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++)
		__atomic_store_n(&io->dev[i].v[k], v[k], __ATOMIC_RELAXED);
	if (i == n) {
		io->dev[i].device = (uint16_t)device;
		/* the slot is whole before readers may see it */
		__atomic_store_n(&io->n, n + 1, __ATOMIC_RELEASE);
	}
	return 0;
}
