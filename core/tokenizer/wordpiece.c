/* wordpiece.c -- the WordPiece model of Hugging Face tokenizer.json (every
 * BERT-family model): a word of the pipeline (hf_pipeline.c, which runs
 * the stages and calls tv_wp_word) to its tokens, and the one-pass path
 * of words (tv_wp_fast). Calls only down:
 * normalize.c's helpers, tok_bpe.c.
 *
 * WordPiece, as HF's: a word of more than max_input_chars_per_word code
 * points is unk_token whole; else greedy longest match from the left, the
 * pieces after the first looked up with continuing_subword_prefix; when
 * some position matches nothing the whole word is unk_token. The
 * vocabulary is a trie of bytes (built once at open; the pieces after the
 * first start at the prefix's node): a piece walks down it as far as the
 * word's bytes go, and the last token passed at a character's end is the
 * longest match, so a word costs O(length x longest token) at worst, and
 * a word past the limit O(length). With exactly BertNormalizer and
 * BertPreTokenizer, text between ASCII white space takes one
 * table-driven pass instead of the stages (tv_wp_finish's tables, made
 * from normalize.c's and pretok.c's own rules; a character whose result
 * is not one character whatever its neighbours, and bytes that are not
 * UTF-8, send their stretch through every stage).
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
#include "tok_utf8.h"

/* --- the vocabulary as a trie of bytes: node 0 the root, a node's
 * children numbered one after the other (depth first), found by their
 * labels (tv_hf.tlab) or, for a node of more than SCAN children, in a
 * direct table of 256; 8 bytes a node --- */

#define SCAN 12
#define DIRECT 15 /* a node's count of children when it has a table */
#define NO_NODE UINT32_MAX

/* A node's token id, -1 none. */
static inline int32_t node_id(const tv_wp_node *n)
{
    return (int32_t)(n->meta >> 4) - 1;
}

/* Node v's child by byte c; 0 if none (the root is nobody's child). */
static inline uint32_t child(const tv_hf *h, uint32_t v, unsigned char c)
{
    const tv_wp_node *n = &h->trie[v];
    uint32_t m = n->meta & 15;
    if (m == DIRECT)
        return h->tdir[(size_t)n->first * 256 + c];
    const unsigned char *l = h->tlab + n->first;
    for (uint32_t k = 0; k < m; k++)
        if (l[k] == c)
            return n->first + k;
    return 0;
}

/* Building: nodes first in the order they are made (par, lab, id), the
 * edges in an open-addressed table of node numbers (0: empty), then
 * numbered again depth first. */
typedef struct build {
    uint32_t *par, *slot, *cnt, *at, *kids, *order, *newi;
    unsigned char *lab;
    int32_t *id;
    size_t n, mask;
} build;

static void build_free(build *w)
{
    free(w->par);
    free(w->slot);
    free(w->cnt);
    free(w->at);
    free(w->kids);
    free(w->order);
    free(w->newi);
    free(w->lab);
    free(w->id);
}

static inline size_t edge_slot(uint32_t v, unsigned char c, size_t mask)
{
    uint64_t hv = ((uint64_t)v << 8 | c) * 0x9E3779B97F4A7C15ull;
    return (size_t)(hv >> 32) & mask;
}

/* The edge table twice as large, every node but the root in it again. */
static int build_grow(build *w)
{
    size_t size = (w->mask + 1) * 2;
    uint32_t *slot = calloc(size, sizeof *slot);
    if (!slot)
        return -ENOMEM;
    for (size_t x = 1; x < w->n; x++) {
        size_t k = edge_slot(w->par[x], w->lab[x], size - 1);
        while (slot[k])
            k = (k + 1) & (size - 1);
        slot[k] = (uint32_t)x;
    }
    free(w->slot);
    w->slot = slot;
    w->mask = size - 1;
    return 0;
}

/* The child of v by c, made when missing; 0 when out of memory. */
static uint32_t build_child(build *w, uint32_t v, unsigned char c)
{
    if (2 * (w->n + 1) > w->mask + 1 && build_grow(w) < 0)
        return 0;
    for (size_t k = edge_slot(v, c, w->mask);; k = (k + 1) & w->mask) {
        uint32_t x = w->slot[k];
        if (x == 0) {
            x = (uint32_t)w->n++;
            w->par[x] = v;
            w->lab[x] = c;
            w->id[x] = -1;
            w->slot[k] = x;
            return x;
        }
        if (w->par[x] == v && w->lab[x] == c)
            return x;
    }
}

/* The trie of every token model.vocab gave (all of tok[] so far), and the
 * node of continuing_subword_prefix (freed with the handle, tv_hf_free,
 * on failure too). */
