/* tokvec_tokenizer.h -- text tokenizers: byte-level BPE (GPT-2, tiktoken,
 * Hugging Face tokenizer.json) and WordPiece (HF tokenizer.json).
 *
 * Turns UTF-8 text into token ids exactly as tiktoken (byte-level BPE) or
 * Hugging Face's tokenizers library (tokenizer.json) does, and ids back
 * into text. A tokenizer is opened once from files, validated completely at
 * open, and is immutable afterwards.
 *
 * Files (format found by name and content at open):
 *
 *  encoder.json + vocab.bpe (GPT-2's originals; Hugging Face's vocab.json
 *   + merges.txt are the same content). path names the JSON file (or the
 *   directory holding the pair); opts->merges_path the merges file, else
 *   vocab.bpe or merges.txt beside it. The JSON is an object of token ->
 *   id; each key's characters are GPT-2's byte-to-unicode alphabet (every
 *   one must map back to a byte). The merges file is an optional
 *   "#version" line, then one "left right" pair per line. As tiktoken's
 *   loader does, the ids must be the ranks the merges build (256 byte
 *   tokens in GPT-2's byte order, then one id per merge, in order); a
 *   vocabulary that is not so shaped falls back to Hugging Face semantics
 *   (only listed pairs merge, in list order). <|endoftext|> and
 *   <|startoftext|> keys are special tokens.
 *
 *  tokenizer.json (Hugging Face): model.type "BPE" with vocab and merges
 *   (strings "a b" or pairs ["a", "b"]), no normalizer, a ByteLevel
 *   pre-tokenizer (add_prefix_space false), optionally after a Split whose
 *   regex is one of the known patterns below; added_tokens are special.
 *   model.ignore_merges true looks a whole piece up before merging.
 *   model.type "WordPiece" runs HF's pipeline instead (tok_hf.h lists the
 *   normalizers, pre-tokenizers, post-processors and decoders it takes);
 *   anything else is refused at open naming the component and its JSON
 *   path. The post_processor's tokens are added with
 *   TOKVEC_TOK_ADD_SPECIAL (both models).
 *
 *  NAME.tiktoken: lines "base64(token bytes) rank". The split pattern and
 *   special tokens come from opts->pattern, else from the file name's
 *   start: gpt2 / r50k_base / p50k_base, cl100k_base, o200k_base.
 *
 * Every token's bytes must be distinct, every id below 2^24; for byte-level
 * BPE all 256 single bytes must be tokens. A bad file is TOKVEC_E_TOKENIZER
 * (or -errno) with a message naming the file, the line or key, and the
 * rule. A handle's memory follows the tokens, merges and special tokens
 * there are, not their ids (ids may be sparse: one token may have the id
 * 2^24 - 1).
 *
 * Encoding: the text is cut at special tokens (when asked: at the leftmost
 * one, the longest of those starting there; found in one pass, linear in
 * the text whatever their number), each stretch
 * split by the pattern's pre-tokenizer (tiktoken's regexes, written as
 * scanners over code points with Unicode tables built from the UCD), and
 * each piece is merged by rank. Bytes that are not valid UTF-8 are pieces
 * of their own kind ("other", like punctuation); valid UTF-8 gives exactly
 * tiktoken's ids. Pieces of any length take O(n log n) time at worst
 * (near-linear on real and repetitive text) and about 30 bytes of working
 * memory per byte of the longest piece (and 8 bytes per special token
 * found in 16 KB of text, more with special tokens over 4 KB long).
 *
 * Threads: the handle is read-only after open; any number of threads may
 * encode and decode at once, each with its own tokvec_tok_state (working
 * memory and a cache of recent pieces; never shared between threads at
 * the same time). No call logs or touches files after open.
 */
#ifndef TOKVEC_TOKENIZER_H
#define TOKVEC_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"

typedef struct tokvec_tokenizer tokvec_tokenizer;
typedef struct tokvec_tok_state tokvec_tok_state;

typedef struct tokvec_tokenizer_opts {
    const char *merges_path; /* encoder/vocab JSON: merges file, or NULL */
    const char *pattern;     /* .tiktoken: "gpt2", "cl100k_base", ... */
    char *errbuf;            /* optional: one-line reason on failure ... */
    size_t errlen;           /* ... of at most errlen bytes with the NUL */
} tokvec_tokenizer_opts;

typedef struct tokvec_tokenizer_info {
    const char *name;    /* "gpt2", "cl100k_base", file stem otherwise */
    const char *format;  /* "gpt2-json", "tokenizer.json", "tiktoken" */
    const char *pattern; /* split pattern: "gpt2", "cl100k_base", ... */
    const char *model;   /* "BPE" (byte-level) or "WordPiece" */
    size_t n_added;      /* tokens the post-processor adds to a text */
    int64_t vocab_size;  /* highest id + 1, special tokens included */
    int64_t n_tokens;    /* ordinary tokens */
    size_t n_special;    /* special tokens */
} tokvec_tokenizer_info;

