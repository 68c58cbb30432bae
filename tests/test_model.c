/* test_model.c -- static embedding model directories (tokvec_model.h) and
 * the sentence vector (tokvec_embed_mean), through the core API.
 *
 * Real data: the five model2vec-rs test models in tests/data/model2vec-rs
 * (MIT, LICENSE there): float32, float16, int8 and vocabulary-quantized
 * (weights F64 + mapping I32, a Unigram tokenizer) Model2Vec layouts, and
 * a sentence-transformers one. Their tokenizers (WordPiece, Unigram) are
 * not read here -- only their vocabularies, as Model2Vec's encode does;
 * text through the server is tests/e2e/test_sentences.py. Rows are checked
 * against the raw tensors read through tokvec_table_tensor; malformed
 * directories are written into a temporary directory, one rule each.
 * One thread.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "testutil.h"
#include "tok_fixture.h"
#include "tokvec_embed.h"
#include "tokvec_model.h"

#define FIX "tests/data/model2vec-rs/"

static tokvec_model *open_ok(const char *dir)
{
    char err[512] = "";
    tokvec_model_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_model *m = NULL;
    int rc = tokvec_model_open(dir, &o, &m);
    if (rc < 0)
        fail_msg("%s: %s", dir, err);
    return m;
}

static const tokvec_tensor *tensor(const tokvec_table *t, const char *name,
                                   tokvec_tensor *x)
{
    for (size_t i = 0; i < tokvec_table_tensor_count(t); i++)
        if (tokvec_table_tensor(t, i, x) == 0 && !strcmp(x->name, name))
            return x;
    fail_msg("no tensor %s", name);
    return NULL;
}

static float row_value(const tokvec_table *t, int64_t id, int64_t j)
{
    tokvec_row r;
    float v[64];
    assert_int_equal(tokvec_table_token_row(t, id, &r), 0);
    assert_true(r.dim <= 64);
    tokvec_row_to_f32(&r, v);
    return v[j];
}

static void fixtures_open_with_their_layout_and_normalization(void **state)
{
    (void)state;
    static const struct {
        const char *dir;
        tokvec_model_layout layout;
        const char *from;
        int64_t V, D, K;
    } cases[] = {
        {FIX "test-model-float32", TOKVEC_LAYOUT_MODEL2VEC, "modules.json",
         29528, 2, 29528},
        {FIX "test-model-float16", TOKVEC_LAYOUT_MODEL2VEC, "modules.json",
         29528, 2, 29528},
        {FIX "test-model-int8", TOKVEC_LAYOUT_MODEL2VEC, "modules.json", 29528,
         2, 29528},
        {FIX "test-model-vocab-quantized", TOKVEC_LAYOUT_MODEL2VEC,
         "modules.json", 29524, 64, 128},
        {FIX "test-model-sentence-transformers",
         TOKVEC_LAYOUT_SENTENCE_TRANSFORMERS,
         "config_sentence_transformers.json", 29528, 2, 29528},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tokvec_model *m = open_ok(cases[i].dir);
        const tokvec_model_info *mi = tokvec_model_get_info(m);
        const tokvec_table_info *in = tokvec_table_get_info(
            tokvec_model_table(m));
        assert_int_equal(mi->layout, cases[i].layout);
        assert_int_equal(mi->normalize, 1);
        assert_string_equal(mi->normalize_from, cases[i].from);
        assert_int_equal(in->vocab_size, cases[i].V);
        assert_int_equal(in->dim, cases[i].D);
        assert_int_equal(in->stored_rows, cases[i].K);
        assert_int_equal(in->positional, TOKVEC_POS_NONE);
        tokvec_model_close(m);
    }
}

static void normalize_override_beats_the_files(void **state)
{
    (void)state;
    tokvec_model_opts o = {.normalize_set = 1, .normalize = 0};
    tokvec_model *m = NULL;
    assert_int_equal(tokvec_model_open(FIX "test-model-float32", &o, &m), 0);
    assert_int_equal(tokvec_model_get_info(m)->normalize, 0);
    assert_string_equal(tokvec_model_get_info(m)->normalize_from, "override");
    tokvec_model_close(m);
}

/* numpy: int(np.median([len(t) for t in tok.get_vocab()])), added
 * tokens included (6 and 7, computed so); unk: model.unk_token's id
 * (this WordPiece vocabulary's "[UNK]" is 1), none for Unigram. */
