/* wordpiece.c -- the WordPiece model of Hugging Face tokenizer.json (every
 * BERT-family model): a word of the pipeline (hf_pipeline.c, which runs
 * the stages and calls tv_wp_word) to its tokens, and the one-pass path
 * of words (tv_wp_fast_words, tv_wp_fast_run). Calls only down:
 * normalize.c's helpers, tok_bpe.c.
 *
 * WordPiece, as HF's: a word of more than max_input_chars_per_word code
 * points is unk_token whole; else greedy longest match from the left, the
 * pieces after the first looked up with continuing_subword_prefix; when
 * some position matches nothing the whole word is unk_token. A piece
 * looks the whole rest up once, then walks forward while bit filters of
 * the tokens' proper prefixes say a token may go on (the map is asked
 * only where the token filter says one may end): a word costs
 * O(length x longest token) at worst, and a word past the limit
 * O(length). With exactly BertNormalizer and BertPreTokenizer, text
 * between ASCII white space that is ASCII and two-byte characters takes
 * one table-driven pass instead of the stages (tv_wp_finish's tables,
 * made from normalize.c's and pretok.c's own rules; a character whose
 * result is not one character whatever its neighbours, and any longer
 * one, sends its stretch through every stage).
 *
 * Must hold: ids are HF's encode(text, add_special_tokens=False) for valid
 * UTF-8 (bytes that are not are U+FFFD each, as one byte); token offsets
 * are the original bytes HF's alignments give (start of the first code
 * point, end of the last). Threads: the handle is read-only after open;
 * working memory is the caller's tokvec_tok_state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"

#define EMPTY_SLOT (-1)

/* --- the maps: bytes -> id, hashed so that every prefix's hash comes out
 * of one pass over a word (FNV-1a, then a mix for the slot) --- */

#define FNV0 0xCBF29CE484222325ull

static inline uint64_t fnv(uint64_t h, unsigned char c)
{
    return (h ^ c) * 0x100000001B3ull;
}

static inline size_t slot_of(uint64_t h, size_t mask)
{
    h ^= h >> 31;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & mask;
}

/* The token of n bytes p with hash hv in map m; -1 if none. */
static int32_t map_get(const tokvec_tokenizer *t, const tv_wp_slot *m,
                       size_t mask, uint64_t hv, const unsigned char *p,
                       size_t n)
{
    for (size_t k = slot_of(hv, mask);; k = (k + 1) & mask) {
        const tv_wp_slot *e = &m[k];
        int32_t id = e->id;
        if (id == EMPTY_SLOT)
            return -1;
        if (e->hash != hv)
            continue;
        if (n <= TV_WP_INLINE) {
            if (e->len == n && !memcmp(e->key, p, n))
                return id;
            continue;
        }
        uint32_t at, kl; /* a long key: where its bytes are in the blob */
        memcpy(&at, e->key, 4);
        memcpy(&kl, e->key + 4, 4);
        if (e->len == 255 && kl == n && !memcmp(t->blob + at, p, n))
            return id;
    }
}

/* key: n bytes at blob offset at (a long key keeps its offset and size in
 * the slot's key bytes instead of the bytes). */
static void map_put(const tokvec_tokenizer *t, tv_wp_slot *m, size_t mask,
                    uint64_t hv, int32_t id, uint32_t at, size_t n)
{
    size_t k = slot_of(hv, mask);
    while (m[k].id != EMPTY_SLOT)
        k = (k + 1) & mask;
    m[k].hash = hv;
    m[k].id = id;
    m[k].len = n <= TV_WP_INLINE ? (uint8_t)n : 255;
    if (n <= TV_WP_INLINE) {
        memcpy(m[k].key, t->blob + at, n);
    } else {
        uint32_t kl = (uint32_t)n;
        memcpy(m[k].key, &at, 4);
        memcpy(m[k].key + 4, &kl, 4);
    }
}

