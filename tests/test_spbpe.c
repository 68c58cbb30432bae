/* test_spbpe.c -- core/tokenizer/spbpe.c, BPE without ByteLevel, through
 * tokvec_tokenizer_open and _encode: what model fields it refuses and with
 * which message (dropout, vocabulary, affixes, unk_token, each malformed
 * merge), and the ids HF's BPE gives for small vocabularies written here
 * (the merge order worked by hand from models/bpe's rules: lowest rank
 * first, a stale pair skipped; affixes on inner and last characters;
 * unknowns fused or not, or dropped without unk_token; ignore_merges).
 * Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tok_fixture.h"
#include "tokvec_error.h"
#include "tokvec_tokenizer.h"

#define MODEL(fields) "{\"model\":{\"type\":\"BPE\"," fields "}}"

static void refused(const char *json, const char *says)
{
    tokvec_tokenizer *t = (tokvec_tokenizer *)1;
    char err[512] = "";
    int rc = tf_open_json(json, &t, err, sizeof err);
    if (rc != TOKVEC_E_TOKENIZER || !strstr(err, says))
        fail_msg("got %d '%s', want '%s'\nfile: %s", rc, err, says, json);
    assert_null(t);
}

static void model_fields_are_checked(void **s)
{
    (void)s;
    static const struct {
        const char *json, *says;
    } c[] = {
        {MODEL("\"dropout\":0.1,\"vocab\":{\"a\":0},\"merges\":[]"),
         "model.dropout: only null is supported"},
        {MODEL("\"vocab\":{},\"merges\":[]"),
         "model.vocab: not a non-empty object of token -> id"},
        {MODEL("\"vocab\":[[\"a\",0]],\"merges\":[]"),
         "model.vocab: not a non-empty object of token -> id"},
        {MODEL("\"continuing_subword_prefix\":5,\"vocab\":{\"a\":0},"
               "\"merges\":[]"),
         "must be strings or null"},
        {MODEL("\"end_of_word_suffix\":[],\"vocab\":{\"a\":0},"
               "\"merges\":[]"),
         "must be strings or null"},
        {MODEL("\"unk_token\":\"<unk>\",\"vocab\":{\"a\":0},\"merges\":[]"),
         "model.unk_token: not a token of model.vocab"},
        {MODEL("\"unk_token\":5,\"vocab\":{\"a\":0},\"merges\":[]"),
         "model.unk_token: not a token of model.vocab"},
        {MODEL("\"vocab\":{\"a\":\"0\"},\"merges\":[]"),
         "model.vocab: token \"a\": empty, or its id is not"},
        {MODEL("\"vocab\":{\"a\":-1},\"merges\":[]"),
         "model.vocab: token \"a\": empty, or its id is not"},
        {MODEL("\"vocab\":{\"a\":16777216},\"merges\":[]"),
         "model.vocab: token \"a\": empty, or its id is not"},
        {MODEL("\"vocab\":{\"\":1},\"merges\":[]"),
         "model.vocab: token \"\": empty, or its id is not"},
        {MODEL("\"vocab\":{\"a\":1,\"b\":1},\"merges\":[]"),
         "model.vocab: id 1 is given twice"},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1},\"merges\":{}"),
         "model.merges: not an array"},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a b c\"]"),
         "model.merges[0]: not \"a b\" or [\"a\", \"b\"]"},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"ab\"]"),
         "model.merges[0]: not \"a b\""},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1},\"merges\":[5]"),
         "model.merges[0]: not \"a b\""},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1},\"merges\":[[\"a\"]]"),
         "model.merges[0]: not \"a b\""},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1},\"merges\":[[\"a\",5]]"),
         "model.merges[0]: not \"a b\""},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1},\"merges\":[[5,\"b\"]]"),
         "model.merges[0]: not \"a b\""},
        {MODEL("\"continuing_subword_prefix\":\"##\",\"vocab\":{\"a\":0,"
               "\"b\":1},\"merges\":[[\"a\",\"b\"]]"),
         "with b at least as long as continuing_subword_prefix"},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\","
               "\"x b\"]"),
         "model.merges[1]: the left token is not in the vocabulary"},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a x\"]"),
         "model.merges[0]: the right token is not in the vocabulary"},
        {MODEL("\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"b a\"]"),
         "model.merges[0]: the merged token is not in the vocabulary"},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++)
        refused(c[k].json, c[k].says);
}

/* The ids of text under the tokenizer.json json, -1-terminated. */
static void ids_are(const char *json, const char *text, const int32_t *want)
{
    tokvec_tokenizer *t = NULL;
    char err[512] = "";
    if (tf_open_json(json, &t, err, sizeof err))
        fail_msg("refused: %s\nfile: %s", err, json);
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    assert_non_null(st);
    assert_int_equal(tokvec_tokenizer_encode(t, st, text, strlen(text),
                                             TOKVEC_TOK_OFFSETS, &ids),
                     0);
    size_t n = 0;
    while (want[n] >= 0)
        n++;
    if (ids.n != n)
        fail_msg("'%s': %zu ids, want %zu", text, ids.n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ids.ids[i], want[i]);
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(t);
}

