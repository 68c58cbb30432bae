/* test_request_prescan.c -- server/routes/request_prescan.c: the pre-scan that
 * refuses JSON bodies nested too deep (400) or holding too many values
 * (413) before jansson builds a tree (issue 15, finding 2), where in the
 * body it refuses, and which error wins when a body has several.
 */
#include <jansson.h>

#include "request_testutil.h"

/* --- the pre-scan before jansson (issue 15, finding 2) ------------------
 *
 * A body the fast path declines is scanned once (depth, value count)
 * before jansson builds a tree; too deep -> 400 invalid_request, too many
 * values -> 413 payload_too_large, both without a single jansson
 * allocation (counted through json_set_alloc_funcs). */

static size_t jansson_allocs;

static void *counting_malloc(size_t n)
{
    jansson_allocs++;
    return malloc(n);
}

static const char DEEP_INPUTS[] =
    "\"inputs\" nests deeper than a list of lists of ids";
static const char DEEP_BODY[] =
    "body nests lists or objects deeper than a request can (an object "
    "with \"inputs\", a list of lists of ids)";

/* The 413 message for lim: more values than any request within it. */
static const char *too_many(const tv_limits *lim)
{
    static char msg[320];
    int64_t rows = lim->max_batch < lim->max_tokens ? lim->max_batch
                                                    : lim->max_tokens;
    snprintf(msg, sizeof msg,
             "body holds more than %" PRId64 " JSON values, more than any "
             "request within max_tokens %" PRId64 " and max_batch %" PRId64
             " can hold",
             lim->max_tokens + rows + 12, lim->max_tokens, lim->max_batch);
    return msg;
}

/* tv_request_parse_json refuses body with exactly this error and jansson
 * never ran (no allocation through it); jansson alone refuses it too (some
 * error: the pre-scan never refuses a request jansson would take). */
static void assert_refused_before_jansson_n(const char *body, size_t len,
                                            const tv_limits *lim, int status,
                                            const char *type, const char *msg)
{
    tv_request r;
    tv_error e, es;
    memset(&e, 0, sizeof e);
    json_set_alloc_funcs(counting_malloc, free);
    jansson_allocs = 0;
    int rc = tv_request_parse_json(body, len, lim, &r, &e);
    size_t allocs = jansson_allocs;
    json_set_alloc_funcs(malloc, free);
    if (rc != -1)
        fail_msg("parsed: %.*s", len > 80 ? 80 : (int)len, body);
    assert_null(r.ids);
    if (e.status != status || strcmp(e.type, type) || strcmp(e.message, msg))
        fail_msg("got %d %s \"%s\", want %d %s \"%s\" for %.*s", e.status,
                 e.type, e.message, status, type, msg,
                 len > 80 ? 80 : (int)len, body);
    if (allocs)
        fail_msg("jansson allocated %zu times before the refusal", allocs);
    /* the pre-scan alone gives the same error */
    tv_error ep;
    size_t at = len;
    assert_int_equal(tv_request_prescan_json(body, len, lim, &ep, &at), -1);
    assert_int_equal(ep.status, e.status);
    assert_string_equal(ep.message, e.message);
    assert_true(at < len);
    assert_int_equal(tv_request_parse_json_slow(body, len, lim, &r, &es), -1);
    assert_falls_back_n(body, len, lim);
}

#define ASSERT_REFUSED(body, lim, status, type, msg) \
    assert_refused_before_jansson_n(body, strlen(body), lim, status, type, msg)

/* n times s, then tail, in a new string (caller frees). */
static char *repeat(const char *head, const char *s, size_t n,
                    const char *tail)
{
    size_t hl = strlen(head), sl = strlen(s), tl = strlen(tail);
    char *out = malloc(hl + sl * n + tl + 1), *p = out;
    memcpy(p, head, hl);
    p += hl;
    for (size_t i = 0; i < n; i++, p += sl)
        memcpy(p, s, sl);
    memcpy(p, tail, tl + 1);
    return out;
}

