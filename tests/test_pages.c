/* test_pages.c -- POST /similar without HTTP: every refusal of a body with
 * its status and error_type, the answer's JSON (ids and scores as the
 * index gives them, text null without a tokenizer, the hook's text
 * escaped when there is one, k past the vocabulary), and the pages' files
 * with their headers, /static/auth.json keyed and not.
 */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pages.h"
#include "testutil.h"
#include "tokvec_write.h"

#define V 50
#define D 8

static tokvec_table *t;
static tokvec_similar *idx;

static int setup(void **state)
{
    (void)state;
    if (tu_make_dir())
        return -1;
    static float tab[V * D];
    for (int i = 0; i < V * D; i++)
        tab[i] = (float)sin(i * 0.7) + (i % 3 == 0 ? 0.5f : -0.25f);
    char p[256];
    snprintf(p, sizeof p, "%s/t.safetensors", tu_dir);
    tokvec_write_tensor w = {"tok_emb.weight", TOKVEC_F32, V, D, tab};
    if (tokvec_safetensors_write(p, &w, 1, NULL) < 0 ||
        tokvec_table_open(p, NULL, &t) < 0 || tokvec_similar_open(t, &idx))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tokvec_similar_close(idx);
    tokvec_table_close(t);
    return tu_remove_dir();
}

static void refused(const char *body, int status, const char *type)
{
    tv_similar_call *c = (tv_similar_call *)1;
    tv_error e = {0};
    assert_int_equal(
        tv_similar_parse(body, strlen(body), t, idx, NULL, &c, &e), -1);
    assert_null(c);
    if (e.status != status || strcmp(e.type, type))
        fail_msg("%s: got %d %s (%s), want %d %s", body, e.status, e.type,
                 e.message, status, type);
}

static void bad_bodies_get_the_contract_errors(void **s)
{
    (void)s;
    refused("{", 400, "invalid_json");
    refused("[1]", 400, "invalid_request");
    refused("{}", 400, "invalid_request");
    refused("{\"id\": 1, \"vector\": [1,2,3,4,5,6,7,8]}", 400,
            "invalid_request");
    refused("{\"id\": 1, \"id\": 2}", 400, "invalid_json");
    refused("{\"id\": \"1\"}", 400, "invalid_request");
    refused("{\"id\": 1.0}", 400, "invalid_request");
    refused("{\"id\": true}", 400, "invalid_request");
    refused("{\"id\": 1, \"kk\": 2}", 400, "invalid_request");
    refused("{\"id\": 1, \"k\": 0}", 422, "k_out_of_range");
    refused("{\"id\": 1, \"k\": 1001}", 422, "k_out_of_range");
    refused("{\"id\": 1, \"k\": -5}", 422, "k_out_of_range");
    refused("{\"id\": 1, \"k\": 2.5}", 400, "invalid_request");
    refused("{\"id\": 50}", 422, "token_out_of_range");
    refused("{\"id\": -1}", 422, "token_out_of_range");
    refused("{\"vector\": [1,2,3]}", 422, "dimension_mismatch");
    refused("{\"vector\": 3}", 400, "invalid_request");
    refused("{\"vector\": [0,0,0,0,0,0,0,0]}", 400, "invalid_request");
    refused("{\"vector\": [1,2,3,4,5,6,7,\"8\"]}", 400, "invalid_request");
    refused("{\"vector\": [1,2,3,4,5,6,7,1e39]}", 400, "invalid_request");
    /* more values than a vector of 8 numbers: before jansson */
    char big[400] = "{\"vector\": [";
    for (int i = 0; i < 30; i++)
        strcat(big, "1,");
    strcat(big, "1]}");
    refused(big, 413, "payload_too_large");
    refused("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 413,
            "payload_too_large");
}

/* Parses, runs and decodes an answer. */
static json_t *answer(const char *body, const tv_similar_text_hook *hook)
{
    tv_similar_call *c;
    tv_error e;
    if (tv_similar_parse(body, strlen(body), t, idx, hook, &c, &e) < 0)
        fail_msg("%s: %s", body, e.message);
    tv_similar_run(c);
    const char *out;
    size_t n;
    assert_int_equal(tv_similar_result(c, &out, &n, &e), 0);
    assert_int_equal(strlen(out), n);
    json_error_t je;
    json_t *j = json_loadb(out, n, 0, &je);
    if (!j)
        fail_msg("not JSON: %s: %s", je.text, out);
    tv_similar_free(c);
    return j;
}

