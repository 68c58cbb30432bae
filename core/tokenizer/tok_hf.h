/* tok_hf.h -- Hugging Face tokenizer.json pipelines beyond byte-level BPE:
 * the stages' descriptions (built at open from the JSON, read-only after)
 * and the calls each stage's file offers. normalize.c: normalizers (with
 * precompiled.c: SentencePiece's charsmap) and the helpers every stage
 * and model shares (buffers, refusals, a word's UTF-8); pretok.c:
 * pre-tokenizers (with metaspace.c); added.c: the added tokens;
 * wordpiece.c, unigram.c, spbpe.c: the models; postproc.c:
 * post-processors; decoders.c: decoders; hf_pipeline.c, above them all:
 * the pipeline that runs the stages and the models. Not a public header.
 *
 * Text in flight is an array of code points, each with the byte span of
 * the original input it came from (HF's alignments): a normalizer maps
 * one such array to another, a pre-tokenizer cuts it into words (ranges),
 * the model turns each word into tokens whose offsets are the spans of
 * their first and last code points. The arrays live in the caller's
 * tokvec_tok_state (tv_hf_buf), so encoding allocates only to grow them.
 *
 * Every parser returns 0 or TOKVEC_E_TOKENIZER with one line in err naming
 * the component and its JSON path (or -ENOMEM).
 */
#ifndef TOKVEC_TOK_HF_H
#define TOKVEC_TOK_HF_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "metaspace.h"
#include "precompiled.h"
#include "tok_internal.h"
#include "unigram.h"

/* Unicode classes (tools/gen_hfucd.awk) */
enum {
    TV_HF_WS = 1,     /* White_Space (Rust's char::is_whitespace) */
    TV_HF_CTRL = 2,   /* Cc Cf Co (unicode_categories' is_other) */
    TV_HF_MN = 4,     /* Mn (unicode_categories) */
    TV_HF_PUNCT = 8,  /* P* (unicode_categories) */
    TV_HF_DEC = 16,   /* has a canonical decomposition */
    TV_HF_KDEC = 32,  /* has any decomposition */
    TV_HF_LOWER = 64, /* has a lowercase mapping */
    TV_HF_CCC = 128,  /* non-zero canonical combining class */
    TV_HF_MARK = 256, /* M* (is_combining_mark, StripAccents) */
    TV_HF_NUM = 512,  /* N* (Rust's char::is_numeric, Digits) */
    TV_HF_WORD = 1024 /* regex's \w: Alphabetic, M*, Nd, Pc, Join_Control
                       * (added tokens' single_word) */
};
unsigned tv_hf_class(uint32_t cp);

/* A text in flight: n code points, each from original bytes a0..a1. */
typedef struct tv_hf_text {
    uint32_t *cp, *a0, *a1;
    size_t n, cap;
} tv_hf_text;

typedef struct tv_hf_range {
    size_t s, e;
} tv_hf_range;

