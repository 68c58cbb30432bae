/* fuzz_similar.c -- libFuzzer target for POST /similar on every kind of
 * table: byte 0 of the input picks the table (table_kinds.h: safetensors
 * F32/F16/BF16, GGUF of each quant type, mixed F16/F32 GGUF, ...; vocab
 * 50, dim 4, 32 or 256, a zero row and a NaN/inf row in each), the rest
 * is the body, parsed by tv_similar_parse, then, when it passes, scanned
 * and answered.
 *
 * Invariants checked (abort() -> libFuzzer reports a crash):
 *  - a refused body gets a 4xx with an error_type and a message (500 only
 *    for out of memory, which -malloc_limit_mb turns into a report);
 *  - a query by the id of the NaN/inf row is 422 row_not_finite, every
 *    other accepted body is answered;
 *  - an answer is JSON: a list of min(k, 50) objects with exactly id (in
 *    range, no repeats), text (null: no tokenizer here) and score (in
 *    [-1, 1], non-increasing; equal scores by id ascending);
 *  - differential: each score is the cosine, in double, of the query and
 *    the row as tokvec_embed reads it (the rows are the embed path's, not
 *    the scan's: the scan once read quantized rows as float32), within
 *    1e-4; a NaN/inf row scores -1, a zero row or query 0; and no id left
 *    out scores more than 1e-4 above the last one kept.
 *
 * The pages themselves are not under test: the table of compiled-in files
 * that server/routes/pages.c serves (build/gen/pages_data.c) is empty here.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"
#include "table_kinds.h"
#include "tokvec_embed.h"

typedef struct tv_page_file {
    const char *name;
    const unsigned char *data;
    unsigned long len;
} tv_page_file;
const tv_page_file tv_page_files[] = {{0, 0, 0}};
const unsigned long tv_page_nfiles = 0;

enum { VOCAB = 50, MAX_KINDS = 64 };

static tokvec_similar *idx[MAX_KINDS];
static float *rows[MAX_KINDS]; /* VOCAB x dim, as tokvec_embed reads them */

static const tokvec_table *open_kind(int k)
{
    const tokvec_table *t = tk_table(k, VOCAB);
    if (idx[k])
        return t;
    int64_t dim = tokvec_table_get_info(t)->dim;
    int64_t ids[VOCAB];
    for (int i = 0; i < VOCAB; i++)
        ids[i] = i;
    unsigned flags = TOKVEC_EMBED_NO_POSITIONS;
    rows[k] = malloc((size_t)(VOCAB * dim) * sizeof(float));
    if (!rows[k] || tokvec_similar_open(t, &idx[k]) < 0 ||
        tokvec_embed(t, ids, VOCAB, 1, 0, flags, rows[k]) < 0)
        abort();
    return t;
}

static int finite_row(const float *r, int64_t dim)
{
    for (int64_t i = 0; i < dim; i++)
        if (!isfinite(r[i]))
            return 0;
    return 1;
}

/* The cosine of q and every row, in double: -1 for a NaN/inf row, 0 for a
 * zero row or query. */
static void reference(const float *q, const float *r, int64_t dim, double *cos)
{
    double qq = 0;
    for (int64_t i = 0; i < dim; i++)
        qq += (double)q[i] * q[i];
    for (int v = 0; v < VOCAB; v++, r += dim) {
        double d = 0, rr = 0;
        for (int64_t i = 0; i < dim; i++) {
            d += (double)q[i] * r[i];
            rr += (double)r[i] * r[i];
        }
        if (!finite_row(r, dim))
            cos[v] = -1;
        else if (qq == 0 || rr == 0)
            cos[v] = 0;
        else
            cos[v] = fmax(-1, fmin(1, d / sqrt(qq) / sqrt(rr)));
    }
}

static void check_answer(const char *body, size_t len, size_t k,
                         const double *cos)
{
    json_t *j = json_loadb(body, len, 0, NULL);
    size_t n = k < VOCAB ? k : VOCAB;
    if (!j || !json_is_array(j) || json_array_size(j) != n)
        abort();
    char seen[VOCAB] = {0};
    double prev = 2;
    json_int_t prev_id = -1;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(j, i);
        json_t *id = json_object_get(o, "id");
        json_t *s = json_object_get(o, "score");
        if (json_object_size(o) != 3 || !json_is_integer(id) ||
            !json_is_number(s) || !json_is_null(json_object_get(o, "text")))
            abort();
        json_int_t v = json_integer_value(id);
        double sc = json_number_value(s);
        if (v < 0 || v >= VOCAB || seen[v] || sc < -1 || sc > 1 || sc > prev ||
            (sc == prev && v < prev_id))
            abort();
        if (fabs(sc - cos[v]) > 1e-4) {
            fprintf(stderr, "id %lld scores %.9g, the cosine is %.9g\n",
                    (long long)v, sc, cos[v]);
            abort();
        }
        seen[v] = 1;
        prev = sc;
        prev_id = v;
    }
    for (int v = 0; v < VOCAB; v++)
        if (!seen[v] && cos[v] > prev + 1e-4) {
            fprintf(stderr, "id %d (cosine %.9g) left out for %.9g\n", v,
                    cos[v], prev);
            abort();
        }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int kind = data[0] % tk_count();
    if (kind >= MAX_KINDS)
        abort();
    data++;
    size--;
    const tokvec_table *table = open_kind(kind);
    int64_t dim = tokvec_table_get_info(table)->dim;
    tv_similar_call *c = NULL;
    tv_error e = {0};
    int parsed = tv_similar_parse((const char *)data, size, table, idx[kind],
                                  NULL, &c, &e);
    if (parsed < 0) {
        if (c || !e.type || !*e.message ||
            !(e.status >= 400 && e.status < 500))
            abort();
        return 0;
    }
    /* What was asked: k (default 10), and the query vector. */
    json_t *req = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES,
                             NULL);
    json_t *kv = json_object_get(req, "k");
    json_t *idv = json_object_get(req, "id");
    json_t *vec = json_object_get(req, "vector");
    size_t k = kv ? (size_t)json_integer_value(kv) : TV_SIMILAR_DEFAULT_K;
    float *q = malloc((size_t)dim * sizeof *q);
    if (!q || (!idv && json_array_size(vec) != (size_t)dim))
        abort();
    int64_t id = idv ? (int64_t)json_integer_value(idv) : -1;
    for (int64_t i = 0; i < dim; i++)
        q[i] = idv ? rows[kind][id * dim + i]
                   : (float)json_number_value(json_array_get(vec, (size_t)i));
    json_decref(req);

    tv_similar_run(c);
    const char *body;
    size_t len;
    int answered = tv_similar_result(c, &body, &len, &e);
    if (id >= 0 && !finite_row(q, dim)) {
        if (answered == 0 || e.status != 422 ||
            strcmp(e.type, "row_not_finite"))
            abort();
    } else {
        if (answered < 0)
            abort();
        double cos[VOCAB];
        reference(q, rows[kind], dim, cos);
        check_answer(body, len, k, cos);
    }
    free(q);
    tv_similar_free(c);
    return 0;
}
