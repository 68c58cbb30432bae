/* test_tokenizer_files.c -- the tokenizer module (core/tokenizer/) on the
 * edges of its two plain file formats and of its public calls: GPT-2's
 * vocabulary + merges pair (NUL bytes, a last line without its newline,
 * blank and "#version" lines, tokens outside GPT-2's alphabet or too long,
 * no merges, an explicit merges path), tiktoken's rank files (strict
 * base64: padding, non-canonical bits, every alphabet class; the pattern
 * taken from the file name), and the calls around them (a NULL path, no
 * options, special tokens by index, token bytes, the post-processor's
 * tokens with and without offsets, decoding without specials, the UTF-8
 * replacement rule). Files are written into a temporary directory; each
 * refusal's message is asserted exactly. Single-threaded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tok_fixture.h"
#include "tokvec_error.h"
#include "tokvec_tokenizer.h"

/* Opens p (pattern and merges path as given): want NULL expects success
 * (returned), else code and the message "<file>: want" exactly, file the
 * temporary directory's name (NULL: p). */
static tokvec_tokenizer *expect(const char *p, const char *pattern,
                                const char *merges, int code, const char *file,
                                const char *want)
{
    char err[900] = "", full[1400], at[700];
    snprintf(at, sizeof at, "%s", p);
    tokvec_tokenizer_opts o = {.pattern = pattern,
                               .merges_path = merges,
                               .errbuf = err,
                               .errlen = sizeof err};
    tokvec_tokenizer *t = (tokvec_tokenizer *)1;
    int rc = tokvec_tokenizer_open(at, &o, &t);
    if (!want) {
        if (rc)
            fail_msg("%s refused: %s", at, err);
        return t;
    }
    if (rc != code)
        fail_msg("%s: got %d (%s), want %d; message: %s", at, rc,
                 tokvec_errname(rc), code, err);
    assert_null(t);
    if (file)
        snprintf(full, sizeof full, "%s/%s: %s", tu_dir, file, want);
    else
        snprintf(full, sizeof full, "%s: %s", at, want);
    if (strcmp(err, full))
        fail_msg("message\n  '%s'\nwant\n  '%s'", err, full);
    return NULL;
}

static void encode(const tokvec_tokenizer *t, const char *s, unsigned flags,
                   tokvec_tok_ids *ids)
{
    tokvec_tok_state *st = tokvec_tok_state_new();
    assert_non_null(st);
    assert_int_equal(tokvec_tokenizer_encode(t, st, s, strlen(s), flags, ids),
                     0);
    tokvec_tok_state_free(st);
}

static void expect_ids(const tokvec_tokenizer *t, const char *s,
                       const int32_t *want, size_t n)
{
    tokvec_tok_ids ids = {0};
    encode(t, s, TOKVEC_TOK_SPECIAL, &ids);
    if (ids.n != n)
        fail_msg("'%s': %zu ids, want %zu", s, ids.n, n);
    for (size_t k = 0; k < n; k++)
        if (ids.ids[k] != want[k])
            fail_msg("'%s': id %zu is %d, want %d", s, k, ids.ids[k], want[k]);
    tokvec_tok_ids_free(&ids);
}

/* --- GPT-2's pair ------------------------------------------------------ */

/* encoder.json: GPT-2's alphabet of the 256 bytes (ids in tiktoken's byte
 * order) plus extra members. */
static const char *encoder_json(const char *extra)
{
    static char buf[16384];
    size_t n = 0;
    int id = 0;
    buf[n++] = '{';
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0, more = 0; b < 256; b++) {
            int pr = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) ||
                     b >= 174;
            unsigned cp = pr ? (unsigned)b : 256u + (unsigned)more;
            more += !pr;
            if (pr != !pass)
                continue;
            n += (size_t)sprintf(buf + n, "%s\"", n > 1 ? "," : "");
            if (cp == '"' || cp == '\\')
                n += (size_t)sprintf(buf + n, "\\%c", (char)cp);
            else if (cp < 0x80)
                buf[n++] = (char)cp;
            else
                n += (size_t)sprintf(buf + n, "\\u%04x", cp);
            n += (size_t)sprintf(buf + n, "\":%d", id++);
        }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s}", extra);
    return tf_put(tu_dir, "encoder.json", buf, n);
}

