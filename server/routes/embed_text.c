/* embed_text.c -- text inputs of POST /embed (embed_text.h): from the
 * parsed rows (texts and id lists) to the id request that /embed embeds,
 * and the "input_ids" / "target_ids" / "attention_mask" of JSON answers.
 *
 * Runs on a worker (the tokenizing is the part that costs); the request
 * belongs to that worker while it runs (embed_job.c, "Ownership"). Once
 * resolved, a text request is an id request like any other: what it
 * embeds is bit for bit what /embed of its ids gives.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "embed_text.h"
#include "text.h"

/* Each text row's ids (into row->ids, row->n), cut when truncating. */
static int tokenize_rows(const tokvec_tokenizer *tok, tv_request *r,
                         int64_t keep, tv_error *e)
{
    tokvec_tok_ids ids = {0};
    int rc = 0;
    for (int64_t b = 0; rc == 0 && b < r->nrows; b++) {
        tv_text_row *row = &r->rows[b];
        if (!row->text)
            continue;
        int enc = tv_text_encode(tok, &r->text, row->text, row->len, 0, &ids,
                                 e);
        if (enc < 0) {
            rc = -1;
            break;
        }
        const int32_t *pre = NULL, *post = NULL;
        size_t npre = 0, npost = 0;
        if (r->text.add_special)
            tokvec_tokenizer_added(tok, &pre, &npre, &post, &npost);
        /* truncation leaves room for the added tokens, as HF's does */
        int64_t room = keep > (int64_t)(npre + npost)
                           ? keep - (int64_t)(npre + npost)
                           : 0;
        size_t from = 0, n = ids.n;
        if (r->text.truncate && keep > 0 && (int64_t)n > room) {
            from = r->text.left ? n - (size_t)room : 0;
            n = (size_t)room;
        }
        size_t all = npre + n + npost;
        row->ids = tv_malloc((all ? all : 1) * sizeof *row->ids);
        if (!row->ids) {
            rc = tv_error_set(e, 500, "internal", "out of memory");
            break;
        }
        for (size_t i = 0; i < npre; i++)
            row->ids[i] = pre[i];
        for (size_t i = 0; i < n; i++)
            row->ids[npre + i] = ids.ids[from + i];
        for (size_t i = 0; i < npost; i++)
            row->ids[npre + n + i] = post[i];
        row->n = (int64_t)all;
    }
    tokvec_tok_ids_free(&ids);
    return rc;
}

/* max_length windows of the one text: GPTDatasetV1. */
static int windows(tv_request *r, const tv_limits *lim, tv_error *e)
{
    const tv_text_row *row = &r->rows[0];
    int64_t L = r->text.max_length, T = r->text.stride;
    int64_t nw = tv_text_windows(row->n, L, T);
    if (!nw)
        return tv_error_set(e, 422, "text_too_short",
                            "the text is %" PRId64
                            " tokens; max_length %" PRId64
                            " needs more than %" PRId64,
                            row->n, L, L);
    if (nw > lim->max_batch || nw > lim->max_tokens / L)
        return tv_error_set(e, 413, "payload_too_large",
                            "%" PRId64 " windows of %" PRId64 " tokens are "
                            "over max_batch %" PRId64
                            " or max_tokens %" PRId64,
                            nw, L, lim->max_batch, lim->max_tokens);
    r->ids = tv_malloc((size_t)(nw * L) * sizeof *r->ids);
    r->targets = tv_malloc((size_t)(nw * L) * sizeof *r->targets);
    if (!r->ids || !r->targets)
        return tv_error_set(e, 500, "internal", "out of memory");
    for (int64_t w = 0; w < nw; w++)
        for (int64_t s = 0; s < L; s++) {
            r->ids[w * L + s] = row->ids[w * T + s];
            r->targets[w * L + s] = row->ids[w * T + s + 1];
        }
    r->batch = nw;
    r->seq = L;
    r->single = 0;
    return 0;
}

