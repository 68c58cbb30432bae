/* fuzz_embed.c -- libFuzzer target for the replies of POST /embed and GET
 * /tokens/{id}: the input picks the table, the route, the request's
 * options and the encoding together, and every reply is written by the
 * server's own writers (embed_plan.h: embed_plan_reply, then embed_write:
 * tokvec_embed + tv_embed_json / tv_embed_torch_json / tv_embed_ids_json,
 * as embed_job.c runs them) into buffers of exactly the planned sizes, so
 * that ASan reports any under-estimate (the server rounds its buffers up to
 * 64 bytes; this target does not).
 *
 * Input layout:
 *   byte 0   the table (table_kinds.h, modulo their count; vocab 300)
 *   byte 1   bits 0-1  route: 0, 1 a JSON body; 2 an int32 body; 3 GET
 *                      /tokens/{id}
 *            bits 2-4  the Accept header (ACCEPTS)
 *            bits 5-7  ?dtype= (DTYPES)
 *   JSON:    the rest is the body (tv_request_parse_json): ids, texts
 *            (tokenized by a tiny ByteLevel BPE tokenizer.json written at
 *            start: the 256 bytes and 6 merges, ids < 262), windows, pad_id,
 *            encoding_format, dtype, ...
 *   int32:   byte 2: bits 0-3 start_position (bit 4: set it), bit 5
 *            positions=false; then X-Tokvec-Shape up to the first '\n',
 *            then the body (tv_request_parse_binary)
 *   tokens:  the rest is the {id} text.
 * Limits: max_tokens 64, max_batch 16 (a run stays in milliseconds).
 *
 * A request that passes parsing, the query, negotiation, tokenizing and the
 * table check is answered in the negotiated format and then in each of the
 * fourteen the server can write (JSON floats, base64, torch x3 dtypes, raw
 * x3, npy x3, npz x3). Invariants (abort() -> a crash report):
 *  - a refused request is a 4xx with an error_type and a message;
 *  - the plan succeeds and embed_write writes at most its body (TV_WROTE);
 *  - raw and npy made a chunk at a time (embed_write_range) are the same
 *    bytes;
 *  - binary replies are the npy header (64-aligned) and the rows in the
 *    format's dtype: tokvec_embed's float32 rows narrowed (tokvec_narrow);
 *  - npz replies are a stored ZIP read back here (end record, central
 *    directory, local headers, each member's CRC-32): embeddings.npy (its
 *    npy header and those rows, in place at the plan's offset), then
 *    input_ids.npy for texts, target_ids.npy for windows,
 *    attention_mask.npy for a padded batch, int64, equal to the request's
 *    ids, targets and row lengths, and nothing else;
 *  - JSON replies parse: exactly shape [B,S,D], dtype, embeddings (floats
 *    that read back as the float32 rows, null for NaN/inf; or base64 of
 *    their bytes; or one torch.save archive per sequence, holding the rows
 *    in the dtype at the layout's data offset), and for texts input_ids
 *    (and target_ids for windows) equal to the request's ids, and for a
 *    padded batch attention_mask, 1 for each row's real tokens;
 *  - /tokens/{id}: {"id", "embedding"} with the row's float32 values.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed_plan.h"
#include "embed_text.h"
#include "npz.h"
#include "table_kinds.h"
#include "tokvec_embed.h"
#include "tokvec_tokenizer.h"
#include "torchsave.h"
#include "zipfmt.h"

enum { VOCAB = 300 };

static const char *const ACCEPTS[8] = {
    NULL,
    "application/json",
    "application/octet-stream",
    "application/x-npy",
    "application/x-npz, */*;q=0.5",
    "application/x-npy;q=0.5, application/octet-stream",
    "text/html",
    "application/json;q=0, application/octet-stream;q=0.1",
};
static const char *const DTYPES[8] = {NULL,  "float32", "float16", "bfloat16",
                                      "f16", NULL,      NULL,      "float32"};
