/* test_request_echo.c -- what server/routes/request.c echoes of a bad
 * value: at most 40 bytes of it, then "..." (a key of a query string, a
 * token id of GET /tokens/{id}); and a JSON body over 1 MiB parses the
 * same (the parser gives glibc's freed pages back after it).
 *
 * Threads: one (the test's).
 */
#include "request_testutil.h"

#define LONG_KEY "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"

static void a_long_unknown_query_key_is_echoed_cut_at_40_bytes(void **state)
{
    (void)state;
    tv_request r;
    memset(&r, 0, sizeof r);
    tv_error e;
    assert_int_equal(tv_request_set_option(&r, LONG_KEY, "1", &e), -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.message,
                        "unknown query option "
                        "'abcdefghijklmnopqrstuvwxyzabcdefghijklmn...' "
                        "(known: start_position, positions, dtype, "
                        "encoding_format)");
    assert_int_equal(tv_request_set_option(&r, "abc", "1", &e), -1);
    assert_non_null(strstr(e.message, "'abc' (known"));
}

static void a_long_query_key_beside_a_json_body_is_echoed_cut(void **state)
{
    (void)state;
    tv_request r;
    memset(&r, 0, sizeof r);
    tv_error e;
    assert_int_equal(tv_request_query(&r, TV_BODY_JSON, LONG_KEY, "1", &e),
                     -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.message,
                        "query option "
                        "'abcdefghijklmnopqrstuvwxyzabcdefghijklmn...': JSON "
                        "requests take options in the body; only ?dtype= "
                        "goes in the query");
}

static void a_token_id_of_over_40_digits_is_echoed_cut(void **state)
{
    (void)state;
    int64_t id = 7;
    tv_error e;
    const char *digits = "12345678901234567890123456789012345678901234";
    assert_int_equal(tv_request_token_id(digits, &id, &e), -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.message,
                        "token id must be a decimal integer of at most 18 "
                        "digits, not "
                        "'1234567890123456789012345678901234567890...'");
    assert_int_equal(id, 7);
    assert_int_equal(tv_request_token_id("-12", &id, &e), 0);
    assert_int_equal(id, -12);
}

static void a_json_body_over_one_mib_parses_like_a_short_one(void **state)
{
    (void)state;
    size_t pad = (1u << 20) + 10;
    const char *head = "{\"inputs\":[[5,6,7]]";
    size_t hl = strlen(head);
    char *body = malloc(hl + pad + 2);
    assert_non_null(body);
    memcpy(body, head, hl);
    memset(body + hl, ' ', pad);
    memcpy(body + hl + pad, "}", 2);
    tv_request big, small;
    tv_error e;
    assert_int_equal(
        tv_request_parse_json_slow(body, hl + pad + 1, &LIM, &big, &e), 0);
    assert_int_equal(tv_request_parse_json_slow("{\"inputs\":[[5,6,7]]}", 20,
                                                &LIM, &small, &e),
                     0);
    assert_same_request(&big, &small);
    assert_int_equal(big.ids[2], 7);
    tv_request_free(&big);
    tv_request_free(&small);
    /* and a refused one of that size frees what it parsed */
    memcpy(body, "{\"inputs\":[[5,6,7.5]]", hl + 2);
    assert_int_equal(
        tv_request_parse_json_slow(body, hl + pad + 1, &LIM, &big, &e), -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.message, "token id at batch index 0, position 2 "
                                   "is not an integer: 7.5");
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_long_unknown_query_key_is_echoed_cut_at_40_bytes),
        cmocka_unit_test(a_long_query_key_beside_a_json_body_is_echoed_cut),
        cmocka_unit_test(a_token_id_of_over_40_digits_is_echoed_cut),
        cmocka_unit_test(a_json_body_over_one_mib_parses_like_a_short_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
