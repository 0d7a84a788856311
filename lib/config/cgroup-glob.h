/* cgroup-glob.h - one syntax for globs on cgroup paths, wherever they come
 * from: the include and exclude keys of acctd.conf ([cgroups], [metrics]) and
 * the cgroup= parameter of a /metrics scrape. A glob is an fnmatch(3)
 * pattern (no flags: '*' matches across '/') on paths written "/a/b" ("/" for
 * the root). Pure string work, no I/O. */
#pragma once

#include <stddef.h>

/* The longest glob accepted, in bytes (a path of the kernel's PATH_MAX). */
#define CGROUP_GLOB_MAX 4096

/* Check `glob` and write its normal form to *ret (malloc'd): a glob written
 * relative to the root ("system.slice/x") gets its leading "/"; one that
 * starts with '*' or '/' stays as written. Refused, with *ret_reason (static
 * text) saying why: an empty glob, one longer than CGROUP_GLOB_MAX, a control
 * character, an empty path component ("//"), a "." or ".." component (no
 * cgroup path has one, so such a glob could only be a mistake), and a '['
 * without its ']' (fnmatch would take it literally). Returns 0, -EINVAL
 * (refused: *ret untouched) or -ENOMEM. */
int cgroup_glob_normalize(const char *glob, char **ret, const char **ret_reason);
