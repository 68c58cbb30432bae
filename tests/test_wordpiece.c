/* test_wordpiece.c -- the tokenizer module's Hugging Face pipelines beyond
 * byte-level BPE (tok_hf.h): WordPiece, normalizers, pre-tokenizers,
 * post-processors and decoders, through the public tokenizer calls.
 *
 * Data: tests/data/bge/tokenizer.json (a bge WordPiece tokenizer, from
 * Model2Vec's test fixtures, MIT) and the .json files of
 * tests/data/wordpiece/ (small pipelines written for these tests). Every
 * expected id, offset and decoded text below is what Hugging Face tokenizers
 * 0.23.2 (npm) answers for the same file and text (offsets turned into UTF-8
 * bytes). Exactness at scale is tests/oracle/hf.js (make tokenizer-oracle).
 */
#include <errno.h>
#include <jansson.h>
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

#define BGE "tests/data/bge/tokenizer.json"
#define WP(name) "tests/data/wordpiece/" name ".json"

static tokvec_tok_state *st;
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

/* Encodes s and compares with want: n triples id, start, stop. */
static void expect(const tokvec_tokenizer *t, const char *s, unsigned flags,
                   const int32_t *want, size_t n)
{
    tokvec_tok_ids ids = {0};
    assert_int_equal(tokvec_tokenizer_encode(t, st, s, strlen(s),
                                             flags | TOKVEC_TOK_SPECIAL |
                                                 TOKVEC_TOK_OFFSETS,
                                             &ids),
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

#define EXPECT(t, s, flags, ...)                                   \
    do {                                                           \
        static const int32_t w_[] = {__VA_ARGS__};                 \
        expect((t), (s), (flags), w_, sizeof w_ / sizeof *w_ / 3); \
    } while (0)

static void expect_decode(const tokvec_tokenizer *t, const int32_t *ids,
                          size_t n, unsigned flags, const char *want)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(
        tokvec_tokenizer_decode_flags(t, ids, n, flags, &text, &len, NULL), 0);
    assert_string_equal(text, want);
    assert_int_equal(len, strlen(want));
    free(text);
}

static void expect_refused(const char *json, const char *want)
{
    snprintf(path, sizeof path, "%s/tokenizer.json", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    char err[512] = "";
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = NULL;
    assert_int_equal(tokvec_tokenizer_open(path, &o, &t), TOKVEC_E_TOKENIZER);
    assert_null(t);
    if (!strstr(err, want) || !strstr(err, tu_dir))
        fail_msg("message '%s' lacks '%s' or the file", err, want);
}

static int setup(void **state)
{
    (void)state;
    if (tu_make_dir())
        return -1;
    st = tokvec_tok_state_new();
    return st ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tokvec_tok_state_free(st);
    return tu_remove_dir();
}

static void bge_opens_as_wordpiece_with_two_added_tokens(void **s)
{
    (void)s;
    tokvec_tokenizer *t = open_ok(BGE);
    tokvec_tokenizer_info i;
    tokvec_tokenizer_get_info(t, &i);
    assert_string_equal(i.model, "WordPiece");
    assert_string_equal(i.format, "tokenizer.json");
    assert_int_equal(i.vocab_size, 29528);
    assert_int_equal(i.n_special, 5);
    assert_int_equal(i.n_added, 2);
    tokvec_tokenizer_close(t);
}

static void bge_ids_and_offsets_are_hfs(void **s)
{
    (void)s;
    tokvec_tokenizer *t = open_ok(BGE);
    /* lowercased, accents stripped, CJK split; offsets into the input */
    EXPECT(t,
           "Hello, World! na\xc3\xafve caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87",
           0, 6598, 0, 5, 16, 5, 6, 1094, 7, 12, 5, 12, 13, 14749, 14, 20,
           6674, 21, 26, 752, 27, 30, 867, 30, 33);
    /* added tokens in the raw text; [CLS] ... [SEP] with empty spans */
    EXPECT(t, "h\xc3\xa9llo[SEP]x", TOKVEC_TOK_ADD_SPECIAL, 101, 0, 0, 6598, 0,
           6, 3, 6, 11, 66, 11, 12, 102, 0, 0);
    /* a zero-width space and a soft hyphen are removed */
    EXPECT(t,
           "a\xe2\x80\x8b"
           "b \xc2\xad x",
           0, 10119, 0, 5, 66, 9, 10);
    /* an emoji is no token: the whole word is [UNK] */
    EXPECT(t, "\xf0\x9f\x98\x80 abc", 0, 1, 0, 4, 4931, 5, 8);
    tokvec_tokenizer_close(t);
}

static void a_word_past_max_input_chars_or_with_no_piece_is_one_unk(void **s)
{
    (void)s;
    tokvec_tokenizer *t = open_ok(WP("bert")); /* max 5 characters */
    EXPECT(t, "abcabcabc ab", 0, 0, 0, 9, 6, 10, 12);
    EXPECT(t, "abzq a", 0, 0, 0, 4, 3, 5, 6);
    /* greedy longest match with the ## prefix */
    EXPECT(t, "ABC abbc!", 0, 6, 0, 2, 8, 2, 3, 6, 4, 6, 9, 6, 8, 11, 8, 9);
    EXPECT(t, "fi12 1212", 0, 18, 0, 2, 24, 2, 3, 25, 3, 4, 15, 5, 7, 24, 7, 8,
           25, 8, 9);
    EXPECT(t,
           "\xc3\x89"
           "bc, x.",
           TOKVEC_TOK_ADD_SPECIAL, 1, 0, 0, 16, 0, 2, 9, 2, 4, 0, 4, 5, 10, 6,
           7, 12, 7, 8, 2, 0, 0);
    tokvec_tokenizer_close(t);
}

static void a_long_word_costs_no_more_than_its_length(void **s)
{
    (void)s;
    tokvec_tokenizer *t = open_ok(BGE);
    size_t n = (size_t)4 << 20;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'a', n);
    big[n] = '\0';
    tokvec_tok_ids ids = {0};
    assert_int_equal(
        tokvec_tokenizer_encode(t, st, big, n, TOKVEC_TOK_OFFSETS, &ids), 0);
    assert_int_equal(ids.n, 1);
    assert_int_equal(ids.ids[0], 1);
    assert_int_equal(ids.stops[0], n);
    tokvec_tok_ids_free(&ids);
    free(big);
    tokvec_tokenizer_close(t);
}

/* bge with one more normalizer step that changes nothing (Strip of no
 * side), written into the test folder: the same pipeline run stage by
 * stage (the one-pass ASCII route needs exactly BertNormalizer). */
static tokvec_tokenizer *open_stepwise(void)
{
    json_error_t je;
    json_t *root = json_load_file(BGE, 0, &je);
    assert_non_null(root);
    json_t *seq = json_pack("{s:s, s:[O, {s:s, s:b, s:b}]}", "type",
                            "Sequence", "normalizers",
                            json_object_get(root, "normalizer"), "type",
                            "Strip", "strip_left", 0, "strip_right", 0);
    assert_non_null(seq);
    assert_int_equal(json_object_set_new(root, "normalizer", seq), 0);
    snprintf(path, sizeof path, "%s/stepwise.json", tu_dir);
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    return open_ok(path);
}

/* ASCII between white space takes one table-driven pass, the rest every
 * stage: for texts mixing them (controls that clean_text drops or makes
 * spaces, vertical tab and form feed, DEL, NUL, punctuation, upper case,
 * accents, CJK, a Greek question mark that NFD makes ';', unknown
 * characters, long words) the ids and spans are those of the stage by
 * stage run, which the oracle checks against Hugging Face's. */
static void the_ascii_pass_is_the_stage_by_stage_run(void **s)
{
    (void)s;
    static const char *const texts[] = {
        "Hello, World! na\xc3\xafve caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87",
        "ab\x01"
        "cd\x7f"
        "ef\tGH\nij\rkl\x0bmn\x0cop\x1fqr",
        "x\xcd\xbey caf\xc3\xa9,tea\xef\xbc\x8c\xe4\xb8\xad"
        "ABC \xe2\x80\x83 done.",
        "\x00lead and trail\x00",
        "unaffable unaffable\xc3\xa9 \xc3\x89TUDE xyzzyplugh 12,345.67",
        "\xf0\x9f\x98\x80\xf0\x9f\x98\x80 smile \xf0\x9f\x98\x80x",
        "  \t\n  ",
        "[CLS] a [SEP]b[MASK]c",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        " a\xc3\xa1\xc3\xa1\xc3\xa1\xc3\xa1\xc3\xa1\xc3\xa1\xc3\xa1\xc3\xa1"
        "\xc3\xa1\xc3\xa1\xc3\xa1 end",
    };
    static const size_t lens[] = {0, 0, 0, 17, 0, 0, 0, 0, 0};
    tokvec_tokenizer *fast = open_ok(BGE), *slow = open_stepwise();
    tokvec_tok_ids a = {0}, b = {0};
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        size_t n = lens[k] ? lens[k] : strlen(texts[k]);
        unsigned f = TOKVEC_TOK_SPECIAL | TOKVEC_TOK_OFFSETS;
        assert_int_equal(tokvec_tokenizer_encode(fast, st, texts[k], n, f, &a),
                         0);
        assert_int_equal(tokvec_tokenizer_encode(slow, st, texts[k], n, f, &b),
                         0);
        if (a.n != b.n)
            fail_msg("text %zu: %zu tokens, stage by stage %zu", k, a.n, b.n);
        for (size_t j = 0; j < a.n; j++)
            if (a.ids[j] != b.ids[j] || a.offsets[j] != b.offsets[j] ||
                a.stops[j] != b.stops[j])
                fail_msg("text %zu token %zu: %d %zu..%zu, stage by stage "
                         "%d %zu..%zu",
                         k, j, a.ids[j], a.offsets[j], a.stops[j], b.ids[j],
                         b.offsets[j], b.stops[j]);
    }
    /* and what HF gives with a control character clean_text drops */
    EXPECT(fast,
           "ab\x01"
           "cd\tx",
           0, 4931, 0, 4, 1100, 4, 5, 66, 6, 7);
    tokvec_tok_ids_free(&a);
    tokvec_tok_ids_free(&b);
    tokvec_tokenizer_close(fast);
    tokvec_tokenizer_close(slow);
}

