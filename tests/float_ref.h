/* float_ref.h -- the float32 formatter as it was before issue 28's rewrite
 * (core/float.c at f32b512), kept as a reference: tools/check_floats
 * compares the new tokvec_f32_format with it byte for byte (--diff, and
 * --all beside the independent check), tests/test_float.c on random
 * patterns and edge classes, bench/floatbench.c times both in one run.
 * This formatter was itself checked on all 2^32 patterns by
 * tools/check_floats --all (strtof round trip, shortest, nearest, numpy's
 * spelling). Everything is static: include it in one file per program.
 */
#ifndef TV_FLOAT_REF_H
#define TV_FLOAT_REF_H

#include <stdint.h>
#include <string.h>

#include "tokvec_float.h"

/* --- ref_shortest round-trip digits ----------------------------------------
 *
 * Our own implementation of Giulietti's Schubfach idea for float32. For
 * v = c * 2^q, every real in the rounding interval [v - lo, v + ulp/2]
 * (lo = ulp/2, or ulp/4 just above a power of two; bounds included when c
 * is even, as round-to-nearest-even reading does) reads back as v. Pick k
 * with 10^k <= interval width < 10^(k+1): then the interval holds at most
 * one multiple of 10 * 10^k and at least one multiple of 10^k. With
 * s = floor(v / 10^k) that makes the answer one of: the multiple of 10
 * next to s if it is inside (one digit shorter), else s or s + 1 (the one
 * inside, or the nearer when both are, ties to even). No loop.
 *
 * v / 10^k and both bounds are needed in quarter units, with a sticky bit
 * saying "not an integer" (round to odd), so that comparisons with the
 * integers 4s, 4(s+1), 40 floor(s/10) ... are exact. They come from one
 * 64x64 -> 128-bit product c * g, g = ceil(10^-k * 2^r) in [2^63, 2^64)
 * from the table below. The product overshoots the exact value by less
 * than cb <= 2^27 (in its own units), which never reaches the bits above
 * bit 27 when the exact value is an integer, so the sticky bit ignores the
 * 27 lowest bits. That this is enough for every non-integer value is not
 * argued here but checked: tools/check_floats --all runs all 2^32 patterns
 * through an independent strtof round trip + ref_shortest + nearest check.
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
} ref_pow10_t;

#define REF_POW10_KMIN (-45) /* k = floor(log10(3/4 * 2^-148)) */
static const ref_pow10_t REF_POW10[77] = {
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

typedef unsigned __int128 ref_u128;

/* Quarter units of x / 2^sh, rounded to odd from bit 27 up (see above). */
static uint64_t ref_rop(ref_u128 x, int sh)
{
    uint64_t u = (uint64_t)(x >> 27);
    int s = sh - 27;
    return (u >> s) | ((u & ((UINT64_C(1) << s) - 1)) != 0);
}

/* floor(a / 2^20) for a >= -(64 << 20), without shifting a negative. */
static int ref_floor_shift20(int32_t a)
{
    return (int)((uint32_t)(a + (64 << 20)) >> 20) - 64;
}

/* Shortest digits of finite v != 0 (nearest to v among the ref_shortest, ties
 * to even): returns d, not a multiple of 10, with v ~ d * 10^*exp10. */
static uint32_t ref_shortest(uint32_t bits, int *exp10)
{
    uint32_t frac = bits & 0x7fffffu, ex = (bits >> 23) & 0xffu;
    uint64_t c = ex ? frac | 0x800000u : frac;
    int q = ex ? (int)ex - 150 : -149;
    int k, lower;
    if (frac == 0 && ex > 1) { /* just above a power of two: lo = ulp/4 */
        k = ref_floor_shift20(q * 315653 - 131237);
        lower = 1;
    } else {
        k = ref_floor_shift20(q * 315653);
        lower = 2;
    }
    const ref_pow10_t *p = &REF_POW10[k - REF_POW10_KMIN];
    int sh = p->r - q;
    ref_u128 pb = ((ref_u128)c * p->g) << 2;
    uint64_t vb = ref_rop(pb, sh);
    uint64_t vbl = ref_rop(pb - (ref_u128)p->g * (unsigned)lower, sh);
    uint64_t vbr = ref_rop(pb + ((ref_u128)p->g << 1), sh);
    uint64_t out = c & 1; /* odd c: the bounds themselves are excluded */
    uint64_t s = vb >> 2, t = s + 1, lo = vbl + out;
    uint64_t s10 = s / 10, sp10 = s10 * 10, tp10 = sp10 + 10;
    /* Every case is computed and the answer selected without branches:
     * which case applies depends on the value's low digits, which no
     * branch predictor guesses (~15% faster on normal(0,1) values). */
    int upin = lo <= sp10 << 2, wpin = (tp10 << 2) + out <= vbr;
    int uin = lo <= s << 2, win = (t << 2) + out <= vbr;
    uint64_t mid = (s << 2) + 2; /* vb against the midpoint of s, s + 1 */
    int near_s = (vb < mid) | ((vb == mid) & ((s & 1) == 0));
    /* s if only s is inside, or both (or neither) are and s is nearer. */
    int pick_s = (uin & !win) | ((uin == win) & near_s);
    int shorter = upin != wpin; /* one digit shorter: d * 10^(k+1) */
    uint64_t m = (uint64_t)0 - (uint64_t)shorter;
    uint64_t d = ((s10 + (uint64_t)!upin) & m) | ((t - (uint64_t)pick_s) & ~m);
    k += shorter;
    /* Only the shorter answer can end in 0: s or s + 1 would have been
     * sp10 or tp10, inside the interval. d >= 1: the bounds are positive. */
    while (d % 10 == 0) {
        d /= 10;
        k++;
    }
    *exp10 = k;
    return (uint32_t)d;
}

static const char REF_DIGITS2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* Stores x at p as 8 bytes, least significant first. */
static void ref_store8(char *p, uint64_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &x, 8);
#else
    for (int i = 0; i < 8; i++)
        p[i] = (char)(x >> (8 * i));
#endif
}

