/* fuzz-name-escape.c - libFuzzer target: the served text of any byte string
 * (lib/basic/name-escape.h).
 *
 * The input is a name of exactly its size (no NUL inside: cut at the first).
 * Beyond "no crash" (AddressSanitizer sees any read past the end) the target
 * checks what the module promises, against a reference decoder written
 * differently (code points computed, then ranges checked):
 *   - UTF-8 mode output is valid UTF-8; text mode output also holds no
 *     C0, DEL, C1 or bidi control;
 *   - valid UTF-8 is served unchanged (without controls, in text mode
 *     too), backslashes always;
 *   - the output is within NAME_ESCAPE_MAX_EXPANSION times the input;
 *   - name_unescape() of either output gives the name back, when the name
 *     holds no literal escape of its own;
 *   - utf8_boundary() never cuts a character.
 *
 * Built by meson with -Dfuzz=true (clang): CC=clang meson setup build-fuzz -Dfuzz=true
 * && ninja -C build-fuzz tests/fuzz-name-escape. Run:
 *   build-fuzz/tests/fuzz-name-escape -max_total_time=60 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name-escape.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

/* The reference: the code point of the character at s[0..n) and its length,
 * or 0 when it is not valid UTF-8. */
static size_t ref_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, *cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, *cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, *cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (*cp < min[len] || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* C0, DEL, C1 and Unicode's Bidi_Control characters, listed one by one. */
static bool is_control(uint32_t cp)
{
	static const uint32_t bidi[] = { 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c,
					 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069 };

	if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(bidi); i++)
		if (cp == bidi[i])
			return true;
	return false;
}

/* Whether s[0..n) is valid UTF-8 (and, if no_controls, holds none). */
static bool ref_valid(const char *s, size_t n, bool no_controls)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = ref_decode(u + i, n - i, &cp);
		if (l == 0 || (no_controls && is_control(cp)))
			return false;
		i += l;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *name = malloc(size + 1);
	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	size_t n = strlen(name);

	/* every character the module accepts is one the reference does */
	for (size_t i = 0; i < n; i++) {
		uint32_t cp;
		size_t l = utf8_char_len(name + i, n - i);
		check(l == ref_decode((const unsigned char *)name + i, n - i, &cp), "utf8_char_len against the reference");
		check(utf8_char_len(name + i, SIZE_MAX) == l, "utf8_char_len of a NUL-terminated string");
	}

	static const enum name_escape_mode modes[] = { NAME_ESCAPE_UTF8, NAME_ESCAPE_TEXT };
	for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
		bool text = modes[m] == NAME_ESCAPE_TEXT;
		char *out = name_escape(name, modes[m]);
		check(out != NULL, "name_escape");
		size_t len = strlen(out);
		check(len <= NAME_ESCAPE_MAX_EXPANSION * n, "expansion");
		check(ref_valid(out, len, text), "served text is valid UTF-8 (without controls in text mode)");
		size_t span = name_escape_span(name, n, modes[m]);
		check(span <= n && memcmp(out, name, span) == 0, "the span comes out unchanged");
		check((span == n) == ref_valid(name, n, text), "unchanged exactly when valid");
		check((span == n) == (len == n && memcmp(out, name, n) == 0), "unchanged means the same bytes");
		/* backslashes are never escaped, so every one of the name's is there */
		size_t bs_in = 0, bs_out = 0;
		for (size_t i = 0; i < n; i++)
			bs_in += name[i] == '\\';
		for (size_t i = 0; i < len; i++)
			bs_out += out[i] == '\\';
		check(bs_out >= bs_in, "backslashes kept");
		/* the inverse, where the name has no literal escape of its own */
		char *back = malloc(len + 1);
		check(back != NULL, "malloc");
		char *probe = malloc(n + 1);
		check(probe != NULL, "malloc");
		bool literal = name_unescape(name, probe);
		if (!literal) {
			if (name_unescape(out, back))
				check(strcmp(back, name) == 0, "unescape(escape(name)) == name");
			else
				check(strcmp(out, name) == 0, "nothing to unescape: nothing was escaped");
		}
		/* unescaping adds no '/', '.' and no NUL */
		if (name_unescape(out, back)) {
			size_t sl_out = 0, sl_back = 0, dot_out = 0, dot_back = 0;
			for (size_t i = 0; i < len; i++)
				sl_out += out[i] == '/', dot_out += out[i] == '.';
			size_t bl = strlen(back);
			for (size_t i = 0; i < bl; i++)
				sl_back += back[i] == '/', dot_back += back[i] == '.';
			check(sl_out == sl_back && dot_out == dot_back, "no '/' or '.' from unescaping");
		}
		free(probe);
		free(back);
		free(out);
	}

	/* cutting: on a boundary, as long as possible */
	for (size_t max = 0; max <= n + 1 && max < 64; max++) {
		size_t b = utf8_boundary(name, n, max);
		check(b <= max && b <= n, "boundary within the limit");
		check(b == n || b + 4 > max, "boundary no further back than one character");
		uint32_t cp;
		for (size_t i = 0; i < b;) {
			size_t l = ref_decode((const unsigned char *)name + i, n - i, &cp);
			i += l ? l : 1;
			check(i <= b, "boundary splits a character");
		}
	}
	free(name);
	return 0;
}