static int trie_build(tokvec_tokenizer *t, tv_hf *h)
{
    build w = {0};
    size_t cap = 1, size = 16; /* nodes at most; the edge table (grown) */
    for (size_t i = 0; i < t->n_tok; i++)
        cap += t->tok[i].len;
    cap += h->nprefix;
    while (size < t->n_tok * 4 && size < cap * 2)
        size *= 2;
    w.mask = size - 1;
    w.par = malloc(cap * sizeof *w.par);
    w.lab = malloc(cap);
    w.id = malloc(cap * sizeof *w.id);
    w.slot = calloc(size, sizeof *w.slot);
    int rc = -ENOMEM;
    if (!w.par || !w.lab || !w.id || !w.slot)
        goto out;
    w.n = 1;
    w.par[0] = NO_NODE;
    w.lab[0] = 0;
    w.id[0] = -1;
    for (size_t i = 0; i < t->n_tok; i++) {
        const tv_tok *o = &t->tok[i];
        const unsigned char *b = t->blob + o->off;
        uint32_t v = 0;
        for (size_t j = 0; j < o->len && (j == 0 || v); j++)
            v = build_child(&w, v, b[j]);
        if (!v)
            goto out;
        w.id[v] = o->id;
    }
    /* the prefix's node: made only to be found (its own id, if the
     * prefix is a token, is never taken: a piece is longer) */
    uint32_t cr = 0;
    for (size_t j = 0; j < h->nprefix; j++) {
        cr = build_child(&w, cr, (unsigned char)h->prefix[j]);
        if (!cr)
            goto out;
    }
    /* children by parent, then numbered depth first */
    w.cnt = calloc(w.n + 1, sizeof *w.cnt);
    w.at = malloc((w.n + 1) * sizeof *w.at);
    w.kids = calloc(w.n, sizeof *w.kids);
    w.order = calloc(w.n, sizeof *w.order);
    w.newi = calloc(w.n, sizeof *w.newi);
    h->trie = malloc(w.n * sizeof *h->trie);
    h->tlab = malloc(w.n);
    if (!w.cnt || !w.at || !w.kids || !w.order || !w.newi || !h->trie ||
        !h->tlab)
        goto out;
    for (size_t x = 1; x < w.n; x++)
        w.cnt[w.par[x]]++;
    size_t ndir = 0;
    w.at[0] = 0;
    for (size_t x = 0; x < w.n; x++) {
        w.at[x + 1] = w.at[x] + w.cnt[x];
        ndir += w.cnt[x] > SCAN;
    }
    for (size_t x = 1; x < w.n; x++)
        w.kids[w.at[w.par[x]]++] = (uint32_t)x;
    for (size_t x = w.n; x-- > 0;) /* at[x]: its first child again */
        w.at[x] = x ? w.at[x - 1] : 0;
    h->tdir = calloc(ndir ? ndir * 256 : 1, sizeof *h->tdir);
    if (!h->tdir)
        goto out;
    /* depth first, each node's children numbered together when it is
     * reached: a subtree lies in one stretch of memory, so a walk down a
     * long token stays near where it began (w.order: the stack) */
    size_t next = 1, dir = 0, top = 0;
    w.order[top++] = 0;
    w.newi[0] = 0;
    while (top) {
        uint32_t x = w.order[--top], m = w.cnt[x], q = w.newi[x];
        tv_wp_node *nd = &h->trie[q];
        nd->first = m > SCAN ? (uint32_t)dir : (uint32_t)next;
        nd->meta = (uint32_t)(w.id[x] + 1) << 4 | (m > SCAN ? DIRECT : m);
        for (uint32_t k = 0; k < m; k++) {
            uint32_t y = w.kids[w.at[x] + k];
            w.newi[y] = (uint32_t)(next + k);
            h->tlab[next + k] = w.lab[y];
            if (m > SCAN)
                h->tdir[dir * 256 + w.lab[y]] = (uint32_t)(next + k);
        }
        for (uint32_t k = m; k-- > 0;) /* the first child on top */
            w.order[top++] = w.kids[w.at[x] + k];
        next += m;
        dir += m > SCAN;
    }
    h->ntrie = w.n;
    h->croot = w.newi[cr];
    rc = 0;
out:
    build_free(&w);
    return rc;
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
    return trie_build(t, t->hf);
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

/* What BertNormalizer with flags f (h->nnorm: there is one) makes of the
 * non-ASCII character c, as tv_hf.ucls holds it. */
static uint32_t char_entry(const tv_hf *h, unsigned f, uint32_t c)
{
    uint32_t o[TV_NB_MAX_OUT];
    int n = 1, own = 0;
    o[0] = c;
    if (h->nnorm)
        n = tv_norm_bert_char(f, c, o);
    if (n == 3 && o[0] == ' ' && o[2] == ' ' && h->npre) {
        o[0] = o[1]; /* handle_chinese_chars: between spaces, which split */
        n = 1;
        own = 1;
    }
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
    if (own) /* a word of its own; anything else: every stage */
        k = k == TV_A_WORD || k == TV_A_PUNCT ? TV_A_PUNCT : TV_A_SLOW;
    return (k == TV_A_SLOW ? 0 : o[0]) | (uint32_t)k << 24;
}

/* Once the token table is final (tok_load.c; a WordPiece model only --
 * Unigram and SentencePiece BPE always take every stage): the ASCII
 * table of BertNormalizer (normalize.c's bert_fused on ASCII: clean_text
 * drops NUL, DEL and the controls but tab, LF and CR, which become
 * spaces; lowercase) and BertPreTokenizer (pretok.c's bert: white space
 * splits and goes, ASCII punctuation is a word of its own), and the
 * table of the characters up to U+FFFF (tv_hf.ucls), when the pipeline
 * is exactly those two (either may be missing; any flags of
 * BertNormalizer: the tables are made from them, in about a millisecond).
 */
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
    /* the characters of two and three bytes: what normalize.c's
     * BertNormalizer makes of each on its own, when that is one character
     * whatever its neighbours; classed as pretok.c's BertPreTokenizer
     * classes it (surrogates, which UTF-8 never holds, included) */
    h->ucls = malloc((0x10000 - 0x80) * sizeof *h->ucls);
    if (!h->ucls)
        return -ENOMEM;
    for (uint32_t c = 0x80; c < 0x10000; c++)
        h->ucls[c - 0x80] = char_entry(h, f, c);
    h->nflags = f;
    h->ascii_fast = 1;
    return 0;
}

