/* test_start_faults.c -- tv_server_start (server/http/http.c, tables.c,
 * listen.c and the runtime they build: pool, buffer cache, metrics, the
 * OpenAPI document, the tokenizer) when the n-th allocation of the start
 * fails, for n = 1, 2, ... until a start succeeds (tests/fault_inject.h
 * fails malloc, calloc and realloc of this program and of the libraries
 * it calls). Each failed start returns an error code with a message and
 * no server; the start after it succeeds and answers. Under ASan (which
 * owns malloc) the test skips; `make valgrind` finds what a failed start
 * would leak.
 *
 * Threads: the test's thread arms the fault and starts the server; the
 * server's threads only run after a start that succeeded, and the fault
 * is disarmed by then (fi_reset after each start).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fault_inject.h"
#include "server_fixture.h"

#define RESP 65536
#define MAX_ALLOCS 4000

static char resp[RESP];

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
    fx_down(*state);
    free(*state);
    return 0;
}

/* Starts f's configuration with allocation n failing, for each n; returns
 * how many starts failed. Each failure is an error with a message; the
 * first start that does not meet its failure serves `path`. */
static int each_failed_allocation_fails_the_start(fixture *f, const char *path)
{
    int failed = 0;
    for (long n = 1; n <= MAX_ALLOCS; n++) {
        char err[512] = "";
        tv_server *s = NULL;
        fi_reset();
        fi_spare_library("libjansson"); /* 2.14 frees garbage on failure */
        fi_arm(FI_ALLOC, n, ENOMEM);
        int rc = tv_server_start(&f->cfg, &s, err, sizeof err);
        long calls = fi_calls(FI_ALLOC);
        fi_reset();
        if (rc == 0) {
            assert_non_null(s);
            f->srv = s;
            const union MHD_DaemonInfo *di = MHD_get_daemon_info(
                s->tcp[0], MHD_DAEMON_INFO_BIND_PORT);
            f->port = di ? di->port : 0;
            assert_int_equal(fx_get(f, path, resp, RESP), 200);
            fx_idle(f);
            tv_server_stop(s);
            f->srv = NULL;
            if (calls < n) /* the start made fewer than n: all were met */
                return failed;
            continue; /* this allocation's failure was survived */
        }
        failed++;
        assert_null(s);
        if (!err[0])
            fail_msg("allocation %ld: start failed (%d) without a message", n,
                     rc);
    }
    fail_msg("the start still allocates after %d allocations", MAX_ALLOCS);
    return failed;
}

static void a_plain_table_start_fails_at_each_allocation(void **state)
{
    fixture *f = *state;
    if (!FI_HAVE_MALLOC)
        skip();
    assert_int_equal(fx_config(f, NULL), 0);
    assert_true(each_failed_allocation_fails_the_start(f, "/info") > 10);
}

static void a_tokenizer_socket_and_key_start_fails_at_each_allocation(
    void **state)
{
    fixture *f = *state;
    if (!FI_HAVE_MALLOC)
        skip();
    char sock[100];
    snprintf(sock, sizeof sock, "%s/s.sock", f->dir);
    snprintf(f->table, sizeof f->table, "data/gpt2-256.safetensors");
    const char *const extra[] = {"--tokenizer",
                                 "data/gpt2",
                                 "--unix-socket",
                                 sock,
                                 "--api-key",
                                 "k",
                                 "--http-threads",
                                 "2",
                                 "--access-log",
                                 "true",
                                 NULL};
    assert_int_equal(fx_config(f, extra), 0);
    assert_true(each_failed_allocation_fails_the_start(f, "/health") > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            a_plain_table_start_fails_at_each_allocation, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_tokenizer_socket_and_key_start_fails_at_each_allocation, setup,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
