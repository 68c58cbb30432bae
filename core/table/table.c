/* table.c -- opening, validating and viewing embedding tables: what every
 * format shares (mapping, the choice of tensors, positions, row views); the
 * formats' parsers are safetensors.c, shards.c (sharded checkpoints),
 * gguf.c and npy.c, and what they share lies below them in base.c;
 * quantized GGUF rows are dequantized by quant.c.
 *
 * A file is mapped whole (PROT_READ, MAP_SHARED); nothing is copied, so
 * open time is O(header) and processes serving one file share its pages.
 * Every rule of the format (see tokvec_table.h) is checked here, once; a
 * handle that exists is valid, and views need no further checks beyond the
 * row index. The handle is immutable after open: any number of threads may
 * read it. Sinusoidal positions are the one thing computed (context x dim
 * floats, malloc'd at open, unless TOKVEC_TABLE_SKIP_SINUSOIDAL).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* How the rows of an embedding tensor are stored. Quantized types (GGUF
 * only: allow_quant) give float32 rows; their row length is a whole
 * number of blocks (checked by the GGUF parser). */
static int row_format(const tokvec_table_opts *o, const char *path,
                      const tokvec__tensor *x, int allow_quant,
                      tokvec__rows *r)
{
    /* Model2Vec tables (weights/mapping named) may store int8 rows. */
    int model_rows = !allow_quant && (o->weights_tensor || o->mapping_tensor);
    if (x->ndim != 2)
        return tokvec__fail(o, path, TOKVEC_E_RANK,
                            "tensor '%s' is %d-D, not 2-D", x->name, x->ndim);
    r->q = TOKVEC_Q_NONE;
    if (model_rows && !strcmp(x->dtype, "I8")) {
        r->dtype = TOKVEC_I8;
    } else if (tokvec_dtype_parse(x->dtype, &r->dtype) < 0 ||
               strlen(x->dtype) > 4) {
        if (!allow_quant || tokvec_qtype_parse(x->dtype, &r->q) < 0)
            return tokvec__fail(o, path, TOKVEC_E_DTYPE,
                                "tensor '%s' has dtype %s; embeddings must "
                                "be F32, F16 or BF16%s",
                                x->name, x->dtype,
                                allow_quant  ? " or Q8_0, Q4_0, Q4_1, Q5_0, "
                                               "Q5_1, Q4_K, Q5_K, Q6_K"
                                : model_rows ? " or I8"
                                             : "");
        r->dtype = TOKVEC_F32;
    }
    if (x->shape[0] == 0 || x->shape[1] == 0)
        return tokvec__fail(o, path, TOKVEC_E_EMPTY,
                            "tensor '%s' is empty (%" PRId64 " x %" PRId64 ")",
                            x->name, x->shape[0], x->shape[1]);
    r->base = x->data;
    r->row_bytes = (size_t)(x->nbytes / (uint64_t)x->shape[0]);
    return 0;
}

/* At most TOKVEC_MAX_SINUSOIDAL_FLOATS (2^28 floats, 1 GiB; e.g. 8192 x
 * 32768) of sinusoidal positions are computed at open: a context_length in
 * a file's metadata cannot make open allocate and compute without bound.
 * With TOKVEC_TABLE_SKIP_SINUSOIDAL the cap is checked and nothing is
 * allocated: sin_pos stays NULL, which position_row and embed check. */
static int make_sinusoidal(tokvec_table *t, unsigned flags)
{
    int64_t C = t->info.context_length, D = t->info.dim;
    uint64_t n;
    if (!tokvec__mul_ok((uint64_t)C, (uint64_t)D, &n) ||
        n > TOKVEC_MAX_SINUSOIDAL_FLOATS)
        return TOKVEC_E_TOO_LARGE;
    if (flags & TOKVEC_TABLE_SKIP_SINUSOIDAL)
        return 0;
    t->sin_pos = malloc((size_t)n * sizeof(float));
    if (!t->sin_pos)
        return -ENOMEM;
    for (int64_t i = 0; 2 * i < D; i++) {
        double inv = pow(10000.0, (double)(2 * i) / (double)D);
        for (int64_t p = 0; p < C; p++) {
            double a = (double)p / inv;
            t->sin_pos[p * D + 2 * i] = (float)sin(a);
            if (2 * i + 1 < D)
                t->sin_pos[p * D + 2 * i + 1] = (float)cos(a);
        }
    }
    return 0;
}

