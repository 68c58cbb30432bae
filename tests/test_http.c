/* test_http.c -- server/http/http.c: the MHD handler and the server's
 * lifecycle, through a server started in this process on an ephemeral
 * port and spoken to over a socket (server_fixture.h): a route answers, an
 * unknown path is 404 and a wrong method 405 (with Allow), auth is checked
 * before the body (the scheme "Bearer" in any case), a Content-Length over
 * max_body_bytes is refused before the body is sent, a chunked body past it is
 * refused at once and the connection closed, /openapi.json names the listen
 * address, a body sent in pieces is put together, draining turns /ready into
 * 503 with Connection: close; tv_server_start's codes (bad input, the system
 * refused, out of memory at every allocation it makes) and the exit status
 * each maps to.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdatomic.h>

#include "alloc.h"
#include "server_fixture.h"

#define RESP 65536

static int teardown(void **state)
{
    tv_alloc_fault = NULL;
    return fx_teardown(state);
}

static void health_answers_200_ok(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_get(f, "/health", r, RESP), 200);
    assert_string_equal(fx_body(r), "{\"status\":\"ok\"}");
    assert_true(fx_has_header(r, "Content-Type", "application/json"));
}

static void unknown_path_is_404_naming_the_routes(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_get(f, "/nope", r, RESP), 404);
    assert_non_null(strstr(fx_body(r), "\"error_type\":\"not_found\""));
    assert_non_null(strstr(fx_body(r), "POST /embed"));
}

static void wrong_method_is_405_with_allow(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_get(f, "/embed", r, RESP), 405);
    assert_true(fx_has_header(r, "Allow", "POST"));
    assert_int_equal(fx_http(f, "POST", "/info", "application/json", "{}",
                             NULL, r, RESP),
                     405);
    assert_true(fx_has_header(r, "Allow", "GET, HEAD"));
    assert_non_null(strstr(fx_body(r), "method_not_allowed"));
}

static void info_and_embed_need_the_api_key_health_does_not(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--api-key", "s3cret", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    assert_int_equal(fx_get(f, "/info", r, RESP), 401);
    assert_true(fx_has_header(r, "WWW-Authenticate", "Bearer"));
    assert_int_equal(fx_http(f, "GET", "/info", NULL, NULL,
                             "Authorization: Bearer wrong\r\n", r, RESP),
                     401);
    assert_int_equal(fx_http(f, "GET", "/info", NULL, NULL,
                             "Authorization: Bearer s3cret\r\n", r, RESP),
                     200);
    assert_int_equal(fx_get(f, "/health", r, RESP), 200);
}

/* Issue 24, finding 11: RFC 9110 makes the scheme case-insensitive (and
 * puts one or more spaces after it); the key itself is exact. */
static void the_bearer_scheme_is_any_case_the_key_exact(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--api-key", "s3cret", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    static const char *const ok[] = {"Authorization: bearer s3cret\r\n",
                                     "Authorization: BEARER s3cret\r\n",
                                     "Authorization: bEaReR  s3cret\r\n"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        assert_int_equal(
            fx_http(f, "GET", "/info", NULL, NULL, ok[i], r, RESP), 200);
    static const char *const bad[] = {"Authorization: bearer S3CRET\r\n",
                                      "Authorization: bearers3cret\r\n",
                                      "Authorization: Basic s3cret\r\n",
                                      "Authorization: bearer s3cre\r\n",
                                      "Authorization: bearer s3cret2\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(
            fx_http(f, "GET", "/info", NULL, NULL, bad[i], r, RESP), 401);
}

/* The headers alone: the answer comes before a byte of the body. */
static void content_length_over_max_body_bytes_is_413_before_the_body(
    void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--max-body-bytes", "100", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    static const char req[] = "POST /embed HTTP/1.1\r\nHost: localhost\r\n"
                              "Content-Type: application/json\r\n"
                              "Content-Length: 101\r\n\r\n";
    int fd = fx_connect(f->port);
    assert_true(fd >= 0);
    assert_int_equal(fx_send(fd, req, sizeof req - 1), 0);
    fx_read_all(fd, r, RESP); /* the server answers and closes */
    close(fd);
    assert_int_equal(fx_status(r), 413);
    assert_non_null(strstr(fx_body(r), "payload_too_large"));
    /* At the limit, the same request is read and answered. */
    char body[101];
    memset(body, ' ', 100);
    memcpy(body, "{\"inputs\":[1]}", 14);
    body[100] = '\0';
    assert_int_equal(fx_http(f, "POST", "/embed", "application/json", body,
                             NULL, r, RESP),
                     200);
}