/* bge with its BertNormalizer's flag key set to v (key NULL: as it is),
 * alone (the one-pass route) or stage by stage (open_stepwise's Strip). */
static tokvec_tokenizer *open_bert(const char *key, json_t *v, int stepwise)
{
    json_error_t je;
    json_t *root = json_load_file(BGE, 0, &je);
    assert_non_null(root);
    json_t *norm = json_object_get(root, "normalizer");
    if (key)
        assert_int_equal(json_object_set_new(norm, key, v), 0);
    if (stepwise) {
        json_t *seq = json_pack("{s:s, s:[O, {s:s, s:b, s:b}]}", "type",
                                "Sequence", "normalizers", norm, "type",
                                "Strip", "strip_left", 0, "strip_right", 0);
        assert_non_null(seq);
        assert_int_equal(json_object_set_new(root, "normalizer", seq), 0);
    }
    snprintf(path, sizeof path, "%s/bert-%d.json", tu_dir, stepwise);
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    return open_ok(path);
}

/* The code points the next test tries: every one of two bytes, every
 * seventh of three and every one of the CJK compatibility block (NFD
 * changes them), every 509th of four and every third of the CJK
 * compatibility supplement, the ends of handle_chinese_chars' ranges,
 * Deseret (it has case), the musical symbols whose marks have a
 * combining class; 0 after the last. */
