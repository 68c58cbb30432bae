/* similar.c -- nearest tokens by cosine similarity (tokvec_similar.h).
 *
 * The scan reads each token row once: float32 rows straight from the map
 * when they are float-aligned, other rows (float16, bfloat16, unaligned,
 * GGUF quant types) through the table's row view, widened or dequantized
 * into a per-query scratch row first -- never t->info.dtype, which says
 * float32 for quantized and mixed-dtype tables. dot() keeps 16 independent
 * float32 partial sums so that gcc and clang vectorize it at -O2 without
 * reassociating anything (-ffp-contract=off and no -ffast-math stay in
 * force): `make -B CFLAGS+=-fopt-info-vec build/core/similar.o` shows it.
 * A sum that overflows float32 (values near FLT_MAX) is redone in double.
 * The inverse norms are computed once, in double, under `lock`; `ready`
 * says they exist (release/acquire), after which nothing is written.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tokvec_similar.h"

#define LANES 16

struct tokvec_similar {
    const tokvec_table *t;
    int64_t vocab, dim;
    pthread_mutex_t lock; /* guards the computation of inv */
    atomic_int ready;     /* inv is complete */
    double *inv; /* vocab values: 1 / |row|, 0 for a zero or non-finite
                  * row (double: a row near FLT_MAX has a norm whose
                  * inverse is subnormal in float32) */
};

int tokvec_similar_open(const tokvec_table *t, tokvec_similar **out)
{
    *out = NULL;
    tokvec_similar *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->t = t;
    s->vocab = t->info.vocab_size;
    s->dim = t->info.dim;
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->ready, 0);
    *out = s;
    return 0;
}

void tokvec_similar_close(tokvec_similar *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s->inv);
    free(s);
}

/* Row id as float32: a view into the map when the token rows are
 * aligned float32, else read through the table's row view (widened, or
 * dequantized for GGUF quant types) into scratch. info.dtype is not the
 * rows' storage: a quantized or mixed-dtype table says float32. */
static const float *row_f32(const tokvec_similar *s, int64_t id,
                            float *scratch)
{
    const tokvec_table *t = s->t;
    const tokvec__rows *rows = &t->tok_rows;
    /* Model2Vec rows (mapping, weights) only through the row view. */
    const unsigned char *p = t->mapping
                                 ? NULL
                                 : rows->base + (size_t)id * rows->row_bytes;
    if (p && rows->q == TOKVEC_Q_NONE && rows->dtype == TOKVEC_F32 &&
        !t->weights && ((uintptr_t)p & 3u) == 0)
        return (const float *)(const void *)p;
    tokvec_row r;
    if (tokvec_table_token_row(t, id, &r) < 0) { /* id < vocab: cannot */
        memset(scratch, 0, (size_t)s->dim * sizeof *scratch);
        return scratch;
    }
    tokvec_row_to_f32(&r, scratch);
    return scratch;
}

static float dot(const float *restrict a, const float *restrict b, size_t n)
{
    float acc[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (size_t j = 0; j < LANES; j++)
            acc[j] += a[i + j] * b[i + j];
    for (size_t j = 0; i < n; i++, j++)
        acc[j] += a[i] * b[i];
    for (size_t w = LANES / 2; w > 0; w /= 2)
        for (size_t j = 0; j < w; j++)
            acc[j] += acc[j + w];
    return acc[0];
}

/* The same in double, for the rare row whose float32 sum overflows (values
 * near FLT_MAX): the score is then still the cosine, not inf. */
static double dot_f64(const float *a, const float *b, size_t n)
{
    double acc = 0;
    for (size_t i = 0; i < n; i++)
        acc += (double)a[i] * b[i];
    return acc;
}

int tokvec_similar_prepare(tokvec_similar *s)
{
    if (atomic_load_explicit(&s->ready, memory_order_acquire))
        return 0;
    int rc = 0;
    float *scratch = NULL;
    pthread_mutex_lock(&s->lock);
    if (atomic_load_explicit(&s->ready, memory_order_relaxed))
        goto out;
    s->inv = malloc((size_t)s->vocab * sizeof *s->inv);
    /* calloc, not malloc: tokvec_widen fills it, in a file the analyzer
     * does not follow. */
    scratch = calloc((size_t)s->dim, sizeof *scratch);
    if (!s->inv || !scratch) {
        free(s->inv);
        s->inv = NULL;
        rc = -ENOMEM;
        goto out;
    }
    for (int64_t r = 0; r < s->vocab; r++) {
        const float *row = row_f32(s, r, scratch);
        double ss = 0;
        for (int64_t i = 0; i < s->dim; i++)
            ss += (double)row[i] * row[i];
        s->inv[r] = ss > 0 && isfinite(ss) ? 1.0 / sqrt(ss) : 0.0;
    }
    atomic_store_explicit(&s->ready, 1, memory_order_release);
out:
    pthread_mutex_unlock(&s->lock);
    free(scratch);
    return rc;
}

/* a ranks below b: lower score, or the same score and a larger id. */
static int worse(const tokvec_neighbor *a, const tokvec_neighbor *b)
{
    return a->score < b->score || (a->score == b->score && a->id > b->id);
}

/* Min-heap on worse(): h[0] is the worst kept. */
static void sift_down(tokvec_neighbor *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && worse(&h[l], &h[m]))
            m = l;
        if (r < n && worse(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        tokvec_neighbor tmp = h[i];
        h[i] = h[m];
        h[m] = tmp;
        i = m;
    }
}

static void sift_up(tokvec_neighbor *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!worse(&h[i], &h[p]))
            return;
        tokvec_neighbor tmp = h[i];
        h[i] = h[p];
        h[p] = tmp;
        i = p;
    }
}

