/* idbench.c -- POST /embed id parsing, one core: the strict fast path
 * (tv_request_parse_json_fast) next to jansson (tv_request_parse_json_slow)
 * on the same bodies of typical GPT-2 ids,
 *
 *   {"inputs": [[50256, 1, 2, ...], ...]}
 *
 * B x S ids drawn uniformly from [0, 50257) with a fixed seed (1-5 digits,
 * ", " between them, as Python's json.dumps writes them). Before timing,
 * both parsers must give the same tv_request and the fast one must not
 * fall back (exit 1 otherwise).
 *
 * Usage: idbench [BxS ...] (default 32x128 64x1024). Prints, per shape and
 * parser, one line that bench/run.sh's readers can match:
 *
 *   id JSON parse fast 32x128<TAB>612.3 MB/s<TAB>95.01 M ids/s
 *   id JSON parse jansson 32x128<TAB>...
 *
 * MB/s is of body bytes (10^6). Timing: CLOCK_MONOTONIC, best of 5 rounds
 * of ~0.1 s each.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "request.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile int64_t sink;

typedef struct {
    const char *body;
    size_t len;
    tv_limits lim;
    int fast;
} job;

static void run_once(const job *j)
{
    tv_request r;
    tv_error e;
    int rc = j->fast ? tv_request_parse_json_fast(j->body, j->len, &j->lim, &r)
                     : tv_request_parse_json_slow(j->body, j->len, &j->lim, &r,
                                                  &e);
    if (rc) {
        fprintf(stderr, "idbench: %s parser failed\n",
                j->fast ? "fast" : "jansson");
        exit(1);
    }
    sink += r.ids[r.batch * r.seq - 1];
    tv_request_free(&r);
}

/* Best seconds per parse over 5 rounds of ~0.1 s each. */
static double time_best(const job *j)
{
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        long n = 0;
        double t0 = now(), t;
        do {
            run_once(j);
            n++;
            t = now();
        } while (t - t0 < 0.1);
        if ((t - t0) / (double)n < best)
            best = (t - t0) / (double)n;
    }
    return best;
}

/* splitmix64: the same ids on every run. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static char *make_body(int64_t B, int64_t S, size_t *len)
{
    size_t cap = 32 + (size_t)(B * S) * 8 + (size_t)B * 4;
    char *body = malloc(cap), *p = body;
    uint64_t seed = 123;
    if (!body)
        exit(1);
    p += sprintf(p, "{\"inputs\": [");
    for (int64_t b = 0; b < B; b++) {
        p += sprintf(p, "%s[", b ? ", " : "");
        for (int64_t s = 0; s < S; s++)
            p += sprintf(p, "%s%" PRIu64, s ? ", " : "", next(&seed) % 50257);
        *p++ = ']';
    }
    p += sprintf(p, "]}");
    *len = (size_t)(p - body);
    return body;
}

static int same(const tv_request *a, const tv_request *b)
{
    return a->batch == b->batch && a->seq == b->seq &&
           a->start_position == b->start_position &&
           a->positions == b->positions && a->base64 == b->base64 &&
           a->single == b->single &&
           !memcmp(a->ids, b->ids, (size_t)(a->batch * a->seq) * 8);
}

int main(int argc, char **argv)
{
    const char *dflt[] = {"32x128", "64x1024"};
    int n = argc > 1 ? argc - 1 : 2;
    for (int i = 0; i < n; i++) {
        const char *arg = argc > 1 ? argv[i + 1] : dflt[i];
        char *x, *end = NULL;
        errno = 0;
        int64_t B = strtoll(arg, &x, 10);
        int64_t S = *x == 'x' ? strtoll(x + 1, &end, 10) : 0;
        if (errno || x == arg || *x != 'x' || end == x + 1 || *end || B < 1 ||
            S < 1 || B > (1 << 24) || S > (1 << 24) || B * S > (1 << 24)) {
            fprintf(stderr, "usage: idbench [BxS ...]\n");
            return 2;
        }
        size_t len;
        char *body = make_body(B, S, &len);
        /* the contract's default limits, raised if the shape needs it */
        tv_limits lim = {.max_body_bytes = 16u << 20,
                         .max_tokens = 65536,
                         .max_batch = 4096};
        if (B * S > lim.max_tokens)
            lim.max_tokens = B * S;
        if (B > lim.max_batch)
            lim.max_batch = B;
        if (len > lim.max_body_bytes)
            lim.max_body_bytes = len;

        tv_request f, s;
        tv_error e;
        if (tv_request_parse_json_fast(body, len, &lim, &f)) {
            fprintf(stderr, "idbench: the fast path fell back on %s\n", arg);
            return 1;
        }
        if (tv_request_parse_json_slow(body, len, &lim, &s, &e)) {
            fprintf(stderr, "idbench: jansson: %s\n", e.message);
            return 1;
        }
        if (!same(&f, &s) || f.batch != B || f.seq != S) {
            fprintf(stderr, "idbench: the parsers differ on %s\n", arg);
            return 1;
        }
        tv_request_free(&f);
        tv_request_free(&s);

        double t[2];
        for (int fast = 1; fast >= 0; fast--) {
            job j = {body, len, lim, fast};
            t[fast] = time_best(&j);
            printf("id JSON parse %s %" PRId64 "x%" PRId64
                   "\t%.1f MB/s\t%.2f M ids/s\n",
                   fast ? "fast" : "jansson", B, S,
                   (double)len / t[fast] / 1e6,
                   (double)(B * S) / t[fast] / 1e6);
        }
        printf("id JSON parse %" PRId64 "x%" PRId64 ": %zu bytes, fast "
               "%.1fx jansson\n",
               B, S, len, t[0] / t[1]);
        free(body);
    }
    return 0;
}
