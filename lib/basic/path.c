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
