/* cpus.h -- how many CPUs this process may use (the default of --threads).
 *
 * The CPUs it may run on (sched_getaffinity: a cpuset, taskset, docker
 * --cpuset-cpus) capped by the CPU quota of its cgroup and of the cgroups
 * above it (cgroup v2 cpu.max; v1 cpu.cfs_quota_us / cpu.cfs_period_us:
 * docker --cpus, a Kubernetes CPU limit), rounded up: a quota of 1.5 CPUs
 * is 2 threads. Reads files only; any thread, at start-up.
 */
#ifndef TV_CPUS_H
#define TV_CPUS_H

/* The quota in CPUs of the cgroup that /proc/self/cgroup (proc_cgroup)
 * names, under the cgroup file systems mounted at cgroup_root (v2 there,
 * or v1's cpu controller in cgroup_root/cpu or cgroup_root/cpu,cpuacct):
 * the smallest of that cgroup's and its ancestors' that are set, or 0 for
 * none (unlimited, or no cgroup files to read). Paths are parameters for
 * the tests; tv_cpus_available passes the real ones. */
double tv_cpus_quota(const char *proc_cgroup, const char *cgroup_root);

/* min(affinity CPUs, ceil(quota)), at least 1. why (may be NULL) is set to
 * "cgroup quota" when the quota gives fewer, else "cores". */
int tv_cpus_available(const char **why);

#endif
