/* fuzz_request.c -- libFuzzer target for everything a client controls on
 * POST /embed: the body (JSON and binary), X-Tokvec-Shape, Content-Type,
 * Accept, ?dtype= and the query options, then the checks against a small
 * table and, when all of that passes, the embedding and its encoders.
 *
 * Input layout: fields separated by the byte 0x1E (ASCII record separator),
 * any of them may be missing (NULL):
 *
 *   body 0x1E content-type 0x1E shape 0x1E accept 0x1E dtype 0x1E query
 *
 * query is "k=v&k=v" as MHD would hand it to on_query(). The first byte of
 * the body, if it is 0x1F, selects the contract's default limits instead
 * of the small ones (it is dropped from the body).
 *
 * Invariants checked (abort() -> libFuzzer reports a crash):
 *  - every error a client can cause is a 4xx with an error_type, and its
 *    JSON body parses;
 *  - a request that passes parsing has 1 <= B, 1 <= S, B*S <= max_tokens,
 *    and a JSON one had no NUL byte in its body; one with text inputs has
 *    1 <= rows <= max_batch, each a text or a non-empty id list, the ids
 *    within max_tokens (tokenizing is not fuzzed here: fuzz_tokenc);
 *  - a request that passes tv_request_check embeds without error and the
 *    encoders (JSON, base64, torch) write no more than their bounds;
 *  - a JSON answer is float32 unless encoding_format is torch.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encode.h"
#include "request.h"
#include "tokvec_embed.h"
#include "tokvec_table.h"
#include "torchsave.h"

static tokvec_table *table;      /* learned positions, vocab 50, dim 4 */
static tokvec_table *table_none; /* no positions */

enum { VOCAB = 50, DIM = 4, CTX = 16 };

/* Writes a tiny F32 safetensors file and opens it. */
static tokvec_table *make_table(int with_pos)
{
    char path[] = "/tmp/tokvec-fuzz-req-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    char hdr[512];
    size_t tok_bytes = (size_t)VOCAB * DIM * 4;
    size_t pos_bytes = (size_t)CTX * DIM * 4;
    int n =
        with_pos
            ? snprintf(
                  hdr, sizeof hdr,
                  "{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[%d,%d],"
                  "\"data_offsets\":[0,%zu]},\"pos_emb.weight\":{\"dtype\":"
                  "\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}}",
                  VOCAB, DIM, tok_bytes, CTX, DIM, tok_bytes,
                  tok_bytes + pos_bytes)
            : snprintf(
                  hdr, sizeof hdr,
                  "{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[%d,%d],"
                  "\"data_offsets\":[0,%zu]}}",
                  VOCAB, DIM, tok_bytes);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)n >> (8 * i));
    size_t nf = (size_t)VOCAB * DIM + (with_pos ? (size_t)CTX * DIM : 0);
    float *data = malloc(nf * sizeof *data);
    for (size_t i = 0; i < nf; i++)
        data[i] = (float)i * 0.25f - 7.0f;
    if (write(fd, len8, 8) != 8 || write(fd, hdr, (size_t)n) != n ||
        write(fd, data, nf * 4) != (ssize_t)(nf * 4))
        abort();
    free(data);
    close(fd);
    tokvec_table *t;
    char err[256] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    if (tokvec_table_open(path, &o, &t) < 0) {
        fprintf(stderr, "fuzz_request: cannot open its table: %s\n", err);
        abort();
    }
    unlink(path); /* the map stays valid */
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    table = make_table(1);
    table_none = make_table(0);
    return 0;
}

static void check_error(const tv_error *e)
{
    if (e->status < 400 || e->status > 499 || !e->type || !*e->type) {
        fprintf(stderr, "client input gave status %d type %s: %s\n", e->status,
                e->type ? e->type : "(null)", e->message);
        abort();
    }
    char body[TV_ERROR_BODY_MAX];
    size_t n = tv_error_body(e, body);
    if (n >= TV_ERROR_BODY_MAX)
        abort();
    json_error_t je;
    json_t *j = json_loadb(body, n, 0, &je);
    if (!j || !json_is_string(json_object_get(j, "error")) ||
        !json_is_string(json_object_get(j, "error_type"))) {
        fprintf(stderr, "error body is not the contract's JSON: %.*s\n",
                (int)n, body);
        abort();
    }
    json_decref(j);
}

