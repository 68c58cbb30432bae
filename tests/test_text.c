/* test_text.c -- server/routes/text.c and server/routes/embed_text.c: the text
 * options, the book's window count, POST /tokenize and /decode run as their
 * jobs run (parse, then tv_text_run on this thread), and /embed's text rows
 * resolved into ids (windows, truncation, padding, errors). Uses `make
 * data`: the GPT-2 tokenizer (data/gpt2) and the default table.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "embed_text.h"
#include "text.h"

static tokvec_tokenizer *gpt2;
static tokvec_table *table; /* 50257 x 256, context 1024 */
static const tv_limits LIM = {.max_body_bytes = 1 << 20,
                              .max_tokens = 64,
                              .max_batch = 8};

static int setup(void **state)
{
    (void)state;
    if (tokvec_tokenizer_open("data/gpt2", NULL, &gpt2) < 0)
        return -1;
    return tokvec_table_open("data/gpt2-256.safetensors", NULL, &table) < 0
               ? -1
               : 0;
}

static int teardown(void **state)
{
    (void)state;
    tokvec_tokenizer_close(gpt2);
    tokvec_table_close(table);
    return 0;
}

static void windows_count_as_gptdatasetv1s_range(void **state)
{
    (void)state;
    /* the-verdict.txt: 5145 tokens, max_length 4, stride 4 */
    assert_int_equal(tv_text_windows(5145, 4, 4), 1286);
    assert_int_equal(tv_text_windows(4, 4, 4), 0); /* range(0, 0) */
    assert_int_equal(tv_text_windows(5, 4, 4), 1);
    assert_int_equal(tv_text_windows(10, 4, 2), 3); /* 0, 2, 4 */
    assert_int_equal(tv_text_windows(10, 3, 1), 7);
}

static void options_are_checked_by_type_and_range(void **state)
{
    (void)state;
    tv_text_opts o;
    tv_error e;
    tv_text_opts_init(&o);
    assert_int_equal(o.special, 1);
    json_t *t = json_true(), *two = json_integer(2), *zero = json_integer(0);
    json_t *left = json_string("left"), *up = json_string("up");
    assert_int_equal(tv_text_option(&o, "truncate", t, &e), 1);
    assert_int_equal(o.truncate, 1);
    assert_int_equal(tv_text_option(&o, "truncation_direction", left, &e), 1);
    assert_int_equal(o.left, 1);
    assert_int_equal(tv_text_option(&o, "truncation_direction", up, &e), -1);
    assert_int_equal(e.status, 400);
    assert_int_equal(tv_text_option(&o, "special_tokens", two, &e), -1);
    assert_int_equal(tv_text_option(&o, "max_length", zero, &e), -1);
    assert_int_equal(tv_text_option(&o, "pad_id", two, &e), 0);
    assert_int_equal(tv_text_option(&o, "stride", two, &e), 1);
    assert_int_equal(tv_text_opts_check(&o, 100, &e), -1); /* no max_length */
    assert_int_equal(tv_text_option(&o, "max_length", two, &e), 1);
    assert_int_equal(tv_text_opts_check(&o, 100, &e), 0);
    /* Issue 24, finding 10: a window past max_tokens is 413 at once
     * (2^63 - 1 made its message compute L + 1 and overflow). */
    assert_int_equal(tv_text_opts_check(&o, 1, &e), -1);
    assert_int_equal(e.status, 413);
    json_t *huge = json_integer(INT64_MAX);
    assert_int_equal(tv_text_option(&o, "max_length", huge, &e), 1);
    assert_int_equal(tv_text_opts_check(&o, 65536, &e), -1);
    assert_string_equal(e.type, "payload_too_large");
    assert_non_null(strstr(e.message, "9223372036854775807 is over "
                                      "max_tokens 65536"));
    json_decref(huge);
    json_decref(two);
    json_decref(zero);
    json_decref(left);
    json_decref(up);
}

