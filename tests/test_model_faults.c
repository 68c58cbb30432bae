/* test_model_faults.c -- opening a static embedding model directory
 * (core/table/model.c) when an allocation fails (tests/fault_inject.h) or
 * the directory is not one: every failing allocation of opening each
 * fixture of tests/data/model2vec-rs/ (Model2Vec float32, float16, int8,
 * vocabulary-quantized; sentence-transformers) is an error with no model
 * and a message; a path that is no directory, a missing one, a config.json
 * that is no object, a module that is no object, a Unigram vocabulary entry
 * that is no pair and an added token without content are refused naming
 * the file. Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fault_inject.h"
#include "testutil.h"
#include "tokvec_model.h"

#define FIX "tests/data/model2vec-rs/"

static int open_model(const char *dir, tokvec_model **m, char *err,
                      size_t errlen)
{
    tokvec_model_opts o = {.errbuf = err, .errlen = errlen};
    err[0] = '\0';
    *m = (tokvec_model *)1;
    return tokvec_model_open(dir, &o, m);
}

static void every_failing_allocation_of_an_open_is_an_error(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    static const char *const dirs[] = {
        FIX "test-model-float32",
        FIX "test-model-float16",
        FIX "test-model-int8",
        FIX "test-model-vocab-quantized",
        FIX "test-model-sentence-transformers/",
    };
    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
        char err[512];
        tokvec_model *m;
        fi_arm(FI_ALLOC, 0, 0); /* count */
        assert_int_equal(fi_spare_library("libjansson"), 0);
        if (open_model(dirs[d], &m, err, sizeof err))
            fail_msg("%s", err);
        long total = fi_calls(FI_ALLOC);
        fi_reset();
        tokvec_model_close(m);
        int failed = 0;
        for (long nth = 1; nth <= total; nth += nth < 400 ? 1 : nth / 16) {
            fi_arm(FI_ALLOC, nth, ENOMEM);
            assert_int_equal(fi_spare_library("libjansson"), 0);
            int rc = open_model(dirs[d], &m, err, sizeof err);
            fi_reset();
            if (rc == 0) {
                tokvec_model_close(m);
                continue;
            }
            assert_null(m);
            if (!err[0])
                fail_msg("%s: allocation %ld failed: rc %d, no message",
                         dirs[d], nth, rc);
            failed++;
        }
        assert_true(failed > 3);
    }
}

static char dir[512];

static void put(const char *name, const char *text)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A copy of the float32 fixture's table in dir, with tokenizer.json t. */
static void model_dir(const char *name, const char *tokenizer)
{
    snprintf(dir, sizeof dir, "%s/%s", tu_dir, name);
    assert_int_equal(mkdir(dir, 0700), 0);
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "cp " FIX "test-model-float32/model.safetensors"
             " %s/",
             dir);
    assert_int_equal(system(cmd), 0);
    if (tokenizer) {
        put("tokenizer.json", tokenizer);
    } else {
        snprintf(cmd, sizeof cmd,
                 "cp " FIX "test-model-float32/tokenizer.json %s/", dir);
        assert_int_equal(system(cmd), 0);
    }
}

static void refused(const char *path, int want, const char *file,
                    const char *says)
{
    char err[512];
    tokvec_model *m;
    int rc = open_model(path, &m, err, sizeof err);
    if (rc != want || !strstr(err, file) || !strstr(err, says))
        fail_msg("%s: rc %d, '%s' (want %d, %s: %s)", path, rc, err, want,
                 file, says);
    assert_null(m);
}

static void what_is_no_model_directory_is_refused_naming_the_file(void **s)
{
    (void)s;
    char p[600];
    snprintf(p, sizeof p, "%s/missing", tu_dir);
    refused(p, -ENOENT, "missing", "cannot open");
    refused(FIX "test-model-float32/model.safetensors", TOKVEC_E_MODEL,
            "model.safetensors", "not a directory");
    tokvec_model *m = NULL;
    assert_int_equal(tokvec_model_open(NULL, NULL, &m), TOKVEC_E_INVAL);

    model_dir("config-list", NULL);
    put("config.json", "[1]");
    refused(dir, TOKVEC_E_MODEL, "config.json", "not a JSON object");

    model_dir("module-string", NULL);
    put("modules.json", "[\"Normalize\"]");
    refused(dir, TOKVEC_E_MODEL, "modules.json",
            "module 0 is not an object with a string \"type\"");

    model_dir("unigram-not-pairs", "{\"model\":{\"type\":\"Unigram\","
                                   "\"vocab\":[[\"a\",-1.0],[7,-2.0]]}}");
    refused(dir, TOKVEC_E_MODEL, "tokenizer.json",
            "model.vocab[1] is not a [piece, score] pair");

    model_dir("added-without-content",
              "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}},"
              "\"added_tokens\":[{\"id\":1}]}");
    refused(dir, TOKVEC_E_MODEL, "tokenizer.json",
            "added_tokens[0] has no string \"content\"");
}

/* Added tokens count once, whether in the vocabulary (by id for a Unigram
 * list) or repeated; the unknown token may be an added one. */
static void added_tokens_count_once(void **s)
{
    (void)s;
    model_dir("unigram",
              "{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,"
              "\"vocab\":[[\"<unk>\",0.0],[\"abc\",-1.0],[\"de\",-2.0]]},"
              "\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\"},"
              "{\"id\":7,\"content\":\"<pad>\"},"
              "{\"id\":8,\"content\":\"<pad>\"}]}");
    char err[512];
    tokvec_model *m;
    if (open_model(dir, &m, err, sizeof err))
        fail_msg("%s", err);
    /* <unk> (5), abc (3), de (2), <pad> (5) once: median of 2 3 5 5 */
    assert_int_equal(tokvec_model_get_info(m)->tokenizer_tokens, 4);
    assert_int_equal(tokvec_model_get_info(m)->median_token_length, 4);
    tokvec_model_close(m);

    model_dir("unk-added",
              "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
              "\"vocab\":{\"a\":0,\"bb\":1}},"
              "\"added_tokens\":[{\"id\":2,\"content\":\"[UNK]\"}]}");
    if (open_model(dir, &m, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(tokvec_model_get_info(m)->tokenizer_tokens, 3);
    tokvec_model_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            every_failing_allocation_of_an_open_is_an_error, tu_setup_dir,
            tu_teardown_dir),
        cmocka_unit_test_setup_teardown(
            what_is_no_model_directory_is_refused_naming_the_file,
            tu_setup_dir, tu_teardown_dir),
        cmocka_unit_test_setup_teardown(added_tokens_count_once, tu_setup_dir,
                                        tu_teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
