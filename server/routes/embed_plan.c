/* embed_plan.c -- the reply of POST /embed, sized then written
 * (embed_plan.h), whole or a chunk at a time (embed_write_range: the
 * large raw/npy replies made as they are sent): pure functions of the
 * table, the request and the format, moved out of embed_job.c (which
 * keeps the job: HTTP, pool, buffers) so that the fuzz target
 * tests/fuzz/fuzz_embed.c links them without MHD.
 */
#include <stdint.h>
#include <string.h>

#include "embed_plan.h"
#include "embed_text.h"
#include "npz.h"
#include "tokvec_embed.h"
#include "tokvec_float.h"
#include "torchsave.h"

/* Rounded up to a multiple of 64 (the scratch's parts start aligned). */
static size_t up64(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* The npz around the embeddings written at p->header: the rest of the
 * archive (npz.h), planned again (pure) exactly as embed_plan_reply did.
 * Its size, or 0. */
static size_t finish_npz(const tv_request *q, int64_t S, int64_t D,
                         tv_format fmt, const embed_plan *p, char *out)
{
    tv_npz z;
    if (tv_npz_plan(q, S, D, fmt.dtype, &z) < 0 || z.rows != p->header ||
        z.zip.size != p->body)
        return 0;
    size_t len = tv_npz_finish(out, q, S, D, fmt.dtype, &z);
    TV_WROTE(len, p->body);
    return len;
}

/* A pooled reply, (B, K): the float32 vectors first in scratch (B*K*4),
 * then the answer: OpenAI's JSON, /embed's JSON (base64, or torch: the
 * vectors narrowed after them, then one archive), or binary rows. */
static int plan_pooled(const tv_request *q, tv_format fmt, int64_t K,
                       embed_plan *p)
{
    int64_t B = q->batch;
    uint64_t n;
    if (__builtin_mul_overflow((uint64_t)B, (uint64_t)K, &n) ||
        n > SIZE_MAX / 64)
        return -1;
    size_t vec = (size_t)n * 4;
    p->rows = (size_t)n * tokvec_dtype_size(fmt.dtype);
    p->scratch = vec;
    if (q->openai) {
        p->body = tv_openai_json_bound(B, K, q->base64,
                                       q->model_name ? q->model_name : "");
    } else if (fmt.kind == TV_OUT_JSON && q->torch) {
        tv_torchsave_layout l;
        if (tv_torchsave_plan(TV_TORCH_VECTOR, K, fmt.dtype, &l) < 0)
            return -1;
        p->archive = l.size;
        p->scratch = up64(vec) + up64(p->rows) + p->archive;
        p->body = tv_embed_torch_json_bound(B, TV_TORCH_VECTOR, K, fmt.dtype);
    } else if (fmt.kind == TV_OUT_JSON) {
        p->body = tv_embed_json_bound(B, TV_VECTORS, K, q->base64);
    } else if (fmt.kind == TV_OUT_NPZ) { /* embeddings (B, K) alone */
        tv_npz z;
        if (tv_npz_plan(q, TV_VECTORS, K, fmt.dtype, &z) < 0)
            return -1;
        p->header = z.rows;
        p->body = z.zip.size;
    } else {
        char npy[TV_NPY_HEADER_MAX];
        p->header = fmt.kind == TV_OUT_NPY
                        ? tv_npy_header(npy, fmt.dtype, B, TV_VECTORS, K)
                        : 0;
        p->body = p->header + p->rows;
    }
    if (!p->body)
        return -1;
    p->least = p->scratch + p->body;
    if (fmt.kind == TV_OUT_JSON && !q->torch && !q->base64)
        p->least = p->scratch + 2 * (size_t)n;
    if (fmt.kind == TV_OUT_JSON && q->has_text && !q->openai) {
        size_t ids = tv_embed_ids_bound(q);
        if (!ids || p->body > SIZE_MAX / 2 - ids)
            return -1;
        p->body += ids;
    }
    if (p->scratch > SIZE_MAX / 2 - 64 - p->body)
        return -1;
    p->reserve = p->scratch + p->body;
    return 0;
}

/* Writes a pooled reply planned by plan_pooled. */
static size_t write_pooled(const tokvec_table *t, const tv_request *q,
                           tv_format fmt, const embed_plan *p, char *out,
                           float *vec, int64_t K)
{
    int64_t B = q->batch;
    unsigned flags = (q->normalize > 0 ? TOKVEC_MEAN_NORMALIZE : 0) |
                     (q->positions ? TOKVEC_MEAN_POSITIONS : 0);
    size_t len;
    for (int64_t b = 0; b < B; b++)
        if (tokvec_embed_mean(t, q->ids + q->offs[b],
                              q->offs[b + 1] - q->offs[b], q->start_position,
                              K, flags, vec + b * K) < 0)
            return 0;
    if (q->openai) {
        len = tv_openai_json(out, vec, B, K, q->base64, q->model_name,
                             q->pooled);
        TV_WROTE(len, p->body);
        return len;
    }
    if (fmt.kind != TV_OUT_JSON) {
        if (p->header && fmt.kind == TV_OUT_NPY)
            tv_npy_header(out, fmt.dtype, B, TV_VECTORS, K);
        tokvec_narrow(fmt.dtype, vec, out + p->header, (size_t)(B * K));
        TV_WROTE(p->header + p->rows, p->body);
        if (fmt.kind == TV_OUT_NPZ)
            return finish_npz(q, TV_VECTORS, K, fmt, p, out);
        return p->body;
    }
    if (q->torch) {
        char *rows = (char *)vec + up64((size_t)(B * K) * 4);
        tokvec_narrow(fmt.dtype, vec, rows, (size_t)(B * K));
        len = tv_embed_torch_json(out, rows, B, TV_TORCH_VECTOR, K, fmt.dtype,
                                  rows + up64(p->rows));
    } else {
        len = tv_embed_json(out, vec, B, TV_VECTORS, K, q->base64);
    }
    if (q->has_text) { /* before the closing brace */
        len--;
        len += tv_embed_ids_json(out + len, q);
        out[len++] = '}';
    }
    TV_WROTE(len, p->body);
    return len;
}

int embed_plan_reply(const tokvec_table *t, const tv_request *q, tv_format fmt,
                     embed_plan *p)
{
    int64_t B = q->batch, S = q->seq;
    int64_t D = tokvec_table_get_info(t)->dim;
    *p = (embed_plan){.flags = q->positions ? 0 : TOKVEC_EMBED_NO_POSITIONS};
    if (fmt.dtype == TOKVEC_F16)
        p->flags |= TOKVEC_EMBED_OUT_F16;
    else if (fmt.dtype == TOKVEC_BF16)
        p->flags |= TOKVEC_EMBED_OUT_BF16;
    if (q->pool)
        return plan_pooled(q, fmt, q->dims ? q->dims : D, p);
    if (fmt.kind == TV_OUT_JSON && q->torch) {
        /* The rows in the answer's dtype, then one sequence's archive
         * at a time after them (64-aligned), base64'd into the body. */
        tv_torchsave_layout l;
        p->rows = tokvec_embed_size(t, B, S, p->flags);
        p->body = tv_embed_torch_json_bound(B, S, D, fmt.dtype);
        if (!p->body || tv_torchsave_plan(S, D, fmt.dtype, &l) < 0 ||
            p->rows > SIZE_MAX / 2 - l.size)
            return -1;
        p->archive = l.size;
        p->scratch = (p->rows + 63) / 64 * 64 + p->archive;
    } else if (fmt.kind == TV_OUT_JSON) {
        p->rows = p->scratch = tokvec_embed_size(t, B, S, p->flags);
        p->body = tv_embed_json_bound(B, S, D, q->base64);
        if (!p->body)
            return -1;
    } else if (fmt.kind == TV_OUT_NPZ) {
        /* The rows in place inside the archive's first member. */
        tv_npz z;
        p->rows = tokvec_embed_size(t, B, S, p->flags);
        if (tv_npz_plan(q, S, D, fmt.dtype, &z) < 0 || z.rows_bytes != p->rows)
            return -1;
        p->header = z.rows;
        p->body = z.zip.size;
    } else {
        char npy[TV_NPY_HEADER_MAX];
        p->rows = tokvec_embed_size(t, B, S, p->flags);
        p->header = fmt.kind == TV_OUT_NPY
                        ? tv_npy_header(npy, fmt.dtype, B, S, D)
                        : 0;
        if (p->rows > SIZE_MAX - p->header)
            return -1;
        p->body = p->header + p->rows;
    }
    p->least = p->scratch + p->body; /* exact but for JSON floats: */
    if (fmt.kind == TV_OUT_JSON && !q->torch && !q->base64)
        p->least = p->scratch + 2 * (size_t)(B * S * D);
    /* Every JSON answer to texts, torch too, ends with "input_ids" (and
     * "target_ids"): embed_write writes them after the embeddings. */
    if (fmt.kind == TV_OUT_JSON && q->has_text) {
        size_t ids = tv_embed_ids_bound(q);
        if (!ids || p->body > SIZE_MAX / 2 - ids)
            return -1;
        p->body += ids;
    }
    /* ... and a padded batch's, ids or texts, with "attention_mask". */
    if (fmt.kind == TV_OUT_JSON && q->lens) {
        size_t mask = tv_embed_mask_bound(q);
        if (p->body > SIZE_MAX / 2 - mask)
            return -1;
        p->body += mask;
    }
    /* 64 more: the buffers are rounded up to a multiple of 64. */
    if (!p->rows || p->scratch > SIZE_MAX - 64 - p->body)
        return -1;
    p->reserve = p->scratch + p->body;
    return 0;
}

size_t embed_write(const tokvec_table *t, const tv_request *q, tv_format fmt,
                   const embed_plan *p, char *out, void *scratch)
{
    int64_t B = q->batch, S = q->seq;
    int64_t D = tokvec_table_get_info(t)->dim;
    size_t len;
    if (q->pool)
        return write_pooled(t, q, fmt, p, out, scratch, q->dims ? q->dims : D);
    if (fmt.kind != TV_OUT_JSON) {
        if (p->header && fmt.kind == TV_OUT_NPY)
            tv_npy_header(out, fmt.dtype, B, S, D);
        if (tokvec_embed(t, q->ids, B, S, q->start_position, p->flags,
                         out + p->header) < 0)
            return 0;
        if (fmt.kind == TV_OUT_NPZ)
            return finish_npz(q, S, D, fmt, p, out);
        return p->body;
    }
    if (tokvec_embed(t, q->ids, B, S, q->start_position, p->flags, scratch) <
        0)
        return 0;
    if (q->torch) /* the archive: the scratch's last plan.archive bytes */
        len = tv_embed_torch_json(out, scratch, B, S, D, fmt.dtype,
                                  (char *)scratch + (p->scratch - p->archive));
    else
        len = tv_embed_json(out, scratch, B, S, D, q->base64);
    if (q->has_text || q->lens) { /* before the closing brace */
        len--;
        if (q->has_text)
            len += tv_embed_ids_json(out + len, q);
        len += tv_embed_mask_json(out + len, q);
        out[len++] = '}';
    }
    TV_WROTE(len, p->body);
    return len;
}

/* --- large replies, a chunk at a time ----------------------------------- */

int embed_plan_chunked(const tv_request *q, tv_format fmt)
{
    return !q->pool && (fmt.kind == TV_OUT_RAW || fmt.kind == TV_OUT_NPY);
}

void embed_rows_init(embed_rows *r, const tokvec_table *t, const tv_request *q,
                     tv_format fmt, const embed_plan *p, const int64_t *ids)
{
    int64_t D = tokvec_table_get_info(t)->dim;
    *r = (embed_rows){.t = t,
                      .ids = ids,
                      .batch = q->batch,
                      .seq = q->seq,
                      .start = q->start_position,
                      .flags = p->flags,
                      .row = (size_t)D * tokvec_dtype_size(fmt.dtype),
                      .header = p->header,
                      .body = p->body};
    if (fmt.kind == TV_OUT_NPY)
        tv_npy_header(r->head, fmt.dtype, q->batch, q->seq, D);
}

/* Rows k .. k + m - 1 of the flattened (batch, seq), all in one sequence,
 * into out: tokvec_embed of that piece, its positions from start + s. */
static int rows_at(const embed_rows *r, int64_t k, int64_t m, void *out)
{
    int64_t s = k % r->seq;
    return tokvec_embed(r->t, r->ids + k, 1, m, r->start + s, r->flags, out);
}

size_t embed_write_range(const embed_rows *r, uint64_t pos, char *out,
                         size_t max, char *tmp)
{
    size_t n = 0, rb = r->row;
    int f32 = !(r->flags & (TOKVEC_EMBED_OUT_F16 | TOKVEC_EMBED_OUT_BF16));
    if (pos >= r->body)
        return 0;
    if (max > r->body - pos)
        max = (size_t)(r->body - pos);
    if (pos < r->header) { /* npy: the header first */
        n = (size_t)(r->header - pos) < max ? (size_t)(r->header - pos) : max;
        memcpy(out, r->head + pos, n);
    }
    while (n < max) {
        uint64_t off = pos + n - r->header;
        int64_t k = (int64_t)(off / rb);
        size_t in = (size_t)(off % rb), room = max - n;
        if (!in && room >= rb && (!f32 || (uintptr_t)(out + n) % 4 == 0)) {
            /* whole rows, in place, up to the sequence's end */
            int64_t m = (int64_t)(room / rb), left = r->seq - k % r->seq;
            if (m > left)
                m = left;
            if (rows_at(r, k, m, out + n) < 0)
                return 0;
            n += (size_t)m * rb;
            continue;
        }
        if (!in && n > 0 && room < rb)
            break; /* end on a row's end: the next chunk starts there */
        /* part of a row (rows longer than a chunk, or a chunk that does
         * not start on a row), or a float32 row out of alignment */
        size_t c = rb - in < room ? rb - in : room;
        if (rows_at(r, k, 1, tmp) < 0)
            return 0;
        memcpy(out + n, tmp + in, c);
        n += c;
    }
    TV_WROTE((size_t)pos + n, r->body);
    return n;
}
