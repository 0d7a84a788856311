/* cgroup-identity.h - who a cgroup belongs to, read from its path alone:
 * the systemd unit it is (a service or scope), or the Kubernetes pod and
 * container it is. These become the labels service, pod and container of
 * /metrics' acctd_cgroup_info and the fields ACCTD_SERVICE, ACCTD_POD and
 * ACCTD_CONTAINER of the accounting record in the journal, so that a fleet's
 * queries group by what ran, not by where its cgroup sits (docs/fleet.md,
 * "Labels"). Pure string work: no cgroupfs, no allocation. */
#pragma once

#include <stdbool.h>

/* Longest value of each part, with its NUL: a cgroup name is at most
 * NAME_MAX (255) bytes. */
#define ACCT_IDENTITY_MAX 256

struct acct_cgroup_identity {
	char service[ACCT_IDENTITY_MAX];   /* the unit name, "foo.service", "session-2.scope"; "" when not a unit */
	char pod[ACCT_IDENTITY_MAX];       /* the pod's UID with dashes, "" when not a pod or its container */
	char container[ACCT_IDENTITY_MAX]; /* the container's ID (runtime prefix and .scope removed), "" when none */
};

/* The identity of the cgroup at `path` (below the cgroup root, "/" for the
 * root). Only the cgroup that is the unit, pod or container itself is
 * named, never its descendants or ancestors, so that summing a quantity by
 * service, pod or container counts each hierarchical value once:
 *
 *   - Kubernetes, below a component "kubepods" (cgroupfs driver) or one
 *     ending in "kubepods.slice" (systemd driver), after an optional QoS
 *     level: the pod's cgroup ("pod<UID>", "kubepods-<qos>-pod<UID_>.slice",
 *     its '_' read as '-') names pod; the cgroup right below it names pod
 *     and container ("<ID>", "<runtime>-<ID>.scope": the text after the
 *     last '-'; conmon's cgroups, "crio-conmon-<ID>.scope", none).
 *   - Otherwise a last component that ends in ".service" or ".scope" (a
 *     systemd unit that holds processes; slices only group them) names
 *     service: the component as systemctl shows the unit; the outermost
 *     unit only (units a user manager runs below user@UID.service are in
 *     that unit's value, and are not named).
 *
 * Fills *ret (all "" when nothing names it). Returns true when any part is
 * set. Never fails; `path` NULL is nothing. */
bool acct_cgroup_identity(const char *path, struct acct_cgroup_identity *ret);
