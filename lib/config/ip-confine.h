/* ip-confine.h - which IP peers acctd.service must let through, derived from
 * the configuration: the one decision that acctd-generator (which widens the
 * unit's IPAddressAllow= with a drop-in) and acctd (which warns when the unit it
 * runs in was not widened) share, so that they never disagree.
 *
 * acctd.service confines IP traffic to localhost (IPAddressDeny=any,
 * IPAddressAllow=localhost) and says so in ACCTD_IP_ALLOW=localhost. /metrics on
 * a loopback address (127.0.0.0/8, ::1, "localhost") or disabled needs nothing
 * more; on any other address ("0.0.0.0", a host's own address, a name, which is
 * not resolved here) its peers are other hosts, and the unit gets a drop-in with
 * IPAddressAllow=any and ACCTD_IP_ALLOW=any. No I/O, no logging. */
#pragma once

#include <stdbool.h>

#include "config.h"

/* The environment variable the unit (and the generator's drop-in) sets to what
 * its IPAddressAllow= lets through: "localhost" or "any". */
#define ACCT_IP_ALLOW_ENV "ACCTD_IP_ALLOW"
/* The generator's drop-in, relative to its output directory. */
#define ACCT_IP_CONFINE_DROPIN_DIR "acctd.service.d"
#define ACCT_IP_CONFINE_DROPIN_NAME "50-metrics-listen.conf"

/* Whether `listen` ("HOST:PORT", "[IPV6]:PORT" or "none") reaches only this
 * host: "none", an IPv4 address in 127.0.0.0/8 (in any form inet_aton()
 * accepts, as getaddrinfo() does), ::1 or ::ffff:127.x.x.x, or the name
 * "localhost" (any case, with or without a trailing dot). Returns 1 when local,
 * 0 when not (0.0.0.0, ::, other addresses, other names), -EINVAL when
 * `listen` is malformed, -ENOMEM. */
int acct_listen_is_local(const char *listen);

/* The drop-in acctd.service needs for configuration `c`: *ret is NULL when
 * the unit's own localhost confinement suffices, else a new string (the
 * caller frees it) holding the whole file. Returns 0, -EINVAL when
 * c->metrics_listen is malformed, -ENOMEM; *ret is not written on failure. */
int acct_ip_confine_dropin(const struct acct_config *c, char **ret);

/* Whether a unit whose ACCTD_IP_ALLOW is `ip_allow` (NULL: not under
 * acctd.service, or an older unit) lets /metrics' peers through for `listen`.
 * False only when the unit is known to allow localhost alone and `listen` is
 * not local: acctd then warns that a daemon-reload and restart are due. */
bool acct_ip_confine_lets_through(const char *ip_allow, const char *listen);
