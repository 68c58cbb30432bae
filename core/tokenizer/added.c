/* added.c -- the added tokens of a Hugging Face tokenizer.json, matched as
 * HF's AddedVocabulary matches them: first those with normalized: false
 * in the input (tokenizer.c, with the tokenizer's automaton), then, in the
 * normalized text of each stretch between those, the ones with
 * normalized: true, whose contents are normalized too (this file, with
 * an automaton of their own). Each match is leftmost, the longest where
 * several start at one place; the next is looked for after its end, even
 * when it is left out: a special token with encode_special_tokens (no
 * TOKVEC_TOK_SPECIAL), or a single_word token touching a word character
 * (regex \w). lstrip and rstrip take the White_Space before and after the
 * token into its span (lstrip not into an earlier token's). Here: loading
 * them, their automaton, the input-side tests; the run over the
 * normalized text is hf_pipeline.c's (tv_added_norm_run).
 *
 * Must hold: ids and offsets are HF's (tokenizers 0.23.2), offsets the
 * input's bytes. Threads: the patterns and the automaton are built at
 * open and read-only after; working memory is the caller's tv_hf_buf.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"
#include "tok_utf8.h"

/* The code point of the UTF-8 at u[i..len) and its bytes (*n); a byte
 * that starts no valid sequence is U+FFFD alone (tok_utf8.h's rules). */
static uint32_t cp_at(const unsigned char *u, size_t i, size_t len, size_t *n)
{
    uint32_t c = tv_u8_next(u + i, len - i, n);
    return c == TV_U8_BAD ? 0xFFFD : c;
}

/* The code point that ends at u[end) (start at *at); lo: the least start. */
static uint32_t cp_before(const unsigned char *u, size_t lo, size_t end,
                          size_t *at)
{
    size_t i = end - 1, n;
    while (i > lo && end - i < 4 && (u[i] & 0xC0) == 0x80)
        i--;
    uint32_t c = cp_at(u, i, end, &n);
    if (i + n != end) { /* not one sequence: its last byte alone */
        i = end - 1;
        c = 0xFFFD;
    }
    *at = i;
    return c;
}

int tv_added_single(const unsigned char *u, size_t start, size_t stop,
                    size_t len)
{
    size_t at, n;
    if (start > 0 && tv_hf_is_word(cp_before(u, 0, start, &at)))
        return 0;
    return stop == len || !tv_hf_is_word(cp_at(u, stop, len, &n));
}

size_t tv_added_lstrip(const unsigned char *u, size_t lo, size_t start)
{
    size_t at;
    while (start > lo && tv_hf_is_ws(cp_before(u, lo, start, &at)))
        start = at;
    return start;
}

size_t tv_added_rstrip(const unsigned char *u, size_t stop, size_t len)
{
    size_t n;
    while (stop < len && tv_hf_is_ws(cp_at(u, stop, len, &n)))
        stop += n;
    return stop;
}

/* --- loading --- */

uint32_t tv_added_options(json_t *v)
{
    uint32_t f = 0;
    f |= json_is_true(json_object_get(v, "lstrip")) ? TV_ADD_LSTRIP : 0;
    f |= json_is_true(json_object_get(v, "rstrip")) ? TV_ADD_RSTRIP : 0;
    f |= json_is_true(json_object_get(v, "single_word")) ? TV_ADD_SINGLE : 0;
    f |= json_is_true(json_object_get(v, "normalized")) ? TV_ADD_NORM : 0;
    return f;
}

int tv_added_load(tokvec_tokenizer *t, json_t *root, char *err, size_t errlen)
{
    json_t *added = json_object_get(root, "added_tokens"), *v;
    size_t k;
    json_array_foreach(added, k, v) {
        const char *c = json_string_value(json_object_get(v, "content"));
        json_int_t id = json_integer_value(json_object_get(v, "id"));
        if (!c || !json_is_integer(json_object_get(v, "id"))) {
            snprintf(err, errlen, "added_tokens[%zu]: no content or id", k);
            return TOKVEC_E_TOKENIZER;
        }
        size_t cl = strlen(c);
        if (id < 0 || id >= TV_TOK_MAX_ID || !cl) {
            snprintf(err, errlen, "added_tokens[%zu]: bad id or content", k);
            return TOKVEC_E_TOKENIZER;
        }
        unsigned char kind = json_is_false(json_object_get(v, "special")) ? 2
                                                                          : 1;
        uint32_t f = tv_added_options(v);
        tv_tok *o = (tv_tok *)tv_tok_get(t, (int32_t)id);
        if (o) {
            if (o->len != cl || memcmp(t->blob + o->off, c, cl)) {
                snprintf(err, errlen,
                         "added_tokens[%zu]: id %lld is another token", k,
                         (long long)id);
                return TOKVEC_E_TOKENIZER;
            }
        } else {
            int rc = tv_tok_add(t, (const unsigned char *)c, cl, (int32_t)id,
                                1);
            if (rc)
                return rc == TOKVEC_E_MISMATCH ? TOKVEC_E_TOKENIZER : rc;
            o = &t->tok[t->n_tok - 1]; /* tv_tok_add appends */
        }
        o->special = kind | f << 8;
    }
    return 0;
}

