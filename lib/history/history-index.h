/* history-index.h - the writing store's in-memory index of the lives it
 * records: (path, inode) -> the life's row id and the values of its last
 * point, so that a recording finds what changed without reading the file.
 * Internal to lib/history.
 *
 * A ptr-table.h table (no tombstones: lookups stay short however many
 * cgroups come and go). Not thread-safe: the store's thread owns it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/ptr-table.h"
#include "history-store.h"

struct history_life {
	char *path;                  /* owned */
	uint64_t inode;
	int64_t id;                  /* lives.id */
	uint64_t first_seen_us;
	int64_t run;                 /* the run of its last point */
	struct history_values last;  /* its last point's values */
	bool has_last;               /* it has a point at all */
	bool pointed;                /* it has a point in this run */
	uint64_t last_point_us;      /* of its last point in this run (0: none) */
	uint64_t seen;               /* the recording that last named it */
};

struct history_index {
	struct ptr_table lives; /* struct history_life * by (path, inode) */
};

/* The life of (path, inode), or NULL. */
struct history_life *history_index_get(const struct history_index *x, const char *path, uint64_t inode);

/* Add `l` (taken on success; its key must not be in the index). 0 or -ENOMEM. */
int history_index_add(struct history_index *x, struct history_life *l);

/* Take `l` out of the index (not freed). */
void history_index_remove(struct history_index *x, struct history_life *l);

/* Free every life and the table. */
void history_index_clear(struct history_index *x);

struct history_life *history_life_free(struct history_life *l);