/* A pooled request's rows (see embed_text.h). */
static int pool_rows(const tokvec_tokenizer *tok, const tokvec_model *model,
                     const tv_limits *lim, tv_request *r, tv_error *e)
{
    int64_t M = lim->max_sentence_tokens > 0 ? lim->max_sentence_tokens : 512;
    const tokvec_model_info *mi = model ? tokvec_model_get_info(model) : NULL;
    int m2v = mi && mi->layout == TOKVEC_LAYOUT_MODEL2VEC;
    tokvec_tok_ids ids = {0};
    int64_t total = 0, S = 0;
    int rc = 0;
    for (int64_t b = 0; rc == 0 && b < r->nrows; b++) {
        tv_text_row *row = &r->rows[b];
        if (row->text && row->len == 0) {
            rc = tv_error_set(e, 400, "invalid_request",
                              "the text at batch index %" PRId64 " is empty",
                              b);
            e->param = r->openai ? "input" : "inputs";
            break;
        }
        if (row->text) {
            size_t len = m2v ? tokvec_model_text_cut(model, row->text,
                                                     row->len, M)
                             : row->len;
            if (tv_text_encode(tok, &r->text, row->text, len, 0, &ids, e) <
                0) {
                rc = -1;
                break;
            }
            row->ids = tv_malloc((ids.n ? ids.n : 1) * sizeof *row->ids);
            if (!row->ids) {
                rc = tv_error_set(e, 500, "internal", "out of memory");
                break;
            }
            int64_t n = 0;
            for (size_t i = 0; i < ids.n; i++) {
                if (m2v && (ids.ids[i] == mi->unk_id || n == M))
                    continue; /* the unknown token; past M */
                row->ids[n++] = ids.ids[i];
            }
            row->n = n;
        }
        total += row->n;
        if (row->n > S)
            S = row->n;
        if (total > lim->max_tokens)
            rc = tv_error_set(e, 413, "payload_too_large",
                              "the inputs hold more than max_tokens %" PRId64
                              " ids to average",
                              lim->max_tokens);
    }
    tokvec_tok_ids_free(&ids);
    if (rc < 0)
        return rc;
    r->offs = tv_malloc((size_t)(r->nrows + 1) * sizeof *r->offs);
    r->ids = tv_malloc((size_t)(total ? total : 1) * sizeof *r->ids);
    if (!r->offs || !r->ids)
        return tv_error_set(e, 500, "internal", "out of memory");
    r->offs[0] = 0;
    for (int64_t b = 0; b < r->nrows; b++) {
        if (r->rows[b].n && r->rows[b].ids)
            memcpy(r->ids + r->offs[b], r->rows[b].ids,
                   (size_t)r->rows[b].n * sizeof *r->ids);
        r->offs[b + 1] = r->offs[b] + r->rows[b].n;
    }
    r->batch = r->nrows;
    r->seq = S;
    r->pooled = total;
    return 0;
}

int tv_embed_text_resolve(const tokvec_tokenizer *tok, const tokvec_table *t,
                          const tokvec_model *model, const tv_limits *lim,
                          tv_request *r, tv_error *e)
{
    if (r->pool)
        return pool_rows(tok, model, lim, r, e);
    int64_t keep = lim->max_tokens;
    const tokvec_table_info *in = tokvec_table_get_info(t);
    if (r->positions && in->positional != TOKVEC_POS_NONE &&
        in->context_length - r->start_position < keep)
        keep = in->context_length - r->start_position;
    if (r->text.max_length && (r->nrows != 1 || !r->rows[0].text))
        return tv_error_set(e, 400, "invalid_request",
                            "\"max_length\" windows take one text, not a "
                            "list of %" PRId64 " inputs",
                            r->nrows);
    if (tokenize_rows(tok, r, r->text.max_length ? 0 : keep, e) < 0)
        return -1;
    if (r->text.max_length)
        return windows(r, lim, e);
    int64_t S = 0, B = r->nrows;
    int ragged = 0;
    for (int64_t b = 0; b < B; b++) {
        if (r->rows[b].n == 0)
            return tv_error_set(e, 400, "invalid_request",
                                "the text at batch index %" PRId64 " is "
                                "empty (no tokens)",
                                b);
        if (b && r->rows[b].n != S)
            ragged = 1;
        if (r->rows[b].n > S)
            S = r->rows[b].n;
    }
    if (ragged && !r->has_pad)
        return tv_error_set(e, 422, "ragged_batch",
                            "sequences have different lengths; set "
                            "\"pad_id\" to right-pad them");
    int64_t n;
    if (__builtin_mul_overflow(B, S, &n) || n > lim->max_tokens)
        return tv_error_set(e, 413, "payload_too_large",
                            "%" PRId64 " x %" PRId64 " tokens is over "
                            "max_tokens %" PRId64 " (\"truncate\": true "
                            "cuts each text to fit)",
                            B, S, lim->max_tokens);
    r->ids = tv_malloc((size_t)n * sizeof *r->ids);
    /* A padded batch: each row's length, for its attention_mask. */
    r->lens = ragged ? tv_malloc((size_t)B * sizeof *r->lens) : NULL;
    if (!r->ids || (ragged && !r->lens))
        return tv_error_set(e, 500, "internal", "out of memory");
    for (int64_t b = 0; ragged && b < B; b++)
        r->lens[b] = r->rows[b].n;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
            r->ids[b * S + s] = s < r->rows[b].n ? r->rows[b].ids[s]
                                                 : r->pad_id;
    r->batch = B;
    r->seq = S;
    return 0;
}

