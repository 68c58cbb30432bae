/* test_float.c -- dtypes: exact f16/bf16 widening for all 65,536 patterns,
 * round-to-nearest-even narrowing, and the shortest round-trip float32
 * text: compared byte for byte with numpy's repr (tests/golden/
 * float_repr.txt), with edge cases written out, and checked on 2 million
 * random bit patterns against glibc's exact printf/strtof (round trip,
 * shortest, nearest, spelling), independently of the formatter.
 *
 * tests/golden/float_repr.txt: lines "hexbits repr(numpy.float32)" made
 * with numpy 1.24.2 (/usr/bin/python3): signed zeros, subnormal and normal
 * extremes, inf/nan, powers of ten +-3 ulps, both positional/scientific
 * switchovers +-8 ulps, powers of two +-2 ulps, halfway ties in
 * [2^21, 2^22), integers that need padding zeros, 400 floats next to a
 * rounding-interval bound that is a short decimal (numpy includes the bound
 * when the significand is even), random bit patterns, and normal(0,1) and
 * normal(0,1e-3) values. Single-threaded; reads the golden file relative
 * to the top directory (run from /work/main).
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

#include "float_ref.h"
#include "testutil.h"
#include "tokvec_float.h"

/* Short names for the bit views (tokvec_float.h). */
#define f_of tokvec_f32_from_bits
#define b_of tokvec_f32_bits

/* Reference f16 -> f32 by arithmetic (ldexp), independent of bit tricks. */
static float ref_f16(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        return m ? NAN : (s ? -INFINITY : INFINITY);
    v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (float)(s ? -v : v);
}

static void f16_widening_is_exact_for_all_patterns(void **s)
{
    (void)s;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = tokvec_f16_to_f32((uint16_t)h),
              want = ref_f16((uint16_t)h);
        if (isnan(want)) {
            assert_true(isnan(got));
            assert_int_equal(b_of(got) >> 31, h >> 15);
        } else if (b_of(got) != b_of(want)) {
            fail_msg("f16 %04x: got %08x want %08x", h, b_of(got), b_of(want));
        }
    }
}

static void bf16_widening_is_exact_for_all_patterns(void **s)
{
    (void)s;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = tokvec_bf16_to_f32((uint16_t)h);
        int e = (h >> 7) & 255, m = h & 127, sg = h >> 15;
        if (e == 255) {
            assert_true(m ? isnan(got) : isinf(got));
            continue;
        }
        double v = e ? ldexp(128 + m, e - 134) : ldexp(m, -133);
        float want = (float)(sg ? -v : v);
        if (b_of(got) != b_of(want))
            fail_msg("bf16 %04x: got %08x want %08x", h, b_of(got),
                     b_of(want));
    }
}

static void narrowing_inverts_widening_for_all_patterns(void **s)
{
    (void)s;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = tokvec_f16_to_f32((uint16_t)h);
        float b = tokvec_bf16_to_f32((uint16_t)h);
        if (isnan(a))
            assert_true(isnan(tokvec_f16_to_f32(tokvec_f32_to_f16(a))));
        else
            assert_int_equal(tokvec_f32_to_f16(a), h);
        if (isnan(b))
            assert_true(isnan(tokvec_bf16_to_f32(tokvec_f32_to_bf16(b))));
        else
            assert_int_equal(tokvec_f32_to_bf16(b), h);
    }
}

