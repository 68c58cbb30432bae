/* test_request_fast.c -- server/routes/request_fast.c: the strict fast path of
 * the JSON /embed parser (issue 14), which must agree with jansson on
 * everything it takes and leave everything else to jansson (errors,
 * limits and unusual but valid bodies).
 *
 * Every success case of the fast path asserts that it did succeed (a fast
 * path that always fell back would pass every agreement test otherwise)
 * and that jansson gives the identical tv_request.
 */
#include "request_testutil.h"

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
               "\"inputs\":[[1,2]]}",
               &r);
    assert_int_equal(r.base64, 1);
    assert_int_equal(r.positions, 0);
    assert_int_equal(r.start_position, 7);
    assert_int_equal(r.seq, 2);
    tv_request_free(&r);

    parse_fast("{\"inputs\":[[1,2]],\"start_position\":0,"
               "\"positions\":true,\"encoding_format\":\"float\"}",
               &r);
    assert_int_equal(r.base64, 0);
    assert_int_equal(r.positions, 1);
    assert_int_equal(r.torch, 0);
    assert_null(r.body_dtype);
    tv_request_free(&r);

    /* the torch answer and its dtype, each dtype by name */
    const char *dtypes[] = {"float32", "float16", "bfloat16"};
    for (size_t i = 0; i < 3; i++) {
        char b[128];
        snprintf(b, sizeof b,
                 "{\"dtype\":\"%s\",\"inputs\":[[1,2]],"
                 "\"encoding_format\":\"torch\"}",
                 dtypes[i]);
        parse_fast(b, &r);
        assert_int_equal(r.torch, 1);
        assert_int_equal(r.base64, 0);
        assert_string_equal(r.body_dtype, dtypes[i]);
        tv_request_free(&r);
    }

    /* the npz answer, by the body */
    parse_fast("{\"inputs\":[[1,2]],\"encoding_format\":\"npz\"}", &r);
    assert_int_equal(r.npz, 1);
    assert_int_equal(r.base64 + r.torch, 0);
    tv_request_free(&r);

    /* every kind of JSON whitespace everywhere it may be */
    parse_fast(" \r\n\t{ \"start_position\" : 3 ,\n \"inputs\" :\t[ [ 1 ,2 ]"
               " ,\r\n[3 , 4] ] , \"positions\"\t:\tfalse\n}\n\r\t ",
               &r);
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
    const int64_t lens[] = {3, 1, 2}; /* the answer's attention_mask */
    assert_non_null(r.lens);
    assert_memory_equal(r.lens, lens, sizeof lens);
    tv_request_free(&r);

    /* pad_id first, the longest row last, a negative pad */
    parse_fast("{\"pad_id\":-1,\"inputs\":[[1],[2,3],[4,5,6,7]]}", &r);
    assert_int_equal(r.seq, 4);
    const int64_t want2[] = {1, -1, -1, -1, 2, 3, -1, -1, 4, 5, 6, 7};
    assert_memory_equal(r.ids, want2, sizeof want2);
    const int64_t lens2[] = {1, 2, 4};
    assert_memory_equal(r.lens, lens2, sizeof lens2);
    tv_request_free(&r);

    /* pad_id given but the rows are equal: no padding, pad unused, no
     * mask */
    parse_fast("{\"pad_id\":0,\"inputs\":[[8,9],[10,11]]}", &r);
    const int64_t want3[] = {8, 9, 10, 11};
    assert_memory_equal(r.ids, want3, sizeof want3);
    assert_null(r.lens);
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
               "\"start_position\":-0}",
               &r);
    const int64_t want[] = {0,
                            0,
                            INT64_MAX,
                            INT64_MIN,
                            INT64_C(1000000000000000000),
                            -INT64_C(999999999999999999),
                            -1};
    assert_int_equal(r.seq, 7);
    assert_memory_equal(r.ids, want, sizeof want);
    assert_int_equal(r.start_position, 0);
    tv_request_free(&r);

    parse_fast("{\"inputs\":[1],\"start_position\":9223372036854775807}", &r);
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
                      "integer: *";
    const tu_refusal refusals[] = {
        {"{\"inputs\":[[1,1.0]]}", 400, "invalid_request", msg},
        {"{\"inputs\":[[1,1e2]]}", 400, "invalid_request", msg},
        {"{\"inputs\":[[1,1E2]]}", 400, "invalid_request", msg},
        {"{\"inputs\":[[1,-0.0]]}", 400, "invalid_request", msg},
        {"{\"inputs\":[[1,2.5e-3]]}", 400, "invalid_request", msg},
        {"{\"inputs\":[1,1.5]}", 400, "invalid_request", msg},
        {"{\"inputs\":[[1]],\"start_position\":1.0}", 400, "invalid_request",
         "\"start_position\" must be a non-negative integer"},
        {"{\"inputs\":[[1],[2,3]],\"pad_id\":0.0}", 400, "invalid_request",
         "\"pad_id\" must be an integer or null"},
    };
    ASSERT_REFUSALS(refusals);
}

