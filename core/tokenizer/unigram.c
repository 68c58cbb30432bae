/* unigram.c -- the Unigram model exactly as Hugging Face tokenizers runs
 * it (models/unigram/model.rs: Unigram::from, encode_optimized, tokenize).
 *
 * The vocabulary is a byte trie, built as a hash of edges (parent, byte)
 * -> child, then laid out breadth first as a double array (slot 0 the
 * root; the child of slot s by byte c is slot base[s] + c when that
 * slot's check is s): one load per byte walked, the shallow nodes that
 * every character start visits packed at the front. A node holds the id
 * of the piece that ends there (the last of equal pieces, as tokenizers'
 * HashMap insert leaves it). Encoding is one pass
 * of the Viterbi over character starts, in tokenizers' order and with its
 * comparisons, so ties break the same way:
 *   for each character start p (left to right), with best[p] the score of
 *   the best path to p: for each piece matching at p, shortest first,
 *   candidate = score + best[p] replaces the node at p + length when that
 *   node is unset or candidate > its score (strictly); then, when no piece
 *   is exactly the character at p, an unknown node of score
 *   min_score - 10 (kUnkPenalty) goes to the character's end the same way.
 * The path is read back from the end; consecutive nodes whose id is
 * unk_id are fused into one string; each resulting string is looked up as
 * a whole (token_to_ids): found, its id; else with byte_fallback and every
 * byte's "<0xXX>" piece present, those; else unk_id. Every step is O(1)
 * per trie edge walked: a run of unknown characters costs one lookup per
 * byte, a long word the depth of its matches.
 * The lattice arrays hold a window, not the whole string: every
 * UNI_WINDOW bytes, the last node shared by the best paths to every node
 * a piece could still start from (those within the longest piece of p) is
 * on the final path (every path to the end goes through one of those), so
 * the path up to it is read back and emitted there (unknowns pending
 * fusion carried on) and the arrays move down to it. The same scores are
 * computed in the same order, so the result is the whole string's.
 * The string may also come in pieces (tv_unigram_stream_*, for a word of
 * megabytes that the pipeline normalizes a piece at a time): the pass
 * stops where a piece could reach past the bytes at hand and goes on
 * from there with the next; where it stands lives in tv_uni_work (at),
 * and it never reads again the bytes before the window's start or the
 * pending unknowns. A long run of byte-fallback tokens goes to the sink
 * in batches too.
 *
 * Must hold: the model is immutable after construction; scores are f64;
 * pieces are valid UTF-8. Threads: any number may encode with one model,
 * each with its own tv_uni_work.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_utf8.h"
#include "unigram.h"

#define UNI_MAX_PIECES (1u << 24)
#define UNK_PENALTY 10.0
#define NO_FROM SIZE_MAX
#define UNI_WINDOW 4096 /* bytes of lattice between convergence checks */

typedef struct uni_edge { /* (parent << 8 | byte) + 1 -> child; 0 empty */
    uint64_t key;
    uint32_t child;
} uni_edge;

/* One slot of the double array: the children of the node in slot s are
 * in slots base + byte whose check is s. */
typedef struct uni_slot {
    uint32_t check; /* the parent's slot; DAT_FREE: no node here */
    int32_t base;   /* where this node's children are (>= 0) */
    int32_t id;     /* the piece ending here, -1 none */
} uni_slot;

#define DAT_FREE UINT32_MAX

struct tv_unigram {
    size_t n;             /* pieces */
    double *score;        /* per id */
    uint32_t *off, *len;  /* piece bytes: blob + off[id] */
    unsigned char *blob;  /* all pieces */
    uni_slot *dat;        /* the trie as a double array, root in slot 0 */
    size_t ndat;          /* its slots */
    int64_t unk;          /* unk_id or -1 */
    int byte_fallback;    /* tokenizers' byte_fallback */
    int32_t byte_id[256]; /* "<0xXX>" ids or -1 */
    double unk_score;     /* min_score - kUnkPenalty */
    size_t maxlen;        /* bytes of the longest piece */
};

/* The byte trie while it is built: node 0 the root, its children in a
 * table of 256, deeper edges in one open-addressing hash. */
typedef struct uni_trie {
    int32_t *node_tok; /* per node: id ending there or -1 */
    uint32_t n_nodes;
    uint32_t root[256]; /* root's children (0: none) */
    uni_edge *edge;
    size_t emask; /* hash size - 1 */
} uni_trie;

/* The lattice of one window of the text: entry i is byte wb + i. */
/* Where an encode stands between calls (tv_unigram_stream_*): every
 * position is a byte of the whole string. */
