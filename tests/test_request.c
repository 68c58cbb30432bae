/* test_request.c -- server/request.c: the JSON /embed parser's two paths
 * (the strict fast path of issue 14 and jansson), which must agree on
 * everything the fast path takes and leave everything else to jansson,
 * and today's messages of tv_request_parse_json, tv_request_parse_binary,
 * tv_request_set_option and tv_body_kind_of.
 *
 * Every success case of the fast path asserts that it did succeed (a fast
 * path that always fell back would pass every agreement test otherwise)
 * and that jansson gives the identical tv_request.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "request.h"

/* The contract's defaults. */
static const tv_limits LIM = {.max_body_bytes = 16u << 20,
                              .max_tokens = 65536, .max_batch = 4096};

static void assert_same_request(const tv_request *a, const tv_request *b)
{
    assert_int_equal(a->batch, b->batch);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->start_position, b->start_position);
    assert_int_equal(a->positions, b->positions);
    assert_int_equal(a->base64, b->base64);
    assert_int_equal(a->single, b->single);
    assert_non_null(a->ids);
    assert_non_null(b->ids);
    assert_memory_equal(a->ids, b->ids,
                        (size_t)(a->batch * a->seq) * sizeof *a->ids);
}

/* The fast path parses body (returns 0) and jansson and the public parser
 * give the identical request; *out is the fast path's (caller frees). */
static void parse_fast_n(const char *body, size_t len, const tv_limits *lim,
                         tv_request *out)
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

static void parse_fast(const char *body, tv_request *out)
{
    parse_fast_n(body, strlen(body), &LIM, out);
}

/* The fast path declines body and leaves *out init'ed. */
static void assert_falls_back_n(const char *body, size_t len,
                                const tv_limits *lim)
{
    tv_request r, init;
    tv_request_init(&init);
    memset(&r, 0x5a, sizeof r);
    if (tv_request_parse_json_fast(body, len, lim, &r) != TV_FAST_FALLBACK)
        fail_msg("the fast path took: %.*s", (int)len, body);
    assert_memory_equal(&r, &init, sizeof r);
}

static void assert_falls_back(const char *body)
{
    assert_falls_back_n(body, strlen(body), &LIM);
}

/* tv_request_parse_json fails with exactly this error, and so does jansson
 * alone (the fast path cannot have answered). msg: the whole message, or
 * its start when it ends in "*". */
static void assert_error_n(const char *body, size_t len, const tv_limits *lim,
                           int status, const char *type, const char *msg)
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
            fail_msg("message \"%s\" does not start with \"%.*s\"",
                     e.message, (int)n - 1, msg);
    } else {
        assert_string_equal(e.message, msg);
    }
    assert_int_equal(tv_request_parse_json_slow(body, len, lim, &r, &es),
                     -1);
    assert_int_equal(es.status, e.status);
    assert_string_equal(es.message, e.message);
    assert_falls_back_n(body, len, lim);
}

#define PARSE_FAST_LIM(body, lim, r) parse_fast_n(body, strlen(body), lim, r)
#define ASSERT_ERROR_LIM(body, lim, status, type, msg)                      \
    assert_error_n(body, strlen(body), lim, status, type, msg)

static void assert_error(const char *body, int status, const char *type,
                         const char *msg)
{
    assert_error_n(body, strlen(body), &LIM, status, type, msg);
}

/* --- the fast path: what it takes ------------------------------------- */

static void fast_path_parses_batch_like_jansson(void **state)
{
    (void)state;
    tv_request r;
    parse_fast("{\"inputs\": [[50256, 1, 2], [464, 2068, 7586]]}", &r);
    assert_int_equal(r.batch, 2);
    assert_int_equal(r.seq, 3);
    assert_int_equal(r.single, 0);
    assert_int_equal(r.positions, 1);
    assert_int_equal(r.start_position, 0);
    assert_int_equal(r.base64, 0);
    const int64_t want[] = {50256, 1, 2, 464, 2068, 7586};
    assert_memory_equal(r.ids, want, sizeof want);
    tv_request_free(&r);

    /* compact, as JSON.stringify writes it */
    parse_fast("{\"inputs\":[[40,1101,257]]}", &r);
    assert_int_equal(r.batch, 1);
    assert_int_equal(r.seq, 3);
    assert_int_equal(r.ids[2], 257);
    tv_request_free(&r);
}

static void fast_path_parses_one_flat_sequence(void **state)
{
    (void)state;
    tv_request r;
    parse_fast("{\"inputs\":[40,1101,257,0]}", &r);
    assert_int_equal(r.single, 1);
    assert_int_equal(r.batch, 1);
    assert_int_equal(r.seq, 4);
    const int64_t want[] = {40, 1101, 257, 0};
    assert_memory_equal(r.ids, want, sizeof want);
    tv_request_free(&r);

    parse_fast("{\"inputs\":[7]}", &r);
    assert_int_equal(r.single, 1);
    assert_int_equal(r.seq, 1);
    tv_request_free(&r);
}

static void fast_path_reads_options_in_any_order(void **state)
{
    (void)state;
    tv_request r;
    parse_fast("{\"encoding_format\":\"base64\",\"positions\":false,"
               "\"start_position\":7,\"pad_id\":null,"
               "\"inputs\":[[1,2]]}", &r);
    assert_int_equal(r.base64, 1);
    assert_int_equal(r.positions, 0);
    assert_int_equal(r.start_position, 7);
    assert_int_equal(r.seq, 2);
    tv_request_free(&r);

    parse_fast("{\"inputs\":[[1,2]],\"start_position\":0,"
               "\"positions\":true,\"encoding_format\":\"float\"}", &r);
    assert_int_equal(r.base64, 0);
    assert_int_equal(r.positions, 1);
    tv_request_free(&r);

    /* every kind of JSON whitespace everywhere it may be */
    parse_fast(" \r\n\t{ \"start_position\" : 3 ,\n \"inputs\" :\t[ [ 1 ,2 ]"
               " ,\r\n[3 , 4] ] , \"positions\"\t:\tfalse\n}\n\r\t ", &r);
    assert_int_equal(r.batch, 2);
    assert_int_equal(r.seq, 2);
    assert_int_equal(r.start_position, 3);
    assert_int_equal(r.positions, 0);
    assert_int_equal(r.ids[3], 4);
    tv_request_free(&r);
}

