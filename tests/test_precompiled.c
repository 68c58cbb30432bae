/* test_precompiled.c -- core/tokenizer/precompiled.c on its own: extended
 * grapheme clusters (UAX #29's rules GB3-GB13, one case per rule and its
 * near misses), the charsmap's framing (too short, a trie larger than the
 * bytes, normalized strings not UTF-8), canonical base64 only (padding in
 * the right place, no stray bits), and the lookups and change lists of a
 * small double-array trie built here unit by unit (its own answers written
 * by hand, not by this code); an allocation that fails is -ENOMEM
 * (tests/fault_inject.h). Single-threaded.
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
#include "precompiled.h"

#define TV_GCB_RANGES_TABLE /* the generated ranges, the reference */
#include "tok_gcb.h"

/* The clusters of s, given as their byte lengths (0-terminated). */
static void clusters_are(const char *s, const size_t *lens)
{
    size_t n = strlen(s), i = 0, k = 0;
    const unsigned char *u = (const unsigned char *)s;
    while (i < n) {
        size_t e = tv_grapheme_next(u, i, n);
        if (lens[k] == 0 || e - i != lens[k])
            fprintf(stderr, "cluster %zu of '%s': %zu bytes\n", k, s, e - i);
        assert_int_equal(e - i, lens[k]);
        i = e;
        k++;
    }
    assert_int_equal(lens[k], 0);
}

#define L "\xe1\x84\x80"   /* U+1100 Hangul L */
#define V "\xe1\x85\xa1"   /* U+1161 Hangul V */
#define T "\xe1\x86\xa8"   /* U+11A8 Hangul T */
#define LV "\xea\xb0\x80"  /* U+AC00 Hangul LV */
#define LVT "\xea\xb0\x81" /* U+AC01 Hangul LVT */
#define ACUTE "\xcc\x81"   /* U+0301 Extend */
#define ZWJ "\xe2\x80\x8d" /* U+200D */
#define MAN "\xf0\x9f\x91\xa8"
#define WOMAN "\xf0\x9f\x91\xa9"
#define RI_U "\xf0\x9f\x87\xba" /* regional indicators U, S */
#define RI_S "\xf0\x9f\x87\xb8"

/* Every code point, U+0000..U+10FFFF, has in the two-level table the
 * class of its range in the generated list (Other outside them), and a
 * byte outside UTF-8 is a control. */
static void every_code_point_has_the_class_of_its_ucd_range(void **st)
{
    (void)st;
    size_t r = 0, mismatches = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        while (r < TV_GCB_RANGES && tv_gcb_range[r][1] < cp)
            r++;
        int want = r < TV_GCB_RANGES && tv_gcb_range[r][0] <= cp
                       ? (int)tv_gcb_range[r][2]
                       : 0;
        if (tv_grapheme_class(cp) != want && mismatches++ < 5)
            fprintf(stderr, "U+%04X: class %d, its range says %d\n",
                    (unsigned)cp, tv_grapheme_class(cp), want);
    }
    assert_int_equal(mismatches, 0);
    assert_int_equal(tv_grapheme_class(0xAC00), 12);     /* LV */
    assert_int_equal(tv_grapheme_class(0x1F468), 16);    /* ExtPict */
    assert_int_equal(tv_grapheme_class(0xFFFFFFFFu), 3); /* TV_U8_BAD */
}

