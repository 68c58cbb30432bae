/* test_normalizers.c -- core/tokenizer/normalize.c: each Hugging Face
 * normalizer (BertNormalizer with its four switches, NFD, NFKD, NFC, NFKC,
 * Lowercase, StripAccents, Strip, Replace, Prepend, Sequence) gives the
 * characters its definition gives (tests/data/normalize/vectors.tsv, from
 * tools/gen_norm_vectors.py: Python's unicodedata, not this code), every
 * character keeps a span inside the input; a normalizer the parser cannot
 * take is refused with a message naming where; an allocation that fails is
 * -ENOMEM (tests/fault_inject.h). Single-threaded.
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

#include "fault_inject.h"
#include "tok_hf.h"

#define VECTORS "tests/data/normalize/vectors.tsv"

/* The same names as tools/gen_norm_vectors.py's NORMALIZERS. */
static const struct {
    const char *name, *json;
} normalizers[] = {
    {"nfd", "{\"type\":\"NFD\"}"},
    {"nfkd", "{\"type\":\"NFKD\"}"},
    {"nfc", "{\"type\":\"NFC\"}"},
    {"nfkc", "{\"type\":\"NFKC\"}"},
    {"lowercase", "{\"type\":\"Lowercase\"}"},
    {"strip_accents", "{\"type\":\"StripAccents\"}"},
    {"bert", "{\"type\":\"BertNormalizer\",\"clean_text\":true,"
             "\"handle_chinese_chars\":true,\"strip_accents\":null,"
             "\"lowercase\":true}"},
    {"bert_cased", "{\"type\":\"BertNormalizer\",\"lowercase\":false}"},
    {"bert_cased_strip", "{\"type\":\"BertNormalizer\",\"lowercase\":false,"
                         "\"strip_accents\":true}"},
    {"bert_raw", "{\"type\":\"BertNormalizer\",\"clean_text\":false,"
                 "\"handle_chinese_chars\":false}"},
    {"bert_lower_keep_accents", "{\"type\":\"BertNormalizer\","
                                "\"strip_accents\":false}"},
    {"strip_both", "{\"type\":\"Strip\",\"strip_left\":true,"
                   "\"strip_right\":true}"},
    {"strip_left", "{\"type\":\"Strip\",\"strip_left\":true,"
                   "\"strip_right\":false}"},
    {"replace_seq",
     "{\"type\":\"Sequence\",\"normalizers\":["
     "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
     "\"content\":\"\\u2581\"},"
     "{\"type\":\"Replace\",\"pattern\":{\"String\":\"ab\"},"
     "\"content\":\"X\"},"
     "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\\u00e9\"},"
     "\"content\":\"\"}]}"},
    {"prepend_seq", "{\"type\":\"Sequence\",\"normalizers\":["
                    "{\"type\":\"NFKC\"},"
                    "{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"},"
                    "{\"type\":\"Lowercase\"}]}"},
};
#define NNORM (sizeof normalizers / sizeof *normalizers)

static size_t unhex(const char *h, unsigned char *out, size_t cap)
{
    size_t n = 0;
    if (!strcmp(h, "-"))
        return 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v;
        assert_int_equal(sscanf(h, "%2x", &v), 1);
        assert_true(n < cap);
        out[n++] = (unsigned char)v;
    }
    return n;
}

/* UTF-8 (valid: the vectors are) into t, each code point with its bytes'
 * span. */
static void load_text(tv_hf_text *t, const unsigned char *s, size_t n)
{
    t->n = 0;
    assert_int_equal(tv_hf_text_reserve(t, n + 1), 0);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], len = c < 0x80   ? 1
                                 : c < 0xE0 ? 2
                                 : c < 0xF0 ? 3
                                            : 4;
        uint32_t cp = len == 1 ? c : c & (0x7F >> len);
        for (unsigned k = 1; k < len; k++)
            cp = cp << 6 | (s[i + k] & 0x3F);
        t->cp[t->n] = cp;
        t->a0[t->n] = (uint32_t)i;
        t->a1[t->n] = (uint32_t)(i + len);
        t->n++;
        i += len;
    }
}

static size_t to_utf8(const tv_hf_text *t, unsigned char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        uint32_t c = t->cp[i];
        assert_true(n + 4 <= cap);
        if (c < 0x80) {
            out[n++] = (unsigned char)c;
        } else if (c < 0x800) {
            out[n++] = (unsigned char)(0xC0 | c >> 6);
            out[n++] = (unsigned char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[n++] = (unsigned char)(0xE0 | c >> 12);
            out[n++] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            out[n++] = (unsigned char)(0x80 | (c & 0x3F));
        } else {
            out[n++] = (unsigned char)(0xF0 | c >> 18);
            out[n++] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
            out[n++] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            out[n++] = (unsigned char)(0x80 | (c & 0x3F));
        }
    }
    return n;
}

