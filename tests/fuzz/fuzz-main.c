/* fuzz-main.c - the regression runner of the libFuzzer targets: a main() that
 * feeds files through a target's LLVMFuzzerTestOneInput(), so that every
 * seed and every input that once crashed runs in the ordinary builds (gcc
 * included, no libFuzzer), in meson's unit suite.
 *
 * Usage: fuzz-regress-TARGET [--if-exists] PATH...  Each PATH is a file or
 * a directory (its regular files, in name order, not recursively; names
 * starting with '.' are left out). A PATH that does not exist is an error
 * unless --if-exists precedes it, and so is running no input at all: a runner that
 * silently ran nothing would be a test that cannot fail. A broken invariant
 * aborts inside the target (its check()), which fails the test; the name of
 * the input is printed before it runs. Calls LLVMFuzzerInitialize() first
 * where the target has one, as libFuzzer does. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t size = 0, alloc = 4096;
	uint8_t *buf = malloc(alloc);
	if (!buf) {
		fclose(f);
		return -1;
	}
	for (;;) {
		size_t n = fread(buf + size, 1, alloc - size, f);
		size += n;
		if (size < alloc)
			break;
		uint8_t *p = realloc(buf, alloc * 2);
		if (!p) {
			free(buf);
			fclose(f);
			return -1;
		}
		buf = p;
		alloc *= 2;
	}
	bool failed = ferror(f);
	fclose(f);
	if (failed) {
		fprintf(stderr, "%s: read error\n", path);
		free(buf);
		return -1;
	}
	/* An exact-size copy, so that AddressSanitizer sees a read past the end. */
	uint8_t *input = malloc(size ? size : 1);
	if (!input) {
		free(buf);
		return -1;
	}
	memcpy(input, buf, size);
	free(buf);
	fprintf(stderr, "running %s (%zu bytes)\n", path, size);
	(void)LLVMFuzzerTestOneInput(input, size);
	free(input);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	unsigned ran = 0;
	int ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE-OR-DIRECTORY...\n", argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize)
		(void)LLVMFuzzerInitialize(&argc, &argv);
	bool optional = false;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (strcmp(argv[i], "--if-exists") == 0) {
			optional = true;
			continue;
		}
		bool may_miss = optional;
		optional = false;
		if (stat(argv[i], &st) < 0) {
			if (may_miss && errno == ENOENT)
				continue;
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			ret = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) < 0)
				ret = 1;
			else
				ran++;
			continue;
		}
		struct dirent **names;
		int n = scandir(argv[i], &names, NULL, by_name);
		if (n < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			ret = 1;
			continue;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
			if (names[k]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				if (run_file(path) < 0)
					ret = 1;
				else
					ran++;
			}
			free(names[k]);
		}
		free(names);
	}
	if (ran == 0) {
		fprintf(stderr, "no input ran\n");
		return 1;
	}
	fprintf(stderr, "%u inputs ran\n", ran);
	return ret;
}
