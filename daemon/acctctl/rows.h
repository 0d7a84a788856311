/* rows.h - the cgroups of a List reply as rows, for list and top: fetched
 * with "more" and parsed reply by reply, sorted by a key or arranged as a
 * tree (each row below its nearest listed ancestor), and put into a table. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "client/acct-client.h"
#include "ctl-util.h"
#include "table.h"

struct columns;

enum sort_key {
	SORT_PATH,
	SORT_MEMORY,
	SORT_CPU,
	SORT_LOAD,
	SORT_PRESSURE,
	SORT_IO,
	SORT_TASKS,
	SORT_READ_RATE,
	SORT_WRITE_RATE,
	SORT_READ,
	SORT_WRITE,
	SORT_CHARGE, /* the resource of --charge=NAME: list and usage only */
	_SORT_MAX
};
/* The keys' names, as --sort takes them. */
extern const char *const sort_names[_SORT_MAX];

struct row {
	struct json_object *obj; /* borrowed from the reply's array */
	const char *path;
	bool dead;
	struct value mem;
	bool has_cpu, has_load, has_psi[3];
	bool load_warming; /* load is still warming up (List's load1_warming) */
	double cpu, load, psi[3]; /* psi: cpu, memory, io "some" avg10 */
	int64_t cpu_age;
	bool has_io;
	double io_read, io_write; /* bytes per second */
	struct value tasks;
	struct value io_read_total, io_write_total; /* bytes */
	/* the subtree value of rows.charge (List's charges): unset where the
	 * summary has none, which List leaves out when nothing was charged */
	struct value charge;
	/* tree */
	size_t parent; /* SIZE_MAX: none shown */
	size_t *children, nchildren;
};

struct rows {
	struct row *v;
	size_t n, cap;
	size_t *order, norder; /* the table's order (a tree's is not v's) */
	struct arena strings;  /* the paths */
	const char *charge;    /* the charged resource whose value the rows keep (list --charge), or NULL */
};

/* Free every row; rs is empty again. Usable as a cleanup. */
void rows_done(struct rows *rs);

/* Call List (PREFIX, --depth, --all) with "more" and append each reply's
 * cgroups to rs as it comes, so that the memory of one reply's objects is
 * reused for the next; with keep_json each row keeps a reference to its object
 * (for --json). Returns an exit status; EXIT_OK also when a quit signal
 * interrupted the wait (the caller checks got_quit_signal). */
int list_fetch(struct acct_client *c, const char *prefix, bool keep_json, struct rows *rs);

/* Order the rows by `sort` (path: tree order; every other key largest first,
 * rows without the figure last, ties by path), flat or as a tree (the key
 * orders siblings), and fill t (when not NULL; initialised here with the
 * columns `cols`, columns.h) in that order; rs->order says which row is
 * where. A flat table keeps only the first `limit` rows of the order (0: all;
 * a tree keeps every row: its rows are placed by their ancestors, not ranked). */
void rows_table(struct rows *rs, bool tree, enum sort_key sort, size_t limit, const struct columns *cols,
		struct table *t);
