/* test_embed.c -- the lookup's semantics: tok[id] + pos[start + s], one
 * float32 add, token first; errors that name the batch index, position and
 * id. The golden torch tables (token then position table of one generator)
 * serve as data, so the sums are the ones PyTorch computes.
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
#include "tokvec_embed.h"
#include "tokvec_float.h"
#include "tokvec_write.h"

#define V 300
#define C 64
#define D 256
#define GOLD "tests/golden/torch_init/s123_tok300x256_pos64x256"

static float tok[V * D], pos[C * D];

static void read_bin(const char *p, float *dst, size_t n)
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    assert_int_equal(fread(dst, 4, n, f), n);
    fclose(f);
}

/* Writes the golden pair as dtype dt and opens it. */
static tokvec_table *open_as(tokvec_dtype dt, int with_pos)
{
    char p[256];
    snprintf(p, sizeof p, "%s/t-%d-%d.safetensors", tu_dir, (int)dt, with_pos);
    static uint16_t t16[V * D], p16[C * D];
    const void *td = tok, *pd = pos;
    if (dt != TOKVEC_F32) {
        tokvec_narrow(dt, tok, t16, V * D);
        tokvec_narrow(dt, pos, p16, C * D);
        td = t16;
        pd = p16;
    }
    tokvec_write_tensor w[2] = {{"tok_emb.weight", dt, V, D, td},
                                {"pos_emb.weight", dt, C, D, pd}};
    assert_int_equal(tokvec_safetensors_write(p, w, with_pos ? 2 : 1, NULL),
                     0);
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(p, NULL, &t), 0);
    return t;
}

static int setup(void **state)
{
    (void)state;
    read_bin(GOLD ".t0.bin", tok, V * D);
    read_bin(GOLD ".t1.bin", pos, C * D);
    return tu_make_dir();
}

static void sum_is_token_plus_position_in_float32(void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 1);
    int64_t ids[2 * 3] = {0, 299, 7, 42, 42, 1};
    float out[2 * 3 * D];
    assert_int_equal(tokvec_embed(t, ids, 2, 3, 5, 0, out), 0);
    for (int b = 0; b < 2; b++)
        for (int s2 = 0; s2 < 3; s2++)
            for (int d = 0; d < D; d++) {
                float want = tok[ids[b * 3 + s2] * D + d] +
                             pos[(5 + s2) * D + d];
                float got = out[(b * 3 + s2) * D + d];
                assert_memory_equal(&got, &want, 4);
            }
    tokvec_table_close(t);
}

static void no_positions_flag_returns_token_rows(void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 1);
    int64_t ids[2] = {3, 299};
    float out[2 * D];
    assert_int_equal(
        tokvec_embed(t, ids, 1, 2, 0, TOKVEC_EMBED_NO_POSITIONS, out), 0);
    assert_memory_equal(out, tok + 3 * D, D * 4);
    assert_memory_equal(out + D, tok + 299 * D, D * 4);
    tokvec_table_close(t);
}

static void table_without_positions_returns_token_rows(void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 0);
    int64_t ids[1] = {8};
    float out[D];
    /* Any start position is fine: there are no positions to run out of. */
    assert_int_equal(tokvec_embed(t, ids, 1, 1, 100000, 0, out), 0);
    assert_memory_equal(out, tok + 8 * D, D * 4);
    tokvec_table_close(t);
}

static void half_tables_are_widened_exactly_then_added(void **s)
{
    (void)s;
    for (int k = 0; k < 2; k++) {
        tokvec_dtype dt = k ? TOKVEC_BF16 : TOKVEC_F16;
        tokvec_table *t = open_as(dt, 1);
        int64_t ids[2] = {11, 12};
        float out[2 * D];
        assert_int_equal(tokvec_embed(t, ids, 1, 2, 3, 0, out), 0);
        for (int s2 = 0; s2 < 2; s2++)
            for (int d = 0; d < D; d++) {
                uint16_t a, b;
                tokvec_narrow(dt, &tok[ids[s2] * D + d], &a, 1);
                tokvec_narrow(dt, &pos[(3 + s2) * D + d], &b, 1);
                float fa, fb;
                tokvec_widen(dt, &a, &fa, 1);
                tokvec_widen(dt, &b, &fb, 1);
                float want = fa + fb;
                assert_memory_equal(&out[s2 * D + d], &want, 4);
            }
        tokvec_table_close(t);
    }
}

static void half_outputs_round_the_float32_sum(void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 1);
    int64_t ids[3] = {1, 2, 3};
    float f32[3 * D];
    uint16_t h[3 * D], want[3 * D];
    assert_int_equal(tokvec_embed(t, ids, 1, 3, 0, 0, f32), 0);
    assert_int_equal(tokvec_embed_size(t, 1, 3, TOKVEC_EMBED_OUT_F16),
                     3 * D * 2);
    assert_int_equal(tokvec_embed(t, ids, 1, 3, 0, TOKVEC_EMBED_OUT_F16, h),
                     0);
    tokvec_narrow(TOKVEC_F16, f32, want, 3 * D);
    assert_memory_equal(h, want, sizeof h);
    assert_int_equal(tokvec_embed(t, ids, 1, 3, 0, TOKVEC_EMBED_OUT_BF16, h),
                     0);
    tokvec_narrow(TOKVEC_BF16, f32, want, 3 * D);
    assert_memory_equal(h, want, sizeof h);
    tokvec_table_close(t);
}

