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
 * Speed: the generator is twisted and tempered a block of words at a time
 * (AVX2 where available), and uniforms are drawn and transformed chunk by
 * chunk so each chunk is still in L1 when BLOCK runs. Drawing a chunk and
 * transforming it before drawing the next gives the same bits as torch's
 * draw-everything-then-transform order, because BLOCK draws nothing.
 * Whether the AVX2+FMA code runs is decided once per generator (CPU check
 * in tokvec_rng_new); both codes give identical bits, which the tests check
 * through tokvec__rng_force_scalar.
 *
 * Threads: a tokvec_rng belongs to one thread at a time; no globals.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif
#include <stdlib.h>
#include <string.h>

#include "tokvec_float.h"
#include "tokvec_init.h"

#define MT_N 624
#define MT_M 397

struct tokvec_rng {
    uint32_t mt[MT_N];
    int idx;         /* next word of mt to temper; MT_N = twist first */
    int have_cached; /* small path: Z present */
    double cached;   /* small path: r * sin(theta) of the last pair */
    int simd;        /* use the AVX2+FMA code (CPU has it, not forced off) */
};

static int cpu_has_avx2_fma(void);

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
    r->simd = cpu_has_avx2_fma();
    *out = r;
    return 0;
}

void tokvec_rng_free(tokvec_rng *rng)
{
    free(rng);
}

/* Internal, for tests (declared there, not in the public header): nonzero
 * makes this generator use the portable scalar code even where AVX2+FMA is
 * available; zero goes back to what the CPU supports. The bits are the same
 * either way. */
void tokvec__rng_force_scalar(tokvec_rng *rng, int on)
{
    rng->simd = on ? 0 : cpu_has_avx2_fma();
}

#define MIX(a, b, c)                                            \
    ((c) ^ (((0x80000000u & (a)) | (0x7fffffffu & (b))) >> 1) ^ \
     (0x9908b0dfu & (0u - (1u & (b)))))

/* The reference twist, split so no index needs a modulo: words 0..226 mix
 * with old words 397.., words 227..622 with the new words 0..395. */
static void twist(uint32_t *mt)
{
    int i = 0;
    for (; i < MT_N - MT_M; i++)
        mt[i] = MIX(mt[i], mt[i + 1], mt[i + MT_M]);
    for (; i < MT_N - 1; i++)
        mt[i] = MIX(mt[i], mt[i + 1], mt[i + MT_M - MT_N]);
    mt[MT_N - 1] = MIX(mt[MT_N - 1], mt[0], mt[MT_M - 1]);
}

static uint32_t temper(uint32_t y)
{
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint32_t tokvec_rng_u32(tokvec_rng *rng)
{
    if (rng->idx >= MT_N) {
        twist(rng->mt);
        rng->idx = 0;
    }
    return temper(rng->mt[rng->idx++]);
}

/* Consumes k outputs without tempering them. */
static void skip_outputs(tokvec_rng *rng, size_t k)
{
    while (k) {
        if (rng->idx >= MT_N) {
            twist(rng->mt);
            rng->idx = 0;
        }
        size_t m = (size_t)(MT_N - rng->idx);
        m = m < k ? m : k;
        rng->idx += (int)m;
        k -= m;
    }
}

/* Float uniform of spec section 3 from one tempered output: 24 bits,
 * exact in float32. */
static float u24(uint32_t r)
{
    return (float)(r & 0xFFFFFFu) * 0x1p-24f;
}

static void uniforms_scalar(const uint32_t *mt, float *w, size_t m)
{
    for (size_t i = 0; i < m; i++)
        w[i] = u24(temper(mt[i]));
}

/* --- vector path --------------------------------------------------------- */

/* A float32 from its bits and back (tokvec_float.h). */
#define bits_f tokvec_f32_from_bits
#define f_bits tokvec_f32_bits

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

/* BLOCK: 16 uniforms in, 16 normals out (lane j pairs d[j] and d[j+8]).
 * The output is the fma itself: with mean +0.0 it already turns a -0.0
 * product into +0.0 (the spec's note), and with mean -0.0 it keeps -0.0 as
 * torch's kernel does, so nothing is added after it. */
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
        d[j] = fmaf(radius * C, std, mean);
        d[j + 8] = fmaf(radius * S, std, mean);
    }
}

