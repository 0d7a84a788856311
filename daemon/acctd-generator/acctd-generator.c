/* acctd-generator.c - a systemd generator: widens acctd.service's IP
 * confinement when /metrics listens beyond loopback.
 *
 * acctd.service lets IP traffic through to and from localhost only
 * (IPAddressDeny=any, IPAddressAllow=localhost). At boot and at every
 * "systemctl daemon-reload" systemd runs this program, which reads the same
 * configuration the daemon reads (/etc/acctd/acctd.conf, then
 * /etc/acctd/acctd.conf.d/ *.conf, with the daemon's own parser) and, when
 * [metrics] listen is not a loopback address, writes
 * NORMAL_DIR/acctd.service.d/50-metrics-listen.conf (ip-confine.h says what it
 * holds). Otherwise, or when the configuration is bad (acctd refuses to start
 * on it anyway), it writes nothing.
 *
 * What a generator must be: fast (one configuration read, no cgroup scan, no
 * name resolution), and harmless to the boot: it never fails on the
 * configuration, only on being unable to write its own directory. It logs to
 * the kernel log (/dev/kmsg, where the journal picks it up), or to stderr
 * where that cannot be opened. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/util.h"
#include "basic/write-file.h"
#include "config/config.h"
#include "config/ip-confine.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free);

/* One line at syslog priority `prio` ("<4>acctd-generator: ..." on /dev/kmsg). */
static void say(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int prio, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int fd;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		(void)dprintf(fd, "<%d>acctd-generator: %s\n", prio, msg);
		(void)close(fd);
	} else
		fprintf(stderr, "acctd-generator: %s\n", msg);
}

int main(int argc, char **argv)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	struct acct_config_diag diag = { 0 };
	_cleanup_free_ char *dropin = NULL;
	_cleanup_close_ int dirfd = -EBADF;
	int r;

	/* systemd passes NORMAL_DIR EARLY_DIR LATE_DIR (or NORMAL_DIR alone). */
	if (argc != 2 && argc != 4) {
		say(3, "expects systemd's generator directories as arguments, got %d", argc - 1);
		return 1;
	}
	r = acct_config_load(NULL, NULL, &c, &diag);
	if (r < 0) {
		say(4, "bad configuration, acctd.service keeps its localhost-only IP confinement: %s",
		    diag.error ? diag.error : strerror(-r));
		acct_config_diag_clear(&diag);
		return 0;
	}
	acct_config_diag_clear(&diag); /* unknown keys: the daemon reports them */
	r = acct_ip_confine_dropin(c, &dropin);
	if (r < 0) {
		say(4, "cannot tell where /metrics listens, acctd.service keeps its localhost-only IP confinement: %s",
		    strerror(-r));
		return 0;
	}
	if (!dropin)
		return 0;

	dirfd = open(argv[1], O_DIRECTORY | O_CLOEXEC | O_PATH);
	if (dirfd < 0) {
		say(3, "cannot open %s: %s", argv[1], strerror(errno));
		return 1;
	}
	if (mkdirat(dirfd, ACCT_IP_CONFINE_DROPIN_DIR, 0755) < 0 && errno != EEXIST) {
		say(3, "cannot create %s/" ACCT_IP_CONFINE_DROPIN_DIR ": %s", argv[1], strerror(errno));
		return 1;
	}
	r = write_file_atomic_at(dirfd, ACCT_IP_CONFINE_DROPIN_DIR "/" ACCT_IP_CONFINE_DROPIN_NAME, dropin,
				 strlen(dropin), 0644);
	if (r < 0) {
		say(3, "cannot write %s/" ACCT_IP_CONFINE_DROPIN_DIR "/" ACCT_IP_CONFINE_DROPIN_NAME ": %s",
		    argv[1], strerror(-r));
		return 1;
	}
	return 0;
}
