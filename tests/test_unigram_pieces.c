/* test_unigram_pieces.c -- a Unigram text longer than the stretch the
 * stages take at once (tv_hf_buf.cut, 16 KB by default) goes through
 * them a piece at a time, cut between letters that every normalizer
 * leaves alone, the word across each cut fed to the Viterbi as it comes
 * (core/tokenizer/hf_pipeline.c, stretch_cut; unigram.c's stream). Its
 * ids and byte spans must be those of the whole text through every stage
 * at once: random texts of letters, white space, punctuation, digits,
 * marks, Prepend and Hangul characters, characters no piece spells, bytes
 * that are not UTF-8, through the Unigram files of tests/data/unigram
 * (Precompiled; NFKC with regex Replaces and Digits; BertNormalizer with
 * Replaces) and small pipelines written here (BertPreTokenizer;
 * WhitespaceSplit and Punctuation; Metaspace without split; a Replace
 * whose pattern holds letters), cut every 1 to 20,000 bytes.
 * HF's own answers for long words are make tokenizer-oracle's.
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
#include "tok_hf.h"
#include "tokvec_tokenizer.h"

static uint64_t seed = 7;

static unsigned rnd(unsigned n)
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(seed >> 33) % n;
}

/* What the texts are made of: letters (most of them, in runs, so that
 * cuts are found), and the characters around which a cut is not safe. */
static const char *const other[] = {
    " ",
    "  ",
    "\t",
    "\r\n",
    ".",
    ",",
    "!",
    "\"",
    "--",
    "x",
    "xx",
    "xxx",
    "7",
    "42",
    "\xc3\xa9",
    "e\xcc\x81",                                /* e + U+0301 */
    "\xd8\x80",                                 /* U+0600, Prepend */
    "\xef\xac\x81",                             /* U+FB01 fi */
    "\xed\x95\x9c",                             /* U+D55C */
    "\xe1\x84\x80\xe1\x85\xa1",                 /* L + V jamo */
    "\xe6\x97\xa5\xe6\x9c\xac",                 /* CJK */
    "\xe1\x88\x80",                             /* Ethiopic */
    "\xe2\x96\x81",                             /* the replacement */
    "\xe2\x80\x8d",                             /* ZWJ */
    "\xf0\x9f\x91\x8d",                         /* emoji */
    "\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f", /* dropped (Precompiled) */
    "\xff",
    "\xc3",
    "\x01",
    "\xc2\xa0",
    "\xc7\x85",
    "A",
    "QZ",
    "\xcc\x81",     /* a lone U+0301 */
    "\xe1\xac\xb5", /* U+1B35, a spacing mark */
};

/* lead: start with characters that Precompiled drops (HF's spans of the
 * whole text then lag behind by as many). */
static size_t make_text(char *o, size_t cap, int lead)
{
    size_t n = 0;
    for (; lead && n < 40; n++)
        o[n] = (char)(1 + n % 8);
    while (n + 64 < cap) {
        if (rnd(3)) { /* a run of letters, now and then a long one */
            size_t run = rnd(10) ? 1 + rnd(12) : 1 + rnd(40000);
            for (size_t k = 0; k < run && n + 64 < cap; k++)
                o[n++] = (char)('a' + (rnd(4) ? rnd(6) : rnd(26)));
        } else {
            const char *c = other[rnd(sizeof other / sizeof *other)];
            memcpy(o + n, c, strlen(c));
            n += strlen(c);
        }
    }
    return n;
}

/* text through t with the stretch cut every `cut` bytes (SIZE_MAX:
 * never) into ids. */
static void enc(const tokvec_tokenizer *t, tokvec_tok_state *st, size_t cut,
                const char *text, size_t n, unsigned flags,
                tokvec_tok_ids *ids)
{
    assert_int_equal(tv_hf_buf_get(st), 0);
    st->hf->cut = cut;
    assert_int_equal(tokvec_tokenizer_encode(t, st, text, n, flags, ids), 0);
}

static void same_in_pieces(tokvec_tokenizer *t, const char *what)
{
    size_t cap = 200000;
    char *text = malloc(cap);
    assert_non_null(text);
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids want = {0}, got = {0};
    static const size_t cuts[] = {1, 2, 5, 16, 333, 4096, 20000};
    for (int round = 0; round < 6; round++) {
        size_t n = make_text(text, 1000 + rnd((unsigned)cap - 1000),
                             round % 2);
        for (int f = 0; f < 2; f++) {
            unsigned flags = f ? TOKVEC_TOK_OFFSETS : 0;
            enc(t, st, SIZE_MAX, text, n, flags, &want);
            for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
                enc(t, st, cuts[c], text, n, flags, &got);
                if (got.n != want.n)
                    fprintf(stderr, "%s round %d cut %zu: %zu ids, want %zu\n",
                            what, round, cuts[c], got.n, want.n);
                assert_int_equal(got.n, want.n);
                for (size_t i = 0; i < want.n; i++) {
                    if (got.ids[i] != want.ids[i] ||
                        (f && (got.offsets[i] != want.offsets[i] ||
                               got.stops[i] != want.stops[i])))
                        fprintf(stderr, "%s round %d cut %zu: token %zu\n",
                                what, round, cuts[c], i);
                    assert_int_equal(got.ids[i], want.ids[i]);
                    if (f) {
                        assert_int_equal(got.offsets[i], want.offsets[i]);
                        assert_int_equal(got.stops[i], want.stops[i]);
                    }
                }
            }
        }
    }
    tokvec_tok_ids_free(&want);
    tokvec_tok_ids_free(&got);
    tokvec_tok_state_free(st);
    free(text);
}

