/* test_openai_request.c -- the parser of POST /v1/embeddings bodies
 * (tv_request_parse_openai, server/routes/request.c): every input shape
 * (a text, texts, a list of ids, lists of them, mixed) gives its rows as
 * given; each key's bad value is a 400 naming the key in param; more inputs
 * than max_batch, more ids than max_tokens and a body over max_body_bytes
 * are 413; an input that is neither text nor ids, an empty list, a bad id
 * are 400 with param "input"; null is as absent. POST /embed's pooled
 * options are checked the same way; an allocation the request path's hook
 * (alloc.h) refuses is a 500. Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "request.h"

static const tv_limits SMALL = {.max_body_bytes = 400,
                                .max_tokens = 6,
                                .max_batch = 3};

static void parse_ok(const char *body, tv_request *r)
{
    tv_error err = {0};
    if (tv_request_parse_openai(body, strlen(body), &SMALL, r, &err))
        fail_msg("%s: %d %s", body, err.status, err.message);
    assert_int_equal(r->pool, 1);
    assert_int_equal(r->openai, 1);
}

static void every_input_shape_gives_its_rows(void **s)
{
    (void)s;
    tv_request r;
    parse_ok("{\"input\":\"hello\",\"model\":\"m\",\"user\":\"u\","
             "\"encoding_format\":\"base64\",\"dimensions\":2}",
             &r);
    assert_int_equal(r.nrows, 1);
    assert_int_equal(r.single, 1);
    assert_string_equal(r.rows[0].text, "hello");
    assert_int_equal(r.base64, 1);
    assert_int_equal(r.dims, 2);
    tv_request_free(&r);

    parse_ok("{\"input\":[5,0,7]}", &r); /* one list of ids */
    assert_int_equal(r.nrows, 1);
    assert_int_equal(r.single, 1);
    assert_int_equal(r.rows[0].n, 3);
    assert_int_equal(r.rows[0].ids[2], 7);
    tv_request_free(&r);

    parse_ok("{\"input\":[\"a\",[1,2],\"bc\"],\"model\":null,"
             "\"encoding_format\":\"float\",\"dimensions\":null}",
             &r);
    assert_int_equal(r.nrows, 3);
    assert_int_equal(r.single, 0);
    assert_string_equal(r.rows[0].text, "a");
    assert_int_equal(r.rows[1].n, 2);
    assert_int_equal(r.rows[1].ids[0], 1);
    assert_string_equal(r.rows[2].text, "bc");
    assert_int_equal(r.base64, 0);
    assert_int_equal(r.dims, 0);
    tv_request_free(&r);
}

static void bad_bodies_are_refused_with_status_and_param(void **s)
{
    (void)s;
    static const struct {
        const char *body;
        int status;
        const char *says, *param;
    } bad[] = {
        {"{\"input\":\"a\",\"model\":3}", 400, "\"model\" must be a string",
         "model"},
        {"{\"input\":\"a\",\"user\":[]}", 400, "\"user\" must be a string",
         "user"},
        {"{\"input\":\"a\",\"encoding_format\":\"hex\"}", 400,
         "\"encoding_format\" must be", "encoding_format"},
        {"{\"input\":\"a\",\"encoding_format\":1}", 400,
         "\"encoding_format\" must be", "encoding_format"},
        {"{\"input\":\"a\",\"dimensions\":0}", 400,
         "\"dimensions\" must be a positive integer", "dimensions"},
        {"{\"input\":\"a\",\"dimensions\":\"2\"}", 400,
         "\"dimensions\" must be a positive integer", "dimensions"},
        {"{\"input\":\"a\",\"pooling\":\"mean\"}", 400,
         "unknown key \"pooling\"", NULL},
        {"{\"model\":\"m\"}", 400, "\"input\" must be a string", "input"},
        {"{\"input\":null}", 400, "\"input\" must be a string", "input"},
        {"{\"input\":7}", 400, "\"input\" must be a string", "input"},
        {"{\"input\":[]}", 400, "\"input\" must be a string", "input"},
        {"{\"input\":\"\"}", 400, "\"input\" is an empty string", "input"},
        {"{\"input\":[\"a\",{\"b\":1}]}", 400,
         "inputs[1] is neither a text nor a list of token ids", "input"},
        {"{\"input\":[\"a\",[]]}", 400, "sequence at batch index 1 is empty",
         "input"},
        {"{\"input\":[\"a\",[1,\"x\"]]}", 400, "", "input"},
        {"{\"input\":[\"a\",\"b\",\"c\",\"d\"]}", 413,
         "batch of 4 inputs is over max_batch 3", "input"},
        {"{\"input\":[[1,2,3],[4,5,6,7]]}", 413, "more than max_tokens 6 ids",
         "input"},
        {"[\"input\"]", 400, "", NULL},
        {"{\"input\":\"a\"", 400, "", NULL},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        tv_request r;
        tv_error err = {0};
        int rc = tv_request_parse_openai(bad[k].body, strlen(bad[k].body),
                                         &SMALL, &r, &err);
        if (rc != -1 || err.status != bad[k].status ||
            !strstr(err.message, bad[k].says) ||
            (bad[k].param ? !err.param || strcmp(err.param, bad[k].param)
                          : err.param != NULL))
            fail_msg("%s: rc %d, %d '%s' param %s", bad[k].body, rc,
                     err.status, err.message, err.param ? err.param : "-");
    }
    /* over max_body_bytes, whatever it holds */
    char big[600];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "{\"input\":\"a\"}", 13);
    tv_request r;
    tv_error err = {0};
    assert_int_equal(
        tv_request_parse_openai(big, strlen(big), &SMALL, &r, &err), -1);
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.message, "over max_body_bytes 400"));
}

