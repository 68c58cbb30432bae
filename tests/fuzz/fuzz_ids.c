/* fuzz_ids.c -- differential libFuzzer target for the JSON id parsers
 * (issue 14): every input is a JSON body, parsed by jansson
 * (tv_request_parse_json_slow), by the strict fast path
 * (tv_request_parse_json_fast) and by the public tv_request_parse_json,
 * under two sets of limits (small ones where 413 boundaries are easy to
 * reach, and the server's defaults).
 *
 * Invariants (abort() -> libFuzzer reports a crash):
 *  - the fast path returns 0 or TV_FAST_FALLBACK; on fallback *out is an
 *    init'ed request (no ids);
 *  - when the fast path returns 0, jansson returns 0 too with the same
 *    batch, seq, start_position, positions, base64, single and ids;
 *  - tv_request_parse_json gives what jansson gives: the same request on
 *    success, the same status, type and message on error.
 * The fast path may fall back on anything jansson accepts; that is never a
 * failure. Leaks are caught by ASan's leak check at exit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

static void fail(const char *what, const uint8_t *data, size_t size,
                 const tv_limits *lim)
{
    fprintf(stderr,
            "fuzz_ids: %s (limits: body %zu, tokens %lld, batch %lld; "
            "%zu-byte body: %.*s)\n",
            what, lim->max_body_bytes, (long long)lim->max_tokens,
            (long long)lim->max_batch, size, size > 300 ? 300 : (int)size,
            (const char *)data);
    abort();
}

static int same(const tv_request *a, const tv_request *b)
{
    if (a->batch != b->batch || a->seq != b->seq ||
        a->start_position != b->start_position ||
        a->positions != b->positions || a->base64 != b->base64 ||
        a->single != b->single)
        return 0;
    if (a->batch < 1 || a->seq < 1 || !a->ids || !b->ids)
        return 0;
    return !memcmp(a->ids, b->ids,
                   (size_t)(a->batch * a->seq) * sizeof *a->ids);
}

static void one(const uint8_t *data, size_t size, const tv_limits *lim)
{
    const char *body = (const char *)data;
    tv_request slow, fast, pub;
    tv_error es, ep;
    memset(&es, 0, sizeof es);
    memset(&ep, 0, sizeof ep);

    int rs = tv_request_parse_json_slow(body, size, lim, &slow, &es);
    int rf = tv_request_parse_json_fast(body, size, lim, &fast);
    int rp = tv_request_parse_json(body, size, lim, &pub, &ep);

    if (rf != 0 && rf != TV_FAST_FALLBACK)
        fail("fast path returned neither 0 nor TV_FAST_FALLBACK", data,
             size, lim);
    if (rf == TV_FAST_FALLBACK) {
        tv_request init;
        tv_request_init(&init);
        if (memcmp(&fast, &init, sizeof fast))
            fail("fast path fell back but left *out changed", data, size,
                 lim);
    } else {
        if (rs != 0)
            fail("fast path parsed a body jansson rejects", data, size, lim);
        if (!same(&fast, &slow))
            fail("fast path and jansson differ", data, size, lim);
        if (fast.batch > lim->max_batch ||
            fast.batch * fast.seq > lim->max_tokens)
            fail("fast path passed a request over the limits", data, size,
                 lim);
    }
    if (rp != rs)
        fail("tv_request_parse_json and jansson differ in outcome", data,
             size, lim);
    if (rp == 0 && !same(&pub, &slow))
        fail("tv_request_parse_json and jansson differ in the request",
             data, size, lim);
    if (rp != 0 && (ep.status != es.status || strcmp(ep.type, es.type) ||
                    strcmp(ep.message, es.message)))
        fail("tv_request_parse_json and jansson differ in the error", data,
             size, lim);

    if (rs == 0)
        tv_request_free(&slow);
    if (rf == 0)
        tv_request_free(&fast);
    if (rp == 0)
        tv_request_free(&pub);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const tv_limits small = {.max_body_bytes = 4096,
                                    .max_tokens = 12, .max_batch = 3};
    static const tv_limits dflt = {.max_body_bytes = 16u << 20,
                                   .max_tokens = 65536, .max_batch = 4096};
    one(data, size, &small);
    one(data, size, &dflt);
    return 0;
}