/* Per-thread buffers (in tokvec_tok_state). */
typedef struct tv_hf_buf {
    tv_hf_text t[2];
    tv_hf_range *w[2]; /* words: the current and the next list */
    size_t wn[2], wcap[2];
    unsigned char *u8;  /* a word as UTF-8, ... */
    uint32_t *u8ch;     /* ... and the code point each byte starts (or -1) */
    unsigned char *pu8; /* Precompiled's input as UTF-8 (normalize.c) */
    size_t pu8cap;
    unsigned char *uu8; /* a Unigram word as UTF-8 (hf_pipeline.c) */
    size_t uu8cap;
    /* a word of wordpiece.c's one-pass path: its normalized UTF-8, the
     * input byte where each byte's character starts (-1 inside one) and
     * ends */
    unsigned char *fu8;
    uint32_t *fst, *fen;
    size_t fcap;
    size_t u8cap;
    tv_uni_work *uw; /* Unigram: the lattice ... */
    tv_uni_toks ut;  /* ... and one word's tokens */
    /* normalized added tokens (added.c): the normalized text, set aside
     * while its pieces go through the rest, its UTF-8 and the matches */
    tv_hf_text nt;
    unsigned char *nu8;
    uint32_t *nu8ch;
    size_t nu8cap;
    tv_ac_hits hits;
    tv_ac_hits hits2; /* byte-level BPE's normalized added tokens */
    /* a Unigram stretch longer than cut bytes (0: TV_HF_CUT) goes through
     * the stages a piece at a time (hf_pipeline.c); a word that runs
     * across the pieces goes to the model as they come: lw holds its
     * characters from the first that a token may still need, lu8 their
     * UTF-8 (lun bytes, byte lub of the word on), lwalk the token spans'
     * walk over them (bytes and characters of the last start and end) */
    size_t cut;
    tv_hf_text lw;
    unsigned char *lu8;
    size_t lun, lucap, lub;
    size_t lwalk[4];
    /* Precompiled on such pieces (normalize.c): pcarry set, the spans
     * (pc.a0, pc.a1) of the pc.n characters before the piece that HF's
     * walk has yet to reach */
    int pcarry;
    tv_hf_text pc;
} tv_hf_buf;
#define TV_HF_CUT 16384
/* s->hf, made when missing: 0 or -ENOMEM (normalize.c). */
int tv_hf_buf_get(tokvec_tok_state *s);
void tv_hf_buf_free(tv_hf_buf *b); /* normalize.c */
/* A stage of tokenizer.json refused: "WHERE: WHAT" into err (the JSON
 * path, then why); returns TOKVEC_E_TOKENIZER (normalize.c). */
int tv_hf_bad(char *err, size_t errlen, const char *where, const char *what);
int tv_hf_text_reserve(tv_hf_text *x, size_t n);
/* White_Space, and a word character (regex \w), by tv_hf_class. */
int tv_hf_is_ws(uint32_t c);
int tv_hf_is_word(uint32_t c);
/* Token id with the span of x's characters [s, e) appended to out (room
 * reserved). */
void tv_hf_put_tok(tokvec_tok_ids *out, int offs, int32_t id,
                   const tv_hf_text *x, size_t s, size_t e);

/* --- normalizers (normalize.c) --- */
enum {
    TV_N_BERT,
    TV_N_NFD,
    TV_N_NFKD,
    TV_N_NFC,
    TV_N_NFKC,
    TV_N_LOWER,
    TV_N_STRIP_ACCENTS,
    TV_N_STRIP,
    TV_N_REPLACE,
    TV_N_PREPEND,
    TV_N_PRECOMPILED,
    TV_N_CHARMAP, /* consecutive one-character String Replaces, fused */
};
enum { /* TV_N_BERT flags */
       TV_NB_CLEAN = 1,
       TV_NB_CJK = 2,
       TV_NB_STRIP = 4,
       TV_NB_LOWER = 8,
};
typedef struct tv_norm {
    int kind;
    unsigned flags;      /* TV_N_BERT: TV_NB_*; TV_N_STRIP: 1 left 2 right */
    uint32_t *pat, *rep; /* Replace: pattern and content; Prepend: rep */
    size_t npat, nrep;
    /* Replace with a Regex pattern: one atom (the character re_c, or any
     * White_Space character when re_ws) repeated re_min..re_max times */
    int re, re_ws;
    uint32_t re_c;
    size_t re_min, re_max;
    tv_precompiled *pc; /* Precompiled */
    /* TV_N_CHARMAP: character pat[k] (sorted, npat of them) becomes
     * rep[moff[k]..moff[k + 1]); amap[c] = k for ASCII c, -1 none */
    uint32_t *moff;
    int32_t *amap;
} tv_norm;
int tv_norm_parse(json_t *j, const char *where, tv_norm **out, size_t *n,
                  char *err, size_t errlen);
