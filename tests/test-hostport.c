/* test-hostport.c - unit tests of "HOST:PORT" and "[IPV6]:PORT"
 * (lib/basic/hostport.h): the parts of good addresses, and which part the
 * parser names for each kind of bad one, with the outputs left untouched. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hostport.h"
#include "util.h"

static void check_good(const char *s, const char *host, uint16_t port)
{
	_cleanup_free_ char *h = NULL;
	enum hostport_error e = HOSTPORT_BAD_FORM;
	uint16_t p = 0;

	assert_int_equal(hostport_parse(s, &h, &p, &e), 0);
	assert_int_equal(e, HOSTPORT_OK);
	assert_string_equal(h, host);
	assert_int_equal(p, port);
	/* Validation only. */
	assert_int_equal(hostport_parse(s, NULL, NULL, NULL), 0);
}

static void test_good(void **state)
{
	(void)state;
	check_good("127.0.0.1:9469", "127.0.0.1", 9469);
	check_good("localhost:1", "localhost", 1);
	check_good("my-host.example:65535", "my-host.example", 65535);
	check_good("[::1]:9469", "::1", 9469);
	check_good("[fe80::1:2]:80", "fe80::1:2", 80);
}

static void check_bad(const char *s, enum hostport_error want)
{
	char *h = (char *)1;
	uint16_t p = 7;
	enum hostport_error e = HOSTPORT_OK;

	assert_int_equal(hostport_parse(s, &h, &p, &e), -EINVAL);
	assert_int_equal(e, want);
	assert_ptr_equal(h, (char *)1);
	assert_int_equal(p, 7);
}

static void test_bad(void **state)
{
	(void)state;
	check_bad("localhost", HOSTPORT_BAD_FORM);
	check_bad("::1:80", HOSTPORT_BAD_FORM);
	check_bad("[::1]80", HOSTPORT_BAD_FORM);
	check_bad("[::1", HOSTPORT_BAD_FORM);
	check_bad("[]:80", HOSTPORT_BAD_ADDRESS);
	check_bad("[nope]:80", HOSTPORT_BAD_ADDRESS);
	check_bad(":80", HOSTPORT_BAD_HOST);
	check_bad("a_b:80", HOSTPORT_BAD_HOST);
	check_bad("host:", HOSTPORT_BAD_PORT);
	check_bad("host:0", HOSTPORT_BAD_PORT);
	check_bad("host:080", HOSTPORT_BAD_PORT);
	check_bad("host:65536", HOSTPORT_BAD_PORT);
	check_bad("host:-1", HOSTPORT_BAD_PORT);
	check_bad("host:+80", HOSTPORT_BAD_PORT);
	check_bad("[::1]:x", HOSTPORT_BAD_PORT);
	/* The error is optional. */
	assert_int_equal(hostport_parse("host:0", NULL, NULL, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
