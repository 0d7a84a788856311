/* fuzz-timestamp.c - libFuzzer target: systemd.time(7) timestamps
 * (lib/basic/timestamp.h), at a fixed "now" in UTC.
 *
 * The input is the text (cut at the first NUL). Beyond "no crash"
 * (AddressSanitizer sees any read past the end) the target checks what the
 * parser promises:
 *   - a success is before 10000-01-01 and leaves nothing unparsed in a way
 *     that changes the answer: the same text parses to the same value again
 *     (no hidden state), *ret untouched on failure;
 *   - the value of any success reads back exactly as "@SECONDS.USEC";
 *   - "-SPAN" and "SPAN ago" mean the same time;
 *   - the errors are -EINVAL or -ERANGE only.
 *
 * Built by meson with -Dfuzz=true (clang): CC=clang meson setup build-fuzz -Dfuzz=true
 * && ninja -C build-fuzz tests/fuzz-timestamp. Run:
 *   build-fuzz/tests/fuzz-timestamp -max_total_time=60 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timestamp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* 2026-12-02 04:05:06.789 UTC */
#define NOW (UINT64_C(1796184306) * 1000000 + 789000)
#define END_US (UINT64_C(253402300800) * 1000000)

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("TZ", "UTC", 1);
	tzset();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, at[64];
	uint64_t v = 7, again = 7, back = 7;
	int r;

	if (size > 256)
		return 0;
	s = strndup((const char *)data, size);
	if (!s)
		return 0;
	r = acct_parse_timestamp(s, NOW, &v);
	check(r == 0 || r == -EINVAL || r == -ERANGE, "an error other than -EINVAL or -ERANGE");
	if (r < 0) {
		check(v == 7, "*ret written on failure");
		free(s);
		return 0;
	}
	check(v < END_US, "a time after 9999");
	check(acct_parse_timestamp(s, NOW, &again) == 0 && again == v, "a second parse differs");
	snprintf(at, sizeof(at), "@%" PRIu64 ".%06" PRIu64, v / 1000000, v % 1000000);
	check(acct_parse_timestamp(at, NOW, &back) == 0 && back == v, "the value does not read back as @SECONDS");
	if (s[0] == '-' && size < 200) {
		char ago[256];
		uint64_t a = 7;

		snprintf(ago, sizeof(ago), "%s ago", s + 1);
		check(acct_parse_timestamp(ago, NOW, &a) == 0 && a == v, "-SPAN and SPAN ago differ");
	}
	free(s);
	return 0;
}
