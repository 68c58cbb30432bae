/* test_init.c -- the torch-compatible initialisation, bit for bit.
 *
 * Every case of tests/golden/torch_init/golden.json (generated with real
 * torch 1.13.1): tables drawn one after another from one generator must
 * hash (sha256 of the little-endian float32 bytes) exactly as torch's do.
 * Plus the spec's worked numbers and the generator's first outputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <nettle/sha2.h>

#include "tokvec_init.h"
#include "tokvec_float.h"

/* A float32's bits (tokvec_float.h). */
#define bits tokvec_f32_bits

#define GOLDEN "tests/golden/torch_init/golden.json"

static json_t *golden;

/* core/init.c, internal (not in the public header): nonzero makes this
 * generator use the portable scalar code even where AVX2+FMA is available,
 * zero goes back to what the CPU supports. */
void tokvec__rng_force_scalar(tokvec_rng *rng, int on);

#define DIR "tests/golden/torch_init/"

static int load_golden(void **state)
{
    (void)state;
    json_error_t e;
    golden = json_load_file(GOLDEN, 0, &e);
    if (!golden)
        fprintf(stderr, "%s: %s\n", GOLDEN, e.text);
    return golden ? 0 : -1;
}

static int free_golden(void **state)
{
    (void)state;
    json_decref(golden);
    return 0;
}

static void hex_sha(struct sha256_ctx *c, char out[65])
{
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(c, sizeof d, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

/* Compares n floats with the golden .bin file name (raw torch bytes). */
static void check_bin(const char *name, const float *w, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, DIR "%s", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: cannot open", path);
    float *want = malloc(n * sizeof *want + 1);
    assert_non_null(want);
    size_t got = fread(want, sizeof *want, n, f);
    int extra = fgetc(f);
    fclose(f);
    assert_int_equal(got, n);
    assert_int_equal(extra, EOF);
    assert_memory_equal(want, w, n * sizeof *w);
    free(want);
}

/* Runs one golden case: seed, then each table in order, on the AVX2 path
 * where the CPU has it (scalar = 0) or on the portable code (scalar = 1);
 * checks each table's hash (and .bin file, if any) and the hash of all of
 * them together. Returns the number of tables checked. */
static int run_case(json_t *c, int scalar)
{
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(c, "seed"));
    json_t *seedv = json_object_get(c, "seed");
    if (json_is_real(seedv)) /* seeds beyond int64 would be reals */
        fail_msg("seed not an integer");
    tokvec_rng *rng;
    assert_int_equal(tokvec_rng_new(seed, &rng), 0);
    tokvec__rng_force_scalar(rng, scalar);
    struct sha256_ctx all;
    sha256_init(&all);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(c, "tables"), i, t) {
        int64_t rows = json_integer_value(
            json_array_get(json_object_get(t, "shape"), 0));
        int64_t cols = json_integer_value(
            json_array_get(json_object_get(t, "shape"), 1));
        json_t *pad = json_object_get(t, "padding_idx");
        int64_t p = pad ? json_integer_value(pad) : TOKVEC_NO_PADDING;
        size_t n = (size_t)rows * (size_t)cols;
        float *w = malloc(n * sizeof *w + 1);
        assert_non_null(w);
        assert_int_equal(tokvec_init_embedding(rng, w, rows, cols, p), 0);
        struct sha256_ctx one;
        sha256_init(&one);
        sha256_update(&one, n * 4, (const uint8_t *)w);
        sha256_update(&all, n * 4, (const uint8_t *)w);
        char hex[65];
        hex_sha(&one, hex);
        if (strcmp(hex, json_string_value(json_object_get(t, "sha256"))))
            fail_msg("case %s table %zu (%lldx%lld, %s): sha256 %s, torch %s",
                     json_string_value(json_object_get(c, "name")), i,
                     (long long)rows, (long long)cols,
                     scalar ? "scalar" : "auto", hex,
                     json_string_value(json_object_get(t, "sha256")));
        json_t *file = json_object_get(t, "file");
        if (file)
            check_bin(json_string_value(file), w, n);
        free(w);
    }
    char hex[65];
    hex_sha(&all, hex);
    assert_string_equal(hex,
                        json_string_value(json_object_get(c, "sha256_all")));
    tokvec_rng_free(rng);
    return (int)i;
}

