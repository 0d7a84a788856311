/* read-file.h - a whole (small) file into a NUL-terminated string.
 *
 * For kernel files whose size stat() does not tell (cgroupfs, procfs), read
 * until end of file into a buffer that grows as needed. */
#pragma once

/* Read the file `path`, relative to `dirfd` (AT_FDCWD: the working directory),
 * to its end. Returns a malloc'ed, NUL-terminated copy (free() it), or NULL
 * with errno set (the open's or read's error, ENOMEM). */
char *read_file_at(int dirfd, const char *path);
