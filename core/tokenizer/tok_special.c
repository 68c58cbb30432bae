/* tok_special.c -- finding special tokens in a text, in one pass.
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
static inline uint32_t edge_get(const tokvec_tokenizer *t, uint32_t node,
                                unsigned char c)
{
    if (node == 0)
        return t->sp_root[c];
    uint64_t key = (uint64_t)node << 8 | c;
    for (size_t k = eslot(key, t->sp_emask);; k = (k + 1) & t->sp_emask) {
        const tv_eslot *e = &t->sp_edge[k];
        if (e->key == key)
            return e->child;
        if (e->key == UINT64_MAX)
            return 0;
    }
}

static void edge_put(tokvec_tokenizer *t, uint32_t node, unsigned char c,
                     uint32_t child)
{
    if (node == 0) {
        t->sp_root[c] = child;
        return;
    }
    uint64_t key = (uint64_t)node << 8 | c;
    size_t k = eslot(key, t->sp_emask);
    while (t->sp_edge[k].key != UINT64_MAX)
        k = (k + 1) & t->sp_emask;
    t->sp_edge[k] = (tv_eslot){key, child};
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

/* Inserts every special reversed; specials in id order, so that of two
 * with the same bytes the lower id is the one a node spells. */
static uint32_t trie_fill(tokvec_tokenizer *t, trie *b)
{
    uint32_t nodes = 1;
    b->term[0] = -1;
    b->depth[0] = 0;
    for (size_t k = 0; k < t->n_special; k++) {
        const unsigned char *p = t->blob + t->sp[k].off;
        uint32_t v = 0;
        for (size_t j = t->sp[k].len; j-- > 0;) {
            uint32_t u = edge_get(t, v, p[j]);
            if (!u) {
                u = nodes++;
                b->parent[u] = v;
                b->byte[u] = p[j];
                b->depth[u] = b->depth[v] + 1;
                b->term[u] = -1;
                edge_put(t, v, p[j], u);
            }
            v = u;
        }
        if (b->term[v] < 0)
            b->term[v] = (int32_t)k;
    }
    return nodes;
}

/* Failure links and each node's longest special, in order of depth. */
static int trie_links(tokvec_tokenizer *t, trie *b, uint32_t nodes)
{
    uint32_t *count = calloc((size_t)t->sp_max + 2, sizeof *count);
    if (!count)
        return -ENOMEM;
    for (uint32_t v = 0; v < nodes; v++)
        count[b->depth[v] + 1]++;
    for (uint32_t d = 1; d <= t->sp_max + 1; d++)
        count[d] += count[d - 1];
    for (uint32_t v = 0; v < nodes; v++)
        b->order[count[b->depth[v]]++] = v;
    free(count);
    t->sp_fail[0] = 0;
    t->sp_best[0] = -1;
    for (uint32_t n = 1; n < nodes; n++) {
        uint32_t v = b->order[n], f = 0;
        if (b->parent[v] != 0) {
            uint32_t g = t->sp_fail[b->parent[v]];
            for (;;) {
                f = edge_get(t, g, b->byte[v]);
                if (f || g == 0)
                    break;
                g = t->sp_fail[g];
            }
        }
        t->sp_fail[v] = f;
        t->sp_best[v] = b->term[v] >= 0 ? b->term[v] : t->sp_best[f];
    }
    return 0;
}

