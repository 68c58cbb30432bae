/* test_table_rules.c -- what safetensors and .npy headers the table module
 * (core/table/) refuses, and with which one-line message: metadata of the
 * wrong type or out of range, tensor entries with fields of the wrong
 * type, shapes that overflow, empty and odd-typed tables, Model2Vec
 * weights and mapping vectors of the wrong rank, type or length, .npy
 * dictionaries missing a key; and the near misses that open (each checked
 * by its info and a row). Each file is written into a temporary
 * directory; the message must be exactly "<path>: <rule>".
 * Single-threaded.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tokvec_error.h"
#include "tokvec_table.h"

static char path[600];

/* A safetensors file: header then n bytes of data. */
static const char *st_file(const char *header, const void *data, size_t n)
{
    snprintf(path, sizeof path, "%s/t.safetensors", tu_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t len = strlen(header);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(len >> (8 * i));
    assert_int_equal(fwrite(le, 1, 8, f), 8);
    assert_int_equal(fwrite(header, 1, len, f), len);
    if (n)
        assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    return path;
}

/* Opens p with o (NULL: defaults): want NULL expects success and returns
 * the table, else the failure code and the message "<p>: want" exactly. */
static tokvec_table *expect(const char *p, const tokvec_table_opts *o,
                            int code, const char *want)
{
    char err[768], full[1400];
    tokvec_table *t;
    int rc = tu_table_open(p, o, err, sizeof err, &t);
    if (!want) {
        if (rc != 0)
            fail_msg("refused (%s): %s", tokvec_errname(rc), err);
        return t;
    }
    if (rc != code)
        fail_msg("got %d (%s), want %d (%s); message: %s", rc,
                 tokvec_errname(rc), code, tokvec_errname(code), err);
    assert_null(t);
    snprintf(full, sizeof full, "%s: %s", p, want);
    if (strcmp(err, full))
        fail_msg("message\n  '%s'\nwant\n  '%s'", err, full);
    return NULL;
}

static float data[64];

#define TOK \
    "\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]}"

typedef struct rule {
    const char *header;
    int code;
    const char *want;
} rule;

static void run(const rule *r, size_t n, const tokvec_table_opts *base)
{
    tokvec_table_opts o = base ? *base : (tokvec_table_opts){0};
    o.token_tensor = "tok";
    for (size_t k = 0; k < n; k++) {
        tokvec_table *t = expect(st_file(r[k].header, data, sizeof data), &o,
                                 r[k].code, r[k].want);
        if (t) {
            assert_int_equal(tokvec_table_get_info(t)->dim, 4);
            tokvec_table_close(t);
        }
    }
}

#define N(a) (sizeof(a) / sizeof *(a))

static void metadata_rules(void **s)
{
    (void)s;
    const rule r[] = {
        {"{\"__metadata__\":[]," TOK "}", TOKVEC_E_METADATA,
         "__metadata__ is not an object"},
        {"{\"__metadata__\":{\"a\":\"x\",\"b\":1}," TOK "}", TOKVEC_E_METADATA,
         "__metadata__ value of 'b' is not a string"},
        {"{\"__metadata__\":{\"positional\":\"rotary\"}," TOK "}",
         TOKVEC_E_METADATA,
         "__metadata__ positional 'rotary' is not learned, sinusoidal or "
         "none"},
        {"{\"__metadata__\":{\"context_length\":\"12x\"}," TOK "}",
         TOKVEC_E_METADATA,
         "__metadata__ context_length '12x' is not an integer in [0, 2^31)"},
        {"{\"__metadata__\":{\"context_length\":\"\"}," TOK "}",
         TOKVEC_E_METADATA,
         "__metadata__ context_length '' is not an integer in [0, 2^31)"},
        {"{\"__metadata__\":{\"context_length\":\"-1\"}," TOK "}",
         TOKVEC_E_METADATA,
         "__metadata__ context_length '-1' is not an integer in [0, 2^31)"},
        {"{\"__metadata__\":{\"context_length\":\"2147483648\"}," TOK "}",
         TOKVEC_E_METADATA,
         "__metadata__ context_length '2147483648' is not an integer in "
         "[0, 2^31)"},
        {"{\"__metadata__\":{\"context_length\":"
         "\"99999999999999999999999\"}," TOK "}",
         TOKVEC_E_METADATA,
         "__metadata__ context_length '99999999999999999999999' is not an "
         "integer in [0, 2^31)"},
        /* accepted */
        {"{\"__metadata__\":{\"positional\":\"none\",\"context_length\":"
         "\"0\",\"x\":\"y\"}," TOK "}",
         0, NULL},
        {"{\"__metadata__\":{\"positional\":\"sinusoidal\","
         "\"context_length\":\"5\"}," TOK "}",
         0, NULL},
        {"{\"__metadata__\":{\"positional\":\"sinusoidal\"}," TOK "}", 0,
         NULL},
    };
    run(r, N(r), NULL);
}

static const char NEEDS[] = "tensor 'tok' needs dtype (string), shape (list) "
                            "and data_offsets ([begin, end])";

static void tensor_entry_rules(void **s)
{
    (void)s;
    const rule r[] = {
        {"{\"tok\":5}", TOKVEC_E_HEADER_JSON, NEEDS},
        {"{\"tok\":{\"dtype\":7,\"shape\":[3,4],\"data_offsets\":[0,48]}}",
         TOKVEC_E_HEADER_JSON, NEEDS},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":12,\"data_offsets\":[0,48]}}",
         TOKVEC_E_HEADER_JSON, NEEDS},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":48}}",
         TOKVEC_E_HEADER_JSON, NEEDS},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":"
         "[0,24,48]}}",
         TOKVEC_E_HEADER_JSON, NEEDS},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,-4],\"data_offsets\":"
         "[0,48]}}",
         TOKVEC_E_HEADER_JSON,
         "tensor 'tok' shape[1] is not a non-negative integer"},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[\"3\",4],\"data_offsets\":"
         "[0,48]}}",
         TOKVEC_E_HEADER_JSON,
         "tensor 'tok' shape[0] is not a non-negative integer"},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
         "\"data_offsets\":[0,48]}}",
         TOKVEC_E_SIZE, "tensor 'tok' shape overflows"},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":"
         "[\"0\",48]}}",
         TOKVEC_E_HEADER_JSON,
         "tensor 'tok' data_offsets are not two non-negative integers"},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":"
         "[0,-48]}}",
         TOKVEC_E_HEADER_JSON,
         "tensor 'tok' data_offsets are not two non-negative integers"},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":"
         "[0,0]}}",
         TOKVEC_E_EMPTY, "tensor 'tok' is empty (0 x 4)"},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":"
         "[0,0]}}",
         TOKVEC_E_EMPTY, "tensor 'tok' is empty (3 x 0)"},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":"
         "[8,4]}}",
         TOKVEC_E_OFFSETS,
         "tensor 'tok' data_offsets [8, 4] are outside the data (256 bytes)"},
        {"{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":"
         "[0,44]}}",
         TOKVEC_E_SIZE,
         "tensor 'tok' holds 44 bytes but its shape and dtype need 12 x 4"},
        {"{\"tok\":{\"dtype\":\"I8\",\"shape\":[3,4],\"data_offsets\":"
         "[0,12]}}",
         TOKVEC_E_DTYPE,
         "tensor 'tok' has dtype I8; embeddings must be F32, F16 or BF16"},
        {"{\"tok\":{\"dtype\":\"F64\",\"shape\":[3,4],\"data_offsets\":"
         "[0,96]}}",
         TOKVEC_E_DTYPE,
         "tensor 'tok' has dtype F64; embeddings must be F32, F16 or BF16"},
    };
    run(r, N(r), NULL);
}

