/* test_reply.c -- server/reply.c: the headers every answer gets and the
 * error bodies -- CORS (Access-Control-Allow-Origin, Vary: Origin unless
 * "*", the preflight's Allow-Methods), none without --cors-origin,
 * Retry-After on 429 and 503, Connection: close while draining, errors as
 * {"error":..., "error_type":...}.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "server_fixture.h"

#define RESP 65536

static void no_cors_headers_without_cors_origin(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_get(f, "/health", r, RESP), 200);
    assert_false(fx_has_header(r, "Access-Control-Allow-Origin", NULL));
    /* OPTIONS is then no method of any route */
    assert_int_equal(fx_http(f, "OPTIONS", "/embed", NULL, NULL, NULL, r,
                             RESP),
                     405);
}

static void an_origin_gets_allow_origin_and_vary(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--cors-origin", "https://a.example", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    assert_int_equal(fx_get(f, "/nope", r, RESP), 404);
    assert_true(fx_has_header(r, "Access-Control-Allow-Origin",
                              "https://a.example"));
    assert_true(fx_has_header(r, "Vary", "Origin"));
    assert_int_equal(fx_http(f, "OPTIONS", "/embed", NULL, NULL, NULL, r,
                             RESP),
                     204);
    assert_true(fx_has_header(r, "Access-Control-Allow-Methods",
                              "POST, OPTIONS"));
    assert_true(fx_has_header(r, "Access-Control-Expose-Headers",
                              "X-Tokvec-Shape, X-Tokvec-Dtype"));
}

static void a_star_origin_has_no_vary(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--cors-origin", "*", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    assert_int_equal(fx_get(f, "/health", r, RESP), 200);
    assert_true(fx_has_header(r, "Access-Control-Allow-Origin", "*"));
    assert_false(fx_has_header(r, "Vary", NULL));
}

static void overload_answers_say_when_to_retry(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--max-buffered-bytes", "10", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    assert_int_equal(fx_http(f, "POST", "/embed", "application/json",
                             "{\"inputs\":[1,2,3]}", NULL, r, RESP),
                     429);
    assert_true(fx_has_header(r, "Retry-After", "1"));
    assert_non_null(strstr(fx_body(r), "\"error_type\":\"overloaded\""));
    /* While draining, on a connection opened before: 503, retry later,
     * and go elsewhere (Connection: close). */
    int fd = fx_connect_accepted(f->port);
    assert_true(fd >= 0);
    tv_server_drain_begin(f->srv);
    static const char req[] = "POST /embed HTTP/1.1\r\nHost: t\r\n"
                              "Content-Type: application/json\r\n"
                              "Content-Length: 2\r\n\r\n{}";
    assert_int_equal(fx_send(fd, req, sizeof req - 1), 0);
    fx_read_all(fd, r, RESP);
    close(fd);
    assert_int_equal(fx_status(r), 503);
    assert_true(fx_has_header(r, "Retry-After", "1"));
    assert_true(fx_has_header(r, "Connection", "close"));
    assert_non_null(strstr(fx_body(r), "\"error_type\":\"draining\""));
}

static void an_error_body_is_json_with_message_and_type(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_http(f, "POST", "/embed", "text/plain", "x", NULL, r,
                             RESP),
                     415);
    assert_string_equal(fx_body(r),
                        "{\"error\":\"Content-Type must be application/json "
                        "or application/octet-stream\",\"error_type\":"
                        "\"unsupported_media_type\"}");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(no_cors_headers_without_cors_origin),
        T(an_origin_gets_allow_origin_and_vary),
        T(a_star_origin_has_no_vary),
        T(overload_answers_say_when_to_retry),
        T(an_error_body_is_json_with_message_and_type),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