void tv_norm_free(tv_norm *v, size_t n);
/* Runs the steps over b->t[*cur]; *cur names the result. */
int tv_norm_run(const tv_norm *v, size_t n, tv_hf_buf *b, int *cur);
/* What BertNormalizer with flags f (TV_NB_*) makes of the non-ASCII
 * character c on its own, into o[TV_NB_MAX_OUT]: their count (0: dropped),
 * or -1 when its neighbours may change it (NFD's reordering: a kept
 * character of non-zero combining class). */
#define TV_NB_MAX_OUT 100
int tv_norm_bert_char(unsigned f, uint32_t c, uint32_t *o);

/* --- pre-tokenizers (pretok.c) --- */
enum {
    TV_P_BERT,
    TV_P_WHITESPACE_SPLIT,
    TV_P_PUNCT,
    TV_P_DIGITS,
    TV_P_METASPACE,
};
enum { /* split behaviours */
       TV_SB_REMOVED,
       TV_SB_ISOLATED,
       TV_SB_PREV,
       TV_SB_NEXT,
       TV_SB_CONTIG,
};
typedef struct tv_pretok {
    int kind;
    int behavior;    /* Punctuation */
    int individual;  /* Digits */
    tv_metaspace ms; /* Metaspace (only first in a Sequence) */
} tv_pretok;
int tv_pretok_parse(json_t *j, const char *where, tv_pretok **out, size_t *n,
                    char *err, size_t errlen);
/* Cuts text x (one word [0, n)) into b->w[*cur][0..b->wn[*cur]). */
int tv_pretok_run(const tv_pretok *v, size_t n, const tv_hf_text *x,
                  tv_hf_buf *b, int *cur);
/* Metaspace's text change (spaces to the replacement, the prepended one)
 * made in b->t[*cur] where it is; first: 1 when the normalized text
 * starts at byte 0 of the input (prepend_scheme first: HF asks the
 * original offset of the normalized split, so a stripped first character
 * makes it not first), 0 when not, -1 when it goes on a text whose start
 * went before (hf_pipeline.c's long stretches): nothing prepended. */
int tv_metaspace_text(const tv_metaspace *m, tv_hf_buf *b, int *cur,
                      int first);

/* --- post-processors (postproc.c) --- */
typedef tv_post_ids tv_post; /* tok_internal.h */
int tv_post_parse(json_t *j, tv_post *p, char *err, size_t errlen);
void tv_post_free(tv_post *p);

/* --- decoders (decoders.c) --- */
enum {
    TV_D_WORDPIECE,
    TV_D_BYTELEVEL,
    TV_D_STRIP,
    TV_D_REPLACE,
    TV_D_FUSE,
    TV_D_METASPACE,
    TV_D_BYTEFALLBACK,
};
typedef struct tv_dec {
    int kind;
    tv_metaspace ms;    /* Metaspace */
    char *a, *b;        /* WordPiece: prefix; Replace: pattern, content;
                         * Strip: content */
    int cleanup;        /* WordPiece */
    size_t left, right; /* Strip */
} tv_dec;
int tv_dec_parse(json_t *j, const char *where, tv_dec **out, size_t *n,
                 char *err, size_t errlen);
void tv_dec_free(tv_dec *v, size_t n);
/* Decodes n ids with the decoder chain (no chain: tokens joined by one
 * space, as HF does); skip: leave out special tokens. */
int tv_dec_run(const tokvec_tokenizer *t, const int32_t *ids, size_t n,
               int skip, char **text, size_t *len);

/* --- the models (wordpiece.c, unigram.c, spbpe.c) and the pipeline
 * (hf_pipeline.c) --- */
enum { TV_M_WORDPIECE, TV_M_UNIGRAM, TV_M_BPE };
typedef struct tv_wp_node { /* WordPiece's trie (wordpiece.c) */
    uint32_t first; /* its first child's number (children are numbered one
                     * after the other), or its direct table's (tv_hf.tdir) */
    uint32_t meta;  /* bits 0-3: how many children (15: a direct table);
                     * 4-31: the id of the token that ends here + 1, 0 none */
} tv_wp_node;