static void median_and_unk_come_from_the_vocabulary(void **state)
{
    (void)state;
    tokvec_model *m = open_ok(FIX "test-model-float32");
    assert_int_equal(tokvec_model_get_info(m)->median_token_length, 6);
    assert_int_equal(tokvec_model_get_info(m)->unk_id, 1);
    assert_int_equal(tokvec_model_get_info(m)->tokenizer_tokens, 29528);
    tokvec_model_close(m);
    m = open_ok(FIX "test-model-vocab-quantized");
    assert_int_equal(tokvec_model_get_info(m)->median_token_length, 7);
    assert_int_equal(tokvec_model_get_info(m)->unk_id, -1);
    tokvec_model_close(m);
}

/* row id = embeddings[mapping[id]] * weights[id], in double, rounded. */
static void quantized_rows_are_mapped_rows_times_weights(void **state)
{
    (void)state;
    tokvec_model *m = open_ok(FIX "test-model-vocab-quantized");
    const tokvec_table *t = tokvec_model_table(m);
    tokvec_tensor e, w, mp;
    tensor(t, "embeddings", &e);
    tensor(t, "weights", &w);
    tensor(t, "mapping", &mp);
    static const int64_t ids[] = {0, 1, 100, 2000, 29523};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        int32_t row;
        double wt;
        memcpy(&row, (const char *)mp.data + 4 * ids[k], 4);
        memcpy(&wt, (const char *)w.data + 8 * ids[k], 8);
        assert_true(row >= 0 && row < 128);
        for (int64_t j = 0; j < 64; j++) {
            float ev;
            memcpy(&ev, (const char *)e.data + 4 * (row * 64 + j), 4);
            float want = (float)((double)ev * wt);
            assert_int_equal(tokvec_f32_bits(row_value(t, ids[k], j)),
                             tokvec_f32_bits(want));
        }
    }
    tokvec_row r;
    assert_int_equal(tokvec_table_token_row(t, 29524, &r),
                     TOKVEC_E_TOKEN_RANGE);
    tokvec_model_close(m);
}

static void int8_rows_are_used_as_stored(void **state)
{
    (void)state;
    tokvec_model *m = open_ok(FIX "test-model-int8");
    const tokvec_table *t = tokvec_model_table(m);
    tokvec_tensor e;
    tensor(t, "embeddings", &e);
    for (int64_t id = 0; id < 29528; id += 997)
        for (int64_t j = 0; j < 2; j++)
            assert_true(row_value(t, id, j) ==
                        (float)((const signed char *)e.data)[id * 2 + j]);
    assert_string_equal(tokvec_table_get_info(t)->token_dtype, "I8");
    tokvec_model_close(m);
}

/* The mean against a double reference; normalized; zeros for no ids;
 * the first k components renormalized. */
static void mean_is_the_double_mean_then_normalized(void **state)
{
    (void)state;
    tokvec_model *m = open_ok(FIX "test-model-vocab-quantized");
    const tokvec_table *t = tokvec_model_table(m);
    static const int64_t ids[] = {5, 17, 2000, 5, 29000, 123};
    const int64_t n = sizeof ids / sizeof ids[0];
    double ref[64] = {0}, norm = 0, norm8 = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < 64; j++)
            ref[j] += row_value(t, ids[i], j);
    for (int64_t j = 0; j < 64; j++) {
        ref[j] /= (double)n;
        norm += ref[j] * ref[j];
        if (j < 8)
            norm8 += ref[j] * ref[j];
    }
    norm = sqrt(norm);
    norm8 = sqrt(norm8);
    float out[64];
    assert_int_equal(tokvec_embed_mean(t, ids, n, 0, 64, 0, out), 0);
    for (int64_t j = 0; j < 64; j++)
        assert_float_equal(out[j], ref[j], 1e-6);
    assert_int_equal(
        tokvec_embed_mean(t, ids, n, 0, 64, TOKVEC_MEAN_NORMALIZE, out), 0);
    for (int64_t j = 0; j < 64; j++)
        assert_float_equal(out[j], ref[j] / (norm + 1e-32), 1e-6);
    assert_int_equal(
        tokvec_embed_mean(t, ids, n, 0, 8, TOKVEC_MEAN_NORMALIZE, out), 0);
    for (int64_t j = 0; j < 8; j++)
        assert_float_equal(out[j], ref[j] / norm8, 1e-6);
    assert_int_equal(
        tokvec_embed_mean(t, NULL, 0, 0, 64, TOKVEC_MEAN_NORMALIZE, out), 0);
    for (int64_t j = 0; j < 64; j++)
        assert_true(out[j] == 0.0f);
    int64_t bad = 29524;
    assert_int_equal(tokvec_embed_mean(t, &bad, 1, 0, 64, 0, out),
                     TOKVEC_E_TOKEN_RANGE);
    assert_int_equal(tokvec_embed_mean(t, ids, n, 0, 65, 0, out),
                     TOKVEC_E_INVAL);
    tokvec_model_close(m);
}