/* Model2Vec's weights (F64 or F32 [V]) and mapping (I32 [V], rows of tok). */
#define W(dt, n, b, e)                                                    \
    ",\"w\":{\"dtype\":\"" dt "\",\"shape\":[" n "],\"data_offsets\":[" b \
    "," e "]}"
#define M(dt, n, b, e)                                                    \
    ",\"m\":{\"dtype\":\"" dt "\",\"shape\":[" n "],\"data_offsets\":[" b \
    "," e "]}"

/* The I32 mapping values at data[12..16) (bytes 48..64), little-endian. */
static void set_mapping(int32_t a, int32_t b, int32_t c, int32_t d)
{
    const int32_t v[4] = {a, b, c, d};
    memcpy(&data[12], v, sizeof v);
}

static void model2vec_vector_rules(void **s)
{
    (void)s;
    tokvec_table_opts o = {.token_tensor = "tok",
                           .weights_tensor = "w",
                           .mapping_tensor = "m"};
    tokvec_table_opts wo = {.token_tensor = "tok", .weights_tensor = "w"};
    const rule r[] = {
        {"{" TOK W("F32", "2,2", "48", "64") "}", TOKVEC_E_RANK,
         "tensor 'w' is 2-D, not 1-D [vocab_size]"},
        {"{" TOK W("I32", "3", "48", "60") "}", TOKVEC_E_DTYPE,
         "tensor 'w' has dtype I32, not F64 or F32"},
        {"{" TOK W("F32", "3", "48", "60") M("F32", "3", "60", "72") "}",
         TOKVEC_E_DTYPE, "tensor 'm' has dtype F32, not I32"},
        {"{" TOK W("F32", "3", "48", "60") M("I32", "4", "60", "76") "}",
         TOKVEC_E_MISMATCH,
         "tensor 'w' has 3 values, 'm' has 4: both must be one per token"},
        {"{" TOK W("F32", "2", "48", "56") "}", TOKVEC_E_MISMATCH,
         "tensor 'w' has 2 values but 'tok' has 3 rows (and there is no "
         "'m')"},
    };
    run(r, N(r), &o);
    /* mapping values: data[12..] as int32 */
    set_mapping(2, 3, 0, 0);
    expect(st_file("{" TOK M("I32", "3", "48", "60") "}", data, sizeof data),
           &o, TOKVEC_E_OFFSETS,
           "tensor 'm'[1] is 3, not a row of 'tok' "
           "[0, 3)");
    set_mapping(2, -1, 0, 0);
    expect(st_file("{" TOK M("I32", "3", "48", "60") "}", data, sizeof data),
           &o, TOKVEC_E_OFFSETS,
           "tensor 'm'[1] is -1, not a row of 'tok' "
           "[0, 3)");
    /* accepted: a mapping of 4 tokens onto 3 rows, int8 rows, weights only */
    set_mapping(2, 1, 0, 2);
    tokvec_table *t = expect(st_file("{" TOK M("I32", "4", "48", "64") "}",
                                     data, sizeof data),
                             &o, 0, NULL);
    assert_int_equal(tokvec_table_get_info(t)->vocab_size, 4);
    assert_int_equal(tokvec_table_get_info(t)->stored_rows, 3);
    tokvec_table_close(t);
    t = expect(st_file("{\"tok\":{\"dtype\":\"I8\",\"shape\":[3,4],"
                       "\"data_offsets\":[0,12]}}",
                       data, sizeof data),
               &wo, 0, NULL);
    tokvec_table_close(t);
    for (int k = 12; k < 15; k++)
        data[k] = (float)k;
    t = expect(st_file("{" TOK W("F32", "3", "48", "60") "}", data,
                       sizeof data),
               &wo, 0, NULL);
    assert_int_equal(tokvec_table_get_info(t)->vocab_size, 3);
    tokvec_table_close(t);
    memset(data, 0, sizeof data);
}

