/* alloc-fail.c - allocation failure on demand (alloc-fail.h): the --wrap
 * functions. Not thread-safe by design: armed only around one call on the
 * test's thread; another thread allocating meanwhile would take a count. */
#include "alloc-fail.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_reallocarray(void *p, size_t n, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **ret, const char *fmt, va_list ap);
int __real___vasprintf_chk(char **ret, int flag, const char *fmt, va_list ap);
/* The wrappers the linker calls instead of the functions (--wrap=NAME). */
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_reallocarray(void *p, size_t n, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **ret, const char *fmt, va_list ap);
int __wrap_asprintf(char **ret, const char *fmt, ...);
/* With -D_FORTIFY_SOURCE=2 (Debian's package builds, debian/rules) glibc's
 * headers turn asprintf() and vasprintf() into these, which --wrap=asprintf
 * does not catch. */
int __wrap___vasprintf_chk(char **ret, int flag, const char *fmt, va_list ap);
int __wrap___asprintf_chk(char **ret, int flag, const char *fmt, ...);

static bool armed, hit;
static unsigned left;
static size_t last_malloc_size;

void alloc_fail_after(unsigned n)
{
	armed = true;
	hit = false;
	left = n;
}

void alloc_fail_off(void)
{
	armed = false;
}

bool alloc_fail_hit(void)
{
	return hit;
}

size_t alloc_last_malloc_size(void)
{
	return last_malloc_size;
}

/* Whether this allocation is to fail. */
static bool fail_now(void)
{
	if (!armed)
		return false;
	if (left > 0) {
		left--;
		return false;
	}
	hit = true;
	armed = false;
	errno = ENOMEM;
	return true;
}

void *__wrap_malloc(size_t size)
{
	last_malloc_size = size;
	return fail_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return fail_now() ? NULL : __real_realloc(p, size);
}

void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
	return fail_now() ? NULL : __real_reallocarray(p, n, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	return fail_now() ? NULL : __real_aligned_alloc(align, size);
}

char *__wrap_strdup(const char *s)
{
	return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return fail_now() ? NULL : __real_strndup(s, n);
}

int __wrap_vasprintf(char **ret, const char *fmt, va_list ap)
{
	return fail_now() ? -1 : __real_vasprintf(ret, fmt, ap);
}

int __wrap_asprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = __wrap_vasprintf(ret, fmt, ap);
	va_end(ap);
	return r;
}

int __wrap___vasprintf_chk(char **ret, int flag, const char *fmt, va_list ap)
{
	return fail_now() ? -1 : __real___vasprintf_chk(ret, flag, fmt, ap);
}

int __wrap___asprintf_chk(char **ret, int flag, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = __wrap___vasprintf_chk(ret, flag, fmt, ap);
	va_end(ap);
	return r;
}