static void parse(const char *json, tv_norm **v, size_t *n)
{
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    char err[256] = "";
    assert_non_null(j);
    int rc = tv_norm_parse(j, "normalizer", v, n, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s: %s\n", json, err);
    assert_int_equal(rc, 0);
    json_decref(j);
}

/* Runs v over s[0..n); the result's text in out (its length returned),
 * spans checked against n. */
static size_t run(const tv_norm *v, size_t nv, tv_hf_buf *b,
                  const unsigned char *s, size_t n, unsigned char *out,
                  size_t cap)
{
    int cur = 0;
    load_text(&b->t[0], s, n);
    assert_int_equal(tv_norm_run(v, nv, b, &cur), 0);
    const tv_hf_text *t = &b->t[cur];
    for (size_t i = 0; i < t->n; i++)
        assert_true(t->a0[i] <= t->a1[i] && t->a1[i] <= n);
    return to_utf8(t, out, cap);
}

static size_t norm_index(const char *name)
{
    for (size_t k = 0; k < NNORM; k++)
        if (!strcmp(normalizers[k].name, name))
            return k;
    fail_msg("no normalizer named %s", name);
    return 0;
}

static void each_normalizer_gives_the_characters_of_its_definition(void **s)
{
    (void)s;
    tv_norm *v[NNORM];
    size_t nv[NNORM];
    int cases[NNORM] = {0}, failed = 0;
    for (size_t k = 0; k < NNORM; k++)
        parse(normalizers[k].json, &v[k], &nv[k]);
    FILE *f = fopen(VECTORS, "r");
    assert_non_null(f);
    char line[4096];
    unsigned char in[1024], want[2048], got[4096];
    tv_hf_buf *b = calloc(1, sizeof *b); /* freed by tv_hf_buf_free */
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *name = strtok(line, "\t"), *hin = strtok(NULL, "\t");
        char *hout = strtok(NULL, "\t");
        assert_non_null(hout);
        size_t k = norm_index(name);
        size_t n = unhex(hin, in, sizeof in);
        size_t nw = unhex(hout, want, sizeof want);
        size_t ng = run(v[k], nv[k], b, in, n, got, sizeof got);
        if (ng != nw || memcmp(got, want, nw)) {
            fprintf(stderr, "%s %s: want %s, got ", name, hin, hout);
            for (size_t i = 0; i < ng; i++)
                fprintf(stderr, "%02x", got[i]);
            fprintf(stderr, "\n");
            failed++;
        }
        cases[k]++;
    }
    fclose(f);
    tv_hf_buf_free(b);
    for (size_t k = 0; k < NNORM; k++) {
        assert_true(cases[k] > 150);
        tv_norm_free(v[k], nv[k]);
    }
    assert_int_equal(failed, 0);
}

/* An inserted character takes the span of the character it comes with:
 * Prepend's mark and the first character share the first span; a Hangul
 * syllable's jamo all have the syllable's; Replace's new text the span of
 * the last character matched. */
static void new_characters_take_the_spans_hf_gives_them(void **s)
{
    (void)s;
    tv_norm *v;
    size_t nv;
    tv_hf_buf *b = calloc(1, sizeof *b); /* freed by tv_hf_buf_free */
    int cur;

    parse("{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"}", &v, &nv);
    cur = 0;
    load_text(&b->t[0], (const unsigned char *)"ab", 2);
    assert_int_equal(tv_norm_run(v, nv, b, &cur), 0);
    tv_hf_text *t = &b->t[cur];
    assert_int_equal(t->n, 3);
    assert_int_equal(t->cp[0], 0x2581);
    assert_int_equal(t->a0[0], 0);
    assert_int_equal(t->a1[0], 1);
    assert_int_equal(t->a0[1], 0);
    assert_int_equal(t->a1[1], 1);
    assert_int_equal(t->a0[2], 1);
    tv_norm_free(v, nv);

    parse("{\"type\":\"NFD\"}", &v, &nv);
    cur = 0;
    load_text(&b->t[0], (const unsigned char *)"x\xea\xb0\x81", 4);
    assert_int_equal(tv_norm_run(v, nv, b, &cur), 0);
    t = &b->t[cur];
    assert_int_equal(t->n, 4); /* x, then U+1100 U+1161 U+11A8 */
    for (size_t i = 1; i < 4; i++) {
        assert_int_equal(t->a0[i], 1);
        assert_int_equal(t->a1[i], 4);
    }
    tv_norm_free(v, nv);

    parse("{\"type\":\"Replace\",\"pattern\":{\"String\":\"bc\"},"
          "\"content\":\"XY\"}",
          &v, &nv);
    cur = 0;
    load_text(&b->t[0], (const unsigned char *)"abcd", 4);
    assert_int_equal(tv_norm_run(v, nv, b, &cur), 0);
    t = &b->t[cur];
    assert_int_equal(t->n, 4);
    assert_int_equal(t->cp[1], 'X');
    assert_int_equal(t->cp[2], 'Y');
    assert_int_equal(t->a0[3], 3); /* d keeps its own */
    assert_true(t->a1[2] <= 3 && t->a0[1] >= 1);
    tv_norm_free(v, nv);
    tv_hf_buf_free(b);
}

