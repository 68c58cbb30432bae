/* quant.c -- dequantization of ggml's block formats (tokvec_quant.h).
 *
 * Written from the block layouts of ggml's ggml-common.h and the formulas
 * of its reference dequantize_row_* (ggml-quants.c): each block's float16
 * scales are widened exactly, every value is one int-to-float conversion
 * and the products and sums in ggml's order, each rounded to float32 (no
 * contraction: the Makefile's -ffp-contract=off). Blocks are read with
 * byte loads: a row in a GGUF map may sit at any address.
 * Pure functions, no state: any thread.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "tokvec_error.h"
#include "tokvec_float.h"
#include "tokvec_quant.h"

static const struct {
    tokvec_qtype q;
    const char *name;
    unsigned values, bytes;
} qtypes[] = {
    {TOKVEC_Q4_0, "Q4_0", 32, 18},   {TOKVEC_Q4_1, "Q4_1", 32, 20},
    {TOKVEC_Q5_0, "Q5_0", 32, 22},   {TOKVEC_Q5_1, "Q5_1", 32, 24},
    {TOKVEC_Q8_0, "Q8_0", 32, 34},   {TOKVEC_Q4_K, "Q4_K", 256, 144},
    {TOKVEC_Q5_K, "Q5_K", 256, 176}, {TOKVEC_Q6_K, "Q6_K", 256, 210},
};
#define NQ (sizeof qtypes / sizeof qtypes[0])

const char *tokvec_qtype_name(tokvec_qtype q)
{
    for (size_t i = 0; i < NQ; i++)
        if (qtypes[i].q == q)
            return qtypes[i].name;
    return NULL;
}

int tokvec_qtype_parse(const char *s, tokvec_qtype *out)
{
    for (size_t i = 0; s && i < NQ; i++)
        if (!strcmp(s, qtypes[i].name)) {
            *out = qtypes[i].q;
            return 0;
        }
    return TOKVEC_E_INVAL;
}

int tokvec_qtype_block(tokvec_qtype q, size_t *values, size_t *bytes)
{
    for (size_t i = 0; i < NQ; i++)
        if (qtypes[i].q == q) {
            *values = qtypes[i].values;
            *bytes = qtypes[i].bytes;
            return 0;
        }
    *values = *bytes = 0;
    return TOKVEC_E_INVAL;
}

/* A little-endian float16 at p, widened exactly (ggml's FP16_TO_FP32). */
static float f16(const unsigned char *p)
{
    return tokvec_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* block_q8_0: d, qs[32] (int8). y = q * d. */
static void q8_0(const unsigned char *restrict b, float *restrict y)
{
    const float d = f16(b);
    for (int j = 0; j < 32; j++)
        y[j] = (float)(int8_t)b[2 + j] * d;
}

/* block_q4_0: d, qs[16]; value j in the low nibble of qs[j], value
 * j + 16 in the high one. y = (q - 8) * d. */
static void q4_0(const unsigned char *restrict b, float *restrict y)
{
    const float d = f16(b);
    const unsigned char *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        const int x0 = (qs[j] & 0x0F) - 8;
        const int x1 = (qs[j] >> 4) - 8;
        y[j] = (float)x0 * d;
        y[j + 16] = (float)x1 * d;
    }
}

/* block_q4_1: d, m, qs[16]. y = q * d + m. */
static void q4_1(const unsigned char *restrict b, float *restrict y)
{
    const float d = f16(b), m = f16(b + 2);
    const unsigned char *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        const int x0 = qs[j] & 0x0F;
        const int x1 = qs[j] >> 4;
        y[j] = (float)x0 * d + m;
        y[j + 16] = (float)x1 * d + m;
    }
}

/* The 5th bit of value j of a Q5 block is bit j of qh (u32, little
 * endian), i.e. bit j % 8 of byte j / 8: spread as 0 or 16 per value, a
 * byte of qh at a time (its bit i to byte i of a word: copied to every
 * byte, masked, then 0 or not tested by a carry into bit 7), so that the
 * value loops below vectorize. The word is stored little endian, as
 * tokvec reads every table (the host is little endian). */
static void fifth_bits(const unsigned char *restrict qh,
                       unsigned char *restrict hb)
{
    for (int k = 0; k < 4; k++) {
        uint64_t x = qh[k] * 0x0101010101010101ull;
        x &= 0x8040201008040201ull;
        x = ((x + 0x7f7f7f7f7f7f7f7full) >> 7 & 0x0101010101010101ull) << 4;
        memcpy(hb + 8 * k, &x, 8);
    }
}

/* block_q5_0: d, qh[4], qs[16]. y = (q - 16) * d. */
static void q5_0(const unsigned char *restrict b, float *restrict y)
{
    const float d = f16(b);
    const unsigned char *qs = b + 6;
    unsigned char hb[32];
    fifth_bits(b + 2, hb);
    for (int j = 0; j < 16; j++) {
        const int x0 = ((qs[j] & 0x0F) | hb[j]) - 16;
        const int x1 = ((qs[j] >> 4) | hb[j + 16]) - 16;
        y[j] = (float)x0 * d;
        y[j + 16] = (float)x1 * d;
    }
}