/* One call of a test: the job, its answer (not NUL-terminated) or error. */
typedef struct {
    tv_text_call *c;
    const char *out;
    size_t len;
    tv_error e;
} call;

/* Parses body for kind and runs the job here (the call's previous job is
 * freed first); 0 and the answer, or -1 and the error. */
static int run(call *k, int kind, const char *body)
{
    uint64_t tokens;
    tv_text_free(k->c);
    if (tv_text_parse(kind, body, strlen(body), gpt2, &LIM, &k->c, &k->e) < 0)
        return -1;
    tv_text_run(k->c);
    return tv_text_result(k->c, &k->out, &k->len, &tokens, &k->e);
}

static void tokenize_answers_ids_texts_and_offsets(void **state)
{
    (void)state;
    call k = {0};
    assert_int_equal(run(&k, TV_TEXT_TOKENIZE,
                         "{\"inputs\":\"I \\u00e9<|endoftext|>\"}"),
                     0);
    /* "I", " \xc3", "\xa9" in GPT-2 (the e-acute is split), then the
     * special token */
    json_t *j = json_loadb(k.out, k.len, 0, NULL);
    assert_non_null(j);
    json_t *toks = json_array_get(j, 0);
    size_t at = 0;
    for (size_t i = 0; i < json_array_size(toks); i++) {
        json_t *t = json_array_get(toks, i);
        assert_int_equal(json_integer_value(json_object_get(t, "start")), at);
        at = (size_t)json_integer_value(json_object_get(t, "stop"));
    }
    assert_int_equal(at, strlen("I \xc3\xa9<|endoftext|>"));
    json_t *last = json_array_get(toks, json_array_size(toks) - 1);
    assert_int_equal(json_integer_value(json_object_get(last, "id")), 50256);
    assert_true(json_is_true(json_object_get(last, "special")));
    json_decref(j);
    tv_text_free(k.c);
}

static void tokenize_errors_known_after_tokenizing(void **state)
{
    (void)state;
    call k = {0};
    assert_int_equal(run(&k, TV_TEXT_TOKENIZE,
                         "{\"inputs\":\"a b\",\"max_length\":2}"),
                     -1);
    assert_string_equal(k.e.type, "text_too_short");
    char big[400] = "{\"inputs\":\"";
    for (int i = 0; i < 65; i++)
        strcat(big, " a");
    strcat(big, "\"}");
    assert_int_equal(run(&k, TV_TEXT_TOKENIZE, big), -1);
    assert_int_equal(k.e.status, 413);
    tv_text_free(k.c);
}

static void decode_checks_ids_when_parsing(void **state)
{
    (void)state;
    call k = {0};
    assert_int_equal(run(&k, TV_TEXT_DECODE, "{\"ids\":[[40],[1,50257]]}"),
                     -1);
    assert_string_equal(k.e.type, "token_out_of_range");
    assert_non_null(strstr(k.e.message, "batch index 1, position 1"));
    assert_int_equal(run(&k, TV_TEXT_DECODE, "{\"ids\":[40, 172]}"), 0);
    assert_int_equal(k.len, 8);
    assert_memory_equal(k.out, "[\"I\xef\xbf\xbd\"]", 8); /* U+FFFD */
    tv_text_free(k.c);
    tv_text_call *c = NULL;
    tv_error e;
    assert_int_equal(tv_text_parse(TV_TEXT_DECODE, "{\"ids\":[1]}", 11, NULL,
                                   &LIM, &c, &e),
                     -1);
    assert_non_null(strstr(e.message, "--tokenizer"));
}

