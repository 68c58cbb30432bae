/* float.c -- float dtypes: exact widening, round-to-nearest-even narrowing,
 * and shortest round-trip formatting of float32 as numpy's repr spells it
 * (the JSON writer's hot loop; see bench/floatbench.c for its speed).
 *
 * What must hold: tokvec_f32_format gives, for every one of the 2^32
 * patterns, the shortest decimal that strtof reads back as the same bits,
 * the nearest one to v when several are shortest (ties to even), spelled
 * byte for byte as numpy 1.24's repr(numpy.float32(v)); and
 * tokvec_f32_format_json exactly those texts joined by ','. Checked by
 * tests/test_float.c (golden numpy file, random patterns, byte for byte
 * against the formatter this one replaced, tests/float_ref.h) and in full
 * by tools/check_floats --all. Pure functions, no state (but a cached CPU
 * feature check), no allocation: any thread, any number at once.
 *
 * The formatter's ideas, each written here from its published description
 * (no code taken from anywhere):
 *   - the shortest digits: Raffaello Giulietti's Schubfach ("The Schubfach
 *     way to render doubles", 2020): the one decade of the rounding
 *     interval holds at most one shorter candidate, else s or s + 1; no
 *     loop. Specialized to binary32 as Junekey Jeon's Dragonbox ("Dragonbox:
 *     A New Floating-Point Binary-to-Decimal Conversion Algorithm", 2020)
 *     does it: one 64-bit cached power of ten per decimal exponent, one
 *     64x64 -> 128-bit product, and (Dragonbox's shorter-candidate test)
 *     v's remainder within the decade compared with the interval's half
 *     width instead of both bounds multiplied out: exact here by a distance
 *     bound (see choose_fast);
 *   - what yy_json's and Victor Zverovich's zmij float writers aim at:
 *     fewer multiplications, no data-dependent branch, the common case on
 *     a straight path (per-binade tables for 1e-4 <= |v| < 2^21), SIMD;
 *   - digits: eight in one 64-bit word by multiply-shift division (the
 *     SWAR trick: 10^4, 100, 10 split the word's lanes), a byte swap, the
 *     trailing '0's counted with one bit scan; the text layout (0.000ddd,
 *     ddd.ddd, ddd.0) a choice of store addresses and words by masks;
 *   - a batch entry for JSON rows, and on CPUs with AVX-512 the same
 *     integer steps on eight values at once, the texts laid out with byte
 *     shuffles and packed with a byte compress (runtime dispatch; the
 *     scalar path is the portable one and gives the same bytes).
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tokvec_error.h"
#include "tokvec_float.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_F16C_PATH 1
#define HAVE_AVX512_PATH 1
#endif

size_t tokvec_dtype_size(tokvec_dtype d)
{
    return d == TOKVEC_F32 ? 4 : d == TOKVEC_I8 ? 1 : 2;
}

const char *tokvec_dtype_name(tokvec_dtype d)
{
    return d == TOKVEC_F32   ? "F32"
           : d == TOKVEC_F16 ? "F16"
           : d == TOKVEC_I8  ? "I8"
                             : "BF16";
}

const char *tokvec_dtype_numpy_name(tokvec_dtype d)
{
    return d == TOKVEC_F32   ? "float32"
           : d == TOKVEC_F16 ? "float16"
           : d == TOKVEC_I8  ? "int8"
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

float tokvec_bf16_to_f32(uint16_t b)
{
    return tokvec_f32_from_bits((uint32_t)b << 16);
}

float tokvec_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    if (exp == 0x1f) /* inf / NaN, payload kept */
        return tokvec_f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: man * 2^-24, exact */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return tokvec_f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t tokvec_f32_to_bf16(float f)
{
    uint32_t b = tokvec_f32_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet */
        return (uint16_t)((b >> 16) | 0x40u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

uint16_t tokvec_f32_to_f16(float f)
{
    uint32_t b = tokvec_f32_bits(f);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu);
    if (a >= 0x477ff000u) /* rounds to >= 65520: inf */
        return sign | 0x7c00u;
    if (a < 0x38800000u) { /* below the smallest normal half: subnormal */
        /* value * 2^24 rounded to nearest even integer is the mantissa. */
        float v = tokvec_f32_from_bits(a) * 0x1p24f; /* exact scaling */
        float r = nearbyintf(v); /* default mode: ties to even */
        return sign | (uint16_t)r;
    }
    uint32_t m = a + 0xfffu + ((a >> 13) & 1u); /* RNE at bit 13 */
    return sign | (uint16_t)((m - 0x38000000u) >> 13);
}

/* Bulk conversion works in blocks of 8 values. A block holding a NaN is
 * converted by the scalar functions above, so NaN payloads come out
 * exactly as they define, whatever the hardware does with them; every
 * other block goes through F16C (x86 with the feature, checked once at
 * run time) or fixed-size loops over 8 lanes that the compiler turns into
 * vector code. Both give exactly the scalar result: RNE is what the
 * hardware does with the default MXCSR, which nothing here changes
 * (checked on all 2^32 patterns by tools/check_floats --narrow). */
#define BLOCK 8

/* BLOCK little-endian 16-bit values to or from bytes. */
static void store_le16(unsigned char *p, const uint16_t *h)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, h, BLOCK * 2);
#else
    for (int j = 0; j < BLOCK; j++) {
        p[2 * j] = (unsigned char)h[j];
        p[2 * j + 1] = (unsigned char)(h[j] >> 8);
    }
#endif
}

static void load_le16(uint16_t *h, const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(h, p, BLOCK * 2);
#else
    for (int j = 0; j < BLOCK; j++)
        h[j] = (uint16_t)(p[2 * j] | (p[2 * j + 1] << 8));
#endif
}

static int f32_block_has_nan(const float *src)
{
    int nan = 0;
    for (int j = 0; j < BLOCK; j++)
        nan |= (tokvec_f32_bits(src[j]) & 0x7fffffffu) > 0x7f800000u;
    return nan;
}

/* Values [i, n) one at a time by the scalar functions: the tails, and the
 * blocks holding a NaN. */
static void widen_scalar(tokvec_dtype from, const unsigned char *p, float *dst,
                         size_t i, size_t n)
{
    for (; i < n; i++) {
        uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
        dst[i] = from == TOKVEC_F16 ? tokvec_f16_to_f32(h)
                                    : tokvec_bf16_to_f32(h);
    }
}

static void narrow_scalar(tokvec_dtype to, const float *src, unsigned char *p,
                          size_t i, size_t n)
{
    for (; i < n; i++) {
        uint16_t h = to == TOKVEC_F16 ? tokvec_f32_to_f16(src[i])
                                      : tokvec_f32_to_bf16(src[i]);
        p[2 * i] = (unsigned char)h;
        p[2 * i + 1] = (unsigned char)(h >> 8);
    }
}

/* The whole blocks of n values; each returns how many values it did. */
static size_t widen_bf16_blocks(const unsigned char *p, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        uint16_t h[BLOCK];
        uint32_t w[BLOCK];
        load_le16(h, p + 2 * i);
        for (int j = 0; j < BLOCK; j++)
            w[j] = (uint32_t)h[j] << 16;
        memcpy(dst + i, w, sizeof w);
    }
    return i;
}

