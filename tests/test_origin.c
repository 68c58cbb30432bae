/* test_origin.c -- server/http/origin.c and its use by http.c and reply.c
 * (issue 24, finding 6): --cors-origin lists parse (bad entries stop
 * start-up naming the flag); a request without Origin, from its own Host
 * or from a listed origin does work, any other (Origin: null included) is
 * 403 origin_not_allowed on every route that does work while /health and
 * /metrics answer; a listed origin is named in Access-Control-Allow-Origin;
 * "*" allows every origin; a server on a loopback address answers a Host
 * that is no loopback name 403 host_not_allowed (DNS rebinding), one on
 * every interface takes any Host.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "origin.h"
#include "server_fixture.h"

#define RESP 65536

static void cors_origin_lists_parse_and_bad_entries_name_the_flag(void **state)
{
    (void)state;
    tv_origins o;
    char err[512];
    assert_int_equal(tv_origins_parse("", &o, err, sizeof err), 0);
    assert_false(tv_origins_on(&o));
    tv_origins_free(&o);
    assert_int_equal(tv_origins_parse(" https://A.example ,http://b.example:"
                                      "8080,*,http://[::1]:9",
                                      &o, err, sizeof err),
                     0);
    assert_true(tv_origins_on(&o));
    assert_int_equal(o.n, 3);
    assert_true(o.any);
    assert_string_equal(o.list[0], "https://a.example");
    assert_string_equal(o.list[1], "http://b.example:8080");
    assert_string_equal(o.list[2], "http://[::1]:9");
    tv_origins_free(&o);
    /* an Origin header never looks like these: they could never match */
    static const char *const bad[] = {"https://a.example/",
                                      "https://a.example/app",
                                      "null",
                                      "a.example",
                                      "https://",
                                      "https://a.example:",
                                      "https://a:x",
                                      "https://a,,https://b",
                                      "https://u@a.example",
                                      "https://a b",
                                      "1http://a",
                                      "https://[::1",
                                      "https://a,"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(tv_origins_parse(bad[i], &o, err, sizeof err), -1);
        assert_non_null(strstr(err, "--cors-origin"));
        assert_false(tv_origins_on(&o));
        tv_origins_free(&o);
    }
    assert_int_equal(
        tv_origins_parse("https://a.example/", &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "'https://a.example/' is not an origin"));
}

static void an_origin_is_absent_same_listed_or_refused(void **state)
{
    (void)state;
    tv_origins none, some, star;
    const char *m = "x";
    char err[256];
    assert_int_equal(tv_origins_parse("", &none, err, sizeof err), 0);
    assert_int_equal(
        tv_origins_parse("https://app.example", &some, err, sizeof err), 0);
    assert_int_equal(tv_origins_parse("*", &star, err, sizeof err), 0);
    assert_int_equal(tv_origin_check(&none, NULL, "localhost:8080", &m),
                     TV_ORIGIN_ABSENT);
    assert_null(m);
    /* the page tokvec serves at /, or behind a TLS proxy: host[:port]
     * is the Host, whatever the scheme and case */
    assert_int_equal(tv_origin_check(&none, "http://localhost:8080",
                                     "localhost:8080", &m),
                     TV_ORIGIN_SAME);
    assert_int_equal(tv_origin_check(&none, "https://Tokvec.example",
                                     "tokvec.example", NULL),
                     TV_ORIGIN_SAME);
    assert_int_equal(tv_origin_check(&none, "http://localhost:8081",
                                     "localhost:8080", NULL),
                     TV_ORIGIN_REFUSED);
    assert_int_equal(tv_origin_check(&none, "http://localhost:8080", NULL,
                                     NULL),
                     TV_ORIGIN_REFUSED);
    assert_int_equal(tv_origin_check(&none, "null", "null", NULL),
                     TV_ORIGIN_REFUSED);
    assert_int_equal(tv_origin_check(&none, "", "", NULL), TV_ORIGIN_REFUSED);
    assert_int_equal(tv_origin_check(&some, "https://app.example",
                                     "localhost:8080", &m),
                     TV_ORIGIN_LISTED);
    assert_string_equal(m, "https://app.example");
    assert_int_equal(tv_origin_check(&some, "https://evil.example",
                                     "localhost:8080", &m),
                     TV_ORIGIN_REFUSED);
    assert_null(m);
    assert_int_equal(tv_origin_check(&some, "null", "localhost", NULL),
                     TV_ORIGIN_REFUSED);
    assert_int_equal(tv_origin_check(&star, "null", "localhost", &m),
                     TV_ORIGIN_LISTED);
    assert_string_equal(m, "*");
    tv_origins_free(&none);
    tv_origins_free(&some);
    tv_origins_free(&star);
}

