/* tok_special.c -- finding special tokens in a text, in one pass.
 *
 * One automaton (tv_acm) per set of patterns: the tokenizer's, of the
 * special and added tokens matched in the input, and a Hugging Face
 * pipeline's, of its normalized added tokens (added.c); what a match
 * then does (lstrip, rstrip, single_word, left out) is the caller's.
 *
 * The rule (tiktoken's, and tokvec's before this matcher): the text is cut
 * at the leftmost special token; where several start at that byte, the
 * longest (of two with the same bytes, the lower id); then on from its
 * end. So what matters at each byte x is the longest special that starts
 * there. An Aho-Corasick automaton of the specials' bytes reversed,
 * run over the text from right to left, gives exactly that: after reading
 * text[x..] backwards its state is the longest text[x..x+d) that ends
 * some special, and the specials on its failure chain are those that
 * start at x; the longest of them is kept per node (sp_best) at open.
 *
 * The text is taken in windows: for [lo, hi) the automaton starts at
 * hi + (longest special) - 1 (or the text's end), which is far enough to
 * see every special that starts below hi, and lists the bytes where one
 * starts (and which) in the state's sp_hit; the caller's cursor then takes
 * them in order, skipping those inside the special it took before. A
 * window is 4 times the longest special (16 KB at least, 1 MB at most)
 * and costs its bytes, the longest special's bytes again (1/4 of the
 * window's while specials are under 256 KB), failure links (no more than
 * the bytes read) and its hits, so a text is O(n) whatever the number and
 * the shape of the specials: no step per special, no rescan per start (a
 * trie walked from each byte that begins a special is O(n * longest) on
 * specials like "aaa...b"). sp_steps counts the steps, for the tests.
 *
 * Built once at open, by the opening thread; read-only afterwards (any
 * thread). The hits' memory (8 bytes a hit, at most a window's bytes) is
 * the caller's tokvec_tok_state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

#define SP_WINDOW_MIN 16384u
#define SP_WINDOW_MAX (1u << 20)

static inline size_t eslot(uint64_t key, size_t mask)
{
    uint64_t h = (key ^ (key >> 31)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & mask;
}

/* The child of node by byte c, or 0 (the root is nobody's child). */
static inline uint32_t edge_get(const tv_acm *a, uint32_t node,
                                unsigned char c)
{
    if (node == 0)
        return a->root[c];
    uint64_t key = (uint64_t)node << 8 | c;
    for (size_t k = eslot(key, a->emask);; k = (k + 1) & a->emask) {
        const tv_eslot *e = &a->edge[k];
        if (e->key == key)
            return e->child;
        if (e->key == UINT64_MAX)
            return 0;
    }
}

static void edge_put(tv_acm *a, uint32_t node, unsigned char c, uint32_t child)
{
    if (node == 0) {
        a->root[c] = child;
        return;
    }
    uint64_t key = (uint64_t)node << 8 | c;
    size_t k = eslot(key, a->emask);
    while (a->edge[k].key != UINT64_MAX)
        k = (k + 1) & a->emask;
    a->edge[k] = (tv_eslot){key, child};
}

/* The trie's working arrays: per node its parent, the byte into it, its
 * depth and the special it spells (-1: none); order: nodes by depth. */
typedef struct trie {
    uint32_t *parent, *depth, *order;
    int32_t *term;
    unsigned char *byte;
} trie;

static void trie_free(trie *b)
{
    free(b->parent);
    free(b->depth);
    free(b->order);
    free(b->term);
    free(b->byte);
}

static int wanted(uint32_t flags, uint32_t skip, uint32_t need)
{
    return !(flags & skip) && (!need || (flags & need));
}

/* Inserts every special reversed; specials in id order, so that of two
 * with the same bytes the lower id is the one a node spells. */
