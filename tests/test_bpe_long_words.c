/* test_bpe_long_words.c -- core/tokenizer/tok_bpe.c on byte-level BPE
 * words long enough for its heap and bucket paths (over 64 bytes, up to a
 * few thousand), checked against a plain reference written here (merge
 * the lowest-ranked listed pair, leftmost first, until none applies:
 * Hugging Face's BPE rule), and one tokenizer state shared by two
 * tokenizers in turn (the piece cache belongs to one tokenizer: the second
 * must not get the first one's answers). Single-threaded.
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
#include "tokvec_tokenizer.h"

/* merges over the letters a..d; merged tokens get ids 256 + k */
static const char *const MERGES[][2] = {
    {"a", "b"},  {"c", "d"},  {"b", "c"},   {"d", "a"},   {"ab", "c"},
    {"cd", "a"}, {"a", "a"},  {"bc", "d"},  {"ab", "cd"}, {"da", "b"},
    {"b", "b"},  {"aa", "b"}, {"bcd", "a"}, {"c", "c"},   {"d", "d"},
};
#define NM (sizeof MERGES / sizeof MERGES[0])

static tokvec_tokenizer *open_bpe(size_t nmerges)
{
    static char buf[65536];
    size_t n = 0;
    n += (size_t)sprintf(buf + n, "{\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (int b = 0; b < 256; b++) {
        char c[4];
        size_t cl = tf_byte_char(b, c);
        buf[n++] = '"';
        memcpy(buf + n, c, cl), n += cl;
        n += (size_t)sprintf(buf + n, "\":%d,", b);
    }
    for (size_t k = 0; k < nmerges; k++)
        n += (size_t)sprintf(buf + n, "\"%s%s\":%zu,", MERGES[k][0],
                             MERGES[k][1], 256 + k);
    /* one token no merge builds: the listed merges rule */
    n += (size_t)sprintf(buf + n, "\"zzz\":%zu},\"merges\":[", 256 + nmerges);
    for (size_t k = 0; k < nmerges; k++)
        n += (size_t)sprintf(buf + n, "%s\"%s %s\"", k ? "," : "",
                             MERGES[k][0], MERGES[k][1]);
    n += (size_t)sprintf(buf + n,
                         "]},\"pre_tokenizer\":{\"type\":\"ByteLevel\","
                         "\"add_prefix_space\":false}}");
    char name[32];
    snprintf(name, sizeof name, "t%zu.json", nmerges);
    return tf_open_ok(tf_put(tu_dir, name, buf, n));
}

/* The reference: symbols as strings, merged until no listed pair is
 * left; ids: a letter its byte, a merged token 256 + its merge. */
static size_t reference(const char *w, size_t nmerges, int32_t *ids)
{
    size_t n = strlen(w);
    char(*sym)[64] = calloc(n, sizeof *sym);
    assert_non_null(sym);
    for (size_t i = 0; i < n; i++)
        sym[i][0] = w[i];
    for (;;) {
        size_t best = SIZE_MAX, at = 0;
        for (size_t i = 0; i + 1 < n; i++)
            for (size_t k = 0; k < nmerges && k < best; k++)
                if (!strcmp(sym[i], MERGES[k][0]) &&
                    !strcmp(sym[i + 1], MERGES[k][1])) {
                    best = k, at = i;
                    break;
                }
        if (best == SIZE_MAX)
            break;
        char m[64];
        snprintf(m, sizeof m, "%s%s", sym[at], sym[at + 1]);
        memcpy(sym[at], m, sizeof m);
        memmove(sym + at + 1, sym + at + 2, (n - at - 2) * sizeof *sym);
        n--;
    }
    for (size_t i = 0; i < n; i++) {
        ids[i] = (unsigned char)sym[i][0];
        for (size_t k = 0; sym[i][1] && k < nmerges; k++) {
            char m[64];
            snprintf(m, sizeof m, "%s%s", MERGES[k][0], MERGES[k][1]);
            if (!strcmp(m, sym[i]))
                ids[i] = (int32_t)(256 + k);
        }
    }
    free(sym);
    return n;
}

static void same_ids(const tokvec_tokenizer *t, tokvec_tok_state *st,
                     const char *w, size_t nmerges)
{
    size_t n = strlen(w);
    int32_t *want = calloc(n + 1, sizeof *want);
    assert_non_null(want);
    size_t nw = reference(w, nmerges, want);
    tokvec_tok_ids ids = {0};
    assert_int_equal(
        tokvec_tokenizer_encode(t, st, w, n, TOKVEC_TOK_OFFSETS, &ids), 0);
    if (ids.n != nw)
        fail_msg("%zu bytes: %zu ids, want %zu", n, ids.n, nw);
    for (size_t i = 0; i < nw; i++)
        if (ids.ids[i] != want[i])
            fail_msg("%zu bytes: id %zu is %d, want %d", n, i, ids.ids[i],
                     want[i]);
    tokvec_tok_ids_free(&ids);
    free(want);
}

static void long_words_merge_as_the_reference(void **s)
{
    (void)s;
    tokvec_tokenizer *t = open_bpe(NM);
    tokvec_tok_state *st = tokvec_tok_state_new();
    assert_non_null(st);
    static const size_t len[] = {3, 20, 40, 41, 65, 100, 300, 1500, 3000};
    uint32_t x = 12345;
    char *w = malloc(3001);
    assert_non_null(w);
    for (int round = 0; round < 3; round++)
        for (size_t k = 0; k < sizeof len / sizeof len[0]; k++) {
            for (size_t i = 0; i < len[k]; i++) {
                x = x * 1103515245u + 12345u;
                /* round 2: long runs of one letter */
                w[i] = round == 2 ? (char)('a' + (i / 50) % 4)
                                  : (char)('a' + (x >> 16) % (round ? 2 : 4));
            }
            w[len[k]] = 0;
            same_ids(t, st, w, NM);
            same_ids(t, st, w, NM); /* again: from the cache when short */
        }
    free(w);
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(t);
}

static void a_state_shared_by_two_tokenizers_keeps_them_apart(void **s)
{
    (void)s;
    tokvec_tokenizer *a = open_bpe(NM), *b = open_bpe(3);
    tokvec_tok_state *st = tokvec_tok_state_new();
    assert_non_null(st);
    static const char *const words[] = {"abcd", "abcdab", "dabbcc"};
    for (int k = 0; k < 3; k++) {
        same_ids(a, st, words[k], NM);
        same_ids(b, st, words[k], 3);
        same_ids(a, st, words[k], NM);
    }
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(a);
    tokvec_tokenizer_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(long_words_merge_as_the_reference),
        cmocka_unit_test(a_state_shared_by_two_tokenizers_keeps_them_apart),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