static void clusters_follow_each_grapheme_rule(void **st)
{
    (void)st;
    static const struct {
        const char *s;
        size_t lens[8];
    } c[] = {
        {"\r\n", {2, 0}},          /* GB3 */
        {"\r\r", {1, 1, 0}},       /* CR then not LF */
        {"\ra", {1, 1, 0}},        /* GB4 */
        {"\n\n", {1, 1, 0}},       /* LF is a control */
        {"a\r", {1, 1, 0}},        /* GB5 */
        {"a\x01", {1, 1, 0}},      /* a control */
        {"\x01" ACUTE, {1, 2, 0}}, /* no Extend after a control */
        {"\xff"
         "a",
         {1, 1, 0}},                          /* a bad byte is a control */
        {L L, {6, 0}},                        /* GB6 */
        {L V, {6, 0}},                        /* GB6 */
        {L LV, {6, 0}},                       /* GB6 */
        {L LVT, {6, 0}},                      /* GB6 */
        {L T, {3, 3, 0}},                     /* not GB6 */
        {L "a", {3, 1, 0}},                   /* not GB6 */
        {LV V, {6, 0}},                       /* GB7 */
        {LV T, {6, 0}},                       /* GB7 */
        {V V, {6, 0}},                        /* GB7 */
        {V T, {6, 0}},                        /* GB7 */
        {V L, {3, 3, 0}},                     /* not GB7 */
        {LV L, {3, 3, 0}},                    /* not GB7 */
        {LVT T, {6, 0}},                      /* GB8 */
        {T T, {6, 0}},                        /* GB8 */
        {LVT V, {3, 3, 0}},                   /* not GB8 */
        {T V, {3, 3, 0}},                     /* not GB8 */
        {"a" ACUTE ACUTE, {5, 0}},            /* GB9 */
        {"a" ZWJ, {4, 0}},                    /* GB9 */
        {"\xe0\xa4\x95\xe0\xa4\x83", {6, 0}}, /* GB9a: SpacingMark */
        {"\xd8\x80"
         "a",
         {3, 0}},                         /* GB9b: Prepend */
        {"ab", {1, 1, 0}},                /* GB999 */
        {MAN ZWJ WOMAN, {11, 0}},         /* GB11 */
        {MAN ACUTE ZWJ WOMAN, {13, 0}},   /* GB11, Extend between */
        {MAN ACUTE ACUTE, {8, 0}},        /* ExtPict Extend* */
        {"a" ZWJ WOMAN, {4, 4, 0}},       /* not GB11 */
        {MAN ZWJ ZWJ WOMAN, {10, 4, 0}},  /* not GB11 */
        {MAN ZWJ "a", {7, 1, 0}},         /* not GB11 */
        {MAN WOMAN, {4, 4, 0}},           /* no ZWJ */
        {RI_U RI_S, {8, 0}},              /* GB12 */
        {RI_U RI_S RI_U, {8, 4, 0}},      /* GB13 */
        {RI_U RI_S RI_U RI_S, {8, 8, 0}}, /* GB13 */
        {"a" RI_U, {1, 4, 0}},
        {RI_U "a", {4, 1, 0}},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        clusters_are(c[i].s, c[i].lens);
}

/* --- a charsmap built unit by unit ------------------------------------- */

#define NU 256
#define LEAF (1u << 8)
static uint32_t unit[NU];
/* b, xyz, a split U+00E9, the empty string */
static const char norm[] = "b\0xyz\0\xc3\xa9\0";
#define NORM_LEN (sizeof norm) /* with the final NUL: "" at 9 */

static uint32_t node(unsigned label, int leaf, uint32_t offset)
{
    return label | (leaf ? LEAF : 0) | offset << 10;
}

/* root base 1: a child c sits at 1 ^ c */
static size_t build_map(unsigned char *out)
{
    memset(unit, 0, sizeof unit);
    unit[0] = node(0, 0, 1);
    unit[0x60] = node('a', 1, 1), unit[0x61] = 0;    /* a -> b */
    unit[0x62] = node('c', 0, 2);                    /* c: base 96 */
    unit[0x04] = node('d', 1, 1), unit[0x05] = 2;    /* cd -> xyz */
    unit[0x64] = node('e', 1, 1), unit[0x65] = 2;    /* e -> xyz */
    unit[0x67] = node('f', 1, 1), unit[0x66] = 1000; /* past the end */
    unit[0x69] = node('h', 1, 1), unit[0x68] = 7;    /* mid-character */
    unit[0x6a] = node('k', 1, 0x100);                /* leaf past units */
    unit[0x6c] = node('m', 1, 1), unit[0x6d] = 9;    /* m -> "" */
    unit[0x6f] = node('n', 0, 0x100);                /* children past units */
    size_t n = 0;
    uint32_t sz = NU * 4;
    for (int b = 0; b < 4; b++)
        out[n++] = (unsigned char)(sz >> 8 * b);
    for (size_t i = 0; i < NU; i++)
        for (int b = 0; b < 4; b++)
            out[n++] = (unsigned char)(unit[i] >> 8 * b);
    memcpy(out + n, norm, NORM_LEN);
    return n + NORM_LEN;
}

static tv_precompiled *new_map(void)
{
    static unsigned char bytes[4 + 4 * NU + NORM_LEN];
    size_t n = build_map(bytes);
    tv_precompiled *p = NULL;
    assert_int_equal(tv_precompiled_new(bytes, n, &p), 0);
    assert_non_null(p);
    return p;
}

static void lookup_is(const tv_precompiled *p, const char *s, size_t n,
                      const char *want)
{
    size_t len = 12345;
    const unsigned char *r = tv_precompiled_lookup(p, (const unsigned char *)s,
                                                   n, &len);
    if (!want) {
        assert_null(r);
        return;
    }
    assert_non_null(r);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(r, want, len);
}

static void lookup_takes_the_shortest_prefix_in_the_trie(void **st)
{
    (void)st;
    tv_precompiled *p = new_map();
    lookup_is(p, "a", 1, "b");
    lookup_is(p, "abc", 3, "b");
    lookup_is(p, "cd", 2, "xyz");
    lookup_is(p, "c", 1, NULL);  /* no leaf on c */
    lookup_is(p, "cx", 2, NULL); /* no child x */
    lookup_is(p, "e", 1, "xyz");
    lookup_is(p, "m", 1, "");
    lookup_is(p, "x", 1, NULL);   /* label mismatch */
    lookup_is(p, "\0a", 2, NULL); /* a NUL ends the key */
    lookup_is(p, "", 0, NULL);
    lookup_is(p, "f", 1, NULL);  /* string past the end */
    lookup_is(p, "h", 1, NULL);  /* string not UTF-8 there */
    lookup_is(p, "k", 1, NULL);  /* value unit past the units */
    lookup_is(p, "nz", 2, NULL); /* child past the units */
    tv_precompiled_free(p);
    tv_precompiled_free(NULL);
}

static void changes_are(const tv_precompiled *p, const char *s, int rc,
                        const char *cps, const long *ch)
{
    tv_pc_change *v = (tv_pc_change *)1;
    size_t n = 99;
    assert_int_equal(tv_precompiled_changes(p, (const unsigned char *)s,
                                            strlen(s), &v, &n),
                     rc);
    if (rc == 0) {
        assert_null(v);
        assert_int_equal(n, 0);
        return;
    }
    assert_non_null(v);
    assert_int_equal(n, strlen(cps));
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(v[i].cp, (unsigned char)cps[i]);
        assert_int_equal(v[i].change, ch[i]);
    }
    free(v);
}

