/* test-tree.c - temporary directory trees for the cgroup tests. See
 * test-tree.h. */
#include "test-tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

char *xjoin(const char *a, const char *b)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", a, b) > 0);
	return p;
}

void xmkdir(const char *base, const char *rel)
{
	_cleanup_free_ char *p = xjoin(base, rel);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", p, strerror(errno));
}

unsigned long long xinode(const char *base, const char *rel)
{
	_cleanup_free_ char *p = xjoin(base, rel);
	struct stat st;
	if (stat(p, &st) < 0)
		fail_msg("stat %s: %s", p, strerror(errno));
	return (unsigned long long)st.st_ino;
}

unsigned long long xremake(const char *base, const char *rel)
{
	_cleanup_free_ char *p = xjoin(base, rel), *aside = NULL;
	assert_true(asprintf(&aside, "%s.old", p) > 0);
	if (rename(p, aside) < 0)
		fail_msg("rename %s: %s", p, strerror(errno));
	xmkdir(base, rel);
	return xinode(base, rel);
}

void xwrite(const char *base, const char *rel, const char *text)
{
	_cleanup_free_ char *p = xjoin(base, rel);
	FILE *f = fopen(p, "we");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

void xsymlink(const char *target, const char *base, const char *rel)
{
	_cleanup_free_ char *p = xjoin(base, rel);
	assert_int_equal(symlink(target, p), 0);
}

/* Remove everything below dfd (relative, so paths may exceed PATH_MAX). */
static void rm_below(int dfd)
{
	int fd = dup(dfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	/* another pass while entries went: readdir may skip some after an unlink */
	for (unsigned removed = 1; removed;) {
		removed = 0;
		rewinddir(dir);
		while ((de = readdir(dir))) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			if (de->d_type == DT_DIR) {
				int cfd = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (cfd >= 0) {
					rm_below(cfd);
					close(cfd);
				}
				removed += unlinkat(dirfd(dir), de->d_name, AT_REMOVEDIR) == 0;
			} else {
				removed += unlinkat(dirfd(dir), de->d_name, 0) == 0;
			}
		}
	}
	closedir(dir);
}

void rm_rf(const char *p)
{
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		(void)unlink(p);
		return;
	}
	rm_below(fd);
	close(fd);
	(void)rmdir(p);
}

void xrm_rf(const char *base, const char *rel)
{
	_cleanup_free_ char *p = xjoin(base, rel);
	rm_rf(p);
}

/* Fake trees live on tmpfs where there is one: tens of thousands of mkdir
 * take a fraction of a second there and seconds on a disk. */
char *make_tmpdir(const char *prefix)
{
	const char *dirs[] = { "/dev/shm", getenv("TMPDIR"), "/tmp" };

	for (unsigned i = 0; i < ELEMENTSOF(dirs); i++) {
		char *p = NULL;
		if (!dirs[i] || access(dirs[i], W_OK) < 0)
			continue;
		assert_true(asprintf(&p, "%s/%s-XXXXXX", dirs[i], prefix) > 0); /* mkdtemp() template */
		if (mkdtemp(p))
			return p;
		free(p);
	}
	fail_msg("no writable temporary directory");
	return NULL;
}

/* A hybrid tree: unified/ (v2), memory/, cpu,cpuacct/ with cpu and cpuacct
 * symlinks, as systemd mounts them on hybrid hosts. */
void make_hybrid(const char *base)
{
	xmkdir(base, "unified");
	xwrite(base, "unified/cgroup.controllers", "");
	xmkdir(base, "memory");
	xwrite(base, "memory/memory.usage_in_bytes", "0\n");
	xmkdir(base, "cpu,cpuacct");
	xsymlink("cpu,cpuacct", base, "cpu");
	xsymlink("cpu,cpuacct", base, "cpuacct");
}

/* ---- layout ---------------------------------------------------------------- */