typedef struct uni_pos {
    size_t p;      /* the next character start to relax from */
    size_t hw;     /* from[] set up to this byte */
    size_t check;  /* the next convergence check at or past this byte */
    size_t reach;  /* bytes a piece may reach past p (>= 4: a character) */
    size_t wb;     /* the window's first byte: entry 0 of the arrays */
    size_t ustart; /* fused unknowns pending from here, NO_FROM: none */
    size_t base;   /* added to every span */
} uni_pos;

struct tv_uni_work {
    double *best;        /* best path score to the byte */
    size_t *from;        /* its last node's start, NO_FROM: unset */
    int32_t *id;         /* its last node's id */
    unsigned char *mark; /* all 0 between converge() calls */
    size_t cap;          /* entries of the four */
    uni_pos at;          /* a string given in pieces: where it stands */
};

static uint64_t edge_hash(uint64_t k)
{
    k *= 0x9E3779B97F4A7C15ull;
    return k ^ (k >> 29);
}

/* The child of node by byte c, 0 when none. */
static uint32_t child_of(const uni_trie *u, uint32_t node, unsigned c)
{
    if (node == 0)
        return u->root[c];
    uint64_t key = ((uint64_t)node << 8 | c) + 1;
    for (size_t i = edge_hash(key) & u->emask;; i = (i + 1) & u->emask) {
        if (u->edge[i].key == key)
            return u->edge[i].child;
        if (u->edge[i].key == 0)
            return 0;
    }
}

/* Adds edge node -c-> child (absent before). */
static void edge_put(uni_trie *u, uint32_t node, unsigned c, uint32_t ch)
{
    if (node == 0) {
        u->root[c] = ch;
        return;
    }
    uint64_t key = ((uint64_t)node << 8 | c) + 1;
    size_t i = edge_hash(key) & u->emask;
    while (u->edge[i].key != 0)
        i = (i + 1) & u->emask;
    u->edge[i].key = key;
    u->edge[i].child = ch;
}

/* The slot of the child of slot s by byte c, 0 when none (slot 0 is the
 * root, nobody's child). */
static inline uint32_t dat_child(const tv_unigram *u, uint32_t s, unsigned c)
{
    size_t t = (size_t)u->dat[s].base + c;
    return t < u->ndat && u->dat[t].check == s ? (uint32_t)t : 0;
}

int32_t tv_unigram_id(const tv_unigram *u, const unsigned char *s, size_t n)
{
    uint32_t node = 0;
    if (n == 0)
        return -1; /* the trie never yields the empty prefix */
    for (size_t i = 0; i < n; i++) {
        node = dat_child(u, node, s[i]);
        if (node == 0)
            return -1;
    }
    return u->dat[node].id;
}

/* The trie over all pieces; bytes of all pieces is total. */
static int build_trie(const tv_unigram *u, uni_trie *t, size_t total)
{
    size_t cap = 16;
    while (cap < 2 * total + 2)
        cap *= 2;
    t->edge = calloc(cap, sizeof *t->edge);
    t->node_tok = malloc((total + 1) * sizeof *t->node_tok);
    if (!t->edge || !t->node_tok)
        return -ENOMEM;
    t->emask = cap - 1;
    t->node_tok[0] = -1;
    t->n_nodes = 1;
    for (size_t id = 0; id < u->n; id++) {
        const unsigned char *p = u->blob + u->off[id];
        uint32_t node = 0;
        for (size_t i = 0; i < u->len[id]; i++) {
            uint32_t ch = child_of(t, node, p[i]);
            if (ch == 0) {
                ch = t->n_nodes++;
                t->node_tok[ch] = -1;
                edge_put(t, node, p[i], ch);
            }
            node = ch;
        }
        if (node != 0)
            t->node_tok[node] = (int32_t)id;
    }
    return 0;
}

/* The double array while it is built: its free slots in a doubly linked
 * list (nxt/prv, DAT_FREE ends it) for the first-fit search. */
typedef struct dat_build {
    uni_slot *dat;
    uint32_t *nxt, *prv;
    size_t cap;
    size_t end;          /* past the last slot taken */
    uint32_t head, tail; /* free list, DAT_FREE when empty */
} dat_build;

#define DAT_TRIES 64 /* free slots tried for a node before the end */
#define DAT_MAX ((size_t)INT32_MAX - 512)

static int dat_grow(dat_build *d, size_t need)
{
    if (need <= d->cap)
        return 0;
    if (need > DAT_MAX)
        return -ENOMEM;
    size_t cap = d->cap ? d->cap : 1024;
    while (cap < need)
        cap *= 2;
    if (cap > DAT_MAX)
        cap = DAT_MAX;
    uni_slot *s = realloc(d->dat, cap * sizeof *s);
    if (s)
        d->dat = s;
    uint32_t *a = s ? realloc(d->nxt, cap * sizeof *a) : NULL;
    if (a)
        d->nxt = a;
    uint32_t *b = a ? realloc(d->prv, cap * sizeof *b) : NULL;
    if (!b)
        return -ENOMEM;
    d->prv = b;
    for (size_t i = d->cap; i < cap; i++) {
        d->dat[i] = (uni_slot){DAT_FREE, 0, -1};
        d->nxt[i] = DAT_FREE;
        d->prv[i] = d->tail;
        if (d->tail == DAT_FREE)
            d->head = (uint32_t)i;
        else
            d->nxt[d->tail] = (uint32_t)i;
        d->tail = (uint32_t)i;
    }
    d->cap = cap;
    return 0;
}

