/* test_listen_faults.c -- server/http/listen.c where starting to listen
 * fails: a host that is no address and a Unix socket path too long or in a
 * missing folder are bad input; a refused socket(), bind(), listen() or
 * epoll_create1() (tests/fault_inject.h), on the TCP port or the Unix
 * socket, on the first HTTP thread's daemon or a later one, is a system
 * error naming the address (and libmicrohttpd's own message is logged at
 * --log-level debug, only there); an allocation that fails is out of
 * memory.
 * Each failure leaves no descriptor open and no socket file, and the next
 * start succeeds. An IPv6 host serves. Single-threaded test; the server's
 * threads run between start and stop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "fault_inject.h"
#include "server_fixture.h"

#include "alloc.h"

#define RESP 65536

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

static int setup(void **state)
{
    fi_reset();
    fixture *f = calloc(1, sizeof *f);
    *state = f;
    return f && fx_init(f) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    fi_reset();
    tv_alloc_fault = NULL;
    fx_down(*state);
    free(*state);
    return 0;
}

/* Starting fails with want, err containing says; nothing is left open
 * (but `leaked` descriptors libmicrohttpd itself loses), no socket file at
 * sock (if any); then a start succeeds. */
static void start_fails_leaking(fixture *f, int want, const char *says,
                                const char *sock, int leaked)
{
    char err[512] = "";
    tv_server *s = NULL;
    int fds = open_fds();
    int rc = tv_server_start(&f->cfg, &s, err, sizeof err);
    fi_reset();
    tv_alloc_fault = NULL;
    if (getenv("FI_DEBUG"))
        fprintf(stderr, "rc %d, err '%s', fds %d -> %d\n", rc, err, fds,
                open_fds());
    if (rc != want || !strstr(err, says))
        fprintf(stderr, "rc %d, err '%s'\n", rc, err);
    assert_int_equal(rc, want);
    assert_null(s);
    assert_non_null(strstr(err, says));
    assert_int_equal(open_fds(), fds + leaked);
    struct stat st;
    if (sock)
        assert_int_equal(lstat(sock, &st), -1);
    assert_int_equal(fx_start(f), 0);
    fx_idle(f);
    tv_server_stop(f->srv);
    f->srv = NULL;
}

static void start_fails(fixture *f, int want, const char *says,
                        const char *sock)
{
    start_fails_leaking(f, want, says, sock, 0);
}

static void configure(fixture *f, const char *a, const char *b, const char *c,
                      const char *d)
{
    const char *const extra[] = {a, b, c, d, NULL};
    assert_int_equal(fx_config(f, a ? extra : NULL), 0);
}

static void a_host_that_is_no_address_is_bad_input(void **state)
{
    fixture *f = *state;
    configure(f, NULL, NULL, NULL, NULL);
    char *host = f->cfg.host;
    f->cfg.host = "localhost"; /* names are not resolved */
    char err[512] = "";
    tv_server *s = NULL;
    assert_int_equal(tv_server_start(&f->cfg, &s, err, sizeof err),
                     TV_SERVER_E_INPUT);
    f->cfg.host = host;
    assert_non_null(strstr(err, "is not an IPv4 or IPv6 address"));
}

static void an_ipv6_host_serves(void **state)
{
    fixture *f = *state;
    /* and a timeout in part seconds (MHD's whole seconds: rounded up) */
    configure(f, "--host", "::1", "--request-timeout", "1.5s");
    int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                             .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int have6 = probe >= 0 && bind(probe, (void *)&a, sizeof a) == 0;
    if (probe >= 0)
        close(probe);
    if (!have6)
        skip(); /* no IPv6 loopback on this machine */
    assert_int_equal(fx_start(f), 0);
    a.sin6_port = htons((uint16_t)f->port);
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(fd, (void *)&a, sizeof a), 0);
    char req[128], r[RESP];
    int n = snprintf(req, sizeof req,
                     "GET /tokens/1 HTTP/1.1\r\nHost: [::1]:%d\r\n\r\n",
                     f->port);
    assert_int_equal(fx_send(fd, req, (size_t)n), 0);
    fx_read_all(fd, r, RESP);
    close(fd);
    assert_int_equal(fx_status(r), 200);
    assert_non_null(strstr(fx_body(r), "[4.0,5.0,6.0,7.0]"));
}