static void fast_path_pads_ragged_rows_with_pad_id(void **state)
{
    (void)state;
    tv_request r;
    parse_fast("{\"inputs\":[[1,2,3],[4],[5,6]],\"pad_id\":50256}", &r);
    assert_int_equal(r.batch, 3);
    assert_int_equal(r.seq, 3);
    const int64_t want[] = {1, 2, 3, 4, 50256, 50256, 5, 6, 50256};
    assert_memory_equal(r.ids, want, sizeof want);
    tv_request_free(&r);

    /* pad_id first, the longest row last, a negative pad */
    parse_fast("{\"pad_id\":-1,\"inputs\":[[1],[2,3],[4,5,6,7]]}", &r);
    assert_int_equal(r.seq, 4);
    const int64_t want2[] = {1, -1, -1, -1, 2, 3, -1, -1, 4, 5, 6, 7};
    assert_memory_equal(r.ids, want2, sizeof want2);
    tv_request_free(&r);

    /* pad_id given but the rows are equal: no padding, pad unused */
    parse_fast("{\"pad_id\":0,\"inputs\":[[8,9],[10,11]]}", &r);
    const int64_t want3[] = {8, 9, 10, 11};
    assert_memory_equal(r.ids, want3, sizeof want3);
    tv_request_free(&r);
}

static void ragged_without_pad_id_is_422_from_either_path(void **state)
{
    (void)state;
    const char *msg = "sequences have different lengths; set \"pad_id\" "
                      "to right-pad them";
    assert_error("{\"inputs\":[[1,2],[3]]}", 422, "ragged_batch", msg);
    assert_error("{\"inputs\":[[1,2],[3]],\"pad_id\":null}", 422,
                 "ragged_batch", msg);
}

static void fast_path_reads_int64_extremes_and_minus_zero(void **state)
{
    (void)state;
    tv_request r;
    parse_fast("{\"inputs\":[[0,-0,9223372036854775807,"
               "-9223372036854775808,1000000000000000000,"
               "-999999999999999999,-1]],\"pad_id\":-0,"
               "\"start_position\":-0}", &r);
    const int64_t want[] = {0, 0, INT64_MAX, INT64_MIN,
                            INT64_C(1000000000000000000),
                            -INT64_C(999999999999999999), -1};
    assert_int_equal(r.seq, 7);
    assert_memory_equal(r.ids, want, sizeof want);
    assert_int_equal(r.start_position, 0);
    tv_request_free(&r);

    parse_fast("{\"inputs\":[1],\"start_position\":9223372036854775807}",
               &r);
    assert_int_equal(r.start_position, INT64_MAX);
    tv_request_free(&r);
}

static void fast_path_takes_large_and_dense_bodies(void **state)
{
    (void)state;
    /* 64x1024 GPT-2-like ids; then 1-digit ids, 2 bytes each, many more
     * than the path's first guess at the count; then 300 rows. */
    size_t cap = 64 * 1024 * 8 + 1024;
    char *body = malloc(cap), *p;
    uint64_t x = 88172645463325252u;
    for (int kind = 0; kind < 3; kind++) {
        int64_t B = kind == 2 ? 300 : 64, S = kind == 2 ? 3 : 1024;
        p = body + sprintf(body, "{\"inputs\":[");
        for (int64_t b = 0; b < B; b++) {
            *p++ = b ? ',' : '[';
            if (b)
                *p++ = '[';
            for (int64_t s = 0; s < S; s++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                p += sprintf(p, "%s%" PRIu64, s ? (kind ? "," : ", ") : "",
                             kind == 1 ? x % 10 : x % 50257);
            }
            *p++ = ']';
        }
        p += sprintf(p, "]}");
        tv_request r;
        parse_fast_n(body, (size_t)(p - body), &LIM, &r);
        assert_int_equal(r.batch, B);
        assert_int_equal(r.seq, S);
        tv_request_free(&r);
    }
    free(body);
}

/* --- the fast path: what it leaves to jansson ------------------------- */

static void fast_path_falls_back_on_real_numbers(void **state)
{
    (void)state;
    const char *msg = "token id at batch index 0, position 1 is not an "
                      "integer";
    assert_error("{\"inputs\":[[1,1.0]]}", 400, "invalid_request", msg);
    assert_error("{\"inputs\":[[1,1e2]]}", 400, "invalid_request", msg);
    assert_error("{\"inputs\":[[1,1E2]]}", 400, "invalid_request", msg);
    assert_error("{\"inputs\":[[1,-0.0]]}", 400, "invalid_request", msg);
    assert_error("{\"inputs\":[[1,2.5e-3]]}", 400, "invalid_request", msg);
    assert_error("{\"inputs\":[1,1.5]}", 400, "invalid_request", msg);
    assert_error("{\"inputs\":[[1]],\"start_position\":1.0}", 400,
                 "invalid_request",
                 "\"start_position\" must be a non-negative integer");
    assert_error("{\"inputs\":[[1],[2,3]],\"pad_id\":0.0}", 400,
                 "invalid_request", "\"pad_id\" must be an integer or null");
}

static void fast_path_falls_back_on_leading_zeros_and_signs(void **state)
{
    (void)state;
    const char *bad[] = {"01", "00", "-01", "+1", "-", "--1", "0x1", "1-",
                         "1 2", ".5", "1.", "-a"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"inputs\":[[5,%s]]}", bad[i]);
        assert_error(body, 400, "invalid_json", "body is not valid JSON: *");
        snprintf(body, sizeof body, "{\"start_position\":%s,\"inputs\":[1]}",
                 bad[i]);
        assert_error(body, 400, "invalid_json", "body is not valid JSON: *");
    }
    assert_error("{\"inputs\":[1],\"start_position\":-1}", 400,
                 "invalid_request",
                 "\"start_position\" must be a non-negative integer");
}