/* Takes free slot i off the list for a child of slot parent. */
static void dat_take(dat_build *d, uint32_t i, uint32_t parent, int32_t id)
{
    uint32_t a = d->prv[i], b = d->nxt[i];
    if (a == DAT_FREE)
        d->head = b;
    else
        d->nxt[a] = b;
    if (b == DAT_FREE)
        d->tail = a;
    else
        d->prv[b] = a;
    d->dat[i] = (uni_slot){parent, 0, id};
    if (i >= d->end)
        d->end = (size_t)i + 1;
}

/* A base at which every byte of c[0..k) (ascending) is a free slot: the
 * first fit among the first DAT_TRIES free slots, else past the end. */
static int dat_base(dat_build *d, const unsigned char *c, size_t k,
                    size_t *out)
{
    size_t tries = 0;
    for (uint32_t f = d->head; f != DAT_FREE && tries < DAT_TRIES;
         f = d->nxt[f]) {
        if (f < c[0])
            continue;
        tries++;
        size_t b = f - c[0], j = 1;
        if (dat_grow(d, b + 257) < 0)
            return -ENOMEM;
        while (j < k && d->dat[b + c[j]].check == DAT_FREE)
            j++;
        if (j == k) {
            *out = b;
            return 0;
        }
    }
    *out = d->end;
    return dat_grow(d, d->end + 257);
}

/* The hash trie t laid out as u's double array, breadth first (the
 * shallow nodes every encode walks sit together at the front). */
static int build_dat(tv_unigram *u, const uni_trie *t)
{
    int rc = 0;
    size_t nn = t->n_nodes, ne = 0;
    dat_build d = {NULL, NULL, NULL, 0, 0, DAT_FREE, DAT_FREE};
    uint32_t *first = calloc(nn + 1, sizeof *first); /* children of x: */
    uint32_t *kid = malloc(nn * sizeof *kid);        /* kid[first[x]..] */
    unsigned char *kb = malloc(nn);                  /* and their bytes */
    uint32_t *queue = malloc(nn * sizeof *queue);
    uint32_t *slot = malloc(nn * sizeof *slot); /* node -> its slot */
    if (!first || !kid || !kb || !queue || !slot) {
        rc = -ENOMEM;
        goto cleanup;
    }
    /* children by parent (counting sort), each parent's by byte */
    for (unsigned c = 0; c < 256; c++)
        if (t->root[c])
            first[1]++;
    for (size_t i = 0; i <= t->emask; i++)
        if (t->edge[i].key)
            first[((t->edge[i].key - 1) >> 8) + 1]++;
    for (size_t x = 0; x < nn; x++)
        first[x + 1] += first[x];
    for (unsigned c = 0; c < 256; c++)
        if (t->root[c]) {
            kid[ne] = t->root[c];
            kb[ne++] = (unsigned char)c;
        }
    {
        uint32_t *at = slot; /* next free place per parent (borrowed) */
        for (size_t x = 1; x < nn; x++)
            at[x] = first[x];
        for (size_t i = 0; i <= t->emask; i++) {
            uint64_t k = t->edge[i].key;
            if (!k)
                continue;
            size_t x = (size_t)((k - 1) >> 8);
            kid[at[x]] = t->edge[i].child;
            kb[at[x]++] = (unsigned char)((k - 1) & 255);
        }
    }
    for (size_t x = 1; x < nn; x++) /* insertion sort by byte */
        for (size_t i = first[x] + 1; i < first[x + 1]; i++)
            for (size_t j = i; j > first[x] && kb[j - 1] > kb[j]; j--) {
                unsigned char b = kb[j];
                uint32_t q = kid[j];
                kb[j] = kb[j - 1];
                kid[j] = kid[j - 1];
                kb[j - 1] = b;
                kid[j - 1] = q;
            }
    rc = dat_grow(&d, 1024);
    if (rc)
        goto cleanup;
    dat_take(&d, 0, DAT_FREE - 1, -1); /* the root: slot 0, no parent */
    slot[0] = 0;
    size_t qh = 0, qt = 0;
    queue[qt++] = 0;
    while (qh < qt) {
        uint32_t x = queue[qh++];
        size_t k = first[x + 1] - first[x], b = 0;
        if (k == 0)
            continue;
        rc = dat_base(&d, kb + first[x], k, &b);
        if (rc)
            goto cleanup;
        d.dat[slot[x]].base = (int32_t)b;
        for (size_t i = first[x]; i < first[x + 1]; i++) {
            uint32_t y = kid[i];
            slot[y] = (uint32_t)(b + kb[i]);
            dat_take(&d, slot[y], slot[x], t->node_tok[y]);
            queue[qt++] = y;
        }
    }
    size_t used = d.end;
    uni_slot *s = realloc(d.dat, used * sizeof *s);
    u->dat = s ? s : d.dat;
    u->ndat = used;
    d.dat = NULL;
cleanup:
    free(d.dat);
    free(d.nxt);
    free(d.prv);
    free(first);
    free(kid);
    free(kb);
    free(queue);
    free(slot);
    return rc;
}

