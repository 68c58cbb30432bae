/* embed.c -- the lookup: out[b][s] = tok[ids[b][s]] + pos[start + s].
 *
 * One float32 addition per element, the token value first, as PyTorch's
 * tok_emb(ids) + pos_emb(arange) does. The float32 path over an aligned
 * map reads rows in place and lets the compiler vectorize the add; other
 * dtypes (and unaligned maps) widen chunks of a row into stack scratch,
 * quantized GGUF rows are dequantized a chunk of blocks at a time there,
 * and half-precision outputs narrow the float32 sum (core/float.c's bulk
 * conversions, vectorized).
 * Reads the immutable table only: any number of threads at once.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SCRATCH 1024 /* floats per chunk of a row */

static int out_dtype(unsigned flags, tokvec_dtype *d)
{
    unsigned o = flags & (TOKVEC_EMBED_OUT_F16 | TOKVEC_EMBED_OUT_BF16);
    if (flags & ~(unsigned)(TOKVEC_EMBED_NO_POSITIONS | TOKVEC_EMBED_OUT_F16 |
                            TOKVEC_EMBED_OUT_BF16) ||
        o == (TOKVEC_EMBED_OUT_F16 | TOKVEC_EMBED_OUT_BF16))
        return TOKVEC_E_INVAL;
    *d = o == TOKVEC_EMBED_OUT_F16    ? TOKVEC_F16
         : o == TOKVEC_EMBED_OUT_BF16 ? TOKVEC_BF16
                                      : TOKVEC_F32;
    return 0;
}

size_t tokvec_embed_size(const tokvec_table *t, int64_t B, int64_t S,
                         unsigned flags)
{
    tokvec_dtype d;
    uint64_t n;
    if (B < 1 || S < 1 || out_dtype(flags, &d) < 0 ||
        __builtin_mul_overflow((uint64_t)B, (uint64_t)S, &n) ||
        __builtin_mul_overflow(n, (uint64_t)t->info.dim, &n) ||
        __builtin_mul_overflow(n, (uint64_t)tokvec_dtype_size(d), &n) ||
        n > SIZE_MAX / 2)
        return 0;
    return (size_t)n;
}

static int uses_positions(const tokvec_table *t, unsigned flags)
{
    return !(flags & TOKVEC_EMBED_NO_POSITIONS) &&
           t->info.positional != TOKVEC_POS_NONE;
}

int tokvec_embed_check(const tokvec_table *t, const int64_t *ids, int64_t B,
                       int64_t S, int64_t start_position, unsigned flags,
                       tokvec_embed_fault *fault)
{
    tokvec_embed_fault f = {-1, -1, -1};
    tokvec_dtype d;
    int rc = 0;

    if (!t || !ids || B < 1 || S < 1 || out_dtype(flags, &d) < 0) {
        rc = TOKVEC_E_INVAL;
        goto out;
    }
    if (!tokvec_embed_size(t, B, S, flags)) {
        rc = TOKVEC_E_TOO_LARGE;
        goto out;
    }
    if (uses_positions(t, flags) && !t->pos && !t->sin_pos) {
        /* sinusoidal, opened with TOKVEC_TABLE_SKIP_SINUSOIDAL */
        rc = TOKVEC_E_NO_POSITIONS;
        goto out;
    }
    if (uses_positions(t, flags) &&
        (start_position < 0 || start_position > t->info.context_length ||
         S > t->info.context_length - start_position)) {
        /* The first position outside [0, context_length): its index s
         * within the sequence, and the position itself (start + s). */
        int64_t C = t->info.context_length;
        f.position = start_position < 0 || start_position >= C
                         ? 0
                         : C - start_position;
        f.id = start_position + f.position;
        rc = TOKVEC_E_POSITION_RANGE;
        goto out;
    }
    int64_t V = t->info.vocab_size;
    for (int64_t i = 0; i < B * S; i++) {
        if (ids[i] < 0 || ids[i] >= V) {
            f.batch = i / S;
            f.position = i % S;
            f.id = ids[i];
            rc = TOKVEC_E_TOKEN_RANGE;
            goto out;
        }
    }
out:
    if (fault)
        *fault = f;
    return rc;
}

