/* gguf.c -- the GGUF parser (versions 2 and 3, little endian), from the
 * specification in ggml's docs/gguf.md:
 *
 *   "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
 *   metadata: (string key, u32 value type, value) each,
 *   tensor infos: (string name, u32 n_dims, u64 dims[n_dims], u32 ggml
 *   type, u64 offset) each, padding to general.alignment (default 32),
 *   then the tensor data; strings are a u64 length and bytes.
 *
 * Checked once, here: the magic, the version (1 and big-endian files are
 * refused by name), counts that fit in the file, every key and value
 * inside the file (booleans 0 or 1, arrays nested at most 8 deep),
 * general.alignment a u32 power of two, tensor names of 1..64 bytes and
 * unique, 1..4 dims, known ggml types, rows (dims[0]) a whole number of
 * blocks, sizes without overflow, offsets multiples of the alignment,
 * data inside the file, no two tensors sharing a byte. Shapes are stored
 * in numpy order (dims reversed): token_embd.weight [n_vocab, n_embd].
 *
 * Called by tokvec_table_open (table.c) on the thread opening the table;
 * reads the read-only map, copies names and shapes.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ggml's types by id: name, values per block, bytes per block (0: a
 * removed or unknown id). */
static const struct {
    const char *name;
    unsigned block, bytes;
} types[] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},
    [2] = {"Q4_0", 32, 18},      [3] = {"Q4_1", 32, 20},
    [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},      [9] = {"Q8_1", 32, 36},
    [10] = {"Q2_K", 256, 84},    [11] = {"Q3_K", 256, 110},
    [12] = {"Q4_K", 256, 144},   [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 256, 292},
    [16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
    [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18},   [21] = {"IQ3_S", 256, 110},
    [22] = {"IQ2_S", 256, 82},   [23] = {"IQ4_XS", 256, 136},
    [24] = {"I8", 1, 1},         [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},        [27] = {"I64", 1, 8},
    [28] = {"F64", 1, 8},        [29] = {"IQ1_M", 256, 56},
    [30] = {"BF16", 1, 2},       [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66},   [39] = {"MXFP4", 32, 17},
};
#define NTYPES (sizeof types / sizeof types[0])

enum { V_STRING = 8, V_ARRAY = 9, MAX_DEPTH = 8 };
/* Bytes of a scalar metadata value by type (0: string, array, unknown). */
static const unsigned vsize[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

typedef struct {
    const unsigned char *p, *end, *start;
    const tokvec_table_opts *o;
    const char *path;
} reader;

static int truncated(reader *r, const char *what)
{
    return tokvec__fail(r->o, r->path, TOKVEC_E_TRUNCATED,
                        "GGUF %s at byte %zu runs past the end of the file",
                        what, (size_t)(r->p - r->start));
}

static int take(reader *r, size_t n, const char *what,
                const unsigned char **at)
{
    if ((size_t)(r->end - r->p) < n)
        return truncated(r, what);
    *at = r->p;
    r->p += n;
    return 0;
}

static int u32(reader *r, const char *what, uint32_t *v)
{
    const unsigned char *b = NULL;
    int rc = take(r, 4, what, &b);
    if (rc == 0)
        *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
             (uint32_t)b[3] << 24;
    return rc;
}

static int u64(reader *r, const char *what, uint64_t *v)
{
    const unsigned char *b = NULL;
    int rc = take(r, 8, what, &b);
    if (rc == 0)
        *v = tokvec__le64(b);
    return rc;
}

/* A string: *s points at its *n bytes in the map. */
static int str(reader *r, const char *what, const unsigned char **s,
               uint64_t *n)
{
    int rc = u64(r, what, n);
    if (rc != 0)
        return rc;
    if (*n > (uint64_t)(r->end - r->p))
        return truncated(r, what);
    return take(r, (size_t)*n, what, s);
}

/* Skips (checks) one value of type `type`, depth arrays deep. */
static int value(reader *r, uint32_t type, int depth)
{
    const unsigned char *b = NULL;
    uint64_t n;
    if (type == V_STRING)
        return str(r, "string value", &b, &n);
    if (type == V_ARRAY) {
        uint32_t et;
        int rc;
        if (depth >= MAX_DEPTH)
            return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                                "GGUF arrays nested over %d deep", MAX_DEPTH);
        rc = u32(r, "array type", &et);
        if (rc >= 0)
            rc = u64(r, "array length", &n);
        if (rc < 0)
            return rc;
        if (et >= 13)
            return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                                "GGUF array of unknown value type %" PRIu32,
                                et);
        if (vsize[et] && et != 7) { /* scalars but bool: one bound check */
            if (n > (uint64_t)(r->end - r->p) / vsize[et])
                return truncated(r, "array");
            r->p += n * vsize[et];
            return 0;
        }
        if (n > (uint64_t)(r->end - r->p)) /* every element >= 1 byte */
            return truncated(r, "array");
        for (uint64_t i = 0; i < n; i++) {
            rc = value(r, et, depth + 1);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    if (type >= 13 || !vsize[type])
        return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                            "GGUF metadata value of unknown type %" PRIu32,
                            type);
    int rc = take(r, vsize[type], "value", &b);
    if (rc == 0 && type == 7 && b[0] > 1)
        return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                            "GGUF boolean of value %u (0 or 1)", b[0]);
    return rc;
}