int tv_unigram_new(const unsigned char *const *piece, const size_t *len,
                   const double *score, size_t n, int64_t unk_id,
                   int byte_fallback, tv_unigram **out)
{
    int rc = 0;
    size_t total = 0;
    *out = NULL;
    if (n >= UNI_MAX_PIECES || unk_id >= (int64_t)n)
        return TOKVEC_E_INVAL;
    for (size_t i = 0; i < n; i++) {
        if (len[i] > UINT32_MAX / 4 || total > UINT32_MAX / 4 ||
            !tv_u8_valid(piece[i], len[i]))
            return TOKVEC_E_INVAL;
        total += len[i];
    }
    tv_unigram *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    u->n = n;
    u->unk = unk_id < 0 ? -1 : unk_id;
    u->byte_fallback = byte_fallback != 0;
    u->score = malloc((n + 1) * sizeof *u->score);
    u->off = malloc((n + 1) * sizeof *u->off);
    u->len = malloc((n + 1) * sizeof *u->len);
    u->blob = malloc(total + 1);
    if (!u->score || !u->off || !u->len || !u->blob) {
        rc = -ENOMEM;
        goto cleanup;
    }
    double min_score = INFINITY;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        u->score[i] = score[i];
        if (score[i] < min_score)
            min_score = score[i];
        u->off[i] = (uint32_t)at;
        u->len[i] = (uint32_t)len[i];
        if (len[i] > u->maxlen)
            u->maxlen = len[i];
        if (len[i])
            memcpy(u->blob + at, piece[i], len[i]);
        at += len[i];
    }
    u->unk_score = min_score - UNK_PENALTY;
    uni_trie t = {0};
    rc = build_trie(u, &t, total);
    if (rc == 0)
        rc = build_dat(u, &t);
    free(t.node_tok);
    free(t.edge);
    if (rc < 0)
        goto cleanup;
    for (unsigned b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        u->byte_id[b] = tv_unigram_id(u, (const unsigned char *)name, 6);
    }
    *out = u;
    u = NULL;
cleanup:
    tv_unigram_free(u);
    return rc;
}

void tv_unigram_free(tv_unigram *u)
{
    if (!u)
        return;
    free(u->score);
    free(u->off);
    free(u->len);
    free(u->blob);
    free(u->dat);
    free(u);
}

size_t tv_unigram_size(const tv_unigram *u)
{
    return u->n;
}

int64_t tv_unigram_unk(const tv_unigram *u)
{
    return u->unk;
}

const unsigned char *tv_unigram_piece(const tv_unigram *u, int32_t id,
                                      size_t *len, double *score)
{
    if (id < 0 || (size_t)id >= u->n)
        return NULL;
    if (len)
        *len = u->len[id];
    if (score)
        *score = u->score[id];
    return u->blob + u->off[id];
}

/* A score as tokenizers reads it. serde_json (without its
 * float_roundtrip feature, as tokenizers builds it) does not round
 * decimals correctly: it takes the digits as an integer s (u64 -> f64,
 * rounded) and the decimal exponent e, then computes s * 10^e or
 * s / 10^-e with the f64 nearest 10^|e| (dividing by 1e308 first while
 * |e| > 308). About one score in ten comes out 1 ulp away from the
 * correctly rounded value, and Viterbi ties then break differently. jansson
 * gives the correctly rounded d; files that tokenizers or Python wrote
 * hold the shortest decimal that reads back as d, so those digits are
 * found again and put through serde_json's steps. pow10[k]: the f64
 * nearest 10^k, k = 0..308. */
/* Whether sig * 10^e reads back as a (> 0): one IEEE operation when sig
 * and 10^|e| are exact doubles (then correctly rounded, Clinger's fast
 * path), else strtod. */
static int reads_back(uint64_t sig, int e, double a, const double *pow10)
{
    if (sig < (1ull << 53) && e >= -22 && e <= 22)
        return (e >= 0 ? (double)sig * pow10[e] : (double)sig / pow10[-e]) ==
               a;
    char buf[48];
    snprintf(buf, sizeof buf, "%llue%d", (unsigned long long)sig, e);
    return strtod(buf, NULL) == a;
}