static void fast_path_falls_back_on_int64_overflow(void **state)
{
    (void)state;
    assert_error("{\"inputs\":[9223372036854775808]}", 400, "invalid_json",
                 "body is not valid JSON: too big integer near "
                 "'9223372036854775808' (line 1, column 30)");
    assert_error("{\"inputs\":[[-9223372036854775809]]}", 400,
                 "invalid_json",
                 "body is not valid JSON: too big negative integer*");
    assert_error("{\"inputs\":[18446744073709551616]}", 400, "invalid_json",
                 "body is not valid JSON: too big integer*");
    assert_error("{\"inputs\":[99999999999999999999]}", 400, "invalid_json",
                 "body is not valid JSON: too big integer*");
    assert_error("{\"inputs\":[1],\"pad_id\":9223372036854775808}", 400,
                 "invalid_json", "body is not valid JSON: too big integer*");
    assert_error("{\"inputs\":[1],\"start_position\":"
                 "100000000000000000000000000000}", 400, "invalid_json",
                 "body is not valid JSON: too big integer*");
}

static void fast_path_falls_back_on_duplicate_keys(void **state)
{
    (void)state;
    const char *bodies[] = {
        "{\"inputs\":[[1]],\"inputs\":[[2]]}",
        "{\"positions\":true,\"inputs\":[1],\"positions\":false}",
        "{\"pad_id\":null,\"pad_id\":0,\"inputs\":[1]}",
        "{\"start_position\":1,\"inputs\":[1],\"start_position\":1}",
        ("{\"encoding_format\":\"float\",\"encoding_format\":\"float\","
         "\"inputs\":[1]}"),
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        assert_error(bodies[i], 400, "invalid_json",
                     "body is not valid JSON: duplicate object key*");
}

static void fast_path_falls_back_on_escaped_keys(void **state)
{
    (void)state;
    /* Valid, and jansson reads them as the plain keys: the fast path
     * declines, tv_request_parse_json still succeeds through jansson. */
    const char *ok[] = {
        "{\"\\u0069nputs\":[[1,2]],\"positions\":false}",
        "{\"inputs\":[[1,2]],\"encoding_format\":\"b\\u0061se64\"}",
        "{\"inputs\":[[1,2]],\"pad\\u005fid\":0}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        tv_request r, s;
        tv_error e;
        assert_falls_back(ok[i]);
        assert_int_equal(tv_request_parse_json(ok[i], strlen(ok[i]), &LIM,
                                               &r, &e), 0);
        assert_int_equal(tv_request_parse_json_slow(ok[i], strlen(ok[i]),
                                                    &LIM, &s, &e), 0);
        assert_same_request(&r, &s);
        assert_int_equal(r.seq, 2);
        tv_request_free(&r);
        tv_request_free(&s);
    }
    /* the escaped duplicate is still a duplicate */
    assert_error("{\"inputs\":[1],\"\\u0069nputs\":[2]}", 400,
                 "invalid_json",
                 "body is not valid JSON: duplicate object key*");
}

static void fast_path_falls_back_on_unknown_and_non_ascii_keys(void **state)
{
    (void)state;
    assert_error("{\"inputs\":[[1]],\"model\":\"gpt2\"}", 400,
                 "invalid_request",
                 "unknown key \"model\" (known: inputs, start_position, "
                 "positions, pad_id, encoding_format)");
    assert_error("{\"Inputs\":[[1]]}", 400, "invalid_request",
                 "unknown key \"Inputs\"*");
    assert_error("{\"inputs \":[[1]]}", 400, "invalid_request",
                 "unknown key \"inputs \"*");
    assert_error("{\"input\":[[1]]}", 400, "invalid_request",
                 "unknown key \"input\"*");
    /* UTF-8 in a key: named with '?' for each byte outside ASCII */
    assert_error("{\"inputs\":[1],\"caf\xc3\xa9\":1}", 400,
                 "invalid_request", "unknown key \"caf??\"*");
    /* invalid UTF-8 is jansson's error */
    assert_error("{\"inputs\":[1],\"\xff\":1}", 400, "invalid_json",
                 "body is not valid JSON: *");
}

static void fast_path_falls_back_on_nul_and_trailing_bytes(void **state)
{
    (void)state;
    static const char nul1[] = "{\"inputs\":[1\0]}";
    static const char nul2[] = "{\"inputs\":[1]}\0";
    static const char nul3[] = "{\"inputs\":[1]}\n\0\n";
    assert_error_n(nul1, sizeof nul1 - 1, &LIM, 400, "invalid_json",
                   "body is not valid JSON: NUL byte at offset 12");
    assert_error_n(nul2, sizeof nul2 - 1, &LIM, 400, "invalid_json",
                   "body is not valid JSON: NUL byte at offset 14");
    assert_error_n(nul3, sizeof nul3 - 1, &LIM, 400, "invalid_json",
                   "body is not valid JSON: NUL byte at offset 15");
    assert_error("{\"inputs\":[1]} x", 400, "invalid_json",
                 "body is not valid JSON: end of file expected*");
    assert_error("{\"inputs\":[1]}}", 400, "invalid_json",
                 "body is not valid JSON: end of file expected*");
    assert_error("{\"inputs\":[1]}{}", 400, "invalid_json",
                 "body is not valid JSON: end of file expected*");
    assert_error("{\"inputs\":[1],}", 400, "invalid_json",
                 "body is not valid JSON: *");
    assert_error("{\"inputs\":[1,]}", 400, "invalid_json",
                 "body is not valid JSON: *");
    assert_error("\xef\xbb\xbf{\"inputs\":[1]}", 400, "invalid_json",
                 "body is not valid JSON: *");
    assert_error("{\"inputs\":[1]\f}", 400, "invalid_json",
                 "body is not valid JSON: *");
    /* Whitespace after the object is fine for both. */
    tv_request r;
    parse_fast("{\"inputs\":[1]} \n\r\t", &r);
    tv_request_free(&r);
}

static void fast_path_falls_back_on_empty_or_mixed_inputs(void **state)
{
    (void)state;
    const char *list = "\"inputs\" must be a non-empty list of token ids "
                       "or of sequences";
    assert_error("{\"inputs\":[]}", 400, "invalid_request", list);
    assert_error("{\"inputs\":{}}", 400, "invalid_request", list);
    assert_error("{\"inputs\":7}", 400, "invalid_request", list);
    assert_error("{\"inputs\":null}", 400, "invalid_request", list);
    assert_error("{\"inputs\":[[]]}", 400, "invalid_request",
                 "sequence at batch index 0 is empty");
    assert_error("{\"inputs\":[[1],[]]}", 400, "invalid_request",
                 "sequence at batch index 1 is empty");
    assert_error("{\"inputs\":[[1],2]}", 400, "invalid_request",
                 "\"inputs\" mixes sequences and ids: batch index 1 is not "
                 "a list");
    assert_error("{\"inputs\":[1,[2]]}", 400, "invalid_request",
                 "token id at batch index 0, position 1 is not an integer");
    assert_error("{\"inputs\":[[1,1],[2,\"3\"]]}", 400, "invalid_request",
                 "token id at batch index 1, position 1 is not an integer");
    assert_error("{\"inputs\":[[1,1],[2,[3]]]}", 400, "invalid_request",
                 "token id at batch index 1, position 1 is not an integer");
    assert_error("{\"inputs\":[true]}", 400, "invalid_request",
                 "token id at batch index 0, position 0 is not an integer");
    assert_error("{}", 400, "invalid_request", "missing \"inputs\"");
    assert_error("{\"positions\":true}", 400, "invalid_request",
                 "missing \"inputs\"");
    assert_error("", 400, "invalid_json", "body is not valid JSON: *");
    assert_error("[[1,2]]", 400, "invalid_request",
                 "body must be a JSON object with \"inputs\"");
}

static void fast_path_falls_back_on_bad_option_values(void **state)
{
    (void)state;
    assert_error("{\"inputs\":[1],\"positions\":1}", 400, "invalid_request",
                 "\"positions\" must be true or false");
    assert_error("{\"inputs\":[1],\"positions\":\"true\"}", 400,
                 "invalid_request", "\"positions\" must be true or false");
    assert_error("{\"inputs\":[1],\"positions\":truex}", 400, "invalid_json",
                 "body is not valid JSON: *");
    assert_error("{\"inputs\":[1],\"pad_id\":\"0\"}", 400, "invalid_request",
                 "\"pad_id\" must be an integer or null");
    assert_error("{\"inputs\":[1],\"pad_id\":nul}", 400, "invalid_json",
                 "body is not valid JSON: *");
    const char *fmt = "\"encoding_format\" must be \"float\" or \"base64\"";
    assert_error("{\"inputs\":[1],\"encoding_format\":\"Float\"}", 400,
                 "invalid_request", fmt);
    assert_error("{\"inputs\":[1],\"encoding_format\":\"float \"}", 400,
                 "invalid_request", fmt);
    assert_error("{\"inputs\":[1],\"encoding_format\":null}", 400,
                 "invalid_request", fmt);
    assert_error("{\"inputs\":[1],\"start_position\":\"3\"}", 400,
                 "invalid_request",
                 "\"start_position\" must be a non-negative integer");
}

/* --- limits ------------------------------------------------------------ */

static void over_max_tokens_is_413_from_either_path(void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20, .max_tokens = 8,
                           .max_batch = 4};
    tv_request r;
    /* at the limits: the fast path takes it */
    PARSE_FAST_LIM("{\"inputs\":[[1,2,3,4],[5,6,7,8]]}", &lim, &r);
    assert_int_equal(r.batch * r.seq, 8);
    tv_request_free(&r);
    PARSE_FAST_LIM("{\"inputs\":[1,2,3,4,5,6,7,8]}", &lim, &r);
    tv_request_free(&r);
    PARSE_FAST_LIM("{\"inputs\":[[1],[2],[3],[4]]}", &lim, &r);
    tv_request_free(&r);

    ASSERT_ERROR_LIM("{\"inputs\":[[1,2,3],[4,5,6],[7,8,9]]}", &lim, 413,
                   "payload_too_large",
                   "3 x 3 tokens is over max_tokens 8");
    ASSERT_ERROR_LIM("{\"inputs\":[1,2,3,4,5,6,7,8,9]}", &lim, 413,
                   "payload_too_large", "1 x 9 tokens is over max_tokens 8");
    /* padding counts: 5 ids, but 2 x 5 after padding */
    ASSERT_ERROR_LIM("{\"inputs\":[[1],[1,2,3,4,5]],\"pad_id\":0}", &lim,
                   413, "payload_too_large",
                   "2 x 5 tokens is over max_tokens 8");
    ASSERT_ERROR_LIM("{\"inputs\":[[1],[2],[3],[4],[5]]}", &lim, 413,
                   "payload_too_large", "batch of 5 sequences is over "
                   "max_batch 4");
    const tv_limits one = {.max_body_bytes = 1 << 20, .max_tokens = 8,
                           .max_batch = 1};
    PARSE_FAST_LIM("{\"inputs\":[[1,2,3]]}", &one, &r);
    tv_request_free(&r);
    ASSERT_ERROR_LIM("{\"inputs\":[[1],[2]]}", &one, 413,
                     "payload_too_large",
                     "batch of 2 sequences is over max_batch 1");
    /* a ragged batch without pad_id is 422 before the 413 */
    ASSERT_ERROR_LIM("{\"inputs\":[[1],[2],[3],[4],[5,6]]}", &lim, 422,
                   "ragged_batch", "sequences have different lengths*");
}

