/* write-file.h - replace a file's content atomically, safely in a directory
 * that others can write to.
 *
 * The content goes to an unnamed file in the target's directory (O_TMPFILE),
 * given a random temporary name only once it is complete, then renamed over
 * the target. Where the file system has no O_TMPFILE the temporary file is
 * created under a random name with O_CREAT|O_EXCL|O_NOFOLLOW. Either way no
 * name that someone else may have planted (a symlink, a FIFO, a file of
 * theirs) is ever opened or written through; rename() replaces the target's
 * directory entry, so a symlink at the target itself is replaced, not
 * followed. Readers see the old content or the new, never a part. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Replace `path` (relative to `dirfd`, AT_FDCWD: the working directory) with
 * data[0..len), a new file of mode `mode` (umask applies) owned by the
 * caller. Does not fsync: a crash may lose the last replacement, as it may
 * for any file write-back has not reached. Returns 0, or a negative errno of
 * the step that failed (the target is then untouched and no temporary file is
 * left behind). */
int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode);

/* write_file_atomic_at(), durable: the new content is fsync'd before it is
 * named, and the directory after the rename, so that once it returns 0 a
 * crash or power loss leaves the new content (never the old, never a part).
 * Returns 0 or a negative errno; -EIO (or another fsync error) after the
 * rename means the rename may or may not survive a crash. */
int write_file_durable_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode);

/* Remove the temporary files that write_file_atomic_at() of `path` left when
 * the process was killed between naming the finished file and renaming it
 * over the target (a window of two system calls; nothing else leaves one):
 * regular files ".BASE." followed by 16 hex digits beside `path`, owned by the
 * caller's effective uid. Never follows a symlink; removes nothing else.
 * Returns the number removed, or a negative errno if the directory cannot be
 * read. For a process's start, before it writes `path` again. */
int write_file_remove_stale_at(int dirfd, const char *path);
