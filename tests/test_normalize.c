/* test_normalize.c -- core/tokenizer/normalize.c, what
 * test_normalizers.c's vectors leave: BertNormalizer's Chinese characters
 * at each edge of each of HF's eight ranges (bert.rs is_chinese_char) and
 * one past; Replace with the Regex patterns tokvec runs (an escaped
 * metacharacter, a non-ASCII character, {n}, {n,}, {n,m}, \s+), leftmost
 * longest matches without overlap as the regex crate's replace_all gives,
 * and the patterns it refuses; replacement and prepended strings of
 * characters of two, three and four bytes; a null normalizer and
 * Sequence's own rules. Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"

static size_t put8(uint32_t c, unsigned char *o)
{
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | c >> 6);
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | c >> 12);
        o[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | c >> 18);
    o[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* The normalizer json over UTF-8 s: its text, NUL-terminated, in out. */
static void norm(const char *json, const char *s, char *out, size_t cap)
{
    json_error_t je;
    json_t *j = json_loads(json, JSON_DECODE_ANY, &je);
    char err[256] = "";
    assert_non_null(j);
    tv_norm *v = NULL;
    size_t nv = 0;
    if (tv_norm_parse(j, "normalizer", &v, &nv, err, sizeof err))
        fail_msg("%s: %s", json, err);
    json_decref(j);
    tv_hf_buf *b = calloc(1, sizeof *b); /* freed by tv_hf_buf_free */
    assert_non_null(b);
    tv_hf_text *t = &b->t[0];
    size_t n = strlen(s);
    assert_int_equal(tv_hf_text_reserve(t, n + 1), 0);
    for (size_t i = 0; i < n;) {
        unsigned c = (unsigned char)s[i], len = c < 0x80   ? 1
                                                : c < 0xE0 ? 2
                                                : c < 0xF0 ? 3
                                                           : 4;
        uint32_t cp = len == 1 ? c : c & (0x7F >> len);
        for (unsigned k = 1; k < len; k++)
            cp = cp << 6 | ((unsigned char)s[i + k] & 0x3F);
        t->cp[t->n] = cp;
        t->a0[t->n] = (uint32_t)i;
        t->a1[t->n] = (uint32_t)(i + len);
        t->n++;
        i += len;
    }
    int cur = 0;
    assert_int_equal(tv_norm_run(v, nv, b, &cur), 0);
    size_t w = 0;
    for (size_t i = 0; i < b->t[cur].n; i++) {
        assert_true(w + 5 < cap);
        assert_true(b->t[cur].a1[i] <= n);
        w += put8(b->t[cur].cp[i], (unsigned char *)out + w);
    }
    out[w] = 0;
    tv_hf_buf_free(b);
    tv_norm_free(v, nv);
}

static void expect(const char *json, const char *s, const char *want)
{
    char got[512];
    norm(json, s, got, sizeof got);
    if (strcmp(got, want))
        fail_msg("%s on '%s': '%s', want '%s'", json, s, got, want);
}

static void chinese_characters_are_spaced_at_each_range_edge(void **s)
{
    (void)s;
    /* bert.rs's ranges, written out here */
    static const uint32_t range[8][2] = {
        {0x4E00, 0x9FFF},   {0x3400, 0x4DBF},   {0x20000, 0x2A6DF},
        {0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B920, 0x2CEAF},
        {0xF900, 0xFAFF},   {0x2F800, 0x2FA1F}};
    static const char bert[] =
        "{\"type\":\"BertNormalizer\",\"clean_text\":false,"
        "\"lowercase\":false,\"strip_accents\":false}";
    for (int r = 0; r < 8; r++) {
        uint32_t c[4] = {range[r][0] - 1, range[r][0], range[r][1],
                         range[r][1] + 1};
        for (int k = 0; k < 4; k++) {
            int in = 0;
            for (int q = 0; q < 8; q++)
                in |= c[k] >= range[q][0] && c[k] <= range[q][1];
            unsigned char text[8], want[16];
            size_t n = put8(c[k], text), m = 0;
            text[n] = 0;
            if (in)
                want[m++] = ' ';
            memcpy(want + m, text, n), m += n;
            if (in)
                want[m++] = ' ';
            want[m] = 0;
            expect(bert, (const char *)text, (const char *)want);
        }
    }
    /* without handle_chinese_chars: as it is */
    expect("{\"type\":\"BertNormalizer\",\"clean_text\":false,"
           "\"handle_chinese_chars\":false}",
           "a\xe4\xb8\x80"
           "b",
           "a\xe4\xb8\x80"
           "b");
}

#define RE(p, c)                                                           \
    "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"" p "\"},\"content\":" \
    "\"" c "\"}"