static uint64_t hash_of(const unsigned char *p, size_t n)
{
    uint64_t h = FNV0;
    for (size_t i = 0; i < n; i++)
        h = fnv(h, p[i]);
    return h;
}

#define FILTER_BITS 20 /* 2^20 bits (128 KB) a filter */

static inline size_t bit_of(uint64_t h)
{
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> (64 - FILTER_BITS));
}

static inline int has_bit(const uint64_t *f, uint64_t h)
{
    size_t b = bit_of(h);
    return (int)(f[b / 64] >> (b % 64) & 1);
}

static inline void set_bit(uint64_t *f, uint64_t h)
{
    size_t b = bit_of(h);
    f[b / 64] |= 1ull << (b % 64);
}

/* The n bytes p into filters f[0] (them) and f[1] (every proper prefix
 * that ends at a character boundary). */
static void filter_add(uint64_t *const f[2], const unsigned char *p, size_t n)
{
    uint64_t hv = FNV0;
    for (size_t m = 1; m <= n; m++) {
        hv = fnv(hv, p[m - 1]);
        if (m == n)
            set_bit(f[0], hv);
        else if ((p[m] & 0xC0) != 0x80)
            set_bit(f[1], hv);
    }
}

/* Both maps, from the tokens model.vocab gave (all of tok[] so far), and
 * their filters (freed with the handle, tv_hf_free, on failure too). */
static int maps_build(tokvec_tokenizer *t, tv_hf *h)
{
    size_t count = t->n_tok, size = 16;
    while (size < count * 2)
        size *= 2;
    h->whole = malloc(size * sizeof *h->whole);
    h->cont = malloc(size * sizeof *h->cont);
    for (int k = 0; k < 4; k++)
        h->filter[k] = calloc((1u << FILTER_BITS) / 64, sizeof(uint64_t));
    if (!h->whole || !h->cont || !h->filter[0] || !h->filter[1] ||
        !h->filter[2] || !h->filter[3])
        return -ENOMEM;
    for (size_t k = 0; k < size; k++)
        h->whole[k].id = h->cont[k].id = EMPTY_SLOT;
    h->wmask = h->cmask = size - 1;
    for (size_t i = 0; i < t->n_tok; i++) {
        const tv_tok *o = &t->tok[i];
        size_t n = o->len;
        const unsigned char *b = t->blob + o->off;
        map_put(t, h->whole, h->wmask, hash_of(b, n), o->id, o->off, n);
        filter_add(h->filter, b, n);
        if (n > h->max_len)
            h->max_len = n;
        if (n <= 64)
            h->lens_w |= 1ull << (n - 1);
        if (n <= h->nprefix || memcmp(b, h->prefix, h->nprefix))
            continue;
        size_t m = n - h->nprefix;
        map_put(t, h->cont, h->cmask, hash_of(b + h->nprefix, m), o->id,
                o->off + (uint32_t)h->nprefix, m);
        filter_add(h->filter + 2, b + h->nprefix, m);
        if (m > h->max_cont)
            h->max_cont = m;
        if (m <= 64)
            h->lens_c |= 1ull << (m - 1);
    }
    return 0;
}

/* --- loading --- */

static int bad(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s", what);
    return TOKVEC_E_TOKENIZER;
}

/* model.vocab */
static int wp_vocab(tokvec_tokenizer *t, json_t *root, char *err,
                    size_t errlen)
{
    json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
    json_t *v;
    const char *key;
    if (!json_is_object(vocab) || !json_object_size(vocab))
        return bad(err, errlen,
                   "model.vocab: not a non-empty object of token -> id");
    json_object_foreach(vocab, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        size_t kl = strlen(key);
        if (id < 0 || id >= TV_TOK_MAX_ID || !kl) {
            snprintf(err, errlen,
                     "model.vocab: token \"%.40s\": empty, or its id is not "
                     "an integer in [0, 2^24)",
                     key);
            return TOKVEC_E_TOKENIZER;
        }
        int rc = tv_tok_add(t, (const unsigned char *)key, kl, (int32_t)id, 0);
        if (rc == TOKVEC_E_MISMATCH) {
            snprintf(err, errlen, "model.vocab: id %lld is given twice",
                     (long long)id);
            return TOKVEC_E_TOKENIZER;
        }
        if (rc)
            return rc;
    }
    return maps_build(t, t->hf);
}

