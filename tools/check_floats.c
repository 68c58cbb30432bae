/* check_floats.c -- checks tokvec_f32_format on float32 bit patterns
 * against glibc's exact printf/strtof, independently of the formatter's
 * algorithm: the text reads back as exactly the same bits, no decimal with
 * one significant digit fewer does (shortest), it is the nearest such
 * decimal when several are shortest, and it switches to scientific
 * notation exactly where numpy does.
 *
 *   check_floats --all         every one of the 2^32 patterns (all cores)
 *   check_floats --random N    N random patterns (xorshift, fixed seed)
 *   check_floats --narrow      every pattern through the bulk float16 and
 *                              bfloat16 narrowing (tokvec_narrow, vector
 *                              path), against the scalar functions
 * Prints progress (on a terminal) and the number of failures; exit 1 on any
 * failure. Threads share nothing but two atomic counters.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/testutil.h"
#include "tokvec_float.h"

static atomic_ullong failures, checked;

static const char *check(uint32_t bits, char *got)
{
    float v;
    memcpy(&v, &bits, 4);
    got[0] = '\0';
    if (!isfinite(v))
        return NULL;
    size_t n = tokvec_f32_format(v, got);
    if (n > TOKVEC_F32_MAXLEN)
        return "too long";
    got[n] = '\0';
    return tu_verify_text(v, got);
}

typedef struct {
    uint64_t begin, end, step;
    int random, report, narrow;
} range_t;

/* Thread t of nt: blocks of 2^16 consecutive patterns (every 2^16-th
 * block), each narrowed in bulk at an odd byte offset and compared with
 * the scalar conversion. */
static void *run_narrow(void *arg)
{
    range_t *r = arg;
    enum { BLK = 1 << 16 };
    static _Thread_local float src[BLK];
    static _Thread_local unsigned char out[2 * BLK + 1];
    for (uint64_t blk = r->begin; blk < r->end; blk += r->step) {
        for (uint32_t j = 0; j < BLK; j++) {
            uint32_t b = (uint32_t)(blk * BLK + j);
            memcpy(&src[j], &b, 4);
        }
        for (int d = 0; d < 2; d++) {
            tokvec_dtype dt = d ? TOKVEC_BF16 : TOKVEC_F16;
            tokvec_narrow(dt, src, out + 1, BLK);
            for (uint32_t j = 0; j < BLK; j++) {
                uint16_t want = d ? tokvec_f32_to_bf16(src[j])
                                  : tokvec_f32_to_f16(src[j]);
                uint16_t got = (uint16_t)(out[1 + 2 * j] |
                                          (out[2 + 2 * j] << 8));
                if (got != want && atomic_fetch_add(&failures, 1) < 20)
                    fprintf(stderr, "FAIL %s of %08x: %04x, scalar %04x\n",
                            tokvec_dtype_name(dt), (uint32_t)(blk * BLK + j),
                            got, want);
            }
        }
        atomic_fetch_add(&checked, BLK);
    }
    return NULL;
}

static void *run(void *arg)
{
    range_t *r = arg;
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (r->begin * 0xD1B54A32D192ED03ull);
    uint64_t local = 0;
    char got[64];
    for (uint64_t i = r->begin; i < r->end; i += r->step) {
        uint32_t bits;
        if (r->random) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            bits = (uint32_t)(x >> 16);
        } else {
            bits = (uint32_t)i;
        }
        const char *why = check(bits, got);
        if (why && atomic_fetch_add(&failures, 1) < 20)
            fprintf(stderr, "FAIL %08x \"%s\": %s\n", bits, got, why);
        if (++local == 1u << 20) {
            unsigned long long c = atomic_fetch_add(&checked, local) + local;
            local = 0;
            if (r->report && (c >> 20) % 64 == 0)
                fprintf(stderr, "\r%llu M of %llu M checked, %llu failures",
                        c >> 20, (unsigned long long)(r->end >> 20),
                        (unsigned long long)atomic_load(&failures));
        }
    }
    atomic_fetch_add(&checked, local);
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t total;
    int random, narrow = 0;
    if (argc == 2 && !strcmp(argv[1], "--all")) {
        total = UINT64_C(1) << 32;
        random = 0;
    } else if (argc == 2 && !strcmp(argv[1], "--narrow")) {
        total = UINT64_C(1) << 16; /* blocks of 2^16 patterns */
        random = 0;
        narrow = 1;
    } else if (argc == 3 && !strcmp(argv[1], "--random")) {
        total = strtoull(argv[2], NULL, 10);
        random = 1;
    } else {
        fprintf(stderr, "usage: check_floats --all | --random N | --narrow\n");
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
        r[t] = (range_t){(uint64_t)t,         total, (uint64_t)nt, random,
                         isatty(2) && t == 0, narrow};
        if (pthread_create(&th[t], NULL, narrow ? run_narrow : run, &r[t])) {
            fprintf(stderr, "check_floats: cannot start a thread\n");
            return 2;
        }
    }
    for (long t = 0; t < nt; t++)
        pthread_join(th[t], NULL);
    unsigned long long f = atomic_load(&failures);
    printf("%s%llu patterns checked, %llu failures\n", isatty(2) ? "\n" : "",
           (unsigned long long)atomic_load(&checked), f);
    return f ? 1 : 0;
}
