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

/* --- shortest round-trip digits ----------------------------------------
 *
 * For v = m2 * 2^e2, every decimal in the rounding interval
 * [(4*m2 - 2 or -1) * 2^(e2-2), (4*m2 + 2) * 2^(e2-2)] (bounds included
 * when m2 is even) reads back as v. Scaling by 10^q (q chosen so that an
 * ulp becomes 100..1000 units) with exact integer arithmetic -- 5^q from
 * the table below, 192-bit products -- gives floor values of the value and
 * both bounds plus whether they were exact. Then digits are removed while
 * the interval still holds a shorter number, and the last one is rounded
 * to nearest (ties to even): Ryu's digit loop (Adams 2018), here on exact
 * products instead of Ryu's truncated tables. Pure integer work; any thread.
 */
static const uint64_t POW5[48][2] = {
    {0x0000000000000000u, 0x0000000000000001u}, /* 5^0 */
    {0x0000000000000000u, 0x0000000000000005u}, /* 5^1 */
    {0x0000000000000000u, 0x0000000000000019u}, /* 5^2 */
    {0x0000000000000000u, 0x000000000000007du}, /* 5^3 */
    {0x0000000000000000u, 0x0000000000000271u}, /* 5^4 */
    {0x0000000000000000u, 0x0000000000000c35u}, /* 5^5 */
    {0x0000000000000000u, 0x0000000000003d09u}, /* 5^6 */
    {0x0000000000000000u, 0x000000000001312du}, /* 5^7 */
    {0x0000000000000000u, 0x000000000005f5e1u}, /* 5^8 */
    {0x0000000000000000u, 0x00000000001dcd65u}, /* 5^9 */
    {0x0000000000000000u, 0x00000000009502f9u}, /* 5^10 */
    {0x0000000000000000u, 0x0000000002e90eddu}, /* 5^11 */
    {0x0000000000000000u, 0x000000000e8d4a51u}, /* 5^12 */
    {0x0000000000000000u, 0x0000000048c27395u}, /* 5^13 */
    {0x0000000000000000u, 0x000000016bcc41e9u}, /* 5^14 */
    {0x0000000000000000u, 0x000000071afd498du}, /* 5^15 */
    {0x0000000000000000u, 0x0000002386f26fc1u}, /* 5^16 */
    {0x0000000000000000u, 0x000000b1a2bc2ec5u}, /* 5^17 */
    {0x0000000000000000u, 0x000003782dace9d9u}, /* 5^18 */
    {0x0000000000000000u, 0x00001158e460913du}, /* 5^19 */
    {0x0000000000000000u, 0x000056bc75e2d631u}, /* 5^20 */
    {0x0000000000000000u, 0x0001b1ae4d6e2ef5u}, /* 5^21 */
    {0x0000000000000000u, 0x000878678326eac9u}, /* 5^22 */
    {0x0000000000000000u, 0x002a5a058fc295edu}, /* 5^23 */
    {0x0000000000000000u, 0x00d3c21bcecceda1u}, /* 5^24 */
    {0x0000000000000000u, 0x0422ca8b0a00a425u}, /* 5^25 */
    {0x0000000000000000u, 0x14adf4b7320334b9u}, /* 5^26 */
    {0x0000000000000000u, 0x6765c793fa10079du}, /* 5^27 */
    {0x0000000000000002u, 0x04fce5e3e2502611u}, /* 5^28 */
    {0x000000000000000au, 0x18f07d736b90be55u}, /* 5^29 */
    {0x0000000000000032u, 0x7cb2734119d3b7a9u}, /* 5^30 */
    {0x00000000000000fcu, 0x6f7c40458122964du}, /* 5^31 */
    {0x00000000000004eeu, 0x2d6d415b85acef81u}, /* 5^32 */
    {0x00000000000018a6u, 0xe32246c99c60ad85u}, /* 5^33 */
    {0x0000000000007b42u, 0x6fab61f00de36399u}, /* 5^34 */
    {0x000000000002684cu, 0x2e58e9b04570f1fdu}, /* 5^35 */
    {0x00000000000c097cu, 0xe7bc90715b34b9f1u}, /* 5^36 */
    {0x00000000003c2f70u, 0x86aed236c807a1b5u}, /* 5^37 */
    {0x00000000012ced32u, 0xa16a1b11e8262889u}, /* 5^38 */
    {0x0000000005e0a1fdu, 0x2712875988becaadu}, /* 5^39 */
    {0x000000001d6329f1u, 0xc35ca4bfabb9f561u}, /* 5^40 */
    {0x0000000092efd1b8u, 0xd0cf37be5aa1cae5u}, /* 5^41 */
    {0x00000002deaf189cu, 0x140c16b7c528f679u}, /* 5^42 */
    {0x0000000e596b7b0cu, 0x643c7196d9ccd05du}, /* 5^43 */
    {0x00000047bf19673du, 0xf52e37f2410011d1u}, /* 5^44 */
    {0x00000166bb7f0435u, 0xc9e717bb45005915u}, /* 5^45 */
    {0x00000701a97b150cu, 0xf18376a85901bd69u}, /* 5^46 */
    {0x000023084f676940u, 0xb7915149bd08b30du}, /* 5^47 */

};