/* Records a scalar value in the metadata object (strings that are not
 * UTF-8, and arrays, are left out). */
static void record(json_t *meta, const char *key, uint32_t type,
                   const unsigned char *v)
{
    json_t *j = NULL;
    uint64_t n = 0;
    /* One line a value type, as a table. */
    /* clang-format off */
    switch (type) {
    case 0: j = json_integer(v[0]); break;
    case 1: j = json_integer((int8_t)v[0]); break;
    case 2: j = json_integer(v[0] | v[1] << 8); break;
    case 3: j = json_integer((int16_t)(v[0] | v[1] << 8)); break;
    case 4: case 5: {
        uint32_t x = (uint32_t)v[0] | (uint32_t)v[1] << 8 |
                     (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
        j = json_integer(type == 4 ? (json_int_t)x : (int32_t)x);
        break;
    }
    case 7: j = json_boolean(v[0]); break;
    case V_STRING:
        n = tokvec__le64(v);
        j = json_stringn((const char *)v + 8, (size_t)n);
        break;
    case 10: case 11: j = json_integer((json_int_t)tokvec__le64(v)); break;
    default: break; /* floats: left out (their text is not exact) */
    }
    /* clang-format on */
    if (j)
        json_object_set_new(meta, key, j);
}

/* The metadata: every key checked, general.alignment read, scalars
 * recorded as JSON. */
static int metadata(reader *r, uint64_t nkv, uint32_t *align, char **json)
{
    json_t *meta = json_object();
    int rc = 0, seen = 0;
    if (!meta)
        return -ENOMEM;
    for (uint64_t i = 0; i < nkv && rc == 0; i++) {
        const unsigned char *k = NULL, *v;
        uint64_t kn = 0;
        uint32_t type = 0;
        rc = str(r, "metadata key", &k, &kn);
        if (rc >= 0)
            rc = u32(r, "metadata value type", &type);
        if (rc < 0)
            break;
        if (kn == 0 || kn > 65535) {
            rc = tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                              "GGUF metadata key %" PRIu64 " is %" PRIu64
                              " bytes long (1 to 65535)",
                              i, kn);
            break;
        }
        v = r->p;
        rc = value(r, type, 0);
        if (rc < 0)
            break;
        char *key = strndup((const char *)k, (size_t)kn);
        if (!key) {
            rc = -ENOMEM;
            break;
        }
        if (!strcmp(key, "general.alignment")) {
            uint32_t a = type == 4
                             ? (uint32_t)v[0] | (uint32_t)v[1] << 8 |
                                   (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24
                             : 0;
            if (seen++ || a == 0 || (a & (a - 1)))
                rc = tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                                  "GGUF general.alignment must be one u32 "
                                  "power of two");
            *align = a;
        }
        record(meta, key, type, v);
        free(key);
    }
    if (rc == 0) {
        *json = json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!*json)
            rc = -ENOMEM;
    }
    json_decref(meta);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    const tokvec__tensor *x = *(const tokvec__tensor *const *)a;
    const tokvec__tensor *y = *(const tokvec__tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Tensor names are unique (sorted, neighbours compared). */
static int unique_names(const tokvec_table *t, const tokvec_table_opts *o,
                        const char *path)
{
    const tokvec__tensor **v = malloc((t->ntensors + 1) * sizeof *v);
    int rc = 0;
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < t->ntensors; i++)
        v[i] = &t->tensors[i];
    qsort(v, t->ntensors, sizeof *v, by_name);
    for (size_t i = 1; i < t->ntensors && rc == 0; i++)
        if (!strcmp(v[i - 1]->name, v[i]->name))
            rc = tokvec__fail(o, path, TOKVEC_E_GGUF,
                              "GGUF has two tensors named '%s'", v[i]->name);
    free(v);
    return rc;
}

