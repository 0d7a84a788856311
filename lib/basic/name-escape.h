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
 * The text mode is the one rule for a name in text that people read: acctd's
 * log lines and journal fields, /metrics label values, acctctl's tables and
 * lines. It escapes in addition, each of its bytes as \xHH, every character
 * that a terminal or a text renderer obeys instead of showing:
 *
 *   - C0 controls (U+0000-U+001F), DEL (U+007F) and C1 controls
 *     (U+0080-U+009F, c2 80 - c2 9f: U+009B is a CSI of its own), so that a
 *     name can neither move the cursor nor retitle the window;
 *   - the bidirectional controls, U+061C, U+200E, U+200F, U+202A-U+202E and
 *     U+2066-U+2069 (Unicode's Bidi_Control; "Trojan Source", CVE-2021-42574),
 *     so that a name cannot reorder the text around it (U+202E makes
 *     "/evil\u202ecod.exe" read "/evilexe.doc").
 *
 * JSON documents keep the UTF-8 mode: the JSON encoder escapes C0 and DEL
 * itself and a program reads the exact text; whoever prints it escapes it
 * (acctctl does, in text mode).
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
	NAME_ESCAPE_UTF8, /* JSON documents: bytes that are not UTF-8 */
	NAME_ESCAPE_TEXT, /* log, journal, metrics labels, tables: and controls (C0, DEL, C1, bidi) */
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

/* A name for a log line or a journal field: s itself when text mode leaves
 * it unchanged (no allocation, the common case), else its text-mode text in
 * a new string stored in *buf, which the caller frees (NULL when nothing was
 * allocated). Out of memory gives a fixed placeholder: a log line is never
 * worth failing for. Never returns NULL. */
const char *name_text(const char *s, char **buf);

/* The inverse, for lookups of a path a client sent as text: each \xHH that
 * name_escape_to() can write in either mode (lowercase hex, HH in 01-1f, 7f
 * or 80-ff: a bidi control's three bytes are three such escapes) becomes the byte HH; everything else, "\x2d" and "\x00"
 * included, is kept. Writes the NUL-terminated result to `out` (room for
 * strlen(s) + 1 bytes) and returns true when there was such an escape;
 * returns false and leaves `out` untouched when there was none. The result
 * never holds a '/', '.' or NUL that s did not: unescaping cannot change how
 * a path splits into components. */
bool name_unescape(const char *s, char *out);