static size_t narrow_bf16_blocks(const float *src, unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        if (f32_block_has_nan(src + i)) {
            narrow_scalar(TOKVEC_BF16, src, p, i, i + BLOCK);
            continue;
        }
        uint32_t w[BLOCK];
        uint16_t h[BLOCK];
        memcpy(w, src + i, sizeof w);
        for (int j = 0; j < BLOCK; j++)
            h[j] = (uint16_t)((w[j] + 0x7fffu + ((w[j] >> 16) & 1u)) >> 16);
        store_le16(p + 2 * i, h);
    }
    return i;
}

#ifdef HAVE_F16C_PATH

__attribute__((target("avx,f16c"))) static size_t widen_f16_hw(
    const unsigned char *p, float *dst, size_t n)
{
    const __m128i mag = _mm_set1_epi16(0x7fff), inf = _mm_set1_epi16(0x7c00);
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        __m128i h = _mm_loadu_si128((const __m128i *)(p + 2 * i));
        /* |h| > inf as signed 16-bit lanes (both sides below 0x8000) */
        if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, mag), inf)))
            widen_scalar(TOKVEC_F16, p, dst, i, i + BLOCK);
        else
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    return i;
}

__attribute__((target("avx,f16c"))) static size_t narrow_f16_hw(
    const float *src, unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        __m256 v = _mm256_loadu_ps(src + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
            narrow_scalar(TOKVEC_F16, src, p, i, i + BLOCK);
        else
            _mm_storeu_si128((__m128i *)(p + 2 * i),
                             _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT |
                                                    _MM_FROUND_NO_EXC));
    }
    return i;
}

static int have_f16c(void)
{
    static int cached = -1; /* benign race: every thread computes the same */
    int c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (c < 0) {
        /* CPUID.1:ECX bits 27 (OSXSAVE), 28 (AVX), 29 (F16C), and the OS
         * saving YMM state (XCR0 bits 1 and 2). */
        unsigned a, b, cx, d;
        c = 0;
        if (__get_cpuid(1, &a, &b, &cx, &d) && (cx >> 27 & 7u) == 7u) {
            unsigned lo, hi;
            __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            c = (lo & 6u) == 6u;
        }
        __atomic_store_n(&cached, c, __ATOMIC_RELAXED);
    }
    return c;
}
#endif

void tokvec_widen(tokvec_dtype from, const void *src, float *dst, size_t n)
{
    const unsigned char *p = src;
    size_t i = 0;
    if (from == TOKVEC_F32) {
        memcpy(dst, src, n * 4);
        return;
    }
    if (from == TOKVEC_I8) { /* every int8 is a float32 exactly */
        for (; i < n; i++)
            dst[i] = (float)(signed char)p[i];
        return;
    }
    if (from == TOKVEC_BF16)
        i = widen_bf16_blocks(p, dst, n);
#ifdef HAVE_F16C_PATH
    else if (have_f16c())
        i = widen_f16_hw(p, dst, n);
#endif
    widen_scalar(from, p, dst, i, n);
}

void tokvec_narrow(tokvec_dtype to, const float *src, void *dst, size_t n)
{
    size_t i = 0;
    assert(to != TOKVEC_I8); /* a stored dtype only, never an output */
    if (to == TOKVEC_F32) {
        memcpy(dst, src, n * 4);
        return;
    }
    if (to == TOKVEC_BF16)
        i = narrow_bf16_blocks(src, dst, n);
#ifdef HAVE_F16C_PATH
    else if (have_f16c())
        i = narrow_f16_hw(src, dst, n);
#endif
    narrow_scalar(to, src, dst, i, n);
}

/* --- shortest round-trip digits ----------------------------------------
 *
 * Our own implementation of Giulietti's Schubfach idea for float32. For
 * v = c * 2^q, every real in the rounding interval [v - lo, v + ulp/2]
 * (lo = ulp/2, or ulp/4 just above a power of two; bounds included when c
 * is even, as round-to-nearest-even reading does) reads back as v. Pick k
 * with 10^k <= interval width < 10^(k+1): then the interval holds at most
 * one multiple of 10 * 10^k and at least one multiple of 10^k. With
 * s = floor(v / 10^k) that makes the answer one of: the multiple of 10
 * next to s if it is inside (one digit shorter), else s or s + 1 (the one
 * inside, or the nearer when both are, ties to even). No loop, no branch.
 *
 * v / 10^k and both bounds are needed in quarter units (X = cb 2^q / 10^k
 * for cb = 4c, and 4c - 2 or 4c - 1, 4c + 2 for the bounds), compared
 * exactly with the integers 4s, 4(s+1), 4s + 2, 40 floor(s/10) ... Each X
 * comes as a fixed-point number with 34 fraction bits, the high half of
 * one 64x64-bit product: x = floor(g * (cb << h) / 2^64), where
 * g = ceil(10^-k * 2^r) in [2^63, 2^64) (the table below) and h = 98 -
 * (r - q) in 35..38 puts X's units at bit 34 (cb << h < 2^64). As g is
 * ceil'd, x = floor(X 2^34 + e) with 0 <= e < cb 2^(h-64) < 1: x is
 * exactly X 2^34 when X 2^34 is an integer, and off by less than one unit
 * otherwise. No float32 has an X that is not an integer yet within 2^-31.7
 * of one (computed for every binade and bound with exact integers:
 * tools/check_floats --margin), so for every integer Y, x <= Y 2^34
 * exactly when X <= Y, and x < Y 2^34 when X < Y: every comparison is done
 * on x itself, with no rounding to odd. The proof that it all holds is the
 * exhaustive check: tools/check_floats
 * --all runs all 2^32 patterns through an independent strtof round trip +
 * shortest + nearest check and byte for byte against the formatter this
 * one replaced (tests/float_ref.h: the same comparisons from a 128-bit
 * product rounded to odd, itself checked on all 2^32 patterns).
 *
 * The table was generated with Python's exact integers:
 *   for k in range(-45, 32):
 *       x = Fraction(10) ** -k; e = floor(log2(x)) (exactly); r = 63 - e
 *       g = ceil(x * 2**r)     # 2^63 <= g < 2^64, exact for -27 <= k <= 0
 * numpy (Dragon4) also takes a bound when c is even: checked on 466,525
 * floats whose numpy repr is exactly a bound. Pure integer work.
 */
typedef struct {
    uint64_t g; /* ceil(10^-k * 2^r) */
    int r;
} pow10_t;

