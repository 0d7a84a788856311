/* manager-notify.c - the systemd protocol of the manager (sd_notify(3)):
 * READY, RELOADING, STOPPING, WATCHDOG and the STATUS= line, which Status()
 * shows too. Every other file of the manager calls it; it calls none. */
#include "manager-internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "basic/name-escape.h"
#include "basic/time-util.h"
#include "basic/util.h"

void manager_notify(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	(void)sd_notify(0, buf);
}

void manager_status_line(const struct manager *m, char *buf, size_t size)
{
	uint64_t live = 0, dead = 0;
	uint64_t viol = 0;
	bool failed = m->reload_outcome == MANAGER_RELOAD_FAILED;

	acct_ledger_counts(m->ledger, &live, &dead);
	for (int i = 0; i < _ACCT_INV_MAX; i++)
		viol += m->reconcile.violations[i];
	/* The reason may quote a file's bytes: as text (systemd ignores a
	 * STATUS= that is not UTF-8), and the line cut between characters. */
	_cleanup_free_ char *why = failed ? name_escape(m->reload_error, NAME_ESCAPE_UTF8) : NULL;
	char line[4 * sizeof(m->reload_error) + 256];
	snprintf(line, sizeof(line), "%s%" PRIu64 " cgroups, %" PRIu64 " removed kept as tombstones, last pass %" PRIu64
		 " ms, %" PRIu64
		 " invariant violations%s%s",
		 m->ready ? "Tracking " : "Starting: ", live, dead, m->last_fast.wall_us / 1000, viol,
		 failed ? "; reload failed: " : "", failed ? why ?: "(out of memory)" : "");
	size_t n = utf8_boundary(line, strlen(line), size - 1);
	memcpy(buf, line, n);
	buf[n] = '\0';
}

#define STATUS_PERIOD_US 5000000u

/* At most every few seconds unless forced: systemd needs no more, and each
 * is a datagram. */
void manager_update_status(struct manager *m, bool force)
{
	char line[768];
	uint64_t now = acct_now_us();

	if (!force && now - m->status_sent_us < STATUS_PERIOD_US)
		return;
	manager_status_line(m, line, sizeof(line));
	manager_notify("STATUS=%s", line);
	m->status_sent_us = now;
}
