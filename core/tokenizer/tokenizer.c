/* tokenizer.c -- the tokenizer's public calls: open and close, encoding
 * (special tokens, then the split, then the merge of each piece) and
 * decoding with lossy UTF-8.
 *
 * Encoding follows tiktoken's encode(text, allowed_special="all"): the text
 * is cut at every special token (leftmost first; the longest when two
 * start at one byte; found in one pass, tok_special.c), and each stretch
 * between them is split and merged on its own, so a split pattern's
 * look-ahead never sees past a special token. Without TOKVEC_TOK_SPECIAL
 * the whole text is one stretch (encode_ordinary). Offsets come out of
 * the merge: a token is a run of the input's bytes, so they tile the
 * input exactly. WordPiece tokenizers (tok_hf.h) run their normalize /
 * pre-tokenize / model pipeline on each stretch instead (tv_hf_stretch).
 * TOKVEC_TOK_ADD_SPECIAL then puts the post-processor's ids around the
 * text, with empty spans. tokenizer.json's added tokens follow HF's
 * AddedVocabulary (added.c): without TOKVEC_TOK_SPECIAL the non-special
 * ones still match; a match left out (a special one then, a single_word
 * one touching a word) does not cut the text, and the search goes on
 * after it; lstrip and rstrip widen a token's span.
 * A state (tokvec_tok_state_new/_free) is tok_bpe.c's caches plus the
 * pipeline's buffers (normalize.c frees them).
 * Threads: the handle is read-only here; a state belongs to its caller.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"
#include "tok_internal.h"

int tokvec_tokenizer_open(const char *path, const tokvec_tokenizer_opts *o,
                          tokvec_tokenizer **out)
{
    *out = NULL;
    if (o && o->errbuf && o->errlen)
        o->errbuf[0] = '\0';
    if (!path)
        return TOKVEC_E_INVAL;
    tokvec_tokenizer *t = calloc(1, sizeof *t);
    if (!t) { /* one line naming the file, as every failure */
        if (o && o->errbuf && o->errlen)
            snprintf(o->errbuf, o->errlen, "%s: %s", path,
                     tokvec_strerror(-ENOMEM));
        return -ENOMEM;
    }
    static _Atomic uint64_t serials;
    t->serial = ++serials; /* never 0, which a fresh state holds */
    int rc = tv_tok_load(t, path, o);
    if (rc < 0) {
        if (o && o->errbuf && o->errlen && !o->errbuf[0])
            snprintf(o->errbuf, o->errlen, "%s: %s", path,
                     tokvec_strerror(rc));
        tokvec_tokenizer_close(t);
        return rc;
    }
    *out = t;
    return 0;
}

void tokvec_tokenizer_close(tokvec_tokenizer *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->tok);
    free(t->imap);
    free(t->dense);
    free(t->blob);
    free(t->vmap);
    free(t->pmap);
    tv_special_free(t);
    tv_hf_free(t->hf);
    tv_post_free(&t->post);
    free(t);
}

void tokvec_tokenizer_get_info(const tokvec_tokenizer *t,
                               tokvec_tokenizer_info *info)
{
    *info = t->info;
}

const char *tokvec_tokenizer_special(const tokvec_tokenizer *t, size_t i,
                                     int32_t *id, size_t *len)
{
    if (i >= t->n_special)
        return NULL;
    if (id)
        *id = t->sp[i].id;
    if (len)
        *len = t->sp[i].len;
    return (const char *)t->blob + t->sp[i].off;
}

int tokvec_tokenizer_token(const tokvec_tokenizer *t, int32_t id,
                           const unsigned char **bytes, size_t *len,
                           int *special)
{
    const tv_tok *o = tv_tok_get(t, id);
    if (!o)
        return TOKVEC_E_TOKEN_RANGE;
    *bytes = t->blob + o->off;
    *len = o->len;
    if (special)
        *special = TV_TOK_KIND(o) == 1;
    return 0;
}

void tokvec_tokenizer_added(const tokvec_tokenizer *t, const int32_t **pre,
                            size_t *npre, const int32_t **post, size_t *npost)
{
    *pre = t->post.pre;
    *npre = t->post.npre;
    *post = t->post.post;
    *npost = t->post.npost;
}

static int stretch(const tokvec_tokenizer *t, tokvec_tok_state *s,
                   const unsigned char *u, size_t i, size_t end,
                   tokvec_tok_ids *out, unsigned flags)
{
    int offs = (flags & TOKVEC_TOK_OFFSETS) != 0;
    if (t->hf)
        return tv_hf_stretch(t, s, u, i, end, out, flags);
    while (i < end) {
        size_t e = tv_split_next(t->pattern, u, i, end);
        int rc = tv_bpe_piece(t, s, u + i, e - i, i, out, offs);
        if (rc)
            return rc;
        i = e;
    }
    return 0;
}