/* The digits of a (> 0, finite) rounded to p significant ones, as the
 * integer *sig and exponent *e (a ~ sig * 10^e), from printf. */
static void digits_printf(double a, int p, uint64_t *sig, int *e)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.*e", p - 1, a);
    uint64_t s = 0;
    const char *c = buf;
    for (; *c && *c != 'e'; c++)
        if (*c >= '0' && *c <= '9')
            s = s * 10 + (uint64_t)(*c - '0');
    *sig = s;
    *e = (int)strtol(c + 1, NULL, 10) - (p - 1);
}

/* The shortest decimal that reads back as a (> 0, finite; 17 digits when
 * none of 1..16 does), as *sig and *e. One printf of 17 digits, each
 * shorter rounding taken from them (the same as printf's own unless the
 * digits cut off are exactly 5000...: then printf is asked). */
static void shortest(double a, const double *pow10, uint64_t *sig, int *e)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.16e", a); /* d.dddddddddddddddde+XX */
    char dig[17];
    dig[0] = buf[0];
    memcpy(dig + 1, buf + 2, 16);
    int ex = (int)strtol(buf + 19, NULL, 10);
    uint64_t s = 0, ten = 1;
    for (int p = 1; p <= 16; p++) {
        s = s * 10 + (uint64_t)(dig[p - 1] - '0');
        ten *= 10;
        int k = p + 1;
        while (k < 17 && dig[k] == '0')
            k++;
        uint64_t r;
        int re;
        if (dig[p] == '5' && k == 17) {
            digits_printf(a, p, &r, &re);
        } else {
            r = s + (dig[p] >= '5');
            re = ex - (p - 1);
            if (r == ten) {
                r /= 10;
                re++;
            }
        }
        if (reads_back(r, re, a, pow10)) {
            *sig = r;
            *e = re;
            return;
        }
    }
    *sig = s * 10 + (uint64_t)(dig[16] - '0');
    *e = ex - 16;
}

/* A score as tokenizers reads it. serde_json (without its
 * float_roundtrip feature, as tokenizers builds it) does not round
 * decimals correctly: it takes the digits as an integer s (u64 -> f64,
 * rounded) and the decimal exponent e, then computes s * 10^e or
 * s / 10^-e with the f64 nearest 10^|e| (dividing by 1e308 first while
 * |e| > 308). About one score in ten comes out 1 ulp away from the
 * correctly rounded value, and Viterbi ties then break differently. jansson
 * gives the correctly rounded d; files that tokenizers or Python wrote
 * hold the shortest decimal that reads back as d, so those digits are
 * found again and put through serde_json's steps. pow10[k]: the f64
 * nearest 10^k, k = 0..308. */
static double serde_f64(double d, const double *pow10)
{
    if (d == 0 || !isfinite(d))
        return d;
    uint64_t sig;
    int e;
    shortest(fabs(d), pow10, &sig, &e);
    double f = (double)sig;
    while (e < -308 && f != 0) {
        f /= 1e308;
        e += 308;
    }
    if (e >= 0)
        f *= e <= 308 ? pow10[e] : INFINITY;
    else
        f /= pow10[-e];
    return d < 0 ? -f : f;
}