/* Issue 18, finding 9: a chunked body is refused the moment it passes
 * max_body_bytes, and the connection closed -- the client, sending 17 MB
 * as fast as the socket takes it, sees the 413 long before it is done
 * (before, the server read all 17 MB and dropped them, then answered). */
static void a_chunked_body_past_the_limit_is_413_at_once_and_closed(
    void **state)
{
    fixture *f = *state;
    const char *const extra[] = {"--max-body-bytes", "1024", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    static const char head[] = "POST /embed HTTP/1.1\r\nHost: localhost\r\n"
                               "Content-Type: application/json\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    static char chunk[7 + 65536 + 2];
    memcpy(chunk, "10000\r\n", 7);
    memset(chunk + 7, ' ', 65536);
    memcpy(chunk + 7 + 65536, "\r\n", 2);
    const size_t total = (size_t)17 << 20, clen = 7 + 65536 + 2;
    int fd = fx_connect(f->port);
    assert_true(fd >= 0);
    assert_int_equal(fx_send(fd, head, sizeof head - 1), 0);
    size_t sent = 0, off = 0;
    int answered = 0;
    while (sent < total && !answered) {
        struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
        assert_true(poll(&p, 1, 5000) > 0);
        if (p.revents & (POLLIN | POLLERR | POLLHUP)) {
            answered = 1;
            break;
        }
        ssize_t w = send(fd, chunk + off, clen - off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w < 0)
            break; /* reset: the server closed, its answer is read below */
        sent += (size_t)w;
        off = (off + (size_t)w) % clen;
    }
    char r[RESP];
    fx_read_all(fd, r, RESP);
    close(fd);
    assert_int_equal(fx_status(r), 413);
    assert_true(fx_has_header(r, "Connection", "close"));
    assert_non_null(strstr(fx_body(r), "payload_too_large"));
    /* 1 KiB read, then at most the socket buffers' worth */
    assert_true(sent < total / 2);
}

/* Issue 18, finding 10: /openapi.json's servers is where the server
 * listens (the actual port), or "/" on every interface. */
static void openapi_servers_is_the_listen_address(void **state)
{
    fixture *f = *state;
    char r[RESP], want[64];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_get(f, "/openapi.json", r, RESP), 200);
    snprintf(want, sizeof want, "\"url\": \"http://127.0.0.1:%d\"", f->port);
    assert_non_null(strstr(fx_body(r), want));
    assert_null(strstr(fx_body(r), ":8080\""));
    assert_non_null(strstr(fx_body(r), "\"openapi\": \"3.1.0\""));
    fx_down(f);
    const char *const any[] = {"--host", "0.0.0.0", NULL};
    assert_int_equal(fx_up(f, any), 0);
    assert_int_equal(fx_get(f, "/openapi.json", r, RESP), 200);
    assert_non_null(strstr(fx_body(r), "\"servers\": [\n  {\n   \"url\": "
                                       "\"/\"\n  }\n ]"));
}