#define ABC "\"vocab\":{\"a\":1,\"b\":2,\"c\":3,\"ab\":4,\"bc\":5,\"abc\":6}"

static void merges_apply_lowest_rank_first_skipping_stale_pairs(void **s)
{
    (void)s;
    /* (a b) first: the pair (b c) is stale, b merged away */
    ids_are(MODEL(ABC ",\"merges\":[\"a b\",\"b c\"]"), "abc",
            (int32_t[]){4, 3, -1});
    /* (b c) first: (a b) is stale, a's right now bc, no merge a bc */
    ids_are(MODEL(ABC ",\"merges\":[\"b c\",\"a b\"]"), "abc",
            (int32_t[]){1, 5, -1});
    /* (b c), then (a b) stale (a bc is another merge), then (a bc) */
    ids_are(MODEL(ABC ",\"merges\":[\"b c\",\"a b\",\"a bc\"]"), "abc",
            (int32_t[]){6, -1});
    /* (b c), (a bc): the last symbol; (a b) then has no right */
    ids_are(MODEL(ABC ",\"merges\":[\"b c\",\"a bc\",\"a b\"]"), "abc",
            (int32_t[]){6, -1});
    /* a pair given twice: the later rank */
    ids_are(MODEL(ABC ",\"merges\":[\"a b\",\"b c\",\"a b\"]"), "abc",
            (int32_t[]){1, 5, -1});
    ids_are(MODEL(ABC ",\"merges\":[[\"a\",\"b\"],[\"ab\",\"c\"]]"), "abcab",
            (int32_t[]){6, 4, -1});
}

static void affixes_go_on_inner_and_last_characters(void **s)
{
    (void)s;
    const char *j = MODEL(
        "\"continuing_subword_prefix\":\"##\",\"end_of_word_suffix\":"
        "\"</w>\",\"vocab\":{\"a\":1,\"##b\":2,\"##b</w>\":3,\"ab</w>\":4,"
        "\"a</w>\":5},\"merges\":[\"a ##b</w>\"]");
    ids_are(j, "ab", (int32_t[]){4, -1});
    ids_are(j, "abb", (int32_t[]){1, 2, 3, -1});
    ids_are(j, "a", (int32_t[]){5, -1});
}

static void unknowns_fuse_or_not_or_drop(void **s)
{
    (void)s;
    const char *nofuse = MODEL("\"unk_token\":\"<unk>\",\"vocab\":{\"<unk>\":"
                               "0,\"a\":1},\"merges\":[]");
    const char *fuse = MODEL("\"unk_token\":\"<unk>\",\"fuse_unk\":true,"
                             "\"vocab\":{\"<unk>\":0,\"a\":1},\"merges\":[]");
    const char *none = MODEL("\"unk_token\":null,\"vocab\":{\"<unk>\":0,"
                             "\"a\":1},\"merges\":[]");
    ids_are(nofuse, "xxa", (int32_t[]){0, 0, 1, -1});
    ids_are(nofuse, "ax\xc3\xa9", (int32_t[]){1, 0, 0, -1});
    ids_are(fuse, "xxa", (int32_t[]){0, 1, -1});
    ids_are(fuse, "ax\xc3\xa9", (int32_t[]){1, 0, -1});
    ids_are(none, "xax", (int32_t[]){1, -1});
    ids_are(none, "xx", (int32_t[]){-1});
}

