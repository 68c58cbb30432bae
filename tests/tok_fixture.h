/* tok_fixture.h -- setup that the tokenizer and model tests (tests/test_*.c)
 * share: a file written into a directory (tu_dir of testutil.h, or one the
 * test made), a one-tensor safetensors file, a tokenizer.json written and
 * opened, an open that must succeed, GPT-2's byte alphabet for writing
 * vocabularies, and comparing ids. Header-only, like testutil.h (tu_dir is
 * each program's own); include it after <cmocka.h>: a failure fails the
 * calling test (cmocka's assertions).
 *
 * What must hold: every helper either does what it says or fails the test
 * with the reason; the returned paths are one static buffer, good until
 * the next call.
 *
 * Threads: the main thread of a test program only (static buffers).
 */
#ifndef TV_TOK_FIXTURE_H
#define TV_TOK_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "tokvec_tokenizer.h"

/* --- files ------------------------------------------------------------ */

/* dir/name holding the n bytes at data: its path. */
static inline const char *tf_put(const char *dir, const char *name,
                                 const void *data, size_t n)
{
    static char path[640];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n)
        assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* dir/name holding the string s (without its NUL): its path. */
static inline const char *tf_put_str(const char *dir, const char *name,
                                     const char *s)
{
    return tf_put(dir, name, s, strlen(s));
}

/* dir/name: a safetensors file of one F32 [3, 2] tensor of zeros named
 * tensor. */
static inline void tf_put_table(const char *dir, const char *name,
                                const char *tensor)
{
    char hdr[256];
    int n = snprintf(hdr, sizeof hdr,
                     "{\"%s\":{\"dtype\":\"F32\",\"shape\":[3,2],"
                     "\"data_offsets\":[0,24]}}",
                     tensor);
    assert_true(n > 0 && (size_t)n < sizeof hdr);
    unsigned char buf[8 + 256 + 24] = {0};
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, hdr, (size_t)n);
    tf_put(dir, name, buf, 8 + (size_t)n + 24);
}

/* A new directory tu_dir/mN into dir (len bytes) holding
 * model.safetensors ("embeddings" [3, 2]: a Model2Vec table) and
 * tokenizer.json holding tok (NULL: none). */
static inline void tf_model_dir(char *dir, size_t len, const char *tok)
{
    static int serial;
    snprintf(dir, len, "%s/m%d", tu_dir, serial++);
    assert_int_equal(mkdir(dir, 0700), 0);
    tf_put_table(dir, "model.safetensors", "embeddings");
    if (tok)
        tf_put_str(dir, "tokenizer.json", tok);
}

/* --- tokenizers --------------------------------------------------------- */

/* tu_dir/tokenizer.json holding json, opened (*t as the open leaves it,
 * err its message): what tokvec_tokenizer_open returned. */
static inline int tf_open_json(const char *json, tokvec_tokenizer **t,
                               char *err, size_t errlen)
{
    const char *path = tf_put_str(tu_dir, "tokenizer.json", json);
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = errlen};
    return tokvec_tokenizer_open(path, &o, t);
}

/* json, written as tu_dir/tokenizer.json, refused with code, leaving no
 * tokenizer, with a message holding says. */
static inline void tf_json_refused(const char *json, int code,
                                   const char *says)
{
    char err[512] = "";
    tokvec_tokenizer *t = (tokvec_tokenizer *)1;
    assert_int_equal(tf_open_json(json, &t, err, sizeof err), code);
    assert_null(t);
    if (!strstr(err, says))
        fail_msg("'%s' lacks '%s'", err, says);
}

/* path opened; a refusal fails the test with its message. */
static inline tokvec_tokenizer *tf_open_ok(const char *path)
{
    char err[512] = "";
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = NULL;
    if (tokvec_tokenizer_open(path, &o, &t) < 0)
        fail_msg("%s: %s", path, err);
    return t;
}

/* GPT-2's bytes_to_unicode of byte b as UTF-8 into o (at most 3 bytes:
 * a '"' or '\' is escaped for a JSON string): how many were written. */
static inline size_t tf_byte_char(int b, char *o)
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

/* --- ids ---------------------------------------------------------------- */

/* The same ids and, where either has offsets, the same offsets. */
static inline int tf_same_ids(const tokvec_tok_ids *a, const tokvec_tok_ids *b)
{
    return a->n == b->n && !memcmp(a->ids, b->ids, a->n * sizeof *a->ids) &&
           (!a->offsets) == (!b->offsets) &&
           (!a->offsets ||
            !memcmp(a->offsets, b->offsets, a->n * sizeof *a->offsets));
}

/* t encodes s with flags (a fresh state) to exactly the n ids of want. */
static inline void tf_ids_are(const tokvec_tokenizer *t, const char *s,
                              unsigned flags, const int32_t *want, size_t n)
{
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    assert_non_null(st);
    assert_int_equal(tokvec_tokenizer_encode(t, st, s, strlen(s), flags, &ids),
                     0);
    assert_int_equal(ids.n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ids.ids[i], want[i]);
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
}

#endif