static void deep_nesting_is_400_before_jansson(void **state)
{
    (void)state;
    /* 2,000 levels inside "inputs" (jansson's own limit is 2,048) */
    char *a = repeat("{\"inputs\":", "[", 2000, "1");
    char *body = repeat(a, "]", 2000, "}");
    ASSERT_REFUSED(body, &LIM, 400, "invalid_request", DEEP_INPUTS);
    free(a);
    free(body);
    /* four lists inside "inputs" (a list of lists of lists of ids) */
    ASSERT_REFUSED("{\"inputs\":[[[[1]]]]}", &LIM, 400, "invalid_request",
                   DEEP_INPUTS);
    ASSERT_REFUSED("{\"positions\":true,\"inputs\":[[1],[[[2]]]]}", &LIM, 400,
                   "invalid_request", DEEP_INPUTS);
    /* a bare array, objects, another key: the generic message */
    a = repeat("", "[", 2000, "");
    body = repeat(a, "]", 2000, "");
    ASSERT_REFUSED(body, &LIM, 400, "invalid_request", DEEP_BODY);
    free(a);
    free(body);
    a = repeat("", "{\"a\":", 2000, "1");
    body = repeat(a, "}", 2000, "");
    ASSERT_REFUSED(body, &LIM, 400, "invalid_request", DEEP_BODY);
    free(a);
    free(body);
    ASSERT_REFUSED("[[[[[1]]]]]", &LIM, 400, "invalid_request", DEEP_BODY);
    ASSERT_REFUSED("{\"inputs\":[1],\"model\":{\"a\":[{\"b\":[]}]}}", &LIM,
                   400, "invalid_request", DEEP_BODY);
    /* unclosed: the pre-scan stops at the fifth level */
    body = repeat("", "[", 100000, "");
    ASSERT_REFUSED(body, &LIM, 400, "invalid_request", DEEP_BODY);
    free(body);
}

static void one_level_too_deep_keeps_jansson_messages(void **state)
{
    (void)state;
    /* A request one level deeper than valid is refused by jansson as
     * before, naming the batch index and position; the pre-scan refuses
     * from the fifth level (four lists inside "inputs") on. */
    assert_error("{\"inputs\":[[[1]]]}", 400, "invalid_request",
                 "token id at batch index 0, position 0 is not an integer: "
                 "[1]");
    assert_error("{\"inputs\":[[1,1],[2,[3]]]}", 400, "invalid_request",
                 "token id at batch index 1, position 1 is not an integer: "
                 "[3]");
    /* option values: lists up to that depth are jansson's type errors */
    assert_error("{\"inputs\":[1],\"positions\":[[[true]]]}", 400,
                 "invalid_request", "\"positions\" must be true or false");
    assert_error("{\"inputs\":[1],\"pad_id\":{\"a\":[{}]}}", 400,
                 "invalid_request", "\"pad_id\" must be an integer or null");
    /* deeper, the pre-scan's generic message */
    ASSERT_REFUSED("{\"inputs\":[1],\"positions\":[[[[true]]]]}", &LIM, 400,
                   "invalid_request", DEEP_BODY);
}

static void strings_do_not_count_as_nesting_or_values(void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20,
                           .max_tokens = 8,
                           .max_batch = 4}; /* at most 19 values */
    /* brackets, commas and escaped quotes inside strings: shallow */
    assert_error("{\"inputs\":[1],\"encoding_format\":\"[[[[[[[[\\\"]]]]\"}",
                 400, "invalid_request",
                 "\"encoding_format\" must be \"float\", \"base64\", "
                 "\"torch\" or \"npz\"");
    assert_error("{\"[[[[[[\":1,\"inputs\":[1]}", 400, "invalid_request",
                 "unknown key \"[[[[[[\"*");
    ASSERT_ERROR_LIM("{\"inputs\":[1],\"x\":\",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
                     "[[[[[[[[[[,,,,\"}",
                     &lim, 400, "invalid_request", "unknown key \"x\"*");
    /* an escaped backslash ends the string; what follows is counted */
    ASSERT_REFUSED("{\"k\\\\\":[[[[[1]]]]]}", &LIM, 400, "invalid_request",
                   DEEP_BODY);
    ASSERT_REFUSED("{\"encoding_format\":\"\\\\\\\"[[[[\","
                   "\"inputs\":[[[[[1]]]]]}",
                   &LIM, 400, "invalid_request", DEEP_INPUTS);
    /* an escaped quote does not end it: the brackets after it are text */
    assert_error("{\"inputs\":[1],\"x\":\"\\\"[[[[[[[\\\"\"}", 400,
                 "invalid_request", "unknown key \"x\"*");
    /* a string value "inputs" is not the key */
    ASSERT_REFUSED("{\"encoding_format\":\"inputs\",\"y\":[[[[1]]]]}", &LIM,
                   400, "invalid_request", DEEP_BODY);
}