static void ignore_merges_takes_a_whole_word_token(void **s)
{
    (void)s;
    const char *j = MODEL("\"ignore_merges\":true,\"vocab\":{\"a\":1,\"b\":"
                          "2,\"ab\":3,\"abb\":4},\"merges\":[\"a b\"]");
    ids_are(j, "abb", (int32_t[]){4, -1});
    ids_are(j, "ab", (int32_t[]){3, -1});
    ids_are(j, "bab", (int32_t[]){2, 3, -1});
    /* without it, the merges */
    ids_are(MODEL("\"vocab\":{\"a\":1,\"b\":2,\"ab\":3,\"abb\":4},"
                  "\"merges\":[\"a b\"]"),
            "abb", (int32_t[]){3, 2, -1});
}

static void byte_fallback_spells_a_character_when_all_its_bytes_exist(void **s)
{
    (void)s;
    /* an inner character's bytes are the prefix's and its own */
    const char *j = MODEL(
        "\"continuing_subword_prefix\":\"##\",\"byte_fallback\":true,"
        "\"unk_token\":\"<unk>\",\"vocab\":{\"<unk>\":0,\"a\":1,"
        "\"<0x23>\":2,\"<0x78>\":3,\"<0xC3>\":4},\"merges\":[]");
    ids_are(j, "ax", (int32_t[]){1, 2, 2, 3, -1});
    ids_are(j, "x", (int32_t[]){3, -1});
    /* U+00E9 lacks <0xA9>: unknown, pending past the next bytes */
    ids_are(j, "a\xc3\xa9", (int32_t[]){1, 0, -1});
    ids_are(j, "\xc3\xa9x", (int32_t[]){2, 2, 3, 0, -1});
}

static void many_equal_ranks_merge_leftmost_first(void **s)
{
    (void)s;
    const char *j = MODEL("\"vocab\":{\"a\":1,\"aa\":2,\"aaaa\":3},"
                          "\"merges\":[\"a a\",\"aa aa\"]");
    ids_are(j, "aaaaaaa", (int32_t[]){3, 2, 1, -1});
    ids_are(j, "aaaaaaaaaaaaaaaa", (int32_t[]){3, 3, 3, 3, -1});
}

/* A merge of a 300-byte token: past the merge buffer's first size. */
static void long_merge_tokens_are_read_whole(void **s)
{
    (void)s;
    char *j = malloc(2048), *a = malloc(301);
    assert_non_null(j);
    assert_non_null(a);
    memset(a, 'a', 300);
    a[300] = 0;
    snprintf(j, 2048,
             MODEL("\"vocab\":{\"%s\":1,\"b\":2,\"%sb\":3,\"a\":4},"
                   "\"merges\":[\"%s b\"]"),
             a, a, a);
    /* (characters merge only into what merges build: no a a) */
    ids_are(j, "ab", (int32_t[]){4, 2, -1});
    free(j);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_fields_are_checked),
        cmocka_unit_test(merges_apply_lowest_rank_first_skipping_stale_pairs),
        cmocka_unit_test(affixes_go_on_inner_and_last_characters),
        cmocka_unit_test(unknowns_fuse_or_not_or_drop),
        cmocka_unit_test(ignore_merges_takes_a_whole_word_token),
        cmocka_unit_test(long_merge_tokens_are_read_whole),
        cmocka_unit_test(
            byte_fallback_spells_a_character_when_all_its_bytes_exist),
        cmocka_unit_test(many_equal_ranks_merge_leftmost_first),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