static void over_max_body_bytes_is_413_from_either_path(void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 16, .max_tokens = 8,
                           .max_batch = 4};
    tv_request r;
    PARSE_FAST_LIM("{\"inputs\":[1,2]}", &lim, &r);
    tv_request_free(&r);
    ASSERT_ERROR_LIM("{\"inputs\":[1,2]} ", &lim, 413, "payload_too_large",
                   "body of 17 bytes is over max_body_bytes 16");
}

/* --- the pre-scan before jansson (issue 15, finding 2) ------------------
 *
 * A body the fast path declines is scanned once (depth, value count)
 * before jansson builds a tree; too deep -> 400 invalid_request, too many
 * values -> 413 payload_too_large, both without a single jansson
 * allocation (counted through json_set_alloc_funcs). */

static size_t jansson_allocs;

static void *counting_malloc(size_t n)
{
    jansson_allocs++;
    return malloc(n);
}

static const char DEEP_INPUTS[] =
    "\"inputs\" nests deeper than a list of lists of ids";
static const char DEEP_BODY[] =
    "body nests lists or objects deeper than a request can (an object "
    "with \"inputs\", a list of lists of ids)";

/* The 413 message for lim: more values than any request within it. */
static const char *too_many(const tv_limits *lim)
{
    static char msg[320];
    int64_t rows = lim->max_batch < lim->max_tokens ? lim->max_batch
                                                    : lim->max_tokens;
    snprintf(msg, sizeof msg,
             "body holds more than %" PRId64 " JSON values, more than any "
             "request within max_tokens %" PRId64 " and max_batch %" PRId64
             " can hold", lim->max_tokens + rows + 6, lim->max_tokens,
             lim->max_batch);
    return msg;
}

