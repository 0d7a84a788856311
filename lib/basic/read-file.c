/* read-file.c - a whole (small) file into a string (read-file.h). */
#include "read-file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

char *read_file_at(int dirfd, const char *path)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t size = 16384, len = 0;
	_cleanup_free_ char *b = malloc(size);
	if (!b)
		return NULL;
	for (;;) {
		ssize_t n = read(fd, b + len, size - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (size - len < 2) {
			char *nb = realloc(b, size * 2);
			if (!nb)
				return NULL;
			b = nb;
			size *= 2;
		}
	}
	b[len] = 0;
	return TAKE_PTR(b);
}

ssize_t read_fd_whole(int fd, char *buf, size_t size)
{
	size_t len = 0;

	for (;;) {
		ssize_t k = pread(fd, buf + len, size - 1 - len, (off_t)len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		len += (size_t)k;
		if (len == size - 1)
			return -EFBIG;
	}
	buf[len] = 0;
	return (ssize_t)len;
}
