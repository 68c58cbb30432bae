/* safetensors.c -- the safetensors parser (format rules in tokvec_table.h):
 * an 8-byte little-endian header length N, N bytes of JSON naming every
 * tensor's dtype, shape and data_offsets, then the data. Every tensor of
 * the header is checked for bounds, size and overlap, used or not.
 *
 * Called by tokvec_table_open (table.c), once per mapped file (one file,
 * or each mapped shard of a sharded checkpoint), on the thread opening the
 * table. It appends tensor records to the handle being built; the map is
 * read-only and nothing is copied from it but names and shapes.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const struct {
    const char *name;
    unsigned size;
} st_dtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
    {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8},
};

/* "__metadata__": an object of strings; "positional" and "context_length"
 * are read. The first file parsed gives the table its metadata. */
static int st_metadata(tokvec_table *t, const tokvec_table_opts *o,
                       const char *path, json_t *val)
{
    const char *mk;
    json_t *mv;
    if (!json_is_object(val))
        return tokvec__fail(o, path, TOKVEC_E_METADATA,
                            "__metadata__ is not an object");
    json_object_foreach(val, mk, mv) {
        if (!json_is_string(mv))
            return tokvec__fail(o, path, TOKVEC_E_METADATA,
                                "__metadata__ value of '%s' is not a string",
                                mk);
    }
    tokvec_positional pos = TOKVEC_POS_AUTO;
    int64_t ctx = 0;
    json_t *pk = json_object_get(val, "positional");
    json_t *ck = json_object_get(val, "context_length");
    if (pk && tokvec_positional_parse(json_string_value(pk), &pos) < 0)
        return tokvec__fail(o, path, TOKVEC_E_METADATA,
                            "__metadata__ positional '%s' is not learned, "
                            "sinusoidal or none",
                            json_string_value(pk));
    if (ck) {
        char *end;
        const char *s = json_string_value(ck);
        errno = 0;
        long long c = strtoll(s, &end, 10);
        if (errno || *end || !*s || c < 0 || c > INT32_MAX)
            return tokvec__fail(o, path, TOKVEC_E_METADATA,
                                "__metadata__ context_length '%s' is not an "
                                "integer in [0, 2^31)",
                                s);
        ctx = c;
    }
    if (t->metadata_json)
        return 0;
    t->metadata_json = json_dumps(val, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!t->metadata_json)
        return -ENOMEM;
    t->meta_positional = pos;
    t->meta_context = ctx;
    return 0;
}

