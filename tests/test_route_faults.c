/* test_route_faults.c -- every route of a server with a tokenizer (the
 * GPT-2 tokenizer and table of `make data`), each request kind x encoding:
 * the n-th allocation of the request path (server/runtime/alloc.h's hook)
 * fails, for n = 0, 1, ... until the request succeeds. Each failure is
 * answered 500 "internal" (or the connection closed, where no answer can
 * be built); afterwards the server answers /health, holds no request and
 * no reserved bytes, and the request finally answered is byte for byte
 * the answer it gets with no failure (the failures left nothing behind
 * that changes a later answer). `make sanitize-test` runs this under ASan
 * with leak checks: every path that gives up frees what it took.
 *
 * Threads: the server's threads run the requests; the hook is armed and
 * disarmed by the test's thread between requests (fx_idle waits until
 * every job is done).
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
#define MAX_FAILURES 400

static char resp[RESP], want[RESP];

static atomic_long allow; /* allocations left before the hook fails one */

static int fail_when_spent(size_t n)
{
    (void)n;
    return atomic_fetch_sub(&allow, 1) <= 0;
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

/* The GPT-2 table and tokenizer of `make data`, in the fixture's
 * settings otherwise (one worker, one HTTP thread), and extra flags. */
static int up_with_tokenizer(fixture *f, const char *const *extra)
{
    const char *flags[16] = {"--tokenizer", "data/gpt2"};
    size_t n = 2;
    for (; extra && *extra && n < 15; extra++)
        flags[n++] = *extra;
    flags[n] = NULL;
    if (fx_init(f) < 0)
        return -1;
    snprintf(f->table, sizeof f->table, "data/gpt2-256.safetensors");
    if (fx_config(f, flags) < 0)
        return -1;
    return fx_start(f);
}

static int setup(void **state)
{
    static fixture f;
    *state = &f;
    return up_with_tokenizer(&f, NULL);
}

static int setup_keyed(void **state)
{
    static fixture f;
    static const char *const keyed[] = {"--api-key", "k", NULL};
    *state = &f;
    return up_with_tokenizer(&f, keyed);
}

static int teardown(void **state)
{
    tv_alloc_fault = NULL;
    fx_down(*state);
    return 0;
}

typedef struct {
    const char *method, *path, *ctype, *body, *headers;
} req;

static int send_req(fixture *f, const req *q, char *r)
{
    return fx_http(f, q->method, q->path, q->ctype, q->body, q->headers, r,
                   RESP);
}

/* The body of an answer: from the blank line to the end (binary replies
 * hold NULs, so the lengths come from Content-Length). */
static size_t body_len(const char *r)
{
    const char *cl = strcasestr(r, "\r\nContent-Length: ");
    return cl ? strtoul(cl + 18, NULL, 10) : strlen(fx_body(r));
}

/* The Nth allocation of the request fails, for N = 0, 1, ... until it
 * answers `status`; returns how many failures answered 500. */
static int fail_each_allocation(fixture *f, const req *q, int status)
{
    /* /metrics counts the requests: its answer changes between them */
    int varies = !strcmp(q->path, "/metrics");
    int st0 = send_req(f, q, want);
    if (st0 != status)
        fail_msg("%s %s %s: %d %.300s", q->method, q->path,
                 q->body ? q->body : "", st0, fx_body(want));
    size_t wlen = body_len(want);
    int answered_500 = 0, n;
    for (n = 0; n < MAX_FAILURES; n++) {
        atomic_store(&allow, n);
        tv_alloc_fault = fail_when_spent;
        int st = send_req(f, q, resp);
        tv_alloc_fault = NULL;
        assert_int_equal(fx_idle(f), 0);
        if (st == status) {
            if (!varies && body_len(resp) != wlen)
                fail_msg("%s %s %s: %zu bytes after %d failures, not %zu",
                         q->method, q->path, q->body ? q->body : "",
                         body_len(resp), n, wlen);
            if (!varies && memcmp(fx_body(resp), fx_body(want), wlen))
                fail_msg("%s %s %s: the answer after %d failures differs",
                         q->method, q->path, q->body ? q->body : "", n);
            break;
        }
        if (st != 0 && st != 500)
            fail_msg("%s %s %s, allocation %d failing: status %d", q->method,
                     q->path, q->body ? q->body : "", n, st);
        if (st == 500) {
            answered_500++;
            if (!strstr(fx_body(resp), "\"error_type\":\"internal\"") &&
                !strstr(fx_body(resp), "\"code\":\"internal\""))
                fail_msg("%s %s %s, allocation %d failing: %.300s", q->method,
                         q->path, q->body ? q->body : "", n, fx_body(resp));
        }
        assert_int_equal(fx_get(f, "/health", resp, RESP), 200);
        assert_true(budget_is_whole(f));
    }
    if (n == MAX_FAILURES)
        fail_msg("%s %s: still failing after %d allocations", q->method,
                 q->path, n);
    assert_true(budget_is_whole(f));
    return answered_500;
}

static void sweep(fixture *f, const req *reqs, size_t n, int status)
{
    for (size_t i = 0; i < n; i++)
        if (fail_each_allocation(f, &reqs[i], status) < 1)
            fail_msg("%s %s %s: no failure answered 500", reqs[i].method,
                     reqs[i].path, reqs[i].body ? reqs[i].body : "");
}

#define JSON "application/json"
#define NPY "Accept: application/x-npy\r\n"
#define NPZ "Accept: application/x-npz\r\n"
#define TORCH "Accept: application/x-pytorch\r\n"

/* A text over the inline bound (1024 bytes): it goes to a worker. */
static const char *long_text_body(const char *head, const char *tail)
{
    static char b[4096];
    int n = snprintf(b, sizeof b, "%s\"", head);
    for (int i = 0; i < 150; i++)
        n += snprintf(b + n, sizeof b - (size_t)n, "word%d ", i % 7);
    snprintf(b + n, sizeof b - (size_t)n, "\"%s", tail);
    return b;
}

/* /similar by a vector of the table's 256 columns. */
static const char *vector_body(void)
{
    static char b[4096];
    int n = snprintf(b, sizeof b, "{\"k\":2,\"vector\":[");
    for (int i = 0; i < 256; i++)
        n += snprintf(b + n, sizeof b - (size_t)n, "%s%d.25", i ? "," : "",
                      i % 5 - 2);
    snprintf(b + n, sizeof b - (size_t)n, "]}");
    return b;
}

static void tokenize_and_decode_fail_at_each_allocation(void **state)
{
    fixture *f = *state;
    const req reqs[] = {
        {"POST", "/tokenize", JSON, "{\"inputs\":\"Hello \\\"w\\\\orld\\n\"}",
         NULL},
        {"POST", "/tokenize", JSON,
         "{\"inputs\":[\"a b\",\"\",\"caf\\u00e9\"],\"add_special_tokens\":"
         "true,\"special_tokens\":false}",
         NULL},
        {"POST", "/tokenize", JSON,
         "{\"inputs\":[\"one two three four five six seven\"],\"truncate\":"
         "true,\"truncation_direction\":\"left\"}",
         NULL},
        {"POST", "/tokenize", JSON,
         "{\"inputs\":\"one two three four five six\",\"max_length\":2,"
         "\"stride\":1}",
         NULL},
        {"POST", "/tokenize", JSON, long_text_body("{\"inputs\":", "}"), NULL},
        {"POST", "/decode", JSON, "{\"ids\":[15496,995,50256]}", NULL},
        {"POST", "/decode", JSON,
         "{\"ids\":[[15496,50256],[],[995]],\"skip_special_tokens\":true}",
         NULL},
    };
    sweep(f, reqs, sizeof reqs / sizeof reqs[0], 200);
}

static void embed_text_fails_at_each_allocation_in_each_encoding(void **state)
{
    fixture *f = *state;
    const req reqs[] = {
        {"POST", "/embed", JSON, "{\"inputs\":\"Hello world\"}", NULL},
        {"POST", "/embed", JSON,
         "{\"inputs\":[\"a b c\",\"d\"],\"pad_id\":0,\"encoding_format\":"
         "\"base64\"}",
         NULL},
        {"POST", "/embed?dtype=float16", JSON,
         "{\"inputs\":[\"a b\",\"c d\"]}", NPY},
        {"POST", "/embed", JSON, "{\"inputs\":[\"x y z\",\"w\"],\"pad_id\":1}",
         NPZ},
        {"POST", "/embed", JSON,
         "{\"inputs\":[\"x y\",\"z w\"],\"encoding_format\":\"torch\","
         "\"dtype\":\"bfloat16\"}",
         NULL},
        {"POST", "/embed", JSON,
         "{\"inputs\":\"one two three four five\",\"max_length\":2,"
         "\"stride\":2}",
         NULL},
        {"POST", "/embed", JSON,
         "{\"inputs\":[\"one two three four five\",\"six\"],\"truncate\":true,"
         "\"pad_id\":0}",
         NULL},
        {"POST", "/embed", JSON, long_text_body("{\"inputs\":[", "]}"), NULL},
    };
    sweep(f, reqs, sizeof reqs / sizeof reqs[0], 200);
}

static void openai_and_similar_fail_at_each_allocation(void **state)
{
    fixture *f = *state;
    const req reqs[] = {
        {"POST", "/v1/embeddings", JSON,
         "{\"input\":[\"Hello\",\"big world\"],\"model\":\"gpt2-256\"}", NULL},
        {"POST", "/v1/embeddings", JSON,
         "{\"input\":[[15496,995],[1]],\"encoding_format\":\"base64\"}", NULL},
    };
    sweep(f, reqs, sizeof reqs / sizeof reqs[0], 200);
    /* /similar's answer is small: it may be built without the hook */
    const req similar[] = {
        {"POST", "/similar", JSON, "{\"id\":15496,\"k\":3}", NULL},
        {"POST", "/similar", JSON, vector_body(), NULL},
    };
    for (size_t i = 0; i < sizeof similar / sizeof similar[0]; i++)
        fail_each_allocation(f, &similar[i], 200);
}

static void get_routes_fail_at_each_allocation(void **state)
{
    fixture *f = *state;
    const req reqs[] = {
        {"GET", "/info", NULL, NULL, NULL},
        {"GET", "/tokens/15496", NULL, NULL, NULL},
        {"GET", "/tokens/15496?dtype=float16", NULL, NULL, NPY},
        {"GET", "/v1/models", NULL, NULL, NULL},
        {"GET", "/metrics", NULL, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++)
        fail_each_allocation(f, &reqs[i], 200);
}

/* Refusals are built too: a failed allocation while answering 4xx. */
static void refusals_fail_at_each_allocation(void **state)
{
    fixture *f = *state;
    const req bad[] = {
        {"POST", "/tokenize", JSON, "{\"inputs\":[1]}", NULL},
        {"POST", "/decode", JSON, "{\"ids\":[[1],2]}", NULL},
        {"POST", "/embed", JSON, "{\"inputs\":[\"a\",[1]],\"x\":1}", NULL},
        {"POST", "/v1/embeddings", JSON, "{\"input\":{}}", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        fail_each_allocation(f, &bad[i], 400);
}

/* With --api-key, the refusal of a request without the key. */
static void a_keyed_server_fails_at_each_allocation(void **state)
{
    fixture *f = *state;
    const req reqs[] = {
        {"POST", "/embed", JSON, "{\"inputs\":\"Hi\"}",
         "Authorization: Bearer k\r\n"},
        {"POST", "/v1/embeddings", JSON, "{\"input\":\"Hi\"}",
         "Authorization: Bearer k\r\n"},
    };
    sweep(f, reqs, sizeof reqs / sizeof reqs[0], 200);
    const req refused = {"POST", "/embed", JSON, "{\"inputs\":\"Hi\"}", NULL};
    fail_each_allocation(f, &refused, 401);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tokenize_and_decode_fail_at_each_allocation),
        cmocka_unit_test(embed_text_fails_at_each_allocation_in_each_encoding),
        cmocka_unit_test(openai_and_similar_fail_at_each_allocation),
        cmocka_unit_test(get_routes_fail_at_each_allocation),
        cmocka_unit_test(refusals_fail_at_each_allocation),
    };
    const struct CMUnitTest keyed[] = {
        cmocka_unit_test(a_keyed_server_fails_at_each_allocation),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    return rc | cmocka_run_group_tests(keyed, setup_keyed, teardown);
}
