/* init.c -- PyTorch-compatible random initialisation, bit for bit.
 *
 * Implements shared/docs/torch-compatible-init.md: MT19937 (reference
 * init_genrand, full twist before the first output), the float32 AVX2
 * "vector path" of normal_ for n >= 16 (Cephes LOG/SINCOS with fused
 * multiply-adds exactly where torch's compiled kernel has them), and the
 * double "small path" for n < 16 with its cached second value. What must
 * hold: every operation is one IEEE float32 (or double, small path)
 * operation; the build uses -ffp-contract=off so nothing else is fused.
 *
 * Threads: a tokvec_rng belongs to one thread at a time; no globals.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tokvec_init.h"

#define MT_N 624
#define MT_M 397

struct tokvec_rng {
    uint32_t mt[MT_N];
    int idx;           /* next word of mt to temper; MT_N = twist first */
    int have_cached;   /* small path: Z present */
    double cached;     /* small path: r * sin(theta) of the last pair */
};

void tokvec_rng_seed(tokvec_rng *rng, uint64_t seed)
{
    uint32_t s = (uint32_t)seed; /* torch keeps the low 32 bits */
    rng->mt[0] = s;
    for (int i = 1; i < MT_N; i++)
        rng->mt[i] = 1812433253u * (rng->mt[i - 1] ^ (rng->mt[i - 1] >> 30)) +
                     (uint32_t)i;
    rng->idx = MT_N;
    rng->have_cached = 0;
    rng->cached = 0;
}

int tokvec_rng_new(uint64_t seed, tokvec_rng **out)
{
    tokvec_rng *r = malloc(sizeof *r);
    *out = NULL;
    if (!r)
        return -ENOMEM;
    tokvec_rng_seed(r, seed);
    *out = r;
    return 0;
}

void tokvec_rng_free(tokvec_rng *rng)
{
    free(rng);
}