static void say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int tv_unigram_from_json(const struct json_t *model, tv_unigram **out,
                         char *err, size_t errlen)
{
    int rc = TOKVEC_E_TOKENIZER;
    const unsigned char **piece = NULL;
    size_t *len = NULL;
    double *score = NULL;
    *out = NULL;
    json_t *m = (json_t *)model;
    json_t *ty = json_object_get(m, "type");
    json_t *vocab = json_object_get(m, "vocab");
    json_t *unk = json_object_get(m, "unk_id");
    json_t *bf = json_object_get(m, "byte_fallback");
    if (!json_is_object(m)) {
        say(err, errlen, "model: not an object");
        goto cleanup;
    }
    if (ty && (!json_is_string(ty) ||
               strcmp(json_string_value(ty), "Unigram") != 0)) {
        say(err, errlen, "model.type: not \"Unigram\"");
        goto cleanup;
    }
    if (!json_is_array(vocab)) {
        say(err, errlen, "model.vocab: missing or not an array");
        goto cleanup;
    }
    if (unk && !json_is_null(unk) &&
        (!json_is_integer(unk) || json_integer_value(unk) < 0)) {
        say(err, errlen, "model.unk_id: not null or an index");
        goto cleanup;
    }
    if (bf && !json_is_boolean(bf)) {
        say(err, errlen, "model.byte_fallback: not a boolean");
        goto cleanup;
    }
    size_t n = json_array_size(vocab);
    int64_t unk_id = unk && json_is_integer(unk)
                         ? (int64_t)json_integer_value(unk)
                         : -1;
    if (unk_id >= 0 && n == 0) {
        say(err, errlen, "model.vocab: empty but unk_id is set");
        goto cleanup;
    }
    if (unk_id >= (int64_t)n) {
        say(err, errlen, "model.unk_id: %zu pieces, unk_id past them", n);
        goto cleanup;
    }
    if (n >= UNI_MAX_PIECES) {
        say(err, errlen, "model.vocab: %zu pieces, at most 2^24", n);
        goto cleanup;
    }
    piece = malloc((n + 1) * sizeof *piece);
    len = malloc((n + 1) * sizeof *len);
    score = malloc((n + 1) * sizeof *score);
    if (!piece || !len || !score) {
        rc = -ENOMEM;
        goto cleanup;
    }
    double pow10[309], last = 0, last_f = 0; /* serde_f64(0) */
    for (int k = 0; k < 309; k++) {
        char b[16];
        snprintf(b, sizeof b, "1e%d", k);
        pow10[k] = strtod(b, NULL);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(vocab, i);
        json_t *p = json_array_get(e, 0), *s = json_array_get(e, 1);
        if (json_array_size(e) != 2 || !json_is_string(p) ||
            !json_is_number(s)) {
            say(err, errlen, "model.vocab[%zu]: not [piece, score]", i);
            goto cleanup;
        }
        piece[i] = (const unsigned char *)json_string_value(p);
        len[i] = json_string_length(p);
        if (json_is_integer(s)) {
            score[i] = (double)json_integer_value(s);
        } else { /* quantized vocabularies repeat their scores */
            double d = json_real_value(s);
            if (memcmp(&d, &last, sizeof d) != 0) {
                last = d;
                last_f = serde_f64(d, pow10);
            }
            score[i] = last_f;
        }
    }
    rc = tv_unigram_new(piece, len, score, n, unk_id, json_is_true(bf), out);
    if (rc == TOKVEC_E_INVAL) {
        say(err, errlen, "model.vocab: a piece too long or not UTF-8");
        rc = TOKVEC_E_TOKENIZER;
    }
cleanup:
    free(piece);
    free(len);
    free(score);
    return rc;
}

tv_uni_work *tv_uni_work_new(void)
{
    return calloc(1, sizeof(tv_uni_work));
}

void tv_uni_work_free(tv_uni_work *w)
{
    if (!w)
        return;
    free(w->best);
    free(w->from);
    free(w->id);
    free(w->mark);
    free(w);
}

void tv_uni_toks_free(tv_uni_toks *t)
{
    if (!t)
        return;
    free(t->id);
    free(t->start);
    free(t->end);
    memset(t, 0, sizeof *t);
}

/* Room for need entries from the window's start, contents kept. */
static int work_reserve(tv_uni_work *w, size_t need)
{
    if (need <= w->cap)
        return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(double))
            return -ENOMEM;
        cap *= 2;
    }
    double *b = realloc(w->best, cap * sizeof *b);
    if (b)
        w->best = b;
    size_t *f = b ? realloc(w->from, cap * sizeof *f) : NULL;
    if (f)
        w->from = f;
    int32_t *d = f ? realloc(w->id, cap * sizeof *d) : NULL;
    if (d)
        w->id = d;
    unsigned char *m = d ? realloc(w->mark, cap) : NULL;
    if (!m)
        return -ENOMEM;
    memset(m + w->cap, 0, cap - w->cap);
    w->mark = m;
    w->cap = cap;
    return 0;
}

/* t's room doubled. */
static int toks_grow(tv_uni_toks *t)
{
    size_t cap = t->cap ? 2 * t->cap : 64;
    if (cap > SIZE_MAX / sizeof(uint32_t))
        return -ENOMEM;
    int32_t *i = realloc(t->id, cap * sizeof *i);
    if (i)
        t->id = i;
    uint32_t *s = realloc(t->start, cap * sizeof *s);
    if (s)
        t->start = s;
    uint32_t *e = realloc(t->end, cap * sizeof *e);
    if (e)
        t->end = e;
    if (!i || !s || !e)
        return -ENOMEM;
    t->cap = cap;
    return 0;
}

static inline int toks_push(tv_uni_toks *t, int32_t id, size_t start,
                            size_t end)
{
    if (t->n == t->cap && toks_grow(t) < 0)
        return -ENOMEM;
    t->id[t->n] = id;
    t->start[t->n] = (uint32_t)start;
    t->end[t->n] = (uint32_t)end;
    t->n++;
    return 0;
}

/* A node at q from p with score cand, kept when q is unset or cand is
 * strictly better (tokenizers' comparison); q and p absolute, w's entry 0
 * is byte wb. */
static inline void relax(tv_uni_work *w, size_t wb, size_t p, size_t q,
                         double cand, int32_t id)
{
    size_t j = q - wb;
    if (w->from[j] == NO_FROM || cand > w->best[j]) {
        w->best[j] = cand;
        w->from[j] = p;
        w->id[j] = id;
    }
}

