/* tok_bpe.c -- the tokenizer's token table, hash maps and byte-pair merge.
 *
 * The token table is the tokens in an array sorted by id (once open) and
 * id -> token: an array by id when the ids are dense (below twice the
 * tokens), else an open-addressing map; all sized by the tokens there
 * are, whatever their ids (a file may give one token the id 2^24 - 1). Two
 * more maps, built once at open and read-only afterwards: token bytes ->
 * id (vmap), and a pair of adjacent token ids -> (rank of their merge,
 * merged id) (pmap), sized by the tokens and the pairs there are. The
 * merge is tiktoken's: start from one
 * part per byte, repeatedly merge the adjacent pair of lowest rank (the
 * leftmost of equals), until no adjacent pair has a rank. Short pieces use
 * tiktoken's quadratic scan over a small array; long ones (1 MB of one
 * letter is one piece) a linked list of parts and their pending pairs in
 * buckets by rank, taken in rank order (see "the long-piece merge"): the
 * same merges in the same order, in O(n log n) at worst and near-linear
 * time on real and repetitive text, about 30 bytes of working memory per
 * byte of the piece. Working memory lives in the caller's
 * tokvec_tok_state and grows only; nothing is allocated per token.
 * Two direct-mapped caches of recent pieces sit in front (short pieces in
 * half a cache line each, then longer ones).
 * Threads: maps are shared read-only; a state belongs to one thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

#define HEAP_ABOVE 64    /* pieces longer than this use the heap */
#define CACHE_SLOTS 8192 /* per state (about 2 MB) */
#define CACHE_BYTES TV_CACHE_BYTES
#define TV_KEEP_PARTS 65536 /* longer pieces' memory is returned after */

/* In front of it, for the many short pieces, half a cache line an entry
 * (16384 of them: 512 KB, so that hits stay in the core's own cache): a
 * piece of at most 15 bytes (its length, then its bytes, zero-padded: two
 * words to compare) that makes at most 3 tokens; their starts come from
 * the tokens' lengths. */
#define SMALL_SLOTS 16384
#define SMALL_BYTES 15
#define SMALL_IDS 3
typedef struct tv_small_ent {
    uint64_t key[2];
    int32_t ids[SMALL_IDS];
    uint32_t n;
} tv_small_ent;

static inline void small_key(const unsigned char *p, size_t n, uint64_t k[2])
{
    unsigned char b[16] = {(unsigned char)n};
    memcpy(b + 1, p, n);
    memcpy(k, b, 16);
}

uint64_t tv_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

/* Rebuilds the id map for tok[0..n_tok) in a table of at least twice as
 * many slots. */
static int imap_build(tokvec_tokenizer *t)
{
    size_t size = 16;
    while (size < t->n_tok * 2 + 2)
        size *= 2;
    tv_islot *m = malloc(size * sizeof *m);
    if (!m)
        return -ENOMEM;
    for (size_t k = 0; k < size; k++)
        m[k].id = -1;
    for (size_t i = 0; i < t->n_tok; i++) {
        size_t k = tv_islot_of(t->tok[i].id, size - 1);
        while (m[k].id >= 0)
            k = (k + 1) & (size - 1);
        m[k] = (tv_islot){t->tok[i].id, (uint32_t)i};
    }
    free(t->imap);
    t->imap = m;
    t->imask = size - 1;
    return 0;
}

int tv_tok_add(tokvec_tokenizer *t, const unsigned char *b, size_t n,
               int32_t id, int special)
{
    if (id < 0 || id >= TV_TOK_MAX_ID || n == 0 || n > UINT32_MAX / 2)
        return TOKVEC_E_INVAL;
    if (tv_tok_get(t, id))
        return TOKVEC_E_MISMATCH; /* the id is taken */
    if (t->blob_len + n > UINT32_MAX)
        return TOKVEC_E_TOO_LARGE;
    if (!t->tok || t->n_tok == t->tok_cap) { /* at most 2^24: ids differ */
        size_t cap = t->tok_cap ? 2 * t->tok_cap : 1024;
        tv_tok *tok = realloc(t->tok, cap * sizeof *tok);
        if (!tok)
            return -ENOMEM;
        t->tok = tok;
        t->tok_cap = cap;
    }
    if (t->blob_len + n > t->blob_cap) {
        size_t cap = t->blob_cap ? t->blob_cap : 65536;
        while (cap < t->blob_len + n)
            cap *= 2;
        unsigned char *nb = realloc(t->blob, cap);
        if (!nb)
            return -ENOMEM;
        t->blob = nb;
        t->blob_cap = cap;
    }
    memcpy(t->blob + t->blob_len, b, n);
    t->tok[t->n_tok++] = (tv_tok){(uint32_t)t->blob_len, (uint32_t)n, id,
                                  special != 0};
    t->blob_len += n;
    if (!t->imap || (t->n_tok + 1) * 2 > t->imask + 1)
        return imap_build(t);
    size_t k = tv_islot_of(id, t->imask);
    while (t->imap[k].id >= 0)
        k = (k + 1) & t->imask;
    t->imap[k] = (tv_islot){id, (uint32_t)(t->n_tok - 1)};
    return 0;
}