#define AB ",\"ab\":256,\"abc\":257"

static void gpt2_pair_edges(void **s)
{
    (void)s;
    char enc[700];
    snprintf(enc, sizeof enc, "%s", encoder_json(AB));
    /* a NUL byte in a line */
    tf_put(tu_dir, "vocab.bpe", "#version: 0.2\na b\nab\0 c\n", 24);
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, "vocab.bpe",
           "line 3: NUL byte");
    /* a line of one token */
    tf_put_str(tu_dir, "vocab.bpe", "a b\nabc\n");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, "vocab.bpe",
           "line 2: not two tokens separated by one space");
    /* "#version" after the first line is a merge like any other */
    tf_put_str(tu_dir, "vocab.bpe", "a b\n#version 2\n");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, "vocab.bpe",
           "merge 2: the left token is not in the vocabulary");
    /* a blank line in the middle is not two tokens */
    tf_put_str(tu_dir, "vocab.bpe", "a b\n\nab c\n");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, "vocab.bpe",
           "line 2: not two tokens separated by one space");
    /* a token outside GPT-2's alphabet: a 3-byte character, U+01FF */
    tf_put_str(tu_dir, "vocab.bpe", "a b\nab \xe2\x82\xac\n");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, "vocab.bpe",
           "merge 2: \"ab \xe2\x82\xac\" is not in GPT-2's byte alphabet");
    tf_put_str(tu_dir, "vocab.bpe", "\xc7\xbf b\n");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, "vocab.bpe",
           "merge 1: \"\xc7\xbf b\" is not in GPT-2's byte alphabet");
    /* accepted: the last line without its newline; no trailing blank */
    tf_put_str(tu_dir, "vocab.bpe", "#version: 0.2\na b\nab c");
    tokvec_tokenizer *t = expect(enc, NULL, NULL, 0, NULL, NULL);
    static const int32_t abc[] = {257};
    expect_ids(t, "abc", abc, 1);
    tokvec_tokenizer_close(t);
    /* no merges at all: bytes only */
    tf_put_str(tu_dir, "vocab.bpe", "#version: 0.2\n");
    encoder_json("");
    t = expect(enc, NULL, NULL, 0, NULL, NULL);
    static const int32_t bytes[] = {64, 65, 66};
    expect_ids(t, "abc", bytes, 3);
    tokvec_tokenizer_close(t);
    tf_put_str(tu_dir, "vocab.bpe", "");
    t = expect(enc, NULL, NULL, 0, NULL, NULL);
    expect_ids(t, "abc", bytes, 3);
    tokvec_tokenizer_close(t);
    /* an explicit merges path beats the files beside it */
    char mp[700];
    snprintf(mp, sizeof mp, "%s", tf_put_str(tu_dir, "m.txt", "a b\n"));
    encoder_json(",\"ab\":256");
    t = expect(enc, NULL, mp, 0, NULL, NULL);
    static const int32_t ab_c[] = {256, 66};
    expect_ids(t, "abc", ab_c, 2);
    tokvec_tokenizer_close(t);
    snprintf(mp, sizeof mp, "%s/none.txt", tu_dir);
    expect(enc, NULL, mp, -ENOENT, "none.txt", "No such file or directory");
}

