/* fault-preload.c - faults on demand in the real daemon, for the integration
 * tests of what it does when the kernel or the allocator says no
 * (tests/integration/test_api_dispatch.py). LD_PRELOADed into acctd; inert
 * unless ACCTD_FAULT_DIR names a directory, and then driven by files in it:
 *
 *   fail-alloc       a number N. At the next varlink message the daemon
 *                    parses, the file is consumed and, on that thread only,
 *                    N more allocations succeed and the one after them fails
 *                    (NULL, errno ENOMEM); one failure, then they succeed
 *                    again. The count ends when the message is freed (the
 *                    call has been dispatched and answered or refused).
 *   fail-alloc.done  written then: "failed" when the allocation failed,
 *                    "none" when the call made fewer than N + 1.
 *   no-peergroups    while it exists, getsockopt(SOL_SOCKET, SO_PEERGROUPS)
 *                    fails with ENOPROTOOPT, as before Linux 4.13.
 *   plant-symlink    a path T. Right after bind() names a Unix socket, the
 *                    name is replaced by a symlink to T: what a user who can
 *                    write the socket's directory could do before acctd's
 *                    chmod() (test_api_paths.py), made certain instead of a
 *                    race won 4 times in 31.
 *
 * The kernel cannot be made to fail one allocation of one call, nor to lack
 * SO_PEERGROUPS, nor a race be won every time; everything else in those tests is real. Counted: malloc,
 * calloc, realloc, reallocarray and the aligned allocations, from the daemon,
 * json-c, libevent and glibc alike (glibc's own functions, strdup() and
 * vasprintf() included, allocate through the interposed malloc). Only the
 * thread that parsed the message counts, so the sampler's threads cannot
 * take the failure. Not counted: the allocations of json-c's serializer
 * (json_object_to_json_string_length()), which does not report every failure
 * of its buffer and can return a cut string as if it were whole (json-c
 * 0.16): failing them would test json-c, not the daemon. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/* glibc's allocator under its public names: no dlsym() (which allocates)
 * on the way. */
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *memalign(size_t align, size_t size); /* malloc.h's, without its other declarations */

static char path_fail[PATH_MAX], path_done[PATH_MAX], path_tmp[PATH_MAX], path_nopg[PATH_MAX], path_plant[PATH_MAX];
static bool enabled;

/* The armed count: set and read on `thread` only. `armed` and `thread` are
 * also read by every other thread's allocations, hence atomic. */
static bool armed;
static pthread_t thread;
static unsigned left;
static bool hit;
static const struct json_object *message; /* atomic: compared by every thread's json_object_put() */
static bool serializing; /* on `thread`, inside json-c's serializer */

__attribute__((constructor)) static void fault_init(void)
{
	const char *dir = getenv("ACCTD_FAULT_DIR");

	if (!dir || !*dir)
		return;
	snprintf(path_fail, sizeof(path_fail), "%s/fail-alloc", dir);
	snprintf(path_done, sizeof(path_done), "%s/fail-alloc.done", dir);
	snprintf(path_tmp, sizeof(path_tmp), "%s/fail-alloc.tmp", dir);
	snprintf(path_nopg, sizeof(path_nopg), "%s/no-peergroups", dir);
	snprintf(path_plant, sizeof(path_plant), "%s/plant-symlink", dir);
	enabled = true;
}

static bool fail_now(void)
{
	if (!__atomic_load_n(&armed, __ATOMIC_ACQUIRE) ||
	    !pthread_equal(pthread_self(), __atomic_load_n(&thread, __ATOMIC_RELAXED)) || hit || serializing)
		return false;
	if (left > 0) {
		left--;
		return false;
	}
	hit = true;
	errno = ENOMEM;
	return true;
}

void *malloc(size_t size)
{
	return fail_now() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return fail_now() ? NULL : __libc_realloc(p, size);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return fail_now() ? NULL : __libc_realloc(p, bytes);
}

