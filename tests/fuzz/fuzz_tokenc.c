/* fuzz_tokenc.c -- libFuzzer target for the encoder: arbitrary bytes as
 * text through OpenAI's GPT-2 tokenizer (data/gpt2, `make data`; the
 * fuzzer runs from the repository root).
 *
 * Invariants, with and without special tokens: offsets start at 0, rise,
 * end at the input's length, and each token is the input bytes it covers;
 * decoding gives the input back when it is valid UTF-8 (and valid UTF-8
 * always); the long-piece merge and the quadratic merge agree on the
 * whole input taken as one piece (up to 512 bytes: the quadratic one is
 * slow); and every split pattern (gpt2, cl100k_base, o200k_base, Qwen 2)
 * cuts the input into non-empty pieces that end inside it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"
#include "tokvec_tokenizer.h"

static tokvec_tokenizer *tok;
static tokvec_tok_state *st;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[512] = "";
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    if (tokvec_tokenizer_open("data/gpt2", &o, &tok) < 0) {
        fprintf(stderr, "fuzz_tokenc: %s (run make data)\n", err);
        abort();
    }
    st = tokvec_tok_state_new();
    return st ? 0 : -1;
}

static int valid_utf8(const uint8_t *d, size_t n)
{
    char *tmp = malloc(3 * n + 1);
    size_t m = tokvec_utf8_lossy(d, n, tmp);
    int ok = m == n && !memcmp(tmp, d, n);
    free(tmp);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tokvec_tok_ids ids = {0};
    for (unsigned flags = 0; flags < 2; flags++) {
        if (tokvec_tokenizer_encode(tok, st, (const char *)data, size,
                                    flags | TOKVEC_TOK_OFFSETS, &ids))
            abort();
        if (ids.offsets[0] != 0 || ids.offsets[ids.n] != size)
            abort();
        for (size_t k = 0; k < ids.n; k++) {
            const unsigned char *b;
            size_t len;
            if (tokvec_tokenizer_token(tok, ids.ids[k], &b, &len, NULL) ||
                ids.offsets[k + 1] - ids.offsets[k] != len ||
                memcmp(data + ids.offsets[k], b, len))
                abort();
        }
        char *text;
        size_t tl;
        if (tokvec_tokenizer_decode(tok, ids.ids, ids.n, &text, &tl, NULL))
            abort();
        if (!valid_utf8((const uint8_t *)text, tl) ||
            (valid_utf8(data, size) &&
             (tl != size || memcmp(text, data, size))))
            abort();
        free(text);
    }
    tokvec_tok_ids_free(&ids);
    for (int pat = TV_PAT_GPT2; pat <= TV_PAT_QWEN2; pat++)
        for (size_t i = 0, e; i < size; i = e) {
            e = tv_split_next((tv_pattern)pat, data, i, size);
            if (e <= i || e > size)
                abort();
        }
    if (size >= 2 && size <= 512) {
        int32_t *a = malloc(size * sizeof *a), *b = malloc(size * sizeof *b);
        size_t na, nb;
        if (tv_bpe_merge_mode(tok, st, data, size, 0, a, &na) ||
            tv_bpe_merge_mode(tok, st, data, size, 1, b, &nb) || na != nb ||
            memcmp(a, b, na * sizeof *a))
            abort();
        free(a);
        free(b);
    }
    return 0;
}