static void text_cut_keeps_max_tokens_times_median_code_points(void **state)
{
    (void)state;
    tokvec_model *m = open_ok(FIX "test-model-float32"); /* median 6 */
    const char *s = "abcdefghijklmn\xc3\xa9\xc3\xa9xyz"; /* 19 code points */
    size_t len = strlen(s);
    assert_int_equal(tokvec_model_text_cut(m, s, len, 2), 12);
    /* 3 x 6 = 18 code points: the two-byte e's count once each */
    assert_int_equal(tokvec_model_text_cut(m, s, len, 3), len - 1);
    assert_int_equal(tokvec_model_text_cut(m, s, len, 4), len);
    assert_int_equal(tokvec_model_text_cut(m, s, len, 0), len);
    tokvec_model_close(m);
}

static void default_name_is_the_directory_or_the_hub_repository(void **st)
{
    (void)st;
    char b[64];
    tokvec_model_default_name("models/potion-base-8M/", b, sizeof b);
    assert_string_equal(b, "potion-base-8M");
    tokvec_model_default_name("/h/.cache/huggingface/hub/models--minishlab--"
                              "potion-base-8M/snapshots/abc123",
                              b, sizeof b);
    assert_string_equal(b, "potion-base-8M");
    tokvec_model_default_name("m2v", b, sizeof b);
    assert_string_equal(b, "m2v");
}

/* --- malformed directories: one line naming the file ------------------- */

static char dir[256];

/* A safetensors file of the named tensors: F32 embeddings [K, 2], and
 * optionally weights F64 [V] and mapping I32 [V] with the given values. */
static void put_model(int64_t K, int64_t V, const int32_t *mapping,
                      int weights)
{
    char hdr[512];
    size_t e = (size_t)K * 8, w = weights ? (size_t)V * 8 : 0,
           mp = mapping ? (size_t)V * 4 : 0;
    int n = snprintf(hdr, sizeof hdr,
                     "{\"embeddings\":{\"dtype\":\"F32\",\"shape\":[%lld,2],"
                     "\"data_offsets\":[0,%zu]}",
                     (long long)K, e);
    if (weights)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n,
                      ",\"weights\":{\"dtype\":\"F64\",\"shape\":[%lld],"
                      "\"data_offsets\":[%zu,%zu]}",
                      (long long)V, e, e + w);
    if (mapping)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n,
                      ",\"mapping\":{\"dtype\":\"I32\",\"shape\":[%lld],"
                      "\"data_offsets\":[%zu,%zu]}",
                      (long long)V, e + w, e + w + mp);
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "}");
    size_t total = 8 + (size_t)n + e + w + mp;
    unsigned char *buf = calloc(1, total);
    assert_non_null(buf);
    uint64_t hl = (uint64_t)n;
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(hl >> (8 * i));
    memcpy(buf + 8, hdr, (size_t)n);
    double one = 1.0;
    for (int64_t i = 0; weights && i < V; i++)
        memcpy(buf + 8 + n + e + 8 * (size_t)i, &one, 8);
    if (mapping)
        memcpy(buf + 8 + n + e + w, mapping, mp);
    tf_put(dir, "model.safetensors", buf, total);
    free(buf);
}

static const char *const TOKJSON =
    "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"bb\":1,\"ccc\":2},"
    "\"merges\":[]},\"added_tokens\":[]}";

static void fresh_dir(const char *name)
{
    snprintf(dir, sizeof dir, "%s/%s", tu_dir, name);
    assert_int_equal(mkdir(dir, 0700), 0);
}

/* opens dir: the code, with err holding the message */
static int open_err(char *err, size_t len)
{
    tokvec_model_opts o = {.errbuf = err, .errlen = len};
    tokvec_model *m = NULL;
    int rc = tokvec_model_open(dir, &o, &m);
    tokvec_model_close(m);
    return rc;
}

#define ASSERT_REFUSED(code, file, what)                                     \
    do {                                                                     \
        char err_[512] = "";                                                 \
        assert_int_equal(open_err(err_, sizeof err_), (code));               \
        if (!strstr(err_, (file)) || !strstr(err_, (what)))                  \
            fail_msg("message \"%s\" does not name %s and %s", err_, (file), \
                     (what));                                                \
    } while (0)

