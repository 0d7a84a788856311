/* verb-list.c - `acctctl list`: the cgroups under a prefix, as a table (flat
 * or a tree) with a footer, or as JSON: one array, or one object per line;
 * the columns (and JSON members) as -o selects them. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "acctctl.h"
#include "charge-units.h"
#include "columns.h"
#include "ctl-call.h"
#include "pager.h"
#include "rows.h"
#include "terminal.h"
#include "verbs.h"

int verb_list(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_(rows_done) struct rows rs = { 0 };
	_cleanup_(table_done) struct table t = { 0 };
	struct columns cols = arg_columns;
	_cleanup_free_ char *header = xstrdup(arg_charge);
	size_t dead = 0;
	int r;

	if (!cols.given)
		columns_default(&cols, arg_all);
	if (!arg_charge && (columns_has(&cols, COLUMN_CHARGE) || columns_has(&cols, COLUMN_CHARGE_BOUND)))
		return usage_error("-o charge: name the charged resource with --charge=NAME.");
	if (!arg_charge && arg_sort == SORT_CHARGE)
		return usage_error("--sort=charge: name the charged resource with --charge=NAME.");
	if (arg_charge) {
		int unit;

		/* List serves only the resources charged (none where nothing
		 * was): a name it never serves would read 0 everywhere, so
		 * one that acctd's files do not declare is refused, where
		 * they can be read */
		charge_units_load();
		if (!charge_units_unknown() && charge_unit(arg_charge) == -ENOENT) {
			bool declared = false;
			for (size_t i = 0; charge_units_resource(i, &unit); i++)
				declared |= strcmp(charge_units_resource(i, &unit), arg_charge) == 0;
			if (!declared) {
				fprintf(stderr, "No such resource: %s\n", arg_charge);
				return EXIT_FAIL;
			}
		}
		if (!cols.given && (columns_append(&cols, COLUMN_CHARGE) < 0 || columns_append(&cols, COLUMN_CHARGE_BOUND) < 0))
			return usage_error("Too many fields.");
		/* its header is its name, as the others' are theirs: upper case */
		for (char *p = header; *p; p++)
			*p = (char)toupper((unsigned char)*p);
		columns_set_header(&cols, COLUMN_CHARGE, header);
		cols.charge_unit = charge_unit(arg_charge);
		rs.charge = arg_charge;
	}

	if (arg_top > 0 && arg_tree)
		return usage_error("--top ranks cgroups, --tree places them below their parents: give one of them.");
	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	r = list_fetch(c, args[0], arg_json, &rs);
	if (r != EXIT_OK)
		return r;
	/* --top ranks: by CPU unless --sort names another key */
	rows_table(&rs, arg_tree, arg_sort >= 0 ? arg_sort : arg_top > 0 ? SORT_CPU : SORT_PATH, arg_top, &cols,
		   arg_json ? NULL : &t);
	pager_open();
	if (arg_json == JSON_LINES) {
		/* one object per line, in the table's order */
		for (size_t i = 0; i < rs.norder; i++) {
			_cleanup_json_ struct json_object *o = columns_json(&cols, rs.v[rs.order[i]].obj);
			print_json(stdout, o);
		}
	} else if (arg_json) {
		/* one document, as systemctl --output=json prints a list */
		_cleanup_json_ struct json_object *a = xjson(json_object_new_array_ext((int)rs.norder));
		for (size_t i = 0; i < rs.norder; i++)
			if (json_object_array_add(a, columns_json(&cols, rs.v[rs.order[i]].obj)) < 0)
				oom_exit();
		print_json(stdout, a);
	} else {
		size_t shown_dead = 0;
		bool warming = false;

		table_print(stdout, &t, arg_legend, output_width());
		for (size_t i = 0; i < rs.norder; i++)
			warming |= rs.v[rs.order[i]].has_load && rs.v[rs.order[i]].load_warming;
		for (size_t i = 0; i < rs.n; i++)
			dead += rs.v[i].dead;
		for (size_t i = 0; i < rs.norder; i++)
			shown_dead += rs.v[rs.order[i]].dead;
		if (arg_legend)
			putchar('\n');
		if (arg_legend && warming && columns_has(&cols, COLUMN_LOAD))
			printf("LOAD~: warming up (counted for under a minute, from 0: reads low until then).\n");
		if (arg_legend && rs.norder < rs.n) {
			printf("The first %zu of %zu cgroups by %s (--top)", rs.norder, rs.n,
			       arg_sort == SORT_CHARGE ? arg_charge : sort_names[arg_sort >= 0 ? arg_sort : SORT_CPU]);
			if (arg_all)
				printf(", %zu of them removed (tombstones)", shown_dead);
			printf(".\n");
		} else if (arg_legend) {
			printf("%zu cgroup%s listed", rs.n - dead, rs.n - dead == 1 ? "" : "s");
			if (arg_all)
				printf(", %zu removed (tombstones)", dead);
			printf(".\n");
		}
	}
	return EXIT_OK;
}
