/* embedbench.c -- core throughput, measured side by side in one run:
 *
 *   gather+add  tokvec_embed of B x S random ids (f32 out, f16 out)
 *   memcpy      of the same number of output bytes (the ceiling)
 *   json        tv_embed_json of that output (floats/s)
 *   init        torch-compatible generation of V x D + C x D (seconds)
 *
 * Usage: embedbench TABLE [B S] [--init V D C]. Prints one table row per
 * measurement; ratios are computed by the caller (bench/run.sh) or read
 * directly. Single-threaded; timing uses CLOCK_MONOTONIC and repeats each
 * measurement for about half a second, keeping the best of 5 rounds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "encode.h"
#include "tokvec_embed.h"
#include "tokvec_init.h"
#include "tokvec_table.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Keeps results observable so the compiler cannot drop the work. */
static volatile unsigned sink;

typedef void (*work_fn)(void *ctx);

/* Best seconds per call over 5 rounds of ~0.1 s each. */
static double time_best(work_fn fn, void *ctx)
{
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        long n = 0;
        double t0 = now(), t;
        do {
            fn(ctx);
            n++;
            t = now();
        } while (t - t0 < 0.1);
        double per = (t - t0) / (double)n;
        if (per < best)
            best = per;
    }
    return best;
}

typedef struct {
    const tokvec_table *t;
    const int64_t *ids;
    int64_t B, S, D;
    unsigned flags;
    void *out;
    const void *src;
    size_t bytes;
    char *json;
} ctx_t;

static void do_embed(void *p)
{
    ctx_t *c = p;
    if (tokvec_embed(c->t, c->ids, c->B, c->S, 0, c->flags, c->out) < 0)
        abort();
    sink += ((unsigned char *)c->out)[c->bytes - 1];
}

static void do_memcpy(void *p)
{
    ctx_t *c = p;
    memcpy(c->out, c->src, c->bytes);
    sink += ((unsigned char *)c->out)[c->bytes - 1];
}

/* The same rows copied out of the map without the add: what the gather
 * alone costs on this machine (random rows of a table bigger than cache). */
static void do_rowcopy(void *p)
{
    ctx_t *c = p;
    size_t rb = (size_t)c->D * 4;
    unsigned char *o = c->out;
    for (int64_t i = 0; i < c->B * c->S; i++) {
        tokvec_row r;
        if (tokvec_table_token_row(c->t, c->ids[i], &r) < 0)
            abort();
        memcpy(o + (size_t)i * rb, r.data, rb);
    }
    sink += o[c->bytes - 1];
}

static void do_json(void *p)
{
    ctx_t *c = p;
    sink += (unsigned)tv_embed_json(c->json, c->src, c->B, c->S, c->D, 0);
}

static int bench_init(int64_t V, int64_t D, int64_t C)
{
    float *tok = malloc((size_t)V * (size_t)D * sizeof *tok);
    float *pos = malloc((size_t)C * (size_t)D * sizeof *pos);
    tokvec_rng *rng = NULL;
    if (!tok || !pos || tokvec_rng_new(123, &rng) < 0) {
        free(tok);
        free(pos);
        return 1;
    }
    double best = 1e30;
    for (int i = 0; i < 3; i++) {
        tokvec_rng_seed(rng, 123);
        double t0 = now();
        if (tokvec_init_embedding(rng, tok, V, D, TOKVEC_NO_PADDING) < 0 ||
            tokvec_init_embedding(rng, pos, C, D, TOKVEC_NO_PADDING) < 0) {
            tokvec_rng_free(rng);
            free(tok);
            free(pos);
            return 1;
        }
        double dt = now() - t0;
        if (dt < best)
            best = dt;
    }
    printf("init %" PRId64 "x%" PRId64 " + %" PRId64 "x%" PRId64 "\t%.4f s\n",
           V, D, C, D, best);
    tokvec_rng_free(rng);
    free(tok);
    free(pos);
    return 0;
}

/* A positive decimal count, or -1. */
static int64_t count_arg(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return errno || end == s || *end || v < 1 ? -1 : (int64_t)v;
}

int main(int argc, char **argv)
{
    static const char usage[] =
        "usage: embedbench TABLE [B S] | --init V D C (positive counts)\n";
    if (argc >= 5 && !strcmp(argv[1], "--init")) {
        int64_t v = count_arg(argv[2]), d = count_arg(argv[3]);
        int64_t ctx = count_arg(argv[4]);
        if (v < 0 || d < 0 || ctx < 0) {
            fputs(usage, stderr);
            return 2;
        }
        return bench_init(v, d, ctx);
    }
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    int64_t B = argc > 3 ? count_arg(argv[2]) : 32;
    int64_t S = argc > 3 ? count_arg(argv[3]) : 128;
    if (B < 0 || S < 0) {
        fputs(usage, stderr);
        return 2;
    }
    char err[256] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_table *t;
    if (tokvec_table_open(argv[1], &o, &t) < 0) {
        fprintf(stderr, "embedbench: %s\n", err);
        return 2;
    }
    const tokvec_table_info *in = tokvec_table_get_info(t);
    int64_t n = B * S, D = in->dim;
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int64_t)(x % (uint64_t)in->vocab_size);
    }
    size_t bytes = tokvec_embed_size(t, B, S, 0);
    ctx_t c = {.t = t, .ids = ids, .B = B, .S = S, .D = D, .bytes = bytes};
    c.out = aligned_alloc(64, (bytes + 63) / 64 * 64);
    void *src = aligned_alloc(64, (bytes + 63) / 64 * 64);
    c.json = malloc(tv_embed_json_bound(B, S, D, 0));
    if (!c.out || !src || !c.json) {
        free(ids);
        free(c.out);
        free(src);
        free(c.json);
        return 1;
    }
    memset(src, 1, bytes);
    c.src = src;

    double t_memcpy = time_best(do_memcpy, &c);
    double t_rows = time_best(do_rowcopy, &c);
    double t_embed = time_best(do_embed, &c);
    c.flags = TOKVEC_EMBED_OUT_F16;
    c.bytes = tokvec_embed_size(t, B, S, c.flags);
    double t_f16 = time_best(do_embed, &c);
    c.flags = 0;
    c.bytes = bytes;
    do_embed(&c); /* real embeddings as JSON input */
    memcpy(src, c.out, bytes);
    double t_json = time_best(do_json, &c);

    double gb = (double)bytes / 1e9;
    printf("workload\t%" PRId64 "x%" PRId64 " dim %" PRId64 " (%s), %zu "
           "output bytes\n",
           B, S, D, tokvec_dtype_name(in->dtype), bytes);
    printf("memcpy\t%.2f GB/s\n", gb / t_memcpy);
    printf("memcpy of the same rows\t%.2f GB/s (gather, no add)\n",
           gb / t_rows);
    printf("embed f32\t%.2f GB/s\t%.0f%% of memcpy, %.0f%% of row copy\n",
           gb / t_embed, 100.0 * t_memcpy / t_embed, 100.0 * t_rows / t_embed);
    printf("embed f16 out\t%.2f GB/s (f32-equivalent)\n", gb / t_f16);
    printf("json\t%.1f M floats/s\n", (double)(n * D) / t_json / 1e6);
    free(ids);
    free(c.out);
    free(src);
    free(c.json);
    tokvec_table_close(t);
    return 0;
}