/* tokvec_tokenizer_encode flags */
enum {
    TOKVEC_TOK_SPECIAL = 1u << 0,     /* special tokens in the text are
                                       * their ids (tiktoken's "all"); else
                                       * they are ordinary text */
    TOKVEC_TOK_OFFSETS = 1u << 1,     /* fill out->offsets and stops */
    TOKVEC_TOK_ADD_SPECIAL = 1u << 2, /* add the post-processor's tokens
                                       * (tokenizer.json; HF's
                                       * add_special_tokens=True) */
};

/* One encode's answer; reused across calls (grown, never shrunk) and freed
 * with tokvec_tok_ids_free. ids[0..n); with TOKVEC_TOK_OFFSETS, token i
 * is bytes offsets[i]..stops[i] of the input. Byte-level BPE tokens tile
 * the input (stops[i] == offsets[i+1], offsets[0] == 0); WordPiece tokens
 * leave out what the pre-tokenizer drops (white space), several tokens
 * may share one span (a normalizer's expansion), and the tokens a
 * post-processor adds are the empty span 0..0, as Hugging Face's. */
typedef struct tokvec_tok_ids {
    int32_t *ids;
    size_t *offsets;
    size_t *stops;
    size_t n;
    size_t cap; /* capacity of ids and offsets (private) */
} tokvec_tok_ids;

int tokvec_tokenizer_open(const char *path, const tokvec_tokenizer_opts *opts,
                          tokvec_tokenizer **out) TOKVEC_MUST_CHECK;
void tokvec_tokenizer_close(tokvec_tokenizer *t);
void tokvec_tokenizer_get_info(const tokvec_tokenizer *t,
                               tokvec_tokenizer_info *info);

/* Special token i (0 <= i < n_special), by id: its text, *len bytes and
 * NOT NUL-terminated (the next token's bytes follow it), and its id; NULL
 * past the end. O(1): the list is made at open. */
const char *tokvec_tokenizer_special(const tokvec_tokenizer *t, size_t i,
                                     int32_t *id, size_t *len);

/* The bytes of token id (special ones too): 0, or TOKVEC_E_TOKEN_RANGE for
 * an id that names no token. *special is set when non-NULL. */
int tokvec_tokenizer_token(const tokvec_tokenizer *t, int32_t id,
                           const unsigned char **bytes, size_t *len,
                           int *special);

/* The ids the post-processor adds to one text (TOKVEC_TOK_ADD_SPECIAL):
 * *npre ids before it, *npost after it (tokenizer.json's
 * post_processor; none for the other formats). */
void tokvec_tokenizer_added(const tokvec_tokenizer *t, const int32_t **pre,
                            size_t *npre, const int32_t **post, size_t *npost);

/* Working memory for one thread; NULL when out of memory. */
tokvec_tok_state *tokvec_tok_state_new(void);
void tokvec_tok_state_free(tokvec_tok_state *s);

/* Encodes len bytes of text into out (replacing what it held). 0, or
 * -ENOMEM (out then holds nothing valid). */
int tokvec_tokenizer_encode(const tokvec_tokenizer *t, tokvec_tok_state *s,
                            const char *text, size_t len, unsigned flags,
                            tokvec_tok_ids *out) TOKVEC_MUST_CHECK;
void tokvec_tok_ids_free(tokvec_tok_ids *ids);

/* The first place at or after from (0 < at <= len) where text may be cut
 * to encode its halves apart, on two threads say: the ids of text[0..at)
 * then those of text[at..len) (flags as for the whole, less
 * TOKVEC_TOK_ADD_SPECIAL) are the whole text's ids. len when there is
 * none. Byte-level BPE cuts at a newline between printable ASCII
 * characters (no split pattern's piece and no special token spans that);
 * other pipelines have no cut yet. */
size_t tokvec_tokenizer_cut(const tokvec_tokenizer *t, const char *text,
                            size_t len, size_t from);

/* Decodes n ids into *text (malloc'd, NUL-terminated, *len bytes), the
 * bytes made valid UTF-8 as Python's errors="replace" does: each maximal
 * ill-formed subpart becomes U+FFFD. 0, TOKVEC_E_TOKEN_RANGE (*bad_index
 * set when non-NULL) or -ENOMEM. */
int tokvec_tokenizer_decode(const tokvec_tokenizer *t, const int32_t *ids,
                            size_t n, char **text, size_t *len,
                            size_t *bad_index) TOKVEC_MUST_CHECK;

/* tokvec_tokenizer_decode with flags: TOKVEC_DEC_SKIP_SPECIAL leaves out
 * special tokens (HF's skip_special_tokens). WordPiece tokenizers decode
 * through the tokenizer.json's decoder (tokens joined by spaces without
 * one), as HF's decode does. */
enum { TOKVEC_DEC_SKIP_SPECIAL = 1u << 0 };
int tokvec_tokenizer_decode_flags(const tokvec_tokenizer *t,
                                  const int32_t *ids, size_t n, unsigned flags,
                                  char **text, size_t *len,
                                  size_t *bad_index) TOKVEC_MUST_CHECK;

/* Appends bytes[0..n) to out as valid UTF-8 (the same replacement rule);
 * out must have room for 3 * n bytes. Returns the bytes written. */
size_t tokvec_utf8_lossy(const unsigned char *bytes, size_t n, char *out);

#endif