static void changes_replace_clusters_then_characters(void **st)
{
    (void)st;
    tv_precompiled *p = new_map();
    changes_are(p, "xyz", 0, NULL, NULL); /* no rule: the text stays */
    changes_are(p, "", 0, NULL, NULL);
    changes_are(p, "xa", 1, "xb", (long[]){0, 0});
    changes_are(p, "e", 1, "xyz", (long[]){0, 1, 1}); /* grows */
    changes_are(p, "ex", 1, "xyzx", (long[]){0, 1, 1, 0});
    changes_are(p, "m", 1, "", NULL); /* to nothing: no entry */
    changes_are(p, "xm", 1, "x", (long[]){-1});
    /* the cluster a U+0301 starts with a: the whole cluster is b */
    changes_are(p, "a" ACUTE "x", 1, "bx", (long[]){-1, 0});
    /* a cluster of 6 bytes and more goes character by character */
    {
        tv_pc_change *v = NULL;
        size_t n = 0;
        const char *s = "a" ACUTE ACUTE ACUTE;
        assert_int_equal(tv_precompiled_changes(p, (const unsigned char *)s,
                                                strlen(s), &v, &n),
                         1);
        assert_int_equal(n, 4);
        assert_int_equal(v[0].cp, 'b');
        for (size_t i = 1; i < 4; i++) {
            assert_int_equal(v[i].cp, 0x301);
            assert_int_equal(v[i].change, 0);
        }
        free(v);
    }
    changes_are(p, "x" ACUTE ACUTE ACUTE, 0, NULL, NULL);
    tv_precompiled_free(p);
}

