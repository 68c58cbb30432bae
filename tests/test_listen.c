/* test_listen.c -- server/http/listen.c: the Unix socket serves the same
 * routes (whatever Host a proxy there sends) and its file goes with the
 * server; a stale socket file is replaced, a file that is no socket is bad
 * input and a socket another server accepts on is refused; the threads are
 * named tv-http-N, tv-unix-N (and the pool's: tv-work-N; the reaper has
 * no thread, control.c's loop ticks it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <sys/un.h>

#include "server_fixture.h"

#define RESP 65536

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    *state = f;
    return f && fx_init(f) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    fx_down(*state);
    free(*state);
    return 0;
}

static void sock_path(fixture *f, char *p, size_t n)
{
    snprintf(p, n, "%s/s.sock", f->dir);
}

static int unix_connect(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return -1;
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void the_unix_socket_serves_and_goes_with_the_server(void **state)
{
    fixture *f = *state;
    char path[100], r[RESP];
    sock_path(f, path, sizeof path);
    const char *const extra[] = {"--unix-socket", path, NULL};
    assert_int_equal(fx_config(f, extra), 0);
    assert_int_equal(fx_start(f), 0);
    int fd = unix_connect(path);
    assert_true(fd >= 0);
    /* A proxy on the socket passes its own Host: not checked there (the
     * DNS rebinding guard is for TCP on the loopback, origin.h). */
    static const char req[] = "GET /tokens/1 HTTP/1.1\r\n"
                              "Host: tokvec.example\r\n\r\n";
    assert_int_equal(fx_send(fd, req, sizeof req - 1), 0);
    fx_read_all(fd, r, RESP);
    close(fd);
    assert_int_equal(fx_status(r), 200);
    assert_non_null(strstr(fx_body(r), "[4.0,5.0,6.0,7.0]"));
    fx_idle(f);
    tv_server_stop(f->srv);
    f->srv = NULL;
    struct stat st;
    assert_int_equal(lstat(path, &st), -1);
}

static void a_stale_socket_file_is_replaced(void **state)
{
    fixture *f = *state;
    char path[100];
    sock_path(f, path, sizeof path);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    close(fd); /* the file stays; nobody accepts on it */
    const char *const extra[] = {"--unix-socket", path, NULL};
    assert_int_equal(fx_config(f, extra), 0);
    assert_int_equal(fx_start(f), 0);
    fd = unix_connect(path);
    assert_true(fd >= 0);
    close(fd);
}

static void a_file_that_is_no_socket_is_bad_input(void **state)
{
    fixture *f = *state;
    char err[512] = "";
    tv_server *s = NULL;
    const char *const extra[] = {"--unix-socket", f->table, NULL};
    assert_int_equal(fx_config(f, extra), 0);
    assert_int_equal(tv_server_start(&f->cfg, &s, err, sizeof err),
                     TV_SERVER_E_INPUT);
    assert_non_null(strstr(err, "exists and is not a socket"));
    struct stat st; /* and it is left alone */
    assert_int_equal(stat(f->table, &st), 0);
}

static void a_socket_another_server_accepts_on_is_refused(void **state)
{
    fixture *f = *state;
    char path[100], err[512] = "";
    sock_path(f, path, sizeof path);
    const char *const extra[] = {"--unix-socket", path, NULL};
    assert_int_equal(fx_config(f, extra), 0);
    assert_int_equal(fx_start(f), 0);
    tv_server *s = NULL;
    int rc = tv_server_start(&f->cfg, &s, err, sizeof err);
    assert_int_equal(rc, TV_SERVER_E_SYSTEM);
    assert_non_null(strstr(err, "is in use by another server"));
    /* the first server's socket is still there and still its own */
    int fd = unix_connect(path);
    assert_true(fd >= 0);
    close(fd);
}

static int thread_named(const char *name)
{
    return tv_threads_named(name, 1, NULL, 0) > 0;
}

static void every_thread_is_named_by_its_role(void **state)
{
    fixture *f = *state;
    char path[100];
    sock_path(f, path, sizeof path);
    const char *const extra[] = {"--unix-socket", path, NULL};
    assert_int_equal(fx_config(f, extra), 0);
    assert_int_equal(fx_start(f), 0);
    assert_true(thread_named("tv-http-0"));
    assert_true(thread_named("tv-unix-0"));
    assert_true(thread_named("tv-work-0"));
    /* the reaper ticks on serve's control loop: no thread of its own */
    assert_false(thread_named("tv-reaper"));
    assert_false(thread_named("MHD-worker"));
    assert_false(thread_named("MHD-single"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(the_unix_socket_serves_and_goes_with_the_server),
        T(a_stale_socket_file_is_replaced),
        T(a_file_that_is_no_socket_is_bad_input),
        T(a_socket_another_server_accepts_on_is_refused),
        T(every_thread_is_named_by_its_role),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
