/* hf_pipeline.c -- the pipeline that runs a Hugging Face tokenizer.json
 * beyond byte-level BPE (tok_hf.h), above its models and stages: UTF-8
 * in, normalizers (normalize.c), the normalized added tokens (their
 * automaton from added.c), Metaspace and the pre-tokenizers (pretok.c),
 * then the model on each word: WordPiece (wordpiece.c), Unigram
 * (unigram.c), SentencePiece-style BPE (spbpe.c). With exactly
 * BertNormalizer and BertPreTokenizer, runs of words whose characters
 * wordpiece.c's tables take (all but those whose normalized form depends
 * on their neighbours or is more than one character) take its one-pass
 * path instead of the stages. A Unigram stretch longer than 16 KB goes
 * through the stages a piece at a time, cut between letters that no
 * stage changes or looks across, the word across a cut fed to the
 * Viterbi as it comes (stretch_cut): the stages' arrays hold a piece,
 * not the stretch. Also the rest of
 * tokenizer.json after the model (tv_hf_load_rest, which tok_load.c calls
 * after the model's load), the Unigram model's tokenizer.json part
 * (tv_uni_load) and freeing the whole pipeline.
 *
 * May call: the models and stages of this folder, tok_bpe.c; nothing in
 * this folder calls up into it but tok_load.c and tokenizer.c.
 * Must hold: ids and offsets as each model's and stage's file says (HF's
 * encode(text, add_special_tokens=False)). Threads: the handle is
 * read-only after open; working memory is the caller's tokvec_tok_state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"
#include "tok_utf8.h"

void tv_hf_free(tv_hf *h)
{
    if (!h)
        return;
    tv_norm_free(h->norm, h->nnorm);
    free(h->pre);
    tv_unigram_free(h->uni);
    tv_dec_free(h->dec, h->ndec);
    tv_added_free(h);
    free(h->prefix);
    free(h->suffix);
    free(h->trie);
    free(h->tlab);
    free(h->tdir);
    free(h->ucls);
    free(h);
}

/* --- loading --- */

/* tv_hf.lcut: for a Unigram pipeline without Prepend (it changes the
 * text's start) and without normalized added tokens, each ASCII letter
 * that the normalizers give back unchanged on its own, that no Replace
 * pattern holds (one of several characters could match across a cut) and
 * that is not Metaspace's replacement. Letters are no pre-tokenizer's cut
 * (white space, punctuation, digits, the replacement). Where four such
 * letters stand in a row, the middle two are each a grapheme of its own
 * (no Prepend before, no mark after), which no normalizer changes or
 * looks past: Precompiled looks up graphemes, the Unicode forms compose
 * and reorder only around marks and characters that compose backwards,
 * Replace matches no pattern that holds them, Strip looks at the ends
 * (white space), the rest go a character at a time. So the text may be
 * cut between the middle two: its pieces normalize to the pieces of the
 * whole text's normal form, and the word there runs across the cut. */
static int lcut_build(tv_hf *h)
{
    memset(h->lcut, 0, sizeof h->lcut);
    h->lcuts = 0;
    if (h->model != TV_M_UNIGRAM || h->nac.max)
        return 0;
    for (size_t k = 0; k < h->nnorm; k++)
        if (h->norm[k].kind == TV_N_PREPEND)
            return 0;
    tv_hf_buf *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    int rc = tv_hf_text_reserve(&b->t[0], 1);
    for (uint32_t c = 'A'; rc == 0 && c <= 'z'; c++) {
        if (c > 'Z' && c < 'a')
            continue;
        int cur = 0, keep;
        b->t[0].cp[0] = c;
        b->t[0].a0[0] = 0;
        b->t[0].a1[0] = 1;
        b->t[0].n = 1;
        rc = tv_norm_run(h->norm, h->nnorm, b, &cur);
        keep = rc == 0 && b->t[cur].n == 1 && b->t[cur].cp[0] == c;
        for (size_t k = 0; k < h->nnorm; k++) {
            const tv_norm *v = &h->norm[k];
            if (v->kind != TV_N_REPLACE && v->kind != TV_N_CHARMAP)
                continue;
            for (size_t j = 0; j < v->npat; j++)
                keep = keep && v->pat[j] != c;
            keep = keep && !(v->re && v->re_c == c);
        }
        if (h->npre && h->pre[0].kind == TV_P_METASPACE &&
            h->pre[0].ms.replacement == c)
            keep = 0;
        h->lcut[c] = (unsigned char)keep;
        h->lcuts |= keep ? TV_LCUT_IDS | TV_LCUT_OFFSETS : 0;
    }
    /* HF's Precompiled drops a character without a change for it, so the
     * characters after it take the spans of those before, to the end of
     * the text (normalize.c: precompiled): a piece takes over that lag
     * from the one before (tv_hf_buf.pcarry), for one such step */
    size_t npc = 0;
    for (size_t k = 0; k < h->nnorm; k++)
        npc += h->norm[k].kind == TV_N_PRECOMPILED;
    if (npc > 1)
        h->lcuts &= ~TV_LCUT_OFFSETS;
    tv_hf_buf_free(b);
    return rc;
}

