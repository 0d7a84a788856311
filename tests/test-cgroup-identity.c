/* test-cgroup-identity.c - unit tests of the unit, pod and container a
 * cgroup's path names (lib/cgroup/cgroup-identity.h): systemd units, the
 * Kubernetes layouts of both cgroup drivers and runtimes, and the paths that
 * name nothing (slices, descendants of a unit, levels between). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cgroup-identity.h"

static void check(const char *path, const char *service, const char *pod, const char *container)
{
	struct acct_cgroup_identity id;
	bool any = acct_cgroup_identity(path, &id);

	print_message("%s\n", path ? path : "(null)");
	assert_string_equal(id.service, service);
	assert_string_equal(id.pod, pod);
	assert_string_equal(id.container, container);
	assert_int_equal(any, service[0] || pod[0] || container[0]);
}

static void test_systemd(void **state)
{
	(void)state;
	check("/system.slice/nginx.service", "nginx.service", "", "");
	check("/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service", "", "");
	check("/user.slice/user-1000.slice/session-2.scope", "session-2.scope", "", "");
	check("/user.slice/user-1000.slice/user@1000.service", "user@1000.service", "", "");
	/* the outermost unit only: a user manager's units are in user@1000.service's
	 * value (a sum by service would count them twice) */
	check("/user.slice/user-1000.slice/user@1000.service/app.slice/app-foo.service", "", "", "");
	check("/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope", "", "", "");
	check("/machine.slice/machine-web.scope", "machine-web.scope", "", "");
	/* a unit's name as its directory: escapes stay, as systemctl shows them */
	check("/system.slice/system-foo\\x2dbar.slice/a\\x2db.service", "a\\x2db.service", "", "");
	/* a slice groups units: no service of its own */
	check("/system.slice", "", "", "");
	check("/user.slice/user-1000.slice", "", "", "");
	/* below a unit: the unit's own cgroup is the service, not its children */
	check("/system.slice/docker.service/payload", "", "", "");
	check("/", "", "", "");
	check("", "", "", "");
	check(NULL, "", "", "");
	/* the bare suffix is no unit */
	check("/.service", "", "", "");
	check("/x/.scope", "", "", "");
	check("//system.slice//a.service/", "a.service", "", "");
}

static void test_kubernetes_systemd_driver(void **state)
{
	(void)state;
	const char *qos = "/kubepods.slice/kubepods-burstable.slice";
	char p[512];

	snprintf(p, sizeof(p), "%s/kubepods-burstable-pod1f2e3d4c_aaaa_bbbb_cccc_0123456789ab.slice", qos);
	check(p, "", "1f2e3d4c-aaaa-bbbb-cccc-0123456789ab", "");
	snprintf(p, sizeof(p), "%s/kubepods-burstable-pod1f2e3d4c_aaaa_bbbb_cccc_0123456789ab.slice/"
		 "cri-containerd-5e6f00112233.scope", qos);
	check(p, "", "1f2e3d4c-aaaa-bbbb-cccc-0123456789ab", "5e6f00112233");
	snprintf(p, sizeof(p), "%s/kubepods-burstable-pod11_22.slice/crio-abcdef.scope", qos);
	check(p, "", "11-22", "abcdef");
	snprintf(p, sizeof(p), "%s/kubepods-burstable-pod11_22.slice/docker-abcdef.scope", qos);
	check(p, "", "11-22", "abcdef");
	/* conmon beside the container: neither */
	snprintf(p, sizeof(p), "%s/kubepods-burstable-pod11_22.slice/crio-conmon-abcdef.scope", qos);
	check(p, "", "", "");
	/* guaranteed pods have no QoS level */
	check("/kubepods.slice/kubepods-pod99.slice", "", "99", "");
	check("/kubepods.slice/kubepods-pod99.slice/cri-containerd-77.scope", "", "99", "77");
	/* under kubelet's own slice */
	check("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	      "kubelet-kubepods-besteffort-pod42.slice/cri-containerd-9.scope",
	      "", "42", "9");
	/* the levels above the pod, and below the container: nothing */
	check("/kubepods.slice", "", "", "");
	check(qos, "", "", "");
	check("/kubepods.slice/kubepods-pod99.slice/cri-containerd-77.scope/sub", "", "", "");
	/* a container's scope is not a service */
	check("/kubepods.slice/kubepods-pod99.slice/cri-containerd-77.scope", "", "99", "77");
	/* an empty UID or ID */
	check("/kubepods.slice/kubepods-pod.slice", "", "", "");
	check("/kubepods.slice/kubepods-pod9.slice/cri-containerd-.scope", "", "", "");
}

static void test_kubernetes_cgroupfs_driver(void **state)
{
	(void)state;
	check("/kubepods/burstable/pod1f2e3d4c-aaaa-bbbb", "", "1f2e3d4c-aaaa-bbbb", "");
	check("/kubepods/burstable/pod1f2e3d4c-aaaa-bbbb/0123456789abcdef", "", "1f2e3d4c-aaaa-bbbb", "0123456789abcdef");
	check("/kubepods/pod77/abc", "", "77", "abc");
	check("/kubepods/besteffort", "", "", "");
	check("/kubepods", "", "", "");
	/* the pod two levels down at most: deeper, nothing */
	check("/kubepods/a/b/pod77", "", "", "");
	/* pod's own text only: a component "pod" alone is not a pod */
	check("/kubepods/burstable/pod", "", "", "");
	/* in a container's root (a node inside a container) */
	check("/docker/abc/kubepods/burstable/pod5/c1", "", "5", "c1");
}

static void test_long_names(void **state)
{
	(void)state;
	char p[600] = "/system.slice/", want[ACCT_IDENTITY_MAX];
	size_t n = strlen(p);

	memset(p + n, 'x', 300);
	strcpy(p + n + 300, ".service");
	struct acct_cgroup_identity id;
	assert_true(acct_cgroup_identity(p, &id));
	memcpy(want, p + n, ACCT_IDENTITY_MAX - 1);
	want[ACCT_IDENTITY_MAX - 1] = '\0';
	assert_string_equal(id.service, want); /* cut, terminated */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_systemd),
		cmocka_unit_test(test_kubernetes_systemd_driver),
		cmocka_unit_test(test_kubernetes_cgroupfs_driver),
		cmocka_unit_test(test_long_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