int tv_wp_load(tokvec_tokenizer *t, json_t *root, char *err, size_t errlen)
{
    json_t *model = json_object_get(root, "model");
    tv_hf *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    t->hf = h;
    t->info.model = "WordPiece";
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    json_t *pfx = json_object_get(model, "continuing_subword_prefix");
    json_t *mx = json_object_get(model, "max_input_chars_per_word");
    const char *ps = pfx ? json_string_value(pfx) : "##";
    if (!unk || !ps ||
        (mx && (!json_is_integer(mx) || json_integer_value(mx) < 0)))
        return bad(err, errlen,
                   "model: WordPiece needs unk_token, a string "
                   "continuing_subword_prefix and a non-negative "
                   "max_input_chars_per_word");
    h->prefix = strdup(ps);
    if (!h->prefix)
        return -ENOMEM;
    h->nprefix = strlen(ps);
    h->max_chars = mx ? (size_t)json_integer_value(mx) : 100;
    int rc = wp_vocab(t, root, err, errlen);
    if (rc)
        return rc;
    json_t *uid = json_object_get(json_object_get(model, "vocab"), unk);
    if (!json_is_integer(uid)) {
        snprintf(err, errlen, "model.unk_token \"%.40s\" is not in the vocab",
                 unk);
        return TOKVEC_E_TOKENIZER;
    }
    h->unk = (int32_t)json_integer_value(uid);
    return 0;
}

/* Once the token table is final (tok_load.c; a WordPiece model only --
 * Unigram and SentencePiece BPE always take every stage): the ASCII
 * table of BertNormalizer (normalize.c's bert_fused on ASCII: clean_text
 * drops NUL, DEL and the controls but tab, LF and CR, which become
 * spaces; lowercase) and BertPreTokenizer (pretok.c's bert: white space
 * splits and goes, ASCII punctuation is a word of its own), and the
 * table of two-byte characters (tv_hf.u2), when the pipeline is exactly
 * those two (either may be missing; any flags of BertNormalizer: the
 * tables are made from them). */
int tv_wp_finish(tokvec_tokenizer *t)
{
    tv_hf *h = t->hf;
    unsigned f = 0;
    if (h->model != TV_M_WORDPIECE || h->nnorm > 1 ||
        (h->nnorm && h->norm[0].kind != TV_N_BERT) || h->npre > 1 ||
        (h->npre && h->pre[0].kind != TV_P_BERT))
        return 0;
    if (h->nnorm)
        f = h->norm[0].flags;
    for (unsigned c = 0; c < 128; c++) {
        unsigned m = c, tnr = c == '\t' || c == '\n' || c == '\r';
        h->amap[c] = (unsigned char)c;
        if ((f & TV_NB_CLEAN) && (c == 0 || c == 0x7F || (c < 0x20 && !tnr))) {
            h->acls[c] = TV_A_DROP;
            continue;
        }
        if ((f & TV_NB_CLEAN) && tnr)
            m = ' ';
        if ((f & TV_NB_LOWER) && m >= 'A' && m <= 'Z')
            m += 32;
        int ws = m == ' ' || (m >= 9 && m <= 13);
        int pu = (m >= 33 && m <= 47) || (m >= 58 && m <= 64) ||
                 (m >= 91 && m <= 96) || (m >= 123 && m <= 126);
        h->amap[c] = (unsigned char)m;
        h->acls[c] = !h->npre ? TV_A_WORD
                     : ws     ? TV_A_WS
                     : pu     ? TV_A_PUNCT
                              : TV_A_WORD;
    }
    /* two-byte characters: what normalize.c's BertNormalizer makes of
     * each on its own, when that is one character whatever its
     * neighbours; classed as pretok.c's BertPreTokenizer classes it */
    for (uint32_t c = 0x80; c < 0x800; c++) {
        uint32_t o[TV_NB_MAX_OUT];
        int n = 1;
        o[0] = c;
        if (h->nnorm)
            n = tv_norm_bert_char(f, c, o);
        unsigned k = TV_A_SLOW;
        if (n == 0) {
            k = TV_A_DROP;
            o[0] = 0;
        } else if (n == 1 && o[0] < 0x80) {
            k = h->acls[o[0]] == TV_A_DROP ? TV_A_SLOW : h->acls[o[0]];
        } else if (n == 1) {
            unsigned cl = tv_hf_class(o[0]);
            k = !h->npre             ? TV_A_WORD
                : (cl & TV_HF_WS)    ? TV_A_WS
                : (cl & TV_HF_PUNCT) ? TV_A_PUNCT
                                     : TV_A_WORD;
        }
        h->u2[c - 0x80] = (k == TV_A_SLOW ? 0 : o[0]) | (uint32_t)k << 24;
    }
    h->ascii_fast = 1;
    return 0;
}