/* --- .npy -------------------------------------------------------------- */

static const char *npy_file(const char *dict, size_t nbytes)
{
    snprintf(path, sizeof path, "%s/t.npy", tu_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t dl = strlen(dict), hl = (10 + dl + 1 + 63) / 64 * 64 - 10;
    unsigned char head[10] = {0x93,
                              'N',
                              'U',
                              'M',
                              'P',
                              'Y',
                              1,
                              0,
                              (unsigned char)hl,
                              (unsigned char)(hl >> 8)};
    assert_int_equal(fwrite(head, 1, 10, f), 10);
    fputs(dict, f);
    for (size_t k = dl; k + 1 < hl; k++)
        fputc(' ', f);
    fputc('\n', f);
    assert_int_equal(fwrite(data, 1, nbytes, f), nbytes);
    fclose(f);
    return path;
}

static void npy_dictionary_rules(void **s)
{
    (void)s;
    static const struct {
        const char *dict;
        int code; /* 0: opens */
        const char *want;
    } r[] = {
        {"{'fortran_order': False, 'shape': (3, 4), }", TOKVEC_E_NPY,
         ".npy header lacks descr, fortran_order or shape"},
        {"{'descr': '<f4', 'shape': (3, 4), }", TOKVEC_E_NPY,
         ".npy header lacks descr, fortran_order or shape"},
        {"{'descr': '<f4', 'fortran_order': False, }", TOKVEC_E_NPY,
         ".npy header lacks descr, fortran_order or shape"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }",
         TOKVEC_E_DTYPE, ".npy descr is not '<f4' or '<f2'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, x), }",
         TOKVEC_E_NPY, ".npy shape is malformed"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }",
         TOKVEC_E_NPY, ".npy shape is malformed"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, "
         "1, 1, 1, 1, 1), }",
         TOKVEC_E_NPY, ".npy shape is malformed"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': "
         "(4294967296, 4294967296), }",
         TOKVEC_E_SIZE,
         ".npy data is 48 bytes, shape (4294967296, 4294967296) needs 4 per "
         "value"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (3, 4), }",
         TOKVEC_E_SIZE,
         ".npy data is 48 bytes, shape (3, 4) needs 2 per "
         "value"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (6, 4), }", 0,
         NULL},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 0,
         NULL},
    };
    for (size_t k = 0; k < N(r); k++) {
        tokvec_table *t = expect(npy_file(r[k].dict, 48), NULL, r[k].code,
                                 r[k].want);
        if (t) {
            assert_int_equal(tokvec_table_get_info(t)->dim, 4);
            tokvec_table_close(t);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(metadata_rules),
        cmocka_unit_test(tensor_entry_rules),
        cmocka_unit_test(model2vec_vector_rules),
        cmocka_unit_test(npy_dictionary_rules),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
