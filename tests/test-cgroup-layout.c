/* test-cgroup-layout.c - layout detection on fake cgroup roots, from
 * mountinfo fixtures (tests/data/discovery) and on the host. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup-layout.h"
#include "test-tree.h"
#include "util.h"

static void test_layout_v2(void **state)
{
	_cleanup_free_ char *base = make_tmpdir("acctd-layout");
	struct acct_hierarchies *l = NULL;

	xwrite(base, "cgroup.controllers", "cpuset cpu io memory pids\n");
	xmkdir(base, "system.slice");
	assert_int_equal(acct_hierarchies_detect(base, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_UNIFIED);
	assert_string_equal(l->root, base);
	assert_string_equal(l->mount[ACCT_HIER_UNIFIED], base);
	assert_null(l->mount[ACCT_HIER_MEMORY]);
	assert_null(l->mount[ACCT_HIER_CPUACCT]);
	assert_null(l->mount[ACCT_HIER_CPU]);
	assert_true(l->v2_memory);
	assert_true(l->v2_cpu);
	assert_string_equal(acct_cgroup_mode_to_string(l->mode), "unified");
	l = acct_hierarchies_free(l);

	/* without the controllers enabled; trailing slash */
	xwrite(base, "cgroup.controllers", "cpuset io pids\n");
	_cleanup_free_ char *slash = xjoin(base, "");
	assert_int_equal(acct_hierarchies_detect(slash, &l), 0);
	assert_string_equal(l->root, base);
	assert_false(l->v2_memory);
	assert_false(l->v2_cpu);
	l = acct_hierarchies_free(l);
	rm_rf(base);
}