static void fast_path_falls_back_on_leading_zeros_and_signs(void **state)
{
    (void)state;
    const char *bad[] = {"01",  "00", "-01", "+1", "-",  "--1",
                         "0x1", "1-", "1 2", ".5", "1.", "-a"};
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
    const tu_refusal refusals[] = {
        {"{\"inputs\":[9223372036854775808]}", 400, "invalid_json",
         "body is not valid JSON: too big integer near "
         "'9223372036854775808' (line 1, column 30)"},
        {"{\"inputs\":[[-9223372036854775809]]}", 400, "invalid_json",
         "body is not valid JSON: too big negative integer*"},
        {"{\"inputs\":[18446744073709551616]}", 400, "invalid_json",
         "body is not valid JSON: too big integer*"},
        {"{\"inputs\":[99999999999999999999]}", 400, "invalid_json",
         "body is not valid JSON: too big integer*"},
        {"{\"inputs\":[1],\"pad_id\":9223372036854775808}", 400,
         "invalid_json", "body is not valid JSON: too big integer*"},
        {"{\"inputs\":[1],\"start_position\":"
         "100000000000000000000000000000}",
         400, "invalid_json", "body is not valid JSON: too big integer*"},
    };
    ASSERT_REFUSALS(refusals);
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
        assert_int_equal(
            tv_request_parse_json(ok[i], strlen(ok[i]), &LIM, &r, &e), 0);
        assert_int_equal(
            tv_request_parse_json_slow(ok[i], strlen(ok[i]), &LIM, &s, &e), 0);
        assert_same_request(&r, &s);
        assert_int_equal(r.seq, 2);
        tv_request_free(&r);
        tv_request_free(&s);
    }
    /* the escaped duplicate is still a duplicate */
    assert_error("{\"inputs\":[1],\"\\u0069nputs\":[2]}", 400, "invalid_json",
                 "body is not valid JSON: duplicate object key*");
}

static void fast_path_falls_back_on_unknown_and_non_ascii_keys(void **state)
{
    (void)state;
    const tu_refusal refusals[] = {
        {"{\"inputs\":[[1]],\"model\":\"gpt2\"}", 400, "invalid_request",
         "unknown key \"model\" (known: inputs, start_position, positions, "
         "pad_id, encoding_format, dtype, special_tokens, "
         "add_special_tokens, truncate, "
         "truncation_direction, max_length, stride, pooling, normalize, "
         "dimensions)"},
        {"{\"Inputs\":[[1]]}", 400, "invalid_request",
         "unknown key \"Inputs\"*"},
        {"{\"inputs \":[[1]]}", 400, "invalid_request",
         "unknown key \"inputs \"*"},
        {"{\"input\":[[1]]}", 400, "invalid_request",
         "unknown key \"input\"*"},
    };
    ASSERT_REFUSALS(refusals);
    /* UTF-8 in a key: named with '?' for each byte outside ASCII */
    assert_error("{\"inputs\":[1],\"caf\xc3\xa9\":1}", 400, "invalid_request",
                 "unknown key \"caf??\"*");
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
    const tu_refusal refusals[] = {
        {"{\"inputs\":[1]} x", 400, "invalid_json",
         "body is not valid JSON: end of file expected*"},
        {"{\"inputs\":[1]}}", 400, "invalid_json",
         "body is not valid JSON: end of file expected*"},
        {"{\"inputs\":[1]}{}", 400, "invalid_json",
         "body is not valid JSON: end of file expected*"},
        {"{\"inputs\":[1],}", 400, "invalid_json",
         "body is not valid JSON: *"},
        {"{\"inputs\":[1,]}", 400, "invalid_json",
         "body is not valid JSON: *"},
        {"\xef\xbb\xbf{\"inputs\":[1]}", 400, "invalid_json",
         "body is not valid JSON: *"},
        {"{\"inputs\":[1]\f}", 400, "invalid_json",
         "body is not valid JSON: *"},
    };
    ASSERT_REFUSALS(refusals);
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
    const tu_refusal refusals[] = {
        {"{\"inputs\":[]}", 400, "invalid_request", list},
        {"{\"inputs\":{}}", 400, "invalid_request", list},
        {"{\"inputs\":7}", 400, "invalid_request", list},
        {"{\"inputs\":null}", 400, "invalid_request", list},
        {"{\"inputs\":[[]]}", 400, "invalid_request",
         "sequence at batch index 0 is empty"},
        {"{\"inputs\":[[1],[]]}", 400, "invalid_request",
         "sequence at batch index 1 is empty"},
        {"{\"inputs\":[[1],2]}", 400, "invalid_request",
         "\"inputs\" mixes sequences and ids: batch index 1 is not a list"},
        {"{\"inputs\":[1,[2]]}", 400, "invalid_request",
         "token id at batch index 0, position 1 is not an integer: [2]"},
        {"{\"inputs\":[[1,1],[2,\"3\"]]}", 400, "invalid_request",
         "token id at batch index 1, position 1 is not an integer: \"3\""},
        {"{\"inputs\":[[1,1],[2,[3]]]}", 400, "invalid_request",
         "token id at batch index 1, position 1 is not an integer: [3]"},
        {"{\"inputs\":[true]}", 400, "invalid_request",
         "token id at batch index 0, position 0 is not an integer: true"},
        /* the value is echoed as JSON (ASCII), cut after 40 bytes */
        {"{\"inputs\":[[1,2.5]]}", 400, "invalid_request",
         "token id at batch index 0, position 1 is not an integer: 2.5"},
        {"{\"inputs\":[[\"\u00e9abcdefghijklmnopqrstuvwxyz0123456789"
         "ABCDEF\"]]}",
         400, "invalid_request",
         "token id at batch index 0, position 0 is not an integer: "
         "\"\\u00E9abcdefghijklmnopqrstuvwxyz0123456..."},
        {"{}", 400, "invalid_request", "missing \"inputs\""},
        {"{\"positions\":true}", 400, "invalid_request", "missing \"inputs\""},
        {"", 400, "invalid_json", "body is not valid JSON: *"},
        {"[[1,2]]", 400, "invalid_request",
         "body must be a JSON object with \"inputs\""},
    };
    ASSERT_REFUSALS(refusals);
}

