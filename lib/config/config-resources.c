/* config-resources.c - the [resource.NAME] sections of acctd.conf: resources
 * that programs charge to their cgroups (docs/charges.md). Their keys are the
 * resource_keys[] table below, parsed, dumped and documented like config.c's
 * keys[] (the same parser, config_apply_value()); a section declares its
 * resource by its header, and unlike other sections an unknown key in it is
 * an error. A budget is kept as written until every file is read, because
 * its syntax follows the unit, which may come after it or in a drop-in. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/parse.h"
#include "basic/suggest.h"
#include "basic/util.h"
#include "config-internal.h"

/* The keys of a [resource.NAME] section (docs/charges.md), in the order they
 * are documented and dumped; fields of struct acct_resource_config. The
 * section is "resource" here and "resource.NAME" in a file. */
#define RKEY(nm, k, field)                                                                   \
	{                                                                                    \
		.section = "resource", .name = nm, .kind = k, .store = S_NONE,               \
		.offset = offsetof(struct acct_resource_config, field),                      \
	}
static const struct key_desc resource_keys[] = {
	RKEY("unit", V_UNIT, unit),
	RKEY("budget", V_BUDGET, budget_text),
	RKEY("on_removal", V_ON_REMOVAL, on_removal),
	RKEY("release_on_exit", V_BOOL, release_on_exit),
	RKEY("averages", V_BOOL, averages),
	RKEY("ram", V_BOOL, ram),
};

bool acct_resource_name_valid(const char *name)
{
	size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_");

	return n > 0 && n <= ACCT_RESOURCE_NAME_MAX && name[n] == '\0';
}

static const struct key_desc *resource_key_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(resource_keys); i++)
		if (strcmp(resource_keys[i].name, name) == 0)
			return &resource_keys[i];
	return NULL;
}

const struct acct_resource_config *acct_config_resource(const struct acct_config *c, const char *name)
{
	for (size_t i = 0; c && i < c->nr_resources; i++)
		if (strcmp(c->resources[i].name, name) == 0)
			return &c->resources[i];
	return NULL;
}

/* The resource `name`, added with its defaults when it is new. Returns 0,
 * -E2BIG beyond ACCT_RESOURCES_MAX or -ENOMEM. */
