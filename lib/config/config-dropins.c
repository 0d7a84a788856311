/* config-dropins.c - which files of /etc/acctd/acctd.conf.d (or the given
 * drop-in directory) are read, and in which order: the regular files named
 * *.conf, sorted by strcmp(), as systemd reads its drop-ins. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/strv.h"
#include "basic/util.h"
#include "config-internal.h"

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_dropin_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".conf") == 0;
}

int config_list_dropins(const char *dir, char ***ret, struct acct_config_diag *diag)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_(strv_freep) char **names = strv_new_empty();
	size_t n = 0;
	int r;

	if (!names)
		return -ENOMEM;
	d = opendir(dir);
	if (!d) {
		r = -errno;
		if (r == -ENOENT) {
			*ret = TAKE_PTR(names);
			return 0;
		}
		return config_diag_error(diag, r, "%s: %s", dir, strerror(-r));
	}
	for (;;) {
		struct dirent *de;
		struct stat sb;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				return config_diag_error(diag, -errno, "%s: %s", dir, strerror(errno));
			break;
		}
		if (!is_dropin_name(de->d_name))
			continue;
		/* Follow symlinks: one to /dev/null masks a drop-in, as in systemd. */
		if (fstatat(dirfd(d), de->d_name, &sb, 0) < 0) {
			r = -errno;
			if (r == -ENOENT)
				continue; /* dangling symlink, or removed meanwhile */
			/* A symlink that loops reads as nothing, like a dangling one;
			 * it is worth a warning, not the whole configuration. */
			if (r == -ELOOP) {
				r = config_diag_warn(diag, "%s/%s: %s, ignoring", dir, de->d_name, strerror(ELOOP));
				if (r < 0)
					return r;
				continue;
			}
			return config_diag_error(diag, r, "%s/%s: %s", dir, de->d_name, strerror(-r));
		}
		if (!S_ISREG(sb.st_mode))
			continue;
		r = strv_push_dup(&names, &n, de->d_name);
		if (r < 0)
			return r;
	}
	qsort(names, n, sizeof(char *), cmp_names);
	*ret = TAKE_PTR(names);
	return 0;
}
