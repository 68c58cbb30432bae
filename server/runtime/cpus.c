/* cpus.c -- how many CPUs this process may use (cpus.h).
 *
 * A container limited with `docker run --cpus 2` or a Kubernetes CPU limit
 * still sees every core of the host in sysconf and sched_getaffinity; what
 * limits it is the CFS quota of its cgroup. Like Go's and the JVM's
 * runtimes, the default worker count reads that quota: cgroup v2's cpu.max
 * ("max 100000" or "QUOTA PERIOD") or v1's cpu.cfs_quota_us (-1: none) and
 * cpu.cfs_period_us, on the process's cgroup (from /proc/self/cgroup) and
 * every ancestor up to the mount, the smallest set one winning. A path
 * that is not there (a container that sees its own cgroup at the mount's
 * root under a longer name) is skipped, so the walk ends at the root that
 * is. Files only, no state: any thread.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpus.h"

/* The smaller of two quotas, 0 meaning none. */
static double tighter(double a, double b)
{
    return a <= 0 ? b : b <= 0 || a < b ? a : b;
}

/* The first line of dir/name into buf; 0, or -1 if it cannot be read. */
static int read_first(const char *dir, const char *name, char *buf,
                      size_t size)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    return ok ? 0 : -1;
}

/* A decimal at *p (leading blanks skipped) ending in a blank or the end;
 * *p moves past it. 0, or -1 ("max", anything else). */
static int decimal(const char **p, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(*p, &end, 10);
    if (end == *p || errno || (*end && !strchr(" \t\n", *end)))
        return -1;
    *p = end;
    return 0;
}

/* cgroup v2: "QUOTA PERIOD" in cpu.max; "max ..." is no quota. */
static double quota_v2(const char *dir)
{
    char buf[64];
    long long quota, period;
    const char *p = buf;
    if (read_first(dir, "cpu.max", buf, sizeof buf) < 0 ||
        decimal(&p, &quota) < 0 || decimal(&p, &period) < 0 || quota <= 0 ||
        period <= 0)
        return 0;
    return (double)quota / (double)period;
}

/* cgroup v1: cpu.cfs_quota_us (-1 is none) over cpu.cfs_period_us. */
static double quota_v1(const char *dir)
{
    char q[32], t[32];
    long long quota, period;
    const char *pq = q, *pt = t;
    if (read_first(dir, "cpu.cfs_quota_us", q, sizeof q) < 0 ||
        read_first(dir, "cpu.cfs_period_us", t, sizeof t) < 0 ||
        decimal(&pq, &quota) < 0 || decimal(&pt, &period) < 0 || quota <= 0 ||
        period <= 0)
        return 0;
    return (double)quota / (double)period;
}

/* The tightest quota on base+path and each parent directory up to base. */
static double walk(const char *base, const char *path,
                   double (*quota)(const char *dir))
{
    char dir[PATH_MAX];
    int n = snprintf(dir, sizeof dir, "%s%s", base, path);
    if (n < 0 || (size_t)n >= sizeof dir)
        return 0;
    size_t root = strlen(base), len = (size_t)n;
    double best = 0;
    for (;;) {
        while (len > root && dir[len - 1] == '/')
            dir[--len] = '\0';
        best = tighter(best, quota(dir));
        char *slash = len > root ? strrchr(dir + root, '/') : NULL;
        if (!slash)
            return best;
        *slash = '\0';
        len = (size_t)(slash - dir);
    }
}

/* Whether the comma-separated list of v1 controllers holds "cpu". */
static int has_cpu(const char *list)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 3 && !strncmp(p, "cpu", 3))
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

double tv_cpus_quota(const char *proc_cgroup, const char *cgroup_root)
{
    static const char *const v1_dirs[] = {"cpu", "cpu,cpuacct", "cpuacct,cpu"};
    FILE *f = fopen(proc_cgroup, "re");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    double best = 0;
    for (;;) {
        ssize_t n = getline(&line, &cap, f);
        if (n < 0)
            break;
        line[strcspn(line, "\n")] = '\0';
        /* "ID:CONTROLLERS:PATH"; v2 is "0::PATH" */
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/')
            continue;
        *c1 = *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (!strcmp(line, "0") && !*ctrls) {
            best = tighter(best, walk(cgroup_root, path, quota_v2));
        } else if (has_cpu(ctrls)) {
            for (size_t i = 0; i < sizeof v1_dirs / sizeof v1_dirs[0]; i++) {
                char base[PATH_MAX];
                int m = snprintf(base, sizeof base, "%s/%s", cgroup_root,
                                 v1_dirs[i]);
                if (m > 0 && (size_t)m < sizeof base)
                    best = tighter(best, walk(base, path, quota_v1));
            }
        }
    }
    free(line);
    fclose(f);
    return best;
}

int tv_cpus_available(const char **why)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    double q = tv_cpus_quota("/proc/self/cgroup", "/sys/fs/cgroup");
    /* rounded up: 1.5 CPUs, 2; never above n, since q < n */
    int up = q > 0 && q < n ? (int)q + ((int)q < q) : n;
    if (why)
        *why = up < n ? "cgroup quota" : "cores";
    return up;
}
