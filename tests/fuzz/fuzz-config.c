/* fuzz-config.c - libFuzzer target: the configuration loader (lib/config/config.h),
 * a main file and its drop-ins as files on disk, read the way acctd reads them.
 *
 * Input: the text of up to three files separated by lines
 * "#--acctd-fuzz-dropin--": the main file, then drop-ins 00.conf and
 * 50.conf of the drop-in directory (a separator is an ordinary comment to
 * the loader, so a seed made of one real file loads as that file). They are
 * written into a private temporary directory, made once. Beyond "no crash"
 * the target checks what the module promises:
 *   - a load succeeds with no error message, or fails with a negative errno
 *     and the message; warnings are "FILE:LINE: ..." lines;
 *   - what loads dumps (acct_config_dump()) to a file that loads again, alone,
 *     and dumps to the same values (the comments name the files read):
 *     the dump is a fixed point;
 *   - the files read are listed in the configuration's sources, in order.
 *
 * Built by meson with -Dfuzz=true (clang); make check-fuzz and make fuzz run
 * it (tests/fuzz/run-fuzz.sh), from a copy of tests/fuzz/corpus/config. */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEPARATOR "#--acctd-fuzz-dropin--\n"

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static char dir[128], main_file[192], dropin_dir[192], dump_file[192];
static char dropins[2][224];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Leave nothing behind (the regression runner exits normally; see setup()). */
static void cleanup(void)
{
	(void)nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	if (dir[0])
		return;
	/* In $TMPDIR: run-fuzz.sh points it at a directory it removes, as
	 * libFuzzer ends without running atexit(). */
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(dir, sizeof(dir), "%s/acctd-fuzz-config.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	check(n > 0 && (size_t)n < sizeof(dir), "TMPDIR is not too long");
	check(mkdtemp(dir) != NULL, "mkdtemp");
	atexit(cleanup);
	snprintf(main_file, sizeof(main_file), "%s/acctd.conf", dir);
	snprintf(dropin_dir, sizeof(dropin_dir), "%s/acctd.conf.d", dir);
	snprintf(dump_file, sizeof(dump_file), "%s/dump.conf", dir);
	snprintf(dropins[0], sizeof(dropins[0]), "%s/00.conf", dropin_dir);
	snprintf(dropins[1], sizeof(dropins[1]), "%s/50.conf", dropin_dir);
	check(mkdir(dropin_dir, 0700) == 0, "mkdir");
	/* Warnings about unknown keys are expected by the thousand: keep quiet. */
	log_set_max_level(LOG_CRIT);
}

static void write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "w");
	check(f != NULL, "fopen");
	check(fwrite(data, 1, size, f) == size, "fwrite");
	check(fclose(f) == 0, "fclose");
}

/* The dump of c, as a string (malloc'ed); without its comments when
 * `values_only` (they name the files read, which differ). */
static char *dump(const struct acct_config *c, bool values_only)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	check(f != NULL, "open_memstream");
	acct_config_dump(c, f);
	check(fclose(f) == 0, "dump");
	if (values_only) {
		char *w = text;
		for (char *line = text; *line;) {
			char *nl = strchrnul(line, '\n');
			size_t n = (size_t)(nl - line) + (*nl ? 1 : 0);
			if (line[0] != '#') {
				memmove(w, line, n);
				w += n;
			}
			line += n;
		}
		*w = '\0';
	}
	return text;
}

static void check_diag(const struct acct_config_diag *d)
{
	for (size_t i = 0; i < d->nr_warnings; i++) {
		check(d->warnings && d->warnings[i], "warnings listed");
		check(strncmp(d->warnings[i], dir, strlen(dir)) == 0 && strchr(d->warnings[i], ':'),
		      "a warning names its file");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *parts[3] = { NULL, NULL, NULL };
	size_t lens[3] = { 0, 0, 0 };
	size_t nparts = 0;

	if (size > 64 * 1024)
		return 0;
	setup();

	/* Cut at the separators: at most three files. */
	const char *p = (const char *)data, *end = p + size;
	while (nparts < 3) {
		const char *sep = memmem(p, (size_t)(end - p), SEPARATOR, strlen(SEPARATOR));
		parts[nparts] = p;
		if (!sep || nparts == 2) {
			lens[nparts++] = (size_t)(end - p);
			break;
		}
		lens[nparts++] = (size_t)(sep - p);
		p = sep + strlen(SEPARATOR);
	}
	write_file(main_file, parts[0], lens[0]);
	for (size_t i = 0; i < 2; i++) {
		if (i + 1 < nparts)
			write_file(dropins[i], parts[i + 1], lens[i + 1]);
		else
			(void)unlink(dropins[i]);
	}

	struct acct_config *c = NULL;
	struct acct_config_diag diag = { 0 };
	int r = acct_config_load(main_file, dropin_dir, &c, &diag);
	check_diag(&diag);
	if (r < 0) {
		check(c == NULL && diag.error != NULL, "a failed load says why");
		acct_config_diag_clear(&diag);
		return 0;
	}
	check(r == 0 && c != NULL && diag.error == NULL, "a load that succeeds has no error");
	acct_config_diag_clear(&diag);

	/* The files read, in order: the main file, then the drop-ins. */
	check(c->sources && c->sources[0] && strcmp(c->sources[0], main_file) == 0, "the main file is a source");
	for (size_t i = 0; i + 1 < nparts; i++)
		check(c->sources[i + 1] && strcmp(c->sources[i + 1], dropins[i]) == 0, "each drop-in is a source");

	/* The dump loads alone and dumps to itself. */
	char *whole = dump(c, false);
	write_file(dump_file, whole, strlen(whole));
	free(whole);
	char *first = dump(c, true);
	struct acct_config *again = NULL;
	r = acct_config_load(dump_file, "", &again, &diag);
	if (r < 0)
		fprintf(stderr, "the dump does not load: %s\n", diag.error ? diag.error : "?");
	check(r == 0 && again != NULL, "the dump loads");
	check(diag.nr_warnings == 0, "the dump loads without a warning");
	char *second = dump(again, true);
	if (strcmp(first, second) != 0)
		fprintf(stderr, "--- first dump\n%s--- second dump\n%s", first, second);
	check(strcmp(first, second) == 0, "the dump is a fixed point");
	free(first);
	free(second);
	acct_config_diag_clear(&diag);
	acct_config_free(again);
	acct_config_free(c);
	return 0;
}