/* dst[i] = a[i] + b[i], eight lanes at a time so that -O2 vectorizes it
 * (the loop body is one add per element: no reassociation, exact). */
static void add_f32(float *restrict dst, const float *restrict a,
                    const float *restrict b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t k = 0; k < 8; k++)
            dst[i + k] = a[i + k] + b[i + k];
    for (; i < n; i++)
        dst[i] = a[i] + b[i];
}

/* Rows are random: the lookups ask for the row 4 ahead early. */
#define PREFETCH_AHEAD 4

static void prefetch_bytes(const void *p, size_t n)
{
    for (size_t off = 0; off < n; off += 64)
        __builtin_prefetch((const char *)p + off);
}

/* Floats [c, c + k) of a row: in place when the row is aligned float32,
 * else widened (or dequantized) into scratch. A quantized row's chunks
 * are whole blocks: c and k are multiples of SCRATCH or end the row, and
 * SCRATCH and the row length are multiples of the block length. */
static const float *row_chunk(const tokvec_row *r, size_t c, size_t k,
                              float *scratch)
{
    if (r->weighted) { /* Model2Vec: stored * weight, rounded once */
        size_t esz = tokvec_dtype_size(r->dtype);
        tokvec_widen(r->dtype, (const unsigned char *)r->data + c * esz,
                     scratch, k);
        for (size_t i = 0; i < k; i++)
            scratch[i] = (float)((double)scratch[i] * r->weight);
        return scratch;
    }
    if (r->qtype != TOKVEC_Q_NONE) {
        size_t values, bytes;
        (void)tokvec_qtype_block(r->qtype, &values, &bytes);
        tokvec_dequantize(r->qtype,
                          (const unsigned char *)r->data + c / values * bytes,
                          scratch, k);
        return scratch;
    }
    if (r->dtype == TOKVEC_F32 && ((uintptr_t)r->data & 3u) == 0)
        return (const float *)r->data + c;
    size_t esz = tokvec_dtype_size(r->dtype);
    tokvec_widen(r->dtype, (const unsigned char *)r->data + c * esz, scratch,
                 k);
    return scratch;
}

int tokvec_embed(const tokvec_table *t, const int64_t *ids, int64_t B,
                 int64_t S, int64_t start_position, unsigned flags, void *out)
{
    tokvec_dtype od = TOKVEC_F32;
    int rc = tokvec_embed_check(t, ids, B, S, start_position, flags, NULL);
    if (rc < 0)
        return rc;
    (void)out_dtype(flags, &od);
    const size_t D = (size_t)t->info.dim;
    const int pos_on = uses_positions(t, flags);
    const size_t osz = tokvec_dtype_size(od);
    unsigned char *o = out;

    /* Fast path: float32 rows in place, float32 out. */
    if (t->info.dtype == TOKVEC_F32 && t->aligned && od == TOKVEC_F32) {
        float *dst = out;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t s = 0; s < S; s++, dst += D) {
                const float *tr = (const float *)(t->tok +
                                                  (size_t)ids[b * S + s] *
                                                      t->row_bytes);
                if (b * S + s + PREFETCH_AHEAD < B * S)
                    prefetch_bytes(
                        t->tok + (size_t)ids[b * S + s + PREFETCH_AHEAD] *
                                     t->row_bytes,
                        t->row_bytes);
                if (!pos_on) {
                    memcpy(dst, tr, D * 4);
                    continue;
                }
                int64_t p = start_position + s;
                const float *pr =
                    t->sin_pos
                        ? t->sin_pos + (size_t)p * D
                        : (const float *)(t->pos + (size_t)p * t->row_bytes);
                add_f32(dst, tr, pr, D);
            }
        }
        return 0;
    }

    /* General path, a chunk of a row at a time: float32 rows are read in
     * place when aligned, others widened into scratch; the sum goes to
     * scratch and is narrowed (or copied) into out. */
    float tv[SCRATCH], pv[SCRATCH], sv[SCRATCH];
    for (int64_t i = 0; i < B * S; i++) {
        int64_t s = i % S;
        tokvec_row tr, pr;
        /* Ids and positions were checked above: the views cannot fail. */
        int bad = tokvec_table_token_row(t, ids[i], &tr) < 0 ||
                  (pos_on &&
                   tokvec_table_position_row(t, start_position + s, &pr) < 0);
        assert(!bad);
        (void)bad;
        if (i + PREFETCH_AHEAD < B * S) {
            tokvec_row nr;
            if (tokvec_table_token_row(t, ids[i + PREFETCH_AHEAD], &nr) == 0)
                prefetch_bytes(nr.data, nr.nbytes);
        }
        for (size_t c = 0; c < D; c += SCRATCH) {
            size_t k = D - c < SCRATCH ? D - c : SCRATCH;
            const float *tp = row_chunk(&tr, c, k, tv);
            const float *sum = tp;
            if (pos_on) {
                add_f32(sv, tp, row_chunk(&pr, c, k, pv), k);
                sum = sv;
            }
            tokvec_narrow(od, sum, o + ((size_t)i * D + c) * osz, k);
        }
    }
    return 0;
}