static void narrowing_rounds_halfway_cases_to_even(void **s)
{
    (void)s;
    /* f16: 1 + 2^-11 is halfway between 1 and 1+2^-10: ties to even (1). */
    assert_int_equal(tokvec_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(tokvec_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(tokvec_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    /* overflow: 65520 and above round to inf; 65519 to max. */
    assert_int_equal(tokvec_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(tokvec_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(tokvec_f32_to_f16(-1e30f), 0xfc00);
    /* subnormals: 2^-25 is halfway between 0 and 2^-24: even (0). */
    assert_int_equal(tokvec_f32_to_f16(0x1p-25f), 0x0000);
    assert_int_equal(tokvec_f32_to_f16(0x1p-25f * 3), 0x0002);
    assert_int_equal(tokvec_f32_to_f16(0x1p-24f), 0x0001);
    assert_int_equal(tokvec_f32_to_f16(-0.0f), 0x8000);
    /* bf16 */
    assert_int_equal(tokvec_f32_to_bf16(f_of(0x3f808000)), 0x3f80);
    assert_int_equal(tokvec_f32_to_bf16(f_of(0x3f818000)), 0x3f82);
    assert_int_equal(tokvec_f32_to_bf16(f_of(0x3f808001)), 0x3f81);
    assert_int_equal(tokvec_f32_to_bf16(f_of(0x7f7fffff)), 0x7f80);
    assert_true(isnan(tokvec_bf16_to_f32(tokvec_f32_to_bf16(NAN))));
    assert_true(isnan(tokvec_f16_to_f32(tokvec_f32_to_f16(NAN))));
}

static void bulk_conversions_work_unaligned(void **s)
{
    (void)s;
    unsigned char buf[2 * 5 + 1];
    float src[5] = {1, -2, 0.5f, 65504, 3}, back[5];
    tokvec_narrow(TOKVEC_F16, src, buf + 1, 5);
    tokvec_widen(TOKVEC_F16, buf + 1, back, 5);
    assert_memory_equal(src, back, sizeof src);
    tokvec_narrow(TOKVEC_BF16, src, buf + 1, 5);
    tokvec_widen(TOKVEC_BF16, buf + 1, back, 5);
    assert_true(back[0] == 1 && back[1] == -2 && back[2] == 0.5f);
}

/* The bulk functions take a vector path (8 values at a time, F16C where
 * the CPU has it) with scalar tails and scalar blocks around NaNs: on any
 * length, alignment and mix of values they must give exactly the scalar
 * functions' bits. All 2^32 patterns: tools/check_floats --narrow. */
static void bulk_conversions_equal_the_scalar_ones_bit_for_bit(void **s)
{
    (void)s;
    enum { N = 4099 }; /* not a multiple of 8 */
    static float src[N];
    static unsigned char h[2 * N + 1];
    static float back[N];
    uint64_t x = 0x243F6A8885A308D3u;
    for (int round = 0; round < 1024; round++) {
        for (int i = 0; i < N; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint32_t b = (uint32_t)(x >> 20);
            if (round % 4 == 1) /* near the f16 range, ties included */
                b = 0x33000000u + (uint32_t)(x >> 40) % 0x14800000u;
            if (round % 4 == 2 && i % 97 == 0) /* NaNs and infinities */
                b = (b & 0x80000000u) | 0x7f800000u | (b & 0x3u);
            memcpy(&src[i], &b, 4);
        }
        size_t off = (size_t)round % 2, n = N - (size_t)round % 9;
        for (int d = 0; d < 2; d++) {
            tokvec_dtype dt = d ? TOKVEC_BF16 : TOKVEC_F16;
            tokvec_narrow(dt, src, h + off, n);
            for (size_t i = 0; i < n; i++) {
                uint16_t want = d ? tokvec_f32_to_bf16(src[i])
                                  : tokvec_f32_to_f16(src[i]);
                uint16_t got = (uint16_t)(h[off + 2 * i] |
                                          (h[off + 2 * i + 1] << 8));
                if (got != want)
                    fail_msg("%s of %08x at %zu: got %04x want %04x",
                             tokvec_dtype_name(dt), b_of(src[i]), i, got,
                             want);
            }
        }
    }
    for (int d = 0; d < 2; d++) { /* every 16-bit pattern, odd offset */
        tokvec_dtype dt = d ? TOKVEC_BF16 : TOKVEC_F16;
        for (uint32_t base = 0; base < 65536; base += 4096) {
            for (uint32_t j = 0; j < 4096; j++) {
                h[1 + 2 * j] = (unsigned char)(base + j);
                h[2 + 2 * j] = (unsigned char)((base + j) >> 8);
            }
            tokvec_widen(dt, h + 1, back, 4096);
            for (uint32_t j = 0; j < 4096; j++) {
                uint16_t v = (uint16_t)(base + j);
                float want = d ? tokvec_bf16_to_f32(v) : tokvec_f16_to_f32(v);
                if (b_of(back[j]) != b_of(want))
                    fail_msg("%s %04x: got %08x want %08x",
                             tokvec_dtype_name(dt), v, b_of(back[j]),
                             b_of(want));
            }
        }
    }
}

static void dtype_names_parse_and_print(void **s)
{
    (void)s;
    tokvec_dtype d;
    assert_int_equal(tokvec_dtype_parse("bfloat16", &d), 0);
    assert_int_equal(d, TOKVEC_BF16);
    assert_int_equal(tokvec_dtype_parse("F16", &d), 0);
    assert_int_equal(d, TOKVEC_F16);
    assert_int_equal(tokvec_dtype_parse("f32", &d), 0);
    assert_int_equal(d, TOKVEC_F32);
    assert_true(tokvec_dtype_parse("int8", &d) < 0);
    assert_string_equal(tokvec_dtype_name(TOKVEC_BF16), "BF16");
    assert_string_equal(tokvec_dtype_numpy_name(TOKVEC_F16), "float16");
    assert_int_equal(tokvec_dtype_size(TOKVEC_F32), 4);
}

static void format_matches_numpy_repr_byte_for_byte(void **s)
{
    (void)s;
    FILE *f = fopen("tests/golden/float_repr.txt", "r");
    assert_non_null(f);
    char line[128], want[64], got[TOKVEC_F32_MAXLEN + 1];
    unsigned bits;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        assert_int_equal(sscanf(line, "%x %63s", &bits, want), 2);
        size_t len = tokvec_f32_format(f_of(bits), got);
        assert_true(len <= TOKVEC_F32_MAXLEN);
        got[len] = '\0';
        if (strcmp(got, want))
            fail_msg("%08x: got %s, numpy %s", bits, got, want);
        n++;
    }
    fclose(f);
    assert_true(n > 6000);
}

static void format_spells_the_textbook_row(void **s)
{
    (void)s;
    const float row[3] = {-0.401488006f, 0.966571569f, -1.14814401f};
    const char *want[3] = {"-0.401488", "0.96657157", "-1.148144"};
    char got[32];
    for (int i = 0; i < 3; i++) {
        size_t n = tokvec_f32_format(row[i], got);
        got[n] = '\0';
        assert_string_equal(got, want[i]);
    }
    size_t n = tokvec_f32_format(NAN, got);
    assert_memory_equal(got, "nan", n);
    n = tokvec_f32_format(-INFINITY, got);
    assert_memory_equal(got, "-inf", n);
}

static void verifier_rejects_long_far_and_misspelled_texts(void **s)
{
    (void)s;
    float v = f_of(0x3eacbbc9); /* numpy: 0.3373702 */
    assert_null(tu_verify_text(v, "0.3373702"));
    assert_non_null(tu_verify_text(v, "0.33737019")); /* exact, not shortest */
    assert_non_null(tu_verify_text(v, "0.3373703"));  /* another float */
    assert_non_null(tu_verify_text(v, "3.373702e-01")); /* wrong spelling */
    /* 2097152.25: both 2097152.2 and 2097152.3 read back; the tie goes to
     * the even digit, as numpy's Dragon4 does. */
    assert_null(tu_verify_text(2097152.25f, "2097152.2"));
    assert_non_null(tu_verify_text(2097152.25f, "2097152.3"));
    assert_non_null(tu_verify_text(-1.0f, "-1.00000001"));
}

/* Edge cases spelled by numpy 1.24 (repr(numpy.float32(x))), written out
 * here so a failure names the case. */
static void format_spells_edge_cases_as_numpy(void **s)
{
    (void)s;
    static const struct {
        uint32_t bits;
        const char *text;
    } cases[] = {
        {0x00000000, "0.0"},
        {0x80000000, "-0.0"},
        {0x00000001, "1e-45"},
        {0x80000001, "-1e-45"},
        {0x00000002, "3e-45"},
        {0x00000007, "1e-44"},
        {0x007fffff, "1.1754942e-38"},
        {0x00800000, "1.1754944e-38"},
        {0x7f7fffff, "3.4028235e+38"},
        {0xff7fffff, "-3.4028235e+38"},
        {0x7f800000, "inf"},
        {0xff800000, "-inf"},
        {0x7fc00000, "nan"},
        {0xffc00001, "nan"},
        {0x38d1b717, "1e-04"},
        {0x38d1b718, "0.000100000005"},
        {0x38d1b716, "9.999999e-05"},
        {0x3727c5ac, "1e-05"},
        {0x5a0e1bc9, "9999999000000000.0"},
        {0x5a0e1bca, "1e+16"},
        {0x3f800000, "1.0"},
        {0x42c80000, "100.0"},
        {0x4ceb79a3, "123456790.0"},
        {0x501502f9, "10000000000.0"},
        {0x4b800000, "16777216.0"},
        {0x4b800001, "16777218.0"},
        {0x4a000001, "2097152.2"},
        {0x4a000003, "2097152.8"},
        {0x4a800001, "4194304.5"},
        {0x3dcccccd, "0.1"},
        {0x3eacbbc9, "0.3373702"},
        {0x4d000050, "134219000.0"},
    };
    char got[TOKVEC_F32_MAXLEN + 1];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = tokvec_f32_format(f_of(cases[i].bits), got);
        got[n] = '\0';
        if (strcmp(got, cases[i].text))
            fail_msg("%08x: got %s, numpy %s", cases[i].bits, got,
                     cases[i].text);
    }
}

static void format_round_trips_and_is_shortest_on_random_patterns(void **s)
{
    (void)s;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    char got[TOKVEC_F32_MAXLEN + 1];
    long checked = 0;
    for (long i = 0; i < 2000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        float v = f_of((uint32_t)(x >> 16));
        if (!isfinite(v))
            continue;
        size_t n = tokvec_f32_format(v, got);
        assert_true(n <= TOKVEC_F32_MAXLEN);
        got[n] = '\0';
        const char *why = tu_verify_text(v, got);
        if (why)
            fail_msg("%08x: \"%s\" %s", b_of(v), got, why);
        checked++;
    }
    assert_true(checked > 1950000);
}

/* tokvec_f32_format against the formatter it replaced (float_ref.h, itself
 * checked on all 2^32 patterns), byte for byte. */
static void expect_as_before(uint32_t bits)
{
    char got[TOKVEC_F32_MAXLEN + 1], want[TOKVEC_F32_MAXLEN + 1];
    size_t n = tokvec_f32_format(f_of(bits), got);
    size_t m = ref_f32_format(f_of(bits), want);
    assert_true(n <= TOKVEC_F32_MAXLEN);
    got[n] = '\0';
    want[m] = '\0';
    if (n != m || memcmp(got, want, n))
        fail_msg("%08x: got \"%s\", before \"%s\"", bits, got, want);
}

/* Both signs of bits and of its neighbours within r ulps (staying within
 * the finite patterns and the infinities/NaNs next to them). */
static void expect_around(uint32_t bits, uint32_t r)
{
    for (uint32_t s = 0; s < 2; s++) {
        uint32_t a = bits & 0x7fffffffu;
        uint32_t lo = a > r ? a - r : 0, hi = a + r;
        if (hi > 0x7fffffffu)
            hi = 0x7fffffffu;
        for (uint32_t b = lo; b <= hi; b++)
            expect_as_before(b | s << 31);
    }
}

static void format_is_byte_for_byte_as_before_on_edge_classes(void **s)
{
    (void)s;
    /* every subnormal, the smallest normals */
    for (uint32_t b = 0; b <= 0x00800100u; b++) {
        expect_as_before(b);
        expect_as_before(b | 0x80000000u);
    }
    /* every power of two (lower bound nearer: the general path) and
     * float32 power of ten, +-40 ulps */
    for (uint32_t e = 1; e < 255; e++)
        expect_around(e << 23, 40);
    for (int e = -45; e <= 38; e++) {
        char txt[16];
        snprintf(txt, sizeof txt, "1e%d", e);
        expect_around(b_of(strtof(txt, NULL)), 40);
    }
    /* numpy's switches (1e-4, 1e16), the fast path's ends (1e-4, 2^21),
     * 1e7, the largest and smallest, inf and nan next to them */
    static const uint32_t around[] = {0x38d1b717, 0x38d1b718, 0x5a0e1bca,
                                      0x4a000000, 0x4b189680, 0x7f7fffff,
                                      0x00000001, 0x7f800000, 0x7fc00000,
                                      0x3f800000, 0x3dcccccd};
    for (size_t i = 0; i < sizeof around / sizeof around[0]; i++)
        expect_around(around[i], 2000);
    /* ties: every float32 in [2^21, 2^24) has a halfway shortest pair, and
     * from 2^23 the spacing is 1; [2^21, 2^21 + 2^16) in full */
    for (uint32_t b = 0x4a000000u; b < 0x4a010000u; b++)
        expect_as_before(b);
}

static void format_is_byte_for_byte_as_before_on_random_patterns(void **s)
{
    (void)s;
    uint64_t x = 0x2545F4914F6CDD1Dull;
    for (long i = 0; i < 4000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t b = (uint32_t)(x >> 20);
        if (i % 2) /* the fast path's range: 1e-4 <= |v| < 2^21 */
            b = (b & 0x80000000u) |
                (0x38d1b718u +
                 (uint32_t)(x >> 8) % (0x4a000000u - 0x38d1b718u));
        expect_as_before(b);
    }
}

/* tokvec_f32_format_json (AVX-512 where the CPU has it, else the scalar
 * path) and tokvec_f32_format_json_scalar against the per-value texts
 * joined by ',', "null" for non-finite values: rows of every length up to
 * 70, at every alignment, of normal(0,1)-like values (the vector path),
 * random patterns, and both mixed with NaN, inf and out-of-range values
 * (groups the vector path hands to the scalar code), in a buffer of
 * exactly n * (TOKVEC_F32_MAXLEN + 1) bytes (ASan: nothing past it). */
static void format_json_equals_the_values_joined(void **s)
{
    (void)s;
    enum { MAXN = 70 };
    static float src[MAXN + 4];
    static char want[MAXN * (TOKVEC_F32_MAXLEN + 1)];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 6000; round++) {
        size_t n = (size_t)round % (MAXN + 1), off = (size_t)round / 71 % 4;
        float *v = src + off;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double u1 = ((double)(x >> 11) + 1) * 0x1p-53;
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double u2 = (double)(x >> 11) * 0x1p-53;
            v[i] = (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
            if (round % 3 == 1)
                v[i] = f_of((uint32_t)x);
            if (round % 3 == 2 && x % 13 == 0)
                v[i] = x % 2 ? NAN : x % 3 ? -INFINITY : f_of(0x33000001u);
        }
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (isfinite(v[i])) {
                m += tokvec_f32_format(v[i], want + m);
            } else {
                memcpy(want + m, "null", 4);
                m += 4;
            }
            want[m++] = ',';
        }
        m -= n != 0;
        for (int scalar = 0; scalar < 2; scalar++) {
            size_t cap = n * (TOKVEC_F32_MAXLEN + 1);
            char *got = malloc(cap ? cap : 1);
            assert_non_null(got);
            size_t g = scalar ? tokvec_f32_format_json_scalar(got, v, n)
                              : tokvec_f32_format_json(got, v, n);
            if (g != m || memcmp(got, want, m))
                fail_msg("json%s of %zu values at offset %zu differs",
                         scalar ? " (scalar)" : "", n, off);
            free(got);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f16_widening_is_exact_for_all_patterns),
        cmocka_unit_test(bf16_widening_is_exact_for_all_patterns),
        cmocka_unit_test(narrowing_inverts_widening_for_all_patterns),
        cmocka_unit_test(narrowing_rounds_halfway_cases_to_even),
        cmocka_unit_test(bulk_conversions_work_unaligned),
        cmocka_unit_test(bulk_conversions_equal_the_scalar_ones_bit_for_bit),
        cmocka_unit_test(dtype_names_parse_and_print),
        cmocka_unit_test(format_matches_numpy_repr_byte_for_byte),
        cmocka_unit_test(format_spells_the_textbook_row),
        cmocka_unit_test(format_spells_edge_cases_as_numpy),
        cmocka_unit_test(verifier_rejects_long_far_and_misspelled_texts),
        cmocka_unit_test(
            format_round_trips_and_is_shortest_on_random_patterns),
        cmocka_unit_test(format_is_byte_for_byte_as_before_on_edge_classes),
        cmocka_unit_test(format_is_byte_for_byte_as_before_on_random_patterns),
        cmocka_unit_test(format_json_equals_the_values_joined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
