/* check_floats.c -- checks tokvec_f32_format on float32 bit patterns: the
 * text reads back (strtof) as exactly the same bits, and no decimal with
 * one significant digit fewer does (so it is the shortest).
 *
 *   check_floats --all         every one of the 2^32 patterns (all cores)
 *   check_floats --random N    N random patterns
 * Prints progress and the number of failures; exit 1 on any failure.
 * Threads share nothing but an atomic failure counter.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokvec_float.h"

static atomic_ullong failures, checked;

static int sig_digits(const char *t)
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

/* 0 when the pattern passes (non-finite patterns pass trivially). */
static int check(uint32_t bits)
{
    float v, back;
    char got[TOKVEC_F32_MAXLEN + 1], shorter[48];
    memcpy(&v, &bits, 4);
    if (!isfinite(v))
        return 0;
    size_t n = tokvec_f32_format(v, got);
    if (n > TOKVEC_F32_MAXLEN)
        return 1;
    got[n] = '\0';
    back = strtof(got, NULL);
    if (memcmp(&back, &v, 4))
        return 1;
    int k = sig_digits(got);
    if (k > 1) {
        snprintf(shorter, sizeof shorter, "%.*e", k - 2, (double)v);
        back = strtof(shorter, NULL);
        if (!memcmp(&back, &v, 4))
            return 1;
    }
    return 0;
}

typedef struct {
    uint64_t begin, end, step;
    int random, report;
} range_t;

static void *run(void *arg)
{
    range_t *r = arg;
    uint64_t x = 0x9E3779B97F4A7C15ull ^ r->begin, local = 0;
    for (uint64_t i = r->begin; i < r->end; i += r->step) {
        uint32_t bits;
        if (r->random) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            bits = (uint32_t)x;
        } else {
            bits = (uint32_t)i;
        }
        if (check(bits)) {
            if (atomic_fetch_add(&failures, 1) < 10)
                fprintf(stderr, "FAIL %08x\n", bits);
        }
        if (++local == 1u << 20) {
            unsigned long long c = atomic_fetch_add(&checked, local) + local;
            local = 0;
            if (r->report && (c >> 20) % 256 == 0)
                fprintf(stderr, "\r%llu M checked, %llu failures", c >> 20,
                        (unsigned long long)atomic_load(&failures));
        }
    }
    atomic_fetch_add(&checked, local);
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t total;
    int random;
    if (argc == 2 && !strcmp(argv[1], "--all")) {
        total = UINT64_C(1) << 32;
        random = 0;
    } else if (argc == 3 && !strcmp(argv[1], "--random")) {
        total = strtoull(argv[2], NULL, 10);
        random = 1;
    } else {
        fprintf(stderr, "usage: check_floats --all | --random N\n");
        return 2;
    }
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1)
        nt = 1;
    if (nt > 64)
        nt = 64;
    pthread_t th[64];
    range_t r[64];
    for (long t = 0; t < nt; t++) {
        /* Interleaved so every thread sees every magnitude. */
        r[t] = (range_t){(uint64_t)t, total, (uint64_t)nt, random,
                         isatty(2) && t == 0};
        pthread_create(&th[t], NULL, run, &r[t]);
    }
    for (long t = 0; t < nt; t++)
        pthread_join(th[t], NULL);
    unsigned long long f = atomic_load(&failures);
    printf("%s%llu patterns checked, %llu failures\n", isatty(2) ? "\n" : "",
           (unsigned long long)atomic_load(&checked), f);
    return f ? 1 : 0;
}
