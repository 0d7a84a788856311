/* history-index.c - the in-memory index of the lives a writing store records
 * (history-index.h). */
#include "history-index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

static size_t slot_of(const struct history_index *x, const char *path, uint64_t inode)
{
	return hash_mix64(hash_fnv1a_u64(hash_fnv1a_string(path), inode)) & (x->n_slots - 1);
}

struct history_life *history_index_get(const struct history_index *x, const char *path, uint64_t inode)
{
	if (x->n_slots == 0)
		return NULL;
	for (size_t i = slot_of(x, path, inode);; i = (i + 1) & (x->n_slots - 1)) {
		struct history_life *l = x->slots[i];
		if (!l)
			return NULL;
		if (l->inode == inode && strcmp(l->path, path) == 0)
			return l;
	}
}

static void put(struct history_index *x, struct history_life *l)
{
	size_t i = slot_of(x, l->path, l->inode);
	while (x->slots[i])
		i = (i + 1) & (x->n_slots - 1);
	x->slots[i] = l;
}

int history_index_add(struct history_index *x, struct history_life *l)
{
	if ((x->n + 1) * 2 > x->n_slots) {
		size_t n = x->n_slots ? x->n_slots * 2 : 64;
		struct history_life **old = x->slots;
		size_t n_old = x->n_slots;
		x->slots = calloc(n, sizeof(*x->slots));
		if (!x->slots) {
			x->slots = old;
			return -ENOMEM;
		}
		x->n_slots = n;
		for (size_t i = 0; i < n_old; i++)
			if (old[i])
				put(x, old[i]);
		free(old);
	}
	put(x, l);
	x->n++;
	return 0;
}

void history_index_remove(struct history_index *x, struct history_life *l)
{
	size_t mask = x->n_slots - 1, i = slot_of(x, l->path, l->inode);
	while (x->slots[i] != l) {
		if (!x->slots[i])
			return;
		i = (i + 1) & mask;
	}
	x->slots[i] = NULL;
	x->n--;
	/* Shift back the entries after the hole that probing would no longer reach. */
	for (size_t j = (i + 1) & mask; x->slots[j]; j = (j + 1) & mask) {
		struct history_life *m = x->slots[j];
		size_t home = slot_of(x, m->path, m->inode);
		/* m may move to i when its home is not in the cyclic range (i, j]. */
		bool reachable = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!reachable) {
			x->slots[i] = m;
			x->slots[j] = NULL;
			i = j;
		}
	}
}

struct history_life *history_life_free(struct history_life *l)
{
	if (l) {
		free(l->path);
		free(l);
	}
	return NULL;
}

void history_index_clear(struct history_index *x)
{
	for (size_t i = 0; i < x->n_slots; i++)
		history_life_free(x->slots[i]);
	free(x->slots);
	*x = (struct history_index){};
}
