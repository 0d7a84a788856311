/* plot.c - a series drawn in a terminal (see plot.h). */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl-util.h"
#include "human.h"

/* Dots per character cell: braille has 2 columns of 4, ASCII one. */
#define DOT_COLS(unicode) ((unicode) ? 2u : 1u)
#define DOT_ROWS(unicode) ((unicode) ? 4u : 1u)

enum { DOT_NONE, DOT_JOIN, DOT_POINT };

/* The largest value with data, or 0. */
static double series_max(const struct plot_series *s)
{
	double m = 0;

	for (size_t i = 0; i < s->n; i++)
		if (!isnan(s->values[i]) && s->values[i] > m)
			m = s->values[i];
	return m;
}

/* The top of the y axis: the maximum, or one unit for an all-zero series, so
 * that its line lies at the bottom. */
static double y_top(const struct plot_series *s)
{
	double m = series_max(s);

	return m > 0 ? m : 1;
}

static struct fbuf y_label(enum plot_unit unit, double v)
{
	struct fbuf b;

	switch (unit) {
	case PLOT_BYTES:
		return fmt_bytes((int64_t)llround(v));
	case PLOT_BYTES_PER_S:
		b = fmt_bytes((int64_t)llround(v));
		memcpy(b.s + strnlen(b.s, sizeof(b.s) - 3), "/s", 3);
		return b;
	case PLOT_CORES:
		return fmt_2f(v);
	case PLOT_USEC:
		return fmt_duration((int64_t)llround(v));
	default:
		return fmt_int((int64_t)llround(v));
	}
}

/* The row (from the top) that carries the middle label, or -1 for none. */
static int mid_row(unsigned height)
{
	return height >= 5 ? (int)(height / 2) : -1;
}

/* The value at the middle of row r (from the top) of the plot. */
static double row_value(double top, unsigned r, unsigned height, bool unicode)
{
	unsigned rows = height * DOT_ROWS(unicode);
	double dot = (double)(height - 1 - r) * DOT_ROWS(unicode) + (DOT_ROWS(unicode) - 1) / 2.0;

	return top * dot / (rows - 1);
}

/* The width of the widest y label. */
static unsigned label_width(const struct plot_series *s, unsigned height, bool unicode)
{
	double top = y_top(s);
	size_t w = strlen(y_label(s->unit, top).s), w0 = strlen(y_label(s->unit, 0).s);
	int m = mid_row(height);

	w = MAX(w, w0);
	if (m >= 0)
		w = MAX(w, strlen(y_label(s->unit, row_value(top, (unsigned)m, height, unicode)).s));
	return (unsigned)w;
}

unsigned plot_data_columns(const struct plot_series *s, unsigned width)
{
	/* the labels of a plot of any height: the middle one is never wider
	 * than the top one but for rounding, so take the widest of both */
	unsigned lw = MAX(label_width(s, PLOT_MIN_HEIGHT, false), label_width(s, 5, true));

	return width > lw + 2 ? width - lw - 2 : 1;
}

/* Print line[0, len) without its trailing blanks, and a newline. */
static void put_line(FILE *f, const char *line, size_t len)
{
	while (len > 0 && line[len - 1] == ' ')
		len--;
	fwrite(line, 1, len, f);
	fputc('\n', f);
}

/* The time of t_us on the x axis. */
static void time_label(char *buf, size_t size, uint64_t t_us, uint64_t span_us)
{
	time_t t = (time_t)(t_us / 1000000);
	struct tm tm;
	bool days = span_us > UINT64_C(86400000000), seconds = span_us < UINT64_C(600000000);

	/* literal formats, so that the compiler checks them */
	if (!localtime_r(&t, &tm) ||
	    strftime(buf, size, days ? "%m-%d %H:%M" : seconds ? "%H:%M:%S" : "%H:%M", &tm) == 0)
		snprintf(buf, size, "?");
}

/* The value of dot column x of X: the mean of the values that fall on it
 * (NAN when none has data). */
static double column_value(const struct plot_series *s, unsigned x, unsigned X)
{
	size_t lo = (size_t)x * s->n / X, hi = (size_t)(x + 1) * s->n / X;
	double sum = 0;
	size_t k = 0;

	if (hi <= lo)
		hi = lo + 1;
	for (size_t i = lo; i < hi && i < s->n; i++)
		if (!isnan(s->values[i])) {
			sum += s->values[i];
			k++;
		}
	return k ? sum / (double)k : NAN;
}

