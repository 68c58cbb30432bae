/* table.c -- opening, validating and viewing embedding tables: what every
 * format shares (mapping, the choice of tensors, positions, row views); the
 * formats' parsers are safetensors.c and npy.c.
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

static const char *const token_names[] = {
    "tok_emb.weight", "wte.weight", "transformer.wte.weight",
    "embeddings.word_embeddings.weight", "model.embed_tokens.weight", NULL};
static const char *const position_names[] = {
    "pos_emb.weight", "wpe.weight", "transformer.wpe.weight",
    "embeddings.position_embeddings.weight", NULL};


const char *tokvec_positional_name(tokvec_positional p)
{
    switch (p) {
    case TOKVEC_POS_NONE:
        return "none";
    case TOKVEC_POS_LEARNED:
        return "learned";
    case TOKVEC_POS_SINUSOIDAL:
        return "sinusoidal";
    default:
        return "auto";
    }
}

int tokvec_positional_parse(const char *s, tokvec_positional *out)
{
    if (!s)
        return TOKVEC_E_INVAL;
    if (!strcmp(s, "none"))
        *out = TOKVEC_POS_NONE;
    else if (!strcmp(s, "learned"))
        *out = TOKVEC_POS_LEARNED;
    else if (!strcmp(s, "sinusoidal"))
        *out = TOKVEC_POS_SINUSOIDAL;
    else if (!strcmp(s, "auto"))
        *out = TOKVEC_POS_AUTO;
    else
        return TOKVEC_E_INVAL;
    return 0;
}

/* Records a one-line reason "path: what" in the caller's buffer; returns
 * code so error paths are one statement. */
