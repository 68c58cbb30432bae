/* test_deadline.c -- server/http/deadline.c: a request that is not in whole
 * within 2 x request_timeout is cut (even when bytes keep trickling in, so
 * MHD's inactivity limit never fires), one that is stays answered, and
 * --max-connections-per-ip closes a client's connection past the limit
 * until one of its others closes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "server_fixture.h"

#define RESP 65536

static void nap_ms(long ms)
{
    nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* The peer closed (EOF or reset) within ms; 0 if it still holds on. */
static int closed_within(int fd, int ms)
{
    char c;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return 0;
    return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* request_timeout 0.2 s: a request must be in within 0.4 s. Headers sent
 * a byte every 50 ms (never idle for MHD) for up to 5 s are cut. */
static void a_trickled_request_is_cut_at_its_deadline(void **state)
{
    fixture *f = *state;
    const char *const extra[] = {"--request-timeout", "0.2", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    int fd = fx_connect(f->port);
    assert_true(fd >= 0);
    assert_int_equal(fx_send(fd, "GET /health HTTP/1.1\r\nX: ", 25), 0);
    int cut = 0;
    for (int i = 0; i < 100 && !cut; i++) {
        if (fx_send(fd, "a", 1) < 0)
            cut = 1;
        else
            cut = closed_within(fd, 50);
    }
    close(fd);
    assert_true(cut);
}

static void a_request_in_time_is_answered(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--request-timeout", "0.2", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    int fd = fx_connect(f->port);
    assert_true(fd >= 0);
    /* idle for less than request_timeout, then the whole request */
    nap_ms(100);
    static const char req[] =
        "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_int_equal(fx_send(fd, req, sizeof req - 1), 0);
    fx_read_all(fd, r, RESP);
    assert_int_equal(fx_status(r), 200);
    /* the deadline starts again for the next request on the connection */
    nap_ms(100);
    assert_int_equal(fx_send(fd, req, sizeof req - 1), 0);
    fx_read_all(fd, r, RESP);
    assert_int_equal(fx_status(r), 200);
    close(fd);
}

static void connections_past_the_per_ip_limit_are_closed(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--max-connections-per-ip", "1", NULL};
    assert_int_equal(fx_up(f, extra), 0);
    int a = fx_connect(f->port);
    assert_true(a >= 0);
    /* a is counted once MHD has accepted it: it answers */
    static const char req[] =
        "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_int_equal(fx_send(a, req, sizeof req - 1), 0);
    fx_read_all(a, r, RESP);
    assert_int_equal(fx_status(r), 200);
    int b = fx_connect(f->port);
    assert_true(b >= 0);
    assert_true(closed_within(b, 5000));
    close(b);
    close(a);
    /* a's slot is given back when MHD closes it */
    int st = 0;
    for (int i = 0; i < 100 && st != 200; i++) {
        nap_ms(10);
        st = fx_get(f, "/health", r, RESP);
    }
    assert_int_equal(st, 200);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(a_trickled_request_is_cut_at_its_deadline),
        T(a_request_in_time_is_answered),
        T(connections_past_the_per_ip_limit_are_closed),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