#ifdef HAVE_AVX2_PATH
/* The same BLOCK with AVX2+FMA intrinsics, eight lanes at once, every
 * operation the scalar code does in the same order: bit-identical. */
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static __m256 f8(uint32_t bits)
{
    return _mm256_castsi256_ps(_mm256_set1_epi32((int)bits));
}

AVX2 static __m256 log8(__m256 x)
{
    x = _mm256_max_ps(x, f8(0x00800000));
    __m256i b = _mm256_castps_si256(x);
    __m256i k = _mm256_sub_epi32(_mm256_srli_epi32(b, 23),
                                 _mm256_set1_epi32(127));
    x = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(b, _mm256_set1_epi32((int)0x807fffff)),
        _mm256_set1_epi32(0x3f000000)));
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(k), one);
    __m256 lt = _mm256_cmp_ps(x, f8(0x3f3504f3), _CMP_LT_OQ);
    /* x < SQRTHF: e - 1 and 2x - 1 (x + x is exact, as is the - 1). */
    e = _mm256_sub_ps(e, _mm256_and_ps(lt, one));
    x = _mm256_sub_ps(_mm256_add_ps(x, _mm256_and_ps(lt, x)), one);
    __m256 z = _mm256_mul_ps(x, x);
    static const uint32_t P[9] = {0x3d9021bb, 0xbdebd1b8, 0x3def251a,
                                  0xbdfe5d4f, 0x3e11e9bf, 0xbe2aae50,
                                  0x3e4cceac, 0xbe7ffffc, 0x3eaaaaaa};
    __m256 y = f8(P[0]);
    for (int i = 1; i < 9; i++)
        y = _mm256_fmadd_ps(y, x, f8(P[i]));
    y = _mm256_mul_ps(y, x);
    y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, f8(0xb95e8083)));
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    x = _mm256_add_ps(x, y);
    return _mm256_fmadd_ps(e, f8(0x3f318000), x);
}

AVX2 static void sincos8(__m256 t, __m256 *s_out, __m256 *c_out)
{
    __m256i sign = _mm256_set1_epi32((int)0x80000000);
    __m256i sgn_s = _mm256_and_si256(_mm256_castps_si256(t), sign);
    __m256 x = _mm256_andnot_ps(_mm256_castsi256_ps(sign), t);
    __m256 y = _mm256_mul_ps(x, f8(0x3fa2f983));
    __m256i j = _mm256_cvttps_epi32(y);
    j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)),
                         _mm256_set1_epi32(~1));
    __m256 yj = _mm256_cvtepi32_ps(j);
    __m256i four = _mm256_set1_epi32(4);
    __m256i swap = _mm256_slli_epi32(_mm256_and_si256(j, four), 29);
    __m256i poly = _mm256_cmpeq_epi32(
        _mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256());
    __m256i sgn_c = _mm256_slli_epi32(
        _mm256_andnot_si256(_mm256_sub_epi32(j, _mm256_set1_epi32(2)), four),
        29);
    sgn_s = _mm256_xor_si256(sgn_s, swap);
    x = _mm256_fmadd_ps(yj, f8(0xbf490000), x);
    x = _mm256_fmadd_ps(yj, f8(0xb97da000), x);
    x = _mm256_fmadd_ps(yj, f8(0xb3222169), x);
    __m256 z = _mm256_mul_ps(x, x);
    __m256 c = _mm256_fmadd_ps(f8(0x37ccf5ce), z, f8(0xbab6061a));
    c = _mm256_fmadd_ps(c, z, f8(0x3d2aaaa5));
    c = _mm256_mul_ps(c, z);
    __m256 h = _mm256_mul_ps(z, _mm256_set1_ps(0.5f));
    c = _mm256_fmsub_ps(c, z, h);
    c = _mm256_add_ps(c, _mm256_set1_ps(1.0f));
    __m256 s = _mm256_fmadd_ps(f8(0xb94ca1f9), z, f8(0x3c08839e));
    s = _mm256_fmadd_ps(s, z, f8(0xbe2aaaa3));
    s = _mm256_mul_ps(s, z);
    s = _mm256_fmadd_ps(s, x, x);
    __m256 pm = _mm256_castsi256_ps(poly);
    __m256 S = _mm256_blendv_ps(c, s, pm), C = _mm256_blendv_ps(s, c, pm);
    __m256 zero = _mm256_setzero_ps();
    S = _mm256_add_ps(S, zero);
    C = _mm256_add_ps(C, zero);
    *s_out = _mm256_xor_ps(S, _mm256_castsi256_ps(sgn_s));
    *c_out = _mm256_xor_ps(C, _mm256_castsi256_ps(sgn_c));
}