/* HF's find_matches with automaton a over u[lo..hi) (the sentence): i
 * is where the text not yet tokenized starts, pos where the next match
 * may start (after the last one found, even one left out). The pieces
 * between matches go to the next pass: for byte-level BPE the added
 * tokens with normalized: true (no normalizer: in the same bytes), else
 * the stretch (a Hugging Face pipeline has its own, added.c). */
static int pass(const tokvec_tokenizer *t, tokvec_tok_state *s,
                const tv_acm *a, const unsigned char *u, size_t lo, size_t hi,
                unsigned flags, tokvec_tok_ids *out)
{
    int offs = (flags & TOKVEC_TOK_OFFSETS) != 0;
    int all = (flags & TOKVEC_TOK_SPECIAL) != 0;
    int match = all ? a->max != 0 : a->nfree != 0;
    int first = a == &t->ac;
    size_t i = lo, pos = lo;
    tv_sp_win win = {0, 0, 0};
    tv_ac_hits hits = {NULL, 0, 0}, *h = &hits;
    int rc = 0;
    if (first) {
        hits = (tv_ac_hits){s->sp_hit, s->sp_cap, s->sp_steps};
    } else if (match) {
        rc = tv_hf_buf_get(s);
        h = rc ? h : &s->hf->hits2;
    }
    while (rc == 0 && (i < hi || pos < hi)) {
        size_t at = hi, k = 0;
        if (match && pos < hi)
            rc = tv_acm_next(a, h, &win, u, pos, hi, &at, &k);
        if (rc == 0 && at == hi && i < hi)
            rc = first && !t->hf && t->nac.max
                     ? pass(t, s, &t->nac, u, i, hi, flags, out)
                     : stretch(t, s, u, i, hi, out, flags);
        if (rc || at == hi)
            break;
        const tv_special *p = &a->pat[k];
        size_t start = at, stop = at + p->len;
        pos = stop;
        if ((!all && (p->flags & TV_ADD_SPECIAL)) ||
            ((p->flags & TV_ADD_SINGLE) &&
             !tv_added_single(u + lo, start - lo, stop - lo, hi - lo)))
            continue;
        if (p->flags & TV_ADD_LSTRIP) /* not into the token before */
            start = start < i ? i : tv_added_lstrip(u, i, start);
        if (p->flags & TV_ADD_RSTRIP)
            stop = tv_added_rstrip(u, stop, hi);
        if (i < start)
            rc = first && !t->hf && t->nac.max
                     ? pass(t, s, &t->nac, u, i, start, flags, out)
                     : stretch(t, s, u, i, start, out, flags);
        if (rc == 0)
            rc = tv_ids_reserve(out, 1, offs);
        if (rc)
            break;
        if (offs) {
            out->offsets[out->n] = start;
            out->stops[out->n] = stop;
        }
        out->ids[out->n++] = p->id;
        i = stop;
    }
    if (first) {
        s->sp_hit = hits.hit;
        s->sp_cap = hits.cap;
        s->sp_steps = hits.steps;
    }
    return rc;
}

/* The post-processor's ids around out's tokens (empty spans 0..0). */
static int add_special(const tokvec_tokenizer *t, tokvec_tok_ids *out,
                       int offs)
{
    size_t a = t->post.npre, z = t->post.npost;
    if (!a && !z)
        return 0;
    if (tv_ids_reserve(out, a + z, offs) < 0)
        return -ENOMEM;
    memmove(out->ids + a, out->ids, out->n * sizeof *out->ids);
    if (a)
        memcpy(out->ids, t->post.pre, a * sizeof *out->ids);
    if (z)
        memcpy(out->ids + a + out->n, t->post.post, z * sizeof *out->ids);
    if (offs) {
        size_t end = out->offsets[out->n];
        memmove(out->offsets + a, out->offsets, out->n * sizeof(size_t));
        memmove(out->stops + a, out->stops, out->n * sizeof(size_t));
        for (size_t k = 0; k < a; k++)
            out->offsets[k] = out->stops[k] = 0;
        for (size_t k = a + out->n; k < a + out->n + z; k++)
            out->offsets[k] = out->stops[k] = 0;
        out->offsets[a + out->n + z] = end;
    }
    out->n += a + z;
    return 0;
}