typedef struct tv_hf {
    int model; /* TV_M_* */
    tv_unigram *uni;
    /* BPE without ByteLevel (spbpe.c): merges in the tokenizer's pmap */
    char *suffix; /* end_of_word_suffix ("" none) */
    size_t nsuffix;
    int byte_fallback, fuse_unk, ignore_merges;
    int32_t bfid[256]; /* <0xXX> ids, -1 where missing */
    tv_norm *norm;
    size_t nnorm;
    tv_pretok *pre;
    size_t npre;
    tv_dec *dec;
    size_t ndec;
    int has_decoder;
    /* added tokens matched in the normalized text (added.c): their
     * contents normalized (pattern bytes in nbytes) and their automaton */
    tv_special *npat;
    unsigned char *nbytes;
    tv_acm nac;
    /* WordPiece */
    char *prefix;
    size_t nprefix;
    int32_t unk;
    size_t max_chars;
    /* model.vocab as a trie of bytes (node 0 the root): each node's edge
     * label in tlab, direct tables of 256 children; croot: the node of
     * continuing_subword_prefix, where the pieces after the first begin */
    tv_wp_node *trie;
    unsigned char *tlab;
    uint32_t *tdir;
    size_t ntrie;
    uint32_t croot;
    /* ASCII text through [BertNormalizer] and [BertPreTokenizer] in one
     * pass (wordpiece.c): per byte its class (TV_A_*) and what it becomes;
     * ascii_fast when the pipeline is that */
    int ascii_fast;
    unsigned char acls[128], amap[128];
    /* the same for the characters U+0080..U+FFFF, two and three bytes of
     * UTF-8 (index c - 0x80; malloc'ed, 255 KB): what the character
     * becomes (one character, bits 0-23) and its class (TV_A_*, bits
     * 24-31); TV_A_SLOW: it takes every stage (it becomes more than one
     * character, or its neighbours matter). A character that
     * handle_chinese_chars puts between spaces is TV_A_PUNCT (a word of
     * its own). Four-byte characters get the same answer computed as they
     * come (tv_wp_char); nflags: BertNormalizer's flags (0 without it) */
    uint32_t *ucls;
    unsigned nflags;
    /* Unigram: the ASCII letters that every normalizer leaves as they are,
     * alone and beside any neighbour, and no pre-tokenizer cuts at; a
     * long stretch is cut into pieces between three of them
     * (hf_pipeline.c); all 0 when the pipeline cannot be cut */
    unsigned char lcut[128];
    unsigned lcuts; /* TV_LCUT_*: what such pieces give as the whole does */
} tv_hf;
enum { TV_LCUT_IDS = 1, TV_LCUT_OFFSETS = 2 };

/* tv_hf.acls, tv_hf.ucls */
enum { TV_A_DROP, TV_A_WS, TV_A_PUNCT, TV_A_WORD, TV_A_SLOW };

int tv_wp_load(tokvec_tokenizer *t, json_t *root, char *err, size_t errlen);
/* BPE without ByteLevel (SentencePiece style: Llama 2, Mistral) from
 * root.model into t (spbpe.c). */
int tv_spbpe_load(tokvec_tokenizer *t, json_t *root, char *err, size_t errlen);
/* One word x[s, e) through it, appended to out. */
int tv_spbpe_word(const tokvec_tokenizer *t, tv_hf_buf *b, const tv_hf_text *x,
                  size_t s, size_t e, tokvec_tok_ids *out, int offs);
/* x's characters [s, e) as UTF-8 into *u8 (*len bytes; *u8 and *u8ch grown
 * to *u8cap as needed), (*u8ch)[j] the character byte j starts (UINT32_MAX
 * inside one), (*u8ch)[len] = e (normalize.c). u8ch NULL: the bytes alone
 * (then *u8cap is *u8's alone: never share it with a pair). */
int tv_hf_utf8(unsigned char **u8, uint32_t **u8ch, size_t *u8cap,
               const tv_hf_text *x, size_t s, size_t e, size_t *len);