#define POW10_KMIN (-45) /* k = floor(log10(3/4 * 2^-148)) */
static const pow10_t POW10[77] = {
    {0xb35dbf821ae4f38cu, -86}, /* 10^45 */
    {0x8f7e32ce7bea5c70u, -83}, /* 10^44 */
    {0xe596b7b0c643c71au, -79}, /* 10^43 */
    {0xb7abc627050305aeu, -76}, /* 10^42 */
    {0x92efd1b8d0cf37bfu, -73}, /* 10^41 */
    {0xeb194f8e1ae525feu, -69}, /* 10^40 */
    {0xbc143fa4e250eb32u, -66}, /* 10^39 */
    {0x96769950b50d88f5u, -63}, /* 10^38 */
    {0xf0bdc21abb48db21u, -59}, /* 10^37 */
    {0xc097ce7bc90715b4u, -56}, /* 10^36 */
    {0x9a130b963a6c115du, -53}, /* 10^35 */
    {0xf684df56c3e01bc7u, -49}, /* 10^34 */
    {0xc5371912364ce306u, -46}, /* 10^33 */
    {0x9dc5ada82b70b59eu, -43}, /* 10^32 */
    {0xfc6f7c4045812297u, -39}, /* 10^31 */
    {0xc9f2c9cd04674edfu, -36}, /* 10^30 */
    {0xa18f07d736b90be6u, -33}, /* 10^29 */
    {0x813f3978f8940985u, -30}, /* 10^28 */
    {0xcecb8f27f4200f3au, -26}, /* 10^27 */
    {0xa56fa5b99019a5c8u, -23}, /* 10^26 */
    {0x84595161401484a0u, -20}, /* 10^25 */
    {0xd3c21bcecceda100u, -16}, /* 10^24 */
    {0xa968163f0a57b400u, -13}, /* 10^23 */
    {0x878678326eac9000u, -10}, /* 10^22 */
    {0xd8d726b7177a8000u, -6},  /* 10^21 */
    {0xad78ebc5ac620000u, -3},  /* 10^20 */
    {0x8ac7230489e80000u, 0},   /* 10^19 */
    {0xde0b6b3a76400000u, 4},   /* 10^18 */
    {0xb1a2bc2ec5000000u, 7},   /* 10^17 */
    {0x8e1bc9bf04000000u, 10},  /* 10^16 */
    {0xe35fa931a0000000u, 14},  /* 10^15 */
    {0xb5e620f480000000u, 17},  /* 10^14 */
    {0x9184e72a00000000u, 20},  /* 10^13 */
    {0xe8d4a51000000000u, 24},  /* 10^12 */
    {0xba43b74000000000u, 27},  /* 10^11 */
    {0x9502f90000000000u, 30},  /* 10^10 */
    {0xee6b280000000000u, 34},  /* 10^9 */
    {0xbebc200000000000u, 37},  /* 10^8 */
    {0x9896800000000000u, 40},  /* 10^7 */
    {0xf424000000000000u, 44},  /* 10^6 */
    {0xc350000000000000u, 47},  /* 10^5 */
    {0x9c40000000000000u, 50},  /* 10^4 */
    {0xfa00000000000000u, 54},  /* 10^3 */
    {0xc800000000000000u, 57},  /* 10^2 */
    {0xa000000000000000u, 60},  /* 10^1 */
    {0x8000000000000000u, 63},  /* 10^0 */
    {0xcccccccccccccccdu, 67},  /* 10^-1 */
    {0xa3d70a3d70a3d70bu, 70},  /* 10^-2 */
    {0x83126e978d4fdf3cu, 73},  /* 10^-3 */
    {0xd1b71758e219652cu, 77},  /* 10^-4 */
    {0xa7c5ac471b478424u, 80},  /* 10^-5 */
    {0x8637bd05af6c69b6u, 83},  /* 10^-6 */
    {0xd6bf94d5e57a42bdu, 87},  /* 10^-7 */
    {0xabcc77118461cefdu, 90},  /* 10^-8 */
    {0x89705f4136b4a598u, 93},  /* 10^-9 */
    {0xdbe6fecebdedd5bfu, 97},  /* 10^-10 */
    {0xafebff0bcb24aaffu, 100}, /* 10^-11 */
    {0x8cbccc096f5088ccu, 103}, /* 10^-12 */
    {0xe12e13424bb40e14u, 107}, /* 10^-13 */
    {0xb424dc35095cd810u, 110}, /* 10^-14 */
    {0x901d7cf73ab0acdau, 113}, /* 10^-15 */
    {0xe69594bec44de15cu, 117}, /* 10^-16 */
    {0xb877aa3236a4b44au, 120}, /* 10^-17 */
    {0x9392ee8e921d5d08u, 123}, /* 10^-18 */
    {0xec1e4a7db69561a6u, 127}, /* 10^-19 */
    {0xbce5086492111aebu, 130}, /* 10^-20 */
    {0x971da05074da7befu, 133}, /* 10^-21 */
    {0xf1c90080baf72cb2u, 137}, /* 10^-22 */
    {0xc16d9a0095928a28u, 140}, /* 10^-23 */
    {0x9abe14cd44753b53u, 143}, /* 10^-24 */
    {0xf79687aed3eec552u, 147}, /* 10^-25 */
    {0xc612062576589ddbu, 150}, /* 10^-26 */
    {0x9e74d1b791e07e49u, 153}, /* 10^-27 */
    {0xfd87b5f28300ca0eu, 157}, /* 10^-28 */
    {0xcad2f7f5359a3b3fu, 160}, /* 10^-29 */
    {0xa2425ff75e14fc32u, 163}, /* 10^-30 */
    {0x81ceb32c4b43fcf5u, 166}, /* 10^-31 */
};

typedef unsigned __int128 u128;

#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

#define FRAC_BITS 34
#define UNIT (UINT64_C(1) << (FRAC_BITS + 2)) /* 1 in units of s = 4 X */

static ALWAYS_INLINE uint64_t mulhi64(uint64_t a, uint64_t b)
{
    return (uint64_t)(((u128)a * b) >> 64);
}

/* Schubfach's choice on x (v / 10^k in quarter units, 34 fraction bits)
 * and the bounds xl, xr (the same units): d * 10^k is the answer, d =
 * s, s + 1, or a multiple of 10 when one digit shorter. out: c is odd
 * (the bounds excluded). Every case is computed and the answer selected
 * without branches: which case applies depends on the value's low digits,
 * which no branch predictor guesses. */
static ALWAYS_INLINE uint32_t choose(uint64_t x, uint64_t xl, uint64_t xr,
                                     uint64_t out)
{
    uint32_t s = (uint32_t)(x >> (FRAC_BITS + 2));
    uint64_t s4 = x & ~(UNIT - 1); /* 4s, fixed point */
    uint64_t lo = xl + out, hi = xr - out;
    int uin = lo <= s4, win = s4 + UNIT <= hi;
    /* v nearer s + 1 than s: past 4s + 2, or at it (a tie) with s odd */
    int up = (x - s4) + (s & 1) > (UNIT >> 1);
    /* s + 1 if only it is inside, or both are and it is nearer (one of
     * them always is: the interval is at least 10^k wide) */
    uint32_t d = s + (uint32_t)((uin ^ 1) | (win & up));
    uint32_t s10 = s / 10;
    uint64_t p10 = (uint64_t)(s10 * 10) << (FRAC_BITS + 2);
    int upin = lo <= p10, wpin = p10 + 10 * UNIT <= hi;
    /* one digit shorter: the multiple of 10 inside */
    uint32_t m = 0u - (uint32_t)(upin ^ wpin);
    uint32_t shorter = (s10 + (uint32_t)(upin ^ 1)) * 10;
    return (shorter & m) | (d & ~m);
}

