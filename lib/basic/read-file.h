/* read-file.h - a whole (small) file into a NUL-terminated string.
 *
 * For kernel files whose size stat() does not tell (cgroupfs, procfs), read
 * until end of file into a buffer that grows as needed. */
#pragma once

#include <sys/types.h>

/* Read the file `path`, relative to `dirfd` (AT_FDCWD: the working directory),
 * to its end. Returns a malloc'ed, NUL-terminated copy (free() it), or NULL
 * with errno set (the open's or read's error, ENOMEM). */
char *read_file_at(int dirfd, const char *path);

/* Read an open file from offset 0 to its end into buf (size bytes, at least
 * 2) and NUL-terminate it; pread(), so a cached descriptor reads its file
 * afresh, and EINTR is retried. Returns the length, -EFBIG when the content
 * fills buf (it may be longer: nothing of it is to be trusted), or the read's
 * negative errno (cgroupfs says ENODEV for a cgroup removed since the open). */
ssize_t read_fd_whole(int fd, char *buf, size_t size);