/* tv_request_parse_json refuses body with exactly this error and jansson
 * never ran (no allocation through it); jansson alone refuses it too (some
 * error: the pre-scan never refuses a request jansson would take). */
static void assert_refused_before_jansson_n(const char *body, size_t len,
                                            const tv_limits *lim,
                                            int status, const char *type,
                                            const char *msg)
{
    tv_request r;
    tv_error e, es;
    memset(&e, 0, sizeof e);
    json_set_alloc_funcs(counting_malloc, free);
    jansson_allocs = 0;
    int rc = tv_request_parse_json(body, len, lim, &r, &e);
    size_t allocs = jansson_allocs;
    json_set_alloc_funcs(malloc, free);
    if (rc != -1)
        fail_msg("parsed: %.*s", len > 80 ? 80 : (int)len, body);
    assert_null(r.ids);
    if (e.status != status || strcmp(e.type, type) || strcmp(e.message, msg))
        fail_msg("got %d %s \"%s\", want %d %s \"%s\" for %.*s", e.status,
                 e.type, e.message, status, type, msg,
                 len > 80 ? 80 : (int)len, body);
    if (allocs)
        fail_msg("jansson allocated %zu times before the refusal", allocs);
    /* the pre-scan alone gives the same error */
    tv_error ep;
    size_t at = len;
    assert_int_equal(tv_request_prescan_json(body, len, lim, &ep, &at), -1);
    assert_int_equal(ep.status, e.status);
    assert_string_equal(ep.message, e.message);
    assert_true(at < len);
    assert_int_equal(tv_request_parse_json_slow(body, len, lim, &r, &es),
                     -1);
    assert_falls_back_n(body, len, lim);
}

#define ASSERT_REFUSED(body, lim, status, type, msg)                        \
    assert_refused_before_jansson_n(body, strlen(body), lim, status, type,  \
                                    msg)

/* n times s, then tail, in a new string (caller frees). */
static char *repeat(const char *head, const char *s, size_t n,
                    const char *tail)
{
    size_t hl = strlen(head), sl = strlen(s), tl = strlen(tail);
    char *out = malloc(hl + sl * n + tl + 1), *p = out;
    memcpy(p, head, hl);
    p += hl;
    for (size_t i = 0; i < n; i++, p += sl)
        memcpy(p, s, sl);
    memcpy(p, tail, tl + 1);
    return out;
}

static void deep_nesting_is_400_before_jansson(void **state)
{
    (void)state;
    /* 2,000 levels inside "inputs" (jansson's own limit is 2,048) */
    char *a = repeat("{\"inputs\":", "[", 2000, "1");
    char *body = repeat(a, "]", 2000, "}");
    ASSERT_REFUSED(body, &LIM, 400, "invalid_request", DEEP_INPUTS);
    free(a);
    free(body);
    /* four lists inside "inputs" (a list of lists of lists of ids) */
    ASSERT_REFUSED("{\"inputs\":[[[[1]]]]}", &LIM, 400, "invalid_request",
                   DEEP_INPUTS);
    ASSERT_REFUSED("{\"positions\":true,\"inputs\":[[1],[[[2]]]]}", &LIM,
                   400, "invalid_request", DEEP_INPUTS);
    /* a bare array, objects, another key: the generic message */
    a = repeat("", "[", 2000, "");
    body = repeat(a, "]", 2000, "");
    ASSERT_REFUSED(body, &LIM, 400, "invalid_request", DEEP_BODY);
    free(a);
    free(body);
    a = repeat("", "{\"a\":", 2000, "1");
    body = repeat(a, "}", 2000, "");
    ASSERT_REFUSED(body, &LIM, 400, "invalid_request", DEEP_BODY);
    free(a);
    free(body);
    ASSERT_REFUSED("[[[[[1]]]]]", &LIM, 400, "invalid_request", DEEP_BODY);
    ASSERT_REFUSED("{\"inputs\":[1],\"model\":{\"a\":[{\"b\":[]}]}}", &LIM,
                   400, "invalid_request", DEEP_BODY);
    /* unclosed: the pre-scan stops at the fifth level */
    body = repeat("", "[", 100000, "");
    ASSERT_REFUSED(body, &LIM, 400, "invalid_request", DEEP_BODY);
    free(body);
}

static void one_level_too_deep_keeps_jansson_messages(void **state)
{
    (void)state;
    /* A request one level deeper than valid is refused by jansson as
     * before, naming the batch index and position; the pre-scan refuses
     * from the fifth level (four lists inside "inputs") on. */
    assert_error("{\"inputs\":[[[1]]]}", 400, "invalid_request",
                 "token id at batch index 0, position 0 is not an integer");
    assert_error("{\"inputs\":[[1,1],[2,[3]]]}", 400, "invalid_request",
                 "token id at batch index 1, position 1 is not an integer");
    /* option values: lists up to that depth are jansson's type errors */
    assert_error("{\"inputs\":[1],\"positions\":[[[true]]]}", 400,
                 "invalid_request", "\"positions\" must be true or false");
    assert_error("{\"inputs\":[1],\"pad_id\":{\"a\":[{}]}}", 400,
                 "invalid_request", "\"pad_id\" must be an integer or null");
    /* deeper, the pre-scan's generic message */
    ASSERT_REFUSED("{\"inputs\":[1],\"positions\":[[[[true]]]]}", &LIM, 400,
                   "invalid_request", DEEP_BODY);
}

