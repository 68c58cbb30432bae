/* tok_internal.h -- the tokenizer handle's fields and the functions the
 * tokenizer's files share: tok_load.c builds a handle, tok_bpe.c holds the
 * token table, the hash maps and the merge, tok_special.c the special-token
 * matcher, tok_split.c the pre-tokenizers, tokenizer.c the public calls;
 * WordPiece pipelines have their own files (tok_hf.h). Not a public
 * header.
 *
 * What must hold: every table of a handle is sized by what the files hold
 * (tokens, merges, special tokens' bytes), never by the highest id (ids go
 * up to 2^24 - 1: a 3 KB file may name one); nothing is ever looked up in
 * time that grows with the number of special tokens.
 * Threads: nothing in a handle changes after tokvec_tokenizer_open
 * returns; per-thread memory is tokvec_tok_state.
 */
#ifndef TOKVEC_TOK_INTERNAL_H
#define TOKVEC_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_tokenizer.h"

#define TV_TOK_MAX_ID (1 << 24)
#define TV_NO_RANK UINT32_MAX

/* Split patterns (tiktoken's regexes; see tok_split.c). */
typedef enum {
    TV_PAT_GPT2 = 0,   /* gpt2, r50k_base, p50k_base; HF ByteLevel */
    TV_PAT_CL100K = 1, /* cl100k_base; Llama 3 */
    TV_PAT_O200K = 2,  /* o200k_base */
    TV_PAT_QWEN2 = 3,  /* cl100k with one digit a piece (Qwen 2) */
} tv_pattern;

typedef struct tv_tok { /* one token: blob[off .. off + len) */
    uint32_t off, len;
    int32_t id;
    uint32_t special; /* 1 for special tokens, 2 for added tokens HF does
                       * not call special (matched like them); above
                       * TV_TOK_KIND's bits: TV_ADD_* << 8 */
} tv_tok;
#define TV_TOK_KIND(o) ((o)->special & 0xFF)
#define TV_TOK_ADDED(o) ((o)->special >> 8)

/* An added token's options (tokenizer.json added_tokens; HF's
 * AddedToken): swallow the White_Space before (LSTRIP) or after (RSTRIP)
 * it, match only where no word character (regex \w) touches it (SINGLE),
 * match in the normalized text (NORM, its content normalized too) rather
 * than in the input; SPECIAL: special (HF's special: true), left out of
 * matching with HF's encode_special_tokens (no TOKVEC_TOK_SPECIAL). */
enum {
    TV_ADD_LSTRIP = 1,
    TV_ADD_RSTRIP = 2,
    TV_ADD_SINGLE = 4,
    TV_ADD_NORM = 8,
    TV_ADD_SPECIAL = 16,
};

typedef struct tv_islot { /* id -> index in tok[]; id -1 = empty */
    int32_t id;
    uint32_t index;
} tv_islot;

typedef struct tv_vslot { /* bytes -> id; id -1 = empty */
    uint32_t hash;        /* the bytes' hash's low half */
    int32_t id;
    uint32_t off, len; /* the token's bytes (a copy of its tv_tok's) */
} tv_vslot;

typedef struct tv_pslot { /* (left, right) -> rank, result */
    uint64_t key;         /* left << 32 | right; UINT64_MAX = empty */
    uint32_t rank;
    int32_t id;
} tv_pslot;

typedef struct tv_eslot { /* matcher edge: node << 8 | byte -> child */
    uint64_t key;         /* UINT64_MAX = empty */
    uint32_t child;
} tv_eslot;

typedef struct tv_special { /* a special token, for listing and matching */
    int32_t id;
    uint32_t off, len;
    uint32_t flags; /* TV_ADD_* */
} tv_special;

/* An Aho-Corasick automaton of patterns' reversed bytes (tok_special.c),
 * node 0 the root: the special tokens matched in the input (those not
 * TV_ADD_NORM), or the normalized ones in the normalized text. */
typedef struct tv_acm {
    const tv_special *pat;      /* the patterns (not owned) ... */
    const unsigned char *bytes; /* ... their bytes: bytes + pat[k].off */
    size_t npat;                /* how many */
    size_t nfree;   /* patterns in it that are not TV_ADD_SPECIAL */
    uint32_t max;   /* longest pattern's bytes (0: no automaton) */
    uint32_t nodes; /* automaton nodes */
    uint32_t *fail; /* per node: its failure link */
    int32_t *best;  /* per node: index in pat of the longest pattern
                     * starting where the node's text does, or -1 */
    tv_eslot *edge; /* node, byte -> child (the root's: root) */
    size_t emask;
    uint32_t root[256]; /* the root's children (0: none) */
} tv_acm;

struct tv_hf;
struct tv_hf_buf;

/* Post-processor ids (tokenizer.json; postproc.c): before and after. */
typedef struct tv_post_ids {
    int32_t *pre, *post;
    size_t npre, npost;
    int trim_offsets;
} tv_post_ids;