static uint32_t next_char(uint32_t c)
{
    static const uint32_t edges[] = {
        0x3400,  0x4DBF,  0x4DC0,  0x4E00,  0x9FFF,  0xA000,  0x1FFFF,
        0x20000, 0x2A6DF, 0x2A6E0, 0x2A700, 0x2B73F, 0x2B740, 0x2B81F,
        0x2B820, 0x2B91F, 0x2B920, 0x2CEAF, 0x2CEB0, 0x2F7FF, 0x2FA20,
        0x10400, 0x1044F, 0x1D165, 0x1D16D, 0x1D172, 0x1F600, 0x10FFFF};
    uint32_t n = c < 0x800                     ? c + 1
                 : c >= 0xF900 && c < 0xFB00   ? c + 1
                 : c < 0x10000                 ? c + 7
                 : c >= 0x2F800 && c < 0x2FA20 ? c + 3
                                               : c + 509;
    for (size_t k = 0; k < sizeof edges / sizeof *edges; k++)
        if (edges[k] > c && edges[k] < n)
            n = edges[k];
    if (n >= 0xD800 && n < 0xE000)
        n = 0xE000;
    return n <= 0x10FFFF ? n : 0;
}

/* Characters take the one-pass route through a table made from
 * BertNormalizer's flags (U+0080..U+FFFF; four bytes computed as they
 * come): with the flags as bge has them and with each changed, each
 * character of next_char beside ASCII letters, itself, an accented
 * capital, white space and punctuation gives the ids and spans of the
 * stage by stage run (which the oracle checks against Hugging Face's:
 * hf.js --bert-variants). */
