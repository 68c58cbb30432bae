/* fuzz_tokload.c -- libFuzzer target for the tokenizer-file loaders.
 *
 * Input layout: one selector byte, then the file(s). Selector % 3:
 *  0: a .tiktoken rank file (the next byte % 3 picks the pattern: gpt2,
 *     cl100k_base, o200k_base), 1: a tokenizer.json, 2: an encoder.json
 *     and a vocab.bpe separated by the first 0x1E byte.
 * The files are written into a private temporary directory.
 *
 * Invariants: open returns 0 or a negative code; a failure has a message
 * naming a file and leaves no handle; a handle that opens encodes its own
 * tokens' bytes and decodes every id below vocab_size or refuses it; and
 * its long-piece merge (rank buckets) gives the quadratic merge's ids on
 * the input's bytes and on its tokens' bytes joined (arbitrary
 * vocabularies: merges that make lower ranks, ranks up to 2^24); and the
 * encoder cuts the input (which holds the file, so the specials' names)
 * at the special tokens the rule written out finds (leftmost, longest,
 * lowest id), whatever specials the file has (without lstrip, rstrip,
 * single_word or normalized: those are the oracle's, tests/oracle/hf.js). A
 * tokenizer.json that opens as WordPiece gets the first checks only
 * (fuzz_wordpiece.c has the rest).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tok_internal.h"
#include "tokvec_tokenizer.h"

static char dir[] = "/tmp/tokvec-fuzz-tokload-XXXXXX";

static void put(const char *name, const uint8_t *d, size_t n, char *out,
                size_t cap)
{
    snprintf(out, cap, "%s/%s", dir, name);
    FILE *f = fopen(out, "wb");
    if (!f)
        abort();
    if (n && fwrite(d, 1, n, f) != n)
        abort();
    fclose(f);
}

static void same_merges(const tokvec_tokenizer *t, tokvec_tok_state *s,
                        const unsigned char *p, size_t n)
{
    int32_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    size_t na, nb;
    if (!a || !b || tv_bpe_merge_mode(t, s, p, n, 0, a, &na) ||
        tv_bpe_merge_mode(t, s, p, n, 1, b, &nb) || na != nb ||
        memcmp(a, b, na * sizeof *a))
        abort();
    free(a);
    free(b);
}

static int is_special(const tokvec_tokenizer *t, int32_t id)
{
    const unsigned char *b;
    size_t len;
    int special = 0;
    return tokvec_tokenizer_token(t, id, &b, &len, &special) == 0 && special;
}

/* The special token that the rule picks at p[at..n): its id (-1: none). */
static int32_t naive_special(const tokvec_tokenizer *t, const uint8_t *p,
                             size_t at, size_t n, size_t *len)
{
    tokvec_tokenizer_info i;
    tokvec_tokenizer_get_info(t, &i);
    int32_t id = -1;
    *len = 0;
    for (size_t k = 0; k < i.n_special; k++) {
        int32_t sid;
        size_t sl;
        const char *b = tokvec_tokenizer_special(t, k, &sid, &sl);
        if (sl > *len && sl <= n - at && !memcmp(p + at, b, sl)) {
            *len = sl;
            id = sid;
        }
    }
    return id;
}

static void same_specials(const tokvec_tokenizer *t, tokvec_tok_state *s,
                          const uint8_t *p, size_t n)
{
    for (size_t k = 0; k < t->n_special; k++) /* added tokens' options: */
        if (t->sp[k].flags & ~(uint32_t)TV_ADD_SPECIAL) /* test_added.c */
            return;
    tokvec_tok_ids ids = {0};
    if (tokvec_tokenizer_encode(t, s, (const char *)p, n,
                                TOKVEC_TOK_SPECIAL | TOKVEC_TOK_OFFSETS, &ids))
        abort();
    size_t k = 0;
    for (size_t at = 0; at < n;) {
        size_t len;
        int32_t id = naive_special(t, p, at, n, &len);
        if (id < 0) {
            at++;
            continue;
        }
        for (; k < ids.n && ids.offsets[k] < at; k++)
            if (is_special(t, ids.ids[k]))
                abort();
        if (k == ids.n || ids.offsets[k] != at || ids.ids[k] != id)
            abort();
        k++;
        at += len;
    }
    for (; k < ids.n; k++)
        if (is_special(t, ids.ids[k]))
            abort();
    tokvec_tok_ids_free(&ids);
}

