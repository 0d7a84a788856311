/* table.h - acctctl's table renderer: columns sized to their content, right
 * or left aligned, the widest ellipsizable column shortened to fit a width,
 * no trailing blanks. Cells live in the table's arena. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "arena.h"

enum {
	COL_RIGHT = 1u << 0,     /* right-aligned */
	COL_ELLIPSIZE = 1u << 1, /* shortened in the middle when the table is too wide */
	COL_TIGHT = 1u << 2,     /* one space before it instead of two (a bound after its value) */
	COL_HIDDEN = 1u << 3,    /* not printed */
};

struct table {
	size_t ncols, nrows, cap;
	const char *const *headers;
	const unsigned *flags;
	char **cells;       /* nrows x ncols, in `strings` */
	struct arena strings;
};

/* An empty table of ncols columns; headers and flags (ncols each) are
 * borrowed and must outlive it. */
void table_init(struct table *t, size_t ncols, const char *const *headers, const unsigned *flags);
/* Free the rows and cells; t may be zero-initialised. Usable as a cleanup. */
void table_done(struct table *t);

/* A cell's text, kept by the table. */
#define cell_str(t, s) arena_strdup(&(t)->strings, (s))
#define cell_fmt(t, ...) arena_printf(&(t)->strings, __VA_ARGS__)

/* Append a row of ncols strings made with cell_str()/cell_fmt(); exits on out
 * of memory. A cell with control characters or bytes that are not UTF-8 (a
 * cgroup name may hold any) is kept as print_text() shows it (ctl-util.h), so
 * that widths are those of what is printed. */
void table_add(struct table *t, char **row);
/* Print with columns sized to their content (and the headers when legend;
 * without them every empty cell is printed as "-", so that each row has one
 * field per column for scripts);
 * when max_width > 0 and the table is wider, the ellipsizable column gives up
 * the difference (down to 16 columns). */
void table_print(FILE *f, const struct table *t, bool legend, unsigned max_width);
