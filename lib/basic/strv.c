/* strv.c - NULL-terminated vectors of owned strings (see strv.h). */
#include "strv.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

char **strv_free(char **v)
{
	if (!v)
		return NULL;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
	return NULL;
}

char **strv_new_empty(void)
{
	return calloc(1, sizeof(char *));
}

size_t strv_length(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

bool strv_equal(char *const *a, char *const *b)
{
	size_t n = strv_length(a);
	if (n != strv_length(b))
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

int strv_push(char ***v, size_t *n, char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));

	if (!nv)
		return -ENOMEM;
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

int strv_push_dup(char ***v, size_t *n, const char *s)
{
	_cleanup_free_ char *d = strdup(s);
	int r;

	if (!d)
		return -ENOMEM;
	r = strv_push(v, n, d);
	if (r < 0)
		return r;
	TAKE_PTR(d);
	return 0;
}

int strv_split(const char *s, char ***ret)
{
	return strv_split_set(s, " \t", ret);
}

int strv_split_set(const char *s, const char *separators, char ***ret)
{
	_cleanup_strv_free_ char **v = strv_new_empty();
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (;;) {
		size_t len;
		char *w;
		int r;

		s += strspn(s, separators);
		if (!*s)
			break;
		len = strcspn(s, separators);
		w = strndup(s, len);
		if (!w)
			return -ENOMEM;
		r = strv_push(&v, &n, w);
		if (r < 0) {
			free(w);
			return r;
		}
		s += len;
	}
	*ret = TAKE_PTR(v);
	return 0;
}

int strv_copy(char *const *v, char ***ret)
{
	size_t n = strv_length(v);

	if (n == 0) {
		*ret = NULL;
		return 0;
	}
	_cleanup_strv_free_ char **c = calloc(n + 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i])))
			return -ENOMEM;
	*ret = TAKE_PTR(c);
	return 0;
}

bool strv_fnmatch_any(char *const *patterns, const char *s)
{
	for (; patterns && *patterns; patterns++)
		if (fnmatch(*patterns, s, 0) == 0)
			return true;
	return false;
}

bool strv_fnmatch_mark(char *const *patterns, const char *s, uint64_t *hits)
{
	bool any = false;
	for (size_t i = 0; patterns && patterns[i]; i++)
		if (fnmatch(patterns[i], s, 0) == 0) {
			any = true;
			if (i < 64)
				*hits |= UINT64_C(1) << i;
		}
	return any;
}
