/* normalize.c -- Hugging Face normalizers over a text in flight (tok_hf.h):
 * BertNormalizer (clean_text, handle_chinese_chars, strip_accents,
 * lowercase), NFD, NFKD, NFC, NFKC, Lowercase, StripAccents, Strip,
 * Replace (string patterns and one-atom regexes), Prepend, Precompiled
 * (SentencePiece's charsmap, precompiled.c), Sequence. A run of two or
 * more one-character String Replaces is fused at parse into one
 * character map (TV_N_CHARMAP: each character's string through the
 * whole run, worked out once), one pass with the same characters and
 * spans as the Replaces one after the other.
 *
 * Must hold: each step gives exactly HF's characters, and each character
 * the original span HF's alignments give it. A step writes (character,
 * change) pairs as HF's NormalizedString::transform reads them: change 0
 * takes the span of the next input character, -k also drops the k after
 * it, +1 is inserted and takes the span of the input character before.
 * Unicode data: build/gen/tok_hfucd.h (tools/gen_hfucd.awk).
 * Also, as the lowest stage, what every stage and model shares: the
 * character classes, the text and state buffers (tv_hf_buf_get/_free), a
 * stage's refusal (tv_hf_bad), a word's UTF-8 and a token's append.
 * Threads: parsing runs once at open; running touches only the caller's
 * buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"
#include "tok_hfucd.h"

unsigned tv_hf_class(uint32_t cp)
{
    if (cp > 0x10FFFF)
        return 0;
    return tv_hf_stage2[(size_t)tv_hf_stage1[cp >> 8] * 256 + (cp & 255)];
}

int tv_hf_text_reserve(tv_hf_text *x, size_t n)
{
    if (n <= x->cap)
        return 0;
    size_t cap = x->cap ? x->cap : 256;
    while (cap < n)
        cap *= 2;
    uint32_t *a = realloc(x->cp, cap * sizeof *a);
    if (a)
        x->cp = a;
    uint32_t *b = a ? realloc(x->a0, cap * sizeof *b) : NULL;
    if (b)
        x->a0 = b;
    uint32_t *c = b ? realloc(x->a1, cap * sizeof *c) : NULL;
    if (!c)
        return -ENOMEM;
    x->a1 = c;
    x->cap = cap;
    return 0;
}

int tv_hf_buf_get(tokvec_tok_state *s)
{
    if (!s->hf)
        s->hf = calloc(1, sizeof *s->hf);
    return s->hf ? 0 : -ENOMEM;
}

void tv_hf_buf_free(tv_hf_buf *b)
{
    if (!b)
        return;
    for (int k = 0; k < 2; k++) {
        free(b->t[k].cp);
        free(b->t[k].a0);
        free(b->t[k].a1);
        free(b->w[k]);
    }
    free(b->u8);
    free(b->u8ch);
    free(b->pu8);
    free(b->uu8);
    free(b->fu8);
    free(b->fst);
    free(b->fen);
    tv_uni_work_free(b->uw);
    tv_uni_toks_free(&b->ut);
    free(b->nt.cp);
    free(b->nt.a0);
    free(b->nt.a1);
    free(b->nu8);
    free(b->nu8ch);
    free(b->lw.cp);
    free(b->lw.a0);
    free(b->lw.a1);
    free(b->lu8);
    free(b->pc.cp);
    free(b->pc.a0);
    free(b->pc.a1);
    free(b->hits.hit);
    free(b->hits2.hit);
    free(b);
}

int tv_hf_is_ws(uint32_t c)
{
    return (tv_hf_class(c) & TV_HF_WS) != 0;
}

int tv_hf_is_word(uint32_t c)
{
    return (tv_hf_class(c) & TV_HF_WORD) != 0;
}

int tv_hf_bad(char *err, size_t errlen, const char *where, const char *what)
{
    snprintf(err, errlen, "%s: %s", where, what);
    return TOKVEC_E_TOKENIZER;
}

/* c (not ASCII) as UTF-8 at o: its length. */
static inline size_t put_u8(unsigned char *o, uint32_t c)
{
    size_t m = c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    for (size_t k = m; k-- > 1;) {
        o[k] = (unsigned char)(0x80 | (c & 0x3F));
        c >>= 6;
    }
    o[0] = (unsigned char)((m == 2 ? 0xC0 : m == 3 ? 0xE0 : 0xF0) | c);
    return m;
}

size_t tv_hf_utf8_to(unsigned char *o, const tv_hf_text *x, size_t s, size_t e)
{
    size_t n = 0;
    for (size_t i = s; i < e; i++) {
        uint32_t c = x->cp[i];
        if (c < 0x80)
            o[n++] = (unsigned char)c;
        else
            n += put_u8(o + n, c);
    }
    return n;
}

int tv_hf_utf8(unsigned char **u8, uint32_t **u8ch, size_t *u8cap,
               const tv_hf_text *x, size_t s, size_t e, size_t *len)
{
    size_t need = 4 * (e - s) + 1;
    if (need > *u8cap) {
        size_t cap = *u8cap ? *u8cap : 256;
        while (cap < need)
            cap *= 2;
        unsigned char *u = realloc(*u8, cap);
        if (u)
            *u8 = u;
        uint32_t *ch = u && u8ch ? realloc(*u8ch, cap * sizeof *ch) : NULL;
        if (!u || (u8ch && !ch))
            return -ENOMEM;
        if (u8ch)
            *u8ch = ch;
        *u8cap = cap;
    }
    if (!u8ch) {
        *len = tv_hf_utf8_to(*u8, x, s, e);
        return 0;
    }
    unsigned char *o = *u8;
    uint32_t *oc = *u8ch;
    size_t n = 0;
    for (size_t i = s; i < e; i++) {
        uint32_t c = x->cp[i];
        size_t m = 1;
        oc[n] = (uint32_t)i;
        if (c < 0x80)
            o[n] = (unsigned char)c;
        else
            m = put_u8(o + n, c);
        for (size_t k = 1; k < m; k++)
            oc[n + k] = UINT32_MAX;
        n += m;
    }
    oc[n] = (uint32_t)e;
    *len = n;
    return 0;
}

