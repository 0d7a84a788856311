/* hostport.c - "HOST:PORT" and "[IPV6]:PORT" (see hostport.h). */
#include "hostport.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

static bool valid_hostname(const char *h, size_t len)
{
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)h[i]) && h[i] != '-' && h[i] != '.')
			return false;
	return true;
}

static enum hostport_error split(const char *s, const char **ret_host, size_t *ret_len, uint16_t *ret_port)
{
	const char *host, *port;
	uint64_t p = 0;
	size_t len;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		char addr[INET6_ADDRSTRLEN];
		struct in6_addr a6;

		if (!close || close[1] != ':')
			return HOSTPORT_BAD_FORM;
		host = s + 1;
		len = (size_t)(close - host);
		if (len == 0 || len >= sizeof(addr))
			return HOSTPORT_BAD_ADDRESS;
		memcpy(addr, host, len);
		addr[len] = '\0';
		if (inet_pton(AF_INET6, addr, &a6) != 1)
			return HOSTPORT_BAD_ADDRESS;
		port = close + 2;
	} else {
		const char *colon = strrchr(s, ':');

		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return HOSTPORT_BAD_FORM;
		host = s;
		len = (size_t)(colon - s);
		if (!valid_hostname(host, len))
			return HOSTPORT_BAD_HOST;
		port = colon + 1;
	}
	if (acct_parse_uint64(port, &p) < 0 || p < 1 || p > 65535 || port[0] == '0')
		return HOSTPORT_BAD_PORT;
	*ret_host = host;
	*ret_len = len;
	*ret_port = (uint16_t)p;
	return HOSTPORT_OK;
}

int hostport_parse(const char *s, char **ret_host, uint16_t *ret_port, enum hostport_error *ret_error)
{
	const char *host = NULL;
	size_t len = 0;
	uint16_t port = 0;
	enum hostport_error e;

	e = split(s, &host, &len, &port);
	if (ret_error)
		*ret_error = e;
	if (e != HOSTPORT_OK)
		return -EINVAL;
	if (ret_host) {
		char *h = strndup(host, len);
		if (!h)
			return -ENOMEM;
		*ret_host = h;
	}
	if (ret_port)
		*ret_port = port;
	return 0;
}
