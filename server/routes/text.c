/* text.c -- POST /tokenize and POST /decode, and the text options shared
 * with POST /embed (text.h; contract section 7).
 *
 * A call is parsed on the HTTP thread (the pre-scan of request.h bounds
 * the values jansson may build, then jansson with \u0000 allowed: a NUL
 * in a JSON string is text like any other), tokenized or decoded on a
 * worker, answered on the HTTP thread once the worker resumed the
 * connection. The call owns the parsed JSON (the texts point into it), the
 * ids to decode and the answer's body. Errors known only after tokenizing
 * (over max_tokens, text_too_short) are set by the worker in the call.
 *
 * Must hold: every answer is valid UTF-8 JSON (token texts and decoded
 * texts go through tokvec_utf8_lossy, so a token holding part of a
 * character is U+FFFD); what a call allocates is bounded by the body and
 * by max_tokens.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "metrics.h"
#include "text.h"

struct tv_text_call {
    tv_job job; /* first: the pool hands back this pointer */
    struct MHD_Connection *conn;
    const tokvec_tokenizer *tok;
    int kind;
    tv_limits lim;
    tv_text_opts o;
    json_t *root; /* /tokenize: the texts live here */
    size_t n;     /* texts or sequences */
    int32_t *ids; /* /decode: all ids, row after row */
    size_t *row;  /* /decode: row k is ids[row[k]..row[k+1]) */
    char *body;   /* the answer */
    size_t len, cap;
    uint64_t tokens; /* ids answered */
    int failed;      /* out of memory: 500 */
    int has_err;     /* err holds the answer (413, 422) */
    tv_pool *pool;   /* queued calls: the pool that runs them */
    size_t charged;  /* bytes of the body counted in max_inflight_bytes
                      * by the worker (tv_pool_charge), until taken */
    int skip;        /* /decode: skip_special_tokens */
    int small;       /* a body of at most INLINE_BODY_BYTES, no windows:
                      * run at once on the HTTP thread (tv_text_submit) */
    tv_error err;
};

/* Bodies this small are tokenized or decoded at once on the HTTP thread
 * (microseconds), never behind queued jobs: the small-job lane. */
#define INLINE_BODY_BYTES 1024

/* --- options ----------------------------------------------------------- */

int tv_text_no_tokenizer(tv_error *e)
{
    return tv_error_set(e, 400, "invalid_request",
                        "this server has no tokenizer, so it takes token "
                        "ids only: start it with --tokenizer FILE (e.g. "
                        "data/gpt2) to send text");
}

/* --- the worker's tokenizer state ------------------------------------- */

static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

static void state_free(void *p)
{
    tokvec_tok_state_free(p);
}

static void state_key_make(void)
{
    (void)pthread_key_create(&state_key, state_free);
}

tokvec_tok_state *tv_text_state(void)
{
    pthread_once(&state_once, state_key_make);
    tokvec_tok_state *s = pthread_getspecific(state_key);
    if (s)
        return s;
    s = tokvec_tok_state_new();
    if (s && pthread_setspecific(state_key, s)) {
        tokvec_tok_state_free(s);
        s = NULL;
    }
    return s;
}

int tv_text_encode(const tokvec_tokenizer *tok, const tv_text_opts *o,
                   const char *text, size_t len, unsigned flags,
                   tokvec_tok_ids *out, tv_error *e)
{
    tokvec_tok_state *st = tv_text_state();
    if (o->special)
        flags |= TOKVEC_TOK_SPECIAL;
    if (!st || tokvec_tokenizer_encode(tok, st, text, len, flags, out) < 0)
        return tv_error_set(e, 500, "internal", "out of memory");
    tv_metrics_tokenized(len);
    return 0;
}

long tv_text_token_text(void *ctx, int64_t id, char *buf, size_t cap)
{
    const unsigned char *b;
    size_t n;
    if (id < 0 || id > INT32_MAX ||
        tokvec_tokenizer_token(ctx, (int32_t)id, &b, &n, NULL) < 0 ||
        n > cap / 3)
        return -1;
    return (long)tokvec_utf8_lossy(b, n, buf);
}

/* --- the answer's body --------------------------------------------------- */

/* Room for `more` bytes at the end of the body; -1 on out of memory. */
static int grow(tv_text_call *c, size_t more)
{
    if (c->cap - c->len >= more)
        return 0;
    size_t cap = c->cap ? c->cap : 4096;
    while (cap - c->len < more)
        cap *= 2;
    char *b = tv_realloc(c->body, cap);
    if (!b)
        return -1;
    c->body = b;
    c->cap = cap;
    return 0;
}