static void exercise(const tokvec_tokenizer *t, const uint8_t *raw,
                     size_t raw_len)
{
    tokvec_tokenizer_info i;
    tokvec_tokenizer_get_info(t, &i);
    tokvec_tok_state *s = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    for (int64_t id = 0; id < i.vocab_size && id < 4096; id++) {
        const unsigned char *b;
        size_t len;
        int32_t one = (int32_t)id;
        char *text;
        size_t tl;
        int rc = tokvec_tokenizer_token(t, one, &b, &len, NULL);
        int drc = tokvec_tokenizer_decode(t, &one, 1, &text, &tl, NULL);
        if ((rc == 0) != (drc == 0))
            abort();
        if (drc == 0)
            free(text);
        if (rc == 0 &&
            (tokvec_tokenizer_encode(t, s, (const char *)b, len,
                                     TOKVEC_TOK_SPECIAL | TOKVEC_TOK_OFFSETS,
                                     &ids) ||
             ids.offsets[ids.n] != len))
            abort();
    }
    tokvec_tok_ids_free(&ids);
    /* the two merges on raw, then on the first tokens' bytes joined */
    size_t n = raw_len < 2048 ? raw_len : 2048;
    if (strcmp(i.model, "BPE")) { /* WordPiece: fuzz_wordpiece.c */
        tokvec_tok_state_free(s);
        return;
    }
    unsigned char *text = malloc(4096 + 256);
    memcpy(text, raw, n);
    if (n >= 2)
        same_merges(t, s, text, n);
    same_specials(t, s, raw, n);
    n = 0;
    for (int64_t id = 0; id < i.vocab_size && n < 4096; id++) {
        const unsigned char *b;
        size_t len;
        int special;
        if (tokvec_tokenizer_token(t, (int32_t)id, &b, &len, &special) ||
            special || len > 256)
            continue;
        memcpy(text + n, b, len);
        n += len;
    }
    if (n >= 2)
        same_merges(t, s, text, n);
    free(text);
    tokvec_tok_state_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int made;
    if (!made) {
        made = mkdtemp(dir) != NULL;
        if (!made)
            abort();
    }
    if (size < 2)
        return 0;
    char p[512], q[512];
    tokvec_tokenizer_opts o = {0};
    char err[512] = "";
    o.errbuf = err;
    o.errlen = sizeof err;
    const char *open_path = p;
    switch (data[0] % 3) {
    case 0:
        o.pattern = data[1] % 3 == 2   ? "o200k_base"
                    : data[1] % 3 == 1 ? "cl100k_base"
                                       : "gpt2";
        put("r.tiktoken", data + 2, size - 2, p, sizeof p);
        break;
    case 1:
        put("tokenizer.json", data + 1, size - 1, p, sizeof p);
        break;
    default: {
        const uint8_t *sep = memchr(data + 1, 0x1E, size - 1);
        size_t n1 = sep ? (size_t)(sep - data - 1) : size - 1;
        put("encoder.json", data + 1, n1, p, sizeof p);
        put("vocab.bpe", sep ? sep + 1 : data, sep ? size - n1 - 2 : 0, q,
            sizeof q);
    }
    }
    tokvec_tokenizer *t = NULL;
    int rc = tokvec_tokenizer_open(open_path, &o, &t);
    if (rc > 0 || (rc < 0 && (t || !strstr(err, dir))) || (rc == 0 && !t))
        abort();
    if (t) {
        exercise(t, data, size);
        tokvec_tokenizer_close(t);
    }
    return 0;
}
