/* path.c - path strings (see path.h). */
#include "path.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

unsigned path_depth(const char *path)
{
	unsigned n = 0;

	if (strcmp(path, "/") == 0)
		return 0;
	for (const char *p = path; *p; p++)
		n += *p == '/';
	return n;
}

char *path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	bool slash = la == 0 || a[la - 1] != '/';
	char *p = malloc(la + slash + lb + 1);

	if (!p)
		return NULL;
	memcpy(p, a, la);
	if (slash)
		p[la] = '/';
	memcpy(p + la + slash, b, lb + 1);
	return p;
}

const char *path_normalize_cgroup(const char *in, size_t len, char out[static CGROUP_PATH_MAX + 1])
{
	size_t o = 0;

	if (len == 0)
		return "empty path";
	if (len > CGROUP_PATH_MAX)
		return "longer than 4096 bytes";
	if (memchr(in, 0, len))
		return "contains a NUL byte";
	/* Every other byte may be in a cgroup name (TAB, ESC, ...): every name
	 * List shows must be one that Get takes. */
	if (in[0] != '/')
		return "not absolute (must start with /)";
	for (size_t i = 0; i < len;) {
		while (i < len && in[i] == '/')
			i++;
		size_t b = i;
		while (i < len && in[i] != '/')
			i++;
		size_t n = i - b;
		if (n == 0)
			break;
		if ((n == 1 && in[b] == '.') || (n == 2 && in[b] == '.' && in[b + 1] == '.'))
			return "contains a . or .. component";
		if (n > CGROUP_NAME_MAX)
			return "has a component longer than 255 bytes";
		out[o++] = '/';
		memcpy(out + o, in + b, n);
		o += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = 0;
	return NULL;
}

bool path_under(const char *path, const char *prefix, size_t plen)
{
	if (plen == 1)
		return true; /* "/" */
	return strncmp(path, prefix, plen) == 0 && (path[plen] == 0 || path[plen] == '/');
}