/* The UTF-8 s[0..n) as a text in flight (spans: its own bytes). */
static void text_of(const unsigned char *s, size_t n, tv_hf_text *x)
{
    size_t m = 0, w;
    for (size_t i = 0; i < n; i += w) {
        x->cp[m] = cp_at(s, i, n, &w);
        x->a0[m] = (uint32_t)i;
        x->a1[m] = (uint32_t)(i + w);
        m++;
    }
    x->n = m;
}

static int by_id(const void *a, const void *b)
{
    int32_t x = ((const tv_special *)a)->id, y = ((const tv_special *)b)->id;
    return (x > y) - (x < y);
}

const tv_special *tv_added_norm_of(const tv_hf *h, int32_t id)
{
    tv_special key = {id, 0, 0, 0};
    return h->npat ? bsearch(&key, h->npat, h->nac.npat, sizeof key, by_id)
                   : NULL;
}

/* The normalized added tokens, their contents through the normalizer
 * (by id: of two with the same text, the lower id is matched). */
static int norm_patterns(tokvec_tokenizer *t, tv_hf_buf *b, size_t n,
                         char *err, size_t errlen)
{
    tv_hf *h = t->hf;
    size_t cap = 64, used = 0, m = 0;
    h->npat = malloc(n * sizeof *h->npat);
    h->nbytes = malloc(cap);
    if (!h->npat || !h->nbytes)
        return -ENOMEM;
    for (size_t i = 0; i < t->n_tok; i++) {
        const tv_tok *o = &t->tok[i];
        if (!o->special || !(TV_TOK_ADDED(o) & TV_ADD_NORM))
            continue;
        int cur = 0;
        if (tv_hf_text_reserve(&b->t[0], o->len) < 0)
            return -ENOMEM;
        text_of(t->blob + o->off, o->len, &b->t[0]);
        int rc = tv_norm_run(h->norm, h->nnorm, b, &cur);
        if (rc)
            return rc;
        const tv_hf_text *x = &b->t[cur];
        if (!x->n) {
            snprintf(err, errlen,
                     "added_tokens: \"%.*s\" (id %d) is normalized to "
                     "nothing",
                     (int)(o->len < 40 ? o->len : 40),
                     (const char *)t->blob + o->off, o->id);
            return TOKVEC_E_TOKENIZER;
        }
        if (used + 4 * x->n > UINT32_MAX - 1)
            return TOKVEC_E_TOO_LARGE;
        while (cap < used + 4 * x->n)
            cap *= 2;
        unsigned char *nb = realloc(h->nbytes, cap);
        if (!nb)
            return -ENOMEM;
        h->nbytes = nb;
        size_t at = used;
        for (size_t k = 0; k < x->n; k++)
            used += tv_u8_put(x->cp[k], h->nbytes + used);
        uint32_t f = TV_TOK_ADDED(o) |
                     (TV_TOK_KIND(o) == 1 ? TV_ADD_SPECIAL : 0);
        h->npat[m++] = (tv_special){o->id, (uint32_t)at, (uint32_t)(used - at),
                                    f};
    }
    qsort(h->npat, m, sizeof *h->npat, by_id); /* for tv_added_norm_of */
    h->nac.pat = h->npat;
    h->nac.bytes = h->nbytes;
    h->nac.npat = m;
    return tv_acm_build(&h->nac, 0, 0);
}

int tv_added_norm_build(tokvec_tokenizer *t, char *err, size_t errlen)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_tok; i++)
        n += (TV_TOK_ADDED(&t->tok[i]) & TV_ADD_NORM) != 0;
    if (!n)
        return 0;
    tv_hf_buf *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    int rc = norm_patterns(t, b, n, err, errlen);
    tv_hf_buf_free(b);
    return rc;
}

void tv_added_free(tv_hf *h)
{
    tv_acm_free(&h->nac);
    free(h->npat);
    free(h->nbytes);
}

/* --- encoding --- */