/* block_q5_1: d, m, qh[4], qs[16]. y = q * d + m. */
static void q5_1(const unsigned char *restrict b, float *restrict y)
{
    const float d = f16(b), m = f16(b + 2);
    const unsigned char *qs = b + 8;
    unsigned char hb[32];
    fifth_bits(b + 4, hb);
    for (int j = 0; j < 16; j++) {
        const int x0 = (qs[j] & 0x0F) | hb[j];
        const int x1 = (qs[j] >> 4) | hb[j + 16];
        y[j] = (float)x0 * d + m;
        y[j + 16] = (float)x1 * d + m;
    }
}

/* The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block,
 * packed in scales[12] (ggml's get_scale_min_k4). */
static void scale_min_k4(int j, const unsigned char *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* The scales and mins of sub-blocks is and is + 1, times d and dmin. */
static void scale_min_pair(int is, const unsigned char *scales, float d,
                           float min, float dm[4])
{
    int sc, m;
    scale_min_k4(is, scales, &sc, &m);
    dm[0] = d * (float)sc, dm[1] = min * (float)m;
    scale_min_k4(is + 1, scales, &sc, &m);
    dm[2] = d * (float)sc, dm[3] = min * (float)m;
}

/* block_q4_K: d, dmin, scales[12], qs[128]. For each 64 values: the low
 * nibbles of 32 bytes of qs with sub-block scale/min 2k, then the high
 * nibbles with 2k + 1. y = (d * sc) * q - (dmin * m). */
static void q4_k(const unsigned char *restrict b, float *restrict y)
{
    const float d = f16(b), min = f16(b + 2);
    const unsigned char *scales = b + 4, *q = b + 16;
    for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
        float dm[4];
        scale_min_pair(is, scales, d, min, dm);
        for (int l = 0; l < 32; l++)
            *y++ = dm[0] * (float)(q[l] & 0xF) - dm[1];
        for (int l = 0; l < 32; l++)
            *y++ = dm[2] * (float)(q[l] >> 4) - dm[3];
    }
}

/* block_q5_K: d, dmin, scales[12], qh[32], qs[128]: Q4_K with a 5th bit
 * (+16) from qh, bit pair (2k, 2k + 1) for the k-th 64 values. */
static void q5_k(const unsigned char *restrict b, float *restrict y)
{
    const float d = f16(b), min = f16(b + 2);
    const unsigned char *scales = b + 4, *qh = b + 16, *ql = b + 48;
    unsigned u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < 256; j += 64, is += 2, ql += 32) {
        float dm[4];
        scale_min_pair(is, scales, d, min, dm);
        for (int l = 0; l < 32; l++)
            *y++ = dm[0] * (float)((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) -
                   dm[1];
        for (int l = 0; l < 32; l++)
            *y++ = dm[2] * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) -
                   dm[3];
        u1 <<= 2;
        u2 <<= 2;
    }
}

/* block_q6_K: ql[128], qh[64], scales[16] (int8), d. Per 128 values: 64
 * bytes of ql (low 4 bits), 32 of qh (2 high bits each), 8 scales, one per
 * 16 values. y = (d * sc) * (q - 32); d * sc is rounded once per scale,
 * as ggml rounds it per value (the same product each time). */
static void q6_k(const unsigned char *restrict b, float *restrict y)
{
    const float d = f16(b + 208);
    float ds[16];
    for (int i = 0; i < 16; i++)
        ds[i] = d * (float)(signed char)b[192 + i];
    for (int h = 0; h < 2; h++) {
        const unsigned char *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        for (int g = 0; g < 4; g++) {
            /* values 32g + l: low nibbles of ql[l + 32 (g & 1)] for g < 2,
             * high ones after; bits 2g, 2g + 1 of qh[l] on top */
            const unsigned char *lo = ql + 32 * (g & 1);
            const int sh = g < 2 ? 0 : 4;
            float *out = y + 128 * h + 32 * g;
            for (int half = 0; half < 2; half++) {
                const float s = ds[8 * h + 2 * g + half];
                for (int l = 16 * half; l < 16 * half + 16; l++) {
                    const int u = (lo[l] >> sh & 0xF) |
                                  ((qh[l] >> (2 * g) & 3) << 4);
                    const int q = u - 32;
                    out[l] = s * (float)q;
                }
            }
        }
    }
}

typedef void (*dequant_block)(const unsigned char *restrict, float *restrict);

void tokvec_dequantize(tokvec_qtype q, const void *src, float *dst, size_t n)
{
    size_t values, bytes;
    int rc = tokvec_qtype_block(q, &values, &bytes);
    assert(rc == 0 && n % values == 0);
    (void)rc;
    dequant_block one = q == TOKVEC_Q8_0   ? q8_0
                        : q == TOKVEC_Q4_0 ? q4_0
                        : q == TOKVEC_Q4_1 ? q4_1
                        : q == TOKVEC_Q5_0 ? q5_0
                        : q == TOKVEC_Q5_1 ? q5_1
                        : q == TOKVEC_Q4_K ? q4_k
                        : q == TOKVEC_Q5_K ? q5_k
                        : q == TOKVEC_Q6_K ? q6_k
                                           : NULL;
    assert(one);
    const unsigned char *b = src;
    for (size_t i = 0; i < n / values; i++)
        one(b + i * bytes, dst + i * values);
}