void *aligned_alloc(size_t align, size_t size)
{
	return fail_now() ? NULL : __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size)
{
	return fail_now() ? NULL : __libc_memalign(align, size);
}

int posix_memalign(void **ret, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	if (fail_now())
		return ENOMEM;
	void *p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*ret = p;
	return 0;
}

/* The number in `fail-alloc`, consumed; -1 when there is none. */
static long take_request(void)
{
	char buf[32];
	int fd = open(path_fail, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	unlink(path_fail);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

struct json_object *json_tokener_parse_ex(struct json_tokener *tok, const char *str, int len)
{
	static struct json_object *(*real)(struct json_tokener *, const char *, int);
	if (!real)
		real = (struct json_object * (*)(struct json_tokener *, const char *, int))
			dlsym(RTLD_NEXT, "json_tokener_parse_ex");
	struct json_object *o = real(tok, str, len);
	if (enabled && o && !__atomic_load_n(&message, __ATOMIC_RELAXED)) {
		long n = take_request();
		if (n >= 0) {
			__atomic_store_n(&thread, pthread_self(), __ATOMIC_RELAXED);
			left = (unsigned)n;
			hit = false;
			__atomic_store_n(&message, o, __ATOMIC_RELAXED);
			__atomic_store_n(&armed, true, __ATOMIC_RELEASE);
		}
	}
	return o;
}

int json_object_put(struct json_object *o)
{
	static int (*real)(struct json_object *);
	if (!real)
		real = (int (*)(struct json_object *))dlsym(RTLD_NEXT, "json_object_put");
	int r = real(o);
	if (r == 1 && o && o == __atomic_load_n(&message, __ATOMIC_RELAXED) &&
	    pthread_equal(pthread_self(), __atomic_load_n(&thread, __ATOMIC_RELAXED))) {
		__atomic_store_n(&armed, false, __ATOMIC_RELAXED);
		__atomic_store_n(&message, NULL, __ATOMIC_RELAXED);
		int fd = open(path_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			const char *s = hit ? "failed\n" : "none\n";
			(void)!write(fd, s, strlen(s));
			close(fd);
			rename(path_tmp, path_done);
		}
	}
	return r;
}

const char *json_object_to_json_string_length(struct json_object *o, int flags, size_t *len)
{
	static const char *(*real)(struct json_object *, int, size_t *);
	if (!real)
		real = (const char *(*)(struct json_object *, int, size_t *))dlsym(RTLD_NEXT,
										   "json_object_to_json_string_length");
	bool mine = pthread_equal(pthread_self(), __atomic_load_n(&thread, __ATOMIC_RELAXED));
	if (mine)
		serializing = true;
	const char *s = real(o, flags, len);
	if (mine)
		serializing = false;
	return s;
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	static int (*real)(int, int, int, void *, socklen_t *);
	if (!real)
		real = (int (*)(int, int, int, void *, socklen_t *))dlsym(RTLD_NEXT, "getsockopt");
	if (enabled && level == SOL_SOCKET && name == SO_PEERGROUPS && access(path_nopg, F_OK) == 0) {
		errno = ENOPROTOOPT;
		return -1;
	}
	return real(fd, level, name, val, len);
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);
	if (!real)
		real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
	int r = real(fd, sa, len);
	if (r < 0 || !enabled || sa->sa_family != AF_UNIX)
		return r;
	char target[PATH_MAX] = "", name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1] = "";
	int t = open(path_plant, O_RDONLY | O_CLOEXEC);
	if (t < 0)
		return r;
	ssize_t n = read(t, target, sizeof(target) - 1);
	close(t);
	if (n <= 0)
		return r;
	target[n] = '\0';
	memcpy(name, ((const struct sockaddr_un *)sa)->sun_path, sizeof(name) - 1);
	if (name[0] && unlink(name) == 0 && symlink(target, name) < 0)
		abort(); /* the test would pass for the wrong reason */
	return r;
}