int tv_special_build(tokvec_tokenizer *t)
{
    size_t n = 0, bytes = 0;
    for (size_t i = 0; i < t->n_tok; i++)
        if (t->tok[i].special) {
            n++;
            bytes += t->tok[i].len;
        }
    if (bytes >= UINT32_MAX - 1)
        return TOKVEC_E_TOO_LARGE;
    t->n_special = n;
    t->sp = malloc((n + 1) * sizeof *t->sp);
    if (!t->sp)
        return -ENOMEM;
    n = 0;
    t->sp_max = 0;
    for (size_t i = 0; i < t->n_tok; i++) { /* tok[] is by id */
        const tv_tok *o = &t->tok[i];
        if (!o->special)
            continue;
        t->sp[n++] = (tv_special){o->id, o->off, o->len};
        if (o->len > t->sp_max)
            t->sp_max = o->len;
        if (o->len > 1 && memchr(t->blob + o->off, '\n', o->len - 1))
            t->sp_newline = 1; /* tokvec_tokenizer_cut cannot cut */
    }
    size_t cap = bytes + 1, esize = 16; /* nodes: at most one a byte */
    while (esize < bytes + bytes / 2 + 2)
        esize *= 2;
    trie b = {0};
    b.parent = malloc(cap * sizeof *b.parent);
    b.depth = malloc(cap * sizeof *b.depth);
    b.order = malloc(cap * sizeof *b.order);
    b.term = malloc(cap * sizeof *b.term);
    b.byte = malloc(cap);
    t->sp_fail = malloc(cap * sizeof *t->sp_fail);
    t->sp_best = malloc(cap * sizeof *t->sp_best);
    t->sp_edge = malloc(esize * sizeof *t->sp_edge);
    int rc = -ENOMEM;
    if (!b.parent || !b.depth || !b.order || !b.term || !b.byte ||
        !t->sp_fail || !t->sp_best || !t->sp_edge)
        goto out;
    for (size_t k = 0; k < esize; k++)
        t->sp_edge[k].key = UINT64_MAX;
    t->sp_emask = esize - 1;
    memset(t->sp_root, 0, sizeof t->sp_root);
    t->sp_nodes = trie_fill(t, &b);
    rc = trie_links(t, &b, t->sp_nodes);
out:
    trie_free(&b);
    return rc;
}

void tv_special_free(tokvec_tokenizer *t)
{
    free(t->sp);
    free(t->sp_fail);
    free(t->sp_best);
    free(t->sp_edge);
}

/* Lists the specials that start in text[lo..hi), the longest at each
 * byte, reading text[lo .. min(len, hi + longest - 1)) backwards: into
 * sp_hit, last first, each (its offset from lo) << 32 | its index in sp.
 * At the root (most bytes of most texts) a byte costs one table read. */
static int scan(const tokvec_tokenizer *t, tokvec_tok_state *s,
                const unsigned char *u, size_t lo, size_t hi, size_t len,
                size_t *found)
{
    size_t end = len - hi >= t->sp_max ? hi + t->sp_max - 1 : len;
    uint64_t steps = end - lo;
    size_t n = 0;
    uint32_t v = 0;
    for (size_t x = end; x > lo;) {
        if (v == 0) {
            uint32_t w;
            do {
                w = t->sp_root[u[--x]];
            } while (!w && x > lo);
            v = w;
        } else {
            unsigned char c = u[--x];
            uint32_t w = edge_get(t, v, c);
            while (!w && v) {
                v = t->sp_fail[v];
                w = edge_get(t, v, c);
                steps++;
            }
            v = w;
        }
        int32_t b = t->sp_best[v];
        if (b < 0 || x >= hi)
            continue;
        if (n == s->sp_cap) {
            size_t cap = s->sp_cap ? 2 * s->sp_cap : 256;
            uint64_t *h = realloc(s->sp_hit, cap * sizeof *h);
            if (!h)
                return -ENOMEM;
            s->sp_hit = h;
            s->sp_cap = cap;
        }
        s->sp_hit[n++] = (uint64_t)(x - lo) << 32 | (uint32_t)b;
    }
    s->sp_steps += steps;
    *found = n;
    return 0;
}

int tv_special_next(const tokvec_tokenizer *t, tokvec_tok_state *s,
                    tv_sp_win *win, const unsigned char *text, size_t i,
                    size_t len, size_t *at, size_t *k)
{
    size_t wsize = (size_t)t->sp_max * 4;
    if (wsize < SP_WINDOW_MIN)
        wsize = SP_WINDOW_MIN;
    if (wsize > SP_WINDOW_MAX)
        wsize = SP_WINDOW_MAX;
    for (; i < len; i = win->hi) {
        if (i < win->lo || i >= win->hi) {
            size_t hi = len - i > wsize ? i + wsize : len;
            int rc = scan(t, s, text, i, hi, len, &win->n);
            if (rc < 0)
                return rc;
            win->lo = i;
            win->hi = hi;
        }
        while (win->n > 0) { /* the hits before i lay inside a special */
            uint64_t h = s->sp_hit[--win->n];
            s->sp_steps++;
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
