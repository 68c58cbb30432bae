/* floatbench.c -- JSON float formatting speed on one core: tokvec's
 * shortest round-trip writer next to snprintf("%.9g") on the same values
 * (normal-distributed, like embeddings; uniformly random bit patterns; and
 * with a TABLE, the values /embed answers from it: token row + position
 * row of random ids, sequences of the table's context length).
 * Single-threaded. Per set of 2^20 values, in one run, alternating rounds
 * of 2^16 values each (the next 2^16 every round), best of ROUNDS: short
 * rounds, so that on a shared machine every variant has the same chance
 * of a round without preemption:
 *   tokvec     tokvec_f32_format, one call per value
 *   json       tokvec_f32_format_json, one call per row of 768 values (the
 *              table set: of the table's dim; what the server's JSON
 *              writer does), commas included; AVX-512 where the CPU has it
 *   json_scalar  the same through tokvec_f32_format_json_scalar, the
 *              portable path
 *   before     the formatter tokvec_f32_format replaced (tests/float_ref.h)
 *   snprintf   snprintf("%.9g"), not the same text (not the shortest)
 * Prints floats/s for each and the ratios. The first line of each set
 * keeps the form bench/loadbench.py reads ("tokvec N M/s<TAB>snprintf
 * %.9g N M/s").
 *
 *   floatbench [ROUNDS [TABLE]]        the timings (default 64 rounds)
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
#include "tokvec_embed.h"
#include "tokvec_float.h"
#include "tokvec_table.h"

#define N (1 << 20)
#define CHUNK (1 << 16) /* values per round */
#define ROW 768         /* json values per call, but for the table set */
#define ROW_MAX 4096    /* the table set: its dim, at most this */

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
static size_t pass(int variant, const float *v, size_t n, size_t row)
{
    static char buf[ROW_MAX * (TOKVEC_F32_MAXLEN + 1)];
    size_t total = 0;
    switch (variant) {
    case V_TOKVEC:
        for (size_t i = 0; i < n; i++)
            total += tokvec_f32_format(v[i], buf);
        break;
    case V_JSON:
        for (size_t i = 0; i < n; i += row)
            total += tokvec_f32_format_json(buf, v + i,
                                            n - i < row ? n - i : row);
        break;
    case V_JSON_SCALAR:
        for (size_t i = 0; i < n; i += row)
            total += tokvec_f32_format_json_scalar(buf, v + i,
                                                   n - i < row ? n - i : row);
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

/* N values of what /embed answers from the table at path: random ids in
 * sequences of the context length (of N / dim tokens without positions),
 * token row + position row. 0, or 1 after saying why. */
static int make_table_set(const char *path, float *out, size_t *row)
{
    char err[256] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_table *t;
    if (tokvec_table_open(path, &o, &t) < 0) {
        fprintf(stderr, "floatbench: %s\n", err);
        return 1;
    }
    const tokvec_table_info *in = tokvec_table_get_info(t);
    int64_t tokens = (N + in->dim - 1) / in->dim;
    int64_t S = in->context_length > 0 && in->context_length < tokens
                    ? in->context_length
                    : tokens;
    int64_t B = (tokens + S - 1) / S;
    int64_t *ids = malloc((size_t)(B * S) * sizeof *ids);
    float *all = malloc((size_t)(B * S * in->dim) * sizeof *all);
    int rc = !ids || !all;
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; !rc && i < B * S; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int64_t)(x % (uint64_t)in->vocab_size);
    }
    if (!rc && tokvec_embed(t, ids, B, S, 0, 0, all) < 0) {
        fprintf(stderr, "floatbench: %s: cannot embed\n", path);
        rc = 1;
    }
    if (!rc)
        memcpy(out, all, N * sizeof *out);
    *row = in->dim < ROW_MAX ? (size_t)in->dim : ROW_MAX;
    free(ids);
    free(all);
    tokvec_table_close(t);
    return rc;
}

int main(int argc, char **argv)
{
    float *normal = malloc(N * sizeof *normal), *bits = malloc(N * 4);
    float *table = malloc(N * sizeof *table);
    int nsets = argc > 2 && strcmp(argv[1], "--pass") ? 3 : 2;
    size_t rows[3] = {ROW, ROW, ROW};
    if (!normal || !bits || !table ||
        (nsets == 3 && make_table_set(argv[2], table, &rows[2]))) {
        free(normal);
        free(bits);
        free(table);
        return 1;
    }
    make_sets(normal, bits);
    if (argc == 4 && !strcmp(argv[1], "--pass")) {
        float *set = !strcmp(argv[3], "bits") ? bits : normal;
        for (int v = 0; v < NV; v++)
            if (!strcmp(argv[2], vname[v]))
                sink += pass(v, set, N, ROW);
        printf("%s over %s: %zu bytes\n", argv[2], argv[3], (size_t)sink);
        free(normal);
        free(bits);
        free(table);
        return 0;
    }
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 64;
    if (rounds < 1)
        rounds = 1;
    const char *names[3] = {"normal(0,1)", "random bits", "table"};
    float *sets[3] = {normal, bits, table};
    for (int s = 0; s < nsets; s++) {
        double best[NV] = {0};
        for (long round = 0; round < rounds; round++) {
            const float *part = sets[s] +
                                (size_t)(round % (N / CHUNK)) * CHUNK;
            for (int v = 0; v < NV; v++) {
                /* snprintf is ~30x slower: a sixteenth of the values */
                size_t n = v == V_SNPRINTF ? CHUNK / 16 : CHUNK;
                double t0 = now();
                sink += pass(v, part, n, rows[s]);
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
               best[V_TOKVEC] / best[V_BEFORE], (int)rows[s],
               best[V_JSON] / 1e6, best[V_JSON] / best[V_BEFORE],
               best[V_JSON_SCALAR] / 1e6,
               best[V_JSON_SCALAR] / best[V_BEFORE]);
    }
    free(normal);
    free(bits);
    free(table);
    return 0;
}