int tv_hf_load_rest(tokvec_tokenizer *t, json_t *root, char *err,
                    size_t errlen)
{
    tv_hf *h = t->hf;
    int rc = tv_added_load(t, root, err, errlen);
    if (rc == 0)
        rc = tv_norm_parse(json_object_get(root, "normalizer"), "normalizer",
                           &h->norm, &h->nnorm, err, errlen);
    if (rc == 0)
        rc = tv_pretok_parse(json_object_get(root, "pre_tokenizer"),
                             "pre_tokenizer", &h->pre, &h->npre, err, errlen);
    if (rc == 0) {
        json_t *d = json_object_get(root, "decoder");
        h->has_decoder = d && !json_is_null(d);
        rc = tv_dec_parse(d, "decoder", &h->dec, &h->ndec, err, errlen);
    }
    if (rc == 0)
        rc = tv_added_norm_build(t, err, errlen);
    return rc ? rc : lcut_build(h);
}

/* The Unigram model of root.model into t (unigram.c's model, its pieces
 * the token table's ids 0..n-1). */
int tv_uni_load(tokvec_tokenizer *t, json_t *root, char *err, size_t errlen)
{
    tv_hf *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    t->hf = h;
    h->model = TV_M_UNIGRAM;
    t->info.model = "Unigram";
    int rc = tv_unigram_from_json(json_object_get(root, "model"), &h->uni, err,
                                  errlen);
    size_t n = rc ? 0 : tv_unigram_size(h->uni);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t len = 0;
        const unsigned char *p = tv_unigram_piece(h->uni, (int32_t)i, &len,
                                                  NULL);
        if (len == 0) {
            snprintf(err, errlen, "model.vocab[%zu]: an empty piece", i);
            return TOKVEC_E_TOKENIZER;
        }
        rc = tv_tok_add(t, p, len, (int32_t)i, 0);
    }
    /* Without unk_id HF fails the whole encode on a character no piece
     * spells (MissingUnkId, byte fallback or not); tokvec's never fails. */
    if (rc == 0 && tv_unigram_unk(h->uni) < 0) {
        snprintf(err, errlen,
                 "model.unk_id: null is not supported (HF fails the whole "
                 "encode on a character no piece spells)");
        return TOKVEC_E_TOKENIZER;
    }
    return rc;
}

/* --- encoding --- */

static void utf8_in(const unsigned char *u, size_t i, size_t end,
                    tv_hf_text *x)
{
    size_t n = 0;
    while (i < end) {
        unsigned c = u[i];
        uint32_t cp = 0xFFFD;
        size_t m = 1;
        if (c < 0x80) {
            cp = c;
        } else {
            size_t need = c >= 0xC2 && c <= 0xDF   ? 1
                          : c >= 0xE0 && c <= 0xEF ? 2
                          : c >= 0xF0 && c <= 0xF4 ? 3
                                                   : 0;
            unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
            unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
            uint32_t v = c & (0x3F >> need);
            size_t j = 1;
            for (; need && j <= need && i + j < end; j++) {
                unsigned b = u[i + j];
                if (b < (j == 1 ? lo : 0x80) || b > (j == 1 ? hi : 0xBF))
                    break;
                v = v << 6 | (b & 0x3F);
            }
            if (need && j == need + 1) {
                cp = v;
                m = need + 1;
            }
        }
        x->cp[n] = cp;
        x->a0[n] = (uint32_t)i;
        x->a1[n] = (uint32_t)(i + m);
        n++;
        i += m;
    }
    x->n = n;
}