/* One call of an encode: the model, the work (its position in w->at),
 * the bytes at hand s[0..n - sb) (bytes sb..n of the string), where the
 * tokens go. */
typedef struct uni_run {
    const tv_unigram *u;
    tv_uni_work *w;
    const unsigned char *s;
    size_t sb, n;
    tv_uni_toks *out;
    tv_uni_sink sink; /* out handed to it past UNI_SINK_AT tokens */
    void *ctx;
} uni_run;

#define UNI_SINK_AT 4096

/* out to the sink when it holds UNI_SINK_AT tokens or more. */
static int sink_full(uni_run *r)
{
    if (r->sink && r->out->n >= UNI_SINK_AT)
        return r->sink(r->ctx, r->out);
    return 0;
}

/* One string of the path (a piece, or fused unknown nodes): bytes a..b
 * of the string. */
static int emit(uni_run *r, size_t a, size_t b, int32_t id)
{
    const tv_unigram *u = r->u;
    const unsigned char *s = r->s + (a - r->sb);
    size_t base = r->w->at.base;
    tv_uni_toks *out = r->out;
    if (id < 0) /* fused: looked up whole, as tokenizers does */
        id = tv_unigram_id(u, s, b - a);
    if (id >= 0)
        return toks_push(out, id, base + a, base + b);
    if (u->byte_fallback) {
        size_t i = 0;
        while (i < b - a && u->byte_id[s[i]] >= 0)
            i++;
        if (i == b - a) { /* a long unknown run: in batches to the sink */
            for (i = 0; i < b - a; i++) {
                int rc = toks_push(out, u->byte_id[s[i]], base + a, base + b);
                if (rc == 0)
                    rc = sink_full(r);
                if (rc < 0)
                    return rc;
            }
            return 0;
        }
    }
    return toks_push(out, (int32_t)u->unk, base + a, base + b);
}

/* The best path from the window's start to c (a node every later path
 * goes through) emitted: its back pointers reversed into forward ones,
 * then walked; unknown nodes are fused across calls (at.ustart). */
static int flush(uni_run *r, size_t c)
{
    tv_uni_work *w = r->w;
    size_t wb = w->at.wb, end = c, next = NO_FROM;
    while (end > wb) {
        size_t start = w->from[end - wb];
        w->from[end - wb] = next; /* end's successor on the path */
        next = end;
        end = start;
    }
    int32_t unk = r->u->unk >= 0 ? (int32_t)r->u->unk : -1;
    for (size_t a = wb; a < c;) {
        size_t b = next;
        int32_t id = w->id[b - wb];
        next = w->from[b - wb];
        if (unk >= 0 && id == unk) {
            if (w->at.ustart == NO_FROM)
                w->at.ustart = a;
        } else {
            int rc = 0;
            if (w->at.ustart != NO_FROM)
                rc = emit(r, w->at.ustart, a, -1);
            w->at.ustart = NO_FROM;
            if (rc == 0)
                rc = emit(r, a, b, id);
            if (rc < 0)
                return rc;
        }
        a = b;
    }
    return 0;
}

/* The last node that the best paths to every node in (p - reach, p]
 * share (the window's start at worst): every path to the end goes
 * through one of those, so through it. A sweep down from p over marked
 * nodes, each replaced by its predecessor, until one is left. */
static size_t converge(tv_uni_work *w, size_t wb, size_t p, size_t reach)
{
    size_t lo = p - wb >= reach ? p - reach + 1 : wb, active = 0;
    for (size_t q = lo; q <= p; q++)
        if (q == wb || w->from[q - wb] != NO_FROM) {
            w->mark[q - wb] = 1;
            active++;
        }
    for (size_t q = p;; q--) {
        if (!w->mark[q - wb])
            continue;
        w->mark[q - wb] = 0;
        if (active == 1 || q == wb)
            return q;
        active--;
        size_t f = w->from[q - wb] - wb;
        if (!w->mark[f]) {
            w->mark[f] = 1;
            active++;
        }
    }
}

/* A new string from byte 0, its spans offset by base. */
static int viterbi_begin(tv_uni_work *w, const tv_unigram *u, size_t base)
{
    uni_pos *a = &w->at;
    a->p = 0;
    a->hw = 1;
    a->reach = u->maxlen > 4 ? u->maxlen : 4;
    a->check = UNI_WINDOW;
    a->wb = 0;
    a->ustart = NO_FROM;
    a->base = base;
    int rc = work_reserve(w, UNI_WINDOW + a->reach + 1);
    if (rc < 0)
        return rc;
    w->from[0] = NO_FROM;
    w->best[0] = 0.0;
    return 0;
}

