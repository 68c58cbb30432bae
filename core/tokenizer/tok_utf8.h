/* tok_utf8.h -- one UTF-8 character at a time, for the tokenizer's
 * stages (unigram.c, metaspace.c, precompiled.c, added.c, hf_pipeline.c).
 *
 * Must hold: strict decoding (no overlong forms, no surrogates, nothing
 * above U+10FFFF); a byte that starts no valid sequence is a character of
 * one byte (tv_u8_next gives U+FFFD-free TV_U8_BAD for it), so any bytes
 * can be walked. Pure functions: any thread.
 */
#ifndef TOKVEC_TOK_UTF8_H
#define TOKVEC_TOK_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define TV_U8_BAD 0xFFFFFFFFu

/* The code point at s[0] (n > 0 bytes left); *len its length (1..4). */
static inline uint32_t tv_u8_next(const unsigned char *s, size_t n,
                                  size_t *len)
{
    unsigned c = s[0];
    *len = 1;
    if (c < 0x80)
        return c;
    size_t k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    uint32_t cp = c & (k == 2 ? 0x1Fu : k == 3 ? 0x0Fu : 0x07u);
    if (c < 0xC2 || c > 0xF4 || n < k)
        return TV_U8_BAD;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return TV_U8_BAD;
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    if ((k == 3 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) ||
        (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return TV_U8_BAD;
    *len = k;
    return cp;
}

/* Bytes of the UTF-8 encoding of cp (< 0x110000) written to out[0..4). */
static inline size_t tv_u8_put(uint32_t cp, unsigned char *out)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* 1 when s[0..n) is valid UTF-8. */
static inline int tv_u8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0, k;
    while (i < n) {
        if (tv_u8_next(s + i, n - i, &k) == TV_U8_BAD)
            return 0;
        i += k;
    }
    return 1;
}

#endif
