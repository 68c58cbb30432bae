/* test_embed_rules.c -- the argument rules of tokvec_embed_size,
 * tokvec_embed_check and tokvec_embed_mean (tokvec_embed.h) on small
 * tables written here (learned positions, sinusoidal positions opened with
 * and without TOKVEC_TABLE_SKIP_SINUSOIDAL, no positions): each wrong
 * argument gives its code and fault, and the accepted edges give values
 * computed by hand from the rows (the mean with and without positions, of
 * the first k components, normalized, of no ids). Single-threaded.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tokvec_embed.h"
#include "tokvec_error.h"
#include "tokvec_table.h"

/* tok [4, 3]: row i is (i, 10 i, 100 i) + 1; pos [5, 3]: row p is
 * (p, p, p) / 2. */
static float rows[4 * 3 + 5 * 3];

static tokvec_table *open_table(const char *meta, int with_pos, unsigned flags)
{
    char p[600], hdr[512];
    snprintf(p, sizeof p, "%s/t%s%d.safetensors", tu_dir, meta ? "m" : "",
             with_pos);
    int n = snprintf(hdr, sizeof hdr,
                     "{%s\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":"
                     "[4,3],\"data_offsets\":[0,48]}%s}",
                     meta ? meta : "",
                     with_pos ? ",\"pos_emb.weight\":{\"dtype\":\"F32\","
                                "\"shape\":[5,3],\"data_offsets\":[48,108]}"
                              : "");
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            rows[3 * i + j] = (float)(i * (j == 0   ? 1
                                           : j == 1 ? 10
                                                    : 100) +
                                      1);
    for (int q = 0; q < 5; q++)
        for (int j = 0; j < 3; j++)
            rows[12 + 3 * q + j] = (float)q / 2;
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)((uint64_t)n >> (8 * i));
    assert_int_equal(fwrite(le, 1, 8, f), 8);
    assert_int_equal(fwrite(hdr, 1, (size_t)n, f), (size_t)n);
    assert_int_equal(fwrite(rows, 1, sizeof rows, f), sizeof rows);
    fclose(f);
    char err[512];
    tokvec_table_opts o = {.flags = flags};
    tokvec_table *t;
    if (tu_table_open(p, &o, err, sizeof err, &t) != 0)
        fail_msg("%s", err);
    return t;
}

static void size_rules(void **s)
{
    (void)s;
    tokvec_table *t = open_table(NULL, 1, 0);
    assert_int_equal(tokvec_embed_size(t, 2, 3, 0), 2 * 3 * 3 * 4);
    assert_int_equal(tokvec_embed_size(t, 2, 3, TOKVEC_EMBED_OUT_F16),
                     2 * 3 * 3 * 2);
    assert_int_equal(tokvec_embed_size(t, 2, 3, TOKVEC_EMBED_OUT_BF16),
                     2 * 3 * 3 * 2);
    assert_int_equal(tokvec_embed_size(t, 0, 3, 0), 0);
    assert_int_equal(tokvec_embed_size(t, 2, 0, 0), 0);
    assert_int_equal(tokvec_embed_size(t, 2, 3, 1u << 7), 0);
    assert_int_equal(tokvec_embed_size(t, 2, 3,
                                       TOKVEC_EMBED_OUT_F16 |
                                           TOKVEC_EMBED_OUT_BF16),
                     0);
    assert_int_equal(tokvec_embed_size(t, INT64_MAX, INT64_MAX, 0), 0);
    assert_int_equal(tokvec_embed_size(t, INT64_MAX / 2, 2, 0), 0);
    assert_int_equal(tokvec_embed_size(t, INT64_MAX / 4, 1, 0), 0);
    assert_int_equal(tokvec_embed_size(t, (int64_t)1 << 61, 1, 0), 0);
    tokvec_table_close(t);
}