static const tv_limits LIM = {.max_body_bytes = 1 << 20,
                              .max_tokens = 64,
                              .max_batch = 16};

static tokvec_tokenizer *tok;

/* GPT-2's bytes_to_unicode: the character of byte b, and the id order. */
static void byte_chars(unsigned order[256], unsigned chars[256])
{
    int n = 0, k = 0;
    char printable[256] = {0};
    for (unsigned b = 0; b < 256; b++)
        printable[b] = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) ||
                       (b >= 0xae && b <= 0xff);
    for (unsigned b = 0; b < 256; b++)
        if (printable[b]) {
            order[k] = b;
            chars[k++] = b;
        }
    for (unsigned b = 0; b < 256; b++)
        if (!printable[b]) {
            order[k] = b;
            chars[k++] = 256 + (unsigned)n++;
        }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char path[] = "/tmp/tokvec-fuzz-embed-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f)
        abort();
    unsigned order[256], chars[256];
    byte_chars(order, chars);
    fputs("{\"model\":{\"type\":\"BPE\",\"vocab\":{", f);
    for (int i = 0; i < 256; i++)
        fprintf(f, "\"\\u%04x\":%d,", chars[i], i);
    fputs("\"he\":256,\"ll\":257,\"\\u0120w\":258,\"or\":259,\"hell\":260,"
          "\"\\u0120wor\":261},\"merges\":[\"h e\",\"l l\",\"\\u0120 w\","
          "\"o r\",\"he ll\",\"\\u0120w or\"]},\"pre_tokenizer\":"
          "{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
          f);
    if (fclose(f))
        abort();
    char err[512] = "";
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    if (tokvec_tokenizer_open(path, &o, &tok) < 0) {
        fprintf(stderr, "fuzz_embed: tokenizer: %s\n", err);
        abort();
    }
    unlink(path);
    for (int k = 0; k < tk_count(); k++) /* all made before fuzzing */
        (void)tk_table(k, VOCAB);
    return 0;
}

static void refused(const tv_error *e)
{
    if (!e->type || !e->message[0] || e->status < 400 || e->status >= 500) {
        fprintf(stderr, "refused with %d %s: %s\n", e->status,
                e->type ? e->type : "(none)", e->message);
        abort();
    }
}

static long b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Strict padded base64 of s; malloc'd bytes, *n their count; aborts on
 * anything else. */
static unsigned char *unbase64(const char *s, size_t len, size_t *n)
{
    if (len % 4)
        abort();
    unsigned char *out = malloc(len / 4 * 3 + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        long v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            v[k] = s[i + k] == '=' && i + 4 == len && k >= 2
                       ? (pad++, 0)
                       : b64val((unsigned char)s[i + k]);
            if (v[k] < 0 || (pad && s[i + k] != '='))
                abort();
        }
        long w = v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3];
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)w;
    }
    *n = o;
    return out;
}

/* n values of dt at a and b are the same (NaN = NaN, any payload). */
static int same_values(tokvec_dtype dt, const void *a, const void *b, size_t n)
{
    size_t es = tokvec_dtype_size(dt);
    float x, y;
    for (size_t i = 0; i < n; i++) {
        const char *p = (const char *)a + i * es,
                   *q = (const char *)b + i * es;
        tokvec_widen(dt, p, &x, 1);
        tokvec_widen(dt, q, &y, 1);
        if (isnan(x) ? !isnan(y) : memcmp(p, q, es) != 0)
            return 0;
    }
    return 1;
}

/* json is [[id, ...], ...] equal to the B x S ids. */
static void check_ids(json_t *j, const int64_t *ids, int64_t B, int64_t S)
{
    if (!json_is_array(j) || json_array_size(j) != (size_t)B)
        abort();
    for (int64_t b = 0; b < B; b++) {
        json_t *row = json_array_get(j, (size_t)b);
        if (!json_is_array(row) || json_array_size(row) != (size_t)S)
            abort();
        for (int64_t s = 0; s < S; s++)
            if (json_integer_value(json_array_get(row, (size_t)s)) !=
                ids[b * S + s])
                abort();
    }
}

