/* uni_check.c -- tokvec's Unigram, Metaspace and Precompiled stages
 * against what Hugging Face tokenizers computed for the same texts
 * (tests/oracle/hf/unigram.js writes it; make unigram-oracle runs both).
 *
 *   uni_check TOKENIZER.json ORACLE.jsonl [--pipeline]
 *
 * Per text: the model alone on each of HF's pre-tokenized pieces (ids and
 * offsets), the Precompiled normalizer alone, Metaspace alone in its six
 * configurations (pieces and offsets), the Metaspace decoder on HF's
 * tokens; with --pipeline (tokenizer.json files of tools/spm2json.py) the
 * whole chain, Precompiled, Strip(right), Replace(" {2,}" -> "▁") (these
 * two written here, test-side), Metaspace, Unigram, against HF's ids, for
 * texts without an added token. Prints counts per check and the first
 * differences; exit 1 on any difference. Single-threaded test tool.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metaspace.h"
#include "precompiled.h"
#include "tok_utf8.h"
#include "unigram.h"

typedef struct ck {
    const char *name;
    long n, bad;
} ck;

static ck c_model = {"model ids+offsets", 0, 0};
static ck c_pc = {"precompiled", 0, 0};
static ck c_ms = {"metaspace pre-tokenizer", 0, 0};
static ck c_dec = {"metaspace decoder", 0, 0};
static ck c_pipe = {"pipeline ids", 0, 0};

static void report(ck *c, const char *text, const char *what)
{
    c->bad++;
    if (c->bad <= 5)
        fprintf(stderr, "DIFF %s: %s\n  text: %.200s\n", c->name, what, text);
}

/* Code point index of byte b in s (b <= n). */
static size_t cp_at(const unsigned char *s, size_t n, size_t b)
{
    size_t i = 0, c = 0, k;
    while (i < b && i < n) {
        (void)tv_u8_next(s + i, n - i, &k);
        i += k;
        c++;
    }
    return c;
}

/* End (code points) of the character holding byte b. */
static size_t cp_end(const unsigned char *s, size_t n, size_t b)
{
    size_t i = 0, c = 0, k;
    while (i <= b && i < n) {
        (void)tv_u8_next(s + i, n - i, &k);
        i += k;
        c++;
    }
    return c;
}

static int ids_equal(const tv_uni_toks *t, size_t from, json_t *want)
{
    if (json_array_size(want) != t->n - from)
        return 0;
    for (size_t i = from; i < t->n; i++)
        if (json_integer_value(json_array_get(want, i - from)) != t->id[i])
            return 0;
    return 1;
}

static void check_model(const tv_unigram *u, tv_uni_work *w, json_t *r,
                        const char *text)
{
    json_t *pre = json_object_get(r, "pre");
    json_t *model = json_object_get(r, "model");
    json_t *moff = json_object_get(r, "moff");
    tv_uni_toks t = {0};
    for (size_t i = 0; i < json_array_size(pre); i++) {
        json_t *p = json_array_get(json_array_get(pre, i), 0);
        const unsigned char *s = (const unsigned char *)json_string_value(p);
        size_t n = json_string_length(p);
        t.n = 0;
        c_model.n++;
        if (tv_unigram_encode(u, w, s, n, 0, &t) < 0) {
            report(&c_model, text, "encode failed");
            continue;
        }
        int ok = ids_equal(&t, 0, json_array_get(model, i));
        json_t *off = json_array_get(moff, i);
        for (size_t j = 0; ok && j < t.n; j++) {
            json_t *o = json_array_get(off, j);
            ok = (size_t)json_integer_value(json_array_get(o, 0)) ==
                     cp_at(s, n, t.start[j]) &&
                 (size_t)json_integer_value(json_array_get(o, 1)) ==
                     cp_at(s, n, t.end[j]);
        }
        if (!ok)
            report(&c_model, text, json_string_value(p));
    }
    tv_uni_toks_free(&t);
}

static void check_pc(const tv_precompiled *pc, json_t *r, const char *text,
                     size_t tlen)
{
    json_t *want = json_object_get(r, "pc");
    unsigned char *out = NULL;
    size_t len = 0, *src = NULL;
    if (!pc || !want)
        return;
    c_pc.n++;
    if (tv_precompiled_normalize(pc, (const unsigned char *)text, tlen, &out,
                                 &len, &src) < 0 ||
        len != json_string_length(want) ||
        memcmp(out, json_string_value(want), len) != 0)
        report(&c_pc, text, json_string_value(want));
    free(out);
    free(src);
}