static void gpt2_vocabulary_edges(void **s)
{
    (void)s;
    char enc[700];
    tf_put_str(tu_dir, "vocab.bpe", "a b\n");
    /* a key of more than 4096 bytes */
    char *big = malloc(5000);
    assert_non_null(big);
    strcpy(big, ",\"");
    memset(big + 2, 'x', 4097);
    strcpy(big + 2 + 4097, "\":300");
    snprintf(enc, sizeof enc, "%s", encoder_json(big));
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, NULL,
           "token \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\": empty, too "
           "long or not in GPT-2's byte alphabet");
    free(big);
    encoder_json(",\"\":300");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, NULL,
           "token \"\": empty, too long or not in GPT-2's byte alphabet");
    encoder_json(",\"\\u20ac\":300");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, NULL,
           "token \"\xe2\x82\xac\": empty, too long or not in GPT-2's byte "
           "alphabet");
    encoder_json(",\"ab\":16777216");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, NULL,
           "token \"ab\": id is not an integer in [0, 2^24)");
    encoder_json(",\"ab\":-1");
    expect(enc, NULL, NULL, TOKVEC_E_TOKENIZER, NULL,
           "token \"ab\": id is not an integer in [0, 2^24)");
    /* accepted: GPT-2's two special names stand for themselves */
    encoder_json(",\"ab\":256,\"<|endoftext|>\":257,\"<|startoftext|>\":258");
    tokvec_tokenizer *t = expect(enc, NULL, NULL, 0, NULL, NULL);
    tokvec_tokenizer_info i;
    tokvec_tokenizer_get_info(t, &i);
    assert_int_equal(i.n_special, 2);
    static const int32_t want[] = {258, 256, 257};
    expect_ids(t, "<|startoftext|>ab<|endoftext|>", want, 3);
    tokvec_tokenizer_close(t);
    /* a directory of vocab.json + merges.txt */
    char d[700];
    snprintf(d, sizeof d, "%s/pair", tu_dir);
    assert_int_equal(mkdir(d, 0700), 0);
    tf_put_str(tu_dir, "pair/merges.txt", "a b\n");
    snprintf(enc, sizeof enc, "%s", encoder_json(",\"ab\":256"));
    char v[700];
    snprintf(v, sizeof v, "%s/pair/vocab.json", tu_dir);
    assert_int_equal(rename(enc, v), 0);
    t = expect(d, NULL, NULL, 0, NULL, NULL);
    static const int32_t ab[] = {256};
    expect_ids(t, "ab", ab, 1);
    tokvec_tokenizer_get_info(t, &i);
    assert_string_equal(i.name, "vocab");
    tokvec_tokenizer_close(t);
    /* ... and of encoder.json + vocab.bpe, preferred to vocab.json */
    tf_put_str(tu_dir, "pair/vocab.bpe", "#version: 0.2\n"); /* no merges */
    snprintf(enc, sizeof enc, "%s", encoder_json(""));
    snprintf(v, sizeof v, "%s/pair/encoder.json", tu_dir);
    assert_int_equal(rename(enc, v), 0);
    t = expect(d, NULL, NULL, 0, NULL, NULL);
    static const int32_t a_b[] = {64, 65};
    expect_ids(t, "ab", a_b, 2);
    tokvec_tokenizer_get_info(t, &i);
    assert_string_equal(i.name, "encoder");
    tokvec_tokenizer_close(t);
}

/* A file past 1 GiB is refused before it is read (a sparse file). */
static void files_past_a_gibibyte_are_refused(void **s)
{
    (void)s;
    const char *p = tf_put_str(tu_dir, "big.json", "{");
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), ((off_t)1 << 30) + 1), 0);
    fclose(f);
    expect(p, NULL, NULL, TOKVEC_E_TOO_LARGE, NULL, "larger than 1 GiB");
    unlink(p);
}

/* --- tiktoken ---------------------------------------------------------- */

static size_t b64(char *o, const unsigned char *s, size_t n)
{
    static const char a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)s[i] << 16 |
                     (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        o[k++] = a[w >> 18 & 63];
        o[k++] = a[w >> 12 & 63];
        o[k++] = i + 1 < n ? a[w >> 6 & 63] : '=';
        o[k++] = i + 2 < n ? a[w & 63] : '=';
    }
    return k;
}

/* name: the 256 bytes at ranks 0..255 then extra lines. */
static const char *tiktoken(const char *name, const char *extra)
{
    static char buf[16384];
    size_t n = 0;
    for (int b = 0; b < 256; b++) {
        const unsigned char c[1] = {(unsigned char)b};
        n += b64(buf + n, c, 1);
        n += (size_t)sprintf(buf + n, " %d\n", b);
    }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", extra);
    return tf_put(tu_dir, name, buf, n);
}