static void too_many_values_is_413_before_jansson(void **state)
{
    (void)state;
    /* 200,000 ids with the defaults (max_tokens 65,536) */
    char *body = repeat("{\"inputs\":[", "1,", 200000, "1]}");
    ASSERT_REFUSED(body, &LIM, 413, "payload_too_large", too_many(&LIM));
    free(body);
    /* many empty lists (each would be a json_t) */
    body = repeat("{\"inputs\":[", "[],", 100000, "[]]}");
    ASSERT_REFUSED(body, &LIM, 413, "payload_too_large", too_many(&LIM));
    free(body);
    /* small limits: 8 tokens, 4 rows, so 24 values at most */
    const tv_limits lim = {.max_body_bytes = 1 << 20,
                           .max_tokens = 8,
                           .max_batch = 4};
    ASSERT_REFUSED("{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
                   "18,19,20,21,22,23]}",
                   &lim, 413, "payload_too_large", too_many(&lim));
    /* max_batch over max_tokens: rows are bounded by max_tokens */
    const tv_limits wide = {.max_body_bytes = 1 << 20,
                            .max_tokens = 2,
                            .max_batch = 100}; /* 2 + 2 + 12 = 16 */
    ASSERT_REFUSED("{\"inputs\":[[1],[1],[1],[1],[1],[1],[1],[1],[1]]}", &wide,
                   413, "payload_too_large", too_many(&wide));
    /* somewhat over max_tokens: still jansson's message */
    ASSERT_ERROR_LIM("{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}",
                     &lim, 413, "payload_too_large",
                     "1 x 16 tokens is over max_tokens 8");
}

static void prescan_names_the_offset_it_refused_at(void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20,
                           .max_tokens = 8,
                           .max_batch = 4};
    tv_error e;
    size_t at = 0;
    /* the fourth '[' in "inputs" (level 5, offset 26), not the ones in the
     * string before it */
    const char *b = "{\"k\":\"[[[[[\",\"inputs\":[ [[[[1]]]]]}";
    assert_int_equal(tv_request_prescan_json(b, strlen(b), &LIM, &e, &at), -1);
    assert_int_equal(at, 26);
    assert_string_equal(e.message, DEEP_INPUTS);
    /* the 25th value: the 23rd id, "23" at offset 68 */
    b = "{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,"
        "21,22,23,24]}";
    assert_int_equal(tv_request_prescan_json(b, strlen(b), &lim, &e, &at), -1);
    assert_int_equal(at, 68);
    assert_int_equal(e.status, 413);
    /* a request at the bound: every id, row and option of /embed */
    b = "{\"inputs\":[[1,2],[3,4],[5,6],[7,8]],\"start_position\":0,"
        "\"positions\":true,\"pad_id\":null,\"encoding_format\":\"float\","
        "\"dtype\":\"float32\","
        "\"special_tokens\":true,\"truncate\":false,"
        "\"truncation_direction\":\"right\",\"max_length\":2,\"stride\":1}";
    assert_int_equal(tv_request_prescan_json(b, strlen(b), &lim, &e, &at), 0);
    /* what it lets through: shallow and bounded, valid or not */
    const char *pass[] = {
        "",
        " ",
        "{",
        "[",
        "{\"inputs\":[[[1]]]}",
        "[[[[1]]]]",
        "{\"inputs\":[1,2,3]}",
        "{\"inputs\":[1,,[[[[[1]]]]]]}",
        "1",
        "\"[[[[[[\"",
        "{\"a\":1} [[[[[[",
        "{\"inputs\":[1]]]]]]]]]]]",
        "{\"a\":\"\\x\",\"b\":[[[[[1]]]]]}",
        "{\"inputs\":[01,[[[[1]]]]]}",
        "{\"inputs\":[1.e5,[[[[1]]]]]}",
        "{\"inputs\":[nul,[[[[1]]]]]}",
        "{\"inputs\":[+1,[[[[1]]]]]}",
        ("{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,"
         "20,21,22,23"),
    };
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
        if (tv_request_prescan_json(pass[i], strlen(pass[i]), &LIM, &e, &at))
            fail_msg("refused (%s): %s", e.message, pass[i]);
    /* with the small limits the last one is over: 413 */
    const char *last = pass[sizeof pass / sizeof pass[0] - 1];
    assert_int_equal(
        tv_request_prescan_json(last, strlen(last), &lim, &e, &at), -1);
    assert_int_equal(e.status, 413);
}

