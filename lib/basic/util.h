/* util.h - small helpers shared by every module of libacct: ownership
 * (cleanup attributes for memory, descriptors, FILE and DIR streams), branch
 * hints and arithmetic that must not overflow. Header only; nothing here
 * allocates or logs. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define ACCT_CACHELINE 64
#define _cacheline_aligned_ __attribute__((aligned(ACCT_CACHELINE)))

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Move ownership out of a cleanup-managed variable. */
#define TAKE_PTR(p)                          \
	({                                   \
		__typeof__(p) _taken_ = (p); \
		(p) = NULL;                  \
		_taken_;                     \
	})
#define TAKE_FD(fd)                   \
	({                            \
		int _taken_fd_ = (fd); \
		(fd) = -EBADF;        \
		_taken_fd_;           \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0)
		(void)close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Close a stdio stream, if any; a close error is ignored (read-only use). */
static inline void fclosep(FILE **f)
{
	if (*f)
		(void)fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Close a directory stream (and the descriptor it owns), if any. */
static inline void closedirp(DIR **d)
{
	if (*d)
		(void)closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Declare a cleanup helper `namep` for a type whose destructor returns NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
	static inline void func##p(type *p)     \
	{                                       \
		if (*p)                         \
			*p = func(*p);          \
	}

/* |x| as an unsigned value; defined for INT64_MIN. */
static inline uint64_t abs_u64(int64_t x)
{
	return x < 0 ? -(uint64_t)x : (uint64_t)x;
}