/* --- encoding --- */

int tv_wp_word(const tokvec_tokenizer *t, tv_hf_buf *b, const tv_hf_text *x,
               size_t s, size_t e, tokvec_tok_ids *out, int offs)
{
    const tv_hf *h = t->hf;
    if (e - s > h->max_chars) {
        if (tv_ids_reserve(out, 1, offs) < 0)
            return -ENOMEM;
        tv_hf_put_tok(out, offs, h->unk, x, s, e);
        return 0;
    }
    size_t len;
    if (tv_hf_word_bytes(b, x, s, e, &len) < 0 ||
        tv_ids_reserve(out, e - s, offs) < 0)
        return -ENOMEM;
    size_t n0 = out->n, start = 0;
    const unsigned char *u = b->u8;
    uint64_t *ph = b->ph;
    while (start < len) {
        size_t lim = start ? h->max_cont : h->max_len;
        size_t end = len - start > lim ? start + lim : len;
        uint64_t hv = FNV0, lens = start ? h->lens_c : h->lens_w;
        const tv_wp_slot *m = start ? h->cont : h->whole;
        size_t mask = start ? h->cmask : h->wmask;
        for (size_t j = start; j < end; j++)
            ph[j - start + 1] = hv = fnv(hv, u[j]);
        /* the whole rest first (most words are one token), then forward
         * while some token may begin with the bytes so far (the filters:
         * the map is asked only where a token may end): the last token
         * seen is the longest match */
        const uint64_t *ft = h->filter[start ? 2 : 0];
        const uint64_t *fp = h->filter[start ? 3 : 1];
        int32_t id = -1;
        while (end > start && b->u8ch[end] == UINT32_MAX)
            end--;
        size_t n = end - start;
        if (n && (n > 64 || (lens >> (n - 1) & 1)) && has_bit(ft, ph[n]))
            id = map_get(t, m, mask, ph[n], u + start, n);
        if (id < 0) {
            size_t stop = end, j = start + 1;
            end = start;
            for (; j < stop; j++) {
                if (b->u8ch[j] == UINT32_MAX)
                    continue;
                uint64_t hj = ph[j - start];
                int32_t r = has_bit(ft, hj)
                                ? map_get(t, m, mask, hj, u + start, j - start)
                                : -1;
                if (r >= 0)
                    id = r, end = j;
                if (!has_bit(fp, hj))
                    break;
            }
        }
        if (id < 0) {
            out->n = n0;
            tv_hf_put_tok(out, offs, h->unk, x, s, e);
            return 0;
        }
        tv_hf_put_tok(out, offs, id, x, b->u8ch[start], b->u8ch[end]);
        start = end;
    }
    return 0;
}