static uint32_t trie_fill(tv_acm *a, trie *b, uint32_t skip, uint32_t need)
{
    uint32_t nodes = 1;
    b->term[0] = -1;
    b->depth[0] = 0;
    for (size_t k = 0; k < a->npat; k++) {
        if (!wanted(a->pat[k].flags, skip, need))
            continue;
        const unsigned char *p = a->bytes + a->pat[k].off;
        uint32_t v = 0;
        for (size_t j = a->pat[k].len; j-- > 0;) {
            uint32_t u = edge_get(a, v, p[j]);
            if (!u) {
                u = nodes++;
                b->parent[u] = v;
                b->byte[u] = p[j];
                b->depth[u] = b->depth[v] + 1;
                b->term[u] = -1;
                edge_put(a, v, p[j], u);
            }
            v = u;
        }
        if (b->term[v] < 0)
            b->term[v] = (int32_t)k;
    }
    return nodes;
}

/* Failure links and each node's longest special, in order of depth. */
static int trie_links(tv_acm *a, trie *b, uint32_t nodes)
{
    uint32_t *count = calloc((size_t)a->max + 2, sizeof *count);
    if (!count)
        return -ENOMEM;
    for (uint32_t v = 0; v < nodes; v++)
        count[b->depth[v] + 1]++;
    for (uint32_t d = 1; d <= a->max + 1; d++)
        count[d] += count[d - 1];
    for (uint32_t v = 0; v < nodes; v++)
        b->order[count[b->depth[v]]++] = v;
    free(count);
    a->fail[0] = 0;
    a->best[0] = -1;
    for (uint32_t n = 1; n < nodes; n++) {
        uint32_t v = b->order[n], f = 0;
        if (b->parent[v] != 0) {
            uint32_t g = a->fail[b->parent[v]];
            for (;;) {
                f = edge_get(a, g, b->byte[v]);
                if (f || g == 0)
                    break;
                g = a->fail[g];
            }
        }
        a->fail[v] = f;
        a->best[v] = b->term[v] >= 0 ? b->term[v] : a->best[f];
    }
    return 0;
}

int tv_acm_build(tv_acm *a, uint32_t skip, uint32_t need)
{
    size_t bytes = 0;
    a->max = 0;
    a->nfree = 0;
    for (size_t k = 0; k < a->npat; k++) {
        if (!wanted(a->pat[k].flags, skip, need))
            continue;
        bytes += a->pat[k].len;
        a->nfree += !(a->pat[k].flags & TV_ADD_SPECIAL);
        if (a->pat[k].len > a->max)
            a->max = a->pat[k].len;
    }
    if (bytes >= UINT32_MAX - 1)
        return TOKVEC_E_TOO_LARGE;
    size_t cap = bytes + 1, esize = 16; /* nodes: at most one a byte */
    while (esize < bytes + bytes / 2 + 2)
        esize *= 2;
    trie b = {0};
    b.parent = malloc(cap * sizeof *b.parent);
    b.depth = malloc(cap * sizeof *b.depth);
    b.order = malloc(cap * sizeof *b.order);
    b.term = malloc(cap * sizeof *b.term);
    b.byte = malloc(cap);
    a->fail = malloc(cap * sizeof *a->fail);
    a->best = malloc(cap * sizeof *a->best);
    a->edge = malloc(esize * sizeof *a->edge);
    int rc = -ENOMEM;
    if (!b.parent || !b.depth || !b.order || !b.term || !b.byte || !a->fail ||
        !a->best || !a->edge)
        goto out;
    for (size_t k = 0; k < esize; k++)
        a->edge[k].key = UINT64_MAX;
    a->emask = esize - 1;
    memset(a->root, 0, sizeof a->root);
    a->nodes = trie_fill(a, &b, skip, need);
    rc = trie_links(a, &b, a->nodes);
out:
    trie_free(&b);
    return rc;
}

void tv_acm_free(tv_acm *a)
{
    free(a->fail);
    free(a->best);
    free(a->edge);
    a->fail = NULL;
    a->best = NULL;
    a->edge = NULL;
}

/* The list of specials and added tokens, and the automaton of those
 * matched in the input (the others: tv_hf's, in the normalized text). */
