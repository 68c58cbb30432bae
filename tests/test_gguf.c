/* test_gguf.c -- the GGUF parser (core/table/gguf.c): a good v3 file written
 * here from ggml's docs/gguf.md, then one mutation of it per rule the
 * parser checks, each with its error code and a message naming the file.
 * Also runs under ASan+UBSan (make sanitize-test): no crash, no leak.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tokvec_table.h"
#include "testutil.h"

static char path[300];

/* The ways to break the good file: each names the rule it breaks. */
/* A list of names, packed (clang-format would put one a line). */
/* clang-format off */
enum mut {
    GOOD, BAD_MAGIC, V1, V4, M_BE, V2, TOO_MANY_TENSORS, TOO_MANY_KV,
    KEY_PAST_END, EMPTY_KEY, UNKNOWN_VALUE_TYPE, BOOL_2, DEEP_ARRAYS,
    ALIGN_0, ALIGN_3, ALIGN_U64, ALIGN_TWICE, ALIGN_64, NAME_EMPTY,
    NAME_65, DIMS_0, DIMS_5, DIMS_OVERFLOW, TYPE_4, TYPE_99, PARTIAL_BLOCK,
    OFFSET_UNALIGNED, DATA_PAST_END, TENSOR_PAST_END, SAME_NAME, OVERLAP,
    TOKEN_1D, NO_TOKEN, TOKEN_I32, DIM_MISMATCH, EMPTY_TABLE, SHORT, NO_DATA,
};
/* clang-format on */

typedef struct {
    unsigned char b[8192];
    size_t n;
} buf;

