/* verb-list.c - `acctctl list`: the cgroups under a prefix, as a table (flat
 * or a tree) with a footer, or one JSON object per cgroup. */
#include <stdio.h>

#include "acctctl.h"
#include "ctl-call.h"
#include "pager.h"
#include "rows.h"
#include "terminal.h"

int verb_list(char **args)
{
	_cleanup_(acct_client_freep) struct acct_client *c = NULL;
	_cleanup_(rows_done) struct rows rs = { 0 };
	_cleanup_(table_done) struct table t = { 0 };
	size_t dead = 0;
	int r;

	r = connect_daemon(&c);
	if (r != EXIT_OK)
		return r;
	r = list_fetch(c, args[0], arg_json, &rs);
	if (r != EXIT_OK)
		return r;
	rows_table(&rs, arg_tree, arg_sort >= 0 ? arg_sort : SORT_PATH, arg_json ? NULL : &t);
	pager_open();
	if (arg_json) {
		/* one object per line (short) or each indented (pretty), in the table's order */
		for (size_t i = 0; i < rs.norder; i++)
			print_json(stdout, rs.v[rs.order[i]].obj);
	} else {
		table_print(stdout, &t, arg_legend, output_width());
		for (size_t i = 0; i < rs.n; i++)
			dead += rs.v[i].dead;
		if (arg_legend) {
			printf("\n%zu cgroup%s listed", rs.n - dead, rs.n - dead == 1 ? "" : "s");
			if (arg_all)
				printf(", %zu removed (tombstones)", dead);
			printf(".\n");
		}
	}
	return EXIT_OK;
}
