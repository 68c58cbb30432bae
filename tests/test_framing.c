/* test_framing.c -- server/http/framing.c: framing refused before any body is
 * read, each with Connection: close -- a URI over URI_MAX bytes or with
 * more than QUERY_PARAMS_MAX parameters (414), a NUL in the request line,
 * two Hosts or none in HTTP/1.1, two Content-Lengths, Content-Length with
 * Transfer-Encoding, Transfer-Encoding in HTTP/1.0, whitespace before a
 * colon (400), a Transfer-Encoding other than chunked (501); "%00" in a
 * path stays as it is; well-formed requests pass (chunked, HTTP/1.0
 * without Host).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "framing.h"
#include "server_fixture.h"

#define RESP 65536

/* Sends raw (a string), expects status and Connection: close. */
static void refused(fixture *f, const char *raw, int status, const char *says)
{
    char r[RESP];
    assert_int_equal(fx_raw(f, raw, strlen(raw), r, RESP), status);
    assert_true(fx_has_header(r, "Connection", "close"));
    if (says)
        assert_non_null(strstr(fx_body(r), says));
}

static void a_uri_over_uri_max_is_414(void **state)
{
    fixture *f = *state;
    size_t n = URI_MAX + 64;
    char *raw = malloc(n + 64);
    assert_non_null(raw);
    int k = snprintf(raw, n + 64, "GET /health?a=");
    memset(raw + k, 'x', URI_MAX);
    snprintf(raw + k + URI_MAX, 64, " HTTP/1.1\r\nHost: localhost\r\n\r\n");
    refused(f, raw, 414, "over 8192 bytes");
    free(raw);
}

