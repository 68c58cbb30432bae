/* test_request.c -- server/routes/request.c: binary bodies, query options and
 * the query string's rule, GET /tokens/{id} ids, tv_error_set, and
 * tv_body_kind_of. The JSON parser's fast path and pre-scan have their own
 * files (test_request_fast.c, test_request_prescan.c).
 */
#include "request_testutil.h"

/* --- tv_request_parse_binary ------------------------------------------ */

static void binary_body_reads_int32_le_ids(void **state)
{
    (void)state;
    const unsigned char body[] = {1,    0,    0,    0,    0x11, 0xc4, 0, 0,
                                  0xff, 0xff, 0xff, 0xff, 0,    0,    0, 0x80};
    tv_request r;
    tv_error e;
    assert_int_equal(
        tv_request_parse_binary(body, sizeof body, "2,2", &LIM, &r, &e), 0);
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
    /* A list of shapes, packed (clang-format would put one a line). */
    /* clang-format off */
    const char *bad[] = {NULL, "", "4", "0,4", "4,0", "a,b", " 2,2", "2,2 ",
                         "-1,4", "2,,2", "1234567890123456789,1"};
    /* clang-format on */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(
            tv_request_parse_binary(body, 16, bad[i], &LIM, &r, &e), -1);
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
    const tv_limits lim = {.max_body_bytes = 12,
                           .max_tokens = 3,
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

/* --- tv_request_set_option --------------------------------------------- */

static void query_options_set_and_reject(void **state)
{
    (void)state;
    tv_request r;
    tv_error e;
    tv_request_init(&r);
    assert_int_equal(tv_request_set_option(&r, "start_position", "12", &e), 0);
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
        assert_int_equal(
            tv_request_set_option(&r, "start_position", sp_bad[i], &e), -1);
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
    assert_string_equal(e.message, "unknown query option 'pad_id' (known: "
                                   "start_position, positions, dtype, "
                                   "encoding_format)");
    /* the answer's encoding, as the JSON body's "encoding_format" */
    assert_int_equal(tv_request_set_option(&r, "encoding_format", "npz", &e),
                     0);
    assert_int_equal(r.npz, 1);
    assert_int_equal(
        tv_request_set_option(&r, "encoding_format", "base64", &e), 0);
    assert_int_equal(r.npz, 0);
    assert_int_equal(r.base64, 1);
    assert_int_equal(tv_request_set_option(&r, "encoding_format", "npy", &e),
                     -1);
    assert_string_equal(e.message,
                        "encoding_format must be float, base64, torch or npz");
}

/* --- tv_body_kind_of ---------------------------------------------------- */

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
    assert_int_equal(tv_body_kind_of("text/plain"), TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of("text/plain;charset=UTF-8"),
                     TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of("Text/Plain; charset=utf-8"),
                     TV_BODY_JSON);
    assert_int_equal(tv_body_kind_of("text/plainx"), TV_BODY_UNSUPPORTED);
    /* a type of an accepted type's length is compared letter by letter */
    assert_int_equal(tv_body_kind_of("application/jsoo"), TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of("application/x-www-form-urlencodee"),
                     TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of("text/plaim"), TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of("application/octet-streaa"),
                     TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of("text/html"), TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of("application/x-npy"),
                     TV_BODY_UNSUPPORTED);
    assert_int_equal(tv_body_kind_of(" application/json"),
                     TV_BODY_UNSUPPORTED);
}

static void a_415_names_the_type_received_and_the_types_accepted(void **st)
{
    (void)st;
    tv_error e;
    assert_int_equal(tv_body_kind_error("text/html; charset=utf-8", 1, &e),
                     -1);
    assert_int_equal(e.status, 415);
    assert_string_equal(e.type, "unsupported_media_type");
    assert_string_equal(e.message,
                        "Content-Type 'text/html' is not accepted; send "
                        "application/json (text/plain and "
                        "application/x-www-form-urlencoded are read as JSON "
                        "too) or application/octet-stream (int32 ids, "
                        "X-Tokvec-Shape)");
    /* JSON-only routes do not offer octet-stream; a long type is cut */
    char big[200];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "image/", 6);
    tv_body_kind_error(big, 0, &e);
    assert_non_null(strstr(e.message, "'image/aaaa"));
    assert_non_null(strstr(e.message, "aaa...' is not accepted"));
    assert_null(strstr(e.message, "octet-stream"));
    assert_true(strlen(e.message) < 200);
    /* no type at all: the empty name */
    assert_int_equal(tv_body_kind_error(NULL, 0, &e), -1);
    assert_non_null(strstr(e.message, "Content-Type '' is not accepted"));
}