static void a_charsmap_must_frame_its_parts(void **st)
{
    (void)st;
    tv_precompiled *p = (tv_precompiled *)1;
    static const unsigned char big[8] = {0x90, 1, 0, 0, 0, 0, 0, 0};
    static const unsigned char bad[5] = {0, 0, 0, 0, 0xff};
    static const unsigned char empty[4] = {0, 0, 0, 0};
    assert_int_equal(tv_precompiled_new(big, 3, &p), TOKVEC_E_TOKENIZER);
    assert_null(p);
    assert_int_equal(tv_precompiled_new(big, 8, &p), TOKVEC_E_TOKENIZER);
    assert_int_equal(tv_precompiled_new(bad, 5, &p), TOKVEC_E_TOKENIZER);
    assert_int_equal(tv_precompiled_new(empty, 4, &p), 0);
    lookup_is(p, "a", 1, NULL); /* an empty trie finds nothing */
    tv_precompiled_free(p);
}

/* --- base64 ------------------------------------------------------------- */

static char *b64(const unsigned char *s, size_t n)
{
    static const char a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc(n / 3 * 4 + 5), *q = o;
    assert_non_null(o);
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        for (int k = 3; k >= 0; k--)
            *q++ = a[w >> 6 * k & 63];
    }
    if (n - i == 1) {
        *q++ = a[s[i] >> 2], *q++ = a[(s[i] & 3) << 4];
        *q++ = '=', *q++ = '=';
    } else if (n - i == 2) {
        uint32_t w = (uint32_t)s[i] << 8 | s[i + 1];
        *q++ = a[w >> 10], *q++ = a[w >> 4 & 63], *q++ = a[(w & 15) << 2];
        *q++ = '=';
    }
    *q = 0;
    return o;
}

static int from_json(const char *charsmap, const char *type,
                     tv_precompiled **p, char *err, size_t errlen)
{
    json_t *j = json_object();
    if (type)
        json_object_set_new(j, "type", json_string(type));
    if (charsmap)
        json_object_set_new(j, "precompiled_charsmap", json_string(charsmap));
    int rc = tv_precompiled_from_json(j, p, err, errlen);
    json_decref(j);
    return rc;
}