static void loopback_hosts_are_its_names_and_addresses(void **state)
{
    (void)state;
    static const char *const yes[] = {
        "localhost", "LocalHost:8080", "127.0.0.1",           "127.1.2.3:80",
        "[::1]",     "[::1]:8080",     "[::ffff:127.0.0.1]:1"};
    static const char *const no[] = {"",
                                     "evil.example",
                                     "localhost.evil.example",
                                     "::1",
                                     "127.0.0.1.nip.io",
                                     "128.0.0.1",
                                     "[::2]:8080",
                                     "localhost:",
                                     "localhost:123456",
                                     "[::1",
                                     "[::1]x",
                                     "localhost:80x",
                                     "0.0.0.0",
                                     "[::ffff:10.0.0.1]",
                                     "127.1"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        assert_true(tv_host_is_loopback(yes[i]));
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_false(tv_host_is_loopback(no[i]));
    assert_false(tv_host_is_loopback(NULL));
    assert_true(tv_address_is_loopback("127.0.0.1"));
    assert_true(tv_address_is_loopback("127.8.9.10"));
    assert_true(tv_address_is_loopback("::1"));
    assert_true(tv_address_is_loopback("::ffff:127.0.0.1"));
    assert_false(tv_address_is_loopback("0.0.0.0"));
    assert_false(tv_address_is_loopback("::"));
    assert_false(tv_address_is_loopback("10.0.0.1"));
}

/* A text/plain POST: a "simple" request a page may send anywhere. */
static int simple_post(fixture *f, const char *path, const char *body,
                       const char *origin, char *r)
{
    char h[256] = "";
    if (origin)
        snprintf(h, sizeof h, "Origin: %s\r\n", origin);
    return fx_http(f, "POST", path, "text/plain", body, h, r, RESP);
}

static int get_from(fixture *f, const char *path, const char *origin, char *r)
{
    char h[256];
    snprintf(h, sizeof h, "Origin: %s\r\n", origin);
    return fx_http(f, "GET", path, NULL, NULL, h, r, RESP);
}

static void a_cross_site_request_is_403_naming_cors_origin(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    static const char *const from[] = {"https://evil.example", "null"};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(
            simple_post(f, "/embed", "{\"inputs\":[1]}", from[i], r), 403);
        assert_non_null(
            strstr(fx_body(r), "\"error_type\":\"origin_not_allowed\""));
        assert_non_null(strstr(fx_body(r), "--cors-origin"));
        assert_int_equal(simple_post(f, "/similar", "{\"id\":1}", from[i], r),
                         403);
        assert_int_equal(simple_post(f, "/tokenize", "{\"inputs\":\"a\"}",
                                     from[i], r),
                         403);
        assert_int_equal(
            simple_post(f, "/decode", "{\"ids\":[1]}", from[i], r), 403);
        assert_int_equal(get_from(f, "/tokens/1", from[i], r), 403);
        assert_int_equal(get_from(f, "/info", from[i], r), 403);
        /* the probes and the public pages change nothing: answered */
        assert_int_equal(get_from(f, "/health", from[i], r), 200);
        assert_int_equal(get_from(f, "/metrics", from[i], r), 200);
        assert_int_equal(get_from(f, "/openapi.json", from[i], r), 200);
    }
    assert_non_null(strstr(fx_body(r), "\"openapi\""));
    assert_int_equal(fx_get(f, "/metrics", r, RESP), 200);
    assert_non_null(strstr(fx_body(r), "route=\"/embed\",code=\"403\"}"));
}