static void check_rules(void **s)
{
    (void)s;
    tokvec_table *t = open_table(NULL, 1, 0);
    int64_t ids[6] = {0, 1, 2, 3, 1, 0};
    tokvec_embed_fault f;
#define CHECK(code, tt, i, B, S, start, flags) \
    assert_int_equal(tokvec_embed_check(tt, i, B, S, start, flags, &f), code)
    CHECK(0, t, ids, 2, 3, 0, 0);
    assert_int_equal(f.batch, -1);
    CHECK(TOKVEC_E_INVAL, NULL, ids, 2, 3, 0, 0);
    CHECK(TOKVEC_E_INVAL, t, NULL, 2, 3, 0, 0);
    CHECK(TOKVEC_E_INVAL, t, ids, 0, 3, 0, 0);
    CHECK(TOKVEC_E_INVAL, t, ids, 2, -1, 0, 0);
    CHECK(TOKVEC_E_INVAL, t, ids, 2, 3, 0, 1u << 9);
    CHECK(TOKVEC_E_TOO_LARGE, t, ids, INT64_MAX, 2, 0, 0);
    /* positions: [start, start + S) inside [0, 5) */
    CHECK(0, t, ids, 2, 3, 2, 0);
    CHECK(TOKVEC_E_POSITION_RANGE, t, ids, 2, 3, 3, 0);
    assert_int_equal(f.batch, -1);
    assert_int_equal(f.position, 2);
    assert_int_equal(f.id, 5);
    CHECK(TOKVEC_E_POSITION_RANGE, t, ids, 2, 3, -1, 0);
    assert_int_equal(f.position, 0);
    CHECK(TOKVEC_E_POSITION_RANGE, t, ids, 2, 3, 6, 0);
    assert_int_equal(f.position, 0);
    CHECK(0, t, ids, 2, 3, 99, TOKVEC_EMBED_NO_POSITIONS);
    ids[4] = 4;
    CHECK(TOKVEC_E_TOKEN_RANGE, t, ids, 2, 3, 0, 0);
    assert_int_equal(f.batch, 1);
    assert_int_equal(f.position, 1);
    assert_int_equal(f.id, 4);
    ids[4] = -1;
    CHECK(TOKVEC_E_TOKEN_RANGE, t, ids, 2, 3, 0, 0);
    assert_int_equal(f.id, -1);
    /* fault may be NULL */
    assert_int_equal(tokvec_embed_check(t, ids, 2, 3, 0, 0, NULL),
                     TOKVEC_E_TOKEN_RANGE);
    tokvec_table_close(t);
    /* sinusoidal skipped: no positions to add, unless none are asked for */
    t = open_table("\"__metadata__\":{\"positional\":\"sinusoidal\","
                   "\"context_length\":\"8\"},",
                   0, TOKVEC_TABLE_SKIP_SINUSOIDAL);
    ids[4] = 1;
    CHECK(TOKVEC_E_NO_POSITIONS, t, ids, 2, 3, 0, 0);
    CHECK(0, t, ids, 2, 3, 0, TOKVEC_EMBED_NO_POSITIONS);
    float out[6 * 3];
    assert_int_equal(tokvec_embed(t, ids, 2, 3, 0, 0, out),
                     TOKVEC_E_NO_POSITIONS);
    assert_int_equal(
        tokvec_embed(t, ids, 2, 3, 0, TOKVEC_EMBED_NO_POSITIONS, out), 0);
    assert_true(out[3 * 5 + 2] == 1.0f); /* id 0: (1, 1, 1) */
    tokvec_table_close(t);
#undef CHECK
}

static void mean_rules(void **s)
{
    (void)s;
    tokvec_table *t = open_table(NULL, 1, 0);
    int64_t ids[3] = {1, 3, 2};
    float out[3] = {-7, -7, -7};
    unsigned P = TOKVEC_MEAN_POSITIONS, Z = TOKVEC_MEAN_NORMALIZE;
    assert_int_equal(tokvec_embed_mean(NULL, ids, 3, 0, 3, 0, out),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_embed_mean(t, ids, -1, 0, 3, 0, out),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_embed_mean(t, NULL, 3, 0, 3, 0, out),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 0, 0, 0, out),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 0, 4, 0, out),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 0, 3, 1u << 5, out),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_embed_mean(t, ids, 3, -1, 3, P, out),
                     TOKVEC_E_POSITION_RANGE);
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 3, 3, P, out),
                     TOKVEC_E_POSITION_RANGE);
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 6, 3, P, out),
                     TOKVEC_E_POSITION_RANGE);
    ids[2] = 4;
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 0, 3, 0, out),
                     TOKVEC_E_TOKEN_RANGE);
    ids[2] = -2;
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 0, 3, 0, out),
                     TOKVEC_E_TOKEN_RANGE);
    assert_true(out[0] == -7.0f); /* nothing written */
    ids[2] = 2;
    /* rows 1, 3, 2: (2, 11, 101), (4, 31, 301), (3, 21, 201) */
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 0, 3, 0, out), 0);
    assert_true(out[0] == 3.0f && out[1] == 21.0f && out[2] == 201.0f);
    /* plus positions 2, 3, 4: (1 + 1.5 + 2) / 3 = 1.5 each */
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 2, 3, P, out), 0);
    assert_true(out[0] == 4.5f && out[1] == 22.5f && out[2] == 202.5f);
    /* the first 2 components, normalized */
    out[2] = -7;
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 0, 2, Z, out), 0);
    double norm = sqrt(3.0 * 3.0 + 21.0 * 21.0);
    assert_true(fabsf(out[0] - (float)(3.0 / norm)) < 1e-7f);
    assert_true(fabsf(out[1] - (float)(21.0 / norm)) < 1e-7f);
    assert_true(out[2] == -7.0f);
    /* no ids: zeros, normalized or not, positions asked or not */
    assert_int_equal(tokvec_embed_mean(t, NULL, 0, 99, 3, P | Z, out), 0);
    assert_true(out[0] == 0.0f && out[1] == 0.0f && out[2] == 0.0f);
    tokvec_table_close(t);
    /* no positions in the table: the flag asks for nothing */
    t = open_table(NULL, 0, 0);
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 99, 3, P, out), 0);
    assert_true(out[0] == 3.0f);
    tokvec_table_close(t);
    /* sinusoidal skipped */
    t = open_table("\"__metadata__\":{\"positional\":\"sinusoidal\","
                   "\"context_length\":\"8\"},",
                   0, TOKVEC_TABLE_SKIP_SINUSOIDAL);
    assert_int_equal(tokvec_embed_mean(t, ids, 3, 0, 3, P, out),
                     TOKVEC_E_NO_POSITIONS);
    tokvec_table_close(t);
    /* sinusoidal computed: position 0 is (sin 0, cos 0, sin 0) */
    t = open_table("\"__metadata__\":{\"positional\":\"sinusoidal\","
                   "\"context_length\":\"8\"},",
                   0, 0);
    int64_t one = 0;
    assert_int_equal(tokvec_embed_mean(t, &one, 1, 0, 3, P, out), 0);
    assert_true(out[0] == 1.0f && out[1] == 2.0f && out[2] == 1.0f);
    tokvec_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(size_rules),
        cmocka_unit_test(check_rules),
        cmocka_unit_test(mean_rules),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
