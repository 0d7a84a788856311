/* format-double.h - a double as the shortest decimal text that reads back to
 * the same double.
 *
 * printf's "%.17g" always reads back but shows the binary noise of most
 * decimal fractions (27.99 as 27.989999999999998); "%.15g" is short but does
 * not always read back. This gives the fewest significant digits (at most 17)
 * with which strtod() returns exactly the same double, as Python's repr() and
 * JavaScript's Number.toString() do. Pure: no I/O, no allocation; independent
 * of the locale (always '.').
 *
 * The form is that of printf's %g with the precision the digits need: fixed
 * notation for decimal exponents -4 to 16 ("0.0001", "27.99",
 * "12345678901234568"), otherwise scientific with a signed exponent of at
 * least two digits ("1e-07", "1.5e+300"); no trailing zeros, no ".0" on
 * integral values (a JSON writer that wants it adds it), "-0" for negative
 * zero. Every output is a valid JSON number and a valid Prometheus value. */
#pragma once

#define FORMAT_DOUBLE_MAX 32 /* bytes, with the NUL; the longest output is 24 */

#include <stddef.h>

/* Write the shortest text of the finite `v` to buf (NUL-terminated) and
 * return its length. NaN and the infinities have no decimal text: returns
 * -EDOM and leaves buf empty; each caller spells them as its format wants. */
int format_double_shortest(double v, char buf[static FORMAT_DOUBLE_MAX]);

/* snprintf(buf, size, "%.*f", decimals, v), byte for byte as glibc prints it
 * (rounding the exact binary value, "-0.00" for a small negative), without
 * printf in the common case: 0 <= decimals <= 3, |v| * 10^decimals below
 * 1e9 and not (within half an ulp of) a rounding tie, which covers every figure
 * acctctl shows (cores, load, pressure, sizes, ages); anything else goes to
 * snprintf(). For the 100,000 cells of a 10,000-cgroup table, where printf's
 * floating-point path was most of the formatting time. Returns what
 * snprintf() would (the length, or more when size is too small: then buf
 * holds what fits); size >= 16 for the fast path. */
int format_fixed(char *buf, size_t size, double v, unsigned decimals);
