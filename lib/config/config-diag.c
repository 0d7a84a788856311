/* config-diag.c - the diagnostics of a configuration load: the first error
 * and every warning, as "FILE:LINE: ..." lines (struct acct_config_diag). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/strv.h"
#include "config-internal.h"

int config_diag_error(struct acct_config_diag *diag, int err, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int r;

	if (!diag)
		return err;
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	free(diag->error);
	diag->error = s;
	return err;
}

int config_diag_warn(struct acct_config_diag *diag, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int r;

	if (!diag)
		return 0;
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	r = strv_push(&diag->warnings, &diag->nr_warnings, s);
	if (r < 0)
		free(s);
	return r;
}

void acct_config_diag_clear(struct acct_config_diag *diag)
{
	if (!diag)
		return;
	free(diag->error);
	diag->error = NULL;
	diag->warnings = strv_free(diag->warnings);
	diag->nr_warnings = 0;
}
