/* unigram.h -- the Unigram model of Hugging Face tokenizers (SentencePiece's
 * unigram language model), standalone: a vocabulary of (piece, score),
 * unk_id and byte_fallback; one pre-tokenized, normalized string in, ids
 * and byte spans out, exactly as tokenizers' Unigram::tokenize (Rust,
 * models/unigram/model.rs, the "optimized" Viterbi it uses by default).
 * Internal to core/tokenizer/ (the tokenizer.json loader calls it).
 *
 * Must hold: the model is immutable after tv_unigram_new/_from_json and
 * may be shared by any number of threads; a tv_uni_work and a tv_uni_toks
 * belong to one thread at a time. Nothing here logs or touches files.
 */
#ifndef TOKVEC_UNIGRAM_H
#define TOKVEC_UNIGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"

struct json_t;
typedef struct tv_unigram tv_unigram;
typedef struct tv_uni_work tv_uni_work;

/* Tokens appended by tv_unigram_encode: token i is id[i], its text the
 * bytes start[i]..end[i] of the caller's coordinates (base + offset in the
 * string). Byte-fallback tokens of one unknown stretch all carry that
 * stretch's span, as tokenizers does. Grown, never shrunk; n = 0 empties.
 * Spans are 32-bit (12 bytes a token): base + n must stay below 2^32. */
typedef struct tv_uni_toks {
    int32_t *id;
    uint32_t *start, *end;
    size_t n, cap;
} tv_uni_toks;

/* A model from n pieces (piece[i]: len[i] bytes of valid UTF-8, any bytes
 * but not all need be distinct: the last of equal pieces wins, as in
 * tokenizers) with scores; unk_id < 0 for none; n < 2^24. 0,
 * TOKVEC_E_INVAL (unk_id out of range, n too large, a piece not UTF-8) or
 * -ENOMEM. */
int tv_unigram_new(const unsigned char *const *piece, const size_t *len,
                   const double *score, size_t n, int64_t unk_id,
                   int byte_fallback, tv_unigram **out) TOKVEC_MUST_CHECK;

/* A model from a tokenizer.json "model" object of type Unigram: "vocab"
 * [[piece, score], ...], "unk_id" (null or an index), "byte_fallback".
 * 0, TOKVEC_E_TOKENIZER with a one-line reason in err (errlen bytes with
 * the NUL; err may be NULL), or -ENOMEM. */
int tv_unigram_from_json(const struct json_t *model, tv_unigram **out,
                         char *err, size_t errlen) TOKVEC_MUST_CHECK;

void tv_unigram_free(tv_unigram *u);

size_t tv_unigram_size(const tv_unigram *u); /* pieces, ids 0..size-1 */
int64_t tv_unigram_unk(const tv_unigram *u); /* unk_id or -1 */
/* token_to_id: the id of exactly these bytes, or -1. */
int32_t tv_unigram_id(const tv_unigram *u, const unsigned char *s, size_t n);
/* id_to_token: the piece's bytes (*len set) and score; NULL past the end. */
const unsigned char *tv_unigram_piece(const tv_unigram *u, int32_t id,
                                      size_t *len, double *score);

/* Working memory of one thread: a window of the lattice, ~21 bytes per
 * byte of the longest string encoded up to a few thousand, more only
 * where the best paths do not meet within that; NULL when out of
 * memory. */
tv_uni_work *tv_uni_work_new(void);
void tv_uni_work_free(tv_uni_work *w);

/* Encodes s[0..n) (one pre-tokenized string) and appends its tokens to
 * out, spans offset by base. Bytes that are not UTF-8 count as characters
 * of one byte (tokenizers never passes such strings). 0, -ENOMEM (also
 * when base + n does not fit the 32-bit spans),
 * TOKVEC_E_TOKENIZER when a character is unknown and the model has no
 * unk_id (tokenizers' MissingUnkId: the whole encode fails there too). On
 * error out->n is as before the call. */
int tv_unigram_encode(const tv_unigram *u, tv_uni_work *w,
                      const unsigned char *s, size_t n, size_t base,
                      tv_uni_toks *out) TOKVEC_MUST_CHECK;

/* Takes the tokens in t (all of them, in order), then sets t->n = 0: 0 or
 * a negative errno, which ends the encode with it. */
typedef int (*tv_uni_sink)(void *ctx, tv_uni_toks *t);

/* tv_unigram_encode, handing out's tokens to sink(ctx, out) whenever
 * there are a few thousand of them (out holds at most those), so that a
 * long string needs no token list as long as itself. What is left in out
 * at the end is the caller's to take. Tokens given to the sink stay
 * given when the encode fails. */
int tv_unigram_encode_sink(const tv_unigram *u, tv_uni_work *w,
                           const unsigned char *s, size_t n, size_t base,
                           tv_uni_toks *out, tv_uni_sink sink,
                           void *ctx) TOKVEC_MUST_CHECK;

/* One string given in pieces, for a caller that does not hold it whole
 * (a word of megabytes: the pipeline normalizes it a stretch at a time):
 * tv_unigram_stream_begin starts it in w (spans offset by base), then
 * each tv_unigram_stream_feed hands the bytes that came so far: s holds
 * bytes sb..n of the string (sb no more than the *keep of the call
 * before; the first call: 0), last when n is the string's end. It runs
 * the Viterbi as far as no piece could reach past n, handing tokens to
 * sink as tv_unigram_encode_sink does (what is left in out after a call
 * is the caller's to take), and sets *keep to the first byte a later call
 * may still read (the caller may drop the bytes before it). Tokens,
 * scores and ties are exactly tv_unigram_encode's on the whole string. 0,
 * -ENOMEM, TOKVEC_E_TOKENIZER as there; w is one string's at a time. */
int tv_unigram_stream_begin(const tv_unigram *u, tv_uni_work *w,
                            size_t base) TOKVEC_MUST_CHECK;
int tv_unigram_stream_feed(const tv_unigram *u, tv_uni_work *w,
                           const unsigned char *s, size_t sb, size_t n,
                           int last, tv_uni_toks *out, tv_uni_sink sink,
                           void *ctx, size_t *keep) TOKVEC_MUST_CHECK;

void tv_uni_toks_free(tv_uni_toks *t);

#endif
