/* name-escape.h - the text acctd serves for a cgroup path, and back.
 *
 * A cgroup name may hold any byte but '/' and NUL (the kernel also refuses
 * '\n'): anyone who can make a cgroup can make one with the byte 0xff, or
 * with ESC ] 0 ; in it. JSON and Prometheus label values must be UTF-8, and a
 * terminal obeys the control characters it is sent. So a path leaves acctd as
 * its served text:
 *
 *   - valid UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 *     U+10FFFF) passes through unchanged;
 *   - each byte that is not part of valid UTF-8 becomes the four characters
 *     \xHH (HH lowercase hex, always >= 80);
 *   - nothing else changes. In particular a backslash is never escaped:
 *     systemd's unit names hold the literal text \x2d, and they must read the
 *     same in acctd as in systemctl.
 *
 * The terminal mode (acctctl's tables and lines) escapes in addition the
 * control characters, C0 (00-1f), DEL (7f) and C1 (U+0080-U+009F, the two
 * bytes c2 80 - c2 9f, each written \xHH), so that a name can neither move
 * the cursor nor retitle the window.
 *
 * Since backslashes stay, two names can serve the same text (one holding the
 * byte ff, one the four characters \xff). Lookups therefore take a path
 * literally first and only then unescaped (name_unescape()); the literal name
 * wins.
 *
 * Pure functions: no I/O, no logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum name_escape_mode {
	NAME_ESCAPE_UTF8,     /* JSON documents, metrics labels: bytes that are not UTF-8 */
	NAME_ESCAPE_TERMINAL, /* and control characters (C0, DEL, C1) */
};

/* The most output bytes one input byte can become ("\xHH"). */
#define NAME_ESCAPE_MAX_EXPANSION 4

/* Length (1-4) of the valid UTF-8 character that starts s[0..n), or 0 when
 * none does (n == 0, a stray continuation byte, an invalid lead byte, an
 * overlong form, a surrogate, a code point above U+10FFFF, a sequence cut
 * short). Reads s[1], s[2], ... only while the ones before were valid
 * continuation bytes, so a NUL-terminated string may be passed with n =
 * SIZE_MAX. */
size_t utf8_char_len(const char *s, size_t n);

/* The length of the longest prefix of s[0..n) of at most `max` bytes that
 * does not end inside a valid UTF-8 character (a byte that is not part of
 * one counts as a character of its own). For cutting text to a size. */
size_t utf8_boundary(const char *s, size_t n, size_t max);

/* How many bytes at the start of s[0..n) pass through name_escape_to()
 * unchanged in `mode`; n when none needs escaping. */
size_t name_escape_span(const char *s, size_t n, enum name_escape_mode mode);

/* Write the served text of s[0..n) in `mode` to `out`, which has room for
 * NAME_ESCAPE_MAX_EXPANSION * n bytes; no terminating NUL is added. Returns
 * the number of bytes written. Never fails. */
size_t name_escape_to(char *out, const char *s, size_t n, enum name_escape_mode mode);

/* The served text of the NUL-terminated s in `mode`, as a new NUL-terminated
 * string that the caller frees; NULL on ENOMEM. */
char *name_escape(const char *s, enum name_escape_mode mode);

/* The inverse, for lookups of a path a client sent as text: each \xHH that
 * name_escape_to() can write in either mode (lowercase hex, HH in 01-1f, 7f
 * or 80-ff) becomes the byte HH; everything else, "\x2d" and "\x00"
 * included, is kept. Writes the NUL-terminated result to `out` (room for
 * strlen(s) + 1 bytes) and returns true when there was such an escape;
 * returns false and leaves `out` untouched when there was none. The result
 * never holds a '/', '.' or NUL that s did not: unescaping cannot change how
 * a path splits into components. */
bool name_unescape(const char *s, char *out);