static void regex_replacements_take_leftmost_longest_matches(void **s)
{
    (void)s;
    expect(RE("\\\\.", "X"), "a.b..", "aXbXX");
    expect(RE("\\\\++", "X"), "a++b+", "aXbX");
    expect(RE("\\u00e9+", "e"), "\xc3\xa9\xc3\xa9 a \xc3\xa9", "e a e");
    expect(RE("\\u4e00", "-"), "a\xe4\xb8\x80", "a-");
    expect(RE("\\ud83d\\ude00{2}", "!"),
           "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80",
           "!\xf0\x9f\x98\x80");
    expect(RE("a{2}", "X"), "aaaaa", "XXa");
    expect(RE("a{2,}", "X"), "aaabaab a", "XbXb a");
    expect(RE("a{1,2}", "X"), "aaaaa", "XXX");
    expect(RE("\\\\s+", " "), "a \t\n b", "a b");
    expect(RE("b", "\\u00e9\\u4e00\\ud83d\\ude00"), "abc",
           "a\xc3\xa9\xe4\xb8\x80\xf0\x9f\x98\x80"
           "c");
    expect("{\"type\":\"Prepend\",\"prepend\":\"\\u00e9\\ud83d\\ude00\"}", "a",
           "\xc3\xa9\xf0\x9f\x98\x80"
           "a");
}

static void refused(const char *json, const char *says)
{
    json_error_t je;
    json_t *j = json_loads(json, JSON_DECODE_ANY, &je);
    assert_non_null(j);
    tv_norm *v = (tv_norm *)1;
    size_t nv = 9;
    char err[512] = "";
    assert_int_equal(tv_norm_parse(j, "normalizer", &v, &nv, err, sizeof err),
                     TOKVEC_E_TOKENIZER);
    assert_null(v);
    assert_int_equal(nv, 0);
    if (!strstr(err, says))
        fail_msg("%s: '%s' lacks '%s'", json, err, says);
    json_decref(j);
}

static void patterns_and_shapes_it_cannot_run_are_refused(void **s)
{
    (void)s;
    static const char *const re[] = {
        RE("a{0}", "X"),   RE("a{2,1}", "X"), RE("a{x}", "X"),  RE("a{2", "X"),
        RE("a{2,x}", "X"), RE("\\\\d", "X"),  RE("a+b", "X"),   RE("", "X"),
        RE(".", "X"),      RE("\\\\", "X"),   RE("a{2,3", "X"),
    };
    for (size_t k = 0; k < sizeof re / sizeof re[0]; k++)
        refused(re[k], "Replace: the pattern is not a String or a Regex");
    refused("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"a\"}}",
            "Replace: the pattern is not");
    refused("{\"type\":\"Sequence\",\"normalizers\":{}}",
            "normalizer: Sequence without normalizers");
    refused("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},5]}",
            "normalizer.normalizers[1]: a normalizer without a type");
    refused("{\"type\":\"Prepend\"}", "Prepend without a string");
    refused("{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"A\"}",
            "normalizer: Precompiled.precompiled_charsmap: not base64");
    /* null: no normalizer */
    tv_norm *v = (tv_norm *)1;
    size_t nv = 9;
    assert_int_equal(tv_norm_parse(json_null(), "n", &v, &nv, NULL, 0), 0);
    assert_null(v);
    assert_int_equal(nv, 0);
    assert_int_equal(tv_norm_parse(NULL, "n", &v, &nv, NULL, 0), 0);
}

static void bert_switches_combine_as_hf(void **s)
{
    (void)s;
    /* strip_accents null follows lowercase */
    expect("{\"type\":\"BertNormalizer\",\"lowercase\":false,"
           "\"strip_accents\":null}",
           "\xc3\x89", "\xc3\x89");
    expect("{\"type\":\"BertNormalizer\",\"lowercase\":true,"
           "\"strip_accents\":null}",
           "\xc3\x89", "e");
    expect("{\"type\":\"BertNormalizer\",\"lowercase\":true,"
           "\"strip_accents\":false}",
           "\xc3\x89", "\xc3\xa9");
    /* clean_text: controls go (U+0085 is one: Cc), whitespace (U+3000)
     * becomes a space */
    expect("{\"type\":\"BertNormalizer\",\"lowercase\":false}",
           "a\x7f\x01\tb\xc2\x85\xe3\x80\x80"
           "c",
           "a b c");
    expect("{\"type\":\"Strip\",\"strip_left\":false,\"strip_right\":true}",
           "  a  ", "  a");
    expect("{\"type\":\"Strip\"}", "  a  ", "  a  ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chinese_characters_are_spaced_at_each_range_edge),
        cmocka_unit_test(regex_replacements_take_leftmost_longest_matches),
        cmocka_unit_test(patterns_and_shapes_it_cannot_run_are_refused),
        cmocka_unit_test(bert_switches_combine_as_hf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