static void put(buf *w, const void *p, size_t n)
{
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static void u32(buf *w, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                          (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    put(w, b, 4);
}
static void u64(buf *w, uint64_t v)
{
    u32(w, (uint32_t)v);
    u32(w, (uint32_t)(v >> 32));
}
static void str(buf *w, const char *s)
{
    u64(w, strlen(s));
    put(w, s, strlen(s));
}

static void tensor(buf *w, const char *name, uint32_t nd, const uint64_t *ne,
                   uint32_t type, uint64_t off)
{
    str(w, name);
    u32(w, nd);
    for (uint32_t i = 0; i < nd; i++)
        u64(w, ne[i]);
    u32(w, type);
    u64(w, off);
}

/* The good file: token_embd.weight F32 [3 x 32] (value i: i) at 0,
 * position_embd.weight Q8_0 [2 x 32] at 384, output.bias F32 [4] at 480;
 * alignment 32; three metadata pairs (one an array). m breaks one rule. */
static const char *gguf_file(enum mut m)
{
    buf *w = calloc(1, sizeof *w);
    uint32_t align = m == ALIGN_64 ? 64 : 32;
    put(w, m == BAD_MAGIC ? "GGUX" : "GGUF", 4);
    u32(w, m == V1     ? 1
           : m == V4   ? 4
           : m == V2   ? 2
           : m == M_BE ? 0x03000000u
                       : 3);
    u64(w, m == TOO_MANY_TENSORS ? 1000000 : m == SAME_NAME ? 3 : 3);
    u64(w, m == TOO_MANY_KV ? 1000000 : m == ALIGN_TWICE ? 4 : 3);
    /* metadata */
    if (m == KEY_PAST_END) {
        u64(w, 1u << 20);
    } else {
        str(w, m == EMPTY_KEY ? "" : "general.architecture");
    }
    u32(w, m == UNKNOWN_VALUE_TYPE ? 13 : 8);
    str(w, "gpt2");
    str(w, "general.alignment");
    if (m == ALIGN_U64) {
        u32(w, 10);
        u64(w, 32);
    } else {
        u32(w, 4);
        u32(w, m == ALIGN_0 ? 0 : m == ALIGN_3 ? 3 : align);
    }
    str(w, "x.flag");
    if (m == DEEP_ARRAYS) { /* arrays of one array, 10 deep */
        u32(w, 9);
        for (int i = 0; i < 9; i++) {
            u32(w, 9);
            u64(w, 1);
        }
        u32(w, 0);
        u64(w, 0);
    } else {
        u32(w, 9); /* array of 2 bools */
        u32(w, 7);
        u64(w, 2);
        unsigned char bools[2] = {1, m == BOOL_2 ? 2 : 0};
        put(w, bools, 2);
    }
    if (m == ALIGN_TWICE) {
        str(w, "general.alignment");
        u32(w, 4);
        u32(w, 32);
    }
    /* tensor infos */
    uint64_t tok[2] = {32, m == EMPTY_TABLE ? 0 : 3}, pos[2] = {32, 2};
    uint64_t big[2] = {1ull << 62, 1ull << 62};
    const char *tname = m == NO_TOKEN     ? "tok.weight"
                        : m == NAME_EMPTY ? ""
                        : m == NAME_65    ? "token_embd.weight_______________"
                                            "_________________________________"
                                          : "token_embd.weight";
    uint32_t tnd = m == DIMS_0 ? 0 : m == DIMS_5 ? 5 : m == TOKEN_1D ? 1 : 2;
    uint64_t ne5[5] = {32, 3, 1, 1, 1}, ne1[1] = {96};
    tensor(w, tname, tnd,
           m == DIMS_OVERFLOW ? big
           : m == DIMS_5      ? ne5
           : m == TOKEN_1D    ? ne1
                              : tok,
           m == TYPE_4      ? 4
           : m == TYPE_99   ? 99
           : m == TOKEN_I32 ? 26
                            : 0,
           m == OFFSET_UNALIGNED ? 4 : 0);
    if (m == DIM_MISMATCH) { /* one row of 64: the same bytes */
        pos[0] = 64;
        pos[1] = 1;
    }
    if (m == PARTIAL_BLOCK)
        pos[0] = 48;
    tensor(w, m == SAME_NAME ? "token_embd.weight" : "position_embd.weight", 2,
           pos, 8, 384);
    uint64_t four[1] = {4};
    tensor(w, "output.bias", 1, four, 0,
           m == OVERLAP           ? 352
           : m == TENSOR_PAST_END ? 512
                                  : 480);
    size_t pad = (align - w->n % align) % align;
    if (m != NO_DATA) {
        memset(w->b + w->n, 0, pad);
        w->n += pad;
        float t[96];
        for (int i = 0; i < 96; i++)
            t[i] = (float)i;
        put(w, t, sizeof t); /* tok: 384 bytes */
        if (m == DATA_PAST_END)
            goto done; /* the file ends after the token table */
        for (int blk = 0; blk < 2; blk++) {     /* pos: two Q8_0 blocks */
            unsigned char q[34] = {0x00, 0x3c}; /* d = 1 */
            for (int j = 0; j < 32; j++)
                q[2 + j] = (unsigned char)(j - blk * 5);
            put(w, q, sizeof q);
        }
        w->n += 480 - 452;
        float bias[4] = {0};
        put(w, bias, sizeof bias);
    }
done:
    if (m == SHORT)
        w->n = 20;
    snprintf(path, sizeof path, "%s/m%d.gguf", tu_dir, (int)m);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(w->b, 1, w->n, f);
    fclose(f);
    free(w);
    return path;
}

static void expect(enum mut m, int code, const char *says)
{
    char err[512] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_table *t = (tokvec_table *)1;
    const char *p = gguf_file(m);
    int rc = tokvec_table_open(p, &o, &t);
    if (rc == 0)
        tokvec_table_close(t);
    if (rc != code)
        fail_msg("mutation %d: got %d (%s), want %d; message: %s", (int)m, rc,
                 tokvec_errname(rc), code, err);
    if (code && (!strstr(err, p) || !strstr(err, says)))
        fail_msg("mutation %d: message '%s' lacks '%s'", (int)m, err, says);
}

static void good_file_serves_both_tables(void **s)
{
    (void)s;
    tokvec_table *t;
    char err[256] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    if (tokvec_table_open(gguf_file(GOOD), &o, &t))
        fail_msg("%s", err);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_string_equal(in->format, "gguf");
    assert_int_equal(in->vocab_size, 3);
    assert_int_equal(in->dim, 32);
    assert_int_equal(in->positional, TOKVEC_POS_LEARNED);
    assert_int_equal(in->context_length, 2);
    assert_string_equal(in->token_dtype, "F32");
    assert_string_equal(in->position_dtype, "Q8_0");
    assert_int_equal(in->dtype, TOKVEC_F32);
    assert_non_null(strstr(in->metadata_json, "\"general.architecture\":"
                                              "\"gpt2\""));
    assert_non_null(strstr(in->metadata_json, "\"general.alignment\":32"));
    assert_int_equal(tokvec_table_tensor_count(t), 3);
    tokvec_tensor x;
    assert_int_equal(tokvec_table_tensor(t, 1, &x), 0);
    assert_string_equal(x.name, "position_embd.weight");
    assert_string_equal(x.dtype, "Q8_0");
    assert_int_equal(x.ndim, 2);
    assert_int_equal(x.shape[0], 2); /* numpy order: [rows, row length] */
    assert_int_equal(x.shape[1], 32);
    assert_int_equal(x.nbytes, 68);
    tokvec_row r;
    float v[32];
    assert_int_equal(tokvec_table_token_row(t, 2, &r), 0);
    assert_int_equal(r.qtype, TOKVEC_Q_NONE);
    tokvec_row_to_f32(&r, v);
    assert_true(v[0] == 64 && v[31] == 95);
    assert_int_equal(tokvec_table_position_row(t, 1, &r), 0);
    assert_int_equal(r.qtype, TOKVEC_Q8_0);
    assert_int_equal(r.nbytes, 34);
    tokvec_row_to_f32(&r, v);
    assert_true(v[0] == -5 && v[31] == 26);
    tokvec_table_close(t);
}

static void tensors_can_be_named(void **s)
{
    (void)s;
    /* Any 2-D tensor can be the token table: here the Q8_0 one. */
    tokvec_table_opts o = {.token_tensor = "position_embd.weight",
                           .positional = TOKVEC_POS_NONE};
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(gguf_file(GOOD), &o, &t), 0);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_int_equal(in->vocab_size, 2);
    assert_int_equal(in->dim, 32);
    assert_string_equal(in->token_dtype, "Q8_0");
    assert_null(in->position_dtype);
    tokvec_table_close(t);
    tokvec_table_opts none = {.position_tensor = "nope"};
    assert_int_equal(tokvec_table_open(gguf_file(GOOD), &none, &t),
                     TOKVEC_E_NO_TENSOR);
}

static void every_rule_has_its_error(void **s)
{
    (void)s;
    expect(BAD_MAGIC, TOKVEC_E_FORMAT, "not a safetensors, .npy or GGUF");
    expect(SHORT, TOKVEC_E_TRUNCATED, "past the end of the file");
    expect(V1, TOKVEC_E_GGUF, "version 1");
    expect(V4, TOKVEC_E_GGUF, "version 4");
    expect(M_BE, TOKVEC_E_GGUF, "big-endian");
    expect(TOO_MANY_TENSORS, TOKVEC_E_GGUF, "cannot fit");
    expect(TOO_MANY_KV, TOKVEC_E_GGUF, "cannot fit");
    expect(KEY_PAST_END, TOKVEC_E_TRUNCATED, "metadata key");
    expect(EMPTY_KEY, TOKVEC_E_GGUF, "1 to 65535");
    expect(UNKNOWN_VALUE_TYPE, TOKVEC_E_GGUF, "unknown type 13");
    expect(BOOL_2, TOKVEC_E_GGUF, "boolean of value 2");
    expect(DEEP_ARRAYS, TOKVEC_E_GGUF, "nested");
    expect(ALIGN_0, TOKVEC_E_GGUF, "general.alignment");
    expect(ALIGN_3, TOKVEC_E_GGUF, "power of two");
    expect(ALIGN_U64, TOKVEC_E_GGUF, "u32");
    expect(ALIGN_TWICE, TOKVEC_E_GGUF, "general.alignment");
    expect(NAME_EMPTY, TOKVEC_E_GGUF, "1 to 64");
    expect(NAME_65, TOKVEC_E_GGUF, "1 to 64");
    expect(DIMS_0, TOKVEC_E_RANK, "1 to 4");
    expect(DIMS_5, TOKVEC_E_RANK, "1 to 4");
    expect(DIMS_OVERFLOW, TOKVEC_E_SIZE, "overflows");
    expect(TYPE_4, TOKVEC_E_DTYPE, "unknown ggml type 4");
    expect(TYPE_99, TOKVEC_E_DTYPE, "unknown ggml type 99");
    expect(PARTIAL_BLOCK, TOKVEC_E_SIZE, "whole Q8_0 blocks of 32");
    expect(ALIGN_64, TOKVEC_E_OFFSETS, "multiple of the alignment 64");
    expect(OFFSET_UNALIGNED, TOKVEC_E_OFFSETS, "multiple of the alignment");
    expect(NO_DATA, TOKVEC_E_TRUNCATED, "data would start at byte");
    expect(DATA_PAST_END, TOKVEC_E_OFFSETS, "outside the data");
    expect(TENSOR_PAST_END, TOKVEC_E_OFFSETS, "outside the data");
    expect(SAME_NAME, TOKVEC_E_GGUF, "two tensors named");
    expect(OVERLAP, TOKVEC_E_OFFSETS, "overlap");
    expect(TOKEN_1D, TOKVEC_E_RANK, "not 2-D");
    expect(NO_TOKEN, TOKVEC_E_NO_TENSOR, "no token tensor");
    expect(TOKEN_I32, TOKVEC_E_DTYPE, "Q8_0, Q4_0");
    expect(EMPTY_TABLE, TOKVEC_E_EMPTY, "empty");
    expect(V2, 0, NULL);
}

static void position_table_must_be_as_wide(void **s)
{
    (void)s;
    expect(DIM_MISMATCH, TOKVEC_E_MISMATCH, "64 wide Q8_0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_file_serves_both_tables),
        cmocka_unit_test(tensors_can_be_named),
        cmocka_unit_test(every_rule_has_its_error),
        cmocka_unit_test(position_table_must_be_as_wide),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
