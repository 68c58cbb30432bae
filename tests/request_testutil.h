/* request_testutil.h -- what the tests of the JSON /embed parser share
 * (test_request.c, test_request_fast.c, test_request_prescan.c): the
 * contract's limits, and assertions that the fast path took a body (and
 * that jansson gives the identical request), that it fell back, and that
 * tv_request_parse_json refuses a body with exactly an error.
 */
#ifndef TV_REQUEST_TESTUTIL_H
#define TV_REQUEST_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

#define TU_UNUSED __attribute__((unused))

/* The contract's defaults. */
static const tv_limits LIM = {.max_body_bytes = 16u << 20,
                              .max_tokens = 65536,
                              .max_batch = 4096};

static TU_UNUSED void assert_same_request(const tv_request *a,
                                          const tv_request *b)
{
    assert_int_equal(a->batch, b->batch);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->start_position, b->start_position);
    assert_int_equal(a->positions, b->positions);
    assert_int_equal(a->base64, b->base64);
    assert_int_equal(a->torch, b->torch);
    assert_int_equal(a->npz, b->npz);
    assert_int_equal(!a->lens, !b->lens);
    if (a->lens)
        assert_memory_equal(a->lens, b->lens,
                            (size_t)a->batch * sizeof *a->lens);
    assert_int_equal(!a->body_dtype, !b->body_dtype);
    if (a->body_dtype)
        assert_string_equal(a->body_dtype, b->body_dtype);
    assert_int_equal(a->single, b->single);
    assert_non_null(a->ids);
    assert_non_null(b->ids);
    assert_memory_equal(a->ids, b->ids,
                        (size_t)(a->batch * a->seq) * sizeof *a->ids);
}

/* The fast path parses body (returns 0) and jansson and the public parser
 * give the identical request; *out is the fast path's (caller frees). */
static TU_UNUSED void parse_fast_n(const char *body, size_t len,
                                   const tv_limits *lim, tv_request *out)
{
    tv_request slow, pub;
    tv_error e;
    if (tv_request_parse_json_fast(body, len, lim, out) != 0)
        fail_msg("the fast path fell back on: %.*s", (int)len, body);
    if (tv_request_parse_json_slow(body, len, lim, &slow, &e) != 0)
        fail_msg("jansson rejects (%s) what the fast path took: %.*s",
                 e.message, (int)len, body);
    assert_same_request(out, &slow);
    assert_int_equal(tv_request_parse_json(body, len, lim, &pub, &e), 0);
    assert_same_request(&pub, &slow);
    tv_request_free(&slow);
    tv_request_free(&pub);
}

static TU_UNUSED void parse_fast(const char *body, tv_request *out)
{
    parse_fast_n(body, strlen(body), &LIM, out);
}

/* The fast path declines body and leaves *out init'ed. */
static TU_UNUSED void assert_falls_back_n(const char *body, size_t len,
                                          const tv_limits *lim)
{
    tv_request r, init;
    tv_request_init(&init);
    memset(&r, 0x5a, sizeof r);
    if (tv_request_parse_json_fast(body, len, lim, &r) != TV_FAST_FALLBACK)
        fail_msg("the fast path took: %.*s", (int)len, body);
    assert_memory_equal(&r, &init, sizeof r);
}

static TU_UNUSED void assert_falls_back(const char *body)
{
    assert_falls_back_n(body, strlen(body), &LIM);
}

/* tv_request_parse_json fails with exactly this error, and so does jansson
 * alone (the fast path cannot have answered). msg: the whole message, or
 * its start when it ends in "*". */
static TU_UNUSED void assert_error_n(const char *body, size_t len,
                                     const tv_limits *lim, int status,
                                     const char *type, const char *msg)
{
    tv_request r;
    tv_error e, es;
    assert_int_equal(tv_request_parse_json(body, len, lim, &r, &e), -1);
    assert_null(r.ids);
    assert_int_equal(e.status, status);
    assert_string_equal(e.type, type);
    size_t n = strlen(msg);
    if (n && msg[n - 1] == '*') {
        if (strncmp(e.message, msg, n - 1))
            fail_msg("message \"%s\" does not start with \"%.*s\"", e.message,
                     (int)n - 1, msg);
    } else {
        assert_string_equal(e.message, msg);
    }
    assert_int_equal(tv_request_parse_json_slow(body, len, lim, &r, &es), -1);
    assert_int_equal(es.status, e.status);
    assert_string_equal(es.message, e.message);
    assert_falls_back_n(body, len, lim);
}

#define PARSE_FAST_LIM(body, lim, r) parse_fast_n(body, strlen(body), lim, r)
#define ASSERT_ERROR_LIM(body, lim, status, type, msg) \
    assert_error_n(body, strlen(body), lim, status, type, msg)

static TU_UNUSED void assert_error(const char *body, int status,
                                   const char *type, const char *msg)
{
    assert_error_n(body, strlen(body), &LIM, status, type, msg);
}

/* A body tv_request_parse_json must refuse, and how (as assert_error). */
typedef struct {
    const char *body;
    int status;
    const char *type, *msg;
} tu_refusal;

/* assert_error on every row of a tu_refusal array. */
#define ASSERT_REFUSALS(rows)                                         \
    for (size_t i_ = 0; i_ < sizeof(rows) / sizeof(rows)[0]; i_++)    \
    assert_error((rows)[i_].body, (rows)[i_].status, (rows)[i_].type, \
                 (rows)[i_].msg)

#endif