typedef unsigned __int128 u128;

/* floor(m * 2^e * 10^q) for the magnitudes used here (result < 2^63);
 * *exact says whether nothing was cut off. */
static uint64_t scaled(uint64_t m, int e, int q, int *exact)
{
    if (q >= 0 && q <= 13) {
        /* 5^13 < 2^31 and m < 2^27: the product fits in 64 bits. This is
         * the common case (|v| from about 1e-4 to 1e3). */
        uint64_t a = m * POW5[q][1];
        int p = e + q;
        if (p >= 0) {
            *exact = 1;
            return a << p;
        }
        int s = -p;
        if (s >= 64) {
            *exact = a == 0;
            return 0;
        }
        *exact = (a & ((UINT64_C(1) << s) - 1)) == 0;
        return a >> s;
    }
    if (q >= 0) {
        u128 lo = (u128)m * POW5[q][1], hi = (u128)m * POW5[q][0];
        uint64_t l0 = (uint64_t)lo;
        u128 t = (lo >> 64) + (uint64_t)hi;
        u128 top = ((u128)((uint64_t)(hi >> 64) + (uint64_t)(t >> 64)) << 64) |
                   (uint64_t)t; /* bits 64..191 of m * 5^q */
        int p = e + q;          /* remaining power of two */
        if (p >= 0) {
            *exact = 1;
            return (uint64_t)(((top << 64) | l0) << p);
        }
        int s = -p;
        if (s >= 64) {
            s -= 64;
            *exact = l0 == 0 && (s == 0 || (top & (((u128)1 << s) - 1)) == 0);
            return (uint64_t)(top >> s);
        }
        *exact = (l0 & ((UINT64_C(1) << s) - 1)) == 0;
        return (uint64_t)(top << (64 - s)) | (l0 >> s);
    }
    /* q < 0: m * 2^(e+q) / 5^-q, with e + q >= 0 here. */
    u128 num = (u128)m << (e + q);
    u128 den = ((u128)POW5[-q][0] << 64) | POW5[-q][1];
    u128 r = num / den;
    *exact = num - r * den == 0;
    return (uint64_t)r;
}

/* Shortest digits of finite v != 0: *digits (no trailing zeros needed
 * removed here) times 10^*exp10. */
