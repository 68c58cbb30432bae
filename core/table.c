/* table.c -- opening, validating and viewing embedding tables.
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
#include <jansson.h>
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

static const struct {
    const char *name;
    unsigned size;
} st_dtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
    {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8},
};

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
static int fail(const tokvec_table_opts *o, const char *path, int code,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(const tokvec_table_opts *o, const char *path, int code,
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
static int map_file(const tokvec_table_opts *o, const char *path,
                    const unsigned char **map, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY),
        rc = 0;
    *map = NULL;
    *len = 0;
    if (fd < 0)
        return fail(o, path, -errno, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) < 0) {
        rc = fail(o, path, -errno, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = fail(o, path, TOKVEC_E_FORMAT, "is %s, not a regular file",
                  file_kind(st.st_mode));
        goto out;
    }
    if (st.st_size == 0) {
        rc = fail(o, path, TOKVEC_E_TRUNCATED, "file is empty");
        goto out;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        rc = fail(o, path, -errno, "cannot map: %s", strerror(errno));
        goto out;
    }
    *map = m;
    *len = (size_t)st.st_size;
out:
    close(fd);
    return rc;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* --- safetensors ---------------------------------------------------------- */

/* Data order: by begin, then end. */
static int by_offsets(const void *a, const void *b)
{
    const tokvec__tensor *x = *(const tokvec__tensor *const *)a;
    const tokvec__tensor *y = *(const tokvec__tensor *const *)b;
    if (x->data != y->data)
        return x->data < y->data ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* safetensors forbids tensors whose data ranges overlap: every tensor of
 * the header (not only the two tables) is checked. Sorted by begin, the
 * first overlap is always between neighbours. Empty tensors hold no bytes
 * and cannot overlap anything. */
static int check_overlaps(const tokvec_table *t, const tokvec_table_opts *o,
                          const unsigned char *data)
{
    const tokvec__tensor **v = malloc((t->ntensors ? t->ntensors : 1) *
                                      sizeof *v);
    size_t n = 0;
    int rc = 0;
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < t->ntensors; i++)
        if (t->tensors[i].nbytes)
            v[n++] = &t->tensors[i];
    qsort(v, n, sizeof *v, by_offsets);
    for (size_t i = 1; i < n; i++) {
        const tokvec__tensor *a = v[i - 1], *b = v[i];
        uint64_t ab = (uint64_t)(a->data - data);
        uint64_t bb = (uint64_t)(b->data - data);
        if (bb < ab + a->nbytes) {
            rc = fail(o, t->path, TOKVEC_E_OFFSETS,
                      "tensors '%s' [%" PRIu64 ", %" PRIu64 "] and '%s' [%"
                      PRIu64 ", %" PRIu64 "] overlap (safetensors forbids "
                      "tensors sharing bytes)",
                      a->name, ab, ab + a->nbytes, b->name, bb,
                      bb + b->nbytes);
            break;
        }
    }
    free(v);
    return rc;
}

