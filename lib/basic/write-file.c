/* write-file.c - replace a file's content atomically (write-file.h). */
#include "write-file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* "." BASE "." and 16 hex digits of 64 random bits: nobody can plant it ahead. */
static int temp_name(const char *base, char *buf, size_t size)
{
	uint64_t r;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)buf;
	}
	int n = snprintf(buf, size, ".%s.%016llx", base, (unsigned long long)r);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The directory of `path` (opened) and the name within it. */
static int open_parent(int dirfd, const char *path, int *ret_dfd, const char **ret_base)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base)
		return -EISDIR;
	_cleanup_free_ char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (!dir)
		return -ENOMEM;
	int dfd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	*ret_dfd = dfd;
	*ret_base = base;
	return 0;
}

/* Is `name` what temp_name() makes for `base`? */
static bool is_temp_name(const char *name, const char *base)
{
	size_t n = strlen(base);

	if (name[0] != '.' || strncmp(name + 1, base, n) != 0 || name[1 + n] != '.')
		return false;
	const char *hex = name + n + 2;
	return strlen(hex) == 16 && strspn(hex, "0123456789abcdef") == 16;
}

int write_file_remove_stale_at(int dirfd, const char *path)
{
	_cleanup_close_ int dfd = -1;
	const char *base;
	int r = open_parent(dirfd, path, &dfd, &base);
	if (r < 0)
		return r;
	int lfd = dup(dfd); /* closedir() closes the one it reads */
	if (lfd < 0)
		return -errno;
	_cleanup_(closedirp) DIR *d = fdopendir(lfd);
	if (!d) {
		r = -errno;
		close(lfd);
		return r;
	}
	int removed = 0;
	for (struct dirent *de; (errno = 0, de = readdir(d));) {
		struct stat st;
		if (!is_temp_name(de->d_name, base) || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode) && st.st_uid == geteuid() && unlinkat(dfd, de->d_name, 0) == 0)
			removed++;
	}
	return errno ? -errno : removed;
}

static int write_atomic(int dirfd, const char *path, const void *data, size_t len, mode_t mode, bool durable)
{
	/* The directory and the name within it: every step below is relative to
	 * the one directory descriptor, so a directory renamed meanwhile cannot
	 * split the temporary file from its target. */
	_cleanup_close_ int dfd = -1;
	const char *base;
	int r = open_parent(dirfd, path, &dfd, &base);
	if (r < 0)
		return r;

	char tmp[NAME_MAX + 1];
	r = temp_name(base, tmp, sizeof(tmp));
	if (r < 0)
		return r;
	bool named = false;
	_cleanup_close_ int fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd < 0) {
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return -errno;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0)
			return -errno;
		named = true;
	}
	r = write_all(fd, data, len);
	/* Durable: the content on disk before the name can point at it, so that
	 * a crash after the rename never leaves the name on an empty file. */
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && !named) {
		/* Name the finished file. linkat() never follows or replaces an
		 * existing name: EEXIST if someone guessed the random one. */
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, proc, dfd, tmp, AT_SYMLINK_FOLLOW) < 0)
			r = -errno;
		else
			named = true;
	}
	if (r == 0 && close(TAKE_FD(fd)) < 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, base) < 0)
		r = -errno;
	if (r < 0 && named)
		(void)unlinkat(dfd, tmp, 0);
	/* The rename itself is durable once its directory is. */
	if (r == 0 && durable && fsync(dfd) < 0)
		r = -errno;
	return r;
}

int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode)
{
	return write_atomic(dirfd, path, data, len, mode, false);
}

int write_file_durable_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode)
{
	return write_atomic(dirfd, path, data, len, mode, true);
}
