/* test_split_patterns.c -- core/tokenizer/tok_split.c: the scanners of
 * tiktoken's split regexes (gpt2, cl100k_base, qwen2, o200k_base) cut every
 * text where the regexes themselves do, the names and regex strings map to
 * the patterns, and bytes that are not UTF-8 are single "other" characters.
 *
 * The expected pieces (tests/data/split/vectors.tsv) come from the regexes
 * run by Python's `regex` module (tools/gen_split_vectors.py), not from the
 * scanners. Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

#define VECTORS "tests/data/split/vectors.tsv"

/* The piece ends of s[0..n) under pat, comma-separated, into out. */
static void split_ends(tv_pattern pat, const unsigned char *s, size_t n,
                       char *out, size_t cap)
{
    size_t i = 0, used = 0;
    out[0] = '\0';
    while (i < n) {
        size_t e = tv_split_next(pat, s, i, n);
        assert_true(e > i && e <= n); /* progress, inside the text */
        used += (size_t)snprintf(out + used, cap - used, "%s%zu",
                                 used ? "," : "", e);
        assert_true(used < cap);
        i = e;
    }
}

static size_t unhex(const char *h, unsigned char *out, size_t cap)
{
    size_t n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v;
        assert_int_equal(sscanf(h, "%2x", &v), 1);
        assert_true(n < cap);
        out[n++] = (unsigned char)v;
    }
    return n;
}

static void every_pattern_cuts_where_its_regex_does(void **state)
{
    (void)state;
    FILE *f = fopen(VECTORS, "r");
    assert_non_null(f);
    char line[4096], got[2048];
    unsigned char text[1024];
    int cases[4] = {0}, failed = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *name = strtok(line, "\t"), *hex = strtok(NULL, "\t");
        char *want = strtok(NULL, "\t");
        assert_non_null(want);
        tv_pattern pat;
        assert_int_equal(tv_pattern_parse(name, &pat), 0);
        size_t n = unhex(hex, text, sizeof text);
        split_ends(pat, text, n, got, sizeof got);
        if (strcmp(got, want)) {
            fprintf(stderr, "%s %s: want %s, got %s\n", name, hex, want, got);
            failed++;
        }
        cases[pat]++;
    }
    fclose(f);
    assert_int_equal(failed, 0);
    for (int p = 0; p < 4; p++)
        assert_true(cases[p] > 400);
}

/* Not UTF-8: a lone continuation byte, a truncated sequence, overlongs, a
 * surrogate, past U+10FFFF, a lead byte never used -- each byte one "other"
 * character, so they run together like punctuation. */
static void bytes_that_are_not_utf8_are_other_characters(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        const char *gpt2, *cl100k, *o200k;
    } cases[] = {
        {"a\x80"
         "b",
         "1,2,3", "1,3", "1,3"},
        {"a\xE4\xB8", "1,3", "1,3", "1,3"},
        {"\xC0\xAF"
         "x",
         "2,3", "2,3", "2,3"},
        {"\xE0\x80\x80!", "4", "4", "4"},
        {"\xED\xA0\x80 a", "3,5", "3,5", "3,5"},
        {"\xF4\x90\x80\x80", "4", "4", "4"},
        {"\xF0\x9F\x98", "3", "3", "3"},
        {"\xF8 x", "1,3", "1,3", "1,3"},
        {" \xFF", "2", "2", "2"},
        {"\xE4\x41", "1,2", "2", "2"},
    };
    char got[64];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const unsigned char *s = (const unsigned char *)cases[k].s;
        size_t n = strlen(cases[k].s);
        split_ends(TV_PAT_GPT2, s, n, got, sizeof got);
        assert_string_equal(got, cases[k].gpt2);
        split_ends(TV_PAT_CL100K, s, n, got, sizeof got);
        assert_string_equal(got, cases[k].cl100k);
        split_ends(TV_PAT_O200K, s, n, got, sizeof got);
        assert_string_equal(got, cases[k].o200k);
    }
}

static void pattern_names_round_trip_and_unknown_ones_are_refused(void **s)
{
    (void)s;
    static const struct {
        const char *name;
        tv_pattern pat;
        const char *canonical;
    } names[] = {
        {"gpt2", TV_PAT_GPT2, "gpt2"},
        {"r50k_base", TV_PAT_GPT2, "gpt2"},
        {"p50k_base", TV_PAT_GPT2, "gpt2"},
        {"p50k_edit", TV_PAT_GPT2, "gpt2"},
        {"cl100k_base", TV_PAT_CL100K, "cl100k_base"},
        {"o200k_base", TV_PAT_O200K, "o200k_base"},
        {"qwen2", TV_PAT_QWEN2, "qwen2"},
    };
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        tv_pattern p = (tv_pattern)-1;
        assert_int_equal(tv_pattern_parse(names[k].name, &p), 0);
        assert_int_equal(p, names[k].pat);
        assert_string_equal(tv_pattern_name(p), names[k].canonical);
    }
    tv_pattern p = TV_PAT_O200K;
    assert_int_equal(tv_pattern_parse("cl100k", &p), TOKVEC_E_INVAL);
    assert_int_equal(tv_pattern_parse("", &p), TOKVEC_E_INVAL);
    assert_int_equal(p, TV_PAT_O200K); /* untouched */
}

/* tokenizer.json's Split regexes: each of tiktoken's strings names its
 * pattern; any other string (even one character off) none. */
static void tiktoken_regex_strings_name_their_pattern(void **state)
{
    (void)state;
    static const char gpt2[] =
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
        "\\s+(?!\\S)|\\s+";
    static const char cl100k[] =
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
        "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
        "\\s+(?!\\S)|\\s+";
    static const char qwen2[] =
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    static const char o200k[] =
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"
        "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
        "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
        "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|"
        "\\s+(?!\\S)|\\s+";
    assert_int_equal(tv_pattern_from_regex(gpt2), TV_PAT_GPT2);
    assert_int_equal(tv_pattern_from_regex(cl100k), TV_PAT_CL100K);
    assert_int_equal(tv_pattern_from_regex(qwen2), TV_PAT_QWEN2);
    assert_int_equal(tv_pattern_from_regex(o200k), TV_PAT_O200K);
    char off[sizeof cl100k];
    memcpy(off, cl100k, sizeof off);
    off[sizeof off - 2] = '*'; /* \s+ -> \s* */
    assert_int_equal(tv_pattern_from_regex(off), -1);
    assert_int_equal(tv_pattern_from_regex(""), -1);
}

/* Code points past Unicode are "other"; the classes of a few by name. */
static void unicode_classes_of_code_points(void **state)
{
    (void)state;
    assert_int_equal(tv_ucd_class(0x110000), 0);
    assert_int_equal(tv_ucd_class(0xFFFFFFFFu), 0);
    assert_int_not_equal(tv_ucd_class('A'), tv_ucd_class('a'));
    assert_int_equal(tv_ucd_class(0x3000), tv_ucd_class(' '));
    assert_int_equal(tv_ucd_class(0x0663), tv_ucd_class('7'));
    assert_int_equal(tv_ucd_class('!'), 0);
    assert_non_null(tv_ucd_version());
    assert_true(strlen(tv_ucd_version()) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pattern_cuts_where_its_regex_does),
        cmocka_unit_test(bytes_that_are_not_utf8_are_other_characters),
        cmocka_unit_test(
            pattern_names_round_trip_and_unknown_ones_are_refused),
        cmocka_unit_test(tiktoken_regex_strings_name_their_pattern),
        cmocka_unit_test(unicode_classes_of_code_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