/* A token table .npy, and positions from opts->position_path. */
static int load_npy(tokvec_table *t, const tokvec_table_opts *o,
                    const char *path, const tokvec__tensor **tok,
                    const tokvec__tensor **pos)
{
    tokvec_dtype dtype;
    int rc;
    t->info.format = "npy";
    t->tensors = calloc(2, sizeof *t->tensors);
    if (!t->tensors)
        return -ENOMEM;
    t->ntensors = 1; /* counted first so close frees a partial parse */
    rc = tokvec__parse_npy(o, path, t->map, t->map_len, &t->tensors[0],
                           &dtype);
    if (rc < 0)
        return rc;
    *tok = &t->tensors[0];
    if (o->position_path) {
        t->ntensors = 2;
        t->tensors[1].file = 1;
        t->map_path[1] = strdup(o->position_path);
        if (!t->map_path[1])
            return -ENOMEM;
        rc = tokvec__map_file(o, o->position_path, &t->map2, &t->map2_len);
        if (rc >= 0)
            rc = tokvec__parse_npy(o, o->position_path, t->map2, t->map2_len,
                                   &t->tensors[1], &dtype);
        if (rc < 0)
            return rc;
        *pos = &t->tensors[1];
    }
    return 0;
}

/* What the first bytes of a file say it is. A safetensors file starts
 * with its header length, which fits in the file, and its header's '{';
 * a sharded checkpoint's index is JSON text (no NUL in its first bytes). */
typedef enum {
    F_UNKNOWN,
    F_NPY,
    F_GGUF,
    F_INDEX,
    F_SAFETENSORS,
    F_ZIP,    /* torch.save's archive (.pt, .pth), or numpy's .npz */
    F_PICKLE, /* torch.save's legacy format: a pickle, protocol 2 to 5 */
} kind;

static kind sniff(const unsigned char *m, size_t len)
{
    if (len >= 6 && !memcmp(m, "\x93NUMPY", 6))
        return F_NPY;
    if (len >= 4 && !memcmp(m, "GGUF", 4))
        return F_GGUF;
    size_t i = 0;
    while (i < len && i < 8 && m[i] && strchr(" \t\r\n", m[i]))
        i++;
    if (i < len && m[i] == '{' && !memchr(m, 0, len < 8 ? len : 8))
        return F_INDEX;
    if (len < 8 || tokvec__le64(m) <= len - 8 || (len > 8 && m[8] == '{'))
        return F_SAFETENSORS;
    /* Not a safetensors header (its length would pass the file's end). */
    if (!memcmp(m, "PK\x03\x04", 4))
        return F_ZIP;
    if (m[0] == 0x80 && m[1] >= 2 && m[1] <= 5)
        return F_PICKLE;
    return F_UNKNOWN;
}

/* The error for a torch.save file: what it is and the conversion that
 * makes it a table (core never logs: the hint is in the message). */
static int torch_file(const tokvec_table_opts *o, const char *path, kind k)
{
    return tokvec__fail(
        o, path, TOKVEC_E_FORMAT,
        "%s, not a safetensors, .npy or GGUF file; convert it once: "
        "python3 -c \"import torch; from safetensors.torch import "
        "save_file; sd = torch.load('%s', map_location='cpu'); "
        "save_file({k: v.contiguous() for k, v in sd.items()}, "
        "'model.safetensors')\" (pip install torch safetensors; for a "
        "whole model saved with torch.save(model), use its .state_dict())",
        k == F_ZIP ? "a zip archive: PyTorch's torch.save (.pt, .pth) or "
                     "numpy's .npz"
                   : "a Python pickle: PyTorch's legacy torch.save (.pt, "
                     ".pth, .bin)",
        path);
}