static float clamp_score(float x)
{
    if (!(x >= -1.0f)) /* NaN too */
        return -1.0f;
    return x > 1.0f ? 1.0f : x + 0.0f; /* + 0: -0 becomes 0 */
}

/* q: the unit-length query. Fills out best first. */
static void scan(const tokvec_similar *s, const float *q, size_t k,
                 float *scratch, tokvec_neighbor *out)
{
    size_t n = 0;
    for (int64_t r = 0; r < s->vocab; r++) {
        const float *row = row_f32(s, r, scratch);
        double d = dot(q, row, (size_t)s->dim);
        if (!isfinite(d) && s->inv[r] > 0) /* overflow (inf, or inf - inf) */
            d = dot_f64(q, row, (size_t)s->dim);
        tokvec_neighbor c = {r, clamp_score((float)(d * s->inv[r]))};
        if (n < k) {
            out[n] = c;
            sift_up(out, n++);
        } else if (worse(&out[0], &c)) {
            out[0] = c;
            sift_down(out, n, 0);
        }
    }
    /* Heap sort: pop the worst to the end, so out ends best first. */
    while (n > 1) {
        tokvec_neighbor tmp = out[0];
        out[0] = out[--n];
        out[n] = tmp;
        sift_down(out, n, 0);
    }
}

int tokvec_similar_vector(tokvec_similar *s, const float *q, size_t k,
                          tokvec_neighbor *out)
{
    if (k == 0)
        return TOKVEC_E_INVAL;
    double ss = 0;
    for (int64_t i = 0; i < s->dim; i++) {
        if (!isfinite(q[i]))
            return TOKVEC_E_INVAL;
        ss += (double)q[i] * q[i];
    }
    int rc = tokvec_similar_prepare(s);
    if (rc < 0)
        return rc;
    float *unit = calloc(2 * (size_t)s->dim, sizeof *unit);
    if (!unit)
        return -ENOMEM;
    double inv = ss > 0 ? 1.0 / sqrt(ss) : 0; /* zero: every score 0 */
    for (int64_t i = 0; i < s->dim; i++)
        unit[i] = (float)(q[i] * inv);
    if (k > (size_t)s->vocab)
        k = (size_t)s->vocab;
    scan(s, unit, k, unit + s->dim, out);
    free(unit);
    return 0;
}

int tokvec_similar_token(tokvec_similar *s, int64_t id, size_t k,
                         tokvec_neighbor *out)
{
    if (id < 0 || id >= s->vocab)
        return TOKVEC_E_TOKEN_RANGE;
    float *q = calloc((size_t)s->dim, sizeof *q);
    if (!q)
        return -ENOMEM;
    const float *row = row_f32(s, id, q);
    if (row != q)
        memcpy(q, row, (size_t)s->dim * sizeof *q);
    int rc = tokvec_similar_vector(s, q, k, out); /* INVAL: NaN or inf row */
    free(q);
    return rc;
}