int tokvec__fail(const tokvec_table_opts *o, const char *path, int code,
                 const char *fmt, ...)
{
    if (o && o->errbuf && o->errlen) {
        int n = snprintf(o->errbuf, o->errlen, "%s: ", path);
        if (n >= 0 && (size_t)n < o->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(o->errbuf + n, o->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

/* What a file that is not a regular one is, for the error message. */
static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "a file of unknown type";
}

/* Maps a whole file read-only. O_NONBLOCK: opening a FIFO (or a device)
 * must not wait for a writer -- a SIGHUP reload runs this on the main
 * thread, which would then never see SIGTERM. Anything but a regular file
 * is refused after fstat; O_NONBLOCK does not affect mmap of a regular
 * file. */
int tokvec__map_file(const tokvec_table_opts *o, const char *path,
                     const unsigned char **map, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY),
        rc = 0;
    *map = NULL;
    *len = 0;
    if (fd < 0)
        return tokvec__fail(o, path, -errno, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) < 0) {
        rc = tokvec__fail(o, path, -errno, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = tokvec__fail(o, path, TOKVEC_E_FORMAT, "is %s, not a regular file",
                  file_kind(st.st_mode));
        goto out;
    }
    if (st.st_size == 0) {
        rc = tokvec__fail(o, path, TOKVEC_E_TRUNCATED, "file is empty");
        goto out;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        rc = tokvec__fail(o, path, -errno, "cannot map: %s", strerror(errno));
        goto out;
    }
    *map = m;
    *len = (size_t)st.st_size;
out:
    close(fd);
    return rc;
}

uint64_t tokvec__le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int tokvec__mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static const tokvec__tensor *find_tensor(const tokvec_table *t,
                                         const char *name)
{
    for (size_t i = 0; i < t->ntensors; i++)
        if (!strcmp(t->tensors[i].name, name))
            return &t->tensors[i];
    return NULL;
}

/* --- open ----------------------------------------------------------------- */

static int embedding_dtype(const tokvec_table_opts *o, const char *path,
                           const tokvec__tensor *x, tokvec_dtype *d)
{
    if (x->ndim != 2)
        return tokvec__fail(o, path, TOKVEC_E_RANK, "tensor '%s' is %d-D, not 2-D",
                    x->name, x->ndim);
    if (tokvec_dtype_parse(x->dtype, d) < 0 || strlen(x->dtype) > 4)
        return tokvec__fail(o, path, TOKVEC_E_DTYPE,
                    "tensor '%s' has dtype %s; embeddings must be F32, F16 "
                    "or BF16", x->name, x->dtype);
    if (x->shape[0] == 0 || x->shape[1] == 0)
        return tokvec__fail(o, path, TOKVEC_E_EMPTY, "tensor '%s' is empty (%" PRId64
                                             " x %" PRId64 ")",
                    x->name, x->shape[0], x->shape[1]);
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
    if (!t)
        return -ENOMEM;
    t->meta_positional = TOKVEC_POS_AUTO;
    t->path = strdup(path);
    if (!t->path) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = tokvec__map_file(o, path, &t->map, &t->map_len)) < 0)
        goto out;

    tokvec_dtype dtype, pdtype;
    if (t->map_len >= 6 && !memcmp(t->map, "\x93NUMPY", 6)) {
        t->info.format = "npy";
        t->tensors = calloc(2, sizeof *t->tensors);
        if (!t->tensors) {
            rc = -ENOMEM;
            goto out;
        }
        t->ntensors = 1; /* counted first so close frees a partial parse */
        if ((rc = tokvec__parse_npy(o, path, t->map, t->map_len, &t->tensors[0],
                            &dtype)) < 0)
            goto out;
        tok = &t->tensors[0];
        if (o->position_path) {
            t->ntensors = 2;
            t->tensors[1].file = 1;
            if ((rc = tokvec__map_file(o, o->position_path, &t->map2,
                               &t->map2_len)) < 0 ||
                (rc = tokvec__parse_npy(o, o->position_path, t->map2, t->map2_len,
                                &t->tensors[1], &pdtype)) < 0)
                goto out;
            pos = &t->tensors[1];
        }
    } else {
        t->info.format = "safetensors";
        if (o->position_path) {
            rc = tokvec__fail(o, path, TOKVEC_E_INVAL, "a position .npy goes with "
                                               "a .npy token table only");
            goto out;
        }
        if ((rc = tokvec__parse_safetensors(t, o, path, t->map, t->map_len,
                                            0)) < 0)
            goto out;
        if (o->token_tensor) {
            tok = find_tensor(t, o->token_tensor);
        } else {
            for (int i = 0; token_names[i] && !tok; i++)
                tok = find_tensor(t, token_names[i]);
        }
        if (!tok) {
            rc = tokvec__fail(o, path, TOKVEC_E_NO_TENSOR,
                      o->token_tensor ? "no tensor named '%s'"
                                      : "no token tensor (%s or the other "
                                        "names of the contract)",
                      o->token_tensor ? o->token_tensor : token_names[0]);
            goto out;
        }
        if (o->position_tensor) {
            pos = find_tensor(t, o->position_tensor);
            if (!pos) {
                rc = tokvec__fail(o, path, TOKVEC_E_NO_TENSOR,
                          "no tensor named '%s'", o->position_tensor);
                goto out;
            }
        } else if (o->positional == TOKVEC_POS_AUTO ||
                   o->positional == TOKVEC_POS_LEARNED) {
            for (int i = 0; position_names[i] && !pos; i++)
                pos = find_tensor(t, position_names[i]);
        }
    }
    if ((rc = embedding_dtype(o, path, tok, &dtype)) < 0)
        goto out;

    tokvec_positional kind = o->positional;
    if (kind == TOKVEC_POS_AUTO)
        kind = pos ? TOKVEC_POS_LEARNED
               : t->meta_positional == TOKVEC_POS_SINUSOIDAL
                   ? TOKVEC_POS_SINUSOIDAL
                   : TOKVEC_POS_NONE;
    if (kind == TOKVEC_POS_LEARNED && !pos) {
        rc = tokvec__fail(o, path, TOKVEC_E_NO_TENSOR, "no position tensor (%s or "
                                               "the other names)",
                  position_names[0]);
        goto out;
    }
    t->info.vocab_size = tok->shape[0];
    t->info.dim = tok->shape[1];
    t->info.dtype = dtype;
    t->row_bytes = (size_t)t->info.dim * tokvec_dtype_size(dtype);
    t->tok = tok->data;
    t->info.token_tensor = tok->name;
    if (kind == TOKVEC_POS_LEARNED) {
        if ((rc = embedding_dtype(o, path, pos, &pdtype)) < 0)
            goto out;
        if (pos->shape[1] != tok->shape[1] || pdtype != dtype) {
            rc = tokvec__fail(o, path, TOKVEC_E_MISMATCH,
                      "token table '%s' is %" PRId64 " wide %s, position "
                      "table '%s' is %" PRId64 " wide %s",
                      tok->name, tok->shape[1], tok->dtype, pos->name,
                      pos->shape[1], pos->dtype);
            goto out;
        }
        t->pos = pos->data;
        t->info.context_length = pos->shape[0];
        t->info.position_tensor = pos->name;
    } else if (kind == TOKVEC_POS_SINUSOIDAL) {
        t->info.context_length = o->context_length > 0 ? o->context_length
                                 : t->meta_context > 0
                                     ? t->meta_context
                                     : TOKVEC_DEFAULT_SINUSOIDAL_CONTEXT;
        if ((rc = make_sinusoidal(t, o->flags)) < 0) {
            tokvec__fail(o, path, rc, "cannot compute sinusoidal positions for "
                 "context_length %" PRId64 " x dim %" PRId64 ": %s%s",
                 t->info.context_length, t->info.dim, tokvec_strerror(rc),
                 rc == TOKVEC_E_TOO_LARGE ? " (at most 2^28 floats)" : "");
            goto out;
        }
    }
    t->info.positional = kind;
    t->info.path = t->path;
    t->info.file_size = t->map_len;
    t->info.metadata_json = t->metadata_json;
    t->aligned = ((uintptr_t)t->tok % 4 == 0) &&
                 (!t->pos || (uintptr_t)t->pos % 4 == 0);
    *out = t;
    return 0;
out:
    if (rc < 0 && o->errbuf && o->errlen && !o->errbuf[0])
        tokvec__fail(o, path, rc, "%s", tokvec_strerror(rc));
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
    return 0;
}

int tokvec_table_token_row(const tokvec_table *t, int64_t id, tokvec_row *out)
{
    if (id < 0 || id >= t->info.vocab_size)
        return TOKVEC_E_TOKEN_RANGE;
    out->data = t->tok + (size_t)id * t->row_bytes;
    out->dim = t->info.dim;
    out->dtype = t->info.dtype;
    out->nbytes = t->row_bytes;
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
    out->dim = t->info.dim;
    if (t->sin_pos) {
        out->data = t->sin_pos + (size_t)pos * (size_t)t->info.dim;
        out->dtype = TOKVEC_F32;
        out->nbytes = (size_t)t->info.dim * 4;
    } else {
        out->data = t->pos + (size_t)pos * t->row_bytes;
        out->dtype = t->info.dtype;
        out->nbytes = t->row_bytes;
    }
    return 0;
}

void tokvec_row_to_f32(const tokvec_row *row, float *dst)
{
    tokvec_widen(row->dtype, row->data, dst, (size_t)row->dim);
}