static void tiktoken_base64_edges(void **s)
{
    (void)s;
    static const char bad[] = "line 257: not \"base64 rank\" with a rank "
                              "below 2^24";
    static const char *const refused[] = {
        "YR== 256\n",  /* non-canonical bits after one byte */
        "YWJ= 256\n",  /* ... after two */
        "Y=== 256\n",  /* three pads */
        "=WJj 256\n",  /* a pad first */
        "YW=j 256\n",  /* a pad inside */
        "YWJ 256\n",   /* not a multiple of 4 */
        " 256\n",      /* empty */
        "YWJj\n",      /* no rank */
        "YWJj \n",     /* empty rank */
        "YWJj 2a\n",   /* not digits */
        "YWJj -1\n",   /* a sign */
        "YW\x80j 1\n", /* a byte outside the alphabet */
    };
    for (size_t k = 0; k < sizeof refused / sizeof *refused; k++)
        expect(tiktoken("t.tiktoken", refused[k]), "gpt2", NULL,
               TOKVEC_E_TOKENIZER, NULL, bad);
    /* a token of 800 bytes: 1068 base64 characters, past the limit */
    char *line = malloc(2000);
    unsigned char raw[801];
    memset(raw, 'q', sizeof raw);
    size_t n = b64(line, raw, 801);
    strcpy(line + n, " 256\n");
    expect(tiktoken("t.tiktoken", line), "gpt2", NULL, TOKVEC_E_TOKENIZER,
           NULL, bad);
    free(line);
    /* accepted: every class of the alphabet, padded and not */
    static const unsigned char tok[][4] = {
        {0xfb, 0xff, 0xbf}, /* "+/+/": 62 63 62 63 */
        {0x00, 0x10, 0x83}, /* "ABCD" */
        {0x69, 0xb7, 0x1d}, /* "abcd" */
        {0xd3, 0x4d, 0x36}, /* "0001"-ish digits */
    };
    char extra[512];
    size_t e = 0;
    for (int k = 0; k < 4; k++) {
        e += b64(extra + e, tok[k], 3);
        e += (size_t)sprintf(extra + e, " %d\n", 256 + k);
    }
    e += b64(extra + e, (const unsigned char *)"zz", 2); /* one pad */
    e += (size_t)sprintf(extra + e, " 260\n");
    e += b64(extra + e, (const unsigned char *)"zzzz", 4); /* two pads */
    e += (size_t)sprintf(extra + e, " 261");               /* no newline */
    tokvec_tokenizer *t = expect(tiktoken("t.tiktoken", extra), "gpt2", NULL,
                                 0, NULL, NULL);
    static const int32_t zz[] = {261};
    expect_ids(t, "zzzz", zz, 1);
    const unsigned char *b;
    size_t len;
    int sp = 7;
    assert_int_equal(tokvec_tokenizer_token(t, 256, &b, &len, &sp), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(b, tok[0], 3);
    assert_int_equal(sp, 0);
    tokvec_tokenizer_close(t);
}

static void tiktoken_pattern_from_the_file_name(void **s)
{
    (void)s;
    static const struct {
        const char *name, *pattern;
        size_t n_special;
    } r[] = {
        /* r50k_base and p50k_base split as GPT-2 does */
        {"r50k_base.tiktoken", "gpt2", 1},
        {"p50k_base-copy.tiktoken", "gpt2", 1},
        {"cl100k_base.tiktoken", "cl100k_base", 5},
        {"o200k_base.tiktoken", "o200k_base", 2},
    };
    for (size_t k = 0; k < sizeof r / sizeof *r; k++) {
        tokvec_tokenizer *t = expect(tiktoken(r[k].name, ""), NULL, NULL, 0,
                                     NULL, NULL);
        tokvec_tokenizer_info i;
        tokvec_tokenizer_get_info(t, &i);
        assert_string_equal(i.pattern, r[k].pattern);
        assert_int_equal(i.n_special, r[k].n_special);
        assert_string_equal(i.format, "tiktoken");
        int32_t id = -1;
        size_t len = 0;
        const char *sp = tokvec_tokenizer_special(t, 0, &id, &len);
        assert_non_null(sp);
        assert_true(id > 255);
        assert_non_null(tokvec_tokenizer_special(t, 0, NULL, NULL));
        assert_null(tokvec_tokenizer_special(t, r[k].n_special, &id, &len));
        tokvec_tokenizer_close(t);
    }
    /* the name's pattern is overridden by the option */
    tokvec_tokenizer *t = expect(tiktoken("cl100k_base.tiktoken", ""), "gpt2",
                                 NULL, 0, NULL, NULL);
    tokvec_tokenizer_info i;
    tokvec_tokenizer_get_info(t, &i);
    assert_string_equal(i.pattern, "gpt2");
    assert_int_equal(i.n_special, 1);
    tokvec_tokenizer_close(t);
}

/* --- the calls --------------------------------------------------------- */

/* A WordPiece tokenizer.json with the given post-processor. */
static const char *wp(const char *post)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
             "\"vocab\":{\"[UNK]\":0,\"[CLS]\":1,\"[SEP]\":2,\"a\":3,"
             "\"##b\":4}},\"added_tokens\":[{\"id\":1,\"content\":\"[CLS]\","
             "\"special\":true},{\"id\":2,\"content\":\"[SEP]\",\"special\":"
             "true}],\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
             "\"decoder\":{\"type\":\"WordPiece\"},\"post_processor\":%s}",
             post);
    return tf_put_str(tu_dir, "tokenizer.json", buf);
}