static void strings_do_not_count_as_nesting_or_values(void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20, .max_tokens = 8,
                           .max_batch = 4}; /* at most 18 values */
    /* brackets, commas and escaped quotes inside strings: shallow */
    assert_error("{\"inputs\":[1],\"encoding_format\":\"[[[[[[[[\\\"]]]]\"}",
                 400, "invalid_request",
                 "\"encoding_format\" must be \"float\" or \"base64\"");
    assert_error("{\"[[[[[[\":1,\"inputs\":[1]}", 400, "invalid_request",
                 "unknown key \"[[[[[[\"*");
    ASSERT_ERROR_LIM("{\"inputs\":[1],\"x\":\",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
                     "[[[[[[[[[[,,,,\"}", &lim, 400, "invalid_request",
                     "unknown key \"x\"*");
    /* an escaped backslash ends the string; what follows is counted */
    ASSERT_REFUSED("{\"k\\\\\":[[[[[1]]]]]}", &LIM, 400, "invalid_request",
                   DEEP_BODY);
    ASSERT_REFUSED("{\"encoding_format\":\"\\\\\\\"[[[[\","
                   "\"inputs\":[[[[[1]]]]]}", &LIM, 400, "invalid_request",
                   DEEP_INPUTS);
    /* an escaped quote does not end it: the brackets after it are text */
    assert_error("{\"inputs\":[1],\"x\":\"\\\"[[[[[[[\\\"\"}", 400,
                 "invalid_request", "unknown key \"x\"*");
    /* a string value "inputs" is not the key */
    ASSERT_REFUSED("{\"encoding_format\":\"inputs\",\"y\":[[[[1]]]]}", &LIM,
                   400, "invalid_request", DEEP_BODY);
}

static void too_many_values_is_413_before_jansson(void **state)
{
    (void)state;
    /* 200,000 ids with the defaults (max_tokens 65,536) */
    char *body = repeat("{\"inputs\":[", "1,", 200000, "1]}");
    ASSERT_REFUSED(body, &LIM, 413, "payload_too_large", too_many(&LIM));
    free(body);
    /* many empty lists (each would be a json_t) */
    body = repeat("{\"inputs\":[", "[],", 100000, "[]]}");
    ASSERT_REFUSED(body, &LIM, 413, "payload_too_large", too_many(&LIM));
    free(body);
    /* small limits: 8 tokens, 4 rows, so 18 values at most */
    const tv_limits lim = {.max_body_bytes = 1 << 20, .max_tokens = 8,
                           .max_batch = 4};
    ASSERT_REFUSED("{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}",
                   &lim, 413, "payload_too_large", too_many(&lim));
    /* max_batch over max_tokens: rows are bounded by max_tokens */
    const tv_limits wide = {.max_body_bytes = 1 << 20, .max_tokens = 2,
                            .max_batch = 100}; /* 2 + 2 + 6 = 10 */
    ASSERT_REFUSED("{\"inputs\":[[1],[1],[1],[1],[1],[1],[1],[1],[1]]}",
                   &wide, 413, "payload_too_large", too_many(&wide));
    /* somewhat over max_tokens: still jansson's message */
    ASSERT_ERROR_LIM("{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}",
                     &lim, 413, "payload_too_large",
                     "1 x 16 tokens is over max_tokens 8");
}

static void prescan_names_the_offset_it_refused_at(void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20, .max_tokens = 8,
                           .max_batch = 4};
    tv_error e;
    size_t at = 0;
    /* the fourth '[' in "inputs" (level 5, offset 26), not the ones in the
     * string before it */
    const char *b = "{\"k\":\"[[[[[\",\"inputs\":[ [[[[1]]]]]}";
    assert_int_equal(tv_request_prescan_json(b, strlen(b), &LIM, &e, &at),
                     -1);
    assert_int_equal(at, 26);
    assert_string_equal(e.message, DEEP_INPUTS);
    /* the 19th value: the 17th id, "17" at offset 50 */
    b = "{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18]}";
    assert_int_equal(tv_request_prescan_json(b, strlen(b), &lim, &e, &at),
                     -1);
    assert_int_equal(at, 50);
    assert_int_equal(e.status, 413);
    /* what it lets through: shallow and bounded, valid or not */
    const char *pass[] = {
        "", " ", "{", "[", "{\"inputs\":[[[1]]]}", "[[[[1]]]]",
        "{\"inputs\":[1,2,3]}", "{\"inputs\":[1,,[[[[[1]]]]]]}",
        "1", "\"[[[[[[\"", "{\"a\":1} [[[[[[", "{\"inputs\":[1]]]]]]]]]]]",
        "{\"a\":\"\\x\",\"b\":[[[[[1]]]]]}",
        "{\"inputs\":[01,[[[[1]]]]]}", "{\"inputs\":[1.e5,[[[[1]]]]]}",
        "{\"inputs\":[nul,[[[[1]]]]]}", "{\"inputs\":[+1,[[[[1]]]]]}",
        "{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18",
    };
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
        if (tv_request_prescan_json(pass[i], strlen(pass[i]), &LIM, &e,
                                    &at))
            fail_msg("refused (%s): %s", e.message, pass[i]);
    /* with the small limits the last one is over: 413 */
    const char *last = pass[sizeof pass / sizeof pass[0] - 1];
    assert_int_equal(tv_request_prescan_json(last, strlen(last), &lim, &e,
                                             &at), -1);
    assert_int_equal(e.status, 413);
}

