/* table.h - acctctl's table renderer: columns sized to their content, right
 * or left aligned, the widest ellipsizable column shortened to fit a width,
 * no trailing blanks. Cells live in the table's arena. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"

enum {
	COL_RIGHT = 1u << 0,     /* right-aligned */
	COL_ELLIPSIZE = 1u << 1, /* shortened in the middle when the table is too wide */
	COL_TIGHT = 1u << 2,     /* one space before it instead of two (a bound after its value) */
	COL_HIDDEN = 1u << 3,    /* not printed */
};

/* How a cell looks where colour is wanted (terminal.h colors_enabled()):
 * few attributes, as top(1) and htop use them, so that what stands out means
 * something. */
enum cell_style {
	STYLE_PLAIN,
	STYLE_HEADER, /* the column headers: reverse video, across the width */
	STYLE_GREW,   /* larger than at the last refresh: bold */
	STYLE_WARN,   /* worth a look (pressure of 10% or more): yellow */
	STYLE_ALERT,  /* a problem (pressure of 40% or more): bold red */
	_STYLE_MAX,
};

/* table_style()'s row for the header line. */
#define TABLE_HEADER SIZE_MAX

struct table {
	size_t ncols, nrows, cap;
	const char *const *headers;
	const unsigned *flags;
	char **cells;       /* nrows x ncols, in `strings` */
	struct arena strings;
	unsigned char *styles; /* nrows x ncols enum cell_style; NULL: no colour */
	enum cell_style header_style;
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
/* Show the cell at row, col (row TABLE_HEADER: the whole header line) in
 * style s. Without a call the table
 * prints no escape sequence. Exits on out of memory. */
void table_style(struct table *t, size_t row, size_t col, enum cell_style s);
/* Print with columns sized to their content (and the headers when legend;
 * without them every empty cell is printed as "-", so that each row has one
 * field per column for scripts);
 * when max_width > 0 and the table is wider, the ellipsizable column gives up
 * the difference (down to 16 columns), and a styled header line is as wide
 * as max_width. */
void table_print(FILE *f, const struct table *t, bool legend, unsigned max_width);