/* Metaspace pre-tokenization of s: pieces compared with want. */
static int ms_equal(const tv_metaspace *m, const unsigned char *s, size_t n,
                    json_t *want)
{
    unsigned char *out = malloc(4 * n + 4);
    size_t *src = malloc((4 * n + 4) * sizeof *src);
    size_t *ends = malloc((n + 2) * sizeof *ends);
    size_t olen = 0, np = 0, a = 0;
    int ok = out && src && ends;
    if (ok)
        tv_metaspace_pretok(m, s, n, 1, out, &olen, src, ends, &np);
    ok = ok && np == json_array_size(want);
    for (size_t i = 0; ok && i < np; i++) {
        json_t *p = json_array_get(want, i);
        json_t *ps = json_array_get(p, 0), *o = json_array_get(p, 1);
        size_t b = ends[i];
        size_t st = src[a] == SIZE_MAX ? 0 : cp_at(s, n, src[a]);
        size_t en = src[b - 1] == SIZE_MAX ? 0 : cp_end(s, n, src[b - 1]);
        ok = json_string_length(ps) == b - a &&
             memcmp(json_string_value(ps), out + a, b - a) == 0 &&
             (size_t)json_integer_value(json_array_get(o, 0)) == st &&
             (size_t)json_integer_value(json_array_get(o, 1)) == en;
        a = b;
    }
    free(out);
    free(src);
    free(ends);
    return ok;
}

static void check_ms(json_t *r, const char *text, size_t tlen)
{
    static const char *scheme[] = {"always", "first", "never"};
    json_t *ms = json_object_get(r, "ms"), *dec = json_object_get(r, "dec");
    json_t *toks = json_object_get(r, "toks");
    for (int sc = 0; sc < 3; sc++) {
        tv_metaspace m = {0x2581, {0xE2, 0x96, 0x81, 0}, 3, sc, 1};
        for (int sp = 1; sp >= 0; sp--) {
            char key[32];
            snprintf(key, sizeof key, "%s/%s", scheme[sc],
                     sp ? "true" : "false");
            m.split = sp;
            c_ms.n++;
            if (!ms_equal(&m, (const unsigned char *)text, tlen,
                          json_object_get(ms, key)))
                report(&c_ms, text, key);
        }
        /* the decoder over HF's tokens */
        json_t *want = json_object_get(dec, scheme[sc]);
        size_t cap = 1, o = 0;
        for (size_t i = 0; i < json_array_size(toks); i++)
            cap += json_string_length(json_array_get(toks, i));
        unsigned char *buf = malloc(cap);
        for (size_t i = 0; buf && i < json_array_size(toks); i++) {
            json_t *tk = json_array_get(toks, i);
            o += tv_metaspace_decode(
                &m, (const unsigned char *)json_string_value(tk),
                json_string_length(tk), i, buf + o);
        }
        c_dec.n++;
        if (!buf || o != json_string_length(want) ||
            memcmp(buf, json_string_value(want), o) != 0)
            report(&c_dec, text, scheme[sc]);
        free(buf);
    }
}

