/* quantbench.c -- the cost of a GGUF row by ggml type: each row of a token
 * table is dequantized (or widened) on lookup, never copied at open, so
 * this is what a lookup pays per row over float32.
 *
 *   row    tokvec_table_token_row + tokvec_row_to_f32 of random ids
 *          (ns per row, and output GB/s of float32)
 *   embed  tokvec_embed of 32 x 128 random ids, no positions, float32 out
 *          (ns per row)
 *
 * Usage: quantbench [DIM...] (default 768 4096). For each dim and type it
 * writes a GGUF file of 4096 random rows (finite float16 scales) to
 * $TMPDIR, opens it as tokvec serve would and times it: best of 5 rounds
 * of ~0.1 s, one core, CLOCK_MONOTONIC. The table stays mapped: rows that
 * miss the cache cost their memory traffic too, as in serving.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tokvec_embed.h"
#include "tokvec_table.h"

#define ROWS 4096

static const struct {
    const char *name;
    unsigned id, block, bytes, scale_at[2];
} types[] = {
    {"F32", 0, 1, 4, {99, 99}},        {"F16", 1, 1, 2, {99, 99}},
    {"BF16", 30, 1, 2, {99, 99}},      {"Q8_0", 8, 32, 34, {0, 99}},
    {"Q4_0", 2, 32, 18, {0, 99}},      {"Q4_1", 3, 32, 20, {0, 2}},
    {"Q5_0", 6, 32, 22, {0, 99}},      {"Q5_1", 7, 32, 24, {0, 2}},
    {"Q4_K", 12, 256, 144, {0, 2}},    {"Q5_K", 13, 256, 176, {0, 2}},
    {"Q6_K", 14, 256, 210, {208, 99}},
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile float sink;

static void le(FILE *f, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        fputc((int)(v >> (8 * i) & 0xff), f);
}

/* A GGUF v3 file with token_embd.weight: ROWS x dim of type k. */
static int write_gguf(const char *path, size_t k, int64_t dim)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fwrite("GGUF", 1, 4, f);
    le(f, 3, 4);
    le(f, 1, 8); /* tensors */
    le(f, 0, 8); /* metadata */
    le(f, 17, 8);
    fwrite("token_embd.weight", 1, 17, f);
    le(f, 2, 4);
    le(f, (uint64_t)dim, 8);
    le(f, ROWS, 8);
    le(f, types[k].id, 4);
    le(f, 0, 8);
    long at = ftell(f);
    for (; at % 32; at++)
        fputc(0, f);
    size_t nb = (size_t)dim / types[k].block * ROWS, bs = types[k].bytes;
    unsigned char blk[256];
    unsigned x = 12345;
    for (size_t b = 0; b < nb; b++) {
        for (size_t i = 0; i < bs; i++)
            blk[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
        if (types[k].block == 1 && bs > 1) /* finite floats */
            blk[bs - 1] &= 0x3f;
        for (int s = 0; s < 2; s++)
            if (types[k].scale_at[s] < bs) { /* a float16 near 0.01 */
                blk[types[k].scale_at[s]] = blk[0];
                blk[types[k].scale_at[s] + 1] = 0x21;
            }
        fwrite(blk, 1, bs, f);
    }
    return fclose(f);
}

typedef struct {
    const tokvec_table *t;
    const int64_t *ids;
    float *out;
    int64_t n;
} ctx;

static void rows(ctx *c)
{
    for (int64_t i = 0; i < c->n; i++) {
        tokvec_row r;
        if (tokvec_table_token_row(c->t, c->ids[i], &r) == 0)
            tokvec_row_to_f32(&r, c->out);
    }
    sink = c->out[0];
}

static void embed(ctx *c)
{
    if (tokvec_embed(c->t, c->ids, 32, 128, 0, TOKVEC_EMBED_NO_POSITIONS,
                     c->out) == 0)
        sink = c->out[0];
}

static double best(void (*fn)(ctx *), ctx *c)
{
    double b = 1e30;
    for (int round = 0; round < 5; round++) {
        long n = 0;
        double t0 = now(), t;
        do {
            fn(c);
            n++;
            t = now();
        } while (t - t0 < 0.1);
        if ((t - t0) / (double)n < b)
            b = (t - t0) / (double)n;
    }
    return b;
}

int main(int argc, char **argv)
{
    int64_t dims[8] = {768, 4096};
    int nd = 2;
    if (argc > 1)
        for (nd = 0; nd < argc - 1 && nd < 8; nd++)
            dims[nd] = strtoll(argv[nd + 1], NULL, 10);
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int64_t *ids = malloc(32 * 128 * sizeof *ids);
    if (!ids)
        return 1;
    unsigned x = 7;
    for (int i = 0; i < 32 * 128; i++)
        ids[i] = (x = x * 1103515245u + 12345u) >> 8 & (ROWS - 1);
    printf("type\tdim\tbytes/row\trow ns\trow GB/s out\tembed ns/row\n");
    for (int d = 0; d < nd; d++) {
        size_t out_bytes = (size_t)dims[d] * 32 * 128 * 4;
        float *out = aligned_alloc(64, out_bytes);
        if (!out)
            return 1;
        memset(out, 0, out_bytes); /* faulted in before the timing */
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            char path[512];
            snprintf(path, sizeof path, "%s/quantbench-%d.gguf", tmp,
                     (int)getpid());
            tokvec_table *t;
            char err[256] = "";
            tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
            if (write_gguf(path, k, dims[d]) ||
                tokvec_table_open(path, &o, &t)) {
                fprintf(stderr, "quantbench: %s: %s\n", types[k].name, err);
                return 1;
            }
            ctx c = {t, ids, out, 32 * 128};
            double r = best(rows, &c) / (double)c.n;
            double e = best(embed, &c) / (double)c.n;
            printf("%s\t%" PRId64 "\t%zu\t%.0f\t%.1f\t%.0f\n", types[k].name,
                   dims[d], (size_t)dims[d] / types[k].block * types[k].bytes,
                   r * 1e9, (double)dims[d] * 4 / r * 1e-9, e * 1e9);
            tokvec_table_close(t);
            unlink(path);
        }
        free(out);
    }
    free(ids);
    return 0;
}
