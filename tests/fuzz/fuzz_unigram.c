/* fuzz_unigram.c -- libFuzzer target for the SentencePiece family of
 * tokenizer.json (tok_hf.h): the loaders of the Unigram model (unigram.c)
 * and of BPE without ByteLevel (spbpe.c) and of their pipeline
 * (Precompiled, Replace with regexes, Strip, Prepend, Metaspace,
 * ByteFallback, TemplateProcessing), and encoding and decoding through
 * it.
 *
 * Input layout: a tokenizer.json, a 0x1E byte, then a text. Without the
 * separator the whole input is a text for three tokenizers opened once:
 * model2vec's Unigram fixture (tests/data/unigram/, BertNormalizer,
 * Replace, Strip, Metaspace split false), the Unigram trained by spm_train
 * (Precompiled charsmap, byte fallback, user-defined pieces, a template)
 * tests/data/unigram/seq.json (a small model with byte fallback and a
 * pipeline of every other stage kind), and two BPEs: the one trained by
 * spm_train (tests/data/bpe-spm/debian-bpe.json) and one with affixes and
 * fuse_unk (affix.json). The fuzzer runs from the repository root.
 *
 * Invariants: open returns 0 or a negative code with a message naming the
 * file and no handle; encoding any bytes returns 0 with every id a token,
 * every span inside the text (start <= stop <= length; 0..0 for the
 * tokens the post-processor adds), spans in order (a token never starts
 * before the one before it), the same answer twice (the state's buffers
 * are reused), exactly the post-processor's ids around the text with
 * TOKVEC_TOK_ADD_SPECIAL; decoding the ids, with and without special
 * tokens, succeeds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokvec_tokenizer.h"

static char dir[] = "/tmp/tokvec-fuzz-unigram-XXXXXX";

static void check(const tokvec_tokenizer *t, tokvec_tok_state *s,
                  const char *text, size_t n)
{
    tokvec_tok_ids a = {0}, b = {0}, c = {0};
    unsigned f = TOKVEC_TOK_SPECIAL | TOKVEC_TOK_OFFSETS;
    if (tokvec_tokenizer_encode(t, s, text, n, f, &a) ||
        tokvec_tokenizer_encode(t, s, text, n, f | TOKVEC_TOK_ADD_SPECIAL,
                                &b) ||
        tokvec_tokenizer_encode(t, s, text, n, f, &c))
        abort();
    if (c.n != a.n ||
        (a.n && (memcmp(c.ids, a.ids, a.n * sizeof *a.ids) ||
                 memcmp(c.offsets, a.offsets, a.n * sizeof *a.offsets) ||
                 memcmp(c.stops, a.stops, a.n * sizeof *a.stops))))
        abort();
    const int32_t *pre, *post;
    size_t npre, npost;
    tokvec_tokenizer_added(t, &pre, &npre, &post, &npost);
    if (b.n != a.n + npre + npost ||
        (npre && memcmp(b.ids, pre, npre * sizeof *pre)) ||
        (a.n && memcmp(b.ids + npre, a.ids, a.n * sizeof *a.ids)) ||
        (npost && memcmp(b.ids + npre + a.n, post, npost * sizeof *post)))
        abort();
    for (size_t k = 0; k < a.n; k++) {
        const unsigned char *tb;
        size_t tl;
        if (tokvec_tokenizer_token(t, a.ids[k], &tb, &tl, NULL) ||
            a.offsets[k] > a.stops[k] || a.stops[k] > n ||
            (k && a.offsets[k] < a.offsets[k - 1]) ||
            b.offsets[npre + k] != a.offsets[k] ||
            b.stops[npre + k] != a.stops[k])
            abort();
    }
    for (size_t k = 0; k < npre; k++)
        if (b.offsets[k] || b.stops[k])
            abort();
    for (unsigned sk = 0; sk < 2; sk++) {
        char *out;
        size_t ol;
        if (tokvec_tokenizer_decode_flags(t, b.ids, b.n, sk, &out, &ol, NULL))
            abort();
        free(out);
    }
    tokvec_tok_ids_free(&a);
    tokvec_tok_ids_free(&b);
    tokvec_tok_ids_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const fixed[] = {
        "tests/data/unigram/model2vec-vocab-quantized.json",
        "tests/data/unigram/debian-unigram.json",
        "tests/data/unigram/seq.json",
        "tests/data/bpe-spm/debian-bpe.json",
        "tests/data/bpe-spm/affix.json",
    };
    enum { NFIX = sizeof fixed / sizeof *fixed };
    static int made;
    static tokvec_tokenizer *tk[NFIX];
    static tokvec_tok_state *s;
    if (!made) {
        made = mkdtemp(dir) != NULL;
        s = tokvec_tok_state_new();
        if (!made || !s)
            abort();
        for (size_t k = 0; k < NFIX; k++)
            if (tokvec_tokenizer_open(fixed[k], NULL, &tk[k])) {
                fprintf(stderr, "fuzz_unigram: cannot open %s\n", fixed[k]);
                abort();
            }
    }
    const uint8_t *sep = memchr(data, 0x1E, size);
    if (!sep) {
        for (size_t k = 0; k < NFIX; k++)
            check(tk[k], s, (const char *)data, size);
        return 0;
    }
    char p[512], err[512] = "";
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    FILE *f = fopen(p, "wb");
    size_t n1 = (size_t)(sep - data);
    if (!f || (n1 && fwrite(data, 1, n1, f) != n1))
        abort();
    fclose(f);
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = NULL;
    int rc = tokvec_tokenizer_open(p, &o, &t);
    if (rc > 0 || (rc < 0 && (t || !strstr(err, dir))) || (rc == 0 && !t))
        abort();
    if (t) {
        check(t, s, (const char *)sep + 1, size - n1 - 1);
        tokvec_tokenizer_close(t);
    }
    return 0;
}