static void a_request_without_origin_or_from_its_own_host_does_work(
    void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}", NULL, r),
                     200);
    /* fx_http sends Host: localhost -- the page tokvec serves at / */
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}",
                                 "http://localhost", r),
                     200);
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}",
                                 "https://localhost", r),
                     200);
    assert_int_equal(get_from(f, "/tokens/1", "http://LOCALHOST", r), 200);
    /* another port is another origin */
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}",
                                 "http://localhost:1", r),
                     403);
    assert_false(fx_has_header(r, "Access-Control-Allow-Origin", NULL));
}

static void listed_origins_are_allowed_and_named_in_allow_origin(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--cors-origin",
                                 "https://a.example, https://b.example", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}",
                                 "https://b.example", r),
                     200);
    assert_true(fx_has_header(r, "Access-Control-Allow-Origin",
                              "https://b.example\r"));
    assert_true(fx_has_header(r, "Vary", "Origin"));
    assert_int_equal(get_from(f, "/info", "https://a.example", r), 200);
    assert_true(fx_has_header(r, "Access-Control-Allow-Origin",
                              "https://a.example\r"));
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}",
                                 "https://c.example", r),
                     403);
    assert_non_null(strstr(fx_body(r), "origin_not_allowed"));
    assert_false(fx_has_header(r, "Access-Control-Allow-Origin", NULL));
    /* the preflight too */
    const char *pre = "Origin: https://c.example\r\n"
                      "Access-Control-Request-Method: POST\r\n";
    assert_int_equal(fx_http(f, "OPTIONS", "/embed", NULL, NULL, pre, r, RESP),
                     403);
    pre = "Origin: https://a.example\r\n"
          "Access-Control-Request-Method: POST\r\n";
    assert_int_equal(fx_http(f, "OPTIONS", "/embed", NULL, NULL, pre, r, RESP),
                     204);
    assert_true(fx_has_header(r, "Access-Control-Allow-Origin",
                              "https://a.example\r"));
    /* without Origin: none of them is named, the answer varies by Origin */
    assert_int_equal(fx_get(f, "/health", r, RESP), 200);
    assert_false(fx_has_header(r, "Access-Control-Allow-Origin", NULL));
    assert_true(fx_has_header(r, "Vary", "Origin"));
}

/* With CORS on, every route answers a preflight with its own methods; an
 * origin not listed is refused on the routes that do work (every POST
 * route and the keyed GETs), not on the public ones. */
static void every_route_answers_a_preflight_with_its_methods(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--cors-origin", "https://a.example", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    static const struct {
        const char *path;
        int post, work;
    } routes[] = {
        {"/embed", 1, 1},  {"/v1/embeddings", 1, 1}, {"/tokenize", 1, 1},
        {"/decode", 1, 1}, {"/similar", 1, 1},       {"/tokens/1", 0, 1},
        {"/info", 0, 1},   {"/v1/models", 0, 1},     {"/health", 0, 0},
        {"/ready", 0, 0},  {"/metrics", 0, 0},       {"/openapi.json", 0, 0},
        {"/", 0, 0},       {"/docs", 0, 0},
    };
    const char *good = "Origin: https://a.example\r\n"
                       "Access-Control-Request-Method: GET\r\n";
    const char *bad = "Origin: https://c.example\r\n"
                      "Access-Control-Request-Method: GET\r\n";
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        const char *methods = routes[i].post ? "POST, OPTIONS\r"
                                             : "GET, HEAD, OPTIONS\r";
        int st = fx_http(f, "OPTIONS", routes[i].path, NULL, NULL, good, r,
                         RESP);
        if (st != 204 ||
            !fx_has_header(r, "Access-Control-Allow-Methods", methods))
            fail_msg("OPTIONS %s: %d %.200s", routes[i].path, st, r);
        st = fx_http(f, "OPTIONS", routes[i].path, NULL, NULL, bad, r, RESP);
        if (st != (routes[i].work ? 403 : 204))
            fail_msg("OPTIONS %s from another origin: %d", routes[i].path, st);
    }
    /* a path that is no route: no preflight, 404 */
    assert_int_equal(fx_http(f, "OPTIONS", "/nope", NULL, NULL, good, r, RESP),
                     404);
}