static void answer_lists_the_index_neighbours_with_null_text(void **s)
{
    (void)s;
    json_t *j = answer("{\"id\": 7, \"k\": 4}", NULL);
    tokvec_neighbor want[4];
    assert_int_equal(tokvec_similar_token(idx, 7, 4, want), 0);
    assert_int_equal(json_array_size(j), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *o = json_array_get(j, i);
        assert_int_equal(json_object_size(o), 3);
        assert_int_equal(json_integer_value(json_object_get(o, "id")),
                         want[i].id);
        assert_true(json_is_null(json_object_get(o, "text")));
        /* the shortest decimal of the float32 score reads back exactly */
        assert_true((float)json_number_value(json_object_get(o, "score")) ==
                    want[i].score);
    }
    json_decref(j);
    j = answer("{\"id\": 7}", NULL); /* k defaults to 10 */
    assert_int_equal(json_array_size(j), TV_SIMILAR_DEFAULT_K);
    json_decref(j);
    j = answer("{\"k\": 1000, \"id\": 0}", NULL); /* past the vocabulary */
    assert_int_equal(json_array_size(j), V);
    json_decref(j);
}

static void vector_query_answers_like_the_index(void **s)
{
    (void)s;
    json_t *j = answer("{\"vector\": [1, -2, 0.5, 0, 0, 3e-3, 7, 1], "
                       "\"k\": 3}",
                       NULL);
    float q[D] = {1, -2, 0.5f, 0, 0, 3e-3f, 7, 1};
    tokvec_neighbor want[3];
    assert_int_equal(tokvec_similar_vector(idx, q, 3, want), 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(json_integer_value(
                             json_object_get(json_array_get(j, i), "id")),
                         want[i].id);
    json_decref(j);
}

static const char hostile[] = "<img src=x onerror=alert(1)>\"\\\n\x01";

static long hook_text(void *ctx, int64_t id, char *buf, size_t cap)
{
    (void)ctx;
    if (id % 2) /* odd ids: no text */
        return -1;
    snprintf(buf, cap, "%s", hostile);
    return (long)strlen(hostile);
}

static void hook_text_is_escaped_json_and_missing_text_is_null(void **s)
{
    (void)s;
    tv_similar_text_hook h = {hook_text, NULL};
    json_t *j = answer("{\"id\": 2, \"k\": 20}", &h);
    for (size_t i = 0; i < json_array_size(j); i++) {
        json_t *o = json_array_get(j, i);
        json_int_t id = json_integer_value(json_object_get(o, "id"));
        json_t *text = json_object_get(o, "text");
        if (id % 2)
            assert_true(json_is_null(text));
        else
            assert_string_equal(json_string_value(text), hostile);
    }
    json_decref(j);
}

static void pages_are_the_compiled_files_with_a_strict_csp(void **s)
{
    (void)s;
    const char *paths[] = {"/", "/docs", "/static/playground.js",
                           "/static/playground.css", "/static/docs.js"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        size_t n = 0;
        struct MHD_Response *r = tv_pages_response(paths[i], 0, &n);
        assert_non_null(r);
        assert_true(n > 100);
        const char *csp = MHD_get_response_header(r,
                                                  "Content-Security-Policy");
        assert_non_null(csp);
        assert_null(strstr(csp, "unsafe"));
        assert_non_null(strstr(csp, "script-src 'self'"));
        assert_string_equal(
            MHD_get_response_header(r, "X-Content-Type-Options"), "nosniff");
        const char *ct = MHD_get_response_header(r, "Content-Type");
        assert_non_null(strstr(ct, i < 2    ? "text/html"
                                   : i == 3 ? "text/css"
                                            : "text/javascript"));
        MHD_destroy_response(r);
    }
    size_t n;
    assert_true(tv_pages_match("/static/x") && tv_pages_match("/docs"));
    assert_false(tv_pages_match("/docs/") || tv_pages_match("/static"));
    assert_null(tv_pages_response("/static/nope.js", 0, &n));
    /* only / */
    assert_null(tv_pages_response("/static/index.html", 0, &n));
    assert_null(tv_pages_response("/static/", 0, &n));
    assert_null(tv_pages_response("/static/../Makefile", 0, &n));
}

/* The page learns from a public file whether to ask for a key first. */
static void auth_json_says_whether_the_server_wants_a_key(void **s)
{
    (void)s;
    const char *want[] = {"{\"api_key\":false}", "{\"api_key\":true}"};
    for (int keyed = 0; keyed < 2; keyed++) {
        size_t n = 0;
        struct MHD_Response *r = tv_pages_response("/static/auth.json", keyed,
                                                   &n);
        assert_non_null(r);
        assert_int_equal(n, strlen(want[keyed]));
        assert_string_equal(MHD_get_response_header(r, "Content-Type"),
                            "application/json");
        assert_non_null(MHD_get_response_header(r, "Content-Security-Policy"));
        MHD_destroy_response(r);
    }
    size_t n;
    assert_null(tv_pages_response("/auth.json", 1, &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_bodies_get_the_contract_errors),
        cmocka_unit_test(answer_lists_the_index_neighbours_with_null_text),
        cmocka_unit_test(vector_query_answers_like_the_index),
        cmocka_unit_test(hook_text_is_escaped_json_and_missing_text_is_null),
        cmocka_unit_test(pages_are_the_compiled_files_with_a_strict_csp),
        cmocka_unit_test(auth_json_says_whether_the_server_wants_a_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
