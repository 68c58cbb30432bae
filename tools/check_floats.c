/* check_floats.c -- checks tokvec_f32_format on float32 bit patterns
 * against glibc's exact printf/strtof, independently of the formatter's
 * algorithm: the text reads back as exactly the same bits, no decimal with
 * one significant digit fewer does (shortest), it is the nearest such
 * decimal when several are shortest, and it switches to scientific
 * notation exactly where numpy does; and byte for byte against the
 * formatter it replaced (tests/float_ref.h, itself checked on all 2^32
 * patterns by this tool), per value and through tokvec_f32_format_json
 * (its AVX-512 path where the CPU has one) and
 * tokvec_f32_format_json_scalar on blocks of 4096 values.
 *
 *   check_floats --all [B E]   every pattern in [B, E) (default: all
 *                              2^32; B, E decimal or 0x hex), all checks
 *                              (~1 hour of two cores for all 2^32)
 *   check_floats --diff [B E]  the same patterns against the reference
 *                              bytes only (~10 minutes of two cores)
 *     ... --stride S           (after --all or --diff [B E]) one pattern of
 *                              every S: the j-th is B + j S + j mod S, so
 *                              the low bits take every value equally often
 *   check_floats --slice S     a stratified slice, all checks: --stride S
 *                              over all 2^32, then every pattern, both
 *                              signs, of the binades at the edges of
 *                              core/float.c's code paths (EDGES below;
 *                              S = 64: ~3 minutes of two cores)
 *   check_floats --random N    N random patterns (xorshift, fixed seed;
 *                              every other block of 4096 drawn from the
 *                              fast path's range, 1e-4 <= |v| < 2^21, so
 *                              the vector path sees mixed groups), all
 *                              checks
 *   check_floats --narrow      every pattern through the bulk float16 and
 *                              bfloat16 narrowing (tokvec_narrow, vector
 *                              path), against the scalar functions
 *   check_floats --margin      for every binade, how near to an integer
 *                              the formatter's non-integer quantities come
 *                              (v / 10^k and its bounds in quarter units);
 *                              the fixed-point comparisons of core/float.c
 *                              need more than 2^-33 (~1 minute)
 * Prints progress (on a terminal) and the number of failures; exit 1 on any
 * failure. Threads share nothing but two atomic counters.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/testutil.h"
#include "../tests/float_ref.h"
#include "tokvec_float.h"

static atomic_ullong failures, checked;

/* The text of bits as the formatter this one replaced spelled it, in
 * tokvec_f32_format_json's form when json (non-finite: "null"). */
static size_t ref_text(uint32_t bits, char *out, int json)
{
    float v;
    memcpy(&v, &bits, 4);
    if (json && !isfinite(v)) {
        memcpy(out, "null", 4);
        return 4;
    }
    return ref_f32_format(v, out);
}

/* NULL, or what is wrong with tokvec_f32_format's text of bits (left in
 * got, NUL-terminated): not byte for byte the reference formatter's; and
 * when full, for finite values, tu_verify_text's independent check. */
static const char *check(uint32_t bits, char *got, int full)
{
    float v;
    char want[64];
    memcpy(&v, &bits, 4);
    size_t n = tokvec_f32_format(v, got);
    if (n > TOKVEC_F32_MAXLEN)
        return "too long";
    got[n] = '\0';
    size_t m = ref_text(bits, want, 0);
    if (n != m || memcmp(got, want, n))
        return "differs from the reference formatter";
    if (!full || !isfinite(v))
        return NULL;
    return tu_verify_text(v, got);
}

/* tokvec_f32_format_json (AVX-512 where the CPU has it) and
 * tokvec_f32_format_json_scalar on the block bits[0..n) against the
 * reference texts joined by ','; 0 when equal, else 1 (reported). */
