/* table_kinds.c -- the tables of table_kinds.h: safetensors through
 * tokvec_safetensors_write, GGUF v3 written here from ggml's docs/gguf.md
 * (header, tensor infos, data aligned to 32), quantized blocks of
 * deterministic bytes with small finite float16 scales.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "table_kinds.h"
#include "tokvec_float.h"
#include "tokvec_write.h"

/* A tensor's type: ggml's id, values and bytes per block, and where the
 * float16 scales (d, dmin) of a block lie. F32 = 0, F16 = 1, BF16 = 30. */
typedef struct {
    const char *name;
    uint32_t ggml;
    unsigned vals, bytes;
    int scale[2]; /* byte offsets of float16 scales, -1: none */
} qtype;

static const qtype F32 = {"F32", 0, 1, 4, {-1, -1}};
static const qtype F16 = {"F16", 1, 1, 2, {-1, -1}};
static const qtype BF16 = {"BF16", 30, 1, 2, {-1, -1}};
static const qtype Q8_0 = {"Q8_0", 8, 32, 34, {0, -1}};
static const qtype Q4_0 = {"Q4_0", 2, 32, 18, {0, -1}};
static const qtype Q4_1 = {"Q4_1", 3, 32, 20, {0, 2}};
static const qtype Q5_0 = {"Q5_0", 6, 32, 22, {0, -1}};
static const qtype Q5_1 = {"Q5_1", 7, 32, 24, {0, 2}};
static const qtype Q4_K = {"Q4_K", 12, 256, 144, {0, 2}};
static const qtype Q5_K = {"Q5_K", 13, 256, 176, {0, 2}};
static const qtype Q6_K = {"Q6_K", 14, 256, 210, {208, -1}};

typedef struct {
    const char *name;
    int gguf;         /* else safetensors */
    const qtype *tok; /* token table */
    const qtype *pos; /* learned position table, or NULL */
    tokvec_positional positional;
    int64_t dim;
    int token_last; /* GGUF: the token tensor after the position tensor */
} kind;

static const kind kinds[] = {
    {"safetensors F32, learned", 0, &F32, &F32, TOKVEC_POS_AUTO, 4, 0},
    {"safetensors F16, learned", 0, &F16, &F16, TOKVEC_POS_AUTO, 4, 0},
    {"safetensors BF16, learned", 0, &BF16, &BF16, TOKVEC_POS_AUTO, 4, 0},
    {"safetensors F32, sinusoidal", 0, &F32, NULL, TOKVEC_POS_SINUSOIDAL, 4,
     0},
    {"safetensors BF16, no positions", 0, &BF16, NULL, TOKVEC_POS_AUTO, 4, 0},
    {"gguf Q8_0 tokens, Q4_0 positions", 1, &Q8_0, &Q4_0, TOKVEC_POS_AUTO, 32,
     0},
    {"gguf Q4_0 tokens, Q5_1 positions", 1, &Q4_0, &Q5_1, TOKVEC_POS_AUTO, 32,
     1},
    {"gguf Q4_1 tokens, Q8_0 positions", 1, &Q4_1, &Q8_0, TOKVEC_POS_AUTO, 32,
     0},
    {"gguf Q5_0 tokens, Q4_1 positions", 1, &Q5_0, &Q4_1, TOKVEC_POS_AUTO, 32,
     1},
    {"gguf Q5_1 tokens, Q5_0 positions", 1, &Q5_1, &Q5_0, TOKVEC_POS_AUTO, 32,
     0},
    {"gguf Q4_K tokens, Q6_K positions", 1, &Q4_K, &Q6_K, TOKVEC_POS_AUTO, 256,
     1},
    {"gguf Q5_K tokens, Q4_K positions", 1, &Q5_K, &Q4_K, TOKVEC_POS_AUTO, 256,
     0},
    {"gguf Q6_K tokens, Q5_K positions", 1, &Q6_K, &Q5_K, TOKVEC_POS_AUTO, 256,
     1},
    {"gguf F16 tokens, F32 positions", 1, &F16, &F32, TOKVEC_POS_AUTO, 4, 1},
    {"gguf Q4_0 tokens, no positions", 1, &Q4_0, NULL, TOKVEC_POS_AUTO, 32, 1},
};
enum { NKINDS = sizeof kinds / sizeof kinds[0] };

static const tokvec_table *opened[NKINDS];

int tk_count(void)
{
    return NKINDS;
}

const char *tk_name(int k)
{
    return kinds[k].name;
}

/* One value of a float table: small multiples of 1/4 (exact in every
 * dtype), zeros in TK_ZERO_ROW, inf in TK_BAD_ROW. */
static float value(int64_t row, int64_t i, int64_t dim, unsigned salt)
{
    if (row == TK_ZERO_ROW)
        return 0.0f;
    if (row == TK_BAD_ROW)
        return i == 0 ? INFINITY : 1.0f;
    return (float)((row * dim + i) * 37 % 11 + salt % 3) * 0.25f - 1.25f;
}