/* Maps path and parses it by what it is; *tok and *pos are its tensors. */
static int load(tokvec_table *t, const tokvec_table_opts *o, const char *path,
                const tokvec__tensor **tok, const tokvec__tensor **pos)
{
    static const char *const *const st_names[2] = {tokvec__token_names,
                                                   tokvec__position_names};
    int rc = tokvec__map_file(o, path, &t->map, &t->map_len);
    if (rc < 0)
        return rc;
    t->info.file_size = t->map_len;
    kind k = sniff(t->map, t->map_len);
    if (k == F_NPY)
        return load_npy(t, o, path, tok, pos);
    if (o->position_path)
        return tokvec__fail(o, path, TOKVEC_E_INVAL,
                            "a position .npy goes with a .npy token "
                            "table only");
    if (k == F_GGUF) {
        static const char *const tn[] = {"token_embd.weight", NULL};
        static const char *const pn[] = {"position_embd.weight", NULL};
        static const char *const *const gg_names[2] = {tn, pn};
        t->info.format = "gguf";
        t->gguf = 1;
        t->pos_names = pn;
        rc = tokvec__parse_gguf(t, o, path, t->map, t->map_len);
        if (rc < 0)
            return rc;
        return tokvec__pick(t, o, path, gg_names, tok, pos);
    }
    if (k == F_INDEX) {
        t->info.format = "safetensors-index";
        return tokvec__open_index(t, o, path, tok, pos);
    }
    if (k == F_ZIP || k == F_PICKLE)
        return torch_file(o, path, k);
    if (k != F_SAFETENSORS)
        return tokvec__fail(o, path, TOKVEC_E_FORMAT,
                            "not a safetensors, .npy or GGUF file (and "
                            "not a model.safetensors.index.json)");
    t->info.format = "safetensors";
    rc = tokvec__parse_safetensors(t, o, path, t->map, t->map_len, 0);
    if (rc < 0)
        return rc;
    return tokvec__pick(t, o, path, st_names, tok, pos);
}

/* The learned position table: as wide as the token table and, but in
 * GGUF (whose rows are all widened to float32), of the same dtype. */
static int learned(tokvec_table *t, const tokvec_table_opts *o,
                   const char *path, const tokvec__tensor *tok,
                   const tokvec__tensor *pos, int gguf)
{
    int rc = row_format(o, path, pos, gguf, &t->pos_rows);
    if (rc < 0)
        return rc;
    if (pos->shape[1] != tok->shape[1] ||
        (!gguf && strcmp(pos->dtype, tok->dtype)))
        return tokvec__fail(o, path, TOKVEC_E_MISMATCH,
                            "token table '%s' is %" PRId64 " wide %s, "
                            "position table '%s' is %" PRId64 " wide %s",
                            tok->name, tok->shape[1], tok->dtype, pos->name,
                            pos->shape[1], pos->dtype);
    t->pos = pos->data;
    t->info.context_length = pos->shape[0];
    t->info.position_tensor = pos->name;
    t->info.position_dtype = pos->dtype;
    return 0;
}

/* The positions the table has: learned, sinusoidal or none. */
static int positions(tokvec_table *t, const tokvec_table_opts *o,
                     const char *path, const tokvec__tensor *tok,
                     const tokvec__tensor *pos)
{
    tokvec_positional kind = o->positional;
    int rc;
    if (kind == TOKVEC_POS_AUTO)
        kind = pos ? TOKVEC_POS_LEARNED
               : t->meta_positional == TOKVEC_POS_SINUSOIDAL
                   ? TOKVEC_POS_SINUSOIDAL
                   : TOKVEC_POS_NONE;
    if (kind == TOKVEC_POS_LEARNED && !pos)
        return tokvec__fail(o, path, TOKVEC_E_NO_TENSOR,
                            "no position tensor (%s or the other names)",
                            t->pos_names[0]);
    t->info.positional = kind;
    if (kind == TOKVEC_POS_LEARNED)
        return learned(t, o, path, tok, pos, t->gguf);
    if (kind != TOKVEC_POS_SINUSOIDAL)
        return 0;
    t->info.context_length = o->context_length > 0 ? o->context_length
                             : t->meta_context > 0
                                 ? t->meta_context
                                 : TOKVEC_DEFAULT_SINUSOIDAL_CONTEXT;
    rc = make_sinusoidal(t, o->flags);
    if (rc < 0) {
        const char *why = rc == TOKVEC_E_TOO_LARGE ? " (at most 2^28 floats)"
                                                   : "";
        return tokvec__fail(o, path, rc,
                            "cannot compute sinusoidal positions "
                            "for context_length %" PRId64 " x dim %" PRId64
                            ": %s%s",
                            t->info.context_length, t->info.dim,
                            tokvec_strerror(rc), why);
    }
    return 0;
}

