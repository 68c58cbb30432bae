/* test_get_routes.c -- server/routes/get_routes.c: GET /info describes the
 * table and the limits, GET /tokens/{id} is the token's row (decimal ids only;
 * out of range is 422, anything else 400), GET /metrics is Prometheus text
 * that counts the requests served.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "server_fixture.h"

#define RESP 65536

static void info_describes_the_table_and_the_limits(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_get(f, "/info", r, RESP), 200);
    const char *b = fx_body(r);
    assert_non_null(strstr(b, "\"vocab_size\":16,\"dim\":4,"
                              "\"context_length\":8,\"dtype\":\"float32\""));
    assert_non_null(strstr(b, "\"positional\":\"learned\""));
    assert_non_null(strstr(b, "\"max_body_bytes\":16777216"));
}

static void a_token_is_its_row(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_get(f, "/tokens/3", r, RESP), 200);
    assert_string_equal(fx_body(r),
                        "{\"id\":3,\"embedding\":[12.0,13.0,14.0,15.0]}");
    fx_get_says(f, "/tokens/00015", 200, "\"id\":15,");
}

static void a_token_out_of_range_is_422(void **state)
{
    fixture *f = *state;
    fx_get_says(f, "/tokens/16", 422, "token id 16 is out of range [0, 16)");
    fx_get_says(f, "/tokens/-1", 422, "token id -1 is out of range");
}

static void a_token_id_that_is_no_decimal_is_400(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {"/tokens/",
                                      "/tokens/+1",
                                      "/tokens/0x1",
                                      "/tokens/1a",
                                      "/tokens/1%00",
                                      "/tokens/-",
                                      "/tokens/1234567890123456789"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        fx_get_says(f, bad[i], 400, "token id must be a decimal");
}

static void metrics_count_the_requests_served(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_get(f, "/health", r, RESP), 200);
    assert_int_equal(fx_get(f, "/metrics", r, RESP), 200);
    assert_true(fx_has_header(r, "Content-Type", "text/plain; version=0.0.4"));
    assert_non_null(strstr(fx_body(r), "tokvec_requests_total{route=\"/health"
                                       "\",code=\"200\"} "));
    assert_non_null(strstr(fx_body(r), "tokvec_table_info{"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup_up, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(info_describes_the_table_and_the_limits),
        T(a_token_is_its_row),
        T(a_token_out_of_range_is_422),
        T(a_token_id_that_is_no_decimal_is_400),
        T(metrics_count_the_requests_served),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
