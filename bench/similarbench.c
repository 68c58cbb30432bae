/* similarbench.c -- time of one nearest-token query (tokvec_similar.h) on a
 * table: the norms computed once (first query), then the median and best
 * of N queries with k = 10, beside two scans written here for comparison:
 * a naive one in double (dot and norm of every row, one accumulator) and
 * one in float lanes that computes each row's norm as it goes instead of
 * using the precomputed ones (is precomputing worth it?).
 * Usage: similarbench TABLE [QUERIES]. One thread; float32 tables for the
 * comparison scans (others: the index only).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokvec_similar.h"
#include "tokvec_table.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Best row by a naive double-precision cosine; returns the seconds. */
static double naive(const tokvec_table *t, const float *q, int64_t *best)
{
    const tokvec_table_info *in = tokvec_table_get_info(t);
    double t0 = now(), top = -2;
    for (int64_t r = 0; r < in->vocab_size; r++) {
        tokvec_row row;
        if (tokvec_table_token_row(t, r, &row) < 0)
            exit(1);
        const float *v = row.data;
        double qr = 0, rr = 0;
        for (int64_t i = 0; i < in->dim; i++) {
            qr += (double)q[i] * v[i];
            rr += (double)v[i] * v[i];
        }
        double c = rr > 0 ? qr / sqrt(rr) : 0;
        if (c > top) {
            top = c;
            *best = r;
        }
    }
    return now() - t0;
}

/* The same in 16 float lanes, each row's norm computed on the way. */
static double fused(const tokvec_table *t, const float *q, int64_t *best)
{
    const tokvec_table_info *in = tokvec_table_get_info(t);
    size_t n = (size_t)in->dim;
    double t0 = now();
    float top = -2;
    for (int64_t r = 0; r < in->vocab_size; r++) {
        tokvec_row row;
        if (tokvec_table_token_row(t, r, &row) < 0)
            exit(1);
        const float *v = row.data;
        float a[16] = {0}, b[16] = {0};
        size_t i = 0;
        for (; i + 16 <= n; i += 16)
            for (size_t j = 0; j < 16; j++) {
                a[j] += q[i + j] * v[i + j];
                b[j] += v[i + j] * v[i + j];
            }
        for (size_t j = 1; j < 16; j++) {
            a[0] += a[j];
            b[0] += b[j];
        }
        float c = b[0] > 0 ? a[0] / sqrtf(b[0]) : 0;
        if (c > top) {
            top = c;
            *best = r;
        }
    }
    return now() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: similarbench TABLE [QUERIES]\n");
        return 2;
    }
    long nq_arg = argc > 2 ? strtol(argv[2], NULL, 10) : 30;
    int nq = nq_arg < 1 ? 1 : nq_arg > 1000000 ? 1000000 : (int)nq_arg;
    char err[512] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_table *t;
    if (tokvec_table_open(argv[1], &o, &t) < 0) {
        fprintf(stderr, "similarbench: %s\n", err);
        return 1;
    }
    const tokvec_table_info *in = tokvec_table_get_info(t);
    tokvec_similar *s;
    if (tokvec_similar_open(t, &s) < 0)
        return 1;
    double t0 = now();
    if (tokvec_similar_prepare(s) < 0)
        return 1;
    double prep = now() - t0;
    double *ts = malloc((size_t)nq * sizeof *ts);
    tokvec_neighbor out[10];
    if (!ts)
        return 1;
    for (int i = 0; i < nq; i++) {
        int64_t id = (int64_t)i * 7919 % in->vocab_size;
        t0 = now();
        if (tokvec_similar_token(s, id, 10, out) < 0) {
            free(ts);
            return 1;
        }
        ts[i] = now() - t0;
    }
    qsort(ts, (size_t)nq, sizeof *ts, cmp);
    printf("similar %lldx%lld %s: norms once %.1f ms; query k=10: "
           "median %.2f ms, best %.2f ms (%d queries)\n",
           (long long)in->vocab_size, (long long)in->dim,
           tokvec_dtype_name(in->dtype), prep * 1e3, ts[nq / 2] * 1e3,
           ts[0] * 1e3, nq);
    tokvec_row row;
    if (in->dtype == TOKVEC_F32 && tokvec_table_token_row(t, 42, &row) == 0 &&
        ((uintptr_t)row.data & 3) == 0) {
        float *q = malloc((size_t)in->dim * sizeof *q);
        if (!q)
            return 1;
        tokvec_row_to_f32(&row, q);
        int64_t b1 = -1, b2 = -1;
        double tn = 1e30, tf = 1e30;
        for (int i = 0; i < 3; i++) {
            double a = naive(t, q, &b1), b = fused(t, q, &b2);
            tn = a < tn ? a : tn;
            tf = b < tf ? b : tf;
        }
        if (tokvec_similar_token(s, 42, 1, out) < 0)
            out[0].id = -1;
        printf("  comparison scans (best of 3): naive double %.2f ms, "
               "float lanes with norms on the fly %.2f ms (best ids %lld "
               "%lld, index %lld)\n",
               tn * 1e3, tf * 1e3, (long long)b1, (long long)b2,
               (long long)out[0].id);
        free(q);
    }
    free(ts);
    tokvec_similar_close(s);
    tokvec_table_close(t);
    return 0;
}