static void twist(uint32_t *mt)
{
    int i;
    for (i = 0; i < MT_N; i++) {
        uint32_t y = (mt[i] & 0x80000000u) | (mt[(i + 1) % MT_N] & 0x7fffffffu);
        mt[i] = mt[(i + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0);
    }
}

uint32_t tokvec_rng_u32(tokvec_rng *rng)
{
    if (rng->idx >= MT_N) {
        twist(rng->mt);
        rng->idx = 0;
    }
    uint32_t y = rng->mt[rng->idx++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* --- vector path ---------------------------------------------------------- */

static float bits_f(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t f_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float uniform_f(tokvec_rng *rng)
{
    return (float)(tokvec_rng_u32(rng) & 0xFFFFFFu) * 0x1p-24f;
}

/* Cephes logf as torch's AVX2 kernel computes it (spec section 4, LOG). */
static float log_cephes(float x)
{
    const float P[9] = {bits_f(0x3d9021bb), bits_f(0xbdebd1b8),
                        bits_f(0x3def251a), bits_f(0xbdfe5d4f),
                        bits_f(0x3e11e9bf), bits_f(0xbe2aae50),
                        bits_f(0x3e4cceac), bits_f(0xbe7ffffc),
                        bits_f(0x3eaaaaaa)};
    const float Q1 = bits_f(0xb95e8083), Q2 = bits_f(0x3f318000);
    const float min_norm = bits_f(0x00800000), sqrthf = bits_f(0x3f3504f3);

    x = x < min_norm ? min_norm : x;
    uint32_t b = f_bits(x);
    int32_t k = (int32_t)(b >> 23) - 127;
    x = bits_f((b & 0x807fffffu) | 0x3f000000u);
    float e = (float)k + 1.0f;
    if (x < sqrthf) {
        e = e - 1.0f;
        x = x + x - 1.0f; /* exact */
    } else {
        x = x - 1.0f;
    }
    float z = x * x;
    float y = P[0];
    for (int i = 1; i < 9; i++)
        y = fmaf(y, x, P[i]);
    y = y * x;
    y = fmaf(y, z, e * Q1);
    y = fmaf(-z, 0.5f, y);
    x = x + y;
    x = fmaf(e, Q2, x);
    return x;
}

/* Cephes sincosf as torch's AVX2 kernel computes it (spec, SINCOS). */
static void sincos_cephes(float t, float *s_out, float *c_out)
{
    const float FOPI = bits_f(0x3fa2f983), MDP1 = bits_f(0xbf490000),
                MDP2 = bits_f(0xb97da000), MDP3 = bits_f(0xb3222169);
    const float CP0 = bits_f(0x37ccf5ce), CP1 = bits_f(0xbab6061a),
                CP2 = bits_f(0x3d2aaaa5);
    const float SP0 = bits_f(0xb94ca1f9), SP1 = bits_f(0x3c08839e),
                SP2 = bits_f(0xbe2aaaa3);

    uint32_t sgn_s = f_bits(t) & 0x80000000u;
    float x = fabsf(t);
    float y = x * FOPI;
    int32_t j = (int32_t)y;
    j = (j + 1) & ~1;
    float yj = (float)j;
    uint32_t swap = (uint32_t)(j & 4) << 29;
    int poly = (j & 2) == 0;
    uint32_t sgn_c = (uint32_t)((~(j - 2)) & 4) << 29;
    sgn_s ^= swap;
    x = fmaf(yj, MDP1, x);
    x = fmaf(yj, MDP2, x);
    x = fmaf(yj, MDP3, x);
    float z = x * x;
    float c = fmaf(CP0, z, CP1);
    c = fmaf(c, z, CP2);
    c = c * z;
    float h = z * 0.5f;
    c = fmaf(c, z, -h);
    c = c + 1.0f;
    float s = fmaf(SP0, z, SP1);
    s = fmaf(s, z, SP2);
    s = s * z;
    s = fmaf(s, x, x);
    float S = poly ? s : c, C = poly ? c : s;
    *s_out = bits_f(f_bits(S + 0.0f) ^ sgn_s);
    *c_out = bits_f(f_bits(C + 0.0f) ^ sgn_c);
}

/* BLOCK: 16 uniforms in, 16 normals out (lane j pairs d[j] and d[j+8]). */
static void block16(float *d, float mean, float std)
{
    const float two_pi = bits_f(0x40c90fdb);
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j];
        float L = log_cephes(u1);
        float radius = sqrtf(-2.0f * L);
        float theta = two_pi * d[j + 8];
        float S, C;
        sincos_cephes(theta, &S, &C);
        d[j] = fmaf(radius * C, std, mean) + 0.0f;
        d[j + 8] = fmaf(radius * S, std, mean) + 0.0f;
    }
}

static void normal_vector(tokvec_rng *rng, float *w, size_t n, float mean,
                          float std)
{
    for (size_t i = 0; i < n; i++)
        w[i] = uniform_f(rng);
    for (size_t b = 0; b + 16 <= n; b += 16)
        block16(w + b, mean, std);
    if (n % 16) {
        for (size_t i = n - 16; i < n; i++)
            w[i] = uniform_f(rng);
        block16(w + n - 16, mean, std);
    }
}

/* --- small path ----------------------------------------------------------- */

static double uniform_d(tokvec_rng *rng)
{
    uint64_t a = tokvec_rng_u32(rng), b = tokvec_rng_u32(rng);
    uint64_t r = (a << 32) | b;
    return (double)(r & ((UINT64_C(1) << 53) - 1)) * 0x1p-53;
}

static void normal_small(tokvec_rng *rng, float *w, size_t n, float mean,
                         float std)
{
    for (size_t i = 0; i < n; i++) {
        double z;
        if (rng->have_cached) {
            z = rng->cached;
            rng->have_cached = 0;
        } else {
            double a = uniform_d(rng), b = uniform_d(rng);
            double r = sqrt(-2.0 * log(1.0 - b));
            double th = 2.0 * 3.141592653589793 * a;
            rng->cached = r * sin(th);
            rng->have_cached = 1;
            z = r * cos(th);
        }
        w[i] = (float)fma(z, (double)std, (double)mean);
    }
}

void tokvec_rng_normal(tokvec_rng *rng, float *out, size_t n, float mean,
                       float std)
{
    if (n >= 16)
        normal_vector(rng, out, n, mean, std);
    else
        normal_small(rng, out, n, mean, std);
}

int tokvec_init_embedding(tokvec_rng *rng, float *out, int64_t rows,
                          int64_t dim, int64_t padding_idx)
{
    if (rows < 0 || dim < 0)
        return TOKVEC_E_INVAL;
    if (padding_idx != TOKVEC_NO_PADDING &&
        (padding_idx < -rows || padding_idx >= rows))
        return TOKVEC_E_INVAL;
    tokvec_rng_normal(rng, out, (size_t)rows * (size_t)dim, 0.0f, 1.0f);
    if (padding_idx != TOKVEC_NO_PADDING) {
        int64_t p = padding_idx < 0 ? padding_idx + rows : padding_idx;
        memset(out + (size_t)p * (size_t)dim, 0, (size_t)dim * sizeof *out);
    }
    return 0;
}