int tv_special_build(tokvec_tokenizer *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_tok; i++)
        n += t->tok[i].special != 0;
    t->n_special = n;
    t->sp = malloc((n + 1) * sizeof *t->sp);
    if (!t->sp)
        return -ENOMEM;
    n = 0;
    for (size_t i = 0; i < t->n_tok; i++) { /* tok[] is by id */
        const tv_tok *o = &t->tok[i];
        if (!o->special)
            continue;
        uint32_t f = TV_TOK_ADDED(o) |
                     (TV_TOK_KIND(o) == 1 ? TV_ADD_SPECIAL : 0);
        t->sp[n++] = (tv_special){o->id, o->off, o->len, f};
        if ((o->len > 1 && memchr(t->blob + o->off, '\n', o->len - 1)) ||
            (f & (TV_ADD_LSTRIP | TV_ADD_RSTRIP)))
            t->sp_newline = 1; /* tokvec_tokenizer_cut cannot cut */
    }
    t->ac.pat = t->sp;
    t->ac.bytes = t->blob;
    t->ac.npat = n;
    t->nac = t->ac;
    int rc = tv_acm_build(&t->ac, TV_ADD_NORM, 0);
    if (rc == 0 && !t->hf) /* byte-level BPE's normalized: true ones */
        rc = tv_acm_build(&t->nac, 0, TV_ADD_NORM);
    return rc;
}

void tv_special_free(tokvec_tokenizer *t)
{
    free(t->sp);
    tv_acm_free(&t->ac);
    tv_acm_free(&t->nac);
}

/* Lists the specials that start in text[lo..hi), the longest at each
 * byte, reading text[lo .. min(len, hi + longest - 1)) backwards: into
 * sp_hit, last first, each (its offset from lo) << 32 | its index in sp.
 * At the root (most bytes of most texts) a byte costs one table read. */
static int scan(const tv_acm *a, tv_ac_hits *s, const unsigned char *u,
                size_t lo, size_t hi, size_t len, size_t *found)
{
    size_t end = len - hi >= a->max ? hi + a->max - 1 : len;
    uint64_t steps = end - lo;
    size_t n = 0;
    uint32_t v = 0;
    for (size_t x = end; x > lo;) {
        if (v == 0) {
            uint32_t w;
            do {
                w = a->root[u[--x]];
            } while (!w && x > lo);
            v = w;
        } else {
            unsigned char c = u[--x];
            uint32_t w = edge_get(a, v, c);
            while (!w && v) {
                v = a->fail[v];
                w = edge_get(a, v, c);
                steps++;
            }
            v = w;
        }
        int32_t b = a->best[v];
        if (b < 0 || x >= hi)
            continue;
        if (n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 256;
            uint64_t *h = realloc(s->hit, cap * sizeof *h);
            if (!h)
                return -ENOMEM;
            s->hit = h;
            s->cap = cap;
        }
        s->hit[n++] = (uint64_t)(x - lo) << 32 | (uint32_t)b;
    }
    s->steps += steps;
    *found = n;
    return 0;
}

int tv_acm_next(const tv_acm *a, tv_ac_hits *s, tv_sp_win *win,
                const unsigned char *text, size_t i, size_t len, size_t *at,
                size_t *k)
{
    if (!a->max) {
        *at = len;
        return 0;
    }
    size_t wsize = (size_t)a->max * 4;
    if (wsize < SP_WINDOW_MIN)
        wsize = SP_WINDOW_MIN;
    if (wsize > SP_WINDOW_MAX)
        wsize = SP_WINDOW_MAX;
    for (; i < len; i = win->hi) {
        if (i < win->lo || i >= win->hi) {
            size_t hi = len - i > wsize ? i + wsize : len;
            int rc = scan(a, s, text, i, hi, len, &win->n);
            if (rc < 0)
                return rc;
            win->lo = i;
            win->hi = hi;
        }
        while (win->n > 0) { /* the hits before i lay inside a special */
            uint64_t h = s->hit[--win->n];
            s->steps++;
            if (win->lo + (size_t)(h >> 32) >= i) {
                *at = win->lo + (size_t)(h >> 32);
                *k = (uint32_t)h;
                return 0;
            }
        }
    }
    *at = len;
    return 0;
}
