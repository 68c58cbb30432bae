/* float.c -- float dtypes: exact widening, round-to-nearest-even narrowing,
 * and shortest round-trip formatting of float32 as numpy's repr spells it.
 * Pure functions; any thread.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tokvec_error.h"
#include "tokvec_float.h"

size_t tokvec_dtype_size(tokvec_dtype d)
{
    return d == TOKVEC_F32 ? 4 : 2;
}

const char *tokvec_dtype_name(tokvec_dtype d)
{
    return d == TOKVEC_F32 ? "F32" : d == TOKVEC_F16 ? "F16" : "BF16";
}

const char *tokvec_dtype_numpy_name(tokvec_dtype d)
{
    return d == TOKVEC_F32 ? "float32" : d == TOKVEC_F16 ? "float16"
                                                         : "bfloat16";
}

int tokvec_dtype_parse(const char *s, tokvec_dtype *out)
{
    if (!s)
        return TOKVEC_E_INVAL;
    if (!strcasecmp(s, "f32") || !strcmp(s, "float32"))
        *out = TOKVEC_F32;
    else if (!strcasecmp(s, "f16") || !strcmp(s, "float16"))
        *out = TOKVEC_F16;
    else if (!strcasecmp(s, "bf16") || !strcmp(s, "bfloat16"))
        *out = TOKVEC_BF16;
    else
        return TOKVEC_E_INVAL;
    return 0;
}

static float from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

float tokvec_bf16_to_f32(uint16_t b)
{
    return from_bits((uint32_t)b << 16);
}

float tokvec_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    if (exp == 0x1f) /* inf / NaN, payload kept */
        return from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: man * 2^-24, exact */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t tokvec_f32_to_bf16(float f)
{
    uint32_t b = to_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet */
        return (uint16_t)((b >> 16) | 0x40u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

uint16_t tokvec_f32_to_f16(float f)
{
    uint32_t b = to_bits(f);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu);
    if (a >= 0x477ff000u) /* rounds to >= 65520: inf */
        return sign | 0x7c00u;
    if (a < 0x38800000u) { /* below the smallest normal half: subnormal */
        /* value * 2^24 rounded to nearest even integer is the mantissa. */
        float v = from_bits(a) * 0x1p24f; /* exact scaling */
        float r = nearbyintf(v);          /* default mode: ties to even */
        return sign | (uint16_t)r;
    }
    uint32_t m = a + 0xfffu + ((a >> 13) & 1u); /* RNE at bit 13 */
    return sign | (uint16_t)((m - 0x38000000u) >> 13);
}

void tokvec_widen(tokvec_dtype from, const void *src, float *dst, size_t n)
{
    const unsigned char *p = src;
    if (from == TOKVEC_F32) {
        memcpy(dst, src, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
        dst[i] = from == TOKVEC_F16 ? tokvec_f16_to_f32(h)
                                    : tokvec_bf16_to_f32(h);
    }
}

void tokvec_narrow(tokvec_dtype to, const float *src, void *dst, size_t n)
{
    unsigned char *p = dst;
    if (to == TOKVEC_F32) {
        memcpy(dst, src, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t h = to == TOKVEC_F16 ? tokvec_f32_to_f16(src[i])
                                      : tokvec_f32_to_bf16(src[i]);
        p[2 * i] = (unsigned char)h;
        p[2 * i + 1] = (unsigned char)(h >> 8);
    }
}

/* Shortest digits by search: the fewest significant digits (1..9) whose
 * correctly rounded decimal reads back as v. */
size_t tokvec_f32_format(float v, char *buf)
{
    if (isnan(v)) {
        memcpy(buf, "nan", 3);
        return 3;
    }
    if (isinf(v)) {
        if (v < 0) {
            memcpy(buf, "-inf", 4);
            return 4;
        }
        memcpy(buf, "inf", 3);
        return 3;
    }
    size_t n = 0;
    if (signbit(v))
        buf[n++] = '-';
    double a = fabs((double)v);
    if (a == 0) {
        memcpy(buf + n, "0.0", 3);
        return n + 3;
    }
    char tmp[40];
    int prec;
    for (prec = 1; prec <= 9; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, a);
        if (strtof(tmp, NULL) == (float)a)
            break;
    }
    /* tmp = d[.ddd]e[+-]XX: collect digits and the exponent. */
    char dig[16];
    int nd = 0;
    const char *p = tmp;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            dig[nd++] = *p;
    int e10 = atoi(p + 1);
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    if (a >= 1e-4 && a < 1e16) {
        if (e10 >= 0) {
            for (int i = 0; i <= e10; i++)
                buf[n++] = i < nd ? dig[i] : '0';
            buf[n++] = '.';
            if (nd > e10 + 1)
                for (int i = e10 + 1; i < nd; i++)
                    buf[n++] = dig[i];
            else
                buf[n++] = '0';
        } else {
            buf[n++] = '0';
            buf[n++] = '.';
            for (int i = 0; i < -e10 - 1; i++)
                buf[n++] = '0';
            for (int i = 0; i < nd; i++)
                buf[n++] = dig[i];
        }
    } else {
        buf[n++] = dig[0];
        if (nd > 1) {
            buf[n++] = '.';
            for (int i = 1; i < nd; i++)
                buf[n++] = dig[i];
        }
        n += (size_t)sprintf(buf + n, "e%c%02d", e10 < 0 ? '-' : '+',
                             e10 < 0 ? -e10 : e10);
    }
    return n;
}