/* The shape of one tensor entry; numel its element count. */
static int st_shape(const tokvec_table_opts *o, const char *path,
                    const char *key, json_t *js, tokvec__tensor *x,
                    uint64_t *numel)
{
    *numel = 1;
    for (int i = 0; i < x->ndim; i++) {
        json_t *d = json_array_get(js, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return tokvec__fail(o, path, TOKVEC_E_HEADER_JSON,
                                "tensor '%s' shape[%d] is not a "
                                "non-negative integer",
                                key, i);
        x->shape[i] = json_integer_value(d);
        if (!tokvec__mul_ok(*numel, (uint64_t)x->shape[i], numel))
            return tokvec__fail(o, path, TOKVEC_E_SIZE,
                                "tensor '%s' shape overflows", key);
    }
    return 0;
}

/* One tensor entry of the header into x (already counted in the handle,
 * so that close frees what was allocated). */
static int st_tensor(const tokvec_table_opts *o, const char *path,
                     const char *key, json_t *val, const unsigned char *data,
                     uint64_t data_len, tokvec__tensor *x)
{
    json_t *jd = json_object_get(val, "dtype");
    json_t *js = json_object_get(val, "shape");
    json_t *jo = json_object_get(val, "data_offsets");
    if (!json_is_object(val) || !json_is_string(jd) || !json_is_array(js) ||
        !json_is_array(jo) || json_array_size(jo) != 2)
        return tokvec__fail(o, path, TOKVEC_E_HEADER_JSON,
                            "tensor '%s' needs dtype (string), shape (list) "
                            "and data_offsets ([begin, end])",
                            key);
    x->name = strdup(key);
    x->dtype = strdup(json_string_value(jd));
    x->ndim = (int)json_array_size(js);
    x->shape = calloc((size_t)x->ndim + 1, sizeof *x->shape);
    if (!x->name || !x->dtype || !x->shape)
        return -ENOMEM;
    unsigned size = 0;
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (!strcmp(x->dtype, st_dtypes[i].name))
            size = st_dtypes[i].size;
    if (!size)
        return tokvec__fail(o, path, TOKVEC_E_DTYPE,
                            "tensor '%s' has unknown dtype '%s'", key,
                            x->dtype);
    uint64_t numel;
    int rc = st_shape(o, path, key, js, x, &numel);
    if (rc < 0)
        return rc;
    json_t *b = json_array_get(jo, 0), *e = json_array_get(jo, 1);
    if (!json_is_integer(b) || !json_is_integer(e) ||
        json_integer_value(b) < 0 || json_integer_value(e) < 0)
        return tokvec__fail(o, path, TOKVEC_E_HEADER_JSON,
                            "tensor '%s' data_offsets are not two "
                            "non-negative integers",
                            key);
    uint64_t begin = (uint64_t)json_integer_value(b);
    uint64_t end = (uint64_t)json_integer_value(e);
    if (begin > end || end > data_len)
        return tokvec__fail(o, path, TOKVEC_E_OFFSETS,
                            "tensor '%s' data_offsets [%" PRIu64 ", %" PRIu64
                            "] are outside the data (%" PRIu64 " bytes)",
                            key, begin, end, data_len);
    uint64_t bytes;
    if (!tokvec__mul_ok(numel, size, &bytes) || bytes != end - begin)
        return tokvec__fail(o, path, TOKVEC_E_SIZE,
                            "tensor '%s' holds %" PRIu64 " bytes but its "
                            "shape and dtype need %" PRIu64 " x %u",
                            key, end - begin, numel, size);
    x->data = data + begin;
    x->nbytes = bytes;
    return 0;
}

/* Header length and JSON; *root is the header object on success. */
static int st_header(const tokvec_table_opts *o, const char *path,
                     const unsigned char *map, size_t len, json_t **root)
{
    json_error_t jerr;
    *root = NULL;
    if (len < 8)
        return tokvec__fail(o, path, TOKVEC_E_TRUNCATED,
                            "file of %zu bytes is shorter than the 8-byte "
                            "header length",
                            len);
    uint64_t n = tokvec__le64(map);
    if (n > TOKVEC_MAX_HEADER)
        return tokvec__fail(o, path, TOKVEC_E_HEADER_SIZE,
                            "header length %" PRIu64 " is over the %u byte "
                            "limit",
                            n, TOKVEC_MAX_HEADER);
    if (n > len - 8)
        return tokvec__fail(o, path, TOKVEC_E_HEADER_SIZE,
                            "header length %" PRIu64 " is beyond the file "
                            "size %zu",
                            n, len);
    *root = json_loadb((const char *)map + 8, (size_t)n,
                       JSON_REJECT_DUPLICATES, &jerr);
    if (!*root)
        return tokvec__fail(o, path, TOKVEC_E_HEADER_JSON,
                            "header is not valid JSON: %s (at byte %d)",
                            jerr.text, jerr.position);
    if (!json_is_object(*root)) {
        json_decref(*root);
        *root = NULL;
        return tokvec__fail(o, path, TOKVEC_E_HEADER_JSON,
                            "header is not a JSON object");
    }
    return 0;
}

int tokvec__parse_safetensors(tokvec_table *t, const tokvec_table_opts *o,
                              const char *path, const unsigned char *map,
                              size_t len, int file)
{
    json_t *root;
    int rc = st_header(o, path, map, len, &root);
    if (rc < 0)
        return rc;
    uint64_t n = tokvec__le64(map);
    const unsigned char *data = map + 8 + n;
    uint64_t data_len = len - 8 - n;
    size_t first = t->ntensors, count = json_object_size(root);
    tokvec__tensor *grown = realloc(t->tensors,
                                    (first + count + 1) * sizeof *t->tensors);
    if (!grown) {
        rc = -ENOMEM;
        goto out;
    }
    t->tensors = grown;
    memset(grown + first, 0, (count + 1) * sizeof *grown);
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (!strcmp(key, "__metadata__")) {
            rc = st_metadata(t, o, path, val);
            if (rc < 0)
                goto out;
            continue;
        }
        tokvec__tensor *x = &t->tensors[t->ntensors++];
        x->file = file;
        rc = st_tensor(o, path, key, val, data, data_len, x);
        if (rc < 0)
            goto out;
    }
    rc = tokvec__check_overlaps(t, o, path, data, first, "safetensors");
out:
    json_decref(root);
    return rc;
}