static int put(tv_text_call *c, const char *s, size_t n)
{
    if (grow(c, n) < 0)
        return -1;
    memcpy(c->body + c->len, s, n);
    c->len += n;
    return 0;
}

#define PUTS(c, lit) put((c), (lit), sizeof(lit) - 1)

static int put_int(tv_text_call *c, long long v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", v);
    return put(c, buf, (size_t)n);
}

/* bytes[0..n) as a JSON string: made valid UTF-8 (U+FFFD), then '"', '\'
 * and control characters escaped. */
static int put_text(tv_text_call *c, const unsigned char *bytes, size_t n)
{
    char *u = n ? tv_malloc(3 * n) : NULL;
    if (n && !u)
        return -1;
    size_t m = n ? tokvec_utf8_lossy(bytes, n, u) : 0;
    if (grow(c, 6 * m + 2) < 0) {
        free(u);
        return -1;
    }
    char *o = c->body + c->len;
    *o++ = '"';
    for (size_t i = 0; i < m; i++) {
        unsigned char ch = (unsigned char)u[i];
        if (ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = (char)ch;
        } else if (ch < 0x20) {
            o += sprintf(o, "\\u%04x", ch);
        } else {
            *o++ = (char)ch;
        }
    }
    *o++ = '"';
    c->len = (size_t)(o - c->body);
    free(u);
    return 0;
}

static int put_ids(tv_text_call *c, const int32_t *ids, size_t n)
{
    if (put(c, "[", 1) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((i && put(c, ",", 1) < 0) || put_int(c, ids[i]) < 0)
            return -1;
    return put(c, "]", 1);
}

/* --- parsing ------------------------------------------------------------- */

static int parse_tokenize(tv_text_call *c, json_t *root, tv_error *e)
{
    const char *key;
    json_t *v, *inputs = NULL;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "inputs")) {
            inputs = v;
            continue;
        }
        int r = tv_text_option(&c->o, key, v, e);
        if (r < 0)
            return -1;
        if (!r)
            return tv_error_set(e, 400, "invalid_request",
                                "unknown key \"%.64s\" (allowed: inputs, "
                                "special_tokens, add_special_tokens, "
                                "truncate, "
                                "truncation_direction, max_length, stride)",
                                key);
    }
    if (tv_text_opts_check(&c->o, c->lim.max_tokens, e) < 0)
        return -1;
    if (!inputs)
        return tv_error_set(e, 400, "invalid_request",
                            "missing \"inputs\": a text or a list of texts");
    if (json_is_string(inputs)) {
        c->n = 1;
    } else if (json_is_array(inputs) && json_array_size(inputs)) {
        c->n = json_array_size(inputs);
        for (size_t i = 0; i < c->n; i++)
            if (!json_is_string(json_array_get(inputs, i)))
                return tv_error_set(e, 400, "invalid_request",
                                    "inputs[%zu] is not a string", i);
    } else {
        return tv_error_set(e, 400, "invalid_request",
                            "\"inputs\" must be a text or a non-empty list "
                            "of texts");
    }
    if ((int64_t)c->n > c->lim.max_batch)
        return tv_error_set(e, 413, "payload_too_large",
                            "%zu texts are over max_batch %" PRId64, c->n,
                            c->lim.max_batch);
    if (c->o.max_length && c->n != 1)
        return tv_error_set(e, 400, "invalid_request",
                            "\"max_length\" windows take one text, not %zu",
                            c->n);
    return 0;
}

/* One id of /decode at batch index b, position p. */
static int decode_id(tv_text_call *c, const json_t *v, size_t b, size_t p,
                     size_t k, tv_error *e)
{
    const unsigned char *bytes;
    size_t blen;
    if (!json_is_integer(v))
        return tv_error_set(e, 400, "invalid_request",
                            "id at batch index %zu, position %zu is not an "
                            "integer",
                            b, p);
    json_int_t id = json_integer_value(v);
    tokvec_tokenizer_info in;
    tokvec_tokenizer_get_info(c->tok, &in);
    if (id < 0 || id > INT32_MAX ||
        tokvec_tokenizer_token(c->tok, (int32_t)id, &bytes, &blen, NULL) < 0)
        return tv_error_set(e, 422, "token_out_of_range",
                            "token id %" JSON_INTEGER_FORMAT " at batch "
                            "index %zu, position %zu is not a token of the "
                            "tokenizer [0, %" PRId64 ")",
                            id, b, p, in.vocab_size);
    c->ids[k] = (int32_t)id;
    return 0;
}

