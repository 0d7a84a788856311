/* history-index.c - the in-memory index of the lives a writing store records
 * (history-index.h). */
#include "history-index.h"

#include <stdlib.h>
#include <string.h>

#include "basic/hash.h"

struct key {
	const char *path;
	uint64_t inode;
};

static uint64_t hash_key(const char *path, uint64_t inode)
{
	return hash_mix64(hash_fnv1a_u64(hash_fnv1a_string(path), inode));
}

static bool life_eq(const void *p, const void *key)
{
	const struct history_life *l = p;
	const struct key *k = key;
	return l->inode == k->inode && strcmp(l->path, k->path) == 0;
}

struct history_life *history_index_get(const struct history_index *x, const char *path, uint64_t inode)
{
	return ptr_table_find(&x->lives, hash_key(path, inode), life_eq, &(struct key){ path, inode });
}

int history_index_add(struct history_index *x, struct history_life *l)
{
	return ptr_table_insert(&x->lives, hash_key(l->path, l->inode), l);
}

void history_index_remove(struct history_index *x, struct history_life *l)
{
	ptr_table_remove(&x->lives, hash_key(l->path, l->inode), l);
}

struct history_life *history_life_free(struct history_life *l)
{
	if (l) {
		free(l->path);
		free(l);
	}
	return NULL;
}

static void free_life(void *p)
{
	history_life_free(p);
}

void history_index_clear(struct history_index *x)
{
	ptr_table_clear(&x->lives, free_life);
}
