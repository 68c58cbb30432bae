/* test_model_rules.c -- what model directories (tokvec_model.h) are
 * refused, and with which message: config.json, modules.json and the
 * tokenizer.json vocabulary given the wrong types, the two
 * sentence-transformers places of the table without their tensor, a
 * missing directory; what the accepted ones say (layout, normalization and
 * where it came from, vocabulary count, median length, unknown token);
 * the served name of a directory; the text cut at its edges. Directories
 * are written into a temporary directory. Single-threaded.
 */
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
#include "tokvec_error.h"
#include "tokvec_model.h"

static char dir[512];

static const char TOK[] =
    "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":"
    "{\"[UNK]\":0,\"a\":1,\"bb\":2}},\"added_tokens\":[]}";

/* Opens dir: want NULL expects success (returned), else code and the
 * message "<dir>/<file>: want" exactly (file "" names dir itself). */
static tokvec_model *expect(int code, const char *file, const char *want)
{
    char err[900] = "", full[1400];
    tokvec_model_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_model *m = (tokvec_model *)1;
    int rc = tokvec_model_open(dir, &o, &m);
    if (!want) {
        if (rc)
            fail_msg("%s refused: %s", dir, err);
        return m;
    }
    if (rc != code)
        fail_msg("%s: got %d (%s), want %d; message: %s", dir, rc,
                 tokvec_errname(rc), code, err);
    assert_null(m);
    snprintf(full, sizeof full, "%s%s%s: %s", dir, *file ? "/" : "", file,
             want);
    if (strcmp(err, full))
        fail_msg("message\n  '%s'\nwant\n  '%s'", err, full);
    return NULL;
}

static void config_files_rules(void **s)
{
    (void)s;
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "config.json", "[true]");
    expect(TOKVEC_E_MODEL, "config.json", "not a JSON object");
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "config.json", "{\"normalize\":1}");
    expect(TOKVEC_E_MODEL, "config.json",
           "\"normalize\" is not true, false or null");
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "modules.json", "[{\"type\":\"x.Pooling\"},5]");
    expect(TOKVEC_E_MODEL, "modules.json",
           "module 1 is not an object with a string \"type\"");
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "modules.json", "[{\"type\":7}]");
    expect(TOKVEC_E_MODEL, "modules.json",
           "module 0 is not an object with a string \"type\"");
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "modules.json", "[{\"path\":\"1_Pooling\"}]");
    expect(TOKVEC_E_MODEL, "modules.json",
           "module 0 is not an object with a string \"type\"");
    /* accepted: what says first wins; null and unsaid fall through */
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "modules.json",
               "[{\"type\":\"x\"},{\"type\":\"Pooling\"}]");
    tf_put_str(dir, "config.json", "{\"normalize\":null}");
    tf_put_str(dir, "config_sentence_transformers.json",
               "{\"normalize\":false}");
    tokvec_model *m = expect(0, "", NULL);
    assert_int_equal(tokvec_model_get_info(m)->normalize, 0);
    assert_string_equal(tokvec_model_get_info(m)->normalize_from,
                        "config_sentence_transformers.json");
    tokvec_model_close(m);
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "config.json", "{\"model_type\":\"model2vec\"}");
    tf_put_str(dir, "config_sentence_transformers.json",
               "{\"normalize\":true}");
    m = expect(0, "", NULL);
    assert_int_equal(tokvec_model_get_info(m)->normalize, 1);
    assert_string_equal(tokvec_model_get_info(m)->normalize_from,
                        "config_sentence_transformers.json");
    tokvec_model_close(m);
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "config.json", "{\"normalize\":false}");
    tf_put_str(dir, "config_sentence_transformers.json",
               "{\"normalize\":true}");
    m = expect(0, "", NULL);
    assert_int_equal(tokvec_model_get_info(m)->normalize, 0);
    assert_string_equal(tokvec_model_get_info(m)->normalize_from,
                        "config.json");
    tokvec_model_close(m);
}