static void a_request_at_the_value_bound_still_parses(void **state)
{
    (void)state;
    /* The most values a valid request holds: max_tokens ids in max_batch
     * rows, "inputs", the object and all five options; an escaped key so
     * that jansson (after the pre-scan) is the parser. */
    const tv_limits lim = {.max_body_bytes = 1 << 20,
                           .max_tokens = 8,
                           .max_batch = 4};
    const char *b = "{\"\\u0069nputs\":[[1,2],[3,4],[5,6],[7,8]],"
                    "\"start_position\":0,\"positions\":true,"
                    "\"pad_id\":null,\"encoding_format\":\"torch\","
                    "\"dtype\":\"bfloat16\"}";
    tv_request r, s;
    tv_error e;
    assert_falls_back_n(b, strlen(b), &lim);
    assert_int_equal(tv_request_parse_json(b, strlen(b), &lim, &r, &e), 0);
    assert_int_equal(tv_request_parse_json_slow(b, strlen(b), &lim, &s, &e),
                     0);
    assert_same_request(&r, &s);
    assert_int_equal(r.batch * r.seq, 8);
    tv_request_free(&r);
    tv_request_free(&s);
    /* the defaults: 65,536 ids in 4,096 rows of 16 */
    char *row = repeat("[", "7,", 15, "7],");
    char *rows = repeat("", row, 4095, "[7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7]");
    char *body = repeat("{\"\\u0069nputs\":[", rows, 1,
                        "],\"pad_id\":0,\"positions\":false,"
                        "\"start_position\":3,"
                        "\"encoding_format\":\"base64\"}");
    size_t len = strlen(body);
    assert_falls_back_n(body, len, &LIM);
    assert_int_equal(tv_request_parse_json(body, len, &LIM, &r, &e), 0);
    assert_int_equal(tv_request_parse_json_slow(body, len, &LIM, &s, &e), 0);
    assert_same_request(&r, &s);
    assert_int_equal(r.batch, 4096);
    assert_int_equal(r.seq, 16);
    tv_request_free(&r);
    tv_request_free(&s);
    free(row);
    free(rows);
    free(body);
}

static void precedence_syntax_errors_before_a_limit_stay_invalid_json(
    void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20,
                           .max_tokens = 8,
                           .max_batch = 4};
    /* A JSON syntax error (structure, a bad number or literal, a control
     * character or bad escape in a string) before the point where the body
     * becomes too deep or too large: jansson's error, line and column. */
    const tu_refusal refusals[] = {
        {"{\"inputs\":[1,,[[[[[1]]]]]]}", 400, "invalid_json",
         "body is not valid JSON: unexpected token near ',' "
         "(line 1, column 14)"},
        {"{\"inputs\":[[1],\n[01],[[[[[1]]]]]]}", 400, "invalid_json",
         "body is not valid JSON: invalid token near '0' (line 2, column 2)"},
        {"{\"inputs\":[tru,[[[[[1]]]]]]}", 400, "invalid_json",
         "body is not valid JSON: invalid token near 'tru' "
         "(line 1, column 14)"},
        {"{\"x\":\"a\tb\",\"inputs\":[[[[[1]]]]]}", 400, "invalid_json",
         "body is not valid JSON: control "
         "character 0x9 near '\"a' (line 1, column 7)"},
        {"{\"x\":\"\\q\",\"inputs\":[[[[[1]]]]]}", 400, "invalid_json",
         "body is not valid JSON: invalid escape "
         "near '\"\\q' (line 1, column 8)"},
        {"{\"inputs\" [[[[[1]]]]]}", 400, "invalid_json",
         "body is not valid JSON: ':' expected near '[' (line 1, column 11)"},
    };
    ASSERT_REFUSALS(refusals);
    ASSERT_ERROR_LIM("{\"inputs\":[1 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
                     "18,19,20]}",
                     &lim, 400, "invalid_json",
                     "body is not valid JSON: ']' expected near '2' "
                     "(line 1, column 14)");
    /* a NUL anywhere and max_body_bytes come first, as before */
    static const char nul[] = "{\"inputs\":[[[[[1]]]]]}\0";
    assert_error_n(nul, sizeof nul - 1, &LIM, 400, "invalid_json",
                   "body is not valid JSON: NUL byte at offset 22");
    const tv_limits tiny = {.max_body_bytes = 16,
                            .max_tokens = 8,
                            .max_batch = 4};
    ASSERT_ERROR_LIM("{\"inputs\":[[[[[1]]]]]}", &tiny, 413,
                     "payload_too_large",
                     "body of 22 bytes is over max_body_bytes 16");
}

