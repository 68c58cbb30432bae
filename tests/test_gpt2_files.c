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
#include "tok_fixture.h"
#include "tokvec_error.h"
#include "tokvec_tokenizer.h"

/* The 256 bytes (ids 0..255 by byte value: not GPT-2's order) and
 * extra members, as an object's members. */
static char *byte_members(const char *extra)
{
    char *buf = malloc(16384 + strlen(extra));
    assert_non_null(buf);
    size_t n = 0;
    for (int b = 0; b < 256; b++) {
        char c[4];
        size_t cl = tf_byte_char(b, c);
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
    tf_put(tu_dir, "encoder.json", j, n + 2);
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

static void merges_files_of_every_shape(void **s)
{
    (void)s;
    encoder(",\"ab\":256,\"abc\":257");
    /* no final newline */
    tf_put(tu_dir, "vocab.bpe", "#version: 0.2\na b\nab c", 22);
    tokvec_tokenizer *t = open_pair(0, NULL);
    tf_ids_are(t, "abc", 0, (int32_t[]){257}, 1);
    tokvec_tokenizer_close(t);
    /* empty: bytes only */
    tf_put(tu_dir, "vocab.bpe", "", 0);
    t = open_pair(0, NULL);
    tf_ids_are(t, "abc", 0, (int32_t[]){'a', 'b', 'c'}, 3);
    tokvec_tokenizer_close(t);
    /* only the version line */
    tf_put(tu_dir, "vocab.bpe", "#version: 0.2\n", 14);
    t = open_pair(0, NULL);
    tf_ids_are(t, "ab", 0, (int32_t[]){'a', 'b'}, 2);
    tokvec_tokenizer_close(t);
    /* "#version" on line 2 is a merge of two tokens not in the vocab */
    tf_put(tu_dir, "vocab.bpe", "a b\n#version: 0.2\n", 18);
    open_pair(TOKVEC_E_TOKENIZER, "merge 2: the left token");
    /* a NUL byte */
    tf_put(tu_dir, "vocab.bpe", "a b\nab\0c\n", 9);
    open_pair(TOKVEC_E_TOKENIZER, "line 2: NUL byte");
    /* an empty line before the end */
    tf_put(tu_dir, "vocab.bpe", "a b\n\nab c\n", 10);
    open_pair(TOKVEC_E_TOKENIZER,
              "line 2: not two tokens separated by one space");
    /* a key of two bytes past the alphabet (U+0201) */
    encoder(",\"\\u0201\":256");
    tf_put(tu_dir, "vocab.bpe", "", 0);
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
    const char *path = tf_put(tu_dir, "tokenizer.json", j, (size_t)n);
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
