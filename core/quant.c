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
    {TOKVEC_Q8_0, "Q8_0", 32, 34},
    /* @K_TYPES@ */
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
static void q8_0(const unsigned char *b, float *y)
{
    const float d = f16(b);
    for (int j = 0; j < 32; j++)
        y[j] = (float)(int8_t)b[2 + j] * d;
}

/* block_q4_0: d, qs[16]; value j in the low nibble of qs[j], value
 * j + 16 in the high one. y = (q - 8) * d. */
static void q4_0(const unsigned char *b, float *y)
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
static void q4_1(const unsigned char *b, float *y)
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

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* block_q5_0: d, qh[4] (bit j: 5th bit of value j), qs[16].
 * y = (q - 16) * d. */
static void q5_0(const unsigned char *b, float *y)
{
    const float d = f16(b);
    const uint32_t qh = le32(b + 2);
    const unsigned char *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        const int h0 = (int)((qh >> j) << 4 & 0x10);
        const int h1 = (int)((qh >> (j + 12)) & 0x10);
        const int x0 = ((qs[j] & 0x0F) | h0) - 16;
        const int x1 = ((qs[j] >> 4) | h1) - 16;
        y[j] = (float)x0 * d;
        y[j + 16] = (float)x1 * d;
    }
}

/* block_q5_1: d, m, qh[4], qs[16]. y = q * d + m. */
static void q5_1(const unsigned char *b, float *y)
{
    const float d = f16(b), m = f16(b + 2);
    const uint32_t qh = le32(b + 4);
    const unsigned char *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        const int h0 = (int)((qh >> j) << 4 & 0x10);
        const int h1 = (int)((qh >> (j + 12)) & 0x10);
        const int x0 = (qs[j] & 0x0F) | h0;
        const int x1 = (qs[j] >> 4) | h1;
        y[j] = (float)x0 * d + m;
        y[j + 16] = (float)x1 * d + m;
    }
}

/* @K_QUANTS@ */

void tokvec_dequantize(tokvec_qtype q, const void *src, float *dst, size_t n)
{
    size_t values, bytes;
    int rc = tokvec_qtype_block(q, &values, &bytes);
    assert(rc == 0 && n % values == 0);
    (void)rc;
    void (*one)(const unsigned char *, float *) =
        q == TOKVEC_Q8_0   ? q8_0
        : q == TOKVEC_Q4_0 ? q4_0
        : q == TOKVEC_Q4_1 ? q4_1
        : q == TOKVEC_Q5_0 ? q5_0
        : q == TOKVEC_Q5_1 ? q5_1
                           : NULL; /* @K_DISPATCH@ */
    assert(one);
    const unsigned char *b = src;
    for (size_t i = 0; i < n / values; i++)
        one(b + i * bytes, dst + i * values);
}