/* One tensor info into x; its offset (relative to the data) into *off. */
static int tensor_info(reader *r, uint32_t align, tokvec__tensor *x,
                       uint64_t *off)
{
    const unsigned char *name = NULL;
    uint64_t n = 0, dims[4] = {0}, numel = 1;
    uint32_t nd, type;
    int rc;
    rc = str(r, "tensor name", &name, &n);
    if (rc < 0)
        return rc;
    if (n == 0 || n > 64)
        return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                            "GGUF tensor name of %" PRIu64 " bytes (1 to 64)",
                            n);
    x->name = strndup((const char *)name, (size_t)n);
    if (!x->name)
        return -ENOMEM;
    rc = u32(r, "tensor n_dims", &nd);
    if (rc < 0)
        return rc;
    if (nd < 1 || nd > 4)
        return tokvec__fail(r->o, r->path, TOKVEC_E_RANK,
                            "GGUF tensor '%s' has %" PRIu32 " dims (1 to 4)",
                            x->name, nd);
    for (uint32_t i = 0; i < nd; i++) {
        rc = u64(r, "tensor dims", &dims[i]);
        if (rc < 0)
            return rc;
        if (dims[i] > INT64_MAX || !tokvec__mul_ok(numel, dims[i], &numel))
            return tokvec__fail(r->o, r->path, TOKVEC_E_SIZE,
                                "GGUF tensor '%s' shape overflows", x->name);
    }
    rc = u32(r, "tensor type", &type);
    if (rc >= 0)
        rc = u64(r, "tensor offset", off);
    if (rc < 0)
        return rc;
    if (type >= NTYPES || !types[type].bytes)
        return tokvec__fail(r->o, r->path, TOKVEC_E_DTYPE,
                            "GGUF tensor '%s' has unknown ggml type %" PRIu32,
                            x->name, type);
    unsigned B = types[type].block;
    if (dims[0] % B)
        return tokvec__fail(r->o, r->path, TOKVEC_E_SIZE,
                            "GGUF tensor '%s' rows of %" PRIu64 " values are "
                            "not whole %s blocks of %u",
                            x->name, dims[0], types[type].name, B);
    if (!tokvec__mul_ok(numel / B, types[type].bytes, &x->nbytes))
        return tokvec__fail(r->o, r->path, TOKVEC_E_SIZE,
                            "GGUF tensor '%s' size overflows", x->name);
    if (*off % align)
        return tokvec__fail(r->o, r->path, TOKVEC_E_OFFSETS,
                            "GGUF tensor '%s' offset %" PRIu64 " is not a "
                            "multiple of the alignment %" PRIu32,
                            x->name, *off, align);
    x->dtype = strdup(types[type].name);
    x->shape = calloc(nd, sizeof *x->shape);
    if (!x->dtype || !x->shape)
        return -ENOMEM;
    x->ndim = (int)nd;
    for (uint32_t i = 0; i < nd; i++)
        x->shape[i] = (int64_t)dims[nd - 1 - i];
    return 0;
}

/* Magic, version and counts. */
static int header(reader *r, uint64_t *nt, uint64_t *nkv)
{
    const unsigned char *m;
    uint32_t v = 0;
    int rc;
    rc = take(r, 4, "magic", &m);
    if (rc >= 0)
        rc = u32(r, "version", &v);
    if (rc < 0)
        return rc;
    if (v == 1)
        return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                            "GGUF version 1 is not supported (2 and 3 are)");
    if (v == 0x02000000u || v == 0x03000000u)
        return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                            "big-endian GGUF is not supported");
    if (v != 2 && v != 3)
        return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                            "GGUF version %" PRIu32 " is not 2 or 3", v);
    rc = u64(r, "tensor count", nt);
    if (rc >= 0)
        rc = u64(r, "metadata count", nkv);
    if (rc < 0)
        return rc;
    /* A tensor info takes at least 33 bytes, a key-value pair 14. */
    size_t left = (size_t)(r->end - r->p);
    if (*nt > left / 33 || *nkv > left / 14)
        return tokvec__fail(r->o, r->path, TOKVEC_E_GGUF,
                            "GGUF counts (%" PRIu64 " tensors, %" PRIu64
                            " metadata) cannot fit in the file",
                            *nt, *nkv);
    return 0;
}

int tokvec__parse_gguf(tokvec_table *t, const tokvec_table_opts *o,
                       const char *path, const unsigned char *map, size_t len)
{
    reader r = {map, map + len, map, o, path};
    uint64_t nt, nkv, *off = NULL;
    uint32_t align = 32;
    int rc;
    rc = header(&r, &nt, &nkv);
    if (rc >= 0)
        rc = metadata(&r, nkv, &align, &t->metadata_json);
    if (rc < 0)
        return rc;
    t->tensors = calloc(nt + 1, sizeof *t->tensors);
    off = calloc(nt + 1, sizeof *off);
    if (!t->tensors || !off) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint64_t i = 0; i < nt; i++) {
        t->ntensors++; /* counted first: close frees a partial entry */
        rc = tensor_info(&r, align, &t->tensors[i], &off[i]);
        if (rc < 0)
            goto out;
    }
    uint64_t at = (uint64_t)(r.p - map);
    uint64_t start = at + (align - at % align) % align;
    if (start > len) {
        rc = tokvec__fail(o, path, TOKVEC_E_TRUNCATED,
                          "GGUF data would start at byte %" PRIu64
                          ", past the end of the file (%zu bytes)",
                          start, len);
        goto out;
    }
    for (uint64_t i = 0; i < nt; i++) {
        tokvec__tensor *x = &t->tensors[i];
        if (off[i] > len - start || x->nbytes > len - start - off[i]) {
            rc = tokvec__fail(o, path, TOKVEC_E_OFFSETS,
                              "GGUF tensor '%s' [%" PRIu64 ", +%" PRIu64
                              "] is outside the data (%" PRIu64 " bytes)",
                              x->name, off[i], x->nbytes, len - start);
            goto out;
        }
        x->data = map + start + off[i];
    }
    rc = unique_names(t, o, path);
    if (rc == 0)
        rc = tokvec__check_overlaps(t, o, path, map + start, 0, "GGUF");
out:
    free(off);
    return rc;
}