/* The JSON floats of one sequence: S lists of D numbers, each the float32
 * of f32 (null for NaN and inf). */
static void check_floats(json_t *seq, const float *f32, int64_t S, int64_t D)
{
    if (!json_is_array(seq) || json_array_size(seq) != (size_t)S)
        abort();
    for (int64_t s = 0; s < S; s++) {
        json_t *v = json_array_get(seq, (size_t)s);
        if (!json_is_array(v) || json_array_size(v) != (size_t)D)
            abort();
        for (int64_t d = 0; d < D; d++) {
            json_t *x = json_array_get(v, (size_t)d);
            float want = f32[s * D + d];
            if (!isfinite(want) ? !json_is_null(x)
                                : !json_is_number(x) ||
                                      (float)json_number_value(x) != want) {
                fprintf(stderr, "value %lld,%lld is not %.9g\n", (long long)s,
                        (long long)d, (double)want);
                abort();
            }
        }
    }
}

/* The attention mask of a padded request, B x S (malloc'd). */
static int64_t *mask_of(const tv_request *q)
{
    int64_t *m = malloc((size_t)(q->batch * q->seq) * sizeof *m);
    if (!m)
        abort();
    for (int64_t b = 0; b < q->batch; b++)
        for (int64_t s = 0; s < q->seq; s++)
            m[b * q->seq + s] = s < q->lens[b];
    return m;
}