/* choose on the fast path (binades 2^-14 .. 2^20, c not a power of
 * two), from x alone and dc, the bounds' distance in x's units (2 2^q /
 * 10^k 2^34, to less than 1: g >> (63 - h)):
 *   - the interval is symmetric, so the nearer of s and s + 1 is always
 *     inside (it is at most 10^k / 2 from v, the interval reaches ulp/2 >=
 *     10^k / 2 on each side, and equality needs ulp = 10^k, i.e. q = k =
 *     0, where v = s): s + 1 when x is past 4s + 2, or at it (a tie) with
 *     s odd, i.e. when x + (s & 1) + (2 - 2^-34) carries into s;
 *   - the bounds X -+ 2 2^q / 10^k are never integers here (their 2-adic
 *     valuation is 1 + q - k < 0 for q <= -3), so by the distance above
 *     they are more than 4.8 units from every multiple of 2^34, while
 *     x -+ dc is within 2 units of them (x is, of X, and dc of the
 *     distance): comparing x -+ dc with the multiples of 10 decides
 *     exactly, whether c is odd or not. At most one is inside. */
static ALWAYS_INLINE uint32_t choose_fast(uint64_t x, uint64_t dc,
                                          uint64_t dc10)
{
    uint64_t s = x >> (FRAC_BITS + 2);
    uint32_t near = (uint32_t)((x + (s & 1) + (UNIT / 2 - 1)) >>
                               (FRAC_BITS + 2));
    uint32_t sp10 = (uint32_t)s / 10 * 10, tp10 = sp10 + 10;
    uint64_t r = x - ((uint64_t)sp10 << (FRAC_BITS + 2)); /* v - sp10 */
    /* by masks: a compiler's branch here would be mispredicted */
    uint32_t upin = 0u - (uint32_t)(r < dc);
    uint32_t wpin = 0u - (uint32_t)(r > dc10); /* 10 UNIT - dc */
    uint32_t d = near ^ ((near ^ tp10) & wpin);
    return d ^ ((d ^ sp10) & upin);
}

/* The fast path's binades, 2^-14 .. 2^20 (1e-4 <= |v| < 2^21), by the
 * biased exponent - 113: the power of ten and the shift h for x (as the
 * multiplier 4 << h, applied to c), dc (see choose_fast), and what the
 * digit writer needs: in a binade, d has n0 digits or n0 + 1 (d >=
 * 10^n0), the first of which is the exponent e0 (or e0 + 1). Generated
 * with Python's exact integers, for each q = ex - 150: k =
 * floor(log10(2^q)), g and r as for POW10, h = 98 - (r - q), n0 = the
 * digits of floor(2^23 2^q / 10^k), e0 = k + n0 - 1; checked there:
 * 10^k <= 2^q < 10^(k+1), 35 <= h <= 38, q - k <= -2, |dc - 2 2^q 10^-k
 * 2^34| < 1, n0 is 7 or 8, and every d of the binade (from 10 floor(smin
 * / 10) to floor((2^24 - 1) 2^q / 10^k) + 10) has n0 or n0 + 1 digits. */
typedef struct {
    uint64_t g;    /* ceil(10^-k * 2^r) */
    uint64_t c4;   /* 4 << h: c * c4 is cb << h */
    uint64_t dc;   /* g >> (63 - h) */
    uint64_t dc10; /* 10 UNIT - dc */
    uint32_t thr;  /* 10^n0 */
    int n0;        /* 7 or 8 */
    int e0;        /* k + n0 - 1 */
} fast_t;

#define F(g, h, n0, e0)                                \
    {                                                  \
        g, UINT64_C(4) << (h), (g) >> (63 - (h)),      \
            10 * UNIT - ((g) >> (63 - (h))),           \
            (n0) == 7 ? 10000000u : 100000000u, n0, e0 \
    }
/* clang-format off */
static const fast_t FAST[35] = {
    F(0xe8d4a51000000000u, 37, 8, -5), /* 2^-14 */
    F(0xba43b74000000000u, 35, 8, -4), /* 2^-13 */
    F(0xba43b74000000000u, 36, 8, -4), /* 2^-12 */
    F(0xba43b74000000000u, 37, 8, -4), /* 2^-11 */
    F(0x9502f90000000000u, 35, 7, -4), /* 2^-10 */
    F(0x9502f90000000000u, 36, 8, -3), /* 2^-9 */
    F(0x9502f90000000000u, 37, 8, -3), /* 2^-8 */
    F(0x9502f90000000000u, 38, 8, -3), /* 2^-7 */
    F(0xee6b280000000000u, 35, 8, -2), /* 2^-6 */
    F(0xee6b280000000000u, 36, 8, -2), /* 2^-5 */
    F(0xee6b280000000000u, 37, 8, -2), /* 2^-4 */
    F(0xbebc200000000000u, 35, 8, -1), /* 2^-3 */
    F(0xbebc200000000000u, 36, 8, -1), /* 2^-2 */
    F(0xbebc200000000000u, 37, 8, -1), /* 2^-1 */
    F(0x9896800000000000u, 35, 8, 0), /* 2^0 */
    F(0x9896800000000000u, 36, 8, 0), /* 2^1 */
    F(0x9896800000000000u, 37, 8, 0), /* 2^2 */
    F(0x9896800000000000u, 38, 8, 0), /* 2^3 */
    F(0xf424000000000000u, 35, 8, 1), /* 2^4 */
    F(0xf424000000000000u, 36, 8, 1), /* 2^5 */
    F(0xf424000000000000u, 37, 8, 1), /* 2^6 */
    F(0xc350000000000000u, 35, 8, 2), /* 2^7 */
    F(0xc350000000000000u, 36, 8, 2), /* 2^8 */
    F(0xc350000000000000u, 37, 8, 2), /* 2^9 */
    F(0x9c40000000000000u, 35, 8, 3), /* 2^10 */
    F(0x9c40000000000000u, 36, 8, 3), /* 2^11 */
    F(0x9c40000000000000u, 37, 8, 3), /* 2^12 */
    F(0x9c40000000000000u, 38, 8, 3), /* 2^13 */
    F(0xfa00000000000000u, 35, 8, 4), /* 2^14 */
    F(0xfa00000000000000u, 36, 8, 4), /* 2^15 */
    F(0xfa00000000000000u, 37, 8, 4), /* 2^16 */
    F(0xc800000000000000u, 35, 8, 5), /* 2^17 */
    F(0xc800000000000000u, 36, 8, 5), /* 2^18 */
    F(0xc800000000000000u, 37, 8, 5), /* 2^19 */
    F(0xa000000000000000u, 35, 8, 6), /* 2^20 */
};
/* clang-format on */
#undef F

