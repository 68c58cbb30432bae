/* fuzz_table.c -- libFuzzer target for the table file parsers: safetensors
 * (u64 header length, JSON header, offsets, sizes, dtypes, __metadata__),
 * .npy (magic, versions 1-3, the dict literal) and GGUF v2/v3 (header,
 * metadata values and arrays, tensor infos, alignment, ggml types and
 * blocks; quantized rows dequantized), through
 * tokvec_table_open on a file holding the input, then every view of what
 * opened.
 *
 * Input layout: byte 0 selects options, the rest is the file.
 *   bits 0-1  positional: auto, none, learned, sinusoidal
 *   bit 2     token_tensor = "wte.weight" (else the contract's search)
 *   bit 3     position_tensor = "wpe.weight"
 *   bit 4     a second file for position_path (.npy pairs): byte 1-2 give
 *             its length L (LE), taken from the end of the input
 *   bits 5-7  unused
 * opts.context_length is always set (1..64, from bits 2-7) for sinusoidal
 * tables: the metadata "context_length" is still parsed and validated, but
 * a tiny file cannot make the target allocate gigabytes (see SECURITY.md: a
 * trusted table may ask for context_length up to 2^31 - 1).
 *
 * Invariants checked: an opened table's views (every tensor, every row)
 * lie inside the mapped file(s); the info is consistent (dim >= 1,
 * vocab_size >= 1, row bytes = dim * dtype size, or dim / B blocks of S
 * bytes for a quantized row); the embedding of the
 * first and last ids runs; a failed open leaves an error message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "tokvec_embed.h"
#include "tokvec_table.h"

static int write_memfd(const uint8_t *data, size_t size, char *path,
                       size_t plen)
{
    int fd = memfd_create("tokvec-fuzz-table", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0)
            abort();
        off += (size_t)w;
    }
    snprintf(path, plen, "/proc/self/fd/%d", fd);
    return fd;
}

static int inside(const void *p, size_t n, const unsigned char *map,
                  size_t len)
{
    const unsigned char *c = p;
    return map && c >= map && n <= len && (size_t)(c - map) <= len - n;
}

static int in_maps(const tokvec_table *t, const void *p, size_t n)
{
    return inside(p, n, t->map, t->map_len) ||
           inside(p, n, t->map2, t->map2_len);
}

static volatile unsigned char sink;

static void touch(const void *p, size_t n)
{
    const unsigned char *c = p;
    if (n) {
        sink ^= c[0];
        sink ^= c[n - 1];
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    unsigned sel = data[0];
    data++;
    size--;
    const uint8_t *second = NULL;
    size_t second_len = 0;
    if (sel & 16) {
        if (size < 2)
            return 0;
        size_t L = (size_t)data[0] | (size_t)data[1] << 8;
        data += 2;
        size -= 2;
        if (L > size)
            L = size;
        second = data + size - L;
        second_len = L;
        size -= L;
    }

    char path[64], ppath[64];
    int fd = write_memfd(data, size, path, sizeof path), pfd = -1;
    if (second)
        pfd = write_memfd(second, second_len, ppath, sizeof ppath);

    char err[512] = "";
    tokvec_table_opts o = {
        .positional = (tokvec_positional)(sel & 3),
        .token_tensor = (sel & 4) ? "wte.weight" : NULL,
        .position_tensor = (sel & 8) ? "wpe.weight" : NULL,
        .position_path = second ? ppath : NULL,
        .context_length = 1 + (int64_t)(sel >> 2 & 63),
        .errbuf = err,
        .errlen = sizeof err,
    };
    tokvec_table *t = NULL;
    int rc = tokvec_table_open(path, &o, &t);
    if (rc < 0) {
        if (t || !err[0] || strlen(err) >= sizeof err) {
            fprintf(stderr, "failed open: handle %p, message '%s'\n",
                    (void *)t, err);
            abort();
        }
        (void)tokvec_strerror(rc);
        (void)tokvec_errname(rc);
        goto out;
    }
    const tokvec_table_info *in = tokvec_table_get_info(t);
    size_t bv = 1, bb = tokvec_dtype_size(t->tok_rows.dtype);
    if (t->tok_rows.q != TOKVEC_Q_NONE &&
        tokvec_qtype_block(t->tok_rows.q, &bv, &bb) < 0)
        abort();
    if (in->vocab_size < 1 || in->dim < 1 || in->dim % (int64_t)bv ||
        t->row_bytes != (size_t)in->dim / bv * bb || in->file_size != size ||
        !in->format || !in->token_tensor || !in->token_dtype)
        abort();
    if (in->positional == TOKVEC_POS_AUTO ||
        (in->positional == TOKVEC_POS_NONE && in->context_length != 0) ||
        (in->positional != TOKVEC_POS_NONE && in->context_length < 1))
        abort();

    size_t nt = tokvec_table_tensor_count(t);
    for (size_t i = 0; i < nt; i++) {
        tokvec_tensor x;
        if (tokvec_table_tensor(t, i, &x) < 0 || !x.name || !x.dtype ||
            x.ndim < 0)
            abort();
        for (int k = 0; k < x.ndim; k++)
            if (x.shape[k] < 0)
                abort();
        if (x.nbytes && !in_maps(t, x.data, x.nbytes)) {
            fprintf(stderr, "tensor '%s' lies outside the file\n", x.name);
            abort();
        }
        touch(x.data, x.nbytes);
    }
    if (tokvec_table_tensor(t, nt, &(tokvec_tensor){0}) >= 0)
        abort();

    /* Rows: first, last, and just outside. */
    float *vec = malloc((size_t)in->dim * sizeof *vec);
    int64_t ids[2] = {0, in->vocab_size - 1};
    for (int i = 0; i < 2; i++) {
        tokvec_row row;
        if (tokvec_table_token_row(t, ids[i], &row) < 0)
            abort();
        if (row.dim != in->dim || row.nbytes != t->row_bytes ||
            !in_maps(t, row.data, row.nbytes))
            abort();
        tokvec_row_to_f32(&row, vec);
    }
    tokvec_row row;
    if (tokvec_table_token_row(t, -1, &row) >= 0 ||
        tokvec_table_token_row(t, in->vocab_size, &row) >= 0)
        abort();
    if (in->positional != TOKVEC_POS_NONE) {
        int64_t ps[2] = {0, in->context_length - 1};
        for (int i = 0; i < 2; i++) {
            if (tokvec_table_position_row(t, ps[i], &row) < 0)
                abort();
            if (row.dim != in->dim ||
                (!t->sin_pos && !in_maps(t, row.data, row.nbytes)))
                abort();
            tokvec_row_to_f32(&row, vec);
        }
        if (tokvec_table_position_row(t, in->context_length, &row) >= 0)
            abort();
    } else if (tokvec_table_position_row(t, 0, &row) !=
               TOKVEC_E_NO_POSITIONS) {
        abort();
    }
    free(vec);

    /* One small lookup through the whole embed path, every output dtype. */
    int64_t S = in->positional == TOKVEC_POS_NONE || in->context_length >= 2
                    ? 2
                    : 1;
    int64_t q[2] = {in->vocab_size - 1, 0};
    unsigned outs[3] = {0, TOKVEC_EMBED_OUT_F16, TOKVEC_EMBED_OUT_BF16};
    for (int k = 0; k < 3; k++) {
        size_t n = tokvec_embed_size(t, 1, S, outs[k]);
        if (!n || n > (64u << 20))
            continue; /* a legitimately huge dim: skip, not a bug */
        void *out = aligned_alloc(64, (n + 63) / 64 * 64);
        if (tokvec_embed(t, q, 1, S, 0, outs[k], out) < 0)
            abort();
        free(out);
    }
    tokvec_table_close(t);
out:
    close(fd);
    if (pfd >= 0)
        close(pfd);
    return 0;
}