static void vocabulary_rules(void **s)
{
    (void)s;
    tf_model_dir(dir, sizeof dir, "{\"model\":5}");
    expect(TOKVEC_E_MODEL, "tokenizer.json",
           "no \"model\" with a \"vocab\" object or list");
    tf_model_dir(dir, sizeof dir, "{\"model\":{\"vocab\":\"a b\"}}");
    expect(TOKVEC_E_MODEL, "tokenizer.json",
           "no \"model\" with a \"vocab\" object or list");
    tf_model_dir(
        dir, sizeof dir,
        "{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",-1],[2,-2]]}}");
    expect(TOKVEC_E_MODEL, "tokenizer.json",
           "model.vocab[1] is not a [piece, score] pair");
    tf_model_dir(
        dir, sizeof dir,
        "{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",-1],\"b\"]}}");
    expect(TOKVEC_E_MODEL, "tokenizer.json",
           "model.vocab[1] is not a [piece, score] pair");
    tf_model_dir(
        dir, sizeof dir,
        "{\"model\":{\"vocab\":{\"a\":0}},\"added_tokens\":[{\"id\":1}]}");
    expect(TOKVEC_E_MODEL, "tokenizer.json",
           "added_tokens[0] has no string \"content\"");
    tf_model_dir(dir, sizeof dir,
                 "{\"model\":{\"unk_token\":\"[UNK]\",\"vocab\":{\"a\":0}},"
                 "\"added_tokens\":[{\"id\":\"1\",\"content\":\"[UNK]\"}]}");
    expect(TOKVEC_E_MODEL, "tokenizer.json",
           "model.unk_token is not a token of the vocabulary");
    tf_model_dir(dir, sizeof dir,
                 "{\"model\":{\"type\":\"Unigram\",\"unk_token\":\"<unk>\","
                 "\"vocab\":[[\"a\",-1]]}}");
    tf_put_str(dir, "modules.json", "[]");
    /* accepted: Unigram's unk_token is not looked up (unk_id is) */
    tokvec_model *m = expect(0, "", NULL);
    assert_int_equal(tokvec_model_get_info(m)->unk_id, -1);
    tokvec_model_close(m);
    /* a Unigram list: added tokens that are pieces at their id, or listed
     * twice, count once; lengths 1 2 3 5 -> median (2 + 3) / 2 = 2 */
    tf_model_dir(
        dir, sizeof dir,
        "{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<u>\","
        "0],[\"ab\",-1],[\"c\",-2]]},\"added_tokens\":[{\"id\":1,"
        "\"content\":\"ab\"},{\"id\":9,\"content\":\"<sep>\"},{\"id\":10,"
        "\"content\":\"<sep>\"},{\"id\":7,\"content\":\"c\"}]}");
    m = expect(0, "", NULL);
    assert_int_equal(tokvec_model_get_info(m)->tokenizer_tokens, 5);
    assert_int_equal(tokvec_model_get_info(m)->median_token_length, 2);
    tokvec_model_close(m);
    /* the unknown token found among the added tokens */
    tf_model_dir(dir, sizeof dir,
                 "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
                 "\"vocab\":{\"a\":0,\"bcd\":1}},\"added_tokens\":[{\"id\":5,"
                 "\"content\":\"[PAD]\"},{\"id\":2,\"content\":\"[UNK]\"}]}");
    m = expect(0, "", NULL);
    assert_int_equal(tokvec_model_get_info(m)->unk_id, 2);
    assert_int_equal(tokvec_model_get_info(m)->tokenizer_tokens, 4);
    assert_int_equal(tokvec_model_get_info(m)->median_token_length, 4);
    /* the cut: 2 tokens x 4 code points, counting UTF-8 characters */
    const char *t = "\xc3\xa9t\xc3\xa9 et hiver";
    assert_int_equal(tokvec_model_text_cut(m, t, strlen(t), 2), 10);
    assert_int_equal(tokvec_model_text_cut(m, t, strlen(t), 9), strlen(t));
    assert_int_equal(tokvec_model_text_cut(m, t, strlen(t), 0), strlen(t));
    assert_int_equal(tokvec_model_text_cut(m, t, strlen(t), INT64_MAX),
                     strlen(t));
    tokvec_model_close(m);
}