static int check_json(const uint32_t *bits, size_t n)
{
    enum { MAXN = 4096 };
    static _Thread_local char got[MAXN * (TOKVEC_F32_MAXLEN + 1)];
    static _Thread_local char want[MAXN * (TOKVEC_F32_MAXLEN + 1)];
    static _Thread_local float vals[MAXN];
    memcpy(vals, bits, n * 4);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        m += ref_text(bits[i], want + m, 1);
        want[m++] = ',';
    }
    m -= n != 0;
    int bad = 0;
    for (int scalar = 0; scalar < 2; scalar++) {
        size_t g = scalar ? tokvec_f32_format_json_scalar(got, vals, n)
                          : tokvec_f32_format_json(got, vals, n);
        if (g == m && !memcmp(got, want, m))
            continue;
        size_t i = 0;
        while (i < g && i < m && got[i] == want[i])
            i++;
        if (atomic_fetch_add(&failures, 1) < 20)
            fprintf(stderr,
                    "FAIL json%s block from %08x: byte %zu of %zu (%zu "
                    "wanted)\n",
                    scalar ? " (scalar)" : "", bits[0], i, g, m);
        bad = 1;
    }
    return bad;
}

typedef struct {
    uint64_t begin, end, step; /* indices j (patterns: see pattern) */
    int random, report, narrow, full;
    uint64_t origin;             /* the range's first index (progress) */
    unsigned long long checked0; /* checked before this range (progress) */
    uint64_t base, stride;
} range_t;

/* The j-th pattern of a range: one of every stride, its place in the
 * group of stride cycling (stride 1: base + j). */
static uint32_t pattern(const range_t *r, uint64_t j)
{
    return (uint32_t)(r->base + j * r->stride + j % r->stride);
}

/* Thread t of nt: blocks of 2^16 consecutive patterns (every 2^16-th
 * block), each narrowed in bulk at an odd byte offset and compared with
 * the scalar conversion. */
static void *run_narrow(void *arg)
{
    range_t *r = arg;
    enum { BLK = 1 << 16 };
    static _Thread_local float src[BLK];
    static _Thread_local unsigned char out[2 * BLK + 1];
    for (uint64_t blk = r->begin; blk < r->end; blk += r->step) {
        for (uint32_t j = 0; j < BLK; j++) {
            uint32_t b = (uint32_t)(blk * BLK + j);
            memcpy(&src[j], &b, 4);
        }
        for (int d = 0; d < 2; d++) {
            tokvec_dtype dt = d ? TOKVEC_BF16 : TOKVEC_F16;
            tokvec_narrow(dt, src, out + 1, BLK);
            for (uint32_t j = 0; j < BLK; j++) {
                uint16_t want = d ? tokvec_f32_to_bf16(src[j])
                                  : tokvec_f32_to_f16(src[j]);
                uint16_t got = (uint16_t)(out[1 + 2 * j] |
                                          (out[2 + 2 * j] << 8));
                if (got != want && atomic_fetch_add(&failures, 1) < 20)
                    fprintf(stderr, "FAIL %s of %08x: %04x, scalar %04x\n",
                            tokvec_dtype_name(dt), (uint32_t)(blk * BLK + j),
                            got, want);
            }
        }
        atomic_fetch_add(&checked, BLK);
    }
    return NULL;
}

/* Thread t of nt: blocks of BLK consecutive indices of [begin, end)
 * (random: BLK random patterns per block, end - begin in all), every
 * nt-th block, each value checked alone (check) and the block in one
 * tokvec_f32_format_json call. */
enum { BLK = 4096 };

