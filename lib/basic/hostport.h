/* hostport.h - the network address forms acctd listens on: "HOST:PORT" and
 * "[IPV6]:PORT" (the metrics endpoint's `listen` key).
 *
 * HOST is a name or an IPv4 address: 1 to 253 characters of letters, digits,
 * '-' and '.'. IPV6 is anything inet_pton(AF_INET6) accepts. PORT is a plain
 * decimal 1..65535 without sign or leading zero. The one parser serves both
 * the configuration (which reports what is wrong) and the server (which needs
 * the parts). No I/O, no logging. */
#pragma once

#include <stdint.h>

/* Which part of an address is wrong. */
enum hostport_error {
	HOSTPORT_OK,
	HOSTPORT_BAD_FORM,    /* neither HOST:PORT nor [IPV6]:PORT */
	HOSTPORT_BAD_ADDRESS, /* the bracketed part is not an IPv6 address */
	HOSTPORT_BAD_HOST,    /* HOST has a character or length it may not have */
	HOSTPORT_BAD_PORT,    /* PORT is not 1..65535 */
};

/* Parse `s`. On success returns 0, and, for each that is not NULL, sets
 * *ret_host to a new string the caller frees (the host, or the IPv6 address
 * without brackets) and *ret_port to the port. Returns -EINVAL when `s` is
 * malformed, -ENOMEM when the host cannot be copied; the ret_ outputs are not
 * written on failure. *ret_error (if not NULL) is always written: HOSTPORT_OK
 * unless -EINVAL, then the first part found wrong, checked left to right. */
int hostport_parse(const char *s, char **ret_host, uint16_t *ret_port, enum hostport_error *ret_error);
