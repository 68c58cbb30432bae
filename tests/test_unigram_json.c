/* test_unigram_json.c -- core/tokenizer/unigram.c's tv_unigram_from_json,
 * what test_unigram.c leaves: each refusal with its one-line reason (also
 * with no error buffer), and the scores as serde_json reads them (an
 * integer, a positive and a negative decimal, a subnormal one past
 * 10^-308, the largest f64) read back through tv_unigram_piece; the
 * empty string, which has no id and no tokens.
 * Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unigram.h"

static int from_text(const char *text, tv_unigram **u, char *err,
                     size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    assert_non_null(j);
    int rc = tv_unigram_from_json(j, u, err, errlen);
    json_decref(j);
    return rc;
}

static void each_malformed_model_is_refused_with_its_reason(void **s)
{
    (void)s;
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"[1]", "model: not an object"},
        {"{\"type\":5,\"vocab\":[]}", "model.type: not \"Unigram\""},
        {"{\"type\":\"BPE\",\"vocab\":[]}", "model.type: not \"Unigram\""},
        {"{\"vocab\":{}}", "model.vocab: missing or not an array"},
        {"{\"vocab\":[[\"a\",0]],\"unk_id\":-1}",
         "model.unk_id: not null or an index"},
        {"{\"vocab\":[[\"a\",0]],\"unk_id\":\"0\"}",
         "model.unk_id: not null or an index"},
        {"{\"vocab\":[[\"a\",0]],\"byte_fallback\":1}",
         "model.byte_fallback: not a boolean"},
        {"{\"vocab\":[],\"unk_id\":0}",
         "model.vocab: empty but unk_id is set"},
        {"{\"vocab\":[[\"a\",0]],\"unk_id\":1}",
         "model.unk_id: 1 pieces, unk_id past them"},
        {"{\"vocab\":[[\"a\",0],[\"b\"]]}",
         "model.vocab[1]: not [piece, score]"},
        {"{\"vocab\":[[\"a\",0,1]]}", "model.vocab[0]: not [piece, score]"},
        {"{\"vocab\":[[1,0]]}", "model.vocab[0]: not [piece, score]"},
        {"{\"vocab\":[[\"a\",\"0\"]]}", "model.vocab[0]: not [piece, score]"},
        {"{\"vocab\":[\"a\"]}", "model.vocab[0]: not [piece, score]"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tv_unigram *u = (tv_unigram *)1;
        char err[128] = "";
        assert_int_equal(from_text(bad[k].json, &u, err, sizeof err),
                         TOKVEC_E_TOKENIZER);
        assert_null(u);
        if (strcmp(err, bad[k].says))
            fail_msg("%s: '%s', want '%s'", bad[k].json, err, bad[k].says);
        assert_int_equal(from_text(bad[k].json, &u, NULL, 0),
                         TOKVEC_E_TOKENIZER);
        strcpy(err, "zz");
        assert_int_equal(from_text(bad[k].json, &u, err, 0),
                         TOKVEC_E_TOKENIZER);
        assert_string_equal(err, "zz");
    }
    /* a piece that is not UTF-8 (jansson takes it unchecked) */
    json_t *j = json_pack("{s:[[s,f]]}", "vocab", "a", -1.0);
    json_array_set_new(json_array_get(json_object_get(j, "vocab"), 0), 0,
                       json_stringn_nocheck("\xff", 1));
    tv_unigram *u = NULL;
    char err[128] = "";
    assert_int_equal(tv_unigram_from_json(j, &u, err, sizeof err),
                     TOKVEC_E_TOKENIZER);
    assert_string_equal(err, "model.vocab: a piece too long or not UTF-8");
    json_decref(j);
}

static double score_of(const tv_unigram *u, int32_t id)
{
    size_t len;
    double sc = 0;
    assert_non_null(tv_unigram_piece(u, id, &len, &sc));
    return sc;
}

static void scores_are_read_as_serde_json_reads_them(void **s)
{
    (void)s;
    tv_unigram *u = NULL;
    char err[128] = "";
    assert_int_equal(
        from_text("{\"type\":\"Unigram\",\"unk_id\":null,\"byte_fallback\":"
                  "false,\"vocab\":[[\"a\",3],[\"b\",2.5],[\"c\",-1.5],"
                  "[\"d\",1e-320],[\"e\",1.7976931348623157e308],"
                  "[\"f\",-0.0],[\"g\",-2.0e-5]]}",
                  &u, err, sizeof err),
        0);
    assert_int_equal(tv_unigram_size(u), 7);
    assert_int_equal(tv_unigram_unk(u), -1);
    assert_true(score_of(u, 0) == 3.0);
    assert_true(score_of(u, 1) == 2.5);
    assert_true(score_of(u, 2) == -1.5);
    /* 1 / 1e308 / 1e12: a subnormal near 1e-320 */
    double d = score_of(u, 3);
    assert_true(d > 0.99e-320 && d < 1.01e-320);
    assert_true(score_of(u, 4) == DBL_MAX);
    assert_true(score_of(u, 5) == 0.0);
    assert_true(score_of(u, 6) == -2.0e-5);
    assert_null(tv_unigram_piece(u, 7, &(size_t){0}, &d));
    assert_null(tv_unigram_piece(u, -1, &(size_t){0}, &d));
    /* the empty string: no id, no tokens */
    assert_int_equal(tv_unigram_id(u, (const unsigned char *)"a", 0), -1);
    assert_int_equal(tv_unigram_id(u, (const unsigned char *)"a", 1), 0);
    tv_uni_work *w = tv_uni_work_new();
    tv_uni_toks toks = {0};
    assert_non_null(w);
    assert_int_equal(
        tv_unigram_encode(u, w, (const unsigned char *)"", 0, 0, &toks), 0);
    assert_int_equal(toks.n, 0);
    assert_int_equal(
        tv_unigram_encode(u, w, (const unsigned char *)"ab", 2, 10, &toks), 0);
    assert_int_equal(toks.n, 2); /* a (3) + b (2.5) */
    assert_int_equal(toks.id[0], 0);
    assert_int_equal(toks.start[1], 11);
    assert_int_equal(toks.end[1], 12);
    tv_uni_toks_free(&toks);
    tv_uni_work_free(w);
    tv_unigram_free(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_malformed_model_is_refused_with_its_reason),
        cmocka_unit_test(scores_are_read_as_serde_json_reads_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