static void test_layout_hybrid(void **state)
{
	_cleanup_free_ char *base = make_tmpdir("acctd-layout");
	_cleanup_free_ char *unified = xjoin(base, "unified");
	_cleanup_free_ char *memory = xjoin(base, "memory");
	_cleanup_free_ char *cpu = xjoin(base, "cpu");
	_cleanup_free_ char *cpuacct = xjoin(base, "cpuacct");
	struct acct_hierarchies *l = NULL;

	make_hybrid(base);
	assert_int_equal(acct_hierarchies_detect(base, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_HYBRID);
	assert_string_equal(acct_cgroup_mode_to_string(l->mode), "hybrid");
	assert_string_equal(l->root, base);
	assert_string_equal(l->mount[ACCT_HIER_UNIFIED], unified);
	assert_string_equal(l->mount[ACCT_HIER_MEMORY], memory);
	assert_string_equal(l->mount[ACCT_HIER_CPU], cpu);
	assert_string_equal(l->mount[ACCT_HIER_CPUACCT], cpuacct);
	assert_false(l->v2_memory);
	assert_false(l->v2_cpu);
	assert_null(l->mount[ACCT_HIER_BLKIO]);
	l = acct_hierarchies_free(l);

	/* the v1 blkio hierarchy, where I/O is read on hybrid hosts like this one */
	_cleanup_free_ char *blkio = xjoin(base, "blkio");
	xmkdir(base, "blkio");
	assert_int_equal(acct_hierarchies_detect(base, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_HYBRID);
	assert_string_equal(l->mount[ACCT_HIER_BLKIO], blkio);
	assert_string_equal(acct_hierarchy_to_string(ACCT_HIER_BLKIO), "blkio");
	l = acct_hierarchies_free(l);

	/* "unified" without cgroup.controllers is not a v2 tree: legacy */
	xrm_rf(base, "unified/cgroup.controllers");
	assert_int_equal(acct_hierarchies_detect(base, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_LEGACY);
	assert_null(l->mount[ACCT_HIER_UNIFIED]);
	l = acct_hierarchies_free(l);
	rm_rf(base);
}

static void test_layout_legacy(void **state)
{
	_cleanup_free_ char *base = make_tmpdir("acctd-layout");
	_cleanup_free_ char *memory = xjoin(base, "memory");
	_cleanup_free_ char *comount = xjoin(base, "cpu,cpuacct");
	_cleanup_free_ char *cpu = xjoin(base, "cpu");
	_cleanup_free_ char *cpuacct = xjoin(base, "cpuacct");
	struct acct_hierarchies *l = NULL;

	/* co-mounted cpu,cpuacct without symlinks */
	xmkdir(base, "memory");
	xmkdir(base, "cpu,cpuacct");
	xmkdir(base, "pids");
	assert_int_equal(acct_hierarchies_detect(base, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_LEGACY);
	assert_string_equal(acct_cgroup_mode_to_string(l->mode), "legacy");
	assert_null(l->mount[ACCT_HIER_UNIFIED]);
	assert_string_equal(l->mount[ACCT_HIER_MEMORY], memory);
	assert_string_equal(l->mount[ACCT_HIER_CPU], comount);
	assert_string_equal(l->mount[ACCT_HIER_CPUACCT], comount);
	l = acct_hierarchies_free(l);

	/* separate cpu and cpuacct mounts */
	xrm_rf(base, "cpu,cpuacct");
	xmkdir(base, "cpu");
	xmkdir(base, "cpuacct");
	assert_int_equal(acct_hierarchies_detect(base, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_LEGACY);
	assert_string_equal(l->mount[ACCT_HIER_CPU], cpu);
	assert_string_equal(l->mount[ACCT_HIER_CPUACCT], cpuacct);
	l = acct_hierarchies_free(l);
	rm_rf(base);
}

static void test_layout_none(void **state)
{
	_cleanup_free_ char *base = make_tmpdir("acctd-layout");
	_cleanup_free_ char *missing = xjoin(base, "missing");
	_cleanup_free_ char *file = xjoin(base, "file");
	struct acct_hierarchies *l = NULL;

	xmkdir(base, "pids");
	xwrite(base, "file", "x");
	assert_int_equal(acct_hierarchies_detect(base, &l), -ENOENT);
	assert_null(l);
	assert_int_equal(acct_hierarchies_detect(missing, &l), -ENOENT);
	assert_null(l);
	assert_int_equal(acct_hierarchies_detect(file, &l), -ENOENT);
	assert_null(l);
	assert_int_equal(acct_hierarchies_detect(base, NULL), -EINVAL);
	rm_rf(base);
}

static void test_layout_host(void **state)
{
	struct acct_hierarchies *l = NULL, *m = NULL;
	int r = acct_hierarchies_detect(NULL, &l);

	if (r == -ENOENT) {
		print_message("no cgroup hierarchy mounted here: skipping\n");
		skip();
	}
	assert_int_equal(r, 0);
	print_message("host: %s, root %s\n", acct_cgroup_mode_to_string(l->mode), l->root);
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++)
		print_message("  %-8s %s\n", acct_hierarchy_to_string(h), l->mount[h] ? l->mount[h] : "-");

	/* the mountinfo fallback agrees */
	assert_int_equal(acct_hierarchies_from_mountinfo("/proc/self/mountinfo", &m), 0);
	assert_int_equal(m->mode, l->mode);
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++) {
		assert_int_equal(!m->mount[h], !l->mount[h]);
		if (l->mount[h])
			assert_string_equal(m->mount[h], l->mount[h]);
	}
	assert_int_equal(m->v2_memory, l->v2_memory);
	assert_int_equal(m->v2_cpu, l->v2_cpu);
	m = acct_hierarchies_free(m);

	if (l->mode != ACCT_CGROUP_HYBRID) {
		print_message("host is not hybrid (%s): skipping the hybrid assertions\n",
			      acct_cgroup_mode_to_string(l->mode));
		acct_hierarchies_free(l);
		return;
	}
	assert_string_equal(l->root, "/sys/fs/cgroup");
	assert_non_null(l->mount[ACCT_HIER_MEMORY]);
	assert_string_equal(l->mount[ACCT_HIER_MEMORY], "/sys/fs/cgroup/memory");
	assert_string_equal(l->mount[ACCT_HIER_UNIFIED], "/sys/fs/cgroup/unified");
	assert_false(l->v2_memory);
	acct_hierarchies_free(l);
}

static char *data_path(const char *name)
{
	const char *dir = getenv("ACCT_TEST_DATA");
	char *p = NULL;
	assert_true(asprintf(&p, "%s/discovery/%s", dir ? dir : "tests/data", name) > 0);
	return p;
}

static void test_layout_mountinfo(void **state)
{
	struct acct_hierarchies *l = NULL;
	_cleanup_free_ char *hybrid = data_path("mountinfo-hybrid");
	_cleanup_free_ char *v2 = data_path("mountinfo-v2");
	_cleanup_free_ char *legacy = data_path("mountinfo-legacy");
	_cleanup_free_ char *container = data_path("mountinfo-container");
	_cleanup_free_ char *none = data_path("mountinfo-none");
	_cleanup_free_ char *missing = data_path("does-not-exist");

	assert_int_equal(acct_hierarchies_from_mountinfo(hybrid, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_HYBRID);
	assert_string_equal(l->root, "/sys/fs/cgroup");
	assert_string_equal(l->mount[ACCT_HIER_UNIFIED], "/sys/fs/cgroup/unified");
	assert_string_equal(l->mount[ACCT_HIER_MEMORY], "/sys/fs/cgroup/memory");
	assert_string_equal(l->mount[ACCT_HIER_CPU], "/sys/fs/cgroup/cpu");
	assert_string_equal(l->mount[ACCT_HIER_CPUACCT], "/sys/fs/cgroup/cpuacct");
	l = acct_hierarchies_free(l);

	assert_int_equal(acct_hierarchies_from_mountinfo(v2, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_UNIFIED);
	assert_string_equal(l->root, "/sys/fs/cgroup");
	assert_string_equal(l->mount[ACCT_HIER_UNIFIED], "/sys/fs/cgroup");
	assert_null(l->mount[ACCT_HIER_MEMORY]);
	l = acct_hierarchies_free(l);

	/* co-mounted cpu,cpuacct; a second memory mount outside /sys/fs/cgroup loses */
	assert_int_equal(acct_hierarchies_from_mountinfo(legacy, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_LEGACY);
	assert_null(l->mount[ACCT_HIER_UNIFIED]);
	assert_string_equal(l->mount[ACCT_HIER_MEMORY], "/sys/fs/cgroup/memory");
	assert_string_equal(l->mount[ACCT_HIER_CPU], "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(l->mount[ACCT_HIER_CPUACCT], "/sys/fs/cgroup/cpu,cpuacct");
	l = acct_hierarchies_free(l);

	/* a container: cgroup2 at an escaped, unusual place */
	assert_int_equal(acct_hierarchies_from_mountinfo(container, &l), 0);
	assert_int_equal(l->mode, ACCT_CGROUP_UNIFIED);
	assert_string_equal(l->mount[ACCT_HIER_UNIFIED], "/run/my cgroup");
	l = acct_hierarchies_free(l);

	assert_int_equal(acct_hierarchies_from_mountinfo(none, &l), -ENOENT);
	assert_null(l);
	assert_int_equal(acct_hierarchies_from_mountinfo(missing, &l), -ENOENT);
	assert_null(l);
}
static void test_layout_invalid(void **state)
{
	struct acct_hierarchies *l = NULL;

	assert_null(acct_hierarchies_free(NULL));
	assert_int_equal(acct_hierarchies_from_mountinfo(NULL, &l), -EINVAL);
	assert_null(l);
	assert_null(acct_hierarchy_to_string(_ACCT_HIER_MAX));
	assert_string_equal(acct_hierarchy_to_string(ACCT_HIER_CPUACCT), "cpuacct");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_v2),
		cmocka_unit_test(test_layout_hybrid),
		cmocka_unit_test(test_layout_legacy),
		cmocka_unit_test(test_layout_none),
		cmocka_unit_test(test_layout_host),
		cmocka_unit_test(test_layout_mountinfo),
		cmocka_unit_test(test_layout_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