int tokvec_tokenizer_encode(const tokvec_tokenizer *t, tokvec_tok_state *s,
                            const char *text, size_t len, unsigned flags,
                            tokvec_tok_ids *out)
{
    const unsigned char *u = (const unsigned char *)text;
    int offs = (flags & TOKVEC_TOK_OFFSETS) != 0;
    out->n = 0;
    if (tv_ids_reserve(out, 0, offs) < 0)
        return -ENOMEM;
    int rc = pass(t, s, &t->ac, u, 0, len, flags, out);
    if (rc) {
        out->n = 0;
        return rc;
    }
    if (offs) {
        out->offsets[out->n] = len;
        for (size_t k = 0; !t->hf && k < out->n; k++)
            out->stops[k] = out->offsets[k + 1];
    }
    if ((flags & TOKVEC_TOK_ADD_SPECIAL) && add_special(t, out, offs) < 0) {
        out->n = 0;
        return -ENOMEM;
    }
    return 0;
}

size_t tokvec_tokenizer_cut(const tokvec_tokenizer *t, const char *text,
                            size_t len, size_t from)
{
    if (t->hf || t->sp_newline || from >= len)
        return len;
    return tv_split_cut((const unsigned char *)text, from, len);
}

void tokvec_tok_ids_free(tokvec_tok_ids *ids)
{
    if (!ids)
        return;
    free(ids->ids);
    free(ids->offsets);
    free(ids->stops);
    *ids = (tokvec_tok_ids){0};
}

size_t tokvec_utf8_lossy(const unsigned char *b, size_t n, char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        unsigned c = b[i];
        if (c < 0x80) {
            out[o++] = (char)c;
            i++;
            continue;
        }
        unsigned need = 0, lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            need = 2, lo = c == 0xE0 ? 0xA0 : 0x80,
            hi = c == 0xED ? 0x9F : 0xBF;
        else if (c >= 0xF0 && c <= 0xF4)
            need = 3, lo = c == 0xF0 ? 0x90 : 0x80,
            hi = c == 0xF4 ? 0x8F : 0xBF;
        size_t j = i + 1;
        unsigned got = 0;
        /* the maximal subpart: lead plus the continuation bytes that fit */
        while (got < need && j < n && b[j] >= lo && b[j] <= hi) {
            j++, got++;
            lo = 0x80, hi = 0xBF;
        }
        if (need && got == need) {
            memcpy(out + o, b + i, j - i);
            o += j - i;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
        i = j;
    }
    return o;
}

int tokvec_tokenizer_decode(const tokvec_tokenizer *t, const int32_t *ids,
                            size_t n, char **text, size_t *len,
                            size_t *bad_index)
{
    return tokvec_tokenizer_decode_flags(t, ids, n, 0, text, len, bad_index);
}

int tokvec_tokenizer_decode_flags(const tokvec_tokenizer *t,
                                  const int32_t *ids, size_t n, unsigned flags,
                                  char **text, size_t *len, size_t *bad_index)
{
    size_t total = 0;
    int skip = (flags & TOKVEC_DEC_SKIP_SPECIAL) != 0;
    *text = NULL;
    *len = 0;
    for (size_t k = 0; k < n; k++) {
        const tv_tok *o = tv_tok_get(t, ids[k]);
        if (!o) {
            if (bad_index)
                *bad_index = k;
            return TOKVEC_E_TOKEN_RANGE;
        }
        total += skip && TV_TOK_KIND(o) == 1 ? 0 : o->len;
    }
    if (t->hf) {
        char *raw = NULL;
        size_t rl = 0;
        int rc = tv_dec_run(t, ids, n, skip, &raw, &rl);
        if (rc)
            return rc;
        *text = malloc(3 * rl + 1);
        if (!*text) {
            free(raw);
            return -ENOMEM;
        }
        *len = tokvec_utf8_lossy((const unsigned char *)raw, rl, *text);
        (*text)[*len] = '\0';
        free(raw);
        return 0;
    }
    unsigned char *raw = malloc(total ? total : 1);
    char *out = malloc(3 * total + 1);
    if (!raw || !out) {
        free(raw);
        free(out);
        return -ENOMEM;
    }
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        const tv_tok *o = tv_tok_get(t, ids[k]);
        if (skip && TV_TOK_KIND(o) == 1)
            continue;
        memcpy(raw + at, t->blob + o->off, o->len);
        at += o->len;
    }
    *len = tokvec_utf8_lossy(raw, total, out);
    out[*len] = '\0';
    free(raw);
    *text = out;
    return 0;
}

tokvec_tok_state *tokvec_tok_state_new(void)
{
    return tv_bpe_state_new();
}

void tokvec_tok_state_free(tokvec_tok_state *s)
{
    if (!s)
        return;
    tv_hf_buf_free(s->hf);
    tv_bpe_state_free(s);
}