/* A Unigram word's tokens on their way to out: their byte spans in the
 * word's UTF-8 (u8) are whole characters, found by walking it (spans come
 * in order; byte-fallback tokens of one stretch share theirs). */
typedef struct uni_map {
    const tv_hf_text *x;
    const unsigned char *u8; /* bytes u8b.. of the word */
    size_t u8b;
    size_t bs, cs, be, ce; /* byte and character of the starts, the ends */
    tokvec_tok_ids *out;
    int offs;
} uni_map;

/* The character (index in x) where byte `to` of the word begins, walking
 * on from byte *bp, character *cp. */
static size_t uni_char(const uni_map *m, size_t *bp, size_t *cp, size_t to)
{
    while (*bp < to) {
        unsigned c = m->u8[*bp - m->u8b];
        *bp += c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        ++*cp;
    }
    return *cp;
}

static int uni_sink(void *ctx, tv_uni_toks *t)
{
    uni_map *m = ctx;
    if (tv_ids_reserve(m->out, t->n, m->offs) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < t->n; k++) {
        if (!m->offs) {
            m->out->ids[m->out->n++] = t->id[k];
            continue;
        }
        size_t a = uni_char(m, &m->bs, &m->cs, t->start[k]);
        size_t e = uni_char(m, &m->be, &m->ce, t->end[k]);
        tv_hf_put_tok(m->out, 1, t->id[k], m->x, a, e);
    }
    t->n = 0;
    return 0;
}

/* A word through the Unigram model (unigram.c), its tokens handed on as
 * they come: a long word needs no token list of its own length. */
static int uni_word(const tokvec_tokenizer *t, tv_hf_buf *b,
                    const tv_hf_text *x, size_t s, size_t e,
                    tokvec_tok_ids *out, int offs)
{
    size_t len;
    if (!b->uw)
        b->uw = tv_uni_work_new();
    if (!b->uw)
        return -ENOMEM;
    if (tv_hf_utf8(&b->uu8, NULL, &b->uu8cap, x, s, e, &len) < 0)
        return -ENOMEM;
    uni_map m = {x, b->uu8, 0, 0, s, 0, s, out, offs};
    b->ut.n = 0;
    int rc = tv_unigram_encode_sink(t->hf->uni, b->uw, b->uu8, len, 0, &b->ut,
                                    uni_sink, &m);
    return rc ? rc : uni_sink(&m, &b->ut);
}

/* The characters [s, e) of x, a part of a word that runs across the
 * pieces of a long stretch (stretch_cut), to the model: first, the
 * word's first part; last, its last. The model settles what it can; what
 * a later part may still change stays in b->lw and b->lu8. */
static int uni_part(const tokvec_tokenizer *t, tv_hf_buf *b,
                    const tv_hf_text *x, size_t s, size_t e, int first,
                    int last, tokvec_tok_ids *out, int offs)
{
    const tv_unigram *u = t->hf->uni;
    tv_hf_text *l = &b->lw;
    size_t keep;
    if (!b->uw)
        b->uw = tv_uni_work_new();
    if (!b->uw)
        return -ENOMEM;
    if (first) {
        l->n = 0;
        b->lun = b->lub = 0;
        memset(b->lwalk, 0, sizeof b->lwalk);
        int rc = tv_unigram_stream_begin(u, b->uw, 0);
        if (rc)
            return rc;
    }
    if (offs) { /* the spans, for the tokens' offsets */
        if (tv_hf_text_reserve(l, l->n + (e - s)) < 0)
            return -ENOMEM;
        memcpy(l->a0 + l->n, x->a0 + s, (e - s) * sizeof *l->a0);
        memcpy(l->a1 + l->n, x->a1 + s, (e - s) * sizeof *l->a1);
        l->n += e - s;
    }
    if (b->lun + 4 * (e - s) > b->lucap) {
        size_t cap = b->lucap ? b->lucap : 4096;
        while (cap < b->lun + 4 * (e - s))
            cap *= 2;
        unsigned char *g = realloc(b->lu8, cap);
        if (!g)
            return -ENOMEM;
        b->lu8 = g;
        b->lucap = cap;
    }
    b->lun += tv_hf_utf8_to(b->lu8 + b->lun, x, s, e);
    uni_map m = {l,           b->lu8,      b->lub, b->lwalk[0], b->lwalk[1],
                 b->lwalk[2], b->lwalk[3], out,    offs};
    b->ut.n = 0;
    int rc = tv_unigram_stream_feed(u, b->uw, b->lu8, b->lub, b->lub + b->lun,
                                    last, &b->ut, uni_sink, &m, &keep);
    if (rc == 0)
        rc = uni_sink(&m, &b->ut);
    if (rc || last)
        return rc;
    /* every token so far ends at or before keep: drop what lies before */
    if (offs) {
        size_t kc = uni_char(&m, &m.be, &m.ce, keep);
        memmove(l->a0, l->a0 + kc, (l->n - kc) * sizeof *l->a0);
        memmove(l->a1, l->a1 + kc, (l->n - kc) * sizeof *l->a1);
        l->n -= kc;
    }
    memmove(b->lu8, b->lu8 + (keep - b->lub), b->lun - (keep - b->lub));
    b->lun -= keep - b->lub;
    b->lub = keep;
    b->lwalk[0] = b->lwalk[2] = keep;
    b->lwalk[1] = b->lwalk[3] = 0;
    return 0;
}

