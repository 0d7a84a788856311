/* columns.h - the columns of list and top, as -o/--output selects them (as
 * ps -o and lsblk -o do): each column's field name, header, alignment, how a
 * row fills it, and the members of acctd's CgroupSummary behind it (what --json keeps of each cgroup when -o is given).
 * One table (columns.c) says all of that per column. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "rows.h"
#include "table.h"

enum column {
	COLUMN_CGROUP,
	COLUMN_STATE,
	COLUMN_MEMORY,
	COLUMN_BOUND,
	COLUMN_CPU,
	COLUMN_LOAD,
	COLUMN_PSI_CPU,
	COLUMN_PSI_MEM,
	COLUMN_PSI_IO,
	COLUMN_TASKS,
	COLUMN_READ_RATE,
	COLUMN_WRITE_RATE,
	COLUMN_READ,
	COLUMN_WRITE,
	COLUMN_AGE,
	COLUMN_CHARGE,       /* list --charge=NAME: its header is NAME */
	COLUMN_CHARGE_BOUND,
	_COLUMN_MAX,
};

/* The most columns one -o may name (a field may be named twice, as in ps). */
#define COLUMNS_MAX 64

/* A selection of columns, in the order they are printed; `given`: chosen
 * with -o (else the command's default). Holds the table's headers and flags. */
struct columns {
	bool given;
	size_t n;
	enum column v[COLUMNS_MAX];
	const char *headers[COLUMNS_MAX];
	unsigned flags[COLUMNS_MAX];
	int charge_unit; /* COLUMN_CHARGE's enum acct_unit; negative: not known (integers) */
};

/* Parse -o's FIELD[,FIELD...] (names as `acctctl list --output=help` lists
 * them, in any case; "path" is cgroup's alias) into ret, marked given.
 * Returns 0; -EINVAL with *ret_bad pointing at the first unknown or empty
 * field in s (ret untouched); -E2BIG for more than COLUMNS_MAX fields. */
int columns_parse(const char *s, struct columns *ret, const char **ret_bad);
/* The fields' names joined by ", " (for an error message): a static string. */
const char *columns_names(void);
/* The list of fields: name, header and what it shows, one per line. */
void columns_help(FILE *f);

/* The default columns of list and top: CGROUP, STATE (only when `state`),
 * MEMORY with its bound, CPU, LOAD, the three PSI, TASKS, READ/s, WRITE/s,
 * AGE. */
void columns_default(struct columns *c, bool state);

/* Append column `which` to c (after -o's or the default's). Returns 0, or
 * -E2BIG when c holds COLUMNS_MAX already. */
int columns_append(struct columns *c, enum column which);
/* Give every column `which` of c the header `header` (a static string or
 * one that outlives c). */
void columns_set_header(struct columns *c, enum column which, const char *header);

/* Whether c shows column `which`. */
bool columns_has(const struct columns *c, enum column which);

/* An empty table with c's columns; c must outlive it. */
void columns_table_init(const struct columns *c, struct table *t);
/* Add row r to t (made by columns_table_init() with c), with `name` (a cell
 * of t already: the path, or its tree form) in CGROUP. */
void columns_table_add(const struct columns *c, struct table *t, const struct row *r, char *name);

/* What --json prints of a CgroupSummary o: o itself (a new reference) when
 * the columns were not given with -o, else a new object with only the
 * members behind the selected columns (psi_some_avg10 with only the selected
 * resources). Exits on out of memory. */
struct json_object *columns_json(const struct columns *c, struct json_object *o);