static int cmp_tok(const void *a, const void *b)
{
    int32_t x = ((const tv_tok *)a)->id, y = ((const tv_tok *)b)->id;
    return (x > y) - (x < y);
}

int tv_tok_seal(tokvec_tokenizer *t)
{
    size_t k = 1;
    while (k < t->n_tok && t->tok[k - 1].id < t->tok[k].id)
        k++;
    if (k >= t->n_tok)
        return 0; /* in order already */
    qsort(t->tok, t->n_tok, sizeof *t->tok, cmp_tok);
    return imap_build(t);
}

int tv_tok_index(tokvec_tokenizer *t)
{
    int rc = tv_tok_seal(t);
    if (rc < 0 || t->n_tok == 0)
        return rc;
    uint32_t top = (uint32_t)t->tok[t->n_tok - 1].id + 1;
    if (top > 2 * t->n_tok + 1024)
        return 0; /* sparse: the map stays */
    t->dense = malloc(top * sizeof *t->dense);
    if (!t->dense)
        return -ENOMEM;
    for (uint32_t id = 0; id < top; id++)
        t->dense[id] = UINT32_MAX;
    for (size_t i = 0; i < t->n_tok; i++)
        t->dense[t->tok[i].id] = (uint32_t)i;
    t->n_dense = top;
    free(t->imap);
    t->imap = NULL;
    return 0;
}

int32_t tv_vmap_get(const tokvec_tokenizer *t, const unsigned char *b,
                    size_t n)
{
    uint64_t h = tv_hash(b, n);
    for (size_t k = h & t->vmask;; k = (k + 1) & t->vmask) {
        const tv_vslot *s = &t->vmap[k];
        if (s->id < 0)
            return -1;
        if (s->hash == (uint32_t)h && s->len == n &&
            !memcmp(t->blob + s->off, b, n))
            return s->id;
    }
}

/* Returns 0, -ENOMEM, or TOKVEC_E_MISMATCH with *dup the later id of two
 * tokens with the same bytes. */
int tv_vmap_build(tokvec_tokenizer *t, int32_t *dup)
{
    size_t count = 0, size = 16;
    int rc = tv_tok_seal(t);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < t->n_tok; i++)
        count += !t->tok[i].special;
    while (size < count * 2)
        size *= 2;
    free(t->vmap);
    t->vmap = malloc(size * sizeof *t->vmap);
    if (!t->vmap)
        return -ENOMEM;
    for (size_t k = 0; k < size; k++)
        t->vmap[k].id = -1;
    t->vmask = size - 1;
    for (size_t i = 0; i < t->n_tok; i++) {
        const tv_tok *o = &t->tok[i];
        if (o->special)
            continue;
        const unsigned char *b = t->blob + o->off;
        uint64_t h = tv_hash(b, o->len);
        if (i + 8 < t->n_tok) { /* the slot of a token ahead, on its way */
            const tv_tok *a = &t->tok[i + 8];
            __builtin_prefetch(
                &t->vmap[tv_hash(t->blob + a->off, a->len) & t->vmask]);
        }
        size_t k = h & t->vmask;
        for (; t->vmap[k].id >= 0; k = (k + 1) & t->vmask)
            if (t->vmap[k].hash == (uint32_t)h && t->vmap[k].len == o->len &&
                !memcmp(t->blob + t->vmap[k].off, b, o->len)) {
                *dup = o->id;
                return TOKVEC_E_MISMATCH;
            }
        t->vmap[k] = (tv_vslot){(uint32_t)h, o->id, o->off, o->len};
    }
    return 0;
}