static void table_places_rules(void **s)
{
    (void)s;
    /* model.safetensors with neither tensor */
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_table(dir, "model.safetensors", "tok_emb.weight");
    expect(TOKVEC_E_MODEL, "model.safetensors",
           "holds neither \"embeddings\" (Model2Vec) nor \"embedding.weight\" "
           "(sentence-transformers)");
    /* sentence-transformers at the top */
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_table(dir, "model.safetensors", "embedding.weight");
    tokvec_model *m = expect(0, "", NULL);
    assert_int_equal(tokvec_model_get_info(m)->layout,
                     TOKVEC_LAYOUT_SENTENCE_TRANSFORMERS);
    assert_string_equal(tokvec_model_get_info(m)->layout_name,
                        "sentence-transformers");
    tokvec_model_close(m);
    /* 0_StaticEmbedding/ without its tensor, then with it and its
     * tokenizer there */
    char sub[600];
    snprintf(dir, sizeof dir, "%s/st", tu_dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(sub, sizeof sub, "%s/0_StaticEmbedding", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    tf_put_table(dir, "0_StaticEmbedding/model.safetensors", "embeddings");
    tf_put_str(dir, "0_StaticEmbedding/tokenizer.json", TOK);
    expect(TOKVEC_E_MODEL, "0_StaticEmbedding/model.safetensors",
           "holds no \"embedding.weight\" (sentence-transformers)");
    tf_put_table(dir, "0_StaticEmbedding/model.safetensors",
                 "embedding.weight");
    /* "DIR//" is DIR */
    size_t n = strlen(dir);
    strcpy(dir + n, "//");
    m = expect(0, "", NULL);
    dir[n] = '\0';
    assert_string_equal(tokvec_model_get_info(m)->dir, dir);
    assert_non_null(strstr(tokvec_model_get_info(m)->tokenizer_path,
                           "0_StaticEmbedding/tokenizer.json"));
    tokvec_model_close(m);
    /* no tokenizer anywhere */
    unlink(strcat(sub, "/tokenizer.json"));
    expect(TOKVEC_E_MODEL, "tokenizer.json",
           "missing (a model directory needs a tokenizer.json)");
    /* no directory */
    strcat(dir, "/nothing");
    expect(-ENOENT, "", "cannot open: No such file or directory");
    tokvec_model *none = (tokvec_model *)1;
    assert_int_equal(tokvec_model_open(NULL, NULL, &none), TOKVEC_E_INVAL);
    assert_null(none);
    assert_null(tokvec_model_layout_name((tokvec_model_layout)99));
}

static void served_name_of_a_directory(void **s)
{
    (void)s;
    static const char *const cases[][2] = {
        {"/hub/models--org--name/snapshots/abc123/", "name"},
        {"models--x/snapshots/abc", "x"},
        {"models--/snapshots/abc", "abc"},
        {"/a/models--org--name/snapshot/abc", "abc"},
        {"/a/other--org--name/snapshots/abc", "abc"},
        {"models--org-name/snapshots/abc", "org-name"}, /* no org */
        {"models--org--/snapshots/abc", "model"},
        {"/", "model"},
        {"", "model"},
        {"plain//", "plain"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char buf[64];
        tokvec_model_default_name(cases[k][0], buf, sizeof buf);
        if (strcmp(buf, cases[k][1]))
            fail_msg("'%s': '%s', want '%s'", cases[k][0], buf, cases[k][1]);
    }
    char small[3] = "zz";
    tokvec_model_default_name("abcdef", small, 0);
    assert_string_equal(small, "zz");
    tokvec_model_default_name("abcdef", small, sizeof small);
    assert_string_equal(small, "ab");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_files_rules),
        cmocka_unit_test(vocabulary_rules),
        cmocka_unit_test(table_places_rules),
        cmocka_unit_test(served_name_of_a_directory),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
