/* path.h - cgroup-style relative paths and file-system path strings, and the
 * API's confinement rules for cgroup paths from clients (normalising, and "at
 * or under a prefix"), kept here so that a unit test can hold them.
 *
 * A relative cgroup path is "/" for the root or "/a/b" below it (no trailing
 * slash). Pure string functions: no I/O, no logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The longest cgroup path (bytes, without the NUL) and path component that a
 * client may name (the API's limits; the kernel's are PATH_MAX and NAME_MAX). */
#define CGROUP_PATH_MAX 4096
#define CGROUP_NAME_MAX 255

/* Depth of a relative path: 0 for "/", 1 for "/a", 2 for "/a/b"; it counts
 * the slashes, so `path` must be in that form. */
unsigned path_depth(const char *path);

/* "a" + "/" + "b", without doubling the slash when `a` ends in one (so "/"
 * joins to "/b"; an empty `a` also gives "/b"). Returns a new string that the
 * caller frees, or NULL on ENOMEM. */
char *path_join(const char *a, const char *b);

/* Normalise a cgroup path of `len` bytes from a client (not NUL-terminated;
 * may contain anything) into `out`: absolute, single slashes, no trailing
 * slash ("/" for the root). Returns NULL, or why the path is refused (a static
 * string: empty, too long, a NUL byte, not absolute, a . or .. component, a
 * component longer than CGROUP_NAME_MAX); every other byte is accepted,
 * control characters included, as a cgroup name may hold them. The result is
 * only a string: nothing here touches the file system. */
const char *path_normalize_cgroup(const char *in, size_t len, char out[static CGROUP_PATH_MAX + 1]);

/* Does `path` lie at or under `prefix` (both normalised, plen =
 * strlen(prefix))? Whole components only: "/a" is a prefix of "/a" and
 * "/a/b" but not of "/ab"; "/" is a prefix of every path. */
bool path_under(const char *path, const char *prefix, size_t plen);
