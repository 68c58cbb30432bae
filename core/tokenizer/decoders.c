/* decoders.c -- Hugging Face decoders of tokenizer.json for the models
 * that are not byte-level (WordPiece, Unigram): WordPiece (prefix,
 * cleanup), Metaspace, ByteFallback, Strip, Replace (string patterns),
 * Fuse, and Sequences of them. Byte-level
 * BPE decodes through tokenizer.c's byte path.
 *
 * Must hold: tokens go through the chain as HF's decode_chain does (each
 * decoder maps a list of token strings to a list), then are joined; with
 * no decoder the tokens are joined by single spaces, as HF does.
 * Threads: parsed once at open, read-only after; decoding allocates its
 * own memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"
#include "tok_utf8.h"

static int add(tv_dec **v, size_t *n, size_t *cap, tv_dec x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        tv_dec *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int one_char(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t m = u[0] < 0x80 ? 1 : u[0] < 0xE0 ? 2 : u[0] < 0xF0 ? 3 : 4;
    return u[0] && strlen(s) == m;
}

static int parse_one(json_t *j, const char *where, tv_dec **v, size_t *n,
                     size_t *cap, char *err, size_t errlen)
{
    const char *ty = json_string_value(json_object_get(j, "type"));
    tv_dec x = {0};
    char msg[160];
    if (!ty)
        return tv_hf_bad(err, errlen, where, "a decoder without a type");
    if (!strcmp(ty, "Sequence")) {
        json_t *arr = json_object_get(j, "decoders"), *e;
        size_t k;
        if (!json_is_array(arr))
            return tv_hf_bad(err, errlen, where, "Sequence without decoders");
        json_array_foreach(arr, k, e) {
            char w[256];
            snprintf(w, sizeof w, "%s.decoders[%zu]", where, k);
            int rc = parse_one(e, w, v, n, cap, err, errlen);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (!strcmp(ty, "WordPiece")) {
        json_t *p = json_object_get(j, "prefix");
        x.kind = TV_D_WORDPIECE;
        x.cleanup = !json_is_false(json_object_get(j, "cleanup"));
        x.a = strdup(p ? (json_string_value(p) ? json_string_value(p) : "")
                       : "##");
    } else if (!strcmp(ty, "Fuse")) {
        x.kind = TV_D_FUSE;
        return add(v, n, cap, x);
    } else if (!strcmp(ty, "ByteFallback")) {
        x.kind = TV_D_BYTEFALLBACK;
        return add(v, n, cap, x);
    } else if (!strcmp(ty, "Metaspace")) {
        char why[160] = "";
        x.kind = TV_D_METASPACE;
        if (tv_metaspace_from_json(j, &x.ms, why, sizeof why))
            return tv_hf_bad(err, errlen, where, why);
        return add(v, n, cap, x);
    } else if (!strcmp(ty, "Strip")) {
        const char *c = json_string_value(json_object_get(j, "content"));
        json_t *st = json_object_get(j, "start"),
               *sp = json_object_get(j, "stop");
        if (!c || !one_char(c) || !json_is_integer(st) ||
            !json_is_integer(sp) || json_integer_value(st) < 0 ||
            json_integer_value(sp) < 0)
            return tv_hf_bad(
                err, errlen, where,
                "Strip needs one character and counts start, stop");
        x.kind = TV_D_STRIP;
        x.a = strdup(c);
        x.left = (size_t)json_integer_value(st);
        x.right = (size_t)json_integer_value(sp);
    } else if (!strcmp(ty, "Replace")) {
        const char *s = json_string_value(
            json_object_get(json_object_get(j, "pattern"), "String"));
        const char *c = json_string_value(json_object_get(j, "content"));
        if (!s || !*s || !c)
            return tv_hf_bad(err, errlen, where,
                             "Replace: only a non-empty String pattern is "
                             "supported (a Regex pattern is not)");
        x.kind = TV_D_REPLACE;
        x.a = strdup(s);
        x.b = strdup(c);
        if (!x.a || !x.b) {
            free(x.a);
            free(x.b);
            return -ENOMEM;
        }
    } else {
        snprintf(msg, sizeof msg,
                 "decoder %.40s is not supported with this model", ty);
        return tv_hf_bad(err, errlen, where, msg);
    }
    if (!x.a)
        return -ENOMEM;
    int rc = add(v, n, cap, x);
    if (rc) {
        free(x.a);
        free(x.b);
    }
    return rc;
}

int tv_dec_parse(json_t *j, const char *where, tv_dec **out, size_t *n,
                 char *err, size_t errlen)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    if (!j || json_is_null(j))
        return 0;
    int rc = parse_one(j, where, out, n, &cap, err, errlen);
    if (rc) {
        tv_dec_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void tv_dec_free(tv_dec *v, size_t n)
{
    for (size_t k = 0; v && k < n; k++) {
        free(v[k].a);
        free(v[k].b);
    }
    free(v);
}

/* --- running: a list of malloc'd strings --- */

