/* testutil.h -- helpers shared by the C tests (tests/test_*.c) and the
 * float checker (tools/check_floats.c): a temporary directory per test
 * program, temporary files, opening a table with an error buffer, and
 * the independent check of a float32's
 * shortest text. libc only (no cmocka): failures are return values that
 * the caller asserts on.
 *
 * Threads: the directory helpers are for the main thread of a test
 * program (tu_dir is one static buffer); tu_verify_text and its helpers
 * are pure and may run on any thread (check_floats runs them on all).
 */
#ifndef TV_TESTUTIL_H
#define TV_TESTUTIL_H

#include <errno.h> /* program_invocation_short_name (GNU) */
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokvec_table.h"

/* --- a temporary directory per test program --------------------------- */

/* The directory tu_make_dir made: /tmp/tokvec-<program>-XXXXXX. */
static char tu_dir[64];

/* Makes tu_dir. 0, or -1 (errno set). */
static inline int tu_make_dir(void)
{
    snprintf(tu_dir, sizeof tu_dir, "/tmp/tokvec-%s-XXXXXX",
             program_invocation_short_name);
    return mkdtemp(tu_dir) ? 0 : -1;
}

static inline int tu_unlink_one(const char *path, const struct stat *st,
                                int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes tu_dir and everything in it (no shell). 0, or -1. */
static inline int tu_remove_dir(void)
{
    if (!tu_dir[0])
        return 0;
    int rc = nftw(tu_dir, tu_unlink_one, 16, FTW_DEPTH | FTW_PHYS);
    tu_dir[0] = '\0';
    return rc;
}

/* cmocka group setup / teardown that make and remove tu_dir. */
static inline int tu_setup_dir(void **state)
{
    (void)state;
    return tu_make_dir();
}

static inline int tu_teardown_dir(void **state)
{
    (void)state;
    return tu_remove_dir();
}

/* A new temporary file /tmp/tokvec-<program>-XXXXXX holding text; its
 * malloc'd path (free it after unlink), or NULL. */
static inline char *tu_temp_file(const char *text)
{
    char *path = malloc(256);
    if (!path)
        return NULL;
    snprintf(path, 256, "/tmp/tokvec-%s-XXXXXX",
             program_invocation_short_name);
    int fd = mkstemp(path);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    close(fd);
    if (w != (ssize_t)n) {
        unlink(path);
        free(path);
        return NULL;
    }
    return path;
}

/* --- opening a table ---------------------------------------------------- */

/* tokvec_table_open(p) with base's options (NULL: the defaults) and its
 * error line in err; *t is set to a non-NULL poison first, so a caller can
 * check that a failure leaves it NULL. Returns what the open returned. */
static inline int tu_table_open(const char *p, const tokvec_table_opts *base,
                                char *err, size_t errlen, tokvec_table **t)
{
    tokvec_table_opts o = base ? *base : (tokvec_table_opts){0};
    err[0] = '\0';
    o.errbuf = err;
    o.errlen = errlen;
    *t = (tokvec_table *)1;
    return tokvec_table_open(p, &o, t);
}

/* --- the float32 text checker ----------------------------------------- */

/* Significant digits of a formatted number: leading zeros, the point, the
 * sign, the exponent and trailing zeros do not count ("100.0" has 1). */
static inline int tu_sig_digits(const char *t)
{
    int n = 0, started = 0, zeros = 0;
    for (; *t && *t != 'e'; t++) {
        if (*t < '0' || *t > '9')
            continue;
        if (*t == '0' && !started)
            continue;
        started = 1;
        if (*t == '0') {
            zeros++;
        } else {
            n += zeros + 1;
            zeros = 0;
        }
    }
    return n ? n : 1;
}

static inline int tu_reads_back(const char *s, float v)
{
    float b = strtof(s, NULL);
    return !memcmp(&b, &v, 4);
}

/* Whether m * 10^e reads back as v. */
static inline int tu_decimal_reads_back(unsigned long long m, int e, float v)
{
    char s[48];
    snprintf(s, sizeof s, "%llue%d", m, e);
    return tu_reads_back(s, v);
}

/* Checks the text t (NUL-terminated) of a finite float v without using the
 * formatter's algorithm: glibc's exact printf/strtof are the reference.
 *   1. t reads back (strtof) as exactly v;
 *   2. shortest: with k significant digits in t, none of the decimals with
 *      k - 1 digits next to v (the nearest one, correctly rounded by
 *      printf, and its neighbours on both sides) reads back as v;
 *   3. nearest: if the k-digit decimal nearest to v reads back as v, t is
 *      that decimal (numpy/Dragon4 pick the nearest; printf breaks exact
 *      ties to even, as numpy does);
 *   4. spelling: scientific exactly outside [1e-4, 1e16) (in double).
 * Returns NULL when t passes, or what failed. */
static inline const char *tu_verify_text(float v, const char *t)
{
    char s[48];
    if (!tu_reads_back(t, v))
        return "does not read back";
    int k = tu_sig_digits(t);
    if (k > 1) {
        float av = fabsf(v);
        /* m: the k-1 digits of the nearest such decimal, times 10^e. */
        snprintf(s, sizeof s, "%.*e", k - 2, fabs((double)v));
        unsigned long long m = 0, lead = 1;
        const char *p = s;
        for (; *p != 'e'; p++)
            if (*p >= '0' && *p <= '9')
                m = m * 10 + (unsigned long long)(*p - '0');
        int e = atoi(p + 1) - (k - 2);
        for (int i = 0; i < k - 2; i++)
            lead *= 10;
        if (tu_decimal_reads_back(m, e, av) ||
            tu_decimal_reads_back(m + 1, e, av))
            return "not shortest";
        if (m == lead ? tu_decimal_reads_back(10 * m - 1, e - 1, av)
                      : tu_decimal_reads_back(m - 1, e, av))
            return "not shortest";
    }
    snprintf(s, sizeof s, "%.*e", k - 1, (double)v);
    if (tu_reads_back(s, v) && strtod(s, NULL) != strtod(t, NULL))
        return "not the nearest shortest";
    double a = fabs((double)v);
    int sci = strchr(t, 'e') != NULL;
    if (sci != (a != 0 && (a < 1e-4 || a >= 1e16)))
        return "positional/scientific switch";
    return NULL;
}

#endif