static void characters_take_the_stage_by_stage_result(void **s)
{
    (void)s;
    static const char *const keys[] = {NULL, "lowercase", "strip_accents",
                                       "clean_text", "handle_chinese_chars"};
    tokvec_tok_ids a = {0}, b = {0};
    unsigned f = TOKVEC_TOK_SPECIAL | TOKVEC_TOK_OFFSETS;
    for (size_t v = 0; v < sizeof keys / sizeof *keys; v++) {
        tokvec_tokenizer *fast = open_bert(keys[v], json_false(), 0);
        tokvec_tokenizer *slow = open_bert(keys[v], json_false(), 1);
        for (uint32_t c = 0x80; c; c = next_char(c)) {
            char u[5] = {0};
            if (c < 0x800) {
                u[0] = (char)(0xC0 | c >> 6);
                u[1] = (char)(0x80 | (c & 0x3F));
            } else if (c < 0x10000) {
                u[0] = (char)(0xE0 | c >> 12);
                u[1] = (char)(0x80 | (c >> 6 & 0x3F));
                u[2] = (char)(0x80 | (c & 0x3F));
            } else {
                u[0] = (char)(0xF0 | c >> 18);
                u[1] = (char)(0x80 | (c >> 12 & 0x3F));
                u[2] = (char)(0x80 | (c >> 6 & 0x3F));
                u[3] = (char)(0x80 | (c & 0x3F));
            }
            char text[128];
            int n = snprintf(text, sizeof text,
                             "a%sb %s%s \xc3\x89%s x,%s.\t%sing %s", u, u, u,
                             u, u, u, u);
            assert_true(n > 0 && (size_t)n < sizeof text);
            assert_int_equal(
                tokvec_tokenizer_encode(fast, st, text, (size_t)n, f, &a), 0);
            assert_int_equal(
                tokvec_tokenizer_encode(slow, st, text, (size_t)n, f, &b), 0);
            if (a.n != b.n)
                fail_msg("%s U+%04X: %zu tokens, stage by stage %zu",
                         keys[v] ? keys[v] : "bge", c, a.n, b.n);
            for (size_t j = 0; j < a.n; j++)
                if (a.ids[j] != b.ids[j] || a.offsets[j] != b.offsets[j] ||
                    a.stops[j] != b.stops[j])
                    fail_msg("%s U+%04X token %zu: %d %zu..%zu, stage by "
                             "stage %d %zu..%zu",
                             keys[v] ? keys[v] : "bge", c, j, a.ids[j],
                             a.offsets[j], a.stops[j], b.ids[j], b.offsets[j],
                             b.stops[j]);
        }
        tokvec_tokenizer_close(fast);
        tokvec_tokenizer_close(slow);
    }
    tokvec_tok_ids_free(&a);
    tokvec_tok_ids_free(&b);
}

static void normalizer_and_pretokenizer_sequences_are_hfs(void **s)
{
    (void)s;
    /* NFKC, Lowercase, Replace "zz", Strip; WhitespaceSplit,
     * Punctuation MergedWithPrevious, Digits; template [CLS] A [SEP]
     * [SEP] */
    tokvec_tokenizer *t = open_ok(WP("seq"));
    EXPECT(t, "  \xef\xac\x81 ABzz!! 12ab. ", 0, 18, 2, 5, 0, 6, 11, 11, 11,
           12, 15, 13, 15, 0, 15, 18);
    EXPECT(t, "e\xcc\x81 a!b.c", 0, 17, 0, 1, 0, 4, 6, 0, 6, 8, 5, 8, 9);
    EXPECT(t, "x12y", 0, 10, 0, 1, 15, 1, 3, 0, 3, 4);
    EXPECT(t, "", TOKVEC_TOK_ADD_SPECIAL, 1, 0, 0, 2, 0, 0, 2, 0, 0);
    tokvec_tokenizer_close(t);
    /* NFD, StripAccents, Prepend "z"; Punctuation MergedWithNext, Digits
     * one by one */
    t = open_ok(WP("punct"));
    EXPECT(t, "\xc3\xa9!!a b.!c", 0, 0, 0, 2, 11, 2, 3, 11, 3, 4, 22, 4, 5, 4,
           6, 7, 12, 7, 8, 11, 8, 9, 8, 9, 10);
    EXPECT(t, "a12!", 0, 23, 0, 1, 22, 0, 1, 13, 1, 2, 14, 2, 3, 11, 3, 4);
    EXPECT(t, "!a", 0, 23, 0, 1, 11, 0, 1, 22, 1, 2);
    tokvec_tokenizer_close(t);
    /* NFKD; Punctuation Contiguous */
    t = open_ok(WP("contig"));
    EXPECT(t, "a!!.b ..c", 0, 3, 0, 1, 0, 1, 4, 4, 4, 5, 0, 6, 8, 5, 8, 9);
    EXPECT(t, "\xef\xac\x81!", 0, 18, 0, 3, 11, 3, 4);
    tokvec_tokenizer_close(t);
}