/* Refusals of the parse, each with its status and message. */
static void bodies_are_refused_when_parsing(void **state)
{
    (void)state;
    static const struct {
        int kind;
        const char *body;
        int status;
        const char *says;
    } bad[] = {
        {TV_TEXT_TOKENIZE, "[\"a\"]", 400, "body must be a JSON object"},
        {TV_TEXT_TOKENIZE, "{\"inputs\":\"a\"", 400, "not valid JSON"},
        {TV_TEXT_TOKENIZE, "{\"inputs\":[[[[[[\"a\"]]]]]]}", 400, "deeper"},
        {TV_TEXT_TOKENIZE, "{\"inputs\":[]}", 400,
         "\"inputs\" must be a text or a non-empty list of texts"},
        {TV_TEXT_TOKENIZE, "{\"inputs\":7}", 400, "must be a text"},
        {TV_TEXT_TOKENIZE, "{\"inputs\":[\"a\",7]}", 400,
         "inputs[1] is not a string"},
        {TV_TEXT_TOKENIZE, "{\"max_length\":2}", 400, "missing \"inputs\""},
        {TV_TEXT_TOKENIZE, "{\"inputs\":\"a\",\"pad_id\":1}", 400,
         "unknown key \"pad_id\""},
        {TV_TEXT_TOKENIZE, "{\"inputs\":\"a\",\"truncate\":\"no\"}", 400,
         "\"truncate\" must be true or false"},
        {TV_TEXT_TOKENIZE, "{\"inputs\":[\"a\",\"b\"],\"max_length\":2}", 400,
         "windows take one text, not 2"},
        {TV_TEXT_TOKENIZE,
         "{\"inputs\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\","
         "\"i\"]}",
         413, "9 texts are over max_batch 8"},
        {TV_TEXT_DECODE, "{\"ids\":[1],\"skip_special_tokens\":1}", 400,
         "\"skip_special_tokens\" must be true or false"},
        {TV_TEXT_DECODE, "{\"ids\":[1],\"skip_special_tokens\":null}", 400,
         "\"skip_special_tokens\" must be true or false"},
        {TV_TEXT_DECODE, "{\"ids\":[1],\"skip\":true}", 400,
         "unknown key \"skip\" (allowed: ids, skip_special_tokens)"},
        {TV_TEXT_DECODE, "{\"ids\":{}}", 400, "\"ids\" must be a list"},
        {TV_TEXT_DECODE, "{}", 400, "\"ids\" must be a list"},
        {TV_TEXT_DECODE, "{\"ids\":[[1],2]}", 400, "ids[1] is not a list"},
        {TV_TEXT_DECODE, "{\"ids\":[[1],[2],[3],[4],[5],[6],[7],[8],[9]]}",
         413, "9 sequences are over max_batch 8"},
        {TV_TEXT_DECODE,
         "{\"ids\":[[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,"
         "17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,"
         "34,35,36,37,38,39,40],[1,2,3,4,5,6,7,8,9,10,11,12,"
         "13,14,15,16,17,18,19,20,21,22,23,24,25]]}",
         413, "65 ids are over max_tokens 64"},
        {TV_TEXT_DECODE, "{\"ids\":[1,\"2\"]}", 400,
         "id at batch index 0, position 1 is not an integer"},
        {TV_TEXT_DECODE, "{\"ids\":[-1]}", 422,
         "token id -1 at batch index 0"},
        {TV_TEXT_DECODE, "{\"ids\":[[1],[2,4294967296]]}", 422,
         "token id 4294967296 at batch index 1, position 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        call k = {0};
        if (run(&k, bad[i].kind, bad[i].body) != -1 ||
            k.e.status != bad[i].status || !strstr(k.e.message, bad[i].says))
            fail_msg("%s: %d %s", bad[i].body, k.e.status, k.e.message);
        tv_text_free(k.c);
    }
    /* an empty list of ids decodes to one empty text */
    call k = {0};
    assert_int_equal(run(&k, TV_TEXT_DECODE, "{\"ids\":[]}"), 0);
    assert_int_equal(k.len, 4);
    assert_memory_equal(k.out, "[\"\"]", 4);
    tv_text_free(k.c);
}

/* Windows of nothing, and more windows than max_batch. */
static void windows_of_an_empty_text_or_too_many_are_refused(void **state)
{
    (void)state;
    call k = {0};
    assert_int_equal(
        run(&k, TV_TEXT_TOKENIZE, "{\"inputs\":\"\",\"max_length\":2}"), -1);
    assert_string_equal(k.e.type, "text_too_short");
    assert_non_null(strstr(k.e.message, "the text is 0 tokens"));
    assert_int_equal(run(&k, TV_TEXT_TOKENIZE,
                         "{\"inputs\":\"a b c d e f g h i j k l\","
                         "\"max_length\":1,\"stride\":1}"),
                     -1);
    assert_int_equal(k.e.status, 413);
    assert_non_null(strstr(k.e.message, "11 windows of 1 tokens are over "
                                        "max_batch 8"));
    tv_text_free(k.c);
}

/* A WordPiece tokenizer with [CLS] ... [SEP] (tests/data/bge): the
 * vocabulary strings are the texts, the added tokens have the empty span,
 * and truncation leaves room for them -- none when max_tokens is not
 * over their number, and then they alone are over it. */
static void special_tokens_go_around_truncated_wordpiece_tokens(void **st)
{
    (void)st;
    tokvec_tokenizer *bge;
    assert_int_equal(
        tokvec_tokenizer_open("tests/data/bge/tokenizer.json", NULL, &bge), 0);
    static const char body[] =
        "{\"inputs\":[\"hello world again\",\"\"],"
        "\"add_special_tokens\":true,\"truncate\":true}";
    tv_limits lim = LIM;
    tv_text_call *c;
    tv_error e;
    const char *out;
    size_t len;
    uint64_t tokens;
    lim.max_tokens = 8;
    assert_int_equal(tv_text_parse(TV_TEXT_TOKENIZE, body, strlen(body), bge,
                                   &lim, &c, &e),
                     0);
    tv_text_run(c);
    assert_int_equal(tv_text_result(c, &out, &len, &tokens, &e), 0);
    json_t *j = json_loadb(out, len, 0, NULL);
    assert_non_null(j);
    json_t *a = json_array_get(j, 0), *b = json_array_get(j, 1);
    assert_int_equal(json_array_size(a), 5);
    assert_int_equal(json_array_size(b), 2);
    /* the template's ids (101, 102: this file's post-processor names
     * them so, whatever its vocabulary holds there) */
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(a, 0), "id")), 101);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(a, 4), "id")), 102);
    assert_string_equal(json_string_value(
                            json_object_get(json_array_get(a, 1), "text")),
                        "hello");
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(a, 4), "stop")), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(b, 1), "id")), 102);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(b, 1), "start")), 0);
    assert_int_equal(tokens, 7);
    json_decref(j);
    tv_text_free(c);
    lim.max_tokens = 4; /* one text: room for two of its tokens */
    static const char one[] = "{\"inputs\":\"hello world again\","
                              "\"add_special_tokens\":true,\"truncate\":true}";
    assert_int_equal(tv_text_parse(TV_TEXT_TOKENIZE, one, strlen(one), bge,
                                   &lim, &c, &e),
                     0);
    tv_text_run(c);
    assert_int_equal(tv_text_result(c, &out, &len, &tokens, &e), 0);
    assert_int_equal(tokens, 4);
    tv_text_free(c);
    lim.max_tokens = 1; /* no room: [CLS] and [SEP] alone are over it */
    assert_int_equal(tv_text_parse(TV_TEXT_TOKENIZE, one, strlen(one), bge,
                                   &lim, &c, &e),
                     0);
    tv_text_run(c);
    assert_int_equal(tv_text_result(c, &out, &len, &tokens, &e), -1);
    assert_int_equal(e.status, 413);
    tv_text_free(c);
    tokvec_tokenizer_close(bge);
}

