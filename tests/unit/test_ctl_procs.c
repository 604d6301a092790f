/* test_ctl_procs.c — the container scilan_ctl names from a control group
 * path (tools/ctl_procs.c, built into this test): podman's, docker's and
 * the kubelet's layouts under systemd and cgroupfs, and paths that name no
 * container.  The process lookup itself runs in test_ctl_ns.
 */
#include <criterion/criterion.h>

#include "../../tools/ctl_procs.c"

static void expect_named(const char *path, const char *want)
{
	char got[80];

	ctl_container_of_cgroup(path, got, sizeof(got));
	cr_expect_str_eq(got, want, "%s", path);
}

Test(ctl_procs, runtimes_layouts)
{
	expect_named("/libpod_parent/libpod-da8ce0ced92db3196125e2279d4bc9ab36330a235257c8c784c419371aed0c03\n",
		     "libpod da8ce0ced92d");
	expect_named("/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope/container",
		     "libpod 0123456789ab");
	expect_named("/system.slice/docker-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope",
		     "docker fedcba987654");
	expect_named("/docker/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		     "container fedcba987654");
	expect_named("/kubepods.slice/kubepods-burstable.slice/"
		     "kubepods-burstable-pod1b2c3d4e_aaaa_bbbb_cccc_0123456789ab.slice/"
		     "cri-containerd-aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899.scope",
		     "pod 1b2c3d4e-aaaa-bbbb-cccc-0123456789ab containerd aabbccddeeff");
	expect_named("/kubepods/besteffort/pod1b2c3d4e-aaaa-bbbb-cccc-0123456789ab/"
		     "aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899",
		     "pod 1b2c3d4e-aaaa-bbbb-cccc-0123456789ab container aabbccddeeff");
}

Test(ctl_procs, paths_of_no_container)
{
	expect_named("/", "");
	expect_named("/user.slice/user-0.slice/session-3.scope", "");
	expect_named("/system.slice/nginx.service", "");
	expect_named("/libpod_parent/libpod-notahexid", "");
	expect_named("/podcast.slice", "");
	expect_named("", "");
}