int plot_draw(FILE *f, const struct plot_series *s, unsigned width, unsigned height, bool unicode)
{
	unsigned lw, cols, X, Y, dx = DOT_COLS(unicode), dy = DOT_ROWS(unicode);
	_cleanup_free_ unsigned char *dots = NULL; /* Y rows (from the bottom) of X */
	_cleanup_free_ bool *gap = NULL;            /* per character column */
	_cleanup_free_ char *line = NULL;
	double top;
	int prev = -1, m;
	size_t len, cap;
	char first[32], mid[32], last[32];
	uint64_t span;

	if (!s || s->n == 0 || height < PLOT_MIN_HEIGHT)
		return -EINVAL;
	lw = label_width(s, height, unicode);
	if (width < lw + 2 + PLOT_MIN_COLUMNS)
		return -EINVAL;
	cols = width - lw - 2;
	X = cols * dx;
	Y = height * dy;
	top = y_top(s);
	dots = xcalloc((size_t)X * Y, 1);
	gap = xcalloc(cols, sizeof(bool));
	cap = (size_t)width * 4 + 64; /* a braille character is 3 bytes, a box one 3 */
	line = xcalloc(cap, 1);

	for (unsigned x = 0; x < X; x++) {
		double v = column_value(s, x, X);
		int lv;

		if (isnan(v)) {
			/* a break: the next point starts a new stretch */
			prev = -1;
			gap[x / dx] = true;
			continue;
		}
		lv = (int)llround((v > 0 ? v : 0) / top * (Y - 1));
		lv = MAX(0, MIN(lv, (int)Y - 1));
		if (prev >= 0)
			for (int y = MIN(prev, lv) + 1; y < MAX(prev, lv); y++)
				dots[(size_t)y * X + x] = DOT_JOIN;
		dots[(size_t)lv * X + x] = DOT_POINT;
		prev = lv;
	}

	fprintf(f, "%s\n", s->title);
	m = mid_row(height);
	for (unsigned r = 0; r < height; r++) {
		const char *label = "";
		struct fbuf b;

		if (r == 0)
			b = y_label(s->unit, top), label = b.s;
		else if (r == height - 1)
			b = y_label(s->unit, 0), label = b.s;
		else if ((int)r == m)
			b = y_label(s->unit, row_value(top, r, height, unicode)), label = b.s;
		len = (size_t)snprintf(line, cap, "%*s %s", (int)lw, label,
				       *label ? (unicode ? "┤" : "+") : (unicode ? "│" : "|"));
		for (unsigned c = 0; c < cols; c++) {
			if (unicode) {
				/* braille dot bits: column 0 rows 0-2 are 0x01 0x02 0x04,
				 * column 1 rows 0-2 0x08 0x10 0x20, row 3 0x40 0x80 */
				static const unsigned bit[2][4] = { { 0x01, 0x02, 0x04, 0x40 }, { 0x08, 0x10, 0x20, 0x80 } };
				unsigned bits = 0;

				for (unsigned i = 0; i < 2; i++)
					for (unsigned j = 0; j < 4; j++) {
						unsigned y = (height - 1 - r) * 4 + (3 - j);
						if (dots[(size_t)y * X + c * 2 + i])
							bits |= bit[i][j];
					}
				if (bits) {
					unsigned cp = 0x2800 + bits;
					line[len++] = (char)(0xe0 | (cp >> 12));
					line[len++] = (char)(0x80 | ((cp >> 6) & 0x3f));
					line[len++] = (char)(0x80 | (cp & 0x3f));
				} else
					line[len++] = ' ';
			} else {
				unsigned char d = dots[(size_t)(height - 1 - r) * X + c];
				line[len++] = d == DOT_POINT ? '*' : d == DOT_JOIN ? '|' : ' ';
			}
		}
		put_line(f, line, len);
	}

	/* the x axis: the gaps dotted */
	len = (size_t)snprintf(line, cap, "%*s %s", (int)lw, "", unicode ? "└" : "+");
	for (unsigned c = 0; c < cols; c++) {
		const char *g = gap[c] ? (unicode ? "┈" : ".") : (unicode ? "─" : "-");
		size_t n = strlen(g);
		memcpy(line + len, g, n);
		len += n;
	}
	put_line(f, line, len);

	/* the times: the start under the first column, the end under the last,
	 * the middle centred when there is room */
	span = s->step_us * s->n;
	time_label(first, sizeof(first), s->start_us, span);
	time_label(mid, sizeof(mid), s->start_us + span / 2, span);
	time_label(last, sizeof(last), s->start_us + span, span);
	memset(line, ' ', cap);
	len = lw + 2 + cols;
	if (strlen(first) <= cols)
		memcpy(line + lw + 2, first, strlen(first));
	if (strlen(first) + strlen(last) + 1 <= cols) {
		size_t at = lw + 2 + cols - strlen(last);
		size_t mat = lw + 2 + cols / 2 - strlen(mid) / 2;
		memcpy(line + at, last, strlen(last));
		if (mat > lw + 2 + strlen(first) && mat + strlen(mid) < at)
			memcpy(line + mat, mid, strlen(mid));
	}
	put_line(f, line, len);
	return 0;
}