static inline size_t pslot(uint64_t key, size_t mask)
{
    uint64_t h = (key ^ (key >> 29)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 32)) & mask;
}

static inline const tv_pslot *pair_get(const tokvec_tokenizer *t, int32_t a,
                                       int32_t b)
{
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (size_t k = pslot(key, t->pmask);; k = (k + 1) & t->pmask) {
        const tv_pslot *s = &t->pmap[k];
        if (s->key == key)
            return s;
        if (s->key == UINT64_MAX)
            return NULL;
    }
}

const tv_pslot *tv_pmap_get(const tokvec_tokenizer *t, int32_t a, int32_t b)
{
    return t->pmap ? pair_get(t, a, b) : NULL;
}

int tv_pmap_init(tokvec_tokenizer *t, size_t expect)
{
    size_t size = 16;
    while (size < expect * 2)
        size *= 2;
    t->pmap = malloc(size * sizeof *t->pmap);
    if (!t->pmap)
        return -ENOMEM;
    for (size_t k = 0; k < size; k++)
        t->pmap[k] = (tv_pslot){UINT64_MAX, 0, -1};
    t->pmask = size - 1;
    t->pcount = 0;
    return 0;
}

/* Keeps the first rank given for a pair (a merges list may repeat one). */
int tv_pmap_put(tokvec_tokenizer *t, int32_t a, int32_t b, uint32_t rank,
                int32_t id)
{
    if (t->pcount * 2 >= t->pmask) { /* grow: rehash into twice the size */
        tv_pslot *old = t->pmap;
        size_t oldn = t->pmask + 1;
        if (tv_pmap_init(t, oldn) < 0) {
            t->pmap = old;
            t->pmask = oldn - 1;
            return -ENOMEM;
        }
        for (size_t k = 0; k < oldn; k++)
            if (old[k].key != UINT64_MAX) {
                size_t j = pslot(old[k].key, t->pmask);
                while (t->pmap[j].key != UINT64_MAX)
                    j = (j + 1) & t->pmask;
                t->pmap[j] = old[k];
                t->pcount++;
            }
        free(old);
    }
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t k = pslot(key, t->pmask);
    while (t->pmap[k].key != UINT64_MAX) {
        if (t->pmap[k].key == key)
            return 0;
        k = (k + 1) & t->pmask;
    }
    t->pmap[k] = (tv_pslot){key, rank, id};
    t->pcount++;
    if (rank > t->max_rank)
        t->max_rank = rank;
    return 0;
}

/* The probe of tv_vmap_get for a hash computed before. */
static inline int32_t vmap_probe(const tokvec_tokenizer *t, uint64_t h,
                                 const unsigned char *b, size_t n)
{
    for (size_t k = h & t->vmask;; k = (k + 1) & t->vmask) {
        const tv_vslot *s = &t->vmap[k];
        if (s->id < 0)
            return -1;
        if (s->hash == (uint32_t)h && s->len == n &&
            !memcmp(t->blob + s->off, b, n))
            return s->id;
    }
}

#define SPLITS 32 /* splits looked up at once */

void tv_vmap_get_many(const tokvec_tokenizer *t, const unsigned char *const *b,
                      const size_t *n, int32_t *id, size_t count)
{
    uint64_t h[SPLITS];
    for (size_t k0 = 0; k0 < count; k0 += SPLITS) {
        size_t m = count - k0 < SPLITS ? count - k0 : SPLITS;
        for (size_t k = 0; k < m; k++) {
            h[k] = tv_hash(b[k0 + k], n[k0 + k]);
            __builtin_prefetch(&t->vmap[h[k] & t->vmask]);
        }
        for (size_t k = 0; k < m; k++)
            id[k0 + k] = vmap_probe(t, h[k], b[k0 + k], n[k0 + k]);
    }
}

/* Sized by the tokens (room for 2.5 pairs a token: GPT-2 has 2.2, and
 * the map grows past that; a smaller map is fewer cache misses), not by
 * their ids. Every split of a token asks the vocabulary for both halves:
 * a token's splits are hashed and their slots prefetched together, then
 * probed (the probes' cache misses overlap instead of following one
 * another: this loop was half of GPT-2's start-up). */