/* x's characters [s, e) as UTF-8 at o (room for 4 bytes each): the
 * bytes written (normalize.c). */
size_t tv_hf_utf8_to(unsigned char *o, const tv_hf_text *x, size_t s,
                     size_t e);
/* A word's UTF-8 into b->u8 / b->u8ch: tv_hf_utf8 on those. */
int tv_hf_word_bytes(tv_hf_buf *b, const tv_hf_text *x, size_t s, size_t e,
                     size_t *len);
/* The Unigram model of root.model into t (its pieces, ids 0..n-1;
 * hf_pipeline.c, over unigram.h). */
int tv_uni_load(tokvec_tokenizer *t, json_t *root, char *err, size_t errlen);
/* After the model's tokens: root.added_tokens, then the normalizer,
 * pre-tokenizer and decoder into t->hf (hf_pipeline.c; tok_load.c calls
 * it after the model's load). */
int tv_hf_load_rest(tokvec_tokenizer *t, json_t *root, char *err,
                    size_t errlen);
/* The WordPiece model on the word x[s, e), appended to out (wordpiece.c). */
int tv_wp_word(const tokvec_tokenizer *t, tv_hf_buf *b, const tv_hf_text *x,
               size_t s, size_t e, tokvec_tok_ids *out, int offs);
/* The non-ASCII character at u[j] (j < end) for tv_wp_fast: what it
 * becomes and its class as tv_hf.ucls holds them, *m its length; class
 * TV_A_SLOW (*m unset) for bytes that are not UTF-8 (wordpiece.c). */
uint32_t tv_wp_char(const tv_hf *h, const unsigned char *u, size_t j,
                    size_t end, size_t *m);
/* tv_wp_finish's one-pass path: u[i..end) normalized, cut into words and
 * through the WordPiece model, appended to out, up to the first chunk
 * (text between ASCII white space) that holds a character the path does
 * not take (not UTF-8, or of class TV_A_SLOW: tv_wp_char): *stop is
 * where that chunk begins (nothing of it in out), end when there is none
 * (wordpiece.c). */
int tv_wp_fast(const tokvec_tokenizer *t, tv_hf_buf *b, const unsigned char *u,
               size_t i, size_t end, tokvec_tok_ids *out, int offs,
               size_t *stop);
void tv_hf_free(tv_hf *h);
/* Encodes one stretch (no added tokens matched in the input in it) of
 * u[i..end); flags: tokvec_tokenizer_encode's. */
int tv_hf_stretch(const tokvec_tokenizer *t, tokvec_tok_state *s,
                  const unsigned char *u, size_t i, size_t end,
                  tokvec_tok_ids *out, unsigned flags);
/* The normalized text b->t[cur] through Metaspace, the pre-tokenizers
 * and the model (hf_pipeline.c). */
int tv_hf_tail(const tokvec_tokenizer *t, tv_hf_buf *b, int cur,
               tokvec_tok_ids *out, int offs);

/* --- added tokens (added.c) --- */
/* An added_tokens entry's options: TV_ADD_* but TV_ADD_SPECIAL (also
 * for byte-level BPE, tok_load.c). */
uint32_t tv_added_options(json_t *v);
/* root.added_tokens after the model's tokens, with their options. */
int tv_added_load(tokvec_tokenizer *t, json_t *root, char *err, size_t errlen);
/* Once the normalizer is read: the normalized tokens' patterns and
 * automaton. */
int tv_added_norm_build(tokvec_tokenizer *t, char *err, size_t errlen);
void tv_added_free(tv_hf *h);
/* The normalized added token id (its normalized text), or NULL. */
const tv_special *tv_added_norm_of(const tv_hf *h, int32_t id);
/* The normalized text b->t[cur]: the normalized added tokens in it
 * (HF's second find_matches), the pieces between through tv_hf_tail
 * (hf_pipeline.c). */
int tv_added_norm_run(const tokvec_tokenizer *t, tv_hf_buf *b, int cur,
                      tokvec_tok_ids *out, unsigned flags);

#endif