struct tokvec_tokenizer {
    tokvec_tokenizer_info info;
    struct tv_hf *hf; /* non-byte-level pipelines (WordPiece): tok_hf.h;
                       * NULL for byte-level BPE */
    char *name;
    tv_pattern pattern;
    int whole_lookup; /* a piece that is a token is that token (tiktoken) */
    uint64_t serial;  /* unique per open: states' caches follow it */
    tv_tok *tok;      /* the tokens, by id once open (tv_tok_seal) */
    size_t n_tok, tok_cap;
    tv_islot *imap; /* id -> token, while loading and for sparse ids */
    size_t imask;
    uint32_t *dense; /* or, when the ids are dense: by id, index in tok[] */
    uint32_t n_dense;
    unsigned char *blob;
    size_t blob_len, blob_cap;
    tv_vslot *vmap; /* ordinary tokens by bytes */
    size_t vmask;
    tv_pslot *pmap;
    size_t pmask, pcount;
    uint32_t max_rank; /* highest rank in pmap */
    int32_t byte_id[256];
    /* special and added tokens (tok_special.c): listed by id, and the
     * automaton of those matched in the input */
    size_t n_special;
    tv_special *sp; /* by id */
    tv_acm ac;
    tv_acm nac;       /* byte-level BPE: the normalized: true ones (no
                       * normalizer), matched between ac's (tokenizer.c) */
    tv_post_ids post; /* tokenizer.json's post_processor */
    int sp_newline;   /* some special has a newline before its end, or
                       * strips white space: tokvec_tokenizer_cut cannot
                       * cut the text */
};

#define TV_BLOCK_KEYS 15
typedef struct tv_block { /* 128 bytes of one bucket's pending keys */
    uint64_t key[TV_BLOCK_KEYS];
    uint32_t next, n; /* next block (1-based; 0: last), keys held */
} tv_block;

/* One entry of the per-state cache of recent pieces (tok_bpe.c). */
#define TV_CACHE_BYTES 40 /* longest piece cached */
typedef struct tv_cache_ent {
    uint8_t len, n;
    unsigned char bytes[TV_CACHE_BYTES];
    uint8_t start[TV_CACHE_BYTES];
    int32_t ids[TV_CACHE_BYTES];
} tv_cache_ent;

/* Per-thread working memory (tokenizer.c, tok_bpe.c). */
struct tokvec_tok_state {
    int32_t *pid;    /* part ids */
    uint32_t *prank; /* rank of part i with part i+1 */
    uint32_t *pnext, *pprev, *pver;
    size_t cap;
    /* the long-piece merge (tok_bpe.c): pending pair keys */
    uint64_t *heap, *arr, *stk;
    size_t hn, hcap, an, ai, acap, sn, scap;
    struct tv_block *blk; /* bucket lists' blocks of keys */
    size_t nused, ncap;
    uint32_t nfree;             /* free blocks (1-based; 0: none) */
    uint32_t *bhead, *btail;    /* per bucket: first and last block */
    uint64_t *bmap;             /* non-empty buckets */
    uint64_t *bmess;            /* buckets whose keys came out of order */
    uint32_t cb, ci;            /* current bucket read in place: block, key */
    struct tv_cache_ent *cache; /* recent pieces */
    struct tv_small_ent *small; /* recent short pieces */
    uint64_t cache_of;          /* serial of the tokenizer they are of */
    /* special tokens (tok_special.c): where they start in a window of
     * the text, (offset << 32 | index in sp), last first */
    uint64_t *sp_hit;
    size_t sp_cap;
    uint64_t sp_steps;    /* matcher steps so far (tests: it is linear) */
    struct tv_hf_buf *hf; /* WordPiece pipelines' buffers */
};

uint64_t tv_hash(const unsigned char *p, size_t n);

/* tok_bpe.c: building (open only). tv_tok_add appends a token (the
 * tokens in tok[] in the order given); tv_tok_seal sorts tok[] by id
 * (tv_vmap_build does it first, so does the loader's end). */
int tv_tok_add(tokvec_tokenizer *t, const unsigned char *b, size_t n,
               int32_t id, int special);
int tv_tok_seal(tokvec_tokenizer *t);
/* After the last tv_tok_add: when the ids are dense enough (the highest
 * below twice the tokens, plus 1024), an array by id for tv_tok_get. */