/* --- writing the digits ------------------------------------------------
 *
 * The digits are built in registers as 16 characters, byte i =
 * character i (two words, stored whole), never stored narrow and read
 * back. Eight digits are split into 4-, 2- and 1-digit lanes of one
 * 64-bit word by multiply-shift (division by 10^4, 100, 10 as reciprocal
 * multiplications, all lanes at once: SWAR), each step adding
 * q * (2^lane - divisor) so the quotient moves up a lane and the remainder
 * stays; that leaves the last digit in the low byte, and one byte swap
 * puts the first digit first. The count of trailing '0's is the count of
 * trailing zero bits / 8 of the word before the swap. d is left-aligned
 * to nine digits: on the fast path by shifting its right-aligned digits
 * (no multiply on the way to them), elsewhere by multiplying d by a power
 * of ten. Which text layout applies is then a choice of store addresses
 * and words by masks, not branches.
 */
static const uint32_t POW10_U32[10] = {1,         10,        100,     1000,
                                       10000,     100000,    1000000, 10000000,
                                       100000000, 1000000000};

#define ZEROS8 UINT64_C(0x3030303030303030) /* "00000000" */

typedef struct {
    uint64_t w0;   /* characters 0-7, byte i = character i */
    uint64_t rest; /* characters 1-8, then '0's */
    int sig;       /* significant digits, trailing zeros dropped: 1..9 */
} digits_t;

static ALWAYS_INLINE uint64_t bswap64(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap64(x);
#else
    x = (x >> 32) | (x << 32);
    x = ((x & UINT64_C(0xffff0000ffff0000)) >> 16) |
        ((x & UINT64_C(0x0000ffff0000ffff)) << 16);
    return ((x & UINT64_C(0xff00ff00ff00ff00)) >> 8) |
           ((x & UINT64_C(0x00ff00ff00ff00ff)) << 8);
#endif
}

/* The 8 digits of b < 10^8 as bytes (values 0-9), the last in byte 0. */
static ALWAYS_INLINE uint64_t bcd8(uint32_t b)
{
    uint64_t h = b / 10000;
    uint64_t x = b + h * ((UINT64_C(1) << 32) - 10000); /* 4-digit lanes */
    uint64_t q = ((x * 10486) >> 20) & UINT64_C(0x0000007f0000007f);
    x += q * ((1 << 16) - 100); /* 2-digit lanes: /100 exact below 43699 */
    q = ((x * 103) >> 10) & UINT64_C(0x000f000f000f000f);
    return x + q * ((1 << 8) - 10); /* digits: /10 exact below 179 */
}

/* Trailing '0's of the 8 digits bcd8 gave: its zero bytes at the bottom
 * (digits < 16, so the lowest set bit + 1 stays in its byte); 8 for 0. */
static ALWAYS_INLINE int bcd8_zeros(uint64_t z)
{
    return (__builtin_ctzll(z | (UINT64_C(1) << 63)) + 1) >> 3;
}

/* The characters of 10^8 <= d9 < 10^9. */
static ALWAYS_INLINE digits_t digits9(uint32_t d9)
{
    uint32_t a = d9 / 100000000;
    uint64_t z = bcd8(d9 - a * 100000000);
    digits_t t;
    t.rest = bswap64(z) | ZEROS8;
    t.w0 = ('0' + a) | (t.rest << 8);
    t.sig = 9 - bcd8_zeros(z);
    return t;
}

/* The characters of d < 2 10^8 with n digits (7 <= n <= 9): its nine
 * digits with 9 - n leading zeros, d >= 10^8 the first, then shifted by
 * 9 - n characters. */
static ALWAYS_INLINE digits_t digits_n(uint32_t d, int n)
{
    /* by a mask: d >= 10^8 depends on the digits (a branch here is
     * mispredicted half the time in some binades) */
    uint32_t a = d >= 100000000;
    uint64_t z = bcd8(d - ((0u - a) & 100000000));
    uint64_t zs = bswap64(z); /* characters 1-8 of the nine */
    int sh = 8 * (9 - n);
    digits_t t;
    t.rest = (zs >> sh) | ZEROS8;
    t.w0 = (((zs << 8) | a) >> sh) | ZEROS8;
    t.sig = n - bcd8_zeros(z);
    return t;
}

/* Stores x at p as 8 bytes, least significant first. */
static ALWAYS_INLINE void store8(char *p, uint64_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &x, 8);
#else
    for (int i = 0; i < 8; i++)
        p[i] = (char)(x >> (8 * i));
#endif
}

/* Positional text of t for -4 <= e10 <= 6 at o, without branches. With
 * e10 < 0: "0.000000", the digits after the first at o + 2 - e10 and the
 * first before them. Else: the first 8 digits, the digits from e10 + 1
 * on again one byte further, '.' between (the '0' after it in "100.0"
 * is t's padding; bytes past the digits are never part of the text).
 * Both make the same three stores; only their addresses and words
 * differ, chosen by masks. Returns the length. Stores reach o + 16. */
static ALWAYS_INLINE size_t put_fast(char *o, digits_t t, int e10)
{
    int m = -(int)((unsigned)e10 >> 31); /* all ones when e10 < 0 */
    /* u + 1: -e10 ('0's after the point) or e10 + 1 (digits before it) */
    int u = e10 ^ m;
    uint64_t mm = (uint64_t)(int64_t)m;
    store8(o, (UINT64_C(0x3030303030302e30) & mm) | (t.w0 & ~mm)); /* 0.0 */
    store8(o + 2 + u - m, t.rest >> ((8 * u) & ~m)); /* 0 when e10 < 0 */
    o[1 + u - m] = (char)(m ? t.w0 : '.');
    int len = t.sig + ((u + 1) & m);
    return (size_t)(len > u + 2 ? len : u + 2) + 1;
}

/* |v| bit patterns: numpy prints positionally from the first float32
 * >= 1e-4 (0x38d1b717 is 9.99999975e-05) up to, not including, the first
 * float32 >= 1e16 (0x5a0e1bca is 10000000272564224). The fast path takes
 * the positional values below 2^21 (0x4a000000), -4 <= e10 <= 6, but for
 * the powers of two (their lower bound is nearer). */
#define POSITIONAL_MIN 0x38d1b718u
#define POSITIONAL_END 0x5a0e1bcau
#define FAST_END 0x4a000000u

static ALWAYS_INLINE int fast_range(uint32_t abits)
{
    return (abits - POSITIONAL_MIN < FAST_END - POSITIONAL_MIN) &
           ((abits & 0x7fffffu) != 0);
}

/* The text of a value of the fast range (sign included). */
static ALWAYS_INLINE size_t format_fast(uint32_t bits, char *buf)
{
    const fast_t *f = &FAST[((bits >> 23) & 0xffu) - 113];
    uint64_t c = (bits & 0x7fffffu) | 0x800000u;
    uint32_t d = choose_fast(mulhi64(f->g, c * f->c4), f->dc, f->dc10);
    int ge = d >= f->thr;
    digits_t t = digits_n(d, f->n0 + ge);
    *buf = '-';
    return (bits >> 31) + put_fast(buf + (bits >> 31), t, f->e0 + ge);
}

/* floor(a / 2^20) for a >= -(64 << 20), without shifting a negative. */
static int floor_shift20(int32_t a)
{
    return (int)((uint32_t)(a + (64 << 20)) >> 20) - 64;
}