static int parse_safetensors(tokvec_table *t, const tokvec_table_opts *o)
{
    const char *path = t->path;
    json_t *root = NULL;
    json_error_t jerr;
    int rc = 0;

    if (t->map_len < 8)
        return fail(o, path, TOKVEC_E_TRUNCATED,
                    "file of %zu bytes is shorter than the 8-byte header "
                    "length", t->map_len);
    uint64_t n = le64(t->map);
    if (n > TOKVEC_MAX_HEADER)
        return fail(o, path, TOKVEC_E_HEADER_SIZE,
                    "header length %" PRIu64 " is over the %u byte limit", n,
                    TOKVEC_MAX_HEADER);
    if (n > t->map_len - 8)
        return fail(o, path, TOKVEC_E_HEADER_SIZE,
                    "header length %" PRIu64 " is beyond the file size %zu",
                    n, t->map_len);
    const unsigned char *data = t->map + 8 + n;
    uint64_t data_len = t->map_len - 8 - n;

    root = json_loadb((const char *)t->map + 8, (size_t)n,
                      JSON_REJECT_DUPLICATES,
                      &jerr);
    if (!root) {
        rc = fail(o, path, TOKVEC_E_HEADER_JSON,
                  "header is not valid JSON: %s (at byte %d)", jerr.text,
                  jerr.position);
        goto out;
    }
    if (!json_is_object(root)) {
        rc = fail(o, path, TOKVEC_E_HEADER_JSON,
                  "header is not a JSON object");
        goto out;
    }
    size_t count = json_object_size(root);
    t->tensors = calloc(count ? count : 1, sizeof *t->tensors);
    if (!t->tensors) {
        rc = -ENOMEM;
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (!strcmp(key, "__metadata__")) {
            const char *mk;
            json_t *mv;
            if (!json_is_object(val)) {
                rc = fail(o, path, TOKVEC_E_METADATA,
                          "__metadata__ is not an object");
                goto out;
            }
            json_object_foreach(val, mk, mv)
            {
                if (!json_is_string(mv)) {
                    rc = fail(o, path, TOKVEC_E_METADATA,
                              "__metadata__ value of '%s' is not a string",
                              mk);
                    goto out;
                }
            }
            t->metadata_json = json_dumps(val, JSON_COMPACT |
                                                   JSON_PRESERVE_ORDER);
            if (!t->metadata_json) {
                rc = -ENOMEM;
                goto out;
            }
            json_t *pk = json_object_get(val, "positional");
            json_t *ck = json_object_get(val, "context_length");
            if (pk && tokvec_positional_parse(json_string_value(pk),
                                              &t->meta_positional) < 0) {
                rc = fail(o, path, TOKVEC_E_METADATA,
                          "__metadata__ positional '%s' is not learned, "
                          "sinusoidal or none", json_string_value(pk));
                goto out;
            }
            if (ck) {
                char *end;
                const char *s = json_string_value(ck);
                errno = 0;
                long long c = strtoll(s, &end, 10);
                if (errno || *end || !*s || c < 0 || c > INT32_MAX) {
                    rc = fail(o, path, TOKVEC_E_METADATA,
                              "__metadata__ context_length '%s' is not an "
                              "integer in [0, 2^31)", s);
                    goto out;
                }
                t->meta_context = c;
            }
            continue;
        }
        tokvec__tensor *x = &t->tensors[t->ntensors];
        json_t *jd = json_object_get(val, "dtype");
        json_t *js = json_object_get(val, "shape");
        json_t *jo = json_object_get(val, "data_offsets");
        if (!json_is_object(val) || !json_is_string(jd) ||
            !json_is_array(js) || !json_is_array(jo) ||
            json_array_size(jo) != 2) {
            rc = fail(o, path, TOKVEC_E_HEADER_JSON,
                      "tensor '%s' needs dtype (string), shape (list) and "
                      "data_offsets ([begin, end])", key);
            goto out;
        }
        x->name = strdup(key);
        x->dtype = strdup(json_string_value(jd));
        x->ndim = (int)json_array_size(js);
        x->shape = calloc((size_t)x->ndim + 1, sizeof *x->shape);
        t->ntensors++;
        if (!x->name || !x->dtype || !x->shape) {
            rc = -ENOMEM;
            goto out;
        }
        unsigned size = 0;
        for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
            if (!strcmp(x->dtype, st_dtypes[i].name))
                size = st_dtypes[i].size;
        if (!size) {
            rc = fail(o, path, TOKVEC_E_DTYPE,
                      "tensor '%s' has unknown dtype '%s'", key, x->dtype);
            goto out;
        }
        uint64_t numel = 1;
        for (int i = 0; i < x->ndim; i++) {
            json_t *d = json_array_get(js, (size_t)i);
            if (!json_is_integer(d) || json_integer_value(d) < 0) {
                rc = fail(o, path, TOKVEC_E_HEADER_JSON,
                          "tensor '%s' shape[%d] is not a non-negative "
                          "integer", key, i);
                goto out;
            }
            x->shape[i] = json_integer_value(d);
            if (!mul_ok(numel, (uint64_t)x->shape[i], &numel)) {
                rc = fail(o, path, TOKVEC_E_SIZE,
                          "tensor '%s' shape overflows", key);
                goto out;
            }
        }
        json_t *b = json_array_get(jo, 0), *e = json_array_get(jo, 1);
        if (!json_is_integer(b) || !json_is_integer(e) ||
            json_integer_value(b) < 0 || json_integer_value(e) < 0) {
            rc = fail(o, path, TOKVEC_E_HEADER_JSON,
                      "tensor '%s' data_offsets are not two non-negative "
                      "integers", key);
            goto out;
        }
        uint64_t begin = (uint64_t)json_integer_value(b);
        uint64_t end = (uint64_t)json_integer_value(e);
        if (begin > end || end > data_len) {
            rc = fail(o, path, TOKVEC_E_OFFSETS,
                      "tensor '%s' data_offsets [%" PRIu64 ", %" PRIu64
                      "] are outside the data (%" PRIu64 " bytes)",
                      key, begin, end, data_len);
            goto out;
        }
        uint64_t bytes;
        if (!mul_ok(numel, size, &bytes) || bytes != end - begin) {
            rc = fail(o, path, TOKVEC_E_SIZE,
                      "tensor '%s' holds %" PRIu64 " bytes but its shape "
                      "and dtype need %" PRIu64 " x %u",
                      key, end - begin, numel, size);
            goto out;
        }
        x->data = data + begin;
        x->nbytes = bytes;
    }
    rc = check_overlaps(t, o, data);
out:
    json_decref(root);
    return rc;
}

