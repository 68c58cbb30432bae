/* test_cpus.c -- server/runtime/cpus.c: the CPU quota read from fake cgroup
 * trees (v2 cpu.max, v1 cfs files, nested cgroups, a container that sees its
 * own cgroup at the mount's root, no quota, malformed files) and the default
 * worker count on this machine.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <sched.h>

#include "cpus.h"
#include "testutil.h"

/* Writes text to tu_dir/rel, making the directories on the way. */
static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    for (char *p = path + strlen(tu_dir) + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        assert_true(mkdir(path, 0700) == 0 || errno == EEXIST);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* The quota with tu_dir/self as /proc/self/cgroup, tu_dir/fs the mount. */
static double quota(void)
{
    char self[256], root[256];
    snprintf(self, sizeof self, "%s/self", tu_dir);
    snprintf(root, sizeof root, "%s/fs", tu_dir);
    return tv_cpus_quota(self, root);
}

static void v2_cpu_max_is_quota_over_period(void **state)
{
    (void)state;
    put("self", "0::/\n");
    put("fs/cpu.max", "150000 100000\n");
    assert_true(quota() == 1.5);
}

static void v2_max_is_no_quota(void **state)
{
    (void)state;
    put("self", "0::/\n");
    put("fs/cpu.max", "max 100000\n");
    assert_true(quota() == 0);
}

static void v2_the_tightest_of_the_cgroup_and_its_parents_wins(void **state)
{
    (void)state;
    put("self", "0::/kubepods/pod1/c1\n");
    put("fs/kubepods/cpu.max", "800000 100000\n");
    put("fs/kubepods/pod1/cpu.max", "200000 100000\n");
    put("fs/kubepods/pod1/c1/cpu.max", "max 100000\n");
    assert_true(quota() == 2.0);
}

/* Docker without a cgroup namespace: /proc/self/cgroup names the host's
 * path, the container's own cgroup is mounted as the root. */
static void a_path_not_mounted_falls_back_to_the_root(void **state)
{
    (void)state;
    put("self", "0::/system.slice/docker-abc.scope\n");
    put("fs/cpu.max", "100000 100000\n");
    assert_true(quota() == 1.0);
}

static void v1_cfs_quota_over_period(void **state)
{
    (void)state;
    put("self", "12:memory:/\n4:cpu,cpuacct:/docker/abc\n");
    put("fs/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n");
    put("fs/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    assert_true(quota() == 3.0);
}

static void v1_minus_one_is_no_quota(void **state)
{
    (void)state;
    put("self", "4:cpuacct,cpu:/\n");
    put("fs/cpu/cpu.cfs_quota_us", "-1\n");
    put("fs/cpu/cpu.cfs_period_us", "100000\n");
    assert_true(quota() == 0);
}

static void only_the_cpu_controller_counts_in_v1(void **state)
{
    (void)state;
    put("self", "5:cpuset:/a\n");
    put("fs/cpuset/a/cpu.cfs_quota_us", "100000\n");
    put("fs/cpuset/a/cpu.cfs_period_us", "100000\n");
    assert_true(quota() == 0);
}

static void malformed_or_missing_files_are_no_quota(void **state)
{
    (void)state;
    assert_true(quota() == 0); /* no /proc/self/cgroup at all */
    put("self", "garbage\n0::relative\n0::/\n");
    put("fs/cpu.max", "lots 100000\n");
    assert_true(quota() == 0);
    put("fs/cpu.max", "100000 0\n");
    assert_true(quota() == 0);
    put("fs/cpu.max", "100000\n");
    assert_true(quota() == 0);
}

/* The tightest quota of all the lines and hierarchies wins, whichever
 * comes first; a looser one after it, a v1 quota of 0 or a bad period, a
 * quota that does not end at a blank, a period file missing, a path too
 * long for PATH_MAX, and controllers that merely contain "cpu" change
 * nothing. */
static void the_tightest_of_every_line_and_hierarchy_wins(void **state)
{
    (void)state;
    put("self", "3:cpuacct,cpu:/a\n0::/b\n4:cpuset,cpu:/c\n");
    put("fs/b/cpu.max", "50000\t100000\n");
    put("fs/cpu/a/cpu.cfs_quota_us", "300000\n");
    put("fs/cpu/a/cpu.cfs_period_us", "100000\n");
    put("fs/cpuacct,cpu/c/cpu.cfs_quota_us", "100000\n");
    put("fs/cpuacct,cpu/c/cpu.cfs_period_us", "100000\n");
    assert_true(quota() == 0.5);
    put("fs/b/cpu.max", "max 100000\n");
    assert_true(quota() == 1.0);
    put("fs/cpuacct,cpu/c/cpu.cfs_period_us", "0\n");
    assert_true(quota() == 3.0);
    put("fs/cpu/a/cpu.cfs_quota_us", "0\n");
    assert_true(quota() == 0);
    put("fs/cpu/a/cpu.cfs_quota_us", "200000x\n");
    assert_true(quota() == 0);
    put("fs/cpu/a/cpu.cfs_quota_us", "99999999999999999999999\n");
    assert_true(quota() == 0);
    put("fs/cpu/a/cpu.cfs_quota_us", "200000\n");
    put("fs/cpu/a/cpu.cfs_period_us", "\n");
    assert_true(quota() == 0);
    char long_line[PATH_MAX + 64] = "0::/";
    memset(long_line + 4, 'x', PATH_MAX);
    long_line[PATH_MAX + 4] = '\0';
    put("self", long_line);
    assert_true(quota() == 0);
    put("self", "7:cpux,xcpu,cpuacct:/a\n");
    put("fs/cpu/a/cpu.cfs_period_us", "100000\n");
    assert_true(quota() == 0);
}

static void the_default_is_this_machines_cpus_at_most(void **state)
{
    (void)state;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    const char *why = NULL;
    int n = tv_cpus_available(&why);
    assert_true(n >= 1 && n <= CPU_COUNT(&set));
    assert_non_null(why);
    double q = tv_cpus_quota("/proc/self/cgroup", "/sys/fs/cgroup");
    if (q > 0 && q < CPU_COUNT(&set))
        assert_true(n >= q && n < q + 1);
    else
        assert_int_equal(n, CPU_COUNT(&set));
}

int main(void)
{
#define T(name) \
    cmocka_unit_test_setup_teardown(name, tu_setup_dir, tu_teardown_dir)
    const struct CMUnitTest tests[] = {
        T(v2_cpu_max_is_quota_over_period),
        T(v2_max_is_no_quota),
        T(v2_the_tightest_of_the_cgroup_and_its_parents_wins),
        T(a_path_not_mounted_falls_back_to_the_root),
        T(v1_cfs_quota_over_period),
        T(v1_minus_one_is_no_quota),
        T(only_the_cpu_controller_counts_in_v1),
        T(malformed_or_missing_files_are_no_quota),
        T(the_tightest_of_every_line_and_hierarchy_wins),
        cmocka_unit_test(the_default_is_this_machines_cpus_at_most),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
