/* cgroup-glob.c - the syntax of globs on cgroup paths (see cgroup-glob.h). */
#include "cgroup-glob.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the bracket expression opening at s[0] == '[' is closed, as
 * fnmatch(3) reads one: a '!' or '^' and then a ']' right after the '[' are
 * members, not the end. */
static bool bracket_closed(const char *s)
{
	s++;
	if (*s == '!' || *s == '^')
		s++;
	if (*s == ']')
		s++;
	return strchr(s, ']') != NULL;
}

/* Why `glob` is refused, or NULL. */
static const char *refusal(const char *glob)
{
	size_t n = strlen(glob);

	if (n == 0)
		return "an empty glob";
	if (n > CGROUP_GLOB_MAX)
		return "longer than 4096 bytes";
	/* every byte, an escaped one too: a control character is never part
	 * of a cgroup path, escaped or not (the fuzz target found '\\' before
	 * 0x1f let through) */
	for (const char *p = glob; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "a control character";
	for (const char *p = glob; *p; p++) {
		if (*p == '\\' && p[1])
			p++; /* an escaped character is literal */
		else if (*p == '[' && !bracket_closed(p))
			return "a '[' without its ']'";
	}
	/* Components, between slashes (a leading slash starts none). */
	for (const char *c = glob + (glob[0] == '/'); c <= glob + n;) {
		size_t len = strcspn(c, "/");
		bool last = c[len] == '\0';
		if (len == 0 && !(last && c == glob + 1 && n == 1))
			return "an empty path component";
		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return "a '.' or '..' path component";
		c += len + 1;
	}
	return NULL;
}

int cgroup_glob_normalize(const char *glob, char **ret, const char **ret_reason)
{
	const char *why = refusal(glob);
	char *s = NULL;

	if (why) {
		if (ret_reason)
			*ret_reason = why;
		return -EINVAL;
	}
	if (glob[0] == '/' || glob[0] == '*')
		s = strdup(glob);
	else if (asprintf(&s, "/%s", glob) < 0)
		s = NULL;
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}