/* An id is at most 20 characters; a comma or bracket each; the key. 0 when
 * it does not fit in size_t. */
size_t tv_embed_ids_bound(const tv_request *r)
{
    uint64_t n;
    if (r->pool) /* the ids, a comma or bracket each, two per row, key */
        return r->pooled > (int64_t)(SIZE_MAX / 64) ||
                       r->batch > (int64_t)(SIZE_MAX / 64)
                   ? 0
                   : (size_t)r->pooled * 21 + (size_t)r->batch * 3 + 32;
    if (r->batch < 0 || r->seq < 0 ||
        __builtin_mul_overflow((uint64_t)r->batch, (uint64_t)r->seq, &n) ||
        n > SIZE_MAX / 64)
        return 0;
    size_t per = (size_t)n * 21 + (size_t)r->batch * 3 + 32;
    return r->targets ? 2 * per : per;
}

static size_t ids_json(char *p, const char *key, const int64_t *ids, int64_t B,
                       int64_t S)
{
    char *o = p;
    o += sprintf(o, ",\"%s\":[", key);
    for (int64_t b = 0; b < B; b++) {
        *o++ = b ? ',' : '[';
        if (b)
            *o++ = '[';
        for (int64_t s = 0; s < S; s++)
            o += sprintf(o, s ? ",%" PRId64 : "%" PRId64, ids[b * S + s]);
        *o++ = ']';
    }
    *o++ = ']';
    return (size_t)(o - p);
}

size_t tv_embed_ids_json(char *p, const tv_request *r)
{
    if (r->pool) { /* ragged: each input's own ids */
        char *o = p + sprintf(p, ",\"input_ids\":[");
        for (int64_t b = 0; b < r->batch; b++) {
            if (b)
                *o++ = ',';
            *o++ = '[';
            for (int64_t i = r->offs[b]; i < r->offs[b + 1]; i++)
                o += sprintf(o, i > r->offs[b] ? ",%" PRId64 : "%" PRId64,
                             r->ids[i]);
            *o++ = ']';
        }
        *o++ = ']';
        return (size_t)(o - p);
    }
    size_t n = ids_json(p, "input_ids", r->ids, r->batch, r->seq);
    if (r->targets)
        n += ids_json(p + n, "target_ids", r->targets, r->batch, r->seq);
    return n;
}

size_t tv_embed_mask_bound(const tv_request *r)
{
    /* B*S <= max_tokens ids are held already: no overflow */
    if (!r->lens || r->pool)
        return 0;
    return (size_t)(r->batch * r->seq) * 2 + (size_t)r->batch * 3 + 32;
}

size_t tv_embed_mask_json(char *p, const tv_request *r)
{
    if (!r->lens || r->pool)
        return 0;
    char *o = p + sprintf(p, ",\"attention_mask\":[");
    for (int64_t b = 0; b < r->batch; b++) {
        if (b)
            *o++ = ',';
        *o++ = '[';
        for (int64_t s = 0; s < r->seq; s++) {
            if (s)
                *o++ = ',';
            *o++ = s < r->lens[b] ? '1' : '0';
        }
        *o++ = ']';
    }
    *o++ = ']';
    return (size_t)(o - p);
}
