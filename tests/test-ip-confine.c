/* test-ip-confine.c - unit tests of lib/config/ip-confine.h: which listen
 * addresses are local, and the generator's decision from configuration text
 * (read by the daemon's own loader, drop-ins included) to acctd.service's
 * drop-in or none; and when acctd warns that its unit would drop peers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "ip-confine.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free);

struct tmp {
	char dir[64];
	char main[128];
	char dropins[128];
	char dropin[160];
};

static int setup_tmp(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	snprintf(t->dir, sizeof(t->dir), "/tmp/test-ip-confine.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->main, sizeof(t->main), "%s/acctd.conf", t->dir);
	snprintf(t->dropins, sizeof(t->dropins), "%s/acctd.conf.d", t->dir);
	snprintf(t->dropin, sizeof(t->dropin), "%s/50-local.conf", t->dropins);
	assert_int_equal(mkdir(t->dropins, 0755), 0);
	*state = t;
	return 0;
}

static int teardown_tmp(void **state)
{
	struct tmp *t = *state;

	(void)unlink(t->dropin);
	(void)unlink(t->main);
	(void)rmdir(t->dropins);
	(void)rmdir(t->dir);
	free(t);
	return 0;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* The drop-in for main file `main_text` and drop-in `dropin_text` (NULL: no
 * such file), or NULL when none is due. */
static char *decide(struct tmp *t, const char *main_text, const char *dropin_text)
{
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	struct acct_config_diag diag = { 0 };
	char *dropin = (char *)"poison";

	(void)unlink(t->main);
	(void)unlink(t->dropin);
	if (main_text)
		write_text(t->main, main_text);
	if (dropin_text)
		write_text(t->dropin, dropin_text);
	assert_int_equal(acct_config_load(main_text ? t->main : "", t->dropins, &c, &diag), 0);
	acct_config_diag_clear(&diag);
	assert_int_equal(acct_ip_confine_dropin(c, &dropin), 0);
	return dropin;
}

static void assert_widens(char *dropin, const char *listen)
{
	char comment[128];

	assert_non_null(dropin);
	snprintf(comment, sizeof(comment), "[metrics] listen = %s is not a loopback", listen);
	assert_non_null(strstr(dropin, comment));
	assert_non_null(strstr(dropin, "\n[Service]\nIPAddressAllow=any\nEnvironment=ACCTD_IP_ALLOW=any\n"));
	/* Nothing else is set: in particular IPAddressDeny= stays the unit's. */
	assert_null(strstr(dropin, "IPAddressDeny"));
	free(dropin);
}

static void test_local(void **state)
{
	static const char *const local[] = {
		"none", "127.0.0.1:9847", "127.255.0.9:1", "127.1:80", "0x7f000001:80", "localhost:9847",
		"LocalHost.:9847", "[::1]:9847", "[0:0:0:0:0:0:0:1]:1", "[::ffff:127.0.0.1]:9847",
	};
	static const char *const remote[] = {
		"0.0.0.0:9847", "10.1.2.3:9847", "128.0.0.1:1", "126.255.255.255:1", "[::]:9847",
		"[fe80::1]:9847", "[::ffff:10.0.0.1]:1", "[::127.0.0.1]:1", "myhost:9847",
		"localhost.example:1", "mylocalhost:1",
	};
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(local); i++) {
		print_message("local: %s\n", local[i]);
		assert_int_equal(acct_listen_is_local(local[i]), 1);
	}
	for (size_t i = 0; i < ELEMENTSOF(remote); i++) {
		print_message("remote: %s\n", remote[i]);
		assert_int_equal(acct_listen_is_local(remote[i]), 0);
	}
	assert_int_equal(acct_listen_is_local("127.0.0.1"), -EINVAL);
	assert_int_equal(acct_listen_is_local("[::1:9847"), -EINVAL);
	assert_int_equal(acct_listen_is_local(NULL), -EINVAL);
}

static void test_decision(void **state)
{
	struct tmp *t = *state;

	/* No file at all, the built-in default (127.0.0.1:9847): nothing. */
	assert_null(decide(t, NULL, NULL));
	/* Loopback set explicitly, and /metrics disabled: nothing. */
	assert_null(decide(t, "[metrics]\nlisten = [::1]:9000\n", NULL));
	assert_null(decide(t, "[metrics]\nlisten = none\n", NULL));
	/* Beyond loopback: the drop-in. */
	assert_widens(decide(t, "[metrics]\nlisten = 0.0.0.0:9847\n", NULL), "0.0.0.0:9847");
	assert_widens(decide(t, "# a comment\n[sampling]\nworkers = 2\n[metrics]\nlisten = [::]:9100\n", NULL),
		      "[::]:9100");
	assert_widens(decide(t, "[metrics]\nlisten = host.example:9847\n", NULL), "host.example:9847");
	/* Drop-ins apply after the main file, as in the daemon, both ways. */
	assert_null(decide(t, "[metrics]\nlisten = 0.0.0.0:9847\n", "[metrics]\nlisten = 127.0.0.1:9847\n"));
	assert_widens(decide(t, NULL, "[metrics]\nlisten = 192.0.2.7:9847\n"), "192.0.2.7:9847");
	/* Other keys of [metrics] change nothing. */
	assert_null(decide(t, "[metrics]\nmax_depth = 3\n", NULL));
}

static void test_bad_config(void **state)
{
	struct tmp *t = *state;
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	struct acct_config_diag diag = { 0 };

	/* The generator writes nothing for a file the daemon refuses: the load
	 * fails, which is the generator's cue. */
	write_text(t->main, "[metrics]\nlisten = 0.0.0.0\n");
	assert_int_equal(acct_config_load(t->main, "", &c, &diag), -EINVAL);
	assert_non_null(diag.error);
	acct_config_diag_clear(&diag);
}

static void test_lets_through(void **state)
{
	(void)state;
	/* Not under the unit (or an older one): nothing known, no warning. */
	assert_true(acct_ip_confine_lets_through(NULL, "0.0.0.0:9847"));
	/* The unit's localhost confinement: fine for local addresses only. */
	assert_true(acct_ip_confine_lets_through("localhost", "127.0.0.1:9847"));
	assert_true(acct_ip_confine_lets_through("localhost", "none"));
	assert_false(acct_ip_confine_lets_through("localhost", "0.0.0.0:9847"));
	assert_false(acct_ip_confine_lets_through("localhost", "[fe80::1]:9847"));
	/* Widened by the generator. */
	assert_true(acct_ip_confine_lets_through("any", "0.0.0.0:9847"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local),
		cmocka_unit_test_setup_teardown(test_decision, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_bad_config, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_lets_through),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