/* The normalized text's code points [s, e) through the rest. */
static int piece(const tokvec_tokenizer *t, tv_hf_buf *b, size_t s, size_t e,
                 tokvec_tok_ids *out, int offs)
{
    tv_hf_text *x = &b->t[0];
    if (tv_hf_text_reserve(x, e - s) < 0)
        return -ENOMEM;
    memcpy(x->cp, b->nt.cp + s, (e - s) * sizeof *x->cp);
    memcpy(x->a0, b->nt.a0 + s, (e - s) * sizeof *x->a0);
    memcpy(x->a1, b->nt.a1 + s, (e - s) * sizeof *x->a1);
    x->n = e - s;
    return tv_hf_tail(t, b, 0, out, offs);
}

int tv_added_norm_run(const tokvec_tokenizer *t, tv_hf_buf *b, int cur,
                      tokvec_tok_ids *out, unsigned flags)
{
    const tv_acm *a = &t->hf->nac;
    int offs = (flags & TOKVEC_TOK_OFFSETS) != 0;
    int all = (flags & TOKVEC_TOK_SPECIAL) != 0;
    tv_hf_text keep = b->nt; /* the normalized text aside */
    b->nt = b->t[cur];
    b->t[cur] = keep;
    const tv_hf_text *x = &b->nt;
    size_t len;
    int rc = tv_hf_utf8(&b->nu8, &b->nu8ch, &b->nu8cap, &b->nt, 0, b->nt.n,
                        &len);
    size_t i = 0, pos = 0, n = x->n; /* i: code points; pos: bytes */
    tv_sp_win win = {0, 0, 0};
    while (rc == 0 && (i < n || pos < len)) {
        size_t at = len, k = 0;
        if ((all || a->nfree) && pos < len)
            rc = tv_acm_next(a, &b->hits, &win, b->nu8, pos, len, &at, &k);
        if (rc == 0 && at == len && i < n)
            rc = piece(t, b, i, n, out, offs);
        if (rc || at == len)
            break;
        const tv_special *p = &a->pat[k];
        size_t s = b->nu8ch[at], e = b->nu8ch[at + p->len];
        pos = at + p->len;
        if ((!all && (p->flags & TV_ADD_SPECIAL)) || s == UINT32_MAX ||
            e == UINT32_MAX)
            continue;
        if ((p->flags & TV_ADD_SINGLE) &&
            ((s > 0 && tv_hf_is_word(x->cp[s - 1])) ||
             (e < n && tv_hf_is_word(x->cp[e]))))
            continue;
        if (p->flags & TV_ADD_LSTRIP) { /* not into the token before */
            while (s > i && tv_hf_is_ws(x->cp[s - 1]))
                s--;
            s = s < i ? i : s;
        }
        if (p->flags & TV_ADD_RSTRIP)
            while (e < n && tv_hf_is_ws(x->cp[e]))
                e++;
        if (i < s)
            rc = piece(t, b, i, s, out, offs);
        if (rc == 0)
            rc = tv_ids_reserve(out, 1, offs);
        if (rc)
            break;
        if (offs) {
            out->offsets[out->n] = x->a0[s];
            out->stops[out->n] = x->a1[e - 1];
        }
        out->ids[out->n++] = p->id;
        i = e;
    }
    return rc;
}