/* A 1-D tensor of n values named name (opts' weights or mapping), or
 * NULL when the file has none; dtype one of the two given. */
static int vector_of(tokvec_table *t, const tokvec_table_opts *o,
                     const char *path, const char *name, const char *dt1,
                     const char *dt2, const tokvec__tensor **out)
{
    *out = name ? tokvec__find_tensor(t, name, -1) : NULL;
    const tokvec__tensor *x = *out;
    if (!x)
        return 0;
    if (x->ndim != 1)
        return tokvec__fail(o, path, TOKVEC_E_RANK,
                            "tensor '%s' is %d-D, not 1-D [vocab_size]",
                            x->name, x->ndim);
    if (strcmp(x->dtype, dt1) && (!dt2 || strcmp(x->dtype, dt2)))
        return tokvec__fail(o, path, TOKVEC_E_DTYPE,
                            "tensor '%s' has dtype %s, not %s%s%s", x->name,
                            x->dtype, dt1, dt2 ? " or " : "", dt2 ? dt2 : "");
    return 0;
}

/* Model2Vec's weights [V] and mapping [V] (every value < K): vocab_size
 * becomes V. Each mapping value is checked here, once, so a row view
 * never reads past the token tensor. */
static int model_rows(tokvec_table *t, const tokvec_table_opts *o,
                      const char *path, const tokvec__tensor *tok)
{
    const tokvec__tensor *w, *m;
    int64_t K = tok->shape[0];
    int rc = vector_of(t, o, path, o->weights_tensor, "F64", "F32", &w);
    if (rc >= 0)
        rc = vector_of(t, o, path, o->mapping_tensor, "I32", NULL, &m);
    if (rc < 0)
        return rc;
    t->info.stored_rows = K;
    if (w && m && w->shape[0] != m->shape[0])
        return tokvec__fail(o, path, TOKVEC_E_MISMATCH,
                            "tensor '%s' has %" PRId64
                            " values, '%s' has %" PRId64
                            ": both must be one per token",
                            w->name, w->shape[0], m->name, m->shape[0]);
    if (w && !m && w->shape[0] != K)
        return tokvec__fail(o, path, TOKVEC_E_MISMATCH,
                            "tensor '%s' has %" PRId64 " values but '%s' "
                            "has %" PRId64 " rows (and there is no '%s')",
                            w->name, w->shape[0], tok->name, K,
                            o->mapping_tensor ? o->mapping_tensor : "mapping");
    if (m) {
        for (int64_t i = 0; i < m->shape[0]; i++) {
            const unsigned char *p = m->data + 4 * (size_t)i;
            int32_t v = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                                  (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
            if (v < 0 || v >= K)
                return tokvec__fail(o, path, TOKVEC_E_OFFSETS,
                                    "tensor '%s'[%" PRId64 "] is %" PRId32
                                    ", not a row of '%s' [0, %" PRId64 ")",
                                    m->name, i, v, tok->name, K);
        }
        t->mapping = m->data;
        t->info.mapping_tensor = m->name;
        t->info.vocab_size = m->shape[0];
    }
    if (w) {
        t->weights = w->data;
        t->weights_f64 = !strcmp(w->dtype, "F64");
        t->info.weights_tensor = w->name;
        t->info.weights_dtype = w->dtype;
        t->info.vocab_size = w->shape[0];
    }
    return 0;
}

int tokvec_table_open(const char *path, const tokvec_table_opts *opts,
                      tokvec_table **out)
{
    tokvec_table_opts none = {0};
    const tokvec_table_opts *o = opts ? opts : &none;
    const tokvec__tensor *tok = NULL, *pos = NULL;
    int rc;

    *out = NULL;
    if (o->errbuf && o->errlen)
        o->errbuf[0] = '\0';
    if (!path)
        return TOKVEC_E_INVAL;
    tokvec_table *t = calloc(1, sizeof *t);
    if (!t) /* one line naming the file, as every failure */
        return tokvec__fail(o, path, -ENOMEM, "%s", tokvec_strerror(-ENOMEM));
    t->meta_positional = TOKVEC_POS_AUTO;
    t->pos_names = tokvec__position_names;
    t->path = tokvec__index_in_dir(path);
    if (!t->path) {
        rc = -ENOMEM;
        goto out;
    }
    rc = load(t, o, t->path, &tok, &pos);
    if (rc >= 0)
        rc = row_format(o, t->path, tok, t->gguf, &t->tok_rows);
    if (rc < 0)
        goto out;
    t->info.vocab_size = tok->shape[0];
    t->info.dim = tok->shape[1];
    t->info.token_tensor = tok->name;
    t->info.token_dtype = tok->dtype;
    t->tok = tok->data;
    t->row_bytes = t->tok_rows.row_bytes;
    t->info.stored_rows = tok->shape[0];
    if (!t->gguf && (o->weights_tensor || o->mapping_tensor))
        rc = model_rows(t, o, t->path, tok);
    if (rc >= 0)
        rc = positions(t, o, t->path, tok, pos);
    if (rc < 0)
        goto out;
    /* The dtype of the rows: as stored, or float32 for quantized tables
     * and for GGUF files whose two tables differ (all widened). */
    int plain = t->tok_rows.q == TOKVEC_Q_NONE &&
                t->tok_rows.dtype != TOKVEC_I8 && !t->weights && !t->mapping &&
                (!t->pos || (t->pos_rows.q == TOKVEC_Q_NONE &&
                             t->pos_rows.dtype == t->tok_rows.dtype));
    t->info.dtype = plain ? t->tok_rows.dtype : TOKVEC_F32;
    t->info.path = t->path;
    t->info.metadata_json = t->metadata_json;
    t->aligned = plain && ((uintptr_t)t->tok % 4 == 0) &&
                 (!t->pos || (uintptr_t)t->pos % 4 == 0);
    *out = t;
    return 0;
out:
    if (rc < 0 && o->errbuf && o->errlen && !o->errbuf[0])
        (void)tokvec__fail(o, path, rc, "%s", tokvec_strerror(rc));
    tokvec_table_close(t);
    return rc;
}

void tokvec_table_close(tokvec_table *t)
{
    if (!t)
        return;
    if (t->map)
        munmap((void *)t->map, t->map_len);
    if (t->map2)
        munmap((void *)t->map2, t->map2_len);
    for (size_t i = 0; i < t->ntensors; i++) {
        free(t->tensors[i].name);
        free(t->tensors[i].dtype);
        free(t->tensors[i].shape);
    }
    for (size_t i = 0; i < t->nshards; i++)
        free(t->shards[i].file);
    free(t->shards);
    free(t->map_path[0]);
    free(t->map_path[1]);
    free(t->tensors);
    free(t->metadata_json);
    free(t->sin_pos);
    free(t->path);
    free(t);
}

const tokvec_table_info *tokvec_table_get_info(const tokvec_table *t)
{
    return &t->info;
}

size_t tokvec_table_tensor_count(const tokvec_table *t)
{
    return t->ntensors;
}

int tokvec_table_tensor(const tokvec_table *t, size_t i, tokvec_tensor *out)
{
    if (i >= t->ntensors)
        return TOKVEC_E_INVAL;
    const tokvec__tensor *x = &t->tensors[i];
    out->name = x->name;
    out->dtype = x->dtype;
    out->ndim = x->ndim;
    out->shape = x->shape;
    out->data = x->data;
    out->nbytes = x->nbytes;
    out->file = NULL;
    for (size_t k = 0; k < t->nshards; k++)
        if (t->shards[k].map == x->file)
            out->file = t->shards[k].file;
    return 0;
}

size_t tokvec_table_shard_count(const tokvec_table *t)
{
    return t->nshards;
}

int tokvec_table_shard(const tokvec_table *t, size_t i, tokvec_shard *out)
{
    if (i >= t->nshards)
        return TOKVEC_E_INVAL;
    const tokvec__shard *s = &t->shards[i];
    out->file = s->file;
    out->ntensors = s->ntensors;
    out->mapped = s->map >= 0;
    out->file_size = s->map == 0 ? t->map_len : s->map == 1 ? t->map2_len : 0;
    return 0;
}

size_t tokvec_table_mapping_count(const tokvec_table *t)
{
    return (t->map != NULL) + (t->map2 != NULL);
}

int tokvec_table_mapping(const tokvec_table *t, size_t i, tokvec_mapping *out)
{
    int slot = i == 0 && t->map ? 0 : t->map2 && i < 2 ? 1 : -1;
    if (slot < 0 || i >= tokvec_table_mapping_count(t))
        return TOKVEC_E_INVAL;
    out->addr = slot ? t->map2 : t->map;
    out->len = slot ? t->map2_len : t->map_len;
    out->path = t->map_path[slot] ? t->map_path[slot] : t->path;
    return 0;
}

static void row_view(const tokvec__rows *r, int64_t i, int64_t dim,
                     tokvec_row *out)
{
    out->data = r->base + (size_t)i * r->row_bytes;
    out->dim = dim;
    out->dtype = r->dtype;
    out->nbytes = r->row_bytes;
    out->qtype = r->q;
    out->weighted = 0;
    out->weight = 1.0;
}

static uint64_t le_bytes(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int tokvec_table_token_row(const tokvec_table *t, int64_t id, tokvec_row *out)
{
    if (id < 0 || id >= t->info.vocab_size)
        return TOKVEC_E_TOKEN_RANGE;
    /* Model2Vec: mapping's values were checked at open (all < K). */
    int64_t row = t->mapping ? (int32_t)(uint32_t)le_bytes(
                                   t->mapping + 4 * (size_t)id, 4)
                             : id;
    row_view(&t->tok_rows, row, t->info.dim, out);
    if (t->weights && t->weights_f64) {
        uint64_t b = le_bytes(t->weights + 8 * (size_t)id, 8);
        memcpy(&out->weight, &b, sizeof out->weight);
        out->weighted = 1;
    } else if (t->weights) {
        uint32_t b = (uint32_t)le_bytes(t->weights + 4 * (size_t)id, 4);
        out->weight = tokvec_f32_from_bits(b);
        out->weighted = 1;
    }
    return 0;
}

int tokvec_table_position_row(const tokvec_table *t, int64_t pos,
                              tokvec_row *out)
{
    if (t->info.positional == TOKVEC_POS_NONE)
        return TOKVEC_E_NO_POSITIONS;
    if (t->info.positional == TOKVEC_POS_SINUSOIDAL && !t->sin_pos)
        return TOKVEC_E_NO_POSITIONS; /* TOKVEC_TABLE_SKIP_SINUSOIDAL */
    if (pos < 0 || pos >= t->info.context_length)
        return TOKVEC_E_POSITION_RANGE;
    if (t->sin_pos) {
        out->data = t->sin_pos + (size_t)pos * (size_t)t->info.dim;
        out->dim = t->info.dim;
        out->dtype = TOKVEC_F32;
        out->nbytes = (size_t)t->info.dim * 4;
        out->qtype = TOKVEC_Q_NONE;
        out->weighted = 0;
        out->weight = 1.0;
    } else {
        row_view(&t->pos_rows, pos, t->info.dim, out);
    }
    return 0;
}

void tokvec_row_to_f32(const tokvec_row *row, float *dst)
{
    if (row->qtype != TOKVEC_Q_NONE)
        tokvec_dequantize(row->qtype, row->data, dst, (size_t)row->dim);
    else
        tokvec_widen(row->dtype, row->data, dst, (size_t)row->dim);
    if (row->weighted)
        for (int64_t i = 0; i < row->dim; i++)
            dst[i] = (float)((double)dst[i] * row->weight);
}
