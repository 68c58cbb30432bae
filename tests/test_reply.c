/* test_reply.c -- server/http/reply.c: the headers every answer gets and the
 * error bodies -- CORS (Access-Control-Allow-Origin, Vary: Origin unless
 * "*", the preflight's Allow-Methods), none without --cors-origin,
 * Retry-After on 429 and 503, Connection: close while draining, errors as
 * {"error":..., "error_type":...}, X-Request-Id given or made.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "reply.h"
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
    assert_int_equal(
        fx_http(f, "OPTIONS", "/embed", NULL, NULL, NULL, r, RESP), 405);
}

static void an_origin_gets_allow_origin_and_vary(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--cors-origin", "https://a.example", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    assert_int_equal(fx_get(f, "/nope", r, RESP), 404);
    assert_true(
        fx_has_header(r, "Access-Control-Allow-Origin", "https://a.example"));
    assert_true(fx_has_header(r, "Vary", "Origin"));
    /* on the answer itself, where a script reads them */
    assert_true(fx_has_header(r, "Access-Control-Expose-Headers",
                              "X-Tokvec-Shape, X-Tokvec-Dtype, "
                              "X-Request-Id\r"));
    assert_int_equal(
        fx_http(f, "OPTIONS", "/embed", NULL, NULL, NULL, r, RESP), 204);
    assert_true(
        fx_has_header(r, "Access-Control-Allow-Methods", "POST, OPTIONS"));
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
    static const char req[] = "POST /embed HTTP/1.1\r\nHost: localhost\r\n"
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
    assert_int_equal(
        fx_http(f, "POST", "/embed", "text/html", "x", NULL, r, RESP), 415);
    assert_string_equal(fx_body(r),
                        "{\"error\":\"Content-Type 'text/html' is not "
                        "accepted; send application/json (text/plain and "
                        "application/x-www-form-urlencoded are read as JSON "
                        "too) or application/octet-stream (int32 ids, "
                        "X-Tokvec-Shape)\",\"error_type\":"
                        "\"unsupported_media_type\"}");
}

/* The X-Request-Id header value of a response ("" if none). */
static void request_id_of(const char *resp, char *out, size_t cap)
{
    const char *h = strcasestr(resp, "\r\nX-Request-Id: ");
    size_t n = h ? strcspn(h + 16, "\r") : 0;
    snprintf(out, cap, "%.*s", (int)n, h ? h + 16 : "");
}

/* Issue 18, finding 8: every answer carries X-Request-Id -- the client's
 * when it is 1-128 visible ASCII characters, else one made here (16 hex
 * digits, a new one each request). */
static void every_answer_carries_the_request_id_given_or_made(void **state)
{
    fixture *f = *state;
    char r[RESP], id1[256], id2[256];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_http(f, "GET", "/health", NULL, NULL,
                             "X-Request-Id: job-42/a.b\r\n", r, RESP),
                     200);
    assert_true(fx_has_header(r, "X-Request-Id", "job-42/a.b\r"));
    /* errors too */
    assert_int_equal(fx_http(f, "GET", "/nope", NULL, NULL,
                             "X-Request-Id: e1\r\n", r, RESP),
                     404);
    assert_true(fx_has_header(r, "X-Request-Id", "e1\r"));
    assert_int_equal(fx_get(f, "/health", r, RESP), 200);
    request_id_of(r, id1, sizeof id1);
    assert_int_equal(fx_get(f, "/health", r, RESP), 200);
    request_id_of(r, id2, sizeof id2);
    assert_int_equal(strlen(id1), 16);
    assert_int_equal(strspn(id1, "0123456789abcdef"), 16);
    assert_int_equal(strlen(id2), 16);
    assert_string_not_equal(id1, id2);
    /* not kept: a space, a control, over 128 bytes */
    char h[256];
    snprintf(h, sizeof h, "X-Request-Id: %0129d\r\n", 0);
    const char *const bad[] = {"X-Request-Id: a b\r\n",
                               "X-Request-Id: a\tb\r\n", h};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(
            fx_http(f, "GET", "/health", NULL, NULL, bad[i], r, RESP), 200);
        request_id_of(r, id1, sizeof id1);
        assert_int_equal(strlen(id1), 16);
        assert_int_equal(strspn(id1, "0123456789abcdef"), 16);
    }
    /* 128 are kept */
    snprintf(h, sizeof h, "X-Request-Id: %0128d\r\n", 7);
    assert_int_equal(fx_http(f, "GET", "/health", NULL, NULL, h, r, RESP),
                     200);
    request_id_of(r, id1, sizeof id1);
    assert_int_equal(strlen(id1), 128);
    assert_true(reply_request_id_ok("!~"));
    assert_false(reply_request_id_ok(""));
    assert_false(reply_request_id_ok(NULL));
    assert_false(reply_request_id_ok("\xc3\xa9"));
    assert_false(reply_request_id_ok("a\x7f"));
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
        T(every_answer_carries_the_request_id_given_or_made),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