static int parse_decode(tv_text_call *c, json_t *root, tv_error *e)
{
    const char *key;
    json_t *v, *ids = NULL;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "skip_special_tokens")) {
            if (!json_is_boolean(v))
                return tv_error_set(e, 400, "invalid_request",
                                    "\"skip_special_tokens\" must be true "
                                    "or false");
            c->skip = json_is_true(v);
            continue;
        }
        if (strcmp(key, "ids"))
            return tv_error_set(e, 400, "invalid_request",
                                "unknown key \"%.64s\" (allowed: ids, "
                                "skip_special_tokens)",
                                key);
        ids = v;
    }
    if (!json_is_array(ids))
        return tv_error_set(e, 400, "invalid_request",
                            "\"ids\" must be a list of ids or a list of "
                            "lists of ids");
    size_t nb = json_array_size(ids), total = 0;
    int nested = nb && json_is_array(json_array_get(ids, 0));
    c->n = nested ? nb : 1;
    if (nested)
        for (size_t b = 0; b < nb; b++) {
            json_t *row = json_array_get(ids, b);
            if (!json_is_array(row))
                return tv_error_set(e, 400, "invalid_request",
                                    "ids[%zu] is not a list of ids", b);
            total += json_array_size(row);
        }
    else
        total = nb;
    if ((int64_t)c->n > c->lim.max_batch)
        return tv_error_set(e, 413, "payload_too_large",
                            "%zu sequences are over max_batch %" PRId64, c->n,
                            c->lim.max_batch);
    if ((int64_t)total > c->lim.max_tokens)
        return tv_error_set(e, 413, "payload_too_large",
                            "%zu ids are over max_tokens %" PRId64, total,
                            c->lim.max_tokens);
    c->ids = tv_malloc((total ? total : 1) * sizeof *c->ids);
    c->row = tv_malloc((c->n + 1) * sizeof *c->row);
    if (!c->ids || !c->row)
        return tv_error_set(e, 500, "internal", "out of memory");
    size_t k = 0;
    for (size_t b = 0; b < c->n; b++) {
        json_t *row = nested ? json_array_get(ids, b) : ids;
        c->row[b] = k;
        for (size_t p = 0; p < json_array_size(row); p++, k++) {
            const json_t *id = json_array_get(row, p);
            if (decode_id(c, id, nested ? b : 0, p, k, e) < 0)
                return -1;
        }
    }
    c->row[c->n] = k;
    c->tokens = k;
    return 0;
}

int tv_text_parse(int kind, const char *body, size_t len,
                  const tokvec_tokenizer *tok, const tv_limits *lim,
                  tv_text_call **out, tv_error *e)
{
    *out = NULL;
    if (!tok)
        return tv_text_no_tokenizer(e);
    if (tv_request_prescan_json(body, len, lim, e, NULL) < 0)
        return -1;
    json_error_t je;
    json_t *root = json_loadb(body, len,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!root)
        return tv_error_set(e, 400, "invalid_json",
                            "body is not valid JSON: %.160s (line %d, "
                            "column %d)",
                            je.text, je.line, je.column);
    if (!json_is_object(root)) {
        json_decref(root);
        return tv_error_set(e, 400, "invalid_request",
                            "body must be a JSON object");
    }
    tv_text_call *c = tv_calloc(1, sizeof *c);
    if (!c) {
        json_decref(root);
        return tv_error_set(e, 500, "internal", "out of memory");
    }
    c->root = root;
    c->tok = tok;
    c->kind = kind;
    c->lim = *lim;
    tv_text_opts_init(&c->o);
    int rc = kind == TV_TEXT_DECODE ? parse_decode(c, root, e)
                                    : parse_tokenize(c, root, e);
    if (rc < 0) {
        tv_text_free(c);
        return -1;
    }
    c->small = len <= INLINE_BODY_BYTES && !c->o.max_length;
    *out = c;
    return 0;
}

/* --- the job ------------------------------------------------------------- */

static const char *text_at(const tv_text_call *c, size_t i, size_t *len)
{
    const json_t *in = json_object_get(c->root, "inputs");
    const json_t *s = json_is_string(in) ? in : json_array_get(in, i);
    *len = json_string_length(s);
    return json_string_value(s);
}