#define REF_ZEROS8 UINT64_C(0x3030303030303030) /* "00000000" */

/* The nd digits of 1 <= d < 10^9 as 16 characters, byte i = character i:
 * the digits left-aligned, then '0's. Built in registers (two 4-digit
 * lanes split into 2-digit and then 1-digit lanes by multiplication), so
 * the caller stores whole words and never reads back narrow stores. */
static ref_u128 ref_digits16(uint32_t d, int nd)
{
    uint32_t a = d / 100000000, b = d % 100000000;
    uint64_t x = (b / 10000) | ((uint64_t)(b % 10000) << 32);
    uint64_t q = ((x * 10486) >> 20) & UINT64_C(0x0000007f0000007f);
    x = ((x - q * 100) << 16) | q; /* /100 exact below 43699 */
    q = ((x * 103) >> 10) & UINT64_C(0x000f000f000f000f);
    x = ((x - q * 10) << 8) | q; /* /10 exact below 179 */
    ref_u128 s = (ref_u128)('0' + a) | ((ref_u128)(x | REF_ZEROS8) << 8) |
                 ((ref_u128)REF_ZEROS8 << 72);
    int sh = 8 * (9 - nd);
    ref_u128 zeros = ((ref_u128)REF_ZEROS8 << 64) | REF_ZEROS8;
    return (s >> sh) | (zeros & ~(~(ref_u128)0 >> sh));
}

/* Number of decimal digits of 1 <= d < 10^9. */
static int ref_count_digits(uint32_t d)
{
    static const uint32_t P10[10] = {1,         10,        100,     1000,
                                     10000,     100000,    1000000, 10000000,
                                     100000000, 1000000000};
    int n = ((31 - __builtin_clz(d)) * 1233 >> 12) + 1; /* ~ log10(2) */
    return n + (d >= P10[n]);
}

/* |v| bit patterns: numpy prints positionally from the first float32
 * >= 1e-4 (0x38d1b717 is 9.99999975e-05) up to, not including, the first
 * float32 >= 1e16 (0x5a0e1bca is 10000000272564224). */
#define REF_POSITIONAL_MIN 0x38d1b718u
#define REF_POSITIONAL_END 0x5a0e1bcau

/* All stores below have fixed sizes (a few moves, no loops) and stay
 * inside buf[0..TOKVEC_F32_MAXLEN): the longest reach is sign + "0.000" +
 * 16 bytes = 22. Bytes past the returned length may be overwritten. */
static size_t ref_f32_format(float v, char *buf)
{
    uint32_t bits = tokvec_f32_bits(v);
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
    int e;
    uint32_t d = ref_shortest(abits, &e);
    int nd = ref_count_digits(d);
    int e10 = e + nd - 1; /* exponent of the first digit */
    ref_u128 dig = ref_digits16(d, nd);
    uint64_t w0 = (uint64_t)dig, w1 = (uint64_t)(dig >> 64);
    if (abits >= REF_POSITIONAL_MIN && abits < REF_POSITIONAL_END) {
        if (e10 < 0) { /* 0.000ddd: -4 <= e10 <= -1 */
            ref_store8(o, UINT64_C(0x303030302e30)); /* "0.0000" */
            o += 1 - e10;
            ref_store8(o, w0);
            ref_store8(o + 8, w1);
            return (size_t)(o - buf) + (size_t)nd;
        }
        if (nd <= e10 + 1) { /* ddd000.0: e10 <= 15, '0's from dig */
            ref_store8(o, w0);
            ref_store8(o + 8, w1);
            o += e10 + 1;
            memcpy(o, ".0", 2);
            return (size_t)(o - buf) + 2;
        }
        /* ddd.ddd: e10 <= 7, at most 8 digits after the point */
        ref_store8(o, w0);
        o[e10 + 1] = '.';
        ref_store8(o + e10 + 2, (uint64_t)(dig >> (8 * (e10 + 1))));
        return (size_t)(o - buf) + (size_t)nd + 1;
    }
    /* d.ddde+XX, or de+XX for one digit ("1e-45") */
    o[0] = (char)w0;
    o[1] = '.';
    ref_store8(o + 2, (uint64_t)(dig >> 8));
    o += nd > 1 ? nd + 1 : 1;
    int ae = e10 < 0 ? -e10 : e10; /* <= 45 */
    o[0] = 'e';
    o[1] = e10 < 0 ? '-' : '+';
    memcpy(o + 2, REF_DIGITS2 + 2 * ae, 2);
    return (size_t)(o - buf) + 4;
}

#endif