static void out_of_range_id_names_batch_position_and_id(void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 1);
    int64_t ids[2 * 3] = {0, 1, 2, 3, 300, 5};
    tokvec_embed_fault f;
    assert_int_equal(tokvec_embed_check(t, ids, 2, 3, 0, 0, &f),
                     TOKVEC_E_TOKEN_RANGE);
    assert_int_equal(f.batch, 1);
    assert_int_equal(f.position, 1);
    assert_int_equal(f.id, 300);
    ids[4] = -1;
    assert_int_equal(tokvec_embed_check(t, ids, 2, 3, 0, 0, &f),
                     TOKVEC_E_TOKEN_RANGE);
    assert_int_equal(f.batch, 1);
    assert_int_equal(f.position, 1);
    assert_int_equal(f.id, -1);
    /* The first bad id in row-major order, with or without positions. */
    int64_t two[2 * 3] = {0, 1, 2, 3, 4, 300};
    two[2] = INT64_MIN;
    for (unsigned fl = 0; fl <= TOKVEC_EMBED_NO_POSITIONS; fl++) {
        f = (tokvec_embed_fault){7, 7, 7};
        assert_int_equal(tokvec_embed_check(t, two, 2, 3, 0, fl, &f),
                         TOKVEC_E_TOKEN_RANGE);
        assert_int_equal(f.batch, 0);
        assert_int_equal(f.position, 2);
        assert_true(f.id == INT64_MIN);
    }
    float out[6 * D];
    out[0] = 12345.0f;
    assert_int_equal(tokvec_embed(t, ids, 2, 3, 0, 0, out),
                     TOKVEC_E_TOKEN_RANGE);
    assert_true(out[0] == 12345.0f); /* nothing written */
    tokvec_table_close(t);
}

static void positions_past_the_context_are_rejected(void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 1);
    int64_t ids[4] = {1, 2, 3, 4};
    tokvec_embed_fault f;
    assert_int_equal(tokvec_embed_check(t, ids, 1, 4, 60, 0, &f), 0);
    assert_int_equal(tokvec_embed_check(t, ids, 1, 4, 61, 0, &f),
                     TOKVEC_E_POSITION_RANGE);
    assert_int_equal(tokvec_embed_check(t, ids, 1, 4, -1, 0, &f),
                     TOKVEC_E_POSITION_RANGE);
    /* Without positions the start does not matter. */
    assert_int_equal(tokvec_embed_check(t, ids, 1, 4, 61,
                                        TOKVEC_EMBED_NO_POSITIONS, &f),
                     0);
    tokvec_table_close(t);
}

/* A sinusoidal table opened with TOKVEC_TABLE_SKIP_SINUSOIDAL (as tokvec
 * inspect opens it) has no position rows: an embed that would use them is
 * TOKVEC_E_NO_POSITIONS and writes nothing; token rows alone still work. */
static void skipped_sinusoidal_positions_are_no_positions(void **s)
{
    (void)s;
    char p[256];
    snprintf(p, sizeof p, "%s/sin.safetensors", tu_dir);
    static const char *const keys[] = {"positional", "context_length"};
    static const char *const vals[] = {"sinusoidal", "8"};
    tokvec_write_tensor w = {"tok_emb.weight", TOKVEC_F32, V, D, tok};
    tokvec_write_opts wo = {.metadata_keys = keys,
                            .metadata_values = vals,
                            .n_metadata = 2};
    assert_int_equal(tokvec_safetensors_write(p, &w, 1, &wo), 0);
    tokvec_table_opts o = {.flags = TOKVEC_TABLE_SKIP_SINUSOIDAL};
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(p, &o, &t), 0);
    assert_int_equal(tokvec_table_get_info(t)->positional,
                     TOKVEC_POS_SINUSOIDAL);
    int64_t ids[2] = {4, 5};
    tokvec_embed_fault f;
    assert_int_equal(tokvec_embed_check(t, ids, 1, 2, 0, 0, &f),
                     TOKVEC_E_NO_POSITIONS);
    assert_int_equal(f.batch, -1);
    assert_int_equal(f.position, -1);
    assert_int_equal(f.id, -1);
    float out[2 * D];
    out[0] = 12345.0f;
    for (unsigned fl = 0; fl <= TOKVEC_EMBED_OUT_BF16;
         fl += TOKVEC_EMBED_OUT_F16)
        assert_int_equal(tokvec_embed(t, ids, 1, 2, 0, fl, out),
                         TOKVEC_E_NO_POSITIONS);
    assert_true(out[0] == 12345.0f); /* nothing written */
    assert_int_equal(
        tokvec_embed(t, ids, 1, 2, 0, TOKVEC_EMBED_NO_POSITIONS, out), 0);
    assert_memory_equal(out, tok + 4 * D, D * 4);
    assert_memory_equal(out + D, tok + 5 * D, D * 4);
    tokvec_table_close(t);
}