/* One token of /tokenize's answer. Its text is the input's bytes it came
 * from for byte-level BPE, else (WordPiece, and the tokens a
 * post-processor adds, which have the empty span 0..0) its vocabulary
 * string. */
static int put_token(tv_text_call *c, int first, int32_t id,
                     const unsigned char *piece, size_t start, size_t stop)
{
    const unsigned char *b;
    size_t bl;
    int special = 0;
    if (tokvec_tokenizer_token(c->tok, id, &b, &bl, &special)) {
        special = 0;
        b = NULL;
        bl = 0;
    }
    if (piece) {
        b = piece + start;
        bl = stop - start;
    }
    if ((!first && put(c, ",", 1) < 0) || PUTS(c, "{\"id\":") < 0 ||
        put_int(c, id) < 0 || PUTS(c, ",\"text\":") < 0 ||
        put_text(c, b, bl) < 0 ||
        (special ? PUTS(c, ",\"special\":true,\"start\":")
                 : PUTS(c, ",\"special\":false,\"start\":")) < 0 ||
        put_int(c, (long long)start) < 0 || PUTS(c, ",\"stop\":") < 0 ||
        put_int(c, (long long)stop) < 0 || put(c, "}", 1) < 0)
        return -1;
    return 0;
}

/* One text's tokens with their bytes and offsets; total counts ids. With
 * add_special_tokens the post-processor's tokens go around them, and
 * truncate leaves room for them (as Hugging Face's truncation does). */
static int tokenize_one(tv_text_call *c, const char *text, size_t tlen,
                        tokvec_tok_ids *ids)
{
    if (tv_text_encode(c->tok, &c->o, text, tlen, TOKVEC_TOK_OFFSETS, ids,
                       &c->err) < 0)
        return -1;
    const int32_t *pre = NULL, *post = NULL;
    size_t npre = 0, npost = 0;
    if (c->o.add_special)
        tokvec_tokenizer_added(c->tok, &pre, &npre, &post, &npost);
    size_t from = 0, to = ids->n, added = npre + npost;
    int64_t max = c->lim.max_tokens;
    int64_t keep = max > (int64_t)added ? max - (int64_t)added : 0;
    if (c->o.truncate && (int64_t)ids->n > keep) {
        from = c->o.left ? ids->n - (size_t)keep : 0;
        to = from + (size_t)keep;
    }
    if (to > from && (!ids->ids || !ids->offsets)) /* encode gave none */
        return tv_error_set(&c->err, 500, "internal", "out of memory");
    c->tokens += to - from + added;
    if ((int64_t)c->tokens > max)
        return tv_error_set(&c->err, 413, "payload_too_large",
                            "the texts are over max_tokens %" PRId64
                            " tokens (\"truncate\": true cuts each text to "
                            "it)",
                            max);
    tokvec_tokenizer_info in;
    tokvec_tokenizer_get_info(c->tok, &in);
    const unsigned char *u = (const unsigned char *)text;
    int bytes = !in.model || !strcmp(in.model, "BPE");
    if (put(c, "[", 1) < 0)
        return -1;
    for (size_t k = 0; k < npre; k++)
        if (put_token(c, k == 0, pre[k], NULL, 0, 0) < 0)
            return -1;
    for (size_t i = from; i < to; i++)
        if (put_token(c, i == from && !npre, ids->ids[i], bytes ? u : NULL,
                      ids->offsets[i], ids->stops[i]) < 0)
            return -1;
    for (size_t k = 0; k < npost; k++)
        if (put_token(c, k == 0 && !npre && to == from, post[k], NULL, 0, 0) <
            0)
            return -1;
    return put(c, "]", 1);
}

/* max_length windows of the one text: {"input_ids", "target_ids"}. */
static int tokenize_windows(tv_text_call *c, tokvec_tok_ids *ids)
{
    size_t tlen;
    const char *text = text_at(c, 0, &tlen);
    if (tv_text_encode(c->tok, &c->o, text, tlen, 0, ids, &c->err) < 0)
        return -1;
    int64_t L = c->o.max_length, T = c->o.stride;
    int64_t nw = ids->ids ? tv_text_windows((int64_t)ids->n, L, T) : 0;
    if (!nw)
        return tv_error_set(&c->err, 422, "text_too_short",
                            "the text is %zu tokens; max_length %" PRId64
                            " needs more than %" PRId64,
                            ids->n, L, L);
    if (nw > c->lim.max_batch || nw > c->lim.max_tokens / L)
        return tv_error_set(&c->err, 413, "payload_too_large",
                            "%" PRId64 " windows of %" PRId64 " tokens are "
                            "over max_batch %" PRId64
                            " or max_tokens %" PRId64,
                            nw, L, c->lim.max_batch, c->lim.max_tokens);
    c->tokens = (uint64_t)(nw * L);
    for (int shift = 0; shift < 2; shift++) {
        if ((shift ? PUTS(c, "],\"target_ids\":[")
                   : PUTS(c, "{\"input_ids\":[")) < 0)
            return -1;
        for (int64_t w = 0; w < nw; w++)
            if ((w && put(c, ",", 1) < 0) ||
                put_ids(c, ids->ids + w * T + shift, (size_t)L) < 0)
                return -1;
    }
    return put(c, "]}", 2);
}