static void fast_path_falls_back_on_bad_option_values(void **state)
{
    (void)state;
    const char *fmt = "\"encoding_format\" must be \"float\", \"base64\", "
                      "\"torch\" or \"npz\"";
    const char *dt =
        "\"dtype\" must be \"float32\", \"float16\" or \"bfloat16\"";
    const tu_refusal refusals[] = {
        {"{\"inputs\":[1],\"positions\":1}", 400, "invalid_request",
         "\"positions\" must be true or false"},
        {"{\"inputs\":[1],\"positions\":\"true\"}", 400, "invalid_request",
         "\"positions\" must be true or false"},
        {"{\"inputs\":[1],\"positions\":truex}", 400, "invalid_json",
         "body is not valid JSON: *"},
        {"{\"inputs\":[1],\"pad_id\":\"0\"}", 400, "invalid_request",
         "\"pad_id\" must be an integer or null"},
        {"{\"inputs\":[1],\"pad_id\":nul}", 400, "invalid_json",
         "body is not valid JSON: *"},
        {"{\"inputs\":[1],\"encoding_format\":\"Float\"}", 400,
         "invalid_request", fmt},
        {"{\"inputs\":[1],\"encoding_format\":\"float \"}", 400,
         "invalid_request", fmt},
        {"{\"inputs\":[1],\"encoding_format\":null}", 400, "invalid_request",
         fmt},
        {"{\"inputs\":[1],\"encoding_format\":\"Torch\"}", 400,
         "invalid_request", fmt},
        {"{\"inputs\":[1],\"dtype\":\"f16\"}", 400, "invalid_request", dt},
        {"{\"inputs\":[1],\"dtype\":\"float16 \"}", 400, "invalid_request",
         dt},
        {"{\"inputs\":[1],\"dtype\":null}", 400, "invalid_request", dt},
        {"{\"inputs\":[1],\"start_position\":\"3\"}", 400, "invalid_request",
         "\"start_position\" must be a non-negative integer"},
    };
    ASSERT_REFUSALS(refusals);
}

/* --- limits ------------------------------------------------------------ */

static void over_max_tokens_is_413_from_either_path(void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20,
                           .max_tokens = 8,
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
                     "payload_too_large", "3 x 3 tokens is over max_tokens 8");
    ASSERT_ERROR_LIM("{\"inputs\":[1,2,3,4,5,6,7,8,9]}", &lim, 413,
                     "payload_too_large", "1 x 9 tokens is over max_tokens 8");
    /* padding counts: 5 ids, but 2 x 5 after padding */
    ASSERT_ERROR_LIM("{\"inputs\":[[1],[1,2,3,4,5]],\"pad_id\":0}", &lim, 413,
                     "payload_too_large", "2 x 5 tokens is over max_tokens 8");
    ASSERT_ERROR_LIM("{\"inputs\":[[1],[2],[3],[4],[5]]}", &lim, 413,
                     "payload_too_large",
                     "batch of 5 sequences is over max_batch 4");
    const tv_limits one = {.max_body_bytes = 1 << 20,
                           .max_tokens = 8,
                           .max_batch = 1};
    PARSE_FAST_LIM("{\"inputs\":[[1,2,3]]}", &one, &r);
    tv_request_free(&r);
    ASSERT_ERROR_LIM("{\"inputs\":[[1],[2]]}", &one, 413, "payload_too_large",
                     "batch of 2 sequences is over max_batch 1");
    /* a ragged batch without pad_id is 422 before the 413 */
    ASSERT_ERROR_LIM("{\"inputs\":[[1],[2],[3],[4],[5,6]]}", &lim, 422,
                     "ragged_batch", "sequences have different lengths*");
}

static void over_max_body_bytes_is_413_from_either_path(void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 16,
                           .max_tokens = 8,
                           .max_batch = 4};
    tv_request r;
    PARSE_FAST_LIM("{\"inputs\":[1,2]}", &lim, &r);
    tv_request_free(&r);
    ASSERT_ERROR_LIM("{\"inputs\":[1,2]} ", &lim, 413, "payload_too_large",
                     "body of 17 bytes is over max_body_bytes 16");
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