static void precedence_too_deep_or_too_large_before_a_syntax_error(
    void **state)
{
    (void)state;
    const tv_limits lim = {.max_body_bytes = 1 << 20,
                           .max_tokens = 8,
                           .max_batch = 4};
    /* the limit is reached first in the text: the pre-scan answers */
    ASSERT_REFUSED("{\"inputs\":[[[[[1]]]]],,}", &LIM, 400, "invalid_request",
                   DEEP_INPUTS);
    ASSERT_REFUSED("{\"inputs\":[[[[[", &LIM, 400, "invalid_request",
                   DEEP_INPUTS);
    ASSERT_REFUSED("{\"inputs\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
                   "18,19,20,21,22,23 24]}",
                   &lim, 413, "payload_too_large", too_many(&lim));
    /* and so it does past errors inside a token that it does not check: an
     * integer out of range, a duplicate key */
    ASSERT_REFUSED("{\"inputs\":[99999999999999999999,[[[[1]]]]]}", &LIM, 400,
                   "invalid_request", DEEP_INPUTS);
    ASSERT_REFUSED("{\"inputs\":[1],\"inputs\":[[[[[1]]]]]}", &LIM, 400,
                   "invalid_request", DEEP_INPUTS);
}

/* Each lexical form the pre-scan reads: a valid one before a too deep
 * "inputs" is read past (the pre-scan refuses the nesting), an invalid one
 * stops it there (jansson answers). jansson agrees on which is which. */
static void each_token_form_is_read_past_or_stops_the_scan(void **state)
{
    (void)state;
    static const char *const valid[] = {
        "-1",
        "0",
        "-0.5",
        "1.25e+3",
        "1E-2",
        "2e5",
        "10.0E-0",
        "\"\\u00aF\\uABcd\"",
        "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
        "\"\xc3\xa9\"",
        "true",
        "false",
        "null",
        "[ ]",
        "{ }",
        " \t\n\r1 ",
        "[true,null]",
        "{\"a\":\"b\"}",
    };
    static const char *const invalid[] = {
        "-",       "-a",         "1.",        "1.e3",        "1e",
        "1e+",     "1E-x",       "\"\\u12\"", "\"\\u12G4\"", "\"\\u\"",
        "\"\\x\"", "\"\\\x01\"", "tru",       "nul",         "fals",
        "trux",    "nulk",       "+1",        ".5",          "x",
    };
    char body[256], alone[128];
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        snprintf(body, sizeof body, "{\"x\":%s,\"inputs\":[[[[[1]]]]]}",
                 valid[i]);
        snprintf(alone, sizeof alone, "{\"x\":%s}", valid[i]);
        json_error_t je;
        json_t *j = json_loads(alone, 0, &je);
        if (!j)
            fail_msg("jansson refuses %s: %s", alone, je.text);
        json_decref(j);
        tv_error e = {0};
        if (tv_request_prescan_json(body, strlen(body), &LIM, &e, NULL) !=
                -1 ||
            e.status != 400)
            fail_msg("%s: not read past (%d %s)", body, e.status, e.message);
    }
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        snprintf(body, sizeof body, "{\"x\":%s,\"inputs\":[[[[[1]]]]]}",
                 invalid[i]);
        json_error_t je;
        json_t *j = json_loads(body, 0, &je);
        if (j)
            fail_msg("jansson takes %s", body);
        tv_error e = {0};
        if (tv_request_prescan_json(body, strlen(body), &LIM, &e, NULL) != 0)
            fail_msg("%s: refused (%d %s), not left to jansson", body,
                     e.status, e.message);
    }
    /* a body that ends inside a token: left to jansson */
    static const char *const cut[] = {"{\"x\":\"\\", "{\"x\":\"\\u00",
                                      "{\"x\":-",    "{\"x\":1e",
                                      "{\"x\":1.",   "{\"x\":tr",
                                      "{\"x\":\"ab"};
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        tv_error e = {0};
        assert_int_equal(tv_request_prescan_json(cut[i], strlen(cut[i]), &LIM,
                                                 &e, NULL),
                         0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deep_nesting_is_400_before_jansson),
        cmocka_unit_test(one_level_too_deep_keeps_jansson_messages),
        cmocka_unit_test(strings_do_not_count_as_nesting_or_values),
        cmocka_unit_test(too_many_values_is_413_before_jansson),
        cmocka_unit_test(prescan_names_the_offset_it_refused_at),
        cmocka_unit_test(a_request_at_the_value_bound_still_parses),
        cmocka_unit_test(
            precedence_syntax_errors_before_a_limit_stay_invalid_json),
        cmocka_unit_test(
            precedence_too_deep_or_too_large_before_a_syntax_error),
        cmocka_unit_test(each_token_form_is_read_past_or_stops_the_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