static void unix_socket_paths_that_cannot_be_are_bad_input(void **state)
{
    fixture *f = *state;
    char path[300], err[512] = "";
    tv_server *s = NULL;
    memset(path, 'x', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    path[0] = '/';
    configure(f, "--unix-socket", path, NULL, NULL);
    assert_int_equal(tv_server_start(&f->cfg, &s, err, sizeof err),
                     TV_SERVER_E_INPUT);
    assert_non_null(strstr(err, "is longer than"));
    tv_config_free(&f->cfg);
    f->cfg_loaded = 0;
    snprintf(path, sizeof path, "%s/missing/s.sock", f->dir);
    configure(f, "--unix-socket", path, NULL, NULL);
    assert_int_equal(tv_server_start(&f->cfg, &s, err, sizeof err),
                     TV_SERVER_E_INPUT);
    assert_non_null(strstr(err, "cannot listen on the Unix socket"));
    assert_null(s);
}

static void refused_unix_socket_calls_are_system_errors(void **state)
{
    fixture *f = *state;
    char path[100];
    snprintf(path, sizeof path, "%s/s.sock", f->dir);
    configure(f, "--unix-socket", path, NULL, NULL);
    fi_arm(FI_SOCKET, 1, EMFILE); /* the Unix socket is the first */
    start_fails(f, TV_SERVER_E_SYSTEM, "cannot create a Unix socket", path);
    fi_arm(FI_LISTEN, 1, EADDRINUSE);
    start_fails(f, TV_SERVER_E_SYSTEM, "cannot listen on the Unix socket",
                path);
    /* its daemon (started after the TCP ones: one epoll each) */
    fi_arm(FI_EPOLL_CREATE1, (long)f->cfg.http_threads + 1, EMFILE);
    start_fails_leaking(f, TV_SERVER_E_SYSTEM,
                        "cannot serve on the Unix socket", path, 0);
}

static void refused_tcp_calls_are_system_errors(void **state)
{
    fixture *f = *state;
    configure(f, "--http-threads", "3", NULL, NULL);
    /* the probe of the address */
    fi_arm(FI_SOCKET, 1, EMFILE);
    start_fails(f, TV_SERVER_E_SYSTEM, "cannot listen on 127.0.0.1:0", NULL);
    /* the first HTTP thread's daemon, then the third's */
    fi_arm(FI_BIND, 2, EADDRINUSE);
    start_fails(f, TV_SERVER_E_SYSTEM, "cannot listen on 127.0.0.1:0", NULL);
    fi_arm(FI_BIND, 4, EADDRINUSE);
    start_fails(f, TV_SERVER_E_SYSTEM, "cannot listen on 127.0.0.1:0", NULL);
    /* with a Unix socket beside: its socket goes too */
    char path[100];
    snprintf(path, sizeof path, "%s/s.sock", f->dir);
    tv_config_free(&f->cfg);
    f->cfg_loaded = 0;
    configure(f, "--http-threads", "3", "--unix-socket", path);
    fi_arm(FI_BIND, 4, EADDRINUSE); /* Unix, probe, daemons 1, 2 */
    start_fails(f, TV_SERVER_E_SYSTEM, "cannot listen on 127.0.0.1:0", path);
    /* libmicrohttpd 0.9.75 loses its listening socket when epoll_create1
     * fails (MHD_start_daemon's own failure path): one descriptor */
    fi_arm(FI_EPOLL_CREATE1, 2, ENFILE);
    start_fails_leaking(f, TV_SERVER_E_SYSTEM, "cannot listen on 127.0.0.1:0",
                        NULL, 1);
}

/* stderr into a file while fn runs; what was written, in out. */
static void capture_stderr(void (*fn)(fixture *), fixture *f, char *out,
                           size_t cap)
{
    char path[128];
    snprintf(path, sizeof path, "%s/stderr", f->dir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    fn(f);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, cap - 1, 0);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
}

static void bind_fails(fixture *f)
{
    fi_arm(FI_BIND, 2, EADDRINUSE); /* the daemon's, after the probe's */
    start_fails(f, TV_SERVER_E_SYSTEM, "cannot listen on", NULL);
}

/* libmicrohttpd's own messages go to the log at --log-level debug, and
 * only there. */
static void mhd_messages_are_logged_at_debug_only(void **state)
{
    fixture *f = *state;
    char out[8192];
    configure(f, "--log-level", "debug", NULL, NULL);
    capture_stderr(bind_fails, f, out, sizeof out);
    assert_non_null(strstr(out, "libmicrohttpd: "));
    assert_null(strstr(out, "libmicrohttpd: \n")); /* trimmed */
    tv_config_free(&f->cfg);
    f->cfg_loaded = 0;
    configure(f, "--log-level", "info", NULL, NULL);
    capture_stderr(bind_fails, f, out, sizeof out);
    assert_null(strstr(out, "libmicrohttpd"));
}

/* The daemons' table: the only allocation of http_threads pointers
 * (37: a size nothing else asks for). */
static size_t refuse_bytes;
static int refuse_daemon_table(size_t n)
{
    return n == refuse_bytes;
}

static void no_memory_for_the_daemons_is_out_of_memory(void **state)
{
    fixture *f = *state;
    char path[100];
    snprintf(path, sizeof path, "%s/s.sock", f->dir);
    configure(f, "--http-threads", "37", "--unix-socket", path);
    refuse_bytes = 37 * sizeof(struct MHD_Daemon *);
    tv_alloc_fault = refuse_daemon_table;
    start_fails(f, TV_SERVER_E_NOMEM, "out of memory", path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_host_that_is_no_address_is_bad_input,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(an_ipv6_host_serves, setup, teardown),
        cmocka_unit_test_setup_teardown(
            unix_socket_paths_that_cannot_be_are_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(
            refused_unix_socket_calls_are_system_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_tcp_calls_are_system_errors,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            no_memory_for_the_daemons_is_out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(mhd_messages_are_logged_at_debug_only,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