static void malformed_directories_are_one_line_naming_the_file(void **st)
{
    (void)st;
    int32_t good[3] = {0, 1, 1}, bad[3] = {0, 2, 1};

    fresh_dir("no-table");
    tf_put_str(dir, "tokenizer.json", TOKJSON);
    ASSERT_REFUSED(TOKVEC_E_MODEL, "no-table", "no model.safetensors");

    fresh_dir("no-tokenizer");
    put_model(2, 3, good, 1);
    ASSERT_REFUSED(TOKVEC_E_MODEL, "tokenizer.json", "missing");

    fresh_dir("mapping-past-K");
    tf_put_str(dir, "tokenizer.json", TOKJSON);
    put_model(2, 3, bad, 1);
    ASSERT_REFUSED(TOKVEC_E_OFFSETS, "model.safetensors",
                   "'mapping'[1] is 2, not a row of 'embeddings' [0, 2)");

    fresh_dir("weights-without-mapping");
    tf_put_str(dir, "tokenizer.json", TOKJSON);
    put_model(2, 3, NULL, 1);
    ASSERT_REFUSED(TOKVEC_E_MISMATCH, "model.safetensors",
                   "'weights' has 3 values but 'embeddings' has 2 rows");

    fresh_dir("bad-modules");
    tf_put_str(dir, "tokenizer.json", TOKJSON);
    put_model(2, 3, good, 1);
    tf_put_str(dir, "modules.json", "{\"type\":\"x\"}");
    ASSERT_REFUSED(TOKVEC_E_MODEL, "modules.json", "not a JSON list");

    fresh_dir("bad-config");
    tf_put_str(dir, "tokenizer.json", TOKJSON);
    put_model(2, 3, good, 1);
    tf_put_str(dir, "config.json", "{\"normalize\":\"yes\"}");
    ASSERT_REFUSED(TOKVEC_E_MODEL, "config.json", "\"normalize\" is not");

    fresh_dir("broken-json");
    tf_put_str(dir, "tokenizer.json", TOKJSON);
    put_model(2, 3, good, 1);
    tf_put_str(dir, "config_sentence_transformers.json", "{\"normalize\":");
    ASSERT_REFUSED(TOKVEC_E_MODEL, "config_sentence_transformers.json",
                   "not valid JSON");

    fresh_dir("bad-tokenizer");
    tf_put_str(dir, "tokenizer.json", "{\"model\":{}}");
    put_model(2, 3, good, 1);
    ASSERT_REFUSED(TOKVEC_E_MODEL, "tokenizer.json", "\"vocab\"");

    fresh_dir("unknown-unk");
    tf_put_str(dir, "tokenizer.json",
               "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
               "\"vocab\":{\"a\":0}},\"added_tokens\":[]}");
    put_model(2, 3, good, 1);
    ASSERT_REFUSED(TOKVEC_E_MODEL, "tokenizer.json", "unk_token");

    /* the good directory opens: V = 3 from 2 stored rows */
    fresh_dir("good");
    tf_put_str(dir, "tokenizer.json", TOKJSON);
    put_model(2, 3, good, 1);
    tf_put_str(dir, "modules.json",
               "[{\"type\":\"sentence_transformers.models."
               "Normalize\"}]");
    tokvec_model *m = open_ok(dir);
    assert_int_equal(tokvec_table_get_info(tokvec_model_table(m))->vocab_size,
                     3);
    assert_int_equal(tokvec_model_get_info(m)->median_token_length, 2);
    tokvec_model_close(m);

    snprintf(dir, sizeof dir, "%s/good/model.safetensors", tu_dir);
    ASSERT_REFUSED(TOKVEC_E_MODEL, "model.safetensors", "not a directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixtures_open_with_their_layout_and_normalization),
        cmocka_unit_test(normalize_override_beats_the_files),
        cmocka_unit_test(median_and_unk_come_from_the_vocabulary),
        cmocka_unit_test(quantized_rows_are_mapped_rows_times_weights),
        cmocka_unit_test(int8_rows_are_used_as_stored),
        cmocka_unit_test(mean_is_the_double_mean_then_normalized),
        cmocka_unit_test(text_cut_keeps_max_tokens_times_median_code_points),
        cmocka_unit_test(default_name_is_the_directory_or_the_hub_repository),
        cmocka_unit_test(malformed_directories_are_one_line_naming_the_file),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
