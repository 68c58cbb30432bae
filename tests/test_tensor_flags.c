/* test_tensor_flags.c -- a server started with --token-tensor and
 * --position-tensor naming the table's tensors (server/http/http.c passes
 * them to the table's open) answers /embed like one that finds them
 * itself; one naming a tensor the table lacks does not start.
 *
 * Threads: the server's threads run the requests; the test's thread sends.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server_fixture.h"

#define RESP (1 << 20)

static char resp[RESP], want[RESP];

static int up(fixture *f, const char *tok, const char *pos)
{
    const char *flags[8] = {NULL};
    size_t n = 0;
    if (tok) {
        flags[n++] = "--token-tensor";
        flags[n++] = tok;
    }
    if (pos) {
        flags[n++] = "--position-tensor";
        flags[n++] = pos;
    }
    if (fx_init(f) < 0)
        return -1;
    snprintf(f->table, sizeof f->table, "data/gpt2-256.safetensors");
    if (fx_config(f, flags) < 0)
        return -1;
    return fx_start(f);
}

static const char *const BODY = "{\"inputs\":[[15496,995]],"
                                "\"start_position\":3}";

static void named_tensors_answer_like_found_ones(void **state)
{
    (void)state;
    fixture f;
    memset(&f, 0, sizeof f);
    assert_int_equal(up(&f, NULL, NULL), 0);
    assert_int_equal(fx_http(&f, "POST", "/embed", "application/json", BODY,
                             NULL, want, RESP),
                     200);
    fx_down(&f);
    memset(&f, 0, sizeof f);
    assert_int_equal(up(&f, "tok_emb.weight", "pos_emb.weight"), 0);
    assert_int_equal(fx_http(&f, "POST", "/embed", "application/json", BODY,
                             NULL, resp, RESP),
                     200);
    assert_string_equal(fx_body(resp), fx_body(want));
    fx_down(&f);
}

static void a_tensor_the_table_lacks_does_not_start(void **state)
{
    (void)state;
    fixture f;
    memset(&f, 0, sizeof f);
    assert_true(up(&f, "no_such.weight", NULL) < 0);
    assert_null(f.srv);
    fx_down(&f);
    memset(&f, 0, sizeof f);
    assert_true(up(&f, NULL, "no_such.weight") < 0);
    assert_null(f.srv);
    fx_down(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(named_tensors_answer_like_found_ones),
        cmocka_unit_test(a_tensor_the_table_lacks_does_not_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
