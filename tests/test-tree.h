/* test-tree.h - temporary directory trees for the cgroup tests
 * (test-cgroup-layout.c, test-cgroup-discovery.c): create files, directories
 * and symlinks below a base, remove trees, make a fresh temporary directory.
 * Every function fails the running cmocka test on an error instead of
 * returning it. Not part of any library: linked into the tests that use it. */
#pragma once

/* "a/b", newly allocated. */
char *xjoin(const char *a, const char *b);
void xmkdir(const char *base, const char *rel);
void xwrite(const char *base, const char *rel, const char *text);
void xsymlink(const char *target, const char *base, const char *rel);
/* Remove `p` and everything below it; no error if it does not exist. */
void rm_rf(const char *p);
void xrm_rf(const char *base, const char *rel);
/* The inode number of `rel`'s directory entry. */
unsigned long long xinode(const char *base, const char *rel);
/* `rel` (a directory) made again, as a cgroup removed and recreated under the
 * same path: the old one moved aside to "REL.old", not removed, so that the
 * new one cannot get its inode number back. Returns the new one's inode;
 * xrm_rf() "REL.old" when done. */
unsigned long long xremake(const char *base, const char *rel);
/* A new empty directory PREFIX-XXXXXX on tmpfs where there is one (tens of
 * thousands of mkdir take a fraction of a second there, seconds on a disk),
 * else in $TMPDIR or /tmp; free() the path, rm_rf() the tree. */
char *make_tmpdir(const char *prefix);
/* A hybrid tree: unified/ (v2), memory/, cpu,cpuacct/ with cpu and cpuacct
 * symlinks, as systemd mounts them on hybrid hosts. */
void make_hybrid(const char *base);