typedef struct toks {
    char **s;
    size_t n;
} toks;

/* s with every (non-overlapping, leftmost) from replaced by to. */
static char *subst(const char *s, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + fl, from))
        n++;
    char *o = malloc(strlen(s) + n * tl + 1), *w = o;
    if (!o)
        return NULL;
    const char *p = s;
    for (const char *q = strstr(p, from); q; q = strstr(p, from)) {
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        memcpy(w, to, tl);
        w += tl;
        p = q + fl;
    }
    strcpy(w, p);
    return o;
}

static char *cleanup(char *s)
{
    static const char *const pairs[][2] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (size_t k = 0; s && k < sizeof pairs / sizeof *pairs; k++) {
        char *o = subst(s, pairs[k][0], pairs[k][1]);
        free(s);
        s = o;
    }
    return s;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
}

/* <0xXX> -> the byte, else -1 (HF's u8::from_str_radix on XX). */
static int byte_tok(const char *s)
{
    if (strlen(s) != 6 || strncmp(s, "<0x", 3) || s[5] != '>')
        return -1;
    int a = hexval((unsigned char)s[3]), b = hexval((unsigned char)s[4]);
    return a < 0 || b < 0 ? -1 : a * 16 + b;
}

/* ByteFallback: runs of byte tokens become their text when it is UTF-8,
 * else one U+FFFD per byte. Builds the new list beside the old one; on
 * failure t is left as it was. */
static int byte_fallback(toks *t)
{
    size_t n = t->n, w = 0;
    char **ns = calloc(n ? n : 1, sizeof *ns);
    unsigned char *fresh = calloc(n ? n : 1, 1); /* ns[k] is new */
    int *val = malloc((n ? n : 1) * sizeof *val);
    unsigned char *run = malloc(n + 1);
    int rc = ns && fresh && val && run ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        val[i] = byte_tok(t->s[i]);
    for (size_t i = 0; rc == 0 && i < n;) {
        if (val[i] < 0) {
            ns[w++] = t->s[i++];
            continue;
        }
        size_t j = i;
        while (j < n && val[j] >= 0) {
            run[j - i] = (unsigned char)val[j];
            j++;
        }
        if (tv_u8_valid(run, j - i) && !memchr(run, 0, j - i)) {
            ns[w] = strndup((const char *)run, j - i);
            fresh[w] = 1;
            rc = ns[w++] ? 0 : -ENOMEM;
        } else {
            for (size_t k = i; rc == 0 && k < j; k++) {
                ns[w] = strdup("\xEF\xBF\xBD");
                fresh[w] = 1;
                rc = ns[w++] ? 0 : -ENOMEM;
            }
        }
        i = j;
    }
    if (rc == 0) { /* the byte tokens' strings are replaced */
        for (size_t i = 0; i < n; i++)
            if (val[i] >= 0)
                free(t->s[i]);
        memcpy(t->s, ns, w * sizeof *ns);
        t->n = w;
    } else {
        for (size_t k = 0; ns && fresh && k < w; k++)
            if (fresh[k])
                free(ns[k]);
    }
    free(ns);
    free(fresh);
    free(val);
    free(run);
    return rc;
}