int tv_tok_index(tokvec_tokenizer *t);
/* The token of id, or NULL when no token has it. */
static inline size_t tv_islot_of(int32_t id, size_t mask)
{
    uint64_t h = (uint64_t)(uint32_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & mask;
}
static inline const tv_tok *tv_tok_find(const tokvec_tokenizer *t, int32_t id)
{
    if (id < 0 || !t->imap)
        return NULL;
    for (size_t k = tv_islot_of(id, t->imask);; k = (k + 1) & t->imask) {
        const tv_islot *s = &t->imap[k];
        if (s->id == id)
            return &t->tok[s->index];
        if (s->id < 0)
            return NULL;
    }
}
static inline const tv_tok *tv_tok_get(const tokvec_tokenizer *t, int32_t id)
{
    if (!t->dense)
        return tv_tok_find(t, id);
    uint32_t i = (uint32_t)id < t->n_dense ? t->dense[id] : UINT32_MAX;
    return i == UINT32_MAX ? NULL : &t->tok[i];
}
int tv_vmap_build(tokvec_tokenizer *t, int32_t *dup);
int32_t tv_vmap_get(const tokvec_tokenizer *t, const unsigned char *b,
                    size_t n);
/* tv_vmap_get of count keys (b[k], n[k]) into id[k], their slots fetched
 * in groups before they are probed (cache misses overlap). */
void tv_vmap_get_many(const tokvec_tokenizer *t, const unsigned char *const *b,
                      const size_t *n, int32_t *id, size_t count);
int tv_pmap_init(tokvec_tokenizer *t, size_t expect);
/* The merge of pair (a, b): its slot, or NULL. */
const tv_pslot *tv_pmap_get(const tokvec_tokenizer *t, int32_t a, int32_t b);
int tv_pmap_put(tokvec_tokenizer *t, int32_t a, int32_t b, uint32_t rank,
                int32_t id);
/* Pairs for rank semantics: every split of every token into two tokens. */
int tv_pmap_from_ranks(tokvec_tokenizer *t);

/* tok_bpe.c: encoding a piece; appends its ids (and start offsets relative
 * to base when offs is non-NULL) to out. Quadratic below the threshold,
 * rank buckets above (O(n log n) at worst). */
int tv_bpe_piece(const tokvec_tokenizer *t, tokvec_tok_state *s,
                 const unsigned char *p, size_t n, size_t base,
                 tokvec_tok_ids *out, int offsets);
/* Tests: force the long-piece (1) or the quadratic (0) merge. */
int tv_bpe_merge_mode(const tokvec_tokenizer *t, tokvec_tok_state *s,
                      const unsigned char *p, size_t n, int heap, int32_t *ids,
                      size_t *nids);
int tv_ids_reserve(tokvec_tok_ids *o, size_t more, int offsets);

/* tok_split.c: end of the piece that starts at i (< end). */
size_t tv_split_next(tv_pattern pat, const unsigned char *s, size_t i,
                     size_t end);
/* tok_split.c: the first place at or after from (and above 1) where
 * every pattern splits the same whether the text goes on or not: a
 * newline between printable ASCII characters (the second not '/'); len
 * when there is none. */
size_t tv_split_cut(const unsigned char *s, size_t from, size_t len);
/* Unicode class of a code point (0 other ... 8 White_Space). */
unsigned tv_ucd_class(uint32_t cp);
const char *tv_ucd_version(void);
int tv_pattern_parse(const char *name, tv_pattern *out);
const char *tv_pattern_name(tv_pattern p);
/* The known regex strings (tokenizer.json Split): pattern or -1. */
int tv_pattern_from_regex(const char *re);

/* tok_special.c: the matchers, built once at open (tv_special_build,
 * after tv_tok_seal: t->sp, t->ac and t->nac), freed by
 * tv_special_free. tv_acm_build: an automaton over those of
 * a->pat[0..a->npat) with no flag of skip and, when need, a flag of need.
 * tv_acm_next: the next pattern at or after i in text[0..len): *at its
 * start (len when none) and *k its index in a->pat; 0 or -ENOMEM. *win is
 * the window of the text whose matches h->hit holds (n of them left):
 * {0, 0, 0} for a new text, then left to tv_acm_next (i must not go back
 * within one text); h->steps counts the steps (tests: it is linear). */
typedef struct tv_sp_win {
    size_t lo, hi, n;
} tv_sp_win;
int tv_special_build(tokvec_tokenizer *t);
void tv_special_free(tokvec_tokenizer *t);
typedef struct tv_ac_hits {
    uint64_t *hit;
    size_t cap;
    uint64_t steps;
} tv_ac_hits;
int tv_acm_build(tv_acm *a, uint32_t skip, uint32_t need);
int tv_acm_next(const tv_acm *a, tv_ac_hits *h, tv_sp_win *win,
                const unsigned char *text, size_t i, size_t len, size_t *at,
                size_t *k);
void tv_acm_free(tv_acm *a);

/* added.c: an added token's options over the input's UTF-8 (u[0..len)):
 * tv_added_single: no word character (regex \w) just before start or at
 * stop; tv_added_lstrip: start moved back over White_Space, not below
 * lo; tv_added_rstrip: stop moved on over White_Space. */
int tv_added_single(const unsigned char *u, size_t start, size_t stop,
                    size_t len);
size_t tv_added_lstrip(const unsigned char *u, size_t lo, size_t start);
size_t tv_added_rstrip(const unsigned char *u, size_t stop, size_t len);

/* A state with its byte-pair caches, and its freeing but for s->hf (the
 * public tokvec_tok_state_new and _free: tokenizer.c) (tok_bpe.c). */
tokvec_tok_state *tv_bpe_state_new(void);
void tv_bpe_state_free(tokvec_tok_state *s);

/* wordpiece.c (tok_hf.h has the rest) */
int tv_wp_finish(tokvec_tokenizer *t);

/* tok_load.c */
int tv_tok_load(tokvec_tokenizer *t, const char *path,
                const tokvec_tokenizer_opts *o);

#endif