AVX2 static void block16_avx2(float *d, float mean, float std)
{
    __m256 u = _mm256_loadu_ps(d), v = _mm256_loadu_ps(d + 8);
    __m256 L = log8(_mm256_sub_ps(_mm256_set1_ps(1.0f), u));
    __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), L));
    __m256 theta = _mm256_mul_ps(f8(0x40c90fdb), v);
    __m256 S, C;
    sincos8(theta, &S, &C);
    __m256 sd = _mm256_set1_ps(std), mn = _mm256_set1_ps(mean);
    _mm256_storeu_ps(d, _mm256_fmadd_ps(_mm256_mul_ps(radius, C), sd, mn));
    _mm256_storeu_ps(d + 8, _mm256_fmadd_ps(_mm256_mul_ps(radius, S), sd, mn));
}

AVX2 static __m256i mix8(__m256i a, __m256i b, __m256i c)
{
    __m256i y = _mm256_or_si256(
        _mm256_and_si256(a, _mm256_set1_epi32((int)0x80000000)),
        _mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)));
    __m256i mag = _mm256_and_si256(
        _mm256_sub_epi32(_mm256_setzero_si256(),
                         _mm256_and_si256(b, _mm256_set1_epi32(1))),
        _mm256_set1_epi32((int)0x9908b0df));
    return _mm256_xor_si256(_mm256_xor_si256(c, _mm256_srli_epi32(y, 1)), mag);
}

#define LD(p) _mm256_loadu_si256((const __m256i *)(p))
#define ST(p, v) _mm256_storeu_si256((__m256i *)(p), (v))

/* twist() eight words at a time. Words 0..226 read only old words; words
 * 227..622 read new words at least 220 back, all stored by then; each
 * vector loads mt[i+1..i+8] before storing mt[i..i+7]. */
AVX2 static void twist_avx2(uint32_t *mt)
{
    int i = 0;
    for (; i + 8 <= MT_N - MT_M; i += 8)
        ST(mt + i, mix8(LD(mt + i), LD(mt + i + 1), LD(mt + i + MT_M)));
    for (; i < MT_N - MT_M; i++)
        mt[i] = MIX(mt[i], mt[i + 1], mt[i + MT_M]);
    for (; i + 8 <= MT_N - 1; i += 8)
        ST(mt + i, mix8(LD(mt + i), LD(mt + i + 1), LD(mt + i + MT_M - MT_N)));
    for (; i < MT_N - 1; i++)
        mt[i] = MIX(mt[i], mt[i + 1], mt[i + MT_M - MT_N]);
    mt[MT_N - 1] = MIX(mt[MT_N - 1], mt[0], mt[MT_M - 1]);
}