/* The normalized text b->t[*cur] through Metaspace's text change (first:
 * as tv_metaspace_text takes it) and the pre-tokenizers: the words in
 * b->w[*wc]. */
static int words(const tv_hf *h, tv_hf_buf *b, int *cur, int first, int *wc)
{
    int rc = 0;
    if (h->npre && h->pre[0].kind == TV_P_METASPACE)
        rc = tv_metaspace_text(&h->pre[0].ms, b, cur, first);
    *wc = 0;
    return rc ? rc : tv_pretok_run(h->pre, h->npre, &b->t[*cur], b, wc);
}

/* Where the piece of u[i..end) that starts at i may end: the first place
 * at least cut bytes on between the middle two of four tv_hf.lcut
 * letters, or end. */
static size_t cut_at(const tv_hf *h, const unsigned char *u, size_t i,
                     size_t end, size_t cut)
{
    size_t j = end - i > cut ? i + cut : end;
    for (; j + 1 < end; j++) {
        if (u[j + 1] >= 0x80 || !h->lcut[u[j + 1]]) {
            j++; /* u[j + 1] ends every run of four that holds it */
            continue;
        }
        if (j >= i + 2 && u[j] < 0x80 && h->lcut[u[j]] && u[j - 1] < 0x80 &&
            h->lcut[u[j - 1]] && u[j - 2] < 0x80 && h->lcut[u[j - 2]])
            return j;
    }
    return end;
}

/* A Unigram stretch of u[i..end) longer than b->cut bytes: the stages run
 * on pieces of about that size (cut_at), so their arrays hold a piece,
 * not the stretch; the word that runs across a cut (the last of one
 * piece, which ends there, and the first of the next, which starts
 * there: the cut lies between letters that stay, in one word) goes to
 * the model a part at a time (uni_part). Metaspace prepends to the first
 * piece alone. The same tokens as stretch_all. */
static int stretch_cut(const tokvec_tokenizer *t, tv_hf_buf *b,
                       const unsigned char *u, size_t i, size_t end,
                       tokvec_tok_ids *out, int offs)
{
    const tv_hf *h = t->hf;
    size_t cut = b->cut ? b->cut : TV_HF_CUT;
    int open = 0, rc = 0; /* open: a word runs on from the last piece */
    b->pcarry = 1;
    b->pc.n = 0;
    for (size_t at = i; rc == 0 && at < end;) {
        size_t to = cut_at(h, u, at, end, cut);
        int cur = 0, wc = 0;
        if (tv_hf_text_reserve(&b->t[0], to - at) < 0) {
            rc = -ENOMEM;
            break;
        }
        utf8_in(u, at, to, &b->t[0]);
        rc = tv_norm_run(h->norm, h->nnorm, b, &cur);
        if (rc == 0)
            rc = words(h, b, &cur,
                       at > i                                ? -1
                       : b->t[cur].n && b->t[cur].a0[0] == 0 ? 1
                                                             : 0,
                       &wc);
        const tv_hf_text *x = &b->t[cur];
        size_t nw = rc ? 0 : b->wn[wc];
        const tv_hf_range *w = b->w[wc];
        if (rc == 0 && open && (nw == 0 || w[0].s > 0)) { /* it ended */
            rc = uni_part(t, b, x, 0, 0, 0, 1, out, offs);
            open = 0;
        }
        for (size_t k = 0; rc == 0 && k < nw; k++) {
            int in = k == 0 && open;
            int on = k + 1 == nw && to < end && w[k].e == x->n;
            if (in || on)
                rc = uni_part(t, b, x, w[k].s, w[k].e, !in, !on, out, offs);
            else
                rc = uni_word(t, b, x, w[k].s, w[k].e, out, offs);
            open = on;
        }
        at = to;
    }
    b->pcarry = 0;
    return rc;
}