static void *run(void *arg)
{
    range_t *r = arg;
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (r->begin * 0xD1B54A32D192ED03ull);
    char got[64];
    static _Thread_local uint32_t bits[BLK];
    for (uint64_t b = r->begin; b < r->end; b += r->step * BLK) {
        size_t n = r->end - b < BLK ? (size_t)(r->end - b) : BLK;
        for (size_t i = 0; i < n; i++) {
            if (r->random) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                bits[i] = (uint32_t)(x >> 16);
                /* every other block: the fast path's range (both signs,
                 * mixed in every group of eight), one in 64 left as is */
                if ((b / BLK) % 2 && (x & 63) != 0)
                    bits[i] = (bits[i] & 0x80000000u) |
                              (0x38d1b718u + (uint32_t)(x >> 30) %
                                                 (0x4b189680u - 0x38d1b718u));
            } else {
                bits[i] = pattern(r, b + i);
            }
        }
        for (size_t i = 0; i < n; i++) {
            const char *why = check(bits[i], got, r->full);
            if (why && atomic_fetch_add(&failures, 1) < 20)
                fprintf(stderr, "FAIL %08x \"%s\": %s\n", bits[i], got, why);
        }
        check_json(bits, n);
        unsigned long long c = atomic_fetch_add(&checked, n) + n - r->checked0;
        if (r->report && (c >> 20) != ((c - n) >> 20) && (c >> 20) % 64 == 0)
            fprintf(stderr, "\r%llu M of %llu M checked, %llu failures",
                    c >> 20, (unsigned long long)((r->end - r->origin) >> 20),
                    (unsigned long long)atomic_load(&failures));
    }
    return NULL;
}

/* --margin: for every binade (biased exponent ex), the smallest distance
 * from X = cb 2^q / 10^k to an integer over the X that are not integers,
 * cb = 4c - 2, 4c, 4c + 2 (and 4c - 1 for c = 2^23, with k of 3/4 2^q),
 * every c of the binade: the quantities core/float.c compares in fixed
 * point with 34 fraction bits. X's fraction is r / M: M = 5^k for q >= 0
 * (X = cb 2^(q-k) / 5^k), M = 2^(k-q) for q < 0 (X = cb 5^-k / 2^(k-q));
 * r steps by 4 A mod M from one c to the next, exact in 128 bits. */
typedef unsigned __int128 u128;

static int floor_log10_pow2(int q, int three_quarters)
{
    uint32_t a = (uint32_t)(q * 315653 - (three_quarters ? 131237 : 0) +
                            (64 << 20));
    return (int)(a >> 20) - 64;
}

/* The smallest nonzero min(r, M - r) / M over cb = 4c + off, c from cmin
 * to cmax; 1 when every X is an integer. */
static double margin_one(int q, int k, uint64_t cmin, uint64_t cmax, int off)
{
    u128 a = 1, m = 1;
    if (q >= 0) {
        for (int i = 0; i < k; i++)
            m *= 5;
        for (int i = 0; i < q - k; i++)
            a = a * 2 % m;
    } else {
        for (int i = 0; i < -k; i++)
            a *= 5;             /* 5^45 < 2^105 */
        m = (u128)1 << (k - q); /* k - q <= 104 */
        a %= m;
    }
    if (m == 1)
        return 1;
    u128 r = (u128)(4 * cmin + (uint64_t)(int64_t)off) % m * a % m;
    u128 step = 4 * a % m, best = m;
    for (uint64_t c = cmin; c <= cmax; c++) {
        u128 d = r < m - r ? r : m - r;
        if (d && d < best)
            best = d;
        r += step;
        if (r >= m)
            r -= m;
    }
    return best == m ? 1 : (double)best / (double)m;
}

static double margin_binade(int ex)
{
    int q = (ex ? ex : 1) - 150;
    uint64_t cmin = ex ? 0x800000u : 1, cmax = ex ? 0xffffffu : 0x7fffffu;
    int k = floor_log10_pow2(q, 0);
    double best = 1;
    for (int off = -2; off <= 2; off += 2) {
        /* c = 2^23 (ex > 1) has its lower bound at 4c - 1, below */
        uint64_t lo = off == -2 && ex > 1 ? cmin + 1 : cmin;
        double d = margin_one(q, k, lo, cmax, off);
        best = d < best ? d : best;
    }
    if (ex > 1) { /* c = 2^23: its own k, bounds 4c - 1, 4c + 2 */
        int kl = floor_log10_pow2(q, 1);
        for (int off = -1; off <= 2; off++) {
            double d = margin_one(q, kl, 0x800000u, 0x800000u, off);
            best = d < best ? d : best;
        }
    }
    return best;
}