static const tokvec__tensor *find_tensor(const tokvec_table *t,
                                         const char *name)
{
    for (size_t i = 0; i < t->ntensors; i++)
        if (!strcmp(t->tensors[i].name, name))
            return &t->tensors[i];
    return NULL;
}

/* --- .npy ----------------------------------------------------------------- */

/* Parses a .npy whose bytes are at map. Fills x (name "") and *dtype. */
static int parse_npy(const tokvec_table_opts *o, const char *path,
                     const unsigned char *map, size_t len,
                     tokvec__tensor *x, tokvec_dtype *dtype)
{
    if (len < 10 || memcmp(map, "\x93NUMPY", 6))
        return fail(o, path, TOKVEC_E_NPY, "not a .npy file (bad magic)");
    unsigned major = map[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)map[8] | (size_t)map[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return fail(o, path, TOKVEC_E_NPY, "truncated .npy header");
        hlen = (size_t)map[8] | (size_t)map[9] << 8 | (size_t)map[10] << 16 |
               (size_t)map[11] << 24;
        hstart = 12;
    } else {
        return fail(o, path, TOKVEC_E_NPY, ".npy version %u is not 1, 2 "
                                           "or 3", major);
    }
    if (hlen > len - hstart || hlen > TOKVEC_MAX_HEADER)
        return fail(o, path, TOKVEC_E_NPY, ".npy header length %zu is "
                                           "beyond the file", hlen);
    char *h = strndup((const char *)map + hstart, hlen);
    int rc = 0;
    if (!h)
        return -ENOMEM;
    /* The header is a Python dict literal written by numpy; read the three
     * keys it always has. */
    const char *d = strstr(h, "'descr'"), *f = strstr(h, "'fortran_order'"),
               *s = strstr(h, "'shape'");
    if (!d || !f || !s) {
        rc = fail(o, path, TOKVEC_E_NPY, ".npy header lacks descr, "
                                         "fortran_order or shape");
        goto out;
    }
    d = strchr(d + 7, '\'');
    if (d && !strncmp(d, "'<f4'", 5))
        *dtype = TOKVEC_F32;
    else if (d && !strncmp(d, "'<f2'", 5))
        *dtype = TOKVEC_F16;
    else {
        rc = fail(o, path, TOKVEC_E_DTYPE, ".npy descr is not '<f4' or "
                                           "'<f2'");
        goto out;
    }
    f += 15;
    while (*f == ' ' || *f == ':')
        f++;
    if (strncmp(f, "False", 5)) {
        rc = fail(o, path, TOKVEC_E_NPY, ".npy array is not in C order");
        goto out;
    }
    s = strchr(s + 7, '(');
    int64_t dims[8];
    int nd = 0;
    if (!s) {
        rc = fail(o, path, TOKVEC_E_NPY, ".npy shape is not a tuple");
        goto out;
    }
    for (s++;;) {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < 0 || nd == 8) {
            rc = fail(o, path, TOKVEC_E_NPY, ".npy shape is malformed");
            goto out;
        }
        dims[nd++] = v;
        s = end;
    }
    if (nd != 2) {
        rc = fail(o, path, TOKVEC_E_RANK, ".npy array is %d-D, not 2-D", nd);
        goto out;
    }
    uint64_t bytes;
    size_t isz = tokvec_dtype_size(*dtype);
    if (!mul_ok((uint64_t)dims[0], (uint64_t)dims[1], &bytes) ||
        !mul_ok(bytes, isz, &bytes) || bytes != len - hstart - hlen) {
        rc = fail(o, path, TOKVEC_E_SIZE, ".npy data is %zu bytes, shape "
                                          "(%" PRId64 ", %" PRId64 ") needs "
                                          "%zu per value",
                  len - hstart - hlen, dims[0], dims[1], isz);
        goto out;
    }
    x->name = strdup("");
    x->dtype = strdup(tokvec_dtype_name(*dtype));
    x->shape = calloc(2, sizeof *x->shape);
    if (!x->name || !x->dtype || !x->shape) {
        rc = -ENOMEM;
        goto out;
    }
    x->ndim = 2;
    x->shape[0] = dims[0];
    x->shape[1] = dims[1];
    x->data = map + hstart + hlen;
    x->nbytes = bytes;