static void post_processor_tokens_and_offsets(void **s)
{
    (void)s;
    static const struct {
        const char *post;
        int32_t ids[5];
        size_t n;
    } r[] = {
        {"{\"type\":\"BertProcessing\",\"cls\":[\"[CLS]\",1],\"sep\":"
         "[\"[SEP]\",2]}",
         {1, 3, 4, 2},
         4},
        {"{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{}},"
         "{\"SpecialToken\":{\"id\":\"[SEP]\"}}],\"special_tokens\":{"
         "\"[SEP]\":{\"ids\":[2]}}}",
         {3, 4, 2},
         3},
        {"{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{"
         "\"id\":\"[CLS]\"}},{\"Sequence\":{}}],\"special_tokens\":{"
         "\"[CLS]\":{\"ids\":[1]}}}",
         {1, 3, 4},
         3},
        {"null", {3, 4}, 2},
    };
    for (size_t k = 0; k < sizeof r / sizeof *r; k++) {
        tokvec_tokenizer *t = expect(wp(r[k].post), NULL, NULL, 0, NULL, NULL);
        for (int offs = 0; offs < 2; offs++) {
            tokvec_tok_ids ids = {0};
            encode(t, " ab",
                   TOKVEC_TOK_ADD_SPECIAL | (offs ? TOKVEC_TOK_OFFSETS : 0),
                   &ids);
            assert_int_equal(ids.n, r[k].n);
            assert_memory_equal(ids.ids, r[k].ids, r[k].n * sizeof(int32_t));
            if (offs)
                for (size_t q = 0; q < ids.n; q++) {
                    int added = ids.ids[q] < 3;
                    assert_int_equal(ids.offsets[q],
                                     added ? 0 : 1 + q - (r[k].ids[0] == 1));
                    assert_int_equal(ids.stops[q],
                                     added ? 0 : ids.offsets[q] + 1);
                }
            tokvec_tok_ids_free(&ids);
        }
        /* decoding with and without the specials */
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(tokvec_tokenizer_decode_flags(t, r[k].ids, r[k].n,
                                                       TOKVEC_DEC_SKIP_SPECIAL,
                                                       &text, &len, NULL),
                         0);
        assert_string_equal(text, "ab");
        free(text);
        tokvec_tokenizer_close(t);
    }
}