/* rows x dim values of type q, malloc'd; *len its bytes. */
static unsigned char *tensor_bytes(const qtype *q, int64_t rows, int64_t dim,
                                   unsigned salt, size_t *len)
{
    size_t row_bytes = (size_t)dim / q->vals * q->bytes;
    unsigned char *b = calloc((size_t)rows, row_bytes);
    if (!b)
        abort();
    uint32_t x = 2463534242u + salt;
    static const uint16_t scales[] = {0x211f, 0x2e66, 0x3c00, 0x0001, 0x1400};
    for (int64_t r = 0; r < rows; r++) {
        unsigned char *p = b + (size_t)r * row_bytes;
        if (q->vals == 1) {
            for (int64_t i = 0; i < dim; i++) {
                float v = value(r, i, dim, salt);
                if (q == &F32) {
                    memcpy(p + 4 * i, &v, 4);
                } else {
                    uint16_t h = q == &F16 ? tokvec_f32_to_f16(v)
                                           : tokvec_f32_to_bf16(v);
                    memcpy(p + 2 * i, &h, 2);
                }
            }
            continue;
        }
        if (r == TK_ZERO_ROW) /* zero scales: every value 0 */
            continue;
        for (size_t i = 0; i < row_bytes; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            p[i] = (unsigned char)x;
        }
        for (size_t blk = 0; blk < row_bytes / q->bytes; blk++)
            for (int s = 0; s < 2 && q->scale[s] >= 0; s++) {
                uint16_t h = r == TK_BAD_ROW && s == 0
                                 ? 0x7c00 /* inf */
                                 : scales[(r + (int64_t)blk + s) % 5];
                memcpy(p + blk * q->bytes + (size_t)q->scale[s], &h, 2);
            }
    }
    *len = (size_t)rows * row_bytes;
    return b;
}

typedef struct {
    unsigned char *b;
    size_t n, cap;
} buf;

static void put(buf *w, const void *p, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2;
        w->b = realloc(w->b, w->cap);
        if (!w->b)
            abort();
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void put_u32(buf *w, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                          (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    put(w, b, 4);
}

static void put_u64(buf *w, uint64_t v)
{
    put_u32(w, (uint32_t)v);
    put_u32(w, (uint32_t)(v >> 32));
}

static void pad32(buf *w)
{
    static const unsigned char zero[32];
    put(w, zero, (32 - w->n % 32) % 32);
}

typedef struct {
    const char *name;
    const qtype *q;
    int64_t rows;
    unsigned char *data;
    size_t len;
} gtensor;

/* GGUF v3, no metadata, alignment 32 (the default). */
static void write_gguf(FILE *f, const gtensor *t, int n, int64_t dim)
{
    buf w = {0};
    put(&w, "GGUF", 4);
    put_u32(&w, 3);
    put_u64(&w, (uint64_t)n);
    put_u64(&w, 0);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        put_u64(&w, strlen(t[i].name));
        put(&w, t[i].name, strlen(t[i].name));
        put_u32(&w, 2);
        put_u64(&w, (uint64_t)dim);
        put_u64(&w, (uint64_t)t[i].rows);
        put_u32(&w, t[i].q->ggml);
        put_u64(&w, off);
        off += (t[i].len + 31) / 32 * 32;
    }
    pad32(&w);
    for (int i = 0; i < n; i++) {
        put(&w, t[i].data, t[i].len);
        if (i + 1 < n) /* the last tensor ends the file */
            pad32(&w);
    }
    if (fwrite(w.b, 1, w.n, f) != w.n)
        abort();
    free(w.b);
}

static tokvec_table *make(const kind *k, int64_t vocab)
{
    char path[] = "/tmp/tokvec-fuzz-table-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    gtensor t[2] = {{k->gguf ? "token_embd.weight" : "tok_emb.weight", k->tok,
                     vocab, NULL, 0},
                    {k->gguf ? "position_embd.weight" : "pos_emb.weight",
                     k->pos, TK_CTX, NULL, 0}};
    int n = k->pos ? 2 : 1;
    for (int i = 0; i < n; i++)
        t[i].data = tensor_bytes(t[i].q, t[i].rows, k->dim, (unsigned)i,
                                 &t[i].len);
    if (k->gguf) {
        if (k->token_last && n == 2) {
            gtensor tmp = t[0];
            t[0] = t[1];
            t[1] = tmp;
        }
        FILE *f = fopen(path, "wb");
        if (!f)
            abort();
        write_gguf(f, t, n, k->dim);
        if (fclose(f))
            abort();
    } else {
        tokvec_write_tensor w[2];
        for (int i = 0; i < n; i++)
            w[i] = (tokvec_write_tensor){t[i].name,
                                         t[i].q == &F32   ? TOKVEC_F32
                                         : t[i].q == &F16 ? TOKVEC_F16
                                                          : TOKVEC_BF16,
                                         t[i].rows, k->dim, t[i].data};
        if (tokvec_safetensors_write(path, w, (size_t)n, NULL) < 0)
            abort();
    }
    for (int i = 0; i < n; i++)
        free(t[i].data);
    char err[512] = "";
    tokvec_table_opts o = {.positional = k->positional,
                           .context_length = k->pos ? 0 : TK_CTX,
                           .errbuf = err,
                           .errlen = sizeof err};
    tokvec_table *out;
    if (tokvec_table_open(path, &o, &out) < 0) {
        fprintf(stderr, "table_kinds: %s: %s\n", k->name, err);
        abort();
    }
    unlink(path);
    return out;
}

const tokvec_table *tk_table(int k, int64_t vocab)
{
    if (k < 0 || k >= NKINDS || vocab <= TK_BAD_ROW)
        abort();
    if (!opened[k])
        opened[k] = make(&kinds[k], vocab);
    return opened[k];
}