int tv_hf_word_bytes(tv_hf_buf *b, const tv_hf_text *x, size_t s, size_t e,
                     size_t *len)
{
    return tv_hf_utf8(&b->u8, &b->u8ch, &b->u8cap, x, s, e, len);
}

void tv_hf_put_tok(tokvec_tok_ids *out, int offs, int32_t id,
                   const tv_hf_text *x, size_t s, size_t e)
{
    if (offs) {
        out->offsets[out->n] = x->a0[s];
        out->stops[out->n] = x->a1[e - 1];
    }
    out->ids[out->n++] = id;
}

/* --- the transform --- */

/* A step's answer when its output would be its input: nothing written,
 * the text stays where it is. */
#define SAME 2

typedef struct em {
    const tv_hf_text *in;
    tv_hf_text *out;
    size_t pos; /* next input character */
    /* Precompiled on a piece of a longer text (hf_pipeline.c): the spans
     * of the nc characters before it that HF's walk has yet to reach
     * (c0, c1), in front of in's: pos counts them first */
    const uint32_t *c0, *c1;
    size_t nc;
} em;

/* The span of character v of the carried ones, then in's. */
static inline void vspan(const em *e, size_t v, uint32_t *a0, uint32_t *a1)
{
    if (v < e->nc) {
        *a0 = e->c0[v];
        *a1 = e->c1[v];
    } else {
        *a0 = e->in->a0[v - e->nc];
        *a1 = e->in->a1[v - e->nc];
    }
}

static int put(em *e, uint32_t c, long chg)
{
    tv_hf_text *o = e->out;
    if (o->n == o->cap && tv_hf_text_reserve(o, o->n + 1) < 0)
        return -ENOMEM;
    size_t vn = e->nc + e->in->n;
    uint32_t a0 = 0, a1 = 0;
    if (chg > 0) {
        if (e->pos > 0) {
            vspan(e, e->pos - 1, &a0, &a1);
        } else if (vn) {
            vspan(e, 0, &a0, &a1);
            a1 = a0;
        }
    } else if (e->pos < vn) {
        vspan(e, e->pos, &a0, &a1);
        e->pos += (size_t)(1 - chg);
    }
    o->cp[o->n] = c;
    o->a0[o->n] = a0;
    o->a1[o->n] = a1;
    o->n++;
    return 0;
}

/* Keeps character i (its own span). */
static int keep(em *e, size_t i, uint32_t c)
{
    e->pos = i;
    return put(e, c, 0);
}

/* --- Unicode lookups --- */