void tv_text_run(tv_text_call *c)
{
    tokvec_tok_ids ids = {0};
    int rc = 0;
    if (c->kind == TV_TEXT_DECODE) {
        rc = put(c, "[", 1);
        for (size_t b = 0; rc == 0 && b < c->n; b++) {
            char *text;
            size_t tl;
            if (tokvec_tokenizer_decode_flags(
                    c->tok, c->ids + c->row[b], c->row[b + 1] - c->row[b],
                    c->skip ? TOKVEC_DEC_SKIP_SPECIAL : 0, &text, &tl,
                    NULL) < 0) {
                rc = -1;
                break;
            }
            rc = (b && put(c, ",", 1) < 0) ||
                         put_text(c, (const unsigned char *)text, tl) < 0
                     ? -1
                     : 0;
            free(text);
        }
        rc = rc ? rc : put(c, "]", 1);
    } else if (c->o.max_length) {
        rc = tokenize_windows(c, &ids);
    } else {
        rc = put(c, "[", 1);
        for (size_t i = 0; rc == 0 && i < c->n; i++) {
            size_t tl;
            const char *t = text_at(c, i, &tl);
            rc = (i && put(c, ",", 1) < 0) ? -1 : tokenize_one(c, t, tl, &ids);
        }
        rc = rc ? rc : put(c, "]", 1);
    }
    tokvec_tok_ids_free(&ids);
    if (rc < 0) {
        if (c->err.status)
            c->has_err = 1;
        else
            c->failed = 1;
    }
}

/* The worker counts the answer in max_inflight_bytes before it takes
 * its next job, so workers cannot build past the budget between one
 * answer and its reply. */
static void text_work(tv_job *job)
{
    tv_text_call *c = (tv_text_call *)job;
    tv_text_run(c);
    if (c->body && !c->failed && !c->has_err) {
        c->charged = c->len;
        tv_pool_charge(c->pool, c->charged);
    }
}

/* The worker (or the reaper): the HTTP thread takes over; nothing here
 * touches the call afterwards. */
static void text_done(tv_job *job)
{
    MHD_resume_connection(((tv_text_call *)job)->conn);
}

int tv_text_submit(tv_text_call *c, tv_pool *pool, struct MHD_Connection *conn)
{
    if (c->small && tv_pool_try_inline(pool, 0)) {
        tv_text_run(c);
        tv_pool_inline_done(pool);
        return 1;
    }
    if (tv_pool_reserve(pool) < 0)
        return -1;
    c->conn = conn;
    c->pool = pool;
    c->job.work = text_work;
    c->job.done = text_done;
    c->job.bytes = 0; /* bounded by max_tokens: not counted */
    MHD_suspend_connection(conn);
    tv_pool_push(pool, &c->job);
    return 0;
}

int tv_text_result(const tv_text_call *c, const char **body, size_t *len,
                   uint64_t *tokens, tv_error *e)
{
    if (c->job.expired)
        return tv_error_set(e, 503, "overloaded",
                            "the request waited max_queue_wait in the "
                            "queue; retry");
    if (c->has_err) {
        *e = c->err;
        return -1;
    }
    if (c->failed || !c->body)
        return tv_error_set(e, 500, "internal",
                            "could not build the response");
    *body = c->body;
    *len = c->len;
    *tokens = c->tokens;
    return 0;
}

char *tv_text_take_body(tv_text_call *c, size_t *charged)
{
    char *b = c->body;
    *charged = c->charged;
    c->body = NULL;
    c->charged = 0;
    return b;
}

void tv_text_free(tv_text_call *c)
{
    if (!c)
        return;
    if (c->charged)
        tv_pool_release(c->pool, c->charged);
    json_decref(c->root);
    free(c->ids);
    free(c->row);
    free(c->body);
    free(c);
}
