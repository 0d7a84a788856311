/* cgroup-identity.c - the unit, pod and container a cgroup is, from its path
 * (cgroup-identity.h). */
#include "cgroup-identity.h"

#include <stddef.h>
#include <string.h>

/* One path component: [s, s + n). */
struct comp {
	const char *s;
	size_t n;
};

#define COMPS_MAX 64 /* deeper paths: their first COMPS_MAX components only */

static size_t split(const char *path, struct comp *c)
{
	size_t n = 0;

	for (const char *p = path; *p && n < COMPS_MAX;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		c[n++] = (struct comp){ p, len };
		p += len;
	}
	return n;
}

static bool ends_with(struct comp c, const char *suffix)
{
	size_t l = strlen(suffix);
	return c.n >= l && memcmp(c.s + c.n - l, suffix, l) == 0;
}

static bool is(struct comp c, const char *s)
{
	return c.n == strlen(s) && memcmp(c.s, s, c.n) == 0;
}

/* Copy [s, s + n) into out (ACCT_IDENTITY_MAX), '_' as '-' when `dashes`. */
static void put(char *out, const char *s, size_t n, bool dashes)
{
	if (n >= ACCT_IDENTITY_MAX)
		n = ACCT_IDENTITY_MAX - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = dashes && s[i] == '_' ? '-' : s[i];
	out[n] = '\0';
}

/* The pod UID in a pod's component, or false when it is not one:
 * "pod<UID>" (cgroupfs driver), "...-pod<UID_>.slice" (systemd driver). */
static bool pod_uid(struct comp c, struct comp *ret)
{
	if (ends_with(c, ".slice")) {
		size_t n = c.n - strlen(".slice");
		for (size_t i = n; i >= 4; i--)
			if (memcmp(c.s + i - 4, "-pod", 4) == 0) {
				if (i == n)
					return false;
				*ret = (struct comp){ c.s + i, n - i };
				return true;
			}
		return false;
	}
	if (c.n > 3 && memcmp(c.s, "pod", 3) == 0) {
		*ret = (struct comp){ c.s + 3, c.n - 3 };
		return true;
	}
	return false;
}

/* The container ID of the component below a pod: "<ID>" (cgroupfs) or
 * "<runtime>-<ID>.scope" (systemd); false for conmon's and empty IDs. */
static bool container_id(struct comp c, struct comp *ret)
{
	if (ends_with(c, ".scope")) {
		size_t n = c.n - strlen(".scope");
		if (memmem(c.s, n, "-conmon-", 8) || memmem(c.s, n, "conmon-", 7) == c.s)
			return false;
		const char *dash = NULL;
		for (size_t i = 0; i < n; i++)
			if (c.s[i] == '-')
				dash = c.s + i;
		const char *id = dash ? dash + 1 : c.s;
		if (id == c.s + n)
			return false;
		*ret = (struct comp){ id, (size_t)(c.s + n - id) };
		return true;
	}
	*ret = c;
	return c.n > 0;
}

/* A systemd unit that holds processes: "NAME.service", "NAME.scope". */
static bool is_unit(struct comp c)
{
	return (ends_with(c, ".service") && c.n > strlen(".service")) || (ends_with(c, ".scope") && c.n > strlen(".scope"));
}

bool acct_cgroup_identity(const char *path, struct acct_cgroup_identity *ret)
{
	struct comp c[COMPS_MAX];
	size_t n = path ? split(path, c) : 0;

	ret->service[0] = ret->pod[0] = ret->container[0] = '\0';
	if (n == 0)
		return false;

	for (size_t k = 0; k < n; k++) {
		if (!is(c[k], "kubepods") && !ends_with(c[k], "kubepods.slice"))
			continue;
		/* a Kubernetes path: the pod one or two levels down (a QoS
		 * level between: burstable, besteffort), its container below */
		for (size_t i = k + 1; i < n && i <= k + 2; i++) {
			struct comp uid, id;
			if (!pod_uid(c[i], &uid))
				continue;
			if (n - 1 == i) {
				put(ret->pod, uid.s, uid.n, true);
				return true;
			}
			if (n - 1 == i + 1 && container_id(c[i + 1], &id)) {
				put(ret->pod, uid.s, uid.n, true);
				put(ret->container, id.s, id.n, false);
				return true;
			}
			return false;
		}
		return false;
	}
	/* The outermost unit only: a user manager's units below
	 * user@UID.service are in its value (counted once by service). */
	for (size_t k = 0; k + 1 < n; k++)
		if (is_unit(c[k]))
			return false;
	struct comp last = c[n - 1];
	if (is_unit(last)) {
		put(ret->service, last.s, last.n, false);
		return true;
	}
	return false;
}