int tv_pmap_from_ranks(tokvec_tokenizer *t)
{
    int rc = t->pmap ? 0 : tv_pmap_init(t, t->n_tok * 5 / 2);
    uint64_t hl[SPLITS], hr[SPLITS], key[SPLITS];
    for (size_t i = 0; rc == 0 && i < t->n_tok; i++) {
        const tv_tok *o = &t->tok[i];
        if (o->special || o->len < 2)
            continue;
        const unsigned char *b = t->blob + o->off;
        size_t n = o->len;
        for (size_t p0 = 1; rc == 0 && p0 < n; p0 += SPLITS) {
            size_t m = n - p0 < SPLITS ? n - p0 : SPLITS;
            for (size_t k = 0; k < m; k++) {
                size_t p = p0 + k;
                hl[k] = tv_hash(b, p);
                hr[k] = tv_hash(b + p, n - p);
                __builtin_prefetch(&t->vmap[hl[k] & t->vmask]);
                __builtin_prefetch(&t->vmap[hr[k] & t->vmask]);
            }
            size_t np = 0;
            for (size_t k = 0; k < m; k++) {
                size_t p = p0 + k;
                int32_t l = vmap_probe(t, hl[k], b, p);
                int32_t r = l >= 0 ? vmap_probe(t, hr[k], b + p, n - p) : -1;
                if (r < 0)
                    continue;
                key[np] = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
                __builtin_prefetch(&t->pmap[pslot(key[np], t->pmask)]);
                np++;
            }
            for (size_t k = 0; rc == 0 && k < np; k++)
                rc = tv_pmap_put(t, (int32_t)(key[k] >> 32),
                                 (int32_t)(uint32_t)key[k], (uint32_t)o->id,
                                 o->id);
        }
    }
    return rc;
}

#define GROW(p, n) \
    ((tmp = realloc((p), (n) * sizeof *(p))) ? ((p) = tmp, 0) : -ENOMEM)

static int state_reserve(tokvec_tok_state *s, size_t n)
{
    void *tmp;
    if (n > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < n)
            cap *= 2;
        if (GROW(s->pid, cap) || GROW(s->prank, cap) || GROW(s->pnext, cap) ||
            GROW(s->pprev, cap) || GROW(s->pver, cap))
            return -ENOMEM;
        s->cap = cap;
    }
    return 0;
}

/* Returns the working memory of a piece over TV_KEEP_PARTS bytes (about
 * 30 bytes a byte) once its ids are out, so that a thread keeps no more
 * than ordinary text needs after a hostile text has passed. */
static void state_release(tokvec_tok_state *s)
{
    free(s->pid);
    free(s->prank);
    free(s->pnext);
    free(s->pprev);
    free(s->pver);
    free(s->heap);
    free(s->arr);
    free(s->stk);
    free(s->blk);
    s->pid = NULL;
    s->prank = s->pnext = s->pprev = s->pver = NULL;
    s->heap = s->arr = s->stk = NULL;
    s->blk = NULL;
    s->cap = s->hcap = s->acap = s->scap = s->ncap = 0;
}

