/* table.c - the table renderer (see table.h). */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#include "basic/name-escape.h"
#include "ctl-util.h"
#include "human.h"

void table_init(struct table *t, size_t ncols, const char *const *headers, const unsigned *flags)
{
	*t = (struct table){ .ncols = ncols, .headers = headers, .flags = flags };
}

void table_done(struct table *t)
{
	free(t->cells);
	free(t->styles);
	arena_done(&t->strings);
	t->cells = NULL;
	t->styles = NULL;
	t->header_style = STYLE_PLAIN;
	t->nrows = t->cap = 0;
}


/* A cell as it may reach a terminal (the row's strings are the table's). */
static char *cell_for_terminal(struct table *t, char *s)
{
	size_t n = strlen(s);

	if (name_escape_span(s, n, NAME_ESCAPE_TEXT) == n)
		return s;
	char *e = arena_alloc(&t->strings, n * NAME_ESCAPE_MAX_EXPANSION + 1);
	e[name_escape_to(e, s, n, NAME_ESCAPE_TEXT)] = '\0';
	return e;
}

void table_add(struct table *t, char **row)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **n = reallocarray(t->cells, cap * t->ncols, sizeof(char *));
		if (!n)
			oom_exit();
		t->cells = n;
		if (t->styles) {
			unsigned char *s = reallocarray(t->styles, cap * t->ncols, 1);
			if (!s)
				oom_exit();
			memset(s + t->cap * t->ncols, 0, (cap - t->cap) * t->ncols);
			t->styles = s;
		}
		t->cap = cap;
	}
	char **cells = t->cells + t->nrows * t->ncols;
	for (size_t i = 0; i < t->ncols; i++)
		cells[i] = cell_for_terminal(t, row[i]);
	t->nrows++;
}

void table_style(struct table *t, size_t row, size_t col, enum cell_style s)
{
	if (row == TABLE_HEADER) {
		t->header_style = s;
		return;
	}
	if (!t->styles)
		t->styles = xcalloc(MAX(t->cap * t->ncols, (size_t)1), 1);
	t->styles[row * t->ncols + col] = (unsigned char)s;
}

/* SGR sequences, one per style; each styled cell ends with SGR_RESET. */
static const char *const sgr[_STYLE_MAX] = {
	[STYLE_PLAIN] = "",
	[STYLE_HEADER] = "\033[7m",
	[STYLE_GREW] = "\033[1m",
	[STYLE_WARN] = "\033[33m",
	[STYLE_ALERT] = "\033[1;31m",
};
#define SGR_RESET "\033[m"

static void pad(FILE *f, size_t n)
{
	static const char spaces[] = "                                                                ";

	while (n > 0) {
		size_t k = MIN(n, sizeof(spaces) - 1);
		fwrite(spaces, 1, k, f);
		n -= k;
	}
}

/* Without the legend the output is for scripts: every cell is one field, an
 * empty one shown as EMPTY_FIELD, so that `awk '{print $N}'` finds column N on
 * every row. */
#define EMPTY_FIELD "-"

static const char *cell_shown(const char *cell, bool legend)
{
	return !legend && !cell[0] ? EMPTY_FIELD : cell;
}

/* One line of cells, in styles (ncols of them, or NULL: plain), without its
 * newline. Returns its width in columns. */
static size_t table_line(FILE *f, const struct table *t, const char *const *cells, const unsigned char *styles,
			 const size_t *width, bool legend)
{
	size_t last = t->ncols, shown_width = 0;
	bool first = true;

	/* no trailing blanks: stop after the last non-empty cell */
	while (last > 0 && (!cell_shown(cells[last - 1], legend)[0] || t->flags[last - 1] & COL_HIDDEN))
		last--;
	for (size_t i = 0; i < last; i++) {
		_cleanup_free_ char *shown = NULL;
		const char *s = cell_shown(cells[i], legend);
		size_t w;

		if (t->flags[i] & COL_HIDDEN)
			continue;
		if (text_width(s) > width[i])
			s = shown = ellipsize_middle(s, width[i]);
		w = text_width(s);
		if (!first) {
			pad(f, t->flags[i] & COL_TIGHT ? 1 : 2);
			shown_width += t->flags[i] & COL_TIGHT ? 1 : 2;
		}
		first = false;
		if (t->flags[i] & COL_RIGHT)
			pad(f, width[i] - w);
		/* the style covers the text only, so that a bold figure does not
		 * drag its padding along */
		if (styles && styles[i])
			fprintf(f, "%s%s" SGR_RESET, sgr[styles[i]], s);
		else
			fputs(s, f);
		if (!(t->flags[i] & COL_RIGHT) && i + 1 < last)
			pad(f, width[i] - w);
		shown_width += i + 1 < last || t->flags[i] & COL_RIGHT ? width[i] : w;
	}
	return shown_width;
}

void table_print(FILE *f, const struct table *t, bool legend, unsigned max_width)
{
	_cleanup_free_ size_t *width = xcalloc(t->ncols, sizeof(size_t));
	size_t total = 0;

	for (size_t i = 0; i < t->ncols; i++) {
		if (t->flags[i] & COL_HIDDEN)
			continue;
		width[i] = legend ? text_width(t->headers[i]) : 0;
		for (size_t r = 0; r < t->nrows; r++)
			width[i] = MAX(width[i], text_width(cell_shown(t->cells[r * t->ncols + i], legend)));
		total += width[i] + (total == 0 ? 0 : t->flags[i] & COL_TIGHT ? 1 : 2);
	}
	if (max_width > 0 && total > max_width)
		for (size_t i = 0; i < t->ncols; i++)
			if (t->flags[i] & COL_ELLIPSIZE) {
				size_t excess = total - max_width, floor = MAX((size_t)16, legend ? text_width(t->headers[i]) : 0);
				width[i] = width[i] > floor + excess ? width[i] - excess : MIN(width[i], floor);
				break;
			}
	if (legend) {
		if (t->header_style) {
			/* a bar across the screen, as top's and htop's */
			fputs(sgr[t->header_style], f);
			size_t w = table_line(f, t, t->headers, NULL, width, true);
			if (max_width > w)
				pad(f, max_width - w);
			fputs(SGR_RESET, f);
		} else
			table_line(f, t, t->headers, NULL, width, true);
		fputc('\n', f);
	}
	for (size_t r = 0; r < t->nrows; r++) {
		table_line(f, t, (const char *const *)t->cells + r * t->ncols,
			   t->styles ? t->styles + r * t->ncols : NULL, width, legend);
		fputc('\n', f);
	}
}