out:
    free(h);
    return rc;
}

/* --- open ----------------------------------------------------------------- */

static int embedding_dtype(const tokvec_table_opts *o, const char *path,
                           const tokvec__tensor *x, tokvec_dtype *d)
{
    if (x->ndim != 2)
        return fail(o, path, TOKVEC_E_RANK, "tensor '%s' is %d-D, not 2-D",
                    x->name, x->ndim);
    if (tokvec_dtype_parse(x->dtype, d) < 0 || strlen(x->dtype) > 4)
        return fail(o, path, TOKVEC_E_DTYPE,
                    "tensor '%s' has dtype %s; embeddings must be F32, F16 "
                    "or BF16", x->name, x->dtype);
    if (x->shape[0] == 0 || x->shape[1] == 0)
        return fail(o, path, TOKVEC_E_EMPTY, "tensor '%s' is empty (%" PRId64
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
    if (!mul_ok((uint64_t)C, (uint64_t)D, &n) ||
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
    if ((rc = map_file(o, path, &t->map, &t->map_len)) < 0)
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
        if ((rc = parse_npy(o, path, t->map, t->map_len, &t->tensors[0],
                            &dtype)) < 0)
            goto out;
        tok = &t->tensors[0];
        if (o->position_path) {
            t->ntensors = 2;
            if ((rc = map_file(o, o->position_path, &t->map2,
                               &t->map2_len)) < 0 ||
                (rc = parse_npy(o, o->position_path, t->map2, t->map2_len,
                                &t->tensors[1], &pdtype)) < 0)
                goto out;
            pos = &t->tensors[1];
        }
    } else {
        t->info.format = "safetensors";
        if (o->position_path) {
            rc = fail(o, path, TOKVEC_E_INVAL, "a position .npy goes with "
                                               "a .npy token table only");
            goto out;
        }
        if ((rc = parse_safetensors(t, o)) < 0)
            goto out;
        if (o->token_tensor) {
            tok = find_tensor(t, o->token_tensor);
        } else {
            for (int i = 0; token_names[i] && !tok; i++)
                tok = find_tensor(t, token_names[i]);
        }
        if (!tok) {
            rc = fail(o, path, TOKVEC_E_NO_TENSOR,
                      o->token_tensor ? "no tensor named '%s'"
                                      : "no token tensor (%s or the other "
                                        "names of the contract)",
                      o->token_tensor ? o->token_tensor : token_names[0]);
            goto out;
        }
        if (o->position_tensor) {
            pos = find_tensor(t, o->position_tensor);
            if (!pos) {
                rc = fail(o, path, TOKVEC_E_NO_TENSOR,
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
        rc = fail(o, path, TOKVEC_E_NO_TENSOR, "no position tensor (%s or "
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
            rc = fail(o, path, TOKVEC_E_MISMATCH,
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
            fail(o, path, rc, "cannot compute sinusoidal positions for "
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
        fail(o, path, rc, "%s", tokvec_strerror(rc));
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