/* The text of a token for /similar's answer: none for ids outside the
 * vocabulary or a buffer under three bytes a byte. */
static void token_text_is_bounded_by_the_id_and_the_buffer(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(tv_text_token_text(gpt2, 40, buf, sizeof buf), 1);
    assert_memory_equal(buf, "I", 1);
    assert_int_equal(tv_text_token_text(gpt2, -1, buf, sizeof buf), -1);
    assert_int_equal(
        tv_text_token_text(gpt2, (int64_t)INT32_MAX + 1, buf, sizeof buf), -1);
    assert_int_equal(tv_text_token_text(gpt2, 50257, buf, sizeof buf), -1);
    assert_int_equal(tv_text_token_text(gpt2, 40, buf, 2), -1);
    assert_int_equal(tv_text_token_text(gpt2, 40, buf, 3), 1);
}

static void rows(tv_request *r, const char *const *texts, int n)
{
    tv_request_init(r);
    r->has_text = 1;
    r->nrows = n;
    r->rows = calloc((size_t)n, sizeof *r->rows);
    for (int i = 0; i < n; i++) {
        r->rows[i].text = strdup(texts[i]);
        r->rows[i].len = strlen(texts[i]);
    }
}

static void embed_text_windows_hold_targets_shifted_by_one(void **state)
{
    (void)state;
    tv_request r;
    tv_error e;
    const char *t[] = {"I HAD always thought Jack Gisburn rather a cheap"};
    rows(&r, t, 1);
    r.text.max_length = 4;
    r.text.stride = 4;
    assert_int_equal(tv_embed_text_resolve(gpt2, table, NULL, &LIM, &r, &e),
                     0);
    assert_int_equal(r.batch, 2); /* 10 tokens: windows at 0 and 4 */
    assert_int_equal(r.seq, 4);
    const int64_t want[8] = {40, 367, 2885, 1464, 1807, 3619, 402, 271};
    for (int i = 0; i < 8; i++)
        assert_int_equal(r.ids[i], want[i]);
    for (int i = 0; i < 7; i++)
        if (i != 3)
            assert_int_equal(r.targets[i], r.ids[i + 1]);
    tv_request_free(&r);
}