/* Splits data at 0x1E into up to nf NUL-terminated fields (NULL if absent).
 * Returns the owned buffer; lens[i] are the field lengths. */
static char *split(const uint8_t *data, size_t size, char **f, size_t *lens,
                   int nf)
{
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (int i = 0; i < nf; i++)
        f[i] = NULL, lens[i] = 0;
    char *p = buf, *end = buf + size;
    for (int i = 0; i < nf && p <= end; i++) {
        char *sep = i + 1 < nf ? memchr(p, 0x1e, (size_t)(end - p)) : NULL;
        f[i] = p;
        lens[i] = sep ? (size_t)(sep - p) : (size_t)(end - p);
        p[lens[i]] = '\0';
        if (!sep)
            break;
        p = sep + 1;
    }
    return buf;
}

static void embed_and_encode(const tv_request *r, const tokvec_table *t,
                             const tv_format *fmt)
{
    unsigned flags = r->positions ? 0 : TOKVEC_EMBED_NO_POSITIONS;
    const tokvec_table_info *in = tokvec_table_get_info(t);
    int64_t B = r->batch, S = r->seq, D = in->dim;
    if (fmt->kind != TV_OUT_JSON || r->torch) {
        if (fmt->dtype == TOKVEC_F16)
            flags |= TOKVEC_EMBED_OUT_F16;
        else if (fmt->dtype == TOKVEC_BF16)
            flags |= TOKVEC_EMBED_OUT_BF16;
    }
    size_t n = tokvec_embed_size(t, B, S, flags);
    if (!n)
        abort(); /* check passed: the size must be known */
    char npy[TV_NPY_HEADER_MAX];
    size_t hdr = fmt->kind == TV_OUT_NPY
                     ? tv_npy_header(npy, fmt->dtype, B, S, D)
                     : 0;
    if (hdr > TV_NPY_HEADER_MAX || hdr % 64)
        abort();
    float *out = aligned_alloc(64, (n + 63) / 64 * 64);
    if (tokvec_embed(t, r->ids, B, S, r->start_position, flags, out) < 0)
        abort(); /* tv_request_check said yes */
    if (fmt->kind == TV_OUT_JSON) {
        tv_torchsave_layout l = {0};
        size_t bound = r->torch
                           ? tv_embed_torch_json_bound(B, S, D, fmt->dtype)
                           : tv_embed_json_bound(B, S, D, r->base64);
        if (!bound ||
            (r->torch && tv_torchsave_plan(S, D, fmt->dtype, &l) < 0))
            abort();
        char *js = malloc(bound);
        char *archive = r->torch ? malloc(l.size) : NULL;
        size_t len = r->torch ? tv_embed_torch_json(js, out, B, S, D,
                                                    fmt->dtype, archive)
                              : tv_embed_json(js, out, B, S, D, r->base64);
        free(archive);
        if (len > bound)
            abort();
        json_error_t je;
        json_t *j = json_loadb(js, len, 0, &je);
        if (!j)
            abort();
        json_decref(j);
        free(js);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    char *f[6];
    size_t len[6];
    char *buf = split(data, size, f, len, 6);
    char *body = f[0], *ctype = f[1], *shape = f[2], *accept = f[3],
         *dtype = f[4], *query = f[5];
    size_t body_len = len[0];

    tv_limits small = {.max_body_bytes = 64 * 1024,
                       .max_tokens = 4096,
                       .max_batch = 64};
    tv_limits dflt = {.max_body_bytes = 16u << 20,
                      .max_tokens = 65536,
                      .max_batch = 4096};
    const tv_limits *lim = &small;
    if (body_len && (unsigned char)body[0] == 0x1f) {
        lim = &dflt;
        body++;
        body_len--;
    }

    tv_body_kind kind = tv_body_kind_of(ctype);
    tv_request r;
    tv_error e;

    /* Both parsers see every body: binary with the shape field. */
    tv_request rb;
    if (tv_request_parse_binary(body, body_len, shape, lim, &rb, &e) == 0) {
        if (rb.batch < 1 || rb.seq < 1 ||
            rb.batch * rb.seq > lim->max_tokens || rb.batch > lim->max_batch ||
            (size_t)(rb.batch * rb.seq) * 4 != body_len)
            abort();
        tv_request_free(&rb);
    } else {
        check_error(&e);
    }

    int rc = kind == TV_BODY_BINARY
                 ? tv_request_parse_binary(body, body_len, shape, lim, &r, &e)
                 : tv_request_parse_json(body, body_len, lim, &r, &e);
    if (rc < 0) {
        check_error(&e);
        goto out;
    }
    if (kind != TV_BODY_BINARY && memchr(body, '\0', body_len))
        abort(); /* a NUL byte is never JSON (jansson skips some) */
    if (r.has_text) {
        /* Text inputs (contract section 7): rows as given, each a text or
         * a non-empty id list, within max_batch and (ids) max_tokens;
         * ids/batch/seq wait for a tokenizer (embed_text.c), not here. */
        int64_t total = 0;
        if (r.nrows < 1 || r.nrows > lim->max_batch || !r.rows || r.ids)
            abort();
        for (int64_t i = 0; i < r.nrows; i++) {
            const tv_text_row *row = &r.rows[i];
            if (!row->text == !row->ids || (row->ids && row->n < 1))
                abort();
            total += row->n;
        }
        if (total > lim->max_tokens)
            abort();
        tv_request_free(&r);
        goto out;
    }
    if (r.batch < 1 || r.seq < 1 || r.batch > lim->max_batch ||
        r.batch * r.seq > lim->max_tokens || !r.ids)
        abort();

    /* Query options, as MHD hands them over: key and value, '&'-split. */
    const char *dtype_q = dtype;
    if (query) {
        char *save = NULL;
        for (char *kv = strtok_r(query, "&", &save); kv;
             kv = strtok_r(NULL, "&", &save)) {
            char *eq = strchr(kv, '=');
            if (eq)
                *eq++ = '\0';
            if (!strcmp(kv, "dtype")) {
                dtype_q = eq;
                continue;
            }
            if (tv_request_set_option(&r, kv, eq, &e) < 0) {
                check_error(&e);
                tv_request_free(&r);
                goto out;
            }
        }
    }
    if (r.start_position < 0)
        abort();

    tv_format fmt;
    int neg = tv_negotiate_embed(accept, dtype_q, r.body_dtype, r.torch, r.npz,
                                 &fmt, &e);
    if (neg < 0) {
        check_error(&e);
        tv_request_free(&r);
        goto out;
    }
    if (fmt.kind != TV_OUT_JSON && fmt.kind != TV_OUT_RAW &&
        fmt.kind != TV_OUT_NPY && fmt.kind != TV_OUT_NPZ)
        abort();
    /* .npz: only its name or "encoding_format" picks it */
    if (fmt.kind == TV_OUT_NPZ && !r.npz &&
        (!accept || !strcasestr(accept, "application/x-npz")))
        abort();
    if (fmt.kind == TV_OUT_JSON && fmt.dtype != TOKVEC_F32 && !r.torch)
        abort();
    (void)tv_content_type(fmt.kind);

    const tokvec_table *tabs[2] = {table, table_none};
    for (int i = 0; i < 2; i++) {
        if (tv_request_check(&r, tabs[i], &e) < 0) {
            check_error(&e);
            continue;
        }
        embed_and_encode(&r, tabs[i], &fmt);
    }
    tv_request_free(&r);
out:
    free(buf);
    return 0;
}