/* --- the query string of POST /embed ---------------------------------- */

static void dtype_is_kept_as_given_for_negotiation(void **state)
{
    (void)state;
    tv_request r;
    tv_error e;
    tv_request_init(&r);
    assert_null(r.dtype);
    assert_int_equal(tv_request_set_option(&r, "dtype", "float16", &e), 0);
    assert_string_equal(r.dtype, "float16");
    /* not checked here: tv_negotiate answers a bad one */
    assert_int_equal(tv_request_query(&r, TV_BODY_BINARY, "dtype", "nope", &e),
                     0);
    assert_string_equal(r.dtype, "nope");
}

static void a_json_body_takes_only_dtype_in_the_query(void **state)
{
    (void)state;
    tv_request r;
    tv_error e;
    tv_request_init(&r);
    assert_int_equal(
        tv_request_query(&r, TV_BODY_JSON, "dtype", "bfloat16", &e), 0);
    assert_string_equal(r.dtype, "bfloat16");
    assert_int_equal(
        tv_request_query(&r, TV_BODY_JSON, "start_position", "3", &e), -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.message, "query option 'start_position': JSON "
                                   "requests take options in the body; only "
                                   "?dtype= goes in the query");
    assert_int_equal(r.start_position, 0);
    /* a binary body takes them */
    assert_int_equal(
        tv_request_query(&r, TV_BODY_BINARY, "start_position", "3", &e), 0);
    assert_int_equal(r.start_position, 3);
    assert_int_equal(tv_request_query(&r, TV_BODY_BINARY, "nope", "1", &e),
                     -1);
    assert_string_equal(e.type, "invalid_request");
    assert_string_equal(e.message, "unknown query option 'nope' (known: "
                                   "start_position, positions, dtype, "
                                   "encoding_format)");
    /* a long name is cut after 40 bytes */
    assert_int_equal(tv_request_query(&r, TV_BODY_JSON,
                                      "foooooooooooooooooooooooooooooooooo"
                                      "ooooooo",
                                      "1", &e),
                     -1);
    assert_string_equal(e.message, "query option 'foooooooooooooooooooooooo"
                                   "ooooooooooooooo...': JSON requests take "
                                   "options in the body; only ?dtype= goes "
                                   "in the query");
}

/* --- GET /tokens/{id} ---------------------------------------------------- */

static void token_ids_are_signed_decimals_of_at_most_18_digits(void **state)
{
    (void)state;
    int64_t id = 7;
    tv_error e;
    assert_int_equal(tv_request_token_id("0", &id, &e), 0);
    assert_int_equal(id, 0);
    assert_int_equal(tv_request_token_id("-12", &id, &e), 0);
    assert_int_equal(id, -12);
    assert_int_equal(tv_request_token_id("000050256", &id, &e), 0);
    assert_int_equal(id, 50256);
    assert_int_equal(tv_request_token_id("999999999999999999", &id, &e), 0);
    assert_int_equal(id, 999999999999999999LL);
    static const char *const long_ones[] = {"", "-", "1234567890123456789"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(tv_request_token_id(long_ones[i], &id, &e), -1);
        char want[128];
        snprintf(want, sizeof want,
                 "token id must be a decimal integer of at most 18 digits, "
                 "not '%s'",
                 long_ones[i]);
        assert_string_equal(e.message, want);
    }
    static const char *const bad[] = {"+1", " 1",  "1 ",  "0x1",
                                      "1a", "--1", "1%00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tv_request_token_id(bad[i], &id, &e), -1);
        assert_int_equal(e.status, 400);
        char want[128];
        snprintf(want, sizeof want,
                 "token id must be a decimal integer, not '%s'", bad[i]);
        assert_string_equal(e.message, want);
    }
}