static long bsearch32(const uint32_t *a, size_t n, size_t stride, uint32_t key,
                      int shift)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint32_t v = a[mid * stride] >> shift;
        if (v == key)
            return (long)mid;
        if (v < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static unsigned ccc(uint32_t c)
{
    if (c < 0x300 || !(tv_hf_class(c) & TV_HF_CCC))
        return 0;
    long k = bsearch32(tv_hf_ccc, TV_HF_NCCC, 1, c, 8);
    return k < 0 ? 0 : tv_hf_ccc[k] & 255;
}

#define SBASE 0xAC00
#define LBASE 0x1100
#define VBASE 0x1161
#define TBASE 0x11A7
#define NCOUNT 588
#define SCOUNT 11172

/* The full decomposition of c (compat: NFKD's) into d[0..4+]: count. */
static size_t decompose(uint32_t c, int compat, uint32_t d[32])
{
    if (c >= SBASE && c < SBASE + SCOUNT) {
        uint32_t s = c - SBASE;
        d[0] = LBASE + s / NCOUNT;
        d[1] = VBASE + (s % NCOUNT) / 28;
        if (s % 28) {
            d[2] = TBASE + s % 28;
            return 3;
        }
        return 2;
    }
    unsigned f = c < 0xC0 && !compat ? 0 : tv_hf_class(c);
    if (!(f & (compat ? TV_HF_KDEC : TV_HF_DEC))) {
        d[0] = c;
        return 1;
    }
    long k = bsearch32(tv_hf_dec_cp, TV_HF_NDEC, 1, c, 0);
    if (k < 0) {
        d[0] = c;
        return 1;
    }
    const uint16_t *at = tv_hf_dec_at + 4 * k + (compat ? 2 : 0);
    size_t n = at[1] < 32 ? at[1] : 32;
    for (size_t i = 0; i < n; i++)
        d[i] = tv_hf_dec_data[at[0] + i];
    return n;
}

static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a >= LBASE && a < LBASE + 19 && b >= VBASE && b < VBASE + 21)
        return SBASE + ((a - LBASE) * 21 + (b - VBASE)) * 28;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % 28 == 0 &&
        b > TBASE && b < TBASE + 28)
        return a + (b - TBASE);
    size_t lo = 0, hi = TV_HF_NCOMP;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uint32_t *e = tv_hf_comp + 3 * mid;
        if (e[0] == a && e[1] == b)
            return e[2];
        if (e[0] < a || (e[0] == a && e[1] < b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* --- NFD / NFKD / NFC / NFKC --- */

typedef struct dch {
    uint32_t c;    /* the character; once gone, the index it merged into */
    uint32_t from; /* input index; at the end, input characters consumed */
    unsigned char first, ccc, gone;
} dch;

/* Canonical ordering of d[s..e), a run of non-zero classes: a stable
 * sort by class (insertion for short runs, counting for long ones, so a
 * hostile run of marks costs linear time). */
static int order_run(dch *d, size_t s, size_t e)
{
    if (e - s < 2)
        return 0;
    if (e - s <= 32) {
        for (size_t i = s + 1; i < e; i++) {
            dch x = d[i];
            size_t at = i;
            while (at > s && d[at - 1].ccc > x.ccc) {
                d[at] = d[at - 1];
                at--;
            }
            d[at] = x;
        }
        return 0;
    }
    size_t count[257] = {0};
    dch *tmp = malloc((e - s) * sizeof *tmp);
    if (!tmp)
        return -ENOMEM;
    for (size_t i = s; i < e; i++)
        count[d[i].ccc + 1]++;
    for (int c = 1; c < 257; c++)
        count[c] += count[c - 1];
    for (size_t i = s; i < e; i++)
        tmp[count[d[i].ccc]++] = d[i];
    memcpy(d + s, tmp, (e - s) * sizeof *tmp);
    free(tmp);
    return 0;
}

/* Decomposes in (canonical order) into *d; count or -ENOMEM. */
static long decompose_all(const tv_hf_text *in, int compat, dch **d,
                          size_t *dcap)
{
    size_t n = 0, run = 0; /* the current run of non-zero classes */
    for (size_t i = 0; i < in->n; i++) {
        uint32_t tmp[32];
        size_t k = in->cp[i] < 0xA0 ? (tmp[0] = in->cp[i], 1)
                                    : decompose(in->cp[i], compat, tmp);
        if (n + k > *dcap) {
            size_t cap = *dcap ? *dcap * 2 : 256;
            while (cap < n + k)
                cap *= 2;
            dch *nd = realloc(*d, cap * sizeof *nd);
            if (!nd)
                return -ENOMEM;
            *d = nd;
            *dcap = cap;
        }
        for (size_t j = 0; j < k; j++) {
            dch x = {tmp[j], (uint32_t)i, j == 0, (unsigned char)ccc(tmp[j]),
                     0};
            if (!x.ccc) {
                if (order_run(*d, run, n) < 0)
                    return -ENOMEM;
                run = n + 1;
            }
            (*d)[n++] = x;
        }
    }
    return order_run(*d, run, n) < 0 ? -ENOMEM : (long)n;
}

static int unicode_norm(const tv_hf_text *in, tv_hf_text *out, int compat,
                        int comp)
{
    dch *d = NULL;
    size_t dcap = 0;
    long nd = decompose_all(in, compat, &d, &dcap);
    if (nd < 0) {
        free(d);
        return -ENOMEM;
    }
    size_t n = (size_t)nd;
    if (comp) { /* canonical composition */
        long st = -1;
        int lastcc = -1; /* class of the last character left since st */
        for (size_t i = 0; i < n; i++) {
            int cc = d[i].ccc;
            if (st >= 0 && lastcc < cc) {
                uint32_t c = compose(d[st].c, d[i].c);
                if (c) {
                    d[st].c = c;
                    d[i].gone = 1;
                    d[i].c = (uint32_t)st; /* merged into st */
                    continue;
                }
            }
            if (cc == 0) {
                st = (long)i;
                lastcc = -1;
            } else {
                lastcc = cc;
            }
        }
    }
    /* input characters each output consumes: the ones whose first piece
     * it holds (composition merged pieces into the starter they follow) */
    for (size_t i = 0; i < n; i++)
        d[i].from = d[i].first && !d[i].gone;
    for (size_t i = 0; comp && i < n; i++)
        if (d[i].gone && d[i].first)
            d[d[i].c].from++;
    em e = {.in = in, .out = out};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!d[i].gone)
            rc = put(&e, d[i].c, 1 - (long)d[i].from);
    free(d);
    return rc;
}

/* --- Bert, Lowercase, StripAccents, Strip, Replace, Prepend --- */

static int cjk(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static int clean_text(const tv_hf_text *in, tv_hf_text *out)
{
    em e = {.in = in, .out = out};
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->cp[i];
        if (c >= 0x20 && c < 0x7F) {
            if (keep(&e, i, c) < 0)
                return -ENOMEM;
            continue;
        }
        unsigned f = tv_hf_class(c);
        int tnr = c == '\t' || c == '\n' || c == '\r';
        if (c == 0 || c == 0xFFFD || ((f & TV_HF_CTRL) && !tnr))
            continue;
        if (keep(&e, i, (tnr || (f & TV_HF_WS)) ? ' ' : c) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int chinese(const tv_hf_text *in, tv_hf_text *out)
{
    em e = {.in = in, .out = out};
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->cp[i];
        int rc = cjk(c) ? (put(&e, ' ', 0) | put(&e, c, 1) | put(&e, ' ', 1))
                        : put(&e, c, 0);
        if (rc)
            return -ENOMEM;
    }
    return 0;
}

static int filter_marks(const tv_hf_text *in, tv_hf_text *out, unsigned cls)
{
    em e = {.in = in, .out = out};
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->cp[i];
        if (c >= 0x300 && (tv_hf_class(c) & cls))
            continue;
        if (keep(&e, i, c) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int lower(const tv_hf_text *in, tv_hf_text *out)
{
    em e = {.in = in, .out = out};
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->cp[i];
        if (c < 0x80) {
            if (put(&e, c >= 'A' && c <= 'Z' ? c + 32 : c, 0) < 0)
                return -ENOMEM;
            continue;
        }
        long k = (tv_hf_class(c) & TV_HF_LOWER)
                     ? bsearch32(tv_hf_lower, TV_HF_NLOWER, 4, c, 0)
                     : -1;
        if (k < 0) {
            if (put(&e, c, 0) < 0)
                return -ENOMEM;
            continue;
        }
        for (int j = 0; j < 3; j++) {
            uint32_t m = tv_hf_lower[4 * k + 1 + j];
            if ((j == 0 || m) && put(&e, m, j > 0) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

static int strip(const tv_hf_text *in, tv_hf_text *out, unsigned side)
{
    size_t s = 0, n = in->n;
    while ((side & 1) && s < n && (tv_hf_class(in->cp[s]) & TV_HF_WS))
        s++;
    while ((side & 2) && n > s && (tv_hf_class(in->cp[n - 1]) & TV_HF_WS))
        n--;
    if (s == 0 && n == in->n)
        return SAME;
    if (tv_hf_text_reserve(out, out->n + (n - s)) < 0)
        return -ENOMEM;
    memcpy(out->cp + out->n, in->cp + s, (n - s) * sizeof *in->cp);
    memcpy(out->a0 + out->n, in->a0 + s, (n - s) * sizeof *in->a0);
    memcpy(out->a1 + out->n, in->a1 + s, (n - s) * sizeof *in->a1);
    out->n += n - s;
    return 0;
}

/* The length of the match of r at in[i..], 0 for none. */
static size_t match_at(const tv_norm *r, const tv_hf_text *in, size_t i)
{
    if (!r->re)
        return r->npat && i + r->npat <= in->n && in->cp[i] == r->pat[0] &&
                       !memcmp(in->cp + i, r->pat, r->npat * sizeof *r->pat)
                   ? r->npat
                   : 0;
    size_t k = 0;
    while (i + k < in->n && k < r->re_max &&
           (r->re_ws ? (tv_hf_class(in->cp[i + k]) & TV_HF_WS) != 0
                     : in->cp[i + k] == r->re_c))
        k++;
    return k >= r->re_min ? k : 0;
}

/* Appends c with the span a0..a1 (room made by the caller). */
static inline void emit(tv_hf_text *o, uint32_t c, uint32_t a0, uint32_t a1)
{
    o->cp[o->n] = c;
    o->a0[o->n] = a0;
    o->a1[o->n] = a1;
    o->n++;
}

/* The first i (of in[0..n)) where r matches, n if nowhere. */
static size_t first_match(const tv_norm *r, const tv_hf_text *in)
{
    if (!r->re && r->npat) { /* the first character alone, then the rest */
        for (size_t i = 0; i < in->n; i++)
            if (in->cp[i] == r->pat[0] && match_at(r, in, i))
                return i;
        return in->n;
    }
    for (size_t i = 0; i < in->n; i++) {
        if (r->re_ws ? !(tv_hf_class(in->cp[i]) & TV_HF_WS)
                     : in->cp[i] != r->re_c)
            continue; /* no match starts here */
        if (match_at(r, in, i))
            return i;
    }
    return in->n;
}

/* in[0..i) into out as it is (out empty, room for i). */
static void copy_head(const tv_hf_text *in, tv_hf_text *out, size_t i)
{
    memcpy(out->cp, in->cp, i * sizeof *in->cp);
    memcpy(out->a0, in->a0, i * sizeof *in->a0);
    memcpy(out->a1, in->a1, i * sizeof *in->a1);
    out->n = i;
}

static int replace(const tv_norm *r, const tv_hf_text *in, tv_hf_text *out)
{
    size_t i = first_match(r, in);
    if (i == in->n)
        return SAME;
    if (tv_hf_text_reserve(out, i + r->nrep + 1 + (in->n - i)) < 0)
        return -ENOMEM;
    copy_head(in, out, i);
    while (i < in->n) {
        if (out->cap - out->n < r->nrep + 1 &&
            tv_hf_text_reserve(out, out->n + r->nrep + 1 + (in->n - i)) < 0)
            return -ENOMEM;
        size_t m = match_at(r, in, i);
        if (m) { /* the match is gone; the new text takes the span of its
                  * last character */
            uint32_t a0 = in->a0[i + m - 1], a1 = in->a1[i + m - 1];
            for (size_t k = 0; k < r->nrep; k++)
                emit(out, r->rep[k], a0, a1);
            i += m;
            continue;
        }
        emit(out, in->cp[i], in->a0[i], in->a1[i]);
        i++;
    }
    return 0;
}

/* A piece of a longer text done (b->pcarry): the characters HF's walk has
 * not reached (it lags one behind for each character dropped without a
 * change) carried to the next piece, whose characters take their spans
 * first, as in the whole text. */
static int pc_carry(tv_hf_buf *b, const em *e)
{
    tv_hf_text *c = &b->pc; /* its a0 and a1 */
    size_t vn = e->nc + e->in->n, k = e->pos < vn ? vn - e->pos : 0;
    size_t kept = e->pos < e->nc ? e->nc - e->pos : 0;
    if (kept) { /* the carried ones not reached yet, down */
        memmove(c->a0, c->a0 + e->pos, kept * sizeof *c->a0);
        memmove(c->a1, c->a1 + e->pos, kept * sizeof *c->a1);
    }
    if (tv_hf_text_reserve(c, k) < 0)
        return -ENOMEM;
    size_t from = e->pos > e->nc ? e->pos - e->nc : 0; /* in's, on */
    if (k > kept) {
        memcpy(c->a0 + kept, e->in->a0 + from, (k - kept) * sizeof *c->a0);
        memcpy(c->a1 + kept, e->in->a1 + from, (k - kept) * sizeof *c->a1);
    }
    c->n = k;
    return 0;
}

/* SentencePiece's charsmap (precompiled.c gives HF's change list); the
 * text's UTF-8 in b->pu8 (kept for the next call). */
static int precompiled(const tv_norm *r, const tv_hf_text *in, tv_hf_text *out,
                       tv_hf_buf *b)
{
    size_t n;
    if (tv_hf_utf8(&b->pu8, NULL, &b->pu8cap, in, 0, in->n, &n) < 0)
        return -ENOMEM;
    const unsigned char *u = b->pu8;
    tv_pc_change *v = NULL;
    size_t nv = 0;
    int rc = tv_precompiled_changes(r->pc, u, n, &v, &nv);
    em e = {in, out, 0, b->pc.a0, b->pc.a1, b->pcarry ? b->pc.n : 0};
    if (rc == 0 && e.nc == 0) /* nothing changes */
        return SAME;
    if (rc == 0) /* nothing changes, but the spans come late */
        for (size_t i = 0; rc == 0 && i < in->n; i++)
            rc = put(&e, in->cp[i], 0);
    if (rc > 0)
        rc = 0;
    for (size_t k = 0; rc == 0 && k < nv; k++)
        rc = put(&e, v[k].cp, v[k].change);
    free(v);
    return rc == 0 && b->pcarry ? pc_carry(b, &e) : rc;
}

static int prepend(const tv_norm *r, const tv_hf_text *in, tv_hf_text *out)
{
    em e = {.in = in, .out = out};
    if (in->n) {
        for (size_t k = 0; k < r->nrep; k++)
            if (put(&e, r->rep[k], k > 0) < 0)
                return -ENOMEM;
        if (r->nrep) {
            e.pos = 1;
            if (put(&e, in->cp[0], 1) < 0)
                return -ENOMEM;
        }
    }
    for (size_t i = r->nrep ? 1 : 0; i < in->n; i++)
        if (keep(&e, i, in->cp[i]) < 0)
            return -ENOMEM;
    return 0;
}

/* Fused one-character Replaces (TV_N_CHARMAP): each character becomes
 * its string, every output character with the input character's span --
 * what the Replaces one after the other give (a Replace of one character
 * is a map of characters, its content taking the replaced one's span). */
/* The character of the map that c is, -1 if none. */
static inline long charmap_at(const tv_norm *r, uint32_t c)
{
    if (c < 0x80)
        return r->amap[c];
    if (r->npat && c >= r->pat[0] && c <= r->pat[r->npat - 1])
        return bsearch32(r->pat, r->npat, 1, c, 0);
    return -1;
}

static int charmap(const tv_norm *r, const tv_hf_text *in, tv_hf_text *out)
{
    size_t i = 0;
    while (i < in->n && charmap_at(r, in->cp[i]) < 0)
        i++;
    if (i == in->n)
        return SAME;
    if (tv_hf_text_reserve(out, i + (in->n - i) * 2) < 0)
        return -ENOMEM;
    copy_head(in, out, i);
    for (; i < in->n; i++) {
        uint32_t c = in->cp[i];
        long k = charmap_at(r, c);
        size_t a = k < 0 ? 0 : r->moff[k], b = k < 0 ? 1 : r->moff[k + 1];
        if (out->cap - out->n < b - a &&
            tv_hf_text_reserve(out, out->n + (b - a) + (in->n - i)) < 0)
            return -ENOMEM;
        if (k < 0)
            emit(out, c, in->a0[i], in->a1[i]);
        else
            for (size_t j = a; j < b; j++)
                emit(out, r->rep[j], in->a0[i], in->a1[i]);
    }
    return 0;
}

/* What BertNormalizer with flags f makes of the non-ASCII character c, on
 * its own, into o[] (up to TV_NB_MAX_OUT characters): their count (0:
 * dropped), or -1 when a character kept after strip_accents has a
 * non-zero combining class (NFD's reordering may then involve its
 * neighbours). */
int tv_norm_bert_char(unsigned f, uint32_t c, uint32_t *o)
{
    int clean = (f & TV_NB_CLEAN) != 0, lo = (f & TV_NB_LOWER) != 0;
    unsigned cls = tv_hf_class(c);
    if (clean && (c == 0xFFFD || (cls & TV_HF_CTRL)))
        return 0;
    if (clean && (cls & TV_HF_WS)) {
        o[0] = ' ';
        return 1;
    }
    int han = (f & TV_NB_CJK) && cjk(c), n = 0;
    if (han)
        o[n++] = ' ';
    uint32_t d[32];
    size_t nd = 1;
    d[0] = c;
    if (f & TV_NB_STRIP)
        nd = decompose(c, 0, d);
    for (size_t k = 0; k < nd; k++) {
        if (f & TV_NB_STRIP) {
            if (d[k] >= 0x300 && (tv_hf_class(d[k]) & TV_HF_MN))
                continue;
            if (ccc(d[k]))
                return -1;
        }
        long m = lo && (tv_hf_class(d[k]) & TV_HF_LOWER)
                     ? bsearch32(tv_hf_lower, TV_HF_NLOWER, 4, d[k], 0)
                     : -1;
        if (m < 0) {
            o[n++] = d[k] >= 'A' && d[k] <= 'Z' && lo ? d[k] + 32 : d[k];
            continue;
        }
        for (int j = 0; j < 3; j++) {
            uint32_t l = tv_hf_lower[4 * m + 1 + j];
            if (j == 0 || l)
                o[n++] = l;
        }
    }
    if (han)
        o[n++] = ' ';
    return n;
}

/* BertNormalizer in one pass, each character's output with its own span.
 * That is HF's answer unless a character kept after strip_accents has a
 * non-zero combining class (NFD's reordering can then move spans among
 * marks): 1 then, and the caller runs the steps one by one. */
static int bert_fused(unsigned f, const tv_hf_text *in, tv_hf_text *out)
{
    int clean = (f & TV_NB_CLEAN) != 0, lo = (f & TV_NB_LOWER) != 0;
    uint32_t o[TV_NB_MAX_OUT];
    for (size_t i = 0; i < in->n; i++) {
        if (out->cap - out->n < TV_NB_MAX_OUT &&
            tv_hf_text_reserve(out, out->n + TV_NB_MAX_OUT + (in->n - i) * 2) <
                0)
            return -ENOMEM;
        uint32_t c = in->cp[i], a0 = in->a0[i], a1 = in->a1[i];
        if (c < 0x80) {
            int tnr = c == '\t' || c == '\n' || c == '\r';
            if (clean && (c == 0 || c == 0x7F || (c < 0x20 && !tnr)))
                continue;
            if (clean && tnr)
                c = ' ';
            if (lo && c >= 'A' && c <= 'Z')
                c += 32;
            emit(out, c, a0, a1);
            continue;
        }
        int n = tv_norm_bert_char(f, c, o);
        if (n < 0)
            return 1;
        for (int k = 0; k < n; k++)
            emit(out, o[k], a0, a1);
    }
    return 0;
}

static int step(const tv_norm *v, const tv_hf_text *in, tv_hf_text *out,
                tv_hf_buf *b)
{
    switch (v->kind) {
    case TV_N_NFD:
        return unicode_norm(in, out, 0, 0);
    case TV_N_NFKD:
        return unicode_norm(in, out, 1, 0);
    case TV_N_NFC:
        return unicode_norm(in, out, 0, 1);
    case TV_N_NFKC:
        return unicode_norm(in, out, 1, 1);
    case TV_N_LOWER:
        return lower(in, out);
    case TV_N_STRIP_ACCENTS:
        return filter_marks(in, out, TV_HF_MARK);
    case TV_N_STRIP:
        return strip(in, out, v->flags);
    case TV_N_REPLACE:
        return replace(v, in, out);
    case TV_N_PREPEND:
        return prepend(v, in, out);
    case TV_N_PRECOMPILED:
        return precompiled(v, in, out, b);
    case TV_N_CHARMAP:
        return charmap(v, in, out);
    default:
        return -EINVAL;
    }
}

/* Whether BertNormalizer with flags f leaves in as it is: printable ASCII,
 * and no capital letter when it lowercases. */
static int bert_same(unsigned f, const tv_hf_text *in)
{
    uint32_t lo = (f & TV_NB_LOWER) ? 'A' : 0x7F, hi = 'Z';
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->cp[i];
        if (c < 0x20 || c >= 0x7F || (c >= lo && c <= hi))
            return 0;
    }
    return 1;
}

int tv_norm_run(const tv_norm *v, size_t n, tv_hf_buf *b, int *cur)
{
    for (size_t k = 0; k < n; k++) {
        int steps[4], ns = 0;
        if (v[k].kind == TV_N_BERT && bert_same(v[k].flags, &b->t[*cur]))
            continue;
        if (v[k].kind == TV_N_BERT) {
            tv_hf_text *in = &b->t[*cur], *out = &b->t[!*cur];
            out->n = 0;
            int rc = tv_hf_text_reserve(out, in->n + 64);
            if (rc == 0)
                rc = bert_fused(v[k].flags, in, out);
            if (rc < 0)
                return rc;
            if (rc == 0) {
                *cur = !*cur;
                continue;
            }
        }
        if (v[k].kind != TV_N_BERT) {
            steps[ns++] = -1;
        } else {
            unsigned f = v[k].flags;
            if (f & TV_NB_CLEAN)
                steps[ns++] = 0;
            if (f & TV_NB_CJK)
                steps[ns++] = 1;
            if (f & TV_NB_STRIP)
                steps[ns++] = 2;
            if (f & TV_NB_LOWER)
                steps[ns++] = 3;
        }
        for (int j = 0; j < ns; j++) {
            tv_hf_text *in = &b->t[*cur], *out = &b->t[!*cur];
            out->n = 0;
            if (tv_hf_text_reserve(out, in->n + 16) < 0)
                return -ENOMEM;
            int rc;
            if (steps[j] == 0) {
                rc = clean_text(in, out);
            } else if (steps[j] == 1) {
                rc = chinese(in, out);
            } else if (steps[j] == 2) { /* NFD, then drop Mn */
                rc = unicode_norm(in, out, 0, 0);
                if (rc == 0) {
                    tv_hf_text *t2 = in;
                    t2->n = 0;
                    rc = filter_marks(out, t2, TV_HF_MN);
                    if (rc == 0)
                        continue; /* the result is back in *cur */
                }
            } else if (steps[j] == 3) {
                rc = lower(in, out);
            } else {
                rc = step(&v[k], in, out, b);
            }
            if (rc == SAME)
                continue; /* the text is as it was, in *cur */
            if (rc)
                return rc;
            *cur = !*cur;
        }
    }
    return 0;
}

/* --- parsing --- */

/* UTF-8 string s as code points (malloc'd). */
static int to_cps(const char *s, uint32_t **out, size_t *n)
{
    size_t len = strlen(s), k = 0;
    uint32_t *v = malloc((len + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) { /* jansson gives valid UTF-8 */
        uint32_t c = p[i];
        size_t m = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (m > 1)
            c &= 0x3F >> (m - 1);
        for (size_t j = 1; j < m && i + j < len; j++)
            c = c << 6 | (p[i + j] & 0x3F);
        v[k++] = c;
        i += m;
    }
    *out = v;
    *n = k;
    return 0;
}

static int parse_one(json_t *j, const char *where, tv_norm **v, size_t *n,
                     size_t *cap, char *err, size_t errlen);

/* A Regex pattern tokvec runs: one atom (a character, an escaped one, \s)
 * and one quantifier (none, +, {n}, {n,}, {n,m}) that needs at least one
 * character. 1 with x's re fields set, else 0. */
static int regex(const char *re, tv_norm *x)
{
    const unsigned char *p = (const unsigned char *)re;
    static const char meta[] = ".[](){}*+?|^$\\";
    x->re = 1;
    if (p[0] == '\\' && p[1] == 's') {
        x->re_ws = 1;
        p += 2;
    } else if (p[0] == '\\' && p[1] && strchr(meta, p[1])) {
        x->re_c = p[1];
        p += 2;
    } else if (p[0] && p[0] < 0x80 && !strchr(meta, p[0])) {
        x->re_c = *p++;
    } else if (p[0] >= 0xC0) { /* one non-ASCII character (valid UTF-8) */
        size_t m = p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
        uint32_t c = p[0] & (0x3F >> (m - 1));
        for (size_t k = 1; k < m; k++)
            c = c << 6 | (p[k] & 0x3F);
        x->re_c = c;
        p += m;
    } else {
        return 0;
    }
    x->re_min = x->re_max = 1;
    if (*p == '+') {
        x->re_max = SIZE_MAX;
        p++;
    } else if (*p == '{') {
        char *e;
        unsigned long a = strtoul((const char *)p + 1, &e, 10), b = a;
        if (e == (const char *)p + 1 || a == 0)
            return 0;
        if (*e == ',') {
            const char *f = e + 1;
            b = *f == '}' ? (unsigned long)-1 : strtoul(f, &e, 10);
            if (*f == '}')
                e = (char *)f;
            else if (e == f || b < a)
                return 0;
        }
        if (*e != '}')
            return 0;
        x->re_min = a;
        x->re_max = b == (unsigned long)-1 ? SIZE_MAX : b;
        p = (const unsigned char *)e + 1;
    }
    return *p == '\0';
}

static int add(tv_norm **v, size_t *n, size_t *cap, tv_norm x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        tv_norm *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int parse_one(json_t *j, const char *where, tv_norm **v, size_t *n,
                     size_t *cap, char *err, size_t errlen)
{
    const char *ty = json_string_value(json_object_get(j, "type"));
    char msg[160];
    tv_norm x = {0};
    if (!ty)
        return tv_hf_bad(err, errlen, where, "a normalizer without a type");
    if (!strcmp(ty, "Sequence")) {
        json_t *arr = json_object_get(j, "normalizers"), *e;
        size_t k;
        if (!json_is_array(arr))
            return tv_hf_bad(err, errlen, where,
                             "Sequence without normalizers");
        json_array_foreach(arr, k, e) {
            char w[256];
            snprintf(w, sizeof w, "%s.normalizers[%zu]", where, k);
            int rc = parse_one(e, w, v, n, cap, err, errlen);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (!strcmp(ty, "BertNormalizer")) {
        json_t *sa = json_object_get(j, "strip_accents");
        int lc = !json_is_false(json_object_get(j, "lowercase"));
        x.kind = TV_N_BERT;
        x.flags = (json_is_false(json_object_get(j, "clean_text"))
                       ? 0
                       : TV_NB_CLEAN) |
                  (json_is_false(json_object_get(j, "handle_chinese_chars"))
                       ? 0
                       : TV_NB_CJK) |
                  (lc ? TV_NB_LOWER : 0);
        if (json_is_true(sa) || ((!sa || json_is_null(sa)) && lc))
            x.flags |= TV_NB_STRIP;
    } else if (!strcmp(ty, "NFD")) {
        x.kind = TV_N_NFD;
    } else if (!strcmp(ty, "NFKD")) {
        x.kind = TV_N_NFKD;
    } else if (!strcmp(ty, "NFC")) {
        x.kind = TV_N_NFC;
    } else if (!strcmp(ty, "NFKC")) {
        x.kind = TV_N_NFKC;
    } else if (!strcmp(ty, "Lowercase")) {
        x.kind = TV_N_LOWER;
    } else if (!strcmp(ty, "StripAccents")) {
        x.kind = TV_N_STRIP_ACCENTS;
    } else if (!strcmp(ty, "Strip")) {
        x.kind = TV_N_STRIP;
        x.flags = (json_is_true(json_object_get(j, "strip_left")) ? 1 : 0) |
                  (json_is_true(json_object_get(j, "strip_right")) ? 2 : 0);
    } else if (!strcmp(ty, "Replace")) {
        json_t *pat = json_object_get(j, "pattern");
        const char *s = json_string_value(json_object_get(pat, "String"));
        const char *re = json_string_value(json_object_get(pat, "Regex"));
        const char *c = json_string_value(json_object_get(j, "content"));
        if ((!s && !(re && regex(re, &x))) || !c)
            return tv_hf_bad(err, errlen, where,
                             "Replace: the pattern is not a String or a Regex "
                             "of one character or \\s repeated (+, {n}, {n,}, "
                             "{n,m})");
        if (re)
            s = "";
        x.kind = TV_N_REPLACE;
        if (to_cps(s, &x.pat, &x.npat) < 0 || to_cps(c, &x.rep, &x.nrep) < 0) {
            free(x.pat);
            return -ENOMEM;
        }
    } else if (!strcmp(ty, "Precompiled")) {
        char why[160] = "";
        x.kind = TV_N_PRECOMPILED;
        int rc = tv_precompiled_from_json(j, &x.pc, why, sizeof why);
        if (rc == TOKVEC_E_TOKENIZER)
            return tv_hf_bad(err, errlen, where, why);
        if (rc)
            return rc;
    } else if (!strcmp(ty, "Prepend")) {
        const char *c = json_string_value(json_object_get(j, "prepend"));
        if (!c)
            return tv_hf_bad(err, errlen, where, "Prepend without a string");
        x.kind = TV_N_PREPEND;
        if (to_cps(c, &x.rep, &x.nrep) < 0)
            return -ENOMEM;
    } else {
        snprintf(msg, sizeof msg, "normalizer %.40s is not supported", ty);
        return tv_hf_bad(err, errlen, where, msg);
    }
    int rc = add(v, n, cap, x);
    if (rc) {
        free(x.pat);
        free(x.rep);
        tv_precompiled_free(x.pc);
    }
    return rc;
}

/* Frees what steps v[0..n) hold (not v). */
static void free_steps(tv_norm *v, size_t n)
{
    for (size_t k = 0; v && k < n; k++) {
        free(v[k].pat);
        free(v[k].rep);
        free(v[k].moff);
        free(v[k].amap);
        tv_precompiled_free(v[k].pc);
    }
}

/* A one-character String Replace (fusable into a TV_N_CHARMAP). */
static int one_char(const tv_norm *x)
{
    return x->kind == TV_N_REPLACE && !x->re && x->npat == 1;
}

#define CHARMAP_MAX 4096 /* characters one input character may become */

/* What character c becomes through the Replaces r[0..n) in turn, into
 * *s (malloc'd, *ns characters): 0, 1 past CHARMAP_MAX, -ENOMEM. */
static int map_through(const tv_norm *r, size_t n, uint32_t c, uint32_t **s,
                       size_t *ns)
{
    uint32_t *a = malloc(CHARMAP_MAX * sizeof *a);
    uint32_t *b = malloc(CHARMAP_MAX * sizeof *b);
    int rc = 0;
    size_t na = 1;
    if (!a || !b) {
        rc = -ENOMEM;
        goto cleanup;
    }
    a[0] = c;
    for (size_t k = 0; k < n && rc == 0; k++) {
        size_t nb = 0;
        for (size_t i = 0; i < na && rc == 0; i++) {
            const uint32_t *p = a[i] == r[k].pat[0] ? r[k].rep : a + i;
            size_t m = a[i] == r[k].pat[0] ? r[k].nrep : 1;
            if (m > CHARMAP_MAX - nb)
                rc = 1;
            else
                memcpy(b + nb, p, m * sizeof *p);
            nb += m;
        }
        uint32_t *t = a;
        a = b;
        b = t;
        na = nb;
    }
    if (rc == 0) {
        *s = a;
        *ns = na;
        a = NULL;
    }
cleanup:
    free(a);
    free(b);
    return rc;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* The TV_N_CHARMAP of the Replaces r[0..n) into *x: 0, 1 when a
 * character would grow past CHARMAP_MAX (then left as they are),
 * -ENOMEM. */
static int fuse_run(const tv_norm *r, size_t n, tv_norm *x)
{
    int rc = 0;
    size_t nk = 0, total = 0;
    tv_norm m = {0};
    m.kind = TV_N_CHARMAP;
    m.pat = malloc(n * sizeof *m.pat);
    m.moff = malloc((n + 1) * sizeof *m.moff);
    m.amap = malloc(128 * sizeof *m.amap);
    if (!m.pat || !m.moff || !m.amap) {
        rc = -ENOMEM;
        goto cleanup;
    }
    for (size_t k = 0; k < n; k++)
        m.pat[nk++] = r[k].pat[0];
    qsort(m.pat, nk, sizeof *m.pat, cmp_u32);
    size_t d = 0;
    for (size_t k = 0; k < nk; k++)
        if (d == 0 || m.pat[d - 1] != m.pat[k])
            m.pat[d++] = m.pat[k];
    m.npat = d;
    for (int c = 0; c < 128; c++)
        m.amap[c] = -1;
    m.moff[0] = 0;
    for (size_t k = 0; k < m.npat; k++) {
        uint32_t *s = NULL;
        size_t ns = 0;
        rc = map_through(r, n, m.pat[k], &s, &ns);
        if (rc)
            goto cleanup;
        uint32_t *g = realloc(m.rep, (total + ns + 1) * sizeof *g);
        if (!g) {
            free(s);
            rc = -ENOMEM;
            goto cleanup;
        }
        m.rep = g;
        if (ns)
            memcpy(m.rep + total, s, ns * sizeof *s);
        free(s);
        total += ns;
        m.moff[k + 1] = (uint32_t)total;
        if (m.pat[k] < 128)
            m.amap[m.pat[k]] = (int32_t)k;
    }
    m.nrep = total;
    *x = m;
    memset(&m, 0, sizeof m);
cleanup:
    free(m.pat);
    free(m.rep);
    free(m.moff);
    free(m.amap);
    return rc;
}

/* Each run of two or more one-character String Replaces becomes one
 * TV_N_CHARMAP step (the same characters and spans, one pass). */
static int fuse(tv_norm *v, size_t *n)
{
    size_t w = 0;
    for (size_t i = 0; i < *n;) {
        size_t e = i;
        while (e < *n && one_char(&v[e]))
            e++;
        tv_norm x = {0};
        int rc = e - i >= 2 ? fuse_run(v + i, e - i, &x) : 1;
        if (rc < 0) { /* the steps not yet seen close the gap, as they are */
            memmove(v + w, v + i, (*n - i) * sizeof *v);
            *n = w + (*n - i);
            return rc;
        }
        if (rc == 0) {
            free_steps(v + i, e - i);
            v[w++] = x;
            i = e;
            continue;
        }
        if (e == i)
            e = i + 1;
        while (i < e)
            v[w++] = v[i++];
    }
    *n = w;
    return 0;
}

int tv_norm_parse(json_t *j, const char *where, tv_norm **out, size_t *n,
                  char *err, size_t errlen)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    if (!j || json_is_null(j))
        return 0;
    int rc = parse_one(j, where, out, n, &cap, err, errlen);
    if (rc == 0)
        rc = fuse(*out, n);
    if (rc) {
        tv_norm_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void tv_norm_free(tv_norm *v, size_t n)
{
    free_steps(v, n);
    free(v);
}
