/* admin-group.h - [api] admin_group as a group ID, resolved off the event loop.
 *
 * A group name is resolved through NSS (files, but also LDAP, sssd, ...), which
 * may block for seconds. So it is resolved once at start, before the event loop
 * runs, and again at each reload on a short-lived thread whose result the loop
 * picks up; administrative calls only compare IDs. A group created or renumbered
 * after that takes effect at the next reload. Until a reload's resolution
 * completes (normally microseconds), the previous ID stays in effect.
 *
 * Like the per-call lookup this replaces, a name that is not a known group but
 * is a decimal number is taken as a group ID. */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <sys/types.h>

struct admin_group;

/* Resolve `name` (NULL or "": root only) now, synchronously, and watch for the
 * results of later admin_group_set() calls on `base`. An unknown group is
 * logged as a warning and leaves root only. Returns 0, or -ENOMEM or another
 * negative errno when the pipe or the event cannot be set up. */
int admin_group_new(struct event_base *base, const char *name, struct admin_group **ret);

/* Waits for a resolution in flight (at most one), then frees. Accepts NULL;
 * returns NULL. */
struct admin_group *admin_group_free(struct admin_group *a);

/* Resolve `name` (NULL or "": root only, at once) on a thread; the result
 * replaces the current ID on the event loop, unless a later call came first.
 * Returns 0, or a negative errno if no thread could be started (the previous
 * ID then stays in effect). */
int admin_group_set(struct admin_group *a, const char *name);

/* The group ID in effect: true and *ret_gid, or false when there is none
 * (root only). Cheap: no lookup. */
bool admin_group_get(const struct admin_group *a, gid_t *ret_gid);