/* u[i..end) through every stage, one after the other. */
static int stretch_all(const tokvec_tokenizer *t, tv_hf_buf *b,
                       const unsigned char *u, size_t i, size_t end,
                       tokvec_tok_ids *out, unsigned flags)
{
    const tv_hf *h = t->hf;
    int cur = 0;
    if ((h->lcuts &
         (flags & TOKVEC_TOK_OFFSETS ? TV_LCUT_OFFSETS : TV_LCUT_IDS)) &&
        end - i > (b->cut ? b->cut : TV_HF_CUT))
        return stretch_cut(t, b, u, i, end, out,
                           (flags & TOKVEC_TOK_OFFSETS) != 0);
    if (tv_hf_text_reserve(&b->t[0], end - i) < 0)
        return -ENOMEM;
    utf8_in(u, i, end, &b->t[0]);
    int rc = tv_norm_run(h->norm, h->nnorm, b, &cur);
    if (rc)
        return rc;
    if (h->nac.max)
        return tv_added_norm_run(t, b, cur, out, flags);
    return tv_hf_tail(t, b, cur, out, (flags & TOKVEC_TOK_OFFSETS) != 0);
}

int tv_hf_tail(const tokvec_tokenizer *t, tv_hf_buf *b, int cur,
               tokvec_tok_ids *out, int offs)
{
    const tv_hf *h = t->hf;
    int wc;
    int rc = words(h, b, &cur, b->t[cur].n && b->t[cur].a0[0] == 0, &wc);
    const tv_hf_text *x = &b->t[cur];
    for (size_t k = 0; rc == 0 && k < b->wn[wc]; k++)
        rc = h->model == TV_M_UNIGRAM
                 ? uni_word(t, b, x, b->w[wc][k].s, b->w[wc][k].e, out, offs)
             : h->model == TV_M_BPE ? tv_spbpe_word(t, b, x, b->w[wc][k].s,
                                                    b->w[wc][k].e, out, offs)
                                    : tv_wp_word(t, b, x, b->w[wc][k].s,
                                                 b->w[wc][k].e, out, offs);
    return rc;
}

/* Where the run of chunks (text between ASCII white space) from s ends
 * that wordpiece.c's one-pass path does not take (each holds a character
 * of class TV_A_SLOW or bytes that are not UTF-8: tv_wp_char): where the
 * next chunk that it takes begins, or end. */
static size_t slow_run(const tv_hf *h, const unsigned char *u, size_t s,
                       size_t end)
{
    size_t cs = s; /* the current chunk, ... */
    int ca = 1;    /* ... whether the path takes it */
    for (size_t j = s;; j++) {
        if (j < end && u[j] >= 0x80) {
            size_t m;
            if (tv_wp_char(h, u, j, end, &m) >> 24 != TV_A_SLOW)
                j += m - 1;
            else
                ca = 0;
            continue;
        }
        if (j < end && h->acls[u[j]] != TV_A_WS)
            continue;
        if (j > cs && ca && cs > s)
            return cs;
        if (j >= end)
            return end;
        cs = j + 1;
        ca = 1;
    }
}

/* u[i..end) through wordpiece.c's one-pass path, but the runs of chunks
 * it does not take, which go through every stage. Exact because white
 * space ends a word and no normalizer step of BertNormalizer looks past a
 * character of combining class 0 (NFD's reordering stops there). */
static int stretch_fast(const tokvec_tokenizer *t, tv_hf_buf *b,
                        const unsigned char *u, size_t i, size_t end,
                        tokvec_tok_ids *out, unsigned flags)
{
    int offs = (flags & TOKVEC_TOK_OFFSETS) != 0;
    while (i < end) {
        size_t stop;
        int rc = tv_wp_fast(t, b, u, i, end, out, offs, &stop);
        if (rc || stop >= end)
            return rc;
        i = slow_run(t->hf, u, stop, end);
        rc = stretch_all(t, b, u, stop, i, out, flags);
        if (rc)
            return rc;
    }
    return 0;
}

int tv_hf_stretch(const tokvec_tokenizer *t, tokvec_tok_state *s,
                  const unsigned char *u, size_t i, size_t end,
                  tokvec_tok_ids *out, unsigned flags)
{
    if (i >= end)
        return 0;
    if (!s->hf) {
        s->hf = calloc(1, sizeof *s->hf);
        if (!s->hf)
            return -ENOMEM;
    }
    /* normalized added tokens are matched in the normalized text: the
     * stage-by-stage path (tv_added_norm_run) */
    if (t->hf->ascii_fast && !t->hf->nac.max)
        return stretch_fast(t, s->hf, u, i, end, out, flags);
    return stretch_all(t, s->hf, u, i, end, out, flags);
}
