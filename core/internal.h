/* internal.h -- the table handle's fields, built by table.c and the format
 * parsers (safetensors.c, npy.c) and read by embed.c, plus the helpers the
 * parsers share. Not a public header: nothing outside core/ (and the fuzz
 * targets, which check the handle's invariants) includes it. Fields never
 * change after tokvec_table_open returns.
 */
#ifndef TOKVEC_INTERNAL_H
#define TOKVEC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_embed.h"
#include "tokvec_float.h"
#include "tokvec_table.h"

typedef struct tokvec__tensor {
    char *name;
    char *dtype;
    int ndim;
    int64_t *shape;
    const unsigned char *data; /* into a map */
    uint64_t nbytes;
    int file; /* which mapped file: 0 (map) or 1 (map2) */
} tokvec__tensor;

struct tokvec_table {
    tokvec_table_info info;
    char *path;
    const unsigned char *map; /* the file, PROT_READ */
    size_t map_len;
    const unsigned char *map2; /* positions .npy, or NULL */
    size_t map2_len;
    tokvec__tensor *tensors;
    size_t ntensors;
    char *metadata_json;
    tokvec_positional meta_positional; /* from __metadata__, or AUTO */
    int64_t meta_context;              /* from __metadata__, or 0 */
    const unsigned char *tok; /* row 0 of the token table */
    const unsigned char *pos; /* row 0 of learned positions, or NULL */
    float *sin_pos;           /* sinusoidal positions, or NULL */
    size_t row_bytes;         /* dim * dtype size */
    int aligned;              /* tok and pos rows are float-aligned */
};

/* Records a one-line reason "path: what" in o->errbuf (if any); returns
 * code, so that error paths are one statement. */
int tokvec__fail(const tokvec_table_opts *o, const char *path, int code,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Maps a whole regular file read-only (never blocks on a FIFO). */
int tokvec__map_file(const tokvec_table_opts *o, const char *path,
                     const unsigned char **map, size_t *len);
uint64_t tokvec__le64(const unsigned char *p);
/* 1 when a * b fits in 64 bits (*out = a * b), else 0. */
int tokvec__mul_ok(uint64_t a, uint64_t b, uint64_t *out);

/* Appends the tensors of the safetensors file at map (file: 0 or 1, which
 * map it is) to t->tensors, every rule checked; the first file parsed
 * gives t its metadata. */
int tokvec__parse_safetensors(tokvec_table *t, const tokvec_table_opts *o,
                              const char *path, const unsigned char *map,
                              size_t len, int file);
/* No two of t->tensors[first..] (data in one file starting at data) share
 * a byte; else TOKVEC_E_OFFSETS naming the first pair ("what forbids"). */
int tokvec__check_overlaps(const tokvec_table *t, const tokvec_table_opts *o,
                           const char *path, const unsigned char *data,
                           size_t first, const char *what);
/* Parses the .npy at map into x (name "") and *dtype. */
int tokvec__parse_npy(const tokvec_table_opts *o, const char *path,
                      const unsigned char *map, size_t len,
                      tokvec__tensor *x, tokvec_dtype *dtype);

#endif
