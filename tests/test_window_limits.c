/* test_window_limits.c -- "max_length" windows of one text against
 * max_tokens (server/routes/text.c for /tokenize, embed_text.c for
 * /embed): a text within max_tokens whose windows together are over it
 * (windows overlap when stride < max_length) is a 413 payload_too_large
 * naming the windows; fewer windows that fit are a 200. And a text with
 * "truncate" at start_position = context_length, or pooled id lists past
 * the context end, are sequence_too_long.
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

static char resp[RESP];

static int setup(void **state)
{
    static fixture f;
    static const char *const flags[] = {"--tokenizer", "data/gpt2",
                                        "--max-tokens", "64", NULL};
    *state = &f;
    if (fx_init(&f) < 0)
        return -1;
    snprintf(f.table, sizeof f.table, "data/gpt2-256.safetensors");
    if (fx_config(&f, flags) < 0)
        return -1;
    return fx_start(&f);
}

/* {"inputs":" a a ... a" (40 tokens),"max_length":2,"stride":stride} */
static const char *windows_body(int stride)
{
    static char b[512];
    int n = snprintf(b, sizeof b, "{\"inputs\":\"");
    for (int i = 0; i < 40; i++)
        n += snprintf(b + n, sizeof b - (size_t)n, " a");
    snprintf(b + n, sizeof b - (size_t)n, "\",\"max_length\":2,\"stride\":%d}",
             stride);
    return b;
}

static void overlapping_windows_over_max_tokens_are_a_413(void **state)
{
    fixture *f = *state;
    const char *paths[] = {"/tokenize", "/embed"};
    for (size_t i = 0; i < 2; i++) {
        int st = fx_http(f, "POST", paths[i], "application/json",
                         windows_body(1), NULL, resp, RESP);
        if (st != 413 ||
            !strstr(fx_body(resp), "38 windows of 2 tokens are over "
                                   "max_batch") ||
            !strstr(fx_body(resp), " or max_tokens 64"))
            fail_msg("%s: %d %.300s", paths[i], st, fx_body(resp));
        /* stride 2: half as many windows, within max_tokens */
        st = fx_http(f, "POST", paths[i], "application/json", windows_body(2),
                     NULL, resp, RESP);
        if (st != 200)
            fail_msg("%s stride 2: %d %.300s", paths[i], st, fx_body(resp));
    }
}

/* truncate keeps what fits after start_position: at context_length
 * nothing does, and the refusal gives no hint (no option of the text
 * helps). */
static void a_truncated_text_at_the_context_end_is_too_long(void **state)
{
    fixture *f = *state;
    int st = fx_http(f, "POST", "/embed", "application/json",
                     "{\"inputs\":\"hello world again\",\"truncate\":"
                     "true,\"start_position\":1024}",
                     NULL, resp, RESP);
    assert_int_equal(st, 422);
    assert_string_equal(fx_body(resp),
                        "{\"error\":\"start_position 1024 + sequence length "
                        "3 exceeds context_length 1024\",\"error_type\":"
                        "\"sequence_too_long\"}");
}

/* Pooled id lists of unequal lengths: the longest one counts. */
static void pooled_id_lists_over_the_context_end_are_too_long(void **state)
{
    fixture *f = *state;
    int st = fx_http(f, "POST", "/embed", "application/json",
                     "{\"inputs\":[[1,2],[3]],\"pooling\":\"mean\","
                     "\"start_position\":1023}",
                     NULL, resp, RESP);
    assert_int_equal(st, 422);
    assert_string_equal(fx_body(resp),
                        "{\"error\":\"start_position 1023 + sequence length "
                        "2 exceeds context_length 1024\",\"error_type\":"
                        "\"sequence_too_long\"}");
    st = fx_http(f, "POST", "/embed", "application/json",
                 "{\"inputs\":[[1],[3]],\"pooling\":\"mean\","
                 "\"start_position\":1023}",
                 NULL, resp, RESP);
    assert_int_equal(st, 200);
}

static int teardown(void **state)
{
    fx_down(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overlapping_windows_over_max_tokens_are_a_413),
        cmocka_unit_test(a_truncated_text_at_the_context_end_is_too_long),
        cmocka_unit_test(pooled_id_lists_over_the_context_end_are_too_long),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