/* acc[j] += (double)v[j] for j < n: the same additions in the same
 * order per component as the plain loop, eight components at a time so
 * the compiler's straight-line vectorizer packs them (the plain loop is
 * left scalar at -O2: acc and v might overlap, and n is unknown). */
static void add_widened(double *restrict acc, const float *restrict v,
                        size_t n)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (size_t u = 0; u < 8; u++)
            acc[j + u] += (double)v[j + u];
    for (; j < n; j++)
        acc[j] += (double)v[j];
}

int tokvec_embed_mean(const tokvec_table *t, const int64_t *ids, int64_t n,
                      int64_t start_position, int64_t k, unsigned flags,
                      float *out)
{
    const int64_t D = t ? t->info.dim : 0;
    float scratch[SCRATCH], pscratch[SCRATCH], sum[SCRATCH] = {0};
    if (!t || n < 0 || (n > 0 && !ids) || k < 1 || k > D ||
        (flags & ~(unsigned)(TOKVEC_MEAN_NORMALIZE | TOKVEC_MEAN_POSITIONS)))
        return TOKVEC_E_INVAL;
    int pos_on = (flags & TOKVEC_MEAN_POSITIONS) &&
                 t->info.positional != TOKVEC_POS_NONE;
    if (pos_on && n > 0) {
        if (!t->pos && !t->sin_pos)
            return TOKVEC_E_NO_POSITIONS;
        if (start_position < 0 || start_position > t->info.context_length ||
            n > t->info.context_length - start_position)
            return TOKVEC_E_POSITION_RANGE;
    }
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->info.vocab_size)
            return TOKVEC_E_TOKEN_RANGE;
    double *acc = calloc((size_t)k, sizeof *acc);
    if (!acc)
        return -ENOMEM;
    for (int64_t i = 0; i < n; i++) {
        tokvec_row r = {0}, pr = {0};
        int bad = tokvec_table_token_row(t, ids[i], &r) < 0 ||
                  (pos_on &&
                   tokvec_table_position_row(t, start_position + i, &pr) < 0);
        assert(!bad); /* checked above */
        (void)bad;
        /* Whole chunks of the row (quantized rows: whole blocks), summed
         * as far as k. */
        for (size_t c = 0; c < (size_t)k; c += SCRATCH) {
            size_t len = (size_t)D - c < SCRATCH ? (size_t)D - c : SCRATCH;
            const float *v = row_chunk(&r, c, len, scratch);
            if (pos_on) { /* the float32 sum tokvec_embed gives */
                add_f32(sum, v, row_chunk(&pr, c, len, pscratch), len);
                v = sum;
            }
            size_t use = (size_t)k - c < len ? (size_t)k - c : len;
            add_widened(acc + c, v, use);
        }
    }
    double sq = 0;
    for (int64_t j = 0; j < k; j++) {
        acc[j] = n ? acc[j] / (double)n : 0.0;
        sq += acc[j] * acc[j];
    }
    double norm = flags & TOKVEC_MEAN_NORMALIZE ? sqrt(sq) + 1e-32 : 1.0;
    for (int64_t j = 0; j < k; j++)
        out[j] = (float)(acc[j] / norm);
    free(acc);
    return 0;
}
