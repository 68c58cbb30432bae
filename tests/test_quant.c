/* test_quant.c -- ggml block formats (tokvec_quant.h): names and block
 * sizes, and for each type one block whose values are worked out by hand
 * from the layout and formula (the scale packing of the K-quants above
 * all), read from an odd address. The bit-for-bit comparison of random
 * blocks with an independent numpy implementation is tests/e2e/test_gguf.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tokvec_error.h"
#include "tokvec_quant.h"

/* Dequantizes the block at b (bytes long) from an odd address. */
static void deq(tokvec_qtype q, const unsigned char *b, size_t bytes, float *y,
                size_t n)
{
    static unsigned char odd[1 + 256];
    memcpy(odd + 1, b, bytes);
    tokvec_dequantize(q, odd + 1, y, n);
}

static void put16(unsigned char *p, uint16_t h)
{
    p[0] = (unsigned char)h;
    p[1] = (unsigned char)(h >> 8);
}

static void names_and_block_sizes_are_ggml_s(void **s)
{
    (void)s;
    const struct {
        tokvec_qtype q;
        const char *name;
        size_t values, bytes;
    } c[] = {{TOKVEC_Q8_0, "Q8_0", 32, 34},   {TOKVEC_Q4_0, "Q4_0", 32, 18},
             {TOKVEC_Q4_1, "Q4_1", 32, 20},   {TOKVEC_Q5_0, "Q5_0", 32, 22},
             {TOKVEC_Q5_1, "Q5_1", 32, 24},   {TOKVEC_Q4_K, "Q4_K", 256, 144},
             {TOKVEC_Q5_K, "Q5_K", 256, 176}, {TOKVEC_Q6_K, "Q6_K", 256, 210}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t v, b;
        tokvec_qtype q;
        assert_string_equal(tokvec_qtype_name(c[i].q), c[i].name);
        assert_int_equal(tokvec_qtype_parse(c[i].name, &q), 0);
        assert_int_equal(q, c[i].q);
        assert_int_equal(tokvec_qtype_block(c[i].q, &v, &b), 0);
        assert_int_equal(v, c[i].values);
        assert_int_equal(b, c[i].bytes);
    }
    size_t v, b;
    tokvec_qtype q;
    assert_null(tokvec_qtype_name(TOKVEC_Q_NONE));
    assert_int_equal(tokvec_qtype_parse("Q2_K", &q), TOKVEC_E_INVAL);
    assert_int_equal(tokvec_qtype_block((tokvec_qtype)10, &v, &b),
                     TOKVEC_E_INVAL);
}

static void q8_0_is_int8_times_d(void **s)
{
    (void)s;
    unsigned char b[34] = {0};
    float y[32];
    put16(b, 0x3800); /* d = 0.5 */
    b[2] = 0x80;      /* -128 */
    b[3] = 0x7f;      /* 127 */
    b[33] = 3;
    deq(TOKVEC_Q8_0, b, sizeof b, y, 32);
    assert_true(y[0] == -64.0f && y[1] == 63.5f && y[31] == 1.5f &&
                y[5] == 0.0f);
}

static void q4_0_and_q4_1_split_nibbles_in_halves(void **s)
{
    (void)s;
    unsigned char a[18] = {0}, b[20] = {0};
    float y[32];
    put16(a, 0x4000); /* d = 2 */
    a[2] = 0x1f;      /* value 0: 15, value 16: 1 */
    deq(TOKVEC_Q4_0, a, sizeof a, y, 32);
    assert_true(y[0] == 14.0f && y[16] == -14.0f && y[1] == -16.0f);
    put16(b, 0x3800);     /* d = 0.5 */
    put16(b + 2, 0xbc00); /* m = -1 */
    b[4 + 3] = 0x52;      /* value 3: 2, value 19: 5 */
    deq(TOKVEC_Q4_1, b, sizeof b, y, 32);
    assert_true(y[3] == 0.0f && y[19] == 1.5f && y[0] == -1.0f);
}

static void q5_takes_the_fifth_bit_of_value_i_from_bit_i_of_qh(void **s)
{
    (void)s;
    unsigned char a[22] = {0}, b[24] = {0};
    float y[32];
    put16(a, 0x3c00); /* d = 1 */
    a[2] = 0x01;      /* qh bit 0: value 0 */
    a[4] = 0x02;      /* qh bit 17: value 17 */
    a[6 + 1] = 0x31;  /* value 1: 1, value 17: 3 */
    deq(TOKVEC_Q5_0, a, sizeof a, y, 32);
    assert_true(y[0] == 0.0f && y[16] == -16.0f && y[1] == -15.0f &&
                y[17] == 3.0f);
    put16(b, 0x3800);     /* d = 0.5 */
    put16(b + 2, 0x4000); /* m = 2 */
    b[4 + 3] = 0x80;      /* qh bit 31: value 31 */
    b[8 + 15] = 0xf0;     /* value 31: 15 | 16 */
    deq(TOKVEC_Q5_1, b, sizeof b, y, 32);
    assert_true(y[31] == 17.5f && y[15] == 2.0f);
}

