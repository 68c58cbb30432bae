/* test_wordpiece_edges.c -- WordPiece encoding (core/tokenizer/wordpiece.c)
 * at the edges of its lookups and of its input: vocabulary tokens longer
 * than the inline key (19 bytes) and than 64 bytes, found whole and as
 * continuations; words past max_input_chars_per_word; and text that is not
 * valid UTF-8, where each byte that starts no valid sequence is one U+FFFD
 * of one byte (tok_utf8.h's rule for the pipeline stages: strict, no
 * overlong forms, surrogates or code points past U+10FFFF), so that a
 * vocabulary holding U+FFFD spells them. Expected ids and spans
 * are worked out by hand from the vocabulary below. Single-threaded.
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
#include "tokvec_tokenizer.h"

/* ids: [UNK] 0, U+FFFD 1, ##U+FFFD 2, a 3, b 4, ##a 5, the alphabet 6,
 * ##0123456789abcdefghijklmnop (26 after ##) 7, x * 70 8, ##x * 66 9 */
static char json[4096];
static tokvec_tokenizer *tok;
static tokvec_tok_state *st;

static int setup(void **state)
{
    if (tu_setup_dir(state) < 0)
        return -1;
    char x70[71], x66[67];
    memset(x70, 'x', 70);
    x70[70] = '\0';
    memset(x66, 'x', 66);
    x66[66] = '\0';
    snprintf(json, sizeof json,
             "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
             "\"max_input_chars_per_word\":80,\"vocab\":{\"[UNK]\":0,"
             "\"\\ufffd\":1,\"##\\ufffd\":2,\"a\":3,\"b\":4,\"##a\":5,"
             "\"abcdefghijklmnopqrstuvwxyz\":6,"
             "\"##0123456789abcdefghijklmnop\":7,\"%s\":8,\"##%s\":9}},"
             "\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"}}",
             x70, x66);
    char p[700];
    snprintf(p, sizeof p, "%s/tokenizer.json", tu_dir);
    FILE *f = fopen(p, "wb");
    if (!f)
        return -1;
    fputs(json, f);
    fclose(f);
    char err[512] = "";
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    if (tokvec_tokenizer_open(p, &o, &tok) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    st = tokvec_tok_state_new();
    return st ? 0 : -1;
}

static int teardown(void **state)
{
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(tok);
    return tu_teardown_dir(state);
}

/* Encodes n bytes of s; want: triples id, start, stop. */
static void expect(const char *s, size_t n, const int32_t *want, size_t nw)
{
    tokvec_tok_ids ids = {0};
    assert_int_equal(
        tokvec_tokenizer_encode(tok, st, s, n, TOKVEC_TOK_OFFSETS, &ids), 0);
    if (ids.n != nw)
        fail_msg("%zu tokens, want %zu (first %d)", ids.n, nw,
                 ids.n ? ids.ids[0] : -1);
    for (size_t k = 0; k < nw; k++)
        if (ids.ids[k] != want[3 * k] ||
            ids.offsets[k] != (size_t)want[3 * k + 1] ||
            ids.stops[k] != (size_t)want[3 * k + 2])
            fail_msg("token %zu is %d %zu..%zu, want %d %d..%d", k, ids.ids[k],
                     ids.offsets[k], ids.stops[k], want[3 * k],
                     want[3 * k + 1], want[3 * k + 2]);
    tokvec_tok_ids_free(&ids);
}

#define S(lit) lit, sizeof lit - 1

static void long_tokens_are_found_whole_and_continued(void **s)
{
    (void)s;
    char w[200];
    static const int32_t alpha[] = {6, 0, 26};
    expect(S("abcdefghijklmnopqrstuvwxyz"), alpha, 1);
    /* the alphabet then the 26-byte continuation */
    snprintf(w, sizeof w, "%s",
             "abcdefghijklmnopqrstuvwxyz"
             "0123456789abcdefghijklmnop");
    static const int32_t two[] = {6, 0, 26, 7, 26, 52};
    expect(w, strlen(w), two, 2);
    /* 70 x: one token; 70 + 66 x is past 80 characters: [UNK] */
    memset(w, 'x', 136);
    static const int32_t x70[] = {8, 0, 70};
    expect(w, 70, x70, 1);
    static const int32_t x136[] = {0, 0, 136};
    expect(w, 136, x136, 1);
    /* 70 + 1 x: no "##x", so the word is [UNK] */
    static const int32_t x71[] = {0, 0, 71};
    expect(w, 71, x71, 1);
    /* a word of 25 letters of the alphabet: the greedy longest match
     * finds no token, then a, then no ##b: [UNK] */
    static const int32_t ab[] = {0, 0, 25};
    expect(S("abcdefghijklmnopqrstuvwxy"), ab, 1);
}

static void ill_formed_bytes_are_one_replacement_character_each(void **s)
{
    (void)s;
    /* U+0800, well formed, spelled by no token */
    static const int32_t u800[] = {0, 0, 3};
    expect(S("\xe0\xa0\x80"), u800, 1);
    /* E0 80: the lead's second byte is below A0: two subparts */
    static const int32_t e0[] = {1, 0, 1, 2, 1, 2};
    expect(S("\xe0\x80"), e0, 2);
    /* ED A0 80: a surrogate: three */
    static const int32_t ed[] = {1, 0, 1, 2, 1, 2, 2, 2, 3};
    expect(S("\xed\xa0\x80"), ed, 3);
    /* F0 90 80 at the end: a truncated sequence, each byte one */
    static const int32_t f0[] = {1, 0, 1, 2, 1, 2, 2, 2, 3};
    expect(S("\xf0\x90\x80"), f0, 3);
    /* F0 80: below 90: two */
    static const int32_t f080[] = {1, 0, 1, 2, 1, 2};
    expect(S("\xf0\x80"), f080, 2);
    /* F4 90 80 80: past U+10FFFF: four */
    static const int32_t f4[] = {1, 0, 1, 2, 1, 2, 2, 2, 3, 2, 3, 4};
    expect(S("\xf4\x90\x80\x80"), f4, 4);
    /* C0 AF, F5, FF: no lead at all: one each */
    static const int32_t c0[] = {1, 0, 1, 2, 1, 2, 2, 2, 3, 2, 3, 4};
    expect(S("\xc0\xaf\xf5\xff"), c0, 4);
    /* E2 82 then a: two, then ##a */
    static const int32_t e2[] = {1, 0, 1, 2, 1, 2, 5, 2, 3};
    expect(S("\xe2\x82\x61"), e2, 3);
    /* C3 A9 (U+00E9) well formed between two bad bytes: [UNK] for the
     * word, as no token spells e-acute */
    static const int32_t mixed[] = {0, 0, 4};
    expect(S("\x80\xc3\xa9\x80"), mixed, 1);
    /* in words: b, then a replacement and ##a */
    static const int32_t words[] = {4, 0, 1, 1, 2, 3, 5, 3, 4};
    expect(S("b \x80\x61"), words, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(long_tokens_are_found_whole_and_continued),
        cmocka_unit_test(ill_formed_bytes_are_one_replacement_character_each),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