static unsigned rd16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static size_t rd32(const unsigned char *p)
{
    return (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 |
           (size_t)p[3] << 24;
}

/* Member i of an npz read back through its central directory entry *c
 * (advanced past it): its name is want, its CRC-32 holds, its bytes lie
 * within the archive; returns where they start, *n their count. */
static const unsigned char *zip_member(const unsigned char *a, size_t size,
                                       const unsigned char **c,
                                       const char *want, size_t *n)
{
    const unsigned char *e = *c;
    size_t nl = rd16(e + 28), hdr = rd32(e + 42);
    if (rd32(e) != 0x02014b50 || rd16(e + 10) || nl != strlen(want) ||
        memcmp(e + 46, want, nl) || hdr + 30 > size ||
        rd32(a + hdr) != 0x04034b50 || memcmp(a + hdr + 4, e + 6, 22) ||
        memcmp(a + hdr + 30, want, nl))
        abort();
    size_t data = hdr + 30 + nl + rd16(a + hdr + 28);
    *n = rd32(e + 24);
    if (data % 64 || data + *n > size || rd32(e + 20) != *n ||
        tv_crc32(0, a + data, *n) != (uint32_t)rd32(e + 16))
        abort();
    *c = e + 46 + nl;
    return a + data;
}

/* An int64 (B, S) member equal to want. */
static void check_i64_member(const unsigned char *m, size_t n,
                             const int64_t *want, int64_t B, int64_t S)
{
    char h[TV_NPY_HEADER_MAX];
    const int64_t shape[2] = {B, S};
    size_t hl = tv_npy_header_of(h, "<i8", 2, shape);
    if (n != hl + (size_t)(B * S) * 8 || memcmp(m, h, hl))
        abort();
    for (int64_t i = 0; i < B * S; i++) {
        uint64_t v = 0;
        for (int k = 7; k >= 0; k--)
            v = v << 8 | m[hl + (size_t)i * 8 + (size_t)k];
        if ((int64_t)v != want[i])
            abort();
    }
}

static void check_npz(const char *out, size_t len, const tv_request *q,
                      tv_format fmt, int64_t D, const embed_plan *p,
                      const void *narrow)
{
    const unsigned char *a = (const unsigned char *)out;
    int64_t B = q->batch, S = q->seq;
    size_t n, count = (size_t)(B * S * D);
    if (len != p->body || len < 22)
        abort();
    const unsigned char *e = a + len - 22;
    unsigned members = 1 + (q->has_text != 0) + (q->targets != NULL) +
                       (q->lens != NULL);
    if (rd32(e) != 0x06054b50 || rd16(e + 8) != members ||
        rd16(e + 10) != members || rd32(e + 16) + rd32(e + 12) != len - 22)
        abort();
    const unsigned char *c = a + rd32(e + 16);
    const unsigned char *m = zip_member(a, len, &c, "embeddings.npy", &n);
    char h[TV_NPY_HEADER_MAX];
    size_t hl = tv_npy_header(h, fmt.dtype, B, S, D);
    if (n != hl + count * tokvec_dtype_size(fmt.dtype) || memcmp(m, h, hl) ||
        m + hl != a + p->header ||
        !same_values(fmt.dtype, m + hl, narrow, count))
        abort();
    if (q->has_text) {
        m = zip_member(a, len, &c, "input_ids.npy", &n);
        check_i64_member(m, n, q->ids, B, S);
    }
    if (q->targets) {
        m = zip_member(a, len, &c, "target_ids.npy", &n);
        check_i64_member(m, n, q->targets, B, S);
    }
    if (q->lens) {
        int64_t *mask = mask_of(q);
        m = zip_member(a, len, &c, "attention_mask.npy", &n);
        check_i64_member(m, n, mask, B, S);
        free(mask);
    }
    if (c != e)
        abort();
}

static void check_json(const char *out, size_t len, const tv_request *q,
                       tv_format fmt, int64_t D, const float *f32,
                       const void *narrow)
{
    int64_t B = q->batch, S = q->seq;
    size_t es = tokvec_dtype_size(fmt.dtype), per = (size_t)(S * D);
    json_error_t je;
    json_t *j = json_loadb(out, len, 0, &je);
    if (!j) {
        fprintf(stderr, "reply is not JSON: %s\n", je.text);
        abort();
    }
    json_t *shape = json_object_get(j, "shape");
    json_t *emb = json_object_get(j, "embeddings");
    size_t keys = 3 + (q->has_text ? 1 + (q->targets != NULL) : 0) +
                  (q->lens != NULL);
    if (json_object_size(j) != keys || json_array_size(shape) != 3 ||
        json_integer_value(json_array_get(shape, 0)) != B ||
        json_integer_value(json_array_get(shape, 1)) != S ||
        json_integer_value(json_array_get(shape, 2)) != D ||
        strcmp(json_string_value(json_object_get(j, "dtype")),
               tokvec_dtype_numpy_name(fmt.dtype)) ||
        !emb)
        abort();
    if (q->has_text) {
        check_ids(json_object_get(j, "input_ids"), q->ids, B, S);
        if (q->targets)
            check_ids(json_object_get(j, "target_ids"), q->targets, B, S);
    }
    if (q->lens) {
        int64_t *mask = mask_of(q);
        check_ids(json_object_get(j, "attention_mask"), mask, B, S);
        free(mask);
    }
    if (q->torch) {
        tv_torchsave_layout l;
        if (tv_torchsave_plan(S, D, fmt.dtype, &l) < 0 ||
            json_array_size(emb) != (size_t)B)
            abort();
        for (int64_t b = 0; b < B; b++) {
            json_t *s = json_array_get(emb, (size_t)b);
            size_t n;
            unsigned char *a = unbase64(json_string_value(s),
                                        json_string_length(s), &n);
            if (!json_is_string(s) || n != l.size || memcmp(a, "PK\3\4", 4) ||
                l.data_bytes != per * es ||
                !same_values(fmt.dtype, a + l.data_offset,
                             (const char *)narrow + (size_t)b * per * es, per))
                abort();
            free(a);
        }
    } else if (q->base64) {
        size_t n;
        unsigned char *a = unbase64(json_string_value(emb),
                                    json_string_length(emb), &n);
        if (!json_is_string(emb) || n != (size_t)B * per * 4 ||
            memcmp(a, f32, n))
            abort();
        free(a);
    } else {
        if (!json_is_array(emb) || json_array_size(emb) != (size_t)B)
            abort();
        for (int64_t b = 0; b < B; b++)
            check_floats(json_array_get(emb, (size_t)b), f32 + (size_t)b * per,
                         S, D);
    }
    json_decref(j);
}

/* Plans, writes and checks the reply to q in fmt. f32: the float32 rows
 * (tokvec_embed), for the checks. */
static void answer(const tokvec_table *t, const tv_request *q, tv_format fmt,
                   const float *f32)
{
    int64_t D = tokvec_table_get_info(t)->dim;
    size_t n = (size_t)(q->batch * q->seq * D);
    embed_plan p;
    if (embed_plan_reply(t, q, fmt, &p) < 0)
        abort(); /* sizes this small always fit */
    char *out = malloc(p.body);
    void *scratch = p.scratch ? malloc(p.scratch) : NULL;
    void *narrow = malloc(n * tokvec_dtype_size(fmt.dtype));
    if (!out || (p.scratch && !scratch) || !narrow)
        abort();
    tokvec_narrow(fmt.dtype, f32, narrow, n);
    size_t len = embed_write(t, q, fmt, &p, out, scratch);
    if (!len || len > p.body)
        abort();
    if (fmt.kind == TV_OUT_JSON) {
        check_json(out, len, q, fmt, D, f32, narrow);
    } else if (fmt.kind == TV_OUT_NPZ) {
        check_npz(out, len, q, fmt, D, &p, narrow);
    } else {
        size_t rows = n * tokvec_dtype_size(fmt.dtype);
        if (len != p.header + rows || p.header % 64 ||
            (fmt.kind == TV_OUT_NPY) != (p.header > 0) ||
            (p.header && memcmp(out, "\x93NUMPY", 6)) ||
            !same_values(fmt.dtype, out + p.header, narrow, n))
            abort();
        /* ... and made a chunk at a time, the same bytes (any chunk
         * size: here one the shape picks, rows cut included) */
        embed_rows r;
        size_t at = 0, k, max = (size_t)(q->batch * 7 + q->seq) % 97 + 1;
        char *part = malloc(p.body), *tmp = malloc(D * 4);
        if (!part || !tmp || !embed_plan_chunked(q, fmt))
            abort();
        embed_rows_init(&r, t, q, fmt, &p, q->ids);
        do {
            k = embed_write_range(&r, at, part + at, max, tmp);
            at += k;
        } while (k > 0);
        if (at != p.body || memcmp(part, out, p.body))
            abort();
        free(part);
        free(tmp);
    }
    free(out);
    free(scratch);
    free(narrow);
}

/* Every reply the server can write for q: the negotiated one first. */
static void answer_all(const tokvec_table *t, const tv_request *q,
                       tv_format negotiated)
{
    int64_t D = tokvec_table_get_info(t)->dim;
    size_t n = (size_t)(q->batch * q->seq * D);
    float *f32 = malloc(n * sizeof *f32);
    unsigned flags = q->positions ? 0 : TOKVEC_EMBED_NO_POSITIONS;
    if (!f32 || tokvec_embed(t, q->ids, q->batch, q->seq, q->start_position,
                             flags, f32) < 0)
        abort();
    answer(t, q, negotiated, f32);
    static const tokvec_dtype dts[3] = {TOKVEC_F32, TOKVEC_F16, TOKVEC_BF16};
    /* The same request in the other encodings. */
    tv_request v = *q;
    for (int k = 0; k < 2; k++) { /* JSON floats, base64 */
        v.base64 = k;
        v.torch = 0;
        answer(t, &v, (tv_format){TV_OUT_JSON, TOKVEC_F32}, f32);
    }
    for (int d = 0; d < 3; d++) {
        v.base64 = 0;
        v.torch = 1;
        answer(t, &v, (tv_format){TV_OUT_JSON, dts[d]}, f32);
        answer(t, q, (tv_format){TV_OUT_RAW, dts[d]}, f32);
        answer(t, q, (tv_format){TV_OUT_NPY, dts[d]}, f32);
        answer(t, q, (tv_format){TV_OUT_NPZ, dts[d]}, f32);
    }
    free(f32);
}

/* GET /tokens/{id}: the reply in exactly tv_token_json_bound bytes. */
static void route_token(const tokvec_table *t, const uint8_t *data,
                        size_t size)
{
    char text[64];
    if (size >= sizeof text || memchr(data, 0, size))
        return;
    memcpy(text, data, size);
    text[size] = 0;
    int64_t id;
    tv_error e = {0};
    tokvec_row row;
    if (tv_request_token_id(text, &id, &e) < 0) {
        refused(&e);
        return;
    }
    if (tokvec_table_token_row(t, id, &row) < 0)
        return; /* 422 token_out_of_range */
    float *vec = malloc((size_t)row.dim * sizeof *vec);
    size_t bound = tv_token_json_bound(row.dim);
    char *buf = malloc(bound);
    if (!vec || !buf)
        abort();
    tokvec_row_to_f32(&row, vec);
    size_t len = tv_token_json(buf, id, vec, row.dim);
    TV_WROTE(len, bound);
    json_t *j = json_loadb(buf, len, 0, NULL);
    if (!j || json_object_size(j) != 2 ||
        json_integer_value(json_object_get(j, "id")) != id)
        abort();
    json_t *emb = json_object_get(j, "embedding");
    json_t *wrapped = json_pack("[O]", emb);
    check_floats(wrapped, vec, 1, row.dim);
    json_decref(wrapped);
    json_decref(j);
    free(buf);
    free(vec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const tokvec_table *t = tk_table(data[0] % tk_count(), VOCAB);
    unsigned route = data[1] & 3;
    const char *accept = ACCEPTS[data[1] >> 2 & 7];
    const char *dtype = DTYPES[data[1] >> 5 & 7];
    data += 2;
    size -= 2;
    if (route == 3) {
        route_token(t, data, size);
        return 0;
    }
    tv_request q;
    tv_request_init(&q);
    tv_error e = {0};
    tv_body_kind kind = route == 2 ? TV_BODY_BINARY : TV_BODY_JSON;
    tv_format fmt = {TV_OUT_JSON, TOKVEC_F32}; /* negotiated below */
    int rc;
    if (kind == TV_BODY_JSON) {
        rc = tv_request_parse_json((const char *)data, size, &LIM, &q, &e);
    } else {
        if (size < 1)
            goto out;
        unsigned opt = data[0];
        const uint8_t *nl = memchr(data + 1, '\n', size - 1);
        char shape[32];
        size_t sl = nl ? (size_t)(nl - data - 1) : 0;
        if (!nl || sl >= sizeof shape)
            goto out;
        memcpy(shape, data + 1, sl);
        shape[sl] = 0;
        rc = tv_request_parse_binary(nl + 1, size - 2 - sl, shape, &LIM, &q,
                                     &e);
        char start[4];
        snprintf(start, sizeof start, "%u", opt & 15);
        if (rc == 0 && (opt & 16))
            rc = tv_request_query(&q, kind, "start_position", start, &e);
        if (rc == 0 && (opt & 32))
            rc = tv_request_query(&q, kind, "positions", "false", &e);
    }
    if (rc == 0 && dtype)
        rc = tv_request_query(&q, kind, "dtype", dtype, &e);
    if (rc == 0)
        rc = tv_negotiate_embed(accept, q.dtype, q.body_dtype, q.torch, q.npz,
                                &fmt, &e);
    if (rc == 0 && q.has_text)
        rc = tv_embed_text_resolve(tok, t, NULL, &LIM, &q, &e);
    if (rc == 0)
        rc = tv_request_check(&q, t, &e);
    if (rc < 0)
        refused(&e);
    else
        answer_all(t, &q, fmt);
out:
    tv_request_free(&q);
    return 0;
}