/* tv_wp_char past three bytes (or not UTF-8): computed as it comes. */
static uint32_t char_long(const tv_hf *h, const unsigned char *u, size_t j,
                          size_t end, size_t *m)
{
    const uint32_t slow = (uint32_t)TV_A_SLOW << 24;
    unsigned b0 = u[j];
    if (b0 < 0xF0 || b0 > 0xF4 || end - j < 4)
        return slow;
    uint32_t c = b0 & 7u;
    for (size_t k = 1; k < 4; k++) {
        if ((u[j + k] & 0xC0) != 0x80)
            return slow;
        c = c << 6 | (u[j + k] & 0x3Fu);
    }
    if (c < 0x10000 || c > 0x10FFFF)
        return slow; /* overlong, past U+10FFFF */
    *m = 4;
    return char_entry(h, h->nflags, c);
}

/* tv_wp_char, two and three bytes from the table inline. */
static inline uint32_t wp_char(const tv_hf *h, const unsigned char *u,
                               size_t j, size_t end, size_t *m)
{
    const uint32_t slow = (uint32_t)TV_A_SLOW << 24;
    unsigned b0 = u[j];
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        if (end - j < 2 || (u[j + 1] & 0xC0) != 0x80)
            return slow;
        *m = 2;
        return h->ucls[((b0 & 0x1Fu) << 6 | (u[j + 1] & 0x3Fu)) - 0x80];
    }
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (end - j < 3 || (u[j + 1] & 0xC0) != 0x80 ||
            (u[j + 2] & 0xC0) != 0x80)
            return slow;
        uint32_t c = (b0 & 0x0Fu) << 12 | (u[j + 1] & 0x3Fu) << 6 |
                     (u[j + 2] & 0x3Fu);
        if (c < 0x800 || (c >= 0xD800 && c < 0xE000))
            return slow; /* overlong, a surrogate */
        *m = 3;
        return h->ucls[c - 0x80];
    }
    return char_long(h, u, j, end, m);
}

uint32_t tv_wp_char(const tv_hf *h, const unsigned char *u, size_t j,
                    size_t end, size_t *m)
{
    return wp_char(h, u, j, end, m);
}

/* --- encoding --- */

/* The longest token of u[start..len) (after the prefix when start > 0):
 * down the trie as far as the bytes go, the last token passed at a
 * character's end (ch[j] != UINT32_MAX: byte j starts one, or j == len)
 * wins. Its end, *id its id; start and -1 if none. */