static void more_than_query_params_max_parameters_is_414(void **state)
{
    fixture *f = *state;
    char raw[2048] = "GET /health?";
    for (int i = 0; i <= QUERY_PARAMS_MAX; i++)
        strcat(raw, i ? "&p=1" : "p=1");
    strcat(raw, " HTTP/1.1\r\nHost: localhost\r\n\r\n");
    refused(f, raw, 414, "query parameters");
    /* QUERY_PARAMS_MAX of them pass */
    char ok[2048] = "GET /health?";
    for (int i = 0; i < QUERY_PARAMS_MAX; i++)
        strcat(ok, i ? "&p=1" : "p=1");
    strcat(ok, " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    char r[RESP];
    assert_int_equal(fx_raw(f, ok, strlen(ok), r, RESP), 200);
}

static void a_nul_in_the_request_line_is_400(void **state)
{
    fixture *f = *state;
    static const char raw[] =
        "GET /hea\0lth HTTP/1.1\r\nHost: localhost\r\n\r\n";
    char r[RESP];
    assert_int_equal(fx_raw(f, raw, sizeof raw - 1, r, RESP), 400);
    assert_non_null(strstr(fx_body(r), "NUL byte in the request line"));
}

static void host_must_be_there_once_in_http_1_1(void **state)
{
    fixture *f = *state;
    refused(f, "GET /health HTTP/1.1\r\n\r\n", 400, "without Host");
    refused(f, "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400,
            "more than one Host");
    char r[RESP];
    static const char ok[] = "GET /health HTTP/1.0\r\n\r\n";
    assert_int_equal(fx_raw(f, ok, sizeof ok - 1, r, RESP), 200);
}

static void body_length_must_be_said_one_way_once(void **state)
{
    fixture *f = *state;
    refused(f,
            "POST /embed HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n"
            "Content-Length: 2\r\n\r\n{}",
            400, "more than one Content-Length");
    refused(f,
            "POST /embed HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n"
            "Transfer-Encoding: chunked\r\n\r\n",
            400, "both Content-Length and Transfer-Encoding");
    refused(f, "POST /embed HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            400, "Transfer-Encoding in an HTTP/1.0 request");
    refused(
        f,
        "POST /embed HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n"
        "\r\n",
        501, "exactly \\\"chunked\\\"");
}

static void whitespace_before_a_colon_is_400(void **state)
{
    fixture *f = *state;
    refused(f, "GET /health HTTP/1.1\r\nHost : t\r\n\r\n", 400, "bad framing");
}

static void a_chunked_body_is_read(void **state)
{
    fixture *f = *state;
    static const char raw[] =
        "POST /embed HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        "\r\n8\r\n{\"inputs\r\n6\r\n\":[1]}\r\n0\r\n\r\n";
    char r[RESP];
    assert_int_equal(fx_raw(f, raw, sizeof raw - 1, r, RESP), 200);
    assert_non_null(strstr(fx_body(r), "\"shape\":[1,1,4]"));
}

/* A decoded NUL would end the path early: "/tokens/1%00x" must not read as
 * "/tokens/1". */
static void percent_00_stays_in_the_path(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_get(f, "/tokens/1%00x", r, RESP), 400);
    assert_int_equal(fx_get(f, "/tok%65ns/1", r, RESP), 200);
}

/* Header names are tokens: every token character passes, each other
 * printable byte (and DEL, and bytes over 0x7f) is refused; a CR inside
 * a value and an empty name are refused. */
static void header_names_are_tokens_and_values_hold_no_cr(void **state)
{
    fixture *f = *state;
    char raw[512], r[RESP];
    snprintf(raw, sizeof raw,
             "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: "
             "close\r\nX-aZ09!#$%%&'*+-.^_`|~: 1\r\n\r\n");
    assert_int_equal(fx_raw(f, raw, strlen(raw), r, RESP), 200);
    static const char notoken[] = "\"(),/;<=>?@[\\]{}\x7f\x80\xff";
    for (const char *c = notoken; *c; c++) {
        snprintf(raw, sizeof raw,
                 "GET /health HTTP/1.1\r\nHost: t\r\nX-%c: 1\r\n\r\n", *c);
        int st = fx_raw(f, raw, strlen(raw), r, RESP);
        if (st != 400)
            fail_msg("header name with byte 0x%02x: %d", (unsigned char)*c,
                     st);
    }
    refused(f, "GET /health HTTP/1.1\r\nHost: t\r\nX-A: 1\r2\r\n\r\n", 400,
            NULL);
    refused(f, "GET /health HTTP/1.1\r\nHost: t\r\n: 1\r\n\r\n", 400, NULL);
}

/* Percent escapes decode in either case ("%4A", "%4a"); "%", "%4", "%G1"
 * and "%00" stay as they are; '?' after the query's '?' and '&' before it
 * are text. */
static void percent_escapes_decode_in_either_case(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_get(f, "/tokens/%31%3A", r, RESP), 400);
    assert_int_equal(fx_get(f, "/tokens/%31", r, RESP), 200);
    assert_int_equal(fx_get(f, "/%74%4F%6bens/%32", r, RESP), 404);
    assert_int_equal(fx_get(f, "/%74%6F%6b%65%6E%73/%32", r, RESP), 200);
    assert_int_equal(fx_get(f, "/%74%6f%6B%65%6e%73/%32", r, RESP), 200);
    assert_int_equal(fx_get(f, "/tokens/2%", r, RESP), 400);
    assert_int_equal(fx_get(f, "/tokens/2%4", r, RESP), 400);
    assert_int_equal(fx_get(f, "/tokens/2%G1", r, RESP), 400);
    assert_int_equal(fx_get(f, "/tokens/2%g1", r, RESP), 400);
    /* a second '?' is part of the value, as its escape is */
    int st = fx_http(f, "GET", "/tokens/3?dtype=float16%3Fx", NULL, NULL,
                     "Accept: application/x-npy\r\n", r, RESP);
    char body[512];
    snprintf(body, sizeof body, "%s", fx_body(r));
    assert_int_equal(fx_http(f, "GET", "/tokens/3?dtype=float16?x", NULL, NULL,
                             "Accept: application/x-npy\r\n", r, RESP),
                     st);
    assert_string_equal(fx_body(r), body);
    assert_int_equal(fx_get(f, "/tokens&/3?dtype=float32&a", r, RESP), 404);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup_up, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(a_uri_over_uri_max_is_414),
        T(more_than_query_params_max_parameters_is_414),
        T(a_nul_in_the_request_line_is_400),
        T(host_must_be_there_once_in_http_1_1),
        T(body_length_must_be_said_one_way_once),
        T(whitespace_before_a_colon_is_400),
        T(a_chunked_body_is_read),
        T(percent_00_stays_in_the_path),
        T(header_names_are_tokens_and_values_hold_no_cr),
        T(percent_escapes_decode_in_either_case),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
