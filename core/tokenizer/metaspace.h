/* metaspace.h -- Hugging Face tokenizers' Metaspace pre-tokenizer and
 * decoder (pre_tokenizers/metaspace.rs), standalone: spaces become the
 * replacement character, one is prepended per the prepend scheme, and the
 * text is cut before each replacement character (split true); decoding
 * turns replacement characters back into spaces. Internal to
 * core/tokenizer/ (the tokenizer.json loader calls it).
 *
 * Must hold: a tv_metaspace is plain data, filled once and read-only
 * after; every call is pure (any thread). The pre-tokenizer's text
 * change is tv_metaspace_text (tok_hf.h), it and its split pretok.c's.
 */
#ifndef TOKVEC_METASPACE_H
#define TOKVEC_METASPACE_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"

struct json_t;

enum { TV_MS_ALWAYS = 0, TV_MS_FIRST = 1, TV_MS_NEVER = 2 };

typedef struct tv_metaspace {
    uint32_t replacement; /* the replacement character, a code point */
    unsigned char rep[4]; /* its UTF-8 bytes ... */
    size_t rep_len;       /* ... and their number */
    int prepend;          /* TV_MS_ALWAYS, TV_MS_FIRST, TV_MS_NEVER */
    int split;            /* cut before each replacement character */
} tv_metaspace;

/* From a tokenizer.json {"type": "Metaspace", "replacement": "▁",
 * "prepend_scheme": "always"|"first"|"never", "split": bool,
 * "add_prefix_space": bool (legacy)} with tokenizers' defaults and
 * checks (prepend_scheme always, split true; add_prefix_space false with
 * another scheme than never is an error, as in tokenizers). Serves the
 * pre-tokenizer and the decoder alike. 0 or TOKVEC_E_TOKENIZER with a
 * one-line reason in err (errlen bytes with the NUL; err may be NULL). */
int tv_metaspace_from_json(const struct json_t *obj, tv_metaspace *m,
                           char *err, size_t errlen) TOKVEC_MUST_CHECK;

/* Decodes token number index (0 for the first) of a decode: tok[0..n) with
 * each replacement character a space, except in token 0 when the scheme is
 * not never, where they are dropped (tokenizers' decode_chain). Writes to
 * out (room for n bytes); returns the bytes written. */
size_t tv_metaspace_decode(const tv_metaspace *m, const unsigned char *tok,
                           size_t n, size_t index, unsigned char *out);

#endif