/* The Replaces of a Sequence over one character each, run as one map,
 * give the characters and spans they give one after the other (each
 * parsed alone, so none is fused): contents that later patterns change
 * (a -> bc, b -> x, c -> nothing), non-ASCII patterns and contents; and a
 * run whose content would grow past what one character may become is
 * left as single steps with the same result. */
static void one_character_replaces_in_a_row_give_what_they_give_alone(void **s)
{
    (void)s;
    static const char *const rep[][2] = {
        {"a", "bc"},      {"b", "x"},
        {"c", ""},        {"x", "yy"},
        {"\\u00e9", "a"}, {"\\u4e2d", " \\u4e2d "},
        {"!", " ! "},     {"\\u00fc", "\\u00e9"},
    };
    static const char *const texts[] = {
        "abc!", "caf\xc3\xa9 \xc3\xbc!", "x\xe4\xb8\xad\xe4\xb8\xadz",
        "",     "no pattern at all",     "aaaa bbbb cccc",
    };
    char json[4096], one[256];
    size_t nr = sizeof rep / sizeof *rep;
    for (int grow = 0; grow < 2; grow++) {
        size_t steps = grow ? 13 : nr, at = 0;
        at += (size_t)snprintf(json + at, sizeof json - at,
                               "{\"type\":\"Sequence\",\"normalizers\":[");
        tv_norm *alone[16];
        size_t nalone[16];
        for (size_t k = 0; k < steps; k++) {
            const char *p = grow ? "a" : rep[k][0];
            const char *c = grow ? "aa" : rep[k][1];
            snprintf(one, sizeof one,
                     "{\"type\":\"Replace\",\"pattern\":{\"String\":\"%s\"},"
                     "\"content\":\"%s\"}",
                     p, c);
            at += (size_t)snprintf(json + at, sizeof json - at, "%s%s",
                                   k ? "," : "", one);
            parse(one, &alone[k], &nalone[k]);
            assert_int_equal(nalone[k], 1);
        }
        snprintf(json + at, sizeof json - at, "]}");
        tv_norm *v;
        size_t nv;
        parse(json, &v, &nv);
        assert_int_equal(nv, grow ? 13 : 1); /* 2^13 a's: not fused */
        tv_hf_buf *b = calloc(1, sizeof *b); /* freed by tv_hf_buf_free */
        tv_hf_buf *c = calloc(1, sizeof *c);
        assert_non_null(b);
        assert_non_null(c);
        for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
            const unsigned char *x = (const unsigned char *)texts[t];
            size_t n = strlen(texts[t]);
            int cur = 0, cur2 = 0;
            load_text(&b->t[0], x, n);
            load_text(&c->t[0], x, n);
            assert_int_equal(tv_norm_run(v, nv, b, &cur), 0);
            for (size_t k = 0; k < steps; k++)
                assert_int_equal(tv_norm_run(alone[k], 1, c, &cur2), 0);
            const tv_hf_text *f = &b->t[cur], *g = &c->t[cur2];
            assert_int_equal(f->n, g->n);
            assert_memory_equal(f->cp, g->cp, f->n * sizeof *f->cp);
            assert_memory_equal(f->a0, g->a0, f->n * sizeof *f->a0);
            assert_memory_equal(f->a1, g->a1, f->n * sizeof *f->a1);
            if (!grow && t == 0) { /* abc! -> yy yy (c gone) " ! " */
                assert_int_equal(f->n, 7);
                assert_int_equal(f->cp[0], 'y');
                assert_int_equal(f->a1[1], 1); /* a's y y */
                assert_int_equal(f->a0[2], 1); /* b's y y */
                assert_int_equal(f->cp[5], '!');
                assert_int_equal(f->a0[5], 3);
            }
        }
        for (size_t k = 0; k < steps; k++)
            tv_norm_free(alone[k], nalone[k]);
        tv_norm_free(v, nv);
        tv_hf_buf_free(b);
        tv_hf_buf_free(c);
    }
}

