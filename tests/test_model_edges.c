/* test_model_edges.c -- core/table/model.c, what test_model_rules.c
 * leaves: failures with no options or no error buffer (the same codes,
 * nothing written), a model.safetensors or tokenizer.json that is a
 * directory (not a file: the other place is looked at), Unigram added
 * tokens whose id does not name their piece (counted), the unknown token
 * of a list vocabulary found among the added tokens, the median of an odd
 * count and of none. Directories are written into a temporary directory.
 * Single-threaded.
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
static int serial;

static void sub(const char *name)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(mkdir(p, 0700), 0);
}

static const char TOK[] =
    "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":"
    "{\"[UNK]\":0,\"a\":1,\"bb\":2}},\"added_tokens\":[]}";

/* dir refused with code: with no options, with a NULL buffer, with a
 * buffer of no room (left as it was) and with one (a message). */
static void refused_every_way(int code)
{
    tokvec_model *m = (tokvec_model *)1;
    assert_int_equal(tokvec_model_open(dir, NULL, &m), code);
    assert_null(m);
    tokvec_model_opts o = {.errbuf = NULL, .errlen = 64};
    assert_int_equal(tokvec_model_open(dir, &o, &m), code);
    char err[256] = "zz";
    o.errbuf = err;
    o.errlen = 0;
    assert_int_equal(tokvec_model_open(dir, &o, &m), code);
    assert_string_equal(err, "zz");
    o.errlen = sizeof err;
    assert_int_equal(tokvec_model_open(dir, &o, &m), code);
    assert_non_null(strstr(err, dir));
}

static void failures_without_an_error_buffer_keep_their_codes(void **s)
{
    (void)s;
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "config.json", "[true]");
    refused_every_way(TOKVEC_E_MODEL);
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "modules.json", "{}");
    refused_every_way(TOKVEC_E_MODEL);
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_table(dir, "model.safetensors", "other");
    refused_every_way(TOKVEC_E_MODEL);
    tf_model_dir(dir, sizeof dir, NULL);
    refused_every_way(TOKVEC_E_MODEL);
    tf_model_dir(dir, sizeof dir, "{\"model\":");
    refused_every_way(TOKVEC_E_MODEL);
    /* a file, not a directory; nothing at all */
    char file[700];
    snprintf(file, sizeof file, "%s/model.safetensors", dir);
    strcpy(dir, file);
    refused_every_way(TOKVEC_E_MODEL);
    strcat(dir, "/x");
    refused_every_way(-ENOTDIR);
}

static void directories_where_files_belong_are_not_files(void **s)
{
    (void)s;
    /* model.safetensors a directory, no 0_StaticEmbedding/ */
    snprintf(dir, sizeof dir, "%s/e%d", tu_dir, serial++);
    assert_int_equal(mkdir(dir, 0700), 0);
    sub("model.safetensors");
    tf_put_str(dir, "tokenizer.json", TOK);
    char err[900] = "", want[1000];
    tokvec_model_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_model *m = (tokvec_model *)1;
    assert_int_equal(tokvec_model_open(dir, &o, &m), TOKVEC_E_MODEL);
    snprintf(want, sizeof want,
             "%s: no model.safetensors (Model2Vec) or 0_StaticEmbedding/"
             "model.safetensors (sentence-transformers)",
             dir);
    assert_string_equal(err, want);
    /* sentence-transformers: tokenizer.json a directory at the top, the
     * file beside the table */
    snprintf(dir, sizeof dir, "%s/e%d", tu_dir, serial++);
    assert_int_equal(mkdir(dir, 0700), 0);
    sub("0_StaticEmbedding");
    sub("tokenizer.json");
    tf_put_table(dir, "0_StaticEmbedding/model.safetensors",
                 "embedding.weight");
    tf_put_str(dir, "0_StaticEmbedding/tokenizer.json", TOK);
    assert_int_equal(tokvec_model_open(dir, &o, &m), 0);
    assert_non_null(strstr(tokvec_model_get_info(m)->tokenizer_path,
                           "0_StaticEmbedding/tokenizer.json"));
    assert_int_equal(tokvec_model_get_info(m)->unk_id, 0);
    tokvec_model_close(m);
    /* and with no tokenizer beside the table either: the top one */
    snprintf(dir, sizeof dir, "%s/e%d", tu_dir, serial++);
    assert_int_equal(mkdir(dir, 0700), 0);
    sub("0_StaticEmbedding");
    tf_put_table(dir, "0_StaticEmbedding/model.safetensors",
                 "embedding.weight");
    assert_int_equal(tokvec_model_open(dir, &o, &m), TOKVEC_E_MODEL);
    assert_non_null(strstr(err, "/tokenizer.json: missing"));
}

static tokvec_model *opened(void)
{
    char err[900] = "";
    tokvec_model_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_model *m = NULL;
    if (tokvec_model_open(dir, &o, &m))
        fail_msg("%s", err);
    return m;
}

static void vocabulary_counts_and_the_unknown_token(void **s)
{
    (void)s;
    /* Unigram: added tokens with an id that is not their piece's (-1, past
     * the list, another piece) count; lengths 1 1 2 3 4 -> 2 */
    tf_model_dir(
        dir, sizeof dir,
        "{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"u\","
        "0],[\"ab\",-1]]},\"added_tokens\":[{\"id\":-1,\"content\":\"x\"},"
        "{\"id\":7,\"content\":\"abc\"},{\"id\":0,\"content\":\"abcd\"}]}");
    tokvec_model *m = opened();
    assert_int_equal(tokvec_model_get_info(m)->tokenizer_tokens, 5);
    assert_int_equal(tokvec_model_get_info(m)->median_token_length, 2);
    assert_int_equal(tokvec_model_get_info(m)->unk_id, -1);
    tokvec_model_close(m);
    /* a list vocabulary of another model: the unknown token among the
     * added ones, after another */
    tf_model_dir(dir, sizeof dir,
                 "{\"model\":{\"unk_token\":\"<unk>\",\"vocab\":[[\"a\",0]]},"
                 "\"added_tokens\":[{\"id\":4,\"content\":\"<s>\"},{\"id\":3,"
                 "\"content\":\"<unk>\"}]}");
    m = opened();
    assert_int_equal(tokvec_model_get_info(m)->unk_id, 3);
    tokvec_model_close(m);
    /* an empty vocabulary: no lengths, median 0 */
    tf_model_dir(dir, sizeof dir, "{\"model\":{\"vocab\":{}}}");
    m = opened();
    assert_int_equal(tokvec_model_get_info(m)->tokenizer_tokens, 0);
    assert_int_equal(tokvec_model_get_info(m)->median_token_length, 0);
    tokvec_model_close(m);
    /* modules.json's Normalize module, config.json's normalize: true */
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "modules.json",
               "[{\"type\":\"sentence_transformers.models.Normalize\"}]");
    m = opened();
    assert_int_equal(tokvec_model_get_info(m)->normalize, 1);
    assert_string_equal(tokvec_model_get_info(m)->normalize_from,
                        "modules.json");
    tokvec_model_close(m);
    tf_model_dir(dir, sizeof dir, TOK);
    tf_put_str(dir, "config.json", "{\"normalize\":true}");
    m = opened();
    assert_int_equal(tokvec_model_get_info(m)->normalize, 1);
    assert_string_equal(tokvec_model_get_info(m)->normalize_from,
                        "config.json");
    tokvec_model_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(failures_without_an_error_buffer_keep_their_codes),
        cmocka_unit_test(directories_where_files_belong_are_not_files),
        cmocka_unit_test(vocabulary_counts_and_the_unknown_token),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