/* --- tv_error_set ------------------------------------------------------- */

static void error_set_fills_the_error_and_returns_minus_1(void **state)
{
    (void)state;
    tv_error e;
    assert_int_equal(
        tv_error_set(&e, 422, "ragged_batch", "row %d of %s", 3, "x"), -1);
    assert_int_equal(e.status, 422);
    assert_string_equal(e.type, "ragged_batch");
    assert_string_equal(e.message, "row 3 of x");
    char big[1000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tv_error_set(&e, 400, "invalid_request", "%s", big);
    assert_int_equal(strlen(e.message), sizeof e.message - 1);
}

/* --- JSON bodies: each option and input shape refused ----------------- */

/* Each body is refused with its status and a message holding `says`, by
 * the parser the server calls (fast path, pre-scan, jansson) and by the
 * jansson parser alone; a body that parses is freed. */
static void each_bad_option_and_input_is_refused_naming_it(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int status;
        const char *says;
    } bad[] = {
        {"{\"inputs\":[1],\"truncate\":1}", 400,
         "\"truncate\" must be true or false"},
        {"{\"inputs\":[1],\"special_tokens\":null}", 400,
         "\"special_tokens\" must be true or false"},
        {"{\"inputs\":[1],\"add_special_tokens\":\"yes\"}", 400,
         "\"add_special_tokens\" must be true or false"},
        {"{\"inputs\":[1],\"truncation_direction\":3}", 400,
         "\"truncation_direction\" must be \"right\" or \"left\""},
        {"{\"inputs\":[1],\"truncation_direction\":\"up\"}", 400,
         "\"truncation_direction\" must be"},
        {"{\"inputs\":\"a\",\"max_length\":0}", 400,
         "\"max_length\" must be an integer >= 1"},
        {"{\"inputs\":\"a\",\"max_length\":2,\"stride\":\"1\"}", 400,
         "\"stride\" must be an integer >= 1"},
        {"{\"inputs\":\"a\",\"stride\":2}", 400,
         "\"stride\" needs \"max_length\""},
        {"{\"inputs\":\"a\",\"max_length\":2,\"add_special_tokens\":true}",
         400, "\"add_special_tokens\" does not go with"},
        {"{\"inputs\":[1,2],\"max_length\":2}", 400,
         "\"max_length\" windows need a text in \"inputs\""},
        {"{\"inputs\":[1],\"start_position\":-1}", 400,
         "\"start_position\" must be a non-negative integer"},
        {"{\"inputs\":[1],\"start_position\":1.5}", 400,
         "\"start_position\" must be a non-negative integer"},
        {"{\"inputs\":[1],\"positions\":0}", 400,
         "\"positions\" must be true or false"},
        {"{\"inputs\":[1],\"pad_id\":\"0\"}", 400,
         "\"pad_id\" must be an integer or null"},
        {"{\"inputs\":[1],\"pooling\":\"max\"}", 400,
         "\"pooling\" must be \"none\" or \"mean\""},
        {"{\"inputs\":[1],\"pooling\":1}", 400, "\"pooling\" must be"},
        {"{\"inputs\":[1],\"pooling\":\"mean\",\"normalize\":1}", 400,
         "\"normalize\" must be true, false or null"},
        {"{\"inputs\":[1],\"normalize\":true}", 400,
         "\"normalize\" needs \"pooling\": \"mean\""},
        {"{\"inputs\":[1],\"dimensions\":2}", 400,
         "\"dimensions\" needs \"pooling\": \"mean\""},
        {"{\"inputs\":[1],\"pooling\":\"mean\",\"dimensions\":0}", 400,
         "\"dimensions\" must be a positive integer"},
        {"{\"inputs\":[1],\"pooling\":\"mean\",\"dimensions\":\"2\"}", 400,
         "\"dimensions\" must be a positive integer"},
        {"{\"inputs\":\"a\",\"pooling\":\"mean\",\"max_length\":2}", 400,
         "exclude each other"},
        {"{\"inputs\":{},\"pooling\":\"mean\"}", 400,
         "must be a text, a list of token ids, or a non-empty list"},
        {"{\"inputs\":[],\"pooling\":\"mean\"}", 400,
         "must be a text, a list of token ids, or a non-empty list"},
        {"{\"inputs\":[\"a\",3],\"pooling\":\"mean\"}", 400,
         "inputs[1] is neither a text nor a list of token ids"},
        {"{\"inputs\":[\"a\",{}]}", 400,
         "inputs[1] is neither a text nor a list of token ids"},
        {"{\"inputs\":[\"a\",[]]}", 400, "sequence at batch index 1 is empty"},
        {"{\"inputs\":[\"a\",[1,\"x\"]]}", 400,
         "token id at batch index 1, position 1 is not an integer: \"x\""},
        {"{\"inputs\":[[1,[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaa\"]],[2,3]]}",
         400,
         "position 1 is not an integer: [\"aaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaa..."},
        {"{\"inputs\":[\"a\",[1,2,3,4,5,6,7,8,9]],\"pooling\":\"mean\"}", 413,
         "the id lists hold more than max_tokens 8 ids"},
        {"{\"inputs\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 413,
         "batch of 5 inputs is over max_batch 4"},
        {"{\"inputs\":[1],\"k\\u00e9y\\u0001\":1}", 400,
         "unknown key \"k??y?\" (known: inputs,"},
        {"{\"inputs\":[1],\"encoding_format\":\"xml\"}", 400,
         "encoding_format"},
        {"{\"inputs\":[1],\"dtype\":\"int8\"}", 400, "dtype"},
        {"[1]", 400, ""},
        {"{\"inputs\":7}", 400, "\"inputs\" must be a non-empty list"},
        {"{}", 400, "missing \"inputs\""},
    };
    static const tv_limits small = {.max_body_bytes = 1 << 20,
                                    .max_tokens = 8,
                                    .max_batch = 4};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int slow = 0; slow < 2; slow++) {
            tv_request r;
            tv_error e = {0};
            size_t n = strlen(bad[i].body);
            int rc = slow ? tv_request_parse_json_slow(bad[i].body, n, &small,
                                                       &r, &e)
                          : tv_request_parse_json(bad[i].body, n, &small, &r,
                                                  &e);
            if (rc == 0)
                tv_request_free(&r);
            if (rc != -1 || e.status != bad[i].status ||
                !strstr(e.message, bad[i].says))
                fail_msg("%s (%s): rc %d, %d %s", bad[i].body,
                         slow ? "slow" : "server", rc, e.status, e.message);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binary_body_reads_int32_le_ids),
        cmocka_unit_test(binary_body_errors_name_the_problem),
        cmocka_unit_test(query_options_set_and_reject),
        cmocka_unit_test(dtype_is_kept_as_given_for_negotiation),
        cmocka_unit_test(a_json_body_takes_only_dtype_in_the_query),
        cmocka_unit_test(token_ids_are_signed_decimals_of_at_most_18_digits),
        cmocka_unit_test(error_set_fills_the_error_and_returns_minus_1),
        cmocka_unit_test(content_types_classify),
        cmocka_unit_test(a_415_names_the_type_received_and_the_types_accepted),
        cmocka_unit_test(each_bad_option_and_input_is_refused_naming_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