static void mt19937_first_outputs_for_seed_123_match_torch(void **state)
{
    (void)state;
    tokvec_rng *rng;
    assert_int_equal(tokvec_rng_new(123, &rng), 0);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(golden, "mt19937_seed123_first8_u32"),
                       i, v) {
        uint32_t want = (uint32_t)strtoul(json_string_value(v), NULL, 16);
        assert_int_equal(tokvec_rng_u32(rng), want);
    }
    assert_int_equal(i, 8);
    tokvec_rng_free(rng);
}

static int cpu_has_avx2_path(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static void every_golden_case(int scalar)
{
    size_t i, tables = 0;
    json_t *c;
    json_array_foreach(json_object_get(golden, "cases"), i, c)
        tables += (size_t)run_case(c, scalar);
    assert_true(i >= 16);
    assert_true(tables >= 25);
}

static void every_golden_case_is_bit_exact_on_the_avx2_path(void **state)
{
    (void)state;
    if (!cpu_has_avx2_path())
        print_message("note: no AVX2+FMA on this CPU, the scalar code runs\n");
    every_golden_case(0);
}

static void every_golden_case_is_bit_exact_on_the_scalar_path(void **state)
{
    (void)state;
    every_golden_case(1);
}

/* The 50257x256 cases: all of them on the AVX2 path; on the scalar path
 * only the default pair (its first table is the 50257x256 case, and the
 * scalar code takes about 0.6 s for it). */
static void default_table_pair_matches_torch_hash(void **state)
{
    (void)state;
    static const char dflt[] = "ce80d49003091759f85784574923b8d34a777c4aa7"
                               "dde460edcb33088825819e";
    size_t i;
    json_t *c;
    int seen_default = 0;
    json_array_foreach(json_object_get(golden, "hash_only"), i, c) {
        run_case(c, 0);
        if (!strcmp(json_string_value(json_object_get(c, "sha256_all")),
                    dflt)) {
            seen_default = 1;
            run_case(c, 1);
        }
    }
    assert_true(i >= 3);
    assert_true(seen_default);
}

/* Beyond the golden sizes: every n from 16 to 200 (all tail lengths, tails
 * overlapping one or two blocks), a chunk boundary of the vector path, and
 * other mean/std, drawn one after another from one generator per path. */
static void avx2_and_scalar_paths_give_identical_bits(void **state)
{
    (void)state;
    if (!cpu_has_avx2_path())
        skip();
    tokvec_rng *a, *b;
    assert_int_equal(tokvec_rng_new(2024, &a), 0);
    assert_int_equal(tokvec_rng_new(2024, &b), 0);
    tokvec__rng_force_scalar(b, 1);
    enum { MAX = 4096 * 2 + 37 };
    float *x = malloc(MAX * sizeof *x), *y = malloc(MAX * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    static const float ms[][2] = {
        {0.0f, 1.0f}, {0.1f, 0.3f}, {-2.5f, 7.0f}, {-0.0f, 1.0f}};
    for (size_t n = 16; n <= 200; n++) {
        float mean = ms[n % 4][0], std = ms[n % 4][1];
        tokvec_rng_normal(a, x, n, mean, std);
        tokvec_rng_normal(b, y, n, mean, std);
        assert_memory_equal(x, y, n * sizeof *x);
    }
    tokvec_rng_normal(a, x, MAX, 0.25f, 0.02f);
    tokvec_rng_normal(b, y, MAX, 0.25f, 0.02f);
    assert_memory_equal(x, y, MAX * sizeof *x);
    assert_int_equal(tokvec_rng_u32(a), tokvec_rng_u32(b));
    free(x);
    free(y);
    tokvec_rng_free(a);
    tokvec_rng_free(b);
}

static void worked_numbers_of_the_spec_hold(void **state)
{
    (void)state;
    tokvec_rng *rng;
    float w[18];
    assert_int_equal(tokvec_rng_new(123, &rng), 0);
    assert_int_equal(tokvec_init_embedding(rng, w, 6, 3, TOKVEC_NO_PADDING),
                     0);
    assert_int_equal(bits(w[0]), 0x3eacbbc9); /* block lane 0 */
    assert_int_equal(bits(w[1]), 0xbe360b3b); /* block lane 1 */
    assert_int_equal(bits(w[2]), 0xbe2d02e0); /* tail lane 0 */
    /* The next table starts at output 34 = 0x2cea6802. */
    assert_int_equal(tokvec_rng_u32(rng), 0x2cea6802);
    tokvec_rng_free(rng);
}

static void small_path_caches_the_sine_value_across_tables(void **state)
{
    (void)state;
    tokvec_rng *rng;
    float a, b, big[16];
    assert_int_equal(tokvec_rng_new(123, &rng), 0);
    assert_int_equal(tokvec_init_embedding(rng, &a, 1, 1, TOKVEC_NO_PADDING),
                     0);
    assert_int_equal(bits(a), 0xbde448df); /* -0.111467116 */
    /* A vector-path table in between neither reads nor clears the cache. */
    assert_int_equal(tokvec_init_embedding(rng, big, 4, 4, TOKVEC_NO_PADDING),
                     0);
    assert_int_equal(tokvec_init_embedding(rng, &b, 1, 1, TOKVEC_NO_PADDING),
                     0);
    assert_int_equal(bits(b), 0x3df680d9); /* cached r*sin(th) */
    /* Seeding clears it: the first value comes back. */
    tokvec_rng_seed(rng, 123);
    assert_int_equal(tokvec_init_embedding(rng, &b, 1, 1, TOKVEC_NO_PADDING),
                     0);
    assert_int_equal(bits(b), 0xbde448df);
    tokvec_rng_free(rng);
}

static void only_the_low_32_bits_of_the_seed_matter(void **state)
{
    (void)state;
    tokvec_rng *a, *b;
    float x[40], y[40];
    assert_int_equal(tokvec_rng_new(5, &a), 0);
    assert_int_equal(tokvec_rng_new((UINT64_C(1) << 32) + 5, &b), 0);
    tokvec_rng_normal(a, x, 40, 0, 1);
    tokvec_rng_normal(b, y, 40, 0, 1);
    assert_memory_equal(x, y, sizeof x);
    tokvec_rng_seed(a, UINT64_MAX);   /* 2^64-1 */
    tokvec_rng_seed(b, (uint64_t)-1); /* -1 */
    assert_int_equal(tokvec_rng_u32(a), tokvec_rng_u32(b));
    tokvec_rng_free(a);
    tokvec_rng_free(b);
}

static void padding_row_is_positive_zero_and_draws_are_unchanged(void **state)
{
    (void)state;
    tokvec_rng *a, *b;
    float x[40], y[40];
    assert_int_equal(tokvec_rng_new(9, &a), 0);
    assert_int_equal(tokvec_rng_new(9, &b), 0);
    assert_int_equal(tokvec_init_embedding(a, x, 10, 4, -1), 0); /* row 9 */
    assert_int_equal(tokvec_init_embedding(b, y, 10, 4, TOKVEC_NO_PADDING), 0);
    for (int i = 0; i < 36; i++)
        assert_int_equal(bits(x[i]), bits(y[i]));
    for (int i = 36; i < 40; i++)
        assert_int_equal(bits(x[i]), 0);
    assert_int_equal(tokvec_rng_u32(a), tokvec_rng_u32(b));
    tokvec_rng_free(a);
    tokvec_rng_free(b);
}

static void padding_index_minus_rows_is_the_first_row(void **state)
{
    (void)state;
    tokvec_rng *a, *b;
    float x[40], y[40];
    assert_int_equal(tokvec_rng_new(9, &a), 0);
    assert_int_equal(tokvec_rng_new(9, &b), 0);
    assert_int_equal(tokvec_init_embedding(a, x, 10, 4, -10), 0);
    assert_int_equal(tokvec_init_embedding(b, y, 10, 4, 0), 0);
    assert_memory_equal(x, y, sizeof x);
    for (int i = 0; i < 4; i++)
        assert_int_equal(bits(x[i]), 0);
    assert_int_not_equal(bits(x[4]), 0);
    tokvec_rng_free(a);
    tokvec_rng_free(b);
}

static void padding_index_outside_the_table_is_rejected_without_drawing(
    void **state)
{
    (void)state;
    tokvec_rng *a, *b;
    float x[40];
    assert_int_equal(tokvec_rng_new(9, &a), 0);
    assert_int_equal(tokvec_rng_new(9, &b), 0);
    assert_int_equal(tokvec_init_embedding(a, x, 10, 4, 10), TOKVEC_E_INVAL);
    assert_int_equal(tokvec_init_embedding(a, x, 10, 4, -11), TOKVEC_E_INVAL);
    assert_int_equal(tokvec_init_embedding(a, x, 1, 1, 1), TOKVEC_E_INVAL);
    assert_int_equal(tokvec_rng_u32(a), tokvec_rng_u32(b));
    tokvec_rng_free(a);
    tokvec_rng_free(b);
}

static void vector_path_applies_std_and_mean_in_one_fused_step(void **state)
{
    (void)state;
    /* With std 1 and mean 0 the outputs are radius*angle themselves; with
     * other values they must be fmaf(radius*angle, std, mean), one
     * rounding. 4096 values are enough for the unfused x*std+mean to differ
     * somewhere, which shows the check can tell them apart. */
    enum { N = 4096 };
    const float mean = 0.1f, std = 0.3f;
    static float x[N], y[N];
    for (int scalar = 0; scalar < 2; scalar++) {
        tokvec_rng *a, *b;
        assert_int_equal(tokvec_rng_new(1, &a), 0);
        assert_int_equal(tokvec_rng_new(1, &b), 0);
        tokvec__rng_force_scalar(a, scalar);
        tokvec__rng_force_scalar(b, scalar);
        tokvec_rng_normal(a, x, N, 0.0f, 1.0f);
        tokvec_rng_normal(b, y, N, mean, std);
        int unfused_differs = 0;
        for (int i = 0; i < N; i++) {
            assert_int_equal(bits(y[i]), bits(fmaf(x[i], std, mean)));
            volatile float p = x[i] * std;
            unfused_differs |= bits(p + mean) != bits(y[i]);
        }
        assert_true(unfused_differs);
        tokvec_rng_free(a);
        tokvec_rng_free(b);
    }
}

static void small_path_scales_by_std(void **state)
{
    (void)state;
    /* Doubling is exact in double and in float, so f32(2z) = 2 f32(z). */
    tokvec_rng *a, *b;
    float x[15], y[15];
    assert_int_equal(tokvec_rng_new(77, &a), 0);
    assert_int_equal(tokvec_rng_new(77, &b), 0);
    tokvec_rng_normal(a, x, 15, 0.0f, 1.0f);
    tokvec_rng_normal(b, y, 15, 0.0f, 2.0f);
    for (int i = 0; i < 15; i++)
        assert_int_equal(bits(y[i]), bits(2.0f * x[i]));
    tokvec_rng_free(a);
    tokvec_rng_free(b);
}

static void table_too_large_for_memory_is_rejected(void **state)
{
    (void)state;
    tokvec_rng *a;
    float x[1];
    assert_int_equal(tokvec_rng_new(9, &a), 0);
    assert_int_equal(tokvec_init_embedding(a, x, INT64_MAX, 2,
                                           TOKVEC_NO_PADDING),
                     TOKVEC_E_TOO_LARGE);
    assert_int_equal(tokvec_init_embedding(a, x, -1, 2, TOKVEC_NO_PADDING),
                     TOKVEC_E_INVAL);
    tokvec_rng_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mt19937_first_outputs_for_seed_123_match_torch),
        cmocka_unit_test(every_golden_case_is_bit_exact_on_the_avx2_path),
        cmocka_unit_test(every_golden_case_is_bit_exact_on_the_scalar_path),
        cmocka_unit_test(default_table_pair_matches_torch_hash),
        cmocka_unit_test(avx2_and_scalar_paths_give_identical_bits),
        cmocka_unit_test(worked_numbers_of_the_spec_hold),
        cmocka_unit_test(small_path_caches_the_sine_value_across_tables),
        cmocka_unit_test(only_the_low_32_bits_of_the_seed_matter),
        cmocka_unit_test(padding_row_is_positive_zero_and_draws_are_unchanged),
        cmocka_unit_test(padding_index_minus_rows_is_the_first_row),
        cmocka_unit_test(
            padding_index_outside_the_table_is_rejected_without_drawing),
        cmocka_unit_test(vector_path_applies_std_and_mean_in_one_fused_step),
        cmocka_unit_test(small_path_scales_by_std),
        cmocka_unit_test(table_too_large_for_memory_is_rejected),
    };
    return cmocka_run_group_tests(tests, load_golden, free_golden);
}