static void a_star_allows_every_origin(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--cors-origin", "*", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}",
                                 "https://any.example", r),
                     200);
    assert_true(fx_has_header(r, "Access-Control-Allow-Origin", "*\r"));
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}", "null", r),
                     200);
}

static void a_bad_cors_origin_stops_start_up_naming_it(void **state)
{
    fixture *f = *state;
    char err[512] = "";
    tv_server *s = NULL;
    const char *const extra[] = {"--cors-origin", "https://a.example/", NULL};
    assert_int_equal(fx_init(f), 0);
    assert_int_equal(fx_config(f, extra), 0);
    int rc = tv_server_start(&f->cfg, &s, err, sizeof err);
    assert_int_equal(rc, TV_SERVER_E_INPUT);
    assert_null(s);
    assert_non_null(strstr(err, "--cors-origin: 'https://a.example/'"));
}

/* GET path with Host host (NULL: an HTTP/1.0 request without one). */
static int get_with_host(fixture *f, const char *method, const char *host,
                         char *r)
{
    char req[512];
    if (host)
        snprintf(req, sizeof req,
                 "%s /embed HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
                 "Content-Type: application/json\r\nContent-Length: 14\r\n"
                 "\r\n{\"inputs\":[1]}",
                 method, host);
    else
        snprintf(req, sizeof req,
                 "%s /embed HTTP/1.0\r\nContent-Type: application/json\r\n"
                 "Content-Length: 14\r\n\r\n{\"inputs\":[1]}",
                 method);
    return fx_raw(f, req, strlen(req), r, RESP);
}

static void a_loopback_server_refuses_a_host_not_of_the_loopback(void **state)
{
    fixture *f = *state;
    char r[RESP], host[64];
    assert_int_equal(fx_up(f, NULL), 0);
    /* DNS rebinding: evil.example now resolves to 127.0.0.1, and its
     * page is "same origin" with what it reaches */
    assert_int_equal(get_with_host(f, "POST", "evil.example:8080", r), 403);
    assert_non_null(strstr(fx_body(r), "\"error_type\":\"host_not_allowed\""));
    assert_non_null(strstr(fx_body(r), "evil.example:8080"));
    /* every route: the probes use 127.0.0.1 or localhost */
    static const char req[] = "GET /health HTTP/1.1\r\nHost: evil.example\r\n"
                              "Connection: close\r\n\r\n";
    assert_int_equal(fx_raw(f, req, sizeof req - 1, r, RESP), 403);
    snprintf(host, sizeof host, "127.0.0.1:%d", f->port);
    assert_int_equal(get_with_host(f, "POST", host, r), 200);
    snprintf(host, sizeof host, "[::1]:%d", f->port);
    assert_int_equal(get_with_host(f, "POST", host, r), 200);
    assert_int_equal(get_with_host(f, "POST", "LOCALHOST", r), 200);
    assert_int_equal(get_with_host(f, "POST", NULL, r), 200);
}

static void a_server_on_every_interface_takes_any_host(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--host", "0.0.0.0", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    assert_int_equal(get_with_host(f, "POST", "tokvec.example", r), 200);
    /* the Origin check still holds */
    assert_int_equal(simple_post(f, "/embed", "{\"inputs\":[1]}",
                                 "https://evil.example", r),
                     403);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            cors_origin_lists_parse_and_bad_entries_name_the_flag),
        cmocka_unit_test(an_origin_is_absent_same_listed_or_refused),
        cmocka_unit_test(loopback_hosts_are_its_names_and_addresses),
        T(a_cross_site_request_is_403_naming_cors_origin),
        T(a_request_without_origin_or_from_its_own_host_does_work),
        T(listed_origins_are_allowed_and_named_in_allow_origin),
        T(a_star_allows_every_origin),
        T(every_route_answers_a_preflight_with_its_methods),
        T(a_bad_cors_origin_stops_start_up_naming_it),
        T(a_loopback_server_refuses_a_host_not_of_the_loopback),
        T(a_server_on_every_interface_takes_any_host),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