static void embed_text_truncates_pads_or_is_ragged(void **state)
{
    (void)state;
    tv_request r;
    tv_error e;
    const char *t[] = {"one two three four", "one"};
    rows(&r, t, 2);
    assert_int_equal(tv_embed_text_resolve(gpt2, table, NULL, &LIM, &r, &e),
                     -1);
    assert_string_equal(e.type, "ragged_batch");
    tv_request_free(&r);
    rows(&r, t, 2);
    r.has_pad = 1;
    r.pad_id = 7;
    assert_int_equal(tv_embed_text_resolve(gpt2, table, NULL, &LIM, &r, &e),
                     0);
    assert_int_equal(r.seq, 4);
    assert_int_equal(r.ids[5], 7);
    tv_request_free(&r);
    rows(&r, t, 1);
    r.text.truncate = 1;
    r.text.left = 1;
    r.start_position = 1022; /* two positions left */
    assert_int_equal(tv_embed_text_resolve(gpt2, table, NULL, &LIM, &r, &e),
                     0);
    assert_int_equal(r.seq, 2);
    assert_int_equal(r.ids[0], 1115); /* " three" */
    tv_request_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(windows_count_as_gptdatasetv1s_range),
        cmocka_unit_test(options_are_checked_by_type_and_range),
        cmocka_unit_test(tokenize_answers_ids_texts_and_offsets),
        cmocka_unit_test(tokenize_errors_known_after_tokenizing),
        cmocka_unit_test(decode_checks_ids_when_parsing),
        cmocka_unit_test(bodies_are_refused_when_parsing),
        cmocka_unit_test(windows_of_an_empty_text_or_too_many_are_refused),
        cmocka_unit_test(special_tokens_go_around_truncated_wordpiece_tokens),
        cmocka_unit_test(token_text_is_bounded_by_the_id_and_the_buffer),
        cmocka_unit_test(embed_text_windows_hold_targets_shifted_by_one),
        cmocka_unit_test(embed_text_truncates_pads_or_is_ragged),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
