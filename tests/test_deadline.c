/* test_deadline.c -- server/http/deadline.c: a request that is not in whole
 * within 2 x request_timeout is cut (even when bytes keep trickling in, so
 * MHD's inactivity limit never fires), one that is stays answered, and
 * --max-connections-per-ip closes a client's connection past the limit
 * until one of its others closes.
 *
 * The deadline is enforced by the reaper's tick, which has no thread of
 * its own: as in `tokvec serve`, the control loop (server/cli/control.c)
 * runs it from a uv_timer. Each test runs that loop (tv_control_run) on a
 * thread of its own, with SIGTERM, SIGINT and SIGHUP blocked everywhere
 * else as serve.c does, and ends it with a SIGTERM (the drain).
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "control.h"
#include "reaper.h"
#include "server_fixture.h"

#define RESP 65536

static void nap_ms(long ms)
{
    nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* The control loop of the test running now (tests run one at a time). */
static tv_control *loop_ctl;
static pthread_t loop_thread;
static int loop_running, loop_rc = -1;

static void *loop_main(void *arg)
{
    size_t open = 0;
    loop_rc = tv_control_run(loop_ctl, arg, &open);
    return NULL;
}

/* fx_up(extra), then the control loop on its own thread. The signals are
 * blocked first, so that every thread of the server inherits the mask and
 * only the loop's thread takes them. */
static int up(fixture *f, const char *const *extra)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (fx_up(f, extra) < 0 || tv_control_open(&f->cfg, &loop_ctl) < 0)
        return -1;
    if (pthread_create(&loop_thread, NULL, loop_main, f->srv))
        return -1;
    loop_running = 1;
    return 0;
}

/* SIGTERM ends the loop (after its drain), then the server stops. */
static int teardown(void **state)
{
    if (loop_running) {
        kill(getpid(), SIGTERM);
        pthread_join(loop_thread, NULL);
        loop_running = 0;
        assert_int_equal(loop_rc, 0);
    }
    fx_teardown(state);
    tv_control_close(loop_ctl);
    loop_ctl = NULL;
    return 0;
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
    assert_int_equal(up(f, extra), 0);
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

/* The tick is the control loop's: no thread of its own, and still the
 * deadline holds (request_timeout 0.05 s: in within 0.1 s). */
static void the_loop_ticks_the_reaper_without_a_thread_of_its_own(void **state)
{
    fixture *f = *state;
    const char *const extra[] = {"--request-timeout", "0.05", NULL};
    assert_int_equal(up(f, extra), 0);
    assert_int_equal(tv_threads_named("tv-reaper", 1, NULL, 0), 0);
    assert_true(tv_server_tick_ms(f->srv) == 12); /* 100 ms / 8 */
    int fd = fx_connect(f->port);
    assert_true(fd >= 0);
    assert_int_equal(fx_send(fd, "GET /health HTTP/1.1\r\nX: ", 25), 0);
    int cut = 0;
    for (int i = 0; i < 100 && !cut; i++)
        cut = fx_send(fd, "a", 1) < 0 || closed_within(fd, 20);
    close(fd);
    assert_true(cut);
}

static void a_request_in_time_is_answered(void **state)
{
    fixture *f = *state;
    char r[RESP];
    const char *const extra[] = {"--request-timeout", "0.2", NULL};
    assert_int_equal(up(f, extra), 0);
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
    assert_int_equal(up(f, extra), 0);
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
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, teardown)
    const struct CMUnitTest tests[] = {
        T(a_trickled_request_is_cut_at_its_deadline),
        T(the_loop_ticks_the_reaper_without_a_thread_of_its_own),
        T(a_request_in_time_is_answered),
        T(connections_past_the_per_ip_limit_are_closed),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