static void shortest(uint32_t bits, uint64_t *digits, int *exp10)
{
    uint32_t frac = bits & 0x7fffffu, ex = (bits >> 23) & 0xffu;
    uint64_t m2;
    int e2;
    if (ex) {
        m2 = frac | 0x800000u;
        e2 = (int)ex - 150;
    } else {
        m2 = frac;
        e2 = -149;
    }
    int even = (m2 & 1) == 0;
    uint64_t mv = 4 * m2, mp = 4 * m2 + 2;
    uint64_t mm = 4 * m2 - ((frac != 0 || ex <= 1) ? 2 : 1);
    /* q = ceil(-e2 * log10(2)) + 2; 78913 / 2^18 approximates log10(2)
     * closely enough for |e2| < 1650. */
    int q = (int)(((int64_t)(-e2) * 78913 + ((1 << 18) - 1)) >> 18) + 2;
    int ev, ep, em;
    uint64_t vr = scaled(mv, e2 - 2, q, &ev);
    uint64_t vp = scaled(mp, e2 - 2, q, &ep);
    uint64_t vm = scaled(mm, e2 - 2, q, &em);
    int vm_zeros = em, vr_zeros = ev, last = 0, removed = 0;
    if (ep && !even)
        vp--; /* the upper bound itself is excluded */
    if (!em || !even)
        vm_zeros = 0; /* vm itself is not a candidate */
    if (vm_zeros || vr_zeros) {
        while (vp / 10 > vm / 10) {
            vm_zeros &= vm % 10 == 0;
            vr_zeros &= last == 0;
            last = (int)(vr % 10);
            vr /= 10, vp /= 10, vm /= 10, removed++;
        }
        if (vm_zeros)
            while (vm % 10 == 0) {
                vr_zeros &= last == 0;
                last = (int)(vr % 10);
                vr /= 10, vp /= 10, vm /= 10, removed++;
            }
        if (vr_zeros && last == 5 && vr % 2 == 0)
            last = 4; /* exactly halfway: round to even */
        *digits = vr + ((vr == vm && !vm_zeros) || last >= 5);
    } else {
        while (vp / 10 > vm / 10) {
            last = (int)(vr % 10);
            vr /= 10, vp /= 10, vm /= 10, removed++;
        }
        *digits = vr + (vr == vm || last >= 5);
    }
    *exp10 = removed - q;
}

size_t tokvec_f32_format(float v, char *buf)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if ((bits & 0x7f800000u) == 0x7f800000u) {
        if (bits & 0x7fffffu) {
            memcpy(buf, "nan", 3);
            return 3;
        }
        if (bits >> 31) {
            memcpy(buf, "-inf", 4);
            return 4;
        }
        memcpy(buf, "inf", 3);
        return 3;
    }
    size_t n = 0;
    if (bits >> 31)
        buf[n++] = '-';
    if ((bits & 0x7fffffffu) == 0) {
        memcpy(buf + n, "0.0", 3);
        return n + 3;
    }
    uint64_t d;
    int e;
    shortest(bits, &d, &e);
    while (d % 10 == 0) {
        d /= 10;
        e++;
    }
    char dig[24];
    int nd = 0;
    for (uint64_t t = d; t; t /= 10)
        dig[nd++] = (char)('0' + t % 10);
    /* dig holds the digits backwards; value = 0.d1d2... * 10^(e + nd) */
    int e10 = e + nd - 1; /* exponent of the first digit */
    double a = fabs((double)v);
    if (a >= 1e-4 && a < 1e16) {
        if (e10 >= 0) {
            for (int i = 0; i <= e10; i++)
                buf[n++] = i < nd ? dig[nd - 1 - i] : '0';
            buf[n++] = '.';
            if (nd > e10 + 1)
                for (int i = e10 + 1; i < nd; i++)
                    buf[n++] = dig[nd - 1 - i];
            else
                buf[n++] = '0';
        } else {
            buf[n++] = '0';
            buf[n++] = '.';
            for (int i = 0; i < -e10 - 1; i++)
                buf[n++] = '0';
            for (int i = 0; i < nd; i++)
                buf[n++] = dig[nd - 1 - i];
        }
    } else {
        buf[n++] = dig[nd - 1];
        if (nd > 1) {
            buf[n++] = '.';
            for (int i = nd - 2; i >= 0; i--)
                buf[n++] = dig[i];
        }
        int ae = e10 < 0 ? -e10 : e10;
        buf[n++] = 'e';
        buf[n++] = e10 < 0 ? '-' : '+';
        if (ae >= 10)
            buf[n++] = (char)('0' + ae / 10);
        else
            buf[n++] = '0';
        buf[n++] = (char)('0' + ae % 10);
    }
    return n;
}