/* The Viterbi pass over the bytes at hand, tokens emitted as the best
 * path becomes known: every UNI_WINDOW bytes the nodes that the best
 * paths to the frontier share are looked for, the path up to the last of
 * them emitted and the arrays moved down to it, so they hold a window,
 * not the text. Unless last (r->n is the string's end), it stops where a
 * piece could reach past the bytes at hand. The scores and comparisons
 * are the same as over the whole text in one call. */
static int viterbi(uni_run *r, int last)
{
    const tv_unigram *u = r->u;
    tv_uni_work *w = r->w;
    uni_pos *at = &w->at;
    const unsigned char *s = r->s;
    size_t n = r->n, sb = r->sb, p = at->p, hw = at->hw, reach = at->reach;
    size_t stop = last ? n : n >= reach ? n - reach + 1 : 0;
    int rc = 0;
    while (p < stop) {
        if (p >= at->check) {
            size_t c = converge(w, at->wb, p, reach);
            if (c > at->wb) {
                rc = flush(r, c);
                if (rc == 0)
                    rc = sink_full(r);
                if (rc < 0)
                    return rc;
                size_t k = c - at->wb, m = hw - c;
                memmove(w->best, w->best + k, m * sizeof *w->best);
                memmove(w->from, w->from + k, m * sizeof *w->from);
                memmove(w->id, w->id + k, m * sizeof *w->id);
                at->wb = c;
            }
            at->check = p +
                        (p - at->wb > UNI_WINDOW ? p - at->wb : UNI_WINDOW);
        }
        size_t lim = n - p > reach ? p + reach : n, wb = at->wb;
        if (lim >= hw) {
            rc = work_reserve(w, lim - wb + 1);
            if (rc < 0)
                return rc;
            for (; hw <= lim; hw++)
                w->from[hw - wb] = NO_FROM;
            at->hw = hw;
        }
        size_t mblen;
        (void)tv_u8_next(s + (p - sb), n - p, &mblen);
        double here = w->best[p - wb];
        int single = 0;
        uint32_t node = 0;
        for (size_t q = p; q < n; q++) {
            node = dat_child(u, node, s[q - sb]);
            if (node == 0)
                break;
            int32_t id = u->dat[node].id;
            if (id < 0)
                continue;
            relax(w, wb, p, q + 1, u->score[id] + here, id);
            if (q + 1 - p == mblen)
                single = 1;
        }
        if (!single) {
            size_t q = p + mblen;
            double cand = u->unk_score + here;
            if (w->from[q - wb] == NO_FROM || cand > w->best[q - wb]) {
                if (u->unk < 0)
                    return TOKVEC_E_TOKENIZER; /* MissingUnkId */
                relax(w, wb, p, q, cand, (int32_t)u->unk);
            }
        }
        p += mblen;
        at->p = p;
    }
    if (!last)
        return 0;
    rc = flush(r, n);
    if (rc == 0 && at->ustart != NO_FROM)
        rc = emit(r, at->ustart, n, -1);
    return rc;
}

int tv_unigram_encode(const tv_unigram *u, tv_uni_work *w,
                      const unsigned char *s, size_t n, size_t base,
                      tv_uni_toks *out)
{
    size_t n0 = out->n;
    int rc = tv_unigram_encode_sink(u, w, s, n, base, out, NULL, NULL);
    if (rc < 0)
        out->n = n0;
    return rc;
}

int tv_unigram_encode_sink(const tv_unigram *u, tv_uni_work *w,
                           const unsigned char *s, size_t n, size_t base,
                           tv_uni_toks *out, tv_uni_sink sink, void *ctx)
{
    if (n == 0)
        return 0;
    if (base > UINT32_MAX || n > UINT32_MAX - base)
        return -ENOMEM; /* the spans are 32-bit */
    int rc = viterbi_begin(w, u, base);
    uni_run r = {u, w, s, 0, n, out, sink, ctx};
    return rc ? rc : viterbi(&r, 1);
}

int tv_unigram_stream_begin(const tv_unigram *u, tv_uni_work *w, size_t base)
{
    if (base > UINT32_MAX)
        return -ENOMEM;
    return viterbi_begin(w, u, base);
}

int tv_unigram_stream_feed(const tv_unigram *u, tv_uni_work *w,
                           const unsigned char *s, size_t sb, size_t n,
                           int last, tv_uni_toks *out, tv_uni_sink sink,
                           void *ctx, size_t *keep)
{
    if (n > UINT32_MAX - w->at.base)
        return -ENOMEM; /* the spans are 32-bit */
    uni_run r = {u, w, s, sb, n, out, sink, ctx};
    int rc = n ? viterbi(&r, last) : 0;
    size_t k = w->at.wb;
    if (w->at.ustart != NO_FROM && w->at.ustart < k)
        k = w->at.ustart;
    *keep = k;
    return rc;
}
