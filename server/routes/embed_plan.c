/* embed_plan.c -- the reply of POST /embed, sized then written
 * (embed_plan.h): pure functions of the table, the request and the format,
 * moved out of embed_job.c (which keeps the job: HTTP, pool, buffers) so
 * that the fuzz target tests/fuzz/fuzz_embed.c links them without MHD.
 */
#include <stdint.h>

#include "embed_plan.h"
#include "embed_text.h"
#include "tokvec_embed.h"
#include "torchsave.h"

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
    if (fmt.kind != TV_OUT_JSON) {
        if (p->header)
            tv_npy_header(out, fmt.dtype, B, S, D);
        if (tokvec_embed(t, q->ids, B, S, q->start_position, p->flags,
                         out + p->header) < 0)
            return 0;
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
    if (q->has_text) { /* before the closing brace */
        len--;
        len += tv_embed_ids_json(out + len, q);
        out[len++] = '}';
    }
    TV_WROTE(len, p->body);
    return len;
}