/* POST /embed's pooled and answer options take the same slow path. */
static void embed_bodies_with_text_options_are_checked(void **s)
{
    (void)s;
    static const struct {
        const char *body;
        int status;
        const char *says;
    } bad[] = {
        {"{\"inputs\":\"a\",\"pooling\":\"mean\",\"normalize\":\"yes\"}", 400,
         "\"normalize\" must be true, false or null"},
        {"{\"inputs\":\"a\",\"pooling\":\"mean\",\"dimensions\":0}", 400,
         "\"dimensions\" must be a positive integer"},
        {"{\"inputs\":7,\"pooling\":\"mean\"}", 400,
         "\"inputs\" must be a text, a list of token ids"},
        {"{\"inputs\":[],\"pooling\":\"mean\"}", 400,
         "\"inputs\" must be a text, a list of token ids"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        tv_request r;
        tv_error err = {0};
        int rc = tv_request_parse_json(bad[k].body, strlen(bad[k].body),
                                       &SMALL, &r, &err);
        if (rc != -1 || err.status != bad[k].status ||
            !strstr(err.message, bad[k].says))
            fail_msg("%s: rc %d, %d '%s'", bad[k].body, rc, err.status,
                     err.message);
    }
    tv_request r;
    tv_error err = {0};
    static const char ok[] = "{\"inputs\":[\"a\",[1,2]],\"pooling\":\"mean\","
                             "\"normalize\":null,\"dimensions\":null}";
    assert_int_equal(tv_request_parse_json(ok, strlen(ok), &SMALL, &r, &err),
                     0);
    assert_int_equal(r.nrows, 2);
    assert_int_equal(r.normalize, -1);
    assert_int_equal(r.dims, 0);
    tv_request_free(&r);
    /* nested deeper than the pre-scan allows: refused before jansson */
    char deep[300];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "{\"input\":");
    for (int k = 0; k < 100; k++)
        deep[n++] = '[';
    deep[n] = '\0';
    assert_int_equal(tv_request_parse_openai(deep, n, &SMALL, &r, &err), -1);
    assert_int_equal(err.status / 100, 4);
}

/* The request path's allocation hook (alloc.h): the n-th allocation of a
 * parse refused, for each n. */
static long alloc_calls, alloc_fail_at;
static int refuse_nth(size_t n)
{
    (void)n;
    return ++alloc_calls == alloc_fail_at;
}

static void every_refused_allocation_is_a_500(void **s)
{
    (void)s;
    static const char *const bodies[] = {
        "{\"input\":[\"abc\",[1,2,3],\"de\"]}",
    };
    int failures = 0;
    for (long nth = 1; nth < 50; nth++) {
        tv_request r;
        tv_error err = {0};
        alloc_calls = 0;
        alloc_fail_at = nth;
        tv_alloc_fault = refuse_nth;
        int rc = tv_request_parse_openai(bodies[0], strlen(bodies[0]), &SMALL,
                                         &r, &err);
        tv_alloc_fault = NULL;
        if (rc == 0) {
            tv_request_free(&r);
            continue;
        }
        assert_int_equal(err.status, 500);
        assert_string_equal(err.message, "out of memory");
        failures++;
    }
    assert_true(failures >= 4); /* the rows, two texts, the ids */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_input_shape_gives_its_rows),
        cmocka_unit_test(bad_bodies_are_refused_with_status_and_param),
        cmocka_unit_test(embed_bodies_with_text_options_are_checked),
        cmocka_unit_test(every_refused_allocation_is_a_500),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