static void normalizers_that_cannot_be_are_refused_naming_where(void **s)
{
    (void)s;
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"{}", "normalizer: a normalizer without a type"},
        {"{\"type\":7}", "a normalizer without a type"},
        {"{\"type\":\"Sequence\"}", "Sequence without normalizers"},
        {"{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},"
         "{\"type\":\"Nmt\"}]}",
         "normalizer.normalizers[1]"},
        {"{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"[a-z]+\"},"
         "\"content\":\" \"}",
         "Replace: the pattern is not a String or a Regex"},
        {"{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"}}",
         "Replace: the pattern is not a String or a Regex"},
        {"{\"type\":\"Precompiled\"}",
         "Precompiled.precompiled_charsmap: not a string"},
        {"{\"type\":\"Prepend\"}", "Prepend without a string"},
        {"{\"type\":\"Nmt\"}", "normalizer Nmt is not supported"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        json_error_t je;
        json_t *j = json_loads(bad[k].json, 0, &je);
        assert_non_null(j);
        tv_norm *v = (tv_norm *)1;
        size_t n = 99;
        char err[256] = "";
        assert_int_not_equal(
            tv_norm_parse(j, "normalizer", &v, &n, err, sizeof err), 0);
        if (!strstr(err, bad[k].says))
            fprintf(stderr, "%s: '%s'\n", bad[k].json, err);
        assert_non_null(strstr(err, bad[k].says));
        json_decref(j);
    }
}

static void every_failing_allocation_is_no_memory(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    /* every step, over a text long enough to grow every buffer and with a
     * run of over 32 marks (the reordering's own buffer) */
    static const char *const all =
        "{\"type\":\"Sequence\",\"normalizers\":["
        "{\"type\":\"BertNormalizer\",\"lowercase\":false,"
        "\"strip_accents\":true},"
        "{\"type\":\"BertNormalizer\"},{\"type\":\"NFKD\"},"
        "{\"type\":\"NFC\"},{\"type\":\"Lowercase\"},"
        "{\"type\":\"StripAccents\"},{\"type\":\"Strip\",\"strip_left\":true},"
        "{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"},"
        "\"content\":\"bb\"},"
        "{\"type\":\"Replace\",\"pattern\":{\"String\":\"b\"},"
        "\"content\":\"cd\"},{\"type\":\"Prepend\",\"prepend\":\"_\"}]}";
    unsigned char text[4096];
    size_t n = 0;
    memcpy(text, "A", 1), n = 1;
    for (int k = 0; k < 40; k++) /* U+0345 U+0301: combining classes */
        memcpy(text + n, "\xcd\x85\xcc\x81", 4), n += 4;
    while (n + 16 < sizeof text) /* and texts that grow */
        memcpy(text + n,
               " \xc3\x89\xe4\xb8\xad\xea\xb0\x81"
               "aa\xc4\xb0\xef\xac\x81",
               16),
            n += 16;
    memcpy(text + n, "\xf0\x9d\x85\xa5", 4), n += 4; /* Mc, ccc 216 */
    json_error_t je;
    json_t *j = json_loads(all, 0, &je);
    assert_non_null(j);
    int failures = 0, rc = -1;
    for (long nth = 1; nth < 200 && rc; nth++) {
        tv_norm *v = NULL;
        size_t nv = 0;
        char err[256];
        fi_arm(FI_MALLOC, nth, ENOMEM);
        fi_arm(FI_REALLOC, nth, ENOMEM);
        rc = tv_norm_parse(j, "n", &v, &nv, err, sizeof err);
        if (rc == 0) {
            tv_hf_buf *b = calloc(1, sizeof *b); /* freed by tv_hf_buf_free */
            int cur = 0;
            fi_reset();
            load_text(&b->t[0], text, n);
            fi_arm(FI_MALLOC, nth, ENOMEM);
            fi_arm(FI_REALLOC, nth, ENOMEM);
            rc = tv_norm_run(v, nv, b, &cur);
            tv_hf_buf_free(b);
            tv_norm_free(v, nv);
        }
        fi_reset();
        if (rc) {
            assert_int_equal(rc, -ENOMEM);
            failures++;
        }
    }
    json_decref(j);
    assert_int_equal(rc, 0);
    assert_true(failures > 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            each_normalizer_gives_the_characters_of_its_definition),
        cmocka_unit_test(new_characters_take_the_spans_hf_gives_them),
        cmocka_unit_test(
            one_character_replaces_in_a_row_give_what_they_give_alone),
        cmocka_unit_test(normalizers_that_cannot_be_are_refused_naming_where),
        cmocka_unit_test(every_failing_allocation_is_no_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
