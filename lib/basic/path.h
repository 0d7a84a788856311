/* path.h - cgroup-style relative paths and file-system path strings.
 *
 * A relative cgroup path is "/" for the root or "/a/b" below it (no trailing
 * slash). Pure string functions: no I/O, no logging. */
#pragma once

/* Depth of a relative path: 0 for "/", 1 for "/a", 2 for "/a/b"; it counts
 * the slashes, so `path` must be in that form. */
unsigned path_depth(const char *path);

/* "a" + "/" + "b", without doubling the slash when `a` ends in one (so "/"
 * joins to "/b"; an empty `a` also gives "/b"). Returns a new string that the
 * caller frees, or NULL on ENOMEM. */
char *path_join(const char *a, const char *b);