static void calls_without_options_or_path(void **s)
{
    (void)s;
    tokvec_tokenizer *t = (tokvec_tokenizer *)1;
    assert_int_equal(tokvec_tokenizer_open(NULL, NULL, &t), TOKVEC_E_INVAL);
    assert_null(t);
    char err[600] = "x";
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    assert_int_equal(tokvec_tokenizer_open(NULL, &o, &t), TOKVEC_E_INVAL);
    assert_string_equal(err, "");
    char p[700];
    snprintf(p, sizeof p, "%s/absent.json", tu_dir);
    assert_int_equal(tokvec_tokenizer_open(p, NULL, &t), -ENOENT);
    assert_null(t);
    /* no options: a tiktoken file needs the pattern from its name */
    assert_int_equal(tokvec_tokenizer_open(tiktoken("x.tiktoken", ""), NULL,
                                           &t),
                     TOKVEC_E_TOKENIZER);
    assert_int_equal(
        tokvec_tokenizer_open(tiktoken("gpt2.tiktoken", ""), NULL, &t), 0);
    const int32_t *pre, *post;
    size_t npre = 9, npost = 9;
    tokvec_tokenizer_added(t, &pre, &npre, &post, &npost);
    assert_int_equal(npre, 0);
    assert_int_equal(npost, 0);
    /* the byte-level decode, with and without specials; a bad id */
    const int32_t ids[] = {104, 50256, 105, 0xC3};
    char *text = NULL;
    size_t len = 0, bad = 99;
    assert_int_equal(tokvec_tokenizer_decode_flags(t, ids, 3,
                                                   TOKVEC_DEC_SKIP_SPECIAL,
                                                   &text, &len, NULL),
                     0);
    assert_string_equal(text, "hi");
    free(text);
    assert_int_equal(tokvec_tokenizer_decode(t, ids, 4, &text, &len, NULL), 0);
    assert_string_equal(text, "h<|endoftext|>i\xef\xbf\xbd");
    free(text);
    const int32_t oob[] = {104, 60000};
    assert_int_equal(tokvec_tokenizer_decode(t, oob, 2, &text, &len, &bad),
                     TOKVEC_E_TOKEN_RANGE);
    assert_int_equal(bad, 1);
    assert_null(text);
    assert_int_equal(tokvec_tokenizer_decode(t, oob, 2, &text, &len, NULL),
                     TOKVEC_E_TOKEN_RANGE);
    assert_int_equal(tokvec_tokenizer_decode(t, NULL, 0, &text, &len, NULL),
                     0);
    assert_int_equal(len, 0);
    free(text);
    const unsigned char *b = NULL;
    size_t bl = 0;
    int sp = 0;
    assert_int_equal(tokvec_tokenizer_token(t, 50256, &b, &bl, &sp), 0);
    assert_int_equal(sp, 1);
    assert_int_equal(tokvec_tokenizer_token(t, 50256, &b, &bl, NULL), 0);
    assert_int_equal(tokvec_tokenizer_token(t, -1, &b, &bl, &sp),
                     TOKVEC_E_TOKEN_RANGE);
    tokvec_tokenizer_close(t);
    tokvec_tokenizer_close(NULL);
}

static void utf8_replacement_rule(void **s)
{
    (void)s;
    static const struct {
        const char *in;
        size_t n;
        const char *out;
    } r[] = {
        {"a\xc3\xa9", 3, "a\xc3\xa9"},
        {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xe0\xa0\x80", 3, "\xe0\xa0\x80"},
        {"\xe0\x9f\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xed\x9f\xbf", 3, "\xed\x9f\xbf"},
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xf0\x90\x80\x80", 4, "\xf0\x90\x80\x80"},
        {"\xf0\x8f\x80\x80", 4,
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf"},
        {"\xf4\x90\x80\x80", 4,
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xf1\x80\x80", 3, "\xef\xbf\xbd"},
        {"\xe2\x82", 2, "\xef\xbf\xbd"},
        {"\xe2\x82x", 3, "\xef\xbf\xbdx"},
        {"\xf5\x80", 2, "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xff", 1, "\xef\xbf\xbd"},
    };
    for (size_t k = 0; k < sizeof r / sizeof *r; k++) {
        char out[64];
        size_t n = tokvec_utf8_lossy((const unsigned char *)r[k].in, r[k].n,
                                     out);
        out[n] = '\0';
        if (strcmp(out, r[k].out))
            fail_msg("case %zu: wrong replacement", k);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpt2_pair_edges),
        cmocka_unit_test(gpt2_vocabulary_edges),
        cmocka_unit_test(files_past_a_gibibyte_are_refused),
        cmocka_unit_test(tiktoken_base64_edges),
        cmocka_unit_test(tiktoken_pattern_from_the_file_name),
        cmocka_unit_test(post_processor_tokens_and_offsets),
        cmocka_unit_test(calls_without_options_or_path),
        cmocka_unit_test(utf8_replacement_rule),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