static int resource_get(struct acct_config *c, const char *name, struct acct_resource_config **ret)
{
	struct acct_resource_config *v;

	for (size_t i = 0; i < c->nr_resources; i++)
		if (strcmp(c->resources[i].name, name) == 0) {
			*ret = &c->resources[i];
			return 0;
		}
	if (c->nr_resources >= ACCT_RESOURCES_MAX)
		return -E2BIG;
	v = reallocarray(c->resources, c->nr_resources + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->resources = v;
	v[c->nr_resources] = (struct acct_resource_config){ .name = strdup(name) };
	if (!v[c->nr_resources].name)
		return -ENOMEM;
	*ret = &v[c->nr_resources++];
	return 0;
}

void config_resource_done(struct acct_resource_config *r)
{
	free(r->name);
	free(r->budget_text);
	free(r->budget_origin);
}

int config_resource_assign(struct acct_config *c, const char *resource, const char *key, const char *value,
			   const char *origin, char **ret_msg)
{
	_cleanup_free_ char *reason = NULL;
	struct acct_resource_config *res;
	const struct key_desc *k;
	int r;

	*ret_msg = NULL;
	r = resource_get(c, resource, &res);
	if (r < 0)
		return r;
	k = resource_key_find(key);
	if (!k) {
		/* Strict, unlike the other sections: a misspelt key of a
		 * resource would silently change what programs' charges mean. */
		const char *names[ELEMENTSOF(resource_keys) + 1];
		for (size_t i = 0; i < ELEMENTSOF(resource_keys); i++)
			names[i] = resource_keys[i].name;
		names[ELEMENTSOF(resource_keys)] = NULL;
		const char *near = suggest_nearest(key, names);
		if (asprintf(ret_msg, "%s: unknown key '%s' in section [%s%s]%s%s%s", origin, key, RESOURCE_PREFIX, resource,
			     near ? " (did you mean '" : "", near ?: "", near ? "'?)" : "") < 0)
			*ret_msg = NULL;
		return -EINVAL;
	}
	r = config_apply_value(res, k, value, &reason);
	if (r < 0) {
		if (!reason || asprintf(ret_msg, "%s: %s: %s", origin, k->name, reason) < 0)
			*ret_msg = NULL;
		return r;
	}
	if (k->kind == V_BUDGET) {
		char *o = strdup(origin);
		if (!o)
			return -ENOMEM;
		free(res->budget_origin);
		res->budget_origin = o;
	}
	return 0;
}

int config_resource_declare(struct acct_config *c, const char *name, const char *where, char **ret_msg)
{
	struct acct_resource_config *res;
	int r;

	*ret_msg = NULL;
	if (!acct_resource_name_valid(name)) {
		if (asprintf(ret_msg, "%s: invalid resource name '%s' (expected 1 to %d of a-z, 0-9 and _)", where, name,
			     ACCT_RESOURCE_NAME_MAX) < 0)
			*ret_msg = NULL;
		return -EINVAL;
	}
	r = resource_get(c, name, &res);
	if (r == -E2BIG && asprintf(ret_msg, "%s: too many resources (at most %d)", where, ACCT_RESOURCES_MAX) < 0)
		*ret_msg = NULL;
	return r;
}

bool config_is_resource_section(const char *section)
{
	return strncmp(section, RESOURCE_PREFIX, strlen(RESOURCE_PREFIX)) == 0;
}

void config_resources_dump(const struct acct_config *c, FILE *f)
{
	for (size_t i = 0; i < c->nr_resources; i++) {
		fprintf(f, "\n[" RESOURCE_PREFIX "%s]\n", c->resources[i].name);
		for (size_t j = 0; j < ELEMENTSOF(resource_keys); j++) {
			_cleanup_free_ char *v = config_value_string(&c->resources[i], &resource_keys[j]);
			fprintf(f, "%s =%s%s\n", resource_keys[j].name, v && *v ? " " : "", v ? v : "");
		}
	}
}

/* Parse each resource's budget in its unit, once every file is read (a
 * section may give budget before unit, and a drop-in may change either), and
 * check what depends on the unit. */
int config_resources_resolve(struct acct_config *c, struct acct_config_diag *diag)
{
	for (size_t i = 0; i < c->nr_resources; i++) {
		struct acct_resource_config *res = &c->resources[i];
		const char *origin = res->budget_origin ?: "configuration";
		uint64_t n = 0;
		int r;

		if (res->ram && res->unit != ACCT_RESOURCE_BYTES)
			return config_diag_error(diag, -EINVAL, "configuration: [resource.%s] ram: a RAM resource counts bytes (unit = bytes)",
					      res->name);
		if (!res->budget_text) {
			res->budget = res->unit == ACCT_RESOURCE_BYTES	 ? c->bytes_budget
				      : res->unit == ACCT_RESOURCE_SECONDS ? c->cpu_budget_us
									   : c->tasks_budget;
			continue;
		}
		switch (res->unit) {
		case ACCT_RESOURCE_BYTES:
			r = acct_parse_size(res->budget_text, &n);
			if (r == -EINVAL)
				return config_diag_error(diag, r, "%s: budget: invalid size '%s' (%s)", origin, res->budget_text,
						      acct_size_refusal(res->budget_text));
			break;
		case ACCT_RESOURCE_SECONDS:
			r = acct_parse_duration_us(res->budget_text, &n);
			if (r == -EINVAL)
				return config_diag_error(diag, r, "%s: budget: invalid duration '%s' (expected " ACCT_DURATION_SYNTAX ")",
						      origin, res->budget_text);
			break;
		default:
			r = acct_parse_uint64(res->budget_text, &n);
			if (r == -EINVAL)
				return config_diag_error(diag, r, "%s: budget: invalid number '%s' (expected an integer)", origin,
						      res->budget_text);
			break;
		}
		if (r < 0 || n > INT64_MAX)
			return config_diag_error(diag, -ERANGE, "%s: budget: %s is out of range (too large)", origin,
					      res->budget_text);
		res->budget = (int64_t)n;
	}
	return 0;
}

/* The resources of c in one line (config-internal.h). */
char *config_resources_string(const struct acct_config *c)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < c->nr_resources; i++) {
		fprintf(f, "%s%s:", i ? "; " : "", c->resources[i].name);
		for (size_t j = 0; j < ELEMENTSOF(resource_keys); j++) {
			_cleanup_free_ char *v = config_value_string(&c->resources[i], &resource_keys[j]);
			fprintf(f, " %s=%s", resource_keys[j].name, v ?: "");
		}
	}
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}
