/* test_added.c -- the added tokens of tokenizer.json (core/tokenizer/
 * added.c, tokenizer.c): lstrip, rstrip, single_word, normalized and
 * special, matched in the input and in the normalized text as Hugging
 * Face's AddedVocabulary matches them, through the public tokenizer calls.
 *
 * Data: tests/data/wordpiece/added.json (tests/data/wordpiece/bert.json
 * with five added tokens: "<m>" special lstrip rstrip, "Tok" normalized
 * single_word, "[X]" special single_word, "zz" plain, "<S>" special
 * normalized lstrip). Every expected id, offset and decoded text below is
 * what Hugging Face tokenizers 0.23.2 (npm) answers for the same file and
 * text (offsets turned into UTF-8 bytes); exactness at scale is
 * tests/oracle/hf.js --added-variant (make test's oracle suite).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tokvec_tokenizer.h"

#define ADDED "tests/data/wordpiece/added.json"

static tokvec_tok_state *st;
static tokvec_tokenizer *tk;
static char path[512];

static tokvec_tokenizer *open_ok(const char *p)
{
    char err[512] = "";
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = NULL;
    if (tokvec_tokenizer_open(p, &o, &t) < 0)
        fail_msg("%s: %s", p, err);
    return t;
}

/* Encodes s with flags and compares with want: n triples id, start, stop. */
static void expect(const char *s, unsigned flags, const int32_t *want,
                   size_t n)
{
    tokvec_tok_ids ids = {0};
    assert_int_equal(tokvec_tokenizer_encode(tk, st, s, strlen(s),
                                             flags | TOKVEC_TOK_OFFSETS, &ids),
                     0);
    if (ids.n != n)
        fail_msg("'%s': %zu tokens, want %zu", s, ids.n, n);
    for (size_t k = 0; k < n; k++)
        if (ids.ids[k] != want[3 * k] ||
            ids.offsets[k] != (size_t)want[3 * k + 1] ||
            ids.stops[k] != (size_t)want[3 * k + 2])
            fail_msg("'%s': token %zu is %d %zu..%zu, want %d %d..%d", s, k,
                     ids.ids[k], ids.offsets[k], ids.stops[k], want[3 * k],
                     want[3 * k + 1], want[3 * k + 2]);
    tokvec_tok_ids_free(&ids);
}

#define EXPECT(s, flags, ...)                                 \
    do {                                                      \
        static const int32_t w_[] = {__VA_ARGS__};            \
        expect((s), (flags), w_, sizeof w_ / sizeof *w_ / 3); \
    } while (0)

#define SP TOKVEC_TOK_SPECIAL

static int setup(void **state)
{
    (void)state;
    if (tu_make_dir())
        return -1;
    st = tokvec_tok_state_new();
    tk = open_ok(ADDED);
    return st ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tokvec_tokenizer_close(tk);
    tokvec_tok_state_free(st);
    return tu_remove_dir();
}

static void lstrip_and_rstrip_take_the_spaces_beside_into_the_token(void **s)
{
    (void)s;
    EXPECT("a <m> b", SP, 3, 0, 1, 26, 1, 6, 4, 6, 7);
    /* a tab is White_Space too; a normalized token strips in the
     * normalized text ("<S>" matches "<s>": lowercased) */
    EXPECT("a\t<S> <s>b", SP, 3, 0, 1, 30, 1, 5, 30, 5, 9, 4, 9, 10);
}

static void lstrip_stops_at_the_token_before(void **s)
{
    (void)s;
    EXPECT("zz <m>", SP, 29, 0, 2, 26, 2, 6);
    /* the first <m> took both spaces (rstrip): the second starts after */
    EXPECT("<m>  <m>", SP, 26, 0, 5, 26, 5, 8);
}

static void single_word_matches_only_away_from_word_characters(void **s)
{
    (void)s;
    /* "a[X]" is inside a word; before "." it is alone (not \w) */
    EXPECT("[X] a[X] [X].", SP, 28, 0, 3, 3, 4, 5, 0, 5, 6, 10, 6, 7, 0, 7, 8,
           28, 9, 12, 12, 12, 13);
}

