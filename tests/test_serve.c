/* test_serve.c -- server/cli/serve.c: `tokvec serve` in a child process
 * starts, answers, reloads on SIGHUP and exits 0 on SIGTERM; a missing table
 * is exit 2 with how to make one, a port in use exit 1, a bad setting exit 2;
 * `tokvec probe` is 0 for a 200, 1 for another status or no answer, 2 for
 * a URL it cannot use.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "serve.h"
#include "server_fixture.h"

#define RESP 65536

typedef struct {
    fixture f;
    pid_t child;
    int err_fd; /* the child's stderr, read end */
    int port;
} serve_fx;

static int setup(void **state)
{
    serve_fx *s = calloc(1, sizeof *s);
    *state = s;
    if (!s)
        return -1;
    s->err_fd = -1;
    return fx_init(&s->f) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    serve_fx *s = *state;
    if (s->child > 0) {
        kill(s->child, SIGKILL);
        waitpid(s->child, NULL, 0);
    }
    if (s->err_fd >= 0)
        close(s->err_fd);
    fx_down(&s->f);
    free(s);
    return 0;
}

/* A port nobody listens on right now. */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &n) < 0)
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

/* `tokvec serve TABLE --port P extra...` in a child, stderr to a pipe. */
static void serve(serve_fx *s, const char *table, const char *const *extra)
{
    char port[16];
    int pipefd[2];
    s->port = free_port();
    snprintf(port, sizeof port, "%d", s->port);
    assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
    char *argv[32] = {"serve",     (char *)table, "--port",       port,
                      "--threads", "1",           "--access-log", "false"};
    int argc = 8;
    for (; extra && *extra; extra++)
        argv[argc++] = (char *)*extra;
    s->child = fork();
    assert_true(s->child >= 0);
    if (s->child == 0) {
        dup2(pipefd[1], 2);
        _exit(cmd_serve(argc, argv));
    }
    close(pipefd[1]);
    s->err_fd = pipefd[0];
}

/* The child's exit status (-1: killed or still running after 10 s). */
static int exit_status(serve_fx *s)
{
    int st = 0;
    for (int i = 0; i < 1000; i++) {
        pid_t r = waitpid(s->child, &st, WNOHANG);
        if (r == s->child) {
            s->child = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return -1;
}

/* What the child wrote to stderr (it has exited: read to the end). */
static void child_stderr(serve_fx *s, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(s->err_fd, buf + n, cap - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
}

/* Up: /health answers (5 s at most). */
static int wait_up(serve_fx *s)
{
    char r[RESP];
    s->f.port = s->port;
    for (int i = 0; i < 500; i++) {
        if (fx_http(&s->f, "GET", "/health", NULL, NULL, NULL, r, RESP) == 200)
            return 0;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return -1;
}

static void serve_answers_reloads_on_sighup_and_exits_0_on_sigterm(
    void **state)
{
    serve_fx *s = *state;
    char r[RESP];
    serve(s, s->f.table, NULL);
    assert_int_equal(wait_up(s), 0);
    assert_int_equal(fx_write_table(s->f.table, 24, FX_DIM, FX_CONTEXT), 0);
    kill(s->child, SIGHUP);
    int st = 0;
    for (int i = 0; i < 500 && st != 200; i++) {
        nanosleep(&(struct timespec){0, 10000000}, NULL);
        st = fx_http(&s->f, "GET", "/tokens/23", NULL, NULL, NULL, r, RESP);
    }
    assert_int_equal(st, 200);
    kill(s->child, SIGTERM);
    assert_int_equal(exit_status(s), 0);
}

static void a_missing_table_exits_2_saying_how_to_make_one(void **state)
{
    serve_fx *s = *state;
    char e[4096];
    serve(s, "/nonexistent/t.safetensors", NULL);
    assert_int_equal(exit_status(s), 2);
    child_stderr(s, e, sizeof e);
    assert_non_null(strstr(e, "tokvec: "));
    assert_non_null(strstr(e, "/nonexistent/t.safetensors"));
    assert_non_null(strstr(e, "create one with: tokvec init"));
}

static void a_port_in_use_exits_1(void **state)
{
    serve_fx *s = *state;
    char e[4096];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    char port[16];
    snprintf(port, sizeof port, "%d", ntohs(a.sin_port));
    const char *const extra[] = {"--port", port, NULL}; /* the last wins */
    serve(s, s->f.table, extra);
    assert_int_equal(exit_status(s), 1);
    close(fd);
    child_stderr(s, e, sizeof e);
    assert_non_null(strstr(e, "cannot listen on 127.0.0.1:"));
}

static void a_bad_setting_exits_2(void **state)
{
    serve_fx *s = *state;
    char e[4096];
    const char *const extra[] = {"--max-queue", "many", NULL};
    serve(s, s->f.table, extra);
    assert_int_equal(exit_status(s), 2);
    child_stderr(s, e, sizeof e);
    assert_non_null(strstr(e, "--max-queue"));
}

static void probe_is_0_for_200_1_otherwise_2_for_a_bad_url(void **state)
{
    serve_fx *s = *state;
    fixture *f = &s->f;
    assert_int_equal(fx_config(f, NULL), 0);
    assert_int_equal(fx_start(f), 0);
    char ok[64], missing[64], closed[64];
    snprintf(ok, sizeof ok, "http://127.0.0.1:%d/ready", f->port);
    snprintf(missing, sizeof missing, "http://127.0.0.1:%d/nope", f->port);
    snprintf(closed, sizeof closed, "http://127.0.0.1:%d/ready", free_port());
    assert_int_equal(cmd_probe(2, (char *[]){"probe", ok, NULL}), 0);
    assert_int_equal(cmd_probe(2, (char *[]){"probe", missing, NULL}), 1);
    assert_int_equal(cmd_probe(2, (char *[]){"probe", closed, NULL}), 1);
    assert_int_equal(cmd_probe(2, (char *[]){"probe", "ftp://x/", NULL}), 2);
    tv_server_drain_begin(f->srv); /* /ready is 503 now, and refused */
    assert_int_equal(cmd_probe(2, (char *[]){"probe", ok, NULL}), 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(serve_answers_reloads_on_sighup_and_exits_0_on_sigterm),
        T(a_missing_table_exits_2_saying_how_to_make_one),
        T(a_port_in_use_exits_1),
        T(a_bad_setting_exits_2),
        T(probe_is_0_for_200_1_otherwise_2_for_a_bad_url),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
