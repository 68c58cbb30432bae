/* fuzz_tokload.c -- libFuzzer target for the tokenizer-file loaders.
 *
 * Input layout: one selector byte, then the file(s). Selector % 3:
 *  0: a .tiktoken rank file (pattern gpt2; % 2 of the next byte picks
 *     cl100k_base instead), 1: a tokenizer.json, 2: an encoder.json and a
 *     vocab.bpe separated by the first 0x1E byte.
 * The files are written into a private temporary directory.
 *
 * Invariants: open returns 0 or a negative code; a failure has a message
 * naming a file and leaves no handle; a handle that opens encodes its own
 * tokens' bytes and decodes every id below vocab_size or refuses it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void exercise(const tokvec_tokenizer *t)
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
        if (rc == 0 && (tokvec_tokenizer_encode(t, s, (const char *)b, len,
                                                TOKVEC_TOK_SPECIAL |
                                                    TOKVEC_TOK_OFFSETS,
                                                &ids) ||
                        ids.offsets[ids.n] != len))
            abort();
    }
    tokvec_tok_ids_free(&ids);
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
        o.pattern = data[1] % 2 ? "cl100k_base" : "gpt2";
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
        exercise(t);
        tokvec_tokenizer_close(t);
    }
    return 0;
}