/* uniforms_scalar() eight words at a time. */
AVX2 static void uniforms_avx2(const uint32_t *mt, float *w, size_t m)
{
    size_t i = 0;
    for (; i + 8 <= m; i += 8) {
        __m256i y = LD(mt + i);
        y = _mm256_xor_si256(y, _mm256_srli_epi32(y, 11));
        y = _mm256_xor_si256(y, _mm256_and_si256(_mm256_slli_epi32(y, 7),
                                                 _mm256_set1_epi32(
                                                     (int)0x9d2c5680)));
        y = _mm256_xor_si256(y, _mm256_and_si256(_mm256_slli_epi32(y, 15),
                                                 _mm256_set1_epi32(
                                                     (int)0xefc60000)));
        y = _mm256_xor_si256(y, _mm256_srli_epi32(y, 18));
        y = _mm256_and_si256(y, _mm256_set1_epi32(0xFFFFFF));
        /* < 2^24: the conversion and the scaling are exact. */
        _mm256_storeu_ps(w + i, _mm256_mul_ps(_mm256_cvtepi32_ps(y),
                                              _mm256_set1_ps(0x1p-24f)));
    }
    uniforms_scalar(mt + i, w + i, m - i);
}
#undef LD
#undef ST
#endif

static int cpu_has_avx2_fma(void)
{
#ifdef HAVE_AVX2_PATH
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

/* The next n outputs of the generator as float uniforms, in order. */
static void draw_uniforms(tokvec_rng *rng, float *w, size_t n)
{
    while (n) {
        if (rng->idx >= MT_N) {
#ifdef HAVE_AVX2_PATH
            if (rng->simd)
                twist_avx2(rng->mt);
            else
#endif
                twist(rng->mt);
            rng->idx = 0;
        }
        size_t m = (size_t)(MT_N - rng->idx);
        m = m < n ? m : n;
#ifdef HAVE_AVX2_PATH
        if (rng->simd)
            uniforms_avx2(rng->mt + rng->idx, w, m);
        else
#endif
            uniforms_scalar(rng->mt + rng->idx, w, m);
        rng->idx += (int)m;
        w += m;
        n -= m;
    }
}

/* BLOCK over the 16*nb values at d. */
static void blocks(const tokvec_rng *rng, float *d, size_t nb, float mean,
                   float std)
{
#ifdef HAVE_AVX2_PATH
    if (rng->simd) {
        for (size_t b = 0; b < nb; b++)
            block16_avx2(d + 16 * b, mean, std);
        return;
    }
#else
    (void)rng;
#endif
    for (size_t b = 0; b < nb; b++)
        block16(d + 16 * b, mean, std);
}

/* Uniforms drawn per chunk before BLOCK runs over them (16 KiB: L1). */
#define CHUNK 4096

/* Spec section 4. Phase 1 (draw n uniforms) and phase 2 (BLOCK over full
 * blocks) are interleaved chunk by chunk, which gives the same bits since
 * BLOCK draws nothing; the n % 16 uniforms of the partial block are drawn
 * and dropped, then phase 3 redraws the last 16 slots. */
static void normal_vector(tokvec_rng *rng, float *w, size_t n, float mean,
                          float std)
{
    size_t full = n - n % 16;
    for (size_t i = 0; i < full; i += CHUNK) {
        size_t m = full - i < CHUNK ? full - i : CHUNK;
        draw_uniforms(rng, w + i, m);
        blocks(rng, w + i, m / 16, mean, std);
    }
    if (n % 16) {
        skip_outputs(rng, n % 16);
        draw_uniforms(rng, w + n - 16, 16);
        blocks(rng, w + n - 16, 1, mean, std);
    }
}

/* --- small path ---------------------------------------------------------- */

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
    assert(rng && (out || n == 0));
    if (n >= 16)
        normal_vector(rng, out, n, mean, std);
    else
        normal_small(rng, out, n, mean, std);
}

int tokvec_init_embedding(tokvec_rng *rng, float *out, int64_t rows,
                          int64_t dim, int64_t padding_idx)
{
    assert(rng && (out || rows == 0 || dim == 0));
    if (rows < 0 || dim < 0)
        return TOKVEC_E_INVAL;
    if (dim && (uint64_t)rows > SIZE_MAX / sizeof *out / (uint64_t)dim)
        return TOKVEC_E_TOO_LARGE;
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