/* Expects TOKVEC_E_POSITION_RANGE and this fault: no batch (every
 * sequence has the same positions), position = index s within the
 * sequence of the first position outside [0, context_length), id = that
 * position (start + s). */
static void expect_position_fault(const tokvec_table *t, int64_t S,
                                  int64_t start, int64_t s_want,
                                  int64_t id_want)
{
    int64_t ids[2 * 8] = {0};
    tokvec_embed_fault f = {7, 7, 7};
    assert_true(S <= 8);
    assert_int_equal(tokvec_embed_check(t, ids, 2, S, start, 0, &f),
                     TOKVEC_E_POSITION_RANGE);
    if (f.batch != -1 || f.position != s_want || f.id != id_want)
        fail_msg("start %" PRId64 " S %" PRId64 ": fault {batch %" PRId64
                 ", position %" PRId64 ", id %" PRId64 "}, want {-1, %" PRId64
                 ", %" PRId64 "}",
                 start, S, f.batch, f.position, f.id, s_want, id_want);
}

static void position_fault_names_the_first_position_outside_the_context(
    void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 1); /* context_length 64 */
    expect_position_fault(t, 4, 61, 3, 64);   /* s = 3 is position 64 */
    expect_position_fault(t, 1, 64, 0, 64);
    expect_position_fault(t, 8, 63, 1, 64);
    expect_position_fault(t, 2, 100, 0, 100); /* wholly past the end */
    expect_position_fault(t, 4, -1, 0, -1);   /* before the start */
    expect_position_fault(t, 4, INT64_MIN, 0, INT64_MIN);
    expect_position_fault(t, 3, INT64_MAX, 0, INT64_MAX);
    tokvec_table_close(t);
}

static void fault_is_all_minus_one_on_success_and_other_errors(void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 1);
    int64_t ok[2] = {299, 1};
    tokvec_embed_fault f = {7, 7, 7};
    assert_int_equal(tokvec_embed_check(t, ok, 1, 2, 62, 0, &f), 0);
    assert_int_equal(f.batch, -1);
    assert_int_equal(f.position, -1);
    assert_int_equal(f.id, -1);
    int64_t ids[2] = {300, 1}; /* a bad id, but the shape is checked first */
    f = (tokvec_embed_fault){7, 7, 7};
    assert_int_equal(tokvec_embed_check(t, ids, 1, 0, 0, 0, &f),
                     TOKVEC_E_INVAL);
    assert_int_equal(f.batch, -1);
    assert_int_equal(f.position, -1);
    assert_int_equal(f.id, -1);
    f = (tokvec_embed_fault){7, 7, 7};
    assert_int_equal(tokvec_embed_check(t, ids, INT64_MAX / 2, 2, 0, 0, &f),
                     TOKVEC_E_TOO_LARGE);
    assert_int_equal(f.batch, -1);
    assert_int_equal(f.position, -1);
    assert_int_equal(f.id, -1);
    tokvec_table_close(t);
}

static void bad_shapes_and_flags_are_invalid(void **s)
{
    (void)s;
    tokvec_table *t = open_as(TOKVEC_F32, 1);
    int64_t ids[1] = {1};
    assert_int_equal(tokvec_embed_check(t, ids, 0, 1, 0, 0, NULL),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_embed_check(t, ids, 1, 0, 0, 0, NULL),
                     TOKVEC_E_INVAL);
    assert_int_equal(
        tokvec_embed_check(t, ids, 1, 1, 0,
                           TOKVEC_EMBED_OUT_F16 | TOKVEC_EMBED_OUT_BF16, NULL),
        TOKVEC_E_INVAL);
    assert_int_equal(tokvec_embed_size(t, INT64_MAX, 2, 0), 0);
    tokvec_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sum_is_token_plus_position_in_float32),
        cmocka_unit_test(no_positions_flag_returns_token_rows),
        cmocka_unit_test(table_without_positions_returns_token_rows),
        cmocka_unit_test(half_tables_are_widened_exactly_then_added),
        cmocka_unit_test(half_outputs_round_the_float32_sum),
        cmocka_unit_test(out_of_range_id_names_batch_position_and_id),
        cmocka_unit_test(positions_past_the_context_are_rejected),
        cmocka_unit_test(
            position_fault_names_the_first_position_outside_the_context),
        cmocka_unit_test(fault_is_all_minus_one_on_success_and_other_errors),
        cmocka_unit_test(skipped_sinusoidal_positions_are_no_positions),
        cmocka_unit_test(bad_shapes_and_flags_are_invalid),
    };
    return cmocka_run_group_tests(tests, setup, tu_teardown_dir);
}