static void normalized_tokens_match_the_normalized_text(void **s)
{
    (void)s;
    /* "Tok" lowercased is "tok": TOK, tok and Tok all are it; xtok is a
     * word (single_word), one [UNK] past max_input_chars_per_word */
    EXPECT("TOK tok Tok xtok", SP, 27, 0, 3, 27, 4, 7, 27, 8, 11, 0, 12, 16);
    /* an accented letter after it is a word character (no match) */
    EXPECT("\xc3\x80 TOK\xc3\xa9", SP, 3, 0, 2, 0, 3, 8);
}

static void without_special_tokens_only_non_special_added_tokens_match(
    void **s)
{
    (void)s;
    /* [X] after a word character is text (single_word) */
    EXPECT("<m>zz[X]", SP, 26, 0, 3, 29, 3, 5, 0, 5, 6, 10, 6, 7, 0, 7, 8);
    /* HF's encode_special_tokens: <m> is text, zz still matches */
    EXPECT("<m>zz[X]", 0, 0, 0, 1, 0, 1, 2, 0, 2, 3, 29, 3, 5, 0, 5, 6, 10, 6,
           7, 0, 7, 8);
    EXPECT("c zzz zz", 0, 5, 0, 1, 29, 2, 4, 23, 4, 5, 29, 6, 8);
}

static void decode_gives_normalized_texts_and_skips_special_tokens(void **s)
{
    (void)s;
    static const int32_t ids[] = {26, 3, 29, 28, 27, 30};
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(
        tokvec_tokenizer_decode_flags(tk, ids, 6, 0, &text, &len, NULL), 0);
    /* normalized ones decode to their normalized text (HF's) */
    assert_string_equal(text, "<m> a zz [X] tok <s>");
    free(text);
    assert_int_equal(tokvec_tokenizer_decode_flags(tk, ids, 6,
                                                   TOKVEC_DEC_SKIP_SPECIAL,
                                                   &text, &len, NULL),
                     0);
    /* a special token whose normalized text is not its own is kept:
     * HF looks "<s>" up among the specials' texts ("<S>") */
    assert_string_equal(text, "a zz tok <s>");
    free(text);
}

/* Opens ADDED with its first "from" replaced by "to": the error. */
static int open_changed(const char *from, const char *to, char *err,
                        size_t errlen)
{
    FILE *in = fopen(ADDED, "r");
    assert_non_null(in);
    static char json[16384];
    size_t n = fread(json, 1, sizeof json - 1, in);
    fclose(in);
    json[n] = '\0';
    char *at = strstr(json, from);
    assert_non_null(at);
    *at = '\0';
    snprintf(path, sizeof path, "%s/tokenizer.json", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s%s%s", json, to, at + strlen(from));
    fclose(f);
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = errlen};
    tokvec_tokenizer *t = NULL;
    int rc = tokvec_tokenizer_open(path, &o, &t);
    assert_null(t);
    return rc;
}

static void an_added_token_with_a_model_tokens_text_is_refused(void **s)
{
    (void)s;
    /* HF would give it the model token's id, not the file's */
    char err[512] = "";
    assert_int_equal(open_changed("\"content\": \"zz\"", "\"content\": \"ab\"",
                                  err, sizeof err),
                     TOKVEC_E_TOKENIZER);
    if (!strstr(err, "added token 29: its text is token 6 of the model"))
        fail_msg("message '%s'", err);
}

static void a_normalized_token_the_normalizer_removes_is_refused(void **s)
{
    (void)s;
    /* BertNormalizer's clean_text drops control characters */
    char err[512] = "";
    assert_int_equal(open_changed("\"content\": \"Tok\"",
                                  "\"content\": \"\\u0001\\u0002\"", err,
                                  sizeof err),
                     TOKVEC_E_TOKENIZER);
    if (!strstr(err, "(id 27) is normalized to nothing"))
        fail_msg("message '%s'", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            lstrip_and_rstrip_take_the_spaces_beside_into_the_token),
        cmocka_unit_test(lstrip_stops_at_the_token_before),
        cmocka_unit_test(single_word_matches_only_away_from_word_characters),
        cmocka_unit_test(normalized_tokens_match_the_normalized_text),
        cmocka_unit_test(
            without_special_tokens_only_non_special_added_tokens_match),
        cmocka_unit_test(
            decode_gives_normalized_texts_and_skips_special_tokens),
        cmocka_unit_test(an_added_token_with_a_model_tokens_text_is_refused),
        cmocka_unit_test(a_normalized_token_the_normalizer_removes_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