static void a_request_at_the_value_bound_still_parses(void **state)
{
    (void)state;
    /* The most values a valid request holds: max_tokens ids in max_batch
     * rows, "inputs", the object and all four options; an escaped key so
     * that jansson (after the pre-scan) is the parser. */
    const tv_limits lim = {.max_body_bytes = 1 << 20, .max_tokens = 8,
                           .max_batch = 4};
    const char *b = "{\"\\u0069nputs\":[[1,2],[3,4],[5,6],[7,8]],"
                    "\"start_position\":0,\"positions\":true,"
                    "\"pad_id\":null,\"encoding_format\":\"float\"}";
    tv_request r, s;
    tv_error e;
    assert_falls_back_n(b, strlen(b), &lim);
    assert_int_equal(tv_request_parse_json(b, strlen(b), &lim, &r, &e), 0);
    assert_int_equal(tv_request_parse_json_slow(b, strlen(b), &lim, &s, &e),
                     0);
    assert_same_request(&r, &s);
    assert_int_equal(r.batch * r.seq, 8);
    tv_request_free(&r);
    tv_request_free(&s);
    /* the defaults: 65,536 ids in 4,096 rows of 16 */
    char *row = repeat("[", "7,", 15, "7],");
    char *rows = repeat("", row, 4095, "[7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7]");
    char *body = repeat("{\"\\u0069nputs\":[", rows, 1,
                        "],\"pad_id\":0,\"positions\":false,"
                        "\"start_position\":3,"
                        "\"encoding_format\":\"base64\"}");
    size_t len = strlen(body);
    assert_falls_back_n(body, len, &LIM);
    assert_int_equal(tv_request_parse_json(body, len, &LIM, &r, &e), 0);
    assert_int_equal(tv_request_parse_json_slow(body, len, &LIM, &s, &e), 0);
    assert_same_request(&r, &s);
    assert_int_equal(r.batch, 4096);
    assert_int_equal(r.seq, 16);
    tv_request_free(&r);
    tv_request_free(&s);
    free(row);
    free(rows);
    free(body);
}

static void precedence_syntax_errors_before_a_limit_stay_invalid_json(
    void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20, .max_tokens = 8,
                           .max_batch = 4};
    /* A JSON syntax error (structure, a bad number or literal, a control
     * character or bad escape in a string) before the point where the body
     * becomes too deep or too large: jansson's error, line and column. */
    assert_error("{\"inputs\":[1,,[[[[[1]]]]]]}", 400, "invalid_json",
                 "body is not valid JSON: unexpected token near ',' "
                 "(line 1, column 14)");
    assert_error("{\"inputs\":[[1],\n[01],[[[[[1]]]]]]}", 400,
                 "invalid_json", "body is not valid JSON: invalid token "
                 "near '0' (line 2, column 2)");
    assert_error("{\"inputs\":[tru,[[[[[1]]]]]]}", 400, "invalid_json",
                 "body is not valid JSON: invalid token near 'tru' "
                 "(line 1, column 14)");
    assert_error("{\"x\":\"a\tb\",\"inputs\":[[[[[1]]]]]}", 400,
                 "invalid_json", "body is not valid JSON: control "
                 "character 0x9 near '\"a' (line 1, column 7)");
    assert_error("{\"x\":\"\\q\",\"inputs\":[[[[[1]]]]]}", 400,
                 "invalid_json", "body is not valid JSON: invalid escape "
                 "near '\"\\q' (line 1, column 8)");
    assert_error("{\"inputs\" [[[[[1]]]]]}", 400, "invalid_json",
                 "body is not valid JSON: ':' expected near '[' "
                 "(line 1, column 11)");
    ASSERT_ERROR_LIM("{\"inputs\":[1 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
                     "18,19,20]}", &lim, 400, "invalid_json",
                     "body is not valid JSON: ']' expected near '2' "
                     "(line 1, column 14)");
    /* a NUL anywhere and max_body_bytes come first, as before */
    static const char nul[] = "{\"inputs\":[[[[[1]]]]]}\0";
    assert_error_n(nul, sizeof nul - 1, &LIM, 400, "invalid_json",
                   "body is not valid JSON: NUL byte at offset 22");
    const tv_limits tiny = {.max_body_bytes = 16, .max_tokens = 8,
                            .max_batch = 4};
    ASSERT_ERROR_LIM("{\"inputs\":[[[[[1]]]]]}", &tiny, 413,
                     "payload_too_large",
                     "body of 22 bytes is over max_body_bytes 16");
}

static void precedence_too_deep_or_too_large_before_a_syntax_error(
    void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20, .max_tokens = 8,
                           .max_batch = 4};
    /* the limit is reached first in the text: the pre-scan answers */
    ASSERT_REFUSED("{\"inputs\":[[[[[1]]]]],,}", &LIM, 400,
                   "invalid_request", DEEP_INPUTS);
    ASSERT_REFUSED("{\"inputs\":[[[[[", &LIM, 400, "invalid_request",
                   DEEP_INPUTS);
    ASSERT_REFUSED("{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
                   "18 19]}", &lim, 413, "payload_too_large",
                   too_many(&lim));
    /* and so it does past errors inside a token that it does not check: an
     * integer out of range, a duplicate key */
    ASSERT_REFUSED("{\"inputs\":[99999999999999999999,[[[[1]]]]]}", &LIM,
                   400, "invalid_request", DEEP_INPUTS);
    ASSERT_REFUSED("{\"inputs\":[1],\"inputs\":[[[[[1]]]]]}", &LIM, 400,
                   "invalid_request", DEEP_INPUTS);
}

/* --- tv_request_parse_binary ------------------------------------------- */

static void binary_body_reads_int32_le_ids(void **state)
{
    (void)state;
    const unsigned char body[] = {1, 0, 0, 0, 0x11, 0xc4, 0, 0,
                                  0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x80};
    tv_request r;
    tv_error e;
    assert_int_equal(tv_request_parse_binary(body, sizeof body, "2,2", &LIM,
                                             &r, &e), 0);
    assert_int_equal(r.batch, 2);
    assert_int_equal(r.seq, 2);
    assert_int_equal(r.positions, 1);
    assert_int_equal(r.single, 0);
    const int64_t want[] = {1, 50193, -1, INT32_MIN};
    assert_memory_equal(r.ids, want, sizeof want);
    tv_request_free(&r);
}