static void file_in_pieces(const char *path)
{
    tokvec_tokenizer *t = tf_open_ok(path);
    same_in_pieces(t, path);
    tokvec_tokenizer_close(t);
}

static void json_in_pieces(const char *json)
{
    tokvec_tokenizer *t = NULL;
    char err[256] = "";
    assert_int_equal(tf_open_json(json, &t, err, sizeof err), 0);
    same_in_pieces(t, json);
    tokvec_tokenizer_close(t);
}

/* HF's spans after a character that Precompiled drops are those of the
 * characters before, to the end of the text: each piece takes over that
 * lag from the one before. */
static void precompiled_metaspace_in_pieces_is_the_whole(void **s)
{
    (void)s;
    const char *path = "tests/data/unigram/debian-unigram.json";
    tokvec_tokenizer *t = tf_open_ok(path);
    assert_int_equal(t->hf->lcuts, TV_LCUT_IDS | TV_LCUT_OFFSETS);
    tokvec_tokenizer_close(t);
    file_in_pieces(path);
}

static void nfkc_replaces_digits_in_pieces_is_the_whole(void **s)
{
    (void)s;
    file_in_pieces("tests/data/unigram/seq.json");
}

static void bert_normalizer_replaces_in_pieces_is_the_whole(void **s)
{
    (void)s;
    file_in_pieces("tests/data/unigram/model2vec-vocab-quantized.json");
}

/* A vocabulary of the letters a-f, pairs and triples of them, "x", "a."
 * and the replacement, for the pipelines below. */
#define VOCAB                                                               \
    "\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":false," \
    "\"vocab\":[[\"<unk>\",0],[\"a\",-3],[\"b\",-3],[\"c\",-3.5],"          \
    "[\"d\",-4],[\"e\",-4],[\"f\",-4.5],[\"ab\",-4],[\"abc\",-5],"          \
    "[\"cd\",-5.5],[\"def\",-6],[\"fa\",-6.5],[\"bad\",-7],[\"x\",-2],"     \
    "[\"\u2581\",-1],[\"\u2581a\",-3],[\"a.\",-4],[\"ee\",-5]]}"

static void other_pre_tokenizers_in_pieces_are_the_whole(void **s)
{
    (void)s;
    json_in_pieces("{\"normalizer\":{\"type\":\"BertNormalizer\","
                   "\"clean_text\":true,\"handle_chinese_chars\":true,"
                   "\"strip_accents\":true,\"lowercase\":true},"
                   "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"}," VOCAB
                   "}");
    json_in_pieces("{\"normalizer\":{\"type\":\"Lowercase\"},"
                   "\"pre_tokenizer\":{\"type\":\"Sequence\","
                   "\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},"
                   "{\"type\":\"Punctuation\",\"behavior\":"
                   "\"MergedWithPrevious\"}]}," VOCAB "}");
    json_in_pieces(
        "{\"normalizer\":{\"type\":\"NFD\"},"
        "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":"
        "\"\u2581\",\"prepend_scheme\":\"always\",\"split\":false}," VOCAB
        "}");
}

/* Letters a Replace pattern holds are never cut between ("ab" -> "x"
 * would match across the cut), nor letters a normalizer changes. */
static void letters_a_pattern_holds_are_not_cut_between(void **s)
{
    (void)s;
    static const char json[] =
        "{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
        "{\"type\":\"Replace\",\"pattern\":{\"String\":\"ab\"},"
        "\"content\":\"x\"},{\"type\":\"Replace\",\"pattern\":{\"Regex\":"
        "\"c{2,}\"},\"content\":\"d\"},{\"type\":\"StripAccents\"}]},"
        "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":"
        "\"\u2581\",\"prepend_scheme\":\"first\",\"split\":true}," VOCAB "}";
    tokvec_tokenizer *t = NULL;
    char err[256] = "";
    assert_int_equal(tf_open_json(json, &t, err, sizeof err), 0);
    const tv_hf *h = t->hf;
    assert_int_equal(h->lcut['a'] | h->lcut['b'] | h->lcut['c'], 0);
    assert_int_equal(h->lcut['d'] & h->lcut['Z'], 1);
    tokvec_tokenizer_close(t);
    json_in_pieces(json);
    /* Prepend changes the text's start: never cut */
    assert_int_equal(
        tf_open_json("{\"normalizer\":{\"type\":\"Prepend\",\"prepend\":"
                     "\"\u2581\"},\"pre_tokenizer\":null," VOCAB "}",
                     &t, err, sizeof err),
        0);
    assert_int_equal(t->hf->lcuts, 0);
    tokvec_tokenizer_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(precompiled_metaspace_in_pieces_is_the_whole),
        cmocka_unit_test(nfkc_replaces_digits_in_pieces_is_the_whole),
        cmocka_unit_test(bert_normalizer_replaces_in_pieces_is_the_whole),
        cmocka_unit_test(other_pre_tokenizers_in_pieces_are_the_whole),
        cmocka_unit_test(letters_a_pattern_holds_are_not_cut_between),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