static int apply(const tv_dec *d, toks *t)
{
    if (d->kind == TV_D_BYTEFALLBACK)
        return byte_fallback(t);
    for (size_t i = 0; i < t->n; i++) {
        char *s = t->s[i], *o = NULL;
        if (d->kind == TV_D_WORDPIECE) {
            size_t pl = strlen(d->a), sl = strlen(s);
            int cont = i && pl && !strncmp(s, d->a, pl);
            o = malloc(sl + 2);
            if (o && (i == 0 || cont))
                memcpy(o, s + (cont ? pl : 0), sl - (cont ? pl : 0) + 1);
            else if (o)
                snprintf(o, sl + 2, " %s", s);
            if (o && d->cleanup)
                o = cleanup(o);
        } else if (d->kind == TV_D_REPLACE) {
            o = subst(s, d->a, d->b);
        } else if (d->kind == TV_D_METASPACE) {
            size_t sl = strlen(s);
            o = malloc(sl + 1);
            if (o)
                o[tv_metaspace_decode(&d->ms, (const unsigned char *)s, sl, i,
                                      (unsigned char *)o)] = '\0';
        } else if (d->kind == TV_D_STRIP) {
            size_t cl = strlen(d->a), len = strlen(s), a = 0, z = len;
            for (size_t k = 0;
                 k < d->left && a + cl <= z && !memcmp(s + a, d->a, cl); k++)
                a += cl;
            for (size_t k = 0;
                 k < d->right && z >= a + cl && !memcmp(s + z - cl, d->a, cl);
                 k++)
                z -= cl;
            o = strndup(s + a, z - a);
        } else { /* TV_D_FUSE: all tokens into the first */
            size_t total = 1;
            for (size_t k = 0; k < t->n; k++)
                total += strlen(t->s[k]);
            o = malloc(total);
            if (!o)
                return -ENOMEM;
            o[0] = '\0';
            for (size_t k = 0; k < t->n; k++) {
                strcat(o, t->s[k]);
                free(t->s[k]);
            }
            t->s[0] = o;
            t->n = 1;
            return 0;
        }
        if (!o)
            return -ENOMEM;
        free(s);
        t->s[i] = o;
    }
    return 0;
}

int tv_dec_run(const tokvec_tokenizer *t, const int32_t *ids, size_t n,
               int skip, char **text, size_t *len)
{
    const tv_hf *h = t->hf;
    toks tk = {calloc(n ? n : 1, sizeof(char *)), 0};
    int rc = tk.s ? 0 : -ENOMEM;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        const tv_tok *o = tv_tok_get(t, ids[k]); /* checked by the caller */
        /* a normalized added token decodes to its normalized text, and a
         * special one is skipped only when that is its text (HF looks the
         * normalized text up among the specials' contents) */
        const tv_special *a = TV_TOK_ADDED(o) & TV_ADD_NORM
                                  ? tv_added_norm_of(h, o->id)
                                  : NULL;
        if (skip && TV_TOK_KIND(o) == 1 &&
            (!a || (a->len == o->len &&
                    !memcmp(h->nbytes + a->off, t->blob + o->off, o->len))))
            continue;
        tk.s[tk.n] = a ? strndup((const char *)h->nbytes + a->off, a->len)
                       : strndup((const char *)t->blob + o->off, o->len);
        rc = tk.s[tk.n] ? 0 : -ENOMEM;
        tk.n += rc == 0;
    }
    for (size_t d = 0; rc == 0 && d < h->ndec; d++)
        rc = apply(&h->dec[d], &tk);
    size_t total = 1;
    for (size_t k = 0; k < tk.n; k++)
        total += strlen(tk.s[k]) + 1;
    char *o = rc == 0 ? malloc(total) : NULL;
    if (rc == 0 && !o)
        rc = -ENOMEM;
    if (o) {
        size_t w = 0;
        for (size_t k = 0; k < tk.n; k++) {
            if (k && !h->has_decoder)
                o[w++] = ' ';
            size_t l = strlen(tk.s[k]);
            memcpy(o + w, tk.s[k], l);
            w += l;
        }
        o[w] = '\0';
        *text = o;
        *len = w;
    }
    for (size_t k = 0; tk.s && k < tk.n; k++)
        free(tk.s[k]);
    free(tk.s);
    return rc;
}
