/* floatbench.c -- JSON float formatting speed on one core: tokvec's
 * shortest round-trip writer next to snprintf("%.9g") on the same values
 * (normal-distributed, like embeddings; and uniformly random bit patterns).
 * Single-threaded. Per set of 2^20 values, in one run, alternating rounds
 * of 2^16 values each (the next 2^16 every round), best of ROUNDS: short
 * rounds, so that on a shared machine every variant has the same chance
 * of a round without preemption:
 *   tokvec     tokvec_f32_format, one call per value
 *   json       tokvec_f32_format_json, one call per row of 768 values (what
 *              the server's JSON writer does), commas included; AVX-512
 *              where the CPU has it
 *   json_scalar  the same through tokvec_f32_format_json_scalar, the
 *              portable path
 *   before     the formatter tokvec_f32_format replaced (tests/float_ref.h)
 *   snprintf   snprintf("%.9g"), not the same text (not the shortest)
 * Prints floats/s for each and the ratios. The first line of each set
 * keeps the form bench/loadbench.py reads ("tokvec N M/s<TAB>snprintf
 * %.9g N M/s").
 *
 *   floatbench [ROUNDS]                the timings (default 64 rounds)
 *   floatbench --pass VARIANT SET      one pass of one variant (none,
 *                                      tokvec, json, before, snprintf) over
 *                                      one set (normal, bits), for
 *                                      instruction counts: run it under
 *                                      valgrind --tool=callgrind with
 *                                      VARIANT and with none, subtract,
 *                                      divide by 2^20
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/float_ref.h"
#include "tokvec_float.h"

#define N (1 << 20)
#define CHUNK (1 << 16) /* values per round */
#define ROW 768

enum { V_TOKVEC, V_JSON, V_JSON_SCALAR, V_BEFORE, V_SNPRINTF, NV };
static const char *const vname[NV] = {"tokvec", "json", "json_scalar",
                                      "before", "snprintf"};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile size_t sink;

/* One pass of variant over the n values of v; the bytes written. */
static size_t pass(int variant, const float *v, size_t n)
{
    static char buf[ROW * (TOKVEC_F32_MAXLEN + 1)];
    size_t total = 0;
    switch (variant) {
    case V_TOKVEC:
        for (size_t i = 0; i < n; i++)
            total += tokvec_f32_format(v[i], buf);
        break;
    case V_JSON:
        for (size_t i = 0; i < n; i += ROW)
            total += tokvec_f32_format_json(buf, v + i,
                                            n - i < ROW ? n - i : ROW);
        break;
    case V_JSON_SCALAR:
        for (size_t i = 0; i < n; i += ROW)
            total += tokvec_f32_format_json_scalar(buf, v + i,
                                                   n - i < ROW ? n - i : ROW);
        break;
    case V_BEFORE:
        for (size_t i = 0; i < n; i++)
            total += ref_f32_format(v[i], buf);
        break;
    default:
        for (size_t i = 0; i < n; i++)
            total += (size_t)snprintf(buf, sizeof buf, "%.9g", (double)v[i]);
        break;
    }
    return total;
}

static void make_sets(float *normal, float *bits)
{
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u1 = ((double)(x >> 11) + 1) * 0x1p-53;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u2 = (double)(x >> 11) * 0x1p-53;
        normal[i] = (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
        uint32_t b = (uint32_t)x;
        if ((b & 0x7f800000u) == 0x7f800000u)
            b &= 0xbfffffffu; /* keep it finite */
        memcpy(&bits[i], &b, 4);
    }
}

int main(int argc, char **argv)
{
    float *normal = malloc(N * sizeof *normal), *bits = malloc(N * 4);
    if (!normal || !bits) {
        free(normal);
        free(bits);
        return 1;
    }
    make_sets(normal, bits);
    if (argc == 4 && !strcmp(argv[1], "--pass")) {
        float *set = !strcmp(argv[3], "bits") ? bits : normal;
        for (int v = 0; v < NV; v++)
            if (!strcmp(argv[2], vname[v]))
                sink += pass(v, set, N);
        printf("%s over %s: %zu bytes\n", argv[2], argv[3], (size_t)sink);
        free(normal);
        free(bits);
        return 0;
    }
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 64;
    if (rounds < 1)
        rounds = 1;
    const char *names[2] = {"normal(0,1)", "random bits"};
    float *sets[2] = {normal, bits};
    for (int s = 0; s < 2; s++) {
        double best[NV] = {0};
        for (long round = 0; round < rounds; round++) {
            const float *part = sets[s] +
                                (size_t)(round % (N / CHUNK)) * CHUNK;
            for (int v = 0; v < NV; v++) {
                /* snprintf is ~30x slower: a sixteenth of the values */
                size_t n = v == V_SNPRINTF ? CHUNK / 16 : CHUNK;
                double t0 = now();
                sink += pass(v, part, n);
                double r = (double)n / (now() - t0);
                if (r > best[v])
                    best[v] = r;
            }
        }
        printf("json floats %-12s\ttokvec %.1f M/s\tsnprintf %%.9g %.1f M/s"
               "\tratio %.2fx\n",
               names[s], best[V_TOKVEC] / 1e6, best[V_SNPRINTF] / 1e6,
               best[V_TOKVEC] / best[V_SNPRINTF]);
        printf("json floats %-12s\tbefore %.1f M/s\ttokvec %.1f M/s (%.2fx)"
               "\tjson rows of %d %.1f M/s (%.2fx)\tscalar %.1f M/s "
               "(%.2fx)\n",
               names[s], best[V_BEFORE] / 1e6, best[V_TOKVEC] / 1e6,
               best[V_TOKVEC] / best[V_BEFORE], ROW, best[V_JSON] / 1e6,
               best[V_JSON] / best[V_BEFORE], best[V_JSON_SCALAR] / 1e6,
               best[V_JSON_SCALAR] / best[V_BEFORE]);
    }
    free(normal);
    free(bits);
    return 0;
}
