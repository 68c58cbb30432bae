/* precompiled.h -- SentencePiece's precompiled charsmap normalizer as
 * Hugging Face tokenizers applies it (normalizers/precompiled.rs over the
 * spm_precompiled crate), standalone. Internal to core/tokenizer/ (the
 * tokenizer.json loader calls it for {"type": "Precompiled"}).
 *
 * Must hold: a tv_precompiled is immutable after construction and may be
 * shared by any number of threads; calls allocate nothing but their
 * answer. Offsets: the answer is the change list tokenizers'
 * NormalizedString::transform reads (normalize.c applies it).
 */
#ifndef TOKVEC_PRECOMPILED_H
#define TOKVEC_PRECOMPILED_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"

struct json_t;
typedef struct tv_precompiled tv_precompiled;

/* From the decoded charsmap bytes (u32 LE trie size, the double-array
 * trie, then NUL-separated normalized strings). 0, TOKVEC_E_TOKENIZER
 * (too short, normalized part not UTF-8) or -ENOMEM. */
int tv_precompiled_new(const unsigned char *map, size_t n,
                       tv_precompiled **out) TOKVEC_MUST_CHECK;

/* From {"type": "Precompiled", "precompiled_charsmap": BASE64}. 0,
 * TOKVEC_E_TOKENIZER with a one-line reason in err (errlen bytes with the
 * NUL; err may be NULL), or -ENOMEM. */
int tv_precompiled_from_json(const struct json_t *obj, tv_precompiled **out,
                             char *err, size_t errlen) TOKVEC_MUST_CHECK;

void tv_precompiled_free(tv_precompiled *p);

/* The normalization of one chunk (spm_precompiled's transform: the first,
 * i.e. shortest, prefix of the chunk found in the trie names the result,
 * which replaces the whole chunk): its bytes (*len set), or NULL when no
 * prefix is found. */
const unsigned char *tv_precompiled_lookup(const tv_precompiled *p,
                                           const unsigned char *s, size_t n,
                                           size_t *len);

/* The normalization of s[0..n) (valid UTF-8; other bytes are characters
 * of one byte) as tokenizers' list of (character, change) for
 * NormalizedString::transform: per extended grapheme cluster of fewer than
 * 6 bytes the whole cluster's lookup, else (or when it has none) each
 * character's, with precompiled.rs' changes. 0 when no rule applies (the
 * text stays as it is; *out NULL), 1 with *out malloc'd (*count entries,
 * possibly 0), or -ENOMEM. */
typedef struct tv_pc_change {
    uint32_t cp;
    long change;
} tv_pc_change;
int tv_precompiled_changes(const tv_precompiled *p, const unsigned char *s,
                           size_t n, tv_pc_change **out,
                           size_t *count) TOKVEC_MUST_CHECK;

/* The grapheme cluster break class of cp (0 Other, 1 CR, 2 LF, 3 Control,
 * 4 Extend, 5 ZWJ, 6 Regional_Indicator, 7 Prepend, 8 SpacingMark, 9 L,
 * 10 V, 11 T, 12 LV, 13 LVT; 16 added for Extended_Pictographic), from
 * Debian's UCD; a value past U+10FFFF (a byte outside UTF-8) is Control. */
int tv_grapheme_class(uint32_t cp);

/* Grapheme clusters (UAX #29 extended, Debian's UCD): the end of the
 * cluster that starts at s[i] (i < n). */
size_t tv_grapheme_next(const unsigned char *s, size_t i, size_t n);

#endif