static int add_word(tv_hf_buf *b, size_t s, size_t e)
{
    if (b->wn[0] == b->wcap[0]) {
        size_t cap = b->wcap[0] ? b->wcap[0] * 2 : 64;
        tv_hf_range *w = realloc(b->w[0], cap * sizeof *w);
        if (!w)
            return -ENOMEM;
        b->w[0] = w;
        b->wcap[0] = cap;
    }
    b->w[0][b->wn[0]++] = (tv_hf_range){s, e};
    return 0;
}

/* A stretch in one pass (tv_wp_finish's tables; its characters are ASCII
 * or two-byte ones whose class is not TV_A_SLOW): the normalized
 * characters of the words only (white space is not kept), each with its
 * bytes as its span, and the words, as the three stages give them. */
int tv_wp_fast_words(const tv_hf *h, tv_hf_buf *b, const unsigned char *u,
                     size_t i, size_t end)
{
    tv_hf_text *x = &b->t[0];
    size_t n = 0, w = 0;
    b->wn[0] = 0;
    if (tv_hf_text_reserve(x, end - i) < 0)
        return -ENOMEM;
    for (size_t j = i; j < end; j++) {
        unsigned c = u[j], k;
        size_t m = 1;
        if (c < 0x80) {
            k = h->acls[c];
            c = h->amap[c];
        } else {
            uint32_t v = h->u2[((c & 0x1F) << 6 | (u[j + 1] & 0x3F)) - 0x80];
            k = v >> 24;
            c = v & 0xFFFFFF;
            m = 2;
        }
        if (k == TV_A_DROP) {
            j += m - 1;
            continue;
        }
        if (k != TV_A_WORD && n > w && add_word(b, w, n) < 0)
            return -ENOMEM;
        if (k == TV_A_WS) {
            w = n;
            j += m - 1;
            continue;
        }
        x->cp[n] = c;
        x->a0[n] = (uint32_t)j;
        x->a1[n] = (uint32_t)(j + m);
        n++;
        j += m - 1;
        if (k == TV_A_PUNCT) {
            if (add_word(b, n - 1, n) < 0)
                return -ENOMEM;
            w = n;
        }
    }
    x->n = n;
    return n > w ? add_word(b, w, n) : 0;
}

#define AHEAD 4 /* words whose first lookup is fetched ahead */

/* Fetches what tv_wp_word()'s first lookup of word k of b->w[0] (the
 * whole word, as many bytes as the longest token) will touch: its filter
 * word and its map slot. Only a hint: the lookup itself is unchanged. */
static inline void fetch_word(const tv_hf *h, const tv_hf_buf *b, size_t k)
{
    const tv_hf_text *x = &b->t[0];
    size_t s = b->w[0][k].s, e = b->w[0][k].e, nb = 0;
    uint64_t hv = FNV0;
    for (size_t j = s; j < e; j++) {
        uint32_t c = x->cp[j];
        nb += c < 0x80 ? 1 : 2;
        if (nb > h->max_len)
            break;
        if (c < 0x80) {
            hv = fnv(hv, (unsigned char)c);
        } else {
            hv = fnv(hv, (unsigned char)(0xC0 | c >> 6));
            hv = fnv(hv, (unsigned char)(0x80 | (c & 0x3F)));
        }
    }
    size_t bit = bit_of(hv);
    __builtin_prefetch(&h->filter[0][bit / 64]);
    __builtin_prefetch(&h->whole[slot_of(hv, h->wmask)]);
}

/* The words of tv_wp_fast_words through tv_wp_word(), the first lookups
 * of the words AHEAD of the current one on their way. */
int tv_wp_fast_run(const tokvec_tokenizer *t, tv_hf_buf *b,
                   tokvec_tok_ids *out, int offs)
{
    const tv_hf *h = t->hf;
    size_t nw = b->wn[0];
    for (size_t k = 0; k < nw && k < AHEAD; k++)
        fetch_word(h, b, k);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < nw; k++) {
        if (k + AHEAD < nw)
            fetch_word(h, b, k + AHEAD);
        rc = tv_wp_word(t, b, &b->t[0], b->w[0][k].s, b->w[0][k].e, out, offs);
    }
    return rc;
}