static double margins[255];

static void *run_margin(void *arg)
{
    range_t *r = arg;
    for (uint64_t ex = r->begin; ex < r->end; ex += r->step)
        margins[ex] = margin_binade((int)ex);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: check_floats --all [BEGIN END] [--stride S] | --diff "
            "[BEGIN END] [--stride S] | --slice S | --random N | --narrow | "
            "--margin\n");
    return 2;
}

static long nthreads(void)
{
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    return nt < 1 ? 1 : nt > 64 ? 64 : nt;
}

/* Runs fn on nthreads() copies of proto, interleaved so every thread sees
 * every magnitude: copy t starts at proto.begin + t (narrow, margin: one
 * index a step) or + t BLK (patterns); 0, or 2 when a thread cannot start. */
static int run_threads(range_t proto, void *(*fn)(void *), int by_blocks)
{
    long nt = nthreads();
    pthread_t th[64];
    range_t r[64];
    for (long t = 0; t < nt; t++) {
        r[t] = proto;
        r[t].begin += (uint64_t)t * (by_blocks ? BLK : 1);
        r[t].step = (uint64_t)nt;
        r[t].origin = proto.begin;
        r[t].report = proto.report && t == 0;
        if (pthread_create(&th[t], NULL, fn, &r[t])) {
            fprintf(stderr, "check_floats: cannot start a thread\n");
            for (long u = 0; u < t; u++)
                pthread_join(th[u], NULL);
            return 2;
        }
    }
    for (long t = 0; t < nt; t++)
        pthread_join(th[t], NULL);
    return 0;
}

/* Checks patterns base + j stride + j mod stride, 0 <= j < n; prints what
 * ran (what: its name) and the failures. 0 when none, 1, 2. */
static int check_patterns(const char *what, uint64_t base, uint64_t stride,
                          uint64_t n, int full)
{
    unsigned long long c0 = atomic_load(&checked);
    unsigned long long f0 = atomic_load(&failures);
    range_t proto = {.end = n,
                     .full = full,
                     .report = isatty(2),
                     .base = base,
                     .stride = stride,
                     .checked0 = c0};
    if (run_threads(proto, run, 1))
        return 2;
    unsigned long long f = atomic_load(&failures) - f0;
    printf("%s%s: %llu patterns checked (%s), %llu failures\n",
           isatty(2) ? "\n" : "", what, atomic_load(&checked) - c0,
           full ? "reference bytes, json blocks, independent check"
                : "reference bytes, json blocks",
           f);
    fflush(stdout);
    return f ? 1 : 0;
}

/* The binades (biased exponents) at the edges of core/float.c's code
 * paths, checked whole by --slice: the subnormals and the smallest normals
 * (the smallest power of two without a nearer lower bound); numpy's switch
 * to positional text at 1e-4 (binade 2^-14) where the fast path begins;
 * the fast path's last binades (up to 2^21), the general path's positional
 * values above it and its ddd000.0 from 1e7 (binade 2^23); numpy's switch
 * back to scientific at 1e16 (binade 2^53); the largest finite values (the
 * last cached powers of ten), infinity and nan. */
static const int EDGES[] = {0,   1,   2,   112, 113, 114, 146, 147, 148, 149,
                            150, 151, 179, 180, 181, 252, 253, 254, 255};

static int slice(uint64_t stride)
{
    char what[96];
    int rc = 0, r;
    snprintf(what, sizeof what,
             "one of every %llu patterns of all 2^32 (j S + j mod S)",
             (unsigned long long)stride);
    rc = check_patterns(what, 0, stride, (UINT64_C(1) << 32) / stride, 1);
    for (size_t i = 0; rc < 2 && i < sizeof EDGES / sizeof *EDGES; i++) {
        for (uint64_t sign = 0; sign < 2 && rc < 2; sign++) {
            uint64_t b = sign << 31 | (uint64_t)EDGES[i] << 23;
            snprintf(what, sizeof what,
                     "binade %d (exponent field), %s, [%08llx, %08llx)",
                     EDGES[i], sign ? "negative" : "positive",
                     (unsigned long long)b,
                     (unsigned long long)(b + (1u << 23)));
            r = check_patterns(what, b, 1, 1u << 23, 1);
            rc = r > rc ? r : rc;
        }
    }
    return rc;
}

