/* npy.c -- the .npy parser: magic "\x93NUMPY", versions 1.0 (u16 header
 * length), 2.0 and 3.0 (u32), a Python dict literal with 'descr' '<f4' or
 * '<f2', 'fortran_order' False and a 2-D 'shape'; the data follows the
 * header and must be exactly numel * itemsize bytes.
 *
 * Called by tokvec_table_open (table.c) on the thread opening a table; it
 * reads the read-only map and fills one tensor record, nothing else.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Reads the 2-D shape tuple after 'shape' into dims; 0 or a code. */
static int npy_shape(const tokvec_table_opts *o, const char *path,
                     const char *s, int64_t dims[2])
{
    int64_t v8[8];
    int nd = 0;
    s = strchr(s + 7, '(');
    if (!s)
        return tokvec__fail(o, path, TOKVEC_E_NPY,
                            ".npy shape is not a tuple");
    for (s++;;) {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < 0 || nd == 8)
            return tokvec__fail(o, path, TOKVEC_E_NPY,
                                ".npy shape is malformed");
        v8[nd++] = v;
        s = end;
    }
    if (nd != 2)
        return tokvec__fail(o, path, TOKVEC_E_RANK,
                            ".npy array is %d-D, not 2-D", nd);
    dims[0] = v8[0];
    dims[1] = v8[1];
    return 0;
}

/* Reads the header of a .npy: its length and where it starts. */
static int npy_preamble(const tokvec_table_opts *o, const char *path,
                        const unsigned char *map, size_t len, size_t *hlen,
                        size_t *hstart)
{
    if (len < 10 || memcmp(map, "\x93NUMPY", 6))
        return tokvec__fail(o, path, TOKVEC_E_NPY,
                            "not a .npy file (bad magic)");
    unsigned major = map[6];
    if (major == 1) {
        *hlen = (size_t)map[8] | (size_t)map[9] << 8;
        *hstart = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return tokvec__fail(o, path, TOKVEC_E_NPY,
                                "truncated .npy header");
        *hlen = (size_t)map[8] | (size_t)map[9] << 8 | (size_t)map[10] << 16 |
                (size_t)map[11] << 24;
        *hstart = 12;
    } else {
        return tokvec__fail(o, path, TOKVEC_E_NPY,
                            ".npy version %u is not 1, 2 or 3", major);
    }
    if (*hlen > len - *hstart || *hlen > TOKVEC_MAX_HEADER)
        return tokvec__fail(o, path, TOKVEC_E_NPY,
                            ".npy header length %zu is beyond the file",
                            *hlen);
    return 0;
}

int tokvec__parse_npy(const tokvec_table_opts *o, const char *path,
                      const unsigned char *map, size_t len, tokvec__tensor *x,
                      tokvec_dtype *dtype)
{
    size_t hlen = 0, hstart = 0;
    int rc = npy_preamble(o, path, map, len, &hlen, &hstart);
    if (rc < 0)
        return rc;
    char *h = strndup((const char *)map + hstart, hlen);
    if (!h)
        return -ENOMEM;
    /* The header is a Python dict literal written by numpy; read the three
     * keys it always has. */
    const char *d = strstr(h, "'descr'"), *f = strstr(h, "'fortran_order'"),
               *s = strstr(h, "'shape'");
    if (!d || !f || !s) {
        rc = tokvec__fail(o, path, TOKVEC_E_NPY,
                          ".npy header lacks descr, fortran_order or shape");
        goto out;
    }
    d = strchr(d + 7, '\'');
    if (d && !strncmp(d, "'<f4'", 5))
        *dtype = TOKVEC_F32;
    else if (d && !strncmp(d, "'<f2'", 5))
        *dtype = TOKVEC_F16;
    else {
        rc = tokvec__fail(o, path, TOKVEC_E_DTYPE,
                          ".npy descr is not '<f4' or '<f2'");
        goto out;
    }
    f += 15;
    while (*f == ' ' || *f == ':')
        f++;
    if (strncmp(f, "False", 5)) {
        rc = tokvec__fail(o, path, TOKVEC_E_NPY,
                          ".npy array is not in C order");
        goto out;
    }
    int64_t dims[2] = {0, 0};
    rc = npy_shape(o, path, s, dims);
    if (rc < 0)
        goto out;
    uint64_t bytes;
    size_t isz = tokvec_dtype_size(*dtype);
    if (!tokvec__mul_ok((uint64_t)dims[0], (uint64_t)dims[1], &bytes) ||
        !tokvec__mul_ok(bytes, isz, &bytes) || bytes != len - hstart - hlen) {
        rc = tokvec__fail(o, path, TOKVEC_E_SIZE,
                          ".npy data is %zu bytes, shape (%" PRId64
                          ", %" PRId64 ") needs %zu per value",
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
