/* get_routes.c -- the GET routes answered at once on the HTTP thread that
 * read the request: /info, /tokens/{id} and /metrics (server.h). POST
 * /embed is a job (embed_job.c); /health, /ready and /openapi.json are
 * constant answers in http.c's dispatch.
 *
 * Threads: the connection's HTTP thread. Each route holds a table
 * reference only while it runs.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "metrics.h"
#include "reply.h"
#include "tokvec_embed.h"

/* /info's "tokenizer": {"name", "model", "vocab_size", "special_tokens":
 * {text: id}}, or null when none is loaded. */
static json_t *info_tokenizer(const table_ref *s)
{
    if (!s->tok)
        return json_null();
    json_t *sp = json_object();
    int32_t id;
    size_t len;
    const char *text;
    for (size_t i = 0; sp; i++) {
        /* not NUL-terminated: strlen ran into the next special's bytes */
        text = tokvec_tokenizer_special(s->tok, i, &id, &len);
        if (!text)
            break;
        json_object_setn_new(sp, text, len, json_integer(id));
    }
    return json_pack("{s:s, s:s, s:I, s:o?}", "name", s->tok_info.name,
                     "model", s->tok_info.model ? s->tok_info.model : "BPE",
                     "vocab_size", (json_int_t)s->tok_info.vocab_size,
                     "special_tokens", sp);
}

/* /info's "model": the name /v1/ answers give, the layout ("model2vec",
 * "sentence-transformers", or "table" for --table), whether sentence
 * vectors are normalized and what says so, and for model directories the
 * directory and what Model2Vec's encode reads of the tokenizer. */
static json_t *info_model(const tv_server *s, const table_ref *ref)
{
    if (!ref->model)
        return json_pack("{s:s, s:s, s:b, s:s}", "name", s->model_name,
                         "layout", "table", "normalize", ref->normalize,
                         "normalize_from",
                         strcmp(s->cfg->normalize, "auto") ? "override"
                                                           : "default");
    const tokvec_model_info *mi = tokvec_model_get_info(ref->model);
    const tokvec_table_info *in = tokvec_table_get_info(ref->t);
    return json_pack(
        "{s:s, s:s, s:b, s:s, s:s, s:I, s:I, s:I, s:s?, s:s?, s:I}", "name",
        s->model_name, "layout", mi->layout_name, "normalize", mi->normalize,
        "normalize_from", mi->normalize_from, "path", mi->dir,
        "median_token_length", (json_int_t)mi->median_token_length, "unk_id",
        (json_int_t)mi->unk_id, "stored_rows", (json_int_t)in->stored_rows,
        "weights", in->weights_tensor, "mapping", in->mapping_tensor,
        "max_sentence_tokens", (json_int_t)s->cfg->max_sentence_tokens);
}

/* What `tokvec init` writes as the "generator" of a table's metadata
 * (server/cli/cli.c): a table that names it holds random rows. */
#define INIT_GENERATOR "torch.manual_seed + nn.Embedding (normal_)"

/* /info's "random_weights": the table's metadata (safetensors
 * __metadata__) names tokvec init's generator, so its rows are random
 * and its nearest neighbours mean nothing. */
static int random_weights(const tokvec_table_info *in)
{
    if (!in->metadata_json)
        return 0;
    json_t *m = json_loads(in->metadata_json, 0, NULL);
    const char *g = json_string_value(json_object_get(m, "generator"));
    int yes = g && !strcmp(g, INIT_GENERATOR);
    json_decref(m);
    return yes;
}

/* GET /info: the table's shape and dtypes, and the limits. "dtype" is what
 * the rows are served as; tensors.token_dtype and position_dtype are what
 * the file stores, as it spells them ("F16", "Q4_K": a quantized GGUF
 * table is served as float32). */
