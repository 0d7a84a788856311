/* config-internal.h - what the parts of lib/config's configuration share
 * (config.c, config-resources.c, config-dropins.c): the description of a key,
 * the one value parser and formatter over it, and the diagnostics. Internal
 * to lib/config. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "config.h"

/* Longest string any format_*() of config.c writes, NUL included. */
#define VALUE_BUF 32

enum value_kind {
	V_DURATION,  /* acct_parse_duration_us() */
	V_SIZE,      /* acct_parse_size() */
	V_INTEGER,   /* plain decimal */
	V_BOOL,
	V_LOG_LEVEL,
	V_ROOT,      /* absolute path; empty: NULL (discover) */
	V_SOCKET,    /* absolute path that fits sockaddr_un */
	V_GROUP,     /* group name; empty: NULL */
	V_INCLUDE,   /* blank-separated globs; empty: "*" */
	V_EXCLUDE,   /* blank-separated globs; may be empty */
	V_LISTEN,    /* HOST:PORT, [IPV6]:PORT or none */
	V_FAMILIES,  /* metrics family words, comma or blank separated (acct_metrics_families_apply()) */
	V_COLLECTOR, /* auto, bpf or files (enum acct_collector_mode) */
	V_REMOVALS,  /* auto, each or summary (enum acct_removal_log) */
	V_UNIT,      /* bytes, count or seconds (enum acct_resource_unit) */
	V_ON_REMOVAL, /* release or reparent (enum acct_resource_removal) */
	V_BUDGET,    /* a quantity in a resource's unit, kept as text until the unit is known */
};

/* How a numeric value is stored; it also caps the range. */
enum store {
	S_NONE,
	S_U64,
	S_I64,
	S_UINT,
};

struct key_desc {
	const char *section;
	const char *name;
	enum value_kind kind;
	enum store store;
	size_t offset;
	uint64_t min, max; /* numeric kinds, in the stored unit */
	bool at_start;     /* a reload does not apply it: the next start does (acct_config_diff()) */
};

/* The largest unit that represents `us` exactly ("90s", "1min"), or the
 * size in the largest of K/M/G/T that divides it, so that parsing gives the
 * value back; `buf` is returned. */
const char *config_format_duration(uint64_t us, char buf[static VALUE_BUF]);
const char *config_format_size(uint64_t bytes, char buf[static VALUE_BUF]);

/* Parse `value` for key `k` and store it in `c` (struct acct_config, or
 * struct acct_resource_config for the resource keys). On failure `c` is
 * unchanged and *ret_reason says why (NULL on ENOMEM). Returns 0 or a
 * negative errno. */
int config_apply_value(void *c, const struct key_desc *k, const char *value, char **ret_reason);

/* The value of key `k` in `c` as the dump writes it (and a load reads it
 * back); "" for an empty one. Returns a malloc()ed string or NULL (ENOMEM). */
char *config_value_string(const void *c, const struct key_desc *k);

/* Set diag->error to the message (when diag is not NULL) and return err;
 * -ENOMEM when the message cannot be made. */
int config_diag_error(struct acct_config_diag *diag, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Add a warning. Returns 0 or -ENOMEM. */
int config_diag_warn(struct acct_config_diag *diag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- [resource.NAME] (config-resources.c) ---------------------------------- */

#define RESOURCE_PREFIX "resource."

/* Whether `section` is a [resource.NAME] section (any NAME). */
bool config_is_resource_section(const char *section);

/* The header [resource.NAME] at `where` ("FILE:LINE") declares NAME. Returns
 * 0, or a negative errno with *ret_msg the message ("FILE:LINE: ...", NULL
 * on ENOMEM). */
int config_resource_declare(struct acct_config *c, const char *name, const char *where, char **ret_msg);

/* Assign `value` to key `key` of resource `resource` (declared), set at
 * `origin` ("FILE:LINE"). Returns 0, or a negative errno with *ret_msg the
 * message ("FILE:LINE: key: reason", NULL on ENOMEM). */
int config_resource_assign(struct acct_config *c, const char *resource, const char *key, const char *value,
			   const char *origin, char **ret_msg);

/* Parse each resource's budget in its unit and check what depends on the
 * unit, once every file is read. Returns 0 or a negative errno with
 * diag->error set. */
int config_resources_resolve(struct acct_config *c, struct acct_config_diag *diag);

/* Free the strings of one resource. */
void config_resource_done(struct acct_resource_config *r);

/* Write the [resource.NAME] sections, as the dump does. */
void config_resources_dump(const struct acct_config *c, FILE *f);

/* The resources of c in one line ("name: unit=... budget=...; ..."), for a
 * reload's report; NULL on ENOMEM. */
char *config_resources_string(const struct acct_config *c);

/* ---- drop-ins (config-dropins.c) ------------------------------------------- */

/* The regular files *.conf of `dir` (symlinks followed; one to /dev/null
 * masks a drop-in), sorted by strcmp(); a missing `dir` has none. Returns 0
 * and a NULL-terminated list in *ret, or a negative errno with diag->error
 * set. A symlink loop is a warning. */
int config_list_dropins(const char *dir, char ***ret, struct acct_config_diag *diag);
