/* fuzz_unigram.c -- libFuzzer target for the Unigram model (unigram.c) and
 * the Metaspace pre-tokenizer (metaspace.c) on arbitrary bytes.
 *
 * Models: model2vec's Unigram fixture (tests/data/unigram/, unk_id, no
 * byte fallback; the fuzzer runs from the repository root) and a small
 * one built here with byte fallback and no unk_id. Invariants: tokens'
 * spans tile the input in order (byte-fallback tokens of one stretch share
 * its span, one token per byte); a token that is neither unk nor a byte
 * piece spells its span; the model with unk_id never fails; the one
 * without fails only with TOKVEC_E_TOKENIZER and leaves out as it was.
 * Metaspace: pieces are non-empty, end in order at the output's end, and
 * each output byte names an input byte or none.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metaspace.h"
#include "unigram.h"

static tv_unigram *m2v, *small;
static tv_uni_work *work;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[256] = "";
    json_error_t je;
    const char *path = "tests/data/unigram/model2vec-vocab-quantized.json";
    json_t *root = json_load_file(path, 0, &je);
    if (!root || tv_unigram_from_json(json_object_get(root, "model"), &m2v,
                                      err, sizeof err) < 0) {
        fprintf(stderr, "fuzz_unigram: %s: %s %s\n", path, je.text, err);
        abort();
    }
    json_decref(root);
    static const char *p[] = {
        "a",      "b",        "ab",     "abc",    "\xE2\x96\x81",
        "<0x61>", "<0xE2>",   "<0x96>", "<0x81>", "<0xC3>",
        "bc",     "\xC3\xA9", "c"};
    static const double s[] = {-1, -2, -2.5, -3, -1, 0, 0,
                               0,  0,  0,    -3, -4, -5};
    const unsigned char *pp[13];
    size_t len[13];
    for (int i = 0; i < 13; i++) {
        pp[i] = (const unsigned char *)p[i];
        len[i] = strlen(p[i]);
    }
    work = tv_uni_work_new();
    if (!work || tv_unigram_new(pp, len, s, 13, -1, 1, &small) < 0)
        abort();
    return 0;
}

static int is_byte_piece(const tv_unigram *u, int32_t id)
{
    size_t n = 0;
    const unsigned char *b = tv_unigram_piece(u, id, &n, NULL);
    return b && n == 6 && memcmp(b, "<0x", 3) == 0 && b[5] == '>';
}

static void check(const tv_unigram *u, const uint8_t *d, size_t n)
{
    tv_uni_toks t = {0};
    int rc = tv_unigram_encode(u, work, d, n, 7, &t);
    if (rc < 0) {
        if (tv_unigram_unk(u) >= 0 || rc != TOKVEC_E_TOKENIZER || t.n != 0)
            abort();
        tv_uni_toks_free(&t);
        return;
    }
    size_t at = 7;
    for (size_t i = 0; i < t.n; i++) {
        if (t.start[i] != at || t.end[i] <= at || t.end[i] > 7 + n)
            abort();
        size_t len = 0;
        const unsigned char *b = tv_unigram_piece(u, t.id[i], &len, NULL);
        if (!b)
            abort();
        if (is_byte_piece(u, t.id[i])) {
            size_t k = t.end[i] - t.start[i];
            for (size_t j = 1; j < k; j++)
                if (i + j >= t.n || t.start[i + j] != t.start[i] ||
                    t.end[i + j] != t.end[i])
                    abort();
            i += k - 1;
        } else if (t.id[i] != tv_unigram_unk(u) &&
                   (len != t.end[i] - t.start[i] ||
                    memcmp(b, d + t.start[i] - 7, len) != 0)) {
            abort();
        }
        at = t.end[i];
    }
    if (at != 7 + n && n > 0)
        abort();
    tv_uni_toks_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(m2v, data, size);
    check(small, data, size);
    unsigned char *out = malloc(4 * size + 4);
    size_t *src = malloc((4 * size + 4) * sizeof *src);
    size_t *ends = malloc((size + 2) * sizeof *ends);
    if (!out || !src || !ends)
        abort();
    for (int sc = 0; sc < 3; sc++) {
        tv_metaspace m = {0x2581, {0xE2, 0x96, 0x81, 0}, 3, sc, sc != 1};
        size_t olen = 0, np = 0, prev = 0;
        tv_metaspace_pretok(&m, data, size, 1, out, &olen, src, ends, &np);
        for (size_t i = 0; i < np; i++) {
            if (ends[i] <= prev || ends[i] > olen)
                abort();
            prev = ends[i];
        }
        if ((size > 0 && prev != olen) || olen > 4 * size + 4)
            abort();
        for (size_t j = 0; j < olen; j++)
            if (src[j] != SIZE_MAX && src[j] >= size)
                abort();
    }
    free(out);
    free(src);
    free(ends);
    return 0;
}