/* Grows a uint64_t array to hold need entries. */
static int grow64(uint64_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    uint64_t *q = realloc(*p, c * sizeof *q);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

/* tiktoken's merge over arrays: pid[0..m) parts starting at pver[k]. */
static size_t merge_small(const tokvec_tokenizer *t, tokvec_tok_state *s,
                          size_t m)
{
    int32_t *id = s->pid;
    uint32_t *rank = s->prank, *res = s->pnext, *st = s->pver;
    for (size_t k = 0; k + 1 < m; k++) {
        const tv_pslot *p = pair_get(t, id[k], id[k + 1]);
        rank[k] = p ? p->rank : TV_NO_RANK;
        res[k] = p ? (uint32_t)p->id : 0;
    }
    while (m > 1) {
        uint32_t min = TV_NO_RANK;
        size_t mi = 0;
        for (size_t k = 0; k + 1 < m; k++)
            if (rank[k] < min)
                min = rank[k], mi = k;
        if (min == TV_NO_RANK)
            break;
        id[mi] = (int32_t)res[mi];
        size_t tail = m - mi - 2; /* parts after the pair */
        memmove(id + mi + 1, id + mi + 2, tail * sizeof *id);
        memmove(st + mi + 1, st + mi + 2, tail * sizeof *st);
        if (tail > 1) { /* pairs after the pair's right neighbour */
            memmove(rank + mi + 1, rank + mi + 2, (tail - 1) * sizeof *rank);
            memmove(res + mi + 1, res + mi + 2, (tail - 1) * sizeof *res);
        }
        m--;
        for (size_t k = mi ? mi - 1 : 0; k <= mi && k + 1 < m; k++) {
            const tv_pslot *p = pair_get(t, id[k], id[k + 1]);
            rank[k] = p ? p->rank : TV_NO_RANK;
            res[k] = p ? (uint32_t)p->id : 0;
        }
    }
    return m;
}

/* --- the long-piece merge -------------------------------------------------
 * Parts are nodes 0..n-1 (a part keeps the index of its first byte), linked
 * by pnext/pprev; prank[k] is the rank of the pair (k, pnext[k]) as it is
 * now (TV_NO_RANK: none, or k is merged away) and pver[k] what it makes.
 * A pending pair is one key, rank << 32 | left part: keys order pairs as
 * tiktoken does (lowest rank, then leftmost). A key is stale when
 * prank[left] no longer equals its rank: a pair only changes by growing,
 * and a longer pair is another token (or another merge line), so it has
 * another rank; a part holds at most one live key.
 *
 * Pending keys live in one of four places, which keeps the working set
 * small and mostly sequential (a heap of every pair was a cache miss per
 * level per pop; 10 MB pieces took 7-20 s):
 *  - buckets by rank >> shift (at most TV_NBUCKETS), FIFO lists of nodes,
 *    for keys above the current bucket; a bitmap marks those not empty;
 *  - arr: the current bucket, sorted, read from ai on;
 *  - stk: keys of the current bucket or below smaller than arr[ai] and
 *    than every key under them (top smallest): what merging in rank order
 *    from left to right makes just behind itself;
 *  - heap: any other key of the current bucket or below (a lower rank that
 *    a merge makes: possible when a vocabulary's token is reachable by
 *    more than one split).
 * The next pair is the smaller of heap[0] and stk's top (else arr[ai]);
 * when all three are empty the next non-empty bucket is sorted into arr.
 * Every key is handled once, so the merge is O(n log n) at worst and
 * close to linear on real and repetitive text. */

#define TV_NBUCKETS (1u << 18)
#define TV_AHEAD 16 /* prefetch the parts of the pair this far ahead */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void heap_up(uint64_t *h, size_t i)
{
    uint64_t e = h[i];
    while (i > 0 && e < h[(i - 1) / 4]) {
        h[i] = h[(i - 1) / 4];
        i = (i - 1) / 4;
    }
    h[i] = e;
}

/* A 4-ary min-heap: its four children share a cache line. */
static void heap_down(uint64_t *h, size_t n, size_t i)
{
    uint64_t e = h[i];
    for (;;) {
        size_t c = 4 * i + 1, best = c;
        if (c >= n)
            break;
        for (size_t k = c + 1; k < c + 4 && k < n; k++)
            if (h[k] < h[best])
                best = k;
        if (h[best] >= e)
            break;
        h[i] = h[best];
        i = best;
    }
    h[i] = e;
}

static int bucket_add(tokvec_tok_state *s, uint32_t b, uint64_t key)
{
    uint32_t tail = s->btail[b];
    if (tail && key < s->blk[tail - 1].key[s->blk[tail - 1].n - 1])
        s->bmess[b / 64] |= 1ull << (b % 64);
    if (!tail || s->blk[tail - 1].n == TV_BLOCK_KEYS) {
        uint32_t node = s->nfree;
        if (node) {
            s->nfree = s->blk[node - 1].next;
        } else {
            if (s->nused == s->ncap) {
                void *tmp;
                size_t cap = s->ncap ? 2 * s->ncap : 256;
                if (cap > UINT32_MAX - 1 || GROW(s->blk, cap))
                    return -ENOMEM;
                s->ncap = cap;
            }
            node = (uint32_t)++s->nused;
        }
        s->blk[node - 1].n = 0;
        s->blk[node - 1].next = 0;
        if (tail)
            s->blk[tail - 1].next = node;
        else
            s->bhead[b] = node;
        s->btail[b] = tail = node;
        s->bmap[b / 64] |= 1ull << (b % 64);
    }
    tv_block *k = &s->blk[tail - 1];
    k->key[k->n++] = key;
    return 0;
}

/* The first non-empty bucket after cur (-1: before the first), or -1. */
static long bucket_next(const tokvec_tok_state *s, long cur, size_t nb)
{
    size_t b = (size_t)(cur + 1), w = b / 64;
    if (b >= nb)
        return -1;
    uint64_t m = s->bmap[w] & (~0ull << (b % 64));
    while (!m) {
        if (++w >= (nb + 63) / 64)
            return -1;
        m = s->bmap[w];
    }
    return (long)(w * 64 + (size_t)__builtin_ctzll(m));
}

/* Makes bucket b the current one: read in place when its keys came in
 * order (a block goes back to the free list once read), else copied into
 * arr and sorted. */
static int bucket_take(tokvec_tok_state *s, uint32_t b)
{
    s->an = s->ai = 0;
    s->cb = s->bhead[b];
    s->ci = 0;
    s->bhead[b] = s->btail[b] = 0;
    s->bmap[b / 64] &= ~(1ull << (b % 64));
    if (!(s->bmess[b / 64] >> (b % 64) & 1))
        return 0;
    s->bmess[b / 64] &= ~(1ull << (b % 64));
    for (uint32_t node = s->cb; node;) {
        tv_block *k = &s->blk[node - 1];
        if (grow64(&s->arr, &s->acap, s->an + k->n))
            return -ENOMEM;
        memcpy(s->arr + s->an, k->key, k->n * sizeof *k->key);
        s->an += k->n;
        uint32_t next = k->next;
        k->next = s->nfree;
        s->nfree = node;
        node = next;
    }
    s->cb = 0;
    qsort(s->arr, s->an, sizeof *s->arr, cmp_u64);
    return 0;
}

/* The current bucket's next key (UINT64_MAX: none). */
static inline uint64_t run_head(const tokvec_tok_state *s)
{
    if (s->ai < s->an)
        return s->arr[s->ai];
    return s->cb ? s->blk[s->cb - 1].key[s->ci] : UINT64_MAX;
}

static inline void run_next(tokvec_tok_state *s)
{
    uint64_t ahead = UINT64_MAX;
    if (s->ai < s->an) {
        s->ai++;
        if (s->ai + TV_AHEAD < s->an)
            ahead = s->arr[s->ai + TV_AHEAD];
    } else {
        tv_block *k = &s->blk[s->cb - 1];
        if (++s->ci == k->n) {
            uint32_t next = k->next;
            k->next = s->nfree;
            s->nfree = s->cb;
            s->cb = next;
            s->ci = 0;
        } else if (s->ci + TV_AHEAD / 2 < k->n) {
            ahead = k->key[s->ci + TV_AHEAD / 2];
        }
    }
    if (ahead != UINT64_MAX)
        __builtin_prefetch(&s->prank[(uint32_t)ahead]);
}

/* Sets the pair (l, r) (r == UINT32_MAX: none) and files its key. */
static int set_pair(const tokvec_tokenizer *t, tokvec_tok_state *s, uint32_t l,
                    uint32_t r, long cur, unsigned shift)
{
    const tv_pslot *p = r == UINT32_MAX ? NULL
                                        : pair_get(t, s->pid[l], s->pid[r]);
    if (!p) {
        s->prank[l] = TV_NO_RANK;
        return 0;
    }
    s->prank[l] = p->rank;
    s->pver[l] = (uint32_t)p->id;
    uint64_t key = (uint64_t)p->rank << 32 | l;
    if ((long)(p->rank >> shift) > cur)
        return bucket_add(s, p->rank >> shift, key);
    uint64_t top = s->sn ? s->stk[s->sn - 1] : run_head(s);
    if (key < top) {
        if (s->sn == s->scap && grow64(&s->stk, &s->scap, s->sn + 1))
            return -ENOMEM;
        s->stk[s->sn++] = key;
        return 0;
    }
    if (s->hn == s->hcap && grow64(&s->heap, &s->hcap, s->hn + 1))
        return -ENOMEM;
    s->heap[s->hn++] = key;
    heap_up(s->heap, s->hn - 1);
    return 0;
}

static int merge_long(const tokvec_tokenizer *t, tokvec_tok_state *s, size_t n)
{
    const uint32_t none = UINT32_MAX;
    unsigned shift = 0;
    while ((t->max_rank >> shift) >= TV_NBUCKETS)
        shift++;
    size_t nb = (size_t)(t->max_rank >> shift) + 1;
    /* each on its own: after a failure the next piece allocates what is
     * missing (the state stays usable) */
    if (!s->bhead)
        s->bhead = calloc(TV_NBUCKETS, sizeof *s->bhead);
    if (!s->btail)
        s->btail = calloc(TV_NBUCKETS, sizeof *s->btail);
    if (!s->bmap)
        s->bmap = calloc(TV_NBUCKETS / 64, sizeof *s->bmap);
    if (!s->bmess)
        s->bmess = calloc(TV_NBUCKETS / 64, sizeof *s->bmess);
    if (!s->bhead || !s->btail || !s->bmap || !s->bmess)
        return -ENOMEM;
    s->nused = s->nfree = 0;
    s->an = s->ai = s->sn = s->hn = 0;
    s->cb = 0;
    long cur = -1;
    int rc = 0;
    for (size_t k = 0; k < n; k++) {
        s->pnext[k] = k + 1 < n ? (uint32_t)k + 1 : none;
        s->pprev[k] = k ? (uint32_t)k - 1 : none;
    }
    for (size_t k = 0; rc == 0 && k < n; k++)
        rc = set_pair(t, s, (uint32_t)k, s->pnext[k], cur, shift);
    while (rc == 0) {
        uint64_t x = s->sn ? s->stk[s->sn - 1] : run_head(s);
        uint64_t y = s->hn ? s->heap[0] : UINT64_MAX;
        if (x == UINT64_MAX && y == UINT64_MAX) {
            cur = bucket_next(s, cur, nb);
            if (cur < 0)
                break;
            rc = bucket_take(s, (uint32_t)cur);
            continue;
        }
        if (x < y) {
            if (s->sn)
                s->sn--;
            else
                run_next(s);
        } else {
            x = y;
            s->heap[0] = s->heap[--s->hn];
            if (s->hn)
                heap_down(s->heap, s->hn, 0);
        }
        uint32_t l = (uint32_t)x;
        if (s->prank[l] != (uint32_t)(x >> 32))
            continue; /* stale */
        uint32_t r = s->pnext[l], pv = s->pprev[l], nx = s->pnext[r];
        s->pid[l] = (int32_t)s->pver[l];
        s->prank[r] = TV_NO_RANK;
        s->pnext[l] = nx;
        if (nx != none)
            s->pprev[nx] = l;
        if (pv != none)
            rc = set_pair(t, s, pv, l, cur, shift);
        if (rc == 0)
            rc = set_pair(t, s, l, nx, cur, shift);
    }
    if (rc) { /* leave the buckets empty for the next piece */
        memset(s->bhead, 0, TV_NBUCKETS * sizeof *s->bhead);
        memset(s->btail, 0, TV_NBUCKETS * sizeof *s->btail);
        memset(s->bmap, 0, TV_NBUCKETS / 64 * sizeof *s->bmap);
        memset(s->bmess, 0, TV_NBUCKETS / 64 * sizeof *s->bmess);
    }
    return rc;
}

/* Merges p[0..n) into ids/starts; returns the count or -ENOMEM. */
static long merge(const tokvec_tokenizer *t, tokvec_tok_state *s,
                  const unsigned char *p, size_t n, int heap)
{
    if (n >= UINT32_MAX || state_reserve(s, n) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++)
        s->pid[k] = t->byte_id[p[k]];
    if (!heap) {
        for (size_t k = 0; k < n; k++)
            s->pver[k] = (uint32_t)k;
        return (long)merge_small(t, s, n);
    }
    if (merge_long(t, s, n) < 0)
        return -ENOMEM;
    size_t m = 0; /* compact into pid[], starts into pver[] */
    for (uint32_t k = 0; k != UINT32_MAX; k = s->pnext[k]) {
        s->pid[m] = s->pid[k];
        s->pver[m++] = k;
    }
    return (long)m;
}

int tv_bpe_merge_mode(const tokvec_tokenizer *t, tokvec_tok_state *s,
                      const unsigned char *p, size_t n, int heap, int32_t *ids,
                      size_t *nids)
{
    long m = merge(t, s, p, n, heap);
    if (m < 0)
        return (int)m;
    memcpy(ids, s->pid, (size_t)m * sizeof *ids);
    *nids = (size_t)m;
    return 0;
}

int tv_ids_reserve(tokvec_tok_ids *o, size_t more, int offs)
{
    size_t need = o->n + more + 1;
    if (need <= o->cap && (!offs || (o->offsets && o->stops)))
        return 0;
    size_t cap = o->cap > 256 ? o->cap : 256;
    while (cap < need)
        cap *= 2;
    int32_t *ids = realloc(o->ids, cap * sizeof *ids);
    if (!ids)
        return -ENOMEM;
    o->ids = ids;
    if (offs || o->offsets) {
        size_t *of = realloc(o->offsets, cap * sizeof *of);
        if (!of)
            return -ENOMEM;
        o->offsets = of;
        size_t *st = realloc(o->stops, cap * sizeof *st);
        if (!st)
            return -ENOMEM;
        o->stops = st;
    }
    o->cap = cap;
    return 0;
}

static void emit(tokvec_tok_ids *out, int offs, int32_t id, size_t at)
{
    if (offs)
        out->offsets[out->n] = at;
    out->ids[out->n++] = id;
}

int tv_bpe_piece(const tokvec_tokenizer *t, tokvec_tok_state *s,
                 const unsigned char *p, size_t n, size_t base,
                 tokvec_tok_ids *out, int offs)
{
    if (tv_ids_reserve(out, n, offs) < 0)
        return -ENOMEM;
    if (n == 1) {
        emit(out, offs, t->byte_id[p[0]], base);
        return 0;
    }
    tv_cache_ent *c = NULL;
    tv_small_ent *sm = NULL;
    if (s->cache && s->cache_of != t->serial) { /* another tokenizer's */
        memset(s->cache, 0, CACHE_SLOTS * sizeof *s->cache);
        memset(s->small, 0, SMALL_SLOTS * sizeof *s->small);
        s->cache_of = t->serial;
    }
    uint64_t key[2] = {0, 0}, h = n <= CACHE_BYTES ? tv_hash(p, n) : 0;
    if (n <= SMALL_BYTES && s->small) {
        small_key(p, n, key);
        sm = &s->small[(h >> 32) & (SMALL_SLOTS - 1)];
        if (sm->key[0] == key[0] && sm->key[1] == key[1]) {
            size_t at = base;
            for (size_t k = 0; k < sm->n; k++) {
                emit(out, offs, sm->ids[k], at);
                if (offs)
                    at += tv_tok_get(t, sm->ids[k])->len;
            }
            return 0;
        }
    }
    if (n <= CACHE_BYTES && s->cache) {
        c = &s->cache[h & (CACHE_SLOTS - 1)];
        if (c->len == n && !memcmp(c->bytes, p, n)) {
            for (size_t k = 0; k < c->n; k++)
                emit(out, offs, c->ids[k], base + c->start[k]);
            return 0;
        }
    }
    int32_t whole = t->whole_lookup ? tv_vmap_get(t, p, n) : -1;
    long m = 1;
    if (whole >= 0) {
        emit(out, offs, whole, base);
    } else {
        m = merge(t, s, p, n, n > HEAP_ABOVE);
        if (m < 0)
            return -ENOMEM;
    }
    for (long k = 0; whole < 0 && k < m; k++)
        emit(out, offs, s->pid[k], base + s->pver[k]);
    if (sm && m <= SMALL_IDS) { /* the answer, for the next time */
        sm->key[0] = key[0];
        sm->key[1] = key[1];
        sm->n = (uint32_t)m;
        for (long k = 0; k < m; k++)
            sm->ids[k] = whole >= 0 ? whole : s->pid[k];
    } else if (c) {
        c->len = (uint8_t)n;
        c->n = (uint8_t)m;
        memcpy(c->bytes, p, n);
        for (long k = 0; k < m; k++) {
            c->ids[k] = whole >= 0 ? whole : s->pid[k];
            c->start[k] = whole >= 0 ? 0 : (uint8_t)s->pver[k];
        }
    }
    if (n > TV_KEEP_PARTS)
        state_release(s);
    return 0;
}

tokvec_tok_state *tv_bpe_state_new(void)
{
    tokvec_tok_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cache = calloc(CACHE_SLOTS, sizeof *s->cache);
    s->small = calloc(SMALL_SLOTS, sizeof *s->small);
    if (!s->cache || !s->small) {
        free(s->cache);
        free(s->small);
        free(s);
        return NULL;
    }
    return s;
}

void tv_bpe_state_free(tokvec_tok_state *s)
{
    if (!s)
        return;
    state_release(s);
    free(s->bhead);
    free(s->btail);
    free(s->bmap);
    free(s->bmess);
    free(s->cache);
    free(s->small);
    free(s->sp_hit);
    free(s);
}