static void the_charsmap_is_canonical_base64(void **st)
{
    (void)st;
    static unsigned char bytes[4 + 4 * NU + NORM_LEN + 2];
    size_t n = build_map(bytes);
    tv_precompiled *p = NULL;
    char err[128];
    /* the map as it is, and with one and two bytes more of norm */
    for (size_t extra = 0; extra < 3; extra++) {
        bytes[n] = 'q', bytes[n + 1] = 0;
        char *s = b64(bytes, n + extra);
        assert_int_equal(from_json(s, "Precompiled", &p, err, sizeof err), 0);
        lookup_is(p, "e", 1, "xyz");
        tv_precompiled_free(p);
        free(s);
    }
    static const struct {
        const char *s, *says;
    } c[] = {
        {"AAA", "not base64"},      /* not a multiple of 4 */
        {"A===", "not base64"},     /* padding too early */
        {"AA=A", "not base64"},     /* a character after padding */
        {"AAAA====", "not base64"}, /* padding not in the last group */
        {"AB==", "not base64"},     /* stray bits before == */
        {"AAB=", "not base64"},     /* stray bits before = */
        {"AA*A", "not base64"},     /* not in the alphabet */
        {"AA{A", "not base64"},       {"=AAA", "not base64"},
        {"AA+/", "cannot parse"},     /* the last two of the alphabet */
        {"AA==", "cannot parse"},     /* one byte: too short */
        {"AAA=", "cannot parse"},     /* two bytes */
        {"kAEAAA==", "cannot parse"}, /* a trie larger than the bytes */
        {"", "cannot parse"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        err[0] = 0;
        p = (tv_precompiled *)1;
        assert_int_equal(from_json(c[i].s, "Precompiled", &p, err, sizeof err),
                         TOKVEC_E_TOKENIZER);
        assert_null(p);
        if (!strstr(err, c[i].says))
            fprintf(stderr, "'%s': %s\n", c[i].s, err);
        assert_non_null(strstr(err, c[i].says));
        assert_int_equal(from_json(c[i].s, "Precompiled", &p, NULL, 0),
                         TOKVEC_E_TOKENIZER);
        assert_int_equal(from_json(c[i].s, "Precompiled", &p, err, 0),
                         TOKVEC_E_TOKENIZER);
    }
    assert_int_equal(from_json("AAAA", "NFC", &p, err, sizeof err),
                     TOKVEC_E_TOKENIZER);
    assert_string_equal(err, "Precompiled: type is not \"Precompiled\"");
    assert_int_equal(from_json("AAAA", NULL, &p, err, sizeof err),
                     TOKVEC_E_TOKENIZER);
    assert_string_equal(err, "Precompiled: type is not \"Precompiled\"");
    json_t *j = json_pack("{s:s, s:i}", "type", "Precompiled",
                          "precompiled_charsmap", 7);
    assert_int_equal(tv_precompiled_from_json(j, &p, err, sizeof err),
                     TOKVEC_E_TOKENIZER);
    assert_string_equal(err, "Precompiled.precompiled_charsmap: not a string");
    json_decref(j);
    assert_int_equal(from_json(NULL, "Precompiled", &p, NULL, 0),
                     TOKVEC_E_TOKENIZER);
    assert_int_equal(from_json(NULL, "Precompiled", &p, err, 0),
                     TOKVEC_E_TOKENIZER);
}

static void every_failing_allocation_is_no_memory(void **st)
{
    (void)st;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    static unsigned char bytes[4 + 4 * NU + NORM_LEN];
    size_t n = build_map(bytes);
    char *s = b64(bytes, n);
    json_t *j = json_pack("{s:s, s:s}", "type", "Precompiled",
                          "precompiled_charsmap", s);
    assert_non_null(j);
    /* x (kept: entry 1, the first growth) then 33 e (each three entries:
     * entry 65, the second growth, is the first of an e's) */
    char text[64] = "x";
    for (int k = 0; k < 33; k++)
        strcat(text, "e");
    int failures = 0, rc = -1;
    for (long nth = 1; nth < 100 && rc; nth++) {
        tv_precompiled *p = NULL;
        fi_arm(FI_ALLOC, nth, ENOMEM);
        rc = tv_precompiled_from_json(j, &p, NULL, 0);
        fi_reset();
        tv_precompiled_free(p);
        if (rc) {
            assert_int_equal(rc, -ENOMEM);
            failures++;
        }
    }
    assert_int_equal(rc, 0);
    assert_true(failures >= 4);
    tv_precompiled *p = NULL;
    assert_int_equal(tv_precompiled_from_json(j, &p, NULL, 0), 0);
    failures = 0, rc = -1;
    for (long nth = 1; nth < 100 && rc != 1; nth++) {
        tv_pc_change *v = NULL;
        size_t nv = 0;
        fi_arm(FI_ALLOC, nth, ENOMEM);
        rc = tv_precompiled_changes(p, (const unsigned char *)text,
                                    strlen(text), &v, &nv);
        fi_reset();
        if (rc == 1)
            assert_int_equal(nv, 100);
        else {
            assert_int_equal(rc, -ENOMEM);
            assert_null(v);
            failures++;
        }
        free(v);
    }
    assert_int_equal(rc, 1);
    assert_true(failures >= 2); /* the list grows twice (it is the answer) */
    tv_precompiled_free(p);
    json_decref(j);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_point_has_the_class_of_its_ucd_range),
        cmocka_unit_test(clusters_follow_each_grapheme_rule),
        cmocka_unit_test(lookup_takes_the_shortest_prefix_in_the_trie),
        cmocka_unit_test(changes_replace_clusters_then_characters),
        cmocka_unit_test(a_charsmap_must_frame_its_parts),
        cmocka_unit_test(the_charsmap_is_canonical_base64),
        cmocka_unit_test(every_failing_allocation_is_no_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