static int margin_report(void)
{
    range_t binades = {.end = 255};
    if (run_threads(binades, run_margin, 0))
        return 2;
    /* the fixed-point comparisons need more than 2 units of 2^-34
     * (the fast path's x -+ dc is within 2 of the bounds) */
    int worst = 0;
    for (int ex = 0; ex < 255; ex++)
        if (margins[ex] < margins[worst])
            worst = ex;
    double need = 0x1p-33;
    printf("smallest distance of a non-integer X to an integer: 2^%.2f "
           "(binade 2^%d), need more than 2^-33: %s\n",
           log2(margins[worst]), (worst ? worst : 1) - 127,
           margins[worst] > need ? "ok" : "FAIL");
    return margins[worst] > need ? 0 : 1;
}

static int narrow_report(void)
{
    /* blocks of 2^16 patterns */
    range_t blocks = {.end = UINT64_C(1) << 16};
    if (run_threads(blocks, run_narrow, 0))
        return 2;
    unsigned long long f = atomic_load(&failures);
    printf("%llu patterns checked, %llu failures\n",
           (unsigned long long)atomic_load(&checked), f);
    return f ? 1 : 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *e;
    *out = strtoull(s, &e, 0);
    return *s && !*e;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    uint64_t begin = 0, end = UINT64_C(1) << 32, stride = 1, n;
    if (argc == 2 && !strcmp(mode, "--margin"))
        return margin_report();
    if (argc == 2 && !strcmp(mode, "--narrow"))
        return narrow_report();
    if (argc == 3 && !strcmp(mode, "--slice"))
        return parse_u64(argv[2], &stride) && stride >= 1 &&
                       stride <= UINT64_C(1) << 32
                   ? slice(stride)
                   : usage();
    if (argc == 3 && !strcmp(mode, "--random")) {
        if (!parse_u64(argv[2], &n))
            return usage();
        unsigned long long f0 = atomic_load(&failures);
        range_t proto = {.end = n,
                         .random = 1,
                         .full = 1,
                         .report = isatty(2),
                         .stride = 1};
        if (run_threads(proto, run, 1))
            return 2;
        unsigned long long f = atomic_load(&failures) - f0;
        printf("%s%llu patterns checked (reference bytes, json blocks, "
               "independent check), %llu failures\n",
               isatty(2) ? "\n" : "",
               (unsigned long long)atomic_load(&checked), f);
        return f ? 1 : 0;
    }
    if (strcmp(mode, "--all") && strcmp(mode, "--diff"))
        return usage();
    int a = 2;
    if (argc - a >= 2 && strcmp(argv[a], "--stride")) {
        if (!parse_u64(argv[a], &begin) || !parse_u64(argv[a + 1], &end))
            return usage();
        a += 2;
    }
    if (argc - a == 2 && !strcmp(argv[a], "--stride")) {
        if (!parse_u64(argv[a + 1], &stride))
            return usage();
        a += 2;
    }
    if (a != argc || begin > end || end > UINT64_C(1) << 32 || stride < 1 ||
        stride > UINT64_C(1) << 32)
        return usage();
    char what[96];
    int w = snprintf(what, sizeof what, "[%08llx, %08llx)",
                     (unsigned long long)begin, (unsigned long long)end);
    if (stride > 1)
        snprintf(what + w, sizeof what - (size_t)w, ", one of every %llu",
                 (unsigned long long)stride);
    return check_patterns(what, begin, stride, (end - begin) / stride,
                          !strcmp(mode, "--all"));
}