static void decoders_are_hfs(void **s)
{
    (void)s;
    tokvec_tokenizer *t = open_ok(WP("bert"));
    static const int32_t a[] = {1, 16, 9, 0, 10, 12, 2};
    expect_decode(t, a, 7, 0, "[CLS] ebc [UNK] x. [SEP]");
    expect_decode(t, a, 7, TOKVEC_DEC_SKIP_SPECIAL, "ebc x.");
    tokvec_tokenizer_close(t);
    t = open_ok(WP("contig")); /* Fuse */
    static const int32_t b[] = {3, 0, 4, 0, 5};
    expect_decode(t, b, 5, 0, "a[UNK]b[UNK]c");
    expect_decode(t, b, 5, TOKVEC_DEC_SKIP_SPECIAL, "abc");
    tokvec_tokenizer_close(t);
    t = open_ok(WP("punct")); /* no decoder: joined by spaces */
    static const int32_t c[] = {23, 11, 22};
    expect_decode(t, c, 3, 0, "z ! ##a");
    tokvec_tokenizer_close(t);
}

#define WP_JSON(extra)                                            \
    "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"," \
    "\"vocab\":{\"[UNK]\":0,\"a\":1}}" extra "}"

static void unsupported_components_are_refused_by_json_path(void **s)
{
    (void)s;
    expect_refused(WP_JSON(",\"normalizer\":{\"type\":\"Sequence\","
                           "\"normalizers\":[{\"type\":\"NFC\"},{\"type\":"
                           "\"Replace\",\"pattern\":{\"Regex\":\"a|b\"},"
                           "\"content\":\"b\"}]}"),
                   "normalizer.normalizers[1]: Replace");
    expect_refused(WP_JSON(",\"pre_tokenizer\":{\"type\":\"Sequence\","
                           "\"pretokenizers\":[{\"type\":\"Digits\"},"
                           "{\"type\":\"Metaspace\"}]}"),
                   "pre_tokenizer.pretokenizers[1]: Metaspace is supported "
                   "only as the first");
    expect_refused(WP_JSON(",\"pre_tokenizer\":{\"type\":\"Metaspace\","
                           "\"replacement\":\"_\",\"prepend_scheme\":"
                           "\"sometimes\"}"),
                   "pre_tokenizer: Metaspace.prepend_scheme");
    expect_refused(WP_JSON(",\"decoder\":{\"type\":\"Sequence\",\"decoders\":"
                           "[{\"type\":\"CTC\"}]}"),
                   "decoder.decoders[0]: decoder CTC");
    expect_refused(WP_JSON(",\"post_processor\":{\"type\":\"Sequence\","
                           "\"processors\":[{\"type\":\"Nope\"}]}"),
                   "post_processor.processors[0]: post-processor Nope");
    expect_refused("{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[X]\","
                   "\"vocab\":{\"a\":0}}}",
                   "unk_token");
    expect_refused("{\"model\":{\"type\":\"WordLevel\",\"vocab\":{}}}",
                   "WordLevel");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bge_opens_as_wordpiece_with_two_added_tokens),
        cmocka_unit_test(bge_ids_and_offsets_are_hfs),
        cmocka_unit_test(
            a_word_past_max_input_chars_or_with_no_piece_is_one_unk),
        cmocka_unit_test(a_long_word_costs_no_more_than_its_length),
        cmocka_unit_test(the_ascii_pass_is_the_stage_by_stage_run),
        cmocka_unit_test(characters_take_the_stage_by_stage_result),
        cmocka_unit_test(normalizer_and_pretokenizer_sequences_are_hfs),
        cmocka_unit_test(decoders_are_hfs),
        cmocka_unit_test(unsupported_components_are_refused_by_json_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
