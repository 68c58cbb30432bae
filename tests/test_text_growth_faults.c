/* test_text_growth_faults.c -- /tokenize and /decode answers over the
 * first 4 KiB of their body (server/routes/text.c grows it by doubling)
 * while every allocation over 4 KiB fails (server/runtime/alloc.h's hook):
 * requests of lengths stepping one byte or one token at a time make the
 * growth fall in each piece an answer is written in (the '[', the ',', each
 * field of a token, a token's text, a window, a decoded text). Each such
 * request is answered 500 "internal", the server then answers /health and
 * holds no reserved bytes, and the same request without the failure is a
 * 200. `make sanitize-test` runs this under ASan: what gives up frees.
 *
 * Threads: the server's threads run the requests; the hook is set and
 * cleared by the test's thread between requests (fx_idle waits).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>

#include "alloc.h"
#include "server_fixture.h"

#define RESP (1 << 20)
#define FIRST_BODY 4096 /* text.c's first body: its growth is over it */

static char resp[RESP];
static char body[65536];

static int fail_over_first_body(size_t n)
{
    return n > FIRST_BODY;
}

static int setup(void **state)
{
    static fixture f;
    static const char *const flags[] = {"--tokenizer", "data/gpt2", NULL};
    *state = &f;
    if (fx_init(&f) < 0)
        return -1;
    snprintf(f.table, sizeof f.table, "data/gpt2-256.safetensors");
    if (fx_config(&f, flags) < 0)
        return -1;
    return fx_start(&f);
}

static int teardown(void **state)
{
    tv_alloc_fault = NULL;
    fx_down(*state);
    return 0;
}

/* Nothing of max_inflight_bytes is held: a job of all of it fits. */
static int budget_is_whole(fixture *f)
{
    size_t all = (size_t)f->cfg.max_inflight_bytes;
    if (!tv_pool_try_inline(f->srv->pool, all))
        return 0;
    tv_pool_inline_done(f->srv->pool);
    tv_pool_release(f->srv->pool, all);
    return 1;
}

/* POST path body with the hook set: 500 "internal" where the answer
 * outgrew 4 KiB, else 200; without the hook, 200. Returns 1 on a 500. */
static int out_of_memory_once_grown(fixture *f, const char *path)
{
    tv_alloc_fault = fail_over_first_body;
    int st = fx_http(f, "POST", path, "application/json", body, NULL, resp,
                     RESP);
    tv_alloc_fault = NULL;
    assert_int_equal(fx_idle(f), 0);
    if (st != 200 && st != 500)
        fail_msg("%s %.200s: status %d %.300s", path, body, st, fx_body(resp));
    if (st == 500 && !strstr(fx_body(resp), "\"error_type\":\"internal\""))
        fail_msg("%s %.200s: %.300s", path, body, fx_body(resp));
    assert_true(budget_is_whole(f));
    assert_int_equal(fx_get(f, "/health", resp, RESP), 200);
    int ok = fx_http(f, "POST", path, "application/json", body, NULL, resp,
                     RESP);
    if (ok != 200)
        fail_msg("%s %.200s: %d without the failure", path, body, ok);
    if (st == 200 && strlen(fx_body(resp)) > FIRST_BODY)
        fail_msg("%s: %zu bytes answered with no growth", path,
                 strlen(fx_body(resp)));
    return st == 500;
}

/* "q" x pad, then `words` times " a" (a token each). */
static int put_words(int n, size_t pad, int words)
{
    for (size_t i = 0; i < pad; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, "q");
    for (int i = 0; i < words; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, " a");
    return n;
}

static void a_tokenize_answer_outgrowing_its_body_is_a_500_at_each_piece(
    void **state)
{
    fixture *f = *state;
    int refused = 0;
    for (size_t pad = 0; pad < 48; pad++) {
        int n = snprintf(body, sizeof body, "{\"inputs\":\"");
        n = put_words(n, pad, 70);
        snprintf(body + n, sizeof body - (size_t)n, "\"}");
        refused += out_of_memory_once_grown(f, "/tokenize");
    }
    /* a list: the growth falls on the ',' between two texts too */
    for (int words = 1; words < 40; words++) {
        int n = snprintf(body, sizeof body, "{\"inputs\":[");
        for (int t = 0; t < 4; t++) {
            n += snprintf(body + n, sizeof body - (size_t)n, "%s\"",
                          t ? "," : "");
            n = put_words(n, 0, words);
            n += snprintf(body + n, sizeof body - (size_t)n, "\"");
        }
        snprintf(body + n, sizeof body - (size_t)n, "]}");
        refused += out_of_memory_once_grown(f, "/tokenize");
    }
    /* special tokens around the text: the ones after it grow too */
    for (int words = 60; words < 90; words++) {
        int n = snprintf(body, sizeof body, "{\"inputs\":\"");
        n = put_words(n, 0, words);
        snprintf(body + n, sizeof body - (size_t)n,
                 "<|endoftext|>\",\"add_special_tokens\":true}");
        refused += out_of_memory_once_grown(f, "/tokenize");
    }
    assert_true(refused > 40);
}

static void tokenize_windows_outgrowing_the_body_are_a_500(void **state)
{
    fixture *f = *state;
    int refused = 0;
    for (int words = 300; words < 340; words++) {
        int n = snprintf(body, sizeof body, "{\"inputs\":\"");
        n = put_words(n, 0, words);
        snprintf(body + n, sizeof body - (size_t)n,
                 "\",\"max_length\":3,\"stride\":2}");
        refused += out_of_memory_once_grown(f, "/tokenize");
    }
    assert_true(refused > 20);
}

static void a_decode_answer_outgrowing_its_body_is_a_500(void **state)
{
    fixture *f = *state;
    int refused = 0;
    /* one list: " a" (257) p times, then "-" x 64 (10097) 66 times */
    for (int p = 0; p < 34; p++) {
        int n = snprintf(body, sizeof body, "{\"ids\":[");
        for (int i = 0; i < p + 66; i++)
            n += snprintf(body + n, sizeof body - (size_t)n, "%s%d",
                          i ? "," : "", i < p ? 257 : 10097);
        snprintf(body + n, sizeof body - (size_t)n, "]}");
        refused += out_of_memory_once_grown(f, "/decode");
    }
    /* lists of lists: the growth on the ',' or in one of the texts */
    for (int rows = 50; rows < 80; rows++) {
        int n = snprintf(body, sizeof body, "{\"ids\":[");
        for (int r = 0; r < rows; r++)
            n += snprintf(body + n, sizeof body - (size_t)n, "%s[10097%s]",
                          r ? "," : "", r % 2 ? ",257" : "");
        snprintf(body + n, sizeof body - (size_t)n, "]}");
        refused += out_of_memory_once_grown(f, "/decode");
    }
    assert_true(refused > 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            a_tokenize_answer_outgrowing_its_body_is_a_500_at_each_piece),
        cmocka_unit_test(tokenize_windows_outgrowing_the_body_are_a_500),
        cmocka_unit_test(a_decode_answer_outgrowing_its_body_is_a_500),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