static void a_body_sent_in_pieces_is_put_together(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    static const char head[] = "POST /embed HTTP/1.1\r\nHost: localhost\r\n"
                               "Connection: close\r\n"
                               "Content-Type: application/json\r\n"
                               "Content-Length: 24\r\n\r\n";
    static const char body[] = "{\"inputs\":[[1,2],[3,4]]}"; /* 24 bytes */
    int fd = fx_connect(f->port);
    assert_true(fd >= 0);
    assert_int_equal(fx_send(fd, head, sizeof head - 1), 0);
    for (size_t i = 0; i < sizeof body - 1; i += 5) {
        size_t n = sizeof body - 1 - i < 5 ? sizeof body - 1 - i : 5;
        assert_int_equal(fx_send(fd, body + i, n), 0);
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    fx_read_all(fd, r, RESP);
    close(fd);
    assert_int_equal(fx_status(r), 200);
    /* token 1 + position 0, ..., token 4 + position 1 */
    assert_non_null(strstr(fx_body(r), "\"shape\":[2,2,4]"));
    assert_non_null(strstr(fx_body(r), "5.25,6.5,7.75]"));
    assert_non_null(strstr(fx_body(r), "18.25,19.5,20.75]]]"));
}

static void draining_makes_ready_503_with_connection_close(void **state)
{
    fixture *f = *state;
    char r[RESP];
    assert_int_equal(fx_up(f, NULL), 0);
    int fd = fx_connect_accepted(f->port); /* open before the drain */
    assert_true(fd >= 0);
    assert_int_equal(fx_get(f, "/ready", r, RESP), 200);
    tv_server_drain_begin(f->srv);
    static const char req[] = "GET /ready HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_int_equal(fx_send(fd, req, sizeof req - 1), 0);
    fx_read_all(fd, r, RESP);
    close(fd);
    assert_int_equal(fx_status(r), 503);
    assert_true(fx_has_header(r, "Connection", "close"));
    assert_string_equal(fx_body(r), "{\"status\":\"draining\"}");
    /* The listening socket is closed: a new connection is refused. */
    assert_int_equal(fx_connect(f->port), -1);
}

static void a_missing_table_is_bad_input_exit_2(void **state)
{
    fixture *f = *state;
    char err[512] = "";
    tv_server *s = NULL;
    assert_int_equal(fx_init(f), 0);
    assert_int_equal(fx_config(f, NULL), 0);
    free(f->cfg.table);
    f->cfg.table = strdup("/nonexistent/t.safetensors");
    int rc = tv_server_start(&f->cfg, &s, err, sizeof err);
    assert_int_equal(rc, TV_SERVER_E_INPUT);
    assert_null(s);
    assert_non_null(strstr(err, "/nonexistent/t.safetensors"));
    assert_int_equal(tv_server_exit_status(rc), 2);
}

static void a_host_that_is_no_address_is_bad_input(void **state)
{
    fixture *f = *state;
    char err[512] = "";
    tv_server *s = NULL;
    const char *const extra[] = {"--host", "localhost", NULL};
    assert_int_equal(fx_init(f), 0);
    assert_int_equal(fx_config(f, extra), 0);
    assert_int_equal(tv_server_start(&f->cfg, &s, err, sizeof err),
                     TV_SERVER_E_INPUT);
    assert_non_null(strstr(err, "--host 'localhost'"));
}

static void a_port_in_use_is_a_system_error_exit_1(void **state)
{
    fixture *f = *state;
    fixture g;
    char err[512] = "";
    tv_server *s = NULL;
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_init(&g), 0);
    assert_int_equal(fx_config(&g, NULL), 0);
    g.cfg.port = f->port;
    int rc = tv_server_start(&g.cfg, &s, err, sizeof err);
    fx_down(&g);
    assert_int_equal(rc, TV_SERVER_E_SYSTEM);
    assert_null(s);
    assert_non_null(strstr(err, "cannot listen on 127.0.0.1:"));
    assert_int_equal(tv_server_exit_status(rc), 1);
}

static atomic_long allow; /* allocations left before the hook fails one */

static int fail_when_spent(size_t n)
{
    (void)n;
    return atomic_fetch_sub(&allow, 1) <= 0;
}

/* Every allocation tv_server_start makes through alloc.h fails in turn:
 * each is out of memory (exit 1), never bad input; with enough, it
 * starts. */
static void out_of_memory_at_start_is_nomem_not_bad_input(void **state)
{
    fixture *f = *state;
    assert_int_equal(fx_init(f), 0);
    assert_int_equal(fx_config(f, NULL), 0);
    int k, failures = 0;
    for (k = 0; k < 50; k++) {
        char err[512] = "";
        tv_server *s = NULL;
        atomic_store(&allow, k);
        tv_alloc_fault = fail_when_spent;
        int rc = tv_server_start(&f->cfg, &s, err, sizeof err);
        tv_alloc_fault = NULL;
        if (rc == 0) {
            tv_server_stop(s);
            break;
        }
        assert_int_equal(rc, TV_SERVER_E_NOMEM);
        assert_string_equal(err, "out of memory");
        assert_int_equal(tv_server_exit_status(rc), 1);
        failures++;
    }
    assert_true(k < 50);
    assert_true(failures >= 4); /* server, table ref, buffers, listeners */
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, teardown)
    const struct CMUnitTest tests[] = {
        T(health_answers_200_ok),
        T(unknown_path_is_404_naming_the_routes),
        T(wrong_method_is_405_with_allow),
        T(info_and_embed_need_the_api_key_health_does_not),
        T(the_bearer_scheme_is_any_case_the_key_exact),
        T(content_length_over_max_body_bytes_is_413_before_the_body),
        T(a_chunked_body_past_the_limit_is_413_at_once_and_closed),
        T(openapi_servers_is_the_listen_address),
        T(a_body_sent_in_pieces_is_put_together),
        T(draining_makes_ready_503_with_connection_close),
        T(a_missing_table_is_bad_input_exit_2),
        T(a_host_that_is_no_address_is_bad_input),
        T(a_port_in_use_is_a_system_error_exit_1),
        T(out_of_memory_at_start_is_nomem_not_bad_input),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