enum MHD_Result route_info(req_ctx *x)
{
    const tv_config *c = x->s->cfg;
    table_ref *ref = table_acquire(x->s);
    const tokvec_table_info *in = tokvec_table_get_info(ref->t);
    json_t *j = json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:{s:s, s:s?, s:s, s:s?}, "
        "s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
        "name", "tokvec", "version", TOKVEC_VERSION, "vocab_size",
        (json_int_t)in->vocab_size, "dim", (json_int_t)in->dim,
        "context_length", (json_int_t)in->context_length, "dtype",
        tokvec_dtype_numpy_name(in->dtype), "positional",
        tokvec_positional_name(in->positional), "tensors", "token",
        in->token_tensor, "position", in->position_tensor, "token_dtype",
        in->token_dtype, "position_dtype", in->position_dtype, "limits",
        "max_body_bytes", (json_int_t)c->max_body_bytes, "max_tokens",
        (json_int_t)c->max_tokens, "max_batch", (json_int_t)c->max_batch,
        "max_queue", (json_int_t)c->max_queue, "max_connections",
        (json_int_t)c->max_connections, "max_inflight_bytes",
        (json_int_t)c->max_inflight_bytes);
    if (j && (json_object_set_new(j, "random_weights",
                                  json_boolean(random_weights(in))) < 0 ||
              json_object_set_new(j, "tokenizer", info_tokenizer(ref)) < 0 ||
              json_object_set_new(j, "model", info_model(x->s, ref)) < 0)) {
        json_decref(j);
        j = NULL;
    }
    table_release(ref);
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!text)
        return reply_fail(x, 500, "internal", "out of memory");
    size_t n = strlen(text);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        n, text, MHD_RESPMEM_MUST_FREE);
    return reply_queue(x, 200, r, "application/json", n);
}

enum MHD_Result route_token(req_ctx *x, const char *idtext)
{
    int64_t id;
    tv_error e;
    if (tv_request_token_id(idtext, &id, &e) < 0)
        return reply_error(x, &e);
    table_ref *ref = table_acquire(x->s);
    const tokvec_table_info *in = tokvec_table_get_info(ref->t);
    enum MHD_Result ret;
    float *vec = NULL;
    char *buf = NULL;
    size_t len = 0;
    tokvec_row row;
    if (tokvec_table_token_row(ref->t, id, &row) < 0) {
        ret = reply_fail(x, 422, "token_out_of_range",
                         "token id %" PRId64 " is out of range [0, %" PRId64
                         ")",
                         id, in->vocab_size);
        goto out;
    }
    /* Answered at once, so it cannot wait for the budget like a job: its
     * bound is taken first (reply_counted then holds the real size), and
     * while the budget is full it is a 503 to retry. */
    size_t bound = tv_token_json_bound(row.dim);
    if (bound <= tv_pool_budget(x->s->pool) &&
        !tv_pool_try_inline(x->s->pool, bound)) {
        ret = reply_fail(x, 503, "overloaded",
                         "max_inflight_bytes is held by answers being "
                         "sent; retry");
        goto out;
    }
    if (bound > tv_pool_budget(x->s->pool))
        bound = 0; /* reply_counted answers 413 */
    vec = tv_malloc((size_t)row.dim * sizeof *vec);
    buf = tv_malloc(tv_token_json_bound(row.dim));
    if (!vec || !buf) {
        free(buf);
        tv_pool_release(x->s->pool, bound);
        ret = reply_fail(x, 500, "internal", "out of memory");
        goto out;
    }
    tokvec_row_to_f32(&row, vec);
    len = tv_token_json(buf, id, vec, row.dim);
    TV_WROTE(len, tv_token_json_bound(row.dim));
    x->tokens = 1;
    ret = reply_counted(x, "application/json", buf, len, bound);
out:
    free(vec);
    table_release(ref);
    return ret;
}

enum MHD_Result route_metrics(req_ctx *x)
{
    size_t n;
    char *text = tv_metrics_render(x->s->pool, &n);
    if (!text)
        return reply_fail(x, 500, "internal", "out of memory");
    struct MHD_Response *r = MHD_create_response_from_buffer(
        n, text, MHD_RESPMEM_MUST_FREE);
    return reply_queue(x, 200, r, "text/plain; version=0.0.4", n);
}

/* GET /v1/models: the one model served, as OpenAI lists models. "created"
 * is the server's start (Unix seconds). */
enum MHD_Result route_models(req_ctx *x)
{
    json_t *j = json_pack("{s:s, s:[{s:s, s:s, s:I, s:s}]}", "object", "list",
                          "data", "id", x->s->model_name, "object", "model",
                          "created", (json_int_t)x->s->started, "owned_by",
                          "tokvec");
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!text)
        return reply_fail(x, 500, "internal", "out of memory");
    size_t n = strlen(text);
    return reply_counted(x, "application/json", text, n, 0);
}