static void binary_body_errors_name_the_problem(void **state)
{
    (void)state;
    const unsigned char body[16] = {0};
    tv_request r;
    tv_error e;
    const char *shape_msg = "binary requests need X-Tokvec-Shape: B,S with "
                            "positive integers";
    const char *bad[] = {NULL, "", "4", "0,4", "4,0", "a,b", " 2,2", "2,2 ",
                         "-1,4", "2,,2", "1234567890123456789,1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tv_request_parse_binary(body, 16, bad[i], &LIM, &r,
                                                 &e), -1);
        assert_int_equal(e.status, 400);
        assert_string_equal(e.type, "invalid_request");
        assert_string_equal(e.message, shape_msg);
        assert_null(r.ids);
    }
    assert_int_equal(tv_request_parse_binary(body, 12, "2,2", &LIM, &r, &e),
                     -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.message, "body is 12 bytes; shape 2,2 needs 4 "
                                   "int32 ids (16 bytes)");
    const tv_limits lim = {.max_body_bytes = 12, .max_tokens = 3,
                           .max_batch = 2};
    assert_int_equal(tv_request_parse_binary(body, 16, "2,2", &lim, &r, &e),
                     -1);
    assert_int_equal(e.status, 413);
    assert_string_equal(e.type, "payload_too_large");
    assert_string_equal(e.message,
                        "body of 16 bytes is over max_body_bytes 12");
    assert_int_equal(tv_request_parse_binary(body, 12, "3,1", &lim, &r, &e),
                     -1);
    assert_int_equal(e.status, 413);
    assert_string_equal(e.message, "batch of 3 sequences is over max_batch 2");
    assert_int_equal(tv_request_parse_binary(body, 8, "1,4", &lim, &r, &e),
                     -1);
    assert_int_equal(e.status, 413);
    assert_string_equal(e.message, "1 x 4 tokens is over max_tokens 3");
}

/* --- tv_request_set_option ---------------------------------------------- */

static void query_options_set_and_reject(void **state)
{
    (void)state;
    tv_request r;
    tv_error e;
    tv_request_init(&r);
    assert_int_equal(tv_request_set_option(&r, "start_position", "12", &e),
                     0);
    assert_int_equal(r.start_position, 12);
    assert_int_equal(tv_request_set_option(&r, "positions", "false", &e), 0);
    assert_int_equal(r.positions, 0);
    assert_int_equal(tv_request_set_option(&r, "positions", "1", &e), 0);
    assert_int_equal(r.positions, 1);
    assert_int_equal(tv_request_set_option(&r, "positions", "0", &e), 0);
    assert_int_equal(r.positions, 0);
    assert_int_equal(tv_request_set_option(&r, "positions", "true", &e), 0);
    assert_int_equal(r.positions, 1);
    assert_int_equal(tv_request_set_option(&r, "dtype", "float16", &e), 0);

    const char *sp_bad[] = {"-1", "", NULL, "1.0", "+1", " 1", "x"};
    for (size_t i = 0; i < sizeof sp_bad / sizeof sp_bad[0]; i++) {
        assert_int_equal(tv_request_set_option(&r, "start_position",
                                               sp_bad[i], &e), -1);
        assert_int_equal(e.status, 400);
        assert_string_equal(e.type, "invalid_request");
        assert_string_equal(e.message,
                            "start_position must be a non-negative integer");
    }
    assert_int_equal(r.start_position, 12);
    assert_int_equal(tv_request_set_option(&r, "positions", "yes", &e), -1);
    assert_string_equal(e.message, "positions must be true or false");
    assert_int_equal(tv_request_set_option(&r, "positions", NULL, &e), -1);
    assert_int_equal(tv_request_set_option(&r, "pad_id", "0", &e), -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.message, "unknown query option (known: "
                                   "start_position, positions, dtype)");
}

/* --- tv_body_kind_of ----------------------------------------------------- */

static void content_types_classify(void **state)
{
    (void)state;
    assert_int_equal(tv_body_kind_of(NULL), TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of(""), TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of("application/json"), TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of("Application/JSON; charset=utf-8"),
                     TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of("application/json "), TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of("application/x-www-form-urlencoded"),
                     TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of("application/octet-stream"),
                     TV_BODY_BINARY);
    assert_int_equal(tv_body_kind_of("application/octet-stream;a=b"),
                     TV_BODY_BINARY);
    assert_int_equal(tv_body_kind_of("application/jsonx"),
                     TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of("text/plain"), TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of("application/x-npy"),
                     TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of(" application/json"),
                     TV_BODY_UNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fast_path_parses_batch_like_jansson),
        cmocka_unit_test(fast_path_parses_one_flat_sequence),
        cmocka_unit_test(fast_path_reads_options_in_any_order),
        cmocka_unit_test(fast_path_pads_ragged_rows_with_pad_id),
        cmocka_unit_test(ragged_without_pad_id_is_422_from_either_path),
        cmocka_unit_test(fast_path_reads_int64_extremes_and_minus_zero),
        cmocka_unit_test(fast_path_takes_large_and_dense_bodies),
        cmocka_unit_test(fast_path_falls_back_on_real_numbers),
        cmocka_unit_test(fast_path_falls_back_on_leading_zeros_and_signs),
        cmocka_unit_test(fast_path_falls_back_on_int64_overflow),
        cmocka_unit_test(fast_path_falls_back_on_duplicate_keys),
        cmocka_unit_test(fast_path_falls_back_on_escaped_keys),
        cmocka_unit_test(fast_path_falls_back_on_unknown_and_non_ascii_keys),
        cmocka_unit_test(fast_path_falls_back_on_nul_and_trailing_bytes),
        cmocka_unit_test(fast_path_falls_back_on_empty_or_mixed_inputs),
        cmocka_unit_test(fast_path_falls_back_on_bad_option_values),
        cmocka_unit_test(over_max_tokens_is_413_from_either_path),
        cmocka_unit_test(over_max_body_bytes_is_413_from_either_path),
        cmocka_unit_test(deep_nesting_is_400_before_jansson),
        cmocka_unit_test(one_level_too_deep_keeps_jansson_messages),
        cmocka_unit_test(strings_do_not_count_as_nesting_or_values),
        cmocka_unit_test(too_many_values_is_413_before_jansson),
        cmocka_unit_test(prescan_names_the_offset_it_refused_at),
        cmocka_unit_test(a_request_at_the_value_bound_still_parses),
        cmocka_unit_test(
            precedence_syntax_errors_before_a_limit_stay_invalid_json),
        cmocka_unit_test(
            precedence_too_deep_or_too_large_before_a_syntax_error),
        cmocka_unit_test(binary_body_reads_int32_le_ids),
        cmocka_unit_test(binary_body_errors_name_the_problem),
        cmocka_unit_test(query_options_set_and_reject),
        cmocka_unit_test(content_types_classify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