/* Q4_K/Q5_K share the 12-byte packing of eight 6-bit scales and mins. */
static void k4_scales(unsigned char *b)
{
    put16(b, 0x3c00);     /* d = 1 */
    put16(b + 2, 0x3800); /* dmin = 0.5 */
    unsigned char *sc = b + 4;
    sc[0] = 3;    /* sub-block 0: scale 3 */
    sc[4] = 2;    /* sub-block 0: min 2 */
    sc[1] = 0xc5; /* sub-block 1: scale 5; top bits 3 -> sub-block 5 */
    sc[5] = 0x81; /* sub-block 1: min 1; top bits 2 -> sub-block 5 */
    sc[9] = 0x21; /* sub-block 5: scale 1 | 3 << 4, min 2 | 2 << 4 */
}

static void q4_k_unpacks_six_bit_scales_and_mins(void **s)
{
    (void)s;
    unsigned char b[144] = {0};
    float y[256];
    k4_scales(b);
    b[16 + 0] = 0x74;  /* value 0 (sub-block 0): 4, value 32: 7 */
    b[16 + 64] = 0xa0; /* value 160 (sub-block 5, high nibble): 10 */
    deq(TOKVEC_Q4_K, b, sizeof b, y, 256);
    assert_true(y[0] == 3.0f * 4 - 1.0f);   /* 11 */
    assert_true(y[32] == 5.0f * 7 - 0.5f);  /* 34.5 */
    assert_true(y[160] == 49.0f * 10 - 17); /* 473 */
    assert_true(y[1] == -1.0f);
}

static void q5_k_adds_sixteen_from_bit_s_of_qh(void **s)
{
    (void)s;
    unsigned char b[176] = {0};
    float y[256];
    k4_scales(b);
    b[16 + 0] = 0x21; /* qh[0]: bit 0 (sub-block 0), bit 5 (sub-block 5) */
    b[48 + 0] = 0x74;
    b[48 + 64] = 0xa0;
    deq(TOKVEC_Q5_K, b, sizeof b, y, 256);
    assert_true(y[0] == 3.0f * 20 - 1.0f);
    assert_true(y[32] == 5.0f * 7 - 0.5f); /* bit 1 clear */
    assert_true(y[160] == 49.0f * 26 - 17);
}

static void q6_k_reads_halves_of_128_with_int8_scales(void **s)
{
    (void)s;
    unsigned char b[210] = {0};
    float y[256];
    signed char *sc = (signed char *)(b + 192);
    put16(b + 208, 0x3400); /* d = 0.25 */
    sc[0] = -2;
    sc[2] = 3;
    sc[4] = 7;
    sc[15] = -1;
    b[0] = 0x5a;             /* ql[0]: value 0 low 10, value 64 low 5 */
    b[32] = 0x0f;            /* ql[32]: value 32 low 15 */
    b[128] = 0xe4;           /* qh[0]: 0, 1, 2, 3 for values 0, 32, 64, 96 */
    b[64 + 32 + 17] = 0xf0;  /* second half: value 128 + 96 + 17 low 15 */
    b[128 + 32 + 17] = 0xc0; /* its high bits 3 */
    deq(TOKVEC_Q6_K, b, sizeof b, y, 256);
    assert_true(y[0] == 0.25f * -2 * -22);  /* 11 */
    assert_true(y[32] == 0.25f * 3 * -1);   /* -0.75 */
    assert_true(y[64] == 0.25f * 7 * 5);    /* 8.75 */
    assert_true(y[241] == 0.25f * -1 * 31); /* -7.75 */
    assert_true(y[96] == 0.0f * 1);         /* sc[6] = 0 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_block_sizes_are_ggml_s),
        cmocka_unit_test(q8_0_is_int8_times_d),
        cmocka_unit_test(q4_0_and_q4_1_split_nibbles_in_halves),
        cmocka_unit_test(q5_takes_the_fifth_bit_of_value_i_from_bit_i_of_qh),
        cmocka_unit_test(q4_k_unpacks_six_bit_scales_and_mins),
        cmocka_unit_test(q5_k_adds_sixteen_from_bit_s_of_qh),
        cmocka_unit_test(q6_k_reads_halves_of_128_with_int8_scales),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
