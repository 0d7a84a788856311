/* plot.h - a series over time drawn in a terminal, for `acctctl history`:
 * a line in Unicode braille (2x4 dots per character cell) on a UTF-8
 * terminal, or in ASCII ('*' for a point, '|' joining two points of
 * different height), with a y axis in human units (0 at the bottom, the
 * series' maximum at the top) and an x axis with the times of the window.
 *
 * A step without data (a gap: acctd was down, or the cgroup did not exist) is
 * never drawn or interpolated: the line breaks there, and the x axis shows
 * the gap as a dotted stretch ('┈', '.' in ASCII).
 *
 * Pure: it reads only its arguments and the local time zone (for the times
 * on the x axis), and writes to the FILE* it is given. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The unit of the values, for the y axis. */
enum plot_unit {
	PLOT_BYTES,       /* 64.0M */
	PLOT_BYTES_PER_S, /* 1.5M/s */
	PLOT_CORES,       /* 1.25 */
	PLOT_COUNT,       /* 12 */
	PLOT_USEC,        /* 1.5s: a duration in microseconds */
};

/* The smallest plot: rows of data, and character columns of data (beside
 * the y labels and the axis). */
#define PLOT_MIN_HEIGHT 2
#define PLOT_MIN_COLUMNS 8

struct plot_series {
	const char *title;    /* the line above the plot (printed as is: the caller escapes it) */
	enum plot_unit unit;
	const double *values; /* n values; NAN (isnan) where the step has no data */
	size_t n;
	uint64_t start_us;    /* values[i] is the step [start + i*step, start + (i+1)*step) */
	uint64_t step_us;
};

/* How many data columns a plot of `width` terminal columns has for series s
 * (the width minus the y labels and the axis), at least 1; with unicode every
 * column holds two values. For the caller that picks the step so that one
 * value falls on one dot column. */
unsigned plot_data_columns(const struct plot_series *s, unsigned width);

/* Draw s in `width` columns (the title, the y labels, the plot and the axes
 * fit into it; no line ends in a blank) with `height` rows for the data (at
 * least PLOT_MIN_HEIGHT), then an axis line and a line of times (HH:MM, with
 * the date when the window spans more than a day). unicode: braille and box
 * drawing characters; else ASCII only. When there are more values than dot
 * columns, a column shows the mean of its values that have data; with fewer,
 * a value spans several columns. Negative values are drawn as 0.
 * Returns 0; -EINVAL when s has no values, height < PLOT_MIN_HEIGHT or the
 * width leaves fewer than 8 data columns. Nothing is written on failure. */
int plot_draw(FILE *f, const struct plot_series *s, unsigned width, unsigned height, bool unicode);