static inline size_t longest(const tv_hf *h, const unsigned char *u,
                             const uint32_t *ch, size_t start, size_t len,
                             int32_t *id)
{
    uint32_t v = start ? h->croot : 0;
    size_t end = start;
    *id = -1;
    for (size_t j = start; j < len; j++) {
        v = child(h, v, u[j]);
        if (!v)
            break;
        int32_t r = node_id(&h->trie[v]);
        if (r >= 0 && ch[j + 1] != UINT32_MAX) {
            *id = r;
            end = j + 1;
        }
    }
    return end;
}

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
    while (start < len) {
        int32_t id;
        size_t end = longest(h, b->u8, b->u8ch, start, len, &id);
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

/* One word of tv_wp_fast: its normalized bytes b->fu8[0..n), b->fst[j]
 * the input byte where the character byte j starts begins (UINT32_MAX
 * inside a character, anything else at n), b->fen[j] where that
 * character ends; nch characters, from input bytes w0..w1 (nch past
 * max_input_chars_per_word: the bytes were not kept). */
static int fast_word(const tv_hf *h, tv_hf_buf *b, size_t n, size_t nch,
                     uint32_t w0, uint32_t w1, tokvec_tok_ids *out, int offs)
{
    int whole = nch > h->max_chars;
    if (tv_ids_reserve(out, whole ? 1 : nch, offs) < 0)
        return -ENOMEM;
    size_t n0 = out->n, start = 0;
    b->fst[n] = 0;
    while (!whole && start < n) {
        int32_t id;
        size_t end = longest(h, b->fu8, b->fst, start, n, &id);
        if (id < 0) {
            out->n = n0;
            break;
        }
        if (offs) {
            out->offsets[out->n] = b->fst[start];
            out->stops[out->n] = b->fen[end - 1];
        }
        out->ids[out->n++] = id;
        start = end;
    }
    if (whole || start < n) {
        if (offs) {
            out->offsets[out->n] = w0;
            out->stops[out->n] = w1;
        }
        out->ids[out->n++] = h->unk;
    }
    return 0;
}

/* Room for n + 5 bytes of a word in b->fu8, fst, fen. */
static int fast_reserve(tv_hf_buf *b, size_t n)
{
    if (n + 5 <= b->fcap)
        return 0;
    size_t cap = b->fcap ? b->fcap * 2 : 256;
    while (cap < n + 5)
        cap *= 2;
    unsigned char *u = realloc(b->fu8, cap);
    if (u)
        b->fu8 = u;
    uint32_t *st = u ? realloc(b->fst, cap * sizeof *st) : NULL;
    if (st)
        b->fst = st;
    uint32_t *en = st ? realloc(b->fen, cap * sizeof *en) : NULL;
    if (!en)
        return -ENOMEM;
    b->fen = en;
    b->fcap = cap;
    return 0;
}

int tv_wp_fast(const tokvec_tokenizer *t, tv_hf_buf *b, const unsigned char *u,
               size_t i, size_t end, tokvec_tok_ids *out, int offs,
               size_t *stop)
{
    const tv_hf *h = t->hf;
    size_t n = 0, nch = 0;      /* the word so far: bytes kept, characters */
    size_t cs = i, cn = out->n; /* the chunk: where it began, out then */
    uint32_t w0 = 0, w1 = 0;
    for (size_t j = i; j < end; j++) {
        unsigned k;
        uint32_t c;
        size_t m = 1;
        if (u[j] < 0x80) {
            k = h->acls[u[j]];
            c = h->amap[u[j]];
        } else {
            uint32_t v = wp_char(h, u, j, end, &m);
            k = v >> 24;
            c = v & 0xFFFFFF;
        }
        if (k == TV_A_SLOW) { /* the chunk takes every stage */
            out->n = cn;
            *stop = cs;
            return 0;
        }
        if (k == TV_A_DROP) {
            j += m - 1;
            continue;
        }
        if (k != TV_A_WORD && nch) { /* the word so far ends */
            if (fast_word(h, b, n, nch, w0, w1, out, offs) < 0)
                return -ENOMEM;
            n = nch = 0;
        }
        if (k == TV_A_WS) {
            j += m - 1;
            if (m == 1) { /* ASCII white space: a new chunk */
                cs = j + 1;
                cn = out->n;
            }
            continue;
        }
        if (!nch)
            w0 = (uint32_t)j;
        w1 = (uint32_t)(j + m);
        if (nch++ <= h->max_chars) { /* its normalized bytes */
            if (fast_reserve(b, n) < 0)
                return -ENOMEM;
            size_t l = tv_u8_put(c, b->fu8 + n);
            b->fst[n] = (uint32_t)j;
            b->fen[n] = (uint32_t)(j + m);
            for (size_t q = 1; q < l; q++) {
                b->fst[n + q] = UINT32_MAX;
                b->fen[n + q] = (uint32_t)(j + m);
            }
            n += l;
        }
        j += m - 1;
        if (k == TV_A_PUNCT) { /* a word of its own */
            if (fast_word(h, b, n, nch, w0, w1, out, offs) < 0)
                return -ENOMEM;
            n = nch = 0;
        }
    }
    *stop = end;
    return nch ? fast_word(h, b, n, nch, w0, w1, out, offs) : 0;
}