static int is_ws(uint32_t c)
{
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* spm2json's chain on text; ids appended to t. */
static int pipeline(const tv_unigram *u, tv_uni_work *w,
                    const tv_precompiled *pc, const tv_metaspace *m,
                    const char *text, size_t tlen, tv_uni_toks *t)
{
    unsigned char *a = NULL;
    size_t n = 0, k;
    int rc = -1;
    if (pc) {
        if (tv_precompiled_normalize(pc, (const unsigned char *)text, tlen, &a,
                                     &n, NULL) < 0)
            return -1;
    } else {
        n = tlen;
        a = malloc(n + 1);
        if (!a)
            return -1;
        memcpy(a, text, n);
    }
    /* Strip(right): the last non-white-space character ends the text */
    size_t end = 0, i = 0;
    while (i < n) {
        uint32_t c = tv_u8_next(a + i, n - i, &k);
        i += k;
        if (!is_ws(c))
            end = i;
    }
    /* Replace(" {2,}", "▁") */
    unsigned char *b = malloc(3 * end + 1);
    size_t bn = 0;
    for (i = 0; b && i < end;) {
        size_t j = i;
        while (j < end && a[j] == ' ')
            j++;
        if (j - i >= 2) {
            memcpy(b + bn, "\xE2\x96\x81", 3);
            bn += 3;
            i = j;
        } else {
            b[bn++] = a[i++];
        }
    }
    unsigned char *out = malloc(4 * bn + 4);
    size_t *src = malloc((4 * bn + 4) * sizeof *src);
    size_t *ends = malloc((bn + 2) * sizeof *ends);
    size_t olen = 0, np = 0, st = 0;
    if (b && out && src && ends) {
        tv_metaspace_pretok(m, b, bn, 1, out, &olen, src, ends, &np);
        rc = 0;
        for (size_t p = 0; rc == 0 && p < np; p++) {
            rc = tv_unigram_encode(u, w, out + st, ends[p] - st, st, t);
            st = ends[p];
        }
    }
    free(a);
    free(b);
    free(out);
    free(src);
    free(ends);
    return rc;
}

static json_t *find_pc(json_t *n)
{
    const char *ty = json_string_value(json_object_get(n, "type"));
    if (ty && strcmp(ty, "Precompiled") == 0)
        return n;
    json_t *seq = json_object_get(n, "normalizers");
    for (size_t i = 0; i < json_array_size(seq); i++) {
        json_t *r = find_pc(json_array_get(seq, i));
        if (r)
            return r;
    }
    return NULL;
}

static int has_added(json_t *root, const char *text)
{
    json_t *add = json_object_get(root, "added_tokens");
    for (size_t i = 0; i < json_array_size(add); i++) {
        const char *c = json_string_value(
            json_object_get(json_array_get(add, i), "content"));
        if (c && strstr(text, c))
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[256] = "";
    int rc = 1, pipe = argc > 3 && strcmp(argv[3], "--pipeline") == 0;
    tv_unigram *u = NULL;
    tv_precompiled *pc = NULL;
    tv_uni_work *w = tv_uni_work_new();
    tv_uni_toks t = {0};
    tv_metaspace m;
    FILE *f = NULL;
    char *line = NULL;
    size_t cap = 0;
    if (argc < 3) {
        fprintf(stderr, "usage: uni_check TOKENIZER.json ORACLE.jsonl "
                        "[--pipeline]\n");
        return 2;
    }
    json_error_t je;
    json_t *root = json_load_file(argv[1], JSON_ALLOW_NUL, &je);
    if (!root || !w) {
        fprintf(stderr, "uni_check: %s: %s\n", argv[1], je.text);
        goto cleanup;
    }
    if (tv_unigram_from_json(json_object_get(root, "model"), &u, err,
                             sizeof err) < 0) {
        fprintf(stderr, "uni_check: %s: %s\n", argv[1], err);
        goto cleanup;
    }
    json_t *pcj = find_pc(json_object_get(root, "normalizer"));
    if (pcj && tv_precompiled_from_json(pcj, &pc, err, sizeof err) < 0) {
        fprintf(stderr, "uni_check: %s: %s\n", argv[1], err);
        goto cleanup;
    }
    if (pipe && tv_metaspace_from_json(json_object_get(root, "pre_tokenizer"),
                                       &m, err, sizeof err) < 0) {
        fprintf(stderr, "uni_check: %s: %s\n", argv[1], err);
        goto cleanup;
    }
    f = fopen(argv[2], "r");
    if (!f) {
        perror(argv[2]);
        goto cleanup;
    }
    while (getline(&line, &cap, f) > 0) {
        json_t *r = json_loads(line, JSON_ALLOW_NUL, &je);
        json_t *tj = json_object_get(r, "text");
        const char *text = json_string_value(tj);
        size_t tlen = json_string_length(tj);
        if (!text) {
            fprintf(stderr, "uni_check: %s: bad line\n", argv[2]);
            json_decref(r);
            goto cleanup;
        }
        check_model(u, w, r, text);
        check_pc(pc, r, text, tlen);
        check_ms(r, text, tlen);
        if (pipe && !has_added(root, text)) {
            t.n = 0;
            c_pipe.n++;
            if (pipeline(u, w, pc, &m, text, tlen, &t) < 0 ||
                !ids_equal(&t, 0, json_object_get(r, "ids")))
                report(&c_pipe, text, "ids");
        }
        json_decref(r);
    }
    rc = 0;
    ck *all[] = {&c_model, &c_pc, &c_ms, &c_dec, &c_pipe};
    for (int i = 0; i < 5; i++) {
        printf("  %-24s %6ld compared, %ld differ\n", all[i]->name, all[i]->n,
               all[i]->bad);
        if (all[i]->bad)
            rc = 1;
    }
cleanup:
    if (f)
        fclose(f);
    free(line);
    tv_uni_toks_free(&t);
    tv_uni_work_free(w);
    tv_unigram_free(u);
    tv_precompiled_free(pc);
    json_decref(root);
    return rc;
}
