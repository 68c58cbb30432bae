/* test_gpt2_files.c -- core/tokenizer/tok_load.c's GPT-2 file pair
 * (encoder.json + vocab.bpe), what test_tokenizer.c leaves: a merges file
 * without a final newline, an empty one (no merges: bytes only), a
 * "#version" line anywhere but first (then a merge like any other line),
 * a NUL byte in a line, a vocabulary key of two bytes past GPT-2's
 * alphabet (U+0201), and in tokenizer.json a special added token longer
 * than a token may be. Files are written into a temporary directory.
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
#include "tokvec_error.h"
#include "tokvec_tokenizer.h"

static char path[600];

static const char *write_file(const char *name, const void *data, size_t n)
{
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n)
        assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    return path;
}

/* GPT-2's bytes_to_unicode as a JSON string's text. */
static size_t alpha(int b, char *o)
{
    int pr = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    unsigned cp = (unsigned)b;
    if (!pr) {
        int n = 0;
        for (int k = 0; k < b; k++)
            n += !((k >= 33 && k <= 126) || (k >= 161 && k <= 172) ||
                   k >= 174);
        cp = 256u + (unsigned)n;
    }
    size_t w = 0;
    if (cp == '"' || cp == '\\')
        o[w++] = '\\';
    if (cp < 0x80) {
        o[w++] = (char)cp;
    } else {
        o[w++] = (char)(0xC0 | cp >> 6);
        o[w++] = (char)(0x80 | (cp & 0x3F));
    }
    return w;
}

/* The 256 bytes (ids 0..255 by byte value: not GPT-2's order) and
 * extra members, as an object's members. */
static char *byte_members(const char *extra)
{
    char *buf = malloc(16384 + strlen(extra));
    assert_non_null(buf);
    size_t n = 0;
    for (int b = 0; b < 256; b++) {
        char c[4];
        size_t cl = alpha(b, c);
        n += (size_t)sprintf(buf + n, "%s\"", b ? "," : "");
        memcpy(buf + n, c, cl), n += cl;
        n += (size_t)sprintf(buf + n, "\":%d", b);
    }
    strcpy(buf + n, extra);
    return buf;
}

static void encoder(const char *extra)
{
    char *m = byte_members(extra);
    size_t n = strlen(m);
    char *j = malloc(n + 3);
    assert_non_null(j);
    j[0] = '{';
    memcpy(j + 1, m, n);
    j[n + 1] = '}';
    write_file("encoder.json", j, n + 2);
    free(j);
    free(m);
}

static tokvec_tokenizer *open_pair(int code, const char *says)
{
    char p[600], err[1024] = "";
    snprintf(p, sizeof p, "%s/encoder.json", tu_dir);
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = (tokvec_tokenizer *)1;
    int rc = tokvec_tokenizer_open(p, &o, &t);
    if (rc != code || (says && !strstr(err, says)))
        fail_msg("got %d '%s', want %d '%s'", rc, err, code, says ? says : "");
    if (code)
        assert_null(t);
    return code ? NULL : t;
}

static void ids_are(const tokvec_tokenizer *t, const char *s,
                    const int32_t *want, size_t n)
{
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    assert_non_null(st);
    assert_int_equal(tokvec_tokenizer_encode(t, st, s, strlen(s), 0, &ids), 0);
    assert_int_equal(ids.n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ids.ids[i], want[i]);
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
}

static void merges_files_of_every_shape(void **s)
{
    (void)s;
    encoder(",\"ab\":256,\"abc\":257");
    /* no final newline */
    write_file("vocab.bpe", "#version: 0.2\na b\nab c", 22);
    tokvec_tokenizer *t = open_pair(0, NULL);
    ids_are(t, "abc", (int32_t[]){257}, 1);
    tokvec_tokenizer_close(t);
    /* empty: bytes only */
    write_file("vocab.bpe", "", 0);
    t = open_pair(0, NULL);
    ids_are(t, "abc", (int32_t[]){'a', 'b', 'c'}, 3);
    tokvec_tokenizer_close(t);
    /* only the version line */
    write_file("vocab.bpe", "#version: 0.2\n", 14);
    t = open_pair(0, NULL);
    ids_are(t, "ab", (int32_t[]){'a', 'b'}, 2);
    tokvec_tokenizer_close(t);
    /* "#version" on line 2 is a merge of two tokens not in the vocab */
    write_file("vocab.bpe", "a b\n#version: 0.2\n", 18);
    open_pair(TOKVEC_E_TOKENIZER, "merge 2: the left token");
    /* a NUL byte */
    write_file("vocab.bpe", "a b\nab\0c\n", 9);
    open_pair(TOKVEC_E_TOKENIZER, "line 2: NUL byte");
    /* an empty line before the end */
    write_file("vocab.bpe", "a b\n\nab c\n", 10);
    open_pair(TOKVEC_E_TOKENIZER,
              "line 2: not two tokens separated by one space");
    /* a key of two bytes past the alphabet (U+0201) */
    encoder(",\"\\u0201\":256");
    write_file("vocab.bpe", "", 0);
    open_pair(TOKVEC_E_TOKENIZER, "not in GPT-2's byte alphabet");
}

static void a_special_token_longer_than_a_token_is_refused(void **s)
{
    (void)s;
    char *longtok = malloc(5001);
    assert_non_null(longtok);
    memset(longtok, 'x', 5000);
    longtok[5000] = 0;
    char *extra = malloc(5100);
    assert_non_null(extra);
    snprintf(extra, 5100, ",\"%s\":256", longtok);
    char *m = byte_members(extra);
    size_t cap = strlen(m) + 6000;
    char *j = malloc(cap);
    assert_non_null(j);
    int n = snprintf(j, cap,
                     "{\"model\":{\"type\":\"BPE\",\"vocab\":{%s},\"merges\":"
                     "[]},\"pre_tokenizer\":{\"type\":\"ByteLevel\","
                     "\"add_prefix_space\":false},\"added_tokens\":[{\"id\":"
                     "256,\"content\":\"%s\",\"special\":true}]}",
                     m, longtok);
    write_file("tokenizer.json", j, (size_t)n);
    char err[1024] = "";
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = (tokvec_tokenizer *)1;
    assert_int_equal(tokvec_tokenizer_open(path, &o, &t), TOKVEC_E_TOKENIZER);
    assert_null(t);
    assert_non_null(strstr(err, "empty, too long or not in GPT-2's byte"));
    free(j);
    free(m);
    free(extra);
    free(longtok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(merges_files_of_every_shape),
        cmocka_unit_test(a_special_token_longer_than_a_token_is_refused),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