/* Number of decimal digits of 1 <= d < 10^9. */
static int count_digits(uint32_t d)
{
    int n = ((31 - __builtin_clz(d)) * 1233 >> 12) + 1; /* ~ log10(2) */
    return n + (d >= POW10_U32[n]);
}

static const char DIGITS2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* Every value: the general path, for what the fast path does not take
 * (nan, inf, zero, subnormals, powers of two, from 2^21 up, below 1e-4).
 * Stores stay below buf + 19. */
static size_t format_rest(uint32_t bits, char *buf)
{
    uint32_t abits = bits & 0x7fffffffu;
    if (abits >= 0x7f800000u) {
        if (abits > 0x7f800000u) {
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
    char *o = buf;
    *o = '-';
    o += bits >> 31;
    if (abits == 0) {
        memcpy(o, "0.0", 3);
        return (size_t)(o - buf) + 3;
    }
    uint32_t frac = abits & 0x7fffffu, ex = abits >> 23;
    uint64_t c = ex ? frac | 0x800000u : frac;
    int q = (int)(ex ? ex : 1) - 150;
    int lower = frac == 0 && ex > 1; /* lo = ulp/4, k from 3/4 * 2^q */
    int k = floor_shift20(q * 315653 - (lower ? 131237 : 0));
    const pow10_t *p = &POW10[k - POW10_KMIN];
    int h = 98 - (p->r - q);
    uint64_t cp = c << (h + 2), dp = (uint64_t)1 << (h + 1);
    uint64_t x = mulhi64(p->g, cp);
    uint64_t xl = mulhi64(p->g, cp - (dp >> lower));
    uint64_t xr = mulhi64(p->g, cp + dp);
    uint32_t d = choose(x, xl, xr, c & 1);
    int n = count_digits(d);
    digits_t t = digits9(d * POW10_U32[9 - n]);
    int e10 = k + n - 1, nd = t.sig;
    if (abits >= POSITIONAL_MIN && abits < POSITIONAL_END) {
        if (e10 <= 6)
            return (size_t)(o - buf) + put_fast(o, t, e10);
        /* ddd000.0: from 1e7 up every float32 is an integer, and so is
         * its shortest decimal: nd <= e10 + 1 <= 16 */
        store8(o, t.w0);
        store8(o + 8, (t.rest >> 56) | (ZEROS8 << 8));
        o += e10 + 1;
        memcpy(o, ".0", 2);
        return (size_t)(o - buf) + 2;
    }
    /* d.ddde+XX, or de+XX for one digit ("1e-45") */
    o[0] = (char)t.w0;
    o[1] = '.';
    store8(o + 2, t.rest);
    o += nd > 1 ? nd + 1 : 1;
    int ae = e10 < 0 ? -e10 : e10; /* <= 45 */
    o[0] = 'e';
    o[1] = e10 < 0 ? '-' : '+';
    memcpy(o + 2, DIGITS2 + 2 * ae, 2);
    return (size_t)(o - buf) + 4;
}

size_t tokvec_f32_format(float v, char *buf)
{
    uint32_t bits = tokvec_f32_bits(v);
    if (fast_range(bits & 0x7fffffffu))
        return format_fast(bits, buf);
    return format_rest(bits, buf);
}

/* One value of tokvec_f32_format_json and its ',' at p; returns the end. */
static ALWAYS_INLINE char *json_one(char *p, uint32_t bits)
{
    uint32_t abits = bits & 0x7fffffffu;
    if (fast_range(abits)) {
        p += format_fast(bits, p);
    } else if (abits >= 0x7f800000u) { /* JSON has no nan, inf */
        memcpy(p, "null", 4);
        p += 4;
    } else {
        p += format_rest(bits, p);
    }
    *p = ',';
    return p + 1;
}

size_t tokvec_f32_format_json_scalar(char *buf, const float *x, size_t n)
{
    char *p = buf;
    for (size_t i = 0; i < n; i++)
        p = json_one(p, tokvec_f32_bits(x[i]));
    return (size_t)(p - buf) - (n != 0);
}

#ifdef HAVE_AVX512_PATH
/* --- eight at a time: AVX-512 ------------------------------------------
 *
 * The fast path above on eight values at once, one per 64-bit lane, for
 * CPUs with AVX-512 F, BW, VL, CD and VBMI2 (checked once at run time;
 * the same integers as the scalar code, so the same bytes: check_floats
 * compares both with the reference on all 2^32 patterns). A group of
 * eight with any value outside the fast range goes to the scalar code.
 *   - g and h by k (-12 .. -1 here) from two-register permutes of tables
 *     built from POW10 on entry; x from 32x32-bit products:
 *     g (cb << h) / 2^64 = (gh cb) 2^(h-32) + (gl cb) / 2^(64-h), exactly,
 *     as 2^(64-h) divides 2^32 (h >= 35); dc = g >> (63 - h);
 *   - choose_fast with masks, the digit count of d (7, 8 or 9 here) by two
 *     compares, the SWAR digits in 32-, 16-bit lanes, a byte shuffle for
 *     the byte swap, lzcnt for the trailing '0's;
 *   - the text: each value gets a 16-byte block: its 9 digit characters,
 *     '0', '.', ',' and four parameters (sign, where the '.' goes, how
 *     many leading '0's, where the ',' goes); one byte shuffle per four
 *     values, whose indices are computed from those parameters, lays out
 *     every block's text at once ("-0.000123", "12.5", with the ','), and
 *     a byte compress (VBMI2) packs the four texts together for one store.
 */
#define AVX512_TARGET \
    "avx512f,avx512bw,avx512vl,avx512cd,avx512vbmi2,bmi,bmi2,popcnt,lzcnt"

/* The vector path's tables and constants, built once per call and read
 * from memory in the loop: left as constants, the compiler rebuilds each
 * one from a general register in every iteration (32 registers do not hold
 * them all) and turns some multiplications into shift-and-add chains. */
typedef struct {
    __m512i g0, g1; /* g by k + 12 (k = -12 .. 3; -12 .. 0 used) */
    __m512i h0, h1; /* 98 - r by k + 12: h = that + q */
    __m512i c32, c64, c63, lo23, bit23, one, half, inv10, ten, ten_unit;
    __m512i e7, e8, hundred, six, inv1e8, inv1e4, e4, d100, q100, d10, q10;
    __m512i bswap, nine64, zeros, ch0, consts, perm0, perm1;
    __m512i iota, b12, b13, b14, b15, b1, b9, b10, b11, minus;
    __m256i absmask, bias, log2_10, kbias;
} k512_t;

/* Lays out and stores the texts of four values (blk: their blocks, as
 * described above) at p; returns the end. */
__attribute__((target(AVX512_TARGET))) static ALWAYS_INLINE char *put4_avx512(
    char *p, __m512i blk, const k512_t *k)
{
    __m512i sg = _mm512_shuffle_epi8(blk, k->b12);
    __m512i dot = _mm512_shuffle_epi8(blk, k->b13);
    __m512i lz = _mm512_shuffle_epi8(blk, k->b14);
    __m512i comma = _mm512_shuffle_epi8(blk, k->b15);
    /* digit p - lz, or p - lz - 1 past the '.'; negative: a '0' (9) */
    __m512i idx = _mm512_sub_epi8(k->iota, lz);
    idx = _mm512_mask_sub_epi8(idx, _mm512_cmpgt_epu8_mask(k->iota, dot), idx,
                               k->b1);
    idx = _mm512_min_epu8(idx, k->b9);
    idx = _mm512_mask_mov_epi8(idx, _mm512_cmpeq_epi8_mask(k->iota, dot),
                               k->b10);
    idx = _mm512_mask_mov_epi8(idx, _mm512_cmpeq_epi8_mask(k->iota, comma),
                               k->b11);
    __m512i txt = _mm512_shuffle_epi8(blk, idx);
    txt = _mm512_mask_mov_epi8(txt, _mm512_cmplt_epu8_mask(k->iota, sg),
                               k->minus);
    __mmask64 keep = _mm512_cmple_epu8_mask(k->iota, comma);
    _mm512_storeu_si512(p, _mm512_maskz_compress_epi8(keep, txt));
    return p + _mm_popcnt_u64(keep);
}

/* The eight values of bits, all of the fast range, and their ','s at p;
 * returns the end. */
__attribute__((target(AVX512_TARGET))) static ALWAYS_INLINE char *
group8_avx512(char *p, __m256i bits, const k512_t *k)
{
    /* q, k in 32-bit lanes, then one value per 64-bit lane */
    __m256i q32 = _mm256_sub_epi32(
        _mm256_srli_epi32(_mm256_and_si256(bits, k->absmask), 23), k->bias);
    __m256i k32 = _mm256_srai_epi32(_mm256_mullo_epi32(q32, k->log2_10), 20);
    __m512i kx = _mm512_cvtepi32_epi64(_mm256_add_epi32(k32, k->kbias));
    __m512i g = _mm512_permutex2var_epi64(k->g0, kx, k->g1);
    __m512i h = _mm512_add_epi64(_mm512_permutex2var_epi64(k->h0, kx, k->h1),
                                 _mm512_cvtepi32_epi64(q32));
    __m512i b64 = _mm512_cvtepu32_epi64(bits);
    __m512i cb = _mm512_slli_epi64(
        _mm512_or_si512(_mm512_and_si512(b64, k->lo23), k->bit23), 2);
    __m512i xm = _mm512_add_epi64(
        _mm512_sllv_epi64(_mm512_mul_epu32(_mm512_srli_epi64(g, 32), cb),
                          _mm512_sub_epi64(h, k->c32)),
        _mm512_srlv_epi64(_mm512_mul_epu32(g, cb),
                          _mm512_sub_epi64(k->c64, h)));
    __m512i dc = _mm512_srlv_epi64(g, _mm512_sub_epi64(k->c63, h));
    /* choose_fast */
    __m512i s = _mm512_srli_epi64(xm, FRAC_BITS + 2);
    __m512i near = _mm512_srli_epi64(
        _mm512_add_epi64(xm, _mm512_add_epi64(_mm512_and_si512(s, k->one),
                                              k->half)),
        FRAC_BITS + 2);
    __m512i sp10 = _mm512_mul_epu32(
        _mm512_srli_epi64(_mm512_mul_epu32(s, k->inv10), 35), k->ten);
    __m512i r = _mm512_sub_epi64(xm, _mm512_slli_epi64(sp10, FRAC_BITS + 2));
    __mmask8 upin = _mm512_cmp_epu64_mask(r, dc, _MM_CMPINT_LT);
    __mmask8 wpin = _mm512_cmp_epu64_mask(r, _mm512_sub_epi64(k->ten_unit, dc),
                                          _MM_CMPINT_NLE);
    __m512i d = _mm512_mask_add_epi64(near, wpin, sp10, k->ten);
    d = _mm512_mask_mov_epi64(d, upin, sp10);
    /* d has 7, 8 or 9 digits here: d9 = d * 10^(9 - n), e10 */
    __mmask8 ge7 = _mm512_cmp_epu64_mask(d, k->e7, _MM_CMPINT_NLT);
    __mmask8 ge8 = _mm512_cmp_epu64_mask(d, k->e8, _MM_CMPINT_NLT);
    __m512i sc = _mm512_mask_mov_epi64(k->hundred, ge7, k->ten);
    sc = _mm512_mask_mov_epi64(sc, ge8, k->one);
    __m512i d9 = _mm512_mul_epu32(d, sc);
    __m512i e10 = _mm512_add_epi64(
        _mm512_cvtepi32_epi64(k32),
        _mm512_add_epi64(
            k->six, _mm512_add_epi64(_mm512_maskz_mov_epi64(ge7, k->one),
                                     _mm512_maskz_mov_epi64(ge8, k->one))));
    /* digits9 */
    __m512i a = _mm512_srli_epi64(_mm512_mul_epu32(d9, k->inv1e8), 57);
    __m512i b = _mm512_sub_epi64(d9, _mm512_mul_epu32(a, k->e8));
    __m512i hq = _mm512_srli_epi64(_mm512_mul_epu32(b, k->inv1e4), 45);
    __m512i z = _mm512_add_epi64(_mm512_sub_epi64(b,
                                                  _mm512_mul_epu32(hq, k->e4)),
                                 _mm512_slli_epi64(hq, 32));
    __m512i q = _mm512_srli_epi32(_mm512_mullo_epi32(z, k->d100), 20);
    z = _mm512_add_epi32(z, _mm512_mullo_epi32(q, k->q100));
    q = _mm512_srli_epi16(_mm512_mullo_epi16(z, k->d10), 10);
    z = _mm512_add_epi16(z, _mm512_mullo_epi16(q, k->q10));
    __m512i rest = _mm512_shuffle_epi8(z, k->bswap); /* digit i + 1 */
    __m512i sig = _mm512_sub_epi64(
        k->nine64, _mm512_srli_epi64(_mm512_lzcnt_epi64(rest), 3));
    rest = _mm512_or_si512(rest, k->zeros);
    /* the parameters of put4_avx512, in p's coordinates (with '-') */
    __mmask8 neg = _mm512_cmp_epi64_mask(e10, _mm512_setzero_si512(),
                                         _MM_CMPINT_LT);
    __m512i sgn = _mm512_srli_epi64(b64, 31);
    __m512i dotp = _mm512_mask_mov_epi64(_mm512_add_epi64(e10, k->one), neg,
                                         k->one);
    __m512i lzs = _mm512_maskz_sub_epi64(neg, _mm512_setzero_si512(), e10);
    __m512i comma = _mm512_add_epi64(
        _mm512_max_epi64(_mm512_add_epi64(sig, lzs),
                         _mm512_add_epi64(dotp, k->one)),
        _mm512_add_epi64(sgn, k->one));
    __m512i w0 = _mm512_or_si512(_mm512_add_epi64(a, k->ch0),
                                 _mm512_slli_epi64(rest, 8));
    __m512i w1 = _mm512_or_si512(
        _mm512_or_si512(_mm512_srli_epi64(rest, 56), k->consts),
        _mm512_or_si512(
            _mm512_or_si512(_mm512_slli_epi64(sgn, 32),
                            _mm512_slli_epi64(_mm512_add_epi64(dotp, sgn),
                                              40)),
            _mm512_or_si512(_mm512_slli_epi64(_mm512_add_epi64(lzs, sgn), 48),
                            _mm512_slli_epi64(comma, 56))));
    p = put4_avx512(p, _mm512_permutex2var_epi64(w0, k->perm0, w1), k);
    return put4_avx512(p, _mm512_permutex2var_epi64(w0, k->perm1, w1), k);
}

__attribute__((target(AVX512_TARGET))) static size_t json_avx512(
    char *buf, const float *x, size_t n)
{
    k512_t k;
    uint64_t gt[16] = {0}, ht[16] = {0};
    for (int i = 0; i <= 12; i++) { /* k = i - 12 */
        gt[i] = POW10[i - 12 - POW10_KMIN].g;
        ht[i] = (uint64_t)(98 - POW10[i - 12 - POW10_KMIN].r);
    }
    k.g0 = _mm512_loadu_si512(gt);
    k.g1 = _mm512_loadu_si512(gt + 8);
    k.h0 = _mm512_loadu_si512(ht);
    k.h1 = _mm512_loadu_si512(ht + 8);
    k.c32 = _mm512_set1_epi64(32);
    k.c64 = _mm512_set1_epi64(64);
    k.c63 = _mm512_set1_epi64(63);
    k.lo23 = _mm512_set1_epi64(0x7fffff);
    k.bit23 = _mm512_set1_epi64(0x800000);
    k.one = _mm512_set1_epi64(1);
    k.half = _mm512_set1_epi64((int64_t)(UNIT / 2 - 1));
    k.inv10 = _mm512_set1_epi64(0xcccccccd);
    k.ten = _mm512_set1_epi64(10);
    k.ten_unit = _mm512_set1_epi64((int64_t)(10 * UNIT));
    k.e7 = _mm512_set1_epi64(10000000);
    k.e8 = _mm512_set1_epi64(100000000);
    k.hundred = _mm512_set1_epi64(100);
    k.six = _mm512_set1_epi64(6);
    k.inv1e8 = _mm512_set1_epi64(0x55e63b89);
    k.inv1e4 = _mm512_set1_epi64(0xd1b71759);
    k.e4 = _mm512_set1_epi64(10000);
    /* bcd8's steps: /100 in 32-bit lanes (exact below 43699), then
     * + q (2^16 - 100); /10 in 16-bit lanes (exact below 179), then
     * + q (2^8 - 10) */
    k.d100 = _mm512_set1_epi32(10486);
    k.q100 = _mm512_set1_epi32((1 << 16) - 100);
    k.d10 = _mm512_set1_epi16(103);
    k.q10 = _mm512_set1_epi16((1 << 8) - 10);
    k.bswap = _mm512_set4_epi32(0x08090a0b, 0x0c0d0e0f, 0x00010203,
                                0x04050607);
    k.nine64 = _mm512_set1_epi64(9);
    k.zeros = _mm512_set1_epi64((int64_t)ZEROS8);
    k.ch0 = _mm512_set1_epi64('0');
    k.consts = _mm512_set1_epi64(0x2c2e3000); /* bytes 9-11: '0' '.' ',' */
    k.perm0 = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    k.perm1 = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    k.iota = _mm512_set4_epi32(0x0f0e0d0c, 0x0b0a0908, 0x07060504, 0x03020100);
    k.b12 = _mm512_set1_epi8(12);
    k.b13 = _mm512_set1_epi8(13);
    k.b14 = _mm512_set1_epi8(14);
    k.b15 = _mm512_set1_epi8(15);
    k.b1 = _mm512_set1_epi8(1);
    k.b9 = _mm512_set1_epi8(9);
    k.b10 = _mm512_set1_epi8(10);
    k.b11 = _mm512_set1_epi8(11);
    k.minus = _mm512_set1_epi8('-');
    k.absmask = _mm256_set1_epi32(0x7fffffff);
    k.bias = _mm256_set1_epi32(150);
    k.log2_10 = _mm256_set1_epi32(315653);
    k.kbias = _mm256_set1_epi32(12);
    /* from here on the compiler knows k only as memory */
    __asm__ volatile("" : : "r"(&k) : "memory");
    char *p = buf;
    size_t i = 0;
    for (;;) {
        /* the vector loop holds no call; a group it cannot take goes to
         * the scalar code */
        for (; i + 8 <= n; i += 8) {
            __m256i bits = _mm256_loadu_si256((const __m256i *)(x + i));
            __m256i ab = _mm256_and_si256(bits, k.absmask);
            __mmask8 fast =
                _mm256_cmp_epu32_mask(
                    _mm256_sub_epi32(ab, _mm256_set1_epi32(POSITIONAL_MIN)),
                    _mm256_set1_epi32(FAST_END - POSITIONAL_MIN),
                    _MM_CMPINT_LT) &
                _mm256_test_epi32_mask(bits, _mm256_set1_epi32(0x7fffff));
            if (fast != 0xff)
                break;
            p = group8_avx512(p, bits, &k);
        }
        if (i + 8 > n)
            break;
        for (size_t j = i; j < i + 8; j++)
            p = json_one(p, tokvec_f32_bits(x[j]));
        i += 8;
    }
    for (; i < n; i++)
        p = json_one(p, tokvec_f32_bits(x[i]));
    return (size_t)(p - buf) - (n != 0);
}

/* AVX-512 F, BW, VL, CD, VBMI2, BMI1/2, POPCNT, LZCNT, and the OS saving
 * the opmask and ZMM state (XCR0 bits 1, 2, 5, 6, 7). */
static int have_avx512_fmt(void)
{
    static int cached = -1; /* benign race: every thread computes the same */
    int c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (c < 0) {
        unsigned a, b, cx, d;
        c = 0;
        if (__get_cpuid(1, &a, &b, &cx, &d) && (cx >> 27 & 1u) &&
            (cx >> 23 & 1u)) { /* OSXSAVE, POPCNT */
            unsigned lo, hi, eb, ec;
            __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            int os = (lo & 0xe6u) == 0xe6u;
            int lzcnt = __get_cpuid(0x80000001u, &a, &b, &ec, &d) &&
                        (ec >> 5 & 1u);
            if (os && lzcnt && __get_cpuid_count(7, 0, &a, &eb, &ec, &d)) {
                /* EBX: F 16, CD 28, BW 30, VL 31, BMI1 3, BMI2 8;
                 * ECX: VBMI2 6 */
                unsigned need = 1u << 16 | 1u << 28 | 1u << 30 | 1u << 31 |
                                1u << 3 | 1u << 8;
                c = (eb & need) == need && (ec >> 6 & 1u);
            }
        }
        __atomic_store_n(&cached, c, __ATOMIC_RELAXED);
    }
    return c;
}
#endif

size_t tokvec_f32_format_json(char *buf, const float *x, size_t n)
{
#ifdef HAVE_AVX512_PATH
    if (n >= 8 && have_avx512_fmt())
        return json_avx512(buf, x, n);
#endif
    return tokvec_f32_format_json_scalar(buf, x, n);
}
